/*
 * evaluate.c - the test stage of a task: every record of a test shard
 * predicted through a predictor (eeb's net on an accelerator, or a system
 * under test), the predictions judged and the task's metric M_s computed.
 *
 * Sections: judging an item; the prediction files it can write (the
 * formats `eeb eval` reads); the evaluation loop; eeb's net on an
 * accelerator as the predictor.
 */
#include "eeb_tasks.h"

#include "eeb_voc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- judging an item ---- */

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
    const struct eeb_shard_info *info;
    const struct eeb_task_eval_options *opt;
    struct eeb_task_score *score;
    struct eeb_voc_truth_set truth; /* det */
    struct detections dets;
    FILE *csv;    /* cls, video predictions */
    FILE **files; /* det: per shard class */
    char **paths; /* and their names */
};

/* One item of a batch, as the shard gave it. */
struct item {
    uint64_t index;
    char id[EEB_SHARD_MAX_ID + 1];
    int label;
    int ntruth; /* det, when predictions are handed on */
    struct eeb_box truth[EEB_SHARD_MAX_BOXES];
};

/* A predictor's answer within its bounds, so that judging it reads no
 * class the shard does not have. */
static int in_bounds(const struct evaluation *ev, const struct item *it,
                     const struct eeb_task_predicted *pr, char *err, size_t errlen)
{
    int classes = ev->info->classes;
    if (ev->score->prediction == EEB_PREDICTION_RANKED) {
        if (pr->nranked < 0 || pr->nranked > EEB_TOPK_MAX)
            return eeb_errf(err, errlen, EEB_EINVAL, "test item %s: %d ranked classes (0..%d)",
                            it->id, pr->nranked, EEB_TOPK_MAX);
        for (int k = 0; k < pr->nranked; k++)
            if (pr->ranked[k] < 0 || pr->ranked[k] >= classes)
                return eeb_errf(err, errlen, EEB_EINVAL,
                                "test item %s: ranked class %d is %d (the shard's are 0..%d)",
                                it->id, k + 1, pr->ranked[k], classes - 1);
        return EEB_OK;
    }
    if (pr->nboxes < 0 || pr->nboxes > ev->opt->max_boxes)
        return eeb_errf(err, errlen, EEB_EINVAL, "test item %s: %d boxes (0..%d)", it->id,
                        pr->nboxes, ev->opt->max_boxes);
    for (int i = 0; i < pr->nboxes; i++)
        if (pr->boxes[i].cls < 0 || pr->boxes[i].cls >= classes)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "test item %s: box %d has class %d (the shard's are 0..%d)", it->id,
                            i + 1, pr->boxes[i].cls, classes - 1);
    return EEB_OK;
}

/* Judges one item's prediction, writes it to the prediction files and
 * hands it on. */
