/*
 * test_align.c - the time shift between two traces of one load
 * (eeb_power_align): a known shift of a stepped, ramped load is found
 * within one step, at different sampling rates and through noise; a flat
 * load, a repeating one and one shifted beyond the range searched give no
 * small figure; traces that do not cover every shift are searched where
 * they do.
 */
#include "power/eeb_power.h"
#include "common/eeb_common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STEP_S  0.05
#define RANGE_S 2.0

/* A load of irregular steps (0.3 to 1.5 s long, 3 to 8 W) on a slow ramp,
 * from -10 s to 50 s: no two stretches alike, so one shift fits. */
#define LEVELS 120
static double level_at[LEVELS], level_end[LEVELS];

static void make_load(void)
{
    uint64_t rng = 7;
    double t = -10;
    for (int i = 0; i < LEVELS; i++) {
        level_at[i] = 3 + 5 * (double)(eeb_splitmix64(&rng) >> 11) * 0x1p-53;
        t += 0.3 + 1.2 * (double)(eeb_splitmix64(&rng) >> 11) * 0x1p-53;
        level_end[i] = t;
    }
    cr_assert_gt(t, 50);
}

static double stepped(double t)
{
    int i = 0;
    while (i + 1 < LEVELS && t >= level_end[i])
        i++;
    return level_at[i] + 0.05 * t;
}

