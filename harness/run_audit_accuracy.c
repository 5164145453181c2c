/*
 * run_audit_accuracy.c - the accuracy audit (the idea of MLPerf LoadGen's TEST01):
 * a system that saves its fine-tuned model in eeb's own format (.eebm) has
 * a random sample of its test-stage answers checked against that model,
 * predicted again on eeb's reference backend for the model's format, so
 * that the answers scored are the model's and not something else's.
 *
 * Sections: the model saved (STOPPED, before the test inputs are served,
 * as --save-model always was: the model is committed before the system
 * sees a test input); the sample; the system's answers, from the run's
 * stored predictions; eeb's reference predictions, in the test stage's own
 * batches (eeb's fixed-point formats choose an activation's exponent per
 * batch, so an item's answer depends on its batch); the comparison and its
 * event.  The audit runs after the meter has stopped, outside the metered
 * window; its rule is record/judge.c's.
 */
#include "run_int.h"

#include "fpga/net/eeb_model.h"
#include "record/eeb_record.h"
#include "tasks/eeb_prediction.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the model saved ---- */

int run_accuracy_save(struct run *r, char *err, size_t errlen)
{
    const char *asked = r->c->save_model;
    r->audit_model = NULL;
    if (asked) { /* the user's file: a failure is the run's, as it always was */
        int rc = eeb_sut_save_model(r->sut, asked, err, errlen);
        if (rc == EEB_OK)
            r->audit_model = asked;
        return rc;
    }
    /* not asked for: a private file for the audit alone, removed after */
    char why[512];
    int n = snprintf(r->audit_copy, sizeof r->audit_copy, "%s/audit.eebm", r->private_dir);
    if (!r->private_dir[0] || n < 0 || (size_t)n >= sizeof r->audit_copy) {
        r->audit_copy[0] = '\0';
        snprintf(r->audit_skip, sizeof r->audit_skip, "no private directory to save the model in");
        return EEB_OK;
    }
    int rc = eeb_sut_save_model(r->sut, r->audit_copy, why, sizeof why);
    if (rc == EEB_OK)
        r->audit_model = r->audit_copy;
    else if (rc == EEB_ENOTSUP)
        snprintf(r->audit_skip, sizeof r->audit_skip,
                 "the system writes no model (it has no save_model)");
    else
        snprintf(r->audit_skip, sizeof r->audit_skip, "its save_model failed: %.200s", why);
    for (char *p = r->audit_skip; *p; p++) /* the team's text, in the record and on terminals */
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return EEB_OK;
}

void run_accuracy_forget(struct run *r)
{
    if (r->audit_copy[0])
        unlink(r->audit_copy);
    r->audit_copy[0] = '\0';
}

/* ---- the sample ---- */

/* n of the items 0..items-1 into out, ascending, every set of n equally
 * likely (selection sampling, Knuth TAOCP 3.4.2 Algorithm S), drawn from
 * the run's seed. */
static void draw(uint64_t seed, uint64_t items, uint64_t n, int64_t *out)
{
    uint64_t state = seed ^ 0x6175646974ULL, got = 0; /* "audit": its own stream */
    for (uint64_t i = 0; i < items && got < n; i++) {
        double u = (double)(eeb_splitmix64(&state) >> 11) * 0x1p-53;
        if ((double)(items - i) * u < (double)(n - got))
            out[got++] = (int64_t)i;
    }
}

/* One sampled item's answer: the best class (-1: none ranked), or the
 * best detection (has_box 0: none). */
struct answer {
    int top;
    int has_box;
    struct eeb_scored_box box;
};

struct audit {
    struct run *r;
    enum eeb_prediction_kind kind;
    int64_t *sample; /* ascending */
    uint64_t n;
    struct answer *said; /* the system's, per sampled item */
    uint8_t *seen;       /* its stored prediction was found */
    uint64_t agreed;
    int64_t unread; /* the item whose stored prediction did not read */
};

