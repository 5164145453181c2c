/*
 * xclbin_system.c - the resources an xclbin built by Vitis records about
 * itself, in its SYSTEM_METADATA section (axlf kind 22: the "system
 * diagram" JSON v++ --link writes), and the M_u they give.
 *
 * What is read (docs/xclbin.md says which of it public sources show):
 *
 *   {"system_diagram_metadata": {
 *      "xsa": {"part": "xczu7ev-ffvc1156-2-e",                (optional)
 *              "available_resources": [{"resource": "LUT", "available": "230400"}, ...]
 *              -- or, per SLR, summed --
 *              "device_topology": [{"available_resources": [...]}, ...]},
 *      "xclbin": {"user_regions": [{"compute_units": [{"name": "vadd_1",
 *          "actual_resources": [{"origin": "routed",
 *                                "resources": [{"resource": "LUT", "used": "1234"}, ...]},
 *                               ...]}]}]}}}
 *
 * Numbers are JSON numbers or decimal strings (Vitis writes strings).
 * Resources are LUT, REG (FF also taken), BRAM, DSP and URAM; others
 * (LUTAsMem, ...) are skipped.  Origins are routed, fully_placed (placed
 * also taken) and synthesized; others are skipped.  A missing level is an
 * xclbin without figures (a hw_emu build, an older Vitis, eeb's own
 * writer); a level of the wrong type, a count out of bounds or a figure
 * that is not a count is an error naming the field.
 *
 * Sections: names, the JSON walk (every list and string bounded), the
 * figures, M_u.
 */
#include "eeb_xclbin.h"
#include "fpga/model/eeb_device.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_REGIONS 16   /* user_regions */
#define MAX_UNITS   4096 /* compute_units of a region, with figures or not */
#define MAX_ORIGINS 8    /* actual_resources of a unit */
#define MAX_ENTRIES 64   /* resources of an origin; available_resources of an SLR */
#define MAX_SLRS    64   /* device_topology */
#define MAX_COUNT   1e12 /* a resource count past any FPGA's */
#define MAX_NUMBER  32   /* bytes of a count written as a string */
#define PATH_BYTES  256

/* ---- Names ---- */

static const char *const res_names[EEB_XCLBIN_NRES] = {"LUT", "REG", "BRAM", "DSP", "URAM"};
static const char *const origin_names[EEB_XCLBIN_NORIGINS] = {"routed", "fully_placed",
                                                              "synthesized"};

/* What Vitis names a resource or an origin, and the synonyms taken for it. */
static const struct {
    const char *name;
    enum eeb_xclbin_res res;
} res_aliases[] = {
    {"LUT", EEB_XCLBIN_LUT},   {"REG", EEB_XCLBIN_REG}, {"FF", EEB_XCLBIN_REG},
    {"BRAM", EEB_XCLBIN_BRAM}, {"DSP", EEB_XCLBIN_DSP}, {"URAM", EEB_XCLBIN_URAM},
};
static const struct {
    const char *name;
    enum eeb_xclbin_origin origin;
} origin_aliases[] = {
    {"routed", EEB_XCLBIN_ROUTED},       {"fully_placed", EEB_XCLBIN_PLACED},
    {"placed", EEB_XCLBIN_PLACED},       {"synthesized", EEB_XCLBIN_SYNTHESIZED},
    {"synthed", EEB_XCLBIN_SYNTHESIZED},
};

/* M_u's four resources in eeb_util's order, and the labels users read. */
static const enum eeb_xclbin_res mu_res[EEB_UTIL_COUNT] = {EEB_XCLBIN_LUT, EEB_XCLBIN_REG,
                                                           EEB_XCLBIN_BRAM, EEB_XCLBIN_DSP};
static const char *const mu_labels[EEB_UTIL_COUNT] = {"LUT", "FF (REG)", "BRAM", "DSP"};

const char *eeb_xclbin_res_name(enum eeb_xclbin_res res)
{
    return (unsigned)res < EEB_XCLBIN_NRES ? res_names[res] : "?";
}

const char *eeb_xclbin_origin_name(enum eeb_xclbin_origin origin)
{
    return (unsigned)origin < EEB_XCLBIN_NORIGINS ? origin_names[origin] : "?";
}

/* ---- The JSON walk ---- */

