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
 *                 UltraScale(+)    Versal           7-series
 *   LUT           CLB LUTs         CLB LUTs         Slice LUTs
 *   FF            CLB Registers    Registers        Slice Registers
 *   BRAM          Block RAM Tile   Block RAM Tile   Block RAM Tile
 *   DSP           DSPs             DSP Slices       DSPs
 *
 * Post-synthesis reports mark the LUT row with a trailing '*'.
 *
 * M_u is the utilization of the whole design, so reports that count less
 * are refused, each with the report to give instead: a synthesized block
 * design top whose IP are black boxes (every count 0, a perfect M_u), a
 * report limited by -cells or -pblocks (read from the header's Command line,
 * or from the pblock table layout), and Vitis's kernel report
 * (report_accelerator_utilization), whose rows count the kernels against
 * the budget the platform leaves them, and the report of an out-of-context
 * synthesis (one IP, "out_of_context" in its header).  A report whose four
 * counts are all 0 is refused too, whatever the reason (one cut before its
 * Black Boxes section).  There is no override: such a report holds no
 * figure to score, and the spec form, recorded as "given", is the way to
 * state figures measured elsewhere.
 *
 * A synthesized whole design's report is parsed (the parser reads what
 * it holds), but its figures give no M_u: M_u is the implemented design's
 * (eeb_score_util_check_implemented, which every --util goes through).
 *
 * Sections: row names, table cells, the header and the refusals, the
 * report parser, files and specs.
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
#define BLACK_BOXES_NAMED  3    /* how many an error message lists */

/* ---- Row names ---------------------------------------------------------- */

enum family {
    FAMILY_7SERIES = 1,
    FAMILY_ULTRASCALE = 2,
    FAMILY_VERSAL = 4,
    FAMILY_ANY = 7,
};

static const struct {
    const char *row;
    enum eeb_util_kind kind;
    unsigned families; /* the families whose reports name the row so */
} row_names[] = {
    {"CLB LUTs", EEB_UTIL_LUT, FAMILY_ULTRASCALE | FAMILY_VERSAL},
    {"Slice LUTs", EEB_UTIL_LUT, FAMILY_7SERIES},
    {"CLB Registers", EEB_UTIL_FF, FAMILY_ULTRASCALE},
    {"Registers", EEB_UTIL_FF, FAMILY_VERSAL},
    {"Slice Registers", EEB_UTIL_FF, FAMILY_7SERIES},
    {"Block RAM Tile", EEB_UTIL_BRAM, FAMILY_ANY},
    {"DSPs", EEB_UTIL_DSP, FAMILY_ULTRASCALE | FAMILY_7SERIES},
    {"DSP Slices", EEB_UTIL_DSP, FAMILY_VERSAL},
};

static const char *const kind_names[EEB_UTIL_COUNT] = {"lut", "ff", "bram", "dsp"};

/* "no <text> row<versal>" when a report lacks a row. */
static const struct {
    const char *text, *versal;
} missing_row[EEB_UTIL_COUNT] = {
    {"'CLB LUTs' (UltraScale) or 'Slice LUTs' (7-series)", " (Versal: 'CLB LUTs')"},
    {"'CLB Registers' (UltraScale) or 'Slice Registers' (7-series)", " (Versal: 'Registers')"},
    {"'Block RAM Tile'", ""},
    {"'DSPs'", " (Versal: 'DSP Slices')"},
};

const char *eeb_score_util_name(enum eeb_util_kind kind)
{
    return (unsigned)kind < EEB_UTIL_COUNT ? kind_names[kind] : "?";
}

/* ---- Table cells -------------------------------------------------------- */

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

/* ---- The header and the refusals ---------------------------------------- */

/* report_utilization options that limit what the report counts; Vivado
 * takes any unambiguous prefix of an option ("-cell", "-pbl"; "-pb" is the
 * protobuf file every run writes). */
enum partial { PARTIAL_CELLS, PARTIAL_PBLOCKS, PARTIAL_HIERARCHICAL, PARTIAL_COUNT };

