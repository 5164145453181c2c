/*
 * run_official.c - the evaluation server as the run's evaluator (eeb run
 * --server): it registers the run and holds it to its budgets and rules,
 * sends the test inputs without labels once fine-tuning is complete, and
 * judges the record sent to it with the labels it alone holds.
 */
#include "run_int.h"

#include "eeb_client.h"
#include "rundb/eeb_config_record.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A number of the server's answer at a/b (b NULL: at a), if positive. */
static double positive_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    v = b ? json_object_get(v, b) : v;
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : NAN;
}

/* An official run takes the seed the server hands it (the answer's seed;
 * a server before it handed every run one: round.seed, in a round) for
 * its shuffling, its stochastic rounding and the training audit's slice:
 * the run's own from here, before its record is created, so that the
 * record says the seed it used.  Without one, the run keeps its own
 * (--seed). */
static int take_seed(struct run *r, json_t *reply, char *err, size_t errlen)
{
    json_t *seed = json_object_get(reply, "seed");
    const char *field = "seed";
    if (!seed)
        seed = json_object_get(json_object_get(reply, "round"), "seed"), field = "round.seed";
    if (!seed)
        return EEB_OK;
    json_int_t v = json_integer_value(seed);
    if (!json_is_integer(seed) || v < 1 || v > 1000000000000000000LL) /* as --seed takes */
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: the registration's answer has a %s that is not a whole number from "
                        "1 to 1e18",
                        r->c->server, field);
    r->cfg.seed = (double)v;
    return EEB_OK;
}

/* What the server holds a registered run to: its budgets and rules, and
 * in a round its seed. */
static int take_terms(struct run *r, json_t *reply, char *err, size_t errlen)
{
    struct eeb_weights *w = &r->rules.weights[r->c->task];
    const char *version =
        json_string_value(json_object_get(json_object_get(reply, "rules"), "version"));
    const struct {
        const char *a, *b;
        double *to;
    } terms[] = {{"t_max_s", NULL, &r->cfg.t_max_s},
                 {"p_max_w", NULL, &r->cfg.p_max_w},
                 {"rules", "power_window_s", &r->rules.power.window_s},
                 {"rules", "min_rate_hz", &r->rules.power.min_rate_hz}};
    for (size_t i = 0; i < sizeof terms / sizeof *terms; i++)
        if (isnan(*terms[i].to = positive_at(reply, terms[i].a, terms[i].b)))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: the registration's answer has no positive %s%s%s", r->c->server,
                            terms[i].a, terms[i].b ? "." : "", terms[i].b ? terms[i].b : "");
    json_t *weights = json_object_get(json_object_get(reply, "rules"), "weights");
    double *wv[] = {&w->u, &w->t, &w->p, &w->s};
    static const char *const wn[] = {"u", "t", "p", "s"};
    for (int i = 0; i < 4; i++) {
        json_t *v = json_object_get(weights, wn[i]);
        if (!json_is_number(v))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s: the registration's answer has no rules.weights.%s", r->c->server,
                            wn[i]);
        *wv[i] = json_number_value(v);
    }
    json_int_t id = json_integer_value(json_object_get(reply, "run_id"));
    json_int_t items = json_integer_value(json_object_get(reply, "test_items"));
    if (!version || id <= 0 || items <= 0)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s: the registration's answer lacks run_id, test_items or rules.version",
                        r->c->server);
    int rc = take_seed(r, reply, err, errlen);
    if (rc)
        return rc;
    snprintf(r->rules.version, sizeof r->rules.version, "%s", version);
    r->out->server_run = id;
    r->test_items = (uint64_t)items;
    return EEB_OK;
}

/* Official mode, after INIT: the run registered with the server, which
 * refuses it unless it trains on the fine-tune set the server names, and
 * answers the budgets and rules it is held to. */
