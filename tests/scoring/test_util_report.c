/*
 * test_util_report.c - Vivado report_utilization parsing, both families,
 * and the broken variants a hand-edited or truncated report produces.
 */
#include "scoring/eeb_score.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct eeb_util parse_ok(const char *text, const char *name)
{
    struct eeb_util u;
    char err[512] = "";
    cr_assert_eq(eeb_score_util_parse(text, strlen(text), name, &u, err, sizeof err), EEB_OK, "%s",
                 err);
    return u;
}

/* Parses text expecting failure; returns the message (static storage). */
static const char *parse_err(const char *text)
{
    static char err[512];
    struct eeb_util u;
    cr_assert_neq(eeb_score_util_parse(text, strlen(text), "r.rpt", &u, err, sizeof err), EEB_OK,
                  "a broken report parsed");
    return err;
}

/* Edits one fixture and expects an error containing needle. */
static void expect_broken(const char *fixture, const char *from, const char *to, const char *needle)
{
    char *text = test_fixture(fixture, NULL);
    char *broken = test_replace(text, from, to);
    const char *err = parse_err(broken);
    cr_assert_not_null(strstr(err, needle), "'%s' does not contain '%s'", err, needle);
    free(broken);
    free(text);
}

Test(util_report, ultrascale_plus_with_prohibited_column)
{
    char *text = test_fixture("util/zcu102_placed.rpt", NULL);
    struct eeb_util u = parse_ok(text, "zcu102");
    cr_assert_str_eq(u.family, "ultrascale");
    cr_assert_str_eq(u.device, "xczu9eg-ffvb1156-2-e");
    cr_assert_float_eq(u.frac[EEB_UTIL_LUT], 68123.0 / 274080, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_FF], 98765.0 / 548160, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_BRAM], 456.5 / 912, 1e-15); /* half tiles count */
    cr_assert_float_eq(u.frac[EEB_UTIL_DSP], 520.0 / 2520, 1e-15);
    cr_assert_eq(u.line[EEB_UTIL_LUT], 35);
    cr_assert_eq(u.line[EEB_UTIL_DSP], 88);
    cr_assert_float_eq(eeb_score_m_u(&u),
                       (68123.0 / 274080 + 98765.0 / 548160 + 456.5 / 912 + 520.0 / 2520) / 4,
                       1e-15);
    free(text);
}

Test(util_report, ultrascale_without_prohibited_column)
{
    /* The KCU1500 design of the published KCU1500 design: 199111 LUT, 249122 FF, 1060 BRAM, 1030
     * DSP. */
    char *text = test_fixture("util/kcu1500_routed.rpt", NULL);
    struct eeb_util u = parse_ok(text, "kcu1500");
    cr_assert_str_eq(u.device, "xcku115-flvb2104-2-e");
    cr_assert_float_eq(u.used[EEB_UTIL_LUT], 199111, 0);
    cr_assert_float_eq(u.available[EEB_UTIL_FF], 1326720, 0);
    cr_assert_float_eq(u.frac[EEB_UTIL_BRAM], 1060.0 / 2160, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_DSP], 1030.0 / 5520, 1e-15);
    free(text);
}

Test(util_report, seven_series_post_synthesis)
{
    char *text = test_fixture("util/pynqz2_synth.rpt", NULL);
    struct eeb_util u = parse_ok(text, "pynq");
    cr_assert_str_eq(u.family, "7series");
    cr_assert_str_eq(u.device, "xc7z020clg400-1");
    cr_assert_float_eq(u.frac[EEB_UTIL_LUT], 31544.0 / 53200, 1e-15); /* "Slice LUTs*" */
    cr_assert_float_eq(u.frac[EEB_UTIL_FF], 40310.0 / 106400, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_BRAM], 104.5 / 140, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_DSP], 160.0 / 220, 1e-15);
    free(text);
}

Test(util_report, windows_line_endings)
{
    char *text = test_fixture("util/pynqz2_synth.rpt", NULL);
    size_t n = strlen(text), lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += text[i] == '\n';
    char *crlf = malloc(n + lines + 1), *q = crlf;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '\n')
            *q++ = '\r';
        *q++ = text[i];
    }
    *q = '\0';
    struct eeb_util u = parse_ok(crlf, "crlf");
    cr_assert_float_eq(u.frac[EEB_UTIL_DSP], 160.0 / 220, 1e-15);
    free(crlf);
    free(text);
}

