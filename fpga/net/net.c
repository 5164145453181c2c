/*
 * net.c - building networks (shape inference and checks), initializing
 * and converting their weights.
 */
#include "fpga/net/eeb_net.h"

#include "common/eeb_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {
    [EEB_LAYER_CONV] = "conv",
    [EEB_LAYER_FC] = "fc",
    [EEB_LAYER_RELU] = "relu",
    [EEB_LAYER_MAXPOOL] = "maxpool",
    [EEB_LAYER_AVGPOOL] = "avgpool",
    [EEB_LAYER_GAP] = "gap",
    [EEB_LAYER_ADD] = "add",
    [EEB_LAYER_CONCAT] = "concat",
    [EEB_LAYER_FLATTEN] = "flatten",
    [EEB_LAYER_SOFTMAX_CE] = "softmax_ce",
    [EEB_LAYER_GRID_LOSS] = "grid_loss",
    [EEB_LAYER_SLICE] = "slice",
};

const char *eeb_layer_kind_name(enum eeb_layer_kind kind)
{
    return (unsigned)kind < sizeof kind_names / sizeof kind_names[0] ? kind_names[kind] : "?";
}

int eeb_layer_learnable(const struct eeb_layer *l)
{
    return l->kind == EEB_LAYER_CONV || l->kind == EEB_LAYER_FC;
}

struct eeb_net *eeb_net_new(struct eeb_shape input)
{
    struct eeb_net *net = calloc(1, sizeof *net);
    if (net) {
        net->input = input;
        net->format = EEB_FORMAT_F32;
    }
    return net;
}

static void free_weights(struct eeb_layer *l)
{
    free(l->w), free(l->b), free(l->wq), free(l->bq);
    l->w = l->b = NULL;
    l->wq = l->bq = NULL;
}

void eeb_net_free(struct eeb_net *net)
{
    if (!net)
        return;
    for (int i = 0; i < net->nlayers; i++)
        free_weights(&net->layers[i]);
    free(net->layers);
    free(net);
}

