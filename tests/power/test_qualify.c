/*
 * test_qualify.c - `eeb power qualify`: a board's sensor judged against a
 * reference meter, MLPerf Training's way (Olympic means of five windows
 * per phase, idle and two loads, within 5 %).  The reference is a SPEC
 * PTDaemon log and the candidates are CSVs of eeb's own layout, replayed on
 * the simulated clock (milliseconds, not the 15 s they span); two sim:
 * sources run the live path, with load commands eeb starts and stops.  The
 * verdicts are kept in a run database and read back as the leaderboard
 * will.
 */
#include "common/eeb_common.h"
#include "power/eeb_qualify.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The traces: 10 readings a second for 15 s, the three phases back to
 * back, five windows of 1 s each.  Each window's mean is what the tables
 * below say: its two edge readings (shared with the windows beside it)
 * are EDGE_W and its nine inside ones L = (mean - EDGE_W / 10) / 0.9, so
 * the trapezoid over its ten intervals is (EDGE_W / 2 + 9 L + EDGE_W / 2)
 * / 10 = mean.  Every phase has noise and one outlier window (6.50 at
 * idle, 13.00 under load 1, a dip to 12.00 under load 2).
 *
 * The reference's Olympic means, by hand (sort, drop the lowest and the
 * highest, average the three left):
 *   idle    4.80 5.00 5.05 5.25 6.50 -> (5.00 + 5.05 + 5.25) / 3  =  5.10 W
 *           (the plain mean would be 5.32, the median 5.05)
 *   load 1  9.60 10.00 10.10 10.50 13.00 -> 30.60 / 3            = 10.20 W
 *           (mean 10.64, median 10.10)
 *   load 2  12.00 15.00 15.15 15.45 15.90 -> 45.60 / 3           = 15.20 W
 *           (mean 14.70, median 15.15)
 * A candidate reading each window f times the reference keeps the order,
 * so its Olympic mean is f times the reference's: 3 % high gives 5.253,
 * 10.506 and 15.656 W (+3.00 % each: within 5 %); 8 % high under load 2
 * only gives 16.416 W there (+8.00 %: not).
 */
#define EDGE_W  5.0
#define RATE    10 /* readings a second */
#define WINDOWS 5
#define PHASES  3

static const double ref_means[PHASES][WINDOWS] = {
    {5.00, 5.25, 4.80, 5.05, 6.50},
    {10.00, 10.50, 9.60, 10.10, 13.00},
    {15.00, 15.90, 12.00, 15.15, 15.45},
};
static const double olympic[PHASES] = {5.10, 10.20, 15.20};

static const double good[PHASES] = {1.03, 1.03, 1.03}; /* qualifies */
static const double bad[PHASES] = {1.03, 1.03, 1.08};  /* not under load 2 */

static char dir[256], ref_uri[300], good_uri[300], bad_uri[300], db[300];

/* Reading k (0.1 s apart) of a source reading each window's mean times
 * scale[phase]; past the 15 s, EDGE_W (a log runs on a little). */
static double reading(int k, const double scale[PHASES])
{
    int w = k / RATE;
    if (k % RATE == 0 || w >= PHASES * WINDOWS)
        return EDGE_W;
    double mean = ref_means[w / WINDOWS][w % WINDOWS] * scale[w / WINDOWS];
    return (mean - EDGE_W / 10) / 0.9;
}

#define READINGS (PHASES * WINDOWS * RATE + 6)

/* The reference as SPEC PTDaemon logs it (a WT310 at 230 V). */
static void write_ptd_log(const char *path)
{
    static const double one[PHASES] = {1, 1, 1};
    char *text = malloc(READINGS * 160 + 200), *w = text;
    w += sprintf(w, "Time,05-14-2021 09:59:59.900,NOTICE,Analyzer identity response of 32 "
                    "bytes: YOKOGAWA,WT310,C2PH13047V,F1.03\n");
    for (int k = 0; k < READINGS; k++) {
        double watts = reading(k, one);
        w += sprintf(w,
                     "Time,05-14-2021 10:00:%02d.%03d,Watts,%.6f,Volts,230.000000,Amps,%.6f,PF,"
                     "0.950000,Mark,qualify\n",
                     k / RATE, k % RATE * 100, watts, watts / 230 / 0.95);
    }
    test_write_file(path, text, strlen(text));
    free(text);
}

