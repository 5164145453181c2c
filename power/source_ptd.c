/*
 * source_ptd.c - "ptd://HOST:PORT[?interval=MS,name=LABEL,ranging=0|1,timeout=S]":
 * a client of SPEC PTDaemon, the power daemon MLPerf's power labs run in
 * front of their analyzers.  Lines end in CR LF.  Opening says Hello (the
 * reply must be PTDaemon's) and asks Identify, whose reply is the meter's
 * identity; then, unless ranging=0, a ranging pass sets the analyzer's
 * ranges; then it starts an untimed measurement, Go,<interval>,0,<label>
 * (default 1000 ms, "eeb").  Each reading asks RL, the last reading, whose
 * reply lists name,value pairs -- Watts, and Volts and Amps where the
 * analyzer gives them -- and then Uncertainty, that reading's uncertainty;
 * closing says Stop (and puts back the ranges the ranging pass found).
 * PTDaemon updates at its interval, so faster sampling reads the same
 * value again.  A dropped or stalled connection fails that read and is
 * reconnected, the ranges set again and the measurement restarted, at the
 * next.  Measured.
 *
 * A run ranges the analyzer on its own workload (the range slot, MLPerf's
 * ranging mode): its begin autoranges and starts a measurement labelled
 * LABEL_ranging, whose readings the sampler goes on taking (the largest
 * volts and amps kept; a reading with none valid, an analyzer switching
 * ranges, is no reading, and no uncertainty is asked); its end stops it,
 * sets the ranges as the pass at open does, from what the workload drew,
 * and starts the testing measurement.  The pass at open (ranging=1) stays,
 * for a log and for a run that does not range on its workload; a run that
 * does is not left in ranges found at idle.  The connection is locked: the
 * slot is called on another thread than read's.
 *
 * What MLPerf's tooling does, which this follows (mlcommons/power-dev,
 * ptd_client_server/lib/server.py and compliance/check.py):
 *   - ranging: RR reads the analyzer's ranges as found; SR,V,Auto and
 *     SR,A,Auto; a measurement labelled LABEL_ranging; Stop; then SR,V to
 *     the largest voltage and SR,A to 1.1 x the largest current it saw
 *     (each answered "Range V changed", "Range A changed"), and the
 *     measurement proper.  On the way out, SR,V and SR,A put back what RR
 *     found (a fixed range, or Auto).  MLPerf ranges over a whole run of
 *     the workload; here the pass reads RANGING_READINGS readings of the
 *     load at open, before the run's work starts (docs/power.md);
 *   - uncertainty: PTDaemon evaluates it per sample for the analyzers it
 *     knows, in percent ("Uncertainty 1.05% above 1.00% limit for the last
 *     measurement sample!", its log, as power-dev issue #204 quotes it), and
 *     answers a separate command, Uncertainty, which power-dev's server
 *     sends beside Watts; it is not among RL's fields.  The layout of that
 *     reply is not published where we could read it, so the parser takes
 *     the forms PTDaemon's messages use: a number in percent, alone or
 *     after "Uncertainty" (",", ":" or " " between), an optional "%";
 *     "unknown" or -1 (PTDaemon's "no valid value", as RL's Watts -1) is an
 *     uncertainty it could not evaluate.  A daemon that answers Uncertainty
 *     with an Error (one without it, or with its uncertainty checking off)
 *     reports none, and is not asked again.
 *
 * Sections: options; the conversation; readings.
 */
#include "power_int.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define RANGING_READINGS 3   /* the ranging pass: this many readings, one an interval */
#define AMPS_HEADROOM    1.1 /* MLPerf's: the current range is 1.1 x the largest current */

enum { VOLTS, AMPS };

struct ptd {
    struct eeb_power_source base;
    struct power_line line;
    int interval_ms;
    int ranging;     /* 1: a ranging pass at open */
    int uncertainty; /* 1: ask Uncertainty after each RL; 0: the daemon refused it */
    char name[64];   /* a measurement runs whenever line is connected: a failed start closes it */
    char identity[256];   /* Identify's reply, at open */
    char found[2][32];    /* the ranges RR gave at open (V, A), put back on close; "": unread */
    char range[2][32];    /* the ranges the ranging pass set (V, A), set again on a reconnect */
    char note[640];       /* base.note: the identity and the ranges */
    pthread_mutex_t lock; /* the connection: read and range on two threads */
    int ranging_now;      /* a ranging pass on the workload runs (the range slot) */
    double most[2];       /* the largest volts and amps it read */
    int passes;           /* ranging passes on the workload ended */
};

/* ---- options ---- */

