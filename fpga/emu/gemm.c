/*
 * gemm.c - int8 GEMM: instruction-set dispatch, packing, and the portable
 * path.  The vector tile loops live in gemm_avx512.c and gemm_avx2.c.
 */
#include "emu_int.h"
#include "fx_arith.h"

#include <emmintrin.h>
#include <stdlib.h>
#include <string.h>

static int round_up(int x, int to)
{
    return (x + to - 1) / to * to;
}

enum eeb_emu_isa eeb_emu_gemm_best_isa(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
        return EEB_EMU_ISA_AVX512VNNI;
    if (__builtin_cpu_supports("avx2"))
        return EEB_EMU_ISA_AVX2;
    return EEB_EMU_ISA_SCALAR;
}

const char *eeb_emu_isa_name(enum eeb_emu_isa isa)
{
    switch (isa) {
    case EEB_EMU_ISA_SCALAR: return "scalar";
    case EEB_EMU_ISA_AVX2: return "avx2";
    case EEB_EMU_ISA_AVX512VNNI: return "avx512vnni";
    }
    return "?";
}

/* Four rows of 16 columns interleaved to the packed order (each column's
 * four bytes together, as vpdpbusd and vpmaddwd read them), offset by +128
 * (x + 128 == x ^ 0x80 for bytes). */
static void interleave16(const int8_t *r0, const int8_t *r1, const int8_t *r2, const int8_t *r3,
                         uint8_t *dst)
{
    const __m128i flip = _mm_set1_epi8((char)0x80);
    const __m128i a = _mm_loadu_si128((const __m128i *)r0),
                  b = _mm_loadu_si128((const __m128i *)r1);
    const __m128i c = _mm_loadu_si128((const __m128i *)r2),
                  d = _mm_loadu_si128((const __m128i *)r3);
    const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    const __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    const __m128i q[4] = {_mm_unpacklo_epi16(ab_lo, cd_lo), _mm_unpackhi_epi16(ab_lo, cd_lo),
                          _mm_unpacklo_epi16(ab_hi, cd_hi), _mm_unpackhi_epi16(ab_hi, cd_hi)};
    for (int i = 0; i < 4; i++)
        _mm_storeu_si128((__m128i *)(dst + 16 * i), _mm_xor_si128(q[i], flip));
}

int eeb_emu_gemm_pack_b(const int8_t *b, int k, int n, int ldb, struct eeb_emu_packed_b *out)
{
    memset(out, 0, sizeof *out);
    if (k <= 0 || n <= 0 || k > EEB_EMU_GEMM_MAX_K)
        return -1;
    out->k = k;
    out->n = n;
    out->k4 = round_up(k, 4);
    out->panels = round_up(n, EMU_NR) / EMU_NR;
    size_t bytes = (size_t)out->panels * (size_t)out->k4 * EMU_NR;
    out->data = aligned_alloc(64, bytes); /* bytes is a multiple of 128 */
    out->bias = calloc((size_t)out->panels * EMU_NR, sizeof *out->bias);
    if (!out->data || !out->bias) {
        eeb_emu_gemm_free_b(out);
        return -1;
    }
    if (k % 4 || n % EMU_NR) /* padding: 0, which multiplies anything to 0 */
        memset(out->data, 0, bytes);
    for (int p = 0; p < out->panels; p++) {
        int j0 = p * EMU_NR, nc = n - j0 < EMU_NR ? n - j0 : EMU_NR;
        uint8_t *panel = out->data + (size_t)p * out->k4 * EMU_NR;
        for (int kk = 0; kk < k; kk += 4) {
            const int8_t *r[4];
            for (int q = 0; q < 4; q++)
                r[q] = kk + q < k ? b + (size_t)(kk + q) * ldb + j0 : NULL;
            uint8_t *dst = panel + (size_t)(kk / 4) * EMU_NR * 4;
            if (r[3] && nc == EMU_NR) {
                interleave16(r[0], r[1], r[2], r[3], dst);
                interleave16(r[0] + 16, r[1] + 16, r[2] + 16, r[3] + 16, dst + 64);
                continue;
            }
            for (int q = 0; q < 4 && r[q]; q++)
                for (int col = 0; col < nc; col++)
                    dst[col * 4 + q] = (uint8_t)(r[q][col] ^ 0x80);
        }
    }
    return 0;
}

