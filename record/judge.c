/*
 * judge.c - a run's verdict from its database alone: the metrics, S, the
 * P_max rule and the validity of the measurement, recomputed from the
 * stored configuration, events, samples and predictions (`eeb check`, the
 * run's own SCORE stage, which must agree with it, and the server).
 *
 * The record is read in judge_record.c, the rules on its events (the
 * server's facts, the audits, the counters) are judge_rules.c's, and
 * `eeb check`'s own work is judge_check.c's (record/judge_int.h).
 */
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_prediction.h"
#include "tasks/eeb_task_ops.h"
#include "fpga/accel/eeb_accel.h"
#include "power/eeb_power.h"
#include "record/judge_int.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void judge_why(struct eeb_run_outcome *out, const char *fmt, ...)
{
    size_t n = strlen(out->why);
    if (n && n + 2 < sizeof out->why)
        memcpy(out->why + n, "; ", 3), n += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why + n, sizeof out->why - n, fmt, ap);
    va_end(ap);
}

/* ---- M_s from the stored predictions ---- */

struct recount {
    struct eeb_prediction_tally *tally;
    uint64_t n;
    char bad[200];
};

static int recount_item(void *arg, int64_t item, const char *payload)
{
    struct recount *rc = arg;
    int bad = eeb_prediction_tally_add(rc->tally, item, payload) != EEB_OK;
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
    struct recount rc = {0};
    if (eeb_prediction_tally_new(&rc.tally, eeb_task_get(task)->prediction) != EEB_OK) {
        judge_why(out, "recounting the predictions: out of memory");
        return NAN;
    }
    double m_s = NAN;
    int st = eeb_rundb_predictions_each(db, run, recount_item, &rc, err, errlen);
    if (st > 0)
        judge_why(out, "%s", rc.bad);
    else if (st < 0)
        judge_why(out, "%s", err);
    else if (rc.n != items)
        judge_why(out, "%llu predictions stored for %llu test items", (unsigned long long)rc.n,
                  (unsigned long long)items);
    else if (eeb_prediction_tally_value(rc.tally, items, &m_s) != EEB_OK)
        judge_why(out, "recounting the predictions: out of memory");
    eeb_prediction_tally_free(rc.tally);
    return m_s;
}

/* ---- the verdict ---- */

/* Why the record's provenance claims more than its backend and meter
 * allow, or NULL: eeb's CPU backends are modeled whatever their meter,
 * else a run's provenance is its meter's; saying less (modeled) is no
 * claim. */
static const char *provenance_overclaimed(const struct eeb_config_record *cfg, char *buf, size_t n)
{
    if (!cfg->provenance[0] || strcmp(cfg->provenance, "modeled") == 0)
        return NULL;
    int fixed = eeb_power_uri_provenance(cfg->power_source);
    if (eeb_accel_never_on_board(cfg->backend))
        snprintf(buf, n, "backend %.64s runs on a CPU, not a board: its figures are modeled",
                 cfg->backend);
    else if (fixed >= 0 && strcmp(cfg->provenance, eeb_provenance_name(fixed)))
        snprintf(buf, n, "its power source, %.64s, reads %s figures", cfg->power_source,
                 eeb_provenance_name(fixed));
    else if (cfg->power_provenance[0] && strcmp(cfg->provenance, cfg->power_provenance))
        snprintf(buf, n, "its meter's readings are %s", cfg->power_provenance);
    else
        return NULL;
    return buf;
}

/* Figures the record has not given (yet): n/a, never 0. */
void judge_figures_unknown(struct eeb_run_outcome *out)
{
    struct eeb_score *s = &out->score;
    s->m_u = s->m_t = s->m_p = s->m_s = s->s = s->mean_power_w = NAN;
    out->t_s = out->energy_j = out->worst_w = out->window_s = NAN;
    out->power_uncertainty = out->s_uncertainty = NAN;
    out->meter_offset = (struct eeb_meter_offset){.s = NAN, .correlation = NAN};
}

/* The score event's verdict and S must be what the record gives: a record
 * whose figures were edited after it was scored is not that run. */
