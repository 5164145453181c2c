/*
 * accel_xrt.c - the "xrt" backend: the accelerator on an FPGA board
 * through XRT's C API (libxrt_coreutil).  The device image lives in one
 * buffer object in the bank the kernel's `mem` argument is connected to;
 * each program is: write the image, sync it to the device, start
 * fx_kernel(mem, prog), wait (with a timeout), sync back, read.
 *
 * Under XRT's noop shim (XCL_EMULATION_MODE=noop) every call succeeds but
 * no kernel runs: this backend then executes the kernel C on the buffer's
 * mapped memory between the start and the read back, so the whole host
 * path is XRT's and the results are the kernel's, bit for bit.  Such runs
 * are noop-emulated: their times are the CPU's, not a board's.
 *
 * XRT aborts the process (an uncaught C++ exception) when XILINX_XRT or
 * its shim is missing, so that is checked before the first XRT call.
 */
#include "fpga/tools/eeb_xclbin.h"
#include "fpga/kernel/fx_kernel.h"
#include "fpga/accel/backends.h"
#include "fpga/fx/fxhost.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

#define TIMEOUT_MS 600000u /* one program on a board: 10 minutes, then an error */

struct xrt_accel {
    struct fxhost host;
    xrtDeviceHandle dev;
    xrtKernelHandle kernel;
    xrtBufferHandle bo;
    uint8_t *map; /* the buffer's host memory (noop: where the kernel C runs) */
    size_t bo_bytes;
    int noop;
};

/* 1 under XRT's noop shim (XCL_EMULATION_MODE=noop). */
static int noop_shim(void)
{
    const char *mode = getenv("XCL_EMULATION_MODE");
    return mode && strcmp(mode, "noop") == 0;
}

/* Checks, without calling XRT, that XILINX_XRT names a directory whose
 * lib/ holds the shim XRT would load (noop, or the board's); XRT aborts
 * the process otherwise.  EEB_OK, or EEB_EDEVICE saying what to do. */
static int preflight(char *err, size_t errlen)
{
    const char *root = getenv("XILINX_XRT"), *mode = getenv("XCL_EMULATION_MODE");
    struct stat st;
    if (!root || !*root)
        return eeb_errf(err, errlen, EEB_EDEVICE,
                        "xrt: XILINX_XRT is not set (source /opt/xilinx/xrt/setup.sh for a board; "
                        "`make demo-xrt` sets up XRT's noop shim for a machine without one)");
    if (stat(root, &st) != 0)
        return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: XILINX_XRT=%s: %s", root, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: XILINX_XRT=%s: not a directory", root);
    if (mode && *mode && strcmp(mode, "noop") != 0)
        return eeb_errf(err, errlen, EEB_EDEVICE,
                        "xrt: XCL_EMULATION_MODE=%s needs Vitis' emulation libraries; eeb "
                        "supports noop (or unset it for a board)",
                        mode);
    /* XRT loads its shim from XILINX_XRT/lib: the noop shim, or the board's */
    char shim[4096];
    snprintf(shim, sizeof shim, "%s/lib/%s", root,
             mode && *mode ? "libxrt_noop.so.2" : "libxrt_core.so.2");
    if (access(shim, R_OK) != 0)
        return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: %s: %s (XRT's %s shim)", shim,
                        strerror(errno), mode && *mode ? "noop" : "hardware");
    return EEB_OK;
}

/* The xclbin must declare fx_kernel(mem, prog) as the host drives it. */
static int check_xclbin(const char *path, char *err, size_t errlen)
{
    struct eeb_xclbin_info *in;
    int rc = eeb_xclbin_read(path, &in, err, errlen);
    if (rc)
        return rc;
    const struct eeb_xclbin_kernel *k = eeb_xclbin_kernel(in, EEB_XCLBIN_KERNEL);
    char list[256] = "";
    if (!k) {
        for (int i = 0; i < in->nkernels; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                     in->kernels[i].name);
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: no kernel '%s' (it declares %s)", path,
                      EEB_XCLBIN_KERNEL, list[0] ? list : "none");
    } else if (k->ncus < 1) {
        rc =
            eeb_errf(err, errlen, EEB_EINVAL, "%s: kernel '%s' has no compute unit", path, k->name);
    } else if (k->nargs != 2 || k->args[0].id != 0 || !k->args[0].global || k->args[1].id != 1 ||
               k->args[1].global || k->args[1].size != 4) {
        for (int i = 0; i < k->nargs; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d %s (%s, %llu bytes)",
                     list[0] ? ", " : "", k->args[i].id, k->args[i].name,
                     k->args[i].global ? "global" : "scalar", (unsigned long long)k->args[i].size);
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: kernel '%s' must take 0 mem (global), 1 prog (scalar, 4 bytes); it "
                      "takes %s",
                      path, k->name, list[0] ? list : "none");
    }
    eeb_xclbin_info_free(in);
    return rc;
}

