/*
 * test_xrt.c - the FPGA path without a board: the xclbin writer and
 * reader, then XRT's real host path under its noop shim -- the xclbin
 * loads, XRT reads fx_kernel's arguments from it, a buffer makes the round
 * trip, and a tiny fine-tune through the xrt backend is bit-identical to
 * the emulator's -- and the errors a user meets before any of it works.
 * Criterion runs each test in a process of its own, as XRT needs: it
 * reads the emulation mode once per process.
 */
#include "fpga/accel/eeb_accel.h"
#include "fpga/net/eeb_model.h"
#include "scoring/eeb_score.h"
#include "tasks/eeb_tasks.h"
#include "fpga/tools/eeb_xclbin.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>

static char xclbin[300];

/* The reference xclbin, written by the writer under test. */
static const char *build(const char *design, const char *util)
{
    char err[512];
    snprintf(xclbin, sizeof xclbin, "%s/fx.xclbin", test_tmpdir());
    struct eeb_xclbin_spec spec = {design, util ? util : EEB_XCLBIN_UTIL,
                                   util ? "given" : EEB_XCLBIN_UTIL_SOURCE, NULL, 0};
    cr_assert_eq(eeb_xclbin_build(xclbin, &spec, err, sizeof err), EEB_OK, "%s", err);
    return xclbin;
}

/* XILINX_XRT at a directory whose lib/ links Debian's core and noop shim. */
static void noop_shim(void)
{
    const char *dir = test_tmpdir();
    test_mkdirs(dir, "lib");
    static const char *const libs[] = {"libxrt_core.so.2", "libxrt_noop.so.2"};
    for (int i = 0; i < 2; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s", EEB_XRT_LIBDIR, libs[i]);
        snprintf(to, sizeof to, "%s/lib/%s", dir, libs[i]);
        cr_assert_eq(symlink(from, to), 0, "%s -> %s", to, from);
    }
    setenv("XILINX_XRT", dir, 1);
    setenv("XCL_EMULATION_MODE", "noop", 1);
}

/* ---- the xclbin, written and read back ---- */

