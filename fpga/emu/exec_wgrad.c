/*
 * exec_wgrad.c - the executor's backward weight pass (exec.c runs the
 * commands): dW summed exactly over the batch's output pixels, in chunks
 * gathered and multiplied by the workers, or as implicit GEMMs on AMX.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <stdlib.h>
#include <string.h>

/* ---- backward weight ---- */

/*
 * dW = col(x)^T x dy, summed over every output pixel of the batch, exactly
 * in any order: in int32 up to FX_MAX_REDUCTION products, past that in
 * int64 (the kernel's 48-bit accumulators), then stored shifted as the
 * kernel stores it (fx_reduction_shift).  It is computed transposed,
 * dW^T = dy^T x col(x), so that what gets transposed is dy (oc columns)
 * rather than the im2col rows (k*k*ic columns, 9x more for a 3x3 conv).
 *
 * The rows go in chunks of WEIGHT_CHUNK.  Per chunk, the workers first
 * gather its im2col rows and dy^T in parts of GATHER_ROWS rows; then each
 * part of `cols` columns of col(x) packs them and multiplies all of dy^T
 * by them, and stores (first chunk) or adds (later ones) the product
 * transposed into dW in the accumulators.  No two parts write the same
 * sums, so no worker keeps sums of its own to add up afterwards, and all
 * of them have columns to do however few the rows (late layers at small
 * batches have a few hundred).
 */
#define WEIGHT_CHUNK 4096 /* reduction rows per chunk */
#define GATHER_ROWS  256  /* rows per gathering part */

/* A chunk of the weight gradient's products: the first (stored) or not
 * (added), the last (shifted by fx_reduction_shift of all, and kept). */
struct chunk {
    int first, last, shift;
};

struct weight_job {
    struct eeb_emu *e;
    const struct fx_geom *g;
    int k;      /* bytes per im2col row */
    int64_t r0; /* the chunk's first row of all (output pixels over the batch) */
    int rc;     /* its rows */
    int cols;   /* columns of col(x) per part */
    struct chunk chunk;
    const int8_t *x;   /* the input, batched */
    const int8_t *dy;  /* the chunk's rows of dy */
    const int8_t *col; /* the chunk's im2col rows (x itself for a direct conv) */
    int8_t *gathered;  /* where they are gathered (unless direct) */
    int8_t *dyt;       /* dy^T: oc rows of rc */
    int32_t *acc;      /* dW, K rows of oc */
    int64_t *wide;     /* the sums so far, when they may leave int32 (shift > 0) */
};

/* Rows [r0, r1) of dy (oc bytes each) into dy^T (oc rows of rc bytes):
 * 16 x 16 blocks in registers, the edges byte by byte. */
static void transpose(const int8_t *dy, int oc, int8_t *dyt, int rc, int r0, int r1)
{
    int r = r0;
    for (; r + 16 <= r1; r += 16) {
        int o = 0;
        for (; o + 16 <= oc; o += 16)
            emu_transpose16(dy + (size_t)r * oc + o, (size_t)oc, dyt + (size_t)o * rc + r,
                            (size_t)rc);
        for (; o < oc; o++)
            for (int i = 0; i < 16; i++)
                dyt[(size_t)o * rc + r + i] = dy[(size_t)(r + i) * oc + o];
    }
    for (; r < r1; r++)
        for (int o = 0; o < oc; o++)
            dyt[(size_t)o * rc + r] = dy[(size_t)r * oc + o];
}

/* One sum of dW over a chunk's products, added to the chunks' before it
 * (in int32 while at most FX_MAX_REDUCTION products, else in int64), and
 * at the last chunk stored shifted as the kernel stores it. */
static inline void add_sum(const struct chunk *ch, int64_t v, int32_t *sum, int64_t *wide,
                           struct worker *w)
{
    if (!ch->first)
        v += wide ? *wide : *sum;
    if (ch->last)
        *sum = fx_store32(fx_shift_round(v, ch->shift), &w->maxabs, &w->sat);
    else if (wide)
        *wide = v;
    else
        *sum = (int32_t)v;
}

/* Each worker's sums of dy per output channel (the bias gradient),
 * zeroed; -1 if out of memory. */
static int zero_bias_sums(struct eeb_emu *e, int oc)
{
    for (int i = 0; i < e->threads; i++) {
        int64_t *bias = emu_grow(&e->w[i].sum, (size_t)oc * sizeof *bias);
        if (!bias)
            return -1;
        memset(bias, 0, (size_t)oc * sizeof *bias);
    }
    return 0;
}

