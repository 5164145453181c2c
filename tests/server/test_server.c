/*
 * test_server.c - the server over real HTTP on 127.0.0.1 (libcurl): teams
 * and their hashed tokens, authentication, JSON errors naming the field,
 * the body cap, /healthz and /metrics; and it keeps serving after each.
 */
#include "fpga/net/eeb_model.h"
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_tasks.h"
#include "tests/testlib.h"
#include "tests/server/fault_proxy.h"
#include "tests/server/http_client.h"
#include "tests/power/meter_emu.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A registration of a run of task (what a team declares), with more fields. */
/* A board's run, its figures its own word (declared), on backend. */
#define REGISTER_ON(task, backend, more)                                                           \
    "{\"task\": \"" task                                                                           \
    "\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": 0.4, \"dsp\": 0.2}, "                     \
    "\"provenance\": \"declared\", \"device\": \"zcu104\", \"backend\": \"" backend "\"" more "}"
#define REGISTER_WITH(task, more) REGISTER_ON(task, "xrt", more)
#define REGISTER(task)            REGISTER_WITH(task, "")

Test(server, teams_tokens_routes_and_errors, .timeout = 60)
{
    char db[256], token[EEB_TOKEN_HEX], other[EEB_TOKEN_HEX], none[EEB_TOKEN_HEX], err[512];
    snprintf(db, sizeof db, "%s/server.db", test_tmpdir());
    cr_assert_eq(eeb_server_add_team(db, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(strlen(token), 64);
    cr_assert_eq(eeb_server_add_team(db, "beta", other, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_str_neq(token, other);
    cr_assert_eq(eeb_server_add_team(db, "alpha", none, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "a team named 'alpha' exists"), "%s", err);
    cr_assert_eq(eeb_server_add_team(db, "a b", none, err, sizeof err), EEB_EINVAL);
    cr_expect_str_empty(none, "a failed call leaves no token");
    cr_expect(strstr(err, "team name 'a b'"), "%s", err);
    /* the token is nowhere in the database; its hash is */
    char hash[EEB_SHA256_HEX];
    eeb_sha256(token, strlen(token), hash);
    size_t len;
    char *bytes = test_read_file(db, &len);
    cr_assert(bytes);
    cr_expect_null(memmem(bytes, len, token, 64), "the token is stored in clear");
    cr_expect_not_null(memmem(bytes, len, hash, 64));
    free(bytes);

    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0, cfg.max_body = 64 << 10;
    cfg.test[EEB_TASK_CLS] = cfg.practice[EEB_TASK_CLS] = test_cls_shard(20, 16, 3);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    cr_assert(port > 0);

    expect(port, "GET", "/healthz", NULL, NULL, 200, "status", "ok");
    expect(port, "GET", "/api/v1/whoami", NULL, NULL, 401, "field", "Authorization");
    expect(port, "GET", "/api/v1/whoami", NULL, "0123", 401, "error", "bearer token");
    char forged[EEB_TOKEN_HEX];
    memcpy(forged, token, sizeof forged);
    forged[0] = forged[0] == 'a' ? 'b' : 'a';
    expect(port, "GET", "/api/v1/whoami", NULL, forged, 401, "error", "unknown token");
    expect(port, "GET", "/api/v1/whoami", NULL, token, 200, "team", "alpha");
    expect(port, "GET", "/api/v1/whoami", NULL, other, 200, "team", "beta");

    /* registering a run: the body validated field by field */
    expect(port, "POST", "/api/v1/runs", "{\"task\": \"cls\"", token, 400, "error", "not JSON");
    expect(port, "POST", "/api/v1/runs", "[1, 2]", token, 400, "error", "a JSON object");
    expect(port, "POST", "/api/v1/runs", "{\"task\": 5}", token, 400, "field", "task");
    expect(port, "POST", "/api/v1/runs", "{\"task\": \"speech\"}", token, 400, "error", "speech");
    expect(port, "POST", "/api/v1/runs", "{\"task\": \"cls\"}", NULL, 401, "field",
           "Authorization");
    expect(port, "POST", "/api/v1/runs", "{\"task\": \"cls\"}", token, 400, "field", "provenance");
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", \"util\": {\"lut\": 1.5, \"ff\": 0, \"bram\": 0, \"dsp\": 0}}",
           token, 400, "field", "util.lut");
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, \"dsp\": 0}, "
           "\"provenance\": \"guessed\"}",
           token, 400, "field", "provenance");
    /* eeb's emulators run on a CPU: a measurement of one is no board's */
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, \"dsp\": 0.1}, "
           "\"provenance\": \"measured\", \"backend\": \"emu\"}",
           token, 400, "error", "backend emu runs on a CPU, not a board");
    /* a run timed by its modeled device: its figures are modeled, and the
     * server times it by the step time and power it declares */
#define UTIL0 "\"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, \"dsp\": 0.1}, \"backend\": \"xrt\", "
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", " UTIL0 "\"provenance\": \"measured\", \"clock\": {\"kind\": "
           "\"modeled\", \"train_step_s\": 0.1, \"train_w\": 5}}",
           token, 400, "error", "a run on the modeled clock has modeled figures, not measured");
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", " UTIL0 "\"provenance\": \"modeled\", \"clock\": {\"kind\": "
           "\"sundial\"}}",
           token, 400, "field", "clock");
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", " UTIL0 "\"provenance\": \"modeled\", \"clock\": {\"kind\": "
           "\"modeled\", \"train_step_s\": 0, \"train_w\": 5}}",
           token, 400, "field", "clock.train_step_s");
    /* a backend in another spelling names none of eeb's, and no board */
    expect(port, "POST", "/api/v1/runs",
           "{\"task\": \"cls\", \"util\": {\"lut\": 0, \"ff\": 0, \"bram\": 0, \"dsp\": 0.1}, "
           "\"provenance\": \"declared\", \"backend\": \"EMU\"}",
           token, 400, "field", "backend");
#undef UTIL0
    expect(port, "POST", "/api/v1/runs", REGISTER("det"), token, 409, "error",
           "holds no det practice set");
    expect(port, "POST", "/api/v1/runs", REGISTER_WITH("det", ", \"official\": true"), token, 409,
           "error", "holds no det test set");
    struct reply r =
        request(port, "POST", "/api/v1/runs", REGISTER("cls"), strlen(REGISTER("cls")), token);
    cr_expect_eq(r.code, 201, "%s", r.body);
    json_t *o = json_loads(r.body, 0, NULL);
    cr_expect_eq(json_integer_value(json_object_get(o, "run_id")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(o, "task")), "cls");
    cr_expect_eq(json_integer_value(json_object_get(o, "test_items")), 20);
    cr_expect_str_eq(json_string_value(json_object_get(o, "team")), "alpha");
    cr_expect_eq(json_real_value(json_object_get(o, "t_max_s")), 30);
    cr_expect_str_eq(json_string_value(json_object_get(o, "device")), "zcu104");
    cr_expect_eq(json_real_value(json_object_get(o, "p_max_w")), 10);
    cr_expect_str_eq(json_string_value(json_object_get(o, "rules_version")), "1");
    json_decref(o);
    free(r.body);

    /* the body cap: refused, and the server goes on */
    size_t big = 2 << 20;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    r = request(port, "POST", "/api/v1/runs", huge, big, token);
    cr_expect_eq(r.code, 413, "%ld %s", r.code, r.body);
    free(r.body);
    free(huge);
    expect(port, "GET", "/nowhere", NULL, NULL, 404, "error", "no such route");
    expect(port, "DELETE", "/healthz", NULL, NULL, 405, "error", "/healthz takes GET");
    expect(port, "GET", "/healthz", NULL, NULL, 200, "status", "ok");

    r = request(port, "GET", "/metrics", NULL, 0, NULL);
    cr_expect_eq(r.code, 200);
    static const char *const lines[] = {
        "# TYPE eeb_http_requests_total counter",
        "eeb_http_requests_total{route=\"healthz\",code=\"200\"} 2",
        "eeb_http_requests_total{route=\"whoami\",code=\"200\"} 2",
        "eeb_http_requests_total{route=\"whoami\",code=\"401\"} 3",
        "eeb_http_requests_total{route=\"runs\",code=\"400\"} 12",
        "eeb_http_requests_total{route=\"runs\",code=\"409\"} 2",
        "eeb_http_requests_total{route=\"runs\",code=\"201\"} 1",
        "eeb_http_requests_total{route=\"other\",code=\"413\"} 1",
        "eeb_teams 2",
        "# TYPE eeb_sqlite_memory_bytes gauge",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        cr_expect(strstr(r.body, lines[i]), "no '%s' in\n%s", lines[i], r.body);
    static const char memory[] = "\neeb_sqlite_memory_bytes ";
    const char *used = strstr(r.body, memory);
    cr_expect(used && atoll(used + strlen(memory)) > 0, "%s", r.body);
    cr_expect_null(strstr(r.body, token), "a token in /metrics");
    free(r.body);
    eeb_server_stop(s);
}

/* The system a run's SUT names itself: its name and version, as JSON of
 * the run's and in the server's copy of its configuration, said at
 * registration (a submitted run) or at begin (an official run, whose SUT
 * opens after it registers), once: what was said first stays. */
static void expect_system(int port, const char *sdb, int run, const char *token, const char *name,
                          const char *version)
{
    char path[64], sql[128], *text;
    snprintf(path, sizeof path, "/api/v1/runs/%d", run);
    struct reply r = request(port, "GET", path, NULL, 0, token);
    json_t *o = json_loads(r.body ? r.body : "", 0, NULL), *sys = json_object_get(o, "system");
    cr_expect_str_eq(json_string_value(json_object_get(sys, "name")), name, "%s", r.body);
    if (version)
        cr_expect_str_eq(json_string_value(json_object_get(sys, "version")), version);
    else
        cr_expect_null(json_object_get(sys, "version"), "%s", r.body);
    json_decref(o);
    free(r.body);
    snprintf(sql, sizeof sql, "SELECT json_extract(config, '$.sut.name') FROM runs WHERE id = %d",
             run);
    cr_assert_eq(test_sql_text(sdb, sql, &text), 0);
    cr_expect_str_eq(text, name);
    free(text);
}

Test(server, a_run_says_its_system_at_registration_or_at_begin, .timeout = 60)
{
    char db[256], token[EEB_TOKEN_HEX], err[512];
    snprintf(db, sizeof db, "%s/server.db", test_tmpdir());
    cr_assert_eq(eeb_server_add_team(db, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0;
    cfg.practice[EEB_TASK_CLS] = test_cls_shard(20, 16, 3);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    static const char *const bad[] = {
        ", \"system\": \"team\"",
        ", \"system\": {\"name\": \"\"}",
        ", \"system\": {\"version\": \"1.0\"}",
        ", \"system\": {\"name\": \"team\", \"version\": 1}",
        ", \"system\": {\"name\": \"team\", \"colour\": \"red\"}",
    };
    char body[512];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(body, sizeof body, REGISTER_WITH("cls", "%s"), bad[i]);
        expect(port, "POST", "/api/v1/runs", body, token, 400, "field", "system");
    }
    /* said at registration: kept, whatever begin says after */
    expect(port, "POST", "/api/v1/runs",
           REGISTER_WITH("cls", ", \"system\": {\"name\": \"team <x>\", \"version\": \"1.0\"}"),
           token, 201, "state", "registered");
    expect_system(port, db, 1, token, "team <x>", "1.0");
    expect(port, "POST", "/api/v1/runs/1/begin", "{\"system\": {\"name\": \"other\"}}", token, 200,
           "state", "registered");
    expect_system(port, db, 1, token, "team <x>", "1.0");
    /* said at begin: a name without a version, once */
    expect(port, "POST", "/api/v1/runs", REGISTER("cls"), token, 201, "state", "registered");
    struct reply r = request(port, "GET", "/api/v1/runs/2", NULL, 0, token);
    cr_expect(r.body && strstr(r.body, "\"system\":null"), "%s", r.body);
    free(r.body);
    expect(port, "POST", "/api/v1/runs/2/begin", "{\"system\": {\"name\": 5}}", token, 400, "field",
           "system");
    expect(port, "POST", "/api/v1/runs/2/begin", "{\"sut\": {\"name\": \"late\"}}", token, 400,
           "field", "body");
    expect(port, "POST", "/api/v1/runs/2/begin", "{\"system\": {\"name\": \"late\"}}", token, 200,
           "state", "registered");
    expect_system(port, db, 2, token, "late", NULL);
    expect(port, "POST", "/api/v1/runs/2/begin",
           "{\"system\": {\"name\": \"later\", \"version\": \"9\"}}", token, 200, "state",
           "registered");
    expect_system(port, db, 2, token, "late", NULL);
    /* a begin without a body says nothing of it, as before */
    expect(port, "POST", "/api/v1/runs", REGISTER("cls"), token, 201, "state", "registered");
    expect(port, "POST", "/api/v1/runs/3/begin", NULL, token, 200, "state", "registered");
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs WHERE id = 3 AND "
                                  "json_extract(config, '$.sut') IS NULL"),
                 1);
    eeb_server_stop(s);
}

