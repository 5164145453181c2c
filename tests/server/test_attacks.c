/*
 * test_attacks.c - the ranking cannot be bought: each attack a red team
 * made on the server, made again over real HTTP on 127.0.0.1 by a client
 * written for the tests (team_client.c, not eeb's), and refused.
 *
 * The oracle (scores that tell the secret labels), labels in the items'
 * ids and order, test inputs without a fine-tune, predictions late, a
 * modeled run's figures of the team's own choosing (step count,
 * utilization, frozen layers, a wall clock), provenance the server did not
 * read, names in another case, negative watts, a copied chain, the quotas,
 * and text that reorders or forges what pages and the log show.
 */
#include "fpga/model/eeb_perf.h"
#include "fpga/net/eeb_model.h"
#include "fpga/net/eeb_net.h"
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "tasks/eeb_shard.h"
#include "tests/server/arena.h"
#include "tests/server/http_client.h"
#include "tests/server/team_client.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the server under attack: arena.h ---- */

/* Predictions of every id (class cls first), and the score: the verdict. */
static json_t *predict_and_score(const struct team_run *t, char (*ids)[256], int n, int cls)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, json_pack("{s:s, s:[i]}", "id", ids[i], "top", cls));
    json_t *body = json_pack("{s:o}", "predictions", list);
    char *text = json_dumps(body, JSON_COMPACT);
    struct reply r = team_post(t, "predictions", text);
    cr_expect_eq(r.code, 200, "predictions: %s", r.body);
    free(r.body), free(text);
    json_decref(body);
    r = team_post(t, "score", NULL);
    cr_assert_eq(r.code, 200, "score: %s", r.body);
    json_t *v = json_loads(r.body, 0, NULL);
    cr_assert(v, "%s", r.body);
    free(r.body);
    return v;
}

/* A run's chain made first and sent all at once, after the fact, with
 * the fine-tune's begin and end and a complete event of `steps`; then
 * complete (200: the end is held). */
static void chain_after_the_fact(struct team_run *t, int steps)
{
    char complete[64];
    snprintf(complete, sizeof complete, "{\"reason\": \"done\", \"step\": %d}", steps);
    json_t *links = json_array();
    json_array_append_new(links, team_origin(t));
    json_array_append_new(links, team_event(t, EEB_EVENT_FINETUNE_BEGIN, NULL));
    json_array_append_new(links, team_samples(t));
    json_array_append_new(links, team_event(t, EEB_EVENT_COMPLETE, complete));
    json_array_append_new(links, team_event(t, EEB_EVENT_FINETUNE_END, NULL));
    struct reply r;
    cr_assert_eq(team_send(t, links, &r), 200, "%s", r.body);
    free(r.body);
    posts(t, "complete", NULL, 200, "state", "complete");
}

static int is_null(const json_t *o, const char *key)
{
    return json_is_null(json_object_get(o, key));
}

/* ---- the oracle ---- */

/* The red team registered throw-away runs and scored each with one
 * prediction changed, reading every secret label off M_s.  A rehearsal is
 * judged on the practice set, whose labels are public; an official run is
 * served the secret set's inputs only after a fine-tune the server saw,
 * and a run that did not fine-tune is judged without any M_s. */
