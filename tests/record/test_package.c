/*
 * test_package.c - the submission package (record/package.c, `eeb pack`,
 * `eeb check --package`): a small local run with an xclbin and a
 * utilization report, packed and checked; a member changed after packing
 * (the system description, the database edited with SQL, an xclbin
 * swapped with its manifest entry rewritten to match) found and named;
 * system descriptions refused naming the field; hostile archives (a
 * `../evil` member, a symlink, an absolute path, a name given twice)
 * refused, with nothing left in the temporary directory.
 */
#include "record/eeb_package.h"
#include "scoring/eeb_score.h"
#include "tests/testlib.h"

#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <glob.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- tar files, read and written here with libarchive ---- */

#define MAX_MEMBERS 16

struct member {
    char name[128];
    char *data; /* owned */
    size_t len;
    const char *symlink;  /* a symbolic link to this, instead of data */
    const char *hardlink; /* a hard link to this member, instead of data */
};

/* Every member of the tar at path, into m (free each data). */
static size_t tar_read(const char *path, struct member *m)
{
    struct archive *a = archive_read_new();
    struct archive_entry *e;
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_filename(a, path, 1 << 16), ARCHIVE_OK, "%s",
                 archive_error_string(a));
    size_t n = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        cr_assert_lt(n, MAX_MEMBERS);
        snprintf(m[n].name, sizeof m[n].name, "%s", archive_entry_pathname(e));
        m[n].len = (size_t)archive_entry_size(e);
        m[n].data = malloc(m[n].len + 1);
        m[n].symlink = m[n].hardlink = NULL;
        cr_assert_eq(archive_read_data(a, m[n].data, m[n].len), (la_ssize_t)m[n].len);
        m[n].data[m[n].len] = '\0';
        n++;
    }
    archive_read_free(a);
    return n;
}

static void tar_write(const char *path, const struct member *m, size_t n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    cr_assert_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, m[i].name);
        archive_entry_set_perm(e, 0644);
        if (m[i].symlink) {
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, m[i].symlink);
            archive_entry_set_size(e, 0);
        } else if (m[i].hardlink) {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, m[i].hardlink);
            archive_entry_set_size(e, 0);
        } else {
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, (la_int64_t)m[i].len);
        }
        cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK, "%s", archive_error_string(a));
        if (!m[i].symlink && !m[i].hardlink && m[i].len)
            cr_assert_eq(archive_write_data(a, m[i].data, m[i].len), (la_ssize_t)m[i].len);
        archive_entry_free(e);
    }
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

static struct member *find(struct member *m, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(m[i].name, name) == 0)
            return &m[i];
    cr_assert_fail("no member %s", name);
    return NULL;
}

static void free_members(struct member *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(m[i].data);
}

/* ---- a packed run ---- */

static const char system_json[] =
    "{\n"
    "  \"board\": {\"vendor\": \"AMD Xilinx\", \"model\": \"Kria KV260\",\n"
    "            \"part\": \"xck26-sfvc784-2LV-c\"},\n"
    "  \"host\": {\"cpu\": \"4x Cortex-A53\", \"memory_gib\": 4, \"os\": \"Ubuntu 22.04\"},\n"
    "  \"meter\": {\"kind\": \"ptd\", \"model\": \"Yokogawa WT310E\", \"serial\": \"C2QB12345\",\n"
    "            \"calibration_date\": \"2025-01-10\", \"uncertainty_pct\": 0.2},\n"
    "  \"wiring\": {\"rail\": \"12 V DC input\",\n"
    "             \"tap\": \"12 V input at the board's barrel jack\"},\n"
    "  \"ambient_c\": 23.5,\n"
    "  \"notes\": \"Fan at full speed.\"\n"
    "}\n";

struct packed {
    char dir[256], db[300], system[300], xclbin[300], util[300], timing[300], pkg[300];
    char uuid[37];
};

static void write_text(const char *path, const char *text)
{
    test_write_file(path, text, strlen(text));
}

