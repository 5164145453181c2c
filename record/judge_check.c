/*
 * judge_check.c - `eeb check`: a run's chain verified, its verdict
 * recomputed from the record (record/judge.c), and a copy a server handed
 * back judged by the server's facts it holds.
 */
#include "record/judge_int.h"
#include "rundb/eeb_config_record.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- eeb check ---- */

static int count_sample(void *arg, const char *source, const struct eeb_sample *s)
{
    (void)source, (void)s;
    ++*(uint64_t *)arg;
    return 0;
}

/* A chain that breaks, or none, leaves the record unshown to be the one
 * the run wrote: invalid. */
static void chain_verdict(const struct eeb_chain_check *c, struct eeb_run_outcome *out)
{
    if (!c->broken && c->links)
        return;
    out->valid = 0;
    out->pass = 0;
    if (c->broken)
        judge_why(out, "its chain breaks: %s", c->why);
    else
        judge_why(out, "it has no chain (written before eeb chained its records, or its links were "
                       "deleted): nothing shows its record is the one the run wrote");
}

/* A run's links' heads and kinds, in order. */
struct heads {
    size_t n, cap;
    char (*head)[EEB_SHA256_HEX];
    char (*kind)[16];
};

static int keep_head(void *arg, const struct eeb_rundb_link *l)
{
    struct heads *h = arg;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 256;
        void *a = realloc(h->head, cap * sizeof *h->head),
             *b = a ? realloc(h->kind, cap * sizeof *h->kind) : NULL;
        if (a)
            h->head = a;
        if (!b)
            return EEB_ENOMEM;
        h->kind = b, h->cap = cap;
    }
    memcpy(h->head[h->n], l->head, EEB_SHA256_HEX);
    snprintf(h->kind[h->n], sizeof h->kind[h->n], "%s",
             l->kind == EEB_LINK_EVENT ? l->event.kind : eeb_link_kind_name(l->kind));
    h->n++;
    return 0;
}

/* Whether copy, a server's record of run taken back, holds run's record:
 * the two chains agree link for link up to where the run's stopped going
 * to the server, after which the copy holds only the server's own events
 * (its facts, or the end it gave a run that stopped, and its score) and
 * the run only what it wrote of the verdict (its score and state).  "" in why if so. */
static int holds_run(struct eeb_rundb *db, int64_t run, int64_t copy, char *why, size_t n,
                     char *err, size_t errlen)
{
    struct heads a = {0}, b = {0};
    int rc = eeb_rundb_links_each(db, run, 0, keep_head, &a, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_links_each(db, copy, 0, keep_head, &b, err, errlen);
    if (rc == EEB_ENOMEM) /* keep_head's: links_each's own errors say themselves */
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "reading run %lld's chain: out of memory",
                      (long long)run);
    size_t same = 0;
    while (same < a.n && same < b.n && strcmp(a.head[same], b.head[same]) == 0)
        same++;
    why[0] = '\0';
    for (size_t i = same; rc == EEB_OK && !why[0] && i < b.n; i++)
        if (strcmp(b.kind[i], EEB_EVENT_EVALUATOR) && strcmp(b.kind[i], EEB_EVENT_ABORT) &&
            strcmp(b.kind[i], EEB_EVENT_SCORE))
            snprintf(why, n, "its link %zu is the run's link %zu no more", i, i);
    for (size_t i = same; rc == EEB_OK && !why[0] && i < a.n; i++)
        if (strcmp(a.kind[i], EEB_EVENT_SCORE) && strcmp(a.kind[i], EEB_EVENT_STATE))
            snprintf(why, n, "the run's link %zu (%s) is not in it", i, a.kind[i]);
    if (rc == EEB_OK && !why[0] && !same)
        snprintf(why, n, "its chain does not begin as the run's");
    free(a.head), free(a.kind), free(b.head), free(b.kind);
    return rc;
}

/* An official run whose server's record was taken back (a copy in the same
 * database) is judged as the server judged it, from that record: the
 * server's facts, M_s and meter.  The copy must hold the run's record. */
static int judge_by_copy(const struct stored_run *sr, int64_t copy, struct eeb_run_outcome *out,
                         char *err, size_t errlen)
{
    char why_not[256];
    int rc = holds_run(sr->db, sr->row.id, copy, why_not, sizeof why_not, err, errlen);
    if (rc)
        return rc;
    if (why_not[0]) {
        judge_why(out, "the server's record of it (run %lld) is not its record: %s",
                  (long long)copy, why_not);
        out->valid = 0;
        return EEB_OK;
    }
    struct stored_run cr;
    if ((rc = judge_open_run(sr->path, copy, &cr, err, errlen)) == EEB_OK)
        rc = judge_stored_run(&cr, NAN, NULL, out, err, errlen);
    /* and is whole: its chain and its meter's, hashed again */
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(cr.row.config, &cfg);
    int64_t logs[2] = {copy, cfg.meter_run};
    for (int i = 0; rc == EEB_OK && i < 2 && logs[i] > 0; i++) {
        struct eeb_chain_check c;
        if ((rc = eeb_rundb_chain_check(cr.db, logs[i], &c, err, errlen)) == EEB_OK && c.broken) {
            judge_why(out, "the server's record of it (run %lld) breaks: %s", (long long)logs[i],
                      c.why);
            out->valid = 0, out->pass = 0;
        }
    }
    judge_close_run(&cr);
    out->run = sr->row.id, out->server_copy = copy;
    snprintf(out->uuid, sizeof out->uuid, "%s", sr->row.uuid);
    return rc;
}

