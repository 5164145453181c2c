/*
 * eeb_sut_serve.c - the program end of the exec protocol in C: a SUT's
 * table (sut/eeb_sut.h) served over this process's stdin and stdout
 * (sut/eeb_sut_exec.h; docs/sut.md, "Out of process").
 *
 * eeb hosts every team library so (`eeb sut serve`, started by `eeb run
 * --backend ./libteam.so`): the library runs in a process of its own,
 * where a crash or a hang is that process's and eeb stays to record it.
 * sut/examples/eeb_sut_serve.c is the same over dlopen without eeb, for a
 * board that has no eeb (exec:ssh board eeb_sut_serve ./libteam.so); and
 * a team's own C program may link this file with its table directly.  It
 * needs sut/eeb_sut.h and sut/eeb_sut_exec.h alone:
 *
 *     cc -O2 -I. team.c sut/eeb_sut_serve.c -o team_sut
 *
 * The protocol's stdin and stdout are kept on descriptors of their own and
 * the library's are stdin from /dev/null and stdout to stderr, so a
 * printf in the library cannot break a frame.  A request it cannot read
 * (not a frame, another version) ends it with status 1, saying why on
 * stderr; a call the library refuses is an error reply with its reason.
 *
 * The library is handed files of this machine whatever eeb's are (eeb may
 * run elsewhere, reaching this program over ssh): the model's and the
 * xclbin's bytes, which eeb sends, are written to a temporary directory
 * of the server's own (mkdtemp under $TMPDIR, or /tmp) and the library
 * gets those copies; save_model writes a copy there whose bytes go back
 * to eeb; the workdir is eeb's if it is a directory here, else one there.
 * The directory is removed at close or at the end of stdin.
 */
#define _XOPEN_SOURCE 700 /* nftw, mkdtemp */

#include "sut/eeb_sut_serve.h"
#include "sut/eeb_sut.h"
#include "sut/eeb_sut_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct server {
    const struct eeb_sut_ops *ops; /* NULL: refusal says why there is none */
    const char *refusal, *who;     /* who: this program, on stderr */
    void *sut;                     /* the library's handle, once open */
    struct eeb_sut_setup setup;
    size_t item_bytes;
    int in, out; /* the protocol's */
    uint8_t *req, *rep;
    size_t req_cap, rep_cap, rep_len;
    char tmp[4096]; /* this machine's directory for the library's files, "" until made */
    char err[8192]; /* a reason, room for a path in it */
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

/* The reply's payload starts as status 0; an error (status non-zero)
 * replaces it. */
static void reply_status(struct server *s, uint32_t status, const char *why)
{
    size_t n = strlen(why);
    s->rep_len = 0;
    uint8_t *p = reply_room(s, 8 + n);
    if (!p) { /* no room for the reason: the status alone says it failed */
        s->rep_len = 0;
        return;
    }
    eeb_sut_exec_put32(p, status);
    eeb_sut_exec_put32(p + 4, (uint32_t)n);
    memcpy(p + 8, why, n);
}

