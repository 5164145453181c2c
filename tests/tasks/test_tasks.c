/*
 * test_tasks.c - what a task hands the engine: reference models that fit
 * their shards, grid targets worked out by hand, and batches that visit
 * every record once per epoch in a seeded, shuffled order.
 */
#include "tasks/eeb_tasks.h"
#include "fpga/kernel/fx_isa.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char names[3][EEB_SHARD_MAX_NAME + 1] = {"a", "b", "c"};

Test(tasks, reference_models_fit_their_shards)
{
    char err[256];
    struct eeb_net *net;
    struct eeb_shard_info cls = {EEB_TASK_CLS, 64, 64, 3, 1, 101, NULL, 0};
    cr_assert_eq(eeb_task_model(&cls, 1, &net, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_task_check_model(net, &cls, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_net_classes(net), 101);
    cls.h = 32;
    cr_assert_eq(eeb_task_check_model(net, &cls, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "the model takes 64x64x3 inputs, the shard has 32x64x3"), "%s", err);
    eeb_net_free(net);

    struct eeb_shard_info det = {EEB_TASK_DET, 64, 64, 3, 1, 20, NULL, 0};
    cr_assert_eq(eeb_task_model(&det, 1, &net, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_layer *loss = eeb_net_loss(net);
    cr_assert(loss->kind == EEB_LAYER_GRID_LOSS && loss->out.h == 8 && loss->out.w == 8 &&
              loss->out.c == 25);
    cr_assert_eq(eeb_task_label_count(net), 8 * 8 * FX_GT_N);
    cr_assert_eq(eeb_task_check_model(net, &cls, err, sizeof err), EEB_EINVAL);
    eeb_net_free(net);

    /* slow fusion over 8 frames: 3 groups of 4 frames (0-3, 2-5, 4-7), each
     * its own slice of the stacked input, fused in 2 pairs, then in 1 */
    struct eeb_shard_info video = {EEB_TASK_VIDEO, 64, 64, 3, 8, 101, NULL, 0};
    cr_assert_eq(eeb_task_model(&video, 1, &net, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_task_check_model(net, &video, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(net->input.c, 24);
    int slices = 0, concats = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (l->kind == EEB_LAYER_SLICE) {
            cr_assert(l->in[0] == EEB_NET_INPUT && l->first == slices * 6 && l->out.c == 12,
                      "slice %d: channels %d..%d", slices, l->first, l->first + l->out.c - 1);
            slices++;
        }
        concats += l->kind == EEB_LAYER_CONCAT;
    }
    cr_assert(slices == 3 && concats == 3, "%d slices, %d concats", slices, concats);
    cr_assert_eq(eeb_net_classes(net), 101);
    eeb_net_free(net);
}

Test(tasks, grid_targets_by_hand)
{
    struct eeb_shard_info det = {EEB_TASK_DET, 64, 64, 3, 1, 3, NULL, 0};
    struct eeb_net *net;
    char err[256];
    cr_assert_eq(eeb_task_model(&det, 1, &net, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    r.nboxes = 4;
    /* centre (20, 12): cell x 2, y 1 (8-pixel cells), offset 0.5, 0.5;
     * 16 x 4 pixels: sqrt(0.25) = 0.5, sqrt(1/16) = 0.25 */
    r.boxes[0] = (struct eeb_box){2, 0, 12, 10, 28, 14};
    /* same cell, smaller: loses */
    r.boxes[1] = (struct eeb_box){1, 0, 19, 11, 21, 13};
    /* difficult: left out */
    r.boxes[2] = (struct eeb_box){1, 1, 40, 40, 50, 50};
    /* the whole image: centre cell (4, 4) at offset 0 */
    r.boxes[3] = (struct eeb_box){0, 0, 0, 0, 64, 64};
    int32_t t[8 * 8 * FX_GT_N];
    eeb_task_labels(net, &det, &r, t);
    int objects = 0;
    for (int cell = 0; cell < 64; cell++)
        objects += t[cell * FX_GT_N + FX_GT_OBJ];
    cr_assert_eq(objects, 2);
    const int32_t *c = t + (1 * 8 + 2) * FX_GT_N;
    cr_assert(c[FX_GT_OBJ] == 1 && c[FX_GT_CLASS] == 2);
    cr_assert(c[FX_GT_X] == 32768 && c[FX_GT_Y] == 32768);
    cr_assert(c[FX_GT_W] == 32768 && c[FX_GT_H] == 16384);
    c = t + (4 * 8 + 4) * FX_GT_N;
    cr_assert(c[FX_GT_OBJ] == 1 && c[FX_GT_CLASS] == 0 && c[FX_GT_X] == 0 && c[FX_GT_W] == 65536);
    eeb_net_free(net);
}

/* The labels (= record numbers mod 256 in the first pixel) of one epoch. */
static void epoch(struct eeb_batcher *bt, int n, int batch, int *order)
{
    char err[256];
    int got = 0;
    for (;;) {
        struct eeb_batch b;
        cr_assert_eq(eeb_batcher_next(bt, &b, err, sizeof err), EEB_OK, "%s", err);
        if (b.n == 0)
            break;
        cr_assert_leq(b.n, batch);
        for (int i = 0; i < b.n; i++)
            order[got++] = b.pixels[(size_t)i * 2 * 2 * 6];
    }
    cr_assert_eq(got, n);
}

Test(tasks, batches_visit_every_record_once_shuffled)
{
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/v.eebd", test_tmpdir());
    enum { N = 100 };
    struct eeb_shard_info info = {EEB_TASK_VIDEO, 2, 2, 3, 2, 3, names, 0};
    struct eeb_shard_writer *w;
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    uint8_t px[2 * 2 * 2 * 3];
    r.pixels = px;
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 24; j++)
            px[j] = (uint8_t)(j < 12 ? i : 200 + j); /* frame 0: the record number */
        r.label = i % 3;
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
    }
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);

    /* any net with a 2x2x6 input and 3 classes */
    struct eeb_net *net = eeb_net_new((struct eeb_shape){2, 2, 6});
    eeb_net_softmax_ce(net, eeb_net_fc(net, EEB_NET_INPUT, 3));
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, path, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_batcher *bt;
    cr_assert_eq(eeb_batcher_new(&bt, s, net, 7, 16, 5, err, sizeof err), EEB_OK, "%s", err);

    struct eeb_batch b;
    cr_assert_eq(eeb_batcher_next(bt, &b, err, sizeof err), EEB_OK);
    /* frames stacked along channels: pixel 0 holds frame 0's RGB then frame 1's */
    cr_assert(b.pixels[3] == 212 && b.pixels[4] == 213 && b.pixels[5] == 214);
    cr_assert_eq(b.labels[0], b.pixels[0] % 3);

    int first[N], second[N];
    cr_assert_eq(eeb_batcher_rewind(bt, err, sizeof err), EEB_OK);
    epoch(bt, N, 7, first);
    cr_assert_eq(eeb_batcher_rewind(bt, err, sizeof err), EEB_OK);
    epoch(bt, N, 7, second);
    int seen[N] = {0}, moved = 0, differ = 0;
    for (int i = 0; i < N; i++) {
        seen[first[i]]++;
        moved += first[i] != i;
        differ += first[i] != second[i];
    }
    for (int i = 0; i < N; i++)
        cr_assert_eq(seen[i], 1, "record %d seen %d times", i, seen[i]);
    cr_assert_gt(moved, N / 2, "not shuffled");
    cr_assert_gt(differ, N / 2, "same order every epoch");
    /* the window bounds how early a record can come out */
    for (int i = 0; i < N; i++)
        cr_assert_lt(first[i], i + 16, "record %d came out at %d", first[i], i);
    eeb_batcher_free(bt);
    eeb_shard_close(s);
    eeb_net_free(net);
}

/* One cell of a 64x64 image's 8x8 grid, worked by hand: cell (x 2, y 1),
 * objectness logit ln 3 (sigmoid 0.75), centre offset (0.5, 0.25), sqrt
 * sides 0.5 and 0.25, class logits 0 and ln 3 (softmax 0.25, 0.75). */
Test(tasks, grid_output_decoded_by_hand)
{
    struct eeb_shard_info det = {EEB_TASK_DET, 64, 64, 3, 1, 2, NULL, 0};
    struct eeb_net *net;
    char err[256];
    cr_assert_eq(eeb_task_model(&det, 1, &net, err, sizeof err), EEB_OK, "%s", err);
    float out[8 * 8 * 7];
    for (int i = 0; i < 8 * 8 * 7; i++)
        out[i] = i % 7 == 0 ? -20.0f : 0.0f; /* no object anywhere */
    float *z = out + (1 * 8 + 2) * 7;
    z[0] = logf(3), z[1] = 0.5f, z[2] = 0.25f, z[3] = 0.5f, z[4] = 0.25f, z[5] = 0, z[6] = logf(3);
    struct eeb_scored_box b[8 * 8 * 2];
    int n = eeb_task_decode_grid(net, &det, out, 0.1f, b, 8 * 8 * 2);
    cr_assert_eq(n, 2, "%d boxes above 0.1", n);
    /* centre (2.5/8 * 64, 1.25/8 * 64) = (20, 10); sides 0.25 * 64 = 16 and
     * 0.0625 * 64 = 4 */
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(b[i].cls, i);
        cr_assert_float_eq(b[i].score, 0.75f * (i ? 0.75f : 0.25f), 1e-6);
        cr_assert_float_eq(b[i].x0, 12.0f, 1e-5);
        cr_assert_float_eq(b[i].x1, 28.0f, 1e-5);
        cr_assert_float_eq(b[i].y0, 8.0f, 1e-5);
        cr_assert_float_eq(b[i].y1, 12.0f, 1e-5);
    }
    /* a box reaching past the image is clamped to it */
    z[3] = 1.0f;
    n = eeb_task_decode_grid(net, &det, out, 0.5f, b, 8 * 8 * 2);
    cr_assert(n == 1 && b[0].cls == 1 && b[0].x0 == 0 && b[0].x1 == 52.0f, "%d: %g-%g", n, b[0].x0,
              b[0].x1);
    eeb_net_free(net);
}