static int enroll(struct run *r, char *err, size_t errlen)
{
    struct eeb_client *cl = r->hooks->server;
    char *config = run_config_json(r);
    json_t *declared = config ? eeb_client_declaration(config, 1) : NULL, *reply = NULL;
    free(config);
    /* what it will fine-tune on, which the server's test set must match */
    const struct eeb_shard_info *in = eeb_shard_info(r->shard);
    if (declared)
        json_object_set_new(declared, "finetune_shape",
                            json_pack("{s:i, s:i, s:i, s:i, s:i}", "frames", in->frames, "w", in->w,
                                      "h", in->h, "c", in->c, "classes", in->classes));
    int rc = declared ? eeb_client_call(cl, "POST", "/api/v1/runs", declared, &reply, err, errlen)
                      : eeb_errf(err, errlen, EEB_ENOMEM, "the registration: out of memory");
    if (rc == EEB_OK)
        rc = take_terms(r, reply, err, errlen);
    char round[256];
    if (rc == EEB_OK && cl->log)
        fprintf(cl->log,
                "eeb: official run %lld on %s: T_max %g s, P_max %g W, rules %s, %llu test items\n",
                (long long)r->out->server_run, cl->url, r->c->t_max_s, r->c->p_max_w,
                r->rules.version, (unsigned long long)r->test_items);
    if (rc == EEB_OK && cl->log && eeb_client_round_line(reply, round, sizeof round))
        fprintf(cl->log, "eeb: %s, seed %.0f\n", round, r->c->seed);
    json_decref(declared);
    json_decref(reply);
    return rc;
}

/* The stream stopped where the run ended without a test stage (aborted,
 * or an error); what it did not send, the submission sends. */
static void stop_stream(struct run *r)
{
    char ignored[512];
    (void)run_stream_stop(r, ignored, sizeof ignored);
}

/* Official mode, FINETUNE: the server told fine-tuning begins, on its
 * clock, before the run writes so on its own: the server can then place
 * the run's clock on its own to within the round trip. */
static int begin(struct run *r, char *err, size_t errlen)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld/begin", (long long)r->out->server_run);
    /* the system under test as it named itself when opened (after the
     * registration, which took the seed it was opened with) */
    json_t *body =
        r->identity.name[0]
            ? json_pack("{s:o}", "system", eeb_client_system(r->identity.name, r->identity.version))
            : NULL;
    int rc = eeb_client_call(r->hooks->server, "POST", path, body, NULL, err, errlen);
    json_decref(body);
    return rc;
}

/* Official mode, at STOPPED: the fine-tune's chain sent whole, the server
 * told fine-tuning is complete, and its test inputs (no labels) downloaded
 * beside the database. */
static int fetch_test_inputs(struct run *r, const char **inputs, char *err, size_t errlen)
{
    struct eeb_client *cl = r->hooks->server;
    char path[96];
    int rc = run_stream_stop(r, err, errlen);
    if (rc)
        return rc;
    snprintf(path, sizeof path, "/api/v1/runs/%lld/complete", (long long)r->out->server_run);
    if ((rc = eeb_client_call(cl, "POST", path, NULL, NULL, err, errlen)))
        return rc;
    snprintf(r->test_inputs, sizeof r->test_inputs, "%.4150s.test-XXXXXX", r->c->db);
    int fd = mkstemp(r->test_inputs);
    if (fd < 0) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", r->test_inputs, strerror(errno));
        r->test_inputs[0] = '\0';
        return rc;
    }
    close(fd);
    uint64_t registered = r->test_items;
    snprintf(path, sizeof path, "/api/v1/runs/%lld/test", (long long)r->out->server_run);
    if ((rc = eeb_client_download(cl, path, r->test_inputs, err, errlen)) ||
        (rc = run_hash_test(r, r->test_inputs, err, errlen)))
        return rc;
    if (r->test_items != registered)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s sent %llu test inputs; it registered the run with %llu", r->c->server,
                        (unsigned long long)r->test_items, (unsigned long long)registered);
    run_event(r, EEB_EVENT_TEST_INPUTS,
              json_pack("{s:s, s:s, s:I}", "from", r->c->server, "sha256", r->sha_test, "items",
                        (json_int_t)r->test_items));
    if (cl->log)
        fprintf(cl->log, "eeb: %llu test inputs from %s\n", (unsigned long long)r->test_items,
                r->c->server);
    *inputs = r->test_inputs;
    return EEB_OK;
}

/* The server's verdict made the run's; where the record judged here with
 * the server's M_s gives another, why says so. */