Test(util_report, missing_row)
{
    expect_broken("util/zcu102_placed.rpt", "| DSPs           |", "| DSP Slices     |",
                  "r.rpt: no 'DSPs' row");
}

Test(util_report, truncated_report)
{
    char *text = test_fixture("util/zcu102_placed.rpt", NULL);
    text[strstr(text, "3. BLOCKRAM\n---") - text] = '\0';
    assert_has(parse_err(text), "no 'Block RAM Tile' row");
    free(text);
}

Test(util_report, malformed_number_names_the_line)
{
    expect_broken("util/zcu102_placed.rpt", "| 68123 |", "| 68l23 |",
                  "r.rpt line 35: 'CLB LUTs' Used '68l23' is not a number");
}

Test(util_report, inconsistent_percentage_names_the_line)
{
    expect_broken("util/kcu1500_routed.rpt", "|      2160 | 49.07 |", "|      2160 | 39.07 |",
                  "r.rpt line 72: 'Block RAM Tile' Util% 39.07 disagrees");
}

Test(util_report, used_above_available)
{
    expect_broken("util/pynqz2_synth.rpt", "|  160 |     0 |       220 | 72.73 |",
                  "|  260 |     0 |       220 | 118.18 |",
                  "line 69: 'DSPs' Used 260 exceeds Available 220");
}

Test(util_report, mixed_families)
{
    expect_broken("util/zcu102_placed.rpt", "| CLB Registers  ", "| Slice Registers",
                  "line 40: 'Slice Registers' mixes device families with line 35");
}

Test(util_report, table_without_available_column_is_not_read)
{
    expect_broken("util/zcu102_placed.rpt", "| Available |", "| Availabel |",
                  "no 'CLB LUTs' (UltraScale) or 'Slice LUTs' (7-series) row");
}

Test(util_report, tiny_fraction_printed_as_less_than)
{
    const char *text = "+-----------+------+-------+-----------+-------+\n"
                       "| Site Type | Used | Fixed | Available | Util% |\n"
                       "+-----------+------+-------+-----------+-------+\n"
                       "| CLB LUTs  |    1 |     0 |    274080 | <0.01 |\n"
                       "| CLB Registers | 2 |   0 |    548160 | <0.01 |\n"
                       "| Block RAM Tile | 0 |  0 |       912 |  0.00 |\n"
                       "| DSPs      |    0 |     0 |      2520 |  0.00 |\n"
                       "+-----------+------+-------+-----------+-------+\n";
    struct eeb_util u = parse_ok(text, "tiny");
    cr_assert_float_eq(u.frac[EEB_UTIL_LUT], 1.0 / 274080, 1e-18);
    cr_assert_str_eq(u.device, "");
    char *broken = test_replace(text, "|    1 |     0 |    274080 | <0.01 |",
                                "|  100 |     0 |    274080 | <0.01 |");
    assert_has(parse_err(broken), "line 4: 'CLB LUTs' Util% '<0.01' disagrees");
    free(broken);
}

Test(util_report, load_names_missing_file)
{
    struct eeb_util u;
    char err[256];
    cr_assert_eq(eeb_score_util_load("/nonexistent/u.rpt", &u, err, sizeof err), EEB_EIO);
    assert_has(err, "/nonexistent/u.rpt");
}

Test(util_spec, parses_all_four)
{
    struct eeb_util u;
    char err[256] = "";
    cr_assert_eq(
        eeb_score_util_from_spec("dsp=0.19,lut=0.30,bram=0.49,ff=0.19", &u, err, sizeof err),
        EEB_OK, "%s", err);
    cr_assert_float_eq(eeb_score_m_u(&u), 0.2925, 1e-15);
    cr_assert_str_eq(u.family, "given");
}

Test(util_spec, rejects_bad_specs)
{
    struct eeb_util u;
    char err[256];
    cr_assert_eq(eeb_score_util_from_spec("lut=0.3,ff=0.19,bram=0.49", &u, err, sizeof err),
                 EEB_EINVAL);
    assert_has(err, "'dsp' is missing");
    cr_assert_eq(eeb_score_util_from_spec("lut=0.3,ff=0.19,bram=0.49,dsp=1.2", &u, err, sizeof err),
                 EEB_EINVAL);
    assert_has(err, "dsp must be a fraction");
    cr_assert_eq(eeb_score_util_from_spec("lut=0.3,uram=0.1", &u, err, sizeof err), EEB_EINVAL);
    assert_has(err, "unknown resource 'uram'");
    cr_assert_eq(eeb_score_util_from_spec("lut=0.3,lut=0.3", &u, err, sizeof err), EEB_EINVAL);
    assert_has(err, "'lut' given twice");
    cr_assert_eq(eeb_score_util_from_spec("lut=0.3x,ff=0,bram=0,dsp=0", &u, err, sizeof err),
                 EEB_EINVAL);
}

