/*
 * eeb_rundb.h - the run database: one SQLite file (WAL, foreign keys on)
 * holding runs, their events, power samples, predictions and results.
 *
 * Every stage boundary is an event and every power reading a sample, both
 * on CLOCK_MONOTONIC, so energy and compliance can be recomputed from the
 * file alone.  The schema is versioned with PRAGMA user_version and marked
 * with PRAGMA application_id; migrations are code (rundb.c), and so are
 * those of tables another room keeps in the same file, applied by the same
 * code (eeb_rundb_tables.h: the server's teams and entries).  A file that
 * is not an eeb database, or was written by a newer eeb, is refused and left
 * byte-for-byte untouched.
 */
#ifndef EEB_RUNDB_H
#define EEB_RUNDB_H

#include "common/eeb_common.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define EEB_RUNDB_SCHEMA         5          /* the schema version this eeb writes */
#define EEB_RUNDB_APPLICATION_ID 0x45454231 /* "EEB1" in the SQLite header */

struct eeb_rundb; /* opaque */

enum eeb_rundb_mode {
    EEB_RUNDB_READWRITE, /* create a missing file, migrate an older schema */
    EEB_RUNDB_READONLY,  /* existing, current-schema files only */
};

/*
 * Opens (and in READWRITE mode creates or migrates) a run database.
 * On success *out is a handle to close with eeb_rundb_close().  Errors name
 * the file: EEB_EFORMAT for a foreign file, EEB_EVERSION for a newer schema.
 */
int eeb_rundb_open(const char *path, enum eeb_rundb_mode mode, struct eeb_rundb **out, char *err,
                   size_t errlen);

void eeb_rundb_close(struct eeb_rundb *db);

/* The path the database was opened from, for messages. */
const char *eeb_rundb_path(const struct eeb_rundb *db);

/* The run lifecycle (DESIGN.md §4, harness/): state names as stored. */
enum eeb_run_state {
    EEB_RUN_INIT,
    EEB_RUN_DEPLOY,
    EEB_RUN_FINETUNE,
    EEB_RUN_STOPPED,
    EEB_RUN_TEST,
    EEB_RUN_SCORE,
    EEB_RUN_SUBMIT,
    EEB_RUN_DONE,   /* terminal: scored (and submitted, if a server was given) */
    EEB_RUN_FAILED, /* terminal: an error or a failed budget; see its events */
    EEB_RUN_STATE_COUNT
};

const char *eeb_rundb_state_name(enum eeb_run_state state);

struct eeb_run_new {
    enum eeb_task task;
    const char *backend;       /* "emu", "xrt", ... */
    const char *config_json;   /* the whole run configuration; NULL stores {} */
    double t_max_s;            /* time budget, seconds */
    double p_max_w;            /* power budget, watts */
    const char *rules_version; /* scoring rules the run is judged by */
    int power_log;             /* a standalone power log: task 'none', budgets may be NAN */
    int received;              /* a server's copy: its chain is the sender's (links_add) */
    const char *uuid;          /* NULL: a new one; a copy keeps its run's (copy.c) */
};

/* Creates a run in state init, with the origin of its chain unless it is
 * received; fills its row id and its UUID (a new one unless given). */
int eeb_rundb_run_create(struct eeb_rundb *db, const struct eeb_run_new *run, int64_t *id,
                         char uuid[37], char *err, size_t errlen);

/* Moves a run to a state; terminal states also record the finish time. */
int eeb_rundb_run_set_state(struct eeb_rundb *db, int64_t run, enum eeb_run_state state, char *err,
                            size_t errlen);

/*
 * The kinds of a run's events, as stored: the one name every writer and
 * reader uses (a kind or key renamed here changes the file format; the
 * suite's SQL on the stored names catches it).  Payloads are JSON objects:
 *   state {state}; device_model, the modeled device; deployed;
 *   finetune_begin {t_max_s} and finetune_end, the metered window;
 *   train {loss, counts} every window of steps; epoch_end, epoch_partial;
 *   pmax_exceeded; complete {reason: done, t_max, p_max, interrupted,
 *   error, unlogged}; abort {reason}; accelerator_stopped {after_s};
 *   stopped; test_inputs (official runs); test_begin, test_end {items};
 *   score {by, verdict, S}; error {message}; log_begin, log_end (eeb
 *   power log); ranging_begin {meter, identity, seconds}, ranging_end
 *   {meter, volts, amps, max_volts, max_amps} (a ranging pass of the
 *   meter on the workload, after deployed, before the fine-tune; the SUT
 *   deployed again after it); evaluator, the facts a server judged with
 *   (below); training_audit {when, seed, set_items, items, answers}, twice:
 *   before the fine-tune (after ranging) and after it (after stopped).
 */
