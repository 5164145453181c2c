/*
 * bench_gemm.c - the emulator's int8 GEMM against this CPU's own VNNI peak.
 *
 * The peak is measured here, in the same run, by a register-only loop of
 * independent vpdpbusd (16 lanes x 4 MACs x 2 ops each), and on a CPU
 * with AMX, of tdpbssd (16 x 16 x 64 MACs each).  The GEMM runs on
 * convolution layer shapes as im2col produces them (M = output pixels,
 * N = output channels, K = k*k*C_in) on every instruction set the CPU has.
 * Reported: GOP/s (2 ops per MAC) and the fraction of the peak, each
 * repetition's GEMM paired with a peak measured just before it (this
 * machine's speed drifts).  The fraction on the training network's own
 * layers, gemm_int8_peak_fraction, is bench_train's.
 */
#include "bench_gemm_rate.h"

struct shape {
    const char *name;
    int m, n, k;
};

/* One core's register-only rate of an instruction, the median of BENCH_REPS. */
static void print_peak(const char *instruction, const char *metric, double (*rate)(void))
{
    double p[BENCH_REPS];
    for (int r = 0; r < BENCH_REPS; r++)
        p[r] = rate();
    double peak = bench_median(p, BENCH_REPS);
    printf("%s register-only peak: %.1f GOP/s (one core)\n", instruction, peak);
    bench_line(metric, peak, "GOP/s");
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
    if (best >= EEB_EMU_ISA_AVX512VNNI)
        print_peak("vpdpbusd", "vnni_peak", bench_vnni_peak_gops);
    if (best == EEB_EMU_ISA_AMX)
        print_peak("AMX tdpbssd", "amx_peak", bench_amx_peak_gops);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        for (int isa = best; isa >= EEB_EMU_ISA_SCALAR; isa--) {
            if (isa == EEB_EMU_ISA_SCALAR && s > 0)
                continue; /* the portable path is only a reference */
            double fraction = 0;
            double g = bench_gemm_rate((enum eeb_emu_isa)isa, shapes[s].m, shapes[s].n, shapes[s].k,
                                       0, isa >= EEB_EMU_ISA_AVX512VNNI, &fraction);
            printf("  %-20s M=%-5d N=%-4d K=%-5d %-11s %7.1f GOP/s", shapes[s].name, shapes[s].m,
                   shapes[s].n, shapes[s].k, eeb_emu_isa_name((enum eeb_emu_isa)isa), g);
            if (isa >= EEB_EMU_ISA_AVX512VNNI)
                printf("  %.0f%% of peak", 100 * fraction);
            printf("\n");
            char name[96];
            snprintf(name, sizeof name, "gemm_int8_%s_%s", eeb_emu_isa_name((enum eeb_emu_isa)isa),
                     shapes[s].name);
            bench_line(name, g, "GOP/s");
        }
    }
    return 0;
}
