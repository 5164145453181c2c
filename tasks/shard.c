/*
 * shard.c - writing and streaming .eebd shards, and whether one holds
 * records of a task.
 *
 * Header (little-endian):
 *   0 "EEBD"  4 u16 version  8 u32 header bytes  12 u8 task  13 u8 channels
 *   14 u16 frames  16 u16 height  18 u16 width  20 u16 classes
 *   24 u64 records  32 u32 CRC-32 of the header (this field read as 0)
 *   64 class names, each a u8 length and that many bytes
 * Record:
 *   0 u32 body bytes  4 u32 CRC-32 of the body
 *   body: 0 u16 id bytes  2 u16 label  4 u16 boxes  6 u16 reserved
 *         8 id, then per box u16 class, u8 difficult, u8 reserved and
 *         f32 x0, y0, x1, y1, then the pixels
 */
#include "eeb_shard.h"

#include "common/eeb_bytes.h"
#include "eeb_classes.h"
#include "eeb_task_ops.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    H_MAGIC = 0,
    H_VERSION = 4,
    H_BYTES = 8,
    H_TASK = 12,
    H_CHANNELS = 13,
    H_FRAMES = 14,
    H_HEIGHT = 16,
    H_WIDTH = 18,
    H_CLASSES = 20,
    H_COUNT = 24,
    H_CRC = 32,
    H_NAMES = 64,
};

#define REC_PREFIX 8 /* body bytes, CRC */
#define REC_FIXED  8 /* id bytes, label, boxes, reserved */
#define BOX_BYTES  20

size_t eeb_shard_pixels(const struct eeb_shard_info *info)
{
    return (size_t)info->frames * (size_t)info->h * (size_t)info->w * (size_t)info->c;
}

static size_t max_body(const struct eeb_shard_info *info)
{
    return REC_FIXED + EEB_SHARD_MAX_ID + (size_t)EEB_SHARD_MAX_BOXES * BOX_BYTES +
           eeb_shard_pixels(info);
}

/* What both the writer and the reader demand of a header. */
static int check_info(const struct eeb_shard_info *in, const char *name, char *err, size_t errlen)
{
    const struct eeb_task_ops *ops = eeb_task_get(in->task);
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: task %d unknown", name, (int)in->task);
    if (in->h < 1 || in->h > EEB_SHARD_MAX_SIDE || in->w < 1 || in->w > EEB_SHARD_MAX_SIDE ||
        (in->c != 1 && in->c != 3))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: image %dx%dx%d (sides 1..%d, 1 or 3 channels)", name, in->h, in->w,
                        in->c, EEB_SHARD_MAX_SIDE);
    if (in->frames < 1 || in->frames > EEB_SHARD_MAX_FRAMES || (!ops->clips && in->frames != 1))
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %d frames per item (%s)", name, in->frames,
                        ops->clips ? "1..256" : "images have 1");
    if (in->classes < 1 || in->classes > EEB_SHARD_MAX_CLASSES)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: %d classes (1..%d)", name, in->classes,
                        EEB_SHARD_MAX_CLASSES);
    /* a record's body bytes are a u32 (counted here in 64 bits: size_t
     * may have 32) */
    uint64_t px = (uint64_t)in->frames * (uint64_t)in->h * (uint64_t)in->w * (uint64_t)in->c;
    if (px > UINT32_MAX - (REC_FIXED + EEB_SHARD_MAX_ID + EEB_SHARD_MAX_BOXES * BOX_BYTES))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: %d frames of %dx%dx%d are %llu bytes an item; a record holds at most "
                        "4 GiB",
                        name, in->frames, in->h, in->w, in->c, (unsigned long long)px);
    return EEB_OK;
}

/* Whether the shard's items carry boxes (their label 0), not a class. */
static int boxed(const struct eeb_shard_info *in)
{
    return eeb_task_get(in->task)->prediction == EEB_PREDICTION_BOXES;
}

