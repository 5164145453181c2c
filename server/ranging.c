/*
 * ranging.c - director mode: the server's meter of an official run ranged
 * on the team's own workload before the measured window (MLPerf's ranging
 * mode, then its testing mode).  The run asks (POST
 * /api/v1/runs/{id}/ranging {"phase": "begin"|"end"}) before its
 * fine-tune begins, training meanwhile (harness/run_ranging.c).  A meter
 * the server reads itself is ranged at once through its source's range
 * slot; a station agent's is asked in the answer to its next batch of
 * samples ({"range": PHASE, "run": ID}), and reports what it set in the
 * batch after ("ranged"), so that the run is answered 202 ("pending")
 * until then: its testing pass never starts on ranges not yet fixed.
 * Each phase's ranges and the meter's identity are events of the meter
 * run (ranging_begin, ranging_end).  A meter without ranges answers
 * "none".
 */
#include "server_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const phase_names[] = {"", "begin", "end"};
static const char *const phase_events[] = {"", EEB_EVENT_RANGING_BEGIN, EEB_EVENT_RANGING_END};

/* The slot measuring run, or -1; s->lock held. */
static int slot_of_run(const struct eeb_server *s, int64_t run)
{
    for (int i = 0; i < EEB_SRV_METERS; i++)
        if (s->meters[i].meter_run && s->meters[i].run == run && !s->meters[i].closing)
            return i;
    return -1;
}

/* What a phase set, as the meter run's event and the answer keep it. */
static json_t *ranges_json(int phase, const char *meter, const struct eeb_power_ranges *g)
{
    json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "phase", phase_names[phase], "meter", meter,
                          "identity", g->identity, "volts", g->volts, "amps", g->amps);
    if (o && isfinite(g->max_volts))
        json_object_set_new(o, "max_volts", json_real(g->max_volts));
    if (o && isfinite(g->max_amps))
        json_object_set_new(o, "max_amps", json_real(g->max_amps));
    return o;
}

/* The answer of a phase reached: its ranges, "done". */
static enum MHD_Result answer_done(struct eeb_srv_call *k, const char *text)
{
    json_t *o = json_loads(text, 0, NULL);
    if (!o)
        o = json_object();
    json_object_set_new(o, "state", json_string("done"));
    return eeb_srv_call_json(k, 200, o);
}

/* The server's own meter in slot ranged (its source's slot, off the lock:
 * the meter is held by inflight meanwhile). */
static enum MHD_Result range_own(struct eeb_srv_call *k, int slot, int want)
{
    struct eeb_server *s = k->s;
    struct eeb_srv_meter *m = &s->meters[slot];
    struct eeb_power_source *src = m->src;
    struct eeb_sampler *sampler = m->sampler;
    char meter[256], err[512], text[1024] = "";
    snprintf(meter, sizeof meter, "%s", m->source);
    m->range_busy = 1, m->inflight++;
    pthread_mutex_unlock(&s->lock);

    struct eeb_power_ranges g;
    int rc = eeb_power_source_range(src, want == 1 ? EEB_POWER_RANGE_BEGIN : EEB_POWER_RANGE_END,
                                    &g, err, sizeof err);
    if (rc == EEB_OK) {
        json_t *o = ranges_json(want, meter, &g);
        char *payload = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (payload && strlen(payload) < sizeof text)
            snprintf(text, sizeof text, "%s", payload);
        eeb_sampler_mark(sampler, phase_events[want], payload ? payload : "{}");
        free(payload);
    }

    pthread_mutex_lock(&s->lock);
    m->range_busy = 0, m->inflight--;
    if (rc == EEB_OK)
        m->range_done = m->range_want = want,
        snprintf(m->range_json, sizeof m->range_json, "%s", text);
    int mine = m->closing && eeb_srv_meter_close_slot(s, slot);
    pthread_mutex_unlock(&s->lock);
    if (mine)
        eeb_srv_meter_finish(s, slot);
    if (rc == EEB_ENOTSUP)
        return eeb_srv_call_json(k, 200, json_pack("{s:s}", "state", "none"));
    if (rc != EEB_OK)
        return eeb_srv_call_fail(k, 503, NULL, err);
    eeb_srv_log(s, "run %lld: its meter's ranging pass %s", (long long)k->id, phase_names[want]);
    return answer_done(k, text);
}

