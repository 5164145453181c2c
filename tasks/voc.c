/*
 * voc.c - Pascal VOC annotation XML (expat), ImageSets/Main lists, devkit
 * result files, and the detection ground truth built from either VOC
 * annotations or a shard.
 *
 * Sections: annotation XML; image sets; ground truth (the annotations of a
 * directory or an image set, and the classes they name; a shard); result
 * files.
 */
#include "eeb_voc.h"

#include "common/eeb_common.h"
#include "eeb_classes.h"
#include "eeb_shard.h"
#include "eeb_task_ops.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <expat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_XML_BYTES (4u << 20)
#define MAX_SET_BYTES (64u << 20)
#define MAX_DEPTH     32
#define MAX_TEXT      256
#define VOC_MAX_SIZE  1000000 /* pixels per side, channels: no image is larger */

/* ---- annotation XML ---- */

enum field {
    F_NONE,
    F_FILENAME,
    F_WIDTH,
    F_HEIGHT,
    F_DEPTH,
    F_NAME,
    F_DIFFICULT,
    F_X0,
    F_Y0,
    F_X1,
    F_Y1
};

struct xml_state {
    XML_Parser parser;
    const char *path;
    struct eeb_voc_annotation *a;
    const char *stack[MAX_DEPTH]; /* element names, outermost first */
    int depth;
    enum field field; /* the leaf whose text is being collected */
    char text[MAX_TEXT];
    size_t ntext;
    int capacity;
    unsigned have; /* of the current object: bit per field */
    int status;
    char *err;
    size_t errlen;
};

/* Stops the parse with an error naming the file and line. */
static void fail(struct xml_state *st, const char *what)
{
    if (st->status == EEB_OK)
        st->status = eeb_errf(st->err, st->errlen, EEB_EFORMAT, "%s:%lu: %s", st->path,
                              (unsigned long)XML_GetCurrentLineNumber(st->parser), what);
    XML_StopParser(st->parser, XML_FALSE);
}

/* Is the element stack annotation/<a>[/<b>[/<c>]]? */
static int at(const struct xml_state *st, const char *a, const char *b, const char *c)
{
    const char *want[4] = {"annotation", a, b, c};
    int n = c ? 4 : b ? 3 : 2;
    if (st->depth != n)
        return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(st->stack[i], want[i]) != 0)
            return 0;
    return 1;
}

static enum field field_here(const struct xml_state *st)
{
    static const struct {
        const char *a, *b, *c;
        enum field f;
    } leaves[] = {
        {"filename", NULL, NULL, F_FILENAME}, {"size", "width", NULL, F_WIDTH},
        {"size", "height", NULL, F_HEIGHT},   {"size", "depth", NULL, F_DEPTH},
        {"object", "name", NULL, F_NAME},     {"object", "difficult", NULL, F_DIFFICULT},
        {"object", "bndbox", "xmin", F_X0},   {"object", "bndbox", "ymin", F_Y0},
        {"object", "bndbox", "xmax", F_X1},   {"object", "bndbox", "ymax", F_Y1},
    };
    for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++)
        if (at(st, leaves[i].a, leaves[i].b, leaves[i].c))
            return leaves[i].f;
    return F_NONE;
}

static void XMLCALL on_start(void *ctx, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    struct xml_state *st = ctx;
    if (st->depth == MAX_DEPTH)
        return fail(st, "elements nested too deep");
    st->stack[st->depth] = strdup(name);
    if (!st->stack[st->depth])
        return fail(st, "out of memory");
    st->depth++;
    if (st->depth == 1 && strcmp(name, "annotation") != 0)
        return fail(st, "the root element is not <annotation>");
    if (at(st, "object", NULL, NULL)) {
        struct eeb_voc_annotation *a = st->a;
        if (a->nobjects == st->capacity) {
            int cap = st->capacity ? 2 * st->capacity : 8;
            struct eeb_voc_object *o = realloc(a->objects, (size_t)cap * sizeof *o);
            if (!o)
                return fail(st, "out of memory");
            a->objects = o, st->capacity = cap;
        }
        a->objects[a->nobjects] =
            (struct eeb_voc_object){.line = (int)XML_GetCurrentLineNumber(st->parser)};
        st->have = 0;
    }
    st->field = field_here(st);
    st->ntext = 0;
}

