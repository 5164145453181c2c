/*
 * test_ops.c - the emulator against the kernel C, bit for bit (ggml's
 * test-backend-ops in spirit).  Each case builds a small network around
 * one operation, compiles it, and runs init and two training steps (so
 * forward, backward data, backward weight, SGD with momentum and the
 * weight requantization all run) on the kernel and on the emulator with 1
 * and 2 threads and every instruction set of this CPU; the device images
 * must then be identical byte for byte, and the weights must have moved.
 * A partial batch is used on purpose.
 */
#include "fpga/emu/eeb_emu.h"
#include "fpga/emu/emu_int.h"
#include "fpga/fx/eeb_fx.h"
#include "fpga/kernel/fx_kernel.h"
#include "fpga/ref/eeb_ref.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state;

static uint32_t rnd(uint32_t n)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (uint32_t)(state >> 11) % n;
}

/* The tensor a byte offset of the image falls in, for the failure message. */
static int tensor_at_offset(const uint8_t *mem, size_t off)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    const struct fx_tensor *t = (const struct fx_tensor *)(mem + h->tensors_off);
    int best = -1;
    for (uint32_t i = 0; i < h->ntensors; i++)
        if (t[i].offset <= off && (best < 0 || t[i].offset > t[best].offset))
            best = (int)i;
    return best;
}

static void fill_labels(const struct eeb_net *net, const struct eeb_fx_image *img, int n,
                        int32_t *labels)
{
    int classes = eeb_net_classes(net);
    if (eeb_net_loss(net)->kind == EEB_LAYER_SOFTMAX_CE) {
        for (int i = 0; i < n; i++)
            labels[i] = (int32_t)rnd((uint32_t)classes);
        return;
    }
    for (int i = 0; i < n * img->label_ints; i += FX_GT_N) {
        labels[i + FX_GT_OBJ] = rnd(10) < 3;
        labels[i + FX_GT_CLASS] = (int32_t)rnd((uint32_t)classes);
        for (int k = FX_GT_X; k <= FX_GT_H; k++)
            labels[i + k] = (int32_t)rnd(65536);
    }
}

static void run(uint8_t *mem, struct eeb_emu *emu, uint32_t prog)
{
    if (emu)
        eeb_emu_run(emu, mem, prog);
    else
        fx_kernel(mem, prog);
    const struct fx_header *h = (const struct fx_header *)mem;
    cr_assert_eq(h->status, FX_OK, "program %u stopped at command %u: status %u", prog,
                 h->status_cmd, h->status);
}

/* Trains net on the kernel and on the emulator, every ISA on 1 and 2
 * threads with eeb's own convolutions, and on the best with oneDNN's
 * (forward, and backward data at stride 1) in mode `onednn` where its
 * sums are exact, for `steps` steps; every emulator's image must be the
 * kernel's.  A nonzero bias replaces every conv and FC layer's biases. */
