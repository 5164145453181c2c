/*
 * util_report.c - resource utilization for M_u, from a Vivado
 * report_utilization text report or from a "lut=..,ff=..,bram=..,dsp=.." spec.
 *
 * The report holds ASCII tables such as
 *
 *   | Site Type  | Used  | Fixed | Prohibited | Available | Util% |
 *   | CLB LUTs*  | 68123 |     0 |          0 |    274080 | 24.86 |
 *
 * (older Vivado versions have no Prohibited column).  We locate columns by
 * their header, read the four rows M_u needs from the first table that has
 * them, and cross-check Util% against Used/Available so that a hand-edited
 * or truncated report is caught.  Row names differ by family:
 *
 *                 UltraScale(+)    7-series
 *   LUT           CLB LUTs         Slice LUTs
 *   FF            CLB Registers    Slice Registers
 *   BRAM          Block RAM Tile   Block RAM Tile
 *   DSP           DSPs             DSPs
 *
 * Post-synthesis reports mark the LUT row with a trailing '*'.
 */
#include "eeb_score.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_REPORT_BYTES   (64u << 20)
#define MAX_CELLS          16
#define UTIL_PCT_TOLERANCE 0.01 /* Vivado prints Util% with two decimals */

enum family { FAMILY_ANY, FAMILY_ULTRASCALE, FAMILY_7SERIES };

static const struct {
    const char *row;
    enum eeb_util_kind kind;
    enum family family;
} row_names[] = {
    {"CLB LUTs", EEB_UTIL_LUT, FAMILY_ULTRASCALE},
    {"CLB Registers", EEB_UTIL_FF, FAMILY_ULTRASCALE},
    {"Slice LUTs", EEB_UTIL_LUT, FAMILY_7SERIES},
    {"Slice Registers", EEB_UTIL_FF, FAMILY_7SERIES},
    {"Block RAM Tile", EEB_UTIL_BRAM, FAMILY_ANY},
    {"DSPs", EEB_UTIL_DSP, FAMILY_ANY},
};

static const char *const kind_names[EEB_UTIL_COUNT] = {"lut", "ff", "bram", "dsp"};

static const char *const missing_row_text[EEB_UTIL_COUNT] = {
    "'CLB LUTs' (UltraScale) or 'Slice LUTs' (7-series)",
    "'CLB Registers' (UltraScale) or 'Slice Registers' (7-series)",
    "'Block RAM Tile'",
    "'DSPs'",
};

const char *eeb_score_util_name(enum eeb_util_kind kind)
{
    return (unsigned)kind < EEB_UTIL_COUNT ? kind_names[kind] : "?";
}

/* A cell of a table row: a slice of the line, trimmed. */
struct cell {
    const char *s;
    size_t n;
};

static int cell_is(const struct cell *c, const char *text)
{
    return c->n == strlen(text) && memcmp(c->s, text, c->n) == 0;
}

/* Splits "| a | b |" into trimmed cells; returns the count, or -1 if the
 * line is not a table row. */
static int split_row(const char *line, size_t len, struct cell *cells, int max)
{
    while (len && isspace((unsigned char)line[len - 1]))
        len--;
    if (len < 2 || line[0] != '|' || line[len - 1] != '|')
        return -1;
    int n = 0;
    size_t start = 1;
    for (size_t i = 1; i < len; i++) {
        if (line[i] != '|')
            continue;
        if (n == max)
            return -1;
        const char *s = line + start;
        size_t m = i - start;
        while (m && isspace((unsigned char)*s))
            s++, m--;
        while (m && isspace((unsigned char)s[m - 1]))
            m--;
        cells[n].s = s;
        cells[n].n = m;
        n++;
        start = i + 1;
    }
    return n;
}

