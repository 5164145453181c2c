/*
 * trace_csv.c - a power trace in a CSV, eeb's own or another tool's, read
 * for replay:.
 *
 * The first line that is not blank or a comment ('#' to the end of a
 * line) says the layout.  Its separator is ';' if it has one, else a tab
 * if it has one, else ','; with ';' or a tab a number may have a decimal
 * comma ("4,95").  If every field of it is a name, it is a header and the
 * columns are found by name, a unit in the name scaling them ("power_mW",
 * "Power (W)", "P [uW]", "µW"; "timestamp_ms", "Time [s]"), or as the
 * URI names them (power=NAME); other columns are ignored.  If every field
 * is a number it is data, in eeb's own layout t_s,watts[,volts,amps].
 * Anything else is an error: a line of data is never taken for a header.
 *
 * Times are offsets, epoch seconds, epoch milliseconds (given the unit) or
 * ISO 8601 date-times: only their differences are used.
 *
 * Sections: fields and numbers; units and names; the header; the data.
 */
#include "power_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_FIELDS 256
#define QUOTE_LEN  80 /* of a line quoted in a message */

enum kind { TIME, POWER, VOLTS, AMPS, KINDS };

static const char *const kind_names[KINDS] = {"time", "power", "volts", "amps"};
static const char *const kind_units[KINDS] = {"s, ms, us, ns, min, h", "W, mW, uW, kW", "V, mV",
                                              "A, mA, uA"};

struct column {
    int index;          /* its field, from 0; -1: the trace has none */
    double scale;       /* to seconds, watts, volts, amps */
    char unit[32];      /* as the header wrote it, "" if none */
    const char *header; /* its name in the header, NULL without one */
};

struct csv {
    struct power_trace *t;
    char sep;
    int header_line; /* 0: none, the layout is eeb's own */
    struct column col[KINDS];
    int iso_time;       /* the times are ISO 8601 date-times */
    double origin;      /* the first reading's time: as written, */
    int64_t origin_sec; /* or an ISO time's whole seconds */
    double origin_frac; /* and fraction */
};

/* ---- fields and numbers ---- */

/* f without the blanks around it, and the double quotes around that. */
static char *trim(char *f)
{
    while (isspace((unsigned char)*f))
        f++;
    size_t n = strlen(f);
    while (n && isspace((unsigned char)f[n - 1]))
        f[--n] = '\0';
    if (n >= 2 && f[0] == '"' && f[n - 1] == '"') {
        f[n - 1] = '\0';
        return trim(f + 1);
    }
    return f;
}

/* Splits line at sep, each field trimmed; trailing empty fields (a
 * separator ending the line) dropped.  How many. */
static int split(char *line, char sep, char **f)
{
    int n = 0;
    for (char *s = line; s && n < MAX_FIELDS; n++) {
        char *next = strchr(s, sep);
        if (next)
            *next++ = '\0';
        f[n] = trim(s);
        s = next;
    }
    while (n > 1 && !*f[n - 1])
        n--;
    return n;
}

/* text as a finite number; with a separator other than ',' one comma may
 * be the decimal point.  0 if it is not one. */
static int number(const char *text, char sep, double *out)
{
    char buf[64];
    size_t len = strlen(text);
    if (!len || len >= sizeof buf || strpbrk(text, "xXpP") ||
        !(isdigit((unsigned char)*text) || strchr("+-.", *text)))
        return 0;
    memcpy(buf, text, len + 1);
    char *comma = strchr(buf, ',');
    if (comma) {
        if (sep == ',' || strchr(comma + 1, ',') || strchr(buf, '.'))
            return 0;
        *comma = '.';
    }
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end == buf || *end || errno || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

/* An ISO 8601 date-time, "2021-04-15T22:14:22.624Z" (a space for the T,
 * seconds and zone optional), as whole seconds and a fraction; 0 if not. */
static int iso_time(const char *s, int64_t *sec, double *frac)
{
    int y, mo, d, h, mi, se = 0, n = 0, m = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10 ||
        (s[10] != 'T' && s[10] != ' ') || sscanf(s + 11, "%2d:%2d%n", &h, &mi, &m) != 2 || m != 5)
        return 0;
    s += 16;
    *frac = 0;
    if (*s == ':') {
        if (!isdigit((unsigned char)s[1]) || !isdigit((unsigned char)s[2]))
            return 0;
        se = (s[1] - '0') * 10 + (s[2] - '0');
        s += 3;
        if ((*s == '.' || *s == ',') && isdigit((unsigned char)s[1])) {
            char *end;
            char digits[24] = "0.";
            size_t k = strspn(s + 1, "0123456789");
            snprintf(digits + 2, sizeof digits - 2, "%.*s", (int)(k < 20 ? k : 20), s + 1);
            *frac = strtod(digits, &end);
            s += 1 + k;
        }
    }
    int zone = 0, zh, zm = 0;
    if (*s == 'Z') {
        s++;
    } else if ((*s == '+' || *s == '-') && isdigit((unsigned char)s[1]) &&
               isdigit((unsigned char)s[2])) {
        zh = (s[1] - '0') * 10 + (s[2] - '0');
        const char *mm = s[3] == ':' ? s + 4 : s + 3;
        if (isdigit((unsigned char)mm[0]) && isdigit((unsigned char)mm[1]))
            zm = (mm[0] - '0') * 10 + (mm[1] - '0'), mm += 2;
        zone = (*s == '-' ? -1 : 1) * (zh * 3600 + zm * 60);
        s = mm;
    }
    if (*s || power_civil_seconds(y, mo, d, h, mi, se, sec) != 0)
        return 0;
    *sec -= zone;
    return 1;
}

