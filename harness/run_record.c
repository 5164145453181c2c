/*
 * run_record.c - the run's record begun: the configuration stored with it
 * (what the judge, the check and the report read back), and the run
 * created in the database.
 */
#include "run_int.h"

#include "rundb/eeb_config_record.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The modeled device: the configuration's and the "device_model" event's. */
json_t *run_device_model_json(const struct run *r)
{
    const struct eeb_perf *p = &r->perf;
    const struct eeb_config_device d = {
        .design = r->out->design,
        .train_step_s = p->train_step_s,
        .predict_batch_s = p->predict_batch_s,
        .train_w = p->train_power_w,
        .predict_w = p->predict_power_w,
        .idle_w = p->idle_power_w,
        .resources = {p->res.lut, p->res.ff, p->res.bram, p->res.dsp}};
    return eeb_config_device_model(&d);
}

/* The resolved configuration, as stored with the run (keys in order). */
char *run_config_json(const struct run *r)
{
    const struct eeb_run_config *c = r->c;
    const struct eeb_weights *w = &r->rules.weights[c->task];
    const double weights[4] = {w->u, w->t, w->p, w->s};
    json_t *o = json_object();
    eeb_config_put_task(o, eeb_task_name((enum eeb_task)c->task));
    json_object_set_new(o, "eeb",
                        json_pack("{s:s, s:s}", "version", EEB_VERSION, "build", eeb_build()));
    eeb_config_put_backend(o, c->backend, r->out->provenance);
    eeb_config_put_sut(o, r->identity.name, r->identity.version, r->identity.kind,
                       r->identity.hosting, r->identity.detail);
    eeb_config_put_input(o, "model", c->model, r->sha_model, 0);
    if (c->xclbin)
        eeb_config_put_input(o, "xclbin", c->xclbin, r->sha_xclbin, 0);
    eeb_config_put_input(o, "finetune", c->finetune, r->sha_finetune, r->finetune_items);
    r->eval->describe(r, o);
    eeb_config_put_power(o, r->src->uri, c->rate_hz, eeb_provenance_name(r->src->provenance),
                         r->src->note);
    eeb_config_put_update_interval(o, r->src->update_interval_s); /* gaps judged against it */
    eeb_config_put_budgets(o, c->t_max_s, c->p_max_w,
                           r->modeled_clock ? EEB_CLOCK_MODELED : EEB_CLOCK_WALL, c->grace_s,
                           c->abort_on_pmax);
    json_t *t = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "epochs", c->epochs, "batch",
                          c->batch, "frozen", c->frozen, "window", c->window, "lr", c->lr,
                          "momentum", c->momentum, "decay", c->decay, "seed", c->seed);
    json_object_set_new(t, "steps", isnan(c->steps) ? json_null() : json_real(c->steps));
    json_object_set_new(o, "training", t);
    eeb_config_put_util(o, r->util.frac, r->out->util_source,
                        strcmp(r->util.family, "given") == 0 ? "declared" : "report",
                        r->util.device);
    json_object_set_new(o, "declared_power_w",
                        isnan(c->declared_power_w) ? json_null() : json_real(c->declared_power_w));
    if (r->modeled_device)
        json_object_set_new(o, "device_model", run_device_model_json(r));
    eeb_config_put_rules(o, r->rules.version, c->rules, weights, r->rules.power.window_s,
                         r->rules.power.min_rate_hz);
    json_object_set_new(o, "outputs",
                        json_pack("{s:s, s:s?, s:s?, s:s?}", "db", c->db, "report", c->report,
                                  "save_model", c->save_model, "predictions", c->predictions));
    char *text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

int run_create(struct run *r, char *err, size_t errlen)
{
    char *config = run_config_json(r);
    if (!config)
        return eeb_errf(err, errlen, EEB_ENOMEM, "the run's configuration: out of memory");
    struct eeb_run_new n = {.task = (enum eeb_task)r->c->task,
                            .backend = r->c->backend,
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
        run_event(r, EEB_EVENT_STATE,
                  json_pack("{s:s, s:s, s:s}", "state", "init", "eeb", EEB_VERSION, "build",
                            eeb_build()));
    }
    return rc;
}
