/*
 * test_faulty.c - the "faulty:" accelerator backend (fpga/accel/accel_faulty.c):
 * found by the registry under any backend it wraps, the wrapped backend's
 * results bit for bit, and the delay, stall and failures it is told, on
 * the batches it is told; wrong names say what is wrong.  Through the
 * interface and through `eeb model pretrain --backend`.
 */
#include "fpga/accel/eeb_accel.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIDE    8 /* test_tiny_net's input side and classes */
#define CLASSES 3
#define BATCH   4
#define PIXELS  (SIDE * SIDE * 3)

static uint8_t pixels[BATCH * PIXELS];
static int32_t labels[BATCH] = {0, 1, 2, 1};
static const struct eeb_batch batch = {BATCH, pixels, labels};

static struct eeb_accel *start(const char *name, struct eeb_net *net)
{
    for (size_t i = 0; i < sizeof pixels; i++)
        pixels[i] = (uint8_t)(i * 37 % 251);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = BATCH, cfg.threads = 1;
    struct eeb_accel *a;
    char err[256];
    cr_assert_eq(eeb_accel_start(name, &cfg, net, &a, err, sizeof err), EEB_OK, "%s: %s", name,
                 err);
    return a;
}

/* Trains one batch: its status, err filled, and how long it took. */
static int step(struct eeb_accel *a, double *seconds, char *err, size_t errlen)
{
    struct eeb_train_result r;
    int64_t t0 = eeb_mono_ns();
    int rc = a->ops->train_batch(a, &batch, &r, err, errlen);
    if (seconds)
        *seconds = (double)(eeb_mono_ns() - t0) / 1e9;
    return rc;
}

static void open_fails(const char *name, int status, const char *message)
{
    struct eeb_net *net = test_tiny_net();
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    struct eeb_accel *a = NULL;
    char err[512] = "";
    cr_expect_eq(eeb_accel_start(name, &cfg, net, &a, err, sizeof err), status, "%s: %s", name,
                 err);
    cr_expect(strstr(err, message), "%s: '%s' lacks '%s'", name, err, message);
    cr_expect_null(a);
    eeb_net_free(net);
}

Test(faulty_accel, the_registry_lists_it_and_finds_it_under_what_it_wraps)
{
    const struct eeb_accel_ops *f = NULL;
    for (const struct eeb_accel_ops *const *b = eeb_accel_list(); *b; b++)
        if (strcmp((*b)->name, "faulty") == 0)
            f = *b;
    cr_assert_not_null(f, "listed");
    cr_expect(f->caps & EEB_ACCEL_CAP_WRAPPER);
    cr_expect_eq(eeb_accel_find("faulty:emu?delay_ms=20,stall=3~5"), f);
    cr_expect_eq(eeb_accel_find("faulty:faulty:fp32"), f);
    cr_expect_eq(eeb_accel_find("faulty"), f);
    cr_expect_null(eeb_accel_find("faulty2:emu"));
    cr_expect_eq(eeb_accel_on_hardware(f), 0, "a faulty device's times are not a board's");
}

