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
#include "store_int.h"

#include "common/eeb_json.h"
#include "rundb/eeb_rundb_tables.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    /* v2 -> v3: rounds, and their entries (a team's design on a task, made
     * of runs); a team's run, until now its "entry", is a team_run */
    "ALTER TABLE entries RENAME TO team_runs;"
    "DROP INDEX IF EXISTS entries_by_score;"
    "CREATE INDEX team_runs_by_score ON team_runs(state, s, run_id);"
    "CREATE TABLE rounds ("
    "  id INTEGER PRIMARY KEY,"
    "  name TEXT NOT NULL UNIQUE,"
    "  rules_version TEXT NOT NULL,"
    "  runs INTEGER NOT NULL CHECK (runs BETWEEN 1 AND 25),"
    "  aggregate TEXT NOT NULL CHECK (aggregate IN ('median', 'olympic')),"
    "  cap INTEGER NOT NULL CHECK (cap >= runs),"
    "  opens_utc_ns INTEGER NOT NULL,"
    "  closes_utc_ns INTEGER NOT NULL CHECK (closes_utc_ns > opens_utc_ns),"
    "  closed_utc_ns INTEGER,"
    "  tasks TEXT NOT NULL);" /* per task: t_max_s, tiers_w, model_sha256, epochs_max */
    "CREATE TABLE entries ("
    "  id INTEGER PRIMARY KEY,"
    "  round_id INTEGER NOT NULL REFERENCES rounds(id),"
    "  team_id INTEGER NOT NULL REFERENCES teams(id),"
    "  task TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  division TEXT NOT NULL CHECK (division IN ('closed', 'open')),"
    "  p_max_w REAL NOT NULL,"
    "  device TEXT NOT NULL,"
    "  backend TEXT NOT NULL,"
    "  provenance TEXT NOT NULL,"
    "  created_utc_ns INTEGER NOT NULL,"
    "  UNIQUE (round_id, team_id, task, name));"
    "ALTER TABLE team_runs ADD COLUMN entry_id INTEGER REFERENCES entries(id);"
    "CREATE INDEX team_runs_by_entry ON team_runs(entry_id);"
    /* the organizer's acts: a team revoked, a run hidden (under review) or
     * withdrawn, each with its reason in the audit log */
    "ALTER TABLE teams ADD COLUMN revoked_utc_ns INTEGER;"
    "ALTER TABLE team_runs ADD COLUMN withdrawn TEXT CHECK (withdrawn IN ('hidden', "
    "'withdrawn'));"
    "ALTER TABLE team_runs ADD COLUMN withdrawn_why TEXT;"
    /* S's uncertainty from the meter's (NULL: it stated none) */
    "ALTER TABLE team_runs ADD COLUMN s_uncertainty REAL;"
    "CREATE TABLE audit ("
    "  id INTEGER PRIMARY KEY,"
    "  utc_ns INTEGER NOT NULL,"
    "  action TEXT NOT NULL,"
    "  target TEXT NOT NULL,"
    "  reason TEXT NOT NULL);",
    /* v3 -> v4: what a team must not be handed, and what it may use.  The
     * server's key, which names the test items it serves; when a run's
     * test inputs were served, its predictions last changed and it was
     * scored, and the steps its schedule takes; each team's use of the
     * server per UTC day, held to its quotas; chains' origins found fast
     * (one is a run's alone: a copy is refused).  The labels leave the
     * predictions the server holds: they are in no database now. */
    "CREATE TABLE server_key ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  key BLOB NOT NULL CHECK (length(key) = 32));"
    "ALTER TABLE team_runs ADD COLUMN test_served_utc_ns INTEGER;"
    "ALTER TABLE team_runs ADD COLUMN predicted_utc_ns INTEGER;"
    "ALTER TABLE team_runs ADD COLUMN scored_utc_ns INTEGER;"
    "ALTER TABLE team_runs ADD COLUMN schedule_steps INTEGER;"
    "CREATE TABLE team_usage ("
    "  team_id INTEGER NOT NULL REFERENCES teams(id),"
    "  day INTEGER NOT NULL,"
    "  registrations INTEGER NOT NULL DEFAULT 0,"
    "  scored INTEGER NOT NULL DEFAULT 0,"
    "  samples INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (team_id, day));"
    "CREATE INDEX links_by_origin ON links(origin_uuid) WHERE kind = 'origin';"
    "CREATE INDEX links_by_origin_head ON links(head) WHERE kind = 'origin';"
    "UPDATE predictions SET payload = json_remove(payload, '$.label', '$.truth') "
    "  WHERE run_id IN (SELECT run_id FROM team_runs);",
};

static const struct eeb_rundb_tables server_tables = {
    .name = "server",
    .version = (int)(sizeof migrations / sizeof *migrations),
    .migrations = migrations,
};

/* ---- connections ---- */

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
int eeb_srv_conn(struct eeb_srv_store *s, struct eeb_rundb **db, char *err, size_t errlen)
{
    if ((*db = pthread_getspecific(s->key)))
        return EEB_OK;
    int rc = open_conn(s->path, db, err, errlen);
    if (rc == EEB_OK)
        pthread_setspecific(s->key, *db);
    return rc;
}

