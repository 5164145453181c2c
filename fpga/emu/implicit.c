/*
 * implicit.c - convolutions as implicit GEMMs: the layouts that let AMX's
 * tiles read a convolution's windows in place, with no im2col.
 *
 * The input, padded by p, is split by the stride into s x s phases: xp's
 * pixel (s*a + py, s*b + px) is phase (py, px)'s pixel (a, b), in a grid of
 * hv x wv pixels per item.  Output pixel (n, oy, ox) becomes the virtual
 * pixel q = (n*hv + oy)*wv + ox, and its tap (ky, kx) reads phase (ky % s,
 * kx % s) at q + (ky / s)*wv + kx / s: for one tap, consecutive q read
 * consecutive grid pixels, so a tile of 16 of them is one tile load.
 *
 *   forward    y[q][o] = sum over taps and ci of grid[q + tap][ci] * W[tap][ci][o]
 *              The grids hold pixels of ic bytes: A's rows are 16 virtual
 *              pixels, 64 channels each, ic bytes apart; the virtual
 *              pixels that are no output pixel (oy >= oh or ox >= ow) are
 *              computed and dropped.
 *   weights    dW[tap][ci][o] = sum over q of plane[ci][q + tap] * dy[q][o]
 *              The grids are laid out channel by channel ("planes"): A's
 *              rows are 16 channels, 64 virtual pixels each, a plane
 *              apart; B is dy packed in q's order, zero at the virtual
 *              pixels that are no output pixel, so they add nothing.
 *
 * The grid's width wv is at least ow, and as small as it can be: a read
 * past a grid row's end (b >= wv) lands on the next row's first pixels,
 * which is right when the pixel read and the one landed on are both
 * padding (zeros).  At stride 1 that makes wv = iw + p: a row's right
 * padding is the next one's left.  The height hv likewise, into the next
 * item.  Extra virtual pixels over ResNet-18's real ones: 4 % at 56 x 56,
 * 31 % at 7 x 7.  Integer sums: the same bits as the kernel's loops.
 *
 * Few input channels at a stride (ResNet's stem: 3 at stride 2) go in
 * space to depth instead: s x s pixels as one of s*s*ic channels, a
 * stride-1 convolution of ceil(k/s) x ceil(k/s) taps over them (the last
 * section).
 *
 * Sections: the grids; the forward layout; the weight gradient's layout;
 * the convolution; space to depth.
 */
#include "emu_int.h"

#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>

/* ---- the grids ---- */

/* xp's row or column c (padded coordinates) is padding. */
static int padding(int c, int p, int size)
{
    return c < p || c >= p + size;
}

/* The least grid width (or height) over `out` output pixels: every read
 * at or past it must be padding, and so must the pixel it lands on.  Taps
 * k of phase k % s are read at offset k / s. */
static int grid_size(int out, int in, int taps, int s, int p)
{
    const int most = out + (taps - 1) / s;
    for (int w = out; w < most; w++) {
        int ok = 1;
        for (int k = 0; k < taps && ok; k++)
            for (int b = w; b < out + k / s && ok; b++)
                ok = padding(s * b + k % s, p, in) && padding(s * (b - w) + k % s, p, in);
        if (ok)
            return w;
    }
    return most;
}

