/*
 * report.c - `eeb report`: one self-contained HTML page per run (no
 * scripts, fonts or images from elsewhere) with the power trace as an
 * inline SVG plot -- P_max line, stage bands, T_max marker -- the loss and
 * training metric over time, the verdict as `eeb check` recomputes it, the
 * score with each term's share of the penalty, the system under test
 * (report_sut.c), the events and the configuration.  What a run never had (a killed run's test
 * stage, M_s, S) is shown as "-", and numbers are written in their shortest form (eeb_number_text)
 * or to a fixed precision, never as "%.17g" noise.  Sections: gathering, numbers, the page;
 * the plots are report_plot.c's, the score's table report_score.c's.
 */
#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "record/eeb_record.h"
#include "tasks/eeb_task_ops.h"
#include "report_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- gathering ---- */

static int push(struct series *s, double t, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 256;
        void *p = realloc(s->p, cap * sizeof *s->p);
        if (!p)
            return -1;
        s->p = p, s->cap = cap;
    }
    s->p[s->n++] = (struct point){t, v};
    return 0;
}

/* ---- downsampling ----
 *
 * A series is drawn with at most two points in each pixel column of the
 * plot: the column's lowest and highest value, in the order they came.  A
 * peak one sample wide still shows at its height, and a trace of millions
 * of samples is at most 2 x PLOT_COLUMNS points (the server draws a live
 * run's page each second); struct columns is in report_int.h. */

/* The value v at time t taken into its column. */
static void columns_add(struct columns *c, double t, double v)
{
    double at = c->x_hi > 0 ? t / c->x_hi * PLOT_COLUMNS : 0;
    int k = at >= PLOT_COLUMNS ? PLOT_COLUMNS - 1 : at > 0 ? (int)at : 0;
    struct column *col = &c->c[k];
    if (!col->used || v < col->lo)
        col->lo = v, col->t_lo = t;
    if (!col->used || v > col->hi)
        col->hi = v, col->t_hi = t;
    col->used = 1;
}

/* The columns as a series to draw: each column's points in time order, one
 * where its lowest and highest are the same point.  -1 out of memory. */
static int columns_series(const struct columns *c, struct series *out)
{
    for (int k = 0; k < PLOT_COLUMNS; k++) {
        const struct column *col = &c->c[k];
        if (!col->used)
            continue;
        int lo_first = col->t_lo <= col->t_hi;
        if (push(out, lo_first ? col->t_lo : col->t_hi, lo_first ? col->lo : col->hi))
            return -1;
        if ((col->t_lo != col->t_hi || col->lo != col->hi) &&
            push(out, lo_first ? col->t_hi : col->t_lo, lo_first ? col->hi : col->lo))
            return -1;
    }
    return 0;
}

/* A series drawn over [0, x_hi], downsampled into out: -1 out of memory. */
int report_downsample(const struct series *in, double x_hi, struct series *out)
{
    struct columns *c = calloc(1, sizeof *c);
    if (!c)
        return -1;
    c->x_hi = x_hi;
    for (size_t i = 0; i < in->n; i++)
        columns_add(c, in->p[i].t, in->p[i].v);
    int rc = columns_series(c, out);
    free(c);
    return rc;
}

static int trace_sample(void *arg, const char *source, const struct eeb_sample *s)
{
    struct trace *tr = arg;
    if (tr->pass == 0) {
        if (!tr->n++) {
            tr->t0 = s->t_mono_ns;
            snprintf(tr->source, sizeof tr->source, "%s", source ? source : "");
        }
        tr->t1 = s->t_mono_ns;
        tr->peak = fmax(tr->peak, s->watts);
        return 0;
    }
    columns_add(&tr->cols, (double)(s->t_mono_ns - tr->origin) / 1e9, s->watts);
    return 0;
}

/* The first finetune_begin's time of a log (0: none). */
static int begin_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc, (void)payload;
    int64_t *at = arg;
    if (!*at && strcmp(kind, EEB_EVENT_FINETUNE_BEGIN) == 0)
        *at = t;
    return 0;
}

