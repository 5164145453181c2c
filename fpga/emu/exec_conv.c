/*
 * exec_conv.c - the executor's forward and backward-data convolutions
 * (exec.c runs the commands): eeb's implicit GEMMs on AMX, GEMMs over
 * im2col rows (exec_gemm.c) otherwise, or oneDNN's convolutions where they
 * measured faster, giving the same bits.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <stdlib.h>
#include <string.h>

/* ---- forward ---- */
/*
 * On AMX, a convolution whose input channels come in 64s runs as an
 * implicit GEMM: the input laid out in the phases' grids once
 * (implicit.c), item by item on the workers; then each 32 virtual pixels
 * x 32 output channels keep their sums in the tiles over every tap and
 * channel, and leave them once, bias added.  The backward data pass at
 * stride 1 is such a convolution too: of dy, padded by k - 1 - p, with
 * W's taps turned around.  An unpadded 1x1 reads x in place at stride 1
 * and keeps im2col at a stride, one copy of each pixel it reads (the grid
 * was 5-20 % slower); a strided backward data pass keeps its phases, each
 * with only its taps.  Few input channels at a stride (the stem) go in
 * space to depth.
 */
struct implicit_job {
    struct eeb_emu *e;
    const struct emu_implicit *im;
    const int8_t *x;
    int8_t *grid;
    const int64_t *aoff;
    const struct blocks *b;
    int32_t *acc;
    int along; /* parts along the virtual pixels */
};

static void implicit_layout(void *ctx, int n, int worker)
{
    struct implicit_job *j = ctx;
    uint64_t since = tick(j->e);
    emu_implicit_pixels(j->im, j->x, n, j->grid);
    tock(j->e, &j->e->w[worker], EEB_EMU_PHASE_IM2COL, &since);
}

static void implicit_part(void *ctx, int part, int worker)
{
    struct implicit_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    const int block = part / j->along;
    const uint32_t most = emu_implicit_part(j->im, j->grid, j->aoff, &j->b->b[block],
                                            part % j->along, j->acc + block * j->b->cols);
    w->maxabs = most > w->maxabs ? most : w->maxabs;
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
}

/* The convolution planned in im, of x by the packed weights b (B's k in
 * (ky, kx, ci) order, ky turned around if flip) into acc, as above; the
 * largest |sum| into *maxabs.  -1 if memory ran out. */
static int implicit_conv(struct eeb_emu *e, const struct emu_implicit *im, const int8_t *x,
                         int flip, const struct blocks *b, int32_t *acc, uint64_t *maxabs)
{
    const size_t grid = (size_t)im->phases * emu_implicit_pixels_bytes(im);
    int8_t *buf = emu_grow(&e->gathered, grid + emu_implicit_offsets(im, flip, NULL));
    if (!buf)
        return -1;
    int64_t *aoff = (int64_t *)(void *)(buf + grid);
    emu_implicit_offsets(im, flip, aoff);
    struct implicit_job j = {.e = e,
                             .im = im,
                             .x = x,
                             .grid = buf,
                             .aoff = aoff,
                             .b = b,
                             .acc = acc,
                             .along = emu_implicit_parts(im)};
    emu_reset_workers(e);
    emu_pool_run(e->pool, im->g.n, implicit_layout, &j);
    emu_pool_run(e->pool, j.along * b->count, implicit_part, &j);
    uint32_t unused = 0;
    return emu_gather(e, maxabs, &unused);
}

/* Runs a GEMM-over-rows job, or where im is given the implicit GEMM it
 * plans into the same accumulators (flip as above), then requantizes the
 * sums (at exponent e_acc) into t, rounding half up. */
static enum fx_status run_rows(struct eeb_emu *e, uint8_t *mem, struct rows_job *j,
                               const struct emu_implicit *im, int flip, int e_acc,
                               struct fx_tensor *t)
{
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    if (im ? implicit_conv(e, im, j->src, flip, j->b, j->acc, &maxabs)
           : emu_gemm_rows(e, j, &maxabs, &sat))
        return FX_NO_MEMORY;
    t->saturations += sat;
    emu_requantize(e, mem, j->acc, (uint64_t)j->rows * (uint64_t)j->n, maxabs, e_acc,
                   fx_round_half_up(), t);
    return FX_OK;
}

/* ---- oneDNN's convolutions, and the forward pass ---- */

