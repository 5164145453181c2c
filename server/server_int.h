/*
 * server_int.h - what the server's files share: the store (store.c), the
 * test sets it holds (testset.c), the HTTP plumbing handlers answer with
 * (http.c), and the handlers: a run's stages (runs.c), the leaderboard and
 * the pages (board.c).
 */
#ifndef EEB_SERVER_INT_H
#define EEB_SERVER_INT_H

#include "rundb/eeb_rundb.h"
#include "scoring/eeb_score.h"
#include "eeb_server.h"

#include <microhttpd.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <pthread.h>

/* ---- the store ---- */

struct store;

/* A thread's connections to the database: the run database's, and a plain
 * one for the server's own tables. */
struct conn {
    struct eeb_rundb *run;
    sqlite3 *h;
};

/* Opens (and, if new, creates) the database at path. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);
void store_close(struct store *s);
const char *store_path(const struct store *s);

/* The calling thread's connections, opened on first use and closed when
 * the thread ends. */
struct conn *store_conn(struct store *s, char *err, size_t errlen);

/* The team whose token this is: its id (0 if none) and name. */
int store_team_by_token(sqlite3 *db, const char *token, int64_t *team, char name[65], char *err,
                        size_t errlen);

int store_count_teams(sqlite3 *db, int64_t *n, char *err, size_t errlen);

/* A team's run: its budgets, what the team declared, where it stands, and
 * once scored, the verdict. */
struct store_run {
    int64_t id, team;
    char team_name[65];
    int task, official;
    double t_max_s, p_max_w;
    char rules_version[16], backend[64], device[64], provenance[16];
    char state[16]; /* registered, complete, scored */
    int64_t registered_utc_ns, completed_utc_ns;
    char verdict[16]; /* pass, fail, invalid, aborted */
    double s, m_u, m_t, m_p, m_s, t_s, energy_j;
    char why[768];
};

/* Creates the run (in the run tables, with config_json) and its entry;
 * fills r->id and r->registered_utc_ns. */
int store_run_register(struct conn *c, struct store_run *r, const char *config_json, char *err,
                       size_t errlen);

/* Run id: found (1) into r, or not (0); or an error. */
int store_run_get(sqlite3 *db, int64_t id, struct store_run *r, char *err, size_t errlen);

/* registered -> complete: 1 if it moved, 0 if it was not registered. */
int store_run_complete(sqlite3 *db, int64_t id, char *err, size_t errlen);

/* complete -> scored, with r's verdict: 1 if it moved, else 0. */
int store_run_scored(sqlite3 *db, const struct store_run *r, char *err, size_t errlen);

/* The scored runs of a task, passing ones by S, best first, then the
 * rest; provenance and device NULL for any.  A non-zero return from fn
 * stops the walk and is returned. */
struct store_board_filter {
    int task;
    const char *provenance, *device;
    int limit;
};
int store_board(sqlite3 *db, const struct store_board_filter *f,
                int (*fn)(void *arg, const struct store_run *r), void *arg, char *err,
                size_t errlen);

/* ---- the test sets ---- */

/* One test item as the server holds it: the truth never leaves it. */
struct held_item {
    char id[EEB_SHARD_MAX_ID + 1];
    uint64_t index;
    int label;
    int nboxes;
    struct eeb_box *boxes;
};

struct testset {
    enum eeb_task task;
    int classes;
    char *inputs;            /* the copy without labels that is served */
    struct held_item *items; /* by id */
    size_t n;
};

/* Reads the test set at path (of task) and writes its inputs, labels and
 * boxes stripped, to inputs_path. */
int testset_load(struct testset *t, enum eeb_task task, const char *path, const char *inputs_path,
                 char *err, size_t errlen);
void testset_free(struct testset *t);
const struct held_item *testset_find(const struct testset *t, const char *id);

/* A fine-tune set, as the server names it to the runs that must train on
 * it: its SHA-256 and size. */
struct finetune_set {
    char sha256[EEB_SHA256_HEX];
    uint64_t items;
};

