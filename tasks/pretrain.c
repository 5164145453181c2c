/*
 * pretrain.c - the reference model trained on a shard of its task, written
 * after every epoch so that an interrupted training keeps its last whole
 * epoch.
 */
#include "tasks/eeb_train.h"

#include "fpga/net/eeb_model.h"

/* The model to start from: a->init's, or the task's reference model. */
static int first_model(const struct eeb_pretrain *a, const struct eeb_shard_info *in,
                       struct eeb_net **net, char *err, size_t errlen)
{
    int task = (int)a->task;
    int rc = a->init ? eeb_model_load(a->init, net, &task, err, errlen)
                     : eeb_task_model(in, (uint64_t)a->seed, net, err, errlen);
    if (rc == EEB_OK && task != (int)a->task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s is a %s model, --task is %s", a->init,
                      eeb_task_name_or_none(task), eeb_task_name(a->task));
    return rc;
}

/* The epochs, each ending with the model read back from acc, written and
 * a line logged. */
static int epochs(const struct eeb_pretrain *a, struct eeb_trainer *t, struct eeb_accel *acc,
                  struct eeb_net *net, char *err, size_t errlen)
{
    int rc = EEB_OK;
    for (int epoch = 1; epoch <= (int)a->epochs && t->step != t->max_steps && !t->done; epoch++) {
        struct eeb_pass p;
        int64_t t0 = eeb_mono_ns();
        if ((rc = eeb_train_pass(t, epoch, &p, err, errlen)))
            break;
        double s = (double)(eeb_mono_ns() - t0) / 1e9;
        if ((rc = acc->ops->read_model(acc, net, err, errlen)))
            break;
        eeb_net_set_format(net, a->format);
        if ((rc = eeb_model_save(a->out, net, (int)a->task, err, errlen)))
            break;
        if (a->log)
            fprintf(
                a->log, "epoch %d: step %ld, loss %.4f, train %s %.1f%%, %.1f items/s, saved %s\n",
                epoch, t->step, p.loss_items ? p.loss_sum / p.loss_items : 0.0,
                eeb_task_get(a->task)->train_metric,
                p.targets ? 100.0 * p.correct / p.targets : 0.0, s > 0 ? p.items / s : 0.0, a->out);
    }
    return rc;
}

void eeb_pretrain_defaults(struct eeb_pretrain *a)
{
    *a = (struct eeb_pretrain){
        .backend = "fp32", .epochs = 10, .window = 1024, .seed = 1, .format = EEB_FORMAT_F32};
    eeb_accel_config_default(&a->cfg);
    a->cfg.portable = 1; /* a base model is the same bytes on any machine */
}

int eeb_pretrain(const struct eeb_pretrain *a, char *err, size_t errlen)
{
    struct eeb_shard *shard = NULL;
    struct eeb_net *net = NULL;
    struct eeb_accel *acc = NULL;
    struct eeb_batcher *bt = NULL;
    int rc = eeb_shard_open(&shard, a->data, err, errlen);
    const struct eeb_shard_info *in = rc ? NULL : eeb_shard_info(shard);
    if (rc == EEB_OK &&
        (rc = eeb_shard_holds_task(shard, a->task, "--task", err, errlen)) == EEB_OK &&
        (rc = first_model(a, in, &net, err, errlen)) == EEB_OK &&
        (rc = eeb_accel_start(a->backend, &a->cfg, net, &acc, err, errlen)) == EEB_OK)
        rc = eeb_batcher_new(&bt, shard, net, a->cfg.batch_max, (int)a->window, (uint64_t)a->seed,
                             err, errlen);
    if (rc == EEB_OK) {
        if (a->log)
            fprintf(a->log,
                    "eeb model: %s the %s model (%llu parameters, %.1f M MAC/item) on %llu "
                    "records of %s, backend %s\n",
                    a->init ? "fine-tuning" : "pretraining", eeb_task_name(a->task),
                    (unsigned long long)eeb_net_params(net), (double)eeb_net_macs(net) / 1e6,
                    (unsigned long long)in->count, a->data, acc->ops->name);
        struct eeb_trainer_accel ta = {acc, net};
        struct eeb_trainer t = {.bt = bt,
                                .train = eeb_trainer_accel_step,
                                .train_arg = &ta,
                                .max_steps = a->steps > 0 ? (long)a->steps : -1};
        rc = epochs(a, &t, acc, net, err, errlen);
    }
    eeb_batcher_free(bt);
    eeb_accel_close(acc);
    eeb_net_free(net);
    eeb_shard_close(shard);
    return rc;
}
