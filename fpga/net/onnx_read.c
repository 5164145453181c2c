/*
 * onnx_read.c - a network from an ONNX model (eeb_onnx.h says what maps
 * to what).  The file is protobuf, unpacked by protobuf-c against the ONNX
 * schema Debian ships (onnx/onnx.proto); everything in it is checked
 * before it is used: its nesting before it is unpacked (onnx_wire.c), the
 * memory unpacking takes, every count and name, every tensor against its
 * dims, every weight made: a hostile file gets an error naming the node or
 * the tensor, never a crash and never a machine's memory.
 *
 * Sections: values and names; errors; tensors; attributes; one function
 * per op; the walk over the graph; the entry points.
 */
#include "fpga/net/eeb_onnx.h"

#include "common/eeb_common.h"
#include "fpga/net/onnx_int.h"
#include "onnx/onnx.pb-c.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONST_VALUE   (-3)      /* value.layer: a constant tensor, not a layer's output */
#define MAX_INPUTS    1024      /* a node's inputs (a Concat's are many) */
#define MAX_ALL_INPUT 65536     /* all nodes' inputs together */
#define MAX_INITS     65536     /* initializers */
#define MAX_NAME      4096      /* bytes of a value's name */
#define MAX_PARAMS    (1 << 28) /* weights of all layers: 2 GiB as float and fixed copies */
#define MAX_NORM_C    768       /* input channels normalized: 256 frames of RGB */
#define GRAPH_OUTPUT  (-2L)     /* name.reader: read as the graph's output */

/* A named tensor of the graph: a layer's output, the input, or a constant. */
struct value {
    int layer;
    int direct;                 /* the layer's own output (a fold may change the layer) */
    int rank;                   /* 4 (N C H W) or 2 (N K) */
    struct eeb_shape chw;       /* rank 2 over a map of this shape (a Flatten's): its
                                 * elements in ONNX's (c, h, w) order, not eeb's (h, w, c) */
    const Onnx__TensorProto *t; /* CONST_VALUE */
};

/* A name of the graph: the value it names once defined, and its readers. */
struct name {
    const char *text;
    int value;   /* index in reader.v, or -1 until defined */
    int readers; /* node inputs and graph outputs naming it */
    long reader; /* the last node reading it, or GRAPH_OUTPUT */
};

struct reader {
    const char *name;
    const Onnx__GraphProto *g;
    const struct eeb_onnx_import_options *o;
    struct eeb_onnx_import_report *rep;
    struct eeb_net *net;
    struct value *v;
    size_t nv, cap_v;
    struct name *names; /* open addressing, mask + 1 slots */
    size_t mask;
    uint64_t params; /* weights made so far */
    size_t node;     /* the node being read */
    char *err;
    size_t errlen;
};

/* ---- values and names ---- */

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* The slot of name s: its own, or the empty one it would take. */
static struct name *slot(const struct reader *r, const char *s)
{
    for (size_t i = hash(s) & r->mask;; i = (i + 1) & r->mask)
        if (!r->names[i].text || strcmp(r->names[i].text, s) == 0)
            return &r->names[i];
}

/* The name s (made, with no value and no reader, if it is new). */
static struct name *name_of(struct reader *r, const char *s)
{
    struct name *n = slot(r, s);
    if (!n->text)
        *n = (struct name){.text = s, .value = -1};
    return n;
}

static struct value *find(const struct reader *r, const char *s)
{
    const struct name *n = slot(r, s);
    return n->text && n->value >= 0 ? &r->v[n->value] : NULL;
}

/* A printable copy of a name from the file, for messages. */
static const char *shown(const char *s, char out[72])
{
    size_t i = 0;
    for (; s && s[i] && i < 64; i++)
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    if (s && s[i])
        out[i++] = '.', out[i++] = '.', out[i++] = '.';
    out[i] = '\0';
    return out;
}

/* ---- errors ---- */

/* An error about the file as a whole. */
__attribute__((format(printf, 3, 4))) static int file_error(struct reader *r, int status,
                                                            const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return eeb_errf(r->err, r->errlen, status, "%s: %s", r->name, what);
}

static int out_of_memory(struct reader *r)
{
    return eeb_errf(r->err, r->errlen, EEB_ENOMEM, "%s: out of memory", r->name);
}

static const Onnx__NodeProto *node_at(const struct reader *r, size_t i)
{
    return r->g->node[i];
}
/* "kernel_shape=[3,3] strides=[2,2] group=32": a node's attributes, for
 * errors that must say which attribute eeb cannot take. */
static void attrs_text(const Onnx__NodeProto *n, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n->n_attribute && at + 1 < len; i++) {
        const Onnx__AttributeProto *a = n->attribute[i];
        char nm[72];
        int w = snprintf(buf + at, len - at, "%s%s=", at ? " " : "", shown(a->name, nm));
        at += w > 0 ? (size_t)w : 0;
        if (at >= len)
            break;
        if (a->n_ints) {
            for (size_t j = 0; j < a->n_ints && j < 8 && at + 1 < len; j++) {
                w = snprintf(buf + at, len - at, "%s%lld", j ? "," : "[", (long long)a->ints[j]);
                at += w > 0 ? (size_t)w : 0;
            }
            w = at + 1 < len ? snprintf(buf + at, len - at, "%s]", a->n_ints > 8 ? ",..." : "") : 0;
        } else if (a->has_i)
            w = snprintf(buf + at, len - at, "%lld", (long long)a->i);
        else if (a->has_f)
            w = snprintf(buf + at, len - at, "%g", (double)a->f);
        else if (a->has_s) {
            char sv[33] = "";
            for (size_t k = 0; k < a->s.len && k < 32 && a->s.data; k++)
                sv[k] = a->s.data[k] >= 0x20 && a->s.data[k] < 0x7f ? (char)a->s.data[k] : '?';
            w = snprintf(buf + at, len - at, "'%s'", sv);
        } else
            w = snprintf(buf + at, len - at, "...");
        at += w > 0 ? (size_t)w : 0;
    }
    if (at >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
}