Test(server, a_team_touches_only_its_own_runs_and_is_rate_limited, .timeout = 60)
{
    char db[256], mine[EEB_TOKEN_HEX], theirs[EEB_TOKEN_HEX], err[512];
    snprintf(db, sizeof db, "%s/server.db", test_tmpdir());
    cr_assert_eq(eeb_server_add_team(db, "mine", mine, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_add_team(db, "theirs", theirs, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0;
    cfg.test[EEB_TASK_CLS] = cfg.practice[EEB_TASK_CLS] = test_cls_shard(20, 16, 3);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);

    const char *cls = REGISTER("cls");
    expect(port, "POST", "/api/v1/runs", cls, mine, 201, "state", "registered");
    expect(port, "GET", "/api/v1/runs/1", NULL, mine, 200, "state", "registered");
    /* another team's run is none, as one that is not there: 404 alike */
    expect(port, "GET", "/api/v1/runs/1", NULL, theirs, 404, "error", "no run 1 of team theirs");
    expect(port, "POST", "/api/v1/runs/1/complete", NULL, theirs, 404, "error", "no run 1");
    expect(port, "GET", "/api/v1/runs/1", NULL, NULL, 401, "field", "Authorization");
    expect(port, "GET", "/api/v1/runs/2", NULL, mine, 404, "error", "no run 2");
    expect(port, "GET", "/api/v1/runs/0", NULL, mine, 404, "error", "no such route");
    expect(port, "GET", "/api/v1/runs/x1", NULL, mine, 404, "error", "no such route");
    expect(port, "GET", "/api/v1/runs/1/complete", NULL, mine, 405, "error", "takes POST");
    /* completing twice is harmless */
    expect(port, "POST", "/api/v1/runs/1/complete", "", mine, 200, "state", "complete");
    expect(port, "POST", "/api/v1/runs/1/complete", "", mine, 200, "state", "complete");
    expect(port, "GET", "/api/v1/runs/1", NULL, mine, 200, "state", "complete");
    eeb_server_stop(s);

    /* the default limit is there (200 a second, 400 at once), and a smaller
     * one bites: 3 a second, 3 at once cut a burst of 8; another team is not */
    cr_expect(cfg.rate_limit == 200 && cfg.rate_burst == 400);
    cfg.rate_limit = 3, cfg.rate_burst = 3;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    port = eeb_server_port(s);
    int limited = 0;
    for (int i = 0; i < 8; i++) {
        struct reply r = request(port, "GET", "/api/v1/whoami", NULL, 0, mine);
        cr_assert(r.code == 200 || r.code == 429, "%ld %s", r.code, r.body);
        if (r.code == 429) {
            cr_expect(strstr(r.body, "per-team rate limit"), "%s", r.body);
            limited++;
        }
        free(r.body);
    }
    cr_expect(limited >= 4, "%d of 8 limited", limited);
    expect(port, "GET", "/api/v1/whoami", NULL, theirs, 200, "team", "theirs");
    expect(port, "GET", "/healthz", NULL, NULL, 200, "status", "ok");
    eeb_server_stop(s);
}

/* The shard at path: its ids and labels in order (free them). */
static int read_shard(const char *path, char (**ids)[EEB_SHARD_MAX_ID + 1], int **labels,
                      uint8_t **pixels, size_t *bytes)
{
    struct eeb_shard *sh;
    char err[256];
    cr_assert_eq(eeb_shard_open(&sh, path, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *info = eeb_shard_info(sh);
    int n = (int)info->count;
    size_t px = eeb_shard_pixels(info);
    *ids = calloc((size_t)n, sizeof **ids);
    *labels = calloc((size_t)n, sizeof **labels);
    *pixels = malloc((size_t)n * px);
    *bytes = (size_t)n * px;
    const struct eeb_record *r;
    for (int i = 0; eeb_shard_next(sh, &r, err, sizeof err) == 1; i++) {
        memcpy((*ids)[i], r->id, sizeof **ids);
        (*labels)[i] = r->label;
        memcpy(*pixels + (size_t)i * px, r->pixels, px);
    }
    eeb_shard_close(sh);
    return n;
}

Test(server, test_inputs_are_served_without_labels_after_completion, .timeout = 60)
{
    const char *shard = test_cls_shard(40, 16, 7);
    char db[256], token[EEB_TOKEN_HEX], err[512], got[300];
    snprintf(db, sizeof db, "%s/server.db", test_tmpdir());
    snprintf(got, sizeof got, "%s/inputs.eebd", test_tmpdir());
    cr_assert_eq(eeb_server_add_team(db, "t", token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0, cfg.practice[EEB_TASK_CLS] = shard;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);

    expect(port, "POST", "/api/v1/runs", REGISTER("cls"), token, 201, "state", "registered");
    expect(port, "GET", "/api/v1/runs/1/test", NULL, token, 409, "error", "this needs it complete");
    expect(port, "POST", "/api/v1/runs/1/complete", "", token, 200, "state", "complete");
    struct reply r = request(port, "GET", "/api/v1/runs/1/test", NULL, 0, token);
    cr_assert_eq(r.code, 200, "%ld", r.code);
    test_write_file(got, r.body, r.len);
    free(r.body);
    eeb_server_stop(s);

    /* the same items, pixels and order; every label gone */
    char(*ids)[EEB_SHARD_MAX_ID + 1], (*ids2)[EEB_SHARD_MAX_ID + 1];
    int *labels, *labels2;
    uint8_t *px, *px2;
    size_t bytes, bytes2;
    int n = read_shard(shard, &ids, &labels, &px, &bytes);
    int n2 = read_shard(got, &ids2, &labels2, &px2, &bytes2);
    cr_assert_eq(n2, n);
    cr_assert_eq(bytes2, bytes);
    cr_expect_eq(memcmp(px, px2, bytes), 0);
    int labelled = 0;
    for (int i = 0; i < n; i++) {
        cr_expect_str_eq(ids2[i], ids[i]);
        cr_expect_eq(labels2[i], 0);
        labelled += labels[i] != 0;
    }
    cr_expect(labelled > 10, "the test set has labels to strip (%d)", labelled);
    free(ids), free(ids2), free(labels), free(labels2), free(px), free(px2);

    /* a test set of the wrong task is refused at start */
    cfg.practice[EEB_TASK_CLS] = NULL, cfg.test[EEB_TASK_DET] = shard;
    cr_expect_neq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK);
    cr_expect(strstr(err, "holds cls data, given as the det test set"), "%s", err);
}

/* admin make-test: the embedded default's test split from a secret seed,
 * a different set each time, for the server's eyes only (0600), with the
 * public split's classes; the server takes it as its test set. */
Test(server, admin_make_test_draws_a_private_test_set, .timeout = 60)
{
    char dir[256], path[2][300], pub[300], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char sha[2][EEB_SHA256_HEX];
    for (int i = 0; i < 2; i++) {
        snprintf(path[i], sizeof path[i], "%s/private%d.eebd", dir, i);
        struct test_run r = test_eeb((const char *[]){"serve", "admin", "make-test", "cls", "-o",
                                                      path[i], "--n", "40", NULL});
        cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
        cr_expect(strstr(r.out, "a private cls test set of 40 items, SHA-256 "), "%s", r.out);
        for (const char *at = r.out; (at = strstr(at, "seed")); at += 4)
            cr_expect(!strpbrk(at, "0123456789") || strcspn(at, "0123456789") > 6,
                      "a seed was shown: %s", r.out);
        test_run_free(&r);
        struct stat st;
        cr_assert_eq(stat(path[i], &st), 0);
        cr_expect_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
        cr_assert_eq(eeb_sha256_file(path[i], sha[i], err, sizeof err), EEB_OK, "%s", err);
    }
    cr_expect_str_neq(sha[0], sha[1], "two secret seeds drew the same set");
    /* the public seed's split, for its classes */
    const struct eeb_task_profile *p = eeb_task_profile(EEB_TASK_CLS);
    struct eeb_gen_spec spec = {EEB_TASK_CLS, EEB_GEN_FINETUNE, 1, 40, 1, p->size, 1};
    snprintf(pub, sizeof pub, "%s/public.eebd", dir);
    cr_assert_eq(eeb_gen_shard(pub, &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_shard *a, *b;
    cr_assert_eq(eeb_shard_open(&a, path[0], err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_open(&b, pub, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *ia = eeb_shard_info(a), *ib = eeb_shard_info(b);
    cr_expect_eq(ia->count, 40);
    cr_assert_eq(ia->classes, ib->classes);
    for (int c = 0; c < ia->classes; c++)
        cr_expect_str_eq(ia->names[c], ib->names[c]);
    eeb_shard_close(a), eeb_shard_close(b);
    struct test_run r = test_eeb((const char *[]){"serve", "admin", "make-test", "cls", NULL});
    cr_expect_eq(r.status, 2, "%s", r.err);
    test_run_free(&r);

    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    char db[300];
    snprintf(db, sizeof db, "%s/s.db", dir);
    cfg.db = db, cfg.port = 0, cfg.test[EEB_TASK_CLS] = path[0];
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    eeb_server_stop(s);
}

Test(server, admin_add_team_and_a_busy_port)
{
    char db[256], err[512];
    snprintf(db, sizeof db, "%s/server.db", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"serve", "admin", "add-team", "gamma", "--db", db, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "team gamma added"), "%s", r.out);
    cr_expect(strstr(r.out, "shown once"), "%s", r.out);
    test_run_free(&r);
    r = test_eeb((const char *[]){"serve", "admin", "add-team", "gamma", "--db", db, NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "a team named 'gamma' exists"), "%s", r.err);
    test_run_free(&r);

    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0;
    struct eeb_server *a, *b;
    cr_assert_eq(eeb_server_start(&cfg, &a, err, sizeof err), EEB_OK, "%s", err);
    cfg.port = eeb_server_port(a);
    cr_expect_neq(eeb_server_start(&cfg, &b, err, sizeof err), EEB_OK);
    cr_expect(strstr(err, "cannot listen on 127.0.0.1:"), "%s", err);
    cfg.bind = "localhost";
    cr_expect_eq(eeb_server_start(&cfg, &b, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "'localhost' is not an IPv4 address"), "%s", err);
    eeb_server_stop(a);
}

/* ---- a run judged by the server ---- */

/* An answer of the server's: it must not hold the test's truth, the
 * "label" and "truth" of the predictions it stores (as JSON, or quoted
 * in an HTML page). */
#define HEX64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* A chain of three links (an origin, an event, two samples of a replayed,
 * declared trace) as the body of POST /links: the second sample's watts as
 * sent, the heads those of 2.75 W; the head of link flip (-1: none)
 * changed; its origin's uuid ends in the hex digit `which` (a chain is
 * one run's). */
static void chain_body(char *out, size_t n, double watts_sent, int flip, char which)
{
    const struct eeb_sample s[2] = {{1000, 5, NAN, NAN, 2.5, 0}, {2000, 6, NAN, NAN, 2.75, 0}};
    struct eeb_rundb_link l[3] = {
        {.seq = 0, .kind = EEB_LINK_ORIGIN, .uuid = "0a6f6c8e-9d6e-4c2b-8a51-3f1f7d2c9b10"},
        {.seq = 1, .kind = EEB_LINK_EVENT, .event = {500, 4, "finetune_begin", NULL}},
        {.seq = 2,
         .kind = EEB_LINK_SAMPLES,
         .source = "replay:t.csv",
         .samples = s,
         .nsamples = 2}};
    l[0].uuid[35] = which;
    memset(l[0].config_sha256, 'a', 64);
    for (int i = 0; i < 3; i++)
        eeb_rundb_link_head(i ? l[i - 1].head : NULL, &l[i], l[i].head);
    if (flip >= 0)
        l[flip].head[0] = l[flip].head[0] == 'a' ? 'b' : 'a';
    snprintf(
        out, n,
        "{\"links\": [{\"seq\": 0, \"kind\": \"origin\", \"uuid\": \"%s\", "
        "\"config_sha256\": \"%s\", \"head\": \"%s\"}, "
        "{\"seq\": 1, \"kind\": \"event\", \"event\": [500, 4, \"finetune_begin\", null], "
        "\"head\": \"%s\"}, "
        "{\"seq\": 2, \"kind\": \"samples\", \"source\": \"replay:t.csv\", \"samples\": "
        "[[1000, 5, 2.5, null, null, 0], [2000, 6, %.17g, null, null, 0]], \"head\": \"%s\"}]}",
        l[0].uuid, l[0].config_sha256, l[0].head, l[1].head, watts_sent, l[2].head);
}

static void expect_no_truth(const struct reply *r, const char *what)
{
    static const char *const keys[] = {"\"label\":", "\"truth\":", "&quot;label&quot;",
                                       "&quot;truth&quot;"};
    /* memmem: a binary answer (the test inputs) is read whole, past its NULs */
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        cr_expect_null(r->body ? memmem(r->body, r->len, keys[i], strlen(keys[i])) : NULL,
                       "%s: %s in %s", what, keys[i], r->body);
}

/* A small cls run's inputs in dir: ft.eebd, test.eebd and m.eebm. */
struct inputs {
    char ft[300], test[300], model[300];
};

static struct inputs make_inputs(const char *dir)
{
    struct inputs in;
    char err[512];
    snprintf(in.ft, sizeof in.ft, "%s/ft.eebd", dir);
    snprintf(in.test, sizeof in.test, "%s/test.eebd", dir);
    snprintf(in.model, sizeof in.model, "%s/m.eebm", dir);
    cr_assert_eq(rename(test_cls_shard(256, 16, 1), in.ft), 0);
    cr_assert_eq(rename(test_cls_shard(64, 16, 2), in.test), 0);
    struct eeb_shard *sh;
    cr_assert_eq(eeb_shard_open(&sh, in.ft, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_net *net;
    cr_assert_eq(eeb_task_model(eeb_shard_info(sh), 7, &net, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_model_save(in.model, net, EEB_TASK_CLS, err, sizeof err), EEB_OK, "%s", err);
    eeb_net_free(net);
    eeb_shard_close(sh);
    return in;
}

/* A local run of cls on small shards, its database at db; its inputs. */
static const struct inputs *local_run(const char *dir, const char *db)
{
    static struct inputs in;
    in = make_inputs(dir);
    struct test_run r =
        test_eeb((const char *[]){"run", "--task", "cls", "--finetune", in.ft, "--test", in.test,
                                  "--model", in.model, "--db", db, "--epochs", "2", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    return &in;
}

/* A server's sets for rehearsals of in's runs: its test set as the
 * practice set (the labels a local run was judged on are no secret), the
 * fine-tune set and the base model. */
static void rehearsals_of(struct eeb_server_config *cfg, const struct inputs *in)
{
    cfg->practice[EEB_TASK_CLS] = in->test;
    cfg->finetune[EEB_TASK_CLS] = in->ft;
    cfg->model[EEB_TASK_CLS] = in->model;
}

/* What an official registration on a server holding in's sets adds: the
 * fine-tune set and base model it declares. */
static void official_terms(const struct inputs *in, char *out, size_t n)
{
    char ft[EEB_SHA256_HEX], model[EEB_SHA256_HEX], err[256];
    cr_assert_eq(eeb_sha256_file(in->ft, ft, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_sha256_file(in->model, model, err, sizeof err), EEB_OK, "%s", err);
    snprintf(out, n, ", \"official\": true, \"finetune\": \"%s\", \"model\": \"%s\"", ft, model);
}

/* A registration of a modeled cls run: design, model SHA-256, step time,
 * watts, batch and frozen layers, and 2 epochs. */
#define MODELED_FORM                                                                               \
    "{\"task\": \"cls\", \"provenance\": \"modeled\", \"backend\": \"emu\", \"design\": "          \
    "\"%s\", \"model\": \"%s\", \"clock\": {\"kind\": \"modeled\", \"train_step_s\": %.17g, "      \
    "\"train_w\": %.17g, \"batch\": %lld, \"frozen\": %lld, \"epochs\": 2}}"

/* The server holding the base model models a modeled run's device again
 * at registration: the figures the run declares must be the analytical
 * model's for its design, batch and frozen layers on that model. */
Test(server, a_modeled_runs_device_is_modeled_again_by_the_server, .timeout = 120)
{
    char dir[256], db[300], sdb[300], model[300], url[64], token[EEB_TOKEN_HEX], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/runs.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(model, sizeof model, "%s/m.eebm", dir);
    const struct inputs *in = local_run(dir, db);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    rehearsals_of(&cfg, in);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    /* what the local run declares agrees: it passes, and the server's copy
     * names what its device was modeled for, so eeb check models it again */
    struct test_run r =
        test_eeb((const char *[]){"submit", db, "--server", url, "--token", token, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", sdb, "--run", "1", "--model", model, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "recomputed from its design, model and batch: agree"), "%s", r.out);
    test_run_free(&r);
    /* a step time of the team's own choosing is refused, with the model's */
    char *design = NULL, *sha = NULL, body[2048];
    cr_assert_eq(test_sql_text(db, "SELECT config ->> '$.device_model.design' FROM runs", &design),
                 0);
    cr_assert_eq(test_sql_text(db, "SELECT config ->> '$.model.sha256' FROM runs", &sha), 0);
    double step = test_sql_double(db, "SELECT config ->> '$.device_model.train_step_s' FROM runs");
    double watts = test_sql_double(db, "SELECT config ->> '$.device_model.train_w' FROM runs");
    long long batch = test_sql_int(db, "SELECT config ->> '$.training.batch' FROM runs");
    long long frozen = test_sql_int(db, "SELECT config ->> '$.training.frozen' FROM runs");

    /* it names the figure, not the model's answer */
    snprintf(body, sizeof body, MODELED_FORM, design, sha, step / 2, watts, batch, frozen);
    expect(port, "POST", "/api/v1/runs", body, token, 409, "error",
           "the step time declared is not the analytical model's");
    expect(port, "POST", "/api/v1/runs", body, token, 409, "field", "clock.train_step_s");
    char answer[64];
    snprintf(answer, sizeof answer, "%.17g", step);
    struct reply told = request(port, "POST", "/api/v1/runs", body, strlen(body), token);
    cr_expect_null(strstr(told.body, answer), "the model's step time told: %s", told.body);
    free(told.body);
    snprintf(body, sizeof body, MODELED_FORM, design, sha, step, watts, batch, frozen);
    expect(port, "POST", "/api/v1/runs", body, token, 201, "provenance", "modeled");
    /* nor another base model */
    snprintf(body, sizeof body, MODELED_FORM, design, HEX64, step, watts, batch, frozen);
    expect(port, "POST", "/api/v1/runs", body, token, 409, "field", "model");
    free(design), free(sha);
    eeb_server_stop(s);
}

Test(server, a_submitted_run_is_judged_as_eeb_check_judges_it, .timeout = 120)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX], other[EEB_TOKEN_HEX], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/runs.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    const struct inputs *in = local_run(dir, db);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_add_team(sdb, "beta", other, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    rehearsals_of(&cfg, in);
    cfg.test[EEB_TASK_CLS] = in->test; /* and the official runs' */
    char official[512];
    official_terms(in, official, sizeof official);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);

    /* an empty list of runs and its page, read (and kept by the server)
     * before the run is scored: both hold it afterwards (below) */
    struct reply empty = request(port, "GET", "/api/v1/runs?task=cls", NULL, 0, NULL);
    cr_expect(strstr(empty.body, "\"runs\":[]"), "%s", empty.body);
    free(empty.body);
    empty = request(port, "GET", "/runs?task=cls", NULL, 0, NULL);
    cr_expect(strstr(empty.body, "no scored runs yet"), "%s", empty.body);
    free(empty.body);
    struct test_run r =
        test_eeb((const char *[]){"submit", db, "--server", url, "--token", token, "--json", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect_null(strstr(r.err, token), "the token was printed");
    json_t *v = json_loads(r.out, 0, NULL);
    cr_assert(v, "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass");
    /* the system the local run recorded, told at registration */
    char *local_system, *server_system;
    cr_assert_eq(
        test_sql_text(db, "SELECT json_extract(config, '$.sut.name') FROM runs", &local_system), 0);
    cr_assert_eq(
        test_sql_text(sdb, "SELECT json_extract(config, '$.sut.name') FROM runs", &server_system),
        0);
    cr_assert_not_null(local_system);
    cr_expect_str_eq(server_system, local_system);
    free(local_system), free(server_system);
    /* the server's figures are the local run's: the same record, judged the same */
    static const char *const figures[] = {"S", "m_s", "m_p", "m_t", "m_u", "t_s", "energy_j"};
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
        char q[128];
        snprintf(q, sizeof q, "SELECT CAST(value * 1e9 AS INTEGER) FROM results WHERE name = '%s'",
                 figures[i]);
        double local = (double)test_sql_int(db, q) / 1e9;
        double remote = json_number_value(json_object_get(v, figures[i]));
        cr_expect(fabs(local - remote) < 2e-9, "%s: local %.9f, server %.9f", figures[i], local,
                  remote);
    }
    json_decref(v);
    test_run_free(&r);
    /* and `eeb check` on the server's database agrees with it: the server
     * timed the run on the modeled clock it declared */
    r = test_eeb((const char *[]){"check", sdb, "--run", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM runs WHERE id = 1 AND "
                                   "config ->> '$.budgets.clock' = 'modeled'"),
                 1);
    /* resuming a scored submission answers its verdict again */
    r = test_eeb(
        (const char *[]){"submit", db, "--server", url, "--token", token, "--resume", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "server run 1 (cls, team alpha): pass"), "%s", r.out);
    test_run_free(&r);

    /* links: each checked against the chain before it is stored; sent
     * again, held; another head under a held number, a gap, or records
     * that do not give the head sent are refused, naming the link, and
     * leave nothing */
    struct reply a =
        request(port, "POST", "/api/v1/runs", REGISTER("cls"), strlen(REGISTER("cls")), token);
    cr_expect_eq(a.code, 201, "%s", a.body);
    free(a.body);
    char chain[2048], differs[2048], tampered[2048];
    chain_body(chain, sizeof chain, 2.75, -1, '0');
    chain_body(differs, sizeof differs, 2.75, 1, '0');
    chain_body(tampered, sizeof tampered, 9.5, -1, '3');
    for (int i = 0; i < 2; i++) {
        struct reply sent =
            request(port, "POST", "/api/v1/runs/2/links", chain, strlen(chain), token);
        cr_expect_eq(sent.code, 200, "%s", sent.body);
        cr_expect(strstr(sent.body, "\"next\":3"), "%s", sent.body);
        free(sent.body);
    }
    expect(port, "POST", "/api/v1/runs/2/links", differs, token, 409, "error",
           "link 1 was received before with another head");
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 2"), 2);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM events WHERE run_id = 2"), 1);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM links WHERE run_id = 2"), 3);
    a = request(port, "POST", "/api/v1/runs", REGISTER("cls"), strlen(REGISTER("cls")), token);
    free(a.body);
    expect(port, "POST", "/api/v1/runs/3/links", tampered, token, 409, "error",
           "link 2: its records do not give its head");
    expect(port, "POST", "/api/v1/runs/3/links",
           "{\"links\": [{\"seq\": 1, \"kind\": \"event\", \"event\": [1, 2, \"x\", null], "
           "\"head\": \"" HEX64 "\"}]}",
           token, 409, "error", "link 1 is not the next: this run's next link is 0");
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM links WHERE run_id = 3"), 0);
    /* an official run is complete only once its fine-tune's end has
     * arrived: the server judges what came while it ran */
    char body[1024];
    snprintf(body, sizeof body, REGISTER_WITH("cls", "%s"), official);
    a = request(port, "POST", "/api/v1/runs", body, strlen(body), token);
    cr_expect_eq(a.code, 201, "%s", a.body);
    free(a.body);
    chain_body(chain, sizeof chain, 2.75, -1, '4');
    a = request(port, "POST", "/api/v1/runs/4/links", chain, strlen(chain), token);
    cr_expect_eq(a.code, 200, "%s", a.body);
    free(a.body);
    expect(port, "POST", "/api/v1/runs/4/complete", NULL, token, 409, "error",
           "an official run's chain must hold its fine-tune's end");
    expect(port, "POST", "/api/v1/runs/4/score", NULL, token, 409, "error",
           "this needs it complete");
    /* and no run is judged without a chain */
    expect(port, "POST", "/api/v1/runs/3/complete", NULL, token, 200, "state", "complete");
    expect(port, "POST", "/api/v1/runs/3/score", NULL, token, 409, "error",
           "the run sent no chain");
    /* the server reads no meter of this team's: a run's own "measured"
     * log is declared */
    snprintf(body, sizeof body,
             "{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": 0.4, "
             "\"dsp\": 0.2}, \"provenance\": \"measured\", \"backend\": \"exec\"%s}",
             official);
    expect(port, "POST", "/api/v1/runs", body, token, 201, "provenance", "declared");

    /* bad input: 4xx naming the field, and the server keeps serving */
    expect(port, "POST", "/api/v1/runs/2/links", "{\"links\": []}", token, 400, "field", "links");
    expect(port, "POST", "/api/v1/runs/2/links",
           "{\"links\": [{\"seq\": -1, \"kind\": \"event\", \"head\": \"" HEX64 "\"}]}", token, 400,
           "field", "links[0].seq");
    expect(port, "POST", "/api/v1/runs/2/links",
           "{\"links\": [{\"seq\": 3, \"kind\": \"samples\", \"head\": \"" HEX64 "\", "
           "\"source\": \"sim:\", \"samples\": [[1, 2, \"x\", null, null, 0]]}]}",
           token, 400, "field", "links[0].samples[0][2]");
    expect(port, "POST", "/api/v1/runs/2/links",
           "{\"links\": [{\"seq\": 3, \"kind\": \"samples\", \"head\": \"" HEX64 "\", "
           "\"source\": \"sim:\", \"samples\": [[1, 2]]}]}",
           token, 400, "field", "links[0].samples[0]");
    expect(port, "POST", "/api/v1/runs/2/links",
           "{\"links\": [{\"seq\": 3, \"kind\": \"event\", \"head\": \"" HEX64 "\", "
           "\"event\": [1, 2, \"x\", \"[1]\"]}]}",
           token, 400, "field", "links[0].event[3]");
    expect(port, "POST", "/api/v1/runs/2/links",
           "{\"links\": [{\"seq\": 3, \"kind\": \"note\", \"head\": \"" HEX64 "\"}]}", token, 400,
           "field", "links[0].kind");
    expect(port, "POST", "/api/v1/runs/2/links", chain, other, 404, "error", "no run 2");
    expect(port, "POST", "/api/v1/runs/2/predictions", "{\"predictions\": []}", token, 409, "error",
           "this needs it complete");
    expect(port, "POST", "/api/v1/runs/2/complete", NULL, token, 200, "state", "complete");
    expect(port, "POST", "/api/v1/runs/2/predictions",
           "{\"predictions\": [{\"id\": \"nobody\", \"top\": [1]}]}", token, 400, "field",
           "predictions[0].id");
    expect(port, "POST", "/api/v1/runs/2/predictions", "{\"predictions\": 3}", token, 400, "field",
           "predictions");
    expect(port, "POST", "/api/v1/runs/2/score", "{\"samples_dropped\": \"many\"}", token, 400,
           "field", "samples_dropped");
    expect(port, "POST", "/api/v1/runs/1/links", chain, token, 409, "error", "run 1 is scored");
    expect(port, "GET", "/healthz", NULL, NULL, 200, "status", "ok");

    /* no answer of any route holds the truth */
    const struct {
        const char *method, *path;
        const char *token;
    } routes[] = {
        {"GET", "/api/v1/runs/1", token},
        {"GET", "/api/v1/leaderboard?task=cls&all=1", NULL},
        {"GET", "/api/v1/runs?task=cls", NULL},
        {"GET", "/api/v1/runs?task=cls&provenance=modeled&device=zcu104", NULL},
        {"GET", "/leaderboard", NULL},
        {"GET", "/runs", NULL},
        {"GET", "/runs/1", NULL},
        {"GET", "/metrics", NULL},
        {"POST", "/api/v1/runs/1/score", token},
    };
    for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
        struct reply x = request(port, routes[i].method, routes[i].path, NULL, 0, routes[i].token);
        cr_expect_eq(x.code, 200, "%s: %ld", routes[i].path, x.code);
        expect_no_truth(&x, routes[i].path);
        free(x.body);
    }

    /* the runs scored: a rehearsal, judged on public labels, is ranked
     * nowhere */
    struct reply b = request(port, "GET", "/api/v1/runs?task=cls", NULL, 0, NULL);
    cr_expect(strstr(b.body, "\"runs\":[]"), "a rehearsal is listed: %s", b.body);
    free(b.body);
    b = request(port, "GET", "/api/v1/runs?task=cls&provenance=measured", NULL, 0, NULL);
    cr_expect(strstr(b.body, "\"runs\":[]"), "a modeled run among measured ones: %s", b.body);
    free(b.body);
    expect(port, "GET", "/api/v1/runs", NULL, NULL, 400, "field", "task");
    expect(port, "GET", "/api/v1/runs?task=cls&provenance=hoped", NULL, NULL, 400, "field",
           "provenance");
    /* bytes that are not UTF-8, quoted back in an error (fuzz_server_body found both: 500) */
    expect(port, "GET", "/api/v1/runs?task=cl%AE%EE", NULL, NULL, 400, "error",
           "unknown task 'cl?"
           "?'");
    expect(port, "GET", "/api/v1/runs?task=cls&device=zc%FF%FE", NULL, NULL, 400, "field",
           "device");
    /* a run not yet scored: its page says how it is going, and refreshes */
    struct reply live = request(port, "GET", "/runs/2", NULL, 0, NULL);
    cr_expect_eq(live.code, 200, "%s", live.body);
    cr_expect(strstr(live.body, "<meta http-equiv=\"refresh\" content=\"2\">"), "%s", live.body);
    cr_expect(strstr(live.body, "run 2 of team alpha is complete; 3 links of its chain received, "
                                "the last "),
              "%s", live.body);
    free(live.body);
    expect(port, "GET", "/runs/99", NULL, NULL, 404, "error", "no run 99");

    /* the pages, in a browser: the runs' page without the rehearsal; the
     * run's page with its power trace (#1f77b4) drawn */
    char page[96], png[300];
    snprintf(page, sizeof page, "%s/runs?task=cls", url);
    snprintf(png, sizeof png, "%s/board.png", dir);
    char *dom = test_chromium(dir, page, png);
    cr_expect(strstr(dom, "no scored runs yet"), "%s", dom);
    free(dom);
    snprintf(page, sizeof page, "%s/runs/1", url);
    snprintf(png, sizeof png, "%s/run.png", dir);
    dom = test_chromium(dir, page, png);
    cr_expect(strstr(dom, "<svg id=\"power-plot\""), "%s", dom);
    cr_expect(strstr(dom, "class=\"verdict PASS\""), "%s", dom);
    long trace = test_count_colour(png, 0x1f77b4); /* about 1 s of trace on a 30 s axis */
    cr_expect_gt(trace, 20, "%ld trace pixels", trace);
    free(dom);
    eeb_server_stop(s);
}

/* ---- an official run: eeb run --server ---- */

/* A server on any free port of 127.0.0.1 holding in's test and fine-tune
 * sets, with team alpha (its token in token); its URL in url. */
static struct eeb_server *official_server(const char *sdb, const struct inputs *in, int names_model,
                                          double rate_limit, double burst, char *url,
                                          char token[EEB_TOKEN_HEX])
{
    char err[512];
    if (token)
        cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0, cfg.rate_limit = rate_limit, cfg.rate_burst = burst;
    rehearsals_of(&cfg, in);
    cfg.test[EEB_TASK_CLS] = in->test;
    if (!names_model) /* a team's own model, which the server does not name */
        cfg.model[EEB_TASK_CLS] = NULL;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(url, 64, "http://127.0.0.1:%d", eeb_server_port(s));
    return s;
}

/* A board's meter as a run's own log (declared: the server reads none of
 * the team's): a trace of `watts` for ten minutes, replayed. */
static const char *flat_trace(const char *dir, double watts)
{
    static char power[320];
    char trace[300];
    snprintf(trace, sizeof trace, "%s/board.csv", dir);
    FILE *f = fopen(trace, "w");
    cr_assert(f);
    fputs("t_s,watts\n", f);
    for (int i = 0; i <= 6000; i++)
        fprintf(f, "%.1f,%g\n", i / 10.0, watts);
    fclose(f);
    snprintf(power, sizeof power, "replay:%s", trace);
    return power;
}

/* The server's record of run (its run id there) was taken back into the
 * team's database beside the team's run: the same chain, link for link,
 * the team's own links first, then the server's facts and its score (the
 * copy ends in the server's head); `eeb check` of the copy and of the
 * team's run gives the server's verdict and S. */
static void expect_record_taken_back(const char *db, long long run, const char *sdb,
                                     long long server_run)
{
    char sql[256], *team_head = NULL, *server_head = NULL;
    snprintf(sql, sizeof sql,
             "SELECT max(run_id) FROM links WHERE seq = 0 AND origin_uuid = (SELECT uuid FROM "
             "runs WHERE id = %lld) AND run_id <> %lld",
             run, run);
    long long copy = test_sql_int(db, sql);
    cr_assert_gt(copy, run, "no copy of the server's record in %s", db);
    snprintf(sql, sizeof sql,
             "SELECT head FROM links WHERE run_id = %lld ORDER BY seq DESC LIMIT 1", copy);
    test_sql_text(db, sql, &team_head);
    snprintf(sql, sizeof sql,
             "SELECT head FROM links WHERE run_id = %lld ORDER BY seq DESC LIMIT 1", server_run);
    test_sql_text(sdb, sql, &server_head);
    cr_expect_str_eq(team_head, server_head, "the copy's chain ends where the server's does");
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM events WHERE run_id = %lld AND kind IN ('evaluator', 'score')",
             copy);
    cr_expect_geq(test_sql_int(db, sql), 2);
    snprintf(sql, sizeof sql,
             "SELECT CAST(value * 1e9 AS INTEGER) FROM results WHERE run_id = %lld "
             "AND name = 'S'",
             server_run);
    long long server_s = test_sql_int(sdb, sql);
    char copy_arg[32], run_arg[32];
    snprintf(copy_arg, sizeof copy_arg, "%lld", copy);
    snprintf(run_arg, sizeof run_arg, "%lld", run);
    const char *runs[] = {copy_arg, run_arg};
    for (int i = 0; i < 2; i++) {
        json_t *v =
            test_eeb_json((const char *[]){"check", db, "--run", runs[i], "--json", NULL}, 0);
        double s = test_json_num(v, "S");
        cr_expect(fabs(s * 1e9 - (double)server_s) < 2, "run %s: S %.9f, the server's %.9f",
                  runs[i], s, (double)server_s / 1e9);
        json_decref(v);
    }
    free(team_head), free(server_head);
}

/* No downloaded test inputs are left beside db. */
static void expect_no_leftovers(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls %s | grep -qF -- '.test-'", dir);
    cr_expect_neq(system(cmd), 0, "a downloaded test input file is left in %s", dir);
}

Test(server, an_official_run_is_driven_and_judged_by_the_server, .timeout = 120)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    struct inputs in = make_inputs(dir);
    struct eeb_server *s = official_server(sdb, &in, 1, 200, 400, url, token);
    int port = eeb_server_port(s);

    /* the server's terms are not the team's to change */
    const char *given[][2] = {{"--tmax", "5"}, {"--pmax", "3"}, {"--test", in.test}};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++) {
        struct test_run r = test_eeb((const char *[]){
            "run", "--task", "cls", "--finetune", in.ft, "--model", in.model, "--db", db,
            "--server", url, "--token", token, given[i][0], given[i][1], "-q", NULL});
        cr_expect_eq(r.status, 2, "%s: %s%s", given[i][0], r.out, r.err);
        cr_expect(strstr(r.err, "takes its") && strstr(r.err, given[i][0]), "%s", r.err);
        test_run_free(&r);
    }
    /* nor the fine-tune set: another one is refused at registration */
    struct test_run r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", in.test,
                                                  "--model", in.model, "--db", db, "--server", url,
                                                  "--token", token, "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "fine-tune set is sha256") && strstr(r.err, "(field finetune)"), "%s",
              r.err);
    test_run_free(&r);
    expect(port, "POST", "/api/v1/runs", REGISTER_WITH("cls", ", \"official\": true"), token, 409,
           "field", "finetune");
    expect(port, "POST", "/api/v1/runs", REGISTER_WITH("cls", ", \"finetune\": \"12ab\""), token,
           400, "field", "finetune");
    cr_expect_neq(access(db, F_OK), 0, "a refused run was recorded");

    /* the official run: registered, fine-tuned, tested on the server's inputs, judged there */
    json_t *v = test_eeb_json((const char *[]){"run", "--task", "cls", "--finetune", in.ft,
                                               "--model", in.model, "--db", db, "--server", url,
                                               "--token", token, "--epochs", "2", "--json", NULL},
                              0);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass");
    json_t *server_run = json_object_get(json_object_get(v, "server"), "run_id");
    cr_expect_eq(json_integer_value(server_run), 1, "a refused registration made a run");
    struct reply got = request(port, "GET", "/api/v1/runs/1", NULL, 0, token);
    json_t *remote = json_loads(got.body, 0, NULL);
    cr_assert(remote, "%s", got.body);
    cr_expect(json_is_true(json_object_get(remote, "official")), "%s", got.body);
    cr_expect_str_eq(json_string_value(json_object_get(remote, "verdict")), "pass");
    /* the budgets were the server's; its S is the run's, and this record gives it too */
    json_t *figures = json_object_get(v, "figures");
    cr_expect_eq(json_number_value(json_object_get(figures, "t_max_s")),
                 json_number_value(json_object_get(remote, "t_max_s")));
    double S = json_number_value(json_object_get(v, "S"));
    cr_expect(fabs(S - json_number_value(json_object_get(remote, "S"))) < 1e-12, "S %.12f: %s", S,
              got.body);
    cr_expect(fabs(test_sql_int(db, "SELECT CAST(value * 1e9 AS INTEGER) FROM results "
                                    "WHERE name = 'S'") /
                       1e9 -
                   S) < 2e-9);
    json_decref(remote);
    json_decref(v);
    free(got.body);
    /* the local record holds no truth (the inputs had none), and checks */
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM predictions WHERE run_id = 1"), 64);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM predictions WHERE payload LIKE "
                                  "'%label%'"),
                 0);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'test_inputs' AND "
                                  "run_id = 1"),
                 1);
    expect_no_leftovers(dir);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", sdb, "--run", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    /* the chain came as the run went, in several requests */
    cr_expect_gt(test_sql_int(sdb, "SELECT count(DISTINCT at_utc_ns) FROM links"), 1);
    expect_record_taken_back(db, 1, sdb, 1);
    eeb_server_stop(s);
}

/* An official run of a team's SUT reached as backend, for epochs, its
 * exit status status, in a directory of its own (its database into db,
 * the server's into sdb) against a server started for it (*s, to stop):
 * eeb run's JSON. */
static json_t *team_official_run(const char *backend, const char *epochs, int status, char db[300],
                                 char sdb[300], struct eeb_server **s)
{
    char dir[256], url[64], token[EEB_TOKEN_HEX], model[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, 300, "%s/official.db", dir);
    snprintf(sdb, 300, "%s/server.db", dir);
    snprintf(model, sizeof model, "%s/team.model", dir);
    test_write_file(model, "nearest-mean 1\n", 15);
    struct inputs in = make_inputs(dir);
    *s = official_server(sdb, &in, 0, 200, 400, url, token);
    return test_eeb_json((const char *[]){"run",
                                          "--task",
                                          "cls",
                                          "--finetune",
                                          in.ft,
                                          "--model",
                                          model,
                                          "--backend",
                                          backend,
                                          "--util",
                                          EEB_TEST_DATA "/util/zcu102_placed.rpt",
                                          "--power",
                                          flat_trace(dir, 4),
                                          "--rate",
                                          "20", /* a loaded machine's stalls are no gaps */
                                          "--epochs",
                                          epochs,
                                          "--db",
                                          db,
                                          "--server",
                                          url,
                                          "--token",
                                          token,
                                          "--json",
                                          NULL},
                         status);
}

/* Official mode takes a team's SUT as it takes eeb's own backends: the
 * server registers, tests and judges a run of the example, reached as
 * backend.  The run declares the SUT's kind as its backend (its path or
 * command line is the team's free text) and the part the utilization
 * report names as its device. */
static void an_official_run_of_a_teams_sut(const char *backend, const char *declared,
                                           const char *kind, const char *epochs, const char *system)
{
    char db[300], sdb[300];
    struct eeb_server *s;
    json_t *v = team_official_run(backend, epochs, 0, db, sdb, &s);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(v, "server"), "run_id")), 1);
    json_decref(v);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE backend = '%s'", backend);
    cr_expect_eq(test_sql_int(db, sql), 1);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM runs JOIN team_runs ON team_runs.run_id = runs.id WHERE "
             "runs.backend = '%s' AND team_runs.device = 'xczu9eg-ffvb1156-2-e'",
             declared);
    cr_expect_eq(test_sql_int(sdb, sql), 1, "the server's run declares %s", declared);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM predictions WHERE payload LIKE "
                                  "'%label%'"),
                 0);
    struct test_run r = test_eeb((const char *[]){"check", sdb, "--run", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    /* the run's page on the server tells the kind from what was declared */
    struct reply page = request(eeb_server_port(s), "GET", "/runs/1", NULL, 0, NULL);
    cr_expect_eq(page.code, 200);
    char cell[128];
    snprintf(cell, sizeof cell, "<td>%s</td>", kind);
    cr_expect(page.body && strstr(strstr(page.body, "id=\"sut-kind\""), cell), "%s", page.body);
    /* and names the system as its SUT named itself when opened (told at
     * begin, after the registration) */
    snprintf(cell, sizeof cell, ": cls on %s <span class=\"version\">1.1</span> (%s)</h1>", system,
             declared);
    cr_expect(page.body && strstr(page.body, cell), "no '%s' in %s", cell, page.body);
    free(page.body);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM runs WHERE json_extract(config, "
                                   "'$.sut.version') = '1.1'"),
                 1);
    eeb_server_stop(s);
}

