/*
 * fx_kernel.c - the reference accelerator as HLS-style C: fixed-size local
 * buffers, no allocation, no recursion, every loop bounded by descriptor
 * fields.  fx_kernel() walks a program of commands over one device-memory
 * image (fx_isa.h); each command is one layer operation.
 *
 * Sections: image access and checks; requantization (the one place int32
 * becomes int8); convolution and fully connected (forward, backward data,
 * backward weight) on an FX_BT x FX_CT PE array; element-wise and pooling
 * operations; the two losses; the weight update; dispatch.
 *
 * Two-pass rule: an operation writes its int32 results to the acc scratch
 * tensor while tracking max|v|, then requantizes them all with the shift
 * that max implies, so a tensor's exponent reflects all of its data.
 */
#include "fx_kernel.h"
#include "fx_arith.h"

#include <stddef.h>

/* ---- image access ---- */

static struct fx_header *header(uint8_t *mem)
{
    return (struct fx_header *)mem;
}

struct fx_tensor *fx_tensor_at(uint8_t *mem, unsigned id)
{
    return (struct fx_tensor *)(mem + header(mem)->tensors_off) + id;
}

static uint64_t item_count(const struct fx_tensor *t)
{
    return (uint64_t)t->h * t->w * t->c;
}

/* Elements of t (batched tensors count the header's current batch). */
static uint64_t tensor_count(const uint8_t *mem, const struct fx_tensor *t)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    return item_count(t) * (t->batched ? h->batch : 1);
}

static int8_t *i8(uint8_t *mem, const struct fx_tensor *t)
{
    return (int8_t *)(mem + t->offset);
}

static int32_t *i32(uint8_t *mem, const struct fx_tensor *t)
{
    return (int32_t *)(void *)(mem + t->offset);
}

/* The header, and every descriptor inside the image: FX_OK or
 * FX_BAD_IMAGE. */
static enum fx_status image_check(const uint8_t *mem)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    if (h->magic != FX_MAGIC || h->version != FX_VERSION)
        return FX_BAD_IMAGE;
    if (h->batch < 1 || h->batch > h->batch_max)
        return FX_BAD_IMAGE;
    uint64_t tend = (uint64_t)h->tensors_off + (uint64_t)h->ntensors * sizeof(struct fx_tensor);
    uint64_t cend = (uint64_t)h->cmds_off + (uint64_t)h->ncmds * sizeof(struct fx_cmd);
    if (tend > h->bytes || cend > h->bytes || h->tensors_off % 8 || h->cmds_off % 8)
        return FX_BAD_IMAGE;
    for (int p = 0; p < FX_PROGS; p++)
        if ((uint64_t)h->prog_first[p] + h->prog_count[p] > h->ncmds)
            return FX_BAD_IMAGE;
    const struct fx_tensor *t = (const struct fx_tensor *)(mem + h->tensors_off);
    for (uint32_t i = 0; i < h->ntensors; i++) {
        if ((t[i].type != FX_I8 && t[i].type != FX_I32) || t[i].offset % FX_ALIGN)
            return FX_BAD_IMAGE;
        uint64_t n = item_count(&t[i]) * (t[i].batched ? h->batch_max : 1);
        if (t[i].offset + n * t[i].type > h->bytes)
            return FX_BAD_IMAGE;
    }
    return FX_OK;
}

/* ---- requantization ---- */

struct fx_rounding fx_round_half_up(void)
{
    struct fx_rounding r = {0, 0, 0, 0};
    return r;
}

struct fx_rounding fx_round_stochastic(const uint8_t *mem, unsigned tensor)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    struct fx_rounding r = {1, h->seed, h->step, tensor};
    return r;
}

