/*
 * test_train.c - the engine end to end through the accelerator interface:
 * fixed point learns what float32 learns, saturations are counted, frozen
 * layers stay put, weights survive a load/read round trip, and bad
 * networks or calls get errors that say what is wrong.
 */
#include "fpga/accel/eeb_accel.h"
#include "fpga/fx/eeb_fx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SIDE    12
#define CLASSES 6
#define PIXELS  (SIDE * SIDE * 3)

static uint64_t state;

static uint32_t rnd(uint32_t n)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (uint32_t)(state >> 11) % n;
}

/* A learnable problem that takes some learning: the class is where a
 * faint 3x3 blob sits (one of six places, jittered) in one random channel
 * over noise as bright as the blob often is. */
static void make_batch(int n, uint8_t *px, int32_t *labels)
{
    for (int i = 0; i < n; i++) {
        int c = (int)rnd(CLASSES);
        labels[i] = c;
        uint8_t *p = px + (size_t)i * PIXELS;
        for (int j = 0; j < PIXELS; j++)
            p[j] = (uint8_t)(30 + rnd(170));
        int y0 = (c / 3) * 6 + (int)rnd(3), x0 = (c % 3) * 4 + (int)rnd(2);
        int ch = (int)rnd(3);
        for (int y = y0; y < y0 + 3; y++)
            for (int x = x0; x < x0 + 3; x++)
                p[(y * SIDE + x) * 3 + ch] = (uint8_t)(130 + rnd(120));
    }
}

static struct eeb_net *small_resnet(void)
{
    struct eeb_shape in = {SIDE, SIDE, 3};
    struct eeb_net *net = eeb_net_new(in);
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 8, 3, 1, 1));
    int a = eeb_net_relu(net, eeb_net_conv(net, l, 8, 3, 1, 1));
    a = eeb_net_conv(net, a, 8, 3, 1, 1);
    l = eeb_net_relu(net, eeb_net_add(net, a, l));
    l = eeb_net_maxpool(net, l, 2, 2, 0);
    l = eeb_net_relu(net, eeb_net_conv(net, l, 16, 3, 1, 1));
    l = eeb_net_fc(net, eeb_net_flatten(net, l), CLASSES);
    cr_assert(eeb_net_softmax_ce(net, l) >= 0, "%s", net->err);
    eeb_net_init(net, 3);
    return net;
}

static struct eeb_accel *start(const char *backend, const struct eeb_accel_config *cfg,
                               const struct eeb_net *net)
{
    struct eeb_accel *a;
    char err[256];
    cr_assert_eq(eeb_accel_start(backend, cfg, net, &a, err, sizeof err), EEB_OK, "%s", err);
    return a;
}

static void train(struct eeb_accel *a, int steps, int batch, uint64_t data_seed)
{
    uint8_t *px = malloc((size_t)batch * PIXELS);
    int32_t labels[64];
    char err[256];
    state = data_seed;
    for (int s = 0; s < steps; s++) {
        make_batch(batch, px, labels);
        struct eeb_batch b = {batch, px, labels};
        struct eeb_train_result r;
        cr_assert_eq(a->ops->train_batch(a, &b, &r, err, sizeof err), EEB_OK, "%s", err);
        cr_assert(isfinite(r.loss));
    }
    free(px);
}

/* Top-1 accuracy on `batches` fresh batches of 32 from one seed. */
static double accuracy(struct eeb_accel *a, int batches)
{
    uint8_t px[32 * PIXELS];
    int32_t labels[32];
    float out[32 * CLASSES];
    char err[256];
    int right = 0;
    state = 0xabcdef;
    for (int t = 0; t < batches; t++) {
        make_batch(32, px, labels);
        struct eeb_batch b = {32, px, labels};
        cr_assert_eq(a->ops->predict(a, &b, out, err, sizeof err), EEB_OK, "%s", err);
        for (int i = 0; i < 32; i++) {
            int best = 0;
            for (int j = 1; j < CLASSES; j++)
                if (out[i * CLASSES + j] > out[i * CLASSES + best])
                    best = j;
            right += best == labels[i];
        }
    }
    return (double)right / (32.0 * batches);
}

