/*
 * onnx_read.c - a network from an ONNX model (eeb_onnx.h says what maps
 * to what).  The file is protobuf, unpacked by protobuf-c against the ONNX
 * schema Debian ships (onnx/onnx.proto); everything in it is checked
 * before it is used: its nesting before it is unpacked (onnx_wire.c), the
 * memory unpacking takes, every count and name, every tensor against its
 * dims, every weight made: a hostile file gets an error naming the node or
 * the tensor, never a crash and never a machine's memory.
 *
 * Sections: the walk over the graph; the entry points.  The reader's
 * parts (values and names, errors, tensors, attributes) are in
 * onnx_reader.c, one function per op in onnx_ops.c; onnx_read_int.h
 * declares what they share.
 */
#include "fpga/net/eeb_onnx.h"

#include "common/eeb_common.h"
#include "fpga/net/onnx_int.h"
#include "fpga/net/onnx_read_int.h"
#include "onnx/onnx.pb-c.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- the walk over the graph ---- */

static int check_opset(struct reader *r, const Onnx__ModelProto *m)
{
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *os = m->opset_import[i];
        if (!os->domain || !os->domain[0] || strcmp(os->domain, "ai.onnx") == 0) {
            r->rep->opset = os->has_version ? os->version : 0;
            if (r->rep->opset < 7 || r->rep->opset > 21)
                return onnx_file_error(r, EEB_EINVAL, "opset %lld: eeb reads opsets 7 to 21",
                                       (long long)r->rep->opset);
            return EEB_OK;
        }
    }
    return onnx_file_error(r, EEB_EFORMAT, "no opset of the default domain is imported");
}

