/*
 * fx_kernel_ewise.c - the kernel's element-wise and pooling commands:
 * ReLU, residual add, max and average pools, channel concatenation and
 * slices, forward and backward.
 */
#include "fx_kernel.h"
#include "fx_arith.h"
#include "fx_kernel_int.h"

#include <stddef.h>

/* ---- element-wise and pooling ---- */

int fx_kernel_same_shape(const struct fx_tensor *a, const struct fx_tensor *b)
{
    return a->h == b->h && a->w == b->w && a->c == b->c && a->batched == b->batched;
}

enum fx_status fx_ewise_operands(uint8_t *mem, const struct fx_cmd *c, struct fx_ewise *ew)
{
    ew->op = c->op;
    ew->a = fx_tensor_at(mem, c->t[0]), ew->y = fx_tensor_at(mem, c->t[1]);
    ew->b = c->op == FX_OP_RELU_FWD ? ew->a : fx_tensor_at(mem, c->t[2]);
    ew->acc = c->op == FX_OP_ADD ? fx_tensor_at(mem, c->t[4]) : NULL;
    ew->count = fx_kernel_tensor_count(mem, ew->y);
    if (!fx_kernel_same_shape(ew->a, ew->y) || !fx_kernel_same_shape(ew->a, ew->b) ||
        (ew->acc && ew->count > fx_kernel_item_count(ew->acc)))
        return FX_BAD_OPERAND;
    ew->pa = fx_kernel_i8(mem, ew->a), ew->pb = fx_kernel_i8(mem, ew->b),
    ew->py = fx_kernel_i8(mem, ew->y);
    ew->pacc = ew->acc ? fx_kernel_i32(mem, ew->acc) : NULL;
    int hi = ew->a->exp > ew->b->exp ? ew->a->exp : ew->b->exp;
    int lo = ew->a->exp + ew->b->exp - hi;
    ew->e = c->op == FX_OP_ADD ? (lo > hi - FX_ADD_SPAN ? lo : hi - FX_ADD_SPAN) : ew->a->exp;
    return FX_OK;
}

FX_CPU_CLONES void fx_ewise_range(const struct fx_ewise *ew, uint64_t begin, uint64_t end,
                                  uint64_t *maxabs)
{
    const int8_t *restrict a = ew->pa, *restrict b = ew->pb;
    int8_t *restrict y = ew->py;
    if (ew->op == FX_OP_RELU_FWD) {
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            y[i] = a[i] > 0 ? a[i] : 0;
        }
    } else if (ew->op == FX_OP_RELU_BWD) {
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            y[i] = (int8_t)(a[i] & -(b[i] > 0)); /* a where b > 0, branch-free */
        }
    } else {
        /* fx_align in int32: e is at most FX_ADD_SPAN below either
         * exponent, so |sum| < 2^28 (no clamp is ever counted), and an
         * operand shifted right by 8 or more rounds to 0 whatever it is. */
        int32_t *restrict acc = ew->pacc;
        int la = ew->a->exp - ew->e, lb = ew->b->exp - ew->e;
        int ra = la < 0 ? (-la < 8 ? -la : 8) : 0, rb = lb < 0 ? (-lb < 8 ? -lb : 8) : 0;
        int32_t ma = (int32_t)1 << (la > 0 ? la : 0), mb = (int32_t)1 << (lb > 0 ? lb : 0);
        int32_t ha = ra ? (int32_t)1 << (ra - 1) : 0, hb = rb ? (int32_t)1 << (rb - 1) : 0;
        uint32_t most = 0;
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int32_t v = ((a[i] * ma + ha) >> ra) + ((b[i] * mb + hb) >> rb);
            acc[i] = v;
            uint32_t mag = (uint32_t)(v < 0 ? -v : v);
            most = mag > most ? mag : most;
        }
        if (most > *maxabs)
            *maxabs = most;
    }
}

