/*
 * report_plot.c - the report's SVG plots: the power trace (P_max's line,
 * the stage bands, T_max's marker; in director mode the server's meter
 * with the team's own log beside it) and the loss and training metric over
 * time, each with its legend.  Labels that would overlap are moved to
 * rows of their own.  Sections: numbers, plotting.
 */
#include "report_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* T_max is drawn when it falls within this many times the run's length;
 * further out it would squeeze the run into the plot's left edge, and the
 * plot says where it is instead. */
#define TMAX_NEAR 2.0

/* ---- numbers ---- */

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

struct time_axis report_time_axis(uint64_t samples, double span_s, const struct timeline *tl,
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
        fprintf(f, "%s: from %s s, no end recorded", name, report_fixed(a, st->t0, 3));
    else
        fprintf(f, "%s: %s s to %s s", name, report_fixed(a, st->t0, 3),
                report_fixed(b, st->t1, 3));
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

void report_power_plot(FILE *f, const struct trace *tr, const struct timeline *tl,
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
                 report_fixed(at, ta->tmax_at, 3), ta->tmax_shown ? "" : ": off the axis");
        line_legend(f, "tmax-legend", "#ff7f0e", text);
    } else {
        snprintf(text, sizeof text, "T_max %s s: - (fine-tuning never began)",
                 eeb_number_text(t_max, n));
        line_legend(f, "tmax-legend", "#ff7f0e", text);
    }
    fputs("</ul>\n", f);
}

void report_training_plot(FILE *f, const struct timeline *tl, const struct time_axis *ta)
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
    int whole = report_downsample(&tl->loss, ta->x_hi, &loss) ||
                report_downsample(&tl->metric, ta->x_hi, &metric);
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
