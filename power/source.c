/*
 * source.c - the registry of power sources, opening one by URI, and the
 * option parsing the sources share.
 */
#include "power_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct eeb_power_source_ops *const sources[] = {
    &power_sim_ops,  &power_replay_ops, &power_faulty_ops, &power_hwmon_ops,
    &power_rapl_ops, &power_scpi_ops,   &power_ptd_ops,    NULL,
};

const struct eeb_power_source_ops *const *eeb_power_sources(void)
{
    return sources;
}

int eeb_power_source_ops_check(const struct eeb_power_source_ops *ops, char *err, size_t errlen)
{
    /* version, caps and scheme lead every version of the table, so a
     * table of another version can still be named */
    const char *scheme = ops->scheme ? ops->scheme : "(no scheme)";
    if (ops->version != EEB_POWER_SOURCE_OPS_VERSION)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "power source '%s:': its ops table is version %d, this eeb drives "
                        "version %d (build it against this eeb's power/eeb_power.h)",
                        scheme, ops->version, EEB_POWER_SOURCE_OPS_VERSION);
    const char *slot = !ops->scheme        ? "scheme"
                       : !ops->description ? "description"
                       : !ops->open        ? "open"
                       : !ops->read        ? "read"
                       : !ops->close       ? "close"
                                           : NULL;
    if (slot)
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s:': its ops table has no %s",
                        scheme, slot);
    return EEB_OK;
}

int eeb_power_source_control(struct eeb_power_source *s, const struct eeb_power_control *c,
                             char *err, size_t errlen)
{
    if (!s->ops->control)
        return eeb_errf(err, errlen, EEB_ENOTSUP, "power source '%s' takes no control", s->uri);
    return s->ops->control(s, c, err, errlen);
}

int eeb_power_source_range(struct eeb_power_source *s, enum eeb_power_range_phase phase,
                           struct eeb_power_ranges *out, char *err, size_t errlen)
{
    char ignored[256];
    if (!err)
        err = ignored, errlen = sizeof ignored;
    *out = (struct eeb_power_ranges){.max_volts = NAN, .max_amps = NAN};
    if (!s->ops->range)
        return eeb_errf(err, errlen, EEB_ENOTSUP, "power source '%s' has no ranges to set", s->uri);
    return s->ops->range(s, phase, out, err, errlen);
}

int eeb_power_source_ranges(const struct eeb_power_source *s)
{
    return s->ops->range != NULL;
}

double eeb_power_default_rate(const struct eeb_power_source *s)
{
    double u = s->update_interval_s;
    if (!(u > 0 && isfinite(u)))
        return EEB_POWER_DEFAULT_RATE_HZ;
    return u >= 1 ? 1 : u <= 1e-4 ? 1e4 : 1 / u;
}

static const char *const provenance_names[] = {"measured", "counter", "modeled", "declared"};

const char *eeb_provenance_name(enum eeb_provenance p)
{
    return p >= EEB_MEASURED && p <= EEB_DECLARED ? provenance_names[p] : "modeled";
}

int eeb_provenance_parse(const char *name, enum eeb_provenance *out)
{
    for (int p = EEB_MEASURED; name && p <= EEB_DECLARED; p++)
        if (strcmp(name, provenance_names[p]) == 0) {
            *out = (enum eeb_provenance)p;
            return 0;
        }
    return -1;
}

/* The source whose scheme begins uri, or NULL. */
static const struct eeb_power_source_ops *scheme_of(const char *uri)
{
    size_t len = strcspn(uri, ":");
    for (const struct eeb_power_source_ops *const *o = sources; *o; o++)
        if (strlen((*o)->scheme) == len && strncmp((*o)->scheme, uri, len) == 0)
            return *o;
    return NULL;
}

