/*
 * fx_kernel_conv.c - the kernel's convolution and fully connected
 * commands (forward, backward data, backward weight) on an FX_BT x FX_CT
 * PE array, under the two-pass rule (fx_kernel.c).
 */
#include "fx_kernel.h"
#include "fx_arith.h"
#include "fx_kernel_int.h"

#include <stddef.h>

/* ---- convolution and fully connected ---- */

/* Geometry from the input and output activations' descriptors; an FC layer
 * is a 1x1 convolution of the flattened input.  0 if inconsistent. */
static int geometry(const uint8_t *mem, const struct fx_cmd *c, const struct fx_tensor *in,
                    const struct fx_tensor *out, int flat, struct fx_geom *g)
{
    g->n = (int)((const struct fx_header *)mem)->batch;
    if (flat) {
        g->ih = g->iw = g->oh = g->ow = g->kh = g->kw = g->s = 1;
        g->p = 0;
        g->ic = (int)fx_kernel_item_count(in);
        g->oc = (int)fx_kernel_item_count(out);
        return in->batched && out->batched;
    }
    g->ih = in->h, g->iw = in->w, g->ic = (int)in->c;
    g->oh = out->h, g->ow = out->w, g->oc = (int)out->c;
    g->kh = c->kh, g->kw = c->kw, g->s = c->stride, g->p = c->pad;
    return g->s > 0 && in->batched && out->batched && g->ih + 2 * g->p >= g->kh &&
           g->iw + 2 * g->p >= g->kw && g->oh == (g->ih + 2 * g->p - g->kh) / g->s + 1 &&
           g->ow == (g->iw + 2 * g->p - g->kw) / g->s + 1;
}

static uint64_t weight_count(const struct fx_geom *g)
{
    return (uint64_t)g->kh * g->kw * g->ic * g->oc;
}

enum fx_status fx_conv_operands(uint8_t *mem, const struct fx_cmd *c, struct fx_conv *cv)
{
    int op = c->op;
    cv->flat = op == FX_OP_FC_FWD || op == FX_OP_FC_BWD_DATA || op == FX_OP_FC_BWD_WEIGHT;
    int fwd = op == FX_OP_CONV_FWD || op == FX_OP_FC_FWD;
    int data = op == FX_OP_CONV_BWD_DATA || op == FX_OP_FC_BWD_DATA;
    struct fx_tensor *t0 = fx_tensor_at(mem, c->t[0]), *t1 = fx_tensor_at(mem, c->t[1]);
    cv->in = fwd || data ? (fwd ? t0 : t1) : t1; /* x, dx, x */
    cv->out = fwd ? t1 : t0;                     /* y, dy, dy */
    cv->w = fx_tensor_at(mem, c->t[2]);
    cv->b = fx_tensor_at(mem, c->t[3]);
    cv->acc = fx_tensor_at(mem, c->t[4]);
    struct fx_geom *g = &cv->g;
    if (!geometry(mem, c, cv->in, cv->out, cv->flat, g) ||
        fx_kernel_item_count(cv->w) != weight_count(g) || cv->in->type != FX_I8 ||
        cv->out->type != FX_I8 || cv->w->type != FX_I8 || cv->acc->type != FX_I32)
        return FX_BAD_OPERAND;
    uint64_t acc_need = fwd    ? fx_kernel_tensor_count(mem, cv->out)
                        : data ? fx_kernel_tensor_count(mem, cv->in)
                               : weight_count(g) + (uint64_t)g->oc;
    if (acc_need > fx_kernel_item_count(cv->acc))
        return FX_BAD_OPERAND;
    if (!data &&
        (fx_kernel_item_count(cv->b) != (uint64_t)g->oc || cv->b->type != (fwd ? FX_I32 : FX_I8)))
        return FX_BAD_OPERAND;
    return FX_OK;
}

static int8_t x_at(const int8_t *x, const struct fx_geom *g, int n, int iy, int ix, int ci)
{
    if (n >= g->n || iy < 0 || ix < 0 || iy >= g->ih || ix >= g->iw)
        return 0;
    return x[(((size_t)n * g->ih + iy) * g->iw + ix) * g->ic + ci];
}

