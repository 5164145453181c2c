/*
 * onnx_write.c - a network as an ONNX model (opset 13), so that a model
 * fine-tuned on eeb can be run and checked by any ONNX runtime.  Each
 * layer is one node (an fc over a map is a Flatten and a Gemm); the loss
 * layer is left out: the output is what it reads.  The protobuf-c
 * messages are built in an arena and packed once.
 */
#include "fpga/net/eeb_onnx.h"

#include "common/eeb_common.h"
#include "fpga/net/onnx_int.h"
#include "onnx/onnx.pb-c.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPSET      13
#define IR_VERSION 7 /* the IR of opset 13 */

/* Every allocation of one export, freed together. */
struct arena {
    void **p;
    size_t n, cap;
    int oom;
};

static void *alloc(struct arena *a, size_t bytes)
{
    if (a->oom)
        return NULL;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 256;
        void **np = realloc(a->p, cap * sizeof *np);
        if (!np) {
            a->oom = 1;
            return NULL;
        }
        a->p = np, a->cap = cap;
    }
    void *m = calloc(1, bytes ? bytes : 1);
    if (!m) {
        a->oom = 1;
        return NULL;
    }
    a->p[a->n++] = m;
    return m;
}

__attribute__((format(printf, 2, 3))) static char *text(struct arena *a, const char *fmt, ...)
{
    char buf[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char *s = alloc(a, strlen(buf) + 1);
    if (s)
        strcpy(s, buf);
    return s;
}

struct writer {
    struct arena a;
    const struct eeb_net *net;
    Onnx__GraphProto *g;
    size_t node_cap, init_cap;
};

/* Appends p to a growing array of pointers (a graph's nodes, initializers). */
static int push(struct arena *a, void ***arr, size_t *n, size_t *cap, void *p)
{
    if (!p)
        return -1;
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        void **na = alloc(a, nc * sizeof *na);
        if (!na)
            return -1;
        if (*n)
            memcpy(na, *arr, *n * sizeof *na);
        *arr = na, *cap = nc;
    }
    (*arr)[(*n)++] = p;
    return 0;
}

static Onnx__NodeProto *node(struct writer *w, const char *op, const char *out, const char *in0,
                             const char *in1, const char *in2, const char *in3)
{
    Onnx__NodeProto *n = alloc(&w->a, sizeof *n);
    const char *ins[4] = {in0, in1, in2, in3};
    char **in = alloc(&w->a, 4 * sizeof *in), **outs = alloc(&w->a, sizeof *outs);
    if (!n || !in || !outs)
        return NULL;
    onnx__node_proto__init(n);
    for (int i = 0; i < 4 && ins[i]; i++)
        in[n->n_input++] = (char *)ins[i];
    n->input = in;
    outs[0] = (char *)out;
    n->output = outs, n->n_output = 1;
    n->op_type = (char *)op;
    n->name = (char *)out;
    if (push(&w->a, (void ***)&w->g->node, &w->g->n_node, &w->node_cap, n))
        return NULL;
    return n;
}

/* An attribute of count copies of v (count 0: the single int v). */
static int attr_ints(struct writer *w, Onnx__NodeProto *n, const char *name, int64_t v,
                     size_t count)
{
    Onnx__AttributeProto *a = alloc(&w->a, sizeof *a);
    Onnx__AttributeProto **list = alloc(&w->a, (n->n_attribute + 1) * sizeof *list);
    int64_t *ints = alloc(&w->a, (count ? count : 1) * sizeof *ints);
    if (!a || !list || !ints)
        return -1;
    onnx__attribute_proto__init(a);
    a->name = (char *)name;
    a->has_type = 1;
    if (count) {
        for (size_t i = 0; i < count; i++)
            ints[i] = v;
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        a->ints = ints, a->n_ints = count;
    } else {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->has_i = 1, a->i = v;
    }
    if (n->n_attribute)
        memcpy(list, n->attribute, n->n_attribute * sizeof *list);
    list[n->n_attribute++] = a;
    n->attribute = list;
    return 0;
}

static int window_attrs(struct writer *w, Onnx__NodeProto *n, const struct eeb_layer *l)
{
    if (!n)
        return -1;
    return attr_ints(w, n, "kernel_shape", l->k, 2) || attr_ints(w, n, "strides", l->stride, 2) ||
           attr_ints(w, n, "pads", l->pad, 4);
}

