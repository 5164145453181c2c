/*
 * agent.c - director mode through a station's agent: for a meter the
 * server cannot reach, `eeb power agent` on the meter's host reads it and
 * sends its samples here as it takes them (POST /api/v1/station/samples),
 * with its station's key ("--station TEAM=agent:KEYFILE", made by `eeb
 * serve admin station-key`): the organizer's, not the team's.  Each batch
 * says the agent's clock now, so that its samples are placed on the
 * server's clock as they arrive (late by the network's delay, never
 * early); those of a run's time go to the run's meter run (meter.c).
 * Each reading may carry the uncertainty its meter stated, held to the
 * rules' limit here as the sampler holds a meter the server reads itself
 * (eeb_power_hold: a power_fault event at the reading's time, the largest
 * stored when the meter is let go); the batch's read faults, as the
 * agent's log recorded them, are recorded at their times too.
 */
#include "server_int.h"

#include "power/eeb_power.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AGENT_URI   "agent:"
#define SAMPLES_MAX 20000 /* a batch: the agent sends a few thousand at most */
#define FAULTS_MAX  64    /* a batch's read faults (the agent sends 64 at most) */
#define EVENTS_MAX                                                                                 \
    1024                     /* faults recorded in a meter run from its agent: the first is        \
                              * what makes a run invalid, the rest only tell the story */
#define UNCERTAINTY_MAX 10.0 /* a reading's uncertainty, a fraction (1000 %) */

int eeb_server_station_key(const char *path, char *err, size_t errlen)
{
    unsigned char raw[32];
    char key[EEB_TOKEN_HEX + 1];
    int rc = eeb_random_bytes(raw, sizeof raw, err, errlen);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(key + 2 * i, 3, "%02x", raw[i]);
    strcat(key, "\n");
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", path,
                      errno == EEXIST ? "exists (a station's key is never overwritten)"
                                      : strerror(errno));
    else {
        int wrote = write(fd, key, strlen(key)) == (ssize_t)strlen(key);
        if (close(fd) != 0 || !wrote) {
            rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
            unlink(path); /* half a key would block the next try as "exists" */
        }
    }
    memset(raw, 0, sizeof raw), memset(key, 0, sizeof key);
    return rc;
}

int eeb_server_station_key_read(const char *path, char key[EEB_TOKEN_HEX], char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return eeb_errf(err, errlen, EEB_EIO, "station key %s: %s", path, strerror(errno));
    char line[EEB_TOKEN_HEX + 8] = "";
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    ok = ok && strlen(line) == EEB_TOKEN_HEX - 1 &&
         strspn(line, "0123456789abcdef") == EEB_TOKEN_HEX - 1;
    if (ok)
        memcpy(key, line, EEB_TOKEN_HEX);
    memset(line, 0, sizeof line);
    return ok ? EEB_OK
              : eeb_errf(err, errlen, EEB_EFORMAT,
                         "station key %s: expected one line of 64 lowercase hex digits "
                         "(eeb serve admin station-key makes one)",
                         path);
}

int eeb_srv_agents_load(struct eeb_server *s, char *err, size_t errlen)
{
    for (int i = 0; i < EEB_SERVER_STATIONS && s->cfg.stations[i].team; i++) {
        const char *uri = s->cfg.stations[i].uri;
        if (strncmp(uri, AGENT_URI, strlen(AGENT_URI)) != 0)
            continue;
        char key[EEB_TOKEN_HEX];
        int rc = eeb_srv_file_private(uri + strlen(AGENT_URI), "station key", err, errlen);
        if (rc == EEB_OK)
            rc = eeb_server_station_key_read(uri + strlen(AGENT_URI), key, err, errlen);
        if (rc)
            return rc;
        eeb_sha256(key, strlen(key), s->agents[i].key_sha256);
        memset(key, 0, sizeof key);
        s->agents[i].offset_ns = INT64_MAX;
        for (int j = 0; j < i; j++) /* one agent's samples would measure the other's runs */
            if (strcmp(s->agents[j].key_sha256, s->agents[i].key_sha256) == 0)
                return eeb_errf(err, errlen, EEB_EINVAL,
                                "--station: teams %s and %s have the same station key",
                                s->cfg.stations[j].team, s->cfg.stations[i].team);
    }
    return EEB_OK;
}

