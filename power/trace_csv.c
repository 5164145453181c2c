/*
 * trace_csv.c - a power trace in a CSV, eeb's own or another tool's, read
 * for replay:.
 *
 * The first line that is not blank or a comment ('#' to the end of a
 * line) says the layout.  Its separator is ';' if it has one, else a tab
 * if it has one, else ','.  If every field of it is a name, it is a header
 * and the columns are found by name, a unit in the name scaling them
 * ("power_mW", "Power (W)", "P [uW]", "µW"; "timestamp_ms", "Time [s]",
 * eeb's export's "t_mono_ns"), or as the URI names them (power=NAME);
 * other columns are ignored.  If every field is a number it is data, in
 * eeb's own layout t_s,watts[,volts,amps].  Anything else is an error: a
 * line of data is never taken for a header.
 *
 * A time column has a unit (its name's, or the URI's time_unit=) or holds
 * ISO 8601 date-times: a bare "time" of numbers is refused, not taken for
 * seconds.  Only the times' differences are used.
 *
 * With ';' or a tab a number may have a decimal comma ("4,95").  The file
 * has one decimal mark, decided by its first number that shows one (or by
 * decimal=): "1,234" cannot decide it, being 1.234 or 1234 with a
 * thousands separator, and eeb reads no thousands separators.
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

/* The quantities a CSV has columns for: the first options, time= to
 * amps=, which name them (enum power_trace_option). */
#define KINDS (EEB_TRACE_AMPS + 1)

static const char *const kind_units[KINDS] = {"s, ms, us, ns, min, h", "W, mW, uW, kW",
                                              "V, mV, Vrms", "A, mA, uA, Arms"};

static const char *kind_name(enum power_trace_option k)
{
    return power_trace_option_list[k].name;
}

struct column {
    int index;          /* its field, from 0; -1: the trace has none */
    double scale;       /* to seconds, watts, volts, amps */
    int has_unit;       /* scale is a unit's: the header's, time_unit='s or eeb's own t_s */
    char unit[32];      /* as the header wrote it, "" if none; "UTC" passed over is none */
    const char *header; /* its name in the header, NULL without one */
};