struct parse {
    struct ptd *p;
    const char *uri;
};

static int option(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    struct parse *a = arg;
    if (strcmp(key, "name") == 0) {
        if (!*value || strlen(value) >= sizeof a->p->name ||
            strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") !=
                strlen(value))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "power source '%s': name=%s (up to 63 letters, digits, - and _)",
                            a->uri, value);
        strcpy(a->p->name, value);
        return EEB_OK;
    }
    double v;
    int rc = power_number(a->uri, key, value, &v, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (strcmp(key, "interval") == 0 && v >= 10 && v <= 60000 && v == (int)v)
        a->p->interval_ms = (int)v;
    else if (strcmp(key, "timeout") == 0 && v >= 0.001 && v <= 60)
        a->p->line.timeout_ms = (int)(v * 1000 + 0.5);
    else if (strcmp(key, "ranging") == 0 && (v == 0 || v == 1))
        a->p->ranging = (int)v;
    else
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': %s=%s (interval=10..60000 ms, name=LABEL, "
                        "ranging=0|1, timeout=0.001..60 seconds)",
                        a->uri, key, value);
    return EEB_OK;
}

/* ---- the conversation ---- */

static int refused(const char *uri, const char *cmd, const char *reply, char *err, size_t errlen)
{
    return eeb_errf(err, errlen, EEB_EDEVICE, "%s: PTDaemon refused '%s': '%s'", uri, cmd, reply);
}

/* cmd's reply into reply; an "Error..." reply is a refusal (and ends the
 * connection, as any failure does). */
static int ask(struct ptd *p, const char *uri, const char *cmd, char *reply, size_t len, char *err,
               size_t errlen)
{
    int rc = power_line_query(&p->line, uri, cmd, reply, len, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Error", 5) == 0) {
        power_line_close(&p->line);
        rc = refused(uri, cmd, reply, err, errlen);
    }
    return rc;
}

/* Hello, whose reply must be PTDaemon's, and Identify (kept from the first
 * connection). */
static int greet(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    char reply[256];
    int rc = power_line_query(&p->line, uri, "Hello", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Hello, PTDaemon here", 20) != 0) {
        power_line_close(&p->line);
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: not a PTDaemon: 'Hello' answered '%s'", uri,
                        reply);
    }
    if (rc == EEB_OK)
        rc = power_line_query(&p->line, uri, "Identify", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && !p->identity[0])
        snprintf(p->identity, sizeof p->identity, "%s", reply);
    return rc;
}

static int set_ranges(struct ptd *p, const char *uri, const char *volts, const char *amps,
                      char *err, size_t errlen)
{
    char cmd[48], reply[256];
    snprintf(cmd, sizeof cmd, "SR,V,%s", volts);
    int rc = ask(p, uri, cmd, reply, sizeof reply, err, errlen);
    snprintf(cmd, sizeof cmd, "SR,A,%s", amps);
    return rc == EEB_OK ? ask(p, uri, cmd, reply, sizeof reply, err, errlen) : rc;
}

static int go(struct ptd *p, const char *uri, const char *suffix, char *err, size_t errlen)
{
    char cmd[128], reply[256];
    snprintf(cmd, sizeof cmd, "Go,%d,0,%s%s", p->interval_ms, p->name, suffix);
    return ask(p, uri, cmd, reply, sizeof reply, err, errlen);
}

/* The measurement proper, on a connection greeted: the ranges the ranging
 * pass found (if it ran), and Go; during a ranging pass on the workload,
 * autoranging and its ranging measurement. */
static int measure(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    if (p->ranging_now) {
        int rc = set_ranges(p, uri, "Auto", "Auto", err, errlen);
        return rc == EEB_OK ? go(p, uri, "_ranging", err, errlen) : rc;
    }
    int rc = p->range[VOLTS][0] ? set_ranges(p, uri, p->range[VOLTS], p->range[AMPS], err, errlen)
                                : EEB_OK;
    return rc == EEB_OK ? go(p, uri, "", err, errlen) : rc;
}

/* A fresh connection: greeted, ranged as at open, measuring. */
static int start(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    int rc = greet(p, uri, err, errlen);
    return rc == EEB_OK ? measure(p, uri, err, errlen) : rc;
}

/* RR's "Ranges,<A autorange>,<A range>,<V autorange>,<V range>" (autorange
 * 1 on, 0 off, -1 unknown; a range -1 unknown) as what SR puts back: the
 * range where autoranging is off and the range known, else Auto.  A reply
 * not of that form leaves found unread, and nothing is put back. */