int eeb_srv_agent_by_key(struct eeb_server *s, const char *key)
{
    char sha[EEB_SHA256_HEX];
    eeb_sha256(key, strlen(key), sha);
    int found = -1;
    for (int i = 0; i < EEB_SERVER_STATIONS; i++) {
        unsigned char diff = s->agents[i].key_sha256[0] == '\0';
        for (size_t j = 0; j < sizeof sha; j++) /* in constant time */
            diff |= (unsigned char)(sha[j] ^ s->agents[i].key_sha256[j]);
        if (!diff)
            found = i;
    }
    return found;
}

/* A read fault of the agent's meter, as its log recorded it. */
struct fault {
    int64_t t_ns; /* on the agent's clock, then the server's */
    int recovered;
    const char *reason;
};

/* A batch as the agent sent it. */
struct batch {
    const char *session; /* the agent's log, its clock's */
    const char *source, *provenance;
    double rate_hz, update_interval_s;
    int64_t now_ns, failed, dropped;
    struct eeb_sample *x; /* t_mono_ns on the agent's clock */
    double *u;            /* each one's uncertainty: NAN none stated, INFINITY unknown */
    size_t n;
    struct fault faults[FAULTS_MAX];
    size_t nfaults;
    int can_range;  /* its meter has ranges to set (ranging.c) */
    json_t *ranged; /* what it set when asked to range, or NULL (borrowed) */
};

/* [t_ns, watts, volts, amps[, uncertainty]] of each sample, in time order,
 * none after now: the uncertainty a fraction, null for one the meter
 * could not evaluate, absent for none stated. */
static int read_samples(json_t *a, struct batch *b, struct eeb_srv_fault *f)
{
    if (!json_is_array(a) || json_array_size(a) > SAMPLES_MAX)
        return eeb_srv_bad(f, "samples", "expected an array of at most %d samples", SAMPLES_MAX);
    if (!(b->x = calloc(json_array_size(a) + 1, sizeof *b->x)) ||
        !(b->u = calloc(json_array_size(a) + 1, sizeof *b->u)))
        return eeb_srv_bad(f, "samples", "out of memory");
    size_t i;
    json_t *v;
    char at[64];
    json_array_foreach(a, i, v)
    {
        struct eeb_sample *x = &b->x[i];
        snprintf(at, sizeof at, "samples[%zu]", i);
        if (!json_is_array(v) || json_array_size(v) < 4 || json_array_size(v) > 5)
            return eeb_srv_bad(f, at, "expected [t_ns, watts, volts, amps[, uncertainty]]");
        int64_t before = i ? b->x[i - 1].t_mono_ns : 0;
        snprintf(at, sizeof at, "samples[%zu][0]", i);
        if (eeb_srv_int_field(json_array_get(v, 0), at, before + 1, b->now_ns, &x->t_mono_ns, f))
            return eeb_srv_bad(f, at,
                               "expected its time t_ns, an integer after the one before "
                               "and not after now_ns");
        snprintf(at, sizeof at, "samples[%zu][1]", i);
        if (eeb_srv_reading_field(json_array_get(v, 1), at, EEB_SRV_WATTS, &x->watts, f))
            return -1;
        snprintf(at, sizeof at, "samples[%zu][2]", i);
        if (eeb_srv_reading_field(json_array_get(v, 2), at, EEB_SRV_VOLTS, &x->volts, f))
            return -1;
        snprintf(at, sizeof at, "samples[%zu][3]", i);
        if (eeb_srv_reading_field(json_array_get(v, 3), at, EEB_SRV_AMPS, &x->amps, f))
            return -1;
        snprintf(at, sizeof at, "samples[%zu][4]", i);
        json_t *u = json_array_get(v, 4);
        b->u[i] = !u ? NAN : json_is_null(u) ? INFINITY : 0;
        if (u && !json_is_null(u) && eeb_srv_number_field(u, at, 0, UNCERTAINTY_MAX, &b->u[i], f))
            return eeb_srv_bad(f, at,
                               "expected the reading's uncertainty, a fraction of 0 to %g, or "
                               "null for one the meter could not evaluate",
                               UNCERTAINTY_MAX);
        x->flags = eeb_sample_uncertainty_flags(b->u[i]);
    }
    b->n = json_array_size(a);
    return 0;
}

