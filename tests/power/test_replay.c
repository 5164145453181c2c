/*
 * test_replay.c - the replay: source on the traces people bring: SPEC
 * PTDaemon logs (one channel and several, either date order, invalid
 * readings, message lines, a last line cut short), CSVs from other tools
 * (separators, units in the header and none, decimal commas, epoch and ISO
 * times, columns by name) and eeb's own export, and first lines that are
 * data, never taken for a header.  Where the meter had no reading the
 * replay has none: at an invalid reading its reads fail, in a gap of the
 * trace it takes no sample, and `eeb power` judges the run as the live
 * one.  Fixtures in tests/data/traces are in the real
 * layouts.
 */
#include "power/eeb_power.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define TRACES "tests/data/traces/"

/* The source's reading t_s seconds after its first (which must be read
 * first, at 0), every field; rc its status. */
static struct eeb_sample read_at(struct eeb_power_source *s, double t_s, int *rc)
{
    struct eeb_sample x = {.watts = NAN, .volts = NAN, .amps = NAN};
    char err[256];
    *rc = s->ops->read(s, 1000000000 + (int64_t)llround(t_s * 1e9), &x, err, sizeof err);
    return x;
}

/* A read t_s seconds on fails as a meter's failed read does, saying why. */
static void read_fails(struct eeb_power_source *s, double t_s, const char *message)
{
    struct eeb_sample x;
    char err[512] = "";
    int rc = s->ops->read(s, 1000000000 + (int64_t)llround(t_s * 1e9), &x, err, sizeof err);
    cr_assert_eq(rc, EEB_EDEVICE, "%s at %g s: status %d, not a failed read (%g W)", s->uri, t_s,
                 rc, rc == EEB_OK ? x.watts : NAN);
    cr_assert(strstr(err, message), "%s at %g s: '%s' lacks '%s'", s->uri, t_s, err, message);
}

/* A read t_s seconds on, inside a gap of the trace, has no reading (the
 * sampler leaves the same gap), saying why. */
static void read_has_none(struct eeb_power_source *s, double t_s, const char *message)
{
    struct eeb_sample x;
    char err[512] = "";
    int rc = s->ops->read(s, 1000000000 + (int64_t)llround(t_s * 1e9), &x, err, sizeof err);
    cr_assert_eq(rc, EEB_ENODATA, "%s at %g s: status %d, not a gap (%g W)", s->uri, t_s, rc,
                 rc == EEB_OK ? x.watts : NAN);
    cr_assert(strstr(err, message), "%s at %g s: '%s' lacks '%s'", s->uri, t_s, err, message);
}

static double watts_at(struct eeb_power_source *s, double t_s)
{
    int rc;
    struct eeb_sample x = read_at(s, t_s, &rc);
    cr_assert_eq(rc, EEB_OK, "%s at %g s: status %d", s->uri, t_s, rc);
    return x.watts;
}

/* A trace written to a scratch file; its replay: URI with options. */
static const char *scratch(const char *text, const char *options)
{
    static char path[256], uri[400];
    snprintf(path, sizeof path, "%s/trace.csv", test_tmpdir());
    test_write_file(path, text, strlen(text));
    snprintf(uri, sizeof uri, "replay:%s%s", path, options);
    return uri;
}

/* ---- SPEC PTDaemon logs ---- */

Test(replay, ptdaemon_log_of_two_channels_replays_the_one_chosen)
{
    test_power_open_fails("replay:" TRACES "ptd_2ch.log", EEB_EINVAL,
                          "a 2-channel PTDaemon log (channels 1, 2): choose one with "
                          "?channel=N, or ?channel=total");
    test_power_open_fails("replay:" TRACES "ptd_2ch.log?channel=3", EEB_EINVAL,
                          "ptd_2ch.log:2: no channel 3 (channels 1, 2)");

    struct eeb_power_source *s = test_power_open("replay:" TRACES "ptd_2ch.log?channel=2");
    cr_assert_eq(s->provenance, EEB_DECLARED);
    int rc;
    struct eeb_sample x = read_at(s, 0, &rc);
    cr_assert_float_eq(x.watts, 90.92, 1e-9);
    cr_assert_float_eq(x.volts, 120.83, 1e-9);
    cr_assert_float_eq(x.amps, 0.802, 1e-9);
    /* at the log's times, to the millisecond: 22:38:59.240 is 0.999 s on */
    cr_assert_float_eq(watts_at(s, 0.999), 91.87, 1e-9);
    cr_assert_float_eq(watts_at(s, 1.4985), (91.87 + 94.1) / 2, 1e-9);
    cr_assert_float_eq(watts_at(s, 3.011), 92.0, 1e-9);
    read_at(s, 3.02, &rc);
    cr_assert_eq(rc, EEB_EDEVICE, "a read past the log's end (3.011 s)");
    eeb_power_close(s);

    s = test_power_open("replay:" TRACES "ptd_2ch.log?channel=total");
    x = read_at(s, 0, &rc);
    cr_assert_float_eq(x.watts, 272.93, 1e-9);
    cr_assert(isnan(x.volts) && isnan(x.amps), "the total's volts and amps are PTDaemon's -1");
    cr_assert_float_eq(watts_at(s, 1.998), 281.5, 1e-9);
    eeb_power_close(s);
}

