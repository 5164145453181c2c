/*
 * summary.c - a run's power from its database alone: the stage window from
 * its events, energy and validity, the sampler's counts, and the P_max
 * rule of scoring/ (eeb_power.h); and its samples as read for that, for
 * whoever compares them with another run's (the judge's meter offset).
 */
#include "eeb_power.h"
#include "rundb/eeb_config_record.h"
#include "scoring/eeb_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gather {
    struct eeb_sample *s;
    size_t n, cap;
    char source[256]; /* the first source's; other sources' samples are left out */
};

static int gather_sample(void *arg, const char *source, const struct eeb_sample *x)
{
    struct gather *g = arg;
    if (g->n == 0)
        snprintf(g->source, sizeof g->source, "%s", source);
    if (strcmp(source, g->source) != 0)
        return 0;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 4096;
        void *p = realloc(g->s, cap * sizeof *g->s);
        if (!p)
            return EEB_ENOMEM;
        g->s = p, g->cap = cap;
    }
    g->s[g->n++] = *x;
    return 0;
}

int eeb_power_samples_read(struct eeb_rundb *db, int64_t run, struct eeb_sample **out, size_t *n,
                           char *err, size_t errlen)
{
    struct gather g = {0};
    int rc = eeb_rundb_samples_each(db, run, INT64_MIN, INT64_MAX, gather_sample, &g, err, errlen);
    if (rc == EEB_ENOMEM)
        rc = eeb_errf(err, errlen, rc, "%s: run %lld's samples: out of memory", eeb_rundb_path(db),
                      (long long)run);
    if (rc != EEB_OK) {
        free(g.s);
        g.s = NULL, g.n = 0;
    }
    *out = g.s, *n = g.n;
    return rc;
}

struct window {
    int64_t t[2][2]; /* [finetune, log][begin, end], 0 if absent */
};

static int find_window(void *arg, int64_t t_mono_ns, int64_t t_utc_ns, const char *kind,
                       const char *payload)
{
    (void)t_utc_ns, (void)payload;
    struct window *w = arg;
    static const char *const names[2][2] = {{EEB_EVENT_FINETUNE_BEGIN, EEB_EVENT_FINETUNE_END},
                                            {EEB_EVENT_LOG_BEGIN, EEB_EVENT_LOG_END}};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (strcmp(kind, names[i][j]) == 0 && !w->t[i][j])
                w->t[i][j] = t_mono_ns;
    return 0;
}

/* What the run's configuration says of its meter. */
static void read_config(const char *config, struct eeb_power_summary *out)
{
    struct eeb_config_record c;
    (void)eeb_config_record_read(config, &c); /* a config unread says nothing */
    snprintf(out->provenance, sizeof out->provenance, "%s", c.power_provenance);
    out->rate_hz = isnan(c.rate_hz) ? 0 : c.rate_hz;
    out->update_interval_s = c.update_interval_s > 0 ? c.update_interval_s : 0;
}

static uint64_t count_of(struct eeb_rundb *db, int64_t run, const char *name)
{
    double v = 0;
    char err[256];
    return eeb_rundb_result_get(db, run, name, &v, err, sizeof err) == EEB_OK ? (uint64_t)v : 0;
}

int eeb_power_summarize(const char *path, int64_t run, double p_max_w,
                        struct eeb_power_summary *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct eeb_rundb *db;
    int rc = eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc != EEB_OK)
        return rc;
    struct eeb_run_row row;
    struct gather g = {0};
    struct window w = {0};
    struct eeb_psample *ps = NULL;
    if ((rc = eeb_rundb_run_get(db, run, &row, err, errlen)) != EEB_OK)
        goto out;
    out->run = row.id;
    read_config(row.config, out);
    if ((rc = eeb_rundb_samples_each(db, row.id, INT64_MIN, INT64_MAX, gather_sample, &g, err,
                                     errlen)) != EEB_OK ||
        (rc = eeb_rundb_events_each(db, row.id, find_window, &w, err, errlen)) != EEB_OK)
        goto out;
    if (g.n < 2) {
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: run %lld has %zu power samples; a summary needs two", path,
                      (long long)row.id, g.n);
        goto out;
    }
    snprintf(out->source, sizeof out->source, "%s", g.source);
    int which = w.t[0][0] && w.t[0][1] ? 0 : w.t[1][0] && w.t[1][1] ? 1 : -1;
    snprintf(out->window, sizeof out->window, "%s",
             which == 0   ? "finetune"
             : which == 1 ? "log"
                          : "all samples");
    out->t0_ns = which >= 0 ? w.t[which][0] : g.s[0].t_mono_ns;
    out->t1_ns = which >= 0 ? w.t[which][1] : g.s[g.n - 1].t_mono_ns;
    /* the nominal interval a gap is judged against: the sampler's, or the
     * meter's own update interval where that is longer (a meter updating
     * once a second sampled faster is late by its jitter, never by a gap) */
    double interval = out->rate_hz > 0 ? 1 / out->rate_hz
                                       : (double)(g.s[g.n - 1].t_mono_ns - g.s[0].t_mono_ns) / 1e9 /
                                             (double)(g.n - 1);
    interval = fmax(interval, out->update_interval_s);
    char why[256];
    if ((rc = eeb_power_energy(g.s, g.n, out->t0_ns, out->t1_ns, interval, &out->energy, why,
                               sizeof why)) != EEB_OK) {
        rc = eeb_errf(err, errlen, rc, "%s: run %lld, %s window: %s", path, (long long)row.id,
                      out->window, why);
        goto out;
    }
    out->dropped = count_of(db, row.id, EEB_RESULT_DROPPED);
    out->failed = count_of(db, row.id, EEB_RESULT_FAILED);
    out->missed = count_of(db, row.id, EEB_RESULT_MISSED);
    struct eeb_power_validity v;
    eeb_power_validity_default(&v);
    out->valid = eeb_power_valid(&out->energy, out->dropped, out->failed, &v, out->invalid,
                                 sizeof out->invalid);

    out->p_max_w = isnan(p_max_w) ? row.p_max_w : p_max_w;
    if (!isnan(out->p_max_w)) {
        struct eeb_rules rules;
        if ((rc = eeb_score_rules_load(NULL, &rules, err, errlen)) != EEB_OK)
            goto out;
        ps = malloc(g.n * sizeof *ps);
        size_t n = 0;
        for (size_t i = 0; ps && i < g.n; i++)
            if (g.s[i].t_mono_ns >= out->t0_ns && g.s[i].t_mono_ns <= out->t1_ns)
                ps[n++] = (struct eeb_psample){g.s[i].t_mono_ns, g.s[i].watts};
        if (!ps) {
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
            goto out;
        }
        struct eeb_power_verdict verdict;
        if (n < 2) {
            rc = eeb_errf(err, errlen, EEB_EINVAL,
                          "%s: run %lld: %zu samples in the %s window (the P_max rule needs at "
                          "least 2: a longer fine-tune, or a higher --rate)",
                          path, (long long)row.id, n, out->window);
            goto out;
        }
        if ((rc = eeb_score_power_check(ps, n, out->p_max_w, &rules.power, &verdict, err,
                                        errlen)) != EEB_OK)
            goto out;
        out->p_max_pass = verdict.pass;
        out->worst_w = verdict.worst_w;
        snprintf(out->p_max_reason, sizeof out->p_max_reason, "%s", verdict.reason);
    }
out:
    free(ps);
    free(g.s);
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(db);
    return rc;
}
