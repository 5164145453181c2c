/*
 * test_evaluate.c - the test stage over a predictor: a predictor sees the
 * items as the shard holds them and never their labels; what it says is
 * judged as eeb's own net's predictions are (eeb_task_evaluate is the same
 * loop with the net on an accelerator, and eeb_task_decode is its step
 * from outputs to predictions); what it says out of bounds is refused.
 */
#include "fpga/accel/eeb_accel.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_tasks.h"
#include "tests/tasks/task_data.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* N: a last batch shorter than BATCH, and whole rounds of the detection
 * records' 0..3 boxes */
enum { N = 36, BATCH = 8 };

/* ---- predictors that know the answer from the pixels ---- */

struct oracle {
    const struct eeb_shard_info *info; /* from start */
    int starts, calls, items;
    size_t px;
    int misrank;   /* ranked: a class this far out of the shard's, at item 3 */
    int overboxes; /* boxes: this many more than max_boxes, at item 3 */
};

static int oracle_start(void *arg, const struct eeb_shard_info *info,
                        const struct eeb_task_eval_options *opt, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct oracle *o = arg;
    cr_assert_eq(opt->batch, BATCH);
    o->info = info, o->starts++;
    o->px = eeb_shard_pixels(info);
    return EEB_OK;
}

/* Clips: the record number is frame 0's bytes; frame 1 follows it whole,
 * as stored (not interleaved with frame 0 as the net's layout has it). */
static int clip_oracle(void *arg, const struct eeb_task_batch *b, struct eeb_task_predicted *out,
                       char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct oracle *o = arg;
    cr_assert(b->n >= 1 && b->n <= BATCH && !b->labels && !b->box_counts && !b->boxes);
    o->calls++;
    for (int i = 0; i < b->n; i++, o->items++) {
        const uint8_t *item = b->pixels + (size_t)i * o->px;
        cr_assert_eq(item[0], o->items, "items come in shard order");
        uint8_t stored[24];
        task_test_clip(o->items, stored);
        cr_assert_arr_eq(item, stored, sizeof stored, "item %d: not frame-major", o->items);
        int label = item[0] % 3;
        out[i].nranked = 3;
        out[i].ranked[0] = label, out[i].ranked[1] = (label + 1) % 3;
        out[i].ranked[2] = o->items == 3 ? 2 + o->misrank : (label + 2) % 3;
    }
    return EEB_OK;
}

/* Detections: every box of the record (the number is the first byte),
 * difficult ones too, scored 0.9, and a stray one scored 0.1. */
static int det_oracle(void *arg, const struct eeb_task_batch *b, struct eeb_task_predicted *out,
                      char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct oracle *o = arg;
    o->calls++;
    for (int i = 0; i < b->n; i++, o->items++) {
        int rec = b->pixels[(size_t)i * o->px];
        cr_assert_eq(rec, o->items);
        struct eeb_task_predicted *p = &out[i];
        p->nboxes = task_test_det_boxes(rec);
        for (int k = 0; k < p->nboxes; k++) {
            struct eeb_box t = task_test_det_box(rec, k);
            p->boxes[k] = (struct eeb_scored_box){t.cls, 0.9f, t.x0, t.y0, t.x1, t.y1};
        }
        p->boxes[p->nboxes++] = (struct eeb_scored_box){0, 0.1f, 12, 12, 16, 16};
        if (rec == 3)
            p->nboxes += o->overboxes;
    }
    return EEB_OK;
}

static int refusing(void *arg, const struct eeb_task_batch *b, struct eeb_task_predicted *out,
                    char *err, size_t errlen)
{
    (void)arg, (void)b, (void)out;
    return eeb_errf(err, errlen, EEB_EDEVICE, "the board went away");
}

static int not_starting(void *arg, const struct eeb_shard_info *info,
                        const struct eeb_task_eval_options *opt, char *err, size_t errlen)
{
    (void)arg, (void)info, (void)opt;
    return eeb_errf(err, errlen, EEB_EINVAL, "wrong shape");
}

/* Counts the items handed on. */
static int count(void *arg, const struct eeb_task_prediction *p, char *err, size_t errlen)
{
    (void)p, (void)err, (void)errlen;
    ++*(int *)arg;
    return EEB_OK;
}

