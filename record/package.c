/*
 * package.c - the submission package (eeb_package.h, docs/package.md): a
 * plain tar written and read with libarchive.
 *
 * Sections: members (names, roles, hashes, the private directory); what
 * the run recorded (its xclbin, its utilization report, its rules);
 * writing (the run copied out of its database, the tar); reading (a
 * hostile tar, one member at a time); the checks.  The system description
 * is system_desc.c's.
 */
#include "record/eeb_package.h"
#include "common/eeb_json.h"
#include "fpga/tools/eeb_xclbin.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "rundb/eeb_rundb_tables.h"
#include "scoring/eeb_score.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- members ---- */

/* What a member is, by its name (the layout is fixed: eeb_package.h). */
enum role { ROLE_MANIFEST, ROLE_DB, ROLE_SYSTEM, ROLE_RULES, ROLE_XCLBIN, ROLE_REPORT };

#define NAME_MANIFEST "manifest.json"
#define NAME_DB       "run.db"
#define NAME_SYSTEM   "system.json"
#define NAME_RULES    "rules.json"
#define DIR_XCLBIN    "xclbin/"
#define DIR_REPORTS   "reports/"
#define CHUNK         (1 << 16) /* bytes read or written at a time */

/* The bytes a member of each role may have. */
static uint64_t role_cap(enum role r)
{
    switch (r) {
    case ROLE_MANIFEST:
    case ROLE_RULES: return EEB_PACKAGE_MAX_TEXT_BYTES;
    case ROLE_SYSTEM: return EEB_PACKAGE_MAX_SYSTEM;
    case ROLE_DB: return EEB_PACKAGE_MAX_DB_BYTES;
    case ROLE_XCLBIN: return EEB_XCLBIN_MAX_BYTES;
    case ROLE_REPORT: return EEB_PACKAGE_MAX_REPORT;
    }
    return 0;
}

/* A name inside xclbin/ or reports/: letters, digits, "._+-", not hidden. */
static int leaf_ok(const char *s)
{
    if (!isalnum((unsigned char)*s))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._+-", *s))
            return 0;
    return 1;
}

/* Why a member's name is refused (NULL: it is not), and its role. */
static const char *name_fault(const char *name, enum role *role)
{
    if (!*name)
        return "an empty name";
    if (*name == '/')
        return "an absolute path";
    for (const char *p = name;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 2 && p[0] == '.' && p[1] == '.')
            return "a path that climbs out of the package (..)";
        if (len == 0)
            return "an empty path component (// or a trailing /)";
        if (len == 1 && p[0] == '.')
            return "a '.' path component";
        if (!slash)
            break;
        p = slash + 1;
    }
    if (strlen(name) >= EEB_PACKAGE_NAME_MAX)
        return "a name longer than the package's names";
    static const struct {
        const char *name;
        enum role role;
    } fixed[] = {{NAME_MANIFEST, ROLE_MANIFEST},
                 {NAME_DB, ROLE_DB},
                 {NAME_SYSTEM, ROLE_SYSTEM},
                 {NAME_RULES, ROLE_RULES}};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (strcmp(name, fixed[i].name) == 0)
            return *role = fixed[i].role, NULL;
    if (strncmp(name, DIR_XCLBIN, strlen(DIR_XCLBIN)) == 0 && leaf_ok(name + strlen(DIR_XCLBIN)))
        return *role = ROLE_XCLBIN, NULL;
    if (strncmp(name, DIR_REPORTS, strlen(DIR_REPORTS)) == 0 && leaf_ok(name + strlen(DIR_REPORTS)))
        return *role = ROLE_REPORT, NULL;
    return "not a member of an eeb package (manifest.json, run.db, system.json, rules.json, "
           "xclbin/NAME, reports/NAME)";
}

/* "reports/" and a file's base name made a safe leaf (other characters
 * become '_'), into out. */
static void leaf_name(const char *dir, const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char leaf[64];
    size_t k = 0;
    if (!isalnum((unsigned char)*base))
        leaf[k++] = 'f';
    for (; *base && k + 1 < sizeof leaf; base++)
        leaf[k++] = isalnum((unsigned char)*base) || strchr("._+-", *base) ? *base : '_';
    leaf[k] = '\0';
    snprintf(out, n, "%s%s", dir, leaf);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void digest_hex(EVP_MD_CTX *ctx, char out[EEB_SHA256_HEX])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!EVP_DigestFinal_ex(ctx, md, &n) || n != 32) {
        out[0] = '\0'; /* matches no real digest */
        return;
    }
    for (int i = 0; i < 32; i++)
        out[2 * i] = digits[md[i] >> 4], out[2 * i + 1] = digits[md[i] & 15];
    out[64] = '\0';
}

/* A private directory (mode 0700) under $TMPDIR or /tmp, into dir. */
static int private_dir(char *dir, size_t n, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    if ((size_t)snprintf(dir, n, "%s/eeb-package-XXXXXX", tmp) >= n) {
        dir[0] = '\0';
        return eeb_errf(err, errlen, EEB_EINVAL, "TMPDIR %s: too long a path", tmp);
    }
    if (!mkdtemp(dir)) {
        int rc = eeb_errf(err, errlen, EEB_EIO, "%s: cannot make a private directory: %s", dir,
                          strerror(errno));
        dir[0] = '\0';
        return rc;
    }
    return EEB_OK;
}

/* Removes dir and the files in it (SQLite's journals too), if made. */
static void remove_dir(char *dir)
{
    if (!dir[0])
        return;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    rmdir(dir);
    dir[0] = '\0';
}

/* ---- what the run recorded ---- */

