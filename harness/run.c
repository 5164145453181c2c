/*
 * run.c - the run lifecycle (DESIGN.md §2): INIT, DEPLOY, FINETUNE under
 * the T_max deadline and the live P_max watch, STOPPED, TEST, SCORE.
 *
 * The harness owns the clock (MLPerf LoadGen): fine-tuning runs on a worker
 * thread that takes one batch at a time; this thread waits on absolute
 * CLOCK_MONOTONIC deadlines, signals "complete" at T_max (the worker stops
 * at its next batch boundary) and abandons an accelerator that has not
 * returned by T_max plus the grace period.  Every stage boundary is an
 * event on the samples' clock.  Sections: the pieces of a run, fine-tuning,
 * testing, scoring, the whole.
 */
#include "eeb_run.h"

#include "eeb_client.h"
#include "fpga/host/eeb_model.h"
#include "fpga/model/eeb_perf.h"
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_classes.h"
#include "tasks/eeb_tasks.h"
#include "fpga/tools/eeb_xclbin.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIVE_EVERY_NS   100000000LL  /* the control loop's tick */
#define TRAIN_EVERY_NS  250000000LL  /* a "train" event (the loss curve), at least */
#define MAX_SHARD_BYTES (8ULL << 30) /* a fine-tune shard held in memory */
#define PRED_BATCH      256          /* predictions per transaction */

/* ---- the pieces of a run ---- */

struct run {
    const struct eeb_run_config *c; /* cfg, which official mode sets from the server */
    struct eeb_run_config cfg;
    const struct eeb_run_hooks *hooks;
    struct eeb_run_outcome *out;
    struct eeb_rules rules;
    struct eeb_util util;
    const struct eeb_accel_ops *ops;
    struct eeb_power_source *src;
    struct eeb_rundb *db;
    int64_t id;
    struct eeb_sampler *sampler; /* while sampling */
    struct eeb_net *net;
    struct eeb_perf perf; /* the device the analytical model predicts */
    int modeled_device;   /* perf is set */
    char *xclbin_design;  /* the xclbin's design as k=v,..., or NULL */
    struct eeb_accel *acc;
    struct eeb_shard *shard;
    struct eeb_batcher *bt;
    char sha_model[EEB_SHA256_HEX], sha_finetune[EEB_SHA256_HEX], sha_test[EEB_SHA256_HEX];
    char sha_xclbin[EEB_SHA256_HEX];
    uint64_t finetune_items, test_items;
    int64_t ft_begin, ft_end; /* the metered window */
    int abandoned;            /* the worker still holds acc, bt and net */
    char test_inputs[4200];   /* official mode: the server's test inputs, downloaded */
    int submitting;           /* official mode: the record is being sent */
    int unlogged;             /* fine-tuning stopped: the power log could not be written */
};

/* The server drives the run (eeb run --server). */
static int official(const struct run *r)
{
    return r->c->server != NULL;
}

/* An event's payload as text (free it); takes payload, which may be NULL. */
static char *dump(json_t *payload)
{
    char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(payload);
    return text;
}

/* Records an event now and returns its time: on the sampler's queue while
 * it runs (its clock, its writer), else through this connection.  Takes
 * payload (may be NULL). */
static int64_t event(struct run *r, const char *kind, json_t *payload)
{
    char *text = dump(payload);
    int64_t t;
    if (r->sampler) {
        t = eeb_sampler_mark(r->sampler, kind, text);
    } else {
        char err[256];
        t = eeb_mono_ns();
        /* an event lost to a failing disk shows up as the run's own error */
        (void)eeb_rundb_event_add(r->db, r->id, t, eeb_utc_ns(), kind, text, err, sizeof err);
    }
    free(text);
    return t;
}

static int enter(struct run *r, enum eeb_run_state state, char *err, size_t errlen)
{
    int rc = eeb_rundb_run_set_state(r->db, r->id, state, err, errlen);
    if (rc == EEB_OK)
        event(r, EEB_EVENT_STATE, json_pack("{s:s}", "state", eeb_rundb_state_name(state)));
    return rc;
}

static void progress(struct run *r, struct eeb_run_progress *p)
{
    if (r->hooks && r->hooks->progress)
        r->hooks->progress(p, r->hooks->arg);
}

static int cancelled(const struct run *r)
{
    return r->hooks && r->hooks->cancel && *r->hooks->cancel;
}

static json_t *input(const char *path, const char *sha256, uint64_t items)
{
    json_t *o = json_pack("{s:s, s:s}", "path", path, "sha256", sha256);
    if (o && items)
        json_object_set_new(o, "items", json_integer((json_int_t)items));
    return o;
}

/* The modeled device: the configuration's and the "device_model" event's. */
static json_t *device_model_json(const struct run *r)
{
    const struct eeb_perf *p = &r->perf;
    return json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:{s:f, s:f, s:f, s:f}}", "design",
                     r->out->design, "train_step_s", p->train_step_s, "predict_batch_s",
                     p->predict_batch_s, "train_w", p->train_power_w, "predict_w",
                     p->predict_power_w, "idle_w", p->idle_power_w, "resources", "lut", p->res.lut,
                     "ff", p->res.ff, "bram", p->res.bram, "dsp", p->res.dsp);
}

