/*
 * store_int.h - what the store's files share (store.c, store_runs.c,
 * store_rounds.c, store_meter.c): the store itself, the calling thread's
 * connection, statements prepared and stepped, and a team's run read from
 * a row.  Nothing outside them includes it: server_store.h is the store's
 * face.
 */
#ifndef EEB_SERVER_STORE_INT_H
#define EEB_SERVER_STORE_INT_H

#include "server_store.h"

#include <pthread.h>
#include <sqlite3.h>

struct eeb_srv_store {
    char *path;
    pthread_key_t key;          /* the thread's struct eeb_rundb * */
    pthread_mutex_t links_lock; /* a run's samples counted and its links stored as one step */
};

/* The calling thread's connection, opened on first use. */
int eeb_srv_conn(struct eeb_srv_store *s, struct eeb_rundb **db, char *err, size_t errlen);
/* Prepares sql on db's connection or says why. */
sqlite3_stmt *eeb_srv_prepare(struct eeb_rundb *db, const char *sql, char *err, size_t errlen);
/* sql prepared on the calling thread's connection (*db), or NULL with *rc
 * the error. */
sqlite3_stmt *eeb_srv_statement(struct eeb_srv_store *s, const char *sql, struct eeb_rundb **db,
                                int *rc, char *err, size_t errlen);
/* Finalizes st after its last step rc: EEB_OK if it ran, else why not. */
int eeb_srv_done(struct eeb_rundb *db, sqlite3_stmt *st, int rc, char *err, size_t errlen);
/* Steps st to its end, each row given to row (a non-zero return stops the
 * walk and is returned), and finalizes it. */
int eeb_srv_each_row(struct eeb_rundb *db, sqlite3_stmt *st,
                     int (*row)(sqlite3_stmt *st, void *ctx), void *ctx, char *err, size_t errlen);
/* Begins a write transaction on db: the pool's writers queue on its lock. */
int eeb_srv_begin_write(struct eeb_rundb *db, char *err, size_t errlen);
/* Ends it: committed if rc is EEB_OK, else rolled back.  rc, or the
 * commit's error. */
int eeb_srv_end_write(struct eeb_rundb *db, int rc, char *err, size_t errlen);
/* Rows the last statement of db changed, or rc if it failed. */
int eeb_srv_changed(struct eeb_rundb *db, int rc);
/* A number bound or read, NAN as NULL. */
void eeb_srv_bind_number(sqlite3_stmt *st, int i, double v);
double eeb_srv_column_number(sqlite3_stmt *st, int i);
/* Column i's text into out, cut to n and still UTF-8. */
void eeb_srv_column_text(sqlite3_stmt *st, int i, char *out, size_t n);

/* The columns eeb_srv_read_entry reads, in this order. */
#define ENTRY_COLUMNS                                                                              \
    "e.run_id, e.team_id, t.name, r.task, e.state, r.t_max_s, r.p_max_w, r.rules_version, "        \
    "r.backend, e.official, e.device, e.provenance, e.registered_utc_ns, e.completed_utc_ns, "     \
    "e.verdict, e.s, e.m_u, e.m_t, e.m_p, e.m_s, e.t_s, e.energy_j, e.why, "                       \
    "(SELECT count(*) FROM links l WHERE l.run_id = e.run_id), "                                   \
    "(SELECT max(l.at_utc_ns) FROM links l WHERE l.run_id = e.run_id), "                           \
    "r.config ->> '$.power.meter_run', e.begun_utc_ns, e.entry_id, en.name, en.division, "         \
    "ro.name, e.withdrawn, e.withdrawn_why, e.s_uncertainty, e.test_served_utc_ns, "               \
    "e.predicted_utc_ns, e.schedule_steps, "                                                       \
    "(SELECT l.head FROM links l WHERE l.run_id = e.run_id ORDER BY l.seq DESC LIMIT 1), "         \
    "(SELECT l.head FROM links l WHERE l.run_id = r.config ->> '$.power.meter_run' "               \
    "ORDER BY l.seq DESC LIMIT 1), r.config ->> '$.sut.name', r.config ->> '$.sut.version' "       \
    "FROM team_runs e JOIN runs r ON r.id = e.run_id JOIN teams t ON t.id = e.team_id "            \
    "LEFT JOIN entries en ON en.id = e.entry_id LEFT JOIN rounds ro ON ro.id = en.round_id "

/* A row of ENTRY_COLUMNS read as a team's run. */
void eeb_srv_read_entry(sqlite3_stmt *st, struct eeb_srv_run *r);

/* A walk over runs: each row read as a run and given to fn. */
struct eeb_srv_run_walk {
    int (*fn)(void *arg, const struct eeb_srv_run *r);
    void *arg;
};
/* each_row's row for such a walk (ctx: the walk). */
int eeb_srv_run_row(sqlite3_stmt *st, void *ctx);

#endif
