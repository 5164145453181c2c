/*
 * eeb_accel.h - the one interface every accelerator backend implements
 * (SQLite's VFS shape): a constant table of functions per backend, and a
 * handle whose first member points back at it.  The harness drives
 * backends only through this table and never knows which one it has.
 *
 * Backends: "kernel" (the HLS C on the CPU, bit-exact reference), "emu"
 * (the fast int8 emulator), "fp32" (the float32 baseline on OpenBLAS);
 * "xrt" where XRT is built in; "faulty:BACKEND?..." any of them, slowed,
 * stalled or failing on chosen batches (fpga/accel/accel_faulty.c).
 *
 * A table starts with its version and capabilities; slots marked
 * "optional" may be NULL, and callers say what NULL means where they
 * call them (here, through eeb_accel_on_hardware).
 */
#ifndef EEB_ACCEL_H
#define EEB_ACCEL_H

#include "common/eeb_common.h"
#include "fpga/net/eeb_net.h"

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
    int portable;  /* fp32: every GEMM in a fixed order, not OpenBLAS's: the same bits on
                    * any machine, slower (eeb model pretrain's base models) */
    /* xrt: the xclbin to load, and the device index */
    const char *xclbin;
    int device;
    /* the backend as it was asked for ("faulty:emu?delay_ms=20"): a wrapper
     * reads what it wraps from it; eeb_accel_open sets it, default NULL */
    const char *name;
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

/* The layout of struct eeb_accel_ops this eeb knows (SQLite's iVersion):
 * a table says which one it was written against, and the registry refuses
 * a table of another.  version, caps and name keep their places in every
 * version, so that a refusal can name the backend. */
#define EEB_ACCEL_OPS_VERSION 1

/* What a backend is (curl's features): ops->caps, bits of these. */
enum eeb_accel_cap {
    EEB_ACCEL_CAP_BOARD = 1u << 0,       /* its results come from a board, so times and
                                          * power are a board's (on_hardware may say not) */
    EEB_ACCEL_CAP_FIXED_POINT = 1u << 1, /* trains the device's fixed point: read_model
                                          * leaves EEB_FORMAT_FX24, stats count saturations */
    EEB_ACCEL_CAP_WRAPPER = 1u << 2,     /* wraps another backend: opened by name as
                                          * "NAME:BACKEND[?options]" (eeb_accel_find) */
};

struct eeb_accel_ops {
    int version;   /* EEB_ACCEL_OPS_VERSION, first: what the rest of the table is */
    unsigned caps; /* enum eeb_accel_cap bits */
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
    /* optional: NULL means a backend with EEB_ACCEL_CAP_BOARD is always on
     * its board.  0 when the CPU stands in for the board this time (xrt
     * under XRT's noop shim); ask through eeb_accel_on_hardware. */
    int (*on_hardware)(void);
    /* optional: NULL means the name says all (not a wrapper).  EEB_OK if
     * name, as eeb_accel_find matched it, is one open would take (a
     * wrapper's options, the backend it wraps), else why not; asked
     * through eeb_accel_check_name, before anything is recorded. */
    int (*check_name)(const char *name, char *err, size_t errlen);
};

/* 1 if ops' results come from a board now: it has EEB_ACCEL_CAP_BOARD and
 * its on_hardware, if any, agrees.  The one way to ask. */
int eeb_accel_on_hardware(const struct eeb_accel_ops *ops);

/* 1 if backend names one of eeb's accelerators that never runs on a board
 * (the emulators, the kernel C, fp32, or faulty: around one of them): a
 * run on it has the CPU's time and a modeled power, whatever meter it had,
 * so its provenance is modeled.  0 for a board's backend (xrt), a team's
 * SUT, or a name eeb does not know. */
int eeb_accel_never_on_board(const char *backend);

/* EEB_OK if this eeb can drive ops: its version is EEB_ACCEL_OPS_VERSION and
 * every slot not marked optional is filled; else EEB_EVERSION or EEB_EINVAL
 * naming the backend.  eeb_accel_open checks every table it opens; check a
 * table of your own before calling it. */
int eeb_accel_ops_check(const struct eeb_accel_ops *ops, char *err, size_t errlen);

/* EEB_OK, or EEB_EINVAL naming the field of cfg a backend cannot take;
 * every backend's open calls it. */
int eeb_accel_config_check(const struct eeb_accel_config *cfg, const char *backend, char *err,
                           size_t errlen);

/* Backends built in, NULL-terminated (a wrapper by its prefix, "faulty"). */
const struct eeb_accel_ops *const *eeb_accel_list(void);

/* The backend name calls for, or NULL: a built-in's name ("emu"), or a
 * wrapper's prefix and what it wraps ("faulty:emu?delay_ms=20"). */
const struct eeb_accel_ops *eeb_accel_find(const char *name);

/* EEB_OK if name is a backend of this build that eeb_accel_open would
 * take, else EEB_EINVAL saying why (listing the backends built in). */
int eeb_accel_check_name(const char *name, char *err, size_t errlen);

/* Opens backend `name` (as eeb_accel_find takes it) with cfg, its
 * cfg->name set to name so that a wrapper learns what it wraps: EEB_OK
 * and a handle, EEB_EINVAL for a name no backend answers to, or the
 * table's check or open's status, with the reason in err. */
int eeb_accel_open(const char *name, const struct eeb_accel_config *cfg, struct eeb_accel **out,
                   char *err, size_t errlen);

/* Opens backend `name` and loads net into it: the usual first two calls. */
int eeb_accel_start(const char *name, const struct eeb_accel_config *cfg, const struct eeb_net *net,
                    struct eeb_accel **out, char *err, size_t errlen);

static inline void eeb_accel_close(struct eeb_accel *a)
{
    if (a)
        a->ops->close(a);
}

#endif
