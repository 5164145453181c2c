/*
 * test_rundb.c - the run database: creation, round trips, constraints, and
 * refusal of foreign and newer files (which must be left untouched).
 */
#include "rundb/eeb_rundb.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path[256];

static void setup(void)
{
    snprintf(path, sizeof path, "%s/run.db", test_tmpdir());
}

TestSuite(rundb, .init = setup);

static struct eeb_rundb *open_rw(void)
{
    struct eeb_rundb *db;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s",
                 err);
    return db;
}

static int64_t new_run(struct eeb_rundb *db, char uuid[37])
{
    const struct eeb_run_new run = {
        .task = EEB_TASK_DET,
        .backend = "emu",
        .config_json = "{\"batch\": 32}",
        .t_max_s = 600,
        .p_max_w = 10,
        .rules_version = "1",
    };
    int64_t id;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_run_create(db, &run, &id, uuid, err, sizeof err), EEB_OK, "%s", err);
    return id;
}

static long long sql_int(const char *sql)
{
    return test_sql_int(path, sql);
}

Test(rundb, creates_schema_from_nothing)
{
    eeb_rundb_close(open_rw());
    cr_assert_eq(sql_int("PRAGMA user_version"), EEB_RUNDB_SCHEMA);
    cr_assert_eq(sql_int("PRAGMA application_id"), EEB_RUNDB_APPLICATION_ID);
    /* runs, events, samples, predictions, results, links */
    cr_assert_eq(sql_int("SELECT count(*) FROM sqlite_schema WHERE type = 'table'"), 6);
    sqlite3 *h;
    sqlite3_open(path, &h);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    cr_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_close(h);
}

Test(rundb, migrates_an_empty_file_and_an_empty_database)
{
    test_write_file(path, "", 0);
    eeb_rundb_close(open_rw());
    cr_assert_eq(sql_int("PRAGMA user_version"), EEB_RUNDB_SCHEMA);

    remove(path);
    test_sql_exec(path, "PRAGMA user_version = 0"); /* a valid, empty SQLite file */
    eeb_rundb_close(open_rw());
    cr_assert_eq(sql_int("PRAGMA user_version"), EEB_RUNDB_SCHEMA);
}

Test(rundb, reopening_keeps_data)
{
    char uuid[37];
    struct eeb_rundb *db = open_rw();
    int64_t id = new_run(db, uuid);
    eeb_rundb_close(db);
    db = open_rw();
    struct eeb_rundb_info info;
    cr_assert_eq(eeb_rundb_info(db, &info, NULL, 0), EEB_OK);
    cr_assert_eq(info.runs, 1);
    cr_assert_eq(info.runs_by_state[EEB_RUN_INIT], 1);
    eeb_rundb_close(db);
    cr_assert_eq(id, 1);
    cr_assert_eq(strlen(uuid), 36);
    cr_assert_eq(uuid[14], '4'); /* version 4 */
}

struct collected {
    size_t n;
    struct eeb_sample s[8];
    char source[8][16];
};

static int collect(void *arg, const char *source, const struct eeb_sample *s)
{
    struct collected *c = arg;
    cr_assert_lt(c->n, 8);
    snprintf(c->source[c->n], sizeof c->source[0], "%s", source);
    c->s[c->n++] = *s;
    return 0;
}

