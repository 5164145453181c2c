/*
 * package.c - what the package's writing (package_write.c) and checking
 * (package_check.c) share (package_int.h): hashing, the private
 * directory, and what the run recorded, with the rules and utilization
 * report compared against it.  The system description is system_desc.c's.
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

/* ---- hashing and the private directory ---- */

void package_sha256_hex(EVP_MD_CTX *ctx, char out[EEB_SHA256_HEX])
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
int package_private_dir(char *dir, size_t n, char *err, size_t errlen)
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
void package_remove_private_dir(char *dir)
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

static void copy_at(const json_t *o, const char *obj, const char *key, char *out, size_t n)
{
    snprintf(out, n, "%s", json_string_value(json_object_get(json_object_get(o, obj), key)) ?: "");
}

/* Run id (0: the latest) of db, its stored configuration read. */
int package_read_recorded(struct eeb_rundb *db, int64_t run, struct package_recorded *r, char *err,
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
int package_util_report_expected(const struct package_recorded *r)
{
    const char *src = r->rec.util_source;
    if (strcmp(r->util_kind, "report") != 0 || !src[0] || strncmp(src, "modeled", 7) == 0)
        return 0;
    size_t n = strlen(r->xclbin_path);
    return !(n && strncmp(src, r->xclbin_path, n) == 0 && strncmp(src + n, " (", 2) == 0);
}

/* The report text's four fractions against the run's; "" or why not. */
void package_util_report_compare(const char *text, size_t len, const char *name,
                                 const struct package_recorded *r, char *why, size_t n)
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
void package_rules_compare(const char *text, size_t len, const struct package_recorded *r,
                           char *why, size_t n)
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
