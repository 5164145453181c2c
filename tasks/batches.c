/*
 * batches.c - batches streamed from a shard through a shuffle window.
 *
 * Shards are written in source order (Food-101's train.txt lists a class
 * at a time), so items are drawn at random from a window of records, the
 * slot refilled from the stream (tf.data's shuffle buffer).  Memory is the
 * window plus one batch, whatever the shard's size.
 */
#include "eeb_tasks.h"

#include <stdlib.h>
#include <string.h>

struct eeb_batcher {
    struct eeb_shard *shard;
    const struct eeb_net *net;
    int batch, window, filled; /* slots in use */
    int ended;                 /* the stream has no more records */
    size_t px, nlab;           /* bytes of pixels, labels per item */
    uint8_t *slot_px;          /* window slots */
    int32_t *slot_lab;
    uint8_t *px_out; /* the batch handed out */
    int32_t *lab_out;
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
    eeb_task_stack_frames(in, r->pixels, bt->slot_px + (size_t)i * bt->px);
    eeb_task_labels(bt->net, in, r, bt->slot_lab + (size_t)i * bt->nlab);
    return 1;
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

int eeb_batcher_new(struct eeb_batcher **out, struct eeb_shard *shard, const struct eeb_net *net,
                    int batch, int window, uint64_t seed, char *err, size_t errlen)
{
    const struct eeb_shard_info *in = eeb_shard_info(shard);
    int rc = eeb_task_check_model(net, in, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (batch < 1 || window < 1)
        return eeb_errf(err, errlen, EEB_EINVAL, "batch %d, shuffle window %d (both >= 1)", batch,
                        window);
    struct eeb_batcher *bt = calloc(1, sizeof *bt);
    if (!bt)
        return eeb_errf(err, errlen, EEB_ENOMEM, "batches: out of memory");
    bt->shard = shard, bt->net = net;
    bt->batch = batch, bt->window = window;
    bt->px = eeb_shard_pixels(in);
    bt->nlab = eeb_task_label_count(net);
    bt->slot_px = malloc((size_t)window * bt->px);
    bt->slot_lab = malloc((size_t)window * bt->nlab * sizeof(int32_t));
    bt->px_out = malloc((size_t)batch * bt->px);
    bt->lab_out = malloc((size_t)batch * bt->nlab * sizeof(int32_t));
    bt->seed = seed;
    if (!bt->slot_px || !bt->slot_lab || !bt->px_out || !bt->lab_out) {
        eeb_batcher_free(bt);
        return eeb_errf(err, errlen, EEB_ENOMEM, "batches: out of memory for a window of %d",
                        window);
    }
    rc = eeb_batcher_rewind(bt, err, errlen);
    if (rc != EEB_OK) {
        eeb_batcher_free(bt);
        return rc;
    }
    *out = bt;
    return EEB_OK;
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

int eeb_batcher_next(struct eeb_batcher *bt, struct eeb_batch *b, char *err, size_t errlen)
{
    int n = 0;
    while (n < bt->batch && bt->filled > 0) {
        int i = (int)(eeb_splitmix64(&bt->rng) % (uint64_t)bt->filled);
        memcpy(bt->px_out + (size_t)n * bt->px, bt->slot_px + (size_t)i * bt->px, bt->px);
        memcpy(bt->lab_out + (size_t)n * bt->nlab, bt->slot_lab + (size_t)i * bt->nlab,
               bt->nlab * sizeof(int32_t));
        n++;
        int rc = bt->ended ? 0 : load_slot(bt, i, err, errlen);
        if (rc < 0)
            return rc;
        if (rc == 0) { /* stream over: the last slot fills the hole */
            int last = --bt->filled;
            memcpy(bt->slot_px + (size_t)i * bt->px, bt->slot_px + (size_t)last * bt->px, bt->px);
            memcpy(bt->slot_lab + (size_t)i * bt->nlab, bt->slot_lab + (size_t)last * bt->nlab,
                   bt->nlab * sizeof(int32_t));
        }
    }
    b->n = n;
    b->pixels = bt->px_out;
    b->labels = bt->lab_out;
    return EEB_OK;
}

void eeb_batcher_free(struct eeb_batcher *bt)
{
    if (!bt)
        return;
    free(bt->slot_px), free(bt->slot_lab);
    free(bt->px_out), free(bt->lab_out);
    free(bt);
}
