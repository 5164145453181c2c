/*
 * trace_ptd_log.c - a SPEC PTDaemon log (its -l file, MLPerf's spl.txt)
 * read as a power trace for replay:.
 *
 * PTDaemon writes a line per reading,
 *   Time,11-13-2020 22:38:58.241,Watts,45.2,Volts,230.1,Amps,0.196,PF,0.998,Mark,LABEL
 * and a multi-channel analyzer (WT330, WT500 in multi-channel mode) puts
 * the channels' sum first, with Volts, Amps and PF of -1, then each channel:
 *   ...,Mark,LABEL,Ch1,Watts,...,PF,...,Ch2,Watts,...,PF,...
 * Between them are messages, "Time,<date time>,NOTICE,<text>" (ERROR,
 * WARNING...), and the odd line that continues one ("Buffer was ...").
 * A Watts of -1 is PTDaemon's "no valid reading": kept in the trace as an
 * invalid reading, where the replay's reads fail as the meter's did.  A
 * last line cut short (the log copied while PTDaemon wrote it) is skipped
 * and said; a malformed line anywhere else is an error.
 *
 * The date is MM-DD-YYYY or DD-MM-YYYY, depending on the machine PTDaemon
 * ran on: a day above 12 anywhere in the log says which, else the URI
 * must (date=).  Times are the log's own clock: only their differences
 * are used.
 *
 * Sections: the date order; one reading line; the log.
 */
#include "power_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS   256
#define MAX_CHANNELS 32
#define MAX_NAMES    8

enum order { UNDECIDED, MONTH_FIRST, DAY_FIRST };

/* "NN-NN-NNNN" at s: the three numbers; 0 if it is not one. */
static int date_fields(const char *s, int f[3])
{
    int n = 0;
    return sscanf(s, "%2d-%2d-%4d%n", &f[0], &f[1], &f[2], &n) == 3 && n == 10 && s[2] == '-' &&
           strspn(s, "0123456789") == 2;
}

/* ---- the date order ---- */

/* The order the URI gives, checked against every dated line, else the
 * one the log's dates allow.  Messages count too: the same clock. */
static int date_order(const struct power_trace *t, const char *text, const char *option,
                      enum order *out, char *err, size_t errlen)
{
    enum order given = !option ? UNDECIDED : strcmp(option, "MM-DD") == 0 ? MONTH_FIRST : DAY_FIRST;
    int line = 1, f[3], at[3] = {0}; /* the first date, a day-first one, a month-first one */
    char seen[3][11] = {"", "", ""};
    for (const char *s = text; s; s = strchr(s, '\n'), s = s ? s + 1 : NULL, line++) {
        if (strncmp(s, "Time,", 5) != 0 || !date_fields(s + 5, f))
            continue;
        int kind = f[0] > 12 ? 1 : f[1] > 12 ? 2 : 0;
        if (at[kind])
            continue;
        at[kind] = line;
        memcpy(seen[kind], s + 5, 10);
        if ((given == MONTH_FIRST && kind == 1) || (given == DAY_FIRST && kind == 2))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: '%s' is not a date in %s-YYYY order (date=%s)", t->path, line,
                            seen[kind], option, option);
    }
    if (given)
        return *out = given, EEB_OK;
    if (at[1] && at[2])
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: day first on line %d (%s), month first on line %d (%s): its dates "
                        "fit neither order",
                        t->path, at[1], seen[1], at[2], seen[2]);
    if (at[1] || at[2] || !at[0]) /* no dated line: nothing to order */
        return *out = at[1] ? DAY_FIRST : MONTH_FIRST, EEB_OK;
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "%s: its dates (%s, line %d) read either way: say which with ?date=MM-DD or "
                    "?date=DD-MM",
                    t->path, seen[0], at[0]);
}

/* "MM-DD-YYYY HH:MM:SS.mmm" (in the order found) as whole seconds and a
 * fraction; EEB_EFORMAT naming the line. */
