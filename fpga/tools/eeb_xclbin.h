/*
 * eeb_xclbin.h - xclbin files without Vitis: a writer for the reference
 * accelerator's container and a reader that walks any xclbin's section
 * headers (the axlf structs of XRT's xclbin.h).
 *
 * The reference xclbin holds what XRT needs to open the kernel -- memory
 * topology, IP layout, connectivity, and the kernel's argument signature
 * as embedded XML metadata -- and no bitstream.  A USER_METADATA section
 * carries eeb's own JSON: the design parameters of the PE array and the
 * utilization report (or declared figures) that M_u is scored from.
 *
 * An xclbin Vitis built records its own resources in SYSTEM_METADATA:
 * each compute unit's, after synthesis, placement and routing, and the
 * platform's available totals.  M_u is taken from those when an xclbin
 * has them (xclbin_system.c).
 */
#ifndef EEB_XCLBIN_H
#define EEB_XCLBIN_H

#include "common/eeb_common.h"
#include "scoring/eeb_score.h"

#include <stddef.h>
#include <stdint.h>

/* The reference accelerator's kernel and its one compute unit. */
#define EEB_XCLBIN_KERNEL "fx_kernel"
#define EEB_XCLBIN_CU     "fx_kernel_1"

/* The design `eeb xclbin build` describes unless told otherwise: seed
 * 001's DarkFPGA on the KCU1500 (32 PEs x 32 MACs at 250 MHz, two of the
 * board's DDR4-2400 channels). */
#define EEB_XCLBIN_DESIGN "device=kcu1500,pes=32,macs=32,clock_mhz=250,ddr=2"

/* Its utilization, declared from the published KCU1500 design's resource table: 199,111 of
 * 663,360 LUTs, 249,122 of 1,326,720 registers, 1,060 of 2,160 BRAM,
 * 1,030 of 5,520 DSPs. */
#define EEB_XCLBIN_UTIL        "lut=0.30015,ff=0.18777,bram=0.49074,dsp=0.18659"
#define EEB_XCLBIN_UTIL_SOURCE "declared: the published KCU1500 design"

/* What `eeb xclbin build` puts in the file. */
struct eeb_xclbin_spec {
    /* "k=v,k=v" over EEB_XCLBIN_DESIGN, a design eeb_design_parse takes:
     * device and clock_mhz go into the header and the kernel metadata, ddr
     * makes the banks; every pair is kept in the USER_METADATA JSON.  NULL:
     * the default. */
    const char *design;
    /* The utilization: a Vivado report's text, or a lut=..,ff=..,bram=..,dsp=..
     * spec; util_source names where it came from (a file, "declared").  util
     * NULL: the analytical model's resources for the design, its source
     * EEB_XCLBIN_UTIL_MODELED. */
    const char *util, *util_source;
    /* A SYSTEM_METADATA section's bytes, written as given (eeb reads what
     * Vitis writes there, and tests write it so); NULL: none. */
    const char *system_metadata;
    size_t system_metadata_len;
};

#define EEB_XCLBIN_UTIL_MODELED "modeled: fpga/model, default buffers"

/* Writes the reference accelerator's xclbin to path (atomically). */
int eeb_xclbin_build(const char *path, const struct eeb_xclbin_spec *spec, char *err,
                     size_t errlen);

/* ---- reading ---- */

#define EEB_XCLBIN_MAX_SECTIONS 64
#define EEB_XCLBIN_MAX_MEMS     64
#define EEB_XCLBIN_MAX_KERNELS  16
#define EEB_XCLBIN_MAX_ARGS     32
#define EEB_XCLBIN_MAX_CUS      16
#define EEB_XCLBIN_NAME         64

struct eeb_xclbin_section {
    uint32_t kind;
    char kind_name[24]; /* "MEM_TOPOLOGY", or the number */
    char name[17];
    uint64_t offset, size;
};

struct eeb_xclbin_mem {
    char tag[17];
    int type; /* enum MEM_TYPE */
    int used;
    uint64_t size_kb, base;
};