Test(rundb, samples_round_trip_in_time_order)
{
    char uuid[37], err[512] = "";
    struct eeb_rundb *db = open_rw();
    int64_t run = new_run(db, uuid);
    const struct eeb_sample meter[] = {
        {3000, 1003000, 12.0, 0.5, 6.0, 0},
        {1000, 1001000, 12.1, 0.4, 4.84, 1},
    };
    const struct eeb_sample rail[] = {{2000, 1002000, NAN, NAN, 2.5, 0}};
    cr_assert_eq(eeb_rundb_samples_add(db, run, "hwmon:ina226", meter, 2, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert_eq(eeb_rundb_samples_add(db, run, "rapl:", rail, 1, err, sizeof err), EEB_OK);

    struct collected c = {0};
    cr_assert_eq(eeb_rundb_samples_each(db, run, 0, INT64_MAX, collect, &c, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(c.n, 3);
    cr_assert_eq(c.s[0].t_mono_ns, 1000);
    cr_assert_float_eq(c.s[0].watts, 4.84, 0);
    cr_assert_eq(c.s[0].flags, 1);
    cr_assert_str_eq(c.source[1], "rapl:");
    cr_assert(isnan(c.s[1].volts) && isnan(c.s[1].amps));
    cr_assert_float_eq(c.s[2].volts, 12.0, 0);
    cr_assert_eq(c.s[2].t_utc_ns, 1003000);

    c.n = 0; /* the window is [t0, t1) */
    cr_assert_eq(eeb_rundb_samples_each(db, run, 1000, 3000, collect, &c, err, sizeof err), EEB_OK);
    cr_assert_eq(c.n, 2);
    eeb_rundb_close(db);
}

Test(rundb, rejected_batch_is_rolled_back_whole)
{
    char uuid[37], err[512] = "";
    struct eeb_rundb *db = open_rw();
    int64_t run = new_run(db, uuid);
    const struct eeb_sample s[] = {{1, 1, NAN, NAN, 1.0, 0}, {2, 2, NAN, NAN, INFINITY, 0}};
    cr_assert_eq(eeb_rundb_samples_add(db, run, "sim:", s, 2, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, "sample 1"), "%s", err);
    struct eeb_rundb_info info;
    eeb_rundb_info(db, &info, NULL, 0);
    cr_assert_eq(info.samples, 0);
    eeb_rundb_close(db);
}

Test(rundb, foreign_keys_are_enforced)
{
    char err[512] = "";
    struct eeb_rundb *db = open_rw();
    cr_assert_eq(eeb_rundb_event_add(db, 42, 1, 1, "stage_begin", NULL, err, sizeof err), EEB_EDB);
    cr_assert_not_null(strstr(err, "FOREIGN KEY"), "%s", err);
    const struct eeb_sample s = {1, 1, NAN, NAN, 1.0, 0};
    cr_assert_eq(eeb_rundb_samples_add(db, 42, "sim:", &s, 1, err, sizeof err), EEB_EDB);
    eeb_rundb_close(db);
}

struct seen {
    int n;
    int64_t items[4];
    char payloads[4][32];
};

static int collect_prediction(void *arg, int64_t item, const char *payload)
{
    struct seen *s = arg;
    if (s->n == 4)
        return 1;
    s->items[s->n] = item;
    snprintf(s->payloads[s->n++], sizeof s->payloads[0], "%s", payload);
    return 0;
}

Test(rundb, events_predictions_results_and_state)
{
    char uuid[37], err[512] = "";
    struct eeb_rundb *db = open_rw();
    int64_t run = new_run(db, uuid);
    cr_assert_eq(eeb_rundb_event_add(db, run, 10, 20, "stage_begin", "{\"stage\": \"finetune\"}",
                                     err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(eeb_rundb_event_add(db, run, 10, 20, "x", "{not json", err, sizeof err), EEB_EDB);
    int64_t items[] = {7, 3, 7};
    const char *preds[] = {"[3, 1, 4, 1, 5]", "[9]", "[2, 7, 1, 8, 2]"};
    cr_assert_eq(eeb_rundb_predictions_add(db, run, items, preds, 3, err, sizeof err), EEB_OK, "%s",
                 err);
    const char *bad[] = {"[1]", "{not json"};
    cr_assert_eq(eeb_rundb_predictions_add(db, run, items + 1, bad, 2, err, sizeof err), EEB_EDB);
    struct seen seen = {0};
    cr_assert_eq(eeb_rundb_predictions_each(db, run, collect_prediction, &seen, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(seen.n, 2); /* 3 then 7, the later 7 replacing the first; the bad batch undone */
    cr_assert_eq(seen.items[0], 3);
    cr_assert_str_eq(seen.payloads[0], "[9]");
    cr_assert_eq(seen.items[1], 7);
    cr_assert_str_eq(seen.payloads[1], "[2, 7, 1, 8, 2]");
    cr_assert_eq(eeb_rundb_result_set(db, run, "energy_j", 2700, "J", "measured", err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(eeb_rundb_result_set(db, run, "S", 0.5, "1", "guessed", err, sizeof err), EEB_EDB);
    cr_assert_eq(eeb_rundb_result_set(db, run, "S", NAN, "1", "computed", err, sizeof err),
                 EEB_EINVAL);
    cr_assert_eq(eeb_rundb_run_set_state(db, run, EEB_RUN_FINETUNE, err, sizeof err), EEB_OK);
    cr_assert_eq(eeb_rundb_run_set_state(db, run + 1, EEB_RUN_DONE, err, sizeof err), EEB_EINVAL);
    cr_assert_not_null(strstr(err, "no run 2"), "%s", err);
    cr_assert_eq(eeb_rundb_run_set_state(db, run, EEB_RUN_DONE, err, sizeof err), EEB_OK);
    eeb_rundb_close(db);

    cr_assert_eq(sql_int("SELECT count(*) FROM predictions"), 2);
    cr_assert_eq(sql_int("SELECT count(*) FROM events"), 1);
    cr_assert_eq(sql_int("SELECT count(*) FROM runs WHERE state = 'done' AND "
                         "finished_utc_ns >= created_utc_ns"),
                 1);
}

/* Opens path expecting failure with status; the file must be unchanged. */
static void expect_refused(int status, const char *needle)
{
    size_t before_len, after_len;
    char *before = test_read_file(path, &before_len);
    struct eeb_rundb *db = NULL;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err), status, "%s",
                 err);
    cr_assert_null(db);
    cr_assert_not_null(strstr(err, needle), "'%s' does not contain '%s'", err, needle);
    cr_assert_not_null(strstr(err, path), "'%s' does not name the file", err);
    char *after = test_read_file(path, &after_len);
    cr_assert_eq(after_len, before_len);
    cr_assert_eq(memcmp(before, after, before_len), 0, "the refused file was modified");
    free(before);
    free(after);
}

Test(rundb, refuses_a_text_file)
{
    const char text[] = "time,watts\n0,4.5\n1,4.6\n";
    test_write_file(path, text, sizeof text - 1);
    expect_refused(EEB_EFORMAT, "not an SQLite database");
}

Test(rundb, refuses_another_applications_database)
{
    test_sql_exec(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT);"
                        "INSERT INTO photos (name) VALUES ('a.jpg')");
    expect_refused(EEB_EFORMAT, "not an eeb run database");
}

Test(rundb, refuses_a_newer_schema)
{
    eeb_rundb_close(open_rw());
    test_sql_exec(path, "PRAGMA user_version = 99");
    expect_refused(EEB_EVERSION, "schema v99 was written by a newer eeb");
}

Test(rundb, readonly_does_not_create)
{
    struct eeb_rundb *db;
    char err[512];
    cr_assert_neq(eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, sizeof err), EEB_OK);
    cr_assert_null(test_read_file(path, NULL), "read-only open created %s", path);
}

/* tests/data/rundb/v1.db was written by eeb 0.1 (schema v1): a det run with
 * two events, three samples and a result.  Opening it read-write migrates
 * it to the current schema in place, every row kept and still tied to its run; then a
 * standalone power log (task none, no budgets) fits, as v1 would refuse. */
Test(rundb, migrates_a_v1_file_keeping_every_row)
{
    size_t len;
    char *v1 = test_fixture("rundb/v1.db", &len);
    test_write_file(path, v1, len);
    free(v1);
    struct eeb_rundb *db;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, sizeof err), EEB_EVERSION);
    cr_assert(strstr(err, "schema v1 needs migrating to v5"), "%s", err);
    db = open_rw();
    eeb_rundb_close(db);
    cr_assert_eq(sql_int("PRAGMA user_version"), EEB_RUNDB_SCHEMA);
    cr_assert_eq(sql_int("SELECT count(*) FROM runs WHERE task = 'det' AND p_max_w = 10 AND "
                         "uuid = '0a6f6c8e-9d6e-4c2b-8a51-3f1f7d2c9b10'"),
                 1);
    cr_assert_eq(sql_int("SELECT count(*) FROM events WHERE run_id = 1"), 2);
    cr_assert_eq(sql_int("SELECT count(*) FROM samples WHERE run_id = 1 AND watts > 0"), 3);
    cr_assert_eq(sql_int("SELECT count(*) FROM results WHERE run_id = 1"), 1);
    cr_assert_eq(sql_int("SELECT count(*) FROM pragma_foreign_key_check"), 0);
    cr_assert_eq(sql_int("SELECT count(*) FROM sqlite_schema WHERE name = 'runs_v2'"), 0);
    cr_assert_eq(sql_int("SELECT count(*) FROM sqlite_schema WHERE name = 'results_v4'"), 0);
    /* v4: a declared figure fits */
    test_sql_exec(path, "INSERT INTO results VALUES (1, 'energy_j', 2.5, 'J', 'declared')");

    /* the children still follow their run: deleting it cascades */
    db = open_rw();
    struct eeb_run_new log = {
        .power_log = 1, .backend = "none", .t_max_s = NAN, .p_max_w = NAN, .rules_version = "1"};
    int64_t id;
    char uuid[37];
    cr_assert_eq(eeb_rundb_run_create(db, &log, &id, uuid, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(id, 2);
    eeb_rundb_close(db);
    cr_assert_eq(sql_int("SELECT count(*) FROM runs WHERE task = 'none' AND p_max_w IS NULL"), 1);
    test_sql_exec(path, "PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 1");
    cr_assert_eq(sql_int("SELECT count(*) FROM samples"), 0);
    cr_assert_eq(sql_int("SELECT count(*) FROM events"), 0);
}

Test(rundb, a_benchmark_run_still_needs_its_budgets)
{
    struct eeb_rundb *db = open_rw();
    struct eeb_run_new run = {.task = EEB_TASK_CLS,
                              .backend = "emu",
                              .t_max_s = 600,
                              .p_max_w = NAN,
                              .rules_version = "1"};
    int64_t id;
    char uuid[37], err[512] = "";
    cr_assert_eq(eeb_rundb_run_create(db, &run, &id, uuid, err, sizeof err), EEB_EDB);
    cr_assert(strstr(err, "CHECK constraint failed"), "%s", err);
    eeb_rundb_close(db);
}
