/*
 * settle.c - every run ends.  A thread of the server's looks at the runs
 * in flight twice a second and ends each that has stopped, whether or not
 * anyone asks for its score: its stream silent past the allowance after it
 * began, never begun, its predictions not come in time after its test
 * inputs, no score asked for after complete, its team revoked, its round
 * closed.  Such a run is `aborted` (its side stopped), with the reason in
 * its record, and its meter is let go.  A run the server's own fault cut
 * short (its meter read nothing while it fine-tuned; a restart: resume.c)
 * is `void`: it leaves its entry and the round's cap, and may be run again.
 */
#include "server_int.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SETTLE_EVERY_NS 500000000LL

int eeb_srv_end_run(struct eeb_server *s, int64_t id, int64_t meter_run, const char *verdict,
                    const char *why, char *err, size_t errlen)
{
    int moved = eeb_srv_store_run_end(s->store, id, verdict, why, err, errlen);
    if (moved <= 0)
        return moved;
    if (meter_run)
        eeb_srv_meter_drop(s, meter_run);
    atomic_fetch_add(&s->changes, 1);
    eeb_srv_log(s, "run %lld ended: %s: %s", (long long)id, verdict, why);
    return 1;
}

/* Why run r, in flight, has stopped at now (UTC ns), "" if it has not. */
static void stopped(const struct eeb_server *s, const struct eeb_srv_in_flight *r, int64_t now,
                    char *why, size_t n)
{
    double allowance = s->cfg.stream_allowance_s, within = s->cfg.predict_within_s;
    /* the allowance counts from a restart of the server's, which heard
     * nothing before it */
    int64_t heard = r->last_link > r->begun ? r->last_link : r->begun;
    heard = heard > s->started_utc_ns ? heard : s->started_utc_ns;
    why[0] = '\0';
    if (r->revoked)
        snprintf(why, n, "its team was revoked");
    else if (r->round_closed)
        snprintf(why, n, "round %s closed before it ended", r->round);
    else if (r->complete && (double)(now - (heard > r->completed ? heard : r->completed)) / 1e9 >
                                within + allowance)
        snprintf(why, n,
                 "it asked for no score within %g s of saying complete and sending its last link",
                 within + allowance);
    else if (r->complete)
        return;
    else if (r->test_served && (double)(now - r->test_served) / 1e9 > within + allowance)
        snprintf(why, n, "it did not complete within %g s of its test inputs being served",
                 within + allowance);
    else if (!r->test_served && r->begun && (double)(now - heard) / 1e9 > allowance)
        snprintf(why, n,
                 "its stream stopped: no link for %.0f s after its %lld links (the server "
                 "allows %g s)",
                 (double)(now - heard) / 1e9, (long long)r->links, allowance);
    else if (!r->begun &&
             now - (r->registered > s->started_utc_ns ? r->registered : s->started_utc_ns) >
                 EEB_SRV_PRE_BEGIN_NS)
        snprintf(why, n, "it did not begin its fine-tune within %.0f s of registering",
                 (double)EEB_SRV_PRE_BEGIN_NS / 1e9);
}

/* Why run r's fine-tune cannot be measured, "" if it can: the server's
 * meter of it (director mode) has read nothing for longer than the
 * stream's allowance while it fine-tuned -- its agent fell silent, its
 * reads fail, its samples cannot be stored.  The server's fault, not the
 * team's: the run is void, and may be run again.  1 if so. */
static int meter_failed(struct eeb_server *s, const struct eeb_srv_in_flight *r, int64_t now,
                        char *why, size_t n)
{
    int64_t last, mono = eeb_mono_ns(), utc_mono = now - mono;
    why[0] = '\0';
    if (!r->meter_run || !r->begun || r->complete || !eeb_srv_meter_last_read(s, r->id, &last))
        return 0;
    /* from the last reading, or the begin, or this server's start */
    int64_t since = r->begun - utc_mono;
    since = since > s->started_utc_ns - utc_mono ? since : s->started_utc_ns - utc_mono;
    since = since > last ? since : last;
    double silent_s = (double)(mono - since) / 1e9;
    if (silent_s <= s->cfg.stream_allowance_s)
        return 0;
    snprintf(why, n,
             "the server's meter read nothing for %.0f s of its fine-tune (the station's agent "
             "fell silent, or the meter's reads failed)",
             silent_s);
    return 1;
}

/* The runs in flight, read whole before any is ended: a write on the
 * connection while its read goes on would find the database locked. */
struct runs_read {
    struct eeb_srv_in_flight *r;
    size_t n, cap;
};

static int keep_in_flight(void *arg, const struct eeb_srv_in_flight *r)
{
    struct runs_read *w = arg;
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        void *more = realloc(w->r, cap * sizeof *w->r);
        if (!more)
            return EEB_ENOMEM;
        w->r = more, w->cap = cap;
    }
    w->r[w->n++] = *r;
    return 0;
}