static void XMLCALL on_text(void *ctx, const XML_Char *s, int len)
{
    struct xml_state *st = ctx;
    if (st->field == F_NONE)
        return;
    if (st->ntext + (size_t)len >= MAX_TEXT)
        return fail(st, "an element's text is too long");
    memcpy(st->text + st->ntext, s, (size_t)len);
    st->ntext += (size_t)len;
}

/* The collected text without the white space around it. */
static char *stripped_text(struct xml_state *st)
{
    char *s = st->text, *e = st->text + st->ntext;
    while (isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    return s;
}

/* s as a number filling it all, or NAN. */
static double number(const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    return end == s || *end || errno || !isfinite(v) ? NAN : v;
}

static void take_field(struct xml_state *st)
{
    struct eeb_voc_annotation *a = st->a;
    struct eeb_voc_object *o = a->nobjects < st->capacity ? &a->objects[a->nobjects] : NULL;
    char *s = stripped_text(st);
    if (st->field == F_FILENAME) {
        snprintf(a->filename, sizeof a->filename, "%s", s);
        return;
    }
    if (st->field == F_NAME) {
        size_t len = strlen(s);
        char why[512];
        if (len == 0 || len > EEB_VOC_MAX_NAME)
            return fail(st, "an object's <name> is empty or longer than 63 bytes");
        if (eeb_class_name_check(s, len, NULL, why, sizeof why) != EEB_OK)
            return fail(st, why);
        memcpy(o->name, s, len + 1);
        st->have |= 1u << F_NAME;
        return;
    }
    if (st->field == F_DIFFICULT) {
        /* the devkit's strcmp(difficult, '1') reads anything but 1 as 0:
         * an exporter's <difficult/> rightly, its "true" wrongly */
        if (*s && strcmp(s, "0") != 0 && strcmp(s, "1") != 0) {
            char what[MAX_TEXT + 64];
            snprintf(what, sizeof what, "<difficult> is '%s', not 0, 1 or empty", s);
            return fail(st, what);
        }
        o->difficult = strcmp(s, "1") == 0;
        return;
    }
    int size = st->field == F_WIDTH || st->field == F_HEIGHT || st->field == F_DEPTH;
    if (size && !*s)
        return; /* an exporter's <depth/>: not given, as if absent */
    double v = number(s);
    if (isnan(v)) {
        char what[MAX_TEXT + 96]; /* the element is the innermost one open */
        snprintf(what, sizeof what, "a number was expected in <%s>, not '%s'",
                 st->stack[st->depth - 1], s);
        return fail(st, what);
    }
    if (size && !(v >= 0 && v <= VOC_MAX_SIZE && v == floor(v))) {
        char what[MAX_TEXT + 96];
        snprintf(what, sizeof what, "<%s> %s is not a whole number of 0 to %d",
                 st->stack[st->depth - 1], s, VOC_MAX_SIZE);
        return fail(st, what);
    }
    switch (st->field) {
    case F_WIDTH: a->width = (int)v; break;
    case F_HEIGHT: a->height = (int)v; break;
    case F_DEPTH: a->depth = (int)v; break;
    case F_X0: o->box.x0 = v; break;
    case F_Y0: o->box.y0 = v; break;
    case F_X1: o->box.x1 = v; break;
    case F_Y1: o->box.y1 = v; break;
    default: return;
    }
    st->have |= 1u << st->field;
}

static void XMLCALL on_end(void *ctx, const XML_Char *name)
{
    (void)name;
    struct xml_state *st = ctx;
    if (st->field != F_NONE)
        take_field(st);
    st->field = F_NONE;
    if (st->status == EEB_OK && at(st, "object", NULL, NULL)) {
        const unsigned box = 1u << F_X0 | 1u << F_Y0 | 1u << F_X1 | 1u << F_Y1;
        const struct eeb_voc_box *b = &st->a->objects[st->a->nobjects].box;
        if (!(st->have & 1u << F_NAME))
            return fail(st, "an <object> without <name>");
        if ((st->have & box) != box)
            return fail(st, "an <object> without a whole <bndbox> (xmin, ymin, xmax, ymax)");
        if (b->x1 < b->x0 || b->y1 < b->y0)
            return fail(st, "an <object> whose bndbox has xmax < xmin or ymax < ymin");
        st->a->nobjects++;
    }
    free((void *)st->stack[--st->depth]);
}

int eeb_voc_read_annotation(const char *path, struct eeb_voc_annotation *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    char *xml;
    size_t len;
    int rc = eeb_read_file(path, MAX_XML_BYTES, &xml, &len, err, errlen);
    if (rc)
        return rc;
    struct xml_state st = {.path = path, .a = out, .err = err, .errlen = errlen};
    st.parser = XML_ParserCreate(NULL);
    if (!st.parser) {
        free(xml);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    XML_SetUserData(st.parser, &st);
    XML_SetElementHandler(st.parser, on_start, on_end);
    XML_SetCharacterDataHandler(st.parser, on_text);
    if (XML_Parse(st.parser, xml, (int)len, XML_TRUE) == XML_STATUS_ERROR && st.status == EEB_OK)
        st.status = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%lu: %s", path,
                             (unsigned long)XML_GetCurrentLineNumber(st.parser),
                             XML_ErrorString(XML_GetErrorCode(st.parser)));
    while (st.depth > 0)
        free((void *)st.stack[--st.depth]);
    XML_ParserFree(st.parser);
    free(xml);
    if (st.status)
        eeb_voc_annotation_free(out);
    return st.status;
}

void eeb_voc_annotation_free(struct eeb_voc_annotation *a)
{
    free(a->objects);
    memset(a, 0, sizeof *a);
}

/* ---- image sets ---- */

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int find(char *const *sorted, int n, const char *key)
{
    char *const *hit = bsearch(&key, sorted, (size_t)n, sizeof *sorted, by_string);
    return hit ? (int)(hit - sorted) : -1;
}

void eeb_voc_image_set_free(struct eeb_voc_image_set *s)
{
    eeb_lines_free(&s->file);
    free(s->ids), free(s->lines), free(s->sorted);
    memset(s, 0, sizeof *s);
}

int eeb_voc_image_set_has(const struct eeb_voc_image_set *s, const char *id)
{
    return find(s->sorted, s->n, id) >= 0;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* Appends s (copied) to a growing array of strings. */
static int push_string(char ***v, int *n, const char *s)
{
    if ((*n & (*n - 1)) == 0) { /* 0 or a power of two: full */
        char **g = realloc(*v, (size_t)(*n ? 2 * *n : 1) * sizeof *g);
        if (!g)
            return EEB_ENOMEM;
        *v = g;
    }
    if (!((*v)[*n] = strdup(s)))
        return EEB_ENOMEM;
    (*n)++;
    return EEB_OK;
}

/* The next white-space separated word of *p, NUL-terminated in place. */
static char *word(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return NULL;
    char *e = s + strcspn(s, " \t");
    *p = *e ? e + 1 : e;
    *e = '\0';
    return s;
}

/* One line: an id, and a per-class list's flag if there is one. */
static int set_line(struct eeb_voc_image_set *s, char *text, int line, char *err, size_t errlen)
{
    char quoted[112];
    snprintf(quoted, sizeof quoted, "%.100s", text);
    char *p = text, *id = word(&p), *flag = word(&p), *more = word(&p);
    if (!id)
        return EEB_OK; /* blank */
    if (more ||
        (flag && strcmp(flag, "1") != 0 && strcmp(flag, "-1") != 0 && strcmp(flag, "0") != 0))
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: '%s' is not 'image_id' or 'image_id 1|-1|0'", s->path, line,
                        quoted);
    size_t len = strlen(id);
    if (len > EEB_SHARD_MAX_ID || strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0)
        return eeb_errf(err, errlen, EEB_EFORMAT,
                        "%s:%d: '%.100s' is not an image id (no '/', at most %d bytes)", s->path,
                        line, id, EEB_SHARD_MAX_ID);
    s->ids[s->n] = id;
    s->lines[s->n++] = line;
    return EEB_OK;
}

/* Sorts the ids for lookups; an id listed twice is an error at its second line. */
static int set_index(struct eeb_voc_image_set *s, char *err, size_t errlen)
{
    memcpy(s->sorted, s->ids, (size_t)s->n * sizeof *s->ids);
    qsort(s->sorted, (size_t)s->n, sizeof *s->sorted, by_string);
    for (int i = 1; i < s->n; i++) {
        if (strcmp(s->sorted[i - 1], s->sorted[i]) != 0)
            continue;
        int first = -1, second = -1; /* the lines, in the file's order */
        for (int k = 0; k < s->n && second < 0; k++)
            if (strcmp(s->ids[k], s->sorted[i]) == 0)
                *(first < 0 ? &first : &second) = s->lines[k];
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: image '%s' is listed twice (line %d)",
                        s->path, second, s->sorted[i], first);
    }
    return EEB_OK;
}

