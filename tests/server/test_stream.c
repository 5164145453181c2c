/*
 * test_stream.c - an official run's stream judged by when its links
 * reached the server: live, sent all at once after the fact, paused, held
 * back, or cut short.
 */
#include "rundb/eeb_rundb.h"
#include "server/server_int.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define S    1000000000LL       /* a second, in ns */
#define BASE (1700000000LL * S) /* the server's time of the run's 0 */

static char path[256];

static void setup(void)
{
    snprintf(path, sizeof path, "%s/server.db", test_tmpdir());
}

TestSuite(stream, .init = setup);

/*
 * A received run whose fine-tune lasts 10 s: finetune_begin, ten batches
 * of samples a second apart, finetune_end.  Link i (the origin is 0)
 * arrives at arrive(i) seconds after the fine-tune began on the run's
 * clock, or, if that is NAN, with the link before it.
 */
static int64_t received(double (*arrive)(int i, double written))
{
    struct eeb_rundb *db;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s",
                 err);
    const struct eeb_run_new n = {.task = EEB_TASK_CLS,
                                  .backend = "emu",
                                  .config_json = "{}",
                                  .t_max_s = 60,
                                  .p_max_w = 10,
                                  .rules_version = "1",
                                  .received = 1};
    int64_t run;
    char uuid[37];
    cr_assert_eq(eeb_rundb_run_create(db, &n, &run, uuid, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_sample s[10][2];
    struct eeb_rundb_link l[13] = {{.seq = 0, .kind = EEB_LINK_ORIGIN}};
    snprintf(l[0].uuid, sizeof l[0].uuid, "%s", uuid);
    memset(l[0].config_sha256, 'a', 64);
    l[1] = (struct eeb_rundb_link){.kind = EEB_LINK_EVENT, .event = {0, 7, "finetune_begin", NULL}};
    for (int b = 0; b < 10; b++) {
        for (int i = 0; i < 2; i++)
            s[b][i] = (struct eeb_sample){.t_mono_ns = b * S + (i + 1) * S / 2,
                                          .t_utc_ns = 7,
                                          .volts = NAN,
                                          .amps = NAN,
                                          .watts = 4};
        l[2 + b] = (struct eeb_rundb_link){
            .kind = EEB_LINK_SAMPLES, .source = "sim:", .samples = s[b], .nsamples = 2};
    }
    l[12] =
        (struct eeb_rundb_link){.kind = EEB_LINK_EVENT, .event = {10 * S, 7, "finetune_end", NULL}};
    const int64_t base = BASE;
    double at = 0;
    for (int i = 0; i < 13; i++) {
        l[i].seq = i;
        eeb_rundb_link_head(i ? l[i - 1].head : NULL, &l[i], l[i].head);
        double written = i < 2 ? 0 : i == 12 ? 10 : (double)(i - 1);
        double when = arrive(i, written);
        at = isnan(when) ? at : when;
        enum eeb_link_verdict v;
        size_t where;
        int64_t next;
        cr_assert_eq(eeb_rundb_links_add(db, run, &l[i], 1, base + (int64_t)(at * S), &v, &where,
                                         &next, err, sizeof err),
                     EEB_OK, "%s", err);
        cr_assert_eq(v, EEB_LINKS_STORED);
    }
    eeb_rundb_close(db);
    return run;
}

/* The stream judged with an allowance of 5 s, the server having said
 * begin at begun (its time; 0: never). */
static void judged_begun(double (*arrive)(int i, double written), int64_t begun,
                         const char *expected)
{
    int64_t run = received(arrive);
    char why[384], err[512] = "";
    struct eeb_srv_window window;
    cr_assert_eq(eeb_srv_stream_check(path, run, begun, 5, NULL, 0, &window, why, sizeof why, err,
                                      sizeof err),
                 EEB_OK, "%s", err);
    if (!expected)
        cr_expect_str_empty(why);
    else
        cr_expect(strstr(why, expected), "'%s' lacks '%s'", why, expected);
}

/* The same, the server having said begin 50 ms before the run wrote it. */
static void judged(double (*arrive)(int i, double written), const char *expected)
{
    judged_begun(arrive, BASE - S / 20, expected);
}

static double live(int i, double written)
{
    (void)i;
    return written + 0.3;
}

static double all_at_the_end(int i, double written)
{
    (void)i, (void)written;
    return 11;
}

static double paused(int i, double written)
{
    return i >= 6 ? written + 5.5 : written + 0.3; /* links 5 to 6: 6.2 s apart */
}

static double falling_behind(int i, double written)
{
    (void)i;
    return written * 1.7; /* a link every 1.7 s for every second of the run */
}

static double after_begin_at_once(int i, double written)
{
    return i < 2 ? written : 0.5;
}

Test(stream, a_live_stream_passes)
{
    judged(live, NULL);
}

Test(stream, a_record_sent_all_at_once_after_the_fact_is_found)
{
    /* the fine-tune's first link arrives with the rest: 10 s of record
     * in no time */
    judged(all_at_the_end, "link 3 arrived 0.000 s into fine-tuning, but the run wrote it at "
                           "2.000 s: the record was made before it was sent");
    remove(path);
    judged(after_begin_at_once, "the record was made before it was sent");
}

Test(stream, a_pause_longer_than_the_allowance_is_found)
{
    judged(paused, "the stream stopped for 6.200 s during fine-tuning (links 5 to 6); the server "
                   "allows 5 s");
}

Test(stream, a_stream_falling_behind_is_found)
{
    judged(falling_behind, "link 9 arrived 5.600 s after the run wrote it; the server allows 5 s");
}

static double never_ends(int i, double written)
{
    (void)i;
    return written;
}

Test(stream, a_stream_without_the_fine_tunes_end_is_found)
{
    /* its last link gone: no finetune_end arrived */
    int64_t run = received(never_ends);
    test_sql_exec(path, "DELETE FROM links WHERE seq = 12");
    char why[384], err[512] = "";
    struct eeb_srv_window window;
    cr_assert_eq(eeb_srv_stream_check(path, run, BASE, 5, NULL, 0, &window, why, sizeof why, err,
                                      sizeof err),
                 EEB_OK, "%s", err);
    cr_expect(strstr(why, "the stream holds no whole fine-tune"), "%s", why);
}

static double held_back(int i, double written)
{
    (void)i;
    return written + 4; /* every link 4 s late: no pause, none falling behind */
}

/* A stream held back as a whole keeps every link's place relative to the
 * others; the begin the server gave shows it. */
Test(stream, a_stream_held_back_as_a_whole_is_found)
{
    judged(held_back, "the stream was held back: every link of the fine-tune arrived at least "
                      "4.050 s after the server said begin");
    remove(path);
    judged_begun(live, 0, "the run never asked the server to begin its fine-tune");
    remove(path);
    judged_begun(live, BASE + 3 * S,
                 "the run wrote its fine-tune's begin 2.700 s before the server said begin");
}

/* The server down from 4.4 s to 12 s of the run's fine-tune: the links
 * written meanwhile reach it once it is back, the last within a second. */
static double across_a_restart(int i, double written)
{
    (void)i;
    return written < 4.4 - 0.3 ? written + 0.3 : written < 12 ? 12 + written / 100 : written + 0.3;
}

/* A restart of the server's is its fault, not the stream's: what came
 * late because of it is on time counted from the restart; without the
 * restart known, the same arrivals are a pause. */
Test(stream, the_allowance_counts_from_a_restart_of_the_servers)
{
    int64_t run = received(across_a_restart);
    const int64_t restarts[] = {BASE - 100 * S, BASE + 12 * S};
    char why[384], err[512] = "";
    struct eeb_srv_window window;
    cr_assert_eq(eeb_srv_stream_check(path, run, BASE - S / 20, 5, restarts, 2, &window, why,
                                      sizeof why, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_expect_str_empty(why);
    cr_expect(window.whole);
    cr_assert_eq(eeb_srv_stream_check(path, run, BASE - S / 20, 5, NULL, 0, &window, why,
                                      sizeof why, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_expect(strstr(why, "the stream stopped for"), "%s", why);
}
