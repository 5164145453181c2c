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

/*
 * The board whose FPGA is part, or NULL: part as Vivado names it
 * ("xczu7ev-ffvc1156-2-e") or as an xclbin's metadata does
 * ("zynquplus:xczu7ev:ffvc1156:-2:e"), compared by the device alone
 * (xczu7ev), whatever the package and speed grade.
 */
const struct eeb_device *eeb_device_for_part(const char *part);

/* The device alone of part ("xczu7ev"), lower case, into buf; "" if part
 * names none.  Returns buf. */
const char *eeb_device_part_name(const char *part, char *buf, size_t size);

/* The parts of the boards eeb knows, as eeb_device_names lists boards:
 * "xcku115, xczu9eg, xczu7ev or xcu250".  Returns buf. */
const char *eeb_device_parts(char *buf, size_t size, const char *last);

/* The boards' names for a message, "kcu1500, zcu102, zcu104" and the last
 * after `last` (", " or " or "); returns buf. */
const char *eeb_device_names(char *buf, size_t size, const char *last);

/* A channel's peak bandwidth in bytes per second. */
double eeb_device_ddr_bytes_per_s(const struct eeb_device *d);

#endif
