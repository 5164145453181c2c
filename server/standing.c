/*
 * standing.c - where an entry of a round stands, from its runs alone: still
 * running until the round's number of its runs are scored; failed if one
 * of them did not pass (a team may not drop a bad run from an entry: it
 * makes a new entry, under the round's cap) or was withdrawn by the
 * organizer; else ranked by the round's
 * aggregate of their S, with the spread shown.  And which ranked entries
 * are on the Pareto front of energy against M_s, per device, and which
 * cannot be told apart.
 */
#include "server_int.h"

#include "scoring/eeb_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The median of x[0..n) (n > 0). */
static double median_of(const double *x, size_t n)
{
    struct eeb_aggregate a;
    char ignored[64];
    return eeb_score_aggregate(x, n, &a, ignored, sizeof ignored) == EEB_OK ? a.median : NAN;
}

void eeb_srv_standing_of(const struct eeb_srv_entry *e, const struct eeb_round *r,
                         struct eeb_srv_standing *out)
{
    *out = (struct eeb_srv_standing){.state = EEB_STANDING_RUNNING,
                                     .runs = r->runs,
                                     .s = NAN,
                                     .s_min = NAN,
                                     .s_max = NAN,
                                     .s_uncertainty = NAN,
                                     .energy_j = NAN,
                                     .t_s = NAN,
                                     .m_s = NAN};
    double s[EEB_ROUND_RUNS_MAX], energy[EEB_ROUND_RUNS_MAX], t[EEB_ROUND_RUNS_MAX],
        m_s[EEB_ROUND_RUNS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < e->nruns && i < (size_t)r->runs; i++) {
        const struct eeb_srv_run *run = &e->runs[i];
        if (run->completed_utc_ns > out->submitted_utc_ns)
            out->submitted_utc_ns = run->completed_utc_ns;
        if (strcmp(run->withdrawn, "withdrawn") == 0 && out->state != EEB_STANDING_FAILED) {
            out->state = EEB_STANDING_FAILED;
            snprintf(out->why, sizeof out->why, "run %lld withdrawn by the organizer: %s",
                     (long long)run->id, run->withdrawn_why);
            eeb_utf8_trim(out->why);
        }
        if (strcmp(run->state, "scored"))
            continue;
        out->scored++;
        if (strcmp(run->verdict, "pass") && out->state != EEB_STANDING_FAILED) {
            out->state = EEB_STANDING_FAILED;
            snprintf(out->why, sizeof out->why, "run %lld: %s: %s", (long long)run->id,
                     run->verdict, run->why);
            eeb_utf8_trim(out->why);
        }
        s[n] = run->s, energy[n] = run->energy_j, t[n] = run->t_s, m_s[n] = run->m_s;
        if (!isnan(run->s_uncertainty) && !(run->s_uncertainty <= out->s_uncertainty))
            out->s_uncertainty = run->s_uncertainty; /* the largest (NAN until one) */
        n++;
    }
    if (out->state == EEB_STANDING_FAILED || out->scored < r->runs)
        return;
    struct eeb_aggregate a;
    char ignored[64];
    if (eeb_score_aggregate(s, n, &a, ignored, sizeof ignored))
        return;
    out->state = EEB_STANDING_RANKED;
    out->s = r->aggregate == EEB_ROUND_OLYMPIC ? a.olympic_mean : a.median;
    out->s_min = a.min, out->s_max = a.max;
    out->energy_j = median_of(energy, n), out->t_s = median_of(t, n), out->m_s = median_of(m_s, n);
}

int eeb_srv_standing_apart(const struct eeb_srv_standing *a, const struct eeb_srv_standing *b)
{
    double ua = isnan(a->s_uncertainty) ? 0 : a->s_uncertainty;
    double ub = isnan(b->s_uncertainty) ? 0 : b->s_uncertainty;
    return fabs(a->s - b->s) > ua + ub;
}

int eeb_srv_standing_dominated(const struct eeb_srv_standing *a, const struct eeb_srv_standing *b)
{
    /* b uses no more energy for no less M_s, and is better in one */
    return b->energy_j <= a->energy_j && b->m_s >= a->m_s &&
           (b->energy_j < a->energy_j || b->m_s > a->m_s);
}
