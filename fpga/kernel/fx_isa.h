/*
 * fx_isa.h - the reference accelerator's device-memory image and
 * instruction set: what the host writes, what the kernel executes.
 *
 * One flat image holds everything (fpga/README.md draws it):
 *
 *   header | tensor descriptors | commands | data arena
 *
 * A command names its operands by tensor id; a descriptor gives a tensor's
 * offset, shape, element type and its power-of-two exponent.  Exponents of
 * activations, errors and gradients are chosen by the kernel from the data
 * as it runs (dynamic fixed point) and written back into the descriptors,
 * so the image is the whole state of the accelerator.
 *
 * The host compiles a network into three programs (init, train, predict),
 * each a run of commands; fx_kernel() runs one of them.  Everything is
 * little-endian and every struct has a fixed size, asserted below.
 */
#ifndef FX_ISA_H
#define FX_ISA_H

#include <stdint.h>

#define FX_MAGIC 0x31495846u /* "FXI1" */
#define FX_VERSION                                                                                 \
    2u               /* 2: max pools pad (version 1 ignored fx_cmd.pad there), weight              \
                      * gradients past 65536 terms sum in 48 bits (fx_reduction_shift) */
#define FX_ALIGN 64u /* every tensor starts on a 64-byte boundary */

enum fx_program { FX_PROG_INIT, FX_PROG_TRAIN, FX_PROG_PREDICT, FX_PROGS };

enum fx_type { FX_I8 = 1, FX_I32 = 4 }; /* value = element size in bytes */

/*
 * Opcodes.  Operands t[0..7] per opcode (x input, y output, d = error):
 *   CONV_FWD, FC_FWD          x, y, w8, b24, acc
 *   CONV_BWD_DATA, FC_BWD_DATA dy, dx, w8, -, acc
 *   CONV_BWD_WEIGHT, FC_BWD_WEIGHT dy, x, dw8, db8, acc
 *   RELU_FWD x, y           RELU_BWD dy, dx, y
 *   MAXPOOL_FWD x, y        MAXPOOL_BWD dy, dx, x, -, acc
 *   AVGPOOL_FWD x, y, -, -, acc         AVGPOOL_BWD dy, dx, -, -, acc
 *   ADD a, y, b, -, acc     (forward add, and the sum of errors at a fork)
 *   CONCAT_FWD a, y, b      CONCAT_BWD dy, da, db
 *   SLICE_FWD x, y          SLICE_BWD dy, dx   (channels first.. of x)
 *   SOFTMAX_CE x, dx, labels, -, acc    GRID_LOSS x, dx, targets, -, acc
 *   QUANT_W w24, w8         SGD w24, v, g8
 * FC ops see their input as flat (one row of h*w*c per item).  Pools use
 * kh x kw windows; a global average pool is one window over the input;
 * a max pool's window may start `pad` before the input (ONNX's pads).
 */
enum fx_op {
    FX_OP_NOP,
    FX_OP_CONV_FWD,
    FX_OP_CONV_BWD_DATA,
    FX_OP_CONV_BWD_WEIGHT,
    FX_OP_FC_FWD,
    FX_OP_FC_BWD_DATA,
    FX_OP_FC_BWD_WEIGHT,
    FX_OP_RELU_FWD,
    FX_OP_RELU_BWD,
    FX_OP_MAXPOOL_FWD,
    FX_OP_MAXPOOL_BWD,
    FX_OP_AVGPOOL_FWD,
    FX_OP_AVGPOOL_BWD,
    FX_OP_ADD,
    FX_OP_CONCAT_FWD,
    FX_OP_CONCAT_BWD,
    FX_OP_SOFTMAX_CE,
    FX_OP_GRID_LOSS,
    FX_OP_QUANT_W,
    FX_OP_SGD,
    FX_OP_SLICE_FWD,
    FX_OP_SLICE_BWD,
    FX_OPS
};

