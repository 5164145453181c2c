/*
 * bench_gemm_rate.h - one GEMM shape timed for bench_gemm and bench_train:
 * GOP/s and, on VNNI, the fraction of the vpdpbusd peak.
 */
#ifndef EEB_BENCH_GEMM_RATE_H
#define EEB_BENCH_GEMM_RATE_H

#include "bench.h"
#include "fpga/emu/eeb_emu_gemm.h"

/*
 * GOP/s of C = A x B (M x K by K x N; 2 ops per MAC), the median of
 * BENCH_REPS - 1 timings after an untimed first one (so that the first
 * touch of C's pages is not counted), each of enough calls to last
 * ~0.05 s.  With part > 0, C is computed in calls of `part` rows that all
 * read one part-sized A, as the emulator multiplies each part's im2col
 * rows while they are in cache; with part 0, in one call over all of A
 * (M x K bytes, from memory when large).  With pair_peak, *fraction gets
 * the median over the same timings of GEMM rate / the peak of the
 * instruction it multiplies with (vpdpbusd, or AMX's tdpbssd) read just
 * before it: the machines here are shared and their speed drifts, the
 * peak with them.
 */
static inline double bench_gemm_rate(enum eeb_emu_isa isa, int m, int n, int k, int part,
                                     int pair_peak, double *fraction)
{
    const int a_rows = part > 0 && part < m ? part : m;
    int8_t *a = malloc((size_t)a_rows * k), *b = malloc((size_t)k * n);
    int32_t *c = malloc((size_t)m * n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < (size_t)a_rows * k; i++)
        a[i] = (int8_t)(i * 2654435761u >> 24);
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (int8_t)(i * 40503u >> 8);
    struct eeb_emu_packed_b pb;
    if (eeb_emu_gemm_pack_b(isa, b, k, n, n, &pb)) {
        fprintf(stderr, "bench: packing %dx%d failed\n", k, n);
        exit(1);
    }
    const double ops = 2.0 * m * n * k;
    int reps = 1;
    double rate[BENCH_REPS], ratio[BENCH_REPS];
    for (int r = 0; r < BENCH_REPS; r++) {
        double peak = !pair_peak               ? 0
                      : isa == EEB_EMU_ISA_AMX ? bench_amx_peak_gops()
                                               : bench_vnni_peak_gops();
        int64_t t0 = eeb_mono_ns();
        for (int i = 0; i < reps; i++)
            for (int r0 = 0; r0 < m; r0 += a_rows)
                if (eeb_emu_gemm(isa, m - r0 < a_rows ? m - r0 : a_rows, a, k, &pb,
                                 c + (size_t)r0 * n, n, NULL)) {
                    fprintf(stderr, "bench: out of memory\n");
                    exit(1);
                }
        double s = bench_seconds_since(t0);
        rate[r] = ops * reps / s / 1e9;
        ratio[r] = pair_peak ? rate[r] / peak : 0;
        if (r == 0 && s < 0.05) /* the first pass sizes the rest to ~0.05 s */
            reps = (int)(0.05 / (s / reps)) + 1;
    }
    eeb_emu_gemm_free_b(&pb);
    free(a), free(b), free(c);
    if (pair_peak)
        *fraction = bench_median(ratio + 1, BENCH_REPS - 1);
    return bench_median(rate + 1, BENCH_REPS - 1);
}

#endif
