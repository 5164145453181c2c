/*
 * runs.c - a run's stages on the server that need no file of their own,
 * and what the others share: the run as JSON, the set it is judged on,
 * the state a route needs, the team's quotas; then begin, complete (the
 * end of fine-tuning) and the test inputs without labels, and predictions
 * by test item id.  Registering is register.c, the chain's links links.c,
 * the score score.c.
 */
#include "server_int.h"

#include "rundb/eeb_config_record.h"
#include "sut/eeb_sut_host.h"
#include "tasks/eeb_prediction.h"
#include "tasks/eeb_tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The test set a run is judged on: an official run's is the secret one,
 * any other's the practice set (NULL: the server holds none). */
const struct eeb_srv_testset *eeb_srv_judged_on(const struct eeb_server *s, int task, int official)
{
    return official ? s->test[task] : s->practice[task];
}

/* ---- the run as JSON ---- */

json_t *eeb_srv_run_json(const struct eeb_srv_run *r)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:f, s:f, s:s, s:b, s:s, s:s, s:s}", "run_id", (json_int_t)r->id,
        "team", r->team_name, "task", eeb_task_name((enum eeb_task)r->task), "state", r->state,
        "t_max_s", r->t_max_s, "p_max_w", r->p_max_w, "rules_version", r->rules_version, "official",
        r->official, "device", r->device, "provenance", r->provenance, "backend", r->backend);
    if (o) /* the link of its chain it expects next */
        json_object_set_new(o, "links", json_integer((json_int_t)r->links));
    if (o) /* its system under test, as it names itself, once said */
        json_object_set_new(o, "system",
                            r->system_name[0]
                                ? json_pack("{s:s, s:s*}", "name", r->system_name, "version",
                                            r->system_version[0] ? r->system_version : NULL)
                                : json_null());
    if (o && strcmp(r->state, "scored") == 0) {
        json_object_set_new(o, "verdict", json_string(r->verdict));
        json_object_set_new(o, "S", eeb_json_number(r->s));
        json_object_set_new(o, "S_uncertainty", eeb_json_number(r->s_uncertainty));
        json_object_set_new(o, "m_u", eeb_json_number(r->m_u));
        json_object_set_new(o, "m_t", eeb_json_number(r->m_t));
        json_object_set_new(o, "m_p", eeb_json_number(r->m_p));
        json_object_set_new(o, "m_s", eeb_json_number(r->m_s));
        json_object_set_new(o, "t_s", eeb_json_number(r->t_s));
        json_object_set_new(o, "energy_j", eeb_json_number(r->energy_j));
        json_object_set_new(o, "why", json_string(r->why));
        json_object_set_new(o, "chain_head", json_string(r->chain_head));
        if (r->meter_chain_head[0])
            json_object_set_new(o, "meter_chain_head", json_string(r->meter_chain_head));
    }
    return o;
}

enum MHD_Result eeb_srv_api_run(struct eeb_srv_call *k)
{
    return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
}

/* n of the team's quota q taken for today: 1, or 0 with the 429 (or the
 * 500) sent. */
int eeb_srv_take_quota(struct eeb_srv_call *k, enum eeb_server_quota q, int64_t n,
                       enum MHD_Result *sent)
{
    int64_t used, limit = k->s->cfg.quota[q];
    char err[256], field[32], msg[320];
    k->quota_day = eeb_utc_ns() / (86400 * (int64_t)1000000000); /* UTC days */
    int rc = eeb_srv_store_quota_take(k->s->store, k->team, k->quota_day, q, n, limit, &used, err,
                                      sizeof err);
    if (rc < 0)
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
    if (rc != 0)
        return rc > 0;
    snprintf(field, sizeof field, "quota.%s", eeb_server_quota_name(q));
    snprintf(msg, sizeof msg,
             "team %s has used %lld of its %lld %s today (UTC)%s; the organizer sets this quota "
             "(eeb serve --quota %s=N)",
             k->team_name, (long long)used, (long long)limit, eeb_server_quota_name(q),
             n > 1 ? ", and this asks for more" : "", eeb_server_quota_name(q));
    *sent = eeb_srv_call_fail(k, 429, field, msg);
    return 0;
}

/* What was taken of a quota given back: the act it was for did not
 * happen. */
void eeb_srv_give_back(struct eeb_srv_call *k, enum eeb_server_quota q, int64_t n)
{
    int64_t used;
    char err[256];
    if (n) /* to the day it was taken from, past midnight too */
        (void)eeb_srv_store_quota_take(k->s->store, k->team, k->quota_day, q, -n, -1, &used, err,
                                       sizeof err);
}

/* ---- the power log ---- */

