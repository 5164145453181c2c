/*
 * evaluate.c - the test stage of a task: predict every record of a test
 * shard, turn the outputs into predictions (ranked classes, or boxes from
 * the grid detector after NMS) and compute the task's metric M_s.
 *
 * Sections: the grid decoder; ranking classes; the evaluation loop and
 * the prediction files it can write (the formats `eeb eval` reads).
 */
#include "eeb_tasks.h"

#include "eeb_voc.h"
#include "fpga/kernel/fx_isa.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the grid decoder ---- */

static double sigmoid(double z)
{
    return 1 / (1 + exp(-z));
}

static float clampf(double v, float hi)
{
    return (float)(v < 0 ? 0 : v > hi ? hi : v);
}

int eeb_task_decode_grid(const struct eeb_net *net, const struct eeb_shard_info *info,
                         const float *out, float min_score, struct eeb_scored_box *boxes, int max)
{
    const struct eeb_layer *loss = eeb_net_loss(net);
    int gh = loss->out.h, gw = loss->out.w, per = loss->out.c, classes = per - FX_GRID_BOX;
    double p[EEB_SHARD_MAX_CLASSES];
    if (classes < 1 || classes > EEB_SHARD_MAX_CLASSES)
        return 0;
    int n = 0;
    for (int cell = 0; cell < gh * gw; cell++) {
        const float *z = out + (size_t)cell * per;
        double obj = sigmoid(z[0]), top = z[FX_GRID_BOX], sum = 0;
        for (int k = 1; k < classes; k++)
            top = fmax(top, z[FX_GRID_BOX + k]);
        for (int k = 0; k < classes; k++)
            sum += p[k] = exp(z[FX_GRID_BOX + k] - top);
        /* the centre's offset in its cell, and sqrt w, sqrt h of the image */
        double cx = (cell % gw + z[1]) / gw * info->w, cy = (cell / gw + z[2]) / gh * info->h;
        double w = z[3] * z[3] * info->w, h = z[4] * z[4] * info->h;
        for (int k = 0; k < classes && n < max; k++) {
            double score = obj * p[k] / sum;
            if (score < min_score)
                continue;
            boxes[n++] = (struct eeb_scored_box){k,
                                                 (float)score,
                                                 clampf(cx - w / 2, (float)info->w),
                                                 clampf(cy - h / 2, (float)info->h),
                                                 clampf(cx + w / 2, (float)info->w),
                                                 clampf(cy + h / 2, (float)info->h)};
        }
    }
    return n;
}

/* ---- ranking classes ---- */

/* The EEB_TOPK_MAX best classes of one item's scores, best first (ties:
 * the lower class first). */
static int rank(const float *score, int classes, int *ranked)
{
    int n = 0;
    for (int k = 0; k < classes; k++) {
        int at = n < EEB_TOPK_MAX ? n++ : EEB_TOPK_MAX;
        while (at > 0 && score[k] > score[ranked[at - 1]]) {
            if (at < EEB_TOPK_MAX)
                ranked[at] = ranked[at - 1];
            at--;
        }
        if (at < EEB_TOPK_MAX)
            ranked[at] = k;
    }
    return n;
}

/* ---- evaluation ---- */

/* Detections of every class, gathered while predicting. */
struct detections {
    struct eeb_voc_detection **d; /* per truth-set class */
    int *n, *cap;
};

static int add_detection(struct detections *ds, int c, struct eeb_voc_detection det)
{
    if (ds->n[c] == ds->cap[c]) {
        int cap = ds->cap[c] ? 2 * ds->cap[c] : 256;
        void *p = realloc(ds->d[c], (size_t)cap * sizeof *ds->d[c]);
        if (!p)
            return EEB_ENOMEM;
        ds->d[c] = p, ds->cap[c] = cap;
    }
    ds->d[c][ds->n[c]++] = det;
    return EEB_OK;
}

struct evaluation {
    const struct eeb_net *net;
    const struct eeb_shard_info *info;
    const struct eeb_task_eval_options *opt;
    struct eeb_task_score *score;
    struct eeb_voc_truth_set truth; /* det */
    struct detections dets;
    struct eeb_scored_box *boxes; /* one item's, max_boxes of them */
    int max_boxes;                /* cells x classes */
    FILE *csv;                    /* cls, video predictions */
    FILE **files;                 /* det: per shard class */
    char **paths;                 /* and their names */
};

/* One item of a batch, as the shard gave it. */
struct item {
    uint64_t index;
    char id[EEB_SHARD_MAX_ID + 1];
    int label;
    int ntruth; /* det, when predictions are handed on */
    struct eeb_box truth[EEB_SHARD_MAX_BOXES];
};

