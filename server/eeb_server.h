/*
 * eeb_server.h - `eeb serve`, the benchmark's evaluation and leaderboard server:
 * libmicrohttpd (a thread pool) in front of one SQLite database (WAL), JSON
 * through jansson.  Teams are made by an administrator and hold a bearer
 * token, stored only as its SHA-256.  Sections: the store, the server.
 */
#ifndef EEB_SERVER_H
#define EEB_SERVER_H

#include "common/eeb_common.h"
#include "tasks/eeb_shard.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the store ---- */

#define EEB_TOKEN_HEX 65 /* 32 random bytes as hex, and NUL */

/* Makes team `name` ([A-Za-z0-9_.-], 1..64 characters) in the server's
 * database db (created if missing) and writes its new token: shown once,
 * kept only as a hash.  A name taken is an error naming it. */
int eeb_server_add_team(const char *db, const char *name, char token[EEB_TOKEN_HEX], char *err,
                        size_t errlen);

/* ---- rounds ---- */

/* A round of the benchmark, as the organizer opens it: while it is open,
 * every official run belongs to an entry of it -- a team's design on a
 * task, made of the round's number of runs, whose S are aggregated into
 * the entry's -- and is held to the round's budgets and, in the closed
 * division, to its base model and schedule.  Rounds never overlap in time,
 * so at most one is open. */
#define EEB_ROUND_NAME  65 /* [A-Za-z0-9_.-], 1..64 characters, and NUL */
#define EEB_ROUND_TIERS 4  /* P_max tiers a task may have in a round */

enum eeb_round_aggregate { EEB_ROUND_MEDIAN, EEB_ROUND_OLYMPIC };

struct eeb_round {
    char name[EEB_ROUND_NAME];
    char rules_version[16];             /* the rules its runs are judged by */
    int runs;                           /* an entry's official runs (1..25) */
    enum eeb_round_aggregate aggregate; /* their S made the entry's */
    int cap;                            /* official runs a team may register on a task */
    int64_t opens_utc_ns, closes_utc_ns;
    int64_t closed_utc_ns; /* closed early by the organizer (0: not) */
    struct eeb_round_task {
        double t_max_s;
        double tiers_w[EEB_ROUND_TIERS]; /* the P_max an entry may choose, ascending */
        int ntiers;
        char model_sha256[EEB_SHA256_HEX]; /* the closed division's base model ("": free) */
        int epochs_max;                    /* the closed division's epochs (0: free) */
    } task[EEB_TASK_COUNT];
};

/* Round name with eeb's rules and budgets (one tier a task, the task's
 * P_max), 5 runs an entry, their median, a cap of 20 runs, open from now
 * for 30 days. */
void eeb_round_default(struct eeb_round *r, const char *name);

/* The aggregation's name ("median", "olympic") and back. */
const char *eeb_round_aggregate_name(enum eeb_round_aggregate a);
int eeb_round_aggregate_parse(const char *s, enum eeb_round_aggregate *out);

/* Opens round r in the server's database db (created if missing): an error
 * names what is wrong with it, a name taken, or the round it overlaps. */
int eeb_server_round_open(const char *db, const struct eeb_round *r, char *err, size_t errlen);

/* Closes the open round name now: its entries stand as they are.  An
 * error if no round of that name is open. */
int eeb_server_round_close(const char *db, const char *name, char *err, size_t errlen);

/* The rounds of db, oldest first, into *out (free it), *n of them. */
int eeb_server_rounds(const char *db, struct eeb_round **out, size_t *n, char *err, size_t errlen);

/* ---- the organizer's acts, each kept in the audit log with its reason ---- */

/* Team name's token is refused from now on; its runs stay. */
int eeb_server_team_revoke(const char *db, const char *name, const char *reason, char *err,
                           size_t errlen);

/* A run hidden from the leaderboard (and its entry with it) while under
 * review, shown again, or withdrawn (its entry fails, saying why). */
enum eeb_server_run_act {
    EEB_SERVER_HIDE,
    EEB_SERVER_RESTORE,
    EEB_SERVER_WITHDRAW,
    EEB_SERVER_VOID
};
int eeb_server_run_act(const char *db, int64_t run, enum eeb_server_run_act how, const char *reason,
                       char *err, size_t errlen);

/* A station key written to path (eeb_server_station_key), kept in db's
 * audit log by its file's name: never the key. */
int eeb_server_station_key_audit(const char *db, const char *path, char *err, size_t errlen);

/* The teams, one line each (name, created, runs, active or revoked), and
 * the audit log, one line an act (time, act, target, reason), to out. */
int eeb_server_list_teams(const char *db, FILE *out, char *err, size_t errlen);
int eeb_server_list_audit(const char *db, FILE *out, char *err, size_t errlen);

/* ---- the server ---- */

#define EEB_SERVER_STATIONS 16

/* What a team may do in a UTC day, each held to a quota the organizer
 * sets: runs registered, official runs scored (each tells its M_s on the
 * secret labels), power samples stored. */
