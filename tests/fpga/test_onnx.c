/*
 * test_onnx.c - networks from ONNX files written by other tools (PyTorch's
 * exporter, onnx.helper; tests/fpga/onnx_models.py) predict as the
 * reference evaluator does on the same pixels; what eeb cannot run is
 * refused by node, op and attribute; a model exported by eeb passes
 * onnx.checker and reads back the same.
 */
#include "fpga/accel/eeb_accel.h"
#include "fpga/net/eeb_model.h"
#include "fpga/net/eeb_onnx.h"
#include "tasks/eeb_tasks.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PYTHON "/usr/bin/python3" /* Debian's, with python3-onnx and python3-torch */
#define MODELS "tests/fpga/onnx_models.py"

/* Skips the test without python3-onnx (every mode of onnx_models.py), or
 * without python3-torch if it evaluates (every mode but bad and check). */
static void need_onnx(int and_torch)
{
    if (system(PYTHON " -c 'import onnx' 2>/dev/null") != 0)
        cr_skip_test("no python3-onnx to write the models (make deps)");
    if (and_torch && system(PYTHON " -c 'import torch' 2>/dev/null") != 0)
        cr_skip_test("no reference evaluator: Debian's python3-torch (make deps)");
}

/* Runs onnx_models.py with args into a fresh directory, which it returns
 * (static storage). */
static const char *make_models(const char *args)
{
    static char dir[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    need_onnx(strncmp(args, "bad", 3) != 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, PYTHON " " MODELS " %s %s/m > %s/py.log 2>&1", args, dir, dir);
    int rc = system(cmd);
    if (rc != 0) {
        char log[400];
        snprintf(log, sizeof log, "%s/py.log", dir);
        char *text = test_read_file(log, NULL);
        cr_assert_fail("%s: exit %d\n%s", cmd, rc, text ? text : "");
    }
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/m");
    return dir;
}

static void *read_all(const char *dir, const char *name, size_t want)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    size_t len;
    char *b = test_read_file(path, &len);
    cr_assert_not_null(b, "%s", path);
    cr_assert_eq(len, want, "%s: %zu bytes, %zu expected", path, len, want);
    return b;
}

static struct eeb_net *import(const char *dir, const struct eeb_onnx_import_options *o)
{
    char path[400], err[600] = "";
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    struct eeb_net *net = NULL;
    cr_assert_eq(eeb_onnx_import_file(path, o, &net, NULL, err, sizeof err), EEB_OK, "%s", err);
    return net;
}

/* How backend `name`'s outputs for the n items at dir compare with the
 * reference's: the largest difference relative to the largest |output|,
 * and the items whose top class is the reference's. */
struct agreement {
    double rel_max, rel_rms; /* rms: |out - ref| / |ref| over all outputs */
    int top1;
};

/* What a prediction holds per item: the loss layer's input, h x w x c
 * (a classifier's classes, a detector's grid map). */
static int outputs_of(const struct eeb_net *net)
{
    struct eeb_shape s = net->layers[net->nlayers - 1].out;
    return s.h * s.w * s.c;
}