static void found_ranges(struct ptd *p, char *reply)
{
    char *f[5], *save = NULL;
    int n = 0;
    for (char *t = strtok_r(reply, ",", &save); t && n < 5; t = strtok_r(NULL, ",", &save))
        f[n++] = t;
    if (n < 5 || strstr(f[0], "Ranges") == NULL)
        return;
    for (int q = VOLTS; q <= AMPS; q++) {
        const char *on = f[q == AMPS ? 1 : 3], *range = f[q == AMPS ? 2 : 4];
        char *end;
        double v = strtod(range, &end);
        int fixed = strcmp(on, "0") == 0 && end != range && *end == '\0' && v > 0;
        snprintf(p->found[q], sizeof p->found[q], "%s", fixed ? range : "Auto");
    }
}

/* MLPerf's ranging pass, on a connection greeted: the ranges as found,
 * autoranging, RANGING_READINGS readings of a measurement of its own, and
 * the ranges set to cover the largest volts and amps they saw. */
static int range_pass(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    char reply[512];
    int rc = power_line_query(&p->line, uri, "RR", reply, sizeof reply, err, errlen);
    if (rc != EEB_OK)
        return rc;
    found_ranges(p, reply);
    if ((rc = set_ranges(p, uri, "Auto", "Auto", err, errlen)) ||
        (rc = go(p, uri, "_ranging", err, errlen)))
        return rc;
    double most[2] = {0, 0};
    struct timespec tick = {p->interval_ms / 1000, (long)(p->interval_ms % 1000) * 1000000L};
    for (int i = 0; i < RANGING_READINGS && rc == EEB_OK; i++) {
        nanosleep(&tick, NULL);
        struct eeb_sample x;
        char why[256];
        rc = ask(p, uri, "RL", reply, sizeof reply, err, errlen);
        /* an autoranging analyzer's reading may be invalid while it
         * switches: the pass goes by the valid ones */
        if (rc == EEB_OK && power_ptd_parse(uri, reply, &x, why, sizeof why) == EEB_OK)
            most[VOLTS] = fmax(most[VOLTS], x.volts), most[AMPS] = fmax(most[AMPS], x.amps);
    }
    if (rc == EEB_OK)
        rc = ask(p, uri, "Stop", reply, sizeof reply, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (!(most[VOLTS] > 0 && most[AMPS] > 0))
        return eeb_errf(err, errlen, EEB_EDEVICE,
                        "%s: the ranging pass had no valid reading of volts and amps in %d "
                        "readings (a meter that gives watts only: ranging=0)",
                        uri, RANGING_READINGS);
    snprintf(p->range[VOLTS], sizeof p->range[VOLTS], "%g", most[VOLTS]);
    snprintf(p->range[AMPS], sizeof p->range[AMPS], "%g", most[AMPS] * AMPS_HEADROOM);
    return EEB_OK;
}

/* What the record keeps of the meter (base.note, the run's "power"
 * configuration): its identity and its ranges. */
static void describe(struct ptd *p)
{
    int n = snprintf(p->note, sizeof p->note, "PTDaemon, Identify: '%.255s'; ", p->identity);
    size_t at = n > 0 && (size_t)n < sizeof p->note ? (size_t)n : sizeof p->note - 1;
    char back[96] = " (RR did not say the ranges as found: none put back on close)";
    if (p->found[VOLTS][0])
        snprintf(back, sizeof back, " (put back to %s V and %s A on close)", p->found[VOLTS],
                 p->found[AMPS]);
    if (!p->ranging)
        snprintf(p->note + at, sizeof p->note - at, "ranges left as they were (ranging=0)");
    else
        snprintf(p->note + at, sizeof p->note - at,
                 "ranges from a ranging pass of %d readings: SR,V,%s and SR,A,%s%s",
                 RANGING_READINGS, p->range[VOLTS], p->range[AMPS], back);
    p->base.note = p->note;
}

static void ptd_close(struct eeb_power_source *s)
{
    struct ptd *p = (struct ptd *)s;
    char reply[256], err[256];
    if (p->line.fd >= 0)
        power_line_query(&p->line, s->uri, "Stop", reply, sizeof reply, err, sizeof err);
    /* the analyzer as it was found, as MLPerf's server leaves it (also
     * after a ranging pass that failed) */
    if (p->line.fd >= 0 && p->found[VOLTS][0])
        (void)set_ranges(p, s->uri, p->found[VOLTS], p->found[AMPS], err, sizeof err);
    power_line_close(&p->line);
    pthread_mutex_destroy(&p->lock);
    free(s->uri);
    free(p);
}

static int ptd_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                    size_t errlen)
{
    struct ptd *p = calloc(1, sizeof *p);
    if (!p)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    p->base.ops = &power_ptd_ops;
    p->base.provenance = EEB_MEASURED;
    p->base.uncertainty = NAN;
    p->interval_ms = 1000;
    p->ranging = 1, p->uncertainty = 1;
    pthread_mutex_init(&p->lock, NULL);
    strcpy(p->name, "eeb");
    const char *options;
    struct parse a = {p, uri};
    int rc = power_line_init(&p->line, uri, args, "\r\n", &options, err, errlen);
    if (rc == EEB_OK)
        rc = power_each_option(uri, options, option, &a, err, errlen);
    if (rc == EEB_OK)
        rc = greet(p, uri, err, errlen);
    if (rc == EEB_OK && p->ranging)
        rc = range_pass(p, uri, err, errlen);
    if (rc == EEB_OK)
        rc = measure(p, uri, err, errlen);
    p->base.update_interval_s = p->interval_ms / 1000.0; /* PTDaemon updates at it */
    if (rc == EEB_OK)
        describe(p);
    if (rc != EEB_OK) {
        ptd_close(&p->base);
        return rc;
    }
    *out = &p->base;
    return EEB_OK;
}

