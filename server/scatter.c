/*
 * scatter.c - the leaderboard's plot beside each table (ranking_page.c):
 * the table's ranked entries, their median energy against their median
 * M_s, a colour per device, each device's Pareto front filled and joined.
 * A plot needs two ranked entries: with fewer, a line says why there is
 * none.  Every text a team chose (names, devices) is escaped.
 */
#include "server_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text at key of o, or NULL (null or missing). */
static const char *text_at(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Where the plot sits in its SVG (px), and the legend's rows below it. */
#define PLOT_L     62
#define PLOT_T     14
#define PLOT_W     340
#define PLOT_H     230
#define SVG_W      (PLOT_L + PLOT_W + 24)
#define LEGEND_TOP (PLOT_T + PLOT_H + 50)
#define LEGEND_ROW 16

/* A colour per device, in the order devices first appear in the table
 * (Okabe and Ito's, told apart by colour-blind readers too; an eighth
 * device takes the first colour again, and the legend still names it). */
static const char *const device_colours[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7",
                                             "#e69f00", "#56b4e9", "#000000"};
#define N_COLOURS (sizeof device_colours / sizeof *device_colours)

/* A ranked entry as the scatter places it. */
struct point {
    double e, ms;        /* its median energy (J) and M_s */
    size_t device;       /* its device's index in the legend */
    int pareto;          /* on its device's front */
    const json_t *entry; /* as the JSON gives it */
};

/* An axis over [lo, hi], widened so that a single value or equal ones
 * still span it, with ticks at round steps (1, 2 or 5 times a power of
 * ten) and the decimals they need. */
struct axis {
    double lo, hi, step;
    int decimals;
};

static struct axis axis_over(double lo, double hi, double least_span)
{
    if (hi - lo < least_span) {
        double mid = (lo + hi) / 2;
        lo = mid - least_span / 2, hi = mid + least_span / 2;
    }
    double pad = (hi - lo) * 0.08;
    struct axis a = {.lo = lo - pad, .hi = hi + pad};
    double rough = (a.hi - a.lo) / 4, p = pow(10, floor(log10(rough))), m = rough / p;
    a.step = (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
    a.decimals = a.step >= 1 ? 0 : (int)ceil(-log10(a.step) - 1e-9);
    return a;
}

static double px_x(const struct axis *a, double v)
{
    return PLOT_L + (v - a->lo) / (a->hi - a->lo) * PLOT_W;
}

static double px_y(const struct axis *a, double v)
{
    return PLOT_T + (1 - (v - a->lo) / (a->hi - a->lo)) * PLOT_H;
}

/* The axes' lines, ticks, tick labels and names. */
static void axes(FILE *f, const struct axis *x, const struct axis *y, const char *metric)
{
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fff\" "
            "stroke=\"#999\"/>\n",
            PLOT_L, PLOT_T, PLOT_W, PLOT_H);
    for (double v = ceil(x->lo / x->step) * x->step; v <= x->hi; v += x->step) {
        double px = px_x(x, v);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#eee\"/>"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.*f</text>\n",
                px, PLOT_T, px, PLOT_T + PLOT_H, px, PLOT_T + PLOT_H + 15, x->decimals,
                fabs(v) < x->step / 1e6 ? 0.0 : v);
    }
    for (double v = ceil(y->lo / y->step) * y->step; v <= y->hi; v += y->step) {
        double py = px_y(y, v);
        fprintf(f,
                "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
                PLOT_L, py, PLOT_L + PLOT_W, py, PLOT_L - 5, py + 4, y->decimals,
                fabs(v) < y->step / 1e6 ? 0.0 : v);
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">E, energy of the fine-tune (J)</text>\n"
            "<text transform=\"translate(14 %d) rotate(-90)\" text-anchor=\"middle\">M<tspan "
            "baseline-shift=\"sub\" font-size=\"9\">s</tspan> (",
            PLOT_L + PLOT_W / 2, PLOT_T + PLOT_H + 34, PLOT_T + PLOT_H / 2);
    eeb_html_text(f, metric);
    fputs(", higher is better)</text>\n", f);
}

/* Each device's Pareto front, its points joined by increasing energy
 * (order: room for n indices). */
static void fronts(FILE *f, const struct point *p, size_t n, size_t ndevices, size_t *order,
                   const struct axis *x, const struct axis *y)
{
    for (size_t d = 0; d < ndevices; d++) {
        size_t on = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i].device != d || !p[i].pareto)
                continue;
            size_t j = on++;
            for (; j > 0 && p[order[j - 1]].e > p[i].e; j--)
                order[j] = order[j - 1];
            order[j] = i;
        }
        if (on < 2)
            continue;
        fprintf(f,
                "<polyline class=\"front\" fill=\"none\" stroke-width=\"1.5\" stroke=\"%s\" "
                "points=\"",
                device_colours[d % N_COLOURS]);
        for (size_t i = 0; i < on; i++)
            fprintf(f, "%s%.1f,%.1f", i ? " " : "", px_x(x, p[order[i]].e),
                    px_y(y, p[order[i]].ms));
        fputs("\"/>\n", f);
    }
}

