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
#include <fcntl.h>
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
 * CHECK_NAN) ends the run in the test stage with an error of the system
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

Test(sut_run, a_prediction_of_the_wrong_size_ends_the_run_as_a_protocol_error)
{
    a_run_ending_in("short", "predict", "protocol error: 23 items answered, 24 asked");
}

/* ---- a team's library misbehaving: its own process ends, eeb does not ---- */

Test(sut_run, a_library_crashing_in_train_ends_the_run_naming_it)
{
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
