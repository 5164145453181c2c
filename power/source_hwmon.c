/*
 * source_hwmon.c - "hwmon:[CHIP][/RAIL]": the power rails of the kernel's
 * hwmon sensors (INA226, INA3221, Alveo cards, ...) read through libsensors.
 *
 * A rail gathers the features of one chip that belong together: the same
 * label or, where a feature has none, the same number (in1 with curr1 and
 * power1).  Its watts come from its energy counter when it has one (read
 * as the mean power since the last reading; provenance "counter"), else
 * from its power reading, else from volts x amps ("measured").  CHIP is a
 * libsensors chip name ("ina226", "ina226-*", "ina226-i2c-1-40"); "*" or
 * nothing means every chip.  RAIL is a rail's label or its feature's name
 * ("power1"); without it every rail of the chips is summed -- which counts
 * twice on a board whose sensors measure both a supply and its parts.
 *
 * libsensors keeps one state per process: it is initialized by the first
 * open and cleaned up by the last close, every call under one lock.  Its
 * fatal-error hook (out of memory while scanning) ends the program by
 * default; ours returns to the call into the library that failed, which
 * then reports the error, and the library is not used again by this
 * process since its state is unknown.
 */
#include "power_int.h"

#include <math.h>
#include <pthread.h>
#include <sensors/error.h>
#include <sensors/sensors.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

struct rail {
    const sensors_chip_name *chip;  /* libsensors' own, valid until cleanup */
    char name[160];                 /* "chip/label" */
    char parts[64];                 /* where its watts come from: "power1", "in1 x curr1" */
    int energy, power, volts, amps; /* subfeature numbers, -1: none */
    struct power_counter counter;
    char error[192]; /* `eeb power list`: why it could not be read */
};

struct hwmon {
    struct eeb_power_source base;
    struct rail *rails;
    size_t n;
    int acquired; /* holds a reference on the library */
};

/* ---- libsensors, once per process ---- */

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static int lib_users;      /* references: open sources, a list in progress */
static int lib_broken;     /* a fatal error left its state unknown */
static jmp_buf *lib_guard; /* where a fatal error returns to */
static char lib_error[256];

static void on_fatal(const char *proc, const char *msg)
{
    snprintf(lib_error, sizeof lib_error, "libsensors: %s: %s", proc, msg);
    if (lib_guard)
        longjmp(*lib_guard, 1);
    /* Not reached: every call into the library is guarded. */
    fprintf(stderr, "eeb: %s\n", lib_error);
    abort();
}

static void on_parse_error(const char *msg, const char *file, int line)
{
    if (!lib_error[0])
        snprintf(lib_error, sizeof lib_error, " (%s:%d: %s)", file ? file : "sensors config", line,
                 msg);
}

/*
 * Runs fn(arg) under the library's lock with its fatal errors caught:
 * every call into libsensors goes through here.
 */
static int guarded(int (*fn)(void *arg, char *err, size_t errlen), void *arg, const char *uri,
                   char *err, size_t errlen)
{
    jmp_buf jb;
    int rc;
    pthread_mutex_lock(&lib_lock);
    if (!lib_broken && setjmp(jb) == 0) {
        lib_guard = &jb;
        rc = fn(arg, err, errlen);
    } else { /* broken before, or by a fatal error in fn just now */
        lib_broken = 1;
        rc = eeb_errf(err, errlen, EEB_EDEVICE, "%s: %s (hwmon is unusable until eeb restarts)",
                      uri, lib_error);
    }
    lib_guard = NULL;
    pthread_mutex_unlock(&lib_lock);
    return rc;
}

/* Under the guard: a reference on the initialized library. */
static int lib_acquire(const char *uri, char *err, size_t errlen)
{
    if (lib_users == 0) {
        sensors_fatal_error = on_fatal;
        sensors_parse_error_wfn = on_parse_error;
        lib_error[0] = '\0';
        int rc = sensors_init(NULL);
        if (rc != 0)
            return eeb_errf(err, errlen, EEB_EDEVICE, "%s: libsensors: %s%s", uri,
                            sensors_strerror(rc), lib_error);
    }
    lib_users++;
    return EEB_OK;
}

static void lib_release(void)
{
    if (--lib_users == 0)
        sensors_cleanup();
}

/* ---- rails: a chip's features grouped ---- */

enum kind { ENERGY, POWER, CURR, IN };

struct feature {
    enum kind kind;
    int sub;        /* the input subfeature's number */
    char name[32];  /* "curr1" */
    char label[64]; /* its label, or its name */
    int labelled;   /* the label is the chip's own, not the name */
};

static const char *digits(const char *name)
{
    return name + strcspn(name, "0123456789");
}

