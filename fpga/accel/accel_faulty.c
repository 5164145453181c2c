/*
 * accel_faulty.c - "faulty:BACKEND[?options]": any backend, slow, stalling
 * or failing on purpose (SQLite's test_vfs; power/source_faulty.c does the
 * same for meters).  The options, comma-separated after the last '?',
 * count training batches from 1:
 *   delay_ms=MS  every batch takes MS milliseconds more (a slow device)
 *   stall=N~S    batch N first stalls S seconds, then runs (a hung device)
 *   fail=WHEN    N: batch N fails; N+K: batches N..N+K-1; N*: every batch
 *                from N (EEB_EDEVICE, a device that stopped answering)
 * A batch that stalls also waits its delay; one that fails does neither.
 * Loading, predictions, reading back and stats are the wrapped backend's.
 * A faulty device's times are never a board's (no EEB_ACCEL_CAP_BOARD).
 *
 * Sections: the name parsed; the handle.
 */
#include "fpga/accel/backends.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define USAGE "faulty:BACKEND[?delay_ms=MS,stall=N~SECONDS,fail=N|N+K|N*]"

struct faulty {
    struct eeb_accel base;
    struct eeb_accel *inner;
    char *name;                  /* as opened, for messages */
    long delay_ms;               /* every batch */
    uint64_t stall_at;           /* the batch that stalls, 0: none */
    double stall_s;              /* for this long */
    uint64_t fail_from, fail_to; /* batches that fail, inclusive; fail_to 0: none */
    uint64_t batches;            /* trained so far, counting failures */
};

/* ---- the name parsed ---- */

/* The digits at text as a number of batches, 1 or more: 1, with *end
 * after them; 0 if there are none or they say 0 or too many. */
static int count(const char *text, const char **end, uint64_t *out)
{
    char *e = NULL;
    errno = 0;
    unsigned long long v = isdigit((unsigned char)*text) ? strtoull(text, &e, 10) : 0;
    if (v < 1 || errno)
        return 0;
    *end = e, *out = v;
    return 1;
}

static int bad_value(const struct faulty *f, const char *key, const char *value, const char *wanted,
                     char *err, size_t errlen)
{
    return eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': %s=%s (%s)", f->name, key, value,
                    wanted);
}

static int option(struct faulty *f, const char *key, const char *value, char *err, size_t errlen)
{
    const char *end;
    uint64_t n, k;
    if (strcmp(key, "delay_ms") == 0) {
        char *e;
        errno = 0;
        long ms = strtol(value, &e, 10);
        if (e == value || *e || errno || ms < 0 || ms > 3600000)
            return bad_value(f, key, value, "milliseconds, 0..3600000", err, errlen);
        f->delay_ms = ms;
        return EEB_OK;
    }
    if (strcmp(key, "stall") == 0) {
        char *e = NULL;
        double s = count(value, &end, &n) && *end == '~' ? strtod(end + 1, &e) : NAN;
        if (!e || e == end + 1 || *e || !(s >= 0 && s <= 3600))
            return bad_value(f, key, value, "N~SECONDS: batch N stalls 0..3600 s", err, errlen);
        f->stall_at = n, f->stall_s = s;
        return EEB_OK;
    }
    if (strcmp(key, "fail") == 0) {
        if (!count(value, &end, &n))
            return bad_value(f, key, value, "N, N+K or N*, batches counted from 1", err, errlen);
        if (*end == '\0')
            k = 1;
        else if (strcmp(end, "*") == 0)
            k = UINT64_MAX - n + 1;
        else if (*end != '+' || !count(end + 1, &end, &k) || *end || k > UINT64_MAX - n + 1)
            return bad_value(f, key, value, "N, N+K or N*, batches counted from 1", err, errlen);
        f->fail_from = n, f->fail_to = n + (k - 1);
        return EEB_OK;
    }
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "backend '%s': unknown option '%s' (delay_ms, stall, fail)", f->name, key);
}

/* The options in text (cut up in the reading), "key=value,...". */
static int options(struct faulty *f, char *text, char *err, size_t errlen)
{
    for (char *save = NULL, *opt = strtok_r(text, ",", &save); opt;
         opt = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(opt, '=');
        if (!eq || eq == opt)
            return eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': '%s' is not key=value (%s)",
                            f->name, opt, USAGE);
        *eq = '\0';
        int rc = option(f, opt, eq + 1, err, errlen);
        if (rc)
            return rc;
    }
    return EEB_OK;
}

