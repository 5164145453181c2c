/*
 * test_board.c - the leaderboard page (server/board.c) in headless
 * Chromium: its column sort clicked in the det and video tables (and the
 * empty cls one), the order and the sort mark checked, and no script error
 * thrown.  The entries are written into the server's tables as the server
 * stores scored runs (store.c), so that no det or video test set is needed.
 */
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the server's tables ---- */

struct entry {
    enum eeb_task task;
    const char *team; /* its team, by name */
    const char *verdict;
    double s, m_p; /* s NAN: not passed (NULL in the table) */
};

/* Teams whose names sort otherwise than their runs' S, and runs of det
 * (1 to 4) and video (5 to 8): run 3 and 7 failed.  M_p 0.1 is a stored
 * double that "%.17g" writes as 0.10000000000000001. */
static const char *const teams[] = {"carol", "alice", "bob", "dave"};
static const struct entry entries[] = {
    {EEB_TASK_DET, "carol", "pass", 0.50, 0.30},     {EEB_TASK_DET, "alice", "pass", 0.70, 0.50},
    {EEB_TASK_DET, "bob", "fail", NAN, 0.90},        {EEB_TASK_DET, "dave", "pass", 0.90, 0.10},
    {EEB_TASK_VIDEO, "alice", "pass", 0.20, 0.60},   {EEB_TASK_VIDEO, "dave", "pass", 0.60, 0.20},
    {EEB_TASK_VIDEO, "carol", "invalid", NAN, 0.40}, {EEB_TASK_VIDEO, "bob", "pass", 0.40, 0.70},
};

static void add_entries(const char *sdb)
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
                           "INSERT INTO entries (run_id, team_id, state, official, device, "
                           "provenance, registered_utc_ns, completed_utc_ns, verdict, s, "
                           "m_u, m_t, m_p, m_s, t_s, energy_j, why) VALUES (?1, (SELECT "
                           "id FROM teams WHERE name = ?2), 'scored', 0, 'zcu104', "
                           "'modeled', 1, 2, ?3, ?4, 0.25, 0.5, ?5, 0.75, 12.5, 60, '')",
                           -1, &st, NULL),
        SQLITE_OK, "%s", sqlite3_errmsg(h));
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        const struct entry *e = &entries[i];
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

/* ---- the page ---- */

static size_t gather(char *data, size_t size, size_t n, void *arg)
{
    char **body = arg;
    size_t had = *body ? strlen(*body) : 0;
    char *grown = realloc(*body, had + size * n + 1);
    cr_assert_not_null(grown);
    memcpy(grown + had, data, size * n);
    grown[had + size * n] = '\0';
    *body = grown;
    return size * n;
}

/* GET url: the body of a 200 (free it). */
static char *get(const char *url)
{
    char *body = NULL;
    long code = 0;
    CURL *c = curl_easy_init();
    cr_assert_not_null(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gather);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(c);
    cr_assert_eq(rc, CURLE_OK, "%s: %s", url, curl_easy_strerror(rc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    cr_assert_eq(code, 200, "%s: %ld %s", url, code, body);
    return body;
}

/* Put at the head of the page: every error thrown by a script, kept. */
static const char catch_errors[] =
    "<head><script>\n"
    "window.errors = [];\n"
    "window.addEventListener('error', function (e) { window.errors.push(e.message); });\n"
    "</script>";

/* Put at the end: clicks headers of each table, and after each click
 * writes the table's run ids in order and the header's aria-sort and text
 * (with its mark).  Columns: 1 team, 3 S, 6 M_p. */
static const char click_headers[] =
    "<script>\n"
    "(function () {\n"
    "  var out = [];\n"
    "  function runs(t) {\n"
    "    return Array.from(document.querySelectorAll('#board-' + t + ' tbody tr'))\n"
    "      .map(function (r) { return r.cells.length > 2 ? r.cells[2].textContent : '-'; })\n"
    "      .join(',');\n"
    "  }\n"
    "  function click(t, col) {\n"
    "    var th = document.querySelectorAll('#board-' + t + ' thead th')[col];\n"
    "    th.click();\n"
    "    out.push(t + ' ' + col + ': ' + runs(t) + ' ' + th.getAttribute('aria-sort') + ' '\n"
    "             + th.textContent);\n"
    "  }\n"
    "  out.push('det: ' + runs('det'));\n"
    "  ['det', 'video'].forEach(function (t) { [3, 3, 1, 6].forEach(function (c) { click(t, c); "
    "}); "
    "});\n"
    "  click('cls', 3);\n"
    "  var marked = document.querySelectorAll('#board-det th[aria-sort]').length;\n"
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
    char sdb[300], err[512], url[96];
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    add_entries(sdb);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/leaderboard", eeb_server_port(s));
    char *page = get(url);
    eeb_server_stop(s);
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
        "cls 3: - descending S \u25bc\n",
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
