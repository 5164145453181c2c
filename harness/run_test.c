/*
 * run_test.c - STOPPED and TEST: the fine-tuned weights read back (and
 * saved), the test inputs from the evaluator, the predictions made in
 * inference mode and stored with the run.
 */
#include "run_int.h"

#include "fpga/net/eeb_model.h"
#include "tasks/eeb_prediction.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRED_BATCH 256 /* predictions per transaction */

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

/* The payload eeb_run_check recomputes the metric from; the server's test
 * inputs hold no truth: it adds its own. */
static int keep_prediction(void *arg, const struct eeb_task_prediction *tp, char *err,
                           size_t errlen)
{
    struct predictions *p = arg;
    char *s = eeb_prediction_write_evaluated(tp, p->r->eval->labelled);
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
    run_progress(p->r, &pr);
}

int run_test(struct run *r, struct eeb_task_score *score, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc = run_enter(r, EEB_RUN_STOPPED, err, errlen);
    if (rc)
        return rc;
    struct eeb_sut_counters st;
    eeb_sut_counters(r->sut, &st);
    /* the SUT's counters beside what eeb drove, which the judge holds them to */
    run_event(r, EEB_EVENT_STOPPED,
              json_pack("{s:I, s:I, s:[I, I, I, I], s:I, s:I}", EEB_EVENT_KEY_STEPS,
                        (json_int_t)st.steps, EEB_EVENT_KEY_ITEMS, (json_int_t)st.items,
                        EEB_EVENT_KEY_SATURATIONS, (json_int_t)st.saturations[0],
                        (json_int_t)st.saturations[1], (json_int_t)st.saturations[2],
                        (json_int_t)st.saturations[3], EEB_EVENT_KEY_EEB_STEPS,
                        (json_int_t)r->out->steps, EEB_EVENT_KEY_EEB_ITEMS,
                        (json_int_t)r->trained_items));
    if ((rc = eeb_sut_end_training(r->sut, err, errlen)) ||
        (rc = run_accuracy_save(r, err, errlen)) ||
        (rc = run_training_audit(r, EEB_TRAINING_AUDIT_AFTER, err, errlen)))
        return rc;
    const char *inputs;
    if ((rc = r->eval->test_inputs(r, &inputs, err, errlen)))
        return rc;
    if ((rc = run_enter(r, EEB_RUN_TEST, err, errlen)))
        return rc;
    run_drive(r, r->perf.predict_power_w);
    eeb_sampler_mark(r->sampler, EEB_EVENT_TEST_BEGIN, NULL);
    struct predictions p = {.r = r};
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.batch = (int)c->batch;
    opt.predictions = c->predictions;
    opt.on_prediction = keep_prediction;
    opt.progress = test_progress;
    opt.arg = &p;
    struct eeb_task_predictor sut;
    eeb_sut_predictor(r->sut, &sut);
    rc = eeb_task_evaluate_with(&sut, inputs, &opt, score, err, errlen);
    if (rc == EEB_OK)
        rc = flush_predictions(&p, err, errlen);
    for (size_t i = 0; i < p.n; i++)
        free(p.payloads[i]);
    run_drive(r, r->perf.idle_power_w);
    /* on inputs without labels the metric is the server's to count */
    if (rc == EEB_OK && !r->eval->labelled)
        run_event(r, EEB_EVENT_TEST_END, json_pack("{s:I}", "items", (json_int_t)score->items));
    else if (rc == EEB_OK)
        run_event(r, EEB_EVENT_TEST_END,
                  json_pack("{s:I, s:f, s:s}", "items", (json_int_t)score->items, "metric",
                            score->value, "metric_name", eeb_task_metric(c->task)));
    r->out->test_items = score->items;
    if (rc == EEB_OK)
        r->tested = inputs;
    return rc;
}
