/*
 * test_board.c - the server's pages in headless Chromium.  The run list
 * (GET /runs, server/board.c): its column sort clicked in the det and video
 * tables (and the empty cls one), the order and the sort mark checked, and
 * no script error thrown.  The leaderboard (GET /leaderboard,
 * server/ranking_page.c): a round's entries ranked in the HTML as served,
 * then sorted, plotted and greyed in Chromium.  Runs, entries and rounds
 * are written into the server's tables as the server stores them
 * (store.c), so that no test set is needed.
 *
 * Sections: the run list; the leaderboard.
 */
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "tests/server/http_client.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the run list: the server's tables ---- */

struct scored_run {
    enum eeb_task task;
    const char *team; /* its team, by name */
    const char *verdict;
    double s, m_p; /* s NAN: not passed (NULL in the table) */
};

/* Teams whose names sort otherwise than their runs' S, and runs of det
 * (1 to 4) and video (5 to 8): run 3 and 7 failed.  M_p 0.1 is a stored
 * double that "%.17g" writes as 0.10000000000000001. */
static const char *const teams[] = {"carol", "alice", "bob", "dave"};
static const struct scored_run scored_runs[] = {
    {EEB_TASK_DET, "carol", "pass", 0.50, 0.30},     {EEB_TASK_DET, "alice", "pass", 0.70, 0.50},
    {EEB_TASK_DET, "bob", "fail", NAN, 0.90},        {EEB_TASK_DET, "dave", "pass", 0.90, 0.10},
    {EEB_TASK_VIDEO, "alice", "pass", 0.20, 0.60},   {EEB_TASK_VIDEO, "dave", "pass", 0.60, 0.20},
    {EEB_TASK_VIDEO, "carol", "invalid", NAN, 0.40}, {EEB_TASK_VIDEO, "bob", "pass", 0.40, 0.70},
};