enum eeb_server_quota { EEB_QUOTA_REGISTRATIONS, EEB_QUOTA_SCORED, EEB_QUOTA_SAMPLES, EEB_QUOTAS };
/* "registrations", "scored", "samples". */
const char *eeb_server_quota_name(enum eeb_server_quota q);

struct eeb_server_config {
    const char *db;                /* the server's database (created if missing, mode 0600) */
    const char *bind;              /* an IPv4 address (default 127.0.0.1) */
    int port;                      /* 0: any free port (eeb_server_port says which) */
    int threads;                   /* the pool (default 2) */
    size_t max_body;               /* larger request bodies are refused with 413 (default 1 MiB) */
    double rate_limit, rate_burst; /* per team: requests a second (0: none) and at once;
                                      past them 429 (default 200, 400) */
    /* The test sets the server alone holds, per task (NULL: none).  A run
     * fetches its task's inputs with the labels stripped. */
    const char *test[EEB_TASK_COUNT];
    /* A practice test set per task (NULL: none), whose labels are not
     * secret: runs that are not official (rehearsals, `eeb submit`) are
     * judged on it, never on the secret set, so that no score answers
     * anything of the secret labels but an official run's. */
    const char *practice[EEB_TASK_COUNT];
    /* How long after its test inputs were served a run's predictions may
     * arrive (default 900 s); later, the run is invalid. */
    double predict_within_s;
    /* Per team and UTC day, each quota's limit (< 0: none); past one, 429
     * naming it. */
    int64_t quota[EEB_QUOTAS];
    /* The fine-tune set of each task (NULL: none named).  Registration
     * names it by its SHA-256; a run declaring another one is refused. */
    const char *finetune[EEB_TASK_COUNT];
    /* The base model of each task (NULL: none named): registration names it
     * by its SHA-256 and refuses a run that declares another one (an
     * official run must declare it); a run on the modeled clock is held to
     * the step time and power the analytical model gives for its design,
     * batch and frozen layers on it. */
    const char *model[EEB_TASK_COUNT];
    /* An official run's stream: during fine-tuning, the longest a link may
     * arrive after the run wrote it, and the longest pause between links
     * (default 10 s).  Past it the run is invalid. */
    double stream_allowance_s;
    /* Director mode: the meter the server reads itself for each official
     * run of a team (its "station"), by URI (ptd://, scpi://, hwmon:, ...),
     * or "agent:KEYFILE": the meter a station agent (eeb power agent) with
     * that key reads and sends; the run's E and the P_max rule are then
     * the server's measurement. */
    struct eeb_server_station {
        const char *team, *uri;
    } stations[EEB_SERVER_STATIONS];
    double meter_rate_hz; /* the stations' sampling rate; 0 (default): once per each meter's
                           * update (eeb_power_default_rate) */
    /* A station agent's clock is placed on the server's by the least
     * difference between a batch's arrival and the agent's clock at
     * sending seen over this long (default 60 s): the clocks drift apart by
     * parts per million, so an older least would place samples early. */
    double station_clock_window_s;
    /* What the server did, a line an act (runs registered or refused,
     * completed, scored; stations heard): NULL, none.  Never a token. */
    FILE *log;
    /* Availability: libmicrohttpd's own limits, and the room a run takes. */
    unsigned max_connections;      /* open at once, from every address (default 1000) */
    unsigned max_per_ip;           /* open at once from one address (default 32): the defence
                                    * against one client's slow connections, since ... */
    unsigned connection_timeout_s; /* ... the timeout (default 15 s) closes a connection
                                    * only after that long without a byte: libmicrohttpd
                                    * restarts it at each, so it bounds no slow header */
    uint64_t max_samples;          /* power samples a run may store (default 2,000,000): links
                                    * past it are refused (413 naming samples) */
};

void eeb_server_config_default(struct eeb_server_config *c);

/* A new station key written to path (never over a file there), readable
 * by its owner alone: "--station TEAM=agent:PATH" on the server, and the
 * key of the agent on the meter's host. */
int eeb_server_station_key(const char *path, char *err, size_t errlen);
/* The station key in the file at path (64 hex digits, a line end
 * allowed) into key. */
int eeb_server_station_key_read(const char *path, char key[EEB_TOKEN_HEX], char *err,
                                size_t errlen);

struct eeb_server;

/* Opens the database and starts serving on the pool's threads.  The
 * database (its -wal and -shm), each test set and each station key must be
 * readable by their owner alone: one that its group or others may read or
 * change is refused, naming it, its mode and the chmod that mends it.  The
 * files the server makes (the database, the test inputs it serves, the run
 * pages it keeps) are made mode 0600, whatever the umask. */
int eeb_server_start(const struct eeb_server_config *c, struct eeb_server **out, char *err,
                     size_t errlen);

int eeb_server_port(const struct eeb_server *s);

/* Stops accepting, finishes the requests in flight, closes everything. */
void eeb_server_stop(struct eeb_server *s);

#endif
