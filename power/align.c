/*
 * align.c - how far in time two traces of one load are apart: both
 * resampled on one grid over a window, the normalized cross-correlation
 * of the mean-removed series at each candidate shift, and whether its best
 * says anything (eeb_power.h gives the thresholds and why).  Sections: the
 * grid, the search, the verdict on what it found.
 */
#include "eeb_power.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More points than any window of a run at any step needs (a day at 10 ms). */
#define MAX_POINTS 10000000

/* ---- the grid ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return -floor_div(-a, b);
}

/* s (ns samples) at t0 + k step for k < n, linearly between its samples;
 * every time lies within s's span (the caller clips the grid to it). */
static void resample(const struct eeb_sample *s, size_t ns, int64_t t0, int64_t step, double *out,
                     size_t n)
{
    size_t lo = 0, hi = ns - 1; /* the last sample at or before t0 */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].t_mono_ns <= t0)
            lo = mid;
        else
            hi = mid;
    }
    size_t i = lo;
    for (size_t k = 0; k < n; k++) {
        int64_t t = t0 + (int64_t)k * step;
        while (i + 2 < ns && s[i + 1].t_mono_ns < t)
            i++;
        const struct eeb_sample *a = &s[i], *b = &s[i + 1];
        double f = (double)(t - a->t_mono_ns) / (double)(b->t_mono_ns - a->t_mono_ns);
        f = f < 0 ? 0 : f > 1 ? 1 : f;
        out[k] = a->watts + (b->watts - a->watts) * f;
    }
}

static double mean_of(const double *x, size_t n)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return sum / (double)n;
}

/* Subtracts the mean from x; the root of the sum of squares left. */
static double centre(double *x, size_t n, double mean)
{
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] -= mean;
        ss += x[i] * x[i];
    }
    return sqrt(ss);
}

static int check_trace(const char *name, const struct eeb_sample *s, size_t n, char *err,
                       size_t errlen)
{
    if (n < 2)
        return eeb_errf(err, errlen, EEB_EINVAL, "align: trace %s has %zu samples; two are needed",
                        name, n);
    for (size_t i = 1; i < n; i++)
        if (s[i].t_mono_ns <= s[i - 1].t_mono_ns)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "align: trace %s's sample %zu at %lld ns is not after the one before",
                            name, i, (long long)s[i].t_mono_ns);
    return EEB_OK;
}

/* ---- the verdict ---- */

__attribute__((format(printf, 2, 3))) static void not_determinable(struct eeb_power_shift *out,
                                                                   const char *fmt, ...)
{
    out->determinable = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
}

/* Whether the best correlation r[best] of r[0..n) is located: it falls by
 * the margin on each side that has one, and never climbs back within the
 * margin of the best once it has fallen by it; else says why not. */
static int located(const double *r, size_t n, size_t best, double lo_s, double step_s,
                   struct eeb_power_shift *out)
{
    double top = r[best];
    int fell[2] = {best == 0, best == n - 1}; /* an end has no side to fall on */
    for (int side = 0; side < 2; side++) {
        double valley = top;
        for (size_t k = best; side ? k + 1 < n : k > 0;) {
            k = side ? k + 1 : k - 1;
            valley = fmin(valley, r[k]);
            if (valley <= top - EEB_ALIGN_MARGIN)
                fell[side] = 1;
            if (r[k] >= top - EEB_ALIGN_MARGIN && valley <= r[k] - EEB_ALIGN_MARGIN) {
                not_determinable(out,
                                 "shifts of %+.2f s and %+.2f s match alike (correlation %.2f and "
                                 "%.2f): the power repeats",
                                 lo_s + (double)best * step_s, lo_s + (double)k * step_s, top,
                                 r[k]);
                return 0;
            }
        }
    }
    if (n == 1 || !fell[0] || !fell[1]) {
        not_determinable(out, "the traces match as well over a range of shifts: the power "
                              "changes too slowly over the window to time it");
        return 0;
    }
    return 1;
}

/* ---- the search ---- */