/* The resolved configuration, as stored with the run (keys in order). */
static char *config_json(const struct run *r)
{
    const struct eeb_run_config *c = r->c;
    const struct eeb_weights *w = &r->rules.weights[c->task];
    const struct eeb_util *u = &r->util;
    json_t *o = json_object();
    json_object_set_new(o, "task", json_string(eeb_task_name((enum eeb_task)c->task)));
    json_object_set_new(o, "eeb",
                        json_pack("{s:s, s:s}", "version", EEB_VERSION, "build", eeb_build()));
    json_object_set_new(o, "backend", json_string(r->ops->name));
    json_object_set_new(o, "provenance", json_string(r->out->provenance));
    json_object_set_new(o, "model", input(c->model, r->sha_model, 0));
    if (c->xclbin)
        json_object_set_new(o, "xclbin", input(c->xclbin, r->sha_xclbin, 0));
    json_object_set_new(o, "finetune", input(c->finetune, r->sha_finetune, r->finetune_items));
    if (official(r)) {
        json_object_set_new(
            o, "official",
            json_pack("{s:s, s:I}", "server", c->server, "run_id", (json_int_t)r->out->server_run));
        json_object_set_new(
            o, "test",
            json_pack("{s:s, s:I}", "from", c->server, "items", (json_int_t)r->test_items));
    } else {
        json_object_set_new(o, "test", input(c->test, r->sha_test, r->test_items));
    }
    /* the keys eeb_power_summarize reads */
    json_t *power = json_pack("{s:s, s:f, s:s}", "source", r->src->uri, "rate_hz", c->rate_hz,
                              "provenance", r->out->provenance);
    if (power && r->src->note) /* what the source skipped of a recorded trace */
        json_object_set_new(power, "note", json_string(r->src->note));
    json_object_set_new(o, "power", power);
    json_object_set_new(o, "budgets",
                        json_pack("{s:f, s:f, s:f, s:b}", "t_max_s", c->t_max_s, "p_max_w",
                                  c->p_max_w, "grace_s", c->grace_s, "abort_on_pmax",
                                  c->abort_on_pmax));
    json_t *t = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "epochs", c->epochs, "batch",
                          c->batch, "frozen", c->frozen, "window", c->window, "lr", c->lr,
                          "momentum", c->momentum, "decay", c->decay, "seed", c->seed);
    json_object_set_new(t, "steps", isnan(c->steps) ? json_null() : json_real(c->steps));
    json_object_set_new(o, "training", t);
    json_object_set_new(o, "util",
                        json_pack("{s:f, s:f, s:f, s:f, s:s, s:s}", "lut", u->frac[EEB_UTIL_LUT],
                                  "ff", u->frac[EEB_UTIL_FF], "bram", u->frac[EEB_UTIL_BRAM], "dsp",
                                  u->frac[EEB_UTIL_DSP], "source", r->out->util_source, "kind",
                                  strcmp(u->family, "given") == 0 ? "declared" : "report"));
    json_object_set_new(o, "declared_power_w",
                        isnan(c->declared_power_w) ? json_null() : json_real(c->declared_power_w));
    if (r->modeled_device)
        json_object_set_new(o, "device_model", device_model_json(r));
    json_object_set_new(o, "rules",
                        json_pack("{s:s, s:s?, s:{s:f, s:f, s:f, s:f}, s:f, s:f}", "version",
                                  r->rules.version, "file", c->rules, "weights", "u", w->u, "t",
                                  w->t, "p", w->p, "s", w->s, "power_window_s",
                                  r->rules.power.window_s, "min_rate_hz",
                                  r->rules.power.min_rate_hz));
    json_object_set_new(o, "outputs",
                        json_pack("{s:s, s:s?, s:s?, s:s?}", "db", c->db, "report", c->report,
                                  "save_model", c->save_model, "predictions", c->predictions));
    char *text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

/* The shard holds records of the run's task; *items, how many. */
static int shard_fits(const struct eeb_shard *s, const struct eeb_run_config *c, uint64_t *items,
                      char *err, size_t errlen)
{
    const struct eeb_shard_info *in = eeb_shard_info(s);
    *items = in->count;
    if (in->task != (enum eeb_task)c->task)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s data; the run's task is %s",
                        eeb_shard_path(s), eeb_task_name(in->task), eeb_task_name(c->task));
    if (in->count == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no records", eeb_shard_path(s));
    return EEB_OK;
}

/* The test shard at path: hashed, and fit for the run, with the fine-tune
 * shard's classes in the same order (the model's outputs are positions). */
static int hash_test(struct run *r, const char *path, char *err, size_t errlen)
{
    struct eeb_shard *test;
    int rc = eeb_sha256_file(path, r->sha_test, err, errlen);
    if (rc || (rc = eeb_shard_open(&test, path, err, errlen)))
        return rc;
    rc = shard_fits(test, r->c, &r->test_items, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_classes_compare(eeb_shard_info(r->shard), r->c->finetune, eeb_shard_info(test),
                                 path, err, errlen);
    eeb_shard_close(test);
    return rc;
}

/* The model file, read once: the bytes hashed are the bytes decoded. */
static int read_model(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    char *bytes;
    size_t len;
    int rc = eeb_read_file(c->model, EEB_MODEL_MAX_BYTES, &bytes, &len, err, errlen), task;
    if (rc)
        return rc;
    eeb_sha256(bytes, len, r->sha_model);
    rc = eeb_model_decode((const uint8_t *)bytes, len, c->model, &r->net, &task, err, errlen);
    free(bytes);
    if (rc == EEB_OK && task != c->task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s is not a %s model", c->model,
                      eeb_task_name(c->task));
    return rc;
}

/* The xclbin, read once: hashed, and (without --util, --design) its
 * utilization and design taken from the same bytes. */
static int read_xclbin(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    char *bytes;
    size_t len;
    int rc = eeb_read_file(c->xclbin, EEB_XCLBIN_MAX_BYTES, &bytes, &len, err, errlen);
    if (rc)
        return rc;
    eeb_sha256(bytes, len, r->sha_xclbin);
#ifdef EEB_HAVE_XRT
    struct eeb_xclbin_info *in = NULL;
    rc = eeb_xclbin_parse((const uint8_t *)bytes, len, c->xclbin, &in, err, errlen);
    if (rc == EEB_OK && !c->util) {
        char source[256], why[512];
        if ((rc = eeb_xclbin_util(in, &r->util, source, sizeof source, why, sizeof why)))
            eeb_errf(err, errlen, rc, "%s: %s", c->xclbin, why);
        else
            snprintf(r->out->util_source, sizeof r->out->util_source, "%s (%s)", c->xclbin, source);
    }
    if (rc == EEB_OK && !c->design)
        rc = eeb_xclbin_design(in, &r->xclbin_design, err, errlen);
    if (in)
        eeb_xclbin_info_free(in);
#else
    if (!c->util)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "no --util given (this eeb reads no xclbin)");
#endif
    free(bytes);
    return rc;
}

