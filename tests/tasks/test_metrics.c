/*
 * test_metrics.c - top-k accuracy, VOC average precision and NMS on cases
 * worked out by hand, each built so that a plausible wrong implementation
 * (no +1 in the IoU, greedy matching to the best free box, k/10 recall
 * points, a difficult box counted) gives a different number.
 */
#include "tasks/eeb_metrics.h"

#include <criterion/criterion.h>
#include <math.h>

#define BOX(a, b, c, d) ((struct eeb_voc_box){a, b, c, d})

static struct eeb_voc_class_result ap_of(const struct eeb_voc_truth *t, int nt,
                                         const struct eeb_voc_detection *d, int nd,
                                         enum eeb_voc_ap method)
{
    struct eeb_voc_class_result r;
    cr_assert_eq(eeb_voc_class_ap(t, nt, d, nd, 0.5, method, &r), 0);
    return r;
}

Test(metrics, topk_counts_only_the_first_five)
{
    struct eeb_topk t = {0};
    eeb_topk_add(&t, 3, (const int[]){3, 1}, 2);             /* top-1 */
    eeb_topk_add(&t, 3, (const int[]){1, 2, 4, 5, 3}, 5);    /* top-5 only */
    eeb_topk_add(&t, 3, (const int[]){1, 1, 1, 1, 1, 3}, 6); /* sixth: a miss */
    eeb_topk_add(&t, 3, (const int[]){0}, 0);                /* no prediction */
    cr_assert_eq(t.items, 4);
    cr_assert_eq(t.top1, 1);
    cr_assert_eq(t.top5, 2);
}

Test(metrics, iou_counts_whole_pixels)
{
    /* pixels 0..9 x 0..9 (100) and 0..9 x 0..4 (50): 50 / 100 with the
     * devkit's +1; without it, 9 x 4 / (9 x 9) = 0.44 */
    struct eeb_voc_box a = BOX(0, 0, 9, 9), b = BOX(0, 0, 9, 4);
    cr_assert_float_eq(eeb_voc_iou(&a, &b), 0.5, 1e-15);
    struct eeb_voc_box far = BOX(10, 0, 19, 9); /* touching, not overlapping */
    cr_assert_eq(eeb_voc_iou(&a, &far), 0);
}

Test(metrics, iou_at_the_threshold_is_a_hit)
{
    struct eeb_voc_truth t[] = {{0, 0, BOX(0, 0, 9, 9)}};
    struct eeb_voc_detection d[] = {{0, 0.9, BOX(0, 0, 9, 4)}};
    struct eeb_voc_class_result r = ap_of(t, 1, d, 1, EEB_VOC_AP_ALL_POINTS);
    cr_assert_eq(r.true_positives, 1);
    cr_assert_float_eq(r.ap, 1.0, 1e-15);
}

Test(metrics, duplicates_difficult_boxes_and_misses)
{
    /* 3 positives (A, B, C) and a difficult D.  Ranked: A hit, A again
     * (duplicate: false), D (difficult: neither), a miss, C hit.
     * rec 1/3 1/3 1/3 2/3, prec 1 1/2 1/3 1/2: AP = 1/3 * 1 + 1/3 * 1/2. */
    struct eeb_voc_truth t[] = {{0, 0, BOX(0, 0, 9, 9)},
                                {0, 0, BOX(20, 20, 29, 29)},
                                {1, 0, BOX(0, 0, 9, 9)},
                                {1, 1, BOX(50, 50, 59, 59)}};
    struct eeb_voc_detection d[] = {{1, 0.5, BOX(0, 0, 9, 9)},
                                    {0, 0.9, BOX(0, 0, 9, 9)},
                                    {1, 0.6, BOX(100, 100, 109, 109)},
                                    {0, 0.8, BOX(0, 0, 9, 9)},
                                    {1, 0.7, BOX(50, 50, 59, 59)}};
    struct eeb_voc_class_result r = ap_of(t, 4, d, 5, EEB_VOC_AP_ALL_POINTS);
    cr_assert_eq(r.positives, 3);
    cr_assert_eq(r.detections, 5);
    cr_assert_eq(r.true_positives, 2);
    cr_assert_eq(r.false_positives, 2);
    cr_assert_float_eq(r.ap, 0.5, 1e-12);
}

