/*
 * decode.c - eeb's nets' outputs turned into test-stage predictions:
 * ranked classes from a classifier's scores, boxes from the grid
 * detector's cells (decoded, non-maximum suppressed, cut).  The test stage
 * (evaluate.c) judges them; a system under test built on eeb's nets
 * reports them.
 *
 * Sections: the grid decoder; ranking classes; the decoder.
 */
#include "eeb_tasks.h"

#include "fpga/kernel/fx_isa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- the decoder ---- */

struct eeb_task_decoder {
    const struct eeb_net *net;
    struct eeb_shard_info info; /* the items' shape and classes (names not kept) */
    enum eeb_prediction_kind kind;
    float min_score;
    double nms_iou;
    int max_boxes;                /* reported per item */
    struct eeb_scored_box *boxes; /* one item's decoded boxes, before NMS */
    int decoded_max;              /* cells x classes */
};

int eeb_task_decoder_new(struct eeb_task_decoder **out, const struct eeb_net *net,
                         const struct eeb_shard_info *info, const struct eeb_task_eval_options *opt,
                         char *err, size_t errlen)
{
    *out = NULL;
    struct eeb_task_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    *d = (struct eeb_task_decoder){.net = net,
                                   .info = *info,
                                   .kind = eeb_task_get(info->task)->prediction,
                                   .min_score = opt->min_score,
                                   .nms_iou = opt->nms_iou,
                                   .max_boxes = opt->max_boxes};
    d->info.names = NULL;
    if (d->kind == EEB_PREDICTION_BOXES) {
        const struct eeb_layer *loss = eeb_net_loss(net);
        d->decoded_max = loss->out.h * loss->out.w * info->classes;
        d->boxes = malloc((size_t)d->decoded_max * sizeof *d->boxes);
        if (!d->boxes) {
            free(d);
            return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
        }
    }
    *out = d;
    return EEB_OK;
}

void eeb_task_decoder_free(struct eeb_task_decoder *d)
{
    if (!d)
        return;
    free(d->boxes);
    free(d);
}

int eeb_task_decode(struct eeb_task_decoder *d, const float *out, struct eeb_task_predicted *p,
                    char *err, size_t errlen)
{
    if (d->kind == EEB_PREDICTION_RANKED) {
        memset(p->ranked, 0, sizeof p->ranked);
        p->nranked = rank(out, d->info.classes, p->ranked);
        for (int k = 0; k < p->nranked; k++)
            p->scores[k] = out[p->ranked[k]];
        p->nboxes = 0;
        return EEB_OK;
    }
    int n = eeb_task_decode_grid(d->net, &d->info, out, d->min_score, d->boxes, d->decoded_max);
    n = eeb_nms(d->boxes, n, d->nms_iou);
    if (n < 0)
        return eeb_errf(err, errlen, EEB_ENOMEM, "evaluation: out of memory");
    if (n > d->max_boxes)
        n = d->max_boxes;
    if (n > 0)
        memcpy(p->boxes, d->boxes, (size_t)n * sizeof *p->boxes);
    p->nboxes = n, p->nranked = 0;
    return EEB_OK;
}
