/*
 * eeb_accel.h - the one interface every accelerator backend implements
 * (SQLite's VFS shape): a constant table of functions per backend, and a
 * handle whose first member points back at it.  The harness drives
 * backends only through this table and never knows which one it has.
 *
 * Backends: "kernel" (the HLS C on the CPU, bit-exact reference), "emu"
 * (the fast int8 emulator), "fp32" (the float32 baseline on OpenBLAS);
 * "xrt" where XRT is built in.
 */
#ifndef EEB_ACCEL_H
#define EEB_ACCEL_H

#include "common/eeb_common.h"
#include "eeb_net.h"

#include <stddef.h>
#include <stdint.h>

struct eeb_accel_config {
    int batch_max;       /* items per call at most */
    int frozen;          /* leading learnable layers that are not trained */
    double lr, momentum; /* SGD */
    double weight_decay;
    uint64_t seed; /* stochastic rounding */
    int threads;   /* emulator workers, or fp32's OpenBLAS threads; 0: one per core for
                    * the emulator, one for fp32 (accel_fp32.c says why) */
    /* xrt: the xclbin to load, and the device index */
    const char *xclbin;
    int device;
};

/* Defaults: batch 32, nothing frozen, lr 0.01, momentum 0.9, decay 5e-4,
 * seed 1, threads 0. */
void eeb_accel_config_default(struct eeb_accel_config *cfg);

/* n items of uint8 HWC pixels, and their labels: one class per item
 * (softmax loss) or per grid cell six int32 (fx_grid_target: object flag,
 * class, then x, y, sqrt w, sqrt h in Q16). */
struct eeb_batch {
    int n;
    const uint8_t *pixels;
    const int32_t *labels;
};

struct eeb_train_result {
    double loss; /* mean over the batch */
    int correct; /* items (grid: object cells) whose top class is right */
};

struct eeb_accel_stats {
    uint64_t steps, items;   /* trained so far */
    uint64_t saturations[4]; /* fixed point: activations, errors, gradients, weights */
    char detail[64];         /* e.g. "avx512vnni, 2 threads" */
};

struct eeb_accel {
    const struct eeb_accel_ops *ops;
};

struct eeb_accel_ops {
    const char *name;
    const char *description;
    /* Returns EEB_OK and a handle, or a status with the reason in err. */
    int (*open)(const struct eeb_accel_config *cfg, struct eeb_accel **out, char *err,
                size_t errlen);
    /* Takes a copy of net's structure and weights (either format). */
    int (*load_model)(struct eeb_accel *a, const struct eeb_net *net, char *err, size_t errlen);
    /* One SGD step on a batch of 1..batch_max items. */
    int (*train_batch)(struct eeb_accel *a, const struct eeb_batch *b, struct eeb_train_result *r,
                       char *err, size_t errlen);
    /* Inference: n x outputs floats (the loss layer's input). */
    int (*predict)(struct eeb_accel *a, const struct eeb_batch *b, float *out, char *err,
                   size_t errlen);
    /* Copies the current weights into net, which must have the loaded
     * structure; fixed backends leave it in EEB_FORMAT_FX24. */
    int (*read_model)(struct eeb_accel *a, struct eeb_net *net, char *err, size_t errlen);
    void (*stats)(struct eeb_accel *a, struct eeb_accel_stats *s);
    void (*close)(struct eeb_accel *a);
    /* 1 if results come from a board, so times and power are a board's;
     * NULL or 0: the CPU does the device's work (emulators, XRT's noop shim) */
    int (*on_hardware)(void);
};

/* ops->on_hardware, if it has one and it says so. */
int eeb_accel_on_hardware(const struct eeb_accel_ops *ops);

/* EEB_OK, or EEB_EINVAL naming the field of cfg a backend cannot take;
 * every backend's open calls it. */
int eeb_accel_config_check(const struct eeb_accel_config *cfg, const char *backend, char *err,
                           size_t errlen);

/* Backends built in, NULL-terminated; a backend by name, or NULL. */
const struct eeb_accel_ops *const *eeb_accel_list(void);
const struct eeb_accel_ops *eeb_accel_find(const char *name);

/* Opens backend `name` and loads net into it: the usual first two calls. */
int eeb_accel_start(const char *name, const struct eeb_accel_config *cfg, const struct eeb_net *net,
                    struct eeb_accel **out, char *err, size_t errlen);

static inline void eeb_accel_close(struct eeb_accel *a)
{
    if (a)
        a->ops->close(a);
}

#endif
