/*
 * judge_int.h - shared by the files of the judge: the stored record as
 * judge_record.c reads it, and what judge.c (the verdict), judge_rules.c
 * (the rules of the server's facts and the audits) and judge_check.c
 * (eeb check) call of each other.
 */
#ifndef EEB_RECORD_JUDGE_INT_H
#define EEB_RECORD_JUDGE_INT_H

#include "record/eeb_record.h"
#include "rundb/eeb_rundb.h"

#include <stddef.h>
#include <stdint.h>

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

/* A run as stored: its row and what its events say. */
struct stored_run {
    const char *path;
    struct eeb_rundb *db;
    struct eeb_run_row row;
    struct record rec;
};

/* Appends a reason to out->why, "; "-separated. */
__attribute__((format(printf, 2, 3))) void judge_why(struct eeb_run_outcome *out, const char *fmt,
                                                     ...);

/* judge_record.c: run of the database at path opened and its events read
 * into sr->rec; close it with judge_close_run whatever the outcome. */
int judge_open_run(const char *path, int64_t run, struct stored_run *sr, char *err, size_t errlen);
void judge_close_run(struct stored_run *sr);

/* judge_rules.c: the rules of the facts only the server that judged the
 * run saw (barred: why its labels may not count, "" if they may), of the
 * accuracy audit, of the training audit and of the SUT's counters; each
 * adds its reasons to out and clears out->valid if it found any. */
void judge_evaluator_rules(const struct record *rec, const struct eeb_run_facts *f,
                           const char *barred, struct eeb_run_outcome *out);
void judge_accuracy_audit_rule(const struct audit_said *a, struct eeb_run_outcome *out);
void judge_training_audit_rules(const struct record *rec, struct eeb_run_outcome *out);
void judge_counter_rules(const struct record *rec, struct eeb_run_outcome *out);

/* judge.c: eeb_run_judge on a run already read (given: the server's facts,
 * or NULL for those its copy holds); every figure unknown (NAN). */
int judge_stored_run(const struct stored_run *sr, double m_s, const struct eeb_run_facts *given,
                     struct eeb_run_outcome *out, char *err, size_t errlen);
void judge_figures_unknown(struct eeb_run_outcome *out);

#endif