/* The analytical model's device: the design (--design, else the xclbin's)
 * on the run's network, batch and frozen layers; M_u from its resources
 * without --util or an xclbin's. */
static int model_device(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    const char *spec = c->design ? c->design : r->xclbin_design;
    int util_known = r->out->util_source[0] != '\0'; /* --util's, or the xclbin's */
    if (!spec)
        return util_known ? EEB_OK
                          : eeb_errf(err, errlen, EEB_EINVAL,
                                     "%s has no design to model: give --design", c->xclbin);
    struct eeb_design d;
    int rc = eeb_design_for(&d, spec, r->net, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_perf_model(&d, r->net, (int)c->batch, (int)c->frozen, &r->perf, err, errlen);
    if (rc)
        return rc;
    r->modeled_device = 1;
    eeb_design_format(&d, r->out->design, sizeof r->out->design);
    if (util_known)
        return EEB_OK;
    char util[128];
    eeb_resources_spec(&r->perf.res, util, sizeof util);
    snprintf(r->out->util_source, sizeof r->out->util_source, "modeled: %.480s", r->out->design);
    return eeb_score_util_from_spec(util, &r->util, err, errlen);
}

/* A "sim:profile=model" source follows the modeled device's power; any
 * other source is left alone. */
static void drive(struct run *r, double watts)
{
    if (r->modeled_device)
        (void)eeb_power_sim_drive(r->src, watts, watts / 100);
}

/* INIT: everything that can be checked before a run exists, and the
 * fine-tune data read into memory. */
static int prepare(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc;
    if ((rc = eeb_score_rules_load(c->rules, &r->rules, err, errlen)))
        return rc;
    if (c->util) {
        snprintf(r->out->util_source, sizeof r->out->util_source, "%s", c->util);
        if ((rc = eeb_score_util_arg(c->util, &r->util, NULL, err, errlen)))
            return rc;
    }
    if ((rc = read_model(r, err, errlen)) || (c->xclbin && (rc = read_xclbin(r, err, errlen))) ||
        (rc = model_device(r, err, errlen)))
        return rc;
    r->ops = r->hooks && r->hooks->backend ? r->hooks->backend : eeb_accel_find(c->backend);
    if (!r->ops) {
        char names[128] = "";
        for (const struct eeb_accel_ops *const *b = eeb_accel_list(); *b; b++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     names[0] ? ", " : "", (*b)->name);
        return eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': not built in (have %s)", c->backend,
                        names);
    }
    if (official(r) != (r->hooks && r->hooks->server))
        return eeb_errf(err, errlen, EEB_EINVAL, "official mode needs the server and its client");
    /* the fine-tune shard is read once, into memory, and hashed from there:
     * the bytes hashed are the bytes trained on, loaded outside the window */
    if ((rc = eeb_shard_load(&r->shard, c->finetune, MAX_SHARD_BYTES, r->sha_finetune, err,
                             errlen)) ||
        (rc = shard_fits(r->shard, c, &r->finetune_items, err, errlen)) ||
        (!official(r) && (rc = hash_test(r, c->test, err, errlen))))
        return rc;
    /* the emulators and XRT's noop shim: the CPU's times, a modeled power */
    snprintf(r->out->provenance, sizeof r->out->provenance, "%s",
             eeb_accel_on_hardware(r->ops) ? "" : "modeled");
    /* without --power, the modeled device's power, from idle on */
    char uri[96];
    if (!c->power && !r->modeled_device)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no --power, and no design to model one from",
                        c->xclbin ? c->xclbin : c->model);
    if (!c->power)
        snprintf(uri, sizeof uri, "sim:profile=model,watts=%.6g,seed=%.17g", r->perf.idle_power_w,
                 c->seed);
    if ((rc = eeb_power_open(c->power ? c->power : uri, &r->src, err, errlen)))
        return rc;
    if (!r->out->provenance[0])
        snprintf(r->out->provenance, sizeof r->out->provenance, "%s",
                 eeb_provenance_name(r->src->provenance));
    return EEB_OK;
}

/* A number of the server's answer at a/b (b NULL: at a), if positive. */
static double positive_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    v = b ? json_object_get(v, b) : v;
    return json_is_number(v) && json_number_value(v) > 0 ? json_number_value(v) : NAN;
}

/* What the server holds a registered run to: its budgets and rules. */
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
    char *config = config_json(r);
    json_t *declared = config ? eeb_client_declaration(config, 1) : NULL, *reply = NULL;
    free(config);
    int rc = declared ? eeb_client_call(cl, "POST", "/api/v1/runs", declared, &reply, err, errlen)
                      : eeb_errf(err, errlen, EEB_ENOMEM, "the registration: out of memory");
    if (rc == EEB_OK)
        rc = take_terms(r, reply, err, errlen);
    if (rc == EEB_OK && cl->log)
        fprintf(cl->log,
                "eeb: official run %lld on %s: T_max %g s, P_max %g W, rules %s, %llu test items\n",
                (long long)r->out->server_run, cl->url, r->c->t_max_s, r->c->p_max_w,
                r->rules.version, (unsigned long long)r->test_items);
    json_decref(declared);
    json_decref(reply);
    return rc;
}

