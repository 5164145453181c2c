/*
 * gemm.c - int8 GEMM: instruction-set dispatch, packing, and the portable
 * path.  The vector tile loops live in gemm_avx512.c and gemm_avx2.c.
 */
#include "emu_int.h"

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
    out->colsum = calloc((size_t)out->panels * EMU_NR, sizeof *out->colsum);
    if (!out->data || !out->colsum) {
        eeb_emu_gemm_free_b(out);
        return -1;
    }
    memset(out->data, 0, bytes);
    for (int p = 0; p < out->panels; p++) {
        int j0 = p * EMU_NR, nc = n - j0 < EMU_NR ? n - j0 : EMU_NR;
        int8_t *panel = out->data + (size_t)p * out->k4 * EMU_NR;
        int32_t *sum = out->colsum + j0;
        for (int kk = 0; kk < k; kk += 4) { /* four rows interleaved per column */
            const int8_t *r[4];
            for (int q = 0; q < 4; q++)
                r[q] = kk + q < k ? b + (size_t)(kk + q) * ldb + j0 : NULL;
            int8_t *dst = panel + (size_t)(kk / 4) * EMU_NR * 4;
            if (r[3] && nc == EMU_NR) {
                for (int col = 0; col < EMU_NR; col++) {
                    dst[col * 4] = r[0][col], dst[col * 4 + 1] = r[1][col];
                    dst[col * 4 + 2] = r[2][col], dst[col * 4 + 3] = r[3][col];
                }
            } else {
                for (int q = 0; q < 4 && r[q]; q++)
                    for (int col = 0; col < nc; col++)
                        dst[col * 4 + q] = r[q][col];
            }
            for (int q = 0; q < 4 && r[q]; q++)
                for (int col = 0; col < nc; col++)
                    sum[col] += r[q][col];
        }
    }
    return 0;
}

void eeb_emu_gemm_free_b(struct eeb_emu_packed_b *b)
{
    free(b->data);
    free(b->colsum);
    memset(b, 0, sizeof *b);
}

/* The portable path, reading the same packed layout as the vector ones. */
static void gemm_scalar(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                        int32_t *c, int ldc)
{
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < b->n; j++) {
            const int8_t *col = emu_panel(b, j / EMU_NR) + (j % EMU_NR) * 4;
            int32_t sum = 0;
            for (int kk = 0; kk < b->k; kk++)
                sum += (int32_t)a[(size_t)i * lda + kk] * col[(kk / 4) * EMU_NR * 4 + kk % 4];
            c[(size_t)i * ldc + j] = sum;
        }
    }
}

/* Rows of A packed and multiplied at a time: the block of A (at most
 * 64 x K bytes) and of C stay in cache while every panel of B goes by.
 * Packing all of A first and sweeping it once per panel made large-M,
 * many-panel shapes memory-bound (15 GOP/s at M=32768, N=288, K=32). */
#define ROW_BLOCK 64

int eeb_emu_gemm(enum eeb_emu_isa isa, int m, const int8_t *a, int lda,
                 const struct eeb_emu_packed_b *b, int32_t *c, int ldc)
{
    if (m <= 0)
        return 0;
    if (isa == EEB_EMU_ISA_SCALAR) {
        gemm_scalar(m, a, lda, b, c, ldc);
        return 0;
    }
    /* Padding bytes (k4 - k) never reach a kept result (B is zero there)
     * but are zeroed all the same, so no uninitialized byte is read. */
    const size_t k4 = (size_t)b->k4;
    const int vnni = isa == EEB_EMU_ISA_AVX512VNNI, tile_rows = vnni ? 8 : 4;
    const size_t elem = vnni ? 1 : 2;
    char *packed = malloc(ROW_BLOCK * k4 * elem);
    if (!packed)
        return -1;
    for (int i0 = 0; i0 < m; i0 += ROW_BLOCK) {
        int rows = m - i0 < ROW_BLOCK ? m - i0 : ROW_BLOCK;
        const int8_t *src = a + (size_t)i0 * lda;
        /* the tiles read whole tiles of rows; the rows past the end are zero */
        memset(packed + (size_t)rows * k4 * elem, 0,
               (size_t)(round_up(rows, tile_rows) - rows) * k4 * elem);
        if (vnni) {
            emu_pack_a_u8(rows, b->k, b->k4, src, lda, (uint8_t *)packed);
            emu_gemm_avx512vnni(rows, (const uint8_t *)packed, b, c + (size_t)i0 * ldc, ldc);
            continue;
        }
        for (int i = 0; i < rows; i++) {
            int16_t *dst = (int16_t *)packed + (size_t)i * k4;
            int kk = 0;
            for (; kk < b->k; kk++)
                dst[kk] = src[(size_t)i * lda + kk];
            for (; kk < b->k4; kk++)
                dst[kk] = 0;
        }
        emu_gemm_avx2(rows, (const int16_t *)packed, b, c + (size_t)i0 * ldc, ldc);
    }
    free(packed);
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