struct csv {
    struct power_trace *t;
    const struct power_trace_options *o;
    char sep;
    int header_line; /* 0: none, the layout is eeb's own */
    struct column col[KINDS];
    int iso_time;       /* the times are ISO 8601 date-times */
    double origin;      /* the first reading's time: as written, */
    int64_t origin_sec; /* or an ISO time's whole seconds */
    double origin_frac; /* and fraction */
    char decimal;       /* the decimal mark, '.' or ','; 0 until a number shows it */
    int decimal_line;   /* the line whose number decided it; 0: decimal= or the separator */
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

/* text as a finite number with one decimal mark at most, a point or a
 * comma: *mark says which ('.', ',', 0 for none).  0 if it is not one.
 * Whether the mark is the file's is the caller's (decimal_mark). */
static int number(const char *text, double *out, char *mark)
{
    char buf[64];
    size_t len = strlen(text);
    if (!len || len >= sizeof buf || strpbrk(text, "xXpP") ||
        !(isdigit((unsigned char)*text) || strchr("+-.", *text)))
        return 0;
    memcpy(buf, text, len + 1);
    char *comma = strchr(buf, ',');
    *mark = comma ? ',' : strchr(buf, '.') ? '.' : 0;
    if (comma) {
        if (strchr(comma + 1, ',') || strchr(buf, '.'))
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

/* 1 for "1,234", "-12,500": a comma that may as well be a thousands
 * separator (1 to 3 digits, not a lone 0, before it; exactly 3 after). */
static int thousands_like(const char *text)
{
    text += *text == '+' || *text == '-';
    size_t before = strspn(text, "0123456789");
    return before >= 1 && before <= 3 && *text != '0' && text[before] == ',' &&
           strspn(text + before + 1, "0123456789") == 3 && !text[before + 4];
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
    enum power_trace_option kind;
    double scale;
} unit_words[] = {
    {"watt", EEB_TRACE_POWER, 1},
    {"watts", EEB_TRACE_POWER, 1},
    {"milliwatt", EEB_TRACE_POWER, 1e-3},
    {"milliwatts", EEB_TRACE_POWER, 1e-3},
    {"microwatt", EEB_TRACE_POWER, 1e-6},
    {"microwatts", EEB_TRACE_POWER, 1e-6},
    {"kilowatt", EEB_TRACE_POWER, 1e3},
    {"kilowatts", EEB_TRACE_POWER, 1e3},
    {"volt", EEB_TRACE_VOLTS, 1},
    {"volts", EEB_TRACE_VOLTS, 1},
    {"millivolt", EEB_TRACE_VOLTS, 1e-3},
    {"millivolts", EEB_TRACE_VOLTS, 1e-3},
    {"vrms", EEB_TRACE_VOLTS, 1}, /* an AC meter's RMS volts and amps: "Voltage (Vrms)" */
    {"mvrms", EEB_TRACE_VOLTS, 1e-3},
    {"arms", EEB_TRACE_AMPS, 1},
    {"marms", EEB_TRACE_AMPS, 1e-3},
    {"amp", EEB_TRACE_AMPS, 1},
    {"amps", EEB_TRACE_AMPS, 1},
    {"ampere", EEB_TRACE_AMPS, 1},
    {"amperes", EEB_TRACE_AMPS, 1},
    {"milliamp", EEB_TRACE_AMPS, 1e-3},
    {"milliamps", EEB_TRACE_AMPS, 1e-3},
    {"milliampere", EEB_TRACE_AMPS, 1e-3},
    {"milliamperes", EEB_TRACE_AMPS, 1e-3},
    {"microamp", EEB_TRACE_AMPS, 1e-6},
    {"microamps", EEB_TRACE_AMPS, 1e-6},
    {"sec", EEB_TRACE_TIME, 1},
    {"secs", EEB_TRACE_TIME, 1},
    {"second", EEB_TRACE_TIME, 1},
    {"seconds", EEB_TRACE_TIME, 1},
    {"msec", EEB_TRACE_TIME, 1e-3},
    {"millisecond", EEB_TRACE_TIME, 1e-3},
    {"milliseconds", EEB_TRACE_TIME, 1e-3},
    {"usec", EEB_TRACE_TIME, 1e-6},
    {"microsecond", EEB_TRACE_TIME, 1e-6},
    {"microseconds", EEB_TRACE_TIME, 1e-6},
    {"nsec", EEB_TRACE_TIME, 1e-9},
    {"nanosecond", EEB_TRACE_TIME, 1e-9},
    {"nanoseconds", EEB_TRACE_TIME, 1e-9},
    {"min", EEB_TRACE_TIME, 60},
    {"mins", EEB_TRACE_TIME, 60},
    {"minute", EEB_TRACE_TIME, 60},
    {"minutes", EEB_TRACE_TIME, 60},
    {"h", EEB_TRACE_TIME, 3600},
    {"hr", EEB_TRACE_TIME, 3600},
    {"hrs", EEB_TRACE_TIME, 3600},
    {"hour", EEB_TRACE_TIME, 3600},
    {"hours", EEB_TRACE_TIME, 3600},
};

/* A unit: a word above (any case), or a symbol, W V A s after an SI
 * prefix m u µ μ n k.  "MW" is not one: mega is no edge board's, and its
 * case is the only thing telling it from milli. */
static int unit_of(const char *u, enum power_trace_option *kind, double *scale)
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
    *kind = (enum power_trace_option[]){EEB_TRACE_POWER, EEB_TRACE_VOLTS, EEB_TRACE_AMPS,
                                        EEB_TRACE_TIME}[(at - "WwVvAaSs") / 2];
    *scale = prefix;
    return 1;
}

/* Column names, lower case, '_' for blanks and '-'. */
static const char *const base_names[KINDS][20] = {
    {"t", "time", "timestamp", "time_stamp", "ts", "elapsed", "elapsed_time", "time_elapsed",
     "relative_time", "epoch", "unix", "unix_time", "unixtime", "datetime", "date_time",
     "sample_time", "t_mono", NULL}, /* t_mono_ns: eeb power export's (its t_utc_ns is not
                                         one: the samples' spacing is the monotonic clock's) */
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
    enum power_trace_option k;
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

/* 1 for a bracket that looks like a unit eeb does not know: a letter and
 * W, V, A or s ("MW", "GW"), refused even where other brackets are passed
 * over, as mega (MW) must not be read as watts. */
static int unit_like(const char *u)
{
    return strlen(u) == 2 && isalpha((unsigned char)u[0]) && strchr("WVAs", u[1]);
}

/* The kind of the header's column index, name, into *kind (KINDS: none
 * replay reads, or one whose column the URI names: by_option 0) and col;
 * given a kind (by_option: a column the URI names), that one.  An error
 * naming the column when its unit is another kind's, or none: a bracket
 * that is no unit is passed over on a time column (it must then hold ISO
 * date-times: "Time (UTC)") and on a column the URI names ("Power (avg)"). */
static int name_kind(const struct csv *c, int index, const char *name, int by_option,
                     enum power_trace_option *kind, struct column *col, char *err, size_t errlen)
{
    char base[64], unit[32];
    name_parts(name, base, sizeof base, unit, sizeof unit);
    enum power_trace_option by_unit = KINDS, by_name = KINDS;
    double scale = 1;
    int has_unit = unit[0] && unit_of(unit, &by_unit, &scale);
    for (int k = 0; k < KINDS && by_name == KINDS; k++)
        for (int i = 0; base_names[k][i]; i++)
            if (strcmp(base, base_names[k][i]) == 0)
                by_name = (enum power_trace_option)k;
    if (by_name == KINDS && !base[0])
        by_name = by_unit;
    enum power_trace_option want = by_option ? *kind : by_name;
    if (want == KINDS || (!by_option && c->o->value[want]))
        return *kind = KINDS, EEB_OK;
    int passed_over =
        unit[0] && !has_unit && !unit_like(unit) && (by_option || want == EEB_TRACE_TIME);
    if (unit[0] && (has_unit ? by_unit != want : !passed_over)) {
        char hint[80] = "";
        if (!has_unit && !unit_like(unit))
            snprintf(hint, sizeof hint, " (name the column with ?%s=NAME to pass the bracket over)",
                     kind_name(want));
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: column %d '%s': unit '%s' is not one of %s%s", c->t->path,
                        c->header_line, index + 1, name, unit, kind_units[want], hint);
    }
    *kind = want;
    *col = (struct column){.index = index, .scale = scale, .has_unit = has_unit, .header = name};
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
static int named_column(struct csv *c, char **f, int nf, enum power_trace_option k,
                        const char *name, char *err, size_t errlen)
{
    for (int i = 0; i < nf; i++)
        if (strcasecmp(f[i], name) == 0) {
            enum power_trace_option want = k;
            struct column col;
            int rc = name_kind(c, i, f[i], 1, &want, &col, err, errlen);
            if (rc == EEB_OK)
                c->col[k] = col;
            return rc;
        }
    char names[256];
    list_names(f, nf, names, sizeof names);
    return eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: no column '%s' (%s=): the columns are %s",
                    c->t->path, c->header_line, name, kind_name(k), names);
}

/* The scale of a time_unit= (s, ms, us, ns). */
static double time_unit_scale(const char *unit)
{
    static const char *const units[] = {"s", "ms", "us", "ns"};
    for (int i = 0; i < 4; i++)
        if (strcmp(unit, units[i]) == 0)
            return (double[]){1, 1e-3, 1e-6, 1e-9}[i];
    return NAN; /* the URI's parser let no other through */
}

/* time_unit= on the time column: EEB_EINVAL if its name says another. */
static int set_time_unit(struct csv *c, const char *unit, char *err, size_t errlen)
{
    struct column *col = &c->col[EEB_TRACE_TIME];
    double scale = time_unit_scale(unit);
    if (col->has_unit && col->header && fabs(col->scale / scale - 1) > 1e-9)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s:%d: column %d '%s' says its unit, %s; time_unit=%s says otherwise",
                        c->t->path, c->header_line, col->index + 1, col->header, col->unit, unit);
    col->scale = scale, col->has_unit = 1;
    return EEB_OK;
}

/* Finds the columns in the header's fields f: EEB_EINVAL when two could be
 * one quantity, EEB_EFORMAT without a time or a power. */
static int read_header(struct csv *c, char **f, int nf, char *err, size_t errlen)
{
    const struct power_trace_options *o = c->o;
    int rc = EEB_OK;
    for (int k = 0; k < KINDS && rc == EEB_OK; k++)
        if (o->value[k])
            rc = named_column(c, f, nf, (enum power_trace_option)k, o->value[k], err, errlen);
    for (int i = 0; i < nf && rc == EEB_OK; i++) {
        enum power_trace_option k = KINDS;
        struct column col;
        if ((rc = name_kind(c, i, f[i], 0, &k, &col, err, errlen)) != EEB_OK || k == KINDS)
            continue;
        if (c->col[k].index >= 0)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s:%d: two %s columns, %d '%s' and %d '%s': say which with ?%s=NAME",
                            c->t->path, c->header_line, kind_name(k), c->col[k].index + 1,
                            c->col[k].header, i + 1, f[i], kind_name(k));
        c->col[k] = col;
    }
    for (int k = EEB_TRACE_TIME; k <= EEB_TRACE_POWER && rc == EEB_OK; k++)
        if (c->col[k].index < 0) {
            char names[256];
            list_names(f, nf, names, sizeof names);
            rc = eeb_errf(
                err, errlen, EEB_EFORMAT,
                "%s:%d: no %s column among %s: name it %s (a unit after it: %s), or "
                "choose one with ?%s=NAME",
                c->t->path, c->header_line, kind_name(k), names,
                k == EEB_TRACE_TIME ? "t, time, timestamp or elapsed" : "P, power or watts",
                k == EEB_TRACE_TIME ? "time_ms, 'Time (s)'" : "power_mW, 'Power (W)', 'P [uW]'",
                kind_name(k));
        }
    if (rc == EEB_OK && o->value[EEB_TRACE_TIME_UNIT])
        rc = set_time_unit(c, o->value[EEB_TRACE_TIME_UNIT], err, errlen);
    return rc;
}

