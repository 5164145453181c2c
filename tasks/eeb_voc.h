/*
 * eeb_voc.h - Pascal VOC files: annotation XML (read with expat), the
 * devkit's detection result files, and the ground truth that detection
 * results are judged against, from an Annotations/ directory or a shard.
 */
#ifndef EEB_VOC_H
#define EEB_VOC_H

#include "eeb_metrics.h"

#include <stddef.h>

#define EEB_VOC_MAX_NAME 63

struct eeb_voc_object {
    char name[EEB_VOC_MAX_NAME + 1];
    int difficult;
    struct eeb_voc_box box; /* bndbox: 1-based inclusive pixels */
};

/* One Annotations/<id>.xml. */
struct eeb_voc_annotation {
    char filename[256]; /* <filename>: the image in JPEGImages/ */
    int width, height, depth;
    int nobjects;
    struct eeb_voc_object *objects;
};

/* Reads path; errors name the file, and the line for bad XML or a bad
 * object (one without bndbox or name, a coordinate that is not a number). */
int eeb_voc_read_annotation(const char *path, struct eeb_voc_annotation *out, char *err,
                            size_t errlen);
void eeb_voc_annotation_free(struct eeb_voc_annotation *a);

/* Ground truth for detection: image ids, class names, and every class's
 * objects, in the order the files list them. */
struct eeb_voc_truth_set {
    int nimages;
    char **images; /* ids, sorted */
    int nclasses;
    char **classes;
    int *ntruth;                  /* per class */
    struct eeb_voc_truth **truth; /* per class */
};

/*
 * From a directory of VOC annotation files (image id = file name without
 * .xml; classes are the object names seen, sorted) or from a detection
 * shard (its records' ids and its header's classes; boxes converted from
 * continuous [x0, x1] to pixels x0 + 1 .. x1).
 */
int eeb_voc_truth_load(const char *dir_or_shard, struct eeb_voc_truth_set *out, char *err,
                       size_t errlen);
void eeb_voc_truth_free(struct eeb_voc_truth_set *t);

/* The index of an image id or class name, or -1. */
int eeb_voc_image_index(const struct eeb_voc_truth_set *t, const char *id);
int eeb_voc_class_index(const struct eeb_voc_truth_set *t, const char *name);

/*
 * Reads the devkit result file of one class ("image_id confidence xmin
 * ymin xmax ymax" per line) into *out (free it); every image must be in t.
 * Errors name the file and line.
 */
int eeb_voc_read_results(const char *path, const struct eeb_voc_truth_set *t,
                         struct eeb_voc_detection **out, int *n, char *err, size_t errlen);

#endif
