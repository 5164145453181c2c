/*
 * metrics.c - top-k accuracy, Pascal VOC average precision, and
 * non-maximum suppression.
 */
#include "common/eeb_common.h"
#include "eeb_metrics.h"

#include <math.h>
#include <stdlib.h>

void eeb_topk_add(struct eeb_topk *t, int truth, const int *ranked, int nranked)
{
    t->items++;
    if (nranked > 0 && ranked[0] == truth)
        t->top1++;
    for (int i = 0; i < nranked && i < EEB_TOPK_MAX; i++)
        if (ranked[i] == truth) {
            t->top5++;
            break;
        }
}

double eeb_voc_iou(const struct eeb_voc_box *a, const struct eeb_voc_box *b)
{
    double iw = fmin(a->x1, b->x1) - fmax(a->x0, b->x0) + 1;
    double ih = fmin(a->y1, b->y1) - fmax(a->y0, b->y0) + 1;
    if (iw <= 0 || ih <= 0)
        return 0;
    double inter = iw * ih;
    double area_a = (a->x1 - a->x0 + 1) * (a->y1 - a->y0 + 1);
    double area_b = (b->x1 - b->x0 + 1) * (b->y1 - b->y0 + 1);
    return inter / (area_a + area_b - inter);
}

/* A detection's place in the ranking: descending confidence, equal
 * confidences in their given order (MATLAB's sort in the devkit is stable). */
struct ranked {
    double key;
    int index;
};

static int by_key_descending(const void *pa, const void *pb)
{
    const struct ranked *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key > b->key ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

/* The indices 0..n-1 ranked by key(i), best first; NULL if out of memory. */
static struct ranked *rank(int n, double (*key)(const void *, int), const void *items)
{
    struct ranked *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r)
        return NULL;
    for (int i = 0; i < n; i++)
        r[i] = (struct ranked){key(items, i), i};
    qsort(r, (size_t)n, sizeof *r, by_key_descending);
    return r;
}

static double confidence_of(const void *items, int i)
{
    return ((const struct eeb_voc_detection *)items)[i].confidence;
}

/* The area under the precision envelope: at each recall, the best
 * precision at that recall or beyond, summed over the recall steps. */
static double all_point_ap(const double *rec, const double *prec, int n)
{
    double ap = 0, envelope = 0;
    for (int i = n - 1; i >= 0; i--) {
        envelope = fmax(envelope, prec[i]);
        double step = rec[i] - (i > 0 ? rec[i - 1] : 0);
        ap += step * envelope;
    }
    return ap;
}

/* The mean over t = 0, 0.1, ..., 1 of the best precision at recall >= t.
 * t is k * 0.1 in double, as numpy's arange(0, 1.1, 0.1) gives it in the
 * Python implementations people run (0.30000000000000004, not 0.3), so a
 * recall of exactly 3/10 is below that point (FACTS.md). */
static double eleven_point_ap(const double *rec, const double *prec, int n)
{
    double ap = 0;
    for (int k = 0; k <= 10; k++) {
        double t = k * 0.1, best = 0;
        for (int i = 0; i < n; i++)
            if (rec[i] >= t && prec[i] > best)
                best = prec[i];
        ap += best / 11;
    }
    return ap;
}

/* The truth of each image together: by_image[first[i] .. first[i + 1])
 * are the indices of image i's boxes, in their given order (a counting
 * sort), so that each detection looks at its own image's boxes only. */
static int group_by_image(const struct eeb_voc_truth *truth, int ntruth, int **first,
                          int **by_image, int *nimages)
{
    int n = 0;
    for (int g = 0; g < ntruth; g++)
        n = truth[g].image >= n ? truth[g].image + 1 : n;
    *first = calloc((size_t)n + 2, sizeof **first);
    *by_image = malloc((size_t)(ntruth > 0 ? ntruth : 1) * sizeof **by_image);
    if (!*first || !*by_image)
        return EEB_ENOMEM;
    for (int g = 0; g < ntruth; g++)
        (*first)[truth[g].image + 2]++;
    for (int i = 2; i <= n + 1; i++)
        (*first)[i] += (*first)[i - 1];
    for (int g = 0; g < ntruth; g++) /* first[i + 1] is image i's next free slot */
        (*by_image)[(*first)[truth[g].image + 1]++] = g;
    *nimages = n;
    return EEB_OK;
}