int eeb_power_uri_provenance(const char *uri)
{
    const struct eeb_power_source_ops *o = uri ? scheme_of(uri) : NULL;
    if (!o)
        return -1;
    if (o->caps & EEB_POWER_CAP_WRAPPER) { /* SCHEME:ARGS:URI, the wrapped source last */
        const char *args = strchr(uri, ':'), *inner = args ? strchr(args + 1, ':') : NULL;
        return inner ? eeb_power_uri_provenance(inner + 1) : -1;
    }
    return o->caps & EEB_POWER_CAP_SIMULATED  ? EEB_MODELED
           : o->caps & EEB_POWER_CAP_RECORDED ? EEB_DECLARED
                                              : -1;
}

int eeb_power_uri_known(const char *uri)
{
    const struct eeb_power_source_ops *o = uri ? scheme_of(uri) : NULL;
    if (!o || !(o->caps & EEB_POWER_CAP_WRAPPER))
        return o != NULL;
    const char *args = strchr(uri, ':'), *inner = args ? strchr(args + 1, ':') : NULL;
    return inner && eeb_power_uri_known(inner + 1);
}

int eeb_power_open(const char *uri, struct eeb_power_source **out, char *err, size_t errlen)
{
    const struct eeb_power_source_ops *o = scheme_of(uri);
    if (!o) {
        char names[256] = "";
        for (const struct eeb_power_source_ops *const *k = sources; *k; k++)
            snprintf(names + strlen(names), sizeof names - strlen(names),
                     "%s%s:", k == sources ? "" : ", ", (*k)->scheme);
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': unknown scheme (known: %s)",
                        uri, names);
    }
    const char *colon = strchr(uri, ':');
    struct eeb_power_source *s;
    int rc = eeb_power_source_ops_check(o, err, errlen);
    if (rc == EEB_OK)
        rc = o->open(uri, colon ? colon + 1 : "", &s, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (!(s->uri = strdup(uri))) {
        s->ops->close(s);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    }
    *out = s;
    return EEB_OK;
}

int power_each_option(const char *uri, const char *args,
                      int (*fn)(void *arg, const char *key, const char *value, char *err,
                                size_t errlen),
                      void *arg, char *err, size_t errlen)
{
    char *copy = strdup(args);
    if (!copy)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    int rc = EEB_OK;
    for (char *save = NULL, *opt = strtok_r(copy, ",", &save); opt && rc == EEB_OK;
         opt = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(opt, '=');
        if (!eq || eq == opt) {
            rc = eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': '%s' is not key=value", uri,
                          opt);
            break;
        }
        *eq = '\0';
        rc = fn(arg, opt, eq + 1, err, errlen);
    }
    free(copy);
    return rc;
}

int power_number(const char *uri, const char *key, const char *text, double *out, char *err,
                 size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v))
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': %s: '%s' is not a number", uri,
                        key, text);
    *out = v;
    return EEB_OK;
}

void power_counter_start(struct power_counter *c, double joules, int64_t t_ns, double range)
{
    c->joules = joules, c->t_ns = t_ns, c->range = range;
}

void power_counter_settle(void)
{
    nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
}

int power_counter_watts(struct power_counter *c, const char *uri, const char *counter,
                        double joules, int64_t t_ns, double *watts, char *err, size_t errlen)
{
    double de = joules - c->joules, dt = (double)(t_ns - c->t_ns) / 1e9;
    if (de < 0 && c->range > 0)
        de += c->range;
    int rc = EEB_OK;
    if (dt <= 0)
        rc = eeb_errf(err, errlen, EEB_EDEVICE, "%s: %s: a reading at the time of the last one",
                      uri, counter);
    else if (de < 0)
        rc = eeb_errf(err, errlen, EEB_EDEVICE,
                      "%s: %s: the energy counter went back from %.6f J to %.6f J (reset)", uri,
                      counter, c->joules, joules);
    else
        *watts = de / dt;
    if (rc == EEB_OK || de < 0)
        c->joules = joules, c->t_ns = t_ns;
    return rc;
}
