/*
 * test_cli.c - the eeb command as a user runs it: golden outputs, exit
 * codes, and error messages that name the culprit.
 */
#include "fpga/emu/eeb_emu.h"
#include "rundb/eeb_rundb.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define README_ARGS                                                                                \
    "score", "--task", "cls", "--util", "lut=0.30,ff=0.19,bram=0.49,dsp=0.19", "--time", "450",    \
        "--tmax", "600", "--energy", "2700", "--pmax", "10", "--metric", "0.81"

static void assert_golden(struct test_run *r, const char *golden)
{
    char *want = test_fixture(golden, NULL);
    cr_assert_eq(r->status, 0, "exit %d, stderr: %s", r->status, r->err);
    cr_assert_str_eq(r->out, want, "output differs from tests/data/%s", golden);
    cr_assert_str_empty(r->err);
    free(want);
}

Test(cli, score_readme_example_golden)
{
    struct test_run r = test_eeb((const char *[]){README_ARGS, NULL});
    assert_golden(&r, "cli/score_readme.out");
    assert_has(r.out, "S            0.579750\n"); /* computed by hand in the README */
    test_run_free(&r);
}

Test(cli, score_from_report_with_clamped_time_golden)
{
    struct test_run r = test_eeb((const char *[]){
        "score", "--task", "det", "--util", "tests/data/util/kcu1500_routed.rpt", "--time", "700",
        "--tmax", "600", "--energy", "5400", "--pmax", "10", "--metric", "0.62", NULL});
    assert_golden(&r, "cli/score_report_clamped.out");
    test_run_free(&r);
}