/* The oneDNN layer of geometry g's items, forward or backward, added (with
 * its primitive, if oneDNN takes it) on first sight; NULL if out of
 * memory. */
static struct dnn_layer *dnn_layer(struct eeb_emu *e, const struct fx_geom *g, int backward)
{
    struct fx_geom item = *g; /* the workers take items */
    item.n = 1;
    for (int i = 0; i < e->ndnn; i++)
        if (!memcmp(&e->dnn[i].item, &item, sizeof item) && e->dnn[i].backward == backward)
            return &e->dnn[i];
    struct dnn_layer *more = realloc(e->dnn, (size_t)(e->ndnn + 1) * sizeof *more);
    if (!more)
        return NULL;
    e->dnn = more;
    struct dnn_layer *l = &e->dnn[e->ndnn++];
    memset(l, 0, sizeof *l);
    l->item = item;
    l->backward = backward;
    l->d = emu_onednn_new(&item);
    return l;
}

/* Whether both ways of layer l have had their trials. */
static int tried(const struct dnn_layer *l)
{
    return l->calls[0] >= EEB_EMU_ONEDNN_TRIALS && l->calls[1] > EEB_EMU_ONEDNN_TRIALS;
}

/* 1 if oneDNN runs this call of layer l: always where ON; in AUTO, by
 * turns (oneDNN first) until both have had their trials, then the
 * faster. */
static int onednn_or_eeb(const struct eeb_emu *e, const struct dnn_layer *l)
{
    if (!l || !l->d)
        return 0;
    if (e->onednn == EEB_EMU_ONEDNN_ON)
        return 1;
    if (!tried(l))
        return l->calls[1] <= l->calls[0];
    return l->best[1] < l->best[0];
}

void eeb_emu_onednn_shapes(const struct eeb_emu *e, int *seen, int *by_onednn)
{
    *seen = e->ndnn, *by_onednn = 0;
    for (int i = 0; i < e->ndnn; i++) {
        const struct dnn_layer *l = &e->dnn[i];
        *by_onednn += l->d && (e->onednn == EEB_EMU_ONEDNN_ON || (tried(l) && onednn_or_eeb(e, l)));
    }
}

/* A call of layer l by eeb's own (0) or oneDNN (1) took ns. */
static void count_call(struct dnn_layer *l, int onednn, uint64_t ns)
{
    const int timed = !onednn || l->calls[1] > 0;
    if (timed && (!l->best[onednn] || ns < l->best[onednn]))
        l->best[onednn] = ns;
    l->calls[onednn]++;
}

struct onednn_job {
    struct eeb_emu *e;
    const struct emu_onednn *d;
    const int8_t *x;
    const int32_t *bias;
    int32_t *acc;
    size_t in, out; /* an item's input bytes, output sums */
};

static void onednn_item(void *ctx, int n, int worker)
{
    struct onednn_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    /* a byte at least: grow gives none for none */
    void *scratch = emu_grow(&w->dnn_scratch, emu_onednn_scratch_bytes(j->d) + 1);
    uint32_t most = 0;
    if (!w->dnn_stream)
        w->dnn_stream = emu_onednn_stream_new();
    if (!scratch || !w->dnn_stream ||
        emu_onednn_run(j->d, w->dnn_stream, scratch, j->x + (size_t)n * j->in, j->bias,
                       j->acc + (size_t)n * j->out, &most)) {
        w->oom = 1;
        return;
    }
    w->maxabs = most > w->maxabs ? most : w->maxabs;
    tock(j->e, w, EEB_EMU_PHASE_GEMM, &since);
}

/*
 * A convolution as oneDNN is given it: geometry g of x (NHWC) by W into
 * acc, bias added (NULL: none; |bias| at most widest), requantized at
 * exponent e_acc into out.  W is the command's, in (ky, kx, ci) rows by
 * oc (HWIO), or for backward data its transpose with the taps turned
 * around (see conv_bwd_data), made here when oneDNN runs.
 */
struct dnn_call {
    struct fx_geom g;
    const int8_t *x, *w;
    int backward;
    const int64_t *bias;
    int64_t widest;
    int32_t *acc;
    int e_acc;
    struct fx_tensor *out;
};

