/*
 * fxhost.h - shared by the fixed-point backends: the part of one that
 * is the same whatever runs the image (compile, load, batches in, results
 * out).  A backend supplies `run`, which executes one program of the image
 * on its device, and fills its ops table with fxhost_* functions.
 */
#ifndef EEB_FXHOST_H
#define EEB_FXHOST_H

#include "fpga/accel/eeb_accel.h"
#include "fpga/fx/eeb_fx.h"

struct fxhost {
    struct eeb_accel base;
    struct eeb_accel_config cfg;
    struct eeb_fx_image img;
    struct eeb_net *net; /* structure of the loaded model */
    uint64_t steps, items;
    /* Runs program prog on the image; EEB_OK or EEB_EDEVICE with err. */
    int (*run)(struct fxhost *h, enum fx_program prog, char *err, size_t errlen);
    char detail[64];
};

/* Allocates a handle of `size` bytes (a backend struct that starts with
 * struct fxhost) for ops. */
int fxhost_open(size_t size, const struct eeb_accel_ops *ops, const struct eeb_accel_config *cfg,
                struct eeb_accel **out, char *err, size_t errlen);
void fxhost_close(struct eeb_accel *a);

int fxhost_load_model(struct eeb_accel *a, const struct eeb_net *net, char *err, size_t errlen);
int fxhost_train_batch(struct eeb_accel *a, const struct eeb_batch *b, struct eeb_train_result *r,
                       char *err, size_t errlen);
int fxhost_predict(struct eeb_accel *a, const struct eeb_batch *b, float *out, char *err,
                   size_t errlen);
int fxhost_read_model(struct eeb_accel *a, struct eeb_net *net, char *err, size_t errlen);
void fxhost_stats(struct eeb_accel *a, struct eeb_accel_stats *s);

/* The kernel's status after a run, as an error naming the command. */
int fxhost_check_status(struct fxhost *h, char *err, size_t errlen);

#endif
