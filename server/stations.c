/*
 * stations.c - what an operator sees of the stations' agents (director
 * mode through `eeb power agent`, agent.c): in the server's log, an agent
 * first heard, silent for longer than its allowance, and heard again; on
 * /metrics, per station, how long ago its agent was last heard and the
 * samples it sent that were new to the server (which
 * eeb_samples_received_total counts too, with the runs' own).  A thread
 * looks at the agents twice a second, so that silence is said while
 * nothing is heard.
 */
#include "server_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define WATCH_EVERY_NS 500000000LL

/* The station's team, as the log names it (escaped there). */
static const char *team_of(const struct eeb_server *s, int station)
{
    return s->cfg.stations[station].team ? s->cfg.stations[station].team : "?";
}

/* The team as a Prometheus label's value: a team's name is letters, digits
 * and _.- (eeb_server_add_team), and anything else is shown as '_'. */
static const char *label_of(const struct eeb_server *s, int station, char out[EEB_SRV_TEAM_NAME])
{
    snprintf(out, EEB_SRV_TEAM_NAME, "%s", team_of(s, station));
    for (char *c = out; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              strchr("_.-", *c)))
            *c = '_';
    return out;
}

void eeb_srv_station_heard(struct eeb_server *s, int station, const char *session,
                           const struct eeb_sample *x, size_t n, int64_t mono)
{
    const struct eeb_srv_agent *a = &s->agents[station];
    struct eeb_srv_station_status *st = &s->station_status[station];
    /* new to the server: past the last taken in of the same session (a
     * batch sent again adds nothing); a new session is a new clock */
    int same = strcmp(a->session, session) == 0;
    uint64_t fresh = 0;
    for (size_t i = 0; i < n; i++)
        fresh += !same || x[i].t_mono_ns > a->last_t_ns;
    st->received += fresh;
    atomic_fetch_add(&s->samples_received, fresh);
    if (!a->heard_ns)
        eeb_srv_log(s, "station %s: its agent first heard, session %s", team_of(s, station),
                    session);
    else if (st->silent)
        eeb_srv_log(s, "station %s: its agent heard again after %.1f s silent%s",
                    team_of(s, station), (double)(mono - a->heard_ns) / 1e9,
                    same ? "" : " (started again: a new session)");
    st->silent = 0;
}

/* Each agent heard from once and silent past its allowance since, said
 * once in the log. */
static void look(struct eeb_server *s)
{
    int64_t now = eeb_mono_ns();
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < EEB_SERVER_STATIONS; i++) {
        const struct eeb_srv_agent *a = &s->agents[i];
        struct eeb_srv_station_status *st = &s->station_status[i];
        if (!a->key_sha256[0] || !a->heard_ns || st->silent ||
            now - a->heard_ns <= EEB_SRV_AGENT_SILENT_NS)
            continue;
        st->silent = 1;
        eeb_srv_log(s,
                    "station %s: its agent silent for %.1f s, longer than its allowance of %.0f s: "
                    "no run is registered on it until it is heard again",
                    team_of(s, i), (double)(now - a->heard_ns) / 1e9,
                    (double)EEB_SRV_AGENT_SILENT_NS / 1e9);
    }
    pthread_mutex_unlock(&s->lock);
}

static void *watch(void *arg)
{
    struct eeb_server *s = arg;
    struct eeb_srv_watch *w = &s->watch;
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_EVERY_NS;
        until.tv_sec += until.tv_nsec / 1000000000, until.tv_nsec %= 1000000000;
        if (pthread_cond_timedwait(&w->wake, &w->lock, &until) == ETIMEDOUT && !w->stop) {
            pthread_mutex_unlock(&w->lock);
            look(s);
            pthread_mutex_lock(&w->lock);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int eeb_srv_stations_watch(struct eeb_server *s, char *err, size_t errlen)
{
    struct eeb_srv_watch *w = &s->watch;
    int agents = 0;
    for (int i = 0; i < EEB_SERVER_STATIONS; i++)
        agents += s->agents[i].key_sha256[0] != '\0';
    if (!agents)
        return EEB_OK;
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, &monotonic);
    pthread_condattr_destroy(&monotonic);
    w->stop = 0;
    int rc = pthread_create(&w->thread, NULL, watch, s);
    if (rc) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        return eeb_errf(err, errlen, EEB_ENOMEM, "the stations' watch: %s", strerror(rc));
    }
    w->running = 1;
    return EEB_OK;
}

void eeb_srv_stations_unwatch(struct eeb_server *s)
{
    struct eeb_srv_watch *w = &s->watch;
    if (!w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    w->running = 0;
}

size_t eeb_srv_stations_metrics(struct eeb_server *s, char *out, size_t n)
{
    size_t used = 0;
    int64_t now = eeb_mono_ns();
    int any = 0;
    char label[EEB_SRV_TEAM_NAME];
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (used < n)                                                                              \
            used += (size_t)snprintf(out + used, n - used, __VA_ARGS__);                           \
    } while (0)
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < EEB_SERVER_STATIONS; i++)
        any |= s->agents[i].key_sha256[0] != '\0';
    if (any)
        PUT("# HELP eeb_station_samples_received_total Samples new to the server a station's "
            "agent sent since start.\n# TYPE eeb_station_samples_received_total counter\n");
    for (int i = 0; i < EEB_SERVER_STATIONS; i++)
        if (s->agents[i].key_sha256[0])
            PUT("eeb_station_samples_received_total{team=\"%s\"} %llu\n", label_of(s, i, label),
                (unsigned long long)s->station_status[i].received);
    if (any)
        PUT("# HELP eeb_station_last_heard_seconds Seconds since a station's agent was last "
            "heard (none: never since start).\n# TYPE eeb_station_last_heard_seconds gauge\n");
    for (int i = 0; i < EEB_SERVER_STATIONS; i++)
        if (s->agents[i].key_sha256[0] && s->agents[i].heard_ns)
            PUT("eeb_station_last_heard_seconds{team=\"%s\"} %.3f\n", label_of(s, i, label),
                (double)(now - s->agents[i].heard_ns) / 1e9);
    pthread_mutex_unlock(&s->lock);
#undef PUT
    return used;
}
