/*
 * eeb_voc.h - Pascal VOC files: annotation XML (read with expat), the
 * image-set lists of ImageSets/Main, the devkit's detection result files,
 * and the ground truth that detection results are judged against, from an
 * Annotations/ directory or a shard.
 */
#ifndef EEB_VOC_H
#define EEB_VOC_H

#include "eeb_lines.h"
#include "eeb_metrics.h"

#include <stddef.h>

#define EEB_VOC_MAX_NAME 63

struct eeb_voc_object {
    char name[EEB_VOC_MAX_NAME + 1];
    int difficult;          /* <difficult> is 1 (it may be 0, 1 or empty: 0) */
    struct eeb_voc_box box; /* bndbox: 1-based inclusive pixels, fractions kept */
    int line;               /* of its <object> tag, for errors */
};

/* One Annotations/<id>.xml. */
struct eeb_voc_annotation {
    char filename[256];       /* <filename>: the image in JPEGImages/ */
    int width, height, depth; /* <size>; 0 where absent or empty */
    int nobjects;
    struct eeb_voc_object *objects;
};

/*
 * Reads path; errors name the file, and the line for bad XML or a bad
 * object (one without bndbox or name, a coordinate that is not a number,
 * xmax < xmin, a <difficult> other than 0, 1 or empty, a <name> that
 * cannot be a class name: see eeb_class_name_check).  Elements the devkit
 * treats as optional may be empty or
 * absent (<difficult/>, <truncated/>, <pose/>, <occluded/>, <depth/>), and
 * the ones eeb does not use are skipped whatever they hold (<source>,
 * <owner>, <segmented>, <part>, <actions>, <point>, <attributes>).
 */
int eeb_voc_read_annotation(const char *path, struct eeb_voc_annotation *out, char *err,
                            size_t errlen);
void eeb_voc_annotation_free(struct eeb_voc_annotation *a);

/* ---- image sets ---- */

/*
 * An ImageSets/Main list: one image id a line (test.txt, trainval.txt), or
 * an id and a flag 1, -1 or 0 (the per-class lists, aeroplane_test.txt).
 * How `eeb eval` and `eeb data import` both choose a set's images.
 */
struct eeb_voc_image_set {
    const char *path;
    int n;
    char **ids;            /* in the file's order */
    int *lines;            /* each id's line */
    char **sorted;         /* the same ids, sorted (for lookups) */
    struct eeb_lines file; /* which the ids point into */
};

/*
 * Reads path.  Errors name the file and line: a line that is neither
 * 'id' nor 'id 1|-1|0', an id with a '/' or longer than a record id may
 * be, an id listed twice, or a file without ids.
 */
int eeb_voc_image_set_read(const char *path, struct eeb_voc_image_set *out, char *err,
                           size_t errlen);
void eeb_voc_image_set_free(struct eeb_voc_image_set *s);

/* Whether id is in the set. */
int eeb_voc_image_set_has(const struct eeb_voc_image_set *s, const char *id);

/*
 * The image set to score an annotation directory by when none is named,
 * as the devkit does:
 *  1  dir is .../Annotations and .../ImageSets/Main/test.txt exists: its
 *     path is in path;
 *  0  there is no set to be had (dir is not named Annotations, or has no
 *     ImageSets/Main beside it, or one without a .txt list): every
 *     annotation is scored;
 *  EEB_EINVAL  ImageSets/Main has lists but no test.txt (VOC2012, VOC2007's
 *     trainval download), so every annotation would mix the splits: err
 *     lists the set files there (val.txt, trainval.txt, ...; per-class
 *     lists of those sets left out) and asks for --image-set.
 */
int eeb_voc_default_image_set(const char *dir, char *path, size_t len, char *err, size_t errlen);

/* ---- ground truth ---- */

/* Ground truth for detection: image ids, class names, and every class's
 * objects, in the order the files list them. */
struct eeb_voc_truth_set {
    int nimages;
    char **images; /* ids, sorted */
    int nclasses;
    char **classes;
    int *ntruth;                  /* per class */
    struct eeb_voc_truth **truth; /* per class */
    char *image_set;              /* the image set that chose the images, or NULL: all */
};

/*
 * From a directory of VOC annotation files (image id = file name without
 * .xml; classes are the object names seen, sorted) or from a detection
 * shard (its records' ids and its header's classes; boxes converted from
 * continuous [x0, x1] to pixels x0 + 1 .. x1).
 *
 * With set, only the set's images are read, as the devkit scores them: an
 * id of the set without an annotation file (or a record) is an error
 * naming the set's file and line, and other annotations are not read.
 */
int eeb_voc_truth_load_set(const char *dir_or_shard, const struct eeb_voc_image_set *set,
                           struct eeb_voc_truth_set *out, char *err, size_t errlen);
/* The same with every image. */
int eeb_voc_truth_load(const char *dir_or_shard, struct eeb_voc_truth_set *out, char *err,
                       size_t errlen);
void eeb_voc_truth_free(struct eeb_voc_truth_set *t);

/*
 * The classes of a directory of annotation files, found as
 * eeb_voc_truth_load finds them: every object's <name> in every .xml
 * file, unique and sorted.  *names is newly allocated (free it with
 * eeb_voc_names_free); *files is how many files were read.  skip_bad
 * leaves out files that do not read instead of failing on them.
 */
int eeb_voc_annotation_classes(const char *dir, int skip_bad, char ***names, int *n, int *files,
                               char *err, size_t errlen);
void eeb_voc_names_free(char **names, int n);
/* "cat, dog, person" into out ("none" for none), cut short with "...". */
void eeb_voc_names_join(char *const *names, int n, char *out, size_t len);

/* The index of an image id or class name, or -1. */
int eeb_voc_image_index(const struct eeb_voc_truth_set *t, const char *id);
int eeb_voc_class_index(const struct eeb_voc_truth_set *t, const char *name);

/*
 * Reads the devkit result file of one class ("image_id confidence xmin
 * ymin xmax ymax" per line) into *out (free it); every image must be in t
 * (in its image set, if it has one).  Errors name the file and line.
 */
int eeb_voc_read_results(const char *path, const struct eeb_voc_truth_set *t,
                         struct eeb_voc_detection **out, int *n, char *err, size_t errlen);

#endif