static void check_exact_steps(struct eeb_net *net, int batch, int frozen, const char *what,
                              float bias, int steps, enum eeb_emu_onednn onednn)
{
    char err[256];
    /* a refused layer returns -1, which later layers would take as the
     * input: the network the test meant was not built */
    cr_assert(!net->err[0], "%s: %s", what, net->err);
    cr_assert(eeb_net_loss(net), "%s: %s", what, net->err);
    eeb_net_init(net, state);
    for (int i = 0; bias != 0 && i < net->nlayers; i++)
        for (int c = 0; eeb_layer_learnable(&net->layers[i]) && c < net->layers[i].out.c; c++)
            net->layers[i].b[c] = bias;
    eeb_net_to_fixed(net);
    struct eeb_fx_image img;
    cr_assert_eq(eeb_fx_compile(net, batch, frozen, &img, err, sizeof err), 0, "%s: %s", what, err);
    eeb_fx_load_weights(&img, net);
    int n = batch > 1 ? batch - 1 : 1;
    size_t px = (size_t)n * net->input.h * net->input.w * net->input.c;
    uint8_t *pixels = malloc(px);
    int32_t *labels = malloc((size_t)n * img.label_ints * sizeof *labels);
    for (size_t i = 0; i < px; i++)
        pixels[i] = (uint8_t)rnd(256);
    fill_labels(net, &img, n, labels);
    eeb_fx_set_batch(&img, n, pixels, labels);
    eeb_fx_set_hyper(&img, 0.05, 0.9, 1e-3, state, 0);

    enum {
        MAX_RUNS = 2 + 2 * (EEB_EMU_ISA_AMX + 1)
    }; /* the kernel, every ISA on 1 and 2 threads, oneDNN */
    uint8_t *mem[MAX_RUNS];
    struct eeb_emu *emu[MAX_RUNS] = {NULL};
    char name[MAX_RUNS][64] = {"kernel"};
    int runs = 1;
    for (int isa = EEB_EMU_ISA_SCALAR; isa <= (int)eeb_emu_gemm_best_isa(); isa++)
        for (int threads = 1; threads <= 2; threads++, runs++) {
            emu[runs] = eeb_emu_new(threads, (enum eeb_emu_isa)isa);
            cr_assert(emu[runs]);
            eeb_emu_set_onednn(emu[runs], EEB_EMU_ONEDNN_OFF);
            snprintf(name[runs], sizeof name[runs], "emu %s %d thread(s)",
                     eeb_emu_isa_name((enum eeb_emu_isa)isa), threads);
        }
    const int with_onednn = emu_onednn_exact() ? runs++ : 0;
    if (with_onednn) {
        emu[with_onednn] = eeb_emu_new(2, eeb_emu_gemm_best_isa());
        cr_assert(emu[with_onednn]);
        eeb_emu_set_onednn(emu[with_onednn], onednn);
        snprintf(name[with_onednn], sizeof name[with_onednn], "emu %s 2 threads, oneDNN %s",
                 eeb_emu_isa_name(eeb_emu_gemm_best_isa()),
                 onednn == EEB_EMU_ONEDNN_ON ? "on" : "by timing");
    } else
        cr_log_info("%s: oneDNN's int8 sums are not exact on this CPU: not compared", what);
    for (int r = 0; r < runs; r++) {
        mem[r] = aligned_alloc(FX_ALIGN, img.bytes);
        memcpy(mem[r], img.mem, img.bytes);
        run(mem[r], emu[r], FX_PROG_INIT);
        for (uint32_t step = 0; step < (uint32_t)steps; step++) {
            ((struct fx_header *)mem[r])->step = step;
            run(mem[r], emu[r], FX_PROG_TRAIN);
        }
    }
    for (int r = 1; r < runs; r++) {
        size_t off = 0;
        while (off < img.bytes && mem[0][off] == mem[r][off])
            off++;
        cr_expect_eq(off, img.bytes, "%s: %s differs from the kernel at byte %zu (tensor %d)", what,
                     name[r], off, tensor_at_offset(mem[0], off));
    }
    if (with_onednn) { /* it ran: where it always does, or where it was faster */
        int seen, by_onednn;
        eeb_emu_onednn_shapes(emu[with_onednn], &seen, &by_onednn);
        cr_expect(bias != 0 || seen > 0, "%s: no convolution went to oneDNN's trials", what);
        if (onednn == EEB_EMU_ONEDNN_ON)
            cr_expect_eq(by_onednn, seen, "%s: oneDNN ran %d of %d shapes", what, by_onednn, seen);
    }
    /* the case is only a test if training changed the weights */
    const struct eeb_fx_params *p = NULL;
    for (int i = net->nlayers - 1; i >= 0 && !p; i--)
        if (img.params[i].dw)
            p = &img.params[i];
    cr_assert(p, "%s: nothing is trained", what);
    const struct fx_tensor *w = fx_tensor_at(mem[0], p->w24);
    cr_expect_neq(memcmp(mem[0] + w->offset, img.mem + w->offset, (size_t)w->c * 4), 0,
                  "%s: the weights did not move", what);
    if (bias != 0) { /* and the first layer's sums (at the pixels' exponent) saturated */
        const struct eeb_layer *l = &net->layers[0];
        cr_expect_geq(fx_tensor_at(mem[0], img.act[0])->saturations,
                      (uint64_t)n * l->out.h * l->out.w * l->out.c,
                      "%s: the first layer's sums did not saturate", what);
    }
    for (int r = 0; r < runs; r++) {
        free(mem[r]);
        eeb_emu_free(emu[r]);
    }
    free(pixels), free(labels);
    eeb_fx_image_free(&img);
    eeb_net_free(net);
}

static void check_exact(struct eeb_net *net, int batch, int frozen, const char *what)
{
    check_exact_steps(net, batch, frozen, what, 0, 2, EEB_EMU_ONEDNN_ON);
}

static struct eeb_net *net_of(int h, int w, int c)
{
    struct eeb_shape s = {h, w, c};
    struct eeb_net *net = eeb_net_new(s);
    cr_assert(net);
    return net;
}