/* W' for backward data at stride 1: W'[ky][kx][o][i] = W[kh-1-ky][kw-1-kx][i][o]. */
static void turn_around(const struct fx_geom *g, const int8_t *w, int8_t *out)
{
    for (int t = 0; t < g->kh * g->kw; t++) {
        const int8_t *tap = w + (size_t)(g->kh * g->kw - 1 - t) * g->ic * g->oc;
        int8_t *to = out + (size_t)t * g->oc * g->ic;
        for (int i = 0; i < g->ic; i++)
            for (int o = 0; o < g->oc; o++)
                to[(size_t)o * g->ic + i] = tap[(size_t)i * g->oc + o];
    }
}

/* Call c through oneDNN's primitive d, item by item on the workers; the
 * largest |sum| into *maxabs.  -1 if memory ran out or oneDNN failed. */
static int onednn_conv(struct eeb_emu *e, const struct fx_conv *cv, const struct dnn_call *c,
                       struct emu_onednn *d, uint64_t *maxabs)
{
    const struct fx_geom *g = &c->g;
    struct worker *caller = &e->w[0]; /* the pool's worker 0 */
    int32_t *b32 = emu_grow(&e->bias32, (size_t)g->oc * sizeof *b32);
    const int8_t *w = c->w;
    if (!b32 || (!caller->dnn_stream && !(caller->dnn_stream = emu_onednn_stream_new())))
        return -1;
    for (int o = 0; o < g->oc; o++)
        b32[o] = c->bias ? (int32_t)c->bias[o] : 0;
    uint64_t since = tick(e);
    if (c->backward) { /* the command's g: W is kh x kw x ic x oc */
        int8_t *turned = emu_grow(&e->turned, (size_t)g->kh * g->kw * g->ic * g->oc);
        if (!turned)
            return -1;
        turn_around(&cv->g, w, turned);
        w = turned;
    }
    if (emu_onednn_weights(d, caller->dnn_stream, w))
        return -1;
    tock(e, caller, EEB_EMU_PHASE_PACK, &since);
    struct onednn_job j = {.e = e,
                           .d = d,
                           .x = c->x,
                           .bias = b32,
                           .acc = c->acc,
                           .in = (size_t)g->ih * g->iw * g->ic,
                           .out = (size_t)g->oh * g->ow * g->oc};
    emu_reset_workers(e);
    emu_pool_run(e->pool, g->n, onednn_item, &j);
    uint32_t unused = 0;
    return emu_gather(e, maxabs, &unused);
}

/* eeb's own way with a convolution command (c describes it as oneDNN
 * sees it). */
typedef enum fx_status own_conv_fn(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                   const struct dnn_call *c);

/* Command cv by oneDNN or by eeb's own (see eeb_emu.h), which give the
 * same bits. */
static enum fx_status onednn_or_own(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                    const struct dnn_call *c, own_conv_fn *own)
{
    const struct fx_geom *g = &c->g;
    /* oneDNN's sums plus the bias must stay in int32, as the GEMM's */
    struct dnn_layer *l = e->onednn != EEB_EMU_ONEDNN_OFF &&
                                  c->widest <= EEB_EMU_GEMM_BIAS_MAX((int64_t)g->kh * g->kw * g->ic)
                              ? dnn_layer(e, g, c->backward)
                              : NULL;
    const uint64_t t0 = now_ns();
    const size_t sums = (size_t)g->n * g->oh * g->ow * g->oc;
    int32_t *first = NULL;
    uint64_t maxabs = 0;
    const int by_onednn = onednn_or_eeb(e, l);
    if (by_onednn) {
        const int ok = !onednn_conv(e, cv, c, l->d, &maxabs);
        if (ok && l->calls[1] > 0) {
            emu_requantize(e, mem, c->acc, sums, maxabs, c->e_acc, fx_round_half_up(), c->out);
            count_call(l, 1, now_ns() - t0);
            return FX_OK;
        }
        /* a geometry's first sums from oneDNN, and their largest, are
         * checked against eeb's own on the same input, whose output the
         * call keeps */
        if (ok && (first = malloc(sums * sizeof *first)))
            memcpy(first, c->acc, sums * sizeof *first);
    }
    enum fx_status st = own(e, mem, cv, c);
    if (by_onednn && first && st == FX_OK && !memcmp(first, c->acc, sums * sizeof *first) &&
        maxabs == fx_maxabs32(c->acc, sums))
        count_call(l, 1, 0);
    else if (by_onednn) { /* oneDNN failed, refused or differed: eeb's own from now on */
        emu_onednn_free(l->d);
        l->d = NULL;
    } else if (l && l->d)
        count_call(l, 0, now_ns() - t0);
    free(first);
    return st;
}

