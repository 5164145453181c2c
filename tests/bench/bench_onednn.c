/*
 * bench_onednn.c - eeb's int8 convolution against oneDNN's on the
 * convolution shapes of a ResNet-18 at 224x224: forward, batch 32, one
 * thread each, int8 x int8 -> int32 exact (signed source and weights, no
 * scales).
 *
 * Two comparisons.  The convolutions alone: eeb's (with the bias and the
 * largest |sum|, which its tiles add and find as they leave) against
 * oneDNN's on the batch in one call, no bias.  And a training step's
 * work, as the emulator would have to run either: the weights prepared
 * (training changes them every step: eeb packs them, oneDNN reorders them
 * to its layout), the convolution, its bias and the largest |sum|, which
 * the requantization after a layer needs.  oneDNN adds an int8
 * convolution's bias in float (a sum of 250004869 came out 250004864),
 * so there the bias is a pass of eeb's own that also finds the largest
 * |sum|: after the whole batch's call, or after each item's while its
 * sums are in cache, whichever is faster on the shape (each way is
 * faster on some).  The emulator itself times the two in the training
 * step, on its workers, and keeps the faster on each shape (eeb_emu.h);
 * here they are shape by shape on one core.
 *
 * eeb convolves as the emulator does (eeb_emu_gemm.h, on its best
 * instruction set).  Where its GEMMs run on AMX, a convolution whose
 * input channels come in 64s (not a 1x1), and the stem (3 channels at
 * stride 2), are implicit GEMMs with no im2col (eeb_emu_conv, the
 * emulator's own code on one thread).  The others are
 * im2col + one int8 GEMM: the NHWC source unrolled into a batch x output
 * pixels by k*k*C_in matrix, in (ky, kx, c) order, times the weights
 * packed once; here im2col unrolls the whole batch before the GEMM (the
 * emulator itself works in parts whose rows stay in cache), and the two
 * are timed apart as well as together.  oneDNN gets
 * the same NHWC source and writes NHWC int32, eeb's C; it picks its own
 * weight layout (format any).  Before timing, each shape's outputs (and
 * largest |sum|) must be equal bit for bit: a difference ends the bench
 * non-zero, naming the shape and the element.
 *
 * Sections: the shapes; oneDNN's side; eeb's side; main (threads check,
 * then per shape: check, time, report; then the forward pass's totals,
 * each shape counted as often as the network has it).
 *
 * Timing: per shape one untimed warm-up of each (JIT, first touch of the
 * buffers, the check), then BENCH_REPS repetitions, eeb's and oneDNN's
 * alternating so that drift of this shared machine's speed hits both;
 * medians.  A repetition repeats a convolution faster than MIN_REP_S
 * until it lasts about that long (the 1x1 shortcuts take ~0.2 ms, near
 * the clock's and the scheduler's noise), and reports the mean call.  A
 * shape whose warm-up took over WARMUP_SLOW_S gets REPS_SLOW repetitions
 * instead (marked in its line), which bounds the bench on a slow GEMM
 * path; with AMX it takes ~3 s.
 *
 * `bench_onednn NAME` runs only the shapes whose name holds NAME (for
 * perf record): `bench_onednn stem`, `bench_onednn l4_`.
 */
#include "bench.h"
#include "fpga/emu/eeb_emu_gemm.h"
#include "fpga/emu/emu_int.h"

#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <string.h>

#define BATCH         32
#define WARMUP_SLOW_S 1.5  /* a slower warm-up (both sides) ... */
#define REPS_SLOW     3    /* ... gets this many repetitions */
#define MIN_REP_S     0.02 /* a repetition of a faster convolution repeats it this long */

/* ---- the shapes ---- */

struct conv {
    const char *name;
    int count;                /* convolutions of this shape in the forward pass */
    int h, w, cin;            /* input */
    int cout, k, stride, pad; /* output channels, k x k window */
};

