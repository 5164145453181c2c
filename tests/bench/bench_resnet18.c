/*
 * bench_resnet18.c - training a ResNet-18-sized network (224x224x3 input,
 * 101 classes) on the int8 emulator and on the float32 OpenBLAS baseline
 * in one run: items/s of each and their ratio; the share of this machine's
 * two-core int8 peak that the emulator's whole training step reaches; and
 * where the step's time goes, by phase (the emulator's profile, eeb_emu.h).
 *
 * Batch 32 on both, float32 on one OpenBLAS thread per core.  A weight
 * gradient sums batch x output pixels products (401408 at the first conv):
 * an image that holds them to int32 accumulators (FX_MAX_REDUCTION terms)
 * refuses batch 32, and then the emulator trains at the largest batch
 * whose sums fit (5), the refusal printed, and float32 at that batch too.
 * Each backend: untimed warm-up steps, then the median of STEPS steps
 * timed one by one.  One warm-up step for float32; for the emulator
 * WARMUP_EMU, in which each convolution shape runs eeb's own and oneDNN's
 * by turns, timed, before it keeps the faster (eeb_emu.h).  The emulator's
 * line says which shapes went to oneDNN.
 *
 * Training MACs are counted as the device's programs do the work (the
 * compiler's rule, fpga/fx/compile.c): forward for every conv and FC;
 * backward data where the layer's input needs an error, so not for the
 * first conv, which reads the image; backward weight for trained layers
 * (none is frozen here).  The peak is the register-only vpdpbusd rate of
 * one core (bench.h) read just before each timed step, times two cores;
 * on a CPU with AMX, where the emulator's GEMMs run on tiles, the step is
 * also set against the tdpbssd rate read the same way.
 * The emulator's GEMMs multiply these MACs and some zeros besides, which
 * the shares below do not count: the padding of packed operands (k to 64
 * on AMX); on AMX its implicit GEMMs' virtual pixels past each grid row
 * (4 % more at 56 x 56, 31 % at 7 x 7) and the stem's taps past its 7 x 7
 * window in space to depth (256 or 512 rows of k for 147).  At a stride,
 * its backward data takes per input pixel only the taps whose windows
 * start on an output pixel (here, sides divisible by the stride, as many
 * products as the forward pass's).
 *
 * `bench_resnet18 emu|fp32 [batch [steps]]` times one backend alone (for
 * perf record); `bench_resnet18 profile [batch]` prints the emulator's
 * phases alone.
 */
#include "bench.h"
#include "fpga/accel/eeb_accel.h"
#include "fpga/emu/eeb_emu.h"
#include "fpga/fx/eeb_fx.h"

#include <string.h>
#include <unistd.h>

#define SIDE     224
#define CLASSES  101
#define BATCH    32 /* asked for; the emulator's is at most what its accumulators hold */
#define STEPS    3  /* timed steps per backend, after the warm-up */
#define PROFILED 2  /* profiled emulator steps, after the warm-up */
/* the emulator's warm-up: every convolution shape past its oneDNN trials */
#define WARMUP_EMU (2 * EEB_EMU_ONEDNN_TRIALS + 1)

static uint64_t state = 88172645463325252ull;
static int cores; /* online: the emulator's workers, fp32's threads, the peak's multiple */

static uint32_t rnd(uint32_t n)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (uint32_t)(state >> 11) % n;
}

/* Two 3x3 convs and a shortcut: the input itself, or a 1x1 conv of the
 * same stride when the block halves the pixels. */
static int basic_block(struct eeb_net *net, int in, int ch, int stride)
{
    int y = eeb_net_relu(net, eeb_net_conv(net, in, ch, 3, stride, 1));
    y = eeb_net_conv(net, y, ch, 3, 1, 1);
    int shortcut = stride == 1 ? in : eeb_net_conv(net, in, ch, 1, stride, 0);
    return eeb_net_relu(net, eeb_net_add(net, y, shortcut));
}