static void score_said(const struct record *rec, struct eeb_run_outcome *out)
{
    if (!rec->score_verdict[0] || strcmp(rec->score_verdict, "?") == 0)
        return;
    int said_pass = strcmp(rec->score_verdict, "pass") == 0;
    double s = out->score.s;
    if (said_pass == out->pass && (!said_pass || fabs(rec->score_s - s) <= 1e-9 * fmax(1, fabs(s))))
        return;
    char said[32] = "", gives[32] = "no pass";
    if (said_pass)
        snprintf(said, sizeof said, ", S = %.6f", rec->score_s);
    if (out->pass)
        snprintf(gives, sizeof gives, "S = %.6f", s);
    judge_why(out, "its score event says %s%s, but the record gives %s", rec->score_verdict, said,
              gives);
    out->valid = 0, out->pass = 0;
}

/* The P_max rule's verdict on the fine-tune. */
struct power_judged {
    int p_max_pass;
    char p_max_reason[256];
};

/* How far a run's own log's E may be from the server's meter's. */
#define METER_TOLERANCE 0.05
/* And how far in time, in seconds.  The server places the run's clock on
 * its own by the least delay of the fine-tune's links, a few milliseconds
 * on a network, and its meter reads at 10 Hz: an honest log agrees with
 * it to a tenth of a second, and 0.5 s is five of the meter's samples past
 * that.  The stream check holds a run's clock within SYNC_S = 2 s of the
 * server's (server/stream.c), so the shifts searched are those, at steps
 * of 0.05 s or the coarser trace's sampling interval. */
#define METER_OFFSET_TOLERANCE_S 0.5
#define METER_OFFSET_RANGE_S     2.0
#define METER_OFFSET_STEP_S      0.05

/* A trace's sampling interval: its summary's nominal one, else its mean. */
static double interval_of(const struct eeb_power_summary *ps, const struct eeb_sample *s, size_t n)
{
    if (ps->rate_hz > 0)
        return 1 / ps->rate_hz;
    return n > 1 ? (double)(s[n - 1].t_mono_ns - s[0].t_mono_ns) / 1e9 / (double)(n - 1) : 0;
}

/* The run's own log against the server's meter in time: where the load
 * changed, both must show it at once, the log's clock placed on the
 * meter's by the fine-tune's begin (the meter run's finetune_begin is the
 * run's, placed there by the server).  A load that gives no timing (flat,
 * repeating, too slow) leaves a note, never a figure. */
static void offset_check(const struct stored_run *sr, const struct eeb_config_record *cfg,
                         const struct eeb_power_summary *meter, const struct eeb_power_summary *own,
                         struct eeb_run_outcome *out)
{
    struct eeb_meter_offset *mo = &out->meter_offset;
    if (strcmp(meter->window, "finetune") || strcmp(own->window, "finetune"))
        return; /* no window placed in the meter run: server/runs.c says so */
    mo->sought = 1;
    struct eeb_sample *a = NULL, *b = NULL;
    size_t na, nb;
    char err[sizeof mo->note];
    struct eeb_power_shift shift;
    if (eeb_power_samples_read(sr->db, cfg->meter_run, &a, &na, err, sizeof err) ||
        eeb_power_samples_read(sr->db, sr->row.id, &b, &nb, err, sizeof err)) {
        snprintf(mo->note, sizeof mo->note, "%s", err);
        goto out;
    }
    struct eeb_power_align_query q = {
        .a0_ns = meter->t0_ns,
        .a1_ns = meter->t1_ns,
        .b_to_a_ns = meter->t0_ns - sr->rec.ft_begin,
        .range_s = METER_OFFSET_RANGE_S,
        .step_s =
            fmax(METER_OFFSET_STEP_S, fmax(interval_of(meter, a, na), interval_of(own, b, nb)))};
    if (eeb_power_align(a, na, b, nb, &q, &shift, err, sizeof err)) {
        snprintf(mo->note, sizeof mo->note, "%s", err);
        goto out;
    }
    /* a bound within the tolerance, where the traces' ends cut the search
     * short, says nothing */
    int bound_only = shift.at_edge && fabs(shift.shift_s) <= METER_OFFSET_TOLERANCE_S;
    mo->determinable = shift.determinable && !bound_only;
    if (!shift.determinable)
        snprintf(mo->note, sizeof mo->note, "%s", shift.why);
    else if (bound_only)
        snprintf(mo->note, sizeof mo->note,
                 "the best match is at the end of the shifts the traces cover (%+.2f s): the "
                 "offset may be larger",
                 shift.shift_s);
    if (!mo->determinable)
        goto out;
    mo->s = shift.shift_s, mo->correlation = shift.correlation, mo->at_least = shift.at_edge;
    if (fabs(mo->s) > METER_OFFSET_TOLERANCE_S) {
        char searched[48] = "";
        if (mo->at_least)
            snprintf(searched, sizeof searched, " at the end of the %.2f to %.2f s searched",
                     shift.lo_s, shift.hi_s);
        judge_why(
            out,
            "the run's own log is %s%.2f s %s the server's meter (correlation %.2f%s), more than "
            "the %g s allowed",
            mo->at_least ? "at least " : "", fabs(mo->s), mo->s > 0 ? "behind" : "ahead of",
            mo->correlation, searched, METER_OFFSET_TOLERANCE_S);
        out->valid = 0;
    }
out:
    free(a);
    free(b);
}