/* ---- the data ---- */

static void quote(char *out, size_t len, const char *line)
{
    snprintf(out, len, "%.*s%s", QUOTE_LEN, line, strlen(line) > QUOTE_LEN ? "..." : "");
}

/* "2 'power_mW'", or "2 (power)" without a header: a column in messages. */
static void column_name(const struct csv *c, enum power_trace_option k, char *out, size_t len)
{
    const struct column *col = &c->col[k];
    if (col->header)
        snprintf(out, len, "%d '%.80s'", col->index + 1, col->header);
    else
        snprintf(out, len, "%d (%s)", col->index + 1, kind_name(k));
}

/* A number's decimal mark (mark, 0 if none) against the file's: the first
 * number with one decides it, unless it could be a thousands separator's
 * comma; another mark after that is an error. */
static int decimal_mark(struct csv *c, int line, const char *column, const char *text, char mark,
                        char *err, size_t errlen)
{
    if (!mark || mark == c->decimal)
        return EEB_OK;
    if (c->decimal) {
        char why[96];
        if (c->decimal_line)
            snprintf(why, sizeof why, "line %d's numbers have a decimal %s", c->decimal_line,
                     c->decimal == ',' ? "comma" : "point");
        else if (c->o->value[EEB_TRACE_DECIMAL])
            snprintf(why, sizeof why, "decimal=%s says", c->o->value[EEB_TRACE_DECIMAL]);
        else
            snprintf(why, sizeof why, "commas separate its fields");
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: column %s: '%.40s' has a decimal %s, but %s (a file has one "
                        "decimal mark, and eeb reads no thousands separators)",
                        c->t->path, line, column, text, mark == ',' ? "comma" : "point", why);
    }
    if (mark == ',' && thousands_like(text)) {
        char point[48], whole[48];
        snprintf(point, sizeof point, "%s", text);
        *strchr(point, ',') = '.';
        size_t comma = strcspn(text, ",");
        snprintf(whole, sizeof whole, "%.*s%s", (int)comma, text, text + comma + 1);
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s:%d: column %s: '%s' is %s with a decimal comma, or %s with a "
                        "thousands separator: say ?decimal=, if the comma is the decimal mark "
                        "(eeb reads no thousands separators)",
                        c->t->path, line, column, text, point, whole);
    }
    c->decimal = mark, c->decimal_line = line;
    return EEB_OK;
}

