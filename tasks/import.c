/*
 * import.c - Food-101, Pascal VOC and UCF-101 layouts into shards.
 *
 * Sections: list files; the class list; the items of each layout; loading
 * one item; the import loop.  Each layout first becomes a list of items
 * (files, id, label), so a bad list fails before anything is decoded and
 * progress knows its total.  VOC's lists and classes are read by voc.c,
 * as `eeb eval` reads them.  Items are loaded by worker threads and
 * written in list order by the caller.
 */
#include "eeb_import.h"
#include "eeb_lines.h"

#include "eeb_classes.h"
#include "eeb_shard.h"
#include "eeb_task_ops.h"
#include "eeb_voc.h"

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_LIST_BYTES (256u << 20)
#define MAX_THREADS    64

static const char *const format_names[] = {"food101", "voc", "ucf101"};

int eeb_import_format_parse(const char *name, enum eeb_import_format *out, char *err, size_t errlen)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(name, format_names[i]) == 0) {
            *out = (enum eeb_import_format)i;
            return EEB_OK;
        }
    return eeb_errf(err, errlen, EEB_EINVAL, "'%s' (food101, voc or ucf101)", name);
}

/* ---- list files ---- */

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- the class list ---- */

struct classes {
    int n;
    char (*names)[EEB_SHARD_MAX_NAME + 1];
};

static int class_index(const struct classes *c, const char *name, size_t len)
{
    for (int i = 0; i < c->n; i++)
        if (strlen(c->names[i]) == len && strncmp(c->names[i], name, len) == 0)
            return i;
    return -1;
}

/* Adds a class; errors name where it came from: a file and line (line 0:
 * the file alone). */
static int class_add(struct classes *c, const char *name, size_t len, const char *file, int line,
                     char *err, size_t errlen)
{
    char where[4200];
    snprintf(where, sizeof where, line ? "%s:%d" : "%s", file, line);
    int rc = eeb_class_name_check(name, len, where, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (class_index(c, name, len) >= 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: class '%.*s' given twice", where, (int)len,
                        name);
    if (c->n == EEB_SHARD_MAX_CLASSES)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: more than %d classes", where,
                        EEB_SHARD_MAX_CLASSES);
    if (c->n % 64 == 0) {
        void *p = realloc(c->names, (size_t)(c->n + 64) * sizeof *c->names);
        if (!p)
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", where);
        c->names = p;
    }
    memcpy(c->names[c->n], name, len);
    c->names[c->n++][len] = '\0';
    return EEB_OK;
}

/*
 * The --classes list: "a,b,c", or "@FILE" with one class a line.  Errors
 * name the file and line (a name given twice, or one that cannot be a
 * class name).  lines, if not NULL, receives each class's line in FILE
 * (0 on the command line), for errors found later.
 */
static int wanted_classes(const char *wanted, struct classes *out, int **lines, char *err,
                          size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = EEB_OK, cap = EEB_SHARD_MAX_CLASSES + 1;
    int *where = calloc((size_t)cap, sizeof *where);
    if (!where)
        return eeb_errf(err, errlen, EEB_ENOMEM, "--classes: out of memory");
    const char *file = wanted[0] == '@' ? wanted + 1 : NULL;
    if (file) {
        struct eeb_lines l;
        if ((rc = eeb_lines_read(&l, file, MAX_LIST_BYTES, err, errlen)) != EEB_OK) {
            free(where);
            return rc;
        }
        for (int i = 0; rc == EEB_OK && i < l.n; i++)
            if ((rc = class_add(out, l.text[i], strlen(l.text[i]), file, l.lineno[i], err,
                                errlen)) == EEB_OK)
                where[out->n - 1] = l.lineno[i];
        eeb_lines_free(&l);
    }
    for (const char *p = wanted; !file && rc == EEB_OK && *p;) {
        size_t len = strcspn(p, ",");
        rc = class_add(out, p, len, "--classes", 0, err, errlen);
        p += len + (p[len] == ',');
    }
    if (rc == EEB_OK && out->n == 0)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: no class given", file ? file : "--classes");
    if (lines && rc == EEB_OK)
        *lines = where;
    else
        free(where);
    return rc;
}