int eeb_srv_runs_in_flight(struct eeb_server *s, struct eeb_srv_in_flight **out, size_t *n,
                           char *err, size_t errlen)
{
    struct runs_read w = {0};
    int rc = eeb_srv_store_in_flight_each(s->store, keep_in_flight, &w, err, errlen);
    if (rc == EEB_ENOMEM)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "the runs in flight: out of memory");
    if (rc)
        free(w.r), w.r = NULL, w.n = 0;
    *out = w.r, *n = w.n;
    return rc;
}

/* A meter whose run is no longer in flight (ended by the organizer, from
 * another process), let go: its run's state read now, not as the sweep
 * read it (a run registered since is in flight). */
static void let_go_ended(struct eeb_server *s)
{
    char err[512];
    for (int i = 0; i < EEB_SRV_METERS; i++) {
        pthread_mutex_lock(&s->lock);
        int64_t run = s->meters[i].run, meter_run = s->meters[i].meter_run;
        pthread_mutex_unlock(&s->lock);
        struct eeb_srv_run now;
        if (run && eeb_srv_store_run_get(s->store, run, &now, err, sizeof err) > 0 &&
            strcmp(now.state, "scored") == 0)
            eeb_srv_meter_drop(s, meter_run);
    }
}

/* Every run in flight that has stopped, ended. */
static void sweep(struct eeb_server *s)
{
    struct eeb_srv_in_flight *r;
    size_t n;
    char why[256], err[512];
    int64_t now = eeb_utc_ns();
    if (eeb_srv_runs_in_flight(s, &r, &n, err, sizeof err)) {
        eeb_srv_log(s, "the runs in flight could not be read: %s", err);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *verdict = "void";
        if (!meter_failed(s, &r[i], now, why, sizeof why))
            stopped(s, &r[i], now, why, sizeof why), verdict = "aborted";
        if (why[0] &&
            eeb_srv_end_run(s, r[i].id, r[i].meter_run, verdict, why, err, sizeof err) < 0)
            eeb_srv_log(s, "run %lld could not be ended: %s", (long long)r[i].id, err);
    }
    free(r);
    let_go_ended(s);
}

static void *settler(void *arg)
{
    struct eeb_server *s = arg;
    pthread_mutex_lock(&s->settle_lock);
    while (!s->settle_stop) {
        struct timespec at;
        clock_gettime(CLOCK_REALTIME, &at);
        at.tv_nsec += SETTLE_EVERY_NS;
        at.tv_sec += at.tv_nsec / 1000000000L, at.tv_nsec %= 1000000000L;
        int woke = pthread_cond_timedwait(&s->settle_wake, &s->settle_lock, &at);
        if (s->settle_stop)
            break;
        if (woke != ETIMEDOUT)
            continue;
        pthread_mutex_unlock(&s->settle_lock);
        sweep(s);
        pthread_mutex_lock(&s->settle_lock);
    }
    pthread_mutex_unlock(&s->settle_lock);
    return NULL;
}

int eeb_srv_settler_start(struct eeb_server *s, char *err, size_t errlen)
{
    int rc = pthread_create(&s->settler, NULL, settler, s);
    if (rc)
        return eeb_errf(err, errlen, EEB_EIO, "the thread that ends stopped runs: %s",
                        strerror(rc));
    s->settling = 1;
    return EEB_OK;
}

void eeb_srv_settler_stop(struct eeb_server *s)
{
    if (!s->settling)
        return;
    pthread_mutex_lock(&s->settle_lock);
    s->settle_stop = 1;
    pthread_cond_signal(&s->settle_wake);
    pthread_mutex_unlock(&s->settle_lock);
    pthread_join(s->settler, NULL);
    s->settling = 0;
}

/* POST /api/v1/runs/{id}/abandon {"reason": "..."}: the team's harness
 * stopped the run after it registered (its system refused the model, the
 * machine failed, the team stopped it): the run ends now, aborted for that
 * reason, rather than when the server finds its stream silent. */
enum MHD_Result eeb_srv_api_abandon(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    if (!eeb_srv_in_state(k, "registered", "complete", &sent))
        return sent;
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    const char *reason = json_string_value(json_object_get(body, "reason"));
    size_t n = reason ? strlen(reason) : 0;
    if (!n || n > 300 || json_object_size(body) != 1) {
        json_decref(body);
        return eeb_srv_call_fail(k, 400, "reason",
                                 "expected {\"reason\": why the run stopped, 1 to 300 bytes}");
    }
    char why[400], err[512];
    snprintf(why, sizeof why, "its harness stopped it: %s", reason);
    json_decref(body);
    int moved = eeb_srv_end_run(k->s, k->id, k->run.meter_run, "aborted", why, err, sizeof err);
    if (moved < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (eeb_srv_store_run_get(k->s->store, k->id, &k->run, err, sizeof err) < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
}
