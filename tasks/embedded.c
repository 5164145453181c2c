/*
 * embedded.c - a task's embedded default, made through the library: the
 * generator (tasks/gen.c) and the pre-training (tasks/pretrain.c).
 */
#include "tasks/eeb_embedded.h"

#include "tasks/eeb_gen.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_train.h"

#include <string.h>
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

/* Each task's base model as the portable pre-training makes it from the
 * generated pre-train shard on any machine (fpga/ref/gemm_portable.c):
 * the embedded default's runs start from these bytes everywhere, so their
 * S reproduces across machines. */
static const char *const pinned_base_sha256[EEB_TASK_COUNT] = {
    [EEB_TASK_CLS] = "6136425b2b688efd9f3a1119ca7ef8347a44925936a27a1641319d0c73eb3023",
    [EEB_TASK_DET] = "652bc638a704fb3a9feeb64e8a8caa064e5eb10424b52ef8a48390aa767f915c",
    [EEB_TASK_VIDEO] = "5eff8a71a05ffd04a58912a1481cf25fe15bb4afe4a7fdc8d327a7e415ef7137",
};

/* 1 if path holds the task's pinned base model, 0 if not (or missing). */
static int is_pinned(enum eeb_task task, const char *path, char sha[EEB_SHA256_HEX])
{
    char err[256];
    sha[0] = '\0';
    return eeb_sha256_file(path, sha, err, sizeof err) == EEB_OK &&
           strcmp(sha, pinned_base_sha256[task]) == 0;
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
    char sha[EEB_SHA256_HEX];
    if (rc || is_pinned(task, out->model, sha))
        return rc;
    if (sha[0] && log) /* an earlier eeb's, made on OpenBLAS: this machine's own */
        fprintf(log, "%s is not the pinned base model (SHA-256 %s): made again\n", out->model, sha);
    if ((rc = make_model(t, out, log, err, errlen)) || is_pinned(task, out->model, sha))
        return rc;
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "%s: the base model pre-trained here has SHA-256 %s, not the pinned %s: this "
                    "machine's floating point differs from the reference's, so the embedded "
                    "default's runs here would not reproduce elsewhere (please report the CPU)",
                    out->model, sha, pinned_base_sha256[task]);
}
