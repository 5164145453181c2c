/*
 * eeb_sut_serve.c - any SUT library served out of process: the program
 * end of the exec protocol in C, over a team's library loaded with dlopen.
 *
 *     eeb run ... --backend 'exec:build/sut/eeb_sut_serve ./libteam.so'
 *
 * gives eeb the same calls, and the same answers, as `--backend
 * ./libteam.so` in process: the library runs in its own process, where a
 * crash or a hang is the program's and eeb stays to record it.  It is
 * also a team's starting point for a program of their own in C: the
 * frames are read and written here against sut/eeb_sut.h and
 * sut/eeb_sut_exec.h alone (docs/sut.md, "Out of process").
 *
 * Build it (from eeb's root; `make` builds it as build/sut/eeb_sut_serve):
 *
 *     cc -O2 -I. sut/examples/eeb_sut_serve.c -ldl -o eeb_sut_serve
 *
 * The protocol's stdin and stdout are kept on descriptors of their own and
 * the library's are stdin from /dev/null and stdout to stderr, so a
 * printf in the library cannot break a frame.  A request it cannot read
 * (not a frame, another version) ends it with status 1, saying why on
 * stderr; a call the library refuses is an error reply with its reason.
 */
#define _POSIX_C_SOURCE 200809L

#include "sut/eeb_sut.h"
#include "sut/eeb_sut_exec.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct server {
    const struct eeb_sut_ops *ops;
    void *sut; /* the library's handle, once open */
    struct eeb_sut_setup setup;
    size_t item_bytes;
    int in, out; /* the protocol's */
    uint8_t *req, *rep;
    size_t req_cap, rep_cap, rep_len;
    char err[1024];
};

/* ---- frames ---- */

/* 1 with n bytes, 0 at the end of the stream before any, -1 cut short. */
static int read_exact(int fd, uint8_t *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r > 0)
            got += (size_t)r;
        else if (r == 0)
            return got ? -1 : 0;
        else if (errno != EINTR)
            return -1;
    }
    return 1;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

static int grow(uint8_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    uint8_t *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p, *cap = n;
    return 0;
}

/* Room for n more bytes of the reply: where they go (NULL if no memory). */
static uint8_t *reply_room(struct server *s, size_t n)
{
    if (grow(&s->rep, &s->rep_cap, s->rep_len + n))
        return NULL;
    uint8_t *p = s->rep + s->rep_len;
    s->rep_len += n;
    return p;
}

/* The reply's payload starts as status 0; an error replaces it. */
static void reply_error(struct server *s, const char *why)
{
    size_t n = strlen(why);
    s->rep_len = 0;
    uint8_t *p = reply_room(s, 8 + n);
    if (!p) { /* no room for the reason: the status alone says it failed */
        s->rep_len = 0;
        return;
    }
    eeb_sut_exec_put32(p, 1);
    eeb_sut_exec_put32(p + 4, (uint32_t)n);
    memcpy(p + 8, why, n);
}

/* Fields of a request, in order; a short one fails the call. */
struct reader {
    const uint8_t *p;
    size_t left;
};

static const uint8_t *take(struct reader *r, size_t n)
{
    if (n > r->left)
        return NULL;
    const uint8_t *p = r->p;
    r->p += n, r->left -= n;
    return p;
}

/* A string as a new NUL-terminated copy (free it), or NULL. */
static char *take_string(struct reader *r)
{
    const uint8_t *len = take(r, 4);
    uint32_t n = len ? eeb_sut_exec_get32(len) : 0;
    const uint8_t *bytes = len && n <= EEB_SUT_EXEC_MAX_TEXT ? take(r, n) : NULL;
    char *s = bytes ? malloc(n + 1) : NULL;
    if (s) {
        memcpy(s, bytes, n);
        s[n] = '\0';
    }
    return s;
}

/* ---- the calls ---- */

