/*
 * test_sut_run.c - `eeb run` on a team's system under test: the example
 * library (sut/examples/nearest_mean.c) for each task, eeb's own emu built
 * as a library (sut/plugins) agreeing with eeb's emu run directly, a SUT
 * that says it is done, one that fails mid-training, and what is refused
 * before a run is recorded.
 */
#include "common/eeb_common.h"
#include "record/eeb_record.h"
#include "tasks/eeb_gen.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* eeb run of the task (by name) on backend, with the files inputs made, a
 * team's utilization and a meter, into db; more args after. */
static struct test_run run(const char *task, const char *backend, const char *const *more)
{
    const char *args[40] = {"run",
                            "--task",
                            task,
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
    int n = 0;
    while (args[n])
        n++;
    for (const char *const *m = more; m && *m; m++) {
        cr_assert_lt(n, 39, "too many arguments");
        args[n++] = *m;
    }
    args[n] = NULL;
    return test_eeb(args);
}

/* A model of eeb's own cls net, pretrained one epoch on ft by eeb model
 * pretrain, for eeb's backends reached as a team's library; its path
 * (static storage). */
static const char *pretrained_model(void)
{
    static char m[300];
    snprintf(m, sizeof m, "%s/base.eebm", test_tmpdir());
    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data",
                                                  ft, "-o", m, "--epochs", "1", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    return m;
}

/* Nothing of the SUT's private files is left: the run's temporary space
 * (TMPDIR, this test's directory, as inputs set it) holds no eeb-run-*
 * directory. */
static void no_leftovers(void)
{
    test_expect_none_named(getenv("TMPDIR"), "eeb-run-");
}

/* A whole run of the task on backend (a nearest-mean learner, however it
 * is reached): it passes, eeb check agrees, the predictions are stored,
 * the run records the backend, and no private file is left. */
static void a_whole_run(enum eeb_task task, const char *name, const char *backend)
{
    inputs(task);
    struct test_run r =
        run(name, backend,
            (const char *[]){"--epochs", "1000000", "--tmax", "1.2", "--rate", "20", NULL});
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

/* A cls run on backend (in eeb's process if in_process), with its page:
 * the stored configuration names the system as it names itself (name),
 * its own version (version; NULL: none, left out), how it was reached
 * (kind) and where it ran (hosting), eeb check says so in a line (shown:
 * its words in brackets) and in its JSON, and the page's title names it. */
static void the_system_is_recorded(const char *backend, int in_process, const char *name,
                                   const char *version, const char *kind, const char *hosting,
                                   const char *shown)
{
    inputs(EEB_TASK_CLS);
    char page[300], want[600], *text;
    snprintf(page, sizeof page, "%s/run.html", test_tmpdir());
    struct test_run r =
        run("cls", backend,
            (const char *[]){"--epochs", "1000000", "--tmax", "1.2", "--rate", "20", "--report",
                             page, in_process ? "--in-process" : NULL, NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.name') FROM runs", &text),
                 0);
    cr_expect_str_eq(text, name);
    free(text);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.version') FROM runs", &text),
                 0);
    if (version)
        cr_expect_str_eq(text, version);
    else
        cr_expect_null(text, "a version recorded: %s", text);
    free(text);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.kind') FROM runs", &text),
                 0);
    cr_expect_str_eq(text, kind);
    free(text);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.hosting') FROM runs", &text),
                 0);
    cr_expect_str_eq(text, hosting);
    free(text);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.detail') FROM runs", &text),
                 0);
    cr_expect(strstr(text, "nearest-mean"), "the counters' detail: %s", text);
    free(text);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    snprintf(want, sizeof want, "  system   %s%s%s (%s), nearest-mean", name, version ? " " : "",
             version ? version : "", shown);
    cr_expect(strstr(r.out, want), "no '%s' in: %s", want, r.out);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", "--json", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    snprintf(want, sizeof want, "\"version\": \"%s\"", version ? version : "");
    cr_expect(strstr(r.out, want), "no '%s' in: %s", want, r.out);
    test_run_free(&r);
    text = test_read_file(page, NULL);
    cr_assert_not_null(text);
    if (version)
        snprintf(want, sizeof want, ": cls on %s <span class=\"version\">%s</span> (%s)</h1>", name,
                 version, kind);
    else
        snprintf(want, sizeof want, ": cls on %s (%s)</h1>", name, kind);
    cr_expect(strstr(text, want), "the page's title: no '%s'", want);
    free(text);
    no_leftovers();
}

Test(sut_run, a_teams_library_is_recorded_by_its_name_version_and_kind)
{
    the_system_is_recorded(EEB_SUT_EXAMPLE, 0, "nearest-mean", "1.1", "library", "process",
                           "library, in its own process");
}

Test(sut_run, a_teams_library_in_process_is_recorded_so)
{
    the_system_is_recorded(EEB_SUT_EXAMPLE, 1, "nearest-mean", "1.1", "library", "in-process",
                           "library, in eeb's process");
}