Test(faulty_accel, without_faults_it_is_the_wrapped_backend_bit_for_bit)
{
    struct eeb_net *net = test_tiny_net(), *mine = eeb_net_clone(net), *theirs = eeb_net_clone(net);
    struct eeb_accel *a = start("faulty:emu", net), *b = start("emu", net);
    char err[256];
    for (int i = 0; i < 3; i++) {
        struct eeb_train_result ra, rb;
        cr_assert_eq(a->ops->train_batch(a, &batch, &ra, err, sizeof err), EEB_OK, "%s", err);
        cr_assert_eq(b->ops->train_batch(b, &batch, &rb, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_eq(ra.loss, rb.loss, "step %d: %.17g vs %.17g", i, ra.loss, rb.loss);
        cr_expect_eq(ra.correct, rb.correct);
    }
    float oa[BATCH * CLASSES], ob[BATCH * CLASSES];
    cr_assert_eq(a->ops->predict(a, &batch, oa, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(b->ops->predict(b, &batch, ob, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_arr_eq(oa, ob, sizeof oa);
    cr_assert_eq(a->ops->read_model(a, mine, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(b->ops->read_model(b, theirs, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(mine->format, EEB_FORMAT_FX24);
    const struct eeb_layer *lm = &mine->layers[0], *lt = &theirs->layers[0];
    cr_expect_arr_eq(lm->wq, lt->wq, (size_t)lm->rows * lm->out.c * sizeof *lm->wq);
    struct eeb_accel_stats sa, sb;
    a->ops->stats(a, &sa), b->ops->stats(b, &sb);
    cr_expect_eq(sa.steps, 3);
    cr_expect_eq(sa.items, sb.items);
    cr_expect_str_eq(sa.detail, sb.detail);
    eeb_accel_close(a), eeb_accel_close(b);
    eeb_net_free(net), eeb_net_free(mine), eeb_net_free(theirs);
}

Test(faulty_accel, every_batch_is_delayed_and_the_one_told_stalls, .timeout = 30)
{
    struct eeb_net *net = test_tiny_net();
    struct eeb_accel *a = start("faulty:fp32?delay_ms=60,stall=2~0.5", net);
    char err[256];
    double t[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(step(a, &t[i], err, sizeof err), EEB_OK, "%s", err);
    cr_expect(t[0] >= 0.06 && t[0] < 0.5, "batch 1 took %g s", t[0]);
    cr_expect(t[1] >= 0.56, "batch 2 took %g s, a 0.5 s stall and its 60 ms", t[1]);
    cr_expect(t[2] >= 0.06 && t[2] < 0.5, "batch 3 took %g s", t[2]);
    /* predictions are not training batches */
    float out[BATCH * CLASSES];
    int64_t t0 = eeb_mono_ns();
    cr_assert_eq(a->ops->predict(a, &batch, out, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_lt((double)(eeb_mono_ns() - t0) / 1e9, 0.06);
    eeb_accel_close(a);
    eeb_net_free(net);
}

Test(faulty_accel, the_batches_told_fail_as_a_device_does)
{
    struct eeb_net *net = test_tiny_net();
    struct eeb_accel *a = start("faulty:fp32?fail=2+2", net);
    char err[256];
    cr_expect_eq(step(a, NULL, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(step(a, NULL, err, sizeof err), EEB_EDEVICE);
    cr_expect_str_eq(err, "faulty:fp32?fail=2+2: training batch 2 fails (as told)");
    cr_expect_eq(step(a, NULL, err, sizeof err), EEB_EDEVICE);
    cr_expect(strstr(err, "batch 3 fails"), "%s", err);
    cr_expect_eq(step(a, NULL, err, sizeof err), EEB_OK, "%s", err);
    /* the wrapped backend trained only the two that did not fail */
    struct eeb_accel_stats s;
    a->ops->stats(a, &s);
    cr_expect_eq(s.steps, 2);
    eeb_accel_close(a);

    a = start("faulty:emu?fail=2*", net);
    cr_expect_eq(step(a, NULL, err, sizeof err), EEB_OK, "%s", err);
    for (int i = 2; i <= 5; i++)
        cr_expect_eq(step(a, NULL, err, sizeof err), EEB_EDEVICE, "batch %d", i);
    cr_expect(strstr(err, "batch 5 fails"), "%s", err);
    eeb_accel_close(a);

    /* a wrapper wraps a wrapper: the options after the last '?' are the outer's */
    a = start("faulty:faulty:emu?fail=1?delay_ms=0", net);
    cr_expect_eq(step(a, NULL, err, sizeof err), EEB_EDEVICE);
    cr_expect_str_eq(err, "faulty:emu?fail=1: training batch 1 fails (as told)");
    eeb_accel_close(a);
    eeb_net_free(net);
}

Test(faulty_accel, a_wrong_name_says_what_is_wrong)
{
    open_fails("faulty", EEB_EINVAL, "'faulty': no backend to wrap (faulty:BACKEND[?delay_ms=MS,");
    open_fails("faulty:", EEB_EINVAL, "'faulty:': no backend to wrap");
    open_fails("faulty:?delay_ms=1", EEB_EINVAL, "no backend to wrap");
    open_fails("faulty:tpu", EEB_EINVAL, "backend 'tpu': not built in (have emu");
    open_fails("faulty:emu?delay_ms=-1", EEB_EINVAL,
               "backend 'faulty:emu?delay_ms=-1': delay_ms=-1 (milliseconds, 0..3600000)");
    open_fails("faulty:emu?delay_ms=5s", EEB_EINVAL, "delay_ms=5s (milliseconds");
    open_fails("faulty:emu?stall=3", EEB_EINVAL, "stall=3 (N~SECONDS: batch N stalls 0..3600 s)");
    open_fails("faulty:emu?stall=0~1", EEB_EINVAL, "stall=0~1 (N~SECONDS");
    open_fails("faulty:emu?stall=2~", EEB_EINVAL, "stall=2~ (N~SECONDS");
    open_fails("faulty:emu?fail=0", EEB_EINVAL, "fail=0 (N, N+K or N*, batches counted from 1)");
    open_fails("faulty:emu?fail=2+", EEB_EINVAL, "fail=2+ (N, N+K or N*");
    open_fails("faulty:emu?fail=2-3", EEB_EINVAL, "fail=2-3 (N, N+K or N*");
    open_fails("faulty:emu?colour=blue", EEB_EINVAL,
               "backend 'faulty:emu?colour=blue': unknown option 'colour' (delay_ms, stall, fail)");
    open_fails("faulty:emu?delay_ms", EEB_EINVAL, "'delay_ms' is not key=value");
    /* the wrapped backend's own checks */
    open_fails("faulty:faulty:emu?fail=x?delay_ms=1", EEB_EINVAL,
               "backend 'faulty:emu?fail=x': fail=x");

    /* its table, opened without the name that says what it wraps */
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    struct eeb_accel *a;
    char err[256];
    cr_expect_eq(eeb_accel_find("faulty")->open(&cfg, &a, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "open it by its whole name, faulty:BACKEND"), "%s", err);
}

Test(faulty_accel, eeb_model_pretrain_on_a_failing_backend_names_the_batch, .timeout = 60)
{
    char data[128], model[160];
    snprintf(data, sizeof data, "%s", test_cls_shard(64, 16, 3));
    snprintf(model, sizeof model, "%s/m.eebm", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data", data, "-o", model,
                                  "--backend", "faulty:fp32?fail=2", "--epochs", "1", NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, "faulty:fp32?fail=2: training batch 2 fails (as told)"), "%s", r.err);
    test_run_free(&r);
}
