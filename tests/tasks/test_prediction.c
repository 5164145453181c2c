/*
 * test_prediction.c - the prediction record (tasks/eeb_prediction.h): the
 * bytes its writer gives are the bytes stored runs hold, its reader reads
 * records as earlier eebs stored them and refuses others, the truth comes
 * out for the server, and M_s counted from records is the devkit's.
 */
#include "tasks/eeb_prediction.h"
#include "tasks/eeb_tasks.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Records as `eeb run` and the server have stored them (the demo's first
 * classifier record, and a detector's), byte for byte. */
#define STORED_RANKED "{\"id\":\"ft_test_000001\",\"label\":10,\"top\":[18,10,14,2,6]}"
#define STORED_BOXES                                                                               \
    "{\"id\":\"img7\",\"boxes\":[[2,0.5,1.5,2.0,30.25,28.0],[0,0.25,0.0,0.0,8.0,8.0]],"            \
    "\"truth\":[[2,0,2.0,3.0,29.0,27.0],[1,1,4.0,4.0,6.0,6.0]]}"

static void assert_written(const struct eeb_prediction *p, const char *want)
{
    char *text = eeb_prediction_write(p);
    cr_assert_not_null(text);
    cr_assert_str_eq(text, want);
    free(text);
}

Test(prediction, the_writer_gives_the_stored_bytes)
{
    struct eeb_prediction p = {.kind = EEB_PREDICTION_RANKED,
                               .id = "ft_test_000001",
                               .has_truth = 1,
                               .label = 10,
                               .nranked = 5,
                               .ranked = {18, 10, 14, 2, 6}};
    assert_written(&p, STORED_RANKED);
    p.has_truth = 0; /* an official run's: the server adds the label */
    assert_written(&p, "{\"id\":\"ft_test_000001\",\"top\":[18,10,14,2,6]}");

    struct eeb_prediction_box boxes[] = {{2, 0.5, 1.5, 2, 30.25, 28}, {0, 0.25, 0, 0, 8, 8}};
    struct eeb_prediction_truth truth[] = {{2, 0, 2, 3, 29, 27}, {1, 1, 4, 4, 6, 6}};
    struct eeb_prediction d = {.kind = EEB_PREDICTION_BOXES,
                               .id = "img7",
                               .has_truth = 1,
                               .nboxes = 2,
                               .boxes = boxes,
                               .ntruth = 2,
                               .truth = truth};
    assert_written(&d, STORED_BOXES);
    d.has_truth = 0;
    assert_written(&d, "{\"id\":\"img7\",\"boxes\":[[2,0.5,1.5,2.0,30.25,28.0],"
                       "[0,0.25,0.0,0.0,8.0,8.0]]}");
    d.nboxes = 0; /* an image the detector found nothing in */
    assert_written(&d, "{\"id\":\"img7\",\"boxes\":[]}");
}

Test(prediction, the_reader_reads_stored_records)
{
    struct eeb_prediction p;
    cr_assert_eq(eeb_prediction_read(STORED_RANKED, EEB_PREDICTION_RANKED, &p), EEB_OK);
    cr_assert(p.has_truth && p.label == 10 && p.nranked == 5);
    cr_assert(p.ranked[0] == 18 && p.ranked[1] == 10 && p.ranked[4] == 6);
    eeb_prediction_free(&p);

    cr_assert_eq(eeb_prediction_read(STORED_BOXES, EEB_PREDICTION_BOXES, &p), EEB_OK);
    cr_assert(p.nboxes == 2 && p.ntruth == 2);
    cr_assert(p.boxes[0].cls == 2 && p.boxes[0].score == 0.5 && p.boxes[0].x0 == 1.5 &&
              p.boxes[0].y0 == 2 && p.boxes[0].x1 == 30.25 && p.boxes[0].y1 == 28);
    cr_assert(p.truth[1].cls == 1 && p.truth[1].difficult == 1 && p.truth[1].x1 == 6);
    cr_assert(p.truth[0].difficult == 0);
    eeb_prediction_free(&p);

    /* numbers a float does not hold come back as written */
    struct eeb_prediction_box b = {3, 0.1, 0.3, 1e-7, 12.345678901234567, 99.5};
    struct eeb_prediction w = {
        .kind = EEB_PREDICTION_BOXES, .id = "x", .has_truth = 1, .nboxes = 1, .boxes = &b};
    char *text = eeb_prediction_write(&w);
    cr_assert_eq(eeb_prediction_read(text, EEB_PREDICTION_BOXES, &p), EEB_OK, "%s", text);
    cr_assert(p.boxes[0].score == 0.1 && p.boxes[0].x0 == 0.3 && p.boxes[0].y0 == 1e-7 &&
              p.boxes[0].x1 == 12.345678901234567);
    eeb_prediction_free(&p);
    free(text);

    /* only the first EEB_TOPK_MAX classes count */
    cr_assert_eq(eeb_prediction_read("{\"id\":\"a\",\"label\":1,\"top\":[9,8,7,6,5,1]}",
                                     EEB_PREDICTION_RANKED, &p),
                 EEB_OK);
    cr_assert_eq(p.nranked, EEB_TOPK_MAX);
    eeb_prediction_free(&p);
}