Test(sut_run, a_teams_program_is_recorded_by_the_name_and_version_it_answers_open_with)
{
    the_system_is_recorded(SERVED_SUT, 0, "nearest-mean", "1.1", "exec", "process", "exec");
}

Test(sut_run, a_python_program_is_recorded_by_its_objects_name_and_version)
{
    the_system_is_recorded(PYTHON_SUT, 0, "nearest-mean-py", "1.1", "exec", "process", "exec");
}

/* A version-1 SUT built against this version's header (tests/sut/old_sut.c)
 * runs, hosted and in eeb's process, and no version is recorded: version 1
 * has no such slot.  libold_set.so holds text there (recorded if eeb read
 * it); libold_edge.so's table ends where version 1's does, an unreadable
 * page after it (eeb, or its host, would die reading it). */
Test(sut_run, a_version_1_library_runs_hosted_with_no_version_recorded)
{
    the_system_is_recorded(EEB_SUT_OLD "set.so", 0, "nearest-mean-v1", NULL, "library", "process",
                           "library, in its own process");
    the_system_is_recorded(EEB_SUT_OLD "edge.so", 0, "nearest-mean-v1", NULL, "library", "process",
                           "library, in its own process");
}

/* eeb_sut_serve, the stand-alone server (sut/examples/eeb_sut_serve.c),
 * serves it too, its open reply without a version. */
Test(sut_run, a_version_1_library_served_by_eeb_sut_serve_has_no_version_recorded)
{
    the_system_is_recorded("exec:" EEB_SUT_SERVE " " EEB_SUT_OLD "edge.so", 0, "nearest-mean-v1",
                           NULL, "exec", "process", "exec");
}

Test(sut_run, a_version_1_library_runs_in_process_with_no_version_recorded)
{
    the_system_is_recorded(EEB_SUT_OLD "set.so", 1, "nearest-mean-v1", NULL, "library",
                           "in-process", "library, in eeb's process");
    the_system_is_recorded(EEB_SUT_OLD "edge.so", 1, "nearest-mean-v1", NULL, "library",
                           "in-process", "library, in eeb's process");
}

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
    snprintf(model, sizeof model, "%s", pretrained_model());
    char built_in[300];
    snprintf(built_in, sizeof built_in, "%s/emu.db", test_tmpdir());
    struct test_run r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft,
                                                  "--test", test, "--model", model, "--steps", "3",
                                                  "--lr", "0.02", "--db", built_in, "-q", NULL});
    cr_assert(r.status == 0 || r.status == 3 || r.status == 4, "%s%s", r.out, r.err);
    test_run_free(&r);
    /* the same steps through the library, into db */
    r = run("cls", EEB_SUT_OWN,
            (const char *[]){"--steps", "3", "--lr", "0.02", "--sut-config",
                             "backend=emu;lr=0.02;momentum=0.9;decay=0.0005", NULL});
    cr_assert(r.status == 0 || r.status == 3 || r.status == 4, "%s%s", r.out, r.err);
    test_run_free(&r);
    const char *q = "SELECT group_concat(payload, '|') FROM (SELECT payload FROM predictions "
                    "ORDER BY item)";
    char *a = NULL, *b = NULL;
    cr_assert_eq(test_sql_text(built_in, q, &a), 0);
    cr_assert_eq(test_sql_text(db, q, &b), 0);
    cr_assert(a && b && strlen(a) > 100);
    cr_expect_str_eq(a, b);
    free(a), free(b);
}

