/*
 * test_round_cli.c - rounds as the organizer and a team type them: eeb
 * serve admin open-round with its options, then rounds listing it; a
 * round overlapping another's time and a name taken, refused naming them;
 * close-round; bad option values and options of another verb refused
 * naming the option; the organizer's acts (teams, revoke-team, hide-run,
 * restore-run, withdraw-run, audit) on a database a live server holds,
 * each with its reason; eeb serve saying what it holds and logging what it
 * does; and eeb run --entry, --division and --tier: usage errors without
 * --server, recorded in the run's configuration and sent at registration,
 * where a tier the round has not is refused before any training, and the
 * seed the round hands a run taken.  Sections: the organizer, the team.
 */
#include "fpga/net/eeb_model.h"
#include "fpga/net/eeb_net.h"
#include "harness/eeb_client.h"
#include "rundb/eeb_config_record.h"
#include "server/eeb_server.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the organizer ---- */

/* eeb serve args..., its exit status want, and stderr holding says (NULL: empty). */
static struct test_run serve(const char *const *args, int want, const char *says)
{
    const char *argv[32] = {"serve"};
    size_t n = 1;
    while (args[n - 1]) {
        cr_assert_lt(n, sizeof argv / sizeof *argv - 1);
        argv[n] = args[n - 1], n++;
    }
    struct test_run r = test_eeb(argv);
    cr_assert_eq(r.status, want, "eeb serve %s %s: exit %d\n%s%s", args[0], args[1] ? args[1] : "",
                 r.status, r.out, r.err);
    if (says)
        assert_has(r.err, says);
    else
        cr_expect_str_empty(r.err);
    return r;
}

/* A base model file of task (test_tiny_net's weights) in dir. */
static const char *model_file(const char *dir, int task, char *path, size_t n)
{
    char err[512];
    snprintf(path, n, "%s/base-%d.eebm", dir, task);
    struct eeb_net *net = test_tiny_net();
    cr_assert_eq(eeb_model_save(path, net, task, err, sizeof err), EEB_OK, "%s", err);
    eeb_net_free(net);
    return path;
}