static int judge(struct evaluation *ev, const struct item *it, const struct eeb_task_predicted *pr,
                 char *err, size_t errlen)
{
    const struct eeb_shard_info *in = ev->info;
    const char *id = it->id;
    struct eeb_task_prediction p = {
        .kind = ev->score->prediction, .index = it->index, .id = id, .label = it->label};
    if (p.kind == EEB_PREDICTION_RANKED) {
        const int *ranked = pr->ranked;
        int n = pr->nranked;
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
    int n = pr->nboxes;
    int image = eeb_voc_image_index(&ev->truth, id);
    for (int i = 0; i < n; i++) {
        const struct eeb_scored_box *b = &pr->boxes[i];
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
    p.boxes = pr->boxes, p.nboxes = n;
    p.truth = it->truth, p.ntruth = it->ntruth;
    return ev->opt->on_prediction ? ev->opt->on_prediction(ev->opt->arg, &p, err, errlen) : EEB_OK;
}

/* ---- the prediction files ---- */

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

/* ---- the evaluation loop ---- */

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

/* Reads up to `batch` records: their pixels as the shard holds them, and
 * what judging them needs.  Returns how many (fewer than batch: the shard
 * ran out), or a negative status. */
static int read_batch(struct eeb_shard *s, int batch, uint8_t *pixels, struct item *items,
                      char *err, size_t errlen)
{
    size_t px = eeb_shard_pixels(eeb_shard_info(s));
    int n = 0, rc = 0;
    const struct eeb_record *r;
    while (n < batch && (rc = eeb_shard_next(s, &r, err, errlen)) == 1) {
        memcpy(pixels + (size_t)n * px, r->pixels, px);
        struct item *it = &items[n++];
        it->index = r->index;
        memcpy(it->id, r->id, sizeof it->id);
        it->label = r->label;
        it->ntruth = r->nboxes;
        memcpy(it->truth, r->boxes, (size_t)r->nboxes * sizeof *r->boxes);
    }
    return rc < 0 ? rc : n;
}

int eeb_task_evaluate_with(const struct eeb_task_predictor *p, const char *shard_path,
                           const struct eeb_task_eval_options *opt, struct eeb_task_score *score,
                           char *err, size_t errlen)
{
    memset(score, 0, sizeof *score);
    struct eeb_shard *s;
    int rc = eeb_shard_open(&s, shard_path, err, errlen);
    if (rc != EEB_OK)
        return rc;
    const struct eeb_shard_info *in = eeb_shard_info(s);
    if (p->start && (rc = p->start(p->arg, in, opt, err, errlen)) != EEB_OK) {
        eeb_shard_close(s);
        return rc;
    }
    struct evaluation ev = {.info = in, .opt = opt, .score = score};
    score->prediction = eeb_task_get(in->task)->prediction;
    int batch = opt->batch, det = score->prediction == EEB_PREDICTION_BOXES;
    size_t room = det && opt->max_boxes > 0 ? (size_t)opt->max_boxes : 1; /* boxes an item */
    uint8_t *pixels = malloc((size_t)batch * eeb_shard_pixels(in));
    struct item *items = malloc((size_t)batch * sizeof *items);
    struct eeb_task_predicted *said = malloc((size_t)batch * sizeof *said);
    struct eeb_scored_box *boxes = malloc((size_t)batch * room * sizeof *boxes);
    if (!pixels || !items || !said || !boxes)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    if (rc == EEB_OK && det) {
        rc = eeb_voc_truth_load(shard_path, &ev.truth, err, errlen);
        int nc = ev.truth.nclasses + 1;
        ev.dets.d = calloc((size_t)nc, sizeof *ev.dets.d);
        ev.dets.n = calloc((size_t)nc, sizeof *ev.dets.n);
        ev.dets.cap = calloc((size_t)nc, sizeof *ev.dets.cap);
        if (rc == EEB_OK && (!ev.dets.d || !ev.dets.n || !ev.dets.cap))
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    }
    if (rc == EEB_OK)
        rc = open_outputs(&ev, err, errlen);
    while (rc == EEB_OK) {
        int n = read_batch(s, batch, pixels, items, err, errlen);
        if (n <= 0) {
            rc = n;
            break;
        }
        for (int i = 0; i < n; i++)
            said[i] = (struct eeb_task_predicted){.boxes = boxes + (size_t)i * room};
        struct eeb_task_batch b = {.n = n, .pixels = pixels};
        rc = p->predict(p->arg, &b, said, err, errlen);
        for (int i = 0; rc == EEB_OK && i < n; i++)
            if ((rc = in_bounds(&ev, &items[i], &said[i], err, errlen)) == EEB_OK)
                rc = judge(&ev, &items[i], &said[i], err, errlen);
        score->items += (uint64_t)n;
        if (rc == EEB_OK && opt->progress)
            opt->progress(score->items, in->count, opt->arg);
        if (n < batch)
            break; /* the shard ran out */
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
        free(ev.dets.d), free(ev.dets.n), free(ev.dets.cap);
        eeb_voc_truth_free(&ev.truth);
    }
    free(pixels), free(items), free(said), free(boxes);
    eeb_shard_close(s);
    return rc;
}

/* ---- eeb's net on an accelerator ---- */

struct net_predictor {
    struct eeb_accel *a;
    const struct eeb_net *net;
    const struct eeb_shard_info *info; /* the test shard's, while it is open */
    struct eeb_task_decoder *decoder;
    uint8_t *stacked; /* a batch with frames stacked, as the net takes it */
    float *out;       /* its outputs */
    size_t outs;      /* floats an item */
};

static int net_start(void *arg, const struct eeb_shard_info *info,
                     const struct eeb_task_eval_options *opt, char *err, size_t errlen)
{
    struct net_predictor *np = arg;
    int rc = eeb_task_check_model(np->net, info, err, errlen);
    if (rc != EEB_OK)
        return rc;
    const struct eeb_layer *loss = eeb_net_loss(np->net);
    np->info = info;
    np->outs = (size_t)loss->out.h * loss->out.w * loss->out.c;
    np->stacked = malloc((size_t)opt->batch * eeb_shard_pixels(info));
    np->out = malloc((size_t)opt->batch * np->outs * sizeof *np->out);
    if (!np->stacked || !np->out)
        return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    return eeb_task_decoder_new(&np->decoder, np->net, info, opt, err, errlen);
}

static int net_predict(void *arg, const struct eeb_task_batch *b, struct eeb_task_predicted *out,
                       char *err, size_t errlen)
{
    struct net_predictor *np = arg;
    size_t px = eeb_shard_pixels(np->info);
    for (int i = 0; i < b->n; i++)
        eeb_task_stack_frames(np->info, b->pixels + (size_t)i * px, np->stacked + (size_t)i * px);
    struct eeb_batch nb = {b->n, np->stacked, NULL};
    int rc = np->a->ops->predict(np->a, &nb, np->out, err, errlen);
    for (int i = 0; rc == EEB_OK && i < b->n; i++)
        rc = eeb_task_decode(np->decoder, np->out + (size_t)i * np->outs, &out[i], err, errlen);
    return rc;
}

int eeb_task_evaluate(struct eeb_accel *a, const struct eeb_net *net, const char *shard_path,
                      const struct eeb_task_eval_options *opt, struct eeb_task_score *score,
                      char *err, size_t errlen)
{
    struct net_predictor np = {.a = a, .net = net};
    struct eeb_task_predictor p = {.start = net_start, .predict = net_predict, .arg = &np};
    int rc = eeb_task_evaluate_with(&p, shard_path, opt, score, err, errlen);
    eeb_task_decoder_free(np.decoder);
    free(np.stacked), free(np.out);
    return rc;
}