/* ReLU forward and backward, residual add. */
enum fx_status fx_kernel_ewise(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_ewise ew;
    enum fx_status st = fx_ewise_operands(mem, c, &ew);
    if (st != FX_OK)
        return st;
    uint64_t maxabs = 0;
    fx_ewise_range(&ew, 0, ew.count, &maxabs);
    if (ew.op == FX_OP_ADD)
        fx_kernel_requantize(ew.pacc, ew.count, maxabs, ew.e, fx_round_half_up(), ew.py, ew.y);
    else
        ew.y->exp = (int8_t)ew.e;
    return FX_OK;
}

/* Max pools may pad (below the window, so every window holds an input);
 * average pools may not: they divide by the whole window. */
static int pool_geometry(const uint8_t *mem, const struct fx_cmd *c, const struct fx_tensor *in,
                         const struct fx_tensor *out, struct fx_geom *g)
{
    int max = c->op == FX_OP_MAXPOOL_FWD || c->op == FX_OP_MAXPOOL_BWD;
    g->n = (int)((const struct fx_header *)mem)->batch;
    g->ih = in->h, g->iw = in->w, g->ic = (int)in->c;
    g->oh = out->h, g->ow = out->w, g->oc = (int)out->c;
    g->kh = c->kh, g->kw = c->kw, g->s = c->stride, g->p = c->pad;
    return g->s > 0 && g->kh > 0 && g->kw > 0 && g->ic == g->oc && (max || g->p == 0) &&
           g->p < g->kh && g->p < g->kw && g->ih + 2 * g->p >= g->kh && g->iw + 2 * g->p >= g->kw &&
           g->oh == (g->ih + 2 * g->p - g->kh) / g->s + 1 &&
           g->ow == (g->iw + 2 * g->p - g->kw) / g->s + 1 && in->batched && out->batched;
}

static size_t at(const struct fx_geom *g, int n, int y, int x, int h, int w, int ch)
{
    return (((size_t)n * h + y) * w + x) * g->ic + ch;
}

/* Input row (or column) v of a window lies in 0..side-1: not padding. */
static int inside(int v, int side)
{
    return (unsigned)v < (unsigned)side;
}

enum fx_status fx_kernel_maxpool_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tx, ty, &g))
        return FX_BAD_OPERAND;
    const int8_t *x = fx_kernel_i8(mem, tx);
    int8_t *y = fx_kernel_i8(mem, ty);
    for (int n = 0; n < g.n; n++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                for (int ch = 0; ch < g.ic; ch++) {
                    int8_t m = -128; /* below every int8 activation (-127..127) */
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++) {
#pragma HLS PIPELINE II = 1
                            int iy = oy * g.s - g.p + ky, ix = ox * g.s - g.p + kx;
                            if (!inside(iy, g.ih) || !inside(ix, g.iw))
                                continue; /* padding never wins */
                            int8_t v = x[at(&g, n, iy, ix, g.ih, g.iw, ch)];
                            m = v > m ? v : m;
                        }
                    y[at(&g, n, oy, ox, g.oh, g.ow, ch)] = m;
                }
    ty->exp = tx->exp;
    return FX_OK;
}

/* The error goes to the first maximum of each window's inputs in scan
 * order (padding is never one); overlapping windows add up in the
 * scratch. */
