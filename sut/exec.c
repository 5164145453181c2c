/*
 * exec.c - a team's system under test as a program (`eeb run --backend
 * exec:PROGRAM ARGS...`): started with pipes on its stdin and stdout, and
 * every call of sut/eeb_sut.h sent to it as a frame of the exec protocol
 * (sut/eeb_sut_exec.h; docs/sut.md, "Out of process") and answered by one
 * frame within a deadline.
 *
 *   the program   found as execvp finds it and started (posix_spawn: argv
 *                 split on spaces, no shell, its own process group so a
 *                 Ctrl-C is eeb's to handle, eeb's other descriptors
 *                 closed), waited for, killed
 *   its stderr    a pipe drained by a thread: passed on to eeb's stderr,
 *                 its last 2 KiB kept for the message of a program that
 *                 ends before answering
 *   the pipes     a request written and a reply read against the call's
 *                 deadline (poll with the time left); SIGPIPE blocked
 *                 around the writes, so a program that has gone is an
 *                 EPIPE, not the end of eeb
 *   a call        the request out, the reply's header and sizes checked
 *   the table     each call of the interface encoded, its reply decoded
 *                 and checked against what was asked; the files a call
 *                 names (the model, the xclbin) travel as their bytes, so
 *                 the program needs no view of eeb's paths
 *
 * The program and its stderr are in exec_program.c, the pipes and a
 * call in exec_wire.c (exec_int.h declares what they share); this file is
 * the table and its start.
 *
 * What can go wrong, and what the call returns (every message names the
 * SUT by its command, and the call):
 *
 *   the program refuses (an error reply)   EEB_EDEVICE, its reason; it stays
 *   no answer within the deadline           EEB_ETIMEOUT; killed (SIGKILL)
 *   it ends (EOF, EPIPE)                    EEB_EDEVICE, how: "exited 3",
 *                                           "killed by signal 11 (...)", and
 *                                           its stderr's last lines
 *   a reply that is not the protocol's      EEB_EFORMAT, naming the field; killed
 *
 * Once the program is gone every later call fails saying why it went.
 */
#include "sut/eeb_sut_host.h"
#include "sut/eeb_sut_exec.h"
#include "sut/exec_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the table ---- */

/* A string: its length (uint32) into len4, the bytes stay where they are. */
static size_t string_field(uint8_t len4[4], const char *s)
{
    size_t n = s ? strlen(s) : 0;
    eeb_sut_exec_put32(len4, (uint32_t)n);
    return n;
}

/*
 * A file the program is handed as bytes, not as eeb's path (the program
 * may run on another machine, over ssh, where eeb's paths mean nothing):
 * its contents, read now, into a new buffer.  room: what the request
 * leaves for them under the protocol's cap.
 */
static int file_bytes(struct exec *x, unsigned c, const char *what, const char *path, size_t room,
                      uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL, *len = 0;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        int rc = exec_fail(x, c, EEB_EIO, err, errlen, "%s %s: %s", what, path, strerror(errno));
        if (f)
            fclose(f);
        return rc;
    }
    size_t size = (size_t)st.st_size;
    int rc = EEB_OK;
    if (!S_ISREG(st.st_mode))
        rc = exec_fail(x, c, EEB_EIO, err, errlen, "%s %s: not a file", what, path);
    else if ((uint64_t)st.st_size > room)
        rc = exec_fail(x, c, EEB_EINVAL, err, errlen,
                       "%s %s: %lld bytes, over what a request of the exec protocol can carry (%zu "
                       "bytes)",
                       what, path, (long long)st.st_size, room);
    else if (!(*buf = malloc(size ? size : 1)))
        rc = exec_fail(x, c, EEB_ENOMEM, err, errlen, "%s %s: out of memory", what, path);
    else if (fread(*buf, 1, size, f) != size)
        rc = exec_fail(x, c, EEB_EIO, err, errlen, "%s %s: read error", what, path);
    fclose(f);
    if (rc) {
        free(*buf);
        *buf = NULL;
    } else
        *len = size;
    return rc;
}

static int path_ok(struct exec *x, unsigned c, const char *path, char *err, size_t errlen)
{
    if (!path || !*path || strlen(path) > EEB_SUT_EXEC_MAX_TEXT)
        return exec_fail(x, c, EEB_EINVAL, err, errlen, "a path of 1..%u bytes",
                         EEB_SUT_EXEC_MAX_TEXT);
    return EEB_OK;
}