/* Backend `name`'s predictions for the n items of px (a new array). */
static float *predict(struct eeb_net *net, const char *name, const uint8_t *px, int n)
{
    float *out = calloc((size_t)n * (size_t)outputs_of(net), sizeof *out);
    cr_assert_not_null(out);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = n;
    struct eeb_accel *a;
    char err[400];
    cr_assert_eq(eeb_accel_start(name, &cfg, net, &a, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_batch b = {n, px, NULL};
    cr_assert_eq(a->ops->predict(a, &b, out, err, sizeof err), EEB_OK, "%s", err);
    eeb_accel_close(a);
    return out;
}

static struct agreement predict_against_reference(const char *dir, struct eeb_net *net,
                                                  const char *name, int n)
{
    int outputs = outputs_of(net);
    size_t item = (size_t)net->input.h * net->input.w * net->input.c;
    uint8_t *px = read_all(dir, "pixels.u8", item * (size_t)n);
    float *ref = read_all(dir, "ref.f32", sizeof(float) * (size_t)n * (size_t)outputs);
    float *out = predict(net, name, px, n);
    double dmax = 0, rmax = 0, d2 = 0, r2 = 0;
    struct agreement g = {0, 0, 0};
    for (int i = 0; i < n; i++) {
        int best_ref = 0, best = 0;
        for (int j = 0; j < outputs; j++) {
            float r = ref[i * outputs + j], o = out[i * outputs + j];
            dmax = fmax(dmax, fabs(r - o)), rmax = fmax(rmax, fabs(r));
            d2 += (double)(r - o) * (r - o), r2 += (double)r * r;
            best_ref = r > ref[i * outputs + best_ref] ? j : best_ref;
            best = o > out[i * outputs + best] ? j : best;
        }
        g.top1 += best == best_ref;
    }
    g.rel_max = dmax / rmax, g.rel_rms = sqrt(d2 / r2);
    cr_log_info("%s on %s: outputs within %.2e of the largest (%.3g), %.2e rms, top-1 %d of %d",
                name, dir, g.rel_max, rmax, g.rel_rms, g.top1, n);
    free(px), free(ref), free(out);
    return g;
}

/* The network: ResNet-18's shape at 224x224 (7x7 stem, padded max
 * pool, projection shortcuts, BatchNormalization after every conv, which
 * eeb folds), random weights, exported by PyTorch.  float32 agrees with
 * PyTorch to rounding (1e-4 of the largest output: the sums run in
 * another order; measured 1.2e-6); the 8-bit emulator to what 8-bit
 * activations with one power-of-two scale per tensor allow through 20
 * layers (0.25 of the outputs' rms, measured 0.15; the same top class). */
Test(onnx, a_resnet18_from_pytorch_predicts_as_pytorch_does, .timeout = 300)
{
    const char *dir = make_models("resnet18 --size 224 --n 4 --classes 1000 --seed 3");
    struct eeb_onnx_import_options o = {.loss = EEB_LAYER_SOFTMAX_CE};
    struct eeb_onnx_import_report rep;
    char path[400], err[600] = "";
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    struct eeb_net *net = NULL;
    cr_assert_eq(eeb_onnx_import_file(path, &o, &net, &rep, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(rep.folded_bn, 20, "every conv's BatchNormalization folded: %d", rep.folded_bn);
    cr_expect_eq(net->input.h, 224);
    cr_expect_eq(eeb_net_classes(net), 1000);
    int convs = 0, pools = 0;
    for (int i = 0; i < net->nlayers; i++) {
        convs += net->layers[i].kind == EEB_LAYER_CONV;
        if (net->layers[i].kind == EEB_LAYER_MAXPOOL) {
            pools++;
            cr_expect_eq(net->layers[i].out.h, 56, "the stem's padded pool: 112 -> 56");
        }
    }
    cr_expect_eq(convs, 20, "17 convs and 3 projections");
    cr_expect_eq(pools, 1);
    /* ResNet-18's forward multiply-accumulates at 224x224 with 1000
     * classes: 1,814,073,344 (torchvision's figure is 1.81 G). */
    cr_expect_eq(eeb_net_macs(net), 1814073344ull, "%llu", (unsigned long long)eeb_net_macs(net));
    struct agreement f = predict_against_reference(dir, net, "fp32", 4);
    cr_expect_leq(f.rel_max, 1e-4, "float32: %.2e of the largest output", f.rel_max);
    cr_expect_eq(f.top1, 4);
    struct agreement q = predict_against_reference(dir, net, "emu", 4);
    cr_expect_leq(q.rel_rms, 0.25, "8-bit: %.2e rms", q.rel_rms);
    cr_expect_geq(q.top1, 3, "8-bit: top-1 the reference's for %d of 4", q.top1);
    eeb_net_free(net);
}

/* Every operator eeb maps, in one graph made with onnx.helper, evaluated
 * by torch.nn.functional: BatchNormalization folded, MatMul then Add as
 * one fc, Gemm's alpha and beta, SAME padding, a Flatten of a 3x3 map (its
 * (c, h, w) order is not eeb's), Reshape, Identity, Dropout and the final
 * Softmax left out. */
Test(onnx, every_operator_eeb_maps_computes_what_onnx_says)
{
    const char *dir = make_models("ops --n 4 --seed 7");
    struct eeb_onnx_import_options o = {.loss = EEB_LAYER_SOFTMAX_CE};
    struct eeb_net *net = import(dir, &o);
    struct agreement f = predict_against_reference(dir, net, "fp32", 4);
    cr_expect_leq(f.rel_max, 1e-5, "float32: %.2e", f.rel_max);
    cr_expect_eq(f.top1, 4);
    eeb_net_free(net);
}

/* With --mean/--std the network takes (p/255 - mean)/std: import puts a
 * 1x1 conv computing it first, and the outputs are the reference's. */
Test(onnx, a_normalized_networks_input_is_made_by_a_first_layer, .timeout = 300)
{
    const char *dir = make_models("resnet18 --size 64 --n 4 --classes 10 --seed 5 --normalize");
    struct eeb_onnx_import_options o = {.loss = EEB_LAYER_SOFTMAX_CE,
                                        .normalize = 1,
                                        .norm_channels = 3,
                                        .mean = {0.485f, 0.456f, 0.406f},
                                        .std = {0.229f, 0.224f, 0.225f}};
    struct eeb_net *net = import(dir, &o);
    struct agreement f = predict_against_reference(dir, net, "fp32", 4);
    cr_expect_leq(f.rel_max, 1e-4, "%.2e", f.rel_max);
    cr_expect_eq(net->layers[0].kind, EEB_LAYER_CONV);
    cr_expect_eq(net->layers[0].k, 1);
    struct eeb_onnx_import_options plain = {.loss = EEB_LAYER_SOFTMAX_CE};
    struct eeb_net *unfolded = import(dir, &plain);
    struct agreement u = predict_against_reference(dir, unfolded, "fp32", 4);
    cr_expect_gt(u.rel_max, 100 * f.rel_max, "without it: %.2e, with it: %.2e", u.rel_max,
                 f.rel_max);
    cr_expect_gt(u.rel_max, 0.1, "without it, off by %.2e of the largest output", u.rel_max);
    eeb_net_free(net), eeb_net_free(unfolded);
}

/* A new head: the file's 1000 outputs replaced by the task's 101, the
 * backbone's weights untouched. */
Test(onnx, a_new_head_replaces_the_classifier_when_the_classes_differ, .timeout = 300)
{
    const char *dir = make_models("resnet18 --size 32 --n 1 --classes 1000");
    struct eeb_onnx_import_options keep = {.loss = EEB_LAYER_SOFTMAX_CE};
    struct eeb_onnx_import_options head = {.loss = EEB_LAYER_SOFTMAX_CE, .outputs = 101, .seed = 9};
    struct eeb_onnx_import_report rep;
    char path[400], err[600] = "";
    snprintf(path, sizeof path, "%s/model.onnx", dir);
    struct eeb_net *a = import(dir, &keep), *b = NULL;
    cr_assert_eq(eeb_onnx_import_file(path, &head, &b, &rep, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(rep.new_head);
    cr_expect_eq(rep.old_outputs, 1000);
    cr_expect_eq(eeb_net_classes(b), 101);
    cr_assert_eq(a->nlayers, b->nlayers);
    int fc = b->nlayers - 2;
    cr_expect_eq(b->layers[fc].kind, EEB_LAYER_FC);
    cr_expect_eq(b->layers[fc].rows, 512);
    for (int i = 0; i < fc; i++)
        if (eeb_layer_learnable(&a->layers[i]))
            cr_expect_eq(memcmp(a->layers[i].w, b->layers[i].w,
                                (size_t)a->layers[i].rows * a->layers[i].out.c * sizeof(float)),
                         0, "layer %d is the file's", i);
    double sum = 0, sq = 0;
    for (int j = 0; j < 512 * 101; j++)
        sum += b->layers[fc].w[j], sq += (double)b->layers[fc].w[j] * b->layers[fc].w[j];
    double sd = sqrt(sq / (512 * 101)), mean = sum / (512 * 101);
    cr_expect(fabs(sd - sqrt(2.0 / 512)) < 0.05 * sqrt(2.0 / 512), "He-normal: sd %g", sd);
    cr_expect(fabs(mean) < 0.05 * sqrt(2.0 / 512), "He-normal: mean %g", mean);
    for (int j = 0; j < 101; j++)
        cr_expect_eq(b->layers[fc].b[j], 0.0f, "the new head's biases start at 0");
    eeb_net_free(a), eeb_net_free(b);
}

static void expect_refused(const char *dir, const char *file, const char *const *parts)
{
    char path[400], err[600] = "";
    snprintf(path, sizeof path, "%s/%s.onnx", dir, file);
    struct eeb_onnx_import_options o = {.loss = EEB_LAYER_KINDS};
    struct eeb_net *net = NULL;
    cr_expect_neq(eeb_onnx_import_file(path, &o, &net, NULL, err, sizeof err), EEB_OK, "%s", file);
    cr_expect_null(net);
    for (; *parts; parts++)
        cr_expect_not_null(strstr(err, *parts), "%s: '%s' lacks '%s'", file, err, *parts);
}

Test(onnx, what_eeb_cannot_run_is_named_by_node_op_and_attribute)
{
    const char *dir = make_models("bad");
    expect_refused(dir, "grouped", (const char *[]){"node 0 'dw_conv' (Conv", "group=2", NULL});
    expect_refused(dir, "dilated", (const char *[]){"'atrous'", "dilations=[2,2]", NULL});
    expect_refused(dir, "asymmetric", (const char *[]){"'lopsided'", "pads=[0,0,2,2]", NULL});
    expect_refused(dir, "unknown_op",
                   (const char *[]){"node 1 'leaky' (LeakyRelu, alpha=0.1)", "cannot run", NULL});
    expect_refused(dir, "bn_alone", (const char *[]){"'lonely_bn'", "folds", NULL});
    expect_refused(dir, "two_inputs", (const char *[]){"inputs 'x' and 'z'", NULL});
    expect_refused(dir, "external", (const char *[]){"external file", NULL});
    expect_refused(
        dir, "ceil_mode",
        (const char *[]){"node 0 'ceil_pool' (MaxPool", "ceil_mode=1", "ceil_mode 1", NULL});
    expect_refused(dir, "mid_softmax",
                   (const char *[]){"node 1 'inner_softmax' (Softmax", "graph's output", NULL});
    expect_refused(dir, "bn_training",
                   (const char *[]){"'training_bn' (BatchNormalization", "training_mode=1",
                                    "inference mode", NULL});
    expect_refused(
        dir, "int_weights",
        (const char *[]){"node 0 'int_conv' (Conv", "tensor 'wi'", "data type 7", "float32", NULL});
    expect_refused(dir, "nan_weight",
                   (const char *[]){"node 0 'nan_conv' (Conv", "tensor 'wn' element 58",
                                    "not a finite number", NULL});
    char path[400], err[600] = "";
    snprintf(path, sizeof path, "%s/wire_type_7.onnx", dir);
    size_t len;
    char good[400];
    snprintf(good, sizeof good, "%s/grouped.onnx", dir);
    char *bytes = test_read_file(good, &len);
    cr_assert_not_null(bytes = realloc(bytes, len + 1));
    bytes[len] = 0x0f; /* field 1 of wire type 7, which protobuf does not have */
    test_write_file(path, bytes, len + 1);
    struct eeb_onnx_import_options o = {.loss = EEB_LAYER_KINDS};
    struct eeb_net *net = NULL;
    cr_expect_eq(eeb_onnx_import_file(path, &o, &net, NULL, err, sizeof err), EEB_EFORMAT);
    assert_has(err, "not an ONNX model");
    free(bytes);
}

/* Files that once crashed the reader, refused with a reason instead.
 * tests/fuzz/regress/fuzz_onnx holds them too, the deep one 20000 levels
 * deep there (twice what overflowed an 8 MB stack; a smaller input for
 * the fuzzer). */
Test(onnx, a_hostile_file_is_refused_not_a_crash)
{
    const char *dir = make_models("bad");
    /* SAME padding of a stride 0 divided by it: SIGFPE */
    expect_refused(
        dir, "zero_stride",
        (const char *[]){"node 0 'still_conv' (Conv", "strides=[0,0]", "strides 0", NULL});
    /* 100000 messages deep: protobuf-c unpacks by recursion, with tens of
     * MB of stack */
    expect_refused(dir, "deep", (const char *[]){"deep.onnx: ", "nested", NULL});
}

/* Export, then onnx.checker, then import again: the same network. */
Test(onnx, an_exported_model_passes_the_checker_and_reads_back_the_same)
{
    const char *dir = make_models("ops --n 2");
    struct eeb_onnx_import_options o = {.loss = EEB_LAYER_SOFTMAX_CE};
    struct eeb_net *net = import(dir, &o);
    eeb_net_to_fixed(net); /* export writes a fixed-point network's weights exactly */
    char path[400], err[600] = "", cmd[900];
    snprintf(path, sizeof path, "%s/exported.onnx", dir);
    cr_assert_eq(eeb_onnx_export_file(net, path, err, sizeof err), EEB_OK, "%s", err);
    snprintf(cmd, sizeof cmd, PYTHON " " MODELS " check %s > %s.log 2>&1", path, path);
    cr_expect_eq(system(cmd), 0, "onnx.checker refused %s (see %s.log)", path, path);
    struct eeb_net *back = NULL;
    cr_assert_eq(eeb_onnx_import_file(path, &o, &back, NULL, err, sizeof err), EEB_OK, "%s", err);
    eeb_net_to_float(net);
    cr_assert_eq(back->nlayers, net->nlayers);
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *x = &net->layers[i], *y = &back->layers[i];
        cr_expect_eq(x->kind, y->kind, "layer %d", i);
        cr_expect_eq(x->in[0], y->in[0], "layer %d", i);
        cr_expect_eq(x->in[1], y->in[1], "layer %d", i);
        cr_expect(x->out.h == y->out.h && x->out.w == y->out.w && x->out.c == y->out.c, "layer %d",
                  i);
        if (eeb_layer_learnable(x)) {
            cr_expect_eq(memcmp(x->w, y->w, (size_t)x->rows * x->out.c * sizeof(float)), 0,
                         "layer %d's weights", i);
            cr_expect_eq(memcmp(x->b, y->b, (size_t)x->out.c * sizeof(float)), 0,
                         "layer %d's biases", i);
        }
    }
    eeb_net_free(net), eeb_net_free(back);
}

/* The largest |a - b| over the largest |a|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i])), m = fmax(m, fabs((double)a[i]));
    return d / m;
}

/* What the tasks' models leave out: a padded max pool, an average pool,
 * and an fc over a 3x3 map flattened and rectified, whose rows export
 * must order as ONNX's Flatten does, (c, h, w), through the Relu. */
static struct eeb_net *pools_and_a_flattened_map(void)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){12, 12, 3});
    cr_assert_not_null(net);
    int c = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 8, 3, 1, 1));
    int p = eeb_net_avgpool(net, eeb_net_maxpool(net, c, 3, 2, 1), 2, 2, 0);
    int j = eeb_net_concat(net, p, eeb_net_conv(net, p, 4, 1, 1, 0));
    int l = eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_relu(net, eeb_net_flatten(net, j)), 5));
    cr_assert_geq(l, 0, "%s", net->err);
    eeb_net_init(net, 7);
    return net;
}

