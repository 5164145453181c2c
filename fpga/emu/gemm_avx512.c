/*
 * gemm_avx512.c - the int8 GEMM tile loop on AVX-512 VNNI.
 *
 * vpdpbusd multiplies 4 unsigned bytes by 4 signed bytes and adds the 4
 * products into each 32-bit lane.  B is packed offset by +128 (unsigned)
 * and A is read as it is, signed, straight from the caller's rows: no copy
 * of A is made.  Subtracting 128 x (the row's sum of A) afterwards makes
 * the result exact (FACTS.md).  The bias is added, and the largest |C|
 * kept, on the way out of the registers.  A tile is 8 rows x 32 columns:
 * 16 zmm accumulators and 2 for B; A's 4 bytes are broadcast from memory.
 */
#include "emu_int.h"

#include <immintrin.h>
#include <string.h>

#define MR 8 /* rows per tile: ROWS() below lists them */

/* Rows of A whose tiles meet every panel of B in turn: up to 64, and as
 * many as fit in 12 KiB, so that they stay in L1 beside a panel of B
 * (128 bytes per 4 rows of k: 36 KiB at K = 1152). */
#define BLOCK_MAX   64
#define BLOCK_BYTES 12288

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

/*
 * The loop over k is assembly on registers the compiler picks once: in
 * C, gcc 12 copied accumulators between registers (and to the stack)
 * every iteration, a third of the time.  It zeroes the 16 accumulators,
 * then per group of 4 rows of k loads B's two vectors into zmm30/31 and,
 * for each row, broadcasts A's 4 bytes into zmm29 and multiplies them into
 * the row's two accumulators.  The row pointers point past the groups, and
 * `back` counts up to 0 from minus their length, so one register indexes
 * all eight rows.  (Outputs only: an
 * in-out operand counts twice against gcc's limit of 30.)
 */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define ASM_ZERO(r)                                                                                \
    "vpxord %[c" #r "0], %[c" #r "0], %[c" #r "0]\n\t"                                             \
    "vpxord %[c" #r "1], %[c" #r "1], %[c" #r "1]\n\t"
#define ASM_ROW(r)                                                                                 \
    "vpbroadcastd (%[a" #r "],%[back]), %%zmm29\n\t"                                               \
    "vpdpbusd %%zmm29, %%zmm30, %[c" #r "0]\n\t"                                                   \
    "vpdpbusd %%zmm29, %%zmm31, %[c" #r "1]\n\t"
/* clang-format off */
#define TILE_LOOP                                                                                  \
    ROWS(ASM_ZERO)                                                                                 \
    "test %[back], %[back]\n\t"                                                                    \
    "jz 2f\n\t"                                                                                    \
    "1:\n\t"                                                                                       \
    "vmovdqa64 (%[b]), %%zmm30\n\t"                                                                \
    "vmovdqa64 64(%[b]), %%zmm31\n\t"                                                              \
    ROWS(ASM_ROW)                                                                                  \
    "sub $-128, %[b]\n\t"                                                                          \
    "add $4, %[back]\n\t"                                                                          \
    "jnz 1b\n\t"                                                                                   \
    "2:\n\t"
/* clang-format on */
#define ASM_ACC(r)    [c##r##0] "=v"(c##r##0), [c##r##1] "=v"(c##r##1),
#define DECLARE(r)    __m512i c##r##0, c##r##1;
#define LAST_GROUP(r) /* the k % 4 bytes left, without reading past them */                        \
    {                                                                                              \
        int32_t quad = 0;                                                                          \
        memcpy(&quad, end[r], (size_t)(k % 4));                                                    \
        const __m512i av = _mm512_set1_epi32(quad);                                                \
        c##r##0 = _mm512_dpbusd_epi32(c##r##0, b0, av);                                            \
        c##r##1 = _mm512_dpbusd_epi32(c##r##1, b1, av);                                            \
    }
