/*
 * eeb_prediction.h - the prediction record: one test item's prediction as
 * the run database stores it (a prediction's payload), as `eeb run`'s test
 * stage writes it, as the client sends it to the server (its truth left
 * out) and the server stores it (its own truth added), and as the judge
 * reads it to count M_s again.  This header owns the record: its keys, its
 * one writer and its one reader.  Stored runs hold these bytes, so a key
 * or a number's format never changes.
 *
 * A task whose test stage ranks classes (eeb_task_ops.prediction):
 *
 *   {"id":"ft_test_000001","label":10,"top":[18,10,14,2,6]}
 *
 *   "top" the best classes, best first (at most EEB_TOPK_MAX count), and
 *   "label" the item's true class.
 *
 * A task whose test stage reports boxes:
 *
 *   {"id":"img7","boxes":[[2,0.83,1.5,2.0,30.25,28.0]],"truth":[[2,0,2.0,3.0,29.0,27.0]]}
 *
 *   "boxes" [class, score, x0, y0, x1, y1] after NMS, best first, and
 *   "truth" the item's boxes [class, difficult (0 or 1), x0, y0, x1, y1];
 *   corners continuous, in pixels of the shard's image.
 *
 * "label" and "truth" are the truth: an official run's record has none
 * (the server's test inputs carry none, and the client sends none); the
 * server adds its own before it stores the record.
 */
#ifndef EEB_PREDICTION_H
#define EEB_PREDICTION_H

#include "eeb_metrics.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The record's keys. */
#define EEB_PREDICTION_KEY_ID    "id"
#define EEB_PREDICTION_KEY_LABEL "label" /* truth: the true class */
#define EEB_PREDICTION_KEY_TOP   "top"
#define EEB_PREDICTION_KEY_BOXES "boxes"
#define EEB_PREDICTION_KEY_TRUTH "truth" /* truth: the true boxes */

/* What a task's test stage predicts for an item, and so which record it
 * writes and how M_s is counted from it. */
enum eeb_prediction_kind {
    EEB_PREDICTION_RANKED, /* the best classes, against the item's class: top-5 accuracy */
    EEB_PREDICTION_BOXES,  /* scored boxes, against the item's boxes: VOC mAP@0.5 */
};

/* A detection: [class, score, x0, y0, x1, y1]. */
struct eeb_prediction_box {
    int cls;
    double score;
    double x0, y0, x1, y1;
};

/* A true box: [class, difficult, x0, y0, x1, y1]. */
struct eeb_prediction_truth {
    int cls, difficult;
    double x0, y0, x1, y1;
};

/* One record, as written or read. */
struct eeb_prediction {
    enum eeb_prediction_kind kind;
    const char *id;
    int has_truth; /* "label" or "truth" is there */
    int label;     /* ranked: the true class */
    int nranked;   /* ranked: the best classes, best first */
    int ranked[EEB_TOPK_MAX];
    int nboxes; /* boxes: the detections */
    struct eeb_prediction_box *boxes;
    int ntruth; /* boxes: the true boxes */
    struct eeb_prediction_truth *truth;
};

/* The record as stored: compact JSON, keys in the order above (newly
 * allocated, free it), or NULL if out of memory. */
char *eeb_prediction_write(const struct eeb_prediction *p);

/*
 * Reads a stored record of the given kind into out: EEB_OK, or EEB_EFORMAT
 * if it is not JSON, has no "top" array or integer "label" (ranked), or no
 * "boxes" and "truth" arrays of six numbers each with a whole class in
 * 0..EEB_SHARD_MAX_CLASSES-1 (boxes); EEB_ENOMEM.  A ranked record keeps
 * its first EEB_TOPK_MAX classes.  out->id is NULL (the item is the
 * database's); free out with eeb_prediction_free, whatever is returned.
 */
int eeb_prediction_read(const char *text, enum eeb_prediction_kind kind,
                        struct eeb_prediction *out);
void eeb_prediction_free(struct eeb_prediction *p);

/* The same, for what the system said alone: the truth is read where the
 * record holds it (has_truth), and not required (an official run's
 * record has none).  The accuracy audit reads the system's answers so. */
int eeb_prediction_read_said(const char *text, enum eeb_prediction_kind kind,
                             struct eeb_prediction *out);

/* Removes the truth ("label", "truth") from a record read as JSON: what
 * the client sends the server. */
void eeb_prediction_drop_truth(json_t *record);

/* The test stage's prediction (eeb_tasks.h) as a record, with its truth
 * or without: eeb_prediction_write's text, or NULL if out of memory. */
struct eeb_task_prediction;
char *eeb_prediction_write_evaluated(const struct eeb_task_prediction *tp, int with_truth);

/*
 * M_s counted again from a run's stored records, as `eeb check` and the
 * judge count it: top-5 accuracy over the items, or mAP@0.5 (all-point
 * AP, the classes those records name).  Add every record, then ask.
 */
struct eeb_prediction_tally;

/* EEB_OK or EEB_ENOMEM. */
int eeb_prediction_tally_new(struct eeb_prediction_tally **out, enum eeb_prediction_kind kind);
/* Adds the record of item (its position in the test shard): EEB_OK, or
 * what eeb_prediction_read returns for it. */
int eeb_prediction_tally_add(struct eeb_prediction_tally *t, int64_t item, const char *text);
/* M_s over `items` test items (NaN for none, or a mAP without a class
 * with ground truth): EEB_OK, or EEB_ENOMEM. */
int eeb_prediction_tally_value(struct eeb_prediction_tally *t, uint64_t items, double *m_s);
void eeb_prediction_tally_free(struct eeb_prediction_tally *t);

#endif
