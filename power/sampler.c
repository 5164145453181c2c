/*
 * sampler.c - reading a power source on a fixed clock into the run
 * database (eeb_power.h).
 *
 * Two threads.  The sampler wakes on absolute CLOCK_MONOTONIC deadlines,
 * reads the source, and pushes the reading into the ring; it never touches
 * disk, so a slow disk costs drops (counted), not missed deadlines.  The
 * writer drains the ring every WRITE_PERIOD_MS into one SQLite transaction
 * and writes the events (stage marks, meter faults) queued beside it.  A
 * reading whose meter reports its uncertainty is held to the rules' limit
 * (EEB_POWER_UNCERTAINTY_LIMIT): one over it is kept, and is a meter fault.
 *
 * Sections: the event queue; the sampler thread; the writer thread;
 * starting and stopping.
 */
#include "power_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Four commits a second: each costs an fsync (synchronous=FULL), so ten
 * made the writer half the CPU of 1 kHz sampling; a crash loses at most
 * the last quarter second, which the ring held. */
#define WRITE_PERIOD_MS 250
#define WRITE_BATCH     8192
#define JITTER_BUCKETS  20000 /* 1 us each; later wake-ups count in the last */

struct event {
    struct event *next;
    int64_t t_mono_ns, t_utc_ns;
    char *kind, *payload;
};

struct eeb_sampler {
    struct eeb_power_source *src;
    struct eeb_rundb *db; /* the writer's connection */
    struct eeb_sampler_config cfg;
    int64_t interval_ns;
    struct power_ring ring;
    pthread_t sampler, writer;
    _Atomic int stop;

    pthread_mutex_t lock; /* the event queue, and waking the writer */
    pthread_cond_t wake;
    struct event *events, **events_tail;
    pthread_cond_t synced;         /* sync_done moved */
    uint64_t sync_want, sync_done; /* eeb_sampler_sync's requests, and the writer's answer */

    /* written by the sampler thread, read by anyone */
    _Atomic uint64_t samples, failed, dropped;
    _Atomic double watts, joules, seconds;
    _Atomic int64_t last_ns;
    /* the sampler thread's own */
    uint64_t ticks, missed;
    struct eeb_power_hold hold; /* the readings' uncertainty: the largest, NAN: none */
    enum eeb_provenance prov;   /* the source's, for the stored uncertainty */
    uint32_t *jitter;           /* histogram */
    int timer_slack, realtime;  /* tighten_timing() was granted them */
    double jitter_max_us;
    int64_t first_t, last_t;
    double sampler_cpu_s;
    char first_error[256];
    /* the writer thread's own */
    uint64_t written;
    double writer_cpu_s;
    int write_rc;
    char write_err[512];
};

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- the event queue ---- */

/* Queues an event at t_mono_ns and t_utc_ns (0: now). */
static int64_t queue_event_at(struct eeb_sampler *s, int64_t t_mono_ns, int64_t t_utc_ns,
                              const char *kind, const char *payload)
{
    int64_t t = t_mono_ns ? t_mono_ns : eeb_mono_ns();
    struct event *e = calloc(1, sizeof *e);
    if (e) {
        e->t_mono_ns = t, e->t_utc_ns = t_utc_ns ? t_utc_ns : eeb_utc_ns();
        e->kind = strdup(kind);
        e->payload = payload ? strdup(payload) : NULL;
        if (!e->kind || (payload && !e->payload)) {
            free(e->kind), free(e->payload), free(e);
            e = NULL;
        }
    }
    pthread_mutex_lock(&s->lock);
    if (e) {
        *s->events_tail = e;
        s->events_tail = &e->next;
    } else if (!s->write_rc) {
        s->write_rc = EEB_ENOMEM;
        snprintf(s->write_err, sizeof s->write_err, "event '%s': out of memory", kind);
    }
    pthread_mutex_unlock(&s->lock);
    return t;
}

static int64_t queue_event(struct eeb_sampler *s, const char *kind, const char *payload)
{
    return queue_event_at(s, 0, 0, kind, payload);
}

