/*
 * eeb_client.h - the evaluation server's client (libcurl): JSON calls that
 * retry transient failures with backoff, and a run database sent to the
 * server -- registered, its chain link by link, its predictions
 * without their truth, scored there.  Every step can be repeated without
 * harm, so a submission cut off midway is simply run again.
 */
#ifndef EEB_CLIENT_H
#define EEB_CLIENT_H

#include "common/eeb_common.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

struct eeb_client {
    char url[512];    /* the server's base URL, without a trailing '/' */
    char auth[128];   /* "Authorization: Bearer TOKEN"; never written out */
    int tries;        /* per call (default 6) */
    double backoff_s; /* before the first retry, doubled each time (default 0.25) */
    double timeout_s; /* per attempt (default 60) */
    FILE *log;        /* progress and retries, or NULL */
    void *curl;       /* a CURL easy handle, reused (keep-alive) */
};

int eeb_client_init(struct eeb_client *c, const char *url, const char *token, char *err,
                    size_t errlen);
void eeb_client_free(struct eeb_client *c);
/* A second client like from, on a connection of its own: libcurl's handle
 * serves one thread at a time. */
int eeb_client_clone(const struct eeb_client *from, struct eeb_client *to, char *err,
                     size_t errlen);

/*
 * method path with body (NULL: none; not taken): the server's JSON answer
 * into *reply (if not NULL; free it).  Connection failures, 429 and 5xx
 * are retried; any other 4xx is returned as EEB_EINVAL with the server's
 * error and field in err.
 */
int eeb_client_call(struct eeb_client *c, const char *method, const char *path, json_t *body,
                    json_t **reply, char *err, size_t errlen);

/* GET path into file (created or truncated): a download, retried like a
 * call; an error answer is returned as eeb_client_call returns it. */
int eeb_client_download(struct eeb_client *c, const char *path, const char *file, char *err,
                        size_t errlen);

/* What the server is told of a local run when it is registered: from the
 * run's stored configuration (with the round's entry, division and P_max
 * tier its "official" section names, and its system under test's name and
 * version if it holds them).  official: the run is to be driven by the
 * server from the start (eeb run --server). */
json_t *eeb_client_declaration(const char *config_json, int official);

/* The "system" a run tells the server (at registration, or at begin once
 * its SUT is open): {"name", "version"}, the version left out if none. */
json_t *eeb_client_system(const char *name, const char *version);

/* Where a registration's answer places the run in the open round, for
 * people: "run 3 of 5 of entry main (closed division) in round r1" into
 * out; 1, or 0 if the answer has no round. */
int eeb_client_round_line(const json_t *reply, char *out, size_t n);

struct eeb_rundb;

/* Sends run's links from *next on, with their records, in requests of a
 * few thousand records; *next, the server's next link as it answered. */
int eeb_client_send_links(struct eeb_client *c, int64_t server_run, struct eeb_rundb *db,
                          int64_t run, int64_t *next, char *err, size_t errlen);

/* A run's record sent and judged: its chain from the first link the
 * server lacks, complete, predictions, score; each step harmless if
 * repeated. */
int eeb_client_send_run(struct eeb_client *c, int64_t server_run, struct eeb_rundb *db, int64_t run,
                        json_t **verdict, char *err, size_t errlen);

/* The server's record of server_run, scored (its copy of the run, the
 * facts it judged with, its verdict, its meter's log in director mode),
 * taken into db beside run (uuid), the run it is a record of: checked link
 * by link as it is stored; its id in db into *copy. */
int eeb_client_take_record(struct eeb_client *c, int64_t server_run, struct eeb_rundb *db,
                           const char *uuid, int64_t run, int64_t *copy, char *err, size_t errlen);

/* Tells the server that server_run stopped, for why (cut to the 300 bytes
 * it takes): the run ends there, aborted; its answer into *reply (if not
 * NULL). */
int eeb_client_abandon(struct eeb_client *c, int64_t server_run, const char *why, json_t **reply,
                       char *err, size_t errlen);

/* The whole submission of a finished local run: register, its chain,
 * complete, predictions, score.  *server_run: the server's id for it, or
 * if not 0 on entry, the one to resume. */
int eeb_client_submit(struct eeb_client *c, const char *db, int64_t run, int64_t *server_run,
                      json_t **verdict, char *err, size_t errlen);

/*
 * A station's agent (eeb power agent): the samples a power log (run of the
 * database at db_path, its uuid naming the agent's session) commits, sent
 * to the server as they come with the station's key, each batch saying
 * the agent's clock now so that the server places them on its own.  A batch that does not arrive is
 * sent again with the next; none is lost while the log keeps it.
 */
struct eeb_client_agent;
struct eeb_power_source;

/* src, the meter the log samples at rate_hz, stays the caller's and
 * outlives the agent. */
int eeb_client_agent_open(const char *url, const char *key_file, const char *db_path, int64_t run,
                          const char *uuid, struct eeb_power_source *src, double rate_hz,
                          struct eeb_client_agent **out, char *err, size_t errlen);
/* Sends what the log committed since the last call (a few requests at
 * most; the rest next time): each reading with the uncertainty its meter
 * stated, the meter's read faults the log recorded, and its counts of
 * failed reads and dropped samples: EEB_OK, or the error that kept it from
 * the server. */
int eeb_client_agent_send(struct eeb_client_agent *a, uint64_t failed, uint64_t dropped, char *err,
                          size_t errlen);

struct eeb_client_agent_status {
    uint64_t sent;     /* samples the server has taken */
    uint64_t kept;     /* of them, those it kept as a run's measurement */
    int64_t measuring; /* the run the server measures with them (0: none) */
    char team[65];     /* the station's, as the server says */
    char ranged[320];  /* the last ranging phase its meter did, as the server asked, in words
                        * ("" if none) */
};
void eeb_client_agent_status(const struct eeb_client_agent *a, struct eeb_client_agent_status *out);
void eeb_client_agent_close(struct eeb_client_agent *a);

#endif
