/*
 * exec_gemm.c - the executor's convolutions as GEMMs over rows (exec.c
 * runs the commands): the im2cols that gather A's rows (of x forward, of
 * dy backward, by phase at a stride), the GEMMs over those rows split
 * across the workers, requantizing the int32 sums in parallel, and the
 * layer's weights packed as B.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>

#define QUANT_PER_PART 65536 /* elements per requantization part */

/* ---- the im2cols ---- */

/* A 1x1, stride 1, unpadded convolution (and FC) reads x as the GEMM's A. */
int emu_direct(const struct fx_geom *g)
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
void emu_im2col(const int8_t *x, const struct fx_geom *g, int64_t r0, int64_t r1, int8_t *col)
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
void emu_im2col_errors(const int8_t *dy, const struct fx_geom *g, int64_t r0, int64_t r1,
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
/* Row r of the phase's pixels: its item, and where it is in the input. */
struct pixel {
    int n, iy, ix;
};

static struct pixel phase_pixel(const struct fx_geom *g, const struct phase *ph, int64_t r)
{
    const int64_t per_item = (int64_t)ph->ny * ph->nx;
    const int i = (int)(r % per_item);
    struct pixel px = {(int)(r / per_item), ph->py + g->s * (i / ph->nx),
                       ph->px + g->s * (i % ph->nx)};
    return px;
}

/* Row r's sums' place in dx's accumulators. */
static int32_t *phase_sums(int32_t *acc, const struct fx_geom *g, const struct phase *ph, int64_t r)
{
    const struct pixel px = phase_pixel(g, ph, r);
    return acc + (((size_t)px.n * g->ih + px.iy) * g->iw + px.ix) * g->ic;
}

/* Rows [r0, r1) of a phase's im2col of the errors: per pixel and tap of
 * the phase, the oc errors of the output pixel the tap came from, or
 * zeros past dy's edges. */
static void im2col_phase(const int8_t *dy, const struct fx_geom *g, const struct phase *ph,
                         int64_t r0, int64_t r1, int8_t *col)
{
    for (int64_t r = r0; r < r1; r++) {
        const struct pixel px = phase_pixel(g, ph, r);
        for (int t = 0; t < ph->ntaps; t++, col += g->oc) {
            const int ty = px.iy + g->p - ph->tap[t] / g->kw;
            const int tx = px.ix + g->p - ph->tap[t] % g->kw;
            const int oy = ty / g->s, ox = tx / g->s; /* exact: the phase's taps */
            const int hit = ty >= 0 && tx >= 0 && oy < g->oh && ox < g->ow;
            put_pixel(col, hit ? dy + (((size_t)px.n * g->oh + oy) * g->ow + ox) * g->oc : NULL,
                      g->oc);
        }
    }
}

/* The s x s phases of g's input pixels (those with any), their count;
 * 0 if a window is too large for PHASE_TAPS_MAX. */
int emu_phases(const struct fx_geom *g, struct phase *out)
{
    if (g->kh * g->kw > PHASE_TAPS_MAX)
        return 0;
    int count = 0;
    for (int py = 0; py < g->s && py < g->ih; py++)
        for (int px = 0; px < g->s && px < g->iw; px++) {
            struct phase *ph = &out[count++];
            ph->py = py, ph->px = px;
            ph->ny = (g->ih - py + g->s - 1) / g->s, ph->nx = (g->iw - px + g->s - 1) / g->s;
            ph->ntaps = 0;
            for (int ky = 0; ky < g->kh; ky++)
                for (int kx = 0; kx < g->kw; kx++)
                    if ((py + g->p - ky) % g->s == 0 && (px + g->p - kx) % g->s == 0)
                        ph->tap[ph->ntaps++] = ky * g->kw + kx;
        }
    return count;
}

/* ---- GEMMs over rows: forward and backward data ---- */

static void rows_part(void *ctx, int part, int worker)
{
    struct rows_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    int64_t r0 = (int64_t)part * j->per_part;
    int64_t r1 = r0 + j->per_part < j->rows ? r0 + j->per_part : j->rows;
    if (j->ph && !j->ph->ntaps) { /* no window reaches these pixels: their dx is 0 */
        for (int64_t r = r0; r < r1; r++)
            memset(phase_sums(j->acc, j->g, j->ph, r), 0, (size_t)j->n * sizeof *j->acc);
        tock(j->e, w, EEB_EMU_PHASE_REDUCE, &since);
        return;
    }
    const int8_t *a = j->src + r0 * j->k;
    if (j->fill || j->ph) {
        int8_t *col = emu_grow(&w->col, (size_t)(r1 - r0) * (size_t)j->k);
        if (!col) {
            w->oom = 1;
            return;
        }
        if (j->ph)
            im2col_phase(j->src, j->g, j->ph, r0, r1, col);
        else
            j->fill(j->src, j->g, r0, r1, col);
        a = col;
        tock(j->e, w, EEB_EMU_PHASE_IM2COL, &since);
    }
    int32_t *c = j->ph ? emu_grow(&w->c32, (size_t)(r1 - r0) * (size_t)j->n * sizeof *c)
                       : j->acc + r0 * j->n;
    if (!c) {
        w->oom = 1;
        return;
    }
    uint32_t most = 0;
    for (int v = 0; v < j->b->count; v++)
        if (eeb_emu_gemm(j->e->isa, (int)(r1 - r0), a, j->k, &j->b->b[v], c + v * j->b->cols, j->n,
                         &most)) {
            w->oom = 1;
            return;
        }
    if (j->wide_bias)
        for (int64_t i = 0; i < (r1 - r0) * j->n; i++)
            c[i] = fx_store32((int64_t)c[i] + j->wide_bias[i % j->n], &w->maxabs, &w->sat);
    else if (most > w->maxabs)
        w->maxabs = most;
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
    if (j->ph) {
        for (int64_t r = r0; r < r1; r++)
            memcpy(phase_sums(j->acc, j->g, j->ph, r), c + (r - r0) * j->n,
                   (size_t)j->n * sizeof *c);
        tock(j->e, w, EEB_EMU_PHASE_REDUCE, &since);
    }
}

/* Runs a GEMM-over-rows job: the largest |sum| and the saturations
 * join *maxabs and *sat.  -1 if memory ran out. */
int emu_gemm_rows(struct eeb_emu *e, struct rows_job *j, uint64_t *maxabs, uint32_t *sat)
{
    /* parts of EEB_EMU_ROWS_PER_PART rows, or of fewer when that leaves
     * workers idle: at batch 5, a 7x7 layer has 245 rows */
    int64_t per = (j->rows + 4 * e->threads - 1) / (4 * e->threads);
    j->per_part = per > EEB_EMU_ROWS_PER_PART ? EEB_EMU_ROWS_PER_PART : per < 40 ? 40 : (int)per;
    emu_reset_workers(e);
    emu_pool_run(e->pool, (int)((j->rows + j->per_part - 1) / j->per_part), rows_part, j);
    return emu_gather(e, maxabs, sat);
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
    uint64_t since = tick(q->e);
    uint64_t b = (uint64_t)part * QUANT_PER_PART;
    uint64_t end = b + QUANT_PER_PART < q->count ? b + QUANT_PER_PART : q->count;
    q->e->w[worker].sat += fx_requant_range(q->acc, b, end, q->s, q->r, q->out);
    tock(q->e, &q->e->w[worker], EEB_EMU_PHASE_REQUANT, &since);
}

void emu_requantize(struct eeb_emu *e, uint8_t *mem, const int32_t *acc, uint64_t count,
                    uint64_t maxabs, int e_acc, struct fx_rounding r, struct fx_tensor *t)
{
    struct quant_job q = {e, acc, count, fx_quant_shift(maxabs), r, (int8_t *)(mem + t->offset)};
    emu_reset_workers(e);
    emu_pool_run(e->pool, (int)((count + QUANT_PER_PART - 1) / QUANT_PER_PART), quant_part, &q);
    uint64_t unused = 0;
    uint32_t sat = 0;
    emu_gather(e, &unused, &sat);
    t->saturations += sat;
    fx_set_exp(t, e_acc + q.s);
}

int32_t *emu_acc_of(uint8_t *mem, const struct fx_conv *cv)
{
    return (int32_t *)(void *)(mem + cv->acc->offset);
}

const int8_t *emu_i8_of(const uint8_t *mem, const struct fx_tensor *t)
{
    return (const int8_t *)(mem + t->offset);
}

/* ---- packing the weights ---- */

static void pack_part(void *ctx, int part, int worker)
{
    struct pack_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    const struct fx_geom *g = j->g;
    const int n0 = part * j->b->cols, nb = j->n - n0 < j->b->cols ? j->n - n0 : j->b->cols;
    struct eeb_emu_packed_b *out = &j->b->b[part];
    int oom;
    if (!j->backward) {
        oom = eeb_emu_gemm_pack_b(j->e->isa, j->w8 + n0, j->k, nb, j->n, out);
        if (!oom && j->bias)
            eeb_emu_gemm_set_bias(out, j->bias + n0); /* in range: checked */
    } else {
        int8_t *wt = emu_grow(&w->col, (size_t)j->k * (size_t)nb);
        oom = !wt;
        for (int t = 0; wt && t < (j->ph ? j->ph->ntaps : g->kh * g->kw); t++) {
            int w_tap = j->ph ? j->ph->tap[t] : t / g->kw * g->kw + (g->kw - 1 - t % g->kw);
            for (int o0 = 0; o0 < g->oc; o0 += 16) /* 16 channels read at a time, a run each */
                for (int ci = n0; ci < n0 + nb; ci++)
                    for (int o = o0; o < o0 + 16 && o < g->oc; o++)
                        wt[((size_t)t * g->oc + o) * nb + (ci - n0)] =
                            j->w8[((size_t)w_tap * g->ic + ci) * g->oc + o];
        }
        oom = oom || eeb_emu_gemm_pack_b(j->e->isa, wt, j->k, nb, nb, out);
    }
    w->oom |= oom;
    tock(j->e, w, EEB_EMU_PHASE_PACK, &since);
}

void emu_free_blocks(struct blocks *b)
{
    for (int i = 0; b->b && i < b->count; i++)
        eeb_emu_gemm_free_b(&b->b[i]);
    free(b->b);
}

enum fx_status emu_pack_weights(struct eeb_emu *e, struct pack_job *j)
{
    size_t bytes = eeb_emu_gemm_packed_bytes(e->isa, j->k, j->n);
    int count = (int)((bytes + B_BLOCK_BYTES - 1) / B_BLOCK_BYTES);
    if (bytes >= 64 * 1024 && count < e->threads)
        count = e->threads;
    j->b->cols = ((j->n + count - 1) / count + EMU_NR - 1) / EMU_NR * EMU_NR;
    j->b->count = (j->n + j->b->cols - 1) / j->b->cols;
    j->b->b = calloc((size_t)j->b->count, sizeof *j->b->b);
    if (!j->b->b)
        return FX_NO_MEMORY;
    emu_reset_workers(e);
    emu_pool_run(e->pool, j->b->count, pack_part, j);
    uint64_t unused = 0;
    uint32_t sat = 0;
    return emu_gather(e, &unused, &sat) ? FX_NO_MEMORY : FX_OK;
}
