/*
 * test_power_cli.c - `eeb power` as a user runs it: log a source, summarize
 * and export the run; a budget that fails; a meter that fails; Ctrl-C and
 * kill -9 of the logger leaving every committed sample readable; a disk
 * that fills up mid-log.
 */
#include "power/eeb_power.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char db[256];

static void setup(void)
{
    snprintf(db, sizeof db, "%s/power.db", test_tmpdir());
}

TestSuite(power_cli, .init = setup);

static void log_ok(const char *source, const char *seconds)
{
    struct test_run r = test_eeb((const char *[]){"power", "log", "--source", source, "--db", db,
                                                  "--rate", "200", "--duration", seconds, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
}

static json_t *summary_json(const char *pmax, int want_status)
{
    return test_eeb_json(
        (const char *[]){"power", "summary", db, "--json", pmax ? "--pmax" : NULL, pmax, NULL},
        want_status);
}

/* The summary of a log whose validity is not what a test asks about: on a
 * loaded machine the sampler can miss a few deadlines and leave a gap,
 * which makes a short log invalid (exit 4) and is no fault of the logger. */
static json_t *summary_json_any_validity(void)
{
    struct test_run r = test_eeb((const char *[]){"power", "summary", db, "--json", NULL});
    cr_assert(r.status == 0 || r.status == 4, "exit %d: %s%s", r.status, r.out, r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert(o, "not JSON: %s", r.out);
    test_run_free(&r);
    return o;
}

Test(power_cli, log_summary_and_export)
{
    struct test_run r = test_eeb((const char *[]){"power", "list", NULL});
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "sim ") && strstr(r.out, "replay ") && strstr(r.out, "faulty "), "%s",
              r.out);
    test_run_free(&r);

    log_ok("sim:watts=4.5,volts=12", "1");
    json_t *o = summary_json("5", 0);
    cr_assert_str_eq(json_string_value(json_object_get(o, "window")), "log");
    cr_assert_str_eq(json_string_value(json_object_get(o, "provenance")), "modeled");
    cr_assert_float_eq(test_json_num(o, "mean_w"), 4.5, 1e-9);
    cr_assert_float_eq(test_json_num(o, "energy_j"), 4.5 * test_json_num(o, "seconds"), 1e-9);
    cr_assert_float_eq(test_json_num(o, "seconds"), 1.0, 0.05);
    cr_assert_float_eq(test_json_num(o, "achieved_hz"), 200, 20);
    cr_assert(json_is_true(json_object_get(o, "valid")));
    cr_assert(json_is_true(json_object_get(o, "p_max_pass")));
    double samples = test_json_num(o, "samples");
    json_decref(o);

    /* the same run against a lower budget fails, exit 3 */
    o = summary_json("4", 3);
    cr_assert(json_is_false(json_object_get(o, "p_max_pass")));
    cr_assert(strstr(json_string_value(json_object_get(o, "p_max_reason")), "4.5"), "%s",
              json_string_value(json_object_get(o, "p_max_reason")));
    json_decref(o);

    r = test_eeb((const char *[]){"power", "export", db, "--csv", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strncmp(r.out, "t_mono_ns,t_utc_ns,volts,amps,watts\n", 36) == 0, "%s", r.out);
    cr_assert(strstr(r.out, ",12,0.375,4.5\n"), "volts and amps exported");
    int lines = 0;
    for (const char *p = r.out; (p = strchr(p, '\n')); p++)
        lines++;
    cr_assert_geq(lines - 1, samples, "%d rows for %g samples in the window", lines - 1, samples);
    test_run_free(&r);

    r = test_eeb((const char *[]){"power", "export", db, "--json", "--run", "1", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    o = json_loads(r.out, 0, NULL);
    cr_assert(json_array_size(json_object_get(o, "samples")) == (size_t)lines - 1);
    json_decref(o);
    test_run_free(&r);
}

/* A meter that drops out for reads 40..79 (0.2 s at 200 Hz): the run is
 * logged all the same, and its summary is invalid, saying why. */
Test(power_cli, a_failing_meter_makes_the_measurement_invalid)
{
    log_ok("faulty:40+40:sim:watts=3", "1.5");
    struct test_run r = test_eeb((const char *[]){"power", "summary", db, NULL});
    cr_assert_eq(r.status, 4, "%s", r.err); /* invalid: it cannot judge a run */
    cr_assert(strstr(r.out, "40 failed reads"), "%s", r.out);
    cr_assert(strstr(r.out, "validity    INVALID: "), "%s", r.out);
    cr_assert(strstr(r.out, "has no samples") && strstr(r.out, "the meter failed 40 reads"), "%s",
              r.out);
    /* 40 reads at 200 Hz: a 0.2 s hole (a late wake-up may add a little) */
    const char *gaps = strstr(r.out, "gaps        ");
    int n = 0;
    double secs = 0;
    cr_assert(gaps && sscanf(gaps, "gaps %d, %lf s", &n, &secs) == 2, "%s", r.out);
    cr_assert(n >= 1 && secs >= 0.2 && secs < 0.3, "%d gaps, %g s", n, secs);
    test_run_free(&r);
}

static pid_t spawn_logger(void)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        freopen("/dev/null", "w", stdout);
        freopen("/dev/null", "w", stderr);
        execl(EEB_BIN, EEB_BIN, "power", "log", "--source", "sim:watts=2", "--db", db, "--rate",
              "500", (char *)NULL);
        _exit(127);
    }
    struct timespec ts = {0, 700000000};
    nanosleep(&ts, NULL);
    return pid;
}

Test(power_cli, ctrl_c_stops_the_logger_cleanly)
{
    pid_t pid = spawn_logger();
    kill(pid, SIGINT);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    json_t *o = summary_json_any_validity();
    cr_assert_str_eq(json_string_value(json_object_get(o, "window")), "log");
    cr_assert_float_eq(test_json_num(o, "energy_j"), 2 * test_json_num(o, "seconds"), 1e-9);
    cr_assert_gt(test_json_num(o, "samples"), 100);
    json_decref(o);
}

/* kill -9 mid-log: the run never ends, but every batch committed before
 * is there, readable, and the summary falls back to all its samples. */
Test(power_cli, kill_9_leaves_every_committed_sample_readable)
{
    pid_t pid = spawn_logger();
    kill(pid, SIGKILL);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFSIGNALED(st));
    json_t *o = summary_json_any_validity();
    cr_assert_str_eq(json_string_value(json_object_get(o, "window")), "all samples");
    cr_assert_gt(test_json_num(o, "samples"), 100, "batches committed every 250 ms survive");
    cr_assert_float_eq(test_json_num(o, "mean_w"), 2, 1e-9);
    json_decref(o);
    struct test_run r = test_eeb((const char *[]){"db", "info", db, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
}

/* The database on a 1 MiB disk that 10 kHz sampling fills in a few
 * seconds: the logger stops at once with SQLite's reason, and what was
 * committed before is intact and summarizes. */
Test(power_cli, a_full_disk_ends_the_log_with_a_clear_error)
{
    char dir[64];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    const char *why = test_private_tmpfs(dir, 1 << 20);
    if (why)
        cr_skip_test("a small disk: %s", why);
    snprintf(db, sizeof db, "%s/full.db", dir);
    int64_t t0 = eeb_mono_ns();
    struct test_run r =
        test_eeb((const char *[]){"power", "log", "--source", "sim:watts=3", "--db", db, "--rate",
                                  "10000", "--duration", "60", "-q", NULL});
    double took = (double)(eeb_mono_ns() - t0) / 1e9;
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "full"), "%s", r.err);
    cr_expect(strstr(r.err, "samples committed before it are in"), "%s", r.err);
    cr_expect_lt(took, 30, "the logger went on %.0f s after the disk filled", took);
    /* every sample the writer says it committed is in the file: how many
     * fit before the disk fills depends on the batches a loaded machine
     * makes, so the count is the logger's own, not a constant */
    const char *at = strstr(r.out, " written,");
    cr_assert(at, "%s", r.out);
    while (at > r.out && at[-1] != ' ')
        at--;
    long long written = atoll(at);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM pragma_integrity_check WHERE "
                                  "integrity_check = 'ok'"),
                 1);
    long long n = test_sql_int(db, "SELECT count(*) FROM samples");
    cr_expect_eq(n, written, "%lld samples in the file, %lld committed", n, written);
    cr_expect_gt(n, 100, "%lld samples committed", n);
    json_t *o = summary_json_any_validity();
    cr_expect_float_eq(test_json_num(o, "samples"), (double)n, 0.5);
    cr_expect_float_eq(test_json_num(o, "mean_w"), 3, 1e-9);
    json_decref(o);
}

Test(power_cli, bad_input_is_named)
{
    struct test_run r = test_eeb((const char *[]){"power", "log", "--source", "gpib:7", "--db", db,
                                                  "--duration", "1", NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "'gpib:7': unknown scheme"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb(
        (const char *[]){"power", "log", "--source", "sim:", "--db", db, "--rate", "50000", NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--rate: 50000 (1..10000 Hz)"), "%s", r.err);
    test_run_free(&r);
    log_ok("sim:", "0.3");
    r = test_eeb((const char *[]){"power", "summary", db, "--run", "7", NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "no run 7"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "export", db, NULL});
    cr_assert_eq(r.status, 2);
    test_run_free(&r);
}
