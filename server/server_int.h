/*
 * server_int.h - what the server's files share: the store (server_store.h,
 * the only way to the database), the test sets it holds (testset.c), the
 * HTTP plumbing handlers answer with (http.c), and the handlers: a run's
 * stages (runs.c), the leaderboard and the pages (board.c, ranking*.c,
 * runlist.c, scatter.c), the stations' agents and what operators see of
 * them (agent.c, stations.c).  Shared names
 * are eeb_srv_* (EEB_SRV_*); eeb_server.h holds the public eeb_server_*.
 */
#ifndef EEB_SERVER_INT_H
#define EEB_SERVER_INT_H

#include "common/eeb_json.h"
#include "power/eeb_power.h"
#include "scoring/eeb_score.h"
#include "eeb_server.h"
#include "server_store.h"

#include <microhttpd.h>
#include <jansson.h>
#include <stdatomic.h>
#include <pthread.h>

/* ---- the test sets ---- */

/* One test item as the server holds it: the truth never leaves it. */
struct eeb_srv_held_item {
    char id[EEB_SHARD_MAX_ID + 1];
    uint64_t index;
    int label;
    int nboxes;
    struct eeb_box *boxes;
};

struct eeb_srv_testset {
    enum eeb_task task;
    int classes;
    int frames, w, h, c;             /* its items' shape */
    int secret;                      /* the official runs' set: served under keyed names */
    char *inputs;                    /* the copy without labels that is served */
    struct eeb_srv_held_item *items; /* by id */
    size_t n;
};

/* Reads the test set at path (of task) and writes its inputs, labels and
 * boxes stripped, to inputs_path: the secret set (key: the server's) under
 * names and in an order made by the key, a practice set (key NULL) as it
 * is in its file. */
int eeb_srv_testset_load(struct eeb_srv_testset *t, enum eeb_task task, const char *path,
                         const char *inputs_path, const uint8_t *key, char *err, size_t errlen);
void eeb_srv_testset_free(struct eeb_srv_testset *t);
/* The item of that id, or NULL. */
const struct eeb_srv_held_item *eeb_srv_testset_find(const struct eeb_srv_testset *t,
                                                     const char *id);

/* M_s of run's stored predictions (no truth) against t's truth, counted
 * in memory: the labels are in no record.  NAN, with why, if they cannot
 * give it (an item missing, a prediction not the server's). */
int eeb_srv_testset_m_s(const struct eeb_srv_testset *t, struct eeb_srv_store *store, int64_t run,
                        double *m_s, char *why, size_t whylen, char *err, size_t errlen);
/* files.c: the server's secrets on disk.  EEB_OK if the file at path (a
 * `what`: "test set") is its owner's alone, or is not there; else an error
 * naming it, its mode, and `chmod 600` to mend it. */
int eeb_srv_file_private(const char *path, const char *what, char *err, size_t errlen);
/* The same of the database db and its -wal and -shm. */
int eeb_srv_database_private(const char *db, char *err, size_t errlen);

/* A fine-tune set, as the server names it to the runs that must train on
 * it: its SHA-256 and size. */
struct eeb_srv_finetune_set {
    char sha256[EEB_SHA256_HEX];
    uint64_t items;
};

/* A base model, as the server holds it: its SHA-256 and its network,
 * which a modeled run's device is modeled on. */
struct eeb_srv_base_model {
    char sha256[EEB_SHA256_HEX];
    struct eeb_net *net;
};

/* Reads the base model at path, which must be task's. */
int eeb_srv_base_model_load(struct eeb_srv_base_model *m, enum eeb_task task, const char *path,
                            char *err, size_t errlen);

/* Names the fine-tune set at path, which must hold task's data. */
int eeb_srv_finetune_set_name(struct eeb_srv_finetune_set *ft, enum eeb_task task, const char *path,
                              char *err, size_t errlen);

/* ---- HTTP ---- */