/* Rows [r0, r1) of dy (oc bytes each) added into the worker's sums per
 * channel: row by row, a loop the compiler vectorizes. */
static void sum_bias(const int8_t *dy, int oc, int64_t r0, int64_t r1, struct worker *w)
{
    enum { CH = 256, ROWS = 65536 }; /* |a part's sum| <= 2^23: int32 */
    int64_t *bias = w->sum.p;
    for (int o0 = 0; o0 < oc; o0 += CH)
        for (int64_t p0 = r0; p0 < r1; p0 += ROWS) {
            const int n = oc - o0 < CH ? oc - o0 : CH;
            const int64_t p1 = r1 - p0 < ROWS ? r1 : p0 + ROWS;
            int32_t part[CH] = {0};
            for (int64_t r = p0; r < p1; r++)
                for (int o = 0; o < n; o++)
                    part[o] += dy[(size_t)r * oc + o0 + o];
            for (int o = 0; o < n; o++)
                bias[o0 + o] += part[o];
        }
}

/* Rows of the chunk into im2col (unless direct) and dy^T; their sums of
 * dy per channel (the bias gradient) into the worker's. */
static void weight_gather(void *ctx, int part, int worker)
{
    struct weight_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    const int oc = j->g->oc, rc = j->rc;
    const int r0 = part * GATHER_ROWS, r1 = r0 + GATHER_ROWS < rc ? r0 + GATHER_ROWS : rc;
    if (!emu_direct(j->g))
        emu_im2col(j->x, j->g, j->r0 + r0, j->r0 + r1, j->gathered + (size_t)r0 * j->k);
    transpose(j->dy, oc, j->dyt, rc, r0, r1);
    sum_bias(j->dy, oc, r0, r1, w);
    tock(j->e, w, EEB_EMU_PHASE_IM2COL, &since);
}

/* Columns [k0, k0 + cols) of dW^T for the chunk, stored or added into dW. */
static void weight_columns(void *ctx, int part, int worker)
{
    struct weight_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    const int oc = j->g->oc, rc = j->rc, K = j->k;
    const int k0 = part * j->cols, n = K - k0 < j->cols ? K - k0 : j->cols;
    int32_t *c = emu_grow(&w->c32, (size_t)oc * (size_t)n * sizeof *c);
    struct eeb_emu_packed_b pb;
    if (!c || eeb_emu_gemm_pack_b(j->e->isa, j->col + k0, rc, n, K, &pb)) {
        w->oom = 1;
        return;
    }
    tock(j->e, w, EEB_EMU_PHASE_PACK, &since);
    int oom = eeb_emu_gemm(j->e->isa, oc, j->dyt, rc, &pb, c, n, NULL);
    eeb_emu_gemm_free_b(&pb);
    if (oom) {
        w->oom = 1;
        return;
    }
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
    for (int k = 0; k < n; k++) {
        int32_t *row = j->acc + (size_t)(k0 + k) * oc;
        int64_t *wide = j->wide ? j->wide + (size_t)(k0 + k) * oc : NULL;
        for (int o = 0; o < oc; o++)
            add_sum(&j->chunk, c[(size_t)o * n + k], row + o, wide ? wide + o : NULL, w);
    }
    tock(j->e, w, EEB_EMU_PHASE_REDUCE, &since);
}

/* dW's sums done (the largest kept by the workers, and their sums of dy
 * per channel): both requantized as the kernel does. */
static enum fx_status weight_done(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmd,
                                  const struct fx_conv *cv, int shift)
{
    const struct fx_geom *g = &cv->g;
    const size_t nw = (size_t)g->kh * g->kw * g->ic * g->oc;
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    if (emu_gather(e, &maxabs, &sat))
        return FX_NO_MEMORY;
    cv->w->saturations += sat;
    emu_requantize(e, mem, emu_acc_of(mem, cv), nw, maxabs, cv->in->exp + cv->out->exp + shift,
                   fx_round_stochastic(mem, cmd->t[2]), cv->w);

    int32_t *bacc = emu_acc_of(mem, cv) + nw;
    maxabs = 0, sat = 0;
    for (int c = 0; c < g->oc; c++) {
        int64_t v = 0;
        for (int t = 0; t < e->threads; t++)
            v += ((const int64_t *)e->w[t].sum.p)[c];
        bacc[c] = fx_store32(v, &maxabs, &sat);
    }
    cv->b->saturations += sat;
    emu_requantize(e, mem, bacc, (uint64_t)g->oc, maxabs, cv->out->exp,
                   fx_round_stochastic(mem, cmd->t[3]), cv->b);
    return FX_OK;
}

