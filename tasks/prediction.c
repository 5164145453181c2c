/*
 * prediction.c - the prediction record (eeb_prediction.h): its writer, its
 * reader, the truth taken out of it, and the test stage's prediction made
 * into one.
 */
#include "eeb_prediction.h"

#include "eeb_shard.h"
#include "eeb_tasks.h"

#include <math.h>
#include <stdlib.h>

/* ---- the writer ---- */

static json_t *ranked_json(const struct eeb_prediction *p)
{
    json_t *top = json_array();
    for (int k = 0; k < p->nranked; k++)
        json_array_append_new(top, json_integer(p->ranked[k]));
    return top;
}

static json_t *boxes_json(const struct eeb_prediction *p)
{
    json_t *boxes = json_array();
    for (int k = 0; k < p->nboxes; k++) {
        const struct eeb_prediction_box *b = &p->boxes[k];
        json_array_append_new(
            boxes, json_pack("[i, f, f, f, f, f]", b->cls, b->score, b->x0, b->y0, b->x1, b->y1));
    }
    return boxes;
}

static json_t *truth_json(const struct eeb_prediction *p)
{
    json_t *truth = json_array();
    for (int k = 0; k < p->ntruth; k++) {
        const struct eeb_prediction_truth *b = &p->truth[k];
        json_array_append_new(truth, json_pack("[i, i, f, f, f, f]", b->cls, b->difficult, b->x0,
                                               b->y0, b->x1, b->y1));
    }
    return truth;
}

