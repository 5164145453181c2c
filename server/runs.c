/*
 * runs.c - a run's stages on the server, each a route on the team's own
 * run: register (the budgets and rules it is held to), its chain of events
 * and samples link by link (a link sent again changes nothing), complete (the end
 * of fine-tuning), the test inputs without labels, predictions by test
 * item id, and score (with the sampler's counters): the server recounts M_s
 * against the labels it alone holds and judges the run as `eeb check`
 * would, from the record it received.
 */
#include "server_int.h"

#include "tasks/eeb_metrics.h"
#include "tasks/eeb_prediction.h"
#include "fpga/accel/eeb_accel.h"
#include "fpga/net/eeb_net.h"
#include "fpga/model/eeb_perf.h"
#include "power/eeb_power.h"
#include "record/eeb_record.h"
#include "rundb/eeb_config_record.h"
#include "tasks/eeb_tasks.h"
#include "sut/eeb_sut_host.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading a body ---- */

/* An optional string of 1..max characters of [A-Za-z0-9_.:=,/+-]; *out
 * keeps dflt when absent. */
static int text_field(json_t *o, const char *key, size_t max, const char **out,
                      struct eeb_srv_fault *f)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    const char *s = json_string_value(v);
    if (!s || !eeb_text_ok(s, max, EEB_DECLARED_PUNCT))
        return eeb_srv_bad(
            f, key, "expected 1 to %zu letters, digits and characters of " EEB_DECLARED_PUNCT, max);
    *out = s;
    return 0;
}

/* The backend as the server takes it, in its one form: eeb's own by name
 * (emu, kernel, fp32, xrt, or the faulty wrapper around one of them,
 * faulty:emu), a team's SUT by its kind (library, exec).  Another spelling
 * (EMU) is refused: it would name no CPU backend, and pass for a board. */
static int canonical_backend(const char *name)
{
    static const char *const names[] = {
        "emu", "kernel", "fp32", "xrt", EEB_SUT_DECLARED_LIBRARY, EEB_SUT_DECLARED_EXEC};
    const char *inner = strncmp(name, "faulty:", 7) == 0 ? name + 7 : name;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(inner, names[i]) == 0)
            return 1;
    return 0;
}

/* The test set a run is judged on: an official run's is the secret one,
 * any other's the practice set (NULL: the server holds none). */
static const struct eeb_srv_testset *judged_on(const struct eeb_server *s, int task, int official)
{
    return official ? s->test[task] : s->practice[task];
}

/* ---- the run as JSON ---- */

static json_t *run_json(const struct eeb_srv_run *r)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:f, s:f, s:s, s:b, s:s, s:s, s:s}", "run_id", (json_int_t)r->id,
        "team", r->team_name, "task", eeb_task_name((enum eeb_task)r->task), "state", r->state,
        "t_max_s", r->t_max_s, "p_max_w", r->p_max_w, "rules_version", r->rules_version, "official",
        r->official, "device", r->device, "provenance", r->provenance, "backend", r->backend);
    if (o) /* the link of its chain it expects next */
        json_object_set_new(o, "links", json_integer((json_int_t)r->links));
    if (o && strcmp(r->state, "scored") == 0) {
        json_object_set_new(o, "verdict", json_string(r->verdict));
        json_object_set_new(o, "S", eeb_json_number(r->s));
        json_object_set_new(o, "m_u", eeb_json_number(r->m_u));
        json_object_set_new(o, "m_t", eeb_json_number(r->m_t));
        json_object_set_new(o, "m_p", eeb_json_number(r->m_p));
        json_object_set_new(o, "m_s", eeb_json_number(r->m_s));
        json_object_set_new(o, "t_s", eeb_json_number(r->t_s));
        json_object_set_new(o, "energy_j", eeb_json_number(r->energy_j));
        json_object_set_new(o, "why", json_string(r->why));
    }
    return o;
}

enum MHD_Result eeb_srv_api_run(struct eeb_srv_call *k)
{
    return eeb_srv_call_json(k, 200, run_json(&k->run));
}

/* ---- register ---- */

/* What a team declares of its run when it registers it. */
struct declared {
    enum eeb_task task;
    double util[EEB_UTIL_COUNT];
    const char *provenance, *device, *backend, *design;
    const char *finetune; /* the fine-tune set's SHA-256, or NULL */
    const char *model;    /* the base model's SHA-256, or NULL */
    double rate_hz;
    int official;
    int modeled_clock;      /* T is steps x step_s, E that at train_w */
    double step_s, train_w; /* the modeled device's, declared */
    int64_t batch, frozen;  /* what its device was modeled for */
    int64_t epochs;         /* its schedule: epochs of the fine-tune set, */
    int64_t max_steps;      /*   cut at this many steps (-1: none) */
    int64_t schedule_steps; /* the steps the server counts it is to take (0: not counted) */
    /* in a round: the entry it is a run of, its division and P_max tier */
    const char *entry, *division;
    double p_max_w; /* NAN: the round's lowest tier */
};

/* "clock": {"kind": "modeled", "train_step_s", "train_w", "batch",
 * "frozen"} (a run timed by its modeled device, whose figures are modeled,
 * and what they were modeled for) or {"kind": "wall"}. */
static int read_clock(const json_t *clock, struct declared *d, struct eeb_srv_fault *f)
{
    if (!clock)
        return 0;
    const char *kind = json_string_value(json_object_get(clock, "kind"));
    if (!json_is_object(clock) || !kind ||
        (strcmp(kind, EEB_CLOCK_MODELED) && strcmp(kind, EEB_CLOCK_WALL)))
        return eeb_srv_bad(f, "clock",
                           "expected {\"kind\": \"wall\"} or {\"kind\": \"modeled\", "
                           "\"train_step_s\": S, \"train_w\": W}");
    d->modeled_clock = strcmp(kind, EEB_CLOCK_MODELED) == 0;
    if (!d->modeled_clock)
        return 0;
    if (strcmp(d->provenance, "modeled"))
        return eeb_srv_bad(f, "clock", "a run on the modeled clock has modeled figures, not %s",
                           d->provenance);
    json_t *steps = json_object_get(clock, "steps");
    d->max_steps = -1;
    return eeb_srv_number_field(json_object_get(clock, "train_step_s"), "clock.train_step_s", 1e-12,
                                1e6, &d->step_s, f) ||
                   eeb_srv_number_field(json_object_get(clock, "train_w"), "clock.train_w", 0, 1e6,
                                        &d->train_w, f) ||
                   eeb_srv_int_field(json_object_get(clock, "batch"), "clock.batch", 1, 65535,
                                     &d->batch, f) ||
                   eeb_srv_int_field(json_object_get(clock, "frozen"), "clock.frozen", 0, 4096,
                                     &d->frozen, f) ||
                   eeb_srv_int_field(json_object_get(clock, "epochs"), "clock.epochs", 1,
                                     1000000000, &d->epochs, f) ||
                   (steps && !json_is_null(steps) &&
                    eeb_srv_int_field(steps, "clock.steps", 1, INT64_MAX / 2, &d->max_steps, f))
               ? -1
               : 0;
}

