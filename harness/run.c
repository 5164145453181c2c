/*
 * run.c - the run lifecycle (DESIGN.md §2): INIT, DEPLOY, FINETUNE under
 * the T_max deadline and the live P_max watch, STOPPED, TEST, SCORE, each
 * stage in a file of its own (run_int.h lists them); here, the stages in
 * order, the events and states they record, and the cleanup.  Every stage
 * boundary is an event on the samples' clock.
 */
#include "run_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An event's payload as text (free it); takes payload, which may be NULL. */
char *run_dump(json_t *payload)
{
    char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(payload);
    return text;
}

/* Records an event now and returns its time: on the sampler's queue while
 * it runs (its clock, its writer), else through this connection.  Takes
 * payload (may be NULL). */
int64_t run_event(struct run *r, const char *kind, json_t *payload)
{
    char *text = run_dump(payload);
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

int run_enter(struct run *r, enum eeb_run_state state, char *err, size_t errlen)
{
    int rc = eeb_rundb_run_set_state(r->db, r->id, state, err, errlen);
    if (rc == EEB_OK)
        run_event(r, EEB_EVENT_STATE, json_pack("{s:s}", "state", eeb_rundb_state_name(state)));
    return rc;
}

void run_progress(struct run *r, struct eeb_run_progress *p)
{
    if (r->hooks && r->hooks->progress)
        r->hooks->progress(p, r->hooks->arg);
}

int run_cancelled(const struct run *r)
{
    return r->hooks && r->hooks->cancel && *r->hooks->cancel;
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
    r.eval = c->server ? &run_official_evaluator : &run_local_evaluator;
    if ((c->server != NULL) != (hooks && hooks->server))
        return eeb_errf(err, errlen, EEB_EINVAL, "official mode needs the server and its client");
    int rc = run_prepare(&r, err, errlen);
    if (rc == EEB_OK && r.eval->enroll)
        rc = r.eval->enroll(&r, err, errlen);
    if (rc == EEB_OK)
        rc = run_open(&r, err, errlen); /* before the record: what the SUT is, is in it */
    if (rc == EEB_OK)
        rc = run_create(&r, err, errlen);
    if (rc == EEB_OK && r.eval->created)
        rc = r.eval->created(&r, err, errlen);
    if (rc == EEB_OK)
        rc = run_deploy(&r, err, errlen);
    if (rc == EEB_OK)
        rc = run_start_sampling(&r, err, errlen);
    if (rc == EEB_OK)
        rc = run_ranging(&r, err, errlen);
    if (rc == EEB_OK) /* the SUT as deployed, outside the metered window */
        rc = run_training_audit(&r, EEB_TRAINING_AUDIT_BEFORE, err, errlen);
    if (rc == EEB_OK)
        rc = run_finetune(&r, err, errlen);
    if (rc == EEB_OK && !out->aborted && !r.unlogged)
        rc = run_test(&r, &ts, err, errlen);
    rc = run_stop_sampling(&r, rc, err, errlen);
    if (rc == EEB_OK && r.tested) /* outside the metered window */
        rc = run_accuracy_audit(&r, err, errlen);
    if (rc == EEB_OK && (!out->aborted || r.eval->judges_aborted))
        rc = r.eval->judge(&r, ts.value, err, errlen);
    if (r.db && r.id) {
        if (rc != EEB_OK && !out->aborted && !r.submitting)
            run_event(&r, EEB_EVENT_ERROR, json_pack("{s:s}", EEB_EVENT_KEY_MESSAGE, err));
        char err2[256];
        int done = rc == EEB_OK && out->pass;
        if (eeb_rundb_run_set_state(r.db, r.id, done ? EEB_RUN_DONE : EEB_RUN_FAILED, err2,
                                    sizeof err2) == EEB_OK)
            out->complete = 1;
        else if (rc == EEB_OK)
            rc = eeb_errf(err, errlen, EEB_EDB, "%s", err2);
    }
    if (r.eval->release)
        r.eval->release(&r);
    if (rc != EEB_OK && !r.submitting && r.eval->abandon)
        r.eval->abandon(&r, err);
    if (r.test_inputs[0])
        unlink(r.test_inputs);
    if (r.private_dir[0]) { /* what the SUT left in its work directory stays */
        unlink(r.model_copy);
        run_accuracy_forget(&r);
        if (r.xclbin_copy[0])
            unlink(r.xclbin_copy);
        rmdir(r.workdir);
        rmdir(r.private_dir);
    }
    if (rc == EEB_OK && c->report)
        rc = eeb_run_report(c->db, r.id, c->report, err, errlen);
    if (!r.abandoned) { /* else the worker may still be inside the SUT */
        eeb_batcher_free(r.bt);
        eeb_sut_close(r.sut);
        eeb_shard_close(r.shard);
    }
    eeb_net_free(r.net);
    free(r.model_bytes), free(r.xclbin_bytes), free(r.training_audit.pixels);
    eeb_perf_free(&r.perf);
    free(r.xclbin_design);
    eeb_power_close(r.src);
    eeb_rundb_close(r.db);
    return rc;
}