Test(attack, no_score_tells_a_secret_label, .timeout = 120)
{
    struct arena a;
    arena_make(&a);
    arena_start(&a);

    /* an honest official run: fine-tuned, served the inputs, scored */
    struct team_run honest;
    registers(&honest, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&honest, 3, 3, 0);
    char(*secret)[256];
    int n = team_test_inputs(&honest, &secret, NULL, NULL);
    cr_assert_eq(n, 40);
    json_t *v = predict_and_score(&honest, secret, n, 0);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass", "%s",
                     json_dumps(v, 0));
    double m_s = json_number_value(json_object_get(v, "m_s"));
    cr_expect(m_s >= 0 && m_s <= 1 && json_is_number(json_object_get(v, "m_s")), "%s",
              json_dumps(v, 0));
    json_decref(v);

    /* throw-away runs: their chains made after the fact, never streamed.
     * No inputs, no predictions, and scores that say nothing: invalid,
     * with neither M_s nor S, the same for both */
    const char *said[2];
    json_t *kept[2];
    for (int i = 0; i < 2; i++) {
        struct team_run t;
        registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
        chain_after_the_fact(&t, 1);
        gets(&t, "test", 409, "field", "links");
        char one[300];
        snprintf(one, sizeof one, "{\"predictions\": [{\"id\": \"%s\", \"top\": [%d]}]}", secret[0],
                 i);
        posts(&t, "predictions", one, 409, "field", "test");
        struct reply r = team_post(&t, "score", NULL);
        cr_assert_eq(r.code, 200, "%s", r.body);
        kept[i] = json_loads(r.body, 0, NULL);
        free(r.body);
        cr_expect_str_eq(json_string_value(json_object_get(kept[i], "verdict")), "invalid");
        cr_expect(is_null(kept[i], "m_s") && is_null(kept[i], "S"), "%s", json_dumps(kept[i], 0));
        said[i] = json_string_value(json_object_get(kept[i], "why"));
        cr_expect(said[i] && strstr(said[i], "never asked the server to begin") &&
                      !strstr(said[i], "M_s") && !strstr(said[i], "predictions"),
                  "%s", said[i]);
    }
    json_decref(kept[0]), json_decref(kept[1]);
    /* listed with the official runs, still without an M_s */
    struct reply list = request(a.port, "GET", "/api/v1/runs?task=cls", NULL, 0, NULL);
    json_t *listed = json_loads(list.body, 0, NULL), *runs = json_object_get(listed, "runs");
    cr_assert_eq(json_array_size(runs), 3, "%s", list.body);
    for (size_t i = 1; i < 3; i++)
        cr_expect(is_null(json_array_get(runs, i), "m_s"), "%s", list.body);
    json_decref(listed);
    free(list.body);

    /* a rehearsal is served the practice set, and knows no secret item */
    struct team_run rehearsal;
    registers(&rehearsal, &a, a.alpha, board_run(&a, 0, ""), 201);
    chain_after_the_fact(&rehearsal, 1);
    char(*practice)[256];
    cr_expect_eq(team_test_inputs(&rehearsal, &practice, NULL, NULL), 24);
    char one[300];
    snprintf(one, sizeof one, "{\"predictions\": [{\"id\": \"%s\", \"top\": [0]}]}", secret[0]);
    posts(&rehearsal, "predictions", one, 400, "field", "predictions[0].id");
    v = predict_and_score(&rehearsal, practice, 24, 0);
    cr_expect(json_is_number(json_object_get(v, "m_s")), "%s", json_dumps(v, 0));
    json_decref(v);
    free(secret), free(practice);
    eeb_server_stop(a.s);
}

/* Scores, registrations and samples are held to the organizer's quotas,
 * a team at a time: past one, 429 naming it. */
Test(attack, quotas_bound_what_a_team_does_in_a_day, .timeout = 60)
{
    struct arena a;
    arena_make(&a);
    a.cfg.quota[EEB_QUOTA_REGISTRATIONS] = 4;
    a.cfg.quota[EEB_QUOTA_SCORED] = 1;
    a.cfg.quota[EEB_QUOTA_SAMPLES] = 120;
    arena_start(&a);
    struct team_run official[2], rehearsal[2], other;
    for (int i = 0; i < 2; i++) {
        registers(&official[i], &a, a.alpha, board_run(&a, 1, ""), 201);
        registers(&rehearsal[i], &a, a.alpha, board_run(&a, 0, ""), 201);
    }
    json_t *answer;
    struct team_run refused;
    char *body = board_run(&a, 0, "");
    cr_expect_eq(team_register(&refused, a.port, a.alpha, body, &answer), 429);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "quota.registrations");
    json_decref(answer), free(body);
    registers(&other, &a, a.beta, board_run(&a, 0, ""), 201); /* another team's own */

    /* one official score a day: the second, 429; a rehearsal's (public
     * labels) is no oracle, and not counted */
    for (int i = 0; i < 2; i++)
        chain_after_the_fact(&official[i], 1); /* a second of the meter each: 50 samples */
    struct reply r = team_post(&official[0], "score", NULL);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);
    posts(&official[1], "score", NULL, 429, "field", "quota.scored");
    team_stream(&rehearsal[0], json_pack("[o]", team_origin(&rehearsal[0])));
    posts(&rehearsal[0], "complete", NULL, 200, "state", "complete");
    r = team_post(&rehearsal[0], "score", NULL);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);

    /* 120 samples a day: the two runs' 100 fit, a second more does not */
    json_t *links = json_array();
    json_array_append_new(links, team_origin(&rehearsal[1]));
    json_array_append_new(links, team_samples(&rehearsal[1]));
    cr_expect_eq(team_send(&rehearsal[1], links, &r), 429, "%s", r.body);
    cr_expect(strstr(r.body, "quota.samples"), "%s", r.body);
    free(r.body);
    eeb_server_stop(a.s);
}

/* ---- what the items' names and order say ---- */

/* A test set laid out as an import of Food-101 makes it: ids that name
 * the class (apple_pie/3), the classes in order, ten items each. */