struct walk {
    const char *name; /* the file, for messages */
    char *err;
    size_t errlen;
};

/* EEB_EFORMAT: "<file>: SYSTEM_METADATA: <field>: <what>". */
static int bad(const struct walk *w, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(const struct walk *w, const char *path, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return eeb_errf(w->err, w->errlen, EEB_EFORMAT, "%s: SYSTEM_METADATA: %s: %s", w->name, path,
                    what);
}

/* A field's path into out (PATH_BYTES), cut short if it is longer: it is
 * only ever shown. */
static void path_of(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void path_of(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, PATH_BYTES, fmt, ap);
    va_end(ap);
}

static const char *json_kind(const json_t *v)
{
    static const char *const kinds[] = {
        [JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array", [JSON_STRING] = "a string",
        [JSON_INTEGER] = "a number", [JSON_REAL] = "a number",  [JSON_TRUE] = "true",
        [JSON_FALSE] = "false",      [JSON_NULL] = "null",
    };
    return kinds[json_typeof(v)];
}

/* parent[key] as an object or array of want's type: *out NULL if absent
 * (the xclbin does not say), an error if it is something else or, for an
 * array, longer than max. */
static int member(const struct walk *w, const json_t *parent, const char *key, json_type want,
                  size_t max, const char *path, json_t **out)
{
    *out = json_object_get(parent, key);
    if (!*out)
        return EEB_OK;
    if (json_typeof(*out) != want)
        return bad(w, path, "%s, not %s", json_kind(*out),
                   want == JSON_ARRAY ? "an array" : "an object");
    if (want == JSON_ARRAY && json_array_size(*out) > max)
        return bad(w, path, "%zu entries (eeb reads at most %zu)", json_array_size(*out), max);
    return EEB_OK;
}

/* Whether s[0..n) is printable ASCII: what eeb quotes in its messages and
 * prints (a name from the file may not move the terminal's cursor). */
static int printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isprint((unsigned char)s[i]))
            return 0;
    return 1;
}

/* parent[key] as printable text of 1 to size - 1 bytes, into out. */
static int text(const struct walk *w, const json_t *parent, const char *key, const char *path,
                char *out, size_t size)
{
    const json_t *v = json_object_get(parent, key);
    if (!v)
        return bad(w, path, "missing");
    if (!json_is_string(v))
        return bad(w, path, "%s, not a string", json_kind(v));
    size_t n = json_string_length(v);
    if (n == 0 || n >= size)
        return bad(w, path, "%zu bytes (eeb reads 1 to %zu)", n, size - 1);
    if (!printable(json_string_value(v), n))
        return bad(w, path, "not printable ASCII text");
    memcpy(out, json_string_value(v), n + 1);
    return EEB_OK;
}

/* A count: a JSON number, or a decimal string ("1234", "12.5": BRAM has
 * halves).  An empty string is *out -1 where empty is allowed. */
static int count(const struct walk *w, const json_t *v, const char *path, int empty_ok, double *out)
{
    if (!v)
        return bad(w, path, "missing");
    double x = 0;
    if (json_is_number(v)) {
        x = json_number_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (n == 0 && empty_ok) {
            *out = -1;
            return EEB_OK;
        }
        char *end = NULL;
        /* decimal digits and a point only: no sign, exponent or hex */
        if (n > 0 && n < MAX_NUMBER && isdigit((unsigned char)s[0]) &&
            strspn(s, "0123456789.") == n) {
            errno = 0;
            x = strtod(s, &end);
        }
        if (!end || end != s + n || errno)
            return n < MAX_NUMBER && printable(s, n)
                       ? bad(w, path, "'%s' is not a count", s)
                       : bad(w, path, "a string of %zu bytes, not a count", n);
    } else {
        return bad(w, path, "%s, not a count", json_kind(v));
    }
    if (!isfinite(x) || x < 0 || x > MAX_COUNT)
        return bad(w, path, "%g is not a count (0 to %g)", x, MAX_COUNT);
    *out = x;
    return EEB_OK;
}