/* Records one item's outputs. */
static int judge(struct evaluation *ev, const struct item *it, const float *out, char *err,
                 size_t errlen)
{
    const struct eeb_shard_info *in = ev->info;
    const char *id = it->id;
    struct eeb_task_prediction p = {
        .kind = ev->score->prediction, .index = it->index, .id = id, .label = it->label};
    if (p.kind == EEB_PREDICTION_RANKED) {
        int ranked[EEB_TOPK_MAX] = {0}, n = rank(out, in->classes, ranked);
        eeb_topk_add(&ev->score->topk, it->label, ranked, n);
        if (ev->csv) {
            fprintf(ev->csv, "%s", id);
            for (int k = 0; k < n; k++)
                fprintf(ev->csv, ",%s", in->names[ranked[k]]);
            fputc('\n', ev->csv);
        }
        p.ranked = ranked, p.nranked = n;
        return ev->opt->on_prediction ? ev->opt->on_prediction(ev->opt->arg, &p, err, errlen)
                                      : EEB_OK;
    }
    int n = eeb_task_decode_grid(ev->net, in, out, ev->opt->min_score, ev->boxes, ev->max_boxes);
    n = eeb_nms(ev->boxes, n, ev->opt->nms_iou);
    if (n < 0)
        return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    if (n > ev->opt->max_boxes)
        n = ev->opt->max_boxes;
    int image = eeb_voc_image_index(&ev->truth, id);
    for (int i = 0; i < n; i++) {
        const struct eeb_scored_box *b = &ev->boxes[i];
        /* continuous [x0, x1] is the devkit's pixels x0 + 1 .. x1 */
        struct eeb_voc_detection d = {image, b->score, {b->x0 + 1.0, b->y0 + 1.0, b->x1, b->y1}};
        int c = eeb_voc_class_index(&ev->truth, in->names[b->cls]);
        if (add_detection(&ev->dets, c, d) != EEB_OK)
            return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
        if (ev->files)
            fprintf(ev->files[b->cls], "%s %.17g %.17g %.17g %.17g %.17g\n", id, d.confidence,
                    d.box.x0, d.box.y0, d.box.x1, d.box.y1);
    }
    ev->score->detections += (uint64_t)n;
    p.boxes = ev->boxes, p.nboxes = n;
    p.truth = it->truth, p.ntruth = it->ntruth;
    return ev->opt->on_prediction ? ev->opt->on_prediction(ev->opt->arg, &p, err, errlen) : EEB_OK;
}

/* Opens the prediction file(s) under opt->predictions. */
static int open_outputs(struct evaluation *ev, char *err, size_t errlen)
{
    const char *where = ev->opt->predictions;
    if (!where)
        return EEB_OK;
    if (ev->score->prediction == EEB_PREDICTION_RANKED) {
        ev->csv = fopen(where, "w");
        if (!ev->csv)
            return eeb_errf(err, errlen, EEB_EIO, "%s: %s", where, strerror(errno));
        fputs("id,top1,top2,top3,top4,top5\n", ev->csv);
        return EEB_OK;
    }
    if (mkdir(where, 0777) != 0 && errno != EEXIST)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", where, strerror(errno));
    int classes = ev->info->classes;
    ev->files = calloc((size_t)classes, sizeof *ev->files);
    ev->paths = calloc((size_t)classes, sizeof *ev->paths);
    if (!ev->files || !ev->paths)
        return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    for (int c = 0; c < classes; c++) {
        if (asprintf(&ev->paths[c], "%s/comp4_det_test_%s.txt", where, ev->info->names[c]) < 0) {
            ev->paths[c] = NULL;
            return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
        }
        if (!(ev->files[c] = fopen(ev->paths[c], "w")))
            return eeb_errf(err, errlen, EEB_EIO, "%s: %s", ev->paths[c], strerror(errno));
    }
    return EEB_OK;
}