/* Parses a non-negative decimal number filling the whole cell. */
static int cell_number(const struct cell *c, double *out)
{
    char buf[64];
    if (c->n == 0 || c->n >= sizeof buf)
        return -1;
    memcpy(buf, c->s, c->n);
    buf[c->n] = '\0';
    if (!isdigit((unsigned char)buf[0]))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* Column positions in the current table; -1 when absent. */
struct columns {
    int used, available, util;
};

static int read_row(const struct cell *cells, int ncells, const struct columns *col,
                    const char *name, int lineno, const char *row, struct eeb_util *out,
                    enum eeb_util_kind kind, char *err, size_t errlen)
{
    double used, avail, pct;
    if (col->used >= ncells || col->available >= ncells || col->util >= ncells)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s line %d: '%s' row has %d cells, fewer than its table header", name,
                        lineno, row, ncells);
    const struct cell *cu = &cells[col->used], *ca = &cells[col->available],
                      *cp = &cells[col->util];
    if (cell_number(cu, &used))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s line %d: '%s' Used '%.*s' is not a number",
                        name, lineno, row, (int)cu->n, cu->s);
    if (cell_number(ca, &avail) || avail <= 0)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s line %d: '%s' Available '%.*s' is not a positive number", name, lineno,
                        row, (int)ca->n, ca->s);
    if (used > avail)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s line %d: '%s' Used %g exceeds Available %g",
                        name, lineno, row, used, avail);
    double computed = 100.0 * used / avail;
    if (cp->n > 1 && cp->s[0] == '<') {
        /* Vivado prints "<0.01" for tiny fractions. */
        struct cell bound = {cp->s + 1, cp->n - 1};
        if (cell_number(&bound, &pct))
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s line %d: '%s' Util%% '%.*s' is malformed",
                            name, lineno, row, (int)cp->n, cp->s);
        if (computed >= pct)
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s line %d: '%s' Util%% '%.*s' disagrees with Used/Available = %.4f%%",
                            name, lineno, row, (int)cp->n, cp->s, computed);
    } else {
        if (cell_number(cp, &pct))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s line %d: '%s' Util%% '%.*s' is not a number", name, lineno, row,
                            (int)cp->n, cp->s);
        if (fabs(computed - pct) > UTIL_PCT_TOLERANCE + 1e-9)
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s line %d: '%s' Util%% %.2f disagrees with Used/Available = %g/%g = "
                            "%.4f%%",
                            name, lineno, row, pct, used, avail, computed);
    }
    out->used[kind] = used;
    out->available[kind] = avail;
    out->frac[kind] = used / avail;
    out->line[kind] = lineno;
    return EEB_OK;
}

/* "| Device : xczu9eg-ffvb1156-2-e" in the report's header block. */
static void read_device(const char *line, size_t len, struct eeb_util *out)
{
    const char *end = line + len;
    const char *p = line + 1;
    while (p < end && *p == ' ')
        p++;
    if ((size_t)(end - p) < 6 || memcmp(p, "Device", 6) != 0)
        return;
    p += 6;
    while (p < end && *p == ' ')
        p++;
    if (p == end || *p != ':')
        return;
    p++;
    while (p < end && *p == ' ')
        p++;
    const char *q = end;
    while (q > p && isspace((unsigned char)q[-1]))
        q--;
    size_t n = (size_t)(q - p);
    if (n >= sizeof out->device)
        n = sizeof out->device - 1;
    memcpy(out->device, p, n);
    out->device[n] = '\0';
}

int eeb_score_util_parse(const char *text, size_t len, const char *name, struct eeb_util *out,
                         char *err, size_t errlen)
{
    struct eeb_util u;
    memset(&u, 0, sizeof u);
    struct columns col = {-1, -1, -1};
    enum family family = FAMILY_ANY;
    int family_line = 0;
    int lineno = 0;
    const char *p = text, *end = text + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        const char *line = p;
        p = nl ? nl + 1 : end;
        lineno++;
        if (n && line[n - 1] == '\r')
            n--;
        if (n == 0 || (line[0] != '|' && line[0] != '+')) {
            col.used = col.available = col.util = -1; /* a table ends here */
            continue;
        }
        if (line[0] == '+')
            continue;
        struct cell cells[MAX_CELLS];
        int nc = split_row(line, n, cells, MAX_CELLS);
        if (nc < 0) {
            if (!u.device[0])
                read_device(line, n, &u);
            continue;
        }
        if (cell_is(&cells[0], "Site Type")) {
            col.used = col.available = col.util = -1;
            for (int i = 1; i < nc; i++) {
                if (cell_is(&cells[i], "Used"))
                    col.used = i;
                else if (cell_is(&cells[i], "Available"))
                    col.available = i;
                else if (cell_is(&cells[i], "Util%"))
                    col.util = i;
            }
            if (col.used < 0 || col.available < 0 || col.util < 0)
                col.used = col.available = col.util = -1; /* e.g. per-SLR tables */
            continue;
        }
        if (col.used < 0)
            continue;
        struct cell rowname = cells[0];
        while (rowname.n && (rowname.s[rowname.n - 1] == '*' || rowname.s[rowname.n - 1] == ' '))
            rowname.n--;
        for (size_t r = 0; r < sizeof row_names / sizeof row_names[0]; r++) {
            if (!cell_is(&rowname, row_names[r].row))
                continue;
            enum eeb_util_kind kind = row_names[r].kind;
            if (u.line[kind])
                break; /* the first table that has the row wins */
            if (row_names[r].family != FAMILY_ANY) {
                if (family != FAMILY_ANY && family != row_names[r].family)
                    return eeb_errf(err, errlen, EEB_EFORMAT,
                                    "%s line %d: '%s' mixes device families with line %d", name,
                                    lineno, row_names[r].row, family_line);
                family = row_names[r].family;
                family_line = lineno;
            }
            int rc =
                read_row(cells, nc, &col, name, lineno, row_names[r].row, &u, kind, err, errlen);
            if (rc)
                return rc;
            break;
        }
    }
    for (int k = 0; k < EEB_UTIL_COUNT; k++) {
        if (!u.line[k])
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: no %s row in a '| Site Type | Used | ... | Available | Util%% |' "
                            "table (%d lines read)",
                            name, missing_row_text[k], lineno);
    }
    snprintf(u.family, sizeof u.family, "%s", family == FAMILY_7SERIES ? "7series" : "ultrascale");
    *out = u;
    return EEB_OK;
}