int emu_implicit_plan(const struct fx_geom *g, struct emu_implicit *im)
{
    memset(im, 0, sizeof *im);
    if (g->s > EMU_IMPLICIT_STRIDE_MAX || g->n < 1)
        return -1;
    im->g = *g;
    im->icpad = (g->ic + 31) / 32 * 32;
    im->ocpad = (g->oc + 31) / 32 * 32;
    im->wv = grid_size(g->ow, g->iw, g->kw, g->s, g->p);
    im->hv = grid_size(g->oh, g->ih, g->kh, g->s, g->p);
    for (int i = 0; i < EMU_IMPLICIT_STRIDE_MAX * EMU_IMPLICIT_STRIDE_MAX; i++)
        im->phase[i] = -1;
    for (int ky = 0; ky < g->kh; ky++)
        for (int kx = 0; kx < g->kw; kx++) {
            int *ph = &im->phase[ky % g->s * g->s + kx % g->s];
            if (*ph < 0)
                *ph = im->phases++;
        }
    im->q = (int64_t)g->n * im->hv * im->wv;
    im->qpad = (im->q + 63) / 64 * 64;
    im->reach = (g->kh - 1) / g->s * im->wv + (g->kw - 1) / g->s;
    /* planes reach the farthest tap's read past the last virtual pixel,
     * and lie an odd number of cache lines apart, so that a tile's 16 rows
     * fall in different sets of the L1 (a multiple of 4 KiB put them in
     * one) */
    const int64_t bytes = (im->qpad + im->reach + 63) / 64;
    im->plane = (size_t)(bytes | 1) * 64;
    return im->plane <= INT32_MAX ? 0 : -1; /* a tile load's row stride */
}

size_t emu_wgrad_planes_bytes(const struct emu_implicit *im)
{
    return (size_t)im->phases * (size_t)im->icpad * im->plane;
}

size_t emu_wgrad_dy_bytes(const struct emu_implicit *im)
{
    return (size_t)im->qpad * (size_t)im->ocpad;
}

int emu_implicit_tap(const struct emu_implicit *im, int tap, int *offset)
{
    const int s = im->g.s, ky = tap / im->g.kw, kx = tap % im->g.kw;
    *offset = ky / s * im->wv + kx / s;
    return im->phase[ky % s * s + kx % s];
}

/* Item n's bytes of a buffer of `total` bytes that holds `per_item` for
 * each: its own, and for the last item the rest of the buffer too (the
 * farthest reads, zeros). */
static size_t item_bytes(const struct emu_implicit *im, int n, size_t per_item, size_t total)
{
    return n == im->g.n - 1 ? total - (size_t)n * per_item : per_item;
}

/* The pixels of an input row in phase column px: the first x0 and every
 * s-th after it, from grid column b0 on; how many of them the grid holds
 * (0 if none). */
static int phase_run(const struct emu_implicit *im, int px, int *x0, int *b0)
{
    const struct fx_geom *g = &im->g;
    *x0 = ((px - g->p) % g->s + g->s) % g->s;
    *b0 = (*x0 + g->p) / g->s;
    if (*x0 >= g->iw || *b0 >= im->wv)
        return 0;
    const int count = (g->iw - *x0 + g->s - 1) / g->s;
    return *b0 + count > im->wv ? im->wv - *b0 : count;
}

/* ---- the forward layout: pixels ---- */

size_t emu_implicit_pixels_bytes(const struct emu_implicit *im)
{
    /* a tile row reads 64 bytes from its pixel on, past ic when ic < 64 */
    return ((size_t)(im->qpad + im->reach) * (size_t)im->g.ic + 64 + 63) / 64 * 64;
}

static void s2d_pixels(const struct emu_implicit *im, const int8_t *x, int n, int8_t *grid);

void emu_implicit_pixels(const struct emu_implicit *im, const int8_t *x, int n, int8_t *grids)
{
    if (im->s2d.s) {
        s2d_pixels(im, x, n, grids);
        return;
    }
    const struct fx_geom *g = &im->g;
    const size_t cells = (size_t)im->hv * im->wv, pixel = (size_t)g->ic;
    const size_t bytes = emu_implicit_pixels_bytes(im);
    for (int ph = 0; ph < im->phases; ph++)
        memset(grids + (size_t)ph * bytes + n * cells * pixel, 0,
               item_bytes(im, n, cells * pixel, bytes));
    for (int y = 0; y < g->ih; y++) {
        const int py = (y + g->p) % g->s, a = (y + g->p) / g->s;
        if (a >= im->hv) /* past the grid: no tap reads it */
            continue;
        const int8_t *row = x + ((size_t)n * g->ih + y) * g->iw * pixel;
        for (int px = 0, x0, b0, count; px < g->s; px++) {
            const int ph = im->phase[py * g->s + px];
            if (ph < 0 || !(count = phase_run(im, px, &x0, &b0)))
                continue;
            int8_t *dst = grids + (size_t)ph * bytes +
                          ((size_t)n * cells + (size_t)a * im->wv + (size_t)b0) * pixel;
            if (g->s == 1)
                memcpy(dst, row + (size_t)x0 * pixel, (size_t)count * pixel);
            else
                for (int i = 0; i < count; i++)
                    memcpy(dst + (size_t)i * pixel, row + ((size_t)x0 + (size_t)i * g->s) * pixel,
                           pixel);
        }
    }
}