/* A point: filled if on its device's front, hollow if another of its
 * device does better, named in its title and its data-* attributes. */
static void point(FILE *f, const struct point *p, const struct axis *x, const struct axis *y)
{
    const char *colour = device_colours[p->device % N_COLOURS];
    char e[EEB_NUMBER_MAX], ms[EEB_NUMBER_MAX];
    fprintf(f,
            "<circle%s cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" stroke=\"%s\" "
            "stroke-width=\"2\" data-team=\"",
            p->pareto ? " class=\"pareto\"" : "", px_x(x, p->e), px_y(y, p->ms),
            p->pareto ? colour : "#fff", colour);
    eeb_html_text(f, text_at(p->entry, "team"));
    fputs("\" data-entry=\"", f);
    eeb_html_text(f, text_at(p->entry, "entry"));
    fprintf(f, "\" data-e=\"%s\" data-ms=\"%s\"><title>", eeb_number_exact(p->e, e),
            eeb_number_exact(p->ms, ms));
    eeb_html_text(f, text_at(p->entry, "team"));
    fputs(" / ", f);
    eeb_html_text(f, text_at(p->entry, "entry"));
    fputs(" on ", f);
    eeb_html_text(f, text_at(p->entry, "device"));
    fprintf(f, ": E %.1f J, M_s %.4f%s</title></circle>\n", p->e, p->ms,
            p->pareto ? ", on its device's Pareto front" : "");
}

int eeb_srv_scatter(FILE *f, const char *id, const json_t *table, const char *metric, char *err,
                    size_t errlen)
{
    const json_t *entries = json_object_get(table, "entries");
    size_t n = 0, ndevices = 0, cap = json_array_size(entries), i;
    struct point *p = calloc(cap ? cap : 1, sizeof *p);
    const char **devices = calloc(cap ? cap : 1, sizeof *devices);
    size_t *order = calloc(cap ? cap : 1, sizeof *order);
    if (!p || !devices || !order) {
        free(p), free(devices), free(order);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    json_t *e;
    double e_lo = INFINITY, e_hi = -INFINITY, ms_lo = INFINITY, ms_hi = -INFINITY;
    json_array_foreach(entries, i, e)
    {
        const char *state = text_at(e, "state"), *device = text_at(e, "device");
        double energy = eeb_json_number_at(e, "energy_j"), ms = eeb_json_number_at(e, "m_s");
        if (!state || strcmp(state, "ranked") || isnan(energy) || isnan(ms))
            continue;
        device = device ? device : "-";
        size_t d = 0;
        while (d < ndevices && strcmp(devices[d], device))
            d++;
        if (d == ndevices)
            devices[ndevices++] = device;
        p[n++] = (struct point){.e = energy,
                                .ms = ms,
                                .device = d,
                                .pareto = json_is_true(json_object_get(e, "pareto")),
                                .entry = e};
        e_lo = fmin(e_lo, energy), e_hi = fmax(e_hi, energy);
        ms_lo = fmin(ms_lo, ms), ms_hi = fmax(ms_hi, ms);
    }
    if (n < 2) { /* a point alone is no trade-off to look at, and none is no plot */
        fprintf(f,
                "<p class=\"no-plot\" id=\"%s\">No plot of energy against M<sub>s</sub>: %s</p>\n",
                id,
                n ? "one entry of this table is ranked, and a plot needs two to compare"
                  : "no entry of this table is ranked yet (a plot needs two)");
        free(p), free(devices), free(order);
        return EEB_OK;
    }
    int height = LEGEND_TOP + LEGEND_ROW * ((int)ndevices + 1);
    fprintf(f,
            "<svg class=\"pareto\" id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" font-size=\"11\"><title>E against "
            "M_s of the ranked entries; filled points are on their device's Pareto front (no "
            "other entry on it uses less energy for no less M_s)</title>\n",
            id, SVG_W, height, SVG_W, height);
    struct axis x = axis_over(e_lo, e_hi, fmax(fabs(e_hi) * 0.2, 1e-3));
    struct axis y = axis_over(ms_lo, ms_hi, 0.05);
    axes(f, &x, &y, metric);
    fronts(f, p, n, ndevices, order, &x, &y); /* under the points */
    for (i = 0; i < n; i++)
        point(f, &p[i], &x, &y);
    for (size_t d = 0; d < ndevices; d++) {
        int row_y = LEGEND_TOP + LEGEND_ROW * (int)d;
        fprintf(f,
                "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                "<text x=\"%d\" y=\"%d\">",
                PLOT_L, row_y - 9, device_colours[d % N_COLOURS], PLOT_L + 16, row_y);
        eeb_html_text(f, devices[d]);
        fputs("</text>\n", f);
    }
    fprintf(f,
            "<text x=\"%d\" y=\"%d\" fill=\"#555\">filled: on its device's Pareto front; "
            "hollow: dominated</text>\n",
            PLOT_L, LEGEND_TOP + LEGEND_ROW * (int)ndevices);
    fputs("</svg>\n", f);
    free(p), free(devices), free(order);
    return EEB_OK;
}