/* An error about the node being read: its number, name, op and attributes.
 * status: EEB_EINVAL for what eeb cannot run, EEB_EFORMAT for a file that
 * is not what ONNX says it must be. */
__attribute__((format(printf, 3, 4))) static int node_fail(struct reader *r, int status,
                                                           const char *fmt, ...)
{
    const Onnx__NodeProto *n = node_at(r, r->node);
    char what[320], attrs[200], nm[72], op[72];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    attrs_text(n, attrs, sizeof attrs);
    return eeb_errf(r->err, r->errlen, status, "%s: node %zu '%s' (%s%s%s): %s", r->name, r->node,
                    shown(n->name, nm), n->op_type ? shown(n->op_type, op) : "?",
                    attrs[0] ? ", " : "", attrs, what);
}

#define node_error(r, ...)     node_fail(r, EEB_EINVAL, __VA_ARGS__)
#define node_malformed(r, ...) node_fail(r, EEB_EFORMAT, __VA_ARGS__)

/* Defines the node's output j as value v (ONNX names each value once). */
static int define(struct reader *r, const char *text, struct value v)
{
    char nm[72];
    struct name *n = name_of(r, text);
    if (n->value >= 0)
        return node_malformed(r, "value '%s' is defined twice", shown(text, nm));
    if (r->nv == r->cap_v)
        return node_malformed(r, "more values than names");
    r->v[r->nv] = v;
    n->value = (int)r->nv++;
    return EEB_OK;
}

/* The node's input j: a constant tensor (an initializer or a Constant) if
 * constant, else a layer's output or the network's input. */
static int node_input(struct reader *r, size_t j, int constant, struct value **out)
{
    const Onnx__NodeProto *n = node_at(r, r->node);
    char nm[72];
    if (j >= n->n_input || !n->input[j][0])
        return node_malformed(r, "input %zu is missing", j);
    struct value *v = find(r, n->input[j]);
    if (!v)
        return node_malformed(r, "input '%s' is not made by an earlier node",
                              shown(n->input[j], nm));
    if (constant && v->layer != CONST_VALUE)
        return node_error(r,
                          "input '%s' must be a constant (an initializer): eeb learns only "
                          "weights it holds",
                          shown(n->input[j], nm));
    if (!constant && v->layer == CONST_VALUE)
        return node_error(r,
                          "input '%s' is a constant; eeb takes only the network's activations "
                          "there",
                          shown(n->input[j], nm));
    *out = v;
    return EEB_OK;
}

static int layer_input(struct reader *r, size_t j, struct value **out)
{
    return node_input(r, j, 0, out);
}

static int const_input(struct reader *r, size_t j, const Onnx__TensorProto **out)
{
    struct value *v;
    int rc = node_input(r, j, 1, &v);
    if (!rc)
        *out = v->t;
    return rc;
}

/* The readers of the node's output j other than graph outputs, 0 if it
 * is also a graph output (-1: an unused output is read by no one). */
static int readers_of(const struct reader *r, const char *text)
{
    const struct name *n = slot(r, text);
    if (!n->text)
        return 0;
    return n->reader == GRAPH_OUTPUT ? -1 : n->readers;
}

/* ---- tensors ---- */

static const char *tname(const Onnx__TensorProto *t, char out[72])
{
    return shown(t->name ? t->name : "", out);
}

/* Elements of a tensor of these dims, or -1 if out of range. */
static int64_t tensor_count(const Onnx__TensorProto *t)
{
    int64_t n = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || t->dims[i] > (1 << 30) || n > ((int64_t)1 << 31) / (t->dims[i] + 1))
            return -1;
        n *= t->dims[i];
    }
    return n;
}

static int tensor_is_inline(struct reader *r, const Onnx__TensorProto *t)
{
    char nm[72];
    if ((t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) ||
        t->n_external_data)
        return node_error(r,
                          "tensor '%s' is kept in an external file: eeb reads models whose "
                          "weights are inside (onnx.save(model, path, "
                          "save_as_external_data=False))",
                          tname(t, nm));
    return EEB_OK;
}

/* A float tensor of `want` elements, copied into a new array. */
static int tensor_floats(struct reader *r, const Onnx__TensorProto *t, int64_t want, float **out)
{
    char nm[72];
    int rc = tensor_is_inline(r, t);
    if (rc)
        return rc;
    const char *tn = tname(t, nm);
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return node_error(r, "tensor '%s' holds data type %d: eeb reads float32 (1) weights", tn,
                          t->has_data_type ? (int)t->data_type : 0);
    int64_t n = tensor_count(t);
    if (n != want)
        return node_error(r, "tensor '%s' has %lld elements, %lld expected", tn, (long long)n,
                          (long long)want);
    int raw = t->has_raw_data && t->raw_data.len == (size_t)n * 4;
    if (!raw && (t->has_raw_data || t->n_float_data != (size_t)n))
        return node_malformed(r,
                              "tensor '%s' has %zu bytes of raw data and %zu floats for %lld "
                              "elements",
                              tn, t->has_raw_data ? t->raw_data.len : 0, t->n_float_data,
                              (long long)n);
    float *f = malloc((size_t)(n ? n : 1) * sizeof *f);
    if (!f)
        return out_of_memory(r);
    if (raw) {
        for (int64_t i = 0; i < n; i++) { /* little-endian, whatever the host */
            const uint8_t *b = t->raw_data.data + 4 * i;
            uint32_t u =
                (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
            memcpy(&f[i], &u, 4);
        }
    } else
        memcpy(f, t->float_data, (size_t)n * sizeof *f);
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(f[i])) {
            free(f);
            return node_error(r, "tensor '%s' element %lld is not a finite number", tn,
                              (long long)i);
        }
    *out = f;
    return EEB_OK;
}