/* y = requant(conv(x, w8) + bias) */
enum fx_status fx_kernel_conv_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    struct fx_tensor *tx = cv.in, *ty = cv.out, *tw = cv.w, *tb = cv.b, *ta = cv.acc;
    const struct fx_geom g = cv.g;
    const int8_t *x = fx_kernel_i8(mem, tx), *w = fx_kernel_i8(mem, tw);
    const int32_t *bias = fx_kernel_i32(mem, tb);
    int32_t *acc = fx_kernel_i32(mem, ta);
    int e_acc = tx->exp + tw->exp;
    uint64_t maxabs = 0;

    for (int n0 = 0; n0 < g.n; n0 += FX_BT)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                for (int c0 = 0; c0 < g.oc; c0 += FX_CT) {
                    int32_t pe[FX_BT][FX_CT];
#pragma HLS ARRAY_PARTITION variable = pe complete dim = 0
                    for (int b = 0; b < FX_BT; b++)
                        for (int j = 0; j < FX_CT; j++)
                            pe[b][j] = 0;
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++)
                            for (int ci = 0; ci < g.ic; ci++) {
#pragma HLS PIPELINE II = 1
                                int iy = oy * g.s - g.p + ky, ix = ox * g.s - g.p + kx;
                                const int8_t *wrow =
                                    w + ((size_t)(ky * g.kw + kx) * g.ic + ci) * g.oc;
                                for (int b = 0; b < FX_BT; b++) {
                                    int32_t xv = x_at(x, &g, n0 + b, iy, ix, ci);
                                    for (int j = 0; j < FX_CT; j++)
                                        if (c0 + j < g.oc)
                                            pe[b][j] += xv * wrow[c0 + j];
                                }
                            }
                    for (int b = 0; b < FX_BT && n0 + b < g.n; b++)
                        for (int j = 0; j < FX_CT && c0 + j < g.oc; j++) {
                            size_t o = (((size_t)(n0 + b) * g.oh + oy) * g.ow + ox) * g.oc + c0 + j;
                            int64_t bv = fx_align(bias[c0 + j], tb->exp, e_acc);
                            acc[o] = fx_kernel_store32((int64_t)pe[b][j] + bv, &maxabs, ty);
                        }
                }
    fx_kernel_requantize(acc, fx_kernel_tensor_count(mem, ty), maxabs, e_acc, fx_round_half_up(),
                         fx_kernel_i8(mem, ty), ty);
    return FX_OK;
}

/* dx = requant(dy convolved back through w8): every input position gathers
 * the outputs whose window covered it. */
enum fx_status fx_kernel_conv_bwd_data(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    struct fx_tensor *tdy = cv.out, *tdx = cv.in, *tw = cv.w, *ta = cv.acc;
    const struct fx_geom g = cv.g;
    const int8_t *dy = fx_kernel_i8(mem, tdy), *w = fx_kernel_i8(mem, tw);
    int32_t *acc = fx_kernel_i32(mem, ta);
    int e_acc = tdy->exp + tw->exp;
    uint64_t maxabs = 0;

    for (int n0 = 0; n0 < g.n; n0 += FX_BT)
        for (int iy = 0; iy < g.ih; iy++)
            for (int ix = 0; ix < g.iw; ix++)
                for (int c0 = 0; c0 < g.ic; c0 += FX_CT) {
                    int32_t pe[FX_BT][FX_CT];
#pragma HLS ARRAY_PARTITION variable = pe complete dim = 0
                    for (int b = 0; b < FX_BT; b++)
                        for (int j = 0; j < FX_CT; j++)
                            pe[b][j] = 0;
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++) {
                            int ty = iy + g.p - ky, tx = ix + g.p - kx;
                            if (ty < 0 || tx < 0 || ty % g.s || tx % g.s)
                                continue;
                            int oy = ty / g.s, ox = tx / g.s;
                            if (oy >= g.oh || ox >= g.ow)
                                continue;
                            for (int co = 0; co < g.oc; co++) {
#pragma HLS PIPELINE II = 1
                                for (int b = 0; b < FX_BT && n0 + b < g.n; b++) {
                                    int32_t d =
                                        dy[(((size_t)(n0 + b) * g.oh + oy) * g.ow + ox) * g.oc +
                                           co];
                                    for (int j = 0; j < FX_CT && c0 + j < g.ic; j++)
                                        pe[b][j] +=
                                            d *
                                            w[((size_t)(ky * g.kw + kx) * g.ic + c0 + j) * g.oc +
                                              co];
                                }
                            }
                        }
                    for (int b = 0; b < FX_BT && n0 + b < g.n; b++)
                        for (int j = 0; j < FX_CT && c0 + j < g.ic; j++) {
                            size_t o = (((size_t)(n0 + b) * g.ih + iy) * g.iw + ix) * g.ic + c0 + j;
                            acc[o] = fx_kernel_store32(pe[b][j], &maxabs, tdx);
                        }
                }
    fx_kernel_requantize(acc, fx_kernel_tensor_count(mem, tdx), maxabs, e_acc, fx_round_half_up(),
                         fx_kernel_i8(mem, tdx), tdx);
    return FX_OK;
}

