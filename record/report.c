/*
 * report.c - `eeb report`: one self-contained HTML page per run (no
 * scripts, fonts or images from elsewhere) with the power trace as an
 * inline SVG plot -- P_max line, stage bands, T_max marker -- the loss and
 * training metric over time, the verdict as `eeb check` recomputes it, the
 * score with each term's share of the penalty, the system under test
 * (report_sut.c), the events and the configuration.  What a run never had (a killed run's test
 * stage, M_s, S) is shown as "-", and numbers are written in their shortest form (eeb_number_text)
 * or to a fixed precision, never as "%.17g" noise.  Sections: gathering, numbers, plotting, the
 * score, the page.
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

#define PLOT_W   960
#define PLOT_H   300
#define MARGIN_L 60
#define MARGIN_R 60
#define MARGIN_T 20
#define MARGIN_B 40
/* the plot area's pixel columns: a series is drawn with at most two
 * points in each (columns_add) */
#define PLOT_COLUMNS (PLOT_W - MARGIN_L - MARGIN_R)

/* T_max is drawn when it falls within this many times the run's length;
 * further out it would squeeze the run into the plot's left edge, and the
 * plot says where it is instead. */
#define TMAX_NEAR 2.0

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

/* ---- downsampling ----
 *
 * A series is drawn with at most two points in each pixel column of the
 * plot: the column's lowest and highest value, in the order they came.  A
 * peak one sample wide still shows at its height, and a trace of millions
 * of samples is at most 2 x PLOT_COLUMNS points (the server draws a live
 * run's page each second). */
struct columns {
    double x_hi; /* the time axis's end: columns span [0, x_hi] */
    struct column {
        double lo, hi, t_lo, t_hi;
        int used;
    } c[PLOT_COLUMNS];
};

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
static int downsample(const struct series *in, double x_hi, struct series *out)
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

struct trace {
    int pass;       /* 0: the span, 1: the columns */
    int64_t t0, t1; /* first and last sample */
    int64_t origin; /* pass 1: time 0 of the axis, on this trace's clock */
    uint64_t n;
    double peak;
    char source[256];    /* the first sample's power source */
    struct columns cols; /* pass 1: on the time axis, which needs the span */
};

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

struct timeline {
    int have_t0;                                   /* t0 is the first sample's, or else */
    int64_t t0;                                    /* the first event's (the same clock) */
    double ft_begin, ft_end, test_begin, test_end; /* seconds, NAN if absent */
    double last;                                   /* the last event, seconds; NAN if none */
    struct series loss, metric;                    /* train events; epoch ends */
    json_t *events;                                /* [t, kind, payload] but "train" */
    struct report_sut sut;                         /* the system under test's events */
};

/* Director mode: the server's meter gave E, and its power log is another
 * run of the same database (the configuration's power.meter_run).  Its
 * trace is the one plotted; the team's own log is drawn beside it, placed
 * on the meter's clock by their fine-tune's begin (each log's own
 * finetune_begin event: the meter run's is written when the run is
 * scored), or by their first samples until then. */
struct director {
    int64_t meter_run;         /* 0: not director mode */
    struct trace *meter;       /* its samples */
    struct series watts;       /* the meter's, downsampled */
    char meter_provenance[16]; /* as its power log says */
    char team_provenance[16];  /* of the team's own samples */
    int by_fine_tune;          /* placed by the fine-tune's begin, not the first samples */
};

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
static const char *fixed(char out[EEB_NUMBER_MAX], double v, int decimals)
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

/* Decimals that show a tick step exactly: 0 for 1 and up, 1 for 0.5, 2 for 0.05. */
static int step_decimals(double step)
{
    return step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
}

/* ---- plotting ---- */