static int read_declared(json_t *body, struct declared *d, struct eeb_srv_fault *f)
{
    char why[128];
    json_t *task = json_object_get(body, "task"), *util = json_object_get(body, "util");
    *d = (struct declared){.device = "unknown",
                           .backend = "unknown",
                           .entry = "main",
                           .division = "closed",
                           .p_max_w = NAN};
    if (!json_is_string(task))
        return eeb_srv_bad(f, "task", "expected a string: cls, det or video");
    if (eeb_task_parse(json_string_value(task), &d->task, why, sizeof why))
        return eeb_srv_bad(f, "task", "%s", why);
    if (util && !json_is_object(util))
        return eeb_srv_bad(f, "util", "expected an object of four fractions: lut, ff, bram, dsp");
    for (int u = 0; util && u < EEB_UTIL_COUNT; u++) {
        char field[32];
        snprintf(field, sizeof field, "util.%s", eeb_score_util_name((enum eeb_util_kind)u));
        if (eeb_srv_number_field(json_object_get(util, eeb_score_util_name((enum eeb_util_kind)u)),
                                 field, 0, 1, &d->util[u], f))
            return -1;
    }
    json_t *prov = json_object_get(body, "provenance");
    const char *p = json_string_value(prov);
    enum eeb_provenance known_prov;
    if (!p || eeb_provenance_parse(p, &known_prov))
        return eeb_srv_bad(f, "provenance", "expected measured, counter, declared or modeled");
    d->provenance = p;
    json_t *rate = json_object_get(body, "rate_hz"), *official = json_object_get(body, "official");
    if (rate && eeb_srv_number_field(rate, "rate_hz", 0.001, 1e6, &d->rate_hz, f))
        return -1;
    if (official && !json_is_boolean(official))
        return eeb_srv_bad(f, "official", "expected true or false");
    d->official = json_is_true(official);
    if (text_field(body, "device", EEB_DECLARED_MAX, &d->device, f) ||
        text_field(body, "backend", EEB_DECLARED_MAX, &d->backend, f) ||
        text_field(body, "design", 255, &d->design, f) ||
        text_field(body, "finetune", 64, &d->finetune, f) ||
        text_field(body, "model", 64, &d->model, f) ||
        text_field(body, "entry", EEB_ROUND_NAME - 1, &d->entry, f) ||
        text_field(body, "division", 6, &d->division, f))
        return -1;
    if (!json_object_get(body, "backend") || !canonical_backend(d->backend))
        return eeb_srv_bad(f, "backend",
                           "expected emu, kernel, fp32, xrt, faulty:NAME (eeb's own, in lower "
                           "case) or a team's SUT by its kind, library or exec");
    if (strcmp(d->division, "closed") && strcmp(d->division, "open"))
        return eeb_srv_bad(f, "division", "expected closed or open");
    json_t *tier = json_object_get(body, "p_max_w");
    if (tier && eeb_srv_number_field(tier, "p_max_w", 1e-3, 1e6, &d->p_max_w, f))
        return -1;
    if (d->finetune && (strlen(d->finetune) != 64 || strspn(d->finetune, "0123456789abcdef") != 64))
        return eeb_srv_bad(f, "finetune", "expected the fine-tune set's SHA-256, 64 hex digits");
    if (d->model && (strlen(d->model) != 64 || strspn(d->model, "0123456789abcdef") != 64))
        return eeb_srv_bad(f, "model", "expected the base model's SHA-256, 64 hex digits");
    if (known_prov != EEB_MODELED && eeb_accel_never_on_board(d->backend))
        return eeb_srv_bad(
            f, "provenance",
            "%s: backend %s runs on a CPU, not a board: its time and power are modeled", p,
            d->backend);
    if (read_clock(json_object_get(body, "clock"), d, f))
        return -1;
    if (d->modeled_clock && util)
        return eeb_srv_bad(f, "util",
                           "a modeled run's M_u is its design's, which the server models: send "
                           "none");
    if (!d->modeled_clock && !util)
        return eeb_srv_bad(f, "util", "expected an object of four fractions: lut, ff, bram, dsp");
    static const char *const known[] = {"task",   "util",    "provenance", "rate_hz",  "official",
                                        "device", "backend", "design",     "finetune", "model",
                                        "clock",  "entry",   "division",   "p_max_w"};
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(known[i], key))
            i++;
        if (i == sizeof known / sizeof *known)
            return eeb_srv_bad(f, key, "unknown field");
    }
    return 0;
}

/* The configuration the server stores for the run: what the judge, the
 * check and the report read from a local run's, with the server's rules. */
static char *server_config(const struct eeb_server *s, const struct declared *d,
                           const struct eeb_srv_call *k, const struct eeb_srv_run *r,
                           const struct eeb_round *round, int64_t seed,
                           const struct eeb_srv_meter *m)
{
    const struct eeb_weights *w = &s->weights[d->task];
    const double weights[4] = {w->u, w->t, w->p, w->s};
    json_t *o =
        json_pack("{s:{s:s, s:b}}", "server", "team", k->team_name, "official", d->official);
    if (o && round) /* the entry it is a run of, and the seed it was handed */
        json_object_set_new(json_object_get(o, "server"), "round",
                            json_pack("{s:s, s:s, s:s, s:I}", "name", round->name, "entry",
                                      d->entry, "division", d->division, "seed", (json_int_t)seed));
    if (o) {
        eeb_config_put_backend(o, d->backend, d->provenance);
        /* what the leaderboard shows; the judge reads none of it */
        json_object_set_new(o, "device", json_string(d->device));
        json_object_set_new(o, "design", d->design ? json_string(d->design) : json_null());
    }
    if (o) {
        if (m) { /* the server's own meter: what the run is judged by */
            eeb_config_put_power(o, m->source, m->rate_hz, d->provenance,
                                 "read by the evaluation server");
            eeb_config_put_meter(o, m->meter_run);
        } else {
            eeb_config_put_power(o, "uploaded", d->rate_hz, d->provenance, NULL);
        }
        eeb_config_put_input(o, "test", NULL, NULL, judged_on(s, (int)d->task, r->official)->n);
        if (d->modeled_clock) /* the design's, as the server modeled it */
            eeb_config_put_util(o, d->util, "modeled by the server from the design", "modeled",
                                NULL);
        else
            eeb_config_put_util(o, d->util, "declared at registration", "declared", NULL);
        eeb_config_put_budgets(o, r->t_max_s, r->p_max_w,
                               d->modeled_clock ? EEB_CLOCK_MODELED : EEB_CLOCK_WALL, NAN, -1);
        if (d->modeled_clock) { /* what the judge times the run by, and what it was
                                 * modeled for: eeb check --model recomputes it */
            json_object_set_new(o, "device_model",
                                json_pack("{s:s?, s:f, s:f}", "design", d->design, "train_step_s",
                                          d->step_s, "train_w", d->train_w));
            json_object_set_new(
                o, "training",
                json_pack("{s:I, s:I, s:I, s:o, s:I}", "batch", (json_int_t)d->batch, "frozen",
                          (json_int_t)d->frozen, "epochs", (json_int_t)d->epochs, "steps",
                          d->max_steps >= 0 ? json_integer((json_int_t)d->max_steps) : json_null(),
                          "schedule_steps", (json_int_t)d->schedule_steps));
        }
        if (d->model) /* the server's file, if it is the one: eeb check finds it there */
            eeb_config_put_input(o, "model",
                                 strcmp(d->model, s->model[d->task].sha256) ? NULL
                                                                            : s->cfg.model[d->task],
                                 d->model, 0);
        eeb_config_put_rules(o, s->rules_version, NULL, weights, s->power_rule.window_s,
                             s->power_rule.min_rate_hz);
        if (d->finetune)
            eeb_config_put_input(o, "finetune", NULL, d->finetune, 0);
    }
    char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return text;
}

/* What a registered run is held to besides its budgets: the rules and the
 * fine-tune set (null if the server names none). */