static own_conv_fn conv_fwd_own;

enum fx_status emu_conv_fwd(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv)
{
    const struct fx_geom *g = &cv->g;
    const int e_acc = cv->in->exp + cv->w->exp;
    int64_t *bias = emu_grow(&e->bias, (size_t)g->oc * sizeof *bias);
    if (!bias)
        return FX_NO_MEMORY;
    const int32_t *b24 = (const int32_t *)(const void *)(mem + cv->b->offset);
    int64_t widest = 0;
    for (int c = 0; c < g->oc; c++) {
        bias[c] = fx_align(b24[c], cv->b->exp, e_acc);
        widest = bias[c] > widest ? bias[c] : -bias[c] > widest ? -bias[c] : widest;
    }
    const struct dnn_call c = {.g = *g,
                               .x = emu_i8_of(mem, cv->in),
                               .w = emu_i8_of(mem, cv->w),
                               .bias = bias,
                               .widest = widest,
                               .acc = emu_acc_of(mem, cv),
                               .e_acc = e_acc,
                               .out = cv->out};
    return onednn_or_own(e, mem, cv, &c, conv_fwd_own);
}

static enum fx_status conv_fwd_own(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                   const struct dnn_call *c)
{
    const struct fx_geom *g = &cv->g;
    const int64_t *bias = c->bias;
    const int64_t widest = c->widest;
    const int e_acc = c->e_acc;
    /* on AMX an implicit GEMM, whose B for s x s pixels at a time (space
     * to depth: few channels at a stride) has 64 rows per window row */
    struct emu_implicit im;
    int implicit = e->isa == EEB_EMU_ISA_AMX && !emu_implicit_conv_plan(g, &im);
    int k = implicit && im.s2d.s ? im.g.kh * 64 : g->kh * g->kw * g->ic;
    if (implicit && widest > EEB_EMU_GEMM_BIAS_MAX(k))
        implicit = 0, k = g->kh * g->kw * g->ic;
    const int wide = widest > EEB_EMU_GEMM_BIAS_MAX(k); /* the GEMM cannot add it in int32 */
    const int8_t *w8 = emu_i8_of(mem, cv->w);
    if (implicit && im.s2d.s) {
        int8_t *w2 = emu_grow(&e->s2d, emu_implicit_s2d_weights(&im, w8, NULL));
        if (!w2)
            return FX_NO_MEMORY;
        emu_implicit_s2d_weights(&im, w8, w2);
        w8 = w2;
    }
    struct blocks b = {0, 0, NULL};
    struct pack_job p = {
        .e = e, .g = g, .w8 = w8, .k = k, .n = g->oc, .bias = wide ? NULL : bias, .b = &b};
    struct rows_job j = {.e = e,
                         .g = g,
                         .fill = emu_direct(g) ? NULL : emu_im2col,
                         .src = emu_i8_of(mem, cv->in),
                         .k = k,
                         .n = g->oc,
                         .rows = (int64_t)g->n * g->oh * g->ow,
                         .b = &b,
                         .acc = emu_acc_of(mem, cv),
                         .wide_bias = wide ? bias : NULL};
    enum fx_status st = emu_pack_weights(e, &p);
    if (st == FX_OK)
        st = run_rows(e, mem, &j, implicit ? &im : NULL, 0, e_acc, cv->out);
    emu_free_blocks(&b);
    return st;
}

/* ---- backward data ---- */

/* Backward data at a stride, phase by phase (see struct phase), then
 * requantized as one tensor. */
