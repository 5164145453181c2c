/*
 * resume.c - a server started again takes up the runs that were in flight
 * when it stopped.  Their streams go on (the allowance counts from the
 * restart: stream.c, settle.c).  In director mode a station's agent kept
 * the samples it could not send, so its meter is taken up where its log
 * stops and the gap comes with its next batches; a meter the server reads
 * itself is reopened if the run had not begun its fine-tune.  One that had
 * begun has a gap in its window no one can fill: the run is void, the
 * server's fault, and may be run again.  The restart and each run taken up
 * are in the log and the audit log.
 */
#include "server_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct taking_up {
    struct eeb_server *s;
    int runs, resumed, voided;
    char said[500]; /* what the audit log keeps */
};

/* Why run r cannot be taken up as it was, "" if it can: its meter, read by
 * the server itself, missed part of its fine-tune. */
static void lost(const struct taking_up *u, const struct eeb_srv_in_flight *r, int station,
                 char *why, size_t n)
{
    why[0] = '\0';
    if (!r->meter_run || r->complete || !r->begun || station < 0 ||
        u->s->agents[station].key_sha256[0])
        return;
    snprintf(why, n,
             "the server restarted during its fine-tune: its meter, which the server reads "
             "itself, was not read meanwhile");
}

/* "run ID what" added to what the audit log keeps, while it has room. */
static void note(struct taking_up *u, long long id, const char *what)
{
    size_t at = strlen(u->said);
    if (at + 40 < sizeof u->said)
        snprintf(u->said + at, sizeof u->said - at, "%srun %lld %s", at ? "; " : "", id, what);
}

static void take_up(struct taking_up *u, const struct eeb_srv_in_flight *r)
{
    struct eeb_server *s = u->s;
    char why[256], err[512];
    int station = r->meter_run ? eeb_srv_station(s, r->team) : -1;
    u->runs++;
    lost(u, r, station, why, sizeof why);
    if (!why[0] && r->meter_run && station < 0)
        snprintf(why, sizeof why,
                 "the server started again without team %s's station, which read its meter",
                 r->team);
    if (!why[0] && r->meter_run && eeb_srv_meter_resume(s, station, r, err, sizeof err))
        snprintf(why, sizeof why,
                 "the server started again and could not take up its meter: %.180s", err);
    int ended = why[0] ? eeb_srv_end_run(s, r->id, 0, "void", why, err, sizeof err) : 0;
    if (ended < 0) {
        eeb_srv_log(s, "run %lld could not be made void after the restart: %s", (long long)r->id,
                    err);
        note(u, r->id, "not taken up");
        return;
    }
    if (why[0]) {
        u->voided += ended;
        note(u, r->id, "void");
        return;
    }
    u->resumed++;
    note(u, r->id, "taken up");
    eeb_srv_log(s, "run %lld taken up after the restart%s", (long long)r->id,
                r->meter_run ? ", its meter with it" : "");
}

int eeb_srv_resume(struct eeb_server *s, char *err, size_t errlen)
{
    s->started_utc_ns = eeb_utc_ns();
    int rc = eeb_srv_store_restarts(s->store, s->restarts, EEB_SRV_RESTARTS - 1, &s->nrestarts, err,
                                    errlen);
    struct taking_up u = {.s = s};
    struct eeb_srv_in_flight *r = NULL;
    size_t n = 0;
    if (rc == EEB_OK)
        rc = eeb_srv_runs_in_flight(s, &r, &n, err, errlen);
    for (size_t i = 0; i < n; i++)
        take_up(&u, &r[i]);
    free(r);
    atomic_store(&s->taken_up, 1);
    if (rc || !u.runs)
        return rc;
    s->restarts[s->nrestarts++] = s->started_utc_ns;
    eeb_srv_log(s, "started again with %d runs in flight: %d taken up, %d void", u.runs, u.resumed,
                u.voided);
    return eeb_srv_store_audit(s->store, "restart", "server", u.said, err, errlen);
}
