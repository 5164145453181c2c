/*
 * test_ref.c - the float32 reference trainer's gradients against central
 * finite differences of its own loss, for every learnable weight of small
 * networks that use every layer kind and both losses.
 */
#include "fpga/ref/eeb_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

static uint64_t state;

static uint32_t rnd(uint32_t n)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (uint32_t)(state >> 11) % n;
}

/* Labels per item: one class, or six int32 per grid cell. */
static int label_ints(const struct eeb_net *net)
{
    const struct eeb_layer *l = eeb_net_loss(net);
    return l->kind == EEB_LAYER_SOFTMAX_CE ? 1 : l->out.h * l->out.w * 6;
}

static void fill_labels(const struct eeb_net *net, int n, int32_t *labels)
{
    int classes = eeb_net_classes(net), per = label_ints(net) == 1 ? 1 : 6;
    for (int i = 0; i < n * label_ints(net); i += per) {
        if (per == 1) {
            labels[i] = (int32_t)rnd((uint32_t)classes);
            continue;
        }
        labels[i] = rnd(10) < 4;
        labels[i + 1] = (int32_t)rnd((uint32_t)classes);
        for (int k = 2; k < 6; k++)
            labels[i + k] = (int32_t)rnd(65536);
    }
}

static double loss_at(struct eeb_ref *r, const uint8_t *px, const int32_t *labels, int n)
{
    eeb_ref_forward(r, px, n);
    return eeb_ref_loss(r, labels, n, 0, NULL);
}

/* Compares every weight's and bias's gradient with (L(w+h) - L(w-h)) / 2h.
 * Where the one-sided slopes disagree the loss has a kink within h (a
 * ReLU or max-pool switching): such points are skipped, and must be few. */
static void check_gradients(struct eeb_net *net)
{
    char err[200];
    cr_assert(eeb_net_loss(net), "%s", net->err);
    eeb_net_init(net, 5);
    for (int i = 0; i < net->nlayers; i++) /* non-zero biases exercise their path too */
        if (eeb_layer_learnable(&net->layers[i]))
            for (int j = 0; j < net->layers[i].out.c; j++)
                net->layers[i].b[j] = (float)((int)rnd(200) - 100) / 500.0f;
    const int n = 3;
    size_t px = (size_t)n * net->input.h * net->input.w * net->input.c;
    uint8_t *pixels = malloc(px);
    int32_t *labels = malloc((size_t)n * label_ints(net) * sizeof *labels);
    for (size_t i = 0; i < px; i++)
        pixels[i] = (uint8_t)rnd(256);
    fill_labels(net, n, labels);
    struct eeb_ref *r = eeb_ref_new(net, n, 0, err, sizeof err);
    cr_assert(r, "%s", err);
    eeb_ref_forward(r, pixels, n);
    eeb_ref_loss(r, labels, n, 1, NULL);
    struct eeb_net *w = eeb_ref_net(r);
    const float h = 1e-3f;
    const double base = loss_at(r, pixels, labels, n);
    int checked = 0, kinks = 0;
    for (int i = 0; i < w->nlayers; i++) {
        struct eeb_layer *l = &w->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        size_t nw = (size_t)l->rows * l->out.c;
        for (size_t j = 0; j < nw + (size_t)l->out.c; j++) {
            float *p = j < nw ? &l->w[j] : &l->b[j - nw];
            double g = j < nw ? eeb_ref_grad_w(r, i)[j] : eeb_ref_grad_b(r, i)[j - nw];
            float keep = *p;
            *p = keep + h;
            double up = loss_at(r, pixels, labels, n);
            *p = keep - h;
            double down = loss_at(r, pixels, labels, n);
            *p = keep;
            double num = (up - down) / (2 * h), right = (up - base) / h, left = (base - down) / h;
            if (fabs(right - left) > 1e-3 + 0.05 * fabs(num)) {
                kinks++;
                continue;
            }
            cr_expect(fabs(num - g) <= 2e-3 + 0.03 * fabs(num),
                      "layer %d (%s) %s %zu: backward %.6f, finite difference %.6f", i,
                      eeb_layer_kind_name(l->kind), j < nw ? "weight" : "bias", j < nw ? j : j - nw,
                      g, num);
            checked++;
        }
    }
    cr_expect_gt(checked, 50);
    cr_expect_leq(kinks, checked / 20, "%d kinks for %d smooth points", kinks, checked);
    eeb_ref_free(r);
    free(pixels), free(labels);
    eeb_net_free(net);
}

Test(ref, gradients_through_every_layer_kind, .timeout = 60)
{
    state = 77;
    struct eeb_shape in = {6, 6, 2};
    struct eeb_net *net = eeb_net_new(in);
    int a = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1));
    int b = eeb_net_conv(net, a, 4, 1, 1, 0);
    int l = eeb_net_add(net, b, a); /* a feeds two layers */
    l = eeb_net_avgpool(net, l, 2, 2, 0);
    int c = eeb_net_conv(net, EEB_NET_INPUT, 3, 5, 2, 2);
    l = eeb_net_concat(net, l, c);
    l = eeb_net_add(net, eeb_net_slice(net, l, 0, 4), eeb_net_slice(net, l, 2, 4));
    l = eeb_net_maxpool(net, l, 2, 1, 0);
    l = eeb_net_fc(net, eeb_net_flatten(net, l), 5);
    eeb_net_softmax_ce(net, l);
    check_gradients(net);
}

Test(ref, gradients_of_global_pool_and_strided_conv)
{
    state = 78;
    struct eeb_shape in = {7, 7, 3};
    struct eeb_net *net = eeb_net_new(in);
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 5, 7, 2, 3));
    l = eeb_net_gap(net, l);
    eeb_net_softmax_ce(net, eeb_net_fc(net, l, 3));
    check_gradients(net);
}

/* ResNet's stem pool (3x3 stride 2 pad 1) on an odd and an even side, with
 * no ReLU before it: its windows over the edge hold negative values, which
 * padding read as zero would beat. */
Test(ref, gradients_of_padded_max_pools)
{
    state = 80;
    struct eeb_shape in = {9, 8, 2};
    struct eeb_net *net = eeb_net_new(in);
    int l = eeb_net_maxpool(net, eeb_net_conv(net, EEB_NET_INPUT, 3, 3, 1, 1), 3, 2, 1);
    l = eeb_net_maxpool(net, eeb_net_conv(net, l, 4, 3, 1, 1), 3, 2, 1); /* 5x4 -> 3x2 */
    cr_assert_geq(l, 0, "%s", net->err);
    cr_assert(net->layers[l].out.h == 3 && net->layers[l].out.w == 2);
    eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_flatten(net, l), 4));
    check_gradients(net);
}

Test(ref, gradients_of_the_grid_loss)
{
    state = 79;
    struct eeb_shape in = {8, 8, 3};
    struct eeb_net *net = eeb_net_new(in);
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 6, 3, 2, 1));
    l = eeb_net_conv(net, l, 5 + 3, 1, 1, 0);
    eeb_net_grid_loss(net, l);
    check_gradients(net);
}
