/*
 * board.c - what the pages share, and a run's page.  The query filter the
 * leaderboard and the run list (runlist.c) share; the answers kept until a
 * run or the organizer changes something; the sortable tables' script and
 * number cells; and a page per run, the run report `eeb report` writes
 * (power trace SVG, verdict, configuration) made from the server's record
 * of it: kept once the run is scored (a file of mode 0600), and while it
 * runs made anew as its chain arrives, at most once a second, refreshing
 * itself.
 */
#include "server_int.h"

#include "power/eeb_power.h"
#include "record/eeb_record.h"
#include "tasks/eeb_task_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int eeb_srv_query_filter(struct eeb_srv_call *k, int need_task, int *task, const char **provenance,
                         const char **device, enum MHD_Result *sent)
{
    const char *t = eeb_srv_call_arg(k, "task");
    char err[128], msg[192];
    enum eeb_task parsed;
    enum eeb_provenance p;
    const char *field = NULL;
    *task = -1, *provenance = eeb_srv_call_arg(k, "provenance");
    *device = eeb_srv_call_arg(k, "device");
    if (t && eeb_task_parse(t, &parsed, err, sizeof err) == EEB_OK)
        *task = (int)parsed;
    else if (t || need_task)
        field = "task",
        snprintf(msg, sizeof msg, "%s", t ? err : "expected ?task=cls, det or video");
    if (!field && *device && !eeb_text_ok(*device, EEB_DECLARED_MAX, EEB_DECLARED_PUNCT))
        field = "device", snprintf(msg, sizeof msg,
                                   "device '%.64s': expected 1 to 63 letters, digits and "
                                   "characters of " EEB_DECLARED_PUNCT,
                                   *device);
    if (!field && *provenance && eeb_provenance_parse(*provenance, &p))
        field = "provenance", snprintf(msg, sizeof msg,
                                       "provenance '%.32s': expected measured, counter, declared "
                                       "or modeled",
                                       *provenance);
    if (field)
        *sent = eeb_srv_call_fail(k, 400, field, msg);
    return field == NULL;
}

/* ---- the answers kept ---- */

/* The leaderboard is read far more often than runs change: an answer
 * (JSON or page) is kept, by its request, until a run is next registered,
 * completed or scored. */
static int cached_reply(struct eeb_srv_call *k, const char *key, enum MHD_Result *sent)
{
    struct eeb_server *s = k->s;
    unsigned long now = atomic_load(&s->changes);
    int hit = 0;
    pthread_mutex_lock(&s->board_lock);
    for (size_t i = 0; i < sizeof s->board_cache / sizeof *s->board_cache && !hit; i++) {
        struct eeb_srv_board_cache *c = &s->board_cache[i];
        if (c->body && c->changes == now && strcmp(c->key, key) == 0) {
            *sent = eeb_srv_call_reply(k, 200, c->type, c->body, c->len);
            hit = 1;
        }
    }
    pthread_mutex_unlock(&s->board_lock);
    return hit;
}

static void keep_reply(struct eeb_server *s, const char *key, unsigned long changes,
                       const char *type, const char *body, size_t len)
{
    char *copy = malloc(len);
    if (!copy)
        return;
    memcpy(copy, body, len);
    pthread_mutex_lock(&s->board_lock);
    struct eeb_srv_board_cache *c =
        &s->board_cache[s->board_next++ % (sizeof s->board_cache / sizeof *s->board_cache)];
    free(c->body);
    snprintf(c->key, sizeof c->key, "%s", key);
    c->changes = changes, c->type = type, c->body = copy, c->len = len;
    pthread_mutex_unlock(&s->board_lock);
}

void eeb_srv_board_cache_free(struct eeb_server *s)
{
    for (size_t i = 0; i < sizeof s->board_cache / sizeof *s->board_cache; i++)
        free(s->board_cache[i].body);
    for (size_t i = 0; i < EEB_SRV_LIVE_PAGES; i++)
        free(s->live[i].report);
}

/* The organizer acts on the database from another process (eeb serve
 * admin): its audit log, read at most once a second, says when, and the
 * answers kept before are stale. */
static void note_admin_acts(struct eeb_server *s)
{
    int64_t now = eeb_mono_ns(), checked = atomic_load(&s->audit_checked_ns);
    if (now - checked < 1000000000 ||
        !atomic_compare_exchange_strong(&s->audit_checked_ns, &checked, now))
        return;
    struct eeb_srv_store_stats stats;
    char ignored[256];
    if (eeb_srv_store_stats(s->store, &stats, ignored, sizeof ignored) == EEB_OK &&
        atomic_exchange(&s->audit_seen, stats.audit_last) != stats.audit_last)
        atomic_fetch_add(&s->changes, 1);
}

