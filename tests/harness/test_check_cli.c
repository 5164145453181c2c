/*
 * test_check_cli.c - what a user and a script read off eeb: one exit-code
 * scheme for every command that judges a run (0 pass, 1 error, 2 usage,
 * 3 fail, 4 invalid), `eeb check` in words and units (n/a, full precision
 * where figures disagree, every figure in --json, --all), read-only
 * commands that leave the folder as they found it, and errors that name a
 * directory or a missing folder before any work is done.
 */
#include "common/eeb_common.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];
static struct test_cls_run in;
static const char *ft = in.ft, *test = in.test, *model = in.model, *db = in.db;

/* Classification shards of four easy classes and a fresh model for them. */
static void inputs(void)
{
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    in = test_cls_run_inputs(dir, 128, 32);
}

/* `eeb run` on the inputs with a power source, sampled at 20 Hz over a
 * fine-tune long enough that a loaded machine's stall is no gap; its exit
 * status. */
static int run_with(const char *power)
{
    struct test_run r = test_eeb((const char *[]){
        "run", "--task", "cls", "--finetune", ft, "--test", test, "--model", model, "--db", db,
        "--epochs", "60", "--rate", "20", "--power", power, "-q", NULL});
    int status = r.status;
    test_run_free(&r);
    return status;
}

/* `eeb run` on the modeled clock (no meter: the host's load changes
 * nothing) under P_max pmax watts; its exit status. */
static int run_modeled(const char *pmax)
{
    struct test_run r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft,
                                                  "--test", test, "--model", model, "--db", db,
                                                  "--epochs", "2", "--pmax", pmax, "-q", NULL});
    int status = r.status;
    test_run_free(&r);
    return status;
}

static int exists(const char *suffix)
{
    char p[320];
    snprintf(p, sizeof p, "%s%s", db, suffix);
    return access(p, F_OK) == 0;
}

/* The words of a figure's line of eeb check: recomputed, stored, agree. */
static void assert_figure(const char *out, const char *label, const char *recomputed,
                          const char *stored, const char *agree)
{
    char at[32], a[64], b[64], c[16];
    snprintf(at, sizeof at, "\n  %s ", label);
    const char *line = strstr(out, at);
    cr_assert(line, "no %s line in:\n%s", label, out);
    cr_assert_eq(sscanf(line, " %*s %63s %63s %15s", a, b, c), 3, "%s", line);
    cr_expect_str_eq(a, recomputed, "%s recomputed in:\n%s", label, out);
    cr_expect_str_eq(b, stored, "%s stored in:\n%s", label, out);
    cr_expect_str_eq(c, agree, "%s in:\n%s", label, out);
}

/* One scheme: a run that passes, fails, or cannot be judged exits 0, 3
 * or 4 from eeb run, eeb check and eeb power summary alike; before, eeb
 * run said 1 for invalid and eeb check 1 for fail, 2 for invalid.  An
 * invalid measurement of a valid length (a meter that fails reads) says
 * 4 from power summary too: run/a_failing_stalled_or_unplugged_meter...
 * and power_cli/a_failing_meter_makes_the_measurement_invalid. */