static int same_rail(const struct feature *a, const struct feature *b)
{
    if (a->labelled && b->labelled)
        return strcmp(a->label, b->label) == 0;
    return strcmp(digits(a->name), digits(b->name)) == 0;
}

/* A chip's energy, power, voltage and current inputs, in that order. */
static size_t chip_features(const sensors_chip_name *chip, struct feature *out, size_t max)
{
    static const struct {
        sensors_feature_type type;
        sensors_subfeature_type input[2];
    } kinds[] = {
        [ENERGY] = {SENSORS_FEATURE_ENERGY, {SENSORS_SUBFEATURE_ENERGY_INPUT}},
        [POWER] = {SENSORS_FEATURE_POWER,
                   {SENSORS_SUBFEATURE_POWER_INPUT, SENSORS_SUBFEATURE_POWER_AVERAGE}},
        [CURR] = {SENSORS_FEATURE_CURR, {SENSORS_SUBFEATURE_CURR_INPUT}},
        [IN] = {SENSORS_FEATURE_IN, {SENSORS_SUBFEATURE_IN_INPUT}},
    };
    size_t n = 0;
    for (enum kind k = ENERGY; k <= IN; k++) {
        const sensors_feature *f;
        for (int nr = 0; n < max && (f = sensors_get_features(chip, &nr));) {
            if (f->type != kinds[k].type)
                continue;
            const sensors_subfeature *s = sensors_get_subfeature(chip, f, kinds[k].input[0]);
            if (!s && kinds[k].input[1])
                s = sensors_get_subfeature(chip, f, kinds[k].input[1]);
            if (!s || !(s->flags & SENSORS_MODE_R))
                continue;
            struct feature *o = &out[n++];
            o->kind = k, o->sub = s->number;
            snprintf(o->name, sizeof o->name, "%s", f->name);
            char *label = sensors_get_label(chip, f);
            snprintf(o->label, sizeof o->label, "%s", label ? label : f->name);
            o->labelled = label && strcmp(label, f->name) != 0;
            free(label);
        }
    }
    return n;
}

/*
 * Groups a chip's features into rails, appended to rails[*n] (up to max):
 * each energy, power or current input starts a rail unless it belongs to
 * one already; a voltage joins the rail of its current.  A rail without
 * energy, power, or both volts and amps is no rail.
 */
static void chip_rails(const sensors_chip_name *chip, struct rail *rails, size_t *n, size_t max)
{
    struct feature f[256];
    size_t nf = chip_features(chip, f, sizeof f / sizeof *f);
    char chip_name[96];
    if (sensors_snprintf_chip_name(chip_name, sizeof chip_name, chip) < 0)
        snprintf(chip_name, sizeof chip_name, "%s", chip->prefix);
    size_t first = *n;
    const struct feature *head[256]; /* each rail's first feature */
    for (size_t i = 0; i < nf; i++) {
        struct rail *r = NULL;
        for (size_t j = first; j < *n && !r; j++)
            if (same_rail(head[j - first], &f[i]))
                r = &rails[j];
        if (!r && f[i].kind == IN)
            continue;
        if (!r) {
            if (*n == max)
                break;
            r = &rails[(*n)++];
            head[r - rails - first] = &f[i];
            *r = (struct rail){.chip = chip, .energy = -1, .power = -1, .volts = -1, .amps = -1};
            snprintf(r->name, sizeof r->name, "%s/%s", chip_name, f[i].label);
        }
        int *slot = f[i].kind == ENERGY  ? &r->energy
                    : f[i].kind == POWER ? &r->power
                    : f[i].kind == CURR  ? &r->amps
                                         : &r->volts;
        if (*slot < 0)
            *slot = f[i].sub;
    }
    size_t kept = first;
    for (size_t j = first; j < *n; j++) {
        struct rail *r = &rails[j];
        if (r->energy < 0 && r->power < 0 && (r->volts < 0 || r->amps < 0))
            continue;
        const struct feature *h = head[j - first];
        snprintf(r->parts, sizeof r->parts, "%s", h->name);
        int named = h->labelled;
        for (size_t i = 0; i < nf; i++) {
            int sub = f[i].sub;
            if (sub != r->energy && sub != r->power && sub != r->amps && sub != r->volts)
                continue;
            if (sub == r->volts && r->energy < 0 && r->power < 0)
                snprintf(r->parts, sizeof r->parts, "%s x %s", f[i].name, h->name);
            if (!named && f[i].labelled) /* in1_label names the rail of curr1 */
                snprintf(r->name, sizeof r->name, "%s/%s", chip_name, f[i].label), named = 1;
        }
        rails[kept++] = *r;
    }
    *n = kept;
}