static void food_layout(const char *path)
{
    char names[4][EEB_SHARD_MAX_NAME + 1] = {"apple_pie", "bibimbap", "churros", "donuts"};
    struct eeb_shard_info info = {EEB_TASK_CLS, 16, 16, 3, 1, 4, names, 0};
    struct eeb_shard_writer *w;
    char err[256];
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_record r = {0};
    r.pixels = malloc(16 * 16 * 3);
    srand(5);
    for (int i = 0; i < 40; i++) {
        for (int j = 0; j < 16 * 16 * 3; j++) /* noise: every item's pixels its own */
            r.pixels[j] = (uint8_t)(rand() % 256);
        r.label = i / 10;
        snprintf(r.id, sizeof r.id, "%s/%d", names[r.label], 100 + i);
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
    }
    free(r.pixels);
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(chmod(path, 0600), 0); /* a secret set is its owner's alone */
}

/* The class of each served item, found by its pixels in the file. */
static void classes_served(const char *path, const uint8_t *served, size_t px, int n, int *cls)
{
    struct eeb_shard *sh;
    char err[256];
    cr_assert_eq(eeb_shard_open(&sh, path, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *rec;
    for (int i = 0; i < n; i++)
        cls[i] = -1;
    while (eeb_shard_next(sh, &rec, err, sizeof err) == 1)
        for (int i = 0; i < n; i++)
            if (memcmp(served + (size_t)i * px, rec->pixels, px) == 0)
                cls[i] = rec->label;
    eeb_shard_close(sh);
}

Test(attack, served_names_and_order_tell_no_class, .timeout = 120)
{
    struct arena a;
    arena_make(&a);
    food_layout(a.in.test);
    /* the other sets' classes are not Food-101's: the server takes the
     * test set alone (sets that disagree it refuses) */
    a.cfg.practice[EEB_TASK_CLS] = a.cfg.finetune[EEB_TASK_CLS] = NULL;
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&t, 2, 2, 0);
    char(*ids)[256];
    uint8_t *pixels;
    size_t px;
    int n = team_test_inputs(&t, &ids, &pixels, &px);
    cr_assert_eq(n, 40);
    static const char *const names[] = {"apple", "bibimbap", "churros", "donuts", "/"};
    for (int i = 0; i < n; i++) {
        cr_expect_eq(strlen(ids[i]), 32, "%s", ids[i]);
        cr_expect_eq(strspn(ids[i], "0123456789abcdef"), 32, "%s", ids[i]);
        for (size_t k = 0; k < sizeof names / sizeof *names; k++)
            cr_expect_null(strstr(ids[i], names[k]), "served as %s", ids[i]);
    }
    /* nor their place: the classes served are not in the file's blocks */
    int cls[40], changes = 0;
    classes_served(a.in.test, pixels, px, n, cls);
    for (int i = 0; i < n; i++) {
        cr_expect_geq(cls[i], 0, "item %d is not the file's", i);
        changes += i > 0 && cls[i] != cls[i - 1];
    }
    cr_expect_gt(changes, 12, "the classes come in blocks (%d changes)", changes);
    /* another run of this server is served the same names: predictions
     * outlive a restart; another server's are others */
    eeb_server_stop(a.s);
    arena_start(&a);
    struct team_run again;
    registers(&again, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&again, 2, 2, 0);
    char(*ids2)[256];
    cr_assert_eq(team_test_inputs(&again, &ids2, NULL, NULL), n);
    cr_expect_eq(memcmp(ids, ids2, (size_t)n * sizeof *ids), 0, "a restart renamed the items");
    eeb_server_stop(a.s);
    snprintf(a.sdb, sizeof a.sdb, "%s/another.db", a.dir);
    char err[256];
    cr_assert_eq(eeb_server_add_team(a.sdb, "alpha", a.alpha, err, sizeof err), EEB_OK);
    arena_start(&a);
    struct team_run elsewhere;
    registers(&elsewhere, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&elsewhere, 2, 2, 0);
    char(*ids3)[256];
    cr_assert_eq(team_test_inputs(&elsewhere, &ids3, NULL, NULL), n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            cr_expect_str_neq(ids[i], ids3[j], "two servers name an item alike");
    free(ids), free(ids2), free(ids3), free(pixels);
    eeb_server_stop(a.s);
}

/* ---- the test inputs and the predictions in time ---- */

Test(attack, inputs_follow_a_fine_tune_and_predictions_come_in_time, .timeout = 120)
{
    struct arena a;
    arena_make(&a);
    a.cfg.predict_within_s = 1;
    arena_start(&a);
    /* complete, but never streamed: no inputs */
    struct team_run after;
    registers(&after, &a, a.alpha, board_run(&a, 1, ""), 201);
    chain_after_the_fact(&after, 3);
    gets(&after, "test", 409, "error", "the run never asked the server to begin");
    /* streamed, but not a step trained */
    struct team_run idle;
    registers(&idle, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&idle, 0, 0, 0);
    gets(&idle, "test", 409, "error", "it took no training step");

    /* an honest run: its predictions in time, and sent again as they were
     * (a submission resumed) after the time allowed: still in time */
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&t, 2, 2, 0);
    char(*ids)[256], (*again)[256];
    int n = team_test_inputs(&t, &ids, NULL, NULL);
    cr_expect_eq(team_test_inputs(&t, &again, NULL, NULL), n); /* a download cut off, again */
    cr_expect_eq(memcmp(ids, again, (size_t)n * sizeof *ids), 0);
    json_t *preds = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(preds, json_pack("{s:s, s:[i]}", "id", ids[i], "top", 0));
    json_t *body = json_pack("{s:o}", "predictions", preds);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    struct reply r;
    for (int i = 0; i < 2; i++) {
        if (i)
            usleep(1400000);
        r = team_post(&t, "predictions", text);
        cr_expect_eq(r.code, 200, "%s", r.body);
        free(r.body);
    }
    free(text);
    r = team_post(&t, "score", NULL);
    json_t *v = json_loads(r.body, 0, NULL);
    free(r.body);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass", "%s",
                     json_dumps(v, 0));
    json_decref(v);

    /* one late: its inputs served no more, its predictions counted for
     * nothing */
    struct team_run late;
    registers(&late, &a, a.alpha, board_run(&a, 1, ""), 201);
    team_fine_tune(&late, 2, 2, 0);
    free(ids), free(again);
    n = team_test_inputs(&late, &ids, NULL, NULL);
    usleep(1400000);
    gets(&late, "test", 409, "error", "they are served no more");
    v = predict_and_score(&late, ids, n, 0);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "invalid");
    const char *why = json_string_value(json_object_get(v, "why"));
    cr_expect(why && strstr(why, "its predictions arrived 1.") &&
                  strstr(why, "after its test inputs were served; the server allows 1 s"),
              "%s", why);
    cr_expect(is_null(v, "m_s") && is_null(v, "S"), "%s", json_dumps(v, 0));
    json_decref(v);
    free(ids);
    eeb_server_stop(a.s);
}