Test(replay, ptdaemon_log_day_first_fails_reads_at_invalid_readings_and_skips_messages)
{
    /* 30-04-2021: a day of 30 says the order; the log crosses midnight
     * into May.  Its -1 readings are PTDaemon's "no valid reading": not
     * replayed as -1 W, and not bridged either (this test once expected
     * (45.2 + 47.4) / 2 W at 1.0025 s, a reading the meter never gave):
     * a read between the valid readings around one fails. */
    struct eeb_power_source *s = test_power_open("replay:" TRACES "ptd_dmy.log");
    int rc;
    struct eeb_sample x = read_at(s, 0, &rc);
    cr_assert_float_eq(x.watts, 45.2, 1e-9);
    cr_assert_float_eq(x.volts, 230.1, 1e-9);
    read_fails(s, 0.5, "its reading at 1.010 s (line 3) is invalid");
    read_fails(s, 1.0025, "its reading at 1.010 s (line 3) is invalid");
    read_fails(s, 2.0, "line 3");
    cr_assert_float_eq(watts_at(s, 2.005), 47.4, 1e-9); /* 01-05-2021 00:00:00.619 */
    cr_assert_float_eq(watts_at(s, 2.501), (47.4 + 46.3) / 2, 1e-9);
    cr_assert_float_eq(watts_at(s, 2.997), 46.3, 1e-9);
    read_fails(s, 3.5, "its reading at 4.006 s (line 8) is invalid");
    cr_assert_float_eq(watts_at(s, 4.994), 44.1, 1e-9);
    cr_assert(s->note, "what was skipped is said");
    cr_assert(strstr(s->note, "ptd_dmy.log: 2 invalid readings (Watts -1), where reads fail; "
                              "skipped 3 message lines (NOTICE, ERROR)"),
              "%s", s->note);
    cr_assert(strstr(s->note, "1 line not starting with 'Time,'"), "%s", s->note);
    eeb_power_close(s);

    test_power_open_fails("replay:" TRACES "ptd_dmy.log?date=MM-DD", EEB_EFORMAT,
                          "ptd_dmy.log:1: '30-04-2021' is not a date in MM-DD-YYYY order "
                          "(date=MM-DD)");
    test_power_open_fails("replay:" TRACES "ptd_dmy.log?date=YYYY-MM-DD", EEB_EINVAL,
                          "date=YYYY-MM-DD (MM-DD or DD-MM)");
}

Test(replay, ptdaemon_dates_that_read_either_way_need_the_order_given)
{
    test_power_open_fails("replay:" TRACES "ptd_ambiguous.log", EEB_EINVAL,
                          "ptd_ambiguous.log: its dates (04-05-2021, line 1) read either way: "
                          "say which with ?date=MM-DD or ?date=DD-MM");
    const char *orders[] = {"?date=MM-DD", "?date=DD-MM"};
    for (int i = 0; i < 2; i++) {
        char uri[128];
        snprintf(uri, sizeof uri, "replay:" TRACES "ptd_ambiguous.log%s", orders[i]);
        struct eeb_power_source *s = test_power_open(uri);
        watts_at(s, 0);
        cr_assert_float_eq(watts_at(s, 1.009), 33.52, 1e-9);
        eeb_power_close(s);
    }
    /* a log whose dates fit neither order */
    const char *both = "Time,13-04-2021 10:00:00.000,Watts,5,Volts,230,Amps,0.1,PF,1,Mark,a\n"
                       "Time,04-13-2021 10:00:01.000,Watts,5,Volts,230,Amps,0.1,PF,1,Mark,a\n";
    test_power_open_fails(scratch(both, ""), EEB_EFORMAT,
                          "day first on line 1 (13-04-2021), month first on line 2 (04-13-2021)");
}

Test(replay, ptdaemon_mark_selects_one_measurement)
{
    const char *log = "Time,05-14-2021 10:00:00.000,Watts,5,Volts,230,Amps,0.1,PF,1,Mark,ranging\n"
                      "Time,05-14-2021 10:00:01.000,Watts,9,Volts,230,Amps,0.1,PF,1,Mark,ranging\n"
                      "Time,05-14-2021 10:01:00.000,Watts,7,Volts,230,Amps,0.1,PF,1,Mark,testing\n"
                      "Time,05-14-2021 10:01:02.000,Watts,8,Volts,230,Amps,0.1,PF,1,Mark,testing\n";
    struct eeb_power_source *s = test_power_open(scratch(log, "?mark=testing"));
    cr_assert_float_eq(watts_at(s, 0), 7, 1e-12);
    cr_assert_float_eq(watts_at(s, 1), 7.5, 1e-12);
    eeb_power_close(s);
    test_power_open_fails(scratch(log, "?mark=run_1"), EEB_EINVAL,
                          "no readings marked 'run_1' (marks: ranging, testing)");
    test_power_open_fails(scratch(log, "?power=Watts"), EEB_EINVAL,
                          "power= names a CSV column; this is a PTDaemon log");
}

/* ---- CSVs from other tools ---- */

Test(replay, csv_with_semicolons_milliwatts_and_epoch_milliseconds)
{
    struct eeb_power_source *s = test_power_open("replay:" TRACES "power_mw_epoch.csv");
    int rc;
    struct eeb_sample x = read_at(s, 0, &rc);
    cr_assert_float_eq(x.watts, 4.95, 1e-12);
    cr_assert_float_eq(x.volts, 5.012, 1e-12);
    cr_assert_float_eq(x.amps, 0.988, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.05), (4.95 + 5.21) / 2, 1e-9);
    cr_assert_float_eq(watts_at(s, 0.3), 7.35, 1e-9);
    cr_assert_float_eq(watts_at(s, 0.4), (7.35 + 5.0) / 2, 1e-9);
    cr_assert_float_eq(watts_at(s, 0.5), 5.0, 1e-9);
    read_at(s, 0.51, &rc);
    cr_assert_eq(rc, EEB_EDEVICE);
    eeb_power_close(s);
    test_power_open_fails("replay:" TRACES "power_mw_epoch.csv?channel=1", EEB_EINVAL,
                          "channel= is for PTDaemon logs");
}