Test(cli, score_json)
{
    struct test_run r = test_eeb((const char *[]){README_ARGS, "--json", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_error_t jerr;
    json_t *o = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(o, "not JSON: %s", jerr.text);
    cr_assert_float_eq(json_real_value(json_object_get(o, "S")), 0.57975, 1e-12);
    cr_assert_float_eq(json_real_value(json_object_get(o, "M_p")), 0.6, 1e-12);
    cr_assert_str_eq(json_string_value(json_object_get(o, "verdict")), "PASS");
    cr_assert_str_eq(json_string_value(json_object_get(o, "rules_version")), "1");
    json_decref(o);
    test_run_free(&r);
}

Test(cli, score_over_budget_exits_3)
{
    struct test_run r = test_eeb((const char *[]){
        "score", "--task", "video", "--util", "lut=0.3,ff=0.2,bram=0.5,dsp=0.2", "--time", "100",
        "--tmax", "600", "--energy", "1200", "--pmax", "10", "--metric", "0.7", NULL});
    cr_assert_eq(r.status, 3);
    assert_has(r.out, "S            not computed\n");
    assert_has(r.out, "verdict      FAIL: mean power 12.000 W over the fine-tune stage exceeds "
                      "P_max 10.000 W\n");
    test_run_free(&r);
}

Test(cli, weights_override)
{
    struct test_run r = test_eeb((const char *[]){README_ARGS, "--weights", "0,0,0,1", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    assert_has(r.out, "S            0.810000\n");
    assert_has(r.out, "(from --weights)");
    test_run_free(&r);
    r = test_eeb((const char *[]){README_ARGS, "--weights", "0.5,0.5,0.5,0", NULL});
    cr_assert_eq(r.status, 1);
    assert_has(r.err, "eeb score: --weights: weights 0.5 + 0.5 + 0.5 + 0 sum to 1.5");
    test_run_free(&r);
}

Test(cli, usage_errors_exit_2)
{
    struct {
        const char *args[8];
        const char *message;
    } cases[] = {
        {{"frob", NULL}, "eeb: unknown command 'frob'"},
        {{"--frob", NULL}, "eeb: unknown option '--frob'"},
        {{"score", "--frob", NULL}, "eeb score: unknown option '--frob'"},
        {{"score", "--task", "cls", NULL}, "eeb score: --util is required"},
        {{"score", "--time", NULL}, "eeb score: option '--time' needs a value"},
        {{"score", "--time", "4s", NULL}, "eeb score: --time: '4s' is not a number"},
        {{"db", NULL}, "eeb db: expected 'init FILE' or 'info FILE'"},
        {{"db", "drop", "x.db", NULL}, "eeb db: unknown action 'drop'"},
        {{NULL}, "Usage: eeb <command>"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct test_run r = test_eeb(cases[i].args);
        cr_assert_eq(r.status, 2, "case %zu: exit %d", i, r.status);
        assert_has(r.err, cases[i].message);
        cr_assert_str_empty(r.out, "case %zu wrote to stdout", i);
        test_run_free(&r);
    }
}

Test(cli, task_must_be_known)
{
    struct test_run r = test_eeb((const char *[]){
        "score", "--task", "seg", "--util", "lut=0.3,ff=0.2,bram=0.5,dsp=0.2", "--time", "1",
        "--tmax", "2", "--energy", "3", "--pmax", "10", "--metric", "0.5", NULL});
    cr_assert_eq(r.status, 2);
    assert_has(r.err, "unknown task 'seg'");
    test_run_free(&r);
}

Test(cli, broken_report_names_file_and_line)
{
    const char *dir = test_tmpdir();
    char path[256];
    snprintf(path, sizeof path, "%s/u.rpt", dir);
    char *text = test_fixture("util/zcu102_placed.rpt", NULL);
    char *broken = test_replace(text, "| 98765 |     0 |          0 |    548160 | 18.02 |",
                                "| 98765 |     0 |          0 |    548160 | 81.02 |");
    test_write_file(path, broken, strlen(broken));
    struct test_run r =
        test_eeb((const char *[]){"score", "--task", "cls", "--util", path, "--time", "1", "--tmax",
                                  "2", "--energy", "3", "--pmax", "10", "--metric", "0.5", NULL});
    cr_assert_eq(r.status, 1);
    char want[320];
    snprintf(want, sizeof want, "eeb score: %s line 40: 'CLB Registers' Util%% 81.02 disagrees",
             path);
    assert_has(r.err, want);
    cr_assert_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1, "more than one line: %s", r.err);
    free(text);
    free(broken);
    test_run_free(&r);
}

Test(cli, help_and_version)
{
    struct test_run r = test_eeb((const char *[]){"score", "--help", NULL});
    cr_assert_eq(r.status, 0);
    assert_has(r.out, "Usage: eeb score --task TASK");
    test_run_free(&r);
    r = test_eeb((const char *[]){"help", "db", NULL});
    cr_assert_eq(r.status, 0);
    assert_has(r.out, "Usage: eeb db init FILE");
    test_run_free(&r);
    r = test_eeb((const char *[]){"--help", NULL});
    cr_assert_eq(r.status, 0);
    assert_has(r.out, "  score    ");
    test_run_free(&r);
    r = test_eeb((const char *[]){"--version", NULL});
    cr_assert_eq(r.status, 0);
    assert_has(r.out, "eeb 0.");
    assert_has(r.out, "run database schema v5");
    assert_has(r.out, "accelerator backends: emu kernel fp32");
    assert_has(r.out, "libjpeg-turbo 2.");
    assert_has(r.out, ", FFmpeg ");
    int onednn;
    char dnnl[48];
    snprintf(dnnl, sizeof dnnl, ", oneDNN %s", eeb_emu_onednn_version(&onednn));
    assert_has(r.out, dnnl);
    assert_has(r.out, onednn ? "with oneDNN's convolutions where faster"
                             : "without oneDNN: its int8 sums are not exact");
    assert_has(r.out, "power sources:");
    test_run_free(&r);
}

Test(cli, db_init_info_and_foreign_file)
{
    const char *dir = test_tmpdir();
    char db[256], txt[256];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    snprintf(txt, sizeof txt, "%s/notes.txt", dir);
    struct test_run r = test_eeb((const char *[]){"db", "init", db, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"db", "info", "--json", db, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "not JSON: %s", r.out);
    cr_assert_eq(json_integer_value(json_object_get(o, "schema")), EEB_RUNDB_SCHEMA);
    cr_assert_eq(json_integer_value(json_object_get(o, "runs")), 0);
    json_decref(o);
    test_run_free(&r);

    test_write_file(txt, "hello\n", 6);
    r = test_eeb((const char *[]){"db", "init", txt, NULL});
    cr_assert_eq(r.status, 1);
    assert_has(r.err, "notes.txt: not an SQLite database");
    char *after = test_read_file(txt, NULL);
    cr_assert_str_eq(after, "hello\n");
    free(after);
    test_run_free(&r);
}

Test(cli, score_page_example_matches_the_program)
{
    /* docs/score.md shows the command and its output; both must stay true. */
    char *readme = test_read_file("docs/score.md", NULL);
    cr_assert_not_null(readme, "docs/score.md is missing");
    const char *cmdline = "$ eeb score --task cls --util lut=0.30,ff=0.19,bram=0.49,dsp=0.19 "
                          "--time 450 --tmax 600 --energy 2700 --pmax 10 --metric 0.81\n";
    const char *at = strstr(readme, cmdline);
    cr_assert_not_null(at, "docs/score.md no longer shows the example command");
    at += strlen(cmdline);
    const char *end = strstr(at, "```");
    cr_assert_not_null(end);
    struct test_run r = test_eeb((const char *[]){README_ARGS, NULL});
    cr_assert_eq(strlen(r.out), (size_t)(end - at), "docs/score.md example output differs");
    cr_assert_eq(memcmp(r.out, at, (size_t)(end - at)), 0, "docs/score.md example output differs");
    test_run_free(&r);
    free(readme);
}