/*
 * The shard's classes: the dataset's own (all), or the --classes list,
 * each of which must be one of the dataset's.
 */
static int choose_classes(const struct classes *all, const char *wanted, struct classes *out,
                          char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!wanted) {
        for (int i = 0; i < all->n; i++) {
            int rc =
                class_add(out, all->names[i], strlen(all->names[i]), "classes", 0, err, errlen);
            if (rc != EEB_OK)
                return rc;
        }
        return EEB_OK;
    }
    int rc = wanted_classes(wanted, out, NULL, err, errlen);
    for (int i = 0; rc == EEB_OK && i < out->n; i++)
        if (class_index(all, out->names[i], strlen(out->names[i])) < 0)
            rc = eeb_errf(err, errlen, EEB_EINVAL, "--classes: '%s' is not a class of this dataset",
                          out->names[i]);
    return rc;
}

/* ---- the items of each layout ---- */

struct item {
    char *file; /* image or video */
    char *xml;  /* voc: the annotation */
    char id[EEB_SHARD_MAX_ID + 1];
    int label;
};

struct import {
    const struct eeb_import_spec *sp;
    struct classes all, chosen;
    struct item *items;
    int n, cap;
    int annotations;         /* voc: read for the classes */
    uint64_t dropped;        /* voc: objects of classes not chosen */
    struct classes left_out; /* and their classes */
    uint64_t *left_out_n;    /* with their counts */
};

/* A new string from a format (free it), or NULL if out of memory. */
__attribute__((format(printf, 1, 2))) static char *joinf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p;
    if (vasprintf(&p, fmt, ap) < 0)
        p = NULL;
    va_end(ap);
    return p;
}

/* Adds an item; list and line say where it was listed, for errors. */
static int add_item(struct import *im, char *file, char *xml, const char *id, size_t id_len,
                    int label, const char *list, int line, char *err, size_t errlen)
{
    int rc = EEB_OK;
    if (!file || (im->sp->format == EEB_IMPORT_VOC && !xml))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    else if (id_len < 1 || id_len > EEB_SHARD_MAX_ID)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: item id of %zu bytes (1..%d)", list, line,
                      id_len, EEB_SHARD_MAX_ID);
    else if (im->n == im->cap) {
        int cap = im->cap ? im->cap * 2 : 256;
        void *p = realloc(im->items, (size_t)cap * sizeof *im->items);
        if (!p)
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        else
            im->items = p, im->cap = cap;
    }
    if (rc != EEB_OK) {
        free(file), free(xml);
        return rc;
    }
    struct item *it = &im->items[im->n++];
    it->file = file, it->xml = xml, it->label = label;
    snprintf(it->id, sizeof it->id, "%.*s", (int)id_len, id); /* id_len checked above */
    return EEB_OK;
}

/* Food-101: meta/classes.txt names the classes; meta/train.txt and
 * test.txt list "class/id", the image being images/class/id.jpg. */