struct recorded {
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

static void copy_at(const json_t *o, const char *obj, const char *key, char *out, size_t n)
{
    snprintf(out, n, "%s", json_string_value(json_object_get(json_object_get(o, obj), key)) ?: "");
}

/* Run id (0: the latest) of db, its stored configuration read. */
static int read_recorded(struct eeb_rundb *db, int64_t run, struct recorded *r, char *err,
                         size_t errlen)
{
    memset(r, 0, sizeof *r);
    int rc = eeb_rundb_run_get(db, run, &r->row, err, errlen);
    if (rc)
        return rc;
    const char *path = eeb_rundb_path(db);
    if (strcmp(r->row.task, "none") == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: run %lld is a power log, not a benchmark run",
                        path, (long long)r->row.id);
    if (eeb_task_parse(r->row.task, &r->task, err, errlen))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: run %lld: task '%s'", path,
                        (long long)r->row.id, r->row.task);
    if (eeb_config_record_read(r->row.config, &r->rec))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: run %lld: its configuration is not JSON",
                        path, (long long)r->row.id);
    /* three keys eeb_config_record_read does not give: read here alone */
    json_t *o = json_loads(r->row.config, 0, NULL);
    copy_at(o, "xclbin", "path", r->xclbin_path, sizeof r->xclbin_path);
    copy_at(o, "util", "kind", r->util_kind, sizeof r->util_kind);
    copy_at(o, "rules", "file", r->rules_file, sizeof r->rules_file);
    json_decref(o);
    rc = r->rec.official && !r->rec.held_by_server
             ? eeb_rundb_copy_of(db, r->row.uuid, r->row.id, &r->server_copy, err, errlen)
             : EEB_OK;
    struct eeb_run_row copy;
    if (rc == EEB_OK && r->server_copy &&
        (rc = eeb_rundb_run_get(db, r->server_copy, &copy, err, errlen)) == EEB_OK) {
        struct eeb_config_record cfg;
        (void)eeb_config_record_read(copy.config, &cfg);
        r->server_meter = cfg.meter_run;
        snprintf(r->server_uuid, sizeof r->server_uuid, "%s", copy.uuid);
        eeb_rundb_run_row_free(&copy);
    }
    return rc;
}

/* Whether the run's M_u came from a report file (not a spec, the model,
 * or the xclbin, whose own hash covers its embedded report). */
static int util_report_expected(const struct recorded *r)
{
    const char *src = r->rec.util_source;
    if (strcmp(r->util_kind, "report") != 0 || !src[0] || strncmp(src, "modeled", 7) == 0)
        return 0;
    size_t n = strlen(r->xclbin_path);
    return !(n && strncmp(src, r->xclbin_path, n) == 0 && strncmp(src + n, " (", 2) == 0);
}

/* The report text's four fractions against the run's; "" or why not. */
static void util_compare(const char *text, size_t len, const char *name, const struct recorded *r,
                         char *why, size_t n)
{
    struct eeb_util u;
    char err[512];
    why[0] = '\0';
    if (eeb_score_util_parse(text, len, name, &u, err, sizeof err)) {
        snprintf(why, n, "%s", err);
        return;
    }
    const double *rec = r->rec.util;
    for (int i = 0; i < EEB_UTIL_COUNT; i++)
        if (u.frac[i] != rec[i]) {
            snprintf(why, n,
                     "%s: LUT %.6g, FF %.6g, BRAM %.6g, DSP %.6g; the run recorded LUT %.6g, FF "
                     "%.6g, BRAM %.6g, DSP %.6g",
                     name, u.frac[0], u.frac[1], u.frac[2], u.frac[3], rec[0], rec[1], rec[2],
                     rec[3]);
            return;
        }
}

/* The rules text against the run's version, weights and window; "" or
 * why not. */
static void rules_compare(const char *text, size_t len, const struct recorded *r, char *why,
                          size_t n)
{
    struct eeb_rules rules;
    char err[512];
    why[0] = '\0';
    if (eeb_score_rules_parse(text, len, NAME_RULES, &rules, err, sizeof err)) {
        snprintf(why, n, "%s", err);
        return;
    }
    const struct eeb_weights *w = &rules.weights[r->task];
    const double *rw = r->rec.weights;
    if (strcmp(rules.version, r->row.rules_version) != 0)
        snprintf(why, n, "rules version %s; the run was judged by %s", rules.version,
                 r->row.rules_version);
    else if (w->u != rw[0] || w->t != rw[1] || w->p != rw[2] || w->s != rw[3])
        snprintf(why, n, "%s weights %g,%g,%g,%g; the run recorded %g,%g,%g,%g", r->row.task, w->u,
                 w->t, w->p, w->s, rw[0], rw[1], rw[2], rw[3]);
    else if (rules.power.window_s != r->rec.window_s)
        snprintf(why, n, "P_max window %g s; the run recorded %g s", rules.power.window_s,
                 r->rec.window_s);
}

/* ---- writing ---- */

/* A member to write: from a file, or from memory. */
struct out_member {
    struct eeb_package_member m;
    const char *path; /* a file, streamed and hashed again as it is written */
    char *data;       /* or bytes (owned) */
};

struct writer {
    struct out_member m[EEB_PACKAGE_MAX_REPORTS + 5];
    size_t n;
};

static struct out_member *add(struct writer *w, const char *name, const char *role)
{
    struct out_member *o = &w->m[w->n++];
    snprintf(o->m.name, sizeof o->m.name, "%s", name);
    snprintf(o->m.role, sizeof o->m.role, "%s", role);
    return o;
}

