/*
 * source_replay.c - "replay:FILE[?options]": a recorded power trace played
 * back on the sampler's clock, to rehearse a run and to judge a real
 * meter's log again.
 *
 * FILE is a SPEC PTDaemon log (trace_ptd_log.c) or a CSV, eeb's own or
 * another tool's (trace_csv.c); the options (power_trace_option_list),
 * after the last '?', say what the file cannot.  The readings keep the
 * trace's times: a reading t seconds after the first is the trace, from
 * its first reading, linearly interpolated at t.  Where the meter had no
 * reading the replay has none either, so that a replayed run is judged as
 * the live one would have been: a read between an invalid reading and the
 * valid ones around it, or past the trace's end, fails (EEB_EDEVICE: the
 * meter said it had no reading, and the sampler counts a failed read); a
 * read inside a gap between valid readings has no reading (EEB_ENODATA:
 * nobody read the meter then, and the sampler leaves the same gap).
 * Readings are declared: they were measured, but by whoever made the
 * file, not by this run (a replay is a rehearsal, or a judge's re-reading
 * of a log, never a measurement of its own).
 *
 * Sections: the options; loading and the gap bound; reading.
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
    double gap_s;  /* a spacing longer than this between valid readings is a gap */
    size_t at;     /* the reading before the last one read */
    int started;   /* read once: t0 is set */
    int64_t t0;    /* the sampler's time of the first reading */
    char *path;    /* FILE */
    char opt[512]; /* the options' values, NUL-separated */
    size_t opt_len;
};

/* ---- the options ---- */

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

/* Every option as key=VALUES, for the message naming an unknown one. */
static void list_options(char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < EEB_TRACE_OPTIONS; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s=%s", i ? ", " : "",
                 power_trace_option_list[i].name, power_trace_option_list[i].values);
}

/* 1 if value is one of the '|'-separated choices. */
static int one_of(const char *value, const char *choices)
{
    size_t n = strlen(value);
    for (const char *c = choices; c; c = strchr(c, '|'), c = c ? c + 1 : NULL)
        if (strncmp(c, value, n) == 0 && (c[n] == '|' || !c[n]))
            return 1;
    return 0;
}

static int option(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    struct parse *a = arg;
    int i = 0;
    while (i < EEB_TRACE_OPTIONS && strcmp(key, power_trace_option_list[i].name) != 0)
        i++;
    if (i == EEB_TRACE_OPTIONS) {
        char all[400];
        list_options(all, sizeof all);
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': unknown option '%s' (%s)",
                        a->uri, key, all);
    }
    if (i == EEB_TRACE_DECIMAL && strcmp(value, "comma") == 0) /* decimal=, (see replay_open) */
        value = ",";
    size_t digits = strspn(value, "0123456789");
    int ok = !*value ? 0
             : i == EEB_TRACE_CHANNEL
                 ? strcmp(value, "total") == 0 ||
                       (digits && digits <= 3 && !value[digits] && atoi(value) >= 1)
             : i == EEB_TRACE_DATE || i == EEB_TRACE_TIME_UNIT || i == EEB_TRACE_DECIMAL
                 ? one_of(value, power_trace_option_list[i].values)
                 : 1;
    if (!ok)
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': %s=%s (%s)", a->uri, key,
                        value,
                        i == EEB_TRACE_CHANNEL     ? "a channel number, or total"
                        : i == EEB_TRACE_DATE      ? "MM-DD or DD-MM"
                        : i == EEB_TRACE_TIME_UNIT ? "s, ms, us or ns"
                        : i == EEB_TRACE_DECIMAL   ? "',' or '.'"
                                                   : "not empty");
    if (a->o->value[i])
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': %s= given twice", a->uri, key);
    if (!(a->o->value[i] = keep(a->r, value)))
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': options too long", a->uri);
    return EEB_OK;
}

/* The options as power_each_option reads them: "decimal=," has the one
 * comma that separates options as its value, so it is written
 * "decimal=comma," (a new string; free it). */
static char *spell_options(const char *options)
{
    static const char from[] = "decimal=,", to[] = "decimal=comma,";
    size_t count = 0;
    for (const char *s = strstr(options, from); s; s = strstr(s + 1, from))
        count++;
    char *out = malloc(strlen(options) + count * (sizeof to - sizeof from) + 1), *w = out;
    if (!out)
        return NULL;
    for (const char *s = options; *s;) {
        int at_start = s == options || s[-1] == ',';
        if (at_start && strncmp(s, from, sizeof from - 1) == 0) {
            w = stpcpy(w, to);
            s += sizeof from - 1;
        } else {
            *w++ = *s++;
        }
    }
    *w = '\0';
    return out;
}

/* ---- loading and the gap bound ---- */

/* A spacing between two valid readings longer than twice the trace's
 * median one is a gap, as energy.c counts a gap between samples: the meter
 * (or its logger) said nothing there.  Never below GAP_FLOOR_S: a logging
 * process's spacings jitter by a scheduler tick (10 ms at Linux's HZ=100),
 * and that is not a meter's outage. */
#define GAP_FLOOR_S 0.010
#define GAP_SLACK_S 1e-6 /* times are compared to the microsecond: 2 x 0.1 s is not a gap */

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The gap bound: twice the median spacing of consecutive readings, at
 * least GAP_FLOOR_S; and in the note, how many gaps there are. */
