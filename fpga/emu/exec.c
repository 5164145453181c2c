/*
 * exec.c - the emulator's executor of the accelerator's command stream.
 *
 * It runs the same image and programs as the kernel C.  Convolution and FC
 * commands, where the time goes, become im2col + int8 GEMM (gemm.c) split
 * across the worker pool; the other commands are cheap and run the
 * kernel's own code (fx_kernel_exec).  The arithmetic is the kernel's: the
 * same int32 sums (exact, so their order is free), the same max over the
 * tensor, the same requantization by element index, so the image after a
 * program is identical byte for byte whatever the thread count.
 *
 * Sections: scratch buffers; the im2cols; GEMMs over rows; requantization
 * in parallel; forward; backward data; backward weight; element-wise
 * operations; the run loop.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>

#define REDUCE_PER_PART 2048  /* reduction rows per weight-gradient part */
#define QUANT_PER_PART  65536 /* elements per requantization part */
#define EWISE_PER_PART  65536 /* elements per element-wise part */

/* ---- scratch buffers ---- */

struct buf {
    void *p;
    size_t cap;
};

static void *grow(struct buf *b, size_t bytes)
{
    if (bytes > b->cap) {
        free(b->p);
        b->p = aligned_alloc(64, (bytes + 63) / 64 * 64);
        b->cap = b->p ? bytes : 0;
    }
    return b->p;
}

/* What each worker owns, and the results it gathers over its parts. */
struct worker {
    struct buf col, c32, sum;
    uint64_t maxabs;
    uint32_t sat;
    int oom;
};

struct eeb_emu {
    enum eeb_emu_isa isa;
    struct emu_pool *pool;
    int threads;
    struct worker *w;
    struct buf wt, bias;
};

struct eeb_emu *eeb_emu_new(int threads, enum eeb_emu_isa isa)
{
    struct eeb_emu *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->isa = isa;
    e->pool = emu_pool_new(threads);
    e->threads = e->pool ? emu_pool_threads(e->pool) : 0;
    e->w = calloc((size_t)(e->threads ? e->threads : 1), sizeof *e->w);
    if (!e->pool || !e->w) {
        eeb_emu_free(e);
        return NULL;
    }
    return e;
}

void eeb_emu_free(struct eeb_emu *e)
{
    if (!e)
        return;
    emu_pool_free(e->pool);
    for (int i = 0; e->w && i < e->threads; i++)
        free(e->w[i].col.p), free(e->w[i].c32.p), free(e->w[i].sum.p);
    free(e->w);
    free(e->wt.p), free(e->bias.p);
    free(e);
}

int eeb_emu_threads(const struct eeb_emu *e)
{
    return e->threads;
}

enum eeb_emu_isa eeb_emu_isa(const struct eeb_emu *e)
{
    return e->isa;
}

static void reset_workers(struct eeb_emu *e)
{
    for (int i = 0; i < e->threads; i++)
        e->w[i].maxabs = 0, e->w[i].sat = 0;
}

/* Max and saturations over all workers; -1 if one ran out of memory. */
static int gather(struct eeb_emu *e, uint64_t *maxabs, uint32_t *sat)
{
    int oom = 0;
    for (int i = 0; i < e->threads; i++) {
        if (e->w[i].maxabs > *maxabs)
            *maxabs = e->w[i].maxabs;
        *sat += e->w[i].sat;
        oom |= e->w[i].oom;
        e->w[i].oom = 0;
    }
    return oom ? -1 : 0;
}

/* ---- the im2cols ---- */

/* A 1x1, stride 1, unpadded convolution (and FC) reads x as the GEMM's A. */
static int direct(const struct fx_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->s == 1 && g->p == 0;
}

/* One pixel's channels into an im2col row, or zeros (src NULL).  A call
 * to memcpy per pixel cost more than the copy: channel counts are short
 * and usually multiples of 16. */
