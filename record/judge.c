/*
 * judge.c - a run's verdict from its database alone: the metrics, S, the
 * P_max rule and the validity of the measurement, recomputed from the
 * stored configuration, events, samples and predictions (`eeb check`, the
 * run's own SCORE stage, which must agree with it, and the server).
 */
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_prediction.h"
#include "tasks/eeb_task_ops.h"
#include "fpga/accel/eeb_accel.h"
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

/* The accuracy audit as its event says (harness/run_audit_accuracy.c). */
struct audit_said {
    int seen;         /* the record holds an audit event (runs before it existed: none) */
    int done;         /* 1 done, 0 not done, -1 not what eeb run writes */
    char reason[200]; /* not done: why */
    double sample, agreed;
    char measure[64], reference[16];
};

/* A training_audit event as stored; n -1: one that is not what eeb run
 * writes. */
struct training_audit {
    int seen, n;
    int stage; /* the workflow's stage when it came */
    int64_t seed, set_items;
    uint64_t items[EEB_TRAINING_AUDIT_ITEMS];
    char answers[EEB_TRAINING_AUDIT_ITEMS][17];
};

struct record {
    int64_t ft_begin, ft_end;
    char complete[16];     /* the "complete" event's reason */
    double complete_steps; /* and the steps taken by then (NAN: none) */
    char abort[256];       /* the "abort" event's reason, "" if none */
    char error[256];       /* the "error" event's message, "" if none */
    int scored;
    char score_verdict[16]; /* the "score" event's verdict, and its S (NAN: none) */
    double score_s;
    double pmax_event_w; /* the P_max a "pmax_exceeded" event was held to, or NAN */
    int64_t seed;        /* the latest finetune_begin's seed, -1: none */
    int epochs;          /* epoch_end and epoch_partial events */
    struct eeb_run_facts facts;
    struct audit_said audit;           /* the accuracy audit's event, if the run has one */
    struct training_audit training[2]; /* the training audit, before and after the fine-tune */
    int audits_extra;                  /* more training_audit events than one of each */
    int stopped;                       /* a stopped event, its counts (-1: not recorded): */
    int64_t sut_steps, sut_items;      /*   the SUT's counters */
    int64_t eeb_steps, eeb_items;      /*   and what eeb drove */
    int64_t set_items;                 /* the deployed event's fine-tune items, -1: none */
    int stage;                         /* the workflow's stage the events read so far reached */
    char disorder[200];                /* the first event out of the workflow's order, "" if none */
};

/* Where an event kind stands in the workflow (events are read in their
 * clock's order): fine-tune begin < its steps
 * < its end < the test < the score.  A kind of stage s comes after no
 * event of a later stage and moves the record to s; an epoch's end comes
 * between the fine-tune's begin and the stopped event without moving it (a
 * batch in flight at T_max ends after the fine-tune does).  Kinds not
 * listed (state, error, abort, a meter's fault) may come at any point. */
static const struct event_stage {
    const char *kind;
    int lo, hi;
} event_stages[] = {
    {EEB_EVENT_DEVICE_MODEL, 1, 1},   {EEB_EVENT_DEPLOYED, 1, 1},
    {EEB_EVENT_RANGING_BEGIN, 1, 1},  {EEB_EVENT_RANGING_END, 1, 1}, /* before the fine-tune */
    {EEB_EVENT_FINETUNE_BEGIN, 2, 2}, {EEB_EVENT_TRAIN, 3, 3},
    {EEB_EVENT_COMPLETE, 3, 3},       {EEB_EVENT_EPOCH_END, 2, 4},
    {EEB_EVENT_EPOCH_PARTIAL, 2, 4},  {EEB_EVENT_FINETUNE_END, 4, 4},
    {EEB_EVENT_STOPPED, 5, 5},        {EEB_EVENT_TEST_INPUTS, 5, 5},
    {EEB_EVENT_TEST_BEGIN, 6, 6},     {EEB_EVENT_TEST_END, 7, 7},
    {EEB_EVENT_AUDIT, 7, 7},          {EEB_EVENT_SCORE, 8, 8},
};