/* [{t_ns, kind, reason}...]: the meter's read faults (power_fault, and
 * power_recovered when readings resumed), in time order, none after now;
 * absent: none. */
static int read_faults(json_t *a, struct batch *b, struct eeb_srv_fault *f)
{
    if (!a)
        return 0;
    if (!json_is_array(a) || json_array_size(a) > FAULTS_MAX)
        return eeb_srv_bad(f, "faults", "expected an array of at most %d faults", FAULTS_MAX);
    size_t i;
    json_t *v;
    char at[64];
    json_array_foreach(a, i, v)
    {
        struct fault *x = &b->faults[i];
        snprintf(at, sizeof at, "faults[%zu]", i);
        if (!json_is_object(v) || json_object_size(v) != 3)
            return eeb_srv_bad(f, at, "expected {t_ns, kind, reason}");
        snprintf(at, sizeof at, "faults[%zu].t_ns", i);
        if (eeb_srv_int_field(json_object_get(v, "t_ns"), at, i ? b->faults[i - 1].t_ns : 1,
                              b->now_ns, &x->t_ns, f))
            return eeb_srv_bad(f, at,
                               "expected its time, an integer not before the one before "
                               "and not after now_ns");
        const char *kind = json_string_value(json_object_get(v, "kind"));
        snprintf(at, sizeof at, "faults[%zu].kind", i);
        if (!kind ||
            (strcmp(kind, EEB_EVENT_POWER_FAULT) && strcmp(kind, EEB_EVENT_POWER_RECOVERED)))
            return eeb_srv_bad(f, at, "expected %s or %s", EEB_EVENT_POWER_FAULT,
                               EEB_EVENT_POWER_RECOVERED);
        x->recovered = strcmp(kind, EEB_EVENT_POWER_RECOVERED) == 0;
        x->reason = json_string_value(json_object_get(v, "reason"));
        snprintf(at, sizeof at, "faults[%zu].reason", i);
        if (!x->reason || !*x->reason || strlen(x->reason) > 255)
            return eeb_srv_bad(f, at, "expected what failed, 1 to 255 characters");
    }
    b->nfaults = json_array_size(a);
    return 0;
}

static int read_batch(json_t *body, struct batch *b, struct eeb_srv_fault *f)
{
    b->session = json_string_value(json_object_get(body, "session"));
    if (!b->session || !*b->session || strlen(b->session) > 39 ||
        strspn(b->session, "0123456789abcdef-") != strlen(b->session))
        return eeb_srv_bad(f, "session", "expected the agent's log's uuid");
    b->source = json_string_value(json_object_get(body, "source"));
    b->provenance = json_string_value(json_object_get(body, "provenance"));
    enum eeb_provenance p;
    if (!b->source || !*b->source || strlen(b->source) > 255)
        return eeb_srv_bad(f, "source", "expected the meter's URI, 1 to 255 characters");
    if (!eeb_power_uri_known(b->source)) /* one spelling a scheme: what it fixes is read */
        return eeb_srv_bad(f, "source",
                           "expected one of eeb's power sources by its scheme, in lower case");
    if (!b->provenance || eeb_provenance_parse(b->provenance, &p))
        return eeb_srv_bad(f, "provenance", "expected measured, counter, modeled or declared");
    int fixed = eeb_power_uri_provenance(b->source); /* sim: is modeled, replay: declared */
    if (fixed >= 0 && fixed != (int)p)
        return eeb_srv_bad(f, "provenance", "%s reads %s figures, not %s", b->source,
                           eeb_provenance_name((enum eeb_provenance)fixed), b->provenance);
    if (eeb_srv_number_field(json_object_get(body, "rate_hz"), "rate_hz", 1, 10000, &b->rate_hz,
                             f) ||
        eeb_srv_int_field(json_object_get(body, "now_ns"), "now_ns", 1, INT64_MAX / 4, &b->now_ns,
                          f) ||
        eeb_srv_int_field(json_object_get(body, "failed"), "failed", 0, INT64_MAX, &b->failed, f) ||
        eeb_srv_int_field(json_object_get(body, "dropped"), "dropped", 0, INT64_MAX, &b->dropped,
                          f))
        return -1;
    json_t *ui = json_object_get(body, "update_interval_s"); /* absent: unknown */
    if (ui && eeb_srv_number_field(ui, "update_interval_s", 0, 3600, &b->update_interval_s, f))
        return -1;
    json_t *cr = json_object_get(body, "can_range"); /* absent: an agent that cannot */
    if (cr && !json_is_boolean(cr))
        return eeb_srv_bad(f, "can_range", "expected true or false");
    b->can_range = json_is_true(cr);
    b->ranged = json_object_get(body, "ranged");
    return read_samples(json_object_get(body, "samples"), b, f) ||
           read_faults(json_object_get(body, "faults"), b, f);
}

