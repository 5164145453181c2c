/*
 * test_truth.c - a run's stored predictions against the test shard a
 * reviewer holds (eeb check --test): the shard named by the SHA-256 the
 * run recorded, and each prediction's truth the shard's.  The truth is
 * stored beside each prediction (M_s is recounted from it), so without the
 * shard a record whose labels were swapped for its predictions recounts to
 * a perfect M_s.
 */
#include "record/eeb_record.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_prediction.h"
#include "tasks/eeb_shard.h"
#include "tasks/eeb_task_ops.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The shard's truth by item (its position). */
struct truth {
    enum eeb_prediction_kind kind;
    uint64_t n;
    int *label;              /* ranked: the class */
    int *nboxes;             /* boxes: how many */
    struct eeb_box **boxes;  /* and which */
    uint64_t agreed, stored; /* predictions compared and agreeing, and seen */
    int64_t first_bad;       /* the first item whose truth differs, or -1 */
    char bad[160];
};

static void truth_free(struct truth *t)
{
    for (uint64_t i = 0; t->boxes && i < t->n; i++)
        free(t->boxes[i]);
    free(t->label), free(t->nboxes), free(t->boxes);
}

static int truth_load(struct truth *t, const char *path, char *err, size_t errlen)
{
    struct eeb_shard *s;
    int rc = eeb_shard_open(&s, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *in = eeb_shard_info(s);
    t->kind = eeb_task_get(in->task)->prediction;
    t->n = in->count;
    t->label = calloc(t->n + 1, sizeof *t->label);
    t->nboxes = calloc(t->n + 1, sizeof *t->nboxes);
    t->boxes = calloc(t->n + 1, sizeof *t->boxes);
    if (!t->label || !t->nboxes || !t->boxes)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    const struct eeb_record *rec;
    int more;
    while (rc == EEB_OK && (more = eeb_shard_next(s, &rec, err, errlen)) != 0) {
        if (more < 0 || rec->index >= t->n) {
            rc = more < 0 ? more
                          : eeb_errf(err, errlen, EEB_EFORMAT,
                                     "%s: more records than its header "
                                     "says",
                                     path);
            break;
        }
        t->label[rec->index] = rec->label;
        t->nboxes[rec->index] = rec->nboxes;
        if (rec->nboxes &&
            !(t->boxes[rec->index] = malloc((size_t)rec->nboxes * sizeof *rec->boxes)))
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        else if (rec->nboxes)
            memcpy(t->boxes[rec->index], rec->boxes, (size_t)rec->nboxes * sizeof *rec->boxes);
    }
    eeb_shard_close(s);
    return rc;
}

/* Whether a stored true box is the shard's (stored as decimal text of the
 * shard's float: a millionth of a pixel apart at most). */
static int same_box(const struct eeb_prediction_truth *p, const struct eeb_box *b)
{
    return p->cls == b->cls && p->difficult == b->difficult && fabs(p->x0 - b->x0) < 1e-6 &&
           fabs(p->y0 - b->y0) < 1e-6 && fabs(p->x1 - b->x1) < 1e-6 && fabs(p->y1 - b->y1) < 1e-6;
}

__attribute__((format(printf, 3, 4))) static void differs(struct truth *t, int64_t item,
                                                          const char *fmt, ...)
{
    if (t->first_bad >= 0)
        return;
    t->first_bad = item;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->bad, sizeof t->bad, fmt, ap);
    va_end(ap);
}

static int compare(void *arg, int64_t item, const char *payload)
{
    struct truth *t = arg;
    struct eeb_prediction p = {0};
    t->stored++;
    if (item < 0 || (uint64_t)item >= t->n)
        differs(t, item, "the test shard has no item %lld", (long long)item);
    else if (eeb_prediction_read(payload, t->kind, &p) != EEB_OK || !p.has_truth)
        differs(t, item, "it holds no truth to compare");
    else if (t->kind == EEB_PREDICTION_RANKED && p.label != t->label[item])
        differs(t, item, "its stored label is %d, the shard's %d", p.label, t->label[item]);
    else if (t->kind == EEB_PREDICTION_BOXES && p.ntruth != t->nboxes[item])
        differs(t, item, "it stores %d true boxes, the shard holds %d", p.ntruth, t->nboxes[item]);
    else {
        int same = 1;
        for (int b = 0; t->kind == EEB_PREDICTION_BOXES && same && b < p.ntruth; b++)
            same = same_box(&p.truth[b], &t->boxes[item][b]);
        if (same)
            t->agreed++;
        else
            differs(t, item, "its stored true boxes are not the shard's");
    }
    eeb_prediction_free(&p);
    return 0;
}

int eeb_run_check_test_shard(const char *db_path, int64_t run, const char *shard_path,
                             struct eeb_run_outcome *out, uint64_t *agreed, char *err,
                             size_t errlen)
{
    *agreed = 0;
    char sha[EEB_SHA256_HEX];
    int rc = eeb_sha256_file(shard_path, sha, err, errlen);
    struct eeb_rundb *db = NULL;
    struct eeb_run_row row = {0};
    struct truth t = {.first_bad = -1};
    if (rc == EEB_OK &&
        (rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &db, err, errlen)) == EEB_OK)
        rc = eeb_rundb_run_get(db, run, &row, err, errlen);
    if (rc)
        goto out;
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(row.config, &cfg);
    const char *why = NULL;
    char text[400];
    if (!cfg.test_sha256[0])
        why = "the run recorded no test inputs' SHA-256 (an official run's are the server's)";
    else if (strcmp(cfg.test_sha256, sha)) {
        snprintf(text, sizeof text,
                 "%s (SHA-256 %.16s...) is not the test set the run read (%.16s...)", shard_path,
                 sha, cfg.test_sha256);
        why = text;
    } else if ((rc = truth_load(&t, shard_path, err, errlen)) ||
               (rc = eeb_rundb_predictions_each(db, row.id, compare, &t, err, errlen)))
        goto out;
    else if (t.first_bad >= 0) {
        snprintf(text, sizeof text, "prediction %lld against the test shard: %s",
                 (long long)t.first_bad, t.bad);
        why = text;
    } else if (t.stored != t.n) {
        snprintf(text, sizeof text, "%llu predictions stored for the test shard's %llu items",
                 (unsigned long long)t.stored, (unsigned long long)t.n);
        why = text;
    }
    *agreed = t.agreed;
    if (why) {
        size_t n = strlen(out->why);
        snprintf(out->why + n, sizeof out->why - n, "%s%s", n ? "; " : "", why);
        out->valid = 0, out->pass = 0, out->score.s = NAN;
    }
out:
    truth_free(&t);
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(db);
    return rc;
}
