/*
 * test_measured_round.c - an organizer's measured round, end to end, as
 * docs/serve.md walks through it, every part a real process talking over
 * 127.0.0.1: `eeb serve` holding the round, a PTDaemon emulator (`eeb power
 * emulate ptd`) whose load follows team alpha's fine-tune, read for the
 * server by `eeb power agent` (director mode); alpha's runs, ranged on
 * their own workload and not; team beta metering itself; team gamma
 * modeled; a run killed; a team revoked mid-run; the server killed and
 * started again mid-run; the round closed.
 */
#include "server/eeb_server.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The round's world: its files, its processes. */
struct world {
    char dir[256], sdb[300], key[300], load[300], nm[300], trace[300], url[64], meter[96];
    struct test_cls_run in;
    char token[4][EEB_TOKEN_HEX]; /* alpha, beta, gamma, delta */
    int port;
    pid_t server, emulator, agent;
};

enum { ALPHA, BETA, GAMMA, DELTA };
static const char *const teams[] = {"alpha", "beta", "gamma", "delta"};

/* argv run with its output into out (a file of dir's); its pid.  It dies
 * with the test. */
static pid_t spawn(const char *out, const char *const *argv)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 1), dup2(fd, 2);
        execv(EEB_BIN, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Whether path holds text, waited for at most seconds. */
static int appears(const char *path, const char *text, double seconds)
{
    for (int i = 0; i < seconds * 100; i++, usleep(10000)) {
        char *got = test_read_file(path, NULL);
        int found = got && strstr(got, text);
        free(got);
        if (found)
            return 1;
    }
    return 0;
}

/* The SQL count sql of the server's database reaches want within seconds. */
static int reaches(const struct world *w, const char *sql, long long want, double seconds)
{
    for (int i = 0; i < seconds * 20; i++, usleep(50000))
        if (test_sql_int(w->sdb, sql) == want)
            return 1;
    return 0;
}

static void load(const struct world *w, const char *watts)
{
    test_write_file(w->load, watts, strlen(watts));
}

/* `eeb serve` on w's port, answering before this returns. */
static void serve(struct world *w)
{
    char out[300], port[16], test[320], ft[320], model[320], station[320];
    snprintf(out, sizeof out, "%s/serve.log", w->dir);
    snprintf(port, sizeof port, "%d", w->port);
    snprintf(test, sizeof test, "cls=%s", w->in.test);
    snprintf(ft, sizeof ft, "cls=%s", w->in.ft);
    snprintf(model, sizeof model, "cls=%s", w->in.model);
    snprintf(station, sizeof station, "alpha=agent:%s", w->key);
    w->server =
        spawn(out, (const char *[]){EEB_BIN, "serve", "--db", w->sdb, "--port", port, "--test",
                                    test, "--practice", test, "--finetune", ft, "--model", model,
                                    "--station", station, "--stream-allowance", "4", NULL});
    for (int i = 0; i < 500; i++, usleep(10000)) {
        CURL *c = curl_easy_init();
        char url[96];
        snprintf(url, sizeof url, "%s/healthz", w->url);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        CURLcode rc = curl_easy_perform(c);
        curl_easy_cleanup(c);
        if (rc == CURLE_OK)
            return;
    }
    cr_assert_fail("eeb serve did not start on %s", w->url);
}

static void kill_9(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* The organizer's world: teams, a station key, a round, the emulator
 * (idle at 4 W), the server, the station's agent. */
static void world_make(struct world *w)
{
    char err[512], out[300];
    snprintf(w->dir, sizeof w->dir, "%s", test_tmpdir());
    w->in = test_cls_run_inputs(w->dir, 2048, 40); /* an epoch of some ms */
    snprintf(w->sdb, sizeof w->sdb, "%s/server.db", w->dir);
    snprintf(w->key, sizeof w->key, "%s/alpha.key", w->dir);
    snprintf(w->load, sizeof w->load, "%s/load", w->dir);
    snprintf(w->nm, sizeof w->nm, "%s/nm.model", w->dir);
    test_write_file(w->nm, "nearest-mean 1\n", 15);
    for (int t = 0; t < 4; t++)
        cr_assert_eq(eeb_server_add_team(w->sdb, teams[t], w->token[t], err, sizeof err), EEB_OK,
                     "%s", err);
    struct test_run r = test_eeb(
        (const char *[]){"serve", "admin", "station-key", "-o", w->key, "--db", w->sdb, NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"serve", "admin", "open-round", "r1", "--db", w->sdb, "--runs",
                                  "1", "--cap", "6", "--tmax", "cls=120", "--tiers", "cls=20",
                                  NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    /* beta's own meter: a board's rail at 5 W, its trace replayed */
    snprintf(w->trace, sizeof w->trace, "%s/beta.csv", w->dir);
    FILE *f = fopen(w->trace, "w");
    cr_assert(f);
    fputs("t_s,watts\n", f);
    for (int i = 0; i <= 6000; i++)
        fprintf(f, "%.1f,5\n", i * 0.1);
    fclose(f);
    /* the station's meter: a PTDaemon whose load the test moves */
    load(w, "4\n");
    char command[320];
    snprintf(out, sizeof out, "%s/emulator.log", w->dir);
    snprintf(command, sizeof command, "cat %s", w->load);
    w->emulator =
        spawn(out, (const char *[]){EEB_BIN, "power", "emulate", "ptd", "--port", "0", "--interval",
                                    "100", "--load-command", command, NULL});
    cr_assert(appears(out, "listening on 127.0.0.1:", 10), "the emulator did not start");
    char *said = test_read_file(out, NULL), *at = strstr(said, "127.0.0.1:");
    snprintf(w->meter, sizeof w->meter, "ptd://127.0.0.1:%d?interval=100", atoi(at + 10));
    free(said);
    /* the server, on a port of its own */
    struct eeb_server_config cfg;
    struct eeb_server *probe;
    eeb_server_config_default(&cfg);
    cfg.db = w->sdb, cfg.port = 0;
    cr_assert_eq(eeb_server_start(&cfg, &probe, err, sizeof err), EEB_OK, "%s", err);
    w->port = eeb_server_port(probe);
    eeb_server_stop(probe);
    snprintf(w->url, sizeof w->url, "http://127.0.0.1:%d", w->port);
    serve(w);
    char adb[300];
    snprintf(out, sizeof out, "%s/agent.log", w->dir);
    snprintf(adb, sizeof adb, "%s/agent.db", w->dir);
    w->agent = spawn(out, (const char *[]){EEB_BIN, "power", "agent", "--source", w->meter, "--db",
                                           adb, "--server", w->url, "--key", w->key, NULL});
    cr_assert(reaches(w, "SELECT count(*) FROM audit WHERE action = 'station-key'", 1, 1));
}

/* Team t's official run of entry, in the background, its output into
 * out; more: its own options, NULL-ended. */
static pid_t official(const struct world *w, int t, const char *db, const char *entry,
                      const char *out, const char *const *more)
{
    const char *argv[64] = {EEB_BIN,   "run", "--task",     "cls",  "--finetune", w->in.ft,
                            "--db",    db,    "--server",   w->url, "--token",    w->token[t],
                            "--entry", entry, "--division", "open", "-q"};
    size_t n = 16;
    for (size_t i = 0; more[i] && n < 62; i++)
        argv[n++] = more[i];
    argv[n] = NULL;
    return spawn(out, argv);
}

/* A run's exit status, waited for. */
static int finished(pid_t pid)
{
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Alpha's run: the example SUT, its own log at 9 W (sim:), the server's
 * meter through the agent; the emulator's load at 9 W from its
 * registration (the ranging pass trains too) to its complete. */
static pid_t alpha_run(struct world *w, const char *db, const char *entry, const char *ranging,
                       const char *out)
{
    pid_t pid = official(w, ALPHA, db, entry, out,
                         (const char *[]){"--model", w->nm, "--backend", EEB_SUT_EXAMPLE, "--util",
                                          EEB_TEST_DATA "/util/zcu102_placed.rpt", "--power",
                                          "sim:watts=9", "--rate", "20", "--epochs", "3000",
                                          "--ranging-s", ranging, NULL});
    cr_assert(reaches(w, "SELECT count(*) FROM team_runs WHERE state = 'registered'", 1, 30),
              "alpha's run did not register");
    load(w, "9\n");
    return pid;
}

/* Team t's run that goes on fine-tuning (on its own meter, power) until
 * something stops it, begun on the server when this returns. */
static pid_t fine_tuning(const struct world *w, int t, const char *db, const char *entry,
                         const char *power)
{
    char out[300];
    snprintf(out, sizeof out, "%s/%s-%s.log", w->dir, teams[t], entry);
    pid_t pid = official(w, t, db, entry, out,
                         (const char *[]){"--model", w->nm, "--backend", EEB_SUT_EXAMPLE, "--util",
                                          EEB_TEST_DATA "/util/zcu102_placed.rpt", "--power", power,
                                          "--epochs", "1000000", NULL});
    cr_assert(reaches(w,
                      "SELECT count(*) FROM team_runs WHERE begun_utc_ns IS NOT NULL AND "
                      "state = 'registered'",
                      1, 60),
              "team %s's run never began", teams[t]);
    return pid;
}

Test(measured_round, an_organizers_round_from_start_to_close, .timeout = 600)
{
    struct world w = {0};
    world_make(&w);
    char db[4][300], out[300], pkg[300];
    for (int t = 0; t < 4; t++)
        snprintf(db[t], sizeof db[t], "%s/%s.db", w.dir, teams[t]);

    /* alpha's first run, ranged on its workload; the server killed and
     * started again in the middle of its fine-tune */
    snprintf(out, sizeof out, "%s/alpha1.log", w.dir);
    pid_t run = alpha_run(&w, db[ALPHA], "e1", "1", out);
    cr_assert(reaches(&w, "SELECT count(*) FROM team_runs WHERE begun_utc_ns IS NOT NULL", 1, 60),
              "alpha's run never began");
    usleep(700000);
    kill_9(w.server);
    usleep(1500000);
    serve(&w);
    int status = finished(run);
    load(&w, "4\n");
    char *text = test_read_file(out, NULL);
    cr_expect_eq(status, 0, "alpha's first run: %s", text);
    free(text);
    /* the restart voided nothing the agent could supply */
    cr_expect_eq(test_sql_int(w.sdb, "SELECT count(*) FROM audit WHERE action = 'restart' AND "
                                     "reason LIKE '%taken up%'"),
                 1);
    cr_expect_eq(test_sql_int(w.sdb, "SELECT count(*) FROM team_runs WHERE verdict = 'void'"), 0);
    cr_expect_eq(test_sql_int(w.sdb, "SELECT count(*) FROM team_runs WHERE verdict = 'pass' AND "
                                     "s_uncertainty > 0"),
                 1);
    /* ranging preceded the testing pass, on the server's meter log */
    cr_expect_eq(test_sql_int(w.sdb, "SELECT (SELECT min(t_mono_ns) FROM events WHERE kind = "
                                     "'ranging_end') < (SELECT min(t_mono_ns) FROM events e JOIN "
                                     "runs r ON r.id = e.run_id WHERE r.task = 'none' AND e.kind = "
                                     "'finetune_begin')"),
                 1);
    /* the team's database gives the server's S, and so does its package */
    struct test_run r = test_eeb((const char *[]){"check", db[ALPHA], "--run", "1", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    snprintf(pkg, sizeof pkg, "%s/alpha1.tar", w.dir);
    r = test_eeb((const char *[]){"pack", db[ALPHA], "--run", "1", "--system",
                                  EEB_TEST_DATA "/package/system.json", "-o", pkg, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", "--package", pkg, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "pass  server record"), "%s", r.out);
    test_run_free(&r);

    /* alpha's second run, not ranged, at a load past the first's ranges:
     * every reading over range, the run invalid saying so */
    snprintf(out, sizeof out, "%s/alpha2.log", w.dir);
    run = official(&w, ALPHA, db[ALPHA], "e2", out,
                   (const char *[]){"--model", w.nm, "--backend", EEB_SUT_EXAMPLE, "--util",
                                    EEB_TEST_DATA "/util/zcu102_placed.rpt", "--power",
                                    "sim:watts=14", "--rate", "20", "--epochs", "150",
                                    "--ranging-s", "0", NULL});
    cr_assert(reaches(&w, "SELECT count(*) FROM team_runs WHERE state = 'registered'", 1, 30));
    load(&w, "14\n");
    status = finished(run);
    load(&w, "4\n");
    cr_expect_eq(status, 4, "alpha's second run");
    cr_expect_eq(test_sql_int(w.sdb,
                              "SELECT count(*) FROM team_runs WHERE verdict = 'invalid' "
                              "AND why LIKE '%has an uncertainty of 3%the rules allow 1 %%'"),
                 1);
    r = test_eeb((const char *[]){"check", db[ALPHA], NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    test_run_free(&r);

    /* alpha's third run, its station's agent stopped mid fine-tune: the
     * server cannot measure it, its own fault: void, off the entry */
    snprintf(out, sizeof out, "%s/alpha3.log", w.dir);
    run =
        official(&w, ALPHA, db[ALPHA], "e3", out,
                 (const char *[]){"--model", w.nm, "--backend", EEB_SUT_EXAMPLE, "--util",
                                  EEB_TEST_DATA "/util/zcu102_placed.rpt", "--power", "sim:watts=9",
                                  "--rate", "20", "--epochs", "1000000", "--ranging-s", "0", NULL});
    cr_assert(reaches(&w,
                      "SELECT count(*) FROM team_runs WHERE begun_utc_ns IS NOT NULL AND "
                      "state = 'registered'",
                      1, 60));
    kill_9(w.agent);
    cr_expect(reaches(&w,
                      "SELECT count(*) FROM team_runs WHERE verdict = 'void' AND entry_id IS "
                      "NULL AND why LIKE 'the server''s meter read nothing%'",
                      1, 30),
              "the run its meter stopped measuring was not void");
    cr_expect_neq(finished(run), 0, "alpha's third run went on");

    /* beta meters itself (declared); gamma's figures are the server's
     * model's */
    snprintf(out, sizeof out, "%s/beta.log", w.dir);
    char power[320];
    snprintf(power, sizeof power, "replay:%s", w.trace);
    run = official(&w, BETA, db[BETA], "e1", out,
                   (const char *[]){"--model", w.nm, "--backend", EEB_SUT_EXAMPLE, "--util",
                                    EEB_TEST_DATA "/util/zcu102_placed.rpt", "--power", power,
                                    "--rate", "20", "--epochs", "600", NULL});
    cr_expect_eq(finished(run), 0, "beta's run");
    snprintf(out, sizeof out, "%s/gamma.log", w.dir);
    run = official(
        &w, GAMMA, db[GAMMA], "e1", out,
        (const char *[]){"--model", w.in.model, "--backend", "emu", "--epochs", "1", NULL});
    text = NULL;
    status = finished(run);
    text = test_read_file(out, NULL);
    cr_expect_eq(status, 0, "gamma's run: %s", text);
    free(text);
    cr_expect_eq(test_sql_int(w.sdb, "SELECT count(*) FROM team_runs WHERE verdict = 'pass'"), 3);

    /* beta's second run killed mid fine-tune: the server ends it on its
     * own; delta revoked while its run goes on */
    run = fine_tuning(&w, BETA, db[BETA], "e2", power);
    kill_9(run);
    cr_expect(reaches(&w,
                      "SELECT count(*) FROM team_runs WHERE verdict = 'aborted' AND why LIKE "
                      "'its stream stopped%'",
                      1, 30),
              "the killed run was not ended");
    run = fine_tuning(&w, DELTA, db[DELTA], "e1", power);
    r = test_eeb((const char *[]){"serve", "admin", "revoke-team", "delta", "--reason",
                                  "shared its token", "--db", w.sdb, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_expect(reaches(&w,
                      "SELECT count(*) FROM team_runs WHERE verdict = 'aborted' AND why = "
                      "'its team was revoked'",
                      1, 30),
              "the revoked team's run was not ended");
    status = finished(run); /* its token refused from then on */
    cr_expect_neq(status, 0);

    /* close-round: nothing is left running */
    r = test_eeb((const char *[]){"serve", "admin", "close-round", "r1", "--db", w.sdb, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_expect(reaches(
        &w, "SELECT count(*) FROM team_runs WHERE state IN ('registered', 'complete')", 0, 10));
    kill(w.server, SIGTERM), waitpid(w.server, NULL, 0);
    kill(w.emulator, SIGTERM), waitpid(w.emulator, NULL, 0);
}
