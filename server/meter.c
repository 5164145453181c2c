/*
 * meter.c - director mode: the server reads a team's power meter itself
 * for the team's official runs.  The meter ("--station TEAM=URI") is
 * opened when such a run registers, sampled into a power log of the
 * server's own (the run's "meter run") until the run says complete, and
 * the run's fine-tune window is then placed on the server's clock, by the
 * stream's check of the same links (stream.c: the least delay between a
 * fine-tune link being written and its arrival).  The judge then takes E,
 * validity and the P_max rule from the server's samples in that window.
 *
 * A meter the server cannot reach is read by the station's agent
 * ("--station TEAM=agent:KEYFILE", agent.c), which sends its samples as
 * it takes them; its slot then keeps those of the run's time, and is held
 * past complete until the agent's samples up to it have arrived.
 *
 * A run that began its fine-tune and then sends no link for longer than
 * the stream's allowance is invalid whatever follows (stream.c), so its
 * meter is let go then; one that never begins, after EEB_SRV_PRE_BEGIN_NS (its
 * deploy may program a board): a run abandoned midway does not hold a
 * meter, or its station, for ever.
 */
#include "server_int.h"

#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* An agent heard from longer ago than this does not answer: it sends
 * twice a second. */
#define AGENT_SILENT_NS EEB_SRV_AGENT_SILENT_NS
/* How long scoring waits for an agent's last samples. */
#define AGENT_SETTLE_NS 5000000000LL

int eeb_srv_station(const struct eeb_server *s, const char *team)
{
    for (int i = 0; i < EEB_SERVER_STATIONS && s->cfg.stations[i].team; i++)
        if (strcmp(s->cfg.stations[i].team, team) == 0)
            return i;
    return -1;
}

/* The agent of station, heard from lately and free: what it reads into m. */
static int agent_open(struct eeb_server *s, int station, struct eeb_srv_meter *m, char *err,
                      size_t errlen)
{
    const struct eeb_srv_agent *a = &s->agents[station];
    int64_t now = eeb_mono_ns();
    pthread_mutex_lock(&s->lock);
    int64_t heard = a->heard_ns;
    snprintf(m->source, sizeof m->source, "%s", a->source);
    snprintf(m->provenance, sizeof m->provenance, "%s", a->provenance);
    m->rate_hz = a->rate_hz, m->update_interval_s = a->update_interval_s;
    m->can_range = a->can_range;
    int busy = eeb_srv_agent_measuring(s, station);
    int64_t other = busy >= 0 ? s->meters[busy].run : 0;
    pthread_mutex_unlock(&s->lock);
    m->agent = station + 1;
    if (busy >= 0)
        return eeb_errf(err, errlen, EEB_EDEVICE, "its agent is measuring run %lld",
                        (long long)other);
    if (!heard)
        return eeb_errf(err, errlen, EEB_ETIMEOUT,
                        "its agent (eeb power agent) has not been heard from since the server "
                        "started");
    if (now - heard > AGENT_SILENT_NS)
        return eeb_errf(err, errlen, EEB_ETIMEOUT,
                        "its agent (eeb power agent) was last heard from %.1f s ago",
                        (double)(now - heard) / 1e9);
    return EEB_OK;
}

/* Every meter whose run has been silent past the stream's allowance, let
 * go (an agent's held past complete is settled by scoring instead). */
static void let_go_silent(struct eeb_server *s)
{
    int64_t now = eeb_mono_ns(), allowance = (int64_t)(s->cfg.stream_allowance_s * 1e9);
    for (int i = 0; i < EEB_SRV_METERS; i++) {
        pthread_mutex_lock(&s->lock);
        const struct eeb_srv_meter *x = &s->meters[i];
        int mine = x->meter_run && x->run && !x->until_ns && !x->closing &&
                   now - x->heard_ns > (x->begun ? allowance : EEB_SRV_PRE_BEGIN_NS) &&
                   eeb_srv_meter_close_slot(s, i);
        pthread_mutex_unlock(&s->lock);
        if (mine)
            eeb_srv_meter_finish(s, i);
    }
}

