/*
 * test_xclbin_system.c - the resources an xclbin records about itself
 * (SYSTEM_METADATA, in the layout Vitis writes) and the M_u eeb takes from
 * them: xclbins written by eeb's own writer with such a section, read back
 * by `eeb xclbin info` and `eeb score --xclbin`, every M_u here computed
 * by the test from the counts it wrote.  Then what is refused: a --util
 * more than 1 % apart (naming the resource), synthesized figures alone, a
 * total the part table cannot fill, and each malformed field, named.
 */
#include "fpga/tools/eeb_xclbin.h"
#include "scoring/eeb_score.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- SYSTEM_METADATA as Vitis writes it ---- */

enum { LUT, REG, BRAM, DSP, URAM, NRES };
static const char *const res_names[NRES] = {"LUT", "REG", "BRAM", "DSP", "URAM"};

/* One set of a unit's figures: after the step origin. */
struct figures {
    const char *origin;
    double used[NRES];
};

struct unit {
    const char *name;
    int n;
    struct figures f[3];
};

/* A count as Vitis writes it: a decimal string. */
static json_t *count(double v)
{
    char text[32];
    snprintf(text, sizeof text, "%.10g", v);
    return json_string(text);
}

static json_t *used_list(const double used[NRES])
{
    json_t *list = json_array();
    for (int k = 0; k < NRES; k++) {
        json_array_append_new(
            list, json_pack("{s:s, s:o}", "resource", res_names[k], "used", count(used[k])));
        if (k == LUT) /* a resource M_u does not read, between two it does */
            json_array_append_new(list,
                                  json_pack("{s:s, s:s}", "resource", "LUTAsMem", "used", "1234"));
    }
    return list;
}

/* available[k] < 0: the platform leaves it "" (Vitis's empty total). */
static json_t *available_list(const double available[NRES])
{
    json_t *list = json_array();
    for (int k = 0; k < NRES; k++)
        json_array_append_new(list,
                              json_pack("{s:s, s:o}", "resource", res_names[k], "available",
                                        available[k] < 0 ? json_string("") : count(available[k])));
    return list;
}

/* The whole section (free it); part NULL: xsa names none. */
static char *system_json(const struct unit *units, int n, const double available[NRES],
                         const char *part)
{
    json_t *cus = json_array();
    for (int i = 0; i < n; i++) {
        json_t *origins = json_array();
        for (int j = 0; j < units[i].n; j++)
            json_array_append_new(origins, json_pack("{s:s, s:o}", "origin", units[i].f[j].origin,
                                                     "resources", used_list(units[i].f[j].used)));
        json_array_append_new(cus, json_pack("{s:s, s:s, s:o}", "name", units[i].name,
                                             "kernel_name", "vadd", "actual_resources", origins));
    }
    json_t *xsa = json_pack("{s:s, s:o}", "name", "xilinx_zcu104_base_202210_1",
                            "available_resources", available_list(available));
    if (part)
        json_object_set_new(xsa, "part", json_string(part));
    json_t *root = json_pack("{s:{s:o, s:{s:{s:s}, s:[{s:s, s:o}]}}}", "system_diagram_metadata",
                             "xsa", xsa, "xclbin", "generated_by", "xclbin_name", "vadd",
                             "user_regions", "name", "OCL_REGION_0", "compute_units", cus);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    cr_assert_not_null(text);
    return text;
}

static char xclbin[300];

/* An xclbin of eeb's writer carrying json as its SYSTEM_METADATA; its own
 * USER_METADATA says other fractions, which M_u must not take. */
static const char *build(const char *json)
{
    char err[512];
    snprintf(xclbin, sizeof xclbin, "%s/fx.xclbin", test_tmpdir());
    struct eeb_xclbin_spec spec = {"device=zcu104,pes=4,macs=16,ddr=1",
                                   "lut=0.5,ff=0.25,bram=0.75,dsp=0.125", "given", json,
                                   json ? strlen(json) : 0};
    cr_assert_eq(eeb_xclbin_build(xclbin, &spec, err, sizeof err), EEB_OK, "%s", err);
    return xclbin;
}