static int xrt_run(struct fxhost *h, enum fx_program prog, char *err, size_t errlen)
{
    struct xrt_accel *x = (struct xrt_accel *)h;
    size_t bytes = h->img.bytes;
    if (x->bo && x->bo_bytes != bytes) {
        xrtBOFree(x->bo);
        x->bo = NULL;
    }
    if (!x->bo) {
        int group = xrtKernelArgGroupId(x->kernel, 0);
        if (group < 0)
            return eeb_errf(err, errlen, EEB_EDEVICE,
                            "xrt: fx_kernel's mem argument has no memory bank (%d): the "
                            "xclbin's CONNECTIVITY",
                            group);
        /* whole pages: XRT backs a buffer with aligned_alloc(4096, size),
         * which C11 defines only for sizes that are multiples of 4096 */
        size_t pages = (bytes + 4095) & ~(size_t)4095;
        x->bo = xrtBOAlloc(x->dev, pages, XRT_BO_FLAGS_NONE, (xrtMemoryGroup)group);
        x->map = x->bo ? xrtBOMap(x->bo) : NULL;
        if (!x->map)
            return eeb_errf(err, errlen, EEB_EDEVICE,
                            "xrt: a %zu-byte buffer in bank %d could not be allocated and mapped",
                            bytes, group);
        if ((uintptr_t)x->map % 64)
            return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: the buffer is not 64-byte aligned");
        x->bo_bytes = bytes;
    }
    if (xrtBOWrite(x->bo, h->img.mem, bytes, 0) ||
        xrtBOSync(x->bo, XCL_BO_SYNC_BO_TO_DEVICE, bytes, 0))
        return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: writing the %zu-byte image failed", bytes);
    xrtRunHandle run = xrtKernelRun(x->kernel, x->bo, (unsigned)prog);
    if (!run)
        return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: fx_kernel did not start (program %d)",
                        (int)prog);
    enum ert_cmd_state st = xrtRunWaitFor(run, TIMEOUT_MS);
    xrtRunClose(run);
    if (st != ERT_CMD_STATE_COMPLETED)
        return eeb_errf(err, errlen,
                        st == ERT_CMD_STATE_TIMEOUT || st == ERT_CMD_STATE_RUNNING ||
                                st == ERT_CMD_STATE_QUEUED || st == ERT_CMD_STATE_SUBMITTED
                            ? EEB_ETIMEOUT
                            : EEB_EDEVICE,
                        "xrt: fx_kernel program %d ended in state %d, not completed (timeout "
                        "%u ms)",
                        (int)prog, (int)st, TIMEOUT_MS);
    if (x->noop)
        fx_kernel(x->map, (uint32_t)prog); /* the work the noop shim's device skipped */
    if (xrtBOSync(x->bo, XCL_BO_SYNC_BO_FROM_DEVICE, bytes, 0) ||
        xrtBORead(x->bo, h->img.mem, bytes, 0))
        return eeb_errf(err, errlen, EEB_EDEVICE, "xrt: reading the image back failed");
    return fxhost_check_status(h, err, errlen);
}

static void xrt_close(struct eeb_accel *a)
{
    struct xrt_accel *x = (struct xrt_accel *)a;
    if (x->bo)
        xrtBOFree(x->bo);
    if (x->kernel)
        xrtKernelClose(x->kernel);
    if (x->dev)
        xrtDeviceClose(x->dev);
    fxhost_close(a);
}

static int xrt_open(const struct eeb_accel_config *cfg, struct eeb_accel **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (!cfg->xclbin)
        return eeb_errf(err, errlen, EEB_EINVAL, "xrt: no xclbin given (--xclbin FILE)");
    int rc = check_xclbin(cfg->xclbin, err, errlen);
    if (rc == EEB_OK)
        rc = preflight(err, errlen);
    if (rc == EEB_OK)
        rc = fxhost_open(sizeof(struct xrt_accel), &eeb_accel_xrt_ops, cfg, out, err, errlen);
    if (rc)
        return rc;
    struct xrt_accel *x = (struct xrt_accel *)*out;
    x->noop = noop_shim();
    x->host.run = xrt_run;
    xuid_t uuid;
    if (!(x->dev = xrtDeviceOpen((unsigned)cfg->device)))
        rc = eeb_errf(err, errlen, EEB_EDEVICE,
                      "xrt: no device %d (is the board's driver loaded? `xbutil examine`)",
                      cfg->device);
    else if (xrtDeviceLoadXclbinFile(x->dev, cfg->xclbin) != 0)
        rc = eeb_errf(err, errlen, EEB_EDEVICE, "xrt: device %d refused %s (see XRT's message)",
                      cfg->device, cfg->xclbin);
    else if (xrtDeviceGetXclbinUUID(x->dev, uuid) != 0 ||
             !(x->kernel = xrtPLKernelOpen(x->dev, uuid, EEB_XCLBIN_KERNEL)))
        rc = eeb_errf(err, errlen, EEB_EDEVICE, "xrt: %s: kernel '%s' could not be opened",
                      cfg->xclbin, EEB_XCLBIN_KERNEL);
    if (rc) {
        xrt_close(*out);
        *out = NULL;
        return rc;
    }
    snprintf(x->host.detail, sizeof x->host.detail, "%s, device %d%s", EEB_XCLBIN_KERNEL,
             cfg->device, x->noop ? ", noop-emulated (kernel C)" : "");
    return EEB_OK;
}

/* Under XRT's noop shim the kernel C does the board's work on the CPU. */
static int xrt_on_hardware(void)
{
    return !noop_shim();
}

const struct eeb_accel_ops eeb_accel_xrt_ops = {
    .version = EEB_ACCEL_OPS_VERSION,
    .caps = EEB_ACCEL_CAP_BOARD | EEB_ACCEL_CAP_FIXED_POINT,
    .name = "xrt",
    .description = "an FPGA board through XRT (--xclbin; under the noop shim, the kernel C)",
    .open = xrt_open,
    .load_model = fxhost_load_model,
    .train_batch = fxhost_train_batch,
    .predict = fxhost_predict,
    .read_model = fxhost_read_model,
    .stats = fxhost_stats,
    .close = xrt_close,
    .on_hardware = xrt_on_hardware,
};
