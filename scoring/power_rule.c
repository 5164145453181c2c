/*
 * power_rule.c - the P_max rule over a power trace (DESIGN.md §3).
 *
 * A run fails if any window of at least rule->window_s seconds has a mean
 * power above P_max, or if the trace was sampled more slowly than the rules
 * allow.  Windows start at each sample and end at the first sample at least
 * window_s later; with a meter sampling at a rate that divides the window,
 * every window spans exactly window_s.
 *
 * The mean is the trapezoidal integral divided by the span.  Watts are
 * quantized to integer microwatts (finer than any meter resolves), so
 *
 *     mean > P_max  <=>  sum((p_a + p_b) * dt) > 2 * P_max * span
 *
 * is decided exactly in 128-bit integers (at most 2e12 uW times 9.2e18 ns):
 * a trace held at exactly P_max passes, whatever the summation order or the
 * machine.  Two indices sweep the trace once, so an hour at 1 kHz takes
 * milliseconds.
 */
#include "eeb_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ABS_WATTS 1e6 /* a reading beyond a megawatt is a broken meter */

typedef __int128 wide;

static int64_t to_uw(double watts)
{
    return llround(watts * 1e6);
}

static void add_reason(struct eeb_power_verdict *v, const char *text)
{
    size_t n = strlen(v->reason);
    snprintf(v->reason + n, sizeof v->reason - n, "%s%s", n ? "; " : "", text);
}

int eeb_score_power_check(const struct eeb_psample *s, size_t n, double p_max_w,
                          const struct eeb_power_rule *rule, struct eeb_power_verdict *out,
                          char *err, size_t errlen)
{
    if (n < 2)
        return eeb_errf(err, errlen, EEB_EINVAL, "power trace has %zu samples; the rule needs 2",
                        n);
    if (!isfinite(p_max_w) || p_max_w <= 0 || p_max_w > MAX_ABS_WATTS)
        return eeb_errf(err, errlen, EEB_EINVAL, "P_max = %g W is not a positive power", p_max_w);
    if (!isfinite(rule->window_s) || rule->window_s <= 0 || rule->window_s > 1e6)
        return eeb_errf(err, errlen, EEB_EINVAL, "power window %g s is not a positive duration",
                        rule->window_s);
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(s[i].watts) || fabs(s[i].watts) > MAX_ABS_WATTS)
            return eeb_errf(err, errlen, EEB_EINVAL, "power sample %zu: %g W is not a reading", i,
                            s[i].watts);
        if (i && s[i].t_ns <= s[i - 1].t_ns)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "power sample %zu: time %lld ns does not follow %lld ns", i,
                            (long long)s[i].t_ns, (long long)s[i - 1].t_ns);
    }

    struct eeb_power_verdict v;
    memset(&v, 0, sizeof v);
    const int64_t window_ns = llround(rule->window_s * 1e9);
    const int64_t span_ns = s[n - 1].t_ns - s[0].t_ns;
    const wide p_max_uw = to_uw(p_max_w);

    /* Sweep: [i, j] is the shortest run from sample i spanning window_ns;
     * area is its doubled integral in microwatt-nanoseconds. */
    wide area = 0;
    long double worst_mean = -INFINITY;
    size_t worst_i = 0, worst_j = 0, j = 0;
    int exceeded = 0;
    v.short_series = span_ns < window_ns;
    for (size_t i = 0; i + 1 < n; i++) {
        if (i) /* j >= i here: the previous sweep advanced j past i - 1 */
            area -= (wide)(to_uw(s[i - 1].watts) + to_uw(s[i].watts)) * (s[i].t_ns - s[i - 1].t_ns);
        while (j + 1 < n && s[j].t_ns - s[i].t_ns < window_ns) {
            area += (wide)(to_uw(s[j].watts) + to_uw(s[j + 1].watts)) * (s[j + 1].t_ns - s[j].t_ns);
            j++;
        }
        int64_t span = s[j].t_ns - s[i].t_ns;
        if (!v.short_series && span < window_ns)
            break; /* the trace ends before this window would */
        v.n_windows++;
        if (area > 2 * p_max_uw * span)
            exceeded = 1;
        long double mean = (long double)area / (long double)span;
        if (mean > worst_mean) {
            worst_mean = mean;
            worst_i = i;
            worst_j = j;
        }
        if (v.short_series)
            break; /* one window: the whole trace */
    }

    v.worst_w = (double)(worst_mean / 2e6L);
    v.worst_t0_s = (double)(s[worst_i].t_ns - s[0].t_ns) / 1e9;
    v.worst_t1_s = (double)(s[worst_j].t_ns - s[0].t_ns) / 1e9;
    v.rate_hz = (double)(n - 1) / ((double)span_ns / 1e9);
    v.pass = 1;

    char text[200];
    if (exceeded) {
        v.pass = 0;
        snprintf(text, sizeof text, "mean power %.6f W over %.3f-%.3f s exceeds P_max %.3f W%s",
                 v.worst_w, v.worst_t0_s, v.worst_t1_s, p_max_w,
                 v.short_series ? " (trace shorter than one window)" : "");
        add_reason(&v, text);
    }
    /* fewer samples than a sampler at the minimum rate takes over the span,
     * give or take the one its ticks' placement decides: a meter read once a
     * second, its samples placed on another clock, spans a few microseconds
     * more than n - 1 seconds, which is not a slow meter */
    if (rule->min_rate_hz > 0 && (double)n < (double)span_ns / 1e9 * rule->min_rate_hz) {
        v.pass = 0;
        snprintf(text, sizeof text, "sample rate %.3f Hz is below the rules' minimum %.3f Hz",
                 v.rate_hz, rule->min_rate_hz);
        add_reason(&v, text);
    }
    *out = v;
    return EEB_OK;
}