/* M_u as eeb defines it, from the counts: the mean of four fractions. */
static double m_u_of(const double used[NRES], const double available[NRES])
{
    return (used[LUT] / available[LUT] + used[REG] / available[REG] + used[BRAM] / available[BRAM] +
            used[DSP] / available[DSP]) /
           4;
}

/* The ZCU104's part (DS891, the XCZU7EV): what its platform has. */
static const double zcu104[NRES] = {230400, 460800, 312, 1728, 96};

/* Two units, one with its synthesized figures beside the routed ones. */
static const struct unit two_units[] = {
    {"vadd_1",
     2,
     {{"synthesized", {40000, 61000, 90, 300, 0}}, {"routed", {41234, 60321, 96.5, 320, 2}}}},
    {"vadd_2", 1, {{"routed", {11000, 20000, 24, 64, 0}}}},
};

static void sum_units(const struct unit *u, int n, double out[NRES])
{
    for (int k = 0; k < NRES; k++)
        out[k] = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < NRES; k++)
            out[k] += u[i].f[u[i].n - 1].used[k]; /* the last: routed or placed */
}

/* M_u from the xclbin at path through the library; EEB_OK or the error. */
static int m_u_from(const char *path, struct eeb_util *u, char *source, char *err, size_t errlen)
{
    struct eeb_xclbin_info *in;
    int rc = eeb_xclbin_read(path, &in, err, errlen);
    cr_assert_eq(rc, EEB_OK, "%s", err);
    rc = eeb_xclbin_m_u(in, "fx.xclbin", NULL, NULL, u, source, 400, err, errlen);
    eeb_xclbin_info_free(in);
    return rc;
}

/* ---- read back ---- */