Test(train, fixed_point_ends_within_two_points_of_float, .timeout = 120)
{
    struct eeb_net *net = small_resnet();
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = 32, cfg.lr = 0.01, cfg.threads = 2;
    struct eeb_accel *fx = start("emu", &cfg, net), *fp = start("fp32", &cfg, net);
    double before = accuracy(fx, 32);
    train(fx, 300, 16, 42);
    train(fp, 300, 16, 42);
    double acc_fx = accuracy(fx, 32), acc_fp = accuracy(fp, 32);
    cr_log_info("accuracy: before %.3f, int8 %.3f, float32 %.3f", before, acc_fx, acc_fp);
    cr_expect_gt(acc_fp, before + 0.3, "float32 learned nothing: %.3f -> %.3f", before, acc_fp);
    cr_expect_leq(fabs(acc_fx - acc_fp), 0.02, "int8 %.3f vs float32 %.3f", acc_fx, acc_fp);
    eeb_accel_close(fx), eeb_accel_close(fp);
    eeb_net_free(net);
}

Test(train, saturations_are_counted)
{
    struct eeb_net *net = small_resnet();
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.threads = 1;
    struct eeb_accel *calm = start("emu", &cfg, net);
    cfg.lr = 1e5; /* every step jumps past the 24-bit range */
    struct eeb_accel *wild = start("emu", &cfg, net);
    train(calm, 5, 16, 1);
    train(wild, 5, 16, 1);
    struct eeb_accel_stats s0, s1;
    calm->ops->stats(calm, &s0);
    wild->ops->stats(wild, &s1);
    cr_expect_eq(s0.steps, 5);
    cr_expect_eq(s0.items, 80);
    cr_expect_eq(s0.saturations[3], 0, "weights clamped at lr 0.01: %llu",
                 (unsigned long long)s0.saturations[3]);
    cr_expect_gt(s1.saturations[3], 1000, "weights clamped at lr 1e5: %llu",
                 (unsigned long long)s1.saturations[3]);
    eeb_accel_close(calm), eeb_accel_close(wild);
    eeb_net_free(net);
}

/* Weights of learnable layer `which` as floats. */
static float *weights_of(struct eeb_accel *a, const struct eeb_net *shape, int which)
{
    struct eeb_net *net = eeb_net_clone(shape);
    char err[256];
    cr_assert_eq(a->ops->read_model(a, net, err, sizeof err), EEB_OK, "%s", err);
    if (net->format == EEB_FORMAT_FX24)
        eeb_net_to_float(net);
    for (int i = 0, k = 0; i < net->nlayers; i++) {
        struct eeb_layer *l = &net->layers[i];
        if (!eeb_layer_learnable(l) || k++ != which)
            continue;
        size_t n = (size_t)l->rows * l->out.c;
        float *w = malloc(n * sizeof *w);
        memcpy(w, l->w, n * sizeof *w);
        eeb_net_free(net);
        return w;
    }
    cr_assert_fail("no learnable layer %d", which);
    return NULL;
}

Test(train, frozen_layers_stay_put_on_every_backend)
{
    const char *backends[] = {"kernel", "emu", "fp32"};
    struct eeb_net *net = small_resnet();
    size_t first = (size_t)net->layers[0].rows * net->layers[0].out.c;
    size_t second = (size_t)net->layers[2].rows * net->layers[2].out.c;
    for (int b = 0; b < 3; b++) {
        struct eeb_accel_config cfg;
        eeb_accel_config_default(&cfg);
        cfg.frozen = 1;
        struct eeb_accel *a = start(backends[b], &cfg, net);
        float *w0 = weights_of(a, net, 0), *v0 = weights_of(a, net, 1);
        train(a, 3, 8, 2);
        float *w1 = weights_of(a, net, 0), *v1 = weights_of(a, net, 1);
        cr_expect_eq(memcmp(w0, w1, first * sizeof *w0), 0, "%s: frozen layer 0 moved",
                     backends[b]);
        cr_expect_neq(memcmp(v0, v1, second * sizeof *v0), 0, "%s: layer 1 did not train",
                      backends[b]);
        free(w0), free(w1), free(v0), free(v1);
        eeb_accel_close(a);
    }
    eeb_net_free(net);
}

