/*
 * builtin.c - eeb's own accelerator backends (fpga/accel: emu, kernel,
 * fp32, xrt, faulty:) behind the system-under-test interface, as a team's
 * accelerator is: the proof that the interface carries a real training
 * accelerator, and the table eeb run drives for them.
 *
 * One table serves every backend; which one, and its settings, come in the
 * setup's configuration string, key=value settings a line or ';' apart
 * (values may hold commas, as faulty:'s options do):
 *
 *   backend=NAME     required: emu, kernel, fp32, xrt, faulty:...
 *   lr= momentum= decay= frozen= threads=    SGD and the backend (defaults:
 *                    eeb_accel_config_default's)
 *   xclbin=PATH device=N                     xrt (default xclbin: the setup's)
 *
 * The model is an .eebm file (fpga/net).  Batches come as the shards hold
 * them and are turned into what eeb's nets take: frames stacked along the
 * channels, labels as the loss wants them (eeb_task_labels); predictions
 * made from the outputs as eeb's test stage makes them (eeb_task_decode:
 * ranked classes, or the detection grid decoded and non-maximum
 * suppressed).
 */
#include "sut/eeb_sut_host.h"

#include "fpga/net/eeb_model.h"
#include "tasks/eeb_metrics.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_tasks.h"

#include <stdlib.h>
#include <string.h>

struct builtin {
    struct eeb_sut_setup setup;
    char *backend, *xclbin;
    struct eeb_accel_config cfg;
    struct eeb_shard_info info; /* the items' shape, as a shard would say */
    struct eeb_net *net;
    struct eeb_accel *acc;
    size_t px, nlab, outs; /* per item: pixels, net labels, net outputs */
    uint8_t *stacked;      /* a batch as the net takes it */
    int32_t *labels;
    float *out;
    struct eeb_task_decoder *decoder; /* outputs to predictions, as the test stage */
    struct eeb_scored_box *boxes;     /* one item's, max_boxes of them */
};

/* ---- the configuration string ---- */

static int number(const char *key, const char *value, double lo, double hi, double *out, char *err,
                  size_t errlen)
{
    char *end;
    double v = strtod(value, &end);
    if (end == value || *end || !(v >= lo && v <= hi))
        return eeb_errf(err, errlen, EEB_EINVAL, "config: %s=%s (a number in %g..%g)", key, value,
                        lo, hi);
    *out = v;
    return EEB_OK;
}

/* One line of the configuration, key=value. */
static int setting(struct builtin *b, char *line, char *err, size_t errlen)
{
    char *eq = strchr(line, '=');
    if (!eq)
        return eeb_errf(err, errlen, EEB_EINVAL, "config: '%s' is not key=value", line);
    *eq = '\0';
    const char *key = line, *value = eq + 1;
    double v = 0;
    int rc = EEB_OK;
    if (strcmp(key, "backend") == 0)
        return (b->backend = strdup(value)) ? EEB_OK : EEB_ENOMEM;
    if (strcmp(key, "xclbin") == 0)
        return (b->xclbin = strdup(value)) ? EEB_OK : EEB_ENOMEM;
    if (strcmp(key, "lr") == 0 && !(rc = number(key, value, 0, 1e3, &v, err, errlen)))
        b->cfg.lr = v;
    else if (strcmp(key, "momentum") == 0 && !(rc = number(key, value, 0, 1, &v, err, errlen)))
        b->cfg.momentum = v;
    else if (strcmp(key, "decay") == 0 && !(rc = number(key, value, 0, 1, &v, err, errlen)))
        b->cfg.weight_decay = v;
    else if (strcmp(key, "frozen") == 0 && !(rc = number(key, value, 0, 4096, &v, err, errlen)))
        b->cfg.frozen = (int)v;
    else if (strcmp(key, "threads") == 0 && !(rc = number(key, value, 0, 1024, &v, err, errlen)))
        b->cfg.threads = (int)v;
    else if (strcmp(key, "device") == 0 && !(rc = number(key, value, 0, 1024, &v, err, errlen)))
        b->cfg.device = (int)v;
    else if (!rc)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "config: unknown key '%s' (backend, lr, momentum, decay, frozen, threads, "
                      "xclbin, device)",
                      key);
    return rc;
}

/* The setup's configuration; the setup's xclbin unless it names one. */
static int parse_config(struct builtin *b, const struct eeb_sut_setup *setup, char *err,
                        size_t errlen)
{
    const char *config = setup->config;
    char *text = strdup(config ? config : "");
    if (!text)
        return eeb_errf(err, errlen, EEB_ENOMEM, "config: out of memory");
    int rc = EEB_OK;
    for (char *save = NULL, *line = strtok_r(text, "\n;", &save); line && rc == EEB_OK;
         line = strtok_r(NULL, "\n;", &save))
        if ((rc = setting(b, line, err, errlen)) == EEB_ENOMEM)
            eeb_errf(err, errlen, rc, "config: out of memory");
    free(text);
    if (rc == EEB_OK && !b->xclbin && setup->xclbin && setup->xclbin[0] &&
        !(b->xclbin = strdup(setup->xclbin)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "config: out of memory");
    if (rc == EEB_OK && !b->backend)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "config: no backend=NAME (emu, kernel, fp32, ...)");
    b->cfg.xclbin = b->xclbin;
    return rc;
}

