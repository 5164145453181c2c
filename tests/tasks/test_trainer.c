/*
 * test_trainer.c - the training loop over a step function: a step that
 * says it is done ends the training at that batch; a step without a loss
 * is no divergence, one with a loss that is not finite is; and the
 * accelerator's step trains exactly as the accelerator's own calls do.
 */
#include "tasks/eeb_train.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

enum { N = 40, BATCH = 6, WINDOW = 8 };

/* A step that counts its calls and reports what the test sets. */
struct fake {
    int calls, done_at; /* done on call done_at (0: never) */
    int has_loss;
    double loss;   /* reported from call loss_from on */
    int loss_from; /* before it, loss 1 */
};

static int fake_step(void *arg, const struct eeb_task_batch *b, struct eeb_trainer_step *out,
                     char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct fake *f = arg;
    f->calls++;
    cr_assert(b->n >= 1 && b->n <= BATCH && b->labels);
    *out = (struct eeb_trainer_step){.has_loss = f->has_loss,
                                     .loss = f->calls >= f->loss_from ? f->loss : 1.0,
                                     .correct = 1,
                                     .counted = b->n,
                                     .done = f->calls == f->done_at};
    return EEB_OK;
}

/* What the watcher saw. */
struct watched {
    long steps;
    int items;
    double losses[64];
};

static void on_step(void *arg, long step, int items, double loss)
{
    struct watched *w = arg;
    cr_assert_lt(step, 64);
    w->steps = step, w->items += items;
    w->losses[step - 1] = loss;
}

struct fixture {
    struct eeb_shard *shard;
    struct eeb_batcher *bt;
};