Test(prediction, the_reader_refuses_what_eeb_never_stores)
{
    static const struct {
        enum eeb_prediction_kind kind;
        const char *text;
    } bad[] = {
        {EEB_PREDICTION_RANKED, "not json"},
        {EEB_PREDICTION_RANKED, "{\"id\":\"a\",\"top\":[1]}"},                 /* no label */
        {EEB_PREDICTION_RANKED, "{\"id\":\"a\",\"label\":\"1\",\"top\":[1]}"}, /* a text */
        {EEB_PREDICTION_RANKED, "{\"id\":\"a\",\"label\":1,\"top\":1}"},
        {EEB_PREDICTION_RANKED, "{\"id\":\"a\",\"label\":1,\"tops\":[1]}"}, /* a renamed key */
        {EEB_PREDICTION_RANKED, STORED_BOXES},
        {EEB_PREDICTION_BOXES, STORED_RANKED},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[]}"}, /* no truth */
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[[1,0.5,0,0,1]],\"truth\":[]}"},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[[1.5,0.5,0,0,1,1]],\"truth\":[]}"},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[],\"truth\":[[-1,0,0,0,1,1]]}"},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[],\"truth\":[[1000,0,0,0,1,1]]}"},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[[1,\"0.5\",0,0,1,1]],\"truth\":[]}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct eeb_prediction p;
        cr_expect_eq(eeb_prediction_read(bad[i].text, bad[i].kind, &p), EEB_EFORMAT, "%s",
                     bad[i].text);
        eeb_prediction_free(&p);
    }
}

/* What the system said, with its truth or without (an official run's
 * record): the accuracy audit's reader; still none of the malformed. */
Test(prediction, the_answer_alone_reads_with_or_without_the_truth)
{
    struct eeb_prediction p;
    cr_assert_eq(
        eeb_prediction_read_said("{\"id\":\"a\",\"top\":[3,1]}", EEB_PREDICTION_RANKED, &p),
        EEB_OK);
    cr_expect_eq(p.nranked, 2);
    cr_expect_eq(p.ranked[0], 3);
    cr_expect_eq(p.has_truth, 0);
    eeb_prediction_free(&p);
    cr_assert_eq(eeb_prediction_read_said("{\"id\":\"a\",\"boxes\":[[2,0.5,1,2,3,4]]}",
                                          EEB_PREDICTION_BOXES, &p),
                 EEB_OK);
    cr_expect_eq(p.nboxes, 1);
    cr_expect_eq(p.boxes[0].cls, 2);
    cr_expect_float_eq(p.boxes[0].x1, 3, 1e-12);
    cr_expect_eq(p.has_truth, 0);
    eeb_prediction_free(&p);
    cr_assert_eq(eeb_prediction_read_said(STORED_RANKED, EEB_PREDICTION_RANKED, &p), EEB_OK);
    cr_expect_eq(p.has_truth, 1);
    eeb_prediction_free(&p);
    static const struct {
        enum eeb_prediction_kind kind;
        const char *text;
    } bad[] = {
        {EEB_PREDICTION_RANKED, "{\"id\":\"a\",\"label\":\"1\",\"top\":[1]}"},
        {EEB_PREDICTION_RANKED, "{\"id\":\"a\"}"},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[],\"truth\":1}"},
        {EEB_PREDICTION_BOXES, "{\"id\":\"a\",\"boxes\":[[1,0.5,0,0,1]]}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_eq(eeb_prediction_read_said(bad[i].text, bad[i].kind, &p), EEB_EFORMAT, "%s",
                     bad[i].text);
        eeb_prediction_free(&p);
    }
}

Test(prediction, the_truth_comes_out_for_the_server)
{
    const char *stored[] = {STORED_RANKED, STORED_BOXES};
    const char *sent[] = {
        "{\"id\":\"ft_test_000001\",\"top\":[18,10,14,2,6]}",
        "{\"id\":\"img7\",\"boxes\":[[2,0.5,1.5,2.0,30.25,28.0],[0,0.25,0.0,0.0,8.0,8.0]]}"};
    for (int i = 0; i < 2; i++) {
        json_t *o = json_loads(stored[i], 0, NULL);
        eeb_prediction_drop_truth(o);
        char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        cr_assert_str_eq(text, sent[i]);
        free(text);
        json_decref(o);
    }
}

