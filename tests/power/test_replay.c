/*
 * test_replay.c - the replay: source on the traces people bring: SPEC
 * PTDaemon logs (one channel and several, either date order, invalid
 * readings and message lines), CSVs from other tools (separators, units in
 * the header, epoch and ISO times, columns by name), and first lines that
 * are data, never taken for a header.  Fixtures in tests/data/traces are in
 * the real layouts.
 */
#include "power/eeb_power.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    cr_assert_eq(s->provenance, EEB_MEASURED);
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

Test(replay, ptdaemon_log_day_first_skips_invalid_readings_and_messages)
{
    /* 30-04-2021: a day of 30 says the order; the log crosses midnight
     * into May, and its -1 readings are dropped, not replayed as -1 W */
    struct eeb_power_source *s = test_power_open("replay:" TRACES "ptd_dmy.log");
    int rc;
    struct eeb_sample x = read_at(s, 0, &rc);
    cr_assert_float_eq(x.watts, 45.2, 1e-9);
    cr_assert_float_eq(x.volts, 230.1, 1e-9);
    cr_assert_float_eq(watts_at(s, 1.0025), (45.2 + 47.4) / 2, 1e-9);
    cr_assert_float_eq(watts_at(s, 2.005), 47.4, 1e-9); /* 01-05-2021 00:00:00.619 */
    cr_assert_float_eq(watts_at(s, 2.997), 46.3, 1e-9);
    cr_assert_float_eq(watts_at(s, 4.994), 44.1, 1e-9);
    cr_assert(s->note, "what was skipped is said");
    cr_assert(strstr(s->note, "skipped 2 invalid readings (Watts -1)"), "%s", s->note);
    cr_assert(strstr(s->note, "3 message lines (NOTICE, ERROR)"), "%s", s->note);
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
        {"\xef\xbb\xbf\"time\";\"power_mW\"\n\"0,0\";\"1500,0\"\n\"1,0\";\"2500,0\"\n", 0.5, 2},
        {"time,power_W\n2021-04-15T22:14:22.624Z,4\n2021-04-15T22:14:23.124Z,6\n", 0.25, 5},
        {"# exported by a logger\nelapsed_time,Watts,label\n0,1,idle\n2,3,busy\n", 1, 2},
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        struct eeb_power_source *s = test_power_open(scratch(ok[i].text, ""));
        watts_at(s, 0);
        cr_assert_float_eq(watts_at(s, ok[i].at), ok[i].watts, 1e-9, "%s", ok[i].text);
        eeb_power_close(s);
    }

    const char *two = "t,power_W,power_mW\n0,1,1000\n1,2,2000\n";
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
        {"timestamp,watts\n1618524862624,5\n1618524863624,6\n",
         "trace.csv:2: column 1 'timestamp' has no unit, and 1618524862624 s is past the year "
         "5000: name the unit"},
        {"t_s,watts\n0,5\n0.5,-2\n", "trace.csv:3: column 2 'watts': -2 W (power must be >= 0)"},
        {"t_s,watts\n0,5\n1,6\n1,7\n",
         "trace.csv:4: time 1 is not after line 3's (times must increase)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        test_power_open_fails(scratch(bad[i][0], ""), EEB_EFORMAT, bad[i][1]);
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
    cr_assert(strstr(r.err, "ptd_dmy.log: skipped 2 invalid readings (Watts -1)"), "%s", r.err);
    test_run_free(&r);
}
