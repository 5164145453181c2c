/*
 * check.c - the conformance battery a team runs on its system under test
 * before a benchmark (`eeb sut check`), like MLPerf's audit tests: the
 * table and its version, open and load_model, well-formed answers, the
 * same answers for the same items however they are batched or ordered (a
 * SUT answering from a cache instead of its model is caught), training
 * that changes what it predicts, every call within the deadline, and the
 * optional calls.  Each item is independent where it can be: one that
 * fails does not stop the others, only those that need what it made.
 */
#include "sut/eeb_sut_host.h"

#include "fpga/net/eeb_model.h"
#include "tasks/eeb_gen.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK_BATCH      8   /* batch_max the SUT is opened with */
#define CHECK_MAX_BOXES  100 /* det: as eeb run opens a SUT */
#define CHECK_SEED       5
#define CHECK_FT_ITEMS   32 /* synthetic shards: a few dozen items */
#define CHECK_TEST_ITEMS 24
#define CHECK_TEST_MAX   64       /* of a given test shard, the items predicted */
#define CHECK_TRAIN      4        /* batches trained */
#define CHECK_REBATCH    3        /* the order item's batches */
#define WATCH_EVERY_NS   20000000 /* the watch's look at a call in flight: 20 ms */

/* One item's answer, with the room for its boxes. */
struct answer {
    struct eeb_task_predicted p;
    struct eeb_scored_box boxes[CHECK_MAX_BOXES];
};

/* Items' pixels, held in memory, one after another. */
struct items {
    int n;
    size_t bytes; /* each */
    uint8_t *pixels;
};

/* The watch over a SUT in eeb's own process, whose call past the
 * deadline cannot be stopped: a thread that sees it and hands the report
 * so far to opt->hung. */
struct watch {
    pthread_t thread;
    int running;
    atomic_int stop;
    pthread_mutex_t lock; /* over the report and the call in flight */
    const char *call;     /* in flight, or NULL */
    int64_t since;
};

struct check {
    const struct eeb_sut_check_options *opt;
    struct eeb_sut_check_report *r;
    struct watch w;
    char dir[4096], work[4200], model[4200], saved[4200], ft[4200], test[4200];
    const char *model_path; /* what load_model is given, or NULL */
    struct eeb_shard *ft_shard, *test_shard;
    struct items ft_items, test_items;
    struct eeb_sut_setup setup;
    struct eeb_accel_config builtin;
    struct eeb_sut *sut;
    struct eeb_task_predictor pred;
    uint8_t *batch;              /* CHECK_BATCH items' pixels */
    struct answer *full, *other; /* the test items' full pass, and another */
    int full_ok;
    int trained_batches;
    uint64_t trained_items;
};

const char *eeb_sut_check_item_name(enum eeb_sut_check_item item)
{
    static const char *const names[EEB_SUT_CHECK_ITEMS] = {
        "abi", "open/load", "shapes", "determinism", "order", "training", "deadline", "counters",
    };
    return (unsigned)item < EEB_SUT_CHECK_ITEMS ? names[item] : "?";
}

__attribute__((format(printf, 4, 5))) static void verdict(struct check *c,
                                                          enum eeb_sut_check_item item,
                                                          enum eeb_sut_check_outcome o,
                                                          const char *fmt, ...)
{
    struct eeb_sut_check_result *res = &c->r->items[item];
    pthread_mutex_lock(&c->w.lock);
    res->outcome = o;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->reason, sizeof res->reason, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&c->w.lock);
}

/* A call of the SUT begins: its start, for timed; the watch's to see. */
static int64_t begin(struct check *c, const char *call)
{
    int64_t t0 = eeb_mono_ns();
    pthread_mutex_lock(&c->w.lock);
    c->w.call = call, c->w.since = t0;
    pthread_mutex_unlock(&c->w.lock);
    return t0;
}

/* The call's wall time since t0, kept if it is the slowest yet. */
static void timed(struct check *c, const char *call, int64_t t0)
{
    double s = (double)(eeb_mono_ns() - t0) / 1e9;
    pthread_mutex_lock(&c->w.lock);
    c->w.call = NULL;
    if (s > c->r->slowest_s) {
        c->r->slowest_s = s;
        snprintf(c->r->slowest_call, sizeof c->r->slowest_call, "%s", call);
    }
    pthread_mutex_unlock(&c->w.lock);
}

/* ---- the watch ---- */