int64_t eeb_sampler_mark(struct eeb_sampler *s, const char *kind, const char *payload_json)
{
    return queue_event(s, kind, payload_json);
}

/* An event whose payload is {"reason": reason}; only when a meter fails
 * or recovers, so the allocations stay off the sampler's steady path. */
static void fault_event(struct eeb_sampler *s, const char *kind, const char *reason)
{
    json_t *o = json_pack("{s:s}", EEB_EVENT_KEY_REASON, reason);
    char *payload = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    queue_event(s, kind, payload ? payload : "{}");
    free(payload);
}

const char *eeb_power_hold(struct eeb_power_hold *h, const char *uri, const struct eeb_sample *x,
                           double u, char **payload)
{
    *payload = NULL;
    if (isnan(u))
        return NULL;
    if (isfinite(u) && !(u <= h->max))
        h->max = u;
    int over = !(u <= EEB_POWER_UNCERTAINTY_LIMIT), was = h->over;
    h->over = over;
    json_t *o = NULL;
    if (over && !was) {
        char reason[400];
        if (isfinite(u))
            snprintf(reason, sizeof reason,
                     "%s: a reading of %g W with an uncertainty of %.2f %% (the rules allow "
                     "%g %%)",
                     uri, x->watts, 100 * u, 100 * EEB_POWER_UNCERTAINTY_LIMIT);
        else
            snprintf(reason, sizeof reason,
                     "%s: a reading of %g W whose uncertainty the meter could not evaluate", uri,
                     x->watts);
        o = json_pack("{s:s, s:o}", EEB_EVENT_KEY_REASON, reason, EEB_EVENT_KEY_UNCERTAINTY,
                      isfinite(u) ? json_real(u) : json_null());
    } else if (!over && was) {
        char reason[128];
        snprintf(reason, sizeof reason, "readings within the rules' %g %% uncertainty again",
                 100 * EEB_POWER_UNCERTAINTY_LIMIT);
        o = json_pack("{s:s}", EEB_EVENT_KEY_REASON, reason);
    } else {
        return NULL;
    }
    *payload = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return over ? EEB_EVENT_POWER_FAULT : EEB_EVENT_POWER_RECOVERED;
}

/* A reading's uncertainty held to the rules' limit (eeb_power_hold): the
 * first reading of a stretch over it (or of unknown uncertainty) is a
 * power_fault event at the reading's time, the first back within it
 * power_recovered; kept in the reading's flags. */
static void hold_uncertainty(struct eeb_sampler *s, struct eeb_sample *x, double u)
{
    char *payload;
    x->flags |= eeb_sample_uncertainty_flags(u);
    const char *kind = eeb_power_hold(&s->hold, s->src->uri, x, u, &payload);
    if (kind)
        queue_event_at(s, x->t_mono_ns, x->t_utc_ns, kind, payload ? payload : "{}");
    free(payload);
}

/* ---- the sampler thread ---- */

static void take(struct eeb_sampler *s, int64_t now, int *failing)
{
    char err[256];
    struct eeb_sample x = {.volts = NAN, .amps = NAN};
    s->src->uncertainty = NAN;
    int rc = s->src->ops->read(s->src, now, &x, err, sizeof err);
    /* a recorded trace's gap: no sample, as its recorder took none, so the
     * replay has the same gap for the rules to judge; not a failed read */
    if (rc == EEB_ENODATA) {
        s->missed++;
        return;
    }
    if (rc == EEB_OK && !(x.watts >= 0 && isfinite(x.watts))) {
        snprintf(err, sizeof err, "%s: a reading of %g W", s->src->uri, x.watts);
        rc = EEB_EDEVICE;
    }
    if (rc != EEB_OK) {
        atomic_fetch_add(&s->failed, 1);
        if (!s->first_error[0])
            snprintf(s->first_error, sizeof s->first_error, "%s", err);
        if (!*failing)
            fault_event(s, EEB_EVENT_POWER_FAULT, err);
        *failing = 1;
        return;
    }
    if (*failing)
        fault_event(s, EEB_EVENT_POWER_RECOVERED, "readings resumed");
    *failing = 0;
    x.t_mono_ns = now;
    x.t_utc_ns = eeb_utc_ns();
    hold_uncertainty(s, &x, s->src->uncertainty);
    if (!power_ring_push(&s->ring, &x))
        atomic_fetch_add(&s->dropped, 1);
    double w0 = atomic_load(&s->watts);
    if (s->last_t) /* the live figures; the database gets every sample */
        atomic_store(&s->joules, atomic_load(&s->joules) +
                                     (w0 + x.watts) / 2 * (double)(now - s->last_t) / 1e9);
    else
        s->first_t = now;
    s->last_t = now;
    atomic_store(&s->watts, x.watts);
    atomic_store(&s->seconds, (double)(now - s->first_t) / 1e9);
    atomic_store(&s->last_ns, now);
    atomic_fetch_add(&s->samples, 1);
}