int eeb_voc_image_set_read(const char *path, struct eeb_voc_image_set *out, char *err,
                           size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct eeb_lines *f = &out->file;
    int rc = eeb_lines_read(f, path, MAX_SET_BYTES, err, errlen);
    if (rc)
        return rc;
    out->path = f->path;
    size_t cap = (size_t)f->n + 1;
    out->ids = malloc(cap * sizeof *out->ids);
    out->lines = malloc(cap * sizeof *out->lines);
    out->sorted = malloc(cap * sizeof *out->sorted);
    if (!out->ids || !out->lines || !out->sorted)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    for (int i = 0; rc == EEB_OK && i < f->n; i++)
        rc = set_line(out, f->text[i], f->lineno[i], err, errlen);
    if (rc == EEB_OK && out->n == 0)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: no image ids", path);
    if (rc == EEB_OK)
        rc = set_index(out, err, errlen);
    if (rc)
        eeb_voc_image_set_free(out);
    return rc;
}

/* The folder that holds dir when dir is a folder named Annotations (with
 * a trailing '/', or "" for the current folder), in top; else 0. */
static int layout_top(const char *dir, char *top, size_t len)
{
    struct stat sb;
    if (snprintf(top, len, "%s", dir) >= (int)len || stat(top, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return 0;
    size_t n = strlen(top);
    while (n > 1 && top[n - 1] == '/')
        top[--n] = '\0';
    char *slash = strrchr(top, '/');
    if (strcmp(slash ? slash + 1 : top, "Annotations") != 0)
        return 0;
    if (slash)
        slash[1] = '\0';
    else
        top[0] = '\0';
    return 1;
}

/* A per-class list, "<class>_<set>.txt", of a set that is in names. */
static int per_class_list(const char *name, char *const *names, int n)
{
    const char *us = strrchr(name, '_');
    return us && us != name && find(names, n, us + 1) >= 0;
}

/*
 * The set files of main (its .txt files, sorted), without the per-class
 * lists of sets that are there, unless they are all there is: what to
 * offer a user who must choose one.
 */
static int set_files(const char *main, char ***names, int *n)
{
    char **all = NULL;
    int nall = 0, rc = EEB_OK;
    *names = NULL, *n = 0;
    DIR *d = opendir(main);
    if (!d)
        return EEB_OK;
    const struct dirent *e;
    while (rc == EEB_OK && (e = readdir(d)))
        if (has_suffix(e->d_name, ".txt"))
            rc = push_string(&all, &nall, e->d_name);
    closedir(d);
    if (rc == EEB_OK && nall > 1) /* qsort takes no NULL, even for 0 items */
        qsort(all, (size_t)nall, sizeof *all, by_string);
    for (int i = 0; rc == EEB_OK && i < nall; i++)
        if (!per_class_list(all[i], all, nall))
            rc = push_string(names, n, all[i]);
    if (rc == EEB_OK && *n == 0) { /* per-class lists alone: offer them */
        *names = all, *n = nall;
        return EEB_OK;
    }
    eeb_voc_names_free(all, nall);
    if (rc != EEB_OK) {
        eeb_voc_names_free(*names, *n);
        *names = NULL, *n = 0;
    }
    return rc;
}

int eeb_voc_default_image_set(const char *dir, char *path, size_t len, char *err, size_t errlen)
{
    char top[4096], main[4200];
    if (!layout_top(dir, top, sizeof top))
        return 0;
    snprintf(main, sizeof main, "%sImageSets/Main", top);
    struct stat sb;
    if (snprintf(path, len, "%s/test.txt", main) >= (int)len)
        return 0;
    if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        return 1;
    path[0] = '\0';
    char **names;
    int n, rc = set_files(main, &names, &n);
    if (rc)
        return eeb_errf(err, errlen, rc, "%s: out of memory", main);
    if (n == 0)
        return 0; /* no ImageSets/Main, or no list in it: no set to choose */
    char list[1024];
    eeb_voc_names_join(names, n, list, sizeof list);
    eeb_voc_names_free(names, n);
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "%s has no test.txt, and every annotation in %s would mix the splits: name "
                    "the image set to score with --image-set FILE (there: %s)",
                    main, dir, list);
}

/* ---- ground truth ---- */

int eeb_voc_image_index(const struct eeb_voc_truth_set *t, const char *id)
{
    return find(t->images, t->nimages, id);
}

int eeb_voc_class_index(const struct eeb_voc_truth_set *t, const char *name)
{
    return find(t->classes, t->nclasses, name);
}

void eeb_voc_truth_free(struct eeb_voc_truth_set *t)
{
    for (int i = 0; i < t->nimages; i++)
        free(t->images[i]);
    for (int c = 0; c < t->nclasses; c++) {
        free(t->classes[c]);
        if (t->truth)
            free(t->truth[c]);
    }
    free(t->images), free(t->classes), free(t->ntruth), free(t->truth), free(t->image_set);
    memset(t, 0, sizeof *t);
}

void eeb_voc_names_free(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void eeb_voc_names_join(char *const *names, int n, char *out, size_t len)
{
    size_t used = 0;
    snprintf(out, len, "%s", n ? "" : "none");
    for (int k = 0; k < n; k++) {
        size_t add = strlen(names[k]) + (k ? 2 : 0);
        if (used + add + sizeof ", ..." > len) { /* room for ", ..." was kept */
            snprintf(out + used, len - used, "%s", k ? ", ..." : "...");
            return;
        }
        used += (size_t)snprintf(out + used, len - used, "%s%s", k ? ", " : "", names[k]);
    }
}

/*
 * A class name's place in a sorted list of names, added (copied) if it is
 * new; -1 when out of memory.  How both the ground truth and the classes
 * of a directory collect the object names of annotations.
 */
static int class_of(char ***names, int *n, const char *name)
{
    int lo = 0, hi = *n;
    while (lo < hi) {
        int mid = (lo + hi) / 2, c = strcmp((*names)[mid], name);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (push_string(names, n, name) != EEB_OK)
        return -1;
    char *added = (*names)[*n - 1];
    memmove(*names + lo + 1, *names + lo, (size_t)(*n - 1 - lo) * sizeof **names);
    (*names)[lo] = added;
    return lo;
}

/* An object as it is read, before the images are sorted: its image id
 * and class name point into the set's own strings, which sorting does
 * not move. */
struct pending {
    const char *image, *cls;
    int difficult;
    struct eeb_voc_box box;
};

struct gather {
    struct pending *p;
    int n, cap;
};

static int gather_add(struct gather *g, const char *image, const char *cls, int difficult,
                      struct eeb_voc_box box)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        struct pending *p = realloc(g->p, (size_t)cap * sizeof *p);
        if (!p)
            return EEB_ENOMEM;
        g->p = p, g->cap = cap;
    }
    g->p[g->n++] = (struct pending){image, cls, difficult, box};
    return EEB_OK;
}

/* Sorts the images and classes, then files every gathered object under
 * its class, in the order gathered. */
static int index_truth(struct eeb_voc_truth_set *t, const struct gather *g, const char *src,
                       char *err, size_t errlen)
{
    if (t->nimages > 1) /* qsort takes no NULL, even for 0 items */
        qsort(t->images, (size_t)t->nimages, sizeof *t->images, by_string);
    for (int i = 1; i < t->nimages; i++)
        if (strcmp(t->images[i - 1], t->images[i]) == 0)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: image id '%s' appears twice", src,
                            t->images[i]);
    if (t->nclasses > 1)
        qsort(t->classes, (size_t)t->nclasses, sizeof *t->classes, by_string);
    t->ntruth = calloc((size_t)t->nclasses + 1, sizeof *t->ntruth);
    t->truth = calloc((size_t)t->nclasses + 1, sizeof *t->truth);
    if (!t->ntruth || !t->truth)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", src);
    for (int i = 0; i < g->n; i++)
        t->ntruth[eeb_voc_class_index(t, g->p[i].cls)]++;
    for (int c = 0; c < t->nclasses; c++)
        if (!(t->truth[c] = malloc((size_t)(t->ntruth[c] + 1) * sizeof **t->truth)))
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", src);
    memset(t->ntruth, 0, (size_t)t->nclasses * sizeof *t->ntruth);
    for (int i = 0; i < g->n; i++) {
        const struct pending *p = &g->p[i];
        int c = eeb_voc_class_index(t, p->cls);
        t->truth[c][t->ntruth[c]++] =
            (struct eeb_voc_truth){eeb_voc_image_index(t, p->image), p->difficult, p->box};
    }
    return EEB_OK;
}

