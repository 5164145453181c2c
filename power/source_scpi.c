/*
 * source_scpi.c - "scpi://HOST:PORT[?element=N,timeout=S]": a power
 * analyzer of the Yokogawa WT300 series (WT310E, WT332E, WT333E) speaking
 * SCPI over a raw TCP socket, one command per line.  Opening asks *IDN?,
 * turns reply headers off, selects ASCII numbers and three items -- U, I
 * and P of input element N (default 1) -- and checks the meter took them;
 * each reading is one :NUMeric:NORMal:VALue? query.  A meter that drops
 * the connection or stalls past the timeout (default 1 s) fails that read
 * and is reconnected, and set up again, at the next one.  Measured.
 */
#include "power_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct scpi {
    struct eeb_power_source base;
    struct power_line line;
    int element; /* set up whenever line is connected: a failed setup closes it */
    char idn[256];
};

struct parse {
    struct scpi *s;
    const char *uri;
};

static int option(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    struct parse *p = arg;
    double v;
    int rc = power_number(p->uri, key, value, &v, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (strcmp(key, "element") == 0 && v >= 1 && v <= 3 && v == (int)v)
        p->s->element = (int)v;
    else if (strcmp(key, "timeout") == 0 && v >= 0.001 && v <= 60)
        p->s->line.timeout_ms = (int)(v * 1000 + 0.5);
    else
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "power source '%s': %s=%s (element=1..3, timeout=0.001..60 seconds)",
                        p->uri, key, value);
    return EEB_OK;
}

/* Sets the meter up on a fresh connection. */
static int setup(struct scpi *s, const char *uri, char *err, size_t errlen)
{
    char cmd[64], reply[256];
    int rc = power_line_query(&s->line, uri, "*IDN?", reply, sizeof reply, err, errlen);
    if (rc == EEB_OK)
        snprintf(s->idn, sizeof s->idn, "%s", reply);
    static const char *const fixed[] = {":COMMunicate:HEADer OFF", ":NUMeric:FORMat ASCii",
                                        ":NUMeric:NORMal:NUMber 3"};
    for (size_t i = 0; i < 3 && rc == EEB_OK; i++)
        rc = power_line_send(&s->line, uri, fixed[i], err, errlen);
    static const char items[] = "UIP";
    for (int i = 0; i < 3 && rc == EEB_OK; i++) {
        snprintf(cmd, sizeof cmd, ":NUMeric:NORMal:ITEM%d %c,%d", i + 1, items[i], s->element);
        rc = power_line_send(&s->line, uri, cmd, err, errlen);
    }
    if (rc == EEB_OK)
        rc = power_line_query(&s->line, uri, ":NUMeric:NORMal:NUMber?", reply, sizeof reply, err,
                              errlen);
    if (rc == EEB_OK && strtol(reply, NULL, 10) != 3) {
        power_line_close(&s->line);
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "%s: the meter did not take its settings: ':NUMeric:NORMal:NUMber?' "
                      "answered '%s', not 3",
                      uri, reply);
    }
    return rc;
}

static void scpi_close(struct eeb_power_source *s)
{
    power_line_close(&((struct scpi *)s)->line);
    free(s->uri);
    free(s);
}

static int scpi_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                     size_t errlen)
{
    struct scpi *s = calloc(1, sizeof *s);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    s->base.ops = &power_scpi_ops;
    s->base.provenance = EEB_MEASURED;
    s->element = 1;
    const char *options;
    struct parse p = {s, uri};
    int rc = power_line_init(&s->line, uri, args, "\n", &options, err, errlen);
    if (rc == EEB_OK)
        rc = power_each_option(uri, options, option, &p, err, errlen);
    if (rc == EEB_OK)
        rc = setup(s, uri, err, errlen);
    if (rc != EEB_OK) {
        scpi_close(&s->base);
        return rc;
    }
    *out = &s->base;
    return EEB_OK;
}

/* U, I, P from a ":NUMeric:NORMal:VALue?" reply. */
int power_scpi_parse(const char *uri, const char *reply, double v[3], char *err, size_t errlen)
{
    const char *p = reply;
    for (int i = 0; i < 3; i++) {
        char *end;
        errno = 0;
        v[i] = strtod(p, &end);
        if (end == p || errno == ERANGE || *end != (i < 2 ? ',' : '\0'))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: expected three numbers U,I,P; the meter answered '%s'", uri,
                            reply);
        p = end + 1;
    }
    /* The WT300 answers 9.9E+37 for an overrange, 9.91E+37 for no data. */
    for (int i = 0; i < 3; i++)
        if (!(v[i] > -9e37 && v[i] < 9e37))
            return eeb_errf(err, errlen, EEB_EDEVICE,
                            "%s: the meter reports overrange or no data ('%s')", uri, reply);
    return EEB_OK;
}

static int scpi_read(struct eeb_power_source *base, int64_t t_mono_ns, struct eeb_sample *out,
                     char *err, size_t errlen)
{
    (void)t_mono_ns;
    struct scpi *s = (struct scpi *)base;
    char reply[256];
    double v[3];
    int rc = s->line.fd >= 0 ? EEB_OK : setup(s, base->uri, err, errlen);
    if (rc == EEB_OK)
        rc = power_line_query(&s->line, base->uri, ":NUMeric:NORMal:VALue?", reply, sizeof reply,
                              err, errlen);
    if (rc == EEB_OK)
        rc = power_scpi_parse(base->uri, reply, v, err, errlen);
    if (rc != EEB_OK)
        return rc;
    out->volts = v[0], out->amps = v[1], out->watts = v[2];
    return EEB_OK;
}

const struct eeb_power_source_ops power_scpi_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_LIVE,
    .scheme = "scpi",
    .description = "scpi://HOST:PORT[?element=N,timeout=S], a Yokogawa WT300-series analyzer "
                   "over SCPI (measured)",
    .open = scpi_open,
    .read = scpi_read,
    .close = scpi_close,
};