/* Reads and parses the report at path; its text into *text if asked. */
static int read_report(const char *path, struct eeb_util *out, char **text, char *err,
                       size_t errlen)
{
    char *report;
    size_t len;
    int rc = eeb_read_file(path, MAX_REPORT_BYTES, &report, &len, err, errlen);
    if (rc)
        return rc;
    rc = eeb_score_util_parse(report, len, path, out, err, errlen);
    if (rc == EEB_OK && text)
        *text = report;
    else
        free(report);
    return rc;
}

int eeb_score_util_load(const char *path, struct eeb_util *out, char *err, size_t errlen)
{
    return read_report(path, out, NULL, err, errlen);
}

int eeb_score_util_arg(const char *arg, struct eeb_util *out, char **text, char *err, size_t errlen)
{
    if (access(arg, F_OK) != 0 && strchr(arg, '=')) {
        int rc = eeb_score_util_from_spec(arg, out, err, errlen);
        if (rc == EEB_OK && text && !(*text = strdup(arg)))
            return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        return rc;
    }
    return read_report(arg, out, text, err, errlen);
}

int eeb_score_util_from_spec(const char *spec, struct eeb_util *out, char *err, size_t errlen)
{
    struct eeb_util u;
    memset(&u, 0, sizeof u);
    const char *p = spec;
    int seen[EEB_UTIL_COUNT] = {0};
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq)
            return eeb_errf(err, errlen, EEB_EINVAL, "utilization '%s': expected key=value at '%s'",
                            spec, p);
        size_t klen = (size_t)(eq - p);
        int kind = -1;
        for (int k = 0; k < EEB_UTIL_COUNT; k++)
            if (klen == strlen(kind_names[k]) && memcmp(p, kind_names[k], klen) == 0)
                kind = k;
        if (kind < 0)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "utilization '%s': unknown resource '%.*s' (expected lut, ff, bram, "
                            "dsp)",
                            spec, (int)klen, p);
        if (seen[kind])
            return eeb_errf(err, errlen, EEB_EINVAL, "utilization '%s': '%s' given twice", spec,
                            kind_names[kind]);
        char *end;
        errno = 0;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || errno || !isfinite(v) || (*end && *end != ',') || v < 0 || v > 1)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "utilization '%s': %s must be a fraction in [0, 1]", spec,
                            kind_names[kind]);
        seen[kind] = 1;
        u.used[kind] = v;
        u.available[kind] = 1;
        u.frac[kind] = v;
        p = *end ? end + 1 : end;
    }
    for (int k = 0; k < EEB_UTIL_COUNT; k++)
        if (!seen[k])
            return eeb_errf(err, errlen, EEB_EINVAL, "utilization '%s': '%s' is missing", spec,
                            kind_names[k]);
    snprintf(u.family, sizeof u.family, "given");
    *out = u;
    return EEB_OK;
}

double eeb_score_m_u(const struct eeb_util *util)
{
    double sum = 0;
    for (int k = 0; k < EEB_UTIL_COUNT; k++)
        sum += util->frac[k];
    return sum / EEB_UTIL_COUNT;
}