/* The ids of every .xml file in dir, sorted. */
static int xml_ids(const char *dir, char ***ids, int *n, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", dir, strerror(errno));
    int rc = EEB_OK;
    const struct dirent *e;
    while (rc == EEB_OK && (e = readdir(d)))
        if (has_suffix(e->d_name, ".xml") && (rc = push_string(ids, n, e->d_name)) == EEB_OK)
            (*ids)[*n - 1][strlen(e->d_name) - 4] = '\0';
    closedir(d);
    if (rc)
        return eeb_errf(err, errlen, rc, "%s: out of memory", dir);
    if (*n == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no .xml annotation files", dir);
    qsort(*ids, (size_t)*n, sizeof **ids, by_string);
    return EEB_OK;
}

/* What to do with each annotation read: its image id and contents. */
typedef int (*annotation_fn)(void *arg, const char *id, const struct eeb_voc_annotation *a);

/*
 * Reads dir/<id>.xml for every id of set (each must exist), or for every
 * .xml file in dir, and hands each to fn (which returns EEB_OK or
 * EEB_ENOMEM).  skip_bad passes over files that do not read; *nread
 * counts those that did.
 */
static int each_annotation(const char *dir, const struct eeb_voc_image_set *set, int skip_bad,
                           annotation_fn fn, void *arg, int *nread, char *err, size_t errlen)
{
    char **all = NULL;
    int nall = 0, rc = set ? EEB_OK : xml_ids(dir, &all, &nall, err, errlen);
    int n = set ? set->n : nall;
    *nread = 0;
    for (int i = 0; rc == EEB_OK && i < n; i++) {
        const char *id = set ? set->ids[i] : all[i];
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.xml", dir, id);
        struct stat sb;
        if (set && stat(path, &sb) != 0) {
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: image '%s' has no annotation %s (%s)",
                          set->path, set->lines[i], id, path, strerror(errno));
            break;
        }
        struct eeb_voc_annotation a;
        if ((rc = eeb_voc_read_annotation(path, &a, err, errlen)) != EEB_OK) {
            if (skip_bad && rc != EEB_ENOMEM)
                rc = EEB_OK;
            continue;
        }
        (*nread)++;
        if ((rc = fn(arg, id, &a)) != EEB_OK)
            eeb_errf(err, errlen, rc, "%s: out of memory", path);
        eeb_voc_annotation_free(&a);
    }
    eeb_voc_names_free(all, nall);
    return rc;
}