/* eeb's own networks, each task's reference model and one of pools (with
 * biases, which eeb_net_init leaves at 0, so that export's are checked
 * too), exported and run by onnx_models.py's evaluator
 * (torch.nn.functional, each node as ONNX's operator docs define it) on
 * random pixels: its outputs are eeb's float32 backend's to rounding (1e-4
 * of the largest output).  The same file imported again predicts the same
 * (1e-5): its layers may differ (a Flatten need not be a layer), its
 * outputs not. */
Test(onnx, eebs_own_models_export_and_an_onnx_evaluator_agrees, .timeout = 120)
{
    static const struct {
        const char *name;
        struct eeb_shard_info info;
    } tasks[] = {
        {"cls", {.task = EEB_TASK_CLS, .h = 32, .w = 32, .c = 3, .frames = 1, .classes = 10}},
        {"det", {.task = EEB_TASK_DET, .h = 32, .w = 32, .c = 3, .frames = 1, .classes = 5}},
        {"video", {.task = EEB_TASK_VIDEO, .h = 32, .w = 32, .c = 3, .frames = 8, .classes = 10}},
        {"pools", {.task = EEB_TASK_CLS}}, /* pools_and_a_flattened_map */
    };
    enum { N = 4 };
    need_onnx(1);
    char dir[300];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    unsigned seed = 17;
    for (size_t t = 0; t < sizeof tasks / sizeof *tasks; t++) {
        const char *name = tasks[t].name;
        char sub[400], path[500], cmd[1400], err[600] = "";
        snprintf(sub, sizeof sub, "%s/%s", dir, name);
        test_mkdirs(dir, name);
        struct eeb_net *net = NULL;
        if (!tasks[t].info.h)
            net = pools_and_a_flattened_map();
        else
            cr_assert_eq(eeb_task_model(&tasks[t].info, 7, &net, err, sizeof err), EEB_OK, "%s: %s",
                         name, err);
        for (int i = 0; i < net->nlayers; i++)
            if (eeb_layer_learnable(&net->layers[i]))
                for (int j = 0; j < net->layers[i].out.c; j++)
                    net->layers[i].b[j] = (float)rand_r(&seed) / (float)RAND_MAX * 0.2f - 0.1f;
        size_t item = (size_t)net->input.h * net->input.w * net->input.c;
        uint8_t *px = malloc(item * N);
        for (size_t i = 0; i < item * N; i++)
            px[i] = (uint8_t)(rand_r(&seed) >> 8);
        snprintf(path, sizeof path, "%s/pixels.u8", sub);
        test_write_file(path, px, item * N);
        snprintf(path, sizeof path, "%s/model.onnx", sub);
        cr_assert_eq(eeb_onnx_export_file(net, path, err, sizeof err), EEB_OK, "%s: %s", name, err);
        snprintf(cmd, sizeof cmd, PYTHON " " MODELS " check %s > %s/check.log 2>&1", path, sub);
        cr_expect_eq(system(cmd), 0, "%s: onnx.checker refused %s (see %s/check.log)", name, path,
                     sub);
        snprintf(cmd, sizeof cmd, PYTHON " " MODELS " eval %s %s > %s/eval.log 2>&1", path, sub,
                 sub);
        if (system(cmd) != 0) {
            snprintf(path, sizeof path, "%s/eval.log", sub);
            char *log = test_read_file(path, NULL);
            cr_assert_fail("%s: %s\n%s", name, cmd, log ? log : "");
        }
        struct agreement f = predict_against_reference(sub, net, "fp32", N);
        cr_expect_leq(f.rel_max, 1e-4, "%s: float32 against the evaluator: %.2e", name, f.rel_max);
        struct eeb_onnx_import_options o = {.loss = eeb_task_get(tasks[t].info.task)->loss};
        struct eeb_net *back = NULL;
        int rc = eeb_onnx_import_file(path, &o, &back, NULL, err, sizeof err);
        cr_expect_eq(rc, EEB_OK, "%s: the export imported again: %s", name, err);
        if (rc == EEB_OK) {
            cr_expect(back->input.h == net->input.h && back->input.w == net->input.w &&
                          back->input.c == net->input.c,
                      "%s: the input", name);
            cr_assert_eq(outputs_of(back), outputs_of(net), "%s: outputs per item", name);
            cr_expect_eq(eeb_net_loss(back)->kind, eeb_net_loss(net)->kind, "%s", name);
            float *a = predict(net, "fp32", px, N), *b = predict(back, "fp32", px, N);
            double d = rel_diff(a, b, (size_t)N * outputs_of(net));
            cr_expect_leq(d, 1e-5, "%s: imported again, predictions %.2e apart", name, d);
            cr_log_info("%s: exported, evaluated within %.2e, imported again within %.2e", name,
                        f.rel_max, d);
            free(a), free(b);
            eeb_net_free(back);
        }
        free(px);
        eeb_net_free(net);
    }
}

