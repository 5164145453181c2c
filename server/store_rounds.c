/*
 * store_rounds.c - rounds and their entries in the server's store, and
 * the organizer's acts on teams and runs, each kept in the audit log with
 * its reason.
 */
#include "store_int.h"

#include "common/eeb_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rounds and entries ---- */

/* A round's budgets and division rules by task, as its `tasks` column
 * holds them: {"cls": {"t_max_s", "tiers_w": [...], "model_sha256",
 * "epochs_max"}, ...}. */
static char *round_tasks_json(const struct eeb_round *r)
{
    json_t *o = json_object();
    for (int t = 0; o && t < EEB_TASK_COUNT; t++) {
        const struct eeb_round_task *rt = &r->task[t];
        json_t *tiers = json_array();
        for (int i = 0; tiers && i < rt->ntiers; i++)
            json_array_append_new(tiers, json_real(rt->tiers_w[i]));
        json_object_set_new(o, eeb_task_name((enum eeb_task)t),
                            json_pack("{s:f, s:o, s:s, s:i}", "t_max_s", rt->t_max_s, "tiers_w",
                                      tiers ? tiers : json_null(), "model_sha256", rt->model_sha256,
                                      "epochs_max", rt->epochs_max));
    }
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return text;
}

static void round_tasks_read(const char *text, struct eeb_round *r)
{
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        json_t *v = json_object_get(o, eeb_task_name((enum eeb_task)t)), *tiers;
        struct eeb_round_task *rt = &r->task[t];
        rt->t_max_s = eeb_json_number_at(v, "t_max_s");
        tiers = json_object_get(v, "tiers_w");
        rt->ntiers = 0;
        for (size_t i = 0; i < json_array_size(tiers) && i < EEB_ROUND_TIERS; i++)
            rt->tiers_w[rt->ntiers++] = json_number_value(json_array_get(tiers, i));
        snprintf(rt->model_sha256, sizeof rt->model_sha256, "%s",
                 json_string_value(json_object_get(v, "model_sha256")) ?: "");
        rt->epochs_max = (int)json_integer_value(json_object_get(v, "epochs_max"));
    }
    json_decref(o);
}

#define ROUND_COLUMNS                                                                              \
    "id, name, rules_version, runs, aggregate, cap, opens_utc_ns, closes_utc_ns, "                 \
    "coalesce(closed_utc_ns, 0), tasks FROM rounds "

static void read_round(sqlite3_stmt *st, int64_t *id, struct eeb_round *r)
{
    char aggregate[16];
    *id = sqlite3_column_int64(st, 0);
    *r = (struct eeb_round){.runs = sqlite3_column_int(st, 3),
                            .cap = sqlite3_column_int(st, 5),
                            .opens_utc_ns = sqlite3_column_int64(st, 6),
                            .closes_utc_ns = sqlite3_column_int64(st, 7),
                            .closed_utc_ns = sqlite3_column_int64(st, 8)};
    eeb_srv_column_text(st, 1, r->name, sizeof r->name);
    eeb_srv_column_text(st, 2, r->rules_version, sizeof r->rules_version);
    eeb_srv_column_text(st, 4, aggregate, sizeof aggregate);
    (void)eeb_round_aggregate_parse(aggregate, &r->aggregate);
    round_tasks_read((const char *)sqlite3_column_text(st, 9), r);
}

int eeb_srv_store_round_add(struct eeb_srv_store *s, const struct eeb_round *r, char *err,
                            size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc)
        return rc;
    char *tasks = round_tasks_json(r);
    if (!tasks)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    /* one statement: it is stored only if no round's time overlaps it */
    sqlite3_stmt *st = eeb_srv_prepare(
        db,
        "INSERT INTO rounds (name, rules_version, runs, aggregate, cap, opens_utc_ns, "
        "closes_utc_ns, tasks) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE NOT EXISTS (SELECT 1 "
        "FROM rounds WHERE opens_utc_ns < ?7 AND coalesce(closed_utc_ns, closes_utc_ns) > ?6) "
        "RETURNING id",
        err, errlen);
    if (!st) {
        free(tasks);
        return EEB_EDB;
    }
    sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->rules_version, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, r->runs);
    sqlite3_bind_text(st, 4, eeb_round_aggregate_name(r->aggregate), -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, r->cap);
    sqlite3_bind_int64(st, 6, r->opens_utc_ns);
    sqlite3_bind_int64(st, 7, r->closes_utc_ns);
    sqlite3_bind_text(st, 8, tasks, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_CONSTRAINT) {
        sqlite3_finalize(st);
        free(tasks);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: a round named '%s' exists", s->path, r->name);
    }
    int stored = step == SQLITE_ROW;
    rc = eeb_srv_done(db, st, step, err, errlen);
    free(tasks);
    if (rc == EEB_OK && !stored)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: round '%s' overlaps another round's time: rounds follow one another",
                      s->path, r->name);
    return rc;
}

