/*
 * test_exec.c - a team's SUT as a program (sut/exec.c, the exec protocol):
 * the Python example (sut/examples/nearest_mean.py over eeb_sut.py) learns
 * each task through the table eeb_sut_exec_start returns; the C server
 * (sut/examples/eeb_sut_serve.c) serving the example library answers
 * exactly as the library does in process, step for step; and a program
 * that breaks the protocol one way (tests/sut/exec_fault.py: a crash, a
 * hang, a garbage or wrong frame, output before input, answers of the
 * wrong size) fails the call with an error naming the SUT, the call and
 * what was wrong, and is killed and reaped: no process is left behind.
 * A program that cannot see eeb's files (as on another machine) is still
 * handed the model and the xclbin, and its saved model arrives in eeb's.
 */
#include "sut/eeb_sut_exec.h"
#include "sut/eeb_sut_host.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_shard.h"
#include "tests/sut/sut_data.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Debian's python3 (make deps): /usr/bin, which make valgrind does not trace. */
#define PYTHON     "/usr/bin/python3 -B" /* -B: no __pycache__ in the tree */
#define PY_EXAMPLE PYTHON " sut/examples/nearest_mean.py"
#define FAULT      PYTHON " tests/sut/exec_fault.py"
#define SERVE      EEB_SUT_SERVE " " EEB_SUT_EXAMPLE
#define DEADLINE   60.0 /* a well-behaved program's, generous: valgrind starts slowly */

TestSuite(sut_exec, .timeout = 180);

/* ---- processes ---- */

/* This process's children, zombies included, from /proc. */
static int children(void)
{
    DIR *d = opendir("/proc");
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t k = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[k] = '\0';
        const char *paren = strrchr(buf, ')');
        char state;
        int ppid;
        if (paren && sscanf(paren + 2, "%c %d", &state, &ppid) == 2 && ppid == getpid())
            n++;
    }
    closedir(d);
    return n;
}

/* Asserts that pid is no process (killed and reaped: not even a zombie). */
static void assert_gone(pid_t pid)
{
    cr_assert_gt(pid, 0);
    cr_assert_eq(kill(pid, 0), -1, "process %d is still there", (int)pid);
    cr_assert_eq(errno, ESRCH);
    cr_assert_eq(children(), 0, "a child process is left");
}

struct prog {
    const struct eeb_sut_ops *ops;
    void *h;
};