static int value(const struct rail *r, int sub, const char *what, const char *uri, double *out,
                 char *err, size_t errlen)
{
    int rc = sensors_get_value(r->chip, sub, out);
    if (rc < 0)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: %s: %s: %s", uri, r->name, what,
                        sensors_strerror(rc));
    return EEB_OK;
}

/* Starts a rail's energy counter, if it has one, at now. */
static int rail_start(struct rail *r, const char *uri, char *err, size_t errlen)
{
    double joules;
    if (r->energy < 0)
        return EEB_OK;
    int rc = value(r, r->energy, "energy", uri, &joules, err, errlen);
    if (rc == EEB_OK)
        power_counter_start(&r->counter, joules, eeb_mono_ns(), 0);
    return rc;
}

static int rail_read(struct rail *r, const char *uri, int64_t t_ns, struct eeb_sample *out,
                     char *err, size_t errlen)
{
    int rc = EEB_OK;
    out->volts = out->amps = NAN;
    if (r->volts >= 0 && r->amps >= 0) {
        rc = value(r, r->volts, "volts", uri, &out->volts, err, errlen);
        if (rc == EEB_OK)
            rc = value(r, r->amps, "amps", uri, &out->amps, err, errlen);
    }
    if (rc != EEB_OK)
        return rc;
    if (r->energy >= 0) {
        double joules;
        rc = value(r, r->energy, "energy", uri, &joules, err, errlen);
        return rc == EEB_OK ? power_counter_watts(&r->counter, uri, r->name, joules, t_ns,
                                                  &out->watts, err, errlen)
                            : rc;
    }
    if (r->power >= 0)
        return value(r, r->power, "power", uri, &out->watts, err, errlen);
    out->watts = out->volts * out->amps;
    return EEB_OK;
}

/* ---- the source ---- */

#define MAX_RAILS 256

struct open_args {
    struct hwmon *h;
    const char *uri, *chip, *rail;
};

static int find_rails(void *arg, char *err, size_t errlen)
{
    struct open_args *a = arg;
    struct hwmon *h = a->h;
    int rc = lib_acquire(a->uri, err, errlen);
    if (rc != EEB_OK)
        return rc;
    h->acquired = 1;
    sensors_chip_name match;
    char pattern[160]; /* libsensors wants "ina226-*" for any ina226 */
    snprintf(pattern, sizeof pattern, strchr(a->chip, '-') ? "%s" : "%s-*", a->chip);
    int any = !*a->chip || strcmp(a->chip, "*") == 0;
    if (!any && sensors_parse_chip_name(pattern, &match) != 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': '%s' is not a chip name (ina226, ina226-*, "
                        "ina226-i2c-1-40)",
                        a->uri, a->chip);
    const sensors_chip_name *chip;
    for (int nr = 0; (chip = sensors_get_detected_chips(any ? NULL : &match, &nr));)
        chip_rails(chip, h->rails, &h->n, MAX_RAILS);
    if (!any)
        sensors_free_chip_name(&match);
    if (*a->rail) {
        size_t kept = 0;
        for (size_t i = 0; i < h->n; i++) {
            const char *label = strchr(h->rails[i].name, '/') + 1, *parts = h->rails[i].parts;
            size_t feature_len = strcspn(parts, " ");
            if (strcmp(label, a->rail) == 0 ||
                (strlen(a->rail) == feature_len && strncmp(parts, a->rail, feature_len) == 0))
                h->rails[kept++] = h->rails[i];
        }
        if (kept > 1)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "power source '%s': %zu rails are called '%s' (%s, %s%s); name the "
                            "chip",
                            a->uri, kept, a->rail, h->rails[0].name, h->rails[1].name,
                            kept > 2 ? ", ..." : "");
        h->n = kept;
    }
    if (h->n == 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': no hwmon power rail matches (`eeb power list` shows "
                        "those found)",
                        a->uri);
    for (size_t i = 0; i < h->n && rc == EEB_OK; i++)
        rc = rail_start(&h->rails[i], a->uri, err, errlen);
    return rc;
}

static int release(void *arg, char *err, size_t errlen)
{
    (void)arg, (void)err, (void)errlen;
    lib_release();
    return EEB_OK;
}

static void hwmon_close(struct eeb_power_source *s)
{
    struct hwmon *h = (struct hwmon *)s;
    char err[256];
    if (h->acquired)
        guarded(release, NULL, "hwmon", err, sizeof err);
    free(h->rails);
    free(s->uri);
    free(h);
}

