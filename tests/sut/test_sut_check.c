/*
 * test_sut_check.c - the conformance battery (sut/check.c, `eeb sut
 * check`): it passes on the example library, on eeb's own emu and on the
 * Python example over exec:, and fails, naming the item, on SUTs built to
 * break one rule each (tests/sut/bad_check_sut.c): a cache keyed by the
 * item's place in its batch, random scores, training that changes
 * nothing, a predict slower than the deadline, a NaN or infinite number
 * in an answer.
 */
#include "sut/eeb_sut_host.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(sut_check, .timeout = 120);

/* The battery as opt says, with its temporary files in this test's
 * directory; they are checked gone. */
static struct eeb_sut_check_report battery_with(const struct eeb_sut_check_options *opt)
{
    const char *dir = test_tmpdir();
    setenv("TMPDIR", dir, 1);
    const struct eeb_sut_check_options o = *opt;
    struct eeb_sut_check_report r;
    char err[1024] = "";
    cr_assert_eq(eeb_sut_check_run(&o, &r, err, sizeof err), EEB_OK, "%s", err);
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));)
        cr_expect_null(strstr(e->d_name, "eeb-sut-check-"), "left behind: %s", e->d_name);
    closedir(d);
    return r;
}

/* The battery on backend for task (deadline 0: the default). */
static struct eeb_sut_check_report battery(const char *backend, enum eeb_task task,
                                           double deadline_s)
{
    return battery_with(&(struct eeb_sut_check_options){
        .backend = backend, .task = task, .deadline_s = deadline_s});
}

static void all_pass(const struct eeb_sut_check_report *r)
{
    for (int i = 0; i < EEB_SUT_CHECK_ITEMS; i++)
        cr_expect_eq(r->items[i].outcome, EEB_SUT_CHECK_PASS, "%s: %s",
                     eeb_sut_check_item_name((enum eeb_sut_check_item)i), r->items[i].reason);
}

/* Only item fails; the others pass (counters: skip, the bad SUTs have
 * none). */
static void fails_only(const struct eeb_sut_check_report *r, enum eeb_sut_check_item item)
{
    for (int i = 0; i < EEB_SUT_CHECK_ITEMS; i++) {
        enum eeb_sut_check_outcome want = i == (int)item                ? EEB_SUT_CHECK_FAIL
                                          : i == EEB_SUT_CHECK_COUNTERS ? EEB_SUT_CHECK_SKIP
                                                                        : EEB_SUT_CHECK_PASS;
        cr_expect_eq(r->items[i].outcome, want, "%s: %s",
                     eeb_sut_check_item_name((enum eeb_sut_check_item)i), r->items[i].reason);
    }
}

Test(sut_check, example_library_passes_each_task)
{
    for (enum eeb_task t = EEB_TASK_CLS; t <= EEB_TASK_VIDEO; t++) {
        struct eeb_sut_check_report r = battery(EEB_SUT_EXAMPLE, t, 0);
        all_pass(&r);
        cr_expect_str_eq(r.name, "nearest-mean");
    }
}

/* Every backend eeb ships that runs without a board passes its own
 * battery on each task's network: the emulator, the HLS kernel's C and
 * the float reference.  xrt needs a device (under XRT's noop shim it
 * computes nothing); kernel is its bit-exact stand-in.  (eeb's backends
 * built as a team's library are driven in tests/sut/test_sut_run.c.) */
Test(sut_check, eebs_own_backends_pass_each_task)
{
    static const char *const shipped[] = {"emu", "kernel", "fp32"};
    for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++)
        for (enum eeb_task t = EEB_TASK_CLS; t <= EEB_TASK_VIDEO; t++) {
            struct eeb_sut_check_report r = battery(shipped[i], t, 0);
            cr_expect(r.items[EEB_SUT_CHECK_ABI].outcome == EEB_SUT_CHECK_PASS, "%s, task %d",
                      shipped[i], (int)t);
            all_pass(&r);
            assert_has(r.items[EEB_SUT_CHECK_COUNTERS].reason, "save_model wrote");
        }
}

Test(sut_check, python_example_over_exec_passes)
{
    struct eeb_sut_check_report r =
        battery("exec:python3 sut/examples/nearest_mean.py", EEB_TASK_CLS, 0);
    all_pass(&r);
    cr_expect_str_eq(r.name, "nearest-mean-py");
}

Test(sut_check, the_well_behaved_bad_sut_base_passes)
{
    /* the bad SUTs below differ from this one by one fault alone */
    struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "good.so", EEB_TASK_CLS, 0);
    fails_only(&r, EEB_SUT_CHECK_ITEMS);
}

Test(sut_check, a_cache_by_position_fails_order)
{
    for (enum eeb_task t = EEB_TASK_CLS; t <= EEB_TASK_DET; t++) {
        struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "by_position.so", t, 0);
        fails_only(&r, EEB_SUT_CHECK_ORDER);
        assert_has(r.items[EEB_SUT_CHECK_ORDER].reason, "in batches of 3");
    }
}