/* A SUT that says it is done ends fine-tuning there. */
Test(sut_run, a_sut_that_is_done_ends_fine_tuning)
{
    inputs(EEB_TASK_CLS);
    struct test_run r = run("cls", EEB_SUT_EXAMPLE,
                            (const char *[]){"--sut-config", "steps=2", "--epochs", "50", NULL});
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
    snprintf(model, sizeof model, "%s", pretrained_model());
    struct test_run r =
        run("cls", EEB_SUT_OWN,
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
    struct test_run r = run("cls", missing, NULL);
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, missing), "%s", r.err);
    test_run_free(&r);
    r = run("cls", EEB_SUT_EXAMPLE, (const char *[]){"--design", "pes=4", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "--design models eeb's own networks"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", model, "--backend", EEB_SUT_EXAMPLE, "--power",
                                  "sim:watts=4", "--db", db, "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "give its design's utilization"), "%s", r.err);
    test_run_free(&r);
    /* an xclbin whose utilization is eeb's model's, not the team's design's */
    char xclbin[300];
    snprintf(xclbin, sizeof xclbin, "%s/modeled.xclbin", getenv("TMPDIR"));
    r = test_eeb((const char *[]){"xclbin", "build", "-o", xclbin, "--design", "pes=4", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", model, "--backend", EEB_SUT_EXAMPLE, "--xclbin",
                                  xclbin, "--power", "sim:watts=4", "--db", db, "-q", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "its utilization is eeb's analytical model's"), "%s", r.err);
    test_run_free(&r);
    cr_expect_eq(access(db, F_OK), -1, "a run was recorded");
}

/* ---- a team's program misbehaving in a whole run ---- */

#define FAULT_SUT "python3 tests/sut/exec_fault.py "

/* A whole run on backend (named so in messages), a team's SUT that
 * fails: it ends with an error naming the SUT, the call and what went
 * wrong; the run is marked failed with that error recorded after what came
 * before it (the fine-tune begin, or the whole fine-tuning for a fault in
 * predict), and eeb check agrees: invalid, for the same reason. */
static void a_run_of_ending_in(const char *backend, const char *named, const char *call,
                               const char *what)
{
    inputs(EEB_TASK_CLS);
    char want[400];
    snprintf(want, sizeof want, "SUT '%s': %s: %s", named, call, what);
    struct test_run r =
        run("cls", backend, (const char *[]){"--sut-deadline", "2", "--epochs", "2", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, want), "wanted \"%s\" in: %s", want, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs WHERE state = 'failed'"), 1);
    char sql[800];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM events e WHERE kind = 'error' AND instr(json_extract(payload, "
             "'$.message'), '%s'': %s: %s') AND EXISTS (SELECT 1 FROM events b WHERE b.kind = "
             "'finetune_begin' AND b.id < e.id)",
             named, call, what);
    cr_expect_eq(test_sql_int(db, sql), 1, "the error, after the fine-tune began");
    if (strcmp(call, "predict") == 0)
        cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'complete'"), 1,
                     "fine-tuning, recorded whole before the test stage failed");
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "invalid") && strstr(r.out, want), "%s", r.out);
    test_run_free(&r);
    no_leftovers();
}

/* The same through tests/sut/exec_fault.py MODE. */
static void a_run_ending_in(const char *mode, const char *call, const char *what)
{
    char backend[200];
    snprintf(backend, sizeof backend, "exec:" FAULT_SUT "%s", mode);
    a_run_of_ending_in(backend, backend + 5, call, what);
}

/* A team's library answering a NaN score (tests/sut/bad_check_sut.c,
 * CHECK_NAN) ends the run at its first predict (the training audit's,
 * before the fine-tune) with an error of the system
 * naming the item, the rank and the score; no prediction of it is stored
 * (a NaN is no JSON number), and eeb check finds the run invalid for
 * that reason. */
Test(sut_run, a_nan_score_ends_the_run_naming_the_item)
{
    inputs(EEB_TASK_CLS);
    char want[400];
    snprintf(want, sizeof want, "SUT '%s': predict: batch item 0, rank 2: score nan",
             EEB_SUT_CHECK "nan.so");
    struct test_run r = run("cls", EEB_SUT_CHECK "nan.so", (const char *[]){"--epochs", "1", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, want), "wanted \"%s\" in: %s", want, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs WHERE state = 'failed'"), 1);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM predictions"), 0);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "invalid") && strstr(r.out, want), "%s", r.out);
    test_run_free(&r);
    no_leftovers();
}

Test(sut_run, a_program_crashing_in_train_ends_the_run_naming_it)
{
    a_run_ending_in("segv", "train",
                    "the program was killed by signal 11 (Segmentation fault) before answering");
}

Test(sut_run, a_program_hanging_in_train_is_killed_at_the_deadline)
{
    a_run_ending_in("hang", "train", "no answer within 2 s (killed)");
}

Test(sut_run, a_garbage_frame_ends_the_run_as_a_protocol_error)
{
    a_run_ending_in("garbage", "train", "protocol error: the reply is not a frame");
}

/* A SUT whose predict fails on the training audit's slice before the
 * fine-tune: the run ends there, before any fine-tune, with the error
 * named as the audit's, and eeb check agrees. */
static void a_run_ending_in_audit(const char *mode)
{
    inputs(EEB_TASK_CLS);
    char backend[200], want[400];
    snprintf(backend, sizeof backend, "exec:" FAULT_SUT "%s", mode);
    snprintf(want, sizeof want,
             "the training audit (before fine-tuning): SUT '" FAULT_SUT
             "%s': predict: protocol error: 15 items answered, 16 asked",
             mode);
    struct test_run r =
        run("cls", backend, (const char *[]){"--sut-deadline", "2", "--epochs", "2", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, want), "wanted \"%s\" in: %s", want, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'finetune_begin'"), 0);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "invalid") && strstr(r.out, want), "%s", r.out);
    test_run_free(&r);
    no_leftovers();
}

/* The first predict after training is the training audit's, of its 16
 * items (docs/sut.md); one that comes short before the fine-tune ends the
 * run there, at the audit. */
Test(sut_run, a_prediction_of_the_wrong_size_ends_the_run_as_a_protocol_error)
{
    a_run_ending_in("lateshort", "predict", "protocol error: 15 items answered, 16 asked");
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'training_audit' AND "
                                  "json_extract(payload, '$.when') = 'before'"),
                 1, "the audit before the fine-tune, answered whole");
    a_run_ending_in_audit("short");
}

