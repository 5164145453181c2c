/*
 * ranking.c - the leaderboard: a round's entries ranked, not single runs.
 * A table per provenance, division and P_max tier (measured, declared and
 * modeled figures are never ranked together, nor the closed division's
 * entries with the open one's, nor entries held to different budgets); in
 * each, ranked entries by their aggregated S (equal S, equal
 * rank), then entries still running, then failed ones with the reason; by
 * default each team's best entry only.  Beside each table, the Pareto front
 * of energy against M_s per device, and below, the runs in progress.  As
 * JSON (GET /api/v1/leaderboard); the page renders the same answer.
 */
#include "server_int.h"

#include "common/eeb_json.h"
#include "power/eeb_qualify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the query ---- */

int eeb_srv_ranking_query(struct eeb_srv_call *k, struct eeb_srv_ranking_query *q, int need_task,
                          enum MHD_Result *sent)
{
    const char *all = eeb_srv_call_arg(k, "all");
    char msg[192];
    *q = (struct eeb_srv_ranking_query){.round = eeb_srv_call_arg(k, "round"),
                                        .division = eeb_srv_call_arg(k, "division")};
    if (!eeb_srv_query_filter(k, need_task, &q->task, &q->provenance, &q->device, sent))
        return 0;
    const char *field = NULL;
    if (q->round && !eeb_text_ok(q->round, EEB_ROUND_NAME - 1, "_.-"))
        field = "round",
        snprintf(msg, sizeof msg, "round '%.64s': expected a round's name: A-Z a-z 0-9 _ . -",
                 q->round);
    else if (q->division && strcmp(q->division, "closed") && strcmp(q->division, "open"))
        field = "division",
        snprintf(msg, sizeof msg, "division '%.32s': expected closed or open", q->division);
    else if (all && strcmp(all, "0") && strcmp(all, "1"))
        field = "all",
        snprintf(msg, sizeof msg, "all '%.32s': expected 0 (each team's best entry) or 1", all);
    if (field) {
        *sent = eeb_srv_call_fail(k, 400, field, msg);
        return 0;
    }
    q->all = all && strcmp(all, "1") == 0;
    return 1;
}

/* ---- the entries ---- */

/* An entry as the leaderboard shows it. */
struct shown {
    struct eeb_srv_entry e; /* without its runs */
    char sensor[256];       /* what measured it ("": nothing yet) */
    int qualified;          /* a board's sensor: 1 qualified, 0 not; -1 a meter needing none */
    struct eeb_srv_standing st;
    int64_t run_ids[EEB_ROUND_RUNS_MAX];
    size_t nrun_ids;
    int pareto, hidden; /* on its device's front; not its team's best */
    int revoked;        /* its team's token revoked by the organizer */
    /* its system under test as its latest run that said names it ("": none) */
    char system_name[256], system_version[256];
};

struct gathered {
    struct eeb_srv_store *store;
    const struct eeb_srv_revoked *revoked;
    const struct eeb_round *round;
    const struct eeb_srv_ranking_query *q;
    struct shown *v;
    size_t n, cap;
};

/* A board's own sensor (hwmon, RAPL) must have been qualified against a
 * reference meter on that board (eeb power qualify, its verdict kept in
 * the server's database by board and rail); an analyzer needs none.  Every
 * run of the entry is looked at: one measured by an unqualified sensor
 * marks the entry, whatever its first run used. */
static int sensors_of(struct eeb_srv_store *store, const struct eeb_srv_entry *e, struct shown *s)
{
    char err[512], uri[256];
    s->qualified = -1;
    for (size_t i = 0; i < e->nruns; i++) {
        int rc = eeb_srv_store_run_sensor(store, &e->runs[i], uri, sizeof uri, err, sizeof err);
        if (rc)
            return rc;
        int board = strncmp(uri, "hwmon:", 6) == 0 || strncmp(uri, "rapl:", 5) == 0, verdict = -1;
        if (!s->sensor[0] || (board && s->qualified != 0)) /* the one to show: an unqualified */
            snprintf(s->sensor, sizeof s->sensor, "%s", uri);
        if (!board || s->qualified == 0)
            continue;
        if ((rc = eeb_power_qualified(eeb_srv_store_path(store), e->device, uri, &verdict, NULL,
                                      err, sizeof err)))
            return rc;
        s->qualified = verdict == 1;
        if (!s->qualified)
            snprintf(s->sensor, sizeof s->sensor, "%s", uri);
    }
    return 0;
}