static void follow_order(struct record *rec, int64_t t, const char *kind)
{
    const struct event_stage *e = NULL;
    for (size_t i = 0; !e && i < sizeof event_stages / sizeof *event_stages; i++)
        if (strcmp(kind, event_stages[i].kind) == 0)
            e = &event_stages[i];
    if (!e || rec->disorder[0])
        return;
    int late = rec->stage > e->hi;                    /* a later stage came first */
    int early = e->lo != e->hi && rec->stage < e->lo; /* an epoch before the fine-tune */
    if (late || early)
        snprintf(rec->disorder, sizeof rec->disorder,
                 "event '%s' at %lld ns is out of the workflow's order (%s)", kind, (long long)t,
                 late ? "after a later stage's" : "before the fine-tune began");
    if (e->lo == e->hi)
        rec->stage = e->lo;
}

static double payload_number(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void payload_string(const json_t *o, const char *key, char *buf, size_t n)
{
    snprintf(buf, n, "%s", json_string_value(json_object_get(o, key)) ?: "?");
}

static int64_t payload_int(const json_t *o, const char *key, int64_t none)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : none;
}

static void read_accuracy_audit(const json_t *o, struct audit_said *a)
{
    json_t *done = json_object_get(o, EEB_AUDIT_KEY_DONE);
    a->seen = 1;
    a->done = json_is_boolean(done) ? json_is_true(done) : -1;
    payload_string(o, EEB_AUDIT_KEY_REASON, a->reason, sizeof a->reason);
    payload_string(o, EEB_AUDIT_KEY_MEASURE, a->measure, sizeof a->measure);
    payload_string(o, EEB_AUDIT_KEY_REFERENCE, a->reference, sizeof a->reference);
    a->sample = payload_number(o, EEB_AUDIT_KEY_SAMPLE);
    a->agreed = payload_number(o, EEB_AUDIT_KEY_AGREED);
    double sampled = (double)json_array_size(json_object_get(o, EEB_AUDIT_KEY_SAMPLED));
    if (a->done == 1 &&
        !(a->sample >= 1 && a->agreed >= 0 && a->agreed <= a->sample &&
          a->sample == floor(a->sample) && a->agreed == floor(a->agreed) && sampled == a->sample))
        a->done = -1;
}

/* A training_audit event into the record's before or after. */
static void read_training_audit(struct record *rec, const json_t *o)
{
    const char *when = json_string_value(json_object_get(o, EEB_TRAINING_AUDIT_KEY_WHEN)) ?: "";
    int at = strcmp(when, EEB_TRAINING_AUDIT_BEFORE) == 0  ? 0
             : strcmp(when, EEB_TRAINING_AUDIT_AFTER) == 0 ? 1
                                                           : -1;
    if (at < 0 || rec->training[at].seen) {
        rec->audits_extra = 1;
        return;
    }
    struct training_audit *a = &rec->training[at];
    a->seen = 1;
    a->stage = rec->stage;
    a->seed = payload_int(o, EEB_EVENT_KEY_SEED, -1);
    a->set_items = payload_int(o, EEB_TRAINING_AUDIT_KEY_SET_ITEMS, -1);
    json_t *items = json_object_get(o, EEB_TRAINING_AUDIT_KEY_ITEMS),
           *answers = json_object_get(o, EEB_TRAINING_AUDIT_KEY_ANSWERS);
    size_t n = json_array_size(items);
    a->n = n && n <= EEB_TRAINING_AUDIT_ITEMS && json_array_size(answers) == n ? (int)n : -1;
    for (int i = 0; i < a->n; i++) {
        json_t *item = json_array_get(items, (size_t)i);
        const char *d = json_string_value(json_array_get(answers, (size_t)i));
        if (!json_is_integer(item) || json_integer_value(item) < 0 || !d ||
            strlen(d) >= sizeof a->answers[i]) {
            a->n = -1;
            break;
        }
        a->items[i] = (uint64_t)json_integer_value(item);
        snprintf(a->answers[i], sizeof a->answers[i], "%s", d);
    }
}

