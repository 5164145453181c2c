/*
 * store.c - the server's database: an eeb run database (power/rundb.c)
 * holding every submitted run as `eeb run` records one -- configuration,
 * events, samples, predictions, results -- so that the judge, `eeb check`
 * and the HTML report read it as they read a local file; and beside those
 * tables the server's own: teams (tokens as SHA-256 hashes only) and
 * entries, a team's run and where it stands.  WAL, one pair of connections
 * per thread of the pool, every statement prepared.
 */
#include "server_int.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char schema[] =
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
    "CREATE INDEX IF NOT EXISTS entries_by_score ON entries(state, s, run_id);";

struct store {
    char *path;
    pthread_key_t key; /* the thread's struct conn * */
};

static void close_conn(void *arg)
{
    struct conn *c = arg;
    if (!c)
        return;
    sqlite3_close_v2(c->h);
    eeb_rundb_close(c->run);
    free(c);
}

static int open_conn(const char *path, struct conn **out, char *err, size_t errlen)
{
    struct conn *c = calloc(1, sizeof *c);
    if (!c)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    /* the run database first: it refuses a file that is not one */
    int rc = eeb_rundb_open(path, EEB_RUNDB_READWRITE, &c->run, err, errlen);
    if (rc == EEB_OK) {
        int q = sqlite3_open_v2(path, &c->h, SQLITE_OPEN_READWRITE, NULL);
        if (q == SQLITE_OK)
            q = sqlite3_busy_timeout(c->h, 10000);
        if (q == SQLITE_OK)
            q = sqlite3_exec(c->h, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
        if (q != SQLITE_OK)
            rc = eeb_errf(err, errlen, EEB_EDB, "%s: %s", path,
                          c->h ? sqlite3_errmsg(c->h) : "out of memory");
    }
    if (rc) {
        close_conn(c);
        return rc;
    }
    *out = c;
    return EEB_OK;
}

int store_open(const char *path, struct store **out, char *err, size_t errlen)
{
    struct conn *c;
    int rc = open_conn(path, &c, err, errlen);
    if (rc)
        return rc;
    if (sqlite3_exec(c->h, schema, NULL, NULL, NULL) != SQLITE_OK) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: %s", path, sqlite3_errmsg(c->h));
        close_conn(c);
        return rc;
    }
    close_conn(c);
    struct store *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path)) || pthread_key_create(&s->key, close_conn) != 0) {
        if (s)
            free(s->path);
        free(s);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    *out = s;
    return EEB_OK;
}

void store_close(struct store *s)
{
    if (!s)
        return;
    close_conn(pthread_getspecific(s->key)); /* the caller's own */
    pthread_key_delete(s->key);
    free(s->path);
    free(s);
}

const char *store_path(const struct store *s)
{
    return s->path;
}

struct conn *store_conn(struct store *s, char *err, size_t errlen)
{
    struct conn *c = pthread_getspecific(s->key);
    if (!c && open_conn(s->path, &c, err, errlen) == EEB_OK)
        pthread_setspecific(s->key, c);
    return c;
}

/* Prepares sql or says why. */
static sqlite3_stmt *prepare(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", sqlite3_db_filename(db, "main"),
                 sqlite3_errmsg(db));
    return st;
}

