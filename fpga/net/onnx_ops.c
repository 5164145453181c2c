/*
 * onnx_ops.c - the ONNX import's ops (onnx_read.c): one function per
 * operator eeb runs, each making the node's layers from its inputs and
 * attributes, and onnx_read_node choosing among them.
 */
#include "fpga/net/eeb_onnx.h"

#include "common/eeb_common.h"
#include "fpga/net/onnx_int.h"
#include "fpga/net/onnx_read_int.h"
#include "onnx/onnx.pb-c.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- one function per op ---- */

static int op_is(const Onnx__NodeProto *n, const char *op)
{
    return n->op_type && strcmp(n->op_type, op) == 0;
}

/* A builder's refusal, without its "layer N: " (a number the file has not). */
static int builder_error(struct reader *r)
{
    const char *e = r->net->err, *colon = strncmp(e, "layer ", 6) == 0 ? strstr(e, ": ") : NULL;
    return node_error(r, "%s", colon ? colon + 2 : e);
}

/* Defines the node's output j as layer l (or fails with the builder's reason);
 * direct: the value is the layer's own output, which folds may change. */
static int set_output(struct reader *r, size_t j, int l, int rank, struct eeb_shape chw)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    if (l < 0)
        return builder_error(r);
    if (j >= n->n_output || !n->output[j][0])
        return node_malformed(r, "it has no output %zu", j);
    return onnx_define_output(r, n->output[j],
                              (struct value){.layer = l, .direct = 1, .rank = rank, .chw = chw});
}

/* Another name for value v (Identity, Dropout, Flatten, a folded node). */
static int alias(struct reader *r, const struct value *v, int rank, struct eeb_shape chw)
{
    struct value a = *v;
    a.rank = rank, a.chw = chw, a.direct = 0;
    return onnx_define_output(r, onnx_node_at(r, r->node)->output[0], a);
}

/* Room for rows x out more weights, within MAX_PARAMS (an initializer
 * shared by many nodes is copied into each). */
int onnx_budget(struct reader *r, int64_t rows, int64_t out)
{
    r->params += (uint64_t)rows * (uint64_t)out;
    if (r->params > MAX_PARAMS)
        return node_error(r, "the network would pass %d weights", MAX_PARAMS);
    return EEB_OK;
}

/* Every weight and bias of layer l finite (after a fold or a scale). */
static int check_finite(struct reader *r, int l)
{
    const struct eeb_layer *ly = &r->net->layers[l];
    for (size_t i = 0; i < (size_t)ly->rows * ly->out.c; i++)
        if (!isfinite(ly->w[i]))
            return node_error(r, "weight %zu is not a finite number once folded", i);
    for (int i = 0; i < ly->out.c; i++)
        if (!isfinite(ly->b[i]))
            return node_error(r, "bias %d is not a finite number once folded", i);
    return EEB_OK;
}

static int op_conv(struct reader *r)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    struct value *x;
    const Onnx__TensorProto *wt, *bt = NULL;
    int rc = onnx_layer_input(r, 0, &x);
    if (!rc)
        rc = onnx_const_input(r, 1, &wt);
    if (!rc && n->n_input > 2 && n->input[2][0])
        rc = onnx_const_input(r, 2, &bt);
    if (!rc)
        rc = onnx_attr_must(r, "group", 1, 1, "eeb's convolutions take group 1");
    if (rc)
        return rc;
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    const int64_t *d = wt->dims;
    if (x->rank != 4 || wt->n_dims != 4 || d[1] != s.c || d[2] != d[3] || d[2] < 1 || d[2] > 7 ||
        d[0] < 1 || d[0] > EEB_NET_MAX_CH)
        return node_error(r,
                          "weights of dims [%lld, %lld, %lld, %lld] for a %dx%dx%d map: eeb "
                          "takes [out, %d, k, k], k at most 7",
                          wt->n_dims > 0 ? (long long)d[0] : -1,
                          wt->n_dims > 1 ? (long long)d[1] : -1,
                          wt->n_dims > 2 ? (long long)d[2] : -1,
                          wt->n_dims > 3 ? (long long)d[3] : -1, s.h, s.w, s.c, s.c);
    struct window win = {.k = (int)d[2]};
    if ((rc = onnx_read_window(r, &win, s)))
        return rc;
    if (win.k != d[2])
        return node_error(r, "kernel_shape %d does not match the weights' %lld", win.k,
                          (long long)d[2]);
    int out = (int)d[0], cin = s.c, k = win.k, rows = k * k * cin, l = -1;
    if ((rc = onnx_budget(r, rows, out)))
        return rc;
    float *w = NULL, *b = NULL;
    rc = onnx_tensor_floats(r, wt, (int64_t)out * rows, &w);
    if (!rc && bt)
        rc = onnx_tensor_floats(r, bt, out, &b);
    if (!rc && (l = eeb_net_conv(r->net, x->layer, out, k, win.stride, win.pad)) < 0)
        rc = builder_error(r);
    if (!rc) {
        struct eeb_layer *ly = &r->net->layers[l];
        for (int m = 0; m < out; m++)
            for (int c = 0; c < cin; c++)
                for (int t = 0; t < k * k; t++)
                    ly->w[onnx_conv_row(m, c, t, cin, out)] = w[((size_t)m * cin + c) * k * k + t];
        for (int m = 0; b && m < out; m++)
            ly->b[m] = b[m];
        rc = set_output(r, 0, l, 4, (struct eeb_shape){0, 0, 0});
    }
    free(w), free(b);
    return rc;
}