/* A round step giving about n ticks over [0, hi]. */
static double tick_step(double hi, int n)
{
    double raw = hi / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

struct axes {
    double x_hi, y_hi;   /* both start at 0 */
    const char *x_label; /* what time 0 is */
};

/* Both plots' time axis: the run's record, and T_max's marker if it falls
 * near it. */
struct time_axis {
    double end;     /* the record's last sample or event, seconds */
    double tmax_at; /* fine-tuning's start + T_max; NAN without either, or on the modeled clock */
    int modeled;    /* T_max is on the modeled clock, not this (the host's) axis */
    int tmax_shown; /* within TMAX_NEAR x end: drawn, the axis stretched to it */
    double x_hi;
    const char *x_label;
};

static struct time_axis time_axis(uint64_t samples, double span_s, const struct timeline *tl,
                                  double t_max, int modeled)
{
    struct time_axis ta = {.end = samples ? span_s : 0, .modeled = modeled};
    ta.end = fmax(ta.end, tl->last); /* fmax ignores a NAN */
    ta.tmax_at = modeled ? NAN : tl->ft_begin + t_max;
    ta.tmax_shown = !isnan(ta.tmax_at) && ta.tmax_at <= TMAX_NEAR * ta.end;
    double hi = ta.tmax_shown ? fmax(ta.end, ta.tmax_at) : ta.end;
    ta.x_hi = hi > 0 ? hi * 1.02 : 1;
    ta.x_label = samples ? "seconds since the first power sample" : "seconds since the first event";
    return ta;
}

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
    /* ticks at k x step, not a running sum, so 0.1 + 0.2 never shows */
    double xs = tick_step(a->x_hi, 8), ys = tick_step(a->y_hi, 5);
    int xd = step_decimals(xs), yd = step_decimals(ys);
    for (int k = 0; k * xs <= a->x_hi * (1 + 1e-9); k++)
        fprintf(f,
                "<text class=\"x-tick\" x=\"%.1f\" y=\"%d\" font-size=\"11\" "
                "text-anchor=\"middle\">%.*f</text>\n",
                px(a, k * xs), PLOT_H - MARGIN_B + 15, xd, k * xs);
    for (int k = 0; k * ys <= a->y_hi * (1 + 1e-9); k++)
        fprintf(f,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text class=\"y-tick\" x=\"%d\" y=\"%.1f\" font-size=\"11\" "
                "text-anchor=\"end\">%.*f</text>\n",
                MARGIN_L, PLOT_W - MARGIN_R, py(a, k * ys), py(a, k * ys), MARGIN_L - 5,
                py(a, k * ys) + 4, yd, k * ys);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n"
            "<text x=\"14\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 14 %d)\">%s</text>\n",
            (PLOT_W + MARGIN_L - MARGIN_R) / 2, PLOT_H - 5, a->x_label, PLOT_H / 2, PLOT_H / 2,
            y_label);
}

/* Labels at the plot's top, in rows: each goes to the first row where it
 * overlaps no label placed before it, or, with every row taken there, is
 * left out (the legend under the plot always names every part).  They are
 * written after every line, each on a white outline, so that no line
 * crosses their letters. */
#define LABEL_ROWS   3
#define LABEL_CHAR_W 6.6 /* pixels a character takes at font-size 11, above sans-serif's mean */
#define LABEL_GAP    4
/* a white outline under a label, so that a line crossing it hides no letter */
#define HALO "stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\""

struct labels {
    struct placed {
        const char *id, *text, *fill;
        double x0, x1;
        int row;
    } at[8];
    int n;
};

static double label_w(const char *text)
{
    return (double)strlen(text) * LABEL_CHAR_W;
}

static double label_y(int row)
{
    return MARGIN_T + 12 + 13 * row;
}

/* Places the label text (id, colour fill) starting at x0, moved inside
 * the plot: 1, or 0 if it is left out. */
