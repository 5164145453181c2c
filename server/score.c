/*
 * score.c - POST /api/v1/runs/{id}/score: the server gathers what only it
 * saw (the stream, the deadline, the seed handed out, its meter's window)
 * and counts M_s against the labels it alone holds, where they may count;
 * writes those facts into its copy of the run's record (an evaluator
 * event); and judges the record as `eeb check` would, which applies them.
 */
#include "server_int.h"

#include "record/eeb_record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- score ---- */

/* The payload of the score event the server adds to the run's record
 * (free it; NULL if out of memory, and the event goes without one). */
static char *score_json(const struct eeb_run_outcome *o)
{
    json_t *payload =
        json_pack("{s:s, s:s, s:o}", "by", "server", EEB_EVENT_KEY_VERDICT, eeb_run_verdict(o, 0),
                  EEB_EVENT_KEY_S, eeb_json_number(o->score.s));
    char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(payload);
    return text;
}

/* The sampler's counters from the body ({"samples_dropped": n,
 * "reads_failed": n, "deadlines_missed": n}, each optional), stored as
 * the run's results for the validity rules; or the 400 sent. */
static int store_counters(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    static const char *const counters[] = {EEB_RESULT_DROPPED, EEB_RESULT_FAILED,
                                           EEB_RESULT_MISSED};
    int64_t n[3] = {0, 0, 0};
    struct eeb_srv_fault f = {.field = ""};
    char err[512];
    if (k->q->len) {
        json_t *body = eeb_srv_call_body(k, sent);
        if (!body)
            return 0;
        int rc = 0;
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v)
        {
            int i = 0;
            while (i < 3 && strcmp(key, counters[i]))
                i++;
            rc = i < 3 ? eeb_srv_int_field(v, key, 0, INT32_MAX, &n[i], &f)
                       : eeb_srv_bad(&f, key, "unknown field");
            if (rc)
                break;
        }
        json_decref(body);
        if (rc) {
            *sent = eeb_srv_fail_fault(k, &f);
            return 0;
        }
    }
    for (int i = 0; i < 3; i++)
        if (eeb_srv_store_run_counter(k->s->store, k->id, counters[i], n[i], err, sizeof err)) {
            *sent = eeb_srv_call_fail(k, 500, NULL, err);
            return 0;
        }
    return 1;
}

/* What the server alone saw of run k->run, for the judge: when it
 * registered and completed, whether it fine-tuned as the server saw (an
 * official run's stream and steps: *window, its fine-tune window on the
 * server's clock), its test inputs' serving, the deadline, the seed it
 * was handed and the epochs its round's closed division allows. */
static int gather(struct eeb_srv_call *k, struct eeb_run_facts *f, struct eeb_srv_window *window,
                  char *err, size_t errlen)
{
    const struct eeb_srv_run *r = &k->run;
    *f = (struct eeb_run_facts){.seen = 1,
                                .official = r->official,
                                .registered = r->registered_utc_ns,
                                .completed = r->completed_utc_ns,
                                .test_served = r->test_served_utc_ns,
                                .predicted = r->predicted_utc_ns,
                                .predict_within_s = k->s->cfg.predict_within_s,
                                .m_s = NAN,
                                .seed = -1,
                                .audit_required = r->official};
    int64_t used;
    int rc = r->official ? eeb_srv_fine_tuned(k->s, r, window, f->fine_tune, sizeof f->fine_tune,
                                              err, errlen)
                         : EEB_OK;
    if (rc == EEB_OK && (r->official || r->entry))
        rc = eeb_srv_store_run_seeds(k->s->store, k->id, &f->seed, &used, err, errlen);
    if (rc || !r->entry || strcmp(r->division, "closed"))
        return rc;
    struct eeb_round round;
    int64_t id;
    int found = eeb_srv_store_round_find(k->s->store, r->round, 0, &id, &round, err, errlen);
    if (found > 0) {
        snprintf(f->round, sizeof f->round, "%s", round.name);
        f->epochs_max = round.task[r->task].epochs_max;
    }
    return found < 0 ? found : EEB_OK;
}

