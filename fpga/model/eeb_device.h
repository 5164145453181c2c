/*
 * eeb_device.h - the FPGA boards eeb knows: their part, the resources a
 * design can use, and their off-chip memory.  The analytical model and
 * the design-space exploration size PE arrays against these; the xclbin
 * writer names the board's platform and part.
 */
#ifndef EEB_DEVICE_H
#define EEB_DEVICE_H

#include <stddef.h>

struct eeb_device {
    const char *name;          /* kcu1500, zcu102, zcu104, u250 */
    const char *part;          /* the FPGA, as Vivado names it */
    const char *platform;      /* a platform VBNV for the xclbin header */
    double lut, ff, bram, dsp; /* available: LUTs, flip-flops, 36 Kb BRAMs, DSP slices */
    int ddr_channels;          /* off-chip DDR4 channels the fabric can reach */
    double ddr_mts;            /* transfers per second of each, in millions */
    int ddr_bits;              /* data bits per channel */
    double idle_w;             /* the board configured and idle: an estimate (README.md) */
};

/* The board called name, or NULL. */
const struct eeb_device *eeb_device_find(const char *name);

/* The boards' names for a message, "kcu1500, zcu102, zcu104" and the last
 * after `last` (", " or " or "); returns buf. */
const char *eeb_device_names(char *buf, size_t size, const char *last);

/* A channel's peak bandwidth in bytes per second. */
double eeb_device_ddr_bytes_per_s(const struct eeb_device *d);

#endif