/* A known class, and corners in order within the image (NaN fails). */
static int box_fits(const struct eeb_shard_info *in, const struct eeb_box *x)
{
    return x->cls >= 0 && x->cls < in->classes && x->x0 >= 0 && x->x0 <= x->x1 && x->x1 <= in->w &&
           x->y0 >= 0 && x->y0 <= x->y1 && x->y1 <= in->h;
}

/* ---- writing ---- */

struct eeb_shard_writer {
    struct eeb_atomic_file af;
    struct eeb_shard_info info;
    uint8_t *hdr, *body;
    size_t hdr_len;
    uint64_t count;
};

int eeb_shard_create(struct eeb_shard_writer **out, const char *path,
                     const struct eeb_shard_info *info, char *err, size_t errlen)
{
    int rc = check_info(info, path, err, errlen);
    if (rc != EEB_OK)
        return rc;
    size_t hdr_len = H_NAMES;
    for (int i = 0; i < info->classes; i++) {
        size_t n = strnlen(info->names[i], EEB_SHARD_MAX_NAME + 1);
        char where[4200];
        snprintf(where, sizeof where, "%s: class %d", path, i);
        if ((rc = eeb_class_name_check(info->names[i], n, where, err, errlen)) != EEB_OK)
            return rc;
        hdr_len += 1 + n;
    }
    struct eeb_shard_writer *w = calloc(1, sizeof *w);
    if (w) {
        w->hdr = calloc(1, hdr_len);
        w->body = malloc(max_body(info));
    }
    if (!w || !w->hdr || !w->body) {
        if (w)
            free(w->hdr), free(w->body), free(w);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    w->info = *info;
    w->info.names = NULL; /* only the header keeps them */
    w->hdr_len = hdr_len;
    uint8_t *h = w->hdr;
    memcpy(h + H_MAGIC, "EEBD", 4);
    eeb_put16(h + H_VERSION, EEB_SHARD_VERSION);
    eeb_put32(h + H_BYTES, (uint32_t)hdr_len);
    h[H_TASK] = (uint8_t)info->task;
    h[H_CHANNELS] = (uint8_t)info->c;
    eeb_put16(h + H_FRAMES, (uint16_t)info->frames);
    eeb_put16(h + H_HEIGHT, (uint16_t)info->h);
    eeb_put16(h + H_WIDTH, (uint16_t)info->w);
    eeb_put16(h + H_CLASSES, (uint16_t)info->classes);
    size_t at = H_NAMES;
    for (int i = 0; i < info->classes; i++) {
        size_t n = strlen(info->names[i]);
        h[at] = (uint8_t)n;
        memcpy(h + at + 1, info->names[i], n);
        at += 1 + n;
    }
    rc = eeb_atomic_open(&w->af, path, err, errlen);
    if (rc == EEB_OK && fwrite(h, 1, hdr_len, w->af.f) != hdr_len)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: write failed", path);
    if (rc != EEB_OK) {
        eeb_shard_abort(w);
        return rc;
    }
    *out = w;
    return EEB_OK;
}

int eeb_shard_write(struct eeb_shard_writer *w, const struct eeb_record *r, char *err,
                    size_t errlen)
{
    const struct eeb_shard_info *in = &w->info;
    const char *path = w->af.path;
    size_t id_len = strnlen(r->id, sizeof r->id);
    if (id_len > EEB_SHARD_MAX_ID)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: record %llu: id longer than %d bytes", path,
                        (unsigned long long)w->count, EEB_SHARD_MAX_ID);
    if (r->label < 0 || r->label >= in->classes)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: record %llu (%s): label %d (0..%d)", path,
                        (unsigned long long)w->count, r->id, r->label, in->classes - 1);
    if (r->nboxes < 0 || r->nboxes > EEB_SHARD_MAX_BOXES || (r->nboxes && !boxed(in)))
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: record %llu (%s): %d boxes", path,
                        (unsigned long long)w->count, r->id, r->nboxes);
    uint8_t *b = w->body;
    eeb_put16(b, (uint16_t)id_len);
    eeb_put16(b + 2, (uint16_t)r->label);
    eeb_put16(b + 4, (uint16_t)r->nboxes);
    eeb_put16(b + 6, 0);
    memcpy(b + REC_FIXED, r->id, id_len);
    size_t at = REC_FIXED + id_len;
    for (int i = 0; i < r->nboxes; i++, at += BOX_BYTES) {
        const struct eeb_box *x = &r->boxes[i];
        if (!box_fits(in, x))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s: record %llu (%s): box %d class %d at %g,%g-%g,%g is not in "
                            "0..%d classes and the %dx%d image",
                            path, (unsigned long long)w->count, r->id, i, x->cls, x->x0, x->y0,
                            x->x1, x->y1, in->classes - 1, in->w, in->h);
        eeb_put16(b + at, (uint16_t)x->cls);
        b[at + 2] = (uint8_t)(x->difficult != 0);
        b[at + 3] = 0;
        eeb_putf32(b + at + 4, x->x0), eeb_putf32(b + at + 8, x->y0);
        eeb_putf32(b + at + 12, x->x1), eeb_putf32(b + at + 16, x->y1);
    }
    size_t px = eeb_shard_pixels(in);
    memcpy(b + at, r->pixels, px);
    at += px;
    uint8_t prefix[REC_PREFIX];
    eeb_put32(prefix, (uint32_t)at);
    eeb_put32(prefix + 4, eeb_crc32(b, at));
    if (fwrite(prefix, 1, sizeof prefix, w->af.f) != sizeof prefix ||
        fwrite(b, 1, at, w->af.f) != at)
        return eeb_errf(err, errlen, EEB_EIO, "%s: write failed: %s", path, strerror(errno));
    w->count++;
    return EEB_OK;
}

