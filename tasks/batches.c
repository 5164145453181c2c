/*
 * batches.c - batches streamed from a shard through a shuffle window.
 *
 * Shards are written in source order (Food-101's train.txt lists a class
 * at a time), so items are drawn at random from a window of records, the
 * slot refilled from the stream (tf.data's shuffle buffer).  Memory is the
 * window plus one batch, whatever the shard's size.
 *
 * A slot holds an item in the batcher's layout (eeb_tasks.h): the net's
 * (frames stacked, the loss's labels) or the shard's (as stored, its class
 * or its boxes), so the draw is the same code and the same order for both.
 */
#include "eeb_tasks.h"

#include <stdlib.h>
#include <string.h>

struct eeb_batcher {
    struct eeb_shard *shard;
    const struct eeb_net *net; /* NULL: the shard's layout */
    int boxes;                 /* the shard's layout, and its items carry boxes (det) */
    int batch, window, filled; /* slots in use */
    int ended;                 /* the stream has no more records */
    size_t px, nlab;           /* bytes of pixels, labels per item (0 with boxes) */
    uint8_t *slot_px;          /* window slots */
    int32_t *slot_lab;
    int32_t *slot_nboxes;     /* with boxes: a count a slot, */
    struct eeb_box *slot_box; /*   and room for EEB_SHARD_MAX_BOXES */
    uint8_t *px_out;          /* the batch handed out */
    int32_t *lab_out;
    int32_t *nboxes_out;
    struct eeb_box *box_out; /* every item's boxes, item by item */
    uint64_t seed, epoch, rng;
};

void eeb_task_stack_frames(const struct eeb_shard_info *in, const uint8_t *src, uint8_t *dst)
{
    if (in->frames == 1) {
        memcpy(dst, src, eeb_shard_pixels(in));
        return;
    }
    size_t hw = (size_t)in->h * in->w, c = (size_t)in->c, tc = c * in->frames;
    for (int t = 0; t < in->frames; t++)
        for (size_t p = 0; p < hw; p++)
            memcpy(dst + p * tc + t * c, src + ((size_t)t * hw + p) * c, c);
}

/* Reads the next record into slot i; 0 at the end of the stream. */
static int load_slot(struct eeb_batcher *bt, int i, char *err, size_t errlen)
{
    const struct eeb_record *r;
    int rc = eeb_shard_next(bt->shard, &r, err, errlen);
    if (rc <= 0) {
        bt->ended = rc == 0;
        return rc;
    }
    const struct eeb_shard_info *in = eeb_shard_info(bt->shard);
    if (bt->net) {
        eeb_task_stack_frames(in, r->pixels, bt->slot_px + (size_t)i * bt->px);
        eeb_task_labels(bt->net, in, r, bt->slot_lab + (size_t)i * bt->nlab);
        return 1;
    }
    memcpy(bt->slot_px + (size_t)i * bt->px, r->pixels, bt->px);
    if (bt->boxes) {
        bt->slot_nboxes[i] = r->nboxes;
        memcpy(bt->slot_box + (size_t)i * EEB_SHARD_MAX_BOXES, r->boxes,
               (size_t)r->nboxes * sizeof *r->boxes);
    } else {
        bt->slot_lab[i] = r->label;
    }
    return 1;
}

/* Slot `from`'s item moved into slot `to` (the hole a drawn item left;
 * they are the same slot when the last one was drawn). */
static void move_slot(struct eeb_batcher *bt, int to, int from)
{
    memmove(bt->slot_px + (size_t)to * bt->px, bt->slot_px + (size_t)from * bt->px, bt->px);
    if (bt->nlab > 0)
        memmove(bt->slot_lab + (size_t)to * bt->nlab, bt->slot_lab + (size_t)from * bt->nlab,
                bt->nlab * sizeof(int32_t));
    if (bt->boxes) {
        bt->slot_nboxes[to] = bt->slot_nboxes[from];
        memmove(bt->slot_box + (size_t)to * EEB_SHARD_MAX_BOXES,
                bt->slot_box + (size_t)from * EEB_SHARD_MAX_BOXES,
                (size_t)bt->slot_nboxes[from] * sizeof *bt->slot_box);
    }
}

/* Slot i's item appended to the batch handed out, as its item n; its
 * boxes at *nbox onwards. */
static void hand_out(struct eeb_batcher *bt, int n, int i, size_t *nbox)
{
    memcpy(bt->px_out + (size_t)n * bt->px, bt->slot_px + (size_t)i * bt->px, bt->px);
    if (bt->nlab > 0)
        memcpy(bt->lab_out + (size_t)n * bt->nlab, bt->slot_lab + (size_t)i * bt->nlab,
               bt->nlab * sizeof(int32_t));
    if (bt->boxes) {
        int k = bt->slot_nboxes[i];
        bt->nboxes_out[n] = k;
        memcpy(bt->box_out + *nbox, bt->slot_box + (size_t)i * EEB_SHARD_MAX_BOXES,
               (size_t)k * sizeof *bt->box_out);
        *nbox += (size_t)k;
    }
}

static int fill(struct eeb_batcher *bt, char *err, size_t errlen)
{
    while (!bt->ended && bt->filled < bt->window) {
        int rc = load_slot(bt, bt->filled, err, errlen);
        if (rc < 0)
            return rc;
        bt->filled += rc;
    }
    return EEB_OK;
}

/* The window and the batch's buffers for the layout bt->net and
 * bt->boxes say. */
