/*
 * accel_emu.c - the "emu" backend: the device image run by the emulator.
 * The default backend when there is no board.  Its threads and
 * instruction set are its own affair: results are the kernel's.
 */
#include "eeb_emu.h"
#include "fpga/accel/backends.h"
#include "fpga/fx/fxhost.h"

#include <stdio.h>
#include <unistd.h>

struct emu_accel {
    struct fxhost host; /* first: the handle is a struct fxhost */
    struct eeb_emu *emu;
};

/* The stats' detail: instruction set, threads, and the convolution
 * shapes oneDNN runs (which the emulator learns on the first steps). */
static void describe(struct emu_accel *a)
{
    int seen, by_onednn;
    eeb_emu_onednn_shapes(a->emu, &seen, &by_onednn);
    int len = snprintf(a->host.detail, sizeof a->host.detail, "%s, %d threads",
                       eeb_emu_isa_name(eeb_emu_isa(a->emu)), eeb_emu_threads(a->emu));
    if (by_onednn && len > 0 && (size_t)len < sizeof a->host.detail)
        snprintf(a->host.detail + len, sizeof a->host.detail - (size_t)len,
                 ", oneDNN %d/%d conv shapes", by_onednn, seen);
}

static int emu_run(struct fxhost *h, enum fx_program prog, char *err, size_t errlen)
{
    struct emu_accel *a = (struct emu_accel *)h;
    eeb_emu_run(a->emu, h->img.mem, prog);
    describe(a);
    return fxhost_check_status(h, err, errlen);
}

static int emu_open(const struct eeb_accel_config *cfg, struct eeb_accel **out, char *err,
                    size_t errlen)
{
    int rc = fxhost_open(sizeof(struct emu_accel), &eeb_accel_emu_ops, cfg, out, err, errlen);
    if (rc)
        return rc;
    struct emu_accel *a = (struct emu_accel *)*out;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cfg->threads > 0 ? cfg->threads : cores > 0 ? (int)cores : 1;
    a->emu = eeb_emu_new(threads, eeb_emu_gemm_best_isa());
    if (!a->emu) {
        fxhost_close(*out);
        *out = NULL;
        return eeb_errf(err, errlen, EEB_ENOMEM, "emu: cannot start %d worker threads", threads);
    }
    a->host.run = emu_run;
    describe(a);
    return EEB_OK;
}

static void emu_close(struct eeb_accel *acc)
{
    eeb_emu_free(((struct emu_accel *)acc)->emu);
    fxhost_close(acc);
}

const struct eeb_accel_ops eeb_accel_emu_ops = {
    .version = EEB_ACCEL_OPS_VERSION,
    .caps = EEB_ACCEL_CAP_FIXED_POINT,
    .name = "emu",
    .description = "fast CPU emulator of the accelerator (int8 GEMM, threads; bit-exact)",
    .open = emu_open,
    .load_model = fxhost_load_model,
    .train_batch = fxhost_train_batch,
    .predict = fxhost_predict,
    .read_model = fxhost_read_model,
    .stats = fxhost_stats,
    .close = emu_close,
};