static void call_open(struct server *s, struct reader *r)
{
    const uint8_t *f = take(r, EEB_SUT_EXEC_SETUP_BYTES);
    char *config = take_string(r), *workdir = take_string(r);
    if (!f || !config || !workdir || r->left)
        reply_error(s, "open: a request that is not a setup (48 bytes, then two strings)");
    else if (s->sut)
        reply_error(s, "open: already open");
    else {
        int32_t v[10];
        for (int i = 0; i < 10; i++)
            v[i] = (int32_t)eeb_sut_exec_get32(f + 4 * i);
        s->setup = (struct eeb_sut_setup){v[0],
                                          v[1],
                                          v[2],
                                          v[3],
                                          v[4],
                                          v[5],
                                          v[6],
                                          v[7],
                                          v[8],
                                          v[9],
                                          eeb_sut_exec_get64(f + 40),
                                          config,
                                          workdir};
        s->item_bytes = (size_t)v[3] * (size_t)v[4] * (size_t)v[5] * (size_t)v[6];
        if (s->ops->open(&s->setup, &s->sut, s->err, sizeof s->err)) {
            s->sut = NULL;
            reply_error(s, s->err);
        } else {
            size_t n = strlen(s->ops->name);
            uint8_t *p = reply_room(s, 8 + n);
            if (p) {
                uint32_t has = (s->ops->end_training ? EEB_SUT_EXEC_HAS_END_TRAINING : 0) |
                               (s->ops->counters ? EEB_SUT_EXEC_HAS_COUNTERS : 0) |
                               (s->ops->save_model ? EEB_SUT_EXEC_HAS_SAVE_MODEL : 0);
                eeb_sut_exec_put32(p, (uint32_t)n);
                memcpy(p + 4, s->ops->name, n);
                eeb_sut_exec_put32(p + 4 + n, has);
            }
        }
    }
    s->setup.config = s->setup.workdir = NULL; /* valid for the call only */
    free(config), free(workdir);
}

static void call_path(struct server *s, struct reader *r, unsigned call)
{
    char *path = take_string(r);
    int (*fn)(void *, const char *, char *, size_t) =
        call == EEB_SUT_EXEC_LOAD_MODEL ? s->ops->load_model : s->ops->save_model;
    if (!path || r->left)
        reply_error(s, "a request that is not a path");
    else if (!fn)
        reply_error(s, "this SUT writes no model");
    else if (fn(s->sut, path, s->err, sizeof s->err))
        reply_error(s, s->err);
    free(path);
}

/* A batch's n and pixels (pointing into the request). */
static int batch_head(struct server *s, struct reader *r, struct eeb_sut_batch *b)
{
    const uint8_t *n = take(r, 4);
    *b = (struct eeb_sut_batch){0};
    if (!n)
        return -1;
    b->n = (int32_t)eeb_sut_exec_get32(n);
    if (b->n < 1 || b->n > s->setup.batch_max)
        return -1;
    b->pixels = take(r, (size_t)b->n * s->item_bytes);
    return b->pixels ? 0 : -1;
}

/* train's labels, or box counts and boxes, decoded into a new buffer. */
static void *train_fields(struct server *s, struct reader *r, struct eeb_sut_batch *b)
{
    size_t n = (size_t)b->n, boxes = 0;
    const uint8_t *f = take(r, 4 * n);
    if (!f)
        return NULL;
    if (s->setup.task == EEB_SUT_DET)
        for (size_t i = 0; i < n; i++)
            boxes += eeb_sut_exec_get32(f + 4 * i) & 0x7fffffffu;
    if (boxes > r->left / EEB_SUT_EXEC_BOX_BYTES)
        return NULL;
    int32_t *ints = malloc(4 * n + boxes * sizeof(struct eeb_sut_box));
    if (!ints)
        return NULL;
    struct eeb_sut_box *box = (struct eeb_sut_box *)(ints + n);
    for (size_t i = 0; i < n; i++)
        ints[i] = (int32_t)eeb_sut_exec_get32(f + 4 * i);
    const uint8_t *p = take(r, boxes * EEB_SUT_EXEC_BOX_BYTES);
    for (size_t j = 0; j < boxes; j++, p += EEB_SUT_EXEC_BOX_BYTES)
        box[j] =
            (struct eeb_sut_box){(int32_t)eeb_sut_exec_get32(p), (int32_t)eeb_sut_exec_get32(p + 4),
                                 eeb_sut_exec_get_f32(p + 8),    eeb_sut_exec_get_f32(p + 12),
                                 eeb_sut_exec_get_f32(p + 16),   eeb_sut_exec_get_f32(p + 20)};
    if (s->setup.task == EEB_SUT_DET)
        b->box_counts = ints, b->boxes = box;
    else
        b->labels = ints;
    return ints;
}

static void call_train(struct server *s, struct reader *r)
{
    struct eeb_sut_batch b;
    void *fields = NULL;
    struct eeb_sut_step step = {0};
    if (batch_head(s, r, &b) || !(fields = train_fields(s, r, &b)) || r->left)
        reply_error(s, "train: a request that is not a batch of 1..batch_max items");
    else if (s->ops->train(s->sut, &b, &step, s->err, sizeof s->err))
        reply_error(s, s->err);
    else {
        uint8_t *p = reply_room(s, EEB_SUT_EXEC_STEP_BYTES);
        if (p) {
            eeb_sut_exec_put_f64(p, step.loss);
            eeb_sut_exec_put64(p + 8, (uint64_t)step.correct);
            eeb_sut_exec_put64(p + 16, (uint64_t)step.counted);
            p[24] = step.done ? 1 : 0;
        }
    }
    free(fields);
}