Test(server, an_official_run_of_a_teams_library_is_judged_by_the_server, .timeout = 120)
{
    an_official_run_of_a_teams_sut(EEB_SUT_EXAMPLE, "library", "a team&#39;s library",
                                   "4000", /* about 1.5 s */
                                   "nearest-mean");
}

/* An official run of a team's library (tests/sut/bad_check_sut.c) that
 * breaks a rule of the training audit: the server judges it invalid with
 * the one judge, from its own copy of the record, and says why (want);
 * eeb check of the server's record and of the team's (judged by the copy
 * taken back) agree. */
static void an_official_run_the_audit_finds_invalid(const char *library, const char *want)
{
    char db[300], sdb[300];
    struct eeb_server *s;
    json_t *v = team_official_run(library, "1000", 4, db, sdb, &s);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "invalid");
    const char *why = json_string_value(json_object_get(v, "why"));
    cr_expect(why && strstr(why, want), "%s", why ? why : "no why");
    json_decref(v);
    char *said = NULL;
    cr_assert_eq(test_sql_text(sdb, "SELECT verdict || ': ' || why FROM team_runs", &said), 0);
    cr_expect(strstr(said, "invalid: ") == said && strstr(said, want), "the server's: %s", said);
    free(said);
    const char *checked[] = {sdb, db};
    for (int i = 0; i < 2; i++) {
        struct test_run r = test_eeb((const char *[]){"check", checked[i], "--run", "1", NULL});
        cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
        cr_expect(strstr(r.out, want), "%s%s", r.out, r.err);
        test_run_free(&r);
    }
    eeb_server_stop(s);
}

