/*
 * report.c - `eeb report`: one self-contained HTML page per run (no
 * scripts, fonts or images from elsewhere) with the power trace as an
 * inline SVG plot -- P_max line, stage bands, T_max marker -- the loss and
 * training metric over time, the verdict as `eeb check` recomputes it, the
 * stored results, the events and the configuration.  Sections: gathering,
 * plotting, the page.
 */
#include "eeb_rundb.h"
#include "eeb_run.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS  1000 /* the trace keeps each bucket's lowest and highest reading */
#define PLOT_W   960
#define PLOT_H   300
#define MARGIN_L 60
#define MARGIN_R 60
#define MARGIN_T 20
#define MARGIN_B 40

/* ---- gathering ---- */

struct point {
    double t, v; /* seconds since the first sample; watts or loss */
};

struct series {
    struct point *p;
    size_t n, cap;
};

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

struct trace {
    int pass;       /* 0: the span, 1: the buckets */
    int64_t t0, t1; /* first and last sample */
    uint64_t n;
    double peak;
    struct bucket {
        double lo, hi, t_lo, t_hi;
        int used;
    } b[BUCKETS];
};

static int trace_sample(void *arg, const char *source, const struct eeb_sample *s)
{
    (void)source;
    struct trace *tr = arg;
    if (tr->pass == 0) {
        if (!tr->n++)
            tr->t0 = s->t_mono_ns;
        tr->t1 = s->t_mono_ns;
        tr->peak = fmax(tr->peak, s->watts);
        return 0;
    }
    double span = (double)(tr->t1 - tr->t0);
    int k = span > 0 ? (int)((double)(s->t_mono_ns - tr->t0) / span * (BUCKETS - 1)) : 0;
    double t = (double)(s->t_mono_ns - tr->t0) / 1e9;
    struct bucket *b = &tr->b[k];
    if (!b->used || s->watts < b->lo)
        b->lo = s->watts, b->t_lo = t;
    if (!b->used || s->watts > b->hi)
        b->hi = s->watts, b->t_hi = t;
    b->used = 1;
    return 0;
}

struct timeline {
    int64_t t0;
    double ft_begin, ft_end, test_begin, test_end; /* seconds, NAN if absent */
    struct series loss, metric;                    /* train events; epoch ends */
    json_t *events;                                /* [t, kind, payload] but "train" */
};

static int timeline_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc;
    struct timeline *tl = arg;
    double s = (double)(t - tl->t0) / 1e9;
    json_t *p = payload ? json_loads(payload, 0, NULL) : NULL;
    int rc = 0;
    if (strcmp(kind, "finetune_begin") == 0)
        tl->ft_begin = s;
    else if (strcmp(kind, "finetune_end") == 0)
        tl->ft_end = s;
    else if (strcmp(kind, "test_begin") == 0)
        tl->test_begin = s;
    else if (strcmp(kind, "test_end") == 0)
        tl->test_end = s;
    if (strcmp(kind, "train") == 0)
        rc = push(&tl->loss, s, json_number_value(json_object_get(p, "loss")));
    else if (strcmp(kind, "epoch_end") == 0)
        rc = push(&tl->metric, s, json_number_value(json_object_get(p, "train_metric")));
    if (strcmp(kind, "train") != 0)
        json_array_append_new(tl->events, json_pack("[f, s, s?]", s, kind, payload));
    json_decref(p);
    return rc;
}

/* ---- plotting ---- */

