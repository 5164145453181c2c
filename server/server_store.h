/*
 * server_store.h - what the server stores and reads, and nothing of how:
 * teams and their tokens, a team's runs through their stages (register,
 * the power log, complete, predictions, the counters, the verdict), and
 * the leaderboard's reads.
 *
 * One SQLite file (store.c), an eeb run database: each run is recorded as
 * `eeb run` records one, so the judge, `eeb check` and the report read it
 * as a local file.  rundb/ owns its schema: the server's own tables (teams,
 * entries) are a set of migrations it applies with the run tables'
 * (rundb/eeb_rundb_tables.h), so one code path decides the file's version.
 * Every call works on the calling thread's own connection, opened on its
 * first call and closed when the thread ends.  Calls return EEB_OK or a
 * negative status with err filled, naming the file, unless they say more.
 *
 * Sections: the store; teams; runs; the leaderboard.
 */
#ifndef EEB_SERVER_STORE_H
#define EEB_SERVER_STORE_H

#include "record/eeb_record.h"
#include "server/eeb_server.h"
#include "rundb/eeb_rundb.h"

#include <stddef.h>
#include <stdint.h>

/* ---- the store ---- */

struct eeb_srv_store; /* opaque */

/* Opens the database at path, creating it if missing (mode 0600 whatever
 * the umask: it holds the teams' runs, token hashes and the key the secret
 * test items are named by; SQLite gives its -wal and -shm the file's
 * mode) and migrating the run tables and the server's; refuses a file
 * that is not a run database, or whose tables a newer eeb wrote, leaving
 * it untouched. */
int eeb_srv_store_open(const char *path, struct eeb_srv_store **out, char *err, size_t errlen);

/* Closes the calling thread's connection and the store (the pool's threads
 * have closed theirs as they ended). */
void eeb_srv_store_close(struct eeb_srv_store *s);

/* The database's path: the judge and the report read the file there. */
const char *eeb_srv_store_path(const struct eeb_srv_store *s);

/* Opens the calling thread's connection if it has none: a request's first
 * step, so that a database that cannot be opened fails every route alike. */
int eeb_srv_store_ready(struct eeb_srv_store *s, char *err, size_t errlen);

/* What /metrics says of the store. */
struct eeb_srv_store_stats {
    int64_t teams;        /* teams registered and not revoked */
    int64_t runs_going;   /* runs registered and not yet scored */
    int64_t audit_last;   /* the organizer's last act (0: none): answers kept before it are stale */
    int64_t memory_bytes; /* what SQLite holds now (its page caches first) */
};
int eeb_srv_store_stats(struct eeb_srv_store *s, struct eeb_srv_store_stats *out, char *err,
                        size_t errlen);

/* ---- the server's key, and the teams' quotas ---- */

#define EEB_SRV_KEY_BYTES 32

/* The server's key, drawn from getrandom the first time it is asked for
 * and kept: the secret test items are served under names made with it. */
int eeb_srv_store_key(struct eeb_srv_store *s, uint8_t key[EEB_SRV_KEY_BYTES], char *err,
                      size_t errlen);

/* n of team's quota q taken for the UTC day `day` (days since 1970), if
 * that day's use stays within limit (< 0: none): 1; or 0, nothing taken,
 * and *used the day's use; or an error.  A negative n gives back what was
 * taken. */
int eeb_srv_store_quota_take(struct eeb_srv_store *s, int64_t team, int64_t day,
                             enum eeb_server_quota q, int64_t n, int64_t limit, int64_t *used,
                             char *err, size_t errlen);

/* ---- teams ---- */

#define EEB_SRV_TEAM_NAME 65 /* a team's name (64 characters) and NUL */

/* Adds team name with token, kept only as its SHA-256.  A name taken is
 * EEB_EINVAL naming it. */
int eeb_srv_store_team_add(struct eeb_srv_store *s, const char *name, const char *token, char *err,
                           size_t errlen);

/* The team whose token this is: its id (0 if none) and name. */
int eeb_srv_store_team_by_token(struct eeb_srv_store *s, const char *token, int64_t *team,
                                char name[EEB_SRV_TEAM_NAME], char *err, size_t errlen);

/* ---- runs ---- */