/*
 * On AMX, a convolution whose input channels come in 16s takes its weight
 * gradient as an implicit GEMM (implicit.c): x laid out in planes and dy in
 * B tiles once, item by item on the workers; then each part, 32 rows of
 * dW (one tap, 32 input channels) by 32 columns, keeps its sums in the
 * tiles over WGRAD_CHUNK virtual pixels at a time.  No im2col, no packing
 * of it, and dW's sums leave the tiles once per chunk rather than once per
 * 64 rows of the reduction.
 */
/* Virtual pixels per chunk: a part's 32 planes and 32 columns of dy, 512
 * KiB, which the parts of the next taps read again (at stride 1 the same
 * planes, shifted) while they are in L2, where the same worker takes them. */
#define WGRAD_CHUNK 8192

struct wgrad_job {
    struct eeb_emu *e;
    const struct emu_implicit *im;
    const int8_t *x, *dy;
    int8_t *planes, *packed;
    int64_t q0, q1; /* the chunk's virtual pixels */
    struct chunk chunk;
    int32_t *acc;
    int64_t *wide;
};

/* Item n's pixels into the planes and its errors into B tiles. */
static void wgrad_layout(void *ctx, int n, int worker)
{
    struct wgrad_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    const struct fx_geom *g = &j->im->g;
    uint64_t since = tick(j->e);
    emu_wgrad_planes(j->im, j->x, n, j->planes);
    tock(j->e, w, EEB_EMU_PHASE_IM2COL, &since);
    emu_wgrad_pack_dy(j->im, j->dy, n, j->packed);
    const int64_t pixels = (int64_t)g->oh * g->ow;
    sum_bias(j->dy, g->oc, n * pixels, (n + 1) * pixels, w);
    tock(j->e, w, EEB_EMU_PHASE_PACK, &since);
}

/* Part (c32, o32, tap), the tap varying fastest so that the part after
 * reads the same planes and dy from L2: its sums over the chunk. */
static void wgrad_part(void *ctx, int part, int worker)
{
    struct wgrad_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    const struct emu_implicit *wg = j->im;
    const struct fx_geom *g = &wg->g;
    uint64_t since = tick(j->e);
    const int taps = g->kh * g->kw, tap = part % taps;
    const int o32 = part / taps % (wg->ocpad / 32), c32 = part / taps / (wg->ocpad / 32);
    int offset;
    const size_t plane0 = (size_t)emu_implicit_tap(wg, tap, &offset) * (size_t)wg->icpad;
    const size_t step = (size_t)wg->ocpad / 16 * 1024; /* packed bytes per 64 pixels */
    int32_t sums[32][32] __attribute__((aligned(64)));
    emu_wgrad_amx(j->planes + (plane0 + (size_t)c32 * 32) * wg->plane + offset + j->q0, wg->plane,
                  j->packed + (size_t)(j->q0 / 64) * step + (size_t)o32 * 2048, step,
                  (int)((j->q1 - j->q0) / 64), sums);
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
    const int rows = g->ic - c32 * 32 < 32 ? g->ic - c32 * 32 : 32;
    const int cols = g->oc - o32 * 32 < 32 ? g->oc - o32 * 32 : 32;
    for (int r0 = 0, len; r0 < rows; r0 += len) {
        /* the run of rows from r0 that are consecutive rows of dW */
        const int64_t row = emu_wgrad_row(wg, tap, c32 * 32 + r0);
        len = 1;
        if (row < 0) /* a tap past the window (space to depth) */
            continue;
        while (r0 + len < rows && emu_wgrad_row(wg, tap, c32 * 32 + r0 + len) == row + len)
            len++;
        const size_t at = (size_t)row * g->oc + (size_t)o32 * 32;
        if (!j->wide) { /* no shift: at most FX_MAX_REDUCTION products, |sum| <= 2^30 */
            const uint32_t most = emu_wgrad_amx_add((const int32_t(*)[32])sums[r0], len, cols,
                                                    j->chunk.first, j->acc + at, (size_t)g->oc);
            if (j->chunk.last && most > w->maxabs)
                w->maxabs = most;
        } else
            for (int r = 0; r < len; r++)
                for (int c = 0; c < cols; c++) {
                    const size_t i = at + (size_t)r * g->oc + (size_t)c;
                    add_sum(&j->chunk, sums[r0 + r][c], j->acc + i, j->wide + i, w);
                }
    }
    tock(j->e, w, EEB_EMU_PHASE_REDUCE, &since);
}