static int timeline_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc;
    struct timeline *tl = arg;
    if (!tl->have_t0)
        tl->t0 = t, tl->have_t0 = 1;
    double s = (double)(t - tl->t0) / 1e9;
    json_t *p = payload ? json_loads(payload, 0, NULL) : NULL;
    int rc = 0;
    tl->last = s;
    if (strcmp(kind, EEB_EVENT_FINETUNE_BEGIN) == 0)
        tl->ft_begin = s;
    else if (strcmp(kind, EEB_EVENT_FINETUNE_END) == 0)
        tl->ft_end = s;
    else if (strcmp(kind, EEB_EVENT_TEST_BEGIN) == 0)
        tl->test_begin = s;
    else if (strcmp(kind, EEB_EVENT_TEST_END) == 0)
        tl->test_end = s;
    if (strcmp(kind, EEB_EVENT_TRAIN) == 0)
        rc = push(&tl->loss, s, json_number_value(json_object_get(p, EEB_EVENT_KEY_LOSS)));
    else if (strcmp(kind, EEB_EVENT_EPOCH_END) == 0)
        rc =
            push(&tl->metric, s, json_number_value(json_object_get(p, EEB_EVENT_KEY_TRAIN_METRIC)));
    if (strcmp(kind, EEB_EVENT_TRAIN) != 0)
        json_array_append_new(tl->events, json_pack("[f, s, s?]", s, kind, payload));
    report_sut_event(&tl->sut, kind, p);
    json_decref(p);
    return rc;
}

/* ---- numbers ---- */

/* v to a fixed number of decimals, or "-" when the run never had it. */
const char *report_fixed(char out[EEB_NUMBER_MAX], double v, int decimals)
{
    if (isnan(v))
        snprintf(out, EEB_NUMBER_MAX, "-");
    else
        snprintf(out, EEB_NUMBER_MAX, "%.*f", decimals, v);
    return out;
}

/* A JSON string, quoted and escaped as JSON, then as HTML. */
static void json_string_html(FILE *f, const char *s)
{
    json_t *j = json_string(s);
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    eeb_html_text(f, text ? text : "\"?\"");
    free(text);
    json_decref(j);
}

/* v as JSON text in HTML, each real as eeb_number_text writes it: jansson
 * writes 0.1 as 0.10000000000000001, which is the same double. */
static void json_html(FILE *f, json_t *v)
{
    char num[EEB_NUMBER_MAX];
    const char *key;
    json_t *x;
    size_t i;
    int first = 1;
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        fputc('{', f);
        json_object_foreach(v, key, x)
        {
            fputs(first ? "" : ", ", f);
            first = 0;
            json_string_html(f, key);
            fputs(": ", f);
            json_html(f, x);
        }
        fputc('}', f);
        break;
    case JSON_ARRAY:
        fputc('[', f);
        json_array_foreach(v, i, x)
        {
            fputs(i ? ", " : "", f);
            json_html(f, x);
        }
        fputc(']', f);
        break;
    case JSON_STRING: json_string_html(f, json_string_value(v)); break;
    case JSON_INTEGER: fprintf(f, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: fputs(eeb_number_text(json_real_value(v), num), f); break;
    case JSON_TRUE: fputs("true", f); break;
    case JSON_FALSE: fputs("false", f); break;
    case JSON_NULL: fputs("null", f); break;
    }
}
/* ---- the page ---- */

/* The configuration as rows of dotted keys ("rules.weights.u") and values. */
static void config_rows(FILE *f, json_t *v, const char *path)
{
    if (json_is_object(v) && json_object_size(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x)
        {
            size_t n = strlen(path) + strlen(key) + 2;
            char *sub = malloc(n);
            if (!sub)
                return;
            snprintf(sub, n, "%s%s%s", path, *path ? "." : "", key);
            config_rows(f, x, sub);
            free(sub);
        }
        return;
    }
    fputs("<tr><th>", f);
    eeb_html_text(f, path);
    fputs("</th><td>", f);
    if (json_is_string(v))
        eeb_html_text(f, json_string_value(v));
    else if (json_is_null(v))
        fputs("-", f);
    else
        json_html(f, v);
    fputs("</td></tr>\n", f);
}

static void events_table(FILE *f, const struct timeline *tl)
{
    fputs("<h2>Events</h2>\n<table id=\"events\"><tr><th>t (s)</th><th>event</th><th>payload"
          "</th></tr>\n",
          f);
    size_t i;
    json_t *e;
    json_array_foreach(tl->events, i, e)
    {
        char t[EEB_NUMBER_MAX];
        const char *payload = json_string_value(json_array_get(e, 2));
        json_t *p = payload ? json_loads(payload, JSON_DECODE_ANY, NULL) : NULL;
        fprintf(f, "<tr><th>%s</th><td>",
                report_fixed(t, json_real_value(json_array_get(e, 0)), 3));
        eeb_html_text(f, json_string_value(json_array_get(e, 1)));
        fputs("</td><td>", f);
        if (p)
            json_html(f, p);
        else
            eeb_html_text(f, payload ? payload : "-");
        fputs("</td></tr>\n", f);
        json_decref(p);
    }
    fputs("</table>\n", f);
}