/* A database not there yet made empty, readable and writable by its owner
 * alone whatever the umask: its predictions hold every test label.  SQLite
 * then takes it as a new database, and makes its -wal and -shm with its
 * mode (unix VFS: a journal's mode is its database's). */
static int create_private(const char *path, char *err, size_t errlen)
{
    int rc = eeb_check_output(path, err, errlen); /* a missing folder, named */
    if (rc)
        return rc;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EEXIST ? EEB_OK
                               : eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    /* the umask may have taken bits the owner needs */
    if (fchmod(fd, 0600) != 0) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
        unlink(path);
    }
    close(fd);
    return rc;
}

int eeb_srv_store_open(const char *path, struct eeb_srv_store **out, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = create_private(path, err, errlen);
    if (rc == EEB_OK)
        rc = open_conn(path, &db, err, errlen); /* makes the tables or migrates them */
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
    pthread_mutex_init(&s->links_lock, NULL);
    *out = s;
    return EEB_OK;
}

void eeb_srv_store_close(struct eeb_srv_store *s)
{
    if (!s)
        return;
    close_conn(pthread_getspecific(s->key)); /* the caller's own */
    pthread_key_delete(s->key);
    pthread_mutex_destroy(&s->links_lock);
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
    return eeb_srv_conn(s, &db, err, errlen);
}

/* Prepares sql on db's connection or says why. */
sqlite3_stmt *eeb_srv_prepare(struct eeb_rundb *db, const char *sql, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", sqlite3_db_filename(h, "main"), sqlite3_errmsg(h));
    return st;
}

/* sql prepared on the calling thread's connection (*db), or NULL with *rc
 * the error. */
sqlite3_stmt *eeb_srv_statement(struct eeb_srv_store *s, const char *sql, struct eeb_rundb **db,
                                int *rc, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if ((*rc = eeb_srv_conn(s, db, err, errlen)) == EEB_OK &&
        !(st = eeb_srv_prepare(*db, sql, err, errlen)))
        *rc = EEB_EDB;
    return st;
}

/* Finalizes st after its last step rc: EEB_OK if it ran, else why not. */
int eeb_srv_done(struct eeb_rundb *db, sqlite3_stmt *st, int rc, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", sqlite3_db_filename(h, "main"), sqlite3_errmsg(h));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? EEB_OK : EEB_EDB;
}

/* Steps st to its end, each row given to row (a non-zero return stops the
 * walk and is returned), and finalizes it. */
int eeb_srv_each_row(struct eeb_rundb *db, sqlite3_stmt *st,
                     int (*row)(sqlite3_stmt *st, void *ctx), void *ctx, char *err, size_t errlen)
{
    int step, stop = 0;
    while (!stop && (step = sqlite3_step(st)) == SQLITE_ROW)
        stop = row(st, ctx);
    if (stop) {
        sqlite3_finalize(st);
        return stop;
    }
    return eeb_srv_done(db, st, step, err, errlen);
}

/* Begins a write transaction on db: the pool's writers queue on its lock. */
int eeb_srv_begin_write(struct eeb_rundb *db, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    return sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
               ? EEB_OK
               : eeb_errf(err, errlen, EEB_EDB, "%s: %s", eeb_rundb_path(db), sqlite3_errmsg(h));
}

/* Ends it: committed if rc is EEB_OK, else rolled back.  rc, or the
 * commit's error. */
