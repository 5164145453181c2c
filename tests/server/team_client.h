/*
 * team_client.h - a team's client written for the tests, not eeb's: it
 * speaks the server's API by hand (http_client.c), building a run's chain
 * link by link with heads it computes itself, so a test can stream an
 * honest fine-tune, or forge any part of one.  Failures assert.
 */
#ifndef EEB_TESTS_TEAM_CLIENT_H
#define EEB_TESTS_TEAM_CLIENT_H

#include "common/eeb_common.h"
#include "tests/server/http_client.h"

#include <jansson.h>
#include <stdint.h>

/* A run of the team's, as its chain is written: the head of its last
 * link, and its meter. */
struct team_run {
    int port;
    const char *token;
    long long id;
    int64_t seq;
    char head[EEB_SHA256_HEX];
    char uuid[37];
    const char *source;    /* the meter's URI its samples name */
    double watts;          /* what they read */
    const char *ended;     /* why its complete event says fine-tuning ended ("done") */
    long long handed_seed; /* the seed the server handed it (an official run), or 0 */
    int no_audit;          /* leaves out the training audit eeb run writes */
    long long trains_with; /* the seed its finetune_begin says (-1: none) */
    int64_t last_sample_ns;
};

/* Registers a run with body: its status; the run in t if 201 (*answer,
 * if not NULL, the reply as JSON: decref it). */
long team_register(struct team_run *t, int port, const char *token, const char *body,
                   json_t **answer);

/* Links as the body of POST /links: its status (*out, if not NULL, the
 * reply: free its body). */
long team_send(struct team_run *t, json_t *links, struct reply *out);

/* Links sent as the run writes them: answered 200 (asserted). */
void team_stream(struct team_run *t, json_t *links);

/* POST /api/v1/runs/ID/what [body]: the reply (free its body). */
struct reply team_post(const struct team_run *t, const char *what, const char *body);
/* GET /api/v1/runs/ID[/what] ("" for the run): the reply. */
struct reply team_get(const struct team_run *t, const char *what);

/* The next link of t's chain, in the request's form: the origin (a new
 * uuid each run), an event of kind now with payload (JSON text or NULL),
 * or the meter's samples since the last, every 20 ms, to now. */
json_t *team_origin(struct team_run *t);
json_t *team_event(struct team_run *t, const char *kind, const char *payload);
json_t *team_samples(struct team_run *t);

/* A training_audit event as eeb run writes one (when: "before" or
 * "after" the fine-tune): the slice seed draws from a set of
 * TEAM_AUDIT_SET items, its answers other after than before. */
#define TEAM_AUDIT_SET 64
json_t *team_audit(struct team_run *t, const char *when, long long seed);

/* The start of a fine-tune, streamed: the origin and a second of the
 * meter, begin asked, the training audit before it (an official run,
 * unless no_audit), finetune_begin with seed (0: the one the server
 * handed it, if any; -1: none). */
void team_begin(struct team_run *t, long long seed);

/* An honest fine-tune, streamed as it goes: the origin and a second of
 * the meter, begin asked, finetune_begin (with seed, as team_begin), `steps`
 * train events over about 0.3 s, complete saying complete_step steps (and
 * t->ended),
 * finetune_end, stopped and the training audit after (as team_begin), the
 * meter after; then POST complete (asserted 200). */
void team_fine_tune(struct team_run *t, int steps, long long complete_step, long long seed);

/* The run's test inputs fetched (asserted 200) into ids (n of them, in the
 * order served: free it); their pixels, if not NULL, each px bytes. */
int team_test_inputs(const struct team_run *t, char (**ids)[256], uint8_t **pixels, size_t *px);

#endif