static int create(struct run *r, char *err, size_t errlen)
{
    char *config = config_json(r);
    if (!config)
        return eeb_errf(err, errlen, EEB_ENOMEM, "the run's configuration: out of memory");
    struct eeb_run_new n = {.task = (enum eeb_task)r->c->task,
                            .backend = r->ops->name,
                            .config_json = config,
                            .t_max_s = r->c->t_max_s,
                            .p_max_w = r->c->p_max_w,
                            .rules_version = r->rules.version};
    int rc = eeb_rundb_open(r->c->db, EEB_RUNDB_READWRITE, &r->db, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_create(r->db, &n, &r->id, r->out->uuid, err, errlen);
    free(config);
    if (rc == EEB_OK) {
        r->out->run = r->id;
        r->out->t_max_s = r->c->t_max_s, r->out->p_max_w = r->c->p_max_w;
        event(r, EEB_EVENT_STATE,
              json_pack("{s:s, s:s, s:s}", "state", "init", "eeb", EEB_VERSION, "build",
                        eeb_build()));
    }
    return rc;
}

/* DEPLOY: the model onto the accelerator. */
static int deploy(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc;
    if ((rc = enter(r, EEB_RUN_DEPLOY, err, errlen)))
        return rc;
    if (r->modeled_device)
        event(r, EEB_EVENT_DEVICE_MODEL, device_model_json(r));
    if ((rc = eeb_task_check_model(r->net, eeb_shard_info(r->shard), err, errlen)))
        return rc;
    struct eeb_accel_config ac;
    eeb_accel_config_default(&ac);
    ac.batch_max = (int)c->batch;
    ac.frozen = (int)c->frozen;
    ac.lr = c->lr, ac.momentum = c->momentum, ac.weight_decay = c->decay;
    ac.seed = (uint64_t)c->seed;
    ac.xclbin = c->xclbin;
    ac.device = (int)c->device;
    if ((rc = r->ops->open(&ac, &r->acc, err, errlen)))
        return rc;
    if ((rc = r->acc->ops->load_model(r->acc, r->net, err, errlen)) ||
        (rc = eeb_batcher_new(&r->bt, r->shard, r->net, (int)c->batch, (int)c->window,
                              (uint64_t)c->seed, err, errlen)))
        return rc;
    struct eeb_accel_stats st = {0};
    r->acc->ops->stats(r->acc, &st);
    snprintf(r->out->backend_detail, sizeof r->out->backend_detail, "%s", st.detail);
    event(r, EEB_EVENT_DEPLOYED,
          json_pack("{s:s, s:s, s:I}", "backend", r->ops->name, "detail", st.detail,
                    "finetune_items", (json_int_t)r->finetune_items));
    return EEB_OK;
}

/* ---- fine-tuning ---- */

/* What the fine-tuning thread owns.  It never touches the run: if it is
 * abandoned (a hung accelerator), the run goes on to fail and return while
 * this thread may still be inside the backend. */
struct worker {
    struct eeb_accel *acc;
    struct eeb_batcher *bt;
    const struct eeb_net *net;
    struct eeb_sampler *sampler;
    int epochs;
    long max_steps; /* -1: no limit */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* the worker returned (CLOCK_MONOTONIC waits) */
    atomic_int stop;     /* "complete": stop at the next batch boundary */
    int done, rc, abandoned;
    char err[512];
    int epoch;
    long step;
    uint64_t items;
    double loss_sum; /* since the last "train" event */
    long loss_items;
    double last_loss;
};

/* An event from the worker, unless it was abandoned (the sampler may be
 * gone). */
static void worker_event(struct worker *w, const char *kind, json_t *payload)
{
    char *text = dump(payload);
    pthread_mutex_lock(&w->lock);
    if (!w->abandoned)
        eeb_sampler_mark(w->sampler, kind, text);
    pthread_mutex_unlock(&w->lock);
    free(text);
}

static void *train(void *arg)
{
    struct worker *w = arg;
    int rc = EEB_OK;
    char err[512] = "";
    long step = 0;
    for (int epoch = 1; epoch <= w->epochs && rc == EEB_OK; epoch++) {
        if (epoch > 1 && (rc = eeb_batcher_rewind(w->bt, err, sizeof err)))
            break;
        pthread_mutex_lock(&w->lock);
        w->epoch = epoch;
        pthread_mutex_unlock(&w->lock);
        double loss = 0;
        long items = 0, correct = 0, targets = 0;
        int finished = 0;
        while (step != w->max_steps && !atomic_load(&w->stop)) {
            struct eeb_batch b;
            struct eeb_train_result tr;
            if ((rc = eeb_batcher_next(w->bt, &b, err, sizeof err)))
                break;
            if (b.n == 0) {
                finished = 1;
                break;
            }
            if ((rc = w->acc->ops->train_batch(w->acc, &b, &tr, err, sizeof err)))
                break;
            if (!isfinite(tr.loss)) {
                rc = eeb_errf(err, sizeof err, EEB_EINVAL,
                              "step %ld: the loss diverged (lower --lr)", step + 1);
                break;
            }
            step++;
            loss += tr.loss * b.n, items += b.n;
            correct += tr.correct, targets += eeb_task_targets(w->net, &b);
            pthread_mutex_lock(&w->lock);
            w->step = step, w->items += (uint64_t)b.n;
            w->loss_sum += tr.loss * b.n, w->loss_items += b.n;
            w->last_loss = tr.loss;
            pthread_mutex_unlock(&w->lock);
        }
        if (rc || items == 0)
            break;
        worker_event(w, finished ? EEB_EVENT_EPOCH_END : EEB_EVENT_EPOCH_PARTIAL,
                     json_pack("{s:i, s:I, s:f, s:f}", "epoch", epoch, "step", (json_int_t)step,
                               "loss", loss / items, "train_metric",
                               targets ? (double)correct / targets : 0.0));
        if (!finished)
            break;
    }
    pthread_mutex_lock(&w->lock);
    w->done = 1, w->rc = rc;
    snprintf(w->err, sizeof w->err, "%s", err);
    int abandoned = w->abandoned;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (abandoned) {
        /* nobody waits for it any more; the backend's state is unknown and
         * is left to the process's end */
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
    }
    return NULL;
}

static struct timespec abs_ts(int64_t ns)
{
    return (struct timespec){ns / 1000000000, ns % 1000000000};
}

/* Waits until the worker is done or the time `until`; 1 if done. */
static int wait_worker(struct worker *w, int64_t until)
{
    pthread_mutex_lock(&w->lock);
    struct timespec ts = abs_ts(until);
    while (!w->done && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT) {
    }
    int done = w->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

/* The live power watch: the mean over the last second of the sampler's
 * running energy, from a history of (seconds, joules) taken every tick. */
struct watch {
    double t[64], j[64];
    unsigned n;
};

static double watch_mean(struct watch *wt, const struct eeb_sampler_live *l, double window_s)
{
    wt->t[wt->n % 64] = l->seconds, wt->j[wt->n % 64] = l->joules;
    wt->n++;
    for (unsigned k = 1; k < 64 && k < wt->n; k++) {
        unsigned i = (wt->n - 1 - k) % 64;
        if (l->seconds - wt->t[i] >= window_s)
            return (l->joules - wt->j[i]) / (l->seconds - wt->t[i]);
    }
    return NAN; /* less than a window so far */
}

/* Why fine-tuning ended, for the "complete" event and the outcome. */
enum ending { DONE, TMAX, PMAX, CANCELLED, FAILED, UNLOGGED };

static struct worker *worker_new(struct run *r)
{
    struct worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->acc = r->acc, w->bt = r->bt, w->net = r->net, w->sampler = r->sampler;
    w->epochs = (int)r->c->epochs;
    w->max_steps = isnan(r->c->steps) ? -1 : (long)r->c->steps;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    return w;
}

static void worker_free(struct worker *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* One tick of the control loop: the live P_max watch, the loss curve's
 * "train" event, the progress hook.  Returns DONE to go on, PMAX to stop
 * on P_max, UNLOGGED when the power log can no longer be written. */
struct control {
    struct watch wt;
    double pmax_seen; /* the first live mean above P_max, or 0 */
    long reported_step;
    int64_t train_every, next_train, next_show, show_every;
};

static enum ending tick(struct run *r, struct worker *w, struct control *k, int64_t now)
{
    const struct eeb_run_config *c = r->c;
    struct eeb_sampler_live l;
    eeb_sampler_live(r->sampler, &l);
    if (l.write_failed) /* a full disk: fine-tuning on would be unmetered */
        return UNLOGGED;
    double mean = watch_mean(&k->wt, &l, r->rules.power.window_s);
    if (mean > c->p_max_w && !k->pmax_seen) {
        k->pmax_seen = mean;
        event(r, EEB_EVENT_PMAX_EXCEEDED,
              json_pack("{s:f, s:f, s:f}", "watts", mean, "p_max_w", c->p_max_w, "window_s",
                        r->rules.power.window_s));
        if (c->abort_on_pmax)
            return PMAX;
    }
    pthread_mutex_lock(&w->lock);
    struct eeb_run_progress p = {.state = EEB_RUN_FINETUNE,
                                 .epoch = w->epoch,
                                 .epochs = w->epochs,
                                 .step = w->step,
                                 .steps = w->max_steps,
                                 .elapsed_s = (double)(now - r->ft_begin) / 1e9,
                                 .t_max_s = c->t_max_s,
                                 .watts = l.watts,
                                 .reading_age_s = l.last_ns ? (double)(now - l.last_ns) / 1e9 : NAN,
                                 .p_max_w = c->p_max_w,
                                 .joules = l.joules,
                                 .loss = w->last_loss,
                                 .over_pmax = k->pmax_seen > 0};
    json_t *train_ev = NULL;
    if (now >= k->next_train && w->loss_items > 0 && w->step != k->reported_step) {
        train_ev =
            json_pack("{s:i, s:I, s:I, s:f}", "epoch", w->epoch, "step", (json_int_t)w->step,
                      "items", (json_int_t)w->items, "loss", w->loss_sum / (double)w->loss_items);
        w->loss_sum = 0, w->loss_items = 0;
        k->reported_step = w->step;
        k->next_train = now + k->train_every;
    }
    pthread_mutex_unlock(&w->lock);
    if (train_ev)
        event(r, EEB_EVENT_TRAIN, train_ev);
    if (now >= k->next_show) {
        progress(r, &p);
        k->next_show = now + k->show_every;
    }
    return DONE;
}

static int finetune(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    struct eeb_run_outcome *out = r->out;
    int rc = enter(r, EEB_RUN_FINETUNE, err, errlen);
    if (rc)
        return rc;
    struct worker *w = worker_new(r);
    if (!w)
        return eeb_errf(err, errlen, EEB_ENOMEM, "fine-tuning: out of memory");
    drive(r, r->perf.train_power_w);
    r->ft_begin = event(r, EEB_EVENT_FINETUNE_BEGIN, json_pack("{s:f}", "t_max_s", c->t_max_s));
    int64_t deadline = r->ft_begin + (int64_t)(c->t_max_s * 1e9);
    pthread_t th;
    if (pthread_create(&th, NULL, train, w) != 0) {
        r->ft_end = event(r, EEB_EVENT_FINETUNE_END, NULL);
        worker_free(w);
        return eeb_errf(err, errlen, EEB_ENOMEM, "cannot start the fine-tuning thread");
    }
    double every = r->hooks && r->hooks->progress_every_s > 0 ? r->hooks->progress_every_s : 0.25;
    struct control k = {
        .reported_step = -1, .next_show = r->ft_begin, .show_every = (int64_t)(every * 1e9)};
    /* a loss curve of about 400 points over T_max, none closer than 0.25 s */
    int64_t train_every = (int64_t)(c->t_max_s * 1e9 / 400);
    k.train_every = train_every > TRAIN_EVERY_NS ? train_every : TRAIN_EVERY_NS;
    k.next_train = r->ft_begin + k.train_every;
    enum ending ending = DONE;
    for (;;) {
        int64_t wake = eeb_mono_ns() + LIVE_EVERY_NS;
        if (wait_worker(w, wake < deadline ? wake : deadline))
            break;
        int64_t now = eeb_mono_ns();
        if (now >= deadline) {
            ending = TMAX;
            break;
        }
        if (cancelled(r)) {
            ending = CANCELLED;
            break;
        }
        if ((ending = tick(r, w, &k, now)) != DONE)
            break;
    }
    static const char *const why[] = {"done", "t_max", "p_max", "interrupted", "error", "unlogged"};
    atomic_store(&w->stop, 1);
    pthread_mutex_lock(&w->lock);
    long steps = w->step;
    if (ending == DONE && w->rc)
        ending = FAILED;
    pthread_mutex_unlock(&w->lock);
    json_t *complete = json_pack("{s:s, s:I}", "reason", why[ending], "step", (json_int_t)steps);
    if (ending == PMAX)
        json_object_set_new(complete, "watts", json_real(k.pmax_seen));
    event(r, EEB_EVENT_COMPLETE, complete);
    r->ft_end = event(r, EEB_EVENT_FINETUNE_END, NULL);
    drive(r, r->perf.idle_power_w);
    out->t_s = (double)(r->ft_end - r->ft_begin) / 1e9;
    out->tmax_reached = ending == TMAX;
    if (ending != DONE && ending != FAILED) {
        /* the batch in flight may finish, within the grace period */
        if (!wait_worker(w, r->ft_end + (int64_t)(c->grace_s * 1e9))) {
            pthread_mutex_lock(&w->lock);
            int done = w->done;
            w->abandoned = !done;
            pthread_mutex_unlock(&w->lock);
            if (!done) {
                r->abandoned = 1;
                pthread_detach(th);
                out->aborted = 1;
                event(r, EEB_EVENT_ABORT,
                      json_pack("{s:s}", "reason",
                                "the accelerator did not return within the grace "
                                "period"));
                return eeb_errf(err, errlen, EEB_ETIMEOUT,
                                "the accelerator did not return within %g s of the %s signal "
                                "(the grace period); it was abandoned",
                                c->grace_s, ending == TMAX ? "T_max" : "stop");
            }
        }
        event(r, EEB_EVENT_ACCELERATOR_STOPPED,
              json_pack("{s:f}", "after_s", (double)(eeb_mono_ns() - r->ft_end) / 1e9));
    }
    pthread_join(th, NULL);
    out->steps = (uint64_t)w->step;
    rc = w->rc ? eeb_errf(err, errlen, w->rc, "fine-tuning: %s", w->err) : EEB_OK;
    worker_free(w);
    r->unlogged = ending == UNLOGGED; /* stopping the sampler says why */
    if (rc || (ending != PMAX && ending != CANCELLED))
        return rc;
    out->aborted = 1;
    char reason[256] = "interrupted";
    if (ending == PMAX)
        snprintf(reason, sizeof reason,
                 "the live %g s mean power %.3f W exceeded P_max %g W (--abort-on-pmax)",
                 r->rules.power.window_s, k.pmax_seen, c->p_max_w);
    snprintf(out->why, sizeof out->why, "%s", reason);
    event(r, EEB_EVENT_ABORT, json_pack("{s:s}", "reason", reason));
    return EEB_OK;
}

/* ---- testing ---- */

struct predictions {
    struct run *r;
    int64_t items[PRED_BATCH];
    char *payloads[PRED_BATCH];
    size_t n;
    int64_t next_show;
};

static int flush_predictions(struct predictions *p, char *err, size_t errlen)
{
    int rc = p->n ? eeb_rundb_predictions_add(p->r->db, p->r->id, p->items,
                                              (const char *const *)p->payloads, p->n, err, errlen)
                  : EEB_OK;
    for (size_t i = 0; i < p->n; i++)
        free(p->payloads[i]);
    p->n = 0;
    return rc;
}

/* The payload eeb_run_check recomputes the metric from. */
static int keep_prediction(void *arg, const struct eeb_task_prediction *tp, char *err,
                           size_t errlen)
{
    struct predictions *p = arg;
    /* the server's test inputs hold no truth: it adds its own */
    int truth = !official(p->r);
    json_t *o = json_pack("{s:s}", "id", tp->id);
    if (tp->nranked) {
        json_t *top = json_array();
        for (int k = 0; k < tp->nranked; k++)
            json_array_append_new(top, json_integer(tp->ranked[k]));
        if (truth)
            json_object_set_new(o, "label", json_integer(tp->label));
        json_object_set_new(o, "top", top);
    } else {
        json_t *boxes = json_array(), *truths = json_array();
        for (int k = 0; k < tp->nboxes; k++) {
            const struct eeb_scored_box *b = &tp->boxes[k];
            json_array_append_new(boxes, json_pack("[i, f, f, f, f, f]", b->cls, b->score, b->x0,
                                                   b->y0, b->x1, b->y1));
        }
        for (int k = 0; k < tp->ntruth; k++) {
            const struct eeb_box *b = &tp->truth[k];
            json_array_append_new(truths, json_pack("[i, i, f, f, f, f]", b->cls, b->difficult,
                                                    b->x0, b->y0, b->x1, b->y1));
        }
        json_object_set_new(o, "boxes", boxes);
        if (truth)
            json_object_set_new(o, "truth", truths);
        else
            json_decref(truths);
    }
    char *s = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "prediction %s: out of memory", tp->id);
    p->items[p->n] = (int64_t)tp->index, p->payloads[p->n++] = s;
    return p->n == PRED_BATCH ? flush_predictions(p, err, errlen) : EEB_OK;
}

static void test_progress(uint64_t done, uint64_t total, void *arg)
{
    struct predictions *p = arg;
    int64_t now = eeb_mono_ns();
    if (now < p->next_show && done < total)
        return;
    p->next_show = now + 250000000;
    struct eeb_run_progress pr = {.state = EEB_RUN_TEST,
                                  .tested = done,
                                  .test_items = total,
                                  .reading_age_s = NAN,
                                  .t_max_s = p->r->c->t_max_s,
                                  .p_max_w = p->r->c->p_max_w};
    progress(p->r, &pr);
}

/* Official mode, at STOPPED: the server told fine-tuning is complete,
 * and its test inputs (no labels) downloaded beside the database. */
static int fetch_test_inputs(struct run *r, char *err, size_t errlen)
{
    struct eeb_client *cl = r->hooks->server;
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld/complete", (long long)r->out->server_run);
    int rc = eeb_client_call(cl, "POST", path, NULL, NULL, err, errlen);
    if (rc)
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
        (rc = hash_test(r, r->test_inputs, err, errlen)))
        return rc;
    if (r->test_items != registered)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s sent %llu test inputs; it registered the run with %llu", r->c->server,
                        (unsigned long long)r->test_items, (unsigned long long)registered);
    event(r, EEB_EVENT_TEST_INPUTS,
          json_pack("{s:s, s:s, s:I}", "from", r->c->server, "sha256", r->sha_test, "items",
                    (json_int_t)r->test_items));
    if (cl->log)
        fprintf(cl->log, "eeb: %llu test inputs from %s\n", (unsigned long long)r->test_items,
                r->c->server);
    return EEB_OK;
}