/* The path (for the program's messages) and the model's bytes. */
static int exec_load_model(void *sut, const char *path, char *err, size_t errlen)
{
    struct exec *x = sut;
    unsigned c = EEB_SUT_EXEC_LOAD_MODEL;
    int rc = path_ok(x, c, path, err, errlen);
    if (rc)
        return rc;
    uint8_t len4[4], size8[8], *bytes;
    size_t n = string_field(len4, path), nbytes;
    if ((rc = file_bytes(x, c, "the model", path, EEB_SUT_EXEC_MAX_PAYLOAD - 12 - n, &bytes,
                         &nbytes, err, errlen)))
        return rc;
    eeb_sut_exec_put64(size8, nbytes);
    struct iovec iov[5] = {{0}, {len4, 4}, {(void *)path, n}, {size8, 8}, {bytes, nbytes}};
    const uint8_t *res;
    size_t len;
    rc = exec_call(x, c, iov, 5, 4, &res, &len, err, errlen);
    free(bytes);
    if (rc == EEB_OK && len != 0)
        return exec_wrong_size(x, c, len, 0, "a status alone", err, errlen);
    return rc;
}

/* The program sends the model's bytes back; eeb writes them to path
 * (whole or not at all: a failed save leaves an older model as it was). */
static int exec_save_model(void *sut, const char *path, char *err, size_t errlen)
{
    struct exec *x = sut;
    unsigned c = EEB_SUT_EXEC_SAVE_MODEL;
    int rc = path_ok(x, c, path, err, errlen);
    if (rc)
        return rc;
    /* the file opened before the program is asked: a path eeb cannot
     * write fails without the program's work */
    char why[1024];
    struct eeb_atomic_file out;
    if ((rc = eeb_atomic_open(&out, path, why, sizeof why)))
        return exec_fail(x, c, rc, err, errlen, "%s", why);
    uint8_t len4[4];
    size_t n = string_field(len4, path);
    struct iovec iov[3] = {{0}, {len4, 4}, {(void *)path, n}};
    const uint8_t *res;
    size_t len;
    rc = exec_call(x, c, iov, 3, EEB_SUT_EXEC_MAX_PAYLOAD, &res, &len, err, errlen);
    uint64_t size = !rc && len >= 8 ? eeb_sut_exec_get64(res) : 0;
    if (!rc && (len < 8 || size != len - 8))
        rc = exec_wrong_size(x, c, len, len < 8 ? 8 : 8 + (size_t)size,
                             "the model's length u64, then its bytes", err, errlen);
    if (rc) {
        eeb_atomic_abort(&out);
        return rc;
    }
    if (fwrite(res + 8, 1, (size_t)size, out.f) != (size_t)size ||
        eeb_atomic_commit(&out, why, sizeof why)) {
        if (out.f)
            snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
        eeb_atomic_abort(&out);
        return exec_fail(x, c, EEB_EIO, err, errlen, "%s", why);
    }
    return EEB_OK;
}

static int exec_end_training(void *sut, char *err, size_t errlen)
{
    struct exec *x = sut;
    struct iovec iov[1];
    const uint8_t *res;
    size_t len;
    int rc = exec_call(x, EEB_SUT_EXEC_END_TRAINING, iov, 1, 4, &res, &len, err, errlen);
    if (rc == EEB_OK && len != 0)
        return exec_wrong_size(x, EEB_SUT_EXEC_END_TRAINING, len, 0, "a status alone", err, errlen);
    return rc;
}

/* The batch's n and pixels, checked for what the protocol sizes by. */
static int batch_head(struct exec *x, unsigned c, const struct eeb_sut_batch *b, uint8_t n4[4],
                      char *err, size_t errlen)
{
    if (!b || b->n < 1 || b->n > x->setup.batch_max || !b->pixels)
        return exec_fail(x, c, EEB_EINVAL, err, errlen,
                         "a batch of %d items%s (1..%d, with pixels)", b ? b->n : 0,
                         b && !b->pixels ? " without pixels" : "", x->setup.batch_max);
    eeb_sut_exec_put32(n4, (uint32_t)b->n);
    return EEB_OK;
}

/* train's labels (cls, video) or box counts and boxes (det), encoded in
 * x->fields; their length. */