static int find_gaps(struct replay *r, char *err, size_t errlen)
{
    struct power_trace *t = &r->trace;
    size_t m = t->n - 1, gaps = 0;
    double *spacing = malloc(m * sizeof *spacing);
    if (!spacing)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", r->path);
    for (size_t i = 0; i < m; i++)
        spacing[i] = t->p[i + 1].t - t->p[i].t;
    qsort(spacing, m, sizeof *spacing, compare_doubles);
    double median = m % 2 ? spacing[m / 2] : (spacing[m / 2 - 1] + spacing[m / 2]) / 2;
    free(spacing);
    r->gap_s = fmax(2 * median, GAP_FLOOR_S);
    for (size_t i = 0; i < m; i++)
        gaps += t->p[i].valid && t->p[i + 1].valid &&
                t->p[i + 1].t - t->p[i].t > r->gap_s + GAP_SLACK_S;
    if (gaps) {
        size_t len = strlen(t->note);
        snprintf(t->note + len, sizeof t->note - len,
                 "%s%s%zu gap%s of more than %.3f s without a reading (twice the median "
                 "spacing, at least %g s), where the replay has no reading either",
                 len ? "; " : r->path, len ? "" : ": ", gaps, gaps == 1 ? "" : "s", r->gap_s,
                 GAP_FLOOR_S);
    }
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
    if (power_trace_is_ptd_log(text))
        rc = power_trace_read_ptd_log(t, text, o, err, errlen);
    else
        rc = power_trace_read_csv(t, text, o, err, errlen);
    free(text);
    size_t valid = 0;
    for (size_t i = 0; rc == EEB_OK && i < t->n; i++)
        valid += t->p[i].valid;
    if (rc == EEB_OK && t->n < 2)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: %zu readings; a trace needs two", r->path,
                      t->n);
    else if (rc == EEB_OK && valid < 2)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: %zu valid readings of %zu; a trace needs two",
                      r->path, valid, t->n);
    if (rc == EEB_OK)
        rc = find_gaps(r, err, errlen);
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
    r->base.provenance = EEB_DECLARED;
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
    if (rc == EEB_OK && q) {
        char *options = spell_options(q + 1);
        rc = options ? power_each_option(uri, options, option, &a, err, errlen)
                     : eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
        free(options);
    }
    if (rc == EEB_OK)
        rc = load(r, &o, err, errlen);
    if (rc != EEB_OK) {
        replay_close(&r->base);
        return rc;
    }
    r->base.note = r->trace.note[0] ? r->trace.note : NULL;
    /* its recorder's interval: the mean spacing of its readings */
    if (r->trace.n > 1)
        r->base.update_interval_s =
            (r->trace.p[r->trace.n - 1].t - r->trace.p[0].t) / (double)(r->trace.n - 1);
    *out = &r->base;
    return EEB_OK;
}

/* ---- reading ---- */

static double lerp(double a, double b, double f)
{
    return isnan(a) || isnan(b) ? NAN : a + (b - a) * f;
}

/* Fills out with a reading at t, on the segment from a to b (b == a at
 * the trace's last reading), or fails as the meter did there: an invalid
 * reading at either end, or a gap between them. */
static int segment_read(const struct replay *r, const struct power_trace_point *a,
                        const struct power_trace_point *b, double t, struct eeb_sample *out,
                        char *err, size_t errlen)
{
    const char *uri = r->base.uri;
    /* at a valid reading (to the microsecond: the sampler's clock and the
     * trace's are rounded apart), that reading, whatever is beside it */
    const struct power_trace_point *at = a->valid && t - a->t <= GAP_SLACK_S   ? a
                                         : b->valid && b->t - t <= GAP_SLACK_S ? b
                                                                               : NULL;
    if (at) {
        out->watts = at->watts, out->volts = at->volts, out->amps = at->amps;
        return EEB_OK;
    }
    if (!a->valid || !b->valid) {
        const struct power_trace_point *bad = !a->valid ? a : b;
        return eeb_errf(err, errlen, EEB_EDEVICE,
                        "%s: no reading %.3f s into the trace: its reading at %.3f s (line %d) "
                        "is invalid",
                        uri, t, bad->t, bad->line);
    }
    if (b->t - a->t > r->gap_s + GAP_SLACK_S)
        return eeb_errf(err, errlen, EEB_ENODATA,
                        "%s: no reading %.3f s into the trace: a gap of %.3f s between lines %d "
                        "and %d (a gap is over %.3f s)",
                        uri, t, b->t - a->t, a->line, b->line, r->gap_s);
    double f = b->t > a->t ? (t - a->t) / (b->t - a->t) : 0;
    out->watts = lerp(a->watts, b->watts, f);
    out->volts = lerp(a->volts, b->volts, f);
    out->amps = lerp(a->amps, b->amps, f);
    return EEB_OK;
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
    return segment_read(r, &p[r->at], &p[r->at + 1 < n ? r->at + 1 : r->at], t, out, err, errlen);
}

const struct eeb_power_source_ops power_replay_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_RECORDED,
    .scheme = "replay",
    .description = "replay:FILE[?channel=N|total,date=MM-DD|DD-MM,mark=LABEL,power=COLUMN,"
                   "time_unit=s|ms|us|ns,decimal=,|.,...], a recorded trace: a SPEC PTDaemon "
                   "log, or a CSV (eeb's t_s,watts[,volts,amps] or export, or another tool's "
                   "with named columns and units); invalid readings fail reads and gaps stay gaps "
                   "(declared)",
    .open = replay_open,
    .read = replay_read,
    .close = replay_close,
};
