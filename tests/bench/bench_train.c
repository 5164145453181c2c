/*
 * bench_train.c - training throughput of one small residual CNN at batch
 * 32 on the int8 emulator, the float32 OpenBLAS baseline and the kernel C,
 * in one run, and the int8 GEMM's share of this CPU's VNNI peak on that
 * network's layer shapes.
 *
 * Throughput counts 2 ops per MAC and three passes per step (forward,
 * backward data, backward weight) over the network's forward MACs: the
 * same nominal figure for every backend, so the ratios are ratios of time.
 * The GEMM fraction is the network's forward GEMMs, each timed warm on
 * one core against the register-only vpdpbusd peak read just before it
 * (bench_gemm_rate.h, as bench_gemm does), weighted by their ops.  Each
 * GEMM runs as the emulator runs it, in parts of EEB_EMU_ROWS_PER_PART
 * rows whose A (the part's im2col rows) is in cache; the same over A
 * whole, read from memory, is reported beside it.
 *
 * `bench_train BACKEND` times that backend alone (for perf record).
 */
#include "bench.h"
#include "bench_gemm_rate.h"
#include "fpga/accel/eeb_accel.h"
#include "fpga/emu/eeb_emu.h"

#include <unistd.h>

#define BATCH  32
#define SIDE   32
#define PIXELS (SIDE * SIDE * 3)

static uint64_t state = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (uint32_t)(state >> 11) % n;
}

/* conv 3x3 + ReLU, then a residual block of two more */
static int stage(struct eeb_net *net, int in, int ch, int stride)
{
    int x = eeb_net_relu(net, eeb_net_conv(net, in, ch, 3, stride, 1));
    int y = eeb_net_relu(net, eeb_net_conv(net, x, ch, 3, 1, 1));
    y = eeb_net_conv(net, y, ch, 3, 1, 1);
    return eeb_net_relu(net, eeb_net_add(net, y, x));
}

static struct eeb_net *resnet(void)
{
    struct eeb_shape in = {SIDE, SIDE, 3};
    struct eeb_net *net = eeb_net_new(in);
    int l = stage(net, EEB_NET_INPUT, 32, 1);
    l = stage(net, l, 64, 2);
    l = stage(net, l, 128, 2);
    l = eeb_net_fc(net, eeb_net_gap(net, l), 10);
    if (eeb_net_softmax_ce(net, l) < 0) {
        fprintf(stderr, "bench_train: %s\n", net->err);
        exit(1);
    }
    eeb_net_init(net, 1);
    return net;
}

/* Median seconds per training step over BENCH_REPS runs of `steps`. */
static double step_seconds(const char *backend, const struct eeb_net *net, int reps, int steps,
                           int threads, char detail[64])
{
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = BATCH;
    cfg.threads = threads;
    struct eeb_accel *a;
    char err[256];
    if (eeb_accel_start(backend, &cfg, net, &a, err, sizeof err)) {
        fprintf(stderr, "bench_train: %s\n", err);
        exit(1);
    }
    uint8_t *px = malloc((size_t)BATCH * PIXELS);
    int32_t labels[BATCH];
    for (size_t i = 0; i < (size_t)BATCH * PIXELS; i++)
        px[i] = (uint8_t)rnd(256);
    for (int i = 0; i < BATCH; i++)
        labels[i] = (int32_t)rnd(10);
    struct eeb_batch b = {BATCH, px, labels};
    struct eeb_train_result r;
    double t[BENCH_REPS];
    for (int rep = 0; rep < reps; rep++) {
        int64_t t0 = eeb_mono_ns();
        for (int s = 0; s < steps; s++)
            if (a->ops->train_batch(a, &b, &r, err, sizeof err)) {
                fprintf(stderr, "bench_train: %s\n", err);
                exit(1);
            }
        t[rep] = bench_seconds_since(t0) / steps;
    }
    struct eeb_accel_stats st;
    a->ops->stats(a, &st);
    snprintf(detail, 64, "%s", st.detail);
    eeb_accel_close(a);
    free(px);
    return bench_median(t, (size_t)reps);
}

/* The network's forward GEMMs (M = batch x output pixels, N = output
 * channels, K = k*k*C_in), each in parts as the emulator runs it and in
 * one call over A whole, printed; and for each way all of them together:
 * their ops over the time they take at their fractions of the peak. */