static int food101_items(struct import *im, char *err, size_t errlen)
{
    const char *src = im->sp->src;
    struct eeb_lines cl, list;
    char path[4096];
    snprintf(path, sizeof path, "%s/meta/classes.txt", src);
    int rc = eeb_lines_read(&cl, path, MAX_LIST_BYTES, err, errlen);
    for (int i = 0; rc == EEB_OK && i < cl.n; i++)
        rc = class_add(&im->all, cl.text[i], strlen(cl.text[i]), path, cl.lineno[i], err, errlen);
    eeb_lines_free(&cl);
    if (rc == EEB_OK)
        rc = choose_classes(&im->all, im->sp->classes, &im->chosen, err, errlen);
    if (rc != EEB_OK)
        return rc;
    snprintf(path, sizeof path, "%s/meta/%s.txt", src, im->sp->test ? "test" : "train");
    rc = eeb_lines_read(&list, path, MAX_LIST_BYTES, err, errlen);
    for (int i = 0; rc == EEB_OK && i < list.n; i++) {
        const char *line = list.text[i], *slash = strchr(line, '/');
        if (!slash || slash == line || !slash[1] || strstr(line, ".."))
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: '%s' is not class/id", path,
                          list.lineno[i], line);
        else if (class_index(&im->all, line, (size_t)(slash - line)) < 0)
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: class '%.*s' is not in classes.txt",
                          path, list.lineno[i], (int)(slash - line), line);
        if (rc != EEB_OK)
            break;
        int label = class_index(&im->chosen, line, (size_t)(slash - line));
        if (label >= 0)
            rc = add_item(im, joinf("%s/images/%s.jpg", src, line), NULL, line, strlen(line), label,
                          list.path, list.lineno[i], err, errlen);
    }
    eeb_lines_free(&list);
    return rc;
}

/*
 * The --classes list, each a class some annotation of the dataset names:
 * a misspelt class would otherwise import as a class without objects.
 * Errors name where the class was given and list the annotations'
 * classes.
 */
static int voc_wanted_classes(struct import *im, const char *annotations, char *const *found,
                              int nfound, char *err, size_t errlen)
{
    int *lines = NULL;
    int rc = wanted_classes(im->sp->classes, &im->chosen, &lines, err, errlen);
    for (int i = 0; rc == EEB_OK && i < im->chosen.n; i++) {
        const char *name = im->chosen.names[i];
        int known = 0;
        for (int k = 0; k < nfound && !known; k++)
            known = strcmp(found[k], name) == 0;
        if (known)
            continue;
        char where[4200], list[1024];
        const char *file = im->sp->classes + 1; /* after the '@' */
        if (lines[i])
            snprintf(where, sizeof where, "%s:%d", file, lines[i]);
        else
            snprintf(where, sizeof where, "--classes");
        eeb_voc_names_join(found, nfound, list, sizeof list);
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: no object in %s is a '%s' (their classes: %s)",
                      where, annotations, name, list);
    }
    free(lines);
    return rc;
}

/*
 * VOC's classes: the object names of every annotation in Annotations/,
 * sorted, collected as `eeb eval` collects them, so that every split of
 * the dataset gets the same list; or the --classes list, in its order,
 * each of them among those names.
 */
static int voc_classes(struct import *im, const char *annotations, char *err, size_t errlen)
{
    char **names;
    int n, rc = eeb_voc_annotation_classes(annotations, im->sp->skip_bad, &names, &n,
                                           &im->annotations, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (im->sp->classes)
        rc = voc_wanted_classes(im, annotations, names, n, err, errlen);
    else if (n == 0)
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "%s: no <object> in its %d annotations; name the classes with --classes",
                      annotations, im->annotations);
    for (int i = 0; !im->sp->classes && rc == EEB_OK && i < n; i++)
        rc = class_add(&im->chosen, names[i], strlen(names[i]), annotations, 0, err, errlen);
    eeb_voc_names_free(names, n);
    return rc;
}

/*
 * VOC: the images of an ImageSets/Main list, read as `eeb eval` reads it:
 * --image-set, or trainval.txt (else train.txt) for the train split and
 * test.txt for the test split.  Annotations/<id>.xml describes
 * JPEGImages/<id>.jpg.
 */