static int test(struct run *r, struct eeb_task_score *score, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc = enter(r, EEB_RUN_STOPPED, err, errlen);
    if (rc)
        return rc;
    struct eeb_accel_stats st = {0};
    r->acc->ops->stats(r->acc, &st);
    event(r, EEB_EVENT_STOPPED,
          json_pack("{s:I, s:I, s:[I, I, I, I]}", "steps", (json_int_t)st.steps, "items",
                    (json_int_t)st.items, "saturations", (json_int_t)st.saturations[0],
                    (json_int_t)st.saturations[1], (json_int_t)st.saturations[2],
                    (json_int_t)st.saturations[3]));
    if ((rc = r->acc->ops->read_model(r->acc, r->net, err, errlen)))
        return rc;
    if (c->save_model && (rc = eeb_model_save(c->save_model, r->net, c->task, err, errlen)))
        return rc;
    if (official(r) && (rc = fetch_test_inputs(r, err, errlen)))
        return rc;
    if ((rc = enter(r, EEB_RUN_TEST, err, errlen)))
        return rc;
    drive(r, r->perf.predict_power_w);
    eeb_sampler_mark(r->sampler, EEB_EVENT_TEST_BEGIN, NULL);
    struct predictions p = {.r = r};
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.batch = (int)c->batch;
    opt.predictions = c->predictions;
    opt.on_prediction = keep_prediction;
    opt.progress = test_progress;
    opt.arg = &p;
    rc = eeb_task_evaluate(r->acc, r->net, official(r) ? r->test_inputs : c->test, &opt, score, err,
                           errlen);
    if (rc == EEB_OK)
        rc = flush_predictions(&p, err, errlen);
    for (size_t i = 0; i < p.n; i++)
        free(p.payloads[i]);
    drive(r, r->perf.idle_power_w);
    /* on inputs without labels the metric is the server's to count */
    if (rc == EEB_OK && official(r))
        event(r, EEB_EVENT_TEST_END, json_pack("{s:I}", "items", (json_int_t)score->items));
    else if (rc == EEB_OK)
        event(r, EEB_EVENT_TEST_END,
              json_pack("{s:I, s:f, s:s}", "items", (json_int_t)score->items, "metric",
                        score->value, "metric_name", eeb_task_metric(c->task)));
    r->out->test_items = score->items;
    return rc;
}