static void *watch_main(void *arg)
{
    struct check *c = arg;
    const int64_t deadline = (int64_t)(c->opt->deadline_s * 1e9);
    while (!atomic_load(&c->w.stop)) {
        struct timespec nap = {0, WATCH_EVERY_NS};
        nanosleep(&nap, NULL);
        pthread_mutex_lock(&c->w.lock);
        int64_t took = c->w.call ? eeb_mono_ns() - c->w.since : 0;
        if (took > deadline) {
            struct eeb_sut_check_report *r = c->r;
            r->slowest_s = (double)took / 1e9;
            snprintf(r->slowest_call, sizeof r->slowest_call, "%s", c->w.call);
            r->items[EEB_SUT_CHECK_DEADLINE].outcome = EEB_SUT_CHECK_FAIL;
            snprintf(r->items[EEB_SUT_CHECK_DEADLINE].reason,
                     sizeof r->items[EEB_SUT_CHECK_DEADLINE].reason,
                     "%s has run for more than %g s (the deadline) in eeb's own process, where it "
                     "cannot be stopped: the check ends here (a library hosted in its own "
                     "process, without --in-process, is killed at the deadline instead)",
                     c->w.call, c->opt->deadline_s);
            c->opt->hung(r, c->opt->hung_arg); /* ends the process */
            pthread_mutex_unlock(&c->w.lock);
            break;
        }
        pthread_mutex_unlock(&c->w.lock);
    }
    return NULL;
}

/* The watch started where a hung call cannot be stopped otherwise: a SUT
 * in eeb's own process. */
static void watch_start(struct check *c)
{
    enum eeb_sut_kind kind = eeb_sut_kind_of(c->opt->backend);
    int in_eeb = kind == EEB_SUT_BUILTIN || (kind == EEB_SUT_LIBRARY && c->opt->in_process);
    if (c->opt->hung && in_eeb && pthread_create(&c->w.thread, NULL, watch_main, c) == 0)
        c->w.running = 1;
}

static void watch_end(struct check *c)
{
    if (!c->w.running)
        return;
    atomic_store(&c->w.stop, 1);
    pthread_join(c->w.thread, NULL);
    c->w.running = 0;
}

/* ---- the inputs ---- */

static int make_shard(struct check *c, char *path, size_t n, const char *name, int test,
                      uint64_t items, char *err, size_t errlen)
{
    snprintf(path, n, "%s/%s", c->dir, name);
    const struct eeb_gen_spec spec = {c->opt->task,
                                      EEB_GEN_FINETUNE,
                                      test,
                                      items,
                                      CHECK_SEED,
                                      16,
                                      eeb_task_get(c->opt->task)->clips ? 4 : 1};
    return eeb_gen_shard(path, &spec, NULL, NULL, err, errlen);
}