/* The state a route needs the run in, or the 409 sent. */
int eeb_srv_in_state(struct eeb_srv_call *k, const char *a, const char *b, enum MHD_Result *sent)
{
    if (strcmp(k->run.state, a) == 0 || (b && strcmp(k->run.state, b) == 0))
        return 1;
    char msg[160];
    snprintf(msg, sizeof msg, "run %lld is %s; this needs it %s%s%s", (long long)k->id,
             k->run.state, a, b ? " or " : "", b ? b : "");
    *sent = eeb_srv_call_fail(k, 409, "state", msg);
    return 0;
}

/* ---- begin, complete, and the test inputs ---- */

/* The body of begin, if any: {"system": {"name", "version"}}, what the
 * run's SUT said it is once open (an official run registers before it
 * opens its SUT), kept in its configuration unless it said so before.  1
 * if it may go on, 0 with the answer sent. */
static int begin_system(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    if (!k->q->len)
        return 1;
    json_t *body = eeb_srv_call_body(k, sent);
    if (!body)
        return 0;
    struct eeb_srv_fault f = {"", ""};
    const char *name = NULL, *version = NULL;
    int ok = 0;
    if (json_object_size(body) != 1 || !json_object_get(body, "system"))
        eeb_srv_bad(&f, json_object_size(body) ? "body" : "system",
                    "expected nothing, or {\"system\": {\"name\", \"version\"}}");
    else if (!eeb_srv_system_field(json_object_get(body, "system"), &name, &version, &f))
        ok = 1;
    if (!ok) {
        *sent = eeb_srv_fail_fault(k, &f);
        json_decref(body);
        return 0;
    }
    json_t *o = json_object();
    char err[512], *sut = NULL;
    if (o) {
        eeb_config_put_sut(o, name, version,
                           eeb_sut_kind_name(eeb_sut_kind_recorded(k->run.backend)), NULL, NULL);
        sut = json_dumps(json_object_get(o, "sut"), JSON_PRESERVE_ORDER);
    }
    json_decref(o);
    json_decref(body);
    if (!sut) {
        *sent = eeb_srv_call_fail(k, 500, NULL, "out of memory");
        return 0;
    }
    int rc = eeb_srv_store_run_system(k->s->store, k->id, sut, err, sizeof err);
    free(sut);
    if (rc < 0) {
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
        return 0;
    }
    if (rc > 0) /* on the board's rows */
        atomic_fetch_add(&k->s->changes, 1);
    return 1;
}

/* POST /api/v1/runs/{id}/begin: the run is about to write its fine-tune's
 * begin; the server keeps when it said so, the first time, on its clock,
 * and what its system under test is, if it says. */