/* The input of a fold: value v is a conv's or fc's own output, read by
 * this node alone. */
static int foldable(const struct reader *r, const struct value *v, const char *text,
                    enum eeb_layer_kind kind)
{
    return v->layer >= 0 && v->direct && r->net->layers[v->layer].kind == kind &&
           onnx_readers_of(r, text) == 1;
}

/* y = (x - mean) / sqrt(var + eps) * scale + b, folded into the conv
 * before it: w' = w s, b' = (b - mean) s + B with s = scale / sqrt(var + eps). */
static int op_batchnorm(struct reader *r)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    struct value *x;
    int rc = onnx_layer_input(r, 0, &x);
    if (rc)
        return rc;
    if (!foldable(r, x, n->input[0], EEB_LAYER_CONV))
        return node_error(r, "eeb folds a BatchNormalization into the Conv just before it, whose "
                             "output it alone reads; this one follows something else");
    if (n->n_input != 5)
        return node_malformed(r, "it has %zu inputs, 5 expected", n->n_input);
    for (size_t j = 1; j < n->n_output; j++)
        if (n->output[j][0])
            return node_error(r, "output %zu (training statistics) is not among eeb's layers", j);
    float eps;
    if ((rc = onnx_attr_must(r, "training_mode", 0, 0,
                             "eeb folds a BatchNormalization in inference "
                             "mode (0)")) ||
        (rc = onnx_attr_float(r, "epsilon", 1e-5f, &eps)))
        return rc;
    struct eeb_layer *ly = &r->net->layers[x->layer];
    int out = ly->out.c;
    float *p[4] = {0};
    for (int j = 0; j < 4 && !rc; j++) {
        const Onnx__TensorProto *t;
        rc = onnx_const_input(r, (size_t)j + 1, &t);
        if (!rc)
            rc = onnx_tensor_floats(r, t, out, &p[j]);
    }
    for (int m = 0; !rc && m < out; m++) {
        double var = (double)p[3][m] + eps;
        if (!(var > 0)) {
            rc = node_error(r, "channel %d's variance plus epsilon is %g, not positive", m, var);
            break;
        }
        double s = p[0][m] / sqrt(var);
        for (int k = 0; k < ly->rows; k++)
            ly->w[(size_t)k * out + m] = (float)(ly->w[(size_t)k * out + m] * s);
        ly->b[m] = (float)((ly->b[m] - p[2][m]) * s + p[1][m]);
    }
    for (int j = 0; j < 4; j++)
        free(p[j]);
    if (!rc)
        rc = check_finite(r, x->layer);
    if (!rc) {
        r->rep->folded_bn++;
        rc = alias(r, x, 4, x->chw);
    }
    return rc;
}

/* Gemm (alpha A B' + beta C) and MatMul (A B), B a constant: fc.  A rank-2
 * input over a map (a Flatten's) reads it in ONNX's (c, h, w) order: the
 * rows are permuted to eeb's. */
