/*
 * register.c - POST /api/v1/runs: what a team declares of its run, checked
 * field by field, and held to the server's sets, base model, round and
 * meter; a modeled run's device modeled again and its steps counted; the
 * run stored with the configuration the judge will read, and the budgets
 * and rules it is held to answered.
 */
#include "server_int.h"

#include "fpga/accel/eeb_accel.h"
#include "fpga/model/eeb_perf.h"
#include "fpga/net/eeb_net.h"
#include "rundb/eeb_config_record.h"
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

/* ---- register ---- */

/* What a team declares of its run when it registers it. */
struct declared {
    enum eeb_task task;
    double util[EEB_UTIL_COUNT];
    const char *provenance, *device, *backend, *design;
    const char *finetune; /* the fine-tune set's SHA-256, or NULL */
    int64_t shape[5];     /* its items' frames, w, h, c and classes (frames 0: not said) */
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
    /* the system under test as it names itself (NULL: not said, as an
     * official run, which says it at begin once its SUT is open) */
    const char *system_name, *system_version;
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

/* "finetune_shape": {"frames", "w", "h", "c", "classes"}: the items the
 * run will fine-tune on, which the server's test set must match. */
static int read_shape(const json_t *o, struct declared *d, struct eeb_srv_fault *f)
{
    static const char *const keys[] = {"frames", "w", "h", "c", "classes"};
    static const int64_t most[] = {1024, 65536, 65536, 4, 100000};
    if (!o)
        return 0;
    if (!json_is_object(o) || json_object_size(o) != 5)
        return eeb_srv_bad(f, "finetune_shape",
                           "expected {\"frames\", \"w\", \"h\", \"c\", \"classes\"}");
    for (int i = 0; i < 5; i++) {
        char at[40];
        snprintf(at, sizeof at, "finetune_shape.%s", keys[i]);
        if (eeb_srv_int_field(json_object_get(o, keys[i]), at, 1, most[i], &d->shape[i], f))
            return -1;
    }
    return 0;
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
    if (read_clock(json_object_get(body, "clock"), d, f) ||
        read_shape(json_object_get(body, "finetune_shape"), d, f) ||
        eeb_srv_system_field(json_object_get(body, "system"), &d->system_name, &d->system_version,
                             f))
        return -1;
    if (d->modeled_clock && util)
        return eeb_srv_bad(f, "util",
                           "a modeled run's M_u is its design's, which the server models: send "
                           "none");
    if (!d->modeled_clock && !util)
        return eeb_srv_bad(f, "util", "expected an object of four fractions: lut, ff, bram, dsp");
    static const char *const known[] = {"task",     "util",    "provenance",     "rate_hz",
                                        "official", "device",  "backend",        "design",
                                        "finetune", "model",   "clock",          "entry",
                                        "division", "p_max_w", "finetune_shape", "system"};
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
    if (o && seed > 0) /* handed to the run (eeb_srv_store_run_seeds) */
        json_object_set_new(json_object_get(o, "server"), "seed", json_integer(seed));
    if (o && round) /* the entry it is a run of, and the seed it was handed */
        json_object_set_new(json_object_get(o, "server"), "round",
                            json_pack("{s:s, s:s, s:s, s:I}", "name", round->name, "entry",
                                      d->entry, "division", d->division, "seed", (json_int_t)seed));
    if (o) {
        eeb_config_put_backend(o, d->backend, d->provenance);
        if (d->system_name) /* the team's words, kept printable */
            eeb_config_put_sut(o, d->system_name, d->system_version,
                               eeb_sut_kind_name(eeb_sut_kind_recorded(d->backend)), NULL, NULL);
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
        eeb_config_put_input(o, "test", NULL, NULL,
                             eeb_srv_judged_on(s, (int)d->task, r->official)->n);
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
                        json_integer((json_int_t)eeb_srv_judged_on(s, r->task, r->official)->n));
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

/* The fine-tune set a run says it holds can be tested on the server's test
 * set: items of one shape and as many classes; else it is refused before
 * anything runs, not at its test stage.  0, or the 409 sent. */
static int shape_agrees(struct eeb_srv_call *k, const struct declared *d,
                        const struct eeb_srv_testset *t, enum MHD_Result *sent)
{
    const int64_t *x = d->shape;
    if (!x[0] ||
        (x[0] == t->frames && x[1] == t->w && x[2] == t->h && x[3] == t->c && x[4] == t->classes))
        return 0;
    char msg[320];
    snprintf(msg, sizeof msg,
             "the run's fine-tune set holds items of %lld frame(s) of %lldx%lldx%lld in %lld "
             "classes; this server's %s test set, %d frame(s) of %dx%dx%d in %d classes: a model "
             "fine-tuned on the one cannot be tested on the other",
             (long long)x[0], (long long)x[1], (long long)x[2], (long long)x[3], (long long)x[4],
             eeb_task_name(d->task), t->frames, t->w, t->h, t->c, t->classes);
    *sent = eeb_srv_call_fail(k, 409, "finetune_shape", msg);
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
    /* every official run is handed its seed: its shuffling, its rounding
     * and the training audit's slice are not the team's pick */
    uint32_t seed;
    if (eeb_random_bytes(&seed, sizeof seed, err, sizeof err)) {
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
        return -1;
    }
    c->seed = (int64_t)(seed >> 1) + 1; /* 1 to 2^31: any seed eeb run takes */
    if (!found && !rounds)
        return 0;
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

/* The registration's answer: the run, its terms, the seed it is handed
 * (an official run), and in a round its place there. */
static json_t *registered_json(struct eeb_srv_call *k, const struct eeb_srv_run *r,
                               const struct eeb_round *round, const struct eeb_srv_claim *c)
{
    json_t *o = eeb_srv_run_json(r);
    add_terms(o, k->s, r);
    if (o && c && c->seed > 0)
        json_object_set_new(o, "seed", json_integer(c->seed));
    if (o && c && c->round)
        json_object_set_new(
            o, "round",
            json_pack("{s:s, s:s, s:s, s:i, s:i, s:s, s:I}", "name", round->name, "entry", c->entry,
                      "division", c->division, "run", c->index, "of", round->runs, "aggregate",
                      eeb_round_aggregate_name(round->aggregate), "seed", (json_int_t)c->seed));
    return o;
}

/* The set the run will be judged on, or the 409 sent: an official run
 * needs the secret test set, any other run the practice set (a rehearsal
 * is never judged on the secret labels, so no score tells of them). */
static const struct eeb_srv_testset *set_for(struct eeb_srv_call *k, const struct declared *d,
                                             enum MHD_Result *sent)
{
    const struct eeb_srv_testset *t = eeb_srv_judged_on(k->s, d->task, d->official);
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
    const struct eeb_srv_testset *t;
    char err[256];
    if (read_declared(body, &d, &f)) {
        sent = eeb_srv_fail_fault(k, &f);
    } else if ((t = set_for(k, &d, &sent)) && shape_agrees(k, &d, t, &sent) == 0 &&
               (!d.official || take_round(k, &d, &round, &claim, &sent) == 0) &&
               finetune_agrees(k, &d, &sent) == 0 &&
               model_agrees(k, &d, claim.round && strcmp(d.division, "open") == 0, &sent) == 0 &&
               eeb_srv_take_quota(k, EEB_QUOTA_REGISTRATIONS, 1, &sent) &&
               /* a meter that does not answer registers nothing: the quota back */
               (read_meter(k, &d, &m, &sent) == 0 ||
                (eeb_srv_give_back(k, EEB_QUOTA_REGISTRATIONS, 1), 0))) {
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
            eeb_srv_give_back(k, EEB_QUOTA_REGISTRATIONS, 1);
        if (started && !registered) /* held, but for no run */
            eeb_srv_meter_drop(k->s, m.meter_run);
        else if (!started && m.meter_run) /* opened, never held */
            eeb_srv_meter_close(k->s, &m);
        free(config);
    }
    json_decref(body);
    return sent;
}