int eeb_voc_class_ap(const struct eeb_voc_truth *truth, int ntruth,
                     const struct eeb_voc_detection *det, int ndet, double min_iou,
                     enum eeb_voc_ap method, struct eeb_voc_class_result *out)
{
    *out = (struct eeb_voc_class_result){.detections = ndet};
    for (int g = 0; g < ntruth; g++)
        out->positives += !truth[g].difficult;
    int *first = NULL, *by_image = NULL, nimages = 0;
    int rc = group_by_image(truth, ntruth, &first, &by_image, &nimages);
    struct ranked *order = rank(ndet, confidence_of, det);
    char *taken = calloc((size_t)(ntruth > 0 ? ntruth : 1), 1);
    double *rec = malloc((size_t)(ndet > 0 ? ndet : 1) * sizeof *rec);
    double *prec = malloc((size_t)(ndet > 0 ? ndet : 1) * sizeof *prec);
    if (rc || !order || !taken || !rec || !prec) {
        free(first), free(by_image), free(order), free(taken), free(rec), free(prec);
        return EEB_ENOMEM;
    }
    int n = 0; /* detections that count: all but those on difficult truth */
    for (int i = 0; i < ndet; i++) {
        const struct eeb_voc_detection *d = &det[order[i].index];
        double best = 0; /* boxes that do not overlap are never matched */
        int match = -1;
        int lo = 0, hi = 0; /* the boxes of the detection's image */
        if (d->image >= 0 && d->image < nimages)
            lo = first[d->image], hi = first[d->image + 1];
        for (int j = lo; j < hi; j++) {
            int g = by_image[j];
            double iou = eeb_voc_iou(&d->box, &truth[g].box);
            if (iou > best) /* the first of equal IoUs, as the devkit's max */
                best = iou, match = g;
        }
        if (match >= 0 && best >= min_iou) {
            if (truth[match].difficult)
                continue; /* neither a true nor a false positive */
            if (!taken[match]) {
                taken[match] = 1;
                out->true_positives++;
            } else {
                out->false_positives++;
            }
        } else {
            out->false_positives++;
        }
        int tp = out->true_positives, fp = out->false_positives;
        rec[n] = out->positives > 0 ? (double)tp / out->positives : 0;
        prec[n] = (double)tp / (tp + fp);
        n++;
    }
    if (out->positives == 0)
        out->ap = NAN;
    else
        out->ap = method == EEB_VOC_AP_11_POINTS ? eleven_point_ap(rec, prec, n)
                                                 : all_point_ap(rec, prec, n);
    free(first), free(by_image), free(order), free(taken), free(rec), free(prec);
    return EEB_OK;
}

double eeb_voc_map(const struct eeb_voc_class_result *classes, int nclasses)
{
    double sum = 0;
    int defined = 0;
    for (int c = 0; c < nclasses; c++)
        if (!isnan(classes[c].ap))
            sum += classes[c].ap, defined++;
    return defined ? sum / defined : NAN;
}

/* ---- non-maximum suppression ---- */

static double score_of(const void *items, int i)
{
    return ((const struct eeb_scored_box *)items)[i].score;
}

static double continuous_iou(const struct eeb_scored_box *a, const struct eeb_scored_box *b)
{
    double iw = fmin(a->x1, b->x1) - fmax(a->x0, b->x0);
    double ih = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
    if (iw <= 0 || ih <= 0)
        return 0;
    double inter = iw * ih;
    double area_a = (double)(a->x1 - a->x0) * (a->y1 - a->y0);
    double area_b = (double)(b->x1 - b->x0) * (b->y1 - b->y0);
    return inter / (area_a + area_b - inter);
}

int eeb_nms(struct eeb_scored_box *boxes, int n, double max_iou)
{
    struct ranked *order = rank(n, score_of, boxes);
    struct eeb_scored_box *sorted = malloc((size_t)(n > 0 ? n : 1) * sizeof *sorted);
    if (!order || !sorted) {
        free(order), free(sorted);
        return EEB_ENOMEM;
    }
    for (int i = 0; i < n; i++)
        sorted[i] = boxes[order[i].index];
    int kept = 0, dropped = n; /* kept from the front, suppressed from the back */
    for (int i = 0; i < n; i++) {
        int keep = 1;
        for (int j = 0; j < kept && keep; j++)
            if (boxes[j].cls == sorted[i].cls && continuous_iou(&boxes[j], &sorted[i]) > max_iou)
                keep = 0;
        if (keep)
            boxes[kept++] = sorted[i];
        else
            boxes[--dropped] = sorted[i];
    }
    free(order), free(sorted);
    return kept;
}