/* The resource an entry names into *res, -1 for one eeb skips. */
static int entry_resource(const struct walk *w, const json_t *entry, const char *path, int *res)
{
    char name[32], field[PATH_BYTES];
    path_of(field, "%s.resource", path);
    int rc = text(w, entry, "resource", field, name, sizeof name);
    *res = -1;
    for (size_t i = 0; rc == EEB_OK && i < sizeof res_aliases / sizeof *res_aliases; i++)
        if (strcasecmp(name, res_aliases[i].name) == 0)
            *res = (int)res_aliases[i].res;
    return rc;
}

/* A list of {"resource": R, key: N}: used[R] = N, have gets R's bit;
 * a resource listed twice is an error. */
static int resource_list(const struct walk *w, const json_t *list, const char *path,
                         const char *key, int empty_ok, double used[EEB_XCLBIN_NRES],
                         unsigned *have)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        const json_t *e = json_array_get(list, i);
        char at[PATH_BYTES], field[PATH_BYTES];
        path_of(at, "%s[%zu]", path, i);
        if (!json_is_object(e))
            return bad(w, at, "%s, not an object", json_kind(e));
        int res, rc = entry_resource(w, e, at, &res);
        if (rc)
            return rc;
        if (res < 0)
            continue; /* LUTAsMem and the like: neither M_u's nor shown */
        if (*have & 1u << res)
            return bad(w, at, "%s listed twice", res_names[res]);
        path_of(field, "%s.%s", at, key);
        if ((rc = count(w, json_object_get(e, key), field, empty_ok, &used[res])))
            return rc;
        *have |= 1u << res;
    }
    return EEB_OK;
}

/* One compute unit's actual_resources: its figures per origin. */
static int unit_figures(const struct walk *w, const json_t *unit, const json_t *origins,
                        const char *path, struct eeb_xclbin_cu_figures *cu)
{
    char field[PATH_BYTES];
    path_of(field, "%s.name", path);
    int rc = text(w, unit, "name", field, cu->name, sizeof cu->name);
    for (size_t i = 0; rc == EEB_OK && i < json_array_size(origins); i++) {
        const json_t *e = json_array_get(origins, i);
        char at[PATH_BYTES], origin[32];
        json_t *list;
        path_of(at, "%s.actual_resources[%zu]", path, i);
        if (!json_is_object(e))
            return bad(w, at, "%s, not an object", json_kind(e));
        path_of(field, "%s.origin", at);
        if ((rc = text(w, e, "origin", field, origin, sizeof origin)))
            return rc;
        int o = -1;
        for (size_t k = 0; k < sizeof origin_aliases / sizeof *origin_aliases; k++)
            if (strcasecmp(origin, origin_aliases[k].name) == 0)
                o = (int)origin_aliases[k].origin;
        if (o < 0)
            continue; /* another step's estimate: not one M_u reads */
        if (cu->origins & 1u << o)
            return bad(w, field, "a second set of %s figures", origin_names[o]);
        path_of(field, "%s.resources", at);
        if ((rc = member(w, e, "resources", JSON_ARRAY, MAX_ENTRIES, field, &list)))
            return rc;
        if (!list)
            return bad(w, field, "missing");
        if ((rc = resource_list(w, list, field, "used", 0, cu->used[o], &cu->have[o])))
            return rc;
        cu->origins |= 1u << o;
    }
    return rc;
}

/* Every region's compute units that carry actual_resources. */
static int read_units(const struct walk *w, const json_t *sdm, struct eeb_xclbin_figures *out)
{
    json_t *xclbin, *regions;
    int rc = member(w, sdm, "xclbin", JSON_OBJECT, 0, "system_diagram_metadata.xclbin", &xclbin);
    if (rc || !xclbin)
        return rc;
    if ((rc = member(w, xclbin, "user_regions", JSON_ARRAY, MAX_REGIONS,
                     "system_diagram_metadata.xclbin.user_regions", &regions)))
        return rc;
    for (size_t r = 0; regions && r < json_array_size(regions); r++) {
        const json_t *region = json_array_get(regions, r);
        char at[PATH_BYTES];
        json_t *units;
        path_of(at, "system_diagram_metadata.xclbin.user_regions[%zu]", r);
        if (!json_is_object(region))
            return bad(w, at, "%s, not an object", json_kind(region));
        path_of(at, "system_diagram_metadata.xclbin.user_regions[%zu].compute_units", r);
        if ((rc = member(w, region, "compute_units", JSON_ARRAY, MAX_UNITS, at, &units)))
            return rc;
        for (size_t u = 0; units && u < json_array_size(units); u++) {
            const json_t *unit = json_array_get(units, u);
            char path[PATH_BYTES], field[PATH_BYTES];
            json_t *origins;
            path_of(path, "%s[%zu]", at, u);
            if (!json_is_object(unit))
                return bad(w, path, "%s, not an object", json_kind(unit));
            path_of(field, "%s.actual_resources", path);
            if ((rc =
                     member(w, unit, "actual_resources", JSON_ARRAY, MAX_ORIGINS, field, &origins)))
                return rc;
            if (!origins || json_array_size(origins) == 0)
                continue; /* a unit without figures (hw_emu) */
            if (out->ncus == EEB_XCLBIN_MAX_FIGURED_CUS)
                return bad(w, path, "over %d compute units with figures (eeb reads %d)",
                           EEB_XCLBIN_MAX_FIGURED_CUS, EEB_XCLBIN_MAX_FIGURED_CUS);
            if ((rc = unit_figures(w, unit, origins, path, &out->cus[out->ncus])))
                return rc;
            out->ncus++;
        }
    }
    return EEB_OK;
}

