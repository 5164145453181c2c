/*
 * test_rundb_tables.c - a set of tables another room keeps in a run
 * database (rundb/eeb_rundb_tables.h): created with the run tables, its
 * version recorded in schema_sets, migrated in order and once, a newer one
 * refused with the file untouched, a failed or reference-breaking
 * migration rolled back whole, and files without a set left as they were.
 */
#include "rundb/eeb_rundb.h"
#include "rundb/eeb_rundb_tables.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char path[256];

static void setup(void)
{
    snprintf(path, sizeof path, "%s/tables.db", test_tmpdir());
}

TestSuite(rundb_tables, .init = setup);

/* A room's notes on runs: v1 makes the table (without IF NOT EXISTS, so a
 * second run of it fails), v2 adds a column and fills it. */
#define NOTES_V1                                                                                   \
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), "             \
    "text TEXT NOT NULL)"
static const char *const notes_migrations[] = {
    NOTES_V1,
    "ALTER TABLE notes ADD COLUMN tag TEXT NOT NULL DEFAULT 'none';"
    "UPDATE notes SET tag = 'old'",
};
static const struct eeb_rundb_tables notes_v1 = {
    .name = "notes", .version = 1, .migrations = notes_migrations};
static const struct eeb_rundb_tables notes_v2 = {
    .name = "notes", .version = 2, .migrations = notes_migrations};

static struct eeb_rundb *open_with(enum eeb_rundb_mode mode, const struct eeb_rundb_tables *t)
{
    struct eeb_rundb *db = NULL;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open_with(path, mode, t, &db, err, sizeof err), EEB_OK, "%s", err);
    return db;
}

/* Opening with t fails with status and a message holding needle. */
static void expect_open_fails(enum eeb_rundb_mode mode, const struct eeb_rundb_tables *t,
                              int status, const char *needle)
{
    struct eeb_rundb *db = NULL;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open_with(path, mode, t, &db, err, sizeof err), status, "%s", err);
    cr_assert_null(db);
    cr_assert(strstr(err, needle), "'%s' lacks '%s'", err, needle);
    cr_assert(strstr(err, path), "'%s' does not name the file", err);
}

static int64_t new_run(struct eeb_rundb *db)
{
    const struct eeb_run_new run = {
        .task = EEB_TASK_CLS, .backend = "emu", .t_max_s = 60, .p_max_w = 10, .rules_version = "1"};
    int64_t id;
    char uuid[37], err[512] = "";
    cr_assert_eq(eeb_rundb_run_create(db, &run, &id, uuid, err, sizeof err), EEB_OK, "%s", err);
    return id;
}

Test(rundb_tables, a_set_is_made_with_the_run_tables_and_its_version_kept_apart)
{
    struct eeb_rundb *db = open_with(EEB_RUNDB_READWRITE, &notes_v1);
    int64_t run = new_run(db);
    /* the owner writes its tables on the run database's own connection */
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(eeb_rundb_sqlite(db),
                                    "INSERT INTO notes (run_id, text) VALUES (?, 'fine')", -1, &st,
                                    NULL),
                 SQLITE_OK);
    sqlite3_bind_int64(st, 1, run);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    eeb_rundb_close(db);
    /* the run tables' version stays the header's; the set's is its row */
    cr_assert_eq(test_sql_int(path, "PRAGMA user_version"), EEB_RUNDB_SCHEMA);
    cr_assert_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'notes'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM schema_sets"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM notes WHERE run_id = 1"), 1);
    /* opened again, its migration is not run again (it would fail) */
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v1));
    eeb_rundb_close(open_with(EEB_RUNDB_READONLY, &notes_v1));
    /* a reader that names no set reads the run tables as ever */
    db = open_with(EEB_RUNDB_READONLY, NULL);
    struct eeb_rundb_info info;
    cr_assert_eq(eeb_rundb_info(db, &info, NULL, 0), EEB_OK);
    cr_assert_eq(info.runs, 1);
    cr_assert_eq(info.schema, EEB_RUNDB_SCHEMA);
    eeb_rundb_close(db);
}

Test(rundb_tables, a_file_opened_without_a_set_gains_no_table)
{
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, NULL));
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = "
                                    "'schema_sets'"),
                 0);
    /* and a run database made so takes a set later, its runs kept */
    struct eeb_rundb *db = open_with(EEB_RUNDB_READWRITE, NULL);
    new_run(db);
    eeb_rundb_close(db);
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v1));
    cr_assert_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'notes'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs"), 1);
}