Test(round_cli, open_round_with_options_is_stored_and_listed)
{
    char dir[256], db[300], model[300], closed_model[400], want[256], sha[EEB_SHA256_HEX], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/s.db", dir);
    model_file(dir, EEB_TASK_CLS, model, sizeof model);
    cr_assert_eq(eeb_sha256_file(model, sha, err, sizeof err), EEB_OK, "%s", err);
    snprintf(closed_model, sizeof closed_model, "cls=%s", model);
    const char *open_r1[] = {"admin",
                             "open-round",
                             "r1",
                             "--db",
                             db,
                             "--runs",
                             "3",
                             "--aggregate",
                             "olympic",
                             "--cap",
                             "9",
                             "--closes",
                             "2099-01-01T00:00:00Z",
                             "--tmax",
                             "cls=45",
                             "--tiers",
                             "cls=5,10",
                             "--closed-model",
                             closed_model,
                             "--epochs-max",
                             "cls=3",
                             "--tiers",
                             "det=2.5",
                             NULL};
    struct test_run r = serve(open_r1, 0, NULL);
    assert_has(r.out, "round r1 open from ");
    assert_has(r.out, " to 2099-01-01T00:00:00Z in ");
    assert_has(r.out, ": 3 runs an entry (olympic), a cap of 9 runs a task, rules 1\n");
    snprintf(want, sizeof want,
             "  cls   T_max 45 s, P_max tiers 5, 10 W; closed division: base model sha256 %s, at "
             "most 3 epochs\n",
             sha);
    assert_has(r.out, want);
    assert_has(r.out, "  det   T_max 30 s, P_max tiers 2.5 W; closed division: any base model, "
                      "any epochs\n");
    test_run_free(&r);

    /* as the server reads it */
    struct eeb_round *all;
    size_t n;
    cr_assert_eq(eeb_server_rounds(db, &all, &n, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(all[0].name, "r1");
    cr_expect_eq(all[0].runs, 3);
    cr_expect_eq(all[0].aggregate, EEB_ROUND_OLYMPIC);
    cr_expect_eq(all[0].cap, 9);
    cr_expect_eq(all[0].closes_utc_ns, 4070908800LL * 1000000000);
    cr_expect(llabs(all[0].opens_utc_ns - eeb_utc_ns()) < 60LL * 1000000000, "opens now");
    cr_expect_eq(all[0].task[EEB_TASK_CLS].t_max_s, 45);
    cr_expect_eq(all[0].task[EEB_TASK_CLS].ntiers, 2);
    cr_expect_eq(all[0].task[EEB_TASK_CLS].tiers_w[0], 5);
    cr_expect_eq(all[0].task[EEB_TASK_CLS].tiers_w[1], 10);
    cr_expect_str_eq(all[0].task[EEB_TASK_CLS].model_sha256, sha);
    cr_expect_eq(all[0].task[EEB_TASK_CLS].epochs_max, 3);
    cr_expect_eq(all[0].task[EEB_TASK_DET].ntiers, 1);
    cr_expect_eq(all[0].task[EEB_TASK_DET].tiers_w[0], 2.5);
    cr_expect_str_empty(all[0].task[EEB_TASK_DET].model_sha256);
    cr_expect_eq(all[0].task[EEB_TASK_DET].epochs_max, 0);
    free(all);

    r = serve((const char *[]){"admin", "rounds", "--db", db, NULL}, 0, NULL);
    cr_expect(strncmp(r.out, "r1    open          20", 22) == 0, "%s", r.out);
    assert_has(r.out, " to 2099-01-01T00:00:00Z  3 runs an entry (olympic), cap 9 runs a task\n");
    size_t lines = 0;
    for (const char *p = r.out; *p; p++)
        lines += *p == '\n';
    cr_expect_eq(lines, 1, "one line a round: %s", r.out);
    test_run_free(&r);
}

Test(round_cli, rounds_do_not_overlap_and_close)
{
    char db[300];
    snprintf(db, sizeof db, "%s/s.db", test_tmpdir());
    struct test_run r = serve((const char *[]){"admin", "rounds", "--db", db, NULL}, 1, db);
    cr_expect_neq(access(db, F_OK), 0, "listing rounds made a database");
    test_run_free(&r);
    r = serve((const char *[]){"admin", "open-round", "r1", "--db", db, NULL}, 0, NULL);
    assert_has(r.out, ": 5 runs an entry (median), a cap of 20 runs a task");
    test_run_free(&r);

    /* a second round in r1's time, and one of r1's name */
    r = serve((const char *[]){"admin", "open-round", "r2", "--db", db, "--opens",
                               "2026-01-01T00:00:00Z", "--closes", "2099-01-01T00:00:00Z", NULL},
              1, "round 'r2' overlaps another round's time");
    assert_has(r.err, "(round r1 runs from ");
    test_run_free(&r);
    r = serve((const char *[]){"admin", "open-round", "r1", "--db", db, "--opens",
                               "2098-01-01T00:00:00Z", NULL},
              1, "a round named 'r1' exists");
    cr_expect_null(strstr(r.err, "runs from"), "%s", r.err);
    test_run_free(&r);
    r = serve((const char *[]){"admin", "open-round", "r3", "--db", db, "--opens",
                               "2098-01-01T00:00:00Z", "--closes", "2098-02-01T00:00:00Z", NULL},
              0, NULL);
    assert_has(r.out, "round r3 open from 2098-01-01T00:00:00Z to 2098-02-01T00:00:00Z");
    test_run_free(&r);

    r = serve((const char *[]){"admin", "close-round", "r1", "--db", db, NULL}, 0, NULL);
    assert_has(r.out, "round r1 closed at ");
    test_run_free(&r);
    r = serve((const char *[]){"admin", "close-round", "r1", "--db", db, NULL}, 1,
              "no round named 'r1' is open");
    test_run_free(&r);
    r = serve((const char *[]){"admin", "close-round", "r3", "--db", db, NULL}, 1,
              "no round named 'r3' is open"); /* not yet open */
    test_run_free(&r);
    /* r1 closed early: its time is free again */
    r = serve((const char *[]){"admin", "open-round", "r2", "--db", db, NULL}, 0, NULL);
    test_run_free(&r);

    r = serve((const char *[]){"admin", "rounds", "--db", db, NULL}, 0, NULL);
    char *r1 = strstr(r.out, "r1    closed        "), *r2 = strstr(r.out, "r2    open          "),
         *r3 = strstr(r.out, "r3    not yet open  2098-01-01T00:00:00Z to 2098-02-01T00:00:00Z  5 "
                             "runs an entry (median), cap 20 runs a task\n");
    cr_expect(r1 && r2 && r3, "%s", r.out);
    const char *closed = r1 ? strstr(r1, " (closed 20") : NULL;
    cr_expect(closed && closed < strchr(r1, '\n'), "r1's line says when it closed: %s", r.out);
    cr_expect(r1 < r2 && r2 < r3, "the first to open first: %s", r.out);
    test_run_free(&r);
}

Test(round_cli, bad_values_are_refused_naming_the_option)
{
    char dir[256], db[300], model[300], det_model[400];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/s.db", dir);
    model_file(dir, EEB_TASK_CLS, model, sizeof model);
    snprintf(det_model, sizeof det_model, "det=%s", model);
    const struct {
        const char *option, *value, *says;
        int status;
    } bad[] = {
        {"--tiers", "cls=5,x", "--tiers cls=5,x: expected watts above 0", 2},
        {"--tiers", "cls=10,5", "--tiers cls=10,5: expected watts ascending", 2},
        {"--tiers", "cls=", "--tiers cls=: expected TASK=W[,W...]", 2},
        {"--tiers", "cls=1,2,3,4,5", "--tiers cls=1,2,3,4,5: at most 4 tiers", 2},
        {"--tiers", "speech=5", "--tiers speech=5: ", 2},
        {"--aggregate", "mean", "--aggregate mean: expected median or olympic", 2},
        {"--opens", "2026-13-01T00:00:00Z", "--opens 2026-13-01T00:00:00Z: expected a UTC time", 2},
        {"--opens", "2026-02-30T00:00:00Z", "--opens 2026-02-30T00:00:00Z: expected a UTC time", 2},
        {"--opens", "tomorrow", "--opens tomorrow: expected a UTC time like 2026-12-01T00:00:00Z",
         2},
        {"--closes", "2026-12-01", "--closes 2026-12-01: expected a UTC time", 2},
        {"--closes", "2000-01-01T00:00:00Z", "round r1 closes before it opens", 1},
        {"--tmax", "cls=0", "--tmax cls=0: expected seconds above 0", 2},
        {"--tmax", "60", "--tmax 60: expected TASK=S", 2},
        {"--epochs-max", "cls=1.5", "--epochs-max cls=1.5: expected a whole number of epochs", 2},
        {"--runs", "0", "--runs: '0'", 2},
        {"--runs", "30", "round r1: runs an entry 30: expected 1 to 25", 1},
        {"--cap", "x", "--cap: 'x' is not a number", 2},
        {"--closed-model", det_model, ": a base model of cls, not det", 1},
        {"--closed-model", "cls=/nonexistent.eebm", "--closed-model cls=/nonexistent.eebm: ", 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct test_run r = serve((const char *[]){"admin", "open-round", "r1", "--db", db,
                                                   bad[i].option, bad[i].value, NULL},
                                  bad[i].status, bad[i].says);
        test_run_free(&r);
    }
    cr_expect_neq(access(db, F_OK), 0, "a refused round made the database");

    /* an option of one verb given with another */
    const char *const *wrong[] = {
        (const char *[]){"admin", "rounds", "--db", db, "--runs", "3", NULL},
        (const char *[]){"--tiers", "cls=5", NULL},
        (const char *[]){"admin", "open-round", "r1", "--db", db, "--port", "80", NULL},
        (const char *[]){"admin", "add-team", "alpha", "--db", db, "-o", "x", NULL},
        (const char *[]){"admin", "close-round", "r1", "--db", db, "--opens", "now", NULL},
    };
    const char *says[] = {"--runs goes with admin open-round, not admin rounds",
                          "--tiers goes with admin open-round, not eeb serve",
                          "--port goes with eeb serve, not admin open-round",
                          "-o goes with admin make-test or admin station-key, not admin add-team",
                          "--opens goes with admin open-round, not admin close-round"};
    for (size_t i = 0; i < sizeof wrong / sizeof *wrong; i++) {
        struct test_run r = serve(wrong[i], 2, says[i]);
        test_run_free(&r);
    }
    struct test_run r = serve((const char *[]){"admin", "open-round", "--db", db, NULL}, 2,
                              "admin open-round takes one NAME");
    test_run_free(&r);
    r = serve((const char *[]){"admin", "reopen-round", "r1", NULL}, 2,
              "admin reopen-round: no such verb");
    test_run_free(&r);
    cr_expect_neq(access(db, F_OK), 0, "a usage error made the database");
}

Test(round_cli, help_names_the_round_verbs_and_options)
{
    struct test_run r = test_eeb((const char *[]){"serve", "--help", NULL});
    cr_assert_eq(r.status, 0);
    assert_has(r.out, "eeb serve admin open-round NAME [--db FILE] [--runs N]");
    assert_has(r.out, "eeb serve admin close-round NAME [--db FILE]");
    assert_has(r.out, "eeb serve admin rounds [--db FILE]");
    assert_has(r.out, "  --tiers TASK=W[,W...]\n");
    assert_has(r.out, "  --closed-model TASK=FILE.eebm\n");
    static const char *const acts[] = {
        "eeb serve admin teams [--db FILE]\n",
        "eeb serve admin revoke-team NAME --reason TEXT [--db FILE]\n",
        "eeb serve admin hide-run ID --reason TEXT [--db FILE]\n",
        "eeb serve admin restore-run ID --reason TEXT [--db FILE]\n",
        "eeb serve admin withdraw-run ID --reason TEXT [--db FILE]\n",
        "eeb serve admin audit [--db FILE]\n",
        "  --reason TEXT      why, 1 to 500 characters, kept in the audit log (required)\n"};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++)
        assert_has(r.out, acts[i]);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--help", NULL});
    assert_has(r.out, "  --entry NAME ");
    assert_has(r.out, "  --division closed|open ");
    assert_has(r.out, "  --tier W ");
    test_run_free(&r);
}

/* The lines of text. */
static size_t lines_of(const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* The line of text that begins with start (NULL: none), to its end. */
static const char *line_of(const char *text, const char *start, char *out, size_t n)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, start, strlen(start)) == 0) {
            const char *end = strchr(p, '\n');
            snprintf(out, n, "%.*s", end ? (int)(end - p) : (int)strlen(p), p);
            return out;
        }
    return NULL;
}