/* predict's answers, as the protocol packs them. */
static void predictions(struct server *s, int n, const struct eeb_sut_predictions *o)
{
    size_t k = (size_t)s->setup.top_k, m = (size_t)n * k;
    uint8_t *p;
    if (s->setup.task != EEB_SUT_DET) {
        if (!(p = reply_room(s, 4 + 8 * m)))
            return;
        eeb_sut_exec_put32(p, (uint32_t)n);
        for (size_t j = 0; j < m; j++) {
            eeb_sut_exec_put32(p + 4 + 4 * j, (uint32_t)o->classes[j]);
            eeb_sut_exec_put_f32(p + 4 + 4 * m + 4 * j, o->scores[j]);
        }
        return;
    }
    size_t dets = 0;
    for (int i = 0; i < n; i++)
        dets += o->counts[i] > 0 ? (size_t)o->counts[i] : 0;
    if (!(p = reply_room(s, 4 + 4 * (size_t)n + dets * EEB_SUT_EXEC_DETECTION_BYTES)))
        return;
    eeb_sut_exec_put32(p, (uint32_t)n);
    p += 4;
    for (int i = 0; i < n; i++, p += 4)
        eeb_sut_exec_put32(p, (uint32_t)o->counts[i]);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < o->counts[i]; j++, p += EEB_SUT_EXEC_DETECTION_BYTES) {
            const struct eeb_sut_detection *d =
                &o->detections[(size_t)i * (size_t)s->setup.max_boxes + (size_t)j];
            eeb_sut_exec_put32(p, (uint32_t)d->cls);
            eeb_sut_exec_put_f32(p + 4, d->score);
            eeb_sut_exec_put_f32(p + 8, d->x0), eeb_sut_exec_put_f32(p + 12, d->y0);
            eeb_sut_exec_put_f32(p + 16, d->x1), eeb_sut_exec_put_f32(p + 20, d->y1);
        }
}

static void call_predict(struct server *s, struct reader *r)
{
    struct eeb_sut_batch b;
    if (batch_head(s, r, &b) || r->left) {
        reply_error(s, "predict: a request that is not a batch of 1..batch_max items");
        return;
    }
    size_t n = (size_t)b.n, k = (size_t)s->setup.top_k, boxes = (size_t)s->setup.max_boxes;
    struct eeb_sut_predictions o = {
        calloc(n * k + 1, sizeof *o.classes), calloc(n * k + 1, sizeof *o.scores),
        calloc(n, sizeof *o.counts), calloc(n * boxes + 1, sizeof *o.detections)};
    if (!o.classes || !o.scores || !o.counts || !o.detections)
        reply_error(s, "predict: out of memory");
    else if (s->ops->predict(s->sut, &b, &o, s->err, sizeof s->err))
        reply_error(s, s->err);
    else {
        for (size_t i = 0; s->setup.task == EEB_SUT_DET && i < n; i++)
            if (o.counts[i] < 0 || o.counts[i] > s->setup.max_boxes) {
                snprintf(s->err, sizeof s->err, "predict: item %zu: %d detections (0..%d)", i,
                         (int)o.counts[i], s->setup.max_boxes);
                reply_error(s, s->err);
                goto out;
            }
        predictions(s, b.n, &o);
    }
out:
    free(o.classes), free(o.scores), free(o.counts), free(o.detections);
}

static void call_counters(struct server *s)
{
    struct eeb_sut_counters c = {0};
    if (s->ops->counters)
        s->ops->counters(s->sut, &c);
    c.detail[sizeof c.detail - 1] = '\0';
    size_t n = strlen(c.detail);
    uint8_t *p = reply_room(s, 52 + n);
    if (!p)
        return;
    eeb_sut_exec_put64(p, c.steps);
    eeb_sut_exec_put64(p + 8, c.items);
    for (int i = 0; i < 4; i++)
        eeb_sut_exec_put64(p + 16 + 8 * i, c.saturations[i]);
    eeb_sut_exec_put32(p + 48, (uint32_t)n);
    memcpy(p + 52, c.detail, n);
}