/* The whole configuration as stored, every key shown as it is. */
static void config_section(FILE *f, const char *config)
{
    json_t *cfg = json_loads(config ? config : "", 0, NULL);
    fputs("<h2>Configuration</h2>\n", f);
    if (json_is_object(cfg) && json_object_size(cfg)) {
        fputs("<table id=\"config\">\n", f);
        config_rows(f, cfg, "");
        fputs("</table>\n", f);
    } else {
        fputs("<pre id=\"config\">", f);
        eeb_html_text(f, config && config[0] ? config : "-");
        fputs("</pre>\n", f);
    }
    json_decref(cfg);
}

static void page(FILE *f, const struct eeb_run_row *run, const struct eeb_run_outcome *o,
                 const struct trace *tr, const struct timeline *tl, const struct time_axis *ta,
                 const struct series *watts, const struct director *d)
{
    const char *verdict = eeb_run_verdict(o, 1);
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(run->config, &cfg); /* unread: its figures are "-" */
    const char *provenance = o->provenance[0]    ? o->provenance
                             : cfg.provenance[0] ? cfg.provenance
                                                 : "-";
    char a[EEB_NUMBER_MAX], b[EEB_NUMBER_MAX];
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>eeb run ", f);
    fprintf(f, "%lld</title>\n", (long long)run->id);
    fputs("<style>body{font:14px sans-serif;margin:24px;max-width:1000px}"
          "table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;"
          "padding:3px 8px;text-align:left}td:last-child{overflow-wrap:anywhere}"
          "th{background:#f4f4f4}tr.part th{font-weight:normal}"
          ".verdict{font-size:20px;font-weight:bold;padding:8px;display:inline-block}"
          ".PASS{background:#d9f2d9}.FAIL,.ABORTED{background:#f7d4d4}"
          ".INVALID,.INCOMPLETE{background:#fbe8c8}.label{border:1px solid #888;"
          "padding:1px 6px;border-radius:4px}pre{background:#f8f8f8;padding:8px;"
          "overflow:auto;font-size:12px}.legend{list-style:none;padding:0;margin:4px 0 16px;"
          "display:flex;flex-wrap:wrap;gap:4px 18px;font-size:12px}.swatch{display:inline-block;"
          "width:16px;height:10px;margin-right:5px;vertical-align:middle}.swatch.line{height:0;"
          "border-top:2px solid}.mismatch{background:#fbe8c8;padding:4px 8px;"
          "display:inline-block}</style></head><body>\n",
          f);
    fprintf(f, "<h1>eeb run %lld: ", (long long)run->id);
    eeb_html_text(f, run->task);
    fputs(" on ", f);
    if (cfg.sut_name[0]) { /* the system as it names itself, and how it was reached */
        eeb_html_text(f, cfg.sut_name);
        if (cfg.sut_version[0]) { /* its own version, as it says it */
            fputs(" <span class=\"version\">", f);
            eeb_html_text(f, cfg.sut_version);
            fputs("</span>", f);
        }
        fputs(" (", f);
        eeb_html_text(f, cfg.sut_kind);
        fputs(")", f);
    } else {
        eeb_html_text(f, run->backend);
    }
    fputs("</h1>\n<p>run ", f);
    eeb_html_text(f, run->uuid);
    fputs(", state ", f);
    eeb_html_text(f, run->state);
    fputs(", provenance <span class=\"label\" id=\"provenance\">", f);
    eeb_html_text(f, provenance);
    fprintf(f, "</span>%s</p>\n",
            strcmp(provenance, "modeled") == 0
                ? " (time and power stand in for a device's: emulator wall time and the "
                  "analytical model's or a declared power, not a measurement)"
                : "");
    fprintf(f, "<p class=\"verdict %s\" id=\"verdict\">%s", verdict, verdict);
    if (o->pass)
        fprintf(f, ": S = %.4f", o->score.s);
    fputs("</p>\n", f);
    if (o->why[0]) {
        fputs("<p id=\"reasons\">", f);
        eeb_html_text(f, o->why);
        fputs("</p>\n", f);
    }
    report_score_table(f, run, o, tl, &cfg);
    fputs("<h2>Power</h2>\n", f);
    if (d->meter_run) {
        const struct trace *m = d->meter;
        fprintf(f,
                "<p id=\"director\">Director mode: the server read the team's meter itself, "
                "and E comes from it. The server's meter: %llu samples over %s s, peak %s W. "
                "The team's own log, beside it: ",
                (unsigned long long)m->n,
                report_fixed(a, m->n ? (double)(m->t1 - m->t0) / 1e9 : 0, 1),
                report_fixed(b, m->peak, 3));
        if (tr->n)
            fprintf(f, "%llu samples over %s s, peak %s W.</p>\n", (unsigned long long)tr->n,
                    report_fixed(a, (double)(tr->t1 - tr->t0) / 1e9, 1),
                    report_fixed(b, tr->peak, 3));
        else
            fputs("none.</p>\n", f);
    } else if (tr->n)
        fprintf(f, "<p>%llu samples over %s s; peak %s W.</p>\n", (unsigned long long)tr->n,
                report_fixed(a, (double)(tr->t1 - tr->t0) / 1e9, 1), report_fixed(b, tr->peak, 3));
    else
        fputs("<p>No power samples were committed.</p>\n", f);
    report_power_plot(f, tr, tl, watts, ta, run->t_max_s, run->p_max_w, d);
    fputs("<h2>Training</h2>\n<p>The training loss (purple, the mean since the previous point) "
          "and the training metric at each epoch's end (green, right axis: top-1 accuracy, or "
          "for detection the object cells' class accuracy).</p>\n",
          f);
    report_training_plot(f, tl, ta);
    /* after the plots, which are read right after the score (and must fit
     * a screen with it) */
    report_sut_section(f, &tl->sut, &cfg, run->backend);
    events_table(f, tl);
    config_section(f, run->config);
    fputs("<p>Written by eeb " EEB_VERSION " (", f);
    eeb_html_text(f, eeb_build());
    fputs(").</p>\n</body></html>\n", f);
}

