/*
 * eeb_ref.h - the float32 reference trainer: the same networks, losses and
 * SGD as the fixed-point accelerator, in float on OpenBLAS sgemm.  It is
 * the CPU baseline eeb compares the accelerator with (speed and accuracy),
 * and the trainer behind `eeb model pretrain`.
 *
 * Its definitions match the accelerator's (fpga/README.md): inputs are
 * (p - 128) / 128 with 0 read as 1; softmax cross-entropy and the grid loss
 * are means over the batch; the box term is d^2 within +-1 and 2|d| - 1
 * beyond (its gradient clips); SGD is
 * v = momentum * v + lr * (g + decay * w), w -= v, with no decay on biases.
 */
#ifndef EEB_REF_H
#define EEB_REF_H

#include "fpga/net/eeb_net.h"

#include <stddef.h>
#include <stdint.h>

struct eeb_ref;

/* A trainer for a copy of net (converted to float if it is fixed) with
 * batches of up to batch_max and the first `frozen` learnable layers kept
 * fixed.  NULL with the reason in err. */
struct eeb_ref *eeb_ref_new(const struct eeb_net *net, int batch_max, int frozen, char *err,
                            size_t errlen);
void eeb_ref_free(struct eeb_ref *r);
void eeb_ref_set_hyper(struct eeb_ref *r, double lr, double momentum, double weight_decay);

/* On: every GEMM in a fixed order (eeb_ref_gemm_portable), not
 * OpenBLAS's, whose kernel and so its sums depend on the CPU: the same
 * bits on any machine, a few times slower.  A portable GEMM that could not
 * allocate its scratch leaves its output unwritten and is said by
 * eeb_ref_out_of_memory. */
void eeb_ref_set_portable(struct eeb_ref *r, int on);
int eeb_ref_out_of_memory(const struct eeb_ref *r);

/* Forward pass of n items of uint8 HWC pixels. */
void eeb_ref_forward(struct eeb_ref *r, const uint8_t *pixels, int n);

/* After a forward pass: the mean loss on labels; with backward set, the
 * errors and gradients too.  *correct counts right top-1 answers. */
double eeb_ref_loss(struct eeb_ref *r, const int32_t *labels, int n, int backward, int *correct);

/* One SGD step with the gradients of the last backward pass. */
void eeb_ref_update(struct eeb_ref *r);

/* The network output (the loss layer's input) of the last forward pass:
 * n * outputs floats. */
const float *eeb_ref_output(const struct eeb_ref *r);
int eeb_ref_outputs(const struct eeb_ref *r);

/* The trained network (float weights), and layer i's last gradients. */
struct eeb_net *eeb_ref_net(struct eeb_ref *r);
const float *eeb_ref_grad_w(const struct eeb_ref *r, int layer);
const float *eeb_ref_grad_b(const struct eeb_ref *r, int layer);

#endif
