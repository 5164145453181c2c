/*
 * onnx_reader.c - the ONNX import's reader (onnx_read.c): the graph's
 * values and names, errors that name the node or the tensor, tensors
 * checked against their dims, and attributes.
 *
 * Sections: values and names; errors; tensors; attributes.
 */
#include "fpga/net/eeb_onnx.h"

#include "common/eeb_common.h"
#include "fpga/net/onnx_read_int.h"
#include "onnx/onnx.pb-c.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
struct name *onnx_name_of(struct reader *r, const char *s)
{
    struct name *n = slot(r, s);
    if (!n->text)
        *n = (struct name){.text = s, .value = -1};
    return n;
}

struct value *onnx_find_value(const struct reader *r, const char *s)
{
    const struct name *n = slot(r, s);
    return n->text && n->value >= 0 ? &r->v[n->value] : NULL;
}

/* A printable copy of a name from the file, for messages. */
const char *onnx_shown(const char *s, char out[72])
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
__attribute__((format(printf, 3, 4))) int onnx_file_error(struct reader *r, int status,
                                                          const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return eeb_errf(r->err, r->errlen, status, "%s: %s", r->name, what);
}

int onnx_out_of_memory(struct reader *r)
{
    return eeb_errf(r->err, r->errlen, EEB_ENOMEM, "%s: out of memory", r->name);
}

const Onnx__NodeProto *onnx_node_at(const struct reader *r, size_t i)
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
        int w = snprintf(buf + at, len - at, "%s%s=", at ? " " : "", onnx_shown(a->name, nm));
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
__attribute__((format(printf, 3, 4))) int onnx_node_fail(struct reader *r, int status,
                                                         const char *fmt, ...)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    char what[320], attrs[200], nm[72], op[72];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    attrs_text(n, attrs, sizeof attrs);
    return eeb_errf(r->err, r->errlen, status, "%s: node %zu '%s' (%s%s%s): %s", r->name, r->node,
                    onnx_shown(n->name, nm), n->op_type ? onnx_shown(n->op_type, op) : "?",
                    attrs[0] ? ", " : "", attrs, what);
}

/* Defines the node's output j as value v (ONNX names each value once). */
int onnx_define_output(struct reader *r, const char *text, struct value v)
{
    char nm[72];
    struct name *n = onnx_name_of(r, text);
    if (n->value >= 0)
        return node_malformed(r, "value '%s' is defined twice", onnx_shown(text, nm));
    if (r->nv == r->cap_v)
        return node_malformed(r, "more values than names");
    r->v[r->nv] = v;
    n->value = (int)r->nv++;
    return EEB_OK;
}

/* The node's input j: a constant tensor (an initializer or a Constant) if
 * constant, else a layer's output or the network's input. */
int onnx_node_input(struct reader *r, size_t j, int constant, struct value **out)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
    char nm[72];
    if (j >= n->n_input || !n->input[j][0])
        return node_malformed(r, "input %zu is missing", j);
    struct value *v = onnx_find_value(r, n->input[j]);
    if (!v)
        return node_malformed(r, "input '%s' is not made by an earlier node",
                              onnx_shown(n->input[j], nm));
    if (constant && v->layer != CONST_VALUE)
        return node_error(r,
                          "input '%s' must be a constant (an initializer): eeb learns only "
                          "weights it holds",
                          onnx_shown(n->input[j], nm));
    if (!constant && v->layer == CONST_VALUE)
        return node_error(r,
                          "input '%s' is a constant; eeb takes only the network's activations "
                          "there",
                          onnx_shown(n->input[j], nm));
    *out = v;
    return EEB_OK;
}

int onnx_layer_input(struct reader *r, size_t j, struct value **out)
{
    return onnx_node_input(r, j, 0, out);
}

int onnx_const_input(struct reader *r, size_t j, const Onnx__TensorProto **out)
{
    struct value *v;
    int rc = onnx_node_input(r, j, 1, &v);
    if (!rc)
        *out = v->t;
    return rc;
}

/* The readers of the node's output j other than graph outputs, 0 if it
 * is also a graph output (-1: an unused output is read by no one). */
int onnx_readers_of(const struct reader *r, const char *text)
{
    const struct name *n = slot(r, text);
    if (!n->text)
        return 0;
    return n->reader == GRAPH_OUTPUT ? -1 : n->readers;
}

/* ---- tensors ---- */

const char *onnx_tensor_name(const Onnx__TensorProto *t, char out[72])
{
    return onnx_shown(t->name ? t->name : "", out);
}