/* An int64 tensor of at most max elements (Reshape's shape). */
static int tensor_ints(struct reader *r, const Onnx__TensorProto *t, int64_t *out, size_t max,
                       size_t *count)
{
    char nm[72];
    int rc = tensor_is_inline(r, t);
    if (rc)
        return rc;
    int64_t n = tensor_count(t);
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || n < 0 ||
        (size_t)n > max)
        return node_error(r, "tensor '%s': %zu int64s at most expected", tname(t, nm), max);
    for (int64_t i = 0; i < n; i++) {
        if (t->has_raw_data && t->raw_data.len == (size_t)n * 8) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | t->raw_data.data[8 * i + b];
            out[i] = (int64_t)u;
        } else if (!t->has_raw_data && t->n_int64_data == (size_t)n)
            out[i] = t->int64_data[i];
        else
            return node_malformed(r, "tensor '%s': its data is not %lld int64s", tname(t, nm),
                                  (long long)n);
    }
    *count = (size_t)n;
    return EEB_OK;
}

/* ---- attributes ---- */

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

/* An int attribute (dflt if absent); one of another type is an error. */
static int attr_int(struct reader *r, const char *name, int64_t dflt, int64_t *out)
{
    const Onnx__AttributeProto *a = attr(node_at(r, r->node), name);
    if (a && !a->has_i)
        return node_malformed(r, "attribute %s is not one int", name);
    *out = a ? a->i : dflt;
    return EEB_OK;
}

/* A finite float attribute (dflt if absent). */
static int attr_float(struct reader *r, const char *name, float dflt, float *out)
{
    const Onnx__AttributeProto *a = attr(node_at(r, r->node), name);
    if (a && (!a->has_f || !isfinite(a->f)))
        return node_malformed(r, "attribute %s is not one finite float", name);
    *out = a ? a->f : dflt;
    return EEB_OK;
}

/* An int attribute that must be `want` (its default when absent). */
static int attr_must(struct reader *r, const char *name, int64_t dflt, int64_t want,
                     const char *why)
{
    int64_t v;
    int rc = attr_int(r, name, dflt, &v);
    if (!rc && v != want)
        rc = node_error(r, "%s %lld: %s", name, (long long)v, why);
    return rc;
}

/* Attributes eeb reads with one value for both axes: kernel_shape,
 * strides, dilations (2 equal ints) and pads (4 equal ints), each in
 * [min, 255].  *out keeps its value if the attribute is absent. */
static int attr_square(struct reader *r, const char *name, size_t count, int min, int *out)
{
    const Onnx__AttributeProto *a = attr(node_at(r, r->node), name);
    if (!a)
        return EEB_OK;
    if (a->n_ints != count)
        return node_error(r, "%s has %zu values, eeb takes %zu (2-D)", name, a->n_ints, count);
    for (size_t i = 1; i < count; i++)
        if (a->ints[i] != a->ints[0])
            return node_error(r, "%s must be the same on every side for eeb", name);
    if (a->ints[0] < min || a->ints[0] > 255)
        return node_error(r, "%s %lld is out of range (%d to 255)", name, (long long)a->ints[0],
                          min);
    *out = (int)a->ints[0];
    return EEB_OK;
}

/* A window's geometry (Conv, MaxPool, AveragePool). */
struct window {
    int k, stride, pad;
};

/* The pad SAME gives a side of `in`: half of what makes ceil(in / stride)
 * outputs; -1 if that is odd (one side more than the other). */
static int same_pad(int in, int k, int stride)
{
    int out = (in + stride - 1) / stride;
    int total = (out - 1) * stride + k - in;
    total = total > 0 ? total : 0;
    return total % 2 ? -1 : total / 2;
}