enum MHD_Result eeb_srv_kept_answer(struct eeb_srv_call *k, const char *key, const char *type,
                                    eeb_srv_make_answer *make, void *arg)
{
    enum MHD_Result sent;
    note_admin_acts(k->s);
    char kept[200];
    snprintf(kept, sizeof kept, "%s %s", type, key);
    if (cached_reply(k, kept, &sent))
        return sent;
    unsigned long changes = atomic_load(&k->s->changes); /* before reading: never newer */
    char *body = NULL, err[256] = "out of memory";
    size_t len = 0;
    int rc = make(k, arg, &body, &len, err, sizeof err);
    if (rc == EEB_OK) {
        keep_reply(k->s, kept, changes, type, body, len);
        sent = eeb_srv_call_reply(k, 200, type, body, len);
    } else /* a thing the request names that the server does not hold: 404 */
        sent = eeb_srv_call_fail(k, rc == EEB_ENODATA ? 404 : 500, NULL, err);
    free(body);
    return sent;
}

/* ---- the pages' sortable tables ---- */

/* A number cell: shown with `decimals`, sorted by its exact value (the
 * shortest text that reads back as the same double: 0.1, not "%.17g"'s
 * 0.10000000000000001, and runs that differ past the 15th digit apart). */
void eeb_srv_number_cell(FILE *f, double v, int decimals)
{
    if (isnan(v)) {
        fputs("<td data-v=\"\">-</td>", f);
        return;
    }
    char exact[EEB_NUMBER_MAX];
    fprintf(f, "<td data-v=\"%s\">%.*f</td>", eeb_number_exact(v, exact), decimals, v);
}

/* Sorts a table by the clicked (or Enter'd) column: numbers by data-v,
 * the rest by text, cells without a value last either way; the column's
 * aria-sort and mark (up: ascending, down: descending) say how.  The
 * column is the header's own cellIndex: an index over every table's
 * headers at once points past the second table's cells. */
const char eeb_srv_sort_script[] =
    "<script>\n"
    "(function () {\n"
    "  function key(row, col) {\n"
    "    var c = row.cells[col];\n"
    "    if (!c) return NaN; /* a row without the column: 'no scored runs yet' */\n"
    "    var v = c.dataset.v;\n"
    "    return v === undefined ? c.textContent : v === '' ? NaN : parseFloat(v);\n"
    "  }\n"
    "  function missing(x) { return typeof x === 'number' && isNaN(x) ? 1 : 0; }\n"
    "  function sortBy(th) {\n"
    "    var table = th.closest('table'), body = table.tBodies[0], col = th.cellIndex;\n"
    "    var now = th.getAttribute('aria-sort');\n"
    "    var dir = now === 'ascending' ? 'descending' : now === 'descending' ? 'ascending'\n"
    "      : th.dataset.first;\n"
    "    table.tHead.querySelectorAll('th').forEach(function (h) {\n"
    "      h.removeAttribute('aria-sort');\n"
    "      h.querySelector('.mark').textContent = '';\n"
    "    });\n"
    "    th.setAttribute('aria-sort', dir);\n"
    "    th.querySelector('.mark').textContent = dir === 'ascending' ? ' \\u25b2' : ' \\u25bc';\n"
    "    var rows = Array.from(body.rows);\n"
    "    rows.sort(function (a, b) {\n"
    "      var x = key(a, col), y = key(b, col);\n"
    "      if (missing(x) || missing(y)) return missing(x) - missing(y);\n"
    "      var c = typeof x === 'number' && typeof y === 'number' ? x - y\n"
    "        : String(x).localeCompare(String(y));\n"
    "      return dir === 'ascending' ? c : -c;\n"
    "    });\n"
    "    rows.forEach(function (r) { body.appendChild(r); });\n"
    "  }\n"
    "  document.querySelectorAll('table.board thead th').forEach(function (th) {\n"
    "    th.addEventListener('click', function () { sortBy(th); });\n"
    "    th.addEventListener('keydown', function (e) {\n"
    "      if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sortBy(th); }\n"
    "    });\n"
    "  });\n"
    "})();\n"
    "</script>\n";

/* ---- a run's page ---- */

/* A live run's report is made from every sample it has sent (the judge
 * and the plot read them all: 0.2 s of a core at 200,000): made at most
 * once a second per run, and kept while nothing more of the run arrives,
 * so that anonymous readers cost the server no more as they grow. */