Test(xclbin, what_the_writer_writes_the_reader_reads)
{
    build("device=zcu104,clock_mhz=200,ddr=1,pes=16", "lut=0.5,ff=0.25,bram=0.75,dsp=0.125");
    char err[512];
    struct eeb_xclbin_info *in;
    cr_assert_eq(eeb_xclbin_read(xclbin, &in, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_str_eq(in->platform, "xilinx_zcu104_base_202210_1");
    cr_expect_eq(in->nsections, 5);
    static const char *const kinds[] = {"MEM_TOPOLOGY", "IP_LAYOUT", "CONNECTIVITY",
                                        "EMBEDDED_METADATA", "USER_METADATA"};
    for (int i = 0; i < 5 && i < in->nsections; i++)
        cr_expect_str_eq(in->sections[i].kind_name, kinds[i]);
    cr_expect_eq(in->nmems, 1);
    cr_expect_str_eq(in->mems[0].tag, "bank0");
    const struct eeb_xclbin_kernel *k = eeb_xclbin_kernel(in, EEB_XCLBIN_KERNEL);
    cr_assert_not_null(k);
    cr_expect_eq(k->clock_mhz, 200);
    cr_assert_eq(k->ncus, 1);
    cr_expect_str_eq(k->cus[0].name, EEB_XCLBIN_CU);
    cr_expect_eq(k->cus[0].control, 0); /* ap_ctrl_hs */
    /* fx_kernel(uint8_t *mem, uint32_t prog): a buffer in bank 0, a scalar */
    cr_assert_eq(k->nargs, 2);
    cr_expect_str_eq(k->args[0].name, "mem");
    cr_expect(k->args[0].global && k->args[0].offset == 0x10 && k->args[0].size == 8);
    cr_expect_eq(k->args[0].mem, 0);
    cr_expect_str_eq(k->args[1].name, "prog");
    cr_expect(!k->args[1].global && k->args[1].offset == 0x1c && k->args[1].size == 4);
    cr_expect_eq(k->args[1].mem, -1);
    struct eeb_util u;
    char source[128];
    cr_assert_eq(eeb_xclbin_util(in, &u, source, sizeof source, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_expect_eq(eeb_score_m_u(&u), (0.5 + 0.25 + 0.75 + 0.125) / 4);
    cr_expect_str_eq(source, "given");
    json_t *meta = json_loads(in->user_metadata, 0, NULL);
    json_t *design = json_object_get(meta, "design");
    cr_expect_eq(json_number_value(json_object_get(design, "pes")), 16);
    cr_expect_eq(json_number_value(json_object_get(design, "macs")), 32); /* the default's */
    json_decref(meta);
    eeb_xclbin_info_free(in);
}

Test(xclbin, the_same_design_gives_the_same_bytes)
{
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
    size_t n1, n2;
    char *a = test_read_file(build(NULL, NULL), &n1);
    char *b = test_read_file(build(NULL, NULL), &n2);
    cr_expect(n1 == n2 && memcmp(a, b, n1) == 0);
    char *c = test_read_file(build("pes=64", NULL), &n2);
    cr_expect(n1 != n2 || memcmp(a, c, n1) != 0, "another design, the same bytes");
    free(a), free(b), free(c);
}

Test(xclbin, damaged_files_are_named_and_refused)
{
    size_t len;
    char *good = test_read_file(build(NULL, NULL), &len);
    char err[512];
    struct eeb_xclbin_info *in;
    /* truncated */
    cr_expect_eq(eeb_xclbin_parse((uint8_t *)good, len - 1, "t.xclbin", &in, err, sizeof err),
                 EEB_EFORMAT);
    cr_expect(strstr(err, "t.xclbin: the header says"), "%s", err);
    /* not an xclbin */
    cr_expect_eq(eeb_xclbin_parse((uint8_t *)"hello", 5, "h.xclbin", &in, err, sizeof err),
                 EEB_EFORMAT);
    cr_expect(strstr(err, "no 'xclbin2' magic"), "%s", err);
    /* a section running past the end: its size field (offsetof 32 in the
     * header at 456 + 40 i) made huge */
    char *bad = malloc(len);
    memcpy(bad, good, len);
    uint64_t huge = 1ull << 40;
    memcpy(bad + 456 + 40 * 2 + 32, &huge, 8);
    cr_expect_eq(eeb_xclbin_parse((uint8_t *)bad, len, "s.xclbin", &in, err, sizeof err),
                 EEB_EFORMAT);
    cr_expect(strstr(err, "section 2 (CONNECTIVITY)") && strstr(err, "run past the end"), "%s",
              err);
    /* a count larger than its section */
    memcpy(bad, good, len);
    struct eeb_xclbin_info *ok;
    cr_assert_eq(eeb_xclbin_parse((uint8_t *)good, len, "g", &ok, err, sizeof err), EEB_OK);
    int32_t many = 1000;
    memcpy(bad + ok->sections[0].offset, &many, 4);
    eeb_xclbin_info_free(ok);
    cr_expect_eq(eeb_xclbin_parse((uint8_t *)bad, len, "c.xclbin", &in, err, sizeof err),
                 EEB_EFORMAT);
    cr_expect(strstr(err, "MEM_TOPOLOGY: a count of 1000"), "%s", err);
    free(bad), free(good);
}

Test(xclbin, bad_designs_name_the_value_at_fault)
{
    char err[512];
    snprintf(xclbin, sizeof xclbin, "%s/fx.xclbin", test_tmpdir());
    struct eeb_xclbin_spec spec = {"device=vu9p", EEB_XCLBIN_UTIL, "declared", NULL, 0};
    cr_expect_eq(eeb_xclbin_build(xclbin, &spec, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "device 'vu9p' is not a board eeb knows"), "%s", err);
    spec.design = "ddr=3,device=zcu102";
    cr_expect_eq(eeb_xclbin_build(xclbin, &spec, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "ddr must be 1..1 channels on the zcu102"), "%s", err);
}

Test(xclbin, eeb_xclbin_info_prints_the_kernel)
{
    struct test_run r =
        test_eeb((const char *[]){"xclbin", "build", "-o", build(NULL, NULL), NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"xclbin", "info", xclbin, NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    static const char *const lines[] = {
        "platform  xilinx_kcu1500_dynamic_5_0",
        "fx_kernel: 1 compute unit, clock 250 MHz",
        "cu fx_kernel_1      at 0x1800000, ap_ctrl_hs",
        "arg 0 mem      unsigned char*   global offset 0x10, 8 bytes, in bank0",
        "arg 1 prog     unsigned int     scalar offset 0x1c, 4 bytes",
        "utilization (modeled: fpga/model, default buffers)",
        "M_u   0.2909", /* the published KCU1500 design's 0.2913, as the model reproduces it */
        "design    clock_mhz=250 ddr=2 device=kcu1500 macs=32 pes=32",
    };
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        cr_expect(strstr(r.out, lines[i]), "no '%s' in\n%s", lines[i], r.out);
    test_run_free(&r);
}

/* ---- XRT, under the noop shim ---- */

Test(xrt, the_xclbin_loads_and_xrt_reads_its_arguments)
{
    build(NULL, NULL);
    noop_shim();
    xrtDeviceHandle dev = xrtDeviceOpen(0);
    cr_assert_not_null(dev);
    cr_assert_eq(xrtDeviceLoadXclbinFile(dev, xclbin), 0);
    xuid_t uuid;
    cr_assert_eq(xrtDeviceGetXclbinUUID(dev, uuid), 0);
    xrtKernelHandle k = xrtPLKernelOpen(dev, uuid, EEB_XCLBIN_KERNEL);
    cr_assert_not_null(k);
    /* XRT's own reading of the metadata: mem in bank 0 at 0x10, prog at 0x1c */
    cr_expect_eq(xrtKernelArgGroupId(k, 0), 0);
    cr_expect_eq(xrtKernelArgOffset(k, 0), 0x10);
    cr_expect_eq(xrtKernelArgOffset(k, 1), 0x1c);
    /* a buffer's round trip: written, synced both ways, mapped and read */
    enum { N = 1 << 16 };
    xrtBufferHandle bo = xrtBOAlloc(dev, N, XRT_BO_FLAGS_NONE, (xrtMemoryGroup)0);
    cr_assert_not_null(bo);
    uint8_t *in = malloc(N), *out = malloc(N);
    for (int i = 0; i < N; i++)
        in[i] = (uint8_t)(i * 7 + 3);
    cr_expect_eq(xrtBOWrite(bo, in, N, 0), 0);
    cr_expect_eq(xrtBOSync(bo, XCL_BO_SYNC_BO_TO_DEVICE, N, 0), 0);
    cr_expect_eq(xrtBOSync(bo, XCL_BO_SYNC_BO_FROM_DEVICE, N, 0), 0);
    cr_expect_eq(xrtBORead(bo, out, N, 0), 0);
    cr_expect_eq(memcmp(in, out, N), 0);
    const uint8_t *map = xrtBOMap(bo);
    cr_assert_not_null(map);
    cr_expect_eq(memcmp(in, map, N), 0);
    /* a run starts and completes (the noop device does no work) */
    xrtRunHandle run = xrtKernelRun(k, bo, 1u);
    cr_assert_not_null(run);
    cr_expect_eq(xrtRunWaitFor(run, 10000), ERT_CMD_STATE_COMPLETED);
    xrtRunClose(run);
    free(in), free(out);
    xrtBOFree(bo);
    xrtKernelClose(k);
    xrtDeviceClose(dev);
}

#define SIDE    8
#define CLASSES 4

static struct eeb_net *tiny_net(void)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){SIDE, SIDE, 3});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 8, 3, 1, 1));
    l = eeb_net_maxpool(net, l, 2, 2, 0);
    l = eeb_net_fc(net, eeb_net_flatten(net, l), CLASSES);
    cr_assert(eeb_net_softmax_ce(net, l) >= 0, "%s", net->err);
    eeb_net_init(net, 5);
    return net;
}

/* Trains steps batches of 16 and predicts one: the losses, the outputs
 * and the weights read back, for comparing backends. */
struct trace {
    double loss[8];
    float out[16 * CLASSES];
    struct eeb_net *weights;
};

static void trace_backend(const char *backend, const struct eeb_net *net, struct trace *t)
{
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = 16;
    cfg.xclbin = xclbin;
    char err[512];
    struct eeb_accel *a;
    cr_assert_eq(eeb_accel_start(backend, &cfg, net, &a, err, sizeof err), EEB_OK, "%s: %s",
                 backend, err);
    uint8_t px[16 * SIDE * SIDE * 3];
    int32_t labels[16];
    uint64_t s = 42;
    for (int step = 0; step < 8; step++) {
        for (size_t i = 0; i < sizeof px; i++)
            px[i] = (uint8_t)(eeb_splitmix64(&s) >> 56);
        for (int i = 0; i < 16; i++)
            labels[i] = (int32_t)(eeb_splitmix64(&s) % CLASSES);
        struct eeb_batch b = {16, px, labels};
        struct eeb_train_result r;
        cr_assert_eq(a->ops->train_batch(a, &b, &r, err, sizeof err), EEB_OK, "%s", err);
        t->loss[step] = r.loss;
    }
    struct eeb_batch b = {16, px, NULL};
    cr_assert_eq(a->ops->predict(a, &b, t->out, err, sizeof err), EEB_OK, "%s", err);
    t->weights = eeb_net_clone(net);
    cr_assert_eq(a->ops->read_model(a, t->weights, err, sizeof err), EEB_OK, "%s", err);
    eeb_accel_close(a);
}

Test(xrt, a_fine_tune_through_xrt_is_bit_identical_to_the_emulator, .timeout = 60)
{
    build(NULL, NULL);
    noop_shim();
    const struct eeb_accel_ops *ops = eeb_accel_find("xrt");
    cr_assert_not_null(ops);
    cr_expect(!eeb_accel_on_hardware(ops), "noop runs are not a board's");
    struct eeb_net *net = tiny_net();
    struct trace x, e;
    trace_backend("xrt", net, &x);
    trace_backend("emu", net, &e);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(x.loss[i], e.loss[i], "step %d: loss %.17g on xrt, %.17g on emu", i, x.loss[i],
                     e.loss[i]);
    cr_expect(x.loss[7] != x.loss[0], "the loss never moved: nothing trained");
    cr_expect_eq(memcmp(x.out, e.out, sizeof x.out), 0, "the predictions differ");
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *p = &x.weights->layers[i], *q = &e.weights->layers[i];
        if (!eeb_layer_learnable(p))
            continue;
        cr_expect_eq(p->we, q->we, "layer %d exponent", i);
        cr_expect_eq(memcmp(p->wq, q->wq, (size_t)p->rows * p->out.c * 4), 0, "layer %d", i);
        cr_expect_eq(memcmp(p->bq, q->bq, (size_t)p->out.c * 4), 0, "layer %d biases", i);
    }
    eeb_net_free(x.weights), eeb_net_free(e.weights), eeb_net_free(net);
}

