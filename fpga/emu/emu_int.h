/*
 * emu_int.h - shared inside fpga/emu: the per-instruction-set GEMM tile
 * loops (gemm_amx.c, gemm_avx512.c, gemm_avx2.c) that gemm.c dispatches to,
 * the implicit GEMMs, oneDNN, the worker pool, and the executor's state
 * and helpers that its files (exec*.c) share.
 *
 * Packed B: panel p (32 columns), group g (8 rows of k), column c, row kk at
 *   data[(p * kpad/8 + g) * 256 + c * 8 + kk], which holds B + 128.
 * Each column's 8 bytes of a group lie together: one 64-byte vector holds
 * 8 columns, two 32-bit lanes each, and one 8-byte broadcast of a row of A
 * meets all of them.
 *
 * Packed for AMX: panel p, block g (64 rows of k), half h (16 columns),
 * column c, row kk at
 *   data[(p * kpad/64 + g) * 2048 + h * 1024 + kk/4 * 64 + c * 4 + kk%4],
 * which holds B itself: each half is one B tile as tdpbssd reads it (16
 * rows of 4 k-bytes for each of 16 columns).
 */
#ifndef EEB_EMU_INT_H
#define EEB_EMU_INT_H

#include "eeb_emu.h"
#include "eeb_emu_gemm.h"
#include "fpga/kernel/fx_kernel.h"

#include <time.h>

#define EMU_NR 32 /* columns per B panel */

/* The first byte of panel p of packed B. */
static inline const uint8_t *emu_panel(const struct eeb_emu_packed_b *b, int p)
{
    return b->data + (size_t)p * (size_t)b->kpad * EMU_NR;
}

/* The tile loops: A read in place (row stride lda); or A widened to
 * int16, rows padded to 4 and k to kpad.  They add the bias and return
 * the largest |C| they stored; the AMX one returns -1 if scratch memory
 * ran out. */
int emu_gemm_amx(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b, int32_t *c,
                 int ldc, uint32_t *most);

uint32_t emu_gemm_avx512vnni(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                             int32_t *c, int ldc);

uint32_t emu_gemm_avx2(int m, const int16_t *a_s16, const struct eeb_emu_packed_b *b, int32_t *c,
                       int ldc);

/* A 16 x 16 block of bytes (rows lds apart) transposed into dst (rows ldd
 * apart), in SSE2 registers (implicit.c). */
void emu_transpose16(const int8_t *src, size_t lds, int8_t *dst, size_t ldd);

/* ---- convolutions as implicit GEMMs on AMX (implicit.c has the layouts) ---- */

/* s x s phases at most: the strides eeb's networks take (net.c), the
 * only ones tested; the kernel's other strides keep im2col */
#define EMU_IMPLICIT_STRIDE_MAX 2

struct emu_implicit {
    struct fx_geom g;
    int wv, hv; /* each phase's grid of pixels per item */
    int phases; /* the phases some tap reads */
    /* py * s + px -> the phase's number, or -1 */
    int phase[EMU_IMPLICIT_STRIDE_MAX * EMU_IMPLICIT_STRIDE_MAX];
    int64_t q, qpad; /* virtual pixels, n * hv * wv; rounded up to 64 */
    int reach;       /* the farthest tap's offset from q */
    /* the weight gradient's layout */
    int icpad, ocpad; /* channels rounded up to 32: tiles come in pairs */
    size_t plane;     /* bytes per channel's plane of a phase */
    /* space to depth: g is a stride-1 convolution over s x s pixels of
     * this one (s2d.s 0 otherwise) */
    struct fx_geom s2d;
};

/* The grids for a convolution of geometry g; -1 for a stride past the
 * maximum, no items, or planes too long for a tile load's row stride. */
int emu_implicit_plan(const struct fx_geom *g, struct emu_implicit *im);
/* Tap (ky * kw + kx): its phase's number, and the offset of its reads
 * from q in that phase's grid. */
int emu_implicit_tap(const struct emu_implicit *im, int tap, int *offset);

/* Forward: x as pixels of ic bytes in the grids, the phases
 * emu_implicit_pixels_bytes apart; item n of x into them (the last item
 * also writes the zeros past it).  Items touch disjoint bytes. */
size_t emu_implicit_pixels_bytes(const struct emu_implicit *im);
void emu_implicit_pixels(const struct emu_implicit *im, const int8_t *x, int n, int8_t *grids);
/* The grids of a convolution that runs as an implicit GEMM: input
 * channels in 64s and not an unpadded 1x1, or space to depth (below); -1
 * if neither. */
