/*
 * test_finetune.c - each task end to end, as a user runs it: generate the
 * pre-train and fine-tune domains, pre-train the reference model with the
 * float trainer, fine-tune it on the float path and on the int8 emulator,
 * and test.  Fine-tuning must lift the metric well above chance and well
 * above the pre-trained model's on the shifted domain, on both paths; and
 * `eeb eval` must compute the same metric from the prediction files
 * `eeb model test` wrote.
 */
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Under a sanitizer (testlib.h's SANITIZED) the pipeline runs on a few
 * items, to check every step's memory use; the learning it shows is
 * judged by the optimized build only. */
struct pipeline {
    const char *task;
    const char *size, *lr;
    const char *pretrain_n, *pretrain_epochs, *finetune_n, *finetune_epochs;
};

static char dir[256];

static const char *file(const char *name)
{
    static char path[8][320];
    static int turn;
    char *p = path[turn++ % 8];
    snprintf(p, 320, "%s/%s", dir, name);
    return p;
}

static void run(const char *const *args)
{
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, 0, "eeb %s %s: %s", args[0], args[1], r.err);
    test_run_free(&r);
}

static void gen(const struct pipeline *p, const char *domain, const char *split, const char *n,
                const char *out)
{
    run((const char *[]){"data", "gen", "--task", p->task, "--domain", domain, "--split", split,
                         "--n", n, "--size", p->size, "--frames", "8", "-o", file(out), "-q",
                         NULL});
}

/* A number from a command's JSON output: key's value (NaN if null). */
static double json_number(const char *const *args, const char *key)
{
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, 0, "eeb %s %s: %s", args[0], args[1], r.err);
    json_error_t e;
    json_t *o = json_loads(r.out, 0, &e);
    cr_assert(o, "not JSON (%s): %s", e.text, r.out);
    json_t *v = json_object_get(o, key);
    cr_assert(v && (json_is_number(v) || json_is_null(v)), "no number '%s' in %s", key, r.out);
    double x = json_is_null(v) ? NAN : json_number_value(v);
    json_decref(o);
    test_run_free(&r);
    return x;
}

/* M_s of a model on the fine-tune test shard; with pred, the predictions
 * are written there and judged again by `eeb eval`, which must agree. */
static double metric(const struct pipeline *p, const char *model, const char *backend,
                     const char *pred)
{
    const char *key = strcmp(p->task, "det") == 0 ? "map" : "top5";
    const char *test = file("test.eebd");
    double m = json_number((const char *[]){"model", "test", file(model), "--data", test,
                                            "--backend", backend, "--json", pred ? "--pred" : NULL,
                                            pred ? file(pred) : NULL, NULL},
                           key);
    if (pred) {
        double again = json_number((const char *[]){"eval", "--task", p->task, "--gt", test,
                                                    "--pred", file(pred), "--json", NULL},
                                   key);
        cr_assert_float_eq(again, m, 1e-12, "%s: eeb eval says %.6f, eeb model test %.6f", p->task,
                           again, m);
    }
    return m;
}

/*
 * Runs the pipeline; chance is the metric of a random ranking, margin how
 * far above it fine-tuning must get, gain how far above the pre-trained
 * model on the same test set.
 */
static void pipeline(const struct pipeline *full, double chance, double margin, double gain)
{
    struct pipeline tiny = {full->task, "16", full->lr, "64", "1", "32", "1"};
    const struct pipeline *p = SANITIZED ? &tiny : full;
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    gen(p, "pretrain", "train", p->pretrain_n, "pretrain.eebd");
    gen(p, "finetune", "train", p->finetune_n, "finetune.eebd");
    gen(p, "finetune", "test", SANITIZED ? "16" : "300", "test.eebd");
    run((const char *[]){"model", "pretrain", "--task", p->task, "--data", file("pretrain.eebd"),
                         "-o", file("base.eebm"), "--epochs", p->pretrain_epochs, "--lr", p->lr,
                         NULL});
    double base = metric(p, "base.eebm", "fp32", NULL);
    const char *backends[2] = {"fp32", "emu"};
    double tuned[2];
    for (int b = 0; b < 2; b++) {
        char out[32], pred[32];
        snprintf(out, sizeof out, "tuned-%s.eebm", backends[b]);
        snprintf(pred, sizeof pred, "pred-%s%s", backends[b],
                 strcmp(p->task, "det") == 0 ? "" : ".csv");
        run((const char *[]){"model", "pretrain", "--task", p->task, "--init", file("base.eebm"),
                             "--data", file("finetune.eebd"), "-o", file(out), "--epochs",
                             p->finetune_epochs, "--lr", p->lr, "--backend", backends[b], NULL});
        tuned[b] = metric(p, out, backends[b], pred);
    }
    cr_log_info("%s: chance %.3f, pre-trained %.3f, fine-tuned fp32 %.3f, int8 emulator %.3f",
                p->task, chance, base, tuned[0], tuned[1]);
    if (SANITIZED) {
        cr_log_info("%s: sanitizer build, a few items only: learning not judged", p->task);
        return;
    }
    for (int b = 0; b < 2; b++) {
        cr_expect_gt(tuned[b], chance + margin, "%s %s: fine-tuned %.3f, chance %.3f", p->task,
                     backends[b], tuned[b], chance);
        cr_expect_gt(tuned[b], base + gain, "%s %s: fine-tuned %.3f, pre-trained %.3f", p->task,
                     backends[b], tuned[b], base);
    }
}

/* 20 classes: a random ranking puts the truth in its top 5 a quarter of
 * the time. */
Test(finetune, classification, .timeout = 300)
{
    struct pipeline p = {"cls", "32", "0.02", "2000", "4", "1000", "3"};
    pipeline(&p, 0.25, 0.4, 0.15);
}

Test(finetune, video, .timeout = 300)
{
    struct pipeline p = {"video", "32", "0.05", "2000", "4", "1000", "3"};
    pipeline(&p, 0.25, 0.4, 0.15);
}

/* Random boxes hit next to nothing: mAP near 0. */
Test(finetune, detection, .timeout = 300)
{
    struct pipeline p = {"det", "32", "0.005", "2000", "4", "1000", "3"};
    pipeline(&p, 0.0, 0.2, 0.15);
}
