/*
 * package_check.c - checking a submission package (eeb_package_check_open,
 * docs/package.md): reading the tar as hostile input, one member at a
 * time, its names and sizes refused before bytes are kept; then the
 * steps: the manifest, the members against it, and the run against what
 * it recorded.
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

/* What a member is, by its name (the layout is fixed: eeb_package.h). */
enum role { ROLE_MANIFEST, ROLE_DB, ROLE_SYSTEM, ROLE_RULES, ROLE_XCLBIN, ROLE_REPORT };

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
    package_sha256_hex(ctx, m->sha256);
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
                               const struct package_recorded *r, const struct manifest *mf)
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
    struct package_recorded *r = calloc(1, sizeof *r);
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
        package_read_recorded(db, manifest_ok ? mf->run : 0, r, err, sizeof err) ||
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
    else if (package_rules_compare(rules->data, rules->size, r, why, sizeof why), why[0])
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
    if (package_util_report_expected(r) && !util)
        step(c, "util", 0, "the run's M_u came from the report %s; the package has none",
             r->rec.util_source);
    else if (util && !package_util_report_expected(r))
        step(c, "util", 0, "%s: the run's M_u came from no report (%s)", util->name,
             r->rec.util_source);
    else if (util &&
             (package_util_report_compare(util->data, util->size, util->name, r, why, sizeof why),
              why[0]))
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
    if ((rc = package_private_dir(c->dir, sizeof c->dir, err, errlen)))
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
        package_remove_private_dir(c->dir);
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
    package_remove_private_dir(c->dir);
    free(c);
}