/* ---- the weight gradient's layout: planes, and dy packed ---- */

/* A 16 x 16 block of bytes (rows lds apart) transposed into dst (rows ldd
 * apart) in SSE2 registers: rows interleaved by bytes, then by pairs,
 * quads and eights of bytes, each step doubling the run of one column. */
void emu_transpose16(const int8_t *src, size_t lds, int8_t *dst, size_t ldd)
{
    __m128i a[16], b[16], c[16], d[16];
    for (int i = 0; i < 16; i++)
        a[i] = _mm_loadu_si128((const __m128i *)(src + i * lds));
    for (int i = 0; i < 8; i++) { /* rows 2i, 2i+1: columns 0-7, 8-15 */
        b[2 * i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
        b[2 * i + 1] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
    }
    for (int q = 0; q < 4; q++) /* rows 4q .. 4q+3: columns 0-3, 4-7, 8-11, 12-15 */
        for (int h = 0; h < 2; h++) {
            c[4 * q + 2 * h] = _mm_unpacklo_epi16(b[4 * q + h], b[4 * q + 2 + h]);
            c[4 * q + 2 * h + 1] = _mm_unpackhi_epi16(b[4 * q + h], b[4 * q + 2 + h]);
        }
    for (int e = 0; e < 2; e++) /* rows 8e .. 8e+7: columns in pairs */
        for (int k = 0; k < 4; k++) {
            d[8 * e + 2 * k] = _mm_unpacklo_epi32(c[8 * e + k], c[8 * e + 4 + k]);
            d[8 * e + 2 * k + 1] = _mm_unpackhi_epi32(c[8 * e + k], c[8 * e + 4 + k]);
        }
    for (int k = 0; k < 8; k++) { /* columns 2k and 2k+1, all 16 rows */
        _mm_storeu_si128((__m128i *)(dst + 2 * k * ldd), _mm_unpacklo_epi64(d[k], d[k + 8]));
        _mm_storeu_si128((__m128i *)(dst + (2 * k + 1) * ldd), _mm_unpackhi_epi64(d[k], d[k + 8]));
    }
}

/* The first byte of item n's grid in a phase's plane of channel 0. */
static int8_t *grid_of(const struct emu_implicit *im, int8_t *planes, int phase, int n)
{
    return planes + (size_t)phase * im->icpad * im->plane + (size_t)n * im->hv * im->wv;
}

/* One row of x's pixels that fall in one phase: pixels x0, x0 + s, ...
 * (count of them) into grid columns b0 on, channel by channel: 16 x 16
 * blocks in registers, the last block ending on the last pixel (some
 * transposed twice), rows of fewer than 16 byte by byte. */
static void row_to_planes(const struct emu_implicit *im, const int8_t *src, int count, int8_t *dst)
{
    const int ic = im->g.ic;
    const size_t step = (size_t)im->g.s * ic;
    if (count < 16) {
        for (int i = 0; i < count; i++)
            for (int c = 0; c < ic; c++)
                dst[(size_t)c * im->plane + i] = src[(size_t)i * step + c];
        return;
    }
    for (int i0 = 0; i0 < count; i0 += 16) {
        const size_t i = (size_t)(i0 + 16 <= count ? i0 : count - 16);
        for (int c = 0; c < ic; c += 16)
            emu_transpose16(src + i * step + c, step, dst + (size_t)c * im->plane + i, im->plane);
    }
}

/* Space to depth: item n's pixels into the planes of the s x s pixels'
 * channels, (py, px, ci) each, byte by byte (the stem's 3 channels). */
static void s2d_planes(const struct emu_implicit *im, const int8_t *x, int n, int8_t *planes)
{
    const struct fx_geom *g = &im->s2d;
    for (int a = 0; a < im->hv; a++)
        for (int py = 0; py < g->s; py++) {
            const int y = g->s * a + py - g->p;
            if (y < 0 || y >= g->ih)
                continue;
            const int8_t *row = x + ((size_t)n * g->ih + (size_t)y) * g->iw * g->ic;
            int8_t *cell = grid_of(im, planes, 0, n) + (size_t)a * im->wv;
            for (int px = 0; px < g->s; px++) {
                /* the grid columns whose pixel px is in the row */
                const int b0 = (g->p - px + g->s - 1) / g->s;
                int b1 = (g->iw + g->p - px + g->s - 1) / g->s;
                b1 = b1 < im->wv ? b1 : im->wv;
                for (int ci = 0; ci < g->ic; ci++) {
                    int8_t *dst =
                        cell + ((size_t)(py * g->s + px) * g->ic + (size_t)ci) * im->plane;
                    for (int b = b0; b < b1; b++)
                        dst[b] = row[(size_t)(g->s * b + px - g->p) * g->ic + (size_t)ci];
                }
            }
        }
}

int64_t emu_wgrad_row(const struct emu_implicit *im, int tap, int c)
{
    if (c >= im->g.ic)
        return -1;
    if (!im->s2d.s)
        return (int64_t)tap * im->g.ic + c;
    const struct fx_geom *g = &im->s2d;
    const int u = tap / im->g.kw, v = tap % im->g.kw; /* c: (py, px, ci) */
    const int ky = g->s * u + c / (g->s * g->ic), kx = g->s * v + c / g->ic % g->s;
    return ky < g->kh && kx < g->kw ? (int64_t)(ky * g->kw + kx) * g->ic + c % g->ic : -1;
}

void emu_wgrad_planes(const struct emu_implicit *im, const int8_t *x, int n, int8_t *planes)
{
    const struct fx_geom *g = &im->g;
    const size_t zeros = item_bytes(im, n, (size_t)im->hv * im->wv, im->plane);
    for (int ph = 0; ph < im->phases; ph++)
        for (int c = 0; c < im->icpad; c++)
            memset(grid_of(im, planes, ph, n) + (size_t)c * im->plane, 0, zeros);
    if (im->s2d.s) {
        s2d_planes(im, x, n, planes);
        return;
    }
    for (int y = 0; y < g->ih; y++) {
        const int py = (y + g->p) % g->s, a = (y + g->p) / g->s;
        if (a >= im->hv) /* past the grid: no tap reads it */
            continue;
        const int8_t *row = x + ((size_t)n * g->ih + y) * g->iw * g->ic;
        for (int px = 0, x0, b0, count; px < g->s; px++) {
            const int ph = im->phase[py * g->s + px];
            if (ph < 0 || !(count = phase_run(im, px, &x0, &b0)))
                continue;
            row_to_planes(im, row + (size_t)x0 * g->ic, count,
                          grid_of(im, planes, ph, n) + (size_t)a * im->wv + b0);
        }
    }
}

/* Packed dy: block g (64 virtual pixels), group h (16 output channels),
 * pixel q's byte for channel o at
 *   packed[(g * ocpad/16 + h) * 1024 + (q % 64) / 4 * 64 + (o % 16) * 4 + q % 4]:
 * each 1024 bytes are one B tile as tdpbssd reads it. */
static int8_t *packed_at(const struct emu_implicit *im, int8_t *packed, int64_t q, int h)
{
    return packed + ((size_t)(q / 64) * (size_t)(im->ocpad / 16) + (size_t)h) * 1024 +
           (size_t)(q % 64 / 4 * 64 + q % 4);
}

/* Virtual pixels in order from one on, without a division each. */
struct walk {
    const struct emu_implicit *im;
    int64_t n;
    int a, b;
};

static struct walk walk_from(const struct emu_implicit *im, int64_t q)
{
    const int64_t cells = (int64_t)im->hv * im->wv;
    struct walk k = {im, q / cells, (int)(q % cells / im->wv), (int)(q % im->wv)};
    return k;
}

/* The walk's pixel's row of the output (n, oy, ox), or -1 where it is no
 * output pixel (past a grid row's or column's outputs, or the last item);
 * then the next pixel. */
static int64_t walk_next(struct walk *k)
{
    const struct fx_geom *g = &k->im->g;
    const int64_t row =
        k->n < g->n && k->a < g->oh && k->b < g->ow ? (k->n * g->oh + k->a) * g->ow + k->b : -1;
    if (++k->b == k->im->wv && (k->b = 0, ++k->a == k->im->hv))
        k->a = 0, k->n++;
    return row;
}

/* Errors src (NULL: none) of pixel q into packed, byte by byte (zeros
 * past oc). */
static void pack_pixel(const struct emu_implicit *im, const int8_t *src, int64_t q, int8_t *packed)
{
    for (int h = 0; h < im->ocpad / 16; h++) {
        int8_t *dst = packed_at(im, packed, q, h);
        for (int i = 0; i < 16; i++)
            dst[i * 4] = src && h * 16 + i < im->g.oc ? src[h * 16 + i] : 0;
    }
}

/* The walk's next pixel's errors, or NULL. */
static const int8_t *next_errors(struct walk *k, const int8_t *dy)
{
    const int64_t row = walk_next(k);
    return row < 0 ? NULL : dy + row * k->im->g.oc;
}

void emu_wgrad_pack_dy(const struct emu_implicit *im, const int8_t *dy, int n, int8_t *packed)
{
    const int64_t q0 = (int64_t)n * im->hv * im->wv;
    const int64_t q1 = n == im->g.n - 1 ? im->qpad : q0 + (int64_t)im->hv * im->wv;
    /* four pixels at a time where all four are this item's: interleaved
     * by bytes, then pairs (B's 4 k-bytes per column); the ends byte by
     * byte, as is all of it when oc is no multiple of 16 */
    int64_t four = (q0 + 3) / 4 * 4, end = q1 / 4 * 4;
    if (im->g.oc % 16 || four > q1)
        four = q1;
    if (end < four)
        end = four;
    struct walk k = walk_from(im, q0);
    for (int64_t q = q0; q < four; q++)
        pack_pixel(im, next_errors(&k, dy), q, packed);
    for (int64_t q = four; q < end; q += 4) {
        const int8_t *src[4];
        for (int i = 0; i < 4; i++)
            src[i] = next_errors(&k, dy);
        for (int h = 0; h < im->ocpad / 16; h++) {
            __m128i r[4];
            for (int i = 0; i < 4; i++)
                r[i] = src[i] && h * 16 < im->g.oc
                           ? _mm_loadu_si128((const __m128i *)(src[i] + h * 16))
                           : _mm_setzero_si128();
            const __m128i lo01 = _mm_unpacklo_epi8(r[0], r[1]),
                          hi01 = _mm_unpackhi_epi8(r[0], r[1]);
            const __m128i lo23 = _mm_unpacklo_epi8(r[2], r[3]),
                          hi23 = _mm_unpackhi_epi8(r[2], r[3]);
            __m128i *out = (__m128i *)packed_at(im, packed, q, h);
            _mm_storeu_si128(out, _mm_unpacklo_epi16(lo01, lo23));
            _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(lo01, lo23));
            _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(hi01, hi23));
            _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(hi01, hi23));
        }
    }
    for (int64_t q = end; q < q1; q++)
        pack_pixel(im, next_errors(&k, dy), q, packed);
}

