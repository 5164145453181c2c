/*
 * emu_int.h - shared inside fpga/emu: the per-instruction-set GEMM tile
 * loops (gemm_amx.c, gemm_avx512.c, gemm_avx2.c) that gemm.c dispatches to.
 *
 * Packed B: panel p (32 columns), group g (8 rows of k), column c, row kk at
 *   data[(p * kpad/8 + g) * 256 + c * 8 + kk], which holds B + 128.
 * Each column's 8 bytes of a group lie together: one 64-byte vector holds
 * 8 columns, two 32-bit lanes each, and one 8-byte broadcast of a row of A
 * meets all of them.
 *
 * Packed for AMX: panel p, block g (64 rows of k), half h (16 columns),
 * column c, row kk at
 *   data[(p * kpad/64 + g) * 2048 + h * 1024 + kk/4 * 64 + c * 4 + kk%4],
 * which holds B itself: each half is one B tile as tdpbssd reads it (16
 * rows of 4 k-bytes for each of 16 columns).
 */
#ifndef EEB_EMU_INT_H
#define EEB_EMU_INT_H

#include "eeb_emu_gemm.h"

#define EMU_NR 32 /* columns per B panel */

/* The first byte of panel p of packed B. */
static inline const uint8_t *emu_panel(const struct eeb_emu_packed_b *b, int p)
{
    return b->data + (size_t)p * (size_t)b->kpad * EMU_NR;
}

/* The tile loops: A read in place (row stride lda); or A widened to
 * int16, rows padded to 4 and k to kpad.  They add the bias and return
 * the largest |C| they stored; the AMX one returns -1 if scratch memory
 * ran out. */
int emu_gemm_amx(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b, int32_t *c,
                 int ldc, uint32_t *most);

uint32_t emu_gemm_avx512vnni(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                             int32_t *c, int ldc);

uint32_t emu_gemm_avx2(int m, const int16_t *a_s16, const struct eeb_emu_packed_b *b, int32_t *c,
                       int ldc);

/* ---- worker threads (pool.c) ---- */

/* One part of a parallel loop, run by worker 0..threads-1. */
typedef void emu_part_fn(void *ctx, int part, int worker);

struct emu_pool;
/* threads workers including the caller; NULL if out of memory. */
struct emu_pool *emu_pool_new(int threads);
void emu_pool_free(struct emu_pool *p);
int emu_pool_threads(const struct emu_pool *p);
/* Runs fn on parts 0..parts-1 and returns when all are done. */
void emu_pool_run(struct emu_pool *p, int parts, emu_part_fn *fn, void *ctx);

#endif