static int read_window(struct reader *r, struct window *w, struct eeb_shape in)
{
    const Onnx__NodeProto *n = node_at(r, r->node);
    int dilation = 1;
    w->stride = 1, w->pad = 0;
    int rc = attr_square(r, "kernel_shape", 2, 1, &w->k);
    if (!rc)
        rc = attr_square(r, "strides", 2, 1, &w->stride);
    if (!rc)
        rc = attr_square(r, "pads", 4, 0, &w->pad);
    if (!rc)
        rc = attr_square(r, "dilations", 2, 1, &dilation);
    if (!rc && dilation != 1)
        rc = node_error(r, "dilations %d: eeb's layers take 1", dilation);
    if (!rc)
        rc = attr_must(r, "ceil_mode", 0, 0, "eeb's windows round their count down (0)");
    if (rc)
        return rc;
    const Onnx__AttributeProto *ap = attr(n, "auto_pad");
    char mode[16] = "NOTSET", nm[72];
    if (ap && ap->has_s && ap->s.len && ap->s.len < sizeof mode && ap->s.data) {
        memcpy(mode, ap->s.data, ap->s.len);
        mode[ap->s.len] = '\0';
    } else if (ap && ap->has_s && ap->s.len)
        return node_malformed(r, "auto_pad is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    if (strcmp(mode, "VALID") == 0)
        w->pad = 0;
    else if (strcmp(mode, "SAME_UPPER") == 0 || strcmp(mode, "SAME_LOWER") == 0) {
        int ph = same_pad(in.h, w->k, w->stride), pw = same_pad(in.w, w->k, w->stride);
        if (ph < 0 || ph != pw)
            return node_error(r,
                              "auto_pad %s pads a %dx%d input unevenly (one side more than "
                              "the other), which eeb's layers cannot",
                              mode, in.h, in.w);
        w->pad = ph;
    } else if (strcmp(mode, "NOTSET") != 0)
        return node_malformed(r, "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID",
                              shown(mode, nm));
    return EEB_OK;
}

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
    const Onnx__NodeProto *n = node_at(r, r->node);
    if (l < 0)
        return builder_error(r);
    if (j >= n->n_output || !n->output[j][0])
        return node_malformed(r, "it has no output %zu", j);
    return define(r, n->output[j],
                  (struct value){.layer = l, .direct = 1, .rank = rank, .chw = chw});
}

/* Another name for value v (Identity, Dropout, Flatten, a folded node). */
static int alias(struct reader *r, const struct value *v, int rank, struct eeb_shape chw)
{
    struct value a = *v;
    a.rank = rank, a.chw = chw, a.direct = 0;
    return define(r, node_at(r, r->node)->output[0], a);
}

/* Room for rows x out more weights, within MAX_PARAMS (an initializer
 * shared by many nodes is copied into each). */
static int budget(struct reader *r, int64_t rows, int64_t out)
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
    const Onnx__NodeProto *n = node_at(r, r->node);
    struct value *x;
    const Onnx__TensorProto *wt, *bt = NULL;
    int rc = layer_input(r, 0, &x);
    if (!rc)
        rc = const_input(r, 1, &wt);
    if (!rc && n->n_input > 2 && n->input[2][0])
        rc = const_input(r, 2, &bt);
    if (!rc)
        rc = attr_must(r, "group", 1, 1, "eeb's convolutions take group 1");
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
    if ((rc = read_window(r, &win, s)))
        return rc;
    if (win.k != d[2])
        return node_error(r, "kernel_shape %d does not match the weights' %lld", win.k,
                          (long long)d[2]);
    int out = (int)d[0], cin = s.c, k = win.k, rows = k * k * cin, l = -1;
    if ((rc = budget(r, rows, out)))
        return rc;
    float *w = NULL, *b = NULL;
    rc = tensor_floats(r, wt, (int64_t)out * rows, &w);
    if (!rc && bt)
        rc = tensor_floats(r, bt, out, &b);
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
           readers_of(r, text) == 1;
}

/* y = (x - mean) / sqrt(var + eps) * scale + b, folded into the conv
 * before it: w' = w s, b' = (b - mean) s + B with s = scale / sqrt(var + eps). */