static int op_fc(struct reader *r, int gemm)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    struct value *x;
    const Onnx__TensorProto *bt, *ct = NULL;
    int64_t trans = 0;
    float alpha = 1, beta = 1;
    int rc = onnx_layer_input(r, 0, &x);
    if (!rc)
        rc = onnx_const_input(r, 1, &bt);
    if (!rc && gemm && n->n_input > 2 && n->input[2][0])
        rc = onnx_const_input(r, 2, &ct);
    if (!rc && gemm)
        if ((rc = onnx_attr_must(r, "transA", 0, 0,
                                 "eeb multiplies the activations untransposed")) ||
            (rc = onnx_attr_int(r, "transB", 0, &trans)) ||
            (rc = onnx_attr_float(r, "alpha", 1, &alpha)) ||
            (rc = onnx_attr_float(r, "beta", 1, &beta)))
            return rc;
    if (rc)
        return rc;
    if (trans != 0 && trans != 1)
        return node_malformed(r, "transB %lld (0 or 1)", (long long)trans);
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    int64_t rows = (int64_t)s.h * s.w * s.c;
    if (x->rank != 2)
        return node_error(r, "its input is a %dx%dx%d map: a Flatten must come first", s.h, s.w,
                          s.c);
    const int64_t *d = bt->dims;
    if (bt->n_dims != 2 || d[trans ? 1 : 0] != rows || d[trans ? 0 : 1] < 1 ||
        d[trans ? 0 : 1] > EEB_NET_MAX_CH)
        return node_error(r, "weights of %zu dims for %lld inputs: [%s] expected", bt->n_dims,
                          (long long)rows, trans ? "out, in" : "in, out");
    int out = (int)d[trans ? 0 : 1], l = -1;
    if ((rc = onnx_budget(r, rows, out)))
        return rc;
    float *w = NULL, *c = NULL;
    int64_t cn = ct ? onnx_tensor_count(ct) : 0;
    rc = onnx_tensor_floats(r, bt, rows * out, &w);
    if (!rc && ct)
        rc = onnx_tensor_floats(r, ct, cn == 1 ? 1 : out, &c);
    if (!rc && (l = eeb_net_fc(r->net, x->layer, out)) < 0)
        rc = builder_error(r);
    if (!rc) {
        struct eeb_layer *ly = &r->net->layers[l];
        for (int64_t k = 0; k < rows; k++) {
            int64_t row = x->chw.c ? onnx_flat_row(k, x->chw) : k;
            for (int m = 0; m < out; m++)
                ly->w[row * out + m] = alpha * (trans ? w[(size_t)m * rows + k] : w[k * out + m]);
        }
        for (int m = 0; c && m < out; m++)
            ly->b[m] = beta * c[cn == 1 ? 0 : m];
        rc = check_finite(r, l);
    }
    if (!rc)
        rc = set_output(r, 0, l, 2, (struct eeb_shape){0, 0, 0});
    free(w), free(c);
    return rc;
}

static int op_pool(struct reader *r, enum eeb_layer_kind kind)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    struct value *x;
    int rc = onnx_layer_input(r, 0, &x);
    if (rc)
        return rc;
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    struct window win = {.k = 0};
    if (x->rank != 4)
        return node_error(r, "a pool of a flattened vector");
    if ((rc = onnx_read_window(r, &win, s)) ||
        (rc = onnx_attr_must(r, "storage_order", 0, 0, "eeb's maps are row-major (0)")))
        return rc;
    if (win.k < 1)
        return node_malformed(r, "a pool without kernel_shape");
    if (n->n_output > 1 && n->output[1][0])
        return node_error(r, "its second output (the indices) is not among eeb's layers");
    if (kind == EEB_LAYER_AVGPOOL && win.pad)
        return node_error(r, "a padded average pool is not among eeb's layers (pad 0)");
    int l = kind == EEB_LAYER_MAXPOOL
                ? eeb_net_maxpool(r->net, x->layer, win.k, win.stride, win.pad)
                : eeb_net_avgpool(r->net, x->layer, win.k, win.stride, win.pad);
    return set_output(r, 0, l, 4, (struct eeb_shape){0, 0, 0});
}

/* Flatten (axis 1) and Reshape to [batch, everything]: no layer of eeb's,
 * whose fc reads a map as it is; the value remembers the map, so that an
 * fc reading it in ONNX's order can be permuted. */
static int op_flatten(struct reader *r, int reshape)
{
    struct value *x;
    int rc = onnx_layer_input(r, 0, &x);
    if (rc)
        return rc;
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    int64_t all = (int64_t)s.h * s.w * s.c, axis, zero;
    if (reshape) {
        const Onnx__TensorProto *t;
        int64_t d[4];
        size_t nd = 0;
        if ((rc = onnx_const_input(r, 1, &t)) || (rc = onnx_tensor_ints(r, t, d, 4, &nd)) ||
            (rc = onnx_attr_int(r, "allowzero", 0, &zero)))
            return rc;
        if (nd != 2 || !((d[0] == 0 && !zero) || d[0] == -1 || d[0] == 1) ||
            !(d[1] == -1 || d[1] == all) || (d[0] == -1 && d[1] == -1))
            return node_error(r, "a reshape to other than [batch, %lld] is not among eeb's layers",
                              (long long)all);
    } else {
        if ((rc = onnx_attr_int(r, "axis", 1, &axis)))
            return rc;
        if (axis != 1 && axis != 1 - x->rank)
            return node_error(r, "axis %lld: eeb flattens at axis 1", (long long)axis);
    }
    struct eeb_shape chw = x->rank == 4 && s.h * s.w > 1 ? s : x->chw;
    return alias(r, x, 2, chw);
}

