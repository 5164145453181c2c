/*
 * host.c - a system under test as the harness drives it, whichever way it
 * is reached (eeb's own backends, a team's library, a team's program): the
 * calls made through its table, a team's errors named with the SUT and the
 * call, its answers checked before they count, and the test stage's
 * predictor over it.
 */
#include "sut/eeb_sut_host.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The shard's boxes are handed over as they are: the same layout. */
_Static_assert(sizeof(struct eeb_box) == sizeof(struct eeb_sut_box), "box layouts");
_Static_assert(offsetof(struct eeb_box, x0) == offsetof(struct eeb_sut_box, x0), "box layouts");
_Static_assert(offsetof(struct eeb_box, y1) == offsetof(struct eeb_sut_box, y1), "box layouts");

struct eeb_sut {
    const struct eeb_sut_ops *ops;
    void *state;
    void *library; /* a team's library loaded into eeb, or NULL */
    enum eeb_sut_kind kind;
    int hosted;     /* a team's library in a process of its own (the exec layer's table) */
    char name[256]; /* the backend as given, for messages */
    struct eeb_sut_setup setup;
    /* predict's slots for a batch of batch_max */
    int32_t *classes, *counts;
    float *scores;
    struct eeb_sut_detection *detections;
};

enum eeb_sut_kind eeb_sut_kind_of(const char *backend)
{
    return strncmp(backend, "exec:", 5) == 0 ? EEB_SUT_EXEC
           : strchr(backend, '/')            ? EEB_SUT_LIBRARY
                                             : EEB_SUT_BUILTIN;
}

enum eeb_sut_kind eeb_sut_kind_recorded(const char *backend)
{
    return strcmp(backend, EEB_SUT_DECLARED_LIBRARY) == 0 ? EEB_SUT_LIBRARY
           : strcmp(backend, EEB_SUT_DECLARED_EXEC) == 0  ? EEB_SUT_EXEC
                                                          : eeb_sut_kind_of(backend);
}

int eeb_sut_check_backend(const char *backend, char *err, size_t errlen)
{
    switch (eeb_sut_kind_of(backend)) {
    case EEB_SUT_EXEC: return eeb_sut_exec_check(backend + 5, err, errlen);
    case EEB_SUT_LIBRARY: /* not loaded: its code runs only where it is opened */
        return eeb_sut_plugin_check_file(backend, err, errlen);
    default: return eeb_accel_check_name(backend, err, errlen);
    }
}

/* A team library's error (any non-zero), named with its SUT and the call;
 * eeb's own backends and the exec protocol (sut/exec.c, hosting a library
 * too) name theirs. */
static int named(const struct eeb_sut *s, const char *call, int rc, char *err, size_t errlen)
{
    if (rc == 0 || s->kind != EEB_SUT_LIBRARY || s->hosted)
        return rc;
    char why[512];
    snprintf(why, sizeof why, "%s", err && err[0] ? err : "failed, saying nothing");
    return eeb_errf(err, errlen, EEB_EDEVICE, "SUT '%s': %s: %s", s->name, call, why);
}

/* predict's slots, for batches of setup->batch_max. */
static int slots(struct eeb_sut *s, char *err, size_t errlen)
{
    size_t n = (size_t)s->setup.batch_max, k = (size_t)s->setup.top_k,
           m = (size_t)s->setup.max_boxes;
    s->classes = calloc(n * k + 1, sizeof *s->classes);
    s->scores = calloc(n * k + 1, sizeof *s->scores);
    s->counts = calloc(n + 1, sizeof *s->counts);
    s->detections = calloc(n * m + 1, sizeof *s->detections);
    return s->classes && s->scores && s->counts && s->detections
               ? EEB_OK
               : eeb_errf(err, errlen, EEB_ENOMEM, "SUT '%s': out of memory", s->name);
}

/* The table and its state, by the way backend is reached. */
static int start(struct eeb_sut *s, const struct eeb_sut_options *opt, char *err, size_t errlen)
{
    double deadline = opt->deadline_s > 0 ? opt->deadline_s : EEB_SUT_DEADLINE_S;
    if (s->kind == EEB_SUT_EXEC)
        return eeb_sut_exec_start(s->name + 5, &s->setup, deadline, &s->ops, &s->state, err,
                                  errlen);
    if (s->kind == EEB_SUT_LIBRARY && !opt->in_process) {
        s->hosted = 1;
        return eeb_sut_hosted_start(s->name, &s->setup, deadline, &s->ops, &s->state, err, errlen);
    }
    char config[8192];
    if (s->kind == EEB_SUT_LIBRARY) {
        int rc = eeb_sut_plugin_load(s->name, &s->ops, &s->library, err, errlen);
        if (rc)
            return rc;
    } else {
        s->ops = eeb_sut_builtin();
        if (eeb_sut_builtin_config(s->name, opt->builtin, config, sizeof config))
            return eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': its settings are too long",
                            s->name);
        s->setup.config = config;
    }
    return named(s, "open", s->ops->open(&s->setup, &s->state, err, errlen), err, errlen);
}