Test(prediction, the_test_stage_writes_its_predictions_as_records)
{
    int ranked[] = {3, 1, 4};
    struct eeb_task_prediction tp = {.kind = EEB_PREDICTION_RANKED,
                                     .index = 7,
                                     .id = "a",
                                     .label = 1,
                                     .nranked = 3,
                                     .ranked = ranked};
    char *text = eeb_prediction_write_evaluated(&tp, 1);
    cr_assert_str_eq(text, "{\"id\":\"a\",\"label\":1,\"top\":[3,1,4]}");
    free(text);
    text = eeb_prediction_write_evaluated(&tp, 0);
    cr_assert_str_eq(text, "{\"id\":\"a\",\"top\":[3,1,4]}");
    free(text);

    /* float boxes as the doubles they are: the score 0.3f is not 0.3 */
    struct eeb_scored_box boxes[] = {{1, 0.3f, 1.5f, 2, 3, 4}};
    struct eeb_box truth[] = {{1, 1, 1, 2, 3, 4}};
    struct eeb_task_prediction dp = {.kind = EEB_PREDICTION_BOXES,
                                     .id = "b",
                                     .nboxes = 1,
                                     .boxes = boxes,
                                     .ntruth = 1,
                                     .truth = truth};
    text = eeb_prediction_write_evaluated(&dp, 1);
    cr_assert_str_eq(text, "{\"id\":\"b\",\"boxes\":[[1,0.30000001192092896,1.5,2.0,3.0,4.0]],"
                           "\"truth\":[[1,1,1.0,2.0,3.0,4.0]]}");
    free(text);
    text = eeb_prediction_write_evaluated(&dp, 0);
    cr_assert_str_eq(text, "{\"id\":\"b\",\"boxes\":[[1,0.30000001192092896,1.5,2.0,3.0,4.0]]}");
    free(text);
}

static double tally(enum eeb_prediction_kind kind, const char *const *records, int n,
                    uint64_t items)
{
    struct eeb_prediction_tally *t;
    cr_assert_eq(eeb_prediction_tally_new(&t, kind), EEB_OK);
    for (int i = 0; i < n; i++)
        cr_assert_eq(eeb_prediction_tally_add(t, i, records[i]), EEB_OK, "%s", records[i]);
    double m_s;
    cr_assert_eq(eeb_prediction_tally_value(t, items, &m_s), EEB_OK);
    eeb_prediction_tally_free(t);
    return m_s;
}

Test(prediction, m_s_counted_from_records)
{
    /* top-5: the label among the first five, not the sixth */
    const char *ranked[] = {"{\"id\":\"a\",\"label\":2,\"top\":[2]}",
                            "{\"id\":\"b\",\"label\":3,\"top\":[0,1,2,4,3]}",
                            "{\"id\":\"c\",\"label\":9,\"top\":[0,1,2,4,3,9]}"};
    cr_assert_float_eq(tally(EEB_PREDICTION_RANKED, ranked, 3, 3), 2.0 / 3, 1e-12);
    cr_assert(isnan(tally(EEB_PREDICTION_RANKED, ranked, 0, 0)));

    /* class 0: found once (AP 1); class 1: its one object missed, a box
     * elsewhere (AP 0); class 2: only a difficult object, no AP */
    const char *boxes[] = {
        "{\"id\":\"a\",\"boxes\":[[0,0.9,0.0,0.0,10.0,10.0]],\"truth\":[[0,0,0.0,0.0,10.0,10.0]]}",
        "{\"id\":\"b\",\"boxes\":[[1,0.8,20.0,20.0,30.0,30.0]],\"truth\":[[1,0,0.0,0.0,10.0,10.0],"
        "[2,1,0.0,0.0,5.0,5.0]]}"};
    cr_assert_float_eq(tally(EEB_PREDICTION_BOXES, boxes, 2, 2), 0.5, 1e-12);
    cr_assert_float_eq(tally(EEB_PREDICTION_BOXES, boxes, 1, 1), 1.0, 1e-12);

    struct eeb_prediction_tally *t;
    cr_assert_eq(eeb_prediction_tally_new(&t, EEB_PREDICTION_BOXES), EEB_OK);
    cr_assert_eq(eeb_prediction_tally_add(t, 0, STORED_RANKED), EEB_EFORMAT);
    eeb_prediction_tally_free(t);
}
