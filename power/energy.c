/*
 * energy.c - a stage's energy from its samples, and whether the
 * measurement is good enough to judge a run by (eeb_power.h).
 */
#include "eeb_power.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Watts at time t on the segment from a to b (linear). */
static double at(const struct eeb_sample *a, const struct eeb_sample *b, int64_t t)
{
    double span = (double)(b->t_mono_ns - a->t_mono_ns);
    return a->watts + (b->watts - a->watts) * ((double)(t - a->t_mono_ns) / span);
}

int eeb_power_energy(const struct eeb_sample *s, size_t n, int64_t t0, int64_t t1,
                     double interval_s, struct eeb_energy *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (t1 <= t0)
        return eeb_errf(err, errlen, EEB_EINVAL, "energy: an empty window (%lld..%lld ns)",
                        (long long)t0, (long long)t1);
    double gap_ns = 2 * interval_s * 1e9, joules = 0;
    int64_t covered = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const struct eeb_sample *a = &s[i], *b = &s[i + 1];
        if (b->t_mono_ns <= a->t_mono_ns)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "energy: sample %zu at %lld ns is not after the one before", i + 1,
                            (long long)b->t_mono_ns);
        int64_t lo = a->t_mono_ns > t0 ? a->t_mono_ns : t0;
        int64_t hi = b->t_mono_ns < t1 ? b->t_mono_ns : t1;
        if (hi <= lo)
            continue;
        /* the trapezoid of the part of this segment inside the window */
        joules += (at(a, b, lo) + at(a, b, hi)) / 2 * (double)(hi - lo) / 1e9;
        covered += hi - lo;
        if ((double)(b->t_mono_ns - a->t_mono_ns) > gap_ns) {
            out->gaps++;
            out->gap_seconds += (double)(hi - lo) / 1e9;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].t_mono_ns >= t0 && s[i].t_mono_ns <= t1) {
            out->samples++;
            out->peak_w = fmax(out->peak_w, s[i].watts);
        }
    if (covered == 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "energy: no two samples cover any of the window (%zu samples)", n);
    /* The window's edges beyond the first and last sample: a reading holds
     * until the next, so an edge shorter than a gap is held at its nearest
     * sample; a longer one is a gap, and not integrated. */
    int64_t edge[2] = {s[0].t_mono_ns - t0, t1 - s[n - 1].t_mono_ns};
    double held[2] = {s[0].watts, s[n - 1].watts};
    for (int i = 0; i < 2; i++) {
        if (edge[i] <= 0)
            continue;
        if ((double)edge[i] <= gap_ns) {
            joules += held[i] * (double)edge[i] / 1e9;
        } else {
            out->gaps++;
            out->gap_seconds += (double)edge[i] / 1e9;
        }
    }
    out->joules = joules;
    out->seconds = (double)(t1 - t0) / 1e9;
    out->mean_w = joules / out->seconds;
    out->achieved_hz = (double)out->samples / out->seconds;
    return EEB_OK;
}

void eeb_power_validity_default(struct eeb_power_validity *v)
{
    *v = (struct eeb_power_validity){
        .min_rate_hz = 1, .max_gap_fraction = 0.05, .max_drop_fraction = 0.001};
}

/* Appends a reason to why, "; "-separated. */
__attribute__((format(printf, 3, 4))) static void add_reason(char *why, size_t whylen,
                                                             const char *fmt, ...)
{
    size_t at = strlen(why);
    if (at && at + 2 < whylen)
        at += (size_t)snprintf(why + at, whylen - at, "; ");
    va_list ap;
    va_start(ap, fmt);
    if (at < whylen)
        vsnprintf(why + at, whylen - at, fmt, ap);
    va_end(ap);
}

int eeb_power_valid(const struct eeb_energy *e, uint64_t dropped, uint64_t failed,
                    const struct eeb_power_validity *v, char *why, size_t whylen)
{
    why[0] = '\0';
    /* fewer samples than a sampler at the minimum rate takes in the window
     * wherever its ticks fall (floor(seconds x rate)): a 1 Hz meter read
     * once a second over 4.5 s gives 4, which is 0.89 "Hz" but not slow */
    if ((double)e->samples < floor(e->seconds * v->min_rate_hz + 1e-9))
        add_reason(why, whylen, "sampled at %.2f Hz, below the %.2f Hz minimum", e->achieved_hz,
                   v->min_rate_hz);
    double gap_fraction = e->seconds > 0 ? e->gap_seconds / e->seconds : 1;
    if (gap_fraction > v->max_gap_fraction)
        add_reason(why, whylen,
                   "%.1f%% of the window (%.3f s in %llu gaps) has no samples, above %.1f%%",
                   100 * gap_fraction, e->gap_seconds, (unsigned long long)e->gaps,
                   100 * v->max_gap_fraction);
    uint64_t taken = e->samples + dropped;
    if (taken && (double)dropped / (double)taken > v->max_drop_fraction)
        add_reason(why, whylen, "%llu of %llu samples dropped, above %.2f%%",
                   (unsigned long long)dropped, (unsigned long long)taken,
                   100 * v->max_drop_fraction);
    if (failed)
        add_reason(why, whylen, "the meter failed %llu reads", (unsigned long long)failed);
    return why[0] == '\0';
}