int eeb_sut_open(const char *backend, const struct eeb_sut_setup *setup,
                 const struct eeb_sut_options *opt, struct eeb_sut **out, char *err, size_t errlen)
{
    struct eeb_sut *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    snprintf(s->name, sizeof s->name, "%s", backend);
    s->kind = eeb_sut_kind_of(backend);
    s->setup = *setup;
    s->setup.config = opt->team_config ? opt->team_config : "";
    int rc = slots(s, err, errlen);
    if (rc == EEB_OK)
        rc = start(s, opt, err, errlen);
    s->setup.config = NULL; /* the caller's, or start's: for the call only */
    if (rc) {
        eeb_sut_close(s);
        return rc;
    }
    *out = s;
    return EEB_OK;
}

int eeb_sut_load_model(struct eeb_sut *s, const char *path, char *err, size_t errlen)
{
    return named(s, "load_model", s->ops->load_model(s->state, path, err, errlen), err, errlen);
}

int eeb_sut_train(struct eeb_sut *s, const struct eeb_task_batch *b, struct eeb_sut_step *step,
                  char *err, size_t errlen)
{
    const struct eeb_sut_batch batch = {b->n, b->pixels, b->labels, b->box_counts,
                                        (const struct eeb_sut_box *)b->boxes};
    *step = (struct eeb_sut_step){.loss = NAN};
    return named(s, "train", s->ops->train(s->state, &batch, step, err, errlen), err, errlen);
}

int eeb_sut_end_training(struct eeb_sut *s, char *err, size_t errlen)
{
    int (*end_training)(void *, char *, size_t) = EEB_SUT_SLOT(s->ops, end_training);
    return end_training ? named(s, "end_training", end_training(s->state, err, errlen), err, errlen)
                        : EEB_OK;
}

void eeb_sut_counters(struct eeb_sut *s, struct eeb_sut_counters *c)
{
    *c = (struct eeb_sut_counters){0};
    void (*counters)(void *, struct eeb_sut_counters *) = EEB_SUT_SLOT(s->ops, counters);
    if (counters)
        counters(s->state, c);
    c->detail[sizeof c->detail - 1] = '\0';
}

int eeb_sut_save_model(struct eeb_sut *s, const char *path, char *err, size_t errlen)
{
    int (*save_model)(void *, const char *, char *, size_t) = EEB_SUT_SLOT(s->ops, save_model);
    if (!save_model)
        return eeb_errf(err, errlen, EEB_ENOTSUP, "SUT '%s' writes no model (save_model)", s->name);
    return named(s, "save_model", save_model(s->state, path, err, errlen), err, errlen);
}

/* One item's answer, checked and made the test stage's. */
static int take(struct eeb_sut *s, int i, struct eeb_task_predicted *p, char *err, size_t errlen)
{
    const struct eeb_sut_setup *u = &s->setup;
    if (u->task != EEB_SUT_DET) {
        int k = u->top_k < EEB_TOPK_MAX ? u->top_k : EEB_TOPK_MAX;
        for (p->nranked = 0; p->nranked < k; p->nranked++) {
            int32_t c = s->classes[(size_t)i * u->top_k + p->nranked];
            if (c < 0 || c >= u->classes)
                return eeb_errf(err, errlen, EEB_EFORMAT,
                                "SUT '%s': predict: batch item %d, rank %d: class %d (0..%d)",
                                s->name, i, p->nranked + 1, (int)c, u->classes - 1);
            float score = s->scores[(size_t)i * u->top_k + p->nranked];
            if (!isfinite(score))
                return eeb_errf(
                    err, errlen, EEB_EFORMAT,
                    "SUT '%s': predict: batch item %d, rank %d: score %g (a finite score)", s->name,
                    i, p->nranked + 1, (double)score);
            p->ranked[p->nranked] = c;
            p->scores[p->nranked] = score;
        }
        return EEB_OK;
    }
    int32_t n = s->counts[i];
    if (n < 0 || n > u->max_boxes)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "SUT '%s': predict: batch item %d: %d boxes (0..%d)", s->name, i, (int)n,
                        u->max_boxes);
    for (p->nboxes = 0; p->nboxes < n; p->nboxes++) {
        const struct eeb_sut_detection *d = &s->detections[(size_t)i * u->max_boxes + p->nboxes];
        const struct {
            const char *field;
            float value;
        } numbers[] = {
            {"score", d->score}, {"x0", d->x0}, {"y0", d->y0}, {"x1", d->x1}, {"y1", d->y1}};
        for (size_t f = 0; f < sizeof numbers / sizeof *numbers; f++)
            if (!isfinite(numbers[f].value))
                return eeb_errf(err, errlen, EEB_EFORMAT,
                                "SUT '%s': predict: batch item %d, box %d: %s %g (a finite number)",
                                s->name, i, p->nboxes + 1, numbers[f].field,
                                (double)numbers[f].value);
        if (d->cls < 0 || d->cls >= u->classes || !(d->x0 <= d->x1) || !(d->y0 <= d->y1))
            return eeb_errf(
                err, errlen, EEB_EFORMAT,
                "SUT '%s': predict: batch item %d, box %d: class %d, score %g, (%g, %g)-(%g, "
                "%g) (a class, a finite score, x0 <= x1, y0 <= y1)",
                s->name, i, p->nboxes + 1, (int)d->cls, d->score, d->x0, d->y0, d->x1, d->y1);
        p->boxes[p->nboxes] = (struct eeb_scored_box){d->cls, d->score, d->x0, d->y0, d->x1, d->y1};
    }
    return EEB_OK;
}