static int voc_items(struct import *im, char *err, size_t errlen)
{
    const char *src = im->sp->src;
    char ann[4096], path[4096];
    snprintf(ann, sizeof ann, "%s/Annotations", src);
    if (im->sp->image_set)
        snprintf(path, sizeof path, "%s", im->sp->image_set);
    else
        snprintf(path, sizeof path, "%s/ImageSets/Main/%s.txt", src,
                 im->sp->test ? "test" : "trainval");
    if (!im->sp->image_set && !im->sp->test && !exists(path))
        snprintf(path, sizeof path, "%s/ImageSets/Main/train.txt", src);
    struct eeb_voc_image_set set;
    int rc = eeb_voc_image_set_read(path, &set, err, errlen);
    if (rc != EEB_OK)
        return rc;
    rc = voc_classes(im, ann, err, errlen);
    for (int i = 0; rc == EEB_OK && i < set.n; i++) {
        const char *id = set.ids[i];
        rc = add_item(im, joinf("%s/JPEGImages/%s.jpg", src, id), joinf("%s/%s.xml", ann, id), id,
                      strlen(id), 0, set.path, set.lines[i], err, errlen);
    }
    eeb_voc_image_set_free(&set);
    return rc;
}

/* UCF-101: classInd.txt ("1 ApplyEyeMakeup"), trainlist01.txt
 * ("ApplyEyeMakeup/v_..._c01.avi 1") and testlist01.txt (the path alone),
 * in ucfTrainTestlist/ or at the top; the videos under UCF-101/ or at the
 * top.  The class is the video's directory, checked against the index. */
static int ucf101_items(struct import *im, char *err, size_t errlen)
{
    const char *src = im->sp->src;
    char lists[4096], videos[4096], path[4200];
    snprintf(lists, sizeof lists, "%s/ucfTrainTestlist", src);
    if (!exists(lists))
        snprintf(lists, sizeof lists, "%s", src);
    snprintf(videos, sizeof videos, "%s/UCF-101", src);
    if (!exists(videos))
        snprintf(videos, sizeof videos, "%s", src);
    snprintf(path, sizeof path, "%s/classInd.txt", lists);
    struct eeb_lines cl, list;
    int rc = eeb_lines_read(&cl, path, MAX_LIST_BYTES, err, errlen);
    for (int i = 0; rc == EEB_OK && i < cl.n; i++) {
        char name[128];
        int index, used = 0;
        if (sscanf(cl.text[i], "%d %127s%n", &index, name, &used) != 2 || cl.text[i][used] ||
            index != im->all.n + 1) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: '%s' is not '%d ClassName'", path,
                          cl.lineno[i], cl.text[i], im->all.n + 1);
            break;
        }
        rc = class_add(&im->all, name, strlen(name), path, cl.lineno[i], err, errlen);
    }
    eeb_lines_free(&cl);
    if (rc == EEB_OK)
        rc = choose_classes(&im->all, im->sp->classes, &im->chosen, err, errlen);
    if (rc != EEB_OK)
        return rc;
    snprintf(path, sizeof path, "%s/%s01.txt", lists, im->sp->test ? "testlist" : "trainlist");
    rc = eeb_lines_read(&list, path, MAX_LIST_BYTES, err, errlen);
    for (int i = 0; rc == EEB_OK && i < list.n; i++) {
        const char *line = list.text[i];
        size_t len = strcspn(line, " \t");
        const char *slash = memchr(line, '/', len);
        int cls = slash ? class_index(&im->all, line, (size_t)(slash - line)) : -1;
        int given = -1, used = 0;
        if (line[len] && (sscanf(line + len, " %d%n", &given, &used) != 1 || line[len + used]))
            given = 0;
        if (!slash || strstr(line, "..") || cls < 0 || (line[len] && given != cls + 1)) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s:%d: '%s' is not Class/video[ index] with a class of classInd.txt",
                          path, list.lineno[i], line);
            break;
        }
        int label = class_index(&im->chosen, line, (size_t)(slash - line));
        if (label < 0)
            continue;
        const char *base = slash + 1, *dot = memrchr(base, '.', (size_t)(line + len - base));
        size_t id_len = (size_t)((dot ? dot : line + len) - base);
        rc = add_item(im, joinf("%s/%.*s", videos, (int)len, line), NULL, base, id_len, label,
                      list.path, list.lineno[i], err, errlen);
    }
    eeb_lines_free(&list);
    return rc;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct item *)a)->id, ((const struct item *)b)->id);
}

