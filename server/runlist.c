/*
 * runlist.c - every scored official run, one by one (GET /api/v1/runs and
 * the page GET /runs), grouped as the leaderboard groups entries: by task,
 * then a table per provenance, division and P_max tier, since measured,
 * counted, declared and modeled figures are never ranked together, nor runs
 * held to different budgets; in each table passing runs by S, the rest
 * after.  A task without a scored run has no table, and the page says so
 * in a line.  A revoked team is marked wherever it appears: the teams
 * revoked are read here for the leaderboard too (eeb_srv_revoked_*).
 *
 * Sections: the teams revoked; the runs grouped; as JSON; as a page.
 */
#include "server_int.h"

#include "tasks/eeb_task_ops.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the teams revoked ---- */

static int note_revoked(void *arg, const struct eeb_srv_team *t)
{
    struct eeb_srv_revoked *r = arg;
    if (!t->revoked_utc_ns)
        return 0;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        int64_t *grown = realloc(r->team, cap * sizeof *grown);
        if (!grown)
            return EEB_ENOMEM;
        r->team = grown, r->cap = cap;
    }
    r->team[r->n++] = t->id;
    return 0;
}

int eeb_srv_revoked_read(struct eeb_srv_store *store, struct eeb_srv_revoked *out, char *err,
                         size_t errlen)
{
    *out = (struct eeb_srv_revoked){0};
    int rc = eeb_srv_store_teams_each(store, note_revoked, out, err, errlen);
    if (rc) {
        eeb_srv_revoked_free(out);
        if (rc == EEB_ENOMEM)
            eeb_errf(err, errlen, rc, "out of memory");
    }
    return rc;
}

int eeb_srv_revoked_has(const struct eeb_srv_revoked *r, int64_t team)
{
    for (size_t i = 0; r && i < r->n; i++)
        if (r->team[i] == team)
            return 1;
    return 0;
}

void eeb_srv_revoked_free(struct eeb_srv_revoked *r)
{
    free(r->team);
    *r = (struct eeb_srv_revoked){0};
}

void eeb_srv_team_cell(FILE *f, const char *team, int revoked)
{
    fputs("<td>", f);
    eeb_html_text(f, team ? team : "-");
    if (revoked)
        fputs(" <span class=\"revoked\" title=\"the organizer revoked this team's token\">"
              "revoked</span>",
              f);
    fputs("</td>", f);
}

/* ---- the runs grouped ---- */

/* A task's scored runs as the store gives them (passing ones by S, then
 * the rest), and their order grouped by table. */
struct listed {
    struct eeb_srv_run *v;
    size_t n, cap;
    struct placed {
        const struct eeb_srv_run *r;
        size_t at; /* its place in the store's order */
    } * order;
};

static int collect(void *arg, const struct eeb_srv_run *r)
{
    struct listed *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        struct eeb_srv_run *grown = realloc(l->v, cap * sizeof *grown);
        if (!grown)
            return EEB_ENOMEM;
        l->v = grown, l->cap = cap;
    }
    l->v[l->n++] = *r;
    return 0;
}

/* Closed, open, then runs of no round's entry. */
static int division_order(const char *d)
{
    return strcmp(d, "closed") == 0 ? 0 : strcmp(d, "open") == 0 ? 1 : 2;
}

static int table_cmp(const struct eeb_srv_run *a, const struct eeb_srv_run *b)
{
    int c = eeb_srv_provenance_order(a->provenance) - eeb_srv_provenance_order(b->provenance);
    if (c || (c = strcmp(a->provenance, b->provenance)))
        return c;
    if ((c = division_order(a->division) - division_order(b->division)))
        return c;
    return a->p_max_w < b->p_max_w ? -1 : a->p_max_w > b->p_max_w;
}

static int by_table(const void *pa, const void *pb)
{
    const struct placed *a = pa, *b = pb;
    int c = table_cmp(a->r, b->r);
    return c ? c : (a->at > b->at) - (a->at < b->at); /* the store's order within a table */
}