/* Director mode, if row's configuration names the server's meter's power
 * log: the meter's trace read into d (its first pass), and the team's log
 * and events placed on the meter's clock: tl's origin and tr's for the
 * second pass, and *span_s both traces' span.  Not director mode (d left
 * empty) if the meter's log is not in the database. */
static int director_read(struct eeb_rundb *db, const struct eeb_run_row *row, struct trace *tr,
                         struct timeline *tl, struct director *d, double *span_s, char *err,
                         size_t errlen)
{
    struct eeb_config_record cfg, mcfg;
    struct eeb_run_row mrow = {0};
    char ignored[256];
    if (eeb_config_record_read(row->config, &cfg) || cfg.meter_run <= 0 ||
        cfg.meter_run == row->id ||
        eeb_rundb_run_get(db, cfg.meter_run, &mrow, ignored, sizeof ignored))
        return EEB_OK;
    snprintf(d->meter_provenance, sizeof d->meter_provenance, "%s",
             eeb_config_record_read(mrow.config, &mcfg) == EEB_OK && mcfg.power_provenance[0]
                 ? mcfg.power_provenance
                 : "-");
    eeb_rundb_run_row_free(&mrow);
    if (!(d->meter = calloc(1, sizeof *d->meter)))
        return eeb_errf(err, errlen, EEB_ENOMEM, "report: out of memory");
    d->meter_run = cfg.meter_run;
    struct trace *m = d->meter;
    int64_t meter_begin = 0, team_begin = 0, shift = 0; /* the team's clock + shift: the meter's */
    int rc = eeb_rundb_samples_each(db, d->meter_run, INT64_MIN, INT64_MAX, trace_sample, m, err,
                                    errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_events_each(db, d->meter_run, begin_event, &meter_begin, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_events_each(db, row->id, begin_event, &team_begin, err, errlen);
    if (rc)
        return rc;
    d->by_fine_tune = meter_begin && team_begin;
    if (d->by_fine_tune)
        shift = meter_begin - team_begin;
    else if (m->n && tr->n)
        shift = m->t0 - tr->t0;
    int p = tr->n ? eeb_power_uri_provenance(tr->source) : -1;
    snprintf(d->team_provenance, sizeof d->team_provenance, "%s",
             p >= 0 ? eeb_provenance_name((enum eeb_provenance)p) : "declared");
    if (!m->n && !tr->n)
        return EEB_OK; /* times from the first event, as without director mode */
    int64_t origin = m->n ? m->t0 : tr->t0 + shift, end = m->n ? m->t1 : tr->t1 + shift;
    if (tr->n && tr->t0 + shift < origin)
        origin = tr->t0 + shift;
    if (tr->n && tr->t1 + shift > end)
        end = tr->t1 + shift;
    m->origin = origin, tr->origin = origin - shift;
    tl->have_t0 = 1, tl->t0 = origin - shift;
    *span_s = (double)(end - origin) / 1e9;
    return EEB_OK;
}

int eeb_run_report_write(const char *db_path, int64_t run, FILE *out, char *err, size_t errlen)
{
    struct eeb_run_outcome o;
    int rc = eeb_run_check(db_path, run, NULL, &o, err, errlen);
    if (rc)
        return rc;
    struct eeb_rundb *db;
    if ((rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &db, err, errlen)))
        return rc;
    struct eeb_run_row row = {0};
    struct trace *tr = calloc(1, sizeof *tr);
    struct timeline tl = {.ft_begin = NAN,
                          .ft_end = NAN,
                          .test_begin = NAN,
                          .test_end = NAN,
                          .last = NAN,
                          .events = json_array()};
    struct series watts = {0};
    struct director d = {0};
    if (!tr || !tl.events) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "report: out of memory");
        goto out;
    }
    if ((rc = eeb_rundb_run_get(db, o.run, &row, err, errlen)) ||
        (rc = eeb_rundb_samples_each(db, row.id, INT64_MIN, INT64_MAX, trace_sample, tr, err,
                                     errlen)))
        goto out;
    /* times count from the first sample; without samples, from the first
     * event (the same monotonic clock: never the UTC of the run's creation) */
    tl.have_t0 = tr->n > 0, tl.t0 = tr->origin = tr->t0;
    double span_s = tr->n ? (double)(tr->t1 - tr->t0) / 1e9 : 0;
    uint64_t samples = tr->n;
    if ((rc = director_read(db, &row, tr, &tl, &d, &span_s, err, errlen)))
        goto out;
    if (d.meter_run)
        samples += d.meter->n;
    if ((rc = eeb_rundb_events_each(db, row.id, timeline_event, &tl, err, errlen)))
        goto out;
    /* the axis from the span and the events; then the samples into its
     * pixel columns */
    struct time_axis ta = report_time_axis(samples, span_s, &tl, row.t_max_s, o.modeled_clock);
    tr->pass = 1, tr->cols.x_hi = ta.x_hi;
    if (tr->n && (rc = eeb_rundb_samples_each(db, row.id, INT64_MIN, INT64_MAX, trace_sample, tr,
                                              err, errlen)))
        goto out;
    if (d.meter_run && d.meter->n) {
        d.meter->pass = 1, d.meter->cols.x_hi = ta.x_hi;
        if ((rc = eeb_rundb_samples_each(db, d.meter_run, INT64_MIN, INT64_MAX, trace_sample,
                                         d.meter, err, errlen)))
            goto out;
        if (columns_series(&d.meter->cols, &d.watts)) {
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "report: out of memory");
            goto out;
        }
    }
    if (columns_series(&tr->cols, &watts)) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "report: out of memory");
        goto out;
    }
    page(out, &row, &o, tr, &tl, &ta, &watts, &d);
    if (ferror(out))
        rc = eeb_errf(err, errlen, EEB_EIO, "report: write failed");
out:
    free(watts.p), free(tl.loss.p), free(tl.metric.p);
    free(d.watts.p), free(d.meter);
    json_decref(tl.events);
    report_sut_free(&tl.sut);
    free(tr);
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(db);
    return rc;
}

int eeb_run_report(const char *db_path, int64_t run, const char *html_path, char *err,
                   size_t errlen)
{
    struct eeb_atomic_file af;
    int rc = eeb_atomic_open(&af, html_path, err, errlen);
    if (rc == EEB_OK && (rc = eeb_run_report_write(db_path, run, af.f, err, errlen)) == EEB_OK)
        rc = eeb_atomic_commit(&af, err, errlen);
    if (rc)
        eeb_atomic_abort(&af);
    return rc;
}