/* Record ids must be unique: evaluation matches predictions by id. */
static int check_unique(const struct import *im, char *err, size_t errlen)
{
    struct item *sorted = malloc((size_t)im->n * sizeof *sorted + 1);
    if (!sorted)
        return eeb_errf(err, errlen, EEB_ENOMEM, "import: out of memory");
    memcpy(sorted, im->items, (size_t)im->n * sizeof *sorted);
    qsort(sorted, (size_t)im->n, sizeof *sorted, by_id);
    int rc = EEB_OK;
    for (int i = 1; i < im->n && rc == EEB_OK; i++)
        if (strcmp(sorted[i - 1].id, sorted[i].id) == 0)
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: item '%s' is listed twice", im->sp->src,
                          sorted[i].id);
    free(sorted);
    return rc;
}

/* ---- loading one item ---- */

static int load_image(const struct import *im, const char *path, struct eeb_record *r, int *w,
                      int *h, char *err, size_t errlen)
{
    uint8_t *rgb;
    int rc = eeb_jpeg_read(path, &rgb, w, h, err, errlen);
    if (rc != EEB_OK)
        return rc;
    rc = eeb_rgb_resize(rgb, *w, *h, r->pixels, im->sp->size, im->sp->size);
    free(rgb);
    return rc == EEB_OK ? rc
                        : eeb_errf(err, errlen, rc, "%s: out of memory resizing %dx%d to %d", path,
                                   *w, *h, im->sp->size);
}

/*
 * The annotation's objects of the chosen classes, boxes scaled from the
 * image's w x h pixels to the shard's; the devkit's 1-based inclusive
 * pixels xmin..xmax are the continuous span [xmin - 1, xmax].  A xmin or
 * ymin in [0, 1), the edge as exporters with 0-based coordinates write
 * it, is the edge.
 */
static int voc_boxes(const struct import *im, const struct item *it,
                     const struct eeb_voc_annotation *a, int w, int h, struct eeb_record *r,
                     char *err, size_t errlen)
{
    if ((a->width && a->width != w) || (a->height && a->height != h))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: <size> %dx%d, but the image is %dx%d",
                        it->xml, a->width, a->height, w, h);
    double sx = (double)im->sp->size / w, sy = (double)im->sp->size / h;
    for (int i = 0; i < a->nobjects; i++) {
        const struct eeb_voc_object *o = &a->objects[i];
        int cls = class_index(&im->chosen, o->name, strlen(o->name));
        if (cls < 0 && !im->sp->classes) /* the classes were read from this very folder */
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: object %d: class '%s' was not in the annotations when their "
                            "classes were read (did they change?)",
                            it->xml, o->line, i + 1, o->name);
        if (cls < 0)
            continue;
        const struct eeb_voc_box *b = &o->box;
        if (b->x0 < 0 || b->y0 < 0 || b->x0 > b->x1 || b->y0 > b->y1 || b->x1 > w || b->y1 > h)
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: object %d (%s): bndbox %g,%g-%g,%g is not within the %dx%d "
                            "image",
                            it->xml, o->line, i + 1, o->name, b->x0, b->y0, b->x1, b->y1, w, h);
        if (r->nboxes == EEB_SHARD_MAX_BOXES)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: more than %d objects", it->xml,
                            EEB_SHARD_MAX_BOXES);
        float side = (float)im->sp->size;
        struct eeb_box *x = &r->boxes[r->nboxes++];
        *x = (struct eeb_box){cls,
                              o->difficult,
                              fminf(fmaxf((float)((b->x0 - 1) * sx), 0), side),
                              fminf(fmaxf((float)((b->y0 - 1) * sy), 0), side),
                              fminf((float)(b->x1 * sx), side),
                              fminf((float)(b->y1 * sy), side)};
    }
    return EEB_OK;
}