static struct eeb_net *resnet18(void)
{
    struct eeb_shape in = {SIDE, SIDE, 3};
    struct eeb_net *net = eeb_net_new(in);
    if (!net) {
        fprintf(stderr, "bench_resnet18: out of memory\n");
        exit(1);
    }
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 64, 7, 2, 3));
    l = eeb_net_maxpool(net, l, 3, 2, 1);
    const int channels[4] = {64, 128, 256, 512};
    for (int s = 0; s < 4; s++) {
        l = basic_block(net, l, channels[s], s ? 2 : 1);
        l = basic_block(net, l, channels[s], 1);
    }
    l = eeb_net_fc(net, eeb_net_gap(net, l), CLASSES);
    if (eeb_net_softmax_ce(net, l) < 0) {
        fprintf(stderr, "bench_resnet18: %s\n", net->err);
        exit(1);
    }
    eeb_net_init(net, 1);
    return net;
}

/* MACs per item of a training step, by pass. */
struct train_macs {
    double fwd, data, weight;
};

static struct train_macs count_macs(const struct eeb_net *net)
{
    struct train_macs m = {0, 0, 0};
    int *need_err = calloc((size_t)net->nlayers, sizeof *need_err);
    if (!need_err) {
        fprintf(stderr, "bench_resnet18: out of memory\n");
        exit(1);
    }
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        int learnable = eeb_layer_learnable(l); /* and trained: nothing is frozen */
        need_err[i] = learnable;
        for (int j = 0; j < 2; j++)
            if (l->in[j] >= 0 && need_err[l->in[j]])
                need_err[i] = 1;
        if (!learnable)
            continue;
        double fwd = (double)l->rows * l->out.c * l->out.h * l->out.w;
        m.fwd += fwd;
        m.weight += fwd;
        if (l->in[0] < 0 || !need_err[l->in[0]])
            continue;
        m.data += fwd;
    }
    free(need_err);
    return m;
}

/* The batch the emulator trains at: BATCH if it takes it; else (why it
 * refused in `why`) the largest whose weight-gradient sums fit int32
 * accumulators, batch x output pixels <= FX_MAX_REDUCTION for every
 * learnable layer. */
static int emu_batch(const struct eeb_net *net, char *why, size_t whylen)
{
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = BATCH;
    struct eeb_accel *a;
    if (eeb_accel_start("emu", &cfg, net, &a, why, whylen) == 0) {
        eeb_accel_close(a);
        why[0] = 0;
        return BATCH;
    }
    int batch = BATCH;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        int fit = FX_MAX_REDUCTION / (l->out.h * l->out.w);
        if (eeb_layer_learnable(l) && fit < batch)
            batch = fit;
    }
    return batch;
}