/* ---- units and names ---- */

static const struct {
    const char *word;
    enum kind kind;
    double scale;
} unit_words[] = {
    {"watt", POWER, 1},
    {"watts", POWER, 1},
    {"milliwatt", POWER, 1e-3},
    {"milliwatts", POWER, 1e-3},
    {"microwatt", POWER, 1e-6},
    {"microwatts", POWER, 1e-6},
    {"kilowatt", POWER, 1e3},
    {"kilowatts", POWER, 1e3},
    {"volt", VOLTS, 1},
    {"volts", VOLTS, 1},
    {"millivolt", VOLTS, 1e-3},
    {"millivolts", VOLTS, 1e-3},
    {"amp", AMPS, 1},
    {"amps", AMPS, 1},
    {"ampere", AMPS, 1},
    {"amperes", AMPS, 1},
    {"milliamp", AMPS, 1e-3},
    {"milliamps", AMPS, 1e-3},
    {"milliampere", AMPS, 1e-3},
    {"milliamperes", AMPS, 1e-3},
    {"microamp", AMPS, 1e-6},
    {"microamps", AMPS, 1e-6},
    {"sec", TIME, 1},
    {"secs", TIME, 1},
    {"second", TIME, 1},
    {"seconds", TIME, 1},
    {"msec", TIME, 1e-3},
    {"millisecond", TIME, 1e-3},
    {"milliseconds", TIME, 1e-3},
    {"usec", TIME, 1e-6},
    {"microsecond", TIME, 1e-6},
    {"microseconds", TIME, 1e-6},
    {"nsec", TIME, 1e-9},
    {"nanosecond", TIME, 1e-9},
    {"nanoseconds", TIME, 1e-9},
    {"min", TIME, 60},
    {"mins", TIME, 60},
    {"minute", TIME, 60},
    {"minutes", TIME, 60},
    {"h", TIME, 3600},
    {"hr", TIME, 3600},
    {"hrs", TIME, 3600},
    {"hour", TIME, 3600},
    {"hours", TIME, 3600},
};

/* A unit: a word above (any case), or a symbol, W V A s after an SI
 * prefix m u µ μ n k.  "MW" is not one: mega is no edge board's, and its
 * case is the only thing telling it from milli. */
static int unit_of(const char *u, enum kind *kind, double *scale)
{
    for (size_t i = 0; i < sizeof unit_words / sizeof *unit_words; i++)
        if (strcasecmp(u, unit_words[i].word) == 0) {
            *kind = unit_words[i].kind, *scale = unit_words[i].scale;
            return 1;
        }
    double prefix = 1;
    if (*u == 'm')
        prefix = 1e-3, u++;
    else if (*u == 'u')
        prefix = 1e-6, u++;
    else if (strncmp(u, "\xc2\xb5", 2) == 0 || strncmp(u, "\xce\xbc", 2) == 0) /* µ, μ */
        prefix = 1e-6, u += 2;
    else if (*u == 'n')
        prefix = 1e-9, u++;
    else if (*u == 'k')
        prefix = 1e3, u++;
    if (!u[0] || u[1])
        return 0;
    const char *at = strchr("WwVvAaSs", u[0]);
    if (!at)
        return 0;
    *kind = (enum kind[]){POWER, VOLTS, AMPS, TIME}[(at - "WwVvAaSs") / 2];
    *scale = prefix;
    return 1;
}