static void add_terms(json_t *o, const struct eeb_server *s, const struct eeb_srv_run *r)
{
    enum eeb_task task = (enum eeb_task)r->task;
    const struct eeb_weights *w = &s->weights[task];
    const struct eeb_srv_finetune_set *ft = &s->finetune[task];
    json_object_set_new(o, "rules",
                        json_pack("{s:s, s:{s:f, s:f, s:f, s:f}, s:f, s:f}", "version",
                                  s->rules_version, "weights", "u", w->u, "t", w->t, "p", w->p, "s",
                                  w->s, "power_window_s", s->power_rule.window_s, "min_rate_hz",
                                  s->power_rule.min_rate_hz));
    json_object_set_new(o, "finetune",
                        ft->sha256[0] ? json_pack("{s:s, s:I}", "sha256", ft->sha256, "items",
                                                  (json_int_t)ft->items)
                                      : json_null());
    json_object_set_new(o, "test_items",
                        json_integer((json_int_t)judged_on(s, r->task, r->official)->n));
    /* the time its predictions have once its test inputs are served */
    json_object_set_new(o, "predict_within_s", json_real(s->cfg.predict_within_s));
    if (r->schedule_steps) /* the steps the server counts its fine-tune is to take */
        json_object_set_new(o, "schedule_steps", json_integer((json_int_t)r->schedule_steps));
}

/* The fine-tune set a run declares must be the one the server names, if
 * it names one; an official run must declare it.  0, or the 409 sent. */
static int finetune_agrees(struct eeb_srv_call *k, const struct declared *d, enum MHD_Result *sent)
{
    const struct eeb_srv_finetune_set *ft = &k->s->finetune[d->task];
    char msg[256];
    if (!ft->sha256[0] || (d->finetune && strcmp(d->finetune, ft->sha256) == 0))
        return 0;
    if (!d->finetune && !d->official)
        return 0;
    snprintf(msg, sizeof msg, "this server's %s fine-tune set is sha256 %s (%llu items)%s",
             eeb_task_name(d->task), ft->sha256, (unsigned long long)ft->items,
             d->finetune ? "" : "; an official run declares it");
    *sent = eeb_srv_call_fail(k, 409, "finetune", msg);
    return -1;
}

/* The learnable layers of net: the most a run may hold frozen is one
 * fewer, so that a fine-tune trains something. */
static int learnable_layers(const struct eeb_net *net)
{
    int n = 0;
    for (int i = 0; i < net->nlayers; i++)
        n += eeb_layer_learnable(&net->layers[i]) != 0;
    return n;
}

/* Why a registration is refused: the field at fault, and the message. */
struct refusal {
    const char *field;
    char msg[1024];
};

__attribute__((format(printf, 3, 4))) static void refuse(struct refusal *r, const char *field,
                                                         const char *fmt, ...)
{
    r->field = field;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof r->msg, fmt, ap);
    va_end(ap);
}

/* A run on the modeled clock, modeled again by the server on its base
 * model: the step time and power declared must be the analytical model's
 * for the run's design, batch and frozen layers, bit for bit (the same
 * arithmetic, eeb check's too), and its M_u is the design's, into d; or
 * why not, into no. */
static void model_device(const struct eeb_srv_base_model *bm, struct declared *d,
                         struct refusal *no)
{
    struct eeb_design design;
    struct eeb_perf perf = {0};
    struct eeb_util util;
    char err[256], spec[128];
    int learnable = learnable_layers(bm->net);
    if (!d->design)
        refuse(no, "design", "a run on the modeled clock declares the design it modeled");
    else if (d->frozen >= learnable)
        refuse(no, "clock.frozen",
               "the base model has %d learnable layers: at most %d may be frozen (a fine-tune "
               "trains one at least), not %lld",
               learnable, learnable - 1, (long long)d->frozen);
    else if (eeb_design_for(&design, d->design, bm->net, err, sizeof err) ||
             eeb_perf_model(&design, bm->net, (int)d->batch, (int)d->frozen, &perf, err,
                            sizeof err))
        refuse(no, "design", "its device cannot be modeled: %s", err);
    else if (perf.train_step_s != d->step_s || perf.train_power_w != d->train_w) {
        /* which figure, not the model's answer: a registration is no
         * oracle for the analytical model either */
        int step = perf.train_step_s != d->step_s;
        refuse(no, step ? "clock.train_step_s" : "clock.train_w",
               "the %s declared is not the analytical model's for design %s, batch %lld and "
               "%lld frozen layers on the base model",
               step ? "step time" : "training power", d->design, (long long)d->batch,
               (long long)d->frozen);
    } else {
        eeb_resources_spec(&perf.res, spec, sizeof spec);
        if (eeb_score_util_from_spec(spec, &util, err, sizeof err))
            refuse(no, "design", "its design's utilization cannot be read: %s", err);
        else
            memcpy(d->util, util.frac, sizeof d->util);
    }
    eeb_perf_free(&perf);
}

/* The base model a run declares must be the one the server names, if it
 * names one (an official run must declare it).  A run on the modeled
 * clock needs the server to hold the base model and the fine-tune set, to
 * model its device and count its steps: its figures are the server's
 * model's, never a team's word.  0, or the 409 sent. */
static int model_agrees(struct eeb_srv_call *k, struct declared *d, int open_division,
                        enum MHD_Result *sent)
{
    const struct eeb_srv_base_model *bm = &k->s->model[d->task];
    const char *task = eeb_task_name(d->task);
    int another = d->model && bm->sha256[0] && strcmp(d->model, bm->sha256);
    struct refusal no = {.msg = ""};
    if (d->modeled_clock && !bm->sha256[0])
        refuse(&no, "clock",
               "this server holds no %s base model to model a device on (eeb serve --model): a "
               "modeled run's time, energy and utilization are the server's model's, never its "
               "own word",
               task);
    else if (d->modeled_clock && !k->s->finetune[d->task].sha256[0])
        refuse(&no, "clock",
               "this server names no %s fine-tune set (eeb serve --finetune) to count a modeled "
               "run's steps on",
               task);
    else if (!bm->sha256[0] || (open_division && another && !d->modeled_clock))
        return 0; /* nothing named; or the open division, free to start elsewhere */
    else if (open_division && another)
        refuse(&no, "clock",
               "a run on the modeled clock is timed by the analytical model on this server's %s "
               "base model (sha256 %s); a run from another model runs on its board",
               task, bm->sha256);
    else if (another || (!d->model && (d->official || d->modeled_clock)))
        refuse(&no, "model", "this server's %s base model is sha256 %s%s", task, bm->sha256,
               d->model ? "" : "; an official or modeled run declares it");
    else if (d->modeled_clock)
        model_device(bm, d, &no);
    if (no.msg[0])
        *sent = eeb_srv_call_fail(k, 409, no.field, no.msg);
    return no.msg[0] ? -1 : 0;
}

/* The steps a run on the modeled clock is to take, as the server counts
 * them: its epochs of the fine-tune set in batches (the last one partial),
 * cut at the steps it asked for and at those T_max holds on its clock. */
static int64_t schedule_steps(const struct eeb_server *s, const struct declared *d, double t_max_s)
{
    int64_t items = (int64_t)s->finetune[d->task].items;
    double steps = (double)d->epochs * (double)((items + d->batch - 1) / d->batch);
    double in_tmax = floor(t_max_s / d->step_s);
    if (d->max_steps >= 0 && (double)d->max_steps < steps)
        steps = (double)d->max_steps;
    steps = in_tmax < steps ? in_tmax : steps;
    return steps < 0x1p62 ? (int64_t)steps : INT64_C(1) << 62; /* no count past int64's */
}