/* Wake-ups as close to the deadline as this process may ask for: no timer
 * slack (Linux lets a normal thread wake 50 us late by default), and
 * real-time priority where it is granted (root, or CAP_SYS_NICE). */
static void tighten_timing(struct eeb_sampler *s)
{
    s->timer_slack = prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) == 0;
    struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO) + 10};
    s->realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

static void *sampler_main(void *arg)
{
    struct eeb_sampler *s = arg;
    int failing = 0;
    tighten_timing(s);
    int64_t next = eeb_mono_ns();
    while (!atomic_load(&s->stop)) {
        struct timespec ts = {(time_t)(next / 1000000000), (long)(next % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        int64_t now = eeb_mono_ns();
        double late_us = (double)(now - next) / 1e3;
        s->jitter[late_us < JITTER_BUCKETS - 1 ? (int)late_us : JITTER_BUCKETS - 1]++;
        s->jitter_max_us = fmax(s->jitter_max_us, late_us);
        s->ticks++;
        take(s, now, &failing);
        /* A read that overran its interval (a stalled meter) skips the
         * deadlines it missed rather than reading in a burst. */
        next += s->interval_ns;
        int64_t after = eeb_mono_ns();
        if (after > next) {
            int64_t skip = (after - next) / s->interval_ns + 1;
            s->missed += (uint64_t)skip;
            next += skip * s->interval_ns;
        }
    }
    s->sampler_cpu_s = thread_cpu_s();
    return NULL;
}

/* ---- the writer thread ---- */

static void free_events(struct event *e)
{
    while (e) {
        struct event *next = e->next;
        free(e->kind), free(e->payload), free(e);
        e = next;
    }
}

/* Commits what the ring holds and the queued events; on a database error
 * keeps the first and stops writing (the sampler's drops then count). */
static void drain(struct eeb_sampler *s, struct eeb_sample *buf)
{
    pthread_mutex_lock(&s->lock);
    struct event *e = s->events;
    s->events = NULL, s->events_tail = &s->events;
    int failed = s->write_rc != 0;
    pthread_mutex_unlock(&s->lock);
    char err[512] = "";
    int rc = EEB_OK;
    size_t n;
    while (!failed && rc == EEB_OK && (n = power_ring_pop(&s->ring, buf, WRITE_BATCH)) > 0) {
        rc = eeb_rundb_samples_add(s->db, s->cfg.run, s->src->uri, buf, n, err, sizeof err);
        if (rc == EEB_OK)
            s->written += n;
        if (s->cfg.writer_delay_ms > 0) {
            struct timespec ts = {s->cfg.writer_delay_ms / 1000,
                                  (long)(s->cfg.writer_delay_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    for (struct event *x = e; x && !failed && rc == EEB_OK; x = x->next)
        rc = eeb_rundb_event_add(s->db, s->cfg.run, x->t_mono_ns, x->t_utc_ns, x->kind, x->payload,
                                 err, sizeof err);
    free_events(e);
    if (rc != EEB_OK) {
        pthread_mutex_lock(&s->lock);
        if (!s->write_rc) {
            s->write_rc = rc;
            snprintf(s->write_err, sizeof s->write_err, "%s", err);
        }
        pthread_mutex_unlock(&s->lock);
    }
}

static void *writer_main(void *arg)
{
    struct eeb_sampler *s = arg;
    struct eeb_sample *buf = malloc(WRITE_BATCH * sizeof *buf);
    if (!buf) {
        pthread_mutex_lock(&s->lock);
        s->write_rc = EEB_ENOMEM;
        snprintf(s->write_err, sizeof s->write_err, "power writer: out of memory");
        s->sync_done = UINT64_MAX; /* no sync waits on a writer that is gone */
        pthread_cond_broadcast(&s->synced);
        pthread_mutex_unlock(&s->lock);
        return NULL;
    }
    for (;;) {
        int stopping = atomic_load(&s->stop) == 2; /* the sampler has ended */
        pthread_mutex_lock(&s->lock);
        uint64_t want = s->sync_want; /* what this drain answers */
        pthread_mutex_unlock(&s->lock);
        drain(s, buf);
        pthread_mutex_lock(&s->lock);
        s->sync_done = stopping ? UINT64_MAX : want;
        pthread_cond_broadcast(&s->synced);
        pthread_mutex_unlock(&s->lock);
        if (stopping)
            break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WRITE_PERIOD_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L, until.tv_nsec %= 1000000000L;
        pthread_mutex_lock(&s->lock);
        if (atomic_load(&s->stop) != 2 && s->sync_want == s->sync_done)
            pthread_cond_timedwait(&s->wake, &s->lock, &until);
        pthread_mutex_unlock(&s->lock);
    }
    free(buf);
    s->writer_cpu_s = thread_cpu_s();
    return NULL;
}

/* ---- starting and stopping ---- */

void eeb_sampler_config_default(struct eeb_sampler_config *cfg)
{
    *cfg = (struct eeb_sampler_config){.rate_hz = 100, .ring = 65536};
}

static void sampler_free(struct eeb_sampler *s)
{
    free_events(s->events);
    power_ring_free(&s->ring);
    eeb_rundb_close(s->db);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->wake);
    pthread_cond_destroy(&s->synced);
    free(s->jitter);
    free(s);
}

int eeb_sampler_start(struct eeb_power_source *src, const struct eeb_sampler_config *cfg,
                      struct eeb_sampler **out, char *err, size_t errlen)
{
    if (!(cfg->rate_hz >= 1 && cfg->rate_hz <= 10000))
        return eeb_errf(err, errlen, EEB_EINVAL, "sampling rate %g Hz (1..10000)", cfg->rate_hz);
    struct eeb_sampler *s = calloc(1, sizeof *s);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "sampler: out of memory");
    s->src = src, s->cfg = *cfg;
    s->hold = (struct eeb_power_hold){.max = NAN}, s->prov = src->provenance;
    s->interval_ns = (int64_t)llround(1e9 / cfg->rate_hz);
    s->events_tail = &s->events;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->synced, NULL);
    s->jitter = calloc(JITTER_BUCKETS, sizeof *s->jitter);
    int rc = power_ring_init(&s->ring, cfg->ring);
    if (rc == EEB_EINVAL)
        rc = eeb_errf(err, errlen, rc, "sampler: a ring of %zu samples (a power of two >= 2)",
                      cfg->ring);
    else if (rc != EEB_OK || !s->jitter)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "sampler: out of memory for the ring");
    if (rc == EEB_OK)
        rc = eeb_rundb_open(cfg->db_path, EEB_RUNDB_READWRITE, &s->db, err, errlen);
    if (rc != EEB_OK) {
        sampler_free(s);
        return rc;
    }
    if (pthread_create(&s->writer, NULL, writer_main, s) != 0) {
        sampler_free(s);
        return eeb_errf(err, errlen, EEB_ENOMEM, "sampler: cannot start the writer thread");
    }
    if (pthread_create(&s->sampler, NULL, sampler_main, s) != 0) {
        atomic_store(&s->stop, 2);
        pthread_cond_signal(&s->wake);
        pthread_join(s->writer, NULL);
        sampler_free(s);
        return eeb_errf(err, errlen, EEB_ENOMEM, "sampler: cannot start the sampler thread");
    }
    *out = s;
    return EEB_OK;
}

void eeb_sampler_sync(struct eeb_sampler *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t mine = ++s->sync_want;
    pthread_cond_signal(&s->wake);
    while (s->sync_done < mine)
        pthread_cond_wait(&s->synced, &s->lock);
    pthread_mutex_unlock(&s->lock);
}

void eeb_sampler_live(struct eeb_sampler *s, struct eeb_sampler_live *out)
{
    out->samples = atomic_load(&s->samples);
    out->watts = atomic_load(&s->watts);
    out->joules = atomic_load(&s->joules);
    out->seconds = atomic_load(&s->seconds);
    out->last_ns = atomic_load(&s->last_ns);
    out->dropped = atomic_load(&s->dropped);
    out->failed = atomic_load(&s->failed);
    pthread_mutex_lock(&s->lock);
    out->write_failed = s->write_rc != 0;
    pthread_mutex_unlock(&s->lock);
}

/* The smallest wake-up lateness that fraction q of the ticks stayed within. */
static double quantile_us(const struct eeb_sampler *s, double q)
{
    uint64_t want = (uint64_t)ceil(q * (double)s->ticks), seen = 0;
    for (int i = 0; i < JITTER_BUCKETS; i++)
        if ((seen += s->jitter[i]) >= want && want > 0)
            return i + 1; /* the bucket's upper edge */
    return 0;
}

/* The stop's counts into the run, through the writer's connection (its
 * thread has ended). */
static int record_counts(struct eeb_sampler *s, const struct eeb_sampler_stats *st, char *err,
                         size_t errlen)
{
    const struct {
        const char *name;
        double value;
        const char *unit;
    } r[] = {
        {EEB_RESULT_SAMPLES, (double)st->samples, "count"},
        {EEB_RESULT_DROPPED, (double)st->dropped, "count"},
        {EEB_RESULT_FAILED, (double)st->failed, "count"},
        {EEB_RESULT_MISSED, (double)st->missed, "count"},
        {EEB_RESULT_ACHIEVED_HZ, st->achieved_hz, "Hz"},
        {EEB_RESULT_JITTER_P99, st->jitter_p99_us, "us"},
    };
    int rc = EEB_OK;
    for (size_t i = 0; i < sizeof r / sizeof *r && rc == EEB_OK; i++)
        rc = eeb_rundb_result_set(s->db, s->cfg.run, r[i].name, r[i].value, r[i].unit, "computed",
                                  err, errlen);
    if (rc == EEB_OK && !isnan(s->hold.max))
        rc = eeb_rundb_result_set(s->db, s->cfg.run, EEB_RESULT_UNCERTAINTY_MAX, s->hold.max,
                                  "fraction", eeb_provenance_name(s->prov), err, errlen);
    return rc;
}

int eeb_sampler_stop(struct eeb_sampler *s, struct eeb_sampler_stats *st, char *err, size_t errlen)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->sampler, NULL);
    pthread_mutex_lock(&s->lock);
    atomic_store(&s->stop, 2); /* the writer drains once more and ends */
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->writer, NULL);
    *st = (struct eeb_sampler_stats){
        .ticks = s->ticks,
        .samples = atomic_load(&s->samples),
        .failed = atomic_load(&s->failed),
        .missed = s->missed,
        .dropped = atomic_load(&s->dropped),
        .written = s->written,
        .jitter_p50_us = quantile_us(s, 0.5),
        .jitter_p99_us = quantile_us(s, 0.99),
        .jitter_max_us = s->jitter_max_us,
        .sampler_cpu_s = s->sampler_cpu_s,
        .writer_cpu_s = s->writer_cpu_s,
        .realtime = s->realtime,
        .timer_slack = s->timer_slack,
    };
    snprintf(st->first_error, sizeof st->first_error, "%s", s->first_error);
    double span = (double)(s->last_t - s->first_t) / 1e9;
    st->achieved_hz = st->samples > 1 && span > 0 ? (double)(st->samples - 1) / span : 0;
    int rc = s->write_rc ? eeb_errf(err, errlen, s->write_rc, "%s", s->write_err)
                         : record_counts(s, st, err, errlen);
    sampler_free(s);
    return rc;
}