/* The field of kind k on a line, as written (unscaled): EEB_OK with *v
 * (NAN for an empty or missing volts or amps: "0,1," ends in an empty
 * one), or an error naming the line and column. */
static int field(struct csv *c, int line, char **f, int nf, enum power_trace_option k, double *v,
                 char *err, size_t errlen)
{
    const struct column *col = &c->col[k];
    char name[96];
    column_name(c, k, name, sizeof name);
    const char *text = col->index < nf ? f[col->index] : "";
    if (k >= EEB_TRACE_VOLTS && !*text) {
        *v = NAN;
        return EEB_OK;
    }
    if (col->index >= nf)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: no column %s (%d field%s)", c->t->path,
                        line, name, nf, nf == 1 ? "" : "s");
    char mark;
    if (!number(text, v, &mark))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: column %s: '%.40s' is not a number",
                        c->t->path, line, name, text);
    int rc = decimal_mark(c, line, name, text, mark, err, errlen);
    if (rc == EEB_OK && k == EEB_TRACE_POWER && *v < 0)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: column %s: %g W (power must be >= 0)",
                      c->t->path, line, name, *v * col->scale);
    return rc;
}

/* The first line's time in a column without a unit is not an ISO
 * date-time: EEB_EINVAL naming the header's column and saying what to add. */