int eeb_sut_builtin_config(const char *backend, const struct eeb_accel_config *cfg, char *buf,
                           size_t n)
{
    int len = snprintf(buf, n,
                       "backend=%s\nlr=%.17g\nmomentum=%.17g\ndecay=%.17g\nfrozen=%d\n"
                       "threads=%d\ndevice=%d\n",
                       backend, cfg->lr, cfg->momentum, cfg->weight_decay, cfg->frozen,
                       cfg->threads, cfg->device);
    if (len >= 0 && (size_t)len < n && cfg->xclbin)
        len += snprintf(buf + len, n - (size_t)len, "xclbin=%s\n", cfg->xclbin);
    return len >= 0 && (size_t)len < n ? EEB_OK : EEB_EINVAL;
}

/* ---- the calls ---- */

static void builtin_close(void *sut)
{
    struct builtin *b = sut;
    if (!b)
        return;
    eeb_task_decoder_free(b->decoder);
    eeb_accel_close(b->acc);
    eeb_net_free(b->net);
    free(b->stacked), free(b->labels), free(b->out), free(b->boxes);
    free(b->backend), free(b->xclbin);
    free(b);
}

static int builtin_open(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen)
{
    *sut = NULL;
    struct builtin *b = calloc(1, sizeof *b);
    if (!b)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    b->setup = *setup;
    b->setup.config = b->setup.workdir = NULL; /* the caller's, for the call only */
    eeb_accel_config_default(&b->cfg);
    b->cfg.batch_max = setup->batch_max;
    b->cfg.seed = setup->seed;
    b->info = (struct eeb_shard_info){.task = (enum eeb_task)setup->task,
                                      .h = setup->height,
                                      .w = setup->width,
                                      .c = setup->channels,
                                      .frames = setup->frames,
                                      .classes = setup->classes};
    int rc = setup->top_k < 1 || setup->top_k > EEB_TOPK_MAX || setup->top_k > setup->classes
                 ? eeb_errf(err, errlen, EEB_EINVAL, "top_k %d (1..%d, and at most the classes)",
                            setup->top_k, EEB_TOPK_MAX)
                 : parse_config(b, setup, err, errlen);
    if (rc) {
        builtin_close(b);
        return rc;
    }
    *sut = b;
    return EEB_OK;
}