static int read_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc;
    struct record *rec = arg;
    follow_order(rec, t, kind);
    json_t *o = payload ? json_loads(payload, 0, NULL) : NULL;
    if (strcmp(kind, EEB_EVENT_FINETUNE_BEGIN) == 0) {
        rec->ft_begin = t;
        rec->seed = payload_int(o, EEB_EVENT_KEY_SEED, -1);
    } else if (strcmp(kind, EEB_EVENT_EPOCH_END) == 0 || strcmp(kind, EEB_EVENT_EPOCH_PARTIAL) == 0)
        rec->epochs++;
    else if (strcmp(kind, EEB_EVENT_EVALUATOR) == 0)
        eeb_run_facts_read(o, &rec->facts);
    else if (strcmp(kind, EEB_EVENT_FINETUNE_END) == 0)
        rec->ft_end = t;
    else if (strcmp(kind, EEB_EVENT_COMPLETE) == 0) {
        payload_string(o, EEB_EVENT_KEY_REASON, rec->complete, sizeof rec->complete);
        rec->complete_steps = payload_number(o, EEB_EVENT_KEY_STEP);
    } else if (strcmp(kind, EEB_EVENT_ABORT) == 0)
        payload_string(o, EEB_EVENT_KEY_REASON, rec->abort, sizeof rec->abort);
    else if (strcmp(kind, EEB_EVENT_ERROR) == 0)
        payload_string(o, EEB_EVENT_KEY_MESSAGE, rec->error, sizeof rec->error);
    else if (strcmp(kind, EEB_EVENT_SCORE) == 0) {
        rec->scored = 1;
        payload_string(o, EEB_EVENT_KEY_VERDICT, rec->score_verdict, sizeof rec->score_verdict);
        rec->score_s = payload_number(o, EEB_EVENT_KEY_S);
    } else if (strcmp(kind, EEB_EVENT_PMAX_EXCEEDED) == 0)
        rec->pmax_event_w = payload_number(o, EEB_EVENT_KEY_P_MAX);
    else if (strcmp(kind, EEB_EVENT_AUDIT) == 0)
        read_accuracy_audit(o, &rec->audit);
    else if (strcmp(kind, EEB_EVENT_TRAINING_AUDIT) == 0)
        read_training_audit(rec, o);
    else if (strcmp(kind, EEB_EVENT_DEPLOYED) == 0)
        rec->set_items = payload_int(o, "finetune_items", -1);
    else if (strcmp(kind, EEB_EVENT_STOPPED) == 0) {
        rec->stopped = 1;
        rec->sut_steps = payload_int(o, EEB_EVENT_KEY_STEPS, -1);
        rec->sut_items = payload_int(o, EEB_EVENT_KEY_ITEMS, -1);
        rec->eeb_steps = payload_int(o, EEB_EVENT_KEY_EEB_STEPS, -1);
        rec->eeb_items = payload_int(o, EEB_EVENT_KEY_EEB_ITEMS, -1);
    }
    json_decref(o);
    return 0;
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
        why(out, "recounting the predictions: out of memory");
        return NAN;
    }
    double m_s = NAN;
    int st = eeb_rundb_predictions_each(db, run, recount_item, &rc, err, errlen);
    if (st > 0)
        why(out, "%s", rc.bad);
    else if (st < 0)
        why(out, "%s", err);
    else if (rc.n != items)
        why(out, "%llu predictions stored for %llu test items", (unsigned long long)rc.n,
            (unsigned long long)items);
    else if (eeb_prediction_tally_value(rc.tally, items, &m_s) != EEB_OK)
        why(out, "recounting the predictions: out of memory");
    eeb_prediction_tally_free(rc.tally);
    return m_s;
}