static const struct conv convs[] = {
    {"stem_7x7s2_3to64_224", 1, 224, 224, 3, 64, 7, 2, 3},
    {"l1_3x3_64_56", 4, 56, 56, 64, 64, 3, 1, 1},
    {"l2_3x3s2_64to128_56", 1, 56, 56, 64, 128, 3, 2, 1},
    {"l2_3x3_128_28", 3, 28, 28, 128, 128, 3, 1, 1},
    {"l2_1x1s2_64to128_56", 1, 56, 56, 64, 128, 1, 2, 0},
    {"l3_3x3s2_128to256_28", 1, 28, 28, 128, 256, 3, 2, 1},
    {"l3_3x3_256_14", 3, 14, 14, 256, 256, 3, 1, 1},
    {"l3_1x1s2_128to256_28", 1, 28, 28, 128, 256, 1, 2, 0},
    {"l4_3x3s2_256to512_14", 1, 14, 14, 256, 512, 3, 2, 1},
    {"l4_3x3_512_7", 3, 7, 7, 512, 512, 3, 1, 1},
    {"l4_1x1s2_256to512_14", 1, 14, 14, 256, 512, 1, 2, 0},
};
#define NCONVS (sizeof convs / sizeof convs[0])

static int out_side(int in, const struct conv *c)
{
    return (in + 2 * c->pad - c->k) / c->stride + 1;
}

/* Shape c as the emulator's geometry. */
static struct fx_geom geometry(const struct conv *c)
{
    struct fx_geom g = {
        BATCH, c->h, c->w,      c->cin, out_side(c->h, c), out_side(c->w, c), c->cout,
        c->k,  c->k, c->stride, c->pad};
    return g;
}

static uint64_t state = 88172645463325252ull;

static int8_t rnd8(void)
{
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (int8_t)(state >> 56);
}

static void *alloc_or_die(size_t bytes)
{
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "bench_onednn: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

/* ---- oneDNN's side ---- */

static void dnnl_ok(dnnl_status_t s, const char *what, const char *shape)
{
    if (s != dnnl_success) {
        fprintf(stderr, "bench_onednn: %s: oneDNN's %s failed: %s\n", shape, what,
                dnnl_status2str(s));
        exit(1);
    }
}

struct dnnl_conv {
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, dst; /* src and dst on the caller's buffers; wei oneDNN's own */
    const char *impl;            /* the implementation picked (owned by the primitive) */
    dnnl_primitive_desc_t pd;
};

/* The convolution on the caller's NHWC src (s8) and dst (s32), with the
 * weights (w, HWIO: eeb's K x N) reordered to the layout oneDNN picked. */
static void dnnl_conv_init(dnnl_engine_t eng, dnnl_stream_t strm, const struct conv *c, int8_t *src,
                           const int8_t *w, int32_t *dst, struct dnnl_conv *out)
{
    const int oh = out_side(c->h, c), ow = out_side(c->w, c);
    const dnnl_dims_t src_dims = {BATCH, c->cin, c->h, c->w};
    const dnnl_dims_t wei_dims = {c->cout, c->cin, c->k, c->k};
    const dnnl_dims_t dst_dims = {BATCH, c->cout, oh, ow};
    const dnnl_dims_t strides = {c->stride, c->stride}, pad = {c->pad, c->pad};
    dnnl_memory_desc_t src_md, wei_any, wei_user, dst_md;
    dnnl_convolution_desc_t desc;
    const char *n = c->name;
    dnnl_ok(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_s8, dnnl_nhwc), "src md", n);
    dnnl_ok(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_dims, dnnl_s8, dnnl_format_tag_any),
            "weights md", n);
    dnnl_ok(dnnl_memory_desc_init_by_tag(&wei_user, 4, wei_dims, dnnl_s8, dnnl_hwio), "weights md",
            n);
    dnnl_ok(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_s32, dnnl_nhwc), "dst md", n);
    dnnl_ok(dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                               dnnl_convolution_direct, &src_md, &wei_any, NULL,
                                               &dst_md, strides, pad, pad),
            "convolution desc", n);
    dnnl_ok(dnnl_primitive_desc_create(&out->pd, &desc, NULL, eng, NULL), "convolution", n);
    dnnl_ok(dnnl_primitive_desc_query(out->pd, dnnl_query_impl_info_str, 0, &out->impl),
            "implementation query", n);
    const dnnl_memory_desc_t *wei_md =
        dnnl_primitive_desc_query_md(out->pd, dnnl_query_weights_md, 0);
    dnnl_ok(dnnl_primitive_create(&out->prim, out->pd), "convolution primitive", n);
    dnnl_ok(dnnl_memory_create(&out->src, &src_md, eng, src), "src memory", n);
    dnnl_ok(dnnl_memory_create(&out->dst, &dst_md, eng, dst), "dst memory", n);
    dnnl_ok(dnnl_memory_create(&out->wei, wei_md, eng, DNNL_MEMORY_ALLOCATE), "weights memory", n);

    dnnl_memory_t user;
    dnnl_primitive_desc_t rpd;
    dnnl_primitive_t reorder;
    dnnl_ok(dnnl_memory_create(&user, &wei_user, eng, (void *)(uintptr_t)w), "weights memory", n);
    dnnl_ok(dnnl_reorder_primitive_desc_create(&rpd, &wei_user, eng, wei_md, eng, NULL),
            "weights reorder", n);
    dnnl_ok(dnnl_primitive_create(&reorder, rpd), "weights reorder primitive", n);
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, out->wei}};
    dnnl_ok(dnnl_primitive_execute(reorder, strm, 2, args), "weights reorder", n);
    dnnl_ok(dnnl_stream_wait(strm), "stream wait", n);
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(user);
}

