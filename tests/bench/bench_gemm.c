/*
 * bench_gemm.c - the emulator's int8 GEMM against this CPU's own VNNI peak.
 *
 * The peak is measured here, in the same run, by a register-only loop of
 * independent vpdpbusd (16 lanes x 4 MACs x 2 ops each).  The GEMM runs on
 * convolution layer shapes as im2col produces them (M = output pixels,
 * N = output channels, K = k*k*C_in) on every instruction set the CPU has.
 * Reported: GOP/s (2 ops per MAC) and the fraction of the peak, each
 * repetition's GEMM paired with a peak measured just before it (this
 * machine's speed drifts); the BENCH fraction line is the worst layer.
 */
#include "bench.h"
#include "eeb_emu_gemm.h"

#include <immintrin.h>

#define PEAK_CHAINS 24 /* independent accumulators: latency 4-5 x up to 2 ports, with room */
#define PEAK_UNROLL 4  /* blocks of 24 per loop trip, so the branch is noise */

/* One block: vpdpbusd into zmm0..zmm23 from the operands in zmm30/zmm31. */
#define VNNI_BLOCK                                                                                 \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm0\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm1\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm2\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm3\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm4\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm5\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm6\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm7\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm8\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm9\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm10\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm11\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm12\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm13\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm14\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm15\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm16\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm17\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm18\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm19\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm20\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm21\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm22\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm23\n\t"

/* The loop is assembly on fixed registers: written in C, compilers spill
 * some of 24 accumulators to the stack inside the loop (gcc 12 did), and
 * the "peak" then measures the spills.  Nothing but vpdpbusd, a decrement
 * and a branch runs in it. */
__attribute__((target("avx512f,avx512vnni"))) static double vnni_peak_gops(void)
{
    long trips = 1000000; /* 96 M instructions: ~20-50 ms */
    const long iters = trips;
    int64_t t0 = eeb_mono_ns();
    __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
                     "vpternlogd $0xff, %%zmm31, %%zmm31, %%zmm31\n\t"
                     "1:\n\t" VNNI_BLOCK VNNI_BLOCK VNNI_BLOCK VNNI_BLOCK "dec %0\n\t"
                     "jnz 1b\n\t"
                     : "+r"(trips)
                     :
                     : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",
                       "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm30",
                       "xmm31");
    double s = bench_seconds_since(t0);
    return (double)iters * PEAK_UNROLL * PEAK_CHAINS * 16 * 4 * 2 / s / 1e9;
}

struct shape {
    const char *name;
    int m, n, k;
};

/* GOP/s of one layer shape (median); with pair_peak, *fraction gets the
 * median over repetitions of GEMM rate / peak measured just before it, so
 * that a machine whose speed drifts still yields an honest ratio. */
static double gemm_gops(enum eeb_emu_isa isa, const struct shape *sh, int pair_peak,
                        double *fraction)
{
    int8_t *a = malloc((size_t)sh->m * sh->k), *b = malloc((size_t)sh->k * sh->n);
    int32_t *c = malloc((size_t)sh->m * sh->n * sizeof *c);
    for (size_t i = 0; i < (size_t)sh->m * sh->k; i++)
        a[i] = (int8_t)(i * 2654435761u >> 24);
    for (size_t i = 0; i < (size_t)sh->k * sh->n; i++)
        b[i] = (int8_t)(i * 40503u >> 8);
    struct eeb_emu_packed_b pb;
    if (eeb_emu_gemm_pack_b(b, sh->k, sh->n, sh->n, &pb)) {
        fprintf(stderr, "bench_gemm: packing failed\n");
        exit(1);
    }
    const double ops = 2.0 * sh->m * sh->n * sh->k;
    int reps = 1;
    double rate[BENCH_REPS], ratio[BENCH_REPS];
    for (int r = 0; r < BENCH_REPS; r++) {
        double peak = pair_peak ? vnni_peak_gops() : 0;
        int64_t t0 = eeb_mono_ns();
        for (int i = 0; i < reps; i++)
            if (eeb_emu_gemm(isa, sh->m, a, sh->k, &pb, c, sh->n)) {
                fprintf(stderr, "bench_gemm: out of memory\n");
                exit(1);
            }
        double s = bench_seconds_since(t0);
        rate[r] = ops * reps / s / 1e9;
        ratio[r] = pair_peak ? rate[r] / peak : 0;
        if (r == 0 && s < 0.05) /* first pass sizes the rest to ~0.05 s */
            reps = (int)(0.05 / (s / reps)) + 1;
    }
    eeb_emu_gemm_free_b(&pb);
    free(a), free(b), free(c);
    if (pair_peak)
        *fraction = bench_median(ratio + 1, BENCH_REPS - 1);
    return bench_median(rate + 1, BENCH_REPS - 1);
}

int main(void)
{
    const struct shape shapes[] = {
        {"conv3x3_64ch_56px", 3136, 64, 576},
        {"conv3x3_256ch_14px", 196, 256, 2304},
        {"conv3x3_32ch_32px", 1024, 32, 288},
    };
    enum eeb_emu_isa best = eeb_emu_gemm_best_isa();
    printf("int8 GEMM, best instruction set here: %s\n", eeb_emu_isa_name(best));
    double peak = 0;
    if (best == EEB_EMU_ISA_AVX512VNNI) {
        double p[BENCH_REPS];
        for (int r = 0; r < BENCH_REPS; r++)
            p[r] = vnni_peak_gops();
        peak = bench_median(p, BENCH_REPS);
        printf("vpdpbusd register-only peak: %.1f GOP/s (one core)\n", peak);
        bench_line("vnni_peak", peak, "GOP/s");
    }
    double worst = 1e30;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int isa = best; isa >= EEB_EMU_ISA_SCALAR; isa--) {
            if (isa == EEB_EMU_ISA_SCALAR && s > 0)
                continue; /* the portable path is only a reference */
            double fraction = 0;
            double g = gemm_gops((enum eeb_emu_isa)isa, &shapes[s], isa == EEB_EMU_ISA_AVX512VNNI,
                                 &fraction);
            printf("  %-20s M=%-5d N=%-4d K=%-5d %-11s %7.1f GOP/s", shapes[s].name, shapes[s].m,
                   shapes[s].n, shapes[s].k, eeb_emu_isa_name((enum eeb_emu_isa)isa), g);
            if (isa == EEB_EMU_ISA_AVX512VNNI) {
                printf("  %.0f%% of peak", 100 * fraction);
                worst = fraction < worst ? fraction : worst;
            }
            printf("\n");
            char name[96];
            snprintf(name, sizeof name, "gemm_int8_%s_%s", eeb_emu_isa_name((enum eeb_emu_isa)isa),
                     shapes[s].name);
            bench_line(name, g, "GOP/s");
        }
    }
    if (peak > 0)
        bench_line("gemm_int8_peak_fraction", worst, "1");
    return 0;
}