static struct fixture open_fixture(void)
{
    char err[256];
    struct fixture fx;
    cr_assert_eq(eeb_shard_open(&fx.shard, test_cls_shard(N, 8, 4), err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(eeb_batcher_new_as_stored(&fx.bt, fx.shard, BATCH, WINDOW, 3, err, sizeof err),
                 EEB_OK, "%s", err);
    return fx;
}

static void close_fixture(struct fixture *fx)
{
    eeb_batcher_free(fx->bt);
    eeb_shard_close(fx->shard);
}

Test(tasks, trainer_ends_where_a_step_says_it_is_done)
{
    struct fixture fx = open_fixture();
    struct fake f = {.done_at = 3, .has_loss = 1, .loss_from = 99};
    struct watched w = {0};
    struct eeb_trainer t = {.bt = fx.bt,
                            .train = fake_step,
                            .train_arg = &f,
                            .max_steps = -1,
                            .on_step = on_step,
                            .arg = &w};
    struct eeb_pass p;
    char err[256];
    cr_assert_eq(eeb_train_pass(&t, 1, &p, err, sizeof err), EEB_OK, "%s", err);
    /* the batch that said so counts; none comes after it */
    cr_assert(f.calls == 3 && t.step == 3 && t.done, "%d calls, step %ld", f.calls, t.step);
    cr_assert(p.items == 3 * BATCH && p.loss_items == 3 * BATCH && p.targets == 3 * BATCH);
    cr_assert(p.correct == 3 && p.loss_sum == 3.0 * BATCH);
    cr_assert_not(p.finished, "the shard did not run out");
    cr_assert(w.steps == 3 && w.items == 3 * BATCH);
    /* nor in the epochs after */
    cr_assert_eq(eeb_train_pass(&t, 2, &p, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(f.calls == 3 && t.step == 3 && p.items == 0);
    close_fixture(&fx);
}

Test(tasks, trainer_takes_a_step_without_a_loss)
{
    struct fixture fx = open_fixture();
    struct fake f = {.has_loss = 0, .loss = NAN, .loss_from = 1};
    struct watched w = {0};
    struct eeb_trainer t = {.bt = fx.bt,
                            .train = fake_step,
                            .train_arg = &f,
                            .max_steps = -1,
                            .on_step = on_step,
                            .arg = &w};
    struct eeb_pass p;
    char err[256] = "";
    cr_assert_eq(eeb_train_pass(&t, 1, &p, err, sizeof err), EEB_OK, "%s", err);
    int steps = (N + BATCH - 1) / BATCH;
    cr_assert(p.finished && t.step == steps && p.items == N);
    cr_assert(p.loss_items == 0 && p.loss_sum == 0, "%ld items, sum %g", p.loss_items, p.loss_sum);
    for (int i = 0; i < steps; i++)
        cr_assert(isnan(w.losses[i]), "step %d: the watcher got %g, not NAN (no loss)", i + 1,
                  w.losses[i]);
    close_fixture(&fx);
}

Test(tasks, trainer_stops_on_a_loss_that_diverged)
{
    struct fixture fx = open_fixture();
    for (int inf = 0; inf <= 1; inf++) {
        char err[256] = "";
        cr_assert_eq(eeb_batcher_rewind(fx.bt, err, sizeof err), EEB_OK, "%s", err);
        struct fake f = {.has_loss = 1, .loss = inf ? INFINITY : NAN, .loss_from = 2};
        struct eeb_trainer t = {
            .bt = fx.bt, .train = fake_step, .train_arg = &f, .max_steps = -1, .step = 10};
        struct eeb_pass p;
        cr_assert_eq(eeb_train_pass(&t, 1, &p, err, sizeof err), EEB_EINVAL);
        cr_assert_str_eq(err, "step 12: the loss diverged (lower --lr)");
        cr_assert_eq(t.step, 11);
    }
    close_fixture(&fx);
}

/* The accelerator's step against the accelerator driven by hand, on two
 * backends loaded alike and two batchers seeded alike: the same loss,
 * `correct` and targets at every step, to the bit. */
Test(tasks, trainer_accel_step_is_the_accelerators_train_batch)
{
    const char *path = test_cls_shard(N, 8, 4);
    char err[256];
    struct eeb_shard *s1, *s2;
    struct eeb_batcher *b1, *b2;
    cr_assert_eq(eeb_shard_open(&s1, path, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_open(&s2, path, err, sizeof err), EEB_OK, "%s", err);
    /* test_tiny_net with the shard's 4 classes */
    struct eeb_net *net = eeb_net_new((struct eeb_shape){8, 8, 3});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1));
    cr_assert(eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_flatten(net, l), 4)) >= 0, "%s",
              net->err);
    eeb_net_init(net, 5);
    cr_assert_eq(eeb_batcher_new(&b1, s1, net, BATCH, WINDOW, 3, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(eeb_batcher_new(&b2, s2, net, BATCH, WINDOW, 3, err, sizeof err), EEB_OK, "%s",
                 err);
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.batch_max = BATCH, cfg.lr = 0.05;
    struct eeb_accel *a1, *a2;
    cr_assert_eq(eeb_accel_start("fp32", &cfg, net, &a1, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_accel_start("fp32", &cfg, net, &a2, err, sizeof err), EEB_OK, "%s", err);

    struct eeb_trainer_accel ta = {a1, net};
    struct watched w = {0};
    struct eeb_trainer t = {.bt = b1,
                            .train = eeb_trainer_accel_step,
                            .train_arg = &ta,
                            .max_steps = -1,
                            .on_step = on_step,
                            .arg = &w};
    long steps = 0, correct = 0, targets = 0;
    double losses[64];
    for (int epoch = 1; epoch <= 2; epoch++) {
        struct eeb_pass p;
        cr_assert_eq(eeb_train_pass(&t, epoch, &p, err, sizeof err), EEB_OK, "%s", err);
        cr_assert(p.finished && p.items == N && p.loss_items == N);
        correct += p.correct, targets += p.targets;
        if (epoch > 1)
            cr_assert_eq(eeb_batcher_rewind(b2, err, sizeof err), EEB_OK, "%s", err);
        double by_hand = 0;
        for (;;) {
            struct eeb_batch b;
            struct eeb_train_result r;
            cr_assert_eq(eeb_batcher_next(b2, &b, err, sizeof err), EEB_OK, "%s", err);
            if (b.n == 0)
                break;
            cr_assert_eq(a2->ops->train_batch(a2, &b, &r, err, sizeof err), EEB_OK, "%s", err);
            losses[steps++] = r.loss;
            by_hand += r.loss * b.n;
            correct -= r.correct, targets -= b.n;
        }
        cr_assert(memcmp(&by_hand, &p.loss_sum, sizeof by_hand) == 0, "epoch %d: %a vs %a", epoch,
                  p.loss_sum, by_hand);
    }
    cr_assert(t.step == steps && w.steps == steps, "%ld steps, by hand %ld", t.step, steps);
    for (long i = 0; i < steps; i++)
        cr_assert(memcmp(&w.losses[i], &losses[i], sizeof losses[i]) == 0, "step %ld: %a vs %a",
                  i + 1, w.losses[i], losses[i]);
    cr_assert(correct == 0 && targets == 0, "correct off by %ld, targets by %ld", correct, targets);
    cr_assert_not(t.done);
    eeb_accel_close(a1), eeb_accel_close(a2);
    eeb_batcher_free(b1), eeb_batcher_free(b2);
    eeb_shard_close(s1), eeb_shard_close(s2);
    eeb_net_free(net);
}