/* Column names, lower case, '_' for blanks and '-'. */
static const char *const base_names[KINDS][20] = {
    {"t", "time", "timestamp", "time_stamp", "ts", "elapsed", "elapsed_time", "time_elapsed",
     "relative_time", "epoch", "unix", "unix_time", "unixtime", "datetime", "date_time",
     "sample_time", NULL},
    {"p", "power", "pwr", "watt", "watts", "active_power", "real_power", "avg_power",
     "average_power", "power_avg", "p_avg", "mean_power", "total_power", NULL},
    {"v", "u", "volt", "volts", "voltage", "bus_voltage", "vbus", "vrms", "urms", "v_rms", "u_rms",
     NULL},
    {"a", "i", "amp", "amps", "ampere", "amperes", "current", "irms", "i_rms", "a_rms", NULL},
};

/* A header's name cut into a base (normalized) and a unit: in brackets,
 * "Power (W)", "P [uW]"; after the last '_', ' ', '-' or '/' if that is a
 * unit, "power_mW"; or the whole name, "µW". */
static void name_parts(const char *name, char *base, size_t blen, char *unit, size_t ulen)
{
    enum kind k;
    double scale;
    const char *open = strpbrk(name, "([");
    size_t n = strlen(name);
    unit[0] = '\0';
    if (open) {
        const char *close = strchr(open, *open == '(' ? ')' : ']');
        size_t len = close ? (size_t)(close - open - 1) : strlen(open + 1);
        char inside[64];
        snprintf(inside, sizeof inside, "%.*s", (int)len, open + 1);
        snprintf(unit, ulen, "%s", trim(inside));
        n = (size_t)(open - name);
    } else {
        const char *cut = NULL;
        for (const char *s = name; *s; s++)
            if (strchr("_ -/", *s))
                cut = s;
        if (cut && unit_of(cut + 1, &k, &scale)) {
            snprintf(unit, ulen, "%s", cut + 1);
            n = (size_t)(cut - name);
        } else if (unit_of(name, &k, &scale)) {
            snprintf(unit, ulen, "%s", name);
            n = 0;
        }
    }
    while (n && isspace((unsigned char)name[n - 1]))
        n--;
    size_t i = 0;
    for (; i < n && i + 1 < blen; i++)
        base[i] = name[i] == ' ' || name[i] == '-' ? '_' : (char)tolower((unsigned char)name[i]);
    base[i] = '\0';
}

/* The kind of the header's column index, name, into *kind (KINDS: none
 * replay reads) and col; given a kind (a column the URI names), that one.
 * An error naming the column when its unit is none, or another kind's. */
static int name_kind(const struct csv *c, int index, const char *name, enum kind *kind,
                     struct column *col, char *err, size_t errlen)
{
    char base[64], unit[32];
    name_parts(name, base, sizeof base, unit, sizeof unit);
    enum kind by_unit = KINDS, by_name = KINDS;
    double scale = 1;
    int has_unit = unit[0] && unit_of(unit, &by_unit, &scale);
    for (int k = 0; k < KINDS && by_name == KINDS; k++)
        for (int i = 0; base_names[k][i]; i++)
            if (strcmp(base, base_names[k][i]) == 0)
                by_name = (enum kind)k;
    if (by_name == KINDS && !base[0])
        by_name = by_unit;
    enum kind want = *kind != KINDS ? *kind : by_name;
    if (want == KINDS)
        return EEB_OK;
    if (unit[0] && (!has_unit || by_unit != want))
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: column %d '%s': unit '%s' is not one of %s", c->t->path,
                        c->header_line, index + 1, name, unit, kind_units[want]);
    *kind = want;
    *col = (struct column){.index = index, .scale = scale, .header = name};
    snprintf(col->unit, sizeof col->unit, "%s", unit);
    return EEB_OK;
}

/* ---- the header ---- */

static void list_names(char **f, int nf, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < nf; i++) {
        size_t used = strlen(out);
        if (used + strlen(f[i]) + 12 > len) {
            snprintf(out + used, len - used, ", ...");
            break;
        }
        snprintf(out + used, len - used, "%s'%s'", i ? ", " : "", f[i]);
    }
}

/* The column the URI names for kind k (by its header text, any case). */
static int named_column(struct csv *c, char **f, int nf, enum kind k, const char *name, char *err,
                        size_t errlen)
{
    for (int i = 0; i < nf; i++)
        if (strcasecmp(f[i], name) == 0) {
            enum kind want = k;
            struct column col;
            int rc = name_kind(c, i, f[i], &want, &col, err, errlen);
            if (rc == EEB_OK)
                c->col[k] = col;
            return rc;
        }
    char names[256];
    list_names(f, nf, names, sizeof names);
    return eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: no column '%s' (%s=): the columns are %s",
                    c->t->path, c->header_line, name, kind_names[k], names);
}