/* A Food-101 layout of 101 classes, 3 JPEGs each (2 train, 1 test), at
 * 320x256 (imported at 224x224): each class its own colour, in a disc at
 * a random place over a noisy background. */
static const char *food101_jpegs(const char *dir)
{
    static char src[420];
    snprintf(src, sizeof src, "%s/food-101", dir);
    enum { W = 320, H = 256, CLASSES = 101 };
    unsigned char *px = malloc((size_t)W * H * 3);
    char path[600], sub[64];
    size_t tl = 0, vl = 0, cl = 0;
    char *train = calloc(CLASSES, 64), *test = calloc(CLASSES, 64), *classes = calloc(CLASSES, 32);
    unsigned seed = 11;
    for (int k = 0; k < CLASSES; k++) {
        snprintf(sub, sizeof sub, "images/food_%03d", k);
        test_mkdirs(src, sub);
        cl += (size_t)snprintf(classes + cl, 32, "food_%03d\n", k);
        unsigned char colour[3] = {(unsigned char)(k * 53 % 256), (unsigned char)(k * 97 % 256),
                                   (unsigned char)(k * 151 % 256)};
        for (int i = 0; i < 3; i++) {
            int cx = 60 + (int)(rand_r(&seed) % 200), cy = 60 + (int)(rand_r(&seed) % 136);
            for (int y = 0; y < H; y++)
                for (int x = 0; x < W; x++)
                    for (int c = 0; c < 3; c++) {
                        int in = (x - cx) * (x - cx) + (y - cy) * (y - cy) < 50 * 50;
                        int noise = (int)(rand_r(&seed) % 40);
                        px[((size_t)y * W + x) * 3 + c] =
                            (unsigned char)(in ? colour[c] * 7 / 8 + noise / 2 : 90 + noise);
                    }
            snprintf(path, sizeof path, "%s/%s/%d.jpg", src, sub, 1000 * k + i);
            test_write_jpeg(path, px, W, H);
            if (i < 2)
                tl += (size_t)snprintf(train + tl, 32, "food_%03d/%d\n", k, 1000 * k + i);
            else
                vl += (size_t)snprintf(test + vl, 32, "food_%03d/%d\n", k, 1000 * k + i);
        }
    }
    test_mkdirs(src, "meta");
    snprintf(path, sizeof path, "%s/meta/classes.txt", src);
    test_write_file(path, classes, cl);
    snprintf(path, sizeof path, "%s/meta/train.txt", src);
    test_write_file(path, train, tl);
    snprintf(path, sizeof path, "%s/meta/test.txt", src);
    test_write_file(path, test, vl);
    free(px), free(train), free(test), free(classes);
    return src;
}