static int count_round(void *arg, int64_t id, const struct eeb_round *r)
{
    (void)id, (void)r;
    ++*(int *)arg;
    return 0;
}

/* An official run while the server holds rounds: a run of its team's
 * entry in the open round, held to the round's rules, T_max and the P_max
 * of the tier it names (the lowest if none), and in the closed division to
 * the round's base model.  0 with c filled (c->round 0: the server has
 * never held a round, and the run is held to eeb's budgets alone), or the
 * 409 sent. */
static int take_round(struct eeb_srv_call *k, const struct declared *d, struct eeb_round *round,
                      struct eeb_srv_claim *c, enum MHD_Result *sent)
{
    char err[256], msg[512];
    int64_t id = 0;
    int rounds = 0,
        found = eeb_srv_store_round_find(k->s->store, NULL, 1, &id, round, err, sizeof err);
    if (found == 0 && eeb_srv_store_rounds_each(k->s->store, count_round, &rounds, err, sizeof err))
        found = EEB_EDB;
    if (found < 0) {
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
        return -1;
    }
    *c = (struct eeb_srv_claim){
        .round = id, .rules = round, .entry = d->entry, .division = d->division};
    if (!found && !rounds)
        return 0;
    uint32_t seed;
    if (found && eeb_random_bytes(&seed, sizeof seed, err, sizeof err)) {
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
        return -1;
    }
    c->seed = found ? (int64_t)(seed >> 1) + 1 : 0; /* 1 to 2^31: any seed eeb run takes */
    const struct eeb_round_task *rt = &round->task[d->task];
    const struct eeb_srv_base_model *bm = &k->s->model[d->task];
    const char *field = "round";
    int tier = 0;
    while (found && !isnan(d->p_max_w) && tier < rt->ntiers && rt->tiers_w[tier] != d->p_max_w)
        tier++;
    if (!found)
        snprintf(msg, sizeof msg,
                 "no round is open on this server: an official run is a run of "
                 "an entry in the open round");
    else if (strcmp(round->rules_version, k->s->rules_version))
        snprintf(msg, sizeof msg, "round %s is judged by rules %s; this server applies rules %s",
                 round->name, round->rules_version, k->s->rules_version);
    else if (tier == rt->ntiers) {
        int n = snprintf(msg, sizeof msg, "round %s's %s P_max tiers are", round->name,
                         eeb_task_name(d->task));
        for (int i = 0; i < rt->ntiers && n > 0 && (size_t)n < sizeof msg; i++)
            n += snprintf(msg + n, sizeof msg - (size_t)n, " %g W", rt->tiers_w[i]);
        field = "p_max_w";
    } else if (strcmp(d->division, "closed") == 0 && rt->model_sha256[0] &&
               (!d->model || strcmp(d->model, rt->model_sha256)))
        snprintf(msg, sizeof msg,
                 "round %s's closed division fine-tunes the %s base model sha256 %s (the open "
                 "division is free to start from another)",
                 round->name, eeb_task_name(d->task), rt->model_sha256),
            field = "model";
    else if (rt->model_sha256[0] && bm->sha256[0] && strcmp(rt->model_sha256, bm->sha256))
        snprintf(msg, sizeof msg,
                 "this server's %s base model (sha256 %s) is not round %s's (sha256 %s): the "
                 "organizer serves the round's model (eeb serve --model)",
                 eeb_task_name(d->task), bm->sha256, round->name, rt->model_sha256);
    else if (d->modeled_clock && !bm->sha256[0])
        snprintf(msg, sizeof msg,
                 "this server holds no %s base model to model a device on (eeb serve --model): "
                 "in a round, a run on the modeled clock is timed by the server's analytical "
                 "model, not by its own word",
                 eeb_task_name(d->task)),
            field = "clock";
    else
        return 0;
    *sent = eeb_srv_call_fail(k, 409, field, msg);
    return -1;
}

/* Director mode: the meter of the team's station opened for its official
 * run on a board, whose figures are then the server's measurement (their
 * provenance the meter's); without one, a run's own "measured" or
 * "counter" log is declared, and a "modeled" one must be on the modeled
 * clock.  0, or the 400 or 503 sent. */
static int read_meter(struct eeb_srv_call *k, struct declared *d, struct eeb_srv_meter *m,
                      enum MHD_Result *sent)
{
    int station = eeb_srv_station(k->s, k->team_name);
    char err[512], msg[640];
    if (station < 0 || !d->official || d->modeled_clock || eeb_accel_never_on_board(d->backend)) {
        /* modeled figures are the server's model's, on the modeled clock;
         * a run timed on the wall has a meter's (sim:'s watts would be
         * the team's pick) */
        if (strcmp(d->provenance, "modeled") == 0 && !d->modeled_clock) {
            *sent = eeb_srv_call_fail(k, 400, "clock",
                                      "a modeled run is timed on the modeled clock: declare "
                                      "{\"kind\": \"modeled\", \"train_step_s\", \"train_w\", "
                                      "\"batch\", \"frozen\", \"epochs\"}; a run on the wall "
                                      "clock is measured by a meter");
            return -1;
        }
        /* what no meter of the server's read is the team's word */
        if (strcmp(d->provenance, "measured") == 0 || strcmp(d->provenance, "counter") == 0)
            d->provenance = "declared";
        return 0;
    }
    if (eeb_srv_meter_open(k->s, station, m, err, sizeof err)) {
        snprintf(msg, sizeof msg, "team %s's station meter does not answer: %s", k->team_name, err);
        *sent = eeb_srv_call_fail(k, 503, "station", msg);
        return -1;
    }
    d->provenance = m->provenance;
    return 0;
}

/* The registration's answer: the run, its terms, and in a round its
 * place there. */
static json_t *registered_json(struct eeb_srv_call *k, const struct eeb_srv_run *r,
                               const struct eeb_round *round, const struct eeb_srv_claim *c)
{
    json_t *o = run_json(r);
    add_terms(o, k->s, r);
    if (o && c && c->round)
        json_object_set_new(
            o, "round",
            json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:I}", "name", round->name, "entry", c->entry,
                      "division", c->division, "run", c->index, "of", round->runs, "aggregate",
                      eeb_round_aggregate_name(round->aggregate), "seed", (json_int_t)c->seed));
    return o;
}

/* n of the team's quota q taken for today: 1, or 0 with the 429 (or the
 * 500) sent. */
