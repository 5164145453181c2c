/*
 * client_record.c - how a run ends with the server: abandoned (POST
 * /abandon), or scored and its record taken back into the team's database
 * (GET /api/v1/runs/{id}/record): the server's copy of the run's chain with
 * the facts it judged with and its verdict, and in director mode its
 * meter's log.  Taken in link by link (a record that does not chain is
 * refused) beside the team's own run, so that `eeb check` on the team's
 * database gives the server's verdict and S from the server's meter, and
 * `eeb pack` carries the meter's log.
 */
#include "eeb_client.h"

#include "rundb/eeb_rundb.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The runs of the file at path taken into db: its meter run first, then
 * the run copy, its configuration naming the meter run by its id in db. */
static int take_in(const char *path, struct eeb_rundb *db, int64_t *copy, int64_t *meter, char *err,
                   size_t errlen)
{
    struct eeb_rundb *from;
    int64_t *ids = NULL, run = 0, theirs = 0;
    size_t n = 0;
    int rc = eeb_rundb_open(path, EEB_RUNDB_READONLY, &from, err, errlen);
    if (rc)
        return rc;
    if ((rc = eeb_rundb_run_ids(from, &ids, &n, err, errlen)) == EEB_OK && (n < 1 || n > 2))
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "the server's record holds %zu runs: a run and its meter's log at most", n);
    struct eeb_run_row row = {0};
    for (size_t i = 0; rc == EEB_OK && i < n; i++) {
        if ((rc = eeb_rundb_run_get(from, ids[i], &row, err, errlen)))
            break;
        *(strcmp(row.task, "none") == 0 ? &theirs : &run) = ids[i];
        eeb_rundb_run_row_free(&row);
    }
    if (rc == EEB_OK && !run)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "the server's record holds no run");
    if (rc == EEB_OK)
        rc = eeb_rundb_record_copy(from, run, theirs, db, copy, meter, err, errlen);
    free(ids);
    eeb_rundb_close(from);
    return rc;
}

/* The chains taken in (copy, and meter if not 0) end in the heads the
 * server states for its run (GET /api/v1/runs/{id}): the record is the
 * one the server holds, not another it was handed. */
static int heads_agree(struct eeb_client *c, int64_t server_run, struct eeb_rundb *db, int64_t copy,
                       int64_t meter, char *err, size_t errlen)
{
    char route[96];
    json_t *reply = NULL;
    snprintf(route, sizeof route, "/api/v1/runs/%lld", (long long)server_run);
    int rc = eeb_client_call(c, "GET", route, NULL, &reply, err, errlen);
    const struct {
        int64_t run;
        const char *key;
    } chains[] = {{copy, "chain_head"}, {meter, "meter_chain_head"}};
    for (size_t i = 0; rc == EEB_OK && i < 2 && chains[i].run; i++) {
        struct eeb_chain_check chain;
        const char *said = json_string_value(json_object_get(reply, chains[i].key));
        if ((rc = eeb_rundb_chain_check(db, chains[i].run, &chain, err, errlen)) == EEB_OK &&
            (chain.broken || !said || strcmp(said, chain.head)))
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "the server's record of run %lld ends in head %.16s..., the server "
                          "says %.16s...%s%s",
                          (long long)server_run, chain.head, said ? said : "(none)",
                          chain.broken ? ": " : "", chain.broken ? chain.why : "");
    }
    json_decref(reply);
    return rc;
}

int eeb_client_take_record(struct eeb_client *c, int64_t server_run, struct eeb_rundb *db,
                           const char *uuid, int64_t run, int64_t *copy, char *err, size_t errlen)
{
    char path[PATH_MAX], route[96];
    int64_t meter = 0, of = 0;
    int rc = eeb_rundb_copy_of(db, uuid, run, copy, err, errlen);
    if (rc || *copy) /* taken back before (a submission resumed) */
        return rc;
    if (snprintf(path, sizeof path, "%s.record-XXXXXX", eeb_rundb_path(db)) >= (int)sizeof path)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: the path is too long for a file beside it",
                        eeb_rundb_path(db));
    int fd = mkstemp(path);
    if (fd < 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: no file for the server's record beside it",
                        eeb_rundb_path(db));
    close(fd);
    snprintf(route, sizeof route, "/api/v1/runs/%lld/record", (long long)server_run);
    rc = eeb_client_download(c, route, path, err, errlen);
    if (rc == EEB_OK)
        rc = take_in(path, db, copy, &meter, err, errlen);
    unlink(path);
    /* the record must be of this run: its chain's origin names it */
    if (rc == EEB_OK && (rc = eeb_rundb_copy_of(db, uuid, run, &of, err, errlen)) == EEB_OK &&
        of != *copy)
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "the server's record of run %lld is not a record of run %lld (%s)",
                      (long long)server_run, (long long)run, uuid);
    if (rc == EEB_OK)
        rc = heads_agree(c, server_run, db, *copy, meter, err, errlen);
    if (rc && *copy) { /* no record is kept that is not the server's whole */
        char ignored[256];
        (void)eeb_rundb_run_delete(db, *copy, ignored, sizeof ignored);
        if (meter)
            (void)eeb_rundb_run_delete(db, meter, ignored, sizeof ignored);
        *copy = 0;
    }
    if (rc == EEB_OK && c->log)
        fprintf(c->log, "eeb: the server's record of run %lld (its verdict%s) is run %lld of %s\n",
                (long long)server_run, meter ? ", its meter's log" : "", (long long)*copy,
                eeb_rundb_path(db));
    return rc;
}

int eeb_client_abandon(struct eeb_client *c, int64_t server_run, const char *why, json_t **reply,
                       char *err, size_t errlen)
{
    char path[96], reason[301];
    snprintf(reason, sizeof reason, "%s", why && why[0] ? why : "an error");
    eeb_utf8_trim(reason); /* the server takes 300 bytes */
    snprintf(path, sizeof path, "/api/v1/runs/%lld/abandon", (long long)server_run);
    json_t *body = json_pack("{s:s}", "reason", reason);
    int rc = body ? eeb_client_call(c, "POST", path, body, reply, err, errlen)
                  : eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    json_decref(body);
    return rc;
}