/* ---- a team's library misbehaving: its own process ends, eeb does not ---- */

Test(sut_run, a_library_crashing_in_train_ends_the_run_naming_it)
{
    test_plain_segv();
    a_run_of_ending_in(EEB_SUT_CHECK "crash.so", EEB_SUT_CHECK "crash.so", "train",
                       "its process was killed by signal 11 (Segmentation fault) before "
                       "answering");
}

Test(sut_run, a_library_hanging_in_train_is_killed_at_the_deadline)
{
    a_run_of_ending_in(EEB_SUT_CHECK "hang.so", EEB_SUT_CHECK "hang.so", "train",
                       "no answer within 2 s (killed)");
}

/* How many processes have an argument that is arg (their /proc cmdline). */
static int processes_with(const char *arg)
{
    int n = 0;
    DIR *d = opendir("/proc");
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], args[4096];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        FILE *f = fopen(path, "rb");
        size_t len = f ? fread(args, 1, sizeof args - 1, f) : 0;
        if (f)
            fclose(f);
        args[len] = '\0';
        for (size_t at = 0; at < len; at += strlen(args + at) + 1)
            n += strcmp(args + at, arg) == 0;
    }
    closedir(d);
    return n;
}

/* Waits up to seconds for the count of processes with arg to be want. */
static int processes_become(const char *arg, int want, double seconds)
{
    for (int i = 0; i < (int)(seconds * 50); i++) {
        if (processes_with(arg) == want)
            return 1;
        usleep(20000);
    }
    return processes_with(arg) == want;
}

/* The hanging library under a name of this test's own, so that the
 * processes hosting it are this test's alone; its path. */
static const char *hanging_library(void)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/libhang-own.so", getenv("TMPDIR"));
    size_t len;
    char *bytes = test_read_file(EEB_SUT_CHECK "hang.so", &len);
    cr_assert_not_null(bytes);
    test_write_file(path, bytes, len);
    free(bytes);
    return path;
}

/* A library that hangs past T_max and the grace period: its process is
 * killed, the run aborted saying so, and nothing is left running. */
Test(sut_run, a_library_hanging_past_the_grace_period_is_killed)
{
    inputs(EEB_TASK_CLS);
    const char *lib = hanging_library();
    struct test_run r = run("cls", lib,
                            (const char *[]){"--tmax", "0.5", "--grace", "0.5", "--clock", "wall",
                                             "--epochs", "100", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "(the grace period); its process was killed"), "%s", r.err);
    test_run_free(&r);
    cr_expect(processes_become(lib, 0, 2), "the library's process outlived the run");
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect(strstr(r.out, "aborted: the accelerator did not return within the grace period; "
                            "its process was killed"),
              "%s", r.out);
    test_run_free(&r);
}

/* eeb run in the background on lib; its pid, once lib's process runs. */
static pid_t run_in_background(const char *lib)
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1), dup2(null, 2);
        execl(EEB_BIN, EEB_BIN, "run", "--task", "cls", "--finetune", ft, "--test", test, "--model",
              model, "--backend", lib, "--util", "lut=0.2,ff=0.1,bram=0.3,dsp=0.1", "--power",
              "sim:watts=4", "--db", db, "--tmax", "30", "--grace", "0.5", "--clock", "wall", "-q",
              (char *)NULL);
        _exit(127);
    }
    cr_assert(processes_become(lib, 1, 10), "the library's process never started");
    return pid;
}

/* SIGTERM (and Ctrl-C, the same handler) stops the fine-tune; the call
 * that does not return within the grace period has its process killed:
 * the run ends, aborted, and leaves nothing running. */
Test(sut_run, sigterm_ends_the_run_and_the_librarys_process)
{
    inputs(EEB_TASK_CLS);
    const char *lib = hanging_library();
    pid_t pid = run_in_background(lib);
    usleep(300000); /* into the hanging step */
    kill(pid, SIGTERM);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1, "status %#x", (unsigned)status);
    cr_expect(processes_become(lib, 0, 2), "the library's process outlived the run");
}

/* eeb killed outright (SIGKILL: no handler runs) takes the library's
 * process with it: the kernel kills it when eeb goes (PR_SET_PDEATHSIG). */
Test(sut_run, a_killed_eeb_takes_the_librarys_process_with_it)
{
    inputs(EEB_TASK_CLS);
    const char *lib = hanging_library();
    pid_t pid = run_in_background(lib);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    cr_expect(processes_become(lib, 0, 2), "the library's process outlived eeb");
}

/* A team's SUT is handed the xclbin the run hashed: a private copy of its
 * bytes (the stub names the file it was given and its size), removed
 * after the run. */
