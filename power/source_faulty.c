/*
 * source_faulty.c - "faulty:WHEN:URI": any source, failing or stalling on
 * purpose (SQLite's test_vfs, for meters).  WHEN counts reads from 1:
 *   N      read N fails
 *   N+K    reads N .. N+K-1 fail (a meter that drops out and comes back)
 *   N*     every read from N fails (a meter unplugged for good)
 *   N~S    read N stalls S seconds, then answers
 * Readings keep the inner source's provenance.
 */
#include "power_int.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct faulty {
    struct eeb_power_source base;
    struct eeb_power_source *inner;
    uint64_t first, last; /* reads that fail, inclusive; last 0: none */
    uint64_t stall_at;    /* the read that stalls, or 0 */
    double stall_s;
    uint64_t reads;
};

static void faulty_close(struct eeb_power_source *s)
{
    struct faulty *f = (struct faulty *)s;
    eeb_power_close(f->inner);
    free(s->uri);
    free(f);
}

static int faulty_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                       size_t errlen)
{
    const char *colon = strchr(args, ':');
    unsigned long long n = 0, k = 0;
    char kind = 0;
    double s = 0;
    int used = 0;
    int ok = colon && sscanf(args, "%llu%n", &n, &used) == 1 && n >= 1;
    if (ok && args[used] != ':') {
        kind = args[used];
        const char *rest = args + used + 1;
        int more = 0;
        ok = (kind == '+' && sscanf(rest, "%llu%n", &k, &more) == 1 && k >= 1) ||
             (kind == '~' && sscanf(rest, "%lf%n", &s, &more) == 1 && s >= 0 && s <= 3600) ||
             (kind == '*' && (more = 0, 1));
        ok = ok && rest + more == colon;
    }
    if (!ok)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': faulty:WHEN:URI, WHEN one of N, N+K, N*, N~SECONDS "
                        "(N counts reads from 1)",
                        uri);
    struct faulty *f = calloc(1, sizeof *f);
    if (!f)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    int rc = eeb_power_open(colon + 1, &f->inner, err, errlen);
    if (rc != EEB_OK) {
        free(f);
        return rc;
    }
    if (kind == '~')
        f->stall_at = n, f->stall_s = s;
    else
        f->first = n, f->last = kind == '*' ? UINT64_MAX : kind == '+' ? n + k - 1 : n;
    f->base.ops = &power_faulty_ops;
    f->base.provenance = f->inner->provenance;
    f->base.update_interval_s = f->inner->update_interval_s;
    *out = &f->base;
    return EEB_OK;
}

static int faulty_read(struct eeb_power_source *s, int64_t t_mono_ns, struct eeb_sample *out,
                       char *err, size_t errlen)
{
    struct faulty *f = (struct faulty *)s;
    uint64_t r = ++f->reads;
    if (f->last && r >= f->first && r <= f->last)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: read %llu fails (as told)", s->uri,
                        (unsigned long long)r);
    if (r == f->stall_at) {
        struct timespec ts = {(time_t)f->stall_s,
                              (long)((f->stall_s - (double)(time_t)f->stall_s) * 1e9)};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    f->inner->uncertainty = NAN;
    int rc = f->inner->ops->read(f->inner, t_mono_ns, out, err, errlen);
    s->uncertainty = f->inner->uncertainty; /* its meter's statement, passed on */
    return rc;
}

static int faulty_range(struct eeb_power_source *s, enum eeb_power_range_phase phase,
                        struct eeb_power_ranges *out, char *err, size_t errlen)
{
    return eeb_power_source_range(((struct faulty *)s)->inner, phase, out, err, errlen);
}

const struct eeb_power_source_ops power_faulty_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_WRAPPER,
    .scheme = "faulty",
    .description =
        "faulty:WHEN:URI, another source failing or stalling on chosen reads (its provenance)",
    .open = faulty_open,
    .read = faulty_read,
    .close = faulty_close,
    .range = faulty_range,
};