/* A round step giving about n ticks over [0, hi]. */
static double tick_step(double hi, int n)
{
    double raw = hi / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

struct axes {
    double x_hi, y_hi; /* both start at 0 */
};

static double px(const struct axes *a, double t)
{
    return MARGIN_L + t / a->x_hi * (PLOT_W - MARGIN_L - MARGIN_R);
}

static double py(const struct axes *a, double v)
{
    return MARGIN_T + (1 - v / a->y_hi) * (PLOT_H - MARGIN_T - MARGIN_B);
}

static void frame(FILE *f, const struct axes *a, const char *id, const char *title,
                  const char *y_label)
{
    fprintf(f,
            "<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">\n<title>%s</title>\n",
            id, PLOT_W, PLOT_H, PLOT_W, PLOT_H, title, title);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" stroke=\"#999\"/>\n",
            MARGIN_L, MARGIN_T, PLOT_W - MARGIN_L - MARGIN_R, PLOT_H - MARGIN_T - MARGIN_B);
    double xs = tick_step(a->x_hi, 8), ys = tick_step(a->y_hi, 5);
    for (double t = 0; t <= a->x_hi + 1e-9; t += xs)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
                px(a, t), PLOT_H - MARGIN_B + 15, t);
    for (double v = 0; v <= a->y_hi + 1e-9; v += ys)
        fprintf(f,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%g</text>\n",
                MARGIN_L, PLOT_W - MARGIN_R, py(a, v), py(a, v), MARGIN_L - 5, py(a, v) + 4, v);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">seconds since the "
            "first power sample</text>\n"
            "<text x=\"14\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 14 %d)\">%s</text>\n",
            (PLOT_W + MARGIN_L - MARGIN_R) / 2, PLOT_H - 5, PLOT_H / 2, PLOT_H / 2, y_label);
}

static void band(FILE *f, const struct axes *a, double t0, double t1, const char *fill,
                 const char *label)
{
    if (isnan(t0) || isnan(t1))
        return;
    fprintf(f,
            "<rect class=\"stage\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
            "fill=\"%s\"/><text x=\"%.1f\" y=\"%d\" font-size=\"11\">%s</text>\n",
            px(a, t0), MARGIN_T, px(a, t1) - px(a, t0), PLOT_H - MARGIN_T - MARGIN_B, fill,
            px(a, t0) + 3, MARGIN_T + 12, label);
}

static void polyline(FILE *f, const struct axes *a, const struct series *s, const char *id,
                     const char *colour, double y_scale)
{
    if (!s->n)
        return;
    fprintf(f, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"", id,
            colour);
    for (size_t i = 0; i < s->n; i++)
        fprintf(f, "%.1f,%.1f ", px(a, s->p[i].t), py(a, s->p[i].v * y_scale));
    fputs("\"/>\n", f);
}

static void power_plot(FILE *f, const struct trace *tr, const struct timeline *tl,
                       const struct series *watts, double t_max, double p_max)
{
    double span = (double)(tr->t1 - tr->t0) / 1e9, tmax_at = tl->ft_begin + t_max;
    struct axes a = {fmax(span, isnan(tmax_at) ? 0 : tmax_at) * 1.02,
                     fmax(tr->peak, isnan(p_max) ? 0 : p_max) * 1.15};
    if (!(a.x_hi > 0))
        a.x_hi = 1;
    if (!(a.y_hi > 0))
        a.y_hi = 1;
    frame(f, &a, "power-plot", "Power trace", "watts");
    band(f, &a, tl->ft_begin, tl->ft_end, "#cfe3f5", "fine-tune (metered)");
    band(f, &a, tl->test_begin, tl->test_end, "#d9f2d9", "test");
    polyline(f, &a, watts, "power-trace", "#1f77b4", 1);
    if (!isnan(p_max))
        fprintf(f,
                "<line id=\"pmax-line\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"8 4\"/>"
                "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#d62728\">P_max %g W</text>\n",
                MARGIN_L, PLOT_W - MARGIN_R, py(&a, p_max), py(&a, p_max), PLOT_W - MARGIN_R + 3,
                py(&a, p_max) + 4, p_max);
    if (!isnan(tmax_at))
        fprintf(f,
                "<line id=\"tmax-marker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
                "stroke=\"#ff7f0e\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>"
                "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" fill=\"#ff7f0e\" "
                "text-anchor=\"end\">T_max</text>\n",
                px(&a, tmax_at), px(&a, tmax_at), MARGIN_T, PLOT_H - MARGIN_B, px(&a, tmax_at) - 3,
                MARGIN_T + 26);
    fputs("</svg>\n", f);
}

