/*
 * score.c - POST /api/v1/runs/{id}/score: the server counts M_s against
 * the labels it alone holds, where they may count, and judges the run as
 * `eeb check` would, from the record it received; with what only the
 * server saw (the stream, the deadline, the seed handed out).
 */
#include "server_int.h"

#include "record/eeb_record.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- score ---- */

/* The payload of the score event the server adds to the run's record
 * (free it; NULL if out of memory, and the event goes without one). */
static char *score_json(const struct eeb_run_outcome *o)
{
    json_t *payload =
        json_pack("{s:s, s:s, s:o}", "by", "server", EEB_EVENT_KEY_VERDICT, eeb_run_verdict(o, 0),
                  EEB_EVENT_KEY_S, eeb_json_number(o->score.s));
    char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(payload);
    return text;
}

/* The sampler's counters from the body ({"samples_dropped": n,
 * "reads_failed": n, "deadlines_missed": n}, each optional), stored as
 * the run's results for the validity rules; or the 400 sent. */
static int store_counters(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    static const char *const counters[] = {EEB_RESULT_DROPPED, EEB_RESULT_FAILED,
                                           EEB_RESULT_MISSED};
    int64_t n[3] = {0, 0, 0};
    struct eeb_srv_fault f = {.field = ""};
    char err[512];
    if (k->q->len) {
        json_t *body = eeb_srv_call_body(k, sent);
        if (!body)
            return 0;
        int rc = 0;
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v)
        {
            int i = 0;
            while (i < 3 && strcmp(key, counters[i]))
                i++;
            rc = i < 3 ? eeb_srv_int_field(v, key, 0, INT32_MAX, &n[i], &f)
                       : eeb_srv_bad(&f, key, "unknown field");
            if (rc)
                break;
        }
        json_decref(body);
        if (rc) {
            *sent = eeb_srv_fail_fault(k, &f);
            return 0;
        }
    }
    for (int i = 0; i < 3; i++)
        if (eeb_srv_store_run_counter(k->s->store, k->id, counters[i], n[i], err, sizeof err)) {
            *sent = eeb_srv_call_fail(k, 500, NULL, err);
            return 0;
        }
    return 1;
}

/* Whether why holds reason whole among its "; "-separated reasons. */
static int has_reason(const char *why, const char *reason)
{
    size_t n = strlen(reason);
    for (const char *at = why; (at = strstr(at, reason)) != NULL; at++)
        if ((at == why || (at - why >= 2 && at[-2] == ';' && at[-1] == ' ')) &&
            (at[n] == '\0' || at[n] == ';'))
            return 1;
    return 0;
}

/* o made invalid, for the reason fmt says after those it has (once: the
 * judge may have found it too). */
__attribute__((format(printf, 2, 3))) static void invalidate(struct eeb_run_outcome *o,
                                                             const char *fmt, ...)
{
    char reason[sizeof o->why];
    o->valid = 0, o->pass = 0, o->score.s = NAN;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    size_t n = strlen(o->why);
    if (has_reason(o->why, reason))
        return;
    if (n && n + 2 < sizeof o->why)
        memcpy(o->why + n, "; ", 3), n += 2;
    snprintf(o->why + n, sizeof o->why - n, "%s", reason);
}

/* A run of a round: the seed it was handed; in the closed division, no
 * more epochs than the round allows. */
