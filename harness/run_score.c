/*
 * run_score.c - SCORE: the record judged from the database alone
 * (record/judge.c), the figures stored as the run's results, and the
 * verdict as the run's "score" event.
 */
#include "run_int.h"

#include <math.h>
#include <string.h>

/* The record judged with M_s as given (NAN: recounted) and the figures
 * stored as the run's results: the run's own, or with record not 0 the
 * server's record of it taken back (its facts, its meter), which `eeb
 * check` of the run judges in its place. */
int run_judge_record(struct run *r, int64_t record, double m_s, char *err, size_t errlen)
{
    struct eeb_run_outcome *out = r->out;
    char uuid[sizeof out->uuid];
    memcpy(uuid, out->uuid, sizeof uuid);
    int rc = eeb_run_judge(r->c->db, record ? record : r->id, m_s, out, err, errlen);
    if (rc)
        return rc;
    out->run = r->id; /* the figures are this run's, whichever record gave them */
    memcpy(out->uuid, uuid, sizeof uuid);
    /* what the modeled board would take for the steps the CPU ran */
    out->device_time_s = r->modeled_device ? out->steps * r->perf.train_step_s : NAN;
    out->device_energy_j = r->modeled_device ? out->steps * r->perf.train_step_j : NAN;
    /* a report describes a placed design; four fractions are declared */
    const char *util_prov = strcmp(r->util.family, "given") == 0 ? "modeled" : "measured";
    rc = eeb_run_store_results(r->db, r->id, out, util_prov, err, errlen);
    /* on the modeled clock the host's own time is shown, never scored */
    if (rc == EEB_OK && out->modeled_clock)
        rc = eeb_rundb_result_set(r->db, r->id, "host_time_s", out->host_time_s, "s", "measured",
                                  err, errlen);
    return rc;
}

/* A judged run's verdict in a word (before it is complete). */
const char *run_judged_as(const struct eeb_run_outcome *o)
{
    return o->aborted ? "aborted" : !o->valid ? "invalid" : o->pass ? "pass" : "fail";
}

json_t *eeb_run_score_json(const struct eeb_run_outcome *o, const char *server)
{
    json_t *verdict =
        json_pack("{s:s, s:s}", EEB_EVENT_KEY_VERDICT, run_judged_as(o), "why", o->why);
    json_object_set_new(verdict, EEB_EVENT_KEY_S, o->pass ? json_real(o->score.s) : json_null());
    if (server)
        json_object_set_new(
            verdict, "server",
            json_pack("{s:s, s:I}", "url", server, "run_id", (json_int_t)o->server_run));
    return verdict;
}

/* The verdict as the run's "score" event; by the server, its id. */
void run_score_event(struct run *r, int by_server)
{
    run_event(r, EEB_EVENT_SCORE, eeb_run_score_json(r->out, by_server ? r->c->server : NULL));
}
