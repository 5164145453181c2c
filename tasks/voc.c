/*
 * voc.c - Pascal VOC annotation XML (expat), devkit result files, and the
 * detection ground truth built from either VOC annotations or a shard.
 */
#include "eeb_voc.h"

#include "eeb_common.h"
#include "eeb_shard.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <expat.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_XML_BYTES (4u << 20)
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
        a->objects[a->nobjects] = (struct eeb_voc_object){0};
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
        if (len == 0 || len > EEB_VOC_MAX_NAME)
            return fail(st, "an object's <name> is empty or longer than 63 bytes");
        memcpy(o->name, s, len + 1);
        st->have |= 1u << F_NAME;
        return;
    }
    double v = number(s);
    if (isnan(v)) {
        char what[MAX_TEXT + 96]; /* the element is the innermost one open */
        snprintf(what, sizeof what, "a number was expected in <%s>, not '%s'",
                 st->stack[st->depth - 1], s);
        return fail(st, what);
    }
    int size = st->field == F_WIDTH || st->field == F_HEIGHT || st->field == F_DEPTH;
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
    case F_DIFFICULT: o->difficult = v != 0; break;
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

/* ---- ground truth ---- */

static int by_string(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int find(char *const *sorted, int n, const char *key)
{
    char *const *hit = bsearch(&key, sorted, (size_t)n, sizeof *sorted, by_string);
    return hit ? (int)(hit - sorted) : -1;
}

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
    free(t->images), free(t->classes), free(t->ntruth), free(t->truth);
    memset(t, 0, sizeof *t);
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

/* An object as it is read, before the images and classes are sorted:
 * its image id and class name point into the set's own strings, which
 * sorting does not move. */
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
    qsort(t->images, (size_t)t->nimages, sizeof *t->images, by_string);
    for (int i = 1; i < t->nimages; i++)
        if (strcmp(t->images[i - 1], t->images[i]) == 0)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: image id '%s' appears twice", src,
                            t->images[i]);
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

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && strcmp(s + n - m, suffix) == 0;
}

static int load_annotations(const char *dir, struct eeb_voc_truth_set *t, struct gather *g,
                            char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", dir, strerror(errno));
    int rc = EEB_OK;
    const struct dirent *e;
    while (rc == EEB_OK && (e = readdir(d)))
        if (has_suffix(e->d_name, ".xml"))
            rc = push_string(&t->images, &t->nimages, e->d_name);
    closedir(d);
    if (rc)
        return eeb_errf(err, errlen, rc, "%s: out of memory", dir);
    if (t->nimages == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no .xml annotation files", dir);
    qsort(t->images, (size_t)t->nimages, sizeof *t->images, by_string);
    for (int i = 0; i < t->nimages && rc == EEB_OK; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, t->images[i]);
        t->images[i][strlen(t->images[i]) - 4] = '\0'; /* the id: no .xml */
        struct eeb_voc_annotation a;
        if ((rc = eeb_voc_read_annotation(path, &a, err, errlen)))
            break;
        for (int o = 0; o < a.nobjects && rc == EEB_OK; o++) {
            int c = -1;
            for (int k = 0; k < t->nclasses && c < 0; k++)
                if (strcmp(t->classes[k], a.objects[o].name) == 0)
                    c = k;
            if (c < 0 && (rc = push_string(&t->classes, &t->nclasses, a.objects[o].name)))
                break;
            c = c < 0 ? t->nclasses - 1 : c;
            rc = gather_add(g, t->images[i], t->classes[c], a.objects[o].difficult,
                            a.objects[o].box);
        }
        eeb_voc_annotation_free(&a);
        if (rc == EEB_ENOMEM)
            eeb_errf(err, errlen, rc, "%s: out of memory", path);
    }
    return rc;
}

static int load_shard(const char *path, struct eeb_voc_truth_set *t, struct gather *g, char *err,
                      size_t errlen)
{
    struct eeb_shard *s;
    int rc = eeb_shard_open(&s, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *info = eeb_shard_info(s);
    if (info->task != EEB_TASK_DET) {
        eeb_shard_close(s);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: a %s shard, not a detection one", path,
                        eeb_task_name(info->task));
    }
    for (int c = 0; c < info->classes && rc == EEB_OK; c++)
        rc = push_string(&t->classes, &t->nclasses, info->names[c]);
    const struct eeb_record *r;
    while (rc == EEB_OK && (rc = eeb_shard_next(s, &r, err, errlen)) == 1) {
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

int eeb_voc_truth_load(const char *dir_or_shard, struct eeb_voc_truth_set *out, char *err,
                       size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct stat sb;
    if (stat(dir_or_shard, &sb) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", dir_or_shard, strerror(errno));
    struct gather g = {0};
    int rc = S_ISDIR(sb.st_mode) ? load_annotations(dir_or_shard, out, &g, err, errlen)
                                 : load_shard(dir_or_shard, out, &g, err, errlen);
    if (rc == EEB_OK)
        rc = index_truth(out, &g, dir_or_shard, err, errlen);
    free(g.p);
    if (rc)
        eeb_voc_truth_free(out);
    return rc;
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
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s:%ld: image '%s' is not in the ground truth",
                          path, lineno, id);
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