/* A team's run: its budgets, what the team declared, where it stands, and
 * once scored, the verdict. */
struct eeb_srv_run {
    int64_t id, team;
    char team_name[EEB_SRV_TEAM_NAME];
    int task, official;
    double t_max_s, p_max_w;
    char rules_version[16], backend[64], device[64], provenance[16];
    char state[16]; /* registered, complete, scored */
    int64_t registered_utc_ns, completed_utc_ns;
    char verdict[16];                            /* pass, fail, invalid, aborted */
    double s, m_u, m_t, m_p, m_s, t_s, energy_j; /* NAN: none */
    double s_uncertainty;                        /* S's, from the meter's (NAN: none stated) */
    char why[768];
    int64_t links;            /* of its chain received: the next is this seq */
    int64_t last_link_utc_ns; /* when the last arrived (0: none yet) */
    int64_t meter_run;        /* director mode: the server's meter's power log (0: none) */
    int64_t begun_utc_ns;     /* when the server told it to begin fine-tuning (0: not yet) */
    int64_t entry;            /* the round's entry it is a run of (0: none) */
    char entry_name[EEB_ROUND_NAME], division[8], round[EEB_ROUND_NAME];
    char withdrawn[12], withdrawn_why[256]; /* "", hidden or withdrawn by the organizer */
    int64_t schedule_steps;     /* on the modeled clock: the steps its fine-tune is to take, as
                                 * the server counts them (0: not counted) */
    int64_t test_served_utc_ns; /* when its test inputs were served (0: not yet) */
    int64_t predicted_utc_ns;   /* when its predictions last changed (0: none yet) */
    /* the heads its chain and its meter run's end in ("": none): the
     * record a team takes back, and its package, are checked against them */
    char chain_head[EEB_SHA256_HEX], meter_chain_head[EEB_SHA256_HEX];
    /* the system under test as its configuration names it ("": not said) */
    char system_name[256], system_version[256];
};

/* What an official run registered while a round is open claims: a place
 * among the runs of its team's entry `entry` on its task, in `division`,
 * of its tier (the run's p_max_w). */
struct eeb_srv_claim {
    int64_t round; /* the open round's id, and its rules */
    const struct eeb_round *rules;
    const char *entry, *division;
    int64_t seed; /* handed to the run: its shuffling and rounding are not the team's pick */
    /* where the run goes, or why it may not */
    int64_t entry_id;
    int index;         /* its place among the entry's runs, from 1 */
    const char *field; /* refused: the field to blame, and why */
    char why[256];
};

/* Creates the run (in the run tables, with config_json), registered, and
 * with a claim (NULL: none), in its entry of the round: the entry made by
 * its first run, the round's cap and the entry's runs counted in the same
 * transaction.  Fills r->id and r->registered_utc_ns: EEB_OK; 1 if the
 * claim is refused (claim->field and ->why say why), and nothing is
 * stored; or an error. */
int eeb_srv_store_run_register(struct eeb_srv_store *s, struct eeb_srv_run *r,
                               const char *config_json, struct eeb_srv_claim *claim, char *err,
                               size_t errlen);

/* Run id: found (1) into r, or not (0); or an error. */
int eeb_srv_store_run_get(struct eeb_srv_store *s, int64_t id, struct eeb_srv_run *r, char *err,
                          size_t errlen);

/* Links of run id's chain received now, with their records: all stored
 * (or held already) in one transaction, or the verdict that refuses
 * links[*at]; *next, the link the run expects (eeb_rundb_links_add).
 * 1, and nothing stored, if the run would then hold more than max_samples
 * power samples (err says how many; 0: no cap). */
int eeb_srv_store_run_links(struct eeb_srv_store *s, int64_t id, const struct eeb_rundb_link *links,
                            size_t n, uint64_t max_samples, enum eeb_link_verdict *verdict,
                            size_t *at, int64_t *next, char *err, size_t errlen);

/* The predictions run id holds (what its live page is kept by, with its
 * links and state). */
int eeb_srv_store_run_predictions_count(struct eeb_srv_store *s, int64_t id, int64_t *n, char *err,
                                        size_t errlen);

/* The server's time the run is told to begin fine-tuning, the first time
 * it asks: 1 if set now, 0 if set before (or not registered). */