static int op_batchnorm(struct reader *r)
{
    const Onnx__NodeProto *n = node_at(r, r->node);
    struct value *x;
    int rc = layer_input(r, 0, &x);
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
    if ((rc = attr_must(r, "training_mode", 0, 0,
                        "eeb folds a BatchNormalization in inference "
                        "mode (0)")) ||
        (rc = attr_float(r, "epsilon", 1e-5f, &eps)))
        return rc;
    struct eeb_layer *ly = &r->net->layers[x->layer];
    int out = ly->out.c;
    float *p[4] = {0};
    for (int j = 0; j < 4 && !rc; j++) {
        const Onnx__TensorProto *t;
        rc = const_input(r, (size_t)j + 1, &t);
        if (!rc)
            rc = tensor_floats(r, t, out, &p[j]);
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
    const Onnx__NodeProto *n = node_at(r, r->node);
    struct value *x;
    const Onnx__TensorProto *bt, *ct = NULL;
    int64_t trans = 0;
    float alpha = 1, beta = 1;
    int rc = layer_input(r, 0, &x);
    if (!rc)
        rc = const_input(r, 1, &bt);
    if (!rc && gemm && n->n_input > 2 && n->input[2][0])
        rc = const_input(r, 2, &ct);
    if (!rc && gemm)
        if ((rc = attr_must(r, "transA", 0, 0, "eeb multiplies the activations untransposed")) ||
            (rc = attr_int(r, "transB", 0, &trans)) || (rc = attr_float(r, "alpha", 1, &alpha)) ||
            (rc = attr_float(r, "beta", 1, &beta)))
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
    if ((rc = budget(r, rows, out)))
        return rc;
    float *w = NULL, *c = NULL;
    int64_t cn = ct ? tensor_count(ct) : 0;
    rc = tensor_floats(r, bt, rows * out, &w);
    if (!rc && ct)
        rc = tensor_floats(r, ct, cn == 1 ? 1 : out, &c);
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
    const Onnx__NodeProto *n = node_at(r, r->node);
    struct value *x;
    int rc = layer_input(r, 0, &x);
    if (rc)
        return rc;
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    struct window win = {.k = 0};
    if (x->rank != 4)
        return node_error(r, "a pool of a flattened vector");
    if ((rc = read_window(r, &win, s)) ||
        (rc = attr_must(r, "storage_order", 0, 0, "eeb's maps are row-major (0)")))
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
    int rc = layer_input(r, 0, &x);
    if (rc)
        return rc;
    struct eeb_shape s = eeb_net_shape(r->net, x->layer);
    int64_t all = (int64_t)s.h * s.w * s.c, axis, zero;
    if (reshape) {
        const Onnx__TensorProto *t;
        int64_t d[4];
        size_t nd = 0;
        if ((rc = const_input(r, 1, &t)) || (rc = tensor_ints(r, t, d, 4, &nd)) ||
            (rc = attr_int(r, "allowzero", 0, &zero)))
            return rc;
        if (nd != 2 || !((d[0] == 0 && !zero) || d[0] == -1 || d[0] == 1) ||
            !(d[1] == -1 || d[1] == all) || (d[0] == -1 && d[1] == -1))
            return node_error(r, "a reshape to other than [batch, %lld] is not among eeb's layers",
                              (long long)all);
    } else {
        if ((rc = attr_int(r, "axis", 1, &axis)))
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
    const Onnx__NodeProto *n = node_at(r, r->node);
    struct value *x;
    const Onnx__TensorProto *t;
    int64_t v[4][1] = {{0}, {0}, {1}, {1}}; /* starts, ends, axes, steps */
    size_t cnt;
    int rc = layer_input(r, 0, &x);
    if (rc)
        return rc;
    if (n->n_input < 3)
        return node_error(r, "a Slice with its bounds in attributes (before opset 10)");
    for (size_t j = 1; j < n->n_input && j < 5 && !rc; j++)
        if (n->input[j][0] && !(rc = const_input(r, j, &t)) &&
            !(rc = tensor_ints(r, t, v[j - 1], 1, &cnt)) && cnt != 1)
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
    const Onnx__NodeProto *n = node_at(r, r->node);
    int rc;
    if (kind == EEB_LAYER_CONCAT) {
        int64_t axis;
        if ((rc = attr_int(r, "axis", 1, &axis)))
            return rc;
        if (axis != 1 && axis != -3)
            return node_error(r, "axis %lld: eeb concatenates the channels (1)", (long long)axis);
        if (n->n_input < 1)
            return node_malformed(r, "it has no input");
    } else if (n->n_input != 2)
        return node_malformed(r, "an add of %zu inputs (2 expected)", n->n_input);
    if (kind == EEB_LAYER_ADD) {
        struct value *a = find(r, n->input[0]), *b = find(r, n->input[1]);
        int ci = a && a->layer == CONST_VALUE ? 0 : b && b->layer == CONST_VALUE ? 1 : -1;
        struct value *fc = ci < 0 ? NULL : ci ? a : b;
        if (fc && fc->layer != CONST_VALUE && foldable(r, fc, n->input[1 - ci], EEB_LAYER_FC)) {
            struct eeb_layer *ly = &r->net->layers[fc->layer];
            const Onnx__TensorProto *t = (ci ? b : a)->t;
            float *c = NULL;
            if ((rc = tensor_floats(r, t, tensor_count(t) == 1 ? 1 : ly->out.c, &c)))
                return rc;
            for (int m = 0; m < ly->out.c; m++)
                ly->b[m] += c[tensor_count(t) == 1 ? 0 : m];
            free(c);
            return (rc = check_finite(r, fc->layer)) ? rc : alias(r, fc, fc->rank, fc->chw);
        }
    }
    struct value *a;
    if ((rc = layer_input(r, 0, &a)))
        return rc;
    int l = a->layer;
    for (size_t j = 1; j < n->n_input; j++) {
        struct value *b;
        if ((rc = layer_input(r, j, &b)))
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
    const Onnx__NodeProto *n = node_at(r, r->node);
    if (n->n_input < 1 || !n->input[0][0])
        return node_malformed(r, "input 0 is missing");
    const struct value *found = find(r, n->input[0]); /* a constant or not: passed on */
    struct value *x;
    int rc = node_input(r, 0, found && found->layer == CONST_VALUE, &x);
    if (rc)
        return rc;
    if (op_is(n, "Dropout") && n->n_output > 1 && n->output[1][0] &&
        readers_of(r, n->output[1]) != 0)
        return node_error(r, "its mask output is read: eeb runs Dropout as inference does");
    return alias(r, x, x->rank, x->chw);
}

/* A Softmax making the graph's output: eeb's softmax loss applies it. */
static int op_softmax(struct reader *r)
{
    const Onnx__NodeProto *n = node_at(r, r->node);
    if (readers_of(r, n->output[0]) != -1 || r->o->loss != EEB_LAYER_SOFTMAX_CE)
        return node_error(r, "a Softmax is among eeb's layers only as the graph's output, under "
                             "the softmax loss (which applies it)");
    return op_alias(r);
}

static int op_constant(struct reader *r)
{
    const Onnx__AttributeProto *a = attr(node_at(r, r->node), "value");
    if (!a || !a->t)
        return node_error(r, "a Constant without a tensor value is not read by eeb");
    return define(r, node_at(r, r->node)->output[0],
                  (struct value){.layer = CONST_VALUE, .t = a->t});
}

static int op_relu(struct reader *r)
{
    struct value *x;
    int rc = layer_input(r, 0, &x);
    return rc ? rc : set_output(r, 0, eeb_net_relu(r->net, x->layer), x->rank, x->chw);
}

static int op_gap(struct reader *r)
{
    struct value *x;
    int rc = layer_input(r, 0, &x);
    if (!rc && x->rank != 4)
        rc = node_error(r, "a global pool of a flattened vector");
    return rc ? rc
              : set_output(r, 0, eeb_net_gap(r->net, x->layer), 4, (struct eeb_shape){0, 0, 0});
}

static const char ops_eeb_runs[] = "Conv, Gemm, MatMul, Relu, MaxPool, AveragePool, "
                                   "GlobalAveragePool, Add, Concat, Flatten, Reshape, Slice, "
                                   "BatchNormalization after a Conv, Identity, Dropout, Constant "
                                   "and a final Softmax";

static int read_node(struct reader *r)
{
    const Onnx__NodeProto *n = node_at(r, r->node);
    char dom[72];
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return node_error(r, "operator domain '%s': eeb runs the default domain's operators",
                          shown(n->domain, dom));
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

/* ---- the walk over the graph ---- */

static int check_opset(struct reader *r, const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = m->opset_import[i];
        if (!os->domain || !os->domain[0] || strcmp(os->domain, "ai.onnx") == 0) {
            r->rep->opset = os->has_version ? os->version : 0;
            if (r->rep->opset < 7 || r->rep->opset > 21)
                return file_error(r, EEB_EINVAL, "opset %lld: eeb reads opsets 7 to 21",
                                  (long long)r->rep->opset);
            return EEB_OK;
        }
    }
    return file_error(r, EEB_EFORMAT, "no opset of the default domain is imported");
}

/* The graph's one input that is not an initializer: N x C x H x W. */
static int read_input(struct reader *r, struct eeb_shape *in, const char **name)
{
    const Onnx__GraphProto *g = r->g;
    const Onnx__ValueInfoProto *x = NULL;
    char a[72], b[72];
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || find(r, g->input[i]->name)) /* an initializer's too */
            continue;
        if (x)
            return file_error(r, EEB_EINVAL, "inputs '%s' and '%s': eeb feeds a network one input",
                              shown(x->name, a), shown(g->input[i]->name, b));
        x = g->input[i];
    }
    if (!x)
        return file_error(r, EEB_EFORMAT, "the graph has no input");
    const Onnx__TypeProto *t = x->type;
    const Onnx__TypeProto__Tensor *tt =
        t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? t->tensor_type : NULL;
    if (!tt || !tt->shape || tt->shape->n_dim != 4 || !tt->has_elem_type ||
        tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return file_error(r, EEB_EINVAL, "input '%s' must be a float tensor of 4 dims (N, C, H, W)",
                          shown(x->name, a));
    int64_t d[4];
    for (int i = 0; i < 4; i++) { /* 0: not given (a dim_param, or a value <= 0) */
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[i];
        d[i] = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                       dim->dim_value > 0
                   ? dim->dim_value
                   : 0;
    }
    const int want[2] = {r->o->height, r->o->width};
    static const char *const side[2] = {"high", "wide"};
    for (int i = 0; i < 2; i++) {
        if (want[i] && d[2 + i] && d[2 + i] != want[i])
            return file_error(r, EEB_EINVAL, "input '%s' is %lld %s, not %d", shown(x->name, a),
                              (long long)d[2 + i], side[i], want[i]);
        d[2 + i] = d[2 + i] ? d[2 + i] : want[i];
    }
    if (d[1] < 1 || d[1] > EEB_NET_MAX_CH || d[2] < 1 || d[2] > EEB_NET_MAX_DIM || d[3] < 1 ||
        d[3] > EEB_NET_MAX_DIM)
        return file_error(r, EEB_EINVAL,
                          "input '%s' is %lld x %lld x %lld (C x H x W): give its height and "
                          "width where the file leaves them open",
                          shown(x->name, a), (long long)d[1], (long long)d[2], (long long)d[3]);
    if (r->o->normalize && (d[1] % r->o->norm_channels || d[1] > MAX_NORM_C))
        return file_error(r, EEB_EINVAL,
                          "%lld input channels, normalized in groups of %d (at most %d)",
                          (long long)d[1], r->o->norm_channels, MAX_NORM_C);
    *in = (struct eeb_shape){(int)d[2], (int)d[3], (int)d[1]};
    *name = x->name;
    return EEB_OK;
}

/* The network takes x' = (p / 255 - mean) / std where eeb feeds x (eeb_onnx.h):
 * x' = a x + s per channel, with p = 128 x + 128.  A 1x1 conv of diagonal
 * weights a and biases s computes it before anything else, so that the
 * next conv pads x' with zeros as ONNX does (folded into that conv, the
 * zeros would be x's, and every output near the border would differ). */
static int normalization(struct reader *r)
{
    int c = r->net->input.c;
    int l = eeb_net_conv(r->net, EEB_NET_INPUT, c, 1, 1, 0);
    if (l < 0)
        return -1;
    struct eeb_layer *ly = &r->net->layers[l];
    for (int i = 0; i < c; i++) {
        double m = r->o->mean[i % r->o->norm_channels], sd = r->o->std[i % r->o->norm_channels];
        ly->w[(size_t)i * c + i] = (float)(128.0 / (255.0 * sd));
        ly->b[i] = (float)((128.0 / 255.0 - m) / sd);
    }
    return l;
}

/* The layer the graph's one output is. */
static int read_output(struct reader *r, int *layer)
{
    char a[72];
    if (r->g->n_output != 1 || !r->g->output[0]->name)
        return file_error(r, EEB_EINVAL, "the graph has %zu outputs; eeb trains a network of one",
                          r->g->n_output);
    const struct value *v = find(r, r->g->output[0]->name);
    if (!v || v->layer < 0)
        return file_error(r, EEB_EINVAL, "the output '%s' is not a layer's",
                          shown(r->g->output[0]->name, a));
    if (v->chw.c)
        return file_error(r, EEB_EINVAL,
                          "the output '%s' is a flattened %dx%dx%d map, whose elements eeb "
                          "orders (h, w, c), not ONNX's (c, h, w)",
                          shown(r->g->output[0]->name, a), v->chw.h, v->chw.w, v->chw.c);
    *layer = v->layer;
    return EEB_OK;
}

/* The head and the loss: the final layer must be the network's last. */
static int finish(struct reader *r, int out_layer)
{
    struct eeb_net *net = r->net;
    if (out_layer != net->nlayers - 1)
        return file_error(r, EEB_EINVAL,
                          "nodes after the one making the output make layers the output does "
                          "not use: eeb's loss must follow the last layer");
    struct eeb_layer *l = &net->layers[out_layer];
    r->rep->old_outputs = l->out.c;
    if (r->o->outputs > 0 && r->o->outputs != l->out.c) {
        if (eeb_net_new_head(net, r->o->outputs, r->o->seed) < 0)
            return file_error(r, EEB_EINVAL, "a new head of %d outputs: %s", r->o->outputs,
                              net->err);
        r->rep->new_head = 1;
    }
    int rc;
    if (r->o->loss == EEB_LAYER_SOFTMAX_CE)
        rc = eeb_net_softmax_ce(net, out_layer);
    else if (r->o->loss == EEB_LAYER_GRID_LOSS)
        rc = eeb_net_grid_loss(net, out_layer);
    else
        return EEB_OK;
    return rc < 0 ? file_error(r, EEB_EINVAL, "the loss after the output: %s", net->err) : EEB_OK;
}

/* The counts a hostile file could make costly, bounded before any work;
 * then every name in the table, and who reads it. */
static int index_names(struct reader *r)
{
    const Onnx__GraphProto *g = r->g;
    if (g->n_node > EEB_ONNX_MAX_NODES)
        return file_error(r, EEB_EINVAL, "%zu nodes (at most %d)", g->n_node, EEB_ONNX_MAX_NODES);
    if (g->n_initializer > MAX_INITS || g->n_input > g->n_initializer + 64 || g->n_output > 64)
        return file_error(r, EEB_EINVAL,
                          "%zu initializers, %zu inputs, %zu outputs (at most %d, "
                          "initializers + 64, 64)",
                          g->n_initializer, g->n_input, g->n_output, MAX_INITS);
    if (g->n_sparse_initializer)
        return file_error(r, EEB_EINVAL, "sparse initializers are not read by eeb");
    size_t names = g->n_initializer + g->n_input + g->n_output + 2, outputs = 0, inputs = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->n_input > MAX_INPUTS || n->n_output > 16)
            return file_error(r, EEB_EINVAL,
                              "node %zu has %zu inputs and %zu outputs (at most %d and 16)", i,
                              n->n_input, n->n_output, MAX_INPUTS);
        inputs += n->n_input, outputs += n->n_output;
        for (size_t j = 0; j < n->n_input; j++)
            if (strlen(n->input[j]) > MAX_NAME)
                return file_error(r, EEB_EINVAL, "node %zu: a name of more than %d bytes", i,
                                  MAX_NAME);
        for (size_t j = 0; j < n->n_output; j++)
            if (strlen(n->output[j]) > MAX_NAME)
                return file_error(r, EEB_EINVAL, "node %zu: a name of more than %d bytes", i,
                                  MAX_NAME);
    }
    if (inputs > MAX_ALL_INPUT)
        return file_error(r, EEB_EINVAL, "%zu node inputs (at most %d)", inputs, MAX_ALL_INPUT);
    names += inputs + outputs;
    size_t slots = 64;
    while (slots < 2 * names)
        slots *= 2;
    r->mask = slots - 1;
    r->cap_v = g->n_initializer + outputs + 2;
    if (!(r->names = calloc(slots, sizeof *r->names)) || !(r->v = calloc(r->cap_v, sizeof *r->v)))
        return out_of_memory(r);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            if (g->node[i]->input[j][0]) {
                struct name *nm = name_of(r, g->node[i]->input[j]);
                nm->readers++, nm->reader = (long)i;
            }
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strlen(g->output[i]->name) <= MAX_NAME) {
            struct name *nm = name_of(r, g->output[i]->name);
            nm->readers++, nm->reader = GRAPH_OUTPUT;
        }
    return EEB_OK;
}