static int add_file(struct writer *w, const char *name, const char *role, const char *path,
                    char *err, size_t errlen)
{
    struct out_member *o = add(w, name, role);
    o->path = path;
    struct stat st;
    if (stat(path, &st) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    o->m.size = (uint64_t)st.st_size;
    return eeb_sha256_file(path, o->m.sha256, err, errlen);
}

static void add_data(struct writer *w, const char *name, const char *role, char *data, size_t len)
{
    struct out_member *o = add(w, name, role);
    o->data = data;
    o->m.size = len;
    eeb_sha256(data, len, o->m.sha256);
}

/* Copies run and the runs of keep that are not 0 (its meter run, the
 * server's record of it and that record's meter run) of src into a new
 * file at dest: SQLite's backup, every other run deleted (their records by
 * the schema's ON DELETE CASCADE), one file without a journal, compacted. */
static int export_run(struct eeb_rundb *src, int64_t run, const int64_t keep[3], const char *dest,
                      char *err, size_t errlen)
{
    sqlite3 *to = NULL;
    sqlite3_stmt *st = NULL;
    const char *what = "copying it";
    int rc = EEB_OK;
    if (sqlite3_open_v2(dest, &to, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_backup *b = sqlite3_backup_init(to, "main", eeb_rundb_sqlite(src), "main");
    if (!b)
        goto fail;
    int step = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (step != SQLITE_DONE) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: copying run %lld: %s", eeb_rundb_path(src),
                      (long long)run, sqlite3_errstr(step));
        goto out;
    }
    what = "keeping the run alone";
    if (sqlite3_exec(to, "PRAGMA journal_mode = DELETE; PRAGMA foreign_keys = ON; BEGIN", NULL,
                     NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(to,
                           "DELETE FROM runs WHERE id <> ?1 AND id IS NOT ?2 AND id IS NOT ?3 "
                           "AND id IS NOT ?4",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, run);
    for (int i = 0; i < 3; i++)
        if (keep[i] > 0)
            sqlite3_bind_int64(st, 2 + i, keep[i]);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st), st = NULL;
    what = "compacting it";
    if (sqlite3_exec(to, "COMMIT; VACUUM", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    goto out;
fail:
    rc = eeb_errf(err, errlen, EEB_EDB, "%s: run %lld: %s: %s", eeb_rundb_path(src), (long long)run,
                  what, to ? sqlite3_errmsg(to) : "out of memory");
out:
    sqlite3_finalize(st);
    sqlite3_close(to);
    return rc;
}

/* The copy at path: run's uuid (it must be src's) and chain head. */
static int copy_head(const char *path, int64_t run, const char *uuid, char head[EEB_SHA256_HEX],
                     char *err, size_t errlen)
{
    struct eeb_rundb *db;
    struct eeb_run_row row;
    struct eeb_chain_check c;
    int rc = eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc)
        return rc;
    if ((rc = eeb_rundb_run_get(db, run, &row, err, errlen)) == EEB_OK) {
        if (strcmp(row.uuid, uuid) != 0)
            rc = eeb_errf(err, errlen, EEB_EDB, "the copy of run %lld is another run (%s)",
                          (long long)run, row.uuid);
        eeb_rundb_run_row_free(&row);
    }
    if (rc == EEB_OK && (rc = eeb_rundb_chain_check(db, run, &c, err, errlen)) == EEB_OK)
        snprintf(head, EEB_SHA256_HEX, "%s", c.links ? c.head : "");
    eeb_rundb_close(db);
    return rc;
}

/* The xclbin the run recorded: spec's or the recorded path, its hash the
 * recorded one. */
static int pack_xclbin(struct writer *w, const struct eeb_package_spec *spec,
                       const struct recorded *r, char *err, size_t errlen)
{
    const char *want = r->rec.xclbin_sha256;
    if (!want[0])
        return spec->xclbin
                   ? eeb_errf(err, errlen, EEB_EINVAL, "--xclbin %s: run %lld recorded no xclbin",
                              spec->xclbin, (long long)r->row.id)
                   : EEB_OK;
    const char *path = spec->xclbin ? spec->xclbin : r->xclbin_path;
    if (!spec->xclbin && access(path, R_OK) != 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "run %lld ran the xclbin %s, which is not there: give it (--xclbin FILE)",
                        (long long)r->row.id, path);
    char name[EEB_PACKAGE_NAME_MAX];
    leaf_name(DIR_XCLBIN, path, name, sizeof name);
    int rc = add_file(w, name, "xclbin", path, err, errlen);
    if (rc == EEB_OK && strcmp(w->m[w->n - 1].m.sha256, want) != 0)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: SHA-256 %.16s..., not the xclbin run %lld recorded (%.16s...)", path,
                      w->m[w->n - 1].m.sha256, (long long)r->row.id, want);
    return rc;
}

/* The reports: each given one, and the utilization report the run's M_u
 * came from (found among them by name, else at its recorded path), whose
 * fractions must be the run's. */
static int pack_reports(struct writer *w, const struct eeb_package_spec *spec,
                        const struct recorded *r, char *err, size_t errlen)
{
    int want_util = util_report_expected(r), found = 0, rc = EEB_OK;
    const char *recorded = r->rec.util_source;
    size_t given = 0;
    while (spec->reports && spec->reports[given])
        given++;
    for (size_t i = 0; i <= given && rc == EEB_OK; i++) {
        const char *path = i < given ? spec->reports[i] : recorded;
        int util = want_util && strcmp(base_name(path), base_name(recorded)) == 0;
        if (i == given && (!want_util || found))
            break;
        if (i == given && access(path, R_OK) != 0)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "run %lld's M_u came from the report %s, which is not there: give it "
                            "(--report FILE)",
                            (long long)r->row.id, recorded);
        if (w->n >= sizeof w->m / sizeof *w->m)
            return eeb_errf(err, errlen, EEB_EINVAL, "more than %d reports",
                            EEB_PACKAGE_MAX_REPORTS);
        char *text;
        size_t len;
        char name[EEB_PACKAGE_NAME_MAX], why[700];
        if ((rc = eeb_read_file(path, EEB_PACKAGE_MAX_REPORT, &text, &len, err, errlen)))
            return rc;
        leaf_name(DIR_REPORTS, path, name, sizeof name);
        for (size_t k = 0; k < w->n; k++)
            if (strcmp(w->m[k].m.name, name) == 0) {
                free(text);
                return eeb_errf(err, errlen, EEB_EINVAL, "%s: a second report named %s", path,
                                name + strlen(DIR_REPORTS));
            }
        if (util) {
            util_compare(text, len, path, r, why, sizeof why);
            if (why[0]) {
                free(text);
                return eeb_errf(err, errlen, EEB_EINVAL,
                                "not the utilization report of run %lld: %s", (long long)r->row.id,
                                why);
            }
            found = 1;
        }
        add_data(w, name, util ? "util_report" : "report", text, len);
    }
    return rc;
}

/* The rules the run was judged by: the file given, else the run's file,
 * else the built-in text. */
static int pack_rules(struct writer *w, const char *given, const struct recorded *r, char *err,
                      size_t errlen)
{
    char *text, why[700];
    size_t len;
    const char *file = given ? given : r->rules_file[0] ? r->rules_file : NULL;
    if (file) {
        char why_not[600];
        int rc =
            eeb_read_file(file, EEB_PACKAGE_MAX_TEXT_BYTES, &text, &len, why_not, sizeof why_not);
        if (rc)
            return eeb_errf(err, errlen, rc, "run %lld's rules: %s%s", (long long)r->row.id,
                            why_not, given ? "" : " (give the file: --rules FILE)");
    } else {
        len = strlen(eeb_score_rules_v1);
        if (!(text = strdup(eeb_score_rules_v1)))
            return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    rules_compare(text, len, r, why, sizeof why);
    if (why[0]) {
        free(text);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: not the rules run %lld was judged by: %s%s",
                        file ? file : "the built-in rules", (long long)r->row.id, why,
                        given ? "" : " (give its rules file: --rules FILE)");
    }
    add_data(w, NAME_RULES, "rules", text, len);
    return EEB_OK;
}

static json_t *manifest_json(const struct writer *w, const struct recorded *r, const char *head,
                             const char *server_head)
{
    json_t *members = json_array();
    for (size_t i = 0; i < w->n; i++)
        json_array_append_new(members,
                              json_pack("{s:s, s:s, s:I, s:s}", "name", w->m[i].m.name, "role",
                                        w->m[i].m.role, "size", (json_int_t)w->m[i].m.size,
                                        "sha256", w->m[i].m.sha256));
    json_t *m =
        json_pack("{s:s, s:i, s:{s:s, s:s}, s:{s:I, s:s, s:s, s:s, s:s, s:s?}, s:o}", "format",
                  EEB_PACKAGE_FORMAT, "format_version", EEB_PACKAGE_VERSION, "eeb", "version",
                  EEB_VERSION, "build", eeb_build(), "run", "id", (json_int_t)r->row.id, "uuid",
                  r->row.uuid, "task", r->row.task, "state", r->row.state, "rules_version",
                  r->row.rules_version, "chain_head", head[0] ? head : NULL, "members", members);
    /* the system under test, as its stored configuration names it */
    if (m && r->rec.sut_name[0]) {
        json_t *sys = json_pack("{s:s, s:s}", "name", r->rec.sut_name, "kind", r->rec.sut_kind);
        if (sys && r->rec.sut_detail[0])
            json_object_set_new(sys, "detail", json_string(r->rec.sut_detail));
        json_object_set_new(json_object_get(m, "run"), "system", sys);
    }
    /* the server's record of it: the chain the server ended, and judged */
    if (m && r->server_copy)
        json_object_set_new(json_object_get(m, "run"), "server_record",
                            json_pack("{s:I, s:s, s:s}", "id", (json_int_t)r->server_copy, "uuid",
                                      r->server_uuid, "chain_head", server_head));
    return m;
}

/* One member into the tar: its bytes, a file's hashed again on the way. */
static int write_member(struct archive *a, const struct out_member *o, time_t mtime, char *err,
                        size_t errlen)
{
    struct archive_entry *e = archive_entry_new();
    FILE *f = NULL;
    EVP_MD_CTX *ctx = NULL;
    char *buf = NULL;
    int rc = EEB_OK;
    if (!e)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    archive_entry_set_pathname(e, o->m.name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)o->m.size);
    archive_entry_set_mtime(e, mtime, 0);
    if (archive_write_header(a, e) != ARCHIVE_OK) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", o->m.name, archive_error_string(a));
        goto out;
    }
    if (o->data) {
        if (o->m.size && archive_write_data(a, o->data, o->m.size) != (la_ssize_t)o->m.size)
            rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", o->m.name, archive_error_string(a));
        goto out;
    }
    if ((rc = eeb_open_input(o->path, &f, err, errlen)))
        goto out;
    if (!(buf = malloc(CHUNK)) || !(ctx = EVP_MD_CTX_new()) ||
        !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        goto out;
    }
    uint64_t total = 0;
    size_t got;
    while ((got = fread(buf, 1, CHUNK, f)) > 0 && total + got <= o->m.size) {
        total += got;
        EVP_DigestUpdate(ctx, buf, got);
        if (archive_write_data(a, buf, got) != (la_ssize_t)got) {
            rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", o->m.name, archive_error_string(a));
            goto out;
        }
    }
    char sha[EEB_SHA256_HEX];
    digest_hex(ctx, sha);
    if (ferror(f) || got || total != o->m.size || strcmp(sha, o->m.sha256) != 0)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: changed while it was packed", o->path);
