/*
 * source_replay.c - "replay:FILE[?options]": a recorded power trace played
 * back on the sampler's clock, to rehearse a run and to judge a real
 * meter's log again.
 *
 * FILE is a SPEC PTDaemon log (trace_ptd_log.c) or a CSV, eeb's own
 * t_s,watts[,volts,amps] or another tool's (trace_csv.c); the options,
 * after the last '?', say what the file cannot: channel=N|total, date=MM-DD
 * |DD-MM, mark=LABEL for a PTDaemon log, time=, power=, volts=, amps= a
 * CSV's columns by name.  The readings keep the trace's times: a reading
 * at t seconds after the first is the trace, from its first reading,
 * linearly interpolated at t; past its end the meter is gone (EEB_EDEVICE).
 * Readings are measured: they were.
 */
#include "power_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRACE_BYTES (512u << 20)

struct replay {
    struct eeb_power_source base;
    struct power_trace trace;
    size_t at;     /* the reading before the last one read */
    int started;   /* read once: t0 is set */
    int64_t t0;    /* the sampler's time of the first reading */
    char *path;    /* FILE */
    char opt[512]; /* the options' values, NUL-separated */
    size_t opt_len;
};

struct parse {
    struct replay *r;
    struct power_trace_options *o;
    const char *uri;
};

/* value kept in r (power_each_option's copy is freed). */
static const char *keep(struct replay *r, const char *value)
{
    size_t len = strlen(value) + 1;
    if (len > sizeof r->opt - r->opt_len)
        return NULL;
    char *at = memcpy(r->opt + r->opt_len, value, len);
    r->opt_len += len;
    return at;
}

static int option(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    struct parse *a = arg;
    static const char *const columns[4] = {"time", "power", "volts", "amps"};
    const char **slot = strcmp(key, "channel") == 0 ? &a->o->channel
                        : strcmp(key, "date") == 0  ? &a->o->date
                        : strcmp(key, "mark") == 0  ? &a->o->mark
                                                    : NULL;
    for (int i = 0; i < 4 && !slot; i++)
        if (strcmp(key, columns[i]) == 0)
            slot = &a->o->column[i];
    if (!slot)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': unknown option '%s' (channel=N|total, "
                        "date=MM-DD|DD-MM, mark=LABEL; time=, power=, volts=, amps=COLUMN)",
                        a->uri, key);
    size_t digits = strspn(value, "0123456789");
    if ((slot == &a->o->channel && strcmp(value, "total") != 0 &&
         !(digits && digits <= 3 && !value[digits] && atoi(value) >= 1)) ||
        (slot == &a->o->date && strcmp(value, "MM-DD") != 0 && strcmp(value, "DD-MM") != 0) ||
        !*value)
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': %s=%s (%s)", a->uri, key,
                        value,
                        slot == &a->o->channel ? "a channel number, or total"
                        : slot == &a->o->date  ? "MM-DD or DD-MM"
                                               : "not empty");
    if (!(*slot = keep(a->r, value)))
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': options too long", a->uri);
    return EEB_OK;
}

static int load(struct replay *r, const struct power_trace_options *o, char *err, size_t errlen)
{
    char *text;
    size_t len;
    int rc = eeb_read_file(r->path, MAX_TRACE_BYTES, &text, &len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    struct power_trace *t = &r->trace;
    t->path = r->path;
    t->cap = 1;
    for (size_t i = 0; i < len; i++)
        t->cap += text[i] == '\n';
    if (!(t->p = malloc(t->cap * sizeof *t->p)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", r->path);
    else if (power_trace_is_ptd_log(text))
        rc = power_trace_read_ptd_log(t, text, o, err, errlen);
    else
        rc = power_trace_read_csv(t, text, o, err, errlen);
    free(text);
    if (rc == EEB_OK && t->n < 2)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: %zu readings; a trace needs two", r->path,
                      t->n);
    return rc;
}

static void replay_close(struct eeb_power_source *s)
{
    struct replay *r = (struct replay *)s;
    free(r->trace.p);
    free(r->path);
    free(s->uri);
    free(r);
}

static int replay_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                       size_t errlen)
{
    struct replay *r = calloc(1, sizeof *r);
    if (!r)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    r->base.ops = &power_replay_ops;
    r->base.provenance = EEB_MEASURED;
    /* the options follow the last '?': a FILE with one in its name ends
     * with a '?' of its own */
    const char *q = strrchr(args, '?');
    size_t plen = q ? (size_t)(q - args) : strlen(args);
    struct power_trace_options o = {0};
    struct parse a = {r, &o, uri};
    int rc = EEB_OK;
    if (!plen)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': replay:FILE[?options]", uri);
    else if (!(r->path = strndup(args, plen)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    if (rc == EEB_OK && q)
        rc = power_each_option(uri, q + 1, option, &a, err, errlen);
    if (rc == EEB_OK)
        rc = load(r, &o, err, errlen);
    if (rc != EEB_OK) {
        replay_close(&r->base);
        return rc;
    }
    r->base.note = r->trace.note[0] ? r->trace.note : NULL;
    *out = &r->base;
    return EEB_OK;
}

static double lerp(double a, double b, double f)
{
    return isnan(a) || isnan(b) ? NAN : a + (b - a) * f;
}

static int replay_read(struct eeb_power_source *s, int64_t t_mono_ns, struct eeb_sample *out,
                       char *err, size_t errlen)
{
    struct replay *r = (struct replay *)s;
    const struct power_trace_point *p = r->trace.p;
    size_t n = r->trace.n;
    if (!r->started)
        r->t0 = t_mono_ns, r->started = 1;
    double t = (double)(t_mono_ns - r->t0) / 1e9;
    while (r->at + 1 < n && p[r->at + 1].t <= t)
        r->at++;
    if (r->at + 1 >= n && t > p[n - 1].t)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: the trace ended %.3f s after its start",
                        s->uri, p[n - 1].t);
    const struct power_trace_point *a = &p[r->at], *b = &p[r->at + 1 < n ? r->at + 1 : r->at];
    double f = b->t > a->t ? (t - a->t) / (b->t - a->t) : 0;
    out->watts = lerp(a->watts, b->watts, f);
    out->volts = lerp(a->volts, b->volts, f);
    out->amps = lerp(a->amps, b->amps, f);
    return EEB_OK;
}

const struct eeb_power_source_ops power_replay_ops = {
    .scheme = "replay",
    .description = "replay:FILE[?channel=N|total,date=MM-DD|DD-MM,mark=LABEL,power=COLUMN,...], "
                   "a recorded trace: a SPEC PTDaemon log, or a CSV (eeb's t_s,watts[,volts,"
                   "amps], or another tool's with named columns and units) (measured)",
    .open = replay_open,
    .read = replay_read,
    .close = replay_close,
};