/* The agent's clock to the server's, from a batch it said was sent at
 * now_ns and arrived at mono: the least difference of the batches of the
 * last window (a minute, kept in sixths: from five sixths of it back to all
 * of it) is the one with the least delay, so samples are placed late by
 * that delay at most.  The clocks drift apart by parts per million, a
 * millisecond a minute at 20 ppm, so an older least would place samples
 * early.  A least that leaves the window gives way to the least of the
 * rest of it, never to the batch at hand alone: a batch held up then would
 * place every sample after it later by its delay (a gap in the meter run)
 * and the next batch back (drops).  A new session (the agent started
 * again) is a new clock, and its counts start again from 0.  s->lock held. */
static void hear(struct eeb_srv_agent *a, const struct batch *b, int64_t mono, double window_s,
                 uint64_t *failed, uint64_t *dropped)
{
    int64_t sixth = (int64_t)((window_s > 0 ? window_s : 60) * 1e9) / EEB_SRV_CLOCK_SIXTHS;
    if (strcmp(a->session, b->session)) {
        snprintf(a->session, sizeof a->session, "%s", b->session);
        a->last_t_ns = a->last_fault_t_ns = 0, a->failed = a->dropped = 0;
        for (int i = 0; i < EEB_SRV_CLOCK_SIXTHS; i++)
            a->least_ns[i] = INT64_MAX;
        a->sixth = 0, a->sixth_at_ns = mono;
    }
    for (int i = 0; i < EEB_SRV_CLOCK_SIXTHS && mono - a->sixth_at_ns >= sixth; i++) {
        a->sixth = (a->sixth + 1) % EEB_SRV_CLOCK_SIXTHS; /* the oldest leaves */
        a->least_ns[a->sixth] = INT64_MAX;
        a->sixth_at_ns += sixth;
    }
    if (mono - a->sixth_at_ns >= sixth) /* nothing heard for a whole window */
        a->sixth_at_ns = mono;
    if (mono - b->now_ns < a->least_ns[a->sixth])
        a->least_ns[a->sixth] = mono - b->now_ns;
    a->offset_ns = INT64_MAX;
    for (int i = 0; i < EEB_SRV_CLOCK_SIXTHS; i++)
        if (a->least_ns[i] < a->offset_ns)
            a->offset_ns = a->least_ns[i];
    /* what the meter failed or dropped since the batch before */
    *failed = (uint64_t)b->failed > a->failed ? (uint64_t)b->failed - a->failed : 0;
    *dropped = (uint64_t)b->dropped > a->dropped ? (uint64_t)b->dropped - a->dropped : 0;
    a->failed = (uint64_t)b->failed, a->dropped = (uint64_t)b->dropped;
    snprintf(a->source, sizeof a->source, "%s", b->source);
    snprintf(a->provenance, sizeof a->provenance, "%s", b->provenance);
    a->rate_hz = b->rate_hz, a->update_interval_s = b->update_interval_s;
    a->can_range = b->can_range;
    a->heard_ns = mono;
}

/* The batch's samples new to the server and within its meter's time,
 * moved onto the server's clocks (utc_mono: UTC minus monotonic there) to
 * the front of b->x, each after the meter's last (one the offset's fall
 * would place before it is counted dropped); how many.  s->lock held. */