static int no_time_unit(const struct csv *c, int line, const char *text, char *err, size_t errlen)
{
    const struct column *col = &c->col[EEB_TRACE_TIME];
    char bracket[64] = "";
    if (col->unit[0])
        snprintf(bracket, sizeof bracket, " ('%s' is not one)", col->unit);
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "%s:%d: column %d '%s' has no unit%s, and its times are not ISO 8601 "
                    "date-times (line %d: '%.40s'): name the unit in the header (t_s, time_ms, "
                    "'Time [s]', 'Time (us)') or add ?time_unit=s|ms|us|ns",
                    c->t->path, c->header_line, col->index + 1, col->header, bracket, line, text);
}

/* The line's time, in seconds after the first reading's. */
static int time_of(struct csv *c, int line, char **f, int nf, double *t, char *err, size_t errlen)
{
    const struct column *col = &c->col[EEB_TRACE_TIME];
    int64_t sec;
    double frac, raw;
    int first = c->t->n == 0;
    if (col->index >= nf) /* no time: the error naming the column */
        return field(c, line, f, nf, EEB_TRACE_TIME, &raw, err, errlen);
    const char *text = f[col->index];
    if (first && !col->has_unit) { /* a date-time needs no unit; a number does */
        if (!iso_time(text, &sec, &frac))
            return no_time_unit(c, line, text, err, errlen);
        c->iso_time = 1;
    }
    if (c->iso_time) {
        if (!iso_time(text, &sec, &frac))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: column %d: '%.40s' is not an ISO 8601 date-time like the "
                            "lines before",
                            c->t->path, line, col->index + 1, text);
        if (first)
            c->origin_sec = sec, c->origin_frac = frac;
        *t = (double)(sec - c->origin_sec) + (frac - c->origin_frac);
        return EEB_OK;
    }
    int rc = field(c, line, f, nf, EEB_TRACE_TIME, &raw, err, errlen);
    if (rc != EEB_OK)
        return rc;
    /* the difference as written, then scaled: epoch milliseconds stay exact */
    if (first)
        c->origin = raw;
    *t = (raw - c->origin) * col->scale;
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
    struct power_trace_point p = {.volts = NAN, .amps = NAN, .valid = 1, .line = line};
    int rc = time_of(c, line, f, nf, &p.t, err, errlen);
    double *value[KINDS] = {NULL, &p.watts, &p.volts, &p.amps};
    for (int k = EEB_TRACE_POWER; k <= EEB_TRACE_AMPS && rc == EEB_OK; k++)
        if (c->col[k].index >= 0 && (k == EEB_TRACE_POWER || c->header_line || nf == 4)) {
            rc = field(c, line, f, nf, (enum power_trace_option)k, value[k], err, errlen);
            *value[k] *= c->col[k].scale;
        }
    if (rc == EEB_OK)
        rc = power_trace_add(c->t, &p, f[c->col[EEB_TRACE_TIME].index], err, errlen);
    return rc;
}