int eeb_srv_store_round_close(struct eeb_srv_store *s, const char *name, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(
        s,
        "UPDATE rounds SET closed_utc_ns = ?1 WHERE name = ?2 AND closed_utc_ns IS "
        "NULL AND opens_utc_ns <= ?1 AND closes_utc_ns > ?1",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    return eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
}

struct round_walk {
    int (*fn)(void *arg, int64_t id, const struct eeb_round *r);
    void *arg;
};

static int round_row(sqlite3_stmt *st, void *ctx)
{
    const struct round_walk *w = ctx;
    int64_t id;
    struct eeb_round r;
    read_round(st, &id, &r);
    return w->fn(w->arg, id, &r);
}

int eeb_srv_store_rounds_each(struct eeb_srv_store *s,
                              int (*fn)(void *arg, int64_t id, const struct eeb_round *r),
                              void *arg, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(s, "SELECT " ROUND_COLUMNS "ORDER BY opens_utc_ns", &db,
                                         &rc, err, errlen);
    if (!st)
        return rc;
    return eeb_srv_each_row(db, st, round_row, &(struct round_walk){fn, arg}, err, errlen);
}

int eeb_srv_store_round_find(struct eeb_srv_store *s, const char *name, int open_only, int64_t *id,
                             struct eeb_round *r, char *err, size_t errlen)
{
    /* by name; or the one open now; or the last to open before now */
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(
        s,
        "SELECT " ROUND_COLUMNS "WHERE (?1 IS NULL OR name = ?1) AND (?1 IS NOT NULL "
        "OR opens_utc_ns <= ?2) AND (?3 = 0 OR (closes_utc_ns > ?2 AND "
        "closed_utc_ns IS NULL)) ORDER BY opens_utc_ns DESC LIMIT 1",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    if (name)
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, eeb_utc_ns());
    sqlite3_bind_int(st, 3, open_only);
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found)
        read_round(st, id, r);
    rc = eeb_srv_done(db, st, step, err, errlen);
    return rc ? rc : found;
}

/* The runs of entry e, registered first first, into e->runs. */
static int entry_runs(struct eeb_rundb *db, struct eeb_srv_entry *e, size_t max, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st = eeb_srv_prepare(
        db, "SELECT " ENTRY_COLUMNS "WHERE e.entry_id = ? ORDER BY e.run_id", err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, e->id);
    int step;
    e->nruns = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && e->nruns < max)
        eeb_srv_read_entry(st, &e->runs[e->nruns++]);
    return eeb_srv_done(db, st, step, err, errlen);
}

/* A walk over entries: each row read as an entry, its runs read, and given
 * to fn. */
struct entry_walk {
    struct eeb_rundb *db;
    struct eeb_srv_entry e; /* its runs: room for EEB_ROUND_RUNS_MAX */
    int (*fn)(void *arg, const struct eeb_srv_entry *e);
    void *arg;
    char *err;
    size_t errlen;
};

static int entry_row(sqlite3_stmt *st, void *ctx)
{
    struct entry_walk *w = ctx;
    struct eeb_srv_entry *e = &w->e;
    e->id = sqlite3_column_int64(st, 0), e->team = sqlite3_column_int64(st, 1);
    eeb_srv_column_text(st, 2, e->team_name, sizeof e->team_name);
    eeb_srv_column_text(st, 3, e->name, sizeof e->name);
    eeb_srv_column_text(st, 4, e->division, sizeof e->division);
    e->p_max_w = sqlite3_column_double(st, 5);
    eeb_srv_column_text(st, 6, e->device, sizeof e->device);
    eeb_srv_column_text(st, 7, e->backend, sizeof e->backend);
    eeb_srv_column_text(st, 8, e->provenance, sizeof e->provenance);
    e->created_utc_ns = sqlite3_column_int64(st, 9);
    int rc = entry_runs(w->db, e, EEB_ROUND_RUNS_MAX, w->err, w->errlen);
    return rc ? rc : w->fn(w->arg, e);
}

int eeb_srv_store_entries_each(struct eeb_srv_store *s, int64_t round, int task,
                               int (*fn)(void *arg, const struct eeb_srv_entry *e), void *arg,
                               char *err, size_t errlen)
{
    struct entry_walk w = {.e = {.task = task}, .fn = fn, .arg = arg, .err = err, .errlen = errlen};
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT en.id, en.team_id, t.name, en.name, en.division, "
                          "en.p_max_w, en.device, en.backend, en.provenance, "
                          "en.created_utc_ns FROM entries en JOIN teams t ON t.id = "
                          "en.team_id WHERE en.round_id = ? AND en.task = ? ORDER BY en.id",
                          &w.db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, round);
    sqlite3_bind_text(st, 2, eeb_task_name((enum eeb_task)task), -1, SQLITE_STATIC);
    if (!(w.e.runs = calloc(EEB_ROUND_RUNS_MAX, sizeof *w.e.runs))) {
        sqlite3_finalize(st);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    rc = eeb_srv_each_row(w.db, st, entry_row, &w, err, errlen);
    free(w.e.runs);
    return rc;
}

