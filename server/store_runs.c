/*
 * store_runs.c - a team's runs in the server's store (server_store.h):
 * registered in its entry of a round, their links, begin, complete,
 * predictions, counters and verdict; and the runs scored, read in S order
 * for the list of runs.
 */
#include "store_int.h"

#include "rundb/eeb_rundb_tables.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- runs ---- */

/* The team's runs on the claim's task in its round, and of its entry
 * (creating the entry if new, with r's device, backend and provenance):
 * 0 if the run may join it (claim->entry_id, ->index), 1 if refused
 * (claim->field, ->why), or an error.  Inside the caller's transaction. */
static int claim_entry(struct eeb_rundb *db, const struct eeb_srv_run *r, struct eeb_srv_claim *c,
                       char *err, size_t errlen)
{
    const char *task = eeb_task_name((enum eeb_task)r->task);
    /* the round may have closed since the server found it open */
    sqlite3_stmt *st =
        eeb_srv_prepare(db,
                        "SELECT count(*) FROM rounds WHERE id = ?1 AND closed_utc_ns IS "
                        "NULL AND opens_utc_ns <= ?2 AND closes_utc_ns > ?2",
                        err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, eeb_utc_ns());
    int step = sqlite3_step(st), open = step == SQLITE_ROW && sqlite3_column_int(st, 0) > 0;
    int rc = eeb_srv_done(db, st, step, err, errlen);
    if (rc)
        return rc;
    if (!open) {
        c->field = "round";
        snprintf(c->why, sizeof c->why, "round %s closed as this run was registered",
                 c->rules->name);
        return 1;
    }
    st = eeb_srv_prepare(db,
                         "SELECT count(*) FROM team_runs tr JOIN entries en ON en.id = "
                         "tr.entry_id WHERE en.round_id = ? AND en.team_id = ? AND en.task = ?",
                         err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_text(st, 3, task, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    int64_t made = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if ((rc = eeb_srv_done(db, st, step, err, errlen)))
        return rc;
    if (made >= c->rules->cap) {
        c->field = "round";
        snprintf(c->why, sizeof c->why,
                 "team %s has registered %lld official %s runs in round %s, its cap", r->team_name,
                 (long long)made, task, c->rules->name);
        return 1;
    }
    st = eeb_srv_prepare(
        db,
        "SELECT id, division, p_max_w, device, backend, provenance, (SELECT count(*) "
        "FROM team_runs WHERE entry_id = entries.id) FROM entries WHERE round_id = ? AND "
        "team_id = ? AND task = ? AND name = ?",
        err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_text(st, 3, task, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, c->entry, -1, SQLITE_STATIC);
    if ((step = sqlite3_step(st)) == SQLITE_ROW) {
        /* what an entry is stays what its first run made it */
        const struct {
            const char *field, *has, *wants;
        } fixed[] = {{"division", (const char *)sqlite3_column_text(st, 1), c->division},
                     {"device", (const char *)sqlite3_column_text(st, 3), r->device},
                     {"backend", (const char *)sqlite3_column_text(st, 4), r->backend},
                     {"provenance", (const char *)sqlite3_column_text(st, 5), r->provenance}};
        c->entry_id = sqlite3_column_int64(st, 0);
        c->index = sqlite3_column_int(st, 6) + 1;
        for (size_t i = 0; i < sizeof fixed / sizeof *fixed && !c->field; i++)
            if (strcmp(fixed[i].has ? fixed[i].has : "", fixed[i].wants))
                c->field = fixed[i].field,
                snprintf(c->why, sizeof c->why, "entry %s's runs have %s %s, not %s", c->entry,
                         fixed[i].field, fixed[i].has, fixed[i].wants);
        if (!c->field && sqlite3_column_double(st, 2) != r->p_max_w)
            c->field = "p_max_w",
            snprintf(c->why, sizeof c->why, "entry %s's runs are of the %g W tier, not %g W",
                     c->entry, sqlite3_column_double(st, 2), r->p_max_w);
        if (!c->field && c->index > c->rules->runs)
            c->field = "entry",
            snprintf(c->why, sizeof c->why,
                     "entry %s has its %d runs of round %s; a new one needs another name", c->entry,
                     c->rules->runs, c->rules->name);
    }
    if ((rc = eeb_srv_done(db, st, step, err, errlen)) || c->field || c->entry_id)
        return rc ? rc : c->field ? 1 : 0;
    st = eeb_srv_prepare(
        db,
        "INSERT INTO entries (round_id, team_id, task, name, division, p_max_w, device, "
        "backend, provenance, created_utc_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, c->round);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_text(st, 3, task, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, c->entry, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, c->division, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 6, r->p_max_w);
    sqlite3_bind_text(st, 7, r->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, r->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, r->provenance, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, eeb_utc_ns());
    rc = eeb_srv_done(db, st, sqlite3_step(st), err, errlen);
    c->entry_id = sqlite3_last_insert_rowid(eeb_rundb_sqlite(db));
    c->index = 1;
    return rc;
}

/* The team's run r->id, of entry (0: none). */
static int add_team_run(struct eeb_rundb *db, struct eeb_srv_run *r, int64_t entry, char *err,
                        size_t errlen)
{
    sqlite3_stmt *st =
        eeb_srv_prepare(db,
                        "INSERT INTO team_runs (run_id, team_id, state, official, device, "
                        "provenance, registered_utc_ns, entry_id, schedule_steps) "
                        "VALUES (?, ?, 'registered', ?, ?, ?, ?, ?, ?)",
                        err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, r->id);
    sqlite3_bind_int64(st, 2, r->team);
    sqlite3_bind_int(st, 3, r->official);
    sqlite3_bind_text(st, 4, r->device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->provenance, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, r->registered_utc_ns = eeb_utc_ns());
    if (entry)
        sqlite3_bind_int64(st, 7, entry);
    if (r->schedule_steps)
        sqlite3_bind_int64(st, 8, r->schedule_steps);
    return eeb_srv_done(db, st, sqlite3_step(st), err, errlen);
}

int eeb_srv_store_run_register(struct eeb_srv_store *s, struct eeb_srv_run *r,
                               const char *config_json, struct eeb_srv_claim *claim, char *err,
                               size_t errlen)
{
    const struct eeb_run_new rn = {.task = (enum eeb_task)r->task,
                                   .backend = r->backend,
                                   .config_json = config_json,
                                   .t_max_s = r->t_max_s,
                                   .p_max_w = r->p_max_w,
                                   .rules_version = r->rules_version,
                                   .received = 1};
    char uuid[37];
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_create(db, &rn, &r->id, uuid, err, errlen);
    if (rc)
        return rc;
    /* one transaction: the entry's and the cap's counts, and the run
     * counted in them (two runs racing for an entry's last place) */
    int began = (rc = eeb_srv_begin_write(db, err, errlen)) == EEB_OK;
    if (rc == EEB_OK && claim)
        rc = claim_entry(db, r, claim, err, errlen);
    if (rc == EEB_OK)
        rc = add_team_run(db, r, claim ? claim->entry_id : 0, err, errlen);
    if (began)
        rc = eeb_srv_end_write(db, rc, err, errlen);
    if (rc) { /* the run's record goes too: nothing of it is stored yet */
        sqlite3_stmt *st = eeb_srv_prepare(db, "DELETE FROM runs WHERE id = ?", err, errlen);
        if (st) {
            sqlite3_bind_int64(st, 1, r->id);
            (void)sqlite3_step(st);
            sqlite3_finalize(st);
        }
    }
    return rc;
}

void eeb_srv_read_entry(sqlite3_stmt *st, struct eeb_srv_run *r)
{
    char task[8];
    eeb_srv_column_text(st, 3, task, sizeof task);
    enum eeb_task t = EEB_TASK_CLS;
    char why[96];
    eeb_task_parse(task, &t, why, sizeof why);
    *r = (struct eeb_srv_run){.id = sqlite3_column_int64(st, 0),
                              .team = sqlite3_column_int64(st, 1),
                              .task = (int)t,
                              .t_max_s = sqlite3_column_double(st, 5),
                              .p_max_w = sqlite3_column_double(st, 6),
                              .official = sqlite3_column_int(st, 9),
                              .registered_utc_ns = sqlite3_column_int64(st, 12),
                              .completed_utc_ns = sqlite3_column_int64(st, 13),
                              .s = eeb_srv_column_number(st, 15),
                              .m_u = eeb_srv_column_number(st, 16),
                              .m_t = eeb_srv_column_number(st, 17),
                              .m_p = eeb_srv_column_number(st, 18),
                              .m_s = eeb_srv_column_number(st, 19),
                              .t_s = eeb_srv_column_number(st, 20),
                              .energy_j = eeb_srv_column_number(st, 21),
                              .links = sqlite3_column_int64(st, 23),
                              .last_link_utc_ns = sqlite3_column_int64(st, 24),
                              .meter_run = sqlite3_column_int64(st, 25),
                              .begun_utc_ns = sqlite3_column_int64(st, 26),
                              .entry = sqlite3_column_int64(st, 27),
                              .s_uncertainty = eeb_srv_column_number(st, 33),
                              .test_served_utc_ns = sqlite3_column_int64(st, 34),
                              .predicted_utc_ns = sqlite3_column_int64(st, 35),
                              .schedule_steps = sqlite3_column_int64(st, 36)};
    eeb_srv_column_text(st, 2, r->team_name, sizeof r->team_name);
    eeb_srv_column_text(st, 4, r->state, sizeof r->state);
    eeb_srv_column_text(st, 7, r->rules_version, sizeof r->rules_version);
    eeb_srv_column_text(st, 8, r->backend, sizeof r->backend);
    eeb_srv_column_text(st, 10, r->device, sizeof r->device);
    eeb_srv_column_text(st, 11, r->provenance, sizeof r->provenance);
    eeb_srv_column_text(st, 14, r->verdict, sizeof r->verdict);
    eeb_srv_column_text(st, 22, r->why, sizeof r->why);
    eeb_srv_column_text(st, 28, r->entry_name, sizeof r->entry_name);
    eeb_srv_column_text(st, 29, r->division, sizeof r->division);
    eeb_srv_column_text(st, 30, r->round, sizeof r->round);
    eeb_srv_column_text(st, 31, r->withdrawn, sizeof r->withdrawn);
    eeb_srv_column_text(st, 32, r->withdrawn_why, sizeof r->withdrawn_why);
    eeb_srv_column_text(st, 37, r->chain_head, sizeof r->chain_head);
    eeb_srv_column_text(st, 38, r->meter_chain_head, sizeof r->meter_chain_head);
    eeb_srv_column_text(st, 39, r->system_name, sizeof r->system_name);
    eeb_srv_column_text(st, 40, r->system_version, sizeof r->system_version);
}

int eeb_srv_store_run_get(struct eeb_srv_store *s, int64_t id, struct eeb_srv_run *r, char *err,
                          size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s, "SELECT " ENTRY_COLUMNS "WHERE e.run_id = ?", &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found)
        eeb_srv_read_entry(st, r);
    rc = eeb_srv_done(db, st, step, err, errlen);
    return rc ? rc : found;
}

/* The power samples run id's links hold, and the seq of its last link
 * (-1: none). */
static int samples_held(struct eeb_rundb *db, int64_t id, uint64_t *samples, int64_t *last,
                        char *err, size_t errlen)
{
    sqlite3_stmt *st =
        eeb_srv_prepare(db,
                        "SELECT coalesce(sum(CASE WHEN kind = 'samples' THEN count END), 0), "
                        "coalesce(max(seq), -1) FROM links WHERE run_id = ?",
                        err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *samples = step == SQLITE_ROW ? (uint64_t)sqlite3_column_int64(st, 0) : 0;
    *last = step == SQLITE_ROW ? sqlite3_column_int64(st, 1) : -1;
    return eeb_srv_done(db, st, step, err, errlen);
}

int eeb_srv_store_run_links(struct eeb_srv_store *s, int64_t id, const struct eeb_rundb_link *links,
                            size_t n, uint64_t max_samples, enum eeb_link_verdict *verdict,
                            size_t *at, int64_t *next, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc)
        return rc;
    /* counted and stored under one lock, so that two requests of a run
     * at once cannot each pass the cap with the other's samples */
    pthread_mutex_lock(&s->links_lock);
    uint64_t held = 0, adding = 0;
    int64_t last = -1;
    if (max_samples && (rc = samples_held(db, id, &held, &last, err, errlen)) == EEB_OK) {
        for (size_t i = 0; i < n; i++) /* a link held already adds nothing */
            if (links[i].seq > last && links[i].kind == EEB_LINK_SAMPLES)
                adding += links[i].nsamples;
        if (held + adding > max_samples) {
            eeb_errf(err, errlen, EEB_EINVAL,
                     "run %lld holds %llu power samples and these links add %llu: more than the "
                     "%llu a run may store (eeb serve --max-samples)",
                     (long long)id, (unsigned long long)held, (unsigned long long)adding,
                     (unsigned long long)max_samples);
            rc = 1;
        }
    }
    if (rc == EEB_OK)
        rc = eeb_rundb_links_add(db, id, links, n, eeb_utc_ns(), verdict, at, next, err, errlen);
    pthread_mutex_unlock(&s->links_lock);
    return rc;
}

int eeb_srv_store_run_predictions_count(struct eeb_srv_store *s, int64_t id, int64_t *n, char *err,
                                        size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(s, "SELECT count(*) FROM predictions WHERE run_id = ?",
                                         &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    int step = sqlite3_step(st);
    *n = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return eeb_srv_done(db, st, step, err, errlen);
}

int eeb_srv_store_origin_owner(struct eeb_srv_store *s, const char *uuid, const char *head,
                               int64_t id, int64_t *owner, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT run_id FROM links WHERE kind = 'origin' AND run_id != ?1 "
                          "AND (origin_uuid = ?2 OR head = ?3) LIMIT 1",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, head, -1, SQLITE_STATIC);
    int step = sqlite3_step(st);
    *owner = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    return eeb_srv_done(db, st, step, err, errlen);
}

/* sql, an UPDATE of run ?2 at the time ?1 (and ?3, extra), run once: 1 if
 * it changed the run, 0 if not (done before, or not in the state for it). */
static int stamp(struct eeb_srv_store *s, const char *sql, int64_t id, int extra, char *err,
                 size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(s, sql, &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    if (sqlite3_bind_parameter_count(st) >= 3)
        sqlite3_bind_int(st, 3, extra);
    return eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_test_served(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen)
{
    return stamp(s,
                 "UPDATE team_runs SET test_served_utc_ns = ?1 WHERE run_id = ?2 "
                 "AND test_served_utc_ns IS NULL",
                 id, 0, err, errlen);
}

int eeb_srv_store_run_complete(struct eeb_srv_store *s, int64_t id, int need_end, char *err,
                               size_t errlen)
{
    return stamp(s,
                 "UPDATE team_runs SET state = 'complete', completed_utc_ns = ?1 "
                 "WHERE run_id = ?2 AND state = 'registered' AND (?3 = 0 OR EXISTS "
                 "(SELECT 1 FROM events WHERE run_id = ?2 AND kind = '" EEB_EVENT_FINETUNE_END
                 "'))",
                 id, need_end, err, errlen);
}

int eeb_srv_store_run_begin(struct eeb_srv_store *s, int64_t id, char *err, size_t errlen)
{
    return stamp(s,
                 "UPDATE team_runs SET begun_utc_ns = ?1 WHERE run_id = ?2 AND state = "
                 "'registered' AND begun_utc_ns IS NULL",
                 id, 0, err, errlen);
}

int eeb_srv_store_run_system(struct eeb_srv_store *s, int64_t id, const char *sut_json, char *err,
                             size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(
        s,
        "UPDATE runs SET config = json_set(config, '$.sut', json(?1)) WHERE id = ?2 AND "
        "config ->> '$.sut' IS NULL AND EXISTS (SELECT 1 FROM team_runs WHERE run_id = ?2 AND "
        "state = 'registered')",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, sut_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    return eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
}

/* How many of the n predictions are not held as they are: new, or
 * changed. */
static int64_t predictions_new(struct eeb_rundb *db, int64_t id, const int64_t *items,
                               const char *const *payloads, size_t n, char *err, size_t errlen)
{
    sqlite3_stmt *st = eeb_srv_prepare(
        db, "SELECT count(*) FROM predictions WHERE run_id = ? AND item = ? AND payload = ?", err,
        errlen);
    if (!st)
        return EEB_EDB;
    int64_t fresh = 0;
    int step = SQLITE_DONE;
    for (size_t i = 0; i < n && step != SQLITE_ERROR; i++) {
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_int64(st, 2, items[i]);
        sqlite3_bind_text(st, 3, payloads[i], -1, SQLITE_STATIC);
        if ((step = sqlite3_step(st)) == SQLITE_ROW)
            fresh += sqlite3_column_int64(st, 0) == 0;
        else
            step = SQLITE_ERROR;
    }
    int rc = eeb_srv_done(db, st, step, err, errlen);
    return rc ? rc : fresh;
}

int eeb_srv_store_run_predictions(struct eeb_srv_store *s, int64_t id, const int64_t *items,
                                  const char *const *payloads, size_t n, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int64_t fresh = 0;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    /* predictions sent again as they were (a submission resumed) arrive
     * no later: only what changes moves their time */
    if (rc == EEB_OK && (fresh = predictions_new(db, id, items, payloads, n, err, errlen)) < 0)
        rc = (int)fresh;
    if (rc == EEB_OK)
        rc = eeb_rundb_predictions_add(db, id, items, payloads, n, err, errlen);
    sqlite3_stmt *st =
        rc || !fresh
            ? NULL
            : eeb_srv_statement(s, "UPDATE team_runs SET predicted_utc_ns = ? WHERE run_id = ?",
                                &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_int64(st, 1, eeb_utc_ns());
    sqlite3_bind_int64(st, 2, id);
    return eeb_srv_done(db, st, sqlite3_step(st), err, errlen);
}

int eeb_srv_store_run_predictions_each(struct eeb_srv_store *s, int64_t id,
                                       int (*fn)(void *arg, int64_t item, const char *payload),
                                       void *arg, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_predictions_each(db, id, fn, arg, err, errlen);
}

int eeb_srv_store_run_counter(struct eeb_srv_store *s, int64_t id, const char *name, int64_t n,
                              char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    return rc ? rc : eeb_rundb_result_set(db, id, name, (double)n, "1", "counter", err, errlen);
}

static int latest_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc, (void)kind, (void)payload;
    int64_t *latest = arg;
    *latest = t > *latest ? t : *latest;
    return 0;
}

/* The verdict in run id's record: results, a score event, its state. */
static int record_verdict(struct eeb_rundb *db, int64_t id, const struct eeb_run_outcome *o,
                          const char *util_provenance, const char *facts_json,
                          const char *score_json, char *err, size_t errlen)
{
    int rc = eeb_run_store_results(db, id, o, util_provenance, err, errlen);
    int64_t t = 0;
    if (rc == EEB_OK)
        rc = eeb_rundb_events_each(db, id, latest_event, &t, err, errlen);
    if (rc == EEB_OK && facts_json)
        rc = eeb_rundb_event_add(db, id, t, eeb_utc_ns(), EEB_EVENT_EVALUATOR, facts_json, err,
                                 errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_event_add(db, id, t, eeb_utc_ns(), EEB_EVENT_SCORE, score_json, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_set_state(db, id, o->pass ? EEB_RUN_DONE : EEB_RUN_FAILED, err, errlen);
    return rc;
}

/* complete -> scored with r's verdict and figures: 1 if it moved, else 0. */
static int move_to_scored(struct eeb_rundb *db, const struct eeb_srv_run *r, char *err,
                          size_t errlen)
{
    sqlite3_stmt *st = eeb_srv_prepare(
        db,
        "UPDATE team_runs SET state = 'scored', verdict = ?, s = ?, m_u = ?, "
        "m_t = ?, m_p = ?, m_s = ?, t_s = ?, energy_j = ?, why = ?, "
        "s_uncertainty = ?, scored_utc_ns = ? WHERE run_id = ? AND state = 'complete'",
        err, errlen);
    if (!st)
        return EEB_EDB;
    sqlite3_bind_text(st, 1, r->verdict, -1, SQLITE_STATIC);
    const double v[] = {r->s, r->m_u, r->m_t, r->m_p, r->m_s, r->t_s, r->energy_j};
    for (int i = 0; i < 7; i++)
        eeb_srv_bind_number(st, 2 + i, v[i]);
    sqlite3_bind_text(st, 9, r->why, -1, SQLITE_STATIC);
    eeb_srv_bind_number(st, 10, r->s_uncertainty);
    sqlite3_bind_int64(st, 11, eeb_utc_ns());
    sqlite3_bind_int64(st, 12, r->id);
    return eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
}

int eeb_srv_store_run_scored(struct eeb_srv_store *s, const struct eeb_srv_run *r,
                             const struct eeb_run_outcome *o, const char *util_provenance,
                             const char *facts_json, const char *score_json, char *err,
                             size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc)
        return rc;
    /* one transaction: the entry moves and the record takes the verdict
     * together, or neither (a request racing this one moved it first, or
     * the server stopped between the two) */
    if ((rc = eeb_srv_begin_write(db, err, errlen)))
        return rc;
    int moved = move_to_scored(db, r, err, errlen);
    rc = moved < 0 ? moved
         : moved
             ? record_verdict(db, r->id, o, util_provenance, facts_json, score_json, err, errlen)
             : EEB_OK;
    rc = eeb_srv_end_write(db, rc, err, errlen);
    return rc ? rc : moved;
}

/* The end of a run the server stopped, in its record: an abort event
 * with why, and the score event that says so, at its last event's time;
 * its final state. */
static int record_end(struct eeb_rundb *db, int64_t id, const char *verdict, const char *why,
                      char *err, size_t errlen)
{
    /* void is the server's word on whose fault it was; the record's
     * verdict is the judge's, aborted, with that word in its reason */
    char reason[600];
    snprintf(reason, sizeof reason, "%s%s",
             strcmp(verdict, "void") ? "" : "void, the server's fault: ", why);
    json_t *abort = json_pack("{s:s}", EEB_EVENT_KEY_REASON, reason);
    json_t *score = json_pack("{s:s, s:s, s:n}", "by", "server", EEB_EVENT_KEY_VERDICT, "aborted",
                              EEB_EVENT_KEY_S);
    char *a = abort ? json_dumps(abort, JSON_COMPACT) : NULL;
    char *b = score ? json_dumps(score, JSON_COMPACT) : NULL;
    json_decref(abort), json_decref(score);
    int64_t t = 0;
    int rc = a && b ? eeb_rundb_events_each(db, id, latest_event, &t, err, errlen)
                    : eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc == EEB_OK)
        rc = eeb_rundb_event_add(db, id, t, eeb_utc_ns(), EEB_EVENT_ABORT, a, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_event_add(db, id, t, eeb_utc_ns(), EEB_EVENT_SCORE, b, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_set_state(db, id, EEB_RUN_FAILED, err, errlen);
    free(a), free(b);
    return rc;
}

int eeb_srv_store_run_end(struct eeb_srv_store *s, int64_t id, const char *verdict, const char *why,
                          char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc = eeb_srv_conn(s, &db, err, errlen);
    if (rc || (rc = eeb_srv_begin_write(db, err, errlen)))
        return rc;
    /* a void run leaves its entry: its place, and the round's cap, are
     * free again */
    sqlite3_stmt *st = eeb_srv_prepare(
        db,
        "UPDATE team_runs SET state = 'scored', verdict = ?1, why = ?2, s = NULL, "
        "scored_utc_ns = ?3, entry_id = CASE WHEN ?1 = 'void' THEN NULL ELSE entry_id END "
        "WHERE run_id = ?4 AND state IN ('registered', 'complete')",
        err, errlen);
    int moved = EEB_EDB;
    if (st) {
        sqlite3_bind_text(st, 1, verdict, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, why, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, eeb_utc_ns());
        sqlite3_bind_int64(st, 4, id);
        moved = eeb_srv_changed(db, eeb_srv_done(db, st, sqlite3_step(st), err, errlen));
    }
    rc = moved < 0 ? moved : moved ? record_end(db, id, verdict, why, err, errlen) : EEB_OK;
    rc = eeb_srv_end_write(db, rc, err, errlen);
    return rc ? rc : moved;
}

struct in_flight_walk {
    int (*fn)(void *arg, const struct eeb_srv_in_flight *r);
    void *arg;
};

static int in_flight_row(sqlite3_stmt *st, void *ctx)
{
    const struct in_flight_walk *w = ctx;
    struct eeb_srv_in_flight r = {0};
    int64_t *at[] = {&r.id,    &r.meter_run, &r.registered,  &r.begun,   &r.completed,
                     &r.links, &r.last_link, &r.test_served, &r.revoked, &r.round_closed};
    for (int i = 0; i < (int)(sizeof at / sizeof *at); i++)
        *at[i] = sqlite3_column_int64(st, i); /* NULL reads 0 */
    r.complete = sqlite3_column_int(st, 10);
    eeb_srv_column_text(st, 11, r.round, sizeof r.round);
    eeb_srv_column_text(st, 12, r.team, sizeof r.team);
    return w->fn(w->arg, &r);
}

int eeb_srv_store_in_flight_each(struct eeb_srv_store *s,
                                 int (*fn)(void *arg, const struct eeb_srv_in_flight *r), void *arg,
                                 char *err, size_t errlen)
{
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st = eeb_srv_statement(
        s,
        "SELECT e.run_id, r.config ->> '$.power.meter_run', e.registered_utc_ns, "
        "e.begun_utc_ns, e.completed_utc_ns, (SELECT count(*) FROM links l WHERE l.run_id = "
        "e.run_id), (SELECT max(l.at_utc_ns) FROM links l WHERE l.run_id = e.run_id), "
        "e.test_served_utc_ns, t.revoked_utc_ns, ro.closed_utc_ns, e.state = 'complete', ro.name, "
        "t.name "
        "FROM team_runs e JOIN runs r ON r.id = e.run_id JOIN teams t ON t.id = e.team_id "
        "LEFT JOIN entries en ON en.id = e.entry_id LEFT JOIN rounds ro ON ro.id = en.round_id "
        "WHERE e.state IN ('registered', 'complete') ORDER BY e.run_id",
        &db, &rc, err, errlen);
    if (!st)
        return rc;
    return eeb_srv_each_row(db, st, in_flight_row, &(struct in_flight_walk){fn, arg}, err, errlen);
}

/* ---- the leaderboard ---- */

int eeb_srv_run_row(sqlite3_stmt *st, void *ctx)
{
    const struct eeb_srv_run_walk *w = ctx;
    struct eeb_srv_run r;
    eeb_srv_read_entry(st, &r);
    return w->fn(w->arg, &r);
}

int eeb_srv_store_board(struct eeb_srv_store *s, const struct eeb_srv_board_filter *f,
                        int (*fn)(void *arg, const struct eeb_srv_run *r), void *arg, char *err,
                        size_t errlen)
{
    /* passing runs by S, best first; then the rest (S NULL, which SQLite
     * sorts last in a descending order), newest first: entries_by_score
     * read backwards */
    struct eeb_rundb *db;
    int rc;
    sqlite3_stmt *st =
        eeb_srv_statement(s,
                          "SELECT " ENTRY_COLUMNS "WHERE e.state = 'scored' AND r.task = ?1 "
                          "AND e.withdrawn IS NULL AND e.official = 1 "
                          "AND e.verdict IS NOT 'void' "
                          "AND (?2 IS NULL OR e.provenance = ?2) "
                          "AND (?3 IS NULL OR e.device = ?3) "
                          "ORDER BY e.s DESC, e.run_id DESC LIMIT ?4",
                          &db, &rc, err, errlen);
    if (!st)
        return rc;
    sqlite3_bind_text(st, 1, eeb_task_name((enum eeb_task)f->task), -1, SQLITE_STATIC);
    if (f->provenance)
        sqlite3_bind_text(st, 2, f->provenance, -1, SQLITE_STATIC);
    if (f->device)
        sqlite3_bind_text(st, 3, f->device, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, f->limit > 0 ? f->limit : 1000);
    return eeb_srv_each_row(db, st, eeb_srv_run_row, &(struct eeb_srv_run_walk){fn, arg}, err,
                            errlen);
}
