/*
 * test_round.c - a benchmark round over real HTTP: two teams, two entries
 * each of five official runs streamed as they go (their chains written
 * here, with power and predictions chosen so that every figure is known),
 * aggregated and ranked as computed by hand below; the closed division
 * refusing another base model and too many epochs, the cap on a team's
 * runs, and an entry's standing under both aggregations.
 */
#include "power/eeb_qualify.h"
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "server/server_int.h"
#include "tasks/eeb_shard.h"
#include "tests/server/http_client.h"
#include "tests/server/team_client.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- a team's official run, streamed ---- */

#define ROUND_MODEL "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define OTHER_MODEL "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define TEST_ITEMS  40

/* What a run is: its entry, and what it does. */
struct plan {
    const char *entry, *division, *model, *source;
    double watts;
    int correct; /* test items predicted right, of TEST_ITEMS */
    int epochs;
    int seed_off; /* the seed it trains with, off the one handed to it by this */
};

struct test_set {
    char ids[TEST_ITEMS][EEB_SHARD_MAX_ID + 1];
    int labels[TEST_ITEMS];
};

static char *registration(const struct plan *p)
{
    char *body;
    cr_assert(asprintf(&body,
                       "{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": 0.4, "
                       "\"dsp\": 0.2}, \"provenance\": \"declared\", \"device\": \"zcu104\", "
                       "\"backend\": \"xrt\", \"official\": true, \"entry\": \"%s\", "
                       "\"division\": \"%s\", \"model\": \"%s\"}",
                       p->entry, p->division, p->model) > 0);
    return body;
}

/* Registers a run of plan p: its id, or 0 if refused (*refusal kept);
 * the run in c, if not NULL. */
static long long register_run(int port, const char *token, const struct plan *p, json_t **answer,
                              struct team_run *c)
{
    struct team_run run;
    char *body = registration(p);
    long code = team_register(&run, port, token, body, answer);
    free(body);
    cr_assert(code == 201 || code == 409, "register: %ld %s", code, json_dumps(*answer, 0));
    run.watts = p->watts, run.source = p->source;
    if (c)
        *c = run;
    return code == 201 ? run.id : 0;
}

/* An official run of plan p, streamed as it goes: the meter's second
 * before, begin, its epochs over 0.3 s, the end, the samples after; then
 * complete, its predictions, and its score.  The server's verdict. */
