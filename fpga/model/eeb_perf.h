/*
 * eeb_perf.h - the analytical model of the reference accelerator: a PE
 * array of `pes` processing elements, each with `macs` int8 MAC lanes that
 * take one batch item each (DarkFPGA's batch-level parallelism), fed from
 * DDR4 through on-chip buffers.  For a network it predicts, per learnable
 * layer and phase (forward, backward-data, backward-weight), the time, the
 * bound (compute or memory) and the PE array's utilization; for the design,
 * LUT/FF/BRAM/DSP and power.  Everything here is modeled, never measured:
 * fpga/model/README.md derives each constant and lists the residuals
 * against the published KCU1500 design's table.  Sections: the design, resources, the
 * per-layer costs, power.
 */
#ifndef EEB_PERF_H
#define EEB_PERF_H

#include "eeb_device.h"
#include "fpga/net/eeb_net.h"

#include <stddef.h>

/* ---- the design ---- */

enum eeb_mult { EEB_MULT_DSP, EEB_MULT_DSP2, EEB_MULT_LUT };

struct eeb_design {
    const struct eeb_device *device;
    int pes, macs;      /* PEs; MAC lanes per PE, one batch item each */
    double clock_mhz;   /* the PE array's clock */
    int ddr;            /* DDR4 channels the design uses */
    int act_bits;       /* activations and errors: 8 */
    int weight_bits;    /* stored (master) weights: 24 */
    int acc_bits;       /* accumulators: 32 */
    enum eeb_mult mult; /* a MAC's multiplier: a DSP, half a DSP (two int8
                           products sharing the weight), or LUTs */
    int acc_depth;      /* accumulator words per lane, ping-pong doubled */
    int act_kib;        /* activation buffer, ping-pong doubled */
    int weight_kib;     /* weight buffer, ping-pong doubled */
};

/* Seed 001's design: KCU1500, 32 PEs x 32 MACs, 250 MHz, 2 DDR4 channels,
 * 8/24/32 bits, one DSP per MAC, its buffers. */
#define EEB_DESIGN_SEED001 "device=kcu1500,pes=32,macs=32,clock_mhz=250,ddr=2"

void eeb_design_default(struct eeb_design *d);

/* Applies "key=value,..." over d (keys as in struct eeb_design; mult=dsp|
 * dsp2|lut; device by name).  Errors name the key and the accepted range. */
int eeb_design_parse(struct eeb_design *d, const char *spec, char *err, size_t errlen);

/* The design as a spec eeb_design_parse reads back (every key). */
void eeb_design_format(const struct eeb_design *d, char *buf, size_t len);

/* ---- resources ---- */

struct eeb_resources {
    double lut, ff, bram, dsp; /* used (BRAM in 36 Kb blocks) */
    double frac[4];            /* of the device's: lut, ff, bram, dsp */
    double m_u;                /* their mean, as eeb_score_m_u */
    int fits;                  /* every fraction <= 1 */
};

void eeb_design_resources(const struct eeb_design *d, struct eeb_resources *r);

/* "lut=..,ff=..,bram=..,dsp=.." for eeb_score_util_from_spec. */
void eeb_resources_spec(const struct eeb_resources *r, char *buf, size_t len);

/* ---- buffers ---- */

/* Entries of a compressed-sparse block (the published KCU1500 design's CSB), the unit a PE's
 * weights arrive in. */
#define EEB_CSB_BLOCK 32

/*
 * The smallest buffers net needs on d at this batch: the activation buffer
 * holds k input rows of the widest conv window for a batch tile, a lane's
 * accumulators one output row of its PE's channels, the weight buffer one
 * CSB block per PE.  acc_depth and the KiB are rounded up to powers of two.
 */
void eeb_perf_buffers(const struct eeb_design *d, const struct eeb_net *net, int *acc_depth,
                      int *act_kib, int *weight_kib);

/* eeb_design_default, then spec over it, with the buffers the spec does
 * not name sized to net (eeb_perf_buffers). */
int eeb_design_for(struct eeb_design *d, const char *spec, const struct eeb_net *net, char *err,
                   size_t errlen);

/* ---- per-layer costs ---- */

enum eeb_phase { EEB_PHASE_FWD, EEB_PHASE_BWD_DATA, EEB_PHASE_BWD_WEIGHT, EEB_PHASES };

const char *eeb_phase_name(enum eeb_phase p); /* "fwd", "bwd_data", "bwd_weight" */

struct eeb_phase_cost {
    int runs;         /* 0: this phase does not run for the layer */
    double ops;       /* dense operations, 2 per MAC (the "GOP" of the published KCU1500 design) */
    double compute_s; /* the PE array's time on the kept (nonzero) work */
    double memory_s;  /* DDR transactions' time */
    double time_s;    /* setup + max(compute, memory) */
    char bound;       /* 'C' or 'M' */
    double util;      /* compute_s / time_s: the PE array's busy fraction */
    double bytes;     /* DDR bytes moved */
    double power_w;   /* while it runs */
};

struct eeb_layer_cost {
    int layer;      /* index in the network */
    int cin, cout;  /* fc: cin is the flattened input */
    int h, w, k;    /* output size, window */
    int h_in, w_in; /* input size (fc: 1 x 1) */
    double density; /* kept kernels (conv) or weights (fc) of all */
    struct eeb_phase_cost phase[EEB_PHASES];
};

struct eeb_perf {
    int nlayers; /* learnable layers */
    struct eeb_layer_cost *layers;
    int batch;
    double train_step_s, predict_batch_s; /* one batch */
    double train_step_j, predict_batch_j;
    double train_power_w, predict_power_w; /* their energy over their time */
    double idle_power_w;                   /* configured, not computing */
    struct eeb_resources res;
};

/*
 * Models a training step and a prediction of `batch` items of net on d, with
 * the first `frozen` learnable layers not trained (forward only; backward
 * stops above them).  Densities are measured from net's current weights:
 * a conv kernel (k x k) is kept if any of its weights is nonzero (the published KCU1500 design's
 * kernel-wise pruning), an fc weight if it is nonzero.  A design whose
 * buffers are smaller than eeb_perf_buffers asks is an error naming the
 * buffer and the size it needs.
 */
int eeb_perf_model(const struct eeb_design *d, const struct eeb_net *net, int batch, int frozen,
                   struct eeb_perf *out, char *err, size_t errlen);

/* Measuring the densities reads every weight (45 MB for a ResNet-18), so a
 * caller that models many designs of one network measures them once:
 * eeb_perf_densities writes one per learnable layer, in order, into out
 * (as many as there are learnable layers) and returns the count, and
 * eeb_perf_model_at takes them (NULL: measured, as eeb_perf_model). */
int eeb_perf_densities(const struct eeb_net *net, double *out);
int eeb_perf_model_at(const struct eeb_design *d, const struct eeb_net *net,
                      const double *densities, int batch, int frozen, struct eeb_perf *out,
                      char *err, size_t errlen);
void eeb_perf_free(struct eeb_perf *p);

#endif