/* Its answers to the audit slice alike before and after (CHECK_UNTRAINED). */
Test(server, an_official_run_of_a_system_that_does_not_train_is_invalid, .timeout = 120)
{
    an_official_run_the_audit_finds_invalid(
        EEB_SUT_CHECK "untrained.so",
        "the system did not train: its answers to the training audit's 16 items");
}

/* Its counters claim ten times the steps eeb drove (CHECK_COUNTERS): no
 * longer a note on the page, and never ranked. */
Test(server, an_official_run_whose_counters_claim_ten_times_the_steps_is_invalid, .timeout = 120)
{
    an_official_run_the_audit_finds_invalid(EEB_SUT_CHECK "counters.so",
                                            "the system's counters say it took ");
}

/* A run that fails after it registered (the team's system refuses the
 * model it is handed) tells the server why, and ends there at once; the
 * team is told the error, and the server's copy keeps the same reason. */
Test(server, a_run_that_fails_after_registering_tells_the_server_why, .timeout = 60)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX], model[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(model, sizeof model, "%s/nm.model", dir);
    test_write_file(model, "not a model\n", 12);
    struct inputs in = make_inputs(dir);
    struct eeb_server *s = official_server(sdb, &in, 0, 200, 400, url, token);
    struct test_run r = test_eeb((const char *[]){"run",
                                                  "--task",
                                                  "cls",
                                                  "--finetune",
                                                  in.ft,
                                                  "--model",
                                                  model,
                                                  "--backend",
                                                  EEB_SUT_EXAMPLE,
                                                  "--util",
                                                  EEB_TEST_DATA "/util/zcu102_placed.rpt",
                                                  "--power",
                                                  flat_trace(dir, 4),
                                                  "--db",
                                                  db,
                                                  "--server",
                                                  url,
                                                  "--token",
                                                  token,
                                                  "-q",
                                                  NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM team_runs WHERE state = 'scored' AND "
                                   "verdict = 'aborted' AND why LIKE 'its harness stopped it: %'"),
                 1);
    /* the server's why is the error the team was told (the system failed
     * as it opened: before the run was recorded, so the team's database
     * holds none) */
    char *why = NULL;
    test_sql_text(sdb, "SELECT why FROM team_runs", &why);
    const char *said = strstr(r.err, "eeb run: ");
    cr_assert(why && said, "no why on the server, or no error said: %s", r.err);
    said += strlen("eeb run: ");
    cr_expect(strncmp(why + strlen("its harness stopped it: "), said, 120) == 0,
              "the server's why '%s' is not the team's error '%s'", why, said);
    free(why);
    test_run_free(&r);
    eeb_server_stop(s);
}

