/*
 * test_meter_offset.c - the judge's director-mode check of a run's own
 * power log against the server's meter in time (record/judge.c,
 * power/align.c).  A director-mode record is made from a real `eeb run`:
 * its fine-tune stretched to 10 s (the events from finetune_end on moved
 * later), its own log replaced by a load of known steps, and a meter run
 * of the same load on another clock, its window placed as the server
 * places it, named by the run's power.meter_run.  The run's score event
 * loses its verdict: it scored the log the run had, and the judge would
 * hold the new E against it.  The chain no longer holds, so the verdict is
 * the judge's (eeb_run_judge); eeb check is read only for the offset it
 * prints.
 */
#include "common/eeb_common.h"
#include "record/eeb_record.h"
#include "rundb/eeb_rundb.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW_S       10.0
#define METER_CLOCK_NS 7000000000000LL /* the meter's clock less the run's */

/* Seconds from the fine-tune's begin: 5 W, with steps of irregular length
 * and level from 2.5 s to 7.5 s, so that a log 1.5 s late still holds
 * them all inside the window (and its E is the meter's). */
static double stepped(double t)
{
    static const double at[][2] = {{2.5, 7},   {3.1, 4},   {3.5, 8},  {4.6, 3},
                                   {5.0, 6.5}, {5.9, 4.5}, {6.3, 7.5}};
    double w = 5;
    for (size_t i = 0; i < sizeof at / sizeof *at && t < 7.5; i++)
        if (t >= at[i][0])
            w = at[i][1];
    return w;
}

static double flat(double t)
{
    (void)t;
    return 5;
}

static int64_t event_time(const char *db, const char *kind)
{
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT t_mono_ns FROM events WHERE run_id = 1 AND kind = '%s'",
             kind);
    return test_sql_int(db, sql);
}

/* load(t - lag) at hz from 3 s before the window to 3 s after it, t the
 * seconds from begin_ns, into run. */
static void add_trace(struct eeb_rundb *db, int64_t run, const char *source, double (*load)(double),
                      double lag, double hz, int64_t begin_ns)
{
    size_t n = (size_t)((WINDOW_S + 6) * hz) + 1;
    struct eeb_sample *s = calloc(n, sizeof *s);
    cr_assert(s);
    for (size_t i = 0; i < n; i++) {
        double t = -3 + (double)i / hz;
        s[i] = (struct eeb_sample){.t_mono_ns = begin_ns + llround(t * 1e9),
                                   .t_utc_ns = begin_ns + llround(t * 1e9),
                                   .volts = NAN,
                                   .amps = NAN,
                                   .watts = load(t - lag)};
    }
    char err[512];
    cr_assert_eq(eeb_rundb_samples_add(db, run, source, s, n, err, sizeof err), EEB_OK, "%s", err);
    free(s);
}

/* A director-mode record in a fresh db whose own log shows load lag s
 * later than the server's meter does; the run is 1, the meter run 2. */