/* Counts the objects that a --classes list leaves out, by class. */
static int count_left_out(struct import *im, const struct item *it,
                          const struct eeb_voc_annotation *a, char *err, size_t errlen)
{
    struct classes *c = &im->left_out;
    for (int i = 0; i < a->nobjects; i++) {
        const char *name = a->objects[i].name;
        size_t len = strlen(name);
        if (class_index(&im->chosen, name, len) >= 0)
            continue;
        im->dropped++;
        int k = class_index(c, name, len);
        if (k < 0 && c->n % 64 == 0) {
            uint64_t *p = realloc(im->left_out_n, (size_t)(c->n + 64) * sizeof *p);
            if (!p)
                return eeb_errf(err, errlen, EEB_ENOMEM, "import: out of memory");
            im->left_out_n = p;
        }
        if (k < 0) {
            int rc = class_add(c, name, len, it->xml, 0, err, errlen);
            if (rc == EEB_ENOMEM)
                return rc;
            if (rc != EEB_OK)
                continue; /* past EEB_SHARD_MAX_CLASSES names: counted, not named */
            im->left_out_n[k = c->n - 1] = 0;
        }
        im->left_out_n[k]++;
    }
    return EEB_OK;
}

/* Loads an item into r; a VOC item's annotation stays in *a (free it),
 * for the objects a --classes list leaves out.  Called from the workers:
 * im is only read. */
static int load_item(const struct import *im, const struct item *it, struct eeb_record *r,
                     struct eeb_voc_annotation *a, char *err, size_t errlen)
{
    memcpy(r->id, it->id, sizeof r->id);
    r->label = it->label;
    r->nboxes = 0;
    int w, h;
    if (im->sp->format == EEB_IMPORT_UCF101)
        return eeb_video_read(it->file, im->sp->size, im->sp->frames, r->pixels, err, errlen);
    if (im->sp->format == EEB_IMPORT_FOOD101)
        return load_image(im, it->file, r, &w, &h, err, errlen);
    int rc = eeb_voc_read_annotation(it->xml, a, err, errlen);
    if (rc == EEB_OK)
        rc = load_image(im, it->file, r, &w, &h, err, errlen);
    if (rc == EEB_OK)
        rc = voc_boxes(im, it, a, w, h, r, err, errlen);
    return rc;
}

/* "pear: 3, fig: 1", cut short with "..." where it does not fit. */
static void describe_left_out(const struct import *im, char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int k = 0; k < im->left_out.n; k++) {
        char one[96];
        snprintf(one, sizeof one, "%s%s: %llu", k ? ", " : "", im->left_out.names[k],
                 (unsigned long long)im->left_out_n[k]);
        size_t n = strlen(one);
        if (used + n + sizeof ", ..." > len) { /* room for ", ..." was kept */
            snprintf(out + used, len - used, "%s", k ? ", ..." : "...");
            return;
        }
        memcpy(out + used, one, n + 1);
        used += n;
    }
}

/* ---- loading in parallel ---- */

/*
 * Item i is loaded into slot i % nslots, by a worker or, with one thread,
 * by the caller when it gets there; the caller writes the slots in item
 * order and gives each back for the item nslots later.  So the shard, the
 * first error and the items --skip-bad skips do not depend on the threads.
 */
struct slot {
    struct eeb_record *r;
    struct eeb_voc_annotation ann; /* voc: the item's objects */
    int rc;                        /* the load's status, */
    char *err;                     /* and its error (errlen bytes) */
    int loaded;                    /* a worker is done with it */
};

struct loader {
    const struct import *im;
    struct slot *slots;
    int nslots;
    int workers; /* threads started; 0: the caller loads */
    pthread_t *tids;
    size_t errlen;
    int sync; /* mu and cv are made */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int next;    /* the item the next worker takes */
    int written; /* items given back: item i may be loaded once i < written + nslots */
    int stop;
};