static void reply_error(struct server *s, const char *why)
{
    reply_status(s, 1, why);
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

/* A file's bytes (u64 length, bytes; pointing into the request), or NULL. */
static const uint8_t *take_file(struct reader *r, size_t *n)
{
    const uint8_t *len = take(r, 8);
    uint64_t m = len ? eeb_sut_exec_get64(len) : 0;
    if (!len || m > r->left)
        return NULL;
    *n = (size_t)m;
    return take(r, *n);
}

/* ---- this machine's files ---- */

/* The temporary directory, made at its first use; NULL saying why in s->err. */
static const char *local_dir(struct server *s)
{
    if (!s->tmp[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(s->tmp, sizeof s->tmp, "%s/eeb-sut-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(s->tmp)) {
            snprintf(s->err, sizeof s->err, "a temporary directory %s: %s", s->tmp,
                     strerror(errno));
            s->tmp[0] = '\0';
            return NULL;
        }
    }
    return s->tmp;
}

/* PREFIX and eeb_path's last name in the temporary directory, into out;
 * -1 saying why in s->err. */
static int local_path(struct server *s, const char *prefix, const char *eeb_path, char *out,
                      size_t n)
{
    const char *dir = local_dir(s), *slash = strrchr(eeb_path, '/');
    const char *name = slash ? slash + 1 : eeb_path;
    if (!dir)
        return -1;
    if (snprintf(out, n, "%s/%s%s", dir, prefix, *name ? name : "file") >= (int)n) {
        snprintf(s->err, sizeof s->err, "%.64s...: path too long", eeb_path);
        return -1;
    }
    return 0;
}

/* The bytes eeb sent for eeb_path, written here: their path in out. */
static int write_local(struct server *s, const char *eeb_path, const uint8_t *bytes, size_t len,
                       char *out, size_t n)
{
    if (local_path(s, "", eeb_path, out, n))
        return -1;
    FILE *f = fopen(out, "wb");
    int failed = !f || fwrite(bytes, 1, len, f) != len;
    if ((f && fclose(f) != 0) || failed) {
        snprintf(s->err, sizeof s->err, "%s: %s", out, strerror(errno));
        return -1;
    }
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_local(struct server *s)
{
    if (s->tmp[0])
        nftw(s->tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    s->tmp[0] = '\0';
}

/* ---- the calls ---- */

/* The workdir and xclbin the library is handed: this machine's. */
static int local_setup(struct server *s, char *workdir, size_t wn, char *xclbin, size_t xn,
                       const uint8_t *design, size_t design_len)
{
    struct stat st;
    if (stat(workdir, &st) != 0 || !S_ISDIR(st.st_mode)) { /* eeb's is elsewhere */
        if (local_path(s, "", "workdir", workdir, wn) ||
            (mkdir(workdir, 0700) != 0 && errno != EEXIST)) {
            snprintf(s->err, sizeof s->err, "%s: %s", workdir, strerror(errno));
            return -1;
        }
    }
    char copy[4096];
    if (!*xclbin)
        return 0;
    if (write_local(s, xclbin, design, design_len, copy, sizeof copy))
        return -1;
    snprintf(xclbin, xn, "%s", copy);
    return 0;
}

static void call_open(struct server *s, struct reader *r)
{
    const uint8_t *f = take(r, EEB_SUT_EXEC_SETUP_BYTES), *design = NULL;
    char *config = take_string(r), *eeb_workdir = take_string(r), *eeb_xclbin = take_string(r);
    char workdir[4096], xclbin[4096];
    size_t design_len = 0;
    if (eeb_workdir && eeb_xclbin) {
        snprintf(workdir, sizeof workdir, "%s", eeb_workdir);
        snprintf(xclbin, sizeof xclbin, "%s", eeb_xclbin);
        design = take_file(r, &design_len);
    }
    if (!f || !config || !design || r->left)
        reply_error(s, "open: a request that is not a setup (48 bytes, three strings, the "
                       "xclbin's bytes)");
    else if (s->sut)
        reply_error(s, "open: already open");
    else if (local_setup(s, workdir, sizeof workdir, xclbin, sizeof xclbin, design, design_len))
        reply_error(s, s->err);
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
                                          workdir,
                                          xclbin};
        s->item_bytes = (size_t)v[3] * (size_t)v[4] * (size_t)v[5] * (size_t)v[6];
        if (s->ops->open(&s->setup, &s->sut, s->err, sizeof s->err)) {
            s->sut = NULL;
            reply_error(s, s->err);
        } else {
            /* the name, the optional calls, and the version if the table has one
             * (its first EEB_SUT_EXEC_MAX_VERSION bytes) and eeb takes it (ABI
             * version 2 on: an older eeb's reply has no room for it) */
            const char *version = s->setup.abi_version >= 2 ? s->ops->version : NULL;
            size_t n = strlen(s->ops->name), vn = version ? strlen(version) : 0;
            if (vn > EEB_SUT_EXEC_MAX_VERSION)
                vn = EEB_SUT_EXEC_MAX_VERSION;
            uint8_t *p = reply_room(s, 8 + n + (vn ? 4 + vn : 0));
            if (p) {
                uint32_t has = (s->ops->end_training ? EEB_SUT_EXEC_HAS_END_TRAINING : 0) |
                               (s->ops->counters ? EEB_SUT_EXEC_HAS_COUNTERS : 0) |
                               (s->ops->save_model ? EEB_SUT_EXEC_HAS_SAVE_MODEL : 0);
                eeb_sut_exec_put32(p, (uint32_t)n);
                memcpy(p + 4, s->ops->name, n);
                eeb_sut_exec_put32(p + 4 + n, has);
                if (vn) {
                    eeb_sut_exec_put32(p + 8 + n, (uint32_t)vn);
                    memcpy(p + 12 + n, version, vn);
                }
            }
        }
    }
    s->setup.config = s->setup.workdir = s->setup.xclbin = NULL; /* valid for the call only */
    free(config), free(eeb_workdir), free(eeb_xclbin);
}

/* The model eeb sent, loaded from a copy here. */
static void call_load_model(struct server *s, struct reader *r)
{
    char *path = take_string(r), local[4096];
    size_t len = 0;
    const uint8_t *bytes = path ? take_file(r, &len) : NULL;
    if (!bytes || r->left)
        reply_error(s, "load_model: a request that is not a path and the model's bytes");
    else if (write_local(s, path, bytes, len, local, sizeof local) ||
             s->ops->load_model(s->sut, local, s->err, sizeof s->err))
        reply_error(s, s->err);
    free(path);
}

/* The model saved here, its bytes appended to the reply for eeb to write. */
static void call_save_model(struct server *s, struct reader *r)
{
    char *path = take_string(r), local[4096];
    FILE *f = NULL;
    struct stat st;
    uint8_t *p;
    if (!path || r->left)
        reply_error(s, "save_model: a request that is not a path");
    else if (!s->ops->save_model)
        reply_error(s, "save_model: this SUT writes no model");
    else if (local_path(s, "saved-", path, local, sizeof local) ||
             s->ops->save_model(s->sut, local, s->err, sizeof s->err))
        reply_error(s, s->err);
    else if (!(f = fopen(local, "rb")) || fstat(fileno(f), &st) != 0) {
        snprintf(s->err, sizeof s->err, "save_model: %s: %s", local, strerror(errno));
        reply_error(s, s->err);
    } else if ((uint64_t)st.st_size > EEB_SUT_EXEC_MAX_PAYLOAD - 12) {
        snprintf(s->err, sizeof s->err, "save_model: %s: %lld bytes, over the protocol's cap of %u",
                 local, (long long)st.st_size, EEB_SUT_EXEC_MAX_PAYLOAD - 12);
        reply_error(s, s->err);
    } else if (!(p = reply_room(s, 8 + (size_t)st.st_size)))
        reply_error(s, "save_model: out of memory");
    else {
        eeb_sut_exec_put64(p, (uint64_t)st.st_size);
        if (fread(p + 8, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
            snprintf(s->err, sizeof s->err, "save_model: %s: read back short", local);
            reply_error(s, s->err);
        }
    }
    if (f) {
        fclose(f);
        remove(local);
    }
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
    if (!s->ops) {
        reply_status(s, EEB_SUT_EXEC_UNSERVABLE, s->refusal);
        return 0;
    }
    if (call != EEB_SUT_EXEC_OPEN && !s->sut) {
        reply_error(s, "not open");
        return 0;
    }
    switch (call) {
    case EEB_SUT_EXEC_OPEN: call_open(s, r); break;
    case EEB_SUT_EXEC_LOAD_MODEL: call_load_model(s, r); break;
    case EEB_SUT_EXEC_SAVE_MODEL: call_save_model(s, r); break;
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
        remove_local(s);
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
            fprintf(stderr, "%s: a request that is not a version %d frame\n", s->who,
                    EEB_SUT_EXEC_VERSION);
            return 1;
        }
        if (grow(&s->req, &s->req_cap, len) || read_exact(s->in, s->req, len) != 1) {
            fprintf(stderr, "%s: a request of %lu bytes cut short (or no memory)\n", s->who,
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
            fprintf(stderr, "%s: writing a reply: %s\n", s->who, strerror(errno));
            return 1;
        }
        if (closed)
            return 0;
    }
}

int eeb_sut_serve(const struct eeb_sut_ops *ops, const char *refusal, const char *who)
{
    struct server s = {.ops = ops, .refusal = refusal ? refusal : "no SUT to serve", .who = who};
    /* the protocol's descriptors apart; the library's stdout is stderr */
    s.in = fcntl(0, F_DUPFD_CLOEXEC, 3);
    s.out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    int null = open("/dev/null", O_RDONLY);
    if (s.in < 0 || s.out < 0 || null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0) {
        fprintf(stderr, "%s: cannot set up stdin and stdout: %s\n", who, strerror(errno));
        return 1;
    }
    close(null);
    int rc = serve(&s);
    if (s.sut) /* stdin ended without close */
        s.ops->close(s.sut);
    remove_local(&s);
    free(s.req), free(s.rep);
    close(s.in), close(s.out);
    return rc;
}
