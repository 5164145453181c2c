/*
 * qualify.c - a board's own power sensor judged against a reference meter
 * (eeb_qualify.h), after MLPerf Training's power rules: the same rail
 * measured by both at once, at idle and under two loads, in windows that
 * do not overlap, and per phase the Olympic means of the window means
 * within 5 % of each other.
 *
 * One loop reads both sources at the same instants and stamps both with
 * that instant, so neither meter's clock can put its window elsewhere.
 * Live, the instants are CLOCK_MONOTONIC deadlines slept to, each phase
 * with its own start (after its load is running).  Replayed, they are a
 * simulated clock from 0 through the three phases back to back, and nothing
 * sleeps: replay: plays its trace at whatever times it is read at, so the
 * code that judges a live sensor is the code the tests run in
 * milliseconds.  A window's mean is its energy over its length
 * (eeb_power_energy, trapezoidal), judged valid as a run's power is.
 *
 * Sections: configuration; loads; windows; the phases; JSON; the table.
 */
#include "eeb_qualify.h"
#include "power_int.h"
#include "rundb/eeb_rundb_tables.h"
#include "scoring/eeb_score.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static const char *const phase_names[EEB_QUALIFY_PHASES] = {"idle", "load 1", "load 2"};
static const char *const roles[2] = {"reference", "candidate"};

/* ---- configuration ---- */

void eeb_power_qualify_default(struct eeb_qualify_config *cfg)
{
    *cfg = (struct eeb_qualify_config){
        .windows = 5, .window_s = 60, .rate_hz = 10, .tolerance = EEB_QUALIFY_TOLERANCE};
}

static int replayed(const char *uri)
{
    return eeb_power_uri_provenance(uri) == EEB_DECLARED;
}

static int check_config(const struct eeb_qualify_config *c, char *err, size_t errlen)
{
    if (!c->reference || !c->candidate)
        return eeb_errf(err, errlen, EEB_EINVAL, "qualify: a reference and a candidate source");
    if (c->windows < 3 || c->windows > EEB_QUALIFY_MAX_WINDOWS)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "qualify: %d windows a phase (3..%d: the Olympic mean drops two)",
                        c->windows, EEB_QUALIFY_MAX_WINDOWS);
    if (!(c->rate_hz >= 1 && c->rate_hz <= 100))
        return eeb_errf(err, errlen, EEB_EINVAL, "qualify: a rate of %g Hz (1..100)", c->rate_hz);
    if (!(c->window_s <= 3600 && c->window_s * c->rate_hz >= 2))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "qualify: windows of %g s (up to 3600 s, and two readings at least: "
                        "%g s at %g Hz)",
                        c->window_s, 2 / c->rate_hz, c->rate_hz);
    if (!(c->tolerance > 0 && c->tolerance < 1))
        return eeb_errf(err, errlen, EEB_EINVAL, "qualify: a tolerance of %g (0..1)", c->tolerance);
    int r = replayed(c->reference), k = replayed(c->candidate);
    if (r != k)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "qualify: the %s %s is a replayed trace and the %s %s is not: both are "
                        "replayed (read back to back on a simulated clock) or both are live",
                        r ? "reference" : "candidate", r ? c->reference : c->candidate,
                        r ? "candidate" : "reference", r ? c->candidate : c->reference);
    if (r && (c->load[0] || c->load[1]))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "qualify: loads run under live meters; replayed traces hold their "
                        "phases already (idle, load 1, load 2, back to back)");
    return EEB_OK;
}

/* ---- loads ---- */

struct load {
    const char *cmd; /* NULL: none */
    const char *name;
    pid_t pid; /* 0: not running */
};

/* Starts l's command in a process group of its own (so that stopping it
 * stops what it started), its stdout on stderr (stdout is the verdict's). */
static int load_start(struct load *l, char *err, size_t errlen)
{
    if (!l->cmd)
        return EEB_OK;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    char *argv[] = {"sh", "-c", (char *)l->cmd, NULL};
    int rc = posix_spawn(&l->pid, "/bin/sh", &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        l->pid = 0;
        return eeb_errf(err, errlen, EEB_EIO, "qualify: %s ('%s') does not start: %s", l->name,
                        l->cmd, strerror(rc));
    }
    return EEB_OK;
}

