/*
 * client_agent.c - a station's agent's side of director mode: the samples
 * its power log commits, read back from the log's database and sent to
 * the server (POST /api/v1/station/samples) in order, each request saying
 * the agent's monotonic clock as it is sent.  The log is the agent's own
 * record; what the server has not taken stays in it and goes next time.
 * Each sample goes with the uncertainty its meter stated (kept in the
 * sample's flags), and the meter's read faults the log recorded go with
 * their times, so that the server holds the meter to the rules as it
 * holds one it reads itself.
 */
#include "eeb_client.h"

#include "common/eeb_json.h"
#include "power/eeb_power.h"
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BATCH    4096 /* samples a request */
#define REQUESTS 4    /* a call's requests at most: a backlog is caught up over calls */
#define FAULTS   64   /* read faults a request (the server takes no more) */

struct eeb_client_agent {
    struct eeb_client c;
    struct eeb_rundb *db;
    int64_t run;
    char uuid[40], source[256], provenance[16];
    double rate_hz, update_interval_s;
    int64_t last_t_ns;       /* the last sample the server took */
    int64_t last_fault_t_ns; /* the last read fault it took */
    struct eeb_power_source *src;
    json_t *ranged;  /* what a ranging phase set, until the server has it (NULL: none) */
    int range_phase; /* the last phase done (1 begin, 2 end), for range_run */
    int64_t range_run;
    struct eeb_client_agent_status st;
};

int eeb_client_agent_open(const char *url, const char *key_file, const char *db_path, int64_t run,
                          const char *uuid, struct eeb_power_source *src, double rate_hz,
                          struct eeb_client_agent **out, char *err, size_t errlen)
{
    char key[EEB_TOKEN_HEX];
    struct eeb_client_agent *a = calloc(1, sizeof *a);
    if (!a)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = eeb_server_station_key_read(key_file, key, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_client_init(&a->c, url, key, err, errlen);
    memset(key, 0, sizeof key);
    if (rc == EEB_OK)
        rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &a->db, err, errlen);
    if (rc) {
        eeb_client_agent_close(a);
        return rc;
    }
    /* the next tick sends again what did not arrive, with its clock then */
    a->c.tries = 1, a->c.timeout_s = 5;
    a->run = run, a->rate_hz = rate_hz, a->update_interval_s = src->update_interval_s;
    a->src = src;
    snprintf(a->uuid, sizeof a->uuid, "%s", uuid);
    snprintf(a->source, sizeof a->source, "%s", src->uri);
    snprintf(a->provenance, sizeof a->provenance, "%s", eeb_provenance_name(src->provenance));
    *out = a;
    return EEB_OK;
}

struct gather {
    json_t *samples;
    int64_t last_t_ns;
};

static int add_sample(void *arg, const char *source, const struct eeb_sample *x)
{
    (void)source;
    struct gather *g = arg;
    json_t *v = json_pack("[I, o, o, o]", (json_int_t)x->t_mono_ns, eeb_json_number(x->watts),
                          eeb_json_number(x->volts), eeb_json_number(x->amps));
    /* its uncertainty, if its meter stated one: null for one it could not
     * evaluate */
    double u = eeb_sample_uncertainty(x->flags);
    if (v && !isnan(u) && json_array_append_new(v, isfinite(u) ? json_real(u) : json_null()))
        json_decref(v), v = NULL;
    if (!v || json_array_append_new(g->samples, v))
        return EEB_ENOMEM;
    g->last_t_ns = x->t_mono_ns;
    return json_array_size(g->samples) >= BATCH; /* 1: this request is full */
}

struct faults {
    json_t *list;
    int64_t after, last_t_ns;
};

/* The log's read faults after the last taken (its uncertainty faults are
 * the server's to find, from the samples' uncertainty): {t_ns, kind,
 * reason}, FAULTS at most. */
static int add_fault(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc;
    struct faults *f = arg;
    if (t <= f->after ||
        (strcmp(kind, EEB_EVENT_POWER_FAULT) && strcmp(kind, EEB_EVENT_POWER_RECOVERED)))
        return 0;
    if (json_array_size(f->list) >= FAULTS)
        return 1;
    json_t *o = payload ? json_loads(payload, 0, NULL) : NULL;
    const char *reason = json_string_value(json_object_get(o, EEB_EVENT_KEY_REASON));
    int mine = !json_object_get(o, EEB_EVENT_KEY_UNCERTAINTY);
    char r[256]; /* the most the server takes, cut at a character's start */
    const char *text = reason ? reason : "?";
    size_t len = strlen(text) < sizeof r ? strlen(text) : sizeof r - 1;
    while (len && (text[len] & 0xc0) == 0x80)
        len--;
    memcpy(r, text, len);
    r[len] = '\0';
    json_t *v = mine
                    ? json_pack("{s:I, s:s, s:s}", "t_ns", (json_int_t)t, "kind", kind, "reason", r)
                    : NULL;
    json_decref(o);
    if (mine && (!v || json_array_append_new(f->list, v)))
        return EEB_ENOMEM;
    f->last_t_ns = t;
    return 0;
}

/* The meter ranged as the server asks for the run it measures (phase
 * "begin" or "end", once each a run), what it set sent with the next
 * batch; said in the status. */