/* The element-wise loops are the emulator's too: a gcc build compiles
 * them for x86-64-v4 (AVX-512 with DQ, whose 64-bit multiplies the SGD
 * loop takes: 3x the avx512f clone's speed there) and AVX2 as well and
 * picks one at load time (GNU ifunc).  Synthesis, clang and the
 * sanitizers see plain functions. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SYNTHESIS__) &&  \
    !defined(__SANITIZE_ADDRESS__)
#define FX_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FX_CPU_CLONES
#endif

FX_CPU_CLONES uint32_t fx_requant_range(const int32_t *acc, uint64_t begin, uint64_t end, int s,
                                        struct fx_rounding r, int8_t *out)
{
    uint32_t sat = 0;
    if (r.stochastic) {
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int64_t v =
                fx_shift_stochastic(acc[i], s, fx_hash(r.seed, r.step, r.tensor, (uint32_t)i));
            out[i] = (int8_t)fx_clamp(v, FX_Q8_MAX, &sat);
        }
        return sat;
    }
    if (s >= 1 && s <= 31) {
        /* fx_shift_round in int32: (a + 2^(s-1)) >> s is a >> s plus bit
         * s-1 of a; with the clamp branch-free, a CPU build vectorizes it */
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int32_t v = (acc[i] >> s) + ((acc[i] >> (s - 1)) & 1);
            int32_t q = v > FX_Q8_MAX ? FX_Q8_MAX : v < -FX_Q8_MAX ? -FX_Q8_MAX : v;
            sat += q != v;
            out[i] = (int8_t)q;
        }
        return sat;
    }
    if (s <= 0 && s >= -30) {
        /* shift 0: every |sum| < 128, an error tensor late in training
         * (the requantizations here choose s >= 0; a left shift is
         * handled alike): a * 2^-s leaves +-127 exactly when |a| > 127 >>
         * -s, so the clamp is decided before the shift, branch-free */
        const int left = -s;
        const int32_t fits = FX_Q8_MAX >> left;
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int32_t a = acc[i];
            int32_t q = a > fits ? FX_Q8_MAX : a < -fits ? -FX_Q8_MAX : a * (1 << left);
            sat += a > fits || a < -fits;
            out[i] = (int8_t)q;
        }
        return sat;
    }
    for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
        out[i] = (int8_t)fx_clamp(fx_shift_round(acc[i], s), FX_Q8_MAX, &sat);
    }
    return sat;
}

void fx_set_exp(struct fx_tensor *t, int e)
{
    t->exp = (int8_t)(e > 127 ? 127 : e < -128 ? -128 : e);
}

/* out = acc / 2^s with s from maxabs; the exponent becomes e_acc + s. */
static void requantize(const int32_t *acc, uint64_t count, uint64_t maxabs, int e_acc,
                       struct fx_rounding r, int8_t *out, struct fx_tensor *t)
{
    int s = fx_quant_shift(maxabs);
    t->saturations += fx_requant_range(acc, 0, count, s, r, out);
    fx_set_exp(t, e_acc + s);
}

/* Stores v into the int32 scratch, saturating (counted against t). */
static int32_t store32(int64_t v, uint64_t *maxabs, struct fx_tensor *t)
{
    uint32_t sat = 0;
    int32_t s = fx_store32(v, maxabs, &sat);
    t->saturations += sat;
    return s;
}

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
        g->ic = (int)item_count(in);
        g->oc = (int)item_count(out);
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
    if (!geometry(mem, c, cv->in, cv->out, cv->flat, g) || item_count(cv->w) != weight_count(g) ||
        cv->in->type != FX_I8 || cv->out->type != FX_I8 || cv->w->type != FX_I8 ||
        cv->acc->type != FX_I32)
        return FX_BAD_OPERAND;
    uint64_t acc_need = fwd    ? tensor_count(mem, cv->out)
                        : data ? tensor_count(mem, cv->in)
                               : weight_count(g) + (uint64_t)g->oc;
    if (acc_need > item_count(cv->acc))
        return FX_BAD_OPERAND;
    if (!data && (item_count(cv->b) != (uint64_t)g->oc || cv->b->type != (fwd ? FX_I32 : FX_I8)))
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
static enum fx_status conv_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    struct fx_tensor *tx = cv.in, *ty = cv.out, *tw = cv.w, *tb = cv.b, *ta = cv.acc;
    const struct fx_geom g = cv.g;
    const int8_t *x = i8(mem, tx), *w = i8(mem, tw);
    const int32_t *bias = i32(mem, tb);
    int32_t *acc = i32(mem, ta);
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
                            acc[o] = store32((int64_t)pe[b][j] + bv, &maxabs, ty);
                        }
                }
    requantize(acc, tensor_count(mem, ty), maxabs, e_acc, fx_round_half_up(), i8(mem, ty), ty);
    return FX_OK;
}