Test(tasks, evaluate_with_a_predictor_of_clips_as_stored)
{
    const char *path = task_test_clip_shard(N);
    struct oracle o = {0};
    struct eeb_task_predictor p = {oracle_start, clip_oracle, &o};
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    int handed = 0;
    opt.batch = BATCH, opt.on_prediction = count, opt.arg = &handed;
    struct eeb_task_score s;
    char err[256] = "";
    cr_assert_eq(eeb_task_evaluate_with(&p, path, &opt, &s, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(o.starts, 1);
    cr_assert_eq(o.calls, (N + BATCH - 1) / BATCH);
    cr_assert(s.items == N && s.topk.items == N && s.topk.top1 == N && s.topk.top5 == N);
    cr_assert_eq(s.value, 1.0);
    cr_assert_eq(handed, N);

    /* a class the shard does not have is refused, naming the item */
    o = (struct oracle){.misrank = 1};
    cr_assert_eq(eeb_task_evaluate_with(&p, path, &opt, &s, err, sizeof err), EEB_EINVAL);
    assert_has(err, "test item clip03: ranked class 3 is 3 (the shard's are 0..2)");
}

Test(tasks, evaluate_with_a_predictor_of_boxes)
{
    const char *path = task_test_det_shard(N);
    struct oracle o = {0};
    struct eeb_task_predictor p = {oracle_start, det_oracle, &o};
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.batch = BATCH, opt.max_boxes = 4;
    struct eeb_task_score s;
    char err[256] = "";
    cr_assert_eq(eeb_task_evaluate_with(&p, path, &opt, &s, err, sizeof err), EEB_OK, "%s", err);
    /* every true box found first; the strays come after every hit, so AP
     * stays 1 for each class */
    cr_assert_eq(s.items, N);
    cr_assert_eq(s.detections, (uint64_t)(N / 4 * (1 + 2 + 3 + 4)));
    cr_assert_float_eq(s.map, 1.0, 1e-12, "mAP %.17g", s.map);
    cr_assert_eq(s.value, s.map);

    o = (struct oracle){.overboxes = 1};
    cr_assert_eq(eeb_task_evaluate_with(&p, path, &opt, &s, err, sizeof err), EEB_EINVAL);
    assert_has(err, "test item img03: 5 boxes (0..4)");

    /* the predictor's and start's failures end it, with their words */
    struct eeb_task_predictor broken = {NULL, refusing, NULL};
    cr_assert_eq(eeb_task_evaluate_with(&broken, path, &opt, &s, err, sizeof err), EEB_EDEVICE);
    cr_assert_str_eq(err, "the board went away");
    o = (struct oracle){0};
    struct eeb_task_predictor unstarted = {not_starting, det_oracle, &o};
    cr_assert_eq(eeb_task_evaluate_with(&unstarted, path, &opt, &s, err, sizeof err), EEB_EINVAL);
    cr_assert_str_eq(err, "wrong shape");
    cr_assert_eq(o.calls, 0);
}

/* ---- eeb's net through the exported step, against eeb_task_evaluate ---- */

/* What was handed on, item after item, in words exact to the bit. */
struct transcript {
    char *text;
    size_t len, cap;
};

__attribute__((format(printf, 2, 3))) static void say(struct transcript *t, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    cr_assert(n >= 0 && (size_t)n < sizeof line);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = 2 * (t->len + (size_t)n + 1);
        t->text = realloc(t->text, t->cap);
        cr_assert_not_null(t->text);
    }
    memcpy(t->text + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
}

static int transcribe(void *arg, const struct eeb_task_prediction *p, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct transcript *t = arg;
    say(t, "item %llu %s:", (unsigned long long)p->index, p->id);
    for (int k = 0; k < p->nranked; k++)
        say(t, " %d", p->ranked[k]);
    for (int k = 0; k < p->nboxes; k++) {
        const struct eeb_scored_box *b = &p->boxes[k];
        say(t, " [%d %a %a %a %a %a]", b->cls, b->score, b->x0, b->y0, b->x1, b->y1);
    }
    say(t, "\n");
    return EEB_OK;
}

/* eeb's net on an accelerator, as a system under test built on it would
 * predict: frames stacked, the accelerator's outputs, eeb_task_decode. */
struct by_hand {
    struct eeb_accel *acc;
    const struct eeb_net *net;
    const struct eeb_shard_info *info;
    struct eeb_task_decoder *decoder;
    uint8_t *stacked;
    float *out;
    size_t outs;
};

static int by_hand_start(void *arg, const struct eeb_shard_info *info,
                         const struct eeb_task_eval_options *opt, char *err, size_t errlen)
{
    struct by_hand *h = arg;
    const struct eeb_layer *loss = eeb_net_loss(h->net);
    h->info = info;
    h->outs = (size_t)loss->out.h * loss->out.w * loss->out.c;
    h->stacked = malloc((size_t)opt->batch * eeb_shard_pixels(info));
    h->out = malloc((size_t)opt->batch * h->outs * sizeof *h->out);
    cr_assert(h->stacked && h->out);
    return eeb_task_decoder_new(&h->decoder, h->net, info, opt, err, errlen);
}

static int by_hand_predict(void *arg, const struct eeb_task_batch *b,
                           struct eeb_task_predicted *out, char *err, size_t errlen)
{
    struct by_hand *h = arg;
    size_t px = eeb_shard_pixels(h->info);
    for (int i = 0; i < b->n; i++)
        eeb_task_stack_frames(h->info, b->pixels + i * px, h->stacked + i * px);
    struct eeb_batch nb = {b->n, h->stacked, NULL};
    int rc = h->acc->ops->predict(h->acc, &nb, h->out, err, errlen);
    for (int i = 0; rc == EEB_OK && i < b->n; i++) {
        rc = eeb_task_decode(h->decoder, h->out + i * h->outs, &out[i], err, errlen);
        /* a classifier's scores are its outputs, best first */
        for (int k = 0; k < out[i].nranked; k++) {
            cr_assert_eq(out[i].scores[k], h->out[i * h->outs + (size_t)out[i].ranked[k]]);
            cr_assert(k == 0 || out[i].scores[k] <= out[i].scores[k - 1]);
        }
    }
    return rc;
}

/* The same shard scored by eeb_task_evaluate and through the predictor
 * interface by hand: the same score and predictions, to the bit. */
static void same_both_ways(const char *path, enum eeb_task task)
{
    char err[256];
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, path, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_net *net;
    cr_assert_eq(eeb_task_model(eeb_shard_info(s), 3, &net, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_info(s)->task, task);
    eeb_shard_close(s);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = BATCH;
    struct eeb_accel *acc;
    cr_assert_eq(eeb_accel_start("fp32", &cfg, net, &acc, err, sizeof err), EEB_OK, "%s", err);

    struct transcript ta = {0}, tb = {0};
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.batch = BATCH, opt.on_prediction = transcribe, opt.arg = &ta;
    struct eeb_task_score a, b;
    cr_assert_eq(eeb_task_evaluate(acc, net, path, &opt, &a, err, sizeof err), EEB_OK, "%s", err);
    struct by_hand h = {.acc = acc, .net = net};
    struct eeb_task_predictor p = {by_hand_start, by_hand_predict, &h};
    opt.arg = &tb;
    cr_assert_eq(eeb_task_evaluate_with(&p, path, &opt, &b, err, sizeof err), EEB_OK, "%s", err);

    cr_assert(ta.len > 0 && tb.len == ta.len && memcmp(ta.text, tb.text, ta.len) == 0,
              "the predictions differ:\n%.400s\n--\n%.400s", ta.text, tb.text);
    cr_assert(a.items == b.items && a.detections == b.detections && a.prediction == b.prediction);
    cr_assert(task != EEB_TASK_DET || a.detections > 0, "no boxes to compare");
    cr_assert(memcmp(&a.topk, &b.topk, sizeof a.topk) == 0);
    cr_assert(memcmp(&a.map, &b.map, sizeof a.map) == 0 &&
                  memcmp(&a.value, &b.value, sizeof a.value) == 0,
              "mAP %a vs %a, value %a vs %a", a.map, b.map, a.value, b.value);
    free(ta.text), free(tb.text);
    eeb_task_decoder_free(h.decoder);
    free(h.stacked), free(h.out);
    eeb_accel_close(acc);
    eeb_net_free(net);
}

Test(tasks, evaluate_is_the_loop_over_the_exported_decoder)
{
    same_both_ways(test_cls_shard(40, 16, 3), EEB_TASK_CLS);
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/det.eebd", test_tmpdir());
    struct eeb_gen_spec spec = {EEB_TASK_DET, EEB_GEN_FINETUNE, 1, 20, 4, 32, 1};
    cr_assert_eq(eeb_gen_shard(path, &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    same_both_ways(path, EEB_TASK_DET);
}
