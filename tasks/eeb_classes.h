/*
 * eeb_classes.h - class names: what a name may be, checked wherever names
 * enter (import's class lists, VOC annotations, the shard writer and
 * reader), and whether two shards name the same classes in the same order.
 */
#ifndef EEB_CLASSES_H
#define EEB_CLASSES_H

#include "eeb_shard.h"

#include <stddef.h>

/*
 * Whether name (len bytes) may be a class name: 1 to EEB_SHARD_MAX_NAME
 * bytes, no '/' and not '.' or '..' (a name becomes the result file
 * comp4_det_test_<name>.txt), no comma (class lists and prediction CSVs
 * are comma-separated) and no control character (it is printed).
 * EEB_OK, or EEB_EINVAL with "WHERE: class name 'NAME' has a '/' (...)"
 * in err, the name's unprintable bytes written \xNN; where is the file
 * and line or the option the name came from, and NULL leaves it out.
 */
int eeb_class_name_check(const char *name, size_t len, const char *where, char *err, size_t errlen);

/*
 * Whether shards a (at a_path) and b (at b_path) name the same classes in
 * the same order, as a model trained on one must to be tested on the
 * other: its outputs are classes by position.  EEB_OK, or EEB_EINVAL
 * naming both files, the first class that differs and its name in each.
 */
int eeb_classes_compare(const struct eeb_shard_info *a, const char *a_path,
                        const struct eeb_shard_info *b, const char *b_path, char *err,
                        size_t errlen);

/* The same for the shards at two paths (opened for their headers). */
int eeb_classes_compare_files(const char *a_path, const char *b_path, char *err, size_t errlen);

/* Whether a model fine-tuned on shard a can be tested on shard b: the same
 * task, items of the same frames, width, height and channels, and the same
 * classes (eeb_classes_compare).  EEB_OK, or EEB_EINVAL naming both files
 * and what differs; and the same for the shards at two paths. */
int eeb_shards_agree(const struct eeb_shard_info *a, const char *a_path,
                     const struct eeb_shard_info *b, const char *b_path, char *err, size_t errlen);
int eeb_shards_agree_files(const char *a_path, const char *b_path, char *err, size_t errlen);

#endif
