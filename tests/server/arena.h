/*
 * arena.h - a server for the tests that a team's own client (team_client.h)
 * plays against: the secret test set, a practice set of other items, the
 * fine-tune set and the base model; teams alpha and beta; and the asks a
 * test makes of it, each answer asserted.
 */
#ifndef EEB_TESTS_ARENA_H
#define EEB_TESTS_ARENA_H

#include "server/eeb_server.h"
#include "tests/server/team_client.h"
#include "tests/testlib.h"

struct arena {
    struct test_cls_run in;
    char dir[256], practice[300], sdb[300];
    char alpha[EEB_TOKEN_HEX], beta[EEB_TOKEN_HEX];
    char ft_sha[EEB_SHA256_HEX], model_sha[EEB_SHA256_HEX];
    struct eeb_server_config cfg;
    struct eeb_server *s;
    int port;
};

/* Its sets and teams made, its configuration the default's with them. */
void arena_make(struct arena *a);
/* The server started on a->cfg. */
void arena_start(struct arena *a);

/* A board's run, its power its own word (declared): official or a
 * rehearsal, with `more` fields (free it). */
char *board_run(const struct arena *a, int official, const char *more);
/* A registration of body (freed) answered code, the run into t. */
void registers(struct team_run *t, const struct arena *a, const char *token, char *body, long code);
/* POST what [body] on t answers code, its field key holding value. */
void posts(const struct team_run *t, const char *what, const char *body, long code, const char *key,
           const char *value);
/* GET what on t answers code, its field key holding value. */
void gets(const struct team_run *t, const char *what, long code, const char *key,
          const char *value);

#endif
