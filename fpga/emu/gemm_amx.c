/*
 * gemm_amx.c - the int8 GEMM on AMX tiles (Intel's tile registers).
 *
 * tdpbssd multiplies a tile of A (16 rows x 64 signed bytes of k) by a
 * tile of B (16 rows of 4 k-bytes for each of 16 columns, signed) into a
 * 16 x 16 tile of int32 sums: 16384 multiply-adds an instruction, exact,
 * wrapping as int32 addition does (the sums stay far inside it: MAX_K).
 * Eight tile registers make a 32 x 32 block of C: four C tiles, the two
 * A tiles of its rows and the two B tiles of its columns, 4 tdpbssd per
 * 64 rows of k.  A is read in place (row stride lda); the bias is added,
 * and the largest |C| kept, on the way out of the tiles.
 *
 * A tile load reads 64 bytes of each row, past k when k is not a multiple
 * of 64 (B's padding is zero there, so those bytes add nothing), and 32
 * rows.  Where that would read outside A, the block's rows are first
 * copied into zeroed scratch.
 *
 * The implicit GEMMs (implicit.c has their layouts) take the same tiles:
 * a convolution's A rows read from the input's grid at each 64 bytes of
 * k's own offset, and its C rows stored by a map (virtual pixels that are
 * no output pixel dropped); a weight gradient's 32 x 32 block summed over
 * a run of virtual pixels, added to dW's int32 sums outside.
 */
#include "emu_int.h"

#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#define TARGET __attribute__((target("avx512f,avx512bw,amx-tile,amx-int8")))

#define BLOCK_ROWS 32

/* The tile registers' shapes (ldtilecfg's 64-byte operand, palette 1):
 * 0-3 C, 4-5 A, 6-7 B, each 16 rows of 64 bytes. */
struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t bytes_per_row[16];
    uint8_t rows[16];
} __attribute__((aligned(64)));

/* Constant data, not a local filled in: gcc 12 does not count a local's
 * stores as read by ldtilecfg, and dropped them (the tiles then had no
 * shape, and the first tile instruction faulted). */