static json_t *official_run(int port, const char *token, const struct plan *p,
                            const struct test_set *t)
{
    json_t *answer;
    struct team_run c;
    cr_assert(register_run(port, token, p, &answer, &c) > 0, "%s", json_dumps(answer, 0));
    long long seed = json_integer_value(json_object_get(json_object_get(answer, "round"), "seed"));
    json_decref(answer);
    json_t *first = json_array();
    json_array_append_new(first, team_origin(&c));
    json_array_append_new(first, team_samples(&c));
    team_stream(&c, first);
    struct reply r = team_post(&c, "begin", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    free(r.body);
    /* the seed it trains with: the one it was handed, unless told otherwise */
    char begin_payload[64];
    snprintf(begin_payload, sizeof begin_payload, "{\"seed\": %lld}", seed + p->seed_off);
    json_t *audit = team_audit(&c, EEB_TRAINING_AUDIT_BEFORE, seed + p->seed_off);
    team_stream(
        &c, json_pack("[o, o]", audit, team_event(&c, EEB_EVENT_FINETUNE_BEGIN, begin_payload)));
    for (int e = 0; e < p->epochs; e++) {
        usleep(300000 / (useconds_t)p->epochs);
        json_t *epoch = json_array();
        json_array_append_new(epoch, team_samples(&c));
        json_array_append_new(epoch, team_event(&c, EEB_EVENT_EPOCH_END, NULL));
        team_stream(&c, epoch);
    }
    char complete[64]; /* the steps it took: an epoch a step, here */
    snprintf(complete, sizeof complete, "{\"reason\": \"done\", \"step\": %d}", p->epochs);
    json_t *end = json_array();
    json_array_append_new(end, team_event(&c, EEB_EVENT_COMPLETE, complete));
    json_array_append_new(end, team_event(&c, EEB_EVENT_FINETUNE_END, NULL));
    json_array_append_new(end, team_event(&c, EEB_EVENT_STOPPED, NULL));
    json_array_append_new(end, team_audit(&c, EEB_TRAINING_AUDIT_AFTER, seed + p->seed_off));
    team_stream(&c, end);
    usleep(60000);
    team_stream(&c, json_pack("[o]", team_samples(&c)));
    r = team_post(&c, "complete", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    free(r.body);
    r = team_get(&c, "test"); /* its inputs, once */
    cr_assert_eq(r.code, 200, "%s", r.body);
    free(r.body);
    /* the first `correct` items right (their class first), the rest not */
    json_t *preds = json_array();
    for (int i = 0; i < TEST_ITEMS; i++)
        json_array_append_new(preds,
                              json_pack("{s:s, s:[i]}", "id", t->ids[i], "top",
                                        i < p->correct ? t->labels[i] : (t->labels[i] + 1) % 4));
    json_t *body = json_pack("{s:o}", "predictions", preds);
    char *text = json_dumps(body, JSON_COMPACT);
    r = team_post(&c, "predictions", text);
    cr_assert_eq(r.code, 200, "%s", r.body);
    free(r.body), free(text);
    json_decref(body);
    r = team_post(&c, "score", NULL);
    cr_assert_eq(r.code, 200, "%s", r.body);
    json_t *verdict = json_loads(r.body, 0, NULL);
    free(r.body);
    return verdict;
}

/* ---- the round ---- */

static void read_test_set(const char *path, struct test_set *t)
{
    struct eeb_shard *sh;
    char err[256];
    cr_assert_eq(eeb_shard_open(&sh, path, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *rec;
    for (int i = 0; i < TEST_ITEMS; i++) {
        cr_assert_eq(eeb_shard_next(sh, &rec, err, sizeof err), 1, "%s", err);
        memcpy(t->ids[i], rec->id, sizeof t->ids[i]);
        t->labels[i] = rec->label;
    }
    eeb_shard_close(sh);
}

/* The names the server serves the test items under: its key's digest of
 * each item's task and id (server/testset.c), which this test, holding
 * the server's database, can make too (a team cannot): the runs here
 * predict items whose labels the test knows. */
static void name_as_served(const char *sdb, struct test_set *t)
{
    char *hex = NULL, text[EEB_SHARD_MAX_ID + 8], digest[EEB_SHA256_HEX];
    uint8_t key[32];
    cr_assert_eq(test_sql_text(sdb, "SELECT lower(hex(key)) FROM server_key", &hex), 0);
    cr_assert_eq(strlen(hex), 64);
    for (int i = 0; i < 32; i++)
        sscanf(hex + 2 * i, "%2hhx", &key[i]);
    free(hex);
    for (int i = 0; i < TEST_ITEMS; i++) {
        int n = snprintf(text, sizeof text, "cls/%s", t->ids[i]);
        eeb_hmac_sha256(key, sizeof key, text, (size_t)n, digest);
        snprintf(t->ids[i], sizeof t->ids[i], "%.32s", digest);
    }
}

static json_t *leaderboard(int port, const char *query)
{
    char path[160];
    snprintf(path, sizeof path, "/api/v1/leaderboard?task=cls%s", query);
    struct reply r = request(port, "GET", path, NULL, 0, NULL);
    cr_assert_eq(r.code, 200, "%s: %ld %s", path, r.code, r.body);
    json_t *o = json_loads(r.body, 0, NULL);
    cr_assert_not_null(o, "%s", r.body);
    free(r.body);
    return o;
}

static double number_at(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_number(v), "no number %s in %s", key, json_dumps(o, 0));
    return json_number_value(v);
}

/* Five runs each: correct items of 40, and the meter's watts (P_max 10 W).
 * S = 1 - [0.1 M_u + 0.1 M_t + 0.4 M_p + 0.4 (1 - M_s)], M_p = W / 10,
 * M_u the same for all, M_t = T / 60 s with T about 0.3 s (so about
 * 0.0005, and the same within a millisecond's jitter, 2e-6 of S).  Per run,
 * S + 0.1 M_u + 0.1 M_t = 1 - 0.04 W - 0.4 + 0.01 correct:
 *   alpha a1, 8 W: correct 30 34 32 36 31 -> median 32: 0.6 - 0.32 + 0.32 = 0.60
 *   alpha a2, 4 W: correct 20 22 21 23 19 -> median 21: 0.6 - 0.16 + 0.21 = 0.65
 *   beta  b1, 6 W: correct 36 38 37 39 35 -> median 37: 0.6 - 0.24 + 0.37 = 0.73
 *   beta  b2, 5 W: correct 38 ... and its second run trains 4 epochs, one
 *                  more than the closed division allows, its fourth with
 *                  another seed than it was handed: the entry fails.
 * So, each team's best: beta b1 (0.73), then alpha a2 (0.65); with every
 * entry, a1 (0.60) third and b2 failed last.  Against energy (W x 0.3 s):
 * b1 (1.8 J, M_s 0.925) and a2 (1.2 J, 0.525) are on the front; a1 (2.4 J,
 * 0.80) is not: b1 uses less for more.  Measured by the board's sensors:
 * a1 by RAPL, never qualified; b1 by an INA226 on hwmon, qualified on the
 * zcu104 against a PTDaemon. */
#define RAPL  "rapl:package-0"
#define PTD   "ptd://lab:8888"
#define HWMON "hwmon:ina226/power1"
static const struct {
    int team; /* 0 alpha, 1 beta */
    struct plan p;
    int correct[5];
} entries[] = {
    {0, {"a1", "closed", ROUND_MODEL, RAPL, 8, 0, 3, 0}, {30, 34, 32, 36, 31}},
    {0, {"a2", "closed", ROUND_MODEL, PTD, 4, 0, 3, 0}, {20, 22, 21, 23, 19}},
    {1, {"b1", "closed", ROUND_MODEL, HWMON, 6, 0, 3, 0}, {36, 38, 37, 39, 35}},
    {1, {"b2", "closed", ROUND_MODEL, PTD, 5, 0, 3, 0}, {38, 38, 38, 38, 38}},
};

Test(round, two_teams_two_entries_five_runs_ranked_by_their_median, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char sdb[300], test[300], err[512], tokens[2][EEB_TOKEN_HEX];
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(test, sizeof test, "%s/test.eebd", dir);
    cr_assert_eq(rename(test_cls_shard(TEST_ITEMS, 8, 2), test), 0);
    struct test_set set;
    read_test_set(test, &set);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", tokens[0], err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_add_team(sdb, "beta", tokens[1], err, sizeof err), EEB_OK, "%s", err);
    struct eeb_round round;
    eeb_round_default(&round, "r1");
    round.cap = 12;
    round.task[EEB_TASK_CLS].t_max_s = 60;
    round.task[EEB_TASK_CLS].tiers_w[0] = 10;
    round.task[EEB_TASK_CLS].epochs_max = 3;
    memcpy(round.task[EEB_TASK_CLS].model_sha256, ROUND_MODEL, 65);
    cr_assert_eq(eeb_server_round_open(sdb, &round, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_qualify_config qc;
    eeb_power_qualify_default(&qc);
    qc.reference = "ptd://lab:8888", qc.candidate = HWMON;
    struct eeb_qualify_result qr = {.pass = 1, .windows = 5, .window_s = 60, .rate_hz = 10};
    static const char *const phases[] = {"idle", "load 1", "load 2"};
    for (int i = 0; i < 3; i++)
        qr.phase[i] = (struct eeb_qualify_phase){.name = phases[i], .within = 1};
    cr_assert_eq(eeb_power_qualify_store(sdb, "zcu104", HWMON, &qc, &qr, NULL, err, sizeof err),
                 EEB_OK, "%s", err);
    char log_path[320];
    snprintf(log_path, sizeof log_path, "%s/server.log", dir);
    FILE *log = fopen(log_path, "w");
    cr_assert_not_null(log);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0, cfg.test[EEB_TASK_CLS] = test, cfg.log = log;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    name_as_served(sdb, &set);

    /* the runs, the entries' turns interleaved as teams would run them */
    double got[4][5];
    for (int run = 0; run < 5; run++)
        for (int e = 0; e < 4; e++) {
            struct plan p = entries[e].p;
            p.correct = entries[e].correct[run];
            p.epochs = e == 3 && run == 1 ? 4 : 3;
            p.seed_off = e == 3 && run == 3; /* b2's fourth: not the seed it was handed */
            json_t *v = official_run(port, tokens[entries[e].team], &p, &set);
            const char *verdict = json_string_value(json_object_get(v, "verdict"));
            if (e == 3 && run == 3) {
                cr_expect_str_eq(verdict, "invalid", "%s", json_dumps(v, 0));
                cr_expect(strstr(json_string_value(json_object_get(v, "why")),
                                 "the run trained with seed "),
                          "%s", json_dumps(v, 0));
            } else if (e == 3 && run == 1) {
                cr_expect_str_eq(verdict, "invalid", "%s", json_dumps(v, 0));
                cr_expect(strstr(json_string_value(json_object_get(v, "why")),
                                 "the run trained 4 epochs; round r1's closed division allows 3"),
                          "%s", json_dumps(v, 0));
            } else {
                cr_assert_str_eq(verdict, "pass", "%s", json_dumps(v, 0));
                got[e][run] = number_at(v, "S");
                /* the figure by hand, M_u and M_t as the server has them */
                double m_u = number_at(v, "m_u"), m_t = number_at(v, "m_t");
                double by_hand = 0.6 - 0.04 * p.watts + 0.01 * p.correct - 0.1 * m_u - 0.1 * m_t;
                cr_expect(fabs(got[e][run] - by_hand) < 1e-9, "S %.12f, by hand %.12f", got[e][run],
                          by_hand);
            }
            json_decref(v);
        }

    /* each team's best, ranked by its median S */
    json_t *board = leaderboard(port, "");
    json_t *round_o = json_object_get(board, "round");
    cr_expect_str_eq(json_string_value(json_object_get(round_o, "name")), "r1");
    cr_expect_str_eq(json_string_value(json_object_get(round_o, "aggregate")), "median");
    json_t *tables = json_object_get(board, "tables");
    cr_assert_eq(json_array_size(tables), 1, "%s", json_dumps(board, 0));
    json_t *table = json_array_get(tables, 0);
    cr_expect_str_eq(json_string_value(json_object_get(table, "provenance")), "declared");
    cr_expect_eq(number_at(table, "p_max_w"), 10);
    json_t *shown = json_object_get(table, "entries");
    cr_assert_eq(json_array_size(shown), 2, "%s", json_dumps(table, 0));
    static const char *const best[] = {"b1", "a2"};
    static const int best_index[] = {2, 1};
    for (int i = 0; i < 2; i++) {
        json_t *e = json_array_get(shown, (size_t)i);
        cr_expect_str_eq(json_string_value(json_object_get(e, "entry")), best[i]);
        cr_expect_eq(json_integer_value(json_object_get(e, "rank")), i + 1);
        cr_expect_str_eq(json_string_value(json_object_get(e, "state")), "ranked");
        cr_expect_str_eq(json_string_value(json_object_get(e, "division")), "closed");
        cr_expect_str_eq(json_string_value(json_object_get(e, "backend")), "xrt");
        const double *x = got[best_index[i]];
        const int median_run = 2; /* b1's 37 right and a2's 21: both their third run */
        cr_expect_eq(number_at(e, "S"), x[median_run], "%.17g vs %.17g", number_at(e, "S"),
                     x[median_run]);
        double lo = x[0], hi = x[0];
        for (int r = 1; r < 5; r++)
            lo = fmin(lo, x[r]), hi = fmax(hi, x[r]);
        cr_expect_eq(number_at(e, "S_min"), lo);
        cr_expect_eq(number_at(e, "S_max"), hi);
        cr_expect_eq(json_array_size(json_object_get(e, "runs")), 5);
        cr_expect(json_is_true(json_object_get(e, "pareto")), "%s", json_dumps(e, 0));
        cr_expect_str_eq(json_string_value(json_object_get(e, "backend")), "xrt");
        cr_expect(json_is_string(json_object_get(e, "submitted_utc")));
    }
    cr_expect(fabs(number_at(json_array_get(shown, 0), "m_s") - 37.0 / 40) < 1e-12);
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(shown, 0), "sensor")), HWMON);
    cr_expect(json_is_true(json_object_get(json_array_get(shown, 0), "sensor_qualified")));
    cr_expect(json_is_null(json_object_get(json_array_get(shown, 1), "sensor_qualified")));
    json_decref(board);

    /* every entry: a1 third and off the front, b2 failed with its reason */
    board = leaderboard(port, "&all=1");
    shown = json_object_get(json_array_get(json_object_get(board, "tables"), 0), "entries");
    cr_assert_eq(json_array_size(shown), 4, "%s", json_dumps(board, 0));
    json_t *a1 = json_array_get(shown, 2), *b2 = json_array_get(shown, 3);
    cr_expect_str_eq(json_string_value(json_object_get(a1, "entry")), "a1");
    cr_expect_eq(json_integer_value(json_object_get(a1, "rank")), 3);
    cr_expect(json_is_false(json_object_get(a1, "pareto")));
    cr_expect(json_is_false(json_object_get(a1, "sensor_qualified")), "%s", json_dumps(a1, 0));
    cr_expect_eq(number_at(a1, "S"), got[0][2]); /* 32 right: its third run */
    cr_expect_str_eq(json_string_value(json_object_get(b2, "entry")), "b2");
    cr_expect_str_eq(json_string_value(json_object_get(b2, "state")), "failed");
    cr_expect(json_is_null(json_object_get(b2, "rank")));
    cr_expect(strstr(json_string_value(json_object_get(b2, "why")), "invalid: the run trained 4"),
              "%s", json_dumps(b2, 0));
    json_decref(board);

    /* the closed division binds the base model; the open one does not */
    json_t *answer;
    struct plan other = {"b3", "closed", OTHER_MODEL, PTD, 5, 0, 3, 0};
    cr_expect_eq(register_run(port, tokens[1], &other, &answer, NULL), 0);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "model");
    cr_expect(strstr(json_string_value(json_object_get(answer, "error")), ROUND_MODEL), "%s",
              json_dumps(answer, 0));
    json_decref(answer);
    other.division = "open";
    long long open_run = register_run(port, tokens[1], &other, &answer, NULL);
    cr_expect(open_run > 0, "%s", json_dumps(answer, 0));
    cr_expect_str_eq(
        json_string_value(json_object_get(json_object_get(answer, "round"), "division")), "open");
    json_decref(answer);
    /* an entry keeps its division, and has five runs at most */
    struct plan b1 = entries[2].p;
    b1.division = "open";
    cr_expect_eq(register_run(port, tokens[1], &b1, &answer, NULL), 0);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "division");
    json_decref(answer);
    cr_expect_eq(register_run(port, tokens[1], &entries[2].p, &answer, NULL), 0);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "entry");
    cr_expect(strstr(json_string_value(json_object_get(answer, "error")), "has its 5 runs"), "%s",
              json_dumps(answer, 0));
    json_decref(answer);

    /* the cap: alpha has made 10 runs of its 12; two more, then no more */
    struct plan spare = {"spare", "closed", ROUND_MODEL, PTD, 5, 0, 3, 0};
    json_int_t seeds[2];
    for (int i = 0; i < 2; i++) {
        long long id = register_run(port, tokens[0], &spare, &answer, NULL);
        cr_expect(id > 0, "%s", json_dumps(answer, 0));
        /* each run is handed a seed of its own, kept in its configuration */
        seeds[i] = json_integer_value(json_object_get(json_object_get(answer, "round"), "seed"));
        cr_expect(seeds[i] >= 1 && seeds[i] <= 2147483648LL, "%s", json_dumps(answer, 0));
        char sql[160];
        snprintf(sql, sizeof sql,
                 "SELECT config ->> '$.server.round.seed' FROM runs WHERE id = %lld", id);
        cr_expect_eq(test_sql_int(sdb, sql), seeds[i]);
        json_decref(answer);
    }
    cr_expect_neq(seeds[0], seeds[1]);
    cr_expect_eq(register_run(port, tokens[0], &spare, &answer, NULL), 0);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "round");
    cr_expect(strstr(json_string_value(json_object_get(answer, "error")),
                     "team alpha has registered 12 official cls runs in round r1, its cap"),
              "%s", json_dumps(answer, 0));
    json_decref(answer);

    /* runs in progress: listed live, and their entries running */
    board = leaderboard(port, "&all=1");
    json_t *running = json_object_get(board, "running");
    cr_expect_eq(json_array_size(running), 3, "%s", json_dumps(running, 0));
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(running, 2), "run_id")),
                 open_run);
    /* the open division's entry in a table of its own, after the closed one */
    tables = json_object_get(board, "tables");
    cr_assert_eq(json_array_size(tables), 2, "%s", json_dumps(tables, 0));
    json_t *open_table = json_array_get(tables, 1);
    cr_expect_str_eq(json_string_value(json_object_get(open_table, "division")), "open");
    cr_expect_str_eq(json_string_value(json_object_get(
                         json_array_get(json_object_get(open_table, "entries"), 0), "entry")),
                     "b3");
    shown = json_object_get(json_array_get(tables, 0), "entries");
    cr_expect_eq(json_array_size(shown), 5, "%s", json_dumps(shown, 0));
    json_t *spare_o = json_array_get(shown, 3);
    cr_expect_str_eq(json_string_value(json_object_get(spare_o, "entry")), "spare");
    cr_expect_str_eq(json_string_value(json_object_get(spare_o, "state")), "running");
    cr_expect_eq(json_integer_value(json_object_get(spare_o, "scored")), 0);
    json_decref(board);
    /* the open division only; an unknown round */
    board = leaderboard(port, "&all=1&division=open");
    shown = json_object_get(json_array_get(json_object_get(board, "tables"), 0), "entries");
    cr_expect_eq(json_array_size(shown), 1, "%s", json_dumps(board, 0));
    json_decref(board);
    expect(port, "GET", "/api/v1/leaderboard?task=cls&round=r9", NULL, NULL, 404, "error",
           "no round named 'r9'");
    expect(port, "GET", "/api/v1/leaderboard?task=cls&division=both", NULL, NULL, 400, "field",
           "division");
    expect(port, "GET", "/api/v1/leaderboard?task=cl%AE%EE", NULL, NULL, 400, "error",
           "unknown task 'cl?"
           "?'");
    expect(port, "GET", "/api/v1/leaderboard", NULL, NULL, 400, "field", "task");

    /* the organizer: a run hidden under review takes its entry off the
     * board, shown again brings it back; a run withdrawn fails its entry;
     * each act in the audit log; the board sees acts of another process
     * within a second */
    board = leaderboard(port, "");
    shown = json_object_get(json_array_get(json_object_get(board, "tables"), 0), "entries");
    json_t *b1_runs = json_object_get(json_array_get(shown, 0), "runs");
    long long b1_run = json_integer_value(json_array_get(b1_runs, 1)); /* its second */
    json_decref(board);
    cr_assert_gt(b1_run, 0);
    cr_assert_eq(
        eeb_server_run_act(sdb, b1_run, EEB_SERVER_HIDE, "power log disputed", err, sizeof err),
        EEB_OK, "%s", err);
    cr_expect_eq(eeb_server_run_act(sdb, b1_run, EEB_SERVER_HIDE, "again", err, sizeof err),
                 EEB_EINVAL);
    cr_expect_eq(eeb_server_run_act(sdb, b1_run, EEB_SERVER_HIDE, "", err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "--reason"), "%s", err);
    char run_page[64];
    snprintf(run_page, sizeof run_page, "/runs/%lld", b1_run);
    expect(port, "GET", run_page, NULL, NULL, 404, "error", "is under review");
    usleep(1100000);
    board = leaderboard(port, "");
    shown = json_object_get(json_array_get(json_object_get(board, "tables"), 0), "entries");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(shown, 0), "entry")), "a2",
                     "%s", json_dumps(shown, 0));
    json_decref(board);
    cr_assert_eq(eeb_server_run_act(sdb, b1_run, EEB_SERVER_RESTORE, "log checked: it stands", err,
                                    sizeof err),
                 EEB_OK, "%s", err);
    long long a2_run = b1_run - 1; /* the runs interleave: a2's is the one before */
    cr_assert_eq(eeb_server_run_act(sdb, a2_run, EEB_SERVER_WITHDRAW, "the board was not stock",
                                    err, sizeof err),
                 EEB_OK, "%s", err);
    usleep(1100000);
    board = leaderboard(port, "&all=1");
    shown = json_object_get(json_array_get(json_object_get(board, "tables"), 0), "entries");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(shown, 0), "entry")), "b1");
    cr_expect_str_eq(json_string_value(json_object_get(json_array_get(shown, 1), "entry")), "a1");
    char withdrawn[160];
    snprintf(withdrawn, sizeof withdrawn,
             "run %lld withdrawn by the organizer: the board was not stock", a2_run);
    int seen = 0;
    for (size_t i = 0; i < json_array_size(shown); i++) {
        const char *why = json_string_value(json_object_get(json_array_get(shown, i), "why"));
        seen += why && strcmp(why, withdrawn) == 0;
    }
    cr_expect_eq(seen, 1, "%s", json_dumps(shown, 0));
    json_decref(board);
    /* a team revoked: its token is refused */
    cr_assert_eq(eeb_server_team_revoke(sdb, "beta", "left the round", err, sizeof err), EEB_OK,
                 "%s", err);
    expect(port, "GET", "/api/v1/whoami", NULL, tokens[1], 401, "error", "unknown token");
    char audit[320];
    snprintf(audit, sizeof audit, "%s/audit.txt", dir);
    FILE *out = fopen(audit, "w");
    cr_assert_eq(eeb_server_list_audit(sdb, out, err, sizeof err), EEB_OK, "%s", err);
    fclose(out);
    char *text = test_read_file(audit, NULL);
    static const char *const acts[] = {"open-round    r1", "hide-run", "restore-run",
                                       "withdraw-run", "revoke-team   beta             left"};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
        cr_expect(strstr(text, acts[i]), "no '%s' in:\n%s", acts[i], text);
    free(text);
    /* /metrics: the runs in progress, the samples taken in */
    struct reply m = request(port, "GET", "/metrics", NULL, 0, NULL);
    cr_expect(strstr(m.body, "eeb_runs_in_progress 3\n"), "%s", m.body);
    cr_expect(strstr(m.body, "eeb_teams 1\n"), "%s", m.body);
    cr_expect(strstr(m.body, "eeb_samples_received_total "), "%s", m.body);
    cr_expect_null(strstr(m.body, "eeb_samples_received_total 0\n"), "%s", m.body);
    free(m.body);

    /* closed: an official run is refused, the standings stay */
    cr_assert_eq(eeb_server_round_close(sdb, "r1", err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(register_run(port, tokens[0], &entries[0].p, &answer, NULL), 0);
    cr_expect_str_eq(json_string_value(json_object_get(answer, "field")), "round");
    json_decref(answer);
    board = leaderboard(port, "");
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(board, "round"), "state")),
                     "closed");
    json_decref(board);

    /* the next round: every round listed, each linked to its standings, and
     * the closed one's standings still there, beta marked revoked */
    struct eeb_round r2;
    eeb_round_default(&r2, "r2");
    cr_assert_eq(eeb_server_round_open(sdb, &r2, err, sizeof err), EEB_OK, "%s", err);
    usleep(1100000); /* the board sees the organizer's acts within a second */
    struct reply home = request(port, "GET", "/leaderboard", NULL, 0, NULL);
    struct reply r1_page = request(port, "GET", "/leaderboard?round=r1", NULL, 0, NULL);
    cr_expect_eq(home.code, 200);
    cr_expect_eq(r1_page.code, 200);
    cr_expect(strstr(home.body, "<li><a href=\"/leaderboard?round=r1\">r1</a>, closed, <time>"),
              "%s", home.body);
    cr_expect(strstr(home.body, "<li><a href=\"/leaderboard?round=r2\">r2</a>, open, <time>"), "%s",
              home.body);
    cr_expect(strstr(home.body, "(median) <b>(shown below)</b></li>\n</ul>"), "r2 shown: %s",
              home.body);
    cr_expect(strstr(r1_page.body, "Round <b>r1</b>, closed,"), "%s", r1_page.body);
    cr_expect(strstr(r1_page.body, "<td>beta <span class=\"revoked\""), "%s", r1_page.body);
    cr_expect_null(strstr(r1_page.body, "<td>alpha <span class=\"revoked\""));
    free(home.body), free(r1_page.body);
    board = leaderboard(port, "&round=r1");
    json_t *first = json_array_get(
        json_object_get(json_array_get(json_object_get(board, "tables"), 0), "entries"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(first, "team")), "beta");
    cr_expect(json_is_true(json_object_get(first, "revoked")), "%s", json_dumps(first, 0));
    json_decref(board);
    eeb_server_stop(s);

    /* the log: the refused credential and the registration refused after
     * the close, each with its field; never a token, never S = nan */
    fclose(log);
    char *said = test_read_file(log_path, NULL);
    cr_expect(strstr(said, " eeb serve: a caller: whoami refused, 401 Authorization: unknown "
                           "token\n"),
              "%s", said);
    cr_expect(strstr(said, " eeb serve: alpha: runs refused, 409 round: no round is open on "
                           "this server"),
              "%s", said);
    cr_expect(strstr(said, " scored: pass, S = 0."), "%s", said);
    cr_expect_null(strstr(said, "= nan"), "%s", said);
    cr_expect_null(strstr(said, "-nan"), "%s", said);
    cr_expect_null(strstr(said, tokens[0]), "a token in the log");
    cr_expect_null(strstr(said, tokens[1]), "a token in the log");
    free(said);
}