/* Closes the prediction files; a failed write or close is an error. */
static int close_outputs(struct evaluation *ev, int rc, char *err, size_t errlen)
{
    if (ev->csv && (ferror(ev->csv) | fclose(ev->csv)) && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: write failed", ev->opt->predictions);
    for (int c = 0; ev->files && c < ev->info->classes; c++)
        if (ev->files[c] && (ferror(ev->files[c]) | fclose(ev->files[c])) && rc == EEB_OK)
            rc = eeb_errf(err, errlen, EEB_EIO, "%s: write failed", ev->paths[c]);
    for (int c = 0; ev->paths && c < ev->info->classes; c++)
        free(ev->paths[c]);
    free(ev->files), free(ev->paths);
    return rc;
}

/* mAP over the truth set's classes, from the gathered detections. */
static int average_precision(struct evaluation *ev, char *err, size_t errlen)
{
    const struct eeb_voc_truth_set *t = &ev->truth;
    struct eeb_voc_class_result *r = calloc((size_t)t->nclasses + 1, sizeof *r);
    if (!r)
        return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    for (int c = 0; c < t->nclasses; c++)
        if (eeb_voc_class_ap(t->truth[c], t->ntruth[c], ev->dets.d[c], ev->dets.n[c], ev->opt->iou,
                             EEB_VOC_AP_ALL_POINTS, &r[c]) != EEB_OK) {
            free(r);
            return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
        }
    ev->score->map = eeb_voc_map(r, t->nclasses);
    free(r);
    return EEB_OK;
}

void eeb_task_eval_defaults(struct eeb_task_eval_options *opt)
{
    *opt = (struct eeb_task_eval_options){
        .batch = 32, .iou = 0.5, .nms_iou = 0.45, .min_score = 0.005f, .max_boxes = 100};
}

int eeb_task_evaluate(struct eeb_accel *a, const struct eeb_net *net, const char *shard_path,
                      const struct eeb_task_eval_options *opt, struct eeb_task_score *score,
                      char *err, size_t errlen)
{
    memset(score, 0, sizeof *score);
    struct eeb_shard *s;
    int rc = eeb_shard_open(&s, shard_path, err, errlen);
    if (rc != EEB_OK)
        return rc;
    const struct eeb_shard_info *in = eeb_shard_info(s);
    rc = eeb_task_check_model(net, in, err, errlen);
    if (rc != EEB_OK) {
        eeb_shard_close(s);
        return rc;
    }
    struct evaluation ev = {.net = net, .info = in, .opt = opt, .score = score};
    score->prediction = eeb_task_get(in->task)->prediction;
    const struct eeb_layer *loss = eeb_net_loss(net);
    size_t px = eeb_shard_pixels(in), outs = (size_t)loss->out.h * loss->out.w * loss->out.c;
    int batch = opt->batch, det = score->prediction == EEB_PREDICTION_BOXES;
    uint8_t *pixels = malloc((size_t)batch * px);
    float *out = malloc((size_t)batch * outs * sizeof *out);
    struct item *items = malloc((size_t)batch * sizeof *items);
    if (!pixels || !out || !items)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    if (rc == EEB_OK && det) {
        rc = eeb_voc_truth_load(shard_path, &ev.truth, err, errlen);
        int nc = ev.truth.nclasses + 1;
        ev.dets.d = calloc((size_t)nc, sizeof *ev.dets.d);
        ev.dets.n = calloc((size_t)nc, sizeof *ev.dets.n);
        ev.dets.cap = calloc((size_t)nc, sizeof *ev.dets.cap);
        ev.max_boxes = loss->out.h * loss->out.w * in->classes;
        ev.boxes = malloc((size_t)ev.max_boxes * sizeof *ev.boxes);
        if (rc == EEB_OK && (!ev.dets.d || !ev.dets.n || !ev.dets.cap || !ev.boxes))
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    }
    if (rc == EEB_OK)
        rc = open_outputs(&ev, err, errlen);
    for (int done = 0; rc == EEB_OK && !done;) {
        int n = 0;
        const struct eeb_record *r;
        while (n < batch && (rc = eeb_shard_next(s, &r, err, errlen)) == 1) {
            eeb_task_stack_frames(in, r->pixels, pixels + (size_t)n * px);
            struct item *it = &items[n++];
            it->index = r->index;
            memcpy(it->id, r->id, sizeof it->id);
            it->label = r->label;
            it->ntruth = r->nboxes;
            memcpy(it->truth, r->boxes, (size_t)r->nboxes * sizeof *r->boxes);
        }
        done = rc == 0;
        if (rc < 0 || n == 0)
            break;
        rc = EEB_OK;
        struct eeb_batch b = {n, pixels, NULL};
        rc = a->ops->predict(a, &b, out, err, errlen);
        for (int i = 0; rc == EEB_OK && i < n; i++)
            rc = judge(&ev, &items[i], out + (size_t)i * outs, err, errlen);
        score->items += (uint64_t)n;
        if (rc == EEB_OK && opt->progress)
            opt->progress(score->items, in->count, opt->arg);
    }
    if (rc == EEB_OK && det)
        rc = average_precision(&ev, err, errlen);
    if (rc == EEB_OK)
        score->value = det            ? score->map
                       : score->items ? (double)score->topk.top5 / score->items
                                      : 0;
    rc = close_outputs(&ev, rc, err, errlen);
    if (det) {
        for (int c = 0; ev.dets.d && c < ev.truth.nclasses; c++)
            free(ev.dets.d[c]);
        free(ev.dets.d), free(ev.dets.n), free(ev.dets.cap), free(ev.boxes);
        eeb_voc_truth_free(&ev.truth);
    }
    free(pixels), free(out), free(items);
    eeb_shard_close(s);
    return rc;
}
