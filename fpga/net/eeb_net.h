/*
 * eeb_net.h - a network as every backend sees it: a list of layers in
 * topological order (darknet's shape, with up to two inputs per layer for
 * residual adds and concatenations), their shapes, and their weights.
 *
 * Weights of a learnable layer (conv, fc) are a K x C_out matrix, K rows in
 * (ky, kx, c_in) order, plus C_out biases; activations are NHWC.  They are
 * held either as float32 or as 24-bit fixed point (int32 containers, one
 * power-of-two exponent per tensor); `format` says which copy is current
 * and the conversions below make the other.
 */
#ifndef EEB_NET_H
#define EEB_NET_H

#include <stddef.h>
#include <stdint.h>

#define EEB_NET_INPUT    (-1) /* in[] value: the network's input */
#define EEB_NET_NONE     (-2) /* in[] value: unused */
#define EEB_NET_MAX_DIM  4096
#define EEB_NET_MAX_CH   65535
#define EEB_NET_MAX_ROWS (1 << 24) /* fc inputs */

/* The values are stored in .eebm model files: never renumber them. */
enum eeb_layer_kind {
    EEB_LAYER_CONV = 0,
    EEB_LAYER_FC = 1,
    EEB_LAYER_RELU = 2,
    EEB_LAYER_MAXPOOL = 3,
    EEB_LAYER_AVGPOOL = 4,
    EEB_LAYER_GAP = 5, /* global average pool */
    EEB_LAYER_ADD = 6,
    EEB_LAYER_CONCAT = 7, /* along channels */
    EEB_LAYER_FLATTEN = 8,
    EEB_LAYER_SOFTMAX_CE = 9, /* loss: classification */
    EEB_LAYER_GRID_LOSS = 10, /* loss: grid detector, per cell 5 + classes */
    EEB_LAYER_SLICE = 11,     /* a run of channels of its input */
    EEB_LAYER_KINDS
};

enum eeb_format { EEB_FORMAT_F32 = 1, EEB_FORMAT_FX24 = 2 };

struct eeb_shape {
    int h, w, c;
};

struct eeb_layer {
    enum eeb_layer_kind kind;
    int in[2];            /* producing layers, EEB_NET_INPUT or EEB_NET_NONE */
    int k, stride, pad;   /* conv and pools (k: window side) */
    int first;            /* slice: the first input channel it takes */
    struct eeb_shape out; /* output shape (loss layers: their input's) */
    /* learnable layers only: */
    int rows;         /* K = k * k * c_in (fc: h * w * c of the input) */
    float *w, *b;     /* float copy: rows x out.c, out.c */
    int32_t *wq, *bq; /* fixed copy, |v| <= 2^23 - 1 */
    int we, be;       /* exponents of the fixed copy */
};

struct eeb_net {
    struct eeb_shape input;
    int nlayers, cap;
    struct eeb_layer *layers;
    enum eeb_format format; /* which weight copy is current */
    char err[160];          /* why the last builder call failed */
};

/* A new network with this input shape; NULL if out of memory. */
struct eeb_net *eeb_net_new(struct eeb_shape input);
void eeb_net_free(struct eeb_net *net);

/*
 * Builders: each appends a layer fed by layer `in` (or EEB_NET_INPUT) and
 * returns its index, or -1 with the reason in net->err (bad shape, window
 * larger than the input, a loss that is not last, ...).
 */
int eeb_net_conv(struct eeb_net *net, int in, int out_c, int k, int stride, int pad);
int eeb_net_fc(struct eeb_net *net, int in, int out);
int eeb_net_relu(struct eeb_net *net, int in);
/* Pools: a k x k window, `pad` rows and columns each side (ONNX's pads,
 * ceil_mode 0: out = (in + 2 pad - k) / stride + 1), pad < k so that every
 * window holds an input; a max pool's padding never wins (it reads as
 * -infinity).  Average pools take pad 0 only, for now. */
int eeb_net_maxpool(struct eeb_net *net, int in, int k, int stride, int pad);
int eeb_net_avgpool(struct eeb_net *net, int in, int k, int stride, int pad);
int eeb_net_gap(struct eeb_net *net, int in);
int eeb_net_add(struct eeb_net *net, int a, int b);
int eeb_net_concat(struct eeb_net *net, int a, int b);
/* Channels first .. first + count - 1 of in (frames of a stacked clip). */
int eeb_net_slice(struct eeb_net *net, int in, int first, int count);
int eeb_net_flatten(struct eeb_net *net, int in);
int eeb_net_softmax_ce(struct eeb_net *net, int in);
int eeb_net_grid_loss(struct eeb_net *net, int in);

/* Appends the layer spec describes (its kind, in[], k, stride, pad, first
 * and, for conv, fc and slice, out.c) through the builder of its kind. */
int eeb_net_append(struct eeb_net *net, const struct eeb_layer *spec);

/* Shape of layer i's output, or the input's for EEB_NET_INPUT. */
struct eeb_shape eeb_net_shape(const struct eeb_net *net, int i);
int eeb_layer_learnable(const struct eeb_layer *l);
const char *eeb_layer_kind_name(enum eeb_layer_kind kind);

/* The loss layer (always last), or NULL while the network has none. */
const struct eeb_layer *eeb_net_loss(const struct eeb_net *net);

/* Number of classes the loss scores (grid: per cell). */
int eeb_net_classes(const struct eeb_net *net);

/* He-normal float weights from a seeded generator, zero biases. */
void eeb_net_init(struct eeb_net *net, uint64_t seed);

/* Replaces the last layer, a conv or fc, by one of the same window with
 * `outputs` outputs and He-normal weights from seed (a new head for a
 * pre-trained network); the network becomes float.  Returns its index,
 * or -1 with the reason in net->err. */
int eeb_net_new_head(struct eeb_net *net, int outputs, uint64_t seed);

/* Multiply-accumulates per item, forward (training is about 3x). */
uint64_t eeb_net_macs(const struct eeb_net *net);
uint64_t eeb_net_params(const struct eeb_net *net);

/*
 * Conversions between the copies.  to_fixed picks each tensor's exponent
 * from its largest magnitude, leaving one bit of headroom (max < 2^22 of
 * the 2^23 range) for the weights to grow while training; to_float is
 * exact (24 bits fit a float's significand).
 */
void eeb_net_to_fixed(struct eeb_net *net);
void eeb_net_to_float(struct eeb_net *net);

/* to_fixed or to_float, whichever makes format current (none if it is). */
void eeb_net_set_format(struct eeb_net *net, enum eeb_format format);

/* The exponent to_fixed picks for a tensor whose largest |value| is max. */
int eeb_fx_weight_exp(float max);

/* A deep copy, or NULL if out of memory. */
struct eeb_net *eeb_net_clone(const struct eeb_net *net);

#endif