/* Task's runs under f into l, in table order (l->order). */
static int list_task(struct eeb_srv_call *k, const struct eeb_srv_board_filter *f, int task,
                     struct listed *l, char *err, size_t errlen)
{
    struct eeb_srv_board_filter one = *f;
    one.task = task;
    *l = (struct listed){0};
    int rc = eeb_srv_store_board(k->s->store, &one, collect, l, err, errlen);
    if (rc == EEB_OK && l->n && !(l->order = malloc(l->n * sizeof *l->order)))
        rc = EEB_ENOMEM;
    if (rc == EEB_OK && l->n) {
        for (size_t i = 0; i < l->n; i++)
            l->order[i] = (struct placed){&l->v[i], i};
        qsort(l->order, l->n, sizeof *l->order, by_table);
    }
    if (rc == EEB_ENOMEM)
        eeb_errf(err, errlen, rc, "out of memory");
    return rc;
}

static void listed_free(struct listed *l)
{
    free(l->v), free(l->order);
}

/* The run list's filter from the query string, or the 400 sent. */
static int read_filter(struct eeb_srv_call *k, struct eeb_srv_board_filter *f, int need_task,
                       enum MHD_Result *sent)
{
    const char *limit = eeb_srv_call_arg(k, "limit");
    *f = (struct eeb_srv_board_filter){.limit = 100};
    if (!eeb_srv_query_filter(k, need_task, &f->task, &f->provenance, &f->device, sent))
        return 0;
    if (limit) {
        char *end;
        long n = strtol(limit, &end, 10);
        if (*end || n < 1 || n > 1000) {
            *sent = eeb_srv_call_fail(k, 400, "limit", "expected 1 to 1000");
            return 0;
        }
        f->limit = (int)n;
    }
    return 1;
}

/* The run list's answer of type to the request's filter (need_task: it
 * must name a task). */
static enum MHD_Result kept_answer(struct eeb_srv_call *k, int need_task, const char *type,
                                   eeb_srv_make_answer *make)
{
    struct eeb_srv_board_filter f;
    enum MHD_Result sent;
    if (!read_filter(k, &f, need_task, &sent))
        return sent;
    char key[200];
    snprintf(key, sizeof key, "runs %d %d %c%s %c%s", f.task, f.limit, f.provenance ? '=' : '*',
             f.provenance ? f.provenance : "", f.device ? '=' : '*', f.device ? f.device : "");
    return eeb_srv_kept_answer(k, key, type, make, &f);
}

/* ---- as JSON ---- */

static json_t *row_json(const struct eeb_srv_run *r, int rank, int revoked)
{
    json_t *o = json_pack(
        "{s:o, s:I, s:s, s:b, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s, s:s?, "
        "s:f, s:b}",
        "rank", rank ? json_integer(rank) : json_null(), "run_id", (json_int_t)r->id, "team",
        r->team_name, "revoked", revoked, "verdict", r->verdict, "S", eeb_json_number(r->s), "m_s",
        eeb_json_number(r->m_s), "m_p", eeb_json_number(r->m_p), "m_t", eeb_json_number(r->m_t),
        "m_u", eeb_json_number(r->m_u), "energy_j", eeb_json_number(r->energy_j), "t_s",
        eeb_json_number(r->t_s), "device", r->device, "provenance", r->provenance, "division",
        r->division[0] ? r->division : NULL, "p_max_w", r->p_max_w, "official", r->official);
    return o;
}

static int make_json(struct eeb_srv_call *k, void *arg, char **body, size_t *len, char *err,
                     size_t errlen)
{
    const struct eeb_srv_board_filter *f = arg;
    struct eeb_srv_revoked revoked;
    struct listed l;
    int rc = eeb_srv_revoked_read(k->s->store, &revoked, err, errlen);
    if (rc)
        return rc;
    if ((rc = list_task(k, f, f->task, &l, err, errlen))) {
        eeb_srv_revoked_free(&revoked);
        return rc;
    }
    json_t *rows = json_array();
    int rank = 0;
    for (size_t i = 0; rows && i < l.n; i++) {
        const struct eeb_srv_run *r = l.order[i].r;
        if (i && table_cmp(l.order[i - 1].r, r))
            rank = 0; /* a table of its own: ranked from 1 */
        json_t *o = row_json(r, isnan(r->s) ? 0 : ++rank, eeb_srv_revoked_has(&revoked, r->team));
        if (!o || json_array_append_new(rows, o))
            json_decref(rows), rows = NULL;
    }
    listed_free(&l);
    eeb_srv_revoked_free(&revoked);
    json_t *o =
        rows ? json_pack("{s:s, s:s?, s:s?, s:s, s:o}", "task",
                         eeb_task_name((enum eeb_task)f->task), "provenance", f->provenance,
                         "device", f->device, "rules_version", k->s->rules_version, "runs", rows)
             : NULL;
    *body = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!*body)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    *len = strlen(*body);
    return EEB_OK;
}