static enum fx_status conv_bwd_data_phased(struct eeb_emu *e, uint8_t *mem,
                                           const struct fx_conv *cv, const struct phase *ph,
                                           int count)
{
    const struct fx_geom *g = &cv->g;
    uint64_t maxabs = 0;
    uint32_t sat = 0;
    for (int i = 0; i < count; i++) {
        struct rows_job j = {.e = e,
                             .g = g,
                             .src = emu_i8_of(mem, cv->out),
                             .k = ph[i].ntaps * g->oc,
                             .n = g->ic,
                             .rows = (int64_t)g->n * ph[i].ny * ph[i].nx,
                             .acc = emu_acc_of(mem, cv),
                             .ph = &ph[i]};
        struct blocks b = {0, 0, NULL};
        struct pack_job p = {.e = e,
                             .g = g,
                             .w8 = emu_i8_of(mem, cv->w),
                             .backward = 1,
                             .k = j.k,
                             .n = g->ic,
                             .ph = &ph[i],
                             .b = &b};
        j.b = &b;
        enum fx_status st = ph[i].ntaps ? emu_pack_weights(e, &p) : FX_OK; /* none: zeros */
        if (st == FX_OK && emu_gemm_rows(e, &j, &maxabs, &sat))
            st = FX_NO_MEMORY;
        emu_free_blocks(&b);
        if (st != FX_OK)
            return st;
    }
    cv->in->saturations += sat;
    emu_requantize(e, mem, emu_acc_of(mem, cv), (uint64_t)g->n * g->ih * g->iw * g->ic, maxabs,
                   cv->out->exp + cv->w->exp, fx_round_half_up(), cv->in);
    return FX_OK;
}

/* Backward data at stride 1 (square windows) is the convolution of dy,
 * padded by k - 1 - p, by W with its taps turned around: its geometry
 * into *dg, or 0 where the pass is no such convolution. */
static int bwd_as_conv(const struct fx_geom *g, struct fx_geom *dg)
{
    if (g->s != 1 || g->kh != g->kw || g->kh - 1 - g->p < 0)
        return 0;
    const struct fx_geom d = {g->n,  g->oh, g->ow, g->oc, g->ih,           g->iw,
                              g->ic, g->kh, g->kw, 1,     g->kh - 1 - g->p};
    *dg = d;
    return 1;
}

static enum fx_status conv_bwd_data_own(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv,
                                        const struct dnn_call *unused)
{
    (void)unused;
    const struct fx_geom *g = &cv->g;
    struct phase ph[64];
    int count = g->s > 1 && g->s * g->s <= 64 ? emu_phases(g, ph) : 0;
    if (count)
        return conv_bwd_data_phased(e, mem, cv, ph, count);
    int K = g->kh * g->kw * g->oc;
    struct blocks b = {0, 0, NULL};
    struct pack_job p = {
        .e = e, .g = g, .w8 = emu_i8_of(mem, cv->w), .backward = 1, .k = K, .n = g->ic, .b = &b};
    struct rows_job j = {.e = e,
                         .g = g,
                         .fill = emu_direct(g) ? NULL : emu_im2col_errors,
                         .src = emu_i8_of(mem, cv->out),
                         .k = K,
                         .n = g->ic,
                         .rows = (int64_t)g->n * g->ih * g->iw,
                         .b = &b,
                         .acc = emu_acc_of(mem, cv)};
    /* at stride 1 an implicit GEMM, W's rows of taps turned around
     * (im2col_errors' order) */
    struct fx_geom dg;
    struct emu_implicit im;
    const int implicit =
        e->isa == EEB_EMU_ISA_AMX && bwd_as_conv(g, &dg) && !emu_implicit_conv_plan(&dg, &im);
    enum fx_status st = emu_pack_weights(e, &p);
    if (st == FX_OK)
        st = run_rows(e, mem, &j, implicit ? &im : NULL, 1, cv->out->exp + cv->w->exp, cv->in);
    emu_free_blocks(&b);
    return st;
}

/* Backward data: where it is a convolution (bwd_as_conv), oneDNN can run
 * it too; at a stride, eeb's phases. */
enum fx_status emu_conv_bwd_data(struct eeb_emu *e, uint8_t *mem, const struct fx_conv *cv)
{
    struct fx_geom dg;
    if (e->onednn == EEB_EMU_ONEDNN_OFF || !bwd_as_conv(&cv->g, &dg))
        return conv_bwd_data_own(e, mem, cv, NULL);
    const struct dnn_call c = {.g = dg,
                               .x = emu_i8_of(mem, cv->out),
                               .w = emu_i8_of(mem, cv->w),
                               .backward = 1,
                               .acc = emu_acc_of(mem, cv),
                               .e_acc = cv->out->exp + cv->w->exp,
                               .out = cv->in};
    return onednn_or_own(e, mem, cv, &c, conv_bwd_data_own);
}