int emu_implicit_conv_plan(const struct fx_geom *g, struct emu_implicit *im);
/* A stride-s convolution g of few input channels as a stride-1 one of
 * ceil(k/s) x ceil(k/s) taps over s x s pixels at a time (space to depth),
 * each window row of those one 64-byte step of k; -1 where a window row
 * takes more.  Its weights: B with 64 rows per window row (the taps past
 * g's window zero) by oc, into out unless NULL; the bytes they take. */
int emu_implicit_s2d_plan(const struct fx_geom *g, struct emu_implicit *im);
size_t emu_implicit_s2d_weights(const struct emu_implicit *im, const int8_t *weights, int8_t *out);
/* Per 64 bytes of B's k (taps in (ky, kx, ci) order, ky turned around if
 * flip; space to depth: window rows), where A's rows start from the first
 * virtual pixel's: into aoff unless NULL; the bytes they take. */
size_t emu_implicit_offsets(const struct emu_implicit *im, int flip, int64_t *aoff);
/* Parts of EMU_IMPLICIT_ROWS virtual pixels; part `part` of the
 * convolution by b (a block of columns, C at c), the largest |C|. */
#define EMU_IMPLICIT_ROWS 512
int emu_implicit_parts(const struct emu_implicit *im);
uint32_t emu_implicit_part(const struct emu_implicit *im, const int8_t *grid, const int64_t *aoff,
                           const struct eeb_emu_packed_b *b, int part, int32_t *c);

/* Weight gradient: x as planes (a phase's grid of one channel), dy packed
 * as B tiles; item n of each, as above.  Input channels in 16s, or space
 * to depth. */
size_t emu_wgrad_planes_bytes(const struct emu_implicit *im); /* phases x icpad planes */
size_t emu_wgrad_dy_bytes(const struct emu_implicit *im);     /* qpad x ocpad */
void emu_wgrad_planes(const struct emu_implicit *im, const int8_t *x, int n, int8_t *planes);
/* Row c of tap's A tiles: its row of dW (tap * ic + c in W's (ky, kx, ci)
 * order; space to depth: the tap and channel of the s x s pixels mapped
 * back), or -1 for a tap past the window. */
int64_t emu_wgrad_row(const struct emu_implicit *im, int tap, int c);
void emu_wgrad_pack_dy(const struct emu_implicit *im, const int8_t *dy, int n, int8_t *packed);

/* The tile loops (gemm_amx.c).  Forward: C rows (virtual pixels) from a
 * (pixels lda apart), one 64-byte step of k per packed B block, step i's
 * A at a + aoff[i]; the bias added and each of the 32 rows stored at
 * row[r] of c (none if -1), the largest |C| returned. */
uint32_t emu_conv_amx(const int8_t *a, size_t lda, const int64_t *aoff, int steps,
                      const struct eeb_emu_packed_b *b, const int64_t *row, int rows, int32_t *c,
                      int ldc);
/* Weight gradient: sums[32][32] = 32 planes' rows from a (rows lda
 * apart) x dy packed from packed on (two groups of 16 channels, blocks
 * step bytes apart), over `blocks` blocks of 64 virtual pixels. */
void emu_wgrad_amx(const int8_t *a, size_t lda, const int8_t *packed, size_t step, int blocks,
                   int32_t sums[32][32]);
/* rows x cols of sums stored (store) or added in int32 into c (rows ldc
 * apart); the largest |sum| there.  For sums int32 holds exactly. */
uint32_t emu_wgrad_amx_add(const int32_t sums[32][32], int rows, int cols, int store, int32_t *c,
                           size_t ldc);

/* ---- oneDNN (onednn.c) ---- */

struct emu_onednn;
struct dnnl_stream; /* oneDNN's dnnl_stream_t */

/* Whether oneDNN's int8 sums are exact on this CPU (AVX-512 VNNI or AMX),
 * below 2^24. */
int emu_onednn_exact(void);
/* A convolution of geometry g, its g->n items a call; NULL where oneDNN
 * is not exact or refuses the geometry. */
struct emu_onednn *emu_onednn_new(const struct fx_geom *g);
void emu_onednn_free(struct emu_onednn *d);
/* A worker's stream (NULL if it could not be made) and the scratchpad
 * bytes it brings to each call. */
struct dnnl_stream *emu_onednn_stream_new(void);
void emu_onednn_stream_free(struct dnnl_stream *stream);
size_t emu_onednn_scratch_bytes(const struct emu_onednn *d);
/* W ((ky, kx, ci) rows by oc, as the image holds it) into oneDNN's layout,
 * once a convolution; then the items x (NHWC) into y (NHWC int32), bias[oc]
 * added and the largest |y| into *maxabs.  0, or -1 if oneDNN failed or a
 * sum reached 2^24 before the bias (it may have been rounded: see
 * onednn.c): then y is no use. */
