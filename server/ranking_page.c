/*
 * ranking_page.c - the leaderboard as a page (GET / and /leaderboard),
 * rendered from the very JSON /api/v1/leaderboard answers (ranking.c), so
 * that the page and the API never disagree.  Every round the server holds,
 * each linked to its standings; then a section per task that has entries
 * or runs in progress (the others named in one line): the round's line;
 * per table (a provenance, division and P_max tier) the entries, in the
 * order and with the ranks the JSON gives, a revoked team marked, beside
 * the plot of energy against M_s (scatter.c); then the runs in progress.
 * Every text a team chose (names, devices, a failure's reason) is escaped.
 *
 * Sections: reading the answer; the tables; a task; the page and its
 * route.
 */
#include "server_int.h"

#include "tasks/eeb_task_ops.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading the answer ---- */

/* The text at key of o, or NULL (null or missing). */
static const char *text_at(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* The text at key of o as a table cell, escaped; "-" if none. */
static void text_cell(FILE *f, const json_t *o, const char *key)
{
    const char *s = text_at(o, key);
    fputs("<td>", f);
    eeb_html_text(f, s ? s : "-");
    fputs("</td>", f);
}

/* A time the JSON holds ("2026-01-01T00:06:00Z") for people, who are
 * told it is UTC: "2026-01-01 00:06:00", which sorts the same; "-" if
 * none. */
static void put_utc(FILE *f, const char *iso)
{
    char shown[32];
    snprintf(shown, sizeof shown, "%s", iso ? iso : "-");
    shown[strcspn(shown, "Z")] = '\0';
    char *t = strchr(shown, 'T');
    if (t)
        *t = ' ';
    eeb_html_text(f, shown);
}

static void utc_cell(FILE *f, const json_t *o, const char *key)
{
    fputs("<td>", f);
    put_utc(f, text_at(o, key));
    fputs("</td>", f);
}

/* The system under test, {"name", "version"} or null: its name and
 * version, the team's words, escaped ("-": not said). */
static void system_cell(FILE *f, const json_t *system)
{
    const char *name = text_at(system, "name"), *version = text_at(system, "version");
    fputs("<td class=\"system\">", f);
    eeb_html_text(f, name ? name : "-");
    if (name && version) {
        fputs(" <span class=\"version\">", f);
        eeb_html_text(f, version);
        fputs("</span>", f);
    }
    fputs("</td>", f);
}

/* An element id, kind-task-provenance-division-pmax
 * ("entries-cls-declared-closed-10"):
 * anything but a letter, a digit or '-' becomes '_' (10.5 W: "10_5"), so
 * that the id is safe in HTML and in a CSS selector whatever it holds. */
static void table_id(char *out, size_t n, const char *kind, const char *task, const json_t *table)
{
    const char *provenance = text_at(table, "provenance"), *division = text_at(table, "division");
    snprintf(out, n, "%s-%s-%s-%s-%g", kind, task, provenance ? provenance : "none",
             division ? division : "none", eeb_json_number_at(table, "p_max_w"));
    for (char *c = out; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-')
            *c = '_';
}

/* ---- the tables ---- */

/* A column: its header, what the first click on it sorts first (S and M_s
 * the highest, the rest the lowest or A to Z), and what it holds. */
struct column {
    const char *name, *first, *title;
};

static const struct column entry_columns[] = {
    {"rank", "ascending", "equal S share a rank"},
    {"team", "ascending", ""},
    {"entry", "ascending", "the team's name for its design"},
    {"division", "ascending", "closed: the round's base model and schedule; open: free"},
    {"backend", "ascending", ""},
    {"system", "ascending", "the system under test as it names itself, and its version"},
    {"device", "ascending", ""},
    {"S", "descending", "the round's aggregate of the S of the entry's runs"},
    {"spread", "ascending", "the lowest and the highest S of its runs (sorted by their gap)"},
    {"M_s", "descending", "the median of its runs' task metric"},
    {"E (J)", "ascending", "the median energy of its runs' fine-tuning"},
    {"T (s)", "ascending", "the median time of its runs' fine-tuning"},
    {"runs", "descending", "scored of the round's runs an entry; each links to its report"},
    {"submitted (UTC)", "ascending", "when its last run completed"},
    {"state", "ascending", "ranked, running (runs still to score), or why it failed"},
};

static const struct column running_columns[] = {
    {"run", "descending", "its live report"},
    {"team", "ascending", ""},
    {"entry", "ascending", "-: not a run of an entry (unofficial, or no round open)"},
    {"round", "ascending", ""},
    {"state", "ascending", "registered: fine-tuning; complete: being scored"},
    {"links", "descending", "links of its record's chain received"},
    {"last link (UTC)", "descending", ""},
};

/* The header row of a table.board, the order the rows come in marked on
 * its first column (initial: "ascending" or "descending"). */
static void header(FILE *f, const struct column *c, size_t n, const char *initial)
{
    fputs("<thead><tr>", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<th scope=\"col\" tabindex=\"0\" data-first=\"%s\"", c[i].first);
        if (i == 0)
            fprintf(f, " aria-sort=\"%s\"", initial);
        if (c[i].title[0])
            fprintf(f, " title=\"%s\"", c[i].title);
        fprintf(f, ">%s<span class=\"mark\" aria-hidden=\"true\">%s</span></th>", c[i].name,
                i                                   ? ""
                : strcmp(initial, "ascending") == 0 ? " &#9650;"
                                                    : " &#9660;");
    }
    fputs("</tr></thead>\n", f);
}

/* The runs of an entry: how many are scored of the round's number, and
 * each one's report linked. */
static void runs_cell(FILE *f, const json_t *e)
{
    long long scored = json_integer_value(json_object_get(e, "scored"));
    long long of = json_integer_value(json_object_get(e, "of"));
    fprintf(f, "<td data-v=\"%lld\">%lld/%lld", scored, scored, of);
    size_t i;
    json_t *run;
    json_array_foreach(json_object_get(e, "runs"), i, run)
    {
        long long id = json_integer_value(run);
        fprintf(f, "%s<a href=\"/runs/%lld\">%lld</a>", i ? " " : ": ", id, id);
    }
    fputs("</td>", f);
}

static void entry_row(FILE *f, const json_t *e)
{
    const char *state = text_at(e, "state");
    json_t *rank = json_object_get(e, "rank");
    fputs("<tr class=\"", f);
    eeb_html_text(f, state ? state : "");
    if (json_is_integer(rank))
        fprintf(f, "\"><td data-v=\"%lld\">%lld</td>", (long long)json_integer_value(rank),
                (long long)json_integer_value(rank));
    else
        fputs("\"><td data-v=\"\">-</td>", f);
    eeb_srv_team_cell(f, text_at(e, "team"), json_is_true(json_object_get(e, "revoked")));
    text_cell(f, e, "entry");
    text_cell(f, e, "division");
    text_cell(f, e, "backend");
    system_cell(f, json_object_get(e, "system"));
    text_cell(f, e, "device");
    double s = eeb_json_number_at(e, "S"), u = eeb_json_number_at(e, "S_uncertainty");
    if (isnan(u) || isnan(s))
        eeb_srv_number_cell(f, s, 4);
    else { /* the meter's uncertainty carried through: within it, a tie */
        char exact[EEB_NUMBER_MAX];
        fprintf(f, "<td data-v=\"%s\">%.4f&nbsp;&plusmn;&nbsp;%.4f</td>",
                eeb_number_exact(s, exact), s, u);
    }
    double lo = eeb_json_number_at(e, "S_min"), hi = eeb_json_number_at(e, "S_max");
    if (isnan(lo) || isnan(hi))
        fputs("<td data-v=\"\">-</td>", f);
    else {
        char gap[EEB_NUMBER_MAX];
        fprintf(f, "<td data-v=\"%s\">%.4f&ndash;%.4f</td>", eeb_number_exact(hi - lo, gap), lo,
                hi);
    }
    eeb_srv_number_cell(f, eeb_json_number_at(e, "m_s"), 4);
    eeb_srv_number_cell(f, eeb_json_number_at(e, "energy_j"), 1);
    eeb_srv_number_cell(f, eeb_json_number_at(e, "t_s"), 1);
    runs_cell(f, e);
    utc_cell(f, e, "submitted_utc");
    fputs("<td>", f);
    if (state && strcmp(state, "failed") == 0) {
        fputs("failed: ", f);
        eeb_html_text(f, text_at(e, "why") ? text_at(e, "why") : "a run did not pass");
    } else if (state && strcmp(state, "running") == 0)
        fprintf(f, "running: %lld of %lld runs scored",
                (long long)json_integer_value(json_object_get(e, "scored")),
                (long long)json_integer_value(json_object_get(e, "of")));
    else
        eeb_html_text(f, state ? state : "-");
    /* a board's own sensor: qualified against a reference meter, or not */
    json_t *qualified = json_object_get(e, "sensor_qualified");
    if (json_is_boolean(qualified)) {
        fprintf(f, "<br><span class=\"%s\">",
                json_is_true(qualified) ? "qualified" : "unqualified");
        fputs(json_is_true(qualified) ? "qualified sensor " : "&#9888; unqualified sensor ", f);
        eeb_html_text(f, text_at(e, "sensor") ? text_at(e, "sensor") : "");
        fputs("</span>", f);
    }
    fputs("</td></tr>\n", f);
}

static void entries_table(FILE *f, const char *id, const json_t *table)
{
    const json_t *entries = json_object_get(table, "entries");
    fprintf(f, "<table class=\"board entries\" id=\"%s\"><caption>", id);
    eeb_html_text(f, text_at(table, "provenance") ? text_at(table, "provenance") : "-");
    fputs(", ", f);
    eeb_html_text(f, text_at(table, "division") ? text_at(table, "division") : "-");
    fprintf(f, " division, %g W P<sub>max</sub> tier</caption>\n",
            eeb_json_number_at(table, "p_max_w"));
    header(f, entry_columns, sizeof entry_columns / sizeof *entry_columns, "ascending");
    fputs("<tbody>\n", f);
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e)
    {
        entry_row(f, e);
    }
    fputs("</tbody></table>\n", f);
}