#define EEB_EVENT_STATE               "state"
#define EEB_EVENT_DEVICE_MODEL        "device_model"
#define EEB_EVENT_DEPLOYED            "deployed"
#define EEB_EVENT_FINETUNE_BEGIN      "finetune_begin"
#define EEB_EVENT_TRAIN               "train"
#define EEB_EVENT_EPOCH_END           "epoch_end"
#define EEB_EVENT_EPOCH_PARTIAL       "epoch_partial"
#define EEB_EVENT_PMAX_EXCEEDED       "pmax_exceeded"
#define EEB_EVENT_COMPLETE            "complete"
#define EEB_EVENT_FINETUNE_END        "finetune_end"
#define EEB_EVENT_ABORT               "abort"
#define EEB_EVENT_ACCELERATOR_STOPPED "accelerator_stopped"
#define EEB_EVENT_STOPPED             "stopped"
#define EEB_EVENT_TEST_INPUTS         "test_inputs"
#define EEB_EVENT_TEST_BEGIN          "test_begin"
#define EEB_EVENT_TEST_END            "test_end"
#define EEB_EVENT_SCORE               "score"
#define EEB_EVENT_ERROR               "error"
#define EEB_EVENT_LOG_BEGIN           "log_begin"
#define EEB_EVENT_LOG_END             "log_end"
#define EEB_EVENT_EVALUATOR           "evaluator"
#define EEB_EVENT_RANGING_BEGIN       "ranging_begin"
#define EEB_EVENT_RANGING_END         "ranging_end"
#define EEB_EVENT_AUDIT               "audit" /* the accuracy audit, after test_end */
#define EEB_EVENT_TRAINING_AUDIT      "training_audit"

/* The payload keys the record is judged and reported by (record/), written
 * by the run (harness/run_*.c) and the sampler: one name for both sides. */
#define EEB_EVENT_KEY_REASON       "reason"       /* complete, abort, a meter's fault */
#define EEB_EVENT_KEY_MESSAGE      "message"      /* error */
#define EEB_EVENT_KEY_LOSS         "loss"         /* train, epoch_end, epoch_partial */
#define EEB_EVENT_KEY_TRAIN_METRIC "train_metric" /* epoch_end, epoch_partial */
#define EEB_EVENT_KEY_STEP         "step"         /* train, epoch_*, complete: eeb's count */
#define EEB_EVENT_KEY_SEED         "seed"         /* finetune_begin: the seed it trains with */
#define EEB_EVENT_KEY_DETAIL       "detail"       /* deployed: the SUT's counters' detail */
#define EEB_EVENT_KEY_STEPS        "steps"        /* stopped: the SUT's own counters, */
#define EEB_EVENT_KEY_ITEMS        "items"        /*   as eeb_sut_counters has them */
#define EEB_EVENT_KEY_SATURATIONS  "saturations"
#define EEB_EVENT_KEY_VERDICT      "verdict" /* score: pass, fail, invalid, ... */
#define EEB_EVENT_KEY_S            "S"       /* score: S, or null without a pass */
#define EEB_EVENT_KEY_P_MAX        "p_max_w" /* pmax_exceeded: the budget it broke */
/* stopped: what eeb drove, beside the SUT's counters: the train calls that
 * returned OK and the items they carried */
#define EEB_EVENT_KEY_EEB_STEPS "eeb_steps"
#define EEB_EVENT_KEY_EEB_ITEMS "eeb_items"
/* training_audit: the audit slice's answers (record/eeb_record.h) */
#define EEB_TRAINING_AUDIT_KEY_WHEN "when" /* "before" or "after" fine-tuning */
#define EEB_TRAINING_AUDIT_KEY_SET_ITEMS                                                           \
    "set_items"                                  /* the fine-tune set's items it was drawn from */
#define EEB_TRAINING_AUDIT_KEY_ITEMS   "items"   /* the items' indices in the set, ascending */
#define EEB_TRAINING_AUDIT_KEY_ANSWERS "answers" /* each item's answer's digest, in that order */
#define EEB_TRAINING_AUDIT_BEFORE      "before"
#define EEB_TRAINING_AUDIT_AFTER       "after"