/* One request answered; 1 after close. */
static int dispatch(struct server *s, unsigned call, struct reader *r)
{
    if (call != EEB_SUT_EXEC_OPEN && !s->sut) {
        reply_error(s, "not open");
        return 0;
    }
    switch (call) {
    case EEB_SUT_EXEC_OPEN: call_open(s, r); break;
    case EEB_SUT_EXEC_LOAD_MODEL:
    case EEB_SUT_EXEC_SAVE_MODEL: call_path(s, r, call); break;
    case EEB_SUT_EXEC_TRAIN: call_train(s, r); break;
    case EEB_SUT_EXEC_END_TRAINING:
        if (s->ops->end_training && s->ops->end_training(s->sut, s->err, sizeof s->err))
            reply_error(s, s->err);
        break;
    case EEB_SUT_EXEC_PREDICT: call_predict(s, r); break;
    case EEB_SUT_EXEC_COUNTERS: call_counters(s); break;
    case EEB_SUT_EXEC_CLOSE:
        s->ops->close(s->sut);
        s->sut = NULL;
        return 1;
    default: reply_error(s, "a call this program does not know"); break;
    }
    return 0;
}

/* Requests answered until close (0) or the end of stdin (0), or one that
 * is not a frame (1). */
static int serve(struct server *s)
{
    for (;;) {
        uint8_t h[EEB_SUT_EXEC_HEADER], rh[EEB_SUT_EXEC_HEADER];
        int got = read_exact(s->in, h, sizeof h);
        if (got == 0)
            return 0;
        uint32_t len = eeb_sut_exec_get32(h + 12);
        unsigned version = (unsigned)h[4] | (unsigned)h[5] << 8, call = h[6] | (unsigned)h[7] << 8;
        if (got < 0 || memcmp(h, EEB_SUT_EXEC_MAGIC, 4) || version != EEB_SUT_EXEC_VERSION ||
            len > EEB_SUT_EXEC_MAX_PAYLOAD) {
            fprintf(stderr, "eeb_sut_serve: a request that is not a version %d frame\n",
                    EEB_SUT_EXEC_VERSION);
            return 1;
        }
        if (grow(&s->req, &s->req_cap, len) || read_exact(s->in, s->req, len) != 1) {
            fprintf(stderr, "eeb_sut_serve: a request of %lu bytes cut short (or no memory)\n",
                    (unsigned long)len);
            return 1;
        }
        struct reader r = {s->req, len};
        s->rep_len = 0;
        uint8_t *status = reply_room(s, 4);
        if (status)
            eeb_sut_exec_put32(status, 0);
        int closed = dispatch(s, call, &r);
        eeb_sut_exec_header(rh, (enum eeb_sut_exec_call)call, eeb_sut_exec_get32(h + 8),
                            (uint32_t)s->rep_len);
        if (write_all(s->out, rh, sizeof rh) || write_all(s->out, s->rep, s->rep_len)) {
            fprintf(stderr, "eeb_sut_serve: writing a reply: %s\n", strerror(errno));
            return 1;
        }
        if (closed)
            return 0;
    }
}

/* The library's table, or NULL saying why. */
static const struct eeb_sut_ops *load(const char *path, void **lib)
{
    *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*lib) {
        fprintf(stderr, "eeb_sut_serve: %s\n", dlerror());
        return NULL;
    }
    void *sym = dlsym(*lib, "eeb_sut_entry");
    const struct eeb_sut_ops *(*entry)(void) = NULL;
    memcpy(&entry, &sym, sizeof entry); /* a function's address through dlsym's void * */
    const struct eeb_sut_ops *ops = entry ? entry() : NULL;
    if (!ops || ops->abi_version != EEB_SUT_ABI_VERSION || !ops->name || !ops->open ||
        !ops->load_model || !ops->train || !ops->predict || !ops->close) {
        fprintf(stderr,
                "eeb_sut_serve: %s: no eeb_sut_entry, or a table that is not a whole SUT of ABI "
                "version %d\n",
                path, EEB_SUT_ABI_VERSION);
        return NULL;
    }
    return ops;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: eeb_sut_serve ./libteam.so   (eeb run --backend "
                        "'exec:eeb_sut_serve ./libteam.so')\n");
        return 2;
    }
    struct server s = {0};
    void *lib = NULL;
    /* the protocol's descriptors apart; the library's stdout is stderr */
    s.in = fcntl(0, F_DUPFD_CLOEXEC, 3);
    s.out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDONLY);
    if (s.in < 0 || s.out < 0 || null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0) {
        fprintf(stderr, "eeb_sut_serve: cannot set up stdin and stdout: %s\n", strerror(errno));
        return 1;
    }
    close(null);
    int rc = 1;
    if ((s.ops = load(argv[1], &lib)))
        rc = serve(&s);
    if (s.sut) /* stdin ended without close */
        s.ops->close(s.sut);
    free(s.req), free(s.rep);
    if (lib)
        dlclose(lib);
    return rc;
}
