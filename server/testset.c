/*
 * testset.c - the data sets the server holds.  At start each test set is
 * read: its truth (labels, boxes) kept in memory by the name each item is
 * served under, to judge predictions with, and its inputs copied without
 * that truth, to serve.  The secret test set's items are served under
 * names keyed by the server's key and in their order, so that neither an
 * id (an imported Food-101 item is `apple_pie/102`) nor a place in the
 * file (an import's classes come in order) says a class; a practice set,
 * whose labels are public, keeps its ids and order.  A fine-tune set is only named, by its digest;
 * a base model is named so too, and its network kept, to model a modeled run's device on.
 */
#include "server_int.h"

#include "fpga/net/eeb_model.h"
#include "tasks/eeb_prediction.h"
#include "tasks/eeb_tasks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct eeb_srv_held_item *)a)->id,
                  ((const struct eeb_srv_held_item *)b)->id);
}

/* The pixels the inputs' copy is laid out with at once: a set larger than
 * this is read again for each part of its new order. */
#define LAYOUT_BYTES ((size_t)256 << 20)

/* The name item rec is served under: the secret set's a keyed digest of
 * its task and id (the same on every start of a server with this key, so
 * a run's predictions outlive a restart; nothing in it says the item's
 * class or place without the key), the practice set's its own id. */
static void served_id(const struct eeb_srv_testset *t, const uint8_t *key,
                      const struct eeb_record *rec, char out[EEB_SHARD_MAX_ID + 1])
{
    if (!key) {
        memcpy(out, rec->id, EEB_SHARD_MAX_ID + 1);
        return;
    }
    char text[EEB_SHARD_MAX_ID + 16], digest[EEB_SHA256_HEX];
    int n = snprintf(text, sizeof text, "%s/%s", eeb_task_name(t->task), rec->id);
    eeb_hmac_sha256(key, EEB_SRV_KEY_BYTES, text, (size_t)n, digest);
    snprintf(out, EEB_SHARD_MAX_ID + 1, "%.32s", digest);
}

/* Pass one: every item's truth held under its served name; *order[p] says
 * where the item at place p of the file goes in the served copy. */
static int hold_all(struct eeb_srv_testset *t, struct eeb_shard *in, const uint8_t *key,
                    const char *path, uint64_t **order, char *err, size_t errlen)
{
    const struct eeb_shard_info *info = eeb_shard_info(in);
    const struct eeb_record *rec;
    int more, rc = EEB_OK;
    while ((more = eeb_shard_next(in, &rec, err, errlen)) > 0) {
        if (t->n == info->count)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: more records than its header says",
                            path);
        struct eeb_srv_held_item *h = &t->items[t->n];
        served_id(t, key, rec, h->id);
        h->index = t->n, h->label = rec->label, h->nboxes = rec->nboxes;
        if (rec->nboxes && !(h->boxes = malloc((size_t)rec->nboxes * sizeof *h->boxes)))
            return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        if (rec->nboxes)
            memcpy(h->boxes, rec->boxes, (size_t)rec->nboxes * sizeof *h->boxes);
        t->n++;
    }
    if (more < 0)
        return more;
    /* served in the order of their names: the practice set's as in its
     * file, the secret set's in an order the key alone tells */
    if (key)
        qsort(t->items, t->n, sizeof *t->items, by_id);
    if (!(*order = malloc((t->n + 1) * sizeof **order)))
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    for (size_t i = 0; i < t->n; i++) {
        (*order)[t->items[i].index] = i;
        t->items[i].index = i;
    }
    if (!key)
        qsort(t->items, t->n, sizeof *t->items, by_id);
    for (size_t i = 1; i < t->n && rc == EEB_OK; i++)
        if (strcmp(t->items[i - 1].id, t->items[i].id) == 0)
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: record id '%s' appears twice", path,
                          t->items[i].id);
    return rc;
}

/* Pass two: the inputs written to w in their served order, under their
 * served names, labels and boxes stripped; a part of the order at a time,
 * each read from the whole file. */
static int write_inputs(const struct eeb_srv_testset *t, struct eeb_shard *in,
                        const uint64_t *order, struct eeb_shard_writer *w, char *err, size_t errlen)
{
    size_t px = eeb_shard_pixels(eeb_shard_info(in)), part = LAYOUT_BYTES / (px ? px : 1);
    part = part < 1 ? 1 : part > t->n ? t->n : part;
    struct eeb_record *held = calloc(part, sizeof *held);
    uint8_t *pixels = malloc(part * px + 1);
    char(*ids)[EEB_SHARD_MAX_ID + 1] = calloc(t->n, sizeof *ids);
    int rc = held && pixels && ids ? EEB_OK : eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    for (size_t i = 0; rc == EEB_OK && i < t->n; i++) /* the served names by served place */
        memcpy(ids[t->items[i].index], t->items[i].id, sizeof *ids);
    for (size_t lo = 0; rc == EEB_OK && lo < t->n; lo += part) {
        size_t hi = lo + part < t->n ? lo + part : t->n;
        const struct eeb_record *rec;
        int more;
        if ((rc = eeb_shard_rewind(in, err, errlen)))
            break;
        for (uint64_t at = 0; (more = eeb_shard_next(in, &rec, err, errlen)) > 0; at++) {
            uint64_t to = order[at];
            if (to < lo || to >= hi)
                continue;
            struct eeb_record *bare = &held[to - lo];
            bare->index = to, bare->label = 0, bare->nboxes = 0;
            bare->pixels = pixels + (to - lo) * px;
            memcpy(bare->pixels, rec->pixels, px);
            memcpy(bare->id, ids[to], sizeof bare->id);
        }
        rc = more < 0 ? more : EEB_OK;
        for (size_t i = lo; rc == EEB_OK && i < hi; i++)
            rc = eeb_shard_write(w, &held[i - lo], err, errlen);
    }
    free(held), free(pixels), free(ids);
    return rc;
}