/* An initializer: float data (taken over, arena-owned) or int64s. */
static int initializer(struct writer *w, const char *name, const int64_t *dims, size_t ndims,
                       float *f, const int64_t *ints)
{
    Onnx__TensorProto *t = alloc(&w->a, sizeof *t);
    int64_t *d = alloc(&w->a, ndims * sizeof *d);
    if (!t || !d)
        return -1;
    onnx__tensor_proto__init(t);
    memcpy(d, dims, ndims * sizeof *d);
    t->dims = d, t->n_dims = ndims;
    t->name = (char *)name;
    t->has_data_type = 1;
    size_t n = 1;
    for (size_t i = 0; i < ndims; i++)
        n *= (size_t)dims[i];
    if (f) {
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        t->float_data = f, t->n_float_data = n;
    } else {
        int64_t *v = alloc(&w->a, n * sizeof *v);
        if (!v)
            return -1;
        memcpy(v, ints, n * sizeof *v);
        t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
        t->int64_data = v, t->n_int64_data = n;
    }
    size_t cap = w->init_cap;
    int rc = push(&w->a, (void ***)&w->g->initializer, &w->g->n_initializer, &cap, t);
    w->init_cap = cap;
    return rc;
}

/* A float tensor value: N x dims (N symbolic). */
static Onnx__ValueInfoProto *value_info(struct writer *w, const char *name, const int *dims,
                                        int ndims)
{
    Onnx__ValueInfoProto *v = alloc(&w->a, sizeof *v);
    Onnx__TypeProto *t = alloc(&w->a, sizeof *t);
    Onnx__TypeProto__Tensor *tt = alloc(&w->a, sizeof *tt);
    Onnx__TensorShapeProto *s = alloc(&w->a, sizeof *s);
    Onnx__TensorShapeProto__Dimension **d = alloc(&w->a, (size_t)(ndims + 1) * sizeof *d);
    if (!v || !t || !tt || !s || !d)
        return NULL;
    onnx__value_info_proto__init(v), onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt), onnx__tensor_shape_proto__init(s);
    for (int i = 0; i <= ndims; i++) {
        if (!(d[i] = alloc(&w->a, sizeof *d[i])))
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d[i]);
        if (i == 0) {
            d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d[i]->dim_param = "N";
        } else {
            d[i]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d[i]->dim_value = dims[i - 1];
        }
    }
    s->dim = d, s->n_dim = (size_t)ndims + 1;
    tt->has_elem_type = 1, tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = s;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE, t->tensor_type = tt;
    v->name = (char *)name, v->type = t;
    return v;
}

/* Per layer: the name of its output, and its ONNX rank and, for a rank-2
 * flatten of a map, that map (its elements in (c, h, w) order). */
struct out {
    const char *name;
    int rank;
    struct eeb_shape chw;
};

static int conv(struct writer *w, int i, struct out *o, const char *in)
{
    const struct eeb_layer *l = &w->net->layers[i];
    int cin = l->rows / (l->k * l->k), m = l->out.c, kk = l->k * l->k;
    float *wt = alloc(&w->a, (size_t)l->rows * m * sizeof *wt);
    float *b = alloc(&w->a, (size_t)m * sizeof *b);
    if (!wt || !b)
        return -1;
    for (int j = 0; j < m; j++) /* rows (ky, kx, c) x out -> OIHW */
        for (int c = 0; c < cin; c++)
            for (int t = 0; t < kk; t++)
                wt[((size_t)j * cin + c) * kk + t] = l->w[onnx_conv_row(j, c, t, cin, m)];
    memcpy(b, l->b, (size_t)m * sizeof *b);
    const char *wn = text(&w->a, "w%d", i), *bn = text(&w->a, "b%d", i);
    int64_t dims[4] = {m, cin, l->k, l->k}, bd[1] = {m};
    if (!wn || !bn || initializer(w, wn, dims, 4, wt, NULL) || initializer(w, bn, bd, 1, b, NULL))
        return -1;
    o->rank = 4;
    return window_attrs(w, node(w, "Conv", o->name, in, wn, bn, NULL), l);
}

/* A Flatten node of in to out, N x the rest (axis 1): 0, or -1 (memory). */
static int flatten(struct writer *w, const char *out, const char *in)
{
    Onnx__NodeProto *n = node(w, "Flatten", out, in, NULL, NULL, NULL);
    return n && !attr_ints(w, n, "axis", 1, 0) ? 0 : -1;
}

