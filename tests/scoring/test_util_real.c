/*
 * test_util_real.c - utilization reports as real Vivado and Vitis runs
 * write them, beyond the whole-design report M_u is defined on: a block
 * design's top synthesized with its IP as black boxes, reports limited to
 * cells or pblocks, Vitis's kernel report, and Versal's row names.  Each
 * fixture follows the real layout (tests/data/util/).
 */
#include "scoring/eeb_score.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* Parses text under name expecting EEB_EFORMAT; returns the message. */
static const char *refused(const char *text, const char *name)
{
    static char err[1024];
    struct eeb_util u;
    memset(&u, 0, sizeof u);
    int rc = eeb_score_util_parse(text, strlen(text), name, &u, err, sizeof err);
    cr_assert_eq(rc, EEB_EFORMAT, "%s was accepted with M_u = %g", name, eeb_score_m_u(&u));
    return err;
}

/* The same for a fixture, under its own path. */
static const char *fixture_refused(const char *fixture)
{
    static char err[1024];
    char path[256];
    snprintf(path, sizeof path, "tests/data/%s", fixture);
    char *text = test_fixture(fixture, NULL);
    snprintf(err, sizeof err, "%s", refused(text, path));
    free(text);
    return err;
}

Test(util_real, block_design_top_with_black_boxes_is_refused)
{
    /* Every count is 0 because the IP were synthesized out of context:
     * M_u would be 0, a perfect score for resources never counted. */
    char *text = test_fixture("util/zcu104_bd_synth.rpt", NULL);
    const char *err = refused(text, "prj.runs/synth_1/design_1_wrapper_utilization_synth.rpt");
    assert_has(err, "prj.runs/synth_1/design_1_wrapper_utilization_synth.rpt line 86: ");
    assert_has(err, "section '9. Black Boxes' lists 5 black boxes (design_1_zynq_ultra_ps_e_0_0, "
                    "design_1_rst_ps8_0_99M_0, design_1_eeb_train_0_0, ...)");
    assert_has(err, "Design State is 'Synthesized'");
    assert_has(err, "placed or routed report of the implementation run");
    assert_has(err, "impl_1/design_1_wrapper_utilization_placed.rpt");
    free(text);
}

Test(util_real, black_boxes_are_refused_in_any_state)
{
    /* A routed report with black boxes (a DFX static with its partitions
     * black-boxed) counts only the static too, whatever its numbers. */
    char *text = test_fixture("util/zcu104_bd_synth.rpt", NULL);
    char *routed = test_replace(text, "Design State : Synthesized", "Design State : Routed");
    char *lut = test_replace(routed, "|    0 |     0 |          0 |    230400 |  0.00 |",
                             "| 9216 |     0 |          0 |    230400 |  4.00 |");
    const char *err = refused(lut, "r.rpt");
    assert_has(err, "r.rpt line 86: section '9. Black Boxes' lists 5 black boxes");
    assert_has(err, "Design State is 'Routed'");
    free(lut);
    free(routed);
    free(text);
}

Test(util_real, one_black_box_is_enough)
{
    char *text = test_fixture("util/zcu104_bd_synth.rpt", NULL);
    const char *rows = "| design_1_rst_ps8_0_99M_0     |    1 |\n"
                       "| design_1_eeb_train_0_0       |    1 |\n"
                       "| design_1_axi_smc_0           |    1 |\n"
                       "| design_1_axi_dma_0_0         |    1 |\n";
    char *one = test_replace(text, rows, "");
    assert_has(refused(one, "r.rpt"), "lists 1 black box (design_1_zynq_ultra_ps_e_0_0):");
    free(one);
    free(text);
}

Test(util_real, all_zero_counts_are_refused_without_a_black_box_table)
{
    /* The same report trimmed before its Black Boxes section: nothing says
     * why, but no design that ran a fine-tune uses no LUT, FF, BRAM or DSP. */
    char *text = test_fixture("util/zcu104_bd_synth.rpt", NULL);
    text[strstr(text, "8. Primitives\n---") - text] = '\0';
    const char *err = refused(text, "r.rpt");
    assert_has(err, "r.rpt: LUT, FF, BRAM and DSP are all 0 (lines 35, 38, 55 and 68; Design "
                    "State 'Synthesized')");
    assert_has(err, "impl_1/design_1_wrapper_utilization_placed.rpt");
    free(text);
}