int eeb_srv_testset_load(struct eeb_srv_testset *t, enum eeb_task task, const char *path,
                         const char *inputs_path, const uint8_t *key, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct eeb_shard *in;
    int rc = eeb_shard_open(&in, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *info = eeb_shard_info(in);
    struct eeb_shard_writer *w = NULL;
    uint64_t *order = NULL;
    t->task = task, t->classes = info->classes, t->secret = key != NULL;
    t->frames = info->frames, t->w = info->w, t->h = info->h, t->c = info->c;
    if (info->task != task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s data, given as the %s test set", path,
                      eeb_task_name(info->task), eeb_task_name(task));
    else if (info->count == 0)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: no records", path);
    else if (!(t->items = calloc(info->count, sizeof *t->items)) ||
             !(t->inputs = strdup(inputs_path)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    else if ((rc = hold_all(t, in, key, path, &order, err, errlen)) == EEB_OK &&
             (rc = eeb_shard_create(&w, inputs_path, info, err, errlen)) == EEB_OK) {
        rc = write_inputs(t, in, order, w, err, errlen);
        rc = rc == EEB_OK ? eeb_shard_finish(w, err, errlen) : (eeb_shard_abort(w), rc);
    }
    free(order);
    eeb_shard_close(in);
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

/* ---- M_s: a run's stored predictions against the truth held ---- */

struct tally_walk {
    const struct eeb_srv_testset *t;
    struct eeb_prediction_tally *tally;
    uint64_t n;
    char *why;
    size_t whylen;
};

/* One stored prediction (no truth) given its item's truth, and counted. */
static int tally_one(void *arg, int64_t item, const char *payload)
{
    struct tally_walk *w = arg;
    json_t *o = json_loads(payload, 0, NULL), *truth = NULL;
    const char *id = json_string_value(json_object_get(o, EEB_PREDICTION_KEY_ID));
    const struct eeb_srv_held_item *h = id ? eeb_srv_testset_find(w->t, id) : NULL;
    char *text = NULL;
    if (h && eeb_task_get(w->t->task)->prediction == EEB_PREDICTION_BOXES) {
        truth = json_array();
        for (int b = 0; truth && b < h->nboxes; b++) {
            const struct eeb_box *x = &h->boxes[b];
            json_array_append_new(truth, json_pack("[i, i, f, f, f, f]", x->cls, x->difficult,
                                                   x->x0, x->y0, x->x1, x->y1));
        }
        json_object_set_new(o, EEB_PREDICTION_KEY_TRUTH, truth);
    } else if (h) {
        json_object_set_new(o, EEB_PREDICTION_KEY_LABEL, json_integer(h->label));
    }
    int bad = !h || !(text = json_dumps(o, JSON_COMPACT)) ||
              eeb_prediction_tally_add(w->tally, item, text) != EEB_OK;
    if (bad)
        snprintf(w->why, w->whylen, "prediction %lld is not one the server stores",
                 (long long)item);
    free(text);
    json_decref(o);
    w->n++;
    return bad;
}

int eeb_srv_testset_m_s(const struct eeb_srv_testset *t, struct eeb_srv_store *store, int64_t run,
                        double *m_s, char *why, size_t whylen, char *err, size_t errlen)
{
    struct tally_walk w = {.t = t, .why = why, .whylen = whylen};
    *m_s = NAN, why[0] = '\0';
    if (eeb_prediction_tally_new(&w.tally, eeb_task_get(t->task)->prediction) != EEB_OK)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = eeb_srv_store_run_predictions_each(store, run, tally_one, &w, err, errlen);
    if (rc > 0)
        rc = EEB_OK; /* why says which */
    else if (rc == EEB_OK && w.n != t->n)
        snprintf(why, whylen, "%llu predictions stored for %llu test items",
                 (unsigned long long)w.n, (unsigned long long)t->n);
    else if (rc == EEB_OK && eeb_prediction_tally_value(w.tally, t->n, m_s) != EEB_OK)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    eeb_prediction_tally_free(w.tally);
    return rc;
}
