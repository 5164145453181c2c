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
 * passes: the GEMM's A is one such part, fresh in cache. */
#define EEB_EMU_ROWS_PER_PART 256

struct eeb_emu;

/* An emulator with `threads` workers (including the caller) on the given
 * instruction set; NULL if out of memory. */
struct eeb_emu *eeb_emu_new(int threads, enum eeb_emu_isa isa);
void eeb_emu_free(struct eeb_emu *e);
int eeb_emu_threads(const struct eeb_emu *e);
enum eeb_emu_isa eeb_emu_isa(const struct eeb_emu *e);

/* Runs program prog of the image at mem, as fx_kernel() does: the outcome
 * is in the header (status, status_cmd).  Returns 0, or -1 if it stopped. */
int eeb_emu_run(struct eeb_emu *e, uint8_t *mem, uint32_t prog);

#endif