static void dnnl_conv_run(dnnl_stream_t strm, const struct dnnl_conv *d, const char *shape)
{
    const dnnl_exec_arg_t args[] = {
        {DNNL_ARG_SRC, d->src}, {DNNL_ARG_WEIGHTS, d->wei}, {DNNL_ARG_DST, d->dst}};
    dnnl_ok(dnnl_primitive_execute(d->prim, strm, 3, args), "convolution", shape);
    dnnl_ok(dnnl_stream_wait(strm), "stream wait", shape);
}

static void dnnl_conv_free(struct dnnl_conv *d)
{
    dnnl_primitive_destroy(d->prim);
    dnnl_primitive_desc_destroy(d->pd); /* after the last use of d->impl */
    dnnl_memory_destroy(d->src);
    dnnl_memory_destroy(d->wei);
    dnnl_memory_destroy(d->dst);
}

/* ---- eeb's side ---- */

/* The NHWC batch x as rows of A: one per output pixel (n, oy, ox), each
 * the k x k window's pixels in (ky, kx, c) order, zeros where the window
 * leaves the image.  A window row's kx run is contiguous in NHWC. */
static void im2col(const struct conv *c, const int8_t *x, int8_t *a)
{
    const int oh = out_side(c->h, c), ow = out_side(c->w, c);
    const size_t run = (size_t)c->k * c->cin, kdim = run * c->k;
    for (int n = 0; n < BATCH; n++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                int8_t *row = a + (((size_t)n * oh + oy) * ow + ox) * kdim;
                const int x0 = ox * c->stride - c->pad;
                const int lo = x0 < 0 ? -x0 : 0; /* kx in [lo, hi) is inside */
                const int hi = x0 + c->k > c->w ? c->w - x0 : c->k;
                for (int ky = 0; ky < c->k; ky++) {
                    int8_t *dst = row + ky * run;
                    const int iy = oy * c->stride - c->pad + ky;
                    if (iy < 0 || iy >= c->h || hi <= lo) {
                        memset(dst, 0, run);
                        continue;
                    }
                    const int8_t *src = x + (((size_t)n * c->h + iy) * c->w + x0 + lo) * c->cin;
                    memset(dst, 0, (size_t)lo * c->cin);
                    memcpy(dst + (size_t)lo * c->cin, src, (size_t)(hi - lo) * c->cin);
                    memset(dst + (size_t)hi * c->cin, 0, (size_t)(c->k - hi) * c->cin);
                }
            }
}

/* ---- oneDNN as the emulator calls it ---- */

/* The emulator's oneDNN convolution of shape c (fpga/emu/onednn.c), of
 * `items` items a call, with a stream and scratchpad of its own. */
struct emu_dnnl {
    struct emu_onednn *d;
    struct dnnl_stream *stream;
    void *scratch;
    int items;
};

static void emu_dnnl_init(const struct conv *c, int items, struct emu_dnnl *out)
{
    struct fx_geom g = geometry(c);
    g.n = items;
    out->items = items;
    out->d = emu_onednn_new(&g);
    out->stream = emu_onednn_stream_new();
    out->scratch = out->d ? malloc(emu_onednn_scratch_bytes(out->d) + 1) : NULL; /* not 0 */
    if (!out->d || !out->stream || !out->scratch) {
        fprintf(stderr,
                "bench_onednn: %s: the emulator's oneDNN convolution of %d item(s) failed\n",
                c->name, items);
        exit(1);
    }
}

