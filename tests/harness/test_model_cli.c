/*
 * test_model_cli.c - `eeb model` as a user runs it: pretrain the reference
 * classifier on a shard and check the written model learned; info, convert,
 * and the errors for wrong or damaged input.
 */
#include "fpga/accel/eeb_accel.h"
#include "fpga/net/eeb_model.h"
#include "tasks/eeb_shard.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDE 16

/* Top-1 accuracy of model on the shard's first n items, through predict. */
static double accuracy(const char *model, const char *shard_path, const char *backend)
{
    char err[512];
    struct eeb_net *net;
    int task;
    cr_assert_eq(eeb_model_load(model, &net, &task, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(task, EEB_TASK_CLS);
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, shard_path, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = 1;
    struct eeb_accel *a;
    cr_assert_eq(eeb_accel_start(backend, &cfg, net, &a, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *r;
    int right = 0, n = 0;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1) {
        float out[4];
        struct eeb_batch b = {1, r->pixels, NULL};
        cr_assert_eq(a->ops->predict(a, &b, out, err, sizeof err), EEB_OK, "%s", err);
        int best = 0;
        for (int k = 1; k < 4; k++)
            best = out[k] > out[best] ? k : best;
        right += best == r->label;
        n++;
    }
    eeb_accel_close(a);
    eeb_shard_close(s);
    eeb_net_free(net);
    return (double)right / n;
}

Test(model_cli, pretrain_learns_and_info_describes_it)
{
    char train[128], test_path[128];
    snprintf(train, sizeof train, "%s", test_cls_shard(1024, SIDE, 11));
    snprintf(test_path, sizeof test_path, "%s", test_cls_shard(256, SIDE, 12));
    char model[128];
    snprintf(model, sizeof model, "%s/cls.eebm", test_tmpdir());

    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data",
                                                  train, "-o", model, "--epochs", "3", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "epoch 3: step 96"), "%s", r.err);
    test_run_free(&r);

    double before = 0.25, after = accuracy(model, test_path, "fp32");
    cr_assert_gt(after, 0.85, "held-out top-1 %.3f after pretraining (chance %.2f)", after, before);
    /* The fixed-point engine runs the float model to nearly the same answers. */
    cr_assert_gt(accuracy(model, test_path, "emu"), after - 0.05);

    r = test_eeb((const char *[]){"model", "info", model, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "task cls, float32 weights"), "%s", r.out);
    cr_assert(strstr(r.out, "input 16x16x3"), "%s", r.out);
    cr_assert(strstr(r.out, "softmax_ce"), "%s", r.out);
    test_run_free(&r);
}

Test(model_cli, convert_to_fixed_and_back)
{
    const char *dir = test_tmpdir();
    char f32[128], fx[128], back[128];
    snprintf(f32, sizeof f32, "%s/a.eebm", dir);
    snprintf(fx, sizeof fx, "%s/b.eebm", dir);
    snprintf(back, sizeof back, "%s/c.eebm", dir);
    struct eeb_net *net = eeb_net_new((struct eeb_shape){8, 8, 3});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 2, 1));
    eeb_net_softmax_ce(net, eeb_net_fc(net, l, 3));
    eeb_net_init(net, 5);
    char err[256];
    cr_assert_eq(eeb_model_save(f32, net, EEB_MODEL_NO_TASK, err, sizeof err), EEB_OK, "%s", err);

    struct test_run r =
        test_eeb((const char *[]){"model", "convert", f32, "-o", fx, "--format", "fx24", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"model", "info", "--json", fx, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"format\": \"fx24\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"weight_exp\": "), "%s", r.out);
    cr_assert(strstr(r.out, "\"params\": 307"), "%s", r.out); /* 27*4+4 + 64*3+3 */
    test_run_free(&r);
    r = test_eeb((const char *[]){"model", "convert", fx, "-o", back, "--format", "f32", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);

    /* float -> fixed -> float moves each weight by at most half a step */
    struct eeb_net *got;
    int task;
    cr_assert_eq(eeb_model_load(back, &got, &task, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(task, EEB_MODEL_NO_TASK);
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *a = &net->layers[i], *b = &got->layers[i];
        if (!eeb_layer_learnable(a))
            continue;
        float max = 0;
        for (int j = 0; j < a->rows * a->out.c; j++)
            max = fabsf(a->w[j]) > max ? fabsf(a->w[j]) : max;
        float step = ldexpf(1, eeb_fx_weight_exp(max));
        for (int j = 0; j < a->rows * a->out.c; j++)
            cr_assert_leq(fabsf(a->w[j] - b->w[j]), step / 2, "layer %d weight %d", i, j);
    }
    eeb_net_free(got);
    eeb_net_free(net);
}

Test(model_cli, wrong_or_damaged_input_is_named)
{
    const char *shard = test_cls_shard(8, SIDE, 3);
    char model[128];
    snprintf(model, sizeof model, "%s/m.eebm", test_tmpdir());

    struct test_run r = test_eeb(
        (const char *[]){"model", "pretrain", "--task", "det", "--data", shard, "-o", model, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "holds cls data, --task is det"), "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "info", shard, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "offset 0: magic: not an eeb model file"), "%s", r.err);
    test_run_free(&r);

    r = test_eeb(
        (const char *[]){"model", "pretrain", "--task", "cls", "--data", model, "-o", model, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "m.eebm: No such file"), "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data", shard, "-o",
                                  model, "--epochs", "0", NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--epochs: '0'"), "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "frobnicate", NULL});
    cr_assert_eq(r.status, 2);
    test_run_free(&r);
}

/* A model meets a shard it does not fit: the test stage and fine-tuning
 * say so instead of running. */
Test(model_cli, test_and_fine_tune_refuse_a_model_of_another_task)
{
    char shard[128], det[128], model[128];
    snprintf(shard, sizeof shard, "%s", test_cls_shard(64, SIDE, 3));
    snprintf(model, sizeof model, "%s/cls.eebm", test_tmpdir());
    snprintf(det, sizeof det, "%s/det.eebd", test_tmpdir());
    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data",
                                                  shard, "-o", model, "--steps", "1", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"data", "gen", "--task", "det", "--domain", "pretrain", "--split",
                                  "test", "--n", "4", "--size", "16", "-o", det, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "test", model, "--data", det, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "the model's loss is softmax_ce, a det shard needs grid_loss"), "%s",
              r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "pretrain", "--task", "det", "--init", model, "--data",
                                  det, "-o", model, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "cls.eebm is a cls model, --task is det"), "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "test", model, NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "'test' takes FILE and --data"), "%s", r.err);
    test_run_free(&r);
}

