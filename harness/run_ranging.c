/*
 * run_ranging.c - the meter ranged on the team's own workload before the
 * measured window (MLPerf's ranging mode, then its testing mode): the
 * run's own meter, if it has ranges (ptd://), and in official mode the
 * server's meter of the run, read by the server or its station's agent
 * (POST /api/v1/runs/{id}/ranging), autorange while the SUT trains on the
 * fine-tune set for --ranging-s seconds; the ranges are then fixed to what
 * that load drew, and the fine-tune starts from the model as hashed on a
 * SUT deployed again, with the batches from the start: the pass gives the
 * team no training, only the meter its ranges.  ranging_begin and
 * ranging_end (with the ranges) are events of the deploy stage, before
 * the fine-tune's window.
 *
 * Sections: the server's meter; the training; the pass.
 */
#include "run_int.h"

#include "eeb_client.h"
#include "tasks/eeb_train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RANGING_DEFAULT_S 30.0          /* at most, by default: MLPerf ranges over a whole run */
#define SERVER_WAIT_NS    60000000000LL /* the server's meter fixing its ranges, at most */
#define SERVER_POLL_NS    250000000L

/* ---- the server's meter ---- */

/* One phase of the ranging of the server's meter of this run, asked until
 * it is done (202: an agent's meter, told with its next batch): 1 if the
 * meter was ranged (*ranges its reply, decref it), 0 if it has no ranges. */
static int server_phase(struct run *r, const char *phase, json_t **ranges, char *err, size_t errlen)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld/ranging", (long long)r->out->server_run);
    *ranges = NULL;
    for (int64_t t0 = eeb_mono_ns();;) {
        json_t *body = json_pack("{s:s}", "phase", phase), *reply = NULL;
        int rc = eeb_client_call(r->hooks->server, "POST", path, body, &reply, err, errlen);
        json_decref(body);
        if (rc != EEB_OK)
            return rc;
        const char *state = json_string_value(json_object_get(reply, "state"));
        if (state && strcmp(state, "none") == 0) {
            json_decref(reply);
            return 0;
        }
        if (state && strcmp(state, "done") == 0) {
            *ranges = reply;
            return 1;
        }
        json_decref(reply);
        if (eeb_mono_ns() - t0 > SERVER_WAIT_NS)
            return eeb_errf(err, errlen, EEB_ETIMEOUT,
                            "the server's meter did not %s its ranging pass within %lld s", phase,
                            SERVER_WAIT_NS / 1000000000LL);
        nanosleep(&(struct timespec){0, SERVER_POLL_NS}, NULL);
    }
}

/* ---- the training ---- */

static int sut_step(void *arg, const struct eeb_task_batch *b, struct eeb_trainer_step *out,
                    char *err, size_t errlen)
{
    struct eeb_sut_step st;
    int rc = eeb_sut_train(arg, b, &st, err, errlen);
    if (rc == EEB_OK)
        *out = (struct eeb_trainer_step){
            .has_loss = !isnan(st.loss), .loss = st.loss, .done = st.done != 0};
    return rc;
}

struct until {
    const struct run *r;
    int64_t t_ns;
};

static int over(void *arg)
{
    const struct until *u = arg;
    return eeb_mono_ns() >= u->t_ns || run_cancelled(u->r);
}

/* The SUT trains on the fine-tune set, epoch after epoch, until seconds
 * have passed (at a batch's end); the steps it took. */
static int train_for(struct run *r, double seconds, long *steps, char *err, size_t errlen)
{
    struct until u = {r, eeb_mono_ns() + (int64_t)(seconds * 1e9)};
    struct eeb_trainer t = {.bt = r->bt,
                            .train = sut_step,
                            .train_arg = r->sut,
                            .max_steps = -1,
                            .stop = over,
                            .arg = &u};
    int rc = EEB_OK;
    for (int epoch = 1; rc == EEB_OK && !over(&u) && !t.done; epoch++) {
        struct eeb_pass p;
        if ((rc = eeb_train_pass(&t, epoch, &p, err, errlen)) == EEB_OK && p.items == 0)
            break;
    }
    *steps = t.step;
    return rc;
}

/* ---- the pass ---- */

static json_t *ranges_json(const struct eeb_power_ranges *g, const char *uri)
{
    json_t *o = json_pack("{s:s, s:s, s:s}", "meter", uri, "volts", g->volts, "amps", g->amps);
    if (o && !isnan(g->max_volts))
        json_object_set_new(o, "max_volts", json_real(g->max_volts));
    if (o && !isnan(g->max_amps))
        json_object_set_new(o, "max_amps", json_real(g->max_amps));
    return o;
}

int run_ranging(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    double seconds = isnan(c->ranging_s) ? fmin(c->t_max_s, RANGING_DEFAULT_S) : c->ranging_s;
    int official = r->hooks && r->hooks->server && r->out->server_run > 0;
    if (!(seconds > 0) || (!eeb_power_source_ranges(r->src) && !official))
        return EEB_OK;
    struct eeb_power_ranges own;
    int local = eeb_power_source_ranges(r->src);
    int rc =
        local ? eeb_power_source_range(r->src, EEB_POWER_RANGE_BEGIN, &own, err, errlen) : EEB_OK;
    if (rc == EEB_ENOTSUP) /* a meter opened to leave its ranges alone */
        local = 0, rc = EEB_OK;
    if (rc)
        return rc;
    json_t *server = NULL;
    int remote = official ? server_phase(r, "begin", &server, err, errlen) : 0;
    if (remote < 0) {
        if (local)
            (void)eeb_power_source_range(r->src, EEB_POWER_RANGE_END, &own, NULL, 0);
        return remote;
    }
    if (!local && !remote)
        return EEB_OK;
    json_t *begin = json_pack("{s:f}", "seconds", seconds);
    if (begin && local) {
        json_object_set_new(begin, "meter", json_string(r->src->uri));
        json_object_set_new(begin, "identity", json_string(own.identity));
    }
    if (begin && remote)
        json_object_set_new(begin, "server", server);
    else
        json_decref(server);
    run_event(r, EEB_EVENT_RANGING_BEGIN, begin);

    long steps = 0;
    rc = train_for(r, seconds, &steps, err, errlen);
    /* the meters fixed whatever the training did: a testing pass never
     * starts on ranges left autoranging */
    char err2[512];
    int lrc = local ? eeb_power_source_range(r->src, EEB_POWER_RANGE_END, &own, err2, sizeof err2)
                    : EEB_OK;
    json_t *end = json_pack("{s:I}", "steps", (json_int_t)steps);
    if (end && local && lrc == EEB_OK)
        json_object_set_new(end, "own", ranges_json(&own, r->src->uri));
    int rrc =
        remote ? server_phase(r, "end", &server, rc ? err2 : err, rc ? sizeof err2 : errlen) : 0;
    if (end && rrc > 0)
        json_object_set_new(end, "server", server);
    else
        json_decref(server);
    run_event(r, EEB_EVENT_RANGING_END, end);
    if (rc == EEB_OK && lrc != EEB_OK)
        rc = eeb_errf(err, errlen, lrc, "%s", err2);
    if (rc == EEB_OK && rrc < 0)
        rc = rrc;
    if (rc != EEB_OK)
        return rc;
    return run_redeploy(r, "after the ranging pass", err, errlen);
}