static int place_label(struct labels *l, const char *id, const char *text, const char *fill,
                       double x0)
{
    double w = label_w(text);
    x0 = fmax(MARGIN_L + 2, fmin(x0, PLOT_W - MARGIN_R - 2 - w));
    if (l->n == (int)(sizeof l->at / sizeof *l->at))
        return 0;
    for (int row = 0; row < LABEL_ROWS; row++) {
        int clear = 1;
        for (int i = 0; i < l->n && clear; i++)
            clear = l->at[i].row != row || x0 + w + LABEL_GAP <= l->at[i].x0 ||
                    l->at[i].x1 + LABEL_GAP <= x0;
        if (clear) {
            l->at[l->n++] = (struct placed){id, text, fill, x0, x0 + w, row};
            return 1;
        }
    }
    return 0;
}

static void draw_labels(FILE *f, const struct labels *l)
{
    for (int i = 0; i < l->n; i++)
        fprintf(f,
                "<text class=\"band-label\" id=\"%s-label\" x=\"%.1f\" y=\"%.1f\" "
                "font-size=\"11\" fill=\"%s\" " HALO ">%s</text>\n",
                l->at[i].id, l->at[i].x0, label_y(l->at[i].row), l->at[i].fill, l->at[i].text);
}

/* A stage of the run, as a band over the plot. */
struct stage {
    const char *id, *label, *fill;
    double t0, t1; /* seconds; t0 NAN: never begun; t1 NAN: never ended */
};

static void band(FILE *f, const struct axes *a, struct labels *l, const struct stage *st,
                 double end)
{
    if (isnan(st->t0))
        return;
    double t0 = fmax(st->t0, 0), t1 = isnan(st->t1) ? end : fmax(st->t1, t0);
    double x0 = px(a, t0), width = fmax(px(a, t1) - x0, 1); /* an instant is still seen */
    fprintf(f,
            "<rect class=\"stage\" id=\"%s-band\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
            "height=\"%d\" fill=\"%s\"/>\n",
            st->id, x0, MARGIN_T, width, PLOT_H - MARGIN_T - MARGIN_B, st->fill);
    place_label(l, st->id, st->label, "#000", x0 + 3);
}

/* The stage's line of the legend: when it ran, or "-" if it never began. */
static void stage_legend(FILE *f, const struct stage *st, const char *name)
{
    char a[EEB_NUMBER_MAX], b[EEB_NUMBER_MAX];
    fprintf(f, "<li id=\"%s-legend\"><span class=\"swatch\" style=\"background:%s\"></span>",
            st->id, st->fill);
    if (isnan(st->t0))
        fprintf(f, "%s: -", name);
    else if (isnan(st->t1))
        fprintf(f, "%s: from %s s, no end recorded", name, fixed(a, st->t0, 3));
    else
        fprintf(f, "%s: %s s to %s s", name, fixed(a, st->t0, 3), fixed(b, st->t1, 3));
    fputs("</li>\n", f);
}