static int train_fields(struct exec *x, const struct eeb_sut_batch *b, size_t *len, char *err,
                        size_t errlen)
{
    size_t n = (size_t)b->n, boxes = 0;
    int det = x->setup.task == EEB_SUT_DET;
    if (det ? !b->box_counts : !b->labels)
        return exec_fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen,
                         "a training batch without %s", det ? "box counts" : "labels");
    for (size_t i = 0; det && i < n; i++) {
        if (b->box_counts[i] < 0 || b->box_counts[i] > 1000000)
            return exec_fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen, "item %zu: %d boxes",
                             i, (int)b->box_counts[i]);
        boxes += (size_t)b->box_counts[i];
    }
    if (boxes && !b->boxes)
        return exec_fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen,
                         "%zu boxes counted, none given", boxes);
    *len = 4 * n + boxes * EEB_SUT_EXEC_BOX_BYTES;
    if (exec_grow(&x->fields, &x->fields_cap, *len))
        return exec_fail(x, EEB_SUT_EXEC_TRAIN, EEB_ENOMEM, err, errlen, "out of memory");
    uint8_t *p = x->fields;
    for (size_t i = 0; i < n; i++, p += 4)
        eeb_sut_exec_put32(p, (uint32_t)(det ? b->box_counts[i] : b->labels[i]));
    for (size_t j = 0; j < boxes; j++, p += EEB_SUT_EXEC_BOX_BYTES) {
        const struct eeb_sut_box *box = &b->boxes[j];
        eeb_sut_exec_put32(p, (uint32_t)box->cls);
        eeb_sut_exec_put32(p + 4, (uint32_t)box->difficult);
        eeb_sut_exec_put_f32(p + 8, box->x0), eeb_sut_exec_put_f32(p + 12, box->y0);
        eeb_sut_exec_put_f32(p + 16, box->x1), eeb_sut_exec_put_f32(p + 20, box->y1);
    }
    return EEB_OK;
}

static int exec_train(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step,
                      char *err, size_t errlen)
{
    struct exec *x = sut;
    uint8_t n4[4];
    size_t flen = 0;
    int rc = batch_head(x, EEB_SUT_EXEC_TRAIN, batch, n4, err, errlen);
    if (rc || (rc = train_fields(x, batch, &flen, err, errlen)))
        return rc;
    if (!step)
        return exec_fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen, "no step to report in");
    struct iovec iov[4] = {
        {0}, {n4, 4}, {(void *)batch->pixels, (size_t)batch->n * x->item_bytes}, {x->fields, flen}};
    const uint8_t *r;
    size_t len;
    if ((rc = exec_call(x, EEB_SUT_EXEC_TRAIN, iov, 4, 4 + EEB_SUT_EXEC_STEP_BYTES, &r, &len, err,
                        errlen)))
        return rc;
    if (len != EEB_SUT_EXEC_STEP_BYTES)
        return exec_wrong_size(x, EEB_SUT_EXEC_TRAIN, len, EEB_SUT_EXEC_STEP_BYTES,
                               "loss f64, correct i64, counted i64, done u8", err, errlen);
    int64_t correct = (int64_t)eeb_sut_exec_get64(r + 8),
            counted = (int64_t)eeb_sut_exec_get64(r + 16);
    char what[160];
    if (correct < 0 || counted < 0 || correct > counted)
        snprintf(what, sizeof what, "correct %lld of %lld counted (0 <= correct <= counted)",
                 (long long)correct, (long long)counted);
    else if (r[24] > 1)
        snprintf(what, sizeof what, "done %u (0 or 1)", r[24]);
    else {
        *step = (struct eeb_sut_step){eeb_sut_exec_get_f64(r), correct, counted, r[24]};
        return EEB_OK;
    }
    return exec_protocol_error(x, EEB_SUT_EXEC_TRAIN, err, errlen, what);
}