enum fx_status fx_kernel_maxpool_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tdx, tdy, &g) || !fx_kernel_same_shape(tx, tdx) ||
        fx_kernel_tensor_count(mem, tdx) > fx_kernel_item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *x = fx_kernel_i8(mem, tx), *dy = fx_kernel_i8(mem, tdy);
    int32_t *acc = fx_kernel_i32(mem, ta);
    uint64_t count = fx_kernel_tensor_count(mem, tdx), maxabs = 0;
    for (uint64_t i = 0; i < count; i++)
        acc[i] = 0;
    for (int n = 0; n < g.n; n++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                for (int ch = 0; ch < g.ic; ch++) {
                    size_t best = (size_t)-1; /* pad < window: some input is in it */
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++) {
                            int iy = oy * g.s - g.p + ky, ix = ox * g.s - g.p + kx;
                            if (!inside(iy, g.ih) || !inside(ix, g.iw))
                                continue;
                            size_t i = at(&g, n, iy, ix, g.ih, g.iw, ch);
                            if (best == (size_t)-1 || x[i] > x[best])
                                best = i;
                        }
                    acc[best] += dy[at(&g, n, oy, ox, g.oh, g.ow, ch)];
                }
    for (uint64_t i = 0; i < count; i++)
        (void)fx_kernel_store32(acc[i], &maxabs, tdx);
    fx_kernel_requantize(acc, count, maxabs, tdy->exp, fx_round_half_up(), fx_kernel_i8(mem, tdx),
                         tdx);
    return FX_OK;
}

/* The mean is sum * round(2^16 / window), exponent - 16. */
enum fx_status fx_kernel_avgpool_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *ta = fx_tensor_at(mem, c->t[4]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tx, ty, &g) ||
        fx_kernel_tensor_count(mem, ty) > fx_kernel_item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *x = fx_kernel_i8(mem, tx);
    int32_t *acc = fx_kernel_i32(mem, ta);
    int64_t r = fx_recip_q16((uint32_t)(g.kh * g.kw));
    uint64_t maxabs = 0;
    for (int n = 0; n < g.n; n++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                for (int ch = 0; ch < g.ic; ch++) {
                    int64_t sum = 0;
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++) {
#pragma HLS PIPELINE II = 1
                            sum += x[at(&g, n, oy * g.s + ky, ox * g.s + kx, g.ih, g.iw, ch)];
                        }
                    acc[at(&g, n, oy, ox, g.oh, g.ow, ch)] =
                        fx_kernel_store32(sum * r, &maxabs, ty);
                }
    fx_kernel_requantize(acc, fx_kernel_tensor_count(mem, ty), maxabs, tx->exp - 16,
                         fx_round_half_up(), fx_kernel_i8(mem, ty), ty);
    return FX_OK;
}

enum fx_status fx_kernel_avgpool_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *ta = fx_tensor_at(mem, c->t[4]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tdx, tdy, &g) ||
        fx_kernel_tensor_count(mem, tdx) > fx_kernel_item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *dy = fx_kernel_i8(mem, tdy);
    int32_t *acc = fx_kernel_i32(mem, ta);
    int64_t r = fx_recip_q16((uint32_t)(g.kh * g.kw));
    uint64_t count = fx_kernel_tensor_count(mem, tdx), maxabs = 0;
    for (uint64_t i = 0; i < count; i++)
        acc[i] = 0;
    for (int n = 0; n < g.n; n++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                for (int ch = 0; ch < g.ic; ch++) {
                    int32_t share = (int32_t)(dy[at(&g, n, oy, ox, g.oh, g.ow, ch)] * r);
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++) {
#pragma HLS PIPELINE II = 1
                            acc[at(&g, n, oy * g.s + ky, ox * g.s + kx, g.ih, g.iw, ch)] += share;
                        }
                }
    for (uint64_t i = 0; i < count; i++)
        (void)fx_kernel_store32(acc[i], &maxabs, tdx);
    fx_kernel_requantize(acc, count, maxabs, tdy->exp - 16, fx_round_half_up(),
                         fx_kernel_i8(mem, tdx), tdx);
    return FX_OK;
}