Test(xclbin_system, info_prints_each_units_routed_figures_their_totals_and_m_u)
{
    char *json = system_json(two_units, 2, zcu104, "xczu7ev-ffvc1156-2-e");
    build(json);
    double total[NRES];
    sum_units(two_units, 2, total);
    struct test_run r = test_eeb((const char *[]){"xclbin", "info", xclbin, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    char line[200];
    assert_has(r.out, "resources (SYSTEM_METADATA): 2 compute units, part xczu7ev-ffvc1156-2-e");
    snprintf(line, sizeof line, "  %-18s %10.10g %10.10g %10.10g %10.10g %10.10g  routed",
             "cu vadd_1", 41234.0, 60321.0, 96.5, 320.0, 2.0);
    assert_has(r.out, line);
    snprintf(line, sizeof line, "  %-18s %10.10g %10.10g %10.10g %10.10g %10.10g\n", "total",
             total[LUT], total[REG], total[BRAM], total[DSP], total[URAM]);
    assert_has(r.out, line);
    snprintf(line, sizeof line, "  M_u   %.4f   the mean of LUT, FF (REG), BRAM and DSP, routed",
             m_u_of(total, zcu104));
    assert_has(r.out, line);
    cr_expect_null(strstr(r.out, "FF total from the part"), "%s", r.out);
    test_run_free(&r);

    json_t *o = test_eeb_json((const char *[]){"xclbin", "info", "--json", xclbin, NULL}, 0);
    json_t *res = json_object_get(o, "resources");
    cr_expect_float_eq(test_json_num(res, "M_u"), m_u_of(total, zcu104), 1e-12);
    cr_expect_str_eq(json_string_value(json_object_get(res, "origin")), "routed");
    json_t *cu = json_array_get(json_object_get(res, "compute_units"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(cu, "name")), "vadd_1");
    cr_expect_float_eq(test_json_num(json_object_get(cu, "used"), "BRAM"), 96.5, 0);
    cr_expect_float_eq(test_json_num(json_object_get(res, "total"), "LUT"), total[LUT], 0);
    cr_expect_float_eq(test_json_num(json_object_get(res, "available"), "DSP"), 1728, 0);
    cr_expect_float_eq(test_json_num(json_object_get(res, "utilization"), "ff"),
                       total[REG] / zcu104[REG], 1e-15);
    json_decref(o);
    free(json);
}

Test(xclbin_system, numbers_as_json_numbers_are_read_as_strings_are)
{
    char *json = system_json(two_units, 2, zcu104, NULL);
    /* Vitis writes strings; a number where a string was is the same count */
    char *numbers = test_replace(json, "\"used\":\"41234\"", "\"used\":41234");
    char *both = test_replace(numbers, "\"available\":\"312\"", "\"available\":312.0");
    struct eeb_util a, b;
    char source[400], err[1024];
    build(json);
    cr_assert_eq(m_u_from(xclbin, &a, source, err, sizeof err), EEB_OK, "%s", err);
    build(both);
    cr_assert_eq(m_u_from(xclbin, &b, source, err, sizeof err), EEB_OK, "%s", err);
    for (int k = 0; k < EEB_UTIL_COUNT; k++)
        cr_expect_eq(a.frac[k], b.frac[k]);
    cr_expect_str_eq(source, "SYSTEM_METADATA: routed figures of 2 compute units");
    free(json), free(numbers), free(both);
}

Test(xclbin_system, the_ff_total_comes_from_the_part_where_the_platform_leaves_it_empty)
{
    double available[NRES];
    memcpy(available, zcu104, sizeof available);
    available[REG] = -1;
    double total[NRES];
    sum_units(two_units, 2, total);
    /* the part from xsa, and (without it) from the kernel XML's fpgaDevice */
    for (int named = 1; named >= 0; named--) {
        char *json = system_json(two_units, 2, available, named ? "xczu7ev-ffvc1156-2-e" : NULL);
        build(json);
        struct eeb_util u;
        char source[400], err[1024];
        cr_assert_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_float_eq(eeb_score_m_u(&u), m_u_of(total, zcu104), 1e-12);
        cr_expect_eq(u.available[EEB_UTIL_FF], 460800);
        assert_has(source, "FF total from the part xczu7ev: the platform leaves it empty");
        free(json);
    }
    struct test_run r = test_eeb((const char *[]){"xclbin", "info", xclbin, NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    assert_has(r.out, "  FF total from the part xczu7ev: the platform leaves it empty");
    test_run_free(&r);

    /* a part eeb has no table row for: refused, naming it */
    char *json = system_json(two_units, 2, available, "xcu280-fsvh2892-2L-e");
    build(json);
    struct eeb_util u;
    char source[400], err[1024];
    cr_expect_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_EFORMAT);
    assert_has(err, "leaves the platform's REG (FF) total empty, and eeb knows no FF total for "
                    "the part 'xcu280-fsvh2892-2L-e'");
    free(json);
}

Test(xclbin_system, per_slr_totals_are_summed)
{
    char *json = system_json(two_units, 1, zcu104, NULL);
    /* the platform's totals given per SLR instead: two halves of the ZCU104's */
    json_t *root = json_loads(json, 0, NULL), *xsa;
    xsa = json_object_get(json_object_get(root, "system_diagram_metadata"), "xsa");
    double half[NRES];
    for (int k = 0; k < NRES; k++)
        half[k] = zcu104[k] / 2;
    json_object_del(xsa, "available_resources");
    json_object_set_new(xsa, "device_topology",
                        json_pack("[{s:o}, {s:s}, {s:o}]", "available_resources",
                                  available_list(half), "name", "SLR_without_totals",
                                  "available_resources", available_list(half)));
    char *slrs = json_dumps(root, JSON_COMPACT);
    build(slrs);
    struct eeb_util u;
    char source[400], err[1024];
    cr_assert_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(eeb_score_m_u(&u), m_u_of(two_units[0].f[1].used, zcu104), 1e-12);
    json_decref(root);
    free(json), free(slrs);
}

Test(xclbin_system, fully_placed_figures_serve_where_none_are_routed)
{
    const struct unit placed[] = {
        {"vadd_1", 2, {{"synthesized", {1, 1, 1, 1, 0}}, {"fully_placed", {5000, 9000, 10, 20}}}},
    };
    char *json = system_json(placed, 1, zcu104, NULL);
    build(json);
    struct eeb_util u;
    char source[400], err[1024];
    cr_assert_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(eeb_score_m_u(&u), m_u_of(placed[0].f[1].used, zcu104), 1e-12);
    cr_expect_str_eq(u.state, "Fully Placed");
    assert_has(source, "fully_placed figures of 1 compute unit");
    free(json);
}

Test(xclbin_system, an_xclbin_without_figures_leaves_m_u_to_the_caller)
{
    struct eeb_util u;
    char source[400], err[1024];
    build(NULL);
    cr_expect_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_ENODATA);
    /* a hw_emu build: the units are there, their figures are not */
    build("{\"system_diagram_metadata\": {\"xclbin\": {\"user_regions\": [{\"compute_units\": "
          "[{\"name\": \"vadd_1\"}]}]}}}");
    cr_expect_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_ENODATA);
    /* eeb score --xclbin then reads eeb's own USER_METADATA */
    json_t *o = test_eeb_json((const char *[]){"score", "--task", "cls", "--xclbin", xclbin,
                                               "--time", "450", "--tmax", "600", "--energy", "2700",
                                               "--pmax", "10", "--metric", "0.81", "--json", NULL},
                              0);
    cr_expect_float_eq(test_json_num(o, "M_u"), (0.5 + 0.25 + 0.75 + 0.125) / 4, 1e-12);
    json_decref(o);
}

/* ---- eeb score --xclbin ---- */

static const char *const score_args[] = {"--time", "450",    "--tmax", "600",      "--energy",
                                         "2700",   "--pmax", "10",     "--metric", "0.81"};

/* eeb score --task cls --xclbin FILE [--util UTIL] [--json] ... */
static struct test_run score(const char *path, const char *util, int as_json)
{
    const char *args[32] = {"score", "--task", "cls", "--xclbin", path};
    int n = 5;
    if (util)
        args[n++] = "--util", args[n++] = util;
    for (size_t i = 0; i < sizeof score_args / sizeof *score_args; i++)
        args[n++] = score_args[i];
    if (as_json)
        args[n++] = "--json";
    args[n] = NULL;
    return test_eeb(args);
}

Test(xclbin_system, eeb_score_takes_m_u_from_the_xclbins_figures)
{
    char *json = system_json(two_units, 2, zcu104, NULL);
    build(json);
    double total[NRES];
    sum_units(two_units, 2, total);
    struct test_run r = score(xclbin, NULL, 1);
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    cr_expect_float_eq(test_json_num(o, "M_u"), m_u_of(total, zcu104), 1e-12);
    json_t *util = json_object_get(o, "utilization");
    assert_has(json_string_value(json_object_get(util, "source")),
               "(SYSTEM_METADATA: routed figures of 2 compute units)");
    cr_expect_str_eq(json_string_value(json_object_get(util, "device")), "xczu7ev");
    json_decref(o);
    test_run_free(&r);
    r = score(xclbin, NULL, 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    char line[100];
    snprintf(line, sizeof line, "M_u          %.6f", m_u_of(total, zcu104));
    assert_has(r.out, line);
    test_run_free(&r);
    free(json);
}

/* An xclbin whose one unit's routed figures are the report's counts (its
 * Used and Available columns), BRAM moved by shift of the device. */
static void build_like_report(const struct eeb_util *rep, double shift)
{
    struct unit u = {"vadd_1", 1, {{"routed", {0}}}};
    double available[NRES] = {0, 0, 0, 0, 0};
    for (int k = 0; k < EEB_UTIL_COUNT; k++) {
        u.f[0].used[k] = rep->used[k];
        available[k] = rep->available[k];
    }
    u.f[0].used[BRAM] += shift * available[BRAM];
    char *json = system_json(&u, 1, available, NULL);
    build(json);
    free(json);
}

Test(xclbin_system, a_util_more_than_1_percent_apart_is_refused_naming_the_resource)
{
    const char *rpt = EEB_TEST_DATA "/util/zcu102_placed.rpt";
    struct eeb_util rep;
    char err[1024];
    cr_assert_eq(eeb_score_util_load(rpt, &rep, err, sizeof err), EEB_OK, "%s", err);

    /* the report's own counts: the same fractions */
    build_like_report(&rep, 0);
    struct test_run r = score(xclbin, rpt, 1);
    cr_expect_eq(r.status, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_expect_float_eq(test_json_num(o, "M_u"), eeb_score_m_u(&rep), 1e-12);
    assert_has(json_string_value(json_object_get(json_object_get(o, "utilization"), "source")),
               "--util agrees within 0.01 per resource");
    json_decref(o);
    test_run_free(&r);

    /* BRAM 0.9 points apart: within */
    build_like_report(&rep, 0.009);
    r = score(xclbin, rpt, 0);
    cr_expect_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);

    /* 2 points apart: refused, naming BRAM and both fractions */
    build_like_report(&rep, 0.02);
    r = score(xclbin, rpt, 0);
    cr_expect_eq(r.status, 1);
    char want[1200];
    snprintf(want, sizeof want,
             "eeb score: --util: BRAM %.4f in the report %s, %.4f in %s's "
             "routed figures: more than 1 %% apart",
             rep.frac[EEB_UTIL_BRAM], rpt, rep.frac[EEB_UTIL_BRAM] + 0.02, xclbin);
    assert_has(r.err, want);
    test_run_free(&r);

    /* the spec form is held to the same */
    char spec[200];
    snprintf(spec, sizeof spec, "lut=%.6f,ff=%.6f,bram=%.6f,dsp=%.6f",
             rep.frac[EEB_UTIL_LUT] + 0.015, rep.frac[EEB_UTIL_FF], rep.frac[EEB_UTIL_BRAM],
             rep.frac[EEB_UTIL_DSP]);
    build_like_report(&rep, 0);
    r = score(xclbin, spec, 0);
    cr_expect_eq(r.status, 1);
    assert_has(r.err, "eeb score: --util: LUT ");
    assert_has(r.err, " in the given figures lut=");
    test_run_free(&r);
}

/* ---- refused ---- */

Test(xclbin_system, synthesized_figures_alone_give_no_m_u)
{
    const struct unit synth[] = {
        {"vadd_1", 1, {{"synthesized", {40000, 61000, 90, 300, 0}}}},
    };
    char *json = system_json(synth, 1, zcu104, NULL);
    build(json);
    const char *why = "fx.xclbin: SYSTEM_METADATA: compute unit vadd_1 has synthesized figures "
                      "only, no routed or fully_placed ones";
    struct eeb_util u;
    char source[400], err[1024];
    cr_expect_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_EFORMAT);
    assert_has(err, why);
    /* info shows the figures and why they give no M_u; a valid file */
    struct test_run r = test_eeb((const char *[]){"xclbin", "info", xclbin, NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    assert_has(r.out, "synthesized\n");
    assert_has(r.out, "  M_u   refused: ");
    test_run_free(&r);
    r = score(xclbin, NULL, 0);
    cr_expect_eq(r.status, 1);
    assert_has(r.err, "compute unit vadd_1 has synthesized figures only");
    test_run_free(&r);
    free(json);
}

/* A good section with from replaced by to must be refused naming field. */
static void refused(const char *from, const char *to, const char *field)
{
    char *json = system_json(two_units, 2, zcu104, NULL);
    char *bad = from ? test_replace(json, from, to) : strdup(to);
    build(bad);
    struct eeb_util u;
    char source[400], err[1024];
    cr_expect_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_EFORMAT, "%s", bad);
    cr_expect(strstr(err, "fx.xclbin: SYSTEM_METADATA: ") && strstr(err, field),
              "'%s' does not name '%s'", err, field);
    free(json), free(bad);
}

Test(xclbin_system, a_malformed_section_is_refused_naming_the_field)
{
    refused(NULL, "{\"system_diagram_metadata\": {", "not JSON (line 1");
    refused(NULL, "[1, 2]", "the top: an array, not an object");
    refused("\"actual_resources\":[", "\"actual_resources\":{\"x\":1},\"y\":[",
            "xclbin.user_regions[0].compute_units[0].actual_resources: an object, not an array");
    refused("\"used\":\"41234\"", "\"used\":\"41x34\"",
            "compute_units[0].actual_resources[1].resources[0].used: '41x34' is not a count");
    refused("\"used\":\"41234\"", "\"used\":\"4e4\"", "resources[0].used: '4e4' is not a count");
    refused("\"used\":\"41234\"", "\"used\":-41234", "resources[0].used: -41234 is not a count");
    refused("\"used\":\"41234\"", "\"used\":true", "resources[0].used: true, not a count");
    refused("{\"resource\":\"LUT\",\"used\":\"41234\"}", "{\"used\":\"41234\"}",
            "resources[0].resource: missing");
    refused("\"origin\":\"synthesized\"", "\"origin\":\"routed\"",
            "actual_resources[1].origin: a second set of routed figures");
    refused("{\"resource\":\"DSP\",\"used\":\"320\"}", "{\"resource\":\"LUT\",\"used\":\"320\"}",
            "actual_resources[1].resources[4]: LUT listed twice");
    refused(",{\"resource\":\"DSP\",\"used\":\"320\"}", "",
            "compute unit vadd_1's routed figures have no DSP");
    refused("\"name\":\"vadd_2\"", "\"name\":\"vadd\\u001b[2J\"",
            "compute_units[1].name: not printable ASCII text");
    refused("\"xsa\":{", "\"platform\":{", "system_diagram_metadata.xsa: missing");
    refused("\"available_resources\":[", "\"available_resources\":[{\"resource\":7},",
            "xsa.available_resources[0].resource: a number, not a string");
    refused("\"available\":\"230400\"", "\"available\":\"\"",
            "leaves the platform's LUT total empty");
    refused("\"available\":\"1728\"", "\"available\":\"100\"",
            "routed figures add up to 384 DSP, over the platform's 100");
    refused("\"available\":\"312\"", "\"available\":\"0\"", "the platform's BRAM total is 0");

    /* every list is bounded: 65 units with figures */
    struct unit many[65];
    char names[65][16];
    for (int i = 0; i < 65; i++) {
        snprintf(names[i], sizeof names[i], "vadd_%d", i + 1);
        many[i] = (struct unit){names[i], 1, {{"routed", {1, 1, 1, 1, 0}}}};
    }
    char *json = system_json(many, 65, zcu104, NULL);
    build(json);
    struct eeb_util u;
    char source[400], err[1024];
    cr_expect_eq(m_u_from(xclbin, &u, source, err, sizeof err), EEB_EFORMAT);
    assert_has(err, "compute_units[64]: over 64 compute units with figures");
    free(json);
}

Test(xclbin_system, eeb_xclbin_info_names_the_malformed_field_and_fails)
{
    char *json = system_json(two_units, 2, zcu104, NULL);
    char *bad = test_replace(json, "\"used\":\"60321\"", "\"used\":\"sixty\"");
    build(bad);
    struct test_run r = test_eeb((const char *[]){"xclbin", "info", xclbin, NULL});
    cr_expect_eq(r.status, 1);
    /* the rest is shown, to find what is wrong; then the error */
    assert_has(r.out, "fx_kernel: 1 compute unit");
    char want[1200];
    snprintf(want, sizeof want,
             "eeb xclbin: %s: SYSTEM_METADATA: system_diagram_metadata.xclbin.user_regions[0]"
             ".compute_units[0].actual_resources[1].resources[2].used: 'sixty' is not a count",
             xclbin);
    assert_has(r.err, want);
    test_run_free(&r);
    r = test_eeb((const char *[]){"xclbin", "info", "--json", xclbin, NULL});
    cr_expect_eq(r.status, 1);
    cr_expect_str_eq(r.out, "");
    test_run_free(&r);
    free(json), free(bad);
}