/* A harness killed mid fine-tune: `eeb submit --resume` ends the run the
 * server still holds with what its record has, and takes the server's
 * record back; the team's run then ends as the server ended it. */
Test(server, a_killed_run_is_ended_by_submit_resume, .timeout = 120)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX], model[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(model, sizeof model, "%s/nm.model", dir);
    test_write_file(model, "nearest-mean 1\n", 15);
    struct inputs in = make_inputs(dir);
    struct eeb_server *s = official_server(sdb, &in, 0, 200, 400, url, token);
    const char *power = flat_trace(dir, 4);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1), dup2(null, 2);
        execl(EEB_BIN, EEB_BIN, "run", "--task", "cls", "--finetune", in.ft, "--model", model,
              "--backend", EEB_SUT_EXAMPLE, "--util", EEB_TEST_DATA "/util/zcu102_placed.rpt",
              "--power", power, "--epochs", "1000000", "--db", db, "--server", url, "--token",
              token, "-q", (char *)NULL);
        _exit(127);
    }
    /* killed once its fine-tune is under way on the server */
    for (int i = 0; i < 600 && test_sql_int(sdb, "SELECT count(*) FROM team_runs WHERE "
                                                 "begun_utc_ns IS NOT NULL") == 0;
         i++)
        usleep(50000);
    usleep(500000);
    kill(pid, SIGKILL);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    /* a run the server does not hold is no run to submit unfinished */
    struct test_run r =
        test_eeb((const char *[]){"submit", db, "--server", url, "--token", token, NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "not finished") && strstr(r.err, "--resume"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb(
        (const char *[]){"submit", db, "--server", url, "--token", token, "--resume", "1", NULL});
    cr_expect_eq(r.status, 3, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "aborted") && strstr(r.out, "its harness stopped in state finetune"),
              "%s", r.out);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM team_runs WHERE verdict = 'aborted'"), 1);
    r = test_eeb((const char *[]){"check", db, "--run", "1", NULL});
    cr_expect_eq(r.status, 3, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "its harness stopped in state finetune"), "%s", r.out);
    test_run_free(&r);
    eeb_server_stop(s);
}

/* Whether the agent's log at path has begun (0 while it is being made). */
static int log_begun(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int begun = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                sqlite3_prepare_v2(db, "SELECT 1 FROM events WHERE kind = 'log_begin'", -1, &st,
                                   NULL) == SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return begun;
}

/* `eeb power agent` reading meter for the server at url with the station
 * key at key, until killed (or this test ends: a failed assertion leaves
 * no agent behind); started once its log has begun. */
static pid_t station_agent_at(const char *dir, const char *meter, const char *url, const char *key,
                              const char *rate)
{
    char adb[300];
    snprintf(adb, sizeof adb, "%s/agent.db", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1), dup2(null, 2);
        if (rate)
            execl(EEB_BIN, EEB_BIN, "power", "agent", "--source", meter, "--db", adb, "--server",
                  url, "--key", key, "--rate", rate, "-q", (char *)NULL);
        else /* the meter's own rate */
            execl(EEB_BIN, EEB_BIN, "power", "agent", "--source", meter, "--db", adb, "--server",
                  url, "--key", key, "-q", (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 1000 && !log_begun(adb); i++)
        usleep(10000);
    return pid;
}

static pid_t station_agent(const char *dir, const char *meter, const char *url, const char *key)
{
    return station_agent_at(dir, meter, url, key, "20");
}

/* What a director-mode run's station meter does beyond the defaults. */
struct station_meter {
    const char *uncertainty; /* the PTDaemon's reply to Uncertainty (NULL: it has none) */
    const char *interval;    /* its update interval, ms (NULL: PTDaemon's 1000) */
    const char *agent_rate;  /* the agent's --rate (NULL: 20; "": the meter's own) */
    const char *epochs;      /* the run's (NULL: 15000, some seconds) */
    const char *ranging_s;   /* the run's --ranging-s (NULL: 0, none) */
    double amps_later;       /* from the meter's 4th reading on, its amps (0: 0.5 throughout) */
};

/* A team's library run officially under director mode (the server reads
 * the team's station, a PTDaemon emulator at 12 V x 0.5 A, itself or, if
 * key is not NULL, through a station agent holding that key), with the
 * run's own log at watts: its verdict JSON. */
static json_t *a_director_run_on(const char *dir, const char *watts, const char *db, char *sdb_out,
                                 int status, const char *key, const struct station_meter *sm)
{
    char sdb[300], url[64], token[EEB_TOKEN_HEX], model[300], meter[64], power[32], agent[300];
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(model, sizeof model, "%s/nm.model", dir);
    snprintf(power, sizeof power, "sim:watts=%s", watts);
    test_write_file(model, "nearest-mean 1\n", 15);
    struct inputs in = make_inputs(dir);
    struct meter_emu *emu =
        meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD,
                                                   .volts = 12,
                                                   .amps = 0.5,
                                                   .uncertainty = sm->uncertainty,
                                                   .amps_from = sm->amps_later > 0 ? 4 : 0,
                                                   .amps_later = sm->amps_later});
    snprintf(meter, sizeof meter, "ptd://127.0.0.1:%d%s%s", meter_emu_port(emu),
             sm->interval ? "?interval=" : "", sm->interval ? sm->interval : "");
    char err[512];
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    cfg.test[EEB_TASK_CLS] = in.test, cfg.finetune[EEB_TASK_CLS] = in.ft;
    /* the meter is under test here, not the stream's pace (stream.c's
     * tests are): a loaded machine's fsyncs may hold a link back longer
     * than the default allows */
    cfg.stream_allowance_s = 60;
    snprintf(agent, sizeof agent, "agent:%s", key ? key : "");
    cfg.stations[0] = (struct eeb_server_station){"alpha", key ? agent : meter};
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eeb_server_port(s));
    const char *rate = !sm->agent_rate ? "20" : *sm->agent_rate ? sm->agent_rate : NULL;
    pid_t pid = key ? station_agent_at(dir, meter, url, key, rate) : 0;
    json_t *v = test_eeb_json((const char *[]){"run",
                                               "--task",
                                               "cls",
                                               "--finetune",
                                               in.ft,
                                               "--model",
                                               model,
                                               "--backend",
                                               EEB_SUT_EXAMPLE,
                                               "--util",
                                               EEB_TEST_DATA "/util/zcu102_placed.rpt",
                                               "--power",
                                               power,
                                               "--rate",
                                               "20",
                                               "--ranging-s",
                                               sm->ranging_s ? sm->ranging_s : "0",
                                               "--epochs", /* some seconds of fine-tuning */
                                               sm->epochs ? sm->epochs : "15000",
                                               "--db",
                                               db,
                                               "--server",
                                               url,
                                               "--token",
                                               token,
                                               "--json",
                                               NULL},
                              status);
    if (pid) { /* the agent ends its log on SIGTERM, and exits 0 */
        int st;
        kill(pid, SIGTERM);
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the agent's status %d", st);
    }
    eeb_server_stop(s);
    meter_emu_stop(emu);
    snprintf(sdb_out, 300, "%s", sdb);
    return v;
}

static json_t *a_director_run(const char *dir, const char *watts, const char *db, char *sdb_out,
                              int status, const char *key)
{
    /* a meter updating ten times a second, sampled (by the server at its
     * own rate) ten times a second */
    return a_director_run_on(dir, watts, db, sdb_out, status, key,
                             &(struct station_meter){.interval = "100"});
}

/* Director mode: the server's meter, not the run's log, gives E; the
 * entry is measured; the run's own log must agree with it. */
/* A director-mode run measured by the station's meter at 6 W, read by the
 * server itself or (key not NULL) through its agent. */