/* dx = requant(dy convolved back through w8): every input position gathers
 * the outputs whose window covered it. */
static enum fx_status conv_bwd_data(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    struct fx_tensor *tdy = cv.out, *tdx = cv.in, *tw = cv.w, *ta = cv.acc;
    const struct fx_geom g = cv.g;
    const int8_t *dy = i8(mem, tdy), *w = i8(mem, tw);
    int32_t *acc = i32(mem, ta);
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
                            acc[o] = store32(pe[b][j], &maxabs, tdx);
                        }
                }
    requantize(acc, tensor_count(mem, tdx), maxabs, e_acc, fx_round_half_up(), i8(mem, tdx), tdx);
    return FX_OK;
}

/* dw = requant_stochastic(sum over batch and positions of x * dy), and the
 * bias gradient db = requant_stochastic(sum of dy). */
static enum fx_status conv_bwd_weight(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    struct fx_tensor *tdy = cv.out, *tx = cv.in, *tdw = cv.w, *tdb = cv.b, *ta = cv.acc;
    const struct fx_geom g = cv.g;
    const int8_t *x = i8(mem, tx), *dy = i8(mem, tdy);
    int32_t *acc = i32(mem, ta);
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
                        acc[row + c0 + j] = store32(fx_shift_round(pe[j], shift), &maxabs, tdw);
                }
    uint64_t nw = weight_count(&g);
    requantize(acc, nw, maxabs, tx->exp + tdy->exp + shift, fx_round_stochastic(mem, c->t[2]),
               i8(mem, tdw), tdw);

    int32_t *bacc = acc + nw;
    maxabs = 0;
    for (int co = 0; co < g.oc; co++) {
        int64_t sum = 0;
        for (int n = 0; n < g.n; n++)
            for (int o = 0; o < g.oh * g.ow; o++)
                sum += dy[((size_t)n * g.oh * g.ow + o) * g.oc + co];
        bacc[co] = store32(sum, &maxabs, tdb);
    }
    requantize(bacc, (uint64_t)g.oc, maxabs, tdy->exp, fx_round_stochastic(mem, c->t[3]),
               i8(mem, tdb), tdb);
    return FX_OK;
}

/* ---- element-wise and pooling ---- */

static int same_shape(const struct fx_tensor *a, const struct fx_tensor *b)
{
    return a->h == b->h && a->w == b->w && a->c == b->c && a->batched == b->batched;
}

enum fx_status fx_ewise_operands(uint8_t *mem, const struct fx_cmd *c, struct fx_ewise *ew)
{
    ew->op = c->op;
    ew->a = fx_tensor_at(mem, c->t[0]), ew->y = fx_tensor_at(mem, c->t[1]);
    ew->b = c->op == FX_OP_RELU_FWD ? ew->a : fx_tensor_at(mem, c->t[2]);
    ew->acc = c->op == FX_OP_ADD ? fx_tensor_at(mem, c->t[4]) : NULL;
    ew->count = tensor_count(mem, ew->y);
    if (!same_shape(ew->a, ew->y) || !same_shape(ew->a, ew->b) ||
        (ew->acc && ew->count > item_count(ew->acc)))
        return FX_BAD_OPERAND;
    ew->pa = i8(mem, ew->a), ew->pb = i8(mem, ew->b), ew->py = i8(mem, ew->y);
    ew->pacc = ew->acc ? i32(mem, ew->acc) : NULL;
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
static enum fx_status ewise(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_ewise ew;
    enum fx_status st = fx_ewise_operands(mem, c, &ew);
    if (st != FX_OK)
        return st;
    uint64_t maxabs = 0;
    fx_ewise_range(&ew, 0, ew.count, &maxabs);
    if (ew.op == FX_OP_ADD)
        requantize(ew.pacc, ew.count, maxabs, ew.e, fx_round_half_up(), ew.py, ew.y);
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

static enum fx_status maxpool_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tx, ty, &g))
        return FX_BAD_OPERAND;
    const int8_t *x = i8(mem, tx);
    int8_t *y = i8(mem, ty);
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
static enum fx_status maxpool_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tdx, tdy, &g) || !same_shape(tx, tdx) ||
        tensor_count(mem, tdx) > item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *x = i8(mem, tx), *dy = i8(mem, tdy);
    int32_t *acc = i32(mem, ta);
    uint64_t count = tensor_count(mem, tdx), maxabs = 0;
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
        (void)store32(acc[i], &maxabs, tdx);
    requantize(acc, count, maxabs, tdy->exp, fx_round_half_up(), i8(mem, tdx), tdx);
    return FX_OK;
}