__attribute__((format(printf, 2, 3))) static int fail(struct eeb_net *net, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(net->err, sizeof net->err, "layer %d: ", net->nlayers);
    va_start(ap, fmt);
    vsnprintf(net->err + n, sizeof net->err - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

struct eeb_shape eeb_net_shape(const struct eeb_net *net, int i)
{
    return i == EEB_NET_INPUT ? net->input : net->layers[i].out;
}

const struct eeb_layer *eeb_net_loss(const struct eeb_net *net)
{
    if (net->nlayers == 0)
        return NULL;
    const struct eeb_layer *l = &net->layers[net->nlayers - 1];
    return l->kind == EEB_LAYER_SOFTMAX_CE || l->kind == EEB_LAYER_GRID_LOSS ? l : NULL;
}

int eeb_net_classes(const struct eeb_net *net)
{
    const struct eeb_layer *l = eeb_net_loss(net);
    if (!l)
        return 0;
    return l->kind == EEB_LAYER_SOFTMAX_CE ? l->out.h * l->out.w * l->out.c : l->out.c - 5;
}

/* Checks the inputs and appends a layer of this kind; NULL on failure. */
static struct eeb_layer *append(struct eeb_net *net, enum eeb_layer_kind kind, int a, int b)
{
    if (eeb_net_loss(net)) {
        fail(net, "nothing may follow the loss layer");
        return NULL;
    }
    int ins[2] = {a, b};
    int two = kind == EEB_LAYER_ADD || kind == EEB_LAYER_CONCAT;
    if (a == EEB_NET_NONE || (two && b == EEB_NET_NONE)) {
        fail(net, "%s needs %s", eeb_layer_kind_name(kind), two ? "two inputs" : "an input");
        return NULL;
    }
    for (int j = 0; j < 2; j++)
        if (ins[j] != EEB_NET_NONE && (ins[j] < EEB_NET_INPUT || ins[j] >= net->nlayers)) {
            fail(net, "input %d is not an earlier layer", ins[j]);
            return NULL;
        }
    if (net->nlayers == net->cap) {
        int cap = net->cap ? 2 * net->cap : 16;
        struct eeb_layer *l = realloc(net->layers, (size_t)cap * sizeof *l);
        if (!l) {
            fail(net, "out of memory");
            return NULL;
        }
        net->layers = l, net->cap = cap;
    }
    struct eeb_layer *l = &net->layers[net->nlayers];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->in[0] = a, l->in[1] = b;
    l->out = eeb_net_shape(net, a);
    return l;
}

static int valid(const struct eeb_shape *s)
{
    return s->h >= 1 && s->w >= 1 && s->c >= 1 && s->h <= EEB_NET_MAX_DIM &&
           s->w <= EEB_NET_MAX_DIM && s->c <= EEB_NET_MAX_CH;
}

/* Finishes a layer whose out shape is set: checks it, allocates weights. */
static int commit(struct eeb_net *net, struct eeb_layer *l)
{
    if (!valid(&l->out))
        return fail(net, "%s output %dx%dx%d is out of range", eeb_layer_kind_name(l->kind),
                    l->out.h, l->out.w, l->out.c);
    if (eeb_layer_learnable(l)) {
        size_t n = (size_t)l->rows * (size_t)l->out.c;
        l->w = calloc(n, sizeof *l->w);
        l->wq = calloc(n, sizeof *l->wq);
        l->b = calloc((size_t)l->out.c, sizeof *l->b);
        l->bq = calloc((size_t)l->out.c, sizeof *l->bq);
        if (!l->w || !l->wq || !l->b || !l->bq) {
            free_weights(l);
            return fail(net, "out of memory");
        }
        l->we = l->be = eeb_fx_weight_exp(0);
    }
    return net->nlayers++;
}

/* Output side of a window of k with this stride and padding, or 0. */
static int window_out(int in, int k, int stride, int pad)
{
    if (k < 1 || stride < 1 || pad < 0 || in + 2 * pad < k)
        return 0;
    return (in + 2 * pad - k) / stride + 1;
}

int eeb_net_conv(struct eeb_net *net, int in, int out_c, int k, int stride, int pad)
{
    struct eeb_layer *l = append(net, EEB_LAYER_CONV, in, EEB_NET_NONE);
    if (!l)
        return -1;
    if (k != 1 && k != 3 && k != 5 && k != 7)
        return fail(net, "conv kernel %d (1, 3, 5 or 7)", k);
    if (stride < 1 || stride > 2 || pad < 0 || pad > k / 2)
        return fail(net, "conv stride %d pad %d (stride 1 or 2, pad at most k/2)", stride, pad);
    struct eeb_shape s = l->out;
    l->k = k, l->stride = stride, l->pad = pad;
    l->out.h = window_out(s.h, k, stride, pad);
    l->out.w = window_out(s.w, k, stride, pad);
    l->out.c = out_c;
    l->rows = k * k * s.c;
    return commit(net, l);
}

int eeb_net_fc(struct eeb_net *net, int in, int out)
{
    struct eeb_layer *l = append(net, EEB_LAYER_FC, in, EEB_NET_NONE);
    if (!l)
        return -1;
    long rows = (long)l->out.h * l->out.w * l->out.c;
    if (rows > EEB_NET_MAX_ROWS)
        return fail(net, "fc over %ld inputs (at most %d)", rows, EEB_NET_MAX_ROWS);
    l->rows = (int)rows;
    l->k = l->stride = 1;
    l->out.h = l->out.w = 1;
    l->out.c = out;
    return commit(net, l);
}

int eeb_net_relu(struct eeb_net *net, int in)
{
    struct eeb_layer *l = append(net, EEB_LAYER_RELU, in, EEB_NET_NONE);
    return l ? commit(net, l) : -1;
}

/* pad < k keeps an input in every window (ONNX asks it of pads), so a max
 * pool's result is always an input's value.  An average pool's padding
 * is refused: the kernel divides every window by k * k, and ONNX's
 * default leaves padding out of the count. */
static int pool(struct eeb_net *net, enum eeb_layer_kind kind, int in, int k, int stride, int pad)
{
    struct eeb_layer *l = append(net, kind, in, EEB_NET_NONE);
    if (!l)
        return -1;
    const char *name = eeb_layer_kind_name(kind);
    if (k < 1 || k > 255 || stride < 1 || stride > 255)
        return fail(net, "%s window %d stride %d (1..255 each)", name, k, stride);
    if (pad < 0 || pad >= k)
        return fail(net, "%s pad %d with a %dx%d window (0..%d: the pad must be below the window)",
                    name, pad, k, k, k - 1);
    if (kind == EEB_LAYER_AVGPOOL && pad != 0)
        return fail(net, "avgpool pad %d: an average pool takes no padding (pad 0)", pad);
    if (k > l->out.h + 2 * pad || k > l->out.w + 2 * pad)
        return fail(net, "%s window %d pad %d does not fit a %dx%d input", name, k, pad, l->out.h,
                    l->out.w);
    l->k = k, l->stride = stride, l->pad = pad;
    l->out.h = window_out(l->out.h, k, stride, pad);
    l->out.w = window_out(l->out.w, k, stride, pad);
    return commit(net, l);
}

int eeb_net_maxpool(struct eeb_net *net, int in, int k, int stride, int pad)
{
    return pool(net, EEB_LAYER_MAXPOOL, in, k, stride, pad);
}

int eeb_net_avgpool(struct eeb_net *net, int in, int k, int stride, int pad)
{
    return pool(net, EEB_LAYER_AVGPOOL, in, k, stride, pad);
}

int eeb_net_gap(struct eeb_net *net, int in)
{
    struct eeb_layer *l = append(net, EEB_LAYER_GAP, in, EEB_NET_NONE);
    if (!l)
        return -1;
    if (l->out.h > 255 || l->out.w > 255)
        return fail(net, "global pool over %dx%d (at most 255x255)", l->out.h, l->out.w);
    l->stride = 1;
    l->out.h = l->out.w = 1;
    return commit(net, l);
}

int eeb_net_add(struct eeb_net *net, int a, int b)
{
    struct eeb_layer *l = append(net, EEB_LAYER_ADD, a, b);
    if (!l)
        return -1;
    struct eeb_shape sb = eeb_net_shape(net, b);
    if (sb.h != l->out.h || sb.w != l->out.w || sb.c != l->out.c)
        return fail(net, "add of %dx%dx%d and %dx%dx%d", l->out.h, l->out.w, l->out.c, sb.h, sb.w,
                    sb.c);
    return commit(net, l);
}

int eeb_net_concat(struct eeb_net *net, int a, int b)
{
    struct eeb_layer *l = append(net, EEB_LAYER_CONCAT, a, b);
    if (!l)
        return -1;
    struct eeb_shape sb = eeb_net_shape(net, b);
    if (sb.h != l->out.h || sb.w != l->out.w)
        return fail(net, "concat of %dx%d and %dx%d", l->out.h, l->out.w, sb.h, sb.w);
    l->out.c += sb.c;
    return commit(net, l);
}

int eeb_net_slice(struct eeb_net *net, int in, int first, int count)
{
    struct eeb_layer *l = append(net, EEB_LAYER_SLICE, in, EEB_NET_NONE);
    if (!l)
        return -1;
    if (first < 0 || count < 1 || first > l->out.c - count)
        return fail(net, "slice of channels %d..%d from %d", first, first + count - 1, l->out.c);
    l->first = first;
    l->out.c = count;
    return commit(net, l);
}

int eeb_net_flatten(struct eeb_net *net, int in)
{
    struct eeb_layer *l = append(net, EEB_LAYER_FLATTEN, in, EEB_NET_NONE);
    if (!l)
        return -1;
    l->out.c *= l->out.h * l->out.w;
    l->out.h = l->out.w = 1;
    return commit(net, l);
}

int eeb_net_softmax_ce(struct eeb_net *net, int in)
{
    struct eeb_layer *l = append(net, EEB_LAYER_SOFTMAX_CE, in, EEB_NET_NONE);
    if (!l)
        return -1;
    if (l->out.h * l->out.w * l->out.c < 2)
        return fail(net, "softmax over fewer than 2 classes");
    return commit(net, l);
}

int eeb_net_grid_loss(struct eeb_net *net, int in)
{
    struct eeb_layer *l = append(net, EEB_LAYER_GRID_LOSS, in, EEB_NET_NONE);
    if (!l)
        return -1;
    if (l->out.c < 5 + 1)
        return fail(net, "grid loss needs 5 + classes channels per cell, got %d", l->out.c);
    return commit(net, l);
}

int eeb_net_append(struct eeb_net *net, const struct eeb_layer *spec)
{
    int in = spec->in[0];
    switch (spec->kind) {
    case EEB_LAYER_CONV:
        return eeb_net_conv(net, in, spec->out.c, spec->k, spec->stride, spec->pad);
    case EEB_LAYER_FC: return eeb_net_fc(net, in, spec->out.c);
    case EEB_LAYER_RELU: return eeb_net_relu(net, in);
    case EEB_LAYER_MAXPOOL: return eeb_net_maxpool(net, in, spec->k, spec->stride, spec->pad);
    case EEB_LAYER_AVGPOOL: return eeb_net_avgpool(net, in, spec->k, spec->stride, spec->pad);
    case EEB_LAYER_GAP: return eeb_net_gap(net, in);
    case EEB_LAYER_ADD: return eeb_net_add(net, in, spec->in[1]);
    case EEB_LAYER_CONCAT: return eeb_net_concat(net, in, spec->in[1]);
    case EEB_LAYER_FLATTEN: return eeb_net_flatten(net, in);
    case EEB_LAYER_SLICE: return eeb_net_slice(net, in, spec->first, spec->out.c);
    case EEB_LAYER_SOFTMAX_CE: return eeb_net_softmax_ce(net, in);
    case EEB_LAYER_GRID_LOSS: return eeb_net_grid_loss(net, in);
    case EEB_LAYER_KINDS: break;
    }
    return fail(net, "unknown layer kind %d", (int)spec->kind);
}

uint64_t eeb_net_macs(const struct eeb_net *net)
{
    uint64_t macs = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (eeb_layer_learnable(l))
            macs += (uint64_t)l->rows * l->out.c * l->out.h * l->out.w;
    }
    return macs;
}

uint64_t eeb_net_params(const struct eeb_net *net)
{
    uint64_t n = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (eeb_layer_learnable(l))
            n += (uint64_t)(l->rows + 1) * l->out.c;
    }
    return n;
}