/* Director mode: the run's own log, if it has one, against the server's
 * meter over the same window: its E, and when it shows the load. */
static void cross_check(const struct stored_run *sr, const struct eeb_config_record *cfg,
                        const struct eeb_power_summary *meter, struct eeb_run_outcome *out)
{
    struct eeb_power_summary own;
    char ignored[512];
    double server_j = meter->energy.joules;
    if (eeb_power_summarize(sr->path, sr->row.id, NAN, &own, ignored, sizeof ignored) ||
        !(server_j > 0))
        return; /* no log of its own: nothing to compare */
    double apart = fabs(own.energy.joules - server_j) / server_j;
    if (apart > METER_TOLERANCE) {
        judge_why(out,
                  "the run's own log gives E = %.3f J and the server's meter %.3f J over the same "
                  "window: %.1f %% apart, more than the %g %% allowed",
                  own.energy.joules, server_j, 100 * apart, 100 * METER_TOLERANCE);
        out->valid = 0;
    }
    offset_check(sr, cfg, meter, &own, out);
}

/* The first reading over the uncertainty limit within a run's fine-tune
 * (the measured window: readings of the ranging pass or the deploy do not
 * count), as its sampler recorded it: a power_fault event holding the
 * reading's uncertainty, which holds until a power_recovered event; one
 * that began before the window and held into it counts at the window's
 * begin.  A log without a window is held to all of its readings. */
struct uncertain {
    int64_t ft_begin, ft_end, t; /* 0: none */
    double u;                    /* the fraction, NAN: the meter could not evaluate it */
    int holding;                 /* a stretch over the limit goes on */
    double held_u;
    int64_t first_t; /* the first over the limit anywhere, and its u */
    double first_u;
};

static int find_uncertain(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc;
    struct uncertain *un = arg;
    if (strcmp(kind, EEB_EVENT_FINETUNE_BEGIN) == 0 && !un->ft_begin) {
        un->ft_begin = t;
        if (un->holding && !un->t)
            un->t = t, un->u = un->held_u;
    } else if (strcmp(kind, EEB_EVENT_FINETUNE_END) == 0 && !un->ft_end) {
        un->ft_end = t;
    } else if (strcmp(kind, EEB_EVENT_POWER_RECOVERED) == 0) {
        un->holding = 0;
    }
    if (strcmp(kind, EEB_EVENT_POWER_FAULT) || !payload)
        return 0;
    json_t *o = json_loads(payload, 0, NULL);
    json_t *v = json_object_get(o, EEB_EVENT_KEY_UNCERTAINTY);
    if (json_is_null(v) ||
        (json_is_number(v) && !(json_number_value(v) <= EEB_POWER_UNCERTAINTY_LIMIT))) {
        double u = json_is_number(v) ? json_number_value(v) : NAN;
        un->holding = 1, un->held_u = u;
        if (!un->first_t)
            un->first_t = t, un->first_u = u;
        if (un->ft_begin && !un->ft_end && !un->t)
            un->t = t, un->u = u;
    }
    json_decref(o);
    return 0;
}

/* A reading of the metered run (the run's own, or the server's meter's)
 * whose uncertainty is over the limit, or unknown, makes the run invalid,
 * named by its time from the fine-tune's begin. */
