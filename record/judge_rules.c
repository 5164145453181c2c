/*
 * judge_rules.c - the judge's rules on what a record's events say beyond
 * its figures: the facts only the server that judged the run saw (its
 * evaluator event), the accuracy audit, the training audit and the SUT's
 * counters against the steps eeb drove (docs/check.md).
 */
#include "record/judge_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The rules only the server that judged the run could apply, from the
 * facts it saw: its meter's window, the time between register and
 * complete, the labels (barred: why), the seed it handed out, the epochs
 * the round allows. */
void judge_evaluator_rules(const struct record *rec, const struct eeb_run_facts *f,
                           const char *barred, struct eeb_run_outcome *out)
{
    if (!f->seen)
        return;
    size_t before = strlen(out->why);
    if (f->meter[0])
        judge_why(out, "%s", f->meter);
    /* an official run's fine-tuning happened between register and complete */
    double seen_s = (double)(f->completed - f->registered) / 1e9;
    if (f->official && !out->modeled_clock && f->completed && out->t_s > seen_s + 1)
        judge_why(
            out,
            "the fine-tune window (%.3f s) is longer than the server saw between register and "
            "complete (%.3f s)",
            out->t_s, seen_s);
    if (barred[0])
        judge_why(out, "%s", barred);
    else if (f->m_s_why[0])
        judge_why(out, "%s", f->m_s_why);
    /* the server requires the training audit of an official run: one
     * without it (a team's own client, an eeb before it) is not judged as
     * a record made before the audit existed */
    if (f->audit_required && rec->stage >= 2 && !rec->training[0].seen)
        judge_why(out, "its record has no training audit before the fine-tune; the server requires "
                       "it of an official run");
    else if (f->audit_required && rec->stage >= 4 && !rec->training[1].seen)
        judge_why(out,
                  "its record has no training audit after the fine-tune; the server requires it "
                  "of an official run");
    /* a run trains with the seed it was handed, and says so */
    if (f->seed >= 0 && rec->seed >= 0 && rec->seed != f->seed)
        judge_why(out, "the run trained with seed %lld; the server handed it seed %lld",
                  (long long)rec->seed, (long long)f->seed);
    else if (f->seed >= 0 && rec->seed < 0)
        judge_why(out, "the run's finetune_begin says no seed; the server handed it seed %lld",
                  (long long)f->seed);
    if (f->epochs_max && rec->epochs > f->epochs_max)
        judge_why(out, "the run trained %d epochs; round %s's closed division allows %d",
                  rec->epochs, f->round, f->epochs_max);
    if (strlen(out->why) != before)
        out->valid = 0;
}

/* The accuracy audit's rule (docs/check.md): a system whose saved model,
 * run on eeb's reference backend, gives the answers it gave on fewer than
 * EEB_AUDIT_MIN_AGREEMENT of the sampled test items is invalid; an audit
 * not done counts for nothing, and a run recorded before the audit
 * existed has none. */
void judge_accuracy_audit_rule(const struct audit_said *a, struct eeb_run_outcome *out)
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
        judge_why(out, "its audit event is not what eeb run writes");
        out->valid = 0;
        return;
    }
    double agreement = a->agreed / a->sample;
    snprintf(out->audit, sizeof out->audit,
             "%.0f of %.0f sampled test items agree (%.1f %%; %s, reference %s; %g %% needed)",
             a->agreed, a->sample, 100 * agreement, a->measure, a->reference,
             100 * EEB_AUDIT_MIN_AGREEMENT);
    if (agreement < EEB_AUDIT_MIN_AGREEMENT) {
        judge_why(
            out,
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
void judge_training_audit_rules(const struct record *rec, struct eeb_run_outcome *out)
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
        judge_why(out,
                  "its training audit has more events than one before and one after the fine-tune");
    else if (!b->seen)
        judge_why(out,
                  "its training audit has answers from after the fine-tune but none from before");
    else if (!a->seen && rec->stage >= 6) /* it tested without the second */
        judge_why(out,
                  "its training audit has answers from before the fine-tune but none from after");
    else if (b->stage >= 2 || (a->seen && a->stage != 5))
        judge_why(out,
                  "its training audit's answers were not taken where eeb run takes them: before "
                  "the fine-tune begins, and after it stopped, before the test");
    else if (b->n < 0 || (a->seen && a->n < 0))
        judge_why(out, "its training audit's events are not what eeb run writes");
    else if (b->seed != rec->seed || (a->seen && a->seed != b->seed))
        judge_why(out,
                  "its training audit's slice was drawn with seed %lld; the run trained with %lld",
                  (long long)b->seed, (long long)rec->seed);
    else if (rec->set_items >= 0 && b->set_items != rec->set_items)
        judge_why(
            out, "its training audit's slice was drawn from %lld items; the fine-tune set has %lld",
            (long long)b->set_items, (long long)rec->set_items);
    else if (n != b->n || memcmp(want, b->items, (size_t)n * sizeof *want) ||
             (a->seen && (a->n != b->n || memcmp(a->items, b->items, (size_t)n * sizeof *want))))
        judge_why(
            out,
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
        judge_why(out,
                  "the system did not train: its answers to the training audit's %d items of the "
                  "fine-tune set were the same, bit for bit, before and after fine-tuning",
                  n);
    else if (rec->eeb_steps >= 0 ? rec->eeb_steps == 0 : rec->complete_steps == 0)
        judge_why(out,
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
void judge_counter_rules(const struct record *rec, struct eeb_run_outcome *out)
{
    if (!rec->stopped || rec->eeb_steps < 0)
        return;
    if (rec->sut_steps != 0 && rec->sut_steps != rec->eeb_steps) {
        judge_why(out, "the system's counters say it took %lld training steps; eeb drove %lld",
                  (long long)rec->sut_steps, (long long)rec->eeb_steps);
        out->valid = 0;
    }
    if (rec->sut_items != 0 && rec->eeb_items >= 0 && rec->sut_items != rec->eeb_items) {
        judge_why(out, "the system's counters say it trained on %lld items; eeb handed it %lld",
                  (long long)rec->sut_items, (long long)rec->eeb_items);
        out->valid = 0;
    }
}