static int round_check(struct eeb_srv_call *k, struct eeb_run_outcome *o, char *err, size_t errlen)
{
    struct eeb_round round;
    int64_t id, epochs, handed, used;
    if (!k->run.entry)
        return EEB_OK;
    /* a run of a round trains with the seed it was handed, and says so */
    int rc = eeb_srv_store_run_seeds(k->s->store, k->id, &handed, &used, err, errlen);
    if (rc)
        return rc;
    if (handed >= 0 && used != handed && used >= 0)
        invalidate(o, "the run trained with seed %lld; the server handed it seed %lld",
                   (long long)used, (long long)handed);
    else if (handed >= 0 && used != handed)
        invalidate(o, "the run's finetune_begin says no seed; the server handed it seed %lld",
                   (long long)handed);
    if (strcmp(k->run.division, "closed"))
        return EEB_OK;
    int found = eeb_srv_store_round_find(k->s->store, k->run.round, 0, &id, &round, err, errlen);
    if (found <= 0)
        return found;
    int allowed = round.task[k->run.task].epochs_max;
    if (!allowed)
        return EEB_OK;
    rc = eeb_srv_store_run_epochs(k->s->store, k->id, &epochs, err, errlen);
    if (rc == EEB_OK && epochs > allowed)
        invalidate(o, "the run trained %lld epochs; round %s's closed division allows %d",
                   (long long)epochs, round.name, allowed);
    return rc;
}

/* Why an official run's labels may not count (its M_s, its S, a verdict
 * on them), "" if they may: it fine-tuned as the server saw (its stream,
 * its steps), and its predictions followed its test inputs in time.  A
 * rehearsal's always may: its labels are public.  The predictions' time is
 * read afresh (r is read again), after the tally: predictions posted while
 * the run is being scored are timed with the rest. */
static int labels_barred(struct eeb_srv_call *k, struct eeb_srv_window *window, char *why, size_t n,
                         char *err, size_t errlen)
{
    const struct eeb_srv_run *r = &k->run;
    why[0] = '\0';
    int rc = !r->official ? EEB_OK : eeb_srv_fine_tuned(k->s, r, window, why, n, err, errlen);
    if (rc == EEB_OK && r->official && !why[0] && !r->test_served_utc_ns)
        snprintf(why, n, "its test inputs were never served");
    return rc;
}

/* Why an official run's predictions came too late, "" if they did not:
 * after the deadline its inputs' first serving set, as the run stands in
 * the store now. */
static int predictions_late(struct eeb_srv_call *k, char *why, size_t n, char *err, size_t errlen)
{
    struct eeb_srv_run now;
    int found = eeb_srv_store_run_get(k->s->store, k->id, &now, err, errlen);
    double late_s = (double)(now.predicted_utc_ns - now.test_served_utc_ns) / 1e9;
    why[0] = '\0';
    if (found > 0 && now.official && now.predicted_utc_ns && late_s > k->s->cfg.predict_within_s)
        snprintf(why, n,
                 "its predictions arrived %.1f s after its test inputs were served; the server "
                 "allows %g s",
                 late_s, k->s->cfg.predict_within_s);
    return found < 0 ? found : EEB_OK;
}

/* POST /api/v1/runs/{id}/score [counters]: judges the run from what it
 * sent and the labels the server holds.  Asked again, it answers the same
 * verdict.  An official run that did not fine-tune as the server saw is
 * judged without its labels: invalid, with no M_s, so that no score is an
 * oracle for them. */