/* ---- modeled means modeled ---- */

/* A modeled official run's registration: design, step time, watts,
 * batch 16, frozen layers, 2 epochs, and `more`. */
static char *modeled_run(const struct arena *a, const char *design, double step_s, double watts,
                         int frozen, const char *more)
{
    char *body;
    cr_assert(asprintf(&body,
                       "{\"task\": \"cls\", \"provenance\": \"modeled\", \"backend\": \"emu\", "
                       "\"official\": true, \"design\": \"%s\", \"finetune\": \"%s\", \"model\": "
                       "\"%s\", \"clock\": {\"kind\": \"modeled\", \"train_step_s\": %.17g, "
                       "\"train_w\": %.17g, \"batch\": 16, \"frozen\": %d, \"epochs\": 2}%s}",
                       design, a->ft_sha, a->model_sha, step_s, watts, frozen, more) > 0);
    return body;
}

Test(attack, a_modeled_runs_figures_are_the_servers_model_s, .timeout = 120)
{
    struct arena a;
    arena_make(&a);
    arena_start(&a);
    /* what an honest team computes: the analytical model of its design */
    struct eeb_net *net;
    int task;
    char err[256], spec[512];
    cr_assert_eq(eeb_model_load(a.in.model, &net, &task, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_design d;
    snprintf(spec, sizeof spec, "pes=4,macs=16");
    cr_assert_eq(eeb_design_for(&d, spec, net, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_perf perf = {0};
    cr_assert_eq(eeb_perf_model(&d, net, 16, 0, &perf, err, sizeof err), EEB_OK, "%s", err);
    int learnable = 0;
    for (int i = 0; i < net->nlayers; i++)
        learnable += eeb_layer_learnable(&net->layers[i]) != 0;
    double step = perf.train_step_s, watts = perf.train_power_w, m_u = perf.res.m_u;
    eeb_perf_free(&perf);
    eeb_net_free(net);
    struct team_run t;
    json_t *answer;

    /* a utilization of its own, frozen layers past the network's, a step
     * time of its own (told which figure, not the model's answer) */
    char *body = modeled_run(&a, spec, step, watts, 0,
                             ", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, \"dsp\": 0}");
    cr_expect_eq(team_register(&t, a.port, a.alpha, body, &answer), 400);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "util");
    json_decref(answer), free(body);
    body = modeled_run(&a, spec, step, watts, learnable, "");
    cr_expect_eq(team_register(&t, a.port, a.alpha, body, &answer), 409);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "clock.frozen");
    json_decref(answer), free(body);
    body = modeled_run(&a, spec, step / 2, watts, 0, "");
    cr_expect_eq(team_register(&t, a.port, a.alpha, body, &answer), 409);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "clock.train_step_s");
    char told[64];
    snprintf(told, sizeof told, "%.17g", step);
    char *text = json_dumps(answer, 0);
    cr_expect_null(strstr(text, told), "the model's step time told: %s", text);
    free(text);
    json_decref(answer), free(body);
    /* modeled on the wall clock, or by another spelling of a backend */
    struct team_run wall;
    cr_expect_eq(team_register(&wall, a.port, a.alpha,
                               "{\"task\": \"cls\", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, "
                               "\"dsp\": 0}, \"provenance\": \"modeled\", \"backend\": "
                               "\"library\"}",
                               &answer),
                 400);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "clock");
    json_decref(answer);

    /* the steps: the server counts 2 epochs of 64 items in batches of 16 */
    body = modeled_run(&a, spec, step, watts, 0, "");
    cr_assert_eq(team_register(&t, a.port, a.alpha, body, &answer), 201, "%s",
                 json_dumps(answer, 0));
    cr_expect_eq(json_integer_value(json_object_get(answer, "schedule_steps")), 8);
    json_decref(answer), free(body);
    team_fine_tune(&t, 1, 1, 0); /* one step said to be all */
    gets(&t, "test", 409, "error", "it says it took 1 steps; its schedule takes 8");
    /* nor is one step said to be interrupted, with no abort in its chain */
    struct team_run cut;
    body = modeled_run(&a, spec, step, watts, 0, "");
    cr_assert_eq(team_register(&cut, a.port, a.alpha, body, NULL), 201);
    free(body);
    cut.ended = "interrupted";
    team_fine_tune(&cut, 1, 1, 0);
    gets(&cut, "test", 409, "error", "it says it took 1 steps; its schedule takes 8");

    struct reply r = team_post(&t, "score", NULL);
    json_t *v = json_loads(r.body, 0, NULL);
    free(r.body);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "invalid");
    cr_expect(is_null(v, "m_s") && is_null(v, "S"), "%s", json_dumps(v, 0));
    json_decref(v);
    /* and a reviewer's eeb check of the server's copy says so too */
    char run[24];
    snprintf(run, sizeof run, "%lld", t.id);
    struct test_run c = test_eeb((const char *[]){"check", a.sdb, "--run", run, NULL});
    cr_expect_eq(c.status, 4, "%s%s", c.out, c.err);
    cr_expect(strstr(c.out, "its schedule takes 8"), "%s", c.out);
    test_run_free(&c);

    /* the schedule kept: T its steps on the modeled clock, M_u the design's */
    body = modeled_run(&a, spec, step, watts, 0, "");
    cr_assert_eq(team_register(&t, a.port, a.alpha, body, NULL), 201);
    free(body);
    team_fine_tune(&t, 8, 8, 0);
    char(*ids)[256];
    int n = team_test_inputs(&t, &ids, NULL, NULL);
    v = predict_and_score(&t, ids, n, 1);
    /* judged on its figures, its labels counted (pass, or fail at P_max
     * as its design's power says; never invalid) */
    const char *verdict = json_string_value(json_object_get(v, "verdict"));
    cr_expect(verdict && strcmp(verdict, "invalid") && json_is_number(json_object_get(v, "m_s")),
              "%s", json_dumps(v, 0));
    cr_expect_eq(!strcmp(verdict, "pass"), watts <= 10, "%s", json_dumps(v, 0));
    cr_expect(fabs(json_number_value(json_object_get(v, "t_s")) - 8 * step) <= 1e-12 * 8 * step,
              "%s", json_dumps(v, 0));
    /* (the design's figures go through the spec eeb run reads them from:
     * five decimals) */
    cr_expect(fabs(json_number_value(json_object_get(v, "m_u")) - m_u) < 1e-5, "M_u %.12f: %s", m_u,
              json_dumps(v, 0));
    json_decref(v);
    free(ids);
    eeb_server_stop(a.s);
}

