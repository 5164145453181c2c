/*
 * topk_csv.c - top-k accuracy of a CSV prediction file against a
 * classification or video shard (the format is in eeb_metrics.h).
 */
#include "eeb_metrics.h"

#include "common/eeb_common.h"
#include "eeb_shard.h"
#include "eeb_task_ops.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE 4096

struct item {
    char *id;
    int label;
    int seen;
};

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct item *)a)->id, ((const struct item *)b)->id);
}

static void free_items(struct item *items, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        free(items[i].id);
    free(items);
}

/* Every record's id and label, sorted by id; the pixels are not kept. */
static int read_items(const char *path, struct eeb_shard *s, struct item **out, uint64_t *count,
                      char *err, size_t errlen)
{
    uint64_t n = eeb_shard_info(s)->count;
    struct item *items = calloc(n ? n : 1, sizeof *items);
    if (!items)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    const struct eeb_record *r;
    uint64_t got = 0;
    int rc;
    while ((rc = eeb_shard_next(s, &r, err, errlen)) == 1 && got < n) {
        items[got] = (struct item){strdup(r->id), r->label, 0};
        if (!items[got++].id) {
            free_items(items, got);
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
        }
    }
    if (rc < 0) {
        free_items(items, got);
        return rc;
    }
    qsort(items, got, sizeof *items, by_id);
    for (uint64_t i = 1; i < got; i++)
        if (strcmp(items[i - 1].id, items[i].id) == 0) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: record id '%s' appears twice", path,
                          items[i].id);
            free_items(items, got);
            return rc;
        }
    *out = items;
    *count = got;
    return EEB_OK;
}

/* A class by name, else by 0-based index; -1 if neither. */
static int class_of(const struct eeb_shard_info *info, const char *field)
{
    for (int c = 0; c < info->classes; c++)
        if (strcmp(info->names[c], field) == 0)
            return c;
    char *end;
    errno = 0;
    long v = strtol(field, &end, 10);
    if (end == field || *end || errno || v < 0 || v >= info->classes)
        return -1;
    return (int)v;
}

static void trim(char **s)
{
    while (**s == ' ' || **s == '\t')
        (*s)++;
    char *e = *s + strlen(*s);
    while (e > *s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        *--e = '\0';
}

/* One line: the item's id, then its ranked classes. */
static int score_line(char *line, const char *path, long lineno, const struct eeb_shard_info *info,
                      struct item *items, uint64_t n, struct eeb_topk *t, char *err, size_t errlen)
{
    char *rest = line, *field = strsep(&rest, ",");
    trim(&field);
    struct item key = {.id = field}, *it = bsearch(&key, items, n, sizeof *items, by_id);
    if (!it)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s:%ld: id '%s' is not in the shard", path,
                        lineno, field);
    if (it->seen)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s:%ld: a second line for id '%s'", path, lineno,
                        field);
    it->seen = 1;
    int ranked[EEB_TOPK_MAX], nranked = 0;
    for (int col = 2; (field = strsep(&rest, ",")); col++) {
        trim(&field);
        int c = class_of(info, field);
        if (c < 0)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s:%ld: field %d: '%s' is neither a class name nor an index below %d",
                            path, lineno, col, field, info->classes);
        if (nranked < EEB_TOPK_MAX)
            ranked[nranked++] = c;
    }
    eeb_topk_add(t, it->label, ranked, nranked);
    return EEB_OK;
}

int eeb_topk_eval_csv(const char *shard_path, const char *csv_path, struct eeb_topk *out,
                      uint64_t *missing, char *err, size_t errlen)
{
    *out = (struct eeb_topk){0};
    *missing = 0;
    struct eeb_shard *s;
    int rc = eeb_shard_open(&s, shard_path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *info = eeb_shard_info(s);
    if (eeb_task_get(info->task)->prediction != EEB_PREDICTION_RANKED) {
        eeb_shard_close(s);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: a detection shard has no top-k accuracy",
                        shard_path);
    }
    struct item *items = NULL;
    uint64_t n = 0;
    if ((rc = read_items(shard_path, s, &items, &n, err, errlen))) {
        eeb_shard_close(s);
        return rc;
    }
    FILE *f;
    rc = eeb_open_input(csv_path, &f, err, errlen);
    char line[MAX_LINE];
    for (long lineno = 1; rc == EEB_OK && f && fgets(line, sizeof line, f); lineno++) {
        if (!strchr(line, '\n') && !feof(f))
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s:%ld: line longer than %d bytes", csv_path,
                          lineno, MAX_LINE - 2);
        else if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        else if (lineno == 1 && strncmp(line, "id,", 3) == 0)
            continue;
        else
            rc = score_line(line, csv_path, lineno, info, items, n, out, err, errlen);
    }
    if (f && rc == EEB_OK && ferror(f))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: read failed", csv_path);
    if (f)
        fclose(f);
    for (uint64_t i = 0; rc == EEB_OK && i < n; i++)
        if (!items[i].seen) {
            (*missing)++;
            eeb_topk_add(out, items[i].label, NULL, 0);
        }
    free_items(items, n);
    eeb_shard_close(s);
    return rc;
}
