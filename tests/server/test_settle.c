/*
 * test_settle.c - every run ends, whether or not anyone asks for its
 * score: a stream silent past the allowance, a harness that says it
 * stopped, a team revoked, a round closed, a run the organizer voids.
 * Each over real HTTP on 127.0.0.1 by the tests' own team client; the
 * server's copy of each ended run says why, and `eeb check` of it agrees.
 */
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "tests/server/arena.h"
#include "tests/server/http_client.h"
#include "tests/server/team_client.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Run t as the server shows it once it is no longer in flight (polled for
 * at most 10 s): its JSON (decref it). */
static json_t *ended(const struct team_run *t)
{
    for (int i = 0; i < 200; i++) {
        struct reply r = team_get(t, "");
        cr_assert_eq(r.code, 200, "%s", r.body);
        json_t *v = json_loads(r.body, 0, NULL);
        free(r.body);
        const char *state = json_string_value(json_object_get(v, "state"));
        if (state && strcmp(state, "scored") == 0)
            return v;
        json_decref(v);
        usleep(50000);
    }
    cr_assert_fail("run %lld is still in flight after 10 s", t->id);
    return NULL;
}

/* t ended as verdict, its why holding why; and `eeb check` of the
 * server's copy gives the same end from the record alone. */
static void expect_end(const struct arena *a, const struct team_run *t, const char *verdict,
                       const char *why)
{
    json_t *v = ended(t);
    const char *said = json_string_value(json_object_get(v, "why"));
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), verdict);
    cr_expect(said && strstr(said, why), "why: '%s' lacks '%s'", said, why);
    cr_expect(json_is_null(json_object_get(v, "S")), "an ended run has no S");
    json_decref(v);
    char run[24];
    snprintf(run, sizeof run, "%lld", t->id);
    json_t *c = test_eeb_json((const char *[]){"check", a->sdb, "--run", run, "--json", NULL}, 3);
    const char *check_why = json_string_value(json_object_get(c, "why"));
    cr_expect_str_eq(json_string_value(json_object_get(c, "verdict")), "aborted");
    cr_expect(check_why && strstr(check_why, why), "eeb check: '%s' lacks '%s'", check_why, why);
    json_decref(c);
}

Test(settle, a_run_whose_stream_stops_is_ended_on_its_own, .timeout = 60)
{
    struct arena a;
    arena_make(&a);
    a.cfg.stream_allowance_s = 1;
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_begin(&t, 0);
    /* the harness is killed here: nothing more comes, and nobody asks */
    expect_end(&a, &t, "aborted", "its stream stopped: no link for");
    /* asked afterwards, the score is the end's */
    posts(&t, "score", NULL, 200, "verdict", "aborted");
    posts(&t, "links", "{\"links\": []}", 409, "field", "state");
    eeb_server_stop(a.s);
}

Test(settle, a_harness_that_stops_says_so_and_its_run_ends, .timeout = 60)
{
    struct arena a;
    arena_make(&a);
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_begin(&t, 0);
    posts(&t, "abandon", "{\"reason\": \"\"}", 400, "field", "reason");
    posts(&t, "abandon", "{\"why\": \"x\"}", 400, "field", "reason");
    posts(&t, "abandon", "{\"reason\": \"the SUT refused the model\"}", 200, "verdict", "aborted");
    expect_end(&a, &t, "aborted", "its harness stopped it: the SUT refused the model");
    posts(&t, "abandon", "{\"reason\": \"again\"}", 409, "field", "state");
    eeb_server_stop(a.s);
}

Test(settle, a_revoked_teams_run_ends, .timeout = 60)
{
    struct arena a;
    char err[512];
    arena_make(&a);
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_begin(&t, 0);
    cr_assert_eq(eeb_server_team_revoke(a.sdb, "alpha", "shared its token", err, sizeof err),
                 EEB_OK, "%s", err);
    /* its token is refused now: the organizer's reading shows the end */
    for (int i = 0; i < 200 && test_sql_int(a.sdb, "SELECT count(*) FROM team_runs WHERE "
                                                   "state = 'scored'") == 0;
         i++)
        usleep(50000);
    cr_expect_eq(test_sql_int(a.sdb, "SELECT count(*) FROM team_runs WHERE state = 'scored' AND "
                                     "verdict = 'aborted' AND why = 'its team was revoked'"),
                 1);
    eeb_server_stop(a.s);
}

