/*
 * run_power.c - the meter through the run: the sampler started (and the
 * first reading waited for) and stopped, and the modeled power moved with
 * the stages.
 */
#include "run_int.h"

#include <stdlib.h>
#include <time.h>

/* A "sim:profile=model" source follows the modeled device's power; any
 * other source is left alone. */
void run_drive(struct run *r, double watts)
{
    if (r->modeled_device)
        (void)eeb_power_source_control(r->src, &(struct eeb_power_control){watts, watts / 100},
                                       NULL, 0);
}

/* Starts sampling and waits (a second at most) for the first reading, so
 * the metered window does not open on a stretch no reading covers. */
int run_start_sampling(struct run *r, char *err, size_t errlen)
{
    struct eeb_sampler_config sc;
    eeb_sampler_config_default(&sc);
    sc.db_path = r->c->db;
    sc.run = r->id;
    sc.rate_hz = r->c->rate_hz;
    int rc = eeb_sampler_start(r->src, &sc, &r->sampler, err, errlen);
    if (rc)
        return rc;
    struct eeb_sampler_live l = {0};
    int64_t until = eeb_mono_ns() + 1000000000 + (int64_t)(2e9 / r->c->rate_hz);
    while (l.samples < 2 && eeb_mono_ns() < until) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        eeb_sampler_live(r->sampler, &l);
    }
    if (l.samples < 2)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: no power readings within a second",
                        r->src->uri);
    return EEB_OK;
}

int run_stop_sampling(struct run *r, int rc, char *err, size_t errlen)
{
    if (!r->sampler)
        return rc;
    struct eeb_sampler_stats st;
    char why[512];
    int src = eeb_sampler_stop(r->sampler, &st, why, sizeof why);
    r->sampler = NULL;
    if (src && !rc)
        return eeb_errf(err, errlen, src, "power sampling: %s", why);
    return rc;
}