/* Kernel status codes, in the header after a run. */
enum fx_status { FX_OK, FX_BAD_IMAGE, FX_BAD_OP, FX_BAD_OPERAND, FX_NO_MEMORY /* emulator */ };

struct fx_header {
    uint32_t magic, version;
    uint32_t bytes;                 /* size of the whole image */
    uint32_t ntensors, tensors_off; /* descriptor table */
    uint32_t ncmds, cmds_off;       /* command table */
    uint32_t batch_max;             /* items the batched tensors hold */
    uint32_t prog_first[FX_PROGS];  /* each program: a run of commands */
    uint32_t prog_count[FX_PROGS];  /*   (PROGS = 3) */
    uint32_t batch;                 /* host: items in this run, 1..batch_max */
    uint32_t step;                  /* host: training step, for the rounding hash */
    uint64_t seed;                  /* host: stochastic rounding seed */
    int32_t lr_m, lr_e;             /* host: learning rate lr_m * 2^lr_e */
    int32_t mom_m, mom_e;           /*       momentum */
    int32_t wd_m, wd_e;             /*       weight decay */
    int64_t loss_q16;               /* kernel: summed loss of the batch, Q16 */
    uint32_t correct;               /* kernel: items (or cells) classified right */
    uint32_t status;                /* kernel: enum fx_status of the last run */
    uint32_t status_cmd;            /*   and the command it stopped at */
    uint32_t reserved[11];
};
_Static_assert(sizeof(struct fx_header) == 160, "fx_header is a device format");

struct fx_tensor {
    uint32_t offset; /* bytes from the start of the image */
    uint16_t h, w;   /* per-item shape, NHWC */
    uint32_t c;
    uint8_t type;         /* enum fx_type */
    uint8_t batched;      /* 1: batch items of h*w*c elements; 0: one */
    int8_t exp;           /* value = q * 2^exp */
    uint8_t flags;        /* FX_T_* */
    uint32_t saturations; /* elements clamped so far (cumulative) */
    uint32_t reserved;
};
_Static_assert(sizeof(struct fx_tensor) == 24, "fx_tensor is a device format");

#define FX_T_MASTER 1u /* 24-bit master weights (exponent fixed at load) */

struct fx_cmd {
    uint8_t op;     /* enum fx_op */
    uint8_t kh, kw; /* window (conv, pools) */
    uint8_t stride; /* conv, pools */
    uint8_t pad;    /* each side: conv zero padding; max pool padding that
                       never wins (below kh and kw); 0 for average pools */
    uint8_t flags;  /* FX_C_* */
    uint16_t layer; /* the network layer it came from (messages, stats) */
    uint16_t t[8];  /* operand tensor ids, see enum fx_op */
    uint32_t first; /* slice: the first channel of x */
    uint32_t reserved;
};
_Static_assert(sizeof(struct fx_cmd) == 32, "fx_cmd is a device format");

#define FX_C_NO_DECAY 1u /* SGD: no weight decay (biases) */

/* Master weights: 24 significant bits; momentum carries FX_V_FRAC more. */
#define FX_W_BITS 24
#define FX_W_MAX  ((1 << (FX_W_BITS - 1)) - 1)
#define FX_V_FRAC 8

/* The most products one int32 accumulator sums (a command's reduction:
 * kh * kw * c_in, or an FC's inputs): the compiler refuses more, so that
 * every backend's sums stay exact (the emulator's VNNI GEMM offsets B by
 * 128: |sum| <= K * 255 * 128 < 2^31). */
#define FX_MAX_REDUCTION 65536

/* Detection targets: per grid cell, six int32 (box terms in Q16). */
enum fx_grid_target { FX_GT_OBJ, FX_GT_CLASS, FX_GT_X, FX_GT_Y, FX_GT_W, FX_GT_H, FX_GT_N };
/* Detection predictions: per cell, objectness, x, y, sqrt w, sqrt h, classes. */
#define FX_GRID_BOX 5

#endif