/* A round of runs of at most cap, each entry of runs runs. */
static void open_round(const struct arena *a, int runs, int cap)
{
    char err[512];
    struct eeb_round round;
    eeb_round_default(&round, "r1");
    round.runs = runs, round.cap = cap;
    round.task[EEB_TASK_CLS].t_max_s = 60;
    round.task[EEB_TASK_CLS].tiers_w[0] = 10;
    memcpy(round.task[EEB_TASK_CLS].model_sha256, a->model_sha, EEB_SHA256_HEX);
    cr_assert_eq(eeb_server_round_open(a->sdb, &round, err, sizeof err), EEB_OK, "%s", err);
}

Test(settle, close_round_ends_its_runs_in_flight, .timeout = 60)
{
    struct arena a;
    char err[512];
    arena_make(&a);
    open_round(&a, 1, 2);
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ", \"entry\": \"e1\", \"division\": \"open\""),
              201);
    team_begin(&t, 0);
    cr_assert_eq(eeb_server_round_close(a.sdb, "r1", err, sizeof err), EEB_OK, "%s", err);
    expect_end(&a, &t, "aborted", "round r1 closed before it ended");
    eeb_server_stop(a.s);
}

Test(settle, a_void_run_leaves_its_entry_and_the_cap, .timeout = 60)
{
    struct arena a;
    char err[512];
    arena_make(&a);
    open_round(&a, 1, 1);
    arena_start(&a);
    struct team_run t, again;
    const char *entry = ", \"entry\": \"e1\", \"division\": \"open\"";
    registers(&t, &a, a.alpha, board_run(&a, 1, entry), 201);
    team_begin(&t, 0);
    /* the cap is taken while it runs */
    registers(&again, &a, a.alpha, board_run(&a, 1, ", \"entry\": \"e2\", \"division\": \"open\""),
              409);
    cr_assert_eq(eeb_server_run_act(a.sdb, t.id, EEB_SERVER_VOID,
                                    "the server's disk filled during its fine-tune", err,
                                    sizeof err),
                 EEB_OK, "%s", err);
    cr_expect_neq(eeb_server_run_act(a.sdb, t.id, EEB_SERVER_VOID, "twice", err, sizeof err),
                  EEB_OK, "a void run voided again");
    json_t *v = ended(&t);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "void");
    json_decref(v);
    cr_expect_eq(test_sql_int(a.sdb, "SELECT count(*) FROM audit WHERE action = 'void-run'"), 1);
    /* its place is free: the team runs it again, in the same entry */
    registers(&again, &a, a.alpha, board_run(&a, 1, entry), 201);
    cr_expect_eq(test_sql_int(a.sdb, "SELECT count(*) FROM team_runs WHERE entry_id IS NOT NULL"),
                 1);
    eeb_server_stop(a.s);
}

/* ---- sets that cannot go together, refused before anything runs ---- */

/* A run fine-tuned on one set must be testable on the other: the server
 * does not start on sets of other shapes, and a run whose fine-tune set
 * does not match the server's test set is refused at registration (a
 * team found the mismatch only at its test stage, after a whole
 * fine-tune). */
Test(settle, sets_that_cannot_go_together_are_refused_before_anything_runs, .timeout = 60)
{
    struct arena a;
    char err[512], practice[300];
    arena_make(&a);
    struct eeb_server *s = NULL;
    snprintf(practice, sizeof practice, "%s/large.eebd", a.dir);
    cr_assert_eq(rename(test_cls_shard(24, 32, 9), practice), 0);
    a.cfg.practice[EEB_TASK_CLS] = practice;
    cr_expect_neq(eeb_server_start(&a.cfg, &s, err, sizeof err), EEB_OK, "started on %s", practice);
    cr_expect(strstr(err, practice) && strstr(err, "of 32x32x3") && strstr(err, "of 16x16x3"), "%s",
              err);
    a.cfg.practice[EEB_TASK_CLS] = a.practice;
    a.cfg.finetune[EEB_TASK_CLS] = practice;
    cr_expect_neq(eeb_server_start(&a.cfg, &s, err, sizeof err), EEB_OK);
    cr_expect(strstr(err, "cannot be tested on the other"), "%s", err);
    a.cfg.finetune[EEB_TASK_CLS] = NULL;
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha,
              board_run(&a, 1,
                        ", \"finetune_shape\": {\"frames\": 1, \"w\": 32, \"h\": 32, \"c\": 3, "
                        "\"classes\": 10}"),
              409);
    registers(&t, &a, a.alpha, board_run(&a, 1, ", \"finetune_shape\": {\"frames\": 1, \"w\": 32}"),
              400);
    eeb_server_stop(a.s);
}