static int read_graph(struct reader *r)
{
    const Onnx__GraphProto *g = r->g;
    int rc = index_names(r);
    char shown_nm[72];
    for (size_t i = 0; i < g->n_initializer && !rc; i++) {
        const char *nm = g->initializer[i]->name;
        if (!nm || !nm[0] || strlen(nm) > MAX_NAME)
            rc = file_error(r, EEB_EFORMAT,
                            "initializer %zu has no name, or a name of more than %d bytes", i,
                            MAX_NAME);
        else if (find(r, nm))
            rc = file_error(r, EEB_EFORMAT, "two initializers are named '%s'", shown(nm, shown_nm));
        else
            rc = define(r, nm, (struct value){.layer = CONST_VALUE, .t = g->initializer[i]});
    }
    struct eeb_shape in;
    const char *in_name = NULL;
    if (!rc)
        rc = read_input(r, &in, &in_name);
    if (!rc && !(r->net = eeb_net_new(in)))
        rc = out_of_memory(r);
    int first = EEB_NET_INPUT;
    if (!rc && r->o->normalize && (first = normalization(r)) < 0)
        rc = file_error(r, EEB_EINVAL, "the input's normalization: %s", r->net->err);
    if (!rc && strlen(in_name) > MAX_NAME)
        rc = file_error(r, EEB_EINVAL, "the input's name has more than %d bytes", MAX_NAME);
    if (!rc)
        rc = define(r, in_name, (struct value){.layer = first, .rank = 4});
    for (r->node = 0; r->node < g->n_node && !rc; r->node++)
        rc = read_node(r);
    r->rep->nodes = (int)g->n_node;
    int out = -1;
    if (!rc)
        rc = read_output(r, &out);
    return rc ? rc : finish(r, out);
}