/* The mean is sum * round(2^16 / window), exponent - 16. */
static enum fx_status avgpool_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *ta = fx_tensor_at(mem, c->t[4]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tx, ty, &g) || tensor_count(mem, ty) > item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *x = i8(mem, tx);
    int32_t *acc = i32(mem, ta);
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
                    acc[at(&g, n, oy, ox, g.oh, g.ow, ch)] = store32(sum * r, &maxabs, ty);
                }
    requantize(acc, tensor_count(mem, ty), maxabs, tx->exp - 16, fx_round_half_up(), i8(mem, ty),
               ty);
    return FX_OK;
}

static enum fx_status avgpool_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *ta = fx_tensor_at(mem, c->t[4]);
    struct fx_geom g;
    if (!pool_geometry(mem, c, tdx, tdy, &g) || tensor_count(mem, tdx) > item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *dy = i8(mem, tdy);
    int32_t *acc = i32(mem, ta);
    int64_t r = fx_recip_q16((uint32_t)(g.kh * g.kw));
    uint64_t count = tensor_count(mem, tdx), maxabs = 0;
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
        (void)store32(acc[i], &maxabs, tdx);
    requantize(acc, count, maxabs, tdy->exp - 16, fx_round_half_up(), i8(mem, tdx), tdx);
    return FX_OK;
}

/* Channel concatenation at the larger exponent (the other side rounds). */
static enum fx_status concat_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *ta = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tb = fx_tensor_at(mem, c->t[2]);
    if (ta->h != tb->h || ta->w != tb->w || ty->h != ta->h || ty->w != ta->w ||
        ty->c != ta->c + tb->c || !ta->batched || !tb->batched || !ty->batched)
        return FX_BAD_OPERAND;
    const int8_t *a = i8(mem, ta), *b = i8(mem, tb);
    int8_t *y = i8(mem, ty);
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

static enum fx_status concat_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tda = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tdb = fx_tensor_at(mem, c->t[2]);
    if (tda->h != tdb->h || tda->w != tdb->w || tdy->h != tda->h || tdy->w != tda->w ||
        tdy->c != tda->c + tdb->c || !tda->batched || !tdb->batched || !tdy->batched)
        return FX_BAD_OPERAND;
    const int8_t *dy = i8(mem, tdy);
    int8_t *da = i8(mem, tda), *db = i8(mem, tdb);
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
static enum fx_status slice_fwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *ty = fx_tensor_at(mem, c->t[1]);
    if (tx->h != ty->h || tx->w != ty->w || c->first > tx->c || ty->c > tx->c - c->first ||
        !tx->batched || !ty->batched)
        return FX_BAD_OPERAND;
    const int8_t *x = i8(mem, tx);
    int8_t *y = i8(mem, ty);
    uint64_t pixels = (uint64_t)((struct fx_header *)mem)->batch * tx->h * tx->w;
    for (uint64_t p = 0; p < pixels; p++)
        for (uint32_t j = 0; j < ty->c; j++)
            y[p * ty->c + j] = x[p * tx->c + c->first + j];
    fx_set_exp(ty, tx->exp);
    return FX_OK;
}