out:
    free(buf);
    EVP_MD_CTX_free(ctx);
    if (f)
        fclose(f);
    archive_entry_free(e);
    return rc;
}

static int write_tar(const char *out, const struct writer *w, const char *manifest, time_t mtime,
                     char *err, size_t errlen)
{
    struct eeb_atomic_file af;
    int rc = eeb_atomic_open(&af, out, err, errlen);
    if (rc)
        return rc;
    struct archive *a = archive_write_new();
    if (!a || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_open_FILE(a, af.f) != ARCHIVE_OK) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", out,
                      a ? archive_error_string(a) : "out of memory");
        goto out;
    }
    struct out_member m = {.data = (char *)manifest};
    snprintf(m.m.name, sizeof m.m.name, "%s", NAME_MANIFEST);
    m.m.size = strlen(manifest);
    rc = write_member(a, &m, mtime, err, errlen);
    for (size_t i = 0; rc == EEB_OK && i < w->n; i++)
        rc = write_member(a, &w->m[i], mtime, err, errlen);
    if (rc == EEB_OK && archive_write_close(a) != ARCHIVE_OK)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", out, archive_error_string(a));
out:
    archive_write_free(a);
    if (rc == EEB_OK)
        rc = eeb_atomic_commit(&af, err, errlen);
    if (rc)
        eeb_atomic_abort(&af);
    return rc;
}