/* Slice of channels, from constant starts and ends along axis 1, step 1
 * (opset 10 on: inputs, not attributes). */
static int op_slice(struct reader *r)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    struct value *x;
    const Onnx__TensorProto *t;
    int64_t v[4][1] = {{0}, {0}, {1}, {1}}; /* starts, ends, axes, steps */
    size_t cnt;
    int rc = onnx_layer_input(r, 0, &x);
    if (rc)
        return rc;
    if (n->n_input < 3)
        return node_error(r, "a Slice with its bounds in attributes (before opset 10)");
    for (size_t j = 1; j < n->n_input && j < 5 && !rc; j++)
        if (n->input[j][0] && !(rc = onnx_const_input(r, j, &t)) &&
            !(rc = onnx_tensor_ints(r, t, v[j - 1], 1, &cnt)) && cnt != 1)
            rc = node_error(r, "input %zu: one value expected (one axis)", j);
    if (rc)
        return rc;
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    if (x->rank != 4 || !(v[2][0] == 1 || v[2][0] == -3) || v[3][0] != 1)
        return node_error(r, "eeb slices the channels of a map (axis 1), step 1");
    int64_t first = v[0][0] < 0 ? v[0][0] + s.c : v[0][0],
            end = v[1][0] < 0 ? v[1][0] + s.c : v[1][0];
    first = first < 0 ? 0 : first > s.c ? s.c : first;
    end = end < 0 ? 0 : end > s.c ? s.c : end;
    if (end <= first)
        return node_error(r, "an empty slice");
    return set_output(r, 0, eeb_net_slice(r->net, x->layer, (int)first, (int)(end - first)), 4,
                      (struct eeb_shape){0, 0, 0});
}

/* Add and Concat, over two or more maps; an Add of a constant to an fc's
 * own output is its bias (MatMul then Add: PyTorch's Linear in some
 * exports). */
static int op_join(struct reader *r, enum eeb_layer_kind kind)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    int rc;
    if (kind == EEB_LAYER_CONCAT) {
        int64_t axis;
        if ((rc = onnx_attr_int(r, "axis", 1, &axis)))
            return rc;
        if (axis != 1 && axis != -3)
            return node_error(r, "axis %lld: eeb concatenates the channels (1)", (long long)axis);
        if (n->n_input < 1)
            return node_malformed(r, "it has no input");
    } else if (n->n_input != 2)
        return node_malformed(r, "an add of %zu inputs (2 expected)", n->n_input);
    if (kind == EEB_LAYER_ADD) {
        struct value *a = onnx_find_value(r, n->input[0]), *b = onnx_find_value(r, n->input[1]);
        int ci = a && a->layer == CONST_VALUE ? 0 : b && b->layer == CONST_VALUE ? 1 : -1;
        struct value *fc = ci < 0 ? NULL : ci ? a : b;
        if (fc && fc->layer != CONST_VALUE && foldable(r, fc, n->input[1 - ci], EEB_LAYER_FC)) {
            struct eeb_layer *ly = &r->net->layers[fc->layer];
            const Onnx__TensorProto *t = (ci ? b : a)->t;
            float *c = NULL;
            if ((rc = onnx_tensor_floats(r, t, onnx_tensor_count(t) == 1 ? 1 : ly->out.c, &c)))
                return rc;
            for (int m = 0; m < ly->out.c; m++)
                ly->b[m] += c[onnx_tensor_count(t) == 1 ? 0 : m];
            free(c);
            return (rc = check_finite(r, fc->layer)) ? rc : alias(r, fc, fc->rank, fc->chw);
        }
    }
    struct value *a;
    if ((rc = onnx_layer_input(r, 0, &a)))
        return rc;
    int l = a->layer;
    for (size_t j = 1; j < n->n_input; j++) {
        struct value *b;
        if ((rc = onnx_layer_input(r, j, &b)))
            return rc;
        if (a->rank != 4 || b->rank != 4)
            return node_error(r, "eeb joins maps (N C H W), not flattened vectors");
        l = kind == EEB_LAYER_ADD ? eeb_net_add(r->net, l, b->layer)
                                  : eeb_net_concat(r->net, l, b->layer);
        if (l < 0)
            return builder_error(r);
    }
    return set_output(r, 0, l, 4, (struct eeb_shape){0, 0, 0});
}