/* The error of x: dy in the sliced channels, zero in the others. */
static enum fx_status slice_bwd(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tdy = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    if (tdx->h != tdy->h || tdx->w != tdy->w || c->first > tdx->c || tdy->c > tdx->c - c->first ||
        !tdx->batched || !tdy->batched)
        return FX_BAD_OPERAND;
    const int8_t *dy = i8(mem, tdy);
    int8_t *dx = i8(mem, tdx);
    uint64_t pixels = (uint64_t)((struct fx_header *)mem)->batch * tdx->h * tdx->w;
    for (uint64_t p = 0; p < pixels; p++)
        for (uint32_t j = 0; j < tdx->c; j++)
            dx[p * tdx->c + j] =
                j >= c->first && j - c->first < tdy->c ? dy[p * tdy->c + j - c->first] : 0;
    tdx->exp = tdy->exp;
    return FX_OK;
}

/* ---- losses ---- */

/* z[0..n) (exponent e) to Q16 differences from the maximum, for exp. */
static int64_t q16_below_max(int8_t v, int8_t max, int e)
{
    return fx_align((int64_t)v - max, e, -16);
}

static int argmax8(const int8_t *z, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (z[j] > z[best])
            best = j;
    return best;
}

/* Softmax of z[0..n) at exponent e: the normalizer sum of e^(z - max) in
 * Q30; p_j is then fx_exp_q30(..) * 2^30 / sum, recomputed where used, so
 * no buffer of n probabilities is needed. */
static uint64_t softmax_sum(const int8_t *z, int n, int e)
{
    int8_t m = z[argmax8(z, n)];
    uint64_t sum = 0;
    for (int j = 0; j < n; j++)
        sum += fx_exp_q30(q16_below_max(z[j], m, e));
    return sum;
}

static int64_t softmax_p_q30(const int8_t *z, int n, int e, int j, uint64_t sum)
{
    int8_t m = z[argmax8(z, n)];
    return (int64_t)(((uint64_t)fx_exp_q30(q16_below_max(z[j], m, e)) << 30) / sum);
}

/* -ln(p) in Q16 for p in Q30 */
static int64_t nll_q16(int64_t p_q30)
{
    return ((int64_t)-fx_log2_q30_q16((uint32_t)p_q30) * FX_LN2_Q16) >> 16;
}

/*
 * Mean softmax cross-entropy over the batch.  The error (p - onehot) / N is
 * formed in Q30 with 1/N as a Q16 reciprocal, then requantized.
 */
static enum fx_status softmax_ce(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_header *h = header(mem);
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tl = fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    int classes = (int)item_count(tx);
    if (!same_shape(tx, tdx) || tl->type != FX_I32 || item_count(tl) != 1 || !tl->batched ||
        tensor_count(mem, tx) > item_count(ta) || classes < 1)
        return FX_BAD_OPERAND;
    const int8_t *x = i8(mem, tx);
    const int32_t *label = i32(mem, tl);
    int32_t *acc = i32(mem, ta);
    int64_t r = fx_recip_q16(h->batch);
    uint64_t maxabs = 0;
    for (uint32_t n = 0; n < h->batch; n++) {
        const int8_t *z = x + (size_t)n * classes;
        uint64_t sum = softmax_sum(z, classes, tx->exp);
        int y = label[n];
        for (int j = 0; j < classes; j++) {
            int64_t p = softmax_p_q30(z, classes, tx->exp, j, sum);
            if (j == y)
                h->loss_q16 += nll_q16(p);
            int64_t g = p - (j == y ? (int64_t)1 << 30 : 0);
            acc[(size_t)n * classes + j] = store32(fx_shift_round(g * r, 16), &maxabs, tdx);
        }
        h->correct += argmax8(z, classes) == y;
    }
    requantize(acc, tensor_count(mem, tdx), maxabs, -30, fx_round_half_up(), i8(mem, tdx), tdx);
    return FX_OK;
}

/* sigma(v) in Q30 for v at exponent e */
static int64_t sigmoid_q30(int8_t v, int e)
{
    int64_t z = fx_align(v, e, -16);
    uint64_t ez = fx_exp_q30(z > 0 ? -z : z); /* e^-|z| */
    uint64_t one = (uint64_t)1 << 30;
    return (int64_t)(z >= 0 ? (one << 30) / (one + ez) : (ez << 30) / (one + ez));
}

