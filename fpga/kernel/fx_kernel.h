/*
 * fx_kernel.h - the reference accelerator: the top function a Vitis flow
 * synthesizes, and the same C run on the CPU as the bit-exact reference.
 */
#ifndef FX_KERNEL_H
#define FX_KERNEL_H

#include "fx_arith.h"
#include "fx_isa.h"

/* PE array: FX_BT batch items x FX_CT channels multiply-accumulate per
 * cycle, each weight fetched once for FX_BT items (DarkFPGA's batch-level
 * parallelism). */
#define FX_BT 4
#define FX_CT 16

/*
 * Runs program prog (enum fx_program) of the image at mem.  The outcome is
 * in the header: status (enum fx_status) and status_cmd; loss_q16 and
 * correct are zeroed first and summed by the loss commands.
 */
void fx_kernel(uint8_t *mem, uint32_t prog);

/* Starts program prog: zeroes the loss and status fields, checks the
 * image and every operand id of the program's commands.  FX_OK, or the
 * status (also left in the header). */
enum fx_status fx_program_start(uint8_t *mem, uint32_t prog);

/* Executes one command of a started program (the emulator calls it for
 * the commands it does not accelerate itself).  Returns FX_OK or why it
 * refused. */
enum fx_status fx_kernel_exec(uint8_t *mem, const struct fx_cmd *cmd);

/* ---- for the emulator: the kernel's own rules, shared ---- */

struct fx_geom {
    int n, ih, iw, ic, oh, ow, oc, kh, kw, s, p;
};

/* A convolution or FC command's operands, resolved and checked. */
struct fx_conv {
    struct fx_geom g;
    int flat;              /* FC: the input read as one row per item */
    struct fx_tensor *in;  /* x (forward, backward weight) or dx (backward data) */
    struct fx_tensor *out; /* y (forward) or dy (backward) */
    struct fx_tensor *w;   /* w8 or dw */
    struct fx_tensor *b;   /* b24 or db (unused by backward data) */
    struct fx_tensor *acc; /* int32 scratch */
};
enum fx_status fx_conv_operands(uint8_t *mem, const struct fx_cmd *c, struct fx_conv *cv);

/* An element-wise command's operands, resolved and checked: RELU_FWD
 * x -> y; RELU_BWD dy -> dx gated by the forward output (b); ADD a + b ->
 * y through the int32 scratch acc at the common exponent e. */
/* A residual add's operands meet at the smaller exponent, but at most
 * FX_ADD_SPAN below the larger (127 << 20 leaves int32 room for the sum). */
#define FX_ADD_SPAN 20

struct fx_ewise {
    int op;
    struct fx_tensor *a, *y, *b, *acc;
    const int8_t *pa, *pb; /* their data */
    int8_t *py;
    int32_t *pacc;
    uint64_t count;
    int e;
};
enum fx_status fx_ewise_operands(uint8_t *mem, const struct fx_cmd *c, struct fx_ewise *ew);

/* The element-wise loop over [begin, end): ReLU into y, or the aligned
 * sum into acc (the largest |sum| into *maxabs; the sum cannot clamp).
 * The kernel runs it over everything, the emulator over parts. */
void fx_ewise_range(const struct fx_ewise *ew, uint64_t begin, uint64_t end, uint64_t *maxabs);

/* How a requantization rounds: half up, or stochastically from the
 * counter hash keyed by (seed, step, tensor, element index). */
struct fx_rounding {
    int stochastic;
    uint64_t seed;
    uint32_t step, tensor;
};
struct fx_rounding fx_round_half_up(void);
struct fx_rounding fx_round_stochastic(const uint8_t *mem, unsigned tensor);

/* out[i] = acc[i] / 2^s rounded and clamped to +-127 for i in [begin,
 * end); returns the number clamped. */
uint32_t fx_requant_range(const int32_t *acc, uint64_t begin, uint64_t end, int s,
                          struct fx_rounding r, int8_t *out);
void fx_set_exp(struct fx_tensor *t, int e);
/* The largest |v[i]|, i < n (in uint32: |INT32_MIN| fits). */
uint64_t fx_maxabs32(const int32_t *v, uint64_t n);

/* The SGD command's loop (fx_kernel.c's sgd: the formula is there), its
 * rounding shifts planned once from the header's m * 2^e pairs and the
 * weights' (e_w) and gradients' (e_g) exponents. */
struct fx_sgd_plan {
    struct fx_shift_plan g, decay, lr, mom; /* d = g + wd * w; lr * d; mom * v */
    int64_t wd_m, lr_m, mom_m;              /* the header's mantissas */
    int decay_on;                           /* 0: FX_C_NO_DECAY (biases) */
};
struct fx_sgd_plan fx_sgd_plan(const struct fx_header *h, int e_w, int e_g, int decay_on);
/* n weights w, momenta v and gradients g stepped in place; the momenta's
 * and the weights' clamps counted in sat[0] and sat[1]; the largest |w|
 * after the step returned. */
uint64_t fx_sgd_range(const struct fx_sgd_plan *p, int32_t *w, int32_t *v, const int8_t *g,
                      uint64_t n, uint32_t sat[2]);

/* Descriptor id of the image at mem. */
struct fx_tensor *fx_tensor_at(uint8_t *mem, unsigned id);

#endif