static void eeb_ok(const char *const *args, const char *expect)
{
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, 0, "eeb %s %s: exit %d\n%s%s", args[0], args[1], r.status, r.out, r.err);
    if (expect)
        assert_has(r.out, expect);
    test_run_free(&r);
}

/* The "done when": a ResNet-18-shaped network built by PyTorch
 * (random weights, BatchNormalization statistics measured on images)
 * imports with a new head for Food-101's 101 classes, fine-tunes its head
 * on JPEGs imported at 224x224 under eeb run on the emulator, and scores.
 * Its loss falls and its top-5 is well above chance (5/101): measured
 * 5.81 -> 4.40 and 0.24.  T_max 600 s: on the default cls design's
 * modeled clock a step of this network takes 3.6 s (the task's 30 s are
 * for its small reference network). */
Test(onnx, a_resnet18_fine_tunes_on_food101_jpegs_at_224_and_scores, .timeout = 900)
{
    if (SANITIZED)
        cr_skip_test("minutes of 8-bit ResNet-18 at 224x224 under ASan: the plain suite runs it");
    const char *models = make_models("resnet18 --size 224 --n 1 --classes 1000 --normalize");
    char dir[400], onnx[500], src[520], ft[500], test[500], model[500], db[500];
    snprintf(dir, sizeof dir, "%s", models);
    snprintf(onnx, sizeof onnx, "%s/model.onnx", dir);
    snprintf(src, sizeof src, "%s", food101_jpegs(dir));
    snprintf(ft, sizeof ft, "%s/ft.eebd", dir);
    snprintf(test, sizeof test, "%s/test.eebd", dir);
    snprintf(model, sizeof model, "%s/r18.eebm", dir);
    snprintf(db, sizeof db, "%s/run.db", dir);
    eeb_ok((const char *[]){"data", "import", "--format", "food101", src, "--split", "train",
                            "--size", "224", "-o", ft, "-q", NULL},
           NULL);
    eeb_ok((const char *[]){"data", "import", "--format", "food101", src, "--split", "test",
                            "--size", "224", "-o", test, "-q", NULL},
           NULL);
    eeb_ok((const char *[]){"model", "import", onnx, "--task", "cls", "--data", ft, "-o", model,
                            "--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225", NULL},
           "new head: 101 outputs replace the file's 1000");
    /* 22 learnable layers: the input's 1x1 conv, 20 convs, the head */
    struct test_run r = test_eeb(
        (const char *[]){"run",  "--task",   "cls", "--finetune", ft,  "--test",  test, "--model",
                         model,  "--frozen", "21",  "--epochs",   "6", "--batch", "32", "--lr",
                         "0.01", "--tmax",   "600", "--db",       db,  "--json",  "-q", NULL});
    cr_assert_eq(r.status, 0, "eeb run: exit %d\n%s%s", r.status, r.out, r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    double s = test_json_num(o, "S"), ms = test_json_num(json_object_get(o, "figures"), "m_s");
    cr_expect_str_eq(json_string_value(json_object_get(o, "verdict")), "pass", "%s", r.out);
    cr_expect(s <= 1, "S %g", s);
    cr_expect(ms > 2 * 5 / 101.0 && ms <= 1, "top-5 %g", ms);
    const char *loss = "SELECT json_extract(payload, '$.loss') FROM events WHERE kind IN "
                       "('epoch_end', 'epoch_partial') ORDER BY id";
    char last[200];
    snprintf(last, sizeof last, "%s DESC", loss);
    double first_loss = test_sql_double(db, loss), last_loss = test_sql_double(db, last);
    cr_expect_lt(last_loss, 0.85 * first_loss, "loss %g -> %g", first_loss, last_loss);
    cr_log_info("ResNet-18 at 224x224, 101 classes, head fine-tuned 6 epochs of 202 images: "
                "loss %.2f -> %.2f, top-5 %.3f, S %.4f",
                first_loss, last_loss, ms, s);
    json_decref(o);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs"), 1);
}

/* eeb model import/export as a user meets them: what is wrong is named. */
Test(onnx, the_commands_name_what_is_wrong)
{
    const char *dir = make_models("ops --n 1");
    char onnx[400], out[400], back[400], shard[400];
    snprintf(onnx, sizeof onnx, "%s/model.onnx", dir);
    snprintf(out, sizeof out, "%s/m.eebm", dir);
    snprintf(back, sizeof back, "%s/m.onnx", dir);
    snprintf(shard, sizeof shard, "%s", test_cls_shard(4, 16, 1)); /* 16x16: not 12x12 */
    static const struct {
        const char *args[12];
        int status;
        const char *says;
    } cases[] = {
        {{"model", "import", NULL}, 2, "takes one MODEL.onnx and -o OUT"},
        {{"model", "import", "X", "-o", "Y", NULL}, 2, "needs --task"},
        {{"model", "import", "X", "-o", "Y", "--task", "pose", NULL}, 2, "--task: 'pose'"},
        {{"model", "import", "X", "-o", "Y", "--task", "cls", "--mean", "0.5", NULL},
         2,
         "--mean and --std go together"},
        {{"model", "import", "X", "-o", "Y", "--task", "cls", "--mean", "0.5,0.5", "--std", "0.5,0",
          NULL},
         2,
         "every std above 0"},
        {{"model", "import", "X", "-o", "Y", "--task", "cls", "--size", "0x3", NULL},
         2,
         "--size: '0x3'"},
        {{"model", "import", "/nonexistent.onnx", "-o", "Y", "--task", "cls", NULL},
         1,
         "/nonexistent.onnx: No such file"},
        {{"model", "export", "X", "-o", "Y", "--task", "cls", NULL}, 2, "'export' takes only -o"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct test_run r = test_eeb(cases[i].args);
        cr_expect_eq(r.status, cases[i].status, "case %zu: %s", i, r.err);
        assert_has(r.err, cases[i].says);
        test_run_free(&r);
    }
    struct test_run r = test_eeb((const char *[]){"model", "import", onnx, "-o", out, "--task",
                                                  "cls", "--data", shard, NULL});
    cr_expect_eq(r.status, 1);
    assert_has(r.err, "is 12 high, not 16");
    test_run_free(&r);
    eeb_ok((const char *[]){"model", "import", onnx, "-o", out, "--task", "cls", "--classes", "4",
                            "--format", "fx24", NULL},
           "new head: 4 outputs replace the file's 7");
    eeb_ok((const char *[]){"model", "info", out, NULL}, "24-bit fixed-point");
    eeb_ok((const char *[]){"model", "export", out, "-o", back, NULL}, "ONNX (opset 13) written");
    char again[400];
    snprintf(again, sizeof again, "%s/again.eebm", dir);
    eeb_ok((const char *[]){"model", "import", back, "-o", again, "--task", "cls", NULL},
           "again.eebm: cls model written");
    /* the file exported and the one read back: the same learnable layers */
    json_t *x = test_eeb_json((const char *[]){"model", "info", "--json", out, NULL}, 0);
    json_t *y = test_eeb_json((const char *[]){"model", "info", "--json", again, NULL}, 0);
    int learnable[2] = {0, 0};
    json_t *info[2] = {x, y};
    for (int m = 0; m < 2; m++) {
        json_t *layers = json_object_get(info[m], "layers");
        for (size_t i = 0; i < json_array_size(layers); i++)
            learnable[m] += test_json_num(json_array_get(layers, i), "params") > 0;
    }
    cr_expect_gt(learnable[0], 2);
    cr_expect_eq(learnable[0], learnable[1], "learnable layers: %d exported, %d read back",
                 learnable[0], learnable[1]);
    cr_expect_eq(test_json_num(x, "params"), test_json_num(y, "params"));
    cr_expect_eq(test_json_num(x, "macs_per_item"), test_json_num(y, "macs_per_item"));
    json_decref(x), json_decref(y);
}