Test(metrics, a_detection_goes_to_its_best_box_even_if_taken)
{
    /* The second detection overlaps A by 80/120 and B by 70/130 (both at
     * least 0.5); A, its best, is taken, so it is a false positive.  A
     * matcher that looked for the best free box would score AP 1. */
    struct eeb_voc_truth t[] = {{0, 0, BOX(0, 0, 9, 9)}, {0, 0, BOX(5, 0, 14, 9)}};
    struct eeb_voc_detection d[] = {{0, 0.9, BOX(0, 0, 9, 9)}, {0, 0.8, BOX(2, 0, 11, 9)}};
    struct eeb_voc_class_result r = ap_of(t, 2, d, 2, EEB_VOC_AP_ALL_POINTS);
    cr_assert_eq(r.true_positives, 1);
    cr_assert_float_eq(r.ap, 0.5, 1e-12);
}

Test(metrics, eleven_points_sit_at_k_times_0_1)
{
    /* 10 positives; hits, hits, hits, a miss, a hit: rec .1 .2 .3 .3 .4,
     * prec 1 1 1 .75 .8.  The point t = 3 * 0.1 is 0.30000000000000004,
     * above recall 3/10, so it takes 0.8: (1 + 1 + 1 + .8 + .8) / 11.
     * (t = 3/10 would give 4.8 / 11.)  All points: .1 + .1 + .1 + .1 * .8. */
    struct eeb_voc_truth t[10];
    for (int i = 0; i < 10; i++)
        t[i] = (struct eeb_voc_truth){i, 0, BOX(0, 0, 9, 9)};
    struct eeb_voc_detection d[] = {{0, 0.9, BOX(0, 0, 9, 9)},
                                    {1, 0.8, BOX(0, 0, 9, 9)},
                                    {2, 0.7, BOX(0, 0, 9, 9)},
                                    {3, 0.6, BOX(40, 40, 49, 49)},
                                    {4, 0.5, BOX(0, 0, 9, 9)}};
    cr_assert_float_eq(ap_of(t, 10, d, 5, EEB_VOC_AP_11_POINTS).ap, 4.6 / 11, 1e-12);
    cr_assert_float_eq(ap_of(t, 10, d, 5, EEB_VOC_AP_ALL_POINTS).ap, 0.38, 1e-12);
}

Test(metrics, equal_confidences_keep_their_order)
{
    /* a miss and a hit at the same confidence: miss first gives AP 1/2,
     * hit first 1 */
    struct eeb_voc_truth t[] = {{0, 0, BOX(0, 0, 9, 9)}};
    struct eeb_voc_detection miss_first[] = {{0, 0.5, BOX(30, 30, 39, 39)},
                                             {0, 0.5, BOX(0, 0, 9, 9)}};
    struct eeb_voc_detection hit_first[] = {miss_first[1], miss_first[0]};
    cr_assert_float_eq(ap_of(t, 1, miss_first, 2, EEB_VOC_AP_ALL_POINTS).ap, 0.5, 1e-12);
    cr_assert_float_eq(ap_of(t, 1, hit_first, 2, EEB_VOC_AP_ALL_POINTS).ap, 1.0, 1e-12);
}

Test(metrics, class_without_ground_truth_is_left_out_of_the_mean)
{
    struct eeb_voc_detection d[] = {{0, 0.9, BOX(0, 0, 9, 9)}};
    struct eeb_voc_class_result none = ap_of(NULL, 0, d, 1, EEB_VOC_AP_ALL_POINTS);
    cr_assert(isnan(none.ap));
    cr_assert_eq(none.false_positives, 1);
    struct eeb_voc_class_result all[] = {{.ap = 0.5}, none, {.ap = 1.0}};
    cr_assert_float_eq(eeb_voc_map(all, 3), 0.75, 1e-15);
    cr_assert(isnan(eeb_voc_map(&none, 1)));
    /* ground truth and no detections: AP 0 */
    struct eeb_voc_truth t[] = {{0, 0, BOX(0, 0, 9, 9)}};
    cr_assert_eq(ap_of(t, 1, NULL, 0, EEB_VOC_AP_ALL_POINTS).ap, 0);
}

Test(metrics, nms_keeps_the_best_of_each_cluster_per_class)
{
    struct eeb_scored_box b[] = {
        {0, 0.8f, 1, 1, 11, 11},   /* overlaps the 0.9 one by 81/119: gone */
        {1, 0.6f, 0, 0, 10, 10},   /* another class: kept */
        {0, 0.9f, 0, 0, 10, 10},   /* best: kept */
        {0, 0.7f, 20, 20, 30, 30}, /* apart: kept */
    };
    cr_assert_eq(eeb_nms(b, 4, 0.5), 3);
    cr_assert_float_eq(b[0].score, 0.9f, 0);
    cr_assert_float_eq(b[1].score, 0.7f, 0);
    cr_assert_float_eq(b[2].score, 0.6f, 0);
    cr_assert_float_eq(b[3].score, 0.8f, 0);
    cr_assert_eq(eeb_nms(b, 4, 0.7), 4, "81/119 = 0.68 is not above 0.7");
}