static void a_run_measured_by_the_station(const char *key)
{
    char dir[256], db[300], sdb[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    json_t *v = a_director_run(dir, "6", db, sdb, 0, key);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass", "%s",
                     json_string_value(json_object_get(v, "why")));
    /* the meter's power log was made first */
    char run[24];
    snprintf(
        run, sizeof run, "%lld",
        (long long)json_integer_value(json_object_get(json_object_get(v, "server"), "run_id")));
    cr_expect_str_eq(run, "2");
    json_decref(v);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM team_runs WHERE provenance = 'measured'"),
                 1);
    /* the meter run: a power log of the server's, sampled at 6 W, its
     * window placed on the run's fine-tune */
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM runs WHERE task = 'none' AND "
                                   "config ->> '$.power.source' LIKE 'ptd://127.0.0.1:%'"),
                 1);
    cr_expect_gt(test_sql_int(sdb, "SELECT count(*) FROM samples s JOIN runs r ON r.id = "
                                   "s.run_id WHERE r.task = 'none' AND s.watts = 6"),
                 10);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM events e JOIN runs r ON r.id = "
                                   "e.run_id WHERE r.task = 'none' AND e.kind = 'finetune_begin'"),
                 1);
    /* the meter's counts, which the validity rules read, are stored with it */
    cr_expect_eq(test_sql_int(sdb, "SELECT value FROM results WHERE run_id = 1 AND name = "
                                   "'samples'"),
                 test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 1"));
    cr_expect_eq(test_sql_int(sdb, "SELECT value FROM results WHERE run_id = 1 AND name = "
                                   "'samples_dropped'"),
                 0);
    /* E is 6 W over T, to the trapezoid's edges */
    cr_expect_lt(test_sql_int(sdb, "SELECT abs(e.value - 6 * t.value) * 1000 / e.value FROM "
                                   "results e, results t WHERE e.run_id = 2 AND t.run_id = 2 AND "
                                   "e.name = 'energy_j' AND t.name = 't_s'"),
                 50);
    struct test_run r = test_eeb((const char *[]){"check", sdb, "--run", run, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    /* the team has the server's record and its meter's log: its database
     * gives the server's S from the server's meter, and so does its
     * package, which carries both */
    expect_record_taken_back(db, 1, sdb, 2);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM samples s JOIN runs r ON r.id = "
                                  "s.run_id WHERE r.task = 'none'"),
                 test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 1"));
    char pkg[300];
    snprintf(pkg, sizeof pkg, "%s/run.tar", dir);
    r = test_eeb((const char *[]){"pack", db, "--run", "1", "--system",
                                  EEB_TEST_DATA "/package/system.json", "-o", pkg, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", "--package", pkg, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "pass  server record") && strstr(r.out, "with its meter's log"), "%s",
              r.out);
    test_run_free(&r);

    /* its page, as anyone reads it: the server's meter plotted (E came from
     * it, 6 W), the team's own log beside it (its sim: 6 W), each named
     * with its source and provenance, placed by the fine-tune's begin */
    char err[512], path[32];
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(path, sizeof path, "/runs/%s", run);
    struct reply page = request(eeb_server_port(s), "GET", path, NULL, 0, NULL);
    eeb_server_stop(s);
    cr_assert_eq(page.code, 200, "%s", page.body);
    static const char *const parts[] = {
        "<p id=\"director\">Director mode: the server read the team's meter itself, and E comes "
        "from it. The server's meter: ",
        " samples over ",
        "peak 6.000 W. The team's own log, beside it: ",
        "peak 6.000 W.</p>",
        "<polyline id=\"team-trace\" fill=\"none\" stroke=\"#9467bd\"",
        "<polyline id=\"power-trace\" fill=\"none\" stroke=\"#1f77b4\"",
        "<li id=\"trace-legend\">",
        "the server&#39;s meter, ptd://127.0.0.1:",
        " (measured; its power log, run 1): E and the P_max rule come from it</li>",
        "<li id=\"team-trace-legend\">",
        "the team&#39;s own log, sim:watts=6 (modeled: the team&#39;s word), checked against the "
        "meter; placed on the meter&#39;s clock by the fine-tune&#39;s begin</li>",
    };
    const char *at = page.body;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        const char *found = strstr(at, parts[i]);
        cr_expect(found, "no '%s' after what came before in the page", parts[i]);
        at = found ? found + strlen(parts[i]) : at;
    }
    free(page.body);
}

Test(server, the_servers_meter_measures_an_official_run, .timeout = 120)
{
    a_run_measured_by_the_station(NULL);
}

/* The station agent tests' setup: team alpha's station behind an agent. */
struct station_fixture {
    char dir[256];                /* a fresh scratch directory */
    char key[300];                /* the station key's file, in dir */
    char keytext[EEB_TOKEN_HEX];  /* and the key it holds */
    char sdb[300];                /* the server's database, in dir */
    char station[310];            /* alpha's station: "agent:" and key */
    char token[EEB_TOKEN_HEX];    /* alpha's token */
    struct inputs in;             /* the server's test set (and the run's inputs) */
    struct eeb_server_config cfg; /* a server for alpha's station, not started */
};

/* Makes f's directory and station key; if server, team alpha and f->cfg
 * as well (which points into f: start the server from f where it is). */
static void station_setup(struct station_fixture *f, int server)
{
    char err[512];
    snprintf(f->dir, sizeof f->dir, "%s", test_tmpdir());
    snprintf(f->key, sizeof f->key, "%s/station.key", f->dir);
    cr_assert_eq(eeb_server_station_key(f->key, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_station_key_read(f->key, f->keytext, err, sizeof err), EEB_OK, "%s",
                 err);
    if (!server)
        return;
    snprintf(f->sdb, sizeof f->sdb, "%s/server.db", f->dir);
    snprintf(f->station, sizeof f->station, "agent:%s", f->key);
    cr_assert_eq(eeb_server_add_team(f->sdb, "alpha", f->token, err, sizeof err), EEB_OK, "%s",
                 err);
    f->in = make_inputs(f->dir);
    eeb_server_config_default(&f->cfg);
    f->cfg.db = f->sdb, f->cfg.port = 0;
    f->cfg.test[EEB_TASK_CLS] = f->in.test;
    f->cfg.stations[0] = (struct eeb_server_station){"alpha", f->station};
}

/* The meter on a host the server cannot reach: the station's agent reads
 * it and sends its samples, and the run is measured as if the server read
 * it itself. */
Test(server, a_station_agent_measures_an_official_run, .timeout = 120)
{
    struct station_fixture f;
    station_setup(&f, 0);
    a_run_measured_by_the_station(f.key);
}

/* Sampling never waits on the network: with a server that takes the
 * agent's connection and request and never answers, its one send blocks
 * for the agent's whole timeout (5 s), and its log is sampled at its rate
 * all the while (a sampler waiting on the send would leave a hole of
 * seconds). */
Test(server, a_station_agent_samples_on_while_its_server_does_not_answer, .timeout = 60)
{
    struct station_fixture f;
    station_setup(&f, 0);
    char adb[300], url[64], req[64] = "";
    snprintf(adb, sizeof adb, "%s/agent.db", f.dir);
    /* listening, never accepting: the kernel takes the connection and the request */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 4) == 0 &&
              getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    pid_t pid = station_agent(f.dir, "sim:watts=6", url, f.key);
    usleep(3000000);
    int st;
    kill(pid, SIGTERM); /* it stops once the send gives up */
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the agent's status %d", st);
    int c = accept(fd, NULL, NULL);
    cr_assert_geq(c, 0, "the agent sent nothing");
    cr_expect_gt(recv(c, req, sizeof req - 1, 0), 0);
    cr_expect(strstr(req, "POST /api/v1/station/samples"), "%s", req);
    close(c), close(fd);
    /* 20 Hz from the first sample to the last, the send blocked throughout */
    long long span = test_sql_int(adb, "SELECT max(t_mono_ns) - min(t_mono_ns) FROM samples"),
              n = test_sql_int(adb, "SELECT count(*) FROM samples"),
              widest = test_sql_int(adb, "SELECT max(t_mono_ns - before) FROM (SELECT t_mono_ns, "
                                         "lag(t_mono_ns) OVER (ORDER BY t_mono_ns) AS before "
                                         "FROM samples)");
    cr_expect_geq(span, 2900000000LL, "the log spans %.3f s", span / 1e9);
    cr_expect_geq(n, span / 50000000 * 3 / 4, "%lld samples in %.3f s", n, span / 1e9);
    cr_expect_lt(widest, 1000000000LL, "%.3f s without a sample", widest / 1e9);
}

#define HEARTBEAT(source, provenance)                                                              \
    "{\"session\": \"a1\", \"source\": \"" source "\", \"provenance\": \"" provenance              \
    "\", \"rate_hz\": 10, \"now_ns\": 5000000000, \"failed\": 0, \"dropped\": 0, \"samples\": []}"

/* A station agent's key is the organizer's: a team's token is not one; the
 * agent must be heard before a run is registered, measures one run at a
 * time, and what it sends is checked field by field. */
Test(server, a_station_agent_is_heard_before_its_run_and_checked, .timeout = 60)
{
    struct station_fixture f;
    station_setup(&f, 1);
    const char *sdb = f.sdb, *keytext = f.keytext, *token = f.token;
    char err[512];
    cr_expect_neq(eeb_server_station_key(f.key, err, sizeof err), EEB_OK, "a key overwritten");
    cr_expect(strstr(err, "never overwritten"), "%s", err);
    struct stat st;
    cr_assert_eq(stat(f.key, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);
    f.cfg.stream_allowance_s = 1;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&f.cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    const char *official = REGISTER_ON("cls", "exec", ", \"official\": true");
    /* no agent yet: no run it would measure is registered */
    expect(port, "POST", "/api/v1/runs", official, token, 503, "error",
           "its agent (eeb power agent) has not been heard from");
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM team_runs"), 0);
    /* the team's token is no station's key */
    expect(port, "POST", "/api/v1/station/samples", HEARTBEAT("ptd://meter:8888", "measured"),
           token, 401, "error", "unknown station key");
    /* a replayed trace is declared whatever the agent says */
    expect(port, "POST", "/api/v1/station/samples", HEARTBEAT("replay:run.csv", "measured"),
           keytext, 400, "error", "reads declared figures, not measured");
    expect(port, "POST", "/api/v1/station/samples", HEARTBEAT("ptd://meter:8888", "measured"),
           keytext, 200, "team", "alpha");
    /* heard: the run registers, measured by the agent's meter */
    expect(port, "POST", "/api/v1/runs", official, token, 201, "provenance", "measured");
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM runs WHERE task = 'none' AND config ->> "
                                   "'$.power.source' = 'ptd://meter:8888'"),
                 1);
    expect(port, "POST", "/api/v1/runs", official, token, 503, "error",
           "its agent is measuring run 2");
    expect(port, "POST", "/api/v1/runs/2/begin", NULL, token, 200, "state", "registered");
    /* samples in order, none after the agent's now */
    expect(port, "POST", "/api/v1/station/samples",
           "{\"session\": \"a1\", \"source\": \"ptd://meter:8888\", \"provenance\": \"measured\", "
           "\"rate_hz\": 10, "
           "\"now_ns\": 9000000000, \"failed\": 0, \"dropped\": 0, \"samples\": "
           "[[8000000000, 6, 12, 0.5], [7000000000, 6, 12, 0.5]]}",
           keytext, 400, "field", "samples[1]");
    expect(port, "POST", "/api/v1/station/samples",
           "{\"session\": \"a1\", \"source\": \"ptd://meter:8888\", \"provenance\": \"measured\", "
           "\"rate_hz\": 10, "
           "\"now_ns\": 9000000000, \"failed\": 0, \"dropped\": 0, \"samples\": "
           "[[9500000000, 6, 12, 0.5]]}",
           keytext, 400, "field", "samples[0]");
    /* taken in on the server's clock, once: sent again, nothing more (the
     * first sample, 0.1 s before the agent's now, after the meter began) */
    usleep(200000);
    const char *batch =
        "{\"session\": \"a1\", \"source\": \"ptd://meter:8888\", \"provenance\": \"measured\", "
        "\"rate_hz\": 10, "
        "\"now_ns\": 9000000000, \"failed\": 0, \"dropped\": 0, \"samples\": "
        "[[8900000000, 6, 12, 0.5], [9000000000, 6, 12, null]]}";
    for (int i = 0; i < 2; i++) {
        struct reply r =
            request(port, "POST", "/api/v1/station/samples", batch, strlen(batch), keytext);
        cr_expect_eq(r.code, 200, "%s", r.body);
        json_t *o = json_loads(r.body, 0, NULL);
        cr_expect_eq(json_integer_value(json_object_get(o, "measuring")), 2, "%s", r.body);
        cr_expect_eq(json_integer_value(json_object_get(o, "kept")), i ? 0 : 2, "%s", r.body);
        json_decref(o);
        free(r.body);
    }
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 1 AND watts = 6"),
                 2);
    /* the second sample is placed 0.1 s after the first, on the server's clock */
    cr_expect_eq(test_sql_int(sdb, "SELECT max(t_mono_ns) - min(t_mono_ns) FROM samples WHERE "
                                   "run_id = 1"),
                 100000000);
    /* an agent started again (a new session) has a new clock: its samples
     * are not taken for ones sent before (its sample, 0.1 s before its
     * now, after the last one kept) */
    usleep(200000);
    const char *again =
        "{\"session\": \"b2\", \"source\": \"ptd://meter:8888\", \"provenance\": \"measured\", "
        "\"rate_hz\": 10, \"now_ns\": 1000000000, \"failed\": 0, \"dropped\": 0, \"samples\": "
        "[[900000000, 6, 12, 0.5]]}";
    expect(port, "POST", "/api/v1/station/samples", again, keytext, 200, "team", "alpha");
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 1"), 3);
    /* a run silent past the stream's allowance once it has begun does not
     * hold the meter: the next run of the team's is measured */
    usleep(1200000);
    expect(port, "POST", "/api/v1/station/samples", HEARTBEAT("ptd://meter:8888", "measured"),
           keytext, 200, "team", "alpha");
    expect(port, "POST", "/api/v1/runs", official, token, 201, "provenance", "measured");
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM runs WHERE id = 1 AND state = 'done'"), 1);
    cr_expect_eq(test_sql_int(sdb, "SELECT value FROM results WHERE run_id = 1 AND name = "
                                   "'samples'"),
                 3);
    eeb_server_stop(s);
    /* one key for two stations would let one agent measure both teams' runs */
    f.cfg.stations[1] = (struct eeb_server_station){"beta", f.station};
    cr_expect_neq(eeb_server_start(&f.cfg, &s, err, sizeof err), EEB_OK);
    cr_expect(strstr(err, "teams alpha and beta have the same station key"), "%s", err);
}