/* One list of the platform's totals into sum; have and empty get a bit per
 * resource it lists, and per resource it leaves "". */
static int add_available(const struct walk *w, const json_t *list, const char *path,
                         double sum[EEB_XCLBIN_NRES], unsigned *have, unsigned *empty)
{
    double one[EEB_XCLBIN_NRES] = {0};
    unsigned listed = 0;
    int rc = resource_list(w, list, path, "available", 1, one, &listed);
    for (int k = 0; rc == EEB_OK && k < EEB_XCLBIN_NRES; k++) {
        if (!(listed & 1u << k))
            continue;
        *have |= 1u << k;
        if (one[k] < 0)
            *empty |= 1u << k;
        else
            sum[k] += one[k];
    }
    return rc;
}

/* The platform's totals: xsa.available_resources, else the sum over
 * device_topology's SLRs of theirs; a total left empty ("") is -1. */
static int read_available(const struct walk *w, const json_t *sdm, struct eeb_xclbin_figures *out)
{
    static const char top[] = "system_diagram_metadata.xsa.available_resources";
    json_t *xsa, *slrs = NULL, *list;
    int rc = member(w, sdm, "xsa", JSON_OBJECT, 0, "system_diagram_metadata.xsa", &xsa);
    if (rc)
        return rc;
    if (!xsa)
        return bad(w, "system_diagram_metadata.xsa",
                   "missing: the platform's available resources are M_u's denominators");
    if (json_object_get(xsa, "part") &&
        (rc =
             text(w, xsa, "part", "system_diagram_metadata.xsa.part", out->part, sizeof out->part)))
        return rc;
    double sum[EEB_XCLBIN_NRES] = {0};
    unsigned have = 0, empty = 0;
    int lists = 0;
    if ((rc = member(w, xsa, "available_resources", JSON_ARRAY, MAX_ENTRIES, top, &list)))
        return rc;
    if (list) {
        rc = add_available(w, list, top, sum, &have, &empty);
        lists++;
    } else {
        rc = member(w, xsa, "device_topology", JSON_ARRAY, MAX_SLRS,
                    "system_diagram_metadata.xsa.device_topology", &slrs);
    }
    for (size_t i = 0; rc == EEB_OK && slrs && i < json_array_size(slrs); i++) {
        const json_t *slr = json_array_get(slrs, i);
        char at[PATH_BYTES];
        path_of(at, "system_diagram_metadata.xsa.device_topology[%zu]", i);
        if (!json_is_object(slr))
            return bad(w, at, "%s, not an object", json_kind(slr));
        path_of(at, "system_diagram_metadata.xsa.device_topology[%zu].available_resources", i);
        if ((rc = member(w, slr, "available_resources", JSON_ARRAY, MAX_ENTRIES, at, &list)))
            return rc;
        if (list) {
            rc = add_available(w, list, at, sum, &have, &empty);
            lists++;
        }
    }
    if (rc == EEB_OK && !lists)
        return bad(w, top,
                   "missing (nor in device_topology): the platform's available resources are "
                   "M_u's denominators");
    for (int k = 0; k < EEB_XCLBIN_NRES; k++)
        out->available[k] = (have & 1u << k) && !(empty & 1u << k) ? sum[k] : -1;
    return rc;
}