static const struct {
    const char *option;
    size_t min_prefix; /* the shortest prefix Vivado takes for it */
    const char *counts;
} partial_options[PARTIAL_COUNT] = {
    [PARTIAL_CELLS] = {"-cells", 2, "only the named cells (against the whole device's sites)"},
    [PARTIAL_PBLOCKS] = {"-pblocks", 4,
                         "only what is placed in the pblocks (against the pblocks' own sites)"},
    [PARTIAL_HIERARCHICAL] = {"-hierarchical", 5,
                              "per instance of the hierarchy (without the device's sites)"},
};

/* What the parser knows as it goes down the report. */
struct parse {
    const char *name; /* for messages */
    char *err;
    size_t errlen;
    struct eeb_util u;
    struct columns col; /* of the current "Site Type" table */
    unsigned families;  /* the families every row read so far allows */
    int family_line;    /* the row that last narrowed them */
    struct {
        int line, with; /* a row of another family than line with's */
        const char *row;
    } mismatch[EEB_UTIL_COUNT]; /* the first of each kind, said if no row fits */
    char command[512];          /* the header's "Command" field, or "" */
    int command_line;           /* its line */
    char design[64];            /* the header's "Design" field: the top's name */
    int header_checked;         /* the Command was checked (at the first table) */
    char section[64];           /* "9. Black Boxes": the section being read */
    int in_black_boxes;         /* that section lists black boxes */
    int black_boxes;            /* rows in its table */
    int black_box_line;         /* the first one's line */
    char black_box_section[64];
    char black_box_names[256]; /* the first BLACK_BOXES_NAMED, ", "-separated */
};

static const char *top_name(const struct parse *p)
{
    return p->design[0] ? p->design : "<top>";
}

/* Reads "| Key : value" of the header block into out if key matches and
 * out is still empty (the first occurrence wins). */
static void header_field(const char *line, size_t len, const char *key, char *out, size_t size)
{
    const char *end = line + len, *p = line + 1;
    const char *colon = memchr(p, ':', (size_t)(end - p));
    if (!colon || out[0])
        return;
    while (p < colon && *p == ' ')
        p++;
    const char *k = colon;
    while (k > p && k[-1] == ' ')
        k--;
    if ((size_t)(k - p) != strlen(key) || memcmp(p, key, (size_t)(k - p)) != 0)
        return;
    p = colon + 1;
    while (p < end && isspace((unsigned char)*p))
        p++;
    while (end > p && isspace((unsigned char)end[-1]))
        end--;
    size_t n = (size_t)(end - p);
    if (n >= size)
        n = size - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

static int partial_report_error(const struct parse *p, int lineno, const char *found,
                                enum partial opt, const char *detail)
{
    return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                    "%s line %d: %s 'report_utilization %s'%s, which counts %s, not the whole "
                    "design M_u needs; give the report of the whole design instead, e.g. "
                    "impl_1/%s_utilization_placed.rpt",
                    p->name, lineno, found, partial_options[opt].option, detail,
                    partial_options[opt].counts, top_name(p));
}

/* Vitis writes impl_1_kernel_util_routed.rpt beside impl_1_full_util_routed.rpt
 * (the report_utilization report of the whole design) in _x/reports/link/imp/. */
static int kernel_report_error(const struct parse *p, int lineno)
{
    char instead[512];
    const char *at = NULL;
    for (const char *s = p->name; (s = strstr(s, "kernel_util")); s++)
        at = s;
    if (at)
        snprintf(instead, sizeof instead, "%.*sfull_util%s", (int)(at - p->name), p->name,
                 at + strlen("kernel_util"));
    else
        snprintf(instead, sizeof instead,
                 "impl_1_full_util_routed.rpt from the same folder (_x/reports/link/imp/)");
    return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                    "%s line %d: a Vitis kernel utilization report "
                    "(report_accelerator_utilization): it counts the kernels' compute units "
                    "against the budget the platform leaves them, not the whole device M_u "
                    "needs; give %s instead, the report_utilization report of the whole design "
                    "that v++ --link writes beside it",
                    p->name, lineno, instead);
}

