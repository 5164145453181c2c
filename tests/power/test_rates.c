/*
 * test_rates.c - sampling a meter at its own rate: each kind of source's
 * update interval and the rate it is sampled at by default, gaps judged
 * against the meter's interval where that is the longer (the organizer's
 * 1 Hz PTDaemon sampled at 100 Hz), the minimum rate met by a 1 Hz meter,
 * and a reading's uncertainty kept in its flags.
 */
#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"
#include "meter_emu.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double default_rate(const char *uri, double *interval)
{
    struct eeb_power_source *s;
    char err[512];
    cr_assert_eq(eeb_power_open(uri, &s, err, sizeof err), EEB_OK, "%s", err);
    double r = eeb_power_default_rate(s);
    *interval = s->update_interval_s;
    eeb_power_close(s);
    return r;
}

Test(rates, a_source_is_sampled_once_per_its_meters_update_by_default, .timeout = 30)
{
    struct meter_emu *emu =
        meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD, .volts = 10, .amps = 1});
    char uri[128];
    double interval;
    /* PTDaemon updates at its interval: 1 s unless the URI says */
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?ranging=0", meter_emu_port(emu));
    cr_expect_float_eq(default_rate(uri, &interval), 1, 1e-12);
    cr_expect_float_eq(interval, 1, 1e-12);
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?ranging=0,interval=20", meter_emu_port(emu));
    cr_expect_float_eq(default_rate(uri, &interval), 50, 1e-9);
    /* a wrapper's is its meter's */
    snprintf(uri, sizeof uri, "faulty:9~1:ptd://127.0.0.1:%d?ranging=0,interval=250",
             meter_emu_port(emu));
    cr_expect_float_eq(default_rate(uri, &interval), 4, 1e-9);
    cr_expect_float_eq(interval, 0.25, 1e-12);
    /* a meter slower than the sampler's slowest is read at 1 Hz */
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?ranging=0,interval=5000", meter_emu_port(emu));
    cr_expect_float_eq(default_rate(uri, &interval), 1, 1e-12);
    meter_emu_stop(emu);
    /* a recorded trace at its recorder's interval */
    char path[300], replay[320];
    snprintf(path, sizeof path, "%s/trace.csv", test_tmpdir());
    const char *csv = "t_s,watts\n0,5\n0.5,5\n1,5\n1.5,5\n2,5\n";
    test_write_file(path, csv, strlen(csv));
    snprintf(replay, sizeof replay, "replay:%s", path);
    cr_expect_float_eq(default_rate(replay, &interval), 2, 1e-9);
    /* no interval known: today's default */
    cr_expect_float_eq(default_rate("sim:watts=3", &interval), EEB_POWER_DEFAULT_RATE_HZ, 0);
    cr_expect_eq(interval, 0);
}

/* A power log of samples at times t (seconds, from 10 s), its
 * configuration saying rate_hz and, if > 0, the meter's update interval;
 * its summary. */