int eeb_srv_store_run_begin(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen);

/* The system under test run id says it ran (sut_json: its configuration's
 * "sut" section, eeb_config_put_sut's) kept in its configuration, unless it
 * holds one already (said at registration, or at an earlier begin): 1 if
 * kept now, 0 if not. */
int eeb_srv_store_run_system(struct eeb_srv_store *s, int64_t id, const char *sut_json, char *err,
                             size_t errlen);

/* The run other than id whose chain began with origin uuid or head (a
 * copy), into *owner (0: none). */
int eeb_srv_store_origin_owner(struct eeb_srv_store *s, const char *uuid, const char *head,
                               int64_t id, int64_t *owner, char *err, size_t errlen);

/* Run id's test inputs served now: 1, or 0 if they were served before
 * (they are served once). */
int eeb_srv_store_run_test_served(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen);

/* registered -> complete, if need_end only once the run's fine-tune_end
 * event is held: 1 if it moved, 0 if not (not registered, or no end). */
int eeb_srv_store_run_complete(struct eeb_srv_store *s, int64_t id, int need_end, char *err,
                               size_t errlen);

/* Stores (or replaces) the predictions of n test items (JSON, without
 * their truth: the labels stay in the server's memory) in one
 * transaction, and, if any was new or changed, when they arrived. */
int eeb_srv_store_run_predictions(struct eeb_srv_store *s, int64_t id, const int64_t *items,
                                  const char *const *payloads, size_t n, char *err, size_t errlen);

/* eeb_rundb_predictions_each on run id. */
int eeb_srv_store_run_predictions_each(struct eeb_srv_store *s, int64_t id,
                                       int (*fn)(void *arg, int64_t item, const char *payload),
                                       void *arg, char *err, size_t errlen);

/* Stores a count of the run's sampler (samples_dropped...) as its result. */
int eeb_srv_store_run_counter(struct eeb_srv_store *s, int64_t id, const char *name, int64_t n,
                              char *err, size_t errlen);

/* A run in flight (registered or complete), as the server ends it. */
struct eeb_srv_in_flight {
    int64_t id, meter_run;
    char team[EEB_SRV_TEAM_NAME];
    int complete;                         /* it said complete */
    int64_t registered, begun, completed; /* UTC ns (0: not yet) */
    int64_t links, last_link;             /* of its chain received, and when the last came */
    int64_t test_served;                  /* its test inputs first served (0: not yet) */
    int64_t revoked;                      /* its team revoked (0: not) */
    int64_t round_closed;                 /* its round closed (0: open, or none) */
    char round[65];
};

/* Calls fn for each run in flight; fn's non-zero stops the walk. */
int eeb_srv_store_in_flight_each(struct eeb_srv_store *s,
                                 int (*fn)(void *arg, const struct eeb_srv_in_flight *r), void *arg,
                                 char *err, size_t errlen);

/* Run id, registered or complete, ended by the server without a score,
 * with its verdict and why: "aborted" (its side stopped: its stream, its
 * harness, its team revoked, its round closed) or "void" (the server's
 * fault: it leaves its entry, so that it counts against neither the entry
 * nor the round's cap).  In one transaction with its record's abort and
 * score events and its final state.  1 if it moved; 0 if it was no longer
 * in flight, and nothing is written; or an error. */
int eeb_srv_store_run_end(struct eeb_srv_store *s, int64_t id, const char *verdict, const char *why,
                          char *err, size_t errlen);

/* Run r->id's entry complete -> scored with r's verdict and figures, and
 * in the same transaction the verdict o in its record as `eeb run` stores
 * one: its results (M_u's provenance util_provenance), the facts it was
 * judged with (an evaluator event, facts_json) and a score event (payload
 * score_json, may be NULL) at the time of its last event, its final
 * state.  1 if it moved; 0 if it was not complete (scored meanwhile),
 * and nothing is written; or an error, and nothing is written. */
int eeb_srv_store_run_scored(struct eeb_srv_store *s, const struct eeb_srv_run *r,
                             const struct eeb_run_outcome *o, const char *util_provenance,
                             const char *facts_json, const char *score_json, char *err,
                             size_t errlen);

/* ---- the leaderboard ---- */

