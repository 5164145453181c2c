/*
 * accel_fp32.c - the "fp32" backend: the float32 reference trainer behind
 * the accelerator interface, so the baseline runs through the same calls
 * (and the same harness) as the accelerator it is compared with.
 */
#include "eeb_ref.h"
#include "fpga/accel/backends.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One OpenBLAS thread unless the configuration says otherwise, for two
 * reasons.  A float result then does not depend on the machine's core count
 * (OpenBLAS's own default is a thread per core, and another split of the
 * work sums in another order: the embedded cls pre-training ends at 8.5 %
 * train top-1 with one thread and 8.3 % with two).  And the embedded models'
 * GEMMs are small: on a busy 2-core machine their threads mostly wait for
 * each other (that pre-training took 1.95 s with one thread, 2.65 s with
 * two).  A larger network gains from threads (bench_train prints both ways);
 * `eeb model pretrain --threads N` asks for them. */
#define FP32_DEFAULT_THREADS 1

struct fp32 {
    struct eeb_accel base;
    struct eeb_accel_config cfg;
    struct eeb_ref *ref;
    uint64_t steps, items;
};

static int fp32_open(const struct eeb_accel_config *cfg, struct eeb_accel **out, char *err,
                     size_t errlen)
{
    *out = NULL;
    int rc = eeb_accel_config_check(cfg, "fp32", err, errlen);
    if (rc)
        return rc;
    struct fp32 *f = calloc(1, sizeof *f);
    if (!f)
        return eeb_errf(err, errlen, EEB_ENOMEM, "fp32: out of memory");
    f->base.ops = &eeb_accel_fp32_ops;
    f->cfg = *cfg;
    if (f->cfg.threads <= 0)
        f->cfg.threads = FP32_DEFAULT_THREADS;
    openblas_set_num_threads(f->cfg.threads); /* for the process: OpenBLAS has no other scope */
    *out = &f->base;
    return EEB_OK;
}

static int fp32_load(struct eeb_accel *a, const struct eeb_net *net, char *err, size_t errlen)
{
    struct fp32 *f = (struct fp32 *)a;
    char why[200];
    struct eeb_ref *r = eeb_ref_new(net, f->cfg.batch_max, f->cfg.frozen, why, sizeof why);
    if (!r)
        return eeb_errf(err, errlen, EEB_EINVAL, "fp32: %s", why);
    eeb_ref_set_hyper(r, f->cfg.lr, f->cfg.momentum, f->cfg.weight_decay);
    eeb_ref_set_portable(r, f->cfg.portable);
    eeb_ref_free(f->ref);
    f->ref = r;
    f->steps = f->items = 0;
    return EEB_OK;
}

static int check(struct fp32 *f, const struct eeb_batch *b, char *err, size_t errlen)
{
    if (!f->ref)
        return eeb_errf(err, errlen, EEB_EINVAL, "fp32: no model loaded");
    if (b->n < 1 || b->n > f->cfg.batch_max)
        return eeb_errf(err, errlen, EEB_EINVAL, "fp32: batch of %d items (1..%d)", b->n,
                        f->cfg.batch_max);
    return EEB_OK;
}

static int fp32_train(struct eeb_accel *a, const struct eeb_batch *b, struct eeb_train_result *r,
                      char *err, size_t errlen)
{
    struct fp32 *f = (struct fp32 *)a;
    int rc = check(f, b, err, errlen);
    if (rc)
        return rc;
    eeb_ref_forward(f->ref, b->pixels, b->n);
    r->loss = eeb_ref_loss(f->ref, b->labels, b->n, 1, &r->correct);
    eeb_ref_update(f->ref);
    if (eeb_ref_out_of_memory(f->ref))
        return eeb_errf(err, errlen, EEB_ENOMEM, "fp32: out of memory in a GEMM");
    f->steps++;
    f->items += (uint64_t)b->n;
    return EEB_OK;
}

static int fp32_predict(struct eeb_accel *a, const struct eeb_batch *b, float *out, char *err,
                        size_t errlen)
{
    struct fp32 *f = (struct fp32 *)a;
    int rc = check(f, b, err, errlen);
    if (rc)
        return rc;
    eeb_ref_forward(f->ref, b->pixels, b->n);
    if (eeb_ref_out_of_memory(f->ref))
        return eeb_errf(err, errlen, EEB_ENOMEM, "fp32: out of memory in a GEMM");
    memcpy(out, eeb_ref_output(f->ref), (size_t)b->n * eeb_ref_outputs(f->ref) * sizeof *out);
    return EEB_OK;
}

static int fp32_read(struct eeb_accel *a, struct eeb_net *net, char *err, size_t errlen)
{
    struct fp32 *f = (struct fp32 *)a;
    if (!f->ref)
        return eeb_errf(err, errlen, EEB_EINVAL, "fp32: no model loaded");
    const struct eeb_net *src = eeb_ref_net(f->ref);
    if (net->nlayers != src->nlayers)
        return eeb_errf(err, errlen, EEB_EINVAL, "fp32: the network has %d layers, the model %d",
                        net->nlayers, src->nlayers);
    for (int i = 0; i < src->nlayers; i++) {
        const struct eeb_layer *l = &src->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        memcpy(net->layers[i].w, l->w, (size_t)l->rows * l->out.c * sizeof *l->w);
        memcpy(net->layers[i].b, l->b, (size_t)l->out.c * sizeof *l->b);
    }
    net->format = EEB_FORMAT_F32;
    return EEB_OK;
}

static void fp32_stats(struct eeb_accel *a, struct eeb_accel_stats *s)
{
    struct fp32 *f = (struct fp32 *)a;
    memset(s, 0, sizeof *s);
    s->steps = f->steps, s->items = f->items;
    if (f->cfg.portable)
        snprintf(s->detail, sizeof s->detail, "float32, portable GEMM (the same bits anywhere)");
    else
        snprintf(s->detail, sizeof s->detail, "float32, OpenBLAS sgemm, %d thread%s",
                 f->cfg.threads, f->cfg.threads == 1 ? "" : "s");
}

static void fp32_close(struct eeb_accel *a)
{
    struct fp32 *f = (struct fp32 *)a;
    eeb_ref_free(f->ref);
    free(f);
}

const struct eeb_accel_ops eeb_accel_fp32_ops = {
    .version = EEB_ACCEL_OPS_VERSION,
    .caps = 0, /* float32 on the CPU */
    .name = "fp32",
    .description = "float32 reference trainer on OpenBLAS (the CPU baseline)",
    .open = fp32_open,
    .load_model = fp32_load,
    .train_batch = fp32_train,
    .predict = fp32_predict,
    .read_model = fp32_read,
    .stats = fp32_stats,
    .close = fp32_close,
};
