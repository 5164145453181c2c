/*
 * test_report.c - `eeb report` (record/report.c, cmd_report.c) on the
 * database of a real `eeb run` and on run databases made here through the
 * run database's interface as `eeb run` writes them: a run killed while
 * fine-tuning, and a run whose stages are short and close together at the
 * start of a long record.  The page is read as text, and where layout
 * matters as headless Chromium lays it out.
 */
#include "fpga/net/eeb_model.h"
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_tasks.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- run databases ---- */

#define T0_NS 1000000000LL /* the first sample's time on the monotonic clock */

struct ev {
    double t; /* seconds after the first sample */
    const char *kind, *payload;
};

/*
 * A database at path holding one cls run with the configuration of
 * tests/data/report/config.json (budgets T_max t_max_s, P_max 10 W),
 * samples at 100 Hz over trace_s seconds (none if 0), the events ev, and
 * the state the run was left in.
 */
static void made_run(const char *path, enum eeb_run_state state, double t_max_s, double trace_s,
                     const struct ev *ev, size_t nev)
{
    char err[512], uuid[37];
    size_t len;
    char *config = test_fixture("report/config.json", &len);
    struct eeb_rundb *db;
    cr_assert_eq(eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s",
                 err);
    const struct eeb_run_new rn = {.task = EEB_TASK_CLS,
                                   .backend = "emu",
                                   .config_json = config,
                                   .t_max_s = t_max_s,
                                   .p_max_w = 10,
                                   .rules_version = "1"};
    int64_t run;
    cr_assert_eq(eeb_rundb_run_create(db, &rn, &run, uuid, err, sizeof err), EEB_OK, "%s", err);
    size_t n = trace_s > 0 ? (size_t)(trace_s * 100) + 1 : 0;
    struct eeb_sample *s = calloc(n + 1, sizeof *s);
    cr_assert_not_null(s);
    for (size_t i = 0; i < n; i++)
        s[i] = (struct eeb_sample){.t_mono_ns = T0_NS + (int64_t)i * 10000000,
                                   .t_utc_ns = 1700000000000000000LL + (int64_t)i * 10000000,
                                   .volts = NAN,
                                   .amps = NAN,
                                   .watts = 6 + 0.5 * sin((double)i / 10)};
    cr_assert(!n || eeb_rundb_samples_add(db, run, "sim:profile=model", s, n, err, sizeof err) ==
                        EEB_OK,
              "%s", err);
    for (size_t i = 0; i < nev; i++)
        cr_assert_eq(eeb_rundb_event_add(db, run, T0_NS + (int64_t)llround(ev[i].t * 1e9),
                                         1700000000000000000LL, ev[i].kind, ev[i].payload, err,
                                         sizeof err),
                     EEB_OK, "%s", err);
    cr_assert_eq(eeb_rundb_run_set_state(db, run, state, err, sizeof err), EEB_OK, "%s", err);
    eeb_rundb_close(db);
    free(s);
    free(config);
}

/* A run killed (kill -9) 3 s into fine-tuning: no finetune_end, no test
 * stage, no score; 4 s of samples. */
static void killed_run(const char *path)
{
    static const struct ev ev[] = {
        {-0.5, "state", "{\"state\":\"init\",\"eeb\":\"0.1.0\"}"},
        {-0.4, "state", "{\"state\":\"deploy\"}"},
        {0.9, "state", "{\"state\":\"finetune\"}"},
        {1.0, "finetune_begin", "{\"t_max_s\":600.0}"},
        {1.8, "epoch_end",
         "{\"epoch\":1,\"step\":32,\"loss\":2.4675611114501952,"
         "\"train_metric\":0.22500000000000001}"},
        {2.2, "train", "{\"epoch\":2,\"step\":49,\"items\":1544,\"loss\":2.2786779749578763}"},
        {2.6, "epoch_end",
         "{\"epoch\":2,\"step\":64,\"loss\":1.8242797393798829,"
         "\"train_metric\":0.40999999999999998}"},
    };
    made_run(path, EEB_RUN_FINETUNE, 600, 4, ev, sizeof ev / sizeof *ev);
}

/* A real run of cls on small data (test_cls_shard's four classes, a fresh
 * model) with T_max tmax on the clock (modeled or wall): the database's
 * path (static storage). */
static const char *scored_run(const char *dir, const char *tmax, const char *clock)
{
    static struct test_cls_run in;
    in = test_cls_run_inputs(dir, 256, 64);
    const char *ft = in.ft, *test = in.test, *model = in.model, *db = in.db;
    /* enough epochs for about a second of fine-tuning: a P_max window */
    struct test_run r = test_eeb((const char *[]){
        "run", "--task", "cls", "--finetune", ft, "--test", test, "--model", model, "--db", db,
        "--epochs", "20", "--tmax", tmax, "--clock", clock, "-q", NULL});
    cr_assert_eq(r.status, 0, "eeb run: %s%s", r.out, r.err);
    test_run_free(&r);
    return db;
}