/* A board sensor's log in eeb's own CSV layout. */
static void write_csv(const char *path, const double scale[PHASES])
{
    char *text = malloc(READINGS * 40 + 40), *w = text;
    w += sprintf(w, "t_s,watts\n");
    for (int k = 0; k < READINGS; k++)
        w += sprintf(w, "%.1f,%.6f\n", k / 10.0, reading(k, scale));
    test_write_file(path, text, strlen(text));
    free(text);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    char path[280];
    snprintf(path, sizeof path, "%s/spl.txt", dir);
    write_ptd_log(path);
    snprintf(ref_uri, sizeof ref_uri, "replay:%s", path);
    snprintf(path, sizeof path, "%s/ina226_good.csv", dir);
    write_csv(path, good);
    snprintf(good_uri, sizeof good_uri, "replay:%s", path);
    snprintf(path, sizeof path, "%s/ina226_bad.csv", dir);
    write_csv(path, bad);
    snprintf(bad_uri, sizeof bad_uri, "replay:%s", path);
    snprintf(db, sizeof db, "%s/runs.db", dir);
}

TestSuite(qualify, .init = setup);

static struct eeb_qualify_config replay_config(const char *candidate)
{
    struct eeb_qualify_config c;
    eeb_power_qualify_default(&c);
    c.reference = ref_uri;
    c.candidate = candidate;
    c.window_s = 1;
    return c;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the C function ---- */

Test(qualify, replayed_traces_give_each_phase_its_olympic_means_without_waiting)
{
    struct eeb_qualify_config c = replay_config(good_uri);
    struct eeb_qualify_result r;
    char err[512] = "";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);
    double took = seconds_since(&t0);
    /* 15 s of traces on the simulated clock: no sleeping */
    cr_assert_lt(took, 2.0, "took %.3f s", took);
    cr_assert(r.simulated);
    cr_assert_eq(r.windows, WINDOWS);
    for (int p = 0; p < PHASES; p++) {
        const struct eeb_qualify_phase *ph = &r.phase[p];
        for (int w = 0; w < WINDOWS; w++) {
            cr_assert_float_eq(ph->ref_w[w], ref_means[p][w], 1e-5, "%s window %d: %.6f W",
                               ph->name, w + 1, ph->ref_w[w]);
            cr_assert_float_eq(ph->cand_w[w], ref_means[p][w] * good[p], 1e-5,
                               "%s window %d: %.6f W", ph->name, w + 1, ph->cand_w[w]);
        }
        cr_assert_float_eq(ph->ref_mean_w, olympic[p], 1e-5, "%s: %.6f W", ph->name,
                           ph->ref_mean_w);
        cr_assert_float_eq(ph->cand_mean_w, olympic[p] * good[p], 1e-5, "%s: %.6f W", ph->name,
                           ph->cand_mean_w);
        cr_assert_float_eq(ph->difference, 0.03, 1e-6, "%s: %.6f", ph->name, ph->difference);
        cr_assert(ph->within, "%s", ph->name);
    }
    cr_assert_str_eq(r.phase[0].name, "idle");
    cr_assert_str_eq(r.phase[2].name, "load 2");
    cr_assert(r.pass);
    cr_assert_str_eq(r.failed, "");

    c = replay_config(bad_uri);
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(r.phase[0].within && r.phase[1].within);
    cr_assert_not(r.phase[2].within);
    cr_assert_float_eq(r.phase[2].cand_mean_w, 16.416, 1e-5, "%.6f W", r.phase[2].cand_mean_w);
    cr_assert_float_eq(r.phase[2].difference, 0.08, 1e-6);
    cr_assert_not(r.pass);
    cr_assert_str_eq(r.failed, "load 2");

    /* a tolerance of 10 % passes the same candidate; 2 % fails every phase */
    c.tolerance = 0.10;
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(r.pass);
    c.tolerance = 0.02;
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_str_eq(r.failed, "idle, load 1, load 2");
}