enum MHD_Result eeb_srv_api_score(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    if (strcmp(k->run.state, "scored") == 0)
        return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
    const struct eeb_srv_testset *t;
    if (!eeb_srv_in_state(k, "complete", NULL, &sent) || !(t = eeb_srv_run_set(k, &sent)))
        return sent;
    if (!k->run.links)
        return eeb_srv_call_fail(k, 409, "links",
                                 "the run sent no chain: the server judges a run from its chain "
                                 "of events and samples (POST /api/v1/runs/{id}/links)");
    /* the quota bounds what official runs' scores can tell of the secret
     * labels; a rehearsal's labels are public */
    int charged = k->run.official;
    if (!store_counters(k, &sent) ||
        (charged && !eeb_srv_take_quota(k, EEB_QUOTA_SCORED, 1, &sent)))
        return sent;
    const char *path = eeb_srv_store_path(k->s->store);
    struct eeb_run_outcome o = {0};
    struct eeb_srv_window window = {0};
    char err[512], barred[512] = "", unmetered[256] = "", unjudged[256] = "";
    double m_s = NAN;
    /* an official run's stream, and with it the window the server's meter
     * (director mode) is read over, before the judge reads the meter: a
     * station agent's samples to the window's end in */
    int rc = labels_barred(k, &window, barred, sizeof barred, err, sizeof err);
    if (rc == EEB_OK && !barred[0])
        rc = eeb_srv_testset_m_s(t, k->s->store, k->id, &m_s, unjudged, sizeof unjudged, err,
                                 sizeof err);
    if (rc == EEB_OK && !barred[0])
        rc = predictions_late(k, barred, sizeof barred, err, sizeof err);
    if (rc) {
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    if (k->run.meter_run)
        eeb_srv_meter_settle(k->s, k->id, window.end_utc_ns);
    if (k->run.meter_run && !window.whole)
        snprintf(unmetered, sizeof unmetered,
                 "the server's meter has no fine-tune window: the run's chain holds no "
                 "finetune_begin and finetune_end");
    else if (k->run.meter_run &&
             eeb_srv_store_meter_window(k->s->store, k->run.meter_run, window.begin_utc_ns,
                                        window.end_utc_ns, unmetered, sizeof unmetered, err,
                                        sizeof err)) {
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    /* the labels' count where it may be had, else none: the judge then
     * gives every other figure, and the run is invalid for the reason */
    if (eeb_run_judge(path, k->id, isnan(m_s) ? 0 : m_s, &o, err, sizeof err)) {
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    if (unmetered[0])
        invalidate(&o, "%s", unmetered);
    o.complete = 1;
    o.device_time_s = o.device_energy_j = NAN; /* the server models no device */
    /* an official run's fine-tuning happened between register and complete */
    double seen_s = (double)(k->run.completed_utc_ns - k->run.registered_utc_ns) / 1e9;
    if (k->run.official && !o.modeled_clock && o.valid && o.t_s > seen_s + 1)
        invalidate(&o,
                   "the fine-tune window (%.3f s) is longer than the server saw between register "
                   "and complete (%.3f s)",
                   o.t_s, seen_s);
    if (barred[0])
        invalidate(&o, "%s", barred);
    else if (unjudged[0])
        invalidate(&o, "%s", unjudged);
    if (barred[0] || unjudged[0])
        o.score.m_s = NAN;
    if (o.valid && round_check(k, &o, err, sizeof err)) {
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    struct eeb_srv_run *r = &k->run;
    snprintf(r->verdict, sizeof r->verdict, "%s", eeb_run_verdict(&o, 0));
    snprintf(r->why, sizeof r->why, "%s", o.why);
    r->s = o.pass ? o.score.s : NAN;
    r->m_u = o.score.m_u, r->m_t = o.score.m_t, r->m_p = o.score.m_p, r->m_s = o.score.m_s;
    r->t_s = o.t_s, r->energy_j = o.energy_j, r->s_uncertainty = o.s_uncertainty;
    /* the verdict in the run's record, as `eeb run` stores one; the
     * utilization was declared at registration, or modeled by the server */
    char *score = score_json(&o);
    int moved = eeb_srv_store_run_scored(
        k->s->store, r, &o, r->schedule_steps ? "modeled" : "declared", score, err, sizeof err);
    free(score);
    if (moved <= 0)
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
    if (moved < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (!moved) /* scored by a request racing this one: its verdict stands */
        return eeb_srv_call_fail(k, 409, "state", "the run was scored meanwhile");
    snprintf(r->state, sizeof r->state, "scored");
    atomic_fetch_add(&k->s->changes, 1); /* the leaderboard's answers are stale */
    char said[48] = ", no S";
    if (!isnan(r->s))
        snprintf(said, sizeof said, ", S = %.6g", r->s);
    eeb_srv_log(k->s, "run %lld scored: %s%s%s%s", (long long)r->id, r->verdict, said,
                r->why[0] ? ": " : "", r->why);
    return eeb_srv_call_json(k, 200, eeb_srv_run_json(r));
}