/* A step's work: the weights w reordered, then the batch src into dst,
 * `items` at a time, the bias added; the largest |sum|. */
static uint32_t emu_dnnl_run(const struct emu_dnnl *e, const struct conv *c, const int8_t *w,
                             const int8_t *src, const int32_t *bias, int32_t *dst)
{
    const size_t in = (size_t)c->h * c->w * c->cin;
    const size_t out = (size_t)out_side(c->h, c) * out_side(c->w, c) * c->cout;
    int failed = emu_onednn_weights(e->d, e->stream, w);
    uint32_t most = 0, m = 0;
    for (int i = 0; i < BATCH && !failed; i += e->items) {
        failed = emu_onednn_run(e->d, e->stream, e->scratch, src + (size_t)i * in, bias,
                                dst + (size_t)i * out, &m);
        most = m > most ? m : most;
    }
    if (failed) {
        fprintf(stderr, "bench_onednn: %s: the emulator's oneDNN convolution failed\n", c->name);
        exit(1);
    }
    return most;
}

static void emu_dnnl_free(struct emu_dnnl *e)
{
    emu_onednn_free(e->d);
    emu_onednn_stream_free(e->stream);
    free(e->scratch);
}

/* ---- main ---- */

/* This process's threads now (/proc/self/status), 0 if it cannot tell. */
static int threads_now(void)
{
    char line[256];
    int n = 0;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/*
 * One thread for oneDNN.  Debian's build runs on OpenMP (libgomp), which
 * reads OMP_NUM_THREADS when it is loaded, before main, so setting it in
 * main comes too late (on a 2-core machine it had already chosen 2).  So
 * the OpenMP runtime is asked (through dlsym: no OpenMP
 * header or flag is needed, libdnnl brings libgomp) and, if it would run
 * more, told.  Sets *was to what it first said; returns what it then
 * says, -1 if there is no OpenMP runtime.  main also checks, after the
 * first shape, that the process never grew a second thread.
 */
static int omp_one_thread(int *was)
{
    int (*get_max)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    void (*set_num)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (!get_max || !set_num)
        return -1;
    *was = get_max();
    if (*was != 1)
        set_num(1);
    return get_max();
}

struct result {
    double im2col_ms, gemm_ms, eeb_ms, dnnl_ms; /* medians */
    double pack_ms;                             /* eeb's weights packed, as each step */
    double dnnl_step_ms; /* oneDNN as the emulator calls it: weights, convolution, bias */
    int by_item;         /* oneDNN's faster way was item by item */
    double ops;          /* 2 x MACs per batch */
    int reps;            /* repetitions the medians are of */
    int implicit;        /* eeb's implicit GEMM (no im2col) */
};

/* One eeb convolution of the batch src into out, the bias packed in pb
 * added and the largest |sum| into *most: the implicit GEMM with its
 * scratch, all counted in ns[1]; or im2col into a, then the GEMM, adding
 * the nanoseconds of each to ns[0] and ns[1]. */
static void eeb_conv(enum eeb_emu_isa isa, const struct conv *c, const int8_t *src, int8_t *a,
                     int8_t *scratch, const struct eeb_emu_packed_b *pb, int32_t *out,
                     int64_t ns[2], uint32_t *most)
{
    const int m = BATCH * out_side(c->h, c) * out_side(c->w, c);
    int64_t t0 = eeb_mono_ns();
    *most = 0;
    if (scratch) {
        const struct fx_geom g = geometry(c);
        if (eeb_emu_conv(&g, src, pb, scratch, out, most)) {
            fprintf(stderr, "bench_onednn: %s: the implicit GEMM refused the shape\n", c->name);
            exit(1);
        }
        ns[1] += eeb_mono_ns() - t0;
        return;
    }
    im2col(c, src, a);
    int64_t t1 = eeb_mono_ns();
    if (eeb_emu_gemm(isa, m, a, pb->k, pb, out, pb->n, most)) {
        fprintf(stderr, "bench_onednn: %s: out of memory in the GEMM\n", c->name);
        exit(1);
    }
    ns[0] += t1 - t0;
    ns[1] += eeb_mono_ns() - t1;
}

/* eeb's weights w (and bias) packed for its convolution of shape c, the
 * implicit GEMM's or the GEMM's, as the emulator does each step. */
static void eeb_pack(enum eeb_emu_isa isa, const struct conv *c, int implicit, const int8_t *w,
                     const int64_t *bias, struct eeb_emu_packed_b *pb)
{
    const struct fx_geom g = geometry(c);
    const int k = c->k * c->k * c->cin, n = c->cout;
    if (implicit ? eeb_emu_conv_pack(&g, w, pb) : eeb_emu_gemm_pack_b(isa, w, k, n, n, pb)) {
        fprintf(stderr, "bench_onednn: %s: packing %dx%d failed\n", c->name, k, n);
        exit(1);
    }
    if (eeb_emu_gemm_set_bias(pb, bias)) {
        fprintf(stderr, "bench_onednn: %s: a bias too wide for the GEMM\n", c->name);
        exit(1);
    }
}

/* Ends the bench if the two NHWC outputs of shape c differ anywhere,
 * oneDNN's given bias (NULL: none) first. */
static void check_equal(const struct conv *c, const int32_t *eeb, const int32_t *dnnl,
                        const int32_t *bias, const char *which)
{
    const size_t oh = (size_t)out_side(c->h, c), ow = (size_t)out_side(c->w, c);
    const size_t n = (size_t)c->cout, total = BATCH * oh * ow * n;
    size_t i = 0;
    while (i < total && eeb[i] == (int32_t)((uint32_t)dnnl[i] + (bias ? (uint32_t)bias[i % n] : 0)))
        i++;
    if (i == total)
        return;
    size_t px = i / n;
    fprintf(stderr,
            "bench_onednn: %s: eeb and %s differ first at element %zu of %zu (NHWC n=%zu "
            "y=%zu x=%zu c=%zu): eeb %d, oneDNN %d%s\n",
            c->name, which, i, total, px / (oh * ow), px / ow % oh, px % ow, i % n, eeb[i], dnnl[i],
            bias ? " before the bias" : "");
    exit(1);
}

/* Calls in a repetition for it to last MIN_REP_S, one taking ns. */
static int calls_for(int64_t ns)
{
    return ns >= MIN_REP_S * 1e9 ? 1 : (int)(MIN_REP_S * 1e9 / (double)(ns > 0 ? ns : 1)) + 1;
}

/* Checks eeb's output against oneDNN's and times both on shape c. */
static struct result run_shape(dnnl_engine_t eng, dnnl_stream_t strm, enum eeb_emu_isa isa,
                               const struct conv *c, char *impl, size_t impl_len)
{
    const int m = BATCH * out_side(c->h, c) * out_side(c->w, c);
    const int n = c->cout, k = c->k * c->k * c->cin;
    const size_t src_n = (size_t)BATCH * c->h * c->w * c->cin, out_n = (size_t)m * n;
    int8_t *src = alloc_or_die(src_n), *w = alloc_or_die((size_t)k * n);
    const struct fx_geom g = geometry(c);
    const size_t scratch_bytes = isa == EEB_EMU_ISA_AMX ? eeb_emu_conv_scratch(&g) : 0;
    int8_t *a = scratch_bytes ? NULL : alloc_or_die((size_t)m * k);
    int8_t *scratch = scratch_bytes ? alloc_or_die(scratch_bytes) : NULL;
    int32_t *c_eeb = alloc_or_die(out_n * sizeof *c_eeb);
    int32_t *c_dnnl = alloc_or_die(out_n * sizeof *c_dnnl);
    int32_t *c_biased = alloc_or_die(out_n * sizeof *c_biased);
    int32_t *bias = alloc_or_die((size_t)n * sizeof *bias);
    int64_t *bias64 = alloc_or_die((size_t)n * sizeof *bias64);
    for (size_t i = 0; i < src_n; i++)
        src[i] = rnd8();
    for (size_t i = 0; i < (size_t)k * n; i++)
        w[i] = rnd8();
    for (int j = 0; j < n; j++) /* 2^29 > 2^24: float could not carry it */
        bias64[j] = bias[j] = (int32_t)((uint32_t)rnd8() << 22 | (uint8_t)rnd8()) / 2;
    memset(c_eeb, 0x11, out_n * sizeof *c_eeb); /* unequal, so an unwritten output shows */
    memset(c_dnnl, 0x22, out_n * sizeof *c_dnnl);

    struct eeb_emu_packed_b pb;
    eeb_pack(isa, c, scratch != NULL, w, bias64, &pb);
    struct dnnl_conv d;
    dnnl_conv_init(eng, strm, c, src, w, c_dnnl, &d);
    snprintf(impl, impl_len, "%s", d.impl);
    struct emu_dnnl ways[2]; /* as the emulator: the whole batch a call, an item a call */
    emu_dnnl_init(c, BATCH, &ways[0]);
    emu_dnnl_init(c, 1, &ways[1]);

    int64_t warm[2] = {0, 0}; /* the warm-up: first touch, JIT; then the checks */
    uint32_t eeb_most = 0;
    eeb_conv(isa, c, src, a, scratch, &pb, c_eeb, warm, &eeb_most);
    int64_t t0 = eeb_mono_ns();
    dnnl_conv_run(strm, &d, c->name);
    int64_t warm_dnnl = eeb_mono_ns() - t0;
    check_equal(c, c_eeb, c_dnnl, bias, "oneDNN");
    int64_t warm_step[2];
    for (int v = 0; v < 2; v++) {
        memset(c_biased, 0x33, out_n * sizeof *c_biased);
        t0 = eeb_mono_ns();
        const uint32_t dnnl_most = emu_dnnl_run(&ways[v], c, w, src, bias, c_biased);
        warm_step[v] = eeb_mono_ns() - t0;
        check_equal(c, c_eeb, c_biased, NULL, "the emulator's oneDNN");
        if (eeb_most != dnnl_most) {
            fprintf(stderr, "bench_onednn: %s: the largest |sum|: eeb %u, oneDNN's sums %u\n",
                    c->name, eeb_most, dnnl_most);
            exit(1);
        }
    }

    const int reps =
        (double)(warm[0] + warm[1] + warm_dnnl + warm_step[0] + warm_step[1]) / 1e9 > WARMUP_SLOW_S
            ? REPS_SLOW
            : BENCH_REPS;
    const int eeb_calls = calls_for(warm[0] + warm[1]), dnnl_calls = calls_for(warm_dnnl);
    double t_im2col[BENCH_REPS] = {0}, t_gemm[BENCH_REPS] = {0}, t_eeb[BENCH_REPS] = {0},
           t_dnnl[BENCH_REPS] = {0}, t_step[2][BENCH_REPS] = {{0}}, t_pack[BENCH_REPS] = {0};
    for (int r = 0; r < reps; r++) {
        /* packed twice, the second timed: the emulator packs into memory it
         * keeps, where a fresh allocation here may first fault its pages in */
        for (int twice = 0; twice < 2; twice++) {
            t0 = eeb_mono_ns();
            eeb_emu_gemm_free_b(&pb);
            eeb_pack(isa, c, scratch != NULL, w, bias64, &pb);
            t_pack[r] = (double)(eeb_mono_ns() - t0) / 1e6;
        }
        int64_t ns[2] = {0, 0};
        for (int i = 0; i < eeb_calls; i++)
            eeb_conv(isa, c, src, a, scratch, &pb, c_eeb, ns, &eeb_most);
        t0 = eeb_mono_ns();
        for (int i = 0; i < dnnl_calls; i++)
            dnnl_conv_run(strm, &d, c->name);
        t_dnnl[r] = (double)(eeb_mono_ns() - t0) / 1e6 / dnnl_calls;
        for (int v = 0; v < 2; v++) {
            const int calls = calls_for(warm_step[v]);
            t0 = eeb_mono_ns();
            for (int i = 0; i < calls; i++)
                emu_dnnl_run(&ways[v], c, w, src, bias, c_biased);
            t_step[v][r] = (double)(eeb_mono_ns() - t0) / 1e6 / calls;
        }
        t_im2col[r] = (double)ns[0] / 1e6 / eeb_calls;
        t_gemm[r] = (double)ns[1] / 1e6 / eeb_calls;
        t_eeb[r] = (double)(ns[0] + ns[1]) / 1e6 / eeb_calls;
    }
    struct result res = {.im2col_ms = bench_median(t_im2col, (size_t)reps),
                         .gemm_ms = bench_median(t_gemm, (size_t)reps),
                         .eeb_ms = bench_median(t_eeb, (size_t)reps),
                         .dnnl_ms = bench_median(t_dnnl, (size_t)reps),
                         .pack_ms = bench_median(t_pack, (size_t)reps),
                         .ops = 2.0 * m * n * k,
                         .reps = reps,
                         .implicit = scratch != NULL};
    for (int v = 0; v < 2; v++) { /* the faster way */
        const double ms = bench_median(t_step[v], (size_t)reps);
        if (v == 0 || ms < res.dnnl_step_ms)
            res.dnnl_step_ms = ms, res.by_item = v;
        emu_dnnl_free(&ways[v]);
    }
    dnnl_conv_free(&d);
    free(c_biased), free(bias), free(bias64);
    eeb_emu_gemm_free_b(&pb);
    free(src), free(w), free(a), free(scratch), free(c_eeb), free(c_dnnl);
    return res;
}

int main(int argc, char **argv)
{
    int64_t start = eeb_mono_ns();
    int omp_was = 0, omp = omp_one_thread(&omp_was);
    if (omp > 1) {
        fprintf(stderr, "bench_onednn: the OpenMP runtime keeps %d threads\n", omp);
        return 1;
    }
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    dnnl_ok(dnnl_engine_create(&eng, dnnl_cpu, 0), "engine", "setup");
    dnnl_ok(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags), "stream", "setup");
    enum eeb_emu_isa isa = eeb_emu_gemm_best_isa();
    const dnnl_version_t *v = dnnl_version();
    char cpu[128];
    bench_cpu_model(cpu, sizeof cpu);

    printf("int8 convolution, eeb vs oneDNN: ResNet-18's shapes at 224x224, forward, batch %d, "
           "s8 x s8 -> s32 exact, one thread each\n",
           BATCH);
    printf("  CPU: %s\n", cpu);
    printf("  eeb: int8 GEMMs on %s%s\n", eeb_emu_isa_name(isa),
           isa == EEB_EMU_ISA_AMX ? "; implicit GEMMs (no im2col) but for the 1x1s"
                                  : ", after im2col");
    printf("  oneDNN %d.%d.%d (commit %s): up to %s, %s runtime", v->major, v->minor, v->patch,
           v->hash, dnnl_cpu_isa2str(dnnl_get_effective_cpu_isa()),
           v->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
    if (omp < 0)
        printf(" (no OpenMP runtime found to ask)\n");
    else if (omp_was != 1)
        printf(" at 1 thread (it had read %d before main; set by omp_set_num_threads)\n", omp_was);
    else
        printf(" at 1 thread (OMP_NUM_THREADS)\n");
    printf(
        "  ms per batch (median of %d unless marked); eeb x = eeb's speed over oneDNN's; a step: "
        "weights prepared, convolution, bias, largest |sum|\n  (oneDNN's bias and largest |sum| "
        "in a pass after the batch's call, or after each item's: +item)\n",
        BENCH_REPS);

    /* totals over the forward pass: eeb, oneDNN alone; each step as the
     * emulator would run them (see the top), and the faster of those */
    double eeb_total = 0, dnnl_total = 0, eeb_step = 0, dnnl_step = 0, best_step = 0;
    int eeb_wins = 0, dnnl_wins = 0, step_wins = 0, layers = 0;
    size_t ran = 0;
    for (size_t s = 0; s < NCONVS; s++) {
        const struct conv *c = &convs[s];
        if (argc > 1 && !strstr(c->name, argv[1]))
            continue;
        char impl[128];
        struct result r = run_shape(eng, strm, isa, c, impl, sizeof impl);
        if (ran++ == 0 && threads_now() != 1) {
            fprintf(stderr, "bench_onednn: %d threads ran, not 1\n", threads_now());
            return 1;
        }
        double eeb_gops = r.ops / r.eeb_ms / 1e6, dnnl_gops = r.ops / r.dnnl_ms / 1e6;
        double eeb_s = r.eeb_ms + r.pack_ms, dnnl_s = r.dnnl_step_ms;
        double ratio = r.dnnl_ms / r.eeb_ms, step_ratio = dnnl_s / eeb_s;
        char marked[16] = "";
        if (r.reps != BENCH_REPS)
            snprintf(marked, sizeof marked, " (%d reps)", r.reps);
        char how[48];
        if (r.implicit)
            snprintf(how, sizeof how, "implicit GEMM, no im2col");
        else
            snprintf(how, sizeof how, "im2col %5.2f + gemm %5.2f", r.im2col_ms, r.gemm_ms);
        printf("  %-21s x%d  eeb %6.2f ms (%-23s) %6.1f GOP/s | oneDNN %6.2f ms %6.1f GOP/s | eeb "
               "x%.2f | a step: eeb %6.2f ms, oneDNN %6.2f ms%-5s eeb x%.2f  [%s]%s\n",
               c->name, c->count, r.eeb_ms, how, eeb_gops, r.dnnl_ms, dnnl_gops, ratio, eeb_s,
               dnnl_s, r.by_item ? " +item" : "", step_ratio, impl, marked);
        const struct {
            const char *what;
            double value;
            const char *unit;
        } lines[] = {{"eeb", r.eeb_ms, "ms"},         {"eeb_im2col", r.im2col_ms, "ms"},
                     {"eeb_gemm", r.gemm_ms, "ms"},   {"onednn", r.dnnl_ms, "ms"},
                     {"eeb_gops", eeb_gops, "GOP/s"}, {"onednn_gops", dnnl_gops, "GOP/s"},
                     {"eeb_vs_onednn", ratio, "x"},   {"eeb_step", eeb_s, "ms"},
                     {"onednn_step", dnnl_s, "ms"},   {"eeb_vs_onednn_step", step_ratio, "x"}};
        for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
            char name[96];
            snprintf(name, sizeof name, "conv_int8_%s_%s", c->name, lines[i].what);
            bench_line(name, lines[i].value, lines[i].unit);
        }
        eeb_total += c->count * r.eeb_ms;
        dnnl_total += c->count * r.dnnl_ms;
        eeb_step += c->count * eeb_s;
        dnnl_step += c->count * dnnl_s;
        best_step += c->count * (dnnl_s < eeb_s ? dnnl_s : eeb_s);
        eeb_wins += r.eeb_ms < r.dnnl_ms;
        dnnl_wins += r.dnnl_ms < r.eeb_ms;
        step_wins += dnnl_s < eeb_s;
        layers += c->count;
    }
    if (ran == 0) {
        fprintf(stderr, "bench_onednn: no shape's name holds '%s'\n", argv[1]);
        return 1;
    }
    printf("  %s %d convolutions, ms per batch:\n"
           "    the convolutions alone: eeb %.1f, oneDNN %.1f (eeb x%.2f); faster on %d of %zu "
           "shapes: eeb, on %d: oneDNN\n"
           "    a step as the emulator runs them: eeb %.1f, oneDNN %.1f (eeb x%.2f); oneDNN faster "
           "on %d of %zu shapes;\n"
           "    the faster of the two on each shape %.1f: oneDNN where it is faster would save "
           "%.1f ms a batch\n",
           ran == NCONVS ? "the forward pass's" : "these shapes'", layers, eeb_total, dnnl_total,
           dnnl_total / eeb_total, eeb_wins, ran, dnnl_wins, eeb_step, dnnl_step,
           dnnl_step / eeb_step, step_wins, ran, best_step, eeb_step - best_step);
    if (ran == NCONVS) {
        bench_line("conv_int8_resnet18_fwd_eeb", eeb_total, "ms");
        bench_line("conv_int8_resnet18_fwd_onednn", dnnl_total, "ms");
        bench_line("conv_int8_resnet18_fwd_eeb_vs_onednn", dnnl_total / eeb_total, "x");
        bench_line("conv_int8_resnet18_fwd_eeb_step", eeb_step, "ms");
        bench_line("conv_int8_resnet18_fwd_onednn_step", dnnl_step, "ms");
        bench_line("conv_int8_resnet18_fwd_eeb_vs_onednn_step", dnnl_step / eeb_step, "x");
        bench_line("conv_int8_resnet18_fwd_faster_of_both_step", best_step, "ms");
    }
    printf("  (this bench: %.0f s)\n", bench_seconds_since(start));
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    return 0;
}
