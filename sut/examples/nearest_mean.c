/*
 * nearest_mean.c - an example system under test, written as a team would
 * write one: against sut/eeb_sut.h alone, for all three tasks, as simple
 * as a learner can honestly be.  It is a nearest-class-mean classifier on
 * a downsampled image; it learns from every batch it is given and
 * predicts from what it learnt, so eeb's checks (training changes the
 * predictions, the same seed gives the same ones) have something to see.
 *
 * Build it (from eeb's root, or with eeb_sut.h copied to sut/ in your own
 * tree) and run it:
 *
 *     cc -shared -fPIC -O2 -I. sut/examples/nearest_mean.c -o libnearest_mean.so
 *     echo 'nearest-mean 1' > nearest_mean.model
 *     eeb run --task cls --finetune ft.eebd --test test.eebd \
 *             --model nearest_mean.model --backend ./libnearest_mean.so
 *
 * (`make` builds it as build/sut/libnearest_mean.so.)
 *
 * What it does
 *
 *   features  each frame cut into grid x grid cells, and the mean of each
 *             channel over each cell, scaled to 0..1: frames x grid x grid x
 *             channels numbers an item, frame by frame, so a clip's order
 *             (its motion) is in them
 *   train     cls, video: the item's features join the running mean of its
 *             label.  det: the image's features join the mean of every class
 *             it has a box of, and each box (relative to the image's size)
 *             the mean box of its class; "difficult" boxes are skipped.
 *             The step's loss is the mean squared distance (per feature)
 *             from each target to its class's mean before the target joined
 *             it, over the targets whose class had one (NAN if none had);
 *             cls and video also count the items whose nearest class was
 *             their label
 *   predict   classes ranked by that distance from the item's features to
 *             their means, score 1 / (1 + distance); classes never seen rank
 *             after every seen one, in an order drawn from the setup's seed,
 *             score 0 (cls, video: if top_k exceeds the classes, the slots
 *             after them hold class -1, score 0).  det: the nearest classes
 *             seen, at most max_boxes, each as its mean box scaled to the
 *             image, with that score
 *
 * The configuration string (setup->config): key=value settings separated
 * by commas or white space; unknown keys are refused.
 *
 *   grid=N    cells a side, 1..32 (default 4; fewer if a frame is smaller)
 *   steps=N   report done after N training steps (default 0: never); a
 *             batch after that is refused
 *
 * The model file (load_model, save_model): text, one record a line.
 *
 *   nearest-mean 1                               first line, required
 *   shape TASK CLASSES FRAMES GRID CHANNELS      must match the setup (TASK
 *                                                cls, det or video; GRID as
 *                                                used); needed before a class
 *   class K N M X0 Y0 X1 Y1 V1 ... VD            class K: the mean V of N
 *                                                items' D features, and (det)
 *                                                the mean box of M boxes, its
 *                                                corners relative to the
 *                                                image, 0..1 (else M 0, box
 *                                                0 0 0 0)
 *
 * A file of the first line alone is an untrained model.  Classes without
 * a line have never been seen.
 *
 * Every call that fails says why in err and returns -1: a setup it cannot
 * take, a batch of 0 or more than batch_max items, a label or a box out of
 * range, a model file that is not one (naming its line).
 */
#define _POSIX_C_SOURCE 200809L

#include "sut/eeb_sut.h"

#include <errno.h>
#include <math.h> /* NAN, isfinite: macros */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC        "nearest-mean 1"
#define GRID_DEFAULT 4
#define GRID_MAX     32
#define MAX_FLOATS   (64u << 20) /* classes x features: 256 MB of means at most */
#define MAX_ITEM     (1u << 30)  /* bytes of one item */

struct nearest_mean {
    enum eeb_sut_task task;
    int classes, frames, height, width, channels, batch_max, top_k, max_boxes;
    int grid, steps_max; /* the configuration */
    size_t dim, item_bytes;
    uint64_t steps, items;
    int *order;       /* per class: its place among the unseen, from the seed */
    uint64_t *seen;   /* per class: items in its mean (det: images) */
    uint64_t *nboxes; /* det, per class: boxes in its mean box */
    float *means;     /* classes x dim */
    float *box;       /* classes x 4: x0 y0 x1 y1, relative */
    /* work space */
    float *feat;           /* one item's features */
    double *dist;          /* per class, to one item */
    unsigned char *taken;  /* per class, while ranking */
    int *ranked;           /* the best classes, best first */
    unsigned char *inside; /* det, per class: has a box in the image */
};