Test(check_cli, every_command_says_a_verdict_with_the_same_exit_code, .timeout = 120)
{
    inputs();
    cr_expect_eq(run_with("sim:watts=5"), 0, "pass");
    cr_expect_eq(run_with("sim:watts=12"), 3, "over P_max 10 W: fail");
    /* a meter read once a second under a fine-tune of some 30 ms: no two
     * samples span the window, so the run is invalid, and the E it could
     * not measure is '-', not 0 */
    struct test_run slow = test_eeb((const char *[]){
        "run", "--task", "cls", "--finetune", ft, "--test", test, "--model", model, "--db", db,
        "--epochs", "2", "--power", "sim:watts=5", "--rate", "1", "-q", NULL});
    cr_expect_eq(slow.status, 4, "%s%s", slow.out, slow.err);
    cr_expect(strstr(slow.out, "  M_p         -   E - J"), "%s", slow.out);
    cr_expect(strstr(slow.out, "  INVALID: "), "%s", slow.out);
    test_run_free(&slow);
    static const int want[] = {0, 3, 4};
    for (int run = 1; run <= 3; run++) {
        char id[16];
        snprintf(id, sizeof id, "%d", run);
        struct test_run r = test_eeb((const char *[]){"check", db, "--run", id, NULL});
        cr_expect_eq(r.status, want[run - 1], "check run %d: %s%s", run, r.out, r.err);
        cr_expect(!strstr(r.out, " nan") && !strstr(r.out, " 0.000 J"), "%s", r.out);
        test_run_free(&r);
        if (run == 3)
            continue; /* too few samples for a summary: an error, not a verdict */
        r = test_eeb((const char *[]){"power", "summary", db, "--run", id, "--pmax", "10", NULL});
        cr_expect_eq(r.status, want[run - 1], "power summary run %d: %s%s", run, r.out, r.err);
        test_run_free(&r);
    }
    /* --all: the worst run's status, each run in turn */
    struct test_run r = test_eeb((const char *[]){"check", db, "--all", NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    assert_has(r.out, "run 1 (");
    assert_has(r.out, "run 2 (");
    assert_has(r.out, "run 3 (");
    assert_has(r.out, "verdict: fail");
    test_run_free(&r);
    /* errors and usage keep 1 and 2 */
    r = test_eeb((const char *[]){"check", db, "--run", "9", NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    assert_has(r.err, "no run 9");
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, "--run", "1", "--all", NULL});
    cr_expect_eq(r.status, 2, "%s", r.err);
    test_run_free(&r);
    /* the scheme is in every judging command's help */
    static const char *const judging[] = {"run", "check", "score", "submit", "power", NULL};
    for (const char *const *c = judging; *c; c++) {
        r = test_eeb((const char *[]){*c, "--help", NULL});
        cr_expect_eq(r.status, 0);
        cr_expect(strstr(r.out, "3 fail") && strstr(r.out, "4 invalid"), "eeb %s --help:\n%s", *c,
                  r.out);
        test_run_free(&r);
    }
}

/* Words and units, n/a for what a run does not have, full precision where
 * a stored figure disagrees, every figure in --json. */
Test(check_cli, check_says_each_figure_in_words_and_units, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    cr_assert_eq(run_modeled("0.5"), 3);
    struct test_run r = test_eeb((const char *[]){"check", db, "--run", "1", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    assert_has(r.out, "recomputed");
    assert_figure(r.out, "passed", "yes", "yes", "agree");
    assert_has(r.out, " s   "); /* T in seconds */
    assert_has(r.out, " J   "); /* E in joules */
    assert_has(r.out, "verdict: pass, S = ");
    cr_expect(!strstr(r.out, " nan") && !strstr(r.out, "recomputed 1 "), "%s", r.out);
    test_run_free(&r);

    /* the failed run has no S: n/a on both sides, not nan or 0 */
    r = test_eeb((const char *[]){"check", db, "--run", "2", NULL});
    cr_assert_eq(r.status, 3, "%s%s", r.out, r.err);
    assert_figure(r.out, "S", "n/a", "n/a", "agree");
    assert_figure(r.out, "passed", "no", "no", "agree");
    cr_expect(!strstr(r.out, " nan"), "%s", r.out);
    test_run_free(&r);

    /* an edit in the 7th significant digit shows in full */
    char q[400];
    snprintf(q, sizeof q,
             "sqlite3 %s \"UPDATE results SET value = value * (1 + 1e-7) WHERE run_id = 1 AND "
             "name = 'energy_j'\"",
             db);
    cr_assert_eq(system(q), 0);
    r = test_eeb((const char *[]){"check", db, "--run", "1", NULL});
    cr_assert_eq(r.status, 4, "%s%s", r.out, r.err);
    const char *line = strstr(r.out, "  E        ");
    cr_assert(line, "%s", r.out);
    char recomputed[64], stored_text[64];
    cr_assert_eq(sscanf(line, " E %63s J %63s J", recomputed, stored_text), 2, "%s", line);
    /* %.3f would print both alike; the digits that differ must show */
    cr_expect_str_neq(recomputed, stored_text, "%s", line);
    cr_expect_neq(strtod(recomputed, NULL), strtod(stored_text, NULL), "%s", line);
    assert_has(line, "DISAGREE");
    assert_has(r.out, "verdict: invalid: the stored E (");
    test_run_free(&r);

    /* --json: an object with every figure, null for n/a */
    json_t *o = test_eeb_json((const char *[]){"check", db, "--run", "2", "--json", NULL}, 3);
    cr_assert_not_null(o);
    cr_expect_str_eq(json_string_value(json_object_get(o, "verdict")), "fail");
    cr_expect(json_is_null(json_object_get(o, "S")));
    json_t *figs = json_object_get(o, "figures");
    static const char *const keys[] = {"m_u", "m_t", "m_p", "m_s", "t_s", "energy_j", "S", "pass"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *f = json_object_get(figs, keys[i]);
        cr_expect(json_is_object(f), "no figure %s", keys[i]);
        cr_expect(json_is_true(json_object_get(f, "agree")), "%s disagrees", keys[i]);
    }
    cr_expect(json_is_null(json_object_get(json_object_get(figs, "S"), "recomputed")));
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(figs, "t_s"), "unit")), "s");
    cr_expect_gt(json_number_value(json_object_get(o, "worst_window_w")), 0.5);
    json_decref(o);
    /* --all --json: an array, oldest first */
    o = test_eeb_json((const char *[]){"check", db, "--all", "--json", NULL}, 4);
    cr_assert(json_is_array(o) && json_array_size(o) == 2);
    cr_expect_eq(json_integer_value(json_object_get(json_array_get(o, 0), "run")), 1);
    json_decref(o);
}

/* eeb check, db info, report and power summary read; they must not leave
 * the -wal and -shm files a WAL reader makes (a read-only SQLite handle
 * cannot remove them). */
Test(check_cli, read_only_commands_leave_no_wal_or_shm_files, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    cr_assert(!exists("-wal") && !exists("-shm"), "the run left its WAL files");
    char html[320];
    snprintf(html, sizeof html, "%s/r.html", dir);
    const char *const *commands[] = {
        (const char *[]){"check", db, NULL},
        (const char *[]){"db", "info", db, NULL},
        (const char *[]){"report", db, "-o", html, NULL},
        (const char *[]){"power", "summary", db, NULL},
    };
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        struct test_run r = test_eeb(commands[i]);
        /* each does its job; power summary's verdict is on the host's own
         * trace, which a loaded machine may leave with a gap (exit 4) */
        int judged = r.status == 0 || (i == 3 && r.status == 4);
        cr_expect(judged, "eeb %s: exit %d: %s%s", commands[i][0], r.status, r.out, r.err);
        cr_expect(!exists("-wal") && !exists("-shm"), "eeb %s left -wal or -shm", commands[i][0]);
        test_run_free(&r);
    }
}