static void running_table(FILE *f, const char *task, const json_t *running)
{
    fprintf(f, "<table class=\"board running\" id=\"running-%s\">", task);
    header(f, running_columns, sizeof running_columns / sizeof *running_columns, "descending");
    fputs("<tbody>\n", f);
    size_t i;
    json_t *r;
    json_array_foreach(running, i, r)
    {
        long long id = json_integer_value(json_object_get(r, "run_id"));
        fprintf(f, "<tr><td data-v=\"%lld\"><a href=\"/runs/%lld\">%lld</a></td>", id, id, id);
        eeb_srv_team_cell(f, text_at(r, "team"), json_is_true(json_object_get(r, "revoked")));
        text_cell(f, r, "entry");
        text_cell(f, r, "round");
        fputs("<td>", f);
        eeb_html_text(f, text_at(r, "state") ? text_at(r, "state") : "-");
        if (!json_is_true(json_object_get(r, "official")))
            fputs(" (unofficial)", f);
        fputs("</td>", f);
        long long links = json_integer_value(json_object_get(r, "links"));
        fprintf(f, "<td data-v=\"%lld\">%lld</td>", links, links);
        utc_cell(f, r, "last_link_utc");
        fputs("</tr>\n", f);
    }
    if (!json_array_size(running))
        fprintf(f, "<tr><td colspan=\"%zu\">no runs in progress</td></tr>\n",
                sizeof running_columns / sizeof *running_columns);
    fputs("</tbody></table>\n", f);
}