Test(replay, csv_units_and_columns_are_read_from_the_header)
{
    const struct {
        const char *text;
        double at, watts;
    } ok[] = {
        {"Power (W)\tTime [ms]\n5\t0\n7\t500\n", 0.25, 6},
        {"t_s,P [uW]\n0,2000000\n1,4000000\n", 0.5, 3},
        {"seconds,\xc2\xb5W\n0,1000000\n1,3000000\n", 0.5, 2},
        {"\xef\xbb\xbf\"time_s\";\"power_mW\"\n\"0,0\";\"1500,0\"\n\"1,0\";\"2500,0\"\n", 0.5, 2},
        {"time,power_W\n2021-04-15T22:14:22.624Z,4\n2021-04-15T22:14:23.124Z,6\n", 0.25, 5},
        {"# exported by a logger\nelapsed_time_s,Watts,label\n0,1,idle\n2,3,busy\n", 1, 2},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        struct eeb_power_source *s = test_power_open(scratch(ok[i].text, ""));
        watts_at(s, 0);
        cr_assert_float_eq(watts_at(s, ok[i].at), ok[i].watts, 1e-9, "%s", ok[i].text);
        eeb_power_close(s);
    }

    const char *two = "t_s,power_W,power_mW\n0,1,1000\n1,2,2000\n";
    test_power_open_fails(scratch(two, ""), EEB_EINVAL,
                          "trace.csv:1: two power columns, 2 'power_W' and 3 'power_mW': say "
                          "which with ?power=NAME");
    struct eeb_power_source *s = test_power_open(scratch(two, "?power=power_mW"));
    cr_assert_float_eq(watts_at(s, 0), 1, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.5), 1.5, 1e-12);
    eeb_power_close(s);

    const char *bad[][2] = {
        {"t_s;power_mW\n0;5\n1;x\n", "trace.csv:3: column 2 'power_mW': 'x' is not a number"},
        {"t_s,power_mW\n0,5\n1\n", "trace.csv:3: no column 2 'power_mW' (1 field)"},
        {"t_s,current_mA\n0,5\n1,6\n", "trace.csv:1: no power column among 't_s', 'current_mA'"},
        {"elapsed (s),power (MW)\n0,5\n1,6\n",
         "trace.csv:1: column 2 'power (MW)': unit 'MW' is not one of W, mW, uW, kW"},
        {"t (ms),power (V)\n0,5\n1,6\n",
         "trace.csv:1: column 2 'power (V)': unit 'V' is not one of W, mW, uW, kW"},
        {"t_s,watts\n0,5\n0.5,-2\n", "trace.csv:3: column 2 'watts': -2 W (power must be >= 0)"},
        {"t_s,watts\n0,5\n1,6\n1,7\n",
         "trace.csv:4: time 1 is not after line 3's (times must increase)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        test_power_open_fails(scratch(bad[i][0], ""), EEB_EFORMAT, bad[i][1]);
    /* epoch milliseconds without a unit: refused for want of one (as any
     * time column of numbers without one is), not for being past 5000 */
    test_power_open_fails(scratch("timestamp,watts\n1618524862624,5\n1618524863624,6\n", ""),
                          EEB_EINVAL, "trace.csv:1: column 1 'timestamp' has no unit");
    test_power_open_fails(scratch("t_s,watts\n0,1\n1,2\n", "?power=P"), EEB_EINVAL,
                          "trace.csv:1: no column 'P' (power=): the columns are 't_s', 'watts'");
}

/* ---- first lines: data is never taken for a header ---- */

Test(replay, a_first_line_of_numbers_is_data_not_a_header)
{
    /* a logger's headerless export: semicolons, decimal commas */
    struct eeb_power_source *s = test_power_open("replay:" TRACES "no_header.csv");
    cr_assert_float_eq(watts_at(s, 0), 4.95, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.25), 5.45, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.75), 5.6, 1e-12);
    eeb_power_close(s);

    /* a header after a comment is still a header */
    s = test_power_open(scratch("# eeb trace\nt_s,watts\n0,1\n1,2\n", ""));
    cr_assert_float_eq(watts_at(s, 0), 1, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.5), 1.5, 1e-12);
    eeb_power_close(s);

    const char *bad[][2] = {
        /* was skipped as a header, its reading lost */
        {"nan,5\n1,5\n2,6\n",
         "trace.csv:1: 'nan,5' is neither a header (field 2 '5' is a number) nor data (field 1 "
         "'nan' is not a finite number)"},
        {"inf,5\n1,5\n2,6\n", "trace.csv:1: 'inf,5' is neither a header"},
        {"0,power\n1,5\n", "trace.csv:1: '0,power' is neither a header"},
        {"0,5,12\n1,5,12\n",
         "trace.csv:1: '0,5,12': 3 numbers without a header; a trace without one is "
         "t_s,watts[,volts,amps]: name the columns in a header line"},
        {"0,1\n1,2\n2,3,4\n", "trace.csv:3: '2,3,4': 3 numbers"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        test_power_open_fails(scratch(bad[i][0], ""), EEB_EFORMAT, bad[i][1]);
    test_power_open_fails(scratch("0,1\n1,2\n", "?time=t"), EEB_EINVAL,
                          "trace.csv:1: no header to find column 't' (time=) in");
}

/* ---- the CLI says what a log's replay skipped ---- */

Test(replay, power_log_says_what_the_replay_skipped)
{
    char db[300];
    snprintf(db, sizeof db, "%s/runs.db", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"power", "log", "--source", "replay:" TRACES "ptd_dmy.log",
                                  "--db", db, "--duration", "0.3", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "ptd_dmy.log: 2 invalid readings (Watts -1), where reads fail; "
                            "skipped 3 message lines"),
              "%s", r.err);
    test_run_free(&r);
}