/* A standard normal number (Box-Muller). */
static double gaussian(uint64_t *rng)
{
    double u = ((eeb_splitmix64(rng) >> 11) + 1) * 0x1p-53;
    double v = (eeb_splitmix64(rng) >> 11) * 0x1p-53;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* A meter's trace of load(t - lag) at hz from t0 to t1 (seconds of the
 * load's time), stamped on a clock that reads clock_s at the load's 0,
 * with Gaussian noise of sd watts; n samples (free it). */
static struct eeb_sample *meter(double (*load)(double), double lag, double hz, double t0, double t1,
                                double clock_s, double sd, size_t *n)
{
    size_t cap = (size_t)((t1 - t0) * hz) + 2;
    struct eeb_sample *s = calloc(cap, sizeof *s);
    cr_assert(s);
    uint64_t rng = 11;
    *n = 0;
    for (size_t i = 0; i < cap; i++) {
        double t = t0 + (double)i / hz;
        if (t > t1)
            break;
        s[*n] = (struct eeb_sample){.t_mono_ns = llround((t + clock_s) * 1e9),
                                    .watts = load(t - lag) + (sd > 0 ? sd * gaussian(&rng) : 0),
                                    .volts = NAN,
                                    .amps = NAN};
        (*n)++;
    }
    return s;
}

/* The reference (10 Hz, its clock at 1000 s at the load's 0) against the
 * other trace (hz, its clock at 50 s, lagging by lag, noise sd), over the
 * load's 5 s to 25 s, the other covering from b0 to b1 s. */
static struct eeb_power_shift align_traces(double (*load)(double), double lag, double hz, double sd,
                                           double b0, double b1)
{
    size_t na, nb;
    struct eeb_sample *a = meter(load, 0, 10, 0, 30, 1000, 0, &na);
    struct eeb_sample *b = meter(load, lag, hz, b0, b1, 50, sd, &nb);
    struct eeb_power_align_query q = {.a0_ns = 1005000000000,
                                      .a1_ns = 1025000000000,
                                      .b_to_a_ns = 950000000000,
                                      .range_s = RANGE_S,
                                      .step_s = STEP_S};
    struct eeb_power_shift out;
    char err[256];
    cr_assert_eq(eeb_power_align(a, na, b, nb, &q, &out, err, sizeof err), EEB_OK, "%s", err);
    free(a);
    free(b);
    return out;
}

Test(align, a_known_shift_of_a_stepped_load_is_found_within_one_step)
{
    make_load();
    static const double lags[] = {1.2, -0.7, 0};
    for (size_t i = 0; i < sizeof lags / sizeof *lags; i++) {
        struct eeb_power_shift s = align_traces(stepped, lags[i], 10, 0, 0, 30);
        cr_expect(s.determinable, "lag %g: %s", lags[i], s.why);
        cr_expect_leq(fabs(s.shift_s - lags[i]), STEP_S + 1e-9, "lag %g: found %g", lags[i],
                      s.shift_s);
        cr_expect_gt(s.correlation, 0.95, "lag %g", lags[i]);
        cr_expect(!s.at_edge);
        cr_expect_eq(s.lo_s, -RANGE_S);
        cr_expect_eq(s.hi_s, RANGE_S);
        cr_expect_str_eq(s.why, "");
    }
}

/* The server's meter at 10 Hz, the run's log at 100 Hz with 0.3 W of
 * noise: the grid brings both to one time base. */
Test(align, different_rates_and_noise_still_find_the_shift)
{
    make_load();
    struct eeb_power_shift s = align_traces(stepped, 1.2, 100, 0.3, 0, 30);
    cr_expect(s.determinable, "%s", s.why);
    cr_expect_leq(fabs(s.shift_s - 1.2), STEP_S + 1e-9, "found %g", s.shift_s);
    cr_expect_gt(s.correlation, EEB_ALIGN_MIN_CORRELATION);
}

static double constant(double t)
{
    (void)t;
    return 6;
}

/* A constant load (the other's noise is not the load's) says nothing of
 * time: no figure, and why. */
Test(align, a_flat_load_is_not_determinable)
{
    struct eeb_power_shift s = align_traces(constant, 1.2, 100, 0.05, 0, 30);
    cr_expect(!s.determinable);
    cr_expect(strstr(s.why, "the power is flat over the window"), "%s", s.why);
    cr_expect_float_eq(s.mean_w, 6, 1e-9);
    cr_expect(isnan(s.shift_s), "no shift was searched: %g", s.shift_s);
}

/* Noise of 2 % over a constant: not flat, but the two meters' noise does
 * not correlate. */
Test(align, noise_alone_matches_weakly)
{
    size_t na, nb;
    struct eeb_sample *a = meter(constant, 0, 10, 0, 30, 0, 0.12, &na);
    struct eeb_sample *b = meter(constant, 0, 100, 0, 30, 0, 0.12, &nb);
    struct eeb_power_align_query q = {
        .a0_ns = 5000000000, .a1_ns = 25000000000, .range_s = RANGE_S, .step_s = STEP_S};
    struct eeb_power_shift s;
    char err[256];
    cr_assert_eq(eeb_power_align(a, na, b, nb, &q, &s, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!s.determinable);
    cr_expect(strstr(s.why, "match weakly"), "%s", s.why);
    free(a);
    free(b);
}

/* A shift of 3 s, searched within 2 s: never a small figure; at most the
 * end of the range, said to be a bound. */
Test(align, a_shift_beyond_the_range_is_not_reported_as_a_small_one)
{
    make_load();
    struct eeb_power_shift s = align_traces(stepped, 3, 10, 0, 0, 30);
    cr_expect(!(s.determinable && !s.at_edge), "%g s (correlation %g) reported as the shift",
              s.shift_s, s.correlation);
    if (s.determinable)
        cr_expect_float_eq(s.shift_s, RANGE_S, 1e-9);
}

/* Steps of 1 s period: shifts a period apart match alike. */
static double square(double t)
{
    return fmod(t + 100, 1) < 0.5 ? 4 : 6;
}

Test(align, a_repeating_load_is_not_determinable)
{
    struct eeb_power_shift s = align_traces(square, 0.3, 10, 0, 0, 30);
    cr_expect(!s.determinable);
    cr_expect(strstr(s.why, "the power repeats"), "%s", s.why);
}

/* A straight ramp matches itself at every shift once its mean is removed. */
static double ramp(double t)
{
    return 3 + 0.2 * t;
}

Test(align, a_ramp_is_not_determinable)
{
    struct eeb_power_shift s = align_traces(ramp, 1, 10, 0, 0, 30);
    cr_expect(!s.determinable);
    cr_expect(strstr(s.why, "changes too slowly"), "%s", s.why);
}

/* The other trace starting 0.5 s before the window and ending 1.5 s after
 * it: only the shifts it covers are searched, and 1.2 s is among them. */
Test(align, shifts_the_traces_do_not_cover_are_not_searched)
{
    make_load();
    struct eeb_power_shift s = align_traces(stepped, 1.2, 10, 0, 4.5, 26.5);
    cr_expect_float_eq(s.lo_s, -0.5, 1e-9);
    cr_expect_float_eq(s.hi_s, 1.5, 1e-9);
    cr_expect(s.determinable, "%s", s.why);
    cr_expect_leq(fabs(s.shift_s - 1.2), STEP_S + 1e-9, "found %g", s.shift_s);
    /* covering none of them */
    s = align_traces(stepped, 1.2, 10, 0, 10, 20);
    cr_expect(!s.determinable);
    cr_expect(strstr(s.why, "covers the window at none of the shifts"), "%s", s.why);
}

Test(align, a_query_that_cannot_be_searched_names_what)
{
    struct eeb_sample a[3] = {{.t_mono_ns = 0, .watts = 1},
                              {.t_mono_ns = 2000000000, .watts = 2},
                              {.t_mono_ns = 1000000000, .watts = 3}};
    struct eeb_power_align_query q = {.a0_ns = 0, .a1_ns = 1000000000, .range_s = 2, .step_s = 0};
    struct eeb_power_shift s;
    char err[256];
    cr_expect_eq(eeb_power_align(a, 2, a, 2, &q, &s, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "step_s 0"), "%s", err);
    q.step_s = 0.05;
    cr_expect_eq(eeb_power_align(a, 3, a, 2, &q, &s, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "trace A's sample 2 at 1000000000 ns is not after"), "%s", err);
    q.a1_ns = 0;
    cr_expect_eq(eeb_power_align(a, 2, a, 2, &q, &s, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "an empty window"), "%s", err);
}