/* A conv (out channels, k x k, stride s, padding p), then a ReLU. */
static int conv_relu(struct eeb_net *net, int in, int out, int k, int s, int p)
{
    return eeb_net_relu(net, eeb_net_conv(net, in, out, k, s, p));
}

/* input -> conv 3x3 -> relu: the op under test then has an error to pass
 * back, so its backward-data command runs too. */
static int stem(struct eeb_net *net, int channels)
{
    return conv_relu(net, EEB_NET_INPUT, channels, 3, 1, 1);
}

static void head(struct eeb_net *net, int l)
{
    eeb_net_softmax_ce(net, eeb_net_fc(net, l, 2 + (int)rnd(6)));
}

Test(ops, conv_every_kernel_stride_and_padding, .timeout = 120)
{
    state = 0x1234567;
    const int ks[] = {1, 3, 5, 7};
    for (int ki = 0; ki < 4; ki++)
        for (int s = 1; s <= 2; s++)
            for (int padded = 0; padded <= 1; padded++) {
                int k = ks[ki];
                struct eeb_net *net = net_of(7 + (int)rnd(6), 7 + (int)rnd(6), 1 + (int)rnd(5));
                int l = stem(net, 1 + (int)rnd(6));
                l = eeb_net_conv(net, l, 1 + (int)rnd(20), k, s, padded ? k / 2 : 0);
                head(net, eeb_net_relu(net, l));
                char what[64];
                snprintf(what, sizeof what, "conv %dx%d stride %d pad %d", k, k, s,
                         padded ? k / 2 : 0);
                check_exact(net, 2 + (int)rnd(5), 0, what);
            }
}

/* oneDNN by timing: each convolution shape runs eeb's own and oneDNN's by
 * turns until both have had their trials, then the faster; the steps
 * here take every shape past its trials, and every one gives the
 * kernel's bits. */
Test(ops, onednn_chosen_by_timing, .timeout = 120)
{
    state = 79;
    struct eeb_net *net = net_of(12, 12, 3);
    int l = conv_relu(net, stem(net, 16), 64, 3, 2, 1);
    l = conv_relu(net, l, 64, 3, 1, 1);
    head(net, conv_relu(net, l, 32, 1, 1, 0));
    check_exact_steps(net, 3, 0, "oneDNN by timing", 0, 2 * EEB_EMU_ONEDNN_TRIALS + 2,
                      EEB_EMU_ONEDNN_AUTO);
}

/* oneDNN may round sums from 2^24 on (onednn.c): a call whose sums reach
 * it is refused; one whose sums stay just below comes back exact, the bias
 * added and the largest |sum| found.  A 1x1 of 1024 input channels to oc. */
static void refused_past_2_24(int oc)
{
    enum { IC = 1024, OC_MAX = 16 };
    const struct fx_geom g = {1, 1, 1, IC, 1, 1, oc, 1, 1, 1, 0};
    static int8_t x[IC], w[IC * OC_MAX];
    int32_t y[OC_MAX], bias[OC_MAX];
    for (int j = 0; j < oc; j++)
        bias[j] = j - 8;
    struct emu_onednn *d = emu_onednn_new(&g);
    struct dnnl_stream *stream = emu_onednn_stream_new();
    cr_assert(d && stream, "oneDNN took no 1x1 convolution to %d channels", oc);
    void *scratch = malloc(emu_onednn_scratch_bytes(d) + 1);
    uint32_t most = 0;
    memset(x, -128, sizeof x); /* 1024 products of 16384: 2^24 */
    memset(w, -128, sizeof w);
    cr_assert_eq(emu_onednn_weights(d, stream, w), 0);
    cr_expect_eq(emu_onednn_run(d, stream, scratch, x, bias, y, &most), -1,
                 "%d channels: sums of 2^24 were not refused", oc);
    memset(w, 0, (size_t)oc); /* input channel 0's row: 1023 products, 16760832 */
    cr_assert_eq(emu_onednn_weights(d, stream, w), 0);
    cr_assert_eq(emu_onednn_run(d, stream, scratch, x, bias, y, &most), 0);
    for (int j = 0; j < oc; j++)
        cr_expect_eq(y[j], 1023 * 16384 + j - 8, "%d channels, column %d: %d", oc, j, y[j]);
    cr_expect_eq(most, 1023u * 16384 + (unsigned)oc - 9, "%d channels", oc);
    free(scratch);
    emu_onednn_stream_free(stream);
    emu_onednn_free(d);
}