/* The Command line says which report this is and what it counts. */
static int check_command(struct parse *p)
{
    p->header_checked = 1;
    if (!p->command[0])
        return EEB_OK; /* a copied table without its header */
    const char *s = p->command;
    size_t n = strcspn(s, " \t");
    if (n == strlen("report_accelerator_utilization") &&
        memcmp(s, "report_accelerator_utilization", n) == 0)
        return kernel_report_error(p, p->command_line);
    if (n != strlen("report_utilization") || memcmp(s, "report_utilization", n) != 0)
        return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                        "%s line %d: made by '%.*s', not report_utilization; M_u is read from "
                        "the report_utilization report of the whole design, e.g. "
                        "impl_1/%s_utilization_placed.rpt",
                        p->name, p->command_line, (int)n, s, top_name(p));
    for (s += n; *s; s += n) {
        s += strspn(s, " \t");
        n = strcspn(s, " \t");
        if (n < 2 || s[0] != '-')
            continue;
        for (enum partial o = 0; o < PARTIAL_COUNT; o++) {
            if (n < partial_options[o].min_prefix || n > strlen(partial_options[o].option) ||
                memcmp(s, partial_options[o].option, n) != 0)
                continue;
            char detail[160];
            snprintf(detail, sizeof detail, " (Command: %.120s)", p->command);
            return partial_report_error(p, p->command_line, "made by", o, detail);
        }
    }
    return EEB_OK;
}

/* A table listing black boxes: their resources are in no count. */
static void add_black_box(struct parse *p, const struct cell *ref, int lineno)
{
    if (p->black_boxes++ == 0) {
        p->black_box_line = lineno;
        snprintf(p->black_box_section, sizeof p->black_box_section, "%s", p->section);
    }
    size_t used = strlen(p->black_box_names);
    if (p->black_boxes <= BLACK_BOXES_NAMED)
        snprintf(p->black_box_names + used, sizeof p->black_box_names - used, "%s%.*s",
                 used ? ", " : "", (int)(ref->n > 80 ? 80 : ref->n), ref->s);
    else if (p->black_boxes == BLACK_BOXES_NAMED + 1)
        snprintf(p->black_box_names + used, sizeof p->black_box_names - used, ", ...");
}

/* A header line saying the design was synthesized out of context (Vivado's
 * -mode out_of_context): the report counts one IP, not the design. */
static int out_of_context_error(const struct parse *p, const char *line, size_t n, int lineno)
{
    static const char ooc[] = "out_of_context";
    if (!memmem(line, n, ooc, sizeof ooc - 1))
        return EEB_OK;
    return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                    "%s line %d: the report of an out-of-context synthesis ('%s' in its header): "
                    "it counts one IP synthesized on its own, not the whole design M_u needs; "
                    "give the placed or routed report of the whole design instead, e.g. "
                    "impl_1/%s_utilization_placed.rpt",
                    p->name, lineno, ooc, top_name(p));
}

static int black_boxes_error(const struct parse *p)
{
    char state[160] = "";
    if (p->u.state[0])
        snprintf(state, sizeof state, " The report's Design State is '%s'%s;", p->u.state,
                 strcmp(p->u.state, "Synthesized") == 0
                     ? " (the top of a block design, its IP synthesized out of context)"
                     : "");
    return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                    "%s line %d: section '%s' lists %d black box%s (%s): their LUT, FF, BRAM "
                    "and DSP are not counted in this report, so M_u would be too low.%s give "
                    "the placed or routed report of the implementation run instead, e.g. "
                    "impl_1/%s_utilization_placed.rpt",
                    p->name, p->black_box_line, p->black_box_section, p->black_boxes,
                    p->black_boxes == 1 ? "" : "es", p->black_box_names, state, top_name(p));
}

/* "9. Black Boxes", "1.1 Summary of Registers by Type": a section title
 * (the table of contents lists them too, each followed by the next). */
static void read_section_title(struct parse *p, const char *line, size_t len)
{
    size_t i = 0;
    while (len && isspace((unsigned char)line[len - 1]))
        len--;
    while (i < len && (isdigit((unsigned char)line[i]) || line[i] == '.'))
        i++;
    if (i == 0 || i + 1 >= len || line[i] != ' ')
        return;
    const char *title = line + i + 1;
    size_t n = len - i - 1;
    snprintf(p->section, sizeof p->section, "%.*s", (int)len, line);
    p->in_black_boxes = n == strlen("Black Boxes") && memcmp(title, "Black Boxes", n) == 0;
}

/* ---- The report parser -------------------------------------------------- */