static void training_plot(FILE *f, const struct timeline *tl, double x_hi)
{
    double loss_hi = 0;
    for (size_t i = 0; i < tl->loss.n; i++)
        loss_hi = fmax(loss_hi, tl->loss.p[i].v);
    struct axes a = {x_hi > 0 ? x_hi : 1, loss_hi > 0 ? loss_hi * 1.1 : 1};
    frame(f, &a, "training-plot", "Loss and training metric", "loss");
    band(f, &a, tl->ft_begin, tl->ft_end, "#cfe3f5", "fine-tune");
    polyline(f, &a, &tl->loss, "loss-curve", "#9467bd", 1);
    /* the metric, in [0, 1], on its own axis at the right */
    polyline(f, &a, &tl->metric, "metric-curve", "#2ca02c", a.y_hi);
    for (int k = 0; k <= 4; k++)
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#2ca02c\">%g</text>\n",
                PLOT_W - MARGIN_R + 4, py(&a, a.y_hi * k / 4) + 4, k / 4.0);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#2ca02c\" text-anchor=\"middle\" "
            "transform=\"rotate(90 %d %d)\">training metric</text>\n",
            PLOT_W - 14, PLOT_H / 2, PLOT_W - 14, PLOT_H / 2);
    fputs("</svg>\n", f);
}

/* ---- the page ---- */

static void row(FILE *f, const char *name, const char *value, const char *note)
{
    fputs("<tr><th>", f);
    eeb_html_text(f, name);
    fputs("</th><td>", f);
    eeb_html_text(f, value);
    fputs("</td><td>", f);
    eeb_html_text(f, note);
    fputs("</td></tr>\n", f);
}

static void figure(FILE *f, const char *name, double v, const char *note)
{
    char text[64];
    if (isnan(v))
        snprintf(text, sizeof text, "-");
    else
        snprintf(text, sizeof text, "%.4f", v);
    row(f, name, text, note);
}