int eeb_shard_finish(struct eeb_shard_writer *w, char *err, size_t errlen)
{
    eeb_put64(w->hdr + H_COUNT, w->count);
    eeb_put32(w->hdr + H_CRC, eeb_crc32_except(w->hdr, w->hdr_len, H_CRC));
    int rc = EEB_OK;
    if (fseek(w->af.f, 0, SEEK_SET) != 0 || fwrite(w->hdr, 1, w->hdr_len, w->af.f) != w->hdr_len)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: write failed: %s", w->af.path, strerror(errno));
    if (rc == EEB_OK)
        rc = eeb_atomic_commit(&w->af, err, errlen);
    eeb_shard_abort(w);
    return rc;
}

void eeb_shard_abort(struct eeb_shard_writer *w)
{
    if (!w)
        return;
    eeb_atomic_abort(&w->af);
    free(w->hdr), free(w->body), free(w);
}

/* ---- reading ---- */

struct eeb_shard {
    FILE *f;
    void *mem;          /* the whole file, when loaded into memory */
    int streamed;       /* loaded, but too large to hold: read from the file */
    struct stat hashed; /* streamed: the file as it was when hashed */
    char *path;
    struct eeb_shard_info info;
    size_t data_at; /* offset of the first record */
    size_t at;      /* offset of the next record */
    uint64_t next;  /* its index */
    size_t body_cap;
    uint8_t *body;
    struct eeb_record rec;
};

__attribute__((format(printf, 5, 6))) static int bad(const struct eeb_shard *s, size_t offset,
                                                     char *err, size_t errlen, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return eeb_errf(err, errlen, EEB_EFORMAT, "%s: offset %zu: %s", s->path, offset, msg);
}