static size_t take_in(const struct eeb_srv_agent *a, struct eeb_srv_meter *m, struct batch *b,
                      int64_t utc_mono)
{
    size_t n = 0;
    int64_t last = m->last_ns;
    for (size_t i = 0; i < b->n; i++) {
        int64_t t = b->x[i].t_mono_ns + a->offset_ns;
        if (b->x[i].t_mono_ns <= a->last_t_ns || t < m->from_ns || (m->until_ns && t > m->until_ns))
            continue;
        if (t <= last) {
            m->dropped++;
            continue;
        }
        b->x[n] = b->x[i], b->u[n] = b->u[i];
        b->x[n].t_mono_ns = last = t, b->x[n].t_utc_ns = t + utc_mono;
        n++;
    }
    return n;
}

/* An event of the agent's meter, to be stored in its meter run. */
struct pending {
    const char *kind;
    int64_t t, utc;
    char *payload; /* newly allocated; NULL: "{}" */
};

/* The events the batch makes in m's meter run into ev (room for n +
 * FAULTS_MAX): its n readings taken in held to the uncertainty limit, and
 * its read faults new to the server within the meter's time; EVENTS_MAX
 * in all a meter run.  How many.  s->lock held. */
static size_t find_events(const struct eeb_srv_agent *a, struct eeb_srv_meter *m,
                          const struct batch *b, size_t n, int64_t utc_mono, struct pending *ev)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char *payload;
        const char *kind = eeb_power_hold(&m->hold, b->source, &b->x[i], b->u[i], &payload);
        if (kind && m->events < EVENTS_MAX)
            ev[k++] = (struct pending){kind, b->x[i].t_mono_ns, b->x[i].t_utc_ns, payload},
            m->events++;
        else
            free(payload);
    }
    for (size_t i = 0; i < b->nfaults && m->events < EVENTS_MAX; i++) {
        const struct fault *x = &b->faults[i];
        int64_t t = x->t_ns + a->offset_ns;
        if (x->t_ns <= a->last_fault_t_ns || t < m->from_ns || (m->until_ns && t > m->until_ns))
            continue;
        char reason[320];
        snprintf(reason, sizeof reason, "the station's agent: %s", x->reason);
        json_t *o = json_pack("{s:s}", EEB_EVENT_KEY_REASON, reason);
        ev[k++] = (struct pending){x->recovered ? EEB_EVENT_POWER_RECOVERED : EEB_EVENT_POWER_FAULT,
                                   t, t + utc_mono, o ? json_dumps(o, JSON_COMPACT) : NULL};
        json_decref(o);
        m->events++;
    }
    return k;
}

int eeb_srv_agent_measuring(const struct eeb_server *s, int station)
{
    for (int i = 0; i < EEB_SRV_METERS; i++)
        if (s->meters[i].meter_run && !s->meters[i].closing && s->meters[i].agent == station + 1)
            return i;
    return -1;
}

