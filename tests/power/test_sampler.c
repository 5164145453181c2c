/*
 * test_sampler.c - the sampler into a real run database: every reading
 * accounted for (written or dropped), marks on the samples' clock, meter
 * faults recorded as events with their reason while sampling goes on.
 */
#include "power/eeb_power.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char db_path[256];

/* A fresh database with one standalone power-log run; its id. */
static int64_t new_log(void)
{
    snprintf(db_path, sizeof db_path, "%s/power.db", test_tmpdir());
    struct eeb_rundb *db;
    char err[512], uuid[37];
    cr_assert_eq(eeb_rundb_open(db_path, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s",
                 err);
    struct eeb_run_new log = {
        .power_log = 1, .backend = "none", .t_max_s = NAN, .p_max_w = NAN, .rules_version = "1"};
    int64_t id;
    cr_assert_eq(eeb_rundb_run_create(db, &log, &id, uuid, err, sizeof err), EEB_OK, "%s", err);
    eeb_rundb_close(db);
    return id;
}

static long long sql_int(const char *sql)
{
    return test_sql_int(db_path, sql);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* When the marks were made: each between two readings of the monotonic
 * clock taken around its call. */
static int64_t begin_after, begin_before, end_after, end_before;

/* Runs uri at rate_hz for seconds; marks "begin" and "end" inside. */
static struct eeb_sampler_stats sample(const char *uri, double rate_hz, double seconds, size_t ring,
                                       int writer_delay_ms, int *stop_rc)
{
    struct eeb_power_source *src;
    char err[512];
    cr_assert_eq(eeb_power_open(uri, &src, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_sampler_config cfg;
    eeb_sampler_config_default(&cfg);
    cfg.db_path = db_path;
    cfg.run = 1;
    cfg.rate_hz = rate_hz;
    cfg.ring = ring;
    cfg.writer_delay_ms = writer_delay_ms;
    struct eeb_sampler *s;
    cr_assert_eq(eeb_sampler_start(src, &cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    sleep_s(seconds / 4);
    begin_after = eeb_mono_ns();
    eeb_sampler_mark(s, "begin", NULL);
    begin_before = eeb_mono_ns();
    sleep_s(seconds / 2);
    end_after = eeb_mono_ns();
    eeb_sampler_mark(s, "end", "{\"note\": \"half\"}");
    end_before = eeb_mono_ns();
    sleep_s(seconds / 4);
    struct eeb_sampler_stats st;
    *stop_rc = eeb_sampler_stop(s, &st, err, sizeof err);
    eeb_power_close(src);
    return st;
}

Test(sampler, every_reading_is_written_and_marks_share_the_clock)
{
    new_log();
    int rc;
    struct eeb_sampler_stats st = sample("sim:watts=5", 200, 1.0, 65536, 0, &rc);
    cr_assert_eq(rc, EEB_OK);
    cr_assert_gt(st.samples, 150, "%llu samples in 1 s at 200 Hz", (unsigned long long)st.samples);
    cr_assert_eq(st.dropped, 0);
    cr_assert_eq(st.failed, 0);
    cr_assert_eq(st.written, st.samples);
    cr_assert_eq(sql_int("SELECT count(*) FROM samples WHERE run_id = 1"), (long long)st.samples);
    cr_assert_float_eq(st.achieved_hz, 200, 20);
    /* the samples are 5 ms apart on the monotonic clock; the marks fall
     * among them, each stamped when it was made on that clock (how long
     * the test's half-second sleep took is the machine's business) */
    long long span = sql_int("SELECT max(t_mono_ns) - min(t_mono_ns) FROM samples");
    cr_assert_float_eq(span / 1e9, (st.samples - 1) / 200.0, 0.05);
    long long begin = sql_int("SELECT t_mono_ns FROM events WHERE kind = 'begin'");
    long long end = sql_int("SELECT t_mono_ns FROM events WHERE kind = 'end'");
    cr_assert(begin >= begin_after && begin <= begin_before, "begin %lld not in [%lld, %lld]",
              begin, (long long)begin_after, (long long)begin_before);
    cr_assert(end >= end_after && end <= end_before, "end %lld not in [%lld, %lld]", end,
              (long long)end_after, (long long)end_before);
    cr_assert(begin > sql_int("SELECT min(t_mono_ns) FROM samples") &&
                  end < sql_int("SELECT max(t_mono_ns) FROM samples"),
              "the marks are not among the samples on one clock");
}

/* The writer sleeps 400 ms a batch and the ring holds 64: readings the
 * ring cannot take are dropped and counted, so taken = written + dropped
 * exactly and nothing disappears unaccounted. */
Test(sampler, a_slow_writer_costs_counted_drops)
{
    new_log();
    int rc;
    struct eeb_sampler_stats st = sample("sim:watts=3", 1000, 1.0, 64, 400, &rc);
    cr_assert_eq(rc, EEB_OK);
    cr_assert_gt(st.dropped, 0, "no drops with a stalled writer");
    cr_assert_eq(st.written + st.dropped, st.samples, "%llu written + %llu dropped != %llu taken",
                 (unsigned long long)st.written, (unsigned long long)st.dropped,
                 (unsigned long long)st.samples);
    cr_assert_eq(sql_int("SELECT count(*) FROM samples"), (long long)st.written);
}

/* A meter that drops out for reads 50..89 and one that stalls 300 ms:
 * sampling goes on, the failures and missed deadlines are counted, the
 * fault is an event with its reason, and the stage's energy shows the gap
 * that makes it invalid. */
Test(sampler, meter_faults_are_recorded_and_sampling_goes_on)
{
    new_log();
    int rc;
    struct eeb_sampler_stats st = sample("faulty:50+40:sim:watts=4", 100, 2.0, 4096, 0, &rc);
    cr_assert_eq(rc, EEB_OK);
    cr_assert_eq(st.failed, 40);
    cr_assert(strstr(st.first_error, "read 50 fails"), "%s", st.first_error);
    cr_assert_gt(st.samples, 120);
    cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE kind = 'power_fault' AND "
                         "json_extract(payload, '$.reason') LIKE '%read 50 fails%'"),
                 1);
    cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE kind = 'power_recovered'"), 1);
    /* the 0.4 s without readings is one gap of the window */
    long long t0 = sql_int("SELECT min(t_mono_ns) FROM samples");
    long long t1 = sql_int("SELECT max(t_mono_ns) FROM samples");
    long long gap = sql_int("SELECT max(d) FROM (SELECT t_mono_ns - lag(t_mono_ns) OVER "
                            "(ORDER BY t_mono_ns) AS d FROM samples)");
    cr_assert_float_eq(gap / 1e9, 0.41, 0.03);
    cr_assert_gt(t1, t0);

    new_log();
    st = sample("faulty:20~0.3:sim:watts=4", 100, 1.0, 4096, 0, &rc);
    cr_assert_eq(rc, EEB_OK);
    cr_assert_eq(st.failed, 0);
    cr_assert_geq(st.missed, 25, "a 300 ms stall at 100 Hz misses about 30 deadlines, not %llu",
                  (unsigned long long)st.missed);
    cr_assert_gt(st.jitter_max_us, 0);
}

Test(sampler, refuses_bad_settings_and_a_foreign_database)
{
    new_log();
    struct eeb_power_source *src;
    char err[512];
    cr_assert_eq(eeb_power_open("sim:", &src, err, sizeof err), EEB_OK);
    struct eeb_sampler_config cfg;
    eeb_sampler_config_default(&cfg);
    cfg.db_path = db_path;
    cfg.run = 1;
    struct eeb_sampler *s;
    cfg.rate_hz = 20000;
    cr_assert_eq(eeb_sampler_start(src, &cfg, &s, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "20000 Hz (1..10000)"), "%s", err);
    cfg.rate_hz = 100, cfg.ring = 1000;
    cr_assert_eq(eeb_sampler_start(src, &cfg, &s, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "a power of two"), "%s", err);
    cfg.ring = 1024;
    char text[256];
    snprintf(text, sizeof text, "%s/notes.txt", test_tmpdir());
    test_write_file(text, "not a database at all, just some text that is long enough", 58);
    cfg.db_path = text;
    cr_assert_eq(eeb_sampler_start(src, &cfg, &s, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "notes.txt: not an SQLite database"), "%s", err);
    eeb_power_close(src);
}