Test(sut_run, a_teams_sut_is_handed_a_copy_of_the_xclbin)
{
    inputs(EEB_TASK_CLS);
    char xclbin[300];
    snprintf(xclbin, sizeof xclbin, "%s/team.xclbin", getenv("TMPDIR"));
    struct test_run r = test_eeb((const char *[]){"xclbin", "build", "-o", xclbin, NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    struct stat st;
    cr_assert_eq(stat(xclbin, &st), 0);
    char want[64];
    snprintf(want, sizeof want, "stub design.xclbin %lld bytes", (long long)st.st_size);
    r = run("cls", "exec:" FAULT_SUT "ok",
            (const char *[]){"--xclbin", xclbin, "--steps", "2", NULL});
    cr_assert_lt(r.status, 5, "%s%s", r.out, r.err);
    test_run_free(&r);
    char *detail = NULL;
    cr_assert_eq(test_sql_text(db,
                               "SELECT json_extract(payload, '$.detail') FROM events WHERE kind "
                               "= 'deployed'",
                               &detail),
                 0);
    cr_expect_str_eq(detail, want);
    free(detail);
    no_leftovers();
}

/* ---- the accuracy audit (harness/run_audit_accuracy.c, docs/check.md) ---- */

/* A model of eeb's own net for task (by name), pretrained one epoch on ft;
 * its path (static storage). */
static const char *pretrained_for(const char *task)
{
    static char m[300];
    snprintf(m, sizeof m, "%s/base-%s.eebm", test_tmpdir(), task);
    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", task, "--data", ft,
                                                  "-o", m, "--epochs", "1", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    return m;
}

/* The audit event's field (a JSON path under the payload) as text, of the
 * database's only run. */
static char *audit_said(const char *field)
{
    char sql[256], *text = NULL;
    snprintf(sql, sizeof sql,
             "SELECT json_extract(payload, '$.%s') FROM events WHERE kind = 'audit'", field);
    cr_assert_eq(test_sql_text(db, sql, &text), 0, "no audit event's %s", field);
    cr_assert_not_null(text, "no audit event's %s", field);
    return text;
}

static long long audit_number(const char *field)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT json_extract(payload, '$.%s') FROM events WHERE kind = 'audit'", field);
    return test_sql_int(db, sql);
}

/* eeb's emu served as a team's library: the model its save_model writes
 * (an fx24 .eebm), run on eeb's reference for it (the emulator, in the
 * test stage's batches), answers every sampled item as the system did;
 * the event holds the saved file's SHA-256, the run passes and eeb check
 * says so.  Without --save-model the private copy is gone after. */
Test(sut_run, eebs_own_backend_as_a_library_passes_the_accuracy_audit)
{
    inputs(EEB_TASK_CLS);
    snprintf(model, sizeof model, "%s", pretrained_for("cls"));
    char saved[300];
    snprintf(saved, sizeof saved, "%s/tuned.eebm", test_tmpdir());
    struct test_run r =
        run("cls", EEB_SUT_OWN,
            (const char *[]){"--sut-config", "backend=emu", "--epochs", "1000000", "--tmax", "1.2",
                             "--rate", "20", "--save-model", saved, NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "audit          24 of 24 sampled test items agree (100.0 %; top-1 "
                            "class, reference emu; 90 % needed)"),
              "%s", r.out);
    test_run_free(&r);
    cr_expect_eq(audit_number("done"), 1);
    cr_expect_eq(audit_number("sample"), 24, "all 24 test items: fewer than 64");
    cr_expect_eq(audit_number("agreed"), 24);
    cr_expect_eq(audit_number("items"), 24);
    char *s = audit_said("reference"), sha[EEB_SHA256_HEX], err[256];
    cr_expect_str_eq(s, "emu");
    free(s);
    s = audit_said("format");
    cr_expect_str_eq(s, "fx24");
    free(s);
    cr_assert_eq(eeb_sha256_file(saved, sha, err, sizeof err), EEB_OK, "%s", err);
    s = audit_said("model_sha256");
    cr_expect_str_eq(s, sha, "the event names the saved model by its hash");
    free(s);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "  audit    24 of 24 sampled test items agree"), "%s", r.out);
    test_run_free(&r);
    /* not asked to keep it: saved privately for the audit, and removed */
    unlink(db);
    r = run("cls", EEB_SUT_OWN,
            (const char *[]){"--sut-config", "backend=emu", "--steps", "3", NULL});
    cr_assert_lt(r.status, 5, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_expect_eq(audit_number("done"), 1);
    cr_expect_eq(audit_number("agreed"), 24);
    no_leftovers();
}

/* A system whose save_model writes a real .eebm (eeb's own backend,
 * trained for real) but whose test answers are every class shifted by one
 * (tests/sut/shifted_sut.c): invalid, naming the agreement and the
 * threshold, in eeb run and in eeb check alike; for detection too, where
 * the best box's class is what differs. */