/* POST /api/v1/station/samples: a batch of the station agent's samples. */
enum MHD_Result eeb_srv_api_station(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    struct batch b = {0};
    struct eeb_srv_fault f = {.field = ""};
    struct pending *ev = NULL;
    size_t nev = 0;
    struct eeb_server *s = k->s;
    struct eeb_srv_agent *a = &s->agents[k->station];
    if (!atomic_load(&s->taken_up)) { /* its samples would find no meter to go to */
        sent = eeb_srv_call_fail(k, 503, NULL, "the server is taking up the runs in flight");
        goto out;
    }
    if (read_batch(body, &b, &f)) {
        sent = eeb_srv_fail_fault(k, &f);
        goto out;
    }
    if (b.ranged) { /* what its meter set, when the run asked (ranging.c) */
        pthread_mutex_lock(&s->lock);
        int measuring = eeb_srv_agent_measuring(s, k->station);
        pthread_mutex_unlock(&s->lock);
        if (eeb_srv_ranged(s, measuring, b.ranged, &f)) {
            sent = eeb_srv_fail_fault(k, &f);
            goto out;
        }
    }
    int64_t mono = eeb_mono_ns(), utc_mono = eeb_utc_ns() - mono, run = 0, meter_run = 0;
    int64_t newest = b.n ? b.x[b.n - 1].t_mono_ns : 0; /* on the agent's clock */
    uint64_t failed, dropped;
    size_t n = 0;
    if (!(ev = calloc(b.n + FAULTS_MAX, sizeof *ev))) {
        sent = eeb_srv_call_fail(k, 503, NULL, "out of memory");
        goto out;
    }
    /* taken in here, so that a batch sent again is not taken twice; given
     * back if it cannot be stored */
    pthread_mutex_lock(&s->lock);
    if (a->busy) { /* a resend while the first try is stored: one at a time, so that a
                    * batch that cannot be stored is given back whole */
        pthread_mutex_unlock(&s->lock);
        sent = eeb_srv_call_fail(k, 503, NULL, "a batch of this agent's is being taken in");
        goto out;
    }
    a->busy = 1;
    eeb_srv_station_heard(s, k->station, b.session, b.x, b.n, mono);
    hear(a, &b, mono, s->cfg.station_clock_window_s, &failed, &dropped);
    int slot = eeb_srv_agent_measuring(s, k->station);
    int64_t before = a->last_t_ns, last_was = 0, last_utc_was = 0;
    int64_t faults_before = a->last_fault_t_ns;
    struct eeb_power_hold hold_was = {0};
    unsigned events_was = 0;
    if (slot >= 0) {
        struct eeb_srv_meter *m = &s->meters[slot];
        last_was = m->last_ns, last_utc_was = m->last_utc_ns;
        hold_was = m->hold, events_was = m->events;
        n = take_in(a, m, &b, utc_mono);
        nev = find_events(a, m, &b, n, utc_mono, ev);
        run = m->run, meter_run = m->meter_run;
        m->failed += failed, m->dropped += dropped;
        m->inflight++;
        if (n)
            m->last_ns = b.x[n - 1].t_mono_ns, m->last_utc_ns = b.x[n - 1].t_utc_ns;
    }
    if (newest > a->last_t_ns)
        a->last_t_ns = newest;
    if (b.nfaults && b.faults[b.nfaults - 1].t_ns > a->last_fault_t_ns)
        a->last_fault_t_ns = b.faults[b.nfaults - 1].t_ns;
    pthread_mutex_unlock(&s->lock);

    char err[512];
    int rc = EEB_OK;
    /* the faults first: a batch given back after them records them again
     * (the judge reads the first), never the samples twice */
    for (size_t i = 0; i < nev && rc == EEB_OK; i++)
        rc = eeb_srv_store_meter_event(s->store, meter_run, ev[i].kind, ev[i].t, ev[i].utc,
                                       ev[i].payload ? ev[i].payload : "{}", err, sizeof err);
    if (rc == EEB_OK && n)
        rc = eeb_srv_store_meter_samples(s->store, meter_run, b.source, b.x, n, err, sizeof err);
    /* a meter stopped is let go once a sample past its stop has come (they
     * come in order: all before it have) */
    pthread_mutex_lock(&s->lock);
    int mine = 0;
    const char *range = slot >= 0 && !rc ? eeb_srv_range_asked(s, slot) : NULL;
    if (rc)
        a->last_t_ns = before, a->last_fault_t_ns = faults_before;
    a->busy = 0;
    if (slot >= 0) {
        struct eeb_srv_meter *m = &s->meters[slot];
        m->kept += rc ? 0 : n;
        if (rc)
            m->last_ns = last_was, m->last_utc_ns = last_utc_was, m->hold = hold_was,
            m->events = events_was;
        m->inflight--;
        if (m->closing || (m->until_ns && newest && newest + a->offset_ns >= m->until_ns))
            mine = eeb_srv_meter_close_slot(s, slot);
    }
    pthread_mutex_unlock(&s->lock);
    if (mine)
        eeb_srv_meter_finish(s, slot);
    if (rc)
        sent = eeb_srv_call_fail(k, 500, NULL, err); /* sent again, it is taken in then */
    else {
        json_t *o = json_pack("{s:s, s:I, s:I}", "team", s->cfg.stations[k->station].team,
                              "measuring", (json_int_t)run, "kept", (json_int_t)n);
        if (o && range) /* the run asks its meter to range */
            json_object_set_new(o, "range", json_string(range));
        sent = eeb_srv_call_json(k, 200, o);
    }
out:
    for (size_t i = 0; ev && i < nev; i++)
        free(ev[i].payload);
    free(ev);
    free(b.x), free(b.u);
    json_decref(body);
    return sent;
}
