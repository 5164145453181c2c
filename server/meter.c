/*
 * meter.c - director mode: the server reads a team's power meter itself
 * for the team's official runs.  The meter ("--station TEAM=URI") is
 * opened when such a run registers, sampled into a power log of the
 * server's own (the run's "meter run") until the run says complete, and
 * the run's fine-tune window is then placed on the server's clock, by the
 * stream's check of the same links (stream.c: the least delay between a
 * fine-tune link being written and its arrival).  The judge then takes E,
 * validity and the P_max rule from the server's samples in that window.
 */
#include "server_int.h"

#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"

#include <stdio.h>
#include <string.h>

const char *eeb_srv_station(const struct eeb_server *s, const char *team)
{
    for (int i = 0; i < EEB_SERVER_STATIONS && s->cfg.stations[i].team; i++)
        if (strcmp(s->cfg.stations[i].team, team) == 0)
            return s->cfg.stations[i].uri;
    return NULL;
}

int eeb_srv_meter_open(struct eeb_server *s, const char *uri, struct eeb_srv_meter *m, char *err,
                       size_t errlen)
{
    *m = (struct eeb_srv_meter){0};
    int rc = eeb_power_open(uri, &m->src, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_srv_store_meter_run(s->store, m->src->uri, s->cfg.meter_rate_hz,
                                     eeb_provenance_name(m->src->provenance), &m->meter_run, err,
                                     errlen);
    if (rc) {
        eeb_power_close(m->src);
        m->src = NULL;
    }
    return rc;
}

int eeb_srv_meter_start(struct eeb_server *s, int64_t run, struct eeb_srv_meter *m, char *err,
                        size_t errlen)
{
    struct eeb_sampler_config cfg;
    eeb_sampler_config_default(&cfg);
    cfg.db_path = eeb_srv_store_path(s->store);
    cfg.run = m->meter_run;
    cfg.rate_hz = s->cfg.meter_rate_hz;
    m->run = run;
    int rc = eeb_sampler_start(m->src, &cfg, &m->sampler, err, errlen);
    pthread_mutex_lock(&s->lock);
    int slot = -1;
    for (int i = 0; rc == EEB_OK && i < EEB_SRV_METERS && slot < 0; i++)
        if (!s->meters[i].run)
            s->meters[slot = i] = *m;
    pthread_mutex_unlock(&s->lock);
    if (rc == EEB_OK && slot < 0) {
        char ignored[256];
        struct eeb_sampler_stats st;
        (void)eeb_sampler_stop(m->sampler, &st, ignored, sizeof ignored);
        rc = eeb_errf(err, errlen, EEB_EINVAL, "the server reads %d meters at once at most",
                      EEB_SRV_METERS);
    }
    if (rc == EEB_OK)
        eeb_sampler_mark(m->sampler, EEB_EVENT_LOG_BEGIN, NULL);
    else
        eeb_srv_meter_close(s, m);
    return rc;
}

void eeb_srv_meter_close(struct eeb_server *s, struct eeb_srv_meter *m)
{
    eeb_power_close(m->src);
    eeb_srv_store_meter_done(s->store, m->meter_run);
    *m = (struct eeb_srv_meter){0};
}

void eeb_srv_meter_stop(struct eeb_server *s, int64_t run)
{
    struct eeb_srv_meter m = {0};
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < EEB_SRV_METERS && !m.run; i++)
        if (s->meters[i].run == run || (run == 0 && s->meters[i].run)) {
            m = s->meters[i];
            s->meters[i] = (struct eeb_srv_meter){0};
        }
    pthread_mutex_unlock(&s->lock);
    if (!m.run)
        return;
    eeb_sampler_mark(m.sampler, EEB_EVENT_LOG_END, NULL);
    struct eeb_sampler_stats st;
    char ignored[512];
    (void)eeb_sampler_stop(m.sampler, &st, ignored, sizeof ignored); /* its faults are recorded */
    eeb_srv_meter_close(s, &m);
}

void eeb_srv_meters_stop(struct eeb_server *s)
{
    for (int i = 0; i < EEB_SRV_METERS; i++)
        eeb_srv_meter_stop(s, 0);
}
