/*
 * rundb.c - the run database (see eeb_rundb.h).
 *
 * Sections: the schema and its migrations; the sets of tables and their
 * versions (the run tables', and another room's: eeb_rundb_tables.h);
 * opening (recognizing, refusing or upgrading a file); writes; reads.  Only
 * prepared statements with bound parameters touch user data.
 */
#include "eeb_rundb.h"
#include "eeb_rundb_tables.h"
#include "rundb_int.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Schema ------------------------------------------------------------
 *
 * migrations[v] takes a database from user_version v to v + 1.  Append a
 * migration to change the schema; never edit a released one.
 */
static const char *const migrations[EEB_RUNDB_SCHEMA] = {
    /* v0 -> v1: the initial schema. */
    "CREATE TABLE runs ("
    "  id INTEGER PRIMARY KEY,"
    "  uuid TEXT NOT NULL UNIQUE CHECK (length(uuid) = 36),"
    "  task TEXT NOT NULL CHECK (task IN ('cls', 'det', 'video')),"
    "  backend TEXT NOT NULL,"
    "  config TEXT NOT NULL CHECK (json_valid(config)),"
    "  t_max_s REAL NOT NULL CHECK (t_max_s > 0),"
    "  p_max_w REAL NOT NULL CHECK (p_max_w > 0),"
    "  rules_version TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('init', 'deploy', 'finetune', 'stopped', 'test',"
    "                                       'score', 'submit', 'done', 'failed')),"
    "  created_utc_ns INTEGER NOT NULL,"
    "  finished_utc_ns INTEGER"
    ") STRICT;"
    "CREATE TABLE events ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  t_mono_ns INTEGER NOT NULL,"
    "  t_utc_ns INTEGER NOT NULL,"
    "  kind TEXT NOT NULL,"
    "  payload TEXT CHECK (payload IS NULL OR json_valid(payload))"
    ") STRICT;"
    "CREATE INDEX events_by_run ON events(run_id, t_mono_ns);"
    "CREATE TABLE samples ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  source TEXT NOT NULL,"
    "  t_mono_ns INTEGER NOT NULL,"
    "  t_utc_ns INTEGER NOT NULL,"
    "  volts REAL,"
    "  amps REAL,"
    "  watts REAL NOT NULL,"
    "  flags INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "CREATE INDEX samples_by_run ON samples(run_id, t_mono_ns);"
    "CREATE TABLE predictions ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  item INTEGER NOT NULL,"
    "  payload TEXT NOT NULL CHECK (json_valid(payload)),"
    "  PRIMARY KEY (run_id, item)"
    ") STRICT;"
    "CREATE TABLE results ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  name TEXT NOT NULL,"
    "  value REAL NOT NULL,"
    "  unit TEXT NOT NULL,"
    "  provenance TEXT NOT NULL CHECK (provenance IN ('measured', 'counter', 'modeled',"
    "                                                 'computed')),"
    "  PRIMARY KEY (run_id, name)"
    ") STRICT;",
    /* v1 -> v2: a run may be a standalone power log (`eeb power log`): task
     * 'none' and no budgets.  SQLite cannot change a CHECK in place, so the
     * table is rebuilt (its "making other kinds of table schema changes"
     * procedure); foreign keys are off while migrations run, so dropping the
     * old table deletes nothing, and the children's REFERENCES runs name
     * the new one once it is renamed. */
    "CREATE TABLE runs_v2 ("
    "  id INTEGER PRIMARY KEY,"
    "  uuid TEXT NOT NULL UNIQUE CHECK (length(uuid) = 36),"
    "  task TEXT NOT NULL CHECK (task IN ('cls', 'det', 'video', 'none')),"
    "  backend TEXT NOT NULL,"
    "  config TEXT NOT NULL CHECK (json_valid(config)),"
    /* CASE, not OR: a CHECK that is NULL passes, and NULL > 0 is NULL */
    "  t_max_s REAL CHECK (CASE WHEN t_max_s IS NULL THEN task = 'none' ELSE t_max_s > 0 END),"
    "  p_max_w REAL CHECK (CASE WHEN p_max_w IS NULL THEN task = 'none' ELSE p_max_w > 0 END),"
    "  rules_version TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('init', 'deploy', 'finetune', 'stopped', 'test',"
    "                                       'score', 'submit', 'done', 'failed')),"
    "  created_utc_ns INTEGER NOT NULL,"
    "  finished_utc_ns INTEGER"
    ") STRICT;"
    "INSERT INTO runs_v2 SELECT * FROM runs;"
    "DROP TABLE runs;"
    "ALTER TABLE runs_v2 RENAME TO runs;",
    /* v2 -> v3: a run received in chunks (the evaluation server's) records
     * each chunk's digest, so that a chunk sent again is recognised. */
    "CREATE TABLE chunks ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL CHECK (seq >= 0),"
    "  sha256 TEXT NOT NULL CHECK (length(sha256) = 64),"
    "  samples INTEGER NOT NULL,"
    "  events INTEGER NOT NULL,"
    "  PRIMARY KEY (run_id, seq)"
    ") STRICT;",
    /* v3 -> v4: a figure may be declared (a replayed trace's: measured by
     * whoever made the file, not by the run); the CHECK is rebuilt as in
     * v2. */
    "CREATE TABLE results_v4 ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  name TEXT NOT NULL,"
    "  value REAL NOT NULL,"
    "  unit TEXT NOT NULL,"
    "  provenance TEXT NOT NULL CHECK (provenance IN ('measured', 'counter', 'declared',"
    "                                                 'modeled', 'computed')),"
    "  PRIMARY KEY (run_id, name)"
    ") STRICT;"
    "INSERT INTO results_v4 SELECT * FROM results;"
    "DROP TABLE results;"
    "ALTER TABLE results_v4 RENAME TO results;",
    /* v4 -> v5: every record a run writes is a link of its hash chain
     * (chain.c); a server stores the links it receives, which replace the
     * chunks it recognised resends by. */
    "CREATE TABLE links ("
    "  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
    "  seq INTEGER NOT NULL CHECK (seq >= 0),"
    "  kind TEXT NOT NULL CHECK (kind IN ('origin', 'event', 'samples')),"
    "  count INTEGER NOT NULL CHECK (count >= 0),"
    "  head TEXT NOT NULL CHECK (length(head) = 64),"
    "  origin_uuid TEXT CHECK (origin_uuid IS NULL OR length(origin_uuid) = 36),"
    "  origin_config TEXT CHECK (origin_config IS NULL OR length(origin_config) = 64),"
    "  at_utc_ns INTEGER NOT NULL,"
    "  first_row INTEGER,"
    "  PRIMARY KEY (run_id, seq)"
    ") STRICT;"
    "DROP TABLE chunks;",
};