/* The model pretrain writes after 20 steps on train, with OpenBLAS's
 * kernel forced to coretype and --openblas if openblas; its SHA-256. */
static void pretrained_sha(const char *train, const char *coretype, int openblas,
                           char sha[EEB_SHA256_HEX])
{
    char model[300], err[256];
    snprintf(model, sizeof model, "%s/m.eebm", test_tmpdir());
    cr_assert_eq(setenv("OPENBLAS_CORETYPE", coretype, 1), 0);
    const char *argv[] = {"model", "pretrain", "--task",  "cls", "--data",     train,
                          "-o",    model,      "--steps", "20",  "--openblas", NULL};
    if (!openblas)
        argv[10] = NULL;
    struct test_run r = test_eeb(argv);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_assert_eq(eeb_sha256_file(model, sha, err, sizeof err), EEB_OK, "%s", err);
}

/* OpenBLAS picks its kernel by CPU, and each sums in its own order: a base
 * model pretrained on it is not the same bytes on another machine.  The
 * portable GEMM (the default) makes the same bytes under any kernel. */
Test(model_cli, a_pretrained_model_is_the_same_bytes_whatever_the_cpus_kernel, .timeout = 120)
{
    char train[128], a[EEB_SHA256_HEX], b[EEB_SHA256_HEX];
    snprintf(train, sizeof train, "%s", test_cls_shard(640, SIDE, 13));
    pretrained_sha(train, "Prescott", 0, a); /* SSE3 */
    pretrained_sha(train, "Haswell", 0, b);  /* AVX2 and FMA */
    cr_expect_str_eq(a, b, "the portable pre-training depends on OpenBLAS's kernel");
    pretrained_sha(train, "Prescott", 1, a);
    pretrained_sha(train, "Haswell", 1, b);
    cr_expect_str_neq(a, b, "OpenBLAS's kernels summed alike: the test shows nothing");
}
