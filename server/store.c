/*
 * store.c - the server's SQLite database: teams (their tokens as SHA-256
 * hashes only) and runs.  WAL, so readers never wait on the writer; one
 * connection per thread of the pool, every statement prepared.
 */
#include "server_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char schema[] = "CREATE TABLE IF NOT EXISTS teams ("
                             "  id INTEGER PRIMARY KEY,"
                             "  name TEXT NOT NULL UNIQUE,"
                             "  token_sha256 TEXT NOT NULL UNIQUE,"
                             "  created_utc_ns INTEGER NOT NULL);"
                             "CREATE TABLE IF NOT EXISTS runs ("
                             "  id INTEGER PRIMARY KEY,"
                             "  team_id INTEGER NOT NULL REFERENCES teams(id),"
                             "  task TEXT NOT NULL,"
                             "  state TEXT NOT NULL,"
                             "  rules_version TEXT NOT NULL,"
                             "  t_max_s REAL NOT NULL,"
                             "  p_max_w REAL NOT NULL,"
                             "  created_utc_ns INTEGER NOT NULL);";

struct store {
    char *path;
    pthread_key_t key; /* the thread's sqlite3 * */
};

static void close_conn(void *db)
{
    sqlite3_close_v2(db);
}

static int open_conn(const char *path, sqlite3 **db, char *err, size_t errlen)
{
    int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_busy_timeout(*db, 5000);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(*db, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON", NULL, NULL,
                          NULL);
    if (rc != SQLITE_OK) {
        eeb_errf(err, errlen, EEB_EDB, "%s: %s", path, *db ? sqlite3_errmsg(*db) : "out of memory");
        sqlite3_close_v2(*db);
        *db = NULL;
        return EEB_EDB;
    }
    return EEB_OK;
}

int store_open(const char *path, struct store **out, char *err, size_t errlen)
{
    sqlite3 *db;
    int rc = open_conn(path, &db, err, errlen);
    if (rc)
        return rc;
    if (sqlite3_exec(db, schema, NULL, NULL, NULL) != SQLITE_OK) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_close_v2(db);
        return rc;
    }
    sqlite3_close_v2(db);
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

sqlite3 *store_conn(struct store *s, char *err, size_t errlen)
{
    sqlite3 *db = pthread_getspecific(s->key);
    if (!db && open_conn(s->path, &db, err, errlen) == EEB_OK)
        pthread_setspecific(s->key, db);
    return db;
}

/* Prepares sql or says why, naming it. */
static sqlite3_stmt *prepare(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        eeb_errf(err, errlen, EEB_EDB, "%s", sqlite3_errmsg(db));
    return st;
}

static int done(sqlite3 *db, sqlite3_stmt *st, int rc, char *err, size_t errlen)
{
    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        eeb_errf(err, errlen, EEB_EDB, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? EEB_OK : EEB_EDB;
}

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
        snprintf(name, 65, "%s", (const char *)sqlite3_column_text(st, 1));
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

int store_run_register(sqlite3 *db, struct store_run *r, char *err, size_t errlen)
{
    sqlite3_stmt *st = prepare(db,
                               "INSERT INTO runs (team_id, task, state, rules_version, t_max_s, "
                               "p_max_w, created_utc_ns) VALUES (?, ?, 'registered', ?, ?, ?, ?)",
                               err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, r->team);
    sqlite3_bind_text(st, 2, eeb_task_name((enum eeb_task)r->task), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->rules_version, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 4, r->t_max_s);
    sqlite3_bind_double(st, 5, r->p_max_w);
    sqlite3_bind_int64(st, 6, eeb_utc_ns());
    int rc = done(db, st, sqlite3_step(st), err, errlen);
    if (rc == EEB_OK)
        r->id = sqlite3_last_insert_rowid(db);
    return rc;
}

int store_run_get(sqlite3 *db, int64_t id, struct store_run *r, char state[16], char *err,
                  size_t errlen)
{
    sqlite3_stmt *st = prepare(
        db, "SELECT team_id, task, state, t_max_s, p_max_w FROM runs WHERE id = ?", err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found) {
        enum eeb_task t = EEB_TASK_CLS;
        char why[96];
        eeb_task_parse((const char *)sqlite3_column_text(st, 1), &t, why, sizeof why);
        *r = (struct store_run){.id = id,
                                .team = sqlite3_column_int64(st, 0),
                                .task = (int)t,
                                .t_max_s = sqlite3_column_double(st, 3),
                                .p_max_w = sqlite3_column_double(st, 4)};
        snprintf(state, 16, "%s", (const char *)sqlite3_column_text(st, 2));
    }
    int rc = done(db, st, step, err, errlen);
    return rc ? rc : found;
}

int store_run_move(sqlite3 *db, int64_t id, const char *from, const char *to, char *err,
                   size_t errlen)
{
    sqlite3_stmt *st =
        prepare(db, "UPDATE runs SET state = ? WHERE id = ? AND state = ?", err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_text(st, 1, to, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    sqlite3_bind_text(st, 3, from, -1, SQLITE_STATIC);
    int rc = done(db, st, sqlite3_step(st), err, errlen);
    return rc ? rc : sqlite3_changes(db);
}

static int valid_name(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > 64)
        return 0;
    for (const char *c = name; *c; c++)
        if (!(('a' <= *c && *c <= 'z') || ('A' <= *c && *c <= 'Z') || ('0' <= *c && *c <= '9') ||
              strchr("_.-", *c)))
            return 0;
    return 1;
}

int eeb_server_add_team(const char *path, const char *name, char token[EEB_TOKEN_HEX], char *err,
                        size_t errlen)
{
    if (!valid_name(name))
        return eeb_errf(err, errlen, EEB_EINVAL, "team name '%s': 1 to 64 of A-Z a-z 0-9 _ . -",
                        name);
    unsigned char raw[32];
    int rc = eeb_random_bytes(raw, sizeof raw, err, errlen);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    struct store *s;
    if ((rc = store_open(path, &s, err, errlen)))
        return rc;
    sqlite3 *db = store_conn(s, err, errlen);
    sqlite3_stmt *st = db ? prepare(db,
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
            rc = done(db, st, step, err, errlen);
        }
    }
    store_close(s);
    memset(raw, 0, sizeof raw);
    if (rc)
        token[0] = '\0';
    return rc;
}
