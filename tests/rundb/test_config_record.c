/*
 * test_config_record.c - the stored run configuration: what its section
 * writers write, its reader reads back, figure for figure, in the layouts
 * eeb run, the server and eeb power log store; and a key renamed on one
 * side shows here, not as a NaN in eeb check.
 */
#include "rundb/eeb_config_record.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(config_record);

static struct eeb_config_record read_back(json_t *o)
{
    char *text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(o);
    struct eeb_config_record c;
    cr_assert_eq(eeb_config_record_read(text, &c), EEB_OK);
    free(text);
    return c;
}

/* Every section eeb run writes, and every figure read back as written. */
Test(config_record, a_local_runs_sections_read_back)
{
    const double util[4] = {0.30, 0.19, 0.49, 0.18}, w[4] = {0.1, 0.2, 0.3, 0.4};
    json_t *o = json_object();
    eeb_config_put_task(o, "det");
    eeb_config_put_backend(o, "faulty:emu?delay_ms=5", "modeled");
    eeb_config_put_input(o, "finetune", "/d/ft.eebd", "ab12", 1000);
    eeb_config_put_input(o, "model", "/d/team.model", "ef78", 0);
    eeb_config_put_input(o, "xclbin", "/d/team.xclbin", "9a0b", 0);
    eeb_config_put_input(o, "test", "/d/test.eebd", "cd34", 300);
    eeb_config_put_power(o, "sim:profile=model", 20, "modeled", "skipped 2 lines");
    eeb_config_put_budgets(o, 600, 10, EEB_CLOCK_MODELED, 5, 1);
    eeb_config_put_util(o, util, "zcu102.rpt", "report", "xczu9eg-ffvb1156-2-e");
    const struct eeb_config_device dev = {.design = "device=zcu104,pe=16",
                                          .train_step_s = 0.5,
                                          .train_w = 6.5,
                                          .resources = {1000, 2000, 30, 40}};
    json_object_set_new(o, "device_model", eeb_config_device_model(&dev));
    /* as harness/run_record.c writes it: the device is modeled at this
     * batch and these frozen layers */
    json_object_set_new(o, "training", json_pack("{s:f, s:f}", "batch", 16.0, "frozen", 2.0));
    eeb_config_put_rules(o, "1", NULL, w, 1, 10);
    struct eeb_config_record c = read_back(o);
    cr_assert_str_eq(c.task, "det");
    cr_assert_str_eq(c.backend, "faulty:emu?delay_ms=5");
    cr_assert_str_eq(c.provenance, "modeled");
    for (int i = 0; i < 4; i++) {
        cr_assert_float_eq(c.util[i], util[i], 1e-12, "util %d", i);
        cr_assert_float_eq(c.weights[i], w[i], 1e-12, "weight %d", i);
    }
    cr_assert_str_eq(c.util_source, "zcu102.rpt");
    cr_assert_str_eq(c.util_device, "xczu9eg-ffvb1156-2-e");
    cr_assert_float_eq(c.window_s, 1, 1e-12);
    cr_assert_float_eq(c.min_rate_hz, 10, 1e-12);
    cr_assert_float_eq(c.rate_hz, 20, 1e-12);
    cr_assert_str_eq(c.power_provenance, "modeled");
    cr_assert_float_eq(c.test_items, 300, 0);
    cr_assert_str_eq(c.finetune_sha256, "ab12");
    cr_assert_str_eq(c.model_sha256, "ef78");
    cr_assert_str_eq(c.model_path, "/d/team.model");
    cr_assert_float_eq(c.batch, 16, 0);
    cr_assert_float_eq(c.frozen, 2, 0);
    cr_assert_str_eq(c.xclbin_sha256, "9a0b");
    cr_assert_str_eq(c.design, "device=zcu104,pe=16");
    cr_assert_str_eq(c.clock, EEB_CLOCK_MODELED);
    cr_assert_float_eq(c.device_step_s, 0.5, 0);
    cr_assert_float_eq(c.device_train_w, 6.5, 0);
    cr_assert_eq(c.official, 0);
}

/* An official run's: the test from the server, which says M_s is its. */
Test(config_record, an_official_runs_test_and_server_read_back)
{
    json_t *o = json_object();
    eeb_config_put_official(o, "http://127.0.0.1:8080", 7);
    eeb_config_put_test_from(o, "http://127.0.0.1:8080", 42);
    struct eeb_config_record c = read_back(o);
    cr_assert_eq(c.official, 1);
    cr_assert_float_eq(c.test_items, 42, 0);
}

/* The server's own layout: the test by its size, the fine-tune set by its
 * hash, budgets without the harness's grace period. */
Test(config_record, the_servers_layout_reads_back)
{
    const double util[4] = {0.5, 0.5, 0.5, 0.5}, w[4] = {0.25, 0.25, 0.25, 0.25};
    json_t *o = json_object();
    eeb_config_put_backend(o, "xrt", "measured");
    eeb_config_put_power(o, "uploaded", 10, "measured", NULL);
    eeb_config_put_input(o, "test", NULL, NULL, 300);
    eeb_config_put_util(o, util, "declared at registration", "declared", NULL);
    eeb_config_put_budgets(o, 600, 10, NULL, NAN, -1);
    eeb_config_put_rules(o, "1", NULL, w, 1, 10);
    eeb_config_put_input(o, "finetune", NULL, "ef56", 0);
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    cr_assert(strstr(text, "\"budgets\":{\"t_max_s\":600.0,\"p_max_w\":10.0}"), "%s", text);
    cr_assert(strstr(text, "\"test\":{\"items\":300}"), "%s", text);
    free(text);
    struct eeb_config_record c = read_back(o);
    cr_assert_float_eq(c.test_items, 300, 0);
    cr_assert_str_eq(c.finetune_sha256, "ef56");
    cr_assert_str_eq(c.power_provenance, "measured");
    cr_assert_str_eq(c.backend, "xrt");
    cr_assert_str_eq(c.provenance, "measured");
    cr_assert_float_eq(c.weights[3], 0.25, 1e-12);
}

