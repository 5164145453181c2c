/*
 * onnx_int.h - shared by the import (onnx_read.c, onnx_ops.c) and the
 * export (onnx_write.c): the two layout maps between ONNX and eeb, and the
 * wire-format check that runs before protobuf-c unpacks a file.
 */
#ifndef EEB_ONNX_INT_H
#define EEB_ONNX_INT_H

#include "fpga/net/eeb_net.h"

#include <stddef.h>
#include <stdint.h>

/* Where ONNX's OIHW weight (out m, in c, tap t = ky * k + kx) sits in
 * eeb's rows (ky, kx, c) x out, of cin inputs and out outputs. */
static inline size_t onnx_conv_row(int m, int c, int t, int cin, int out)
{
    return ((size_t)t * (size_t)cin + (size_t)c) * (size_t)out + (size_t)m;
}

/* The eeb row (h, w, c) of element k of ONNX's Flatten of a map of shape
 * chw, whose elements are in (c, h, w) order. */
static inline int64_t onnx_flat_row(int64_t k, struct eeb_shape chw)
{
    int64_t hw = (int64_t)chw.h * chw.w;
    return (k % hw) * chw.c + k / hw;
}

/* Nested messages a model may have: eeb reads no subgraph, and protobuf-c
 * unpacks by recursion, so a deeper file is refused before it is. */
#define ONNX_MAX_DEPTH 16

/* EEB_OK if len bytes are protobuf an ONNX ModelProto could be, nesting no
 * deeper than ONNX_MAX_DEPTH messages; else why not, in why. */
int onnx_wire_check(const uint8_t *buf, size_t len, char *why, size_t whylen);

#endif
