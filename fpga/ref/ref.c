/*
 * ref.c - the float32 reference trainer (eeb_ref.h).
 *
 * Convolutions are im2col + sgemm per batch item (darknet's scheme):
 *   forward          Y   = col(X) W + b
 *   backward data    dX  = col2im(dY W^T)
 *   backward weight  dW += col(X)^T dY,  db += column sums of dY
 * Errors reaching a layer output from several readers add up (each
 * backward adds into its input's error, zeroed before the pass).  A
 * flatten layer shares its input's activations and errors.
 */
#include "eeb_ref.h"
#include "ref_int.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct state {
    float *act, *err; /* batch_max x out (shared with the input for flatten) */
    float *dw, *db;   /* learnable: gradients */
    float *vw, *vb;   /* learnable: momentum */
    int owns, trained, need_err;
};

struct eeb_ref {
    struct eeb_net *net;
    int batch_max, n;
    double lr, momentum, decay;
    float *input; /* batch_max x input */
    struct state *s;
    float *col; /* im2col of one item */
    float *dcol;
    int portable;      /* eeb_ref_gemm_portable, not OpenBLAS */
    int out_of_memory; /* a portable GEMM could not allocate */
};

/* C = beta C + op(A) op(B), by OpenBLAS or in the portable order. */
static void gemm(struct eeb_ref *r, int ta, int tb, int m, int n, int k, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc)
{
    if (r->portable) {
        if (eeb_ref_gemm_portable(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc))
            r->out_of_memory = 1;
        return;
    }
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void eeb_ref_set_portable(struct eeb_ref *r, int on)
{
    r->portable = on != 0;
}

int eeb_ref_out_of_memory(const struct eeb_ref *r)
{
    return r->out_of_memory;
}

static size_t size_of(struct eeb_shape s)
{
    return (size_t)s.h * s.w * s.c;
}

void eeb_ref_free(struct eeb_ref *r)
{
    if (!r)
        return;
    for (int i = 0; r->s && i < r->net->nlayers; i++) {
        struct state *s = &r->s[i];
        if (s->owns)
            free(s->act), free(s->err);
        free(s->dw), free(s->db), free(s->vw), free(s->vb);
    }
    free(r->s), free(r->input), free(r->col), free(r->dcol);
    eeb_net_free(r->net);
    free(r);
}

struct eeb_ref *eeb_ref_new(const struct eeb_net *net, int batch_max, int frozen, char *err,
                            size_t errlen)
{
    if (!eeb_net_loss(net)) {
        snprintf(err, errlen, "the network does not end in a loss layer");
        return NULL;
    }
    struct eeb_ref *r = calloc(1, sizeof *r);
    if (!r || !(r->net = eeb_net_clone(net)))
        goto oom;
    if (r->net->format != EEB_FORMAT_F32)
        eeb_net_to_float(r->net);
    r->batch_max = batch_max;
    r->lr = 0.01, r->momentum = 0.9, r->decay = 5e-4;
    size_t B = (size_t)batch_max, cols = 0;
    r->input = malloc(B * size_of(net->input) * sizeof(float));
    r->s = calloc((size_t)net->nlayers, sizeof *r->s);
    if (!r->input || !r->s)
        goto oom;
    int learnable = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        struct state *s = &r->s[i];
        if (l->kind == EEB_LAYER_FLATTEN) {
            if (l->in[0] == EEB_NET_INPUT) {
                s->act = r->input, s->err = NULL;
            } else {
                s->act = r->s[l->in[0]].act, s->err = r->s[l->in[0]].err;
            }
        } else {
            s->owns = 1;
            s->act = malloc(B * size_of(l->out) * sizeof(float));
            s->err = malloc(B * size_of(l->out) * sizeof(float));
            if (!s->act || !s->err)
                goto oom;
        }
        if (eeb_layer_learnable(l)) {
            size_t nw = (size_t)l->rows * l->out.c;
            s->trained = learnable++ >= frozen;
            s->dw = calloc(nw, sizeof(float)), s->vw = calloc(nw, sizeof(float));
            s->db = calloc((size_t)l->out.c, sizeof(float));
            s->vb = calloc((size_t)l->out.c, sizeof(float));
            if (!s->dw || !s->vw || !s->db || !s->vb)
                goto oom;
            size_t c = size_of(l->out) / (size_t)l->out.c * (size_t)l->rows;
            cols = c > cols ? c : cols;
        }
        s->need_err = s->trained;
        for (int j = 0; j < 2; j++)
            if (l->in[j] >= 0 && r->s[l->in[j]].need_err)
                s->need_err = 1;
    }
    if (frozen < 0 || frozen > learnable) {
        snprintf(err, errlen, "%d frozen layers, but the network has %d learnable ones", frozen,
                 learnable);
        eeb_ref_free(r);
        return NULL;
    }
    r->col = malloc((cols ? cols : 1) * sizeof(float));
    r->dcol = malloc((cols ? cols : 1) * sizeof(float));
    if (!r->col || !r->dcol)
        goto oom;
    return r;
oom:
    snprintf(err, errlen, "out of memory");
    eeb_ref_free(r);
    return NULL;
}

