/*
 * emu_int.h - shared inside fpga/emu: the per-instruction-set GEMM tile
 * loops (gemm_amx.c, gemm_avx512.c, gemm_avx2.c) that gemm.c dispatches to.
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

#include "eeb_emu_gemm.h"

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

#endif
