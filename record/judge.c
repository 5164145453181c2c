/*
 * judge.c - a run's verdict from its database alone: the metrics, S, the
 * P_max rule and the validity of the measurement, recomputed from the
 * stored configuration, events, samples and predictions (`eeb check`, the
 * run's own SCORE stage, which must agree with it, and the server).
 */
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_shard.h"
#include "tasks/eeb_voc.h"
#include "power/eeb_power.h"
#include "record/eeb_record.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Appends a reason to out->why, "; "-separated. */
__attribute__((format(printf, 2, 3))) static void why(struct eeb_run_outcome *out, const char *fmt,
                                                      ...)
{
    size_t n = strlen(out->why);
    if (n && n + 2 < sizeof out->why)
        memcpy(out->why + n, "; ", 3), n += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why + n, sizeof out->why - n, fmt, ap);
    va_end(ap);
}

/* ---- the stored record ---- */

struct record {
    int64_t ft_begin, ft_end;
    char complete[16]; /* the "complete" event's reason */
    char abort[256];   /* the "abort" event's reason, "" if none */
    char error[256];   /* the "error" event's message, "" if none */
    int scored;
};

static const char *payload_string(const char *payload, const char *key, char *buf, size_t n)
{
    json_t *o = payload ? json_loads(payload, 0, NULL) : NULL;
    snprintf(buf, n, "%s", json_string_value(json_object_get(o, key)) ?: "?");
    json_decref(o);
    return buf;
}

static int read_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc;
    struct record *rec = arg;
    if (strcmp(kind, EEB_EVENT_FINETUNE_BEGIN) == 0)
        rec->ft_begin = t;
    else if (strcmp(kind, EEB_EVENT_FINETUNE_END) == 0)
        rec->ft_end = t;
    else if (strcmp(kind, EEB_EVENT_COMPLETE) == 0)
        payload_string(payload, "reason", rec->complete, sizeof rec->complete);
    else if (strcmp(kind, EEB_EVENT_ABORT) == 0)
        payload_string(payload, "reason", rec->abort, sizeof rec->abort);
    else if (strcmp(kind, EEB_EVENT_ERROR) == 0)
        payload_string(payload, "message", rec->error, sizeof rec->error);
    else if (strcmp(kind, EEB_EVENT_SCORE) == 0)
        rec->scored = 1;
    return 0;
}

/* ---- M_s from the stored predictions ---- */

struct recount {
    enum eeb_task task;
    uint64_t n;
    struct eeb_topk topk;
    int nclasses; /* det: 1 + the highest class seen */
    struct eeb_voc_truth *truth[EEB_SHARD_MAX_CLASSES];
    int ntruth[EEB_SHARD_MAX_CLASSES], cap_truth[EEB_SHARD_MAX_CLASSES];
    struct eeb_voc_detection *det[EEB_SHARD_MAX_CLASSES];
    int ndet[EEB_SHARD_MAX_CLASSES], cap_det[EEB_SHARD_MAX_CLASSES];
    char bad[200];
};

