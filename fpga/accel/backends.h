/*
 * backends.h - the accelerator backends built in, each defined in the file
 * of what it runs; the registry (accel.c) lists them, and each backend's
 * file includes this so that its definition matches.
 */
#ifndef EEB_BACKENDS_H
#define EEB_BACKENDS_H

#include "fpga/accel/eeb_accel.h"

/* The backends, each defined in its own file. */
extern const struct eeb_accel_ops eeb_accel_kernel_ops; /* fpga/fx/accel_kernel.c */
extern const struct eeb_accel_ops eeb_accel_emu_ops;    /* fpga/emu/accel_emu.c */
extern const struct eeb_accel_ops eeb_accel_fp32_ops;   /* fpga/ref/accel_fp32.c */
extern const struct eeb_accel_ops eeb_accel_xrt_ops;    /* fpga/xrt/accel_xrt.c (with XRT) */
extern const struct eeb_accel_ops eeb_accel_faulty_ops; /* fpga/accel/accel_faulty.c */

#endif
