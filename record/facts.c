/*
 * facts.c - what the server that judged a run saw, as its copy of the
 * record keeps it (the evaluator event): one writer, one reader, and the
 * rule on the labels that both the server and the judge apply.
 */
#include "common/eeb_json.h"
#include "record/eeb_record.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *time_json(int64_t ns)
{
    return ns ? json_integer(ns) : json_null();
}

char *eeb_run_facts_json(const struct eeb_run_facts *f)
{
    json_t *o = json_pack("{s:b, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:s, s:o, s:s, s:i, s:s, s:b}",
                          EEB_FACT_OFFICIAL, f->official, EEB_FACT_REGISTERED,
                          time_json(f->registered), EEB_FACT_COMPLETED, time_json(f->completed),
                          EEB_FACT_FINE_TUNE, f->fine_tune, EEB_FACT_TEST_SERVED,
                          time_json(f->test_served), EEB_FACT_PREDICTED, time_json(f->predicted),
                          EEB_FACT_PREDICT_WITHIN, eeb_json_number(f->predict_within_s),
                          EEB_FACT_M_S, eeb_json_number(f->m_s), EEB_FACT_M_S_WHY, f->m_s_why,
                          EEB_FACT_SEED, f->seed >= 0 ? json_integer(f->seed) : json_null(),
                          EEB_FACT_ROUND, f->round, EEB_FACT_EPOCHS_MAX, f->epochs_max,
                          EEB_FACT_METER, f->meter, EEB_FACT_AUDIT_REQUIRED, f->audit_required);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return text;
}

static int64_t integer(const json_t *o, const char *key, int64_t none)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : none;
}

static double number(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void eeb_run_facts_read(const json_t *o, struct eeb_run_facts *f)
{
    *f = (struct eeb_run_facts){.seen = 1, .seed = -1};
    f->official = json_is_true(json_object_get(o, EEB_FACT_OFFICIAL));
    f->registered = integer(o, EEB_FACT_REGISTERED, 0);
    f->completed = integer(o, EEB_FACT_COMPLETED, 0);
    f->test_served = integer(o, EEB_FACT_TEST_SERVED, 0);
    f->predicted = integer(o, EEB_FACT_PREDICTED, 0);
    f->predict_within_s = number(o, EEB_FACT_PREDICT_WITHIN);
    f->m_s = number(o, EEB_FACT_M_S);
    f->seed = integer(o, EEB_FACT_SEED, -1);
    f->epochs_max = (int)integer(o, EEB_FACT_EPOCHS_MAX, 0);
    f->audit_required = json_is_true(json_object_get(o, EEB_FACT_AUDIT_REQUIRED));
    const struct {
        const char *key;
        char *buf;
        size_t n;
    } text[] = {{EEB_FACT_FINE_TUNE, f->fine_tune, sizeof f->fine_tune},
                {EEB_FACT_M_S_WHY, f->m_s_why, sizeof f->m_s_why},
                {EEB_FACT_ROUND, f->round, sizeof f->round},
                {EEB_FACT_METER, f->meter, sizeof f->meter}};
    for (size_t i = 0; i < sizeof text / sizeof *text; i++)
        snprintf(text[i].buf, text[i].n, "%s",
                 json_string_value(json_object_get(o, text[i].key)) ?: "");
}

void eeb_run_labels_barred(const struct eeb_run_facts *f, char *why, size_t n)
{
    double late_s = (double)(f->predicted - f->test_served) / 1e9;
    why[0] = '\0';
    if (f->fine_tune[0])
        snprintf(why, n, "%s", f->fine_tune);
    else if (f->official && !f->test_served)
        snprintf(why, n, "its test inputs were never served");
    else if (f->official && f->predicted && late_s > f->predict_within_s)
        snprintf(why, n,
                 "its predictions arrived %.1f s after its test inputs were served; the server "
                 "allows %g s",
                 late_s, f->predict_within_s);
}