/* ---- provenance, names, physics ---- */

/* A link of t's of samples from source reading watts, volts and amps
 * (NAN: null) at its second sample; its status and the field named. */
static long samples_from(struct team_run *t, const char *source, double watts, double volts,
                         const char **field_named, json_t **keep)
{
    struct team_run copy = *t;
    copy.source = source;
    json_t *links = json_array();
    json_array_append_new(links, team_origin(&copy));
    json_t *s = team_samples(&copy); /* its heads: a 5 W meter's; its readings changed below */
    json_t *second = json_array_get(json_object_get(s, "samples"), 1);
    json_array_set_new(second, 2, json_real(watts));
    json_array_set_new(second, 3, isnan(volts) ? json_null() : json_real(volts));
    json_array_append_new(links, s);
    struct reply r;
    long code = team_send(&copy, links, &r);
    *field_named = field(keep, &r, "field");
    free(r.body);
    return code;
}

Test(attack, provenance_names_and_readings_are_held_to_the_rules, .timeout = 60)
{
    struct arena a;
    arena_make(&a);
    char key[300], err[256], agent[320];
    snprintf(key, sizeof key, "%s/alpha.key", a.dir);
    cr_assert_eq(eeb_server_station_key(key, err, sizeof err), EEB_OK, "%s", err);
    snprintf(agent, sizeof agent, "agent:%s", key);
    a.cfg.stations[0] = (struct eeb_server_station){"beta", agent};
    arena_start(&a);

    /* what the server did not read is the team's word: declared */
    static const char *const claims[] = {"counter", "measured"};
    for (int i = 0; i < 2; i++) {
        char more[64], *body = board_run(&a, 1, ""), *at = strstr(body, "\"declared\"");
        snprintf(more, sizeof more, "\"%s\"", claims[i]);
        char *claimed;
        cr_assert(asprintf(&claimed, "%.*s%s%s", (int)(at - body), body, more,
                           at + strlen("\"declared\"")) > 0);
        free(body);
        json_t *answer;
        struct team_run t;
        cr_expect_eq(team_register(&t, a.port, a.alpha, claimed, &answer), 201);
        cr_expect_str_eq(json_string_value(json_object_get(answer, "provenance")), "declared",
                         "%s: %s", claims[i], json_dumps(answer, 0));
        json_decref(answer), free(claimed);
    }
    /* names in one spelling */
    static const char *const backends[] = {"EMU", "Emu", "xrt ", "unknown"};
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
        char *body;
        cr_assert(asprintf(&body,
                           "{\"task\": \"cls\", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, "
                           "\"dsp\": 0}, \"provenance\": \"declared\", \"backend\": \"%s\"}",
                           backends[i]) > 0);
        expect(a.port, "POST", "/api/v1/runs", body, a.alpha, 400, "field", "backend");
        free(body);
    }
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 0, ""), 201);
    const char *named;
    json_t *keep;
    cr_expect_eq(samples_from(&t, "Replay:board.csv", 5, NAN, &named, &keep), 400);
    cr_expect_str_eq(named, "links[1].source");
    json_decref(keep);
    cr_expect_eq(samples_from(&t, "sim:watts=0.001", 5, NAN, &named, &keep), 400);
    cr_expect_str_eq(named, "links[1].source"); /* modeled readings in a declared run */
    json_decref(keep);
    /* readings a board's meter does not give */
    cr_expect_eq(samples_from(&t, "ptd://lab:8888", -5, NAN, &named, &keep), 400);
    cr_expect_str_eq(named, "links[1].samples[1][2]");
    json_decref(keep);
    cr_expect_eq(samples_from(&t, "ptd://lab:8888", 5, -12, &named, &keep), 400);
    cr_expect_str_eq(named, "links[1].samples[1][3]");
    json_decref(keep);
    cr_expect_eq(samples_from(&t, "ptd://lab:8888", 5, NAN, &named, &keep), 200, "%s",
                 json_dumps(keep, 0)); /* as its heads were made: taken */
    json_decref(keep);

    /* the station route: the same rules for an agent's batches */
    char station[300];
    cr_assert_eq(eeb_server_station_key_read(key, station, err, sizeof err), EEB_OK, "%s", err);
    static const struct {
        const char *source;
        double watts;
        const char *field;
    } batches[] = {{"Replay:board.csv", 5, "source"}, {"ptd://lab:8888", -5, "samples[1][1]"}};
    for (int i = 0; i < 2; i++) {
        char body[512];
        snprintf(body, sizeof body,
                 "{\"session\": \"0a6f6c8e-9d6e-4c2b-8a51-3f1f7d2c9b10\", \"source\": \"%s\", "
                 "\"provenance\": \"declared\", \"rate_hz\": 10, \"now_ns\": 5000000000, "
                 "\"failed\": 0, \"dropped\": 0, \"samples\": [[1000000000, 5, null, null], "
                 "[1100000000, %g, null, null]]}",
                 batches[i].source, batches[i].watts);
        expect(a.port, "POST", "/api/v1/station/samples", body, station, 400, "field",
               batches[i].field);
    }
    eeb_server_stop(a.s);
}