static void network_gemm_fractions(const struct eeb_net *net, double *in_parts, double *whole)
{
    double ops = 0, at_peak_parts = 0, at_peak_whole = 0;
    printf("  int8 GEMM on the network's forward layers (%% of the vpdpbusd peak):\n");
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        int m = BATCH * l->out.h * l->out.w, n = l->out.c, k = l->rows;
        double fp = 0, fw = 0;
        bench_gemm_rate(EEB_EMU_ISA_AVX512VNNI, m, n, k, EEB_EMU_ROWS_PER_PART, 1, &fp);
        bench_gemm_rate(EEB_EMU_ISA_AVX512VNNI, m, n, k, 0, 1, &fw);
        printf("    layer %2d  M=%-6d N=%-4d K=%-5d %3.0f%% in parts of %d rows, %3.0f%% whole\n",
               i, m, n, k, 100 * fp, EEB_EMU_ROWS_PER_PART, 100 * fw);
        ops += 2.0 * m * n * k;
        at_peak_parts += 2.0 * m * n * k / fp;
        at_peak_whole += 2.0 * m * n * k / fw;
    }
    *in_parts = ops / at_peak_parts;
    *whole = ops / at_peak_whole;
}

int main(int argc, char **argv)
{
    struct eeb_net *net = resnet();
    double gop = 2.0 * 3 * (double)eeb_net_macs(net) * BATCH / 1e9;
    if (argc == 2) { /* one backend alone, for a profiler: bench_train emu */
        char detail[64];
        double t = step_seconds(argv[1], net, 3, 10, 0, detail);
        printf("%s: %.1f ms/step %.1f GOP/s (%s)\n", argv[1], t * 1e3, gop / t, detail);
        eeb_net_free(net);
        return 0;
    }
    printf("residual CNN, %dx%dx3 input, batch %d: %.1f M MACs per item, %.2f GOP per step "
           "(nominal)\n",
           SIDE, SIDE, BATCH, eeb_net_macs(net) / 1e6, gop);
    char d_emu[64], d_fp32[64], d_fp32_n[64], d_kernel[64];
    double emu = step_seconds("emu", net, BENCH_REPS, 3, 0, d_emu);
    double fp32 = step_seconds("fp32", net, BENCH_REPS, 3, 0, d_fp32);
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    double fp32_n = step_seconds("fp32", net, BENCH_REPS, 3, cores, d_fp32_n);
    double baseline = fp32 < fp32_n ? fp32 : fp32_n; /* the faster float way */
    double kernel = step_seconds("kernel", net, 1, 1, 0, d_kernel);
    printf("  emu     %8.1f ms/step %7.1f GOP/s  (%s)\n", emu * 1e3, gop / emu, d_emu);
    printf("  fp32    %8.1f ms/step %7.1f GOP/s  (%s)\n", fp32 * 1e3, gop / fp32, d_fp32);
    printf("  fp32    %8.1f ms/step %7.1f GOP/s  (%s)\n", fp32_n * 1e3, gop / fp32_n, d_fp32_n);
    printf("  kernel  %8.1f ms/step %7.1f GOP/s  (%s; one step)\n", kernel * 1e3, gop / kernel,
           d_kernel);
    bench_line("train_int8_emu", gop / emu, "GOP/s");
    bench_line("train_fp32_openblas", gop / baseline, "GOP/s");
    bench_line("train_kernel_c", gop / kernel, "GOP/s");
    bench_line("train_int8_vs_fp32", baseline / emu, "x");
    /* fp32's default of one OpenBLAS thread against one per core: > 1 when one is faster */
    bench_line("train_fp32_1_thread_vs_all_cores", fp32_n / fp32, "x");
    bench_line("train_int8_vs_kernel", kernel / emu, "x");
    if (eeb_emu_gemm_best_isa() >= EEB_EMU_ISA_AVX512VNNI) {
        double f, whole;
        network_gemm_fractions(net, &f, &whole);
        printf(
            "    all, weighted by ops: %.0f%% in parts (as the emulator runs them), %.0f%% whole\n",
            100 * f, 100 * whole);
        bench_line("gemm_int8_peak_fraction", f, "1");
        bench_line("gemm_int8_peak_fraction_whole_a", whole, "1");
    } else {
        printf("  no AVX-512 VNNI here: gemm_int8_peak_fraction not measured\n");
    }
    eeb_net_free(net);
    return 0;
}
