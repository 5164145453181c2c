/*
 * eeb_emu_gemm.h - the emulator's int8 matrix multiply, the hot loop of
 * every convolution (im2col + GEMM, as in darknet and DarkFPGA).
 *
 *   C[m][n] = bias[n] + sum_k A[m][k] * B[k][n]     int8 x int8 -> int32, exact
 *
 * B (weights) is packed once per layer; A (activations or errors) is
 * passed row-major.  The instruction set is chosen at run time: AMX tiles
 * (tdpbssd) where the CPU has them and the kernel lets this process use
 * them, else AVX-512 VNNI (vpdpbusd), else AVX2 (vpmaddwd), else portable
 * C.  Every path is exact integer arithmetic, so all agree bit for bit; K
 * is limited to EEB_EMU_GEMM_MAX_K so that no int32 sum can overflow.
 */
#ifndef EEB_EMU_GEMM_H
#define EEB_EMU_GEMM_H

#include "fpga/kernel/fx_kernel.h"

#include <stddef.h>
#include <stdint.h>

/* The image's bound (FX_MAX_REDUCTION): |sum| <= K * 255 * 128 < 2^31 (the
 * VNNI path offsets B by 128), and the exact |sum| <= K * 128 * 128 <= 2^30. */
#define EEB_EMU_GEMM_MAX_K FX_MAX_REDUCTION

/* In order of speed: the best one a CPU has is the largest. */
enum eeb_emu_isa { EEB_EMU_ISA_SCALAR, EEB_EMU_ISA_AVX2, EEB_EMU_ISA_AVX512VNNI, EEB_EMU_ISA_AMX };

/* B packed for the micro-kernels, in 32-column panels (emu_int.h has the
 * byte order): for AMX, signed, in tiles of 64 rows of k; for the others,
 * in groups of 8 rows of k, each byte offset by +128 to unsigned, as
 * vpdpbusd wants it.  The scalar, AVX2 and VNNI paths read one layout. */
struct eeb_emu_packed_b {
    int k, n;         /* logical shape */
    int kpad, panels; /* k rounded up to the layout's group (8, or 64), n in 32-column panels */
    int amx;          /* in AMX's order (else vpdpbusd's, which the others read too) */
    uint8_t *data;    /* panels * kpad * 32 bytes; the padding is 0 */
    int32_t *bias;    /* added to each column, zero unless set; panels * 32 */
};

/* The best instruction set this CPU (and kernel) supports, and its name. */
enum eeb_emu_isa eeb_emu_gemm_best_isa(void);
const char *eeb_emu_isa_name(enum eeb_emu_isa isa);

/*
 * Packs the K x N matrix B (row stride ldb) into out for the instruction
 * set isa; free with eeb_emu_gemm_free_b().  Returns 0, or -1 if K is out
 * of range or memory ran out.
 */
int eeb_emu_gemm_pack_b(enum eeb_emu_isa isa, const int8_t *b, int k, int n, int ldb,
                        struct eeb_emu_packed_b *out);
/* The bytes a K x N matrix takes packed for isa (padding included). */
size_t eeb_emu_gemm_packed_bytes(enum eeb_emu_isa isa, int k, int n);
void eeb_emu_gemm_free_b(struct eeb_emu_packed_b *b);

/*
 * Sets the n column biases added to every row of C (the layer's bias, so
 * that no pass over C is needed to add it).  Returns 0, or -1 if some
 * |bias| > EEB_EMU_GEMM_BIAS_MAX(k): then a sum could leave int32, and the
 * caller must add the bias itself, wider.
 */
#define EEB_EMU_GEMM_BIAS_MAX(k) (INT32_MAX - (int64_t)(k)*128 * 128)
int eeb_emu_gemm_set_bias(struct eeb_emu_packed_b *b, const int64_t *bias);

/*
 * C = A x B + bias with A M x K (row stride lda) and C M x N (row stride
 * ldc), on the given instruction set (which must be supported: see
 * best_isa; B packed for it).  If maxabs is not NULL, *maxabs becomes the larger of itself
 * and every |C[i][j]| (|C| < 2^31: see MAX_K and BIAS_MAX), which the
 * requantization after a layer needs and would otherwise take a pass over
 * C to find.  Returns 0, or -1 if scratch memory ran out.
 */
int eeb_emu_gemm(enum eeb_emu_isa isa, int m, const int8_t *a, int lda,
                 const struct eeb_emu_packed_b *b, int32_t *c, int ldc, uint32_t *maxabs);

/* Gives this thread AMX's tiles in the shapes the GEMM uses (eight of 16
 * rows of 64 bytes: C in 0-3, A in 4-5, B in 6-7), for the GEMM and for a
 * benchmark's peak; _tile_release() gives them back.  Only where
 * best_isa is AMX (the process has then asked the kernel for them). */
void eeb_emu_gemm_amx_tiles(void);

/*
 * A convolution of geometry g (NHWC x of g->n items) by W (k*k*ic rows in
 * (ky, kx, ci) order by oc) into NHWC int32 y, on this thread, the way the
 * emulator runs it where its GEMMs are on AMX: an implicit GEMM with no
 * im2col, for input channels in 64s (not a 1x1), or at a stride for few
 * input channels (a window row of s x s pixels at a time in 64 bytes:
 * ResNet's stem).  W packed for it by
 * eeb_emu_conv_pack; scratch: eeb_emu_conv_scratch(g) bytes, 0 where the
 * implicit GEMM does not apply.  *maxabs as for the GEMM.  The two others
 * return 0, or -1 where it does not apply (and nothing is done) or
 * memory ran out.
 */
size_t eeb_emu_conv_scratch(const struct fx_geom *g);
int eeb_emu_conv_pack(const struct fx_geom *g, const int8_t *w, struct eeb_emu_packed_b *out);
int eeb_emu_conv(const struct fx_geom *g, const int8_t *x, const struct eeb_emu_packed_b *w,
                 int8_t *scratch, int32_t *y, uint32_t *maxabs);

/* The definition: a plain triple loop on unpacked B, for tests. */
void eeb_emu_gemm_reference(int m, int n, int k, const int8_t *a, int lda, const int8_t *b, int ldb,
                            int32_t *c, int ldc);

#endif