enum eeb_srv_route {
    EEB_SRV_R_HEALTHZ,
    EEB_SRV_R_METRICS,
    EEB_SRV_R_WHOAMI,
    EEB_SRV_R_RUNS,
    EEB_SRV_R_RUN,
    EEB_SRV_R_LINKS,
    EEB_SRV_R_BEGIN,
    EEB_SRV_R_COMPLETE,
    EEB_SRV_R_TEST,
    EEB_SRV_R_PREDICTIONS,
    EEB_SRV_R_SCORE,
    EEB_SRV_R_RECORD,
    EEB_SRV_R_ABANDON,
    EEB_SRV_R_BOARD,
    EEB_SRV_R_PAGE_BOARD,
    EEB_SRV_R_PAGE_RUN,
    EEB_SRV_R_STATION,
    EEB_SRV_R_RUN_LIST,
    EEB_SRV_R_PAGE_RUNS,
    EEB_SRV_R_OTHER,
    EEB_SRV_R_COUNT
};
#define EEB_SRV_N_CODES      12   /* the statuses /metrics counts (http.c) */
#define EEB_SRV_N_BUCKETS    1024 /* teams the rate limit tells apart */
#define EEB_SRV_CLOCK_SIXTHS 6    /* a station agent's clock window is kept in sixths (agent.c) */
#define EEB_SRV_LIVE_PAGES   32   /* live runs whose pages are kept at once (board.c) */

/* Director mode: a meter the server reads for one official run, itself
 * (src, sampled by sampler) or through its station's agent. */
#define EEB_SRV_METERS 16
struct eeb_srv_meter {
    int64_t meter_run; /* the power log its samples go to (0: a free slot) */
    int64_t run;       /* the run it measures (0: not registered yet) */
    char source[256];  /* the meter's URI */
    double rate_hz;
    double update_interval_s; /* the meter's own (0: unknown) */
    char provenance[16];
    int64_t heard_ns; /* the server's monotonic time its run last sent links */
    int begun;        /* its run asked to begin its fine-tune */
    struct eeb_power_source *src;
    struct eeb_sampler *sampler;
    /* through an agent: */
    int agent;                      /* its station's index + 1 (0: none) */
    int64_t from_ns, until_ns;      /* the samples it keeps, on the server's monotonic clock
                                     * (until 0: to now, the run not complete yet) */
    int64_t last_ns, last_utc_ns;   /* the last sample kept, on the server's clocks */
    uint64_t kept, failed, dropped; /* samples stored; the meter's failed reads and dropped
                                     * samples while it measured */
    int inflight;                   /* the agent's batches being stored into it */
    int closing;                    /* 1: it takes no more samples; 2: being let go */
    struct eeb_power_hold hold;     /* the agent's readings held to the uncertainty limit */
    unsigned events;                /* the agent's faults recorded (bounded) */
    /* a ranging pass on the run's workload (ranging.c): */
    int can_range;         /* its meter has ranges (an agent's says so) */
    int range_want;        /* the phase the run asked for: 1 begin, 2 end (0: none) */
    int range_done;        /* the phase the meter reached */
    int range_busy;        /* the server's own meter is being ranged */
    char range_err[256];   /* the agent's meter failed the phase asked ("" if not) */
    char range_json[1024]; /* what the last phase set, as answered */
};

/* A station's agent (`eeb power agent`), as the server last heard it. */
struct eeb_srv_agent {
    char key_sha256[EEB_SHA256_HEX]; /* of its key; "" for a station the server reads */
    char session[40];                /* its log's uuid: a new one is a new agent clock */
    int64_t heard_ns;                /* the server's monotonic time of its last batch (0: never) */
    int64_t offset_ns;               /* the agent's clock to the server's: the least seen lately */
    int64_t least_ns[EEB_SRV_CLOCK_SIXTHS]; /* the least of each sixth of the clock window
                                             * (INT64_MAX: no batch) */
    int sixth;                              /* the newest */
    int64_t sixth_at_ns;                    /* when it began, on the server's monotonic clock */
    int busy;                               /* a batch of its is being taken in */
    int64_t last_t_ns;                      /* on the agent's clock: its last sample taken in */
    char source[256], provenance[16];
    double rate_hz, update_interval_s;
    uint64_t failed, dropped; /* its meter's counts, as its session last said */
    int64_t last_fault_t_ns;  /* on the agent's clock: its last read fault taken in */
    int can_range;            /* its meter has ranges, as it last said */
};

/* The restarts with runs in flight the server keeps in mind (the latest). */
#define EEB_SRV_RESTARTS 64