void eeb_ref_set_hyper(struct eeb_ref *r, double lr, double momentum, double weight_decay)
{
    r->lr = lr, r->momentum = momentum, r->decay = weight_decay;
}

struct eeb_net *eeb_ref_net(struct eeb_ref *r)
{
    return r->net;
}

const float *eeb_ref_grad_w(const struct eeb_ref *r, int layer)
{
    return r->s[layer].dw;
}

const float *eeb_ref_grad_b(const struct eeb_ref *r, int layer)
{
    return r->s[layer].db;
}

static const float *act_in(const struct eeb_ref *r, int i)
{
    return i == EEB_NET_INPUT ? r->input : r->s[i].act;
}

const float *eeb_ref_output(const struct eeb_ref *r)
{
    return act_in(r, eeb_net_loss(r->net)->in[0]);
}

int eeb_ref_outputs(const struct eeb_ref *r)
{
    return (int)size_of(eeb_net_shape(r->net, eeb_net_loss(r->net)->in[0]));
}

/* ---- convolution ---- */

struct cgeom {
    int ih, iw, ic, oh, ow, oc, k, s, p, rows;
};

static struct cgeom cgeom_of(const struct eeb_net *net, const struct eeb_layer *l)
{
    struct eeb_shape in = eeb_net_shape(net, l->in[0]);
    struct cgeom g = {in.h,     in.w, in.c,      l->out.h, l->out.w,
                      l->out.c, l->k, l->stride, l->pad,   l->rows};
    if (l->kind == EEB_LAYER_FC) { /* one row of the flattened input */
        g.ih = g.iw = g.oh = g.ow = g.k = g.s = 1;
        g.p = 0;
        g.ic = l->rows;
    }
    return g;
}

static void im2col(const float *x, const struct cgeom *g, float *col)
{
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++)
            for (int ky = 0; ky < g->k; ky++)
                for (int kx = 0; kx < g->k; kx++, col += g->ic) {
                    int iy = oy * g->s - g->p + ky, ix = ox * g->s - g->p + kx;
                    if (iy < 0 || ix < 0 || iy >= g->ih || ix >= g->iw)
                        memset(col, 0, (size_t)g->ic * sizeof *col);
                    else
                        memcpy(col, x + ((size_t)iy * g->iw + ix) * g->ic,
                               (size_t)g->ic * sizeof *col);
                }
}

static void col2im_add(const float *col, const struct cgeom *g, float *dx)
{
    for (int oy = 0; oy < g->oh; oy++)
        for (int ox = 0; ox < g->ow; ox++)
            for (int ky = 0; ky < g->k; ky++)
                for (int kx = 0; kx < g->k; kx++, col += g->ic) {
                    int iy = oy * g->s - g->p + ky, ix = ox * g->s - g->p + kx;
                    if (iy < 0 || ix < 0 || iy >= g->ih || ix >= g->iw)
                        continue;
                    float *d = dx + ((size_t)iy * g->iw + ix) * g->ic;
                    for (int c = 0; c < g->ic; c++)
                        d[c] += col[c];
                }
}

static int is_direct(const struct cgeom *g)
{
    return g->k == 1 && g->s == 1 && g->p == 0;
}

static void conv_forward(struct eeb_ref *r, const struct eeb_layer *l, struct state *s)
{
    struct cgeom g = cgeom_of(r->net, l);
    const float *x = act_in(r, l->in[0]);
    int pixels = g.oh * g.ow;
    size_t in_item = (size_t)g.ih * g.iw * g.ic, out_item = (size_t)pixels * g.oc;
    if (is_direct(&g)) { /* the whole batch is one GEMM */
        for (int n = 0; n < r->n * pixels; n++)
            memcpy(s->act + (size_t)n * g.oc, l->b, (size_t)g.oc * sizeof(float));
        gemm(r, 0, 0, r->n * pixels, g.oc, g.rows, x, g.rows, l->w, g.oc, 1.0f, s->act, g.oc);
        return;
    }
    for (int n = 0; n < r->n; n++) {
        float *y = s->act + n * out_item;
        im2col(x + n * in_item, &g, r->col);
        for (int p = 0; p < pixels; p++)
            memcpy(y + (size_t)p * g.oc, l->b, (size_t)g.oc * sizeof(float));
        gemm(r, 0, 0, pixels, g.oc, g.rows, r->col, g.rows, l->w, g.oc, 1.0f, y, g.oc);
    }
}