Test(sut_check, random_scores_fail_determinism)
{
    struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "random.so", EEB_TASK_CLS, 0);
    cr_expect_eq(r.items[EEB_SUT_CHECK_DETERMINISM].outcome, EEB_SUT_CHECK_FAIL, "%s",
                 r.items[EEB_SUT_CHECK_DETERMINISM].reason);
    assert_has(r.items[EEB_SUT_CHECK_DETERMINISM].reason, "predicted twice");
    cr_expect_eq(r.items[EEB_SUT_CHECK_SHAPES].outcome, EEB_SUT_CHECK_PASS);
}

Test(sut_check, training_that_changes_nothing_fails)
{
    struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "untrained.so", EEB_TASK_VIDEO, 0);
    fails_only(&r, EEB_SUT_CHECK_TRAINING);
    assert_has(r.items[EEB_SUT_CHECK_TRAINING].reason, "no answer of the");
}

/* In eeb's own process a slow call cannot be stopped: it is timed, and
 * fails the deadline item alone. */
Test(sut_check, a_slow_predict_in_process_fails_the_deadline)
{
    struct eeb_sut_check_report r =
        battery_with(&(struct eeb_sut_check_options){.backend = EEB_SUT_CHECK "slow.so",
                                                     .task = EEB_TASK_CLS,
                                                     .deadline_s = 0.5,
                                                     .in_process = 1});
    fails_only(&r, EEB_SUT_CHECK_DEADLINE);
    assert_has(r.items[EEB_SUT_CHECK_DEADLINE].reason, "predict");
    cr_expect_geq(r.slowest_s, 0.5);
}

/* A library hosted in its own process (the default) is killed at the
 * deadline: the call fails saying so, and so does the deadline item. */
Test(sut_check, a_slow_predict_hosted_is_killed_at_the_deadline)
{
    struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "slow.so", EEB_TASK_CLS, 0.5);
    cr_expect_eq(r.items[EEB_SUT_CHECK_SHAPES].outcome, EEB_SUT_CHECK_FAIL);
    assert_has(r.items[EEB_SUT_CHECK_SHAPES].reason, "predict: no answer within 0.5 s (killed)");
    cr_expect_eq(r.items[EEB_SUT_CHECK_DEADLINE].outcome, EEB_SUT_CHECK_FAIL);
    assert_has(r.items[EEB_SUT_CHECK_DEADLINE].reason, "predict");
}

/* A library that crashes fails the item whose call it crashed in, naming
 * the call and the signal, and the battery goes on: eeb is not its
 * process. */
Test(sut_check, a_crashing_library_fails_the_item_naming_the_signal)
{
    test_plain_segv();
    struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "crash.so", EEB_TASK_CLS, 0);
    cr_expect_eq(r.items[EEB_SUT_CHECK_TRAINING].outcome, EEB_SUT_CHECK_FAIL);
    assert_has(r.items[EEB_SUT_CHECK_TRAINING].reason,
               "libcheck_crash.so': train: its process was killed by signal 11");
    cr_expect_eq(r.items[EEB_SUT_CHECK_DEADLINE].outcome, EEB_SUT_CHECK_PASS);
}

/* A library that hangs is killed at the deadline; the battery returns. */
Test(sut_check, a_hanging_library_is_killed_at_the_deadline)
{
    struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "hang.so", EEB_TASK_CLS, 0.5);
    cr_expect_eq(r.items[EEB_SUT_CHECK_TRAINING].outcome, EEB_SUT_CHECK_FAIL);
    assert_has(r.items[EEB_SUT_CHECK_TRAINING].reason, "train: no answer within 0.5 s (killed)");
    cr_expect_eq(r.items[EEB_SUT_CHECK_DEADLINE].outcome, EEB_SUT_CHECK_FAIL);
}

/* In eeb's own process a hung call cannot be stopped: eeb sut check
 * prints what the battery found so far, the deadline item failed naming
 * the call, and ends (exit 3) instead of waiting for ever. */
Test(sut_check, a_hang_in_process_ends_the_check_with_what_it_found)
{
    struct test_run r =
        test_eeb((const char *[]){"sut", "check", EEB_SUT_CHECK "hang.so", "--task", "cls",
                                  "--deadline", "0.5", "--in-process", NULL});
    cr_expect_eq(r.status, 3, "%s%s", r.out, r.err);
    assert_has(r.out, "  pass  shapes");
    assert_has(r.out, "  FAIL  deadline     train has run for more than 0.5 s (the deadline) in "
                      "eeb's own process");
    test_run_free(&r);
}

/* A NaN or infinite number in an answer fails shapes, naming the item
 * and the field, for each task: the score of a ranked class (cls,
 * video), a box's score and a box's corner (det). */
