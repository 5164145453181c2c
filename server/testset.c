/*
 * testset.c - the data sets the server holds.  At start each test set is
 * read once: its truth (labels, boxes) kept in memory by record id, to
 * judge predictions with, and its inputs copied without that truth, to
 * serve.  A fine-tune set is only named, by its digest; a base model is
 * named so too, and its network kept, to model a modeled run's device on.
 */
#include "server_int.h"

#include "fpga/net/eeb_model.h"

#include <stdlib.h>
#include <string.h>

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct eeb_srv_held_item *)a)->id,
                  ((const struct eeb_srv_held_item *)b)->id);
}

/* Keeps rec's truth in t->items[t->n]. */
static int hold(struct eeb_srv_testset *t, const struct eeb_record *rec, char *err, size_t errlen)
{
    struct eeb_srv_held_item *h = &t->items[t->n];
    memcpy(h->id, rec->id, sizeof h->id);
    h->index = rec->index, h->label = rec->label, h->nboxes = rec->nboxes;
    if (rec->nboxes) {
        if (!(h->boxes = malloc((size_t)rec->nboxes * sizeof *h->boxes)))
            return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        memcpy(h->boxes, rec->boxes, (size_t)rec->nboxes * sizeof *h->boxes);
    }
    t->n++;
    return EEB_OK;
}

int eeb_srv_testset_load(struct eeb_srv_testset *t, enum eeb_task task, const char *path,
                         const char *inputs_path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct eeb_shard *in;
    int rc = eeb_shard_open(&in, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *info = eeb_shard_info(in);
    struct eeb_shard_writer *w = NULL;
    t->task = task, t->classes = info->classes;
    if (info->task != task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s data, given as the %s test set", path,
                      eeb_task_name(info->task), eeb_task_name(task));
    else if (info->count == 0)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: no records", path);
    else if (!(t->items = calloc(info->count, sizeof *t->items)) ||
             !(t->inputs = strdup(inputs_path)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    else
        rc = eeb_shard_create(&w, inputs_path, info, err, errlen);
    const struct eeb_record *rec;
    struct eeb_record bare;
    int more;
    while (rc == EEB_OK && (more = eeb_shard_next(in, &rec, err, errlen)) != 0) {
        if (more < 0 || t->n == info->count) {
            rc = more < 0 ? more
                          : eeb_errf(err, errlen, EEB_EFORMAT,
                                     "%s: more records than "
                                     "its header says",
                                     path);
            break;
        }
        if ((rc = hold(t, rec, err, errlen)))
            break;
        bare.index = rec->index, bare.label = 0, bare.nboxes = 0, bare.pixels = rec->pixels;
        memcpy(bare.id, rec->id, sizeof bare.id);
        rc = eeb_shard_write(w, &bare, err, errlen);
    }
    if (w)
        rc = rc == EEB_OK ? eeb_shard_finish(w, err, errlen) : (eeb_shard_abort(w), rc);
    eeb_shard_close(in);
    if (rc == EEB_OK) {
        qsort(t->items, t->n, sizeof *t->items, by_id);
        for (size_t i = 1; i < t->n && rc == EEB_OK; i++)
            if (strcmp(t->items[i - 1].id, t->items[i].id) == 0)
                rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: record id '%s' appears twice", path,
                              t->items[i].id);
    }
    if (rc)
        eeb_srv_testset_free(t);
    return rc;
}

void eeb_srv_testset_free(struct eeb_srv_testset *t)
{
    for (size_t i = 0; t->items && i < t->n; i++)
        free(t->items[i].boxes);
    free(t->items);
    free(t->inputs);
    memset(t, 0, sizeof *t);
}

const struct eeb_srv_held_item *eeb_srv_testset_find(const struct eeb_srv_testset *t,
                                                     const char *id)
{
    struct eeb_srv_held_item key = {.index = 0};
    if (strlen(id) >= sizeof key.id)
        return NULL;
    snprintf(key.id, sizeof key.id, "%s", id);
    return bsearch(&key, t->items, t->n, sizeof *t->items, by_id);
}

int eeb_srv_finetune_set_name(struct eeb_srv_finetune_set *ft, enum eeb_task task, const char *path,
                              char *err, size_t errlen)
{
    struct eeb_shard *sh;
    int rc = eeb_shard_open(&sh, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *in = eeb_shard_info(sh);
    ft->items = in->count;
    if (in->task != task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s data, given as the %s fine-tune set",
                      path, eeb_task_name(in->task), eeb_task_name(task));
    eeb_shard_close(sh);
    return rc ? rc : eeb_sha256_file(path, ft->sha256, err, errlen);
}

int eeb_srv_base_model_load(struct eeb_srv_base_model *m, enum eeb_task task, const char *path,
                            char *err, size_t errlen)
{
    char *bytes = NULL;
    size_t len = 0;
    int rc = eeb_read_file(path, EEB_MODEL_MAX_BYTES, &bytes, &len, err, errlen), of = -1;
    if (rc == EEB_OK) /* the bytes hashed are the bytes decoded */
        rc = eeb_model_decode((const uint8_t *)bytes, len, path, &m->net, &of, err, errlen);
    if (rc == EEB_OK && of != (int)task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s is a %s model, given as the %s base model", path,
                      eeb_task_name((enum eeb_task)of), eeb_task_name(task));
    if (rc == EEB_OK)
        eeb_sha256(bytes, len, m->sha256);
    free(bytes);
    return rc;
}