/* audit: the accuracy audit (harness/run_audit_accuracy.c; docs/check.md).  done
 * is true or false; when false, reason says why it was not done (and
 * model_sha256 names the file the system wrote, if any).  When true:
 * sample test items drawn with the run's seed out of items (sampled, their
 * positions in the test inputs), agreed of
 * them answered alike by the system and by eeb's reference backend
 * (reference, for the saved model's format) by the task's measure;
 * threshold the fraction the run needed. */
#define EEB_AUDIT_KEY_DONE      "done"
#define EEB_AUDIT_KEY_REASON    "reason"
#define EEB_AUDIT_KEY_SAMPLE    "sample"
#define EEB_AUDIT_KEY_SAMPLED   "sampled" /* the items drawn, by position, ascending */
#define EEB_AUDIT_KEY_AGREED    "agreed"
#define EEB_AUDIT_KEY_ITEMS     "items"
#define EEB_AUDIT_KEY_THRESHOLD "threshold"
#define EEB_AUDIT_KEY_MEASURE   "measure"
#define EEB_AUDIT_KEY_REFERENCE "reference"
#define EEB_AUDIT_KEY_FORMAT    "format"
#define EEB_AUDIT_KEY_MODEL     "model_sha256"

/* evaluator: what the server that judged the run saw and alone could see,
 * written to its copy before it judges, so that the judge (record/judge.c)
 * takes it from the record and `eeb check` of the copy gives the server's
 * verdict.  Times are UTC ns on the server's clock (0: not seen); a
 * reason is "" where nothing is wrong. */
#define EEB_FACT_OFFICIAL       "official"                /* a ranked run, not a rehearsal */
#define EEB_FACT_REGISTERED     "registered_utc_ns"       /* the run registered */
#define EEB_FACT_COMPLETED      "completed_utc_ns"        /* it said complete */
#define EEB_FACT_FINE_TUNE      "fine_tune"               /* why it did not fine-tune as seen */
#define EEB_FACT_TEST_SERVED    "test_served_utc_ns"      /* its test inputs were first served */
#define EEB_FACT_PREDICTED      "predicted_utc_ns"        /* its predictions last changed */
#define EEB_FACT_PREDICT_WITHIN "predict_within_s"        /* the deadline after the serving */
#define EEB_FACT_M_S            "m_s"                     /* the labels' count, or null */
#define EEB_FACT_M_S_WHY        "m_s_why"                 /* why there is none */
#define EEB_FACT_SEED           "seed"                    /* the seed handed out, or null */
#define EEB_FACT_ROUND          "round"                   /* the round's name, or "" */
#define EEB_FACT_EPOCHS_MAX     "epochs_max"              /* its division allows (0: any) */
#define EEB_FACT_METER          "meter"                   /* why its meter has no window */
#define EEB_FACT_AUDIT_REQUIRED "training_audit_required" /* its record must hold the audit */
/* complete's reason when fine-tuning was stopped at T_max */
#define EEB_COMPLETE_TMAX "t_max"

/* Appends an event and its link; payload_json may be NULL, otherwise valid
 * JSON.  Inside the caller's transaction if one is open. */
int eeb_rundb_event_add(struct eeb_rundb *db, int64_t run, int64_t t_mono_ns, int64_t t_utc_ns,
                        const char *kind, const char *payload_json, char *err, size_t errlen);

struct eeb_sample {
    int64_t t_mono_ns; /* CLOCK_MONOTONIC, the events' clock */
    int64_t t_utc_ns;  /* wall clock, for people */
    double volts;      /* NAN when the source does not give it */
    double amps;       /* NAN when the source does not give it */
    double watts;
    uint32_t flags; /* quality: the reading's uncertainty (below); other bits 0 */
};

/* A reading's relative uncertainty as its meter stated it, kept in its
 * flags (as PTDaemon's log keeps it beside each reading): bit 31 says the
 * meter stated one, the low 24 bits hold it in millionths (a fraction:
 * 10000 is 1 %, to 16.7 = 1677 %), all ones: the meter could not
 * evaluate it.  Flags 0: none stated. */
#define EEB_SAMPLE_UNCERTAINTY      (1u << 31)
#define EEB_SAMPLE_UNCERTAINTY_MASK 0xffffffu

/* u (a fraction; INFINITY: not evaluated; NAN: none) as flags. */
static inline uint32_t eeb_sample_uncertainty_flags(double u)
{
    if (isnan(u))
        return 0;
    if (isinf(u))
        return EEB_SAMPLE_UNCERTAINTY | EEB_SAMPLE_UNCERTAINTY_MASK;
    double ppm = u * 1e6 + 0.5; /* to the nearest millionth, the largest kept finite */
    return EEB_SAMPLE_UNCERTAINTY |
           (ppm >= (double)(EEB_SAMPLE_UNCERTAINTY_MASK - 1) ? EEB_SAMPLE_UNCERTAINTY_MASK - 1
                                                             : (uint32_t)(ppm > 0 ? ppm : 0));
}