Test(train, weights_round_trip_through_a_fixed_backend)
{
    struct eeb_net *net = small_resnet();
    struct eeb_net *fixed = eeb_net_clone(net);
    eeb_net_to_fixed(fixed);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    struct eeb_accel *a = start("emu", &cfg, net);
    struct eeb_net *back = eeb_net_clone(net);
    char err[256];
    cr_assert_eq(a->ops->read_model(a, back, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(back->format, EEB_FORMAT_FX24);
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *x = &fixed->layers[i], *y = &back->layers[i];
        if (!eeb_layer_learnable(x))
            continue;
        cr_expect_eq(x->we, y->we, "layer %d exponent", i);
        cr_expect_eq(memcmp(x->wq, y->wq, (size_t)x->rows * x->out.c * 4), 0, "layer %d", i);
        cr_expect_eq(memcmp(x->bq, y->bq, (size_t)x->out.c * 4), 0, "layer %d biases", i);
    }
    /* float -> fixed -> float loses at most half a step of 2^exponent */
    eeb_net_to_float(back);
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *x = &net->layers[i], *y = &back->layers[i];
        for (int j = 0; eeb_layer_learnable(x) && j < x->rows * x->out.c; j++)
            cr_expect_leq(fabsf(x->w[j] - y->w[j]), ldexpf(0.5f, y->we), "layer %d weight %d", i,
                          j);
    }
    eeb_accel_close(a);
    eeb_net_free(net), eeb_net_free(fixed), eeb_net_free(back);
}

