/*
 * onednn.c - a convolution through oneDNN (Debian's libdnnl), for the
 * layers where it is faster than eeb's own (the forward pass, and backward
 * data at stride 1, which is a forward convolution of dy): the same bits.
 *
 * oneDNN sums an int8 convolution's s8 x s8 products in int32 exactly on
 * CPUs with AVX-512 VNNI or AMX; on older ones it multiplies in 16-bit
 * pairs that saturate (its "nuances of int8 computations"; under
 * valgrind, which shows it AVX2, a sum came out wrong), so there it is
 * not used (nor on AVX2-VNNI, not measured).  On the way out some of its
 * kernels pass the sums through float (to scale them; a bias of its own,
 * always: a sum of 250004869 came out 250004864), which is exact below
 * 2^24 only.  So the bias is added here, with the search for the largest
 * |sum| the requantization needs, while an item's sums are in cache; and a
 * call any of whose sums reaches 2^24 before the bias (rounding keeps a
 * sum on its side of 2^24) is refused, for eeb's own to do.
 *
 * One primitive per geometry, of g->n items a call (the emulator's
 * workers take one item at a time).  Its weights are reordered to
 * oneDNN's layout once a convolution (training changes them every step).
 * Each worker brings its own stream and scratchpad: oneDNN's own
 * scratchpad may not be used by two threads.  oneDNN runs on OpenMP
 * (libgomp), which would start a team of threads beside the workers: each
 * call asks it for one, and gives the calling thread's setting back after.
 */
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"

#include <dlfcn.h>
#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct emu_onednn {
    struct fx_geom g;
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t conv;
    dnnl_memory_desc_t src, dst, user; /* a call's x and y; W as eeb holds it */
    dnnl_memory_t wei;                 /* W in oneDNN's layout */
    dnnl_primitive_desc_t reorder_pd;
    dnnl_primitive_t reorder;
    const dnnl_memory_desc_t *scratch_md; /* a call's scratchpad (the pd's) */
    size_t scratch;                       /* and its bytes */
};

#define FLOAT_EXACT (1u << 24) /* float holds every integer of smaller magnitude */

static dnnl_engine_t engine;
static char version[32];
static int (*omp_get)(void);
static void (*omp_set)(int);

static void start(void)
{
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    const int exact = isa == dnnl_cpu_isa_avx512_core_vnni ||
                      isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx;
    const dnnl_version_t *v = dnnl_version();
    snprintf(version, sizeof version, "%d.%d.%d", v->major, v->minor, v->patch);
    /* through dlsym: libdnnl brings libgomp, and eeb needs no OpenMP flag */
    omp_get = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    omp_set = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
    if (exact && dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
        engine = NULL;
}

/* The engine goes when this code does: at exit, or when a plugin that
 * holds the emulator is unloaded (its pointer would go, the engine stay);
 * its emulators are freed before. */
__attribute__((destructor)) static void stop(void)
{
    if (engine)
        dnnl_engine_destroy(engine);
    engine = NULL;
}

int emu_onednn_exact(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, start);
    return engine != NULL;
}

const char *eeb_emu_onednn_version(int *usable)
{
    *usable = emu_onednn_exact();
    return version;
}

/* What this thread's OpenMP would run, now set to one thread; 0 if no
 * OpenMP runtime was found. */
static int one_thread(void)
{
    if (!omp_get || !omp_set)
        return 0;
    const int was = omp_get();
    if (was != 1)
        omp_set(1);
    return was;
}

static void threads_back(int was)
{
    if (was > 1)
        omp_set(was);
}

void emu_onednn_free(struct emu_onednn *d)
{
    if (!d)
        return;
    dnnl_primitive_destroy(d->conv);
    dnnl_primitive_desc_destroy(d->pd);
    dnnl_memory_destroy(d->wei);
    dnnl_primitive_destroy(d->reorder);
    dnnl_primitive_desc_destroy(d->reorder_pd);
    free(d);
}