struct eeb_server {
    struct MHD_Daemon *daemon;
    struct eeb_srv_store *store;
    struct eeb_server_config cfg;
    char rules_version[16];
    struct eeb_weights weights[EEB_TASK_COUNT];
    struct eeb_power_rule power_rule;
    struct eeb_srv_testset *test[EEB_TASK_COUNT];         /* the held test sets, or NULL */
    struct eeb_srv_testset *practice[EEB_TASK_COUNT];     /* the rehearsals' sets, or NULL */
    struct eeb_srv_finetune_set finetune[EEB_TASK_COUNT]; /* sha256 "": none named */
    struct eeb_srv_base_model model[EEB_TASK_COUNT];      /* sha256 "": none named */
    atomic_ullong requests[EEB_SRV_R_COUNT][EEB_SRV_N_CODES];
    /* the leaderboard's answers and pages, kept until a run is scored (board.c) */
    atomic_ulong changes; /* runs registered, completed or scored since start, and the
                           * organizer's acts seen */
    _Atomic int64_t audit_seen, audit_checked_ns; /* the audit log's last act, and when read */
    atomic_ullong samples_received;               /* power samples taken in since start: runs'
                                                   * links and station agents' batches */
    pthread_mutex_t board_lock;
    struct eeb_srv_board_cache {
        char key[200];
        unsigned long changes; /* as it was when the answer was made */
        const char *type;      /* its content type (static) */
        char *body;
        size_t len;
    } board_cache[16];
    unsigned board_next; /* the slot to replace next */
    /* the pages of runs not scored yet (board.c): each made at most once a
     * second, and kept while nothing more of its run arrives */
    pthread_mutex_t live_lock;
    pthread_cond_t live_made; /* a page made: those waiting for its first look again */
    struct eeb_srv_live_page {
        int64_t run;                /* 0: a free slot */
        int64_t links, predictions; /* what had arrived of it when it was made, */
        char state[16];             /* and the run's state then */
        int64_t made_ns, used_ns;   /* monotonic: when made (0: never), last served */
        int making;                 /* a thread is making it anew: it is not replaced */
        char *report;               /* the run's report (NULL: none made yet) */
        size_t len;
    } live[EEB_SRV_LIVE_PAGES];
    /* the runs in flight that have stopped, ended by a thread of its own
     * (settle.c) */
    pthread_t settler;
    int64_t started_utc_ns; /* this server's start */
    atomic_int taken_up;    /* the runs in flight at its start taken up: agents' samples are
                             * taken in from then */
    int64_t restarts[EEB_SRV_RESTARTS]; /* the starts it found runs in flight at, in order */
    size_t nrestarts;
    int settling;               /* the thread runs */
    pthread_mutex_t score_lock; /* one run judged at a time (score.c) */
    pthread_mutex_t settle_lock;
    pthread_cond_t settle_wake;
    int settle_stop;
    pthread_mutex_t lock; /* the buckets, the meters and the agents */
    struct eeb_srv_meter meters[EEB_SRV_METERS];
    struct eeb_srv_agent agents[EEB_SERVER_STATIONS]; /* by station */
    struct eeb_srv_bucket {
        int64_t team; /* 0: free */
        double tokens;
        int64_t last_ns;
    } buckets[EEB_SRV_N_BUCKETS];
    /* what operators are told of each agent station (stations.c): in the
     * log as it changes, and on /metrics; s->lock held */
    struct eeb_srv_station_status {
        uint64_t received; /* samples new to the server since start */
        int silent;        /* past its allowance since last heard (said in the log) */
    } station_status[EEB_SERVER_STATIONS];
    struct eeb_srv_watch { /* the thread that notices an agent falling silent */
        pthread_t thread;
        int running, stop;
        pthread_mutex_t lock;
        pthread_cond_t wake;
    } watch;
};

/* One request: its body so far. */
struct eeb_srv_request {
    char *body;
    size_t len;
    int too_big;
};

/* What a handler is given. */
struct eeb_srv_call {
    struct eeb_server *s;
    struct MHD_Connection *c;
    enum eeb_srv_route route;
    const struct eeb_srv_request *q;
    int64_t id; /* the {id} in the path */
    int64_t team;
    char team_name[EEB_SRV_TEAM_NAME];
    int station;            /* a station's agent calling: its index */
    struct eeb_srv_run run; /* routes on a run: the team's own run {id} */
    int64_t quota_day;      /* the UTC day a quota was taken from, to give it back to */
};

/* A line of the server's log (its config's log; none if NULL), after the
 * UTC time. */
__attribute__((format(printf, 2, 3))) void eeb_srv_log(struct eeb_server *s, const char *fmt, ...);

