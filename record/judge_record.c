/*
 * judge_record.c - a run's record as the judge reads it: its row and its
 * events, each event kind checked against the workflow's order and what
 * the judge needs of it kept (struct record, record/judge_int.h).
 */
#include "record/judge_int.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int judge_open_run(const char *path, int64_t run, struct stored_run *sr, char *err, size_t errlen)
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

void judge_close_run(struct stored_run *sr)
{
    eeb_rundb_run_row_free(&sr->row);
    eeb_rundb_close(sr->db);
}