/* cls, video: n x top_k classes then as many scores. */
static int ranked(struct exec *x, int n, const uint8_t *r, size_t len,
                  struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    size_t k = (size_t)x->setup.top_k, m = (size_t)n * k;
    if (len != 4 + 8 * m)
        return exec_wrong_size(x, EEB_SUT_EXEC_PREDICT, len, 4 + 8 * m,
                               "n, then n x top_k classes i32 and scores f32", err, errlen);
    for (size_t j = 0; j < m; j++) {
        int32_t cls = (int32_t)eeb_sut_exec_get32(r + 4 + 4 * j);
        size_t rank = j % k;
        /* -1: no class, for the ranks past the classes (top_k > classes) */
        if (cls >= x->setup.classes || cls < (rank >= (size_t)x->setup.classes ? -1 : 0)) {
            char what[160];
            snprintf(what, sizeof what, "item %zu rank %zu: class %d (0..%d)", j / k, rank,
                     (int)cls, x->setup.classes - 1);
            return exec_protocol_error(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
        }
        out->classes[j] = cls;
        out->scores[j] = eeb_sut_exec_get_f32(r + 4 + 4 * m + 4 * j);
    }
    return EEB_OK;
}

/* det: n counts, then each item's detections, packed. */
static int detections(struct exec *x, int n, const uint8_t *r, size_t len,
                      struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    size_t want = 4 + 4 * (size_t)n, dets = 0;
    char what[160];
    if (len < want)
        return exec_wrong_size(x, EEB_SUT_EXEC_PREDICT, len, want, "n, then n counts i32", err,
                               errlen);
    for (int i = 0; i < n; i++) {
        int32_t count = (int32_t)eeb_sut_exec_get32(r + 4 + 4 * (size_t)i);
        if (count < 0 || count > x->setup.max_boxes) {
            snprintf(what, sizeof what, "item %d: %d detections (0..max_boxes %d)", i, (int)count,
                     x->setup.max_boxes);
            return exec_protocol_error(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
        }
        out->counts[i] = count;
        dets += (size_t)count;
    }
    want += dets * EEB_SUT_EXEC_DETECTION_BYTES;
    if (len != want)
        return exec_wrong_size(x, EEB_SUT_EXEC_PREDICT, len, want,
                               "n, n counts, then the counts' detections", err, errlen);
    const uint8_t *p = r + 4 + 4 * (size_t)n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < out->counts[i]; j++, p += EEB_SUT_EXEC_DETECTION_BYTES) {
            int32_t cls = (int32_t)eeb_sut_exec_get32(p);
            if (cls < 0 || cls >= x->setup.classes) {
                snprintf(what, sizeof what, "item %d detection %d: class %d (0..%d)", i, j,
                         (int)cls, x->setup.classes - 1);
                return exec_protocol_error(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
            }
            out->detections[(size_t)i * (size_t)x->setup.max_boxes + (size_t)j] =
                (struct eeb_sut_detection){cls,
                                           eeb_sut_exec_get_f32(p + 4),
                                           eeb_sut_exec_get_f32(p + 8),
                                           eeb_sut_exec_get_f32(p + 12),
                                           eeb_sut_exec_get_f32(p + 16),
                                           eeb_sut_exec_get_f32(p + 20)};
        }
    return EEB_OK;
}

/* The most a predict reply of n items can be. */
static size_t predict_max(const struct exec *x, int n)
{
    if (x->setup.task == EEB_SUT_DET)
        return 8 + (size_t)n * (4 + (size_t)x->setup.max_boxes * EEB_SUT_EXEC_DETECTION_BYTES);
    return 8 + (size_t)n * (size_t)x->setup.top_k * 8;
}

static int exec_predict(void *sut, const struct eeb_sut_batch *batch,
                        struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    struct exec *x = sut;
    uint8_t n4[4];
    int rc = batch_head(x, EEB_SUT_EXEC_PREDICT, batch, n4, err, errlen);
    if (rc)
        return rc;
    int det = x->setup.task == EEB_SUT_DET;
    if (!out || (det ? !out->counts || !out->detections : !out->classes || !out->scores))
        return exec_fail(x, EEB_SUT_EXEC_PREDICT, EEB_EINVAL, err, errlen,
                         "nowhere to write the predictions");
    /* the pixels alone: the SUT never sees a test label */
    struct iovec iov[3] = {{0}, {n4, 4}, {(void *)batch->pixels, (size_t)batch->n * x->item_bytes}};
    const uint8_t *r;
    size_t len;
    if ((rc = exec_call(x, EEB_SUT_EXEC_PREDICT, iov, 3, predict_max(x, batch->n), &r, &len, err,
                        errlen)))
        return rc;
    if (len < 4)
        return exec_wrong_size(x, EEB_SUT_EXEC_PREDICT, len, 4, "n first", err, errlen);
    int32_t n = (int32_t)eeb_sut_exec_get32(r);
    if (n != batch->n) {
        char what[128];
        snprintf(what, sizeof what, "%d items answered, %d asked", (int)n, batch->n);
        return exec_protocol_error(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
    }
    return det ? detections(x, n, r, len, out, err, errlen)
               : ranked(x, n, r, len, out, err, errlen);
}

/* The ABI's counters cannot fail: a program that does not answer them
 * reports zeros, and is gone for the next call, which says why. */
static void exec_counters(void *sut, struct eeb_sut_counters *c)
{
    struct exec *x = sut;
    struct iovec iov[1];
    const uint8_t *r;
    size_t len;
    char err[16];
    *c = (struct eeb_sut_counters){0};
    if (exec_call(x, EEB_SUT_EXEC_COUNTERS, iov, 1, 4 + 52 + EEB_SUT_EXEC_MAX_TEXT, &r, &len, err,
                  sizeof err))
        return;
    uint32_t n = len >= 52 ? eeb_sut_exec_get32(r + 48) : 0;
    if (len < 52 || len != 52 + (size_t)n) {
        char what[160];
        snprintf(what, sizeof what, "a reply of %zu bytes after its status (6 u64, then a string)",
                 len);
        exec_protocol_error(x, EEB_SUT_EXEC_COUNTERS, err, sizeof err, what);
        return;
    }
    c->steps = eeb_sut_exec_get64(r), c->items = eeb_sut_exec_get64(r + 8);
    for (int i = 0; i < 4; i++)
        c->saturations[i] = eeb_sut_exec_get64(r + 16 + 8 * i);
    size_t k = n < sizeof c->detail - 1 ? n : sizeof c->detail - 1;
    for (size_t i = 0; i < k; i++)
        c->detail[i] = r[52 + i] < 0x20 || r[52 + i] == 0x7f ? ' ' : (char)r[52 + i];
    c->detail[k] = '\0';
}

static void exec_close(void *sut)
{
    struct exec *x = sut;
    if (!x)
        return;
    if (!x->gone && x->pid > 0) {
        struct iovec iov[1];
        const uint8_t *r;
        size_t len;
        char err[16];
        double d = (double)x->deadline_ns / 1e9;
        x->deadline_ns = (int64_t)((d < CLOSE_REPLY_S ? d : CLOSE_REPLY_S) * 1e9);
        exec_call(x, EEB_SUT_EXEC_CLOSE, iov, 1, 4, &r, &len, err, sizeof err);
    }
    exec_close_pipes(x); /* its stdin at EOF: a program still reading ends */
    int status;
    if (x->pid > 0 && !exec_wait_end(x, END_WAIT_S, &status))
        exec_kill_reap(x);
    exec_tail_settle(&x->err, 0.1); /* the rest of its stderr passed on */
    exec_tail_end(&x->err);
    pthread_mutex_destroy(&x->err.lock);
    free(x->command), free(x->gone), free(x->reply), free(x->fields);
    free(x);
}

/* open is eeb_sut_exec_start's: the table's slot is there for the check
 * and refuses a second open. */
static int exec_open(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen)
{
    (void)setup;
    *sut = NULL;
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "exec: a program is opened by eeb_sut_exec_start, with its setup");
}

/* ---- start ---- */

static int check_setup(struct exec *x, const struct eeb_sut_setup *s, char *err, size_t errlen)
{
    if (!s)
        return exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen, "no setup");
    if (s->frames < 1 || s->height < 1 || s->width < 1 || s->channels < 1 || s->batch_max < 1 ||
        s->classes < 1 || s->top_k < 0 || s->max_boxes < 0 || s->top_k > 65536 ||
        s->max_boxes > 65536)
        return exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                         "setup: %d frames of %d x %d x %d, batch_max %d, %d classes, top_k %d, "
                         "max_boxes %d (sizes at least 1; top_k, max_boxes 0..65536)",
                         s->frames, s->height, s->width, s->channels, s->batch_max, s->classes,
                         s->top_k, s->max_boxes);
    double item = (double)s->frames * s->height * s->width * s->channels;
    double request = 8 + (item + 4) * s->batch_max,
           reply = 8 + (4 + s->max_boxes * 24.0 + s->top_k * 8.0) * s->batch_max;
    if (request > EEB_SUT_EXEC_MAX_PAYLOAD || reply > EEB_SUT_EXEC_MAX_PAYLOAD)
        return exec_fail(
            x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
            "setup: a batch of %d items of %.0f bytes is over the protocol's cap of %u",
            s->batch_max, item, EEB_SUT_EXEC_MAX_PAYLOAD);
    if ((s->config && strlen(s->config) > EEB_SUT_EXEC_MAX_TEXT) ||
        (s->workdir && strlen(s->workdir) > EEB_SUT_EXEC_MAX_TEXT) ||
        (s->xclbin && strlen(s->xclbin) > EEB_SUT_EXEC_MAX_TEXT))
        return exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                         "setup: config, workdir or xclbin over %u bytes", EEB_SUT_EXEC_MAX_TEXT);
    x->setup = *s;
    x->setup.config = x->setup.workdir = x->setup.xclbin = NULL; /* valid for the call only */
    x->item_bytes = (size_t)item;
    return EEB_OK;
}

