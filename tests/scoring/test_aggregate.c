/*
 * test_aggregate.c - median, Olympic mean and spread of repeated runs.
 */
#include "scoring/eeb_score.h"

#include <criterion/criterion.h>
#include <math.h>

Test(aggregate, five_runs)
{
    const double s[] = {0.61, 0.55, 0.70, 0.58, 0.60};
    struct eeb_aggregate a;
    char err[128];
    cr_assert_eq(eeb_score_aggregate(s, 5, &a, err, sizeof err), EEB_OK);
    cr_assert_eq(a.n, 5);
    cr_assert_float_eq(a.median, 0.60, 1e-15);
    cr_assert_float_eq(a.olympic_mean, (0.58 + 0.60 + 0.61) / 3, 1e-15); /* 0.55, 0.70 dropped */
    cr_assert_float_eq(a.mean, 3.04 / 5, 1e-15);
    cr_assert_float_eq(a.min, 0.55, 0);
    cr_assert_float_eq(a.max, 0.70, 0);
    /* deviations from 0.608: .002 -.058 .092 -.028 -.008; squares sum 0.01268 */
    cr_assert_float_eq(a.stddev, sqrt(0.01268 / 4), 1e-12);
}

Test(aggregate, even_count_median_and_small_n)
{
    const double s[] = {4, 1, 3, 2};
    struct eeb_aggregate a;
    cr_assert_eq(eeb_score_aggregate(s, 4, &a, NULL, 0), EEB_OK);
    cr_assert_float_eq(a.median, 2.5, 0);
    cr_assert_float_eq(a.olympic_mean, 2.5, 0);
    cr_assert_eq(eeb_score_aggregate(s, 2, &a, NULL, 0), EEB_OK);
    cr_assert_float_eq(a.olympic_mean, 2.5, 0); /* n < 3: nothing dropped */
    cr_assert_eq(eeb_score_aggregate(s, 1, &a, NULL, 0), EEB_OK);
    cr_assert_float_eq(a.stddev, 0, 0);
    cr_assert_float_eq(a.median, 4, 0);
}

Test(aggregate, rejects_empty_and_nan)
{
    const double s[] = {0.5, NAN};
    struct eeb_aggregate a;
    cr_assert_eq(eeb_score_aggregate(s, 0, &a, NULL, 0), EEB_EINVAL);
    cr_assert_eq(eeb_score_aggregate(s, 2, &a, NULL, 0), EEB_EINVAL);
}