static int hwmon_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                      size_t errlen)
{
    char chip[128], rail[64] = "";
    size_t chip_len = strcspn(args, "/");
    const char *slash = args + chip_len;
    if (chip_len >= sizeof chip || (*slash && strlen(slash + 1) >= sizeof rail))
        return eeb_errf(err, errlen, EEB_EINVAL, "power source '%s': chip or rail name too long",
                        uri);
    memcpy(chip, args, chip_len);
    chip[chip_len] = '\0';
    if (*slash)
        strcpy(rail, slash + 1);
    struct hwmon *h = calloc(1, sizeof *h);
    if (!h || !(h->rails = calloc(MAX_RAILS, sizeof *h->rails))) {
        free(h);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    }
    h->base.ops = &power_hwmon_ops;
    struct open_args a = {h, uri, chip, rail};
    int rc = guarded(find_rails, &a, uri, err, errlen);
    if (rc != EEB_OK) {
        hwmon_close(&h->base);
        return rc;
    }
    h->base.provenance = EEB_MEASURED;
    for (size_t i = 0; i < h->n; i++)
        if (h->rails[i].energy >= 0)
            h->base.provenance = EEB_COUNTER;
    *out = &h->base;
    return EEB_OK;
}

struct read_args {
    struct hwmon *h;
    int64_t t_ns;
    struct eeb_sample *out;
};

static int read_rails(void *arg, char *err, size_t errlen)
{
    struct read_args *a = arg;
    struct hwmon *h = a->h;
    double watts = 0;
    for (size_t i = 0; i < h->n; i++) {
        int rc = rail_read(&h->rails[i], h->base.uri, a->t_ns, a->out, err, errlen);
        if (rc != EEB_OK)
            return rc;
        watts += a->out->watts;
    }
    a->out->watts = watts;
    if (h->n > 1)
        a->out->volts = a->out->amps = NAN;
    return EEB_OK;
}

static int hwmon_read(struct eeb_power_source *s, int64_t t_mono_ns, struct eeb_sample *out,
                      char *err, size_t errlen)
{
    struct read_args a = {(struct hwmon *)s, t_mono_ns, out};
    return guarded(read_rails, &a, s->uri, err, errlen);
}

/* ---- eeb power list ---- */

struct list_args {
    FILE *out;
    struct rail *rails;
    size_t n;
};

static int list_find(void *arg, char *err, size_t errlen)
{
    struct list_args *a = arg;
    int rc = lib_acquire("hwmon", err, errlen);
    if (rc != EEB_OK)
        return rc;
    const sensors_chip_name *chip;
    for (int nr = 0; (chip = sensors_get_detected_chips(NULL, &nr));)
        chip_rails(chip, a->rails, &a->n, MAX_RAILS);
    for (size_t i = 0; i < a->n; i++)
        rail_start(&a->rails[i], "hwmon", a->rails[i].error, sizeof a->rails[i].error);
    return EEB_OK;
}

static int list_print(void *arg, char *err, size_t errlen)
{
    struct list_args *a = arg;
    for (size_t i = 0; i < a->n; i++) {
        struct rail *r = &a->rails[i];
        struct eeb_sample s = {0};
        char uri[192];
        snprintf(uri, sizeof uri, "hwmon:%s", r->name);
        if (!r->error[0])
            rail_read(r, uri, eeb_mono_ns(), &s, r->error, sizeof r->error);
        fprintf(a->out, "  %-40s ", uri);
        if (r->error[0])
            fprintf(a->out, "unreadable  %s\n", r->error);
        else if (!isnan(s.volts))
            fprintf(a->out, "%9.3f W  %8.3f V  %8.3f A  %s (%s)\n", s.watts, s.volts, s.amps,
                    r->energy >= 0 ? "counter" : "measured", r->parts);
        else
            fprintf(a->out, "%9.3f W %24s %s (%s)\n", s.watts, "",
                    r->energy >= 0 ? "counter" : "measured", r->parts);
    }
    (void)err, (void)errlen;
    lib_release();
    return EEB_OK;
}

static int hwmon_list(FILE *out, char *err, size_t errlen)
{
    struct list_args a = {out, calloc(MAX_RAILS, sizeof(struct rail)), 0};
    if (!a.rails)
        return eeb_errf(err, errlen, EEB_ENOMEM, "hwmon: out of memory");
    int rc = guarded(list_find, &a, "hwmon", err, errlen);
    if (rc == EEB_OK) {
        int counters = 0;
        for (size_t i = 0; i < a.n; i++)
            counters |= a.rails[i].energy >= 0;
        if (counters)
            power_counter_settle();
        rc = guarded(list_print, &a, "hwmon", err, errlen);
    }
    free(a.rails);
    return rc == EEB_OK ? (int)a.n : rc;
}

const struct eeb_power_source_ops power_hwmon_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_LIVE,
    .scheme = "hwmon",
    .description = "hwmon:[CHIP][/RAIL], hwmon power rails through libsensors: one rail, or "
                   "the sum of a chip's or of all (measured, or counter for energy inputs)",
    .open = hwmon_open,
    .read = hwmon_read,
    .close = hwmon_close,
    .list = hwmon_list,
};