/* open's request and reply: the SUT's name and its optional calls. */
static int open_call(struct exec *x, const struct eeb_sut_setup *s, char *err, size_t errlen)
{
    uint8_t head[EEB_SUT_EXEC_SETUP_BYTES], clen[4], wlen[4], xlen[4];
    const int32_t fields[10] = {s->abi_version, s->task,     s->classes,   s->frames, s->height,
                                s->width,       s->channels, s->batch_max, s->top_k,  s->max_boxes};
    for (int i = 0; i < 10; i++)
        eeb_sut_exec_put32(head + 4 * i, (uint32_t)fields[i]);
    eeb_sut_exec_put64(head + 40, s->seed);
    size_t cn = string_field(clen, s->config), wn = string_field(wlen, s->workdir),
           xn = string_field(xlen, s->xclbin), nbytes = 0;
    uint8_t size8[8], *bytes = NULL;
    int rc = EEB_OK;
    if (xn && (rc = file_bytes(x, EEB_SUT_EXEC_OPEN, "the xclbin", s->xclbin,
                               EEB_SUT_EXEC_MAX_PAYLOAD - (sizeof head + 20 + cn + wn + xn), &bytes,
                               &nbytes, err, errlen)))
        return rc;
    eeb_sut_exec_put64(size8, nbytes);
    struct iovec iov[10] = {{0},        {head, sizeof head},
                            {clen, 4},  {(void *)(s->config ? s->config : ""), cn},
                            {wlen, 4},  {(void *)(s->workdir ? s->workdir : ""), wn},
                            {xlen, 4},  {(void *)(s->xclbin ? s->xclbin : ""), xn},
                            {size8, 8}, {bytes, nbytes}};
    const uint8_t *r;
    size_t len;
    rc = exec_call(x, EEB_SUT_EXEC_OPEN, iov, 10, 16 + MAX_NAME + MAX_VERSION, &r, &len, err,
                   errlen);
    free(bytes);
    if (rc)
        return rc;
    /* the name, the optional calls, then (optional) the version */
    uint32_t n = len >= 4 ? eeb_sut_exec_get32(r) : 0;
    uint32_t vn = len >= 12 + (size_t)n && n <= MAX_NAME ? eeb_sut_exec_get32(r + 8 + n) : 0;
    if (len < 8 || n < 1 || n > MAX_NAME ||
        (len != 8 + (size_t)n && (len != 12 + (size_t)n + vn || vn > MAX_VERSION))) {
        char what[224];
        snprintf(what, sizeof what,
                 "a reply of %zu bytes after its status, a name of %lu (a name of 1..%d "
                 "bytes, then the optional calls u32, then optionally a version of 0..%d bytes)",
                 len, (unsigned long)n, MAX_NAME, MAX_VERSION);
        return exec_protocol_error(x, EEB_SUT_EXEC_OPEN, err, errlen, what);
    }
    for (uint32_t i = 0; i < n; i++)
        x->name[i] = r[4 + i] < 0x20 || r[4 + i] == 0x7f ? '?' : (char)r[4 + i];
    x->name[n] = '\0';
    if (len == 8 + (size_t)n)
        vn = 0; /* a reply without the version: the program says none */
    for (uint32_t i = 0; i < vn; i++)
        x->version[i] = r[12 + n + i] < 0x20 || r[12 + n + i] == 0x7f ? '?' : (char)r[12 + n + i];
    x->version[vn] = '\0';
    x->ops.version = vn ? x->version : NULL;
    uint32_t has = eeb_sut_exec_get32(r + 4 + n);
    x->ops.end_training = has & EEB_SUT_EXEC_HAS_END_TRAINING ? exec_end_training : NULL;
    x->ops.counters = has & EEB_SUT_EXEC_HAS_COUNTERS ? exec_counters : NULL;
    x->ops.save_model = has & EEB_SUT_EXEC_HAS_SAVE_MODEL ? exec_save_model : NULL;
    return EEB_OK;
}