/* A batch of agent session a1's at now_ns (seconds), its samples and faults
 * (JSON array texts). */
static char *station_batch(double now_s, const char *samples, const char *faults)
{
    char *b = NULL;
    cr_assert_geq(
        asprintf(&b,
                 "{\"session\": \"a1\", \"source\": \"ptd://meter:8888\", \"provenance\": "
                 "\"measured\", \"rate_hz\": 1, \"update_interval_s\": 1, \"now_ns\": "
                 "%lld, \"failed\": 0, \"dropped\": 0, \"samples\": %s%s%s}",
                 (long long)(now_s * 1e9), samples, faults ? ", \"faults\": " : "",
                 faults ? faults : ""),
        0);
    return b;
}

static void expect_batch(int port, const char *key, double now_s, const char *samples,
                         const char *faults, long code, const char *k, const char *value)
{
    char *b = station_batch(now_s, samples, faults);
    expect(port, "POST", "/api/v1/station/samples", b, key, code, k, value);
    free(b);
}

/* A station agent's readings carry the uncertainty their meter stated
 * (the fifth of a sample: a fraction, null for one it could not
 * evaluate, absent for none) and its read faults: the server holds them
 * to the rules' 1 % as its sampler holds a meter it reads itself (a
 * power_fault event at the reading's time, the largest stored with the
 * meter run), records the faults at their times, and checks every field. */
Test(server, a_station_agents_readings_carry_their_uncertainty_and_faults, .timeout = 60)
{
    struct station_fixture f;
    station_setup(&f, 1);
    f.cfg.stream_allowance_s = 1;
    char err[512];
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&f.cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    const char *key = f.keytext;
    expect_batch(port, key, 5, "[]", NULL, 200, "team", "alpha");
    expect(port, "POST", "/api/v1/runs", REGISTER_ON("cls", "exec", ", \"official\": true"),
           f.token, 201, "provenance", "measured");
    expect(port, "POST", "/api/v1/runs/2/begin", NULL, f.token, 200, "state", "registered");
    /* the meter run records the meter's own update interval and rate */
    cr_expect_eq(test_sql_int(f.sdb, "SELECT config ->> '$.power.update_interval_s' FROM runs "
                                     "WHERE id = 1"),
                 1);
    /* every field checked */
    expect_batch(port, key, 9, "[[8000000000, 6, 12, 0.5, 0.005, 1]]", NULL, 400, "field",
                 "samples[0]");
    expect_batch(port, key, 9, "[[8000000000, 6, 12, 0.5, -0.01]]", NULL, 400, "field",
                 "samples[0][4]");
    expect_batch(port, key, 9, "[[8000000000, 6, 12, 0.5, 11]]", NULL, 400, "field",
                 "samples[0][4]");
    expect_batch(port, key, 9, "[[8000000000, 6, 12, 0.5, \"1 %\"]]", NULL, 400, "field",
                 "samples[0][4]");
    expect_batch(port, key, 9, "[]", "{}", 400, "field", "faults");
    expect_batch(port, key, 9, "[]",
                 "[{\"t_ns\": 8000000000, \"kind\": \"abort\", \"reason\": \"x\"}]", 400, "field",
                 "faults[0].kind");
    expect_batch(port, key, 9, "[]",
                 "[{\"t_ns\": 9500000000, \"kind\": \"power_fault\", \"reason\": \"x\"}]", 400,
                 "field", "faults[0].t_ns");
    expect_batch(port, key, 9, "[]",
                 "[{\"t_ns\": 8000000000, \"kind\": \"power_fault\", \"reason\": \"\"}]", 400,
                 "field", "faults[0].reason");
    expect_batch(port, key, 9, "[]",
                 "[{\"t_ns\": 8000000000, \"kind\": \"power_fault\", \"reason\": \"x\", "
                 "\"more\": 1}]",
                 400, "field", "faults[0]");
    char many[4096] = "[", longer[400];
    for (int i = 0; i < 65; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many),
                 "%s{\"t_ns\": 8000000000, \"kind\": \"power_fault\", \"reason\": \"x\"}",
                 i ? ", " : "");
    strcat(many, "]");
    expect_batch(port, key, 9, "[]", many, 400, "field", "faults");
    const char *head = "[{\"t_ns\": 8000000000, \"kind\": \"power_fault\", \"reason\": \"";
    memset(longer, 'a', sizeof longer);
    memcpy(longer, head, strlen(head));
    strcpy(longer + strlen(head) + 256, "\"}]"); /* a reason of 256 characters */
    expect_batch(port, key, 9, "[]", longer, 400, "field", "faults[0].reason");
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM samples"), 0);

    /* a reading within, one over (3 %), one of no stated uncertainty, one
     * the meter could not evaluate, one within again; and a read fault */
    usleep(600000);
    expect_batch(
        port, key, 9,
        "[[8500000000, 6, 12, 0.5, 0.005], [8600000000, 9, 12, 0.75, 0.03], "
        "[8700000000, 6, 12, 0.5], [8800000000, 6, 12, 0.5, null], "
        "[8900000000, 6, 12, 0.5, 0.004]]",
        "[{\"t_ns\": 8650000000, \"kind\": \"power_fault\", \"reason\": \"ptd: no reply\"}, "
        "{\"t_ns\": 8660000000, \"kind\": \"power_recovered\", \"reason\": \"readings "
        "resumed\"}]",
        200, "team", "alpha");
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM samples WHERE run_id = 1"), 5);
    /* each reading keeps its uncertainty, in millionths (bit 31: stated) */
    cr_expect_eq(test_sql_int(f.sdb, "SELECT group_concat(flags & 16777215, ',') = "
                                     "'5000,30000,0,16777215,4000' FROM (SELECT flags FROM samples "
                                     "WHERE run_id = 1 ORDER BY t_mono_ns)"),
                 1);
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM samples WHERE run_id = 1 AND "
                                     "flags >= 2147483648"),
                 4);
    /* the over-range reading is a fault at its own time, 0.1 s after the
     * first, with its uncertainty; the one not evaluated starts another
     * stretch after the unstated one (not held) */
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                     "'power_fault' AND json_extract(payload, '$.uncertainty') = "
                                     "0.03 AND t_mono_ns = (SELECT min(t_mono_ns) FROM samples "
                                     "WHERE run_id = 1) + 100000000"),
                 1);
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                     "'power_fault' AND json_type(payload, '$.uncertainty') = "
                                     "'null'"),
                 0, "a stretch over the limit goes on through a reading of none stated");
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                     "'power_recovered' AND payload LIKE '%uncertainty again%'"),
                 1);
    /* the agent's read fault, at its time on the server's clock */
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                     "'power_fault' AND payload ->> '$.reason' = 'the station''s "
                                     "agent: ptd: no reply' AND t_mono_ns = (SELECT min(t_mono_ns) "
                                     "FROM samples WHERE run_id = 1) + 150000000"),
                 1);
    /* sent again, nothing is recorded twice */
    usleep(100000);
    expect_batch(
        port, key, 9.2, "[[8500000000, 6, 12, 0.5, 0.005]]",
        "[{\"t_ns\": 8650000000, \"kind\": \"power_fault\", \"reason\": \"ptd: no reply\"}]", 200,
        "team", "alpha");
    cr_expect_eq(test_sql_int(f.sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                     "'power_fault'"),
                 2);
    /* let go (the run is silent past the stream's allowance), the meter
     * run stores the largest uncertainty, measured, as a sampler does */
    usleep(1200000);
    expect_batch(port, key, 10.5, "[]", NULL, 200, "team", "alpha");
    expect(port, "POST", "/api/v1/runs", REGISTER_ON("cls", "exec", ", \"official\": true"),
           f.token, 201, "provenance", "measured");
    cr_expect_float_eq(test_sql_double(f.sdb, "SELECT value FROM results WHERE run_id = 1 AND name "
                                              "= 'power_uncertainty_max' AND unit = 'fraction' AND "
                                              "provenance = 'measured'"),
                       0.03, 1e-12);
    eeb_server_stop(s);
}

/* The issue an organizer met: a PTDaemon meter read through `eeb power
 * agent`, over range for every reading (3 %): the run is invalid, the
 * reason naming the reading and its uncertainty, as for a meter the
 * server reads itself. */
Test(server, a_station_agents_reading_over_1_percent_makes_the_run_invalid, .timeout = 120)
{
    struct station_fixture f;
    station_setup(&f, 0);
    char db[300], sdb[300];
    snprintf(db, sizeof db, "%s/official.db", f.dir);
    json_t *v = a_director_run_on(
        f.dir, "6", db, sdb, 4, f.key,
        &(struct station_meter){.uncertainty = "Uncertainty,3.0", .interval = "100"});
    const char *why = json_string_value(json_object_get(v, "why"));
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "invalid", "%s", why);
    cr_expect(why && strstr(why, "the meter's reading "), "%s", why);
    cr_expect(why && strstr(why, " has an uncertainty of 3.0 %: the rules allow 1 %"), "%s", why);
    json_decref(v);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                   "'power_fault' AND json_extract(payload, '$.uncertainty') = "
                                   "0.03"),
                 1);
    cr_expect_float_eq(test_sql_double(sdb, "SELECT value FROM results WHERE run_id = 1 AND name "
                                            "= 'power_uncertainty_max'"),
                       0.03, 1e-12);
}

/* A PTDaemon updating once a second, read by the agent at its default
 * rate (the meter's own: 1 Hz) within 1 %: a valid run, its S_uncertainty
 * from the meter's largest uncertainty; the meter run records both rates.
 * (At 100 Hz against this meter, jitter below a second was judged a gap
 * against 10 ms: three of five runs were invalid.) */
Test(server, a_station_agent_at_its_meters_own_rate_gives_a_valid_run, .timeout = 120)
{
    struct station_fixture f;
    station_setup(&f, 0);
    char db[300], sdb[300];
    snprintf(db, sizeof db, "%s/official.db", f.dir);
    json_t *v = a_director_run_on(
        f.dir, "6", db, sdb, 0, f.key,
        &(struct station_meter){.uncertainty = "Uncertainty,0.5", .agent_rate = ""});
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass", "%s",
                     json_string_value(json_object_get(v, "why")));
    json_decref(v);
    cr_expect_float_eq(test_sql_double(sdb, "SELECT config ->> '$.power.rate_hz' FROM runs WHERE "
                                            "id = 1"),
                       1, 1e-12);
    cr_expect_float_eq(test_sql_double(sdb, "SELECT config ->> '$.power.update_interval_s' FROM "
                                            "runs WHERE id = 1"),
                       1, 1e-12);
    cr_expect_float_eq(test_sql_double(sdb, "SELECT value FROM results WHERE run_id = 2 AND name "
                                            "= 's_uncertainty'"),
                       0.4 *
                           test_sql_double(sdb, "SELECT value FROM results WHERE run_id = 2 AND "
                                                "name = 'm_p'") *
                           0.005,
                       1e-12);
}

/* The organizer's issue: the station's PTDaemon ranged at idle (6 W at
 * its open) while the team's training drew 9 W.  The run ranges it on its
 * own workload before its fine-tune (POST /api/v1/runs/{id}/ranging): the
 * server's meter, read by the server itself or by the station's agent
 * (told in the answer to its next batch), autoranges while the SUT
 * trains, and is fixed to what the training drew (SR,A at 1.1 x 0.75 A)
 * before the testing pass begins; both phases and the meter's identity are
 * in the meter run, and the run is judged as usual. */