/* gcc and clang check fail's format strings (-Wformat). */
#if defined(__GNUC__)
#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PRINTF_LIKE(fmt, args)
#endif

/* The message into err; -1, as every failing call returns. */
PRINTF_LIKE(3, 4) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static const char *task_name(enum eeb_sut_task task)
{
    return task == EEB_SUT_CLS ? "cls" : task == EEB_SUT_DET ? "det" : "video";
}

/* ---- the configuration string ---- */

static int setting(struct nearest_mean *s, const char *token, char *err, size_t errlen)
{
    const char *eq = strchr(token, '=');
    if (!eq)
        return fail(err, errlen, "config: '%s' is not key=value (grid=N, steps=N)", token);
    char *end;
    errno = 0;
    long v = strtol(eq + 1, &end, 10);
    int bad = end == eq + 1 || *end || errno;
    size_t klen = (size_t)(eq - token);
    if (klen == 4 && strncmp(token, "grid", 4) == 0) {
        if (bad || v < 1 || v > GRID_MAX)
            return fail(err, errlen, "config: %s (grid=N, N 1..%d)", token, GRID_MAX);
        s->grid = (int)v;
    } else if (klen == 5 && strncmp(token, "steps", 5) == 0) {
        if (bad || v < 0 || v > 1000000000)
            return fail(err, errlen, "config: %s (steps=N, N 0..1e9; 0: never done)", token);
        s->steps_max = (int)v;
    } else
        return fail(err, errlen, "config: unknown key in '%s' (grid, steps)", token);
    return 0;
}

static int parse_config(struct nearest_mean *s, const char *config, char *err, size_t errlen)
{
    char *text = strdup(config ? config : "");
    if (!text)
        return fail(err, errlen, "config: out of memory");
    int rc = 0;
    char *save = NULL;
    for (char *t = strtok_r(text, ", \t\r\n", &save); t && !rc;
         t = strtok_r(NULL, ", \t\r\n", &save))
        rc = setting(s, t, err, errlen);
    free(text);
    return rc;
}

/* ---- open and close ---- */

static void nm_close(void *sut)
{
    struct nearest_mean *s = sut;
    if (!s)
        return;
    free(s->order), free(s->seen), free(s->nboxes), free(s->means), free(s->box);
    free(s->feat), free(s->dist), free(s->taken), free(s->ranked), free(s->inside);
    free(s);
}

static int check_setup(const struct eeb_sut_setup *u, char *err, size_t errlen)
{
    /* A newer harness's setup only appends: this SUT reads the members it
     * knows.  An older one would lack some (eeb refuses such a SUT first). */
    if (u->abi_version < EEB_SUT_ABI_VERSION)
        return fail(err, errlen,
                    "setup: ABI version %d, older than the %d this SUT was built against",
                    u->abi_version, EEB_SUT_ABI_VERSION);
    if (u->task != EEB_SUT_CLS && u->task != EEB_SUT_DET && u->task != EEB_SUT_VIDEO)
        return fail(err, errlen, "setup: task %d (0 cls, 1 det, 2 video)", (int)u->task);
    if (u->classes < 1 || u->classes > 100000)
        return fail(err, errlen, "setup: %d classes (1..100000)", u->classes);
    if (u->frames < 1 || u->height < 1 || u->width < 1)
        return fail(err, errlen, "setup: items of %d x %d x %d pixels (each at least 1)", u->frames,
                    u->height, u->width);
    if (u->channels != 1 && u->channels != 3)
        return fail(err, errlen, "setup: %d channels (1 or 3)", u->channels);
    if ((double)u->frames * u->height * u->width * u->channels > MAX_ITEM)
        return fail(err, errlen, "setup: items of %d x %d x %d x %d bytes (at most %u)", u->frames,
                    u->height, u->width, u->channels, MAX_ITEM);
    if (u->batch_max < 1)
        return fail(err, errlen, "setup: batch_max %d (at least 1)", u->batch_max);
    if (u->task != EEB_SUT_DET && u->top_k < 1)
        return fail(err, errlen, "setup: top_k %d (at least 1)", u->top_k);
    if (u->task == EEB_SUT_DET && u->max_boxes < 1)
        return fail(err, errlen, "setup: max_boxes %d (at least 1)", u->max_boxes);
    return 0;
}

