/*
 * test_batches.c - batches in the shard's layout (what a system under test
 * trains on): the items as stored, frames not stacked, with the shard's
 * labels or boxes, in the very order the net's layout draws them.
 */
#include "tasks/eeb_tasks.h"
#include "tests/tasks/task_data.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <string.h>

enum { N = 100, BATCH = 7, WINDOW = 16, SEED = 5 };

/* A net's batcher and a shard-layout batcher on two readers of one shard,
 * same batch, window and seed. */
struct pair {
    struct eeb_shard *s_net, *s_stored;
    struct eeb_batcher *net, *stored;
};

static struct pair open_pair(const char *path, const struct eeb_net *net)
{
    char err[256];
    struct pair p;
    cr_assert_eq(eeb_shard_open(&p.s_net, path, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_open(&p.s_stored, path, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_batcher_new(&p.net, p.s_net, net, BATCH, WINDOW, SEED, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(
        eeb_batcher_new_as_stored(&p.stored, p.s_stored, BATCH, WINDOW, SEED, err, sizeof err),
        EEB_OK, "%s", err);
    return p;
}

static void close_pair(struct pair *p)
{
    eeb_batcher_free(p->net), eeb_batcher_free(p->stored);
    eeb_shard_close(p->s_net), eeb_shard_close(p->s_stored);
}

Test(tasks, batches_as_stored_keep_frames_and_labels_in_the_nets_order)
{
    const char *path = task_test_clip_shard(N);
    /* any net with a 2x2x6 input (2 frames stacked) and 3 classes */
    struct eeb_net *net = eeb_net_new((struct eeb_shape){2, 2, 6});
    eeb_net_softmax_ce(net, eeb_net_fc(net, EEB_NET_INPUT, 3));
    struct pair p = open_pair(path, net);
    char err[256];
    int seen[N] = {0}, drawn = 0;
    for (int epoch = 1; epoch <= 2; epoch++) {
        if (epoch > 1) {
            cr_assert_eq(eeb_batcher_rewind(p.net, err, sizeof err), EEB_OK, "%s", err);
            cr_assert_eq(eeb_batcher_rewind(p.stored, err, sizeof err), EEB_OK, "%s", err);
        }
        for (;;) {
            struct eeb_batch nb;
            struct eeb_task_batch sb;
            cr_assert_eq(eeb_batcher_next(p.net, &nb, err, sizeof err), EEB_OK, "%s", err);
            cr_assert_eq(eeb_batcher_draw(p.stored, &sb, err, sizeof err), EEB_OK, "%s", err);
            cr_assert_eq(sb.n, nb.n);
            if (sb.n == 0)
                break;
            cr_assert(sb.box_counts == NULL && sb.boxes == NULL);
            for (int i = 0; i < sb.n; i++) {
                int rec = nb.pixels[i * 24]; /* the net's item: frame 0's first byte */
                uint8_t want[24];
                task_test_clip(rec, want);
                cr_assert_arr_eq(sb.pixels + i * 24, want, 24, "item %d (record %d): not as stored",
                                 i, rec);
                cr_assert_eq(sb.labels[i], rec % 3);
                cr_assert_eq(sb.labels[i], nb.labels[i]);
                seen[rec] += epoch == 1, drawn++;
            }
        }
    }
    cr_assert_eq(drawn, 2 * N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(seen[i], 1, "record %d seen %d times in epoch 1", i, seen[i]);
    /* the accelerator's batch is the net's layout only */
    struct eeb_batch nb;
    cr_assert_eq(eeb_batcher_next(p.stored, &nb, err, sizeof err), EEB_EINVAL);
    assert_has(err, "the shard's layout");
    close_pair(&p);
    eeb_net_free(net);
}

Test(tasks, batches_as_stored_carry_each_items_boxes)
{
    const char *path = task_test_det_shard(N);
    char err[256];
    struct eeb_shard_info info = task_test_det_info();
    struct eeb_net *net;
    cr_assert_eq(eeb_task_model(&info, 1, &net, err, sizeof err), EEB_OK, "%s", err);
    size_t nlab = eeb_task_label_count(net), px = 16 * 16 * 3;
    struct pair p = open_pair(path, net);
    int items = 0, boxes = 0;
    for (;;) {
        struct eeb_batch nb;
        struct eeb_task_batch sb;
        cr_assert_eq(eeb_batcher_next(p.net, &nb, err, sizeof err), EEB_OK, "%s", err);
        cr_assert_eq(eeb_batcher_draw(p.stored, &sb, err, sizeof err), EEB_OK, "%s", err);
        cr_assert_eq(sb.n, nb.n);
        if (sb.n == 0)
            break;
        cr_assert_null(sb.labels, "a detection item has boxes, not a class");
        const struct eeb_box *box = sb.boxes;
        for (int i = 0; i < sb.n; i++, items++) {
            int rec = sb.pixels[i * px];
            cr_assert_eq(nb.pixels[i * px], rec, "item %d: record %d, the net's %d", i, rec,
                         nb.pixels[i * px]);
            cr_assert_eq(sb.box_counts[i], task_test_det_boxes(rec), "record %d: %d boxes", rec,
                         sb.box_counts[i]);
            /* the shard's boxes, one item's after another's */
            static struct eeb_record r;
            r.nboxes = 0;
            for (int k = 0; k < sb.box_counts[i]; k++, box++, boxes++) {
                struct eeb_box want = task_test_det_box(rec, k);
                cr_assert(memcmp(box, &want, sizeof want) == 0,
                          "record %d box %d: class %d, %g %g %g %g", rec, k, box->cls, box->x0,
                          box->y0, box->x1, box->y1);
                r.boxes[r.nboxes++] = *box;
            }
            /* and the net's grid targets are those boxes' */
            int32_t t[2 * 2 * 6]; /* the grid: a cell per 8x8 pixels */
            cr_assert_eq(nlab, sizeof t / sizeof *t);
            eeb_task_labels(net, &info, &r, t);
            cr_assert_arr_eq(nb.labels + i * nlab, t, sizeof t, "record %d: grid targets", rec);
        }
    }
    cr_assert_eq(items, N);
    cr_assert_eq(boxes, N / 4 * (0 + 1 + 2 + 3));
    close_pair(&p);
    eeb_net_free(net);
}