static void add_scored_runs(const char *sdb)
{
    char err[512], token[EEB_TOKEN_HEX], uuid[37];
    for (size_t i = 0; i < sizeof teams / sizeof *teams; i++)
        cr_assert_eq(eeb_server_add_team(sdb, teams[i], token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_rundb *db;
    cr_assert_eq(eeb_rundb_open(sdb, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s", err);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(sdb, &h), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(
        sqlite3_prepare_v2(h,
                           "INSERT INTO team_runs (run_id, team_id, state, official, device, "
                           "provenance, registered_utc_ns, completed_utc_ns, verdict, s, "
                           "m_u, m_t, m_p, m_s, t_s, energy_j, why) VALUES (?1, (SELECT "
                           "id FROM teams WHERE name = ?2), 'scored', 1, 'zcu104', "
                           "'modeled', 1, 2, ?3, ?4, 0.25, 0.5, ?5, 0.75, 12.5, 60, '')",
                           -1, &st, NULL),
        SQLITE_OK, "%s", sqlite3_errmsg(h));
    for (size_t i = 0; i < sizeof scored_runs / sizeof *scored_runs; i++) {
        const struct scored_run *e = &scored_runs[i];
        const struct eeb_run_new rn = {
            .task = e->task, .backend = "emu", .t_max_s = 30, .p_max_w = 10, .rules_version = "1"};
        int64_t run;
        cr_assert_eq(eeb_rundb_run_create(db, &rn, &run, uuid, err, sizeof err), EEB_OK, "%s", err);
        cr_assert_eq(run, (int64_t)i + 1);
        sqlite3_bind_int64(st, 1, run);
        sqlite3_bind_text(st, 2, e->team, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, e->verdict, -1, SQLITE_STATIC);
        if (!isnan(e->s))
            sqlite3_bind_double(st, 4, e->s);
        else
            sqlite3_bind_null(st, 4);
        sqlite3_bind_double(st, 5, e->m_p);
        cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(h));
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    eeb_rundb_close(db);
}

/* ---- a page fetched, and its script errors caught ---- */

/* GET path of the server on port: the body of a 200 (free it). */
static char *get_page(int port, const char *path)
{
    struct reply r = request(port, "GET", path, NULL, 0, NULL);
    cr_assert_eq(r.code, 200, "%s: %ld %s", path, r.code, r.body);
    return r.body;
}

/* Put at the head of the page: every error thrown by a script, kept. */
static const char catch_errors[] =
    "<head><script>\n"
    "window.errors = [];\n"
    "window.addEventListener('error', function (e) { window.errors.push(e.message); });\n"
    "</script>";

/* ---- the run list's page ---- */

/* Put at the end: clicks headers of each table, and after each click
 * writes the table's run ids in order and the header's aria-sort and text
 * (with its mark).  Columns: 1 team, 3 S, 6 M_p. */
static const char click_headers[] =
    "<script>\n"
    "(function () {\n"
    "  var out = [];\n"
    "  function runs(t) {\n"
    "    return Array.from(document.querySelectorAll('#runs-' + t + '-modeled-none-10 tbody tr'))\n"
    "      .map(function (r) { return r.cells.length > 2 ? r.cells[2].textContent : '-'; })\n"
    "      .join(',');\n"
    "  }\n"
    "  function click(t, col) {\n"
    "    var th = document.querySelectorAll('#runs-' + t + '-modeled-none-10 thead th')[col];\n"
    "    th.click();\n"
    "    out.push(t + ' ' + col + ': ' + runs(t) + ' ' + th.getAttribute('aria-sort') + ' '\n"
    "             + th.textContent);\n"
    "  }\n"
    "  out.push('det: ' + runs('det'));\n"
    "  ['det', 'video'].forEach(function (t) { [3, 3, 1, 6].forEach(function (c) { click(t, c); "
    "}); "
    "});\n"
    "  var marked = document.querySelectorAll('#runs-det-modeled-none-10 th[aria-sort]').length;\n"
    "  out.push('det marked: ' + marked);\n"
    "  out.push('errors: ' + window.errors.length + ' ' + window.errors.join(' / '));\n"
    "  var pre = document.createElement('pre');\n"
    "  pre.id = 'result';\n"
    "  pre.textContent = out.join('\\n');\n"
    "  document.body.appendChild(pre);\n"
    "})();\n"
    "</script>\n</body>";

Test(board, every_table_sorts_by_any_column_and_marks_it, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char sdb[300], err[512];
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    add_scored_runs(sdb);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    char *page = get_page(eeb_server_port(s), "/runs");
    eeb_server_stop(s);
    /* a table per task, provenance, division and P_max; none for cls, whose
     * lack of runs a line says */
    assert_has(page, "<section id=\"runs-task-det\">");
    assert_has(page, "<table class=\"board\" id=\"runs-det-modeled-none-10\"><caption>modeled, "
                     "no round's entry, 10 W P<sub>max</sub></caption>");
    cr_expect_null(strstr(page, "id=\"runs-task-cls\""), "an empty section");
    assert_has(page, "<p class=\"none\" id=\"no-runs\">cls: no scored runs yet.</p>");
    /* the sort keys are the values, without a double's representation digits */
    cr_expect(strstr(page, "<td data-v=\"0.1\">0.1000</td>"), "%s", page);
    cr_expect_null(strstr(page, "00000000"), "%s", page);

    /* the page as served, with the catcher before its scripts and the
     * clicks after them, in Chromium */
    char *head = test_replace(page, "<head>", catch_errors);
    char *driven = test_replace(head, "</body>", click_headers), path[320], file[340];
    snprintf(path, sizeof path, "%s/board.html", dir);
    test_write_file(path, driven, strlen(driven));
    snprintf(file, sizeof file, "file://%s", path);
    char *dom = test_chromium(dir, file, NULL);
    const char *result = strstr(dom, "<pre id=\"result\">");
    cr_assert_not_null(result, "the clicks wrote nothing: %s", dom);
    static const char *const want[] = {
        /* as served: ranked by S, the failed run last */
        "det: 4,2,1,3\n",
        /* S: best first, then lowest first; a run without S last both ways */
        "det 3: 4,2,1,3 descending S \u25bc\n",
        "det 3: 1,2,4,3 ascending S \u25b2\n",
        "det 1: 2,3,1,4 ascending team \u25b2\n",
        "det 6: 4,1,2,3 ascending M_p \u25b2\n",
        "video 3: 6,8,5,7 descending S \u25bc\n",
        "video 3: 5,8,6,7 ascending S \u25b2\n",
        "video 1: 5,8,7,6 ascending team \u25b2\n",
        "video 6: 6,7,5,8 ascending M_p \u25b2\n",
        /* one column of a table is marked at a time */
        "det marked: 1\n",
        "errors: 0 </pre>",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(result, want[i]), "no '%s' in:\n%.1500s", want[i], result);
    free(dom), free(driven), free(head), free(page);
}

/* The sort key is exact: two S that differ past the 15th digit (the
 * text people see rounds them alike) sort apart, and 0.1 stays "0.1". */
Test(board, sort_keys_are_exact_and_without_noise)
{
    char a[EEB_NUMBER_MAX], b[EEB_NUMBER_MAX];
    double x = 0.707937, y = nextafter(x, 1); /* the next double up */
    cr_assert_str_eq(eeb_number_text(x, a), eeb_number_text(y, b));
    cr_assert_str_neq(eeb_number_exact(x, a), eeb_number_exact(y, b));
    cr_assert_eq(strtod(a, NULL), x);
    cr_assert_eq(strtod(b, NULL), y);
    cr_assert_str_eq(eeb_number_exact(0.1, a), "0.1");
}

/* ---- the leaderboard: a round's entries ---- */

/* A run of an entry: scored with its verdict (NULL: still registered). */
struct entry_run {
    const char *verdict;
    double s, energy_j, m_s, t_s;
};

/* An entry of the round, on cls in its one 10 W tier. */
struct round_entry {
    const char *team, *name, *division, *device, *provenance;
    int nruns;
    struct entry_run runs[3];
};

/* Round r1: 3 runs an entry, their median.  The entries, made in this
 * order (entry ids 1 to 8), their runs numbered on from 1 (run ids in the
 * comments), and where they stand, worked out by hand (medians of three:
 * the middle value):
 *
 *   a1 alice zcu104   runs 1-3    S 0.65 (0.60-0.70)  E 45  M_s 0.80  ranked
 *   b1 bob   ultra96  runs 4-6    S 0.80 (0.75-0.90)  E 65  M_s 0.85  ranked, 1st
 *   c1 carol zcu104   runs 7-9    S 0.65 (0.60-0.70)  E 52  M_s 0.78  ranked, as a1
 *   a2 alice zcu104   runs 10-12  S 0.52 (0.50-0.55)  E 30  M_s 0.70  alice's second
 *   d1 dave  ultra96  run 13      fail                                  failed
 *   e1 erin  ultra96  runs 14-15  one scored, one registered            running
 *   f1 frank ultra96  runs 16-18  S 0.42 (0.40-0.45)  E 21  M_s 0.61  ranked
 *   g1 grace zcu104   runs 19-21  S 0.30               E 80  M_s 0.50  measured: a table of its own
 *
 * Declared table, each team's best: b1 1, c1 2 and a1 2 (equal S; the
 * newer first), f1 4, then e1 running, d1 failed; a2 hidden (alice's a1 is
 * better), and with all=1 a2 4th, f1 5th.  Pareto fronts per device: on
 * zcu104 a1 beats c1 (less energy, more M_s), a2 uses the least energy; on
 * ultra96 f1 and b1, joined by a line.  (A table, read by its columns:
 * clang-format is kept off it.) */
/* clang-format off */
static const struct round_entry round_entries[] = {
    {"alice", "a1", "closed", "zcu104", "declared", 3,
     {{"pass", 0.70, 50, 0.80, 10}, {"pass", 0.60, 40, 0.78, 12}, {"pass", 0.65, 45, 0.82, 11}}},
    {"bob", "b1", "closed", "ultra96", "declared", 3,
     {{"pass", 0.80, 60, 0.85, 20}, {"pass", 0.75, 70, 0.86, 22}, {"pass", 0.90, 65, 0.84, 21}}},
    {"carol", "c1", "closed", "zcu104", "declared", 3,
     {{"pass", 0.65, 50, 0.79, 9}, {"pass", 0.60, 55, 0.77, 10}, {"pass", 0.70, 52, 0.78, 11}}},
    {"alice", "a2", "closed", "zcu104", "declared", 3,
     {{"pass", 0.50, 30, 0.70, 8}, {"pass", 0.55, 31, 0.71, 8}, {"pass", 0.52, 29, 0.69, 8}}},
    {"dave", "d1", "closed", "ultra96", "declared", 1, {{"fail", NAN, 90, 0.20, 30}}},
    {"erin", "e1", "closed", "ultra96", "declared", 2, {{"pass", 0.50, 40, 0.70, 10}, {.verdict = NULL}}},
    {"frank", "f1", "closed", "ultra96", "declared", 3,
     {{"pass", 0.40, 20, 0.60, 5}, {"pass", 0.45, 22, 0.62, 6}, {"pass", 0.42, 21, 0.61, 5}}},
    {"grace", "g1", "closed", "zcu104", "measured", 3,
     {{"pass", 0.30, 80, 0.50, 30}, {"pass", 0.30, 80, 0.50, 30}, {"pass", 0.30, 80, 0.50, 30}}},
};
/* clang-format on */

/* Why d1's run failed: a team's text, which the page must escape. */
#define D1_WHY "accuracy <0.3 & below the floor"

/* 2026-01-01T00:00:00Z: run n completed n minutes later. */
#define T0_NS 1767225600000000000LL

/* The systems under test the runs' configurations name, as the server
 * keeps them (register.c, runs.c's begin): bob's first run one system, his
 * later two another, whose name and version the page must escape; carol's
 * a name without a version; the others' none. */
#define BOB_OLD_SYSTEM                                                                             \
    "{\"sut\": {\"name\": \"bob-old\", \"version\": \"1.0\", \"kind\": \"library\"}}"
#define BOB_SYSTEM                                                                                 \
    "{\"sut\": {\"name\": \"bob's <a>\", \"version\": \"2&1\", \"kind\": \"library\"}}"
#define CAROL_SYSTEM "{\"sut\": {\"name\": \"carol-sut\", \"kind\": \"exec\"}}"

static const char *system_config(const char *team, int run_of_entry)
{
    return strcmp(team, "bob") == 0     ? (run_of_entry ? BOB_SYSTEM : BOB_OLD_SYSTEM)
           : strcmp(team, "carol") == 0 ? CAROL_SYSTEM
                                        : NULL;
}

/* A run of team in the run tables and the server's (entry 0: of none),
 * its configuration config_json (NULL: {}). */
static int64_t add_team_run(struct eeb_rundb *db, sqlite3 *h, const char *team, int64_t entry,
                            const struct entry_run *r, const char *device, const char *provenance,
                            const char *config_json)
{
    char err[512], uuid[37];
    const struct eeb_run_new rn = {.task = EEB_TASK_CLS,
                                   .backend = "xrt",
                                   .config_json = config_json,
                                   .t_max_s = 30,
                                   .p_max_w = 10,
                                   .rules_version = "1"};
    int64_t run;
    cr_assert_eq(eeb_rundb_run_create(db, &rn, &run, uuid, err, sizeof err), EEB_OK, "%s", err);
    sqlite3_stmt *st;
    cr_assert_eq(
        sqlite3_prepare_v2(h,
                           "INSERT INTO team_runs (run_id, team_id, state, official, device, "
                           "provenance, registered_utc_ns, completed_utc_ns, verdict, s, m_u, "
                           "m_t, m_p, m_s, t_s, energy_j, why, entry_id) VALUES (?1, (SELECT id "
                           "FROM teams WHERE name = ?2), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0.25, "
                           "0.5, 0.5, ?11, ?12, ?13, ?14, ?15)",
                           -1, &st, NULL),
        SQLITE_OK, "%s", sqlite3_errmsg(h));
    int scored = r->verdict != NULL;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, team, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3,
                      scored  ? "scored"
                      : entry ? "registered"
                              : "complete",
                      -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 4, entry != 0);
    sqlite3_bind_text(st, 5, device, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, provenance, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, T0_NS);
    if (scored || !entry) /* a run still registered has not completed */
        sqlite3_bind_int64(st, 8, T0_NS + run * 60000000000LL);
    if (scored) {
        sqlite3_bind_text(st, 9, r->verdict, -1, SQLITE_STATIC);
        if (!isnan(r->s))
            sqlite3_bind_double(st, 10, r->s);
        sqlite3_bind_double(st, 11, r->m_s);
        sqlite3_bind_double(st, 12, r->t_s);
        sqlite3_bind_double(st, 13, r->energy_j);
        sqlite3_bind_text(st, 14, strcmp(r->verdict, "pass") ? D1_WHY : "", -1, SQLITE_STATIC);
    }
    if (entry)
        sqlite3_bind_int64(st, 15, entry);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE, "%s", sqlite3_errmsg(h));
    sqlite3_finalize(st);
    return run;
}

/* The server's database at sdb with round r1 open and its entries, and an
 * unofficial run of alice's still being scored (run 22). */
static void add_round(const char *sdb)
{
    static const char *const names[] = {"alice", "bob", "carol", "dave", "erin", "frank", "grace"};
    char err[512], token[EEB_TOKEN_HEX];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        cr_assert_eq(eeb_server_add_team(sdb, names[i], token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_round round;
    eeb_round_default(&round, "r1");
    round.runs = 3;
    cr_assert_eq(eeb_server_round_open(sdb, &round, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(round.task[EEB_TASK_CLS].tiers_w[0], 10, "cls's tier is the ids' 10 W");

    struct eeb_rundb *db;
    cr_assert_eq(eeb_rundb_open(sdb, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s", err);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(sdb, &h), SQLITE_OK);
    sqlite3_busy_timeout(h, 5000);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(
                     h,
                     "INSERT INTO entries (round_id, team_id, task, name, division, p_max_w, "
                     "device, backend, provenance, created_utc_ns) VALUES ((SELECT id FROM "
                     "rounds WHERE name = 'r1'), (SELECT id FROM teams WHERE name = ?1), 'cls', "
                     "?2, ?3, 10, ?4, 'xrt', ?5, ?6) RETURNING id",
                     -1, &st, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(h));
    for (size_t i = 0; i < sizeof round_entries / sizeof *round_entries; i++) {
        const struct round_entry *e = &round_entries[i];
        sqlite3_bind_text(st, 1, e->team, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, e->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, e->division, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, e->device, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, e->provenance, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, T0_NS);
        cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "%s", sqlite3_errmsg(h));
        int64_t entry = sqlite3_column_int64(st, 0);
        cr_assert_eq(entry, (int64_t)i + 1);
        sqlite3_reset(st);
        for (int j = 0; j < e->nruns; j++)
            add_team_run(db, h, e->team, entry, &e->runs[j], e->device, e->provenance,
                         system_config(e->team, j));
    }
    sqlite3_finalize(st);
    const struct entry_run unscored = {.verdict = NULL};
    cr_assert_eq(add_team_run(db, h, "alice", 0, &unscored, "zcu104", "declared", NULL), 22);
    sqlite3_close(h);
    eeb_rundb_close(db);
}

/* ---- the leaderboard's page ---- */

/* The server on sdb, on a free port (*port). */
static struct eeb_server *serve(const char *sdb, int *port)
{
    char err[512];
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    *port = eeb_server_port(s);
    return s;
}

/* Expects each of parts in page, each after the one before. */
static void expect_in_order(const char *page, const char *const *parts, size_t n)
{
    const char *at = page;
    for (size_t i = 0; i < n; i++) {
        const char *found = strstr(at, parts[i]);
        cr_expect_not_null(found, "no '%s' after '%s' in:\n%s", parts[i], i ? parts[i - 1] : "",
                           page);
        at = found ? found + strlen(parts[i]) : at;
    }
}

static size_t count_of(const char *page, const char *part)
{
    size_t n = 0;
    for (const char *at = page; (at = strstr(at, part)); at += strlen(part))
        n++;
    return n;
}

/* The entries of the round as add_round wrote them, in the page's order. */
static const char *const ranked_in_order[] = {
    /* every round, linked to its standings */
    "<nav id=\"rounds\"><h2>Rounds</h2>\n<ul>\n<li><a href=\"/leaderboard?round=r1\">r1</a>, open, "
    "<time>",
    " <b>(shown below)</b></li>\n</ul></nav>",
    "Round <b>r1</b>, open, rules ",
    ": an entry is 3 runs, ranked by the <b>median</b> of their S; a team registers at most 20 "
    "official runs a task.",
    /* measured figures are never ranked with declared ones */
    "<table class=\"board entries\" id=\"entries-cls-measured-closed-10\"><caption>measured, "
    "closed "
    "division, 10 W P<sub>max</sub> tier</caption>",
    "<td data-v=\"1\">1</td><td>grace</td><td>g1</td>",
    /* one ranked entry: no plot, and why */
    "<p class=\"no-plot\" id=\"pareto-cls-measured-closed-10\">No plot of energy against "
    "M<sub>s</sub>: one entry of this table is ranked, and a plot needs two to compare</p>",
    "<table class=\"board entries\" id=\"entries-cls-declared-closed-10\"><caption>declared, "
    "closed "
    "division, 10 W P<sub>max</sub> tier</caption>",
    /* b1: the median of 0.80, 0.75, 0.90, and of its E, M_s, T */
    "<tr class=\"ranked\"><td data-v=\"1\">1</td><td>bob</td><td>b1</td><td>closed</td><td>xrt</"
    "td><td class=\"system\">bob&#39;s &lt;a&gt; <span class=\"version\">2&amp;1</span></"
    "td><td>ultra96</"
    "td><td data-v=\"0.8\">0.8000</td>",
    "0.7500&ndash;0.9000</td><td data-v=\"0.85\">0.8500</td><td data-v=\"65\">65.0</td><td "
    "data-v=\"21\">21.0</td><td data-v=\"3\">3/3: <a href=\"/runs/4\">4</a> <a "
    "href=\"/runs/5\">5</a> <a href=\"/runs/6\">6</a></td><td>2026-01-01 00:06:00</td><td>ranked"
    "</td></tr>",
    /* c1 and a1: both 0.65, one rank, the newer entry first */
    "<td data-v=\"2\">2</td><td>carol</td><td>c1</td><td>closed</td><td>xrt</td><td "
    "class=\"system\">"
    "carol-sut</td><td>zcu104</td>",
    "<td data-v=\"0.65\">0.6500</td>",
    "<td data-v=\"2\">2</td><td>alice</td><td>a1</td><td>closed</td><td>xrt</td><td "
    "class=\"system\">-</td>",
    "<td data-v=\"0.65\">0.6500</td>",
    "0.6000&ndash;0.7000</td><td data-v=\"0.8\">0.8000</td><td data-v=\"45\">45.0</td><td "
    "data-v=\"11\">11.0</td>",
    "<td data-v=\"4\">4</td><td>frank</td><td>f1</td><td>closed</td>",
    "<td data-v=\"0.42\">0.4200</td>",
    "<tr class=\"running\"><td data-v=\"\">-</td><td>erin</td><td>e1</td>",
    "<td data-v=\"1\">1/3: <a href=\"/runs/14\">14</a> <a href=\"/runs/15\">15</a></td>",
    "running: 1 of 3 runs scored</td></tr>",
    "<tr class=\"failed\"><td data-v=\"\">-</td><td>dave</td><td>d1</td>",
    "failed: run 13: fail: accuracy &lt;0.3 &amp; below the floor</td></tr>",
    "<svg class=\"pareto\" id=\"pareto-cls-declared-closed-10\"",
    /* the runs in progress, the newest first */
    "<table class=\"board running\" id=\"running-cls\">",
    "<a href=\"/runs/22\">22</a></td><td>alice</td><td>-</td><td>-</td><td>complete "
    "(unofficial)</td><td data-v=\"1\">1</td><td>20", /* its chain's first link, made now */
    "<a href=\"/runs/15\">15</a></td><td>erin</td><td>e1</td><td>r1</td><td>registered</td>",
    /* the other tasks: no section, a line */
    "<section id=\"no-entries\"><p class=\"round\">Round <b>r1</b>",
    "<p>No entries and no runs in progress yet on det, video.</p></section>",
};

Test(board, leaderboard_ranks_each_teams_best_entry, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char sdb[300];
    int port;
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    add_round(sdb);
    struct eeb_server *s = serve(sdb, &port);
    char *page = get_page(port, "/leaderboard"), *home = get_page(port, "/");
    char *all = get_page(port, "/leaderboard?all=1"), *cls = get_page(port, "/?task=cls");
    struct reply unknown_round = request(port, "GET", "/leaderboard?round=r0", NULL, 0, NULL);
    struct reply bad_division = request(port, "GET", "/leaderboard?division=both", NULL, 0, NULL);
    free(unknown_round.body), free(bad_division.body);
    eeb_server_stop(s);

    expect_in_order(page, ranked_in_order, sizeof ranked_in_order / sizeof *ranked_in_order);
    cr_expect_str_eq(home, page);
    assert_has(page, "<a href=\"/runs\">/runs</a>");
    /* alice's second entry, not her best, is left out... */
    cr_expect_null(strstr(page, "<td>a2</td>"));
    cr_expect_null(strstr(page, "data-entry=\"a2\""));
    assert_has(page, "<a href=\"/leaderboard?all=1\">every entry</a>");
    /* ...its points: the ranked entries shown; on the fronts b1, a1 and f1
     * (c1 is beaten by a1), and g1, alone in its table, plotted nowhere; a
     * line joins ultra96's two */
    cr_expect_eq(count_of(page, "<circle"), 4);
    cr_expect_eq(count_of(page, "<circle class=\"pareto\""), 3);
    cr_expect_eq(count_of(page, "<svg class=\"pareto\""), 1);
    cr_expect_null(strstr(page, "id=\"task-det\""), "a section without entries");
    assert_has(page, "<circle cx=");
    cr_expect_eq(count_of(page, "<polyline"), 1);

    /* ...and shown with all=1, 4th of the table, on zcu104's front with a1 */
    static const char *const every[] = {
        "<td data-v=\"1\">1</td><td>bob</td><td>b1</td>",
        "<td data-v=\"2\">2</td><td>carol</td><td>c1</td>",
        "<td data-v=\"2\">2</td><td>alice</td><td>a1</td>",
        "<td data-v=\"4\">4</td><td>alice</td><td>a2</td>",
        "<td data-v=\"5\">5</td><td>frank</td><td>f1</td>",
    };
    expect_in_order(all, every, sizeof every / sizeof *every);
    assert_has(all, "data-team=\"alice\" data-entry=\"a2\" data-e=\"30\" data-ms=\"0.7\"");
    cr_expect_eq(count_of(all, "<polyline"), 2);
    assert_has(all, "\">each team's best only</a>");

    assert_has(cls, "id=\"task-cls\"");
    cr_expect_null(strstr(cls, "id=\"task-det\""));
    cr_expect_eq(unknown_round.code, 404);
    cr_expect_eq(bad_division.code, 400);
    free(page), free(home), free(all), free(cls);
}

Test(board, leaderboard_without_a_round_says_so, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char sdb[300], err[512], token[EEB_TOKEN_HEX];
    int port;
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    cr_assert_eq(eeb_server_add_team(sdb, "alice", token, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_rundb *db;
    cr_assert_eq(eeb_rundb_open(sdb, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s", err);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(sdb, &h), SQLITE_OK);
    const struct entry_run unscored = {.verdict = NULL};
    cr_assert_eq(add_team_run(db, h, "alice", 0, &unscored, "zcu104", "declared", NULL), 1);
    sqlite3_close(h);
    eeb_rundb_close(db);

    struct eeb_server *s = serve(sdb, &port);
    char *page = get_page(port, "/");
    eeb_server_stop(s);
    static const char *const want[] = {
        "<section id=\"task-cls\">",
        "No round is open: the organizer opens one with <code>eeb serve admin "
        "open-round</code>; every scored run is listed at <a href=\"/runs\">/runs</a>.",
        "<table class=\"board running\" id=\"running-cls\">",
        "<a href=\"/runs/1\">1</a></td><td>alice</td><td>-</td><td>-</td><td>complete "
        "(unofficial)</td>",
    };
    expect_in_order(page, want, sizeof want / sizeof *want);
    cr_expect_null(strstr(page, "<table class=\"board entries\""));
    free(page);
}

/* Put at the end of the leaderboard: reads the declared table's rows
 * (team/entry) as served, after S is clicked twice and after E once, its
 * scatter's points and fronts, how a failed row is coloured, the runs in
 * progress, and the errors thrown. */
static const char drive_leaderboard[] =
    "<script>\n"
    "(function () {\n"
    "  var out = [], T = '#entries-cls-declared-closed-10';\n"
    "  function rows() {\n"
    "    return Array.from(document.querySelectorAll(T + ' tbody tr')).map(function (r) {\n"
    "      return r.cells[1].textContent + '/' + r.cells[2].textContent;\n"
    "    }).join(',');\n"
    "  }\n"
    "  function click(col) {\n"
    "    var th = document.querySelectorAll(T + ' thead th')[col];\n"
    "    th.click();\n"
    "    out.push(th.textContent + ' ' + th.getAttribute('aria-sort') + ': ' + rows());\n"
    "  }\n"
    "  out.push('served: ' + rows());\n"
    "  click(7); click(7); click(10);\n"
    "  var svg = document.getElementById('pareto-cls-declared-closed-10');\n"
    "  var circles = Array.from(svg.querySelectorAll('circle'));\n"
    "  out.push('points: ' + circles.length);\n"
    "  out.push('front: ' + circles.filter(function (c) { return c.classList.contains('pareto'); "
    "})\n"
    "    .map(function (c) { return c.dataset.team + '/' + c.dataset.entry; }).join(','));\n"
    "  out.push('lines: ' + svg.querySelectorAll('polyline').length);\n"
    "  var colours = {};\n"
    "  circles.forEach(function (c) { colours[c.getAttribute('stroke')] = 1; });\n"
    "  out.push('colours: ' + Object.keys(colours).length);\n"
    "  var b1 = svg.querySelector('[data-entry=b1]'), f1 = svg.querySelector('[data-entry=f1]');\n"
    "  out.push('b1 right of and above f1: ' + (+b1.getAttribute('cx') > "
    "+f1.getAttribute('cx'))\n"
    "           + ' ' + (+b1.getAttribute('cy') < +f1.getAttribute('cy')));\n"
    "  out.push('b1 title: ' + b1.querySelector('title').textContent);\n"
    "  out.push('failed: ' + getComputedStyle(document.querySelector(T + ' tr.failed td'))"
    ".color);\n"
    "  out.push('ranked: ' + getComputedStyle(document.querySelector(T + ' tr.ranked td'))"
    ".color);\n"
    "  out.push('in progress: ' + Array.from(document.querySelectorAll('#running-cls tbody tr'))\n"
    "    .map(function (r) { return r.cells[0].textContent; }).join(','));\n"
    "  out.push('errors: ' + window.errors.length + ' ' + window.errors.join(' / '));\n"
    "  var pre = document.createElement('pre');\n"
    "  pre.id = 'result';\n"
    "  pre.textContent = out.join('\\n');\n"
    "  document.body.appendChild(pre);\n"
    "})();\n"
    "</script>\n</body>";

Test(board, leaderboard_sorts_and_plots_in_chromium, .timeout = 180)
{
    const char *dir = test_tmpdir();
    char sdb[300], path[320], file[340], png[320];
    int port;
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    add_round(sdb);
    struct eeb_server *s = serve(sdb, &port);
    char *page = get_page(port, "/leaderboard");
    eeb_server_stop(s);

    /* the page as served, looked at once: the plots drawn in their
     * devices' colours (b1's ultra96 first, Okabe-Ito blue) */
    snprintf(path, sizeof path, "%s/leaderboard.html", dir);
    test_write_file(path, page, strlen(page));
    snprintf(file, sizeof file, "file://%s", path);
    snprintf(png, sizeof png, "%s/leaderboard.png", dir);
    free(test_chromium(dir, file, png));
    cr_expect_gt(test_count_colour(png, 0x0072b2), 50, "see %s", png);

    char *head = test_replace(page, "<head>", catch_errors);
    char *driven = test_replace(head, "</body>", drive_leaderboard);
    snprintf(path, sizeof path, "%s/driven.html", dir);
    test_write_file(path, driven, strlen(driven));
    snprintf(file, sizeof file, "file://%s", path);
    char *dom = test_chromium(dir, file, NULL);
    const char *result = strstr(dom, "<pre id=\"result\">");
    cr_assert_not_null(result, "the script wrote nothing: %s", dom);
    static const char *const want[] = {
        "served: bob/b1,carol/c1,alice/a1,frank/f1,erin/e1,dave/d1\n",
        /* S best first, then lowest first; entries without S last both ways */
        "S \u25bc descending: bob/b1,carol/c1,alice/a1,frank/f1,erin/e1,dave/d1\n",
        "S \u25b2 ascending: frank/f1,carol/c1,alice/a1,bob/b1,erin/e1,dave/d1\n",
        "E (J) \u25b2 ascending: frank/f1,alice/a1,carol/c1,bob/b1,erin/e1,dave/d1\n",
        "points: 4\n",
        "front: bob/b1,alice/a1,frank/f1\n",
        "lines: 1\n",
        "colours: 2\n",
        "b1 right of and above f1: true true\n",
        "b1 title: bob / b1 on ultra96: E 65.0 J, M_s 0.8500, on its device's Pareto front\n",
        "failed: rgb(118, 118, 118)\n",
        "ranked: rgb(34, 34, 34)\n",
        "in progress: 22,15\n",
        "errors: 0 </pre>",
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(result, want[i]), "no '%s' in:\n%.2000s", want[i], result);
    free(dom), free(driven), free(head), free(page);
}

/* ---- grouped as the board groups, and a revoked team marked ---- */

/* The run list of round r1's runs: a table per provenance (measured g1's
 * runs, then the declared ones), each ranked from 1; and alice, revoked by
 * the organizer, marked on the run list, the round's standings and the
 * runs in progress, over HTTP as anyone reads them. */
Test(board, runs_are_grouped_as_the_board_and_a_revoked_team_is_marked, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char sdb[300], err[512];
    int port;
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    add_round(sdb);
    cr_assert_eq(eeb_server_team_revoke(sdb, "alice", "token posted in a public repository", err,
                                        sizeof err),
                 EEB_OK, "%s", err);
    struct eeb_server *s = serve(sdb, &port);
    char *runs = get_page(port, "/runs"), *standings = get_page(port, "/leaderboard?round=r1");
    struct reply list = request(port, "GET", "/api/v1/runs?task=cls", NULL, 0, NULL);
    struct reply board = request(port, "GET", "/api/v1/leaderboard?task=cls&all=1", NULL, 0, NULL);
    eeb_server_stop(s);

    static const char *const grouped[] = {
        "<section id=\"runs-task-cls\">",
        "<table class=\"board\" id=\"runs-cls-measured-closed-10\"><caption>measured, closed "
        "division, 10 W P<sub>max</sub></caption>",
        "<td data-v=\"1\">1</td><td>grace</td>",
        "<td data-v=\"3\">3</td><td>grace</td>",
        "</tbody></table>",
        "<table class=\"board\" id=\"runs-cls-declared-closed-10\"><caption>declared, closed "
        "division, 10 W P<sub>max</sub></caption>",
        /* b1's third run, S 0.90, first of its own table */
        "<tr class=\"pass\"><td data-v=\"1\">1</td><td>bob</td><td data-v=\"6\">",
        "<td>alice <span class=\"revoked\" title=\"the organizer revoked this team's "
        "token\">revoked</span></td>",
        /* d1's failed run after every passing one */
        "<tr class=\"fail\"><td data-v=\"\">-</td><td>dave</td>",
        "</section>",
        "<p class=\"none\" id=\"no-runs\">det, video: no scored runs yet.</p>",
    };
    expect_in_order(runs, grouped, sizeof grouped / sizeof *grouped);
    cr_expect_null(strstr(runs, "<td>bob <span class=\"revoked\""), "bob is not revoked");

    /* the JSON: in table order, each table ranked from 1, alice marked */
    json_t *o = json_loads(list.body, 0, NULL), *rows = json_object_get(o, "runs");
    cr_assert(json_is_array(rows), "%s", list.body);
    const json_t *first = json_array_get(rows, 0), *fourth = json_array_get(rows, 3);
    cr_expect_str_eq(json_string_value(json_object_get(first, "provenance")), "measured");
    cr_expect_eq(json_integer_value(json_object_get(first, "rank")), 1);
    cr_expect_str_eq(json_string_value(json_object_get(fourth, "provenance")), "declared");
    cr_expect_eq(json_integer_value(json_object_get(fourth, "rank")), 1, "%s", list.body);
    cr_expect_str_eq(json_string_value(json_object_get(fourth, "division")), "closed");
    int marked = 0, unmarked = 0;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        int alice = strcmp(json_string_value(json_object_get(row, "team")), "alice") == 0;
        marked += alice && json_is_true(json_object_get(row, "revoked"));
        unmarked += !alice && json_is_false(json_object_get(row, "revoked"));
    }
    cr_expect_eq(marked, 6, "alice's six scored runs: %s", list.body); /* a1's, a2's */
    cr_expect_eq(marked + unmarked, (int)json_array_size(rows), "%s", list.body);
    json_decref(o);

    /* the round's standings: her entry and her run in progress, marked */
    static const char *const standing[] = {
        "<td data-v=\"2\">2</td><td>alice <span class=\"revoked\"",
        "</span></td><td>a1</td>",
        "<a href=\"/runs/22\">22</a></td><td>alice <span class=\"revoked\"",
    };
    expect_in_order(standings, standing, sizeof standing / sizeof *standing);
    cr_expect_null(strstr(standings, "<td>carol <span class=\"revoked\""));
    o = json_loads(board.body, 0, NULL);
    json_t *entries = json_object_get(json_array_get(json_object_get(o, "tables"), 1), "entries");
    int alice_entries = 0;
    json_array_foreach(entries, i, row)
    {
        int alice = strcmp(json_string_value(json_object_get(row, "team")), "alice") == 0;
        cr_expect_eq(json_is_true(json_object_get(row, "revoked")), alice, "%s", board.body);
        alice_entries += alice;
    }
    cr_expect_eq(alice_entries, 2, "%s", board.body);
    cr_expect(
        json_is_true(json_object_get(json_array_get(json_object_get(o, "running"), 0), "revoked")),
        "%s", board.body);
    json_decref(o);
    free(list.body), free(board.body), free(runs), free(standings);
}
