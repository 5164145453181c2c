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

#include "common/eeb_json.h"
#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb_tables.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
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

struct eeb_srv_store {
    char *path;
    pthread_key_t key;          /* the thread's struct eeb_rundb * */
    pthread_mutex_t links_lock; /* a run's samples counted and its links stored as one step */
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

/* sql prepared on the calling thread's connection (*db), or NULL with *rc
 * the error. */
static sqlite3_stmt *statement(struct eeb_srv_store *s, const char *sql, struct eeb_rundb **db,
                               int *rc, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if ((*rc = conn(s, db, err, errlen)) == EEB_OK && !(st = prepare(*db, sql, err, errlen)))
        *rc = EEB_EDB;
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

/* Steps st to its end, each row given to row (a non-zero return stops the
 * walk and is returned), and finalizes it. */
static int each_row(struct eeb_rundb *db, sqlite3_stmt *st, int (*row)(sqlite3_stmt *st, void *ctx),
                    void *ctx, char *err, size_t errlen)
{
    int step, stop = 0;
    while (!stop && (step = sqlite3_step(st)) == SQLITE_ROW)
        stop = row(st, ctx);
    if (stop) {
        sqlite3_finalize(st);
        return stop;
    }
    return done(db, st, step, err, errlen);
}

/* Begins a write transaction on db: the pool's writers queue on its lock. */
static int begin_write(struct eeb_rundb *db, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    return sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK
               ? EEB_OK
               : eeb_errf(err, errlen, EEB_EDB, "%s: %s", eeb_rundb_path(db), sqlite3_errmsg(h));
}

/* Ends it: committed if rc is EEB_OK, else rolled back.  rc, or the
 * commit's error. */
static int end_write(struct eeb_rundb *db, int rc, char *err, size_t errlen)
{
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (rc == EEB_OK && sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: %s", eeb_rundb_path(db), sqlite3_errmsg(h));
    if (rc != EEB_OK)
        sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    return rc;
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
    eeb_utf8_trim(out); /* cut to out's size, still UTF-8: JSON takes it */
}

int eeb_srv_store_stats(struct eeb_srv_store *s, struct eeb_srv_store_stats *out, char *err,
                        size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s,
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
    return done(db, st, step, err, errlen);
}

/* ---- the server's key, and the teams' quotas ---- */

int eeb_srv_store_key(struct eeb_srv_store *s, uint8_t key[EEB_SRV_KEY_BYTES], char *err,
                      size_t errlen)
{
    uint8_t fresh[EEB_SRV_KEY_BYTES];
    struct eeb_rundb *db;
    int rc = eeb_random_bytes(fresh, sizeof fresh, err, errlen);
    /* the first start keeps a key; every later one reads it */
    sqlite3_stmt *st = rc ? NULL
                          : statement(s, "INSERT OR IGNORE INTO server_key (id, key) VALUES (1, ?)",
                                      &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_blob(st, 1, fresh, sizeof fresh, SQLITE_STATIC);
    if ((rc = done(db, st, sqlite3_step(st), err, errlen)) ||
        !(st = statement(s, "SELECT key FROM server_key WHERE id = 1", &db, &rc, err, errlen)))
        return rc;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW && sqlite3_column_bytes(st, 0) == EEB_SRV_KEY_BYTES)
        memcpy(key, sqlite3_column_blob(st, 0), EEB_SRV_KEY_BYTES);
    else if (step == SQLITE_ROW)
        step = SQLITE_CORRUPT;
    return done(db, st, step, err, errlen);
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
    sqlite3_stmt *st = statement(s, "INSERT OR IGNORE INTO team_usage (team_id, day) VALUES (?, ?)",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, team);
    sqlite3_bind_int64(st, 2, day);
    if ((rc = done(db, st, sqlite3_step(st), err, errlen)) ||
        !(st = statement(s, take[q], &db, &rc, err, errlen)))
        return rc;
    /* one statement: two requests racing for the last of a quota cannot
     * both have it */
    sqlite3_bind_int64(st, 1, team);
    sqlite3_bind_int64(st, 2, day);
    sqlite3_bind_int64(st, 3, n);
    sqlite3_bind_int64(st, 4, limit < 0 ? INT64_MAX / 2 : limit);
    int taken = changed(db, done(db, st, sqlite3_step(st), err, errlen));
    if (taken != 0 || !(st = statement(s, read[q], &db, &rc, err, errlen)))
        return taken != 0 ? taken : rc;
    sqlite3_bind_int64(st, 1, team);
    sqlite3_bind_int64(st, 2, day);
    int step = sqlite3_step(st);
    *used = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    rc = done(db, st, step, err, errlen);
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
    sqlite3_stmt *st = statement(s,
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
    return done(db, st, step, err, errlen);
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
        statement(s,
                  "SELECT id, name FROM teams WHERE token_sha256 = ? AND revoked_utc_ns IS "
                  "NULL",
                  &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, hash, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *team = sqlite3_column_int64(st, 0);
        column_text(st, 1, name, EEB_SRV_TEAM_NAME);
    }
    return done(db, st, step, err, errlen);
}

/* ---- runs ---- */

/* The team's runs on the claim's task in its round, and of its entry
 * (creating the entry if new, with r's device, backend and provenance):
 * 0 if the run may join it (claim->entry_id, ->index), 1 if refused
 * (claim->field, ->why), or an error.  Inside the caller's transaction. */
static int claim_entry(struct eeb_rundb *db, const struct eeb_srv_run *r, struct eeb_srv_claim *c,
                       char *err, size_t errlen)
{
    const char *task = eeb_task_name((enum eeb_task)r->task);
    /* the round may have closed since the server found it open */
    sqlite3_stmt *st = prepare(db,
                               "SELECT count(*) FROM rounds WHERE id = ?1 AND closed_utc_ns IS "
                               "NULL AND opens_utc_ns <= ?2 AND closes_utc_ns > ?2",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, eeb_utc_ns());
    int step = sqlite3_step(st), open = step == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    int rc = done(db, st, step, err, errlen);
    if (rc)
        return rc;
    if (!open) {
        c->field = "round";
        snprintf(c->why, sizeof c->why, "round %s closed as this run was registered",
                 c->rules->name);
        return 1;
    }
    st = prepare(db,
                 "SELECT count(*) FROM team_runs tr JOIN entries en ON en.id = "
                 "tr.entry_id WHERE en.round_id = ? AND en.team_id = ? AND en.task = ?",
                 err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_text(st, 3, task, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    int64_t made = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if ((rc = done(db, st, step, err, errlen)))
        return rc;
    if (made >= c->rules->cap) {
        c->field = "round";
        snprintf(c->why, sizeof c->why,
                 "team %s has registered %lld official %s runs in round %s, its cap", r->team_name,
                 (long long)made, task, c->rules->name);
        return 1;
    }
    st = prepare(db,
                 "SELECT id, division, p_max_w, device, backend, provenance, (SELECT count(*) "
                 "FROM team_runs WHERE entry_id = entries.id) FROM entries WHERE round_id = ? AND "
                 "team_id = ? AND task = ? AND name = ?",
                 err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_text(st, 3, task, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, c->entry, -1, SQLITE_STATIC);
    if ((step = sqlite3_step(st)) == SQLITE_ROW) {
        /* what an entry is stays what its first run made it */
        const struct {
            const char *field, *has, *wants;
        } fixed[] = {{"division", (const char *)sqlite3_column_text(st, 1), c->division},
                     {"device", (const char *)sqlite3_column_text(st, 3), r->device},
                     {"backend", (const char *)sqlite3_column_text(st, 4), r->backend},
                     {"provenance", (const char *)sqlite3_column_text(st, 5), r->provenance}};
        c->entry_id = sqlite3_column_int64(st, 0);
        c->index = sqlite3_column_int(st, 6) + 1;
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed && !c->field; i++)
            if (strcmp(fixed[i].has ? fixed[i].has : "", fixed[i].wants))
                c->field = fixed[i].field,
                snprintf(c->why, sizeof c->why, "entry %s's runs have %s %s, not %s", c->entry,
                         fixed[i].field, fixed[i].has, fixed[i].wants);
        if (!c->field && sqlite3_column_double(st, 2) != r->p_max_w)
            c->field = "p_max_w",
            snprintf(c->why, sizeof c->why, "entry %s's runs are of the %g W tier, not %g W",
                     c->entry, sqlite3_column_double(st, 2), r->p_max_w);
        if (!c->field && c->index > c->rules->runs)
            c->field = "entry",
            snprintf(c->why, sizeof c->why,
                     "entry %s has its %d runs of round %s; a new one needs another name", c->entry,
                     c->rules->runs, c->rules->name);
    }
    if ((rc = done(db, st, step, err, errlen)) || c->field || c->entry_id)
        return rc ? rc : c->field ? 1 : 0;
    st = prepare(db,
                 "INSERT INTO entries (round_id, team_id, task, name, division, p_max_w, device, "
                 "backend, provenance, created_utc_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_text(st, 3, task, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, c->entry, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, c->division, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 6, r->p_max_w);
    sqlite3_bind_text(st, 7, r->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, r->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, r->provenance, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, eeb_utc_ns());
    rc = done(db, st, sqlite3_step(st), err, errlen);
    c->entry_id = sqlite3_last_insert_rowid(eeb_rundb_sqlite(db));
    c->index = 1;
    return rc;
}

/* The team's run r->id, of entry (0: none). */
static int add_team_run(struct eeb_rundb *db, struct eeb_srv_run *r, int64_t entry, char *err,
                        size_t errlen)
{
    sqlite3_stmt *st = prepare(db,
                               "INSERT INTO team_runs (run_id, team_id, state, official, device, "
                               "provenance, registered_utc_ns, entry_id, schedule_steps) "
                               "VALUES (?, ?, 'registered', ?, ?, ?, ?, ?, ?)",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_int(st, 3, r->official);
    sqlite3_bind_text(st, 4, r->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->provenance, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, r->registered_utc_ns = eeb_utc_ns());
    if (entry)
        sqlite3_bind_int64(st, 7, entry);
    if (r->schedule_steps)
        sqlite3_bind_int64(st, 8, r->schedule_steps);
    return done(db, st, sqlite3_step(st), err, errlen);
}

int eeb_srv_store_run_register(struct eeb_srv_store *s, struct eeb_srv_run *r,
                               const char *config_json, struct eeb_srv_claim *claim, char *err,
                               size_t errlen)
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
    /* one transaction: the entry's and the cap's counts, and the run
     * counted in them (two runs racing for an entry's last place) */
    int began = (rc = begin_write(db, err, errlen)) == EEB_OK;
    if (rc == EEB_OK && claim)
        rc = claim_entry(db, r, claim, err, errlen);
    if (rc == EEB_OK)
        rc = add_team_run(db, r, claim ? claim->entry_id : 0, err, errlen);
    if (began)
        rc = end_write(db, rc, err, errlen);
    if (rc) { /* the run's record goes too: nothing of it is stored yet */
        sqlite3_stmt *st = prepare(db, "DELETE FROM runs WHERE id = ?", err, errlen);
        if (st) {
            sqlite3_bind_int64(st, 1, r->id);
            (void)sqlite3_step(st);
            sqlite3_finalize(st);
        }
    }
    return rc;
}

/* The columns eeb_srv_store_run_get and eeb_srv_store_board read, in this
 * order. */
#define ENTRY_COLUMNS                                                                              \
    "e.run_id, e.team_id, t.name, r.task, e.state, r.t_max_s, r.p_max_w, r.rules_version, "        \
    "r.backend, e.official, e.device, e.provenance, e.registered_utc_ns, e.completed_utc_ns, "     \
    "e.verdict, e.s, e.m_u, e.m_t, e.m_p, e.m_s, e.t_s, e.energy_j, e.why, "                       \
    "(SELECT count(*) FROM links l WHERE l.run_id = e.run_id), "                                   \
    "(SELECT max(l.at_utc_ns) FROM links l WHERE l.run_id = e.run_id), "                           \
    "r.config ->> '$.power.meter_run', e.begun_utc_ns, e.entry_id, en.name, en.division, "         \
    "ro.name, e.withdrawn, e.withdrawn_why, e.s_uncertainty, e.test_served_utc_ns, "               \
    "e.predicted_utc_ns, e.schedule_steps "                                                        \
    "FROM team_runs e JOIN runs r ON r.id = e.run_id JOIN teams t ON t.id = e.team_id "            \
    "LEFT JOIN entries en ON en.id = e.entry_id LEFT JOIN rounds ro ON ro.id = en.round_id "

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
                              .begun_utc_ns = sqlite3_column_int64(st, 26),
                              .entry = sqlite3_column_int64(st, 27),
                              .s_uncertainty = column_number(st, 33),
                              .test_served_utc_ns = sqlite3_column_int64(st, 34),
                              .predicted_utc_ns = sqlite3_column_int64(st, 35),
                              .schedule_steps = sqlite3_column_int64(st, 36)};
    column_text(st, 2, r->team_name, sizeof r->team_name);
    column_text(st, 4, r->state, sizeof r->state);
    column_text(st, 7, r->rules_version, sizeof r->rules_version);
    column_text(st, 8, r->backend, sizeof r->backend);
    column_text(st, 10, r->device, sizeof r->device);
    column_text(st, 11, r->provenance, sizeof r->provenance);
    column_text(st, 14, r->verdict, sizeof r->verdict);
    column_text(st, 22, r->why, sizeof r->why);
    column_text(st, 28, r->entry_name, sizeof r->entry_name);
    column_text(st, 29, r->division, sizeof r->division);
    column_text(st, 30, r->round, sizeof r->round);
    column_text(st, 31, r->withdrawn, sizeof r->withdrawn);
    column_text(st, 32, r->withdrawn_why, sizeof r->withdrawn_why);
}

int eeb_srv_store_run_get(struct eeb_srv_store *s, int64_t id, struct eeb_srv_run *r, char *err,
                          size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s, "SELECT " ENTRY_COLUMNS "WHERE e.run_id = ?", &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found)
        read_entry(st, r);
    rc = done(db, st, step, err, errlen);
    return rc ? rc : found;
}

/* The power samples run id's links hold, and the seq of its last link
 * (-1: none). */
static int samples_held(struct eeb_rundb *db, int64_t id, uint64_t *samples, int64_t *last,
                        char *err, size_t errlen)
{
    sqlite3_stmt *st =
        prepare(db,
                "SELECT coalesce(sum(CASE WHEN kind = 'samples' THEN count END), 0), "
                "coalesce(max(seq), -1) FROM links WHERE run_id = ?",
                err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *samples = step == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
    *last = step == SQLITE_ROW ? sqlite3_column_int64(st, 1) : -1;
    return done(db, st, step, err, errlen);
}

int eeb_srv_store_run_links(struct eeb_srv_store *s, int64_t id, const struct eeb_rundb_link *links,
                            size_t n, uint64_t max_samples, enum eeb_link_verdict *verdict,
                            size_t *at, int64_t *next, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    if (rc)
        return rc;
    /* counted and stored under one lock, so that two requests of a run
     * at once cannot each pass the cap with the other's samples */
    pthread_mutex_lock(&s->links_lock);
    uint64_t held = 0, adding = 0;
    int64_t last = -1;
    if (max_samples && (rc = samples_held(db, id, &held, &last, err, errlen)) == EEB_OK) {
        for (size_t i = 0; i < n; i++) /* a link held already adds nothing */
            if (links[i].seq > last && links[i].kind == EEB_LINK_SAMPLES)
                adding += links[i].nsamples;
        if (held + adding > max_samples) {
            eeb_errf(err, errlen, EEB_EINVAL,
                     "run %lld holds %llu power samples and these links add %llu: more than the "
                     "%llu a run may store (eeb serve --max-samples)",
                     (long long)id, (unsigned long long)held, (unsigned long long)adding,
                     (unsigned long long)max_samples);
            rc = 1;
        }
    }
    if (rc == EEB_OK)
        rc = eeb_rundb_links_add(db, id, links, n, eeb_utc_ns(), verdict, at, next, err, errlen);
    pthread_mutex_unlock(&s->links_lock);
    return rc;
}

int eeb_srv_store_run_predictions_count(struct eeb_srv_store *s, int64_t id, int64_t *n, char *err,
                                        size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s, "SELECT count(*) FROM predictions WHERE run_id = ?", &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *n = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return done(db, st, step, err, errlen);
}

int eeb_srv_store_origin_owner(struct eeb_srv_store *s, const char *uuid, const char *head,
                               int64_t id, int64_t *owner, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "SELECT run_id FROM links WHERE kind = 'origin' AND run_id != ?1 "
                                 "AND (origin_uuid = ?2 OR head = ?3) LIMIT 1",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, head, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    *owner = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return done(db, st, step, err, errlen);
}

int eeb_srv_store_run_test_served(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "UPDATE team_runs SET test_served_utc_ns = ? WHERE run_id = ? "
                                 "AND test_served_utc_ns IS NULL",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_complete(struct eeb_srv_store *s, int64_t id, int need_end, char *err,
                               size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(
        s,
        "UPDATE team_runs SET state = 'complete', completed_utc_ns = ?1 "
        "WHERE run_id = ?2 AND state = 'registered' AND (?3 = 0 OR EXISTS "
        "(SELECT 1 FROM events WHERE run_id = ?2 AND kind = '" EEB_EVENT_FINETUNE_END "'))",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_int(st, 3, need_end);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_begin(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s,
                  "UPDATE team_runs SET begun_utc_ns = ? WHERE run_id = ? AND state = "
                  "'registered' AND begun_utc_ns IS NULL",
                  &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
}

/* How many of the n predictions are not held as they are: new, or
 * changed. */
static int64_t predictions_new(struct eeb_rundb *db, int64_t id, const int64_t *items,
                               const char *const *payloads, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(
        db, "SELECT count(*) FROM predictions WHERE run_id = ? AND item = ? AND payload = ?", err,
        errlen);
    if (!st)
        return EEB_EDB;
    int64_t fresh = 0;
    int step = SQLITE_DONE;
    for (size_t i = 0; i < n && step != SQLITE_ERROR; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, items[i]);
        sqlite3_bind_text(st, 3, payloads[i], -1, SQLITE_STATIC);
        if ((step = sqlite3_step(st)) == SQLITE_ROW)
            fresh += sqlite3_column_int64(st, 0) == 0;
        else
            step = SQLITE_ERROR;
    }
    int rc = done(db, st, step, err, errlen);
    return rc ? rc : fresh;
}

int eeb_srv_store_run_predictions(struct eeb_srv_store *s, int64_t id, const int64_t *items,
                                  const char *const *payloads, size_t n, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int64_t fresh = 0;
    int rc = conn(s, &db, err, errlen);
    /* predictions sent again as they were (a submission resumed) arrive
     * no later: only what changes moves their time */
    if (rc == EEB_OK && (fresh = predictions_new(db, id, items, payloads, n, err, errlen)) < 0)
        rc = (int)fresh;
    if (rc == EEB_OK)
        rc = eeb_rundb_predictions_add(db, id, items, payloads, n, err, errlen);
    sqlite3_stmt *st =
        rc || !fresh ? NULL
                     : statement(s, "UPDATE team_runs SET predicted_utc_ns = ? WHERE run_id = ?",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    return done(db, st, sqlite3_step(st), err, errlen);
}

int eeb_srv_store_run_predictions_each(struct eeb_srv_store *s, int64_t id,
                                       int (*fn)(void *arg, int64_t item, const char *payload),
                                       void *arg, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_predictions_each(db, id, fn, arg, err, errlen);
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
    sqlite3_stmt *st =
        prepare(db,
                "UPDATE team_runs SET state = 'scored', verdict = ?, s = ?, m_u = ?, "
                "m_t = ?, m_p = ?, m_s = ?, t_s = ?, energy_j = ?, why = ?, "
                "s_uncertainty = ?, scored_utc_ns = ? WHERE run_id = ? AND state = 'complete'",
                err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_text(st, 1, r->verdict, -1, SQLITE_STATIC);
    const double v[] = {r->s, r->m_u, r->m_t, r->m_p, r->m_s, r->t_s, r->energy_j};
    for (int i = 0; i < 7; i++)
        bind_number(st, 2 + i, v[i]);
    sqlite3_bind_text(st, 9, r->why, -1, SQLITE_STATIC);
    bind_number(st, 10, r->s_uncertainty);
    sqlite3_bind_int64(st, 11, eeb_utc_ns());
    sqlite3_bind_int64(st, 12, r->id);
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
    if ((rc = begin_write(db, err, errlen)))
        return rc;
    int moved = move_to_scored(db, r, err, errlen);
    rc = moved < 0 ? moved
         : moved   ? record_verdict(db, r->id, o, util_provenance, score_json, err, errlen)
                   : EEB_OK;
    rc = end_write(db, rc, err, errlen);
    return rc ? rc : moved;
}

/* ---- the leaderboard ---- */

/* A walk over runs: each row read as a run and given to fn. */
struct run_walk {
    int (*fn)(void *arg, const struct eeb_srv_run *r);
    void *arg;
};

static int run_row(sqlite3_stmt *st, void *ctx)
{
    const struct run_walk *w = ctx;
    struct eeb_srv_run r;
    read_entry(st, &r);
    return w->fn(w->arg, &r);
}

int eeb_srv_store_board(struct eeb_srv_store *s, const struct eeb_srv_board_filter *f,
                        int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg, char *err,
                        size_t errlen)
{
    /* passing runs by S, best first; then the rest (S NULL, which SQLite
     * sorts last in a descending order), newest first: entries_by_score
     * read backwards */
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "SELECT " ENTRY_COLUMNS "WHERE e.state = 'scored' AND r.task = ?1 "
                                 "AND e.withdrawn IS NULL AND e.official = 1 "
                                 "AND (?2 IS NULL OR e.provenance = ?2) "
                                 "AND (?3 IS NULL OR e.device = ?3) "
                                 "ORDER BY e.s DESC, e.run_id DESC LIMIT ?4",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, eeb_task_name((enum eeb_task)f->task), -1, SQLITE_STATIC);
    if (f->provenance)
        sqlite3_bind_text(st, 2, f->provenance, -1, SQLITE_STATIC);
    if (f->device)
        sqlite3_bind_text(st, 3, f->device, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : 1000);
    return each_row(db, st, run_row, &(struct run_walk){fn, arg}, err, errlen);
}

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
    column_text(st, 1, r->name, sizeof r->name);
    column_text(st, 2, r->rules_version, sizeof r->rules_version);
    column_text(st, 4, aggregate, sizeof aggregate);
    (void)eeb_round_aggregate_parse(aggregate, &r->aggregate);
    round_tasks_read((const char *)sqlite3_column_text(st, 9), r);
}

int eeb_srv_store_round_add(struct eeb_srv_store *s, const struct eeb_round *r, char *err,
                            size_t errlen)
{
    struct eeb_rundb *db;
    int rc = conn(s, &db, err, errlen);
    if (rc)
        return rc;
    char *tasks = round_tasks_json(r);
    if (!tasks)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    /* one statement: it is stored only if no round's time overlaps it */
    sqlite3_stmt *st = prepare(
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
    rc = done(db, st, step, err, errlen);
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
    sqlite3_stmt *st =
        statement(s,
                  "UPDATE rounds SET closed_utc_ns = ?1 WHERE name = ?2 AND closed_utc_ns IS "
                  "NULL AND opens_utc_ns <= ?1 AND closes_utc_ns > ?1",
                  &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    return changed(db, done(db, st, sqlite3_step(st), err, errlen));
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
    sqlite3_stmt *st =
        statement(s, "SELECT " ROUND_COLUMNS "ORDER BY opens_utc_ns", &db, &rc, err, errlen);
    if (!st)
        return rc;
    return each_row(db, st, round_row, &(struct round_walk){fn, arg}, err, errlen);
}

int eeb_srv_store_round_find(struct eeb_srv_store *s, const char *name, int open_only, int64_t *id,
                             struct eeb_round *r, char *err, size_t errlen)
{
    /* by name; or the one open now; or the last to open before now */
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s,
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
    rc = done(db, st, step, err, errlen);
    return rc ? rc : found;
}

/* The runs of entry e, registered first first, into e->runs. */
static int entry_runs(struct eeb_rundb *db, struct eeb_srv_entry *e, size_t max, char *err,
                      size_t errlen)
{
    sqlite3_stmt *st =
        prepare(db, "SELECT " ENTRY_COLUMNS "WHERE e.entry_id = ? ORDER BY e.run_id", err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, e->id);
    int step;
    e->nruns = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && e->nruns < max)
        read_entry(st, &e->runs[e->nruns++]);
    return done(db, st, step, err, errlen);
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
    column_text(st, 2, e->team_name, sizeof e->team_name);
    column_text(st, 3, e->name, sizeof e->name);
    column_text(st, 4, e->division, sizeof e->division);
    e->p_max_w = sqlite3_column_double(st, 5);
    column_text(st, 6, e->device, sizeof e->device);
    column_text(st, 7, e->backend, sizeof e->backend);
    column_text(st, 8, e->provenance, sizeof e->provenance);
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
    sqlite3_stmt *st = statement(s,
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
    rc = each_row(w.db, st, entry_row, &w, err, errlen);
    free(w.e.runs);
    return rc;
}

int eeb_srv_store_runs_going(struct eeb_srv_store *s, int task,
                             int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg,
                             char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "SELECT " ENTRY_COLUMNS "WHERE e.state != 'scored' AND "
                                 "r.task = ? AND e.withdrawn IS NULL ORDER BY e.run_id DESC "
                                 "LIMIT 100",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, eeb_task_name((enum eeb_task)task), -1, SQLITE_STATIC);
    return each_row(db, st, run_row, &(struct run_walk){fn, arg}, err, errlen);
}

int eeb_srv_store_run_seeds(struct eeb_srv_store *s, int64_t id, int64_t *handed, int64_t *used,
                            char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "SELECT (SELECT config ->> '$.server.round.seed' FROM runs WHERE "
                                 "id = ?1), (SELECT payload ->> '$." EEB_EVENT_KEY_SEED "' FROM "
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
    return done(db, st, step, err, errlen);
}

int eeb_srv_store_run_epochs(struct eeb_srv_store *s, int64_t id, int64_t *epochs, char *err,
                             size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "SELECT count(*) FROM events WHERE run_id = ? AND kind IN "
                                 "('" EEB_EVENT_EPOCH_END "', '" EEB_EVENT_EPOCH_PARTIAL "')",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *epochs = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return done(db, st, step, err, errlen);
}

int eeb_srv_store_run_sensor(struct eeb_srv_store *s, const struct eeb_srv_run *r, char *uri,
                             size_t n, char *err, size_t errlen)
{
    /* the server's meter's samples if it read one, else the run's own */
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s, "SELECT source FROM samples WHERE run_id = ? LIMIT 1", &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, r->meter_run ? r->meter_run : r->id);
    int step = sqlite3_step(st);
    uri[0] = '\0';
    if (step == SQLITE_ROW)
        column_text(st, 0, uri, n);
    return done(db, st, step, err, errlen);
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
    int rc = conn(s, &db, err, errlen);
    if (rc)
        return rc;
    if ((rc = begin_write(db, err, errlen)))
        return rc;
    int64_t now = eeb_utc_ns();
    int moved = 1; /* without an act, the line alone */
    sqlite3_stmt *st;
    if (act && (st = prepare(db, act, err, errlen))) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, target, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, reason, -1, SQLITE_STATIC);
        moved = changed(db, done(db, st, sqlite3_step(st), err, errlen));
        rc = moved < 0 ? moved : EEB_OK;
    } else if (act)
        rc = EEB_EDB;
    if (rc == EEB_OK && moved > 0 &&
        (st = prepare(db, "INSERT INTO audit (utc_ns, action, target, reason) VALUES (?, ?, ?, ?)",
                      err, errlen))) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, action, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, target, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
        rc = done(db, st, sqlite3_step(st), err, errlen);
    } else if (rc == EEB_OK && moved > 0)
        rc = EEB_EDB;
    rc = end_write(db, rc, err, errlen);
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
    column_text(st, 1, t.name, sizeof t.name);
    return w->fn(w->arg, &t);
}

int eeb_srv_store_teams_each(struct eeb_srv_store *s,
                             int (*fn)(void *arg, const struct eeb_srv_team *t), void *arg,
                             char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = statement(s,
                                 "SELECT t.id, t.name, t.created_utc_ns, "
                                 "coalesce(t.revoked_utc_ns, 0), (SELECT count(*) FROM "
                                 "team_runs WHERE team_id = t.id) FROM teams t ORDER BY t.id",
                                 &db, &rc, err, errlen);
    if (!st)
        return rc;
    return each_row(db, st, team_row, &(struct team_walk){fn, arg}, err, errlen);
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
    column_text(st, 2, a.action, sizeof a.action);
    column_text(st, 3, a.target, sizeof a.target);
    column_text(st, 4, a.reason, sizeof a.reason);
    return w->fn(w->arg, &a);
}

int eeb_srv_store_audit_each(struct eeb_srv_store *s,
                             int (*fn)(void *arg, const struct eeb_srv_audit *a), void *arg,
                             char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        statement(s, "SELECT id, utc_ns, action, target, reason FROM audit ORDER BY id", &db, &rc,
                  err, errlen);
    if (!st)
        return rc;
    return each_row(db, st, audit_row, &(struct audit_walk){fn, arg}, err, errlen);
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
    if ((rc = begin_write(db, err, errlen)))
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
    return end_write(db, rc, err, errlen);
}