/* 16 output channels take the AVX-512 pass, 5 the scalar one. */
Test(ops, onednn_refuses_sums_past_2_24)
{
    if (!emu_onednn_exact()) {
        cr_log_info("oneDNN's int8 sums are not exact on this CPU: nothing to test");
        return;
    }
    refused_past_2_24(16);
    refused_past_2_24(5);
}

/* Biases so large at the accumulators' exponent that the GEMM cannot add
 * them in int32: the emulator adds them wide, and the sums saturate, the
 * same on every backend. */
Test(ops, bias_wider_than_the_accumulator)
{
    state = 77;
    struct eeb_net *net = net_of(6, 6, 3);
    head(net, conv_relu(net, stem(net, 4), 5, 3, 1, 1));
    check_exact_steps(net, 3, 0, "wide bias", 1e6f, 2, EEB_EMU_ONEDNN_ON);
}

Test(ops, fully_connected_and_flatten)
{
    for (state = 11; state < 14; state++) {
        struct eeb_net *net = net_of(5, 6, 3);
        int l = eeb_net_flatten(net, stem(net, 4));
        l = eeb_net_relu(net, eeb_net_fc(net, l, 20 + (int)rnd(30)));
        head(net, l);
        check_exact(net, 5, 0, "fc");
    }
}

/* Padded max pools on odd and even sides (ResNet's stem is k3 s2 p1),
 * a stride wider than the padding (an unpadded kernel would see the same
 * output size there), and pad 2 of 3. */
Test(ops, pools)
{
    struct {
        enum eeb_layer_kind kind;
        int k, s, p, h, w;
    } cases[] = {{EEB_LAYER_MAXPOOL, 2, 2, 0, 9, 8},  {EEB_LAYER_MAXPOOL, 3, 2, 0, 9, 8},
                 {EEB_LAYER_MAXPOOL, 3, 2, 1, 9, 9},  {EEB_LAYER_MAXPOOL, 3, 2, 1, 8, 8},
                 {EEB_LAYER_MAXPOOL, 3, 2, 1, 7, 10}, {EEB_LAYER_MAXPOOL, 3, 3, 1, 9, 8},
                 {EEB_LAYER_MAXPOOL, 3, 1, 2, 5, 6},  {EEB_LAYER_MAXPOOL, 2, 2, 1, 9, 8},
                 {EEB_LAYER_AVGPOOL, 2, 2, 0, 9, 8},  {EEB_LAYER_AVGPOOL, 3, 1, 0, 9, 8},
                 {EEB_LAYER_GAP, 0, 0, 0, 9, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        state = 100 + i;
        struct eeb_net *net = net_of(cases[i].h, cases[i].w, 2);
        int l = stem(net, 5), k = cases[i].k, s = cases[i].s, p = cases[i].p;
        l = cases[i].kind == EEB_LAYER_MAXPOOL   ? eeb_net_maxpool(net, l, k, s, p)
            : cases[i].kind == EEB_LAYER_AVGPOOL ? eeb_net_avgpool(net, l, k, s, p)
                                                 : eeb_net_gap(net, l);
        cr_assert_geq(l, 0, "%s", net->err);
        if (cases[i].kind != EEB_LAYER_GAP) /* ONNX's floor((in + 2 pad - k) / s) + 1 */
            cr_expect(net->layers[l].out.h == (cases[i].h + 2 * p - k) / s + 1 &&
                          net->layers[l].out.w == (cases[i].w + 2 * p - k) / s + 1,
                      "case %zu: %dx%d", i, net->layers[l].out.h, net->layers[l].out.w);
        head(net, l);
        char what[64];
        snprintf(what, sizeof what, "%s %dx%d stride %d pad %d on %dx%d",
                 eeb_layer_kind_name(cases[i].kind), k, k, s, p, cases[i].h, cases[i].w);
        check_exact(net, 4, 0, what);
    }
}

/* A 4x4 map through max pool 3x3 stride 2 pad 1 (-> 2x2), worked by hand.
 * Every value is negative, so padding read as zero would win the three
 * windows that reach over the edge; a tie in the lower left window must go
 * to the first of the two in scan order; (1,1) is the maximum of two
 * windows and collects both errors. */
static const int8_t hand_x[16] = {-5, -9, -3, -7, /* */
                                  -8, -2, -6, -4, /* */
                                  -1, -9, -9, -9, /* */
                                  -1, -9, -3, -1};
static const int8_t hand_y[4] = {-2, -2, -1, -1};
static const int8_t hand_dy[4] = {10, 20, 30, 40};
static const int8_t hand_dx[16] = {0, 0, 0, 0, 0, 30, 0, 0, 30, 0, 0, 0, 0, 0, 0, 40};

/* The first command of program prog with this opcode. */
static const struct fx_cmd *find_cmd(const uint8_t *mem, enum fx_op op)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    const struct fx_cmd *c = (const struct fx_cmd *)(mem + h->cmds_off);
    for (uint32_t i = 0; i < h->ncmds; i++)
        if (c[i].op == op)
            return &c[i];
    cr_assert_fail("no command %d", (int)op);
    return NULL;
}