/* ---- an entry's standing, by hand ---- */

static struct eeb_srv_run scored_run(double s, const char *verdict)
{
    struct eeb_srv_run r = {.s = s, .energy_j = 10 * s, .t_s = 1, .m_s = s, .completed_utc_ns = 5};
    snprintf(r.state, sizeof r.state, "scored");
    snprintf(r.verdict, sizeof r.verdict, "%s", verdict);
    snprintf(r.why, sizeof r.why, "%s", strcmp(verdict, "pass") ? "above P_max" : "");
    return r;
}

Test(round, an_entry_stands_by_its_runs_median_or_olympic_mean)
{
    struct eeb_round round;
    eeb_round_default(&round, "r");
    struct eeb_srv_run runs[5];
    const double s[5] = {0.50, 0.70, 0.55, 0.61, 0.58};
    for (int i = 0; i < 5; i++)
        runs[i] = scored_run(s[i], "pass");
    struct eeb_srv_entry e = {.runs = runs, .nruns = 4};
    struct eeb_srv_standing st;
    /* four of five scored: still running */
    eeb_srv_standing_of(&e, &round, &st);
    cr_expect_eq(st.state, EEB_STANDING_RUNNING);
    cr_expect_eq(st.scored, 4);
    cr_expect(isnan(st.s));
    /* five: median 0.58 (of 0.50 0.55 0.58 0.61 0.70), spread 0.50 to 0.70 */
    e.nruns = 5;
    eeb_srv_standing_of(&e, &round, &st);
    cr_expect_eq(st.state, EEB_STANDING_RANKED);
    cr_expect_eq(st.s, 0.58);
    cr_expect_eq(st.s_min, 0.50);
    cr_expect_eq(st.s_max, 0.70);
    cr_expect_eq(st.energy_j, 10 * 0.58);
    /* Olympic: 0.50 and 0.70 dropped, (0.55 + 0.58 + 0.61) / 3 */
    round.aggregate = EEB_ROUND_OLYMPIC;
    eeb_srv_standing_of(&e, &round, &st);
    cr_expect_float_eq(st.s, (0.55 + 0.58 + 0.61) / 3, 1e-15);
    /* one run not passed: the entry fails, naming it */
    runs[3] = scored_run(NAN, "fail");
    runs[3].id = 44;
    eeb_srv_standing_of(&e, &round, &st);
    cr_expect_eq(st.state, EEB_STANDING_FAILED);
    cr_expect_str_eq(st.why, "run 44: fail: above P_max");
    /* runs past the round's number are not the entry's: of three, 0.50
     * 0.70 0.55, the Olympic mean drops 0.50 and 0.70 */
    round.runs = 3;
    eeb_srv_standing_of(&e, &round, &st);
    cr_expect_eq(st.state, EEB_STANDING_RANKED);
    cr_expect_eq(st.scored, 3);
    cr_expect_eq(st.s, 0.55);
    /* a reason cut to its buffer's size stays UTF-8, or JSON drops it */
    char cut[] = "caf\xc3", whole[] = "caf\xc3\xa9", euro[] = "1 \xe2\x82";
    eeb_utf8_trim(cut), eeb_utf8_trim(whole), eeb_utf8_trim(euro);
    cr_expect_str_eq(cut, "caf");
    cr_expect_str_eq(whole, "caf\xc3\xa9");
    cr_expect_str_eq(euro, "1 ");
    /* ranks told apart only past both S's uncertainties (none stated: 0) */
    struct eeb_srv_standing x = {.s = 0.700, .s_uncertainty = 0.004},
                            y = {.s = 0.695, .s_uncertainty = 0.002},
                            z = {.s = 0.690, .s_uncertainty = NAN};
    cr_expect_not(eeb_srv_standing_apart(&x, &y)); /* 0.005 apart, within 0.006 */
    cr_expect(eeb_srv_standing_apart(&x, &z));     /* 0.010 apart, past 0.004 */
    cr_expect(eeb_srv_standing_apart(&y, &z));     /* 0.005, past 0.002 */
    z.s = 0.695;
    cr_expect_not(eeb_srv_standing_apart(&y, &z)); /* equal S: a tie */
    /* the front: no more energy for no less M_s, and better in one */
    struct eeb_srv_standing a = {.energy_j = 2, .m_s = 0.8}, b = {.energy_j = 1, .m_s = 0.9},
                            c = {.energy_j = 2, .m_s = 0.8};
    cr_expect(eeb_srv_standing_dominated(&a, &b));
    cr_expect_not(eeb_srv_standing_dominated(&b, &a));
    cr_expect_not(eeb_srv_standing_dominated(&a, &c)); /* equal: neither */
}
