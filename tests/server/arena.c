/*
 * arena.c - a server for the tests that a team's own client plays
 * against (arena.h).
 */
#include "tests/server/arena.h"

#include "tests/server/http_client.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void arena_make(struct arena *a)
{
    char err[512];
    snprintf(a->dir, sizeof a->dir, "%s", test_tmpdir());
    a->in = test_cls_run_inputs(a->dir, 64, 40);
    snprintf(a->practice, sizeof a->practice, "%s/practice.eebd", a->dir);
    cr_assert_eq(rename(test_cls_shard(24, 16, 9), a->practice), 0);
    snprintf(a->sdb, sizeof a->sdb, "%s/server.db", a->dir);
    cr_assert_eq(eeb_server_add_team(a->sdb, "alpha", a->alpha, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(eeb_server_add_team(a->sdb, "beta", a->beta, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_sha256_file(a->in.ft, a->ft_sha, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_sha256_file(a->in.model, a->model_sha, err, sizeof err), EEB_OK, "%s", err);
    eeb_server_config_default(&a->cfg);
    a->cfg.db = a->sdb, a->cfg.port = 0;
    a->cfg.test[EEB_TASK_CLS] = a->in.test;
    a->cfg.practice[EEB_TASK_CLS] = a->practice;
    a->cfg.finetune[EEB_TASK_CLS] = a->in.ft;
    a->cfg.model[EEB_TASK_CLS] = a->in.model;
}

void arena_start(struct arena *a)
{
    char err[512];
    cr_assert_eq(eeb_server_start(&a->cfg, &a->s, err, sizeof err), EEB_OK, "%s", err);
    a->port = eeb_server_port(a->s);
}

/* A board's run, its power its own word (declared): official or a
 * rehearsal, with `more` fields. */
char *board_run(const struct arena *a, int official, const char *more)
{
    char *body;
    cr_assert(asprintf(&body,
                       "{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": 0.4, "
                       "\"dsp\": 0.2}, \"provenance\": \"declared\", \"backend\": \"xrt\", "
                       "\"device\": \"zcu104\", \"official\": %s, \"finetune\": \"%s\", "
                       "\"model\": \"%s\"%s}",
                       official ? "true" : "false", a->ft_sha, a->model_sha, more) > 0);
    return body;
}

/* A registration answered code, the run into t. */
void registers(struct team_run *t, const struct arena *a, const char *token, char *body, long code)
{
    json_t *answer = NULL;
    long got = team_register(t, a->port, token, body, &answer);
    cr_assert_eq(got, code, "%s: %ld %s", body, got, json_dumps(answer, 0));
    json_decref(answer);
    free(body);
}

/* POST what [body] on t answers code, its field key holding value. */
void posts(const struct team_run *t, const char *what, const char *body, long code, const char *key,
           const char *value)
{
    struct reply r = team_post(t, what, body);
    cr_expect_eq(r.code, code, "%s: %ld %s", what, r.code, r.body);
    json_t *o;
    const char *v = field(&o, &r, key);
    cr_expect(v && strstr(v, value), "%s: '%s' lacks '%s': %s", what, key, value, r.body);
    json_decref(o);
    free(r.body);
}

/* GET what on t answers code, its field key holding value. */
void gets(const struct team_run *t, const char *what, long code, const char *key, const char *value)
{
    struct reply r = team_get(t, what);
    cr_expect_eq(r.code, code, "%s: %ld %s", what, r.code, r.code == 200 ? "" : r.body);
    json_t *o;
    const char *v = field(&o, &r, key);
    cr_expect(v && strstr(v, value), "%s: '%s' lacks '%s': %s", what, key, value, r.body);
    json_decref(o);
    free(r.body);
}