char *eeb_prediction_write(const struct eeb_prediction *p)
{
    json_t *o = json_pack("{s:s}", EEB_PREDICTION_KEY_ID, p->id);
    if (!o)
        return NULL;
    if (p->kind == EEB_PREDICTION_RANKED) {
        if (p->has_truth)
            json_object_set_new(o, EEB_PREDICTION_KEY_LABEL, json_integer(p->label));
        json_object_set_new(o, EEB_PREDICTION_KEY_TOP, ranked_json(p));
    } else {
        json_object_set_new(o, EEB_PREDICTION_KEY_BOXES, boxes_json(p));
        if (p->has_truth)
            json_object_set_new(o, EEB_PREDICTION_KEY_TRUTH, truth_json(p));
    }
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

/* ---- the reader ---- */

/* Six numbers, the first a whole class eeb can hold: into v. */
static int six_numbers(json_t *b, double v[6])
{
    if (json_array_size(b) != 6)
        return EEB_EFORMAT;
    for (int i = 0; i < 6; i++) {
        json_t *x = json_array_get(b, (size_t)i);
        if (!json_is_number(x))
            return EEB_EFORMAT;
        v[i] = json_number_value(x);
    }
    return v[0] >= 0 && v[0] < EEB_SHARD_MAX_CLASSES && v[0] == floor(v[0]) ? EEB_OK : EEB_EFORMAT;
}

/* need_truth: a record without its truth is EEB_EFORMAT; else the truth
 * is read where it is there (has_truth says). */
static int read_ranked(json_t *o, int need_truth, struct eeb_prediction *out)
{
    json_t *top = json_object_get(o, EEB_PREDICTION_KEY_TOP), *label;
    label = json_object_get(o, EEB_PREDICTION_KEY_LABEL);
    if ((need_truth && !json_is_integer(label)) || (label && !json_is_integer(label)) ||
        !json_is_array(top))
        return EEB_EFORMAT;
    out->has_truth = label != NULL;
    out->label = label ? (int)json_integer_value(label) : 0;
    size_t i;
    json_t *x;
    json_array_foreach(top, i, x)
    {
        if (out->nranked < EEB_TOPK_MAX)
            out->ranked[out->nranked++] = (int)json_integer_value(x);
    }
    return EEB_OK;
}

static int read_boxes(json_t *o, int need_truth, struct eeb_prediction *out)
{
    json_t *boxes = json_object_get(o, EEB_PREDICTION_KEY_BOXES);
    json_t *truth = json_object_get(o, EEB_PREDICTION_KEY_TRUTH);
    if (!json_is_array(boxes) || (truth && !json_is_array(truth)) || (need_truth && !truth))
        return EEB_EFORMAT;
    out->has_truth = truth != NULL;
    out->boxes = calloc(json_array_size(boxes) + 1, sizeof *out->boxes);
    out->truth = calloc(json_array_size(truth) + 1, sizeof *out->truth);
    if (!out->boxes || !out->truth)
        return EEB_ENOMEM;
    size_t i;
    json_t *b;
    double v[6];
    json_array_foreach(truth, i, b)
    {
        if (six_numbers(b, v) != EEB_OK)
            return EEB_EFORMAT;
        out->truth[out->ntruth++] =
            (struct eeb_prediction_truth){(int)v[0], v[1] != 0, v[2], v[3], v[4], v[5]};
    }
    json_array_foreach(boxes, i, b)
    {
        if (six_numbers(b, v) != EEB_OK)
            return EEB_EFORMAT;
        out->boxes[out->nboxes++] =
            (struct eeb_prediction_box){(int)v[0], v[1], v[2], v[3], v[4], v[5]};
    }
    return EEB_OK;
}

static int read_record(const char *text, enum eeb_prediction_kind kind, int need_truth,
                       struct eeb_prediction *out)
{
    *out = (struct eeb_prediction){.kind = kind};
    json_t *o = json_loads(text, 0, NULL);
    if (!o)
        return EEB_EFORMAT;
    int rc = kind == EEB_PREDICTION_RANKED ? read_ranked(o, need_truth, out)
                                           : read_boxes(o, need_truth, out);
    json_decref(o);
    return rc;
}

int eeb_prediction_read(const char *text, enum eeb_prediction_kind kind, struct eeb_prediction *out)
{
    return read_record(text, kind, 1, out);
}

int eeb_prediction_read_said(const char *text, enum eeb_prediction_kind kind,
                             struct eeb_prediction *out)
{
    return read_record(text, kind, 0, out);
}

void eeb_prediction_free(struct eeb_prediction *p)
{
    free(p->boxes), free(p->truth);
    p->boxes = NULL, p->truth = NULL;
    p->nboxes = p->ntruth = 0;
}

void eeb_prediction_drop_truth(json_t *record)
{
    json_object_del(record, EEB_PREDICTION_KEY_LABEL);
    json_object_del(record, EEB_PREDICTION_KEY_TRUTH);
}

/* ---- the test stage's prediction ---- */

char *eeb_prediction_write_evaluated(const struct eeb_task_prediction *tp, int with_truth)
{
    struct eeb_prediction p = {
        .kind = tp->kind, .id = tp->id, .has_truth = with_truth, .label = tp->label};
    for (int k = 0; k < tp->nranked && k < EEB_TOPK_MAX; k++)
        p.ranked[p.nranked++] = tp->ranked[k];
    p.boxes = calloc((size_t)tp->nboxes + 1, sizeof *p.boxes);
    p.truth = calloc((size_t)tp->ntruth + 1, sizeof *p.truth);
    char *text = NULL;
    if (p.boxes && p.truth) {
        for (int k = 0; k < tp->nboxes; k++) {
            const struct eeb_scored_box *b = &tp->boxes[k];
            p.boxes[p.nboxes++] =
                (struct eeb_prediction_box){b->cls, b->score, b->x0, b->y0, b->x1, b->y1};
        }
        for (int k = 0; k < tp->ntruth; k++) {
            const struct eeb_box *b = &tp->truth[k];
            p.truth[p.ntruth++] =
                (struct eeb_prediction_truth){b->cls, b->difficult, b->x0, b->y0, b->x1, b->y1};
        }
        text = eeb_prediction_write(&p);
    }
    eeb_prediction_free(&p);
    return text;
}