/* Names the fine-tune set at path, which must hold task's data. */
int finetune_set_name(struct finetune_set *ft, enum eeb_task task, const char *path, char *err,
                      size_t errlen);

/* ---- HTTP ---- */

enum route {
    R_HEALTHZ,
    R_METRICS,
    R_WHOAMI,
    R_RUNS,
    R_RUN,
    R_POWER,
    R_COMPLETE,
    R_TEST,
    R_PREDICTIONS,
    R_SCORE,
    R_BOARD,
    R_PAGE_BOARD,
    R_PAGE_RUN,
    R_OTHER,
    R_COUNT
};
#define N_CODES   11
#define N_BUCKETS 1024

struct eeb_server {
    struct MHD_Daemon *daemon;
    struct store *store;
    struct eeb_server_config cfg;
    char rules_version[16];
    struct eeb_weights weights[EEB_TASK_COUNT];
    struct eeb_power_rule power_rule;
    struct testset *test[EEB_TASK_COUNT];         /* the held test sets, or NULL */
    struct finetune_set finetune[EEB_TASK_COUNT]; /* sha256 "": none named */
    atomic_ullong requests[R_COUNT][N_CODES];
    /* the leaderboard's answers and pages, kept until a run is scored (board.c) */
    atomic_ulong scored; /* runs scored since start */
    pthread_mutex_t board_lock;
    struct board_cache {
        char key[200];
        unsigned long scored; /* as it was when the answer was made */
        const char *type;     /* its content type (static) */
        char *body;
        size_t len;
    } board_cache[16];
    unsigned board_next;  /* the slot to replace next */
    pthread_mutex_t lock; /* the buckets */
    struct bucket {
        int64_t team; /* 0: free */
        double tokens;
        int64_t last_ns;
    } buckets[N_BUCKETS];
};

/* One request: its body so far. */
struct request {
    char *body;
    size_t len;
    int too_big;
};

/* What a handler is given. */
struct call {
    struct eeb_server *s;
    struct MHD_Connection *c;
    enum route route;
    struct conn *db;
    const struct request *q;
    int64_t id; /* the {id} in the path */
    int64_t team;
    char team_name[65];
    struct store_run run; /* routes on a run: the team's own run {id} */
};

/* Answers with body (copied) of content type `type`. */
enum MHD_Result call_reply(struct call *k, int code, const char *type, const char *body,
                           size_t len);
/* Answers with o (taken) as JSON. */
enum MHD_Result call_json(struct call *k, int code, json_t *o);
/* Answers {"error": message[, "field": field]}. */
enum MHD_Result call_fail(struct call *k, int code, const char *field, const char *message);
/* Answers with the file at path. */
enum MHD_Result call_file(struct call *k, const char *type, const char *path);
/* The request body as a JSON object, or NULL with the 400 sent. */
json_t *call_body(struct call *k, enum MHD_Result *sent);
/* A query-string argument, or NULL. */
const char *call_arg(struct call *k, const char *name);
/* v as a JSON number, or null if it is NAN. */
json_t *number_or_null(double v);

/* ---- handlers ---- */

/* 1 if s is 1..max letters, digits and characters of punct: a team's
 * name ("_.-"); the names a run declares (device, backend, design) and the
 * leaderboard is filtered by (DECLARED). */
#define DECLARED "_.:=,/+-"
int text_ok(const char *s, size_t max, const char *punct);

enum MHD_Result api_register(struct call *k);
enum MHD_Result api_run(struct call *k);
enum MHD_Result api_power(struct call *k);
enum MHD_Result api_complete(struct call *k);
enum MHD_Result api_test(struct call *k);
enum MHD_Result api_predictions(struct call *k);
enum MHD_Result api_score(struct call *k);
enum MHD_Result api_board(struct call *k);
enum MHD_Result page_board(struct call *k);
enum MHD_Result page_run(struct call *k);
void board_cache_free(struct eeb_server *s);

#endif