static void line_legend(FILE *f, const char *id, const char *colour, const char *text)
{
    fprintf(f, "<li id=\"%s\"><span class=\"swatch line\" style=\"border-color:%s\"></span>", id,
            colour);
    eeb_html_text(f, text);
    fputs("</li>\n", f);
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

static void tmax_mark(FILE *f, const struct axes *a, struct labels *l, const struct time_axis *ta,
                      double t_max)
{
    char n[EEB_NUMBER_MAX];
    if (ta->tmax_shown) {
        double x = px(a, ta->tmax_at);
        fprintf(f,
                "<line id=\"tmax-marker\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" "
                "stroke=\"#ff7f0e\" stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\n",
                x, x, MARGIN_T, PLOT_H - MARGIN_B);
        /* at the marker's left, as if anchored at its end */
        place_label(l, "tmax", "T_max", "#ff7f0e", x - 3 - label_w("T_max"));
    } else if (!isnan(ta->tmax_at)) {
        fprintf(f,
                "<text id=\"tmax-off-axis\" x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#ff7f0e\" "
                "text-anchor=\"end\">T_max %s s off the axis &#8594;</text>\n",
                PLOT_W - MARGIN_R - 4, PLOT_H - MARGIN_B - 6, eeb_number_text(t_max, n));
    }
}

static void power_plot(FILE *f, const struct trace *tr, const struct timeline *tl,
                       const struct series *watts, const struct time_axis *ta, double t_max,
                       double p_max, const struct director *d)
{
    char n[EEB_NUMBER_MAX], at[EEB_NUMBER_MAX], text[640];
    double peak = d->meter_run ? fmax(d->meter->peak, tr->peak) : tr->peak;
    struct axes a = {ta->x_hi, fmax(peak, isnan(p_max) ? 0 : p_max) * 1.15, ta->x_label};
    if (!(a.y_hi > 0))
        a.y_hi = 1;
    struct labels l = {0};
    const struct stage stages[] = {
        {"finetune", "fine-tune (metered)", "#cfe3f5", tl->ft_begin, tl->ft_end},
        {"test", "test", "#d9f2d9", tl->test_begin, tl->test_end},
    };
    frame(f, &a, "power-plot", "Power trace", "watts");
    for (size_t i = 0; i < sizeof stages / sizeof *stages; i++)
        band(f, &a, &l, &stages[i], ta->end);
    if (d->meter_run) { /* the meter E came from on top, the team's log beside it */
        polyline(f, &a, watts, "team-trace", "#9467bd", 1);
        polyline(f, &a, &d->watts, "power-trace", "#1f77b4", 1);
    } else
        polyline(f, &a, watts, "power-trace", "#1f77b4", 1);
    if (!isnan(p_max))
        fprintf(f,
                "<line id=\"pmax-line\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
                "stroke=\"#d62728\" stroke-width=\"2\" stroke-dasharray=\"8 4\"/>"
                /* two lines, so that the value fits the right margin */
                "<text id=\"pmax-label\" font-size=\"11\" fill=\"#d62728\"><tspan x=\"%d\" "
                "y=\"%.1f\">P_max</tspan><tspan x=\"%d\" y=\"%.1f\">%s W</tspan></text>\n",
                MARGIN_L, PLOT_W - MARGIN_R, py(&a, p_max), py(&a, p_max), PLOT_W - MARGIN_R + 3,
                py(&a, p_max) - 2, PLOT_W - MARGIN_R + 3, py(&a, p_max) + 10,
                eeb_number_text(p_max, n));
    tmax_mark(f, &a, &l, ta, t_max);
    draw_labels(f, &l);
    fputs("</svg>\n<ul class=\"legend\" id=\"power-legend\">\n", f);
    if (d->meter_run) {
        snprintf(text, sizeof text,
                 "the server's meter, %s (%s; its power log, run %lld): E and the P_max rule "
                 "come from it",
                 d->meter->source[0] ? d->meter->source : "no samples", d->meter_provenance,
                 (long long)d->meter_run);
        line_legend(f, "trace-legend", "#1f77b4", text);
        if (tr->n)
            snprintf(text, sizeof text,
                     "the team's own log, %s (%s: the team's word), checked against the meter; "
                     "placed on the meter's clock by %s",
                     tr->source, d->team_provenance,
                     d->by_fine_tune ? "the fine-tune's begin" : "the first samples");
        else
            snprintf(text, sizeof text, "the team's own log: none sent");
        line_legend(f, "team-trace-legend", "#9467bd", text);
    } else
        line_legend(f, "trace-legend", "#1f77b4",
                    "power (each pixel column's lowest and highest reading)");
    stage_legend(f, &stages[0], "fine-tune (metered)");
    stage_legend(f, &stages[1], "test");
    if (!isnan(p_max)) {
        snprintf(text, sizeof text, "P_max %s W", eeb_number_text(p_max, n));
        line_legend(f, "pmax-legend", "#d62728", text);
    }
    if (ta->modeled) {
        snprintf(text, sizeof text,
                 "T_max %s s, on the modeled clock (steps x the modeled step time), not this "
                 "axis: the host's",
                 eeb_number_text(t_max, n));
        line_legend(f, "tmax-legend", "#ff7f0e", text);
    } else if (!isnan(ta->tmax_at)) {
        snprintf(text, sizeof text, "T_max %s s, at %s s%s", eeb_number_text(t_max, n),
                 fixed(at, ta->tmax_at, 3), ta->tmax_shown ? "" : ": off the axis");
        line_legend(f, "tmax-legend", "#ff7f0e", text);
    } else {
        snprintf(text, sizeof text, "T_max %s s: - (fine-tuning never began)",
                 eeb_number_text(t_max, n));
        line_legend(f, "tmax-legend", "#ff7f0e", text);
    }
    fputs("</ul>\n", f);
}

static void training_plot(FILE *f, const struct timeline *tl, const struct time_axis *ta)
{
    double loss_hi = 0;
    for (size_t i = 0; i < tl->loss.n; i++)
        loss_hi = fmax(loss_hi, tl->loss.p[i].v);
    struct axes a = {ta->x_hi, loss_hi > 0 ? loss_hi * 1.1 : 1, ta->x_label};
    struct labels l = {0};
    const struct stage ft = {"training-finetune", "fine-tune", "#cfe3f5", tl->ft_begin, tl->ft_end};
    frame(f, &a, "training-plot", "Loss and training metric", "loss");
    band(f, &a, &l, &ft, ta->end);
    /* a step's loss each: a long run's are downsampled as its power is
     * (out of memory, drawn whole) */
    struct series loss = {0}, metric = {0};
    int whole =
        downsample(&tl->loss, ta->x_hi, &loss) || downsample(&tl->metric, ta->x_hi, &metric);
    polyline(f, &a, whole ? &tl->loss : &loss, "loss-curve", "#9467bd", 1);
    /* the metric, in [0, 1], on its own axis at the right */
    polyline(f, &a, whole ? &tl->metric : &metric, "metric-curve", "#2ca02c", a.y_hi);
    free(loss.p), free(metric.p);
    draw_labels(f, &l);
    for (int k = 0; k <= 4; k++)
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#2ca02c\">%.2f</text>\n",
                PLOT_W - MARGIN_R + 4, py(&a, a.y_hi * k / 4) + 4, k / 4.0);
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" fill=\"#2ca02c\" text-anchor=\"middle\" "
            "transform=\"rotate(90 %d %d)\">training metric</text>\n",
            PLOT_W - 14, PLOT_H / 2, PLOT_W - 14, PLOT_H / 2);
    fputs("</svg>\n<ul class=\"legend\" id=\"training-legend\">\n", f);
    line_legend(f, "loss-legend", "#9467bd",
                tl->loss.n ? "loss (the mean since the previous point)" : "loss: -");
    line_legend(f, "metric-legend", "#2ca02c",
                tl->metric.n ? "training metric at each epoch's end (right axis)"
                             : "training metric: -");
    stage_legend(f, &ft, "fine-tune");
    fputs("</ul>\n", f);
}