/* ---- the convolution ---- */

int emu_implicit_conv_plan(const struct fx_geom *g, struct emu_implicit *im)
{
    /* x itself is A, or im2col copies each pixel it reads once */
    const int unpadded_1x1 = g->kh == 1 && g->kw == 1 && g->p == 0;
    if (g->ic % 64 == 0 && !unpadded_1x1 && !emu_implicit_plan(g, im))
        return 0;
    return emu_implicit_s2d_plan(g, im);
}

size_t emu_implicit_offsets(const struct emu_implicit *im, int flip, int64_t *aoff)
{
    const struct fx_geom *g = &im->g;
    if (im->s2d.s) { /* a step per window row */
        for (int u = 0; aoff && u < g->kh; u++)
            aoff[u] = (int64_t)u * im->wv * g->ic;
        return (size_t)g->kh * sizeof *aoff;
    }
    const int steps = g->kh * g->kw * g->ic / 64;
    for (int i = 0; aoff && i < steps; i++) {
        const int tap = i * 64 / g->ic, ky = flip ? g->kh - 1 - tap / g->kw : tap / g->kw;
        int offset;
        const int ph = emu_implicit_tap(im, ky * g->kw + tap % g->kw, &offset);
        aoff[i] = (int64_t)ph * (int64_t)emu_implicit_pixels_bytes(im) + (int64_t)offset * g->ic +
                  i * 64 % g->ic;
    }
    return (size_t)steps * sizeof *aoff;
}