static void page(FILE *f, const struct eeb_run_row *run, const struct eeb_run_outcome *o,
                 const struct trace *tr, const struct timeline *tl, const struct series *watts)
{
    const char *verdict = eeb_run_verdict(o, 1);
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>eeb run ", f);
    fprintf(f, "%lld</title>\n", (long long)run->id);
    fputs("<style>body{font:14px sans-serif;margin:24px;max-width:1000px}"
          "table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;"
          "padding:3px 8px;text-align:left}th{background:#f4f4f4}"
          ".verdict{font-size:20px;font-weight:bold;padding:8px;display:inline-block}"
          ".PASS{background:#d9f2d9}.FAIL,.ABORTED{background:#f7d4d4}"
          ".INVALID,.INCOMPLETE{background:#fbe8c8}.label{border:1px solid #888;"
          "padding:1px 6px;border-radius:4px}pre{background:#f8f8f8;padding:8px;"
          "overflow:auto;font-size:12px}</style></head><body>\n",
          f);
    fprintf(f, "<h1>eeb run %lld: %s on %s</h1>\n<p>run ", (long long)run->id, run->task,
            run->backend);
    eeb_html_text(f, run->uuid);
    fputs(", state ", f);
    eeb_html_text(f, run->state);
    fputs(", provenance <span class=\"label\" id=\"provenance\">", f);
    eeb_html_text(f, o->provenance);
    fprintf(f, "</span>%s</p>\n",
            strcmp(o->provenance, "modeled") == 0
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
    fputs("<h2>Score</h2>\n<table id=\"score\"><tr><th>metric</th><th>value</th><th>from</th>"
          "</tr>\n",
          f);
    char note[160];
    figure(f, "M_u", o->score.m_u, "mean of LUT, FF, BRAM, DSP utilization");
    snprintf(note, sizeof note, "T %.3f s / T_max %g s%s", o->t_s, run->t_max_s,
             o->tmax_reached ? " (stopped at T_max)" : "");
    figure(f, "M_t", o->score.m_t, note);
    snprintf(note, sizeof note, "E %.3f J / (P_max %g W x T); mean %.3f W, worst 1 s window %.3f W",
             o->energy_j, run->p_max_w, o->score.mean_power_w, o->worst_w);
    figure(f, "M_p", o->score.m_p, note);
    snprintf(note, sizeof note, "%s on %llu test items", eeb_task_metric(o->task),
             (unsigned long long)o->test_items);
    figure(f, "M_s", o->score.m_s, note);
    figure(f, "S", o->score.s, "1 - [w_u M_u + w_t M_t + w_p M_p + w_s (1 - M_s)]");
    fputs("</table>\n<h2>Power</h2>\n", f);
    fprintf(f, "<p>%llu samples over %.1f s; peak %.3f W.</p>\n", (unsigned long long)tr->n,
            (double)(tr->t1 - tr->t0) / 1e9, tr->peak);
    power_plot(f, tr, tl, watts, run->t_max_s, run->p_max_w);
    fputs("<h2>Training</h2>\n<p>The training loss (purple, the mean since the previous point) "
          "and the training metric at each epoch's end (green, right axis: top-1 accuracy, or "
          "for detection the object cells' class accuracy).</p>\n",
          f);
    double x_hi = fmax((double)(tr->t1 - tr->t0) / 1e9, tl->ft_end);
    training_plot(f, tl, isnan(x_hi) ? 1 : x_hi * 1.02);
    fputs("<h2>Events</h2>\n<table id=\"events\"><tr><th>t (s)</th><th>event</th><th>payload"
          "</th></tr>\n",
          f);
    size_t i;
    json_t *e;
    json_array_foreach(tl->events, i, e)
    {
        char t[32];
        snprintf(t, sizeof t, "%.3f", json_real_value(json_array_get(e, 0)));
        row(f, t, json_string_value(json_array_get(e, 1)),
            json_string_value(json_array_get(e, 2)) ?: "");
    }
    fputs("</table>\n<h2>Configuration</h2>\n<pre id=\"config\">", f);
    eeb_html_text(f, run->config);
    fputs("</pre>\n<p>Written by eeb " EEB_VERSION " (", f);
    eeb_html_text(f, eeb_build());
    fputs(").</p>\n</body></html>\n", f);
}

int eeb_run_report(const char *db_path, int64_t run, const char *html_path, char *err,
                   size_t errlen)
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
    struct timeline tl = {
        .ft_begin = NAN, .ft_end = NAN, .test_begin = NAN, .test_end = NAN, .events = json_array()};
    struct series watts = {0};
    struct eeb_atomic_file af = {0};
    if (!tr || !tl.events) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "report: out of memory");
        goto out;
    }
    if ((rc = eeb_rundb_run_get(db, o.run, &row, err, errlen)) ||
        (rc = eeb_rundb_samples_each(db, row.id, INT64_MIN, INT64_MAX, trace_sample, tr, err,
                                     errlen)))
        goto out;
    tr->pass = 1;
    if (tr->n && (rc = eeb_rundb_samples_each(db, row.id, INT64_MIN, INT64_MAX, trace_sample, tr,
                                              err, errlen)))
        goto out;
    tl.t0 = tr->n ? tr->t0 : row.created_utc_ns;
    if ((rc = eeb_rundb_events_each(db, row.id, timeline_event, &tl, err, errlen)))
        goto out;
    for (int k = 0; k < BUCKETS; k++) {
        if (!tr->b[k].used)
            continue;
        int lo_first = tr->b[k].t_lo <= tr->b[k].t_hi;
        if (push(&watts, lo_first ? tr->b[k].t_lo : tr->b[k].t_hi,
                 lo_first ? tr->b[k].lo : tr->b[k].hi) ||
            push(&watts, lo_first ? tr->b[k].t_hi : tr->b[k].t_lo,
                 lo_first ? tr->b[k].hi : tr->b[k].lo)) {
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "report: out of memory");
            goto out;
        }
    }
    if ((rc = eeb_atomic_open(&af, html_path, err, errlen)))
        goto out;
    page(af.f, &row, &o, tr, &tl, &watts);
    rc = eeb_atomic_commit(&af, err, errlen);
out:
    if (rc)
        eeb_atomic_abort(&af);
    free(watts.p), free(tl.loss.p), free(tl.metric.p);
    json_decref(tl.events);
    free(tr);
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(db);
    return rc;
}