/*
 * The grid detector's loss (one box per cell, YOLO v1 style), mean over the
 * batch: objectness BCE on every cell (no-object cells weighted 1/2), and
 * on cells that hold an object, squared error on x, y, sqrt w, sqrt h and
 * softmax cross-entropy over the classes.  The box term is Huber-like:
 * d^2 within +-1, 2|d| - 1 beyond, so its gradient 2d clips at +-2.
 */
static enum fx_status grid_loss(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_header *h = header(mem);
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tt = fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    int classes = (int)tx->c - FX_GRID_BOX;
    if (!same_shape(tx, tdx) || tt->type != FX_I32 || tt->h != tx->h || tt->w != tx->w ||
        tt->c != FX_GT_N || !tt->batched || classes < 1 || tensor_count(mem, tx) > item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *x = i8(mem, tx);
    const int32_t *tg = i32(mem, tt);
    int32_t *acc = i32(mem, ta);
    int64_t r = fx_recip_q16(h->batch), one = (int64_t)1 << 30;
    uint64_t cells = (uint64_t)h->batch * tx->h * tx->w, maxabs = 0;
    for (uint64_t cell = 0; cell < cells; cell++) {
        const int8_t *z = x + cell * tx->c;
        const int32_t *t = tg + cell * FX_GT_N;
        int32_t *g = acc + cell * tx->c;
        int obj = t[FX_GT_OBJ] != 0;
        int64_t s = sigmoid_q30(z[0], tx->exp);
        int64_t gobj = obj ? s - one : fx_shift_round(s, 1);
        h->loss_q16 += obj ? nll_q16(s) : nll_q16(one - s) / 2;
        g[0] = store32(fx_shift_round(gobj * r, 16), &maxabs, tdx);
        for (int k = 1; k < FX_GRID_BOX; k++) {
            int64_t d = 0;
            if (obj) {
                d = fx_align(z[k], tx->exp, -30) - ((int64_t)t[FX_GT_X + k - 1] << 14);
                int64_t a = (int64_t)fx_abs64(d) >> 14; /* |d| in Q16 */
                h->loss_q16 += a <= 65536 ? a * a >> 16 : 2 * a - 65536;
                d = d > one ? one : d < -one ? -one : d;
            }
            g[k] = store32(fx_shift_round(2 * d * r, 16), &maxabs, tdx);
        }
        const int8_t *zc = z + FX_GRID_BOX;
        uint64_t sum = obj ? softmax_sum(zc, classes, tx->exp) : 0;
        for (int j = 0; j < classes; j++) {
            int64_t d = 0;
            if (obj) {
                int64_t p = softmax_p_q30(zc, classes, tx->exp, j, sum);
                if (j == t[FX_GT_CLASS])
                    h->loss_q16 += nll_q16(p);
                d = p - (j == t[FX_GT_CLASS] ? one : 0);
            }
            g[FX_GRID_BOX + j] = store32(fx_shift_round(d * r, 16), &maxabs, tdx);
        }
        if (obj)
            h->correct += argmax8(zc, classes) == t[FX_GT_CLASS];
    }
    requantize(acc, tensor_count(mem, tdx), maxabs, -30, fx_round_half_up(), i8(mem, tdx), tdx);
    return FX_OK;
}

/* ---- weights ---- */

FX_CPU_CLONES uint64_t fx_maxabs32(const int32_t *v, uint64_t n)
{
    uint32_t most = 0;
    for (uint64_t i = 0; i < n; i++) {
#pragma HLS PIPELINE II = 1
        uint32_t mag = v[i] < 0 ? 0u - (uint32_t)v[i] : (uint32_t)v[i];
        most = mag > most ? mag : most;
    }
    return most;
}

/* The int8 copy of the master weights the PE array multiplies with. */
static enum fx_status quant_w(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tw = fx_tensor_at(mem, c->t[0]), *tq = fx_tensor_at(mem, c->t[1]);
    if (tw->type != FX_I32 || tq->type != FX_I8 || item_count(tw) != item_count(tq))
        return FX_BAD_OPERAND;
    const int32_t *w = i32(mem, tw);
    uint64_t count = item_count(tw);
    requantize(w, count, fx_maxabs32(w, count), tw->exp, fx_round_half_up(), i8(mem, tq), tq);
    return FX_OK;
}

struct fx_sgd_plan fx_sgd_plan(const struct fx_header *h, int e_w, int e_g, int decay_on)
{
    const int ev = e_w - FX_V_FRAC; /* the momentum's exponent */
    const struct fx_sgd_plan p = {
        .g = fx_plan_shift(ev - e_g), /* fx_align(g, e_g, ev) */
        .decay = fx_plan_shift(ev - (e_w + h->wd_e)),
        .lr = fx_plan_shift(-h->lr_e),
        .mom = fx_plan_shift(-h->mom_e),
        .wd_m = h->wd_m,
        .lr_m = h->lr_m,
        .mom_m = h->mom_m,
        .decay_on = decay_on,
    };
    return p;
}

FX_CPU_CLONES uint64_t fx_sgd_range(const struct fx_sgd_plan *p, int32_t *w, int32_t *v,
                                    const int8_t *g, uint64_t n, uint32_t sat[2])
{
    const struct fx_sgd_plan q = *p; /* a copy the compiler knows nothing writes */
    const struct fx_shift_plan vfrac = fx_plan_shift(FX_V_FRAC);
    uint32_t vsat = 0, wsat = 0;
    uint64_t wmax = 0;
    for (uint64_t i = 0; i < n; i++) {
#pragma HLS PIPELINE II = 1
        int64_t d = fx_shift_planned(g[i], &q.g);
        d += q.decay_on ? fx_shift_planned((int64_t)w[i] * q.wd_m, &q.decay) : 0;
        int64_t step = fx_shift_planned(d * q.lr_m, &q.lr);
        int64_t vn = fx_shift_planned((int64_t)v[i] * q.mom_m, &q.mom) + step;
        /* fx_clamp's count goes through a pointer, which the stores to v
         * and w might alias: counted in locals here, so the loop vectorizes */
        vsat += vn > INT32_MAX || vn < -INT32_MAX;
        vn = vn > INT32_MAX ? INT32_MAX : vn < -INT32_MAX ? -INT32_MAX : vn;
        v[i] = (int32_t)vn;
        int64_t wn = w[i] - fx_shift_planned(vn, &vfrac);
        wsat += wn > FX_W_MAX || wn < -FX_W_MAX;
        wn = wn > FX_W_MAX ? FX_W_MAX : wn < -FX_W_MAX ? -FX_W_MAX : wn;
        w[i] = (int32_t)wn;
        wmax = fx_abs64(wn) > wmax ? fx_abs64(wn) : wmax;
    }
    sat[0] += vsat;
    sat[1] += wsat;
    return wmax;
}

/* The weights and their momenta halved, rounding half up. */
FX_CPU_CLONES static void halve(int32_t *w, int32_t *v, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
#pragma HLS PIPELINE II = 1
        w[i] = (int32_t)fx_shift_round(w[i], 1);
        v[i] = (int32_t)fx_shift_round(v[i], 1);
    }
}