Test(sut_run, a_system_answering_otherwise_than_its_saved_model_is_invalid)
{
    inputs(EEB_TASK_CLS);
    snprintf(model, sizeof model, "%s", pretrained_for("cls"));
    const char *want = "accuracy audit: its saved model on eeb's reference (emu) agrees with its "
                       "test answers on 0 of 24 sampled items (0.0 %, top-1 class), under the 90 "
                       "% required";
    struct test_run r = run("cls", EEB_SUT_SHIFTED,
                            (const char *[]){"--sut-config", "backend=emu", "--epochs", "1000000",
                                             "--tmax", "1.2", "--rate", "20", NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, want), "no '%s' in %s", want, r.out);
    test_run_free(&r);
    cr_expect_eq(audit_number("done"), 1);
    cr_expect_eq(audit_number("agreed"), 0);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, want), "eeb check gives the same reason: %s", r.out);
    test_run_free(&r);
    no_leftovers();

    inputs(EEB_TASK_DET);
    unlink(db);
    snprintf(model, sizeof model, "%s", pretrained_for("det"));
    r = run("det", EEB_SUT_SHIFTED,
            (const char *[]){"--sut-config", "backend=emu", "--steps", "2", NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "sampled items (0.0 %, best detection: same class, IoU >= 0.5), "
                            "under the 90 % required"),
              "%s", r.out);
    test_run_free(&r);
    cr_expect_eq(audit_number("sample"), 24);
    cr_expect_eq(audit_number("agreed"), 0);
}

/* A system without save_model (libcheck_good), and one whose model is its
 * own format (the nearest-mean example's text): the audit is recorded as
 * not done, and why, and the run is judged as without it (the example
 * passes; libcheck_good's steps take microseconds, so three of them leave
 * the meter no window, the one reason it is invalid). */