/* The program of argv started as the SUT named name, open sent with
 * setup and answered. */
static int start(const char *name, const char *who, char *const argv[], const char *command,
                 const struct eeb_sut_setup *setup, double deadline_s,
                 const struct eeb_sut_ops **ops, void **state, char *err, size_t errlen)
{
    *ops = NULL;
    *state = NULL;
    if (!(deadline_s > 0 && deadline_s <= 1e6))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "SUT '%s': a deadline of %g s per call (more than 0)", name, deadline_s);
    struct exec *x = calloc(1, sizeof *x);
    if (!x || !(x->command = strdup(name))) {
        free(x);
        return eeb_errf(err, errlen, EEB_ENOMEM, "SUT '%s': out of memory", name);
    }
    x->who = who;
    x->to = x->from = -1;
    x->err.fd = x->err.stop[0] = x->err.stop[1] = -1;
    pthread_mutex_init(&x->err.lock, NULL);
    x->deadline_ns = (int64_t)(deadline_s * 1e9);
    x->ops = (struct eeb_sut_ops){.abi_version = EEB_SUT_ABI_VERSION,
                                  .name = x->name,
                                  .open = exec_open,
                                  .load_model = exec_load_model,
                                  .train = exec_train,
                                  .predict = exec_predict,
                                  .close = exec_close};
    char *words = NULL, *split[MAX_ARGS + 1];
    int rc = check_setup(x, setup, err, errlen);
    if (!rc && command)
        rc = exec_split(command, &words, split, x, err, errlen);
    if (!rc)
        rc = exec_spawn(x, command ? split : argv, err, errlen);
    free(words);
    if (!rc)
        rc = open_call(x, setup, err, errlen);
    if (rc) {
        free(x->gone);
        x->gone = strdup("open failed"); /* no close request: the program is ended */
        exec_close(x);
        return rc;
    }
    *ops = &x->ops;
    *state = x;
    return EEB_OK;
}