static int read_header(struct eeb_shard *s, char *err, size_t errlen)
{
    uint8_t fixed[H_NAMES];
    size_t got = fread(fixed, 1, sizeof fixed, s->f);
    if (got < 4 || memcmp(fixed, "EEBD", 4) != 0)
        return bad(s, 0, err, errlen, "magic: not an eeb shard (.eebd files start with \"EEBD\")");
    if (got < sizeof fixed)
        return bad(s, got, err, errlen, "truncated: the header needs %d bytes", H_NAMES);
    if (eeb_get16(fixed + H_VERSION) != EEB_SHARD_VERSION)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "%s: offset %d: version %u (this eeb reads version %d)", s->path, H_VERSION,
                        eeb_get16(fixed + H_VERSION), EEB_SHARD_VERSION);
    uint32_t hdr_len = eeb_get32(fixed + H_BYTES);
    unsigned classes = eeb_get16(fixed + H_CLASSES);
    if (hdr_len < H_NAMES + 2 * classes || hdr_len > H_NAMES + 64 * (size_t)classes)
        return bad(s, H_BYTES, err, errlen, "header bytes %u do not fit %u class names", hdr_len,
                   classes);
    uint8_t *hdr = malloc(hdr_len);
    if (!hdr)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", s->path);
    memcpy(hdr, fixed, H_NAMES);
    int rc = EEB_OK;
    size_t rest = hdr_len - H_NAMES;
    if (fread(hdr + H_NAMES, 1, rest, s->f) != rest) {
        rc = bad(s, H_NAMES, err, errlen, "truncated: the header says %u bytes", hdr_len);
        goto out;
    }
    if (eeb_get32(hdr + H_CRC) != eeb_crc32_except(hdr, hdr_len, H_CRC) && !EEB_FUZZING) {
        rc = bad(s, H_CRC, err, errlen, "header checksum mismatch: the header is corrupt");
        goto out;
    }
    struct eeb_shard_info *in = &s->info;
    in->task = (enum eeb_task)hdr[H_TASK];
    in->c = hdr[H_CHANNELS];
    in->frames = eeb_get16(hdr + H_FRAMES);
    in->h = eeb_get16(hdr + H_HEIGHT), in->w = eeb_get16(hdr + H_WIDTH);
    in->classes = (int)classes;
    in->count = eeb_get64(hdr + H_COUNT);
    char msg[200];
    if (check_info(in, "header", msg, sizeof msg) != EEB_OK) {
        rc = bad(s, H_TASK, err, errlen, "%s", msg);
        goto out;
    }
    in->names = calloc((size_t)classes, sizeof *in->names);
    if (!in->names) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    size_t at = H_NAMES;
    for (unsigned i = 0; i < classes; i++) {
        unsigned n = at < hdr_len ? hdr[at] : 0;
        if (n < 1 || n > EEB_SHARD_MAX_NAME || at + 1 + n > hdr_len) {
            rc = bad(s, at, err, errlen, "class %u name: length %u does not fit", i, n);
            goto out;
        }
        memcpy(in->names[i], hdr + at + 1, n);
        char why[400];
        if (eeb_class_name_check(in->names[i], n, NULL, why, sizeof why) != EEB_OK) {
            rc = bad(s, at, err, errlen, "class %u: %s", i, why);
            goto out;
        }
        at += 1 + n;
    }
    if (at != hdr_len)
        rc = bad(s, at, err, errlen, "%zu unused header bytes", hdr_len - at);
    s->data_at = s->at = hdr_len;
out:
    free(hdr);
    return rc;
}

/* Opens the shard in f (taken over, NULL if opening failed with errno);
 * mem, if not NULL, is the buffer f reads from, freed at close. */