/* ---- where the meter had no reading, the replay has none ---- */

Test(replay, a_ptdaemon_invalid_stretch_fails_reads_across_it)
{
    /* a WT310 that answered nothing valid for two readings (Watts -1):
     * 10:00:01.118 (1.006 s) is the last valid reading before them,
     * 10:00:04.119 (4.007 s) the first after */
    struct eeb_power_source *s = test_power_open("replay:" TRACES "ptd_invalid_stretch.log");
    cr_assert_float_eq(watts_at(s, 0), 31.2, 1e-9);
    cr_assert_float_eq(watts_at(s, 0.503), (31.2 + 33.9) / 2, 1e-9);
    cr_assert_float_eq(watts_at(s, 1.006), 33.9, 1e-9);
    read_fails(s, 1.01,
               "no reading 1.010 s into the trace: its reading at 2.009 s (line 4) is "
               "invalid");
    read_fails(s, 2.5, "its reading at 2.009 s (line 4) is invalid");
    read_fails(s, 4.0, "its reading at 3.013 s (line 7) is invalid");
    int rc;
    struct eeb_sample x = read_at(s, 4.007, &rc);
    cr_assert_eq(rc, EEB_OK);
    cr_assert_float_eq(x.watts, 35.0, 1e-9);
    cr_assert_float_eq(x.volts, 229.5, 1e-9);
    cr_assert_float_eq(watts_at(s, 5.009), 34.6, 1e-9);
    cr_assert(s->note && strstr(s->note, "ptd_invalid_stretch.log: 2 invalid readings (Watts -1), "
                                         "where reads fail; skipped 3 message lines (NOTICE, "
                                         "ERROR) and 2 lines not starting with 'Time,'"),
              "%s", s->note ? s->note : "no note");
    eeb_power_close(s);
}

/* The number after `what` in text ("60 failed reads": what " failed"). */
static long count_before(const char *text, const char *what)
{
    const char *at = strstr(text, what);
    cr_assert(at, "no '%s' in %s", what, text);
    while (at > text && at[-1] >= '0' && at[-1] <= '9')
        at--;
    return strtol(at, NULL, 10);
}

