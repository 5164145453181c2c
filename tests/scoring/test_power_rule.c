/*
 * test_power_rule.c - the P_max moving-window rule over power traces.
 */
#include "scoring/eeb_score.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct eeb_power_rule one_second = {.window_s = 1.0, .min_rate_hz = 1.0};

/* n samples at rate_hz, all at watts. */
static struct eeb_psample *trace(size_t n, double rate_hz, double watts)
{
    struct eeb_psample *s = malloc(n * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        s[i].t_ns = 5000000000LL + (int64_t)llround((double)i * 1e9 / rate_hz);
        s[i].watts = watts;
    }
    return s;
}

/* Sets the samples in [t0, t1) seconds (from the first) to watts. */
static void burst(struct eeb_psample *s, size_t n, double t0, double t1, double watts)
{
    for (size_t i = 0; i < n; i++) {
        double t = (double)(s[i].t_ns - s[0].t_ns) / 1e9;
        if (t >= t0 && t < t1)
            s[i].watts = watts;
    }
}

static struct eeb_power_verdict check(const struct eeb_psample *s, size_t n, double p_max,
                                      const struct eeb_power_rule *rule)
{
    struct eeb_power_verdict v;
    char err[256] = "";
    cr_assert_eq(eeb_score_power_check(s, n, p_max, rule, &v, err, sizeof err), EEB_OK, "%s", err);
    return v;
}

Test(power_rule, constant_at_budget_passes)
{
    struct eeb_psample *s = trace(10001, 1000, 10.0); /* 10 s at 1 kHz */
    struct eeb_power_verdict v = check(s, 10001, 10.0, &one_second);
    cr_assert(v.pass, "%s", v.reason);
    cr_assert_eq(v.n_windows, 9001); /* one per start sample with a full second after it */
    cr_assert_float_eq(v.worst_w, 10.0, 1e-12);
    cr_assert_float_eq(v.rate_hz, 1000, 1e-9);
    free(s);
}

Test(power_rule, budget_equality_is_exact_despite_rounding)
{
    /* 0.1 + 0.2 is 0.30000000000000004 in double: a floating mean would
     * call this trace over a 0.3 W budget. */
    struct eeb_psample *s = trace(3001, 1000, 0.1 + 0.2);
    cr_assert(check(s, 3001, 0.3, &one_second).pass);
    free(s);
}

Test(power_rule, sustained_excess_fails_and_is_located)
{
    struct eeb_psample *s = trace(10001, 1000, 5.0);
    burst(s, 10001, 3.0, 4.5, 12.0);
    struct eeb_power_verdict v = check(s, 10001, 10.0, &one_second);
    cr_assert_not(v.pass);
    cr_assert_float_eq(v.worst_w, 12.0, 1e-9);
    cr_assert(v.worst_t0_s >= 3.0 && v.worst_t0_s <= 3.5, "worst window at %g s", v.worst_t0_s);
    cr_assert_float_eq(v.worst_t1_s - v.worst_t0_s, 1.0, 1e-9);
    cr_assert_not_null(strstr(v.reason, "exceeds P_max 10.000 W"), "%s", v.reason);
    free(s);
}

Test(power_rule, short_spike_is_averaged_out)
{
    /* 200 ms at 20 W on a 5 W base: the 1 s mean peaks near 8 W. */
    struct eeb_psample *s = trace(10001, 1000, 5.0);
    burst(s, 10001, 2.0, 2.2, 20.0);
    struct eeb_power_verdict v = check(s, 10001, 10.0, &one_second);
    cr_assert(v.pass, "%s", v.reason);
    cr_assert_float_eq(v.worst_w, 8.0, 0.02);
    free(s);
}

Test(power_rule, window_length_comes_from_the_rule)
{
    /* The same spike fails a 100 ms window. */
    struct eeb_psample *s = trace(10001, 1000, 5.0);
    burst(s, 10001, 2.0, 2.2, 20.0);
    struct eeb_power_rule fast = {.window_s = 0.1, .min_rate_hz = 1.0};
    cr_assert_not(check(s, 10001, 10.0, &fast).pass);
    free(s);
}

Test(power_rule, trace_shorter_than_window)
{
    struct eeb_psample *s = trace(501, 1000, 11.0); /* 0.5 s */
    struct eeb_power_verdict v = check(s, 501, 10.0, &one_second);
    cr_assert(v.short_series);
    cr_assert_not(v.pass);
    cr_assert_eq(v.n_windows, 1);
    cr_assert_not_null(strstr(v.reason, "shorter than one window"), "%s", v.reason);
    free(s);
}

Test(power_rule, slow_sampling_fails)
{
    struct eeb_psample *s = trace(31, 0.5, 3.0); /* one sample every 2 s */
    struct eeb_power_verdict v = check(s, 31, 10.0, &one_second);
    cr_assert_not(v.pass);
    cr_assert_float_eq(v.rate_hz, 0.5, 1e-12);
    cr_assert_not_null(strstr(v.reason, "sample rate 0.500 Hz is below"), "%s", v.reason);
    cr_assert_null(strstr(v.reason, "exceeds"), "%s", v.reason);
    free(s);
}

Test(power_rule, rejects_bad_traces)
{
    struct eeb_psample *s = trace(10, 100, 3.0);
    struct eeb_power_verdict v;
    char err[256];
    cr_assert_eq(eeb_score_power_check(s, 1, 10, &one_second, &v, err, sizeof err), EEB_EINVAL);
    s[4].t_ns = s[3].t_ns;
    cr_assert_eq(eeb_score_power_check(s, 10, 10, &one_second, &v, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, "sample 4"), "%s", err);
    s[4].t_ns = s[3].t_ns + 1;
    s[7].watts = NAN;
    cr_assert_eq(eeb_score_power_check(s, 10, 10, &one_second, &v, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, "sample 7"), "%s", err);
    free(s);
}