static int take_quota(struct eeb_srv_call *k, enum eeb_server_quota q, int64_t n,
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
static void give_back(struct eeb_srv_call *k, enum eeb_server_quota q, int64_t n)
{
    int64_t used;
    char err[256];
    if (n) /* to the day it was taken from, past midnight too */
        (void)eeb_srv_store_quota_take(k->s->store, k->team, k->quota_day, q, -n, -1, &used, err,
                                       sizeof err);
}

/* The set the run will be judged on, or the 409 sent: an official run
 * needs the secret test set, any other run the practice set (a rehearsal
 * is never judged on the secret labels, so no score tells of them). */
static const struct eeb_srv_testset *set_for(struct eeb_srv_call *k, const struct declared *d,
                                             enum MHD_Result *sent)
{
    const struct eeb_srv_testset *t = judged_on(k->s, d->task, d->official);
    char msg[320];
    const char *task = eeb_task_name(d->task);
    if (t)
        return t;
    if (d->official)
        snprintf(msg, sizeof msg, "this server holds no %s test set", task);
    else
        snprintf(msg, sizeof msg,
                 "a run that is not official is a rehearsal, judged on the practice test set "
                 "(whose labels are public), never on the secret one; this server holds no %s "
                 "practice set (eeb serve --practice %s=FILE)",
                 task, task);
    *sent = eeb_srv_call_fail(k, 409, d->official ? "task" : "practice", msg);
    return NULL;
}

/* POST /api/v1/runs: a run, with the budgets and rules it is held to. */
enum MHD_Result eeb_srv_api_register(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    struct declared d;
    struct eeb_srv_fault f = {.field = ""};
    struct eeb_srv_meter m = {0};
    struct eeb_round round;
    struct eeb_srv_claim claim = {0};
    char err[256];
    if (read_declared(body, &d, &f)) {
        sent = eeb_srv_fail_fault(k, &f);
    } else if (set_for(k, &d, &sent) &&
               (!d.official || take_round(k, &d, &round, &claim, &sent) == 0) &&
               finetune_agrees(k, &d, &sent) == 0 &&
               model_agrees(k, &d, claim.round && strcmp(d.division, "open") == 0, &sent) == 0 &&
               take_quota(k, EEB_QUOTA_REGISTRATIONS, 1, &sent) &&
               /* a meter that does not answer registers nothing: the quota back */
               (read_meter(k, &d, &m, &sent) == 0 ||
                (give_back(k, EEB_QUOTA_REGISTRATIONS, 1), 0))) {
        const struct eeb_task_profile *p = eeb_task_profile(d.task);
        const struct eeb_round_task *rt = claim.round ? &round.task[d.task] : NULL;
        struct eeb_srv_run r = {.team = k->team,
                                .task = (int)d.task,
                                .official = d.official,
                                .t_max_s = rt ? rt->t_max_s : p->t_max_s,
                                .p_max_w = !rt                ? p->p_max_w
                                           : isnan(d.p_max_w) ? rt->tiers_w[0]
                                                              : d.p_max_w};
        if (d.modeled_clock)
            r.schedule_steps = d.schedule_steps = schedule_steps(k->s, &d, r.t_max_s);
        snprintf(r.team_name, sizeof r.team_name, "%s", k->team_name);
        snprintf(r.rules_version, sizeof r.rules_version, "%s", k->s->rules_version);
        snprintf(r.backend, sizeof r.backend, "%s", d.backend);
        snprintf(r.device, sizeof r.device, "%s", d.device);
        snprintf(r.provenance, sizeof r.provenance, "%s", d.provenance);
        snprintf(r.state, sizeof r.state, "registered");
        /* the meter measures from before the run is registered, so that
         * no run is registered that it does not measure */
        char *config = server_config(k->s, &d, k, &r, claim.round ? &round : NULL, claim.seed,
                                     m.meter_run ? &m : NULL);
        int started = 0, registered = 0, rc = 0;
        snprintf(err, sizeof err,
                 "its schedule takes no step: T_max (%g s) holds none of %.17g s, or it asked "
                 "for none",
                 r.t_max_s, d.step_s);
        if (!config)
            sent = eeb_srv_call_fail(k, 500, NULL, "out of memory");
        else if (d.modeled_clock && r.schedule_steps < 1) /* a fine-tune trains one at least */
            sent = eeb_srv_call_fail(k, 409, "clock", err);
        else if (m.meter_run && !(started = !eeb_srv_meter_start(k->s, &m, err, sizeof err)))
            sent = eeb_srv_call_fail(k, 503, "station", err);
        else if ((rc = eeb_srv_store_run_register(k->s->store, &r, config,
                                                  claim.round ? &claim : NULL, err, sizeof err))) {
            if (rc > 0)
                eeb_srv_log(k->s, "team %s's %s run refused: %s: %s", k->team_name,
                            eeb_task_name(d.task), claim.field, claim.why);
            sent = rc > 0 ? eeb_srv_call_fail(k, 409, claim.field, claim.why)
                          : eeb_srv_call_fail(k, 500, NULL, err);
        } else {
            registered = 1;
            if (claim.round)
                eeb_srv_log(k->s,
                            "run %lld registered: team %s, %s, %s, entry %s (run %d of %d, %s "
                            "division, P_max %g W) in round %s",
                            (long long)r.id, k->team_name, eeb_task_name(d.task), r.provenance,
                            claim.entry, claim.index, round.runs, claim.division, r.p_max_w,
                            round.name);
            else
                eeb_srv_log(k->s, "run %lld registered: team %s, %s, %s%s", (long long)r.id,
                            k->team_name, eeb_task_name(d.task), r.provenance,
                            d.official ? ", official" : ", a rehearsal on the practice set");
            atomic_fetch_add(&k->s->changes, 1); /* running, on the leaderboard */
            if (started)
                eeb_srv_meter_bind(k->s, m.meter_run, r.id);
            sent = eeb_srv_call_json(k, 201, registered_json(k, &r, &round, &claim));
        }
        if (!registered)
            give_back(k, EEB_QUOTA_REGISTRATIONS, 1);
        if (started && !registered) /* held, but for no run */
            eeb_srv_meter_drop(k->s, m.meter_run);
        else if (!started && m.meter_run) /* opened, never held */
            eeb_srv_meter_close(k->s, &m);
        free(config);
    }
    json_decref(body);
    return sent;
}

/* ---- the power log ---- */

/* The state a route needs the run in, or the 409 sent. */
static int in_state(struct eeb_srv_call *k, const char *a, const char *b, enum MHD_Result *sent)
{
    if (strcmp(k->run.state, a) == 0 || (b && strcmp(k->run.state, b) == 0))
        return 1;
    char msg[160];
    snprintf(msg, sizeof msg, "run %lld is %s; this needs it %s%s%s", (long long)k->id,
             k->run.state, a, b ? " or " : "", b ? b : "");
    *sent = eeb_srv_call_fail(k, 409, "state", msg);
    return 0;
}

/* The links one request may carry; the body's cap bounds their records. */
#define LINKS_MAX 4096

/* Hex digits of exactly len characters. */
static int hex_field(json_t *o, const char *key, size_t len, const char *field, const char **out,
                     struct eeb_srv_fault *f)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v || strlen(v) != len || strspn(v, "0123456789abcdef") != len)
        return eeb_srv_bad(f, field, "expected %zu lowercase hex digits", len);
    *out = v;
    return 0;
}

/* [t_mono_ns, t_utc_ns] of x into t. */
static int times_field(json_t *x, const char *field, int64_t t[2], struct eeb_srv_fault *f)
{
    char at[160];
    for (int j = 0; j < 2; j++) {
        snprintf(at, sizeof at, "%s[%d]", field, j);
        if (eeb_srv_int_field(json_array_get(x, (size_t)j), at, 0, INT64_MAX, &t[j], f))
            return -1;
    }
    return 0;
}

/* An event link's [t_mono_ns, t_utc_ns, kind, payload]: the payload is the
 * text of a JSON object, as hashed, or null. */
static int read_event(json_t *x, const char *field, struct eeb_rundb_event *e,
                      struct eeb_srv_fault *f)
{
    char at[112];
    int64_t t[2];
    if (!json_is_array(x) || json_array_size(x) != 4)
        return eeb_srv_bad(f, field, "expected [t_mono_ns, t_utc_ns, kind, payload]");
    if (times_field(x, field, t, f))
        return -1;
    e->t_mono_ns = t[0], e->t_utc_ns = t[1];
    e->kind = json_string_value(json_array_get(x, 2));
    snprintf(at, sizeof at, "%s[2]", field);
    if (!e->kind || !*e->kind || strlen(e->kind) > 32)
        return eeb_srv_bad(f, at, "expected a kind of 1 to 32 characters");
    json_t *p = json_array_get(x, 3);
    snprintf(at, sizeof at, "%s[3]", field);
    e->payload = json_string_value(p);
    if (!json_is_null(p) && !e->payload)
        return eeb_srv_bad(f, at, "expected the payload's JSON text, or null");
    json_t *o = e->payload ? json_loads(e->payload, JSON_REJECT_DUPLICATES, NULL) : NULL;
    int object = json_is_object(o);
    json_decref(o);
    if (e->payload && !object)
        return eeb_srv_bad(f, at, "expected the text of a JSON object");
    return 0;
}