/* Finds the columns in the header's fields f: EEB_EINVAL when two could be
 * one quantity, EEB_EFORMAT without a time or a power. */
static int read_header(struct csv *c, char **f, int nf, const struct power_trace_options *o,
                       char *err, size_t errlen)
{
    int rc = EEB_OK;
    for (int k = 0; k < KINDS && rc == EEB_OK; k++)
        if (o->column[k])
            rc = named_column(c, f, nf, (enum kind)k, o->column[k], err, errlen);
    for (int i = 0; i < nf && rc == EEB_OK; i++) {
        enum kind k = KINDS;
        struct column col;
        if ((rc = name_kind(c, i, f[i], &k, &col, err, errlen)) != EEB_OK || k == KINDS ||
            o->column[k])
            continue;
        if (c->col[k].index >= 0)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s:%d: two %s columns, %d '%s' and %d '%s': say which with ?%s=NAME",
                            c->t->path, c->header_line, kind_names[k], c->col[k].index + 1,
                            c->col[k].header, i + 1, f[i], kind_names[k]);
        c->col[k] = col;
    }
    for (int k = TIME; k <= POWER && rc == EEB_OK; k++)
        if (c->col[k].index < 0) {
            char names[256];
            list_names(f, nf, names, sizeof names);
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s:%d: no %s column among %s: name it %s (a unit after it: %s), or "
                          "choose one with ?%s=NAME",
                          c->t->path, c->header_line, kind_names[k], names,
                          k == TIME ? "t, time, timestamp or elapsed" : "P, power or watts",
                          k == TIME ? "time_ms, 'Time (s)'" : "power_mW, 'Power (W)', 'P [uW]'",
                          kind_names[k]);
        }
    return rc;
}

/* ---- the data ---- */

static void quote(char *out, size_t len, const char *line)
{
    snprintf(out, len, "%.*s%s", QUOTE_LEN, line, strlen(line) > QUOTE_LEN ? "..." : "");
}

/* The field of kind k on a line, as written (unscaled): EEB_OK with *v
 * (NAN for an empty volts or amps), or an error naming the line and
 * column. */
static int field(const struct csv *c, int line, char **f, int nf, enum kind k, double *v, char *err,
                 size_t errlen)
{
    const struct column *col = &c->col[k];
    char name[96];
    snprintf(name, sizeof name, "%d", col->index + 1);
    if (col->header)
        snprintf(name + strlen(name), sizeof name - strlen(name), " '%.80s'", col->header);
    else
        snprintf(name + strlen(name), sizeof name - strlen(name), " (%s)", kind_names[k]);
    if (col->index >= nf)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: no column %s (%d field%s)", c->t->path,
                        line, name, nf, nf == 1 ? "" : "s");
    const char *text = f[col->index];
    if (k >= VOLTS && !*text) {
        *v = NAN;
        return EEB_OK;
    }
    if (!number(text, c->sep, v))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: column %s: '%.40s' is not a number",
                        c->t->path, line, name, text);
    if (k == POWER && *v < 0)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: column %s: %g W (power must be >= 0)",
                        c->t->path, line, name, *v * col->scale);
    return EEB_OK;
}

/* The line's time, in seconds after the first reading's. */
static int time_of(struct csv *c, int line, char **f, int nf, double *t, char *err, size_t errlen)
{
    const struct column *col = &c->col[TIME];
    int64_t sec;
    double frac, raw;
    int first = c->t->n == 0;
    if (col->index < nf && (first ? !col->unit[0] : c->iso_time) &&
        iso_time(f[col->index], &sec, &frac)) {
        c->iso_time = 1;
        if (first)
            c->origin_sec = sec, c->origin_frac = frac;
        *t = (double)(sec - c->origin_sec) + (frac - c->origin_frac);
    } else {
        if (c->iso_time && col->index < nf)
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: column %d: '%.40s' is not an ISO 8601 date-time like the "
                            "lines before",
                            c->t->path, line, col->index + 1, f[col->index]);
        int rc = field(c, line, f, nf, TIME, &raw, err, errlen);
        if (rc != EEB_OK)
            return rc;
        if (first && !col->unit[0] && fabs(raw) > 1e11)
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: column %d '%s' has no unit, and %s s is past the year 5000: "
                            "name the unit (time_ms, 'Time (ms)')",
                            c->t->path, line, col->index + 1, col->header ? col->header : "t_s",
                            f[col->index]);
        /* the difference as written, then scaled: epoch milliseconds
         * stay exact */
        if (first)
            c->origin = raw;
        *t = (raw - c->origin) * col->scale;
    }
    return EEB_OK;
}