/* GET /api/v1/runs?task=T[&provenance=P][&device=D][&limit=N]: rows in
 * table order, each ranked within its table. */
enum MHD_Result eeb_srv_api_runs(struct eeb_srv_call *k)
{
    return kept_answer(k, 1, "application/json", make_json);
}

/* ---- as a page ---- */

/* The columns of a table: the first click on one sorts it best first (S
 * and M_s: highest; the rest: lowest, or A to Z). */
static const struct column {
    const char *name, *first;
} columns[] = {
    {"rank", "ascending"},       {"team", "ascending"},    {"run", "ascending"},
    {"S", "descending"},         {"verdict", "ascending"}, {"M_s", "descending"},
    {"M_p", "ascending"},        {"M_t", "ascending"},     {"M_u", "ascending"},
    {"E (J)", "ascending"},      {"T (s)", "ascending"},   {"device", "ascending"},
    {"provenance", "ascending"},
};
#define N_COLUMNS (sizeof columns / sizeof *columns)

/* The header row; the rows come ranked, which the rank column's mark says. */
static void header(FILE *f)
{
    fputs("<thead><tr>", f);
    for (size_t i = 0; i < N_COLUMNS; i++)
        fprintf(f,
                "<th scope=\"col\" tabindex=\"0\" data-first=\"%s\"%s>%s<span class=\"mark\" "
                "aria-hidden=\"true\">%s</span></th>",
                columns[i].first, i == 0 ? " aria-sort=\"ascending\"" : "", columns[i].name,
                i == 0 ? " &#9650;" : "");
    fputs("</tr></thead>", f);
}

static void html_row(FILE *f, const struct eeb_srv_run *r, int rank, int revoked)
{
    if (rank)
        fprintf(f, "<tr class=\"%s\"><td data-v=\"%d\">%d</td>", r->verdict, rank, rank);
    else
        fprintf(f, "<tr class=\"%s\"><td data-v=\"\">-</td>", r->verdict);
    eeb_srv_team_cell(f, r->team_name, revoked);
    fprintf(f, "<td data-v=\"%lld\"><a href=\"/runs/%lld\">%lld</a></td>", (long long)r->id,
            (long long)r->id, (long long)r->id);
    eeb_srv_number_cell(f, r->s, 4);
    fputs("<td>", f);
    eeb_html_text(f, r->verdict);
    fputs("</td>", f);
    eeb_srv_number_cell(f, r->m_s, 4);
    eeb_srv_number_cell(f, r->m_p, 4);
    eeb_srv_number_cell(f, r->m_t, 4);
    eeb_srv_number_cell(f, r->m_u, 4);
    eeb_srv_number_cell(f, r->energy_j, 1);
    eeb_srv_number_cell(f, r->t_s, 1);
    fputs("<td>", f);
    eeb_html_text(f, r->device);
    fputs("</td><td>", f);
    eeb_html_text(f, r->provenance);
    fputs("</td></tr>\n", f);
}

/* A table's element id, runs-task-provenance-division-pmax
 * ("runs-det-modeled-none-10"): anything but a letter, a digit or '-'
 * becomes '_', so the id is safe in HTML and a CSS selector. */
