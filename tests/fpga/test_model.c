/*
 * test_model.c - .eebm files: what is written is what is read, in both
 * formats; damage of every kind is reported with its offset and field,
 * and never crashes the reader.
 */
#include "common/eeb_bytes.h"
#include "fpga/net/eeb_model.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every layer kind the file can hold, with a residual fork, a concat, a
 * slice and a padded max pool (layer 4, ResNet's 3x3 stride 2 pad 1). */
static struct eeb_net *every_kind(void)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){12, 10, 3});
    int a = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 6, 3, 1, 1));
    int b = eeb_net_conv(net, a, 6, 5, 1, 2);
    int l = eeb_net_add(net, a, b);
    int m = eeb_net_maxpool(net, l, 3, 2, 1); /* apart: argument order is unspecified */
    l = eeb_net_concat(net, m, eeb_net_avgpool(net, b, 2, 2, 0));
    l = eeb_net_conv(net, eeb_net_slice(net, l, 2, 7), 8, 1, 2, 0);
    int g = eeb_net_gap(net, l);
    l = eeb_net_fc(net, eeb_net_flatten(net, g), 5);
    cr_assert(eeb_net_softmax_ce(net, l) >= 0, "%s", net->err);
    eeb_net_init(net, 9);
    return net;
}

static void assert_same(const struct eeb_net *a, const struct eeb_net *b)
{
    cr_assert_eq(a->nlayers, b->nlayers);
    cr_assert_eq(a->format, b->format);
    cr_assert(a->input.h == b->input.h && a->input.w == b->input.w && a->input.c == b->input.c);
    for (int i = 0; i < a->nlayers; i++) {
        const struct eeb_layer *x = &a->layers[i], *y = &b->layers[i];
        cr_assert(x->kind == y->kind && x->in[0] == y->in[0] && x->in[1] == y->in[1] &&
                      x->k == y->k && x->stride == y->stride && x->pad == y->pad &&
                      x->out.h == y->out.h && x->out.w == y->out.w && x->out.c == y->out.c &&
                      x->rows == y->rows && x->first == y->first,
                  "layer %d", i);
        if (!eeb_layer_learnable(x))
            continue;
        size_t n = (size_t)x->rows * x->out.c;
        if (a->format == EEB_FORMAT_F32) {
            cr_assert_arr_eq(x->w, y->w, n * sizeof *x->w, "layer %d weights", i);
            cr_assert_arr_eq(x->b, y->b, x->out.c * sizeof *x->b, "layer %d biases", i);
        } else {
            cr_assert_arr_eq(x->wq, y->wq, n * sizeof *x->wq, "layer %d weights", i);
            cr_assert_arr_eq(x->bq, y->bq, x->out.c * sizeof *x->bq, "layer %d biases", i);
            cr_assert(x->we == y->we && x->be == y->be, "layer %d exponents", i);
        }
    }
}

Test(model, round_trip_both_formats)
{
    const char *dir = test_tmpdir();
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/m.eebm", dir);
    struct eeb_net *net = every_kind();
    for (int fixed = 0; fixed < 2; fixed++) {
        if (fixed) {
            for (int j = 0; j < 6; j++)
                net->layers[0].b[j] = 0.25f * (float)(j - 3); /* biases not all zero */
            eeb_net_to_fixed(net);
        }
        int task = fixed ? EEB_TASK_DET : EEB_MODEL_NO_TASK;
        cr_assert_eq(eeb_model_save(path, net, task, err, sizeof err), EEB_OK, "%s", err);
        struct eeb_net *got;
        int got_task;
        cr_assert_eq(eeb_model_load(path, &got, &got_task, err, sizeof err), EEB_OK, "%s", err);
        cr_assert_eq(got_task, task);
        assert_same(net, got);
        eeb_net_free(got);
    }
    eeb_net_free(net);
}

/* The encoded every_kind() net, fixed point, and its length. */
static uint8_t *encoded(size_t *len)
{
    struct eeb_net *net = every_kind();
    eeb_net_to_fixed(net);
    uint8_t *buf;
    char err[256];
    cr_assert_eq(eeb_model_encode(net, EEB_TASK_CLS, &buf, len, err, sizeof err), EEB_OK);
    eeb_net_free(net);
    return buf;
}

/* Recomputes the checksum, as a crafted (not merely damaged) file would. */
static void reseal(uint8_t *buf, size_t len)
{
    eeb_put32(buf + 32, eeb_crc32_except(buf, len, 32));
}

static void expect_error(const uint8_t *buf, size_t len, const char *want)
{
    struct eeb_net *net = NULL;
    int task;
    char err[256] = "";
    int rc = eeb_model_decode(buf, len, "m.eebm", &net, &task, err, sizeof err);
    cr_assert_neq(rc, EEB_OK, "accepted; wanted '%s'", want);
    cr_assert_null(net);
    cr_assert(strstr(err, want), "error '%s' lacks '%s'", err, want);
}