/* `eeb report db -o dir/report.html`, read back (free it). */
static char *report(const char *db, const char *dir)
{
    char html[320];
    snprintf(html, sizeof html, "%s/report.html", dir);
    struct test_run r = test_eeb((const char *[]){"report", db, "-o", html, NULL});
    cr_assert_eq(r.status, 0, "eeb report: %s%s", r.out, r.err);
    test_run_free(&r);
    size_t len;
    char *text = test_read_file(html, &len);
    cr_assert_not_null(text, "%s", html);
    return text;
}

/* ---- reading the page ---- */

/* The inline SVG <svg id="id" ...> ... </svg> of html (free it). */
static char *svg(const char *html, const char *id)
{
    char open[64];
    snprintf(open, sizeof open, "<svg id=\"%s\"", id);
    const char *p = strstr(html, open);
    cr_assert_not_null(p, "no %s", open);
    const char *end = strstr(p, "</svg>");
    cr_assert_not_null(end);
    return strndup(p, (size_t)(end - p));
}

/* The largest x-axis tick of a plot: the numbers written under it (y 275,
 * PLOT_H - MARGIN_B + 15 in report.c). */
static double last_x_tick(const char *plot)
{
    double hi = -1;
    int n = 0;
    for (const char *p = plot; (p = strstr(p, "<text")); p++) {
        const char *end = strstr(p, "</text>"), *gt = strchr(p, '>');
        const char *y = strstr(p, "y=\"275\"");
        if (!y || y > gt)
            continue;
        hi = fmax(hi, strtod(gt + 1, NULL));
        n++;
        p = end;
    }
    cr_assert_gt(n, 2, "no x-axis ticks in %.200s", plot);
    return hi;
}

/* The text of each cell of the row <tr id="id">, up to n: the number found. */
#define CELL_MAX 200
static int row_cells(const char *html, const char *id, char cells[][CELL_MAX], int n)
{
    char open[64];
    snprintf(open, sizeof open, "<tr id=\"%s\"", id);
    const char *p = strstr(html, open);
    cr_assert_not_null(p, "no row %s", open);
    const char *end = strstr(p, "</tr>");
    int k = 0;
    while (k < n && (p = strstr(p, "<td")) && p < end) {
        p = strchr(p, '>') + 1;
        const char *q = strstr(p, "</td>");
        snprintf(cells[k++], CELL_MAX, "%.*s", (int)(q - p), p);
        p = q;
    }
    return k;
}

/* Loads html_path with script appended to its body in Chromium, and returns
 * the text of the <pre id="result"> the script writes (free it). */
static char *in_chromium(const char *dir, const char *html_path, const char *script)
{
    size_t len;
    char *html = test_read_file(html_path, &len), driven[320], url[340];
    cr_assert_not_null(html);
    char *page = test_replace(html, "</body>", script);
    snprintf(driven, sizeof driven, "%s/driven.html", dir);
    test_write_file(driven, page, strlen(page));
    snprintf(url, sizeof url, "file://%s", driven);
    char *dom = test_chromium(dir, url, NULL);
    const char *p = strstr(dom, "<pre id=\"result\">");
    cr_assert_not_null(p, "the script wrote no result: %s", dom);
    p += strlen("<pre id=\"result\">");
    char *result = strndup(p, (size_t)(strstr(p, "</pre>") - p));
    free(html), free(page), free(dom);
    return result;
}

/* ---- the time axis ---- */

Test(report, the_time_axis_fits_a_short_run_and_says_where_tmax_is, .timeout = 120)
{
    /* a run of about a second under a 600 s T_max */
    const char *dir = test_tmpdir();
    const char *db = scored_run(dir, "600", "wall"); /* T_max on the plot's (the host's) axis */
    char *html = report(db, dir);
    char *power = svg(html, "power-plot"), *training = svg(html, "training-plot");
    double span = strtod(strstr(html, " samples over ") + strlen(" samples over "), NULL);
    cr_assert(span > 0.2 && span < 30, "the run took %g s", span);
    /* the run ends at its last sample or event (on a loaded machine the
     * events after sampling stopped can take a while) */
    double end = (double)test_sql_int(db, "SELECT max(t) - (SELECT min(t_mono_ns) FROM samples) "
                                          "FROM (SELECT max(t_mono_ns) AS t FROM samples UNION "
                                          "SELECT max(t_mono_ns) FROM events)") /
                 1e9;
    /* the axis ends within a tick or two past the run, not at 600 s */
    double power_hi = last_x_tick(power), training_hi = last_x_tick(training);
    cr_expect(power_hi >= span * 0.7 && power_hi <= end * 1.5, "power axis to %g, run %g s",
              power_hi, end);
    cr_expect(training_hi >= span * 0.7 && training_hi <= end * 1.5,
              "training axis to %g, run %g s", training_hi, end);
    /* T_max is not drawn at the edge of a squeezed plot but named */
    cr_expect_null(strstr(power, "id=\"tmax-marker\""));
    cr_expect(strstr(power, "T_max 600 s off the axis"), "%s", power);
    cr_expect(strstr(html, "T_max 600 s, at "), "the legend says where T_max is");
    free(power), free(training), free(html);
}

