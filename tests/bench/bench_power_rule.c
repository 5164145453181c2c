/*
 * bench_power_rule.c - how fast the P_max rule judges a long power trace.
 *
 * eeb_score_power_check sweeps the trace once with two indices.  Baseline,
 * in the same run: recomputing each window's integral from scratch (the
 * obvious implementation), on a shorter trace so it finishes.  Throughput
 * in samples judged per second.
 */
#include "bench.h"
#include "scoring/eeb_score.h"

#include <math.h>

#define RATE_HZ 1000
#define LONG_S  3600 /* one hour at 1 kHz */
#define SHORT_S 60

static struct eeb_psample *trace(size_t n)
{
    struct eeb_psample *s = malloc(n * sizeof *s);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift noise */
        s[i].t_ns = (int64_t)i * (1000000000 / RATE_HZ);
        s[i].watts = 6.0 + (double)(x % 1000) / 1000.0;
    }
    return s;
}

/* The obvious rule: every window's integral summed afresh. */
static double naive_worst(const struct eeb_psample *s, size_t n, int64_t window_ns)
{
    double worst = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        __int128 area = 0;
        size_t j = i;
        while (j + 1 < n && s[j].t_ns - s[i].t_ns < window_ns) {
            area += (__int128)(llround(s[j].watts * 1e6) + llround(s[j + 1].watts * 1e6)) *
                    (s[j + 1].t_ns - s[j].t_ns);
            j++;
        }
        if (s[j].t_ns - s[i].t_ns < window_ns)
            break;
        double mean = (double)area / (2e6 * (double)(s[j].t_ns - s[i].t_ns));
        if (mean > worst)
            worst = mean;
    }
    return worst;
}

int main(void)
{
    const struct eeb_power_rule rule = {1.0, 1.0};
    size_t n_long = (size_t)LONG_S * RATE_HZ + 1, n_short = (size_t)SHORT_S * RATE_HZ + 1;
    struct eeb_psample *s = trace(n_long);
    double sweep[BENCH_REPS], naive[BENCH_REPS];
    struct eeb_power_verdict v;
    char err[256];
    double naive_w = 0;
    for (int rep = 0; rep < BENCH_REPS; rep++) {
        int64_t t0 = eeb_mono_ns();
        if (eeb_score_power_check(s, n_long, 10.0, &rule, &v, err, sizeof err)) {
            fprintf(stderr, "bench_power_rule: %s\n", err);
            return 1;
        }
        sweep[rep] = (double)n_long / bench_seconds_since(t0);
        t0 = eeb_mono_ns();
        naive_w = naive_worst(s, n_short, 1000000000);
        naive[rep] = (double)n_short / bench_seconds_since(t0);
    }
    /* Both must agree on the short trace's worst window. */
    eeb_score_power_check(s, n_short, 10.0, &rule, &v, err, sizeof err);
    if (fabs(v.worst_w - naive_w) > 1e-9) {
        fprintf(stderr, "bench_power_rule: sweep %.9f W != naive %.9f W\n", v.worst_w, naive_w);
        return 1;
    }
    double a = bench_median(sweep, BENCH_REPS), b = bench_median(naive, BENCH_REPS);
    printf("P_max rule, 1 s window at %d Hz, median of %d: sweep %.3g samples/s (%d s trace in "
           "%.1f ms), naive %.3g samples/s (%.0fx slower)\n",
           RATE_HZ, BENCH_REPS, a, LONG_S, 1e3 * (double)n_long / a, b, a / b);
    bench_line("power_rule_sweep", a, "samples/s");
    bench_line("power_rule_naive", b, "samples/s");
    bench_line("power_rule_sweep_vs_naive", a / b, "x");
    free(s);
    return 0;
}