struct emu_onednn *emu_onednn_new(const struct fx_geom *g)
{
    /* the padding past the last window: what the output's size implies,
     * at least none (a stride may leave input pixels unread) */
    int pad_h = (g->oh - 1) * g->s + g->kh - g->ih - g->p;
    int pad_w = (g->ow - 1) * g->s + g->kw - g->iw - g->p;
    pad_h = pad_h > 0 ? pad_h : 0, pad_w = pad_w > 0 ? pad_w : 0;
    const int oh = (g->ih + g->p + pad_h - g->kh) / g->s + 1;
    const int ow = (g->iw + g->p + pad_w - g->kw) / g->s + 1;
    struct emu_onednn *d = calloc(1, sizeof *d);
    if (!d || !emu_onednn_exact() || oh != g->oh || ow != g->ow) {
        free(d);
        return NULL;
    }
    d->g = *g;
    const int was = one_thread(); /* the primitive splits its work for the threads it sees */
    const dnnl_dims_t src = {g->n, g->ic, g->ih, g->iw}, dst = {g->n, g->oc, g->oh, g->ow};
    const dnnl_dims_t wei = {g->oc, g->ic, g->kh, g->kw};
    const dnnl_dims_t strides = {g->s, g->s}, left = {g->p, g->p}, right = {pad_h, pad_w};
    dnnl_memory_desc_t any;
    dnnl_convolution_desc_t desc;
    dnnl_primitive_attr_t attr = NULL;
    int ok =
        dnnl_memory_desc_init_by_tag(&d->src, 4, src, dnnl_s8, dnnl_nhwc) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&d->dst, 4, dst, dnnl_s32, dnnl_nhwc) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&d->user, 4, wei, dnnl_s8, dnnl_hwio) == dnnl_success &&
        dnnl_memory_desc_init_by_tag(&any, 4, wei, dnnl_s8, dnnl_format_tag_any) == dnnl_success &&
        dnnl_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct,
                                           &d->src, &any, NULL, &d->dst, strides, left,
                                           right) == dnnl_success &&
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success &&
        dnnl_primitive_desc_create(&d->pd, &desc, attr, engine, NULL) == dnnl_success;
    dnnl_primitive_attr_destroy(attr);
    const dnnl_memory_desc_t *wmd =
        ok ? dnnl_primitive_desc_query_md(d->pd, dnnl_query_weights_md, 0) : NULL;
    const dnnl_memory_desc_t *smd =
        ok ? dnnl_primitive_desc_query_md(d->pd, dnnl_query_scratchpad_md, 0) : NULL;
    ok = ok && wmd && dnnl_primitive_create(&d->conv, d->pd) == dnnl_success &&
         dnnl_memory_create(&d->wei, wmd, engine, DNNL_MEMORY_ALLOCATE) == dnnl_success &&
         dnnl_reorder_primitive_desc_create(&d->reorder_pd, &d->user, engine, wmd, engine, NULL) ==
             dnnl_success &&
         dnnl_primitive_create(&d->reorder, d->reorder_pd) == dnnl_success;
    d->scratch_md = smd;
    d->scratch = smd ? dnnl_memory_desc_get_size(smd) : 0;
    threads_back(was);
    if (!ok) {
        emu_onednn_free(d);
        return NULL;
    }
    return d;
}

size_t emu_onednn_scratch_bytes(const struct emu_onednn *d)
{
    return d->scratch;
}

struct dnnl_stream *emu_onednn_stream_new(void)
{
    dnnl_stream_t s;
    return emu_onednn_exact() &&
                   dnnl_stream_create(&s, engine, dnnl_stream_default_flags) == dnnl_success
               ? s
               : NULL;
}

void emu_onednn_stream_free(struct dnnl_stream *stream)
{
    if (stream)
        dnnl_stream_destroy(stream);
}

