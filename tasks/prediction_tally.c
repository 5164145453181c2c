/*
 * prediction_tally.c - M_s counted again from stored prediction records
 * (eeb_prediction.h), as the judge counts it from the run database alone:
 * top-5 accuracy, or the VOC devkit's mAP@0.5 (all points) over the
 * classes the records name, each item its own image.
 */
#include "eeb_prediction.h"

#include "eeb_shard.h"

#include <math.h>
#include <stdlib.h>

struct eeb_prediction_tally {
    enum eeb_prediction_kind kind;
    struct eeb_topk topk;
    int nclasses; /* boxes: 1 + the highest class seen */
    struct eeb_voc_truth *truth[EEB_SHARD_MAX_CLASSES];
    int ntruth[EEB_SHARD_MAX_CLASSES], cap_truth[EEB_SHARD_MAX_CLASSES];
    struct eeb_voc_detection *det[EEB_SHARD_MAX_CLASSES];
    int ndet[EEB_SHARD_MAX_CLASSES], cap_det[EEB_SHARD_MAX_CLASSES];
};

int eeb_prediction_tally_new(struct eeb_prediction_tally **out, enum eeb_prediction_kind kind)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return EEB_ENOMEM;
    (*out)->kind = kind;
    return EEB_OK;
}

static int grow(void **a, int *n, int *cap, size_t size)
{
    if (*n < *cap)
        return EEB_OK;
    int c = *cap ? 2 * *cap : 64;
    void *p = realloc(*a, (size_t)c * size);
    if (!p)
        return EEB_ENOMEM;
    *a = p, *cap = c;
    return EEB_OK;
}

static void saw_class(struct eeb_prediction_tally *t, int c)
{
    t->nclasses = c + 1 > t->nclasses ? c + 1 : t->nclasses;
}

/* A shard's continuous [x0, x1] is the devkit's pixels x0 + 1 .. x1, as
 * the evaluator converts both. */
static int add_boxes(struct eeb_prediction_tally *t, int64_t item, const struct eeb_prediction *p)
{
    for (int i = 0; i < p->ntruth; i++) {
        const struct eeb_prediction_truth *b = &p->truth[i];
        int c = b->cls;
        if (grow((void **)&t->truth[c], &t->ntruth[c], &t->cap_truth[c], sizeof **t->truth))
            return EEB_ENOMEM;
        t->truth[c][t->ntruth[c]++] = (struct eeb_voc_truth){
            (int)item, b->difficult, {b->x0 + 1.0, b->y0 + 1.0, b->x1, b->y1}};
        saw_class(t, c);
    }
    for (int i = 0; i < p->nboxes; i++) {
        const struct eeb_prediction_box *b = &p->boxes[i];
        int c = b->cls;
        if (grow((void **)&t->det[c], &t->ndet[c], &t->cap_det[c], sizeof **t->det))
            return EEB_ENOMEM;
        t->det[c][t->ndet[c]++] = (struct eeb_voc_detection){
            (int)item, b->score, {b->x0 + 1.0, b->y0 + 1.0, b->x1, b->y1}};
        saw_class(t, c);
    }
    return EEB_OK;
}

int eeb_prediction_tally_add(struct eeb_prediction_tally *t, int64_t item, const char *text)
{
    struct eeb_prediction p;
    int rc = eeb_prediction_read(text, t->kind, &p);
    if (rc == EEB_OK && t->kind == EEB_PREDICTION_RANKED)
        eeb_topk_add(&t->topk, p.label, p.ranked, p.nranked);
    else if (rc == EEB_OK)
        rc = add_boxes(t, item, &p);
    eeb_prediction_free(&p);
    return rc;
}

int eeb_prediction_tally_value(struct eeb_prediction_tally *t, uint64_t items, double *m_s)
{
    if (t->kind == EEB_PREDICTION_RANKED) {
        *m_s = items ? (double)t->topk.top5 / (double)items : NAN;
        return EEB_OK;
    }
    *m_s = NAN;
    struct eeb_voc_class_result *res = calloc((size_t)t->nclasses + 1, sizeof *res);
    int rc = res ? EEB_OK : EEB_ENOMEM;
    for (int c = 0; rc == EEB_OK && c < t->nclasses; c++)
        rc = eeb_voc_class_ap(t->truth[c], t->ntruth[c], t->det[c], t->ndet[c], 0.5,
                              EEB_VOC_AP_ALL_POINTS, &res[c]);
    if (rc == EEB_OK)
        *m_s = eeb_voc_map(res, t->nclasses);
    free(res);
    return rc;
}

void eeb_prediction_tally_free(struct eeb_prediction_tally *t)
{
    if (!t)
        return;
    for (int c = 0; c < EEB_SHARD_MAX_CLASSES; c++)
        free(t->truth[c]), free(t->det[c]);
    free(t);
}