static inline void put_pixel(int8_t *dst, const int8_t *src, int channels)
{
    int i = 0;
    if (src) {
        for (; i + 16 <= channels; i += 16)
            _mm_storeu_si128((__m128i *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
        for (; i < channels; i++)
            dst[i] = src[i];
    } else {
        for (; i + 16 <= channels; i += 16)
            _mm_storeu_si128((__m128i *)(dst + i), _mm_setzero_si128());
        for (; i < channels; i++)
            dst[i] = 0;
    }
}

/* Rows [r0, r1) of im2col(x): row r is output pixel r, K = kh*kw*ic bytes
 * in (ky, kx, ci) order, zeros where the window hangs over the edge.  A
 * window row inside the image is kw adjacent pixels: one copy. */
static void im2col(const int8_t *x, const struct fx_geom *g, int64_t r0, int64_t r1, int8_t *col)
{
    const int64_t per_item = (int64_t)g->oh * g->ow;
    const int span = g->kw * g->ic;
    for (int64_t r = r0; r < r1; r++) {
        int n = (int)(r / per_item), o = (int)(r % per_item), oy = o / g->ow, ox = o % g->ow;
        int ix0 = ox * g->s - g->p;
        for (int ky = 0; ky < g->kh; ky++, col += span) {
            int iy = oy * g->s - g->p + ky;
            const int8_t *row =
                iy >= 0 && iy < g->ih ? x + ((size_t)n * g->ih + iy) * g->iw * g->ic : NULL;
            if (!row || (ix0 >= 0 && ix0 + g->kw <= g->iw)) {
                put_pixel(col, row ? row + (size_t)ix0 * g->ic : NULL, span);
                continue;
            }
            for (int kx = 0; kx < g->kw; kx++) {
                int ix = ix0 + kx;
                put_pixel(col + kx * g->ic, ix >= 0 && ix < g->iw ? row + (size_t)ix * g->ic : NULL,
                          g->ic);
            }
        }
    }
}

/* Rows [r0, r1) of the errors' im2col, for the backward data pass as a
 * GEMM: row r is input pixel r and holds, for each tap, the oc errors of
 * the output pixel whose window put that tap on it, or zeros where no
 * window did (the edges, and the skipped pixels of a stride).  Taps go in
 * (ky, kw-1-kx) order, so that at stride 1 a tap row is kw adjacent output
 * pixels: one copy.  Its product with W rearranged the same way (oc rows
 * of ic per tap) is dx, summed in int32 with no scatter. */
static void im2col_errors(const int8_t *dy, const struct fx_geom *g, int64_t r0, int64_t r1,
                          int8_t *col)
{
    const int64_t per_item = (int64_t)g->ih * g->iw;
    const int span = g->kw * g->oc;
    for (int64_t r = r0; r < r1; r++) {
        int n = (int)(r / per_item), i = (int)(r % per_item), iy = i / g->iw, ix = i % g->iw;
        for (int ky = 0; ky < g->kh; ky++, col += span) {
            int ty = iy + g->p - ky, oy = ty / g->s;
            const int8_t *row = ty >= 0 && ty % g->s == 0 && oy < g->oh
                                    ? dy + ((size_t)n * g->oh + oy) * g->ow * g->oc
                                    : NULL;
            int ox0 = ix + g->p - (g->kw - 1); /* the output pixel of the first tap, stride 1 */
            if (!row || (g->s == 1 && ox0 >= 0 && ox0 + g->kw <= g->ow)) {
                put_pixel(col, row ? row + (size_t)ox0 * g->oc : NULL, span);
                continue;
            }
            for (int t = 0; t < g->kw; t++) {
                int tx = ix + g->p - (g->kw - 1 - t), ox = tx / g->s;
                int hit = tx >= 0 && tx % g->s == 0 && ox < g->ow;
                put_pixel(col + t * g->oc, hit ? row + (size_t)ox * g->oc : NULL, g->oc);
            }
        }
    }
}

/* ---- GEMMs over rows: forward and backward data ---- */

typedef void fill_fn(const int8_t *src, const struct fx_geom *g, int64_t r0, int64_t r1,
                     int8_t *col);

/* Rows of A gathered by fill (or read in place when fill is NULL) times
 * the packed B, into the accumulators; the largest |sum| kept. */
struct rows_job {
    struct eeb_emu *e;
    const struct fx_geom *g;
    fill_fn *fill;
    const int8_t *src; /* x (forward) or dy (backward data) */
    int k, n;          /* bytes per row of A, sums per row of C */
    int64_t rows;
    const struct eeb_emu_packed_b *pb;
    int32_t *acc;
    const int64_t *wide_bias; /* biases too wide for the GEMM to add (rare) */
};

static void rows_part(void *ctx, int part, int worker)
{
    struct rows_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    int64_t r0 = (int64_t)part * EEB_EMU_ROWS_PER_PART;
    int64_t r1 = r0 + EEB_EMU_ROWS_PER_PART < j->rows ? r0 + EEB_EMU_ROWS_PER_PART : j->rows;
    const int8_t *a = j->src + r0 * j->k;
    if (j->fill) {
        int8_t *col = grow(&w->col, (size_t)(r1 - r0) * (size_t)j->k);
        if (!col) {
            w->oom = 1;
            return;
        }
        j->fill(j->src, j->g, r0, r1, col);
        a = col;
    }
    int32_t *c = j->acc + r0 * j->n;
    uint32_t most = 0;
    if (eeb_emu_gemm(j->e->isa, (int)(r1 - r0), a, j->k, j->pb, c, j->n, &most)) {
        w->oom = 1;
        return;
    }
    if (j->wide_bias)
        for (int64_t i = 0; i < (r1 - r0) * j->n; i++)
            c[i] = fx_store32((int64_t)c[i] + j->wide_bias[i % j->n], &w->maxabs, &w->sat);
    else if (most > w->maxabs)
        w->maxabs = most;
}

/* ---- requantization in parallel ---- */

struct quant_job {
    struct eeb_emu *e;
    const int32_t *acc;
    uint64_t count;
    int s;
    struct fx_rounding r;
    int8_t *out;
};

static void quant_part(void *ctx, int part, int worker)
{
    struct quant_job *q = ctx;
    uint64_t b = (uint64_t)part * QUANT_PER_PART;
    uint64_t end = b + QUANT_PER_PART < q->count ? b + QUANT_PER_PART : q->count;
    q->e->w[worker].sat += fx_requant_range(q->acc, b, end, q->s, q->r, q->out);
}

static void requantize(struct eeb_emu *e, uint8_t *mem, const int32_t *acc, uint64_t count,
                       uint64_t maxabs, int e_acc, struct fx_rounding r, struct fx_tensor *t)
{
    struct quant_job q = {e, acc, count, fx_quant_shift(maxabs), r, (int8_t *)(mem + t->offset)};
    reset_workers(e);
    emu_pool_run(e->pool, (int)((count + QUANT_PER_PART - 1) / QUANT_PER_PART), quant_part, &q);
    uint64_t unused = 0;
    uint32_t sat = 0;
    gather(e, &unused, &sat);
    t->saturations += sat;
    fx_set_exp(t, e_acc + q.s);
}

static int32_t *acc_of(uint8_t *mem, const struct fx_conv *cv)
{
    return (int32_t *)(void *)(mem + cv->acc->offset);
}

static const int8_t *i8_of(const uint8_t *mem, const struct fx_tensor *t)
{
    return (const int8_t *)(mem + t->offset);
}

/* ---- forward ---- */

/* Runs a GEMM-over-rows job, then requantizes its sums (at exponent
 * e_acc) into t, rounding half up. */
static enum fx_status run_rows(struct eeb_emu *e, uint8_t *mem, struct rows_job *j, int e_acc,
                               struct fx_tensor *t)
{
    reset_workers(e);
    emu_pool_run(e->pool, (int)((j->rows + EEB_EMU_ROWS_PER_PART - 1) / EEB_EMU_ROWS_PER_PART),
                 rows_part, j);
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    if (gather(e, &maxabs, &sat))
        return FX_NO_MEMORY;
    t->saturations += sat;
    requantize(e, mem, j->acc, (uint64_t)j->rows * (uint64_t)j->n, maxabs, e_acc,
               fx_round_half_up(), t);
    return FX_OK;
}

static enum fx_status conv_fwd(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv)
{
    const struct fx_geom *g = &cv->g;
    int k = g->kh * g->kw * g->ic;
    int e_acc = cv->in->exp + cv->w->exp;
    int64_t *bias = grow(&e->bias, (size_t)g->oc * sizeof *bias);
    struct eeb_emu_packed_b pb;
    if (!bias || eeb_emu_gemm_pack_b(i8_of(mem, cv->w), k, g->oc, g->oc, &pb))
        return FX_NO_MEMORY;
    const int32_t *b24 = (const int32_t *)(const void *)(mem + cv->b->offset);
    for (int c = 0; c < g->oc; c++)
        bias[c] = fx_align(b24[c], cv->b->exp, e_acc);
    struct rows_job j = {.e = e,
                         .g = g,
                         .fill = direct(g) ? NULL : im2col,
                         .src = i8_of(mem, cv->in),
                         .k = k,
                         .n = g->oc,
                         .rows = (int64_t)g->n * g->oh * g->ow,
                         .pb = &pb,
                         .acc = acc_of(mem, cv)};
    if (eeb_emu_gemm_set_bias(&pb, bias))
        j.wide_bias = bias;
    enum fx_status st = run_rows(e, mem, &j, e_acc, cv->out);
    eeb_emu_gemm_free_b(&pb);
    return st;
}

/* ---- backward data ---- */

static enum fx_status conv_bwd_data(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv)
{
    const struct fx_geom *g = &cv->g;
    int taps = g->kh * g->kw, K = taps * g->oc;
    const int8_t *w8 = i8_of(mem, cv->w);
    int8_t *wt = grow(&e->wt, (size_t)K * (size_t)g->ic);
    if (!wt)
        return FX_NO_MEMORY;
    for (int t = 0; t < taps; t++) { /* per tap, W^T (oc rows of ic), in im2col_errors' order */
        int w_tap = t / g->kw * g->kw + (g->kw - 1 - t % g->kw);
        for (int ci = 0; ci < g->ic; ci++)
            for (int o = 0; o < g->oc; o++)
                wt[((size_t)t * g->oc + o) * g->ic + ci] =
                    w8[((size_t)w_tap * g->ic + ci) * g->oc + o];
    }
    struct eeb_emu_packed_b pb;
    if (eeb_emu_gemm_pack_b(wt, K, g->ic, g->ic, &pb))
        return FX_NO_MEMORY;
    struct rows_job j = {.e = e,
                         .g = g,
                         .fill = direct(g) ? NULL : im2col_errors,
                         .src = i8_of(mem, cv->out),
                         .k = K,
                         .n = g->ic,
                         .rows = (int64_t)g->n * g->ih * g->iw,
                         .pb = &pb,
                         .acc = acc_of(mem, cv)};
    enum fx_status st = run_rows(e, mem, &j, cv->out->exp + cv->w->exp, cv->in);
    eeb_emu_gemm_free_b(&pb);
    return st;
}

/* ---- backward weight ---- */

/* One chunk of the reduction over output pixels, computed transposed:
 * dW^T += dy^T x col(x), so that what gets transposed is the chunk of dy
 * (oc columns) rather than the im2col rows (k*k*ic columns, 9x more for
 * a 3x3 conv); the sums are the same integers. */
struct weight_job {
    struct eeb_emu *e;
    const struct fx_geom *g;
    int k;        /* bytes per im2col row */
    int64_t rows; /* output pixels over the batch */
    const int8_t *x, *dy;
};

static void weight_part(void *ctx, int part, int worker)
{
    struct weight_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    const struct fx_geom *g = j->g;
    int K = j->k, oc = g->oc;
    int64_t r0 = (int64_t)part * REDUCE_PER_PART;
    int64_t r1 = r0 + REDUCE_PER_PART < j->rows ? r0 + REDUCE_PER_PART : j->rows;
    int rc = (int)(r1 - r0);
    int8_t *col = grow(&w->col, (size_t)rc * ((size_t)K + (size_t)oc));
    int32_t *c = grow(&w->c32, (size_t)K * (size_t)oc * sizeof *c);
    int32_t *sum = w->sum.p;
    if (!col || !c) {
        w->oom = 1;
        return;
    }
    int8_t *dyt = col + (size_t)rc * K;
    const int8_t *rows = j->x + r0 * K;
    if (!direct(g)) {
        im2col(j->x, g, r0, r1, col);
        rows = col;
    }
    const int8_t *dy = j->dy + r0 * oc;
    for (int b = 0; b < rc; b += 64) /* in blocks of rows, so each write is a run */
        for (int o = 0; o < oc; o++)
            for (int r = b; r < b + 64 && r < rc; r++)
                dyt[(size_t)o * rc + r] = dy[(size_t)r * oc + o];
    struct eeb_emu_packed_b pb;
    if (eeb_emu_gemm_pack_b(rows, rc, K, K, &pb) ||
        eeb_emu_gemm(j->e->isa, oc, dyt, rc, &pb, c, K, NULL)) {
        eeb_emu_gemm_free_b(&pb);
        w->oom = 1;
        return;
    }
    eeb_emu_gemm_free_b(&pb);
    for (size_t i = 0; i < (size_t)K * oc; i++)
        sum[i] += c[i];
    for (int o = 0; o < oc; o++) { /* the bias gradient: the rows of dy^T summed */
        int32_t bias = 0;
        for (int r = 0; r < rc; r++)
            bias += dyt[(size_t)o * rc + r];
        sum[(size_t)K * oc + o] += bias;
    }
}

static enum fx_status conv_bwd_weight(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmd,
                                      const struct fx_conv *cv)
{
    const struct fx_geom *g = &cv->g;
    int K = g->kh * g->kw * g->ic;
    size_t nw = (size_t)K * g->oc, nsum = nw + (size_t)g->oc; /* dW^T, then db */
    for (int i = 0; i < e->threads; i++) {
        int32_t *s = grow(&e->w[i].sum, nsum * sizeof *s);
        if (!s)
            return FX_NO_MEMORY;
        memset(s, 0, nsum * sizeof *s);
    }
    struct weight_job j = {
        e, g, K, (int64_t)g->n * g->oh * g->ow, i8_of(mem, cv->in), i8_of(mem, cv->out)};
    int32_t *acc = acc_of(mem, cv);
    reset_workers(e);
    emu_pool_run(e->pool, (int)((j.rows + REDUCE_PER_PART - 1) / REDUCE_PER_PART), weight_part, &j);
    uint64_t unused = 0;
    uint32_t sat = 0;
    if (gather(e, &unused, &sat))
        return FX_NO_MEMORY;

    uint64_t maxabs = 0;
    sat = 0;
    for (int k0 = 0; k0 < K; k0 += 64) /* dW from the workers' dW^T, in blocks of k */
        for (int c = 0; c < g->oc; c++)
            for (int k = k0; k < k0 + 64 && k < K; k++) {
                int64_t v = 0;
                for (int t = 0; t < e->threads; t++)
                    v += ((const int32_t *)e->w[t].sum.p)[(size_t)c * K + k];
                acc[(size_t)k * g->oc + c] = fx_store32(v, &maxabs, &sat);
            }
    cv->w->saturations += sat;
    requantize(e, mem, acc, nw, maxabs, cv->in->exp + cv->out->exp,
               fx_round_stochastic(mem, cmd->t[2]), cv->w);

    int32_t *bacc = acc + nw;
    maxabs = 0, sat = 0;
    for (int c = 0; c < g->oc; c++) {
        int64_t v = 0;
        for (int t = 0; t < e->threads; t++)
            v += ((const int32_t *)e->w[t].sum.p)[nw + (size_t)c];
        bacc[c] = fx_store32(v, &maxabs, &sat);
    }
    cv->b->saturations += sat;
    requantize(e, mem, bacc, (uint64_t)g->oc, maxabs, cv->out->exp,
               fx_round_stochastic(mem, cmd->t[3]), cv->b);
    return FX_OK;
}

/* ---- element-wise operations ---- */

struct ewise_job {
    struct eeb_emu *e;
    struct fx_ewise ew;
};

static void ewise_part(void *ctx, int part, int worker)
{
    struct ewise_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t b = (uint64_t)part * EWISE_PER_PART;
    uint64_t end = b + EWISE_PER_PART < j->ew.count ? b + EWISE_PER_PART : j->ew.count;
    fx_ewise_range(&j->ew, b, end, &w->maxabs);
}

/* ReLU and residual add: the kernel's loop, over parts on the pool. */
static enum fx_status ewise(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    struct ewise_job j = {.e = e};
    enum fx_status st = fx_ewise_operands(mem, c, &j.ew);
    if (st != FX_OK)
        return st;
    reset_workers(e);
    emu_pool_run(e->pool, (int)((j.ew.count + EWISE_PER_PART - 1) / EWISE_PER_PART), ewise_part,
                 &j);
    uint64_t maxabs = 0;
    uint32_t unused = 0;
    gather(e, &maxabs, &unused);
    if (c->op == FX_OP_ADD)
        requantize(e, mem, j.ew.pacc, j.ew.count, maxabs, j.ew.e, fx_round_half_up(), j.ew.y);
    else
        j.ew.y->exp = (int8_t)j.ew.e;
    return FX_OK;
}

/* ---- the run loop ---- */

static enum fx_status exec(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    switch ((enum fx_op)c->op) {
    case FX_OP_CONV_FWD:
    case FX_OP_FC_FWD:
    case FX_OP_CONV_BWD_DATA:
    case FX_OP_FC_BWD_DATA:
    case FX_OP_CONV_BWD_WEIGHT:
    case FX_OP_FC_BWD_WEIGHT: break;
    case FX_OP_RELU_FWD:
    case FX_OP_RELU_BWD:
    case FX_OP_ADD: return ewise(e, mem, c);
    default: return fx_kernel_exec(mem, c);
    }
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    switch ((enum fx_op)c->op) {
    case FX_OP_CONV_FWD:
    case FX_OP_FC_FWD: return conv_fwd(e, mem, &cv);
    case FX_OP_CONV_BWD_DATA:
    case FX_OP_FC_BWD_DATA: return conv_bwd_data(e, mem, &cv);
    default: return conv_bwd_weight(e, mem, c, &cv);
    }
}

int eeb_emu_run(struct eeb_emu *e, uint8_t *mem, uint32_t prog)
{
    struct fx_header *h = (struct fx_header *)mem;
    if (fx_program_start(mem, prog) != FX_OK)
        return -1;
    const struct fx_cmd *cmds = (const struct fx_cmd *)(mem + h->cmds_off);
    for (uint32_t i = h->prog_first[prog]; i < h->prog_first[prog] + h->prog_count[prog]; i++) {
        enum fx_status s = exec(e, mem, &cmds[i]);
        if (s != FX_OK) {
            h->status = s;
            h->status_cmd = i;
            return -1;
        }
    }
    return 0;
}