int eeb_package_write(const struct eeb_package_spec *spec, struct eeb_package_summary *out,
                      char *err, size_t errlen)
{
    struct eeb_rundb *db = NULL;
    struct recorded *r = calloc(1, sizeof *r);
    struct writer *w = calloc(1, sizeof *w);
    char dir[512] = "", copy[600], head[EEB_SHA256_HEX] = "", server_head[EEB_SHA256_HEX] = "";
    char *system = NULL, *manifest = NULL;
    size_t system_len;
    json_t *mj = NULL;
    int rc = EEB_OK;
    if (!r || !w) {
        free(r), free(w);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    if ((rc = eeb_check_output(spec->out, err, errlen)) ||
        (rc = eeb_read_file(spec->system, EEB_PACKAGE_MAX_SYSTEM, &system, &system_len, err,
                            errlen)) ||
        (rc = eeb_package_system_check(system, system_len, spec->system, NULL, 0, err, errlen)) ||
        (rc = eeb_rundb_open(spec->db, EEB_RUNDB_READONLY, &db, err, errlen)) ||
        (rc = read_recorded(db, spec->run, r, err, errlen)))
        goto out;
    if (strcmp(r->row.state, "done") != 0 && strcmp(r->row.state, "failed") != 0) {
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: run %lld has not finished (state %s): pack a finished run", spec->db,
                      (long long)r->row.id, r->row.state);
        goto out;
    }
    if ((rc = private_dir(dir, sizeof dir, err, errlen)))
        goto out;
    snprintf(copy, sizeof copy, "%s/%s", dir, NAME_DB);
    const int64_t keep[3] = {r->rec.meter_run, r->server_copy, r->server_meter};
    if ((rc = export_run(db, r->row.id, keep, copy, err, errlen)) ||
        (rc = copy_head(copy, r->row.id, r->row.uuid, head, err, errlen)) ||
        (r->server_copy &&
         (rc = copy_head(copy, r->server_copy, r->server_uuid, server_head, err, errlen))) ||
        (rc = add_file(w, NAME_DB, "db", copy, err, errlen)))
        goto out;
    add_data(w, NAME_SYSTEM, "system", system, system_len);
    system = NULL;
    if ((rc = pack_rules(w, spec->rules, r, err, errlen)) ||
        (rc = pack_xclbin(w, spec, r, err, errlen)) || (rc = pack_reports(w, spec, r, err, errlen)))
        goto out;
    if (!(mj = manifest_json(w, r, head, server_head)) ||
        !(manifest = json_dumps(mj, JSON_INDENT(2) | JSON_PRESERVE_ORDER))) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "the manifest: out of memory");
        goto out;
    }
    int64_t at_ns = r->row.finished_utc_ns ? r->row.finished_utc_ns : r->row.created_utc_ns;
    if ((rc = write_tar(spec->out, w, manifest, (time_t)(at_ns / 1000000000), err, errlen)))
        goto out;
    if (out) {
        memset(out, 0, sizeof *out);
        out->run = r->row.id;
        snprintf(out->uuid, sizeof out->uuid, "%s", r->row.uuid);
        snprintf(out->chain_head, sizeof out->chain_head, "%s", head);
        snprintf(out->rules_version, sizeof out->rules_version, "%s", r->row.rules_version);
        for (size_t i = 0; i < w->n; i++)
            out->members[out->n++] = w->m[i].m;
    }
out:
    eeb_rundb_close(db);
    remove_dir(dir);
    for (size_t i = 0; i < w->n; i++)
        free(w->m[i].data);
    eeb_rundb_run_row_free(&r->row);
    json_decref(mj);
    free(manifest);
    free(system);
    free(r);
    free(w);
    return rc;
}

/* ---- reading ---- */

struct in_member {
    char name[EEB_PACKAGE_NAME_MAX];
    enum role role;
    uint64_t size;
    char sha256[EEB_SHA256_HEX];
    char *data; /* the text members' and reports' bytes, NUL-terminated */
};

struct reader {
    struct in_member m[EEB_PACKAGE_MAX_MEMBERS];
    size_t n;
};

static void reader_free(struct reader *rd)
{
    for (size_t i = 0; i < rd->n; i++)
        free(rd->m[i].data);
    free(rd);
}

static const struct in_member *member(const struct reader *rd, const char *name)
{
    for (size_t i = 0; i < rd->n; i++)
        if (strcmp(rd->m[i].name, name) == 0)
            return &rd->m[i];
    return NULL;
}

static const char *type_name(mode_t t)
{
    switch (t) {
    case AE_IFLNK: return "a symbolic link";
    case AE_IFDIR: return "a directory";
    case AE_IFCHR: return "a character device";
    case AE_IFBLK: return "a block device";
    case AE_IFIFO: return "a FIFO";
    case AE_IFSOCK: return "a socket";
    }
    return "not a regular file";
}

/* The entry e (after its header): refused, or its bytes hashed and kept
 * (text, reports), written to db_path (run.db) or only hashed (xclbin). */