/* What a configuration lacks is unknown, never zero; text that is not an
 * object is refused. */
Test(config_record, what_is_missing_is_nan_and_garbage_is_refused)
{
    struct eeb_config_record c;
    cr_assert_eq(eeb_config_record_read("{\"power\": {\"rate_hz\": 5}}", &c), EEB_OK);
    cr_assert_float_eq(c.rate_hz, 5, 0);
    cr_assert(isnan(c.util[0]) && isnan(c.weights[2]) && isnan(c.window_s));
    cr_assert(isnan(c.test_items));
    cr_assert_str_eq(c.provenance, "");
    cr_assert_eq(eeb_config_record_read("[1, 2]", &c), EEB_EFORMAT);
    cr_assert_eq(eeb_config_record_read("not json", &c), EEB_EFORMAT);
    cr_assert_eq(eeb_config_record_read(NULL, &c), EEB_EFORMAT);
    cr_assert(isnan(c.util[3]));
}

/* The system's name is the team's text: kept to printable UTF-8 and to its
 * length, on the way in and again on the way out. */
Test(config_record, the_systems_name_is_kept_printable_and_bounded)
{
    char name[400];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    memcpy(name, "<b>pooled\x1b[31m\xff\xe2\x80\xae-int8 \xc3\xa9", 26);
    json_t *o = json_object();
    eeb_config_put_sut(o, name, NULL, "exec", "process", "ZCU104\n200 MHz");
    char *text = json_dumps(o, 0);
    cr_assert_not_null(text, "the section is JSON (UTF-8)");
    struct eeb_config_record r;
    cr_assert_eq(eeb_config_record_read(text, &r), EEB_OK);
    const char *want = "<b>pooled?[31m?"
                       "?-int8 \xc3\xa9nnn"; /* ESC, 0xff, U+202E */
    cr_expect_eq(strncmp(r.sut_name, want, strlen(want)), 0, "%s", r.sut_name);
    cr_expect_eq(strlen(r.sut_name), EEB_CONFIG_SUT_NAME);
    cr_expect_str_eq(r.sut_kind, "exec");
    cr_expect_str_eq(r.sut_detail, "ZCU104?200 MHz");
    free(text);
    json_decref(o);
    /* a record written by anyone else: read back bounded and printable too */
    cr_assert_eq(eeb_config_record_read("{\"sut\": {\"name\": \"a\\u0007b\\u202ec\", \"kind\": "
                                        "\"library\"}}",
                                        &r),
                 EEB_OK);
    cr_expect_str_eq(r.sut_name, "a?b?c");
    cr_expect_str_eq(r.sut_detail, "");
    /* a run recorded before: nothing */
    cr_assert_eq(eeb_config_record_read("{\"task\": \"cls\"}", &r), EEB_OK);
    cr_expect_str_eq(r.sut_name, "");
    cr_expect_str_eq(r.sut_version, "");
}

/* The system's own version (SUT ABI version 2) is the team's text too:
 * kept printable and bounded; none (NULL, "": a version-1 SUT) is left
 * out of the section, and read back as "". */
Test(config_record, the_systems_version_is_kept_printable_bounded_and_left_out_if_none)
{
    char version[400];
    memset(version, 'v', sizeof version - 1);
    version[sizeof version - 1] = '\0';
    memcpy(version, "1.4.2\x1b[31m+\xe2\x80\xae", 14);
    json_t *o = json_object();
    eeb_config_put_sut(o, "team", version, "library", "process", NULL);
    char *text = json_dumps(o, 0);
    struct eeb_config_record r;
    cr_assert_eq(eeb_config_record_read(text, &r), EEB_OK);
    cr_expect_eq(strncmp(r.sut_version, "1.4.2?[31m+?vvv", 15), 0, "%s", r.sut_version);
    cr_expect_eq(strlen(r.sut_version), EEB_CONFIG_SUT_VERSION);
    cr_expect_str_eq(r.sut_name, "team");
    free(text);
    json_decref(o);
    for (int none = 0; none < 2; none++) {
        o = json_object();
        eeb_config_put_sut(o, "team", none ? "" : NULL, "library", "in-process", "");
        cr_expect_null(json_object_get(json_object_get(o, "sut"), "version"));
        cr_expect_null(json_object_get(json_object_get(o, "sut"), "detail"));
        text = json_dumps(o, 0);
        cr_assert_eq(eeb_config_record_read(text, &r), EEB_OK);
        cr_expect_str_eq(r.sut_version, "");
        cr_expect_str_eq(r.sut_hosting, "in-process");
        free(text);
        json_decref(o);
    }
    cr_assert_eq(
        eeb_config_record_read("{\"sut\": {\"name\": \"t\", \"version\": \"g\\u0007abc\"}}", &r),
        EEB_OK);
    cr_expect_str_eq(r.sut_version, "g?abc");
}
