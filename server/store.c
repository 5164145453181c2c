/*
 * store.c - the server's store (server_store.h) on one SQLite file: an eeb
 * run database (rundb/) holding every submitted run as `eeb run` records
 * one -- configuration, events, samples, predictions, results -- so that
 * the judge, `eeb check` and the HTML report read it as they read a local
 * file; and beside those tables the server's own: teams (tokens as SHA-256
 * hashes only) and entries, a team's run and where it stands.  The server's
 * tables are a set of migrations rundb/ applies with the run tables'; WAL,
 * one connection per thread of the pool, every statement prepared.
 *
 * Sections: the server's tables; connections; teams; runs; the leaderboard.
 */
#include "server_store.h"

#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb_tables.h"

#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the server's tables ----
 *
 * migrations[v] takes the server's tables from version v to v + 1 (rundb/
 * records which a file holds).  Append one to change them; never edit one
 * released. */
static const char *const migrations[] = {
    /* v0 -> v1: teams and entries.  IF NOT EXISTS: files made before the
     * server's tables were versioned hold them already, as made here. */
    "CREATE TABLE IF NOT EXISTS teams ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  token_sha256 TEXT NOT NULL UNIQUE,"
    "  created_utc_ns INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS entries ("
    "  run_id INTEGER PRIMARY KEY REFERENCES runs(id),"
    "  team_id INTEGER NOT NULL REFERENCES teams(id),"
    "  state TEXT NOT NULL CHECK (state IN ('registered', 'complete', 'scored')),"
    "  official INTEGER NOT NULL,"
    "  device TEXT NOT NULL,"
    "  provenance TEXT NOT NULL,"
    "  registered_utc_ns INTEGER NOT NULL,"
    "  completed_utc_ns INTEGER,"
    "  verdict TEXT, s REAL, m_u REAL, m_t REAL, m_p REAL, m_s REAL,"
    "  t_s REAL, energy_j REAL, why TEXT);"
    /* the leaderboard reads scored entries by S, best first, and stops at
     * its limit: this index is that order, so no read sorts them all */
    "CREATE INDEX IF NOT EXISTS entries_by_score ON entries(state, s, run_id);",
    /* v1 -> v2: when the server told an official run to begin fine-tuning */
    "ALTER TABLE entries ADD COLUMN begun_utc_ns INTEGER;",
};

static const struct eeb_rundb_tables server_tables = {
    .name = "server",
    .version = (int)(sizeof migrations / sizeof *migrations),
    .migrations = migrations,
};

/* ---- connections ---- */

struct eeb_srv_store {
    char *path;
    pthread_key_t key; /* the thread's struct eeb_rundb * */
};

static void close_conn(void *arg)
{
    eeb_rundb_close(arg);
}

static int open_conn(const char *path, struct eeb_rundb **out, char *err, size_t errlen)
{
    /* it refuses a file that is not a run database, or is newer */
    int rc = eeb_rundb_open_with(path, EEB_RUNDB_READWRITE, &server_tables, out, err, errlen);
    if (rc == EEB_OK)
        sqlite3_busy_timeout(eeb_rundb_sqlite(*out), 10000); /* the pool's writers queue */
    return rc;
}

/* The calling thread's connection, opened on first use. */
static int conn(struct eeb_srv_store *s, struct eeb_rundb **db, char *err, size_t errlen)
{
    if ((*db = pthread_getspecific(s->key)))
        return EEB_OK;
    int rc = open_conn(s->path, db, err, errlen);
    if (rc == EEB_OK)
        pthread_setspecific(s->key, *db);
    return rc;
}

int eeb_srv_store_open(const char *path, struct eeb_srv_store **out, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = open_conn(path, &db, err, errlen); /* creates or migrates the file */
    if (rc)
        return rc;
    eeb_rundb_close(db);
    struct eeb_srv_store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path)) || pthread_key_create(&s->key, close_conn) != 0) {
        if (s)
            free(s->path);
        free(s);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    *out = s;
    return EEB_OK;
}

