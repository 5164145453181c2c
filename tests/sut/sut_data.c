/*
 * sut_data.c - what the SUT suites (test_plugin.c, test_exec.c) drive a
 * SUT with: generated shards read into batches as the shards hold them,
 * a setup for them, an untrained nearest-mean model, and checks of what
 * predict answers.
 */
#include "tests/sut/sut_data.h"

#include "tasks/eeb_gen.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sut_test_shard(enum eeb_task task, int n, uint64_t seed)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/%s.eebd", test_tmpdir(), eeb_task_name(task));
    struct eeb_gen_spec spec = {
        task, EEB_GEN_FINETUNE, 0, (uint64_t)n, seed, SIDE, task == EEB_TASK_VIDEO ? FRAMES : 1};
    char err[512];
    cr_assert_eq(eeb_gen_shard(path, &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    return path;
}

struct data sut_test_read(const char *path)
{
    struct data d = {0};
    struct eeb_shard *s;
    char err[512];
    cr_assert_eq(eeb_shard_open(&s, path, err, sizeof err), EEB_OK, "%s", err);
    d.info = *eeb_shard_info(s);
    d.info.names = NULL;
    size_t px = eeb_shard_pixels(&d.info);
    cr_assert_leq(px, sizeof d.batches->px / BATCH);
    d.batches = calloc((d.info.count + BATCH - 1) / BATCH, sizeof *d.batches);
    const struct eeb_record *r;
    int rc;
    for (uint64_t i = 0; (rc = eeb_shard_next(s, &r, err, sizeof err)) == 1; i++) {
        struct batch *b = &d.batches[i / BATCH];
        int n = (int)(i % BATCH), nbox = 0;
        for (int k = 0; k < n; k++)
            nbox += b->counts[k];
        memcpy(b->px + (size_t)n * px, r->pixels, px);
        b->labels[n] = r->label, b->counts[n] = r->nboxes;
        for (int k = 0; k < r->nboxes; k++) {
            const struct eeb_box *x = &r->boxes[k];
            b->boxes[nbox + k] =
                (struct eeb_sut_box){x->cls, x->difficult, x->x0, x->y0, x->x1, x->y1};
        }
        b->b = (struct eeb_sut_batch){n + 1, b->px, b->labels, b->counts, b->boxes};
        d.nbatches = (int)(i / BATCH) + 1;
    }
    cr_assert_eq(rc, 0, "%s", err);
    eeb_shard_close(s);
    return d;
}

struct eeb_sut_setup sut_test_setup(const struct eeb_shard_info *info, uint64_t seed,
                                    const char *config)
{
    return (struct eeb_sut_setup){.abi_version = EEB_SUT_ABI_VERSION,
                                  .task = (enum eeb_sut_task)info->task,
                                  .classes = info->classes,
                                  .frames = info->frames,
                                  .height = info->h,
                                  .width = info->w,
                                  .channels = info->c,
                                  .batch_max = BATCH,
                                  .top_k = TOP_K,
                                  .max_boxes = MAX_BOXES,
                                  .seed = seed,
                                  .config = config,
                                  .workdir = "/nonexistent"};
}

/* A model file of the first line alone: untrained (both examples read it). */
const char *sut_test_empty_model(void)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/empty.model", test_tmpdir());
    test_write_file(path, "nearest-mean 1\n", 15);
    return path;
}

/* predict on the batch's pixels alone; what it wrote, zeroed first. */
void sut_test_predict(const struct eeb_sut_ops *ops, void *h, const struct eeb_sut_batch *b,
                      struct preds *p)
{
    memset(p, 0, sizeof *p);
    struct eeb_sut_predictions out = {p->classes, p->scores, p->counts, p->dets};
    char err[1024];
    cr_assert_eq(ops->predict(h, b, &out, err, sizeof err), 0, "%s", err);
}

void sut_test_well_formed(const struct data *d, const struct preds *p, int n)
{
    const struct eeb_shard_info *in = &d->info;
    for (int i = 0; i < n; i++) {
        if (in->task != EEB_TASK_DET) {
            for (int k = 0; k < TOP_K; k++) {
                int c = p->classes[i * TOP_K + k];
                cr_assert(c >= 0 && c < in->classes, "item %d rank %d: class %d", i, k, c);
                cr_assert(isfinite(p->scores[i * TOP_K + k]));
                cr_assert(k == 0 || p->scores[i * TOP_K + k] <= p->scores[i * TOP_K + k - 1]);
                for (int j = 0; j < k; j++)
                    cr_assert_neq(p->classes[i * TOP_K + j], c, "item %d: class %d twice", i, c);
            }
            continue;
        }
        cr_assert(p->counts[i] >= 0 && p->counts[i] <= MAX_BOXES);
        for (int k = 0; k < p->counts[i]; k++) {
            const struct eeb_sut_detection *x = &p->dets[i * MAX_BOXES + k];
            cr_assert(x->cls >= 0 && x->cls < in->classes);
            cr_assert(0 <= x->x0 && x->x0 <= x->x1 && x->x1 <= in->w && 0 <= x->y0 &&
                          x->y0 <= x->y1 && x->y1 <= in->h,
                      "item %d box %d: (%g, %g)-(%g, %g)", i, k, x->x0, x->y0, x->x1, x->y1);
            cr_assert(isfinite(x->score) && (k == 0 || x->score <= x[-1].score));
        }
    }
}

/* Whether class k was a target of item i of batch b. */
int sut_test_shown(const struct data *d, const struct batch *b, int i, int k)
{
    if (d->info.task != EEB_TASK_DET)
        return b->labels[i] == k;
    const struct eeb_sut_box *x = b->boxes;
    for (int j = 0; j < i; j++)
        x += b->counts[j];
    for (int j = 0; j < b->counts[i]; j++)
        if (!x[j].difficult && x[j].cls == k)
            return 1;
    return 0;
}

int sut_test_first(const struct data *d, const struct preds *p, int i)
{
    if (d->info.task != EEB_TASK_DET)
        return p->classes[i * TOP_K];
    return p->counts[i] ? p->dets[i * MAX_BOXES].cls : -1;
}
