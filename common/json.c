/*
 * json.c - figures that may be unknown, to and from JSON; what a value is.
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

const char *eeb_json_kind(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER:
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}
