/*
 * exec_maxpool.c - the executor's max pools, forward and backward (exec.c
 * runs the commands), on the workers by items and channels with the
 * kernel's rules.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <stdlib.h>
#include <string.h>

/* ---- max pools ---- */

/*
 * The kernel's max pool, on parts of the batch's items and channels at
 * once (a channel of an item is its own pool), each window over a run of
 * channels together.  The rules are the kernel's: padding never wins;
 * backward, the error goes to the window's first maximum in scan order,
 * the windows' errors add up in the int32 scratch, and one
 * requantization (half up, at dy's exponent) makes dx.
 */
#define POOL_CH   64  /* channels a window goes over at a time, backward */
#define POOL_TAPS 255 /* window size the emulator pools itself (the kernel: any); a tap's */
                      /* number fits the uint8_t of the backward pass's winners */

struct pool_job {
    struct eeb_emu *e;
    struct fx_geom g;
    int cols; /* channels per part */
    const int8_t *x, *dy;
    int8_t *y;
    int32_t *acc;
};

/* The kernel's pool_geometry() for a max pool; 0 if inconsistent. */
static int maxpool_geometry(const uint8_t *mem, const struct fx_cmd *c, const struct fx_tensor *in,
                            const struct fx_tensor *out, struct fx_geom *g)
{
    g->n = (int)((const struct fx_header *)mem)->batch;
    g->ih = in->h, g->iw = in->w, g->ic = (int)in->c;
    g->oh = out->h, g->ow = out->w, g->oc = (int)out->c;
    g->kh = c->kh, g->kw = c->kw, g->s = c->stride, g->p = c->pad;
    return g->s > 0 && g->kh > 0 && g->kw > 0 && g->ic == g->oc && g->p < g->kh && g->p < g->kw &&
           g->ih + 2 * g->p >= g->kh && g->iw + 2 * g->p >= g->kw &&
           g->oh == (g->ih + 2 * g->p - g->kh) / g->s + 1 &&
           g->ow == (g->iw + 2 * g->p - g->kw) / g->s + 1 && in->batched && out->batched;
}

/* Item n's pixel (y, x) at channel c0. */
static size_t pool_at(const struct fx_geom *g, int n, int y, int x, int h, int w, int c0)
{
    return (((size_t)n * h + y) * w + x) * g->ic + c0;
}

static void maxpool_fwd_part(void *ctx, int part, int worker)
{
    struct pool_job *j = ctx;
    const struct fx_geom *g = &j->g;
    uint64_t since = tick(j->e);
    const int per_item = (g->ic + j->cols - 1) / j->cols, n = part / per_item;
    const int c0 = part % per_item * j->cols, nc = g->ic - c0 < j->cols ? g->ic - c0 : j->cols;
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++) {
            int8_t *m = j->y + pool_at(g, n, oy, ox, g->oh, g->ow, c0);
            for (int c = 0; c < nc; c++)
                m[c] = -128; /* below every int8 activation (-127..127) */
            for (int ky = 0; ky < g->kh; ky++)
                for (int kx = 0; kx < g->kw; kx++) {
                    int iy = oy * g->s - g->p + ky, ix = ox * g->s - g->p + kx;
                    if ((unsigned)iy >= (unsigned)g->ih || (unsigned)ix >= (unsigned)g->iw)
                        continue; /* padding never wins */
                    const int8_t *v = j->x + pool_at(g, n, iy, ix, g->ih, g->iw, c0);
                    for (int c = 0; c < nc; c++)
                        m[c] = v[c] > m[c] ? v[c] : m[c];
                }
        }
    tock(j->e, &j->e->w[worker], EEB_EMU_PHASE_POOL, &since);
}

/* The windows (k wide, at stride s, padding p) over input row or column
 * i: o * s - p <= i <= o * s - p + k - 1 for o in [*o0, *o1], of out. */
static void windows_over(int i, int k, int s, int p, int out, int *o0, int *o1)
{
    const int lo = i + p - k + 1, hi = (i + p) / s;
    *o0 = lo <= 0 ? 0 : (lo + s - 1) / s;
    *o1 = hi < out - 1 ? hi : out - 1;
}

/* Backward in two passes over a part's channels, POOL_CH at a time: each
 * window's winning tap per channel (ky * kw + kx of its first maximum),
 * then each input pixel's sum of the errors of the windows it won, added
 * up where they lie, written once with the largest |sum| kept.  (Adding
 * each window's errors into its winners' sums took a read and a write
 * per channel, a channel at a time, and a pass to clear them.) */