/* Identity and Dropout: their output is their input (Dropout as
 * inference runs it; its mask unread).  PyTorch names initializers
 * through Identity. */
static int op_alias(struct reader *r)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    if (n->n_input < 1 || !n->input[0][0])
        return node_malformed(r, "input 0 is missing");
    const struct value *found = onnx_find_value(r, n->input[0]); /* a constant or not: passed on */
    struct value *x;
    int rc = onnx_node_input(r, 0, found && found->layer == CONST_VALUE, &x);
    if (rc)
        return rc;
    if (op_is(n, "Dropout") && n->n_output > 1 && n->output[1][0] &&
        onnx_readers_of(r, n->output[1]) != 0)
        return node_error(r, "its mask output is read: eeb runs Dropout as inference does");
    return alias(r, x, x->rank, x->chw);
}

/* A Softmax making the graph's output: eeb's softmax loss applies it. */
static int op_softmax(struct reader *r)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    if (onnx_readers_of(r, n->output[0]) != -1 || r->o->loss != EEB_LAYER_SOFTMAX_CE)
        return node_error(r, "a Softmax is among eeb's layers only as the graph's output, under "
                             "the softmax loss (which applies it)");
    return op_alias(r);
}

static int op_constant(struct reader *r)
{
    const Onnx__AttributeProto *a = onnx_attr(onnx_node_at(r, r->node), "value");
    if (!a || !a->t)
        return node_error(r, "a Constant without a tensor value is not read by eeb");
    return onnx_define_output(r, onnx_node_at(r, r->node)->output[0],
                              (struct value){.layer = CONST_VALUE, .t = a->t});
}

static int op_relu(struct reader *r)
{
    struct value *x;
    int rc = onnx_layer_input(r, 0, &x);
    return rc ? rc : set_output(r, 0, eeb_net_relu(r->net, x->layer), x->rank, x->chw);
}

static int op_gap(struct reader *r)
{
    struct value *x;
    int rc = onnx_layer_input(r, 0, &x);
    if (!rc && x->rank != 4)
        rc = node_error(r, "a global pool of a flattened vector");
    return rc ? rc
              : set_output(r, 0, eeb_net_gap(r->net, x->layer), 4, (struct eeb_shape){0, 0, 0});
}

static const char ops_eeb_runs[] = "Conv, Gemm, MatMul, Relu, MaxPool, AveragePool, "
                                   "GlobalAveragePool, Add, Concat, Flatten, Reshape, Slice, "
                                   "BatchNormalization after a Conv, Identity, Dropout, Constant "
                                   "and a final Softmax";

int onnx_read_node(struct reader *r)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    char dom[72];
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return node_error(r, "operator domain '%s': eeb runs the default domain's operators",
                          onnx_shown(n->domain, dom));
    if (n->n_output < 1 || !n->output[0][0])
        return node_malformed(r, "it has no output");
    if (op_is(n, "Conv"))
        return op_conv(r);
    if (op_is(n, "BatchNormalization"))
        return op_batchnorm(r);
    if (op_is(n, "Gemm") || op_is(n, "MatMul"))
        return op_fc(r, op_is(n, "Gemm"));
    if (op_is(n, "Relu"))
        return op_relu(r);
    if (op_is(n, "MaxPool"))
        return op_pool(r, EEB_LAYER_MAXPOOL);
    if (op_is(n, "AveragePool"))
        return op_pool(r, EEB_LAYER_AVGPOOL);
    if (op_is(n, "GlobalAveragePool"))
        return op_gap(r);
    if (op_is(n, "Add"))
        return op_join(r, EEB_LAYER_ADD);
    if (op_is(n, "Concat"))
        return op_join(r, EEB_LAYER_CONCAT);
    if (op_is(n, "Flatten") || op_is(n, "Reshape"))
        return op_flatten(r, op_is(n, "Reshape"));
    if (op_is(n, "Slice"))
        return op_slice(r);
    if (op_is(n, "Identity") || op_is(n, "Dropout"))
        return op_alias(r);
    if (op_is(n, "Softmax"))
        return op_softmax(r);
    if (op_is(n, "Constant"))
        return op_constant(r);
    return node_error(r, "eeb cannot run this operator; it runs %s", ops_eeb_runs);
}
