/*
 * meter.c - director mode: the server reads a team's power meter itself
 * for the team's official runs.  The meter ("--station TEAM=URI") is
 * opened when such a run registers, sampled into a power log of the
 * server's own (the run's "meter run") until the run says complete, and
 * the run's fine-tune window is then placed on the server's clock: the
 * offset of the run's clock from the server's is the least delay between
 * a link being written and its arrival (each arrives after it was written,
 * and the stream's final links arrive at once).  The judge then takes E,
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

/* ---- the window on the server's clock ---- */

struct offset_walk {
    int64_t offset;     /* least (arrival - written): server UTC - the run's clock */
    int64_t begin, end; /* the fine-tune's events, on the run's clock */
    int have_begin, have_end;
};

/* Only the fine-tune's links count: the stream check holds each of them
 * to arriving after it was written (within a second), so no link can
 * pull the window earlier by claiming a later time than it had. */
static int offset_link(void *arg, const struct eeb_rundb_link *l)
{
    struct offset_walk *w = arg;
    int event = l->kind == EEB_LINK_EVENT;
    if (l->kind == EEB_LINK_ORIGIN || w->have_end)
        return 0;
    if (event && strcmp(l->event.kind, EEB_EVENT_FINETUNE_BEGIN) == 0)
        w->begin = l->event.t_mono_ns, w->have_begin = 1;
    if (!w->have_begin)
        return 0;
    int64_t written = event ? l->event.t_mono_ns : l->samples[l->nsamples - 1].t_mono_ns;
    if (l->at_utc_ns - written < w->offset)
        w->offset = l->at_utc_ns - written;
    if (event && strcmp(l->event.kind, EEB_EVENT_FINETUNE_END) == 0)
        w->end = l->event.t_mono_ns, w->have_end = 1;
    return 0;
}

int eeb_srv_meter_window(struct eeb_server *s, int64_t run, int64_t meter_run, char *why,
                         size_t whylen, char *err, size_t errlen)
{
    struct offset_walk w = {.offset = INT64_MAX};
    why[0] = '\0';
    int rc = eeb_srv_store_run_links_each(s->store, run, offset_link, &w, err, errlen);
    if (rc)
        return rc;
    if (!w.have_begin || !w.have_end) {
        snprintf(why, whylen,
                 "the server's meter has no fine-tune window: the run's chain "
                 "holds no finetune_begin and finetune_end");
        return EEB_OK;
    }
    return eeb_srv_store_meter_window(s->store, meter_run, w.begin + w.offset, w.end + w.offset,
                                      why, whylen, err, errlen);
}