static struct eeb_batch random_batch(int n)
{
    uint8_t *px = malloc((size_t)n * SIDE * SIDE * 3);
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    if (!px || !labels) {
        fprintf(stderr, "bench_resnet18: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < (size_t)n * SIDE * SIDE * 3; i++)
        px[i] = (uint8_t)rnd(256);
    for (int i = 0; i < n; i++)
        labels[i] = (int32_t)rnd(CLASSES);
    struct eeb_batch b = {n, px, labels};
    return b;
}

static void free_batch(struct eeb_batch *b)
{
    free((void *)(uintptr_t)b->pixels), free((void *)(uintptr_t)b->labels);
}

/* The peaks a step is set against: vpdpbusd's, and AMX's tdpbssd where
 * the emulator multiplies on tiles. */
enum { PEAK_VNNI, PEAK_AMX, PEAKS };
static const char *const peak_name[PEAKS] = {"vpdpbusd", "AMX tdpbssd"};
static double (*const peak_rate[PEAKS])(void) = {bench_vnni_peak_gops, bench_amx_peak_gops};
static int has_peak[PEAKS];

struct timing {
    double step_s;            /* median seconds per step */
    double peak_share[PEAKS]; /* median of train ops / step time / the two-core peak before it */
    double peak_gops[PEAKS];  /* one core's rate, median */
    char detail[64];
};

/* Warm-up steps, then `steps` steps of `batch` items each timed alone.
 * With ops > 0, each step's ops/s is also set against `cores` times each
 * peak this CPU has, read just before it. */
static struct timing time_steps(const char *backend, const struct eeb_net *net, int batch,
                                int threads, int steps, double ops)
{
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = batch;
    cfg.threads = threads;
    struct eeb_accel *a;
    char err[256];
    if (eeb_accel_start(backend, &cfg, net, &a, err, sizeof err)) {
        fprintf(stderr, "bench_resnet18: %s\n", err);
        exit(1);
    }
    struct eeb_batch b = random_batch(batch);
    struct eeb_train_result r;
    double t[16], share[PEAKS][16], peak[PEAKS][16];
    steps = steps < 16 ? steps : 16;
    const int warmup = strcmp(backend, "emu") ? 1 : WARMUP_EMU;
    for (int s = -warmup; s < steps; s++) {
        double p[PEAKS] = {0, 0};
        for (int k = 0; k < PEAKS; k++)
            if (s >= 0 && ops > 0 && has_peak[k])
                p[k] = peak_rate[k]();
        int64_t t0 = eeb_mono_ns();
        if (a->ops->train_batch(a, &b, &r, err, sizeof err)) {
            fprintf(stderr, "bench_resnet18: %s\n", err);
            exit(1);
        }
        if (s < 0)
            continue; /* warm-up: first touch of the image's pages, OpenBLAS's buffers, trials */
        t[s] = bench_seconds_since(t0);
        for (int k = 0; k < PEAKS; k++) {
            peak[k][s] = p[k];
            share[k][s] = p[k] > 0 ? ops / t[s] / 1e9 / (cores * p[k]) : 0;
        }
    }
    struct timing out;
    struct eeb_accel_stats st;
    a->ops->stats(a, &st);
    snprintf(out.detail, sizeof out.detail, "%s", st.detail);
    eeb_accel_close(a);
    free_batch(&b);
    out.step_s = bench_median(t, (size_t)steps);
    for (int k = 0; k < PEAKS; k++) {
        out.peak_share[k] = bench_median(share[k], (size_t)steps);
        out.peak_gops[k] = bench_median(peak[k], (size_t)steps);
    }
    return out;
}

/* The emulator's phase profile over PROFILED training steps (after
 * WARMUP_EMU), run on the image directly: the backend hides its emulator. */
static void emu_profile(const struct eeb_net *net, int batch, struct eeb_emu_profile *prof)
{
    struct eeb_net *fixed = eeb_net_clone(net);
    struct eeb_emu *emu = eeb_emu_new(cores, eeb_emu_gemm_best_isa());
    struct eeb_fx_image img;
    char err[256];
    if (!fixed || !emu) {
        fprintf(stderr, "bench_resnet18: out of memory\n");
        exit(1);
    }
    eeb_net_to_fixed(fixed);
    if (eeb_fx_compile(fixed, batch, 0, &img, err, sizeof err)) {
        fprintf(stderr, "bench_resnet18: %s\n", err);
        exit(1);
    }
    eeb_fx_load_weights(&img, fixed);
    struct eeb_batch b = random_batch(batch);
    eeb_fx_set_batch(&img, batch, b.pixels, b.labels);
    eeb_fx_set_hyper(&img, 0.01, 0.9, 5e-4, 1, 0);
    int failed = eeb_emu_run(emu, img.mem, FX_PROG_INIT);
    for (int s = 0; s < WARMUP_EMU + PROFILED && !failed; s++) {
        if (s == WARMUP_EMU)
            eeb_emu_profile_start(emu, 1);
        eeb_fx_header(&img)->step = (uint32_t)s;
        failed = eeb_emu_run(emu, img.mem, FX_PROG_TRAIN);
    }
    if (failed) {
        fprintf(stderr, "bench_resnet18: the emulator stopped at command %u (status %u)\n",
                eeb_fx_header(&img)->status_cmd, eeb_fx_header(&img)->status);
        exit(1);
    }
    eeb_emu_profile_read(emu, prof);
    free_batch(&b);
    eeb_fx_image_free(&img);
    eeb_emu_free(emu);
    eeb_net_free(fixed);
}

/* peak_gops: one core's rate of the instruction the GEMMs use (peak_of),
 * or 0; the GEMMs' share of it is the BENCH line `metric`. */
static void print_profile(const struct eeb_emu_profile *p, double gemm_ops, double peak_gops,
                          const char *peak_of, const char *metric)
{
    double all = (double)p->wall_ns * p->threads;
    printf("  emulator step by phase (%d profiled steps, %.0f ms each; share of %d cores x "
           "wall):\n",
           PROFILED, p->wall_ns / 1e6 / PROFILED, p->threads);
    for (int ph = 0; ph < EEB_EMU_PHASES; ph++) {
        printf("    %-8s %5.1f%%  %7.1f core-ms/step\n", eeb_emu_phase_name((enum eeb_emu_phase)ph),
               100 * p->ns[ph] / all, p->ns[ph] / 1e6 / PROFILED);
        char name[64];
        snprintf(name, sizeof name, "resnet18_emu_phase_%s",
                 eeb_emu_phase_name((enum eeb_emu_phase)ph));
        bench_line(name, p->ns[ph] / all, "1");
    }
    printf("  emulator step by command (wall ms/step): forward conv/fc %.0f, backward data "
           "%.0f, backward weight %.0f, relu+add %.0f, pools %.0f, SGD+QUANT_W %.0f, loss %.0f\n",
           (p->op_ns[FX_OP_CONV_FWD] + p->op_ns[FX_OP_FC_FWD]) / 1e6 / PROFILED,
           (p->op_ns[FX_OP_CONV_BWD_DATA] + p->op_ns[FX_OP_FC_BWD_DATA]) / 1e6 / PROFILED,
           (p->op_ns[FX_OP_CONV_BWD_WEIGHT] + p->op_ns[FX_OP_FC_BWD_WEIGHT]) / 1e6 / PROFILED,
           (p->op_ns[FX_OP_RELU_FWD] + p->op_ns[FX_OP_RELU_BWD] + p->op_ns[FX_OP_ADD]) / 1e6 /
               PROFILED,
           (p->op_ns[FX_OP_MAXPOOL_FWD] + p->op_ns[FX_OP_MAXPOOL_BWD] +
            p->op_ns[FX_OP_AVGPOOL_FWD] + p->op_ns[FX_OP_AVGPOOL_BWD]) /
               1e6 / PROFILED,
           (p->op_ns[FX_OP_SGD] + p->op_ns[FX_OP_QUANT_W]) / 1e6 / PROFILED,
           p->op_ns[FX_OP_SOFTMAX_CE] / 1e6 / PROFILED);
    if (peak_gops > 0) {
        double gemm_s = p->ns[EEB_EMU_PHASE_GEMM] / 1e9 / PROFILED;
        double f = gemm_ops / gemm_s / 1e9 / peak_gops;
        printf("  the GEMMs alone (the network's MACs over the GEMMs' core-time): %.0f%% "
               "of the %s peak\n",
               100 * f, peak_of);
        bench_line(metric, f, "1");
    }
}

int main(int argc, char **argv)
{
    struct eeb_net *net = resnet18();
    struct train_macs m = count_macs(net);
    cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const enum eeb_emu_isa isa = eeb_emu_gemm_best_isa();
    has_peak[PEAK_VNNI] = isa >= EEB_EMU_ISA_AVX512VNNI; /* AMX's CPUs have vpdpbusd too */
    has_peak[PEAK_AMX] = isa == EEB_EMU_ISA_AMX;
    char why[256];
    int eb = emu_batch(net, why, sizeof why);
    double item_ops = 2 * (m.fwd + m.data + m.weight);  /* ops per item of a training step */
    if (argc >= 2 && strcmp(argv[1], "profile") == 0) { /* the emulator's phases alone */
        struct eeb_emu_profile prof;
        emu_profile(net, argc >= 3 ? atoi(argv[2]) : eb, &prof);
        print_profile(&prof, 0, 0, NULL, NULL);
        eeb_net_free(net);
        return 0;
    }
    if (argc >= 2) { /* one backend alone, for a profiler: bench_resnet18 emu 5 3 */
        int batch = argc >= 3 ? atoi(argv[2]) : strcmp(argv[1], "fp32") ? eb : BATCH;
        int steps = argc >= 4 ? atoi(argv[3]) : STEPS;
        struct timing t =
            time_steps(argv[1], net, batch < 1 ? 1 : batch, cores, steps < 1 ? 1 : steps, 0);
        printf("%s batch %d: %.0f ms/step, %.2f items/s (%s)\n", argv[1], batch, t.step_s * 1e3,
               batch / t.step_s, t.detail);
        eeb_net_free(net);
        return 0;
    }
    int64_t t0 = eeb_mono_ns();
    printf("ResNet-18, %dx%dx3 input, %d classes: %.3f G MACs per item forward, %.2f M "
           "parameters\n",
           SIDE, SIDE, CLASSES, m.fwd / 1e9, (double)eeb_net_params(net) / 1e6);
    printf("  training MACs per item: forward %.3f G + backward data %.3f G (not the first "
           "conv) + backward weight %.3f G = %.3f G\n",
           m.fwd / 1e9, m.data / 1e9, m.weight / 1e9, (m.fwd + m.data + m.weight) / 1e9);

    if (why[0])
        printf("  emu at batch %d: %s\n  emu runs at batch %d, the largest its accumulators "
               "take\n",
               BATCH, why, eb);

    struct timing emu = time_steps("emu", net, eb, 0, STEPS, item_ops * eb);
    struct timing fp_same = time_steps("fp32", net, eb, cores, STEPS, 0);
    struct timing fp_32 = eb == BATCH ? fp_same : time_steps("fp32", net, BATCH, cores, STEPS, 0);
    double emu_items = eb / emu.step_s, fp_same_items = eb / fp_same.step_s,
           fp_32_items = BATCH / fp_32.step_s;
    double fp_best = fp_32_items > fp_same_items ? fp_32_items : fp_same_items;
    printf("  emu   batch %2d %8.0f ms/step %7.2f items/s  (%s)\n", eb, emu.step_s * 1e3, emu_items,
           emu.detail);
    printf("  fp32  batch %2d %8.0f ms/step %7.2f items/s  (%s)\n", eb, fp_same.step_s * 1e3,
           fp_same_items, fp_same.detail);
    if (eb != BATCH)
        printf("  fp32  batch %2d %8.0f ms/step %7.2f items/s  (%s)\n", BATCH, fp_32.step_s * 1e3,
               fp_32_items, fp_32.detail);
    bench_line("resnet18_train_int8_emu", emu_items, "items/s");
    bench_line("resnet18_train_fp32_same_batch", fp_same_items, "items/s");
    bench_line("resnet18_train_fp32_batch32", fp_32_items, "items/s");
    bench_line("resnet18_train_int8_vs_fp32", emu_items / fp_best, "x");
    bench_line("resnet18_train_int8_vs_fp32_same_batch", emu_items / fp_same_items, "x");

    struct eeb_emu_profile prof;
    emu_profile(net, eb, &prof);
    printf("  the emulator's GEMMs multiply on %s\n", eeb_emu_isa_name(isa));
    for (int k = 0; k < PEAKS; k++) {
        if (!has_peak[k]) {
            printf("  no %s here: its int8 peak share is not measured\n", peak_name[k]);
            continue;
        }
        printf("  int8 peak: %.1f GOP/s per core (%s alone), %.1f GOP/s for %d cores; the "
               "whole emulator step reaches %.1f%% of it\n",
               emu.peak_gops[k], peak_name[k], cores * emu.peak_gops[k], cores,
               100 * emu.peak_share[k]);
    }
    if (has_peak[PEAK_AMX])
        printf("  (AMX's peak is %.1fx vpdpbusd's on this CPU)\n",
               emu.peak_gops[PEAK_AMX] / emu.peak_gops[PEAK_VNNI]);
    if (has_peak[PEAK_VNNI])
        bench_line("resnet18_train_int8_peak_fraction", emu.peak_share[PEAK_VNNI], "1");
    if (has_peak[PEAK_AMX])
        bench_line("resnet18_train_int8_amx_peak_fraction", emu.peak_share[PEAK_AMX], "1");
    const int used = has_peak[PEAK_AMX] ? PEAK_AMX : PEAK_VNNI;
    print_profile(&prof, item_ops * eb, has_peak[used] ? emu.peak_gops[used] : 0, peak_name[used],
                  used == PEAK_AMX ? "resnet18_emu_gemm_amx_peak_fraction"
                                   : "resnet18_emu_gemm_peak_fraction");
    printf("  (this bench: %.0f s)\n", bench_seconds_since(t0));
    eeb_net_free(net);
    return 0;
}