/* ---- the verdict ---- */

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
    sr->rec.score_s = sr->rec.pmax_event_w = sr->rec.complete_steps = NAN;
    sr->rec.seed = sr->rec.set_items = -1;
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
static void figures_unknown(struct eeb_run_outcome *out)
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
    why(out, "its score event says %s%s, but the record gives %s", rec->score_verdict, said, gives);
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
        why(out,
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
        why(out,
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
        why(out, "power: %s", err);
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
    why(out, "the meter's reading %s has %s: the rules allow %g %%", at, of, limit);
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
        why(out, "power: %s", perr);
        out->valid = 0;
        return 0;
    }
    out->energy_j = ps.energy.joules;
    out->worst_w = ps.worst_w;
    if (!ps.valid) {
        why(out, "power measurement: %s", ps.invalid);
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
        why(out, "its clock is the modeled device's, so its figures are modeled, not %s",
            cfg->provenance);
        out->valid = 0;
    }
    if (!(step_s > 0 && isfinite(step_s) && w >= 0 && isfinite(w))) {
        why(out, "its clock is the modeled device's, and it records no device model to time");
        out->valid = 0;
        return 0;
    }
    if (!(steps >= 0 && steps == floor(steps))) {
        why(out, "its clock is the modeled device's, and no complete event says how many steps "
                 "it took");
        out->valid = 0;
        return 0;
    }
    char off[256];
    if (cfg->schedule_steps >= 0 &&
        eeb_run_steps_off_schedule(steps, sr->rec.abort[0] || sr->rec.error[0], cfg->schedule_steps,
                                   off, sizeof off)) {
        why(out, "%s", off);
        out->valid = 0;
    }
    out->t_s = steps * step_s;
    out->energy_j = out->t_s * w;
    out->worst_w = w;
    if (out->t_s > sr->row.t_max_s) {
        why(out, "%.0f steps of %g s run past T_max (%g s) on the modeled clock", steps, step_s,
            sr->row.t_max_s);
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

/* The rules only the server that judged the run could apply, from the
 * facts it saw: its meter's window, the time between register and
 * complete, the labels (barred: why), the seed it handed out, the epochs
 * the round allows. */
static void evaluator_rules(const struct record *rec, const struct eeb_run_facts *f,
                            const char *barred, struct eeb_run_outcome *out)
{
    if (!f->seen)
        return;
    size_t before = strlen(out->why);
    if (f->meter[0])
        why(out, "%s", f->meter);
    /* an official run's fine-tuning happened between register and complete */
    double seen_s = (double)(f->completed - f->registered) / 1e9;
    if (f->official && !out->modeled_clock && f->completed && out->t_s > seen_s + 1)
        why(out,
            "the fine-tune window (%.3f s) is longer than the server saw between register and "
            "complete (%.3f s)",
            out->t_s, seen_s);
    if (barred[0])
        why(out, "%s", barred);
    else if (f->m_s_why[0])
        why(out, "%s", f->m_s_why);
    /* the server requires the training audit of an official run: one
     * without it (a team's own client, an eeb before it) is not judged as
     * a record made before the audit existed */
    if (f->audit_required && rec->stage >= 2 && !rec->training[0].seen)
        why(out, "its record has no training audit before the fine-tune; the server requires "
                 "it of an official run");
    else if (f->audit_required && rec->stage >= 4 && !rec->training[1].seen)
        why(out, "its record has no training audit after the fine-tune; the server requires it "
                 "of an official run");
    /* a run trains with the seed it was handed, and says so */
    if (f->seed >= 0 && rec->seed >= 0 && rec->seed != f->seed)
        why(out, "the run trained with seed %lld; the server handed it seed %lld",
            (long long)rec->seed, (long long)f->seed);
    else if (f->seed >= 0 && rec->seed < 0)
        why(out, "the run's finetune_begin says no seed; the server handed it seed %lld",
            (long long)f->seed);
    if (f->epochs_max && rec->epochs > f->epochs_max)
        why(out, "the run trained %d epochs; round %s's closed division allows %d", rec->epochs,
            f->round, f->epochs_max);
    if (strlen(out->why) != before)
        out->valid = 0;
}

/* The accuracy audit's rule (docs/check.md): a system whose saved model,
 * run on eeb's reference backend, gives the answers it gave on fewer than
 * EEB_AUDIT_MIN_AGREEMENT of the sampled test items is invalid; an audit
 * not done counts for nothing, and a run recorded before the audit
 * existed has none. */
static void accuracy_audit_rule(const struct audit_said *a, struct eeb_run_outcome *out)
{
    out->audit[0] = '\0';
    if (!a->seen)
        return;
    if (a->done == 0) {
        snprintf(out->audit, sizeof out->audit, "not done: %s", a->reason);
        return;
    }
    if (a->done < 0) {
        snprintf(out->audit, sizeof out->audit, "an audit event eeb run does not write");
        why(out, "its audit event is not what eeb run writes");
        out->valid = 0;
        return;
    }
    double agreement = a->agreed / a->sample;
    snprintf(out->audit, sizeof out->audit,
             "%.0f of %.0f sampled test items agree (%.1f %%; %s, reference %s; %g %% needed)",
             a->agreed, a->sample, 100 * agreement, a->measure, a->reference,
             100 * EEB_AUDIT_MIN_AGREEMENT);
    if (agreement < EEB_AUDIT_MIN_AGREEMENT) {
        why(out,
            "accuracy audit: its saved model on eeb's reference (%s) agrees with its test answers "
            "on %.0f of %.0f sampled items (%.1f %%, %s), under the %g %% required",
            a->reference, a->agreed, a->sample, 100 * agreement, a->measure,
            100 * EEB_AUDIT_MIN_AGREEMENT);
        out->valid = 0;
    }
}

/* The training audit (docs/check.md): the system's answers to the audit
 * slice of the fine-tune set before and after fine-tuning.  A record with
 * neither event (made before eeb audited, or by a run that stopped before
 * fine-tuning) is judged as before; one that tested without the second, or
 * whose slice is not the one its seed draws, is not what eeb run writes.
 * Answers that did not change at all: the system did not train.  Answers
 * that changed though eeb drove no training step: no training explains
 * them. */
static void training_audit_rules(const struct record *rec, struct eeb_run_outcome *out)
{
    const struct training_audit *b = &rec->training[0], *a = &rec->training[1];
    if (!b->seen && !a->seen && !rec->audits_extra)
        return;
    size_t before = strlen(out->why);
    uint64_t want[EEB_TRAINING_AUDIT_ITEMS];
    int n = b->seen && b->set_items > 0
                ? eeb_run_training_audit_slice((uint64_t)b->seed, (uint64_t)b->set_items, want)
                : -1;
    if (rec->audits_extra)
        why(out, "its training audit has more events than one before and one after the fine-tune");
    else if (!b->seen)
        why(out, "its training audit has answers from after the fine-tune but none from before");
    else if (!a->seen && rec->stage >= 6) /* it tested without the second */
        why(out, "its training audit has answers from before the fine-tune but none from after");
    else if (b->stage >= 2 || (a->seen && a->stage != 5))
        why(out, "its training audit's answers were not taken where eeb run takes them: before "
                 "the fine-tune begins, and after it stopped, before the test");
    else if (b->n < 0 || (a->seen && a->n < 0))
        why(out, "its training audit's events are not what eeb run writes");
    else if (b->seed != rec->seed || (a->seen && a->seed != b->seed))
        why(out, "its training audit's slice was drawn with seed %lld; the run trained with %lld",
            (long long)b->seed, (long long)rec->seed);
    else if (rec->set_items >= 0 && b->set_items != rec->set_items)
        why(out, "its training audit's slice was drawn from %lld items; the fine-tune set has %lld",
            (long long)b->set_items, (long long)rec->set_items);
    else if (n != b->n || memcmp(want, b->items, (size_t)n * sizeof *want) ||
             (a->seen && (a->n != b->n || memcmp(a->items, b->items, (size_t)n * sizeof *want))))
        why(out,
            "its training audit's items are not the %d that seed %lld draws from the fine-tune "
            "set's %lld",
            n, (long long)b->seed, (long long)b->set_items);
    if (strlen(out->why) != before || !a->seen) {
        if (strlen(out->why) != before)
            out->valid = 0;
        return;
    }
    int changed = 0;
    for (int i = 0; i < n; i++)
        changed += strcmp(b->answers[i], a->answers[i]) != 0;
    if (changed == 0)
        why(out,
            "the system did not train: its answers to the training audit's %d items of the "
            "fine-tune set were the same, bit for bit, before and after fine-tuning",
            n);
    else if (rec->eeb_steps >= 0 ? rec->eeb_steps == 0 : rec->complete_steps == 0)
        why(out,
            "its answers to %d of the training audit's %d items changed, though eeb drove no "
            "training step: no training explains that",
            changed, n);
    if (strlen(out->why) != before)
        out->valid = 0;
}

/* The SUT's counters (the stopped event), if it reports any (a counter
 * not 0), against what eeb drove: the train calls that returned OK and
 * their items.  A counter the SUT leaves at 0 is not reported; a record
 * made before eeb wrote its own count beside them is judged as before. */
static void counter_rules(const struct record *rec, struct eeb_run_outcome *out)
{
    if (!rec->stopped || rec->eeb_steps < 0)
        return;
    if (rec->sut_steps != 0 && rec->sut_steps != rec->eeb_steps) {
        why(out, "the system's counters say it took %lld training steps; eeb drove %lld",
            (long long)rec->sut_steps, (long long)rec->eeb_steps);
        out->valid = 0;
    }
    if (rec->sut_items != 0 && rec->eeb_items >= 0 && rec->sut_items != rec->eeb_items) {
        why(out, "the system's counters say it trained on %lld items; eeb handed it %lld",
            (long long)rec->sut_items, (long long)rec->eeb_items);
        out->valid = 0;
    }
}

/* eeb_run_judge on a run already read.  Each figure the record gives is
 * computed, the others left NAN: a run whose power log is unusable still
 * has its M_u, T and M_s. */
static int judge(const struct stored_run *sr, double m_s, const struct eeb_run_facts *given,
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
    figures_unknown(out);
    char claim[160];
    if (provenance_overclaimed(&cfg, claim, sizeof claim)) {
        out->valid = 0;
        why(out, "provenance: the record says %s, but %s", cfg.provenance, claim);
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
        why(out, "%s", rec->abort);
    }
    if (rec->error[0]) {
        out->valid = 0;
        why(out, "the run ended in an error: %s", rec->error);
    }
    if (rec->disorder[0]) {
        out->valid = 0;
        why(out, "%s", rec->disorder);
    }
    accuracy_audit_rule(&rec->audit, out);
    training_audit_rules(rec, out);
    counter_rules(rec, out);
    /* the budgets the run is judged by are the ones it was given and held
     * to while it ran */
    if ((!isnan(cfg.t_max_s) && cfg.t_max_s != row->t_max_s) ||
        (!isnan(cfg.p_max_w) && cfg.p_max_w != row->p_max_w)) {
        out->valid = 0;
        why(out,
            "the run's budgets (T_max %g s, P_max %g W) are not its configuration's (%g s, %g W)",
            row->t_max_s, row->p_max_w, cfg.t_max_s, cfg.p_max_w);
    }
    if (!isnan(rec->pmax_event_w) && rec->pmax_event_w != row->p_max_w) {
        out->valid = 0;
        why(out, "its pmax_exceeded event held it to P_max %g W, the record says %g W",
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
            why(out, "M_s is the server's, and none was stored");
    } else if (isnan(m_s)) {
        m_s = recount(sr->db, row->id, task, out->test_items, out, err, errlen);
    }
    out->score.m_u = (cfg.util[0] + cfg.util[1] + cfg.util[2] + cfg.util[3]) / 4;
    out->score.m_s = m_s;
    if (!rec->ft_begin || !rec->ft_end) {
        why(out, "no fine-tune window (finetune_begin and finetune_end events)");
        out->valid = 0;
        evaluator_rules(rec, &facts, barred, out);
        goto out;
    }
    struct power_judged pj = {0};
    int have_power = (out->modeled_clock ? modeled_figures : metered_figures)(sr, &cfg, out, &pj);
    evaluator_rules(rec, &facts, barred, out);
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
        .w = {cfg.weights[0], cfg.weights[1], cfg.weights[2], cfg.weights[3]}};
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
    if (have_power && !pj.p_max_pass && out->score.pass)
        why(out, "%s", pj.p_max_reason);
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
    int rc = open_run(db_path, run, &sr, err, errlen);
    if (rc == EEB_OK)
        rc = judge(&sr, m_s, facts, out, err, errlen);
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

/* ---- eeb check ---- */

static int count_sample(void *arg, const char *source, const struct eeb_sample *s)
{
    (void)source, (void)s;
    ++*(uint64_t *)arg;
    return 0;
}

/* A chain that breaks, or none, leaves the record unshown to be the one
 * the run wrote: invalid. */
static void chain_verdict(const struct eeb_chain_check *c, struct eeb_run_outcome *out)
{
    if (!c->broken && c->links)
        return;
    out->valid = 0;
    out->pass = 0;
    if (c->broken)
        why(out, "its chain breaks: %s", c->why);
    else
        why(out, "it has no chain (written before eeb chained its records, or its links were "
                 "deleted): nothing shows its record is the one the run wrote");
}

/* A run's links' heads and kinds, in order. */
struct heads {
    size_t n, cap;
    char (*head)[EEB_SHA256_HEX];
    char (*kind)[16];
};

static int keep_head(void *arg, const struct eeb_rundb_link *l)
{
    struct heads *h = arg;
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 256;
        void *a = realloc(h->head, cap * sizeof *h->head),
             *b = a ? realloc(h->kind, cap * sizeof *h->kind) : NULL;
        if (a)
            h->head = a;
        if (!b)
            return EEB_ENOMEM;
        h->kind = b, h->cap = cap;
    }
    memcpy(h->head[h->n], l->head, EEB_SHA256_HEX);
    snprintf(h->kind[h->n], sizeof h->kind[h->n], "%s",
             l->kind == EEB_LINK_EVENT ? l->event.kind : eeb_link_kind_name(l->kind));
    h->n++;
    return 0;
}

/* Whether copy, a server's record of run taken back, holds run's record:
 * the two chains agree link for link up to where the run's stopped going
 * to the server, after which the copy holds only the server's own events
 * (its facts, or the end it gave a run that stopped, and its score) and
 * the run only what it wrote of the verdict (its score and state).  "" in why if so. */
static int holds_run(struct eeb_rundb *db, int64_t run, int64_t copy, char *why, size_t n,
                     char *err, size_t errlen)
{
    struct heads a = {0}, b = {0};
    int rc = eeb_rundb_links_each(db, run, 0, keep_head, &a, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_links_each(db, copy, 0, keep_head, &b, err, errlen);
    if (rc == EEB_ENOMEM) /* keep_head's: links_each's own errors say themselves */
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "reading run %lld's chain: out of memory",
                      (long long)run);
    size_t same = 0;
    while (same < a.n && same < b.n && strcmp(a.head[same], b.head[same]) == 0)
        same++;
    why[0] = '\0';
    for (size_t i = same; rc == EEB_OK && !why[0] && i < b.n; i++)
        if (strcmp(b.kind[i], EEB_EVENT_EVALUATOR) && strcmp(b.kind[i], EEB_EVENT_ABORT) &&
            strcmp(b.kind[i], EEB_EVENT_SCORE))
            snprintf(why, n, "its link %zu is the run's link %zu no more", i, i);
    for (size_t i = same; rc == EEB_OK && !why[0] && i < a.n; i++)
        if (strcmp(a.kind[i], EEB_EVENT_SCORE) && strcmp(a.kind[i], EEB_EVENT_STATE))
            snprintf(why, n, "the run's link %zu (%s) is not in it", i, a.kind[i]);
    if (rc == EEB_OK && !why[0] && !same)
        snprintf(why, n, "its chain does not begin as the run's");
    free(a.head), free(a.kind), free(b.head), free(b.kind);
    return rc;
}

/* An official run whose server's record was taken back (a copy in the same
 * database) is judged as the server judged it, from that record: the
 * server's facts, M_s and meter.  The copy must hold the run's record. */
static int judge_by_copy(const struct stored_run *sr, int64_t copy, struct eeb_run_outcome *out,
                         char *err, size_t errlen)
{
    char why_not[256];
    int rc = holds_run(sr->db, sr->row.id, copy, why_not, sizeof why_not, err, errlen);
    if (rc)
        return rc;
    if (why_not[0]) {
        why(out, "the server's record of it (run %lld) is not its record: %s", (long long)copy,
            why_not);
        out->valid = 0;
        return EEB_OK;
    }
    struct stored_run cr;
    if ((rc = open_run(sr->path, copy, &cr, err, errlen)) == EEB_OK)
        rc = judge(&cr, NAN, NULL, out, err, errlen);
    /* and is whole: its chain and its meter's, hashed again */
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(cr.row.config, &cfg);
    int64_t logs[2] = {copy, cfg.meter_run};
    for (int i = 0; rc == EEB_OK && i < 2 && logs[i] > 0; i++) {
        struct eeb_chain_check c;
        if ((rc = eeb_rundb_chain_check(cr.db, logs[i], &c, err, errlen)) == EEB_OK && c.broken) {
            why(out, "the server's record of it (run %lld) breaks: %s", (long long)logs[i], c.why);
            out->valid = 0, out->pass = 0;
        }
    }
    close_run(&cr);
    out->run = sr->row.id, out->server_copy = copy;
    snprintf(out->uuid, sizeof out->uuid, "%s", sr->row.uuid);
    return rc;
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
    if ((rc = eeb_rundb_chain_check(sr.db, row->id, &figures->chain, err, errlen)))
        goto out;
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
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(row->config, &cfg);
    int64_t copy = 0;
    if (cfg.official && !cfg.held_by_server &&
        (rc = eeb_rundb_copy_of(sr.db, row->uuid, row->id, &copy, err, errlen)))
        goto out;
    if ((rc = copy ? judge_by_copy(&sr, copy, out, err, errlen)
                   : judge(&sr, NAN, NULL, out, err, errlen)))
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
    if (rc == EEB_OK && strcmp(row->task, "none"))
        chain_verdict(&figures->chain, out);
    close_run(&sr);
    return rc;
}
