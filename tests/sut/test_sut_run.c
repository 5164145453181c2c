/*
 * test_sut_run.c - `eeb run` on a team's system under test: the example
 * library (sut/examples/nearest_mean.c) for each task, eeb's own emu built
 * as a library (sut/plugins) agreeing with eeb's emu run directly, a SUT
 * that says it is done, one that fails mid-training, and what is refused
 * before a run is recorded.
 */
#include "tasks/eeb_gen.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(sut_run, .timeout = 120);

static char ft[300], test[300], model[300], db[300];

/* Shards of the task from the generator, a nearest-mean model file and a
 * database path in this test's directory. */
static void inputs(enum eeb_task task)
{
    const char *dir = test_tmpdir();
    setenv("TMPDIR", dir, 1); /* where eeb run keeps the SUT's private files */
    snprintf(ft, sizeof ft, "%s/ft.eebd", dir);
    snprintf(test, sizeof test, "%s/test.eebd", dir);
    snprintf(model, sizeof model, "%s/nm.model", dir);
    snprintf(db, sizeof db, "%s/runs.db", dir);
    char err[512];
    for (int t = 0; t < 2; t++) {
        struct eeb_gen_spec spec = {task,
                                    EEB_GEN_FINETUNE,
                                    t,
                                    (uint64_t)(t ? 24 : 64),
                                    5,
                                    16,
                                    task == EEB_TASK_VIDEO ? 4 : 1};
        cr_assert_eq(eeb_gen_shard(t ? test : ft, &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s",
                     err);
    }
    test_write_file(model, "nearest-mean 1\n", 15);
}

/* eeb run on backend, with a team's utilization and a meter; more args
 * after. */
static struct test_run run(const char *backend, const char *const *more)
{
    const char *args[40] = {"run",
                            "--task",
                            NULL,
                            "--finetune",
                            ft,
                            "--test",
                            test,
                            "--model",
                            model,
                            "--backend",
                            backend,
                            "--util",
                            "lut=0.2,ff=0.1,bram=0.3,dsp=0.1",
                            "--power",
                            "sim:watts=4",
                            "--db",
                            db,
                            "-q"};
    int n = 18;
    static const char *task = "cls";
    args[2] = task;
    for (const char *const *m = more; m && *m; m++)
        args[n++] = *m;
    args[n] = NULL;
    return test_eeb(args);
}

/* Nothing of the SUT's private files is left: the run's temporary space
 * (TMPDIR, this test's directory) holds no eeb-run-* directory. */
static void no_leftovers(void)
{
    DIR *d = opendir(test_tmpdir());
    cr_assert(d);
    for (struct dirent *e; (e = readdir(d));)
        cr_expect(!strstr(e->d_name, "eeb-run-"), "left %s", e->d_name);
    closedir(d);
}

/* A whole run of the task on backend (a nearest-mean learner, however it
 * is reached): it passes, eeb check agrees, the predictions are stored,
 * the run records the backend, and no private file is left. */
static void a_whole_run(enum eeb_task task, const char *name, const char *backend)
{
    inputs(task);
    const char *args[] = {"run",
                          "--task",
                          name,
                          "--finetune",
                          ft,
                          "--test",
                          test,
                          "--model",
                          model,
                          "--backend",
                          backend,
                          "--util",
                          "lut=0.2,ff=0.1,bram=0.3,dsp=0.1",
                          "--power",
                          "sim:watts=4",
                          "--db",
                          db,
                          "-q",
                          "--epochs",
                          "1000000",
                          "--tmax",
                          "1.2",
                          NULL};
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "PASS"), "%s", r.out);
    cr_expect(strstr(r.out, "nearest-mean"), "the SUT's counters' detail: %s", r.out);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM predictions"), 24);
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM runs WHERE backend = '%s'", backend);
    cr_expect_eq(test_sql_int(db, sql), 1);
    no_leftovers();
}

#define PYTHON_SUT "exec:python3 sut/examples/nearest_mean.py"
#define SERVED_SUT "exec:" EEB_SUT_SERVE " " EEB_SUT_EXAMPLE

Test(sut_run, classification_through_a_teams_library)
{
    a_whole_run(EEB_TASK_CLS, "cls", EEB_SUT_EXAMPLE);
}

Test(sut_run, detection_through_a_teams_library)
{
    a_whole_run(EEB_TASK_DET, "det", EEB_SUT_EXAMPLE);
}

Test(sut_run, video_through_a_teams_library)
{
    a_whole_run(EEB_TASK_VIDEO, "video", EEB_SUT_EXAMPLE);
}

Test(sut_run, classification_through_a_python_program)
{
    a_whole_run(EEB_TASK_CLS, "cls", PYTHON_SUT);
}

Test(sut_run, detection_through_a_python_program)
{
    a_whole_run(EEB_TASK_DET, "det", PYTHON_SUT);
}

Test(sut_run, video_through_a_python_program)
{
    a_whole_run(EEB_TASK_VIDEO, "video", PYTHON_SUT);
}