#define LIVE_EVERY_NS   1000000000
#define LIVE_WAIT_MAX_S 30 /* for another thread making a run's first page */

/* The slot of run, or one taken for it (a free one, else the least
 * recently served not being made), or NULL if each is being made.
 * s->live_lock held. */
static struct eeb_srv_live_page *live_slot(struct eeb_server *s, int64_t run)
{
    struct eeb_srv_live_page *oldest = NULL;
    for (size_t i = 0; i < EEB_SRV_LIVE_PAGES; i++)
        if (s->live[i].run == run)
            return &s->live[i];
    for (size_t i = 0; i < EEB_SRV_LIVE_PAGES; i++)
        if (!s->live[i].making && (!oldest || s->live[i].used_ns < oldest->used_ns))
            oldest = &s->live[i];
    if (oldest) {
        free(oldest->report);
        *oldest = (struct eeb_srv_live_page){.run = run};
    }
    return oldest;
}

/* A copy of p's report into *out: EEB_ENODATA if none could be made of
 * what it was made from.  s->live_lock held. */
static int live_copy(struct eeb_srv_live_page *p, char **out, size_t *len, char *err, size_t errlen)
{
    p->used_ns = eeb_mono_ns();
    if (!p->report)
        return eeb_errf(err, errlen, EEB_ENODATA, "run %lld: no report of what has arrived",
                        (long long)p->run);
    if (!(*out = malloc(p->len)))
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    memcpy(*out, p->report, p->len);
    *len = p->len;
    return EEB_OK;
}

/* Run r's report into out, made now. */
static int make_report(struct eeb_srv_call *k, const struct eeb_srv_run *r, char **out, size_t *len,
                       char *err, size_t errlen)
{
    FILE *m = open_memstream(out, len);
    if (!m)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = eeb_run_report_write(eeb_srv_store_path(k->s->store), r->id, m, err, errlen);
    if (fclose(m) != 0 && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc)
        free(*out), *out = NULL;
    return rc;
}

/* Live run r's report (malloc'd into *out): the one kept if nothing has
 * arrived of it since, or it is less than a second old, or another thread
 * is making it anew; else made now and kept.  A report that could not be
 * made is kept so too (EEB_ENODATA): trying again costs what making it
 * does. */
static int live_report(struct eeb_srv_call *k, const struct eeb_srv_run *r, char **out, size_t *len,
                       char *err, size_t errlen)
{
    struct eeb_server *s = k->s;
    int64_t predictions = 0, give_up_ns = eeb_mono_ns() + (int64_t)LIVE_WAIT_MAX_S * 1000000000;
    int rc = eeb_srv_store_run_predictions_count(s->store, r->id, &predictions, err, errlen);
    if (rc)
        return rc;
    pthread_mutex_lock(&s->live_lock);
    struct eeb_srv_live_page *p;
    while ((p = live_slot(s, r->id))) {
        int64_t now = eeb_mono_ns();
        int same = p->links == r->links && p->predictions == predictions &&
                   strcmp(p->state, r->state) == 0;
        if (p->made_ns && (same || p->making || now - p->made_ns < LIVE_EVERY_NS)) {
            rc = live_copy(p, out, len, err, errlen);
            pthread_mutex_unlock(&s->live_lock);
            return rc;
        }
        if (!p->making)
            break;
        /* its first page is being made: wait for it rather than make it too */
        struct timespec until = {.tv_sec = give_up_ns / 1000000000,
                                 .tv_nsec = give_up_ns % 1000000000};
        if (pthread_cond_timedwait(&s->live_made, &s->live_lock, &until) == ETIMEDOUT) {
            p = NULL; /* made here, not kept */
            break;
        }
    }
    if (p)
        p->making = 1;
    pthread_mutex_unlock(&s->live_lock);

    rc = make_report(k, r, out, len, err, errlen);

    pthread_mutex_lock(&s->live_lock);
    if (p) { /* not replaced while making */
        char *kept = rc == EEB_OK ? malloc(*len) : NULL;
        if (rc == EEB_OK && !kept) {
            p->making = 0; /* not kept: made again by the next reader */
        } else {
            if (kept)
                memcpy(kept, *out, *len);
            free(p->report);
            p->report = kept, p->len = kept ? *len : 0;
            p->links = r->links, p->predictions = predictions;
            snprintf(p->state, sizeof p->state, "%s", r->state);
            p->made_ns = p->used_ns = eeb_mono_ns(); /* the second counts from its end */
            p->making = 0;
        }
        pthread_cond_broadcast(&s->live_made);
    }
    pthread_mutex_unlock(&s->live_lock);
    return rc;
}