/* ---- scoring ---- */

/* The record judged with M_s as given (NAN: recounted) and the figures
 * stored as the run's results. */
static int judge_record(struct run *r, double m_s, char *err, size_t errlen)
{
    struct eeb_run_outcome *out = r->out;
    int rc = eeb_run_judge(r->c->db, r->id, m_s, out, err, errlen);
    if (rc)
        return rc;
    /* what the modeled board would take for the steps the CPU ran */
    out->device_time_s = r->modeled_device ? out->steps * r->perf.train_step_s : NAN;
    out->device_energy_j = r->modeled_device ? out->steps * r->perf.train_step_j : NAN;
    /* a report describes a placed design; four fractions are declared */
    const char *util_prov = strcmp(r->util.family, "given") == 0 ? "modeled" : "measured";
    return eeb_run_store_results(r->db, r->id, out, util_prov, err, errlen);
}

/* A judged run's verdict in a word (before it is complete). */
static const char *judged_as(const struct eeb_run_outcome *o)
{
    return o->aborted ? "aborted" : !o->valid ? "invalid" : o->pass ? "pass" : "fail";
}

/* The verdict as the run's "score" event; by the server, its id. */
static void score_event(struct run *r, int by_server)
{
    const struct eeb_run_outcome *out = r->out;
    json_t *verdict = json_pack("{s:s, s:s}", "verdict", judged_as(out), "why", out->why);
    json_object_set_new(verdict, "S", out->pass ? json_real(out->score.s) : json_null());
    if (by_server)
        json_object_set_new(
            verdict, "server",
            json_pack("{s:s, s:I}", "url", r->c->server, "run_id", (json_int_t)out->server_run));
    event(r, EEB_EVENT_SCORE, verdict);
}