static enum fx_status conv_bwd_weight_tiles(struct eeb_emu *e, uint8_t *mem,
                                            const struct fx_cmd *cmd, const struct fx_conv *cv,
                                            const struct emu_implicit *wg)
{
    const struct fx_geom *g = &cv->g;
    const int64_t rows = (int64_t)g->n * g->oh * g->ow;
    const int shift = fx_reduction_shift((uint64_t)rows, FX_MAX_REDUCTION);
    const size_t planes = emu_wgrad_planes_bytes(wg);
    int8_t *buf = emu_grow(&e->gathered, planes + emu_wgrad_dy_bytes(wg));
    const size_t nw = (size_t)g->kh * g->kw * g->ic * g->oc;
    int64_t *wide = shift ? emu_grow(&e->wide, nw * sizeof *wide) : NULL;
    if (!buf || (shift && !wide) || zero_bias_sums(e, g->oc))
        return FX_NO_MEMORY;
    struct wgrad_job j = {.e = e,
                          .im = wg,
                          .x = emu_i8_of(mem, cv->in),
                          .dy = emu_i8_of(mem, cv->out),
                          .planes = buf,
                          .packed = buf + planes,
                          .chunk.shift = shift,
                          .acc = emu_acc_of(mem, cv),
                          .wide = wide};
    emu_reset_workers(e);
    emu_pool_run(e->pool, g->n, wgrad_layout, &j);
    const int parts = wg->g.kh * wg->g.kw * (wg->icpad / 32) * (wg->ocpad / 32);
    for (j.q0 = 0; j.q0 < wg->qpad; j.q0 = j.q1) {
        j.q1 = wg->qpad - j.q0 < WGRAD_CHUNK ? wg->qpad : j.q0 + WGRAD_CHUNK;
        j.chunk.first = j.q0 == 0;
        j.chunk.last = j.q1 == wg->qpad;
        emu_pool_run(e->pool, parts, wgrad_part, &j);
    }
    return weight_done(e, mem, cmd, cv, shift);
}

enum fx_status emu_conv_bwd_weight(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmd,
                                   const struct fx_conv *cv)
{
    const struct fx_geom *g = &cv->g;
    struct emu_implicit wg;
    if (e->isa == EEB_EMU_ISA_AMX &&
        ((g->ic % 16 == 0 && !emu_implicit_plan(g, &wg)) || !emu_implicit_s2d_plan(g, &wg)))
        return conv_bwd_weight_tiles(e, mem, cmd, cv, &wg);
    const int K = g->kh * g->kw * g->ic;
    const int64_t rows = (int64_t)g->n * g->oh * g->ow;
    const size_t nw = (size_t)K * g->oc;
    const int chunk = rows < WEIGHT_CHUNK ? (int)rows : WEIGHT_CHUNK;
    const size_t col_bytes = emu_direct(g) ? 0 : (size_t)chunk * (size_t)K;
    const int shift = fx_reduction_shift((uint64_t)rows, FX_MAX_REDUCTION);
    int8_t *gathered = emu_grow(&e->gathered, col_bytes + (size_t)chunk * (size_t)g->oc);
    int64_t *wide = shift ? emu_grow(&e->wide, nw * sizeof *wide) : NULL;
    if (!gathered || (shift && !wide))
        return FX_NO_MEMORY;
    if (zero_bias_sums(e, g->oc))
        return FX_NO_MEMORY;
    /* columns per part: enough parts to keep every worker busy to the end,
     * in whole panels of the packed B */
    int parts = 4 * e->threads, cols = (K + parts - 1) / parts;
    cols = cols < EMU_NR ? EMU_NR : cols > 256 ? 256 : (cols + EMU_NR - 1) / EMU_NR * EMU_NR;
    struct weight_job j = {.e = e,
                           .g = g,
                           .k = K,
                           .cols = cols,
                           .x = emu_i8_of(mem, cv->in),
                           .chunk.shift = shift,
                           .gathered = gathered,
                           .dyt = gathered + col_bytes,
                           .acc = emu_acc_of(mem, cv),
                           .wide = wide};
    emu_reset_workers(e);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        j.r0 = r0;
        j.rc = rows - r0 < chunk ? (int)(rows - r0) : chunk;
        j.chunk.first = r0 == 0;
        j.chunk.last = r0 + j.rc == rows;
        j.dy = emu_i8_of(mem, cv->out) + r0 * g->oc;
        j.col = emu_direct(g) ? j.x + r0 * K : gathered;
        emu_pool_run(e->pool, (j.rc + GATHER_ROWS - 1) / GATHER_ROWS, weight_gather, &j);
        emu_pool_run(e->pool, (K + cols - 1) / cols, weight_columns, &j);
    }
    return weight_done(e, mem, cmd, cv, shift);
}