/* ---- the errors before any of it works: clear, and no abort ---- */

static void open_fails(const char *file, int status, const char *message)
{
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.xclbin = file;
    char err[512] = "";
    struct eeb_accel *a = NULL;
    cr_expect_eq(eeb_accel_find("xrt")->open(&cfg, &a, err, sizeof err), status, "%s", err);
    cr_expect_null(a);
    cr_expect(strstr(err, message), "'%s' not in: %s", message, err);
}

Test(xrt, without_xilinx_xrt_the_error_says_what_to_do)
{
    build(NULL, NULL);
    unsetenv("XILINX_XRT");
    open_fails(xclbin, EEB_EDEVICE, "XILINX_XRT is not set");
    setenv("XILINX_XRT", "/nonexistent/xrt", 1);
    open_fails(xclbin, EEB_EDEVICE, "XILINX_XRT=/nonexistent/xrt: No such file or directory");
    /* a directory without the shim XRT would load */
    setenv("XILINX_XRT", test_tmpdir(), 1);
    setenv("XCL_EMULATION_MODE", "noop", 1);
    open_fails(xclbin, EEB_EDEVICE, "lib/libxrt_noop.so.2: No such file or directory");
    setenv("XCL_EMULATION_MODE", "hw_emu", 1);
    open_fails(xclbin, EEB_EDEVICE, "XCL_EMULATION_MODE=hw_emu needs Vitis");
}