/* The uncertainty flags hold: a fraction, INFINITY (not evaluated) or NAN
 * (none stated). */
static inline double eeb_sample_uncertainty(uint32_t flags)
{
    uint32_t v = flags & EEB_SAMPLE_UNCERTAINTY_MASK;
    if (!(flags & EEB_SAMPLE_UNCERTAINTY))
        return NAN;
    return v == EEB_SAMPLE_UNCERTAINTY_MASK ? INFINITY : v / 1e6;
}

/* Appends n samples from one source in a single transaction. */
int eeb_rundb_samples_add(struct eeb_rundb *db, int64_t run, const char *source,
                          const struct eeb_sample *samples, size_t n, char *err, size_t errlen);

struct eeb_rundb_event {
    int64_t t_mono_ns, t_utc_ns;
    const char *kind, *payload; /* payload: JSON or NULL */
};

/* ---- The chain (chain.c; the bytes hashed: docs/check.md) --------------
 *
 * Each record a run writes is a link of a hash chain, in the order
 * written: link 0, the origin, commits to the run's uuid and to its
 * stored configuration; each later link, one event or one batch of
 * samples, has as its head the SHA-256 of the head before it and of its
 * records.  An edit made after the fact, consistent or not, changes the
 * heads from the edited link on: the heads a server received while the
 * run went, and the head `eeb check` prints.  Predictions and results are
 * not links: the server takes predictions only from the run itself, and
 * results are recomputed.
 */
enum eeb_link_kind { EEB_LINK_ORIGIN, EEB_LINK_EVENT, EEB_LINK_SAMPLES, EEB_LINK_KIND_COUNT };

const char *eeb_link_kind_name(enum eeb_link_kind kind); /* origin, event, samples */
int eeb_link_kind_parse(const char *name, enum eeb_link_kind *out);

struct eeb_rundb_link {
    int64_t seq;
    enum eeb_link_kind kind;
    char head[EEB_SHA256_HEX];
    int64_t at_utc_ns; /* when it was written; in a server's copy, received */
    /* origin */
    char uuid[37], config_sha256[EEB_SHA256_HEX];
    /* event */
    struct eeb_rundb_event event;
    /* samples, from one source */
    const char *source;
    const struct eeb_sample *samples;
    size_t nsamples;
};

/* The head l has after prev (the origin has none: NULL). */
void eeb_rundb_link_head(const char *prev, const struct eeb_rundb_link *l,
                         char head[EEB_SHA256_HEX]);

/* Calls fn for each link of run from seq from on, with its records as
 * stored; a non-zero return from fn stops the walk and is returned. */
int eeb_rundb_links_each(struct eeb_rundb *db, int64_t run, int64_t from,
                         int (*fn)(void *arg, const struct eeb_rundb_link *l), void *arg, char *err,
                         size_t errlen);

/* What links_add made of the links it was given. */
enum eeb_link_verdict {
    EEB_LINKS_STORED,  /* all stored or held (sent before, the same head) */
    EEB_LINKS_DIFFERS, /* links[at] is held with another head */
    EEB_LINKS_GAP,     /* links[at] is not the next: *next is */
    EEB_LINKS_BREAKS,  /* links[at]'s records do not give its head */
};

/*
 * A server's copy: stores n links received for run, with their records,
 * in one transaction, each checked against the chain held so far (the
 * origin first).  Nothing is stored unless every link is the next, or one
 * held with the same head.  *next is then the seq the run expects.
 * Returns EEB_OK with *verdict, or an error.
 */
int eeb_rundb_links_add(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_link *links,
                        size_t n, int64_t at_utc_ns, enum eeb_link_verdict *verdict, size_t *at,
                        int64_t *next, char *err, size_t errlen);

/* Copies run of from into to as a received copy (copy.c): its chain's
 * links, each checked as links_add checks them (a copy that does not
 * chain is refused), its predictions, results and state, and config_json
 * as its configuration (NULL: its own); its id in to into *id.  Outside
 * any transaction of to's; nothing is left of the copy if it fails. */
int eeb_rundb_run_copy(struct eeb_rundb *from, int64_t run, struct eeb_rundb *to,
                       const char *config_json, int64_t *id, char *err, size_t errlen);