struct truth_reader {
    struct eeb_voc_truth_set *t;
    struct gather *g;
};

/* One annotation's image and objects into the ground truth. */
static int add_annotation(void *arg, const char *id, const struct eeb_voc_annotation *a)
{
    struct truth_reader *r = arg;
    struct eeb_voc_truth_set *t = r->t;
    int rc = push_string(&t->images, &t->nimages, id);
    for (int o = 0; rc == EEB_OK && o < a->nobjects; o++) {
        int c = class_of(&t->classes, &t->nclasses, a->objects[o].name);
        rc = c < 0 ? EEB_ENOMEM
                   : gather_add(r->g, t->images[t->nimages - 1], t->classes[c],
                                a->objects[o].difficult, a->objects[o].box);
    }
    return rc;
}

static int load_annotations(const char *dir, const struct eeb_voc_image_set *set,
                            struct eeb_voc_truth_set *t, struct gather *g, char *err, size_t errlen)
{
    struct truth_reader r = {t, g};
    int nread;
    return each_annotation(dir, set, 0, add_annotation, &r, &nread, err, errlen);
}

struct class_reader {
    char **names;
    int n;
};

static int add_classes(void *arg, const char *id, const struct eeb_voc_annotation *a)
{
    (void)id;
    struct class_reader *r = arg;
    for (int o = 0; o < a->nobjects; o++)
        if (class_of(&r->names, &r->n, a->objects[o].name) < 0)
            return EEB_ENOMEM;
    return EEB_OK;
}