/* The next number of a splitmix64 sequence: the same on every host. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The classes in an order drawn from seed (Fisher-Yates): how the ones
 * never seen rank, and how ties break. */
static void draw_order(struct nearest_mean *s, uint64_t seed)
{
    int *perm = s->ranked; /* free until the first predict */
    for (int k = 0; k < s->classes; k++)
        perm[k] = k;
    for (int k = s->classes - 1; k > 0; k--) {
        int j = (int)(splitmix64(&seed) % (uint64_t)(k + 1)), t = perm[k];
        perm[k] = perm[j], perm[j] = t;
    }
    for (int place = 0; place < s->classes; place++)
        s->order[perm[place]] = place;
}

static int nm_open(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen)
{
    *sut = NULL;
    if (!setup)
        return fail(err, errlen, "setup: NULL");
    if (check_setup(setup, err, errlen))
        return -1;
    struct nearest_mean *s = calloc(1, sizeof *s);
    if (!s)
        return fail(err, errlen, "out of memory");
    s->task = setup->task, s->classes = setup->classes, s->frames = setup->frames;
    s->height = setup->height, s->width = setup->width, s->channels = setup->channels;
    s->batch_max = setup->batch_max, s->top_k = setup->top_k, s->max_boxes = setup->max_boxes;
    s->grid = GRID_DEFAULT;
    if (parse_config(s, setup->config, err, errlen)) {
        nm_close(s);
        return -1;
    }
    int side = s->height < s->width ? s->height : s->width;
    if (s->grid > side)
        s->grid = side;
    s->dim = (size_t)s->frames * (size_t)s->grid * (size_t)s->grid * (size_t)s->channels;
    s->item_bytes = (size_t)s->frames * (size_t)s->height * (size_t)s->width * (size_t)s->channels;
    if ((double)s->dim * s->classes > MAX_FLOATS) {
        fail(err, errlen, "setup: %d classes x %zu features is too many (at most %u); lower grid",
             s->classes, s->dim, MAX_FLOATS);
        nm_close(s);
        return -1;
    }
    size_t k = (size_t)s->classes;
    s->order = calloc(k, sizeof *s->order);
    s->seen = calloc(k, sizeof *s->seen);
    s->nboxes = calloc(k, sizeof *s->nboxes);
    s->means = calloc(k * s->dim, sizeof *s->means);
    s->box = calloc(k * 4, sizeof *s->box);
    s->feat = calloc(s->dim, sizeof *s->feat);
    s->dist = calloc(k, sizeof *s->dist);
    s->taken = calloc(k, 1);
    s->ranked = calloc(k, sizeof *s->ranked);
    s->inside = calloc(k, 1);
    if (!s->order || !s->seen || !s->nboxes || !s->means || !s->box || !s->feat || !s->dist ||
        !s->taken || !s->ranked || !s->inside) {
        nm_close(s);
        return fail(err, errlen, "out of memory for %d classes x %zu features", setup->classes,
                    s->dim);
    }
    draw_order(s, setup->seed);
    *sut = s;
    return 0;
}

/* ---- features, distances, ranks ---- */

/* Where cell i of g starts along a side of n pixels. */
static int cut(int i, int n, int g)
{
    return (int)((int64_t)i * n / g);
}

/* One item's features into s->feat. */
static void features(struct nearest_mean *s, const uint8_t *item)
{
    int g = s->grid, c = s->channels, h = s->height, w = s->width;
    float *out = s->feat;
    for (int f = 0; f < s->frames; f++, item += (size_t)h * w * c)
        for (int gy = 0; gy < g; gy++)
            for (int gx = 0; gx < g; gx++) {
                int y0 = cut(gy, h, g), y1 = cut(gy + 1, h, g);
                int x0 = cut(gx, w, g), x1 = cut(gx + 1, w, g);
                for (int ch = 0; ch < c; ch++) {
                    uint64_t sum = 0;
                    for (int y = y0; y < y1; y++)
                        for (int x = x0; x < x1; x++)
                            sum += item[((size_t)y * w + x) * c + ch];
                    *out++ = (float)((double)sum / (255.0 * (y1 - y0) * (x1 - x0)));
                }
            }
}