static int by_item(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ---- the system's answers ---- */

static int keep_said(void *arg, int64_t item, const char *payload)
{
    struct audit *a = arg;
    int64_t *at = bsearch(&item, a->sample, a->n, sizeof *a->sample, by_item);
    if (!at)
        return 0;
    size_t k = (size_t)(at - a->sample);
    struct eeb_prediction p;
    int rc = payload ? eeb_prediction_read_said(payload, a->kind, &p) : EEB_EFORMAT;
    if (rc == EEB_OK) {
        struct answer *s = &a->said[k];
        s->top = p.nranked > 0 ? p.ranked[0] : -1;
        s->has_box = p.nboxes > 0;
        if (s->has_box) {
            const struct eeb_prediction_box *b = &p.boxes[0];
            s->box = (struct eeb_scored_box){b->cls,       (float)b->score, (float)b->x0,
                                             (float)b->y0, (float)b->x1,    (float)b->y1};
        }
        a->seen[k] = 1;
    }
    eeb_prediction_free(&p);
    if (rc == EEB_OK)
        return 0;
    a->unread = item;
    return 1;
}

/* ---- the comparison ---- */

/* Continuous pixels; two boxes of no area (a line, a point) are one box
 * if they are the same, else apart. */
static double iou(const struct eeb_scored_box *a, const struct eeb_scored_box *b)
{
    double w = fmin(a->x1, b->x1) - fmax(a->x0, b->x0);
    double h = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
    double inter = w > 0 && h > 0 ? w * h : 0;
    double uni = (double)(a->x1 - a->x0) * (a->y1 - a->y0) +
                 (double)(b->x1 - b->x0) * (b->y1 - b->y0) - inter;
    if (!(uni > 0))
        return a->x0 == b->x0 && a->y0 == b->y0 && a->x1 == b->x1 && a->y1 == b->y1;
    return inter / uni;
}

/* The task's measure of agreement on one item (docs/check.md). */
static int agree(enum eeb_prediction_kind kind, const struct answer *said, const struct answer *ref)
{
    if (kind == EEB_PREDICTION_RANKED)
        return said->top == ref->top;
    if (!said->has_box || !ref->has_box)
        return said->has_box == ref->has_box;
    return said->box.cls == ref->box.cls && iou(&said->box, &ref->box) >= EEB_AUDIT_IOU;
}

static const char *measure(enum eeb_prediction_kind kind)
{
    return kind == EEB_PREDICTION_RANKED ? "top-1 class" : "best detection: same class, IoU >= 0.5";
}

/* ---- eeb's reference predictions ---- */

struct reference {
    const char *backend; /* eeb's reference for the model's format */
    struct eeb_net *net;
    struct eeb_accel *acc;
    struct eeb_task_decoder *dec;
    struct eeb_shard *shard;
    uint8_t *stacked;
    float *out;
    size_t outs, px;
    struct eeb_scored_box *boxes;
};

static void reference_free(struct reference *ref)
{
    eeb_task_decoder_free(ref->dec);
    eeb_accel_close(ref->acc);
    eeb_net_free(ref->net);
    eeb_shard_close(ref->shard);
    free(ref->stacked), free(ref->out), free(ref->boxes);
}

/* The saved model as eeb's reference would run it, or why not (*skip,
 * EEB_OK: the audit is not done); an error is eeb's own. */
static int reference_open(struct audit *a, const char *bytes, size_t len, struct reference *ref,
                          char *skip, size_t skiplen, char *err, size_t errlen)
{
    struct run *r = a->r;
    const struct eeb_run_config *c = r->c;
    char why[512];
    int task;
    if (len < 4 || memcmp(bytes, "EEBM", 4) != 0) {
        snprintf(skip, skiplen,
                 "the saved model is not in eeb's model format (an .eebm starts with \"EEBM\")");
        return EEB_OK;
    }
    if (eeb_model_decode((const uint8_t *)bytes, len, "the saved model", &ref->net, &task, why,
                         sizeof why) != EEB_OK) {
        snprintf(skip, skiplen, "%.400s", why);
        return EEB_OK;
    }
    int rc = eeb_shard_open(&ref->shard, r->tested, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *in = eeb_shard_info(ref->shard);
    if (task != c->task) {
        snprintf(skip, skiplen, "the saved model is a %s model, the run's task is %s",
                 task == EEB_MODEL_NO_TASK ? "task-less" : eeb_task_name((enum eeb_task)task),
                 eeb_task_name((enum eeb_task)c->task));
        return EEB_OK;
    }
    if (eeb_task_check_model(ref->net, in, why, sizeof why) != EEB_OK) {
        snprintf(skip, skiplen, "the saved model does not fit the test items: %.400s", why);
        return EEB_OK;
    }
    /* the int8 emulator is bit-exact with the kernel for eeb's fixed-point
     * models; fp32 on the portable GEMM, the same bits on any machine, for
     * float ones */
    int fixed = ref->net->format == EEB_FORMAT_FX24;
    ref->backend = fixed ? "emu" : "fp32";
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = (int)c->batch;
    cfg.seed = (uint64_t)c->seed;
    cfg.portable = !fixed;
    if ((rc = eeb_accel_start(ref->backend, &cfg, ref->net, &ref->acc, err, errlen)))
        return rc;
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt); /* the test stage's decoding: its min score, NMS, max boxes */
    opt.batch = (int)c->batch;
    const struct eeb_layer *loss = eeb_net_loss(ref->net);
    ref->px = eeb_shard_pixels(in);
    ref->outs = (size_t)loss->out.h * loss->out.w * loss->out.c;
    ref->stacked = malloc((size_t)opt.batch * ref->px);
    ref->out = malloc((size_t)opt.batch * ref->outs * sizeof *ref->out);
    ref->boxes = malloc((size_t)(opt.max_boxes > 0 ? opt.max_boxes : 1) * sizeof *ref->boxes);
    if (!ref->stacked || !ref->out || !ref->boxes)
        return eeb_errf(err, errlen, EEB_ENOMEM, "the accuracy audit: out of memory");
    return eeb_task_decoder_new(&ref->dec, ref->net, in, &opt, err, errlen);
}

/* Every batch of the test stage that holds a sampled item, read from the
 * test inputs, predicted and compared item by item. */
static int reference_compare(struct audit *a, struct reference *ref, char *err, size_t errlen)
{
    const struct eeb_shard_info *in = eeb_shard_info(ref->shard);
    uint64_t batch = (uint64_t)a->r->c->batch, next = 0;
    int rc = EEB_OK;
    for (uint64_t first = 0; rc == EEB_OK && next < a->n; first += batch) {
        int needed = (uint64_t)a->sample[next] < first + batch;
        int got = 0;
        const struct eeb_record *rec;
        while ((uint64_t)got < batch && (rc = eeb_shard_next(ref->shard, &rec, err, errlen)) == 1) {
            if (needed)
                eeb_task_stack_frames(in, rec->pixels, ref->stacked + (size_t)got * ref->px);
            got++;
        }
        if (rc < 0)
            return rc;
        rc = EEB_OK;
        if (needed && got > 0) {
            struct eeb_batch nb = {got, ref->stacked, NULL};
            rc = ref->acc->ops->predict(ref->acc, &nb, ref->out, err, errlen);
        }
        for (; rc == EEB_OK && needed && next < a->n && (uint64_t)a->sample[next] < first + got;
             next++) {
            size_t i = (size_t)((uint64_t)a->sample[next] - first);
            struct eeb_task_predicted p = {.boxes = ref->boxes};
            rc = eeb_task_decode(ref->dec, ref->out + i * ref->outs, &p, err, errlen);
            struct answer mine = {.top = p.nranked > 0 ? p.ranked[0] : -1, .has_box = p.nboxes > 0};
            if (mine.has_box)
                mine.box = p.boxes[0];
            a->agreed += rc == EEB_OK && agree(a->kind, &a->said[next], &mine);
        }
        if ((uint64_t)got < batch)
            break; /* the inputs ran out */
    }
    if (rc == EEB_OK && next < a->n)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "the accuracy audit: %s holds fewer items than the test stage predicted",
                      a->r->tested);
    return rc;
}