/* The report as received so far, with a line saying how the run is going
 * and a refresh every 2 s: the run's page while it runs. */
static enum MHD_Result live_page(struct eeb_srv_call *k, const struct eeb_srv_run *r)
{
    char err[512], line[512], ago[64] = "";
    char *report = NULL;
    size_t len = 0;
    /* a report that cannot be made (no origin yet) leaves the line alone */
    int made = r->links && live_report(k, r, &report, &len, err, sizeof err) == EEB_OK;
    if (r->last_link_utc_ns)
        snprintf(ago, sizeof ago, ", the last %.1f s ago",
                 (double)(eeb_utc_ns() - r->last_link_utc_ns) / 1e9);
    snprintf(line, sizeof line,
             "<p class=\"live\"><b>Live:</b> run %lld of team %s is %s; %lld links of its "
             "chain received%s. This page refreshes every 2 s.</p>",
             (long long)r->id, r->team_name, r->state, (long long)r->links, ago);
    /* the line and the refresh after the report's <body> and <head> */
    const char *head = made ? memmem(report, len, "<head>", 6) : NULL;
    const char *body = head ? memmem(head, len - (size_t)(head - report), "<body>", 6) : NULL;
    char *page = NULL;
    int n = body ? asprintf(&page, "%.*s<meta http-equiv=\"refresh\" content=\"2\">%.*s%s%.*s",
                            (int)(head + 6 - report), report, (int)(body + 6 - (head + 6)),
                            head + 6, line, (int)(len - (size_t)(body + 6 - report)), body + 6)
                 : asprintf(&page,
                            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta "
                            "http-equiv=\"refresh\" content=\"2\"><title>run %lld</title></head>"
                            "<body>%s</body></html>",
                            (long long)r->id, line);
    free(report);
    if (n < 0)
        return eeb_srv_call_fail(k, 500, NULL, "out of memory");
    enum MHD_Result sent = eeb_srv_call_reply(k, 200, "text/html; charset=utf-8", page, (size_t)n);
    free(page);
    return sent;
}

/* Scored run id's report kept at path, made mode 0600 whatever the umask
 * (it lies beside the database): written to a temporary of that mode
 * (mkstemp's), then renamed, so the page is never there half written. */
static int keep_report(struct eeb_srv_call *k, const char *path, char *err, size_t errlen)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", path) >= (int)sizeof tmp)
        return eeb_errf(err, errlen, EEB_EINVAL, "%.64s...: path too long", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", tmp, strerror(errno));
    FILE *f = fchmod(fd, 0600) == 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return rc;
    }
    int rc = eeb_run_report_write(eeb_srv_store_path(k->s->store), k->id, f, err, errlen);
    if (rc == EEB_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0))
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", tmp, strerror(errno));
    if (fclose(f) != 0 && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", tmp, strerror(errno));
    if (rc == EEB_OK && rename(tmp, path) != 0)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    if (rc)
        unlink(tmp);
    return rc;
}

/* GET /runs/{id}: a scored run's report, made once and kept beside the
 * database (a scored run does not change); a live run's, as it arrives. */
enum MHD_Result eeb_srv_page_run(struct eeb_srv_call *k)
{
    char err[512], msg[96];
    struct eeb_srv_run r;
    int found = eeb_srv_store_run_get(k->s->store, k->id, &r, err, sizeof err);
    if (found < 0)
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (!found) {
        snprintf(msg, sizeof msg, "no run %lld", (long long)k->id);
        return eeb_srv_call_fail(k, 404, NULL, msg);
    }
    if (strcmp(r.withdrawn, "hidden") == 0) { /* under review: off the board, and here */
        snprintf(msg, sizeof msg, "run %lld is under review", (long long)k->id);
        return eeb_srv_call_fail(k, 404, NULL, msg);
    }
    if (strcmp(r.state, "scored") != 0)
        return live_page(k, &r);
    char path[4096];
    snprintf(path, sizeof path, "%s.run-%lld.html", eeb_srv_store_path(k->s->store),
             (long long)k->id);
    if (access(path, F_OK) != 0 && keep_report(k, path, err, sizeof err))
        return eeb_srv_call_fail(k, 500, NULL, err);
    return eeb_srv_call_file(k, "text/html; charset=utf-8", path);
}