static void uncertainty_check(const struct stored_run *sr, int64_t run, struct eeb_run_outcome *out)
{
    struct uncertain un = {.u = NAN, .first_u = NAN};
    char err[256], at[64], of[64];
    if (eeb_rundb_events_each(sr->db, run, find_uncertain, &un, err, sizeof err)) {
        judge_why(out, "power: %s", err);
        out->valid = 0;
        return;
    }
    if (!un.ft_begin) /* no window: every reading counts */
        un.t = un.first_t, un.u = un.first_u;
    if (!un.t)
        return;
    out->valid = 0;
    double s = (double)(un.t - un.ft_begin) / 1e9, limit = 100 * EEB_POWER_UNCERTAINTY_LIMIT;
    if (!un.ft_begin)
        snprintf(at, sizeof at, "at %lld ns", (long long)un.t);
    else
        snprintf(at, sizeof at, s >= 0 ? "at %.3f s" : "%.3f s before the fine-tune", fabs(s));
    /* as many digits as show it over the limit: 2.0 %, 1.04 % */
    int digits = 1;
    while (digits < 4 && round(100 * un.u * pow(10, digits)) <= limit * pow(10, digits))
        digits++;
    if (isnan(un.u))
        snprintf(of, sizeof of, "an uncertainty the meter could not evaluate");
    else
        snprintf(of, sizeof of, "an uncertainty of %.*f %%", digits, 100 * un.u);
    judge_why(out, "the meter's reading %s has %s: the rules allow %g %%", at, of, limit);
}

/* T from the fine-tune window, E, validity and the P_max rule from the
 * samples: the run's own, or the server's meter's (its power log, the
 * window placed there on the server's clock); whether E is known. */
static int metered_figures(const struct stored_run *sr, const struct eeb_config_record *cfg,
                           struct eeb_run_outcome *out, struct power_judged *pj)
{
    out->t_s = (double)(sr->rec.ft_end - sr->rec.ft_begin) / 1e9;
    struct eeb_power_summary ps;
    char perr[512];
    int64_t metered = cfg->meter_run > 0 ? cfg->meter_run : sr->row.id;
    uncertainty_check(sr, metered, out);
    double u;
    if (eeb_rundb_result_get(sr->db, metered, EEB_RESULT_UNCERTAINTY_MAX, &u, perr, sizeof perr) ==
        EEB_OK)
        out->power_uncertainty = u; /* every reading within u of the truth: E and M_p too */
    if (eeb_power_summarize(sr->path, metered, cfg->meter_run > 0 ? sr->row.p_max_w : NAN, &ps,
                            perr, sizeof perr)) {
        judge_why(out, "power: %s", perr);
        out->valid = 0;
        return 0;
    }
    out->energy_j = ps.energy.joules;
    out->worst_w = ps.worst_w;
    if (!ps.valid) {
        judge_why(out, "power measurement: %s", ps.invalid);
        out->valid = 0;
    }
    pj->p_max_pass = ps.p_max_pass;
    snprintf(pj->p_max_reason, sizeof pj->p_max_reason, "%s", ps.p_max_reason);
    if (cfg->meter_run > 0)
        cross_check(sr, cfg, &ps, out);
    return 1;
}

/* On the modeled clock: T is the steps taken times the modeled step time,
 * E that time at the modeled training power, which the P_max rule holds
 * to P_max; the samples (the host's trace) count for nothing. */
static int modeled_figures(const struct stored_run *sr, const struct eeb_config_record *cfg,
                           struct eeb_run_outcome *out, struct power_judged *pj)
{
    double steps = sr->rec.complete_steps, step_s = cfg->device_step_s, w = cfg->device_train_w;
    if (strcmp(cfg->provenance, "modeled")) {
        judge_why(out, "its clock is the modeled device's, so its figures are modeled, not %s",
                  cfg->provenance);
        out->valid = 0;
    }
    if (!(step_s > 0 && isfinite(step_s) && w >= 0 && isfinite(w))) {
        judge_why(out, "its clock is the modeled device's, and it records no device model to time");
        out->valid = 0;
        return 0;
    }
    if (!(steps >= 0 && steps == floor(steps))) {
        judge_why(out,
                  "its clock is the modeled device's, and no complete event says how many steps "
                  "it took");
        out->valid = 0;
        return 0;
    }
    char off[256];
    if (cfg->schedule_steps >= 0 &&
        eeb_run_steps_off_schedule(steps, sr->rec.abort[0] || sr->rec.error[0], cfg->schedule_steps,
                                   off, sizeof off)) {
        judge_why(out, "%s", off);
        out->valid = 0;
    }
    out->t_s = steps * step_s;
    out->energy_j = out->t_s * w;
    out->worst_w = w;
    if (out->t_s > sr->row.t_max_s) {
        judge_why(out, "%.0f steps of %g s run past T_max (%g s) on the modeled clock", steps,
                  step_s, sr->row.t_max_s);
        out->valid = 0;
    }
    pj->p_max_pass = w <= sr->row.p_max_w;
    if (!pj->p_max_pass)
        snprintf(pj->p_max_reason, sizeof pj->p_max_reason,
                 "the modeled training power %.3f W exceeds P_max %g W", w, sr->row.p_max_w);
    return 1;
}

