/*
 * copy.c - a run copied from one database into another, as a server's
 * copy: its chain's links received one by one (links_add checks each
 * against the head before it, so a copy that was altered is refused, not
 * stored), its predictions and results, its state.  The server hands a
 * team its record of a run this way (a file it makes), and the team's
 * database takes it in the same way.
 */
#include "rundb_int.h"

#include <math.h>
#include <stdio.h>
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
                             .received = 1};
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