static const char *const state_names[EEB_RUN_STATE_COUNT] = {
    "init", "deploy", "finetune", "stopped", "test", "score", "submit", "done", "failed",
};

const char *eeb_rundb_state_name(enum eeb_run_state state)
{
    return (unsigned)state < EEB_RUN_STATE_COUNT ? state_names[state] : "?";
}

/* ---- Sets of tables ----------------------------------------------------
 *
 * The run tables are the first set, versioned by PRAGMA user_version as
 * they were before there were others; another set's version is its row in
 * schema_sets, a table made with the first such set.  One code path
 * (migrate_tables) takes every set of a file to its version.
 */
static const struct eeb_rundb_tables run_tables = {
    .name = "runs", .version = EEB_RUNDB_SCHEMA, .migrations = migrations};

static const char sets_table[] = "CREATE TABLE IF NOT EXISTS schema_sets ("
                                 "  name TEXT PRIMARY KEY,"
                                 "  version INTEGER NOT NULL CHECK (version > 0)"
                                 ") STRICT";

int rundb_error(struct eeb_rundb *db, const char *what, char *err, size_t errlen)
{
    return eeb_errf(err, errlen, EEB_EDB, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
}

struct sqlite3 *eeb_rundb_sqlite(struct eeb_rundb *db)
{
    return db->h;
}

/* Reads one integer from a single-row query ("PRAGMA user_version"). */
static int query_int(sqlite3 *h, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *out = sqlite3_column_int64(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The version of the set t the file holds (0: none yet). */
static int tables_version(struct eeb_rundb *db, const struct eeb_rundb_tables *t, int64_t *v)
{
    if (t == &run_tables)
        return query_int(db->h, "PRAGMA user_version", v);
    int64_t kept = 0;
    *v = 0;
    int rc = query_int(db->h,
                       "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                       "name = 'schema_sets'",
                       &kept);
    sqlite3_stmt *st;
    if (rc != SQLITE_OK || !kept ||
        (rc = sqlite3_prepare_v2(db->h, "SELECT version FROM schema_sets WHERE name = ?", -1, &st,
                                 NULL)) != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Records that the file holds version v of the set t. */
static int record_version(struct eeb_rundb *db, const struct eeb_rundb_tables *t, int64_t v)
{
    if (t == &run_tables) {
        char sql[96];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %lld; PRAGMA application_id = %d",
                 (long long)v, EEB_RUNDB_APPLICATION_ID);
        return sqlite3_exec(db->h, sql, NULL, NULL, NULL);
    }
    sqlite3_stmt *st;
    int rc = sqlite3_exec(db->h, sets_table, NULL, NULL, NULL);
    if (rc != SQLITE_OK ||
        (rc = sqlite3_prepare_v2(db->h,
                                 "INSERT OR REPLACE INTO schema_sets (name, version) VALUES (?, ?)",
                                 -1, &st, NULL)) != SQLITE_OK)
        return rc;
    sqlite3_bind_text(st, 1, t->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, v);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* What messages call the set t: "run database" or "server tables". */
static const char *tables_label(const struct eeb_rundb_tables *t, char *out, size_t n)
{
    if (t == &run_tables)
        return "run database";
    snprintf(out, n, "%s tables", t->name);
    return out;
}

/* Takes the set t from the version the file holds (*from) to t->version,
 * inside migrate()'s transaction. */
static int migrate_tables(struct eeb_rundb *db, const struct eeb_rundb_tables *t, int64_t *from,
                          char *err, size_t errlen)
{
    char what[192], label[96];
    if (tables_version(db, t, from) != SQLITE_OK)
        return rundb_error(db, "reading the schema version", err, errlen);
    for (int64_t v = *from; v < t->version; v++) {
        if (sqlite3_exec(db->h, t->migrations[v], NULL, NULL, NULL) != SQLITE_OK) {
            if (t == &run_tables)
                snprintf(what, sizeof what, "migration to schema v%lld", (long long)v + 1);
            else
                snprintf(what, sizeof what, "migration of the %s to v%lld",
                         tables_label(t, label, sizeof label), (long long)v + 1);
            return rundb_error(db, what, err, errlen);
        }
        if (record_version(db, t, v + 1) != SQLITE_OK)
            return rundb_error(db, "setting the schema version", err, errlen);
    }
    return EEB_OK;
}

/* ---- Opening ---------------------------------------------------------- */

/* The run tables, then tables (if not NULL), each to its version, in one
 * transaction: a file is migrated whole or left as it was. */
static int migrate(struct eeb_rundb *db, const struct eeb_rundb_tables *tables, char *err,
                   size_t errlen)
{
    /* IMMEDIATE takes the write lock before we re-read the version, so two
     * processes opening a new file at once do not both create tables. */
    if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return rundb_error(db, "cannot lock for migration", err, errlen);
    int64_t from = 0, tables_from = 0;
    int rc = migrate_tables(db, &run_tables, &from, err, errlen);
    if (rc == EEB_OK && tables)
        rc = migrate_tables(db, tables, &tables_from, err, errlen);
    if (rc)
        goto out;
    /* The rebuilt tables of a file that held rows must still hold together. */
    int runs_moved = from < EEB_RUNDB_SCHEMA,
        tables_moved = tables && tables_from < tables->version;
    int64_t broken = 0;
    if (from > 0 && (runs_moved || tables_moved) &&
        query_int(db->h, "SELECT count(*) FROM pragma_foreign_key_check", &broken) != SQLITE_OK) {
        rc = rundb_error(db, "checking foreign keys after migrating", err, errlen);
        goto out;
    }
    if (broken) {
        char label[96];
        rc = runs_moved ? eeb_errf(err, errlen, EEB_EDB,
                                   "%s: migrating from schema v%d left %lld rows without their "
                                   "run; the file is left as it was",
                                   db->path, (int)from, (long long)broken)
                        : eeb_errf(err, errlen, EEB_EDB,
                                   "%s: migrating its %s from v%lld left %lld rows without the "
                                   "row they refer to; the file is left as it was",
                                   db->path, tables_label(tables, label, sizeof label),
                                   (long long)tables_from, (long long)broken);
        goto out;
    }
    if (sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = rundb_error(db, "committing the migration", err, errlen);
out:
    if (rc)
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* Whether a file recognized as eeb's may be opened with tables: a newer set
 * is refused; an older one needs READWRITE (only reads happen here). */
static int recognize_tables(struct eeb_rundb *db, const struct eeb_rundb_tables *t,
                            enum eeb_rundb_mode mode, char *err, size_t errlen)
{
    int64_t v;
    char label[96];
    if (tables_version(db, t, &v) != SQLITE_OK)
        return rundb_error(db, "reading the schema versions", err, errlen);
    if (v > t->version)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "%s: %s schema v%lld was written by a newer eeb (this eeb reads up to "
                        "v%d); left untouched",
                        db->path, tables_label(t, label, sizeof label), (long long)v, t->version);
    if (v < t->version && mode == EEB_RUNDB_READONLY)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "%s: %s schema v%lld needs migrating to v%d; open it read-write", db->path,
                        tables_label(t, label, sizeof label), (long long)v, t->version);
    return EEB_OK;
}

/*
 * Decides what the file is before anything is written to it: a new or empty
 * database (migrate), an eeb database (migrate if older), or something else
 * (refuse).  Only reads happen here, so a refused file is left untouched.
 */
static int recognize(struct eeb_rundb *db, enum eeb_rundb_mode mode,
                     const struct eeb_rundb_tables *tables, char *err, size_t errlen)
{
    int64_t app_id, version, objects;
    int rc = query_int(db->h, "PRAGMA application_id", &app_id);
    if (rc == SQLITE_NOTADB)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: not an SQLite database, so not an eeb run database (left untouched)",
                        db->path);
    if (rc != SQLITE_OK || query_int(db->h, "PRAGMA user_version", &version) != SQLITE_OK ||
        query_int(db->h, "SELECT count(*) FROM sqlite_schema", &objects) != SQLITE_OK)
        return rundb_error(db, "reading the database header", err, errlen);

    if (app_id == 0 && version == 0 && objects == 0) {
        if (mode == EEB_RUNDB_READONLY)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: empty database, not a run database",
                            db->path);
        return EEB_OK; /* new: migrate() creates the schema */
    }
    if (app_id != EEB_RUNDB_APPLICATION_ID)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: an SQLite database but not an eeb run database (application_id "
                        "0x%08llx, %lld schema objects; left untouched)",
                        db->path, (unsigned long long)app_id, (long long)objects);
    if (version < 1)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: eeb run database with no schema version; left untouched", db->path);
    if ((rc = recognize_tables(db, &run_tables, mode, err, errlen)))
        return rc;
    return tables ? recognize_tables(db, tables, mode, err, errlen) : EEB_OK;
}

/* A reader of a WAL database makes its -wal and -shm files, and only a
 * connection that may write removes them when it is the last to close: so a
 * reader of a file without a log beside it opens read-write where it may
 * (PRAGMA query_only keeps it a reader) and leaves the folder as it found
 * it.  A file with a log beside it (a run still writing, or a copy taken
 * with its log) is opened read-only: a read-write connection would fold the
 * log into the file when it closed, and the file is not the reader's to
 * change. */
static int open_flags(const char *path, enum eeb_rundb_mode mode)
{
    if (mode == EEB_RUNDB_READWRITE)
        return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    char wal[4096];
    struct stat st;
    int has_log = snprintf(wal, sizeof wal, "%s-wal", path) < (int)sizeof wal &&
                  stat(wal, &st) == 0 && st.st_size > 0;
    return !has_log && access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
}

int eeb_rundb_open(const char *path, enum eeb_rundb_mode mode, struct eeb_rundb **out, char *err,
                   size_t errlen)
{
    return eeb_rundb_open_with(path, mode, NULL, out, err, errlen);
}

int eeb_rundb_open_with(const char *path, enum eeb_rundb_mode mode,
                        const struct eeb_rundb_tables *tables, struct eeb_rundb **out, char *err,
                        size_t errlen)
{
    struct eeb_rundb *db = calloc(1, sizeof *db);
    if (!db || !(db->path = strdup(path))) {
        free(db);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    int rc = mode == EEB_RUNDB_READONLY ? eeb_check_input(path, err, errlen)
                                        : eeb_check_output(path, err, errlen);
    if (rc)
        goto fail;
    if (sqlite3_open_v2(path, &db->h, open_flags(path, mode) | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = rundb_error(db, "cannot open", err, errlen);
        goto fail;
    }
    if (mode == EEB_RUNDB_READONLY &&
        sqlite3_exec(db->h, "PRAGMA query_only = 1", NULL, NULL, NULL) != SQLITE_OK) {
        rc = rundb_error(db, "opening read-only", err, errlen);
        goto fail;
    }
    sqlite3_extended_result_codes(db->h, 0);
    /* A run's own writers (its stages and the sampler, a connection each)
     * take turns at the write lock; on an overloaded machine the holder
     * can be off the CPU, with its fsync queued, for seconds: waiting 5 s
     * once failed a run that way, so wait long before giving up. */
    sqlite3_busy_timeout(db->h, 30000);
    if ((rc = recognize(db, mode, tables, err, errlen)))
        goto fail;
    /* Only now that the file is ours may anything be written to it. */
    if (mode == EEB_RUNDB_READWRITE) {
        /* WAL lets `eeb check` read while a run writes; synchronous=FULL
         * makes each committed batch of samples survive a power cut. */
        if (sqlite3_exec(db->h, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL", NULL, NULL,
                         NULL) != SQLITE_OK) {
            rc = rundb_error(db, "enabling WAL", err, errlen);
            goto fail;
        }
        if ((rc = migrate(db, tables, err, errlen)))
            goto fail;
    }
    /* After migrating: a migration that rebuilds a table needs them off. */
    if (sqlite3_exec(db->h, "PRAGMA foreign_keys = ON", NULL, NULL, NULL) != SQLITE_OK) {
        rc = rundb_error(db, "enabling foreign keys", err, errlen);
        goto fail;
    }
    *out = db;
    return EEB_OK;
fail:
    eeb_rundb_close(db);
    return rc;
}

const char *eeb_rundb_path(const struct eeb_rundb *db)
{
    return db->path;
}

void eeb_rundb_close(struct eeb_rundb *db)
{
    if (!db)
        return;
    sqlite3_finalize(db->insert_sample);
    sqlite3_close(db->h);
    free(db->path);
    free(db);
}

/* ---- Writes ----------------------------------------------------------- */

/* Prepares sql, or reports which statement failed. */
int rundb_prepare(struct eeb_rundb *db, const char *sql, sqlite3_stmt **st, char *err,
                  size_t errlen)
{
    if (sqlite3_prepare_v2(db->h, sql, -1, st, NULL) != SQLITE_OK)
        return rundb_error(db, "preparing a statement", err, errlen);
    return EEB_OK;
}

/* Steps a bound write statement once and finalizes it. */
int rundb_step_done(struct eeb_rundb *db, sqlite3_stmt *st, const char *what, char *err,
                    size_t errlen)
{
    int rc = sqlite3_step(st) == SQLITE_DONE ? EEB_OK : rundb_error(db, what, err, errlen);
    sqlite3_finalize(st);
    return rc;
}

/* Ends a batch's transaction: commits it if rc is EEB_OK, else (or if the
 * commit fails) rolls it back; returns the batch's status. */
int rundb_end_batch(struct eeb_rundb *db, int rc, const char *what, char *err, size_t errlen)
{
    if (rc == EEB_OK && sqlite3_exec(db->h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = rundb_error(db, what, err, errlen);
    if (rc)
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

static void bind_optional(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v))
        sqlite3_bind_null(st, i);
    else
        sqlite3_bind_double(st, i, v);
}

int eeb_rundb_run_create(struct eeb_rundb *db, const struct eeb_run_new *run, int64_t *id,
                         char uuid[37], char *err, size_t errlen)
{
    char u[37];
    sqlite3_stmt *st;
    int rc;
    if (!run->power_log && (unsigned)run->task >= EEB_TASK_COUNT)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: run task %d is not a task", db->path,
                        (int)run->task);
    if (run->uuid && strlen(run->uuid) != 36)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: '%s' is not a run's uuid", db->path,
                        run->uuid);
    if (run->uuid)
        memcpy(u, run->uuid, sizeof u);
    else if ((rc = eeb_uuid4(u, err, errlen)))
        return rc;
    if ((rc = rundb_prepare(
             db,
             "INSERT INTO runs (uuid, task, backend, config, t_max_s, p_max_w,"
             " rules_version, state, created_utc_ns) VALUES (?, ?, ?, ?, ?, ?, ?, 'init', ?)",
             &st, err, errlen)))
        return rc;
    sqlite3_bind_text(st, 1, u, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, run->power_log ? "none" : eeb_task_name(run->task), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, run->backend, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, run->config_json ? run->config_json : "{}", -1, SQLITE_TRANSIENT);
    bind_optional(st, 5, run->t_max_s);
    bind_optional(st, 6, run->p_max_w);
    sqlite3_bind_text(st, 7, run->rules_version, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 8, eeb_utc_ns());
    if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return rundb_error(db, "beginning a run", err, errlen);
    }
    rc = rundb_step_done(db, st, "creating a run", err, errlen);
    *id = sqlite3_last_insert_rowid(db->h);
    if (rc == EEB_OK && !run->received)
        rc =
            rundb_chain_origin(db, *id, u, run->config_json ? run->config_json : "{}", err, errlen);
    if ((rc = rundb_end_batch(db, rc, "committing a new run", err, errlen)))
        return rc;
    memcpy(uuid, u, sizeof u);
    return EEB_OK;
}

/* A statement that must change exactly one row of an existing run. */
static int one_row(struct eeb_rundb *db, sqlite3_stmt *st, int64_t run, const char *what, char *err,
                   size_t errlen)
{
    int rc = rundb_step_done(db, st, what, err, errlen);
    if (rc == EEB_OK && sqlite3_changes(db->h) != 1)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: no run %lld", db->path, what,
                      (long long)run);
    return rc;
}

int eeb_rundb_run_set_state(struct eeb_rundb *db, int64_t run, enum eeb_run_state state, char *err,
                            size_t errlen)
{
    sqlite3_stmt *st;
    int rc;
    if ((unsigned)state >= EEB_RUN_STATE_COUNT)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: run state %d is not a state", db->path,
                        (int)state);
    if ((rc = rundb_prepare(db, "UPDATE runs SET state = ?, finished_utc_ns = ? WHERE id = ?", &st,
                            err, errlen)))
        return rc;
    sqlite3_bind_text(st, 1, state_names[state], -1, SQLITE_STATIC);
    if (state == EEB_RUN_DONE || state == EEB_RUN_FAILED)
        sqlite3_bind_int64(st, 2, eeb_utc_ns());
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, run);
    return one_row(db, st, run, "setting the run state", err, errlen);
}

