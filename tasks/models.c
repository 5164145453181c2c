/*
 * models.c - the reference model of each task, put together from the
 * blocks its ops name (features, then head and loss), and the check that
 * a model fits a shard.
 */
#include "eeb_tasks.h"

#include "tasks_int.h"

#include <stdio.h>

/* conv + ReLU */
static int conv_relu(struct eeb_net *net, int in, int c, int k, int stride)
{
    return eeb_net_relu(net, eeb_net_conv(net, in, c, k, stride, k / 2));
}

/* Two 3x3 convs and the identity, as in ResNet's basic block. */
static int residual(struct eeb_net *net, int in, int c)
{
    int a = conv_relu(net, in, c, 3, 1);
    a = eeb_net_conv(net, a, c, 3, 1, 1);
    return eeb_net_relu(net, eeb_net_add(net, a, in));
}

/*
 * Slow fusion (Karpathy et al., CVPR 2014) over a clip stacked along
 * channels: the first layer looks at groups of 4 frames, 2 apart, each
 * through its own 3x3/2 conv; the second fuses neighbouring groups in
 * pairs; the third fuses all of them, so the temporal extent grows with
 * depth (4 frames, then 6, then the clip).  Unlike the paper's 3D
 * convolutions, the groups do not share weights: eeb's layers are 2D.
 * input/8 resolution, 128 channels, like the image backbone.
 */
int tasks_model_slow_fusion(struct eeb_net *net, const struct eeb_shard_info *info)
{
    enum { EXTENT = 4, STEP = 2, MAX_GROUPS = 32 };
    int frames = info->frames, c = info->c;
    int extent = frames < EXTENT ? frames : EXTENT;
    int groups = (frames - extent) / STEP + 1, g1[MAX_GROUPS] = {0}, g2[MAX_GROUPS] = {0};
    for (int g = 0; g < groups; g++)
        g1[g] =
            conv_relu(net, eeb_net_slice(net, EEB_NET_INPUT, g * STEP * c, extent * c), 32, 3, 2);
    int fused = groups > 1 ? groups - 1 : 1;
    for (int g = 0; g < fused; g++)
        g2[g] =
            conv_relu(net, groups > 1 ? eeb_net_concat(net, g1[g], g1[g + 1]) : g1[0], 64, 3, 2);
    int all = g2[0];
    for (int g = 1; g < fused; g++)
        all = eeb_net_concat(net, all, g2[g]);
    return conv_relu(net, all, 128, 3, 2);
}

/* input/8 resolution, 128 channels */
int tasks_model_backbone(struct eeb_net *net, const struct eeb_shard_info *info)
{
    (void)info; /* any image size */
    int l = conv_relu(net, EEB_NET_INPUT, 32, 3, 2);
    l = residual(net, l, 32);
    l = conv_relu(net, l, 64, 3, 2);
    l = residual(net, l, 64);
    return conv_relu(net, l, 128, 3, 2);
}

int tasks_model_classifier(struct eeb_net *net, int features, int classes)
{
    return eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_gap(net, features), classes));
}

/* per cell: objectness, the box (4), the classes */
int tasks_model_grid(struct eeb_net *net, int features, int classes)
{
    int l = conv_relu(net, features, 128, 3, 1);
    l = eeb_net_conv(net, l, 5 + classes, 1, 1, 0);
    return eeb_net_grid_loss(net, l);
}

int eeb_task_model(const struct eeb_shard_info *info, uint64_t seed, struct eeb_net **out,
                   char *err, size_t errlen)
{
    const struct eeb_task_ops *ops = eeb_task_get(info->task);
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "model: task %d unknown", (int)info->task);
    if (ops->clips && info->frames > EEB_TASK_MAX_FRAMES)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s model: %d frames (at most %d)",
                        eeb_task_name(info->task), info->frames, EEB_TASK_MAX_FRAMES);
    struct eeb_shape in = {info->h, info->w, info->c * info->frames};
    struct eeb_net *net = eeb_net_new(in);
    if (!net)
        return eeb_errf(err, errlen, EEB_ENOMEM, "model: out of memory");
    int l = ops->model_head(net, ops->model_features(net, info), info->classes);
    if (l < 0) {
        int rc = eeb_errf(err, errlen, EEB_EINVAL, "%s model for %dx%d items: %s",
                          eeb_task_name(info->task), info->h, info->w, net->err);
        eeb_net_free(net);
        return rc;
    }
    eeb_net_init(net, seed);
    *out = net;
    return EEB_OK;
}

int eeb_task_check_model(const struct eeb_net *net, const struct eeb_shard_info *info, char *err,
                         size_t errlen)
{
    struct eeb_shape in = {info->h, info->w, info->c * info->frames};
    if (net->input.h != in.h || net->input.w != in.w || net->input.c != in.c)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "the model takes %dx%dx%d inputs, the shard has %dx%dx%d (h x w x "
                        "channels * frames)",
                        net->input.h, net->input.w, net->input.c, in.h, in.w, in.c);
    const struct eeb_layer *loss = eeb_net_loss(net);
    const struct eeb_task_ops *ops = eeb_task_get(info->task);
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "the shard's task %d is unknown", (int)info->task);
    if (!loss || loss->kind != ops->loss)
        return eeb_errf(err, errlen, EEB_EINVAL, "the model's loss is %s, a %s shard needs %s",
                        loss ? eeb_layer_kind_name(loss->kind) : "missing",
                        eeb_task_name(info->task), eeb_layer_kind_name(ops->loss));
    if (eeb_net_classes(net) != info->classes)
        return eeb_errf(err, errlen, EEB_EINVAL, "the model scores %d classes, the shard has %d",
                        eeb_net_classes(net), info->classes);
    return EEB_OK;
}