Test(sut_run, classification_through_a_c_program)
{
    a_whole_run(EEB_TASK_CLS, "cls", SERVED_SUT);
}

Test(sut_run, detection_through_a_c_program)
{
    a_whole_run(EEB_TASK_DET, "det", SERVED_SUT);
}

Test(sut_run, video_through_a_c_program)
{
    a_whole_run(EEB_TASK_VIDEO, "video", SERVED_SUT);
}

/* eeb's emu as a team's library stores the same predictions as eeb's emu
 * run directly: the interface carries the accelerator whole. */
Test(sut_run, eebs_emu_as_a_library_predicts_as_emu_itself)
{
    inputs(EEB_TASK_CLS);
    char built_in[300], as_library[300];
    snprintf(built_in, sizeof built_in, "%s/emu.db", test_tmpdir());
    snprintf(as_library, sizeof as_library, "%s/lib.db", test_tmpdir());
    char m[300];
    snprintf(m, sizeof m, "%s/base.eebm", test_tmpdir());
    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data",
                                                  ft, "-o", m, "--epochs", "1", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", m, "--steps", "3", "--lr", "0.02", "--db", built_in,
                                  "-q", NULL});
    cr_assert(r.status == 0 || r.status == 3 || r.status == 4, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run",
                                  "--task",
                                  "cls",
                                  "--finetune",
                                  ft,
                                  "--test",
                                  test,
                                  "--model",
                                  m,
                                  "--steps",
                                  "3",
                                  "--lr",
                                  "0.02",
                                  "--backend",
                                  EEB_SUT_OWN,
                                  "--sut-config",
                                  "backend=emu;lr=0.02;momentum=0.9;decay=0.0005",
                                  "--util",
                                  "lut=0.2,ff=0.1,bram=0.3,dsp=0.1",
                                  "--power",
                                  "sim:watts=4",
                                  "--db",
                                  as_library,
                                  "-q",
                                  NULL});
    cr_assert(r.status == 0 || r.status == 3 || r.status == 4, "%s%s", r.out, r.err);
    test_run_free(&r);
    const char *q = "SELECT group_concat(payload, '|') FROM (SELECT payload FROM predictions "
                    "ORDER BY item)";
    char *a = NULL, *b = NULL;
    cr_assert_eq(test_sql_text(built_in, q, &a), 0);
    cr_assert_eq(test_sql_text(as_library, q, &b), 0);
    cr_assert(a && b && strlen(a) > 100);
    cr_expect_str_eq(a, b);
    free(a), free(b);
}

/* A SUT that says it is done ends fine-tuning there. */
Test(sut_run, a_sut_that_is_done_ends_fine_tuning)
{
    inputs(EEB_TASK_CLS);
    struct test_run r =
        run(EEB_SUT_EXAMPLE, (const char *[]){"--sut-config", "steps=2", "--epochs", "50", NULL});
    cr_assert_lt(r.status, 5, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'complete' AND "
                                  "json_extract(payload, '$.reason') = 'done' AND "
                                  "json_extract(payload, '$.step') = 2"),
                 1);
}

/* A SUT failing mid-training ends the run with an error naming it and the
 * call; the record stays whole for eeb check. */
Test(sut_run, a_sut_failing_in_train_is_named_and_the_record_kept)
{
    inputs(EEB_TASK_CLS);
    char m[300];
    snprintf(m, sizeof m, "%s/base.eebm", test_tmpdir());
    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data",
                                                  ft, "-o", m, "--epochs", "1", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    snprintf(model, sizeof model, "%s", m);
    r = run(EEB_SUT_OWN,
            (const char *[]){"--sut-config", "backend=faulty:emu?fail=2", "--epochs", "5", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    char want[512];
    snprintf(want, sizeof want, "SUT '%s': train: faulty:emu?fail=2: training batch 2 fails",
             EEB_SUT_OWN);
    cr_expect(strstr(r.err, want), "%s", r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs WHERE state = 'failed'"), 1);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect(r.status == 4 || r.status == 3, "%s%s", r.out, r.err);
    test_run_free(&r);
    no_leftovers();
}

/* What cannot be a team's run is refused before one is recorded. */
Test(sut_run, what_cannot_run_is_refused_before_a_run_exists)
{
    inputs(EEB_TASK_CLS);
    char missing[300];
    snprintf(missing, sizeof missing, "%s/libnothing.so", test_tmpdir());
    struct test_run r = run(missing, NULL);
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, missing), "%s", r.err);
    test_run_free(&r);
    r = run(EEB_SUT_EXAMPLE, (const char *[]){"--design", "pes=4", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "--design models eeb's own networks"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", model, "--backend", EEB_SUT_EXAMPLE, "--power",
                                  "sim:watts=4", "--db", db, "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "give its design's utilization"), "%s", r.err);
    test_run_free(&r);
    cr_expect_eq(access(db, F_OK), -1, "a run was recorded");
}