/* "| Site Type | Used | ... | Available | Util% |" starts a table. */
static int read_table_header(struct parse *p, const struct cell *cells, int nc, int lineno)
{
    struct columns *col = &p->col;
    col->used = col->available = col->util = -1;
    for (int i = 1; i < nc; i++) {
        if (cell_is(&cells[i], "Used"))
            col->used = i;
        else if (cell_is(&cells[i], "Available"))
            col->available = i;
        else if (cell_is(&cells[i], "Util%"))
            col->util = i;
        else if (cell_is(&cells[i], "Non-Assigned") || cell_is(&cells[i], "Parent"))
            return partial_report_error(p, lineno,
                                        "a table with 'Parent', 'Child' and 'Non-Assigned' "
                                        "columns is made by",
                                        PARTIAL_PBLOCKS, "");
    }
    if (col->used < 0 || col->available < 0 || col->util < 0)
        col->used = col->available = col->util = -1; /* e.g. per-SLR tables */
    return EEB_OK;
}

/* A row of a "Site Type" table: one of the four M_u needs, or another. */
static int read_resource_row(struct parse *p, const struct cell *cells, int nc, int lineno)
{
    struct cell rowname = cells[0];
    while (rowname.n && (rowname.s[rowname.n - 1] == '*' || rowname.s[rowname.n - 1] == ' '))
        rowname.n--;
    for (size_t r = 0; r < sizeof row_names / sizeof row_names[0]; r++) {
        if (!cell_is(&rowname, row_names[r].row))
            continue;
        enum eeb_util_kind kind = row_names[r].kind;
        if (p->u.line[kind])
            return EEB_OK; /* the first table that has the row wins */
        unsigned narrowed = p->families & row_names[r].families;
        if (!narrowed) {
            /* Not an error yet: a name another family gives this row may
             * stand for a row M_u does not read in this family's report.
             * It is said only if no row of the report's family turns up. */
            if (!p->mismatch[kind].line) {
                p->mismatch[kind].line = lineno;
                p->mismatch[kind].with = p->family_line;
                p->mismatch[kind].row = row_names[r].row;
            }
            return EEB_OK;
        }
        if (narrowed != p->families)
            p->families = narrowed, p->family_line = lineno;
        return read_row(cells, nc, &p->col, p->name, lineno, row_names[r].row, &p->u, kind, p->err,
                        p->errlen);
    }
    return EEB_OK;
}

/* One line that starts with '|'. */
static int read_bar_line(struct parse *p, const char *line, size_t n, int lineno)
{
    struct cell cells[MAX_CELLS];
    int nc = split_row(line, n, cells, MAX_CELLS);
    if (nc < 0) {
        header_field(line, n, "Design", p->design, sizeof p->design);
        header_field(line, n, "Device", p->u.device, sizeof p->u.device);
        header_field(line, n, "Design State", p->u.state, sizeof p->u.state);
        if (p->u.state[0] && !p->u.state_line)
            p->u.state_line = lineno;
        if (!p->command[0]) {
            header_field(line, n, "Command", p->command, sizeof p->command);
            if (p->command[0])
                p->command_line = lineno;
        }
        return out_of_context_error(p, line, n, lineno);
    }
    int rc;
    if (!p->header_checked && (rc = check_command(p)))
        return rc;
    if (p->in_black_boxes) {
        if (!cell_is(&cells[0], "Ref Name") && cells[0].n)
            add_black_box(p, &cells[0], lineno);
        return EEB_OK;
    }
    if (cell_is(&cells[0], "Site Type"))
        return read_table_header(p, cells, nc, lineno);
    if (cell_is(&cells[0], "Name"))
        for (int i = 1; i < nc; i++)
            if (cell_is(&cells[i], "LUTAsMem"))
                return kernel_report_error(p, lineno);
    return p->col.used < 0 ? EEB_OK : read_resource_row(p, cells, nc, lineno);
}