Test(rundb_tables, a_set_is_migrated_in_order_keeping_its_rows)
{
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v1));
    test_sql_exec(path, "INSERT INTO notes (text) VALUES ('kept')");
    /* read-only, an older set is refused: migrating is a write */
    expect_open_fails(EEB_RUNDB_READONLY, &notes_v2, EEB_EVERSION,
                      "notes tables schema v1 needs migrating to v2");
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v2));
    cr_assert_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'notes'"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM notes WHERE text = 'kept' AND "
                                    "tag = 'old'"),
                 1);
    /* from nothing, both steps in one open */
    remove(path);
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v2));
    cr_assert_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'notes'"), 2);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM pragma_table_info('notes') WHERE "
                                    "name = 'tag'"),
                 1);
}

Test(rundb_tables, a_newer_set_is_refused_and_the_file_left_untouched)
{
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v2));
    size_t before_len, after_len;
    char *before = test_read_file(path, &before_len);
    expect_open_fails(EEB_RUNDB_READWRITE, &notes_v1, EEB_EVERSION,
                      "notes tables schema v2 was written by a newer eeb (this eeb reads up to "
                      "v1); left untouched");
    expect_open_fails(EEB_RUNDB_READONLY, &notes_v1, EEB_EVERSION, "written by a newer eeb");
    char *after = test_read_file(path, &after_len);
    cr_assert_eq(after_len, before_len);
    cr_assert_eq(memcmp(before, after, before_len), 0, "the refused file was modified");
    free(before), free(after);
    /* the run tables are still anyone's to read */
    eeb_rundb_close(open_with(EEB_RUNDB_READONLY, NULL));
}

Test(rundb_tables, a_failed_migration_leaves_the_file_as_it_was)
{
    static const char *const broken[] = {
        NOTES_V1,
        "ALTER TABLE notes ADD COLUMN tag TEXT; CREATE TABLE half (",
    };
    const struct eeb_rundb_tables broken_v2 = {.name = "notes", .version = 2, .migrations = broken};
    eeb_rundb_close(open_with(EEB_RUNDB_READWRITE, &notes_v1));
    expect_open_fails(EEB_RUNDB_READWRITE, &broken_v2, EEB_EDB,
                      "migration of the notes tables to v2");
    cr_assert_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'notes'"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM pragma_table_info('notes') WHERE "
                                    "name = 'tag'"),
                 0, "the first statement of the failed migration was kept");
    /* a new file: the run tables made in the same transaction go too */
    remove(path);
    const struct eeb_rundb_tables broken_v1 = {
        .name = "notes", .version = 1, .migrations = broken + 1};
    expect_open_fails(EEB_RUNDB_READWRITE, &broken_v1, EEB_EDB,
                      "migration of the notes tables to v1");
    cr_assert_eq(test_sql_int(path, "PRAGMA user_version"), 0);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_schema"), 0);
}

Test(rundb_tables, a_migration_that_orphans_rows_is_rolled_back)
{
    static const char *const orphaning[] = {"DELETE FROM runs"};
    const struct eeb_rundb_tables cleanup = {
        .name = "cleanup", .version = 1, .migrations = orphaning};
    struct eeb_rundb *db = open_with(EEB_RUNDB_READWRITE, NULL);
    int64_t run = new_run(db);
    char err[512] = "";
    cr_assert_eq(eeb_rundb_event_add(db, run, 1, 2, EEB_EVENT_STATE, NULL, err, sizeof err), EEB_OK,
                 "%s", err);
    eeb_rundb_close(db);
    /* the event, and the run's two links: its origin and the event's */
    expect_open_fails(EEB_RUNDB_READWRITE, &cleanup, EEB_EDB,
                      "migrating its cleanup tables from v0 left 3 rows without the row they "
                      "refer to; the file is left as it was");
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM runs"), 1);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = "
                                    "'schema_sets'"),
                 0);
}

Test(rundb_tables, a_foreign_file_is_refused_before_any_set_is_made)
{
    test_sql_exec(path, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)");
    size_t before_len, after_len;
    char *before = test_read_file(path, &before_len);
    expect_open_fails(EEB_RUNDB_READWRITE, &notes_v1, EEB_EFORMAT, "not an eeb run database");
    char *after = test_read_file(path, &after_len);
    cr_assert_eq(after_len, before_len);
    cr_assert_eq(memcmp(before, after, before_len), 0, "the refused file was modified");
    free(before), free(after);
}