int emu_implicit_parts(const struct emu_implicit *im)
{
    return (int)((im->q + EMU_IMPLICIT_ROWS - 1) / EMU_IMPLICIT_ROWS);
}

uint32_t emu_implicit_part(const struct emu_implicit *im, const int8_t *grid, const int64_t *aoff,
                           const struct eeb_emu_packed_b *b, int part, int32_t *c)
{
    const int64_t q0 = (int64_t)part * EMU_IMPLICIT_ROWS;
    const int64_t q1 = im->q - q0 < EMU_IMPLICIT_ROWS ? im->q : q0 + EMU_IMPLICIT_ROWS;
    int64_t row[EMU_IMPLICIT_ROWS]; /* 32 at a time: past q1 too, where q1 ends the grid */
    struct walk k = walk_from(im, q0);
    for (int r = 0; r < EMU_IMPLICIT_ROWS; r++)
        row[r] = walk_next(&k);
    return emu_conv_amx(grid + (size_t)q0 * (size_t)im->g.ic, (size_t)im->g.ic, aoff, b->kpad / 64,
                        b, row, (int)(q1 - q0), c, im->g.oc);
}

/* The emulator's implicit GEMM for g, where it runs one (on AMX); -1 if
 * it does not. */
static int conv_plan(const struct fx_geom *g, struct emu_implicit *im)
{
    return eeb_emu_gemm_best_isa() == EEB_EMU_ISA_AMX ? emu_implicit_conv_plan(g, im) : -1;
}

