/*
 * source_replay.c - "replay:FILE.csv": a recorded power trace played back
 * on the sampler's clock.  Each line is "t_s,watts" or "t_s,watts,volts,
 * amps", t_s strictly increasing from the trace's start; a first line that
 * starts with a letter is a header, '#' starts a comment.  A reading at time t
 * after the first is the trace linearly interpolated at t; past its end the
 * meter is gone (EEB_EDEVICE).  Readings are measured: they were.
 */
#include "power_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TRACE_BYTES (512u << 20)

struct point {
    double t, watts, volts, amps;
};

struct replay {
    struct eeb_power_source base;
    struct point *p;
    size_t n, at; /* points, and the one before the last reading */
    int64_t t0;
};

/* Parses one line into p: 2 or 4 numbers; 0 if it is not numbers. */
static int parse_line(char *line, struct point *p)
{
    double v[4];
    int n = 0;
    for (char *save = NULL, *f = strtok_r(line, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
        char *end;
        while (isspace((unsigned char)*f))
            f++;
        if (n == 4)
            return 0;
        v[n] = strtod(f, &end);
        while (isspace((unsigned char)*end))
            end++;
        if (end == f || *end || !isfinite(v[n]))
            return 0;
        n++;
    }
    if (n != 2 && n != 4)
        return 0;
    *p = (struct point){v[0], v[1], n == 4 ? v[2] : NAN, n == 4 ? v[3] : NAN};
    return 1;
}

static int load(struct replay *r, const char *path, char *err, size_t errlen)
{
    char *text;
    size_t len;
    int rc = eeb_read_file(path, MAX_TRACE_BYTES, &text, &len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += text[i] == '\n';
    r->p = malloc(cap * sizeof *r->p);
    if (!r->p) {
        free(text);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    char *next = text;
    for (int no = 1; next && rc == EEB_OK; no++) {
        char *line = next;
        if ((next = strchr(line, '\n')))
            *next++ = '\0';
        line[strcspn(line, "\r#")] = '\0';
        if (!line[strspn(line, " \t")])
            continue;
        char copy[256];
        snprintf(copy, sizeof copy, "%s", line);
        struct point pt;
        if (!parse_line(line, &pt)) {
            if (no == 1 && isalpha((unsigned char)line[strspn(line, " \t")]))
                continue; /* a header: a first line that starts with a name */
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s:%d: '%s' is not t_s,watts[,volts,amps] (numbers)", path, no, copy);
        } else if (pt.watts < 0 || (r->n && pt.t <= r->p[r->n - 1].t)) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s:%d: %s (times must increase, watts be >= 0)", path, no, copy);
        } else {
            r->p[r->n++] = pt;
        }
    }
    free(text);
    if (rc == EEB_OK && r->n < 2)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: %zu readings; a trace needs two", path, r->n);
    return rc;
}

static void replay_close(struct eeb_power_source *s)
{
    struct replay *r = (struct replay *)s;
    free(r->p);
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
    int rc = *args ? load(r, args, err, errlen)
                   : eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': replay:FILE.csv", uri);
    if (rc != EEB_OK) {
        replay_close(&r->base);
        return rc;
    }
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
    if (!r->t0)
        r->t0 = t_mono_ns;
    double t = r->p[0].t + (double)(t_mono_ns - r->t0) / 1e9;
    while (r->at + 1 < r->n && r->p[r->at + 1].t <= t)
        r->at++;
    if (r->at + 1 >= r->n && t > r->p[r->n - 1].t)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: the trace ended at %.3f s", s->uri,
                        r->p[r->n - 1].t);
    const struct point *a = &r->p[r->at], *b = &r->p[r->at + 1 < r->n ? r->at + 1 : r->at];
    double f = b->t > a->t ? (t - a->t) / (b->t - a->t) : 0;
    out->watts = lerp(a->watts, b->watts, f);
    out->volts = lerp(a->volts, b->volts, f);
    out->amps = lerp(a->amps, b->amps, f);
    return EEB_OK;
}

const struct eeb_power_source_ops power_replay_ops = {
    .scheme = "replay",
    .description = "replay:FILE.csv, a recorded trace of t_s,watts[,volts,amps] lines (measured)",
    .open = replay_open,
    .read = replay_read,
    .close = replay_close,
};
