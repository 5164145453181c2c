/*
 * exec.c - the emulator's executor of the accelerator's command stream.
 *
 * It runs the same image and programs as the kernel C.  Convolution and FC
 * commands, where the time goes, become im2col + int8 GEMM (gemm.c) split
 * across the worker pool (on AMX, most of them implicit GEMMs with no
 * im2col: implicit.c), or, where that measured faster, oneDNN's
 * convolutions (onednn.c); max pools run on the pool by items and channels;
 * the weight updates run the kernel's own SGD and QUANT_W, one layer per
 * worker at a time; the other commands are cheap and run the kernel's own
 * code (fx_kernel_exec) on one core.  The arithmetic is the kernel's: the
 * same int32 sums (exact, so their order is free), the same max over the
 * tensor, the same requantization by element index, so the image after a
 * program is identical byte for byte whatever the thread count.  When
 * asked (eeb_emu_profile_start), the emulator times its phases.
 *
 * Sections: scratch buffers; profiling; the im2cols; GEMMs over rows;
 * requantization in parallel; packing the weights; forward (eeb's
 * implicit GEMMs); oneDNN's convolutions, and the forward pass; backward data;
 * backward weight; element-wise operations; commands on one core; max
 * pools; the weight updates; the run loop.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QUANT_PER_PART 65536 /* elements per requantization part */
#define EWISE_PER_PART 65536 /* elements per element-wise part */

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
    struct dnnl_stream *dnn_stream; /* oneDNN's, made on first use */
    struct buf dnn_scratch;
    uint64_t maxabs;
    uint32_t sat;
    int oom;
    uint64_t ns[EEB_EMU_PHASES]; /* profiling: this run's time by phase */
};

/* A geometry oneDNN may convolve (see onednn_or_eeb), of one item (the
 * batch may vary): its primitive (NULL where oneDNN refused it or
 * failed), and the trials that choose between it and eeb's own: calls of
 * each ([0] eeb's, [1] oneDNN's, whose first builds its kernels and is
 * not timed), and the fastest, ns. */
struct dnn_layer {
    struct fx_geom item;
    int backward; /* backward data: eeb's own way and W differ from the forward's */
    struct emu_onednn *d;
    int calls[2];
    uint64_t best[2];
};

struct eeb_emu {
    enum eeb_emu_isa isa;
    struct emu_pool *pool;
    int threads;
    struct worker *w;
    struct buf bias, bias32, turned, gathered, wide, updates, s2d;
    enum eeb_emu_onednn onednn;
    struct dnn_layer *dnn; /* the geometries oneDNN has seen */
    int ndnn;
    int profiling;
    struct eeb_emu_profile prof;
};

struct eeb_emu *eeb_emu_new(int threads, enum eeb_emu_isa isa)
{
    struct eeb_emu *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->isa = isa;
    e->onednn = emu_onednn_exact() ? EEB_EMU_ONEDNN_AUTO : EEB_EMU_ONEDNN_OFF;
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
    for (int i = 0; e->w && i < e->threads; i++) {
        free(e->w[i].col.p), free(e->w[i].c32.p), free(e->w[i].sum.p);
        emu_onednn_stream_free(e->w[i].dnn_stream), free(e->w[i].dnn_scratch.p);
    }
    for (int i = 0; i < e->ndnn; i++)
        emu_onednn_free(e->dnn[i].d);
    free(e->dnn);
    free(e->w);
    free(e->bias.p), free(e->bias32.p), free(e->turned.p), free(e->gathered.p), free(e->wide.p),
        free(e->updates.p), free(e->s2d.p);
    free(e);
}

