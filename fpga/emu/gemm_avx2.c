/*
 * gemm_avx2.c - the int8 GEMM tile loop on AVX2, for CPUs without VNNI.
 *
 * vpmaddubsw would saturate (255 * 127 * 2 > 32767), so A and B are
 * widened to int16 and multiplied with vpmaddwd, which sums pairs exactly
 * into int32.  A tile is 4 rows x 4 columns: per group of 8 rows of k, one
 * vector of B holds 2 columns' 8 values, a row of A's 8 values is
 * broadcast to both halves, and each column's sum ends spread over 4
 * lanes, which two vphaddd join at the end.
 */
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"

#include <immintrin.h>

#define MR 4 /* rows per tile: ROWS() below lists them */
#define NR 4 /* columns per tile */

#define TARGET __attribute__((target("avx2")))

/* Named accumulators, not an array: gcc keeps an array of vectors in
 * memory and loads, adds and stores it on every iteration.  lo holds
 * columns 0-1 and hi columns 2-3 of a row, four lanes per column. */
#define ROWS(X)    X(0) X(1) X(2) X(3)
#define DECLARE(r) __m256i lo##r = _mm256_setzero_si256(), hi##r = lo##r;
#define MULTIPLY(r)                                                                                \
    {                                                                                              \
        const __m256i av = _mm256_broadcastsi128_si256(                                            \
            _mm_loadu_si128((const __m128i *)(a + (size_t)(r)*k8 + (size_t)g * 8)));               \
        lo##r = _mm256_add_epi32(lo##r, _mm256_madd_epi16(av, b01));                               \
        hi##r = _mm256_add_epi32(hi##r, _mm256_madd_epi16(av, b23));                               \
    }
/* hadd twice gives [c0 c2 c0 c2 | c1 c3 c1 c3]; the unpack, [c0 c1 c2 c3]. */
#define STORE(r)                                                                                   \
    if ((r) < rows) {                                                                              \
        const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(lo##r, hi##r), lo##r);               \
        int32_t out[4];                                                                            \
        _mm_storeu_si128((__m128i *)out, _mm_unpacklo_epi32(_mm256_castsi256_si128(h),             \
                                                            _mm256_extracti128_si256(h, 1)));      \
        for (int j = 0; j < cols; j++) {                                                           \
            int32_t v = out[j] + bias[j];                                                          \
            c[(size_t)(r)*ldc + j] = v;                                                            \
            uint32_t mag = (uint32_t)fx_abs64(v);                                                  \
            most = mag > most ? mag : most;                                                        \
        }                                                                                          \
    }

/* Two columns' 8 bytes of a group of packed B, back to signed and widened. */
TARGET static inline __m256i widen(const uint8_t *two)
{
    const __m128i flip = _mm_set1_epi8((char)0x80); /* packed B is offset by +128 */
    return _mm256_cvtepi8_epi16(_mm_xor_si128(_mm_loadu_si128((const __m128i *)two), flip));
}

/* Returns the largest |C| stored. */
TARGET static uint32_t tile(const int16_t *a, int k8, const uint8_t *slice, const int32_t *bias,
                            int32_t *c, int ldc, int rows, int cols)
{
    ROWS(DECLARE)
    for (int g = 0; g < k8 / 8; g++) {
        const __m256i b01 = widen(slice + (size_t)g * 256),
                      b23 = widen(slice + (size_t)g * 256 + 16);
        ROWS(MULTIPLY)
    }
    uint32_t most = 0;
    ROWS(STORE)
    return most;
}

uint32_t emu_gemm_avx2(int m, const int16_t *a, const struct eeb_emu_packed_b *b, int32_t *c,
                       int ldc)
{
    const int k8 = b->kpad;
    uint32_t most = 0;
    for (int p = 0; p < b->panels; p++) {
        for (int q = 0; q < EMU_NR / NR; q++) {
            const int col0 = p * EMU_NR + q * NR;
            if (col0 >= b->n)
                break;
            const int cols = b->n - col0 < NR ? b->n - col0 : NR;
            /* slice q: 32 bytes from 32 q on in each 256-byte group */
            const uint8_t *slice = emu_panel(b, p) + q * NR * 8;
            for (int i = 0; i < m; i += MR) {
                uint32_t got = tile(a + (size_t)i * k8, k8, slice, b->bias + col0,
                                    c + (size_t)i * ldc + col0, ldc, m - i < MR ? m - i : MR, cols);
                most = got > most ? got : most;
            }
        }
    }
    return most;
}
