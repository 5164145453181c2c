/*
 * test_ref_gemm.c - the portable GEMM (fpga/ref/gemm_portable.c): each
 * element of C summed over k in ascending order, bit for bit, whatever
 * the blocking; and the same product as OpenBLAS to float precision.
 */
#include "fpga/ref/ref_int.h"

#include <cblas.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t state = 88172645463325252ull;

static float rnd(void)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (float)((double)(state >> 11) / (double)(1ull << 53) * 2 - 1);
}

static float *randoms(size_t n)
{
    float *p = malloc(n * sizeof *p + 1);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = rnd();
    return p;
}

/* What the order says, one element at a time. */
static float in_order(int ta, int tb, int i, int j, int K, const float *A, int lda, const float *B,
                      int ldb, float beta, float c)
{
    float acc = beta == 0 ? 0 : c * beta;
    for (int k = 0; k < K; k++) {
        float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        float p = a * b; /* rounded apart: no fused multiply-add */
        acc += p;
    }
    return acc;
}

Test(ref_gemm, each_element_is_summed_in_order_whatever_the_shape)
{
    static const int shapes[][3] = {{1, 1, 1},    {4, 16, 3},  {7, 37, 29},
                                    {33, 20, 64}, {6, 24, 10}, {5, 3, 200}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int t = 0; t < 8; t++) {
            int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
            int ta = t & 1, tb = t >> 1 & 1;
            float beta = t >> 2 & 1 ? 1.0f : 0.0f;
            int lda = ta ? M : K, ldb = tb ? K : N;
            float *A = randoms((size_t)M * K), *B = randoms((size_t)K * N);
            float *C = randoms((size_t)M * N), *D = malloc((size_t)M * N * sizeof *D),
                  *E = malloc((size_t)M * N * sizeof *E);
            memcpy(D, C, (size_t)M * N * sizeof *D);
            memcpy(E, C, (size_t)M * N * sizeof *E);
            cr_assert_eq(eeb_ref_gemm_portable(ta, tb, M, N, K, A, lda, B, ldb, beta, D, N), 0);
            cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                        tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, beta, E, N);
            for (int i = 0; i < M; i++)
                for (int j = 0; j < N; j++) {
                    size_t at = (size_t)i * N + j;
                    float want = in_order(ta, tb, i, j, K, A, lda, B, ldb, beta, C[at]);
                    cr_assert(memcmp(&D[at], &want, sizeof want) == 0,
                              "%dx%dx%d ta %d tb %d beta %g: C[%d][%d] %a, in order %a", M, N, K,
                              ta, tb, beta, i, j, D[at], want);
                    cr_assert(fabsf(D[at] - E[at]) <= 1e-5f * (float)K, "C[%d][%d] %g, OpenBLAS %g",
                              i, j, D[at], E[at]);
                }
            free(A), free(B), free(C), free(D), free(E);
        }
}