static int allocate(struct eeb_batcher *bt)
{
    size_t window = (size_t)bt->window, batch = (size_t)bt->batch;
    bt->slot_px = malloc(window * bt->px);
    bt->px_out = malloc(batch * bt->px);
    if (!bt->slot_px || !bt->px_out)
        return EEB_ENOMEM;
    if (bt->nlab > 0) {
        bt->slot_lab = malloc(window * bt->nlab * sizeof(int32_t));
        bt->lab_out = malloc(batch * bt->nlab * sizeof(int32_t));
        if (!bt->slot_lab || !bt->lab_out)
            return EEB_ENOMEM;
    }
    if (bt->boxes) {
        bt->slot_nboxes = malloc(window * sizeof *bt->slot_nboxes);
        bt->slot_box = malloc(window * EEB_SHARD_MAX_BOXES * sizeof *bt->slot_box);
        bt->nboxes_out = malloc(batch * sizeof *bt->nboxes_out);
        bt->box_out = malloc(batch * EEB_SHARD_MAX_BOXES * sizeof *bt->box_out);
        if (!bt->slot_nboxes || !bt->slot_box || !bt->nboxes_out || !bt->box_out)
            return EEB_ENOMEM;
    }
    return EEB_OK;
}

/* A batcher in net's layout, or in the shard's if net is NULL. */
static int batcher_new(struct eeb_batcher **out, struct eeb_shard *shard, const struct eeb_net *net,
                       int batch, int window, uint64_t seed, char *err, size_t errlen)
{
    const struct eeb_shard_info *in = eeb_shard_info(shard);
    if (batch < 1 || window < 1)
        return eeb_errf(err, errlen, EEB_EINVAL, "batch %d, shuffle window %d (both >= 1)", batch,
                        window);
    struct eeb_batcher *bt = calloc(1, sizeof *bt);
    if (!bt)
        return eeb_errf(err, errlen, EEB_ENOMEM, "batches: out of memory");
    bt->shard = shard, bt->net = net;
    bt->boxes = !net && eeb_task_get(in->task)->prediction == EEB_PREDICTION_BOXES;
    bt->batch = batch, bt->window = window;
    bt->px = eeb_shard_pixels(in);
    bt->nlab = net ? eeb_task_label_count(net) : bt->boxes ? 0 : 1;
    bt->seed = seed;
    if (allocate(bt) != EEB_OK) {
        eeb_batcher_free(bt);
        return eeb_errf(err, errlen, EEB_ENOMEM, "batches: out of memory for a window of %d",
                        window);
    }
    int rc = eeb_batcher_rewind(bt, err, errlen);
    if (rc != EEB_OK) {
        eeb_batcher_free(bt);
        return rc;
    }
    *out = bt;
    return EEB_OK;
}

int eeb_batcher_new(struct eeb_batcher **out, struct eeb_shard *shard, const struct eeb_net *net,
                    int batch, int window, uint64_t seed, char *err, size_t errlen)
{
    int rc = eeb_task_check_model(net, eeb_shard_info(shard), err, errlen);
    return rc != EEB_OK ? rc : batcher_new(out, shard, net, batch, window, seed, err, errlen);
}

int eeb_batcher_new_as_stored(struct eeb_batcher **out, struct eeb_shard *shard, int batch,
                              int window, uint64_t seed, char *err, size_t errlen)
{
    return batcher_new(out, shard, NULL, batch, window, seed, err, errlen);
}

int eeb_batcher_rewind(struct eeb_batcher *bt, char *err, size_t errlen)
{
    int rc = eeb_shard_rewind(bt->shard, err, errlen);
    if (rc != EEB_OK)
        return rc;
    bt->rng = bt->seed ^ (0x2545f4914f6cdd1dull * ++bt->epoch);
    bt->filled = 0;
    bt->ended = 0;
    return fill(bt, err, errlen);
}

int eeb_batcher_draw(struct eeb_batcher *bt, struct eeb_task_batch *b, char *err, size_t errlen)
{
    int n = 0;
    size_t nbox = 0;
    while (n < bt->batch && bt->filled > 0) {
        int i = (int)(eeb_splitmix64(&bt->rng) % (uint64_t)bt->filled);
        hand_out(bt, n++, i, &nbox);
        int rc = bt->ended ? 0 : load_slot(bt, i, err, errlen);
        if (rc < 0)
            return rc;
        if (rc == 0) /* stream over: the last slot fills the hole */
            move_slot(bt, i, --bt->filled);
    }
    *b = (struct eeb_task_batch){.n = n,
                                 .pixels = bt->px_out,
                                 .labels = bt->lab_out,
                                 .box_counts = bt->nboxes_out,
                                 .boxes = bt->box_out};
    return EEB_OK;
}

int eeb_batcher_next(struct eeb_batcher *bt, struct eeb_batch *b, char *err, size_t errlen)
{
    if (!bt->net)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "batches: these are in the shard's layout, not the net's");
    struct eeb_task_batch tb;
    int rc = eeb_batcher_draw(bt, &tb, err, errlen);
    if (rc == EEB_OK)
        *b = (struct eeb_batch){tb.n, tb.pixels, tb.labels};
    return rc;
}

void eeb_batcher_free(struct eeb_batcher *bt)
{
    if (!bt)
        return;
    free(bt->slot_px), free(bt->slot_lab), free(bt->slot_nboxes), free(bt->slot_box);
    free(bt->px_out), free(bt->lab_out), free(bt->nboxes_out), free(bt->box_out);
    free(bt);
}