/* ---- the entry points ---- */

/* protobuf-c's allocations, within a budget: the file's bytes unpack into
 * more (an empty node is 2 bytes in the file, ~100 unpacked), but not
 * without bound. */
struct budget_alloc {
    size_t used, limit;
};

static void *budget_malloc(void *data, size_t size)
{
    struct budget_alloc *b = data;
    if (size > b->limit - b->used)
        return NULL;
    b->used += size;
    return malloc(size);
}

static void budget_free(void *data, void *p)
{
    (void)data;
    free(p);
}

static int check_options(const struct eeb_onnx_import_options *o, const char *name, char *err,
                         size_t errlen)
{
    int ok = o->outputs >= 0 && o->outputs <= EEB_NET_MAX_CH && o->height >= 0 &&
             o->height <= EEB_NET_MAX_DIM && o->width >= 0 && o->width <= EEB_NET_MAX_DIM;
    if (o->normalize) {
        ok &= o->norm_channels >= 1 && o->norm_channels <= 8;
        for (int i = 0; ok && i < o->norm_channels; i++)
            ok &= isfinite(o->mean[i]) && isfinite(o->std[i]) && o->std[i] > 0;
    }
    return ok ? EEB_OK
              : eeb_errf(err, errlen, EEB_EINVAL,
                         "%s: import options out of range (outputs, size, or normalization: "
                         "1 to 8 channels, every std above 0)",
                         name);
}