Test(report, tmax_near_the_run_is_drawn_on_a_stretched_axis)
{
    /* 10 s of record, fine-tuning from 1 s; T_max 12 s ends at 13 s */
    static const struct ev ev[] = {
        {1, "finetune_begin", NULL},
        {8, "finetune_end", NULL},
        {8.5, "test_begin", NULL},
        {9, "test_end", NULL},
    };
    const char *dir = test_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    made_run(db, EEB_RUN_SCORE, 12, 10, ev, sizeof ev / sizeof *ev);
    char *html = report(db, dir), *power = svg(html, "power-plot");
    const char *marker = strstr(power, "<line id=\"tmax-marker\" x1=\"");
    cr_assert_not_null(marker, "%s", power);
    double x = strtod(marker + strlen("<line id=\"tmax-marker\" x1=\""), NULL);
    cr_expect(x > 800 && x < 900, "T_max at x %g: the axis ends just past it", x);
    cr_expect_null(strstr(power, "off the axis"));
    double hi = last_x_tick(power);
    cr_expect(hi >= 12 && hi <= 16, "axis to %g s, T_max at 13 s", hi);
    free(power), free(html);
}

Test(report, the_loss_plot_fits_a_run_without_power_samples)
{
    /* a meter that never answered: events only, on the monotonic clock */
    static const struct ev ev[] = {
        {0, "state", "{\"state\":\"finetune\"}"},
        {1, "finetune_begin", NULL},
        {1.5, "train", "{\"epoch\":1,\"step\":10,\"items\":320,\"loss\":2.5}"},
        {2, "train", "{\"epoch\":1,\"step\":20,\"items\":640,\"loss\":2.0}"},
        {2.5, "train", "{\"epoch\":2,\"step\":30,\"items\":960,\"loss\":1.5}"},
        {3, "finetune_end", NULL},
    };
    const char *dir = test_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    made_run(db, EEB_RUN_STOPPED, 600, 0, ev, sizeof ev / sizeof *ev);
    char *html = report(db, dir), *training = svg(html, "training-plot");
    double hi = last_x_tick(training);
    cr_expect(hi >= 2.5 && hi <= 4, "axis to %g s, the events end at 3 s", hi);
    /* every point of the loss inside the plot (x 60 to 900) */
    const char *p = strstr(training, "id=\"loss-curve\"");
    cr_assert_not_null(p, "%s", training);
    p = strstr(p, "points=\"") + strlen("points=\"");
    for (int i = 0; i < 3; i++) {
        char *end;
        double x = strtod(p, &end);
        cr_expect(x >= 60 && x <= 900, "loss point %d at x %g", i, x);
        p = strchr(end, ' ') + 1;
    }
    cr_expect(strstr(html, "No power samples were committed."));
    free(training), free(html);
}

/* ---- labels ---- */

/* Every pair of texts in each plot whose boxes, as Chromium lays them out,
 * intersect; and the legends' text. */
static const char overlap_script[] =
    "<script>\n"
    "(function () {\n"
    "  var out = [];\n"
    "  ['power-plot', 'training-plot'].forEach(function (id) {\n"
    "    var t = Array.from(document.querySelectorAll('#' + id + ' text'));\n"
    "    var b = t.map(function (e) { return e.getBoundingClientRect(); });\n"
    "    for (var i = 0; i < t.length; i++)\n"
    "      for (var j = i + 1; j < t.length; j++)\n"
    "        if (b[i].width && b[j].width && b[i].left < b[j].right && b[j].left < b[i].right\n"
    "            && b[i].top < b[j].bottom && b[j].top < b[i].bottom)\n"
    "          out.push('overlap: ' + t[i].textContent + ' / ' + t[j].textContent);\n"
    "  });\n"
    "  var legend = document.getElementById('power-legend');\n"
    "  out.push('legend: ' + (legend ? legend.textContent.replace(/\\s+/g, ' ') : 'none'));\n"
    "  var pre = document.createElement('pre');\n"
    "  pre.id = 'result';\n"
    "  pre.textContent = out.join('\\n');\n"
    "  document.body.appendChild(pre);\n"
    "})();\n"
    "</script>\n</body>";