/* EEB_EDEVICE if l's command has ended: its phase would measure no load. */
static int load_running(struct load *l, char *err, size_t errlen)
{
    int status;
    if (!l->pid || waitpid(l->pid, &status, WNOHANG) != l->pid)
        return EEB_OK;
    l->pid = 0;
    return eeb_errf(err, errlen, EEB_EDEVICE,
                    "qualify: %s ('%s') ended (%s %d) before its phase did; a load must run "
                    "through its phase",
                    l->name, l->cmd, WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

/* SIGTERM to l's process group, SIGKILL if it is still there 5 s later. */
static void load_stop(struct load *l)
{
    if (!l->pid)
        return;
    kill(-l->pid, SIGTERM);
    for (int i = 0; i < 500 && waitpid(l->pid, NULL, WNOHANG) == 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (kill(l->pid, 0) == 0) {
        kill(-l->pid, SIGKILL);
        waitpid(l->pid, NULL, 0);
    }
    kill(-l->pid, SIGKILL); /* what it left in its group */
    l->pid = 0;
}

/* ---- windows ---- */

struct meter {
    struct eeb_power_source *src;
    struct eeb_sample *buf; /* the window's readings, and the one before its start */
    size_t n, cap;
};

struct qualify {
    const struct eeb_qualify_config *cfg;
    struct eeb_qualify_result *out;
    struct meter m[2]; /* reference, candidate */
    int64_t interval_ns, window_ns;
    struct load *load; /* the phase's, or NULL */
};

static int stopped(const struct qualify *q)
{
    return q->cfg->stop && *q->cfg->stop;
}

/* Reads both sources for instant t (window w, from 0 over all phases). */
static int read_both(struct qualify *q, int64_t t, int w, char *err, size_t errlen)
{
    for (int i = 0; i < 2; i++) {
        struct meter *m = &q->m[i];
        struct eeb_sample s = {.t_mono_ns = t, .t_utc_ns = eeb_utc_ns(), .volts = NAN, .amps = NAN};
        char why[512];
        int rc = m->src->ops->read(m->src, t, &s, why, sizeof why);
        if (rc == EEB_ENODATA) /* a replayed gap: no reading, as the meter had none */
            continue;
        if (rc != EEB_OK)
            return eeb_errf(err, errlen, rc,
                            "qualify: %s, window %d of %d: the %s's read failed (a qualification "
                            "needs every reading): %s",
                            phase_names[w / q->cfg->windows], w % q->cfg->windows + 1,
                            q->cfg->windows, roles[i], why);
        s.t_mono_ns = t;
        if (m->n == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 256;
            struct eeb_sample *b = realloc(m->buf, cap * sizeof *b);
            if (!b)
                return eeb_errf(err, errlen, EEB_ENOMEM, "qualify: out of memory");
            m->buf = b, m->cap = cap;
        }
        m->buf[m->n++] = s;
    }
    return EEB_OK;
}

/* Window w, [t0, t1]: each source's mean power into the result, then the
 * readings kept from the last one at or before t1 (the next window's
 * start). */
static int close_window(struct qualify *q, int w, int64_t t0, int64_t t1, char *err, size_t errlen)
{
    struct eeb_qualify_phase *p = &q->out->phase[w / q->cfg->windows];
    double *mean[2] = {&p->ref_w[w % q->cfg->windows], &p->cand_w[w % q->cfg->windows]};
    struct eeb_power_validity v;
    eeb_power_validity_default(&v);
    for (int i = 0; i < 2; i++) {
        struct meter *m = &q->m[i];
        struct eeb_energy e;
        char why[512] = "";
        int rc = m->n ? eeb_power_energy(m->buf, m->n, t0, t1, (double)q->interval_ns / 1e9, &e,
                                         why, sizeof why)
                      : eeb_errf(why, sizeof why, EEB_EINVAL, "no readings");
        if (rc == EEB_OK && !eeb_power_valid(&e, 0, 0, &v, why, sizeof why))
            rc = EEB_EDEVICE;
        if (rc != EEB_OK)
            return eeb_errf(err, errlen, EEB_EDEVICE,
                            "qualify: %s, window %d of %d: the %s %s leaves the window without "
                            "readings enough: %s",
                            phase_names[w / q->cfg->windows], w % q->cfg->windows + 1,
                            q->cfg->windows, roles[i], m->src->uri, why);
        *mean[i] = e.mean_w;
        size_t keep = m->n - 1;
        while (keep > 0 && m->buf[keep].t_mono_ns > t1)
            keep--;
        memmove(m->buf, m->buf + keep, (m->n - keep) * sizeof *m->buf);
        m->n -= keep;
    }
    return q->load ? load_running(q->load, err, errlen) : EEB_OK;
}

/* Sleeps to t on CLOCK_MONOTONIC; 0, or 1 when stopped. */
static int sleep_until(const struct qualify *q, int64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000), (long)(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (stopped(q))
            return 1;
    return stopped(q);
}

/* Windows w0 .. w0 + nw - 1, back to back from t0: live, on deadlines (a
 * deadline a read overran is skipped, and leaves a gap), else on the
 * simulated clock. */
static int run_windows(struct qualify *q, int live, int64_t t0, int w0, int nw, char *err,
                       size_t errlen)
{
    q->m[0].n = q->m[1].n = 0;
    int w = w0;
    int64_t start = t0, end = t0 + q->window_ns;
    for (int64_t k = 0; w < w0 + nw; k++) {
        int64_t t = t0 + k * q->interval_ns;
        if (live && sleep_until(q, t))
            return eeb_errf(err, errlen, EEB_ENODATA, "qualify: stopped in %s; no verdict",
                            phase_names[w / q->cfg->windows]);
        int rc = live && eeb_mono_ns() > t + q->interval_ns ? EEB_OK /* missed */
                                                            : read_both(q, t, w, err, errlen);
        for (; rc == EEB_OK && t >= end && w < w0 + nw; w++) {
            rc = close_window(q, w, start, end, err, errlen);
            start = end, end += q->window_ns;
        }
        if (rc != EEB_OK)
            return rc;
    }
    return EEB_OK;
}

/* ---- the phases ---- */

/* Each phase's Olympic means and their difference; the verdict. */
static int judge(const struct eeb_qualify_config *c, struct eeb_qualify_result *r, char *err,
                 size_t errlen)
{
    r->pass = 1;
    for (int p = 0; p < EEB_QUALIFY_PHASES; p++) {
        struct eeb_qualify_phase *ph = &r->phase[p];
        struct eeb_aggregate ref, cand;
        int rc = eeb_score_aggregate(ph->ref_w, (size_t)c->windows, &ref, err, errlen);
        if (rc == EEB_OK)
            rc = eeb_score_aggregate(ph->cand_w, (size_t)c->windows, &cand, err, errlen);
        if (rc != EEB_OK)
            return rc;
        ph->ref_mean_w = ref.olympic_mean;
        ph->cand_mean_w = cand.olympic_mean;
        if (!(ph->ref_mean_w > 0))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "qualify: %s: the reference %s reads %.6f W: nothing to compare "
                            "against",
                            ph->name, c->reference, ph->ref_mean_w);
        ph->difference = (ph->cand_mean_w - ph->ref_mean_w) / ph->ref_mean_w;
        /* 1e-12: a candidate exactly at the limit is within it, whatever
         * the last bit of the division */
        ph->within = fabs(ph->difference) <= c->tolerance + 1e-12;
        if (!ph->within) {
            size_t len = strlen(r->failed);
            snprintf(r->failed + len, sizeof r->failed - len, "%s%s", len ? ", " : "", ph->name);
            r->pass = 0;
        }
    }
    return EEB_OK;
}

int eeb_power_qualify(const struct eeb_qualify_config *cfg, struct eeb_qualify_result *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    int rc = check_config(cfg, err, errlen);
    if (rc != EEB_OK)
        return rc;
    struct qualify q = {.cfg = cfg, .out = out};
    struct load loads[2] = {{cfg->load[0], phase_names[1], 0}, {cfg->load[1], phase_names[2], 0}};
    q.interval_ns = llround(1e9 / cfg->rate_hz);
    q.window_ns = llround(cfg->window_s * 1e9);
    out->windows = cfg->windows;
    out->window_s = cfg->window_s;
    out->rate_hz = cfg->rate_hz;
    out->tolerance = cfg->tolerance;
    out->simulated = replayed(cfg->reference);
    for (int p = 0; p < EEB_QUALIFY_PHASES; p++)
        out->phase[p].name = phase_names[p];
    const char *uri[2] = {cfg->reference, cfg->candidate};
    for (int i = 0; i < 2 && rc == EEB_OK; i++)
        rc = eeb_power_open(uri[i], &q.m[i].src, err, errlen);
    if (rc != EEB_OK)
        goto out;
    if (out->simulated) {
        /* the traces' spans back to back, from their start */
        rc = run_windows(&q, 0, 0, 0, EEB_QUALIFY_PHASES * cfg->windows, err, errlen);
        goto out;
    }
    for (int p = 0; p < EEB_QUALIFY_PHASES && rc == EEB_OK; p++) {
        q.load = p ? &loads[p - 1] : NULL;
        if (q.load && (rc = load_start(q.load, err, errlen)))
            break;
        if (cfg->phase_begin)
            cfg->phase_begin(cfg->arg, p, phase_names[p], q.load ? q.load->cmd : NULL);
        if (stopped(&q)) {
            rc = eeb_errf(err, errlen, EEB_ENODATA, "qualify: stopped before %s; no verdict",
                          phase_names[p]);
            break;
        }
        /* the first reading a period from now: the meters' first answers
         * are not kept waiting behind this one's start */
        rc = run_windows(&q, 1, eeb_mono_ns() + q.interval_ns, p * cfg->windows, cfg->windows, err,
                         errlen);
        if (q.load)
            load_stop(q.load);
    }
out:
    for (int i = 0; i < 2; i++)
        load_stop(&loads[i]);
    for (int i = 0; i < 2; i++) {
        eeb_power_close(q.m[i].src);
        free(q.m[i].buf);
    }
    return rc == EEB_OK ? judge(cfg, out, err, errlen) : rc;
}

/* ---- JSON ---- */

static json_t *numbers(const double *x, int n)
{
    json_t *a = json_array();
    for (int i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_real(x[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

char *eeb_power_qualify_json(const struct eeb_qualify_config *cfg,
                             const struct eeb_qualify_result *r)
{
    json_t *phases = json_array();
    for (int p = 0; phases && p < EEB_QUALIFY_PHASES; p++) {
        const struct eeb_qualify_phase *ph = &r->phase[p];
        json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:b, s:{s:o, s:o}}", "phase", ph->name,
                              "reference_w", ph->ref_mean_w, "candidate_w", ph->cand_mean_w,
                              "difference", ph->difference, "within", ph->within, "windows",
                              "reference_w", numbers(ph->ref_w, r->windows), "candidate_w",
                              numbers(ph->cand_w, r->windows));
        if (!o || json_array_append_new(phases, o)) {
            json_decref(phases);
            phases = NULL;
        }
    }
    json_t *o = phases ? json_pack("{s:s, s:s, s:s, s:s*, s:f, s:i, s:f, s:f, s:b, s:o}",
                                   "reference", cfg->reference, "candidate", cfg->candidate,
                                   "verdict", r->pass ? "pass" : "fail", "failed",
                                   r->pass ? NULL : r->failed, "tolerance", r->tolerance, "windows",
                                   r->windows, "window_s", r->window_s, "rate_hz", r->rate_hz,
                                   "simulated", r->simulated, "phases", phases)
                       : NULL;
    char *text =
        o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12)) : NULL;
    json_decref(o);
    return text;
}

/* ---- the table ----
 *
 * migrations[v] takes the qualifications set from version v to v + 1
 * (rundb/ records which a file holds).  Append one to change it; never
 * edit one released. */
static const char *const migrations[] = {
    /* v0 -> v1: a verdict per row; the latest of a board's rail counts */
    "CREATE TABLE qualifications ("
    "  id INTEGER PRIMARY KEY,"
    "  board TEXT NOT NULL,"
    "  rail TEXT NOT NULL,"
    "  reference TEXT NOT NULL,"
    "  candidate TEXT NOT NULL,"
    "  verdict TEXT NOT NULL CHECK (verdict IN ('pass', 'fail')),"
    "  figures TEXT NOT NULL," /* eeb_power_qualify_json's */
    "  utc_ns INTEGER NOT NULL);"
    "CREATE INDEX qualifications_by_rail ON qualifications(board, rail, id);",
};

static const struct eeb_rundb_tables qualify_tables = {
    .name = "qualifications",
    .version = (int)(sizeof migrations / sizeof *migrations),
    .migrations = migrations,
};

int eeb_power_qualify_store(const char *db_path, const char *board, const char *rail,
                            const struct eeb_qualify_config *cfg,
                            const struct eeb_qualify_result *r, int64_t *id, char *err,
                            size_t errlen)
{
    struct eeb_rundb *db = NULL;
    sqlite3_stmt *st = NULL;
    char *figures = eeb_power_qualify_json(cfg, r);
    int rc = figures ? eeb_rundb_open_with(db_path, EEB_RUNDB_READWRITE, &qualify_tables, &db, err,
                                           errlen)
                     : eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", db_path);
    if (rc != EEB_OK)
        goto out;
    sqlite3 *h = eeb_rundb_sqlite(db);
    if (sqlite3_prepare_v2(h,
                           "INSERT INTO qualifications (board, rail, reference, candidate, "
                           "verdict, figures, utc_ns) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: qualifications: %s", db_path, sqlite3_errmsg(h));
        goto out;
    }
    const char *text[] = {board,  rail, cfg->reference, cfg->candidate, r->pass ? "pass" : "fail",
                          figures};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, eeb_utc_ns());
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: storing the qualification: %s", db_path,
                      sqlite3_errmsg(h));
        goto out;
    }
    if (id)
        *id = sqlite3_last_insert_rowid(h);