/* Answers with body (copied) of content type `type`. */
enum MHD_Result eeb_srv_call_reply(struct eeb_srv_call *k, int code, const char *type,
                                   const char *body, size_t len);
/* Answers with o (taken) as JSON. */
enum MHD_Result eeb_srv_call_json(struct eeb_srv_call *k, int code, json_t *o);
/* Answers {"error": message[, "field": field]}. */
enum MHD_Result eeb_srv_call_fail(struct eeb_srv_call *k, int code, const char *field,
                                  const char *message);
/* Answers with the file at path. */
enum MHD_Result eeb_srv_call_file(struct eeb_srv_call *k, const char *type, const char *path);
/* The request body as a JSON object, or NULL with the 400 sent. */
json_t *eeb_srv_call_body(struct eeb_srv_call *k, enum MHD_Result *sent);
/* A query-string argument, or NULL. */
const char *eeb_srv_call_arg(struct eeb_srv_call *k, const char *name);
/* fields.c: a body's fields read.  A fault names the field and what is
 * wrong with it; each reader returns 0, or -1 with the fault written. */
struct eeb_srv_fault {
    char field[96], message[160];
};
__attribute__((format(printf, 3, 4))) int eeb_srv_bad(struct eeb_srv_fault *f, const char *field,
                                                      const char *fmt, ...);
/* An integer within [lo, hi]. */
int eeb_srv_int_field(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                      struct eeb_srv_fault *f);
/* A finite number within [lo, hi]. */
int eeb_srv_number_field(json_t *v, const char *field, double lo, double hi, double *out,
                         struct eeb_srv_fault *f);
/* A meter's reading within what a board's supply may read (watts a
 * number, volts and amps a number or null for one the meter does not
 * give: NAN). */
enum eeb_srv_reading { EEB_SRV_WATTS, EEB_SRV_VOLTS, EEB_SRV_AMPS };
int eeb_srv_reading_field(json_t *v, const char *field, enum eeb_srv_reading kind, double *out,
                          struct eeb_srv_fault *f);
/* "system": {"name", "version" (optional)}, the system under test as it
 * names itself (the team's text: kept printable where it is stored); *name
 * NULL if v is absent. */
int eeb_srv_system_field(json_t *v, const char **name, const char **version,
                         struct eeb_srv_fault *f);
/* Answers the fault with a 400 naming its field. */
enum MHD_Result eeb_srv_fail_fault(struct eeb_srv_call *k, const struct eeb_srv_fault *f);

/* meter.c: director mode.  The index of team's station, or -1. */
int eeb_srv_station(const struct eeb_server *s, const char *team);
/* The meter of station opened (its agent heard from lately), and its
 * power log run made, into m. */
int eeb_srv_meter_open(struct eeb_server *s, int station, struct eeb_srv_meter *m, char *err,
                       size_t errlen);
/* m measuring, held by the server in a slot of its own until
 * eeb_srv_meter_stop (or _drop); on an error m is closed. */
int eeb_srv_meter_start(struct eeb_server *s, struct eeb_srv_meter *m, char *err, size_t errlen);
/* A server started again: the meter of run r in flight (station's) taken
 * up where its log stops, in a slot of its own: an agent's as it was (its
 * samples of the gap come next), the server's own reopened, sampling into
 * the same log; none for a complete run the server reads itself. */
struct eeb_srv_in_flight;
int eeb_srv_meter_resume(struct eeb_server *s, int station, const struct eeb_srv_in_flight *r,
                         char *err, size_t errlen);
/* Whether run's meter is being read, and when its last reading was
 * taken into *last_ns (the server's monotonic clock; 0: none, or its
 * samples cannot be stored). */
int eeb_srv_meter_last_read(struct eeb_server *s, int64_t run, int64_t *last_ns);
/* The meter of meter_run measures run: the run is registered. */
void eeb_srv_meter_bind(struct eeb_server *s, int64_t meter_run, int64_t run);
/* Run sent links now, or (begun) asked to begin its fine-tune: its meter
 * is not idle. */
void eeb_srv_meter_heard(struct eeb_server *s, int64_t run, int begun);
/* The meter of meter_run let go at once: its run was not registered. */
void eeb_srv_meter_drop(struct eeb_server *s, int64_t meter_run);
/* An opened meter closed without sampling, its power log done. */
void eeb_srv_meter_close(struct eeb_server *s, struct eeb_srv_meter *m);
/* The meter of run stopped now; nothing if it has none.  An
 * agent's is held until its samples up to now have arrived. */