Test(sut_check, a_non_finite_number_fails_shapes_naming_the_field)
{
    const struct {
        enum eeb_task task;
        const char *field, *what;
    } cases[] = {
        {EEB_TASK_CLS, NULL, "predict: batch item 0, rank 2: score nan (a finite score)"},
        {EEB_TASK_VIDEO, NULL, "predict: batch item 0, rank 2: score nan (a finite score)"},
        {EEB_TASK_DET, NULL, "predict: batch item 0, box 1: score nan (a finite number)"},
        {EEB_TASK_DET, "x1", "predict: batch item 0, box 1: x1 inf (a finite number)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (cases[i].field)
            setenv("EEB_TEST_NAN_FIELD", cases[i].field, 1);
        else
            unsetenv("EEB_TEST_NAN_FIELD");
        struct eeb_sut_check_report r = battery(EEB_SUT_CHECK "nan.so", cases[i].task, 0);
        cr_expect_eq(r.items[EEB_SUT_CHECK_ABI].outcome, EEB_SUT_CHECK_PASS);
        cr_expect_eq(r.items[EEB_SUT_CHECK_OPEN].outcome, EEB_SUT_CHECK_PASS);
        cr_expect_eq(r.items[EEB_SUT_CHECK_SHAPES].outcome, EEB_SUT_CHECK_FAIL, "%s",
                     r.items[EEB_SUT_CHECK_SHAPES].reason);
        assert_has(r.items[EEB_SUT_CHECK_SHAPES].reason, cases[i].what);
    }
    unsetenv("EEB_TEST_NAN_FIELD");
}

Test(sut_check, a_missing_library_is_an_error)
{
    const struct eeb_sut_check_options o = {.backend = "./no-such-libteam.so",
                                            .task = EEB_TASK_CLS};
    struct eeb_sut_check_report r;
    char err[1024] = "";
    cr_expect_neq(eeb_sut_check_run(&o, &r, err, sizeof err), EEB_OK);
    assert_has(err, "no-such-libteam.so");
}

Test(sut_check, output_before_input_fails_open)
{
    struct eeb_sut_check_report r =
        battery("exec:python3 tests/sut/exec_fault.py early", EEB_TASK_CLS, 5);
    cr_expect_eq(r.items[EEB_SUT_CHECK_OPEN].outcome, EEB_SUT_CHECK_FAIL);
    assert_has(r.items[EEB_SUT_CHECK_OPEN].reason, "output before input");
    cr_expect_eq(r.items[EEB_SUT_CHECK_SHAPES].outcome, EEB_SUT_CHECK_SKIP);
}

/* ---- the command ---- */

Test(sut_check, cli_passes_the_example_with_8_lines)
{
    setenv("TMPDIR", test_tmpdir(), 1);
    const char *args[] = {"sut", "check", EEB_SUT_EXAMPLE, "--task", "cls", NULL};
    struct test_run run = test_eeb(args);
    cr_assert_eq(run.status, 0, "%s%s", run.out, run.err);
    int lines = 0;
    for (const char *p = run.out; (p = strstr(p, "\n  pass  ")); p++)
        lines++;
    cr_expect_eq(lines, 8, "%s", run.out);
    cr_expect(strstr(run.out, "(nearest-mean 1.1)\n"), "the system's name and version: %s",
              run.out);
    test_run_free(&run);
}

Test(sut_check, cli_fails_a_cache_naming_order)
{
    setenv("TMPDIR", test_tmpdir(), 1);
    const char *args[] = {"sut", "check", EEB_SUT_CHECK "by_position.so", "--task", "cls", NULL};
    struct test_run run = test_eeb(args);
    cr_expect_eq(run.status, 3, "%s%s", run.out, run.err);
    assert_has(run.out, "FAIL  order");
    test_run_free(&run);
}

Test(sut_check, cli_usage_and_errors)
{
    const char *no_task[] = {"sut", "check", "emu", NULL};
    struct test_run run = test_eeb(no_task);
    cr_expect_eq(run.status, 2, "%s", run.err);
    test_run_free(&run);
    const char *half[] = {"sut", "check", "emu", "--task", "cls", "--test", "t.eebd", NULL};
    run = test_eeb(half);
    cr_expect_eq(run.status, 2, "%s", run.err);
    test_run_free(&run);
    const char *missing[] = {"sut", "check", "./no-such-libteam.so", "--task", "cls", NULL};
    run = test_eeb(missing);
    cr_expect_eq(run.status, 1, "%s", run.err);
    assert_has(run.err, "no-such-libteam.so");
    test_run_free(&run);
    const char *help[] = {"sut", "--help", NULL};
    run = test_eeb(help);
    cr_expect_eq(run.status, 0);
    assert_has(run.out, "determinism");
    test_run_free(&run);
}