/* The first (at most max) records' pixels of shard. */
static int read_items(struct eeb_shard *shard, uint64_t max, struct items *it, char *err,
                      size_t errlen)
{
    const struct eeb_shard_info *in = eeb_shard_info(shard);
    it->n = (int)(in->count < max ? in->count : max);
    it->bytes = eeb_shard_pixels(in);
    if (it->n == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no records", eeb_shard_path(shard));
    if (!(it->pixels = malloc((size_t)it->n * it->bytes)))
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    const struct eeb_record *rec;
    for (int i = 0; i < it->n; i++) {
        int rc = eeb_shard_next(shard, &rec, err, errlen);
        if (rc <= 0)
            return rc ? rc
                      : eeb_errf(err, errlen, EEB_EFORMAT, "%s: %d records, its header says %d",
                                 eeb_shard_path(shard), i, it->n);
        memcpy(it->pixels + (size_t)i * it->bytes, rec->pixels, it->bytes);
    }
    return eeb_shard_rewind(shard, err, errlen);
}

/* The shards (given, or made), the same items on both sides, read. */
static int shards(struct check *c, char *err, size_t errlen)
{
    const struct eeb_sut_check_options *o = c->opt;
    int rc = EEB_OK;
    if (!o->finetune) {
        if ((rc = make_shard(c, c->ft, sizeof c->ft, "finetune.eebd", 0, CHECK_FT_ITEMS, err,
                             errlen)) ||
            (rc = make_shard(c, c->test, sizeof c->test, "test.eebd", 1, CHECK_TEST_ITEMS, err,
                             errlen)))
            return rc;
    } else {
        snprintf(c->ft, sizeof c->ft, "%s", o->finetune);
        snprintf(c->test, sizeof c->test, "%s", o->test);
    }
    if ((rc = eeb_shard_open(&c->ft_shard, c->ft, err, errlen)) ||
        (rc = eeb_shard_open(&c->test_shard, c->test, err, errlen)))
        return rc;
    const struct eeb_shard_info *a = eeb_shard_info(c->ft_shard),
                                *b = eeb_shard_info(c->test_shard);
    if (a->task != b->task || a->frames != b->frames || a->h != b->h || a->w != b->w ||
        a->c != b->c || a->classes != b->classes)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s and %s hold different items (task, shape or classes)", c->ft, c->test);
    if ((rc = read_items(c->ft_shard, (uint64_t)CHECK_TRAIN * CHECK_BATCH, &c->ft_items, err,
                         errlen)) ||
        (rc = read_items(c->test_shard, CHECK_TEST_MAX, &c->test_items, err, errlen)))
        return rc;
    size_t n = (size_t)(c->ft_items.n > c->test_items.n ? c->ft_items.n : c->test_items.n);
    c->batch = malloc((size_t)CHECK_BATCH * a->frames * a->h * a->w * a->c);
    c->full = calloc(n, sizeof *c->full);
    c->other = calloc(n, sizeof *c->other);
    return c->batch && c->full && c->other ? EEB_OK
                                           : eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
}

/* The model load_model is given: the team's, or for eeb's own backends a
 * fresh reference model for the shard. */
static int model(struct check *c, char *err, size_t errlen)
{
    c->model_path = c->opt->model;
    if (c->model_path || eeb_sut_kind_of(c->opt->backend) != EEB_SUT_BUILTIN)
        return EEB_OK;
    const struct eeb_shard_info *in = eeb_shard_info(c->ft_shard);
    struct eeb_net *net = NULL;
    snprintf(c->model, sizeof c->model, "%s/reference.eebm", c->dir);
    int rc = eeb_task_model(in, CHECK_SEED, &net, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_model_save(c->model, net, (int)in->task, err, errlen);
    eeb_net_free(net);
    c->model_path = c->model;
    return rc;
}

static void setup_of(struct check *c)
{
    const struct eeb_shard_info *in = eeb_shard_info(c->ft_shard);
    c->setup = (struct eeb_sut_setup){
        .abi_version = EEB_SUT_ABI_VERSION,
        .task = (int32_t)in->task,
        .classes = in->classes,
        .frames = in->frames,
        .height = in->h,
        .width = in->w,
        .channels = in->c,
        .batch_max = CHECK_BATCH,
        .top_k = in->classes < EEB_TOPK_MAX ? in->classes : EEB_TOPK_MAX,
        .max_boxes = CHECK_MAX_BOXES,
        .seed = CHECK_SEED,
        .config = c->opt->sut_config ? c->opt->sut_config : "",
        .workdir = c->work,
        .xclbin = c->opt->xclbin ? c->opt->xclbin : "",
    };
    eeb_accel_config_default(&c->builtin);
    c->builtin.batch_max = CHECK_BATCH;
    c->builtin.seed = CHECK_SEED;
}

/* ---- 1. abi ---- */

/* A library hosted in its own process (eeb sut serve): loaded and its
 * table checked there, where a crash in its code is that process's.  The
 * host refuses open naming what is wrong with the file or the table. */
static int hosted_abi(struct check *c, char *err, size_t errlen)
{
    const char *backend = c->opt->backend;
    const struct eeb_sut_ops *ops = NULL;
    void *state = NULL;
    char why[512] = "";
    int rc = eeb_sut_plugin_check_file(backend, err, errlen);
    if (rc) /* no file, not a library */
        return rc;
    int64_t t0 = begin(c, "open");
    rc =
        eeb_sut_hosted_start(backend, &c->setup, c->opt->deadline_s, &ops, &state, why, sizeof why);
    timed(c, "open", t0);
    if (rc == EEB_EFORMAT) /* the host's refusal: the library's file or table */
        verdict(c, EEB_SUT_CHECK_ABI, EEB_SUT_CHECK_FAIL, "%s", why);
    else if (rc)
        verdict(c, EEB_SUT_CHECK_ABI, EEB_SUT_CHECK_PASS,
                "loaded in a process of its own, its table one this eeb drives (its name: open "
                "failed, see open/load)");
    else {
        snprintf(c->r->name, sizeof c->r->name, "%s", ops->name);
        verdict(c, EEB_SUT_CHECK_ABI, EEB_SUT_CHECK_PASS,
                "loaded in a process of its own, its table one this eeb drives (ABI version %d or "
                "older, every required call), name '%s'",
                EEB_SUT_ABI_VERSION, ops->name);
        ops->close(state);
    }
    return EEB_OK;
}

/* EEB_OK, the item said; or an error when the SUT cannot be found or
 * loaded at all. */
static int item_abi(struct check *c, char *err, size_t errlen)
{
    const char *backend = c->opt->backend;
    const struct eeb_sut_ops *ops = NULL;
    void *library = NULL, *state = NULL;
    char why[512] = "";
    int rc = EEB_OK;
    switch (eeb_sut_kind_of(backend)) {
    case EEB_SUT_BUILTIN:
        if ((rc = eeb_accel_check_name(backend, err, errlen)))
            return rc;
        rc = eeb_sut_ops_check(ops = eeb_sut_builtin(), backend, why, sizeof why);
        break;
    case EEB_SUT_LIBRARY:
        if (c->opt->in_process) {
            rc = eeb_sut_plugin_load(backend, &ops, &library, why, sizeof why);
            if (rc != EEB_OK && rc != EEB_EVERSION && rc != EEB_EINVAL) /* no file, no library */
                return eeb_errf(err, errlen, rc, "%s", why);
            break;
        }
        return hosted_abi(c, err, errlen);
    case EEB_SUT_EXEC: {
        if ((rc = eeb_sut_check_backend(backend, err, errlen)))
            return rc;
        /* the table is the exec layer's, its name the program's open reply:
         * a program that breaks the protocol fails open/load, saying how */
        int64_t t0 = begin(c, "open");
        if (eeb_sut_exec_start(backend + 5, &c->setup, c->opt->deadline_s, &ops, &state, why,
                               sizeof why)) {
            timed(c, "open", t0);
            verdict(c, EEB_SUT_CHECK_ABI, EEB_SUT_CHECK_PASS,
                    "the program can be run; the exec protocol's table, ABI version %d (its name: "
                    "open failed, see open/load)",
                    EEB_SUT_ABI_VERSION);
            return EEB_OK;
        }
        timed(c, "open", t0);
        rc = eeb_sut_ops_check(ops, backend, why, sizeof why);
        break;
    }
    }
    if (rc == EEB_OK) {
        snprintf(c->r->name, sizeof c->r->name, "%s", ops->name);
        verdict(c, EEB_SUT_CHECK_ABI, EEB_SUT_CHECK_PASS,
                "ABI version %d, every required call, "
                "name '%s'",
                ops->abi_version, ops->name);
    } else {
        verdict(c, EEB_SUT_CHECK_ABI, EEB_SUT_CHECK_FAIL, "%s", why);
    }
    if (state)
        ops->close(state);
    eeb_sut_plugin_unload(library);
    return EEB_OK;
}

/* ---- 2. open/load ---- */

static int item_open(struct check *c)
{
    const struct eeb_sut_options sopt = {.builtin = &c->builtin,
                                         .team_config = c->opt->sut_config,
                                         .deadline_s = c->opt->deadline_s,
                                         .in_process = c->opt->in_process};
    char err[512] = "";
    int64_t t0 = begin(c, "open");
    int rc = eeb_sut_open(c->opt->backend, &c->setup, &sopt, &c->sut, err, sizeof err);
    timed(c, "open", t0);
    if (rc == EEB_OK && c->model_path) {
        t0 = begin(c, "load_model");
        rc = eeb_sut_load_model(c->sut, c->model_path, err, sizeof err);
        timed(c, "load_model", t0);
    }
    struct eeb_task_eval_options eo;
    eeb_task_eval_defaults(&eo);
    eo.batch = CHECK_BATCH, eo.max_boxes = CHECK_MAX_BOXES;
    if (rc == EEB_OK) {
        eeb_sut_predictor(c->sut, &c->pred);
        rc = c->pred.start(c->pred.arg, eeb_shard_info(c->test_shard), &eo, err, sizeof err);
    }
    if (rc) {
        verdict(c, EEB_SUT_CHECK_OPEN, EEB_SUT_CHECK_FAIL, "%s", err);
        return rc;
    }
    const struct eeb_sut_setup *u = &c->setup;
    struct eeb_sut_identity id = {.kind = NULL};
    eeb_sut_identify(c->sut, &id);
    snprintf(c->r->version, sizeof c->r->version, "%s", id.version);
    verdict(c, EEB_SUT_CHECK_OPEN, EEB_SUT_CHECK_PASS,
            "opened for %s items of %d x %dx%dx%d, %d classes, batch_max %d; %s%s",
            eeb_task_name((enum eeb_task)u->task), u->frames, u->height, u->width, u->channels,
            u->classes, u->batch_max,
            !c->model_path              ? "no --model: load_model not called"
            : c->model_path == c->model ? "loaded a fresh reference model"
                                        : "loaded ",
            c->model_path && c->model_path != c->model ? c->model_path : "");
    return EEB_OK;
}

/* ---- predicting ---- */

/* Predicts items idx[0..n-1] of it, batch at a time, into out[0..n-1]. */
static int predict(struct check *c, const struct items *it, const int *idx, int n, int batch,
                   struct answer *out, char *err, size_t errlen)
{
    struct eeb_task_predicted got[CHECK_BATCH];
    for (int at = 0; at < n; at += batch) {
        int m = n - at < batch ? n - at : batch;
        memset(got, 0, sizeof got);
        for (int j = 0; j < m; j++) {
            memcpy(c->batch + (size_t)j * it->bytes, it->pixels + (size_t)idx[at + j] * it->bytes,
                   it->bytes);
            got[j].boxes = out[at + j].boxes;
        }
        const struct eeb_task_batch b = {.n = m, .pixels = c->batch};
        int64_t t0 = begin(c, "predict");
        int rc = c->pred.predict(c->pred.arg, &b, got, err, errlen);
        timed(c, "predict", t0);
        if (rc)
            return rc;
        for (int j = 0; j < m; j++)
            out[at + j].p = got[j], out[at + j].p.boxes = out[at + j].boxes;
    }
    return EEB_OK;
}

/* Every item of it, in order, in batches of batch. */
static int predict_all(struct check *c, const struct items *it, int batch, struct answer *out,
                       char *err, size_t errlen)
{
    int idx[CHECK_TEST_MAX > CHECK_TRAIN * CHECK_BATCH ? CHECK_TEST_MAX
                                                       : CHECK_TRAIN * CHECK_BATCH];
    for (int i = 0; i < it->n; i++)
        idx[i] = i;
    return predict(c, it, idx, it->n, batch, out, err, errlen);
}

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* The same answer, bit for bit: classes, scores, boxes. */
static int same_answer(const struct answer *a, const struct answer *b)
{
    if (a->p.nranked != b->p.nranked || a->p.nboxes != b->p.nboxes)
        return 0;
    for (int r = 0; r < a->p.nranked; r++)
        if (a->p.ranked[r] != b->p.ranked[r] || !same_bits(a->p.scores[r], b->p.scores[r]))
            return 0;
    for (int j = 0; j < a->p.nboxes; j++) {
        const struct eeb_scored_box *x = &a->boxes[j], *y = &b->boxes[j];
        if (x->cls != y->cls || !same_bits(x->score, y->score) || !same_bits(x->x0, y->x0) ||
            !same_bits(x->y0, y->y0) || !same_bits(x->x1, y->x1) || !same_bits(x->y1, y->y1))
            return 0;
    }
    return 1;
}

/* The same answer as far as the item's model goes: a device may round a
 * batch's numbers by the batch (a shared fixed-point scale), so the order
 * item asks for the same best class (cls, video), or the same best box's class
 * (det: among an untrained net's many weak boxes, which is best and
 * where moves with the rounding), not the same bits.  A cache keyed by
 * position or batch answers another item's: a class by chance at most. */
static int same_best(const struct answer *a, const struct answer *b)
{
    if (a->p.nranked || b->p.nranked)
        return a->p.nranked && b->p.nranked && a->p.ranked[0] == b->p.ranked[0];
    if (!a->p.nboxes || !b->p.nboxes)
        return a->p.nboxes == b->p.nboxes;
    return a->boxes[0].cls == b->boxes[0].cls;
}

/* An answer in a few words, for a reason. */
static const char *said(const struct answer *a, char *buf, size_t n)
{
    if (a->p.nboxes)
        snprintf(buf, n, "%d boxes, the first class %d score %.9g", a->p.nboxes, a->boxes[0].cls,
                 (double)a->boxes[0].score);
    else if (a->p.nranked)
        snprintf(buf, n, "class %d score %.9g first", a->p.ranked[0], (double)a->p.scores[0]);
    else
        snprintf(buf, n, "nothing");
    return buf;
}

/* ---- 3. shapes ---- */

static void item_shapes(struct check *c)
{
    char err[512];
    int idx[CHECK_BATCH], n = c->test_items.n < CHECK_BATCH ? c->test_items.n : CHECK_BATCH;
    for (int i = 0; i < n; i++)
        idx[i] = i;
    if (predict(c, &c->test_items, idx, 1, 1, c->other, err, sizeof err) ||
        predict(c, &c->test_items, idx, n, n, c->other, err, sizeof err)) {
        verdict(c, EEB_SUT_CHECK_SHAPES, EEB_SUT_CHECK_FAIL, "%s", err);
        return;
    }
    const struct eeb_sut_setup *u = &c->setup;
    if (u->task == EEB_SUT_DET)
        verdict(c, EEB_SUT_CHECK_SHAPES, EEB_SUT_CHECK_PASS,
                "batches of 1 and %d: at most %d boxes an item, classes 0..%d, finite scores, "
                "corners in order",
                n, u->max_boxes, u->classes - 1);
    else
        verdict(c, EEB_SUT_CHECK_SHAPES, EEB_SUT_CHECK_PASS,
                "batches of 1 and %d: top-%d classes 0..%d, finite scores, for every item", n,
                u->top_k, u->classes - 1);
}

/* ---- 4. determinism ---- */

static void item_determinism(struct check *c)
{
    char err[512], a[128], b[128];
    const struct items *it = &c->test_items;
    if (predict_all(c, it, CHECK_BATCH, c->full, err, sizeof err)) {
        verdict(c, EEB_SUT_CHECK_DETERMINISM, EEB_SUT_CHECK_FAIL, "%s", err);
        return;
    }
    c->full_ok = 1;
    if (predict_all(c, it, CHECK_BATCH, c->other, err, sizeof err)) {
        verdict(c, EEB_SUT_CHECK_DETERMINISM, EEB_SUT_CHECK_FAIL, "the second pass: %s", err);
        return;
    }
    for (int i = 0; i < it->n; i++)
        if (!same_answer(&c->full[i], &c->other[i])) {
            verdict(c, EEB_SUT_CHECK_DETERMINISM, EEB_SUT_CHECK_FAIL,
                    "test item %d, predicted twice without training: %s, then %s", i,
                    said(&c->full[i], a, sizeof a), said(&c->other[i], b, sizeof b));
            return;
        }
    verdict(c, EEB_SUT_CHECK_DETERMINISM, EEB_SUT_CHECK_PASS,
            "%d test items predicted twice: the same answers, bit for bit", it->n);
}

/* ---- 5. order ---- */

/* idx[0..n-1] predicted in batches of batch agree with the full pass;
 * else the item fails, saying how they were asked. */
static int agrees(struct check *c, const int *idx, int n, int batch, const char *how)
{
    char err[512], a[128], b[128];
    if (predict(c, &c->test_items, idx, n, batch, c->other, err, sizeof err)) {
        verdict(c, EEB_SUT_CHECK_ORDER, EEB_SUT_CHECK_FAIL, "%s: %s", how, err);
        return 0;
    }
    for (int j = 0; j < n; j++)
        if (!same_best(&c->full[idx[j]], &c->other[j])) {
            verdict(c, EEB_SUT_CHECK_ORDER, EEB_SUT_CHECK_FAIL,
                    "test item %d %s: %s; in the full pass %s (an answer that depends on the "
                    "item's place or batch, not on its pixels)",
                    idx[j], how, said(&c->other[j], a, sizeof a),
                    said(&c->full[idx[j]], b, sizeof b));
            return 0;
        }
    return 1;
}

static void item_order(struct check *c)
{
    if (!c->full_ok) {
        verdict(c, EEB_SUT_CHECK_ORDER, EEB_SUT_CHECK_SKIP, "no full pass to compare with");
        return;
    }
    int n = c->test_items.n, idx[CHECK_TEST_MAX] = {0}, m = 0;
    for (int i = 0; i < n; i++)
        idx[i] = n - 1 - i;
    if (!agrees(c, idx, n, CHECK_REBATCH, "reversed, in batches of 3"))
        return;
    /* re-drawn: every third item from the second on, last first, alone */
    for (int i = n - 1; i >= 0; i--)
        if (i % 3 == 1)
            idx[m++] = i;
    if (m == 0)
        idx[m++] = 0;
    if (!agrees(c, idx, m, 1, "predicted alone"))
        return;
    verdict(c, EEB_SUT_CHECK_ORDER, EEB_SUT_CHECK_PASS,
            "%d items reversed in batches of %d, and %d of them alone: the full pass's answers", n,
            CHECK_REBATCH, m);
}

/* ---- 6. training ---- */

/* A step as sut/eeb_sut.h says: a finite or NAN loss, 0 <= correct <=
 * counted, done 0 or 1. */
static int sane_step(const struct eeb_sut_step *s, char *why, size_t n)
{
    if (isinf(s->loss))
        return snprintf(why, n, "loss %g (finite, or NAN if not reported)", s->loss), 0;
    if (s->correct < 0 || s->counted < 0 || s->correct > s->counted)
        return snprintf(why, n, "correct %lld of %lld counted (0 <= correct <= counted)",
                        (long long)s->correct, (long long)s->counted),
               0;
    if (s->done != 0 && s->done != 1)
        return snprintf(why, n, "done %d (0 or 1)", s->done), 0;
    return 1;
}

/* Trains up to CHECK_TRAIN batches of the fine-tune shard in its order
 * (a window of one record: the items read into ft_items). */
static int train(struct check *c, double *first, double *last, char *err, size_t errlen)
{
    struct eeb_batcher *bt;
    int rc = eeb_batcher_new_as_stored(&bt, c->ft_shard, CHECK_BATCH, 1, CHECK_SEED, err, errlen);
    if (rc)
        return rc;
    struct eeb_task_batch b;
    struct eeb_sut_step step = {.done = 0};
    char why[256];
    while (rc == EEB_OK && c->trained_batches < CHECK_TRAIN && !step.done) {
        if ((rc = eeb_batcher_draw(bt, &b, err, errlen)) || b.n == 0)
            break;
        int64_t t0 = begin(c, "train");
        rc = eeb_sut_train(c->sut, &b, &step, err, errlen);
        timed(c, "train", t0);
        if (rc == EEB_OK && !sane_step(&step, why, sizeof why))
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "train, batch %d: %s", c->trained_batches + 1,
                          why);
        if (rc == EEB_OK) {
            if (c->trained_batches++ == 0)
                *first = step.loss;
            *last = step.loss;
            c->trained_items += (uint64_t)b.n;
        }
    }
    eeb_batcher_free(bt);
    if (rc == EEB_OK) {
        int64_t t0 = begin(c, "end_training");
        rc = eeb_sut_end_training(c->sut, err, errlen);
        timed(c, "end_training", t0);
    }
    return rc;
}

static void item_training(struct check *c)
{
    char err[512];
    const struct items *it = &c->ft_items;
    double first = NAN, last = NAN;
    if (predict_all(c, it, CHECK_BATCH, c->full, err, sizeof err) ||
        train(c, &first, &last, err, sizeof err) ||
        predict_all(c, it, CHECK_BATCH, c->other, err, sizeof err)) {
        verdict(c, EEB_SUT_CHECK_TRAINING, EEB_SUT_CHECK_FAIL, "%s", err);
        return;
    }
    int changed = 0;
    for (int i = 0; i < it->n; i++)
        changed += !same_answer(&c->full[i], &c->other[i]);
    if (!changed)
        verdict(c, EEB_SUT_CHECK_TRAINING, EEB_SUT_CHECK_FAIL,
                "%d batches trained, and no answer of the %d training items changed (training "
                "changes nothing predict sees)",
                c->trained_batches, it->n);
    else
        verdict(c, EEB_SUT_CHECK_TRAINING, EEB_SUT_CHECK_PASS,
                "%d batches trained (loss %.4g, then %.4g; sane steps): %d of %d training items' "
                "answers changed",
                c->trained_batches, first, last, changed, it->n);
}

/* ---- 8. counters/save_model ---- */

static void item_counters(struct check *c)
{
    struct eeb_sut_counters k;
    char said_counters[256] = "no counters", said_save[600] = "no save_model", err[512];
    eeb_sut_counters(c->sut, &k);
    int counters = k.steps || k.items || k.detail[0];
    if (counters)
        snprintf(said_counters, sizeof said_counters, "counters: %llu steps, %llu items%s",
                 (unsigned long long)k.steps, (unsigned long long)k.items,
                 k.steps == (uint64_t)c->trained_batches && k.items == c->trained_items
                     ? ""
                     : " (warning: not the batches trained)");
    snprintf(c->saved, sizeof c->saved, "%s/saved-model", c->dir);
    int64_t t0 = begin(c, "save_model");
    int rc = eeb_sut_save_model(c->sut, c->saved, err, sizeof err);
    timed(c, "save_model", t0);
    struct stat st;
    if (rc == EEB_ENOTSUP && !counters) {
        verdict(c, EEB_SUT_CHECK_COUNTERS, EEB_SUT_CHECK_SKIP, "no counters, no save_model");
        return;
    }
    if (rc != EEB_ENOTSUP) {
        if (rc == EEB_OK && (stat(c->saved, &st) != 0 || st.st_size == 0))
            rc = eeb_errf(err, sizeof err, EEB_EIO, "save_model wrote nothing to %s", c->saved);
        if (rc) {
            verdict(c, EEB_SUT_CHECK_COUNTERS, EEB_SUT_CHECK_FAIL, "%s; %s", err, said_counters);
            return;
        }
        snprintf(said_save, sizeof said_save, "save_model wrote %lld bytes", (long long)st.st_size);
    }
    verdict(c, EEB_SUT_CHECK_COUNTERS, EEB_SUT_CHECK_PASS, "%s; %s", said_counters, said_save);
}

/* ---- 7. deadline ---- */

static void item_deadline(struct check *c)
{
    const struct eeb_sut_check_report *r = c->r;
    if (!r->slowest_call[0])
        verdict(c, EEB_SUT_CHECK_DEADLINE, EEB_SUT_CHECK_SKIP, "no call was made");
    else
        verdict(c, EEB_SUT_CHECK_DEADLINE,
                r->slowest_s > c->opt->deadline_s ? EEB_SUT_CHECK_FAIL : EEB_SUT_CHECK_PASS,
                "the slowest call: %s, %.3f s (deadline %g s)", r->slowest_call, r->slowest_s,
                c->opt->deadline_s);
}

/* ---- the battery ---- */

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void finish(struct check *c)
{
    watch_end(c);
    eeb_sut_close(c->sut);
    eeb_shard_close(c->ft_shard);
    eeb_shard_close(c->test_shard);
    free(c->ft_items.pixels), free(c->test_items.pixels);
    free(c->batch), free(c->full), free(c->other);
    if (c->dir[0])
        nftw(c->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int temp_dir(struct check *c, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%.4000s/eeb-sut-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(c->dir)) {
        int rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", c->dir, strerror(errno));
        c->dir[0] = '\0';
        return rc;
    }
    snprintf(c->work, sizeof c->work, "%s/work", c->dir);
    return mkdir(c->work, 0700) == 0
               ? EEB_OK
               : eeb_errf(err, errlen, EEB_EIO, "%s: %s", c->work, strerror(errno));
}

static void the_items(struct check *c)
{
    if (item_open(c) != EEB_OK) {
        for (int i = EEB_SUT_CHECK_SHAPES; i < EEB_SUT_CHECK_ITEMS; i++)
            if (i != EEB_SUT_CHECK_DEADLINE)
                verdict(c, (enum eeb_sut_check_item)i, EEB_SUT_CHECK_SKIP, "the SUT did not open");
    } else {
        item_shapes(c);
        item_determinism(c);
        item_order(c);
        item_training(c);
        item_counters(c);
    }
    item_deadline(c);
}

int eeb_sut_check_run(const struct eeb_sut_check_options *opt, struct eeb_sut_check_report *report,
                      char *err, size_t errlen)
{
    struct eeb_sut_check_options o = *opt;
    if (!(o.deadline_s > 0))
        o.deadline_s = 60;
    struct check c = {.opt = &o, .r = report};
    pthread_mutex_init(&c.w.lock, NULL);
    *report = (struct eeb_sut_check_report){.slowest_s = 0};
    for (int i = 0; i < EEB_SUT_CHECK_ITEMS; i++)
        verdict(&c, (enum eeb_sut_check_item)i, EEB_SUT_CHECK_SKIP, "not reached");
    if (!o.backend || !*o.backend)
        return eeb_errf(err, errlen, EEB_EINVAL, "no backend to check");
    if (!o.finetune != !o.test)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "give both a fine-tune and a test shard, or "
                        "neither (small synthetic ones are made)");
    int rc = temp_dir(&c, err, errlen);
    if (rc == EEB_OK && (rc = shards(&c, err, errlen)) == EEB_OK &&
        (rc = model(&c, err, errlen)) == EEB_OK) {
        setup_of(&c);
        watch_start(&c);
        if ((rc = item_abi(&c, err, errlen)) == EEB_OK) {
            if (report->items[EEB_SUT_CHECK_ABI].outcome == EEB_SUT_CHECK_FAIL)
                for (int i = EEB_SUT_CHECK_OPEN; i < EEB_SUT_CHECK_ITEMS; i++)
                    verdict(&c, (enum eeb_sut_check_item)i, EEB_SUT_CHECK_SKIP,
                            "the table is not one this eeb drives");
            else
                the_items(&c);
        }
    }
    finish(&c);
    pthread_mutex_destroy(&c.w.lock);
    return rc;
}