Test(util_real, empty_black_box_table_is_accepted)
{
    /* Real placed reports carry the section with an empty table. */
    char *text = test_fixture("util/vck190_routed.rpt", NULL);
    struct eeb_util u;
    char err[512] = "";
    cr_assert_eq(eeb_score_util_parse(text, strlen(text), "v.rpt", &u, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_str_eq(u.state, "Routed");
    free(text);
}

Test(util_real, cells_report_is_refused)
{
    /* Used counts one instance, Available the whole device: M_u of a part. */
    const char *err = fixture_refused("util/zcu102_cells_routed.rpt");
    assert_has(err, "tests/data/util/zcu102_cells_routed.rpt line 6: made by "
                    "'report_utilization -cells'");
    assert_has(err, "Command: report_utilization -cells design_1_i/eeb_train_0/inst");
    assert_has(err, "not the whole design");
    assert_has(err, "impl_1/design_1_wrapper_utilization_placed.rpt");
}

Test(util_real, abbreviated_option_is_recognised)
{
    /* Vivado takes any unambiguous prefix of an option. */
    char *text = test_fixture("util/zcu102_cells_routed.rpt", NULL);
    char *cell = test_replace(text, "-cells design_1_i", "-cell design_1_i");
    assert_has(refused(cell, "r.rpt"), "r.rpt line 6: made by 'report_utilization -cells'");
    free(cell);
    free(text);
}

Test(util_real, pblock_report_is_refused)
{
    const char *err = fixture_refused("util/zcu102_pblock_routed.rpt");
    assert_has(err, "tests/data/util/zcu102_pblock_routed.rpt line 6: made by "
                    "'report_utilization -pblocks'");
    assert_has(err, "the pblocks' own sites");
}

Test(util_real, pblock_table_layout_is_refused_without_the_header)
{
    /* Copied out of the Tcl console (-return_string): no Command line, but
     * the Parent / Child / Non-Assigned columns give it away. */
    char *text = test_fixture("util/zcu102_pblock_routed.rpt", NULL);
    const char *err = refused(strstr(text, "3. CLB Logic"), "r.rpt");
    assert_has(err, "r.rpt line 5: a table with 'Parent', 'Child' and 'Non-Assigned' columns is "
                    "made by 'report_utilization -pblocks'");
    free(text);
}

Test(util_real, hierarchical_report_is_named)
{
    char *text = test_fixture("util/zcu102_placed.rpt", NULL);
    char *hier = test_replace(text, "report_utilization -file eeb_train_top_utilization.rpt",
                              "report_utilization -hierarchical -file h.rpt");
    assert_has(refused(hier, "r.rpt"), "r.rpt line 6: made by 'report_utilization -hierarchical'");
    free(hier);
    free(text);
}

Test(util_real, other_command_is_refused)
{
    char *text = test_fixture("util/zcu102_placed.rpt", NULL);
    char *power = test_replace(text, "report_utilization -file", "report_power -file");
    assert_has(refused(power, "r.rpt"), "r.rpt line 6: made by 'report_power', not "
                                        "report_utilization");
    free(power);
    free(text);
}

Test(util_real, vitis_kernel_report_names_the_full_report)
{
    /* Its Used Resources row counts the kernels against the budget the
     * platform leaves (LUT 11.53 %); the device's LUT use is 22.12 %. */
    struct eeb_util u;
    char err[1024];
    cr_assert_eq(
        eeb_score_util_load("tests/data/util/impl_1_kernel_util_routed.rpt", &u, err, sizeof err),
        EEB_EFORMAT);
    assert_has(err, "tests/data/util/impl_1_kernel_util_routed.rpt line 6: a Vitis kernel "
                    "utilization report (report_accelerator_utilization)");
    assert_has(err, "give tests/data/util/impl_1_full_util_routed.rpt instead");
}

Test(util_real, vitis_kernel_table_is_refused_without_the_header)
{
    char *text = test_fixture("util/impl_1_kernel_util_routed.rpt", NULL);
    const char *table = strstr(text, "+-----");
    const char *err = refused(table, "_x/reports/link/imp/impl_1_kernel_util_placed.rpt");
    assert_has(err, "impl_1_kernel_util_placed.rpt line 2: a Vitis kernel utilization report");
    assert_has(err, "give _x/reports/link/imp/impl_1_full_util_placed.rpt instead");
    free(text);
}

Test(util_real, vitis_kernel_report_under_another_name)
{
    char *text = test_fixture("util/impl_1_kernel_util_routed.rpt", NULL);
    assert_has(refused(text, "k.rpt"),
               "give impl_1_full_util_routed.rpt from the same folder (_x/reports/link/imp/)");
    free(text);
}

Test(util_real, versal_row_names)
{
    /* Versal names the FF row 'Registers' and the DSP row 'DSP Slices'. */
    char *text = test_fixture("util/vck190_routed.rpt", NULL);
    struct eeb_util u;
    char err[512] = "";
    cr_assert_eq(eeb_score_util_parse(text, strlen(text), "vck190", &u, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_str_eq(u.family, "versal");
    cr_assert_str_eq(u.device, "xcvc1902-vsva2197-2MP-e-S");
    cr_assert_float_eq(u.frac[EEB_UTIL_LUT], 187364.0 / 899840, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_FF], 301522.0 / 1799680, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_BRAM], 412.0 / 967, 1e-15);
    cr_assert_float_eq(u.frac[EEB_UTIL_DSP], 640.0 / 1968, 1e-15);
    cr_assert_eq(u.line[EEB_UTIL_FF], 36);
    cr_assert_eq(u.line[EEB_UTIL_DSP], 62);
    free(text);
}

Test(util_real, versal_rows_do_not_mix_with_7series)
{
    char *text = test_fixture("util/vck190_routed.rpt", NULL);
    char *mixed = test_replace(text, "| CLB LUTs*  ", "| Slice LUTs*");
    assert_has(refused(mixed, "r.rpt"),
               "; line 39: 'Slice LUTs' mixes device families with line 36");
    free(mixed);
    free(text);
}

Test(util_real, unknown_dsp_row_names_what_it_looked_for)
{
    char *text = test_fixture("util/vck190_routed.rpt", NULL);
    char *renamed = test_replace(text, "| DSP Slices |", "| DSP58s     |");
    assert_has(refused(renamed, "r.rpt"), "r.rpt: no 'DSPs' row (Versal: 'DSP Slices')");
    free(renamed);
    free(text);
}

Test(util_real, score_command_refuses_black_boxes)
{
    const char *args[] = {
        "score",  "--task", "cls",    "--util",   "tests/data/util/zcu104_bd_synth.rpt",
        "--time", "100",    "--tmax", "200",      "--energy",
        "1000",   "--pmax", "20",     "--metric", "0.9",
        NULL};
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, 1, "exit %d, stdout: %s", r.status, r.out);
    assert_has(r.err, "tests/data/util/zcu104_bd_synth.rpt line 86: section '9. Black Boxes'");
    cr_assert_eq(strstr(r.out, "M_u"), NULL, "scored anyway: %s", r.out);
    test_run_free(&r);
}

/* The spec form is held to the same rule as a report: all four 0 is a
 * design that uses nothing, and a perfect M_u. */
Test(util_real, a_spec_of_all_zeros_is_refused_as_a_report_is)
{
    struct eeb_util u;
    char err[512];
    cr_assert_eq(eeb_score_util_from_spec("lut=0,ff=0,bram=0,dsp=0", &u, err, sizeof err),
                 EEB_EINVAL);
    assert_has(err, "all 0 would make M_u 0");
    cr_assert_eq(eeb_score_util_from_spec("lut=0,ff=0,bram=0,dsp=0.01", &u, err, sizeof err),
                 EEB_OK, "%s", err);
}
