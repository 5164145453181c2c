/*
 * report_score.c - the report's "Score" section: the score's parts as the
 * judge computed them (each metric, its weight, its weighted term and
 * share of the penalty, the utilization fractions M_u is the mean of), and
 * S, with "-" for what the run never had.
 */
#include "report_int.h"

#include "tasks/eeb_task_ops.h"

#include <math.h>

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
    cell_text(f, report_fixed(v, t->m[i], 4));
    cell_text(f, eeb_number_text(t->w[i], w));
    cell_text(f, report_fixed(term, t->term[i], 4));
    fprintf(f, "<td>%s%s</td>", report_fixed(share, pct, 1), isnan(pct) ? "" : " %");
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
        cell_text(f, report_fixed(v, t->frac[i], 4));
        fprintf(f, "<td colspan=\"4\">fraction of the device's %s in use</td></tr>\n", parts[i]);
    }
}

void report_score_table(FILE *f, const struct eeb_run_row *run, const struct eeb_run_outcome *o,
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
    snprintf(
        note, sizeof note, "T %s s / T_max %s s%s%s", report_fixed(a, scored ? o->t_s : NAN, 3),
        eeb_number_text(run->t_max_s, b), o->tmax_reached ? " (stopped at T_max)" : "",
        o->modeled_clock ? ", on the modeled clock: the steps taken × the modeled step time" : "");
    term_row(f, "score-m_t", "M_t", &t, TERM_T, note);
    if (o->modeled_clock)
        snprintf(note, sizeof note,
                 "E %s J / (P_max %s W × T); the modeled training power %s W over T (the trace "
                 "below is the host's, not scored)",
                 report_fixed(a, scored ? o->energy_j : NAN, 3), eeb_number_text(run->p_max_w, b),
                 report_fixed(c, scored ? o->worst_w : NAN, 3));
    else
        snprintf(note, sizeof note, "E %s J / (P_max %s W × T); mean %s W, worst %s s window %s W",
                 report_fixed(a, scored ? o->energy_j : NAN, 3), eeb_number_text(run->p_max_w, b),
                 report_fixed(c, scored ? o->score.mean_power_w : NAN, 3),
                 eeb_number_text(cfg->window_s, d), report_fixed(e, scored ? o->worst_w : NAN, 3));
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
            report_fixed(a, t.penalty, 4), eeb_number_text(t.w[0] + t.w[1] + t.w[2] + t.w[3], b),
            report_fixed(c, t.penalty, 4), isnan(t.penalty) ? "-" : "100 %");
    fprintf(f,
            "<tr id=\"score-s\"><th>S</th><td>%s</td><td colspan=\"4\">1 &#8722; penalty%s"
            "</td></tr>\n</table>\n",
            report_fixed(a, t.s, 4),
            scored && isnan(t.s) ? "; not defined: the run did not pass" : "");
}