static int score(struct run *r, double m_s, char *err, size_t errlen)
{
    int rc = enter(r, EEB_RUN_SCORE, err, errlen);
    if (rc == EEB_OK && (rc = judge_record(r, m_s, err, errlen)) == EEB_OK)
        score_event(r, 0);
    return rc;
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
                 why[0] ? "; " : "", judged_as(o), o->score.s);
    o->pass = pass, o->aborted = aborted;
    o->valid = pass || aborted || strcmp(verdict, "fail") == 0;
    o->score.s = pass ? s : NAN;
    snprintf(o->why, sizeof o->why, "%s%s", why, here);
    return EEB_OK;
}

/* Official mode, SCORE: the record sent to the server, which judges it
 * with the labels it alone holds.  From here a failure leaves the record
 * as it is (no error event), so that a resubmission sends the same. */
static int submit(struct run *r, char *err, size_t errlen)
{
    struct eeb_run_outcome *out = r->out;
    json_t *verdict = NULL;
    int rc = enter(r, EEB_RUN_SCORE, err, errlen);
    if (rc)
        return rc;
    r->submitting = 1;
    rc =
        eeb_client_send_run(r->hooks->server, out->server_run, r->db, r->id, &verdict, err, errlen);
    if (rc) {
        char first[512];
        snprintf(first, sizeof first, "%s", err);
        return eeb_errf(err, errlen, rc,
                        "%s; the run's record is whole: send it again with `eeb submit %s --run "
                        "%lld --resume %lld --server %s`",
                        first, r->c->db, (long long)r->id, (long long)out->server_run,
                        r->c->server);
    }
    json_t *m_s = json_object_get(verdict, "m_s");
    rc = judge_record(r, json_is_number(m_s) ? json_number_value(m_s) : NAN, err, errlen);
    if (rc == EEB_OK)
        rc = adopt(r, verdict, err, errlen);
    if (rc == EEB_OK)
        score_event(r, 1);
    json_decref(verdict);
    return rc;
}