static int predict(void *arg, const struct eeb_task_batch *b, struct eeb_task_predicted *out,
                   char *err, size_t errlen)
{
    struct eeb_sut *s = arg;
    if (b->n > s->setup.batch_max)
        return eeb_errf(err, errlen, EEB_EINVAL, "a test batch of %d items (at most %d)", b->n,
                        s->setup.batch_max);
    const struct eeb_sut_batch batch = {b->n, b->pixels, NULL, NULL, NULL};
    struct eeb_sut_predictions slots = {s->classes, s->scores, s->counts, s->detections};
    memset(s->counts, 0, (size_t)b->n * sizeof *s->counts);
    int rc =
        named(s, "predict", s->ops->predict(s->state, &batch, &slots, err, errlen), err, errlen);
    for (int i = 0; rc == EEB_OK && i < b->n; i++)
        rc = take(s, i, &out[i], err, errlen);
    return rc;
}

/* The test items are of the shape the SUT was opened for, and come in
 * batches it takes. */
static int fits(void *arg, const struct eeb_shard_info *in, const struct eeb_task_eval_options *opt,
                char *err, size_t errlen)
{
    const struct eeb_sut *s = arg;
    const struct eeb_sut_setup *u = &s->setup;
    if (in->frames != u->frames || in->h != u->height || in->w != u->width ||
        in->c != u->channels || in->classes != u->classes)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "the test items are %d x %dx%dx%d of %d classes; the SUT was opened for %d "
                        "x %dx%dx%d of %d",
                        in->frames, in->h, in->w, in->c, in->classes, u->frames, u->height,
                        u->width, u->channels, u->classes);
    if (opt->batch > u->batch_max || opt->max_boxes > u->max_boxes)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "test batches of %d items and %d boxes; the SUT takes %d and %d",
                        opt->batch, opt->max_boxes, u->batch_max, u->max_boxes);
    return EEB_OK;
}

void eeb_sut_predictor(struct eeb_sut *s, struct eeb_task_predictor *p)
{
    *p = (struct eeb_task_predictor){.start = fits, .predict = predict, .arg = s};
}

const char *eeb_sut_kind_name(enum eeb_sut_kind kind)
{
    return kind == EEB_SUT_LIBRARY ? "library" : kind == EEB_SUT_EXEC ? "exec" : "builtin";
}

void eeb_sut_identify(struct eeb_sut *s, struct eeb_sut_identity *id)
{
    struct eeb_sut_counters c;
    *id = (struct eeb_sut_identity){.kind = NULL};
    const char *name = s->kind == EEB_SUT_BUILTIN ? s->name : s->ops->name;
    snprintf(id->name, sizeof id->name, "%s", name ? name : "");
    /* a slot version 1 lacks: read through EEB_SUT_SLOT, never past an older table */
    const char *version = s->kind == EEB_SUT_BUILTIN ? NULL : EEB_SUT_SLOT(s->ops, version);
    snprintf(id->version, sizeof id->version, "%s", version ? version : "");
    id->kind = eeb_sut_kind_name(s->kind);
    id->hosting = eeb_sut_isolated(s) ? "process" : "in-process";
    eeb_sut_counters(s, &c);
    snprintf(id->detail, sizeof id->detail, "%s", c.detail);
}

int eeb_sut_isolated(const struct eeb_sut *s)
{
    return s->kind == EEB_SUT_EXEC || s->hosted;
}

int eeb_sut_abandon(struct eeb_sut *s)
{
    return s && eeb_sut_isolated(s) ? eeb_sut_exec_kill(s->state) : 0;
}

void eeb_sut_close(struct eeb_sut *s)
{
    if (!s)
        return;
    if (s->ops && s->state)
        s->ops->close(s->state);
    if (s->library)
        eeb_sut_plugin_unload(s->library);
    free(s->classes), free(s->scores), free(s->counts), free(s->detections);
    free(s);
}
