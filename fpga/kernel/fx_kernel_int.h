/*
 * fx_kernel_int.h - shared inside fpga/kernel by the kernel's files
 * (fx_kernel.c and its commands, fx_kernel_*.c): the CPU clones of its
 * element-wise loops, image access, requantization, and each command.
 */
#ifndef FX_KERNEL_INT_H
#define FX_KERNEL_INT_H

#include "fx_arith.h"
#include "fx_kernel.h"

#include <stddef.h>
#include <stdint.h>

/* The element-wise loops are the emulator's too: a gcc build compiles
 * them for x86-64-v4 (AVX-512 with DQ, whose 64-bit multiplies the SGD
 * loop takes: 3x the avx512f clone's speed there) and AVX2 as well and
 * picks one at load time (GNU ifunc).  Synthesis, clang and the
 * sanitizers see plain functions. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SYNTHESIS__) &&  \
    !defined(__SANITIZE_ADDRESS__)
#define FX_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define FX_CPU_CLONES
#endif

/* The image's header, its item's element count, and a tensor's int8 or
 * int32 bytes in the image. */
struct fx_header *fx_kernel_header(uint8_t *mem);

uint64_t fx_kernel_item_count(const struct fx_tensor *t);

/* Elements of t (batched tensors count the header's current batch). */
uint64_t fx_kernel_tensor_count(const uint8_t *mem, const struct fx_tensor *t);

int8_t *fx_kernel_i8(uint8_t *mem, const struct fx_tensor *t);

int32_t *fx_kernel_i32(uint8_t *mem, const struct fx_tensor *t);

/* out = acc / 2^s with s from maxabs; the exponent becomes e_acc + s. */
void fx_kernel_requantize(const int32_t *acc, uint64_t count, uint64_t maxabs, int e_acc,
                          struct fx_rounding r, int8_t *out, struct fx_tensor *t);

/* Stores v into the int32 scratch, saturating (counted against t): inline,
 * as it was in one file, for it runs once an output element. */
static inline int32_t fx_kernel_store32(int64_t v, uint64_t *maxabs, struct fx_tensor *t)
{
    uint32_t sat = 0;
    int32_t s = fx_store32(v, maxabs, &sat);
    t->saturations += sat;
    return s;
}

/* y = requant(conv(x, w8) + bias) */
enum fx_status fx_kernel_conv_fwd(uint8_t *mem, const struct fx_cmd *c);

/* dx = requant(dy convolved back through w8): every input position gathers
 * the outputs whose window covered it. */
enum fx_status fx_kernel_conv_bwd_data(uint8_t *mem, const struct fx_cmd *c);

/* dw = requant_stochastic(sum over batch and positions of x * dy), and the
 * bias gradient db = requant_stochastic(sum of dy). */
enum fx_status fx_kernel_conv_bwd_weight(uint8_t *mem, const struct fx_cmd *c);

/* Whether a and b have the same shape (fx_kernel_ewise.c). */
int fx_kernel_same_shape(const struct fx_tensor *a, const struct fx_tensor *b);

/* ReLU forward and backward, residual add. */
enum fx_status fx_kernel_ewise(uint8_t *mem, const struct fx_cmd *c);

/* The max of each window, at the input's exponent. */
enum fx_status fx_kernel_maxpool_fwd(uint8_t *mem, const struct fx_cmd *c);

/* The error goes to the first maximum of each window's inputs in scan
 * order (padding is never one); overlapping windows add up in the
 * scratch. */
enum fx_status fx_kernel_maxpool_bwd(uint8_t *mem, const struct fx_cmd *c);

/* The mean is sum * round(2^16 / window), exponent - 16. */
enum fx_status fx_kernel_avgpool_fwd(uint8_t *mem, const struct fx_cmd *c);

/* Each window's error spread evenly over its inputs. */
enum fx_status fx_kernel_avgpool_bwd(uint8_t *mem, const struct fx_cmd *c);

/* Channel concatenation at the larger exponent (the other side rounds). */
enum fx_status fx_kernel_concat_fwd(uint8_t *mem, const struct fx_cmd *c);

/* Each input's error: its channels of dy. */
enum fx_status fx_kernel_concat_bwd(uint8_t *mem, const struct fx_cmd *c);

/* A run of channels, at the input's exponent: exact. */
enum fx_status fx_kernel_slice_fwd(uint8_t *mem, const struct fx_cmd *c);

/* The error of x: dy in the sliced channels, zero in the others. */
enum fx_status fx_kernel_slice_bwd(uint8_t *mem, const struct fx_cmd *c);

/*
 * Mean softmax cross-entropy over the batch.  The error (p - onehot) / N is
 * formed in Q30 with 1/N as a Q16 reciprocal, then requantized.
 */
enum fx_status fx_kernel_softmax_ce(uint8_t *mem, const struct fx_cmd *c);

/*
 * The grid detector's loss (one box per cell, YOLO v1 style), mean over the
 * batch: objectness BCE on every cell (no-object cells weighted 1/2), and
 * on cells that hold an object, squared error on x, y, sqrt w, sqrt h and
 * softmax cross-entropy over the classes.  The box term is Huber-like:
 * d^2 within +-1, 2|d| - 1 beyond, so its gradient 2d clips at +-2.
 */
enum fx_status fx_kernel_grid_loss(uint8_t *mem, const struct fx_cmd *c);

/* The int8 copy of the master weights the PE array multiplies with. */
enum fx_status fx_kernel_quant_w(uint8_t *mem, const struct fx_cmd *c);

/*
 * SGD with momentum and weight decay, in integers:
 *   d = g + wd * w            at the momentum's exponent (e_w - FX_V_FRAC)
 *   v = mom * v + lr * d      int32, saturating
 *   w = w - round(v / 2^FX_V_FRAC)   24 bits, saturating
 * lr, mom and wd are m * 2^e pairs from the header.  Weights that grow
 * into their headroom bit (max |w| >= 2^22) are halved, with the momentum,
 * and the exponent goes up by one: the range follows the weights, so they
 * saturate only if one step jumps past 2^23.
 */
enum fx_status fx_kernel_sgd(uint8_t *mem, const struct fx_cmd *c);

#endif