/* ---- the whole ---- */

/* Starts sampling and waits (a second at most) for the first reading, so
 * the metered window does not open on a stretch no reading covers. */
static int start_sampling(struct run *r, char *err, size_t errlen)
{
    struct eeb_sampler_config sc;
    eeb_sampler_config_default(&sc);
    sc.db_path = r->c->db;
    sc.run = r->id;
    sc.rate_hz = r->c->rate_hz;
    int rc = eeb_sampler_start(r->src, &sc, &r->sampler, err, errlen);
    if (rc)
        return rc;
    struct eeb_sampler_live l = {0};
    int64_t until = eeb_mono_ns() + 1000000000 + (int64_t)(2e9 / r->c->rate_hz);
    while (l.samples < 2 && eeb_mono_ns() < until) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        eeb_sampler_live(r->sampler, &l);
    }
    if (l.samples < 2)
        return eeb_errf(err, errlen, EEB_EDEVICE, "%s: no power readings within a second",
                        r->src->uri);
    return EEB_OK;
}

static int stop_sampling(struct run *r, int rc, char *err, size_t errlen)
{
    if (!r->sampler)
        return rc;
    struct eeb_sampler_stats st;
    char why[512];
    int src = eeb_sampler_stop(r->sampler, &st, why, sizeof why);
    r->sampler = NULL;
    if (src && !rc)
        return eeb_errf(err, errlen, src, "power sampling: %s", why);
    return rc;
}

int eeb_run_execute(const struct eeb_run_config *c, const struct eeb_run_hooks *hooks,
                    struct eeb_run_outcome *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->task = (enum eeb_task)c->task;
    out->score.s = NAN;
    out->device_time_s = out->device_energy_j = NAN;
    struct run r = {.cfg = *c, .hooks = hooks, .out = out};
    struct eeb_task_score ts = {0};
    r.c = &r.cfg;
    int rc = prepare(&r, err, errlen);
    if (rc == EEB_OK && official(&r))
        rc = enroll(&r, err, errlen);
    if (rc == EEB_OK)
        rc = create(&r, err, errlen);
    if (rc == EEB_OK)
        rc = deploy(&r, err, errlen);
    if (rc == EEB_OK)
        rc = start_sampling(&r, err, errlen);
    if (rc == EEB_OK)
        rc = finetune(&r, err, errlen);
    if (rc == EEB_OK && !out->aborted && !r.unlogged)
        rc = test(&r, &ts, err, errlen);
    rc = stop_sampling(&r, rc, err, errlen);
    /* the server hears of an aborted official run too */
    if (rc == EEB_OK && official(&r))
        rc = submit(&r, err, errlen);
    else if (rc == EEB_OK && !out->aborted)
        rc = score(&r, ts.value, err, errlen);
    if (r.db && r.id) {
        if (rc != EEB_OK && !out->aborted && !r.submitting)
            event(&r, EEB_EVENT_ERROR, json_pack("{s:s}", "message", err));
        char err2[256];
        int done = rc == EEB_OK && out->pass;
        if (eeb_rundb_run_set_state(r.db, r.id, done ? EEB_RUN_DONE : EEB_RUN_FAILED, err2,
                                    sizeof err2) == EEB_OK)
            out->complete = 1;
        else if (rc == EEB_OK)
            rc = eeb_errf(err, errlen, EEB_EDB, "%s", err2);
    }
    if (r.test_inputs[0])
        unlink(r.test_inputs);
    if (rc == EEB_OK && c->report)
        rc = eeb_run_report(c->db, r.id, c->report, err, errlen);
    if (!r.abandoned) {
        eeb_batcher_free(r.bt);
        eeb_accel_close(r.acc);
        eeb_net_free(r.net);
        eeb_shard_close(r.shard);
    }
    eeb_perf_free(&r.perf);
    free(r.xclbin_design);
    eeb_power_close(r.src);
    eeb_rundb_close(r.db);
    return rc;
}
