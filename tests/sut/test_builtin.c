/*
 * test_builtin.c - eeb's own backends behind the system-under-test
 * interface (sut/builtin.c) do what they do when driven directly: the same
 * losses step for step from batches as the shards hold them, and the same
 * predictions as the test stage makes (ranked classes, decoded boxes), so
 * the interface carries a real training accelerator whole.
 */
#include "fpga/net/eeb_model.h"
#include "sut/eeb_sut_host.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_tasks.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 8
#define SIDE  16

TestSuite(sut_builtin, .timeout = 60);

/* A shard of the task made by the generator; its path. */
static const char *shard(enum eeb_task task, int test, int n)
{
    static char path[2][300];
    snprintf(path[test], sizeof path[test], "%s/%s.eebd", test_tmpdir(), test ? "test" : "ft");
    struct eeb_gen_spec spec = {
        task, EEB_GEN_FINETUNE, test, (uint64_t)n, 3, SIDE, task == EEB_TASK_VIDEO ? 4 : 1};
    char err[512];
    cr_assert_eq(eeb_gen_shard(path[test], &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    return path[test];
}

struct pair {
    const struct eeb_sut_ops *ops;
    void *sut;                /* the SUT, emu behind it */
    struct eeb_accel *direct; /* emu itself */
    struct eeb_net *net;      /* direct's */
    struct eeb_shard_info info;
};

/* The same model on emu twice: behind the interface and driven directly. */
static void open_pair(struct pair *p, enum eeb_task task, const char *ft)
{
    char err[512], config[512], model[300];
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, ft, err, sizeof err), EEB_OK, "%s", err);
    p->info = *eeb_shard_info(s);
    p->info.names = NULL;
    cr_assert_eq(eeb_task_model(eeb_shard_info(s), 7, &p->net, err, sizeof err), EEB_OK, "%s", err);
    eeb_shard_close(s);
    snprintf(model, sizeof model, "%s/m.eebm", test_tmpdir());
    cr_assert_eq(eeb_model_save(model, p->net, (int)task, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = BATCH, cfg.lr = 0.02, cfg.threads = 1;
    cr_assert_eq(eeb_accel_start("emu", &cfg, p->net, &p->direct, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(eeb_sut_builtin_config("emu", &cfg, config, sizeof config), EEB_OK);
    struct eeb_sut_setup setup = {.abi_version = EEB_SUT_ABI_VERSION,
                                  .task = (int32_t)task,
                                  .classes = p->info.classes,
                                  .frames = p->info.frames,
                                  .height = p->info.h,
                                  .width = p->info.w,
                                  .channels = p->info.c,
                                  .batch_max = BATCH,
                                  .top_k = 5,
                                  .max_boxes = 100,
                                  .seed = 1,
                                  .config = config,
                                  .workdir = test_tmpdir()};
    p->ops = eeb_sut_builtin();
    cr_assert_eq(eeb_sut_ops_check(p->ops, "builtin", err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(p->ops->open(&setup, &p->sut, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p->ops->load_model(p->sut, model, err, sizeof err), 0, "%s", err);
}

static void close_pair(struct pair *p)
{
    p->ops->close(p->sut);
    eeb_accel_close(p->direct);
    eeb_net_free(p->net);
}

/* One batch of records both ways: as the shard holds them, and stacked
 * with the loss's labels. */
struct batches {
    uint8_t px[BATCH * SIDE * SIDE * 3 * 4], stacked[BATCH * SIDE * SIDE * 3 * 4];
    int32_t labels[BATCH], counts[BATCH], net_labels[BATCH * 2048];
    struct eeb_sut_box boxes[BATCH * EEB_SHARD_MAX_BOXES];
};

static int next_batch(struct eeb_shard *s, const struct pair *p, struct batches *b,
                      struct eeb_sut_batch *sb, struct eeb_batch *nb)
{
    size_t px = eeb_shard_pixels(&p->info), nlab = eeb_task_label_count(p->net);
    int n = 0, nbox = 0;
    const struct eeb_record *r;
    char err[512];
    while (n < BATCH && eeb_shard_next(s, &r, err, sizeof err) == 1) {
        memcpy(b->px + n * px, r->pixels, px);
        eeb_task_stack_frames(&p->info, r->pixels, b->stacked + n * px);
        eeb_task_labels(p->net, &p->info, r, b->net_labels + n * nlab);
        b->labels[n] = r->label, b->counts[n] = r->nboxes;
        for (int k = 0; k < r->nboxes; k++, nbox++) {
            const struct eeb_box *x = &r->boxes[k];
            b->boxes[nbox] = (struct eeb_sut_box){x->cls, x->difficult, x->x0, x->y0, x->x1, x->y1};
        }
        n++;
    }
    *sb = (struct eeb_sut_batch){n, b->px, b->labels, b->counts, b->boxes};
    *nb = (struct eeb_batch){n, b->stacked, b->net_labels};
    return n;
}

/* Trains both on the whole shard; the losses agree bit for bit. */
static void train_both(struct pair *p, const char *ft)
{
    char err[512];
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, ft, err, sizeof err), EEB_OK, "%s", err);
    struct batches *b = calloc(1, sizeof *b);
    struct eeb_sut_batch sb;
    struct eeb_batch nb;
    int steps = 0;
    while (next_batch(s, p, b, &sb, &nb) > 0) {
        struct eeb_sut_step st;
        struct eeb_train_result tr;
        cr_assert_eq(p->ops->train(p->sut, &sb, &st, err, sizeof err), 0, "%s", err);
        cr_assert_eq(p->direct->ops->train_batch(p->direct, &nb, &tr, err, sizeof err), EEB_OK,
                     "%s", err);
        cr_assert(isfinite(st.loss) && st.loss == tr.loss, "step %d: %.17g against %.17g", steps,
                  st.loss, tr.loss);
        cr_assert_eq(st.correct, tr.correct, "step %d", steps);
        cr_assert_eq(st.counted, eeb_task_targets(p->net, &nb), "step %d", steps);
        cr_assert_eq(st.done, 0);
        steps++;
    }
    cr_assert_gt(steps, 2);
    free(b);
    eeb_shard_close(s);
}

/* What the test stage predicted for each item, in shard order. */
struct expected {
    int n;
    int ranked[64][EEB_TOPK_MAX], nranked[64];
    int nboxes[64];
    struct eeb_scored_box boxes[64][100];
};

static int keep(void *arg, const struct eeb_task_prediction *tp, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct expected *e = arg;
    cr_assert_lt(e->n, 64);
    e->nranked[e->n] = tp->nranked;
    if (tp->nranked)
        memcpy(e->ranked[e->n], tp->ranked, (size_t)tp->nranked * sizeof *tp->ranked);
    e->nboxes[e->n] = tp->nboxes;
    if (tp->nboxes)
        memcpy(e->boxes[e->n], tp->boxes, (size_t)tp->nboxes * sizeof *tp->boxes);
    e->n++;
    return 0;
}

/* The SUT's predictions of the test shard equal the test stage's. */
static void predict_both(struct pair *p, const char *test)
{
    char err[512];
    struct expected *e = calloc(1, sizeof *e);
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.batch = BATCH, opt.on_prediction = keep, opt.arg = e;
    struct eeb_task_score score;
    cr_assert_eq(eeb_task_evaluate(p->direct, p->net, test, &opt, &score, err, sizeof err), EEB_OK,
                 "%s", err);
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, test, err, sizeof err), EEB_OK, "%s", err);
    struct batches *b = calloc(1, sizeof *b);
    struct eeb_sut_batch sb;
    struct eeb_batch nb;
    int item = 0, n;
    static int32_t classes[BATCH * 5], counts[BATCH];
    static float scores[BATCH * 5];
    static struct eeb_sut_detection dets[BATCH * 100];
    while ((n = next_batch(s, p, b, &sb, &nb)) > 0) {
        struct eeb_sut_batch bare = {n, sb.pixels, NULL, NULL, NULL};
        struct eeb_sut_predictions out = {classes, scores, counts, dets};
        cr_assert_eq(p->ops->predict(p->sut, &bare, &out, err, sizeof err), 0, "%s", err);
        for (int i = 0; i < n; i++, item++) {
            if (p->info.task != EEB_TASK_DET) {
                for (int k = 0; k < e->nranked[item]; k++)
                    cr_assert_eq(classes[i * 5 + k], e->ranked[item][k], "item %d rank %d", item,
                                 k);
                continue;
            }
            cr_assert_eq(counts[i], e->nboxes[item], "item %d", item);
            for (int k = 0; k < counts[i]; k++) {
                const struct eeb_sut_detection *d = &dets[i * 100 + k];
                const struct eeb_scored_box *x = &e->boxes[item][k];
                cr_assert(d->cls == x->cls && d->score == x->score && d->x0 == x->x0 &&
                              d->y1 == x->y1,
                          "item %d box %d", item, k);
            }
        }
    }
    cr_assert_eq(item, e->n);
    free(b), free(e);
    eeb_shard_close(s);
}

static void same_both_ways(enum eeb_task task)
{
    const char *ft = shard(task, 0, 48), *test = shard(task, 1, 24);
    struct pair p;
    open_pair(&p, task, ft);
    train_both(&p, ft);
    predict_both(&p, test);
    struct eeb_sut_counters c;
    p.ops->counters(p.sut, &c);
    cr_assert_eq(c.steps, 6);
    cr_assert_eq(c.items, 48);
    close_pair(&p);
}

Test(sut_builtin, classification_trains_and_predicts_as_emu_itself)
{
    same_both_ways(EEB_TASK_CLS);
}

Test(sut_builtin, detection_trains_and_predicts_as_emu_itself)
{
    same_both_ways(EEB_TASK_DET);
}

Test(sut_builtin, video_trains_and_predicts_as_emu_itself)
{
    same_both_ways(EEB_TASK_VIDEO);
}

/* 8x8 RGB items of 3 classes, batches of up to 4, with config. */
static struct eeb_sut_setup small_setup(const char *config)
{
    return (struct eeb_sut_setup){.abi_version = EEB_SUT_ABI_VERSION,
                                  .classes = 3,
                                  .frames = 1,
                                  .height = 8,
                                  .width = 8,
                                  .channels = 3,
                                  .batch_max = 4,
                                  .top_k = 3,
                                  .config = config};
}

/* A configuration it cannot take is refused at open, naming the key. */
Test(sut_builtin, a_bad_configuration_is_refused_by_name)
{
    static const char *const bad[][2] = {{"", "no backend=NAME"},
                                         {"backend=emu\nlr=fast", "lr=fast"},
                                         {"backend=emu\ncolour=blue", "unknown key 'colour'"},
                                         {"backend=emu\nthreads", "'threads' is not key=value"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct eeb_sut_setup setup = small_setup(bad[i][0]);
        void *sut = NULL;
        char err[512] = "";
        cr_expect_neq(eeb_sut_builtin()->open(&setup, &sut, err, sizeof err), 0, "%s", bad[i][0]);
        cr_expect(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
        cr_expect_null(sut);
    }
}

/* Before load_model, eeb's backends have no weights: every call that needs
 * them is refused with the reason (it was a crash), and counters are zero. */
Test(sut_builtin, calls_before_a_model_are_refused)
{
    struct eeb_sut_setup setup = small_setup("backend=emu");
    const struct eeb_sut_ops *ops = eeb_sut_builtin();
    void *sut = NULL;
    char err[512] = "";
    cr_assert_eq(ops->open(&setup, &sut, err, sizeof err), 0, "%s", err);
    uint8_t px[8 * 8 * 3] = {0};
    int32_t label = 1, classes[3];
    float scores[3];
    const struct eeb_sut_batch batch = {1, px, &label, NULL, NULL};
    struct eeb_sut_step step;
    struct eeb_sut_predictions out = {classes, scores, NULL, NULL};
    cr_expect_neq(ops->train(sut, &batch, &step, err, sizeof err), 0);
    cr_expect(strstr(err, "no model loaded"), "%s", err);
    err[0] = '\0';
    cr_expect_neq(ops->predict(sut, &batch, &out, err, sizeof err), 0);
    cr_expect(strstr(err, "no model loaded"), "%s", err);
    err[0] = '\0';
    cr_expect_neq(ops->save_model(sut, "/nonexistent/m.eebm", err, sizeof err), 0);
    cr_expect(strstr(err, "no model loaded"), "%s", err);
    struct eeb_sut_counters c;
    memset(&c, 0xff, sizeof c);
    ops->counters(sut, &c);
    cr_expect_eq(c.steps, 0);
    cr_expect_eq(c.detail[0], '\0');
    ops->close(sut);
}
