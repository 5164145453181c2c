/*
 * fxhost.c - the host half of every fixed-point backend: model in (float
 * weights are converted, exponents chosen per tensor), batches in, one
 * program run per call, loss and outputs out.
 */
#include "fpga/fx/fxhost.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[FX_OPS] = {
    "nop",           "conv_fwd", "conv_bwd_data", "conv_bwd_weight", "fc_fwd",      "fc_bwd_data",
    "fc_bwd_weight", "relu_fwd", "relu_bwd",      "maxpool_fwd",     "maxpool_bwd", "avgpool_fwd",
    "avgpool_bwd",   "add",      "concat_fwd",    "concat_bwd",      "softmax_ce",  "grid_loss",
    "quant_w",       "sgd",
};

int fxhost_open(size_t size, const struct eeb_accel_ops *ops, const struct eeb_accel_config *cfg,
                struct eeb_accel **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = eeb_accel_config_check(cfg, ops->name, err, errlen);
    if (rc)
        return rc;
    struct fxhost *h = calloc(1, size);
    if (!h)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", ops->name);
    h->base.ops = ops;
    h->cfg = *cfg;
    *out = &h->base;
    return EEB_OK;
}

void fxhost_close(struct eeb_accel *a)
{
    struct fxhost *h = (struct fxhost *)a;
    eeb_fx_image_free(&h->img);
    eeb_net_free(h->net);
    free(h);
}

int fxhost_check_status(struct fxhost *h, char *err, size_t errlen)
{
    const struct fx_header *hd = eeb_fx_header(&h->img);
    if (hd->status == FX_OK)
        return EEB_OK;
    const struct fx_cmd *c = (const struct fx_cmd *)(h->img.mem + hd->cmds_off) + hd->status_cmd;
    const char *why = hd->status == FX_BAD_IMAGE   ? "bad image"
                      : hd->status == FX_BAD_OP    ? "unknown opcode"
                      : hd->status == FX_NO_MEMORY ? "out of memory"
                                                   : "operands do not fit";
    return eeb_errf(err, errlen, hd->status == FX_NO_MEMORY ? EEB_ENOMEM : EEB_EDEVICE,
                    "%s: command %u (%s, layer %u): %s", h->base.ops->name, hd->status_cmd,
                    c->op < FX_OPS ? op_names[c->op] : "?", c->layer, why);
}

int fxhost_load_model(struct eeb_accel *a, const struct eeb_net *net, char *err, size_t errlen)
{
    struct fxhost *h = (struct fxhost *)a;
    struct eeb_net *copy = eeb_net_clone(net);
    if (!copy)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", a->ops->name);
    if (copy->format != EEB_FORMAT_FX24)
        eeb_net_to_fixed(copy);
    struct eeb_fx_image img;
    char why[200];
    if (eeb_fx_compile(copy, h->cfg.batch_max, h->cfg.frozen, &img, why, sizeof why)) {
        eeb_net_free(copy);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s", a->ops->name, why);
    }
    eeb_fx_image_free(&h->img);
    eeb_net_free(h->net);
    h->img = img;
    h->net = copy;
    eeb_fx_load_weights(&h->img, copy);
    eeb_fx_set_hyper(&h->img, h->cfg.lr, h->cfg.momentum, h->cfg.weight_decay, h->cfg.seed, 0);
    h->steps = h->items = 0;
    return h->run(h, FX_PROG_INIT, err, errlen);
}

static int check_batch(struct fxhost *h, const struct eeb_batch *b, char *err, size_t errlen)
{
    if (!h->img.mem)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no model loaded", h->base.ops->name);
    if (b->n < 1 || b->n > h->cfg.batch_max)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: batch of %d items (1..%d)", h->base.ops->name,
                        b->n, h->cfg.batch_max);
    return EEB_OK;
}

int fxhost_train_batch(struct eeb_accel *a, const struct eeb_batch *b, struct eeb_train_result *r,
                       char *err, size_t errlen)
{
    struct fxhost *h = (struct fxhost *)a;
    int rc = check_batch(h, b, err, errlen);
    if (rc)
        return rc;
    eeb_fx_set_batch(&h->img, b->n, b->pixels, b->labels);
    eeb_fx_set_hyper(&h->img, h->cfg.lr, h->cfg.momentum, h->cfg.weight_decay, h->cfg.seed,
                     (uint32_t)h->steps);
    rc = h->run(h, FX_PROG_TRAIN, err, errlen);
    if (rc)
        return rc;
    const struct fx_header *hd = eeb_fx_header(&h->img);
    r->loss = (double)hd->loss_q16 / 65536.0 / b->n;
    r->correct = (int)hd->correct;
    h->steps++;
    h->items += (uint64_t)b->n;
    return EEB_OK;
}

int fxhost_predict(struct eeb_accel *a, const struct eeb_batch *b, float *out, char *err,
                   size_t errlen)
{
    struct fxhost *h = (struct fxhost *)a;
    int rc = check_batch(h, b, err, errlen);
    if (rc)
        return rc;
    eeb_fx_set_batch(&h->img, b->n, b->pixels, NULL);
    rc = h->run(h, FX_PROG_PREDICT, err, errlen);
    if (rc)
        return rc;
    eeb_fx_read_output(&h->img, b->n, out);
    return EEB_OK;
}

int fxhost_read_model(struct eeb_accel *a, struct eeb_net *net, char *err, size_t errlen)
{
    struct fxhost *h = (struct fxhost *)a;
    if (!h->net)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no model loaded", a->ops->name);
    if (net->nlayers != h->net->nlayers)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: the network has %d layers, the model %d",
                        a->ops->name, net->nlayers, h->net->nlayers);
    eeb_fx_read_weights(&h->img, net);
    return EEB_OK;
}

void fxhost_stats(struct eeb_accel *a, struct eeb_accel_stats *s)
{
    struct fxhost *h = (struct fxhost *)a;
    memset(s, 0, sizeof *s);
    s->steps = h->steps, s->items = h->items;
    if (h->img.mem) {
        uint64_t sat[EEB_FX_ROLES];
        eeb_fx_saturations(&h->img, sat);
        for (int i = 0; i < 4; i++)
            s->saturations[i] = sat[i];
    }
    snprintf(s->detail, sizeof s->detail, "%s", h->detail);
}