int eeb_sut_exec_start(const char *command, const struct eeb_sut_setup *setup, double deadline_s,
                       const struct eeb_sut_ops **ops, void **state, char *err, size_t errlen)
{
    if (!command)
        command = "";
    return start(command, "the program", NULL, command, setup, deadline_s, ops, state, err, errlen);
}

int eeb_sut_host_program(char *path, size_t n)
{
    const char *host = getenv("EEB_SUT_HOST");
    if (host && *host)
        return snprintf(path, n, "%s", host) < (int)n ? EEB_OK : EEB_EINVAL;
    ssize_t len = readlink("/proc/self/exe", path, n - 1);
    if (len <= 0 || (size_t)len >= n - 1)
        return EEB_EIO;
    path[len] = '\0';
    return EEB_OK;
}

int eeb_sut_hosted_start(const char *library, const struct eeb_sut_setup *setup, double deadline_s,
                         const struct eeb_sut_ops **ops, void **state, char *err, size_t errlen)
{
    char host[4096];
    *ops = NULL;
    *state = NULL;
    if (eeb_sut_host_program(host, sizeof host))
        return eeb_errf(err, errlen, EEB_EIO,
                        "SUT '%s': open: cannot find eeb's own program to host the library in "
                        "(/proc/self/exe; set EEB_SUT_HOST to eeb's path)",
                        library);
    char *const argv[] = {host, "sut", "serve", "--", (char *)library, NULL};
    return start(library, "its process", argv, NULL, setup, deadline_s, ops, state, err, errlen);
}

int eeb_sut_exec_kill(void *state)
{
    return state ? exec_kill(state) : 0;
}