static void conv_backward(struct eeb_ref *r, const struct eeb_layer *l, struct state *s)
{
    struct cgeom g = cgeom_of(r->net, l);
    const float *x = act_in(r, l->in[0]);
    float *dx = l->in[0] >= 0 && r->s[l->in[0]].need_err ? r->s[l->in[0]].err : NULL;
    int pixels = g.oh * g.ow;
    size_t in_item = (size_t)g.ih * g.iw * g.ic, out_item = (size_t)pixels * g.oc;
    if (s->trained) {
        memset(s->db, 0, (size_t)g.oc * sizeof(float));
        for (size_t i = 0; i < (size_t)r->n * pixels; i++)
            for (int c = 0; c < g.oc; c++)
                s->db[c] += s->err[i * g.oc + c];
    }
    if (is_direct(&g)) {
        int m = r->n * pixels;
        if (s->trained)
            gemm(r, 1, 0, g.rows, g.oc, m, x, g.rows, s->err, g.oc, 0.0f, s->dw, g.oc);
        if (dx)
            gemm(r, 0, 1, m, g.rows, g.oc, s->err, g.oc, l->w, g.oc, 1.0f, dx, g.rows);
        return;
    }
    for (int n = 0; n < r->n; n++) {
        const float *dy = s->err + n * out_item;
        if (s->trained) {
            im2col(x + n * in_item, &g, r->col);
            gemm(r, 1, 0, g.rows, g.oc, pixels, r->col, g.rows, dy, g.oc, n ? 1.0f : 0.0f, s->dw,
                 g.oc);
        }
        if (dx) {
            gemm(r, 0, 1, pixels, g.rows, g.oc, dy, g.oc, l->w, g.oc, 0.0f, r->dcol, g.rows);
            col2im_add(r->dcol, &g, dx + n * in_item);
        }
    }
}

/* ---- pools and element-wise ---- */

struct pgeom {
    int ih, iw, c, oh, ow, kh, kw, s, p; /* p: max pools only (below kh, kw) */
};

static struct pgeom pgeom_of(const struct eeb_net *net, const struct eeb_layer *l)
{
    struct eeb_shape in = eeb_net_shape(net, l->in[0]);
    struct pgeom g = {in.h, in.w, in.c, l->out.h, l->out.w, l->k, l->k, l->stride, l->pad};
    if (l->kind == EEB_LAYER_GAP)
        g.kh = in.h, g.kw = in.w, g.s = 1, g.p = 0;
    return g;
}

#define AT(n, y, x, h, w, c, ch) ((((size_t)(n) * (h) + (y)) * (w) + (x)) * (c) + (ch))

static void pool(struct eeb_ref *r, const struct eeb_layer *l, struct state *s, int backward)
{
    struct pgeom g = pgeom_of(r->net, l);
    const float *x = act_in(r, l->in[0]);
    float *dx = l->in[0] >= 0 && r->s[l->in[0]].need_err ? r->s[l->in[0]].err : NULL;
    if (backward && !dx)
        return;
    int is_max = l->kind == EEB_LAYER_MAXPOOL;
    float inv = 1.0f / (float)(g.kh * g.kw);
    for (int n = 0; n < r->n; n++)
        for (int oy = 0; oy < g.oh; oy++)
            for (int ox = 0; ox < g.ow; ox++)
                for (int c = 0; c < g.c; c++) {
                    size_t o = AT(n, oy, ox, g.oh, g.ow, g.c, c);
                    size_t best = (size_t)-1; /* padding never wins; some input is there */
                    float sum = 0;
                    for (int ky = 0; ky < g.kh; ky++)
                        for (int kx = 0; kx < g.kw; kx++) {
                            int iy = oy * g.s - g.p + ky, ix = ox * g.s - g.p + kx;
                            if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw)
                                continue;
                            size_t i = AT(n, iy, ix, g.ih, g.iw, g.c, c);
                            if (backward && !is_max)
                                dx[i] += s->err[o] * inv;
                            if (best == (size_t)-1 || x[i] > x[best])
                                best = i;
                            sum += x[i];
                        }
                    if (backward && is_max)
                        dx[best] += s->err[o];
                    else if (!backward)
                        s->act[o] = is_max ? x[best] : sum * inv;
                }
}