int eeb_srv_meter_open(struct eeb_server *s, int station, struct eeb_srv_meter *m, char *err,
                       size_t errlen)
{
    let_go_silent(s);
    *m = (struct eeb_srv_meter){.hold = {.max = NAN}};
    int rc;
    if (s->agents[station].key_sha256[0]) {
        rc = agent_open(s, station, m, err, errlen);
    } else if ((rc = eeb_power_open(s->cfg.stations[station].uri, &m->src, err, errlen)) ==
               EEB_OK) {
        snprintf(m->source, sizeof m->source, "%s", m->src->uri);
        snprintf(m->provenance, sizeof m->provenance, "%s",
                 eeb_provenance_name(m->src->provenance));
        /* once per the meter's update unless the organizer says */
        m->rate_hz =
            s->cfg.meter_rate_hz > 0 ? s->cfg.meter_rate_hz : eeb_power_default_rate(m->src);
        m->update_interval_s = m->src->update_interval_s;
        m->can_range = eeb_power_source_ranges(m->src);
    }
    if (rc == EEB_OK)
        rc = eeb_srv_store_meter_run(s->store, m->source, m->rate_hz, m->update_interval_s,
                                     m->provenance, &m->meter_run, err, errlen);
    if (rc) {
        eeb_power_close(m->src);
        m->src = NULL;
    }
    return rc;
}

/* An agent's meter begins now: the log's begin is marked on the server's
 * clock, the samples it keeps from then. */
static int agent_start(struct eeb_server *s, struct eeb_srv_meter *m, char *err, size_t errlen)
{
    m->from_ns = eeb_mono_ns();
    return eeb_srv_store_meter_event(s->store, m->meter_run, EEB_EVENT_LOG_BEGIN, m->from_ns,
                                     eeb_utc_ns(), NULL, err, errlen);
}

int eeb_srv_meter_start(struct eeb_server *s, struct eeb_srv_meter *m, char *err, size_t errlen)
{
    struct eeb_sampler_config cfg;
    eeb_sampler_config_default(&cfg);
    cfg.db_path = eeb_srv_store_path(s->store);
    cfg.run = m->meter_run;
    cfg.rate_hz = m->rate_hz;
    m->heard_ns = eeb_mono_ns();
    int rc = m->agent ? agent_start(s, m, err, errlen)
                      : eeb_sampler_start(m->src, &cfg, &m->sampler, err, errlen);
    pthread_mutex_lock(&s->lock);
    int slot = -1, busy = m->agent && eeb_srv_agent_measuring(s, m->agent - 1) >= 0;
    for (int i = 0; rc == EEB_OK && !busy && i < EEB_SRV_METERS && slot < 0; i++)
        if (!s->meters[i].meter_run)
            s->meters[slot = i] = *m;
    pthread_mutex_unlock(&s->lock);
    if (rc == EEB_OK && slot < 0) {
        if (m->sampler) {
            struct eeb_sampler_stats st;
            char ignored[512];
            (void)eeb_sampler_stop(m->sampler, &st, ignored, sizeof ignored);
        }
        eeb_srv_meter_close(s, m);
        return busy ? eeb_errf(err, errlen, EEB_EDEVICE, "its agent is measuring another run")
                    : eeb_errf(err, errlen, EEB_EINVAL,
                               "the server reads %d meters at once at most", EEB_SRV_METERS);
    }
    if (rc == EEB_OK && m->sampler)
        eeb_sampler_mark(m->sampler, EEB_EVENT_LOG_BEGIN, NULL);
    else if (rc)
        eeb_srv_meter_close(s, m);
    return rc;
}