static int timestamp(const struct power_trace *t, int line, const char *text, enum order order,
                     int64_t *sec, double *frac, char *err, size_t errlen)
{
    int f[3], h, m, s, n = 0;
    int ok = date_fields(text, f) && sscanf(text + 10, " %2d:%2d:%2d%n", &h, &m, &s, &n) == 3;
    const char *rest = ok ? text + 10 + n : "";
    *frac = 0;
    size_t digits = *rest == '.' ? strspn(rest + 1, "0123456789") : 0;
    if (digits) { /* digits only: strtod alone would take "58.2e1" */
        char fraction[24];
        snprintf(fraction, sizeof fraction, "0.%.*s", (int)(digits < 20 ? digits : 20), rest + 1);
        *frac = strtod(fraction, NULL);
        rest += 1 + digits;
    }
    int day = order == DAY_FIRST ? f[0] : f[1], month = order == DAY_FIRST ? f[1] : f[0];
    if (!ok || *rest || power_civil_seconds(f[2], month, day, h, m, s, sec) != 0)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: '%s' is not a time PTDaemon writes (%s-YYYY HH:MM:SS.mmm)", t->path,
                        line, text, order == DAY_FIRST ? "DD-MM" : "MM-DD");
    return EEB_OK;
}

/* ---- one reading line ---- */

struct reading {
    double watts, volts, amps; /* of the section chosen; NAN: not in the line */
    const char *mark;          /* "" if none */
    int channels[MAX_CHANNELS], nchannels;
};

/* "Ch<N>": N, else 0. */
static int channel_number(const char *s)
{
    if (strncmp(s, "Ch", 2) != 0 || !s[2] || strspn(s + 2, "0123456789") != strlen(s + 2) ||
        strlen(s + 2) > 3)
        return 0;
    return atoi(s + 2);
}

static int value(const struct power_trace *t, int line, const char *name, const char *text,
                 double *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: %s '%s' is not a number", t->path, line,
                        name, text);
    *out = v;
    return EEB_OK;
}

/* The name,value pairs of f[2..nf) for section `want` (0: the first, the
 * sum on a multi-channel analyzer; N: after ChN), and the channels there. */
static int parse_reading(const struct power_trace *t, int line, char **f, int nf, int want,
                         struct reading *r, char *err, size_t errlen)
{
    *r = (struct reading){.watts = NAN, .volts = NAN, .amps = NAN, .mark = ""};
    int section = 0, rc = EEB_OK;
    for (int i = 2; i < nf && rc == EEB_OK;) {
        int ch = channel_number(f[i]);
        if (ch) {
            section = ch;
            if (r->nchannels < MAX_CHANNELS)
                r->channels[r->nchannels++] = ch;
            i++;
            continue;
        }
        if (i + 1 >= nf)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: '%s' has no value", t->path, line,
                            f[i]);
        if (section == 0 && strcmp(f[i], "Mark") == 0)
            r->mark = f[i + 1];
        if (section == want) {
            if (strcmp(f[i], "Watts") == 0)
                rc = value(t, line, f[i], f[i + 1], &r->watts, err, errlen);
            else if (strcmp(f[i], "Volts") == 0)
                rc = value(t, line, f[i], f[i + 1], &r->volts, err, errlen);
            else if (strcmp(f[i], "Amps") == 0)
                rc = value(t, line, f[i], f[i + 1], &r->amps, err, errlen);
        }
        i += 2;
    }
    return rc;
}

static void list_channels(const struct reading *r, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0; i < r->nchannels; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%d", i ? ", " : "", r->channels[i]);
}

/* Which section the URI's channel= means in this line; EEB_EINVAL when a
 * multi-channel line needs one, or lacks the one asked for. */
static int section_wanted(const struct power_trace *t, int line, char **f, int nf,
                          const char *channel, int *want, char *err, size_t errlen)
{
    struct reading all;
    int rc = parse_reading(t, line, f, nf, -1, &all, err, errlen);
    if (rc != EEB_OK)
        return rc;
    char names[128];
    list_channels(&all, names, sizeof names);
    int asked = channel && strcmp(channel, "total") != 0 ? atoi(channel) : 0;
    *want = 0;
    if (!all.nchannels) { /* one channel: channel=1 and total are it */
        if (asked > 1)
            return eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: no channel %d (a single-channel log)",
                            t->path, line, asked);
        return EEB_OK;
    }
    if (!channel)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: a %d-channel PTDaemon log (channels %s): choose one with "
                        "?channel=N, or ?channel=total for their sum",
                        t->path, all.nchannels, names);
    for (int i = 0; i < all.nchannels && asked; i++)
        if (all.channels[i] == asked)
            *want = asked;
    if (asked && !*want)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: no channel %d (channels %s)", t->path,
                        line, asked, names);
    return EEB_OK;
}

/* ---- the log ---- */

/* What was passed over or kept invalid, for the note, and the marks seen. */
struct skipped {
    size_t invalid, messages, other;
    int cut_line;      /* the last line, cut short: its number, 0 if none */
    char cut_text[72]; /* its beginning, quoted */
    char kinds[MAX_NAMES][64], marks[MAX_NAMES][64];
    int nkinds, nmarks;
};