static struct prog start(const char *cmd, const struct eeb_sut_setup *setup, double deadline)
{
    struct prog p;
    char err[1024] = "";
    cr_assert_eq(eeb_sut_exec_start(cmd, setup, deadline, &p.ops, &p.h, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_not_null(p.ops);
    cr_assert_not_null(p.h);
    return p;
}

/* Asserts that starting cmd fails with status and an error holding what. */
static void start_fails(const char *cmd, const struct eeb_sut_setup *setup, int status,
                        const char *what)
{
    const struct eeb_sut_ops *ops = (const void *)1;
    void *h = (void *)1;
    char err[1024] = "";
    cr_assert_eq(eeb_sut_exec_start(cmd, setup, DEADLINE, &ops, &h, err, sizeof err), status, "%s",
                 err);
    cr_assert_null(ops);
    cr_assert_null(h);
    assert_has(err, what);
}

/* ---- the Python example ---- */

static void python_learns(enum eeb_task task)
{
    struct data d = sut_test_read(sut_test_shard(task, 3 * BATCH, 11));
    const struct batch *b0 = &d.batches[0];
    struct eeb_sut_setup setup = sut_test_setup(&d.info, 1, "");
    struct preds *before = malloc(sizeof *before), *after = malloc(sizeof *after);
    struct prog p = start(PY_EXAMPLE, &setup, DEADLINE);
    char err[1024], model[300];
    cr_assert_str_eq(p.ops->name, "nearest-mean-py");
    cr_assert_str_eq(p.ops->version, "1.1", "the object's version, in open's reply");
    cr_assert_not_null(p.ops->counters);
    cr_assert_not_null(p.ops->save_model);
    cr_assert_null(p.ops->end_training, "the example has no end_training");
    cr_assert_eq(p.ops->load_model(p.h, sut_test_empty_model(), err, sizeof err), 0, "%s", err);
    sut_test_predict(p.ops, p.h, &b0->b, before);
    sut_test_well_formed(&d, before, b0->b.n);
    for (int i = 0; i < d.nbatches; i++) {
        struct eeb_sut_step st = {0};
        cr_assert_eq(p.ops->train(p.h, &d.batches[i].b, &st, err, sizeof err), 0, "%s", err);
        cr_assert_eq(st.done, 0);
        cr_assert(i == 0 || isfinite(st.loss), "step %d: loss %g", i, st.loss);
        if (task != EEB_TASK_DET)
            cr_assert(st.counted == d.batches[i].b.n && st.correct <= st.counted);
    }
    sut_test_predict(p.ops, p.h, &b0->b, after);
    sut_test_well_formed(&d, after, b0->b.n);
    cr_assert_neq(memcmp(before, after, sizeof *before), 0, "training changed nothing");
    int right = 0;
    for (int i = 0; i < b0->b.n; i++)
        right += sut_test_first(&d, after, i) >= 0 &&
                 sut_test_shown(&d, b0, i, sut_test_first(&d, after, i));
    cr_assert_gt(right, b0->b.n / 2, "%d of %d training items ranked as shown", right, b0->b.n);
    struct eeb_sut_counters c;
    p.ops->counters(p.h, &c);
    cr_assert_eq(c.steps, 3);
    cr_assert_eq(c.items, 3 * BATCH);
    assert_has(c.detail, "nearest-mean (Python)");
    snprintf(model, sizeof model, "%s/trained.model", test_tmpdir());
    cr_assert_eq(p.ops->save_model(p.h, model, err, sizeof err), 0, "%s", err);
    char *text = test_read_file(model, NULL), want[64];
    snprintf(want, sizeof want, "nearest-mean 1\nshape %s ", eeb_task_name(task));
    cr_assert_not_null(text);
    cr_assert_eq(strncmp(text, want, strlen(want)), 0, "%.60s", text);
    free(text);
    p.ops->close(p.h);
    cr_assert_eq(children(), 0, "the program was not reaped");
    free(before), free(after), free(d.batches);
}

Test(sut_exec, the_python_example_learns_classification)
{
    python_learns(EEB_TASK_CLS);
}

Test(sut_exec, the_python_example_learns_detection)
{
    python_learns(EEB_TASK_DET);
}

Test(sut_exec, the_python_example_learns_video)
{
    python_learns(EEB_TASK_VIDEO);
}

/* ---- the C server: the library out of process answers as in process ---- */

static void same_step(const struct eeb_sut_step *a, const struct eeb_sut_step *b, int i)
{
    cr_assert(memcmp(&a->loss, &b->loss, sizeof a->loss) == 0 || (isnan(a->loss) && isnan(b->loss)),
              "step %d: loss %.17g in process, %.17g served", i, a->loss, b->loss);
    cr_assert_eq(a->correct, b->correct, "step %d", i);
    cr_assert_eq(a->counted, b->counted, "step %d", i);
    cr_assert_eq(a->done, b->done, "step %d", i);
}

static void served_as_in_process(enum eeb_task task)
{
    struct data d = sut_test_read(sut_test_shard(task, 3 * BATCH + 3, 7));
    struct eeb_sut_setup setup = sut_test_setup(&d.info, 5, "grid=3");
    const struct eeb_sut_ops *lib_ops;
    void *lib, *h;
    char err[1024];
    cr_assert_eq(eeb_sut_plugin_load(EEB_SUT_EXAMPLE, &lib_ops, &lib, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_eq(lib_ops->open(&setup, &h, err, sizeof err), 0, "%s", err);
    struct prog p = start(SERVE, &setup, DEADLINE);
    char path[2][300];
    const char *dir = test_tmpdir();
    snprintf(path[0], sizeof path[0], "%s/in_process.model", dir);
    snprintf(path[1], sizeof path[1], "%s/served.model", dir);

    cr_assert_str_eq(p.ops->name, lib_ops->name);
    cr_assert_str_eq(p.ops->version, lib_ops->version, "the table's version, in open's reply");
    cr_assert_eq(eeb_sut_ops_check(p.ops, SERVE, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(!p.ops->end_training, !lib_ops->end_training);
    cr_assert_eq(!p.ops->counters, !lib_ops->counters);
    cr_assert_eq(!p.ops->save_model, !lib_ops->save_model);
    cr_assert_eq(lib_ops->load_model(h, sut_test_empty_model(), err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.ops->load_model(p.h, sut_test_empty_model(), err, sizeof err), 0, "%s", err);
    struct preds *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    for (int i = 0; i < d.nbatches; i++) {
        struct eeb_sut_step sa = {0}, sb = {0};
        cr_assert_eq(lib_ops->train(h, &d.batches[i].b, &sa, err, sizeof err), 0, "%s", err);
        cr_assert_eq(p.ops->train(p.h, &d.batches[i].b, &sb, err, sizeof err), 0, "%s", err);
        same_step(&sa, &sb, i);
        /* the batch with its labels: eeb sends the pixels alone (the server
         * refuses a predict request with more in it) */
        sut_test_predict(lib_ops, h, &d.batches[i].b, a);
        sut_test_predict(p.ops, p.h, &d.batches[i].b, b);
        sut_test_well_formed(&d, b, d.batches[i].b.n);
        cr_assert_eq(memcmp(a, b, sizeof *a), 0, "batch %d: other predictions served", i);
    }
    cr_assert_eq(d.batches[d.nbatches - 1].b.n, 3, "a last batch smaller than the others");
    struct eeb_sut_counters ca, cb;
    lib_ops->counters(h, &ca);
    p.ops->counters(p.h, &cb);
    cr_assert_eq(memcmp(&ca, &cb, sizeof ca), 0, "counters: '%s' and '%s'", ca.detail, cb.detail);
    cr_assert_eq(cb.steps, 4);
    cr_assert_eq(lib_ops->save_model(h, path[0], err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.ops->save_model(p.h, path[1], err, sizeof err), 0, "%s", err);
    size_t la, lb;
    char *ta = test_read_file(path[0], &la), *tb = test_read_file(path[1], &lb);
    cr_assert(la == lb && memcmp(ta, tb, la) == 0, "the saved models differ");
    free(ta), free(tb);
    lib_ops->close(h);
    eeb_sut_plugin_unload(lib);
    p.ops->close(p.h);
    cr_assert_eq(children(), 0, "the server was not reaped");
    free(a), free(b), free(d.batches);
}

Test(sut_exec, the_served_library_answers_as_in_process_classification)
{
    served_as_in_process(EEB_TASK_CLS);
}

Test(sut_exec, the_served_library_answers_as_in_process_detection)
{
    served_as_in_process(EEB_TASK_DET);
}

Test(sut_exec, the_served_library_answers_as_in_process_video)
{
    served_as_in_process(EEB_TASK_VIDEO);
}

/* The program's own refusal is the call's error; the program stays. */
Test(sut_exec, a_refused_call_fails_with_the_programs_reason_and_the_program_stays)
{
    struct data d = sut_test_read(sut_test_shard(EEB_TASK_CLS, BATCH, 11));
    struct eeb_sut_setup setup = sut_test_setup(&d.info, 1, "");
    struct prog p = start(SERVE, &setup, DEADLINE);
    struct batch *b = &d.batches[0];
    struct eeb_sut_step st;
    struct preds *pr = malloc(sizeof *pr);
    char err[1024] = "";
    b->labels[3] = 20;
    cr_assert_eq(p.ops->train(p.h, &b->b, &st, err, sizeof err), EEB_EDEVICE);
    assert_has(err, "SUT '" SERVE "': train: item 3: label 20 (0..19)");
    struct eeb_sut_batch none = b->b;
    none.n = 0;
    cr_assert_eq(p.ops->train(p.h, &none, &st, err, sizeof err), EEB_EINVAL);
    assert_has(err, "SUT '" SERVE "': train: a batch of 0 items (1..8");
    cr_assert_eq(p.ops->load_model(p.h, "/nonexistent/m", err, sizeof err), EEB_EIO);
    assert_has(err, "SUT '" SERVE "': load_model: the model /nonexistent/m: No such file");
    /* the library is handed the server's copy of the bytes, not eeb's path */
    char bad[300];
    snprintf(bad, sizeof bad, "%s/bad.model", test_tmpdir());
    test_write_file(bad, "not a model\n", 12);
    cr_assert_eq(p.ops->load_model(p.h, bad, err, sizeof err), EEB_EDEVICE);
    assert_has(err, "/eeb-sut-");
    assert_has(err, "/bad.model line 1: not a nearest-mean model");
    cr_assert_null(strstr(err, bad), "the library was handed eeb's path: %s", err);
    sut_test_predict(p.ops, p.h, &b->b, pr); /* still there */
    b->labels[3] = 0;
    cr_assert_eq(p.ops->train(p.h, &b->b, &st, err, sizeof err), 0, "%s", err);
    p.ops->close(p.h);
    cr_assert_eq(children(), 0);
    free(pr), free(d.batches);
}

/* The table is checked as a library's; open is the start's alone. */
Test(sut_exec, the_table_passes_the_check_and_refuses_a_second_open)
{
    struct eeb_shard_info info = {
        .task = EEB_TASK_CLS, .h = 8, .w = 8, .c = 3, .frames = 1, .classes = 4};
    struct eeb_sut_setup setup = sut_test_setup(&info, 1, "");
    struct prog p = start(FAULT " ok", &setup, DEADLINE);
    char err[1024] = "";
    cr_assert_eq(eeb_sut_ops_check(p.ops, "exec", err, sizeof err), EEB_OK, "%s", err);
    cr_assert_str_eq(p.ops->name, "stub");
    cr_assert_null(p.ops->version, "an open reply without a version: none");
    void *again = (void *)1;
    cr_assert_neq(p.ops->open(&setup, &again, err, sizeof err), 0);
    cr_assert_null(again);
    assert_has(err, "eeb_sut_exec_start");
    cr_assert_null(p.ops->end_training);
    cr_assert_not_null(p.ops->counters);
    cr_assert_null(p.ops->save_model);
    struct eeb_sut_counters c;
    p.ops->counters(p.h, &c);
    cr_assert_str_eq(c.detail, "stub");
    p.ops->close(p.h);
    cr_assert_eq(children(), 0);
}

/* open's reply may end with the SUT's version (a control shown as '?'),
 * or after the optional calls (none); a version over 255 bytes, or cut
 * short, is a protocol error naming the reply's shape. */
Test(sut_exec, an_open_reply_is_taken_with_or_without_the_version)
{
    struct eeb_shard_info info = {
        .task = EEB_TASK_CLS, .h = 8, .w = 8, .c = 3, .frames = 1, .classes = 4};
    struct eeb_sut_setup setup = sut_test_setup(&info, 1, "");
    struct prog p = start(FAULT " versioned", &setup, DEADLINE);
    char err[1024] = "";
    cr_assert_eq(eeb_sut_ops_check(p.ops, "exec", err, sizeof err), EEB_OK, "%s", err);
    cr_assert_str_eq(p.ops->name, "stub");
    cr_assert_str_eq(EEB_SUT_SLOT(p.ops, version), "0.9-?rc1");
    cr_assert_not_null(p.ops->counters, "the optional calls still read before it");
    p.ops->close(p.h);
    p = start(FAULT " ok", &setup, DEADLINE);
    cr_assert_null(EEB_SUT_SLOT(p.ops, version));
    p.ops->close(p.h);
    /* to an eeb of ABI version 1, which takes no version, the client sends none */
    struct eeb_sut_setup older = setup;
    older.abi_version = 1;
    p = start(FAULT " versioned", &older, DEADLINE);
    cr_assert_null(EEB_SUT_SLOT(p.ops, version), "sent to an eeb of version 1");
    p.ops->close(p.h);
    start_fails(FAULT " longversion", &setup, EEB_EFORMAT,
                "open: protocol error: a reply of 272 bytes after its status, a name of 4");
    start_fails(FAULT " cutversion", &setup, EEB_EFORMAT, "then optionally a version of 0..255");
    cr_assert_eq(children(), 0);
}

/* ---- starting ---- */

static struct eeb_sut_setup small_setup(enum eeb_sut_task task, const char *config)
{
    struct eeb_shard_info info = {.task = (enum eeb_task)task,
                                  .h = SIDE,
                                  .w = SIDE,
                                  .c = 3,
                                  .frames = 1,
                                  .classes = task == EEB_SUT_DET ? 5 : 20};
    struct eeb_sut_setup setup = sut_test_setup(&info, 1, config);
    setup.workdir = test_tmpdir(); /* there: a killed client leaves no workdir of its own */
    return setup;
}

Test(sut_exec, a_program_that_is_not_there_is_named)
{
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    start_fails("no-such-program-eeb --x", &setup, EEB_EIO,
                "SUT 'no-such-program-eeb --x': open: cannot start 'no-such-program-eeb': No such "
                "file or directory (not in PATH)");
    start_fails("/nonexistent/team", &setup, EEB_EIO,
                "open: cannot start '/nonexistent/team': No such file or directory");
    start_fails("/tmp", &setup, EEB_EIO, "open: cannot start '/tmp': Is a directory");
    start_fails("sut/examples/nearest_mean.c", &setup, EEB_EIO, "Permission denied");
    start_fails("   ", &setup, EEB_EINVAL, "open: no program to start");
    cr_assert_eq(children(), 0);
}

Test(sut_exec, a_program_that_ends_at_once_is_named_with_its_status)
{
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    start_fails("/bin/false", &setup, EEB_EDEVICE,
                "SUT '/bin/false': open: the program exited 1 before answering");
    cr_assert_eq(children(), 0);
}

/* A /bin/sh program in this test's directory that writes a traceback of
 * `lines` lines to its stderr (after `junk` bytes of noise, and an ESC)
 * and exits 1 before reading anything; its path (static storage). */
static const char *traceback_program(int lines, int junk)
{
    static char path[300];
    char text[2048];
    int n = snprintf(text, sizeof text,
                     "#!/bin/sh\n"
                     "head -c %d /dev/zero | tr '\\0' x >&2\n"
                     "echo >&2\n"
                     "echo 'Traceback (most recent call last):' >&2\n"
                     "i=1; while [ $i -le %d ]; do echo \"  File \\\"team.py\\\", line $i\" >&2; "
                     "i=$((i+1)); done\n"
                     "printf 'bell \\033[31m here\\n' >&2\n"
                     "echo \"ModuleNotFoundError: No module named 'numpy'\" >&2\n"
                     "exit 1\n",
                     junk, lines);
    cr_assert_lt(n, (int)sizeof text);
    snprintf(path, sizeof path, "%s/team.sh", test_tmpdir());
    test_write_file(path, text, (size_t)n);
    cr_assert_eq(chmod(path, 0755), 0);
    return path;
}

Test(sut_exec, a_program_that_exits_before_answering_is_named_with_its_stderrs_end)
{
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    const char *prog = traceback_program(15, 0);
    const struct eeb_sut_ops *ops;
    void *h;
    char err[1024] = "";
    cr_assert_eq(eeb_sut_exec_start(prog, &setup, DEADLINE, &ops, &h, err, sizeof err), EEB_EDEVICE,
                 "%s", err);
    assert_has(err, "open: the program exited 1 before answering; its stderr ended: ");
    /* its last lines, the last one last, on one line; an escape shown, not sent */
    assert_has(err, "line 15 | bell ?[31m here | ModuleNotFoundError: No module named 'numpy'");
    cr_expect_null(strstr(err, "line 5\""), "more than the last 10 lines: %s", err);
    cr_expect_null(strchr(err, '\n'), "%s", err);
    cr_expect_null(strchr(err, '\033'), "%s", err);
    cr_assert_eq(children(), 0);
}

Test(sut_exec, a_program_writing_much_to_its_stderr_is_drained_and_its_last_line_fits)
{
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    /* more than a pipe holds: eeb must read as it goes, or the program blocks */
    const char *prog = traceback_program(3, 70000);
    const struct eeb_sut_ops *ops;
    void *h;
    char err[320] = ""; /* a small buffer: the earliest lines give way */
    cr_assert_eq(eeb_sut_exec_start(prog, &setup, DEADLINE, &ops, &h, err, sizeof err), EEB_EDEVICE,
                 "%s", err);
    assert_has(err, "ModuleNotFoundError: No module named 'numpy'");
    assert_has(err, "its stderr ended: ...");
    cr_expect_lt(strlen(err), sizeof err - 1, "%s", err);
    cr_assert_eq(children(), 0);
}

static pid_t read_pid(const char *pidfile)
{
    char *text = test_read_file(pidfile, NULL);
    cr_assert_not_null(text, "%s: the program wrote no pid", pidfile);
    pid_t pid = (pid_t)atoi(text);
    free(text);
    return pid;
}

Test(sut_exec, a_refused_open_fails_with_the_reason_and_ends_the_program)
{
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "refuse");
    char cmd[400], pidfile[300];
    snprintf(pidfile, sizeof pidfile, "%s/pid", test_tmpdir());
    snprintf(cmd, sizeof cmd, FAULT " ok %s", pidfile);
    start_fails(cmd, &setup, EEB_EDEVICE, "open: setup: refused, as asked");
    assert_gone(read_pid(pidfile));
    setup = small_setup(EEB_SUT_CLS, "");
    setup.batch_max = 0;
    start_fails(PY_EXAMPLE, &setup, EEB_EINVAL, "open: setup: ");
}

/* ---- faults: each fails the call naming the SUT, the call and what ---- */

struct fault {
    struct prog p;
    pid_t pid;
    char cmd[400];
    uint8_t px[BATCH * SIDE * SIDE * 3];
    int32_t labels[BATCH], counts[BATCH];
    struct eeb_sut_batch b;
};

/* exec_fault.py in mode, started on a small setup of the task. */
static struct fault *fault(const char *mode, enum eeb_sut_task task, double deadline)
{
    struct fault *f = calloc(1, sizeof *f);
    char pidfile[300];
    snprintf(pidfile, sizeof pidfile, "%s/pid", test_tmpdir());
    snprintf(f->cmd, sizeof f->cmd, FAULT " %s %s", mode, pidfile);
    struct eeb_sut_setup setup = small_setup(task, "");
    f->p = start(f->cmd, &setup, deadline);
    f->pid = read_pid(pidfile);
    f->b = (struct eeb_sut_batch){BATCH, f->px, f->labels, f->counts, NULL};
    return f;
}

/* Asserts that the call failed with status, its error naming the SUT and
 * the call and holding what; the program killed and reaped; and every
 * later call failing, saying why it went. */
static void failed(struct fault *f, int rc, int status, const char *err, const char *call,
                   const char *what)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "SUT '%s': %s: ", f->cmd, call);
    cr_assert_eq(rc, status, "%s", err);
    cr_assert_eq(strncmp(err, prefix, strlen(prefix)), 0, "'%s' does not start '%s'", err, prefix);
    assert_has(err, what);
    assert_gone(f->pid);
    struct preds pr;
    struct eeb_sut_predictions out = {pr.classes, pr.scores, pr.counts, pr.dets};
    char later[1024] = "";
    cr_assert_eq(f->p.ops->predict(f->p.h, &f->b, &out, later, sizeof later), EEB_EDEVICE);
    assert_has(later, "predict: not sent: the program is gone (");
    assert_has(later, what);
    f->p.ops->close(f->p.h);
    free(f);
}

static void train_fails(const char *mode, int status, const char *what)
{
    struct fault *f = fault(mode, EEB_SUT_CLS, DEADLINE);
    struct eeb_sut_step st;
    char err[1024] = "";
    int rc = f->p.ops->train(f->p.h, &f->b, &st, err, sizeof err);
    failed(f, rc, status, err, "train", what);
}

static void predict_fails(const char *mode, enum eeb_sut_task task, const char *what)
{
    struct fault *f = fault(mode, task, DEADLINE);
    struct preds pr;
    struct eeb_sut_predictions out = {pr.classes, pr.scores, pr.counts, pr.dets};
    char err[1024] = "";
    int rc = f->p.ops->predict(f->p.h, &f->b, &out, err, sizeof err);
    failed(f, rc, EEB_EFORMAT, err, "predict", what);
}

/* Read the header, exit 3 without reading the batch: eeb's writes of the
 * rest meet a closed pipe (EPIPE), and SIGPIPE does not end eeb. */
Test(sut_exec, a_program_that_exits_mid_train_is_named_with_its_status)
{
    sigset_t now, pending;
    struct fault *f = calloc(1, sizeof *f);
    char pidfile[300];
    snprintf(pidfile, sizeof pidfile, "%s/pid", test_tmpdir());
    snprintf(f->cmd, sizeof f->cmd, FAULT " exit3 %s", pidfile);
    /* a batch much larger than a pipe holds (64 KiB) */
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    setup.height = setup.width = 128, setup.batch_max = 32;
    f->p = start(f->cmd, &setup, DEADLINE);
    f->pid = read_pid(pidfile);
    uint8_t *px = calloc(32, 128 * 128 * 3);
    int32_t labels[32] = {0};
    struct eeb_sut_batch big = {32, px, labels, NULL, NULL};
    struct eeb_sut_step st;
    char err[1024] = "";
    signal(SIGPIPE, SIG_DFL); /* as in eeb: Criterion's workers ignore it */
    int rc = f->p.ops->train(f->p.h, &big, &st, err, sizeof err);
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    sigpending(&pending);
    cr_assert(!sigismember(&now, SIGPIPE), "SIGPIPE left blocked");
    cr_assert(!sigismember(&pending, SIGPIPE), "a SIGPIPE left pending");
    f->b = (struct eeb_sut_batch){1, px, NULL, NULL, NULL};
    failed(f, rc, EEB_EDEVICE, err, "train", "the program exited 3 before answering");
    free(px);
}

Test(sut_exec, a_program_killed_by_a_signal_mid_train_is_named_with_the_signal)
{
    train_fails("segv", EEB_EDEVICE,
                "the program was killed by signal 11 (Segmentation fault) before answering");
}

/* Deadline 1 s: the call fails within it (and some slack), the program
 * killed. */
Test(sut_exec, a_program_that_hangs_is_killed_at_the_deadline)
{
    struct fault *f = fault("hang", EEB_SUT_CLS, 1.0);
    struct eeb_sut_step st;
    char err[1024] = "";
    int64_t t0 = eeb_mono_ns();
    int rc = f->p.ops->train(f->p.h, &f->b, &st, err, sizeof err);
    double s = (double)(eeb_mono_ns() - t0) / 1e9;
    cr_assert(s >= 0.99 && s < 2.0, "train failed after %.3f s, the deadline is 1 s", s);
    failed(f, rc, EEB_ETIMEOUT, err, "train", "no answer within 1 s (killed)");
}

Test(sut_exec, a_garbage_reply_is_a_protocol_error)
{
    train_fails("garbage", EEB_EFORMAT,
                "protocol error: the reply is not a frame: it starts '\\x07\\x08\\x09\\x0a");
}

Test(sut_exec, a_reply_of_another_magic_is_a_protocol_error)
{
    train_fails("magic", EEB_EFORMAT, "it starts 'EEBX\\x01\\x00\\x03\\x00\\x02");
}

Test(sut_exec, a_reply_of_another_version_is_a_protocol_error)
{
    train_fails("version", EEB_EFORMAT, "reply header: version 2, eeb speaks version 1");
}

Test(sut_exec, an_oversized_reply_is_refused_before_it_is_read)
{
    train_fails("oversized", EEB_EFORMAT,
                "reply header: length 4294967295, over the cap of 268435456 bytes");
}

Test(sut_exec, a_reply_to_another_request_is_a_protocol_error)
{
    train_fails("wrongid", EEB_EFORMAT, "reply header: id 3, the request's is 2");
}

Test(sut_exec, a_step_of_more_correct_than_counted_is_a_protocol_error)
{
    train_fails("badstep", EEB_EFORMAT, "protocol error: correct 9 of 8 counted");
}

Test(sut_exec, a_program_that_closes_its_stdout_is_killed)
{
    train_fails("nostdout", EEB_EDEVICE, "closed its stdout without answering (killed)");
}

Test(sut_exec, output_before_input_is_a_protocol_error)
{
    char pidfile[300], cmd[400];
    snprintf(pidfile, sizeof pidfile, "%s/pid", test_tmpdir());
    snprintf(cmd, sizeof cmd, FAULT " early %s", pidfile);
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    start_fails(cmd, &setup, EEB_EFORMAT,
                "': open: protocol error: output before input: the program wrote 'hello, "
                "eeb\\x0a' to its stdout before reading the first request");
    assert_gone(read_pid(pidfile));
}

Test(sut_exec, a_predict_answering_one_item_fewer_is_a_protocol_error)
{
    predict_fails("short", EEB_SUT_CLS, "protocol error: 7 items answered, 8 asked");
}

Test(sut_exec, a_predicted_class_out_of_range_is_a_protocol_error)
{
    predict_fails("badclass", EEB_SUT_CLS, "protocol error: item 0 rank 0: class 20 (0..19)");
}

Test(sut_exec, more_detections_than_max_boxes_are_a_protocol_error)
{
    predict_fails("manyboxes", EEB_SUT_DET,
                  "protocol error: item 0: 4 detections (0..max_boxes 3)");
}

/* ---- close ---- */

Test(sut_exec, close_ends_the_program)
{
    struct fault *f = fault("ok", EEB_SUT_CLS, DEADLINE);
    pid_t pid = f->pid;
    f->p.ops->close(f->p.h);
    assert_gone(pid);
    free(f);
}

/* Neither answering close nor ending at the end of its stdin: killed
 * after a short wait. */
Test(sut_exec, a_program_that_does_not_close_is_killed)
{
    struct fault *f = fault("noclose", EEB_SUT_CLS, 1.0);
    pid_t pid = f->pid;
    int64_t t0 = eeb_mono_ns();
    f->p.ops->close(f->p.h);
    double s = (double)(eeb_mono_ns() - t0) / 1e9;
    cr_assert_lt(s, 3.5, "close took %.3f s", s);
    assert_gone(pid);
    free(f);
}

/* ---- files: eeb sends their bytes ---- */

/* A program on another machine (exec:ssh board ...) sees none of eeb's
 * files: exec_fault.py remote hides eeb's directory from itself, and is
 * still handed the model and the xclbin, as copies of its own, and a
 * workdir; the model it saves arrives in eeb's file. */
Test(sut_exec, a_program_that_cannot_see_eebs_files_is_handed_the_model_and_the_xclbin)
{
    static const char bytes[] = "a team's model\n\0\x01\xff and more";
    const char *dir = test_tmpdir();
    char model[300], xclbin[300], saved[300], pidfile[300], cmd[700], want[128];
    char hash[EEB_SHA256_HEX], err[1024] = "";
    snprintf(model, sizeof model, "%s/team.model", dir);
    snprintf(xclbin, sizeof xclbin, "%s/d.xclbin", dir);
    snprintf(saved, sizeof saved, "%s/saved.model", dir);
    snprintf(pidfile, sizeof pidfile, "%s/pid", test_tmpdir());
    snprintf(cmd, sizeof cmd, FAULT " remote %s %s", pidfile, dir);
    test_write_file(model, bytes, sizeof bytes - 1);
    test_write_file(xclbin, "xclbin bytes", 12);
    struct eeb_sut_setup setup = small_setup(EEB_SUT_CLS, "");
    setup.workdir = dir;
    setup.xclbin = xclbin;
    struct prog p = start(cmd, &setup, DEADLINE);
    cr_assert_not_null(p.ops->save_model);
    cr_assert_eq(p.ops->load_model(p.h, model, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_sut_counters c;
    p.ops->counters(p.h, &c);
    eeb_sha256(bytes, sizeof bytes - 1, hash);
    snprintf(want, sizeof want, "remote model %zu bytes %.8s, d.xclbin 12 bytes, workdir",
             sizeof bytes - 1, hash);
    cr_assert_str_eq(c.detail, want);
    cr_assert_eq(p.ops->save_model(p.h, saved, err, sizeof err), EEB_OK, "%s", err);
    size_t len;
    char *text = test_read_file(saved, &len);
    cr_assert_not_null(text);
    cr_assert(len == sizeof bytes - 1 + 6 && memcmp(text, bytes, sizeof bytes - 1) == 0 &&
                  memcmp(text + len - 6, "saved\n", 6) == 0,
              "%zu bytes saved: '%.*s'", len, (int)len, text);
    free(text);
    p.ops->close(p.h);
    assert_gone(read_pid(pidfile));
    test_expect_none_named(dir, ".tmp-"); /* the save committed */
}

/* A model larger than a request can carry is refused before anything is
 * sent, naming the file; the program stays. */
Test(sut_exec, a_model_over_the_protocols_cap_is_refused_naming_the_file)
{
    struct fault *f = fault("ok", EEB_SUT_CLS, DEADLINE);
    char model[300], err[1024] = "", want[1024];
    snprintf(model, sizeof model, "%s/huge.model", test_tmpdir());
    FILE *m = fopen(model, "w");
    cr_assert_not_null(m);
    cr_assert_eq(ftruncate(fileno(m), EEB_SUT_EXEC_MAX_PAYLOAD), 0); /* sparse: no bytes written */
    fclose(m);
    cr_assert_eq(f->p.ops->load_model(f->p.h, model, err, sizeof err), EEB_EINVAL, "%s", err);
    snprintf(want, sizeof want, "SUT '%s': load_model: the model %s: %u bytes, over what a request",
             f->cmd, model, EEB_SUT_EXEC_MAX_PAYLOAD);
    assert_has(err, want);
    struct eeb_sut_step st;
    cr_assert_eq(f->p.ops->train(f->p.h, &f->b, &st, err, sizeof err), EEB_OK, "%s", err);
    f->p.ops->close(f->p.h);
    assert_gone(f->pid);
    free(f);
}