/* Elements of a tensor of these dims, or -1 if out of range. */
int64_t onnx_tensor_count(const Onnx__TensorProto *t)
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
                          onnx_tensor_name(t, nm));
    return EEB_OK;
}

/* A float tensor of `want` elements, copied into a new array. */
int onnx_tensor_floats(struct reader *r, const Onnx__TensorProto *t, int64_t want, float **out)
{
    char nm[72];
    int rc = tensor_is_inline(r, t);
    if (rc)
        return rc;
    const char *tn = onnx_tensor_name(t, nm);
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return node_error(r, "tensor '%s' holds data type %d: eeb reads float32 (1) weights", tn,
                          t->has_data_type ? (int)t->data_type : 0);
    int64_t n = onnx_tensor_count(t);
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
        return onnx_out_of_memory(r);
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
int onnx_tensor_ints(struct reader *r, const Onnx__TensorProto *t, int64_t *out, size_t max,
                     size_t *count)
{
    char nm[72];
    int rc = tensor_is_inline(r, t);
    if (rc)
        return rc;
    int64_t n = onnx_tensor_count(t);
    if (!t->has_data_type || t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || n < 0 ||
        (size_t)n > max)
        return node_error(r, "tensor '%s': %zu int64s at most expected", onnx_tensor_name(t, nm),
                          max);
    for (int64_t i = 0; i < n; i++) {
        if (t->has_raw_data && t->raw_data.len == (size_t)n * 8) {
            uint64_t u = 0;
            for (int b = 7; b >= 0; b--)
                u = u << 8 | t->raw_data.data[8 * i + b];
            out[i] = (int64_t)u;
        } else if (!t->has_raw_data && t->n_int64_data == (size_t)n)
            out[i] = t->int64_data[i];
        else
            return node_malformed(r, "tensor '%s': its data is not %lld int64s",
                                  onnx_tensor_name(t, nm), (long long)n);
    }
    *count = (size_t)n;
    return EEB_OK;
}

/* ---- attributes ---- */

const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

/* An int attribute (dflt if absent); one of another type is an error. */
int onnx_attr_int(struct reader *r, const char *name, int64_t dflt, int64_t *out)
{
    const Onnx__AttributeProto *a = onnx_attr(onnx_node_at(r, r->node), name);
    if (a && !a->has_i)
        return node_malformed(r, "attribute %s is not one int", name);
    *out = a ? a->i : dflt;
    return EEB_OK;
}

/* A finite float attribute (dflt if absent). */
int onnx_attr_float(struct reader *r, const char *name, float dflt, float *out)
{
    const Onnx__AttributeProto *a = onnx_attr(onnx_node_at(r, r->node), name);
    if (a && (!a->has_f || !isfinite(a->f)))
        return node_malformed(r, "attribute %s is not one finite float", name);
    *out = a ? a->f : dflt;
    return EEB_OK;
}

/* An int attribute that must be `want` (its default when absent). */
int onnx_attr_must(struct reader *r, const char *name, int64_t dflt, int64_t want, const char *why)
{
    int64_t v;
    int rc = onnx_attr_int(r, name, dflt, &v);
    if (!rc && v != want)
        rc = node_error(r, "%s %lld: %s", name, (long long)v, why);
    return rc;
}

/* Attributes eeb reads with one value for both axes: kernel_shape,
 * strides, dilations (2 equal ints) and pads (4 equal ints), each in
 * [min, 255].  *out keeps its value if the attribute is absent. */
static int attr_square(struct reader *r, const char *name, size_t count, int min, int *out)
{
    const Onnx__AttributeProto *a = onnx_attr(onnx_node_at(r, r->node), name);
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

/* The pad SAME gives a side of `in`: half of what makes ceil(in / stride)
 * outputs; -1 if that is odd (one side more than the other). */
static int same_pad(int in, int k, int stride)
{
    int out = (in + stride - 1) / stride;
    int total = (out - 1) * stride + k - in;
    total = total > 0 ? total : 0;
    return total % 2 ? -1 : total / 2;
}

int onnx_read_window(struct reader *r, struct window *w, struct eeb_shape in)
{
    const Onnx__NodeProto *n = onnx_node_at(r, r->node);
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
        rc = onnx_attr_must(r, "ceil_mode", 0, 0, "eeb's windows round their count down (0)");
    if (rc)
        return rc;
    const Onnx__AttributeProto *ap = onnx_attr(n, "auto_pad");
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
                              onnx_shown(mode, nm));
    return EEB_OK;
}
