/*
 * gemm_avx512.c - the int8 GEMM tile loop on AVX-512 VNNI.
 *
 * vpdpbusd multiplies 4 unsigned bytes by 4 signed bytes and adds the 4
 * products into each 32-bit lane.  B is packed offset by +128 (unsigned)
 * and A is read as it is, signed, straight from the caller's rows: no copy
 * of A is made.  Subtracting 128 x (the row's sum of A) afterwards makes
 * the result exact (FACTS.md).  The bias is added, and the largest |C|
 * kept, on the way out of the registers.
 *
 * A tile is 5 rows x 32 columns.  Packed B keeps each column's 8 bytes of
 * a group together, so a vector of B holds 8 columns, each in two 32-bit
 * lanes (rows 0-3 and 4-7 of the group), and one 8-byte broadcast of a
 * row of A meets all of them: per group, 4 loads of B and 5 broadcasts
 * feed 20 vpdpbusd into 20 accumulators.  (With 4-byte groups, an 8 x 32
 * tile needs 10 loads per 16.)  The two lanes of each column are added
 * once, at the end.
 */
#include "emu_int.h"

#include <immintrin.h>

#define MR 5 /* rows per tile: ROWS() below lists them */

/* Rows of A whose tiles meet every panel of B in turn: up to 60, and as
 * many as fit in 12 KiB, so that they stay in L1 beside a panel of B
 * (256 bytes per 8 rows of k: 36 KiB at K = 1152). */
#define BLOCK_MAX   60
#define BLOCK_BYTES 12288

#define TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

/*
 * The loop over k is assembly on registers the compiler picks once: in
 * C, gcc 12 copied accumulators between registers (and to the stack)
 * every iteration, a third of the time.  It zeroes the 20 accumulators,
 * then per group of 8 rows of k loads B's four vectors into zmm28-31 and,
 * for each row, broadcasts A's 8 bytes into zmm27 and multiplies them into
 * the row's four accumulators.  The row pointers point past the groups,
 * and `back` counts up to 0 from minus their length, so one register
 * indexes all five rows.  The k % 8 bytes left are loaded under the mask
 * `tail`, which reads none of the bytes it leaves out, so that a row
 * ending at the end of its page cannot fault.  (Outputs only: an in-out
 * operand counts twice against gcc's limit of 30 operands, all used.)
 */
#define ROWS(X) X(0) X(1) X(2) X(3) X(4)
#define ASM_ZERO(r)                                                                                \
    "vpxord %[c" #r "0], %[c" #r "0], %[c" #r "0]\n\t"                                             \
    "vpxord %[c" #r "1], %[c" #r "1], %[c" #r "1]\n\t"                                             \
    "vpxord %[c" #r "2], %[c" #r "2], %[c" #r "2]\n\t"                                             \
    "vpxord %[c" #r "3], %[c" #r "3], %[c" #r "3]\n\t"
#define ASM_LOAD_B                                                                                 \
    "vmovdqa64 (%[b]), %%zmm28\n\t"                                                                \
    "vmovdqa64 64(%[b]), %%zmm29\n\t"                                                              \
    "vmovdqa64 128(%[b]), %%zmm30\n\t"                                                             \
    "vmovdqa64 192(%[b]), %%zmm31\n\t"
#define ASM_MULTIPLY(r)                                                                            \
    "vpdpbusd %%zmm27, %%zmm28, %[c" #r "0]\n\t"                                                   \
    "vpdpbusd %%zmm27, %%zmm29, %[c" #r "1]\n\t"                                                   \
    "vpdpbusd %%zmm27, %%zmm30, %[c" #r "2]\n\t"                                                   \
    "vpdpbusd %%zmm27, %%zmm31, %[c" #r "3]\n\t"
#define ASM_ROW(r) "vpbroadcastq (%[a" #r "],%[back]), %%zmm27\n\t" ASM_MULTIPLY(r)
#define ASM_LAST_ROW(r)                                                                            \
    "vmovdqu8 (%[a" #r "]), %%xmm27%{%[tail]%}%{z%}\n\t"                                           \
    "vpbroadcastq %%xmm27, %%zmm27\n\t" ASM_MULTIPLY(r)
/* clang-format off */
#define TILE_LOOP                                                                                  \
    ROWS(ASM_ZERO)                                                                                 \
    "test %[back], %[back]\n\t"                                                                    \
    "jz 2f\n\t"                                                                                    \
    "1:\n\t"                                                                                       \
    ASM_LOAD_B                                                                                     \
    ROWS(ASM_ROW)                                                                                  \
    "add $256, %[b]\n\t"                                                                           \
    "add $8, %[back]\n\t"                                                                          \
    "jnz 1b\n\t"                                                                                   \
    "2:\n\t"                                                                                       \
    "kortestw %[tail], %[tail]\n\t"                                                                \
    "jz 3f\n\t"                                                                                    \
    ASM_LOAD_B                                                                                     \
    ROWS(ASM_LAST_ROW)                                                                             \
    "3:\n\t"