Test(report, stage_labels_never_overlap, .timeout = 120)
{
    /* a 10 s record whose fine-tune (0.2 s) and test (0.15 s) stages are
     * short and adjacent, and whose T_max (0.25 s) ends among them */
    static const struct ev ev[] = {
        {0.2, "finetune_begin", NULL},
        {0.4, "finetune_end", NULL},
        {0.45, "test_begin", NULL},
        {0.6, "test_end", NULL},
        {10, "state", "{\"state\":\"score\"}"},
    };
    const char *dir = test_tmpdir();
    char db[300], html[320];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    made_run(db, EEB_RUN_SCORE, 0.25, 10, ev, sizeof ev / sizeof *ev);
    free(report(db, dir));
    char *result = in_chromium(dir, html, overlap_script);
    cr_expect_null(strstr(result, "overlap: "), "%s", result);
    /* whatever the plot had no room for, the legend still says */
    cr_expect(strstr(result, "fine-tune (metered): 0.200 s to 0.400 s"), "%s", result);
    cr_expect(strstr(result, "test: 0.450 s to 0.600 s"), "%s", result);
    cr_expect(strstr(result, "T_max 0.25 s, at 0.450 s"), "%s", result);
    free(result);
}

/* ---- what a killed run never had ---- */

Test(report, a_killed_run_shows_a_dash_for_what_it_never_had)
{
    const char *dir = test_tmpdir();
    char db[300], cells[6][CELL_MAX];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    killed_run(db);
    char *html = report(db, dir);
    cr_expect(strstr(html, "class=\"verdict INCOMPLETE\""), "%.400s", html);
    /* no score was computed: its figures are "-", not 0 */
    static const char *const figures[] = {"score-m_t", "score-m_p", "score-m_s", "score-s"};
    for (size_t i = 0; i < sizeof figures / sizeof *figures; i++) {
        cr_assert_geq(row_cells(html, figures[i], cells, 6), 1);
        cr_expect_str_eq(cells[0], "-", "%s: '%s'", figures[i], cells[0]);
    }
    cr_assert_eq(row_cells(html, "score-m_s", cells, 6), 5);
    cr_expect_str_eq(cells[1], "0.4", "w_s is the configuration's");
    cr_expect_str_eq(cells[2], "-", "w_s (1 - M_s) without M_s");
    cr_expect_str_eq(cells[3], "-", "a share of no penalty");
    cr_expect(strstr(cells[4], "no test stage recorded"), "%s", cells[4]);
    /* what the configuration holds is shown */
    cr_assert_eq(row_cells(html, "util-BRAM", cells, 6), 2);
    cr_expect_str_eq(cells[0], "0.1058");
    /* the stages: fine-tuning began and never ended; no test */
    cr_expect(strstr(html, "fine-tune (metered): from 1.000 s, no end recorded"));
    cr_expect(strstr(html, "test: -"));
    cr_expect(strstr(html, "id=\"provenance\">modeled<"), "the configuration's provenance");
    /* and nothing anywhere is nan, or an empty cell */
    regex_t nan;
    cr_assert_eq(regcomp(&nan, "[^a-z]nan[^a-z]", REG_EXTENDED | REG_ICASE | REG_NOSUB), 0);
    cr_expect_neq(regexec(&nan, html, 0, NULL, 0), 0, "a nan in the report");
    regfree(&nan);
    cr_expect_null(strstr(html, "<td></td>"));
    cr_expect_null(strstr(html, "\"></td>"), "an empty cell: %s", strstr(html, "\"></td>"));
    free(html);
}

/* ---- numbers ---- */

Test(report, numbers_carry_no_float_noise)
{
    const char *dir = test_tmpdir();
    char db[300];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    killed_run(db);
    char *html = report(db, dir);
    /* a double's representation digits: seven 0s or 9s, then more digits */
    regex_t noise;
    cr_assert_eq(regcomp(&noise, "[0-9]\\.?[0-9]*(0000000|9999999)[0-9]", REG_EXTENDED), 0);
    regmatch_t m;
    int found = regexec(&noise, html, 1, &m, 0) == 0;
    cr_expect(!found, "float noise: ...%.60s...",
              found ? html + (m.rm_so > 20 ? m.rm_so - 20 : 0) : "");
    regfree(&noise);
    /* the configuration's reals as they were written down */
    cr_expect(strstr(html, "<th>rules.weights.u</th><td>0.1</td>"), "%s",
              strstr(html, "Configuration"));
    cr_expect(strstr(html, "<th>training.decay</th><td>0.0005</td>"));
    cr_expect(strstr(html, "<th>device_model.predict_batch_s</th><td>0.02459856</td>"));
    cr_expect(strstr(html, "<th>budgets.t_max_s</th><td>600</td>"));
    /* and the events' payloads */
    cr_expect(strstr(html, "&quot;train_metric&quot;: 0.225}"), "%s", strstr(html, "Events"));
    free(html);
}