static void table_open(FILE *f, const char *task, const struct eeb_srv_run *r)
{
    char id[160];
    snprintf(id, sizeof id, "runs-%s-%s-%s-%g", task, r->provenance,
             r->division[0] ? r->division : "none", r->p_max_w);
    for (char *c = id; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-')
            *c = '_';
    fprintf(f, "<table class=\"board\" id=\"%s\"><caption>", id);
    eeb_html_text(f, r->provenance);
    if (r->division[0]) {
        fputs(", ", f);
        eeb_html_text(f, r->division);
        fputs(" division", f);
    } else
        fputs(", no round's entry", f);
    fprintf(f, ", %g W P<sub>max</sub></caption>", r->p_max_w);
    header(f);
    fputs("<tbody>\n", f);
}

/* Task's section: a table per group; nothing if it has no run (*shown 0). */
static int task_section(struct eeb_srv_call *k, const struct eeb_srv_board_filter *want, int t,
                        const struct eeb_srv_revoked *revoked, FILE *f, int *shown, char *err,
                        size_t errlen)
{
    struct listed l;
    int rc = list_task(k, want, t, &l, err, errlen);
    if (rc)
        return rc;
    *shown = l.n > 0;
    const char *name = eeb_task_name((enum eeb_task)t);
    if (l.n)
        fprintf(f, "<section id=\"runs-task-%s\"><h2 id=\"%s\">%s (%s)</h2>\n", name, name, name,
                eeb_task_metric((enum eeb_task)t));
    int rank = 0;
    for (size_t i = 0; i < l.n; i++) {
        const struct eeb_srv_run *r = l.order[i].r;
        if (!i || table_cmp(l.order[i - 1].r, r)) {
            if (i)
                fputs("</tbody></table>\n", f);
            table_open(f, name, r);
            rank = 0;
        }
        html_row(f, r, isnan(r->s) ? 0 : ++rank, eeb_srv_revoked_has(revoked, r->team));
    }
    if (l.n)
        fputs("</tbody></table>\n</section>\n", f);
    listed_free(&l);
    return EEB_OK;
}

static int runs_page(struct eeb_srv_call *k, const struct eeb_srv_board_filter *want, FILE *f,
                     char *err, size_t errlen)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<title>eeb runs</title>\n<style>body{font:14px sans-serif;margin:24px}"
          "table{border-collapse:collapse;margin:8px 0 24px}th,td{border:1px solid #ccc;"
          "padding:3px 8px;text-align:right}th{background:#f4f4f4;cursor:pointer;"
          "white-space:nowrap}th[aria-sort]{background:#e2ebf6}"
          "caption{text-align:left;font-weight:bold;padding:4px 0}"
          "td:nth-child(2),td:nth-child(5),td:nth-child(12),td:nth-child(13){text-align:left}"
          ".fail,.invalid,.aborted{color:#888}.revoked{color:#b30000;font-size:11px;"
          "border:1px solid #b30000;border-radius:3px;padding:0 3px}</style></head><body>\n"
          "<h1>eeb: every run scored</h1>\n<p>S = 1 &minus; [w<sub>u</sub>M<sub>u</sub> + "
          "w<sub>t</sub>M<sub>t</sub> + w<sub>p</sub>M<sub>p</sub> + w<sub>s</sub>(1 &minus; "
          "M<sub>s</sub>)], rules ",
          f);
    eeb_html_text(f, k->s->rules_version);
    fputs(". Every scored official run, one by one, a table per task, provenance, division and "
          "P<sub>max</sub>, as the leaderboard ranks entries: measured, counted, declared and "
          "modeled figures are never ranked together. Passing runs by S, the rest after. Click "
          "a column to sort. The <a href=\"/leaderboard\">leaderboard</a> ranks a round's "
          "entries.",
          f);
    if (want->provenance || want->device) {
        fputs(" Showing provenance ", f);
        eeb_html_text(f, want->provenance ? want->provenance : "any");
        fputs(", device ", f);
        eeb_html_text(f, want->device ? want->device : "any");
        fputs(".", f);
    }
    fputs("</p>\n", f);
    struct eeb_srv_revoked revoked;
    int rc = eeb_srv_revoked_read(k->s->store, &revoked, err, errlen), none = 0;
    char empty[64] = "";
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++) {
        if (want->task >= 0 && want->task != t)
            continue;
        int shown = 0;
        rc = task_section(k, want, t, &revoked, f, &shown, err, errlen);
        if (rc == EEB_OK && !shown) {
            size_t used = strlen(empty);
            snprintf(empty + used, sizeof empty - used, "%s%s", none++ ? ", " : "",
                     eeb_task_name((enum eeb_task)t));
        }
    }
    eeb_srv_revoked_free(&revoked);
    if (rc)
        return rc;
    if (none)
        fprintf(f, "<p class=\"none\" id=\"no-runs\">%s: no scored runs yet.</p>\n", empty);
    fputs(eeb_srv_sort_script, f);
    fputs("</body></html>\n", f);
    return EEB_OK;
}

static int make_page(struct eeb_srv_call *k, void *arg, char **body, size_t *len, char *err,
                     size_t errlen)
{
    const struct eeb_srv_board_filter *f = arg;
    FILE *m = open_memstream(body, len);
    if (!m)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = runs_page(k, f, m, err, errlen);
    if (fclose(m) != 0 && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    return rc;
}

/* GET /runs[?task=T][&provenance=P][&device=D] */
enum MHD_Result eeb_srv_page_runs(struct eeb_srv_call *k)
{
    return kept_answer(k, 0, "text/html; charset=utf-8", make_page);
}