static const struct tile_config gemm_tiles = {
    .palette = 1,
    .bytes_per_row = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

TARGET void eeb_emu_gemm_amx_tiles(void)
{
    _tile_loadconfig(&gemm_tiles);
}

/* Columns [col0, col0 + 16) of C from C tile sums, those inside n: bias
 * added, row r stored at row row[r] of c, unless that is -1. */
TARGET static uint32_t store(const int32_t sums[16][16], const int64_t row[16], int col0, int n,
                             const int32_t *bias, int32_t *c, int ldc)
{
    const int cols = n - col0 < 16 ? n - col0 : 16;
    if (cols <= 0)
        return 0;
    const __mmask16 mask = (__mmask16)((1u << cols) - 1);
    const __m512i b = _mm512_loadu_si512(bias + col0);
    __m512i most = _mm512_setzero_si512();
    for (int r = 0; r < 16; r++) {
        if (row[r] < 0)
            continue;
        const __m512i v = _mm512_add_epi32(_mm512_load_si512(sums[r]), b);
        _mm512_mask_storeu_epi32(c + (size_t)row[r] * ldc + col0, mask, v);
        most = _mm512_mask_max_epu32(most, mask, most, _mm512_abs_epi32(v));
    }
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

/* C tile t (rows 16 * (t / 2) on, columns 16 * (t % 2) on of panel p) out
 * of the tiles through sums, and stored; a tile's number must be a
 * constant: one line each. */
#define STORE_TILE(t, row, p)                                                                      \
    do {                                                                                           \
        _tile_stored(t, sums, 64);                                                                 \
        uint32_t got = store((const int32_t(*)[16])sums, (row) + (t) / 2 * 16,                     \
                             (p)*EMU_NR + (t) % 2 * 16, b->n, b->bias, c, ldc);                    \
        most = got > most ? got : most;                                                            \
    } while (0)

/* The four C tiles = the sum over steps i of A's two tiles (32 rows, lda
 * apart, from a + aoff[i], or a + 64 * i without aoff) by B's two (from
 * b + i * bstep, the second 1024 bytes on).  Inlined, so that a NULL aoff
 * costs the loop nothing. */
TARGET static inline __attribute__((always_inline)) void multiply(const int8_t *a, size_t lda,
                                                                  const int64_t *aoff,
                                                                  const uint8_t *b, size_t bstep,
                                                                  int steps)
{
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int i = 0; i < steps; i++) {
        const int8_t *ai = a + (aoff ? aoff[i] : (int64_t)i * 64);
        _tile_loadd(4, ai, lda);
        _tile_loadd(5, ai + 16 * lda, lda);
        _tile_loadd(6, b + (size_t)i * bstep, 64);
        _tile_loadd(7, b + (size_t)i * bstep + 1024, 64);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
    }
}

/* C rows [0, rows) (rows <= 32) = 32 rows of A (row stride lda, readable
 * to 64 * blocks) x every panel of B. */
TARGET static uint32_t block(const int8_t *a, int lda, int rows, const struct eeb_emu_packed_b *b,
                             int32_t *c, int ldc)
{
    int32_t sums[16][16] __attribute__((aligned(64)));
    int64_t row[BLOCK_ROWS];
    for (int r = 0; r < BLOCK_ROWS; r++)
        row[r] = r < rows ? r : -1;
    uint32_t most = 0;
    const int blocks = b->kpad / 64;
    for (int p = 0; p < b->panels; p++) {
        multiply(a, (size_t)lda, NULL, emu_panel(b, p), 2048, blocks);
        STORE_TILE(0, row, p);
        STORE_TILE(1, row, p);
        STORE_TILE(2, row, p);
        STORE_TILE(3, row, p);
    }
    return most;
}

TARGET uint32_t emu_conv_amx(const int8_t *a, size_t lda, const int64_t *aoff, int steps,
                             const struct eeb_emu_packed_b *b, const int64_t *row, int rows,
                             int32_t *c, int ldc)
{
    int32_t sums[16][16] __attribute__((aligned(64)));
    uint32_t most = 0;
    eeb_emu_gemm_amx_tiles();
    for (int p = 0; p < b->panels; p++)
        for (int r0 = 0; r0 < rows; r0 += 32) {
            multiply(a + (size_t)r0 * lda, lda, aoff, emu_panel(b, p), 2048, steps);
            STORE_TILE(0, row + r0, p);
            STORE_TILE(1, row + r0, p);
            STORE_TILE(2, row + r0, p);
            STORE_TILE(3, row + r0, p);
        }
    _tile_release();
    return most;
}

TARGET void emu_wgrad_amx(const int8_t *a, size_t lda, const int8_t *packed, size_t step,
                          int blocks, int32_t sums[32][32])
{
    eeb_emu_gemm_amx_tiles();
    multiply(a, lda, NULL, (const uint8_t *)packed, step, blocks);
    _tile_stored(0, &sums[0][0], 32 * sizeof **sums);
    _tile_stored(1, &sums[0][16], 32 * sizeof **sums);
    _tile_stored(2, &sums[16][0], 32 * sizeof **sums);
    _tile_stored(3, &sums[16][16], 32 * sizeof **sums);
    _tile_release();
}

TARGET uint32_t emu_wgrad_amx_add(const int32_t sums[32][32], int rows, int cols, int store,
                                  int32_t *c, size_t ldc)
{
    __m512i most = _mm512_setzero_si512();
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < 2 && cols > 16 * h; h++) {
            const __mmask16 mask = cols - 16 * h >= 16 ? 0xffff : (1u << (cols - 16 * h)) - 1;
            int32_t *dst = c + r * ldc + 16 * h;
            __m512i v = _mm512_load_si512(sums[r] + 16 * h);
            if (!store)
                v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, dst));
            _mm512_mask_storeu_epi32(dst, mask, v);
            most = _mm512_mask_max_epu32(most, mask, most, _mm512_abs_epi32(v));
        }
    return (uint32_t)_mm512_reduce_max_epu32(most);
}

TARGET int emu_gemm_amx(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                        int32_t *c, int ldc, uint32_t *most)
{
    int8_t *scratch = NULL;
    const size_t kpad = (size_t)b->kpad, end = (size_t)(m - 1) * lda + (size_t)b->k;
    eeb_emu_gemm_amx_tiles();
    for (int i0 = 0; i0 < m; i0 += BLOCK_ROWS) {
        const int rows = m - i0 < BLOCK_ROWS ? m - i0 : BLOCK_ROWS;
        const int8_t *rows_a = a + (size_t)i0 * lda;
        int stride = lda;
        if (rows < BLOCK_ROWS || (size_t)(i0 + BLOCK_ROWS - 1) * lda + kpad > end) {
            if (!scratch && !(scratch = malloc(BLOCK_ROWS * kpad))) {
                _tile_release();
                return -1;
            }
            memset(scratch, 0, BLOCK_ROWS * kpad);
            for (int r = 0; r < rows; r++)
                memcpy(scratch + r * kpad, rows_a + (size_t)r * lda, (size_t)b->k);
            rows_a = scratch;
            stride = (int)kpad;
        }
        uint32_t got = block(rows_a, stride, rows, b, c + (size_t)i0 * ldc, ldc);
        *most = got > *most ? got : *most;
    }
    _tile_release();
    free(scratch);
    return 0;
}

#undef STORE_TILE