int eeb_run_steps_off_schedule(double said, int stopped, double schedule, char *why, size_t whylen)
{
    if (stopped ? said <= schedule : said == schedule)
        return 0;
    snprintf(why, whylen,
             "it says it took %.0f steps; its schedule takes %.0f on the modeled clock (its "
             "epochs of the fine-tune set in its batches, cut at T_max, as the server counts them)",
             said, schedule);
    return 1;
}

/* eeb_run_judge on a run already read.  Each figure the record gives is
 * computed, the others left NAN: a run whose power log is unusable still
 * has its M_u, T and M_s. */
int judge_stored_run(const struct stored_run *sr, double m_s, const struct eeb_run_facts *given,
                     struct eeb_run_outcome *out, char *err, size_t errlen)
{
    const struct eeb_run_row *row = &sr->row;
    const struct record *rec = &sr->rec;
    int rc = EEB_OK;
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(row->config, &cfg); /* what it lacks is NAN: judged invalid */
    enum eeb_task task;
    out->power_uncertainty = out->s_uncertainty = NAN;
    out->run = row->id;
    snprintf(out->uuid, sizeof out->uuid, "%s", row->uuid);
    snprintf(out->provenance, sizeof out->provenance, "%s",
             cfg.provenance[0] ? cfg.provenance : "?");
    out->valid = 1;
    judge_figures_unknown(out);
    char claim[160];
    if (provenance_overclaimed(&cfg, claim, sizeof claim)) {
        out->valid = 0;
        judge_why(out, "provenance: the record says %s, but %s", cfg.provenance, claim);
    }
    if (eeb_task_parse(row->task, &task, err, errlen)) {
        rc =
            eeb_errf(err, errlen, EEB_EINVAL, "%s: run %lld is a %s, not a benchmark run", sr->path,
                     (long long)row->id, strcmp(row->task, "none") ? row->task : "power log");
        goto out;
    }
    out->task = task;
    out->t_max_s = row->t_max_s, out->p_max_w = row->p_max_w;
    out->window_s = cfg.window_s;
    out->modeled_clock = strcmp(cfg.clock, EEB_CLOCK_MODELED) == 0;
    out->tmax_reached = strcmp(rec->complete, EEB_COMPLETE_TMAX) == 0;
    /* a record that says it was stopped or broke (one received by the
     * server; `eeb run` judges neither) */
    if (rec->abort[0]) {
        out->aborted = 1;
        judge_why(out, "%s", rec->abort);
    }
    if (rec->error[0]) {
        out->valid = 0;
        judge_why(out, "the run ended in an error: %s", rec->error);
    }
    if (rec->disorder[0]) {
        out->valid = 0;
        judge_why(out, "%s", rec->disorder);
    }
    judge_accuracy_audit_rule(&rec->audit, out);
    judge_training_audit_rules(rec, out);
    judge_counter_rules(rec, out);
    /* the budgets the run is judged by are the ones it was given and held
     * to while it ran */
    if ((!isnan(cfg.t_max_s) && cfg.t_max_s != row->t_max_s) ||
        (!isnan(cfg.p_max_w) && cfg.p_max_w != row->p_max_w)) {
        out->valid = 0;
        judge_why(
            out,
            "the run's budgets (T_max %g s, P_max %g W) are not its configuration's (%g s, %g W)",
            row->t_max_s, row->p_max_w, cfg.t_max_s, cfg.p_max_w);
    }
    if (!isnan(rec->pmax_event_w) && rec->pmax_event_w != row->p_max_w) {
        out->valid = 0;
        judge_why(out, "its pmax_exceeded event held it to P_max %g W, the record says %g W",
                  rec->pmax_event_w, row->p_max_w);
    }
    /* a count the configuration lacks (or garbles) is none */
    out->test_items = cfg.test_items >= 0 ? (uint64_t)cfg.test_items : 0;
    /* an official run's predictions hold no truth, nor do those a server
     * holds: its M_s is the server's, which a server's copy records among
     * the facts it judged with (none where the labels may not count) */
    /* the facts are the server's only in its copy (a team's record may hold
     * an event of that name, which counts for nothing), or as given */
    struct eeb_run_facts facts = {0};
    if (given)
        facts = *given;
    else if (cfg.held_by_server)
        facts = rec->facts;
    char barred[512] = "";
    if (facts.seen)
        eeb_run_labels_barred(&facts, barred, sizeof barred);
    if (isnan(m_s) && facts.seen) {
        m_s = barred[0] ? NAN : facts.m_s;
    } else if (isnan(m_s) && (cfg.official || cfg.held_by_server)) {
        char gerr[256];
        if (eeb_rundb_result_get(sr->db, row->id, "m_s", &m_s, gerr, sizeof gerr))
            judge_why(out, "M_s is the server's, and none was stored");
    } else if (isnan(m_s)) {
        m_s = recount(sr->db, row->id, task, out->test_items, out, err, errlen);
    }
    out->score.m_u = (cfg.util[0] + cfg.util[1] + cfg.util[2] + cfg.util[3]) / 4;
    out->score.m_s = m_s;
    if (!rec->ft_begin || !rec->ft_end) {
        judge_why(out, "no fine-tune window (finetune_begin and finetune_end events)");
        out->valid = 0;
        judge_evaluator_rules(rec, &facts, barred, out);
        goto out;
    }
    struct power_judged pj = {0};
    int have_power = (out->modeled_clock ? modeled_figures : metered_figures)(sr, &cfg, out, &pj);
    judge_evaluator_rules(rec, &facts, barred, out);
    if (isnan(m_s)) {
        out->valid = 0;
        if (!out->why[0])
            judge_why(out, "M_s is undefined (no class has ground truth)");
    }
    struct eeb_score_input in = {
        .m_u = out->score.m_u,
        .t_s = out->t_s,
        .t_max_s = row->t_max_s,
        .energy_j = have_power ? out->energy_j : 0, /* M_p is n/a then */
        .p_max_w = row->p_max_w,
        .m_s = isnan(m_s) ? 0 : m_s,
        .w = {cfg.weights[0], cfg.weights[1], cfg.weights[2], cfg.weights[3]}};
    char serr[256];
    if (eeb_score_compute(&in, &out->score, serr, sizeof serr)) {
        judge_why(out, "the stored configuration cannot be scored: %s", serr);
        out->valid = 0;
        goto out;
    }
    out->score.m_s = m_s;
    if (!have_power)
        out->score.m_p = out->score.mean_power_w = NAN;
    if (have_power && !out->score.pass)
        judge_why(out, "%s", out->score.reason);
    if (have_power && !pj.p_max_pass && out->score.pass)
        judge_why(out, "%s", pj.p_max_reason);
    out->pass = out->valid && !out->aborted && out->score.pass && pj.p_max_pass;
    if (out->pass) /* S moves with M_p alone: T, M_u and M_s are exact */
        out->s_uncertainty = cfg.weights[2] * out->score.m_p * out->power_uncertainty;
    score_said(rec, out);
    if (!out->pass)
        out->score.s = NAN;
out:
    return rc;
}

int eeb_run_judge(const char *db_path, int64_t run, double m_s, struct eeb_run_outcome *out,
                  char *err, size_t errlen)
{
    return eeb_run_judge_with(db_path, run, m_s, NULL, out, err, errlen);
}

int eeb_run_judge_with(const char *db_path, int64_t run, double m_s,
                       const struct eeb_run_facts *facts, struct eeb_run_outcome *out, char *err,
                       size_t errlen)
{
    struct stored_run sr;
    int rc = judge_open_run(db_path, run, &sr, err, errlen);
    if (rc == EEB_OK)
        rc = judge_stored_run(&sr, m_s, facts, out, err, errlen);
    judge_close_run(&sr);
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
        {"s_uncertainty", o->s_uncertainty, "1", "computed"},
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
