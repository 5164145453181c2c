/*
 * eeb_onnx.h - networks in and out of ONNX (onnx.ai), so that a team can
 * fine-tune a network pre-trained anywhere, and check the fine-tuned one
 * anywhere.
 *
 * Import maps the graph's nodes onto eeb's layers one by one: Conv (group
 * 1, square kernels, symmetric pads), Gemm, MatMul, Relu, MaxPool,
 * AveragePool, GlobalAveragePool, Add, Concat and Slice (channels);
 * BatchNormalization is folded into the Conv before it, a bias Add into
 * the MatMul or Gemm before it; Flatten and Reshape to two dimensions,
 * Identity, Dropout, a final Softmax and Constant carry no layer (eeb's fc
 * reads a map as it is).  Anything else is an error that names the node,
 * its op type and attributes.  Weights are turned from ONNX's NCHW / OIHW
 * layouts into eeb's NHWC rows.
 *
 * The input eeb feeds a network is x = max(p - 128, -127) / 128 for each
 * 8-bit pixel p, in the shard's channel order.  A network trained on
 * x' = (p / 255 - mean) / std (torchvision's models) gets a first layer
 * that makes x' from x: a 1x1 conv, per channel a x + s.
 */
#ifndef EEB_ONNX_H
#define EEB_ONNX_H

#include "fpga/net/eeb_net.h"

#include <stddef.h>
#include <stdint.h>

#define EEB_ONNX_MAX_BYTES ((size_t)1 << 30)
#define EEB_ONNX_MAX_NODES 4096

struct eeb_onnx_import_options {
    /* The loss to append: EEB_LAYER_SOFTMAX_CE, EEB_LAYER_GRID_LOSS, or
     * EEB_LAYER_KINDS for none (the network as the file has it). */
    enum eeb_layer_kind loss;
    /* >0: the outputs the network must have.  If the final layer (a Gemm,
     * MatMul or Conv) has another count, it is replaced by a new one with
     * these outputs and He-normal weights from seed: a new head. */
    int outputs;
    uint64_t seed;
    /* The input's side when the file leaves it symbolic (0: the file's). */
    int height, width;
    /* normalize: the network takes x' = (p / 255 - mean[c]) / std[c], c
     * the input channel modulo norm_channels (3 for a clip's RGB frames);
     * a 1x1 conv computing it becomes the first layer. */
    int normalize, norm_channels;
    float mean[8], std[8];
};

/* What import did beyond mapping nodes, for the user to be told. */
struct eeb_onnx_import_report {
    int nodes, folded_bn, new_head;
    int old_outputs; /* the final layer's outputs in the file */
    char producer[64];
    int64_t opset;
};

/* The network in len bytes of an ONNX model: EEB_OK and a new network in
 * *out (eeb_net_free it), else a status (EEB_EFORMAT: not a well-formed
 * model; EEB_EINVAL: one eeb cannot run, or options out of range) with
 * the reason in err, *out untouched.  o is required; rep may be NULL.
 * name is used in messages ("NAME: node 12 'conv1' (Conv, group=32): ..."). */
int eeb_onnx_import(const uint8_t *buf, size_t len, const char *name,
                    const struct eeb_onnx_import_options *o, struct eeb_net **out,
                    struct eeb_onnx_import_report *rep, char *err, size_t errlen);

/* The same from a file. */
int eeb_onnx_import_file(const char *path, const struct eeb_onnx_import_options *o,
                         struct eeb_net **out, struct eeb_onnx_import_report *rep, char *err,
                         size_t errlen);

/*
 * The network as an ONNX model (opset 13) in a new buffer (free it), or a
 * status with the reason in err (EEB_EINVAL: a join of flattened maps,
 * which ONNX orders otherwise; EEB_ENOMEM): its
 * input "input" is N x C x H x W floats (x above), its output the loss
 * layer's input ("logits", or the detector's "grid" map), its weights
 * float32 (a fixed-point network's exactly).
 */
int eeb_onnx_export(const struct eeb_net *net, uint8_t **out, size_t *len, char *err,
                    size_t errlen);

/* The same into a file, atomically. */
int eeb_onnx_export_file(const struct eeb_net *net, const char *path, char *err, size_t errlen);

#endif