/* clang-format on */
#define ASM_ACC(r)                                                                                 \
    [c##r##0] "=v"(c##r##0), [c##r##1] "=v"(c##r##1), [c##r##2] "=v"(c##r##2),                     \
        [c##r##3] "=v"(c##r##3),
#define DECLARE(r) __m512i c##r##0, c##r##1, c##r##2, c##r##3;
#define STORE(r)                                                                                   \
    if ((r) < rows) {                                                                              \
        const __m512i less = _mm512_set1_epi32(rowsum[r] * 128);                                   \
        const __m512i v0 =                                                                         \
            _mm512_sub_epi32(_mm512_add_epi32(columns(c##r##0, c##r##1), bias0), less);            \
        const __m512i v1 =                                                                         \
            _mm512_sub_epi32(_mm512_add_epi32(columns(c##r##2, c##r##3), bias1), less);            \
        _mm512_mask_storeu_epi32(c + (size_t)(r)*ldc, m0, v0);                                     \
        _mm512_mask_storeu_epi32(c + (size_t)(r)*ldc + 16, m1, v1);                                \
        most = _mm512_mask_max_epu32(most, m0, most, _mm512_abs_epi32(v0));                        \
        most = _mm512_mask_max_epu32(most, m1, most, _mm512_abs_epi32(v1));                        \
    }

/* 16 columns from two accumulators of 8 columns, two lanes each: the
 * even lanes of both plus the odd lanes of both. */
TARGET static inline __m512i columns(__m512i left, __m512i right)
{
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    return _mm512_add_epi32(_mm512_permutex2var_epi32(left, even, right),
                            _mm512_permutex2var_epi32(left, odd, right));
}

/* The first `rows` rows of C = as many rows of A (each k bytes, lda
 * apart) x a panel of B, for `cols` columns; a short tile reads its last
 * row again for the missing ones.  Returns the largest |C| stored. */
TARGET static uint32_t tile(const int8_t *a, int lda, int k, const uint8_t *panel,
                            const int32_t *rowsum, const int32_t *bias, int32_t *c, int ldc,
                            int rows, int cols)
{
    ROWS(DECLARE)
    const int groups = k / 8;
    const int8_t *end[MR]; /* each row's first byte past its groups */
    for (int r = 0; r < MR; r++)
        end[r] = a + (size_t)(r < rows ? r : rows - 1) * lda + (size_t)groups * 8;
    const uint8_t *b = panel;
    long back = -8L * groups;
    const __mmask16 tail = (__mmask16)((1u << (k % 8)) - 1);
    __asm__(TILE_LOOP
            : ROWS(ASM_ACC)[b] "+r"(b), [back] "+r"(back)
            : [a0] "r"(end[0]), [a1] "r"(end[1]), [a2] "r"(end[2]), [a3] "r"(end[3]),
              [a4] "r"(end[4]), [tail] "Yk"(tail)
            : "cc", "memory", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31"); /* memory: reads A, B */
    const __m512i bias0 = _mm512_loadu_si512(bias), bias1 = _mm512_loadu_si512(bias + 16);
    const __mmask16 m0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32   ? 0xffff
                         : cols <= 16 ? 0
                                      : (__mmask16)((1u << (cols - 16)) - 1);
    __m512i most = _mm512_setzero_si512();
    ROWS(STORE)
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

/* acc plus the sums of bytes' groups of 4: vpdpbusd with ones into a
 * fresh register, then vpaddd, so that a row's chain waits 1 cycle a link
 * instead of vpdpbusd's 5 (and gcc does not copy the accumulator). */
TARGET static inline __m512i plus_sums(__m512i acc, __m512i bytes)
{
    const __m512i ones = _mm512_set1_epi8(1);
    return _mm512_add_epi32(acc, _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, bytes));
}

/* The sum of each of the first n rows of A (|sum| <= k * 128 < 2^23),
 * four rows at a time, then one transposing reduction for the four
 * instead of one each. */
TARGET static void row_sums(const int8_t *a, int lda, int k, int n, int32_t *sum)
{
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
                acc[q] = plus_sums(acc[q], _mm512_loadu_si512(row[q] + kk));
        if (tail)
            for (int q = 0; q < 4; q++)
                acc[q] = plus_sums(acc[q], _mm512_maskz_loadu_epi8(tail, row[q] + kk));
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
                const int rows = block - i < MR ? block - i : MR;
                uint32_t got = tile(a + (size_t)(i0 + i) * lda, lda, b->k, panel, rowsum + i,
                                    b->bias + p * EMU_NR, c + (size_t)(i0 + i) * ldc + p * EMU_NR,
                                    ldc, rows, cols);
                most = got > most ? got : most;
            }
        }
    }
    return most;
}