Test(xrt, a_missing_xclbin_or_kernel_is_named)
{
    noop_shim();
    open_fails("/nonexistent/fx.xclbin", EEB_EIO, "/nonexistent/fx.xclbin");
    open_fails(NULL, EEB_EINVAL, "no xclbin given");
    /* the kernel's name in the metadata changed, bytes for bytes */
    size_t len;
    char *data = test_read_file(build(NULL, NULL), &len);
    char *at = memmem(data, len, "kernel name=\"fx_kernel\"", 23);
    cr_assert_not_null(at);
    memcpy(at, "kernel name=\"fx_other1\"", 23);
    test_write_file(xclbin, data, len);
    free(data);
    open_fails(xclbin, EEB_EINVAL, "no kernel 'fx_kernel' (it declares fx_other1)");
}

/* ---- eeb run --backend xrt ---- */

Test(xrt, eeb_run_drives_the_xrt_backend_and_scores_m_u_from_the_xclbin, .timeout = 120)
{
    /* the edge design eeb run models by default: within P_max 10 W */
    build("device=zcu104,pes=4,macs=16,ddr=1,mult=dsp2", "lut=0.5,ff=0.25,bram=0.75,dsp=0.125");
    noop_shim();
    char dir[256], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    struct test_cls_run in = test_cls_run_inputs(dir, 64, 32);
    const char *ft = in.ft, *test = in.test, *model = in.model, *db = in.db;
    struct test_run r = test_eeb((const char *[]){
        "run", "--task", "cls", "--finetune", ft, "--test", test, "--model", model, "--backend",
        "xrt", "--xclbin", xclbin, "--db", db, "--steps", "2", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "xrt (fx_kernel, device 0, noop-emulated (kernel C)), provenance "
                            "modeled"),
              "%s", r.out);
    cr_expect(strstr(r.out, "M_u    0.4062"), "%s", r.out);
    /* the device modeled is the xclbin's design */
    cr_expect(strstr(r.out, "device (modeled): device=zcu104,pes=4,macs=16,clock_mhz=250,ddr=1,"),
              "%s", r.out);
    test_run_free(&r);
    char sha[EEB_SHA256_HEX], query[300];
    cr_assert_eq(eeb_sha256_file(xclbin, sha, err, sizeof err), EEB_OK);
    snprintf(query, sizeof query,
             "SELECT count(*) FROM runs WHERE config ->> '$.xclbin.sha256' = '%s'"
             " AND config ->> '$.util.source' LIKE '%%fx.xclbin (given)'",
             sha);
    cr_expect_eq(test_sql_int(db, query), 1);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
}