/* A samples link's [[t_mono_ns, t_utc_ns, watts, volts, amps, flags]...]
 * into a new array. */
static int read_samples(json_t *sa, const char *field, struct eeb_rundb_link *l,
                        struct eeb_srv_fault *f)
{
    char at[160];
    size_t i;
    json_t *x;
    if (!json_is_array(sa) || !json_array_size(sa))
        return eeb_srv_bad(f, field, "expected a non-empty array of samples");
    struct eeb_sample *s = calloc(json_array_size(sa), sizeof *s);
    if (!(l->samples = s))
        return eeb_srv_bad(f, field, "out of memory");
    json_array_foreach(sa, i, x)
    {
        int64_t t[2], flags;
        snprintf(at, sizeof at, "%s[%zu]", field, i);
        if (!json_is_array(x) || json_array_size(x) != 6)
            return eeb_srv_bad(f, at, "expected [t_mono_ns, t_utc_ns, watts, volts, amps, flags]");
        if (times_field(x, at, t, f))
            return -1;
        s[i].t_mono_ns = t[0], s[i].t_utc_ns = t[1];
        snprintf(at, sizeof at, "%s[%zu][2]", field, i);
        if (eeb_srv_reading_field(json_array_get(x, 2), at, EEB_SRV_WATTS, &s[i].watts, f))
            return -1;
        snprintf(at, sizeof at, "%s[%zu][3]", field, i);
        if (eeb_srv_reading_field(json_array_get(x, 3), at, EEB_SRV_VOLTS, &s[i].volts, f))
            return -1;
        snprintf(at, sizeof at, "%s[%zu][4]", field, i);
        if (eeb_srv_reading_field(json_array_get(x, 4), at, EEB_SRV_AMPS, &s[i].amps, f))
            return -1;
        snprintf(at, sizeof at, "%s[%zu][5]", field, i);
        if (eeb_srv_int_field(json_array_get(x, 5), at, 0, UINT32_MAX, &flags, f))
            return -1;
        s[i].flags = (uint32_t)flags;
    }
    l->nsamples = json_array_size(sa);
    return 0;
}

/* One link of the body: {seq, kind, head} and its kind's records. */
static int read_link(json_t *x, size_t i, struct eeb_rundb_link *l, struct eeb_srv_fault *f)
{
    char field[64], at[96];
    const char *kind = json_string_value(json_object_get(x, "kind")), *hex;
    snprintf(field, sizeof field, "links[%zu]", i);
    if (!json_is_object(x))
        return eeb_srv_bad(f, field, "expected an object");
    snprintf(at, sizeof at, "%s.seq", field);
    if (eeb_srv_int_field(json_object_get(x, "seq"), at, 0, INT64_MAX / 2, &l->seq, f))
        return -1;
    snprintf(at, sizeof at, "%s.kind", field);
    if (eeb_link_kind_parse(kind, &l->kind))
        return eeb_srv_bad(f, at, "expected origin, event or samples");
    snprintf(at, sizeof at, "%s.head", field);
    if (hex_field(x, "head", 64, at, &hex, f))
        return -1;
    snprintf(l->head, sizeof l->head, "%s", hex);
    if (l->kind == EEB_LINK_ORIGIN) {
        snprintf(at, sizeof at, "%s.config_sha256", field);
        if (hex_field(x, "config_sha256", 64, at, &hex, f))
            return -1;
        snprintf(l->config_sha256, sizeof l->config_sha256, "%s", hex);
        const char *uuid = json_string_value(json_object_get(x, "uuid"));
        snprintf(at, sizeof at, "%s.uuid", field);
        if (!uuid || strlen(uuid) != 36 || strspn(uuid, "0123456789abcdef-") != 36)
            return eeb_srv_bad(f, at, "expected a uuid of 36 characters");
        snprintf(l->uuid, sizeof l->uuid, "%s", uuid);
        return 0;
    }
    if (l->kind == EEB_LINK_EVENT) {
        snprintf(at, sizeof at, "%s.event", field);
        return read_event(json_object_get(x, "event"), at, &l->event, f);
    }
    /* the meter's URI as the run wrote it: its head covers it, so only
     * its length is the server's to bound */
    snprintf(at, sizeof at, "%s.source", field);
    l->source = json_string_value(json_object_get(x, "source"));
    if (!l->source || !*l->source || strlen(l->source) > 1023)
        return eeb_srv_bad(f, at, "expected the meter's URI, 1 to 1023 characters");
    if (!eeb_power_uri_known(l->source)) /* one spelling a scheme: what it fixes is read */
        return eeb_srv_bad(f, at,
                           "expected one of eeb's power sources by its scheme, in lower case "
                           "(hwmon:, rapl:, scpi://, ptd://, replay:, sim:, faulty:)");
    snprintf(at, sizeof at, "%s.samples", field);
    return read_samples(json_object_get(x, "samples"), at, l, f);
}

/* The body's links into a new array of *n (their strings stay in body). */
static int read_links(json_t *body, struct eeb_rundb_link **links, size_t *n,
                      struct eeb_srv_fault *f)
{
    json_t *a = json_object_get(body, "links"), *x;
    size_t i;
    if (!json_is_array(a) || !json_array_size(a))
        return eeb_srv_bad(f, "links", "expected a non-empty array of links");
    if (json_array_size(a) > LINKS_MAX)
        return eeb_srv_bad(f, "links", "more than %d links in one request", LINKS_MAX);
    if (!(*links = calloc(json_array_size(a), sizeof **links)))
        return eeb_srv_bad(f, "links", "out of memory");
    json_array_foreach(a, i, x)
    {
        *n = i + 1;
        if (read_link(x, i, &(*links)[i], f))
            return -1;
    }
    return 0;
}

/* The 409 for links the chain refuses, naming the link. */
static enum MHD_Result refuse_links(struct eeb_srv_call *k, enum eeb_link_verdict v, size_t at,
                                    const struct eeb_rundb_link *l, int64_t next)
{
    char field[32], msg[256];
    snprintf(field, sizeof field, "links[%zu]", at);
    if (v == EEB_LINKS_DIFFERS)
        snprintf(msg, sizeof msg, "link %lld was received before with another head",
                 (long long)l->seq);
    else if (v == EEB_LINKS_GAP)
        snprintf(msg, sizeof msg, "link %lld is not the next: this run's next link is %lld",
                 (long long)l->seq, (long long)next);
    else
        snprintf(msg, sizeof msg,
                 "link %lld: its records do not give its head: the chain breaks there",
                 (long long)l->seq);
    json_t *o =
        json_pack("{s:s, s:s, s:I}", "error", msg, "field", field, "next", (json_int_t)next);
    return eeb_srv_call_json(k, 409, o);
}

/* The links' claims the run may not make, or 0: a source whose readings
 * are modeled (sim:) or declared (replay:) in a run that says more of its
 * figures; a chain whose origin is another run's (a copy, sent again as
 * a new run).  The 400 or 409 sent names the link. */