static int fc(struct writer *w, int i, struct out *o, const struct out *src, const char *in)
{
    const struct eeb_layer *l = &w->net->layers[i];
    struct eeb_shape chw = src->chw;
    if (src->rank == 4) { /* ONNX's Gemm takes N x K */
        struct eeb_shape s = eeb_net_shape(w->net, l->in[0]);
        const char *fn = text(&w->a, "f%d", i);
        if (!fn || flatten(w, fn, in))
            return -1;
        in = fn;
        chw = s.h * s.w > 1 ? s : (struct eeb_shape){0, 0, 0};
    }
    int m = l->out.c, rows = l->rows;
    float *wt = alloc(&w->a, (size_t)rows * m * sizeof *wt);
    float *b = alloc(&w->a, (size_t)m * sizeof *b);
    if (!wt || !b)
        return -1;
    for (int k = 0; k < rows; k++) { /* ONNX's element k is eeb's row `row` */
        int64_t row = chw.c ? onnx_flat_row(k, chw) : k;
        for (int j = 0; j < m; j++)
            wt[(size_t)j * rows + k] = l->w[(size_t)row * m + j];
    }
    memcpy(b, l->b, (size_t)m * sizeof *b);
    const char *wn = text(&w->a, "w%d", i), *bn = text(&w->a, "b%d", i);
    int64_t dims[2] = {m, rows}, bd[1] = {m};
    if (!wn || !bn || initializer(w, wn, dims, 2, wt, NULL) || initializer(w, bn, bd, 1, b, NULL))
        return -1;
    Onnx__NodeProto *n = node(w, "Gemm", o->name, in, wn, bn, NULL);
    o->rank = 2;
    return !n || attr_ints(w, n, "transB", 1, 0);
}

static int slice(struct writer *w, int i, struct out *o, const char *in)
{
    const struct eeb_layer *l = &w->net->layers[i];
    const char *s = text(&w->a, "s%d_start", i), *e = text(&w->a, "s%d_end", i),
               *ax = text(&w->a, "s%d_axis", i);
    int64_t one[1] = {1}, start[1] = {l->first}, end[1] = {l->first + l->out.c};
    if (!s || !e || !ax || initializer(w, s, one, 1, NULL, start) ||
        initializer(w, e, one, 1, NULL, end) || initializer(w, ax, one, 1, NULL, one))
        return -1;
    o->rank = 4;
    return node(w, "Slice", o->name, in, s, e, ax) ? 0 : -1;
}

/* What layer input k (a layer, or EEB_NET_INPUT) reads. */
static const struct out *source(const struct out *outs, int k)
{
    static const struct out input = {.name = "input", .rank = 4};
    return k >= 0 ? &outs[k] : &input;
}

static int layer(struct writer *w, int i, struct out *outs)
{
    const struct eeb_layer *l = &w->net->layers[i];
    struct out *o = &outs[i];
    const struct out *a = source(outs, l->in[0]), *b = source(outs, l->in[1]);
    o->rank = a->rank;
    switch (l->kind) {
    case EEB_LAYER_CONV: return conv(w, i, o, a->name);
    case EEB_LAYER_FC: return fc(w, i, o, a, a->name);
    case EEB_LAYER_RELU:
        o->chw = a->chw; /* element-wise: a flattened map stays one */
        return node(w, "Relu", o->name, a->name, NULL, NULL, NULL) ? 0 : -1;
    case EEB_LAYER_MAXPOOL:
        return window_attrs(w, node(w, "MaxPool", o->name, a->name, NULL, NULL, NULL), l);
    case EEB_LAYER_AVGPOOL:
        return window_attrs(w, node(w, "AveragePool", o->name, a->name, NULL, NULL, NULL), l);
    case EEB_LAYER_GAP:
        return node(w, "GlobalAveragePool", o->name, a->name, NULL, NULL, NULL) ? 0 : -1;
    case EEB_LAYER_ADD: return node(w, "Add", o->name, a->name, b->name, NULL, NULL) ? 0 : -1;
    case EEB_LAYER_CONCAT: {
        Onnx__NodeProto *n = node(w, "Concat", o->name, a->name, b->name, NULL, NULL);
        return !n || attr_ints(w, n, "axis", 1, 0);
    }
    case EEB_LAYER_FLATTEN: {
        struct eeb_shape s = eeb_net_shape(w->net, l->in[0]);
        o->rank = 2;
        if (a->rank == 4 && s.h * s.w > 1)
            o->chw = s;
        else
            o->chw = a->chw;
        return flatten(w, o->name, a->name);
    }
    case EEB_LAYER_SLICE: return slice(w, i, o, a->name);
    case EEB_LAYER_SOFTMAX_CE:
    case EEB_LAYER_GRID_LOSS:
    case EEB_LAYER_KINDS: break;
    }
    return 0;
}

