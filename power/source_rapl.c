/*
 * source_rapl.c - "rapl:[ZONE]": the host's RAPL energy counters through
 * the kernel's powercap interface (/sys/class/powercap/intel-rapl:*, also
 * on AMD).  ZONE is a zone's directory ("intel-rapl:0:1") or its name
 * ("package-0", "dram" when only one zone has it); nothing means every
 * package zone summed ("psys" already contains the packages and the
 * subzones are parts of theirs, so neither is added).
 *
 * energy_uj wraps to 0 past max_energy_range_uj, which is unwrapped
 * between two readings (one wrap at most: minutes at hundreds of watts).
 * Readings are the mean power since the last one: provenance "counter".
 * Since Linux 5.10 energy_uj is readable by root only.
 */
#include "power_int.h"

#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define POWERCAP  "/sys/class/powercap"
#define MAX_ZONES 64

struct zone {
    char dir[64];  /* "intel-rapl:0" */
    char name[64]; /* "package-0" */
    double range;  /* max_energy_range_uj, in joules */
    struct power_counter counter;
    char error[192]; /* `eeb power list`: why it could not be read */
};

struct rapl {
    struct eeb_power_source base;
    struct zone zones[MAX_ZONES];
    size_t n;
};

/* The first line of POWERCAP/dir/file, without its newline. */
static int read_attr(const char *uri, const char *dir, const char *file, char *out, size_t len,
                     char *err, size_t errlen)
{
    char path[256];
    snprintf(path, sizeof path, POWERCAP "/%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f)
        return eeb_errf(err, errlen, errno == ENOENT ? EEB_EINVAL : EEB_EDEVICE, "%s: %s: %s%s",
                        uri, path, strerror(errno),
                        errno == EACCES ? " (RAPL counters are root's only since Linux 5.10)" : "");
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: %s: empty", uri, path);
    out[strcspn(out, "\n")] = '\0';
    return EEB_OK;
}

/* A counter file in microjoules, as joules. */
static int read_uj(const char *uri, const char *dir, const char *file, double *joules, char *err,
                   size_t errlen)
{
    char text[32], *end;
    int rc = read_attr(uri, dir, file, text, sizeof text, err, errlen);
    if (rc != EEB_OK)
        return rc;
    errno = 0;
    unsigned long long uj = strtoull(text, &end, 10);
    if (end == text || *end || errno)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: %s/%s/%s: '%s' is not a count", uri,
                        POWERCAP, dir, file, text);
    *joules = (double)uj / 1e6;
    return EEB_OK;
}

/* Every RAPL zone: directories "intel-rapl:N" and "intel-rapl:N:M". */
static size_t find_zones(struct zone *z, size_t max)
{
    DIR *d = opendir(POWERCAP);
    size_t n = 0;
    struct dirent *e;
    while (d && n < max && (e = readdir(d)))
        if (strncmp(e->d_name, "intel-rapl:", 11) == 0 && strlen(e->d_name) < sizeof z->dir)
            strcpy(z[n++].dir, e->d_name);
    if (d)
        closedir(d);
    return n;
}

static int is_package(const struct zone *z)
{
    return strchr(z->dir + 11, ':') == NULL && strncmp(z->name, "package", 7) == 0;
}

static int zone_start(struct zone *z, const char *uri, char *err, size_t errlen)
{
    double joules;
    int rc = read_uj(uri, z->dir, "max_energy_range_uj", &z->range, err, errlen);
    if (rc == EEB_OK)
        rc = read_uj(uri, z->dir, "energy_uj", &joules, err, errlen);
    if (rc == EEB_OK)
        power_counter_start(&z->counter, joules, eeb_mono_ns(), z->range);
    return rc;
}

static void rapl_close(struct eeb_power_source *s)
{
    free(s->uri);
    free(s);
}