Test(ops, padded_max_pool_by_hand)
{
    char err[256];
    /* the kernel's commands, fed by hand: conv 1x1 -> pool -> fc, so that
     * the pool's backward runs (the conv below it is trained) */
    struct eeb_net *net = net_of(4, 4, 1);
    int l = eeb_net_maxpool(net, eeb_net_conv(net, EEB_NET_INPUT, 1, 1, 1, 0), 3, 2, 1);
    cr_assert_geq(l, 0, "%s", net->err);
    cr_assert(net->layers[l].out.h == 2 && net->layers[l].out.w == 2);
    head(net, l);
    eeb_net_init(net, 1);
    eeb_net_to_fixed(net);
    struct eeb_fx_image img;
    cr_assert_eq(eeb_fx_compile(net, 1, 0, &img, err, sizeof err), 0, "%s", err);
    eeb_fx_header(&img)->batch = 1;
    cr_assert_eq(fx_program_start(img.mem, FX_PROG_TRAIN), FX_OK);
    const struct fx_cmd *fwd = find_cmd(img.mem, FX_OP_MAXPOOL_FWD);
    const struct fx_cmd *bwd = find_cmd(img.mem, FX_OP_MAXPOOL_BWD);
    cr_assert(fwd->kh == 3 && fwd->stride == 2 && fwd->pad == 1 && bwd->pad == 1);
    struct fx_tensor *tx = fx_tensor_at(img.mem, fwd->t[0]), *ty = fx_tensor_at(img.mem, fwd->t[1]);
    struct fx_tensor *tdy = fx_tensor_at(img.mem, bwd->t[0]);
    struct fx_tensor *tdx = fx_tensor_at(img.mem, bwd->t[1]);
    cr_assert_eq(bwd->t[2], fwd->t[0]);
    memcpy(img.mem + tx->offset, hand_x, sizeof hand_x);
    tx->exp = -3;
    cr_assert_eq(fx_kernel_exec(img.mem, fwd), FX_OK);
    cr_expect_arr_eq(img.mem + ty->offset, hand_y, sizeof hand_y);
    cr_expect_eq(ty->exp, -3);
    memcpy(img.mem + tdy->offset, hand_dy, sizeof hand_dy);
    tdy->exp = -9;
    cr_assert_eq(fx_kernel_exec(img.mem, bwd), FX_OK);
    cr_expect_arr_eq(img.mem + tdx->offset, hand_dx, sizeof hand_dx);
    cr_expect_eq(tdx->exp, -9, "sums up to 40 need no shift");
    /* a pad as wide as the window is refused, not read out of bounds */
    struct fx_cmd bad = *fwd;
    bad.pad = 3;
    cr_expect_eq(fx_kernel_exec(img.mem, &bad), FX_BAD_OPERAND);
    eeb_fx_image_free(&img);
    eeb_net_free(net);

    /* the whole forward pass from pixels (p - 128 at 2^-7): the pool is the
     * loss's input, the same on the kernel, the emulator and float32 */
    net = net_of(4, 4, 1);
    cr_assert_geq(eeb_net_softmax_ce(net, eeb_net_maxpool(net, EEB_NET_INPUT, 3, 2, 1)), 0, "%s",
                  net->err);
    uint8_t px[16];
    for (int i = 0; i < 16; i++)
        px[i] = (uint8_t)(128 + hand_x[i]);
    eeb_net_to_fixed(net); /* no weights, but the compiler asks the format */
    cr_assert_eq(eeb_fx_compile(net, 1, 0, &img, err, sizeof err), 0, "%s", err);
    eeb_fx_set_batch(&img, 1, px, NULL);
    uint8_t *copy = aligned_alloc(FX_ALIGN, img.bytes);
    memcpy(copy, img.mem, img.bytes);
    fx_kernel(img.mem, FX_PROG_PREDICT);
    cr_assert_eq(eeb_fx_header(&img)->status, FX_OK);
    struct eeb_emu *emu = eeb_emu_new(2, eeb_emu_gemm_best_isa());
    cr_assert_eq(eeb_emu_run(emu, copy, FX_PROG_PREDICT), 0);
    cr_expect_arr_eq(copy, img.mem, img.bytes, "the emulator's image is the kernel's");
    float fx[4], fp[4];
    eeb_fx_read_output(&img, 1, fx);
    struct eeb_ref *r = eeb_ref_new(net, 1, 0, err, sizeof err);
    cr_assert(r, "%s", err);
    eeb_ref_forward(r, px, 1);
    memcpy(fp, eeb_ref_output(r), sizeof fp);
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(fx[i], hand_y[i] / 128.0f, "kernel output %d: %g", i, fx[i]);
        cr_expect_eq(fp[i], hand_y[i] / 128.0f, "float32 output %d: %g", i, fp[i]);
    }
    eeb_ref_free(r);
    eeb_emu_free(emu);
    free(copy);
    eeb_fx_image_free(&img);
    eeb_net_free(net);
}