/* ---- the score ---- */

enum { TERM_U, TERM_T, TERM_P, TERM_S }; /* the order of struct terms' arrays */

/* The score's parts as the judge computed them, NAN for what the run never
 * had; the weights and the utilization fractions from the configuration. */
struct terms {
    double m[4];    /* M_u, M_t, M_p, M_s */
    double w[4];    /* w_u, w_t, w_p, w_s */
    double term[4]; /* w_u M_u, w_t M_t, w_p M_p, w_s (1 - M_s) */
    double penalty; /* their sum: S = 1 - penalty */
    double s;
    double frac[4]; /* LUT, FF, BRAM, DSP */
};

static void score_terms(const struct eeb_run_outcome *o, const struct eeb_config_record *cfg,
                        struct terms *t)
{
    /* eeb_score_compute fills the whole score (T > 0) or nothing: a run
     * stopped before scoring has zeros there, which it never had */
    int scored = o->score.t_s > 0;
    const double m[4] = {o->score.m_u, o->score.m_t, o->score.m_p, o->score.m_s};
    t->penalty = 0;
    for (int i = 0; i < 4; i++) {
        t->m[i] = scored ? m[i] : NAN;
        t->w[i] = cfg->weights[i];
        t->frac[i] = cfg->util[i];
        t->term[i] = t->w[i] * (i == TERM_S ? 1 - t->m[i] : t->m[i]);
        t->penalty += t->term[i];
    }
    t->s = o->pass ? o->score.s : NAN;
}