int eeb_onnx_import(const uint8_t *buf, size_t len, const char *name,
                    const struct eeb_onnx_import_options *o, struct eeb_net **out,
                    struct eeb_onnx_import_report *rep, char *err, size_t errlen)
{
    struct eeb_onnx_import_report scratch = {0};
    struct reader r = {
        .name = name, .o = o, .rep = rep ? rep : &scratch, .err = err, .errlen = errlen};
    memset(r.rep, 0, sizeof *r.rep);
    char why[160];
    int rc = check_options(o, name, err, errlen);
    if (rc)
        return rc;
    if (len > EEB_ONNX_MAX_BYTES)
        return file_error(&r, EEB_EINVAL, "%zu bytes (at most %zu)", len, EEB_ONNX_MAX_BYTES);
    if (onnx_wire_check(buf, len, why, sizeof why))
        return file_error(&r, EEB_EFORMAT, "not an ONNX model: %s", why);
    struct budget_alloc b = {0, 16 * len + ((size_t)64 << 20)};
    ProtobufCAllocator alloc = {budget_malloc, budget_free, &b};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, len, buf);
    if (!m)
        return file_error(&r, EEB_EFORMAT, "not an ONNX model (its protobuf does not parse%s)",
                          b.used + 4096 > b.limit ? ", or unpacks into too much memory" : "");
    if (!m->graph)
        rc = file_error(&r, EEB_EFORMAT, "the model has no graph");
    else if (!m->has_ir_version || m->ir_version < 3)
        rc = file_error(&r, EEB_EINVAL, "IR version %lld: eeb reads ONNX IR 3 and later",
                        (long long)m->ir_version);
    if (!rc)
        rc = check_opset(&r, m);
    if (!rc) {
        char p[72], v[72];
        snprintf(r.rep->producer, sizeof r.rep->producer, "%.40s %.20s", shown(m->producer_name, p),
                 shown(m->producer_version, v));
        r.g = m->graph;
        rc = read_graph(&r);
    }
    free(r.v), free(r.names);
    onnx__model_proto__free_unpacked(m, &alloc);
    if (rc) {
        eeb_net_free(r.net);
        return rc;
    }
    *out = r.net;
    return EEB_OK;
}

int eeb_onnx_import_file(const char *path, const struct eeb_onnx_import_options *o,
                         struct eeb_net **out, struct eeb_onnx_import_report *rep, char *err,
                         size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    int rc = EEB_OK;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: not a regular file", path);
    else if ((uint64_t)st.st_size > EEB_ONNX_MAX_BYTES)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: %lld bytes (at most %zu)", path,
                      (long long)st.st_size, EEB_ONNX_MAX_BYTES);
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        rc = out_of_memory(&(struct reader){.name = path, .err = err, .errlen = errlen});
    else if (fread(buf, 1, (size_t)st.st_size + 1, f) != (size_t)st.st_size || ferror(f))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: read failed (or it changed while read)", path);
    fclose(f);
    if (!rc)
        rc = eeb_onnx_import(buf, (size_t)st.st_size, path, o, out, rep, err, errlen);
    free(buf);
    return rc;
}