/* ---- a task ---- */

/* The round the task's entries belong to, or that none is held. */
static void round_line(FILE *f, const json_t *r)
{
    if (!json_is_object(r)) {
        fputs("<p class=\"round none\">No round is open: the organizer opens one with <code>eeb "
              "serve admin open-round</code>; every scored run is listed at <a "
              "href=\"/runs\">/runs</a>.</p>\n",
              f);
        return;
    }
    const char *state = text_at(r, "state"), *aggregate = text_at(r, "aggregate");
    fputs("<p class=\"round\">Round <b>", f);
    eeb_html_text(f, text_at(r, "name"));
    fputs("</b>, ", f);
    eeb_html_text(f, state ? state : "-");
    fputs(", rules ", f);
    eeb_html_text(f, text_at(r, "rules_version"));
    fprintf(f, ": an entry is %lld runs, ranked by ",
            (long long)json_integer_value(json_object_get(r, "runs")));
    if (aggregate && strcmp(aggregate, "median") == 0)
        fputs("the <b>median</b> of their S", f);
    else if (aggregate && strcmp(aggregate, "olympic") == 0)
        fputs("the <b>Olympic mean</b> of their S (the highest and the lowest dropped)", f);
    else {
        fputs("the ", f);
        eeb_html_text(f, aggregate ? aggregate : "-");
        fputs(" of their S", f);
    }
    fprintf(f, "; a team registers at most %lld official runs a task. Opens <time>",
            (long long)json_integer_value(json_object_get(r, "cap")));
    put_utc(f, text_at(r, "opens_utc"));
    fputs(state && strcmp(state, "closed") == 0 ? "</time>, closed <time>"
                                                : "</time>, closes <time>",
          f);
    put_utc(f, text_at(r, "closes_utc"));
    fputs("</time> (UTC).</p>\n", f);
}