/* ---- readings ---- */

/* Watts (required), Volts and Amps from an "RL" reply's name,value pairs;
 * a -1 is PTDaemon's "no valid reading". */
int power_ptd_parse(const char *uri, char *reply, struct eeb_sample *out, char *err, size_t errlen)
{
    char quoted[512];
    snprintf(quoted, sizeof quoted, "%s", reply);
    double *field[3] = {&out->watts, &out->volts, &out->amps};
    static const char *const names[3] = {"Watts", "Volts", "Amps"};
    out->watts = out->volts = out->amps = NAN;
    char *save = NULL, *prev = NULL;
    for (char *tok = strtok_r(reply, ",", &save); tok; prev = tok, tok = strtok_r(NULL, ",", &save))
        for (int i = 0; prev && i < 3; i++)
            if (strcmp(prev, names[i]) == 0) {
                char *end;
                errno = 0;
                double v = strtod(tok, &end);
                if (end == tok || *end || errno || !isfinite(v))
                    return eeb_errf(err, errlen, EEB_EFORMAT,
                                    "%s: %s is not a number in PTDaemon's reply '%s'", uri,
                                    names[i], quoted);
                *field[i] = v;
            }
    if (isnan(out->watts))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: no Watts in PTDaemon's reply '%s'", uri,
                        quoted);
    if (out->watts == -1)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: PTDaemon has no valid reading ('%s')", uri,
                        quoted);
    return EEB_OK;
}

/* The uncertainty of the last reading from an "Uncertainty" reply (the
 * forms the file's comment gives), as a fraction: 0.02 for 2 %, INFINITY
 * for one PTDaemon could not evaluate. */
int power_ptd_uncertainty(const char *uri, const char *reply, double *out, char *err, size_t errlen)
{
    const char *v = reply;
    if (strncasecmp(v, "Uncertainty", 11) == 0)
        v += 11 + strspn(v + 11, " ,:=");
    if (strncasecmp(v, "unknown", 7) == 0) {
        *out = INFINITY;
        return EEB_OK;
    }
    char *end;
    errno = 0;
    double percent = strtod(v, &end);
    const char *rest = end + strspn(end, " ");
    rest += *rest == '%';
    if (end == v || errno || !isfinite(percent) || rest[strspn(rest, " ")])
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: the uncertainty is not a number in PTDaemon's reply '%s'", uri, reply);
    *out = percent < 0 ? INFINITY : percent / 100;
    return EEB_OK;
}