static void range(struct eeb_client_agent *a, const char *phase, int64_t run)
{
    int p = !phase ? 0 : strcmp(phase, "begin") == 0 ? 1 : strcmp(phase, "end") == 0 ? 2 : 0;
    if (!p || !run || (a->range_run == run && a->range_phase >= p))
        return;
    struct eeb_power_ranges g;
    char err[256];
    int rc = eeb_power_source_range(a->src, p == 1 ? EEB_POWER_RANGE_BEGIN : EEB_POWER_RANGE_END,
                                    &g, err, sizeof err);
    json_t *o = json_pack("{s:s, s:I}", "phase", phase, "run", (json_int_t)run);
    if (o && rc != EEB_OK) {
        json_object_set_new(o, "error", json_stringn(err, strnlen(err, 255)));
    } else if (o) {
        json_object_set_new(o, "volts", json_string(g.volts));
        json_object_set_new(o, "amps", json_string(g.amps));
        json_object_set_new(o, "identity", json_stringn(g.identity, strnlen(g.identity, 255)));
        if (isfinite(g.max_volts))
            json_object_set_new(o, "max_volts", json_real(g.max_volts));
        if (isfinite(g.max_amps))
            json_object_set_new(o, "max_amps", json_real(g.max_amps));
    }
    json_decref(a->ranged);
    a->ranged = o;
    a->range_run = run, a->range_phase = p;
    snprintf(a->st.ranged, sizeof a->st.ranged, "ranging pass of run %lld %s: %s", (long long)run,
             p == 1 ? "began" : "ended",
             rc != EEB_OK ? err
             : p == 1     ? "the meter autoranges"
                          : "its ranges fixed");
    if (rc == EEB_OK && p == 2)
        snprintf(a->st.ranged + strlen(a->st.ranged), sizeof a->st.ranged - strlen(a->st.ranged),
                 " at %s V and %s A", g.volts, g.amps);
}

/* One request of the samples after the last taken: how many it sent, or
 * an error.  With none new it still says the agent is there, and its
 * meter's counts (a meter whose reads all fail gives no samples). */
static int send_batch(struct eeb_client_agent *a, uint64_t failed, uint64_t dropped, char *err,
                      size_t errlen)
{
    struct gather g = {json_array(), a->last_t_ns};
    if (!g.samples)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = eeb_rundb_samples_each(a->db, a->run, a->last_t_ns + 1, INT64_MAX, add_sample, &g, err,
                                    errlen);
    size_t n = json_array_size(g.samples);
    struct faults f = {json_array(), a->last_fault_t_ns, a->last_fault_t_ns};
    if (rc >= 0 && !f.list)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc >= 0)
        rc = eeb_rundb_events_each(a->db, a->run, add_fault, &f, err, errlen);
    if (rc == EEB_ENOMEM)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc < 0) {
        json_decref(g.samples), json_decref(f.list);
        return rc;
    }
    json_t *body = json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:I, s:o, s:o}", "session",
                             a->uuid, "source", a->source, "provenance", a->provenance, "rate_hz",
                             a->rate_hz, "update_interval_s", a->update_interval_s, "now_ns",
                             (json_int_t)eeb_mono_ns(), "failed", (json_int_t)failed, "dropped",
                             (json_int_t)dropped, "samples", g.samples, "faults", f.list);
    if (!body)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    json_object_set_new(body, "can_range", json_boolean(eeb_power_source_ranges(a->src)));
    if (a->ranged)
        json_object_set(body, "ranged", a->ranged);
    json_t *reply = NULL;
    rc = eeb_client_call(&a->c, "POST", "/api/v1/station/samples", body, &reply, err, errlen);
    json_decref(body);
    if (rc == EEB_OK) {
        a->last_t_ns = g.last_t_ns, a->last_fault_t_ns = f.last_t_ns;
        a->st.sent += n;
        a->st.kept += (uint64_t)json_integer_value(json_object_get(reply, "kept"));
        a->st.measuring = json_integer_value(json_object_get(reply, "measuring"));
        const char *team = json_string_value(json_object_get(reply, "team"));
        snprintf(a->st.team, sizeof a->st.team, "%s", team ? team : "");
        json_decref(a->ranged), a->ranged = NULL; /* the server has it */
        range(a, json_string_value(json_object_get(reply, "range")), a->st.measuring);
    }
    json_decref(reply);
    return rc ? rc : (int)n;
}

int eeb_client_agent_send(struct eeb_client_agent *a, uint64_t failed, uint64_t dropped, char *err,
                          size_t errlen)
{
    int n = BATCH;
    for (int i = 0; i < REQUESTS && n == BATCH; i++)
        if ((n = send_batch(a, failed, dropped, err, errlen)) < 0)
            return n;
    return EEB_OK;
}

void eeb_client_agent_status(const struct eeb_client_agent *a, struct eeb_client_agent_status *out)
{
    *out = a->st;
}

void eeb_client_agent_close(struct eeb_client_agent *a)
{
    if (!a)
        return;
    eeb_rundb_close(a->db);
    json_decref(a->ranged);
    eeb_client_free(&a->c);
    free(a);
}