void eeb_srv_store_close(struct eeb_srv_store *s)
{
    if (!s)
        return;
    close_conn(pthread_getspecific(s->key)); /* the caller's own */
    pthread_key_delete(s->key);
    free(s->path);
    free(s);
}

const char *eeb_srv_store_path(const struct eeb_srv_store *s)
{
    return s->path;
}

int eeb_srv_store_ready(struct eeb_srv_store *s, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    return conn(s, &db, err, errlen);
}

/* Prepares sql on db's connection or says why. */
static sqlite3_stmt *prepare(struct eeb_rundb *db, const char *sql, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", sqlite3_db_filename(h, "main"), sqlite3_errmsg(h));
    return st;
}

/* Finalizes st after its last step rc: EEB_OK if it ran, else why not. */
static int done(struct eeb_rundb *db, sqlite3_stmt *st, int rc, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", sqlite3_db_filename(h, "main"), sqlite3_errmsg(h));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? EEB_OK : EEB_EDB;
}

/* Rows the last statement of db changed, or rc if it failed. */
static int changed(struct eeb_rundb *db, int rc)
{
    return rc ? rc : sqlite3_changes(eeb_rundb_sqlite(db));
}

static void bind_number(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

static double column_number(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static void column_text(sqlite3_stmt *st, int i, char *out, size_t n)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    snprintf(out, n, "%s", t ? t : "");
}

int eeb_srv_store_stats(struct eeb_srv_store *s, struct eeb_srv_store_stats *out, char *err,
                        size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st = rc ? NULL : prepare(db, "SELECT count(*) FROM teams", err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    int step = sqlite3_step(st);
    out->teams = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    out->memory_bytes = (int64_t)sqlite3_memory_used();
    return done(db, st, step, err, errlen);
}

/* ---- teams ---- */

int eeb_srv_store_team_add(struct eeb_srv_store *s, const char *name, const char *token, char *err,
                           size_t errlen)
{
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st = rc ? NULL
                          : prepare(db,
                                    "INSERT INTO teams (name, token_sha256, created_utc_ns) "
                                    "VALUES (?, ?, ?)",
                                    err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, eeb_utc_ns());
    int step = sqlite3_step(st);
    if (step == SQLITE_CONSTRAINT) {
        sqlite3_finalize(st);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: a team named '%s' exists", s->path, name);
    }
    return done(db, st, step, err, errlen);
}

int eeb_srv_store_team_by_token(struct eeb_srv_store *s, const char *token, int64_t *team,
                                char name[EEB_SRV_TEAM_NAME], char *err, size_t errlen)
{
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    *team = 0, name[0] = '\0';
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st =
        rc ? NULL : prepare(db, "SELECT id, name FROM teams WHERE token_sha256 = ?", err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *team = sqlite3_column_int64(st, 0);
        column_text(st, 1, name, EEB_SRV_TEAM_NAME);
    }
    return done(db, st, step, err, errlen);
}

/* ---- runs ---- */

int eeb_srv_store_run_register(struct eeb_srv_store *s, struct eeb_srv_run *r,
                               const char *config_json, char *err, size_t errlen)
{
    const struct eeb_run_new rn = {.task = (enum eeb_task)r->task,
                                   .backend = r->backend,
                                   .config_json = config_json,
                                   .t_max_s = r->t_max_s,
                                   .p_max_w = r->p_max_w,
                                   .rules_version = r->rules_version,
                                   .received = 1};
    char uuid[37];
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_create(db, &rn, &r->id, uuid, err, errlen);
    if (rc)
        return rc;
    sqlite3_stmt *st = prepare(db,
                               "INSERT INTO entries (run_id, team_id, state, official, device, "
                               "provenance, registered_utc_ns) VALUES (?, ?, 'registered', ?, ?, "
                               "?, ?)",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_int(st, 3, r->official);
    sqlite3_bind_text(st, 4, r->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->provenance, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, r->registered_utc_ns = eeb_utc_ns());
    return done(db, st, sqlite3_step(st), err, errlen);
}

/* The columns eeb_srv_store_run_get and eeb_srv_store_board read, in this
 * order. */
#define ENTRY_COLUMNS                                                                              \
    "e.run_id, e.team_id, t.name, r.task, e.state, r.t_max_s, r.p_max_w, r.rules_version, "        \
    "r.backend, e.official, e.device, e.provenance, e.registered_utc_ns, e.completed_utc_ns, "     \
    "e.verdict, e.s, e.m_u, e.m_t, e.m_p, e.m_s, e.t_s, e.energy_j, e.why, "                       \
    "(SELECT count(*) FROM links l WHERE l.run_id = e.run_id), "                                   \
    "(SELECT max(l.at_utc_ns) FROM links l WHERE l.run_id = e.run_id), "                           \
    "r.config ->> '$.power.meter_run', e.begun_utc_ns "                                            \
    "FROM entries e JOIN runs r ON r.id = e.run_id JOIN teams t ON t.id = e.team_id "

static void read_entry(sqlite3_stmt *st, struct eeb_srv_run *r)
{
    char task[8];
    column_text(st, 3, task, sizeof task);
    enum eeb_task t = EEB_TASK_CLS;
    char why[96];
    eeb_task_parse(task, &t, why, sizeof why);
    *r = (struct eeb_srv_run){.id = sqlite3_column_int64(st, 0),
                              .team = sqlite3_column_int64(st, 1),
                              .task = (int)t,
                              .t_max_s = sqlite3_column_double(st, 5),
                              .p_max_w = sqlite3_column_double(st, 6),
                              .official = sqlite3_column_int(st, 9),
                              .registered_utc_ns = sqlite3_column_int64(st, 12),
                              .completed_utc_ns = sqlite3_column_int64(st, 13),
                              .s = column_number(st, 15),
                              .m_u = column_number(st, 16),
                              .m_t = column_number(st, 17),
                              .m_p = column_number(st, 18),
                              .m_s = column_number(st, 19),
                              .t_s = column_number(st, 20),
                              .energy_j = column_number(st, 21),
                              .links = sqlite3_column_int64(st, 23),
                              .last_link_utc_ns = sqlite3_column_int64(st, 24),
                              .meter_run = sqlite3_column_int64(st, 25),
                              .begun_utc_ns = sqlite3_column_int64(st, 26)};
    column_text(st, 2, r->team_name, sizeof r->team_name);
    column_text(st, 4, r->state, sizeof r->state);
    column_text(st, 7, r->rules_version, sizeof r->rules_version);
    column_text(st, 8, r->backend, sizeof r->backend);
    column_text(st, 10, r->device, sizeof r->device);
    column_text(st, 11, r->provenance, sizeof r->provenance);
    column_text(st, 14, r->verdict, sizeof r->verdict);
    column_text(st, 22, r->why, sizeof r->why);
}

int eeb_srv_store_run_get(struct eeb_srv_store *s, int64_t id, struct eeb_srv_run *r, char *err,
                          size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st =
        rc ? NULL : prepare(db, "SELECT " ENTRY_COLUMNS "WHERE e.run_id = ?", err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found)
        read_entry(st, r);
    rc = done(db, st, step, err, errlen);
    return rc ? rc : found;
}

int eeb_srv_store_run_links(struct eeb_srv_store *s, int64_t id, const struct eeb_rundb_link *links,
                            size_t n, enum eeb_link_verdict *verdict, size_t *at, int64_t *next,
                            char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    return rc ? rc
              : eeb_rundb_links_add(db, id, links, n, eeb_utc_ns(), verdict, at, next, err, errlen);
}

int eeb_srv_store_run_complete(struct eeb_srv_store *s, int64_t id, int need_end, char *err,
                               size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st =
        rc ? NULL
           : prepare(db,
                     "UPDATE entries SET state = 'complete', completed_utc_ns = ?1 "
                     "WHERE run_id = ?2 AND state = 'registered' AND (?3 = 0 OR EXISTS "
                     "(SELECT 1 FROM events WHERE run_id = ?2 AND kind = '" EEB_EVENT_FINETUNE_END
                     "'))",
                     err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int(st, 3, need_end);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_begin(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st =
        rc ? NULL
           : prepare(db,
                     "UPDATE entries SET begun_utc_ns = ? WHERE run_id = ? AND state = "
                     "'registered' AND begun_utc_ns IS NULL",
                     err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_predictions(struct eeb_srv_store *s, int64_t id, const int64_t *items,
                                  const char *const *payloads, size_t n, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_predictions_add(db, id, items, payloads, n, err, errlen);
}

int eeb_srv_store_run_counter(struct eeb_srv_store *s, int64_t id, const char *name, int64_t n,
                              char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_result_set(db, id, name, (double)n, "1", "counter", err, errlen);
}

static int latest_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc, (void)kind, (void)payload;
    int64_t *latest = arg;
    *latest = t > *latest ? t : *latest;
    return 0;
}

/* The verdict in run id's record: results, a score event, its state. */
static int record_verdict(struct eeb_rundb *db, int64_t id, const struct eeb_run_outcome *o,
                          const char *util_provenance, const char *score_json, char *err,
                          size_t errlen)
{
    int rc = eeb_run_store_results(db, id, o, util_provenance, err, errlen);
    int64_t t = 0;
    if (rc == EEB_OK)
        rc = eeb_rundb_events_each(db, id, latest_event, &t, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_event_add(db, id, t, eeb_utc_ns(), EEB_EVENT_SCORE, score_json, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_set_state(db, id, o->pass ? EEB_RUN_DONE : EEB_RUN_FAILED, err, errlen);
    return rc;
}

/* complete -> scored with r's verdict and figures: 1 if it moved, else 0. */
static int move_to_scored(struct eeb_rundb *db, const struct eeb_srv_run *r, char *err,
                          size_t errlen)
{
    sqlite3_stmt *st = prepare(db,
                               "UPDATE entries SET state = 'scored', verdict = ?, s = ?, m_u = ?, "
                               "m_t = ?, m_p = ?, m_s = ?, t_s = ?, energy_j = ?, why = ? "
                               "WHERE run_id = ? AND state = 'complete'",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_text(st, 1, r->verdict, -1, SQLITE_STATIC);
    const double v[] = {r->s, r->m_u, r->m_t, r->m_p, r->m_s, r->t_s, r->energy_j};
    for (int i = 0; i < 7; i++)
        bind_number(st, 2 + i, v[i]);
    sqlite3_bind_text(st, 9, r->why, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, r->id);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_scored(struct eeb_srv_store *s, const struct eeb_srv_run *r,
                             const struct eeb_run_outcome *o, const char *util_provenance,
                             const char *score_json, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    if (rc)
        return rc;
    /* one transaction: the entry moves and the record takes the verdict
     * together, or neither (a request racing this one moved it first, or
     * the server stopped between the two) */
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return eeb_errf(err, errlen, EEB_EDB, "%s: %s", s->path, sqlite3_errmsg(h));
    int moved = move_to_scored(db, r, err, errlen);
    rc = moved < 0 ? moved
         : moved   ? record_verdict(db, r->id, o, util_provenance, score_json, err, errlen)
                   : EEB_OK;
    if (rc == EEB_OK && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: %s", s->path, sqlite3_errmsg(h));
    if (rc)
        sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    return rc ? rc : moved;
}

/* ---- the leaderboard ---- */

int eeb_srv_store_board(struct eeb_srv_store *s, const struct eeb_srv_board_filter *f,
                        int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg, char *err,
                        size_t errlen)
{
    /* passing runs by S, best first; then the rest (S NULL, which SQLite
     * sorts last in a descending order), newest first: entries_by_score
     * read backwards */
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    sqlite3_stmt *st =
        rc ? NULL
           : prepare(db,
                     "SELECT " ENTRY_COLUMNS "WHERE e.state = 'scored' AND r.task = ?1 "
                     "AND (?2 IS NULL OR e.provenance = ?2) "
                     "AND (?3 IS NULL OR e.device = ?3) "
                     "ORDER BY e.s DESC, e.run_id DESC LIMIT ?4",
                     err, errlen);
    if (!st)
        return rc ? rc : EEB_EDB;
    sqlite3_bind_text(st, 1, eeb_task_name((enum eeb_task)f->task), -1, SQLITE_STATIC);
    if (f->provenance)
        sqlite3_bind_text(st, 2, f->provenance, -1, SQLITE_STATIC);
    if (f->device)
        sqlite3_bind_text(st, 3, f->device, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : 1000);
    int step, stop = 0;
    struct eeb_srv_run r;
    while (!stop && (step = sqlite3_step(st)) == SQLITE_ROW) {
        read_entry(st, &r);
        stop = fn(arg, &r);
    }
    if (stop) {
        sqlite3_finalize(st);
        return stop;
    }
    return done(db, st, step, err, errlen);
}

/* ---- the server's own meter (director mode) ---- */

int eeb_srv_store_meter_run(struct eeb_srv_store *s, const char *uri, double rate_hz,
                            const char *provenance, int64_t *meter_run, char *err, size_t errlen)
{
    json_t *o = json_object();
    if (o)
        eeb_config_put_power(o, uri, rate_hz, provenance, "the evaluation server's own meter");
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
    int rc = conn(s, &db, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_create(db, &n, meter_run, uuid, err, errlen);
    free(config);
    return rc;
}

void eeb_srv_store_meter_done(struct eeb_srv_store *s, int64_t meter_run)
{
    struct eeb_rundb *db;
    char ignored[256];
    if (meter_run && conn(s, &db, ignored, sizeof ignored) == EEB_OK)
        (void)eeb_rundb_run_set_state(db, meter_run, EEB_RUN_DONE, ignored, sizeof ignored);
}

int eeb_srv_store_meter_event(struct eeb_srv_store *s, int64_t meter_run, const char *kind,
                              int64_t t_mono_ns, int64_t t_utc_ns, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    return rc ? rc
              : eeb_rundb_event_add(db, meter_run, t_mono_ns, t_utc_ns, kind, NULL, err, errlen);
}

int eeb_srv_store_meter_samples(struct eeb_srv_store *s, int64_t meter_run, const char *source,
                                const struct eeb_sample *x, size_t n, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_samples_add(db, meter_run, source, x, n, err, errlen);
}

void eeb_srv_store_meter_counts(struct eeb_srv_store *s, int64_t meter_run, uint64_t samples,
                                uint64_t failed, uint64_t dropped)
{
    const struct {
        const char *name;
        uint64_t n;
    } counts[] = {
        {EEB_RESULT_SAMPLES, samples}, {EEB_RESULT_FAILED, failed}, {EEB_RESULT_DROPPED, dropped}};
    struct eeb_rundb *db;
    char ignored[256]; /* a count not stored is missing from the record, which says so */
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        if (conn(s, &db, ignored, sizeof ignored) == EEB_OK)
            (void)eeb_rundb_result_set(db, meter_run, counts[i].name, (double)counts[i].n, "count",
                                       "computed", ignored, sizeof ignored);
}

int eeb_srv_store_run_links_each(struct eeb_srv_store *s, int64_t id,
                                 int (*fn)(void *arg, const struct eeb_rundb_link *l), void *arg,
                                 char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
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
    int rc = conn(s, &db, err, errlen);
    if (rc)
        return rc;
    /* one transaction: placed once, whole, whoever asks to score at once */
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return eeb_errf(err, errlen, EEB_EDB, "%s: placing the meter's window: %s",
                        eeb_rundb_path(db), sqlite3_errmsg(h));
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
    if (sqlite3_exec(h, rc == EEB_OK ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK &&
        rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: placing the meter's window: %s",
                      eeb_rundb_path(db), sqlite3_errmsg(h));
    return rc;
}