int eeb_srv_store_runs_going(struct eeb_srv_store *s, int task,
                             int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg,
                             char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT " ENTRY_COLUMNS "WHERE e.state != 'scored' AND "
                          "r.task = ? AND e.withdrawn IS NULL ORDER BY e.run_id DESC "
                          "LIMIT 100",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, eeb_task_name((enum eeb_task)task), -1, SQLITE_STATIC);
    return eeb_srv_each_row(db, st, eeb_srv_run_row, &(struct eeb_srv_run_walk){fn, arg}, err,
                            errlen);
}

int eeb_srv_store_run_seeds(struct eeb_srv_store *s, int64_t id, int64_t *handed, int64_t *used,
                            char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT (SELECT coalesce(config ->> '$.server.seed', config ->> "
                          "'$.server.round.seed') FROM runs WHERE id = ?1), (SELECT payload ->> "
                          "'$." EEB_EVENT_KEY_SEED "' FROM "
                          "events WHERE run_id = ?1 AND kind = '" EEB_EVENT_FINETUNE_BEGIN
                          "' ORDER BY t_mono_ns DESC, rowid DESC LIMIT 1)",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *handed = *used = -1;
    if (step == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        *handed = sqlite3_column_int64(st, 0);
    if (step == SQLITE_ROW && sqlite3_column_type(st, 1) == SQLITE_INTEGER)
        *used = sqlite3_column_int64(st, 1);
    return eeb_srv_done(db, st, step, err, errlen);
}

int eeb_srv_store_run_epochs(struct eeb_srv_store *s, int64_t id, int64_t *epochs, char *err,
                             size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT count(*) FROM events WHERE run_id = ? AND kind IN "
                          "('" EEB_EVENT_EPOCH_END "', '" EEB_EVENT_EPOCH_PARTIAL "')",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *epochs = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return eeb_srv_done(db, st, step, err, errlen);
}

int eeb_srv_store_run_sensor(struct eeb_srv_store *s, const struct eeb_srv_run *r, char *uri,
                             size_t n, char *err, size_t errlen)
{
    /* the server's meter's samples if it read one, else the run's own */
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(s, "SELECT source FROM samples WHERE run_id = ? LIMIT 1",
                                         &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, r->meter_run ? r->meter_run : r->id);
    int step = sqlite3_step(st);
    uri[0] = '\0';
    if (step == SQLITE_ROW)
        eeb_srv_column_text(st, 0, uri, n);
    return eeb_srv_done(db, st, step, err, errlen);
}

/* ---- the organizer's acts ---- */

/* act (an UPDATE of ?1 the time, ?2 the target, ?3 the reason, each if it
 * needs it) and
 * its line in the audit log, in one transaction: 1 if it changed a row,
 * 0 if not (and nothing is logged). */
static int audited(struct eeb_srv_store *s, const char *act, const char *action, const char *target,
                   const char *reason, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc)
        return rc;
    if ((rc = eeb_srv_begin_write(db, err, errlen)))
        return rc;
    int64_t now = eeb_utc_ns();
    int moved = 1; /* without an act, the line alone */
    sqlite3_stmt *st;
    if (act && (st = eeb_srv_prepare(db, act, err, errlen))) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, reason, -1, SQLITE_STATIC);
        moved = eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
        rc = moved < 0 ? moved : EEB_OK;
    } else if (act)
        rc = EEB_EDB;
    if (rc == EEB_OK && moved > 0 &&
        (st = eeb_srv_prepare(
             db, "INSERT INTO audit (utc_ns, action, target, reason) VALUES (?, ?, ?, ?)", err,
             errlen))) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, action, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, target, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
        rc = eeb_srv_done(db, st, sqlite3_step(st), err, errlen);
    } else if (rc == EEB_OK && moved > 0)
        rc = EEB_EDB;
    rc = eeb_srv_end_write(db, rc, err, errlen);
    return rc ? rc : moved > 0;
}

int eeb_srv_store_audit(struct eeb_srv_store *s, const char *action, const char *target,
                        const char *reason, char *err, size_t errlen)
{
    int rc = audited(s, NULL, action, target, reason, err, errlen);
    return rc < 0 ? rc : EEB_OK;
}

int eeb_srv_store_team_revoke(struct eeb_srv_store *s, const char *name, const char *reason,
                              char *err, size_t errlen)
{
    return audited(s,
                   "UPDATE teams SET revoked_utc_ns = ?1 WHERE name = ?2 AND revoked_utc_ns IS "
                   "NULL",
                   "revoke-team", name, reason, err, errlen);
}