static int read_locked(struct ptd *p, struct eeb_power_source *base, struct eeb_sample *out,
                       char *err, size_t errlen)
{
    char reply[512];
    int rc = p->line.fd >= 0 ? EEB_OK : start(p, base->uri, err, errlen);
    if (rc == EEB_OK)
        rc = power_line_query(&p->line, base->uri, "RL", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Error", 5) == 0)
        return refused(base->uri, "RL", reply, err, errlen);
    if (rc == EEB_OK)
        rc = power_ptd_parse(base->uri, reply, out, err, errlen);
    if (p->ranging_now && rc == EEB_EDEVICE && p->line.fd >= 0)
        return EEB_ENODATA; /* an analyzer switching ranges has no valid reading */
    if (p->ranging_now && rc == EEB_OK) {
        p->most[VOLTS] = fmax(p->most[VOLTS], out->volts); /* NAN for none: fmax keeps */
        p->most[AMPS] = fmax(p->most[AMPS], out->amps);
        return EEB_OK;
    }
    if (rc != EEB_OK || !p->uncertainty)
        return rc;
    rc = power_line_query(&p->line, base->uri, "Uncertainty", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Error", 5) == 0) {
        p->uncertainty = 0; /* it reports none */
        return EEB_OK;
    }
    return rc == EEB_OK ? power_ptd_uncertainty(base->uri, reply, &base->uncertainty, err, errlen)
                        : rc;
}

static int ptd_read(struct eeb_power_source *base, int64_t t_mono_ns, struct eeb_sample *out,
                    char *err, size_t errlen)
{
    (void)t_mono_ns;
    struct ptd *p = (struct ptd *)base;
    pthread_mutex_lock(&p->lock);
    int rc = read_locked(p, base, out, err, errlen);
    pthread_mutex_unlock(&p->lock);
    return rc;
}

/* ---- ranging on the workload (the range slot) ---- */

static int range_begin(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    char reply[512];
    int measuring = p->line.fd >= 0;
    int rc = measuring ? EEB_OK : greet(p, uri, err, errlen);
    if (rc == EEB_OK && !p->found[VOLTS][0]) { /* the ranges as found, put back on close */
        rc = power_line_query(&p->line, uri, "RR", reply, sizeof reply, err, errlen);
        if (rc == EEB_OK)
            found_ranges(p, reply);
    }
    if (rc == EEB_OK && measuring)
        rc = ask(p, uri, "Stop", reply, sizeof reply, err, errlen);
    p->ranging_now = 1, p->most[VOLTS] = p->most[AMPS] = 0;
    return rc == EEB_OK ? measure(p, uri, err, errlen) : rc;
}

static int range_end(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    char reply[256];
    if (!p->ranging_now)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no ranging pass to end", uri);
    int rc = p->line.fd >= 0 ? ask(p, uri, "Stop", reply, sizeof reply, err, errlen) : EEB_OK;
    if (rc != EEB_OK)
        return rc;
    p->ranging_now = 0;
    if (!(p->most[VOLTS] > 0 && p->most[AMPS] > 0)) {
        /* the ranges it had, and the testing measurement in them */
        int rc2 = p->line.fd >= 0 ? measure(p, uri, err, errlen) : EEB_OK;
        return rc2 ? rc2
                   : eeb_errf(err, errlen, EEB_EDEVICE,
                              "%s: the ranging pass on the workload read no valid volts and amps "
                              "(a meter that gives watts only: ranging=0)",
                              uri);
    }
    snprintf(p->range[VOLTS], sizeof p->range[VOLTS], "%g", p->most[VOLTS]);
    snprintf(p->range[AMPS], sizeof p->range[AMPS], "%g", p->most[AMPS] * AMPS_HEADROOM);
    p->passes++;
    return p->line.fd >= 0 ? measure(p, uri, err, errlen) : start(p, uri, err, errlen);
}

static int ptd_range(struct eeb_power_source *base, enum eeb_power_range_phase phase,
                     struct eeb_power_ranges *out, char *err, size_t errlen)
{
    struct ptd *p = (struct ptd *)base;
    if (!p->ranging)
        return eeb_errf(err, errlen, EEB_ENOTSUP,
                        "%s: opened to leave the analyzer's ranges as they are (ranging=0)",
                        base->uri);
    pthread_mutex_lock(&p->lock);
    int rc = phase == EEB_POWER_RANGE_BEGIN ? range_begin(p, base->uri, err, errlen)
                                            : range_end(p, base->uri, err, errlen);
    int on = p->ranging_now;
    snprintf(out->volts, sizeof out->volts, "%s", on ? "Auto" : p->range[VOLTS]);
    snprintf(out->amps, sizeof out->amps, "%s", on ? "Auto" : p->range[AMPS]);
    out->max_volts = on ? NAN : p->most[VOLTS];
    out->max_amps = on ? NAN : p->most[AMPS];
    snprintf(out->identity, sizeof out->identity, "%s", p->identity);
    pthread_mutex_unlock(&p->lock);
    return rc;
}

const struct eeb_power_source_ops power_ptd_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_LIVE,
    .scheme = "ptd",
    .description = "ptd://HOST:PORT[?interval=MS,name=LABEL,ranging=0|1,timeout=S], a SPEC "
                   "PTDaemon (MLPerf power labs): ranged, each reading's uncertainty held to 1 % "
                   "(measured)",
    .open = ptd_open,
    .read = ptd_read,
    .close = ptd_close,
    .range = ptd_range,
};