static void expect_status(const char *const *args, int want, struct test_run *out)
{
    struct test_run r = test_eeb(args);
    cr_expect_eq(r.status, want, "eeb %s %s: exit %d, not %d\n%s%s", args[0], args[1], r.status,
                 want, r.out, r.err);
    if (out)
        *out = r;
    else
        test_run_free(&r);
}

/* XRT's noop shim (Debian's core and noop libraries linked into a
 * directory's lib/, as make demo-xrt does): the xrt backend, and so a run
 * with an xclbin, without a board. */
static void noop_shim(const char *dir)
{
    glob_t g;
    static const char *const libs[] = {"libxrt_core.so.2", "libxrt_noop.so.2"};
    test_mkdirs(dir, "noop/lib");
    for (int i = 0; i < 2; i++) {
        char pattern[64], to[400];
        snprintf(pattern, sizeof pattern, "/usr/lib/*/%s", libs[i]);
        if (glob(pattern, 0, NULL, &g) != 0)
            cr_skip_test("no %s (libxrt-dev): no xrt backend to run an xclbin", libs[i]);
        snprintf(to, sizeof to, "%s/noop/lib/%s", dir, libs[i]);
        cr_assert_eq(symlink(g.gl_pathv[0], to), 0, "%s", to);
        globfree(&g);
    }
    char xrt[300];
    snprintf(xrt, sizeof xrt, "%s/noop", dir);
    setenv("XILINX_XRT", xrt, 1);
    setenv("XCL_EMULATION_MODE", "noop", 1);
}

/* runs runs of a small cls task on the xrt backend (XRT's noop shim, the
 * modeled clock: the same figures on any machine) with an xclbin and a
 * Vivado utilization report, and the system description; TMPDIR is the
 * scratch directory, so whatever eeb leaves there is seen. */
static void run(struct packed *p, int runs)
{
    snprintf(p->dir, sizeof p->dir, "%s", test_tmpdir());
    setenv("TMPDIR", p->dir, 1);
    noop_shim(p->dir);
    struct test_cls_run in = test_cls_run_inputs(p->dir, 64, 16);
    snprintf(p->db, sizeof p->db, "%s", in.db);
    snprintf(p->system, sizeof p->system, "%s/system.json", p->dir);
    snprintf(p->xclbin, sizeof p->xclbin, "%s/fx.xclbin", p->dir);
    snprintf(p->util, sizeof p->util, "%s/zcu104_routed.rpt", p->dir);
    snprintf(p->timing, sizeof p->timing, "%s/timing summary.rpt", p->dir);
    snprintf(p->pkg, sizeof p->pkg, "%s/sub.tar", p->dir);
    write_text(p->system, system_json);
    write_text(p->timing, "Design Timing Summary\nWNS(ns) 0.123\n");
    size_t len;
    char *rpt = test_fixture("util/zcu102_placed.rpt", &len);
    test_write_file(p->util, rpt, len);
    free(rpt);
    expect_status((const char *[]){"xclbin", "build", "-o", p->xclbin, "--design",
                                   "device=zcu104,pes=4,macs=16,clock_mhz=250,ddr=1", NULL},
                  0, NULL);
    const char *args[] = {"run",   "--task",    "cls",    "--finetune", in.ft,     "--test",
                          in.test, "--model",   in.model, "--db",       p->db,     "--epochs",
                          "2",     "--backend", "xrt",    "--xclbin",   p->xclbin, "--util",
                          p->util, "-q",        NULL};
    for (int i = 0; i < runs; i++)
        expect_status(args, 0, NULL);
    char *uuid;
    cr_assert_eq(test_sql_text(p->db, "SELECT uuid FROM runs ORDER BY id DESC LIMIT 1", &uuid), 0);
    snprintf(p->uuid, sizeof p->uuid, "%s", uuid);
    free(uuid);
}