void eeb_emu_set_onednn(struct eeb_emu *e, enum eeb_emu_onednn mode)
{
    e->onednn = emu_onednn_exact() ? mode : EEB_EMU_ONEDNN_OFF;
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

/* ---- profiling ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The start of a timed section: now, or 0 when not profiling. */
static inline uint64_t tick(const struct eeb_emu *e)
{
    return e->profiling ? now_ns() : 0;
}

/* Ends worker w's section of phase ph that began at *t, and begins the
 * next one there. */
static inline void tock(const struct eeb_emu *e, struct worker *w, enum eeb_emu_phase ph,
                        uint64_t *t)
{
    if (e->profiling) {
        uint64_t t1 = now_ns();
        w->ns[ph] += t1 - *t;
        *t = t1;
    }
}

void eeb_emu_profile_start(struct eeb_emu *e, int on)
{
    e->profiling = on;
    memset(&e->prof, 0, sizeof e->prof);
    e->prof.threads = e->threads;
    for (int i = 0; i < e->threads; i++)
        memset(e->w[i].ns, 0, sizeof e->w[i].ns);
}

void eeb_emu_profile_read(const struct eeb_emu *e, struct eeb_emu_profile *out)
{
    *out = e->prof;
}

const char *eeb_emu_phase_name(enum eeb_emu_phase phase)
{
    static const char *const names[EEB_EMU_PHASES] = {
        [EEB_EMU_PHASE_GEMM] = "gemm",       [EEB_EMU_PHASE_IM2COL] = "im2col",
        [EEB_EMU_PHASE_PACK] = "pack",       [EEB_EMU_PHASE_REDUCE] = "reduce",
        [EEB_EMU_PHASE_REQUANT] = "requant", [EEB_EMU_PHASE_EWISE] = "ewise",
        [EEB_EMU_PHASE_POOL] = "pool",       [EEB_EMU_PHASE_UPDATE] = "update",
        [EEB_EMU_PHASE_OTHER] = "other",     [EEB_EMU_PHASE_IDLE] = "idle"};
    return (unsigned)phase < EEB_EMU_PHASES ? names[phase] : "?";
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

/*
 * Backward data at a stride s: input pixel (iy, ix) takes errors only
 * through the taps whose window starts on an output pixel, ky = iy + p
 * (mod s) and likewise kx.  The pixels fall into s x s phases by (iy mod
 * s, ix mod s), each with its own taps; a GEMM per phase over its pixels
 * and its taps multiplies none of the zeros a stride leaves (one GEMM over
 * every pixel and tap multiplied 4x the products at a 3x3, stride 2), and
 * its sums go to the phase's pixels of dx.  Integer sums: the same bits.
 */
#define PHASE_TAPS_MAX 49 /* 7 x 7: larger windows take the one GEMM */

struct phase {
    int py, px, ny, nx; /* its first pixel, and its pixels down and across */
    int ntaps;
    int tap[PHASE_TAPS_MAX]; /* ky * kw + kx, W's tap */
};

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
static int phases(const struct fx_geom *g, struct phase *out)
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

typedef void fill_fn(const int8_t *src, const struct fx_geom *g, int64_t r0, int64_t r1,
                     int8_t *col);

/* Packed B that one GEMM call reads at most: it stays in the core's L2
 * while the part's rows go by.  (A 4608 x 512 B read whole, 2.3 MB, comes
 * from L3 for every few rows: the GEMM ran at 45% of the peak, at 77% in
 * blocks of 128 columns.) */
#define B_BLOCK_BYTES (512 * 1024)

/* B in blocks of `cols` columns (the last may have fewer), each packed on
 * its own. */
struct blocks {
    int cols, count;
    struct eeb_emu_packed_b *b;
};

/* Rows of A gathered by fill (or read in place when fill is NULL) times
 * B, block by block, into the accumulators; the largest |sum| kept. */
struct rows_job {
    struct eeb_emu *e;
    const struct fx_geom *g;
    fill_fn *fill;
    const int8_t *src; /* x (forward) or dy (backward data) */
    int k, n;          /* bytes per row of A, sums per row of C */
    int64_t rows;
    int per_part; /* rows per part */
    const struct blocks *b;
    int32_t *acc;
    const int64_t *wide_bias; /* biases too wide for the GEMM to add (rare) */
    const struct phase *ph;   /* backward data at a stride: the phase's pixels are the rows */
};

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
        int8_t *col = grow(&w->col, (size_t)(r1 - r0) * (size_t)j->k);
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
    int32_t *c =
        j->ph ? grow(&w->c32, (size_t)(r1 - r0) * (size_t)j->n * sizeof *c) : j->acc + r0 * j->n;
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

/* ---- packing the weights ---- */

/* The layer's weights as B, packed in blocks by the workers: W (K rows in
 * (ky, kx, ci) order, oc columns) forward; backward, per tap, W^T (oc rows
 * of ic) in im2col_errors' order.  Blocks keep to B_BLOCK_BYTES, and a B
 * worth packing in parallel gets one per worker at least: the weights of
 * a 3x3 512-channel layer took 3 ms to transpose and pack on one core
 * while the others waited. */
struct pack_job {
    struct eeb_emu *e;
    const struct fx_geom *g;
    const int8_t *w8;
    int backward;
    int k, n;               /* B's rows and columns */
    const int64_t *bias;    /* forward: the biases the GEMM adds, or NULL */
    const struct phase *ph; /* backward at a stride: the phase's taps alone */
    struct blocks *b;
};

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
        int8_t *wt = grow(&w->col, (size_t)j->k * (size_t)nb);
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

static void free_blocks(struct blocks *b)
{
    for (int i = 0; b->b && i < b->count; i++)
        eeb_emu_gemm_free_b(&b->b[i]);
    free(b->b);
}

static enum fx_status pack_weights(struct eeb_emu *e, struct pack_job *j)
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
    reset_workers(e);
    emu_pool_run(e->pool, j->b->count, pack_part, j);
    uint64_t unused = 0;
    uint32_t sat = 0;
    return gather(e, &unused, &sat) ? FX_NO_MEMORY : FX_OK;
}

/* ---- forward ---- */

/* Runs a GEMM-over-rows job: the largest |sum| and the saturations
 * join *maxabs and *sat.  -1 if memory ran out. */
static int gemm_rows(struct eeb_emu *e, struct rows_job *j, uint64_t *maxabs, uint32_t *sat)
{
    /* parts of EEB_EMU_ROWS_PER_PART rows, or of fewer when that leaves
     * workers idle: at batch 5, a 7x7 layer has 245 rows */
    int64_t per = (j->rows + 4 * e->threads - 1) / (4 * e->threads);
    j->per_part = per > EEB_EMU_ROWS_PER_PART ? EEB_EMU_ROWS_PER_PART : per < 40 ? 40 : (int)per;
    reset_workers(e);
    emu_pool_run(e->pool, (int)((j->rows + j->per_part - 1) / j->per_part), rows_part, j);
    return gather(e, maxabs, sat);
}

/*
 * On AMX, a convolution whose input channels come in 64s runs as an
 * implicit GEMM: the input laid out in the phases' grids once
 * (implicit.c), item by item on the workers; then each 32 virtual pixels
 * x 32 output channels keep their sums in the tiles over every tap and
 * channel, and leave them once, bias added.  The backward data pass at
 * stride 1 is such a convolution too: of dy, padded by k - 1 - p, with
 * W's taps turned around.  An unpadded 1x1 reads x in place at stride 1
 * and keeps im2col at a stride, one copy of each pixel it reads (the grid
 * was 5-20 % slower); a strided backward data pass keeps its phases, each
 * with only its taps.  Few input channels at a stride (the stem) go in
 * space to depth.
 */
struct implicit_job {
    struct eeb_emu *e;
    const struct emu_implicit *im;
    const int8_t *x;
    int8_t *grid;
    const int64_t *aoff;
    const struct blocks *b;
    int32_t *acc;
    int along; /* parts along the virtual pixels */
};

static void implicit_layout(void *ctx, int n, int worker)
{
    struct implicit_job *j = ctx;
    uint64_t since = tick(j->e);
    emu_implicit_pixels(j->im, j->x, n, j->grid);
    tock(j->e, &j->e->w[worker], EEB_EMU_PHASE_IM2COL, &since);
}

static void implicit_part(void *ctx, int part, int worker)
{
    struct implicit_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    const int block = part / j->along;
    const uint32_t most = emu_implicit_part(j->im, j->grid, j->aoff, &j->b->b[block],
                                            part % j->along, j->acc + block * j->b->cols);
    w->maxabs = most > w->maxabs ? most : w->maxabs;
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
}

/* The convolution planned in im, of x by the packed weights b (B's k in
 * (ky, kx, ci) order, ky turned around if flip) into acc, as above; the
 * largest |sum| into *maxabs.  -1 if memory ran out. */
static int implicit_conv(struct eeb_emu *e, const struct emu_implicit *im, const int8_t *x,
                         int flip, const struct blocks *b, int32_t *acc, uint64_t *maxabs)
{
    const size_t grid = (size_t)im->phases * emu_implicit_pixels_bytes(im);
    int8_t *buf = grow(&e->gathered, grid + emu_implicit_offsets(im, flip, NULL));
    if (!buf)
        return -1;
    int64_t *aoff = (int64_t *)(void *)(buf + grid);
    emu_implicit_offsets(im, flip, aoff);
    struct implicit_job j = {.e = e,
                             .im = im,
                             .x = x,
                             .grid = buf,
                             .aoff = aoff,
                             .b = b,
                             .acc = acc,
                             .along = emu_implicit_parts(im)};
    reset_workers(e);
    emu_pool_run(e->pool, im->g.n, implicit_layout, &j);
    emu_pool_run(e->pool, j.along * b->count, implicit_part, &j);
    uint32_t unused = 0;
    return gather(e, maxabs, &unused);
}

/* Runs a GEMM-over-rows job, or where im is given the implicit GEMM it
 * plans into the same accumulators (flip as above), then requantizes the
 * sums (at exponent e_acc) into t, rounding half up. */
static enum fx_status run_rows(struct eeb_emu *e, uint8_t *mem, struct rows_job *j,
                               const struct emu_implicit *im, int flip, int e_acc,
                               struct fx_tensor *t)
{
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    if (im ? implicit_conv(e, im, j->src, flip, j->b, j->acc, &maxabs)
           : gemm_rows(e, j, &maxabs, &sat))
        return FX_NO_MEMORY;
    t->saturations += sat;
    requantize(e, mem, j->acc, (uint64_t)j->rows * (uint64_t)j->n, maxabs, e_acc,
               fx_round_half_up(), t);
    return FX_OK;
}

/* ---- oneDNN's convolutions, and the forward pass ---- */

/* The oneDNN layer of geometry g's items, forward or backward, added (with
 * its primitive, if oneDNN takes it) on first sight; NULL if out of
 * memory. */
static struct dnn_layer *dnn_layer(struct eeb_emu *e, const struct fx_geom *g, int backward)
{
    struct fx_geom item = *g; /* the workers take items */
    item.n = 1;
    for (int i = 0; i < e->ndnn; i++)
        if (!memcmp(&e->dnn[i].item, &item, sizeof item) && e->dnn[i].backward == backward)
            return &e->dnn[i];
    struct dnn_layer *more = realloc(e->dnn, (size_t)(e->ndnn + 1) * sizeof *more);
    if (!more)
        return NULL;
    e->dnn = more;
    struct dnn_layer *l = &e->dnn[e->ndnn++];
    memset(l, 0, sizeof *l);
    l->item = item;
    l->backward = backward;
    l->d = emu_onednn_new(&item);
    return l;
}

/* Whether both ways of layer l have had their trials. */
static int tried(const struct dnn_layer *l)
{
    return l->calls[0] >= EEB_EMU_ONEDNN_TRIALS && l->calls[1] > EEB_EMU_ONEDNN_TRIALS;
}

/* 1 if oneDNN runs this call of layer l: always where ON; in AUTO, by
 * turns (oneDNN first) until both have had their trials, then the
 * faster. */
static int onednn_or_eeb(const struct eeb_emu *e, const struct dnn_layer *l)
{
    if (!l || !l->d)
        return 0;
    if (e->onednn == EEB_EMU_ONEDNN_ON)
        return 1;
    if (!tried(l))
        return l->calls[1] <= l->calls[0];
    return l->best[1] < l->best[0];
}

void eeb_emu_onednn_shapes(const struct eeb_emu *e, int *seen, int *by_onednn)
{
    *seen = e->ndnn, *by_onednn = 0;
    for (int i = 0; i < e->ndnn; i++) {
        const struct dnn_layer *l = &e->dnn[i];
        *by_onednn += l->d && (e->onednn == EEB_EMU_ONEDNN_ON || (tried(l) && onednn_or_eeb(e, l)));
    }
}

/* A call of layer l by eeb's own (0) or oneDNN (1) took ns. */
static void count_call(struct dnn_layer *l, int onednn, uint64_t ns)
{
    const int timed = !onednn || l->calls[1] > 0;
    if (timed && (!l->best[onednn] || ns < l->best[onednn]))
        l->best[onednn] = ns;
    l->calls[onednn]++;
}

struct onednn_job {
    struct eeb_emu *e;
    const struct emu_onednn *d;
    const int8_t *x;
    const int32_t *bias;
    int32_t *acc;
    size_t in, out; /* an item's input bytes, output sums */
};

static void onednn_item(void *ctx, int n, int worker)
{
    struct onednn_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    /* a byte at least: grow gives none for none */
    void *scratch = grow(&w->dnn_scratch, emu_onednn_scratch_bytes(j->d) + 1);
    uint32_t most = 0;
    if (!w->dnn_stream)
        w->dnn_stream = emu_onednn_stream_new();
    if (!scratch || !w->dnn_stream ||
        emu_onednn_run(j->d, w->dnn_stream, scratch, j->x + (size_t)n * j->in, j->bias,
                       j->acc + (size_t)n * j->out, &most)) {
        w->oom = 1;
        return;
    }
    w->maxabs = most > w->maxabs ? most : w->maxabs;
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
}

/*
 * A convolution as oneDNN is given it: geometry g of x (NHWC) by W into
 * acc, bias added (NULL: none; |bias| at most widest), requantized at
 * exponent e_acc into out.  W is the command's, in (ky, kx, ci) rows by
 * oc (HWIO), or for backward data its transpose with the taps turned
 * around (see conv_bwd_data), made here when oneDNN runs.
 */
struct dnn_call {
    struct fx_geom g;
    const int8_t *x, *w;
    int backward;
    const int64_t *bias;
    int64_t widest;
    int32_t *acc;
    int e_acc;
    struct fx_tensor *out;
};

/* W' for backward data at stride 1: W'[ky][kx][o][i] = W[kh-1-ky][kw-1-kx][i][o]. */
static void turn_around(const struct fx_geom *g, const int8_t *w, int8_t *out)
{
    for (int t = 0; t < g->kh * g->kw; t++) {
        const int8_t *tap = w + (size_t)(g->kh * g->kw - 1 - t) * g->ic * g->oc;
        int8_t *to = out + (size_t)t * g->oc * g->ic;
        for (int i = 0; i < g->ic; i++)
            for (int o = 0; o < g->oc; o++)
                to[(size_t)o * g->ic + i] = tap[(size_t)i * g->oc + o];
    }
}

/* Call c through oneDNN's primitive d, item by item on the workers; the
 * largest |sum| into *maxabs.  -1 if memory ran out or oneDNN failed. */
static int onednn_conv(struct eeb_emu *e, const struct fx_conv *cv, const struct dnn_call *c,
                       struct emu_onednn *d, uint64_t *maxabs)
{
    const struct fx_geom *g = &c->g;
    struct worker *caller = &e->w[0]; /* the pool's worker 0 */
    int32_t *b32 = grow(&e->bias32, (size_t)g->oc * sizeof *b32);
    const int8_t *w = c->w;
    if (!b32 || (!caller->dnn_stream && !(caller->dnn_stream = emu_onednn_stream_new())))
        return -1;
    for (int o = 0; o < g->oc; o++)
        b32[o] = c->bias ? (int32_t)c->bias[o] : 0;
    uint64_t since = tick(e);
    if (c->backward) { /* the command's g: W is kh x kw x ic x oc */
        int8_t *turned = grow(&e->turned, (size_t)g->kh * g->kw * g->ic * g->oc);
        if (!turned)
            return -1;
        turn_around(&cv->g, w, turned);
        w = turned;
    }
    if (emu_onednn_weights(d, caller->dnn_stream, w))
        return -1;
    tock(e, caller, EEB_EMU_PHASE_PACK, &since);
    struct onednn_job j = {.e = e,
                           .d = d,
                           .x = c->x,
                           .bias = b32,
                           .acc = c->acc,
                           .in = (size_t)g->ih * g->iw * g->ic,
                           .out = (size_t)g->oh * g->ow * g->oc};
    reset_workers(e);
    emu_pool_run(e->pool, g->n, onednn_item, &j);
    uint32_t unused = 0;
    return gather(e, maxabs, &unused);
}

/* eeb's own way with a convolution command (c describes it as oneDNN
 * sees it). */
typedef enum fx_status own_conv_fn(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                   const struct dnn_call *c);

/* Command cv by oneDNN or by eeb's own (see eeb_emu.h), which give the
 * same bits. */
static enum fx_status onednn_or_own(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                    const struct dnn_call *c, own_conv_fn *own)
{
    const struct fx_geom *g = &c->g;
    /* oneDNN's sums plus the bias must stay in int32, as the GEMM's */
    struct dnn_layer *l = e->onednn != EEB_EMU_ONEDNN_OFF &&
                                  c->widest <= EEB_EMU_GEMM_BIAS_MAX((int64_t)g->kh * g->kw * g->ic)
                              ? dnn_layer(e, g, c->backward)
                              : NULL;
    const uint64_t t0 = now_ns();
    const size_t sums = (size_t)g->n * g->oh * g->ow * g->oc;
    int32_t *first = NULL;
    uint64_t maxabs = 0;
    const int by_onednn = onednn_or_eeb(e, l);
    if (by_onednn) {
        const int ok = !onednn_conv(e, cv, c, l->d, &maxabs);
        if (ok && l->calls[1] > 0) {
            requantize(e, mem, c->acc, sums, maxabs, c->e_acc, fx_round_half_up(), c->out);
            count_call(l, 1, now_ns() - t0);
            return FX_OK;
        }
        /* a geometry's first sums from oneDNN, and their largest, are
         * checked against eeb's own on the same input, whose output the
         * call keeps */
        if (ok && (first = malloc(sums * sizeof *first)))
            memcpy(first, c->acc, sums * sizeof *first);
    }
    enum fx_status st = own(e, mem, cv, c);
    if (by_onednn && first && st == FX_OK && !memcmp(first, c->acc, sums * sizeof *first) &&
        maxabs == fx_maxabs32(c->acc, sums))
        count_call(l, 1, 0);
    else if (by_onednn) { /* oneDNN failed, refused or differed: eeb's own from now on */
        emu_onednn_free(l->d);
        l->d = NULL;
    } else if (l && l->d)
        count_call(l, 0, now_ns() - t0);
    free(first);
    return st;
}

static own_conv_fn conv_fwd_own;

static enum fx_status conv_fwd(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv)
{
    const struct fx_geom *g = &cv->g;
    const int e_acc = cv->in->exp + cv->w->exp;
    int64_t *bias = grow(&e->bias, (size_t)g->oc * sizeof *bias);
    if (!bias)
        return FX_NO_MEMORY;
    const int32_t *b24 = (const int32_t *)(const void *)(mem + cv->b->offset);
    int64_t widest = 0;
    for (int c = 0; c < g->oc; c++) {
        bias[c] = fx_align(b24[c], cv->b->exp, e_acc);
        widest = bias[c] > widest ? bias[c] : -bias[c] > widest ? -bias[c] : widest;
    }
    const struct dnn_call c = {.g = *g,
                               .x = i8_of(mem, cv->in),
                               .w = i8_of(mem, cv->w),
                               .bias = bias,
                               .widest = widest,
                               .acc = acc_of(mem, cv),
                               .e_acc = e_acc,
                               .out = cv->out};
    return onednn_or_own(e, mem, cv, &c, conv_fwd_own);
}

static enum fx_status conv_fwd_own(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                   const struct dnn_call *c)
{
    const struct fx_geom *g = &cv->g;
    const int64_t *bias = c->bias;
    const int64_t widest = c->widest;
    const int e_acc = c->e_acc;
    /* on AMX an implicit GEMM, whose B for s x s pixels at a time (space
     * to depth: few channels at a stride) has 64 rows per window row */
    struct emu_implicit im;
    int implicit = e->isa == EEB_EMU_ISA_AMX && !emu_implicit_conv_plan(g, &im);
    int k = implicit && im.s2d.s ? im.g.kh * 64 : g->kh * g->kw * g->ic;
    if (implicit && widest > EEB_EMU_GEMM_BIAS_MAX(k))
        implicit = 0, k = g->kh * g->kw * g->ic;
    const int wide = widest > EEB_EMU_GEMM_BIAS_MAX(k); /* the GEMM cannot add it in int32 */
    const int8_t *w8 = i8_of(mem, cv->w);
    if (implicit && im.s2d.s) {
        int8_t *w2 = grow(&e->s2d, emu_implicit_s2d_weights(&im, w8, NULL));
        if (!w2)
            return FX_NO_MEMORY;
        emu_implicit_s2d_weights(&im, w8, w2);
        w8 = w2;
    }
    struct blocks b = {0, 0, NULL};
    struct pack_job p = {
        .e = e, .g = g, .w8 = w8, .k = k, .n = g->oc, .bias = wide ? NULL : bias, .b = &b};
    struct rows_job j = {.e = e,
                         .g = g,
                         .fill = direct(g) ? NULL : im2col,
                         .src = i8_of(mem, cv->in),
                         .k = k,
                         .n = g->oc,
                         .rows = (int64_t)g->n * g->oh * g->ow,
                         .b = &b,
                         .acc = acc_of(mem, cv),
                         .wide_bias = wide ? bias : NULL};
    enum fx_status st = pack_weights(e, &p);
    if (st == FX_OK)
        st = run_rows(e, mem, &j, implicit ? &im : NULL, 0, e_acc, cv->out);
    free_blocks(&b);
    return st;
}

/* ---- backward data ---- */

/* Backward data at a stride, phase by phase (see struct phase), then
 * requantized as one tensor. */
static enum fx_status conv_bwd_data_phased(struct eeb_emu *e, uint8_t *mem,
                                           const struct fx_conv *cv, const struct phase *ph,
                                           int count)
{
    const struct fx_geom *g = &cv->g;
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    for (int i = 0; i < count; i++) {
        struct rows_job j = {.e = e,
                             .g = g,
                             .src = i8_of(mem, cv->out),
                             .k = ph[i].ntaps * g->oc,
                             .n = g->ic,
                             .rows = (int64_t)g->n * ph[i].ny * ph[i].nx,
                             .acc = acc_of(mem, cv),
                             .ph = &ph[i]};
        struct blocks b = {0, 0, NULL};
        struct pack_job p = {.e = e,
                             .g = g,
                             .w8 = i8_of(mem, cv->w),
                             .backward = 1,
                             .k = j.k,
                             .n = g->ic,
                             .ph = &ph[i],
                             .b = &b};
        j.b = &b;
        enum fx_status st = ph[i].ntaps ? pack_weights(e, &p) : FX_OK; /* none: zeros */
        if (st == FX_OK && gemm_rows(e, &j, &maxabs, &sat))
            st = FX_NO_MEMORY;
        free_blocks(&b);
        if (st != FX_OK)
            return st;
    }
    cv->in->saturations += sat;
    requantize(e, mem, acc_of(mem, cv), (uint64_t)g->n * g->ih * g->iw * g->ic, maxabs,
               cv->out->exp + cv->w->exp, fx_round_half_up(), cv->in);
    return FX_OK;
}

/* Backward data at stride 1 (square windows) is the convolution of dy,
 * padded by k - 1 - p, by W with its taps turned around: its geometry
 * into *dg, or 0 where the pass is no such convolution. */
static int bwd_as_conv(const struct fx_geom *g, struct fx_geom *dg)
{
    if (g->s != 1 || g->kh != g->kw || g->kh - 1 - g->p < 0)
        return 0;
    const struct fx_geom d = {g->n,  g->oh, g->ow, g->oc, g->ih,           g->iw,
                              g->ic, g->kh, g->kw, 1,     g->kh - 1 - g->p};
    *dg = d;
    return 1;
}

static enum fx_status conv_bwd_data_own(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                        const struct dnn_call *unused)
{
    (void)unused;
    const struct fx_geom *g = &cv->g;
    struct phase ph[64];
    int count = g->s > 1 && g->s * g->s <= 64 ? phases(g, ph) : 0;
    if (count)
        return conv_bwd_data_phased(e, mem, cv, ph, count);
    int K = g->kh * g->kw * g->oc;
    struct blocks b = {0, 0, NULL};
    struct pack_job p = {
        .e = e, .g = g, .w8 = i8_of(mem, cv->w), .backward = 1, .k = K, .n = g->ic, .b = &b};
    struct rows_job j = {.e = e,
                         .g = g,
                         .fill = direct(g) ? NULL : im2col_errors,
                         .src = i8_of(mem, cv->out),
                         .k = K,
                         .n = g->ic,
                         .rows = (int64_t)g->n * g->ih * g->iw,
                         .b = &b,
                         .acc = acc_of(mem, cv)};
    /* at stride 1 an implicit GEMM, W's rows of taps turned around
     * (im2col_errors' order) */
    struct fx_geom dg;
    struct emu_implicit im;
    const int implicit =
        e->isa == EEB_EMU_ISA_AMX && bwd_as_conv(g, &dg) && !emu_implicit_conv_plan(&dg, &im);
    enum fx_status st = pack_weights(e, &p);
    if (st == FX_OK)
        st = run_rows(e, mem, &j, implicit ? &im : NULL, 1, cv->out->exp + cv->w->exp, cv->in);
    free_blocks(&b);
    return st;
}

/* Backward data: where it is a convolution (bwd_as_conv), oneDNN can run
 * it too; at a stride, eeb's phases. */
static enum fx_status conv_bwd_data(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv)
{
    struct fx_geom dg;
    if (e->onednn == EEB_EMU_ONEDNN_OFF || !bwd_as_conv(&cv->g, &dg))
        return conv_bwd_data_own(e, mem, cv, NULL);
    const struct dnn_call c = {.g = dg,
                               .x = i8_of(mem, cv->out),
                               .w = i8_of(mem, cv->w),
                               .backward = 1,
                               .acc = acc_of(mem, cv),
                               .e_acc = cv->out->exp + cv->w->exp,
                               .out = cv->in};
    return onednn_or_own(e, mem, cv, &c, conv_bwd_data_own);
}

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
        int64_t *bias = grow(&e->w[i].sum, (size_t)oc * sizeof *bias);
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
    if (!direct(j->g))
        im2col(j->x, j->g, j->r0 + r0, j->r0 + r1, j->gathered + (size_t)r0 * j->k);
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
    int32_t *c = grow(&w->c32, (size_t)oc * (size_t)n * sizeof *c);
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
    if (gather(e, &maxabs, &sat))
        return FX_NO_MEMORY;
    cv->w->saturations += sat;
    requantize(e, mem, acc_of(mem, cv), nw, maxabs, cv->in->exp + cv->out->exp + shift,
               fx_round_stochastic(mem, cmd->t[2]), cv->w);

    int32_t *bacc = acc_of(mem, cv) + nw;
    maxabs = 0, sat = 0;
    for (int c = 0; c < g->oc; c++) {
        int64_t v = 0;
        for (int t = 0; t < e->threads; t++)
            v += ((const int64_t *)e->w[t].sum.p)[c];
        bacc[c] = fx_store32(v, &maxabs, &sat);
    }
    cv->b->saturations += sat;
    requantize(e, mem, bacc, (uint64_t)g->oc, maxabs, cv->out->exp,
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
    int8_t *buf = grow(&e->gathered, planes + emu_wgrad_dy_bytes(wg));
    const size_t nw = (size_t)g->kh * g->kw * g->ic * g->oc;
    int64_t *wide = shift ? grow(&e->wide, nw * sizeof *wide) : NULL;
    if (!buf || (shift && !wide) || zero_bias_sums(e, g->oc))
        return FX_NO_MEMORY;
    struct wgrad_job j = {.e = e,
                          .im = wg,
                          .x = i8_of(mem, cv->in),
                          .dy = i8_of(mem, cv->out),
                          .planes = buf,
                          .packed = buf + planes,
                          .chunk.shift = shift,
                          .acc = acc_of(mem, cv),
                          .wide = wide};
    reset_workers(e);
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

static enum fx_status conv_bwd_weight(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmd,
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
    const size_t col_bytes = direct(g) ? 0 : (size_t)chunk * (size_t)K;
    const int shift = fx_reduction_shift((uint64_t)rows, FX_MAX_REDUCTION);
    int8_t *gathered = grow(&e->gathered, col_bytes + (size_t)chunk * (size_t)g->oc);
    int64_t *wide = shift ? grow(&e->wide, nw * sizeof *wide) : NULL;
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
                           .x = i8_of(mem, cv->in),
                           .chunk.shift = shift,
                           .gathered = gathered,
                           .dyt = gathered + col_bytes,
                           .acc = acc_of(mem, cv),
                           .wide = wide};
    reset_workers(e);
    for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        j.r0 = r0;
        j.rc = rows - r0 < chunk ? (int)(rows - r0) : chunk;
        j.chunk.first = r0 == 0;
        j.chunk.last = r0 + j.rc == rows;
        j.dy = i8_of(mem, cv->out) + r0 * g->oc;
        j.col = direct(g) ? j.x + r0 * K : gathered;
        emu_pool_run(e->pool, (j.rc + GATHER_ROWS - 1) / GATHER_ROWS, weight_gather, &j);
        emu_pool_run(e->pool, (K + cols - 1) / cols, weight_columns, &j);
    }
    return weight_done(e, mem, cmd, cv, shift);
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
    uint64_t since = tick(j->e);
    uint64_t b = (uint64_t)part * EWISE_PER_PART;
    uint64_t end = b + EWISE_PER_PART < j->ew.count ? b + EWISE_PER_PART : j->ew.count;
    fx_ewise_range(&j->ew, b, end, &w->maxabs);
    tock(j->e, w, EEB_EMU_PHASE_EWISE, &since);
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

/* ---- commands on one core ---- */

/* A command the kernel's own code runs, on one core. */
static enum fx_status serial(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    uint64_t since = tick(e);
    enum fx_status st = fx_kernel_exec(mem, c);
    enum eeb_emu_phase ph = EEB_EMU_PHASE_OTHER;
    switch ((enum fx_op)c->op) {
    case FX_OP_MAXPOOL_FWD:
    case FX_OP_MAXPOOL_BWD:
    case FX_OP_AVGPOOL_FWD:
    case FX_OP_AVGPOOL_BWD: ph = EEB_EMU_PHASE_POOL; break;
    case FX_OP_SGD:
    case FX_OP_QUANT_W: ph = EEB_EMU_PHASE_UPDATE; break;
    default: break;
    }
    tock(e, &e->w[0], ph, &since);
    return st;
}

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
    uint8_t *winner = grow(&w->col, (size_t)g->oh * g->ow * POOL_CH);
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
static enum fx_status maxpool(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
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
        return serial(e, mem, c);
    const struct fx_geom *g = &j.g;
    int blocks =
        (4 * e->threads + g->n - 1) / g->n; /* parts per item, for every worker to have some */
    j.cols = (g->ic + blocks - 1) / blocks;
    j.cols = j.cols < 16 ? (g->ic < 16 ? g->ic : 16) : (j.cols + 15) / 16 * 16;
    int parts = g->n * ((g->ic + j.cols - 1) / j.cols);
    j.x = (const int8_t *)(mem + tx->offset);
    reset_workers(e);
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
    gather(e, &maxabs, &sat);
    b->saturations += sat;
    requantize(e, mem, j.acc, count, maxabs, a->exp, fx_round_half_up(), b);
    return FX_OK;
}

/* ---- the weight updates, layer by layer in parallel ---- */

#define UPDATE_RUN_MAX 256 /* update commands run together at most */

/* The kernel's SGD and QUANT_W read and write nothing but their operands
 * (data and descriptors).  A run of them therefore splits into groups
 * that share none, a layer's [SGD w, QUANT_W] and [SGD b], and the groups
 * run at once, each in program order on one worker: the image is the
 * kernel's byte for byte.  (Only after a refused command, a malformed
 * image, may groups after it have run too; the status names the first
 * refused.) */
struct update_job {
    struct eeb_emu *e;
    uint8_t *mem;
    const struct fx_cmd *cmds;
    int n;                          /* commands in the run */
    int group[UPDATE_RUN_MAX];      /* per command */
    int order[UPDATE_RUN_MAX];      /* the groups, largest first */
    uint64_t size[UPDATE_RUN_MAX];  /* per group: elements its commands go over */
    uint8_t status[UPDATE_RUN_MAX]; /* per command */
};

static int is_update(const struct fx_cmd *c)
{
    return c->op == FX_OP_SGD || c->op == FX_OP_QUANT_W;
}

/* Whether update commands a and b name a common operand. */
static int share_operand(const struct fx_cmd *a, const struct fx_cmd *b)
{
    int na = a->op == FX_OP_SGD ? 3 : 2, nb = b->op == FX_OP_SGD ? 3 : 2;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a->t[i] == b->t[j])
                return 1;
    return 0;
}

