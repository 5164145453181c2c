/*
 * accel_kernel.c - the "kernel" backend: the HLS C of fpga/kernel run on
 * the CPU over the image in host memory.  Slow and simple; it is the
 * reference every other backend must match bit for bit.
 */
#include "fpga/kernel/fx_kernel.h"
#include "fpga/accel/backends.h"
#include "fpga/fx/fxhost.h"

#include <stdio.h>

static int kernel_run(struct fxhost *h, enum fx_program prog, char *err, size_t errlen)
{
    fx_kernel(h->img.mem, prog);
    return fxhost_check_status(h, err, errlen);
}

static int kernel_open(const struct eeb_accel_config *cfg, struct eeb_accel **out, char *err,
                       size_t errlen)
{
    int rc = fxhost_open(sizeof(struct fxhost), &eeb_accel_kernel_ops, cfg, out, err, errlen);
    if (rc == EEB_OK) {
        struct fxhost *h = (struct fxhost *)*out;
        h->run = kernel_run;
        snprintf(h->detail, sizeof h->detail, "HLS C on the CPU, PE array %dx%d", FX_BT, FX_CT);
    }
    return rc;
}

const struct eeb_accel_ops eeb_accel_kernel_ops = {
    .version = EEB_ACCEL_OPS_VERSION,
    .caps = EEB_ACCEL_CAP_FIXED_POINT,
    .name = "kernel",
    .description = "the accelerator's HLS C run on the CPU (bit-exact reference, slow)",
    .open = kernel_open,
    .load_model = fxhost_load_model,
    .train_batch = fxhost_train_batch,
    .predict = fxhost_predict,
    .read_model = fxhost_read_model,
    .stats = fxhost_stats,
    .close = fxhost_close,
};