int rundb_insert_event(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_event *e,
                       int64_t *row, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = rundb_prepare(db,
                           "INSERT INTO events (run_id, t_mono_ns, t_utc_ns, kind, payload)"
                           " VALUES (?, ?, ?, ?, ?)",
                           &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, e->t_mono_ns);
    sqlite3_bind_int64(st, 3, e->t_utc_ns);
    sqlite3_bind_text(st, 4, e->kind, -1, SQLITE_TRANSIENT);
    if (e->payload)
        sqlite3_bind_text(st, 5, e->payload, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 5);
    rc = rundb_step_done(db, st, "adding an event", err, errlen);
    *row = sqlite3_last_insert_rowid(db->h);
    return rc;
}

int eeb_rundb_event_add(struct eeb_rundb *db, int64_t run, int64_t t_mono_ns, int64_t t_utc_ns,
                        const char *kind, const char *payload_json, char *err, size_t errlen)
{
    const struct eeb_rundb_event e = {t_mono_ns, t_utc_ns, kind, payload_json};
    /* in the caller's transaction if it has one; else IMMEDIATE, so that
     * the chain's tip is read and extended under the write lock */
    int own = sqlite3_get_autocommit(db->h);
    if (own && sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return rundb_error(db, "beginning an event", err, errlen);
    int64_t row;
    int rc = rundb_insert_event(db, run, &e, &row, err, errlen);
    if (rc == EEB_OK)
        rc = rundb_chain_event(db, run, &e, row, err, errlen);
    return own ? rundb_end_batch(db, rc, "committing an event", err, errlen) : rc;
}

int rundb_insert_samples(struct eeb_rundb *db, int64_t run, const char *source,
                         const struct eeb_sample *s, size_t n, int64_t *first, char *err,
                         size_t errlen)
{
    int rc;
    if (!db->insert_sample &&
        (rc = rundb_prepare(db,
                            "INSERT INTO samples (run_id, source, t_mono_ns, t_utc_ns, volts, amps,"
                            " watts, flags) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            &db->insert_sample, err, errlen)))
        return rc;
    sqlite3_stmt *st = db->insert_sample;
    rc = EEB_OK;
    /* Bindings outlive sqlite3_reset: the batch's run and source once. */
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
    for (size_t i = 0; i < n && rc == EEB_OK; i++) {
        if (!isfinite(s[i].watts)) {
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: sample %zu from %s: watts is not finite",
                          db->path, i, source);
            break;
        }
        sqlite3_bind_int64(st, 3, s[i].t_mono_ns);
        sqlite3_bind_int64(st, 4, s[i].t_utc_ns);
        bind_optional(st, 5, s[i].volts);
        bind_optional(st, 6, s[i].amps);
        sqlite3_bind_double(st, 7, s[i].watts);
        sqlite3_bind_int64(st, 8, s[i].flags);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = rundb_error(db, "adding a sample", err, errlen);
        else if (i == 0)
            *first = sqlite3_last_insert_rowid(db->h);
        sqlite3_reset(st);
    }
    sqlite3_clear_bindings(st);
    return rc;
}

int eeb_rundb_samples_add(struct eeb_rundb *db, int64_t run, const char *source,
                          const struct eeb_sample *s, size_t n, char *err, size_t errlen)
{
    if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return rundb_error(db, "beginning a sample batch", err, errlen);
    int64_t first;
    int rc = rundb_insert_samples(db, run, source, s, n, &first, err, errlen);
    if (rc == EEB_OK)
        rc = rundb_chain_samples(db, run, source, s, n, first, err, errlen);
    return rundb_end_batch(db, rc, "committing a sample batch", err, errlen);
}

int eeb_rundb_predictions_add(struct eeb_rundb *db, int64_t run, const int64_t *items,
                              const char *const *payloads, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = rundb_prepare(
        db, "INSERT OR REPLACE INTO predictions (run_id, item, payload) VALUES (?, ?, ?)", &st, err,
        errlen);
    if (rc)
        return rc;
    if (sqlite3_exec(db->h, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return rundb_error(db, "beginning a prediction batch", err, errlen);
    }
    sqlite3_bind_int64(st, 1, run);
    for (size_t i = 0; i < n && rc == EEB_OK; i++) {
        sqlite3_bind_int64(st, 2, items[i]);
        sqlite3_bind_text(st, 3, payloads[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = rundb_error(db, "storing a prediction", err, errlen);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rundb_end_batch(db, rc, "committing a prediction batch", err, errlen);
}

int eeb_rundb_predictions_each(struct eeb_rundb *db, int64_t run,
                               int (*fn)(void *arg, int64_t item, const char *payload), void *arg,
                               char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db, "SELECT item, payload FROM predictions WHERE run_id = ? ORDER BY item",
                      &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = fn(arg, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1))))
            break;
    if (!rc && step != SQLITE_DONE)
        rc = rundb_error(db, "reading predictions", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int eeb_rundb_result_set(struct eeb_rundb *db, int64_t run, const char *name, double value,
                         const char *unit, const char *provenance, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    if (!isfinite(value))
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: result '%s' = %g is not finite", db->path,
                        name, value);
    int rc = rundb_prepare(db,
                           "INSERT OR REPLACE INTO results (run_id, name, value, unit, provenance)"
                           " VALUES (?, ?, ?, ?, ?)",
                           &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(st, 3, value);
    sqlite3_bind_text(st, 4, unit, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, provenance, -1, SQLITE_TRANSIENT);
    return rundb_step_done(db, st, "storing a result", err, errlen);
}

/* ---- Reads ------------------------------------------------------------ */

static double column_optional(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

int eeb_rundb_samples_each(struct eeb_rundb *db, int64_t run, int64_t t0, int64_t t1,
                           int (*fn)(void *arg, const char *source, const struct eeb_sample *s),
                           void *arg, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db,
                      "SELECT source, t_mono_ns, t_utc_ns, volts, amps, watts, flags FROM samples"
                      " WHERE run_id = ? AND t_mono_ns >= ? AND t_mono_ns < ?"
                      " ORDER BY t_mono_ns, rowid",
                      &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, t0);
    sqlite3_bind_int64(st, 3, t1);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct eeb_sample s = {
            .t_mono_ns = sqlite3_column_int64(st, 1),
            .t_utc_ns = sqlite3_column_int64(st, 2),
            .volts = column_optional(st, 3),
            .amps = column_optional(st, 4),
            .watts = sqlite3_column_double(st, 5),
            .flags = (uint32_t)sqlite3_column_int64(st, 6),
        };
        if ((rc = fn(arg, (const char *)sqlite3_column_text(st, 0), &s)))
            break;
    }
    if (!rc && step != SQLITE_DONE)
        rc = rundb_error(db, "reading samples", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

static void copy_text(sqlite3_stmt *st, int i, char *out, size_t n)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(out, n, "%s", t ? (const char *)t : "");
}

int eeb_rundb_run_ids(struct eeb_rundb *db, int64_t **ids, size_t *n, char *err, size_t errlen)
{
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *st;
    int rc = rundb_prepare(db, "SELECT id FROM runs ORDER BY id", &st, err, errlen);
    size_t cap = 0;
    int step = SQLITE_DONE;
    while (rc == EEB_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            int64_t *more = realloc(*ids, (cap = cap ? cap * 2 : 16) * sizeof *more);
            if (!more) {
                rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", db->path);
                break;
            }
            *ids = more;
        }
        (*ids)[(*n)++] = sqlite3_column_int64(st, 0);
    }
    if (rc == EEB_OK && step != SQLITE_DONE)
        rc = rundb_error(db, "listing the runs", err, errlen);
    sqlite3_finalize(st);
    if (rc) {
        free(*ids);
        *ids = NULL;
        *n = 0;
    }
    return rc;
}

int eeb_rundb_run_get(struct eeb_rundb *db, int64_t id, struct eeb_run_row *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db,
                      "SELECT id, uuid, task, backend, config, t_max_s, p_max_w, rules_version,"
                      " state, created_utc_ns, finished_utc_ns FROM runs"
                      " WHERE id = ?1 OR (?1 = 0 AND id = (SELECT max(id) FROM runs))",
                      &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        out->id = sqlite3_column_int64(st, 0);
        copy_text(st, 1, out->uuid, sizeof out->uuid);
        copy_text(st, 2, out->task, sizeof out->task);
        copy_text(st, 3, out->backend, sizeof out->backend);
        out->config = strdup((const char *)sqlite3_column_text(st, 4));
        out->t_max_s = column_optional(st, 5);
        out->p_max_w = column_optional(st, 6);
        copy_text(st, 7, out->rules_version, sizeof out->rules_version);
        copy_text(st, 8, out->state, sizeof out->state);
        out->created_utc_ns = sqlite3_column_int64(st, 9);
        out->finished_utc_ns = sqlite3_column_int64(st, 10);
        rc =
            out->config ? EEB_OK : eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", db->path);
    } else if (step == SQLITE_DONE) {
        rc = id ? eeb_errf(err, errlen, EEB_EINVAL, "%s: no run %lld", db->path, (long long)id)
                : eeb_errf(err, errlen, EEB_EINVAL, "%s: no runs yet", db->path);
    } else {
        rc = rundb_error(db, "reading a run", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

void eeb_rundb_run_row_free(struct eeb_run_row *row)
{
    free(row->config);
    row->config = NULL;
}

int eeb_rundb_events_each(struct eeb_rundb *db, int64_t run,
                          int (*fn)(void *arg, int64_t t_mono_ns, int64_t t_utc_ns,
                                    const char *kind, const char *payload),
                          void *arg, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = rundb_prepare(db,
                           "SELECT t_mono_ns, t_utc_ns, kind, payload FROM events WHERE run_id = ?"
                           " ORDER BY t_mono_ns, id",
                           &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        if ((rc = fn(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                     (const char *)sqlite3_column_text(st, 2),
                     (const char *)sqlite3_column_text(st, 3))))
            break;
    if (!rc && step != SQLITE_DONE)
        rc = rundb_error(db, "reading events", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int eeb_rundb_result_get(struct eeb_rundb *db, int64_t run, const char *name, double *value,
                         char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = rundb_prepare(db, "SELECT value FROM results WHERE run_id = ? AND name = ?", &st, err,
                           errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_TRANSIENT);
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        *value = sqlite3_column_double(st, 0);
    else if (step == SQLITE_DONE)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: run %lld has no result '%s'", db->path,
                      (long long)run, name);
    else
        rc = rundb_error(db, "reading a result", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

int eeb_rundb_info(struct eeb_rundb *db, struct eeb_rundb_info *out, char *err, size_t errlen)
{
    static const struct {
        const char *sql;
        size_t offset;
    } counts[] = {
        {"SELECT count(*) FROM runs", offsetof(struct eeb_rundb_info, runs)},
        {"SELECT count(*) FROM events", offsetof(struct eeb_rundb_info, events)},
        {"SELECT count(*) FROM samples", offsetof(struct eeb_rundb_info, samples)},
        {"SELECT count(*) FROM predictions", offsetof(struct eeb_rundb_info, predictions)},
        {"SELECT count(*) FROM results", offsetof(struct eeb_rundb_info, results)},
    };
    struct eeb_rundb_info info;
    memset(&info, 0, sizeof info);
    int64_t v;
    if (query_int(db->h, "PRAGMA user_version", &v) != SQLITE_OK)
        return rundb_error(db, "reading the schema version", err, errlen);
    info.schema = (int)v;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (query_int(db->h, counts[i].sql, (int64_t *)((char *)&info + counts[i].offset)) !=
            SQLITE_OK)
            return rundb_error(db, "counting rows", err, errlen);

    sqlite3_stmt *st;
    int rc = rundb_prepare(db, "SELECT state, count(*) FROM runs GROUP BY state", &st, err, errlen);
    if (rc)
        return rc;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        for (int k = 0; k < EEB_RUN_STATE_COUNT; k++)
            if (strcmp(name, state_names[k]) == 0)
                info.runs_by_state[k] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    *out = info;
    return EEB_OK;
}
