/*
 * gemm_portable.c - a float GEMM whose bits do not depend on the machine
 * (ref_int.h).  Each element of C starts from beta * C and adds its
 * products over k in ascending order, every product and every sum rounded
 * on its own (no fused multiply-add: the baseline x86-64 target has none,
 * and ISO C mode keeps the compiler from contracting).  Blocking and
 * vectors only change which elements are computed together, never an
 * element's order, so SSE, AVX or plain scalar code give the same result,
 * unlike OpenBLAS, whose kernel (and so its summation order) depends on
 * the CPU.
 */
#include "ref_int.h"

#include <stdlib.h>
#include <string.h>

/* the baseline target's vector: wider ones would change the calls' ABI */
typedef float v4 __attribute__((vector_size(16)));
enum { ROWS = 4, COLS = 8 }; /* one block of C: 4 rows of two v4 */

static v4 load4(const float *p)
{
    v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static void store4(float *p, v4 v)
{
    memcpy(p, &v, sizeof v);
}

/* Where a sum starts: beta C, or 0 (C may be unwritten then). */
static v4 start4(const float *c, float beta)
{
    v4 zero = {0};
    return beta == 0 ? zero : load4(c) * beta;
}

/* C[i0..i0+4) x [j0..j0+8) from packed B (K x N, row-major); op(A)'s
 * (i, k) is A[i * si + k * sk].  The 8 sums are named, not an array, so
 * that they stay in registers with B's two vectors and a. */
static void block(int i0, int j0, int K, const float *A, size_t si, size_t sk, const float *B,
                  int N, float beta, float *C, int ldc)
{
    float *c[ROWS];
    const float *a[ROWS];
    for (int r = 0; r < ROWS; r++)
        c[r] = C + (size_t)(i0 + r) * ldc + j0, a[r] = A + (size_t)(i0 + r) * si;
    v4 s00 = start4(c[0], beta), s01 = start4(c[0] + 4, beta);
    v4 s10 = start4(c[1], beta), s11 = start4(c[1] + 4, beta);
    v4 s20 = start4(c[2], beta), s21 = start4(c[2] + 4, beta);
    v4 s30 = start4(c[3], beta), s31 = start4(c[3] + 4, beta);
    for (int k = 0; k < K; k++) {
        const float *b = B + (size_t)k * N + j0;
        v4 b0 = load4(b), b1 = load4(b + 4);
        size_t at = (size_t)k * sk;
        float x0 = a[0][at], x1 = a[1][at], x2 = a[2][at], x3 = a[3][at];
        s00 += x0 * b0, s01 += x0 * b1;
        s10 += x1 * b0, s11 += x1 * b1;
        s20 += x2 * b0, s21 += x2 * b1;
        s30 += x3 * b0, s31 += x3 * b1;
    }
    store4(c[0], s00), store4(c[0] + 4, s01), store4(c[1], s10), store4(c[1] + 4, s11);
    store4(c[2], s20), store4(c[2] + 4, s21), store4(c[3], s30), store4(c[3] + 4, s31);
}

/* The same block 16 columns wide in AVX's eight-float vectors: the same
 * operations per element, so the same bits (AVX brings no fused
 * multiply-add), twice the columns an instruction. */
typedef float v8 __attribute__((vector_size(32)));

__attribute__((target("avx"))) static v8 start8(const float *c, float beta)
{
    v8 v = {0};
    if (beta != 0)
        memcpy(&v, c, sizeof v), v *= beta;
    return v;
}

__attribute__((target("avx"))) static void block_avx(int i0, int j0, int K, const float *A,
                                                     size_t si, size_t sk, const float *B, int N,
                                                     float beta, float *C, int ldc)
{
    float *c[ROWS];
    const float *a[ROWS];
    for (int r = 0; r < ROWS; r++)
        c[r] = C + (size_t)(i0 + r) * ldc + j0, a[r] = A + (size_t)(i0 + r) * si;
    v8 s00 = start8(c[0], beta), s01 = start8(c[0] + 8, beta);
    v8 s10 = start8(c[1], beta), s11 = start8(c[1] + 8, beta);
    v8 s20 = start8(c[2], beta), s21 = start8(c[2] + 8, beta);
    v8 s30 = start8(c[3], beta), s31 = start8(c[3] + 8, beta);
    for (int k = 0; k < K; k++) {
        const float *b = B + (size_t)k * N + j0;
        v8 b0, b1;
        memcpy(&b0, b, sizeof b0), memcpy(&b1, b + 8, sizeof b1);
        size_t at = (size_t)k * sk;
        float x0 = a[0][at], x1 = a[1][at], x2 = a[2][at], x3 = a[3][at];
        s00 += x0 * b0, s01 += x0 * b1;
        s10 += x1 * b0, s11 += x1 * b1;
        s20 += x2 * b0, s21 += x2 * b1;
        s30 += x3 * b0, s31 += x3 * b1;
    }
    memcpy(c[0], &s00, 32), memcpy(c[0] + 8, &s01, 32), memcpy(c[1], &s10, 32);
    memcpy(c[1] + 8, &s11, 32), memcpy(c[2], &s20, 32), memcpy(c[2] + 8, &s21, 32);
    memcpy(c[3], &s30, 32), memcpy(c[3] + 8, &s31, 32);
}

/* One element, in the same order as a block's. */
static void element(int i, int j, int K, const float *A, size_t si, size_t sk, const float *B,
                    int N, float beta, float *C, int ldc)
{
    float acc = beta == 0 ? 0 : C[(size_t)i * ldc + j] * beta;
    for (int k = 0; k < K; k++)
        acc += A[(size_t)i * si + (size_t)k * sk] * B[(size_t)k * N + j];
    C[(size_t)i * ldc + j] = acc;
}

int eeb_ref_gemm_portable(int ta, int tb, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc)
{
    /* op(B) as K x N contiguous rows: B itself when it is so already, else
     * packed (a transposed weight matrix) */
    float *packed = NULL;
    if (tb || ldb != N) {
        if (!(packed = malloc((size_t)K * N * sizeof *packed + 1)))
            return -1;
        for (int k = 0; k < K; k++)
            for (int j = 0; j < N; j++)
                packed[(size_t)k * N + j] = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        B = packed;
    }
    int mb = M - M % ROWS, nb = N - N % COLS;
    size_t si = ta ? 1 : (size_t)lda, sk = ta ? (size_t)lda : 1;
    int wide = __builtin_cpu_supports("avx"), wb = wide ? N - N % (2 * COLS) : 0;
    for (int i = 0; i < mb; i += ROWS) {
        for (int j = 0; j < wb; j += 2 * COLS)
            block_avx(i, j, K, A, si, sk, B, N, beta, C, ldc);
        for (int j = wb; j < nb; j += COLS)
            block(i, j, K, A, si, sk, B, N, beta, C, ldc);
    }
    for (int i = 0; i < M; i++)
        for (int j = i < mb ? nb : 0; j < N; j++)
            element(i, j, K, A, si, sk, B, N, beta, C, ldc);
    free(packed);
    return 0;
}