/* The last of runs runs packed, with the timing report. */
static void pack(struct packed *p, int runs)
{
    run(p, runs);
    char id[8];
    snprintf(id, sizeof id, "%d", runs);
    expect_status((const char *[]){"pack", p->db, "--run", id, "--system", p->system, "-o", p->pkg,
                                   "--report", p->timing, NULL},
                  0, NULL);
}

/* eeb check --package on the package at path: its exit status and output. */
static struct test_run check(const char *path, int want)
{
    struct test_run r;
    expect_status((const char *[]){"check", "--package", path, NULL}, want, &r);
    return r;
}

/* ---- the tests ---- */

Test(package, a_packed_run_holds_that_run_alone_and_checks, .timeout = 120)
{
    struct packed p;
    pack(&p, 2); /* the second: the copy must drop the first */
    struct member m[MAX_MEMBERS];
    size_t n = tar_read(p.pkg, m);
    /* the manifest first, then the members it lists, each by its role */
    cr_assert_eq(n, 7);
    cr_expect_str_eq(m[0].name, "manifest.json");
    find(m, n, "xclbin/fx.xclbin");
    find(m, n, "reports/zcu104_routed.rpt");
    find(m, n, "reports/timing_summary.rpt");
    cr_expect_str_eq(find(m, n, "system.json")->data, system_json);
    json_t *mf = json_loads(m[0].data, 0, NULL);
    cr_assert_not_null(mf);
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(mf, "run"), "uuid")),
                     p.uuid);
    cr_expect_eq(json_array_size(json_object_get(mf, "members")), 6);
    /* the system under test, as the run's configuration names it */
    json_t *sys = json_object_get(json_object_get(mf, "run"), "system");
    cr_expect_str_eq(json_string_value(json_object_get(sys, "name")), "xrt");
    cr_expect_str_eq(json_string_value(json_object_get(sys, "kind")), "builtin");
    cr_expect_null(json_object_get(sys, "version"), "eeb's own backends give none: left out");
    /* the copy holds run 2 alone, with all its records */
    char copy[400];
    snprintf(copy, sizeof copy, "%s/copy.db", p.dir);
    const struct member *db = find(m, n, "run.db");
    test_write_file(copy, db->data, db->len);
    cr_expect_eq(test_sql_int(copy, "SELECT count(*) FROM runs"), 1);
    cr_expect_eq(test_sql_int(copy, "SELECT id FROM runs"), 2);
    cr_expect_eq(test_sql_int(copy, "SELECT count(*) FROM events WHERE run_id <> 2"), 0);
    cr_expect_eq(test_sql_int(copy, "SELECT count(*) FROM events"),
                 test_sql_int(p.db, "SELECT count(*) FROM events WHERE run_id = 2"));
    cr_expect_eq(test_sql_int(copy, "SELECT count(*) FROM predictions"),
                 test_sql_int(p.db, "SELECT count(*) FROM predictions WHERE run_id = 2"));
    json_decref(mf);
    free_members(m, n);

    struct test_run r = check(p.pkg, 0);
    assert_has(r.out, "pass  manifest");
    assert_has(r.out, "pass  run.db");
    assert_has(r.out, "pass  xclbin ");
    assert_has(r.out, "pass  util ");
    assert_has(r.out, "pass  rules ");
    assert_has(r.out, "pass  system ");
    assert_has(r.out, "Kria KV260");
    assert_has(r.out, "package: all 13 checks pass");
    assert_has(r.out, "run 2 (");
    assert_has(r.out, "sub.tar:run.db");
    assert_has(r.out, "verdict: pass");
    cr_expect(!strstr(r.out, "FAIL"), "%s", r.out);
    test_run_free(&r);
    /* --json: the checks and the run's figures, the same verdict */
    json_t *j = test_eeb_json((const char *[]){"check", "--package", p.pkg, "--json", NULL}, 0);
    cr_expect(json_is_true(json_object_get(j, "pass")));
    cr_expect_str_eq(json_string_value(json_object_get(json_object_get(j, "run"), "verdict")),
                     "pass");
    json_decref(j);
    test_expect_none_named(p.dir, "eeb-package-");
}

