/*
 * test_score.c - M_t, M_p, S and the weights against values computed by hand.
 */
#include "scoring/eeb_score.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* The README example: M_u = (0.30 + 0.19 + 0.49 + 0.19) / 4 = 0.2925. */
static struct eeb_score_input example(void)
{
    struct eeb_score_input in = {
        .m_u = 0.2925,
        .t_s = 450,
        .t_max_s = 600,
        .energy_j = 2700,
        .p_max_w = 10,
        .m_s = 0.81,
        .w = {0.1, 0.1, 0.4, 0.4},
    };
    return in;
}

static struct eeb_score score(const struct eeb_score_input *in)
{
    struct eeb_score s;
    char err[256] = "";
    cr_assert_eq(eeb_score_compute(in, &s, err, sizeof err), EEB_OK, "%s", err);
    return s;
}

Test(score, readme_example)
{
    struct eeb_score_input in = example();
    struct eeb_score s = score(&in);
    cr_assert_float_eq(s.m_t, 0.75, 1e-15);
    cr_assert_float_eq(s.m_p, 0.6, 1e-15); /* 2700 / (10 * 450) */
    cr_assert_float_eq(s.mean_power_w, 6.0, 1e-15);
    /* 1 - [0.1*0.2925 + 0.1*0.75 + 0.4*0.6 + 0.4*0.19] = 1 - 0.42025 */
    cr_assert_float_eq(s.s, 0.57975, 1e-12);
    cr_assert(s.pass);
    cr_assert_not(s.t_clamped);
}

Test(score, time_over_budget_is_clamped)
{
    struct eeb_score_input in = example();
    in.t_s = 700;
    in.energy_j = 3000;
    struct eeb_score s = score(&in);
    cr_assert(s.t_clamped);
    cr_assert_float_eq(s.t_s, 600, 0);
    cr_assert_float_eq(s.m_t, 1.0, 0);
    cr_assert_float_eq(s.m_p, 0.5, 1e-15);                   /* 3000 / (10 * 600) */
    cr_assert_float_eq(s.mean_power_w, 3000.0 / 700, 1e-12); /* the real T */
    /* 1 - [0.02925 + 0.1 + 0.2 + 0.076] */
    cr_assert_float_eq(s.s, 0.59475, 1e-12);
}

Test(score, power_exactly_at_budget_passes)
{
    struct eeb_score_input in = example();
    in.energy_j = 4500; /* 10 W for 450 s */
    struct eeb_score s = score(&in);
    cr_assert(s.pass, "%s", s.reason);
    cr_assert_float_eq(s.m_p, 1.0, 0);
    cr_assert_float_eq(s.s, 1 - (0.02925 + 0.075 + 0.4 + 0.076), 1e-12);
}

Test(score, power_over_budget_fails_without_s)
{
    struct eeb_score_input in = example();
    in.energy_j = 4500.01;
    struct eeb_score s = score(&in);
    cr_assert_not(s.pass);
    cr_assert(isnan(s.s));
    cr_assert_not_null(strstr(s.reason, "exceeds P_max 10.000 W"), "%s", s.reason);
}

Test(score, zero_weights)
{
    struct eeb_score_input in = example();
    in.w = (struct eeb_weights){0, 0, 0, 1};
    cr_assert_float_eq(score(&in).s, 0.81, 1e-15); /* only accuracy counts */
    in.w = (struct eeb_weights){1, 0, 0, 0};
    cr_assert_float_eq(score(&in).s, 1 - 0.2925, 1e-15);
    in.w = (struct eeb_weights){0, 0, 1, 0};
    cr_assert_float_eq(score(&in).s, 0.4, 1e-15);
}

Test(score, metric_bounds)
{
    struct eeb_score_input in = example();
    in.m_s = 1;
    cr_assert_float_eq(score(&in).s, 1 - (0.02925 + 0.075 + 0.24), 1e-12);
    in.m_s = 0;
    cr_assert_float_eq(score(&in).s, 1 - (0.02925 + 0.075 + 0.24 + 0.4), 1e-12);
}

static void expect_invalid(struct eeb_score_input in, const char *needle)
{
    struct eeb_score s;
    char err[256] = "";
    cr_assert_eq(eeb_score_compute(&in, &s, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, needle), "'%s' does not mention '%s'", err, needle);
}

Test(score, rejects_out_of_range_inputs)
{
    struct eeb_score_input in = example();
    in.m_s = 1.5;
    expect_invalid(in, "M_s = 1.5");
    in = example();
    in.t_s = 0;
    expect_invalid(in, "T = 0");
    in = example();
    in.t_max_s = -1;
    expect_invalid(in, "T_max = -1");
    in = example();
    in.energy_j = -3;
    expect_invalid(in, "E = -3");
    in = example();
    in.p_max_w = NAN;
    expect_invalid(in, "P_max");
    in = example();
    in.m_u = 1.01;
    expect_invalid(in, "M_u");
}

Test(weights, must_sum_to_one)
{
    char err[256] = "";
    struct eeb_weights w = {0.1, 0.1, 0.4, 0.3};
    cr_assert_eq(eeb_score_weights_check(&w, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, "sum to 0.9"), "%s", err);
    w.s = 0.4 + 1e-10; /* within the 1e-9 tolerance */
    cr_assert_eq(eeb_score_weights_check(&w, err, sizeof err), EEB_OK);
    w.s = 0.4 + 1e-8;
    cr_assert_eq(eeb_score_weights_check(&w, err, sizeof err), EEB_EINVAL);
    struct eeb_weights neg = {-0.1, 0.2, 0.5, 0.4};
    cr_assert_eq(eeb_score_weights_check(&neg, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, "w_u = -0.1"), "%s", err);
}

Test(weights, parse)
{
    char err[256] = "";
    struct eeb_weights w;
    cr_assert_eq(eeb_score_weights_parse("0.1,0.2,0.3,0.4", &w, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_float_eq(w.u, 0.1, 0);
    cr_assert_float_eq(w.t, 0.2, 0);
    cr_assert_float_eq(w.p, 0.3, 0);
    cr_assert_float_eq(w.s, 0.4, 0);
    cr_assert_eq(eeb_score_weights_parse("0.5,0.5,0", &w, err, sizeof err), EEB_EINVAL);
    cr_assert_eq(eeb_score_weights_parse("0.5,0.5,0,0,0", &w, err, sizeof err), EEB_EINVAL);
    cr_assert_eq(eeb_score_weights_parse("a,b,c,d", &w, err, sizeof err), EEB_EINVAL);
    cr_assert_eq(eeb_score_weights_parse("0.5,0.5,0.5,0.5", &w, err, sizeof err), EEB_EINVAL);
}