/*
 * SGD with momentum and weight decay, in integers:
 *   d = g + wd * w            at the momentum's exponent (e_w - FX_V_FRAC)
 *   v = mom * v + lr * d      int32, saturating
 *   w = w - round(v / 2^FX_V_FRAC)   24 bits, saturating
 * lr, mom and wd are m * 2^e pairs from the header.  Weights that grow
 * into their headroom bit (max |w| >= 2^22) are halved, with the momentum,
 * and the exponent goes up by one: the range follows the weights, so they
 * saturate only if one step jumps past 2^23.
 */
static enum fx_status sgd(uint8_t *mem, const struct fx_cmd *c)
{
    const struct fx_header *h = header(mem);
    struct fx_tensor *tw = fx_tensor_at(mem, c->t[0]), *tv = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tg = fx_tensor_at(mem, c->t[2]);
    uint64_t count = item_count(tw);
    if (tw->type != FX_I32 || tv->type != FX_I32 || tg->type != FX_I8 || item_count(tv) != count ||
        item_count(tg) != count)
        return FX_BAD_OPERAND;
    int32_t *w = i32(mem, tw), *v = i32(mem, tv);
    const struct fx_sgd_plan plan = fx_sgd_plan(h, tw->exp, tg->exp, !(c->flags & FX_C_NO_DECAY));
    uint32_t sat[2] = {0, 0};
    uint64_t wmax = fx_sgd_range(&plan, w, v, i8(mem, tg), count, sat);
    tv->saturations += sat[0];
    tw->saturations += sat[1];
    if (wmax >= (uint64_t)1 << (FX_W_BITS - 2) && tw->exp < 127) {
        halve(w, v, count);
        tw->exp++;
    }
    return FX_OK;
}

