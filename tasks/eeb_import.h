/*
 * eeb_import.h - datasets in their real layouts into .eebd shards:
 * Food-101 (JPEGs through libjpeg-turbo), Pascal VOC (JPEGs and expat
 * annotations) and UCF-101 (videos through FFmpeg).  Images are resized to
 * size x size with area averaging (VOC boxes with them); clips keep
 * `frames` frames spread evenly over the video.
 */
#ifndef EEB_IMPORT_H
#define EEB_IMPORT_H

#include "common/eeb_common.h"

#include <stddef.h>
#include <stdint.h>

enum eeb_import_format { EEB_IMPORT_FOOD101, EEB_IMPORT_VOC, EEB_IMPORT_UCF101 };

/* "food101", "voc", "ucf101"; EEB_EINVAL listing them otherwise. */
int eeb_import_format_parse(const char *name, enum eeb_import_format *out, char *err,
                            size_t errlen);

struct eeb_import_spec {
    enum eeb_import_format format;
    const char *src;       /* the dataset's top directory */
    const char *out;       /* the shard to write */
    int test;              /* 0 the train split, 1 the test split */
    int size;              /* output side in pixels, 16..1024 */
    int frames;            /* ucf101: frames per clip, 2..64 */
    const char *classes;   /* NULL (all), "a,b,c" or "@FILE" (one a line): these, in this order */
    int skip_bad;          /* skip unreadable items (counted) instead of failing */
    const char *image_set; /* voc: this ImageSets/Main-style list instead of the split's */
    int threads;           /* items decoded at once; 0: one per online CPU */
};

struct eeb_import_result {
    uint64_t records, skipped;
    char first_skipped[512];   /* why the first skipped item was skipped */
    int annotations;           /* voc without classes: the annotations the classes came from */
    uint64_t dropped;          /* voc with classes: objects of other classes, left out */
    char dropped_classes[256]; /* their classes and counts, "pear: 3, fig: 1" */
};

/*
 * Imports spec->src into spec->out (atomically: no shard on failure).
 * Errors name the file, and the line for list and annotation files; an
 * unreadable item (a corrupt JPEG, an object without bndbox, a video that
 * does not decode) fails the import unless skip_bad.  progress, if not
 * NULL, is called after each item, from the calling thread.
 *
 * Items are decoded by spec->threads threads and written in list order:
 * the shard, the error and what skip_bad skips are the same for any
 * count.
 *
 * The classes: Food-101's classes.txt, UCF-101's classInd.txt, or for VOC
 * the object names of every annotation in Annotations/, sorted (so that
 * every split of a dataset gets the same list); spec->classes replaces
 * them with a list of one's own, each a class of the dataset's (voc: the
 * <name> of some object in Annotations/; an error naming the class and
 * listing the annotations' classes otherwise).  Every class name is
 * checked with eeb_class_name_check, naming where it came from.
 */
int eeb_import(const struct eeb_import_spec *spec,
               void (*progress)(uint64_t done, uint64_t total, void *arg), void *arg,
               struct eeb_import_result *res, char *err, size_t errlen);

/* ---- the decoders the importers use ---- */

/* Decodes a JPEG file to RGB (*rgb newly allocated, free it). */
int eeb_jpeg_read(const char *path, uint8_t **rgb, int *w, int *h, char *err, size_t errlen);

/* Resizes RGB src (sw x sh) to dst (dw x dh), each output pixel the mean
 * of the source area it covers (exact fractional coverage).  EEB_OK, or
 * EEB_ENOMEM for its working buffers. */
int eeb_rgb_resize(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh);

/* Decodes a video and keeps `frames` frames at evenly spaced positions,
 * each scaled to size x size RGB, one after another in dst. */
int eeb_video_read(const char *path, int size, int frames, uint8_t *dst, char *err, size_t errlen);

#endif