Test(package, a_member_changed_after_packing_fails_naming_it, .timeout = 120)
{
    struct packed p;
    pack(&p, 1);
    struct member m[MAX_MEMBERS];
    size_t n = tar_read(p.pkg, m);
    char edited[400];
    snprintf(edited, sizeof edited, "%s/edited.tar", p.dir);

    /* one byte of the system description */
    struct member *sys = find(m, n, "system.json");
    char *at = strstr(sys->data, "23.5");
    cr_assert_not_null(at);
    *at = '1';
    tar_write(edited, m, n);
    struct test_run r = check(edited, 4);
    assert_has(r.out, "FAIL  system.json");
    assert_has(r.out, "changed after packing");
    assert_has(r.out, "pass  run.db");
    assert_has(r.out, "package: 1 of 13 checks FAILED");
    test_run_free(&r);
    *at = '2';

    /* the database, its samples lowered with SQL */
    char copy[400];
    snprintf(copy, sizeof copy, "%s/copy.db", p.dir);
    struct member *db = find(m, n, "run.db");
    test_write_file(copy, db->data, db->len);
    test_sql_exec(copy, "UPDATE samples SET watts = watts * 0.5");
    free(db->data);
    db->data = test_read_file(copy, &db->len);
    tar_write(edited, m, n);
    r = check(edited, 4);
    assert_has(r.out, "FAIL  run.db");
    assert_has(r.out, "changed after packing");
    assert_has(r.out, "pass  system.json");
    assert_has(r.out, "chain    BREAKS");
    test_run_free(&r);
    free_members(m, n);
    test_expect_none_named(p.dir, "eeb-package-");
}

/* A forger who rewrites the manifest to match gets past the hashes, not
 * past the run's own record of its xclbin. */
Test(package, an_xclbin_swapped_with_its_manifest_entry_is_not_the_runs, .timeout = 120)
{
    struct packed p;
    pack(&p, 1);
    struct member m[MAX_MEMBERS];
    size_t n = tar_read(p.pkg, m);
    char other[400], edited[400], sha[EEB_SHA256_HEX], old[EEB_SHA256_HEX];
    snprintf(other, sizeof other, "%s/other.xclbin", p.dir);
    snprintf(edited, sizeof edited, "%s/edited.tar", p.dir);
    expect_status((const char *[]){"xclbin", "build", "-o", other, "--design",
                                   "device=zcu104,pes=8,macs=16,clock_mhz=250,ddr=1", NULL},
                  0, NULL);
    struct member *x = find(m, n, "xclbin/fx.xclbin");
    eeb_sha256(x->data, x->len, old);
    free(x->data);
    x->data = test_read_file(other, &x->len);
    eeb_sha256(x->data, x->len, sha);
    /* the manifest's entry for it: its SHA-256 and size */
    json_t *mf = json_loads(m[0].data, 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(mf, "members"), i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), x->name) == 0) {
            json_object_set_new(e, "sha256", json_string(sha));
            json_object_set_new(e, "size", json_integer((json_int_t)x->len));
        }
    }
    free(m[0].data);
    m[0].data = json_dumps(mf, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    m[0].len = strlen(m[0].data);
    json_decref(mf);
    tar_write(edited, m, n);
    struct test_run r = check(edited, 4);
    assert_has(r.out, "pass  xclbin/fx.xclbin");
    assert_has(r.out, "FAIL  xclbin ");
    assert_has(r.out, "the run recorded");
    char want[32];
    snprintf(want, sizeof want, "%.16s", old);
    assert_has(r.out, want);
    test_run_free(&r);
    free_members(m, n);
}