/* One line of data into the trace. */
static int read_data(struct csv *c, int line, char *text, char **f, char *err, size_t errlen)
{
    char quoted[QUOTE_LEN + 8];
    quote(quoted, sizeof quoted, text);
    int nf = split(text, c->sep, f);
    if (!c->header_line && nf != 2 && nf != 4)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: '%s': %d numbers without a header; a trace without one is "
                        "t_s,watts[,volts,amps]: name the columns in a header line",
                        c->t->path, line, quoted, nf);
    struct power_trace_point p = {.volts = NAN, .amps = NAN};
    int rc = time_of(c, line, f, nf, &p.t, err, errlen);
    double *value[KINDS] = {NULL, &p.watts, &p.volts, &p.amps};
    for (int k = POWER; k <= AMPS && rc == EEB_OK; k++)
        if (c->col[k].index >= 0 && (k == POWER || c->header_line || nf == 4)) {
            rc = field(c, line, f, nf, (enum kind)k, value[k], err, errlen);
            *value[k] *= c->col[k].scale;
        }
    if (rc == EEB_OK)
        rc = power_trace_add(c->t, line, &p, f[c->col[TIME].index], err, errlen);
    return rc;
}

/* The first line: a header (every field a name) or data (every field a
 * number or a date-time); an error saying why it is neither. */
static int first_line(struct csv *c, int line, char *text, char **f,
                      const struct power_trace_options *o, char *err, size_t errlen)
{
    char quoted[QUOTE_LEN + 8], *copy = strdup(text);
    if (!copy)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", c->t->path);
    quote(quoted, sizeof quoted, text);
    c->sep = strchr(text, ';') ? ';' : strchr(text, '\t') ? '\t' : ',';
    int nf = split(copy, c->sep, f), a_number = -1, not_data = -1;
    for (int i = 0; i < nf; i++) {
        double v;
        int64_t s;
        int data = number(f[i], c->sep, &v) || iso_time(f[i], &s, &v);
        if (data && a_number < 0)
            a_number = i;
        if (!data && not_data < 0)
            not_data = i;
    }
    int rc = EEB_OK;
    if (a_number >= 0 && not_data >= 0)
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "%s:%d: '%s' is neither a header (field %d '%.40s' is a number) nor data "
                      "(field %d '%.40s' is not a finite number)",
                      c->t->path, line, quoted, a_number + 1, f[a_number], not_data + 1,
                      f[not_data]);
    free(copy);
    if (rc != EEB_OK)
        return rc;
    if (not_data >= 0) { /* the header's names point into the text, which outlives the reading */
        c->header_line = line;
        return read_header(c, f, split(text, c->sep, f), o, err, errlen);
    }
    for (int k = 0; k < KINDS; k++)
        if (o->column[k])
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s:%d: no header to find column '%s' (%s=) in: its first line is "
                            "data",
                            c->t->path, line, o->column[k], kind_names[k]);
    for (int k = 0; k < KINDS; k++) /* eeb's own layout */
        c->col[k] = (struct column){.index = k, .scale = 1};
    return read_data(c, line, text, f, err, errlen);
}

int power_trace_read_csv(struct power_trace *t, char *text, const struct power_trace_options *o,
                         char *err, size_t errlen)
{
    if (o->channel || o->date || o->mark)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s= is for PTDaemon logs; this is a CSV",
                        t->path,
                        o->channel ? "channel"
                        : o->date  ? "date"
                                   : "mark");
    struct csv c = {.t = t};
    for (int k = 0; k < KINDS; k++)
        c.col[k].index = -1;
    char **f = malloc(MAX_FIELDS * sizeof *f);
    if (!f)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", t->path);
    if (strncmp(text, "\xef\xbb\xbf", 3) == 0) /* a UTF-8 byte order mark (Windows tools) */
        text += 3;
    int rc = EEB_OK, started = 0;
    char *cursor = text, *s;
    for (int line = 1; rc == EEB_OK && (s = power_trace_line(&cursor)); line++) {
        s[strcspn(s, "#")] = '\0';
        if (!s[strspn(s, " \t")])
            continue;
        rc = started ? read_data(&c, line, s, f, err, errlen)
                     : first_line(&c, line, s, f, o, err, errlen);
        started = 1;
    }
    free(f);
    return rc;
}
