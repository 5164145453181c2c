/*
 * gemm_avx512.c - the int8 GEMM tile loop on AVX-512 VNNI.
 *
 * vpdpbusd multiplies 4 unsigned bytes of A by 4 signed bytes of B and adds
 * the 4 products into each 32-bit lane.  A is offset by +128 to be
 * unsigned; subtracting 128 * colsum(B) afterwards makes the result exact
 * (FACTS.md).  The bias is added, and the largest |C| kept, on the way out
 * of the registers.  A tile is 8 rows x 32 columns: 16 zmm accumulators, 2 for
 * B, 1 for the broadcast of A, so the inner loop never spills.
 */
#include "emu_int.h"

#include <immintrin.h>

#define MR 8 /* rows per tile: ROWS() below lists them */

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

/* Named accumulators, not an array: gcc shuffles an array of vectors
 * between registers and the stack on every iteration. */
#define ROWS(X)    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define DECLARE(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0;
#define MULTIPLY(r)                                                                                \
    {                                                                                              \
        int32_t quad;                                                                              \
        __builtin_memcpy(&quad, a + (size_t)(r)*k4 + (size_t)g * 4, 4);                            \
        const __m512i av = _mm512_set1_epi32(quad);                                                \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);                                            \
        c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);                                            \
    }
#define STORE(r)                                                                                   \
    if ((r) < rows) {                                                                              \
        const __m512i v0 = _mm512_sub_epi32(c##r##0, off0), v1 = _mm512_sub_epi32(c##r##1, off1);  \
        _mm512_mask_storeu_epi32(c + (size_t)(r)*ldc, m0, v0);                                     \
        _mm512_mask_storeu_epi32(c + (size_t)(r)*ldc + 16, m1, v1);                                \
        most = _mm512_max_epu32(most, _mm512_abs_epi32(v0)); /* padding columns are 0 */           \
        most = _mm512_max_epu32(most, _mm512_abs_epi32(v1));                                       \
    }

/* Returns the largest |C| stored. */
TARGET static uint32_t tile(const uint8_t *a, int k4, const int8_t *panel, const int32_t *colsum,
                            const int32_t *bias, int32_t *c, int ldc, int rows, int cols)
{
    ROWS(DECLARE)
    for (int g = 0; g < k4 / 4; g++) {
        const __m512i b0 = _mm512_load_si512(panel + (size_t)g * 128);
        const __m512i b1 = _mm512_load_si512(panel + (size_t)g * 128 + 64);
        ROWS(MULTIPLY)
    }
    /* the exact sum is the offset one minus 128 x colsum; then the bias */
    const __m512i off0 = _mm512_sub_epi32(_mm512_slli_epi32(_mm512_loadu_si512(colsum), 7),
                                          _mm512_loadu_si512(bias));
    const __m512i off1 = _mm512_sub_epi32(_mm512_slli_epi32(_mm512_loadu_si512(colsum + 16), 7),
                                          _mm512_loadu_si512(bias + 16));
    const __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32   ? 0xffff
                         : cols <= 16 ? 0
                                      : (__mmask16)((1u << (cols - 16)) - 1);
    __m512i most = _mm512_setzero_si512();
    ROWS(STORE)
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

TARGET void emu_pack_a_u8(int m, int k, int k4, const int8_t *a, int lda, uint8_t *dst)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80); /* x + 128 == x ^ 0x80 for bytes */
    for (int i = 0; i < m; i++) {
        const int8_t *src = a + (size_t)i * lda;
        uint8_t *out = dst + (size_t)i * k4;
        int kk = 0;
        for (; kk + 64 <= k; kk += 64)
            _mm512_storeu_si512(out + kk, _mm512_xor_si512(_mm512_loadu_si512(src + kk), flip));
        if (kk < k) {
            const __mmask64 tail = ((__mmask64)1 << (k - kk)) - 1;
            _mm512_mask_storeu_epi8(
                out + kk, tail, _mm512_xor_si512(_mm512_maskz_loadu_epi8(tail, src + kk), flip));
        }
        for (kk = k; kk < k4; kk++)
            out[kk] = 0;
    }
}

uint32_t emu_gemm_avx512vnni(int m, const uint8_t *a, const struct eeb_emu_packed_b *b, int32_t *c,
                             int ldc)
{
    const int k4 = b->k4;
    uint32_t most = 0;
    for (int p = 0; p < b->panels; p++) {
        const int8_t *panel = emu_panel(b, p);
        const int cols = b->n - p * EMU_NR < EMU_NR ? b->n - p * EMU_NR : EMU_NR;
        for (int i = 0; i < m; i += MR) {
            uint32_t got =
                tile(a + (size_t)i * k4, k4, panel, b->colsum + p * EMU_NR, b->bias + p * EMU_NR,
                     c + (size_t)i * ldc + p * EMU_NR, ldc, m - i < MR ? m - i : MR, cols);
            most = got > most ? got : most;
        }
    }
    return most;
}
