/*
 * number.c - numbers written for people (the run report, the server's
 * pages).  jansson and "%.17g" write a stored 0.1 as 0.10000000000000001
 * and a computed 0.02459856 as 0.024598560000000002: digits of the
 * binary representation, not of the value.  A double holds 15 significant
 * decimal digits for sure, so that is the most shown.
 */
#include "eeb_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_DIGITS 15 /* DBL_DIG: every 15-digit decimal survives a double */

/* The fewest digits, up to max_digits, that read back as v. */
static const char *shortest(double v, int max_digits, char out[EEB_NUMBER_MAX])
{
    if (isnan(v)) {
        snprintf(out, EEB_NUMBER_MAX, "-");
        return out;
    }
    if (isinf(v)) {
        snprintf(out, EEB_NUMBER_MAX, "%s", v < 0 ? "-inf" : "inf");
        return out;
    }
    /* the fewest digits that read back as v; never fewer than the integer
     * part has ("30", not "3e+01") */
    int whole = fabs(v) >= 1 ? (int)floor(log10(fabs(v))) + 1 : 1;
    for (int digits = whole < max_digits ? whole : max_digits; digits <= max_digits; digits++) {
        snprintf(out, EEB_NUMBER_MAX, "%.*g", digits, v);
        if (strtod(out, NULL) == v)
            return out;
    }
    return out; /* v to max_digits: the rest were the representation's */
}

const char *eeb_number_text(double v, char out[EEB_NUMBER_MAX])
{
    return shortest(v, MAX_DIGITS, out);
}

const char *eeb_number_exact(double v, char out[EEB_NUMBER_MAX])
{
    return shortest(v, 17, out); /* DBL_DECIMAL_DIG: every double round-trips */
}