#define STORE(r)                                                                                   \
    if ((r) < rows) {                                                                              \
        const __m512i less = _mm512_set1_epi32(rowsum[r] * 128);                                   \
        const __m512i v0 = _mm512_sub_epi32(_mm512_add_epi32(c##r##0, bias0), less);               \
        const __m512i v1 = _mm512_sub_epi32(_mm512_add_epi32(c##r##1, bias1), less);               \
        _mm512_mask_storeu_epi32(c + (size_t)(r)*ldc, m0, v0);                                     \
        _mm512_mask_storeu_epi32(c + (size_t)(r)*ldc + 16, m1, v1);                                \
        most = _mm512_mask_max_epu32(most, m0, most, _mm512_abs_epi32(v0));                        \
        most = _mm512_mask_max_epu32(most, m1, most, _mm512_abs_epi32(v1));                        \
    }

/* The first `rows` rows of C = the MR rows of A (row[], each k bytes) x a
 * panel of B, for `cols` columns.  Returns the largest |C| stored. */
TARGET static uint32_t tile(const int8_t *const row[MR], int k, const uint8_t *panel,
                            const int32_t *rowsum, const int32_t *bias, int32_t *c, int ldc,
                            int rows, int cols)
{
    ROWS(DECLARE)
    const int groups = k / 4;
    const int8_t *end[MR]; /* each row's first byte past its groups */
    for (int r = 0; r < MR; r++)
        end[r] = row[r] + (size_t)groups * 4;
    const uint8_t *b = panel;
    long back = -4L * groups;
    __asm__(TILE_LOOP
            : ROWS(ASM_ACC)[b] "+r"(b), [back] "+r"(back)
            : [a0] "r"(end[0]), [a1] "r"(end[1]), [a2] "r"(end[2]), [a3] "r"(end[3]),
              [a4] "r"(end[4]), [a5] "r"(end[5]), [a6] "r"(end[6]), [a7] "r"(end[7])
            : "cc", "memory", "xmm29", "xmm30", "xmm31"); /* memory: it reads A and B */
    if (k % 4) {
        const __m512i b0 = _mm512_load_si512(panel + (size_t)groups * 128);
        const __m512i b1 = _mm512_load_si512(panel + (size_t)groups * 128 + 64);
        ROWS(LAST_GROUP)
    }
    const __m512i bias0 = _mm512_loadu_si512(bias), bias1 = _mm512_loadu_si512(bias + 16);
    const __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32   ? 0xffff
                         : cols <= 16 ? 0
                                      : (__mmask16)((1u << (cols - 16)) - 1);
    __m512i most = _mm512_setzero_si512();
    ROWS(STORE)
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

/* The sum of each of the first n rows of A (|sum| <= k * 128 < 2^23),
 * four rows at a time: four independent chains of vpdpbusd with ones,
 * then one transposing reduction for the four instead of one each. */
TARGET static void row_sums(const int8_t *a, int lda, int k, int n, int32_t *sum)
{
    const __m512i ones = _mm512_set1_epi8(1);
    const __mmask64 tail = k % 64 ? ((__mmask64)1 << (k % 64)) - 1 : 0;
    for (int r = 0; r < n; r += 4) {
        const int8_t *row[4];
        for (int q = 0; q < 4; q++) /* past n: row n-1 again, not stored */
            row[q] = a + (size_t)(r + q < n ? r + q : n - 1) * lda;
        __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                          _mm512_setzero_si512()};
        int kk = 0;
        for (; kk + 64 <= k; kk += 64)
            for (int q = 0; q < 4; q++)
                acc[q] = _mm512_dpbusd_epi32(acc[q], ones, _mm512_loadu_si512(row[q] + kk));
        if (tail)
            for (int q = 0; q < 4; q++)
                acc[q] =
                    _mm512_dpbusd_epi32(acc[q], ones, _mm512_maskz_loadu_epi8(tail, row[q] + kk));
        /* per 128-bit lane: [a0+a2 b0+b2 a1+a3 b1+b3], the same for c, d */
        const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[0], acc[1]),
                                            _mm512_unpackhi_epi32(acc[0], acc[1]));
        const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(acc[2], acc[3]),
                                            _mm512_unpackhi_epi32(acc[2], acc[3]));
        /* per 128-bit lane: [a b c d]; then the four lanes added */
        __m512i abcd =
            _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
        abcd = _mm512_add_epi32(abcd, _mm512_shuffle_i32x4(abcd, abcd, 0x4E));
        abcd = _mm512_add_epi32(abcd, _mm512_shuffle_i32x4(abcd, abcd, 0xB1));
        int32_t four[4];
        _mm_storeu_si128((__m128i *)four, _mm512_castsi512_si128(abcd));
        for (int q = 0; q < 4 && r + q < n; q++)
            sum[r + q] = four[q];
    }
}

uint32_t emu_gemm_avx512vnni(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                             int32_t *c, int ldc)
{
    uint32_t most = 0;
    int32_t rowsum[BLOCK_MAX];
    int rows_per_block = BLOCK_BYTES / b->k / MR * MR;
    rows_per_block = rows_per_block < MR          ? MR
                     : rows_per_block > BLOCK_MAX ? BLOCK_MAX
                                                  : rows_per_block;
    for (int i0 = 0; i0 < m; i0 += rows_per_block) {
        const int block = m - i0 < rows_per_block ? m - i0 : rows_per_block;
        row_sums(a + (size_t)i0 * lda, lda, b->k, block, rowsum);
        for (int p = 0; p < b->panels; p++) {
            const uint8_t *panel = (const uint8_t *)emu_panel(b, p);
            const int cols = b->n - p * EMU_NR < EMU_NR ? b->n - p * EMU_NR : EMU_NR;
            for (int i = 0; i < block; i += MR) {
                /* a short last tile reads its last row again for the missing ones */
                const int rows = block - i < MR ? block - i : MR;
                const int8_t *row[MR];
                for (int r = 0; r < MR; r++)
                    row[r] = a + (size_t)(i0 + i + (r < rows ? r : rows - 1)) * lda;
                uint32_t got = tile(row, b->k, panel, rowsum + i, b->bias + p * EMU_NR,
                                    c + (size_t)(i0 + i) * ldc + p * EMU_NR, ldc, rows, cols);
                most = got > most ? got : most;
            }
        }
    }
    return most;
}