void eeb_srv_meter_stop(struct eeb_server *s, int64_t run);
/* Lets the meter of run go once its samples reach need_utc_ns (the
 * server's clock): at once for the server's own, an agent's once its
 * samples have come or a few seconds after its run stopped.  1 if it is
 * let go (or there was none), 0 if an agent's samples are still to come:
 * ask again. */
int eeb_srv_meter_settle(struct eeb_server *s, int64_t run, int64_t need_utc_ns);
/* Every meter let go: the server stops. */
void eeb_srv_meters_stop(struct eeb_server *s);
/* s->lock held: slot i takes no more samples; 1 if the caller is to let
 * it go now (eeb_srv_meter_finish), 0 if the last batch in it, or whoever
 * is letting it go, does. */
int eeb_srv_meter_close_slot(struct eeb_server *s, int i);
/* Slot i let go (s->lock not held): its sampler stopped, or an agent's
 * counts stored, its power log done; then the slot freed, so that whoever
 * waits for it to be gone finds its record whole. */
void eeb_srv_meter_finish(struct eeb_server *s, int i);

/* An agent heard from longer ago than this does not answer (it sends twice
 * a second): a run is not registered on it, and the log says it fell
 * silent. */
#define EEB_SRV_AGENT_SILENT_NS 3000000000LL

/* stations.c: what operators see of the stations' agents.  A batch of n
 * samples x (on the agent's clock, of session) heard from station's agent
 * at mono, before the agent's state takes it in (s->lock held): the
 * samples new to the server counted (eeb_samples_received_total, and the
 * station's own count), and the log told when the agent is first heard or
 * heard again after falling silent. */
void eeb_srv_station_heard(struct eeb_server *s, int station, const char *session,
                           const struct eeb_sample *x, size_t n, int64_t mono);
/* The thread that logs an agent silent past its allowance, started if the
 * server has an agent station, and stopped (both from http.c). */
int eeb_srv_stations_watch(struct eeb_server *s, char *err, size_t errlen);
void eeb_srv_stations_unwatch(struct eeb_server *s);
/* The stations' lines of /metrics into out (at most n bytes): what was
 * written, as snprintf counts it. */
size_t eeb_srv_stations_metrics(struct eeb_server *s, char *out, size_t n);

/* agent.c: director mode through a station's agent.  Each agent station's
 * key read from its file ("agent:FILE"), kept as its SHA-256. */
int eeb_srv_agents_load(struct eeb_server *s, char *err, size_t errlen);
/* The station whose agent's key this is, or -1. */
int eeb_srv_agent_by_key(struct eeb_server *s, const char *key);
/* The meter slot of the run station's agent measures, or -1; s->lock held. */
int eeb_srv_agent_measuring(const struct eeb_server *s, int station);

/* stream.c: an official run's fine-tune as it reached the server: its
 * window on the server's clock (the run's placed by the least delay of
 * its links), whole if the chain holds its begin and end. */
struct eeb_srv_window {
    int whole;
    int64_t begin_utc_ns, end_utc_ns;
};

/* Whether official run's fine-tune reached the server as it went (each
 * link within allowance_s of when the run wrote it, or of a restart of the
 * server's after that (restarts: UTC ns, in order), none before, and the
 * whole not held back from the begin the server gave at begun_utc_ns): ""
 * in why if so, else the reason; its window into *window.  An error only
 * for a database that cannot be read. */
int eeb_srv_stream_check(const char *db_path, int64_t run, int64_t begun_utc_ns, double allowance_s,
                         const int64_t *restarts, size_t nrestarts, struct eeb_srv_window *window,
                         char *why, size_t whylen, char *err, size_t errlen);

/* schedule.c: whether run r fine-tuned as the server saw it, which its
 * test inputs and its labels' count wait for: an official run's stream
 * as stream.c judges it, whole; its steps its schedule's (on the modeled
 * clock the steps the server counted, on any clock one at least).  ""
 * in why if so, else the reason; an official run's window into *window. */
int eeb_srv_fine_tuned(struct eeb_server *s, const struct eeb_srv_run *r,
                       struct eeb_srv_window *window, char *why, size_t whylen, char *err,
                       size_t errlen);

/* runs.c: what a run's routes share.  The run as JSON: its terms and,
 * once scored, its verdict. */
json_t *eeb_srv_run_json(const struct eeb_srv_run *r);
/* The set a run is judged on: an official run's the secret one, any
 * other's the practice set (NULL: the server holds none). */