static void update_part(void *ctx, int part, int worker)
{
    struct update_job *j = ctx;
    uint64_t since = tick(j->e);
    for (int c = 0; c < j->n; c++)
        if (j->group[c] == j->order[part])
            j->status[c] = (uint8_t)fx_kernel_exec(j->mem, &j->cmds[c]);
    tock(j->e, &j->e->w[worker], EEB_EMU_PHASE_UPDATE, &since);
}

/* Runs the update commands from cmds[0] on: as many as split into groups
 * that way (at least one, at most `left`), their count in *ran.  FX_OK,
 * or the status of the first refused, at offset *bad. */
static enum fx_status updates(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmds,
                              uint32_t left, uint32_t *ran, uint32_t *bad)
{
    struct update_job *j = grow(&e->updates, sizeof *j);
    if (!j)
        return FX_NO_MEMORY;
    j->e = e, j->mem = mem, j->cmds = cmds;
    int n = 0, groups = 0;
    for (; n < (int)left && n < UPDATE_RUN_MAX && is_update(&cmds[n]); n++) {
        int joins = -1, clash = 0; /* the group it shares operands with; with two */
        for (int c = 0; c < n; c++)
            if (share_operand(&cmds[c], &cmds[n])) {
                clash |= joins >= 0 && joins != j->group[c];
                joins = j->group[c];
            }
        if (clash)
            break; /* it waits for the next run */
        if (joins < 0) {
            joins = groups++;
            j->size[joins] = 0;
            j->order[joins] = joins;
        }
        const struct fx_tensor *t = fx_tensor_at(mem, cmds[n].t[0]);
        j->group[n] = joins;
        j->size[joins] += (uint64_t)t->h * t->w * t->c;
    }
    j->n = n;
    for (int a = 1; a < groups; a++) /* largest first, so that the last parts are short */
        for (int b = a; b > 0 && j->size[j->order[b]] > j->size[j->order[b - 1]]; b--) {
            int t = j->order[b];
            j->order[b] = j->order[b - 1], j->order[b - 1] = t;
        }
    emu_pool_run(e->pool, groups, update_part, j);
    *ran = (uint32_t)n;
    for (int c = 0; c < n; c++)
        if (j->status[c] != FX_OK) {
            *bad = (uint32_t)c;
            return (enum fx_status)j->status[c];
        }
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
    case FX_OP_MAXPOOL_FWD:
    case FX_OP_MAXPOOL_BWD: return maxpool(e, mem, c);
    default: return serial(e, mem, c);
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
    const uint64_t t0 = tick(e);
    const uint32_t end = h->prog_first[prog] + h->prog_count[prog];
    int rc = 0;
    for (uint32_t i = h->prog_first[prog], ran = 1; i < end; i += ran) {
        uint64_t since = tick(e);
        uint32_t bad = 0;
        ran = 1;
        enum fx_status s = is_update(&cmds[i]) ? updates(e, mem, cmds + i, end - i, &ran, &bad)
                                               : exec(e, mem, &cmds[i]);
        if (e->profiling && cmds[i].op < FX_OPS) /* a run of updates counts as its first */
            e->prof.op_ns[cmds[i].op] += now_ns() - since;
        if (s != FX_OK) {
            h->status = s;
            h->status_cmd = i + bad;
            rc = -1;
            break;
        }
    }
    if (e->profiling) { /* the workers' phases, and the rest of threads x wall as idle */
        uint64_t wall = now_ns() - t0, busy = 0;
        for (int i = 0; i < e->threads; i++)
            for (int p = 0; p < EEB_EMU_PHASES; p++) {
                e->prof.ns[p] += e->w[i].ns[p];
                busy += e->w[i].ns[p];
                e->w[i].ns[p] = 0;
            }
        uint64_t all = wall * (uint64_t)e->threads;
        e->prof.ns[EEB_EMU_PHASE_IDLE] += all > busy ? all - busy : 0;
        e->prof.wall_ns += wall;
    }
    return rc;
}
