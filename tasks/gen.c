/*
 * gen.c - the synthetic data generators (eeb_gen.h): the worlds each
 * task's ops name (tasks_int.h), and the shard loop that asks them.
 *
 * Sections: random numbers; colours and backgrounds per domain; shapes
 * and textures; one record per task; the shard loop.
 */
#include "eeb_gen.h"

#include "eeb_shard.h"
#include "tasks_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    SHAPES = TASKS_GEN_SHAPES,
    TEXTURES = TASKS_GEN_TEXTURES,
    MOTIONS = TASKS_GEN_MOTIONS,
    VIDEO_SHAPES = TASKS_GEN_VIDEO_SHAPES,
    MAX_OBJECTS = 3
};

static const char *const shape_names[SHAPES] = {"disc", "square", "triangle", "cross", "ring"};
static const char *const texture_names[TEXTURES] = {"solid", "hstripes", "vstripes", "checker"};
static const char *const motion_names[MOTIONS] = {
    "left", "right", "up", "down", "upleft", "upright", "downleft", "downright", "grow", "shrink"};
/* unit steps per motion (x right, y down) */
static const int motion_dx[8] = {-1, 1, 0, 0, -1, 1, -1, 1};
static const int motion_dy[8] = {0, 0, -1, 1, -1, -1, 1, 1};
static const int video_shapes[VIDEO_SHAPES] = {0, 3}; /* disc, cross */

void tasks_gen_cls_name(int k, char name[EEB_SHARD_MAX_NAME + 1])
{
    snprintf(name, EEB_SHARD_MAX_NAME + 1, "%s_%s", shape_names[k / TEXTURES],
             texture_names[k % TEXTURES]);
}

void tasks_gen_det_name(int k, char name[EEB_SHARD_MAX_NAME + 1])
{
    snprintf(name, EEB_SHARD_MAX_NAME + 1, "%s", shape_names[k]);
}

void tasks_gen_video_name(int k, char name[EEB_SHARD_MAX_NAME + 1])
{
    snprintf(name, EEB_SHARD_MAX_NAME + 1, "%s_%s", shape_names[video_shapes[k / MOTIONS]],
             motion_names[k % MOTIONS]);
}

/* ---- random numbers ---- */

static double uniform(uint64_t *rng)
{
    return (double)(eeb_splitmix64(rng) >> 11) * 0x1p-53;
}

static int below(uint64_t *rng, int n)
{
    return (int)(eeb_splitmix64(rng) % (uint64_t)n);
}

/* ---- colours and backgrounds ---- */

struct rgb {
    double r, g, b;
};

static const struct rgb hues[8] = {{230, 60, 40},  {240, 150, 30}, {230, 220, 50}, {220, 80, 160},
                                   {40, 200, 220}, {50, 90, 230},  {60, 210, 90},  {150, 90, 230}};

static uint8_t clamp8(double v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lrint(v));
}

/* A saturated hue; in the fine-tune domain washed 40 % toward grey. */
static struct rgb object_colour(enum eeb_gen_domain d, uint64_t *rng)
{
    struct rgb c = hues[below(rng, 8)];
    if (d == EEB_GEN_FINETUNE)
        c = (struct rgb){c.r * 0.6 + 64, c.g * 0.6 + 64, c.b * 0.6 + 64};
    c.r += 40 * uniform(rng) - 20, c.g += 40 * uniform(rng) - 20, c.b += 40 * uniform(rng) - 20;
    return c;
}

struct canvas {
    uint8_t *px;
    int side;
};

static void put(struct canvas *cv, int x, int y, struct rgb c)
{
    uint8_t *p = cv->px + ((size_t)y * cv->side + x) * 3;
    p[0] = clamp8(c.r), p[1] = clamp8(c.g), p[2] = clamp8(c.b);
}

/* Pre-train: a dark, plain field.  Fine-tune: a coloured gradient crossed
 * by a few thin lines of other colours (clutter no class depends on). */