static void load_slot(struct loader *ld, int i, struct slot *s)
{
    s->rc = load_item(ld->im, &ld->im->items[i], s->r, &s->ann, s->err, ld->errlen);
}

static void *worker(void *arg)
{
    struct loader *ld = arg;
    pthread_mutex_lock(&ld->mu);
    for (;;) {
        while (!ld->stop && ld->next < ld->im->n && ld->next >= ld->written + ld->nslots)
            pthread_cond_wait(&ld->cv, &ld->mu);
        if (ld->stop || ld->next >= ld->im->n)
            break;
        int i = ld->next++;
        struct slot *s = &ld->slots[i % ld->nslots];
        pthread_mutex_unlock(&ld->mu);
        load_slot(ld, i, s);
        pthread_mutex_lock(&ld->mu);
        s->loaded = 1;
        pthread_cond_broadcast(&ld->cv);
    }
    pthread_mutex_unlock(&ld->mu);
    return NULL;
}

/* Slots for items of px bytes of pixels and `threads` workers (0: one
 * per online CPU; one: none, the caller loads).  Fewer workers than asked
 * start if the system refuses more, none at worst. */
static int loader_start(struct loader *ld, int threads, size_t px, char *err, size_t errlen)
{
    if (threads < 1) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > 0 ? (int)cpus : 1;
    }
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > ld->im->n)
        threads = ld->im->n > 0 ? ld->im->n : 1;
    ld->nslots = threads > 1 ? 2 * threads : 1;
    ld->slots = calloc((size_t)ld->nslots, sizeof *ld->slots);
    ld->tids = calloc((size_t)threads, sizeof *ld->tids);
    int ok = ld->slots && ld->tids;
    for (int k = 0; ok && k < ld->nslots; k++) {
        struct slot *s = &ld->slots[k];
        ok = (s->r = calloc(1, sizeof *s->r)) && (s->r->pixels = malloc(px)) &&
             (s->err = malloc(ld->errlen + 1));
    }
    if (!ok)
        return eeb_errf(err, errlen, EEB_ENOMEM, "import: out of memory for %d items of %zu bytes",
                        ld->nslots, px);
    pthread_mutex_init(&ld->mu, NULL);
    pthread_cond_init(&ld->cv, NULL);
    ld->sync = 1;
    for (int k = 0; threads > 1 && k < threads; k++) {
        if (pthread_create(&ld->tids[k], NULL, worker, ld) != 0)
            break;
        ld->workers++;
    }
    return EEB_OK;
}

/* Item i's slot, once it is loaded. */
static struct slot *loader_take(struct loader *ld, int i)
{
    struct slot *s = &ld->slots[i % ld->nslots];
    if (!ld->workers) {
        load_slot(ld, i, s);
        return s;
    }
    pthread_mutex_lock(&ld->mu);
    while (!s->loaded)
        pthread_cond_wait(&ld->cv, &ld->mu);
    pthread_mutex_unlock(&ld->mu);
    return s;
}

/* Done with item i: its slot is free for item i + nslots. */
static void loader_give_back(struct loader *ld, int i, struct slot *s)
{
    eeb_voc_annotation_free(&s->ann);
    if (!ld->workers)
        return;
    pthread_mutex_lock(&ld->mu);
    s->loaded = 0;
    ld->written = i + 1;
    pthread_cond_broadcast(&ld->cv);
    pthread_mutex_unlock(&ld->mu);
}

/* Stops the workers (an item being loaded is finished first) and frees
 * everything. */
static void loader_free(struct loader *ld)
{
    if (ld->workers) {
        pthread_mutex_lock(&ld->mu);
        ld->stop = 1;
        pthread_cond_broadcast(&ld->cv);
        pthread_mutex_unlock(&ld->mu);
        for (int k = 0; k < ld->workers; k++)
            pthread_join(ld->tids[k], NULL);
    }
    if (ld->sync) {
        pthread_mutex_destroy(&ld->mu);
        pthread_cond_destroy(&ld->cv);
    }
    for (int k = 0; ld->slots && k < ld->nslots; k++) {
        struct slot *s = &ld->slots[k];
        eeb_voc_annotation_free(&s->ann);
        if (s->r)
            free(s->r->pixels);
        free(s->r), free(s->err);
    }
    free(ld->slots), free(ld->tids);
}