static const char *director_record(double (*load)(double), double lag)
{
    static char db[300];
    struct test_cls_run in = test_cls_run_inputs(test_tmpdir(), 128, 32);
    snprintf(db, sizeof db, "%s", in.db);
    /* at the rate of the log that replaces its own: its gaps are judged by it */
    struct test_run r = test_eeb((const char *[]){
        "run",         "--task", "cls",  "--finetune", in.ft,      "--test", in.test,
        "--model",     in.model, "--db", db,           "--epochs", "4",      "--power",
        "sim:watts=5", "--rate", "100",  "--clock",    "wall",     "-q",     NULL});
    cr_assert_lt(r.status, 5, "%s%s", r.out, r.err);
    test_run_free(&r);
    /* the fine-tune stretched to WINDOW_S, every later event with it */
    int64_t begin = event_time(db, "finetune_begin"), end = event_time(db, "finetune_end");
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE events SET t_mono_ns = t_mono_ns + %lld WHERE run_id = 1 AND t_mono_ns >= "
             "%lld; UPDATE events SET payload = json_remove(payload, '$.verdict') WHERE run_id = "
             "1 AND kind = 'score'; DELETE FROM samples WHERE run_id = 1",
             (long long)(begin + (int64_t)(WINDOW_S * 1e9) - end), (long long)end);
    test_sql_exec(db, sql);
    cr_assert_eq(event_time(db, "finetune_end") - begin, (int64_t)(WINDOW_S * 1e9));

    struct eeb_rundb *h;
    char err[512];
    cr_assert_eq(eeb_rundb_open(db, EEB_RUNDB_READWRITE, &h, err, sizeof err), EEB_OK, "%s", err);
    add_trace(h, 1, "sim:watts=5", load, lag, 100, begin);
    const struct eeb_run_new meter = {.power_log = 1,
                                      .backend = "none",
                                      .config_json =
                                          "{\"power\": {\"source\": \"ptd://meter:8888\", "
                                          "\"rate_hz\": 10, \"provenance\": \"measured\"}}",
                                      .t_max_s = NAN,
                                      .p_max_w = NAN,
                                      .rules_version = "1"};
    int64_t meter_run;
    char uuid[37];
    cr_assert_eq(eeb_rundb_run_create(h, &meter, &meter_run, uuid, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(meter_run, 2);
    int64_t on_meter = begin + METER_CLOCK_NS;
    add_trace(h, meter_run, "ptd://meter:8888", load, 0, 10, on_meter);
    cr_assert_eq(eeb_rundb_event_add(h, meter_run, on_meter, on_meter, "finetune_begin", NULL, err,
                                     sizeof err),
                 EEB_OK, "%s", err);
    int64_t off_meter = on_meter + (int64_t)(WINDOW_S * 1e9);
    cr_assert_eq(eeb_rundb_event_add(h, meter_run, off_meter, off_meter, "finetune_end", NULL, err,
                                     sizeof err),
                 EEB_OK, "%s", err);
    eeb_rundb_close(h);
    test_sql_exec(db, "UPDATE runs SET config = json_set(config, '$.power.meter_run', 2) WHERE "
                      "id = 1");
    return db;
}

static struct eeb_run_outcome judged(const char *db)
{
    struct eeb_run_outcome o = {0}; /* as the judge's callers give it: why empty */
    char err[512];
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    return o;
}

/* The log 1.5 s late: invalid, with the figures; eeb check prints them. */
Test(meter_offset, a_log_late_against_the_servers_meter_is_invalid, .timeout = 120)
{
    const char *db = director_record(stepped, 1.5);
    struct eeb_run_outcome o = judged(db);
    cr_expect_eq(o.valid, 0);
    cr_expect(o.meter_offset.sought && o.meter_offset.determinable);
    cr_expect_float_eq(o.meter_offset.s, 1.5, 1e-9);
    cr_expect(!o.meter_offset.at_least);
    cr_expect_gt(o.meter_offset.correlation, 0.95);
    char said[200];
    snprintf(said, sizeof said,
             "the run's own log is 1.50 s behind the server's meter (correlation %.2f), more than "
             "the 0.5 s allowed",
             o.meter_offset.correlation);
    assert_has(o.why, said);
    cr_expect(!strstr(o.why, "the run's own log gives E"), "E agrees: %s", o.why);

    struct test_run r = test_eeb((const char *[]){"check", db, "--run", "1", NULL});
    snprintf(said, sizeof said,
             "\n  offset   the run's own log is 1.500 s behind the server's meter (correlation "
             "%.3f)\n",
             o.meter_offset.correlation);
    assert_has(r.out, said);
    assert_has(r.out, "the run's own log is 1.50 s behind the server's meter");
    test_run_free(&r);
    json_t *v = test_eeb_json((const char *[]){"check", db, "--run", "1", "--json", NULL}, 4);
    json_t *mo = json_object_get(v, "meter_offset");
    cr_expect_float_eq(test_json_num(mo, "s"), 1.5, 1e-9);
    cr_expect_gt(test_json_num(mo, "correlation"), 0.9);
    cr_expect(json_is_null(json_object_get(mo, "note")));
    json_decref(v);
}

/* The log on time: valid, and its offset (0) said. */
Test(meter_offset, a_log_on_time_with_the_servers_meter_is_valid, .timeout = 120)
{
    const char *db = director_record(stepped, 0);
    struct eeb_run_outcome o = judged(db);
    cr_expect_eq(o.valid, 1, "%s", o.why);
    cr_expect(o.meter_offset.sought && o.meter_offset.determinable, "%s", o.meter_offset.note);
    cr_expect_float_eq(o.meter_offset.s, 0, 1e-9);
    cr_expect_gt(o.meter_offset.correlation, 0.95);
    cr_expect(!strstr(o.why, "own log"), "%s", o.why);
}

/* A constant load times nothing: the run stays valid, and the offset is
 * said to be not determinable, with no figure. */
Test(meter_offset, a_flat_load_leaves_the_offset_undetermined, .timeout = 120)
{
    const char *db = director_record(flat, 1.5);
    struct eeb_run_outcome o = judged(db);
    cr_expect_eq(o.valid, 1, "%s", o.why);
    cr_expect(o.meter_offset.sought && !o.meter_offset.determinable);
    cr_expect(isnan(o.meter_offset.s));
    assert_has(o.meter_offset.note, "the power is flat over the window");
    struct test_run r = test_eeb((const char *[]){"check", db, "--run", "1", NULL});
    assert_has(r.out, "\n  offset   not determinable: the power is flat over the window");
    test_run_free(&r);
    json_t *v = test_eeb_json((const char *[]){"check", db, "--run", "1", "--json", NULL}, 4);
    json_t *mo = json_object_get(v, "meter_offset");
    cr_expect(json_is_null(json_object_get(mo, "s")));
    cr_expect(strstr(json_string_value(json_object_get(mo, "note")), "flat"));
    json_decref(v);
}