Test(qualify, verdicts_are_kept_by_board_and_rail_and_the_latest_counts)
{
    char err[512] = "";
    int verdict = 7;
    int64_t when = 1;
    struct eeb_qualify_config c = replay_config(good_uri);
    struct eeb_qualify_result r;
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);

    /* a run database that never kept one: none, and it is not migrated */
    struct test_run log = test_eeb((const char *[]){"power", "log", "--source", "sim:watts=5",
                                                    "--db", db, "--duration", "0.2", NULL});
    cr_assert_eq(log.status, 0, "%s", log.err);
    test_run_free(&log);
    cr_assert_eq(eeb_power_qualified(db, "zcu104", "VCCINT", &verdict, &when, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(verdict, -1);
    cr_assert_eq(when, 0);
    cr_assert_eq(test_sql_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = "
                                  "'qualifications'"),
                 0);

    int64_t id = 0;
    cr_assert_eq(eeb_power_qualify_store(db, "zcu104", "VCCINT", &c, &r, &id, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(id, 1);
    cr_assert_eq(eeb_power_qualified(db, "zcu104", "VCCINT", &verdict, &when, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(verdict, 1);
    cr_assert_gt(when, 1600000000LL * 1000000000LL);
    /* another board's rail of the same name has none */
    cr_assert_eq(eeb_power_qualified(db, "kv260", "VCCINT", &verdict, NULL, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(verdict, -1);

    c = replay_config(bad_uri);
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_power_qualify_store(db, "zcu104", "VCCINT", &c, &r, &id, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(id, 2);
    cr_assert_eq(eeb_power_qualified(db, "zcu104", "VCCINT", &verdict, NULL, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(verdict, 0);
    /* the run tables are the run database's still, the set recorded */
    cr_assert_eq(test_sql_int(db, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(test_sql_int(db, "SELECT version FROM schema_sets WHERE name = "
                                  "'qualifications'"),
                 1);

    /* a set from a newer eeb is refused, not misread */
    test_sql_exec(db, "UPDATE schema_sets SET version = 9 WHERE name = 'qualifications'");
    cr_assert_eq(eeb_power_qualified(db, "zcu104", "VCCINT", &verdict, NULL, err, sizeof err),
                 EEB_EVERSION);
    assert_has(err, "newer eeb");
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.db", dir);
    cr_assert_neq(eeb_power_qualified(missing, "zcu104", "VCCINT", &verdict, NULL, err, sizeof err),
                  EEB_OK);
}

Test(qualify, refuses_what_cannot_be_compared)
{
    char err[512] = "";
    struct eeb_qualify_result r;
    struct eeb_qualify_config c = replay_config("sim:watts=5");
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_EINVAL);
    assert_has(err, "the reference");
    assert_has(err, "is a replayed trace and the candidate sim:watts=5 is not");

    c = replay_config(good_uri);
    c.load[0] = "stress-ng --cpu 4";
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_EINVAL);
    assert_has(err, "loads run under live meters");

    c = replay_config(good_uri);
    c.windows = 2;
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_EINVAL);
    assert_has(err, "2 windows a phase (3..100");

    /* traces shorter than the phases (18 s of 1.2 s windows; they hold 15.5 s):
     * the one that ends is named, and where (load 2 from 14.4 s to 15.6 s) */
    c = replay_config(good_uri);
    c.window_s = 1.2;
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_EDEVICE);
    assert_has(err, "load 2, window 3 of 5: the reference's read failed");
    assert_has(err, "the trace ended");
}

/* ---- live sources ---- */

static int phases_told;
static char told[3][64];

static void tell(void *arg, int phase, const char *name, const char *load)
{
    (void)arg;
    snprintf(told[phase], sizeof told[phase], "%s: %s", name, load ? load : "-");
    phases_told++;
}

static long read_pid(const char *path)
{
    char *text = test_read_file(path, NULL);
    cr_assert_not_null(text, "%s was not written: the load did not run", path);
    long pid = strtol(text, NULL, 10);
    free(text);
    return pid;
}

Test(qualify, live_sources_run_each_load_through_its_phase_and_stop_it, .timeout = 60)
{
    char cmd[2][400], pidfile[2][300];
    for (int i = 0; i < 2; i++) {
        snprintf(pidfile[i], sizeof pidfile[i], "%s/load%d.pid", dir, i + 1);
        snprintf(cmd[i], sizeof cmd[i], "echo $$ > %s; exec sleep 60", pidfile[i]);
    }
    struct eeb_qualify_config c;
    eeb_power_qualify_default(&c);
    c.reference = "sim:watts=5";
    c.candidate = "sim:watts=5.1";
    c.windows = 3;
    c.window_s = 0.5;
    c.load[0] = cmd[0];
    c.load[1] = cmd[1];
    c.phase_begin = tell;
    struct eeb_qualify_result r;
    char err[512] = "";
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_not(r.simulated);
    cr_assert_eq(phases_told, 3);
    cr_assert_str_eq(told[0], "idle: -");
    cr_assert(strncmp(told[1], "load 1: echo", 12) == 0, "%s", told[1]);
    for (int p = 0; p < PHASES; p++) {
        cr_assert_float_eq(r.phase[p].ref_mean_w, 5.0, 1e-9);
        cr_assert_float_eq(r.phase[p].difference, 0.02, 1e-9);
    }
    cr_assert(r.pass);
    /* each load ran, and was stopped with its phase (its sleep had 60 s to go) */
    for (int i = 0; i < 2; i++) {
        long pid = read_pid(pidfile[i]);
        cr_assert_gt(pid, 1);
        cr_assert_eq(kill((pid_t)pid, 0), -1, "load %d (pid %ld) still runs", i + 1, pid);
        cr_assert_eq(errno, ESRCH);
    }
}

Test(qualify, a_load_that_ends_before_its_phase_is_an_error, .timeout = 60)
{
    struct eeb_qualify_config c;
    eeb_power_qualify_default(&c);
    c.reference = "sim:watts=5";
    c.candidate = "sim:watts=5";
    c.windows = 3;
    c.window_s = 0.5;
    c.load[0] = "exit 3";
    struct eeb_qualify_result r;
    char err[512] = "";
    cr_assert_eq(eeb_power_qualify(&c, &r, err, sizeof err), EEB_EDEVICE);
    assert_has(err, "load 1 ('exit 3') ended (exit status 3) before its phase did");
}

/* ---- the command ---- */

Test(qualify, cli_a_sensor_3_percent_high_qualifies_and_is_kept)
{
    json_t *o = test_eeb_json((const char *[]){"power", "qualify", ref_uri, good_uri, "--window-s",
                                               "1", "--db", db, "--board", "zcu104", "--rail",
                                               "VCCINT", "--json", NULL},
                              0);
    cr_assert_str_eq(json_string_value(json_object_get(o, "verdict")), "pass");
    cr_assert_str_eq(json_string_value(json_object_get(o, "board")), "zcu104");
    cr_assert_str_eq(json_string_value(json_object_get(o, "candidate")), good_uri);
    cr_assert_eq(test_json_num(o, "windows"), 5);
    json_t *phases = json_object_get(o, "phases");
    cr_assert_eq(json_array_size(phases), 3);
    for (int p = 0; p < PHASES; p++) {
        json_t *ph = json_array_get(phases, (size_t)p);
        cr_assert_float_eq(test_json_num(ph, "reference_w"), olympic[p], 1e-5);
        cr_assert_float_eq(test_json_num(ph, "candidate_w"), olympic[p] * 1.03, 1e-5);
        cr_assert_float_eq(test_json_num(ph, "difference"), 0.03, 1e-6);
        cr_assert(json_is_true(json_object_get(ph, "within")));
        json_t *w = json_object_get(json_object_get(ph, "windows"), "reference_w");
        cr_assert_eq(json_array_size(w), WINDOWS);
        cr_assert_float_eq(json_real_value(json_array_get(w, 4)), ref_means[p][4], 1e-5);
    }
    json_decref(o);

    /* the row, as another tool reads it */
    cr_assert_eq(test_sql_int(db, "SELECT count(*) FROM qualifications WHERE board = 'zcu104' "
                                  "AND rail = 'VCCINT' AND verdict = 'pass'"),
                 1);
    char *text = NULL;
    cr_assert_eq(test_sql_text(db, "SELECT reference FROM qualifications", &text), 0);
    cr_assert_str_eq(text, ref_uri);
    free(text);
    cr_assert_float_eq(test_sql_double(db, "SELECT json_extract(figures, '$.phases[1]."
                                           "reference_w') FROM qualifications"),
                       10.20, 1e-5);
    int verdict;
    char err[512];
    cr_assert_eq(eeb_power_qualified(db, "zcu104", "VCCINT", &verdict, NULL, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(verdict, 1);
}

Test(qualify, cli_a_sensor_8_percent_high_under_load_2_fails_naming_it)
{
    struct test_run r = test_eeb((const char *[]){"power", "qualify", ref_uri, bad_uri,
                                                  "--window-s", "1", "--db", db, NULL});
    cr_assert_eq(r.status, 3, "exit %d: %s%s", r.status, r.out, r.err);
    assert_has(r.out, "phase      reference W   candidate W  difference  within 5 %");
    assert_has(r.out, "idle             5.100         5.253     +3.00 %  yes");
    assert_has(r.out, "load 1          10.200        10.506     +3.00 %  yes");
    assert_has(r.out, "load 2          15.200        16.416     +8.00 %  NO");
    assert_has(r.out, "verdict: FAIL: ");
    assert_has(r.out, "by more than 5 % in load 2\n");
    assert_has(r.out, "replayed on a simulated clock");
    test_run_free(&r);
    /* kept under this host's name and the candidate's URI */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int verdict;
    char err[512];
    cr_assert_eq(eeb_power_qualified(db, host, bad_uri, &verdict, NULL, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_eq(verdict, 0);
}

Test(qualify, cli_usage_errors)
{
    struct test_run r = test_eeb((const char *[]){"power", "qualify", ref_uri, NULL});
    cr_assert_eq(r.status, 2);
    assert_has(r.err, "'qualify' takes REF and CANDIDATE");
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "qualify", ref_uri, good_uri, "--board", "b", NULL});
    cr_assert_eq(r.status, 2);
    assert_has(r.err, "--board and --rail name what --db keeps");
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "summary", db, "--windows", "5", NULL});
    cr_assert_eq(r.status, 2);
    assert_has(r.err, "go with 'qualify'");
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "qualify", ref_uri, "sim:watts=5", NULL});
    cr_assert_eq(r.status, 1);
    assert_has(r.err, "both are replayed");
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "--help", NULL});
    cr_assert_eq(r.status, 0);
    assert_has(r.out, "eeb power qualify REF CANDIDATE");
    assert_has(r.out, "within 5 % of the reference's");
    test_run_free(&r);
}