static void cell_text(FILE *f, const char *text)
{
    fputs("<td>", f);
    eeb_html_text(f, text);
    fputs("</td>", f);
}

/* One metric's row: its value, weight, weighted term and share of the penalty. */
static void term_row(FILE *f, const char *id, const char *name, const struct terms *t, int i,
                     const char *from)
{
    char v[EEB_NUMBER_MAX], w[EEB_NUMBER_MAX], term[EEB_NUMBER_MAX], share[EEB_NUMBER_MAX];
    double pct = t->penalty > 0 ? 100 * t->term[i] / t->penalty : NAN;
    fprintf(f, "<tr id=\"%s\"><th>%s</th>", id, name);
    cell_text(f, fixed(v, t->m[i], 4));
    cell_text(f, eeb_number_text(t->w[i], w));
    cell_text(f, fixed(term, t->term[i], 4));
    fprintf(f, "<td>%s%s</td>", fixed(share, pct, 1), isnan(pct) ? "" : " %");
    cell_text(f, from);
    fputs("</tr>\n", f);
}

/* The four fractions M_u is the mean of, under its row. */
static void fraction_rows(FILE *f, const struct terms *t)
{
    static const char *const parts[] = {"LUT", "FF", "BRAM", "DSP"};
    char v[EEB_NUMBER_MAX];
    for (int i = 0; i < 4; i++) {
        fprintf(f, "<tr id=\"util-%s\" class=\"part\"><th>&#8195;%s</th>", parts[i], parts[i]);
        cell_text(f, fixed(v, t->frac[i], 4));
        fprintf(f, "<td colspan=\"4\">fraction of the device's %s in use</td></tr>\n", parts[i]);
    }
}

