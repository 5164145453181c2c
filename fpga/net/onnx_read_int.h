/*
 * onnx_read_int.h - shared by the files of the ONNX import: the reader's
 * state (values, names, the graph being read) and the calls between them.
 * onnx_reader.c holds the values and names, errors, tensors and
 * attributes; onnx_ops.c one function per op; onnx_read.c the walk over
 * the graph and the entry points.
 */
#ifndef EEB_ONNX_READ_INT_H
#define EEB_ONNX_READ_INT_H

#include "fpga/net/eeb_onnx.h"
#include "onnx/onnx.pb-c.h"

#include <stddef.h>
#include <stdint.h>

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

/* A window's geometry (Conv, MaxPool, AveragePool). */
struct window {
    int k, stride, pad;
};

#define node_error(r, ...)     onnx_node_fail(r, EEB_EINVAL, __VA_ARGS__)
#define node_malformed(r, ...) onnx_node_fail(r, EEB_EFORMAT, __VA_ARGS__)

/* The name s (made, with no value and no reader, if it is new). */
struct name *onnx_name_of(struct reader *r, const char *s);

/* The value named s, or NULL if none is defined yet. */
struct value *onnx_find_value(const struct reader *r, const char *s);

/* A printable copy of a name from the file, for messages. */
const char *onnx_shown(const char *s, char out[72]);

/* An error about the file as a whole. */
__attribute__((format(printf, 3, 4))) int onnx_file_error(struct reader *r, int status,
                                                          const char *fmt, ...);

/* EEB_ENOMEM, said about the file. */
int onnx_out_of_memory(struct reader *r);

/* The graph's node i. */
const Onnx__NodeProto *onnx_node_at(const struct reader *r, size_t i);

/* An error about the node being read: its number, name, op and attributes.
 * status: EEB_EINVAL for what eeb cannot run, EEB_EFORMAT for a file that
 * is not what ONNX says it must be. */
__attribute__((format(printf, 3, 4))) int onnx_node_fail(struct reader *r, int status,
                                                         const char *fmt, ...);

/* Defines the node's output j as value v (ONNX names each value once). */
int onnx_define_output(struct reader *r, const char *text, struct value v);

/* The node's input j: a constant tensor (an initializer or a Constant) if
 * constant, else a layer's output or the network's input. */
int onnx_node_input(struct reader *r, size_t j, int constant, struct value **out);

/* The node's input j, a layer's output or the network's input. */
int onnx_layer_input(struct reader *r, size_t j, struct value **out);

/* The node's input j, a constant tensor. */
int onnx_const_input(struct reader *r, size_t j, const Onnx__TensorProto **out);

/* The readers of the node's output j other than graph outputs, 0 if it
 * is also a graph output (-1: an unused output is read by no one). */
int onnx_readers_of(const struct reader *r, const char *text);

/* A printable copy of a tensor's name, for messages. */
const char *onnx_tensor_name(const Onnx__TensorProto *t, char out[72]);

/* Elements of a tensor of these dims, or -1 if out of range. */
int64_t onnx_tensor_count(const Onnx__TensorProto *t);

/* A float tensor of `want` elements, copied into a new array. */
int onnx_tensor_floats(struct reader *r, const Onnx__TensorProto *t, int64_t want, float **out);

/* An int64 tensor of at most max elements (Reshape's shape). */
int onnx_tensor_ints(struct reader *r, const Onnx__TensorProto *t, int64_t *out, size_t max,
                     size_t *count);

/* The node's attribute of this name, or NULL. */
const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name);

/* An int attribute (dflt if absent); one of another type is an error. */
int onnx_attr_int(struct reader *r, const char *name, int64_t dflt, int64_t *out);

/* A finite float attribute (dflt if absent). */
int onnx_attr_float(struct reader *r, const char *name, float dflt, float *out);

/* An int attribute that must be `want` (its default when absent). */
int onnx_attr_must(struct reader *r, const char *name, int64_t dflt, int64_t want, const char *why);

/* The node's kernel_shape, strides and pads (or auto_pad) over a map of
 * shape in, as one window. */
int onnx_read_window(struct reader *r, struct window *w, struct eeb_shape in);

/* Room for rows x out more weights, within MAX_PARAMS (an initializer
 * shared by many nodes is copied into each). */
int onnx_budget(struct reader *r, int64_t rows, int64_t out);

/* The layers of the node being read (r->node), by its op (onnx_ops.c). */
int onnx_read_node(struct reader *r);

#endif