int emu_onednn_weights(struct emu_onednn *d, struct dnnl_stream *stream, const int8_t *w);
int emu_onednn_run(const struct emu_onednn *d, struct dnnl_stream *stream, void *scratch,
                   const int8_t *x, const int32_t *bias, int32_t *y, uint32_t *maxabs);

/* ---- worker threads (pool.c) ---- */

/* One part of a parallel loop, run by worker 0..threads-1. */
typedef void emu_part_fn(void *ctx, int part, int worker);

struct emu_pool;
/* threads workers including the caller; NULL if out of memory. */
struct emu_pool *emu_pool_new(int threads);
void emu_pool_free(struct emu_pool *p);
int emu_pool_threads(const struct emu_pool *p);
/* Runs fn on parts 0..parts-1 and returns when all are done. */
void emu_pool_run(struct emu_pool *p, int parts, emu_part_fn *fn, void *ctx);

/* ---- the executor (exec.c, exec_gemm.c, exec_conv.c, exec_wgrad.c,
 * exec_maxpool.c): its state, and what its files share ---- */

struct buf {
    void *p;
    size_t cap;
};

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

/* b holding bytes at least, 64-byte aligned (its old contents lost when
 * it grows); NULL if out of memory. */
void *emu_grow(struct buf *b, size_t bytes);

/* Each worker's largest |sum| and saturations back to 0, before a
 * parallel loop. */
void emu_reset_workers(struct eeb_emu *e);

/* Max and saturations over all workers; -1 if one ran out of memory. */
int emu_gather(struct eeb_emu *e, uint64_t *maxabs, uint32_t *sat);

/* A command the kernel's own code runs, on one core. */
enum fx_status emu_serial(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c);

/* A 1x1, stride 1, unpadded convolution (and FC) reads x as the GEMM's A. */
int emu_direct(const struct fx_geom *g);

/* Rows [r0, r1) of im2col(x): row r is output pixel r, K = kh*kw*ic bytes
 * in (ky, kx, ci) order, zeros where the window hangs over the edge.  A
 * window row inside the image is kw adjacent pixels: one copy. */
void emu_im2col(const int8_t *x, const struct fx_geom *g, int64_t r0, int64_t r1, int8_t *col);

/* Rows [r0, r1) of the errors' im2col, for the backward data pass as a
 * GEMM: row r is input pixel r and holds, for each tap, the oc errors of
 * the output pixel whose window put that tap on it, or zeros where no
 * window did (the edges, and the skipped pixels of a stride).  Taps go in
 * (ky, kw-1-kx) order, so that at stride 1 a tap row is kw adjacent output
 * pixels: one copy.  Its product with W rearranged the same way (oc rows
 * of ic per tap) is dx, summed in int32 with no scatter. */
void emu_im2col_errors(const int8_t *dy, const struct fx_geom *g, int64_t r0, int64_t r1,
                       int8_t *col);

/* The s x s phases of g's input pixels (those with any), their count;
 * 0 if a window is too large for PHASE_TAPS_MAX. */
int emu_phases(const struct fx_geom *g, struct phase *out);

/* Runs a GEMM-over-rows job: the largest |sum| and the saturations
 * join *maxabs and *sat.  -1 if memory ran out. */
int emu_gemm_rows(struct eeb_emu *e, struct rows_job *j, uint64_t *maxabs, uint32_t *sat);

/* acc's count int32 sums (largest |sum| maxabs, exponent e_acc) into t
 * by the kernel's requantization with rounding r, in parallel parts. */
void emu_requantize(struct eeb_emu *e, uint8_t *mem, const int32_t *acc, uint64_t count,
                    uint64_t maxabs, int e_acc, struct fx_rounding r, struct fx_tensor *t);

/* A convolution's int32 scratch, and a tensor's int8 bytes, in the image. */
int32_t *emu_acc_of(uint8_t *mem, const struct fx_conv *cv);

const int8_t *emu_i8_of(const uint8_t *mem, const struct fx_tensor *t);

/* Packed B in blocks (exec_gemm.c): freed, and packed by the workers. */
void emu_free_blocks(struct blocks *b);

enum fx_status emu_pack_weights(struct eeb_emu *e, struct pack_job *j);

/* The convolution commands: forward and backward data (exec_conv.c),
 * backward weight (exec_wgrad.c). */
enum fx_status emu_conv_fwd(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv);

/* Backward data: where it is a convolution (bwd_as_conv), oneDNN can run
 * it too; at a stride, eeb's phases. */
enum fx_status emu_conv_bwd_data(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv);

enum fx_status emu_conv_bwd_weight(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmd,
                                   const struct fx_conv *cv);

/* MAXPOOL_FWD x, y and MAXPOOL_BWD dy, dx, x, -, acc.  A command the
 * kernel refuses, or with a window of more than POOL_TAPS, goes to it. */
enum fx_status emu_maxpool(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c);

#endif
