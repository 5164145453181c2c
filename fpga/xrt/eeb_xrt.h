/*
 * eeb_xrt.h - what the xrt backend (accel_xrt.c) tells the rest of eeb
 * about XRT before and besides opening a device.
 */
#ifndef EEB_XRT_H
#define EEB_XRT_H

#include <stddef.h>

/* 1 under XRT's noop shim (XCL_EMULATION_MODE=noop). */
int eeb_xrt_noop(void);

/* Checks, without calling XRT, that XILINX_XRT names a directory whose
 * lib/ holds the shim XRT would load (noop, or the board's); XRT aborts
 * the process otherwise.  EEB_OK, or EEB_EDEVICE saying what to do. */
int eeb_xrt_preflight(char *err, size_t errlen);

#endif