int eeb_srv_meter_resume(struct eeb_server *s, int station, const struct eeb_srv_in_flight *r,
                         char *err, size_t errlen)
{
    struct eeb_srv_meter_log log;
    int rc = eeb_srv_store_meter_resume(s->store, r->meter_run, &log, err, errlen);
    if (rc)
        return rc;
    struct eeb_srv_meter m = {.hold = {.max = NAN},
                              .meter_run = r->meter_run,
                              .run = r->id,
                              .rate_hz = log.rate_hz,
                              .update_interval_s = log.update_interval_s,
                              .heard_ns = eeb_mono_ns(),
                              .begun = r->begun != 0};
    snprintf(m.source, sizeof m.source, "%s", log.source);
    snprintf(m.provenance, sizeof m.provenance, "%s", log.provenance);
    if (s->agents[station].key_sha256[0]) {
        /* the agent kept what it could not send: the samples of the gap
         * come with its next batches, after the last one kept */
        int64_t utc_mono = eeb_utc_ns() - eeb_mono_ns();
        m.agent = station + 1;
        m.from_ns = log.begin_ns ? log.begin_ns : eeb_mono_ns();
        m.last_ns = log.last_ns, m.last_utc_ns = log.last_utc_ns, m.kept = log.samples;
        if (r->complete)
            m.until_ns = r->completed - utc_mono;
    } else if (!r->complete) {
        struct eeb_sampler_config cfg;
        eeb_sampler_config_default(&cfg);
        cfg.db_path = eeb_srv_store_path(s->store);
        cfg.run = m.meter_run;
        cfg.rate_hz = m.rate_hz;
        if ((rc = eeb_power_open(s->cfg.stations[station].uri, &m.src, err, errlen)) == EEB_OK &&
            (rc = eeb_sampler_start(m.src, &cfg, &m.sampler, err, errlen)) != EEB_OK)
            eeb_power_close(m.src);
        if (rc)
            return rc;
    } else {
        return EEB_OK; /* its window is whole in the log: nothing more to read */
    }
    pthread_mutex_lock(&s->lock);
    int slot = -1;
    for (int i = 0; i < EEB_SRV_METERS && slot < 0; i++)
        if (!s->meters[i].meter_run)
            s->meters[slot = i] = m;
    pthread_mutex_unlock(&s->lock);
    if (slot < 0)
        eeb_srv_meter_close(s, &m);
    return slot < 0 ? eeb_errf(err, errlen, EEB_EINVAL,
                               "the server reads %d meters at once at most", EEB_SRV_METERS)
                    : EEB_OK;
}

/* The slot measuring run, or -1; s->lock held. */
static int slot_of(struct eeb_server *s, int64_t run);

int eeb_srv_meter_last_read(struct eeb_server *s, int64_t run, int64_t *last_ns)
{
    pthread_mutex_lock(&s->lock);
    int i = slot_of(s, run), live = i >= 0 && !s->meters[i].closing;
    struct eeb_sampler *sampler = live ? s->meters[i].sampler : NULL;
    *last_ns = live ? s->meters[i].last_ns : 0;
    if (sampler) { /* the slot stays while its run is in flight: this caller's */
        struct eeb_sampler_live l;
        eeb_sampler_live(sampler, &l);
        *last_ns = l.write_failed ? 0 : l.last_ns;
    }
    pthread_mutex_unlock(&s->lock);
    return live;
}

/* The slot whose meter run is meter_run, or -1; s->lock held. */
static int slot_of_log(struct eeb_server *s, int64_t meter_run)
{
    for (int i = 0; i < EEB_SRV_METERS; i++)
        if (s->meters[i].meter_run == meter_run)
            return i;
    return -1;
}

void eeb_srv_meter_bind(struct eeb_server *s, int64_t meter_run, int64_t run)
{
    pthread_mutex_lock(&s->lock);
    int i = slot_of_log(s, meter_run);
    if (i >= 0)
        s->meters[i].run = run;
    pthread_mutex_unlock(&s->lock);
}

void eeb_srv_meter_heard(struct eeb_server *s, int64_t run, int begun)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < EEB_SRV_METERS; i++)
        if (s->meters[i].meter_run && s->meters[i].run == run) {
            s->meters[i].heard_ns = eeb_mono_ns();
            s->meters[i].begun |= begun;
        }
    pthread_mutex_unlock(&s->lock);
}

void eeb_srv_meter_drop(struct eeb_server *s, int64_t meter_run)
{
    pthread_mutex_lock(&s->lock);
    int i = slot_of_log(s, meter_run);
    int mine = i >= 0 && eeb_srv_meter_close_slot(s, i);
    pthread_mutex_unlock(&s->lock);
    if (mine)
        eeb_srv_meter_finish(s, i);
}

void eeb_srv_meter_close(struct eeb_server *s, struct eeb_srv_meter *m)
{
    eeb_power_close(m->src);
    eeb_srv_store_meter_done(s->store, m->meter_run);
    *m = (struct eeb_srv_meter){0};
}