/* ---- dispatch ---- */

enum fx_status fx_kernel_exec(uint8_t *mem, const struct fx_cmd *cmd)
{
    switch ((enum fx_op)cmd->op) {
    case FX_OP_NOP: return FX_OK;
    case FX_OP_CONV_FWD: return conv_fwd(mem, cmd);
    case FX_OP_CONV_BWD_DATA: return conv_bwd_data(mem, cmd);
    case FX_OP_CONV_BWD_WEIGHT: return conv_bwd_weight(mem, cmd);
    case FX_OP_FC_FWD: return conv_fwd(mem, cmd);
    case FX_OP_FC_BWD_DATA: return conv_bwd_data(mem, cmd);
    case FX_OP_FC_BWD_WEIGHT: return conv_bwd_weight(mem, cmd);
    case FX_OP_RELU_FWD:
    case FX_OP_RELU_BWD:
    case FX_OP_ADD: return ewise(mem, cmd);
    case FX_OP_MAXPOOL_FWD: return maxpool_fwd(mem, cmd);
    case FX_OP_MAXPOOL_BWD: return maxpool_bwd(mem, cmd);
    case FX_OP_AVGPOOL_FWD: return avgpool_fwd(mem, cmd);
    case FX_OP_AVGPOOL_BWD: return avgpool_bwd(mem, cmd);
    case FX_OP_CONCAT_FWD: return concat_fwd(mem, cmd);
    case FX_OP_CONCAT_BWD: return concat_bwd(mem, cmd);
    case FX_OP_SLICE_FWD: return slice_fwd(mem, cmd);
    case FX_OP_SLICE_BWD: return slice_bwd(mem, cmd);
    case FX_OP_SOFTMAX_CE: return softmax_ce(mem, cmd);
    case FX_OP_GRID_LOSS: return grid_loss(mem, cmd);
    case FX_OP_QUANT_W: return quant_w(mem, cmd);
    case FX_OP_SGD: return sgd(mem, cmd);
    case FX_OPS: break;
    }
    return FX_BAD_OP;
}

enum fx_status fx_program_start(uint8_t *mem, uint32_t prog)
{
    struct fx_header *h = header(mem);
    h->loss_q16 = 0;
    h->correct = 0;
    h->status_cmd = 0;
    h->status = prog < FX_PROGS ? image_check(mem) : FX_BAD_IMAGE;
    if (h->status != FX_OK)
        return (enum fx_status)h->status;
    const struct fx_cmd *cmds = (const struct fx_cmd *)(mem + h->cmds_off);
    for (uint32_t i = h->prog_first[prog]; i < h->prog_first[prog] + h->prog_count[prog]; i++)
        for (int j = 0; j < 8; j++)
            if (cmds[i].t[j] >= h->ntensors) {
                h->status = FX_BAD_OPERAND;
                h->status_cmd = i;
                return FX_BAD_OPERAND;
            }
    return FX_OK;
}

void fx_kernel(uint8_t *mem, uint32_t prog)
{
#pragma HLS INTERFACE m_axi port = mem offset = slave bundle = gmem
#pragma HLS INTERFACE s_axilite port = prog
#pragma HLS INTERFACE s_axilite port = return
    struct fx_header *h = header(mem);
    if (fx_program_start(mem, prog) != FX_OK)
        return;
    const struct fx_cmd *cmds = (const struct fx_cmd *)(mem + h->cmds_off);
    for (uint32_t i = h->prog_first[prog]; i < h->prog_first[prog] + h->prog_count[prog]; i++) {
        enum fx_status s = fx_kernel_exec(mem, &cmds[i]);
        if (s != FX_OK) {
            h->status = s;
            h->status_cmd = i;
            return;
        }
    }
}
