/*
 * test_power.c - power sources, the sample ring, the sampler into a real
 * run database, and energy: exact on piecewise-linear signals, gaps and
 * drops accounted, faults recorded.
 */
#include "power/eeb_power.h"
#include "power/power_int.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double read_at(struct eeb_power_source *s, double t_s, int *rc)
{
    struct eeb_sample x = {.volts = NAN, .amps = NAN};
    char err[256];
    *rc = s->ops->read(s, 1000000000 + (int64_t)llround(t_s * 1e9), &x, err, sizeof err);
    return x.watts;
}

/* ---- energy ---- */

/* A piecewise-linear signal: corners (t s, W). */
static const double corner[][2] = {{0, 2}, {1, 6}, {1.5, 6}, {2.25, 0.5}, {4, 3.5}, {5, 3.5}};
#define CORNERS (sizeof corner / sizeof corner[0])

static double signal_at(double t)
{
    for (size_t i = 0; i + 1 < CORNERS; i++)
        if (t <= corner[i + 1][0])
            return corner[i][1] + (corner[i + 1][1] - corner[i][1]) * (t - corner[i][0]) /
                                      (corner[i + 1][0] - corner[i][0]);
    return corner[CORNERS - 1][1];
}

/* Its integral from a to b, segment by segment in closed form. */
static double exact_joules(double a, double b)
{
    double j = 0;
    for (size_t i = 0; i + 1 < CORNERS; i++) {
        double lo = fmax(a, corner[i][0]), hi = fmin(b, corner[i + 1][0]);
        if (hi > lo)
            j += (signal_at(lo) + signal_at(hi)) / 2 * (hi - lo);
    }
    return j;
}

Test(energy, piecewise_linear_signals_integrate_exactly)
{
    /* samples at every corner and at 7 ms steps between them */
    static struct eeb_sample s[1000];
    size_t n = 0;
    for (size_t i = 0; i + 1 < CORNERS; i++)
        for (double t = corner[i][0]; t < corner[i + 1][0] - 1e-9; t += 0.007) {
            int64_t ns = (int64_t)llround(t * 1e9);
            s[n++] = (struct eeb_sample){.t_mono_ns = ns, .watts = signal_at(ns / 1e9)};
        }
    s[n++] = (struct eeb_sample){.t_mono_ns = 5000000000, .watts = 3.5};
    /* windows that start and end between samples, and the whole */
    const double windows[][2] = {
        {0, 5}, {0.0123, 4.9871}, {1.2, 1.4}, {2.2, 2.3}, {3.0031, 3.0032}};
    for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
        int64_t t0 = (int64_t)llround(windows[w][0] * 1e9),
                t1 = (int64_t)llround(windows[w][1] * 1e9);
        struct eeb_energy e;
        char err[256];
        cr_assert_eq(eeb_power_energy(s, n, t0, t1, 0.007, &e, err, sizeof err), EEB_OK, "%s", err);
        double want = exact_joules(t0 / 1e9, t1 / 1e9);
        cr_assert_leq(fabs(e.joules - want), 1e-9 * want, "window %zu: %.15g J, exactly %.15g J", w,
                      e.joules, want);
        cr_assert_float_eq(e.mean_w, want / e.seconds, 1e-9 * e.mean_w);
        cr_assert_eq(e.gaps, 0, "window %zu: %llu gaps", w, (unsigned long long)e.gaps);
    }
}