int eeb_srv_meter_close_slot(struct eeb_server *s, int i)
{
    struct eeb_srv_meter *x = &s->meters[i];
    if (!x->closing)
        x->closing = 1;
    if (x->closing != 1 || x->inflight)
        return 0;
    x->closing = 2;
    return 1;
}

void eeb_srv_meter_finish(struct eeb_server *s, int i)
{
    pthread_mutex_lock(&s->lock);
    struct eeb_srv_meter m = s->meters[i]; /* none changes it while it closes */
    pthread_mutex_unlock(&s->lock);
    if (m.sampler) {
        eeb_sampler_mark(m.sampler, EEB_EVENT_LOG_END, NULL);
        struct eeb_sampler_stats st;
        char ignored[512];
        (void)eeb_sampler_stop(m.sampler, &st, ignored, sizeof ignored); /* its faults are
                                                                            recorded */
    } else if (m.agent) {
        eeb_srv_store_meter_counts(s->store, m.meter_run, m.kept, m.failed, m.dropped, m.hold.max,
                                   m.provenance);
    }
    eeb_srv_meter_close(s, &m);
    pthread_mutex_lock(&s->lock);
    s->meters[i] = (struct eeb_srv_meter){0};
    pthread_mutex_unlock(&s->lock);
}

/* The slot measuring run, or -1; s->lock held. */
static int slot_of(struct eeb_server *s, int64_t run)
{
    for (int i = 0; i < EEB_SRV_METERS; i++)
        if (s->meters[i].meter_run && s->meters[i].run == run)
            return i;
    return -1;
}

void eeb_srv_meter_stop(struct eeb_server *s, int64_t run)
{
    int64_t until = 0, meter_run = 0;
    char ignored[256];
    pthread_mutex_lock(&s->lock);
    int i = slot_of(s, run), mine = 0;
    if (i >= 0 && s->meters[i].agent && !s->meters[i].until_ns && !s->meters[i].closing) {
        until = s->meters[i].until_ns = eeb_mono_ns(); /* held for the agent's last samples */
        meter_run = s->meters[i].meter_run;
    } else if (i >= 0 && !s->meters[i].agent && !s->meters[i].closing) {
        mine = eeb_srv_meter_close_slot(s, i);
    }
    pthread_mutex_unlock(&s->lock);
    if (until)
        (void)eeb_srv_store_meter_event(s->store, meter_run, EEB_EVENT_LOG_END, until, eeb_utc_ns(),
                                        NULL, ignored, sizeof ignored);
    else if (mine)
        eeb_srv_meter_finish(s, i);
}

int eeb_srv_meter_settle(struct eeb_server *s, int64_t run, int64_t need_utc_ns)
{
    /* no waiting here: a request's thread serves other connections, the
     * agent's among them, whose samples this one waits for */
    pthread_mutex_lock(&s->lock);
    int i = slot_of(s, run), mine = 0, settled = 1;
    if (i >= 0 && !s->meters[i].closing) {
        const struct eeb_srv_meter *x = &s->meters[i];
        int covered = !x->agent || x->last_utc_ns >= need_utc_ns;
        int64_t stopped = x->until_ns ? x->until_ns : eeb_mono_ns();
        if (covered || eeb_mono_ns() - stopped > AGENT_SETTLE_NS)
            mine = eeb_srv_meter_close_slot(s, i);
        else
            settled = 0;
    } else if (i >= 0 && s->meters[i].closing == 1) {
        mine = !s->meters[i].inflight && eeb_srv_meter_close_slot(s, i);
        settled = mine;
    }
    pthread_mutex_unlock(&s->lock);
    if (mine)
        eeb_srv_meter_finish(s, i);
    return settled;
}

void eeb_srv_meters_stop(struct eeb_server *s)
{
    for (int i = 0; i < EEB_SRV_METERS; i++) {
        pthread_mutex_lock(&s->lock);
        int mine = s->meters[i].meter_run && eeb_srv_meter_close_slot(s, i);
        pthread_mutex_unlock(&s->lock);
        if (mine)
            eeb_srv_meter_finish(s, i);
    }
}
