/*
 * classes.c - what a class name may be, and whether two shards' class
 * lists agree name for name.
 */
#include "eeb_classes.h"

#include "common/eeb_common.h"

#include <stdio.h>
#include <string.h>

/* name with its control bytes as \xNN, cut short with "..." to fit out. */
static void printable(const char *name, size_t len, char *out, size_t outlen)
{
    size_t at = 0, i = 0;
    for (; i < len && at + 8 < outlen; i++) { /* room for \xNN and "..." */
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f)
            at += (size_t)snprintf(out + at, outlen - at, "\\x%02x", c);
        else
            out[at++] = (char)c;
    }
    snprintf(out + at, outlen - at, "%s", i < len ? "..." : "");
}

/* Why name cannot be a class name, or NULL. */
static const char *fault(const char *name, size_t len)
{
    if (len == 0)
        return "is empty";
    if (len > EEB_SHARD_MAX_NAME)
        return "is longer than 63 bytes";
    if (memchr(name, '/', len))
        return "has a '/' (a class name is part of its result file's name, "
               "comp4_det_test_<name>.txt)";
    if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
        return "is '.' or '..' (a class name is part of its result file's name, "
               "comp4_det_test_<name>.txt)";
    if (memchr(name, ',', len))
        return "has a comma (class lists and prediction files separate classes with commas)";
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return "has a control character";
    return NULL;
}

int eeb_class_name_check(const char *name, size_t len, const char *where, char *err, size_t errlen)
{
    const char *why = fault(name, len);
    if (!why)
        return EEB_OK;
    char shown[4 * EEB_SHARD_MAX_NAME + 8];
    printable(name, len, shown, sizeof shown);
    return eeb_errf(err, errlen, EEB_EINVAL, "%s%sclass name '%s' %s", where ? where : "",
                    where ? ": " : "", shown, why);
}

int eeb_classes_compare(const struct eeb_shard_info *a, const char *a_path,
                        const struct eeb_shard_info *b, const char *b_path, char *err,
                        size_t errlen)
{
    int k = 0;
    while (k < a->classes && k < b->classes && strcmp(a->names[k], b->names[k]) == 0)
        k++;
    if (k == a->classes && k == b->classes)
        return EEB_OK;
    const char *why = "a model's outputs are classes by position, so the lists must match name "
                      "for name, in order";
    if (k < a->classes && k < b->classes)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s and %s do not name the same classes: class %d is '%s' in %s, '%s' in "
                        "%s (%s)",
                        a_path, b_path, k, a->names[k], a_path, b->names[k], b_path, why);
    const char *longer = k < a->classes ? a_path : b_path;
    const char *name = k < a->classes ? a->names[k] : b->names[k];
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "%s and %s do not name the same classes: class %d is '%s' in %s, and %s has "
                    "%d classes, %s %d (%s)",
                    a_path, b_path, k, name, longer, a_path, a->classes, b_path, b->classes, why);
}

int eeb_shards_agree(const struct eeb_shard_info *a, const char *a_path,
                     const struct eeb_shard_info *b, const char *b_path, char *err, size_t errlen)
{
    if (a->task != b->task)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s items, %s %s items", a_path,
                        eeb_task_name(a->task), b_path, eeb_task_name(b->task));
    if (a->h != b->h || a->w != b->w || a->c != b->c || a->frames != b->frames)
        return eeb_errf(
            err, errlen, EEB_EINVAL,
            "%s holds items of %d frame(s) of %dx%dx%d, %s of %d frame(s) of %dx%dx%d: a "
            "model fine-tuned on the one cannot be tested on the other",
            a_path, a->frames, a->w, a->h, a->c, b_path, b->frames, b->w, b->h, b->c);
    return eeb_classes_compare(a, a_path, b, b_path, err, errlen);
}

int eeb_shards_agree_files(const char *a_path, const char *b_path, char *err, size_t errlen)
{
    struct eeb_shard *a = NULL, *b = NULL;
    int rc = eeb_shard_open(&a, a_path, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_shard_open(&b, b_path, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_shards_agree(eeb_shard_info(a), a_path, eeb_shard_info(b), b_path, err, errlen);
    eeb_shard_close(a);
    eeb_shard_close(b);
    return rc;
}

int eeb_classes_compare_files(const char *a_path, const char *b_path, char *err, size_t errlen)
{
    struct eeb_shard *a = NULL, *b = NULL;
    int rc = eeb_shard_open(&a, a_path, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_shard_open(&b, b_path, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_classes_compare(eeb_shard_info(a), a_path, eeb_shard_info(b), b_path, err, errlen);
    eeb_shard_close(a);
    eeb_shard_close(b);
    return rc;
}
