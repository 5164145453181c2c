/*
 * test_util_agree.c - two readings of one design's fractions agree within
 * EEB_UTIL_AGREE (one point) per resource, or the first resource apart
 * is named with both fractions.
 */
#include "scoring/eeb_score.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <string.h>

static struct eeb_util util(double lut, double ff, double bram, double dsp)
{
    char spec[128], err[256];
    struct eeb_util u;
    snprintf(spec, sizeof spec, "lut=%.17g,ff=%.17g,bram=%.17g,dsp=%.17g", lut, ff, bram, dsp);
    cr_assert_eq(eeb_score_util_from_spec(spec, &u, err, sizeof err), EEB_OK, "%s", err);
    return u;
}

Test(util_agree, one_point_apart_agrees)
{
    struct eeb_util ref = util(0.23, 0.18, 0.39, 0.30);
    char err[512] = "";
    /* each resource exactly one point off, either way: as the decimal
     * fractions print, within */
    struct eeb_util given = util(0.24, 0.17, 0.40, 0.29);
    cr_expect_eq(eeb_score_util_agree(&given, "the report u.rpt", &ref, "x's routed figures", err,
                                      sizeof err),
                 EEB_OK, "%s", err);
    given = util(0.23, 0.18, 0.39, 0.30);
    cr_expect_eq(eeb_score_util_agree(&given, "a", &ref, "b", err, sizeof err), EEB_OK);
}

Test(util_agree, more_than_one_point_apart_names_the_resource)
{
    struct eeb_util ref = util(0.231, 0.18, 0.39, 0.30);
    char err[512];
    struct eeb_util given = util(0.112, 0.18, 0.39, 0.30);
    cr_expect_eq(eeb_score_util_agree(&given, "the report u.rpt", &ref,
                                      "fx.xclbin's routed figures", err, sizeof err),
                 EEB_EINVAL);
    assert_has(err, "LUT 0.1120 in the report u.rpt, 0.2310 in fx.xclbin's routed figures: more "
                    "than 1 % apart (0.1190; 0.01 at most)");
    /* the first resource apart, in M_u's order */
    given = util(0.231, 0.18, 0.4002, 0.2);
    cr_expect_eq(eeb_score_util_agree(&given, "a", &ref, "b", err, sizeof err), EEB_EINVAL);
    assert_has(err, "BRAM 0.4002 in a, 0.3900 in b");
    given = util(0.231, 0.1911, 0.39, 0.30);
    cr_expect_eq(eeb_score_util_agree(&given, "a", &ref, "b", err, sizeof err), EEB_EINVAL);
    assert_has(err, "FF 0.1911 in a, 0.1800 in b");
}