Test(model, damage_is_named_by_offset_and_field)
{
    size_t len;
    uint8_t *buf = encoded(&len), *b = malloc(len);
    size_t layer0 = EEB_MODEL_HEADER, weights = eeb_get64(buf + layer0 + 24);

    expect_error((const uint8_t *)"PK\3\4 zip", 9, "m.eebm: offset 0: magic: not an eeb model");
    expect_error(buf, 40, "offset 40: truncated: the header needs 64 bytes");
    expect_error(buf, len - 1, "truncated: the header says");
    expect_error(buf, weights + 7, "truncated");

    memcpy(b, buf, len), b[len / 2] ^= 0x10;
    expect_error(b, len, "offset 32: checksum");

    memcpy(b, buf, len), eeb_put16(b + 4, 2);
    expect_error(b, len, "offset 4: version 2 (this eeb reads version 1)");

    /* crafted files: correct checksums, wrong contents */
    memcpy(b, buf, len), b[layer0] = 77, reseal(b, len);
    expect_error(b, len, "offset 64: layer 0 kind: 77 unknown");

    memcpy(b, buf, len), eeb_put32(b + layer0 + 12, 7), reseal(b, len); /* out.c 6 -> 7 */
    expect_error(b, len, "offset 104: layer 1 (relu) output: 12x10x6 stored, 12x10x7 computed");

    memcpy(b, buf, len), eeb_put16(b + layer0 + 8, 11), reseal(b, len);
    expect_error(b, len, "offset 72: layer 0 (conv) output: 11x10x6 stored, 12x10x6 computed");

    memcpy(b, buf, len), eeb_put32(b + weights + 8, 1u << 24), reseal(b, len);
    expect_error(b, len, "layer 0 (conv) weight 2: 16777216 outside the 24-bit range");

    memcpy(b, buf, len), eeb_put64(b + layer0 + 24, weights + 4), reseal(b, len);
    expect_error(b, len, "offset 88: layer 0 (conv) weights at offset");

    memcpy(b, buf, len), eeb_put16(b + layer0 + 4 + 32, (uint16_t)5), reseal(b, len);
    expect_error(b, len, "offset 96: layer 1: input 5 is not an earlier layer");

    /* pads: the max pool's (layer 4) must stay below its window, an average
     * pool (layer 5) and a relu (layer 1) have none */
    size_t pad4 = layer0 + 4 * EEB_MODEL_LAYER + 3, pad5 = pad4 + EEB_MODEL_LAYER;
    cr_assert_eq(buf[pad4], 1, "the padded pool's record holds its pad");
    char want[64];
    memcpy(b, buf, len), b[pad4] = 3, reseal(b, len);
    snprintf(want, sizeof want, "offset %zu: layer 4 (maxpool) pad: 3 with a 3x3 window", pad4);
    expect_error(b, len, want);
    memcpy(b, buf, len), b[pad4] = 2, reseal(b, len); /* a legal pad, another shape */
    expect_error(b, len, "layer 4 (maxpool) output: 6x5x6 stored, 7x6x6 computed");
    memcpy(b, buf, len), b[pad5] = 1, reseal(b, len);
    expect_error(b, len, "layer 5: avgpool pad 1: an average pool takes no padding");
    memcpy(b, buf, len), b[layer0 + EEB_MODEL_LAYER + 3] = 1, reseal(b, len);
    expect_error(b, len, "offset 99: layer 1 (relu) pad: 1 (only convs and pools have one)");

    /* a conv claiming 65535 channels: refused before anything is allocated */
    memcpy(b, buf, len), eeb_put32(b + layer0 + 12, 65535), reseal(b, len);
    expect_error(b, len, "layer 0 (conv) out.c: 65535 channels need more weights");

    free(b);
    free(buf);
}

Test(model, float_files_refuse_nan_both_ways)
{
    struct eeb_net *net = every_kind();
    net->layers[0].w[3] = NAN;
    uint8_t *buf;
    size_t len;
    char err[256];
    cr_assert_eq(eeb_model_encode(net, 0, &buf, &len, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "layer 0 weight 3 is not a finite number"), "%s", err);
    char path[128];
    snprintf(path, sizeof path, "%s/nan.eebm", test_tmpdir());
    cr_assert_eq(eeb_model_save(path, net, 0, err, sizeof err), EEB_EINVAL);
    cr_assert(strncmp(err, path, strlen(path)) == 0, "the file is named: %s", err);
    cr_assert_neq(access(path, F_OK), 0, "nothing is written");
    net->layers[0].w[3] = 1;
    cr_assert_eq(eeb_model_encode(net, 0, &buf, &len, err, sizeof err), EEB_OK);
    size_t at = eeb_get64(buf + EEB_MODEL_HEADER + 24) + 3 * 4;
    eeb_putf32(buf + at, NAN);
    reseal(buf, len);
    expect_error(buf, len, "layer 0 (conv) weight 3: not a finite number");
    free(buf);
    eeb_net_free(net);
}

/* Thousands of crafted mutations (checksum fixed up, so the structural
 * checks are what stands between them and the builders): each must be a
 * clean success or a clean error.  Under `make asan` this is a fuzzer. */
Test(model, crafted_mutations_never_crash)
{
    size_t len;
    uint8_t *buf = encoded(&len), *b = malloc(len);
    size_t table = EEB_MODEL_HEADER + 13 * EEB_MODEL_LAYER;
    uint64_t s = 42;
    int accepted = 0;
    for (int i = 0; i < 4000; i++) {
        memcpy(b, buf, len);
        for (int k = 0; k < 1 + i % 3; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            size_t at = (size_t)(s % table);
            b[at] = (uint8_t)(s >> 40);
        }
        reseal(b, len);
        struct eeb_net *net = NULL;
        int task;
        char err[256];
        if (eeb_model_decode(b, len, "fuzz", &net, &task, err, sizeof err) == EEB_OK) {
            accepted++;
            eeb_net_free(net);
        } else {
            cr_assert_null(net);
            cr_assert(strncmp(err, "fuzz: ", 6) == 0, "%s", err);
        }
    }
    cr_assert_lt(accepted, 4000); /* the mutations did reach the checks */
    free(b);
    free(buf);
}