Test(ops, residual_add_with_a_fork)
{
    for (state = 21; state < 24; state++) {
        struct eeb_net *net = net_of(8, 8, 3);
        int a = stem(net, 6);
        int b = conv_relu(net, a, 6, 3, 1, 1);
        b = eeb_net_conv(net, b, 6, 3, 1, 1);
        int l = eeb_net_relu(net, eeb_net_add(net, b, a)); /* a is read twice */
        head(net, eeb_net_gap(net, l));
        check_exact(net, 3, 0, "residual add");
    }
}

Test(ops, concat)
{
    for (state = 31; state < 34; state++) {
        struct eeb_net *net = net_of(6, 7, 2);
        int a = stem(net, 3);
        int b = eeb_net_conv(net, a, 5, 1, 1, 0);
        int c = eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1);
        int l = eeb_net_concat(net, b, c);
        head(net, conv_relu(net, l, 4, 1, 1, 0));
        check_exact(net, 3, 0, "concat");
    }
}

/* Slices of the input (frames of a clip, as slow fusion takes them) and
 * two overlapping slices of a hidden layer, whose errors are summed. */
Test(ops, slice)
{
    for (state = 35; state < 38; state++) {
        struct eeb_net *net = net_of(6, 7, 6);
        int a = eeb_net_conv(net, eeb_net_slice(net, EEB_NET_INPUT, 0, 4), 5, 3, 1, 1);
        int b = eeb_net_conv(net, eeb_net_slice(net, EEB_NET_INPUT, 2, 4), 5, 3, 1, 1);
        int l = eeb_net_relu(net, eeb_net_concat(net, a, b));
        int c = eeb_net_slice(net, l, 1, 6), d = eeb_net_slice(net, l, 4, 6);
        l = eeb_net_add(net, c, d);
        head(net, conv_relu(net, l, 4, 1, 1, 0));
        check_exact(net, 3, 0, "slice");
    }
}

Test(ops, grid_detector_loss)
{
    for (state = 41; state < 44; state++) {
        struct eeb_net *net = net_of(12, 12, 3);
        int l = conv_relu(net, EEB_NET_INPUT, 8, 3, 2, 1);
        l = eeb_net_conv(net, l, 5 + 2 + (int)rnd(4), 1, 1, 0);
        eeb_net_grid_loss(net, l);
        check_exact(net, 4, 0, "grid loss");
    }
}

Test(ops, frozen_layers)
{
    state = 51;
    struct eeb_net *net = net_of(8, 8, 3);
    int l = stem(net, 4);
    l = conv_relu(net, l, 6, 3, 2, 1);
    head(net, eeb_net_gap(net, l));
    check_exact(net, 4, 2, "two of three layers frozen");
}

/* Layers the emulator splits as it does a large network's: a weight
 * gradient over more rows than one chunk (3 items x 40 x 40 > 4096), a max
 * pool in blocks of channels, weights packed in blocks of columns (576 x
 * 160 forward, 1440 x 64 backward), and parts of fewer rows than 256 (300
 * rows in all). */
Test(ops, layers_split_in_chunks_and_blocks, .timeout = 120)
{
    state = 61;
    struct eeb_net *net = net_of(40, 40, 3);
    int l = stem(net, 8);
    l = conv_relu(net, l, 64, 3, 2, 1);
    l = eeb_net_maxpool(net, l, 3, 2, 1);
    l = conv_relu(net, l, 160, 3, 1, 1);
    head(net, eeb_net_gap(net, l));
    check_exact(net, 4, 0, "layers split in chunks and blocks");
}