static void background(struct canvas *cv, enum eeb_gen_domain d, uint64_t *rng)
{
    int s = cv->side;
    if (d == EEB_GEN_PRETRAIN) {
        double base = 20 + 40 * uniform(rng);
        for (int y = 0; y < s; y++)
            for (int x = 0; x < s; x++) {
                double v = base + 30 * uniform(rng) - 15;
                put(cv, x, y, (struct rgb){v, v, v});
            }
        return;
    }
    struct rgb a = {40 + 70 * uniform(rng), 40 + 70 * uniform(rng), 40 + 70 * uniform(rng)};
    struct rgb b = {40 + 70 * uniform(rng), 40 + 70 * uniform(rng), 40 + 70 * uniform(rng)};
    for (int y = 0; y < s; y++)
        for (int x = 0; x < s; x++) {
            double t = (double)(x + y) / (2 * s), n = 40 * uniform(rng) - 20;
            put(cv, x, y,
                (struct rgb){a.r + (b.r - a.r) * t + n, a.g + (b.g - a.g) * t + n,
                             a.b + (b.b - a.b) * t + n});
        }
    for (int lines = 2 + below(rng, 3); lines > 0; lines--) {
        struct rgb c = {255 * uniform(rng), 255 * uniform(rng), 255 * uniform(rng)};
        int at = below(rng, s), vertical = below(rng, 2);
        for (int i = 0; i < s; i++)
            put(cv, vertical ? at : i, vertical ? i : at, c);
    }
}

/* ---- shapes and textures ---- */

/* Whether (u, v), the pixel centre in the shape's box scaled to [-1, 1],
 * is inside the shape.  Every shape touches all four sides of its box, so
 * the box is tight. */
static int inside(int shape, double u, double v)
{
    switch (shape) {
    case 0: return u * u + v * v <= 1;
    case 1: return 1;
    case 2: return fabs(u) <= (v + 1) / 2; /* apex at the top */
    case 3: return fabs(u) <= 0.3 || fabs(v) <= 0.3;
    default: return u * u + v * v <= 1 && u * u + v * v >= 0.36;
    }
}

/* Whether the texture draws the dark shade at pixel (x, y) of the box. */
static int shaded(int texture, int x, int y, int period)
{
    switch (texture) {
    case 0: return 0;
    case 1: return (y / period) & 1;
    case 2: return (x / period) & 1;
    default: return ((x / period) ^ (y / period)) & 1;
    }
}

struct object {
    int shape, texture;
    double x0, y0, side; /* the box, continuous pixels */
    struct rgb colour;
};

static void draw(struct canvas *cv, const struct object *o)
{
    struct rgb dark = {o->colour.r * 0.4, o->colour.g * 0.4, o->colour.b * 0.4};
    int period = o->side >= 16 ? 3 : 2;
    int xa = (int)floor(o->x0), ya = (int)floor(o->y0);
    int xb = (int)ceil(o->x0 + o->side), yb = (int)ceil(o->y0 + o->side);
    for (int y = ya < 0 ? 0 : ya; y < yb && y < cv->side; y++)
        for (int x = xa < 0 ? 0 : xa; x < xb && x < cv->side; x++) {
            double u = (x + 0.5 - o->x0) / o->side * 2 - 1, v = (y + 0.5 - o->y0) / o->side * 2 - 1;
            if (fabs(u) <= 1 && fabs(v) <= 1 && inside(o->shape, u, v))
                put(cv, x, y, shaded(o->texture, x - xa, y - ya, period) ? dark : o->colour);
        }
}

/* Object side as a fraction of the image: smaller in the fine-tune domain. */
static double object_side(enum eeb_gen_domain d, int s, uint64_t *rng)
{
    return s * (d == EEB_GEN_PRETRAIN ? 0.40 + 0.25 * uniform(rng) : 0.30 + 0.20 * uniform(rng));
}

/* ---- one record per task ---- */

