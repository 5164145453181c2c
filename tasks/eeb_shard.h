/*
 * eeb_shard.h - .eebd dataset shards: what every task's data becomes after
 * import or generation, and what the harness streams into the accelerator.
 *
 * A shard is a header (task, image shape, frames per item, class names,
 * record count) and records, each an id, a label or boxes, and uint8 HWC
 * pixels (T frames one after another for video).  Little-endian; every
 * record carries its own CRC-32, so corruption is reported with the
 * record's index and byte offset.  The reader holds one record at a time,
 * so a shard of any size streams; a record's body, pixels included, is at
 * most 4 GiB.
 */
#ifndef EEB_SHARD_H
#define EEB_SHARD_H

#include "common/eeb_common.h"

#include <stddef.h>
#include <stdint.h>

#define EEB_SHARD_VERSION     1
#define EEB_SHARD_MAX_CLASSES 1000
#define EEB_SHARD_MAX_NAME    63  /* bytes of a class name */
#define EEB_SHARD_MAX_ID      255 /* bytes of a record id */
#define EEB_SHARD_MAX_BOXES   255
#define EEB_SHARD_MAX_SIDE    4096
#define EEB_SHARD_MAX_FRAMES  256

struct eeb_shard_info {
    enum eeb_task task;
    int h, w, c; /* pixels per frame; c is 3 (RGB) or 1 */
    int frames;  /* 1 for images */
    int classes;
    char (*names)[EEB_SHARD_MAX_NAME + 1];
    uint64_t count; /* records */
};

/* A box in pixels of the stored image: x0 <= x1 within [0, w], y likewise,
 * corners continuous (a box over the whole image is 0, 0, w, h). */
struct eeb_box {
    int cls, difficult;
    float x0, y0, x1, y1;
};

struct eeb_record {
    uint64_t index; /* position in the shard */
    char id[EEB_SHARD_MAX_ID + 1];
    int label; /* cls, video: the class; det: 0 */
    int nboxes;
    struct eeb_box boxes[EEB_SHARD_MAX_BOXES];
    uint8_t *pixels; /* frames * h * w * c bytes */
};

/* Bytes of pixels per record. */
size_t eeb_shard_pixels(const struct eeb_shard_info *info);

struct eeb_shard_writer;

/* Starts writing path (atomically: nothing appears until finish). */
int eeb_shard_create(struct eeb_shard_writer **out, const char *path,
                     const struct eeb_shard_info *info, char *err, size_t errlen);
int eeb_shard_write(struct eeb_shard_writer *w, const struct eeb_record *r, char *err,
                    size_t errlen);
/* Records the count, syncs and renames into place; frees w either way. */
int eeb_shard_finish(struct eeb_shard_writer *w, char *err, size_t errlen);
/* Gives up: removes the temporary file and frees w. */
void eeb_shard_abort(struct eeb_shard_writer *w);

struct eeb_shard;

int eeb_shard_open(struct eeb_shard **out, const char *path, char *err, size_t errlen);
/*
 * The same, with the whole file read into memory first, so that reading
 * records does no I/O: how a run loads its data outside the metered
 * window.  sha256, if not NULL, receives the digest of the bytes read.
 * A file larger than max_bytes or half the machine's memory is not held:
 * it is hashed in one pass and then read from the file as eeb_shard_open
 * reads it (the page cache holds what fits), and a change to the file
 * after hashing is an error at the end of each pass and at rewind.
 */
int eeb_shard_load(struct eeb_shard **out, const char *path, size_t max_bytes,
                   char sha256[EEB_SHA256_HEX], char *err, size_t errlen);
const struct eeb_shard_info *eeb_shard_info(const struct eeb_shard *s);
/* What the shard holds, in words: "2000 cls records, 20 classes, 32x32x3"
 * (and " x 8 frames" for clips). */
void eeb_shard_describe(const struct eeb_shard_info *in, char *buf, size_t n);
/* The path it was opened from. */
const char *eeb_shard_path(const struct eeb_shard *s);
/* EEB_OK if s holds records of task, at least one; else EEB_EINVAL naming
 * the file, what it holds and whose the task is (task_from: "--task", "the
 * run's task"): "cls.eebd holds cls data, --task is det". */
int eeb_shard_holds_task(const struct eeb_shard *s, enum eeb_task task, const char *task_from,
                         char *err, size_t errlen);
/* The next record (valid until the next call): 1, or 0 after the last,
 * or a negative status naming the record and offset. */
int eeb_shard_next(struct eeb_shard *s, const struct eeb_record **rec, char *err, size_t errlen);
/* Back to the first record. */
int eeb_shard_rewind(struct eeb_shard *s, char *err, size_t errlen);
void eeb_shard_close(struct eeb_shard *s);

#endif