/* Runs prim on stream with args; -1 if oneDNN failed. */
static int execute(dnnl_primitive_t prim, dnnl_stream_t stream, int nargs,
                   const dnnl_exec_arg_t *args)
{
    const int was = one_thread();
    int ok = dnnl_primitive_execute(prim, stream, nargs, args) == dnnl_success &&
             dnnl_stream_wait(stream) == dnnl_success;
    threads_back(was);
    return ok ? 0 : -1;
}

int emu_onednn_weights(struct emu_onednn *d, struct dnnl_stream *stream, const int8_t *w)
{
    dnnl_memory_t user;
    if (dnnl_memory_create(&user, &d->user, engine, (void *)(uintptr_t)w) != dnnl_success)
        return -1;
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, d->wei}};
    const int st = execute(d->reorder, stream, 2, args);
    dnnl_memory_destroy(user);
    return st;
}

/* Adds bias[j] to column j of the pixels x n sums y; their largest |sum|
 * before (*raw) and after (|sum| < 2^31, as in eeb's GEMM). */
__attribute__((target("avx512f"))) static uint32_t bias_avx512(int32_t *y, size_t pixels, int n,
                                                               const int32_t *bias, uint32_t *raw)
{
    __m512i most = _mm512_setzero_si512(), before = _mm512_setzero_si512();
    for (size_t p = 0; p < pixels; p++, y += n)
        for (int j = 0; j < n; j += 16) {
            const __m512i u = _mm512_loadu_si512(y + j);
            const __m512i v = _mm512_add_epi32(u, _mm512_loadu_si512(bias + j));
            _mm512_storeu_si512(y + j, v);
            before = _mm512_max_epu32(before, _mm512_abs_epi32(u));
            most = _mm512_max_epu32(most, _mm512_abs_epi32(v));
        }
    *raw = _mm512_reduce_max_epu32(before);
    return _mm512_reduce_max_epu32(most);
}

static uint32_t add_bias(int32_t *y, size_t pixels, int n, const int32_t *bias, uint32_t *raw)
{
    if (n % 16 == 0 && __builtin_cpu_supports("avx512f"))
        return bias_avx512(y, pixels, n, bias, raw);
    uint64_t most = 0, before = 0;
    for (size_t p = 0; p < pixels; p++, y += n)
        for (int j = 0; j < n; j++) {
            const uint64_t was = fx_abs64(y[j]);
            y[j] = (int32_t)((uint32_t)y[j] + (uint32_t)bias[j]);
            before = was > before ? was : before;
            most = fx_abs64(y[j]) > most ? fx_abs64(y[j]) : most;
        }
    *raw = (uint32_t)before;
    return (uint32_t)most;
}

int emu_onednn_run(const struct emu_onednn *d, struct dnnl_stream *stream, void *scratch,
                   const int8_t *x, const int32_t *bias, int32_t *y, uint32_t *maxabs)
{
    dnnl_memory_t mx = NULL, my = NULL, ms = NULL;
    int ok =
        dnnl_memory_create(&mx, &d->src, engine, (void *)(uintptr_t)x) == dnnl_success &&
        dnnl_memory_create(&my, &d->dst, engine, y) == dnnl_success &&
        (!d->scratch || dnnl_memory_create(&ms, d->scratch_md, engine, scratch) == dnnl_success);
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, mx},
                                    {DNNL_ARG_WEIGHTS, d->wei},
                                    {DNNL_ARG_DST, my},
                                    {DNNL_ARG_SCRATCHPAD, ms}};
    ok = ok && !execute(d->conv, stream, d->scratch ? 4 : 3, args);
    dnnl_memory_destroy(mx);
    dnnl_memory_destroy(my);
    dnnl_memory_destroy(ms);
    uint32_t raw = 0;
    if (ok)
        *maxabs = add_bias(y, (size_t)d->g.n * d->g.oh * d->g.ow, d->g.oc, bias, &raw);
    return ok && raw < FLOAT_EXACT ? 0 : -1;
}