static void maxpool_bwd_part(void *ctx, int part, int worker)
{
    struct pool_job *j = ctx;
    const struct fx_geom *g = &j->g;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    const int per_item = (g->ic + j->cols - 1) / j->cols, n = part / per_item;
    const int first = part % per_item * j->cols;
    const int end = g->ic - first < j->cols ? g->ic : first + j->cols;
    uint8_t *winner = emu_grow(&w->col, (size_t)g->oh * g->ow * POOL_CH);
    if (!winner) {
        w->oom = 1;
        return;
    }
    uint32_t top = 0; /* the largest |sum|: a few errors each, no int32 clamps */
    /* a window's winners and their values, in locals: stored through the
     * buffer's byte pointer, which may alias anything, they kept gcc from
     * vectorizing the loop */
    uint8_t best[POOL_CH] = {0};
    int8_t most[POOL_CH] = {0};
    for (int c0 = first; c0 < end; c0 += POOL_CH) {
        const int nc = end - c0 < POOL_CH ? end - c0 : POOL_CH;
        for (int oy = 0; oy < g->oh; oy++)
            for (int ox = 0; ox < g->ow; ox++) {
                int seen = 0; /* taps inside the image so far (pad < window: one at least) */
                for (int ky = 0; ky < g->kh; ky++)
                    for (int kx = 0; kx < g->kw; kx++) {
                        int iy = oy * g->s - g->p + ky, ix = ox * g->s - g->p + kx;
                        if ((unsigned)iy >= (unsigned)g->ih || (unsigned)ix >= (unsigned)g->iw)
                            continue;
                        const int8_t *v = j->x + pool_at(g, n, iy, ix, g->ih, g->iw, c0);
                        const uint8_t tap = (uint8_t)(ky * g->kw + kx);
                        for (int c = 0; c < nc; c++) { /* strictly greater: the first wins */
                            int win = !seen || v[c] > most[c];
                            most[c] = win ? v[c] : most[c];
                            best[c] = win ? tap : best[c];
                        }
                        seen = 1;
                    }
                memcpy(winner + ((size_t)oy * g->ow + (size_t)ox) * POOL_CH, best, (size_t)nc);
            }
        for (int y = 0, oy0, oy1; y < g->ih; y++) {
            windows_over(y, g->kh, g->s, g->p, g->oh, &oy0, &oy1);
            for (int x = 0, ox0, ox1; x < g->iw; x++) {
                windows_over(x, g->kw, g->s, g->p, g->ow, &ox0, &ox1);
                int32_t sum[POOL_CH] = {0};
                for (int oy = oy0; oy <= oy1; oy++)
                    for (int ox = ox0; ox <= ox1; ox++) {
                        const uint8_t tap =
                            (uint8_t)((y - oy * g->s + g->p) * g->kw + (x - ox * g->s + g->p));
                        const uint8_t *won = winner + ((size_t)oy * g->ow + (size_t)ox) * POOL_CH;
                        const int8_t *d = j->dy + pool_at(g, n, oy, ox, g->oh, g->ow, c0);
                        for (int c = 0; c < nc; c++) /* no branch: the compiler vectorizes it */
                            sum[c] += (won[c] == tap) * d[c];
                    }
                int32_t *a = j->acc + pool_at(g, n, y, x, g->ih, g->iw, c0);
                for (int c = 0; c < nc; c++) {
                    a[c] = sum[c];
                    const uint32_t m = (uint32_t)(sum[c] < 0 ? -sum[c] : sum[c]);
                    top = m > top ? m : top;
                }
            }
        }
    }
    w->maxabs = top > w->maxabs ? top : w->maxabs;
    tock(j->e, w, EEB_EMU_PHASE_POOL, &since);
}

/* MAXPOOL_FWD x, y and MAXPOOL_BWD dy, dx, x, -, acc.  A command the
 * kernel refuses, or with a window of more than POOL_TAPS, goes to it. */
enum fx_status emu_maxpool(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    int fwd = c->op == FX_OP_MAXPOOL_FWD;
    struct fx_tensor *a = fx_tensor_at(mem, c->t[0]), *b = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tx = fwd ? a : fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    struct pool_job j = {.e = e};
    const struct fx_header *h = (const struct fx_header *)mem;
    uint64_t count = (uint64_t)b->h * b->w * b->c * (b->batched ? h->batch : 1);
    if (!maxpool_geometry(mem, c, fwd ? a : b, fwd ? b : a, &j.g) || c->kh * c->kw > POOL_TAPS ||
        (!fwd && (tx->h != b->h || tx->w != b->w || tx->c != b->c || tx->batched != b->batched ||
                  count > (uint64_t)ta->h * ta->w * ta->c)))
        return emu_serial(e, mem, c);
    const struct fx_geom *g = &j.g;
    int blocks =
        (4 * e->threads + g->n - 1) / g->n; /* parts per item, for every worker to have some */
    j.cols = (g->ic + blocks - 1) / blocks;
    j.cols = j.cols < 16 ? (g->ic < 16 ? g->ic : 16) : (j.cols + 15) / 16 * 16;
    int parts = g->n * ((g->ic + j.cols - 1) / j.cols);
    j.x = (const int8_t *)(mem + tx->offset);
    emu_reset_workers(e);
    if (fwd) {
        j.y = (int8_t *)(mem + b->offset);
        emu_pool_run(e->pool, parts, maxpool_fwd_part, &j);
        b->exp = a->exp;
        return FX_OK;
    }
    j.dy = (const int8_t *)(mem + a->offset);
    j.acc = (int32_t *)(void *)(mem + ta->offset);
    emu_pool_run(e->pool, parts, maxpool_bwd_part, &j);
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    emu_gather(e, &maxabs, &sat);
    b->saturations += sat;
    emu_requantize(e, mem, j.acc, count, maxabs, a->exp, fx_round_half_up(), b);
    return FX_OK;
}