/* ---- The figures ---- */

int eeb_xclbin_figures(const struct eeb_xclbin_info *info, const char *name,
                       struct eeb_xclbin_figures *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    for (int k = 0; k < EEB_XCLBIN_NRES; k++)
        out->available[k] = -1;
    if (!info->system_metadata)
        return EEB_OK;
    const struct walk w = {name, err, errlen};
    if (info->system_metadata_len > EEB_XCLBIN_MAX_SYSTEM_BYTES)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: SYSTEM_METADATA: %zu bytes (eeb reads at most %u)", name,
                        info->system_metadata_len, EEB_XCLBIN_MAX_SYSTEM_BYTES);
    json_error_t je;
    json_t *root = json_loadb(info->system_metadata, info->system_metadata_len, 0, &je);
    if (!root)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: SYSTEM_METADATA: not JSON (line %d: %s)",
                        name, je.line, je.text);
    json_t *sdm = NULL;
    int rc = json_is_object(root) ? member(&w, root, "system_diagram_metadata", JSON_OBJECT, 0,
                                           "system_diagram_metadata", &sdm)
                                  : bad(&w, "the top", "%s, not an object", json_kind(root));
    if (rc == EEB_OK && sdm)
        rc = read_units(&w, sdm, out);
    if (rc == EEB_OK && out->ncus)
        rc = read_available(&w, sdm, out);
    if (rc == EEB_OK && !out->part[0])
        snprintf(out->part, sizeof out->part, "%s", info->part);
    json_decref(root);
    if (rc) /* half-read figures are none */
        out->ncus = 0;
    return rc;
}

/* ---- M_u ---- */

/* The origins a unit has, "synthesized" or "none eeb reads", for messages. */
static void list_origins(const struct eeb_xclbin_cu_figures *cu, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int o = 0; o < EEB_XCLBIN_NORIGINS; o++)
        if (cu->origins & 1u << o)
            used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " and " : "",
                                     origin_names[o]);
    if (!used)
        snprintf(out, size, "no figures of a step eeb reads");
}

/* A total of the platform's: its own, or for FF the part's where it leaves
 * it empty (the note says so); an error for any other empty total. */
static int platform_total(const struct eeb_xclbin_figures *f, enum eeb_xclbin_res k,
                          const char *name, struct eeb_xclbin_mu *out, char *err, size_t errlen)
{
    out->available[k] = f->available[k];
    if (f->available[k] >= 0 || k == EEB_XCLBIN_URAM)
        return EEB_OK;
    char part[32], known[128];
    eeb_device_part_name(f->part, part, sizeof part);
    const struct eeb_device *dev = k == EEB_XCLBIN_REG ? eeb_device_for_part(f->part) : NULL;
    if (dev) {
        out->available[k] = dev->ff;
        out->ff_from_part = 1;
        snprintf(out->note, sizeof out->note,
                 "FF total from the part %s: the platform leaves it empty", part);
        return EEB_OK;
    }
    if (k != EEB_XCLBIN_REG)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: SYSTEM_METADATA: system_diagram_metadata.xsa leaves the platform's "
                        "%s total empty: M_u needs it",
                        name, res_names[k]);
    return eeb_errf(err, errlen, EEB_EFORMAT,
                    "%s: SYSTEM_METADATA: system_diagram_metadata.xsa leaves the platform's REG "
                    "(FF) total empty, and eeb knows no FF total for the part '%s' (it knows %s's)",
                    name, f->part[0] ? f->part : "(unnamed)",
                    eeb_device_parts(known, sizeof known, " and "));
}