/* The mean squared distance, per feature, from s->feat to class k's mean. */
static double distance(const struct nearest_mean *s, int k)
{
    const float *m = s->means + (size_t)k * s->dim;
    double sum = 0;
    for (size_t i = 0; i < s->dim; i++) {
        double d = (double)s->feat[i] - m[i];
        sum += d * d;
    }
    return sum / (double)s->dim;
}

/* Whether class a ranks before class b for the item of s->dist. */
static int before(const struct nearest_mean *s, int a, int b)
{
    int seen_a = s->seen[a] > 0, seen_b = s->seen[b] > 0;
    if (seen_a != seen_b)
        return seen_a;
    if (seen_a && s->dist[a] != s->dist[b])
        return s->dist[a] < s->dist[b];
    return s->order[a] < s->order[b];
}

/* The best `want` classes for s->feat into s->ranked, best first. */
static void rank_classes(struct nearest_mean *s, int want)
{
    for (int k = 0; k < s->classes; k++) {
        s->dist[k] = s->seen[k] ? distance(s, k) : 0;
        s->taken[k] = 0;
    }
    for (int r = 0; r < want; r++) {
        int best = -1;
        for (int k = 0; k < s->classes; k++)
            if (!s->taken[k] && (best < 0 || before(s, k, best)))
                best = k;
        s->taken[best] = 1;
        s->ranked[r] = best;
    }
}

static float score(const struct nearest_mean *s, int k)
{
    return s->seen[k] ? (float)(1.0 / (1.0 + s->dist[k])) : 0.0f;
}

/* ---- the batches ---- */

static int check_batch(const struct nearest_mean *s, const struct eeb_sut_batch *b, int labelled,
                       char *err, size_t errlen)
{
    if (!b)
        return fail(err, errlen, "no batch");
    if (b->n < 1 || b->n > s->batch_max)
        return fail(err, errlen, "a batch of %d items (1..%d)", b->n, s->batch_max);
    if (!b->pixels)
        return fail(err, errlen, "a batch of %d items without pixels", b->n);
    if (!labelled)
        return 0;
    if (s->task != EEB_SUT_DET) {
        if (!b->labels)
            return fail(err, errlen, "a %s training batch without labels", task_name(s->task));
        for (int i = 0; i < b->n; i++)
            if (b->labels[i] < 0 || b->labels[i] >= s->classes)
                return fail(err, errlen, "item %d: label %d (0..%d)", i, (int)b->labels[i],
                            s->classes - 1);
        return 0;
    }
    if (!b->box_counts)
        return fail(err, errlen, "a det training batch without box counts");
    const struct eeb_sut_box *x = b->boxes;
    for (int i = 0; i < b->n; i++) {
        if (b->box_counts[i] < 0)
            return fail(err, errlen, "item %d: %d boxes", i, (int)b->box_counts[i]);
        if (b->box_counts[i] > 0 && !x)
            return fail(err, errlen, "item %d: %d boxes, and no boxes given", i,
                        (int)b->box_counts[i]);
        for (int j = 0; j < b->box_counts[i]; j++, x++) {
            if (x->cls < 0 || x->cls >= s->classes)
                return fail(err, errlen, "item %d box %d: class %d (0..%d)", i, j, (int)x->cls,
                            s->classes - 1);
            if (!(x->x0 >= 0 && x->x0 <= x->x1 && x->x1 <= s->width && x->y0 >= 0 &&
                  x->y0 <= x->y1 && x->y1 <= s->height))
                return fail(err, errlen,
                            "item %d box %d: (%g, %g)-(%g, %g) is not a box in the %d x %d image",
                            i, j, x->x0, x->y0, x->x1, x->y1, s->width, s->height);
        }
    }
    return 0;
}

/* x joins a running mean of n values (n counting x). */
static void join(float *mean, const float *x, size_t len, uint64_t n)
{
    for (size_t i = 0; i < len; i++)
        mean[i] += (x[i] - mean[i]) / (float)n;
}

/* cls, video: the loss and the nearest class before the step, then the
 * item joins its label's mean. */
static void train_label(struct nearest_mean *s, int label, double *loss, int64_t *losses,
                        int64_t *correct)
{
    rank_classes(s, 1);
    if (s->seen[label]) {
        *loss += s->dist[label];
        (*losses)++;
    }
    *correct += s->ranked[0] == label;
    join(s->means + (size_t)label * s->dim, s->feat, s->dim, ++s->seen[label]);
}