void tasks_gen_cls(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng)
{
    struct canvas cv = {r->pixels, sp->size};
    background(&cv, sp->domain, rng);
    r->label = below(rng, SHAPES * TEXTURES);
    struct object o = {r->label / TEXTURES, r->label % TEXTURES, 0, 0, 0, {0, 0, 0}};
    o.side = object_side(sp->domain, sp->size, rng);
    o.x0 = (sp->size - o.side) * uniform(rng), o.y0 = (sp->size - o.side) * uniform(rng);
    o.colour = object_colour(sp->domain, rng);
    draw(&cv, &o);
}

static double overlap(const struct object *a, const struct object *b)
{
    double w = fmin(a->x0 + a->side, b->x0 + b->side) - fmax(a->x0, b->x0);
    double h = fmin(a->y0 + a->side, b->y0 + b->side) - fmax(a->y0, b->y0);
    return w > 0 && h > 0 ? w * h / fmin(a->side * a->side, b->side * b->side) : 0;
}

/* 1-3 objects that cover at most a quarter of each other, and now and then
 * a tiny one, marked difficult. */
void tasks_gen_det(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng)
{
    struct canvas cv = {r->pixels, sp->size};
    background(&cv, sp->domain, rng);
    struct object objs[MAX_OBJECTS + 1];
    int want = 1 + below(rng, MAX_OBJECTS), n = 0;
    for (int tries = 0; n < want && tries < 50; tries++) {
        struct object o = {below(rng, SHAPES), below(rng, TEXTURES), 0, 0, 0, {0, 0, 0}};
        o.side = object_side(sp->domain, sp->size, rng) * 0.8;
        o.x0 = (sp->size - o.side) * uniform(rng), o.y0 = (sp->size - o.side) * uniform(rng);
        int clear = 1;
        for (int j = 0; j < n; j++)
            clear &= overlap(&o, &objs[j]) <= 0.25;
        if (!clear)
            continue;
        o.colour = object_colour(sp->domain, rng);
        objs[n++] = o;
    }
    int tiny = below(rng, 4) == 0;
    if (tiny) {
        struct object o = {below(rng, SHAPES), 0, 0, 0, sp->size * 0.08, {0, 0, 0}};
        o.x0 = (sp->size - o.side) * uniform(rng), o.y0 = (sp->size - o.side) * uniform(rng);
        o.colour = object_colour(sp->domain, rng);
        objs[n++] = o;
    }
    r->label = 0;
    r->nboxes = n;
    for (int i = 0; i < n; i++) {
        draw(&cv, &objs[i]);
        const struct object *o = &objs[i];
        r->boxes[i] =
            (struct eeb_box){o->shape,     tiny && i == n - 1,       (float)o->x0,
                             (float)o->y0, (float)(o->x0 + o->side), (float)(o->y0 + o->side)};
    }
}

/* One object moving along one of 8 directions, or growing or shrinking,
 * over a background that stays; each frame has its own noise. */
void tasks_gen_video(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng)
{
    int s = sp->size, t = sp->frames;
    size_t frame = (size_t)s * s * 3;
    struct canvas cv = {r->pixels, s};
    background(&cv, sp->domain, rng);
    for (int f = 1; f < t; f++)
        memcpy(r->pixels + f * frame, r->pixels, frame);
    r->label = below(rng, VIDEO_SHAPES * MOTIONS);
    int motion = r->label % MOTIONS;
    struct object o = {video_shapes[r->label / MOTIONS], below(rng, TEXTURES), 0, 0, 0,
                       object_colour(sp->domain, rng)};
    double side = object_side(sp->domain, s, rng) * 0.8, travel = 0.35 * s;
    double grown = motion >= 8 ? side * 1.6 : side;
    double x = (s - grown - travel) * uniform(rng), y = (s - grown - travel) * uniform(rng);
    for (int f = 0; f < t; f++) {
        double p = (double)f / (t - 1), q = motion == 9 ? 1 - p : p;
        struct canvas fc = {r->pixels + f * frame, s};
        for (size_t i = 0; i < frame; i++) /* fresh noise per frame */
            fc.px[i] = clamp8(fc.px[i] + 16 * uniform(rng) - 8);
        if (motion < 8) {
            o.side = side;
            o.x0 = x + travel * (motion_dx[motion] < 0 ? 1 - p : motion_dx[motion] ? p : 0.5);
            o.y0 = y + travel * (motion_dy[motion] < 0 ? 1 - p : motion_dy[motion] ? p : 0.5);
        } else { /* about a fixed centre */
            o.side = side + (grown - side) * q;
            o.x0 = x + (grown + travel - o.side) / 2, o.y0 = y + (grown + travel - o.side) / 2;
        }
        draw(&fc, &o);
    }
}