/* dw = requant_stochastic(sum over batch and positions of x * dy), and the
 * bias gradient db = requant_stochastic(sum of dy). */
enum fx_status fx_kernel_conv_bwd_weight(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    struct fx_tensor *tdy = cv.out, *tx = cv.in, *tdw = cv.w, *tdb = cv.b, *ta = cv.acc;
    const struct fx_geom g = cv.g;
    const int8_t *x = fx_kernel_i8(mem, tx), *dy = fx_kernel_i8(mem, tdy);
    int32_t *acc = fx_kernel_i32(mem, ta);
    uint64_t maxabs = 0;
    int shift = fx_reduction_shift((uint64_t)g.n * g.oh * g.ow, FX_MAX_REDUCTION);

    for (int ky = 0; ky < g.kh; ky++)
        for (int kx = 0; kx < g.kw; kx++)
            for (int ci = 0; ci < g.ic; ci++)
                for (int c0 = 0; c0 < g.oc; c0 += FX_CT) {
                    int64_t pe[FX_CT]; /* 48-bit accumulators */
#pragma HLS ARRAY_PARTITION variable = pe complete dim = 0
                    for (int j = 0; j < FX_CT; j++)
                        pe[j] = 0;
                    for (int n0 = 0; n0 < g.n; n0 += FX_BT)
                        for (int oy = 0; oy < g.oh; oy++)
                            for (int ox = 0; ox < g.ow; ox++) {
#pragma HLS PIPELINE II = 1
                                int iy = oy * g.s - g.p + ky, ix = ox * g.s - g.p + kx;
                                for (int b = 0; b < FX_BT && n0 + b < g.n; b++) {
                                    int32_t xv = x_at(x, &g, n0 + b, iy, ix, ci);
                                    const int8_t *drow =
                                        dy + (((size_t)(n0 + b) * g.oh + oy) * g.ow + ox) * g.oc;
                                    for (int j = 0; j < FX_CT && c0 + j < g.oc; j++)
                                        pe[j] += xv * drow[c0 + j];
                                }
                            }
                    size_t row = ((size_t)(ky * g.kw + kx) * g.ic + ci) * g.oc;
                    for (int j = 0; j < FX_CT && c0 + j < g.oc; j++)
                        acc[row + c0 + j] =
                            fx_kernel_store32(fx_shift_round(pe[j], shift), &maxabs, tdw);
                }
    uint64_t nw = weight_count(&g);
    fx_kernel_requantize(acc, nw, maxabs, tx->exp + tdy->exp + shift,
                         fx_round_stochastic(mem, c->t[2]), fx_kernel_i8(mem, tdw), tdw);

    int32_t *bacc = acc + nw;
    maxabs = 0;
    for (int co = 0; co < g.oc; co++) {
        int64_t sum = 0;
        for (int n = 0; n < g.n; n++)
            for (int o = 0; o < g.oh * g.ow; o++)
                sum += dy[((size_t)n * g.oh * g.ow + o) * g.oc + co];
        bacc[co] = fx_kernel_store32(sum, &maxabs, tdb);
    }
    fx_kernel_requantize(bacc, (uint64_t)g.oc, maxabs, tdy->exp, fx_round_stochastic(mem, c->t[3]),
                         fx_kernel_i8(mem, tdb), tdb);
    return FX_OK;
}