Test(energy, gaps_are_flagged_and_make_a_run_invalid)
{
    /* 10 ms samples of 4 W over 1 s, with a 50 ms hole and a 20 ms one */
    static struct eeb_sample s[200];
    size_t n = 0;
    for (int ms = 0; ms <= 1000; ms += 10)
        if (!(ms > 300 && ms < 350) && ms != 700)
            s[n++] = (struct eeb_sample){.t_mono_ns = ms * 1000000LL, .watts = 4};
    struct eeb_energy e;
    char err[256], why[512];
    cr_assert_eq(eeb_power_energy(s, n, 0, 1000000000, 0.010, &e, err, sizeof err), EEB_OK);
    cr_assert_float_eq(e.joules, 4.0, 1e-12);
    cr_assert_eq(e.gaps, 1, "only the 50 ms hole is over twice the interval");
    cr_assert_float_eq(e.gap_seconds, 0.05, 1e-12);
    struct eeb_power_validity v;
    eeb_power_validity_default(&v);
    cr_assert(eeb_power_valid(&e, 0, 0, &v, why, sizeof why), "%s", why); /* 5 % allowed */
    v.max_gap_fraction = 0.01;
    cr_assert_not(eeb_power_valid(&e, 0, 0, &v, why, sizeof why));
    cr_assert(strstr(why, "5.0% of the window (0.050 s in 1 gaps) has no samples"), "%s", why);
    cr_assert_not(eeb_power_valid(&e, 1, 3, &v, why, sizeof why));
    cr_assert(strstr(why, "1 of 97 samples dropped") && strstr(why, "failed 3 reads"), "%s", why);

    /* an edge shorter than a gap is held at the nearest sample; the part
     * of a window the samples do not reach is a gap */
    cr_assert_eq(eeb_power_energy(s, n, -15000000, 1015000000, 0.010, &e, err, sizeof err), EEB_OK);
    cr_assert_float_eq(e.joules, 4 * 1.03, 1e-12);
    cr_assert_eq(e.gaps, 1);
    cr_assert_eq(eeb_power_energy(s, n, 500000000, 1500000000, 0.010, &e, err, sizeof err), EEB_OK);
    cr_assert_float_eq(e.gap_seconds, 0.5, 1e-12);
    cr_assert_float_eq(e.joules, 2.0, 1e-12);
    cr_assert_eq(eeb_power_energy(s, n, 2000000000, 3000000000, 0.010, &e, err, sizeof err),
                 EEB_EINVAL);
    cr_assert(strstr(err, "no two samples cover any of the window"), "%s", err);
}

/* ---- the ring ---- */

Test(ring, keeps_order_and_refuses_when_full)
{
    struct power_ring r;
    cr_assert_eq(power_ring_init(&r, 6), EEB_EINVAL);
    cr_assert_eq(power_ring_init(&r, 4), EEB_OK);
    struct eeb_sample x = {0}, out[8];
    for (int i = 0; i < 4; i++) {
        x.t_mono_ns = i;
        cr_assert_eq(power_ring_push(&r, &x), 1);
    }
    cr_assert_eq(power_ring_push(&r, &x), 0, "a full ring took a fifth sample");
    cr_assert_eq(power_ring_pop(&r, out, 3), 3);
    cr_assert(out[0].t_mono_ns == 0 && out[2].t_mono_ns == 2);
    x.t_mono_ns = 4;
    cr_assert_eq(power_ring_push(&r, &x), 1); /* wraps */
    cr_assert_eq(power_ring_pop(&r, out, 8), 2);
    cr_assert(out[0].t_mono_ns == 3 && out[1].t_mono_ns == 4);
    power_ring_free(&r);
}

struct producer {
    struct power_ring *r;
    uint64_t n, refused;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct eeb_sample x = {0};
    for (uint64_t i = 0; i < p->n;) {
        x.t_mono_ns = (int64_t)i;
        if (power_ring_push(p->r, &x))
            i++;
        else
            p->refused++;
    }
    return NULL;
}

/* Two threads, a small ring: every sample arrives once, in order. */
Test(ring, one_producer_one_consumer_lose_nothing)
{
    struct power_ring r;
    cr_assert_eq(power_ring_init(&r, 64), EEB_OK);
    struct producer p = {&r, 2000000, 0};
    pthread_t t;
    pthread_create(&t, NULL, produce, &p);
    struct eeb_sample out[100];
    uint64_t expect = 0;
    while (expect < p.n) {
        size_t got = power_ring_pop(&r, out, 100);
        for (size_t i = 0; i < got; i++, expect++)
            cr_assert_eq((uint64_t)out[i].t_mono_ns, expect, "sample %llu out of order",
                         (unsigned long long)expect);
    }
    pthread_join(t, NULL);
    cr_assert_eq(power_ring_pop(&r, out, 100), 0);
    power_ring_free(&r);
}