static int open_stream(struct eeb_shard **out, const char *path, FILE *f, void *mem, char *err,
                       size_t errlen)
{
    struct eeb_shard *s = calloc(1, sizeof *s);
    if (!s || !(s->path = strdup(path))) {
        if (f)
            fclose(f);
        free(s), free(mem);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    s->f = f;
    s->mem = mem;
    int rc = s->f ? read_header(s, err, errlen)
                  : eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    if (rc == EEB_OK) {
        s->body_cap = max_body(&s->info);
        s->body = malloc(s->body_cap);
        if (!s->body)
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    if (rc != EEB_OK) {
        eeb_shard_close(s);
        return rc;
    }
    *out = s;
    return EEB_OK;
}

int eeb_shard_open(struct eeb_shard **out, const char *path, char *err, size_t errlen)
{
    FILE *f;
    int rc = eeb_open_input(path, &f, err, errlen);
    return rc ? rc : open_stream(out, path, f, NULL, err, errlen);
}

/* The most of a shard eeb_shard_load holds in memory: max_bytes, and
 * half the machine's memory (an edge host's 2 or 4 GiB are not for one
 * file). */
static uint64_t hold_limit(size_t max_bytes)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : UINT64_MAX;
    return max_bytes < half ? max_bytes : half;
}

/* A streamed shard's file is the one that was hashed: same size, same
 * modification time (a file replaced by rename keeps the one open). */
static int unchanged(const struct eeb_shard *s, char *err, size_t errlen)
{
    struct stat now;
    if (!s->streamed)
        return EEB_OK;
    if (fstat(fileno(s->f), &now) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", s->path, strerror(errno));
    if (now.st_size != s->hashed.st_size || now.st_mtim.tv_sec != s->hashed.st_mtim.tv_sec ||
        now.st_mtim.tv_nsec != s->hashed.st_mtim.tv_nsec)
        return eeb_errf(err, errlen, EEB_EIO,
                        "%s: written to since it was hashed (a shard too large to hold in memory "
                        "is read from its file while in use: leave the file alone until then)",
                        s->path);
    return EEB_OK;
}

/* A shard too large to hold: hashed in one pass, then read from its file
 * record by record, as eeb_shard_open reads. */
static int load_streamed(struct eeb_shard **out, const char *path, char sha256[EEB_SHA256_HEX],
                         char *err, size_t errlen)
{
    FILE *f;
    struct stat st;
    int rc = eeb_open_input(path, &f, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (fstat(fileno(f), &st) != 0)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    if (rc == EEB_OK && sha256)
        rc = eeb_sha256_stream(f, path, sha256, err, errlen);
    if (rc == EEB_OK && fseek(f, 0, SEEK_SET) != 0)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    if (rc != EEB_OK) {
        fclose(f);
        return rc;
    }
    if ((rc = open_stream(out, path, f, NULL, err, errlen)) != EEB_OK)
        return rc;
    (*out)->streamed = 1;
    (*out)->hashed = st;
    if ((rc = unchanged(*out, err, errlen)) != EEB_OK) {
        eeb_shard_close(*out);
        *out = NULL;
    }
    return rc;
}

int eeb_shard_load(struct eeb_shard **out, const char *path, size_t max_bytes,
                   char sha256[EEB_SHA256_HEX], char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > hold_limit(max_bytes))
        return load_streamed(out, path, sha256, err, errlen);
    char *buf;
    size_t len;
    int rc = eeb_read_file(path, max_bytes, &buf, &len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (sha256)
        eeb_sha256(buf, len, sha256);
    /* an empty buffer cannot be fmemopen'ed; the header check reports it */
    FILE *f = fmemopen(buf, len ? len : 1, "rb");
    return open_stream(out, path, f, buf, err, errlen);
}

const struct eeb_shard_info *eeb_shard_info(const struct eeb_shard *s)
{
    return &s->info;
}

void eeb_shard_describe(const struct eeb_shard_info *in, char *buf, size_t n)
{
    int len =
        snprintf(buf, n, "%llu %s records, %d classes, %dx%dx%d", (unsigned long long)in->count,
                 eeb_task_name(in->task), in->classes, in->h, in->w, in->c);
    if (eeb_task_get(in->task)->clips && len > 0 && (size_t)len < n)
        snprintf(buf + len, n - (size_t)len, " x %d frames", in->frames);
}

const char *eeb_shard_path(const struct eeb_shard *s)
{
    return s->path;
}

int eeb_shard_holds_task(const struct eeb_shard *s, enum eeb_task task, const char *task_from,
                         char *err, size_t errlen)
{
    if (s->info.task != task)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s data, %s is %s", s->path,
                        eeb_task_name(s->info.task), task_from, eeb_task_name(task));
    if (s->info.count == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no records", s->path);
    return EEB_OK;
}

/* Decodes the body of record s->next into s->rec. */
static int decode(struct eeb_shard *s, size_t len, char *err, size_t errlen)
{
    const struct eeb_shard_info *in = &s->info;
    const uint8_t *b = s->body;
    struct eeb_record *r = &s->rec;
    unsigned long long idx = (unsigned long long)s->next;
    size_t id_len = eeb_get16(b), nboxes = eeb_get16(b + 4);
    size_t want = REC_FIXED + id_len + nboxes * BOX_BYTES + eeb_shard_pixels(in);
    if (id_len > EEB_SHARD_MAX_ID || nboxes > EEB_SHARD_MAX_BOXES || want != len)
        return bad(s, s->at, err, errlen,
                   "record %llu: %zu body bytes, but an id of %zu, %zu boxes and the pixels "
                   "make %zu",
                   idx, len, id_len, nboxes, want);
    r->index = s->next;
    memcpy(r->id, b + REC_FIXED, id_len);
    r->id[id_len] = '\0';
    r->label = eeb_get16(b + 2);
    if (r->label >= in->classes || (boxed(in) ? r->label != 0 : nboxes != 0))
        return bad(s, s->at, err, errlen, "record %llu (%s): label %d with %zu boxes", idx, r->id,
                   r->label, nboxes);
    r->nboxes = (int)nboxes;
    size_t at = REC_FIXED + id_len;
    for (size_t i = 0; i < nboxes; i++, at += BOX_BYTES) {
        struct eeb_box *x = &r->boxes[i];
        x->cls = eeb_get16(b + at);
        x->difficult = b[at + 2];
        x->x0 = eeb_getf32(b + at + 4), x->y0 = eeb_getf32(b + at + 8);
        x->x1 = eeb_getf32(b + at + 12), x->y1 = eeb_getf32(b + at + 16);
        if (x->difficult > 1 || !box_fits(in, x))
            return bad(s, s->at + REC_PREFIX + at, err, errlen,
                       "record %llu (%s) box %zu: class %d at %g,%g-%g,%g outside %d classes "
                       "and the %dx%d image",
                       idx, r->id, i, x->cls, x->x0, x->y0, x->x1, x->y1, in->classes, in->w,
                       in->h);
    }
    r->pixels = s->body + at;
    return EEB_OK;
}

int eeb_shard_next(struct eeb_shard *s, const struct eeb_record **rec, char *err, size_t errlen)
{
    unsigned long long idx = (unsigned long long)s->next;
    uint8_t prefix[REC_PREFIX];
    size_t got = fread(prefix, 1, sizeof prefix, s->f);
    if (s->next == s->info.count) {
        if (got != 0)
            return bad(s, s->at, err, errlen, "bytes after the last of %llu records", idx);
        int rc = unchanged(s, err, errlen);
        return rc != EEB_OK ? rc : 0;
    }
    if (got != sizeof prefix)
        return bad(s, s->at + got, err, errlen, "truncated: record %llu of %llu missing", idx,
                   (unsigned long long)s->info.count);
    size_t len = eeb_get32(prefix);
    if (len < REC_FIXED || len > s->body_cap)
        return bad(s, s->at, err, errlen, "record %llu: body of %zu bytes (%d..%zu)", idx, len,
                   REC_FIXED, s->body_cap);
    got = fread(s->body, 1, len, s->f);
    if (got != len)
        return bad(s, s->at + REC_PREFIX + got, err, errlen,
                   "truncated: record %llu ends after %zu of its %zu bytes", idx, got, len);
    if (eeb_crc32(s->body, len) != eeb_get32(prefix + 4) && !EEB_FUZZING)
        return bad(s, s->at, err, errlen, "record %llu: checksum mismatch: the record is corrupt",
                   idx);
    int rc = decode(s, len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    s->at += REC_PREFIX + len;
    s->next++;
    *rec = &s->rec;
    return 1;
}

int eeb_shard_rewind(struct eeb_shard *s, char *err, size_t errlen)
{
    int rc = unchanged(s, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (fseek(s->f, (long)s->data_at, SEEK_SET) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", s->path, strerror(errno));
    s->at = s->data_at;
    s->next = 0;
    return EEB_OK;
}

void eeb_shard_close(struct eeb_shard *s)
{
    if (!s)
        return;
    if (s->f)
        fclose(s->f);
    free(s->info.names);
    free(s->body);
    free(s->path);
    free(s->mem);
    free(s);
}
