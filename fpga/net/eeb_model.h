/*
 * eeb_model.h - .eebm model files: a network's structure and weights, in
 * float32 or 24-bit fixed point, tagged with the task it was made for.
 *
 * Layout (little-endian; fpga/README.md has the full table):
 *   header  64 bytes: "EEBM", version, sizes, format, task, layer count,
 *           input shape, file size, CRC-32 of the whole file
 *   layers  32 bytes each: kind, window, inputs, output shape, rows,
 *           exponents, offset of the weights
 *   weights per learnable layer, rows x out.c weights then out.c biases,
 *           4 bytes each (float32, or int32 holding 24 bits)
 *
 * Reading checks everything before trusting it: a truncated, corrupt or
 * foreign file gets an error that names the byte offset and the field.
 */
#ifndef EEB_MODEL_H
#define EEB_MODEL_H

#include "common/eeb_common.h"
#include "fpga/net/eeb_net.h"

#include <stddef.h>
#include <stdint.h>

#define EEB_MODEL_VERSION    1
#define EEB_MODEL_HEADER     64
#define EEB_MODEL_LAYER      32
#define EEB_MODEL_NO_TASK    (-1)
#define EEB_MODEL_MAX_BYTES  ((size_t)1 << 30)
#define EEB_MODEL_MAX_LAYERS 4096

/* Writes net (in its current format) for task (an enum eeb_task, or
 * EEB_MODEL_NO_TASK) to path, atomically. */
int eeb_model_save(const char *path, const struct eeb_net *net, int task, char *err, size_t errlen);

/* The bytes eeb_model_save writes, in a new buffer (free it). */
int eeb_model_encode(const struct eeb_net *net, int task, uint8_t **out, size_t *len, char *err,
                     size_t errlen);

/* Reads a model file: a new network and its task.  Errors read
 * "PATH: offset N: layer 3 field: what is wrong". */
int eeb_model_load(const char *path, struct eeb_net **net, int *task, char *err, size_t errlen);

/* The same from len bytes in memory; name is used in messages. */
int eeb_model_decode(const uint8_t *buf, size_t len, const char *name, struct eeb_net **net,
                     int *task, char *err, size_t errlen);

#endif