struct eeb_srv_board_filter {
    int task;                        /* enum eeb_task */
    const char *provenance, *device; /* NULL: any */
    int limit;                       /* rows at most (<= 0: 1000) */
};

/* The scored runs of a task, passing ones by S, best first, then the
 * rest, newest first.  A non-zero return from fn stops the walk and is
 * returned. */
int eeb_srv_store_board(struct eeb_srv_store *s, const struct eeb_srv_board_filter *f,
                        int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg, char *err,
                        size_t errlen);

/* ---- rounds and entries ---- */

#define EEB_ROUND_RUNS_MAX 25 /* runs an entry may be made of */

/* Stores round r, unless its name is taken or its time overlaps another
 * round's (EEB_EINVAL saying which). */
int eeb_srv_store_round_add(struct eeb_srv_store *s, const struct eeb_round *r, char *err,
                            size_t errlen);

/* Closes round name now if it is open: 1, or 0 if it is not. */
int eeb_srv_store_round_close(struct eeb_srv_store *s, const char *name, char *err, size_t errlen);

/* The rounds, the first to open first. */
int eeb_srv_store_rounds_each(struct eeb_srv_store *s,
                              int (*fn)(void *arg, int64_t id, const struct eeb_round *r),
                              void *arg, char *err, size_t errlen);

/* Round name (NULL: the last to have opened by now), if open_only only
 * while it is open: found (1) into *id and *r, or not (0); or an error. */
int eeb_srv_store_round_find(struct eeb_srv_store *s, const char *name, int open_only, int64_t *id,
                             struct eeb_round *r, char *err, size_t errlen);

/* A team's entry in a round: its design on a task, and its runs. */
struct eeb_srv_entry {
    int64_t id, team;
    char team_name[EEB_SRV_TEAM_NAME];
    int task;
    char name[EEB_ROUND_NAME], division[8];
    double p_max_w; /* its tier */
    char device[64], backend[64], provenance[16];
    int64_t created_utc_ns;
    size_t nruns;
    struct eeb_srv_run *runs; /* registered first first */
};

/* The entries of round on task, oldest first. */
int eeb_srv_store_entries_each(struct eeb_srv_store *s, int64_t round, int task,
                               int (*fn)(void *arg, const struct eeb_srv_entry *e), void *arg,
                               char *err, size_t errlen);

/* The seed the server handed run id (its copy of the configuration) and
 * the one its finetune_begin says it trained with (its last, the one the
 * judge times it from): -1 where there is none. */
int eeb_srv_store_run_seeds(struct eeb_srv_store *s, int64_t id, int64_t *handed, int64_t *used,
                            char *err, size_t errlen);

/* The epochs run id's record holds (ended, and a last one cut short). */
int eeb_srv_store_run_epochs(struct eeb_srv_store *s, int64_t id, int64_t *epochs, char *err,
                             size_t errlen);

/* The power source run r was measured by, as its samples name it: the
 * server's meter's if it read one, else the run's own ("" if none). */
int eeb_srv_store_run_sensor(struct eeb_srv_store *s, const struct eeb_srv_run *r, char *uri,
                             size_t n, char *err, size_t errlen);

/* The runs of task not scored yet, the newest first (100 at most): the
 * live view, rehearsals marked as such by their page. */
int eeb_srv_store_runs_going(struct eeb_srv_store *s, int task,
                             int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg,
                             char *err, size_t errlen);

/* ---- the organizer's acts: each in the audit log with its reason ---- */

/* A line in the audit log alone (a round opened or closed). */
int eeb_srv_store_audit(struct eeb_srv_store *s, const char *action, const char *target,
                        const char *reason, char *err, size_t errlen);

/* Team name's token no longer answers: 1, or 0 if no such team holds one. */
int eeb_srv_store_team_revoke(struct eeb_srv_store *s, const char *name, const char *reason,
                              char *err, size_t errlen);

/* Run id hidden (off the leaderboard, and its entry with it, while under
 * review), shown again, or withdrawn (its entry fails, saying why): 1, or
 * 0 if no such run is in a state to be. */
enum eeb_srv_withdrawal { EEB_SRV_HIDE, EEB_SRV_RESTORE, EEB_SRV_WITHDRAW };
int eeb_srv_store_run_withdraw(struct eeb_srv_store *s, int64_t id, enum eeb_srv_withdrawal how,
                               const char *reason, char *err, size_t errlen);

