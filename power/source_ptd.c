/*
 * source_ptd.c - "ptd://HOST:PORT[?interval=MS,name=LABEL,timeout=S]": a
 * client of SPEC PTDaemon, the power daemon MLPerf's power labs run in
 * front of their analyzers.  Lines end in CR LF.  Opening says Hello (the
 * reply must be PTDaemon's), asks Identify, and starts an untimed
 * measurement, Go,<interval>,0,<label> (default 1000 ms, "eeb"); each
 * reading asks RL, the last reading, whose reply lists name,value pairs --
 * Watts, and Volts and Amps where the analyzer gives them; closing says
 * Stop.  PTDaemon updates at its interval, so faster sampling reads the
 * same value again.  A dropped or stalled connection fails that read and
 * is reconnected, and the measurement restarted, at the next.  Measured.
 */
#include "power_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct ptd {
    struct eeb_power_source base;
    struct power_line line;
    int interval_ms;
    char name[64]; /* a measurement runs whenever line is connected: a failed start closes it */
    char identity[256];
};

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
    else
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': %s=%s (interval=10..60000 ms, name=LABEL, "
                        "timeout=0.001..60 seconds)",
                        a->uri, key, value);
    return EEB_OK;
}

static int refused(const char *uri, const char *cmd, const char *reply, char *err, size_t errlen)
{
    return eeb_errf(err, errlen, EEB_EDEVICE, "%s: PTDaemon refused '%s': '%s'", uri, cmd, reply);
}

/* Greets the daemon and starts a measurement on a fresh connection. */
static int start(struct ptd *p, const char *uri, char *err, size_t errlen)
{
    char reply[256], go[128];
    int rc = power_line_query(&p->line, uri, "Hello", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Hello, PTDaemon here", 20) != 0) {
        power_line_close(&p->line);
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: not a PTDaemon: 'Hello' answered '%s'", uri,
                        reply);
    }
    if (rc == EEB_OK)
        rc = power_line_query(&p->line, uri, "Identify", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK)
        snprintf(p->identity, sizeof p->identity, "%s", reply);
    snprintf(go, sizeof go, "Go,%d,0,%s", p->interval_ms, p->name);
    if (rc == EEB_OK)
        rc = power_line_query(&p->line, uri, go, reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Error", 5) == 0) {
        power_line_close(&p->line);
        rc = refused(uri, go, reply, err, errlen);
    }
    return rc;
}

static void ptd_close(struct eeb_power_source *s)
{
    struct ptd *p = (struct ptd *)s;
    char reply[256], err[256];
    if (p->line.fd >= 0)
        power_line_query(&p->line, s->uri, "Stop", reply, sizeof reply, err, sizeof err);
    power_line_close(&p->line);
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
    p->interval_ms = 1000;
    strcpy(p->name, "eeb");
    const char *options;
    struct parse a = {p, uri};
    int rc = power_line_init(&p->line, uri, args, "\r\n", &options, err, errlen);
    if (rc == EEB_OK)
        rc = power_each_option(uri, options, option, &a, err, errlen);
    if (rc == EEB_OK)
        rc = start(p, uri, err, errlen);
    if (rc != EEB_OK) {
        ptd_close(&p->base);
        return rc;
    }
    *out = &p->base;
    return EEB_OK;
}

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

static int ptd_read(struct eeb_power_source *base, int64_t t_mono_ns, struct eeb_sample *out,
                    char *err, size_t errlen)
{
    (void)t_mono_ns;
    struct ptd *p = (struct ptd *)base;
    char reply[512];
    int rc = p->line.fd >= 0 ? EEB_OK : start(p, base->uri, err, errlen);
    if (rc == EEB_OK)
        rc = power_line_query(&p->line, base->uri, "RL", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK && strncmp(reply, "Error", 5) == 0)
        return refused(base->uri, "RL", reply, err, errlen);
    return rc == EEB_OK ? power_ptd_parse(base->uri, reply, out, err, errlen) : rc;
}

const struct eeb_power_source_ops power_ptd_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_LIVE,
    .scheme = "ptd",
    .description = "ptd://HOST:PORT[?interval=MS,name=LABEL,timeout=S], a SPEC PTDaemon "
                   "(MLPerf power labs) (measured)",
    .open = ptd_open,
    .read = ptd_read,
    .close = ptd_close,
};