/* ---- the shard ---- */

static int check_spec(const struct eeb_gen_spec *sp, char *err, size_t errlen)
{
    const struct eeb_task_ops *ops = eeb_task_get(sp->task);
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "generator: task %d unknown", (int)sp->task);
    if (sp->size < 16 || sp->size > 1024)
        return eeb_errf(err, errlen, EEB_EINVAL, "generator: size %d (16..1024 pixels)", sp->size);
    if (ops->clips ? sp->frames < 2 || sp->frames > EEB_TASK_MAX_FRAMES : sp->frames != 1) {
        char clips[48];
        snprintf(clips, sizeof clips, "2..%d for %s", EEB_TASK_MAX_FRAMES, eeb_task_name(sp->task));
        return eeb_errf(err, errlen, EEB_EINVAL, "generator: %d frames (%s)", sp->frames,
                        ops->clips ? clips : "images have 1");
    }
    if (sp->domain != EEB_GEN_PRETRAIN && sp->domain != EEB_GEN_FINETUNE)
        return eeb_errf(err, errlen, EEB_EINVAL, "generator: domain %d unknown", (int)sp->domain);
    return EEB_OK;
}

int eeb_gen_shard(const char *path, const struct eeb_gen_spec *sp,
                  void (*progress)(uint64_t done, uint64_t total, void *arg), void *arg, char *err,
                  size_t errlen)
{
    int rc = check_spec(sp, err, errlen);
    if (rc != EEB_OK)
        return rc;
    const struct eeb_task_ops *ops = eeb_task_get(sp->task);
    int classes = ops->gen_classes;
    char(*names)[EEB_SHARD_MAX_NAME + 1] = calloc((size_t)classes, sizeof *names);
    for (int k = 0; names && k < classes; k++)
        ops->gen_class_name(k, names[k]);
    struct eeb_shard_info info = {sp->task, sp->size, sp->size, 3, sp->frames, classes, names, 0};
    struct eeb_record *r = calloc(1, sizeof *r);
    uint8_t *px = malloc(eeb_shard_pixels(&info));
    struct eeb_shard_writer *w = NULL;
    if (!r || !px || !names) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "generator: out of memory");
        goto out;
    }
    rc = eeb_shard_create(&w, path, &info, err, errlen);
    if (rc != EEB_OK)
        goto out;
    static const char *const split_names[2] = {"train", "test"};
    uint64_t stream = sp->seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)sp->task << 48) ^
                      ((uint64_t)sp->domain << 40) ^ ((uint64_t)(sp->test != 0) << 32);
    for (uint64_t i = 0; i < sp->n && rc == EEB_OK; i++) {
        uint64_t rng = stream + i * 0xd1b54a32d192ed03ull;
        eeb_splitmix64(&rng);
        memset(r, 0, sizeof *r);
        r->pixels = px;
        snprintf(r->id, sizeof r->id, "%s_%s_%06llu", sp->domain ? "ft" : "pt",
                 split_names[sp->test != 0], (unsigned long long)i);
        ops->gen_record(sp, r, &rng);
        rc = eeb_shard_write(w, r, err, errlen);
        if (rc == EEB_OK && progress)
            progress(i + 1, sp->n, arg);
    }
    if (rc == EEB_OK) {
        rc = eeb_shard_finish(w, err, errlen);
        w = NULL;
    }
out:
    eeb_shard_abort(w);
    free(px);
    free(r);
    free(names);
    return rc;
}
