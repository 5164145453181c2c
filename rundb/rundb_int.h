/*
 * rundb_int.h - shared inside rundb/: the handle, statements and
 * transactions (rundb.c), and the chain every record is linked into
 * (chain.c).
 */
#ifndef RUNDB_INT_H
#define RUNDB_INT_H

#include "eeb_rundb.h"

#include <sqlite3.h>

struct eeb_rundb {
    sqlite3 *h;
    char *path;
    sqlite3_stmt *insert_sample; /* the hot path: prepared once */
};

/* An SQLite failure as an error naming the file and what was being done. */
int rundb_error(struct eeb_rundb *db, const char *what, char *err, size_t errlen);
/* Prepares sql, or reports which statement failed. */
int rundb_prepare(struct eeb_rundb *db, const char *sql, sqlite3_stmt **st, char *err,
                  size_t errlen);
/* Steps a bound write statement once and finalizes it. */
int rundb_step_done(struct eeb_rundb *db, sqlite3_stmt *st, const char *what, char *err,
                    size_t errlen);
/* Commits the caller's transaction if rc is EEB_OK, else rolls it back. */
int rundb_end_batch(struct eeb_rundb *db, int rc, const char *what, char *err, size_t errlen);

/* Inserts, inside the caller's transaction, without a link: the event's
 * id into *row, the first sample's rowid into *first. */
int rundb_insert_event(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_event *e,
                       int64_t *row, char *err, size_t errlen);
int rundb_insert_samples(struct eeb_rundb *db, int64_t run, const char *source,
                         const struct eeb_sample *s, size_t n, int64_t *first, char *err,
                         size_t errlen);

/*
 * The chain (chain.c), inside the caller's transaction: a run's origin,
 * link 0, when it is created; then one link per event and per batch of
 * samples, each committing to the link before it, with the row its
 * records begin at (where a walk from that link starts).  A run without
 * an origin (made before the chain) gets no links.
 */
int rundb_chain_origin(struct eeb_rundb *db, int64_t run, const char *uuid, const char *config,
                       char *err, size_t errlen);
int rundb_chain_event(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_event *e,
                      int64_t row, char *err, size_t errlen);
int rundb_chain_samples(struct eeb_rundb *db, int64_t run, const char *source,
                        const struct eeb_sample *s, size_t n, int64_t first, char *err,
                        size_t errlen);

#endif