int eeb_srv_end_write(struct eeb_rundb *db, int rc, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (rc == EEB_OK && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: %s", eeb_rundb_path(db), sqlite3_errmsg(h));
    if (rc != EEB_OK)
        sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Rows the last statement of db changed, or rc if it failed. */
int eeb_srv_changed(struct eeb_rundb *db, int rc)
{
    return rc ? rc : sqlite3_changes(eeb_rundb_sqlite(db));
}

void eeb_srv_bind_number(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

double eeb_srv_column_number(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

void eeb_srv_column_text(sqlite3_stmt *st, int i, char *out, size_t n)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    snprintf(out, n, "%s", t ? t : "");
    eeb_utf8_trim(out); /* cut to out's size, still UTF-8: JSON takes it */
}

int eeb_srv_store_stats(struct eeb_srv_store *s, struct eeb_srv_store_stats *out, char *err,
                        size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(
        s,
        "SELECT (SELECT count(*) FROM teams WHERE revoked_utc_ns IS NULL), (SELECT "
        "count(*) FROM team_runs WHERE state != 'scored'), (SELECT coalesce(max(id), "
        "0) FROM audit)",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    int step = sqlite3_step(st);
    out->teams = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    out->runs_going = step == SQLITE_ROW ? sqlite3_column_int64(st, 1) : 0;
    out->audit_last = step == SQLITE_ROW ? sqlite3_column_int64(st, 2) : 0;
    out->memory_bytes = (int64_t)sqlite3_memory_used();
    return eeb_srv_done(db, st, step, err, errlen);
}

/* ---- the server's key, and the teams' quotas ---- */

int eeb_srv_store_key(struct eeb_srv_store *s, uint8_t key[EEB_SRV_KEY_BYTES], char *err,
                      size_t errlen)
{
    uint8_t fresh[EEB_SRV_KEY_BYTES];
    struct eeb_rundb *db;
    int rc = eeb_random_bytes(fresh, sizeof fresh, err, errlen);
    /* the first start keeps a key; every later one reads it */
    sqlite3_stmt *st =
        rc ? NULL
           : eeb_srv_statement(s, "INSERT OR IGNORE INTO server_key (id, key) VALUES (1, ?)", &db,
                               &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_blob(st, 1, fresh, sizeof fresh, SQLITE_STATIC);
    if ((rc = eeb_srv_done(db, st, sqlite3_step(st), err, errlen)) ||
        !(st = eeb_srv_statement(s, "SELECT key FROM server_key WHERE id = 1", &db, &rc, err,
                                 errlen)))
        return rc;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW && sqlite3_column_bytes(st, 0) == EEB_SRV_KEY_BYTES)
        memcpy(key, sqlite3_column_blob(st, 0), EEB_SRV_KEY_BYTES);
    else if (step == SQLITE_ROW)
        step = SQLITE_CORRUPT;
    return eeb_srv_done(db, st, step, err, errlen);
}

int eeb_srv_store_quota_take(struct eeb_srv_store *s, int64_t team, int64_t day,
                             enum eeb_server_quota q, int64_t n, int64_t limit, int64_t *used,
                             char *err, size_t errlen)
{
    static const char *const take[EEB_QUOTAS] = {
        "UPDATE team_usage SET registrations = registrations + ?3 WHERE team_id = ?1 AND day = ?2 "
        "AND registrations + ?3 <= ?4",
        "UPDATE team_usage SET scored = scored + ?3 WHERE team_id = ?1 AND day = ?2 AND "
        "scored + ?3 <= ?4",
        "UPDATE team_usage SET samples = samples + ?3 WHERE team_id = ?1 AND day = ?2 AND "
        "samples + ?3 <= ?4"};
    static const char *const read[EEB_QUOTAS] = {
        "SELECT registrations FROM team_usage WHERE team_id = ? AND day = ?",
        "SELECT scored FROM team_usage WHERE team_id = ? AND day = ?",
        "SELECT samples FROM team_usage WHERE team_id = ? AND day = ?"};
    struct eeb_rundb *db;
    int rc;
    *used = 0;
    sqlite3_stmt *st = eeb_srv_statement(
        s, "INSERT OR IGNORE INTO team_usage (team_id, day) VALUES (?, ?)", &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, team);
    sqlite3_bind_int64(st, 2, day);
    if ((rc = eeb_srv_done(db, st, sqlite3_step(st), err, errlen)) ||
        !(st = eeb_srv_statement(s, take[q], &db, &rc, err, errlen)))
        return rc;
    /* one statement: two requests racing for the last of a quota cannot
     * both have it */
    sqlite3_bind_int64(st, 1, team);
    sqlite3_bind_int64(st, 2, day);
    sqlite3_bind_int64(st, 3, n);
    sqlite3_bind_int64(st, 4, limit < 0 ? INT64_MAX / 2 : limit);
    int taken = eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
    if (taken != 0 || !(st = eeb_srv_statement(s, read[q], &db, &rc, err, errlen)))
        return taken != 0 ? taken : rc;
    sqlite3_bind_int64(st, 1, team);
    sqlite3_bind_int64(st, 2, day);
    int step = sqlite3_step(st);
    *used = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    rc = eeb_srv_done(db, st, step, err, errlen);
    return rc ? rc : 0;
}

/* ---- teams ---- */

int eeb_srv_store_team_add(struct eeb_srv_store *s, const char *name, const char *token, char *err,
                           size_t errlen)
{
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(s,
                                         "INSERT INTO teams (name, token_sha256, created_utc_ns) "
                                         "VALUES (?, ?, ?)",
                                         &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, hash, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, eeb_utc_ns());
    int step = sqlite3_step(st);
    if (step == SQLITE_CONSTRAINT) {
        sqlite3_finalize(st);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: a team named '%s' exists", s->path, name);
    }
    return eeb_srv_done(db, st, step, err, errlen);
}

int eeb_srv_store_team_by_token(struct eeb_srv_store *s, const char *token, int64_t *team,
                                char name[EEB_SRV_TEAM_NAME], char *err, size_t errlen)
{
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    *team = 0, name[0] = '\0';
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT id, name FROM teams WHERE token_sha256 = ? AND revoked_utc_ns IS "
                          "NULL",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *team = sqlite3_column_int64(st, 0);
        eeb_srv_column_text(st, 1, name, EEB_SRV_TEAM_NAME);
    }
    return eeb_srv_done(db, st, step, err, errlen);
}
