/*
 * gemm.c - int8 GEMM: instruction-set dispatch, packing, and the portable
 * path.  The vector tile loops live in gemm_avx512.c and gemm_avx2.c.
 */
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"

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

/* Eight rows of 16 columns to the packed order (each column's 8 bytes
 * together), offset by +128 (x + 128 == x ^ 0x80 for bytes): bytes, then
 * pairs, then quads of rows interleaved. */
static void interleave16(const int8_t *const r[8], uint8_t *dst)
{
    const __m128i flip = _mm_set1_epi8((char)0x80);
    __m128i row[8], pair[8], quad[8];
    for (int q = 0; q < 8; q++)
        row[q] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)r[q]), flip);
    for (int q = 0; q < 8; q += 2) { /* columns 0-7, then 8-15, of rows q and q+1 */
        pair[q] = _mm_unpacklo_epi8(row[q], row[q + 1]);
        pair[q + 1] = _mm_unpackhi_epi8(row[q], row[q + 1]);
    }
    for (int h = 0; h < 2; h++) /* rows 0-3 (4h = 0) and 4-7, 4 columns a vector */
        for (int q = 0; q < 2; q++) {
            quad[4 * h + 2 * q] = _mm_unpacklo_epi16(pair[4 * h + q], pair[4 * h + 2 + q]);
            quad[4 * h + 2 * q + 1] = _mm_unpackhi_epi16(pair[4 * h + q], pair[4 * h + 2 + q]);
        }
    for (int q = 0; q < 4; q++) { /* 2 columns of 8 rows a vector */
        _mm_storeu_si128((__m128i *)(dst + 32 * q), _mm_unpacklo_epi32(quad[q], quad[4 + q]));
        _mm_storeu_si128((__m128i *)(dst + 32 * q + 16), _mm_unpackhi_epi32(quad[q], quad[4 + q]));
    }
}

int eeb_emu_gemm_pack_b(const int8_t *b, int k, int n, int ldb, struct eeb_emu_packed_b *out)
{
    memset(out, 0, sizeof *out);
    if (k <= 0 || n <= 0 || k > EEB_EMU_GEMM_MAX_K)
        return -1;
    out->k = k;
    out->n = n;
    out->k8 = round_up(k, 8);
    out->panels = round_up(n, EMU_NR) / EMU_NR;
    size_t bytes = (size_t)out->panels * (size_t)out->k8 * EMU_NR;
    out->data = aligned_alloc(64, bytes); /* bytes is a multiple of 256 */
    out->bias = calloc((size_t)out->panels * EMU_NR, sizeof *out->bias);
    if (!out->data || !out->bias) {
        eeb_emu_gemm_free_b(out);
        return -1;
    }
    if (k % 8 || n % EMU_NR) /* padding: 0, which multiplies anything to 0 */
        memset(out->data, 0, bytes);
    for (int p = 0; p < out->panels; p++) {
        int j0 = p * EMU_NR, nc = n - j0 < EMU_NR ? n - j0 : EMU_NR;
        uint8_t *panel = out->data + (size_t)p * out->k8 * EMU_NR;
        for (int kk = 0; kk < k; kk += 8) {
            const int8_t *r[8];
            for (int q = 0; q < 8; q++)
                r[q] = kk + q < k ? b + (size_t)(kk + q) * ldb + j0 : NULL;
            uint8_t *dst = panel + (size_t)(kk / 8) * EMU_NR * 8;
            if (r[7] && nc == EMU_NR) {
                const int8_t *right[8];
                for (int q = 0; q < 8; q++)
                    right[q] = r[q] + 16;
                interleave16(r, dst);
                interleave16(right, dst + 128);
                continue;
            }
            for (int q = 0; q < 8 && r[q]; q++)
                for (int col = 0; col < nc; col++)
                    dst[col * 8 + q] = (uint8_t)(r[q][col] ^ 0x80);
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
            const uint8_t *col = emu_panel(b, j / EMU_NR) + (j % EMU_NR) * 8;
            int32_t sum = b->bias[j];
            for (int kk = 0; kk < b->k; kk++)
                sum +=
                    (int32_t)a[(size_t)i * lda + kk] * (col[(kk / 8) * EMU_NR * 8 + kk % 8] - 128);
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
    const size_t k8 = (size_t)b->k8;
    int16_t *wide = malloc(ROW_BLOCK * k8 * sizeof *wide);
    if (!wide)
        return -1;
    for (int i0 = 0; i0 < m; i0 += ROW_BLOCK) {
        int rows = m - i0 < ROW_BLOCK ? m - i0 : ROW_BLOCK;
        const int8_t *src = a + (size_t)i0 * lda;
        /* the tiles read whole tiles of rows; the rows past the end are zero */
        memset(wide + (size_t)rows * k8, 0, (size_t)(round_up(rows, 4) - rows) * k8 * sizeof *wide);
        for (int i = 0; i < rows; i++) {
            int16_t *dst = wide + (size_t)i * k8;
            int kk = 0;
            for (; kk < b->k; kk++)
                dst[kk] = src[(size_t)i * lda + kk];
            for (; kk < b->k8; kk++)
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