/* The graph's one input that is not an initializer: N x C x H x W. */
static int read_input(struct reader *r, struct eeb_shape *in, const char **name)
{
    const Onnx__GraphProto *g = r->g;
    const Onnx__ValueInfoProto *x = NULL;
    char a[72], b[72];
    for (size_t i = 0; i < g->n_input; i++) {
        if (!g->input[i]->name || onnx_find_value(r, g->input[i]->name)) /* an initializer's too */
            continue;
        if (x)
            return onnx_file_error(r, EEB_EINVAL,
                                   "inputs '%s' and '%s': eeb feeds a network one input",
                                   onnx_shown(x->name, a), onnx_shown(g->input[i]->name, b));
        x = g->input[i];
    }
    if (!x)
        return onnx_file_error(r, EEB_EFORMAT, "the graph has no input");
    const Onnx__TypeProto *t = x->type;
    const Onnx__TypeProto__Tensor *tt =
        t && t->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ? t->tensor_type : NULL;
    if (!tt || !tt->shape || tt->shape->n_dim != 4 || !tt->has_elem_type ||
        tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return onnx_file_error(r, EEB_EINVAL,
                               "input '%s' must be a float tensor of 4 dims (N, C, H, W)",
                               onnx_shown(x->name, a));
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
            return onnx_file_error(r, EEB_EINVAL, "input '%s' is %lld %s, not %d",
                                   onnx_shown(x->name, a), (long long)d[2 + i], side[i], want[i]);
        d[2 + i] = d[2 + i] ? d[2 + i] : want[i];
    }
    if (d[1] < 1 || d[1] > EEB_NET_MAX_CH || d[2] < 1 || d[2] > EEB_NET_MAX_DIM || d[3] < 1 ||
        d[3] > EEB_NET_MAX_DIM)
        return onnx_file_error(r, EEB_EINVAL,
                               "input '%s' is %lld x %lld x %lld (C x H x W): give its height and "
                               "width where the file leaves them open",
                               onnx_shown(x->name, a), (long long)d[1], (long long)d[2],
                               (long long)d[3]);
    if (r->o->normalize && (d[1] % r->o->norm_channels || d[1] > MAX_NORM_C))
        return onnx_file_error(r, EEB_EINVAL,
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
        return onnx_file_error(r, EEB_EINVAL,
                               "the graph has %zu outputs; eeb trains a network of one",
                               r->g->n_output);
    const struct value *v = onnx_find_value(r, r->g->output[0]->name);
    if (!v || v->layer < 0)
        return onnx_file_error(r, EEB_EINVAL, "the output '%s' is not a layer's",
                               onnx_shown(r->g->output[0]->name, a));
    if (v->chw.c)
        return onnx_file_error(r, EEB_EINVAL,
                               "the output '%s' is a flattened %dx%dx%d map, whose elements eeb "
                               "orders (h, w, c), not ONNX's (c, h, w)",
                               onnx_shown(r->g->output[0]->name, a), v->chw.h, v->chw.w, v->chw.c);
    *layer = v->layer;
    return EEB_OK;
}

/* The head and the loss: the final layer must be the network's last. */
static int finish(struct reader *r, int out_layer)
{
    struct eeb_net *net = r->net;
    if (out_layer != net->nlayers - 1)
        return onnx_file_error(r, EEB_EINVAL,
                               "nodes after the one making the output make layers the output does "
                               "not use: eeb's loss must follow the last layer");
    struct eeb_layer *l = &net->layers[out_layer];
    r->rep->old_outputs = l->out.c;
    if (r->o->outputs > 0 && r->o->outputs != l->out.c) {
        if (eeb_net_new_head(net, r->o->outputs, r->o->seed) < 0)
            return onnx_file_error(r, EEB_EINVAL, "a new head of %d outputs: %s", r->o->outputs,
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
    return rc < 0 ? onnx_file_error(r, EEB_EINVAL, "the loss after the output: %s", net->err)
                  : EEB_OK;
}

/* The counts a hostile file could make costly, bounded before any work;
 * then every name in the table, and who reads it. */
static int index_names(struct reader *r)
{
    const Onnx__GraphProto *g = r->g;
    if (g->n_node > EEB_ONNX_MAX_NODES)
        return onnx_file_error(r, EEB_EINVAL, "%zu nodes (at most %d)", g->n_node,
                               EEB_ONNX_MAX_NODES);
    if (g->n_initializer > MAX_INITS || g->n_input > g->n_initializer + 64 || g->n_output > 64)
        return onnx_file_error(r, EEB_EINVAL,
                               "%zu initializers, %zu inputs, %zu outputs (at most %d, "
                               "initializers + 64, 64)",
                               g->n_initializer, g->n_input, g->n_output, MAX_INITS);
    if (g->n_sparse_initializer)
        return onnx_file_error(r, EEB_EINVAL, "sparse initializers are not read by eeb");
    size_t names = g->n_initializer + g->n_input + g->n_output + 2, outputs = 0, inputs = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        if (n->n_input > MAX_INPUTS || n->n_output > 16)
            return onnx_file_error(r, EEB_EINVAL,
                                   "node %zu has %zu inputs and %zu outputs (at most %d and 16)", i,
                                   n->n_input, n->n_output, MAX_INPUTS);
        inputs += n->n_input, outputs += n->n_output;
        for (size_t j = 0; j < n->n_input; j++)
            if (strlen(n->input[j]) > MAX_NAME)
                return onnx_file_error(r, EEB_EINVAL, "node %zu: a name of more than %d bytes", i,
                                       MAX_NAME);
        for (size_t j = 0; j < n->n_output; j++)
            if (strlen(n->output[j]) > MAX_NAME)
                return onnx_file_error(r, EEB_EINVAL, "node %zu: a name of more than %d bytes", i,
                                       MAX_NAME);
    }
    if (inputs > MAX_ALL_INPUT)
        return onnx_file_error(r, EEB_EINVAL, "%zu node inputs (at most %d)", inputs,
                               MAX_ALL_INPUT);
    names += inputs + outputs;
    size_t slots = 64;
    while (slots < 2 * names)
        slots *= 2;
    r->mask = slots - 1;
    r->cap_v = g->n_initializer + outputs + 2;
    if (!(r->names = calloc(slots, sizeof *r->names)) || !(r->v = calloc(r->cap_v, sizeof *r->v)))
        return onnx_out_of_memory(r);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; j < g->node[i]->n_input; j++)
            if (g->node[i]->input[j][0]) {
                struct name *nm = onnx_name_of(r, g->node[i]->input[j]);
                nm->readers++, nm->reader = (long)i;
            }
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strlen(g->output[i]->name) <= MAX_NAME) {
            struct name *nm = onnx_name_of(r, g->output[i]->name);
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
            rc = onnx_file_error(r, EEB_EFORMAT,
                                 "initializer %zu has no name, or a name of more than %d bytes", i,
                                 MAX_NAME);
        else if (onnx_find_value(r, nm))
            rc = onnx_file_error(r, EEB_EFORMAT, "two initializers are named '%s'",
                                 onnx_shown(nm, shown_nm));
        else
            rc = onnx_define_output(r, nm,
                                    (struct value){.layer = CONST_VALUE, .t = g->initializer[i]});
    }
    struct eeb_shape in;
    const char *in_name = NULL;
    if (!rc)
        rc = read_input(r, &in, &in_name);
    if (!rc && !(r->net = eeb_net_new(in)))
        rc = onnx_out_of_memory(r);
    int first = EEB_NET_INPUT;
    if (!rc && r->o->normalize && (first = normalization(r)) < 0)
        rc = onnx_file_error(r, EEB_EINVAL, "the input's normalization: %s", r->net->err);
    if (!rc && strlen(in_name) > MAX_NAME)
        rc = onnx_file_error(r, EEB_EINVAL, "the input's name has more than %d bytes", MAX_NAME);
    if (!rc)
        rc = onnx_define_output(r, in_name, (struct value){.layer = first, .rank = 4});
    for (r->node = 0; r->node < g->n_node && !rc; r->node++)
        rc = onnx_read_node(r);
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
        return onnx_file_error(&r, EEB_EINVAL, "%zu bytes (at most %zu)", len, EEB_ONNX_MAX_BYTES);
    if (onnx_wire_check(buf, len, why, sizeof why))
        return onnx_file_error(&r, EEB_EFORMAT, "not an ONNX model: %s", why);
    struct budget_alloc b = {0, 16 * len + ((size_t)64 << 20)};
    ProtobufCAllocator alloc = {budget_malloc, budget_free, &b};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&alloc, len, buf);
    if (!m)
        return onnx_file_error(&r, EEB_EFORMAT, "not an ONNX model (its protobuf does not parse%s)",
                               b.used + 4096 > b.limit ? ", or unpacks into too much memory" : "");
    if (!m->graph)
        rc = onnx_file_error(&r, EEB_EFORMAT, "the model has no graph");
    else if (!m->has_ir_version || m->ir_version < 3)
        rc = onnx_file_error(&r, EEB_EINVAL, "IR version %lld: eeb reads ONNX IR 3 and later",
                             (long long)m->ir_version);
    if (!rc)
        rc = check_opset(&r, m);
    if (!rc) {
        char p[72], v[72];
        snprintf(r.rep->producer, sizeof r.rep->producer, "%.40s %.20s",
                 onnx_shown(m->producer_name, p), onnx_shown(m->producer_version, v));
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
        rc = onnx_out_of_memory(&(struct reader){.name = path, .err = err, .errlen = errlen});
    else if (fread(buf, 1, (size_t)st.st_size + 1, f) != (size_t)st.st_size || ferror(f))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: read failed (or it changed while read)", path);
    fclose(f);
    if (!rc)
        rc = eeb_onnx_import(buf, (size_t)st.st_size, path, o, out, rep, err, errlen);
    free(buf);
    return rc;
}
