/*
 * eeb_rundb_tables.h - tables another room keeps in a run database beside
 * the runs (the evaluation server's teams and entries), with their own
 * migrations.
 *
 * A file has one schema owner: rundb.c decides, at open and in one
 * transaction, which version each set of tables a file holds and applies
 * the migrations each set is missing, the run tables' first.  The run
 * tables' version is the file's PRAGMA user_version (what `eeb db info`
 * shows); another set's is its row in the table schema_sets, made with the
 * first such set, so a file without one is exactly the run database it was.
 * A set newer than the code opening it is refused, the file left untouched;
 * a reader that names no set ignores the set's tables.
 *
 * Sections: a set of tables; opening a file with one; its connection.
 */
#ifndef EEB_RUNDB_TABLES_H
#define EEB_RUNDB_TABLES_H

#include "rundb/eeb_rundb.h"

/* ---- a set of tables ---- */

/* migrations[v] takes the set from version v to v + 1, so version is how
 * many there are.  Append one to change the set; never edit one released.
 * Foreign keys are off while they run, as for the run tables'. */
struct eeb_rundb_tables {
    const char *name;              /* its row in schema_sets: "server" */
    int version;                   /* the version this eeb writes */
    const char *const *migrations; /* version of them */
};

/* ---- opening ---- */

/* eeb_rundb_open, and in READWRITE mode tables created or migrated to
 * tables->version with the run tables; READONLY needs them current.  A
 * newer set is EEB_EVERSION naming the file and the set.  tables may be
 * NULL: eeb_rundb_open. */
int eeb_rundb_open_with(const char *path, enum eeb_rundb_mode mode,
                        const struct eeb_rundb_tables *tables, struct eeb_rundb **out, char *err,
                        size_t errlen);

/* ---- the connection ---- */

/* The SQLite connection of db, for the owner of a set to read and write
 * its own tables with prepared statements; it stays db's (closed by
 * eeb_rundb_close).  The run tables are written through eeb_rundb.h. */
struct sqlite3 *eeb_rundb_sqlite(struct eeb_rundb *db);

#endif