/* A task's section, from its leaderboard o: none (*shown 0) for a task
 * without an entry or a run in progress. */
static int task_section(FILE *f, enum eeb_task task, const json_t *o, int *shown, char *err,
                        size_t errlen)
{
    const char *name = eeb_task_name(task), *metric = eeb_task_metric(task);
    const json_t *tables = json_object_get(o, "tables"), *table;
    *shown = json_array_size(tables) || json_array_size(json_object_get(o, "running"));
    if (!*shown)
        return EEB_OK;
    fprintf(f, "<section id=\"task-%s\"><h2>%s <small>(M<sub>s</sub>: %s)</small></h2>\n", name,
            name, metric);
    round_line(f, json_object_get(o, "round"));
    size_t i;
    json_array_foreach(tables, i, table)
    {
        char entries_id[160], pareto_id[160];
        table_id(entries_id, sizeof entries_id, "entries", name, table);
        table_id(pareto_id, sizeof pareto_id, "pareto", name, table);
        fputs("<div class=\"pair\">\n", f);
        entries_table(f, entries_id, table);
        int rc = eeb_srv_scatter(f, pareto_id, table, metric, err, errlen);
        if (rc)
            return rc;
        fputs("</div>\n", f);
    }
    if (!json_array_size(tables) && json_is_object(json_object_get(o, "round")))
        fprintf(f, "<p>No entries on %s in this round yet.</p>\n", name);
    fputs("<h3>Runs in progress</h3>\n", f);
    running_table(f, name, json_object_get(o, "running"));
    fputs("</section>\n", f);
    return EEB_OK;
}

/* ---- the page and its route ---- */

/* A query value in a URL: letters, digits and -_.~ as they are, the rest
 * (a device's '+', '/', ':') percent-encoded. */
static void url_value(FILE *f, const char *s)
{
    for (; *s; s++)
        if (isalnum((unsigned char)*s) || strchr("-_.~", *s))
            fputc(*s, f);
        else
            fprintf(f, "%%%02X", (unsigned char)*s);
}

/* The page's own address under q, every entry shown or not. */
static void page_href(FILE *f, const struct eeb_srv_ranking_query *q, int all)
{
    const char *names[] = {"round", "provenance", "device", "division"};
    const char *values[] = {q->round, q->provenance, q->device, q->division};
    fputs("/leaderboard", f);
    char sep = '?';
    if (q->task >= 0) {
        fprintf(f, "?task=%s", eeb_task_name((enum eeb_task)q->task));
        sep = '&';
    }
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (values[i]) {
            fprintf(f, "%s%s=", sep == '?' ? "?" : "&amp;", names[i]);
            url_value(f, values[i]);
            sep = '&';
        }
    if (all)
        fprintf(f, "%sall=1", sep == '?' ? "?" : "&amp;");
}

/* Every round the server holds, the first to open first, each linked to
 * its standings (the one shown marked). */
struct rounds_shown {
    FILE *f;
    const char *shown;
    const struct eeb_srv_ranking_query *q;
    int n;
};

