/*
 * server_int.h - what the server's files share: the store (store.c) that
 * the request handlers (http.c) call with their thread's connection.
 */
#ifndef EEB_SERVER_INT_H
#define EEB_SERVER_INT_H

#include "eeb_server.h"

#include <sqlite3.h>

struct store;

/* Opens (and, if new, creates) the database at path. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);
void store_close(struct store *s);

/* The calling thread's connection, opened on first use and closed when
 * the thread ends. */
sqlite3 *store_conn(struct store *s, char *err, size_t errlen);

/* The team whose token this is: its id (0 if none) and name. */
int store_team_by_token(sqlite3 *db, const char *token, int64_t *team, char name[65], char *err,
                        size_t errlen);

int store_count_teams(sqlite3 *db, int64_t *n, char *err, size_t errlen);

/* A new run of team's for task, with the budgets the server sets. */
struct store_run {
    int64_t id, team;
    int task;
    double t_max_s, p_max_w;
    const char *rules_version;
};
int store_run_register(sqlite3 *db, struct store_run *r, char *err, size_t errlen);

/* Run id: found (1) into r and state, or not (0); or an error. */
int store_run_get(sqlite3 *db, int64_t id, struct store_run *r, char state[16], char *err,
                  size_t errlen);

/* Moves run id from state `from` to `to`: 1 if it was in `from`, else 0. */
int store_run_move(sqlite3 *db, int64_t id, const char *from, const char *to, char *err,
                   size_t errlen);

#endif