/* After the last line: whether what was read is the whole design's. */
static int check_whole_design(struct parse *p, int lines)
{
    int rc;
    if (!p->header_checked && (rc = check_command(p)))
        return rc;
    if (p->black_boxes)
        return black_boxes_error(p);
    const struct eeb_util *u = &p->u;
    for (int k = 0; k < EEB_UTIL_COUNT; k++) {
        if (u->line[k])
            continue;
        char mixed[160] = "";
        if (p->mismatch[k].line)
            snprintf(mixed, sizeof mixed, "; line %d: '%s' mixes device families with line %d",
                     p->mismatch[k].line, p->mismatch[k].row, p->mismatch[k].with);
        return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                        "%s: no %s row%s in a '| Site Type | Used | ... | Available | Util%% |' "
                        "table (%d lines read)%s",
                        p->name, missing_row[k].text, missing_row[k].versal, lines, mixed);
    }
    int counted = 0;
    for (int k = 0; k < EEB_UTIL_COUNT; k++)
        counted |= u->used[k] > 0;
    if (!counted)
        return eeb_errf(p->err, p->errlen, EEB_EFORMAT,
                        "%s: LUT, FF, BRAM and DSP are all 0 (lines %d, %d, %d and %d%s%s%s): "
                        "M_u would be 0, a perfect score, for a design whose resources were not "
                        "counted; give the placed or routed report of the whole design, e.g. "
                        "impl_1/%s_utilization_placed.rpt",
                        p->name, u->line[EEB_UTIL_LUT], u->line[EEB_UTIL_FF],
                        u->line[EEB_UTIL_BRAM], u->line[EEB_UTIL_DSP],
                        u->state[0] ? "; Design State '" : "", u->state, u->state[0] ? "'" : "",
                        top_name(p));
    return EEB_OK;
}

int eeb_score_util_parse(const char *text, size_t len, const char *name, struct eeb_util *out,
                         char *err, size_t errlen)
{
    struct parse parse = {
        .name = name,
        .err = err,
        .errlen = errlen,
        .col = {-1, -1, -1},
        .families = FAMILY_ANY,
    };
    struct parse *p = &parse;
    int lineno = 0, rc = EEB_OK;
    const char *s = text, *end = text + len;

    while (s < end && rc == EEB_OK) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        const char *line = s;
        s = nl ? nl + 1 : end;
        lineno++;
        if (n && line[n - 1] == '\r')
            n--;
        if (n == 0 || (line[0] != '|' && line[0] != '+')) {
            p->col.used = p->col.available = p->col.util = -1; /* a table ends here */
            read_section_title(p, line, n);
        } else if (line[0] == '|') {
            rc = read_bar_line(p, line, n, lineno);
        }
    }
    if (rc == EEB_OK)
        rc = check_whole_design(p, lineno);
    if (rc == EEB_OK) {
        snprintf(p->u.family, sizeof p->u.family, "%s",
                 p->families == FAMILY_7SERIES  ? "7series"
                 : p->families == FAMILY_VERSAL ? "versal"
                                                : "ultrascale");
        *out = p->u;
    }
    return rc;
}

/* ---- Files and specs ----------------------------------------------------- */

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

int eeb_score_util_check_implemented(const struct eeb_util *util, const char *name, char *err,
                                     size_t errlen)
{
    /* "Fully Placed", "Routed": placement's and routing's states */
    if (!util->state[0] || strstr(util->state, "Placed") || strstr(util->state, "Routed"))
        return EEB_OK;
    return eeb_errf(err, errlen, EEB_EFORMAT,
                    "%s line %d: Design State '%s', not placed: a synthesized design's counts are "
                    "synthesis estimates, and M_u is the implemented design's; give the placed or "
                    "routed report of the whole design (report_utilization after place_design or "
                    "route_design, e.g. impl_1/TOP_utilization_placed.rpt)",
                    name, util->state_line, util->state);
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
    struct eeb_util u;
    char *report = NULL;
    int rc = read_report(arg, &u, &report, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_score_util_check_implemented(&u, arg, err, errlen);
    if (rc == EEB_OK) {
        *out = u;
        if (text)
            *text = report, report = NULL;
    }
    free(report);
    return rc;
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
    int counted = 0;
    for (int k = 0; k < EEB_UTIL_COUNT; k++) {
        if (!seen[k])
            return eeb_errf(err, errlen, EEB_EINVAL, "utilization '%s': '%s' is missing", spec,
                            kind_names[k]);
        counted |= u.frac[k] > 0;
    }
    /* as for a report whose counts are all 0: a design uses something */
    if (!counted)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "utilization '%s': LUT, FF, BRAM and DSP all 0 would make M_u 0, a "
                        "perfect score, for a design that uses nothing; give the fractions the "
                        "design's placed or routed report shows",
                        spec);
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