static int round_item(void *arg, int64_t id, const struct eeb_round *r)
{
    (void)id;
    struct rounds_shown *l = arg;
    FILE *f = l->f;
    char opens[EEB_UTC_TEXT], closes[EEB_UTC_TEXT];
    int64_t now = eeb_utc_ns(), end = r->closed_utc_ns ? r->closed_utc_ns : r->closes_utc_ns;
    const char *state = r->closed_utc_ns || now >= r->closes_utc_ns ? "closed"
                        : now < r->opens_utc_ns                     ? "not yet open"
                                                                    : "open";
    if (!l->n++)
        fputs("<nav id=\"rounds\"><h2>Rounds</h2>\n<ul>\n", f);
    fputs("<li><a href=\"/leaderboard?round=", f);
    url_value(f, r->name);
    if (l->q->all)
        fputs("&amp;all=1", f);
    fputs("\">", f);
    eeb_html_text(f, r->name);
    fputs("</a>, ", f);
    fputs(state, f);
    fputs(", <time>", f);
    put_utc(f, eeb_utc_text(r->opens_utc_ns, opens));
    fputs("</time> to <time>", f);
    put_utc(f, eeb_utc_text(end, closes));
    fprintf(f, "</time> (UTC): %d runs an entry (%s)%s</li>\n", r->runs,
            eeb_round_aggregate_name(r->aggregate),
            l->shown && strcmp(l->shown, r->name) == 0 ? " <b>(shown below)</b>" : "");
    return 0;
}

static int rounds_list(struct eeb_srv_call *k, const struct eeb_srv_ranking_query *q,
                       const char *shown, FILE *f, char *err, size_t errlen)
{
    struct rounds_shown l = {.f = f, .shown = shown, .q = q};
    int rc = eeb_srv_store_rounds_each(k->s->store, round_item, &l, err, errlen);
    if (rc == EEB_OK && l.n)
        fputs("</ul></nav>\n", f);
    return rc;
}

static const char style[] =
    "<style>body{font:14px/1.4 sans-serif;margin:16px;color:#222}"
    "h2{margin:32px 0 8px;border-bottom:1px solid #ddd}h2 small{font-weight:normal;color:#555}"
    "h3{margin:16px 0 4px}"
    "table{border-collapse:collapse;margin:4px 0 16px;font-size:13px}"
    "caption{text-align:left;font-weight:bold;padding:4px 0}"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;white-space:nowrap}"
    "td[data-v]{text-align:right;font-variant-numeric:tabular-nums}"
    "th{background:#f4f4f4;cursor:pointer;white-space:nowrap}th[aria-sort]{background:#e2ebf6}"
    /* what may wrap when the page is narrow: the system (the team's words), the run ids,
     * the time and the state (a failure's reason) */
    "table.entries td.system{white-space:normal;max-width:12em}"
    "table.entries td:nth-child(13){white-space:normal;min-width:6em}"
    "table.entries td:nth-child(14){white-space:normal}"
    "table.entries td:last-child{white-space:normal;min-width:7em;max-width:18em}"
    "tr.running td,tr.failed td,tr.running a,tr.failed a{color:#767676}"
    ".unqualified{color:#b35900;font-weight:bold}"
    ".revoked{color:#b30000;font-size:11px;border:1px solid #b30000;border-radius:3px;"
    "padding:0 3px}p.no-plot{display:inline-block;vertical-align:top;max-width:20em;color:#555}"
    /* a table and its scatter side by side where the page is wide enough; the
     * table shrinks to the page's width before it drops the scatter below */
    "table.entries{display:inline-table;vertical-align:top;margin-right:24px}"
    "svg.pareto{vertical-align:top;margin:4px 0 16px}"
    "time{white-space:nowrap}p.round{background:#f6f6f0;padding:6px 10px;border-left:4px solid "
    "#bbb59a}</style>";