Test(package, pack_checks_what_it_is_given_against_the_run, .timeout = 120)
{
    struct packed p;
    run(&p, 1);
    struct test_run r;
    /* another xclbin than the run's */
    char other[400], rpt[400];
    snprintf(other, sizeof other, "%s/other.xclbin", p.dir);
    expect_status((const char *[]){"xclbin", "build", "-o", other, NULL}, 0, NULL);
    expect_status(
        (const char *[]){"pack", p.db, "--system", p.system, "-o", p.pkg, "--xclbin", other, NULL},
        1, &r);
    assert_has(r.err, "not the xclbin run 1 recorded");
    test_run_free(&r);
    /* a report by the recorded name with other figures */
    snprintf(rpt, sizeof rpt, "%s/sub", p.dir);
    test_mkdirs(p.dir, "sub");
    snprintf(rpt, sizeof rpt, "%s/sub/zcu104_routed.rpt", p.dir);
    size_t len;
    char *text = test_fixture("util/kcu1500_routed.rpt", &len);
    test_write_file(rpt, text, len);
    free(text);
    expect_status(
        (const char *[]){"pack", p.db, "--system", p.system, "-o", p.pkg, "--report", rpt, NULL}, 1,
        &r);
    assert_has(r.err, "not the utilization report of run 1: ");
    assert_has(r.err, "zcu104_routed.rpt: LUT ");
    test_run_free(&r);
    /* rules of another window than the run's */
    char rules[400];
    snprintf(rules, sizeof rules, "%s/rules.json", p.dir);
    char *other_rules = test_replace(eeb_score_rules_v1, "\"window_s\": 1.0", "\"window_s\": 2.0");
    write_text(rules, other_rules);
    free(other_rules);
    expect_status(
        (const char *[]){"pack", p.db, "--system", p.system, "-o", p.pkg, "--rules", rules, NULL},
        1, &r);
    assert_has(r.err, "not the rules run 1 was judged by: P_max window 2 s; the run recorded 1 s");
    test_run_free(&r);
    /* the run's report moved away and not given */
    cr_assert_eq(remove(p.util), 0);
    expect_status((const char *[]){"pack", p.db, "--system", p.system, "-o", p.pkg, NULL}, 1, &r);
    assert_has(r.err, "give it (--report FILE)");
    test_run_free(&r);
    cr_expect_null(test_read_file(p.pkg, &len), "a refused package is not written");
    test_expect_none_named(p.dir, "eeb-package-");
    test_expect_none_named(p.dir, ".tmp-");
}

Test(package, pack_refuses_a_system_description_naming_the_field, .timeout = 120)
{
    struct packed p;
    run(&p, 1);
    static const struct {
        const char *from, *to, *message;
    } cases[] = {
        {"\"serial\"", "\"serail\"",
         "system.json: meter.serail: unknown field (did you mean serial?)"},
        {"\"meter\"", "\"meters\"", "system.json: meters: unknown field (did you mean meter?)"},
        {"\"ambient_c\": 23.5,", "\"ambient_c\": 23.5, \"colour\": 1,",
         "system.json: colour: unknown field (expected board, host, meter, wiring, ambient_c, "
         "notes)"},
        {"\"memory_gib\": 4", "\"memory_gib\": \"4\"",
         "host.memory_gib: expected a number, got a string"},
        {"\"ptd\"", "\"dmm\"", "meter.kind: 'dmm' (expected ptd, scpi, hwmon, rapl or other)"},
        {"2025-01-10", "2025-02-30", "meter.calibration_date: '2025-02-30' (expected a date"},
        {"\"uncertainty_pct\": 0.2", "\"uncertainty_pct\": 0", "meter.uncertainty_pct: 0"},
        {"\"part\": \"xck26-sfvc784-2LV-c\"", "\"part\": \"\"", "board.part: empty"},
        {"{\"rail\"", "{\"tap\": \"x\", \"tap\": \"y\", \"rail\"", "duplicate object key"},
    };
    char path[400];
    snprintf(path, sizeof path, "%s/system.json", p.dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *text = test_replace(system_json, cases[i].from, cases[i].to);
        write_text(path, text);
        free(text);
        struct test_run r;
        expect_status((const char *[]){"pack", p.db, "--system", path, "-o", p.pkg, NULL}, 1, &r);
        assert_has(r.err, cases[i].message);
        test_run_free(&r);
    }
    /* a missing meter */
    json_t *o = json_loads(system_json, 0, NULL);
    json_object_del(o, "meter");
    json_dump_file(o, path, 0);
    struct test_run r;
    expect_status((const char *[]){"pack", p.db, "--system", path, "-o", p.pkg, NULL}, 1, &r);
    assert_has(r.err, "system.json: meter: missing");
    test_run_free(&r);
    /* notes: 1000 characters (of two bytes each) pass, 1001 do not */
    char err[512], notes[2100];
    for (int k = 0; k < 1001; k++)
        memcpy(notes + 2 * k, "\xc3\xa9", 2); /* é */
    notes[2002] = '\0';
    json_decref(o);
    o = json_loads(system_json, 0, NULL);
    json_object_set_new(o, "notes", json_string(notes));
    char *text = json_dumps(o, 0);
    cr_expect_eq(eeb_package_system_check(text, strlen(text), "s.json", NULL, 0, err, sizeof err),
                 EEB_EINVAL);
    assert_has(err, "s.json: notes: 1001 characters (at most 1000)");
    free(text);
    notes[2000] = '\0';
    json_object_set_new(o, "notes", json_string(notes));
    text = json_dumps(o, 0);
    cr_expect_eq(eeb_package_system_check(text, strlen(text), "s.json", NULL, 0, err, sizeof err),
                 EEB_OK, "%s", err);
    free(text);
    json_decref(o);
}