Test(train, int8_forward_tracks_float_forward)
{
    struct eeb_net *net = small_resnet();
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    struct eeb_accel *fx = start("kernel", &cfg, net), *fp = start("fp32", &cfg, net);
    uint8_t px[8 * PIXELS];
    int32_t labels[8];
    float a[8 * CLASSES], b[8 * CLASSES];
    char err[256];
    state = 9;
    make_batch(8, px, labels);
    struct eeb_batch batch = {8, px, labels};
    cr_assert_eq(fx->ops->predict(fx, &batch, a, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(fp->ops->predict(fp, &batch, b, err, sizeof err), EEB_OK, "%s", err);
    double scale = 0, diff = 0;
    for (int i = 0; i < 8 * CLASSES; i++) {
        scale = fmax(scale, fabs(b[i]));
        diff = fmax(diff, fabs(a[i] - b[i]));
    }
    cr_expect_gt(scale, 0.01);
    cr_expect_lt(diff, 0.1 * scale, "int8 logits off by %.4f at scale %.4f", diff, scale);
    eeb_accel_close(fx), eeb_accel_close(fp);
    eeb_net_free(net);
}

Test(train, bad_networks_and_calls_say_why)
{
    char err[256];
    struct eeb_shape in = {8, 8, 3};
    struct eeb_net *net = eeb_net_new(in);
    cr_expect_eq(eeb_net_conv(net, EEB_NET_INPUT, 4, 4, 1, 1), -1);
    cr_expect_str_eq(net->err, "layer 0: conv kernel 4 (1, 3, 5 or 7)");
    int a = eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1);
    int b = eeb_net_conv(net, EEB_NET_INPUT, 5, 3, 1, 1);
    cr_expect_eq(eeb_net_add(net, a, b), -1);
    cr_expect_str_eq(net->err, "layer 2: add of 8x8x4 and 8x8x5");
    cr_expect_eq(eeb_net_relu(net, 7), -1);
    cr_expect_str_eq(net->err, "layer 2: input 7 is not an earlier layer");

    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    struct eeb_accel *acc;
    cr_expect_eq(eeb_accel_start("emu", &cfg, net, &acc, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "emu: the network does not end in a loss layer");
    cr_expect_eq(eeb_accel_start("tpu", &cfg, net, &acc, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "no backend 'tpu' in this build");

    int l = eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_relu(net, a), 3));
    cr_assert_geq(l, 0, "%s", net->err);
    cr_expect_eq(eeb_net_relu(net, l), -1);
    cr_expect_str_eq(net->err, "layer 5: nothing may follow the loss layer");
    cfg.frozen = 5;
    cr_expect_eq(eeb_accel_start("kernel", &cfg, net, &acc, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "kernel: 5 frozen layers, but the network has 3 learnable ones");
    cfg.frozen = 0;
    cr_expect_eq(eeb_accel_start("kernel", &cfg, net, &acc, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "kernel: layer 1 (conv): output is never used");
    eeb_net_free(net);

    net = eeb_net_new(in);
    a = eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1);
    cr_assert_geq(eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_relu(net, a), 3)), 0);
    /* 2048 x 8 x 8 terms in one weight gradient: past what an int32 sums
     * exactly, within the 48-bit accumulators (fx_reduction_shift) */
    cfg.batch_max = 2048;
    cr_expect_eq(eeb_accel_start("emu", &cfg, net, &acc, err, sizeof err), EEB_OK, "%s", err);
    eeb_accel_close(acc);
    eeb_net_free(net);
    net = eeb_net_new((struct eeb_shape){1024, 1024, 1});
    a = eeb_net_conv(net, EEB_NET_INPUT, 1, 1, 1, 0);
    a = eeb_net_gap(net, eeb_net_maxpool(net, a, 8, 8, 0));
    cr_assert_geq(eeb_net_softmax_ce(net, eeb_net_fc(net, a, 2)), 0, "%s", net->err);
    cfg.batch_max = 8193; /* 2^33 + 2^20 terms: past them */
    cr_expect_eq(eeb_accel_start("kernel", &cfg, net, &acc, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "8590983168-term weight-gradient sum; the 48-bit accumulators"), "%s",
              err);
    eeb_net_free(net);
    net = eeb_net_new(in);
    a = eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1);
    cr_assert_geq(eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_relu(net, a), 3)), 0);

    cfg.batch_max = 4;
    cr_assert_eq(eeb_accel_start("emu", &cfg, net, &acc, err, sizeof err), EEB_OK, "%s", err);
    uint8_t px[5 * 8 * 8 * 3] = {0};
    int32_t labels[5] = {0};
    struct eeb_batch big = {5, px, labels};
    struct eeb_train_result r;
    cr_expect_eq(acc->ops->train_batch(acc, &big, &r, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "emu: batch of 5 items (1..4)");
    eeb_accel_close(acc);
    eeb_net_free(net);
}

/* The kernel's slice passes errors back to the channels it took (the
 * emulator runs the same C, so only the float trainer can judge it): one
 * step from the same weights moves the weights below two overlapping
 * slices the same way on both, and not at all for channels no slice takes. */
Test(train, slice_errors_reach_the_channels_they_came_from)
{
    struct eeb_shape in = {SIDE, SIDE, 3};
    struct eeb_net *net = eeb_net_new(in);
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 8, 3, 1, 1));
    l = eeb_net_add(net, eeb_net_slice(net, l, 0, 4), eeb_net_slice(net, l, 2, 4));
    l = eeb_net_relu(net, eeb_net_conv(net, l, 8, 3, 2, 1));
    l = eeb_net_fc(net, eeb_net_flatten(net, l), CLASSES);
    cr_assert(eeb_net_softmax_ce(net, l) >= 0, "%s", net->err);
    eeb_net_init(net, 5);
    eeb_net_to_fixed(net); /* both start from weights the fixed format holds */
    eeb_net_to_float(net);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.weight_decay = 0;
    cfg.lr = 0.05;
    size_t n = (size_t)net->layers[0].rows * 8;
    float *delta[2];
    const char *backends[2] = {"fp32", "kernel"};
    for (int b = 0; b < 2; b++) {
        struct eeb_accel *a = start(backends[b], &cfg, net);
        float *w0 = weights_of(a, net, 0);
        train(a, 1, 32, 9);
        delta[b] = weights_of(a, net, 0);
        for (size_t j = 0; j < n; j++)
            delta[b][j] -= w0[j];
        free(w0);
        eeb_accel_close(a);
    }
    double dot = 0, n0 = 0, n1 = 0, untaken = 0;
    for (size_t j = 0; j < n; j++) {
        if (j % 8 >= 6) /* channels 6 and 7: in no slice */
            untaken += fabs(delta[1][j]);
        dot += (double)delta[0][j] * delta[1][j];
        n0 += (double)delta[0][j] * delta[0][j], n1 += (double)delta[1][j] * delta[1][j];
    }
    double cosine = dot / sqrt(n0 * n1);
    cr_assert_gt(n0, 0, "the float step did not move layer 0");
    cr_assert_gt(cosine, 0.9, "fixed and float steps of layer 0 point apart: cosine %.3f", cosine);
    cr_assert_eq(untaken, 0, "channels no slice takes got gradients");
    free(delta[0]), free(delta[1]);
    eeb_net_free(net);
}

