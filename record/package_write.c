/*
 * package_write.c - writing the submission package (eeb_package_write,
 * docs/package.md): the run copied out of its database, its xclbin,
 * reports and rules as recorded, the manifest, and the tar (libarchive).
 */
#include "record/package_int.h"
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

/* ---- members ---- */

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
                       const struct package_recorded *r, char *err, size_t errlen)
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
                        const struct package_recorded *r, char *err, size_t errlen)
{
    int want_util = package_util_report_expected(r), found = 0, rc = EEB_OK;
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
            package_util_report_compare(text, len, path, r, why, sizeof why);
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
static int pack_rules(struct writer *w, const char *given, const struct package_recorded *r,
                      char *err, size_t errlen)
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
    package_rules_compare(text, len, r, why, sizeof why);
    if (why[0]) {
        free(text);
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: not the rules run %lld was judged by: %s%s",
                        file ? file : "the built-in rules", (long long)r->row.id, why,
                        given ? "" : " (give its rules file: --rules FILE)");
    }
    add_data(w, NAME_RULES, "rules", text, len);
    return EEB_OK;
}

static json_t *manifest_json(const struct writer *w, const struct package_recorded *r,
                             const char *head, const char *server_head)
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
        if (sys && r->rec.sut_version[0])
            json_object_set_new(sys, "version", json_string(r->rec.sut_version));
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
    package_sha256_hex(ctx, sha);
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
    struct package_recorded *r = calloc(1, sizeof *r);
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
        (rc = package_read_recorded(db, spec->run, r, err, errlen)))
        goto out;
    if (strcmp(r->row.state, "done") != 0 && strcmp(r->row.state, "failed") != 0) {
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: run %lld has not finished (state %s): pack a finished run", spec->db,
                      (long long)r->row.id, r->row.state);
        goto out;
    }
    if ((rc = package_private_dir(dir, sizeof dir, err, errlen)))
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
    package_remove_private_dir(dir);
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