static int read_member(struct archive *a, struct archive_entry *e, const char *path,
                       struct reader *rd, uint64_t *total, const char *db_path, char *err,
                       size_t errlen)
{
    const char *name = archive_entry_pathname(e);
    enum role role = ROLE_MANIFEST;
    const char *fault = !name ? "a member without a name" : name_fault(name, &role);
    if (fault)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%.120s': %s", path, name ? name : "",
                        fault);
    if (archive_entry_hardlink(e))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': a hard link", path, name);
    if (archive_entry_symlink(e) || archive_entry_filetype(e) != AE_IFREG)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': %s", path, name,
                        type_name(archive_entry_filetype(e)));
    if (member(rd, name))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': given twice", path, name);
    if (rd->n == EEB_PACKAGE_MAX_MEMBERS)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: more than %d members", path,
                        EEB_PACKAGE_MAX_MEMBERS);
    if (role == ROLE_XCLBIN)
        for (size_t i = 0; i < rd->n; i++)
            if (rd->m[i].role == ROLE_XCLBIN)
                return eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': a second xclbin", path,
                                name);
    la_int64_t size = archive_entry_size(e);
    if (!archive_entry_size_is_set(e) || size < 0 || (uint64_t)size > role_cap(role))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': %lld bytes (at most %llu)",
                        path, name, (long long)size, (unsigned long long)role_cap(role));
    if ((*total += (uint64_t)size) > EEB_PACKAGE_MAX_BYTES)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: more than %llu bytes in all", path,
                        (unsigned long long)EEB_PACKAGE_MAX_BYTES);
    struct in_member *m = &rd->m[rd->n++];
    snprintf(m->name, sizeof m->name, "%s", name);
    m->role = role;
    m->size = (uint64_t)size;
    int keep = role != ROLE_DB && role != ROLE_XCLBIN, fd = -1, rc = EEB_OK;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    char *buf = malloc(CHUNK);
    if (!buf || !ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
        (keep && !(m->data = malloc((size_t)size + 1)))) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: member '%s': out of memory", path, name);
        goto out;
    }
    if (role == ROLE_DB &&
        (fd = open(db_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", db_path, strerror(errno));
        goto out;
    }
    uint64_t got = 0;
    for (;;) {
        la_ssize_t k = archive_read_data(a, buf, CHUNK);
        if (k < 0) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': %s", path, name,
                          archive_error_string(a));
            goto out;
        }
        if (k == 0)
            break;
        if (got + (uint64_t)k > m->size) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': longer than its header says",
                          path, name);
            goto out;
        }
        EVP_DigestUpdate(ctx, buf, (size_t)k);
        if (m->data)
            memcpy(m->data + got, buf, (size_t)k);
        for (la_ssize_t off = 0; fd >= 0 && off < k;) {
            ssize_t wr = write(fd, buf + off, (size_t)(k - off));
            if (wr < 0 && errno == EINTR)
                continue;
            if (wr <= 0) {
                rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", db_path, strerror(errno));
                goto out;
            }
            off += wr;
        }
        got += (uint64_t)k;
    }
    if (got != m->size) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: member '%s': cut short", path, name);
        goto out;
    }
    if (m->data)
        m->data[got] = '\0';
    digest_hex(ctx, m->sha256);
out:
    free(buf);
    EVP_MD_CTX_free(ctx);
    if (fd >= 0 && close(fd) != 0 && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", db_path, strerror(errno));
    return rc;
}

/* Reads every member of the tar at path; the database into db_path. */
static int read_tar(const char *path, struct reader *rd, const char *db_path, char *err,
                    size_t errlen)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    uint64_t total = 0;
    int rc = EEB_OK;
    if (!a)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if ((rc = eeb_check_input(path, err, errlen)))
        goto out;
    /* a tar and nothing else: no compression, no other formats */
    if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
        archive_read_open_filename(a, path, 1 << 16) != ARCHIVE_OK) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: not a tar file: %s", path,
                      archive_error_string(a));
        goto out;
    }
    int st;
    while ((st = archive_read_next_header(a, &e)) == ARCHIVE_OK)
        if ((rc = read_member(a, e, path, rd, &total, db_path, err, errlen)))
            goto out;
    if (st != ARCHIVE_EOF)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: %s after %zu members", path,
                      archive_error_string(a) ? archive_error_string(a) : "not a tar file", rd->n);
out:
    archive_read_free(a);
    return rc;
}

/* ---- the checks ---- */

__attribute__((format(printf, 4, 5))) static void
step(struct eeb_package_check *c, const char *what, int pass, const char *fmt, ...)
{
    if (c->n == sizeof c->steps / sizeof *c->steps)
        return;
    struct eeb_package_step *s = &c->steps[c->n++];
    snprintf(s->what, sizeof s->what, "%s", what);
    s->pass = pass;
    c->failed += !pass;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->detail, sizeof s->detail, fmt, ap);
    va_end(ap);
}

/* A member as the manifest lists it. */
struct listed {
    char name[EEB_PACKAGE_NAME_MAX];
    char role[16];
    uint64_t size;
    char sha256[EEB_SHA256_HEX];
    int seen;
};

struct manifest {
    struct listed m[EEB_PACKAGE_MAX_MEMBERS];
    size_t n;
    int64_t run;
    char uuid[37], head[EEB_SHA256_HEX], eeb[32];
    int64_t server_run; /* the server's record of the run (0: none) */
    char server_uuid[37], server_head[EEB_SHA256_HEX];
};

static int hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
            return 0;
    return 1;
}

/* Parses the manifest into mf; "" or why it cannot be believed. */
static void parse_manifest(const struct in_member *im, struct manifest *mf, char *why, size_t n)
{
    json_error_t je;
    json_t *o = json_loadb(im->data, im->size, JSON_REJECT_DUPLICATES, &je);
    why[0] = '\0';
    if (!o) {
        snprintf(why, n, "line %d: %s", je.line, je.text);
        return;
    }
    const char *format = json_string_value(json_object_get(o, "format"));
    json_t *version = json_object_get(o, "format_version"), *run = json_object_get(o, "run");
    json_t *members = json_object_get(o, "members");
    const char *uuid = json_string_value(json_object_get(run, "uuid"));
    const char *head = json_string_value(json_object_get(run, "chain_head"));
    json_t *id = json_object_get(run, "id");
    if (!format || strcmp(format, EEB_PACKAGE_FORMAT) != 0)
        snprintf(why, n, "format: not \"%s\"", EEB_PACKAGE_FORMAT);
    else if (!json_is_integer(version) || json_integer_value(version) < 1)
        snprintf(why, n, "format_version: not a version");
    else if (json_integer_value(version) > EEB_PACKAGE_VERSION)
        snprintf(why, n, "format_version %lld: written by a newer eeb",
                 (long long)json_integer_value(version));
    else if (!json_is_integer(id) || json_integer_value(id) < 1 || !uuid || strlen(uuid) != 36)
        snprintf(why, n, "run: no id and uuid");
    else if (head && !hex64(head))
        snprintf(why, n, "run.chain_head: not a SHA-256");
    else if (!json_is_array(members) || json_array_size(members) > EEB_PACKAGE_MAX_MEMBERS)
        snprintf(why, n, "members: not a list of at most %d", EEB_PACKAGE_MAX_MEMBERS);
    if (why[0])
        goto out;
    json_t *sr = json_object_get(run, "server_record");
    const char *sr_uuid = json_string_value(json_object_get(sr, "uuid"));
    const char *sr_head = json_string_value(json_object_get(sr, "chain_head"));
    if (sr && (!json_is_integer(json_object_get(sr, "id")) || !sr_uuid || strlen(sr_uuid) != 36 ||
               !hex64(sr_head))) {
        snprintf(why, n, "run.server_record: no id, uuid and chain_head");
        goto out;
    }
    if (sr) {
        mf->server_run = json_integer_value(json_object_get(sr, "id"));
        snprintf(mf->server_uuid, sizeof mf->server_uuid, "%s", sr_uuid);
        snprintf(mf->server_head, sizeof mf->server_head, "%s", sr_head);
    }
    mf->run = json_integer_value(id);
    snprintf(mf->uuid, sizeof mf->uuid, "%s", uuid);
    snprintf(mf->head, sizeof mf->head, "%s", head ? head : "");
    snprintf(mf->eeb, sizeof mf->eeb, "%s",
             json_string_value(json_object_get(json_object_get(o, "eeb"), "version"))
                 ? json_string_value(json_object_get(json_object_get(o, "eeb"), "version"))
                 : "?");
    size_t i;
    json_t *x;
    json_array_foreach(members, i, x)
    {
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *role = json_string_value(json_object_get(x, "role"));
        const char *sha = json_string_value(json_object_get(x, "sha256"));
        json_t *size = json_object_get(x, "size");
        if (!name || strlen(name) >= EEB_PACKAGE_NAME_MAX || !role || strlen(role) >= 16 ||
            !hex64(sha) || !json_is_integer(size) || json_integer_value(size) < 0) {
            snprintf(why, n, "members[%zu]: not a name, role, size and SHA-256", i);
            goto out;
        }
        for (size_t k = 0; k < mf->n; k++)
            if (strcmp(mf->m[k].name, name) == 0) {
                snprintf(why, n, "members: %.96s listed twice", name);
                goto out;
            }
        struct listed *l = &mf->m[mf->n++];
        snprintf(l->name, sizeof l->name, "%s", name);
        snprintf(l->role, sizeof l->role, "%s", role);
        snprintf(l->sha256, sizeof l->sha256, "%s", sha);
        l->size = (uint64_t)json_integer_value(size);
    }
out:
    json_decref(o);
}

