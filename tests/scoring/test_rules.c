/*
 * test_rules.c - the scoring rules file: the shipped v1, and the errors a
 * broken rules file must produce, each naming its key.
 */
#include "scoring/eeb_score.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(rules, builtin_is_the_shipped_file)
{
    size_t len;
    char *path = "scoring/rules/v1.json";
    char *text = test_read_file(path, &len);
    cr_assert_not_null(text, "%s is missing", path);
    cr_assert_str_eq(eeb_score_rules_v1, text);
    free(text);
}

Test(rules, v1_contents)
{
    struct eeb_rules r;
    char err[256] = "";
    cr_assert_eq(eeb_score_rules_load(NULL, &r, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_str_eq(r.version, "1");
    cr_assert_float_eq(r.power.window_s, 1.0, 0);
    cr_assert_float_eq(r.power.min_rate_hz, 1.0, 0);
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        const struct eeb_weights *w = &r.weights[t];
        cr_assert_eq(eeb_score_weights_check(w, err, sizeof err), EEB_OK, "%s", err);
        /* Tao et al.: w_u and w_t should be the small ones */
        cr_assert(w->u < w->p && w->u < w->s && w->t < w->p && w->t < w->s);
    }
    struct eeb_rules f;
    cr_assert_eq(eeb_score_rules_load("scoring/rules/v1.json", &f, err, sizeof err), EEB_OK);
    cr_assert_eq(memcmp(&f, &r, sizeof r), 0);
}

/* Applies one edit to v1 and expects an error containing needle. */
static void broken(const char *from, const char *to, const char *needle)
{
    char *text = test_replace(eeb_score_rules_v1, from, to);
    struct eeb_rules r;
    char err[512] = "";
    cr_assert_eq(eeb_score_rules_parse(text, strlen(text), "v1.json", &r, err, sizeof err),
                 EEB_EINVAL, "edit '%s' -> '%s' was accepted", from, to);
    cr_assert_not_null(strstr(err, needle), "'%s' does not contain '%s'", err, needle);
    free(text);
}

Test(rules, errors_name_the_key)
{
    broken("\"u\": 0.1, \"t\": 0.1, \"p\": 0.4, \"s\": 0.4 }\n    },\n    \"det\"",
           "\"u\": 0.1, \"t\": 0.1, \"p\": 0.4, \"s\": 0.4, \"x\": 0 }\n    },\n    \"det\"",
           "v1.json: tasks.cls.weights: unknown key 'x'");
    broken("\"window_s\": 1.0", "\"window_s\": \"1s\"",
           "v1.json: power.window_s: expected a number, got a string");
    broken("\"window_s\": 1.0", "\"window_s\": 0", "power.window_s: 0 is not in (0, 3600]");
    broken("\"rule\": \"moving_average\"", "\"rule\": \"peak\"", "power.rule: 'peak'");
    broken("\"rules_version\": \"1\"", "\"rules_version\": 1",
           "rules_version: expected a string, got a number");
    broken("\"rules_version\": \"1\",", "\"rules_version\": \"1\", \"extra\": true,",
           "v1.json: unknown key 'extra'");
    broken("\"video\": {\n      \"weights\": { \"u\": 0.1, \"t\": 0.1, \"p\": 0.4, \"s\": 0.4 }",
           "\"video\": {\n      \"weights\": { \"u\": 0.1, \"t\": 0.1, \"p\": 0.4, \"s\": 0.3 }",
           "tasks.video.weights: weights 0.1 + 0.1 + 0.4 + 0.3 sum to 0.9");
    broken("\"det\": {\n      \"weights\": { \"u\": 0.1,", "\"det\": {\n      \"weights\": { ",
           "tasks.det.weights.u: missing (expected a number)");
    broken("\"video\"", "\"vid\"", "tasks: unknown key 'vid'");
    broken("\"power\": {", "\"power\": [", "v1.json line");
    broken("\"det\"", "\"cls\"", "duplicate object key");
}

Test(rules, load_names_missing_file)
{
    struct eeb_rules r;
    char err[256];
    cr_assert_eq(eeb_score_rules_load("/nonexistent/rules.json", &r, err, sizeof err), EEB_EIO);
    cr_assert_not_null(strstr(err, "/nonexistent/rules.json"), "%s", err);
}