/* Error into input j of layer l (or NULL when none is needed). */
static float *err_in(struct eeb_ref *r, const struct eeb_layer *l, int j)
{
    int in = l->in[j];
    return in >= 0 && r->s[in].need_err ? r->s[in].err : NULL;
}

static void elementwise(struct eeb_ref *r, const struct eeb_layer *l, struct state *s, int backward)
{
    size_t count = (size_t)r->n * size_of(l->out);
    const float *a = act_in(r, l->in[0]);
    float *da = err_in(r, l, 0);
    if (l->kind == EEB_LAYER_RELU) {
        for (size_t i = 0; i < count; i++)
            if (!backward)
                s->act[i] = a[i] > 0 ? a[i] : 0;
            else if (da && s->act[i] > 0)
                da[i] += s->err[i];
    } else if (l->kind == EEB_LAYER_ADD) {
        const float *b = act_in(r, l->in[1]);
        float *db = err_in(r, l, 1);
        for (size_t i = 0; i < count; i++) {
            if (!backward)
                s->act[i] = a[i] + b[i];
            if (backward && da)
                da[i] += s->err[i];
            if (backward && db)
                db[i] += s->err[i];
        }
    } else if (l->kind == EEB_LAYER_SLICE) {
        int xc = eeb_net_shape(r->net, l->in[0]).c;
        size_t pixels = count / (size_t)l->out.c;
        for (size_t p = 0; p < pixels; p++)
            for (int j = 0; j < l->out.c; j++)
                if (!backward)
                    s->act[p * l->out.c + j] = a[p * xc + l->first + j];
                else if (da)
                    da[p * xc + l->first + j] += s->err[p * l->out.c + j];
    } else if (l->kind == EEB_LAYER_CONCAT) {
        const float *b = act_in(r, l->in[1]);
        float *db = err_in(r, l, 1);
        int ca = eeb_net_shape(r->net, l->in[0]).c, cb = l->out.c - ca;
        size_t pixels = count / (size_t)l->out.c;
        for (size_t p = 0; p < pixels; p++) {
            float *y = s->act + p * l->out.c, *dy = s->err + p * l->out.c;
            for (int j = 0; j < ca; j++)
                if (!backward)
                    y[j] = a[p * ca + j];
                else if (da)
                    da[p * ca + j] += dy[j];
            for (int j = 0; j < cb; j++)
                if (!backward)
                    y[ca + j] = b[p * cb + j];
                else if (db)
                    db[p * cb + j] += dy[ca + j];
        }
    }
}

/* One layer's forward or backward pass.  Flatten shares its input and
 * the losses are computed apart, so neither has one here. */
static void layer_pass(struct eeb_ref *r, const struct eeb_layer *l, struct state *s, int backward)
{
    switch (l->kind) {
    case EEB_LAYER_CONV:
    case EEB_LAYER_FC:
        if (backward)
            conv_backward(r, l, s);
        else
            conv_forward(r, l, s);
        break;
    case EEB_LAYER_MAXPOOL:
    case EEB_LAYER_AVGPOOL:
    case EEB_LAYER_GAP: pool(r, l, s, backward); break;
    case EEB_LAYER_RELU:
    case EEB_LAYER_ADD:
    case EEB_LAYER_CONCAT:
    case EEB_LAYER_SLICE: elementwise(r, l, s, backward); break;
    default: break;
    }
}

void eeb_ref_forward(struct eeb_ref *r, const uint8_t *pixels, int n)
{
    r->n = n;
    size_t count = (size_t)n * size_of(r->net->input);
    for (size_t i = 0; i < count; i++)
        r->input[i] = (float)(pixels[i] ? pixels[i] - 128 : -127) / 128.0f;
    for (int i = 0; i < r->net->nlayers; i++)
        layer_pass(r, &r->net->layers[i], &r->s[i], 0);
}

/* ---- losses ---- */

/* Softmax of z[0..n) into p; returns the arg max (first). */
/* A probability kept off zero for the log; NaN stays NaN, so a diverged
 * network shows in its loss. */
static double floor_p(double p)
{
    return p < 1e-30 ? 1e-30 : p;
}