/* Reads f->name, "faulty:BACKEND[?options]": the options into f, and
 * *inner, BACKEND (free it), checked to be one this build opens. */
static int parse(struct faulty *f, char **inner, char *err, size_t errlen)
{
    const char *colon = strchr(f->name, ':');
    if (!(*inner = strdup(colon ? colon + 1 : "")))
        return eeb_errf(err, errlen, EEB_ENOMEM, "backend '%s': out of memory", f->name);
    char *q = strrchr(*inner, '?');
    if (q)
        *q = '\0';
    int rc = !**inner ? eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': no backend to wrap (%s)",
                                 f->name, USAGE)
             : q      ? options(f, q + 1, err, errlen)
                      : EEB_OK;
    return rc ? rc : eeb_accel_check_name(*inner, err, errlen);
}

static int faulty_check_name(const char *name, char *err, size_t errlen)
{
    struct faulty f = {.name = (char *)name};
    char *inner = NULL;
    int rc = parse(&f, &inner, err, errlen);
    free(inner);
    return rc;
}

/* ---- the handle ---- */

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static struct eeb_accel *inner(struct eeb_accel *a)
{
    return ((struct faulty *)a)->inner;
}

static void faulty_close(struct eeb_accel *a)
{
    struct faulty *f = (struct faulty *)a;
    eeb_accel_close(f->inner);
    free(f->name);
    free(f);
}

static int faulty_open(const struct eeb_accel_config *cfg, struct eeb_accel **out, char *err,
                       size_t errlen)
{
    *out = NULL;
    if (!cfg->name)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "backend 'faulty': open it by its whole name, %s (eeb_accel_open)", USAGE);
    struct faulty *f = calloc(1, sizeof *f);
    if (!f || !(f->name = strdup(cfg->name))) {
        free(f);
        return eeb_errf(err, errlen, EEB_ENOMEM, "backend '%s': out of memory", cfg->name);
    }
    f->base.ops = &eeb_accel_faulty_ops;
    char *wrapped = NULL;
    int rc = parse(f, &wrapped, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_accel_open(wrapped, cfg, &f->inner, err, errlen);
    free(wrapped);
    if (rc) {
        faulty_close(&f->base);
        return rc;
    }
    *out = &f->base;
    return EEB_OK;
}

static int faulty_load(struct eeb_accel *a, const struct eeb_net *net, char *err, size_t errlen)
{
    return inner(a)->ops->load_model(inner(a), net, err, errlen);
}

static int faulty_train(struct eeb_accel *a, const struct eeb_batch *b, struct eeb_train_result *r,
                        char *err, size_t errlen)
{
    struct faulty *f = (struct faulty *)a;
    uint64_t n = ++f->batches;
    if (f->fail_to && n >= f->fail_from && n <= f->fail_to)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: training batch %llu fails (as told)",
                        f->name, (unsigned long long)n);
    if (n == f->stall_at)
        sleep_s(f->stall_s);
    sleep_s((double)f->delay_ms / 1000);
    return f->inner->ops->train_batch(f->inner, b, r, err, errlen);
}

static int faulty_predict(struct eeb_accel *a, const struct eeb_batch *b, float *out, char *err,
                          size_t errlen)
{
    return inner(a)->ops->predict(inner(a), b, out, err, errlen);
}

static int faulty_read(struct eeb_accel *a, struct eeb_net *net, char *err, size_t errlen)
{
    return inner(a)->ops->read_model(inner(a), net, err, errlen);
}

static void faulty_stats(struct eeb_accel *a, struct eeb_accel_stats *s)
{
    inner(a)->ops->stats(inner(a), s);
}

const struct eeb_accel_ops eeb_accel_faulty_ops = {
    .version = EEB_ACCEL_OPS_VERSION,
    .caps = EEB_ACCEL_CAP_WRAPPER,
    .name = "faulty",
    .description = USAGE ", another backend slow, stalling or failing on chosen training "
                         "batches (tests)",
    .open = faulty_open,
    .load_model = faulty_load,
    .train_batch = faulty_train,
    .predict = faulty_predict,
    .read_model = faulty_read,
    .stats = faulty_stats,
    .close = faulty_close,
    .check_name = faulty_check_name,
};