static int grow(void **a, int *n, int *cap, size_t size)
{
    if (*n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 64;
    void *p = realloc(*a, (size_t)c * size);
    if (!p)
        return -1;
    *a = p, *cap = c;
    return 0;
}

/* A box array [class, score or difficult, x0, y0, x1, y1]; its class. */
static int box_of(json_t *b, double v[6])
{
    if (json_array_size(b) != 6)
        return -1;
    for (int i = 0; i < 6; i++) {
        json_t *x = json_array_get(b, (size_t)i);
        if (!json_is_number(x))
            return -1;
        v[i] = json_number_value(x);
    }
    return v[0] >= 0 && v[0] < EEB_SHARD_MAX_CLASSES && v[0] == floor(v[0]) ? (int)v[0] : -1;
}

static int recount_det(struct recount *rc, int64_t item, json_t *o)
{
    json_t *boxes = json_object_get(o, "boxes"), *truth = json_object_get(o, "truth");
    if (!json_is_array(boxes) || !json_is_array(truth))
        return -1;
    size_t i;
    json_t *b;
    double v[6];
    /* a shard's continuous [x0, x1] is the devkit's pixels x0 + 1 .. x1,
     * as the evaluator converts both */
    json_array_foreach(truth, i, b)
    {
        int c = box_of(b, v);
        if (c < 0 ||
            grow((void **)&rc->truth[c], &rc->ntruth[c], &rc->cap_truth[c], sizeof **rc->truth))
            return -1;
        rc->truth[c][rc->ntruth[c]++] =
            (struct eeb_voc_truth){(int)item, v[1] != 0, {v[2] + 1.0, v[3] + 1.0, v[4], v[5]}};
        rc->nclasses = c + 1 > rc->nclasses ? c + 1 : rc->nclasses;
    }
    json_array_foreach(boxes, i, b)
    {
        int c = box_of(b, v);
        if (c < 0 || grow((void **)&rc->det[c], &rc->ndet[c], &rc->cap_det[c], sizeof **rc->det))
            return -1;
        rc->det[c][rc->ndet[c]++] =
            (struct eeb_voc_detection){(int)item, v[1], {v[2] + 1.0, v[3] + 1.0, v[4], v[5]}};
        rc->nclasses = c + 1 > rc->nclasses ? c + 1 : rc->nclasses;
    }
    return 0;
}

static int recount_item(void *arg, int64_t item, const char *payload)
{
    struct recount *rc = arg;
    json_t *o = json_loads(payload, 0, NULL);
    int bad = !o;
    if (o && rc->task == EEB_TASK_DET) {
        bad = recount_det(rc, item, o) != 0;
    } else if (o) {
        json_t *top = json_object_get(o, "top"), *x;
        int ranked[EEB_TOPK_MAX], n = 0;
        size_t i;
        json_array_foreach(top, i, x)
        {
            if (n < EEB_TOPK_MAX)
                ranked[n++] = (int)json_integer_value(x);
        }
        bad = !json_is_integer(json_object_get(o, "label")) || !json_is_array(top);
        eeb_topk_add(&rc->topk, (int)json_integer_value(json_object_get(o, "label")), ranked, n);
    }
    json_decref(o);
    rc->n++;
    if (bad)
        snprintf(rc->bad, sizeof rc->bad, "prediction %lld is not what eeb run stores",
                 (long long)item);
    return bad;
}

/* M_s again; NAN (with a reason) if the predictions cannot give it. */
static double recount(struct eeb_rundb *db, int64_t run, enum eeb_task task, uint64_t items,
                      struct eeb_run_outcome *out, char *err, size_t errlen)
{
    struct recount *rc = calloc(1, sizeof *rc);
    if (!rc) {
        why(out, "recounting the predictions: out of memory");
        return NAN;
    }
    rc->task = task;
    double m_s = NAN;
    int st = eeb_rundb_predictions_each(db, run, recount_item, rc, err, errlen);
    if (st > 0)
        why(out, "%s", rc->bad);
    else if (st < 0)
        why(out, "%s", err);
    else if (rc->n != items)
        why(out, "%llu predictions stored for %llu test items", (unsigned long long)rc->n,
            (unsigned long long)items);
    else if (task != EEB_TASK_DET)
        m_s = items ? (double)rc->topk.top5 / (double)items : NAN;
    else {
        struct eeb_voc_class_result *res = calloc((size_t)rc->nclasses + 1, sizeof *res);
        int ok = res != NULL;
        for (int c = 0; ok && c < rc->nclasses; c++)
            ok = eeb_voc_class_ap(rc->truth[c], rc->ntruth[c], rc->det[c], rc->ndet[c], 0.5,
                                  EEB_VOC_AP_ALL_POINTS, &res[c]) == EEB_OK;
        m_s = ok ? eeb_voc_map(res, rc->nclasses) : NAN;
        if (!ok)
            why(out, "recounting the predictions: out of memory");
        free(res);
    }
    for (int c = 0; c < EEB_SHARD_MAX_CLASSES; c++)
        free(rc->truth[c]), free(rc->det[c]);
    free(rc);
    return m_s;
}

/* ---- the verdict ---- */

static double number_at(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(json_object_get(o, a), b);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A run as stored: its row and what its events say. */
struct stored_run {
    const char *path;
    struct eeb_rundb *db;
    struct eeb_run_row row;
    struct record rec;
};

static int open_run(const char *path, int64_t run, struct stored_run *sr, char *err, size_t errlen)
{
    memset(sr, 0, sizeof *sr);
    sr->path = path;
    int rc = eeb_rundb_open(path, EEB_RUNDB_READONLY, &sr->db, err, errlen);
    if (rc == EEB_OK && (rc = eeb_rundb_run_get(sr->db, run, &sr->row, err, errlen)) == EEB_OK)
        rc = eeb_rundb_events_each(sr->db, sr->row.id, read_event, &sr->rec, err, errlen);
    return rc;
}

static void close_run(struct stored_run *sr)
{
    eeb_rundb_run_row_free(&sr->row);
    eeb_rundb_close(sr->db);
}

/* Figures the record has not given (yet): n/a, never 0. */
static void figures_unknown(struct eeb_run_outcome *out)
{
    struct eeb_score *s = &out->score;
    s->m_u = s->m_t = s->m_p = s->m_s = s->s = s->mean_power_w = NAN;
    out->t_s = out->energy_j = out->worst_w = out->window_s = NAN;
}

/* run_judge on a run already read.  Each figure the record gives is
 * computed, the others left NAN: a run whose power log is unusable still
 * has its M_u, T and M_s. */
static int judge(const struct stored_run *sr, double m_s, struct eeb_run_outcome *out, char *err,
                 size_t errlen)
{
    const struct eeb_run_row *row = &sr->row;
    const struct record *rec = &sr->rec;
    int rc = EEB_OK;
    json_t *cfg = json_loads(row->config, 0, NULL), *rules = json_object_get(cfg, "rules");
    enum eeb_task task;
    out->run = row->id;
    snprintf(out->uuid, sizeof out->uuid, "%s", row->uuid);
    snprintf(out->provenance, sizeof out->provenance, "%s",
             json_string_value(json_object_get(cfg, "provenance")) ?: "?");
    out->valid = 1;
    figures_unknown(out);
    if (eeb_task_parse(row->task, &task, err, errlen)) {
        rc =
            eeb_errf(err, errlen, EEB_EINVAL, "%s: run %lld is a %s, not a benchmark run", sr->path,
                     (long long)row->id, strcmp(row->task, "none") ? row->task : "power log");
        goto out;
    }
    out->task = task;
    out->t_max_s = row->t_max_s, out->p_max_w = row->p_max_w;
    out->window_s = number_at(cfg, "rules", "power_window_s");
    out->tmax_reached = strcmp(rec->complete, "t_max") == 0;
    /* a record that says it was stopped or broke (one received by the
     * server; `eeb run` judges neither) */
    if (rec->abort[0]) {
        out->aborted = 1;
        why(out, "%s", rec->abort);
    }
    if (rec->error[0]) {
        out->valid = 0;
        why(out, "the run ended in an error: %s", rec->error);
    }
    out->test_items = (uint64_t)number_at(cfg, "test", "items");
    /* an official run's predictions hold no truth: its M_s is the server's */
    if (isnan(m_s) && json_is_object(json_object_get(cfg, "official"))) {
        char gerr[256];
        if (eeb_rundb_result_get(sr->db, row->id, "m_s", &m_s, gerr, sizeof gerr))
            why(out, "M_s is the server's, and none was stored");
    } else if (isnan(m_s)) {
        m_s = recount(sr->db, row->id, task, out->test_items, out, err, errlen);
    }
    out->score.m_u = (number_at(cfg, "util", "lut") + number_at(cfg, "util", "ff") +
                      number_at(cfg, "util", "bram") + number_at(cfg, "util", "dsp")) /
                     4;
    out->score.m_s = m_s;
    if (!rec->ft_begin || !rec->ft_end) {
        why(out, "no fine-tune window (finetune_begin and finetune_end events)");
        out->valid = 0;
        goto out;
    }
    out->t_s = (double)(rec->ft_end - rec->ft_begin) / 1e9;
    struct eeb_power_summary ps;
    char perr[512];
    int have_power = eeb_power_summarize(sr->path, row->id, NAN, &ps, perr, sizeof perr) == 0;
    if (!have_power) {
        why(out, "power: %s", perr);
        out->valid = 0;
        ps.p_max_pass = 0;
    } else {
        out->energy_j = ps.energy.joules;
        out->worst_w = ps.worst_w;
    }
    if (have_power && !ps.valid) {
        why(out, "power measurement: %s", ps.invalid);
        out->valid = 0;
    }
    if (isnan(m_s)) {
        out->valid = 0;
        if (!out->why[0])
            why(out, "M_s is undefined (no class has ground truth)");
    }
    struct eeb_score_input in = {
        .m_u = out->score.m_u,
        .t_s = out->t_s,
        .t_max_s = row->t_max_s,
        .energy_j = have_power ? out->energy_j : 0, /* M_p is n/a then */
        .p_max_w = row->p_max_w,
        .m_s = isnan(m_s) ? 0 : m_s,
        .w = {number_at(rules, "weights", "u"), number_at(rules, "weights", "t"),
              number_at(rules, "weights", "p"), number_at(rules, "weights", "s")}};
    char serr[256];
    if (eeb_score_compute(&in, &out->score, serr, sizeof serr)) {
        why(out, "the stored configuration cannot be scored: %s", serr);
        out->valid = 0;
        goto out;
    }
    out->score.m_s = m_s;
    if (!have_power)
        out->score.m_p = out->score.mean_power_w = NAN;
    if (have_power && !out->score.pass)
        why(out, "%s", out->score.reason);
    if (have_power && !ps.p_max_pass && out->score.pass)
        why(out, "%s", ps.p_max_reason);
    out->pass = out->valid && !out->aborted && out->score.pass && ps.p_max_pass;
    if (!out->pass)
        out->score.s = NAN;
out:
    json_decref(cfg);
    return rc;
}

int eeb_run_judge(const char *db_path, int64_t run, double m_s, struct eeb_run_outcome *out,
                  char *err, size_t errlen)
{
    struct stored_run sr;
    int rc = open_run(db_path, run, &sr, err, errlen);
    if (rc == EEB_OK)
        rc = judge(&sr, m_s, out, err, errlen);
    close_run(&sr);
    return rc;
}

int eeb_run_store_results(struct eeb_rundb *db, int64_t run, const struct eeb_run_outcome *o,
                          const char *util_provenance, char *err, size_t errlen)
{
    const struct eeb_score *s = &o->score;
    const char *prov = o->provenance;
    const struct {
        const char *name;
        double v;
        const char *unit, *prov;
    } results[] = {
        {"m_u", s->m_u, "1", util_provenance},
        {"t_s", o->t_s, "s", prov},
        {"energy_j", o->energy_j, "J", prov},
        {"mean_power_w", s->mean_power_w, "W", prov},
        {"worst_window_w", o->worst_w, "W", prov},
        {"m_t", s->m_t, "1", "computed"},
        {"m_p", s->m_p, "1", "computed"},
        {"m_s", s->m_s, "1", "computed"},
        {"S", o->pass ? s->s : NAN, "1", "computed"},
        {"pass", o->pass, "1", "computed"},
        {"valid", o->valid, "1", "computed"},
        {"device_time_s", o->device_time_s, "s", "modeled"},
        {"device_energy_j", o->device_energy_j, "J", "modeled"},
    };
    int rc = EEB_OK;
    for (size_t i = 0; i < sizeof results / sizeof *results && rc == EEB_OK; i++)
        if (!isnan(results[i].v))
            rc = eeb_rundb_result_set(db, run, results[i].name, results[i].v, results[i].unit,
                                      results[i].prov, err, errlen);
    return rc;
}

const char *eeb_run_verdict(const struct eeb_run_outcome *o, int upper)
{
    static const char *const words[2][5] = {{"incomplete", "aborted", "invalid", "pass", "fail"},
                                            {"INCOMPLETE", "ABORTED", "INVALID", "PASS", "FAIL"}};
    int w = !o->complete ? 0 : o->aborted ? 1 : !o->valid ? 2 : o->pass ? 3 : 4;
    return words[upper != 0][w];
}

/* ---- eeb check ---- */

static int count_sample(void *arg, const char *source, const struct eeb_sample *s)
{
    (void)source, (void)s;
    ++*(uint64_t *)arg;
    return 0;
}

int eeb_run_check(const char *db_path, int64_t run, struct eeb_check_figures *figures,
                  struct eeb_run_outcome *out, char *err, size_t errlen)
{
    struct eeb_check_figures none;
    if (!figures)
        figures = &none;
    figures->n = 0;
    memset(out, 0, sizeof *out);
    figures_unknown(out);
    struct stored_run sr;
    int rc = open_run(db_path, run, &sr, err, errlen);
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
    /* a record that ends without saying why: what it does hold */
    if (!out->complete || (!rec->scored && !rec->error[0] && !rec->abort[0])) {
        uint64_t n = 0;
        if ((rc = eeb_rundb_samples_each(sr.db, row->id, INT64_MIN, INT64_MAX, count_sample, &n,
                                         err, errlen)))
            goto out;
        if (!out->complete)
            why(out,
                "the run stopped in state %s (its harness was killed, or is still "
                "running); %llu power samples committed",
                row->state, (unsigned long long)n);
        else
            why(out,
                "the run ended without a score and with no error recorded (a full disk records "
                "none; an official run's submission may have been cut off); %llu power samples "
                "committed",
                (unsigned long long)n);
        goto out;
    }
    if (rec->abort[0]) {
        out->aborted = 1;
        out->valid = 1;
        why(out, "%s", rec->abort);
        goto out;
    }
    if (rec->error[0]) {
        why(out, "the run ended in an error: %s", rec->error);
        goto out;
    }
    if ((rc = judge(&sr, NAN, out, err, errlen)))
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
            why(out, "the run stored no %s; its record gives %.17g%s%s", f->label, x,
                *f->unit ? " " : "", f->unit);
        else if (isnan(x))
            why(out, "the run stored %s = %.17g%s%s, which its record does not give", f->label, v,
                *f->unit ? " " : "", f->unit);
        else
            why(out, "the stored %s (%.17g%s%s) is not what the record gives (%.17g%s%s)", f->label,
                v, *f->unit ? " " : "", f->unit, x, *f->unit ? " " : "", f->unit);
    }
out:
    close_run(&sr);
    return rc;
}