/* The farthest byte a convolution's tile rows read from its grids (the
 * last part's last 32 rows, at the farthest offset, 64 bytes each) lies
 * inside them: AMX's loads are beyond ASan's sight. */
static void expect_tile_reads_inside(const struct emu_implicit *w, int flip)
{
    int64_t aoff[49 * 512 / 64 + 1], most = 0;
    cr_assert_leq(emu_implicit_offsets(w, flip, NULL), sizeof aoff);
    const int steps = (int)(emu_implicit_offsets(w, flip, aoff) / sizeof *aoff);
    for (int i = 0; i < steps; i++)
        most = aoff[i] > most ? aoff[i] : most;
    const int64_t last_row = (w->q + 31) / 32 * 32 - 1, end = most + last_row * w->g.ic + 64;
    cr_expect_leq(end, (int64_t)(w->phases * emu_implicit_pixels_bytes(w)),
                  "%dx%d/%d: reads to byte %lld of %zu", w->g.kh, w->g.kw, w->g.s, (long long)end,
                  w->phases * emu_implicit_pixels_bytes(w));
}

/* The implicit GEMM's grids: as narrow as the padding lets a read past a
 * row's end land on the next row's padding. */
Test(ops, implicit_gemm_grids)
{
    const struct {
        int side, k, s, p;
        int grid, phases; /* expected */
    } cases[] = {
        {56, 3, 1, 1, 57, 1},   /* the right padding is the next row's left: iw + p */
        {56, 3, 2, 1, 29, 4},   /* ow = 28; the last tap reads 28 of phase 0, input pixel 55 */
        {56, 1, 2, 0, 28, 1},   /* one phase, read at offset 0 only */
        {224, 7, 2, 3, 114, 4}, /* ow = 112; phase 0's column 114 (x 225) and 0 are padding */
        {10, 3, 1, 0, 10, 1},   /* no padding: ow + 2, every read a real pixel */
        {7, 5, 1, 2, 9, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int side = cases[i].side, k = cases[i].k, s = cases[i].s, p = cases[i].p;
        const int out = (side + 2 * p - k) / s + 1;
        struct fx_geom g = {2, side, side, 16, out, out, 24, k, k, s, p};
        struct emu_implicit w;
        cr_assert_eq(emu_implicit_plan(&g, &w), 0);
        cr_expect_eq(w.wv, cases[i].grid, "%dx%d/%d pad %d at %d: width %d, not %d", k, k, s, p,
                     side, w.wv, cases[i].grid);
        cr_expect_eq(w.hv, cases[i].grid, "%dx%d/%d pad %d at %d: height %d", k, k, s, p, side,
                     w.hv);
        cr_expect_eq(w.phases, cases[i].phases, "%dx%d/%d: %d phases", k, k, s, w.phases);
        cr_expect_eq(w.icpad, 32);
        cr_expect_eq(w.ocpad, 32);
        cr_expect_eq(w.plane % 128, 64, "planes an odd number of cache lines apart");
        cr_expect_geq((int64_t)w.plane, w.qpad + (k - 1) / s * w.wv + (k - 1) / s);
        g.ic = 64; /* the forward grids: no tile row read past them, either way round */
        cr_assert_eq(emu_implicit_plan(&g, &w), 0);
        for (int flip = 0; flip <= 1; flip++)
            expect_tile_reads_inside(&w, flip);
    }
    struct fx_geom g = {2, 24, 24, 16, 8, 8, 16, 3, 3, 3, 0};
    struct emu_implicit w;
    cr_expect_eq(emu_implicit_plan(&g, &w), -1, "stride 3: no network takes it, untested");

    /* ResNet's stem in space to depth: 2 x 2 pixels of 3 channels, a 4 x 4
     * window of 12 channels over the padded 230 x 230 input's 115 x 115 */
    struct fx_geom stem = {2, 224, 224, 3, 112, 112, 64, 7, 7, 2, 3};
    cr_assert_eq(emu_implicit_s2d_plan(&stem, &w), 0);
    cr_expect_eq(w.g.ic, 12);
    cr_expect_eq(w.g.kh, 4);
    cr_expect_eq(w.g.kw, 4);
    cr_expect_eq(w.wv, 115);
    cr_expect_eq(w.hv, 115);
    /* tap (3, 3), channel (py 0, px 0, ci 2) is W's tap (6, 6); px 1 of it
     * would be column 7, past the window */
    cr_expect_eq(emu_wgrad_row(&w, 15, 2), (6 * 7 + 6) * 3 + 2);
    cr_expect_eq(emu_wgrad_row(&w, 15, 3), -1);
    cr_expect_eq(emu_wgrad_row(&w, 0, 12), -1, "past the 12 channels");
    expect_tile_reads_inside(&w, 0);
    stem.ic = 6; /* a window row of 4 x 24 bytes: more than one step of k */
    cr_expect_eq(emu_implicit_s2d_plan(&stem, &w), -1);
}

/* Where there is no AMX, that the implicit GEMMs are not run here. */
static void say_without_amx(void)
{
    if (eeb_emu_gemm_best_isa() != EEB_EMU_ISA_AMX)
        cr_log_info("no AMX here: the implicit GEMMs are not run, only the other paths compared");
}

/* On AMX, convolutions are implicit GEMMs over the input's phases
 * (fpga/emu/implicit.c).  With input channels in 64s, forward at strides
 * 1 and 2 and backward data at stride 1 (dy padded by 1 and 2: networks
 * pad by at most k / 2), 3x3 and 5x5, odd sides; few channels at stride
 * 2 in space to depth, windows 3 to 7. */
Test(ops, convolutions_as_implicit_gemms, .timeout = 120)
{
    say_without_amx();
    state = 98;
    struct eeb_net *net = net_of(9, 11, 64);
    int l = conv_relu(net, EEB_NET_INPUT, 64, 3, 1, 1);
    l = conv_relu(net, l, 64, 3, 1, 1);  /* dy padded by 1 */
    l = conv_relu(net, l, 128, 3, 1, 0); /* by 2 */
    l = conv_relu(net, l, 64, 5, 1, 2);
    l = conv_relu(net, l, 64, 3, 2, 1);
    head(net, eeb_net_gap(net, l));
    check_exact(net, 4, 0, "implicit GEMMs forward and backward");

    const struct {
        int h, w, c, k; /* a stem: c channels in, k x k at stride 2, padded by k / 2 */
    } stems[] = {{23, 21, 3, 7}, {16, 15, 4, 5}, {9, 12, 1, 3}};
    for (size_t i = 0; i < sizeof stems / sizeof *stems; i++) {
        net = net_of(stems[i].h, stems[i].w, stems[i].c);
        l = eeb_net_conv(net, EEB_NET_INPUT, 16, stems[i].k, 2, stems[i].k / 2);
        head(net, eeb_net_gap(net, eeb_net_relu(net, l)));
        char what[64];
        snprintf(what, sizeof what, "space to depth, %dx%d/2 of %d channels", stems[i].k,
                 stems[i].k, stems[i].c);
        check_exact(net, 3, 0, what);
    }
}

/* Weight gradients whose input channels come in 16s, every window and
 * stride the networks take, channels padded to 32 (48 in, 40 out), odd
 * sides, no padding, a 1x1 at strides 1 and 2 and an FC; then the
 * reduction in chunks of int32 sums (2 x 64 x 64 output pixels) and past
 * FX_MAX_REDUCTION products, in int64 and shifted (3 x 150 x 150).  (The
 * stems' weight gradients in space to depth are in the test above.) */
Test(ops, weight_gradient_as_an_implicit_gemm, .timeout = 300)
{
    say_without_amx();
    state = 97;
    struct eeb_net *net = net_of(13, 11, 16);
    int l = conv_relu(net, EEB_NET_INPUT, 32, 3, 2, 1);
    l = conv_relu(net, l, 48, 5, 1, 2);
    l = conv_relu(net, l, 16, 7, 2, 3);
    l = conv_relu(net, l, 48, 1, 2, 0);
    l = conv_relu(net, l, 40, 1, 1, 0);
    head(net, eeb_net_gap(net, l));
    check_exact(net, 4, 0, "implicit GEMM: windows, strides, padded channels");

    net = net_of(12, 9, 32);
    l = conv_relu(net, EEB_NET_INPUT, 16, 3, 1, 0);
    l = conv_relu(net, l, 32, 3, 2, 0);
    head(net, eeb_net_relu(net, eeb_net_fc(net, l, 32)));
    check_exact(net, 3, 0, "implicit GEMM: no padding, an FC");

    net = net_of(64, 64, 16);
    head(net, eeb_net_gap(net, conv_relu(net, EEB_NET_INPUT, 16, 3, 1, 1)));
    check_exact(net, 3, 0, "implicit GEMM: chunks of int32 sums");

    net = net_of(150, 150, 16);
    head(net, eeb_net_gap(net, conv_relu(net, EEB_NET_INPUT, 16, 3, 1, 1)));
    check_exact(net, 4, 0, "implicit GEMM: past FX_MAX_REDUCTION products");
}