/* One learnable layer's weights as the backend holds them now. */
static float *first_weights(struct eeb_accel *a, const struct eeb_net *shape, size_t *n)
{
    float *w = weights_of(a, shape, 0);
    *n = (size_t)shape->layers[0].rows * shape->layers[0].out.c;
    return w;
}

/* A weight gradient summing batch 32 x 48 x 48 = 73728 products, past
 * what an int32 holds exactly: it sums in 48 bits and is stored shifted
 * (fx_reduction_shift), the same bits on the kernel and the emulator, and
 * the step it takes points where float32's does. */
Test(train, a_weight_gradient_past_65536_terms_sums_in_48_bits, .timeout = 120)
{
    enum { S = 48, N = 32 };
    struct eeb_net *net = eeb_net_new((struct eeb_shape){S, S, 3});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1));
    l = eeb_net_fc(net, eeb_net_gap(net, l), 3);
    cr_assert_geq(eeb_net_softmax_ce(net, l), 0, "%s", net->err);
    eeb_net_init(net, 5);
    uint8_t *px = malloc((size_t)N * S * S * 3);
    int32_t labels[N];
    state = 77;
    for (size_t i = 0; i < (size_t)N * S * S * 3; i++)
        px[i] = (uint8_t)rnd(256);
    for (int i = 0; i < N; i++)
        labels[i] = (int)rnd(3);
    const char *backends[] = {"kernel", "emu", "fp32"};
    float *step[3];
    size_t n = 0;
    for (int b = 0; b < 3; b++) {
        struct eeb_accel_config cfg;
        eeb_accel_config_default(&cfg);
        cfg.batch_max = N, cfg.momentum = 0, cfg.weight_decay = 0, cfg.lr = 0.1;
        struct eeb_accel *a = start(backends[b], &cfg, net);
        float *w0 = first_weights(a, net, &n);
        struct eeb_batch batch = {N, px, labels};
        struct eeb_train_result r;
        char err[256];
        cr_assert_eq(a->ops->train_batch(a, &batch, &r, err, sizeof err), EEB_OK, "%s", err);
        step[b] = first_weights(a, net, &n);
        for (size_t i = 0; i < n; i++)
            step[b][i] -= w0[i];
        free(w0);
        eeb_accel_close(a);
    }
    cr_expect_eq(memcmp(step[0], step[1], n * sizeof *step[0]), 0,
                 "the kernel and the emulator take the same step, bit for bit");
    double dot = 0, a2 = 0, b2 = 0;
    for (size_t i = 0; i < n; i++)
        dot += (double)step[1][i] * step[2][i], a2 += (double)step[1][i] * step[1][i],
            b2 += (double)step[2][i] * step[2][i];
    double cosine = dot / sqrt(a2 * b2);
    cr_expect_gt(cosine, 0.9, "8-bit step against float32's: cosine %.3f", cosine);
    for (int b = 0; b < 3; b++)
        free(step[b]);
    free(px);
    eeb_net_free(net);
}