/* The model, checked against the items, onto the backend. */
static int builtin_load(void *sut, const char *path, char *err, size_t errlen)
{
    struct builtin *b = sut;
    int task;
    int rc = eeb_model_load(path, &b->net, &task, err, errlen);
    if (rc == EEB_OK && task != (int)b->info.task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s is not a %s model", path,
                      eeb_task_name(b->info.task));
    if (rc == EEB_OK)
        rc = eeb_task_check_model(b->net, &b->info, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_accel_start(b->backend, &b->cfg, b->net, &b->acc, err, errlen);
    if (rc)
        return rc;
    const struct eeb_layer *loss = eeb_net_loss(b->net);
    size_t n = (size_t)b->setup.batch_max;
    b->px = eeb_shard_pixels(&b->info);
    b->nlab = eeb_task_label_count(b->net);
    b->outs = (size_t)loss->out.h * loss->out.w * loss->out.c;
    b->stacked = malloc(n * b->px);
    b->labels = malloc(n * b->nlab * sizeof *b->labels);
    b->out = malloc(n * b->outs * sizeof *b->out);
    b->boxes = malloc((size_t)(b->setup.max_boxes > 0 ? b->setup.max_boxes : 1) * sizeof *b->boxes);
    if (!b->stacked || !b->labels || !b->out || !b->boxes)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.max_boxes = b->setup.max_boxes;
    return eeb_task_decoder_new(&b->decoder, b->net, &b->info, &opt, err, errlen);
}

/* The batch as the net takes it: frames stacked; with labels, the loss's. */
static int stack(struct builtin *b, const struct eeb_sut_batch *in, struct eeb_batch *out,
                 char *err, size_t errlen)
{
    if (!b->acc) /* eeb's backends have no weights of their own to start from */
        return eeb_errf(err, errlen, EEB_EINVAL, "no model loaded (an .eebm, by load_model)");
    if (in->n < 1 || in->n > b->setup.batch_max)
        return eeb_errf(err, errlen, EEB_EINVAL, "a batch of %d items (1..%d)", in->n,
                        b->setup.batch_max);
    const struct eeb_sut_box *box = in->boxes;
    for (int i = 0; i < in->n; i++) {
        eeb_task_stack_frames(&b->info, in->pixels + (size_t)i * b->px, b->stacked + i * b->px);
        if (!in->labels && !in->box_counts)
            continue;
        struct eeb_record r = {.label = in->labels ? in->labels[i] : 0};
        int count = in->box_counts ? in->box_counts[i] : 0;
        if (count < 0 || count > EEB_SHARD_MAX_BOXES)
            return eeb_errf(err, errlen, EEB_EINVAL, "item %d: %d boxes (0..%d)", i, count,
                            EEB_SHARD_MAX_BOXES);
        for (int k = 0; k < count; k++, box++)
            r.boxes[r.nboxes++] =
                (struct eeb_box){box->cls, box->difficult, box->x0, box->y0, box->x1, box->y1};
        eeb_task_labels(b->net, &b->info, &r, b->labels + (size_t)i * b->nlab);
    }
    *out = (struct eeb_batch){in->n, b->stacked, b->labels};
    return EEB_OK;
}

static int builtin_train(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step,
                         char *err, size_t errlen)
{
    struct builtin *b = sut;
    struct eeb_batch nb;
    struct eeb_train_result r;
    int rc = stack(b, batch, &nb, err, errlen);
    if (rc == EEB_OK)
        rc = b->acc->ops->train_batch(b->acc, &nb, &r, err, errlen);
    if (rc == EEB_OK)
        *step = (struct eeb_sut_step){
            .loss = r.loss, .correct = r.correct, .counted = eeb_task_targets(b->net, &nb)};
    return rc;
}

/* One item's prediction into the SUT's slots. */
static void put(const struct builtin *b, const struct eeb_task_predicted *p, int i,
                struct eeb_sut_predictions *out)
{
    int k = b->setup.top_k, m = b->setup.max_boxes;
    for (int r = 0; r < k && b->setup.task != EEB_SUT_DET; r++) {
        out->classes[(size_t)i * k + r] = r < p->nranked ? p->ranked[r] : -1;
        out->scores[(size_t)i * k + r] = r < p->nranked ? p->scores[r] : 0;
    }
    if (b->setup.task != EEB_SUT_DET)
        return;
    out->counts[i] = p->nboxes;
    for (int r = 0; r < p->nboxes; r++) {
        const struct eeb_scored_box *s = &p->boxes[r];
        out->detections[(size_t)i * m + r] =
            (struct eeb_sut_detection){s->cls, s->score, s->x0, s->y0, s->x1, s->y1};
    }
}

static int builtin_predict(void *sut, const struct eeb_sut_batch *batch,
                           struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    struct builtin *b = sut;
    struct eeb_sut_batch unlabelled = {batch->n, batch->pixels, NULL, NULL, NULL};
    struct eeb_batch nb;
    int rc = stack(b, &unlabelled, &nb, err, errlen);
    if (rc == EEB_OK)
        rc = b->acc->ops->predict(b->acc, &nb, b->out, err, errlen);
    for (int i = 0; rc == EEB_OK && i < batch->n; i++) {
        struct eeb_task_predicted p = {.boxes = b->boxes};
        if ((rc = eeb_task_decode(b->decoder, b->out + (size_t)i * b->outs, &p, err, errlen)) ==
            EEB_OK)
            put(b, &p, i, out);
    }
    return rc;
}

static void builtin_counters(void *sut, struct eeb_sut_counters *c)
{
    struct builtin *b = sut;
    struct eeb_accel_stats st = {0};
    if (b->acc)
        b->acc->ops->stats(b->acc, &st);
    *c = (struct eeb_sut_counters){.steps = st.steps, .items = st.items};
    memcpy(c->saturations, st.saturations, sizeof c->saturations);
    snprintf(c->detail, sizeof c->detail, "%s", st.detail);
}

static int builtin_save(void *sut, const char *path, char *err, size_t errlen)
{
    struct builtin *b = sut;
    if (!b->acc)
        return eeb_errf(err, errlen, EEB_EINVAL, "no model loaded (an .eebm, by load_model)");
    int rc = b->acc->ops->read_model(b->acc, b->net, err, errlen);
    return rc ? rc : eeb_model_save(path, b->net, (int)b->info.task, err, errlen);
}

static const struct eeb_sut_ops builtin_ops = {
    .abi_version = EEB_SUT_ABI_VERSION,
    .name = "eeb",
    .open = builtin_open,
    .load_model = builtin_load,
    .train = builtin_train,
    .predict = builtin_predict,
    .counters = builtin_counters,
    .close = builtin_close,
    .save_model = builtin_save,
};

const struct eeb_sut_ops *eeb_sut_builtin(void)
{
    return &builtin_ops;
}
