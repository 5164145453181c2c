/*
 * store_meter.c - the server's own meter in its store (director mode): the
 * power log of the meter run, a station agent's events and samples placed
 * on the server's clock, and the fine-tune window marked in it.
 */
#include "store_int.h"

#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the server's own meter (director mode) ---- */

int eeb_srv_store_meter_run(struct eeb_srv_store *s, const char *uri, double rate_hz,
                            double update_interval_s, const char *provenance, int64_t *meter_run,
                            char *err, size_t errlen)
{
    json_t *o = json_object();
    if (o) {
        eeb_config_put_power(o, uri, rate_hz, provenance, "the evaluation server's own meter");
        eeb_config_put_update_interval(o, update_interval_s);
    }
    char *config = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!config)
        return eeb_errf(err, errlen, EEB_ENOMEM, "the server's meter: out of memory");
    const struct eeb_run_new n = {.power_log = 1,
                                  .backend = "none",
                                  .config_json = config,
                                  .t_max_s = NAN,
                                  .p_max_w = NAN,
                                  .rules_version = "1"};
    struct eeb_rundb *db;
    char uuid[37];
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_create(db, &n, meter_run, uuid, err, errlen);
    free(config);
    return rc;
}

int eeb_srv_store_meter_resume(struct eeb_srv_store *s, int64_t meter_run,
                               struct eeb_srv_meter_log *out, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(
        s,
        "SELECT (SELECT min(t_mono_ns) FROM events WHERE run_id = ?1 AND kind = "
        "'" EEB_EVENT_LOG_BEGIN
        "'), (SELECT max(t_mono_ns) FROM samples WHERE run_id = ?1), (SELECT max(t_utc_ns) FROM "
        "samples WHERE run_id = ?1), (SELECT count(*) FROM samples WHERE run_id = ?1), "
        "config ->> '$.power.source', config ->> '$.power.provenance', "
        "config ->> '$.power.rate_hz', config ->> '$.power.update_interval_s' FROM runs WHERE "
        "id = ?1",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, meter_run);
    int step = sqlite3_step(st);
    *out = (struct eeb_srv_meter_log){0};
    if (step == SQLITE_ROW) {
        out->begin_ns = sqlite3_column_int64(st, 0);
        out->last_ns = sqlite3_column_int64(st, 1);
        out->last_utc_ns = sqlite3_column_int64(st, 2);
        out->samples = (uint64_t)sqlite3_column_int64(st, 3);
        eeb_srv_column_text(st, 4, out->source, sizeof out->source);
        eeb_srv_column_text(st, 5, out->provenance, sizeof out->provenance);
        out->rate_hz = sqlite3_column_double(st, 6);
        out->update_interval_s = sqlite3_column_double(st, 7);
    }
    return eeb_srv_done(db, st, step, err, errlen);
}

void eeb_srv_store_meter_done(struct eeb_srv_store *s, int64_t meter_run)
{
    struct eeb_rundb *db;
    char ignored[256];
    if (meter_run && eeb_srv_conn(s, &db, ignored, sizeof ignored) == EEB_OK)
        (void)eeb_rundb_run_set_state(db, meter_run, EEB_RUN_DONE, ignored, sizeof ignored);
}

int eeb_srv_store_meter_event(struct eeb_srv_store *s, int64_t meter_run, const char *kind,
                              int64_t t_mono_ns, int64_t t_utc_ns, const char *payload_json,
                              char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    return rc ? rc
              : eeb_rundb_event_add(db, meter_run, t_mono_ns, t_utc_ns, kind, payload_json, err,
                                    errlen);
}

int eeb_srv_store_meter_samples(struct eeb_srv_store *s, int64_t meter_run, const char *source,
                                const struct eeb_sample *x, size_t n, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_samples_add(db, meter_run, source, x, n, err, errlen);
}

void eeb_srv_store_meter_counts(struct eeb_srv_store *s, int64_t meter_run, uint64_t samples,
                                uint64_t failed, uint64_t dropped, double uncertainty_max,
                                const char *provenance)
{
    const struct {
        const char *name;
        uint64_t n;
    } counts[] = {
        {EEB_RESULT_SAMPLES, samples}, {EEB_RESULT_FAILED, failed}, {EEB_RESULT_DROPPED, dropped}};
    struct eeb_rundb *db;
    char ignored[256]; /* a count not stored is missing from the record, which says so */
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        if (eeb_srv_conn(s, &db, ignored, sizeof ignored) == EEB_OK)
            (void)eeb_rundb_result_set(db, meter_run, counts[i].name, (double)counts[i].n, "count",
                                       "computed", ignored, sizeof ignored);
    if (!isnan(uncertainty_max) && eeb_srv_conn(s, &db, ignored, sizeof ignored) == EEB_OK)
        (void)eeb_rundb_result_set(db, meter_run, EEB_RESULT_UNCERTAINTY_MAX, uncertainty_max,
                                   "fraction", provenance, ignored, sizeof ignored);
}

int eeb_srv_store_run_links_each(struct eeb_srv_store *s, int64_t id,
                                 int (*fn)(void *arg, const struct eeb_rundb_link *l), void *arg,
                                 char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_links_each(db, id, 0, fn, arg, err, errlen);
}

/* The first sample's two clocks: UTC minus monotonic, on the server;
 * 1 stops the walk there (errors are negative). */
static int first_sample(void *arg, const char *source, const struct eeb_sample *x)
{
    (void)source;
    *(int64_t *)arg = x->t_utc_ns - x->t_mono_ns;
    return 1;
}

/* Whether the meter run's window is placed already: 1 stops the walk. */
static int window_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)t, (void)utc, (void)payload;
    return *(int *)arg = strcmp(kind, EEB_EVENT_FINETUNE_BEGIN) == 0;
}

int eeb_srv_store_meter_window(struct eeb_srv_store *s, int64_t meter_run, int64_t begin_utc,
                               int64_t end_utc, char *why, size_t whylen, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int64_t delta = INT64_MIN;
    int seen = 0;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc)
        return rc;
    /* one transaction: placed once, whole, whoever asks to score at once */
    if ((rc = eeb_srv_begin_write(db, err, errlen)))
        return rc;
    rc = eeb_rundb_events_each(db, meter_run, window_event, &seen, err, errlen);
    rc = rc < 0 ? rc : EEB_OK;
    if (rc == EEB_OK && !seen) { /* else placed already: scoring asked again */
        rc = eeb_rundb_samples_each(db, meter_run, INT64_MIN, INT64_MAX, first_sample, &delta, err,
                                    errlen);
        rc = rc < 0 ? rc : EEB_OK;
        if (rc == EEB_OK && delta == INT64_MIN)
            snprintf(why, whylen, "the server's meter took no samples");
        else if (rc == EEB_OK)
            rc = eeb_rundb_event_add(db, meter_run, begin_utc - delta, begin_utc,
                                     EEB_EVENT_FINETUNE_BEGIN, NULL, err, errlen);
        if (rc == EEB_OK && delta != INT64_MIN)
            rc = eeb_rundb_event_add(db, meter_run, end_utc - delta, end_utc,
                                     EEB_EVENT_FINETUNE_END, NULL, err, errlen);
    }
    return eeb_srv_end_write(db, rc, err, errlen);
}