int eeb_run_check(const char *db_path, int64_t run, struct eeb_check_figures *figures,
                  struct eeb_run_outcome *out, char *err, size_t errlen)
{
    struct eeb_check_figures none;
    if (!figures)
        figures = &none;
    figures->n = 0;
    memset(out, 0, sizeof *out);
    judge_figures_unknown(out);
    struct stored_run sr;
    int rc = judge_open_run(db_path, run, &sr, err, errlen);
    const struct eeb_run_row *row = &sr.row;
    const struct record *rec = &sr.rec;
    out->run = row->id;
    snprintf(out->uuid, sizeof out->uuid, "%s", row->uuid);
    out->complete = strcmp(row->state, "done") == 0 || strcmp(row->state, "failed") == 0;
    if (rc)
        goto out;
    if (strcmp(row->task, "none") == 0) {
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: run %lld is a power log (eeb power log), not a benchmark run; "
                      "`eeb power summary %s --run %lld` shows it",
                      db_path, (long long)row->id, db_path, (long long)row->id);
        goto out;
    }
    if ((rc = eeb_rundb_chain_check(sr.db, row->id, &figures->chain, err, errlen)))
        goto out;
    /* a record that ends without saying why: what it does hold */
    if (!out->complete || (!rec->scored && !rec->error[0] && !rec->abort[0])) {
        uint64_t n = 0;
        if ((rc = eeb_rundb_samples_each(sr.db, row->id, INT64_MIN, INT64_MAX, count_sample, &n,
                                         err, errlen)))
            goto out;
        if (!out->complete)
            judge_why(out,
                      "the run stopped in state %s (its harness was killed, or is still "
                      "running); %llu power samples committed",
                      row->state, (unsigned long long)n);
        else
            judge_why(
                out,
                "the run ended without a score and with no error recorded (a full disk records "
                "none; an official run's submission may have been cut off); %llu power samples "
                "committed",
                (unsigned long long)n);
        goto out;
    }
    if (rec->abort[0]) {
        out->aborted = 1;
        out->valid = 1;
        judge_why(out, "%s", rec->abort);
        goto out;
    }
    if (rec->error[0]) {
        judge_why(out, "the run ended in an error: %s", rec->error);
        goto out;
    }
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(row->config, &cfg);
    int64_t copy = 0;
    if (cfg.official && !cfg.held_by_server &&
        (rc = eeb_rundb_copy_of(sr.db, row->uuid, row->id, &copy, err, errlen)))
        goto out;
    if ((rc = copy ? judge_by_copy(&sr, copy, out, err, errlen)
                   : judge_stored_run(&sr, NAN, NULL, out, err, errlen)))
        goto out;
    /* what the run stored must be what its record gives again */
    const struct eeb_check_figure given[EEB_CHECK_FIGURES] = {
        {"m_u", "M_u", "", out->score.m_u, NAN, 0}, {"m_t", "M_t", "", out->score.m_t, NAN, 0},
        {"m_p", "M_p", "", out->score.m_p, NAN, 0}, {"m_s", "M_s", "", out->score.m_s, NAN, 0},
        {"t_s", "T", "s", out->t_s, NAN, 0},        {"energy_j", "E", "J", out->energy_j, NAN, 0},
        {"S", "S", "", out->score.s, NAN, 0},       {"pass", "passed", "", out->pass, NAN, 0},
    };
    for (size_t i = 0; i < EEB_CHECK_FIGURES; i++) {
        struct eeb_check_figure *f = &figures->f[figures->n++];
        *f = given[i];
        char gerr[256];
        if (eeb_rundb_result_get(sr.db, row->id, f->key, &f->stored, gerr, sizeof gerr))
            f->stored = NAN;
        double v = f->stored, x = f->recomputed;
        f->agree = (isnan(v) && isnan(x)) || v == x || fabs(v - x) <= 1e-9 * fmax(1, fabs(x));
        if (f->agree)
            continue;
        out->valid = 0;
        out->pass = 0;
        if (isnan(v))
            judge_why(out, "the run stored no %s; its record gives %.17g%s%s", f->label, x,
                      *f->unit ? " " : "", f->unit);
        else if (isnan(x))
            judge_why(out, "the run stored %s = %.17g%s%s, which its record does not give",
                      f->label, v, *f->unit ? " " : "", f->unit);
        else
            judge_why(out, "the stored %s (%.17g%s%s) is not what the record gives (%.17g%s%s)",
                      f->label, v, *f->unit ? " " : "", f->unit, x, *f->unit ? " " : "", f->unit);
    }
out:
    if (rc == EEB_OK && strcmp(row->task, "none"))
        chain_verdict(&figures->chain, out);
    judge_close_run(&sr);
    return rc;
}
