/*
 * train.c - the training loop: passes of SGD steps over a shard's batches.
 */
#include "tasks/eeb_train.h"

#include <math.h>

int eeb_train_pass(struct eeb_trainer *t, int epoch, struct eeb_pass *p, char *err, size_t errlen)
{
    *p = (struct eeb_pass){0};
    int rc = epoch > 1 ? eeb_batcher_rewind(t->bt, err, errlen) : EEB_OK;
    while (rc == EEB_OK && t->step != t->max_steps && !(t->stop && t->stop(t->arg))) {
        struct eeb_batch b;
        struct eeb_train_result tr;
        if ((rc = eeb_batcher_next(t->bt, &b, err, errlen)))
            break;
        if (b.n == 0) {
            p->finished = 1;
            break;
        }
        if ((rc = t->acc->ops->train_batch(t->acc, &b, &tr, err, errlen)))
            break;
        if (!isfinite(tr.loss))
            return eeb_errf(err, errlen, EEB_EINVAL, "step %ld: the loss diverged (lower --lr)",
                            t->step + 1);
        t->step++;
        p->loss_sum += tr.loss * b.n, p->items += b.n;
        p->correct += tr.correct, p->targets += eeb_task_targets(t->net, &b);
        if (t->on_step)
            t->on_step(t->arg, t->step, b.n, tr.loss);
    }
    return rc;
}