/* ---- fit for M_u: an implemented design's whole report ---- */

Test(util_report, a_synthesized_report_is_parsed_but_gives_no_m_u)
{
    const char *path = EEB_TEST_DATA "/util/pynqz2_synth.rpt";
    struct eeb_util u;
    char err[512];
    cr_assert_eq(eeb_score_util_load(path, &u, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_str_eq(u.state, "Synthesized");
    cr_expect_eq(u.state_line, 9);
    cr_expect_eq(eeb_score_util_check_implemented(&u, path, err, sizeof err), EEB_EFORMAT);
    assert_has(err, "pynqz2_synth.rpt line 9: Design State 'Synthesized', not placed");
    /* a --util goes through the check */
    cr_expect_eq(eeb_score_util_arg(path, &u, NULL, err, sizeof err), EEB_EFORMAT);
    assert_has(err, "line 9: Design State 'Synthesized'");
    /* placed and routed designs pass, and so does a table without its header */
    static const char *const fine[] = {"util/zcu102_placed.rpt", "util/kcu1500_routed.rpt",
                                       "util/vck190_routed.rpt"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
        char *text = test_fixture(fine[i], NULL);
        u = parse_ok(text, fine[i]);
        cr_expect_eq(eeb_score_util_check_implemented(&u, fine[i], err, sizeof err), EEB_OK, "%s",
                     err);
        free(text);
    }
    char *text = test_fixture("util/pynqz2_synth.rpt", NULL);
    u = parse_ok(strstr(text, "1. Slice Logic\n---"), "table");
    cr_expect_eq(eeb_score_util_check_implemented(&u, "table", err, sizeof err), EEB_OK, "%s", err);
    free(text);
}

Test(util_report, an_out_of_context_synthesis_is_refused)
{
    /* an IP synthesized on its own: whatever its state, one IP's counts */
    expect_broken("util/kcu1500_routed.rpt", "| Design State : Routed",
                  "| Design State : Routed\n| Synthesis    : synth_design -top fx_ip -mode "
                  "out_of_context",
                  "r.rpt line 10: the report of an out-of-context synthesis ('out_of_context' in "
                  "its header)");
}

Test(util_report, eeb_score_and_eeb_run_refuse_a_synthesized_or_ooc_report)
{
    const char *synth = EEB_TEST_DATA "/util/pynqz2_synth.rpt";
    struct test_run r = test_eeb((const char *[]){"score", "--task", "cls", "--util", synth,
                                                  "--time", "1", "--tmax", "2", "--energy", "3",
                                                  "--pmax", "10", "--metric", "0.5", NULL});
    cr_expect_eq(r.status, 1);
    assert_has(r.err, "eeb score: " EEB_TEST_DATA "/util/pynqz2_synth.rpt line 9: Design State "
                      "'Synthesized', not placed");
    test_run_free(&r);
    /* eeb run refuses it before it reads its inputs */
    char db[300];
    snprintf(db, sizeof db, "%s/runs.db", test_tmpdir());
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", "ft.eebd", "--test",
                                  "t.eebd", "--model", "m.eebm", "--util", synth, "--db", db,
                                  NULL});
    cr_expect_eq(r.status, 1);
    assert_has(r.err, "eeb run: " EEB_TEST_DATA "/util/pynqz2_synth.rpt line 9: Design State "
                      "'Synthesized', not placed");
    test_run_free(&r);
    char path[300];
    snprintf(path, sizeof path, "%s/ip.rpt", test_tmpdir());
    char *text = test_fixture("util/zcu102_placed.rpt", NULL);
    char *ooc =
        test_replace(text, "| Design State : Fully Placed",
                     "| Design State : Fully Placed\n| Options      : -mode out_of_context");
    test_write_file(path, ooc, strlen(ooc));
    r = test_eeb((const char *[]){"score", "--task", "cls", "--util", path, "--time", "1", "--tmax",
                                  "2", "--energy", "3", "--pmax", "10", "--metric", "0.5", NULL});
    cr_expect_eq(r.status, 1);
    assert_has(r.err, "ip.rpt line 10: the report of an out-of-context synthesis");
    test_run_free(&r);
    free(text), free(ooc);
}
