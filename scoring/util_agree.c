/*
 * util_agree.c - whether two readings of one design's utilization agree:
 * a --util report given beside an xclbin that records its own resources
 * must say what the xclbin says, or one of them is not this design's.
 *
 * The tolerance is absolute, in fractions of the device (EEB_UTIL_AGREE,
 * one percentage point), not relative: a relative tolerance would let a
 * 1 %-used resource be off by half its count and hold a 90 %-used one to
 * a few hundred LUTs, where the two tools' own rounding (BRAM halves,
 * Vivado's two decimals) already differs.
 */
#include "eeb_score.h"

#include <math.h>

static const char *const labels[EEB_UTIL_COUNT] = {"LUT", "FF", "BRAM", "DSP"};

int eeb_score_util_agree(const struct eeb_util *given, const char *given_name,
                         const struct eeb_util *ref, const char *ref_name, char *err, size_t errlen)
{
    for (int k = 0; k < EEB_UTIL_COUNT; k++) {
        double apart = fabs(given->frac[k] - ref->frac[k]);
        /* a difference of exactly one point, as decimal fractions print it,
         * is within: the margin is far below any count's weight */
        if (apart <= EEB_UTIL_AGREE + 1e-12)
            continue;
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s %.4f in %s, %.4f in %s: more than %g %% apart (%.4f; %g at most)",
                        labels[k], given->frac[k], given_name, ref->frac[k], ref_name,
                        100 * EEB_UTIL_AGREE, apart, EEB_UTIL_AGREE);
    }
    return EEB_OK;
}