Test(sut_run, a_system_without_an_eeb_model_records_the_audit_not_done)
{
    static const struct {
        const char *backend, *why;
        int status;
        const char *const more[8];
    } cases[] = {
        {EEB_SUT_CHECK "good.so",
         "the system writes no model (it has no save_model)",
         4,
         {"--steps", "3", NULL}},
        {EEB_SUT_EXAMPLE,
         "the saved model is not in eeb's model format (an .eebm starts with \"EEBM\")",
         0,
         {"--epochs", "1000000", "--tmax", "1.2", "--rate", "20", NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        inputs(EEB_TASK_CLS);
        unlink(db);
        struct test_run r = run("cls", cases[i].backend, cases[i].more);
        cr_expect_eq(r.status, cases[i].status, "%s: %s%s", cases[i].backend, r.out, r.err);
        cr_expect(!strstr(r.out, "accuracy audit"), "the verdict does not name it: %s", r.out);
        test_run_free(&r);
        cr_expect_eq(audit_number("done"), 0, "%s", cases[i].backend);
        char *s = audit_said("reason");
        cr_expect_str_eq(s, cases[i].why);
        free(s);
        r = test_eeb((const char *[]){"check", db, NULL});
        cr_expect_eq(r.status, cases[i].status, "%s%s", r.out, r.err);
        char line[300];
        snprintf(line, sizeof line, "  audit    not done: %s", cases[i].why);
        cr_expect(strstr(r.out, line), "no '%s' in %s", line, r.out);
        test_run_free(&r);
        no_leftovers();
    }
}

/* The sample: 64 of 100 test items, distinct and ascending, the same for
 * the same seed and another for another seed (the run's --seed). */
Test(sut_run, the_audits_sample_is_drawn_with_the_runs_seed)
{
    inputs(EEB_TASK_CLS);
    snprintf(model, sizeof model, "%s", pretrained_for("cls"));
    char err[512];
    struct eeb_gen_spec spec = {EEB_TASK_CLS, EEB_GEN_FINETUNE, 1, 100, 5, 16, 1};
    cr_assert_eq(eeb_gen_shard(test, &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    const char *seeds[] = {"1", "1", "2"};
    char *sampled[3];
    for (int i = 0; i < 3; i++) {
        unlink(db);
        struct test_run r = run("cls", EEB_SUT_OWN,
                                (const char *[]){"--sut-config", "backend=emu", "--steps", "2",
                                                 "--seed", seeds[i], NULL});
        cr_assert_lt(r.status, 5, "%s%s", r.out, r.err);
        test_run_free(&r);
        cr_expect_eq(audit_number("sample"), 64);
        cr_expect_eq(audit_number("items"), 100);
        cr_expect_eq(audit_number("agreed"), 64);
        sampled[i] = audit_said("sampled");
        json_t *a = json_loads(sampled[i], 0, NULL);
        cr_assert_eq(json_array_size(a), 64, "%s", sampled[i]);
        for (size_t k = 0; k < 64; k++) {
            json_int_t v = json_integer_value(json_array_get(a, k));
            cr_expect(v >= 0 && v < 100, "item %lld", (long long)v);
            cr_expect(k == 0 || v > json_integer_value(json_array_get(a, k - 1)),
                      "ascending and distinct: %s", sampled[i]);
        }
        json_decref(a);
    }
    cr_expect_str_eq(sampled[0], sampled[1], "the same seed, the same items");
    cr_expect_str_neq(sampled[0], sampled[2], "another seed, other items");
    for (int i = 0; i < 3; i++)
        free(sampled[i]);
}

/* ---- the training audit (docs/sut.md) and its rules (docs/check.md) ---- */

/* A run of a team's library on cls, long enough for a valid measurement,
 * its verdict as eeb run and eeb check give it: eeb check's exit status
 * and its output into check_out (static storage).  Its fine-tune set has
 * 1024 items: a library that trains in no time then runs fewer epochs,
 * and its record holds fewer events. */
static int audited_run(const char *library, int *check_status, char **check_out)
{
    static char out[8192];
    char err[512];
    inputs(EEB_TASK_CLS);
    unlink(db); /* a fresh record: its run is run 1 */
    struct eeb_gen_spec spec = {EEB_TASK_CLS, EEB_GEN_FINETUNE, 0, 1024, 5, 16, 1};
    cr_assert_eq(eeb_gen_shard(ft, &spec, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    struct test_run r =
        run("cls", library,
            (const char *[]){"--epochs", "1000000", "--tmax", "1.2", "--rate", "20", NULL});
    int status = r.status;
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, NULL});
    *check_status = r.status;
    snprintf(out, sizeof out, "%s%s", r.out, r.err);
    *check_out = out;
    test_run_free(&r);
    return status;
}

/* What the run's score event says about it. */
static char *score_why(void)
{
    char *why = NULL;
    cr_assert_eq(test_sql_text(db,
                               "SELECT json_extract(payload, '$.verdict') || ': ' || "
                               "json_extract(payload, '$.why') FROM events WHERE kind = 'score'",
                               &why),
                 0);
    return why;
}

/* A system that trains (the example nearest-mean learner): both audits
 * recorded, before the fine-tune's window and after its end, of the same
 * 16 items, the set's size and the run's seed; some answers changed; its
 * counters agree with the steps and items eeb drove; the run passes and
 * eeb check agrees. */
Test(sut_run, a_system_that_trains_passes_the_training_audit)
{
    int check;
    char *out;
    cr_expect_eq(audited_run(EEB_SUT_EXAMPLE, &check, &out), 0);
    cr_expect_eq(check, 0, "%s", out);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events a, events b WHERE a.kind = "
                                  "'training_audit' AND b.kind = 'finetune_begin' AND a.id < b.id "
                                  "AND json_extract(a.payload, '$.when') = 'before'"),
                 1, "the audit before the window");
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events a, events b WHERE a.kind = "
                                  "'training_audit' AND b.kind = 'stopped' AND a.id > b.id AND "
                                  "json_extract(a.payload, '$.when') = 'after'"),
                 1, "the audit after the fine-tune");
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'training_audit' AND "
                                  "json_array_length(payload, '$.items') = 16 AND "
                                  "json_array_length(payload, '$.answers') = 16 AND "
                                  "json_extract(payload, '$.set_items') = 1024 AND "
                                  "json_extract(payload, '$.seed') = 1"),
                 2);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events a, events b WHERE a.kind = "
                                  "'training_audit' AND b.kind = 'training_audit' AND a.id < b.id "
                                  "AND json_extract(a.payload, '$.items') = "
                                  "json_extract(b.payload, '$.items') AND "
                                  "json_extract(a.payload, '$.answers') <> "
                                  "json_extract(b.payload, '$.answers')"),
                 1, "the same items, other answers");
    cr_expect_gt(test_sql_int(db, "SELECT json_extract(payload, '$.eeb_steps') FROM events WHERE "
                                  "kind = 'stopped' AND json_extract(payload, '$.steps') = "
                                  "json_extract(payload, '$.eeb_steps') AND "
                                  "json_extract(payload, '$.items') = "
                                  "json_extract(payload, '$.eeb_items')"),
                 0, "the SUT's counters, as eeb drove it");
}

/* A system whose train does nothing (it reports a loss all the same):
 * invalid, the system did not train, in the run's verdict and eeb check's. */
Test(sut_run, a_system_that_does_not_train_is_invalid)
{
    const char *want = "the system did not train: its answers to the training audit's 16 items "
                       "of the fine-tune set were the same, bit for bit, before and after "
                       "fine-tuning";
    int check;
    char *out;
    cr_expect_eq(audited_run(EEB_SUT_CHECK "untrained.so", &check, &out), 4);
    char *why = score_why();
    cr_expect(strstr(why, "invalid: ") == why && strstr(why, want), "%s", why);
    free(why);
    cr_expect_eq(check, 4, "%s", out);
    cr_expect(strstr(out, "invalid") && strstr(out, want), "%s", out);
}

/* A system whose counters claim ten times the steps eeb drove: invalid,
 * naming both counts, in the run's verdict and eeb check's. */