static int adopt(struct run *r, json_t *v, char *err, size_t errlen)
{
    struct eeb_run_outcome *o = r->out;
    const char *verdict = json_string_value(json_object_get(v, "verdict")) ?: "";
    const char *why = json_string_value(json_object_get(v, "why")) ?: "";
    json_t *sv = json_object_get(v, "S");
    double s = json_is_number(sv) ? json_number_value(sv) : NAN;
    int pass = strcmp(verdict, "pass") == 0, aborted = strcmp(verdict, "aborted") == 0;
    if (!pass && !aborted && strcmp(verdict, "fail") && strcmp(verdict, "invalid"))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s answered the verdict '%s'", r->c->server,
                        verdict);
    char here[160] = "";
    if (pass != o->pass || (pass && !(fabs(s - o->score.s) <= 1e-9 * fmax(1, fabs(s)))))
        snprintf(here, sizeof here, "%sthis record judged here gives %s (S %.9g)",
                 why[0] ? "; " : "", run_judged_as(o), o->score.s);
    o->pass = pass, o->aborted = aborted;
    o->valid = pass || aborted || strcmp(verdict, "fail") == 0;
    o->score.s = pass ? s : NAN;
    snprintf(o->why, sizeof o->why, "%s%s", why, here);
    return EEB_OK;
}

/* Official mode, SCORE: the record sent to the server, which judges it
 * with the labels it alone holds.  From here a failure leaves the record
 * as it is (no error event), so that a resubmission sends the same. */
static int submit(struct run *r, double m_s_here, char *err, size_t errlen)
{
    (void)m_s_here; /* the inputs held no labels: M_s is the server's */
    struct eeb_run_outcome *out = r->out;
    json_t *verdict = NULL;
    int rc = run_enter(r, EEB_RUN_SCORE, err, errlen);
    if (rc)
        return rc;
    stop_stream(r);
    r->submitting = 1;
    rc =
        eeb_client_send_run(r->hooks->server, out->server_run, r->db, r->id, &verdict, err, errlen);
    if (rc == EEB_EINVAL) /* refused (its token revoked, the run ended): no use sending again */
        return rc;
    if (rc) {
        char first[512];
        snprintf(first, sizeof first, "%s", err);
        return eeb_errf(err, errlen, rc,
                        "%s; the run's record is whole: send it again with `eeb submit %s --run "
                        "%lld --resume %lld --server %s`",
                        first, r->c->db, (long long)r->id, (long long)out->server_run,
                        r->c->server);
    }
    /* the server's record taken back, and the run judged as it: the
     * server's facts and meter; else (a server that keeps it) the run's
     * own record with the server's M_s */
    int64_t record = 0;
    char why_not[512];
    if (eeb_client_take_record(r->hooks->server, out->server_run, r->db, out->uuid, r->id, &record,
                               why_not, sizeof why_not))
        fprintf(stderr, "eeb: the server's record was not taken back: %s\n", why_not);
    json_t *m_s = json_object_get(verdict, "m_s");
    rc = run_judge_record(r, record, record || !json_is_number(m_s) ? NAN : json_number_value(m_s),
                          err, errlen);
    if (rc == EEB_OK)
        rc = adopt(r, verdict, err, errlen);
    if (rc == EEB_OK)
        run_score_event(r, 1);
    json_decref(verdict);
    return rc;
}

/* A run that failed after it registered (its system refused the model,
 * the machine failed) tells the server why, so that it ends there now. */
static void abandon(struct run *r, const char *why)
{
    char err[512];
    if (r->out->server_run &&
        eeb_client_abandon(r->hooks->server, r->out->server_run, why, NULL, err, sizeof err))
        fprintf(stderr, "eeb: the server was not told that run %lld stopped: %s\n",
                (long long)r->out->server_run, err);
}

/* The configuration says where the test came from: the server, and the
 * run's id there; and the round's entry the run asked to be a run of. */
static void describe(const struct run *r, json_t *config)
{
    eeb_config_put_official(config, r->c->server, r->out->server_run);
    eeb_config_put_entry(config, r->c->entry, r->c->division, r->c->tier_w);
    eeb_config_put_test_from(config, r->c->server, r->test_items);
}

const struct run_evaluator run_official_evaluator = {
    .enroll = enroll,
    .created = run_stream_start, /* the chain streamed to the server until STOPPED */
    .release = stop_stream,
    .abandon = abandon,
    .begin = begin,
    .describe = describe,
    .test_inputs = fetch_test_inputs,
    .judge = submit,
    .labelled = 0,
    .judges_aborted = 1,
};