struct eeb_xclbin_arg {
    char name[EEB_XCLBIN_NAME], type[EEB_XCLBIN_NAME], port[EEB_XCLBIN_NAME];
    int id;
    int global;            /* addressQualifier 1: a buffer in device memory */
    uint64_t offset, size; /* in the control registers */
    int mem;               /* CONNECTIVITY: the memory bank, or -1 */
};

struct eeb_xclbin_cu {
    char name[EEB_XCLBIN_NAME]; /* the instance: "fx_kernel_1" */
    uint64_t base;
    int control; /* enum IP_CONTROL: 0 ap_ctrl_hs, 1 ap_ctrl_chain, ... */
    int ip;      /* index in IP_LAYOUT */
};

struct eeb_xclbin_kernel {
    char name[EEB_XCLBIN_NAME];
    double clock_mhz; /* from the metadata's KERNEL_CLK; 0 if not given */
    int nargs, ncus;
    struct eeb_xclbin_arg args[EEB_XCLBIN_MAX_ARGS];
    struct eeb_xclbin_cu cus[EEB_XCLBIN_MAX_CUS];
};

struct eeb_xclbin_info {
    uint64_t length, timestamp;
    unsigned version[3]; /* the axlf header's major.minor.patch */
    char uuid[37];
    char platform[65];
    int nsections, nmems, nkernels;
    struct eeb_xclbin_section sections[EEB_XCLBIN_MAX_SECTIONS];
    struct eeb_xclbin_mem mems[EEB_XCLBIN_MAX_MEMS];
    struct eeb_xclbin_kernel kernels[EEB_XCLBIN_MAX_KERNELS];
    char *user_metadata; /* USER_METADATA's bytes, NUL-terminated, or NULL */
    size_t user_metadata_len;
    char *system_metadata; /* SYSTEM_METADATA's bytes, NUL-terminated, or NULL */
    size_t system_metadata_len;
    char part[64]; /* the FPGA, EMBEDDED_METADATA's <device fpgaDevice>, or "" */
};

#define EEB_XCLBIN_MAX_BYTES (1ull << 30)

/*
 * Reads path (at most EEB_XCLBIN_MAX_BYTES) and checks every length in it: the file's,
 * each section's, each array's count.  Errors name the file and the part
 * at fault.  Free the result with eeb_xclbin_info_free.
 */
int eeb_xclbin_read(const char *path, struct eeb_xclbin_info **out, char *err, size_t errlen);
/* The same from bytes in memory (the fuzz target's entry); name is used
 * in errors. */
int eeb_xclbin_parse(const uint8_t *data, size_t len, const char *name,
                     struct eeb_xclbin_info **out, char *err, size_t errlen);
void eeb_xclbin_info_free(struct eeb_xclbin_info *info);

/* The kernel named name, or NULL. */
const struct eeb_xclbin_kernel *eeb_xclbin_kernel(const struct eeb_xclbin_info *info,
                                                  const char *name);

/*
 * The utilization eeb's USER_METADATA carries (a report's text or a
 * spec), parsed, and where it came from (source).  EEB_EFORMAT if the
 * xclbin has none (one Vitis built): give a report then.
 */
int eeb_xclbin_util(const struct eeb_xclbin_info *info, struct eeb_util *util, char *source,
                    size_t source_len, char *err, size_t errlen);

/* The design eeb embedded, as "k=v,..." for the analytical model (free
 * it); *spec NULL, and EEB_OK, if the xclbin has none. */
int eeb_xclbin_design(const struct eeb_xclbin_info *info, char **spec, char *err, size_t errlen);

/* ---- SYSTEM_METADATA: the design's own resources ---- */

enum eeb_xclbin_res {
    EEB_XCLBIN_LUT,
    EEB_XCLBIN_REG, /* flip-flops: M_u's FF */
    EEB_XCLBIN_BRAM,
    EEB_XCLBIN_DSP,
    EEB_XCLBIN_URAM, /* shown, not in M_u (eeb's M_u is LUT, FF, BRAM, DSP) */
    EEB_XCLBIN_NRES
};

/* The implementation step a compute unit's figures were taken after. */
enum eeb_xclbin_origin {
    EEB_XCLBIN_ROUTED,
    EEB_XCLBIN_PLACED, /* "fully_placed" */
    EEB_XCLBIN_SYNTHESIZED,
    EEB_XCLBIN_NORIGINS
};