/* A chain is one run's: sent again as another run, by its team or
 * another, it is refused, naming the run it copies. */
Test(attack, a_copied_chain_is_refused_naming_the_run_it_copies, .timeout = 60)
{
    struct arena a;
    arena_make(&a);
    arena_start(&a);
    struct team_run first, copy, again;
    registers(&first, &a, a.alpha, board_run(&a, 0, ""), 201);
    json_t *links = json_array();
    json_array_append_new(links, team_origin(&first));
    json_array_append_new(links, team_samples(&first));
    json_t *body = json_pack("{s:O}", "links", links);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    cr_assert_eq(team_send(&first, links, NULL), 200);
    registers(&copy, &a, a.beta, board_run(&a, 0, ""), 201);
    registers(&again, &a, a.alpha, board_run(&a, 0, ""), 201);
    char msg[64];
    snprintf(msg, sizeof msg, "is run %lld's", first.id);
    posts(&copy, "links", text, 409, "error", msg);
    posts(&copy, "links", text, 409, "field", "links[0]");
    posts(&again, "links", text, 409, "error", msg);
    /* sent again to its own run: held */
    struct reply r = team_post(&first, "links", text);
    cr_expect(r.code == 200 && strstr(r.body, "\"next\":2"), "%ld %s", r.code, r.body);
    free(r.body), free(text);
    eeb_server_stop(a.s);
}