/* det: the image joins the mean of each class it has a box of, each box
 * its class's mean box. */
static void train_boxes(struct nearest_mean *s, const struct eeb_sut_box *x, int count,
                        double *loss, int64_t *losses)
{
    memset(s->inside, 0, (size_t)s->classes);
    for (int j = 0; j < count; j++) {
        if (x[j].difficult)
            continue;
        float rel[4] = {x[j].x0 / (float)s->width, x[j].y0 / (float)s->height,
                        x[j].x1 / (float)s->width, x[j].y1 / (float)s->height};
        join(s->box + (size_t)x[j].cls * 4, rel, 4, ++s->nboxes[x[j].cls]);
        s->inside[x[j].cls] = 1;
    }
    for (int k = 0; k < s->classes; k++) {
        if (!s->inside[k])
            continue;
        if (s->seen[k]) {
            *loss += distance(s, k);
            (*losses)++;
        }
        join(s->means + (size_t)k * s->dim, s->feat, s->dim, ++s->seen[k]);
    }
}

static int nm_train(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step,
                    char *err, size_t errlen)
{
    struct nearest_mean *s = sut;
    if (!step)
        return fail(err, errlen, "no step to report in");
    if (s->steps_max && s->steps >= (uint64_t)s->steps_max)
        return fail(err, errlen, "a batch after done (steps=%d)", s->steps_max);
    if (check_batch(s, batch, 1, err, errlen))
        return -1;
    double loss = 0;
    int64_t losses = 0, correct = 0;
    const struct eeb_sut_box *boxes = batch->boxes;
    for (int i = 0; i < batch->n; i++) {
        features(s, batch->pixels + (size_t)i * s->item_bytes);
        if (s->task != EEB_SUT_DET)
            train_label(s, batch->labels[i], &loss, &losses, &correct);
        else {
            train_boxes(s, boxes, batch->box_counts[i], &loss, &losses);
            boxes += batch->box_counts[i];
        }
    }
    s->steps++;
    s->items += (uint64_t)batch->n;
    int det = s->task == EEB_SUT_DET;
    *step = (struct eeb_sut_step){.loss = losses ? loss / (double)losses : NAN,
                                  .correct = det ? 0 : correct,
                                  .counted = det ? 0 : batch->n,
                                  .done = s->steps_max && s->steps >= (uint64_t)s->steps_max};
    return 0;
}