static struct listed *listed(struct manifest *mf, const char *name)
{
    for (size_t i = 0; i < mf->n; i++)
        if (strcmp(mf->m[i].name, name) == 0)
            return &mf->m[i];
    return NULL;
}

/* Each member against the manifest, and each listed one present. */
static void check_members(struct eeb_package_check *c, const struct reader *rd, struct manifest *mf,
                          int manifest_ok)
{
    for (size_t i = 0; i < rd->n; i++) {
        const struct in_member *m = &rd->m[i];
        if (m->role == ROLE_MANIFEST)
            continue;
        struct listed *l = listed(mf, m->name);
        if (!manifest_ok) {
            step(c, m->name, 0, "%llu bytes, SHA-256 %.16s...: no manifest to compare with",
                 (unsigned long long)m->size, m->sha256);
            continue;
        }
        if (!l) {
            step(c, m->name, 0, "not in the manifest: added after packing");
            continue;
        }
        l->seen = 1;
        if (l->size != m->size || strcmp(l->sha256, m->sha256) != 0)
            step(c, m->name, 0,
                 "%llu bytes, SHA-256 %.16s... here; %llu bytes, %.16s... in the manifest: "
                 "changed after packing",
                 (unsigned long long)m->size, m->sha256, (unsigned long long)l->size, l->sha256);
        else
            step(c, m->name, 1, "%llu bytes, SHA-256 %.16s...: the manifest's",
                 (unsigned long long)m->size, m->sha256);
    }
    for (size_t i = 0; i < mf->n; i++)
        if (!mf->m[i].seen)
            step(c, mf->m[i].name, 0, "in the manifest, not in the package");
}

/* The server's record of an official run, taken back and carried beside
 * it: the manifest names it as the run's database holds it, its chain ends
 * in the head the manifest gives, and it holds the run's record (which
 * `eeb check` of the run verifies as it judges by it). */
static void server_record_step(struct eeb_package_check *c, struct eeb_rundb *db,
                               const struct recorded *r, const struct manifest *mf)
{
    struct eeb_chain_check chain;
    char err[512];
    if (!mf->server_run || mf->server_run != r->server_copy) {
        step(c, "server record", 0,
             "the manifest names %s the server's record; the run's database holds %s",
             mf->server_run ? "run" : "no run as", r->server_copy ? "one" : "none");
        return;
    }
    if (eeb_rundb_chain_check(db, r->server_copy, &chain, err, sizeof err)) {
        step(c, "server record", 0, "%s", err);
        return;
    }
    if (chain.broken || strcmp(r->server_uuid, mf->server_uuid) ||
        strcmp(chain.head, mf->server_head))
        step(c, "server record", 0, "run %lld: %s", (long long)r->server_copy,
             chain.broken ? chain.why : "not the server's record the manifest names");
    else
        step(c, "server record", 1,
             "run %lld, the server's record of it%s, chain head %.16s...: the manifest's",
             (long long)r->server_copy, r->server_meter ? " with its meter's log" : "", chain.head);
}

/* The packaged run against the manifest, then what needs its record: the
 * rules, the xclbin, the utilization report. */