/* ---- sources ---- */

Test(sources, sim_profiles)
{
    int rc;
    struct eeb_power_source *s = test_power_open("sim:watts=7.5,volts=12");
    cr_assert_eq(s->provenance, EEB_MODELED);
    cr_assert_float_eq(read_at(s, 0, &rc), 7.5, 1e-12);
    struct eeb_sample x;
    char err[128];
    s->ops->read(s, 2000000000, &x, err, sizeof err);
    cr_assert_float_eq(x.amps, 7.5 / 12, 1e-12);
    eeb_power_close(s);

    s = test_power_open("sim:profile=step,low=2,high=9,period=2");
    cr_assert_float_eq(read_at(s, 0, &rc), 2, 0);
    cr_assert_float_eq(read_at(s, 0.99, &rc), 2, 0);
    cr_assert_float_eq(read_at(s, 1.01, &rc), 9, 0);
    cr_assert_float_eq(read_at(s, 2.5, &rc), 2, 0);
    eeb_power_close(s);

    s = test_power_open("sim:profile=sine,mean=6,amp=2,period=4");
    read_at(s, 0, &rc);
    cr_assert_float_eq(read_at(s, 1, &rc), 8, 1e-9);
    cr_assert_float_eq(read_at(s, 3, &rc), 4, 1e-9);
    eeb_power_close(s);

    /* noise: seeded, zero-mean, of the given deviation */
    s = test_power_open("sim:watts=10,noise=0.5,seed=3");
    double sum = 0, sq = 0;
    for (int i = 0; i < 20000; i++) {
        double w = read_at(s, i * 0.001, &rc) - 10;
        sum += w, sq += w * w;
    }
    cr_assert_leq(fabs(sum / 20000), 0.02);
    cr_assert_float_eq(sqrt(sq / 20000), 0.5, 0.02);
    eeb_power_close(s);

    /* model: a level the run moves, with its noise; no other source moves */
    s = test_power_open("sim:profile=model,watts=3");
    cr_assert_float_eq(read_at(s, 0, &rc), 3, 0);
    cr_assert_eq(eeb_power_source_control(s, &(struct eeb_power_control){7.5, 0}, NULL, 0), EEB_OK);
    cr_assert_float_eq(read_at(s, 0.5, &rc), 7.5, 0);
    cr_assert_eq(eeb_power_source_control(s, &(struct eeb_power_control){7.5, 0.075}, NULL, 0),
                 EEB_OK);
    double lo = 1e9, hi = 0;
    for (int i = 0; i < 1000; i++) {
        double w = read_at(s, 1 + i * 0.001, &rc);
        lo = fmin(lo, w), hi = fmax(hi, w);
    }
    cr_assert(lo < 7.45 && hi > 7.55 && lo > 7.0 && hi < 8.0, "noise %g..%g W", lo, hi);
    eeb_power_close(s);
    s = test_power_open("sim:watts=3");
    cr_assert_eq(eeb_power_source_control(s, &(struct eeb_power_control){7.5, 0}, err, sizeof err),
                 EEB_ENOTSUP);
    cr_expect_str_eq(err, "power source 'sim:watts=3' takes no control (sim:profile=model does)");
    cr_assert_float_eq(read_at(s, 0, &rc), 3, 0);
    eeb_power_close(s);

    test_power_open_fails("sim:profile=square", EEB_EINVAL,
                          "profile 'square' (const, step, sine or model)");
    test_power_open_fails("sim:watts=lots", EEB_EINVAL,
                          "sim:watts=lots': watts: 'lots' is not a number");
    test_power_open_fails("sim:colour=blue", EEB_EINVAL, "unknown option 'colour'");
    test_power_open_fails("sim:period=0", EEB_EINVAL, "period must be > 0");
    test_power_open_fails("gpib:7", EEB_EINVAL,
                          "'gpib:7': unknown scheme (known: sim:, replay:, faulty:");
}