static void score_table(FILE *f, const struct eeb_run_row *run, const struct eeb_run_outcome *o,
                        const struct timeline *tl, const struct eeb_config_record *cfg)
{
    struct terms t;
    score_terms(o, cfg, &t);
    int scored = !isnan(t.m[TERM_U]);
    char note[640], a[EEB_NUMBER_MAX], b[EEB_NUMBER_MAX], c[EEB_NUMBER_MAX], d[EEB_NUMBER_MAX],
        e[EEB_NUMBER_MAX];
    fputs("<h2>Score</h2>\n<table id=\"score\"><tr><th>metric</th><th>value</th><th>weight</th>"
          "<th>weighted term</th><th>share of the penalty</th><th>from</th></tr>\n",
          f);
    snprintf(note, sizeof note, "mean of the four fractions below, from %s",
             cfg->util_source[0] ? cfg->util_source : "-");
    term_row(f, "score-m_u", "M_u", &t, TERM_U, note);
    fraction_rows(f, &t);
    snprintf(note, sizeof note, "T %s s / T_max %s s%s%s", fixed(a, scored ? o->t_s : NAN, 3),
             eeb_number_text(run->t_max_s, b), o->tmax_reached ? " (stopped at T_max)" : "",
             o->modeled_clock ? ", on the modeled clock: the steps taken × the modeled step time"
                              : "");
    term_row(f, "score-m_t", "M_t", &t, TERM_T, note);
    if (o->modeled_clock)
        snprintf(note, sizeof note,
                 "E %s J / (P_max %s W × T); the modeled training power %s W over T (the trace "
                 "below is the host's, not scored)",
                 fixed(a, scored ? o->energy_j : NAN, 3), eeb_number_text(run->p_max_w, b),
                 fixed(c, scored ? o->worst_w : NAN, 3));
    else
        snprintf(note, sizeof note, "E %s J / (P_max %s W × T); mean %s W, worst %s s window %s W",
                 fixed(a, scored ? o->energy_j : NAN, 3), eeb_number_text(run->p_max_w, b),
                 fixed(c, scored ? o->score.mean_power_w : NAN, 3),
                 eeb_number_text(cfg->window_s, d), fixed(e, scored ? o->worst_w : NAN, 3));
    term_row(f, "score-m_p", "M_p", &t, TERM_P, note);
    if (isnan(tl->test_end))
        snprintf(note, sizeof note, "%s: no test stage recorded", eeb_task_metric(o->task));
    else if (!scored)
        snprintf(note, sizeof note, "%s: not computed (the run was not scored)",
                 eeb_task_metric(o->task));
    else
        snprintf(note, sizeof note, "%s on %llu test items", eeb_task_metric(o->task),
                 (unsigned long long)o->test_items);
    term_row(f, "score-m_s", "M_s", &t, TERM_S, note);
    fprintf(f,
            "<tr id=\"score-penalty\"><th>penalty</th><td>%s</td><td>%s</td><td>%s</td>"
            "<td>%s</td><td>w_u M_u + w_t M_t + w_p M_p + w_s (1 &#8722; M_s)</td></tr>\n",
            fixed(a, t.penalty, 4), eeb_number_text(t.w[0] + t.w[1] + t.w[2] + t.w[3], b),
            fixed(c, t.penalty, 4), isnan(t.penalty) ? "-" : "100 %");
    fprintf(f,
            "<tr id=\"score-s\"><th>S</th><td>%s</td><td colspan=\"4\">1 &#8722; penalty%s"
            "</td></tr>\n</table>\n",
            fixed(a, t.s, 4), scored && isnan(t.s) ? "; not defined: the run did not pass" : "");
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
        fprintf(f, "<tr><th>%s</th><td>", fixed(t, json_real_value(json_array_get(e, 0)), 3));
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
    score_table(f, run, o, tl, &cfg);
    fputs("<h2>Power</h2>\n", f);
    if (d->meter_run) {
        const struct trace *m = d->meter;
        fprintf(f,
                "<p id=\"director\">Director mode: the server read the team's meter itself, "
                "and E comes from it. The server's meter: %llu samples over %s s, peak %s W. "
                "The team's own log, beside it: ",
                (unsigned long long)m->n, fixed(a, m->n ? (double)(m->t1 - m->t0) / 1e9 : 0, 1),
                fixed(b, m->peak, 3));
        if (tr->n)
            fprintf(f, "%llu samples over %s s, peak %s W.</p>\n", (unsigned long long)tr->n,
                    fixed(a, (double)(tr->t1 - tr->t0) / 1e9, 1), fixed(b, tr->peak, 3));
        else
            fputs("none.</p>\n", f);
    } else if (tr->n)
        fprintf(f, "<p>%llu samples over %s s; peak %s W.</p>\n", (unsigned long long)tr->n,
                fixed(a, (double)(tr->t1 - tr->t0) / 1e9, 1), fixed(b, tr->peak, 3));
    else
        fputs("<p>No power samples were committed.</p>\n", f);
    power_plot(f, tr, tl, watts, ta, run->t_max_s, run->p_max_w, d);
    fputs("<h2>Training</h2>\n<p>The training loss (purple, the mean since the previous point) "
          "and the training metric at each epoch's end (green, right axis: top-1 accuracy, or "
          "for detection the object cells' class accuracy).</p>\n",
          f);
    training_plot(f, tl, ta);
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
    struct time_axis ta = time_axis(samples, span_s, &tl, row.t_max_s, o.modeled_clock);
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
