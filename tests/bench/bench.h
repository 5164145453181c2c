/*
 * bench.h - what eeb's benchmarks share: a median of repeated timings and
 * the machine-readable "BENCH <name> <value> <unit>" line.
 */
#ifndef EEB_BENCH_H
#define EEB_BENCH_H

#include "eeb_common.h"

#include <stdio.h>
#include <stdlib.h>

#define BENCH_REPS 5

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n doubles (sorts them). */
static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void bench_line(const char *name, double value, const char *unit)
{
    printf("BENCH %s %.6g %s\n", name, value, unit);
    fflush(stdout);
}

static inline double bench_seconds_since(int64_t t0_ns)
{
    return (double)(eeb_mono_ns() - t0_ns) / 1e9;
}

#endif
