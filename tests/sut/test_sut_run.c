/*
 * test_sut_run.c - `eeb run` on a team's system under test: the example
 * library (sut/examples/nearest_mean.c) for each task, eeb's own emu built
 * as a library (sut/plugins) agreeing with eeb's emu run directly, a SUT
 * that says it is done, one that fails mid-training, and what is refused
 * before a run is recorded.
 */
#include "record/eeb_record.h"
#include "tasks/eeb_gen.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* A cls run on backend, with its page: the stored configuration names the
 * system as it names itself (name) and how it was reached (kind), eeb
 * check says so in a line, and the page's title names it. */
static void the_system_is_recorded(const char *backend, const char *name, const char *kind)
{
    inputs(EEB_TASK_CLS);
    char page[300], want[300], *text;
    snprintf(page, sizeof page, "%s/run.html", test_tmpdir());
    struct test_run r = run("cls", backend,
                            (const char *[]){"--epochs", "1000000", "--tmax", "1.2", "--rate", "20",
                                             "--report", page, NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.name') FROM runs", &text),
                 0);
    cr_expect_str_eq(text, name);
    free(text);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.kind') FROM runs", &text),
                 0);
    cr_expect_str_eq(text, kind);
    free(text);
    cr_assert_eq(test_sql_text(db, "SELECT json_extract(config, '$.sut.detail') FROM runs", &text),
                 0);
    cr_expect(strstr(text, "nearest-mean"), "the counters' detail: %s", text);
    free(text);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    snprintf(want, sizeof want, "  system   %s (%s), nearest-mean", name, kind);
    cr_expect(strstr(r.out, want), "no '%s' in: %s", want, r.out);
    test_run_free(&r);
    text = test_read_file(page, NULL);
    cr_assert_not_null(text);
    snprintf(want, sizeof want, ": cls on %s (%s)</h1>", name, kind);
    cr_expect(strstr(text, want), "the page's title: no '%s'", want);
    free(text);
    no_leftovers();
}

Test(sut_run, a_teams_library_is_recorded_by_its_name_and_kind)
{
    the_system_is_recorded(EEB_SUT_EXAMPLE, "nearest-mean", "library");
}

Test(sut_run, a_teams_program_is_recorded_by_the_name_it_answers_open_with)
{
    the_system_is_recorded(SERVED_SUT, "nearest-mean", "exec");
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

/* A whole run through tests/sut/exec_fault.py MODE: it ends with an error
 * naming the SUT, the call and what went wrong; the run is marked failed
 * with that error recorded after what came before it (the fine-tune
 * begin, or the whole fine-tuning for a fault in predict), and eeb check
 * agrees: invalid, for the same reason. */
static void a_run_ending_in(const char *mode, const char *call, const char *what)
{
    inputs(EEB_TASK_CLS);
    char backend[200], want[400];
    snprintf(backend, sizeof backend, "exec:" FAULT_SUT "%s", mode);
    snprintf(want, sizeof want, "SUT '" FAULT_SUT "%s': %s: %s", mode, call, what);
    struct test_run r =
        run("cls", backend, (const char *[]){"--sut-deadline", "2", "--epochs", "2", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, want), "wanted \"%s\" in: %s", want, r.err);
    test_run_free(&r);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs WHERE state = 'failed'"), 1);
    char sql[600];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM events e WHERE kind = 'error' AND instr(json_extract(payload, "
             "'$.message'), '%s'': %s: %s') AND EXISTS (SELECT 1 FROM events b WHERE b.kind = "
             "'finetune_begin' AND b.id < e.id)",
             mode, call, what);
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
 * an audit before the fine-tune without the one after it; and the record as made before the audit
 * (no training_audit event, no count of eeb's beside the counters), judged as before: its untrained
 * system passes. */
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
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!o.valid && strstr(o.why, "its answers to 1 of the training audit's 16 items "
                                        "changed, though eeb drove no training step: no "
                                        "training explains that"),
              "%s", o.why);

    /* the audit before, moved into the fine-tune */
    test_sql_exec(db, "UPDATE events SET t_mono_ns = (SELECT t_mono_ns + 1 FROM events WHERE kind "
                      "= 'finetune_begin') WHERE kind = 'training_audit' AND "
                      "json_extract(payload, '$.when') = 'before'");
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!o.valid && strstr(o.why, "its training audit's answers were not taken where eeb "
                                        "run takes them"),
              "%s", o.why);

    test_sql_exec(db, "DELETE FROM events WHERE kind = 'training_audit' AND "
                      "json_extract(payload, '$.when') = 'after'");
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(!o.valid && strstr(o.why, "its training audit has answers from before the "
                                        "fine-tune but none from after"),
              "%s", o.why);

    test_sql_exec(db, "DELETE FROM events WHERE kind = 'training_audit'");
    test_sql_exec(db, "UPDATE events SET payload = json_remove(payload, '$.eeb_steps', "
                      "'$.eeb_items') WHERE kind = 'stopped'");
    cr_assert_eq(eeb_run_judge(db, 1, NAN, &o, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(o.valid && o.pass, "%s", o.why);
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