/* ---- the score table ---- */

Test(report, the_score_table_gives_weights_terms_shares_and_fractions, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char *html = report(scored_run(dir, "30", "modeled"), dir);
    cr_assert(strstr(html, "class=\"verdict PASS\""), "%s", strstr(html, "verdict"));
    /* T_max is the modeled clock's: no marker on the host's axis, and said so */
    cr_expect_null(strstr(html, "id=\"tmax-marker\""));
    cr_expect(strstr(html, "T_max 30 s, on the modeled clock (steps x the modeled step time)"));
    static const char *const rows[] = {"score-m_u", "score-m_t", "score-m_p", "score-m_s"};
    static const double weights[] = {0.1, 0.1, 0.4, 0.4}; /* rules v1, cls */
    char cells[6][CELL_MAX];
    double penalty = 0, shares = 0, m_u = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(row_cells(html, rows[i], cells, 6), 5, "%s", rows[i]);
        double m = strtod(cells[0], NULL), w = strtod(cells[1], NULL),
               term = strtod(cells[2], NULL);
        cr_expect_eq(w, weights[i], "%s: weight %s", rows[i], cells[1]);
        double want = w * (i == 3 ? 1 - m : m);
        cr_expect(fabs(term - want) < 1e-4, "%s: term %s, w x M %g", rows[i], cells[2], want);
        cr_expect(strstr(cells[3], " %"), "%s: share '%s'", rows[i], cells[3]);
        if (i == 0)
            m_u = m;
        penalty += term;
        shares += strtod(cells[3], NULL);
    }
    cr_expect(fabs(shares - 100) < 0.3, "shares add up to %g %%", shares);
    cr_assert_eq(row_cells(html, "score-penalty", cells, 6), 5);
    cr_expect(fabs(strtod(cells[0], NULL) - penalty) < 3e-4, "penalty %s, terms %g", cells[0],
              penalty);
    double s_penalty = 1 - strtod(cells[0], NULL);
    cr_assert_eq(row_cells(html, "score-s", cells, 6), 2);
    cr_expect(fabs(strtod(cells[0], NULL) - s_penalty) < 1.5e-4, "S %s, 1 - penalty %g", cells[0],
              s_penalty);
    /* M_u is the mean of its four fractions */
    static const char *const parts[] = {"util-LUT", "util-FF", "util-BRAM", "util-DSP"};
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(row_cells(html, parts[i], cells, 6), 2, "%s", parts[i]);
        double frac = strtod(cells[0], NULL);
        cr_expect(frac > 0 && frac <= 1, "%s %s", parts[i], cells[0]);
        sum += frac;
    }
    cr_expect(fabs(sum / 4 - m_u) < 1e-4, "M_u %g, mean of the fractions %g", m_u, sum / 4);
    free(html);
}

/* ---- the system under test ---- */

/* The value of the SUT table's row id (its first cell), checking that its
 * second says where the value comes from (from). */
static const char *sut_value(const char *html, const char *id, const char *from,
                             char cells[][CELL_MAX])
{
    cr_assert_eq(row_cells(html, id, cells, 2), 2, "%s", id);
    cr_expect(strstr(cells[1], from), "%s comes from '%s', not '%s'", id, cells[1], from);
    return cells[0];
}

/* A figure of the run's one `kind` event's payload at the JSON path, as
 * SQLite reads it. */
static long long event_figure(const char *db, const char *kind, const char *path)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT json_extract(payload, '%s') FROM events WHERE kind = '%s'",
             path, kind);
    return test_sql_int(db, sql);
}

/* The detail the SUT reported at deployment (free it), as the section
 * shows it. */
static char *expect_deployed_detail(const char *html, const char *db, char cells[][CELL_MAX])
{
    char *detail = NULL;
    cr_assert_eq(test_sql_text(db,
                               "SELECT json_extract(payload, '$.detail') FROM events WHERE "
                               "kind = 'deployed'",
                               &detail),
                 0);
    cr_assert(detail && detail[0], "the SUT reports what it runs on");
    cr_expect_str_eq(sut_value(html, "sut-detail", "reported by the SUT at deployment", cells),
                     detail);
    return detail;
}

/* The SUT's steps as its stopped event holds them, shown beside eeb's
 * count, which agrees. */
static long long expect_steps_agreeing(const char *html, const char *db, char cells[][CELL_MAX])
{
    long long steps = event_figure(db, "stopped", "$.steps");
    cr_assert_gt(steps, 0);
    char n[32];
    snprintf(n, sizeof n, "%lld", steps);
    cr_expect_str_eq(sut_value(html, "sut-steps", "as reported by the SUT", cells), n);
    cr_expect_str_eq(sut_value(html, "sut-eeb-steps", "counted by eeb", cells), n);
    return steps;
}