enum MHD_Result eeb_srv_api_begin(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    char err[512];
    if (!eeb_srv_in_state(k, "registered", NULL, &sent) || !begin_system(k, &sent))
        return sent;
    if (eeb_srv_store_run_begin(k->s->store, k->id, err, sizeof err) < 0 ||
        eeb_srv_store_run_get(k->s->store, k->id, &k->run, err, sizeof err) < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    eeb_srv_meter_heard(k->s, k->id, 1);
    return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
}

/* POST /api/v1/runs/{id}/complete: fine-tuning is over; the test inputs
 * may be fetched.  Saying it again is harmless; of a scored run, a
 * conflict. */
enum MHD_Result eeb_srv_api_complete(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    char err[512];
    if (!eeb_srv_in_state(k, "registered", "complete", &sent))
        return sent;
    if (strcmp(k->run.state, "registered") == 0) {
        /* an official run's fine-tune is judged from what arrived while it
         * ran: the whole of it, before it is said to be over */
        int moved =
            eeb_srv_store_run_complete(k->s->store, k->id, k->run.official, err, sizeof err);
        /* not moved: said by a request racing this one, or too early */
        if (moved == 0 && eeb_srv_store_run_get(k->s->store, k->id, &k->run, err, sizeof err) < 0)
            moved = -1;
        if (moved < 0)
            return eeb_srv_call_fail(k, 500, NULL, err);
        if (moved) {
            atomic_fetch_add(&k->s->changes, 1); /* no longer fine-tuning, on the leaderboard */
            eeb_srv_log(k->s, "run %lld complete", (long long)k->id);
        }
        if (!moved && strcmp(k->run.state, "registered") == 0)
            return eeb_srv_call_fail(k, 409, "links",
                                     "an official run's chain must hold its fine-tune's end "
                                     "(the finetune_end event) before it is complete");
        if (moved) { /* and the server's meter stopped, if it reads one for the run */
            snprintf(k->run.state, sizeof k->run.state, "complete");
            eeb_srv_meter_stop(k->s, k->id);
        }
    }
    return eeb_srv_call_json(k, 200, eeb_srv_run_json(&k->run));
}

/* The set run k->run is judged on, or the 409 sent: a server started
 * again without it cannot judge the runs it had. */
const struct eeb_srv_testset *eeb_srv_run_set(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    const struct eeb_srv_testset *t = eeb_srv_judged_on(k->s, k->run.task, k->run.official);
    char msg[256];
    if (t)
        return t;
    snprintf(msg, sizeof msg,
             "this server no longer holds the %s %s set run %lld is judged on (eeb serve %s)",
             eeb_task_name((enum eeb_task)k->run.task), k->run.official ? "test" : "practice",
             (long long)k->id, k->run.official ? "--test" : "--practice");
    *sent = eeb_srv_call_fail(k, 409, "task", msg);
    return NULL;
}

/* GET /api/v1/runs/{id}/test: the run's test inputs, labels stripped,
 * once fine-tuning is complete: an official run's only after a fine-tune
 * the server saw (its stream, its steps), so that no run has the inputs
 * without having trained first.  Its predictions are due from the first
 * time it is served them; until then it may fetch them again (a download
 * cut off), the same bytes, which tell it nothing new. */
enum MHD_Result eeb_srv_api_test(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    struct eeb_srv_window window;
    char err[512], why[512], msg[768];
    const struct eeb_srv_testset *t;
    if (!eeb_srv_in_state(k, "complete", NULL, &sent) || !(t = eeb_srv_run_set(k, &sent)))
        return sent;
    if (k->run.official &&
        eeb_srv_fine_tuned(k->s, &k->run, &window, why, sizeof why, err, sizeof err))
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (k->run.official && why[0]) {
        snprintf(msg, sizeof msg,
                 "run %lld's test inputs follow a fine-tune the server saw, and its record "
                 "shows none: %s",
                 (long long)k->id, why);
        return eeb_srv_call_fail(k, 409, "links", msg);
    }
    double since_s = (double)(eeb_utc_ns() - k->run.test_served_utc_ns) / 1e9;
    if (k->run.test_served_utc_ns && since_s > k->s->cfg.predict_within_s) {
        snprintf(msg, sizeof msg,
                 "run %lld was served its test inputs %.1f s ago, and its predictions were due "
                 "within %g s: they are served no more",
                 (long long)k->id, since_s, k->s->cfg.predict_within_s);
        return eeb_srv_call_fail(k, 409, "test", msg);
    }
    int first = eeb_srv_store_run_test_served(k->s->store, k->id, err, sizeof err);
    if (first < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (first)
        eeb_srv_log(k->s, "run %lld: %zu test inputs served; its predictions are due within %g s",
                    (long long)k->id, t->n, k->s->cfg.predict_within_s);
    return eeb_srv_call_file(k, "application/octet-stream", t->inputs);
}

/* ---- predictions ---- */

/* A classifier's ranked classes into the record (its truth stays in the
 * server's memory). */
static int ranked_classes(json_t *p, size_t i, const struct eeb_srv_testset *t,
                          struct eeb_prediction *rec, struct eeb_srv_fault *f)
{
    char field[96];
    json_t *top = json_object_get(p, EEB_PREDICTION_KEY_TOP), *x;
    size_t j;
    snprintf(field, sizeof field, "predictions[%zu]." EEB_PREDICTION_KEY_TOP, i);
    if (!json_is_array(top) || json_array_size(top) < 1 || json_array_size(top) > EEB_TOPK_MAX)
        return eeb_srv_bad(f, field, "expected 1 to %d classes, best first", EEB_TOPK_MAX);
    json_array_foreach(top, j, x)
    {
        int64_t cls;
        snprintf(field, sizeof field, "predictions[%zu]." EEB_PREDICTION_KEY_TOP "[%zu]", i, j);
        if (eeb_srv_int_field(x, field, 0, t->classes - 1, &cls, f))
            return -1;
        rec->ranked[rec->nranked++] = (int)cls;
    }
    return 0;
}

/* A detector's boxes into the record (the true ones stay in the server's
 * memory). */
static int detected_boxes(json_t *p, size_t i, const struct eeb_srv_testset *t,
                          struct eeb_prediction *rec, struct eeb_srv_fault *f)
{
    char field[96];
    json_t *boxes = json_object_get(p, EEB_PREDICTION_KEY_BOXES), *x;
    size_t j;
    snprintf(field, sizeof field, "predictions[%zu]." EEB_PREDICTION_KEY_BOXES, i);
    if (!json_is_array(boxes) || json_array_size(boxes) > EEB_SHARD_MAX_BOXES)
        return eeb_srv_bad(f, field, "expected up to %d [class, score, x0, y0, x1, y1]",
                           EEB_SHARD_MAX_BOXES);
    rec->boxes = calloc(json_array_size(boxes) + 1, sizeof *rec->boxes);
    if (!rec->boxes)
        return eeb_srv_bad(f, field, "out of memory");
    json_array_foreach(boxes, j, x)
    {
        double v[6];
        snprintf(field, sizeof field, "predictions[%zu]." EEB_PREDICTION_KEY_BOXES "[%zu]", i, j);
        if (json_array_size(x) != 6)
            return eeb_srv_bad(f, field, "expected [class, score, x0, y0, x1, y1]");
        for (size_t c = 0; c < 6; c++) {
            snprintf(field, sizeof field, "predictions[%zu]." EEB_PREDICTION_KEY_BOXES "[%zu][%zu]",
                     i, j, c);
            double hi = c == 0 ? t->classes - 1 : c == 1 ? 1 : 1e5;
            if (eeb_srv_number_field(json_array_get(x, c), field, 0, hi, &v[c], f))
                return -1;
        }
        if (v[0] != floor(v[0]))
            return eeb_srv_bad(f, field, "the class is not an integer");
        rec->boxes[rec->nboxes++] =
            (struct eeb_prediction_box){(int)v[0], v[1], v[2], v[3], v[4], v[5]};
    }
    return 0;
}

/* One prediction, checked, as the payload `eeb run` stores, without the
 * truth: the labels are in no record (the server counts M_s in memory). */
static int prediction_payload(json_t *p, size_t i, const struct eeb_srv_testset *t,
                              const struct eeb_srv_held_item **item, char **text,
                              struct eeb_srv_fault *f)
{
    char field[96];
    snprintf(field, sizeof field, "predictions[%zu]", i);
    if (!json_is_object(p))
        return eeb_srv_bad(f, field, "expected an object");
    snprintf(field, sizeof field, "predictions[%zu].id", i);
    const char *id = json_string_value(json_object_get(p, EEB_PREDICTION_KEY_ID));
    if (!id)
        return eeb_srv_bad(f, field, "expected a string");
    if (!(*item = eeb_srv_testset_find(t, id)))
        return eeb_srv_bad(f, field, "no test item has this id");
    struct eeb_prediction rec = {.kind = eeb_task_get(t->task)->prediction, .id = id};
    int rc = rec.kind == EEB_PREDICTION_BOXES ? detected_boxes(p, i, t, &rec, f)
                                              : ranked_classes(p, i, t, &rec, f);
    if (rc == 0 && !(*text = eeb_prediction_write(&rec)))
        rc = eeb_srv_bad(f, field, "out of memory");
    eeb_prediction_free(&rec);
    return rc;
}

/* POST /api/v1/runs/{id}/predictions {"predictions": [{"id": .., "top":
 * [..]} or {"id": .., "boxes": [[class, score, x0, y0, x1, y1], ..]}]}:
 * in as many posts as needed; an item sent again is replaced. */
enum MHD_Result eeb_srv_api_predictions(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    const struct eeb_srv_testset *t;
    if (!eeb_srv_in_state(k, "complete", NULL, &sent) || !(t = eeb_srv_run_set(k, &sent)))
        return sent;
    if (k->run.official && !k->run.test_served_utc_ns)
        return eeb_srv_call_fail(k, 409, "test",
                                 "an official run's predictions follow its test inputs (GET "
                                 "/api/v1/runs/{id}/test), which it was not served");
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    json_t *list = json_object_get(body, "predictions");
    size_t n = json_array_size(list);
    int64_t *items = calloc(n + 1, sizeof *items);
    char **payloads = calloc(n + 1, sizeof *payloads), err[512];
    struct eeb_srv_fault f = {.field = ""};
    if (!json_is_array(list)) {
        sent = eeb_srv_call_fail(k, 400, "predictions", "expected an array");
    } else if (!items || !payloads) {
        sent = eeb_srv_call_fail(k, 500, NULL, "out of memory");
    } else {
        size_t i;
        json_t *p;
        json_array_foreach(list, i, p)
        {
            const struct eeb_srv_held_item *item = NULL;
            if (prediction_payload(p, i, t, &item, &payloads[i], &f))
                break;
            items[i] = (int64_t)item->index;
        }
        if (f.field[0])
            sent = eeb_srv_fail_fault(k, &f);
        else if (eeb_srv_store_run_predictions(k->s->store, k->id, items,
                                               (const char *const *)payloads, n, err, sizeof err))
            sent = eeb_srv_call_fail(k, 500, NULL, err);
        else
            sent = eeb_srv_call_json(k, 200, json_pack("{s:I}", "stored", (json_int_t)n));
    }
    for (size_t i = 0; payloads && i < n; i++)
        free(payloads[i]);
    free(payloads), free(items);
    json_decref(body);
    return sent;
}