static void copy_file(const char *from, const char *to)
{
    size_t len;
    char *bytes = test_read_file(from, &len);
    cr_assert_not_null(bytes, "%s", from);
    test_write_file(to, bytes, len);
    free(bytes);
}

/* A copy taken with its log (-wal) beside it, as a reviewer may receive
 * one, or a database a run is still writing: eeb check reads it without
 * folding the log into the file (a read-write handle would, on closing). */
Test(check_cli, a_copy_with_its_log_is_read_as_it_is, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
    cr_assert_eq(sqlite3_exec(h,
                              "INSERT INTO results (run_id, name, value, unit, provenance) "
                              "VALUES (1, 'reviewer_note', 1, '1', 'computed')",
                              NULL, NULL, NULL),
                 SQLITE_OK, "%s", sqlite3_errmsg(h));
    char copy[320], copy_wal[330], wal[320];
    snprintf(copy, sizeof copy, "%s/copy.db", dir);
    snprintf(copy_wal, sizeof copy_wal, "%s-wal", copy);
    snprintf(wal, sizeof wal, "%s-wal", db);
    copy_file(db, copy); /* while the writer holds the log */
    copy_file(wal, copy_wal);
    sqlite3_close(h);
    char before[EEB_SHA256_HEX], after[EEB_SHA256_HEX], err[256];
    cr_assert_eq(eeb_sha256_file(copy, before, err, sizeof err), EEB_OK, "%s", err);
    struct stat log_before, log_after;
    cr_assert_eq(stat(copy_wal, &log_before), 0);
    cr_assert_gt(log_before.st_size, 0, "the copy has no log to keep");
    struct test_run r = test_eeb((const char *[]){"check", copy, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    cr_assert_eq(eeb_sha256_file(copy, after, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_str_eq(after, before, "eeb check changed the file it checked");
    cr_expect(stat(copy_wal, &log_after) == 0 && log_after.st_size == log_before.st_size,
              "eeb check folded or removed the copy's log");
}

/* A run made on one machine passes its check on another: eeb check
 * recomputes from the record alone, and nothing it recomputes hangs on
 * the CPU.  The machines here are OpenBLAS's kernels for two CPUs (the
 * fp32 backend fine-tunes and predicts with OpenBLAS), and the file a
 * copy in another folder, without the model file beside it. */
Test(check_cli, a_run_made_on_one_machine_passes_its_check_on_another, .timeout = 120)
{
    inputs();
    cr_assert_eq(setenv("OPENBLAS_CORETYPE", "Prescott", 1), 0); /* SSE3 */
    struct test_run r = test_eeb(
        (const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test, "--model", model,
                         "--db", db, "--backend", "fp32", "--epochs", "2", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    test_run_free(&r);
    char elsewhere[300], copy[320];
    snprintf(elsewhere, sizeof elsewhere, "%s", test_tmpdir());
    snprintf(copy, sizeof copy, "%s/received.db", elsewhere);
    copy_file(db, copy);
    char away[320];
    snprintf(away, sizeof away, "%s/m.eebm", elsewhere);
    cr_assert_eq(rename(model, away), 0);                       /* not where the record says */
    cr_assert_eq(setenv("OPENBLAS_CORETYPE", "Haswell", 1), 0); /* AVX2 and FMA */
    json_t *o = test_eeb_json((const char *[]){"check", copy, "--json", NULL}, 0);
    cr_expect_str_eq(json_string_value(json_object_get(o, "verdict")), "pass");
    json_decref(o);
    /* and the modeled device, given the model file where it is now */
    r = test_eeb((const char *[]){"check", copy, "--model", away, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "recomputed from its design, model and batch: agree"), "%s", r.out);
    test_run_free(&r);
    unsetenv("OPENBLAS_CORETYPE");
}

/* A power log (eeb power log) may share the file with benchmark runs:
 * --all lists it without judging it, and --run on it says what it is. */
Test(check_cli, power_logs_are_listed_not_judged, .timeout = 120)
{
    inputs();
    struct test_run r = test_eeb((const char *[]){"power", "log", "--source", "sim:watts=3", "--db",
                                                  db, "--duration", "0.3", "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    cr_assert_eq(run_modeled("10"), 0);
    r = test_eeb((const char *[]){"check", db, "--all", NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    assert_has(r.out, "run 1 (");
    assert_has(r.out, "a power log, not judged");
    assert_has(r.out, "verdict: pass");
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, "--run", "1", NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    assert_has(r.err, "run 1 is a power log (eeb power log), not a benchmark run");
    test_run_free(&r);
}

/* A directory where a file goes says so; an output in a missing folder
 * names the folder, before the work that would have filled it. */
Test(check_cli, directories_and_missing_folders_are_named, .timeout = 60)
{
    inputs();
    const char *const *reads[] = {
        (const char *[]){"check", dir, NULL},
        (const char *[]){"db", "info", dir, NULL},
        (const char *[]){"report", dir, "-o", db, NULL},
        (const char *[]){"power", "summary", dir, NULL},
        (const char *[]){"data", "info", dir, NULL},
        (const char *[]){"model", "info", dir, NULL},
        (const char *[]){"score", "--task", "cls", "--util", dir, "--time", "1", "--tmax", "2",
                         "--energy", "1", "--pmax", "10", "--metric", "0.5", NULL},
        (const char *[]){"run", "--task", "cls", "--finetune", dir, "--test", test, "--model",
                         model, "--db", db, "-q", NULL},
    };
    char want[320];
    snprintf(want, sizeof want, "%s: is a directory", dir);
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        struct test_run r = test_eeb(reads[i]);
        cr_expect_eq(r.status, 1, "eeb %s: %s", reads[i][0], r.err);
        cr_expect(strstr(r.err, want), "eeb %s:\n%s", reads[i][0], r.err);
        test_run_free(&r);
    }
    /* outputs: a missing folder, found before the run starts */
    char missing[320];
    snprintf(missing, sizeof missing, "%s/no/r.html", dir);
    struct test_run r =
        test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", model, "--db", db, "--report", missing, "-q", NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    snprintf(want, sizeof want, "no folder '%s/no'", dir);
    cr_expect(strstr(r.err, want), "%s", r.err);
    cr_expect(!strstr(r.err, ".tmp-"), "names a temporary file: %s", r.err);
    test_run_free(&r);
    cr_expect_eq(access(db, F_OK), -1, "the run started before its report path was checked");
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", model, "--db", db, "--report", dir, "-q", NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    assert_has(r.err, "is a directory");
    test_run_free(&r);
    snprintf(missing, sizeof missing, "%s/no/m.eebm", dir);
    r = test_eeb(
        (const char *[]){"model", "pretrain", "--task", "cls", "--data", ft, "-o", missing, NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    cr_expect(strstr(r.err, want), "%s", r.err);
    cr_expect(!strstr(r.err, "pretraining"), "pretrained before checking -o: %s", r.err);
    test_run_free(&r);
}

/* --declared-power is the power of a run without a meter: with --power it
 * is a usage error, not a silently ignored option. */
Test(check_cli, declared_power_with_a_meter_is_a_usage_error)
{
    inputs();
    struct test_run r = test_eeb((const char *[]){
        "run", "--task", "cls", "--finetune", ft, "--test", test, "--model", model, "--db", db,
        "--power", "sim:watts=3", "--declared-power", "4", "-q", NULL});
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    assert_has(r.err, "--declared-power");
    assert_has(r.err, "give one of them");
    test_run_free(&r);
}

/* eeb check of db after the SQL edit: invalid, saying why. */
static void edited_check_says(const char *edit, const char *why)
{
    test_sql_exec(db, edit);
    struct test_run r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    assert_has(r.out, why);
    test_run_free(&r);
}

/* A run's provenance may say no more than its backend and its power source
 * allow: eeb's emulator is modeled whatever the meter; a replayed trace's
 * readings are declared.  An edit that claims more is invalid, named. */
Test(check_cli, a_provenance_claiming_more_than_the_record_allows_is_invalid, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM runs WHERE config ->> '$.provenance' = "
                                  "'modeled'"),
                 1);
    edited_check_says("UPDATE runs SET config = json_set(config, '$.provenance', 'measured', "
                      "'$.power.provenance', 'measured')",
                      "provenance: the record says measured, but backend emu runs on a CPU, not "
                      "a board: its figures are modeled");

    /* a team's SUT (eeb's emu as a library) on a replayed trace */
    char trace[300];
    snprintf(trace, sizeof trace, "%s/board.csv", dir);
    FILE *f = fopen(trace, "w");
    cr_assert(f);
    fputs("t_s,watts\n", f);
    for (int i = 0; i <= 600; i++)
        fprintf(f, "%.1f,4.5\n", i / 10.0);
    fclose(f);
    char power[320];
    snprintf(power, sizeof power, "replay:%s", trace);
    unlink(db);
    struct test_run r = test_eeb((const char *[]){"run",
                                                  "--task",
                                                  "cls",
                                                  "--finetune",
                                                  ft,
                                                  "--test",
                                                  test,
                                                  "--model",
                                                  model,
                                                  "--db",
                                                  db,
                                                  "--epochs",
                                                  "2",
                                                  "--backend",
                                                  EEB_SUT_OWN,
                                                  "--sut-config",
                                                  "backend=emu",
                                                  "--util",
                                                  "lut=0.2,ff=0.1,bram=0.3,dsp=0.1",
                                                  "--power",
                                                  power,
                                                  "-q",
                                                  NULL});
    cr_assert_lt(r.status, 5, "%s%s", r.out, r.err);
    assert_has(r.out, "provenance declared");
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect(!strstr(r.out, "provenance:"), "as recorded, the provenance holds: %s", r.out);
    test_run_free(&r);
    edited_check_says("UPDATE runs SET config = json_set(config, '$.provenance', 'measured', "
                      "'$.power.provenance', 'measured')",
                      "provenance: the record says measured, but its power source, replay:");
}

/* Each edit, made on the run as it was, makes eeb check say why it is
 * invalid. */
static void each_edit_says(const char *const (*edits)[2], size_t n)
{
    char copy[320], save[700], restore[700];
    snprintf(copy, sizeof copy, "%s.orig", db);
    snprintf(save, sizeof save, "cp %s %s", db, copy);
    snprintf(restore, sizeof restore, "cp %s %s", copy, db);
    cr_assert_eq(system(save), 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(system(restore), 0);
        edited_check_says(edits[i][0], edits[i][1]);
    }
}

/* Consistent-looking edits of a scored run that its record still betrays:
 * the fine-tune's end moved before its last step, a budget raised, the
 * score event's S changed.  Each is invalid, and says why. */
Test(check_cli, edits_out_of_the_records_order_or_budgets_are_invalid, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    static const char *const edits[][2] = {
        {"UPDATE events SET t_mono_ns = (SELECT t_mono_ns - 1 FROM events WHERE kind = "
         "'complete') WHERE kind = 'finetune_end'",
         "is out of the workflow's order"},
        {"UPDATE runs SET p_max_w = 100",
         "the run's budgets (T_max 30 s, P_max 100 W) are not its configuration's (30 s, 10 W)"},
        {"UPDATE events SET payload = json_set(payload, '$.verdict', 'pass', '$.S', 0.99) WHERE "
         "kind = 'score'",
         "its score event says pass, S = 0.990000, but the record gives S = "},
    };
    each_edit_says(edits, sizeof edits / sizeof *edits);
}

/* A run on the modeled clock is judged by its steps and its device model:
 * an edit of either, of the clock or of the provenance is caught. */
Test(check_cli, a_modeled_runs_steps_device_and_clock_are_checked, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    static const char *const edits[][2] = {
        {"UPDATE events SET payload = json_set(payload, '$.step', payload ->> '$.step' - 1) "
         "WHERE kind = 'complete'",
         "the stored T ("},
        {"UPDATE runs SET config = json_set(config, '$.device_model.train_w', 0.1)",
         "the stored E ("},
        {"UPDATE runs SET config = json_set(config, '$.budgets.clock', 'wall')", "the stored T ("},
        {"UPDATE runs SET config = json_set(config, '$.provenance', 'measured')",
         "its clock is the modeled device's, so its figures are modeled, not measured"},
        {"UPDATE events SET payload = json_set(payload, '$.step', 1e9) WHERE kind = 'complete'",
         "steps of "},
    };
    each_edit_says(edits, sizeof edits / sizeof *edits);
}

/* The truth is stored beside each prediction, so a record whose labels
 * were replaced recounts to itself.  Here every class is in each top 5 (4
 * classes), so M_s, S and the score event stay as they were: the file
 * alone passes it.  The test shard, named by the SHA-256 the run recorded,
 * finds it; another shard is refused by its hash. */
Test(check_cli, labels_replaced_by_predictions_are_found_by_the_test_shard, .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    struct test_run r = test_eeb((const char *[]){"check", db, "--test", test, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    assert_has(r.out, "32 predictions' truth agrees with");
    test_run_free(&r);
    test_sql_exec(db, "UPDATE predictions SET payload = json_set(payload, '$.label', "
                      "payload ->> '$.top[1]')");
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "the file alone passes it: %s%s", r.out, r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, "--test", test, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    assert_has(r.out, "against the test shard: its stored label is ");
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, "--test", ft, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    assert_has(r.out, "is not the test set the run read");
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, "--all", "--test", test, NULL});
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    test_run_free(&r);
}

/* The device line of eeb check's words: from "  device   " to its end. */
static const char *device_line(const char *out, char *buf, size_t n)
{
    const char *at = strstr(out, "\n  device   ");
    cr_assert(at, "no device line in:\n%s", out);
    snprintf(buf, n, "%.*s", (int)strcspn(at + 1, "\n"), at + 1);
    return buf;
}

/* A run on the modeled clock is timed by its configuration's step time
 * and power, which the analytical model gives from its design, model file,
 * batch and frozen layers: eeb check models the device again and requires
 * the recorded figures bit for bit.  An edit of them (the chain breaks too:
 * the device line and JSON say which figure), the model file moved away (a
 * note, not a fault of the run; --model finds it), and another model file
 * (its SHA-256 is not the run's). */
Test(check_cli, a_modeled_devices_figures_are_recomputed_from_its_design_model_and_batch,
     .timeout = 120)
{
    inputs();
    cr_assert_eq(run_modeled("10"), 0);
    char line[1024], model_sha[EEB_SHA256_HEX], err[256];
    cr_assert_eq(eeb_sha256_file(model, model_sha, err, sizeof err), EEB_OK, "%s", err);

    /* (a) recomputed and agreeing */
    struct test_run r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    device_line(r.out, line, sizeof line);
    assert_has(line, "device   modeled step ");
    assert_has(line, " recomputed from its design, model and batch: agree");
    test_run_free(&r);
    json_t *o = test_eeb_json((const char *[]){"check", db, "--json", NULL}, 0);
    json_t *dev = json_object_get(o, "device_model");
    cr_assert(json_is_object(dev), "no device_model");
    cr_expect(json_is_true(json_object_get(dev, "recomputed")));
    cr_expect(json_is_true(json_object_get(dev, "agree")));
    double step_s = test_json_num(dev, "train_step_s"), watts = test_json_num(dev, "train_w");
    cr_expect_gt(step_s, 0);
    cr_expect_gt(watts, 0);
    cr_expect_eq(step_s, test_json_num(dev, "stored_train_step_s"));
    cr_expect_eq(watts, test_json_num(dev, "stored_train_w"));
    cr_expect_str_eq(json_string_value(json_object_get(dev, "model")), model);
    cr_expect(json_is_null(json_object_get(dev, "note")));
    json_decref(o);

    /* (b) the step time halved in the configuration: T halves with it and
     * the chain breaks, and the device check says which figure, with both */
    char copy[320], cmd_line[1100];
    snprintf(copy, sizeof copy, "%s.orig", db);
    snprintf(cmd_line, sizeof cmd_line, "cp %s %s", db, copy);
    cr_assert_eq(system(cmd_line), 0);
    test_sql_exec(db, "UPDATE runs SET config = json_set(config, '$.device_model.train_step_s', "
                      "(config ->> '$.device_model.train_step_s') / 2)");
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    device_line(r.out, line, sizeof line);
    assert_has(line, "DISAGREE");
    /* both sides in full (--json's 15 digits are the CLI's, so compared
     * to 1e-12 here; the check itself compares bit for bit) */
    double rec_s, rec_w, got_s, got_w;
    cr_assert_eq(sscanf(line,
                        "  device   modeled step %lf s and %lf W recorded, %lf s and %lf W "
                        "recomputed from its design, model and batch",
                        &rec_s, &rec_w, &got_s, &got_w),
                 4, "%s", line);
    cr_expect_float_eq(got_s, step_s, step_s * 1e-12, "%s", line);
    cr_expect_float_eq(rec_s, step_s / 2, step_s * 1e-12, "%s", line);
    cr_expect_eq(rec_w, got_w, "%s", line);
    cr_expect_float_eq(got_w, watts, watts * 1e-12, "%s", line);
    /* the reason, after T's, E's and the chain's (which may fill the
     * verdict line: the batch edit below shows it whole) */
    char says[600];
    snprintf(says, sizeof says, "; its modeled step time is %.17g s", rec_s);
    assert_has(r.out, says);
    test_run_free(&r);
    o = test_eeb_json((const char *[]){"check", db, "--json", NULL}, 4);
    dev = json_object_get(o, "device_model");
    cr_expect(json_is_true(json_object_get(dev, "recomputed")));
    cr_expect(json_is_false(json_object_get(dev, "agree")));
    cr_expect_eq(test_json_num(dev, "train_step_s"), step_s);
    cr_expect_float_eq(test_json_num(dev, "stored_train_step_s"), step_s / 2, step_s * 1e-12);
    json_decref(o);
    snprintf(cmd_line, sizeof cmd_line, "cp %s %s", copy, db);
    cr_assert_eq(system(cmd_line), 0);

    /* the batch edited: T and E are the recorded step time's still, but
     * the design at this batch is another device */
    test_sql_exec(db, "UPDATE runs SET config = json_set(config, '$.training.batch', 16)");
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 4, "%s%s", r.out, r.err);
    assert_has(device_line(r.out, line, sizeof line), "DISAGREE");
    assert_has(r.out, "; its modeled step time");
    assert_has(r.out, ", but the analytical model gives ");
    assert_has(r.out, " for its design, model and batch\n");
    test_run_free(&r);
    cr_assert_eq(system(cmd_line), 0);

    /* (c) the model file moved away: a note, and the run still passes;
     * --model with the moved file recomputes */
    char moved[320];
    snprintf(moved, sizeof moved, "%s/moved.eebm", dir);
    cr_assert_eq(rename(model, moved), 0);
    r = test_eeb((const char *[]){"check", db, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    snprintf(says, sizeof says,
             "  device   modeled figures not recomputed: the model file %s is not here (eeb "
             "check --model FILE)",
             model);
    cr_expect_str_eq(device_line(r.out, line, sizeof line), says);
    test_run_free(&r);
    o = test_eeb_json((const char *[]){"check", db, "--json", NULL}, 0);
    dev = json_object_get(o, "device_model");
    cr_expect(json_is_false(json_object_get(dev, "recomputed")));
    cr_expect(json_is_null(json_object_get(dev, "train_step_s")));
    assert_has(json_string_value(json_object_get(dev, "note")), "is not here");
    json_decref(o);
    r = test_eeb((const char *[]){"check", db, "--model", moved, NULL});
    cr_expect_eq(r.status, 0, "%s%s", r.out, r.err);
    assert_has(device_line(r.out, line, sizeof line), ": agree");
    test_run_free(&r);

    /* (d) another model file: its SHA-256 is not the run's, an error naming
     * both; --model is one run's */
    char other[320], other_sha[EEB_SHA256_HEX];
    snprintf(other, sizeof other, "%s/other.eebm", dir);
    snprintf(cmd_line, sizeof cmd_line, "cp %s %s && printf x >> %s", moved, other, other);
    cr_assert_eq(system(cmd_line), 0);
    cr_assert_eq(eeb_sha256_file(other, other_sha, err, sizeof err), EEB_OK, "%s", err);
    r = test_eeb((const char *[]){"check", db, "--model", other, NULL});
    cr_expect_eq(r.status, 1, "%s%s", r.out, r.err);
    assert_has(r.err, other);
    snprintf(says, sizeof says, "its SHA-256 is %s", other_sha);
    assert_has(r.err, says);
    snprintf(says, sizeof says, "model file whose SHA-256 is %s", model_sha);
    assert_has(r.err, says);
    test_run_free(&r);
    r = test_eeb((const char *[]){"check", db, "--all", "--model", moved, NULL});
    cr_expect_eq(r.status, 2, "%s%s", r.out, r.err);
    test_run_free(&r);
}
