/*
 * gemm_avx2.c - the int8 GEMM tile loop on AVX2, for CPUs without VNNI.
 *
 * vpmaddubsw would saturate (255 * 127 * 2 > 32767), so A and B are
 * widened to int16 and multiplied with vpmaddwd, which sums pairs exactly
 * into int32.  Each accumulator lane holds half of one column's sum (k even
 * or odd pair); vphaddd joins the halves at the end.  A tile is 4 rows x 8
 * columns.
 */
#include "emu_int.h"
#include "fx_arith.h"

#include <immintrin.h>

#define MR 4 /* rows per tile: ROWS() below lists them */

#define TARGET __attribute__((target("avx2")))

/* Named accumulators, not an array: gcc keeps an array of vectors in
 * memory and loads, adds and stores it on every iteration.  lo holds
 * columns 0-3 and hi columns 4-7 of a row, two lanes per column. */
#define ROWS(X)    X(0) X(1) X(2) X(3)
#define DECLARE(r) __m256i lo##r = _mm256_setzero_si256(), hi##r = lo##r;
#define MULTIPLY(r)                                                                                \
    {                                                                                              \
        long long quad;                                                                            \
        __builtin_memcpy(&quad, a + (size_t)(r)*k4 + (size_t)g * 4, 8);                            \
        const __m256i av = _mm256_set1_epi64x(quad);                                               \
        lo##r = _mm256_add_epi32(lo##r, _mm256_madd_epi16(av, b_lo));                              \
        hi##r = _mm256_add_epi32(hi##r, _mm256_madd_epi16(av, b_hi));                              \
    }
/* hadd gives [c0 c1 c4 c5 | c2 c3 c6 c7]; the permute reorders the pairs. */
#define STORE(r)                                                                                   \
    if ((r) < rows) {                                                                              \
        int32_t out[8];                                                                            \
        _mm256_storeu_si256((__m256i *)out,                                                        \
                            _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo##r, hi##r), 0xD8));      \
        for (int j = 0; j < cols; j++) {                                                           \
            int32_t v = out[j] + bias[j];                                                          \
            c[(size_t)(r)*ldc + j] = v;                                                            \
            uint32_t mag = (uint32_t)fx_abs64(v);                                                  \
            most = mag > most ? mag : most;                                                        \
        }                                                                                          \
    }

/* Returns the largest |C| stored. */
TARGET static uint32_t tile(const int16_t *a, int k4, const uint8_t *panel, const int32_t *bias,
                            int32_t *c, int ldc, int rows, int cols)
{
    const __m256i flip = _mm256_set1_epi8((char)0x80); /* packed B is offset by +128 */
    ROWS(DECLARE)
    for (int g = 0; g < k4 / 4; g++) {
        const __m256i raw =
            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(panel + (size_t)g * 128)), flip);
        const __m256i b_lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(raw));
        const __m256i b_hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(raw, 1));
        ROWS(MULTIPLY)
    }
    uint32_t most = 0;
    ROWS(STORE)
    return most;
}

uint32_t emu_gemm_avx2(int m, const int16_t *a, const struct eeb_emu_packed_b *b, int32_t *c,
                       int ldc)
{
    const int k4 = b->k4;
    uint32_t most = 0;
    for (int p = 0; p < b->panels; p++) {
        for (int q = 0; q < EMU_NR / 8; q++) {
            const int col0 = p * EMU_NR + q * 8;
            if (col0 >= b->n)
                break;
            const int cols = b->n - col0 < 8 ? b->n - col0 : 8;
            /* this 8-column slice starts 32 bytes into each 128-byte group */
            const uint8_t *slice = emu_panel(b, p) + q * 32;
            for (int i = 0; i < m; i += MR) {
                uint32_t got = tile(a + (size_t)i * k4, k4, slice, b->bias + col0,
                                    c + (size_t)i * ldc + col0, ldc, m - i < MR ? m - i : MR, cols);
                most = got > most ? got : most;
            }
        }
    }
    return most;
}
