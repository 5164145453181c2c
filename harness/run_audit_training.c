/*
 * run_audit_training.c - the training audit (docs/sut.md): a slice of the fine-tune
 * set, drawn from the run's seed (record/audit.c), read before the SUT is
 * opened and predicted by it twice, before the fine-tune (outside the
 * metered window) and after end_training (before the test stage).  Each
 * item's answer is kept as a digest in a training_audit event, which the
 * judge compares (record/judge.c): a system whose answers did not change
 * did not train.
 */
#include "run_int.h"

#include <stdlib.h>
#include <string.h>

int run_training_audit_read(struct run *r, char *err, size_t errlen)
{
    struct run_training_audit *a = &r->training_audit;
    a->n = eeb_run_training_audit_slice((uint64_t)r->c->seed, r->finetune_items, a->idx);
    a->px = eeb_shard_pixels(eeb_shard_info(r->shard));
    free(a->pixels);
    if (!(a->pixels = malloc((size_t)a->n * a->px + 1)))
        return eeb_errf(err, errlen, EEB_ENOMEM, "the training audit: out of memory");
    /* the shard as loaded (the bytes hashed), then back to its start for
     * the batches */
    int rc = eeb_shard_rewind(r->shard, err, errlen);
    for (int k = 0; rc == EEB_OK && k < a->n;) {
        const struct eeb_record *rec;
        int got = eeb_shard_next(r->shard, &rec, err, errlen);
        if (got < 0)
            rc = got;
        else if (got == 0)
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s: the fine-tune set ends before its item %llu (the training audit)",
                          r->c->finetune, (unsigned long long)a->idx[k]);
        else if (rec->index == a->idx[k])
            memcpy(a->pixels + (size_t)k++ * a->px, rec->pixels, a->px);
    }
    if (rc == EEB_OK)
        rc = eeb_shard_rewind(r->shard, err, errlen);
    return rc;
}

/* Appends v, little-endian, at *p. */
static void put32(uint8_t **p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        *(*p)++ = (uint8_t)(v >> (8 * i));
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* An answer's digest, bit for bit: the ranked classes and their scores
 * (cls, video), or the boxes (det); the first 16 hex digits of its
 * SHA-256, 64 bits. */
static void answer_digest(const struct eeb_task_predicted *p, char out[17])
{
    uint8_t buf[8 + EEB_TOPK_MAX * 8 + RUN_MAX_BOXES * 24], *at = buf; /* counts, ranks, boxes */
    char hex[EEB_SHA256_HEX];
    put32(&at, (uint32_t)p->nranked);
    for (int k = 0; k < p->nranked; k++)
        put32(&at, (uint32_t)p->ranked[k]), put32(&at, bits(p->scores[k]));
    put32(&at, (uint32_t)p->nboxes);
    for (int k = 0; k < p->nboxes && k < RUN_MAX_BOXES; k++) {
        const struct eeb_scored_box *b = &p->boxes[k];
        put32(&at, (uint32_t)b->cls), put32(&at, bits(b->score));
        put32(&at, bits(b->x0)), put32(&at, bits(b->y0));
        put32(&at, bits(b->x1)), put32(&at, bits(b->y1));
    }
    eeb_sha256(buf, (size_t)(at - buf), hex);
    memcpy(out, hex, 16);
    out[16] = '\0';
}

int run_training_audit(struct run *r, const char *when, char *err, size_t errlen)
{
    const struct run_training_audit *a = &r->training_audit;
    struct eeb_task_predicted *out = calloc((size_t)a->n + 1, sizeof *out);
    struct eeb_scored_box *boxes = calloc((size_t)a->n * RUN_MAX_BOXES + 1, sizeof *boxes);
    json_t *items = json_array(), *answers = json_array();
    int rc = out && boxes && items && answers
                 ? EEB_OK
                 : eeb_errf(err, errlen, EEB_ENOMEM, "the training audit: out of memory");
    struct eeb_task_predictor p;
    eeb_sut_predictor(r->sut, &p);
    int batch = (int)r->c->batch;
    for (int i = 0; rc == EEB_OK && i < a->n; i += batch) {
        struct eeb_task_batch b = {.n = a->n - i < batch ? a->n - i : batch,
                                   .pixels = a->pixels + (size_t)i * a->px};
        for (int k = 0; k < b.n; k++)
            out[i + k].boxes = boxes + (size_t)(i + k) * RUN_MAX_BOXES;
        rc = p.predict(p.arg, &b, out + i, err, errlen);
    }
    for (int i = 0; rc == EEB_OK && i < a->n; i++) {
        char d[17];
        answer_digest(&out[i], d);
        json_array_append_new(items, json_integer((json_int_t)a->idx[i]));
        json_array_append_new(answers, json_string(d));
    }
    if (rc == EEB_OK)
        run_event(r, EEB_EVENT_TRAINING_AUDIT,
                  json_pack("{s:s, s:I, s:I, s:O, s:O}", EEB_TRAINING_AUDIT_KEY_WHEN, when,
                            EEB_EVENT_KEY_SEED, (json_int_t)r->c->seed,
                            EEB_TRAINING_AUDIT_KEY_SET_ITEMS, (json_int_t)r->finetune_items,
                            EEB_TRAINING_AUDIT_KEY_ITEMS, items, EEB_TRAINING_AUDIT_KEY_ANSWERS,
                            answers));
    else if (err[0] && !strstr(err, "training audit")) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        eeb_errf(err, errlen, rc, "the training audit (%s fine-tuning): %s", when, why);
    }
    json_decref(items), json_decref(answers);
    free(out), free(boxes);
    return rc;
}