out:
    sqlite3_finalize(st);
    eeb_rundb_close(db);
    free(figures);
    return rc;
}

int eeb_power_qualified(const char *db_path, const char *board, const char *rail, int *verdict,
                        int64_t *utc_ns, char *err, size_t errlen)
{
    *verdict = -1;
    if (utc_ns)
        *utc_ns = 0;
    struct eeb_rundb *db = NULL;
    sqlite3_stmt *st = NULL;
    /* opened without the set: a file that never kept a verdict is read as
     * it is (none), not refused for want of migrating */
    int rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc != EEB_OK)
        return rc;
    sqlite3 *h = eeb_rundb_sqlite(db);
    /* the set's version, 0 for a file without it (or without any set) */
    int64_t version = 0;
    int step = sqlite3_prepare_v2(h,
                                  "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                                  "name IN ('schema_sets', 'qualifications')",
                                  -1, &st, NULL);
    if (step == SQLITE_OK && (step = sqlite3_step(st)) == SQLITE_ROW &&
        sqlite3_column_int64(st, 0) == 2) {
        sqlite3_finalize(st);
        step =
            sqlite3_prepare_v2(h, "SELECT version FROM schema_sets WHERE name = ?", -1, &st, NULL);
        if (step == SQLITE_OK) {
            sqlite3_bind_text(st, 1, qualify_tables.name, -1, SQLITE_STATIC);
            step = sqlite3_step(st);
            version = step == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: reading the qualifications: %s", db_path,
                      sqlite3_errmsg(h));
        goto out;
    }
    if (version > qualify_tables.version) {
        rc = eeb_errf(err, errlen, EEB_EVERSION,
                      "%s: qualifications tables schema v%lld was written by a newer eeb (this "
                      "eeb reads up to v%d)",
                      db_path, (long long)version, qualify_tables.version);
        goto out;
    }
    if (!version)
        goto out;
    if (sqlite3_prepare_v2(h,
                           "SELECT verdict, utc_ns FROM qualifications WHERE board = ? AND "
                           "rail = ? ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: qualifications: %s", db_path, sqlite3_errmsg(h));
        goto out;
    }
    sqlite3_bind_text(st, 1, board, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, rail, -1, SQLITE_STATIC);
    step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *verdict = strcmp((const char *)sqlite3_column_text(st, 0), "pass") == 0;
        if (utc_ns)
            *utc_ns = sqlite3_column_int64(st, 1);
    } else if (step != SQLITE_DONE) {
        rc = eeb_errf(err, errlen, EEB_EDB, "%s: qualifications: %s", db_path, sqlite3_errmsg(h));
    }
out:
    sqlite3_finalize(st);
    eeb_rundb_close(db);
    return rc;
}