Test(sources, replay_reads_a_trace_and_names_bad_lines)
{
    char path[256];
    snprintf(path, sizeof path, "%s/trace.csv", test_tmpdir());
    const char *trace = "t_s,watts,volts,amps\n# a comment\n\n10,4,12,0.3333\n11,6,12,0.5\n"
                        "13,2,12,0.1667\r\n";
    test_write_file(path, trace, strlen(trace));
    char uri[300];
    snprintf(uri, sizeof uri, "replay:%s", path);
    struct eeb_power_source *s = test_power_open(uri);
    cr_assert_eq(s->provenance, EEB_DECLARED);
    int rc;
    cr_assert_float_eq(read_at(s, 0, &rc), 4, 1e-12); /* the trace's start, t = 10 */
    cr_assert_float_eq(read_at(s, 0.5, &rc), 5, 1e-9);
    cr_assert_float_eq(read_at(s, 2, &rc), 4, 1e-9);
    cr_assert_float_eq(read_at(s, 3, &rc), 2, 1e-9);
    cr_assert_eq(rc, EEB_OK);
    read_at(s, 3.01, &rc);
    cr_assert_eq(rc, EEB_EDEVICE, "a read past the end");
    eeb_power_close(s);

    const char *bad[][2] = {
        {"t_s,watts\n0,1\n1,x\n", ":3: column 2 'watts': 'x' is not a number"},
        {"0,1\n\n2,1\n1,1\n", ":4: time 1 is not after line 3's (times must increase)"},
        {"0,1,2\n", ":1: '0,1,2': 3 numbers without a header"},
        {"0,1\n", "1 readings; a trace needs two"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        test_write_file(path, bad[i][0], strlen(bad[i][0]));
        test_power_open_fails(uri, EEB_EFORMAT, bad[i][1]);
    }
    test_power_open_fails("replay:/nonexistent.csv", EEB_EIO, "/nonexistent.csv");
}

/* Which of reads 1..8 fail (a bit each). */
static unsigned failures(const char *uri)
{
    struct eeb_power_source *s = test_power_open(uri);
    unsigned mask = 0;
    int rc;
    for (int i = 0; i < 8; i++) {
        read_at(s, i * 0.01, &rc);
        mask |= (rc != EEB_OK) << i;
    }
    eeb_power_close(s);
    return mask;
}

Test(sources, faulty_fails_or_stalls_the_reads_it_is_told)
{
    cr_assert_eq(failures("faulty:3:sim:watts=2"), 0x04);
    cr_assert_eq(failures("faulty:2+3:sim:"), 0x0e);
    cr_assert_eq(failures("faulty:6*:sim:"), 0xe0);
    struct eeb_power_source *s = test_power_open("faulty:2~0.2:sim:watts=3");
    int rc;
    read_at(s, 0, &rc);
    int64_t t = eeb_mono_ns();
    cr_assert_float_eq(read_at(s, 0.01, &rc), 3, 0);
    cr_assert_geq(eeb_mono_ns() - t, 200000000, "read 2 did not stall");
    eeb_power_close(s);
    test_power_open_fails("faulty:0:sim:", EEB_EINVAL, "faulty:WHEN:URI");
    test_power_open_fails("faulty:3x:sim:", EEB_EINVAL, "faulty:WHEN:URI");
    test_power_open_fails("faulty:3", EEB_EINVAL, "faulty:WHEN:URI");
    test_power_open_fails("faulty:3:gpib:", EEB_EINVAL, "unknown scheme");
}