static int rapl_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                     size_t errlen)
{
    struct rapl *r = calloc(1, sizeof *r);
    if (!r)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    struct zone found[MAX_ZONES];
    size_t nfound = find_zones(found, MAX_ZONES);
    int rc = EEB_OK;
    for (size_t i = 0; i < nfound && rc == EEB_OK; i++) {
        struct zone *z = &found[i];
        rc = read_attr(uri, z->dir, "name", z->name, sizeof z->name, err, errlen);
        if (rc == EEB_OK &&
            (*args ? strcmp(args, z->dir) == 0 || strcmp(args, z->name) == 0 : is_package(z)))
            r->zones[r->n++] = *z;
    }
    if (rc == EEB_OK && r->n == 0)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "power source '%s': no RAPL %s under " POWERCAP " (`eeb power list` shows "
                      "those found)",
                      uri, *args ? "zone of that name" : "package zone");
    if (rc == EEB_OK && r->n > 1 && *args)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "power source '%s': %zu zones are called '%s' (%s, %s, ...); name its "
                      "directory",
                      uri, r->n, args, r->zones[0].dir, r->zones[1].dir);
    for (size_t i = 0; i < r->n && rc == EEB_OK; i++)
        rc = zone_start(&r->zones[i], uri, err, errlen);
    if (rc != EEB_OK) {
        free(r);
        return rc;
    }
    r->base.ops = &power_rapl_ops;
    r->base.provenance = EEB_COUNTER;
    *out = &r->base;
    return EEB_OK;
}

static int zone_read(struct zone *z, const char *uri, int64_t t_ns, double *watts, char *err,
                     size_t errlen)
{
    double joules;
    int rc = read_uj(uri, z->dir, "energy_uj", &joules, err, errlen);
    return rc == EEB_OK
               ? power_counter_watts(&z->counter, uri, z->dir, joules, t_ns, watts, err, errlen)
               : rc;
}

static int rapl_read(struct eeb_power_source *s, int64_t t_mono_ns, struct eeb_sample *out,
                     char *err, size_t errlen)
{
    struct rapl *r = (struct rapl *)s;
    out->watts = 0, out->volts = out->amps = NAN;
    for (size_t i = 0; i < r->n; i++) {
        double w;
        int rc = zone_read(&r->zones[i], s->uri, t_mono_ns, &w, err, errlen);
        if (rc != EEB_OK)
            return rc;
        out->watts += w;
    }
    return EEB_OK;
}

static int rapl_list(FILE *out, char *err, size_t errlen)
{
    struct zone z[MAX_ZONES] = {0};
    size_t n = find_zones(z, MAX_ZONES);
    for (size_t i = 0; i < n; i++)
        if (read_attr("rapl", z[i].dir, "name", z[i].name, sizeof z[i].name, z[i].error,
                      sizeof z[i].error) == EEB_OK)
            zone_start(&z[i], "rapl", z[i].error, sizeof z[i].error);
    if (n)
        power_counter_settle();
    for (size_t i = 0; i < n; i++) {
        char uri[80];
        double w;
        snprintf(uri, sizeof uri, "rapl:%.63s", z[i].dir);
        if (!z[i].error[0])
            zone_read(&z[i], uri, eeb_mono_ns(), &w, z[i].error, sizeof z[i].error);
        fprintf(out, "  %-40s ", uri);
        if (z[i].error[0])
            fprintf(out, "unreadable  %s\n", z[i].error);
        else
            fprintf(out, "%9.3f W %24s counter (%s)\n", w, "", z[i].name);
    }
    (void)err, (void)errlen;
    return (int)n;
}

const struct eeb_power_source_ops power_rapl_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_LIVE,
    .scheme = "rapl",
    .description = "rapl:[ZONE], the host's RAPL energy counters through powercap: a zone, or "
                   "every package summed (counter)",
    .open = rapl_open,
    .read = rapl_read,
    .close = rapl_close,
    .list = rapl_list,
};
