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

/* ---- the store ---- */

#define EEB_TOKEN_HEX 65 /* 32 random bytes as hex, and NUL */

/* Makes team `name` ([A-Za-z0-9_.-], 1..64 characters) in the server's
 * database db (created if missing) and writes its new token: shown once,
 * kept only as a hash.  A name taken is an error naming it. */
int eeb_server_add_team(const char *db, const char *name, char token[EEB_TOKEN_HEX], char *err,
                        size_t errlen);

/* ---- the server ---- */

#define EEB_SERVER_STATIONS 16

struct eeb_server_config {
    const char *db;                /* the server's database (created if missing) */
    const char *bind;              /* an IPv4 address (default 127.0.0.1) */
    int port;                      /* 0: any free port (eeb_server_port says which) */
    int threads;                   /* the pool (default 2) */
    size_t max_body;               /* larger request bodies are refused with 413 (default 1 MiB) */
    double rate_limit, rate_burst; /* per team: requests a second (0: none) and at once;
                                      past them 429 (default 200, 400) */
    /* The test sets the server alone holds, per task (NULL: none).  A run
     * fetches its task's inputs with the labels stripped. */
    const char *test[EEB_TASK_COUNT];
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
    double meter_rate_hz; /* the stations' sampling rate (default 10 Hz) */
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

/* Opens the database and starts serving on the pool's threads. */
int eeb_server_start(const struct eeb_server_config *c, struct eeb_server **out, char *err,
                     size_t errlen);

int eeb_server_port(const struct eeb_server *s);

/* Stops accepting, finishes the requests in flight, closes everything. */
void eeb_server_stop(struct eeb_server *s);

#endif
