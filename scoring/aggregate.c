/*
 * aggregate.c - summary of N repeated runs of one submission: median,
 * Olympic mean (the best and the worst dropped when N >= 3, as judges and
 * MLPerf Training's scoring do), plain mean, range and standard deviation.
 */
#include "eeb_score.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int eeb_score_aggregate(const double *x, size_t n, struct eeb_aggregate *out, char *err,
                        size_t errlen)
{
    if (n == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "no runs to aggregate");
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return eeb_errf(err, errlen, EEB_EINVAL, "run %zu: value %g is not finite", i, x[i]);
    double *v = malloc(n * sizeof *v);
    if (!v)
        return eeb_errf(err, errlen, EEB_ENOMEM, "aggregate: out of memory");
    memcpy(v, x, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_double);

    struct eeb_aggregate a = {.n = n, .min = v[0], .max = v[n - 1]};
    a.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    a.mean = sum / (double)n;
    a.olympic_mean = a.mean;
    if (n >= 3) {
        double trimmed = 0;
        for (size_t i = 1; i + 1 < n; i++)
            trimmed += v[i];
        a.olympic_mean = trimmed / (double)(n - 2);
    }
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - a.mean) * (v[i] - a.mean);
    a.stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    free(v);
    *out = a;
    return EEB_OK;
}