static int done(sqlite3 *db, sqlite3_stmt *st, int rc, char *err, size_t errlen)
{
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", sqlite3_db_filename(db, "main"),
                 sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? EEB_OK : EEB_EDB;
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

/* ---- teams ---- */

int store_team_by_token(sqlite3 *db, const char *token, int64_t *team, char name[65], char *err,
                        size_t errlen)
{
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    *team = 0, name[0] = '\0';
    sqlite3_stmt *st =
        prepare(db, "SELECT id, name FROM teams WHERE token_sha256 = ?", err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *team = sqlite3_column_int64(st, 0);
        column_text(st, 1, name, 65);
    }
    return done(db, st, rc, err, errlen);
}

int store_count_teams(sqlite3 *db, int64_t *n, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(db, "SELECT count(*) FROM teams", err, errlen);
    if (!st)
        return EEB_EDB;
    int rc = sqlite3_step(st);
    *n = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return done(db, st, rc, err, errlen);
}

/* ---- entries ---- */

int store_run_register(struct conn *c, struct store_run *r, const char *config_json, char *err,
                       size_t errlen)
{
    const struct eeb_run_new rn = {.task = (enum eeb_task)r->task,
                                   .backend = r->backend,
                                   .config_json = config_json,
                                   .t_max_s = r->t_max_s,
                                   .p_max_w = r->p_max_w,
                                   .rules_version = r->rules_version};
    char uuid[37];
    int rc = eeb_rundb_run_create(c->run, &rn, &r->id, uuid, err, errlen);
    if (rc)
        return rc;
    sqlite3_stmt *st = prepare(c->h,
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
    return done(c->h, st, sqlite3_step(st), err, errlen);
}

/* The columns store_run_get and store_board read, in this order. */
#define ENTRY_COLUMNS                                                                              \
    "e.run_id, e.team_id, t.name, r.task, e.state, r.t_max_s, r.p_max_w, r.rules_version, "        \
    "r.backend, e.official, e.device, e.provenance, e.registered_utc_ns, e.completed_utc_ns, "     \
    "e.verdict, e.s, e.m_u, e.m_t, e.m_p, e.m_s, e.t_s, e.energy_j, e.why "                        \
    "FROM entries e JOIN runs r ON r.id = e.run_id JOIN teams t ON t.id = e.team_id "

static void read_entry(sqlite3_stmt *st, struct store_run *r)
{
    char task[8];
    column_text(st, 3, task, sizeof task);
    enum eeb_task t = EEB_TASK_CLS;
    char why[96];
    eeb_task_parse(task, &t, why, sizeof why);
    *r = (struct store_run){.id = sqlite3_column_int64(st, 0),
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
                            .energy_j = column_number(st, 21)};
    column_text(st, 2, r->team_name, sizeof r->team_name);
    column_text(st, 4, r->state, sizeof r->state);
    column_text(st, 7, r->rules_version, sizeof r->rules_version);
    column_text(st, 8, r->backend, sizeof r->backend);
    column_text(st, 10, r->device, sizeof r->device);
    column_text(st, 11, r->provenance, sizeof r->provenance);
    column_text(st, 14, r->verdict, sizeof r->verdict);
    column_text(st, 22, r->why, sizeof r->why);
}

int store_run_get(sqlite3 *db, int64_t id, struct store_run *r, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(db, "SELECT " ENTRY_COLUMNS "WHERE e.run_id = ?", err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found)
        read_entry(st, r);
    int rc = done(db, st, step, err, errlen);
    return rc ? rc : found;
}

int store_run_complete(sqlite3 *db, int64_t id, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(db,
                               "UPDATE entries SET state = 'complete', completed_utc_ns = ? "
                               "WHERE run_id = ? AND state = 'registered'",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    int rc = done(db, st, sqlite3_step(st), err, errlen);
    return rc ? rc : sqlite3_changes(db);
}

int store_run_scored(sqlite3 *db, const struct store_run *r, char *err, size_t errlen)
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
    int rc = done(db, st, sqlite3_step(st), err, errlen);
    return rc ? rc : sqlite3_changes(db);
}

int store_board(sqlite3 *db, const struct store_board_filter *f,
                int (*fn)(void *arg, const struct store_run *r), void *arg, char *err,
                size_t errlen)
{
    /* passing runs by S, best first; then the rest (S NULL, which SQLite
     * sorts last in a descending order), newest first: entries_by_score
     * read backwards */
    sqlite3_stmt *st = prepare(db,
                               "SELECT " ENTRY_COLUMNS "WHERE e.state = 'scored' AND r.task = ?1 "
                               "AND (?2 IS NULL OR e.provenance = ?2) "
                               "AND (?3 IS NULL OR e.device = ?3) "
                               "ORDER BY e.s DESC, e.run_id DESC LIMIT ?4",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_text(st, 1, eeb_task_name((enum eeb_task)f->task), -1, SQLITE_STATIC);
    if (f->provenance)
        sqlite3_bind_text(st, 2, f->provenance, -1, SQLITE_STATIC);
    if (f->device)
        sqlite3_bind_text(st, 3, f->device, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : 1000);
    int step, stop = 0;
    struct store_run r;
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

/* ---- teams, by the administrator ---- */

int eeb_server_add_team(const char *path, const char *name, char token[EEB_TOKEN_HEX], char *err,
                        size_t errlen)
{
    token[0] = '\0';
    if (!text_ok(name, 64, "_.-"))
        return eeb_errf(err, errlen, EEB_EINVAL, "team name '%s': 1 to 64 of A-Z a-z 0-9 _ . -",
                        name);
    unsigned char raw[32];
    char secret[EEB_TOKEN_HEX];
    int rc = eeb_random_bytes(raw, sizeof raw, err, errlen);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    char hash[EEB_SHA256_HEX];
    eeb_sha256(secret, strlen(secret), hash);
    struct store *s;
    if ((rc = store_open(path, &s, err, errlen)))
        return rc;
    struct conn *c = store_conn(s, err, errlen);
    sqlite3_stmt *st = c ? prepare(c->h,
                                   "INSERT INTO teams (name, token_sha256, created_utc_ns) "
                                   "VALUES (?, ?, ?)",
                                   err, errlen)
                         : NULL;
    rc = EEB_EDB;
    if (st) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, eeb_utc_ns());
        int step = sqlite3_step(st);
        if (step == SQLITE_CONSTRAINT) {
            sqlite3_finalize(st);
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: a team named '%s' exists", path, name);
        } else {
            rc = done(c->h, st, step, err, errlen);
        }
    }
    store_close(s);
    if (rc == EEB_OK)
        memcpy(token, secret, sizeof secret);
    memset(raw, 0, sizeof raw), memset(secret, 0, sizeof secret);
    return rc;
}