/* A server's record of run as copies in to: its meter run (meter_run, if
 * not 0) first, then the run, its configuration naming the meter run by
 * its id in to; their ids into *copy and *meter.  Nothing is left of
 * either if one fails. */
int eeb_rundb_record_copy(struct eeb_rundb *from, int64_t run, int64_t meter_run,
                          struct eeb_rundb *to, int64_t *copy, int64_t *meter, char *err,
                          size_t errlen);

/* Deletes run and every record of it from db, in one transaction. */
int eeb_rundb_run_delete(struct eeb_rundb *db, int64_t run, char *err, size_t errlen);

/* The latest copy in db of the run whose uuid is uuid (a run whose chain's
 * origin names it: a server's record of it, taken back), other than run
 * itself; 0 if there is none. */
int eeb_rundb_copy_of(struct eeb_rundb *db, const char *uuid, int64_t run, int64_t *copy, char *err,
                      size_t errlen);

/* A run's chain, verified from its records. */
struct eeb_chain_check {
    int64_t links;             /* links stored; 0: a run made before the chain */
    int64_t events, samples;   /* the records they hold */
    char head[EEB_SHA256_HEX]; /* the last link's, as recomputed */
    int received;              /* the origin names another run: a copy received */
    int broken;                /* the first fault, located, in why */
    char why[512];
};

int eeb_rundb_chain_check(struct eeb_rundb *db, int64_t run, struct eeb_chain_check *out, char *err,
                          size_t errlen);

/*
 * Calls fn for each sample of a run with t0 <= t_mono_ns < t1, in time order.
 * A non-zero return from fn stops the walk and is returned.
 */
int eeb_rundb_samples_each(struct eeb_rundb *db, int64_t run, int64_t t0, int64_t t1,
                           int (*fn)(void *arg, const char *source, const struct eeb_sample *s),
                           void *arg, char *err, size_t errlen);

/* A run as stored. */
struct eeb_run_row {
    int64_t id;
    char uuid[37];
    char task[8]; /* cls, det, video or none */
    char backend[64];
    char *config;            /* JSON (free it with eeb_rundb_run_row_free) */
    double t_max_s, p_max_w; /* NAN when not set (power logs) */
    char rules_version[32];
    char state[16];
    int64_t created_utc_ns, finished_utc_ns; /* finished: 0 while running */
};

/* Reads run id, or with id 0 the latest run.  EEB_EINVAL naming the file
 * if there is no such run. */
int eeb_rundb_run_get(struct eeb_rundb *db, int64_t id, struct eeb_run_row *out, char *err,
                      size_t errlen);
void eeb_rundb_run_row_free(struct eeb_run_row *row);

/* Every run's id, oldest first, in a new array (free it yourself). */
int eeb_rundb_run_ids(struct eeb_rundb *db, int64_t **ids, size_t *n, char *err, size_t errlen);

/* Calls fn for each event of a run in time order (payload NULL if none);
 * a non-zero return from fn stops the walk and is returned. */
int eeb_rundb_events_each(struct eeb_rundb *db, int64_t run,
                          int (*fn)(void *arg, int64_t t_mono_ns, int64_t t_utc_ns,
                                    const char *kind, const char *payload),
                          void *arg, char *err, size_t errlen);

/* A stored result's value; EEB_EINVAL if the run has none of that name. */
int eeb_rundb_result_get(struct eeb_rundb *db, int64_t run, const char *name, double *value,
                         char *err, size_t errlen);

/* Stores (or replaces) the predictions of n test items, as JSON, in one
 * transaction. */
int eeb_rundb_predictions_add(struct eeb_rundb *db, int64_t run, const int64_t *items,
                              const char *const *payloads, size_t n, char *err, size_t errlen);

/* Calls fn for each prediction of a run by item; a non-zero return from
 * fn stops the walk and is returned. */
int eeb_rundb_predictions_each(struct eeb_rundb *db, int64_t run,
                               int (*fn)(void *arg, int64_t item, const char *payload), void *arg,
                               char *err, size_t errlen);

/* Stores (or replaces) a named result; provenance is measured, counter,
 * modeled or computed. */
int eeb_rundb_result_set(struct eeb_rundb *db, int64_t run, const char *name, double value,
                         const char *unit, const char *provenance, char *err, size_t errlen);

struct eeb_rundb_info {
    int schema;
    int64_t runs, events, samples, predictions, results;
    int64_t runs_by_state[EEB_RUN_STATE_COUNT];
};

int eeb_rundb_info(struct eeb_rundb *db, struct eeb_rundb_info *out, char *err, size_t errlen);

#endif
