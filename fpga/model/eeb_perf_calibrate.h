/*
 * eeb_perf_calibrate.h - what the analytical model is calibrated against:
 * the published KCU1500 design's per-layer table and resource table
 * (EEB_DESIGN_SEED001), and the pruned VGG-11 they describe.
 */
#ifndef EEB_PERF_CALIBRATE_H
#define EEB_PERF_CALIBRATE_H

#include "eeb_perf.h"

#define EEB_SEED001_ROWS 11

/* One layer: its dense GOP per batch of 32, and per phase (fwd, bwd_data,
 * bwd_weight) the time in microseconds, the bound ('C', 'M'; '-' where the
 * phase does not run) and the utilization. */
struct eeb_seed001_row {
    const char *name;
    double gop;
    double time_us[EEB_PHASES];
    const char bound[EEB_PHASES + 1];
    double util[EEB_PHASES];
};

extern const struct eeb_seed001_row eeb_seed001_table[EEB_SEED001_ROWS];

struct eeb_seed001_resources {
    double lut, ff, bram, dsp;
};
extern const struct eeb_seed001_resources eeb_seed001_used;

/* Kept kernels of row's layer, from its forward Perf. and Utilize. */
double eeb_seed001_density(int row);

/* VGG-11 for 32 x 32 x 3 (eight 3 x 3 convs, three fc), He-initialized
 * and pruned kernel-wise to those densities; NULL if out of memory. */
struct eeb_net *eeb_seed001_vgg11(void);

#endif