/* ---- the import loop ---- */

int eeb_import(const struct eeb_import_spec *sp,
               void (*progress)(uint64_t done, uint64_t total, void *arg), void *arg,
               struct eeb_import_result *res, char *err, size_t errlen)
{
    memset(res, 0, sizeof *res);
    if (sp->size < 16 || sp->size > 1024)
        return eeb_errf(err, errlen, EEB_EINVAL, "import: size %d (16..1024 pixels)", sp->size);
    const struct eeb_task_ops *task = eeb_task_importing(sp->format);
    if (!task)
        return eeb_errf(err, errlen, EEB_EINVAL, "import: format %d unknown", (int)sp->format);
    if (task->clips && (sp->frames < 2 || sp->frames > EEB_TASK_MAX_FRAMES))
        return eeb_errf(err, errlen, EEB_EINVAL, "import: %d frames (2..%d)", sp->frames,
                        EEB_TASK_MAX_FRAMES);
    struct import im = {.sp = sp};
    struct loader ld = {.im = &im, .errlen = errlen};
    struct eeb_shard_writer *w = NULL;
    int rc = sp->format == EEB_IMPORT_FOOD101 ? food101_items(&im, err, errlen)
             : sp->format == EEB_IMPORT_VOC   ? voc_items(&im, err, errlen)
                                              : ucf101_items(&im, err, errlen);
    if (rc == EEB_OK)
        rc = check_unique(&im, err, errlen);
    struct eeb_shard_info info = {.task = task->task,
                                  .h = sp->size,
                                  .w = sp->size,
                                  .c = 3,
                                  .frames = task->clips ? sp->frames : 1,
                                  .classes = im.chosen.n,
                                  .names = im.chosen.names};
    if (rc == EEB_OK)
        rc = eeb_shard_create(&w, sp->out, &info, err, errlen);
    if (rc == EEB_OK)
        rc = loader_start(&ld, sp->threads, eeb_shard_pixels(&info), err, errlen);
    for (int i = 0; rc == EEB_OK && i < im.n; i++) {
        struct slot *s = loader_take(&ld, i);
        if ((rc = s->rc) != EEB_OK)
            snprintf(err, errlen, "%s", s->err);
        if (rc == EEB_OK && sp->format == EEB_IMPORT_VOC && sp->classes)
            rc = count_left_out(&im, &im.items[i], &s->ann, err, errlen);
        if (rc == EEB_OK)
            rc = eeb_shard_write(w, s->r, err, errlen);
        else if (s->rc != EEB_OK && sp->skip_bad && rc != EEB_ENOMEM) {
            if (res->skipped++ == 0)
                snprintf(res->first_skipped, sizeof res->first_skipped, "%s", err);
            rc = EEB_OK;
        }
        loader_give_back(&ld, i, s);
        if (rc == EEB_OK && progress)
            progress((uint64_t)i + 1, (uint64_t)im.n, arg);
    }
    loader_free(&ld);
    if (rc == EEB_OK) {
        res->records = (uint64_t)im.n - res->skipped;
        res->annotations = im.annotations;
        res->dropped = im.dropped;
        describe_left_out(&im, res->dropped_classes, sizeof res->dropped_classes);
        rc = eeb_shard_finish(w, err, errlen);
        w = NULL;
    }
    eeb_shard_abort(w);
    for (int i = 0; i < im.n; i++)
        free(im.items[i].file), free(im.items[i].xml);
    free(im.items);
    free(im.all.names), free(im.chosen.names), free(im.left_out.names), free(im.left_out_n);
    return rc;
}