static void a_station_meter_ranged_on_the_workload(const char *key)
{
    char dir[256], db[300], sdb[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    json_t *v = a_director_run_on(
        dir, "9", db, sdb, 0, key,
        &(struct station_meter){.interval = "100", .ranging_s = "1", .amps_later = 0.75});
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "pass", "%s",
                     json_string_value(json_object_get(v, "why")));
    json_decref(v);
    /* the meter run: the pass begun (autoranging), ended at the workload's ranges */
    char *text = NULL;
    cr_assert_eq(test_sql_text(sdb,
                               "SELECT group_concat(kind || ' ' || (payload ->> '$.volts') || ' ' "
                               "|| (payload ->> '$.amps'), '; ') FROM events WHERE run_id = 1 AND "
                               "kind LIKE 'ranging_%' ORDER BY t_mono_ns",
                               &text),
                 0);
    cr_expect_str_eq(text, "ranging_begin Auto Auto; ranging_end 12 0.825");
    free(text);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                   "'ranging_end' AND payload ->> '$.identity' = 'PTDaemon "
                                   "emulator (eeb tests), analyzer WT310E' AND payload ->> "
                                   "'$.max_amps' = 0.75"),
                 1);
    /* before the window: the fine-tune's begin placed after the pass's end */
    cr_expect_eq(test_sql_int(sdb, "SELECT (SELECT t_mono_ns FROM events WHERE run_id = 1 AND kind "
                                   "= 'ranging_end') < (SELECT t_mono_ns FROM events WHERE run_id "
                                   "= 1 AND kind = 'finetune_begin')"),
                 1);
    /* the run's own record says the server's meter was ranged, and the
     * SUT deployed again after it */
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                  "'ranging_end' AND payload ->> '$.server.amps' = '0.825'"),
                 1);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                  "'deployed'"),
                 2);
}

Test(server, the_servers_meter_is_ranged_on_the_runs_workload, .timeout = 120)
{
    a_station_meter_ranged_on_the_workload(NULL);
}

Test(server, a_station_agents_meter_is_ranged_on_the_runs_workload, .timeout = 120)
{
    struct station_fixture f;
    station_setup(&f, 0);
    a_station_meter_ranged_on_the_workload(f.key);
}

/* A station agent's batch of samples, numbered from *index on (their
 * watts), every 50 ms of its clock after *last up to now_ns. */
static void agent_batch(int port, const char *key, int64_t now_ns, int64_t *last, int *index)
{
    char body[8192];
    int n = snprintf(body, sizeof body,
                     "{\"session\": \"c3\", \"source\": \"ptd://meter:8888\", \"provenance\": "
                     "\"measured\", \"rate_hz\": 20, \"now_ns\": %lld, \"failed\": 0, "
                     "\"dropped\": 0, \"samples\": [",
                     (long long)now_ns);
    for (const char *sep = ""; *last + 50000000 <= now_ns; sep = ", ") {
        *last += 50000000;
        n += snprintf(body + n, sizeof body - (size_t)n, "%s[%lld, %d, 12, 0.5]", sep,
                      (long long)*last, ++*index);
        cr_assert_lt(n, (int)sizeof body - 8);
    }
    snprintf(body + n, sizeof body - (size_t)n, "]}");
    struct reply r = request(port, "POST", "/api/v1/station/samples", body, strlen(body), key);
    cr_assert_eq(r.code, 200, "%s", r.body);
    free(r.body);
}

/* The least difference between the agent's clock and the server's gives
 * way, once it leaves the window, to the least of the rest of the window,
 * not to the batch at hand: one held up then (300 ms here) moves no
 * sample, so the meter run has neither a gap nor drops. */
Test(server, a_station_agents_batch_held_up_moves_no_sample, .timeout = 60)
{
    struct station_fixture f;
    station_setup(&f, 1);
    const char *sdb = f.sdb, *keytext = f.keytext, *token = f.token;
    char err[512];
    f.cfg.station_clock_window_s = 3; /* a minute's, shortened */
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&f.cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);
    /* the agent's clock: this process's less 5 s.  Heard (a batch sent
     * 50 ms before it arrived), its run registered; then its batches are
     * sent 20 ms before they arrive but the first, the quickest of all, so
     * that it stays the least until it leaves the window. */
    int64_t base = eeb_mono_ns() - 5000000000LL, last = eeb_mono_ns() - base - 50000000;
    int index = 0, held = 0;
    agent_batch(port, keytext, last, &last, &index);
    expect(port, "POST", "/api/v1/runs", REGISTER_ON("cls", "exec", ", \"official\": true"), token,
           201, "provenance", "measured");
    int64_t t0 = eeb_mono_ns();
    last = t0 - base; /* the samples from here on */
    agent_batch(port, keytext, t0 - base, &last, &index);
    while (eeb_mono_ns() - t0 < 4500000000LL) {
        usleep(100000);
        if (!held && eeb_mono_ns() - t0 > 2600000000LL) {
            /* one held up 300 ms, arriving just after the first has left the
             * window (the agent sends the next once it is answered) */
            while (eeb_mono_ns() - t0 < 3020000000LL)
                usleep(1000);
            agent_batch(port, keytext, eeb_mono_ns() - base - 300000000, &last, &index);
            held = 1;
        } else
            agent_batch(port, keytext, eeb_mono_ns() - base - 20000000, &last, &index);
    }
    eeb_server_stop(s);
    long long n = test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 1"),
              numbers = test_sql_int(sdb, "SELECT max(watts) - min(watts) + 1 FROM samples WHERE "
                                          "run_id = 1"),
              widest = test_sql_int(sdb, "SELECT max(t_mono_ns - before) FROM (SELECT t_mono_ns, "
                                         "lag(t_mono_ns) OVER (ORDER BY t_mono_ns) AS before "
                                         "FROM samples WHERE run_id = 1)");
    cr_expect_gt(n, 60, "%lld samples kept", n);
    cr_expect_eq(n, numbers, "%lld kept of the %lld from the first kept to the last", n, numbers);
    cr_expect_lt(widest, 100000000, "a gap of %.3f s", widest / 1e9);
}

Test(server, a_runs_own_log_far_from_the_servers_meter_is_invalid, .timeout = 120)
{
    char dir[256], db[300], sdb[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    json_t *v = a_director_run(dir, "9", db, sdb, 4, NULL);
    cr_expect_str_eq(json_string_value(json_object_get(v, "verdict")), "invalid");
    cr_expect(strstr(json_string_value(json_object_get(v, "why")), "the run's own log gives E = "),
              "%s", json_string_value(json_object_get(v, "why")));
    cr_expect(strstr(json_string_value(json_object_get(v, "why")), "50.0 % apart"), "%s",
              json_string_value(json_object_get(v, "why")));
    json_decref(v);
}

/* A command line of spaces and a path longer than the server takes: the
 * run still declares what the server does. */
Test(server, an_official_run_of_a_teams_program_is_judged_by_the_server, .timeout = 120)
{
    an_official_run_of_a_teams_sut(
        "exec:python3 sut/examples/nearest_mean.py --unused-by-the-example", "exec",
        "a team&#39;s program", "60", /* a few seconds */
        "nearest-mean-py");
}

Test(server, an_official_run_cut_off_at_scoring_is_finished_by_submit_resume, .timeout = 120)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX], hint[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    struct inputs in = make_inputs(dir);
    /* the network fails at scoring, and only there, for as long as the
     * client tries */
    struct eeb_server *s = official_server(sdb, &in, 1, 0, 1, url, token);
    char proxied[64];
    struct fault_proxy *proxy = fault_proxy_start(url, proxied);
    fault_proxy_fail(proxy, "/score");
    struct test_run r = test_eeb(
        (const char *[]){"run", "--task", "cls", "--finetune", in.ft, "--model", in.model, "--db",
                         db, "--server", proxied, "--token", token, "--epochs", "2", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "HTTP 503 (after 6 tries)"), "%s", r.err);
    cr_expect_eq(fault_proxy_refused(proxy), 6);
    snprintf(hint, sizeof hint, "eeb submit %s --run 1 --resume 1 --server %s", db, proxied);
    cr_expect(strstr(r.err, hint), "%s", r.err);
    test_run_free(&r);
    /* the record is whole, and marked as no error of the run's */
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'error'"), 0);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM predictions"), 64);
    expect_no_leftovers(dir);

    /* the network back: the submission resumed, from the first link the
     * server lacked (none: the run had sent them all) */
    fault_proxy_fail(proxy, NULL);
    r = test_eeb((const char *[]){"submit", db, "--server", proxied, "--token", token, "--resume",
                                  "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "server run 1 (cls, team alpha): pass"), "%s", r.out);
    cr_expect(strstr(r.err, "eeb: chain: the server holds all "), "%s", r.err);
    test_run_free(&r);
    fault_proxy_stop(proxy);
    expect_record_taken_back(db, 1, sdb, 1);
    r = test_eeb((const char *[]){"check", sdb, "--run", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    eeb_server_stop(s);
}

/* `eeb serve` as its own process on port holding the cls test set (and
 * fine-tune set, if not NULL), until killed; ready when it answers. */
static pid_t serve(const char *sdb, const struct inputs *in, int port)
{
    char p[16], t[400], f[400], m[400];
    snprintf(p, sizeof p, "%d", port);
    snprintf(t, sizeof t, "cls=%s", in->test);
    snprintf(f, sizeof f, "cls=%s", in->ft);
    snprintf(m, sizeof m, "cls=%s", in->model);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1), dup2(null, 2);
        execl(EEB_BIN, EEB_BIN, "serve", "--db", sdb, "--port", p, "--test", t, "--practice", t,
              "--finetune", f, "--model", m, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500; i++) {
        CURL *c = curl_easy_init();
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/healthz", port);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        CURLcode rc = curl_easy_perform(c);
        curl_easy_cleanup(c);
        if (rc == CURLE_OK)
            return pid;
        usleep(10000);
    }
    cr_assert_fail("eeb serve did not start on port %d", port);
    return -1;
}

/* A port of 127.0.0.1 free a moment ago, taken from the kernel. */
static int free_port(const char *sdb)
{
    char err[512];
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    struct eeb_server *probe;
    cr_assert_eq(eeb_server_start(&cfg, &probe, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(probe);
    eeb_server_stop(probe);
    return port;
}

static void kill_9(pid_t pid)
{
    int st;
    kill(pid, SIGKILL);
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

Test(server, an_official_run_outlives_kill_9_of_the_server, .timeout = 120)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX], errpath[300], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/official.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(errpath, sizeof errpath, "%s/run.err", dir);
    struct inputs in = make_inputs(dir);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    int port = free_port(sdb);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    pid_t server = serve(sdb, &in, port);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 1), dup2(fd, 2);
        execl(EEB_BIN, EEB_BIN, "run", "--task", "cls", "--finetune", in.ft, "--model", in.model,
              "--db", db, "--server", url, "--token", token, "--epochs", "1", (char *)NULL);
        _exit(127);
    }
    /* once the run has the server's answer to its registration, the
     * server is killed; it is back on its port 1.5 s later, while the run
     * needs it to say complete and send the inputs */
    char *text = NULL;
    for (int i = 0; i < 2000; i++, usleep(5000)) {
        free(text);
        text = test_read_file(errpath, NULL);
        if (text && strstr(text, "eeb: official run 1 on"))
            break;
    }
    cr_assert(text && strstr(text, "eeb: official run 1 on"), "never registered: %s", text);
    free(text);
    kill_9(server);
    usleep(1500000);
    server = serve(sdb, &in, port);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    text = test_read_file(errpath, NULL);
    /* pass, or invalid when a loaded machine leaves a gap in its short
     * power log: either way judged, and the server and eeb check agree */
    int judged = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    cr_expect(judged == 0 || judged == 4, "exit %d: %s", st, text);
    cr_expect(strstr(text, "trying again in"), "no retry: %s", text);
    free(text);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM team_runs"), 1);
    cr_expect_eq(test_sql_int(sdb, judged
                                       ? "SELECT count(*) FROM team_runs WHERE verdict = 'invalid'"
                                       : "SELECT count(*) FROM team_runs WHERE verdict = 'pass'"),
                 1);
    struct test_run r = test_eeb((const char *[]){"check", sdb, "--run", "1", NULL});
    cr_expect_eq(r.status, judged, "%s%s", r.out, r.err);
    test_run_free(&r);
    kill(server, SIGTERM);
    waitpid(server, &st, 0);
}

Test(server, kill_9_of_the_server_loses_nothing_it_answered, .timeout = 120)
{
    char dir[256], db[300], sdb[300], url[64], token[EEB_TOKEN_HEX], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/runs.db", dir);
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    const struct inputs *in = local_run(dir, db);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    int port = free_port(sdb);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);

    pid_t pid = serve(sdb, in, port);
    struct test_run r =
        test_eeb((const char *[]){"submit", db, "--server", url, "--token", token, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    struct reply a =
        request(port, "POST", "/api/v1/runs", REGISTER("cls"), strlen(REGISTER("cls")), token);
    cr_expect_eq(a.code, 201, "%s", a.body);
    free(a.body);
    char chain[2048];
    chain_body(chain, sizeof chain, 2.75, -1, '0');
    a = request(port, "POST", "/api/v1/runs/2/links", chain, strlen(chain), token);
    cr_expect_eq(a.code, 200, "%s", a.body);
    free(a.body);
    kill_9(pid);

    /* restarted on the same database: the scored run, the registration and
     * the links it acknowledged are all there */
    pid = serve(sdb, in, port);
    expect(port, "GET", "/api/v1/runs/1", NULL, token, 200, "verdict", "pass");
    expect(port, "GET", "/api/v1/runs/2", NULL, token, 200, "state", "registered");
    a = request(port, "POST", "/api/v1/runs/2/links", chain, strlen(chain), token);
    cr_expect(a.code == 200 && strstr(a.body, "\"next\":3"), "the links were lost: %s", a.body);
    free(a.body);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM samples WHERE run_id = 2"), 2);
    cr_expect_eq(test_sql_int(sdb, "SELECT count(*) FROM pragma_integrity_check WHERE "
                                   "integrity_check = 'ok'"),
                 1);
    r = test_eeb((const char *[]){"check", sdb, "--run", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    int st;
    kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
}