int eeb_voc_annotation_classes(const char *dir, int skip_bad, char ***names, int *n, int *files,
                               char *err, size_t errlen)
{
    struct class_reader r = {0};
    int rc = each_annotation(dir, NULL, skip_bad, add_classes, &r, files, err, errlen);
    if (rc) {
        eeb_voc_names_free(r.names, r.n);
        r.names = NULL, r.n = 0;
    }
    *names = r.names, *n = r.n;
    return rc;
}

/* A shard's records (those of set, if not NULL) and its header's classes. */
static int load_shard(const char *path, const struct eeb_voc_image_set *set,
                      struct eeb_voc_truth_set *t, struct gather *g, char *err, size_t errlen)
{
    struct eeb_shard *s;
    int rc = eeb_shard_open(&s, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *info = eeb_shard_info(s);
    if (eeb_task_get(info->task)->prediction != EEB_PREDICTION_BOXES) {
        eeb_shard_close(s);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: a %s shard, not a detection one", path,
                        eeb_task_name(info->task));
    }
    for (int c = 0; c < info->classes && rc == EEB_OK; c++)
        rc = push_string(&t->classes, &t->nclasses, info->names[c]);
    const struct eeb_record *r;
    while (rc == EEB_OK && (rc = eeb_shard_next(s, &r, err, errlen)) == 1) {
        rc = EEB_OK;
        if (set && !eeb_voc_image_set_has(set, r->id))
            continue;
        if ((rc = push_string(&t->images, &t->nimages, r->id)))
            break;
        for (int b = 0; b < r->nboxes && rc == EEB_OK; b++) {
            const struct eeb_box *x = &r->boxes[b];
            struct eeb_voc_box box = {x->x0 + 1, x->y0 + 1, x->x1, x->y1};
            rc = gather_add(g, t->images[t->nimages - 1], t->classes[x->cls], x->difficult, box);
        }
    }
    eeb_shard_close(s);
    if (rc == EEB_ENOMEM)
        return eeb_errf(err, errlen, rc, "%s: out of memory", path);
    return rc;
}