static int softmax(const float *z, int n, double *p)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (z[j] > z[best])
            best = j;
    double sum = 0;
    for (int j = 0; j < n; j++)
        sum += p[j] = exp((double)z[j] - z[best]);
    for (int j = 0; j < n; j++)
        p[j] /= sum;
    return best;
}

static double softmax_ce(struct eeb_ref *r, const float *x, float *dx, int classes,
                         const int32_t *labels, int *correct)
{
    double loss = 0, *p = malloc((size_t)classes * sizeof *p);
    if (!p)
        return NAN;
    for (int n = 0; n < r->n; n++) {
        int y = labels[n];
        *correct += softmax(x + (size_t)n * classes, classes, p) == y;
        loss -= log(floor_p(p[y]));
        for (int j = 0; dx && j < classes; j++)
            dx[(size_t)n * classes + j] = (float)((p[j] - (j == y)) / r->n);
    }
    free(p);
    return loss / r->n;
}

static double grid_loss(struct eeb_ref *r, const float *x, float *dx, struct eeb_shape s,
                        const int32_t *tg, int *correct)
{
    int classes = s.c - 5;
    double loss = 0, *p = malloc((size_t)classes * sizeof *p);
    if (!p)
        return NAN;
    size_t cells = (size_t)r->n * s.h * s.w;
    for (size_t cell = 0; cell < cells; cell++) {
        const float *z = x + cell * s.c;
        const int32_t *t = tg + cell * 6;
        float *g = dx ? dx + cell * s.c : NULL;
        int obj = t[0] != 0;
        double sig = 1 / (1 + exp(-(double)z[0]));
        loss += obj ? -log(floor_p(sig)) : -log(floor_p(1 - sig)) / 2;
        if (g)
            g[0] = (float)((obj ? sig - 1 : sig / 2) / r->n);
        for (int k = 1; k < 5; k++) {
            double d = obj ? z[k] - t[1 + k] / 65536.0 : 0;
            loss += fabs(d) <= 1 ? d * d : 2 * fabs(d) - 1;
            d = d > 1 ? 1 : d < -1 ? -1 : d;
            if (g)
                g[k] = (float)(2 * d / r->n);
        }
        if (obj)
            *correct += softmax(z + 5, classes, p) == t[1];
        for (int j = 0; j < classes; j++) {
            double d = obj ? p[j] - (j == t[1]) : 0;
            if (obj && j == t[1])
                loss -= log(floor_p(p[j]));
            if (g)
                g[5 + j] = (float)(d / r->n);
        }
    }
    free(p);
    return loss / r->n;
}

double eeb_ref_loss(struct eeb_ref *r, const int32_t *labels, int n, int backward, int *correct)
{
    const struct eeb_layer *loss = eeb_net_loss(r->net);
    int in = loss->in[0];
    struct eeb_shape s = eeb_net_shape(r->net, in);
    const float *x = act_in(r, in);
    float *dx = backward && in >= 0 && r->s[in].need_err ? r->s[in].err : NULL;
    int ok = 0;
    r->n = n;
    if (backward)
        for (int i = 0; i < r->net->nlayers; i++)
            if (r->s[i].owns && r->s[i].need_err)
                memset(r->s[i].err, 0, (size_t)n * size_of(r->net->layers[i].out) * sizeof(float));
    double v = loss->kind == EEB_LAYER_SOFTMAX_CE
                   ? softmax_ce(r, x, dx, (int)size_of(s), labels, &ok)
                   : grid_loss(r, x, dx, s, labels, &ok);
    if (correct)
        *correct = ok;
    if (!backward)
        return v;
    for (int i = r->net->nlayers - 2; i >= 0; i--)
        if (r->s[i].need_err)
            layer_pass(r, &r->net->layers[i], &r->s[i], 1);
    return v;
}

void eeb_ref_update(struct eeb_ref *r)
{
    float lr = (float)r->lr, mom = (float)r->momentum, decay = (float)r->decay;
    for (int i = 0; i < r->net->nlayers; i++) {
        struct eeb_layer *l = &r->net->layers[i];
        struct state *s = &r->s[i];
        if (!s->trained)
            continue;
        for (size_t j = 0; j < (size_t)l->rows * l->out.c; j++) {
            s->vw[j] = mom * s->vw[j] + lr * (s->dw[j] + decay * l->w[j]);
            l->w[j] -= s->vw[j];
        }
        for (int j = 0; j < l->out.c; j++) {
            s->vb[j] = mom * s->vb[j] + lr * s->db[j];
            l->b[j] -= s->vb[j];
        }
    }
}