static struct eeb_power_summary summarize(const double *t, size_t n, double rate_hz,
                                          double update_interval_s)
{
    char path[300], err[512], uuid[37];
    snprintf(path, sizeof path, "%s/log-%zu-%g.db", test_tmpdir(), n, update_interval_s);
    json_t *o = json_object();
    eeb_config_put_power(o, "ptd://meter:8888", rate_hz, "measured", NULL);
    eeb_config_put_update_interval(o, update_interval_s);
    char *config = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    struct eeb_rundb *db;
    int64_t run;
    cr_assert_eq(eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s",
                 err);
    struct eeb_run_new log = {.power_log = 1,
                              .backend = "none",
                              .config_json = config,
                              .t_max_s = NAN,
                              .p_max_w = NAN,
                              .rules_version = "1"};
    cr_assert_eq(eeb_rundb_run_create(db, &log, &run, uuid, err, sizeof err), EEB_OK, "%s", err);
    free(config);
    struct eeb_sample *x = calloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = (struct eeb_sample){.t_mono_ns = (int64_t)llround((10 + t[i]) * 1e9),
                                   .volts = NAN,
                                   .amps = NAN,
                                   .watts = 9};
    cr_assert_eq(eeb_rundb_samples_add(db, run, "ptd://meter:8888", x, n, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_eq(
        eeb_rundb_event_add(db, run, x[0].t_mono_ns, 0, EEB_EVENT_LOG_BEGIN, NULL, err, sizeof err),
        EEB_OK, "%s", err);
    cr_assert_eq(eeb_rundb_event_add(db, run, x[n - 1].t_mono_ns, 0, EEB_EVENT_LOG_END, NULL, err,
                                     sizeof err),
                 EEB_OK, "%s", err);
    free(x);
    eeb_rundb_close(db);
    struct eeb_power_summary s;
    cr_assert_eq(eeb_power_summarize(path, run, NAN, &s, err, sizeof err), EEB_OK, "%s", err);
    return s;
}

/* The organizer's failure: a meter updating once a second read at 100 Hz,
 * whose reads (two round trips each) overran their deadlines for stretches
 * of 0.2-0.4 s.  Against the sampler's 10 ms those were gaps, a fifth of
 * the window; against the meter's own second they are jitter. */
Test(rates, gaps_are_judged_against_the_meters_own_update_interval, .timeout = 30)
{
    double t[1000];
    size_t n = 0;
    for (int s = 0; s < 10; s++)
        for (int ms = 0; ms < 1000; ms += 10)
            if (!(ms >= 300 && ms < 600) && n < 1000) /* 0.3 s a second without a read */
                t[n++] = s + ms / 1000.0;
    struct eeb_power_summary old = summarize(t, n, 100, 0);
    cr_expect_eq(old.valid, 0);
    cr_expect(strstr(old.invalid, "has no samples"), "%s", old.invalid);
    struct eeb_power_summary now = summarize(t, n, 100, 1);
    cr_expect_eq(now.valid, 1, "%s", now.invalid);
    cr_expect_eq(now.energy.gaps, 0);
    cr_expect_float_eq(now.update_interval_s, 1, 1e-12);
    cr_expect_float_eq(now.energy.joules, 9 * (t[n - 1] - t[0]), 1e-6);
    /* a real gap is still one: 2.5 s without a reading of a 1 s meter */
    double g[] = {0, 1, 2, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5};
    struct eeb_power_summary gap = summarize(g, sizeof g / sizeof *g, 1, 1);
    cr_expect_eq(gap.valid, 0);
    cr_expect_eq(gap.energy.gaps, 1);
}

/* A 1 Hz meter read once a second: a window of 4.5 s holds 4 or 5 of its
 * readings, never "0.89 Hz" below the rules' 1 Hz. */
Test(rates, a_meter_read_once_a_second_meets_the_minimum_rate, .timeout = 30)
{
    struct eeb_energy e = {.samples = 4, .seconds = 4.5};
    struct eeb_power_validity v;
    eeb_power_validity_default(&v);
    char why[256];
    cr_expect_eq(eeb_power_valid(&e, 0, 0, &v, why, sizeof why), 1, "%s", why);
    e.samples = 3; /* one short of what a 1 Hz sampler takes in 4.5 s */
    cr_expect_eq(eeb_power_valid(&e, 0, 0, &v, why, sizeof why), 0);
    cr_expect(strstr(why, "below the 1.00 Hz minimum"), "%s", why);
}

Test(rates, a_readings_uncertainty_is_kept_in_its_flags)
{
    cr_expect_eq(eeb_sample_uncertainty_flags(NAN), 0);
    cr_expect(isnan(eeb_sample_uncertainty(0)));
    cr_expect_eq(eeb_sample_uncertainty_flags(0.01), EEB_SAMPLE_UNCERTAINTY | 10000);
    cr_expect_float_eq(eeb_sample_uncertainty(eeb_sample_uncertainty_flags(0.0305)), 0.0305, 1e-12);
    cr_expect_float_eq(eeb_sample_uncertainty(eeb_sample_uncertainty_flags(0)), 0, 0);
    cr_expect(isinf(eeb_sample_uncertainty(eeb_sample_uncertainty_flags(INFINITY))));
    /* the largest kept is finite: one past it reads as unevaluated no more */
    double big = eeb_sample_uncertainty(eeb_sample_uncertainty_flags(1e9));
    cr_expect(isfinite(big) && big > 16, "%g", big);
}