/* A normal deviate from two uniforms (Box-Muller). */
static double normal(uint64_t *s)
{
    double u1 = ((double)(eeb_splitmix64(s) >> 11) + 1) / 9007199254740993.0;
    double u2 = (double)(eeb_splitmix64(s) >> 11) / 9007199254740992.0;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

/* He-normal weights for a learnable layer from the generator s, zero biases. */
static void init_layer(struct eeb_layer *l, uint64_t *s)
{
    double sd = sqrt(2.0 / l->rows);
    for (size_t j = 0; j < (size_t)l->rows * l->out.c; j++)
        l->w[j] = (float)(normal(s) * sd);
    memset(l->b, 0, (size_t)l->out.c * sizeof *l->b);
}

void eeb_net_init(struct eeb_net *net, uint64_t seed)
{
    uint64_t s = seed;
    for (int i = 0; i < net->nlayers; i++)
        if (eeb_layer_learnable(&net->layers[i]))
            init_layer(&net->layers[i], &s);
    net->format = EEB_FORMAT_F32;
}

int eeb_net_new_head(struct eeb_net *net, int outputs, uint64_t seed)
{
    struct eeb_layer *l = net->nlayers ? &net->layers[net->nlayers - 1] : NULL;
    if (!l || !eeb_layer_learnable(l))
        return fail(net, "a new head replaces a final conv or fc layer, not %s",
                    l ? eeb_layer_kind_name(l->kind) : "an empty network");
    if (outputs < 1 || outputs > EEB_NET_MAX_CH)
        return fail(net, "a head of %d outputs (1 to %d)", outputs, EEB_NET_MAX_CH);
    if (net->format != EEB_FORMAT_F32)
        eeb_net_to_float(net);
    struct eeb_layer fresh = *l;
    fresh.out.c = outputs;
    size_t n = (size_t)l->rows * (size_t)outputs;
    fresh.w = calloc(n, sizeof *fresh.w), fresh.wq = calloc(n, sizeof *fresh.wq);
    fresh.b = calloc((size_t)outputs, sizeof *fresh.b);
    fresh.bq = calloc((size_t)outputs, sizeof *fresh.bq);
    if (!fresh.w || !fresh.wq || !fresh.b || !fresh.bq) {
        free_weights(&fresh);
        return fail(net, "out of memory");
    }
    uint64_t s = seed;
    init_layer(&fresh, &s);
    fresh.we = fresh.be = eeb_fx_weight_exp(0);
    free_weights(l);
    *l = fresh;
    return net->nlayers - 1;
}

int eeb_fx_weight_exp(float max)
{
    if (!(max > 0))
        return -20; /* an all-zero tensor (fresh biases): range +-8 */
    int e;
    frexpf(max, &e); /* max = f * 2^e, f in [0.5, 1) */
    return e - 22;
}

static void tensor_to_fixed(const float *src, size_t n, int32_t *dst, int *exp)
{
    float max = 0;
    for (size_t i = 0; i < n; i++)
        max = fabsf(src[i]) > max ? fabsf(src[i]) : max;
    *exp = eeb_fx_weight_exp(max);
    for (size_t i = 0; i < n; i++) {
        double q = nearbyint(ldexp(src[i], -*exp));
        dst[i] = (int32_t)(q > 8388607 ? 8388607 : q < -8388607 ? -8388607 : q);
    }
}

void eeb_net_to_fixed(struct eeb_net *net)
{
    for (int i = 0; i < net->nlayers; i++) {
        struct eeb_layer *l = &net->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        tensor_to_fixed(l->w, (size_t)l->rows * l->out.c, l->wq, &l->we);
        tensor_to_fixed(l->b, (size_t)l->out.c, l->bq, &l->be);
    }
    net->format = EEB_FORMAT_FX24;
}

void eeb_net_to_float(struct eeb_net *net)
{
    for (int i = 0; i < net->nlayers; i++) {
        struct eeb_layer *l = &net->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        for (size_t j = 0; j < (size_t)l->rows * l->out.c; j++)
            l->w[j] = ldexpf((float)l->wq[j], l->we);
        for (int j = 0; j < l->out.c; j++)
            l->b[j] = ldexpf((float)l->bq[j], l->be);
    }
    net->format = EEB_FORMAT_F32;
}

void eeb_net_set_format(struct eeb_net *net, enum eeb_format format)
{
    if (format == net->format)
        return;
    if (format == EEB_FORMAT_FX24)
        eeb_net_to_fixed(net);
    else
        eeb_net_to_float(net);
}

struct eeb_net *eeb_net_clone(const struct eeb_net *net)
{
    struct eeb_net *c = eeb_net_new(net->input);
    if (!c)
        return NULL;
    c->format = net->format;
    c->layers = calloc((size_t)(net->nlayers ? net->nlayers : 1), sizeof *c->layers);
    if (!c->layers)
        goto fail;
    c->cap = net->nlayers;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        struct eeb_layer *d = &c->layers[i];
        *d = *l;
        d->w = d->b = NULL;
        d->wq = d->bq = NULL;
        c->nlayers = i + 1;
        if (!eeb_layer_learnable(l))
            continue;
        size_t n = (size_t)l->rows * l->out.c, m = (size_t)l->out.c;
        d->w = malloc(n * sizeof *d->w), d->wq = malloc(n * sizeof *d->wq);
        d->b = malloc(m * sizeof *d->b), d->bq = malloc(m * sizeof *d->bq);
        if (!d->w || !d->wq || !d->b || !d->bq)
            goto fail;
        memcpy(d->w, l->w, n * sizeof *d->w), memcpy(d->wq, l->wq, n * sizeof *d->wq);
        memcpy(d->b, l->b, m * sizeof *d->b), memcpy(d->bq, l->bq, m * sizeof *d->bq);
    }
    return c;
fail:
    eeb_net_free(c);
    return NULL;
}