#define EEB_XCLBIN_MAX_FIGURED_CUS  64          /* compute units with figures */
#define EEB_XCLBIN_MAX_SYSTEM_BYTES (16u << 20) /* SYSTEM_METADATA's JSON */

struct eeb_xclbin_cu_figures {
    char name[EEB_XCLBIN_NAME];
    unsigned origins;                                  /* bit per origin it has figures of */
    unsigned have[EEB_XCLBIN_NORIGINS];                /* bit per resource given, per origin */
    double used[EEB_XCLBIN_NORIGINS][EEB_XCLBIN_NRES]; /* 0 where not given */
};

struct eeb_xclbin_figures {
    int ncus; /* compute units with actual_resources; 0: the xclbin records none */
    struct eeb_xclbin_cu_figures cus[EEB_XCLBIN_MAX_FIGURED_CUS];
    double available[EEB_XCLBIN_NRES]; /* the platform's totals; -1 where it leaves one empty */
    char part[64];                     /* the platform's FPGA (xsa, else the kernel XML), or "" */
};

/* "LUT", "REG", "BRAM", "DSP", "URAM"; "routed", "fully_placed", "synthesized". */
const char *eeb_xclbin_res_name(enum eeb_xclbin_res res);
const char *eeb_xclbin_origin_name(enum eeb_xclbin_origin origin);

/*
 * Reads SYSTEM_METADATA's resources (docs/xclbin.md gives the JSON read):
 * out->ncus 0 if the xclbin has no such section or the section records no
 * compute unit's resources.  Every count and length is bounded; a section
 * that is not JSON, or a field eeb reads that has the wrong type or an
 * impossible value, is EEB_EFORMAT naming the file, the section and the
 * field ("fx.xclbin: SYSTEM_METADATA: ...compute_units[0].actual_resources[1]
 * .resources[2].used: 'x12' is not a count").
 */
int eeb_xclbin_figures(const struct eeb_xclbin_info *info, const char *name,
                       struct eeb_xclbin_figures *out, char *err, size_t errlen);

/* What M_u takes from the figures. */
struct eeb_xclbin_mu {
    enum eeb_xclbin_origin origin;     /* routed, or fully_placed if any unit has no routed */
    double used[EEB_XCLBIN_NRES];      /* the compute units' sums */
    double available[EEB_XCLBIN_NRES]; /* the platform's, FF from the part where it is empty */
    int ff_from_part;                  /* 1: the FF total is the part's (eeb_device) */
    struct eeb_util util;              /* the fractions; family "xclbin", device the part */
    char note[160];                    /* "FF total from the part xczu7ev: the platform leaves it
                                          empty", or "" */
};

/*
 * The utilization the figures give: each unit's routed figures, else its
 * fully_placed ones, summed, over the platform's totals.  A unit with
 * synthesized figures only, a resource M_u needs missing, a total over
 * the platform's, or an empty total the part table cannot fill (only FF
 * is filled, and only for the parts of fpga/model's boards) is
 * EEB_EFORMAT, naming the unit or resource.
 */
int eeb_xclbin_figures_mu(const struct eeb_xclbin_figures *figures, const char *name,
                          struct eeb_xclbin_mu *out, char *err, size_t errlen);

/*
 * M_u from an xclbin's own figures, as eeb run and eeb score take it:
 * EEB_ENODATA (err empty) if the xclbin records none, so that the caller
 * falls back to --util or eeb's USER_METADATA; else util and source ("SYSTEM_METADATA: routed
 * figures of 2 compute units", and the FF note) from the figures, every
 * error of eeb_xclbin_figures and _mu, and -- if given, a --util the user
 * gave too, named given_name -- EEB_EINVAL when its fractions and the
 * xclbin's are more than EEB_UTIL_AGREE apart (eeb_score_util_agree).
 */
int eeb_xclbin_m_u(const struct eeb_xclbin_info *info, const char *name,
                   const struct eeb_util *given, const char *given_name, struct eeb_util *util,
                   char *source, size_t source_len, char *err, size_t errlen);

#endif