/* A team's whoami on the server at url: the HTTP answer's status, as the
 * client makes it (EEB_OK, or EEB_EINVAL for a 4xx), and its error in err. */
static int whoami(const char *url, const char *token, char *err, size_t errlen)
{
    struct eeb_client cl;
    json_t *reply = NULL;
    cr_assert_eq(eeb_client_init(&cl, url, token, err, errlen), EEB_OK, "%s", err);
    cl.tries = 1;
    int rc = eeb_client_call(&cl, "GET", "/api/v1/whoami", NULL, &reply, err, errlen);
    json_decref(reply);
    eeb_client_free(&cl);
    return rc;
}

/* The organizer's acts on a server's database as it serves: two teams, a
 * run of alpha's registered over HTTP; teams lists them; each act takes
 * its --reason, applies once and is refused, naming the run or the team,
 * where it does not apply; a revoked team's token is refused; the audit
 * log holds every act done, with its reason, and none refused. */
Test(round_cli, the_organizers_acts_are_kept_with_their_reasons, .timeout = 60)
{
    char dir[256], db[300], url[64], alpha[EEB_TOKEN_HEX], beta[EEB_TOKEN_HEX], err[512];
    char line[256], missing[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/s.db", dir);
    snprintf(missing, sizeof missing, "%s/none.db", dir);
    cr_assert_eq(eeb_server_add_team(db, "alpha", alpha, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_add_team(db, "beta", beta, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0;
    cfg.test[EEB_TASK_CLS] = cfg.practice[EEB_TASK_CLS] = test_cls_shard(8, 16, 2);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eeb_server_port(s));
    struct eeb_client cl;
    json_t *reply = NULL,
           *body = json_loads("{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": "
                              "0.4, \"dsp\": 0.2}, \"provenance\": \"declared\", \"device\": "
                              "\"zcu104\", \"backend\": \"xrt\"}",
                              0, NULL);
    cr_assert(body);
    cr_assert_eq(eeb_client_init(&cl, url, alpha, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_client_call(&cl, "POST", "/api/v1/runs", body, &reply, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(json_integer_value(json_object_get(reply, "run_id")), 1);
    json_decref(reply), json_decref(body);
    eeb_client_free(&cl);

    struct test_run r = serve((const char *[]){"admin", "teams", "--db", db, NULL}, 0, NULL);
    cr_expect_eq(lines_of(r.out), 2, "%s", r.out);
    cr_expect(line_of(r.out, "alpha ", line, sizeof line) && strstr(line, " created 20") &&
                  strstr(line, "      1 runs  active"),
              "%s", r.out);
    cr_expect(line_of(r.out, "beta ", line, sizeof line) && strstr(line, "      0 runs  active"),
              "%s", r.out);
    test_run_free(&r);

    /* no act without its reason; none of another verb's options */
    const char *const *unreasoned[] = {
        (const char *[]){"admin", "revoke-team", "beta", "--db", db, NULL},
        (const char *[]){"admin", "hide-run", "1", "--db", db, NULL},
        (const char *[]){"admin", "restore-run", "1", "--db", db, "--reason", "", NULL},
        (const char *[]){"admin", "withdraw-run", "1", "--db", db, NULL},
        (const char *[]){"admin", "teams", "--db", db, "--reason", "x", NULL},
        (const char *[]){"admin", "hide-run", "x", "--db", db, "--reason", "x", NULL},
        (const char *[]){"admin", "hide-run", "--db", db, "--reason", "x", NULL},
        (const char *[]){"admin", "audit", "now", "--db", db, NULL}};
    const char *says[] = {
        "admin revoke-team takes --reason TEXT: say why (the audit log keeps it)",
        "admin hide-run takes --reason TEXT",
        "admin restore-run takes --reason TEXT",
        "admin withdraw-run takes --reason TEXT",
        ("--reason goes with admin revoke-team, admin hide-run, admin restore-run, admin "
         "withdraw-run or admin void-run, not admin teams"),
        "admin hide-run: 'x' is not a run ID",
        "admin hide-run takes one run ID",
        "admin audit takes no argument"};
    for (size_t i = 0; i < sizeof says / sizeof *says; i++) {
        r = serve(unreasoned[i], 2, says[i]);
        test_run_free(&r);
    }
    /* the teams' making is in the audit log, their tokens not */
    r = serve((const char *[]){"admin", "audit", "--db", db, NULL}, 0, NULL);
    cr_expect_eq(lines_of(r.out), 2, "%s", r.out);
    assert_has(r.out, "Z  add-team      alpha            a team made: its token shown once");
    assert_has(r.out, "Z  add-team      beta ");
    cr_expect_null(strstr(r.out, alpha), "a token in the audit log");
    cr_expect_null(strstr(r.out, beta), "a token in the audit log");
    test_run_free(&r);

    /* each act once; again, or where it does not apply, refused naming what */
    const struct {
        const char *verb, *target, *reason, *says;
        int status;
    } acts[] = {
        {"revoke-team", "beta", "token posted in a public repository", "team beta revoked in ", 0},
        {"revoke-team", "beta", "again", "no team named 'beta' holds a token", 1},
        {"revoke-team", "gamma", "none such", "no team named 'gamma' holds a token", 1},
        {"restore-run", "1", "not hidden", "no run 1 that is hidden", 1},
        {"hide-run", "1", "under review: its power trace is flat", "run 1 of ", 0},
        {"hide-run", "1", "again", "no run 1 that is shown (neither hidden nor withdrawn)", 1},
        {"restore-run", "1", "trace checked against the meter", "run 1 of ", 0},
        {"withdraw-run", "1", "trained on the test set", "run 1 of ", 0},
        {"withdraw-run", "1", "again", "no run 1 that is not withdrawn already", 1},
        {"hide-run", "1", "withdrawn", "no run 1 that is shown", 1},
        {"restore-run", "1", "withdrawn", "no run 1 that is hidden", 1},
        {"withdraw-run", "9", "no such run", "no run 9 ", 1},
    };
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) {
        r = serve((const char *[]){"admin", acts[i].verb, acts[i].target, "--db", db, "--reason",
                                   acts[i].reason, NULL},
                  acts[i].status, acts[i].status ? acts[i].says : NULL);
        if (acts[i].status == 0)
            assert_has(r.out, acts[i].says);
        test_run_free(&r);
    }
    r = serve((const char *[]){"admin", "withdraw-run", "1", "--db", db, NULL}, 2, "--reason");
    test_run_free(&r);
    char *why = NULL;
    cr_expect_eq(
        test_sql_text(db, "SELECT withdrawn || ': ' || withdrawn_why FROM team_runs", &why), 0);
    cr_expect_str_eq(why ? why : "", "withdrawn: trained on the test set");
    free(why);

    /* the revoked team's token is refused at once; the other team's is not */
    cr_expect_eq(whoami(url, beta, err, sizeof err), EEB_EINVAL);
    assert_has(err, "unknown token");
    cr_expect_eq(whoami(url, alpha, err, sizeof err), EEB_OK, "%s", err);
    eeb_server_stop(s);

    r = serve((const char *[]){"admin", "teams", "--db", db, NULL}, 0, NULL);
    cr_expect(line_of(r.out, "alpha ", line, sizeof line) && strstr(line, "  active"), "%s", r.out);
    cr_expect(line_of(r.out, "beta ", line, sizeof line) && strstr(line, "  revoked 20"), "%s",
              r.out);
    test_run_free(&r);
    r = serve((const char *[]){"admin", "audit", "--db", db, NULL}, 0, NULL);
    const char *logged[][3] = {{"add-team", "alpha",
                                "a team made: its token shown once, kept as "
                                "its hash"},
                               {"add-team", "beta",
                                "a team made: its token shown once, kept as "
                                "its hash"},
                               {"revoke-team", "beta", "token posted in a public repository"},
                               {"hide-run", "1", "under review: its power trace is flat"},
                               {"restore-run", "1", "trace checked against the meter"},
                               {"withdraw-run", "1", "trained on the test set"}};
    cr_expect_eq(lines_of(r.out), 6, "the acts done and no other: %s", r.out);
    const char *at = r.out;
    for (size_t i = 0; i < sizeof logged / sizeof *logged && at; i++) {
        char want[160];
        snprintf(want, sizeof want, "Z  %-13s %-16s %s\n", logged[i][0], logged[i][1],
                 logged[i][2]);
        const char *found = strstr(at, want);
        cr_expect(found, "'%s' not after the acts before it: %s", want, r.out);
        at = found;
    }
    test_run_free(&r);

    /* a database that is not there is not made */
    const char *verbs[][3] = {
        {"teams", NULL}, {"audit", NULL}, {"revoke-team", "alpha"}, {"hide-run", "1"}};
    for (size_t i = 0; i < sizeof verbs / sizeof *verbs; i++) {
        r = serve(verbs[i][1] ? (const char *[]){"admin", verbs[i][0], verbs[i][1], "--db", missing,
                                                 "--reason", "x", NULL}
                              : (const char *[]){"admin", verbs[i][0], "--db", missing, NULL},
                  1, missing);
        test_run_free(&r);
    }
    cr_expect_neq(access(missing, F_OK), 0, "an act made a database");
}

/* What file holds once it holds want, waiting up to 10 s (free it). */
static char *wait_for(const char *file, const char *want)
{
    for (int i = 0; i < 1000; i++) {
        char *text = test_read_file(file, NULL);
        if (text && strstr(text, want))
            return text;
        free(text);
        usleep(10000);
    }
    cr_assert_fail("%s never said '%s'", file, want);
    return NULL;
}

/* eeb serve as its own process says what it holds, per task, and the
 * round open; then logs what it does, never a token. */
Test(round_cli, the_server_says_what_it_holds_and_logs_what_it_does, .timeout = 60)
{
    char dir[256], sdb[300], out[300], log[300], test[400], url[64], token[EEB_TOKEN_HEX];
    char err[512], sha[EEB_SHA256_HEX], want[1024];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(out, sizeof out, "%s/serve.out", dir);
    snprintf(log, sizeof log, "%s/serve.err", dir);
    struct test_cls_run in = test_cls_run_inputs(dir, 16, 8);
    snprintf(test, sizeof test, "cls=%s", in.test);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct test_run r = serve((const char *[]){"admin", "open-round", "r1", "--db", sdb, "--closes",
                                               "2099-01-01T00:00:00Z", NULL},
                              0, NULL);
    test_run_free(&r);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (!freopen(out, "w", stdout) || !freopen(log, "w", stderr))
            _exit(127);
        execl(EEB_BIN, EEB_BIN, "serve", "--db", sdb, "--port", "0", "--test", test, "--practice",
              test, (char *)NULL);
        _exit(127);
    }
    char *said = wait_for(out, "eeb serve: round ");
    int port = 0;
    cr_expect_eq(sscanf(said, "eeb serve: listening on http://127.0.0.1:%d/", &port), 1, "%s",
                 said);
    cr_assert_eq(eeb_sha256_file(in.test, sha, err, sizeof err), EEB_OK, "%s", err);
    snprintf(want, sizeof want,
             "\neeb serve: cls: test set %s (8 items, sha256 %.8s...), practice set %s (8 items, "
             "sha256 %.8s...)\n",
             in.test, sha, in.test, sha);
    assert_has(said, want);
    assert_has(said, "\neeb serve: round r1 open until 2099-01-01T00:00:00Z: 5 runs an entry "
                     "(median), a cap of 20 runs a task\n");
    assert_has(said, "\neeb serve: a team a UTC day: 100 registrations, 10 scored, 20000000 "
                     "samples (--quota); predictions within 900 s of the test inputs\n");
    cr_expect_null(strstr(said, "det:"), "a task it holds nothing of: %s", said);
    free(said);

    /* a run registered, and one refused: each a line of the log */
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    struct eeb_client cl;
    cr_assert_eq(eeb_client_init(&cl, url, token, err, sizeof err), EEB_OK, "%s", err);
    cl.tries = 1;
    json_t *reply = NULL, *body = json_loads("{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": "
                                             "0.2, \"bram\": 0.4, \"dsp\": 0.2}, \"provenance\": "
                                             "\"declared\", \"device\": \"zcu104\", "
                                             "\"backend\": \"xrt\"}",
                                             0, NULL);
    cr_assert_eq(eeb_client_call(&cl, "POST", "/api/v1/runs", body, &reply, err, sizeof err),
                 EEB_OK, "%s", err);
    json_decref(reply), json_decref(body);
    eeb_client_free(&cl);
    char *logged = wait_for(log, " eeb serve: run 1 registered: team alpha, cls, declared, a "
                                 "rehearsal on the practice set\n");
    cr_expect_null(strstr(logged, token), "the log holds the token: %s", logged);
    free(logged);
    cr_assert_eq(kill(pid, SIGTERM), 0);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    said = test_read_file(out, NULL);
    cr_expect_null(strstr(said, token), "stdout holds the token: %s", said);
    assert_has(said, "eeb serve: stopped (SIGTERM)\n");
    free(said);
}

/* A server's quotas and deadline: counts by name, refused otherwise,
 * with no database made. */
Test(round_cli, serve_quotas_and_deadline_are_checked)
{
    char db[300];
    snprintf(db, sizeof db, "%s/s.db", test_tmpdir());
    const char *bad[][3] = {
        {"--quota", "registrations=18446744073709551617", "expected a count, or -1 for none"},
        {"--quota", "scored=-2", "--quota scored=-2: expected a count, or -1 for none"},
        {"--quota", "bogus=3", "expected registrations=N, scored=N or samples=N"},
        {"--quota", "scored", "expected registrations=N, scored=N or samples=N"},
        {"--predict-within", "0", "--predict-within must be a positive number"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct test_run r = test_eeb(
            (const char *[]){"serve", "--db", db, "--port", "0", bad[i][0], bad[i][1], NULL});
        cr_expect_eq(r.status, 2, "%s %s: %s%s", bad[i][0], bad[i][1], r.out, r.err);
        assert_has(r.err, bad[i][2]);
        test_run_free(&r);
    }
    cr_expect_neq(access(db, F_OK), 0, "a refused start made a database");
}

/* ---- the team ---- */

Test(round_cli, entry_division_and_tier_go_with_server)
{
    const char *given[][2] = {{"--entry", "e1"}, {"--division", "open"}, {"--tier", "5"}};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++) {
        struct test_run r = test_eeb(
            (const char *[]){"run", "--task", "cls", "--finetune", "ft.eebd", "--test", "t.eebd",
                             "--model", "m.eebm", given[i][0], given[i][1], "-q", NULL});
        cr_expect_eq(r.status, 2, "%s: %s%s", given[i][0], r.out, r.err);
        char want[128];
        snprintf(want, sizeof want, "%s goes with --server", given[i][0]);
        assert_has(r.err, want);
        test_run_free(&r);
    }
    const char *bad[][3] = {
        {"--division", "sideways", "--division sideways: expected closed or open"},
        {"--entry", "a b", "--entry a b: 1 to 64 of A-Z a-z 0-9 _ . -"},
        {"--tier", "-1", "--tier: -1 is outside"},
        {"--tier", "x", "--tier: 'x' is not a number"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct test_run r = test_eeb((const char *[]){
            "run", "--task", "cls", "--finetune", "ft.eebd", "--model", "m.eebm", "--server",
            "http://127.0.0.1:1", "--token", "t", bad[i][0], bad[i][1], "-q", NULL});
        cr_expect_eq(r.status, 2, "%s %s: %s%s", bad[i][0], bad[i][1], r.out, r.err);
        assert_has(r.err, bad[i][2]);
        test_run_free(&r);
    }
}

/* A run's configuration as an official run records it, with its entry's part. */
static char *official_config(const char *entry, const char *division, double tier_w)
{
    json_t *o = json_object();
    eeb_config_put_task(o, "cls");
    eeb_config_put_backend(o, "emu", "modeled");
    eeb_config_put_official(o, "http://127.0.0.1:8080", 0);
    eeb_config_put_entry(o, entry, division, tier_w);
    char *text = json_dumps(o, 0);
    json_decref(o);
    return text;
}

Test(round_cli, the_entry_is_recorded_and_declared)
{
    char *config = official_config("fast", "open", 15);
    struct eeb_config_record rec;
    cr_assert_eq(eeb_config_record_read(config, &rec), EEB_OK);
    cr_expect_str_eq(rec.entry, "fast");
    cr_expect_str_eq(rec.division, "open");
    cr_expect_eq(rec.tier_w, 15);
    json_t *d = eeb_client_declaration(config, 1);
    cr_assert(d);
    cr_expect_str_eq(json_string_value(json_object_get(d, "entry")), "fast");
    cr_expect_str_eq(json_string_value(json_object_get(d, "division")), "open");
    cr_expect_eq(json_number_value(json_object_get(d, "p_max_w")), 15);
    json_decref(d);
    free(config);

    /* none named: the server's defaults, and the budgets' P_max is not a tier */
    config = official_config(NULL, NULL, NAN);
    cr_assert_eq(eeb_config_record_read(config, &rec), EEB_OK);
    cr_expect_str_empty(rec.entry);
    cr_expect(isnan(rec.tier_w));
    d = eeb_client_declaration(config, 1);
    cr_expect_null(json_object_get(d, "entry"));
    cr_expect_null(json_object_get(d, "division"));
    cr_expect_null(json_object_get(d, "p_max_w"));
    json_decref(d);
    free(config);
}

Test(round_cli, the_round_line_of_a_registration)
{
    char line[256];
    json_t *reply = json_loads(
        "{\"run_id\": 7, \"round\": {\"name\": \"r1\", \"entry\": \"main\", \"division\": "
        "\"closed\", \"run\": 3, \"of\": 5, \"aggregate\": \"median\"}}",
        0, NULL);
    cr_assert(reply);
    cr_expect_eq(eeb_client_round_line(reply, line, sizeof line), 1);
    cr_expect_str_eq(line, "run 3 of 5 of entry main (closed division) in round r1");
    json_decref(reply);
    reply = json_loads("{\"run_id\": 7}", 0, NULL);
    cr_expect_eq(eeb_client_round_line(reply, line, sizeof line), 0);
    json_decref(reply);
}

/* The registration is refused, before any training, for a tier the round
 * has not, and for the closed division's base model: what the run asked
 * for reached the server. */
Test(round_cli, a_tier_the_round_has_not_is_refused_at_registration, .timeout = 60)
{
    char dir[256], sdb[300], url[64], tiers[] = "cls=5,10", token[EEB_TOKEN_HEX], err[512];
    char other[300], closed[400];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    struct test_cls_run in = test_cls_run_inputs(dir, 16, 8);
    snprintf(closed, sizeof closed, "cls=%s", model_file(dir, EEB_TASK_CLS, other, sizeof other));
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct test_run r = serve((const char *[]){"admin", "open-round", "r1", "--db", sdb, "--tiers",
                                               tiers, "--closed-model", closed, NULL},
                              0, NULL);
    test_run_free(&r);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    cfg.test[EEB_TASK_CLS] = in.test, cfg.model[EEB_TASK_CLS] = other; /* the round's */
    cfg.finetune[EEB_TASK_CLS] = in.ft;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eeb_server_port(s));

    /* the open division starts from any model, but a device modeled on one
     * the server does not hold would be timed by the team's word alone */
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", in.ft, "--model", in.model,
                                  "--db", in.db, "--server", url, "--token", token, "--tier", "10",
                                  "--division", "open", "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    assert_has(r.err, "a run on the modeled clock is timed by the analytical model on this "
                      "server's cls base model");
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", in.ft, "--model", in.model,
                                  "--db", in.db, "--server", url, "--token", token, "--tier", "7",
                                  "--division", "open", "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    assert_has(r.err, "round r1's cls P_max tiers are 5 W 10 W");
    assert_has(r.err, "p_max_w");
    test_run_free(&r);
    /* the closed division (the default) starts from the round's base model */
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", in.ft, "--model", in.model,
                                  "--db", in.db, "--server", url, "--token", token, "--tier", "10",
                                  "--entry", "e2", "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    assert_has(r.err, "round r1's closed division fine-tunes the cls base model sha256");
    test_run_free(&r);
    cr_expect_neq(access(in.db, F_OK), 0, "a refused run was recorded");
    eeb_server_stop(s);
}

/* A run of a round takes the seed the server hands it at registration:
 * its record, written after, says that seed, the one the server keeps in
 * its copy, and the round line says it too.  (A small run: the record is
 * made once the run is registered, and the run goes on to be judged.) */
Test(round_cli, a_run_of_a_round_takes_the_seed_it_is_handed, .timeout = 60)
{
    char dir[256], sdb[300], url[64], token[EEB_TOKEN_HEX], err[512], want[96];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    struct test_cls_run in = test_cls_run_inputs(dir, 16, 8);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    struct test_run r = serve(
        (const char *[]){"admin", "open-round", "r1", "--db", sdb, "--runs", "3", NULL}, 0, NULL);
    test_run_free(&r);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    /* the base model too: in a round the server models the run's device */
    cfg.test[EEB_TASK_CLS] = in.test, cfg.model[EEB_TASK_CLS] = in.model;
    cfg.finetune[EEB_TASK_CLS] = in.ft; /* and the fine-tune set, to count its steps on */
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eeb_server_port(s));
    r = test_eeb((const char *[]){"run",      "--task",  "cls",     "--finetune", in.ft,
                                  "--model",  in.model,  "--db",    in.db,        "--server",
                                  url,        "--token", token,     "--seed",     "7",
                                  "--epochs", "1",       "--entry", "e1",         NULL});
    eeb_server_stop(s);
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    long long handed = test_sql_int(sdb, "SELECT config ->> '$.server.round.seed' FROM runs");
    cr_expect(handed >= 1 && handed <= 2147483648LL, "seed %lld", handed);
    cr_expect_eq(test_sql_int(in.db, "SELECT CAST(config ->> '$.training.seed' AS INTEGER) FROM "
                                     "runs"),
                 handed, "the run's record says another seed than the one it was handed");
    snprintf(want, sizeof want,
             "eeb: run 1 of 3 of entry e1 (closed division) in round r1, seed "
             "%lld\n",
             handed);
    assert_has(r.err, want);
    test_run_free(&r);
}