Test(replay, power_log_counts_the_failed_reads_of_an_invalid_stretch_and_the_run_is_invalid)
{
    /* as the live meter's run would be: about 3 s of its 4.5 at 20 Hz
     * are failed reads, and the summary says the measurement is invalid */
    char db[300];
    snprintf(db, sizeof db, "%s/runs.db", test_tmpdir());
    struct test_run r = test_eeb(
        (const char *[]){"power", "log", "--source", "replay:" TRACES "ptd_invalid_stretch.log",
                         "--db", db, "--rate", "20", "--duration", "4.5", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    long failed = count_before(r.out, " failed reads");
    cr_assert(failed >= 40 && failed <= 62, "%ld failed reads in a 3.0 s stretch at 20 Hz: %s",
              failed, r.out);
    cr_assert(strstr(r.err, "the first failed read: replay:" TRACES "ptd_invalid_stretch.log: "
                            "no reading "),
              "%s", r.err);
    cr_assert(strstr(r.err, "its reading at 2.009 s (line 4) is invalid"), "%s", r.err);
    test_run_free(&r);

    json_t *o =
        test_eeb_json((const char *[]){"power", "summary", db, "--json", NULL}, 4 /* invalid */);
    cr_assert(json_is_false(json_object_get(o, "valid")));
    cr_assert_eq((long)test_json_num(o, "failed_reads"), failed);
    const char *why = json_string_value(json_object_get(o, "invalid"));
    char failed_text[64];
    snprintf(failed_text, sizeof failed_text, "the meter failed %ld reads", failed);
    cr_assert(why && strstr(why, failed_text), "%s", why ? why : "no reason");
    cr_assert(test_json_num(o, "gap_s") > 2.5, "the stretch is a gap in the samples");
    json_decref(o);
}

Test(replay, a_gap_between_valid_readings_is_a_gap_in_the_replay)
{
    /* 1 s apart, then a logger stall of 7 s: twice the median spacing is
     * 2 s, and the stall is a gap, not a line from 3 W to 4 W */
    struct eeb_power_source *s =
        test_power_open(scratch("t_s,watts\n0,1\n1,2\n2,3\n9,4\n10,5\n11,6\n", ""));
    cr_assert_float_eq(watts_at(s, 0), 1, 1e-12);
    cr_assert_float_eq(watts_at(s, 1.5), 2.5, 1e-12);
    cr_assert_float_eq(watts_at(s, 2), 3, 1e-12);
    read_has_none(s, 2.5,
                  "no reading 2.500 s into the trace: a gap of 7.000 s between lines 4 and 5 "
                  "(a gap is over 2.000 s)");
    read_has_none(s, 8.99, "a gap of 7.000 s");
    cr_assert_float_eq(watts_at(s, 9), 4, 1e-12);
    cr_assert_float_eq(watts_at(s, 9.5), 4.5, 1e-12);
    cr_assert(s->note && strstr(s->note, "trace.csv: 1 gap of more than 2.000 s without a reading "
                                         "(twice the median spacing, at least 0.01 s), where "
                                         "the replay has no reading either"),
              "%s", s->note ? s->note : "no note");
    eeb_power_close(s);

    /* a logger writing local time across the spring's DST change: the
     * hour that never was is a gap */
    s = test_power_open(scratch("time,watts\n2021-03-28 01:59:58,5\n2021-03-28 01:59:59,6\n"
                                "2021-03-28 03:00:00,7\n2021-03-28 03:00:01,8\n",
                                ""));
    watts_at(s, 0);
    cr_assert_float_eq(watts_at(s, 0.5), 5.5, 1e-12);
    read_has_none(s, 1.5, "a gap of 3601.000 s between lines 3 and 4");
    read_has_none(s, 3601.9, "a gap of 3601.000 s");
    cr_assert_float_eq(watts_at(s, 3602.5), 7.5, 1e-9);
    eeb_power_close(s);

    /* below 10 ms a spacing is a logging process's jitter, not a gap:
     * 6 ms in a 1 kHz trace is read across */
    s = test_power_open(scratch("t_ms,watts\n0,1\n1,1\n2,1\n3,1\n9,2\n10,2\n", ""));
    watts_at(s, 0);
    cr_assert_float_eq(watts_at(s, 0.006), 1.5, 1e-9);
    cr_assert_null(s->note);
    eeb_power_close(s);
}

/* A trace with a 0.3 s stall of its logger, logged again: the stall is
 * a gap in the samples, as it was in the trace, not failed reads (a live
 * meter that was not read for 0.3 s failed nothing) and not readings drawn
 * across it; 0.3 s of 2.2 s is over the rules' 5 %, so both are invalid
 * for the gap. */
Test(replay, power_log_of_a_trace_with_a_gap_has_the_same_gap)
{
    char trace[300], db[300], text[16384] = "t_ms,watts\n";
    snprintf(trace, sizeof trace, "%s/stall.csv", test_tmpdir());
    snprintf(db, sizeof db, "%s/runs.db", test_tmpdir());
    for (int ms = 0; ms <= 2400; ms += 10)
        if (ms <= 1000 || ms >= 1300)
            snprintf(text + strlen(text), sizeof text - strlen(text), "%d,%d\n", ms,
                     ms < 1000 ? 5 : 7);
    test_write_file(trace, text, strlen(text));
    char uri[320];
    snprintf(uri, sizeof uri, "replay:%s", trace);
    struct test_run r =
        test_eeb((const char *[]){"power", "log", "--source", uri, "--db", db, "--rate", "100",
                                  "--duration", "2.2", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    json_t *o = test_eeb_json((const char *[]){"power", "summary", db, "--json", NULL}, 4);
    cr_assert_eq(test_json_num(o, "failed_reads"), 0, "the gap is not failed reads");
    cr_assert_geq(test_json_num(o, "gaps"), 1);
    cr_assert(test_json_num(o, "gap_s") > 0.25 && test_json_num(o, "gap_s") < 0.35, "gap %g s",
              test_json_num(o, "gap_s"));
    const char *why = json_string_value(json_object_get(o, "invalid"));
    cr_assert(why && strstr(why, "gap"), "%s", why ? why : "no reason");
    json_decref(o);
}

/* ---- CSVs: units, decimal marks, empty fields, real headers ---- */

Test(replay, a_csv_time_column_needs_a_unit)
{
    /* 0 and 10: seconds, or milliseconds played 1000 times too slowly? */
    const char *bare = "time,power\n0,5\n10,6\n";
    test_power_open_fails(scratch(bare, ""), EEB_EINVAL,
                          "trace.csv:1: column 1 'time' has no unit, and its times are not ISO "
                          "8601 date-times (line 2: '0'): name the unit in the header (t_s, "
                          "time_ms, 'Time [s]', 'Time (us)') or add ?time_unit=s|ms|us|ns");
    test_power_open_fails(scratch("# from a logger\ntime,power\n0,5\n10,6\n", ""), EEB_EINVAL,
                          "trace.csv:2: column 1 'time' has no unit");
    struct eeb_power_source *s = test_power_open(scratch(bare, "?time_unit=ms"));
    cr_assert_float_eq(watts_at(s, 0), 5, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.005), 5.5, 1e-9);
    read_fails(s, 0.011, "the trace ended 0.010 s after its start");
    eeb_power_close(s);

    s = test_power_open(scratch("Time [s],power\n0,5\n10,6\n", ""));
    watts_at(s, 0);
    cr_assert_float_eq(watts_at(s, 5), 5.5, 1e-9);
    eeb_power_close(s);

    /* eeb's own layout, without a header, is t_s by definition; time_unit=
     * plays a logger's milliseconds */
    s = test_power_open(scratch("0,5\n10,6\n", "?time_unit=ms"));
    watts_at(s, 0);
    cr_assert_float_eq(watts_at(s, 0.005), 5.5, 1e-9);
    eeb_power_close(s);

    test_power_open_fails(scratch("time_ms,power\n0,5\n10,6\n", "?time_unit=s"), EEB_EINVAL,
                          "trace.csv:1: column 1 'time_ms' says its unit, ms; time_unit=s says "
                          "otherwise");
    test_power_open_fails(scratch(bare, "?time_unit=min"), EEB_EINVAL,
                          "time_unit=min (s, ms, us or ns)");
}

Test(replay, a_decimal_comma_is_decided_once_and_a_thousands_comma_is_refused)
{
    /* 1,234: 1.234 W, or 1234 W with a thousands separator? */
    const char *thousands = "t_s;P_W\n0;1,234\n1;2,5\n";
    test_power_open_fails(scratch(thousands, ""), EEB_EINVAL,
                          "trace.csv:2: column 2 'P_W': '1,234' is 1.234 with a decimal comma, or "
                          "1234 with a thousands separator: say ?decimal=, if the comma is the "
                          "decimal mark (eeb reads no thousands separators)");
    const char *said[] = {"?decimal=,", "?decimal=,power=P_W", "?power=P_W,decimal=,",
                          "?decimal=,,power=P_W"};
    for (size_t i = 0; i < sizeof said / sizeof *said; i++) {
        struct eeb_power_source *s = test_power_open(scratch(thousands, said[i]));
        cr_assert_float_eq(watts_at(s, 0), 1.234, 1e-12, "%s", said[i]);
        cr_assert_float_eq(watts_at(s, 1), 2.5, 1e-12, "%s", said[i]);
        eeb_power_close(s);
    }

    /* the file's first decimal comma that cannot be a thousands separator
     * ("0,5") decides it: 1,234 is then 1.234 */
    struct eeb_power_source *s = test_power_open(scratch("t_s;P_W\n0,5;2,5\n1,5;1,234\n", ""));
    cr_assert_float_eq(watts_at(s, 0), 2.5, 1e-12);
    cr_assert_float_eq(watts_at(s, 1), 1.234, 1e-12);
    eeb_power_close(s);

    test_power_open_fails(scratch("t_s;P_W\n0.5;2.5\n1.5;1,5\n", ""), EEB_EFORMAT,
                          "trace.csv:3: column 2 'P_W': '1,5' has a decimal comma, but line 2's "
                          "numbers have a decimal point");
    test_power_open_fails(scratch("t_s\tP_W\n0\t1.5\n1\t2\n", "?decimal=,"), EEB_EFORMAT,
                          "trace.csv:2: column 2 'P_W': '1.5' has a decimal point, but decimal=, "
                          "says");
    test_power_open_fails(scratch("t_s,P_W\n0,1\n1,2\n", "?decimal=,"), EEB_EINVAL,
                          "trace.csv:1: decimal=, but commas separate its fields");
}

Test(replay, an_empty_trailing_volts_or_amps_field_is_none)
{
    struct eeb_power_source *s = test_power_open(scratch("t_s,P,V\n0,1,\n1,2,12\n", ""));
    int rc;
    struct eeb_sample x = read_at(s, 0, &rc);
    cr_assert_eq(rc, EEB_OK);
    cr_assert_float_eq(x.watts, 1, 1e-12);
    cr_assert(isnan(x.volts), "an empty volts is none, not %g", x.volts);
    x = read_at(s, 1, &rc);
    cr_assert_float_eq(x.volts, 12, 1e-12);
    eeb_power_close(s);

    s = test_power_open(scratch("t_s;P;V;A\n0;1\n1;2;12;0,2\n", ""));
    x = read_at(s, 0, &rc);
    cr_assert(rc == EEB_OK && isnan(x.volts) && isnan(x.amps));
    eeb_power_close(s);

    test_power_open_fails(scratch("t_s,P,V\n0,,12\n1,2,12\n", ""), EEB_EFORMAT,
                          "trace.csv:2: column 2 'P': '' is not a number");
    test_power_open_fails(scratch("t_s,V,P\n0,12\n1,12,2\n", ""), EEB_EFORMAT,
                          "trace.csv:2: no column 3 'P' (2 fields)");
}

Test(replay, real_headers_time_utc_and_vrms_are_read)
{
    const char *uris[] = {"replay:" TRACES "time_utc_vrms.csv",
                          "replay:" TRACES "time_utc_vrms.csv?time=Time (UTC)",
                          "replay:" TRACES "time_utc_vrms.csv?volts=Voltage (Vrms)"};
    for (size_t i = 0; i < sizeof uris / sizeof *uris; i++) {
        struct eeb_power_source *s = test_power_open(uris[i]);
        int rc;
        struct eeb_sample x = read_at(s, 0, &rc);
        cr_assert_eq(rc, EEB_OK);
        cr_assert_float_eq(x.watts, 88.7, 1e-9, "%s", uris[i]);
        cr_assert_float_eq(x.volts, 230.41, 1e-9, "%s", uris[i]);
        cr_assert_float_eq(x.amps, 0.412, 1e-9, "%s", uris[i]);
        cr_assert_float_eq(watts_at(s, 0.25), (88.7 + 93.9) / 2, 1e-9, "%s", uris[i]);
        cr_assert_float_eq(watts_at(s, 1.5), 88.0, 1e-9, "%s", uris[i]);
        eeb_power_close(s);
    }
    /* a bracket that is no unit on a time column of numbers: no unit */
    test_power_open_fails(scratch("Time (UTC),Power (W)\n0,5\n1,6\n", ""), EEB_EINVAL,
                          "trace.csv:1: column 1 'Time (UTC)' has no unit ('UTC' is not one)");
    /* a column the URI names is not refused for a bracket that is no unit,
     * but one that looks like a unit eeb does not know still is */
    const char *avg = "t_s,Power (avg)\n0,5\n1,6\n";
    test_power_open_fails(scratch(avg, ""), EEB_EFORMAT,
                          "column 2 'Power (avg)': unit 'avg' is not one of W, mW, uW, kW (name "
                          "the column with ?power=NAME to pass the bracket over)");
    struct eeb_power_source *s = test_power_open(scratch(avg, "?power=Power (avg)"));
    cr_assert_float_eq(watts_at(s, 0), 5, 1e-12);
    eeb_power_close(s);
    test_power_open_fails(scratch("t_s,Power (MW)\n0,5\n1,6\n", "?power=Power (MW)"), EEB_EFORMAT,
                          "column 2 'Power (MW)': unit 'MW' is not one of W, mW, uW, kW");
}

/* ---- eeb's own export, replayed ---- */

/* The (t_mono_ns, volts, watts) of `eeb power export --csv`'s rows. */
struct exported {
    int64_t t[1024];
    double volts[1024], watts[1024];
    int n;
};

static void read_export(const char *csv, struct exported *e)
{
    e->n = 0;
    cr_assert(strncmp(csv, "t_mono_ns,t_utc_ns,volts,amps,watts\n", 36) == 0, "%s", csv);
    for (const char *line = strchr(csv, '\n') + 1; *line && e->n < 1024;
         line = strchr(line, '\n') + 1) {
        long long t, utc;
        double v, a, w;
        cr_assert_eq(sscanf(line, "%lld,%lld,%lf,%lf,%lf", &t, &utc, &v, &a, &w), 5, "%.80s", line);
        e->t[e->n] = t, e->volts[e->n] = v, e->watts[e->n++] = w;
    }
}

/* The joules of e's first `seconds` (trapezoids, from its first sample). */
static double energy(const struct exported *e, double seconds)
{
    double joules = 0;
    for (int i = 0; i + 1 < e->n; i++) {
        double a = (double)(e->t[i] - e->t[0]) / 1e9, b = (double)(e->t[i + 1] - e->t[0]) / 1e9;
        if (a < seconds)
            joules += (e->watts[i] + e->watts[i + 1]) / 2 * (fmin(b, seconds) - a);
    }
    return joules;
}

Test(replay, eeb_power_export_replays_with_the_same_energy)
{
    char db[300], db2[300], csv[300];
    const char *dir = test_tmpdir();
    snprintf(db, sizeof db, "%s/sim.db", dir);
    snprintf(db2, sizeof db2, "%s/replayed.db", dir);
    snprintf(csv, sizeof csv, "%s/export.csv", dir);
    struct test_run r = test_eeb((const char *[]){
        "power", "log", "--source", "sim:profile=sine,mean=5,amp=2,period=0.4,volts=12", "--db", db,
        "--rate", "200", "--duration", "1", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "export", db, "--csv", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_write_file(csv, r.out, strlen(r.out));
    struct exported *e = malloc(sizeof *e);
    read_export(r.out, e);
    test_run_free(&r);
    cr_assert(e->n > 100, "%d samples exported", e->n);

    /* t_mono_ns is the time, in ns: every exported sample is read back at
     * its own offset */
    char uri[400];
    snprintf(uri, sizeof uri, "replay:%s", csv);
    struct eeb_power_source *s = test_power_open(uri);
    for (int i = 0; i < e->n; i++) {
        int rc;
        struct eeb_sample x = read_at(s, (double)(e->t[i] - e->t[0]) / 1e9, &rc);
        cr_assert_eq(rc, EEB_OK, "sample %d", i);
        cr_assert_float_eq(x.watts, e->watts[i], 1e-9, "sample %d", i);
        cr_assert_float_eq(x.volts, e->volts[i], 1e-9, "sample %d", i);
    }
    eeb_power_close(s);

    /* logged again from the export, at the sampler's own times: its
     * samples hold the same energy as the export's over the same span */
    r = test_eeb((const char *[]){"power", "log", "--source", uri, "--db", db2, "--rate", "200",
                                  "--duration", "0.6", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    /* the replay fails no read; whether it is valid is the export's own
     * gaps' business (a loaded machine may stall the first log's sampler) */
    r = test_eeb((const char *[]){"power", "summary", db2, "--json", NULL});
    cr_assert(r.status == 0 || r.status == 4, "%s%s", r.out, r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_assert_eq(test_json_num(o, "failed_reads"), 0, "%s", r.out);
    json_decref(o);
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "export", db2, "--csv", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    struct exported *replayed = malloc(sizeof *replayed);
    read_export(r.out, replayed);
    test_run_free(&r);
    double span = (double)(replayed->t[replayed->n - 1] - replayed->t[0]) / 1e9;
    cr_assert(span > 0.55, "%g s replayed", span);
    double original = energy(e, span), again = energy(replayed, span);
    cr_assert_float_eq(again, original, 0.005 * original,
                       "replayed %g J, the export holds %g J over its first %g s", again, original,
                       span);
    free(replayed);
    free(e);
}

/* ---- PTDaemon logs: times and a last line cut short ---- */

Test(replay, ptdaemon_fractional_seconds_are_digits_only)
{
    const char *log = "Time,05-14-2021 10:00:00.5e-1,Watts,5,Volts,230,Amps,0.1,PF,1,Mark,a\n"
                      "Time,05-14-2021 10:00:01.000,Watts,6,Volts,230,Amps,0.1,PF,1,Mark,a\n";
    test_power_open_fails(scratch(log, ""), EEB_EFORMAT,
                          "trace.csv:1: '05-14-2021 10:00:00.5e-1' is not a time PTDaemon writes "
                          "(MM-DD-YYYY HH:MM:SS.mmm)");
}

Test(replay, ptdaemon_log_cut_mid_write_skips_its_last_line)
{
    /* copied while PTDaemon wrote it: the last line stops in "Volts" */
    struct eeb_power_source *s = test_power_open("replay:" TRACES "ptd_cut.log");
    cr_assert_float_eq(watts_at(s, 0), 31.2, 1e-9);
    cr_assert_float_eq(watts_at(s, 2.009), 34.1, 1e-9);
    read_fails(s, 2.5, "the trace ended 2.009 s after its start");
    cr_assert(s->note && strstr(s->note, "ptd_cut.log: skipped the last line, 4, cut short "
                                         "('Time,05-14-2021 10:00:03.125,Watts,34.500000,Vol')"),
              "%s", s->note ? s->note : "no note");
    eeb_power_close(s);

    const char *whole = "Time,05-14-2021 10:00:00.000,Watts,5,Volts,230,Amps,0.1,PF,1,Mark,a\n"
                        "Time,05-14-2021 10:00:01.000,Watts,6,Volts,230,Amps,0.1,PF,1,Mark,a\n";
    char log[512];
    /* a last line without its line end may be cut in a number: "Watts,7"
     * of 7.25 parses, and is skipped all the same */
    snprintf(log, sizeof log, "%sTime,05-14-2021 10:00:02.000,Watts,7", whole);
    s = test_power_open(scratch(log, ""));
    cr_assert_float_eq(watts_at(s, 0), 5, 1e-12);
    read_fails(s, 1.5, "the trace ended 1.000 s after its start");
    eeb_power_close(s);
    /* cut, then a line end added (an editor's) */
    snprintf(log, sizeof log, "%sTime,05-14-2021 10:00:02.000,Watts,7,Vol\n\n", whole);
    s = test_power_open(scratch(log, ""));
    cr_assert(s->note && strstr(s->note, "skipped the last line, 3, cut short"), "%s",
              s->note ? s->note : "no note");
    eeb_power_close(s);
    snprintf(log, sizeof log, "%sTime,05-14-2021 10:00:02.000,Wa\n", whole);
    s = test_power_open(scratch(log, ""));
    cr_assert(s->note && strstr(s->note, "skipped the last line, 3, cut short"), "%s",
              s->note ? s->note : "no note");
    eeb_power_close(s);
    /* a whole last line is read as any other: a negative reading is refused */
    snprintf(log, sizeof log,
             "%sTime,05-14-2021 10:00:02.000,Watts,-2.5,Volts,230,Amps,0.1,PF,1,Mark,a\n", whole);
    test_power_open_fails(scratch(log, ""), EEB_EFORMAT,
                          "trace.csv:3: Watts -2.5 (power must be >= 0)");
    /* anywhere else a malformed line is an error */
    snprintf(log, sizeof log, "Time,05-14-2021 09:59:59.000,Watts,4,Vol\n%s", whole);
    test_power_open_fails(scratch(log, ""), EEB_EFORMAT, "trace.csv:1: 'Vol' has no value");
}

/* ---- memory, and the options ---- */

/* The process's address space now, in bytes (VmSize). */
static size_t address_space(void)
{
    char *status = test_read_file("/proc/self/status", NULL);
    cr_assert_not_null(status);
    const char *vm = strstr(status, "VmSize:");
    cr_assert_not_null(vm);
    size_t kb = strtoull(vm + 7, NULL, 10);
    free(status);
    return kb << 10;
}

/* Not under a sanitizer, whose shadow memory an address-space limit
 * cannot hold. */
Test(replay, memory_grows_with_the_readings_not_the_lines, .disabled = SANITIZED)
{
    /* two readings among 40 MB of blank lines: a slot of 32 bytes for each
     * line was once asked for (1.3 GB) */
    size_t blank = 40u << 20;
    char *text = malloc(blank + 32), path[300];
    size_t at = (size_t)sprintf(text, "t_s,watts\n0,1\n");
    memset(text + at, '\n', blank);
    at += blank;
    at += (size_t)sprintf(text + at, "1,2\n");
    snprintf(path, sizeof path, "%s/blank.csv", test_tmpdir());
    test_write_file(path, text, at);
    free(text);

    /* room for the file's text and more, not for a slot a line */
    struct rlimit limit = {address_space() + (320u << 20), RLIM_INFINITY};
    cr_assert_eq(getrlimit(RLIMIT_AS, &(struct rlimit){0}), 0);
    cr_assert_eq(setrlimit(RLIMIT_AS, &limit), 0);
    char uri[400];
    snprintf(uri, sizeof uri, "replay:%s", path);
    struct eeb_power_source *s = test_power_open(uri);
    cr_assert_float_eq(watts_at(s, 0), 1, 1e-12);
    cr_assert_float_eq(watts_at(s, 0.5), 1.5, 1e-12);
    eeb_power_close(s);
}

Test(replay, each_option_is_for_one_kind_of_file)
{
    const char *csv_options[][2] = {
        {"?time=t", "time= names a CSV column"},     {"?power=P", "power= names a CSV column"},
        {"?volts=V", "volts= names a CSV column"},   {"?amps=A", "amps= names a CSV column"},
        {"?time_unit=ms", "time_unit= is for CSVs"}, {"?decimal=,", "decimal= is for CSVs"},
    };
    for (size_t i = 0; i < sizeof csv_options / sizeof *csv_options; i++) {
        char uri[128], message[128];
        snprintf(uri, sizeof uri, "replay:" TRACES "ptd_dmy.log%s", csv_options[i][0]);
        snprintf(message, sizeof message, "%s; this is a PTDaemon log", csv_options[i][1]);
        test_power_open_fails(uri, EEB_EINVAL, message);
    }
    const char *log_options[][2] = {
        {"?channel=1", "channel="}, {"?date=DD-MM", "date="}, {"?mark=eeb", "mark="}};
    for (size_t i = 0; i < sizeof log_options / sizeof *log_options; i++) {
        char uri[128], message[128];
        snprintf(uri, sizeof uri, "replay:" TRACES "power_mw_epoch.csv%s", log_options[i][0]);
        snprintf(message, sizeof message, "%s is for PTDaemon logs; this is a CSV",
                 log_options[i][1]);
        test_power_open_fails(uri, EEB_EINVAL, message);
    }
    test_power_open_fails("replay:" TRACES "power_mw_epoch.csv?rate=5", EEB_EINVAL,
                          "unknown option 'rate' (time=COLUMN, power=COLUMN, volts=COLUMN, "
                          "amps=COLUMN, time_unit=s|ms|us|ns, decimal=,|., channel=N|total, "
                          "date=MM-DD|DD-MM, mark=LABEL)");
    test_power_open_fails("replay:" TRACES "power_mw_epoch.csv?power=power_mW,power=P", EEB_EINVAL,
                          "power= given twice");
}
