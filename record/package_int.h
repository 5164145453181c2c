/*
 * package_int.h - shared between the package's files (record/package*.c):
 * the members' fixed names, hashing, the private directory, and what the
 * run recorded (read from its database, and the rules and utilization
 * report compared against it), which writing and checking both use.
 */
#ifndef PACKAGE_INT_H
#define PACKAGE_INT_H

#include "record/eeb_package.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "rundb/eeb_rundb_tables.h"
#include "scoring/eeb_score.h"

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

/* The members' names (the layout is fixed: eeb_package.h). */
#define NAME_MANIFEST "manifest.json"
#define NAME_DB       "run.db"
#define NAME_SYSTEM   "system.json"
#define NAME_RULES    "rules.json"
#define DIR_XCLBIN    "xclbin/"
#define DIR_REPORTS   "reports/"
#define CHUNK         (1 << 16) /* bytes read or written at a time */

/* What the run recorded, as package_read_recorded reads it. */
struct package_recorded {
    struct eeb_run_row row;
    struct eeb_config_record rec;
    enum eeb_task task;
    char xclbin_path[1024]; /* as given to the run, or "" */
    char util_kind[16];     /* report or declared */
    char rules_file[1024];  /* "" for the rules built into eeb */
    /* an official run's server's record of it, taken back (0: none): its
     * id, uuid and meter run, which the package carries beside it */
    int64_t server_copy, server_meter;
    char server_uuid[37];
};

/* Finishes ctx's SHA-256 into out as hex ("" if it fails: matches no real
 * digest). */
void package_sha256_hex(EVP_MD_CTX *ctx, char out[EEB_SHA256_HEX]);

/* A private directory (mode 0700) under $TMPDIR or /tmp, into dir; on
 * failure dir is "". */
int package_private_dir(char *dir, size_t n, char *err, size_t errlen);

/* Removes dir and the files in it (SQLite's journals too), if made; dir
 * becomes "". */
void package_remove_private_dir(char *dir);

/* Run id (0: the latest) of db, its stored configuration read into r;
 * free r->row with eeb_rundb_run_row_free. */
int package_read_recorded(struct eeb_rundb *db, int64_t run, struct package_recorded *r, char *err,
                          size_t errlen);

/* Whether the run's M_u came from a report file (not a spec, the model,
 * or the xclbin, whose own hash covers its embedded report). */
int package_util_report_expected(const struct package_recorded *r);

/* The report text's four fractions against the run's; why = "" or why
 * not. */
void package_util_report_compare(const char *text, size_t len, const char *name,
                                 const struct package_recorded *r, char *why, size_t n);

/* The rules text against the run's version, weights and window; why = ""
 * or why not. */
void package_rules_compare(const char *text, size_t len, const struct package_recorded *r,
                           char *why, size_t n);

#endif
