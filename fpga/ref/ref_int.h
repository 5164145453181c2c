/*
 * ref_int.h - the float32 trainer's parts (fpga/ref): its GEMMs.
 */
#ifndef EEB_REF_INT_H
#define EEB_REF_INT_H

/* C = beta C + op(A) op(B), row-major: op(A) is M x K (A, or A^T if ta),
 * op(B) K x N (B, or B^T if tb), C M x N.  The same bits on any machine
 * (gemm_portable.c says how).  -1 when out of memory, else 0. */
int eeb_ref_gemm_portable(int ta, int tb, int M, int N, int K, const float *A, int lda,
                          const float *B, int ldb, float beta, float *C, int ldc);

#endif