/* The facts a server judged with are its own word: a team that writes an
 * evaluator event into its chain is refused, and one in a record of its
 * own making (a local run) counts for nothing: the judge recounts M_s. */
Test(attack, the_servers_facts_are_not_a_teams_to_write, .timeout = 120)
{
    struct arena a;
    char err[512];
    arena_make(&a);
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 0, ""), 201);
    json_t *links = json_array();
    json_array_append_new(links, team_origin(&t));
    json_array_append_new(links, team_event(&t, EEB_EVENT_EVALUATOR, "{\"m_s\": 0.99}"));
    struct reply r;
    cr_expect_eq(team_send(&t, links, &r), 400, "%s", r.body);
    cr_expect(strstr(r.body, "the evaluator event is the server's to write"), "%s", r.body);
    free(r.body);
    eeb_server_stop(a.s);
    /* a local run, judged; then a forged evaluator event, chained as the
     * run would: eeb check still recounts M_s from the predictions */
    struct test_run run = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", a.in.ft,
                                                    "--test", a.in.test, "--model", a.in.model,
                                                    "--db", a.in.db, "--epochs", "1", "-q", NULL});
    cr_assert_eq(run.status, 0, "%s%s", run.out, run.err);
    test_run_free(&run);
    double m_s = test_sql_double(a.in.db, "SELECT value FROM results WHERE name = 'm_s'");
    struct eeb_rundb *db;
    cr_assert_eq(eeb_rundb_open(a.in.db, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(eeb_rundb_event_add(db, 1, INT64_MAX / 2, eeb_utc_ns(), EEB_EVENT_EVALUATOR,
                                     "{\"m_s\": 0.0123, \"official\": false}", err, sizeof err),
                 EEB_OK, "%s", err);
    eeb_rundb_close(db);
    json_t *v = test_eeb_json((const char *[]){"check", a.in.db, "--json", NULL}, 0);
    cr_expect_eq(test_json_num(json_object_get(json_object_get(v, "figures"), "m_s"), "recomputed"),
                 m_s);
    cr_expect_neq(m_s, 0.0123);
    json_decref(v);
}

/* ---- the seed ---- */

/* Every official run is handed its seed, in a round or not: the team's
 * client that trains with a seed of its own pick (one more than it was
 * handed), or says none, is invalid on the server, naming both; the
 * honest one passes.  The seed also draws the training audit's slice, so
 * the team cannot choose which items it is audited on. */
Test(attack, an_official_run_trains_with_the_seed_it_is_handed, .timeout = 120)
{
    struct arena a;
    arena_make(&a);
    arena_start(&a);
    const struct {
        long long off; /* from the seed handed; -1: no seed at all */
        const char *verdict;
    } cases[] = {{0, "pass"}, {1, "invalid"}, {-1, "invalid"}};
    long long handed[3];
    for (int i = 0; i < 3; i++) {
        struct team_run t;
        registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
        handed[i] = t.handed_seed;
        cr_assert(handed[i] >= 1 && handed[i] <= 2147483648LL, "handed %lld", handed[i]);
        team_fine_tune(&t, 3, 3, cases[i].off < 0 ? -1 : handed[i] + cases[i].off);
        char(*ids)[256];
        int n = team_test_inputs(&t, &ids, NULL, NULL);
        json_t *v = predict_and_score(&t, ids, n, 0);
        const char *why = json_string_value(json_object_get(v, "why"));
        cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), cases[i].verdict, "%s",
                         why ? why : "");
        char want[200] = "";
        if (cases[i].off < 0)
            snprintf(want, sizeof want,
                     "the run's finetune_begin says no seed; the server handed it seed %lld",
                     handed[i]);
        else if (cases[i].off > 0)
            snprintf(want, sizeof want,
                     "the run trained with seed %lld; the server handed it seed %lld",
                     handed[i] + 1, handed[i]);
        cr_expect(!want[0] || (why && strstr(why, want)), "wanted \"%s\" in: %s", want,
                  why ? why : "");
        json_decref(v);
        free(ids);
    }
    cr_expect(handed[0] != handed[1] || handed[1] != handed[2], "a seed of its own for each run");
    eeb_server_stop(a.s);
}

