/*
 * run_local.c - this process as the run's evaluator: the test shard, with
 * its labels, is checked at INIT, the metric is counted here, and the run
 * is judged here.
 */
#include "run_int.h"

#include "rundb/eeb_config_record.h"

static int check_inputs(struct run *r, char *err, size_t errlen)
{
    return run_hash_test(r, r->c->test, err, errlen);
}

static void describe(const struct run *r, json_t *config)
{
    eeb_config_put_input(config, "test", r->c->test, r->sha_test, r->test_items);
}

static int test_inputs(struct run *r, const char **path, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    *path = r->c->test;
    return EEB_OK;
}

static int judge(struct run *r, double m_s, char *err, size_t errlen)
{
    int rc = run_enter(r, EEB_RUN_SCORE, err, errlen);
    if (rc == EEB_OK && (rc = run_judge_record(r, 0, m_s, err, errlen)) == EEB_OK)
        run_score_event(r, 0);
    return rc;
}

const struct run_evaluator run_local_evaluator = {
    .check_inputs = check_inputs,
    .describe = describe,
    .test_inputs = test_inputs,
    .judge = judge,
    .labelled = 1,
    .judges_aborted = 0,
};