/* The model's messages, in w's arena. */
static int build(struct writer *w, Onnx__ModelProto *m, char *err, size_t errlen)
{
    const struct eeb_net *net = w->net;
    const struct eeb_layer *loss = eeb_net_loss(net);
    int last = loss ? loss->in[0] : net->nlayers - 1;
    if (last < 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "export: the network has no layer to output");
    struct out *outs = alloc(&w->a, (size_t)net->nlayers * sizeof *outs);
    Onnx__OperatorSetIdProto *os = alloc(&w->a, sizeof *os);
    Onnx__OperatorSetIdProto **osl = alloc(&w->a, sizeof *osl);
    Onnx__ValueInfoProto **ins = alloc(&w->a, sizeof *ins), **outv = alloc(&w->a, sizeof *outv);
    if (!(w->g = alloc(&w->a, sizeof *w->g)) || !outs || !os || !osl || !ins || !outv)
        return eeb_errf(err, errlen, EEB_ENOMEM, "export: out of memory");
    onnx__graph_proto__init(w->g);
    const char *out_name = loss && loss->kind == EEB_LAYER_GRID_LOSS ? "grid" : "logits";
    for (int i = 0; i < net->nlayers && !w->a.oom; i++) {
        outs[i].name = i == last ? out_name : text(&w->a, "l%d", i);
        const struct eeb_layer *l = &net->layers[i];
        const struct out *a = source(outs, l->in[0]), *b = source(outs, l->in[1]);
        if ((l->kind == EEB_LAYER_ADD || l->kind == EEB_LAYER_CONCAT) &&
            (a->chw.c || b->chw.c || a->rank != b->rank))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "export: layer %d: a %s of flattened maps, or of a map and a "
                            "vector, which ONNX orders otherwise",
                            i, eeb_layer_kind_name(l->kind));
        if (i <= last && layer(w, i, outs))
            return eeb_errf(err, errlen, EEB_ENOMEM, "export: out of memory");
    }
    if (w->a.oom)
        return eeb_errf(err, errlen, EEB_ENOMEM, "export: out of memory");
    struct eeb_shape s = net->layers[last].out;
    int in_dims[3] = {net->input.c, net->input.h, net->input.w};
    int out_dims[3] = {s.c, s.h, s.w};
    ins[0] = value_info(w, "input", in_dims, 3);
    outv[0] = value_info(w, out_name, out_dims, outs[last].rank == 2 ? 1 : 3);
    if (!ins[0] || !outv[0])
        return eeb_errf(err, errlen, EEB_ENOMEM, "export: out of memory");
    w->g->name = "eeb";
    w->g->doc_string = "input: x = max(p - 128, -127) / 128 for each 8-bit pixel p";
    w->g->input = ins, w->g->n_input = 1;
    w->g->output = outv, w->g->n_output = 1;
    onnx__operator_set_id_proto__init(os);
    os->domain = "", os->has_version = 1, os->version = OPSET;
    osl[0] = os;
    m->has_ir_version = 1, m->ir_version = IR_VERSION;
    m->opset_import = osl, m->n_opset_import = 1;
    m->producer_name = "eeb", m->producer_version = EEB_VERSION;
    m->graph = w->g;
    return EEB_OK;
}

int eeb_onnx_export(const struct eeb_net *net, uint8_t **out, size_t *len, char *err, size_t errlen)
{
    struct eeb_net *f = eeb_net_clone(net); /* float weights, whatever net holds */
    if (!f)
        return eeb_errf(err, errlen, EEB_ENOMEM, "export: out of memory");
    eeb_net_set_format(f, EEB_FORMAT_F32);
    struct writer w = {.net = f};
    Onnx__ModelProto m;
    onnx__model_proto__init(&m);
    int rc = build(&w, &m, err, errlen);
    if (!rc) {
        *len = onnx__model_proto__get_packed_size(&m);
        if (!(*out = malloc(*len ? *len : 1)))
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "export: out of memory");
        else
            onnx__model_proto__pack(&m, *out);
    }
    for (size_t i = 0; i < w.a.n; i++)
        free(w.a.p[i]);
    free(w.a.p);
    eeb_net_free(f);
    return rc;
}

int eeb_onnx_export_file(const struct eeb_net *net, const char *path, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    int rc = eeb_onnx_export(net, &buf, &len, err, errlen);
    if (rc)
        return rc;
    rc = eeb_atomic_write(path, buf, len, err, errlen);
    free(buf);
    return rc;
}