/* Channel concatenation at the larger exponent (the other side rounds). */
enum fx_status fx_kernel_concat_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *ta = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tb = fx_tensor_at(mem, c->t[2]);
    if (ta->h != tb->h || ta->w != tb->w || ty->h != ta->h || ty->w != ta->w ||
        ty->c != ta->c + tb->c || !ta->batched || !tb->batched || !ty->batched)
        return FX_BAD_OPERAND;
    const int8_t *a = fx_kernel_i8(mem, ta), *b = fx_kernel_i8(mem, tb);
    int8_t *y = fx_kernel_i8(mem, ty);
    int e = ta->exp > tb->exp ? ta->exp : tb->exp;
    uint64_t pixels = (uint64_t)((struct fx_header *)mem)->batch * ta->h * ta->w;
    uint32_t sat = 0;
    for (uint64_t p = 0; p < pixels; p++) {
        for (uint32_t j = 0; j < ta->c; j++)
            y[p * ty->c + j] = (int8_t)fx_clamp(fx_align(a[p * ta->c + j], ta->exp, e), 127, &sat);
        for (uint32_t j = 0; j < tb->c; j++)
            y[p * ty->c + ta->c + j] =
                (int8_t)fx_clamp(fx_align(b[p * tb->c + j], tb->exp, e), 127, &sat);
    }
    ty->saturations += sat;
    fx_set_exp(ty, e);
    return FX_OK;
}

enum fx_status fx_kernel_concat_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tda = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tdb = fx_tensor_at(mem, c->t[2]);
    if (tda->h != tdb->h || tda->w != tdb->w || tdy->h != tda->h || tdy->w != tda->w ||
        tdy->c != tda->c + tdb->c || !tda->batched || !tdb->batched || !tdy->batched)
        return FX_BAD_OPERAND;
    const int8_t *dy = fx_kernel_i8(mem, tdy);
    int8_t *da = fx_kernel_i8(mem, tda), *db = fx_kernel_i8(mem, tdb);
    uint64_t pixels = (uint64_t)((struct fx_header *)mem)->batch * tda->h * tda->w;
    for (uint64_t p = 0; p < pixels; p++) {
        for (uint32_t j = 0; j < tda->c; j++)
            da[p * tda->c + j] = dy[p * tdy->c + j];
        for (uint32_t j = 0; j < tdb->c; j++)
            db[p * tdb->c + j] = dy[p * tdy->c + tda->c + j];
    }
    tda->exp = tdb->exp = tdy->exp;
    return FX_OK;
}

/* A run of channels, at the input's exponent: exact. */
enum fx_status fx_kernel_slice_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    if (tx->h != ty->h || tx->w != ty->w || c->first > tx->c || ty->c > tx->c - c->first ||
        !tx->batched || !ty->batched)
        return FX_BAD_OPERAND;
    const int8_t *x = fx_kernel_i8(mem, tx);
    int8_t *y = fx_kernel_i8(mem, ty);
    uint64_t pixels = (uint64_t)((struct fx_header *)mem)->batch * tx->h * tx->w;
    for (uint64_t p = 0; p < pixels; p++)
        for (uint32_t j = 0; j < ty->c; j++)
            y[p * ty->c + j] = x[p * tx->c + c->first + j];
    fx_set_exp(ty, tx->exp);
    return FX_OK;
}

/* The error of x: dy in the sliced channels, zero in the others. */
enum fx_status fx_kernel_slice_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    if (tdx->h != tdy->h || tdx->w != tdy->w || c->first > tdx->c || tdy->c > tdx->c - c->first ||
        !tdx->batched || !tdy->batched)
        return FX_BAD_OPERAND;
    const int8_t *dy = fx_kernel_i8(mem, tdy);
    int8_t *dx = fx_kernel_i8(mem, tdx);
    uint64_t pixels = (uint64_t)((struct fx_header *)mem)->batch * tdx->h * tdx->w;
    for (uint64_t p = 0; p < pixels; p++)
        for (uint32_t j = 0; j < tdx->c; j++)
            dx[p * tdx->c + j] =
                j >= c->first && j - c->first < tdy->c ? dy[p * tdy->c + j - c->first] : 0;
    tdx->exp = tdy->exp;
    return FX_OK;
}
