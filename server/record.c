/*
 * record.c - GET /api/v1/runs/{id}/record: the server's record of a run
 * it scored, handed back to the team that ran it: its copy of the run's
 * chain (the team's links as received, then the facts the server judged
 * with and its score event), its results, and in director mode its
 * meter's log.  A run database of its own holding those runs alone, made
 * for the answer and removed after it, so that the team's database can
 * take it in (eeb_rundb_run_copy) and `eeb check` there gives the
 * server's verdict and S from the server's meter.
 */
#include "server_int.h"

#include "rundb/eeb_rundb.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The run (and its meter run) of the store copied into the file at path. */
static int write_record(const char *store, const struct eeb_srv_run *r, const char *path, char *err,
                        size_t errlen)
{
    struct eeb_rundb *from = NULL, *to = NULL;
    int64_t copy, meter;
    int rc = eeb_rundb_open(store, EEB_RUNDB_READONLY, &from, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_open(path, EEB_RUNDB_READWRITE, &to, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_record_copy(from, r->id, r->meter_run, to, &copy, &meter, err, errlen);
    eeb_rundb_close(to);
    eeb_rundb_close(from);
    return rc;
}

enum MHD_Result eeb_srv_api_record(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    if (!eeb_srv_in_state(k, "scored", NULL, &sent))
        return sent;
    /* beside the store: the server's own folder, private as the store is */
    const char *store = eeb_srv_store_path(k->s->store);
    char path[PATH_MAX], err[512];
    const char *slash = strrchr(store, '/');
    int dir = slash ? (int)(slash - store) : 0;
    if (snprintf(path, sizeof path, "%.*s%sreturned-record-XXXXXX", dir, store, slash ? "/" : "") >=
        (int)sizeof path)
        return eeb_srv_call_fail(k, 500, NULL,
                                 "the store's path is too long for a record beside it");
    int fd = mkstemp(path);
    if (fd < 0)
        return eeb_srv_call_fail(k, 500, NULL, "no file could be made for the record");
    close(fd);
    int rc = write_record(store, &k->run, path, err, sizeof err);
    sent = rc ? eeb_srv_call_fail(k, 500, NULL, err)
              : eeb_srv_call_file(k, "application/vnd.sqlite3", path);
    unlink(path); /* the answer holds it open */
    return sent;
}
