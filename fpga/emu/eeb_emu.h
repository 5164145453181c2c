/*
 * eeb_emu.h - the fast CPU emulator of the reference accelerator: runs a
 * device image's programs (fpga/kernel/fx_isa.h) with int8 GEMMs on a pool
 * of worker threads, bit for bit as the kernel C does.
 */
#ifndef EEB_EMU_H
#define EEB_EMU_H

#include "eeb_emu_gemm.h"

#include <stdint.h>

/* GEMM rows (output pixels over the batch) that a worker gathers with
 * im2col and multiplies at a time, in the forward and backward-data
 * passes: the GEMM's A is one such part, fresh in cache.  At most: a
 * layer with too few rows for several parts per worker gets smaller ones. */
#define EEB_EMU_ROWS_PER_PART 256

struct eeb_emu;

/* An emulator with `threads` workers (including the caller) on the given
 * instruction set; NULL if out of memory. */
struct eeb_emu *eeb_emu_new(int threads, enum eeb_emu_isa isa);
void eeb_emu_free(struct eeb_emu *e);
int eeb_emu_threads(const struct eeb_emu *e);
enum eeb_emu_isa eeb_emu_isa(const struct eeb_emu *e);

/*
 * oneDNN for the forward convolutions and the stride-1 backward data
 * passes where it is faster (onednn.c; the same bits, where its int8 sums
 * are exact: CPUs with VNNI or AMX).  AUTO, the default there, runs eeb's
 * own and oneDNN's by turns on a geometry's first calls (forward and
 * backward apart), EEB_EMU_ONEDNN_TRIALS timed of each, then keeps the
 * faster; OFF runs eeb's own; ON oneDNN wherever it can (tests).
 */
enum eeb_emu_onednn { EEB_EMU_ONEDNN_OFF, EEB_EMU_ONEDNN_AUTO, EEB_EMU_ONEDNN_ON };
#define EEB_EMU_ONEDNN_TRIALS 3
void eeb_emu_set_onednn(struct eeb_emu *e, enum eeb_emu_onednn mode);
/* The convolutions' geometries seen (where oneDNN could run them), and
 * those oneDNN now runs: chosen, or ON. */
void eeb_emu_onednn_shapes(const struct eeb_emu *e, int *seen, int *by_onednn);
/* oneDNN's version ("2.6.3"); *usable: whether its int8 sums are exact on
 * this CPU, so that the emulator may use it. */
const char *eeb_emu_onednn_version(int *usable);

/* Runs program prog of the image at mem, as fx_kernel() does: the outcome
 * is in the header (status, status_cmd).  Returns 0, or -1 if it stopped. */
int eeb_emu_run(struct eeb_emu *e, uint8_t *mem, uint32_t prog);

/*
 * Where the runs' time goes, for benchmarks and profiles (no result
 * depends on it, and the emulator reads no clock unless it is on).  Phases
 * are in core-nanoseconds summed over the workers; with idle they add up
 * to threads x wall_ns.
 */
enum eeb_emu_phase {
    EEB_EMU_PHASE_GEMM,    /* the int8 GEMMs */
    EEB_EMU_PHASE_IM2COL,  /* GEMM operands gathered: im2col of x or dy, dy transposed */
    EEB_EMU_PHASE_PACK,    /* B packed: weights (transposed for backward data), im2col rows */
    EEB_EMU_PHASE_REDUCE,  /* sums put in place: a weight gradient's chunks stored or added
                            * into dW; strided backward data's phases to their pixels of dx */
    EEB_EMU_PHASE_REQUANT, /* int32 sums to int8 */
    EEB_EMU_PHASE_EWISE,   /* ReLU and residual add */
    EEB_EMU_PHASE_POOL,    /* max pools on the workers; average pools (the kernel's code) */
    EEB_EMU_PHASE_UPDATE,  /* SGD and QUANT_W (the kernel's code), a layer per worker */
    EEB_EMU_PHASE_OTHER,   /* the other commands run on one core: loss, concat, slice */
    EEB_EMU_PHASE_IDLE,    /* cores waiting: for others' parts, or while one core works */
    EEB_EMU_PHASES
};

struct eeb_emu_profile {
    uint64_t ns[EEB_EMU_PHASES]; /* core-ns per phase */
    uint64_t op_ns[FX_OPS];      /* wall ns per opcode */
    uint64_t wall_ns;            /* of the runs */
    int threads;
};

/* Starts profiling from zero (on) or stops it (0). */
void eeb_emu_profile_start(struct eeb_emu *e, int on);
/* The time profiled so far. */
void eeb_emu_profile_read(const struct eeb_emu *e, struct eeb_emu_profile *out);
const char *eeb_emu_phase_name(enum eeb_emu_phase phase);

#endif