/* Run id made void by the organizer (the server's fault cut it short: a
 * restart, its meter): ended as void if in flight, else its verdict void;
 * either way it leaves its entry and the round's cap, and the act is in
 * the audit log.  1, or 0 if it is void already (or no such run). */
int eeb_srv_store_run_void(struct eeb_srv_store *s, int64_t id, const char *reason, char *err,
                           size_t errlen);

struct eeb_srv_team {
    int64_t id;
    char name[EEB_SRV_TEAM_NAME];
    int64_t created_utc_ns, revoked_utc_ns; /* revoked 0: not */
    int64_t runs;
};
int eeb_srv_store_teams_each(struct eeb_srv_store *s,
                             int (*fn)(void *arg, const struct eeb_srv_team *t), void *arg,
                             char *err, size_t errlen);

struct eeb_srv_audit {
    int64_t id, utc_ns;
    char action[32], target[EEB_ROUND_NAME], reason[512];
};
int eeb_srv_store_audit_each(struct eeb_srv_store *s,
                             int (*fn)(void *arg, const struct eeb_srv_audit *a), void *arg,
                             char *err, size_t errlen);

/* ---- the server's own meter (director mode, meter.c) ---- */

/* A power log run for the samples of the meter at uri, sampled at rate_hz,
 * updating every update_interval_s (0: unknown), into *meter_run. */
/* What a meter run holds, for a server started again to take it up. */
struct eeb_srv_meter_log {
    int64_t begin_ns;             /* its log_begin, on the monotonic clock (0: none) */
    int64_t last_ns, last_utc_ns; /* its last sample (0: none) */
    uint64_t samples;
    char source[256], provenance[16];
    double rate_hz, update_interval_s;
};
int eeb_srv_store_meter_resume(struct eeb_srv_store *s, int64_t meter_run,
                               struct eeb_srv_meter_log *out, char *err, size_t errlen);

/* The restarts the audit log holds (its "restart" acts), the latest max at
 * most, into at in order; how many into *n. */
int eeb_srv_store_restarts(struct eeb_srv_store *s, int64_t *at, size_t max, size_t *n, char *err,
                           size_t errlen);

int eeb_srv_store_meter_run(struct eeb_srv_store *s, const char *uri, double rate_hz,
                            double update_interval_s, const char *provenance, int64_t *meter_run,
                            char *err, size_t errlen);
/* The meter run over (done); an error is its own record's to show. */
void eeb_srv_store_meter_done(struct eeb_srv_store *s, int64_t meter_run);
/* A station agent's: an event of the meter run at the server's times;
 * payload_json may be NULL. */
int eeb_srv_store_meter_event(struct eeb_srv_store *s, int64_t meter_run, const char *kind,
                              int64_t t_mono_ns, int64_t t_utc_ns, const char *payload_json,
                              char *err, size_t errlen);
/* A station agent's: samples of source, on the server's clock. */
int eeb_srv_store_meter_samples(struct eeb_srv_store *s, int64_t meter_run, const char *source,
                                const struct eeb_sample *x, size_t n, char *err, size_t errlen);
/* A station agent's: the counts a sampler stores when it stops (samples,
 * reads failed, samples dropped), which its validity is judged by, and its
 * readings' largest uncertainty (NAN: none stated) with the meter's
 * provenance. */
void eeb_srv_store_meter_counts(struct eeb_srv_store *s, int64_t meter_run, uint64_t samples,
                                uint64_t failed, uint64_t dropped, double uncertainty_max,
                                const char *provenance);
/* eeb_rundb_links_each on run id. */
int eeb_srv_store_run_links_each(struct eeb_srv_store *s, int64_t id,
                                 int (*fn)(void *arg, const struct eeb_rundb_link *l), void *arg,
                                 char *err, size_t errlen);
/* The fine-tune window, in server UTC, marked in the meter run on its
 * monotonic clock (once); why says what the meter run lacks for it. */
int eeb_srv_store_meter_window(struct eeb_srv_store *s, int64_t meter_run, int64_t begin_utc,
                               int64_t end_utc, char *why, size_t whylen, char *err, size_t errlen);

#endif
