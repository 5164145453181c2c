/*
 * source_sim.c - "sim:": a simulated meter, for runs without one and for
 * tests.  Options, comma-separated:
 *   profile=const|step|sine|model  (default const)
 *   watts=W                  const and model: the level (default 5)
 *   low=W,high=W,period=S    step: low for half of each period, then high
 *   mean=W,amp=W,period=S    sine: mean + amp sin(2 pi t / period)
 *   noise=W,seed=N           Gaussian noise of that standard deviation
 *   volts=V                  also report volts, and amps = watts / volts
 * Time starts at the first reading.  Its readings are modeled.  "model" is
 * a constant the run moves as it goes (its control slot, through
 * eeb_power_source_control): the analytical model's power in each stage,
 * so the trace replays the modeled device.
 */
#include "power_int.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum profile { CONST, STEP, SINE, MODEL };

struct sim {
    struct eeb_power_source base;
    enum profile profile;
    double low, high, mean, amp, period, volts;
    _Atomic double watts, noise; /* moved by the run's thread while sampled */
    uint64_t rng;
    int64_t t0; /* the first reading's time, or 0 before it */
};

struct parse {
    struct sim *s;
    const char *uri;
};

static int option(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    struct parse *p = arg;
    struct sim *s = p->s;
    if (strcmp(key, "profile") == 0) {
        if (strcmp(value, "const") == 0)
            s->profile = CONST;
        else if (strcmp(value, "step") == 0)
            s->profile = STEP;
        else if (strcmp(value, "sine") == 0)
            s->profile = SINE;
        else if (strcmp(value, "model") == 0)
            s->profile = MODEL;
        else
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "power source '%s': profile '%s' (const, step, sine or model)", p->uri,
                            value);
        return EEB_OK;
    }
    if (strcmp(key, "seed") == 0) {
        double seed;
        int rc = power_number(p->uri, key, value, &seed, err, errlen);
        s->rng = (uint64_t)fabs(seed);
        return rc;
    }
    if (strcmp(key, "watts") == 0 || strcmp(key, "noise") == 0) {
        double x;
        int rc = power_number(p->uri, key, value, &x, err, errlen);
        atomic_store(key[0] == 'w' ? &s->watts : &s->noise, x);
        return rc;
    }
    static const char *const keys[] = {"low", "high", "mean", "amp", "period", "volts"};
    double *fields[] = {&s->low, &s->high, &s->mean, &s->amp, &s->period, &s->volts};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
        if (strcmp(key, keys[i]) == 0)
            return power_number(p->uri, key, value, fields[i], err, errlen);
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "power source '%s': unknown option '%s' (profile, watts, low, high, mean, "
                    "amp, period, noise, seed, volts)",
                    p->uri, key);
}

static int sim_open(const char *uri, const char *args, struct eeb_power_source **out, char *err,
                    size_t errlen)
{
    struct sim *s = calloc(1, sizeof *s);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", uri);
    atomic_init(&s->watts, 5);
    s->period = 1, s->rng = 1;
    struct parse p = {s, uri};
    int rc = power_each_option(uri, args, option, &p, err, errlen);
    if (rc == EEB_OK && (s->period <= 0 || s->noise < 0 || s->volts < 0))
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "power source '%s': period must be > 0, noise and volts >= 0", uri);
    if (rc != EEB_OK) {
        free(s);
        return rc;
    }
    s->base.ops = &power_sim_ops;
    s->base.provenance = EEB_MODELED;
    *out = &s->base;
    return EEB_OK;
}

/* A standard normal number (Box-Muller) from the seeded sequence. */
static double gaussian(uint64_t *rng)
{
    double u = ((eeb_splitmix64(rng) >> 11) + 1) * 0x1p-53; /* (0, 1] */
    double v = (eeb_splitmix64(rng) >> 11) * 0x1p-53;
    return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

static int sim_read(struct eeb_power_source *base, int64_t t_mono_ns, struct eeb_sample *out,
                    char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct sim *s = (struct sim *)base;
    if (!s->t0)
        s->t0 = t_mono_ns;
    double t = (double)(t_mono_ns - s->t0) / 1e9, w;
    switch (s->profile) {
    case STEP: w = fmod(t, s->period) < s->period / 2 ? s->low : s->high; break;
    case SINE: w = s->mean + s->amp * sin(2 * M_PI * t / s->period); break;
    default: w = s->watts;
    }
    double noise = s->noise;
    if (noise > 0)
        w += noise * gaussian(&s->rng);
    out->watts = w < 0 ? 0 : w;
    out->volts = s->volts > 0 ? s->volts : NAN;
    out->amps = s->volts > 0 ? out->watts / s->volts : NAN;
    return EEB_OK;
}

/* profile=model follows the run's control; the others have their own shape. */
static int sim_control(struct eeb_power_source *base, const struct eeb_power_control *c, char *err,
                       size_t errlen)
{
    struct sim *s = (struct sim *)base;
    if (s->profile != MODEL)
        return eeb_errf(err, errlen, EEB_ENOTSUP,
                        "power source '%s' takes no control (sim:profile=model does)", base->uri);
    atomic_store(&s->noise, c->noise);
    atomic_store(&s->watts, c->watts);
    return EEB_OK;
}

static void sim_close(struct eeb_power_source *s)
{
    free(s->uri);
    free(s);
}

const struct eeb_power_source_ops power_sim_ops = {
    .version = EEB_POWER_SOURCE_OPS_VERSION,
    .caps = EEB_POWER_CAP_SIMULATED,
    .scheme = "sim",
    .description =
        "sim:[key=value,...], constant, step, sine or the run's modeled watts, with seeded "
        "noise (modeled)",
    .open = sim_open,
    .read = sim_read,
    .close = sim_close,
    .control = sim_control,
};