static void remember(char names[][64], int *n, const char *name)
{
    for (int i = 0; i < *n; i++)
        if (strncmp(names[i], name, 63) == 0)
            return;
    if (*n < MAX_NAMES)
        snprintf(names[(*n)++], 64, "%s", name);
}

/* Splits line at commas, empty fields kept; how many. */
static int split(char *line, char **f)
{
    int n = 0;
    for (char *s = line; n < MAX_FIELDS;) {
        f[n++] = s;
        char *comma = strchr(s, ',');
        if (!comma)
            break;
        *comma = '\0';
        s = comma + 1;
    }
    return n;
}

/* line, or its first 60 characters and "...", into out. */
static void quote(char *out, size_t len, const char *line)
{
    snprintf(out, len, "%.60s%s", line, strlen(line) > 60 ? "..." : "");
}

/* s after what buf holds, as much as fits. */
static void append(char *buf, size_t size, const char *s)
{
    size_t len = strlen(buf), n = strlen(s);
    if (n > size - 1 - len)
        n = size - 1 - len;
    memcpy(buf + len, s, n);
    buf[len + n] = '\0';
}

/* "path: N invalid readings (Watts -1), where reads fail; skipped ...". */
static void say_skipped(struct power_trace *t, const struct skipped *k)
{
    char parts[4][160], kinds[96] = "";
    int n = 0;
    for (int i = 0; i < k->nkinds; i++)
        snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", i ? ", " : "",
                 k->kinds[i]);
    if (k->messages)
        snprintf(parts[n++], sizeof parts[0], "%zu message line%s (%s)", k->messages,
                 k->messages == 1 ? "" : "s", kinds);
    if (k->other)
        snprintf(parts[n++], sizeof parts[0], "%zu line%s not starting with 'Time,'", k->other,
                 k->other == 1 ? "" : "s");
    if (k->cut_line)
        snprintf(parts[n++], sizeof parts[0], "the last line, %d, cut short ('%s')", k->cut_line,
                 k->cut_text);
    t->note[0] = '\0';
    if (k->invalid || n) {
        append(t->note, sizeof t->note, t->path);
        append(t->note, sizeof t->note, ": ");
    }
    if (k->invalid) {
        char invalid[96];
        snprintf(invalid, sizeof invalid, "%zu invalid reading%s (Watts -1), where reads fail%s",
                 k->invalid, k->invalid == 1 ? "" : "s", n ? "; " : "");
        append(t->note, sizeof t->note, invalid);
    }
    for (int i = 0; i < n; i++) {
        append(t->note, sizeof t->note, i == 0 ? "skipped " : i == n - 1 ? " and " : ", ");
        append(t->note, sizeof t->note, parts[i]);
    }
}

/* The log being read: what every line needs. */
struct log_reader {
    struct power_trace *t;
    const struct power_trace_options *o;
    enum order order;
    struct skipped *k;
    char **f;           /* a line's fields */
    int64_t origin;     /* the first reading's time: whole seconds */
    double origin_frac; /* and fraction */
    const char *last;   /* where the last line that is not blank starts */
    int last_ended;     /* a line end follows it */
};

/* One reading line, fields f[0..nf), as a point of the trace (*keep 0:
 * another mark's), its watts as written (the caller refuses a negative
 * one); EEB_EFORMAT for a line that is not a whole reading. */
static int read_point(struct log_reader *g, int line, int nf, struct power_trace_point *p,
                      int *keep, char *err, size_t errlen)
{
    struct power_trace *t = g->t;
    char **f = g->f;
    int want;
    struct reading r;
    const char *mark = g->o->value[EEB_TRACE_MARK];
    int rc = section_wanted(t, line, f, nf, g->o->value[EEB_TRACE_CHANNEL], &want, err, errlen);
    if (rc == EEB_OK)
        rc = parse_reading(t, line, f, nf, want, &r, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (isnan(r.watts))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: no Watts%s", t->path, line,
                        want ? " for the channel chosen" : "");
    int64_t sec;
    double frac;
    if ((rc = timestamp(t, line, f[1], g->order, &sec, &frac, err, errlen)) != EEB_OK)
        return rc;
    *keep = !mark || strcmp(r.mark, mark) == 0;
    if (!*keep) {
        remember(g->k->marks, &g->k->nmarks, r.mark);
        return EEB_OK;
    }
    if (!t->n)
        g->origin = sec, g->origin_frac = frac;
    int valid = r.watts != -1; /* -1: PTDaemon had no valid reading */
    *p = (struct power_trace_point){
        .t = (double)(sec - g->origin) + (frac - g->origin_frac),
        .watts = valid ? r.watts : NAN,
        .volts = !valid || r.volts == -1 ? NAN : r.volts, /* -1: the analyzer gave none */
        .amps = !valid || r.amps == -1 ? NAN : r.amps,
        .valid = valid,
        .line = line,
    };
    g->k->invalid += !valid;
    return EEB_OK;
}