int eeb_power_align(const struct eeb_sample *a, size_t na, const struct eeb_sample *b, size_t nb,
                    const struct eeb_power_align_query *q, struct eeb_power_shift *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->shift_s = out->correlation = out->lo_s = out->hi_s = out->mean_w = out->sd_w = NAN;
    if (q->a1_ns <= q->a0_ns)
        return eeb_errf(err, errlen, EEB_EINVAL, "align: an empty window (%lld..%lld ns)",
                        (long long)q->a0_ns, (long long)q->a1_ns);
    if (!(q->step_s >= 1e-6 && q->step_s <= 3600))
        return eeb_errf(err, errlen, EEB_EINVAL, "align: step_s %g is not 1e-6 .. 3600 s",
                        q->step_s);
    if (!(q->range_s >= 0 && q->range_s <= 3600))
        return eeb_errf(err, errlen, EEB_EINVAL, "align: range_s %g is not 0 .. 3600 s",
                        q->range_s);
    int rc = check_trace("A", a, na, err, errlen);
    if (rc == EEB_OK)
        rc = check_trace("B", b, nb, err, errlen);
    if (rc != EEB_OK)
        return rc;
    int64_t step = llround(q->step_s * 1e9);
    /* the grid: the window, where A has samples */
    int64_t t0 = q->a0_ns > a[0].t_mono_ns ? q->a0_ns : a[0].t_mono_ns;
    int64_t t1 = q->a1_ns < a[na - 1].t_mono_ns ? q->a1_ns : a[na - 1].t_mono_ns;
    int64_t points = t1 < t0 ? 0 : (t1 - t0) / step + 1;
    if (points > MAX_POINTS)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "align: a window of %.0f s at steps of %g s is more than %d points",
                        (double)(t1 - t0) / 1e9, q->step_s, MAX_POINTS);
    out->points = (size_t)points;
    if (points < EEB_ALIGN_MIN_POINTS) {
        not_determinable(out,
                         "the window holds %lld points at steps of %g s where the reference has "
                         "samples, fewer than %d",
                         (long long)points, q->step_s, EEB_ALIGN_MIN_POINTS);
        return EEB_OK;
    }
    /* the shifts k step that B covers: its first sample at or before the
     * grid's start moved by k, its last at or after the grid's end */
    int64_t kmax = llround(q->range_s * 1e9) / step, tend = t0 + (points - 1) * step;
    int64_t klo = ceil_div(b[0].t_mono_ns + q->b_to_a_ns - t0, step);
    int64_t khi = floor_div(b[nb - 1].t_mono_ns + q->b_to_a_ns - tend, step);
    klo = klo < -kmax ? -kmax : klo;
    khi = khi > kmax ? kmax : khi;
    size_t n = (size_t)points, shifts = khi >= klo ? (size_t)(khi - klo + 1) : 0;
    double *ga = malloc(n * sizeof *ga), *gb = malloc(n * sizeof *gb);
    double *r = malloc((shifts ? shifts : 1) * sizeof *r);
    if (!ga || !gb || !r) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "align: %zu points: out of memory", n);
        goto out;
    }
    resample(a, na, t0, step, ga, n);
    out->mean_w = mean_of(ga, n);
    double norm_a = centre(ga, n, out->mean_w);
    out->sd_w = norm_a / sqrt((double)n);
    if (out->sd_w <= EEB_ALIGN_FLAT_FRACTION * fabs(out->mean_w) ||
        out->sd_w < EEB_ALIGN_FLAT_FLOOR_W) {
        not_determinable(out,
                         "the power is flat over the window (standard deviation %.3g W, %.2f %% "
                         "of its mean %.3f W)",
                         out->sd_w, out->mean_w != 0 ? 100 * out->sd_w / fabs(out->mean_w) : 0.0,
                         out->mean_w);
        goto out;
    }
    if (!shifts) {
        not_determinable(out, "trace B covers the window at none of the shifts within %g s",
                         q->range_s);
        goto out;
    }
    out->lo_s = (double)(klo * step) / 1e9;
    out->hi_s = (double)(khi * step) / 1e9;
    size_t best = 0;
    for (size_t i = 0; i < shifts; i++) {
        int64_t k = klo + (int64_t)i;
        /* B at the grid's times moved by k steps, on B's own clock */
        resample(b, nb, t0 + k * step - q->b_to_a_ns, step, gb, n);
        double norm_b = centre(gb, n, mean_of(gb, n)), dot = 0;
        for (size_t j = 0; j < n; j++)
            dot += ga[j] * gb[j];
        r[i] = norm_b > 0 ? dot / (norm_a * norm_b) : 0;
        if (r[i] > r[best])
            best = i;
    }
    out->shift_s = (double)((klo + (int64_t)best) * step) / 1e9;
    out->correlation = r[best];
    out->at_edge = best == 0 || best == shifts - 1;
    if (r[best] < EEB_ALIGN_MIN_CORRELATION)
        not_determinable(out,
                         "the traces match weakly at best (correlation %.2f at %+.2f s, under "
                         "%.2f)",
                         r[best], out->shift_s, EEB_ALIGN_MIN_CORRELATION);
    else if (located(r, shifts, best, out->lo_s, q->step_s, out))
        out->determinable = 1;
out:
    free(ga);
    free(gb);
    free(r);
    return rc;
}