/* ---- the audit and its event ---- */

static void not_done(struct run *r, const char *why, const char *sha)
{
    json_t *o = json_pack("{s:b, s:s}", EEB_AUDIT_KEY_DONE, 0, EEB_AUDIT_KEY_REASON, why);
    if (o && sha)
        json_object_set_new(o, EEB_AUDIT_KEY_MODEL, json_string(sha));
    run_event(r, EEB_EVENT_AUDIT, o);
}

int run_accuracy_audit(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    struct audit a = {.r = r, .kind = eeb_task_get((enum eeb_task)c->task)->prediction};
    struct reference ref = {0};
    char *bytes = NULL, sha[EEB_SHA256_HEX], skip[512] = "", why[512];
    size_t len = 0;
    int rc = EEB_OK;
    int64_t t0 = eeb_mono_ns(); /* the audit's wall time, recorded, never scored */
    if (!r->audit_model) {
        not_done(r, r->audit_skip[0] ? r->audit_skip : "no model saved", NULL);
        return EEB_OK;
    }
    if (eeb_read_file(r->audit_model, EEB_MODEL_MAX_BYTES, &bytes, &len, why, sizeof why)) {
        snprintf(skip, sizeof skip, "reading the saved model: %.400s", why);
        not_done(r, skip, NULL);
        goto out;
    }
    eeb_sha256(bytes, len, sha);
    uint64_t items = r->out->test_items;
    a.n = items < EEB_AUDIT_SAMPLE ? items : EEB_AUDIT_SAMPLE;
    if (a.n == 0) {
        not_done(r, "the test stage predicted no item", sha);
        goto out;
    }
    a.sample = malloc(a.n * sizeof *a.sample);
    a.said = calloc(a.n, sizeof *a.said);
    a.seen = calloc(a.n, 1);
    if (!a.sample || !a.said || !a.seen) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "the accuracy audit: out of memory");
        goto out;
    }
    if ((rc = reference_open(&a, bytes, len, &ref, skip, sizeof skip, err, errlen)))
        goto out;
    if (skip[0]) {
        not_done(r, skip, sha);
        goto out;
    }
    draw((uint64_t)c->seed, items, a.n, a.sample);
    int bad = eeb_rundb_predictions_each(r->db, r->id, keep_said, &a, err, errlen);
    if (bad > 0)
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "the accuracy audit: the stored prediction of test item %lld does not read",
                      (long long)a.unread);
    else
        rc = bad;
    for (uint64_t k = 0; rc == EEB_OK && k < a.n; k++)
        if (!a.seen[k])
            rc = eeb_errf(err, errlen, EEB_EINVAL,
                          "the accuracy audit: test item %lld has no stored prediction",
                          (long long)a.sample[k]);
    if (rc == EEB_OK)
        rc = reference_compare(&a, &ref, err, errlen);
    if (rc)
        goto out;
    double wall_s = (double)(eeb_mono_ns() - t0) / 1e9;
    json_t *sampled = json_array();
    for (uint64_t k = 0; sampled && k < a.n; k++)
        json_array_append_new(sampled, json_integer((json_int_t)a.sample[k]));
    if (!sampled) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "the accuracy audit: out of memory");
        goto out;
    }
    run_event(r, EEB_EVENT_AUDIT,
              json_pack("{s:b, s:I, s:o, s:I, s:I, s:f, s:s, s:s, s:s, s:s, s:f}",
                        EEB_AUDIT_KEY_DONE, 1, EEB_AUDIT_KEY_SAMPLE, (json_int_t)a.n,
                        EEB_AUDIT_KEY_SAMPLED, sampled, EEB_AUDIT_KEY_AGREED, (json_int_t)a.agreed,
                        EEB_AUDIT_KEY_ITEMS, (json_int_t)items, EEB_AUDIT_KEY_THRESHOLD,
                        EEB_AUDIT_MIN_AGREEMENT, EEB_AUDIT_KEY_MEASURE, measure(a.kind),
                        EEB_AUDIT_KEY_REFERENCE, ref.backend, EEB_AUDIT_KEY_FORMAT,
                        ref.net->format == EEB_FORMAT_FX24 ? "fx24" : "f32", EEB_AUDIT_KEY_MODEL,
                        sha, "host_s", wall_s));
out:
    reference_free(&ref);
    free(bytes), free(a.sample), free(a.said), free(a.seen);
    run_accuracy_forget(r);
    return rc;
}