/* The separator, and the decimal mark if decimal= or the separator says
 * it: EEB_EINVAL for a decimal comma in fields separated by commas. */
static int separator(struct csv *c, int line, const char *text, char *err, size_t errlen)
{
    const char *given = c->o->value[EEB_TRACE_DECIMAL];
    c->sep = strchr(text, ';') ? ';' : strchr(text, '\t') ? '\t' : ',';
    c->decimal = given ? given[0] : c->sep == ',' ? '.' : 0;
    if (given && given[0] == ',' && c->sep == ',')
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s:%d: decimal=, but commas separate its fields (a decimal comma "
                        "needs ';' or a tab between them)",
                        c->t->path, line);
    return EEB_OK;
}

/* The first line: a header (every field a name) or data (every field a
 * number or a date-time); an error saying why it is neither. */
static int first_line(struct csv *c, int line, char *text, char **f, char *err, size_t errlen)
{
    const struct power_trace_options *o = c->o;
    int rc = separator(c, line, text, err, errlen);
    char quoted[QUOTE_LEN + 8], *copy = rc == EEB_OK ? strdup(text) : NULL;
    if (rc != EEB_OK)
        return rc;
    if (!copy)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", c->t->path);
    quote(quoted, sizeof quoted, text);
    int nf = split(copy, c->sep, f), a_number = -1, not_data = -1;
    for (int i = 0; i < nf; i++) {
        double v;
        int64_t s;
        char mark;
        int data = number(f[i], &v, &mark) || iso_time(f[i], &s, &v);
        if (data && a_number < 0)
            a_number = i;
        if (!data && not_data < 0)
            not_data = i;
    }
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
        return read_header(c, f, split(text, c->sep, f), err, errlen);
    }
    for (int k = 0; k < KINDS; k++)
        if (o->value[k])
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s:%d: no header to find column '%s' (%s=) in: its first line is "
                            "data",
                            c->t->path, line, o->value[k], kind_name(k));
    for (int k = 0; k < KINDS; k++) /* eeb's own layout, t_s,watts[,volts,amps] */
        c->col[k] = (struct column){.index = k, .scale = 1, .has_unit = 1};
    if (o->value[EEB_TRACE_TIME_UNIT])
        c->col[EEB_TRACE_TIME].scale = time_unit_scale(o->value[EEB_TRACE_TIME_UNIT]);
    return read_data(c, line, text, f, err, errlen);
}

int power_trace_read_csv(struct power_trace *t, char *text, const struct power_trace_options *o,
                         char *err, size_t errlen)
{
    int rc = power_trace_options_for(t, o, 0, err, errlen);
    if (rc != EEB_OK)
        return rc;
    struct csv c = {.t = t, .o = o};
    for (int k = 0; k < KINDS; k++)
        c.col[k].index = -1;
    char **f = malloc(MAX_FIELDS * sizeof *f);
    if (!f)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", t->path);
    if (strncmp(text, "\xef\xbb\xbf", 3) == 0) /* a UTF-8 byte order mark (Windows tools) */
        text += 3;
    int started = 0;
    char *cursor = text, *s;
    for (int line = 1; rc == EEB_OK && (s = power_trace_line(&cursor)); line++) {
        s[strcspn(s, "#")] = '\0';
        if (!s[strspn(s, " \t")])
            continue;
        rc = started ? read_data(&c, line, s, f, err, errlen)
                     : first_line(&c, line, s, f, err, errlen);
        started = 1;
    }
    free(f);
    return rc;
}