size_t eeb_emu_conv_scratch(const struct fx_geom *g)
{
    struct emu_implicit im;
    if (conv_plan(g, &im))
        return 0;
    return (size_t)im.phases * emu_implicit_pixels_bytes(&im) + emu_implicit_offsets(&im, 0, NULL);
}

int eeb_emu_conv_pack(const struct fx_geom *g, const int8_t *weights, struct eeb_emu_packed_b *out)
{
    struct emu_implicit im;
    if (conv_plan(g, &im))
        return -1;
    if (!im.s2d.s)
        return eeb_emu_gemm_pack_b(EEB_EMU_ISA_AMX, weights, g->kh * g->kw * g->ic, g->oc, g->oc,
                                   out);
    int8_t *w2 = malloc(emu_implicit_s2d_weights(&im, weights, NULL));
    if (!w2)
        return -1;
    emu_implicit_s2d_weights(&im, weights, w2);
    const int rc = eeb_emu_gemm_pack_b(EEB_EMU_ISA_AMX, w2, im.g.kh * 64, g->oc, g->oc, out);
    free(w2);
    return rc;
}

int eeb_emu_conv(const struct fx_geom *g, const int8_t *x, const struct eeb_emu_packed_b *w,
                 int8_t *scratch, int32_t *y, uint32_t *maxabs)
{
    struct emu_implicit im;
    if (conv_plan(g, &im) || !w->amx || w->n != g->oc ||
        w->k != (im.s2d.s ? im.g.kh * 64 : g->kh * g->kw * g->ic)) /* not eeb_emu_conv_pack's */
        return -1;
    int64_t *aoff =
        (int64_t *)(void *)(scratch + (size_t)im.phases * emu_implicit_pixels_bytes(&im));
    emu_implicit_offsets(&im, 0, aoff);
    for (int n = 0; n < g->n; n++)
        emu_implicit_pixels(&im, x, n, scratch);
    for (int part = 0; part < emu_implicit_parts(&im); part++) {
        const uint32_t most = emu_implicit_part(&im, scratch, aoff, w, part, y);
        *maxabs = most > *maxabs ? most : *maxabs;
    }
    return 0;
}