static int gather(void *arg, const struct eeb_srv_entry *e)
{
    struct gathered *g = arg;
    const struct eeb_srv_ranking_query *q = g->q;
    if ((q->provenance && strcmp(q->provenance, e->provenance)) ||
        (q->device && strcmp(q->device, e->device)) ||
        (q->division && strcmp(q->division, e->division)))
        return 0;
    for (size_t i = 0; i < e->nruns; i++)
        if (strcmp(e->runs[i].withdrawn, "hidden") == 0) /* under review: not shown */
            return 0;
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        struct shown *grown = realloc(g->v, cap * sizeof *grown);
        if (!grown)
            return EEB_ENOMEM;
        g->v = grown, g->cap = cap;
    }
    struct shown *s = &g->v[g->n++];
    *s = (struct shown){.e = *e, .revoked = eeb_srv_revoked_has(g->revoked, e->team)};
    s->e.runs = NULL, s->e.nruns = 0;
    eeb_srv_standing_of(e, g->round, &s->st);
    for (size_t i = 0; i < e->nruns && i < EEB_ROUND_RUNS_MAX; i++) {
        s->run_ids[s->nrun_ids++] = e->runs[i].id;
        if (e->runs[i].system_name[0]) { /* registered first first: the latest stays */
            snprintf(s->system_name, sizeof s->system_name, "%s", e->runs[i].system_name);
            snprintf(s->system_version, sizeof s->system_version, "%s", e->runs[i].system_version);
        }
    }
    return sensors_of(g->store, e, s);
}

/* The order a table lists entries in: its table (provenance, then tier),
 * then ranked by S, running (newest first), failed (newest first). */
int eeb_srv_provenance_order(const char *p)
{
    static const char *const order[] = {"measured", "counter", "declared", "modeled"};
    for (int i = 0; i < 4; i++)
        if (strcmp(p, order[i]) == 0)
            return i;
    return 4;
}

static int by_table_then_standing(const void *pa, const void *pb)
{
    const struct shown *a = pa, *b = pb;
    int c = eeb_srv_provenance_order(a->e.provenance) - eeb_srv_provenance_order(b->e.provenance);
    if (c || (c = strcmp(a->e.division, b->e.division))) /* closed before open */
        return c;
    if (a->e.p_max_w != b->e.p_max_w)
        return a->e.p_max_w < b->e.p_max_w ? -1 : 1;
    if (a->st.state != b->st.state)
        return (int)a->st.state - (int)b->st.state;
    if (a->st.state == EEB_STANDING_RANKED && a->st.s != b->st.s)
        return a->st.s > b->st.s ? -1 : 1;
    return a->e.id > b->e.id ? -1 : a->e.id < b->e.id; /* the newer first */
}

static int same_table(const struct shown *a, const struct shown *b)
{
    return strcmp(a->e.provenance, b->e.provenance) == 0 &&
           strcmp(a->e.division, b->e.division) == 0 && a->e.p_max_w == b->e.p_max_w;
}

/* In the table v[0..n): each team's best entry kept (the first in order),
 * and which ranked entries shown no other shown of their device
 * dominates (the front drawn is the front of what is shown). */
static void mark_table(struct shown *v, size_t n, int all)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i && !all && !v[i].hidden; j++)
            v[i].hidden = v[j].e.team == v[i].e.team;
    for (size_t i = 0; i < n; i++) {
        v[i].pareto = !v[i].hidden && v[i].st.state == EEB_STANDING_RANKED;
        for (size_t j = 0; j < n && v[i].pareto; j++)
            if (j != i && !v[j].hidden && v[j].st.state == EEB_STANDING_RANKED &&
                strcmp(v[j].e.device, v[i].e.device) == 0 &&
                eeb_srv_standing_dominated(&v[i].st, &v[j].st))
                v[i].pareto = 0;
    }
}

/* ---- as JSON ---- */