/* SYSTEM_METADATA as Vitis writes it: one unit's routed figures on the
 * ZCU104's platform, which leaves its REG (FF) total empty. */
static const char zcu104_system[] =
    "{\"system_diagram_metadata\": {\"xsa\": {\"available_resources\": ["
    "{\"resource\": \"LUT\", \"available\": \"230400\"}, {\"resource\": \"REG\", "
    "\"available\": \"\"}, {\"resource\": \"BRAM\", \"available\": \"312\"}, "
    "{\"resource\": \"DSP\", \"available\": \"1728\"}]}, \"xclbin\": {\"user_regions\": "
    "[{\"compute_units\": [{\"name\": \"fx_kernel_1\", \"actual_resources\": [{\"origin\": "
    "\"routed\", \"resources\": [{\"resource\": \"LUT\", \"used\": \"46080\"}, "
    "{\"resource\": \"REG\", \"used\": \"92160\"}, {\"resource\": \"BRAM\", \"used\": "
    "\"78\"}, {\"resource\": \"DSP\", \"used\": \"432\"}]}]}]}]}}}";

Test(xrt, eeb_run_takes_m_u_from_the_xclbins_own_resources, .timeout = 120)
{
    char err[512];
    snprintf(xclbin, sizeof xclbin, "%s/fx.xclbin", test_tmpdir());
    struct eeb_xclbin_spec spec = {"device=zcu104,pes=4,macs=16,ddr=1,mult=dsp2",
                                   "lut=0.5,ff=0.25,bram=0.75,dsp=0.125", "given", zcu104_system,
                                   strlen(zcu104_system)};
    cr_assert_eq(eeb_xclbin_build(xclbin, &spec, err, sizeof err), EEB_OK, "%s", err);
    noop_shim();
    struct test_cls_run in = test_cls_run_inputs(test_tmpdir(), 64, 32);
    /* the FF total is the XCZU7EV's 460,800 (DS891) */
    double m_u = (46080.0 / 230400 + 92160.0 / 460800 + 78.0 / 312 + 432.0 / 1728) / 4;
    /* --util given too, with the fractions eeb's USER_METADATA says: refused */
    struct test_run r = test_eeb((const char *[]){
        "run",    "--task",   "cls",     "--finetune", in.ft,
        "--test", in.test,    "--model", in.model,     "--backend",
        "xrt",    "--xclbin", xclbin,    "--util",     "lut=0.5,ff=0.25,bram=0.75,dsp=0.125",
        "--db",   in.db,      "--steps", "2",          "-q",
        NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    char want[600];
    snprintf(want, sizeof want,
             "--util: LUT 0.5000 in the given figures lut=0.5,ff=0.25,bram=0.75,dsp=0.125, "
             "0.2000 in %s's routed figures: more than 1 %% apart",
             xclbin);
    assert_has(r.err, want);
    test_run_free(&r);
    /* alone: M_u is the figures' */
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", in.ft, "--test", in.test,
                                  "--model", in.model, "--backend", "xrt", "--xclbin", xclbin,
                                  "--db", in.db, "--steps", "2", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char line[100];
    snprintf(line, sizeof line, "M_u    %.4f", m_u);
    assert_has(r.out, line);
    test_run_free(&r);
    char query[600];
    snprintf(query, sizeof query,
             "SELECT count(*) FROM runs WHERE config ->> '$.util.source' = '%s (SYSTEM_METADATA: "
             "routed figures of 1 compute unit; FF total from the part xczu7ev: the platform "
             "leaves it empty)' AND abs(config ->> '$.util.ff' - 0.2) < 1e-12",
             xclbin);
    cr_expect_eq(test_sql_int(in.db, query), 1);
    r = test_eeb((const char *[]){"check", in.db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
}

/* ---- a team's SUT handed the xclbin ---- */

/* eeb's kernel as a team's library served out of process: open is handed
 * the copy of the xclbin the run hashed and took M_u from, and programs it
 * (without it, the xrt backend has no xclbin to open). */
Test(xrt, a_teams_sut_programs_the_xclbin_the_run_hashed, .timeout = 120)
{
    build("device=zcu104,pes=4,macs=16,ddr=1,mult=dsp2", "lut=0.5,ff=0.25,bram=0.75,dsp=0.125");
    noop_shim();
    char dir[256];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    setenv("TMPDIR", dir, 1); /* where eeb run keeps the SUT's copy */
    struct test_cls_run in = test_cls_run_inputs(dir, 64, 32);
    struct test_run r = test_eeb((const char *[]){"run",
                                                  "--task",
                                                  "cls",
                                                  "--finetune",
                                                  in.ft,
                                                  "--test",
                                                  in.test,
                                                  "--model",
                                                  in.model,
                                                  "--backend",
                                                  "exec:" EEB_SUT_SERVE " " EEB_SUT_OWN,
                                                  "--sut-config",
                                                  "backend=xrt",
                                                  "--xclbin",
                                                  xclbin,
                                                  "--power",
                                                  "sim:watts=4",
                                                  "--db",
                                                  in.db,
                                                  "--steps",
                                                  "2",
                                                  "-q",
                                                  NULL});
    /* 0, or 4 if a loaded machine left a gap in its short power log */
    cr_assert(r.status == 0 || r.status == 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "(fx_kernel, device 0, noop-emulated (kernel C))"), "%s", r.out);
    cr_expect(strstr(r.out, "M_u    0.4062"), "%s", r.out);
    test_run_free(&r);
    test_expect_none_named(dir, "eeb-run-");
}

/* eeb sut check hands --xclbin to open likewise. */
Test(xrt, sut_check_hands_the_xclbin_to_open, .timeout = 120)
{
    build(NULL, NULL);
    noop_shim();
    struct test_cls_run in = test_cls_run_inputs(test_tmpdir(), 64, 32);
    struct test_run r = test_eeb((const char *[]){
        "sut", "check", EEB_SUT_OWN, "--task", "cls", "--model", in.model, "--finetune", in.ft,
        "--test", in.test, "--sut-config", "backend=xrt", "--xclbin", xclbin, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"sut", "check", EEB_SUT_OWN, "--task", "cls", "--model", in.model,
                                  "--finetune", in.ft, "--test", in.test, "--sut-config",
                                  "backend=xrt", NULL});
    cr_expect_eq(r.status, 3, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "no xclbin given"), "%s", r.out);
    test_run_free(&r);
}
