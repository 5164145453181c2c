/*
 * system_desc.c - a submission's system description (eeb_package.h,
 * docs/package.md): a closed schema of the board, the host, the meter and
 * its wiring, checked field by field -- an unknown key refused with the
 * known one it is nearest to, a missing one named, types, ranges, dates
 * and lengths checked -- and summed up in a line.
 */
#include "record/eeb_package.h"
#include "common/eeb_json.h"

#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum ftype { F_TEXT, F_NUMBER, F_OBJECT, F_KIND, F_DATE };

struct field {
    const char *name;
    enum ftype type;
    int optional;
    size_t max_chars;        /* F_TEXT: characters */
    double lo, hi;           /* F_NUMBER: lo <= v <= hi (lo < v if lo_open) */
    int lo_open;             /* F_NUMBER */
    const struct field *sub; /* F_OBJECT: its fields, ending with a NULL name */
};

static const char *const meter_kinds[] = {"ptd", "scpi", "hwmon", "rapl", "other", NULL};

static const struct field board_fields[] = {{.name = "vendor", .type = F_TEXT, .max_chars = 64},
                                            {.name = "model", .type = F_TEXT, .max_chars = 64},
                                            {.name = "part", .type = F_TEXT, .max_chars = 64},
                                            {0}};
static const struct field host_fields[] = {
    {.name = "cpu", .type = F_TEXT, .max_chars = 128},
    {.name = "memory_gib", .type = F_NUMBER, .lo = 0, .hi = 1 << 20, .lo_open = 1},
    {.name = "os", .type = F_TEXT, .max_chars = 128},
    {0}};
static const struct field meter_fields[] = {
    {.name = "kind", .type = F_KIND},
    {.name = "model", .type = F_TEXT, .max_chars = 128},
    {.name = "serial", .type = F_TEXT, .max_chars = 64},
    {.name = "calibration_date", .type = F_DATE},
    {.name = "uncertainty_pct", .type = F_NUMBER, .lo = 0, .hi = 100, .lo_open = 1},
    {0}};
static const struct field wiring_fields[] = {{.name = "rail", .type = F_TEXT, .max_chars = 128},
                                             {.name = "tap", .type = F_TEXT, .max_chars = 256},
                                             {0}};
static const struct field system_fields[] = {
    {.name = "board", .type = F_OBJECT, .sub = board_fields},
    {.name = "host", .type = F_OBJECT, .sub = host_fields},
    {.name = "meter", .type = F_OBJECT, .sub = meter_fields},
    {.name = "wiring", .type = F_OBJECT, .sub = wiring_fields},
    {.name = "ambient_c", .type = F_NUMBER, .optional = 1, .lo = -40, .hi = 85},
    {.name = "notes", .type = F_TEXT, .optional = 1, .max_chars = 1000},
    {0}};

/* The edit distance of a and b, ignoring case (both short). */
static size_t distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b), row[65];
    if (na > 64 || nb > 64)
        return (size_t)-1;
    for (size_t j = 0; j <= nb; j++)
        row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            size_t best = diag + cost;
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* The field of fields nearest to key, if near enough to be a slip. */
static const char *nearest(const struct field *fields, const char *key)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (const struct field *f = fields; f->name; f++) {
        size_t d = distance(key, f->name);
        if (d < best_d && d < strlen(f->name))
            best = f->name, best_d = d;
    }
    return best;
}

/* Characters (UTF-8 code points) of s, which jansson has checked. */
static size_t chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static int date_ok(const char *s)
{
    int y, m, d;
    char tail;
    if (strlen(s) != 10 || s[4] != '-' || s[7] != '-' ||
        sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &tail) != 3)
        return 0;
    for (int i = 0; i < 10; i++)
        if (i != 4 && i != 7 && !isdigit((unsigned char)s[i]))
            return 0;
    static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return y >= 1900 && m >= 1 && m <= 12 && d >= 1 && d <= days[m - 1] - (m == 2 && !leap);
}

static int check_object(const json_t *o, const struct field *fields, const char *at,
                        const char *file, char *err, size_t errlen);