static json_t *utc_json(int64_t ns)
{
    char text[EEB_UTC_TEXT];
    return ns > 0 ? json_string(eeb_utc_text(ns, text)) : json_null();
}

static const char *const state_names[] = {"ranked", "running", "failed"};

static json_t *entry_json(const struct shown *s, int rank)
{
    json_t *runs = json_array();
    for (size_t i = 0; runs && i < s->nrun_ids; i++)
        json_array_append_new(runs, json_integer((json_int_t)s->run_ids[i]));
    const struct eeb_srv_standing *st = &s->st;
    json_t *o =
        json_pack("{s:o, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:i, s:i, s:o, s:o, s:o, s:o, s:o, "
                  "s:o, s:o, s:s?, s:b}",
                  "rank", rank ? json_integer(rank) : json_null(), "team", s->e.team_name, "entry",
                  s->e.name, "division", s->e.division, "backend", s->e.backend, "device",
                  s->e.device, "state", state_names[st->state], "runs", runs ? runs : json_null(),
                  "scored", st->scored, "of", st->runs, "S", eeb_json_number(st->s), "S_min",
                  eeb_json_number(st->s_min), "S_max", eeb_json_number(st->s_max), "energy_j",
                  eeb_json_number(st->energy_j), "t_s", eeb_json_number(st->t_s), "m_s",
                  eeb_json_number(st->m_s), "submitted_utc", utc_json(st->submitted_utc_ns), "why",
                  st->state == EEB_STANDING_FAILED ? st->why : NULL, "pareto", s->pareto);
    if (o) {
        json_object_set_new(o, "revoked", json_boolean(s->revoked));
        json_object_set_new(o, "system",
                            s->system_name[0]
                                ? json_pack("{s:s, s:s*}", "name", s->system_name, "version",
                                            s->system_version[0] ? s->system_version : NULL)
                                : json_null());
        json_object_set_new(o, "S_uncertainty", eeb_json_number(st->s_uncertainty));
        json_object_set_new(o, "sensor", s->sensor[0] ? json_string(s->sensor) : json_null());
        json_object_set_new(o, "sensor_qualified",
                            s->qualified < 0 ? json_null() : json_boolean(s->qualified));
    }
    return o;
}

/* The tables of v[0..n) (sorted), as JSON. */
static json_t *tables_json(struct shown *v, size_t n, int all)
{
    json_t *tables = json_array();
    for (size_t i = 0; tables && i < n;) {
        size_t end = i + 1;
        while (end < n && same_table(&v[i], &v[end]))
            end++;
        mark_table(v + i, end - i, all);
        json_t *entries = json_array();
        int rank = 0, place = 0;
        const struct eeb_srv_standing *above = NULL; /* the entry holding rank */
        for (size_t j = i; entries && j < end; j++) {
            if (v[j].hidden)
                continue;
            int ranked = v[j].st.state == EEB_STANDING_RANKED;
            place += ranked;
            if (ranked &&
                (!above || eeb_srv_standing_apart(above, &v[j].st))) /* else a tie: 1, 1, 3 */
                rank = place, above = &v[j].st;
            json_array_append_new(entries, entry_json(&v[j], ranked ? rank : 0));
        }
        json_array_append_new(tables,
                              json_pack("{s:s, s:s, s:f, s:o}", "provenance", v[i].e.provenance,
                                        "division", v[i].e.division, "p_max_w", v[i].e.p_max_w,
                                        "entries", entries ? entries : json_null()));
        i = end;
    }
    return tables;
}

static json_t *round_json(const struct eeb_round *r)
{
    int64_t now = eeb_utc_ns();
    const char *state = r->closed_utc_ns || now >= r->closes_utc_ns ? "closed"
                        : now < r->opens_utc_ns                     ? "not yet open"
                                                                    : "open";
    return json_pack(
        "{s:s, s:s, s:i, s:s, s:i, s:o, s:o, s:s}", "name", r->name, "rules_version",
        r->rules_version, "runs", r->runs, "aggregate", eeb_round_aggregate_name(r->aggregate),
        "cap", r->cap, "opens_utc", utc_json(r->opens_utc_ns), "closes_utc",
        utc_json(r->closed_utc_ns ? r->closed_utc_ns : r->closes_utc_ns), "state", state);
}

