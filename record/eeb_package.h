/*
 * eeb_package.h - a submission package: one plain tar file (libarchive)
 * holding what a reviewer needs to recompute and defend a run's numbers,
 * written by `eeb pack` and checked by `eeb check --package`
 * (docs/package.md).
 *
 * Its members, each a regular file, by fixed names:
 *   manifest.json    every other member's name, size, SHA-256 and role;
 *                    eeb's version; the run's id, uuid and chain head
 *   run.db           the run's database: that run alone (and the power
 *                    log of the server's meter, in director mode)
 *   system.json      the system description (a closed schema, below)
 *   rules.json       the scoring rules the run was judged by
 *   xclbin/NAME      the xclbin the run recorded, if it had one
 *   reports/NAME     the utilization report the run's M_u came from, and
 *                    any other report (timing) the team adds
 *
 * A package is read as hostile input: a member that is not a regular file
 * (a link, a directory), whose name is absolute, holds "..", is not one of
 * the names above or is given twice, and more members or bytes than the
 * caps below, are refused before anything is believed.
 *
 * Sections: the system description; writing; checking.
 */
#ifndef EEB_PACKAGE_H
#define EEB_PACKAGE_H

#include "common/eeb_common.h"

#include <stddef.h>
#include <stdint.h>

#define EEB_PACKAGE_FORMAT         "eeb-package" /* the manifest's "format" */
#define EEB_PACKAGE_VERSION        1             /* and its "format_version" */
#define EEB_PACKAGE_MAX_MEMBERS    64
#define EEB_PACKAGE_MAX_REPORTS    16
#define EEB_PACKAGE_MAX_DB_BYTES   (4ull << 30) /* run.db */
#define EEB_PACKAGE_MAX_BYTES      (6ull << 30) /* all members together */
#define EEB_PACKAGE_MAX_TEXT_BYTES (1u << 20)   /* manifest.json, rules.json */
#define EEB_PACKAGE_MAX_SYSTEM     (64u << 10)  /* system.json */
#define EEB_PACKAGE_MAX_REPORT     (64u << 20)  /* each report */
#define EEB_PACKAGE_NAME_MAX       96           /* a member's name, in bytes */

/* ---- the system description ---- */

/*
 * Checks the text of a system description (name: the file, for messages)
 * against its closed schema: board {vendor, model, part}; host {cpu,
 * memory_gib, os}; meter {kind: ptd|scpi|hwmon|rapl|other, model, serial,
 * calibration_date YYYY-MM-DD, uncertainty_pct}; wiring {rail, tap};
 * ambient_c and notes (at most 1000 characters) optional.  The first fault
 * is EEB_EINVAL naming the field: "system.json: meter.serail: unknown
 * field (did you mean serial?)", "system.json: meter: missing".  A
 * one-line summary for people (board, meter, wiring: "AMD Xilinx Kria
 * KV260 (xck26-sfvc784-2LV-c); meter ptd Yokogawa WT310E, ...") goes into
 * summary if not NULL.
 */
int eeb_package_system_check(const char *text, size_t len, const char *name, char *summary,
                             size_t summary_len, char *err, size_t errlen);

/* ---- writing ---- */

struct eeb_package_spec {
    const char *db;             /* the run database */
    int64_t run;                /* the run (0: the latest) */
    const char *system;         /* the system description file */
    const char *xclbin;         /* NULL: the path the run recorded, if it used one */
    const char *rules;          /* NULL: the rules file the run recorded, else the
                                 * built-in rules (an official run's: the server's) */
    const char *const *reports; /* report files (NULL-terminated; NULL: none): the
                                 * utilization report the run recorded is found among
                                 * them by its name, else read from its recorded path */
    const char *out;            /* the package to write (atomically) */
};

/* A member as the manifest lists it. */
struct eeb_package_member {
    char name[EEB_PACKAGE_NAME_MAX];
    char role[16]; /* db, system, rules, xclbin, util_report, report */
    uint64_t size;
    char sha256[EEB_SHA256_HEX];
};

/* What was packed. */
struct eeb_package_summary {
    int64_t run;
    char uuid[37];
    char chain_head[EEB_SHA256_HEX]; /* "" for a run made before the chain */
    char rules_version[32];
    size_t n;
    struct eeb_package_member members[EEB_PACKAGE_MAX_REPORTS + 5];
};

/*
 * Writes the package of spec->run: the database copied out with SQLite's
 * backup (a consistent snapshot, whatever writes go on) into a private
 * temporary directory, every other run deleted from the copy (the
 * schema's ON DELETE CASCADE takes their records), compacted; the xclbin's
 * SHA-256 and the utilization report's fractions checked against the run's
 * configuration; the system description against its schema; the rules
 * file's version against the run's.  Errors name the file or field at
 * fault; nothing is left at spec->out then.  out (if not NULL) says what
 * was packed.
 */
int eeb_package_write(const struct eeb_package_spec *spec, struct eeb_package_summary *out,
                      char *err, size_t errlen);

/* ---- checking ---- */

/* One check of a package, as `eeb check --package` prints it. */
struct eeb_package_step {
    char what[EEB_PACKAGE_NAME_MAX]; /* "manifest", "run.db", "system", "xclbin"... */
    int pass;
    char detail[640];
};

struct eeb_package_check {
    size_t n;
    struct eeb_package_step steps[EEB_PACKAGE_MAX_MEMBERS + 8];
    int failed;        /* steps that did not pass */
    int64_t run;       /* the packaged run (the manifest's, else 0: the latest) */
    char db_path[600]; /* the extracted run.db, or "" if the package has none */
    char dir[512];     /* the private directory it is in */
};

/*
 * Opens the package at path and checks it: every member against the
 * manifest (size, SHA-256; none missing, none unlisted), the run's uuid
 * and chain head against the manifest's, the system description against
 * its schema, the rules file against the run's version, weights and
 * window, the xclbin against the run's recorded SHA-256, the utilization
 * report against the run's recorded fractions.  The database is extracted
 * into a private temporary directory (out->db_path) for the caller to
 * check the run in; eeb_package_check_free removes it.  Returns an error
 * (nothing left behind) for a file that cannot be read as a tar or a
 * member refused as unsafe, naming the member; otherwise EEB_OK with each
 * check's outcome in *out (free it with eeb_package_check_free).
 */
int eeb_package_check_open(const char *path, struct eeb_package_check **out, char *err,
                           size_t errlen);

/* Removes the extracted files and their directory, and frees c (NULL: nothing). */
void eeb_package_check_free(struct eeb_package_check *c);

#endif