const struct eeb_srv_testset *eeb_srv_judged_on(const struct eeb_server *s, int task, int official);
/* The set k->run is judged on, or the 409 sent (a server started again
 * without it). */
const struct eeb_srv_testset *eeb_srv_run_set(struct eeb_srv_call *k, enum MHD_Result *sent);
/* 1 if k->run is in state a (or b), else 0 with the 409 sent. */
int eeb_srv_in_state(struct eeb_srv_call *k, const char *a, const char *b, enum MHD_Result *sent);
/* n of the team's quota q taken for today (its day kept in k): 1, or 0
 * with the 429 (or the 500) sent. */
int eeb_srv_take_quota(struct eeb_srv_call *k, enum eeb_server_quota q, int64_t n,
                       enum MHD_Result *sent);
/* What was taken of a quota given back, to the day it was taken from: the
 * act it was for did not happen. */
void eeb_srv_give_back(struct eeb_srv_call *k, enum eeb_server_quota q, int64_t n);

/* ---- handlers ---- */

enum MHD_Result eeb_srv_api_register(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_run(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_links(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_begin(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_complete(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_test(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_predictions(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_score(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_record(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_abandon(struct eeb_srv_call *k);

/* How long a registered run may take to begin its fine-tune (its deploy
 * may program a board). */
#define EEB_SRV_PRE_BEGIN_NS 600000000000LL

/* resume.c: on start, the runs in flight when the server stopped taken
 * up (their meters with them), or void where a gap no one can fill cut
 * into their fine-tune; the restart kept for the stream check. */
int eeb_srv_resume(struct eeb_server *s, char *err, size_t errlen);

/* settle.c: every run in flight that has stopped is ended (its stream
 * silent past the allowance, never begun, its predictions never come, its
 * team revoked, its round closed), its meter let go; on start, what a
 * restart cut short.  The thread starts and stops with the server. */
int eeb_srv_settler_start(struct eeb_server *s, char *err, size_t errlen);
void eeb_srv_settler_stop(struct eeb_server *s);
/* The runs in flight, read whole (free *out). */
struct eeb_srv_in_flight;
int eeb_srv_runs_in_flight(struct eeb_server *s, struct eeb_srv_in_flight **out, size_t *n,
                           char *err, size_t errlen);
/* Ends run id as verdict ("aborted" or "void") for why: its record, its
 * entry, its meter let go, the log; 1 if it was in flight. */
int eeb_srv_end_run(struct eeb_server *s, int64_t id, int64_t meter_run, const char *verdict,
                    const char *why, char *err, size_t errlen);
enum MHD_Result eeb_srv_api_board(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_runs(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_page_runs(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_page_board(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_page_run(struct eeb_srv_call *k);
enum MHD_Result eeb_srv_api_station(struct eeb_srv_call *k);
/* ranging.c: POST /api/v1/runs/{id}/ranging, a ranging pass of the run's
 * meter on its workload. */
enum MHD_Result eeb_srv_api_ranging(struct eeb_srv_call *k);
/* A station agent's report of a phase of ranging its meter (the batch's
 * "ranged": {phase, run, volts, amps, max_volts, max_amps, identity} or
 * {phase, run, error}), checked; recorded in the meter run of slot, whose
 * run asked for it.  0, or -1 with f filled.  s->lock not held. */
int eeb_srv_ranged(struct eeb_server *s, int slot, json_t *ranged, struct eeb_srv_fault *f);
/* The ranging phase to ask of the agent measuring in slot with its next
 * batch's answer ("begin", "end"), or NULL; s->lock held. */
const char *eeb_srv_range_asked(const struct eeb_server *s, int slot);
void eeb_srv_board_cache_free(struct eeb_server *s);

/* ---- the leaderboard: where entries stand (standing.c, ranking.c) ---- */

enum eeb_srv_standing_state { EEB_STANDING_RANKED, EEB_STANDING_RUNNING, EEB_STANDING_FAILED };

/* Where an entry stands in its round, from its runs. */
struct eeb_srv_standing {
    enum eeb_srv_standing_state state;
    int scored, runs;          /* its runs scored, of the round's number */
    double s, s_min, s_max;    /* ranked: the round's aggregate of their S, and its spread */
    double s_uncertainty;      /* ranked: the largest of their S's uncertainties (NAN: none) */
    double energy_j, t_s, m_s; /* ranked: their medians */
    int64_t submitted_utc_ns;  /* its last run's completion (0: none yet) */
    char why[1024];            /* failed: the run that did not pass, and why */
};

/* Entry e's standing under round r: running until r->runs of its runs are
 * scored, failed if one of them did not pass, else ranked. */
void eeb_srv_standing_of(const struct eeb_srv_entry *e, const struct eeb_round *r,
                         struct eeb_srv_standing *out);

/* Whether two ranked entries' S differ by more than their uncertainties
 * (the meters', carried through E and M_p): if not, they share a rank. */
int eeb_srv_standing_apart(const struct eeb_srv_standing *a, const struct eeb_srv_standing *b);

/* Whether b makes a off the Pareto front: no more energy for no less M_s,
 * and better in one. */
int eeb_srv_standing_dominated(const struct eeb_srv_standing *a, const struct eeb_srv_standing *b);

/* The filter the leaderboard and the run list share (board.c): ?task=T
 * (need_task: required; else -1, every task), provenance= and device=
 * (NULL: any), each checked; 1, or 0 with the 400 sent naming the field
 * and the value. */
int eeb_srv_query_filter(struct eeb_srv_call *k, int need_task, int *task, const char **provenance,
                         const char **device, enum MHD_Result *sent);

/* The leaderboard's query (ranking.c): ?task=T (need_task: required),
 * round=NAME (default: the last to open), provenance=, device=,
 * division=, all=1 (every entry, not each team's best); or the 400 sent. */
struct eeb_srv_ranking_query {
    int task; /* -1: every task (the page) */
    const char *round, *provenance, *device, *division;
    int all;
};
int eeb_srv_ranking_query(struct eeb_srv_call *k, struct eeb_srv_ranking_query *q, int need_task,
                          enum MHD_Result *sent);
/* The kept answer's key for query q. */
void eeb_srv_ranking_key(const struct eeb_srv_ranking_query *q, char *key, size_t n);
/* The leaderboard of task under q as JSON: {task, rules_version, round
 * (null: none held), tables: [{provenance, p_max_w, entries: [...]}],
 * running: [...]}; EEB_ENODATA if q names no round the server holds. */
int eeb_srv_ranking(struct eeb_srv_call *k, const struct eeb_srv_ranking_query *q, int task,
                    json_t **out, char *err, size_t errlen);

/* An answer kept (board.c): made by make (its body malloc'd), or the one
 * made for the same key since a run last changed stage. */
typedef int eeb_srv_make_answer(struct eeb_srv_call *k, void *arg, char **body, size_t *len,
                                char *err, size_t errlen);
enum MHD_Result eeb_srv_kept_answer(struct eeb_srv_call *k, const char *key, const char *type,
                                    eeb_srv_make_answer *make, void *arg);

/* The order tables of different provenance come in (ranking.c): measured,
 * counter, declared, modeled, then any other. */
int eeb_srv_provenance_order(const char *provenance);

/* The teams the organizer revoked (runlist.c), read once for a page or an
 * answer: a revoked team is marked wherever it appears. */
struct eeb_srv_revoked {
    int64_t *team; /* their ids */
    size_t n, cap;
};
int eeb_srv_revoked_read(struct eeb_srv_store *store, struct eeb_srv_revoked *out, char *err,
                         size_t errlen);
int eeb_srv_revoked_has(const struct eeb_srv_revoked *r, int64_t team);
void eeb_srv_revoked_free(struct eeb_srv_revoked *r);
/* A table cell of a team's name, escaped, marked "revoked" if it is. */
void eeb_srv_team_cell(FILE *f, const char *team, int revoked);

/* The plot beside a leaderboard table (scatter.c): E against M_s of its
 * ranked entries (table as the JSON gives it), with element id; with fewer
 * than two, a line saying why there is no plot. */
int eeb_srv_scatter(FILE *f, const char *id, const json_t *table, const char *metric, char *err,
                    size_t errlen);

/* The pages' sortable tables (board.c), for the run list and the
 * leaderboard alike: a <script> that sorts any table.board by the header
 * clicked (each <th> holding a <span class="mark">, and data-first saying
 * the first click's order), and a number cell it sorts by exact value
 * (NAN: "-", sorted last), shown with `decimals`. */
extern const char eeb_srv_sort_script[];
void eeb_srv_number_cell(FILE *f, double v, int decimals);

#endif