struct going {
    json_t *rows;
    const struct eeb_srv_revoked *revoked;
};

static int going_json(void *arg, const struct eeb_srv_run *r)
{
    struct going *g = arg;
    json_t *o =
        json_pack("{s:I, s:s, s:b, s:s?, s:s?, s:s, s:b, s:I, s:o}", "run_id", (json_int_t)r->id,
                  "team", r->team_name, "revoked", eeb_srv_revoked_has(g->revoked, r->team),
                  "entry", r->entry ? r->entry_name : NULL, "round", r->round[0] ? r->round : NULL,
                  "state", r->state, "official", r->official, "links", (json_int_t)r->links,
                  "last_link_utc", utc_json(r->last_link_utc_ns));
    return o && json_array_append_new(g->rows, o) == 0 ? 0 : EEB_ENOMEM;
}

int eeb_srv_ranking(struct eeb_srv_call *k, const struct eeb_srv_ranking_query *q, int task,
                    json_t **out, char *err, size_t errlen)
{
    struct eeb_round round;
    int64_t id = 0;
    int found = eeb_srv_store_round_find(k->s->store, q->round, 0, &id, &round, err, errlen);
    if (found < 0)
        return found;
    struct eeb_srv_revoked revoked;
    int rc = eeb_srv_revoked_read(k->s->store, &revoked, err, errlen);
    if (rc)
        return rc;
    struct gathered g = {.store = k->s->store, .revoked = &revoked, .round = &round, .q = q};
    if (found)
        rc = eeb_srv_store_entries_each(k->s->store, id, task, gather, &g, err, errlen);
    json_t *going = json_array();
    struct going gj = {.rows = going, .revoked = &revoked};
    if (rc == EEB_OK && going)
        rc = eeb_srv_store_runs_going(k->s->store, task, going_json, &gj, err, errlen);
    eeb_srv_revoked_free(&revoked);
    if (rc == EEB_OK && g.n)
        qsort(g.v, g.n, sizeof *g.v, by_table_then_standing);
    json_t *o =
        rc ? NULL
           : json_pack("{s:s, s:s, s:o, s:o, s:o}", "task", eeb_task_name((enum eeb_task)task),
                       "rules_version", k->s->rules_version, "round",
                       found ? round_json(&round) : json_null(), "tables",
                       tables_json(g.v, g.n, q->all), "running", going ? going : json_null());
    if (rc)
        json_decref(going);
    free(g.v);
    if (rc == EEB_ENOMEM || (!o && !rc))
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc)
        return rc;
    if (q->round && !found) {
        json_decref(o);
        return eeb_errf(err, errlen, EEB_ENODATA, "no round named '%s'", q->round);
    }
    *out = o;
    return EEB_OK;
}

/* ---- the route ---- */

static int make_json(struct eeb_srv_call *k, void *arg, char **body, size_t *len, char *err,
                     size_t errlen)
{
    const struct eeb_srv_ranking_query *q = arg;
    json_t *o;
    int rc = eeb_srv_ranking(k, q, q->task, &o, err, errlen);
    if (rc)
        return rc;
    *body = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!*body)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    *len = strlen(*body);
    return EEB_OK;
}

void eeb_srv_ranking_key(const struct eeb_srv_ranking_query *q, char *key, size_t n)
{
    snprintf(key, n, "ranking %d %s %s %s %s %d", q->task, q->round ? q->round : "*",
             q->provenance ? q->provenance : "*", q->device ? q->device : "*",
             q->division ? q->division : "*", q->all);
}

/* GET /api/v1/leaderboard?task=T[&round=R][&provenance=P][&device=D][&division=D][&all=1] */
enum MHD_Result eeb_srv_api_board(struct eeb_srv_call *k)
{
    struct eeb_srv_ranking_query q;
    enum MHD_Result sent;
    char key[200];
    if (!eeb_srv_ranking_query(k, &q, 1, &sent))
        return sent;
    eeb_srv_ranking_key(&q, key, sizeof key);
    return eeb_srv_kept_answer(k, key, "application/json", make_json, &q);
}