static int links_refused(struct eeb_srv_call *k, const struct eeb_rundb_link *links, size_t n,
                         enum MHD_Result *sent)
{
    enum eeb_provenance claimed;
    char field[64], msg[320], err[256];
    int known = eeb_provenance_parse(k->run.provenance, &claimed) == 0;
    for (size_t i = 0; i < n; i++) {
        const struct eeb_rundb_link *l = &links[i];
        /* (the server's meter judges a run it reads; the run's own log is
         * only held to it) */
        int fixed = l->kind == EEB_LINK_SAMPLES && !k->run.meter_run
                        ? eeb_power_uri_provenance(l->source)
                        : -1;
        int64_t owner = 0;
        if (fixed >= 0 && known && claimed != EEB_MODELED && (int)claimed != fixed) {
            snprintf(field, sizeof field, "links[%zu].source", i);
            snprintf(msg, sizeof msg, "%.64s reads %s figures; this run's are %s", l->source,
                     eeb_provenance_name((enum eeb_provenance)fixed), k->run.provenance);
            *sent = eeb_srv_call_fail(k, 400, field, msg);
            return 1;
        }
        if (l->kind != EEB_LINK_ORIGIN)
            continue;
        if (eeb_srv_store_origin_owner(k->s->store, l->uuid, l->head, k->id, &owner, err,
                                       sizeof err)) {
            *sent = eeb_srv_call_fail(k, 500, NULL, err);
            return 1;
        }
        if (owner) {
            snprintf(field, sizeof field, "links[%zu]", i);
            snprintf(msg, sizeof msg,
                     "this chain (origin %s) is run %lld's: a run is sent once, as the run it "
                     "is",
                     l->uuid, (long long)owner);
            *sent = eeb_srv_call_fail(k, 409, field, msg);
            return 1;
        }
    }
    return 0;
}

/* POST /api/v1/runs/{id}/links: links of the run's chain with their
 * records, each checked against the chain held before it is stored, and
 * stamped with the server's clock; a link sent again is answered as held.
 * The samples of links new to the server count against the team's quota. */
enum MHD_Result eeb_srv_api_links(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    if (!in_state(k, "registered", "complete", &sent))
        return sent;
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    struct eeb_rundb_link *links = NULL;
    size_t n = 0, at = 0;
    int64_t fresh = 0; /* samples in links the server does not hold yet */
    struct eeb_srv_fault f = {.field = ""};
    char err[512];
    int bad = read_links(body, &links, &n, &f);
    for (size_t i = 0; !bad && i < n; i++)
        fresh += links[i].seq >= k->run.links ? (int64_t)links[i].nsamples : 0;
    if (bad) {
        sent = eeb_srv_fail_fault(k, &f);
    } else if (!links_refused(k, links, n, &sent) &&
               take_quota(k, EEB_QUOTA_SAMPLES, fresh, &sent)) {
        enum eeb_link_verdict v;
        int64_t next = 0;
        int rc = eeb_srv_store_run_links(k->s->store, k->id, links, n, k->s->cfg.max_samples, &v,
                                         &at, &next, err, sizeof err);
        if (rc || v != EEB_LINKS_STORED) /* nothing of the request is stored */
            give_back(k, EEB_QUOTA_SAMPLES, fresh);
        if (rc == 1) /* past the run's cap of samples */
            sent = eeb_srv_call_fail(k, 413, "samples", err);
        else if (rc)
            sent = eeb_srv_call_fail(k, rc == EEB_EINVAL ? 400 : 500, NULL, err);
        else if (v != EEB_LINKS_STORED)
            sent = refuse_links(k, v, at, &links[at], next);
        else {
            eeb_srv_meter_heard(k->s, k->id, 0);
            atomic_fetch_add(&k->s->samples_received, (unsigned long long)fresh);
            sent = eeb_srv_call_json(k, 200, json_pack("{s:I}", "next", (json_int_t)next));
        }
    }
    for (size_t i = 0; links && i < n; i++)
        free((void *)links[i].samples);
    free(links);
    json_decref(body);
    return sent;
}

/* ---- begin, complete, and the test inputs ---- */

/* POST /api/v1/runs/{id}/begin: the run is about to write its fine-tune's
 * begin; the server keeps when it said so, the first time, on its clock. */
