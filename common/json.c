/*
 * json.c - figures that may be unknown, to and from JSON.
 */
#include "common/eeb_json.h"

#include <math.h>

json_t *eeb_json_number(double v)
{
    return isnan(v) ? json_null() : json_real(v);
}

double eeb_json_number_at(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}