/* v within lo..hi (by hand: the library needs no libm). */
static float clamp(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* det: the item's nearest seen classes, each as its mean box. */
static int32_t detect(struct nearest_mean *s, struct eeb_sut_detection *d)
{
    int want = s->max_boxes < s->classes ? s->max_boxes : s->classes, n = 0;
    rank_classes(s, want);
    for (; n < want && s->seen[s->ranked[n]]; n++) {
        int k = s->ranked[n];
        const float *b = s->box + (size_t)k * 4;
        /* the mean of boxes inside the image is inside it, but for rounding */
        float w = (float)s->width, h = (float)s->height;
        float x0 = clamp(b[0] * w, 0, w), y0 = clamp(b[1] * h, 0, h);
        float x1 = clamp(b[2] * w, x0, w), y1 = clamp(b[3] * h, y0, h);
        d[n] = (struct eeb_sut_detection){k, score(s, k), x0, y0, x1, y1};
    }
    return n;
}

static int nm_predict(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_predictions *out,
                      char *err, size_t errlen)
{
    struct nearest_mean *s = sut;
    if (check_batch(s, batch, 0, err, errlen))
        return -1;
    int det = s->task == EEB_SUT_DET;
    if (!out || (det ? !out->counts || !out->detections : !out->classes || !out->scores))
        return fail(err, errlen, "nowhere to write the %s predictions", task_name(s->task));
    int k = s->top_k, want = k < s->classes ? k : s->classes;
    for (int i = 0; i < batch->n; i++) {
        features(s, batch->pixels + (size_t)i * s->item_bytes);
        if (det) {
            out->counts[i] = detect(s, out->detections + (size_t)i * s->max_boxes);
            continue;
        }
        rank_classes(s, want);
        for (int r = 0; r < k; r++) {
            out->classes[(size_t)i * k + r] = r < want ? s->ranked[r] : -1;
            out->scores[(size_t)i * k + r] = r < want ? score(s, s->ranked[r]) : 0.0f;
        }
    }
    return 0;
}

static void nm_counters(void *sut, struct eeb_sut_counters *c)
{
    const struct nearest_mean *s = sut;
    *c = (struct eeb_sut_counters){.steps = s->steps, .items = s->items};
    snprintf(c->detail, sizeof c->detail, "nearest-mean, %dx%d grid, %zu features", s->grid,
             s->grid, s->dim);
}

/* ---- the model file ---- */

/* A new model's arrays, filled from a file before they replace the SUT's. */
struct model {
    uint64_t *seen, *nboxes;
    float *means, *box;
};

static void model_free(struct model *m)
{
    free(m->seen), free(m->nboxes), free(m->means), free(m->box);
}

/* Reads a whole number or a float from *p, moving past it. */
static int read_u64(char **p, uint64_t *out)
{
    char *end;
    while (**p == ' ')
        (*p)++;
    errno = 0;
    unsigned long long v = strtoull(*p, &end, 10);
    if (end == *p || errno || **p == '-' || (*end && *end != ' ' && *end != '\n'))
        return -1;
    *out = v;
    *p = end;
    return 0;
}

static int read_float(char **p, float *out)
{
    char *end;
    float v = strtof(*p, &end);
    if (end == *p || !isfinite(v) || (*end && *end != ' ' && *end != '\n'))
        return -1;
    *out = v;
    *p = end;
    return 0;
}

static int shape_line(const struct nearest_mean *s, const char *line, const char *path, int no,
                      char *err, size_t errlen)
{
    char task[16];
    int classes, frames, grid, channels, end = 0;
    if (sscanf(line, "shape %15s %d %d %d %d %n", task, &classes, &frames, &grid, &channels,
               &end) != 5 ||
        line[end])
        return fail(err, errlen, "%s line %d: not 'shape TASK CLASSES FRAMES GRID CHANNELS'", path,
                    no);
    if (strcmp(task, task_name(s->task)) || classes != s->classes || frames != s->frames ||
        grid != s->grid || channels != s->channels)
        return fail(err, errlen,
                    "%s line %d: a model of shape %s %d %d %d %d, this setup is %s %d %d %d %d",
                    path, no, task, classes, frames, grid, channels, task_name(s->task), s->classes,
                    s->frames, s->grid, s->channels);
    return 0;
}

static int class_line(const struct nearest_mean *s, struct model *m, char *line, const char *path,
                      int no, char *err, size_t errlen)
{
    char *p = line + strlen("class");
    uint64_t k, n, nb;
    if (read_u64(&p, &k) || read_u64(&p, &n) || read_u64(&p, &nb))
        return fail(err, errlen, "%s line %d: not 'class K N M X0 Y0 X1 Y1 V1 ... VD'", path, no);
    if (k >= (uint64_t)s->classes)
        return fail(err, errlen, "%s line %d: class %llu (0..%d)", path, no, (unsigned long long)k,
                    s->classes - 1);
    if (m->seen[k])
        return fail(err, errlen, "%s line %d: class %llu again", path, no, (unsigned long long)k);
    if (n < 1 || (s->task == EEB_SUT_DET) != (nb > 0))
        return fail(err, errlen, "%s line %d: class %llu of %llu items and %llu boxes (%s)", path,
                    no, (unsigned long long)k, (unsigned long long)n, (unsigned long long)nb,
                    s->task == EEB_SUT_DET ? "det: both at least 1" : "at least 1 item, 0 boxes");
    float *box = m->box + k * 4, *mean = m->means + k * s->dim;
    for (int i = 0; i < 4; i++)
        if (read_float(&p, &box[i]) || box[i] < 0 || box[i] > 1)
            return fail(err, errlen, "%s line %d: box corner %d is not a number in 0..1", path, no,
                        i + 1);
    if (box[0] > box[2] || box[1] > box[3])
        return fail(err, errlen, "%s line %d: box %g %g %g %g has a corner past the other", path,
                    no, box[0], box[1], box[2], box[3]);
    size_t i = 0;
    for (; i < s->dim; i++)
        if (read_float(&p, &mean[i]))
            break;
    while (*p == ' ')
        p++;
    if (i < s->dim || (*p && *p != '\n'))
        return fail(err, errlen, "%s line %d: class %llu needs %zu mean values, numbers", path, no,
                    (unsigned long long)k, s->dim);
    m->seen[k] = n, m->nboxes[k] = nb;
    return 0;
}

static int read_model(struct nearest_mean *s, struct model *m, FILE *f, const char *path, char *err,
                      size_t errlen)
{
    char *line = NULL;
    size_t cap = 0;
    int no = 0, shaped = 0, rc = 0;
    while (!rc && getline(&line, &cap, f) >= 0) {
        no++;
        line[strcspn(line, "\r\n")] = '\0';
        if (no == 1)
            rc = strcmp(line, MAGIC)
                     ? fail(err, errlen, "%s line 1: not a nearest-mean model (want '%s')", path,
                            MAGIC)
                     : 0;
        else if (strncmp(line, "shape ", 6) == 0) {
            rc = shape_line(s, line, path, no, err, errlen);
            shaped = 1;
        } else if (strncmp(line, "class ", 6) == 0)
            rc = shaped ? class_line(s, m, line, path, no, err, errlen)
                        : fail(err, errlen, "%s line %d: a class before the shape line", path, no);
        else if (*line)
            rc = fail(err, errlen, "%s line %d: not a shape or class line", path, no);
    }
    if (!rc && ferror(f))
        rc = fail(err, errlen, "%s: %s", path, strerror(errno));
    if (!rc && no == 0)
        rc = fail(err, errlen, "%s: empty (a model starts with '%s')", path, MAGIC);
    free(line);
    return rc;
}

static int nm_load(void *sut, const char *path, char *err, size_t errlen)
{
    struct nearest_mean *s = sut;
    size_t k = (size_t)s->classes;
    struct model m = {calloc(k, sizeof *m.seen), calloc(k, sizeof *m.nboxes),
                      calloc(k * s->dim, sizeof *m.means), calloc(k * 4, sizeof *m.box)};
    int rc = 0;
    FILE *f = NULL;
    if (!m.seen || !m.nboxes || !m.means || !m.box)
        rc = fail(err, errlen, "%s: out of memory", path);
    else if (!(f = fopen(path, "r")))
        rc = fail(err, errlen, "%s: %s", path, strerror(errno));
    else
        rc = read_model(s, &m, f, path, err, errlen);
    if (f)
        fclose(f);
    if (!rc) { /* the model read replaces what was learnt */
        struct model old = {s->seen, s->nboxes, s->means, s->box};
        s->seen = m.seen, s->nboxes = m.nboxes, s->means = m.means, s->box = m.box;
        m = old;
    }
    model_free(&m);
    return rc;
}

static int nm_save(void *sut, const char *path, char *err, size_t errlen)
{
    const struct nearest_mean *s = sut;
    FILE *f = fopen(path, "w");
    if (!f)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    fprintf(f, "%s\nshape %s %d %d %d %d\n", MAGIC, task_name(s->task), s->classes, s->frames,
            s->grid, s->channels);
    for (int k = 0; k < s->classes; k++) {
        if (!s->seen[k])
            continue;
        const float *b = s->box + (size_t)k * 4, *mean = s->means + (size_t)k * s->dim;
        fprintf(f, "class %d %llu %llu %.9g %.9g %.9g %.9g", k, (unsigned long long)s->seen[k],
                (unsigned long long)s->nboxes[k], b[0], b[1], b[2], b[3]);
        for (size_t i = 0; i < s->dim; i++)
            fprintf(f, " %.9g", mean[i]);
        fputc('\n', f);
    }
    int bad = ferror(f);
    if (fclose(f) || bad)
        return fail(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return 0;
}

static const struct eeb_sut_ops nearest_mean_ops = {
    .abi_version = EEB_SUT_ABI_VERSION,
    .name = "nearest-mean",
    .open = nm_open,
    .load_model = nm_load,
    .train = nm_train,
    .end_training = NULL, /* nothing in flight */
    .predict = nm_predict,
    .counters = nm_counters,
    .close = nm_close,
    .save_model = nm_save,
    .version = "1.1", /* the example's own, recorded beside its name */
};

const struct eeb_sut_ops *eeb_sut_entry(void)
{
    return &nearest_mean_ops;
}