/* ---- space to depth: a strided convolution of few input channels ---- */

int emu_implicit_s2d_plan(const struct fx_geom *g, struct emu_implicit *im)
{
    const int s = g->s, c2 = s * s * g->ic;
    const int kh2 = (g->kh + s - 1) / s, kw2 = (g->kw + s - 1) / s;
    if (s < 2 || s > EMU_IMPLICIT_STRIDE_MAX || g->kh * g->kw == 1 || kw2 * c2 > 64)
        return -1;
    const struct fx_geom g2 = {
        g->n, g->oh + kh2 - 1, g->ow + kw2 - 1, c2, g->oh, g->ow, g->oc, kh2, kw2, 1, 0};
    if (emu_implicit_plan(&g2, im))
        return -1;
    im->s2d = *g;
    return 0;
}

size_t emu_implicit_s2d_weights(const struct emu_implicit *im, const int8_t *weights, int8_t *out)
{
    const struct fx_geom *g = &im->s2d, *g2 = &im->g;
    const size_t bytes = (size_t)g2->kh * 64 * (size_t)g->oc;
    if (!out)
        return bytes;
    memset(out, 0, bytes);
    for (int u = 0; u < g2->kh; u++)
        for (int j = 0; j < g2->kw * g2->ic; j++) { /* (v, py, px, ci) */
            const int v = j / g2->ic, rem = j % g2->ic;
            const int py = rem / (g->s * g->ic), px = rem / g->ic % g->s, ci = rem % g->ic;
            const int ky = g->s * u + py, kx = g->s * v + px;
            if (ky < g->kh && kx < g->kw)
                memcpy(out + ((size_t)u * 64 + (size_t)j) * g->oc,
                       weights + ((size_t)(ky * g->kw + kx) * g->ic + ci) * g->oc, (size_t)g->oc);
        }
    return bytes;
}

/* Item n's grid: pixel (a, b) holds, for py and px < s, xp's pixel
 * (s*a + py, s*b + px) (x padded by p), py's px run of s*ic bytes one copy. */
static void s2d_pixels(const struct emu_implicit *im, const int8_t *x, int n, int8_t *grid)
{
    const struct fx_geom *g = &im->s2d;
    const size_t cells = (size_t)im->hv * im->wv, c2 = (size_t)im->g.ic, run = (size_t)g->ic;
    int8_t *item = grid + (size_t)n * cells * c2;
    memset(item, 0, item_bytes(im, n, cells * c2, emu_implicit_pixels_bytes(im)));
    for (int a = 0; a < im->hv; a++)
        for (int py = 0; py < g->s; py++) {
            const int y = g->s * a + py - g->p;
            if (y < 0 || y >= g->ih)
                continue;
            const int8_t *row = x + ((size_t)n * g->ih + (size_t)y) * g->iw * run;
            for (int b = 0; b < im->wv; b++) {
                const int x0 = g->s * b - g->p; /* px 0's pixel */
                int8_t *dst =
                    item + ((size_t)a * im->wv + (size_t)b) * c2 + (size_t)py * g->s * run;
                if (x0 >= 0 && x0 + g->s <= g->iw) { /* the whole run: s*ic bytes */
                    const int8_t *src = row + (size_t)x0 * run;
                    for (size_t i = 0; i < (size_t)g->s * run; i++)
                        dst[i] = src[i];
                    continue;
                }
                for (int px = 0; px < g->s; px++)
                    if (x0 + px >= 0 && x0 + px < g->iw)
                        memcpy(dst + (size_t)px * run, row + (size_t)(x0 + px) * run, run);
            }
        }
}