/* Every image of the set must be in the shard. */
static int check_set_in_shard(const struct eeb_voc_truth_set *t,
                              const struct eeb_voc_image_set *set, const char *shard, char *err,
                              size_t errlen)
{
    for (int i = 0; i < set->n; i++)
        if (eeb_voc_image_index(t, set->ids[i]) < 0)
            return eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: image '%s' is not in the shard %s",
                            set->path, set->lines[i], set->ids[i], shard);
    return EEB_OK;
}

int eeb_voc_truth_load_set(const char *dir_or_shard, const struct eeb_voc_image_set *set,
                           struct eeb_voc_truth_set *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(dir_or_shard, &sb) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", dir_or_shard, strerror(errno));
    struct gather g = {0};
    int dir = S_ISDIR(sb.st_mode);
    int rc = dir ? load_annotations(dir_or_shard, set, out, &g, err, errlen)
                 : load_shard(dir_or_shard, set, out, &g, err, errlen);
    if (rc == EEB_OK)
        rc = index_truth(out, &g, dir_or_shard, err, errlen);
    if (rc == EEB_OK && set && !dir)
        rc = check_set_in_shard(out, set, dir_or_shard, err, errlen);
    if (rc == EEB_OK && set && !(out->image_set = strdup(set->path)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", set->path);
    free(g.p);
    if (rc)
        eeb_voc_truth_free(out);
    return rc;
}

int eeb_voc_truth_load(const char *dir_or_shard, struct eeb_voc_truth_set *out, char *err,
                       size_t errlen)
{
    return eeb_voc_truth_load_set(dir_or_shard, NULL, out, err, errlen);
}

/* ---- result files ---- */

int eeb_voc_read_results(const char *path, const struct eeb_voc_truth_set *t,
                         struct eeb_voc_detection **out, int *n, char *err, size_t errlen)
{
    *out = NULL, *n = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    char line[1024];
    int rc = EEB_OK, cap = 0;
    for (long lineno = 1; rc == EEB_OK && fgets(line, sizeof line, f); lineno++) {
        if (!strchr(line, '\n') && !feof(f)) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%ld: line longer than %zu bytes", path,
                          lineno, sizeof line - 2);
            break;
        }
        char id[256], extra[2];
        double v[5];
        int fields = sscanf(line, "%255s %lf %lf %lf %lf %lf %1s", id, &v[0], &v[1], &v[2], &v[3],
                            &v[4], extra);
        if (fields <= 0)
            continue; /* blank */
        if (fields != 6) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s:%ld: want 'image_id confidence xmin ymin xmax ymax'", path, lineno);
            break;
        }
        int image = eeb_voc_image_index(t, id);
        if (image < 0) {
            if (t->image_set)
                rc = eeb_errf(err, errlen, EEB_EINVAL,
                              "%s:%ld: image '%s' is not in the image set %s", path, lineno, id,
                              t->image_set);
            else
                rc = eeb_errf(err, errlen, EEB_EINVAL,
                              "%s:%ld: image '%s' is not in the ground truth", path, lineno, id);
            break;
        }
        static const char *const field[5] = {"confidence", "xmin", "ymin", "xmax", "ymax"};
        for (int i = 0; i < 5 && rc == EEB_OK; i++)
            if (!isfinite(v[i]))
                rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%ld: %s is %g, not a finite number",
                              path, lineno, field[i], v[i]);
        if (rc)
            break;
        if (*n == cap) {
            cap = cap ? 2 * cap : 256;
            struct eeb_voc_detection *d = realloc(*out, (size_t)cap * sizeof *d);
            if (!d) {
                rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
                break;
            }
            *out = d;
        }
        (*out)[(*n)++] = (struct eeb_voc_detection){image, v[0], {v[1], v[2], v[3], v[4]}};
    }
    if (rc == EEB_OK && ferror(f))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: read failed", path);
    fclose(f);
    if (rc)
        free(*out), *out = NULL, *n = 0;
    return rc;
}