int eeb_emu_gemm_set_bias(struct eeb_emu_packed_b *b, const int64_t *bias)
{
    for (int j = 0; j < b->n; j++)
        if (bias[j] > EEB_EMU_GEMM_BIAS_MAX(b->k) || bias[j] < -EEB_EMU_GEMM_BIAS_MAX(b->k))
            return -1;
    for (int j = 0; j < b->n; j++)
        b->bias[j] = (int32_t)bias[j];
    return 0;
}

void eeb_emu_gemm_free_b(struct eeb_emu_packed_b *b)
{
    free(b->data);
    free(b->bias);
    memset(b, 0, sizeof *b);
}

/* The portable path, reading the same packed layout as the vector ones. */
static uint32_t gemm_scalar(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                            int32_t *c, int ldc)
{
    uint32_t maxabs = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < b->n; j++) {
            const uint8_t *col = emu_panel(b, j / EMU_NR) + (j % EMU_NR) * 4;
            int32_t sum = b->bias[j];
            for (int kk = 0; kk < b->k; kk++)
                sum +=
                    (int32_t)a[(size_t)i * lda + kk] * (col[(kk / 4) * EMU_NR * 4 + kk % 4] - 128);
            c[(size_t)i * ldc + j] = sum;
            uint32_t mag = (uint32_t)fx_abs64(sum);
            maxabs = mag > maxabs ? mag : maxabs;
        }
    }
    return maxabs;
}

/* Rows of A widened and multiplied at a time on AVX2: the block of A
 * (at most 64 x K x 2 bytes) and of C stay in cache while every panel of B
 * goes by. */
#define ROW_BLOCK 64

static int gemm_avx2(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b, int32_t *c,
                     int ldc, uint32_t *most)
{
    const size_t k4 = (size_t)b->k4;
    int16_t *wide = malloc(ROW_BLOCK * k4 * sizeof *wide);
    if (!wide)
        return -1;
    for (int i0 = 0; i0 < m; i0 += ROW_BLOCK) {
        int rows = m - i0 < ROW_BLOCK ? m - i0 : ROW_BLOCK;
        const int8_t *src = a + (size_t)i0 * lda;
        /* the tiles read whole tiles of rows; the rows past the end are zero */
        memset(wide + (size_t)rows * k4, 0, (size_t)(round_up(rows, 4) - rows) * k4 * sizeof *wide);
        for (int i = 0; i < rows; i++) {
            int16_t *dst = wide + (size_t)i * k4;
            int kk = 0;
            for (; kk < b->k; kk++)
                dst[kk] = src[(size_t)i * lda + kk];
            for (; kk < b->k4; kk++)
                dst[kk] = 0;
        }
        uint32_t got = emu_gemm_avx2(rows, wide, b, c + (size_t)i0 * ldc, ldc);
        *most = got > *most ? got : *most;
    }
    free(wide);
    return 0;
}

int eeb_emu_gemm(enum eeb_emu_isa isa, int m, const int8_t *a, int lda,
                 const struct eeb_emu_packed_b *b, int32_t *c, int ldc, uint32_t *maxabs)
{
    uint32_t most = 0;
    if (m <= 0)
        return 0;
    switch (isa) {
    case EEB_EMU_ISA_SCALAR: most = gemm_scalar(m, a, lda, b, c, ldc); break;
    case EEB_EMU_ISA_AVX512VNNI: most = emu_gemm_avx512vnni(m, a, lda, b, c, ldc); break;
    case EEB_EMU_ISA_AVX2:
        if (gemm_avx2(m, a, lda, b, c, ldc, &most))
            return -1;
        break;
    }
    if (maxabs && most > *maxabs)
        *maxabs = most;
    return 0;
}

void eeb_emu_gemm_reference(int m, int n, int k, const int8_t *a, int lda, const int8_t *b, int ldb,
                            int32_t *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int32_t sum = 0;
            for (int kk = 0; kk < k; kk++)
                sum += (int32_t)a[(size_t)i * lda + kk] * b[(size_t)kk * ldb + j];
            c[(size_t)i * ldc + j] = sum;
        }
}
