/*
 * train.c - the training loop: passes of training steps over a shard's
 * batches, and the step of eeb's nets on an accelerator.
 */
#include "tasks/eeb_train.h"

#include <math.h>

int eeb_trainer_accel_step(void *arg, const struct eeb_task_batch *b, struct eeb_trainer_step *out,
                           char *err, size_t errlen)
{
    const struct eeb_trainer_accel *ta = arg;
    struct eeb_batch nb = {b->n, b->pixels, b->labels};
    struct eeb_train_result tr;
    int rc = ta->acc->ops->train_batch(ta->acc, &nb, &tr, err, errlen);
    if (rc == EEB_OK)
        *out = (struct eeb_trainer_step){.has_loss = 1,
                                         .loss = tr.loss,
                                         .correct = tr.correct,
                                         .counted = eeb_task_targets(ta->net, &nb)};
    return rc;
}

int eeb_train_pass(struct eeb_trainer *t, int epoch, struct eeb_pass *p, char *err, size_t errlen)
{
    *p = (struct eeb_pass){0};
    int rc = epoch > 1 && !t->done ? eeb_batcher_rewind(t->bt, err, errlen) : EEB_OK;
    while (rc == EEB_OK && !t->done && t->step != t->max_steps && !(t->stop && t->stop(t->arg))) {
        struct eeb_task_batch b;
        struct eeb_trainer_step s = {0};
        if ((rc = eeb_batcher_draw(t->bt, &b, err, errlen)))
            break;
        if (b.n == 0) {
            p->finished = 1;
            break;
        }
        if ((rc = t->train(t->train_arg, &b, &s, err, errlen)))
            break;
        if (s.has_loss && !isfinite(s.loss))
            return eeb_errf(err, errlen, EEB_EINVAL, "step %ld: the loss diverged (lower --lr)",
                            t->step + 1);
        t->step++;
        p->items += b.n;
        if (s.has_loss)
            p->loss_sum += s.loss * b.n, p->loss_items += b.n;
        p->correct += s.correct, p->targets += s.counted;
        t->done = s.done != 0;
        if (t->on_step)
            t->on_step(t->arg, t->step, b.n, s.has_loss ? s.loss : NAN);
    }
    return rc;
}
