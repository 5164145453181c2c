/*
 * copy.c - a run copied from one database into another, as a server's
 * copy: its chain's links received one by one (links_add checks each
 * against the head before it, so a copy that was altered is refused, not
 * stored), its predictions and results, its state.  The server hands a
 * team its record of a run this way (a file it makes), and the team's
 * database takes it in the same way.
 */
#include "eeb_config_record.h"
#include "rundb_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct copying {
    struct eeb_rundb *to;
    int64_t id;
    char *err;
    size_t errlen;
    int rc;
};

static int copy_link(void *arg, const struct eeb_rundb_link *l)
{
    struct copying *c = arg;
    enum eeb_link_verdict v;
    size_t at;
    int64_t next;
    c->rc =
        eeb_rundb_links_add(c->to, c->id, l, 1, l->at_utc_ns, &v, &at, &next, c->err, c->errlen);
    if (c->rc == EEB_OK && v != EEB_LINKS_STORED)
        c->rc = eeb_errf(c->err, c->errlen, EEB_EFORMAT,
                         "%s: link %lld of the run copied does not follow the one before it",
                         eeb_rundb_path(c->to), (long long)l->seq);
    return c->rc;
}

static int copy_prediction(void *arg, int64_t item, const char *payload)
{
    struct copying *c = arg;
    c->rc = eeb_rundb_predictions_add(c->to, c->id, &item, &payload, 1, c->err, c->errlen);
    return c->rc;
}

/* Every result of run in from, as stored, into c's run. */
static int copy_results(struct eeb_rundb *from, int64_t run, struct copying *c)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(from, "SELECT name, value, unit, provenance FROM results WHERE run_id = ?",
                      &st, c->err, c->errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    int step;
    while (rc == EEB_OK && (step = sqlite3_step(st)) == SQLITE_ROW)
        rc = eeb_rundb_result_set(c->to, c->id, (const char *)sqlite3_column_text(st, 0),
                                  sqlite3_column_double(st, 1),
                                  (const char *)sqlite3_column_text(st, 2),
                                  (const char *)sqlite3_column_text(st, 3), c->err, c->errlen);
    if (rc == EEB_OK && step != SQLITE_DONE)
        rc = rundb_error(from, "reading results", c->err, c->errlen);
    sqlite3_finalize(st);
    return rc;
}

int eeb_rundb_run_delete(struct eeb_rundb *db, int64_t run, char *err, size_t errlen)
{
    static const char *const tables[] = {"links",       "events",  "samples",
                                         "predictions", "results", "runs"};
    int rc = sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
                 ? EEB_OK
                 : rundb_error(db, "beginning to delete a run", err, errlen);
    for (size_t i = 0; rc == EEB_OK && i < sizeof tables / sizeof *tables; i++) {
        char sql[64];
        sqlite3_stmt *st;
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE %s = ?", tables[i],
                 strcmp(tables[i], "runs") ? "run_id" : "id");
        if ((rc = rundb_prepare(db, sql, &st, err, errlen)) == EEB_OK) {
            sqlite3_bind_int64(st, 1, run);
            rc = rundb_step_done(db, st, "deleting a run", err, errlen);
        }
    }
    return rundb_end_batch(db, rc, "deleting a run", err, errlen);
}

int eeb_rundb_run_copy(struct eeb_rundb *from, int64_t run, struct eeb_rundb *to,
                       const char *config_json, int64_t *id, char *err, size_t errlen)
{
    struct eeb_run_row row;
    int rc = eeb_rundb_run_get(from, run, &row, err, errlen);
    if (rc)
        return rc;
    enum eeb_task task = EEB_TASK_CLS;
    int log = strcmp(row.task, "none") == 0;
    if (!log)
        rc = eeb_task_parse(row.task, &task, err, errlen);
    struct eeb_run_new rn = {.task = task,
                             .backend = row.backend,
                             .config_json = config_json ? config_json : row.config,
                             .t_max_s = row.t_max_s,
                             .p_max_w = row.p_max_w,
                             .rules_version = row.rules_version,
                             .power_log = log,
                             .received = 1,
                             .uuid = row.uuid};
    char uuid[37];
    struct copying c = {.to = to, .err = err, .errlen = errlen};
    if (rc == EEB_OK)
        rc = eeb_rundb_run_create(to, &rn, &c.id, uuid, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_links_each(from, run, 0, copy_link, &c, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_predictions_each(from, run, copy_prediction, &c, err, errlen);
    if (rc == EEB_OK)
        rc = copy_results(from, run, &c);
    for (int s = 0; rc == EEB_OK && s < EEB_RUN_STATE_COUNT; s++)
        if (strcmp(row.state, eeb_rundb_state_name((enum eeb_run_state)s)) == 0)
            rc = eeb_rundb_run_set_state(to, c.id, (enum eeb_run_state)s, err, errlen);
    eeb_rundb_run_row_free(&row);
    if (rc == EEB_OK)
        *id = c.id;
    else if (c.id) { /* no half copy is left behind */
        char ignored[256];
        (void)eeb_rundb_run_delete(to, c.id, ignored, sizeof ignored);
    }
    return rc;
}

int eeb_rundb_record_copy(struct eeb_rundb *from, int64_t run, int64_t meter_run,
                          struct eeb_rundb *to, int64_t *copy, int64_t *meter, char *err,
                          size_t errlen)
{
    struct eeb_run_row row;
    char *config = NULL;
    *meter = 0;
    int rc = meter_run ? eeb_rundb_run_copy(from, meter_run, to, NULL, meter, err, errlen) : EEB_OK;
    if (rc == EEB_OK && (rc = eeb_rundb_run_get(from, run, &row, err, errlen)) == EEB_OK) {
        json_t *o = json_loads(row.config, 0, NULL);
        if (o && *meter)
            eeb_config_put_meter(o, *meter);
        config = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(o);
        eeb_rundb_run_row_free(&row);
        if (!config)
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "run %lld: a configuration that is not JSON",
                          (long long)run);
    }
    if (rc == EEB_OK)
        rc = eeb_rundb_run_copy(from, run, to, config, copy, err, errlen);
    free(config);
    if (rc && *meter) {
        char ignored[256];
        (void)eeb_rundb_run_delete(to, *meter, ignored, sizeof ignored);
        *meter = 0;
    }
    return rc;
}

int eeb_rundb_copy_of(struct eeb_rundb *db, const char *uuid, int64_t run, int64_t *copy, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st;
    int rc = rundb_prepare(db,
                           "SELECT run_id FROM links WHERE seq = 0 AND origin_uuid = ? AND "
                           "run_id <> ? ORDER BY run_id DESC LIMIT 1",
                           &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, run);
    int step = sqlite3_step(st);
    *copy = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = rundb_error(db, "finding a copy of a run", err, errlen);
    sqlite3_finalize(st);
    return rc;
}