static void check_run(struct eeb_package_check *c, const struct reader *rd,
                      const struct manifest *mf, int manifest_ok)
{
    struct eeb_rundb *db = NULL;
    struct recorded *r = calloc(1, sizeof *r);
    struct eeb_chain_check chain;
    char err[1024], why[700];
    if (!r) {
        step(c, "run", 0, "out of memory");
        return;
    }
    if (!c->db_path[0]) {
        step(c, "run", 0, "no run.db in the package");
        goto out;
    }
    if (eeb_rundb_open(c->db_path, EEB_RUNDB_READONLY, &db, err, sizeof err) ||
        read_recorded(db, manifest_ok ? mf->run : 0, r, err, sizeof err) ||
        eeb_rundb_chain_check(db, r->row.id, &chain, err, sizeof err)) {
        step(c, "run", 0, "%s", err);
        goto out;
    }
    c->run = r->row.id;
    const char *head = chain.links ? chain.head : "";
    if (!manifest_ok)
        step(c, "run", 0, "run %lld (%s), chain head %.16s...: no manifest to compare",
             (long long)r->row.id, r->row.uuid, head);
    else if (strcmp(r->row.uuid, mf->uuid) != 0)
        step(c, "run", 0, "run %lld is %s; the manifest names %s", (long long)r->row.id,
             r->row.uuid, mf->uuid);
    else if (strcmp(head, mf->head) != 0)
        step(c, "run", 0, "run %lld's chain head %.16s...; the manifest's %.16s...",
             (long long)r->row.id, head, mf->head);
    else
        step(c, "run", 1, "run %lld (%s), chain head %.16s...: the manifest's",
             (long long)r->row.id, r->row.uuid, head[0] ? head : "(none)");
    if (manifest_ok && (mf->server_run || r->server_copy))
        server_record_step(c, db, r, mf);

    const struct in_member *rules = member(rd, NAME_RULES);
    if (!rules)
        step(c, "rules", 0, "no rules.json in the package");
    else if (rules_compare(rules->data, rules->size, r, why, sizeof why), why[0])
        step(c, "rules", 0, "%s", why);
    else
        step(c, "rules", 1, "version %s, the %s weights and the P_max window: the run's",
             r->row.rules_version, r->row.task);

    const struct in_member *xclbin = NULL;
    for (size_t i = 0; i < rd->n; i++)
        if (rd->m[i].role == ROLE_XCLBIN)
            xclbin = &rd->m[i];
    const char *want = r->rec.xclbin_sha256;
    if (want[0] && !xclbin)
        step(c, "xclbin", 0, "the run recorded the xclbin %s (%.16s...); the package has none",
             r->xclbin_path, want);
    else if (!want[0] && xclbin)
        step(c, "xclbin", 0, "%s: the run recorded no xclbin", xclbin->name);
    else if (xclbin && strcmp(xclbin->sha256, want) != 0)
        step(c, "xclbin", 0, "%s: SHA-256 %.16s...; the run recorded %.16s...", xclbin->name,
             xclbin->sha256, want);
    else if (xclbin)
        step(c, "xclbin", 1, "%s: SHA-256 %.16s...: the run's recorded", xclbin->name,
             xclbin->sha256);

    /* the utilization report: the manifest says which report it is */
    const struct in_member *util = NULL;
    for (size_t i = 0; manifest_ok && i < mf->n; i++)
        if (strcmp(mf->m[i].role, "util_report") == 0)
            util = member(rd, mf->m[i].name);
    if (util_report_expected(r) && !util)
        step(c, "util", 0, "the run's M_u came from the report %s; the package has none",
             r->rec.util_source);
    else if (util && !util_report_expected(r))
        step(c, "util", 0, "%s: the run's M_u came from no report (%s)", util->name,
             r->rec.util_source);
    else if (util && (util_compare(util->data, util->size, util->name, r, why, sizeof why), why[0]))
        step(c, "util", 0, "%s", why);
    else if (util)
        step(c, "util", 1, "%s: the run's LUT, FF, BRAM and DSP fractions", util->name);
out:
    eeb_rundb_close(db);
    eeb_rundb_run_row_free(&r->row);
    free(r);
}

int eeb_package_check_open(const char *path, struct eeb_package_check **out, char *err,
                           size_t errlen)
{
    struct eeb_package_check *c = calloc(1, sizeof *c);
    struct reader *rd = calloc(1, sizeof *rd);
    struct manifest *mf = calloc(1, sizeof *mf);
    char db_path[600], why[700];
    int rc = EEB_OK;
    *out = NULL;
    if (!c || !rd || !mf) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = private_dir(c->dir, sizeof c->dir, err, errlen)))
        goto out;
    snprintf(db_path, sizeof db_path, "%s/%s", c->dir, NAME_DB);
    if ((rc = read_tar(path, rd, db_path, err, errlen)))
        goto out;
    if (member(rd, NAME_DB))
        snprintf(c->db_path, sizeof c->db_path, "%s", db_path);
    step(c, "archive", 1, "%zu members, each a regular file with a safe name", rd->n);

    const struct in_member *m = member(rd, NAME_MANIFEST);
    if (!m)
        snprintf(why, sizeof why, "no manifest.json in the package");
    else
        parse_manifest(m, mf, why, sizeof why);
    int manifest_ok = !why[0];
    if (manifest_ok)
        step(c, "manifest", 1, "eeb %s's package of run %lld (%s), %zu members listed", mf->eeb,
             (long long)mf->run, mf->uuid, mf->n);
    else
        step(c, "manifest", 0, "%s", why);
    check_members(c, rd, mf, manifest_ok);
    if (manifest_ok)
        for (size_t i = 0; i < mf->n; i++) {
            enum role role;
            const struct listed *l = &mf->m[i];
            const char *fault = name_fault(l->name, &role);
            int fits = !fault && ((role == ROLE_DB && !strcmp(l->role, "db")) ||
                                  (role == ROLE_SYSTEM && !strcmp(l->role, "system")) ||
                                  (role == ROLE_RULES && !strcmp(l->role, "rules")) ||
                                  (role == ROLE_XCLBIN && !strcmp(l->role, "xclbin")) ||
                                  (role == ROLE_REPORT && (!strcmp(l->role, "report") ||
                                                           !strcmp(l->role, "util_report"))));
            if (!fits)
                step(c, "manifest", 0, "%.96s: not a member of role %s", l->name, l->role);
        }

    const struct in_member *sys = member(rd, NAME_SYSTEM);
    char summary[600];
    if (!sys)
        step(c, "system", 0, "no system.json in the package");
    else if (eeb_package_system_check(sys->data, sys->size, NAME_SYSTEM, summary, sizeof summary,
                                      why, sizeof why))
        step(c, "system", 0, "%s", why);
    else
        step(c, "system", 1, "%s", summary);
    check_run(c, rd, mf, manifest_ok);
out:
    if (rc && c) {
        remove_dir(c->dir);
        free(c);
        c = NULL;
    }
    *out = c;
    if (rd)
        reader_free(rd);
    free(mf);
    return rc;
}

void eeb_package_check_free(struct eeb_package_check *c)
{
    if (!c)
        return;
    remove_dir(c->dir);
    free(c);
}