enum MHD_Result eeb_srv_api_ranging(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    const char *phase = json_string_value(json_object_get(body, "phase"));
    int want = !phase ? 0 : strcmp(phase, "begin") == 0 ? 1 : strcmp(phase, "end") == 0 ? 2 : 0;
    json_decref(body);
    if (!want)
        return eeb_srv_call_fail(k, 400, "phase", "expected begin or end");
    if (!eeb_srv_in_state(k, "registered", NULL, &sent))
        return sent;
    struct eeb_server *s = k->s;
    char text[1024], why[160] = "";
    pthread_mutex_lock(&s->lock);
    int slot = slot_of_run(s, k->id);
    struct eeb_srv_meter *m = slot >= 0 ? &s->meters[slot] : NULL;
    if (!m || !m->can_range) { /* no meter of the server's, or one without ranges */
        pthread_mutex_unlock(&s->lock);
        return eeb_srv_call_json(k, 200, json_pack("{s:s}", "state", "none"));
    }
    if (m->range_done >= want) { /* asked again: what it set */
        snprintf(text, sizeof text, "%s", m->range_json);
        pthread_mutex_unlock(&s->lock);
        return answer_done(k, text);
    }
    if (m->begun)
        snprintf(why, sizeof why, "its fine-tune has begun: the meter is ranged before it");
    else if (want == 2 && m->range_done < 1)
        snprintf(why, sizeof why, "no ranging pass of its meter has begun");
    else if (m->range_busy)
        snprintf(why, sizeof why, "its meter is being ranged");
    if (why[0]) {
        pthread_mutex_unlock(&s->lock);
        return eeb_srv_call_fail(k, 409, "phase", why);
    }
    m->heard_ns = eeb_mono_ns(); /* a run ranging its meter is not silent */
    if (!m->agent)
        return range_own(k, slot, want); /* unlocks */
    if (m->range_err[0]) {
        snprintf(why, sizeof why, "the station's agent could not range its meter: %.100s",
                 m->range_err);
        pthread_mutex_unlock(&s->lock);
        return eeb_srv_call_fail(k, 503, NULL, why);
    }
    if (m->range_want < want)
        m->range_want = want;
    pthread_mutex_unlock(&s->lock);
    return eeb_srv_call_json(k, 202, json_pack("{s:s}", "state", "pending"));
}

const char *eeb_srv_range_asked(const struct eeb_server *s, int slot)
{
    const struct eeb_srv_meter *m = &s->meters[slot];
    return m->range_want > m->range_done && !m->range_err[0] ? phase_names[m->range_want] : NULL;
}

/* An optional string of at most max characters; 0, or -1 with f filled. */
static int text_field(json_t *o, const char *key, const char *field, size_t max, const char **out,
                      struct eeb_srv_fault *f)
{
    json_t *v = json_object_get(o, key);
    *out = json_string_value(v);
    if (v && (!*out || strlen(*out) > max))
        return eeb_srv_bad(f, field, "expected a string of at most %zu characters", max);
    return 0;
}

int eeb_srv_ranged(struct eeb_server *s, int slot, json_t *ranged, struct eeb_srv_fault *f)
{
    if (!ranged)
        return 0;
    const char *phase = json_string_value(json_object_get(ranged, "phase"));
    int got = !phase ? 0 : strcmp(phase, "begin") == 0 ? 1 : strcmp(phase, "end") == 0 ? 2 : 0;
    int64_t run;
    struct eeb_power_ranges g = {.max_volts = NAN, .max_amps = NAN};
    const char *volts, *amps, *identity, *error;
    if (!json_is_object(ranged) || json_object_size(ranged) > 8)
        return eeb_srv_bad(f, "ranged", "expected {phase, run, volts, amps, ...}");
    if (!got)
        return eeb_srv_bad(f, "ranged.phase", "expected begin or end");
    if (eeb_srv_int_field(json_object_get(ranged, "run"), "ranged.run", 1, INT64_MAX, &run, f) ||
        text_field(ranged, "volts", "ranged.volts", 31, &volts, f) ||
        text_field(ranged, "amps", "ranged.amps", 31, &amps, f) ||
        text_field(ranged, "identity", "ranged.identity", 255, &identity, f) ||
        text_field(ranged, "error", "ranged.error", 255, &error, f))
        return -1;
    const char *keys[] = {"max_volts", "max_amps"};
    double *vals[] = {&g.max_volts, &g.max_amps};
    for (int i = 0; i < 2; i++)
        if (json_object_get(ranged, keys[i]) &&
            eeb_srv_number_field(json_object_get(ranged, keys[i]), keys[i], 0, 1e5, vals[i], f))
            return -1;
    if (!error && (!volts || !amps))
        return eeb_srv_bad(f, "ranged", "expected the ranges set (volts, amps) or an error");
    snprintf(g.volts, sizeof g.volts, "%s", volts ? volts : "");
    snprintf(g.amps, sizeof g.amps, "%s", amps ? amps : "");
    snprintf(g.identity, sizeof g.identity, "%s", identity ? identity : "");

    char meter[256], ignored[256];
    int64_t meter_run = 0;
    json_t *o =
        error ? json_pack("{s:s, s:s}", "phase", phase_names[got], EEB_EVENT_KEY_REASON, error)
              : NULL;
    pthread_mutex_lock(&s->lock);
    struct eeb_srv_meter *m = slot >= 0 ? &s->meters[slot] : NULL;
    /* only the phase its run asked for, once */
    if (m && m->run == run && got <= m->range_want && got > m->range_done) {
        snprintf(meter, sizeof meter, "%s", m->source);
        if (!o)
            o = ranges_json(got, meter, &g);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (error)
            snprintf(m->range_err, sizeof m->range_err, "%s", error);
        else
            m->range_done = got,
            snprintf(m->range_json, sizeof m->range_json, "%s", text ? text : "{}");
        meter_run = m->meter_run;
        pthread_mutex_unlock(&s->lock);
        (void)eeb_srv_store_meter_event(s->store, meter_run, phase_events[got], eeb_mono_ns(),
                                        eeb_utc_ns(), text ? text : "{}", ignored, sizeof ignored);
        free(text);
    } else {
        pthread_mutex_unlock(&s->lock);
    }
    json_decref(o);
    return 0;
}