static int labels_barred(const struct eeb_run_facts *f)
{
    char why[512];
    eeb_run_labels_barred(f, why, sizeof why);
    return why[0] != '\0';
}

/* The labels' count where they may count, else none (and why not in
 * f->m_s_why): no M_s is counted, stored or sent for a run whose labels
 * are barred.  Predictions posted while the run is being scored are timed
 * with the rest: their time is read afresh after the tally. */
static int count_labels(struct eeb_srv_call *k, const struct eeb_srv_testset *t,
                        struct eeb_run_facts *f, char *err, size_t errlen)
{
    if (labels_barred(f))
        return EEB_OK;
    int rc = eeb_srv_testset_m_s(t, k->s->store, k->id, &f->m_s, f->m_s_why, sizeof f->m_s_why, err,
                                 errlen);
    struct eeb_srv_run now;
    int found = rc ? rc : eeb_srv_store_run_get(k->s->store, k->id, &now, err, errlen);
    if (found < 0)
        return found;
    if (found > 0)
        f->predicted = now.predicted_utc_ns;
    if (labels_barred(f) || f->m_s_why[0])
        f->m_s = NAN;
    return EEB_OK;
}

/* Director mode: the server's meter let go once its samples cover the
 * window, and the window placed in its log; or why there is none. */
static int place_window(struct eeb_srv_call *k, const struct eeb_srv_window *window,
                        struct eeb_run_facts *f, char *err, size_t errlen)
{
    if (!k->run.meter_run)
        return EEB_OK;
    if (!eeb_srv_meter_settle(k->s, k->id, window->end_utc_ns))
        return eeb_errf(err, errlen, EEB_ENODATA,
                        "the station's agent has not sent its samples to the fine-tune's end "
                        "yet: ask again in a second");
    if (!window->whole) {
        snprintf(f->meter, sizeof f->meter,
                 "the server's meter has no fine-tune window: the run's chain holds no "
                 "finetune_begin and finetune_end");
        return EEB_OK;
    }
    return eeb_srv_store_meter_window(k->s->store, k->run.meter_run, window->begin_utc_ns,
                                      window->end_utc_ns, f->meter, sizeof f->meter, err, errlen);
}

/* The judging of a run complete, k->run read again under the lock: the
 * facts gathered, the record judged with them, and both stored with the
 * verdict in one transaction; or the answer sent. */