Test(sut_run, counters_claiming_ten_times_the_steps_are_invalid)
{
    int check;
    char *out;
    cr_expect_eq(audited_run(EEB_SUT_CHECK "counters.so", &check, &out), 4);
    long long steps = test_sql_int(
        db, "SELECT json_extract(payload, '$.eeb_steps') FROM events WHERE kind = 'stopped'");
    cr_assert_gt(steps, 0);
    char want[200];
    snprintf(want, sizeof want,
             "the system's counters say it took %lld training steps; eeb drove %lld", 10 * steps,
             steps);
    char *why = score_why();
    cr_expect(strstr(why, "invalid: ") == why && strstr(why, want), "wanted \"%s\" in: %s", want,
              why);
    free(why);
    cr_expect_eq(check, 4, "%s", out);
    cr_expect(strstr(out, want), "wanted \"%s\" in: %s", want, out);
}

/* The judge on a record edited to what the rules are about (eeb_run_judge,
 * which eeb check and the server call, without the chain eeb check also
 * holds the record to), an untrained system's: answers that changed
 * though no step was taken; the audit before the fine-tune moved into it;
 * an audit before the fine-tune without the one after it; and the record
 * as made before the audit (no training_audit event, no count of eeb's
 * beside the counters), judged as before: no rule of the audit's applies
 * (whether its untrained system passes is its meter's window's, under the
 * machine's load). */
Test(sut_run, the_audit_rules_on_an_edited_record)
{
    int check;
    char *out;
    struct eeb_run_outcome o;
    char err[512];
    cr_expect_eq(audited_run(EEB_SUT_CHECK "untrained.so", &check, &out), 4);
    test_sql_exec(db, "DELETE FROM events WHERE kind = 'score'");
    test_sql_exec(db, "UPDATE events SET payload = json_set(payload, '$.answers[3]', "
                      "'0123456789abcdef') WHERE kind = 'training_audit' AND "
                      "json_extract(payload, '$.when') = 'after'");
    test_sql_exec(db, "UPDATE events SET payload = json_set(payload, '$.eeb_steps', 0, "
                      "'$.eeb_items', 0) WHERE kind = 'stopped'");
    memset(&o, 0, sizeof o);
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!o.valid && strstr(o.why, "its answers to 1 of the training audit's 16 items "
                                        "changed, though eeb drove no training step: no "
                                        "training explains that"),
              "%s", o.why);

    /* the audit before, moved into the fine-tune */
    test_sql_exec(db, "UPDATE events SET t_mono_ns = (SELECT t_mono_ns + 1 FROM events WHERE kind "
                      "= 'finetune_begin') WHERE kind = 'training_audit' AND "
                      "json_extract(payload, '$.when') = 'before'");
    memset(&o, 0, sizeof o);
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!o.valid && strstr(o.why, "its training audit's answers were not taken where eeb "
                                        "run takes them"),
              "%s", o.why);

    test_sql_exec(db, "DELETE FROM events WHERE kind = 'training_audit' AND "
                      "json_extract(payload, '$.when') = 'after'");
    memset(&o, 0, sizeof o);
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!o.valid && strstr(o.why, "its training audit has answers from before the "
                                        "fine-tune but none from after"),
              "%s", o.why);

    test_sql_exec(db, "DELETE FROM events WHERE kind = 'training_audit'");
    test_sql_exec(db, "UPDATE events SET payload = json_remove(payload, '$.eeb_steps', "
                      "'$.eeb_items') WHERE kind = 'stopped'");
    memset(&o, 0, sizeof o);
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!strstr(o.why, "training audit") && !strstr(o.why, "did not train") &&
                  !strstr(o.why, "counters"),
              "no rule of the audit's applies: %s", o.why);
}

/* A non-finite number in an answer, for every task: the run ends at the
 * first predict (the training audit's, before the fine-tune) as the SUT's
 * error naming the field, and eeb check finds it invalid for that reason. */
Test(sut_run, a_non_finite_answer_ends_the_run_for_every_task)
{
    const struct {
        enum eeb_task task;
        const char *name, *field, *want;
    } cases[] = {
        {EEB_TASK_VIDEO, "video", NULL, "predict: batch item 0, rank 2: score nan"},
        {EEB_TASK_DET, "det", NULL, "predict: batch item 0, box 1: score nan"},
        {EEB_TASK_DET, "det", "x1", "predict: batch item 0, box 1: x1 inf"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        inputs(cases[i].task);
        unlink(db);
        if (cases[i].field)
            setenv("EEB_TEST_NAN_FIELD", cases[i].field, 1);
        struct test_run r =
            run(cases[i].name, EEB_SUT_CHECK "nan.so", (const char *[]){"--epochs", "1", NULL});
        unsetenv("EEB_TEST_NAN_FIELD");
        cr_expect_eq(r.status, 1, "%s: %s%s", cases[i].name, r.out, r.err);
        cr_expect(strstr(r.err, cases[i].want), "wanted \"%s\" in: %s", cases[i].want, r.err);
        test_run_free(&r);
        r = test_eeb((const char *[]){"check", db, NULL});
        cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
        cr_expect(strstr(r.out, "invalid") && strstr(r.out, cases[i].want), "%s", r.out);
        test_run_free(&r);
    }
}
