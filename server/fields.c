/*
 * fields.c - reading a request body's fields: each one checked, a fault
 * naming the field and what is wrong with it, answered as a 400.
 */
#include "server_int.h"

#include "rundb/eeb_config_record.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

int eeb_srv_bad(struct eeb_srv_fault *f, const char *field, const char *fmt, ...)
{
    snprintf(f->field, sizeof f->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return -1;
}

int eeb_srv_int_field(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                      struct eeb_srv_fault *f)
{
    if (!json_is_integer(v))
        return eeb_srv_bad(f, field, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return eeb_srv_bad(f, field, "%lld is outside [%lld, %lld]", (long long)x, (long long)lo,
                           (long long)hi);
    *out = x;
    return 0;
}

int eeb_srv_number_field(json_t *v, const char *field, double lo, double hi, double *out,
                         struct eeb_srv_fault *f)
{
    if (!json_is_number(v))
        return eeb_srv_bad(f, field, "expected a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return eeb_srv_bad(f, field, "%g is outside [%g, %g]", x, lo, hi);
    *out = x;
    return 0;
}

/* What a meter on a board's supply may read: no negative power (a board
 * gives none back, and -5 W beside +5 W would cancel its energy), no more
 * than a rack of accelerators draws. */
static const double reading_max[] = {
    [EEB_SRV_WATTS] = 1e5, [EEB_SRV_VOLTS] = 1e3, [EEB_SRV_AMPS] = 1e3};
static const char *const reading_name[] = {
    [EEB_SRV_WATTS] = "watts", [EEB_SRV_VOLTS] = "volts", [EEB_SRV_AMPS] = "amps"};

int eeb_srv_reading_field(json_t *v, const char *field, enum eeb_srv_reading kind, double *out,
                          struct eeb_srv_fault *f)
{
    *out = NAN;
    if (kind != EEB_SRV_WATTS && json_is_null(v))
        return 0;
    double x = json_number_value(v);
    if (!json_is_number(v) || !isfinite(x) || x < 0 || x > reading_max[kind])
        return eeb_srv_bad(f, field, "expected %s of 0 to %g%s", reading_name[kind],
                           reading_max[kind], kind == EEB_SRV_WATTS ? "" : ", or null");
    *out = x;
    return 0;
}

int eeb_srv_system_field(json_t *v, const char **name, const char **version,
                         struct eeb_srv_fault *f)
{
    *name = *version = NULL;
    if (!v)
        return 0;
    json_t *n = json_object_get(v, "name"), *ver = json_object_get(v, "version");
    size_t keys = json_is_object(v) ? json_object_size(v) : 0;
    if (json_is_null(ver)) /* none, as left out */
        keys--, ver = NULL;
    if (!json_is_object(v) || !json_is_string(n) || !json_string_length(n) ||
        json_string_length(n) > EEB_CONFIG_SUT_NAME || (ver && !json_is_string(ver)) ||
        (ver && json_string_length(ver) > EEB_CONFIG_SUT_VERSION) || keys != 1u + (ver != NULL))
        return eeb_srv_bad(f, "system",
                           "expected {\"name\": 1 to %d bytes, \"version\": at most %d bytes "
                           "(optional)}: the system under test as it names itself",
                           EEB_CONFIG_SUT_NAME, EEB_CONFIG_SUT_VERSION);
    *name = json_string_value(n);
    *version = ver ? json_string_value(ver) : NULL;
    return 0;
}

enum MHD_Result eeb_srv_fail_fault(struct eeb_srv_call *k, const struct eeb_srv_fault *f)
{
    return eeb_srv_call_fail(k, 400, f->field, f->message);
}