static enum MHD_Result judge_run(struct eeb_srv_call *k, int charged)
{
    enum MHD_Result sent;
    const struct eeb_srv_testset *t;
    if (strcmp(k->run.state, "scored") == 0) /* by a request just before this one */
        return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
    if (!eeb_srv_in_state(k, "complete", NULL, &sent) || !(t = eeb_srv_run_set(k, &sent)))
        return sent;
    if (!k->run.links)
        return eeb_srv_call_fail(k, 409, "links",
                                 "the run sent no chain: the server judges a run from its chain "
                                 "of events and samples (POST /api/v1/runs/{id}/links)");
    /* the quota bounds what official runs' scores can tell of the secret
     * labels; a rehearsal's labels are public */
    if (!store_counters(k, &sent) ||
        (charged && !eeb_srv_take_quota(k, EEB_QUOTA_SCORED, 1, &sent)))
        return sent;
    const char *path = eeb_srv_store_path(k->s->store);
    struct eeb_run_outcome o = {0};
    struct eeb_srv_window window = {0};
    struct eeb_run_facts facts;
    char err[512];
    /* what the server saw, judged with and then kept in the run's record
     * with the verdict (never without it: no record holds an M_s no
     * verdict was given on), so that `eeb check` of this copy and of the
     * team's applies the server's rules from the record alone */
    int rc = gather(k, &facts, &window, err, sizeof err);
    if (rc == EEB_OK)
        rc = count_labels(k, t, &facts, err, sizeof err);
    if (rc == EEB_OK)
        rc = place_window(k, &window, &facts, err, sizeof err);
    char *facts_json = rc ? NULL : eeb_run_facts_json(&facts);
    if (rc == EEB_OK && !facts_json)
        rc = eeb_errf(err, sizeof err, EEB_ENOMEM, "out of memory");
    if (rc == EEB_OK)
        rc = eeb_run_judge_with(path, k->id, NAN, &facts, &o, err, sizeof err);
    if (rc) {
        free(facts_json);
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, rc == EEB_ENODATA ? 503 : 500, NULL, err);
    }
    o.complete = 1;
    o.device_time_s = o.device_energy_j = NAN; /* the server models no device */
    struct eeb_srv_run *r = &k->run;
    snprintf(r->verdict, sizeof r->verdict, "%s", eeb_run_verdict(&o, 0));
    snprintf(r->why, sizeof r->why, "%s", o.why);
    r->s = o.pass ? o.score.s : NAN;
    r->m_u = o.score.m_u, r->m_t = o.score.m_t, r->m_p = o.score.m_p, r->m_s = o.score.m_s;
    r->t_s = o.t_s, r->energy_j = o.energy_j, r->s_uncertainty = o.s_uncertainty;
    /* the verdict in the run's record, as `eeb run` stores one; the
     * utilization was declared at registration, or modeled by the server */
    char *score = score_json(&o);
    int moved =
        eeb_srv_store_run_scored(k->s->store, r, &o, r->schedule_steps ? "modeled" : "declared",
                                 facts_json, score, err, sizeof err);
    free(score), free(facts_json);
    if (moved <= 0)
        eeb_srv_give_back(k, EEB_QUOTA_SCORED, charged);
    if (moved < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (!moved) /* ended by the server meanwhile: its end stands */
        return eeb_srv_call_fail(k, 409, "state", "the run was ended meanwhile");
    snprintf(r->state, sizeof r->state, "scored");
    atomic_fetch_add(&k->s->changes, 1); /* the leaderboard's answers are stale */
    if (eeb_srv_store_run_get(k->s->store, k->id, r, err, sizeof err) < 0) /* its heads now */
        return eeb_srv_call_fail(k, 500, NULL, err);
    char said[48] = ", no S";
    if (!isnan(r->s))
        snprintf(said, sizeof said, ", S = %.6g", r->s);
    eeb_srv_log(k->s, "run %lld scored: %s%s%s%s", (long long)r->id, r->verdict, said,
                r->why[0] ? ": " : "", r->why);
    return eeb_srv_call_json(k, 200, eeb_srv_run_json(r));
}

/* POST /api/v1/runs/{id}/score [counters]: judges the run from what it
 * sent and the labels the server holds.  Asked again, it answers the same
 * verdict.  An official run that did not fine-tune as the server saw is
 * judged without its labels: invalid, with no M_s, so that no score is an
 * oracle for them.  One run is judged at a time: two asks at once would
 * count the labels twice for one score taken from the quota. */
enum MHD_Result eeb_srv_api_score(struct eeb_srv_call *k)
{
    if (strcmp(k->run.state, "scored") == 0)
        return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
    char err[512];
    pthread_mutex_lock(&k->s->score_lock);
    int found = eeb_srv_store_run_get(k->s->store, k->id, &k->run, err, sizeof err);
    if (found == 0)
        snprintf(err, sizeof err, "run %lld is no longer in the server's database",
                 (long long)k->id);
    enum MHD_Result sent =
        found > 0 ? judge_run(k, k->run.official) : eeb_srv_call_fail(k, 500, NULL, err);
    pthread_mutex_unlock(&k->s->score_lock);
    return sent;
}
