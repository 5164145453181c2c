/*
 * embedded.c - a task's embedded default, made through the library: the
 * generator (tasks/gen.c) and the pre-training (tasks/pretrain.c).
 */
#include "tasks/eeb_embedded.h"

#include "tasks/eeb_gen.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_train.h"

#include <unistd.h>

/* One shard of the embedded default, logged as `eeb data gen` would make it. */
static int make_shard(const struct eeb_task_ops *t, const char *path, enum eeb_gen_domain domain,
                      int test, uint64_t n, FILE *log, char *err, size_t errlen)
{
    const struct eeb_task_profile *p = &t->profile;
    /* images take no frames; the seed is the generator's default */
    struct eeb_gen_spec sp = {.task = t->task,
                              .domain = domain,
                              .test = test,
                              .n = n,
                              .seed = 1,
                              .size = p->size,
                              .frames = t->clips ? p->frames : 1};
    if (log) {
        fprintf(log, "$ eeb data gen --task %s --domain %s --split %s --n %llu --size %d -o %s -q",
                eeb_task_name(t->task), domain == EEB_GEN_PRETRAIN ? "pretrain" : "finetune",
                test ? "test" : "train", (unsigned long long)n, p->size, path);
        if (t->clips)
            fprintf(log, " --frames %d\n", p->frames);
        else
            fputs(" --seed 1\n", log);
    }
    int rc = eeb_gen_shard(path, &sp, NULL, NULL, err, errlen);
    if (rc == EEB_OK && log) {
        char what[256];
        struct eeb_shard *s;
        if ((rc = eeb_shard_open(&s, path, err, errlen)))
            return rc;
        eeb_shard_describe(eeb_shard_info(s), what, sizeof what);
        fprintf(log, "%s: %s\n", path, what);
        eeb_shard_close(s);
    }
    return rc;
}

/* The base model, logged as `eeb model pretrain` would make it. */
static int make_model(const struct eeb_task_ops *t, const struct eeb_embedded *e, FILE *log,
                      char *err, size_t errlen)
{
    const struct eeb_task_profile *p = &t->profile;
    struct eeb_pretrain a;
    eeb_pretrain_defaults(&a);
    a.task = t->task;
    a.data = e->pretrain;
    a.out = e->model;
    a.epochs = p->pretrain_epochs;
    a.cfg.lr = p->lr;
    a.log = log;
    if (log)
        fprintf(log, "$ eeb model pretrain --task %s --data %s -o %s --epochs %d --lr %g\n",
                eeb_task_name(t->task), e->pretrain, e->model, p->pretrain_epochs, p->lr);
    return eeb_pretrain(&a, err, errlen);
}

int eeb_embedded_make(enum eeb_task task, const char *dir, int with_test, FILE *log,
                      struct eeb_embedded *out, char *err, size_t errlen)
{
    const struct eeb_task_ops *t = eeb_task_get(task);
    const char *name = eeb_task_name(task);
    char *paths[] = {out->pretrain, out->finetune, out->test, out->model};
    static const char *const names[] = {"pretrain", "finetune", "test", "base"};
    for (int i = 0; i < 4; i++)
        snprintf(paths[i], sizeof out->model, "%.4096s/%s-%s.%s", dir, name, names[i],
                 i < 3 ? "eebd" : "eebm");
    const int n[] = {t->profile.pretrain_n, t->profile.finetune_n, t->profile.test_n};
    static const enum eeb_gen_domain domains[] = {EEB_GEN_PRETRAIN, EEB_GEN_FINETUNE,
                                                  EEB_GEN_FINETUNE};
    int rc = EEB_OK;
    for (int i = 0; i < 3 && rc == EEB_OK; i++)
        if (access(paths[i], R_OK) != 0 && (i != 2 || with_test))
            rc = make_shard(t, paths[i], domains[i], i == 2, (uint64_t)n[i], log, err, errlen);
    if (rc == EEB_OK && access(out->model, R_OK) != 0)
        rc = make_model(t, out, log, err, errlen);
    return rc;
}