/* Where the last line that is not blank starts, and whether a line end
 * follows it; NULL if every line is blank. */
static const char *last_line(const char *text, int *ended)
{
    size_t n = strlen(text), end;
    while (n && strchr(" \t\r\n", text[n - 1]))
        n--;
    end = n;
    while (n && text[n - 1] != '\n')
        n--;
    *ended = strchr(text + end, '\n') != NULL;
    return end ? text + n : NULL;
}

/* 1 if a last line, split into fields f[0..nf), stops before its first
 * value: "Time,<date>" and no more, or "Time,<date>,Wa". */
static int cut_before_watts(char **f, int nf)
{
    return nf <= 2 || (nf == 3 && strlen(f[2]) < 5 && strncmp("Watts", f[2], strlen(f[2])) == 0);
}

/* One line that is not blank: a reading into the trace, or skipped and
 * counted (a message, a continuation, a last line cut short). */
static int take_line(struct log_reader *g, int line, char *s, char *err, size_t errlen)
{
    struct skipped *k = g->k;
    int last = s == g->last;
    if (last)
        quote(k->cut_text, sizeof k->cut_text, s); /* before split cuts it up */
    if (last && !g->last_ended) {                  /* being written when the log was copied: even a
                                                      reading that parses may be cut in a number */
        k->cut_line = line;
        return EEB_OK;
    }
    if (strncmp(s, "Time,", 5) != 0) {
        k->other++;
        return EEB_OK;
    }
    int nf = split(s, g->f), keep = 0;
    if (last && cut_before_watts(g->f, nf)) {
        k->cut_line = line;
        return EEB_OK;
    }
    if (nf <= 2 || strcmp(g->f[2], "Watts") != 0) {
        k->messages++;
        remember(k->kinds, &k->nkinds, nf > 2 ? g->f[2] : "");
        return EEB_OK;
    }
    struct power_trace_point p;
    int rc = read_point(g, line, nf, &p, &keep, err, errlen);
    if (rc == EEB_EFORMAT && last) { /* cut short, then a line end added */
        k->cut_line = line;
        return EEB_OK;
    }
    if (rc != EEB_OK || !keep)
        return rc;
    if (p.watts < 0)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: Watts %g (power must be >= 0)",
                        g->t->path, line, p.watts);
    return power_trace_add(g->t, &p, g->f[1], err, errlen);
}

int power_trace_read_ptd_log(struct power_trace *t, char *text, const struct power_trace_options *o,
                             char *err, size_t errlen)
{
    int rc = power_trace_options_for(t, o, 1, err, errlen);
    if (rc != EEB_OK)
        return rc;
    struct log_reader g = {.t = t, .o = o, .order = UNDECIDED};
    rc = date_order(t, text, o->value[EEB_TRACE_DATE], &g.order, err, errlen);
    struct skipped *k = g.k = calloc(1, sizeof *k);
    g.f = malloc(MAX_FIELDS * sizeof *g.f);
    if (rc == EEB_OK && (!k || !g.f))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", t->path);
    g.last = last_line(text, &g.last_ended);
    char *cursor = text, *s;
    for (int line = 1; rc == EEB_OK && (s = power_trace_line(&cursor)); line++)
        if (s[strspn(s, " \t")])
            rc = take_line(&g, line, s, err, errlen);
    const char *mark = o->value[EEB_TRACE_MARK];
    if (rc == EEB_OK && mark && !t->n) {
        char marks[256] = "";
        for (int i = 0; i < k->nmarks; i++)
            snprintf(marks + strlen(marks), sizeof marks - strlen(marks), "%s%s", i ? ", " : "",
                     k->marks[i]);
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: no readings marked '%s' (marks: %s)", t->path,
                      mark, k->nmarks ? marks : "none");
    }
    if (rc == EEB_OK)
        say_skipped(t, k);
    free(k);
    free(g.f);
    return rc;
}