static int page(struct eeb_srv_call *k, const struct eeb_srv_ranking_query *q, FILE *f, char *err,
                size_t errlen)
{
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<title>eeb leaderboard</title>\n%s</head><body>\n"
            "<h1>eeb leaderboard</h1>\n<p>S = 1 &minus; [w<sub>u</sub>M<sub>u</sub> + "
            "w<sub>t</sub>M<sub>t</sub> + w<sub>p</sub>M<sub>p</sub> + w<sub>s</sub>(1 "
            "&minus; M<sub>s</sub>)], rules ",
            style);
    eeb_html_text(f, k->s->rules_version);
    fputs(". An entry is a team's design on a task, made of the round's number of official "
          "runs; entries are ranked by the round's aggregate of their runs' S (equal S, equal "
          "rank), entries still running and failed ones follow. Measured, counted, declared and "
          "modeled figures, and P<sub>max</sub> tiers, are ranked apart. ",
          f);
    if (q->all) {
        fputs("Showing every entry (<a href=\"", f);
        page_href(f, q, 0);
        fputs("\">each team's best only</a>). ", f);
    } else {
        fputs("Showing each team's best entry (<a href=\"", f);
        page_href(f, q, 1);
        fputs("\">every entry</a>). ", f);
    }
    if (q->provenance || q->device || q->division) {
        fputs("Only provenance ", f);
        eeb_html_text(f, q->provenance ? q->provenance : "any");
        fputs(", device ", f);
        eeb_html_text(f, q->device ? q->device : "any");
        fputs(", division ", f);
        eeb_html_text(f, q->division ? q->division : "any");
        fputs(". ", f);
    }
    fputs("Every scored run, entry or not: <a href=\"/runs\">/runs</a>. Click a column to "
          "sort.</p>\n",
          f);
    json_t *o[EEB_TASK_COUNT] = {0};
    const json_t *round = NULL; /* the round shown (the same for every task) */
    int rc = EEB_OK;
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++) {
        struct eeb_srv_ranking_query one = *q;
        one.task = t;
        if ((q->task < 0 || q->task == t) &&
            (rc = eeb_srv_ranking(k, &one, t, &o[t], err, errlen)) == EEB_OK)
            round = json_object_get(o[t], "round");
    }
    if (rc == EEB_OK)
        rc = rounds_list(k, q, text_at(round, "name"), f, err, errlen);
    char empty[64] = "";
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++) {
        int shown = 1;
        if (o[t] && (rc = task_section(f, (enum eeb_task)t, o[t], &shown, err, errlen)) == EEB_OK &&
            !shown) {
            size_t used = strlen(empty);
            snprintf(empty + used, sizeof empty - used, "%s%s", used ? ", " : "",
                     eeb_task_name((enum eeb_task)t));
        }
    }
    if (rc == EEB_OK && empty[0]) { /* no section for a task without an entry or a run */
        fputs("<section id=\"no-entries\">", f);
        round_line(f, round); /* held by o[] */
        fprintf(f, "<p>No entries and no runs in progress yet on %s.</p></section>\n", empty);
    }
    for (int t = 0; t < EEB_TASK_COUNT; t++)
        json_decref(o[t]);
    if (rc)
        return rc;
    fputs(eeb_srv_sort_script, f);
    fputs("</body></html>\n", f);
    return EEB_OK;
}

static int make_page(struct eeb_srv_call *k, void *arg, char **body, size_t *len, char *err,
                     size_t errlen)
{
    FILE *m = open_memstream(body, len);
    if (!m)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = page(k, arg, m, err, errlen);
    if (fclose(m) != 0 && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    return rc;
}

/* GET / and /leaderboard[?task=T][&round=R][&provenance=P][&device=D][&division=D][&all=1]:
 * an unknown round is a 404 (eeb_srv_ranking's EEB_ENODATA). */
enum MHD_Result eeb_srv_page_board(struct eeb_srv_call *k)
{
    struct eeb_srv_ranking_query q;
    enum MHD_Result sent;
    char key[200] = "page ";
    if (!eeb_srv_ranking_query(k, &q, 0, &sent))
        return sent;
    /* the JSON's key under a prefix of its own: a page is never the answer kept for it */
    eeb_srv_ranking_key(&q, key + 5, sizeof key - 5);
    return eeb_srv_kept_answer(k, key, "text/html; charset=utf-8", make_page, &q);
}