/* One field's value v at path where. */
static int check_value(const json_t *v, const struct field *f, const char *where, const char *file,
                       char *err, size_t errlen)
{
    switch (f->type) {
    case F_OBJECT:
        if (!json_is_object(v))
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: expected an object, got %s", file,
                            where, eeb_json_kind(v));
        return check_object(v, f->sub, where, file, err, errlen);
    case F_NUMBER: {
        if (!json_is_number(v))
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: expected a number, got %s", file,
                            where, eeb_json_kind(v));
        double x = json_number_value(v);
        if (!isfinite(x) || x > f->hi || (f->lo_open ? x <= f->lo : x < f->lo))
            return f->lo_open ? eeb_errf(err, errlen, EEB_EINVAL,
                                         "%s: %s: %g (expected more than %g, at most %g)", file,
                                         where, x, f->lo, f->hi)
                              : eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: %g (expected %g to %g)",
                                         file, where, x, f->lo, f->hi);
        return EEB_OK;
    }
    case F_TEXT:
    case F_KIND:
    case F_DATE: break;
    }
    if (!json_is_string(v))
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: expected a string, got %s", file, where,
                        eeb_json_kind(v));
    const char *s = json_string_value(v);
    if (json_string_length(v) != strlen(s))
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: holds a NUL character", file, where);
    if (f->type == F_KIND) {
        for (const char *const *k = meter_kinds; *k; k++)
            if (strcmp(s, *k) == 0)
                return EEB_OK;
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: %s: '%.40s' (expected ptd, scpi, hwmon, rapl or other)", file, where,
                        s);
    }
    if (f->type == F_DATE)
        return date_ok(s)
                   ? EEB_OK
                   : eeb_errf(err, errlen, EEB_EINVAL,
                              "%s: %s: '%.40s' (expected a date, YYYY-MM-DD)", file, where, s);
    int blank = 1, multiline = f->max_chars > 256; /* notes may have lines */
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c < 0x20 && !(multiline && (c == '\n' || c == '\t'))) || c == 0x7f)
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: a control character (0x%02x)", file,
                            where, c);
        blank &= isspace(c) != 0;
    }
    if (blank)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: empty", file, where);
    size_t n = chars(s);
    if (n > f->max_chars)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: %zu characters (at most %zu)", file,
                        where, n, f->max_chars);
    return EEB_OK;
}

/* Object o at path at ("" at the top): unknown keys first (a misspelt
 * key is the likely fault), then each field in the schema's order. */
static int check_object(const json_t *o, const struct field *fields, const char *at,
                        const char *file, char *err, size_t errlen)
{
    char where[160];
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)o, key, v)
    {
        const struct field *f = fields;
        while (f->name && strcmp(f->name, key) != 0)
            f++;
        if (f->name)
            continue;
        snprintf(where, sizeof where, "%s%s%.48s", at, *at ? "." : "", key);
        const char *near = nearest(fields, key);
        if (near)
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: unknown field (did you mean %s?)",
                            file, where, near);
        char names[256] = "";
        for (f = fields; f->name; f++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     f == fields ? "" : ", ", f->name);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: unknown field (expected %s)", file, where,
                        names);
    }
    for (const struct field *f = fields; f->name; f++) {
        snprintf(where, sizeof where, "%s%s%s", at, *at ? "." : "", f->name);
        v = json_object_get(o, f->name);
        if (!v || json_is_null(v)) {
            if (f->optional)
                continue;
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s: missing", file, where);
        }
        int rc = check_value(v, f, where, file, err, errlen);
        if (rc)
            return rc;
    }
    return EEB_OK;
}

static const char *text_at(const json_t *o, const char *obj, const char *key)
{
    const char *s = json_string_value(json_object_get(json_object_get(o, obj), key));
    return s ? s : "";
}

int eeb_package_system_check(const char *text, size_t len, const char *name, char *summary,
                             size_t summary_len, char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: line %d: %s", name, je.line, je.text);
    int rc = json_is_object(o) ? check_object(o, system_fields, "", name, err, errlen)
                               : eeb_errf(err, errlen, EEB_EINVAL, "%s: expected an object, got %s",
                                          name, eeb_json_kind(o));
    if (rc == EEB_OK && summary && summary_len)
        snprintf(summary, summary_len,
                 "%s %s (%s); meter %s %s, serial %s, calibrated %s, uncertainty %g %%; %s, "
                 "tapped at %s",
                 text_at(o, "board", "vendor"), text_at(o, "board", "model"),
                 text_at(o, "board", "part"), text_at(o, "meter", "kind"),
                 text_at(o, "meter", "model"), text_at(o, "meter", "serial"),
                 text_at(o, "meter", "calibration_date"),
                 json_number_value(json_object_get(json_object_get(o, "meter"), "uncertainty_pct")),
                 text_at(o, "wiring", "rail"), text_at(o, "wiring", "tap"));
    json_decref(o);
    return rc;
}