enum MHD_Result eeb_srv_api_begin(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    char err[512];
    if (!in_state(k, "registered", NULL, &sent))
        return sent;
    if (eeb_srv_store_run_begin(k->s->store, k->id, err, sizeof err) < 0 ||
        eeb_srv_store_run_get(k->s->store, k->id, &k->run, err, sizeof err) < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    eeb_srv_meter_heard(k->s, k->id, 1);
    return eeb_srv_call_json(k, 200, run_json(&k->run));
}

/* POST /api/v1/runs/{id}/complete: fine-tuning is over; the test inputs
 * may be fetched.  Saying it again is harmless; of a scored run, a
 * conflict. */
enum MHD_Result eeb_srv_api_complete(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    char err[512];
    if (!in_state(k, "registered", "complete", &sent))
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
    return eeb_srv_call_json(k, 200, run_json(&k->run));
}

/* The set run k->run is judged on, or the 409 sent: a server started
 * again without it cannot judge the runs it had. */
static const struct eeb_srv_testset *run_set(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    const struct eeb_srv_testset *t = judged_on(k->s, k->run.task, k->run.official);
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
    if (!in_state(k, "complete", NULL, &sent) || !(t = run_set(k, &sent)))
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
    if (!in_state(k, "complete", NULL, &sent) || !(t = run_set(k, &sent)))
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

/* Whether why holds reason whole among its "; "-separated reasons. */
static int has_reason(const char *why, const char *reason)
{
    size_t n = strlen(reason);
    for (const char *at = why; (at = strstr(at, reason)) != NULL; at++)
        if ((at == why || (at - why >= 2 && at[-2] == ';' && at[-1] == ' ')) &&
            (at[n] == '\0' || at[n] == ';'))
            return 1;
    return 0;
}

/* o made invalid, for the reason fmt says after those it has (once: the
 * judge may have found it too). */
__attribute__((format(printf, 2, 3))) static void invalidate(struct eeb_run_outcome *o,
                                                             const char *fmt, ...)
{
    char reason[sizeof o->why];
    o->valid = 0, o->pass = 0, o->score.s = NAN;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    size_t n = strlen(o->why);
    if (has_reason(o->why, reason))
        return;
    if (n && n + 2 < sizeof o->why)
        memcpy(o->why + n, "; ", 3), n += 2;
    snprintf(o->why + n, sizeof o->why - n, "%s", reason);
}

/* A run of a round: the seed it was handed; in the closed division, no
 * more epochs than the round allows. */
static int round_check(struct eeb_srv_call *k, struct eeb_run_outcome *o, char *err, size_t errlen)
{
    struct eeb_round round;
    int64_t id, epochs, handed, used;
    if (!k->run.entry)
        return EEB_OK;
    /* a run of a round trains with the seed it was handed, and says so */
    int rc = eeb_srv_store_run_seeds(k->s->store, k->id, &handed, &used, err, errlen);
    if (rc)
        return rc;
    if (handed >= 0 && used != handed && used >= 0)
        invalidate(o, "the run trained with seed %lld; the server handed it seed %lld",
                   (long long)used, (long long)handed);
    else if (handed >= 0 && used != handed)
        invalidate(o, "the run's finetune_begin says no seed; the server handed it seed %lld",
                   (long long)handed);
    if (strcmp(k->run.division, "closed"))
        return EEB_OK;
    int found = eeb_srv_store_round_find(k->s->store, k->run.round, 0, &id, &round, err, errlen);
    if (found <= 0)
        return found;
    int allowed = round.task[k->run.task].epochs_max;
    if (!allowed)
        return EEB_OK;
    rc = eeb_srv_store_run_epochs(k->s->store, k->id, &epochs, err, errlen);
    if (rc == EEB_OK && epochs > allowed)
        invalidate(o, "the run trained %lld epochs; round %s's closed division allows %d",
                   (long long)epochs, round.name, allowed);
    return rc;
}

/* Why an official run's labels may not count (its M_s, its S, a verdict
 * on them), "" if they may: it fine-tuned as the server saw (its stream,
 * its steps), and its predictions followed its test inputs in time.  A
 * rehearsal's always may: its labels are public.  The predictions' time is
 * read afresh (r is read again), after the tally: predictions posted while
 * the run is being scored are timed with the rest. */
static int labels_barred(struct eeb_srv_call *k, struct eeb_srv_window *window, char *why, size_t n,
                         char *err, size_t errlen)
{
    const struct eeb_srv_run *r = &k->run;
    why[0] = '\0';
    int rc = !r->official ? EEB_OK : eeb_srv_fine_tuned(k->s, r, window, why, n, err, errlen);
    if (rc == EEB_OK && r->official && !why[0] && !r->test_served_utc_ns)
        snprintf(why, n, "its test inputs were never served");
    return rc;
}

/* Why an official run's predictions came too late, "" if they did not:
 * after the deadline its inputs' first serving set, as the run stands in
 * the store now. */
static int predictions_late(struct eeb_srv_call *k, char *why, size_t n, char *err, size_t errlen)
{
    struct eeb_srv_run now;
    int found = eeb_srv_store_run_get(k->s->store, k->id, &now, err, errlen);
    double late_s = (double)(now.predicted_utc_ns - now.test_served_utc_ns) / 1e9;
    why[0] = '\0';
    if (found > 0 && now.official && now.predicted_utc_ns && late_s > k->s->cfg.predict_within_s)
        snprintf(why, n,
                 "its predictions arrived %.1f s after its test inputs were served; the server "
                 "allows %g s",
                 late_s, k->s->cfg.predict_within_s);
    return found < 0 ? found : EEB_OK;
}

/* POST /api/v1/runs/{id}/score [counters]: judges the run from what it
 * sent and the labels the server holds.  Asked again, it answers the same
 * verdict.  An official run that did not fine-tune as the server saw is
 * judged without its labels: invalid, with no M_s, so that no score is an
 * oracle for them. */
enum MHD_Result eeb_srv_api_score(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    if (strcmp(k->run.state, "scored") == 0)
        return eeb_srv_call_json(k, 200, run_json(&k->run));
    const struct eeb_srv_testset *t;
    if (!in_state(k, "complete", NULL, &sent) || !(t = run_set(k, &sent)))
        return sent;
    if (!k->run.links)
        return eeb_srv_call_fail(k, 409, "links",
                                 "the run sent no chain: the server judges a run from its chain "
                                 "of events and samples (POST /api/v1/runs/{id}/links)");
    /* the quota bounds what official runs' scores can tell of the secret
     * labels; a rehearsal's labels are public */
    int charged = k->run.official;
    if (!store_counters(k, &sent) || (charged && !take_quota(k, EEB_QUOTA_SCORED, 1, &sent)))
        return sent;
    const char *path = eeb_srv_store_path(k->s->store);
    struct eeb_run_outcome o = {0};
    struct eeb_srv_window window = {0};
    char err[512], barred[512] = "", unmetered[256] = "", unjudged[256] = "";
    double m_s = NAN;
    /* an official run's stream, and with it the window the server's meter
     * (director mode) is read over, before the judge reads the meter: a
     * station agent's samples to the window's end in */
    int rc = labels_barred(k, &window, barred, sizeof barred, err, sizeof err);
    if (rc == EEB_OK && !barred[0])
        rc = eeb_srv_testset_m_s(t, k->s->store, k->id, &m_s, unjudged, sizeof unjudged, err,
                                 sizeof err);
    if (rc == EEB_OK && !barred[0])
        rc = predictions_late(k, barred, sizeof barred, err, sizeof err);
    if (rc) {
        give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    if (k->run.meter_run)
        eeb_srv_meter_settle(k->s, k->id, window.end_utc_ns);
    if (k->run.meter_run && !window.whole)
        snprintf(unmetered, sizeof unmetered,
                 "the server's meter has no fine-tune window: the run's chain holds no "
                 "finetune_begin and finetune_end");
    else if (k->run.meter_run &&
             eeb_srv_store_meter_window(k->s->store, k->run.meter_run, window.begin_utc_ns,
                                        window.end_utc_ns, unmetered, sizeof unmetered, err,
                                        sizeof err)) {
        give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    /* the labels' count where it may be had, else none: the judge then
     * gives every other figure, and the run is invalid for the reason */
    if (eeb_run_judge(path, k->id, isnan(m_s) ? 0 : m_s, &o, err, sizeof err)) {
        give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    if (unmetered[0])
        invalidate(&o, "%s", unmetered);
    o.complete = 1;
    o.device_time_s = o.device_energy_j = NAN; /* the server models no device */
    /* an official run's fine-tuning happened between register and complete */
    double seen_s = (double)(k->run.completed_utc_ns - k->run.registered_utc_ns) / 1e9;
    if (k->run.official && !o.modeled_clock && o.valid && o.t_s > seen_s + 1)
        invalidate(&o,
                   "the fine-tune window (%.3f s) is longer than the server saw between register "
                   "and complete (%.3f s)",
                   o.t_s, seen_s);
    if (barred[0])
        invalidate(&o, "%s", barred);
    else if (unjudged[0])
        invalidate(&o, "%s", unjudged);
    if (barred[0] || unjudged[0])
        o.score.m_s = NAN;
    if (o.valid && round_check(k, &o, err, sizeof err)) {
        give_back(k, EEB_QUOTA_SCORED, charged);
        return eeb_srv_call_fail(k, 500, NULL, err);
    }
    struct eeb_srv_run *r = &k->run;
    snprintf(r->verdict, sizeof r->verdict, "%s", eeb_run_verdict(&o, 0));
    snprintf(r->why, sizeof r->why, "%s", o.why);
    r->s = o.pass ? o.score.s : NAN;
    r->m_u = o.score.m_u, r->m_t = o.score.m_t, r->m_p = o.score.m_p, r->m_s = o.score.m_s;
    r->t_s = o.t_s, r->energy_j = o.energy_j, r->s_uncertainty = o.s_uncertainty;
    /* the verdict in the run's record, as `eeb run` stores one; the
     * utilization was declared at registration, or modeled by the server */
    char *score = score_json(&o);
    int moved = eeb_srv_store_run_scored(
        k->s->store, r, &o, r->schedule_steps ? "modeled" : "declared", score, err, sizeof err);
    free(score);
    if (moved <= 0)
        give_back(k, EEB_QUOTA_SCORED, charged);
    if (moved < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (!moved) /* scored by a request racing this one: its verdict stands */
        return eeb_srv_call_fail(k, 409, "state", "the run was scored meanwhile");
    snprintf(r->state, sizeof r->state, "scored");
    atomic_fetch_add(&k->s->changes, 1); /* the leaderboard's answers are stale */
    char said[48] = ", no S";
    if (!isnan(r->s))
        snprintf(said, sizeof said, ", S = %.6g", r->s);
    eeb_srv_log(k->s, "run %lld scored: %s%s%s%s", (long long)r->id, r->verdict, said,
                r->why[0] ? ": " : "", r->why);
    return eeb_srv_call_json(k, 200, run_json(r));
}
