/*
 * eeb_metrics.h - the tasks' metrics M_s: top-k accuracy for image and
 * video classification, and Pascal VOC average precision for detection,
 * computed exactly as the VOC devkit does (FACTS.md); and the greedy
 * non-maximum suppression a detector's raw boxes go through first.
 */
#ifndef EEB_METRICS_H
#define EEB_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* ---- classification ---- */

#define EEB_TOPK_MAX 5

/* Counts for top-1 and top-5 accuracy. */
struct eeb_topk {
    uint64_t items, top1, top5;
};

/* Adds one item: its true class and its predicted classes, best first;
 * only the first EEB_TOPK_MAX count. */
void eeb_topk_add(struct eeb_topk *t, int truth, const int *ranked, int nranked);

/*
 * Top-1 and top-5 accuracy of a prediction file against a classification
 * or video shard.  The file has a line per item: its record id, then its
 * predicted classes, best first, comma-separated; a class is a name from
 * the shard's header, or else its 0-based index.  A first line starting
 * "id," is a header; blank lines and lines starting '#' are skipped.  An
 * item without a line counts as wrong (*missing says how many); a line for
 * an unknown or repeated id, or naming an unknown class, is an error naming
 * the file and line.
 */
int eeb_topk_eval_csv(const char *shard_path, const char *csv_path, struct eeb_topk *out,
                      uint64_t *missing, char *err, size_t errlen);

/* ---- detection ---- */

/*
 * Boxes in the devkit's inclusive pixel coordinates: a box covers pixels
 * x0..x1 and y0..y1, so its width is x1 - x0 + 1.  (A shard's continuous
 * box [x0, x1] is pixels x0 + 1 .. x1.)
 */
struct eeb_voc_box {
    double x0, y0, x1, y1;
};

/* A ground-truth object of one class in one image. */
struct eeb_voc_truth {
    int image;
    int difficult;
    struct eeb_voc_box box;
};

/* A detection of one class: the image it is in and its confidence. */
struct eeb_voc_detection {
    int image;
    double confidence;
    struct eeb_voc_box box;
};

/* The devkit's IoU: areas and the intersection counted in whole pixels
 * (+1), 0 when the boxes do not overlap. */
double eeb_voc_iou(const struct eeb_voc_box *a, const struct eeb_voc_box *b);

enum eeb_voc_ap { EEB_VOC_AP_ALL_POINTS, EEB_VOC_AP_11_POINTS };

/* One class's result.  positives: its non-difficult ground truth; ap is
 * NaN when there are none (no recall exists; mAP leaves the class out). */
struct eeb_voc_class_result {
    double ap;
    int positives, detections, true_positives, false_positives;
};

/*
 * Average precision of one class, as the devkit computes it: detections
 * by descending confidence (ties in the given order); each goes to the
 * truth of highest IoU in its image; at or above min_iou it is a true
 * positive if that truth is not matched yet, a false positive if it is;
 * a difficult truth makes it neither; below min_iou, a false positive.
 * AP is the area under the monotone precision envelope at every recall
 * (VOC2010 on) or the mean of the envelope at recalls k * 0.1 (VOC2007).
 * Returns 0, or EEB_ENOMEM.
 */
int eeb_voc_class_ap(const struct eeb_voc_truth *truth, int ntruth,
                     const struct eeb_voc_detection *det, int ndet, double min_iou,
                     enum eeb_voc_ap method, struct eeb_voc_class_result *out);

/* The mean of the defined APs (NaN if none is). */
double eeb_voc_map(const struct eeb_voc_class_result *classes, int nclasses);

/* ---- non-maximum suppression ---- */

/* A detector's box in continuous coordinates, with its class and score. */
struct eeb_scored_box {
    int cls;
    float score;
    float x0, y0, x1, y1;
};

/*
 * Greedy non-maximum suppression per class: by descending score, a box is
 * kept unless it overlaps a kept box of its class by more than max_iou
 * (continuous IoU).  Reorders boxes so that the kept ones come first, best
 * first, and returns how many were kept, or EEB_ENOMEM.
 */
int eeb_nms(struct eeb_scored_box *boxes, int n, double max_iou);

#endif