static const char *const saturation_rows[] = {"sut-saturations-activations",
                                              "sut-saturations-errors", "sut-saturations-gradients",
                                              "sut-saturations-weights"};

/* The section sits after the score and the plots, before the events. */
static void sut_section_placed(const char *html)
{
    const char *score = strstr(html, "<table id=\"score\""),
               *plot = strstr(html, "<svg id=\"training-plot\""),
               *sut = strstr(html, "<table id=\"sut\""), *events = strstr(html, "<h2>Events</h2>");
    cr_assert(score && plot && sut && events, "score %p, plot %p, sut %p, events %p", score, plot,
              sut, events);
    cr_expect(score < plot && plot < sut && sut < events, "the SUT table is out of place");
    cr_expect(strstr(html, "<h2>System under test</h2>"));
}

Test(report, a_run_through_a_teams_library_shows_the_sut_and_its_own_counters, .timeout = 120)
{
    const char *dir = test_tmpdir();
    setenv("TMPDIR", dir, 1); /* where eeb run keeps the SUT's private files */
    struct test_cls_run in = test_cls_run_inputs(dir, 256, 64);
    char model[320], cells[2][CELL_MAX], n[32];
    snprintf(model, sizeof model, "%s/nm.model", dir);
    test_write_file(model, "nearest-mean 1\n", 15);
    /* stopped at T_max, where a batch may still be in flight */
    struct test_run r = test_eeb((const char *[]){"run",
                                                  "--task",
                                                  "cls",
                                                  "--finetune",
                                                  in.ft,
                                                  "--test",
                                                  in.test,
                                                  "--model",
                                                  model,
                                                  "--backend",
                                                  EEB_SUT_EXAMPLE,
                                                  "--util",
                                                  "lut=0.2,ff=0.1,bram=0.3,dsp=0.1",
                                                  "--power",
                                                  "sim:watts=4",
                                                  "--db",
                                                  in.db,
                                                  "--epochs",
                                                  "1000000",
                                                  "--tmax",
                                                  "1",
                                                  "--rate",
                                                  "20",
                                                  "-q",
                                                  NULL});
    cr_assert_eq(r.status, 0, "eeb run: %s%s", r.out, r.err);
    test_run_free(&r);
    char *html = report(in.db, dir), *detail;
    sut_section_placed(html);
    cr_expect_str_eq(sut_value(html, "sut-backend", "configuration", cells), EEB_SUT_EXAMPLE);
    cr_expect_str_eq(sut_value(html, "sut-kind", "backend's name", cells), "a team&#39;s library");
    cr_expect_str_eq(sut_value(html, "sut-name", "names itself", cells), "nearest-mean");
    cr_expect_str_eq(sut_value(html, "sut-version", "version slot", cells), "1.1");
    char sha[EEB_SHA256_HEX], err[256];
    cr_assert_eq(eeb_sha256_file(model, sha, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_str_eq(sut_value(html, "sut-model", "hashed by eeb", cells), sha);
    cr_expect_str_eq(sut_value(html, "sut-xclbin", "hashed by eeb", cells), "none given");
    detail = expect_deployed_detail(html, in.db, cells);
    cr_assert(strstr(detail, "nearest-mean"), "the example's detail: %s", detail);
    /* the SUT's counters as the stopped event holds them, and eeb's count
     * beside them: the same steps */
    long long steps = expect_steps_agreeing(html, in.db, cells);
    cr_expect_geq(steps, event_figure(in.db, "complete", "$.step"),
                  "the SUT counts every step eeb signalled");
    snprintf(n, sizeof n, "%lld", event_figure(in.db, "stopped", "$.items"));
    cr_expect_gt(event_figure(in.db, "stopped", "$.items"), 0);
    cr_expect_str_eq(sut_value(html, "sut-items", "as reported by the SUT", cells), n);
    /* the example counts no saturations: zeros it reported, not "not reported" */
    for (int i = 0; i < 4; i++)
        cr_expect_str_eq(sut_value(html, saturation_rows[i], "as reported by the SUT", cells), "0",
                         "%s", saturation_rows[i]);
    cr_expect_null(strstr(html, "id=\"sut-mismatch\""));
    free(detail), free(html);
}

Test(report, a_run_on_eebs_emu_shows_its_counters_agreeing, .timeout = 120)
{
    const char *dir = test_tmpdir();
    const char *db = scored_run(dir, "30", "modeled");
    char *html = report(db, dir), *detail, cells[2][CELL_MAX], n[32];
    sut_section_placed(html);
    cr_expect_str_eq(sut_value(html, "sut-backend", "configuration", cells), "emu");
    cr_expect_str_eq(sut_value(html, "sut-kind", "backend's name", cells),
                     "eeb&#39;s built-in backend");
    cr_expect_str_eq(sut_value(html, "sut-name", "names itself", cells), "emu");
    cr_expect_str_eq(sut_value(html, "sut-version", "version slot", cells), "none given");
    detail = expect_deployed_detail(html, db, cells);
    long long steps = expect_steps_agreeing(html, db, cells);
    cr_expect_eq(steps, event_figure(db, "complete", "$.step"), "20 whole epochs: none in flight");
    for (int i = 0; i < 4; i++) {
        char path[32];
        snprintf(path, sizeof path, "$.saturations[%d]", i);
        snprintf(n, sizeof n, "%lld", event_figure(db, "stopped", path));
        cr_expect_str_eq(sut_value(html, saturation_rows[i], "as reported by the SUT", cells), n,
                         "%s", saturation_rows[i]);
    }
    cr_expect_null(strstr(html, "id=\"sut-mismatch\""));
    free(detail), free(html);
}

Test(report, a_sut_claiming_more_steps_than_eeb_drove_is_noted, .timeout = 120)
{
    const char *dir = test_tmpdir();
    const char *db = scored_run(dir, "30", "modeled");
    long long drove = event_figure(db, "complete", "$.step");
    cr_assert_gt(drove, 0);
    /* the record edited: the SUT now says it did 1000 more steps */
    test_sql_exec(db, "UPDATE events SET payload = json_set(payload, '$.steps', "
                      "json_extract(payload, '$.steps') + 1000) WHERE kind = 'stopped'");
    char *html = report(db, dir), cells[2][CELL_MAX], want[200];
    snprintf(want, sizeof want, "%lld", drove + 1000);
    cr_expect_str_eq(sut_value(html, "sut-steps", "as reported by the SUT", cells), want);
    snprintf(want, sizeof want, "%lld", drove);
    cr_expect_str_eq(sut_value(html, "sut-eeb-steps", "counted by eeb", cells), want);
    const char *note = strstr(html, "<p id=\"sut-mismatch\"");
    cr_assert_not_null(note, "no mismatch note: %s", strstr(html, "<table id=\"sut\""));
    snprintf(want, sizeof want, "The SUT reports %lld training steps, but eeb drove %lld",
             drove + 1000, drove);
    cr_expect(strstr(note, want) && strstr(note, want) < strstr(note, "</p>"), "%.300s", note);
    free(html);
}

Test(report, a_teams_program_without_counters_and_with_a_hostile_detail)
{
    static const struct ev ev[] = {
        {0.2, "deployed",
         "{\"backend\":\"exec:./team\",\"detail\":\"<script>alert('x')</script>\","
         "\"finetune_items\":1000}"},
        {1, "finetune_begin", "{\"t_max_s\":600.0}"},
        {2, "epoch_end", "{\"epoch\":1,\"step\":32,\"loss\":2.5,\"train_metric\":0.2}"},
        {2.5, "complete", "{\"reason\":\"done\",\"step\":40}"},
        {2.6, "finetune_end", NULL},
        /* counters slot absent: the harness records the zeros it got */
        {2.7, "stopped", "{\"steps\":0,\"items\":0,\"saturations\":[0,0,0,0]}"},
    };
    const char *dir = test_tmpdir();
    char db[300], cells[2][CELL_MAX];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    made_run(db, EEB_RUN_STOPPED, 600, 3, ev, sizeof ev / sizeof *ev);
    test_sql_exec(db, "UPDATE runs SET config = json_set(config, '$.backend', "
                      "'exec:./team --name <b>&')");
    test_sql_exec(db, "UPDATE runs SET config = json_set(config, '$.sut', json('{\"name\": "
                      "\"<i>team</i>\", \"version\": \"1<2&3\", \"kind\": \"exec\"}'))");
    char *html = report(db, dir);
    /* the system's name and version are the team's text: escaped */
    cr_expect(strstr(html, " on &lt;i&gt;team&lt;/i&gt; <span class=\"version\">1&lt;2&amp;3"
                           "</span> (exec)</h1>"),
              "%.600s", html);
    cr_expect_str_eq(sut_value(html, "sut-name", "names itself", cells), "&lt;i&gt;team&lt;/i&gt;");
    cr_expect_str_eq(sut_value(html, "sut-version", "version slot", cells), "1&lt;2&amp;3");
    cr_expect_null(strstr(html, "<script"), "the page runs no script");
    cr_expect_null(strstr(html, "<b>"));
    cr_expect_str_eq(sut_value(html, "sut-backend", "configuration", cells),
                     "exec:./team --name &lt;b&gt;&amp;");
    cr_expect_str_eq(sut_value(html, "sut-kind", "backend's name", cells), "a team&#39;s program");
    cr_expect_str_eq(sut_value(html, "sut-detail", "at deployment", cells),
                     "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    cr_expect_str_eq(sut_value(html, "sut-steps", "as reported by the SUT", cells), "not reported");
    cr_expect_str_eq(sut_value(html, "sut-items", "as reported by the SUT", cells), "not reported");
    for (int i = 0; i < 4; i++)
        cr_expect_str_eq(sut_value(html, saturation_rows[i], "as reported by the SUT", cells),
                         "not reported", "%s", saturation_rows[i]);
    cr_expect_str_eq(sut_value(html, "sut-eeb-steps", "counted by eeb", cells), "40");
    cr_expect_null(strstr(html, "id=\"sut-mismatch\""), "no counters: nothing to disagree");
    free(html);
}

Test(report, a_run_killed_before_fine_tuning_stopped_shows_what_the_sut_record_has)
{
    const char *dir = test_tmpdir();
    char db[300], cells[2][CELL_MAX];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    killed_run(db); /* no deployed event, no stopped event */
    char *html = report(db, dir);
    sut_section_placed(html);
    cr_expect_str_eq(sut_value(html, "sut-backend", "configuration", cells), "emu");
    cr_expect_str_eq(sut_value(html, "sut-kind", "backend's name", cells),
                     "eeb&#39;s built-in backend");
    cr_expect_str_eq(sut_value(html, "sut-detail", "not recorded", cells), "-");
    cr_expect_str_eq(sut_value(html, "sut-steps", "not recorded", cells), "-");
    cr_expect_str_eq(sut_value(html, "sut-items", "not recorded", cells), "-");
    for (int i = 0; i < 4; i++)
        cr_expect_str_eq(sut_value(html, saturation_rows[i], "not recorded", cells), "-", "%s",
                         saturation_rows[i]);
    /* eeb's count so far: the last epoch's end, past the train event's */
    cr_expect_str_eq(sut_value(html, "sut-eeb-steps", "counted by eeb", cells), "64");
    cr_expect_null(strstr(html, "id=\"sut-mismatch\""));
    free(html);
}

/* ---- the output file ---- */

/* `eeb report args` run in dir (a shell's cd): its status, stdout, stderr. */
static struct test_run report_in(const char *dir, const char *args)
{
    char eeb[PATH_MAX], cmd[2 * PATH_MAX], path[400];
    cr_assert_not_null(realpath(EEB_BIN, eeb));
    snprintf(cmd, sizeof cmd, "cd %s && %s report %s > out.txt 2> err.txt; echo $? > status.txt",
             dir, eeb, args);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    struct test_run r;
    size_t len;
    snprintf(path, sizeof path, "%s/status.txt", dir);
    char *status = test_read_file(path, &len);
    r.status = atoi(status);
    free(status);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    r.out = test_read_file(path, &len);
    snprintf(path, sizeof path, "%s/err.txt", dir);
    r.err = test_read_file(path, &len);
    return r;
}

Test(report, without_o_it_writes_a_file_named_from_the_database_and_never_over_one)
{
    const char *dir = test_tmpdir();
    char db[300], path[400];
    snprintf(db, sizeof db, "%s/trial.db", dir);
    killed_run(db);
    struct test_run r = report_in(dir, "trial.db");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect_str_eq(r.out, "trial.run1.html\n");
    test_run_free(&r);
    snprintf(path, sizeof path, "%s/trial.run1.html", dir);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s was not written", path);
    cr_expect_gt(st.st_size, 1000);
    /* a second time, the file there is not replaced */
    test_write_file(path, "mine", 4);
    r = report_in(dir, "trial.db --run 1");
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "trial.run1.html exists; give -o trial.run1.html to replace it"), "%s",
              r.err);
    cr_expect_str_empty(r.out);
    test_run_free(&r);
    size_t len;
    char *kept = test_read_file(path, &len);
    cr_expect_str_eq(kept, "mine");
    free(kept);
    /* -o replaces, and says so too; a database in another directory names
     * a report in this one */
    r = report_in(dir, "trial.db -o trial.run1.html");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect_str_eq(r.out, "trial.run1.html\n");
    test_run_free(&r);
    test_mkdirs(dir, "elsewhere");
    char sub[400];
    snprintf(sub, sizeof sub, "%s/elsewhere", dir);
    r = report_in(sub, "../trial.db");
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect_str_eq(r.out, "trial.run1.html\n");
    test_run_free(&r);
    snprintf(path, sizeof path, "%s/elsewhere/trial.run1.html", dir);
    cr_expect_eq(stat(path, &st), 0, "%s was not written", path);
}