/* The server requires the training audit of an official run: a team's
 * client that leaves it out (as a record made before eeb audited would)
 * is invalid on the server, and says why; one that writes it passes
 * (an_official_run_trains_with_the_seed_it_is_handed). */
Test(attack, an_official_run_without_the_training_audit_is_invalid, .timeout = 120)
{
    struct arena a;
    arena_make(&a);
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 1, ""), 201);
    t.no_audit = 1;
    team_fine_tune(&t, 3, 3, 0);
    char(*ids)[256];
    int n = team_test_inputs(&t, &ids, NULL, NULL);
    json_t *v = predict_and_score(&t, ids, n, 0);
    const char *why = json_string_value(json_object_get(v, "why"));
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "invalid");
    cr_expect(why && strstr(why, "its record has no training audit before the fine-tune; the "
                                 "server requires it of an official run"),
              "%s", why ? why : "");
    json_decref(v);
    free(ids);
    eeb_server_stop(a.s);
}

/* ---- what pages and the log show of a team's text ---- */

Test(attack, controls_and_bidi_characters_are_shown_escaped, .timeout = 60)
{
    struct arena a;
    arena_make(&a);
    char log_path[300];
    snprintf(log_path, sizeof log_path, "%s/server.log", a.dir);
    a.cfg.log = fopen(log_path, "w");
    cr_assert(a.cfg.log);
    arena_start(&a);
    struct team_run t;
    registers(&t, &a, a.alpha, board_run(&a, 0, ""), 201);
    /* a meter's URI and an abort's reason of the team's, whose U+202E
     * would turn "exe.gnp" into what reads "png.exe", and whose ESC would
     * clear an organizer's terminal */
    t.source = "ptd://lab\xe2\x80\xae"
               "exe.gnp\x1b"
               "[2J:8888";
    json_t *links = json_array();
    json_array_append_new(links, team_origin(&t));
    json_array_append_new(links, team_event(&t, EEB_EVENT_FINETUNE_BEGIN, NULL));
    json_array_append_new(links, team_samples(&t));
    json_array_append_new(
        links,
        team_event(&t, EEB_EVENT_ABORT, "{\"reason\": \"done\\u202egnp.exe\\u001b[2J\\u009b2J\"}"));
    struct reply r;
    cr_assert_eq(team_send(&t, links, &r), 200, "%s", r.body);
    free(r.body);
    posts(&t, "complete", NULL, 200, "state", "complete");
    r = team_post(&t, "score", NULL);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);
    /* a refusal is in the log, with its field */
    expect(a.port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, \"dsp\": 0}, "
           "\"provenance\": \"declared\", \"backend\": \"EMU\"}",
           a.alpha, 400, "field", "backend");
    char page[32];
    snprintf(page, sizeof page, "/runs/%lld", t.id);
    struct reply p = request(a.port, "GET", page, NULL, 0, NULL);
    cr_assert_eq(p.code, 200);
    cr_expect_null(memmem(p.body, p.len, "\xe2\x80\xae", 3), "a raw U+202E in the page");
    cr_expect_null(memchr(p.body, 0x1b, p.len), "a raw ESC in the page");
    cr_expect_null(memmem(p.body, p.len, "\xc2\x9b", 2), "a raw U+009B in the page");
    cr_expect(strstr(p.body, "\\u202e") && strstr(p.body, "\\x1b") && strstr(p.body, "\\u009b"),
              "shown escaped: %s", p.body);
    free(p.body);
    eeb_server_stop(a.s);
    fclose(a.cfg.log);
    size_t len;
    char *log = test_read_file(log_path, &len);
    cr_expect_null(memmem(log, len, "\xe2\x80\xae", 3), "a raw U+202E in the log: %s", log);
    cr_expect_null(memchr(log, 0x1b, len), "a raw ESC in the log");
    cr_expect(strstr(log, "\\u202e"), "the log shows it escaped: %s", log);
    cr_expect(strstr(log, " eeb serve: alpha: runs refused, 400 backend: expected emu, kernel"),
              "the refusal is not logged: %s", log);
    cr_expect(strstr(log, "scored: aborted, no S: "), "%s", log); /* not S = nan */
    cr_expect_null(strstr(log, a.alpha), "a token in the log");
    free(log);
}