int eeb_srv_store_run_withdraw(struct eeb_srv_store *s, int64_t id, enum eeb_srv_withdrawal how,
                               const char *reason, char *err, size_t errlen)
{
    static const struct {
        const char *action, *sql;
    } acts[] = {
        [EEB_SRV_HIDE] = {"hide-run", "UPDATE team_runs SET withdrawn = 'hidden', withdrawn_why = "
                                      "?3 WHERE run_id = ?2 AND withdrawn IS NULL"},
        [EEB_SRV_RESTORE] = {"restore-run",
                             "UPDATE team_runs SET withdrawn = NULL, withdrawn_why = NULL WHERE "
                             "run_id = ?2 AND withdrawn = 'hidden'"},
        [EEB_SRV_WITHDRAW] = {"withdraw-run",
                              "UPDATE team_runs SET withdrawn = 'withdrawn', withdrawn_why = ?3 "
                              "WHERE run_id = ?2 AND coalesce(withdrawn, '') != 'withdrawn'"},
    };
    char target[32];
    snprintf(target, sizeof target, "%lld", (long long)id);
    return audited(s, acts[how].sql, acts[how].action, target, reason, err, errlen);
}

int eeb_srv_store_run_void(struct eeb_srv_store *s, int64_t id, const char *reason, char *err,
                           size_t errlen)
{
    char target[32];
    snprintf(target, sizeof target, "%lld", (long long)id);
    int moved = eeb_srv_store_run_end(s, id, "void", reason, err, errlen);
    if (moved > 0)
        return eeb_srv_store_audit(s, "void-run", target, reason, err, errlen) ?: 1;
    if (moved < 0)
        return moved;
    return audited(s,
                   "UPDATE team_runs SET verdict = 'void', why = ?3, s = NULL, entry_id = NULL "
                   "WHERE run_id = ?2 AND state = 'scored' AND verdict IS NOT 'void'",
                   "void-run", target, reason, err, errlen);
}

int eeb_srv_store_restarts(struct eeb_srv_store *s, int64_t *at, size_t max, size_t *n, char *err,
                           size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(s,
                                         "SELECT utc_ns FROM (SELECT utc_ns FROM audit WHERE "
                                         "action = 'restart' ORDER BY utc_ns DESC LIMIT ?) "
                                         "ORDER BY utc_ns",
                                         &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, (int64_t)max);
    int step;
    *n = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && *n < max)
        at[(*n)++] = sqlite3_column_int64(st, 0);
    return eeb_srv_done(db, st, step, err, errlen);
}

struct team_walk {
    int (*fn)(void *arg, const struct eeb_srv_team *t);
    void *arg;
};

static int team_row(sqlite3_stmt *st, void *ctx)
{
    const struct team_walk *w = ctx;
    struct eeb_srv_team t = {.id = sqlite3_column_int64(st, 0),
                             .created_utc_ns = sqlite3_column_int64(st, 2),
                             .revoked_utc_ns = sqlite3_column_int64(st, 3),
                             .runs = sqlite3_column_int64(st, 4)};
    eeb_srv_column_text(st, 1, t.name, sizeof t.name);
    return w->fn(w->arg, &t);
}

int eeb_srv_store_teams_each(struct eeb_srv_store *s,
                             int (*fn)(void *arg, const struct eeb_srv_team *t), void *arg,
                             char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT t.id, t.name, t.created_utc_ns, "
                          "coalesce(t.revoked_utc_ns, 0), (SELECT count(*) FROM "
                          "team_runs WHERE team_id = t.id) FROM teams t ORDER BY t.id",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    return eeb_srv_each_row(db, st, team_row, &(struct team_walk){fn, arg}, err, errlen);
}

struct audit_walk {
    int (*fn)(void *arg, const struct eeb_srv_audit *a);
    void *arg;
};

static int audit_row(sqlite3_stmt *st, void *ctx)
{
    const struct audit_walk *w = ctx;
    struct eeb_srv_audit a = {.id = sqlite3_column_int64(st, 0),
                              .utc_ns = sqlite3_column_int64(st, 1)};
    eeb_srv_column_text(st, 2, a.action, sizeof a.action);
    eeb_srv_column_text(st, 3, a.target, sizeof a.target);
    eeb_srv_column_text(st, 4, a.reason, sizeof a.reason);
    return w->fn(w->arg, &a);
}

int eeb_srv_store_audit_each(struct eeb_srv_store *s,
                             int (*fn)(void *arg, const struct eeb_srv_audit *a), void *arg,
                             char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s, "SELECT id, utc_ns, action, target, reason FROM audit ORDER BY id",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    return eeb_srv_each_row(db, st, audit_row, &(struct audit_walk){fn, arg}, err, errlen);
}