int eeb_xclbin_figures_mu(const struct eeb_xclbin_figures *f, const char *name,
                          struct eeb_xclbin_mu *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (f->ncus == 0)
        return eeb_errf(err, errlen, EEB_ENODATA,
                        "%s: records no compute unit's resources (SYSTEM_METADATA)", name);
    const unsigned needed =
        1u << EEB_XCLBIN_LUT | 1u << EEB_XCLBIN_REG | 1u << EEB_XCLBIN_BRAM | 1u << EEB_XCLBIN_DSP;
    out->origin = EEB_XCLBIN_ROUTED;
    for (int i = 0; i < f->ncus; i++) {
        const struct eeb_xclbin_cu_figures *cu = &f->cus[i];
        int o = cu->origins & 1u << EEB_XCLBIN_ROUTED   ? EEB_XCLBIN_ROUTED
                : cu->origins & 1u << EEB_XCLBIN_PLACED ? EEB_XCLBIN_PLACED
                                                        : -1;
        if (o < 0) {
            char has[64];
            list_origins(cu, has, sizeof has);
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: SYSTEM_METADATA: compute unit %s has %s figures only, no routed "
                            "or fully_placed ones: a synthesized design's counts are synthesis "
                            "estimates, and M_u is the implemented design's",
                            name, cu->name, has);
        }
        unsigned missing = needed & ~cu->have[o];
        for (int k = 0; missing && k < EEB_XCLBIN_NRES; k++)
            if (missing & 1u << k)
                return eeb_errf(err, errlen, EEB_EFORMAT,
                                "%s: SYSTEM_METADATA: compute unit %s's %s figures have no %s",
                                name, cu->name, origin_names[o], res_names[k]);
        if (o == EEB_XCLBIN_PLACED)
            out->origin = EEB_XCLBIN_PLACED;
        for (int k = 0; k < EEB_XCLBIN_NRES; k++)
            out->used[k] += cu->used[o][k];
    }
    for (int k = 0; k < EEB_XCLBIN_NRES; k++) {
        int rc = platform_total(f, (enum eeb_xclbin_res)k, name, out, err, errlen);
        if (rc)
            return rc;
    }
    struct eeb_util *u = &out->util;
    for (int m = 0; m < EEB_UTIL_COUNT; m++) {
        enum eeb_xclbin_res k = mu_res[m];
        if (out->available[k] <= 0)
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: SYSTEM_METADATA: the platform's %s total is 0", name,
                            mu_labels[m]);
        if (out->used[k] > out->available[k])
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: SYSTEM_METADATA: the compute units' %s figures add up to %.10g "
                            "%s, over the platform's %.10g%s",
                            name, origin_names[out->origin], out->used[k], mu_labels[m],
                            out->available[k],
                            k == EEB_XCLBIN_REG && out->ff_from_part
                                ? " (the part's: the platform leaves it empty)"
                                : "");
        u->used[m] = out->used[k];
        u->available[m] = out->available[k];
        u->frac[m] = out->used[k] / out->available[k];
    }
    snprintf(u->family, sizeof u->family, "xclbin");
    eeb_device_part_name(f->part, u->device, sizeof u->device);
    snprintf(u->state, sizeof u->state, "%s",
             out->origin == EEB_XCLBIN_ROUTED ? "Routed" : "Fully Placed");
    return EEB_OK;
}

int eeb_xclbin_m_u(const struct eeb_xclbin_info *info, const char *name,
                   const struct eeb_util *given, const char *given_name, struct eeb_util *util,
                   char *source, size_t source_len, char *err, size_t errlen)
{
    struct eeb_xclbin_figures *f = malloc(sizeof *f);
    struct eeb_xclbin_mu mu = {.origin = EEB_XCLBIN_ROUTED};
    if (!f)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = eeb_xclbin_figures(info, name, f, err, errlen);
    if (rc == EEB_OK && f->ncus == 0) {
        rc = EEB_ENODATA;
        err[0] = '\0';
    }
    if (rc == EEB_OK)
        rc = eeb_xclbin_figures_mu(f, name, &mu, err, errlen);
    if (rc == EEB_OK && given) {
        char ref[320];
        snprintf(ref, sizeof ref, "%s's %s figures", name, origin_names[mu.origin]);
        if ((rc = eeb_score_util_agree(given, given_name, &mu.util, ref, err, errlen))) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n,
                     " (the xclbin's figures count its compute units; a report of the whole "
                     "design counts the platform's logic too)");
        }
    }
    if (rc == EEB_OK) {
        *util = mu.util;
        snprintf(source, source_len, "SYSTEM_METADATA: %s figures of %d compute unit%s%s%s%s",
                 origin_names[mu.origin], f->ncus, f->ncus == 1 ? "" : "s", mu.note[0] ? "; " : "",
                 mu.note, given ? "; --util agrees within 0.01 per resource" : "");
    }
    free(f);
    return rc;
}