/* An archive made here with one hostile member among good ones: refused
 * naming it, exit 1, nothing extracted left behind. */
static void expect_refused(const char *dir, struct member *m, size_t n, const char *named,
                           const char *why)
{
    char path[400];
    snprintf(path, sizeof path, "%s/hostile.tar", dir);
    tar_write(path, m, n);
    struct test_run r = check(path, 1);
    assert_has(r.err, named);
    assert_has(r.err, why);
    cr_expect_eq(r.out[0], '\0', "%s", r.out);
    test_run_free(&r);
    test_expect_none_named(dir, "eeb-package-");
}

Test(package, check_refuses_a_hostile_archive)
{
    const char *dir = test_tmpdir();
    setenv("TMPDIR", dir, 1);
    char manifest[] = "{}", sys[] = "{}";
    struct member m[3] = {{.name = "manifest.json", .data = manifest, .len = 2},
                          {.name = "system.json", .data = sys, .len = 2}};
    m[2] = (struct member){.name = "../evil", .data = sys, .len = 2};
    expect_refused(dir, m, 3, "'../evil'", "climbs out of the package (..)");
    m[2] = (struct member){.name = "reports/../../evil", .data = sys, .len = 2};
    expect_refused(dir, m, 3, "'reports/../../evil'", "(..)");
    m[2] = (struct member){.name = "/etc/cron.d/evil", .data = sys, .len = 2};
    expect_refused(dir, m, 3, "'/etc/cron.d/evil'", "an absolute path");
    m[2] = (struct member){.name = "run.db", .symlink = "/etc/passwd"};
    expect_refused(dir, m, 3, "'run.db'", "a symbolic link");
    m[2] = (struct member){.name = "rules.json", .hardlink = "system.json"};
    expect_refused(dir, m, 3, "'rules.json'", "a hard link");
    m[2] = (struct member){.name = "system.json", .data = sys, .len = 2};
    expect_refused(dir, m, 3, "'system.json'", "given twice");
    m[2] = (struct member){.name = "evil.sh", .data = sys, .len = 2};
    expect_refused(dir, m, 3, "'evil.sh'", "not a member of an eeb package");
    /* not a tar at all */
    char path[400];
    snprintf(path, sizeof path, "%s/not.tar", dir);
    test_write_file(path, "hello, world\n", 13);
    struct test_run r = check(path, 1);
    assert_has(r.err, "not a tar file");
    test_run_free(&r);
    test_expect_none_named(dir, "eeb-package-");
}
