/*
 * http.c - the server's HTTP side on libmicrohttpd: a thread pool, request
 * bodies gathered up to a cap (413 past it, before reading more), a route
 * table saying who may call each route, bearer tokens, a per-team rate
 * limit, JSON errors that name the field at fault, and counters for
 * /metrics; libmicrohttpd's own limits (connections at once, from one
 * address, idle time), and the secrets it starts on checked (files.c).
 * Answers are JSON except /metrics (Prometheus text) and the pages (HTML,
 * board.c).
 */
#include "server_int.h"

#include "tasks/eeb_classes.h"

#include "fpga/net/eeb_net.h"

#include "record/eeb_record.h"
#include "scoring/eeb_score.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const route_names[EEB_SRV_R_COUNT] = {
    "healthz",  "metrics", "whoami",   "runs",        "run",
    "links",    "begin",   "complete", "test",        "predictions",
    "score",    "record",  "abandon",  "leaderboard", "page_leaderboard",
    "page_run", "station", "run_list", "page_runs",   "other"};
static const int codes[EEB_SRV_N_CODES] = {200, 201, 400, 401, 403, 404,
                                           405, 409, 413, 429, 500, 503};

void eeb_server_config_default(struct eeb_server_config *c)
{
    *c = (struct eeb_server_config){.db = "eeb-server.db",
                                    .bind = "127.0.0.1",
                                    .port = 8080,
                                    .threads = 2,
                                    .max_body = 1 << 20,
                                    .rate_limit = 200,
                                    .rate_burst = 400,
                                    .stream_allowance_s = 10,
                                    .predict_within_s = 900,
                                    .quota = {[EEB_QUOTA_REGISTRATIONS] = 100,
                                              [EEB_QUOTA_SCORED] = 10,
                                              [EEB_QUOTA_SAMPLES] = 20000000},
                                    .meter_rate_hz = 0, /* the meter's own */
                                    .station_clock_window_s = 60,
                                    .max_connections = 1000,
                                    .max_per_ip = 32,
                                    .connection_timeout_s = 15,
                                    /* 200 s at 10 kHz, eeb run's highest rate: a run of
                                     * T_max 30 s with its deploy and test stages */
                                    .max_samples = 2000000};
}

const char *eeb_server_quota_name(enum eeb_server_quota q)
{
    static const char *const names[EEB_QUOTAS] = {"registrations", "scored", "samples"};
    return (unsigned)q < EEB_QUOTAS ? names[q] : "?";
}

/* ---- the log ---- */

void eeb_srv_log(struct eeb_server *s, const char *fmt, ...)
{
    if (!s->cfg.log)
        return;
    char at[EEB_UTC_TEXT], line[1024], shown[4 * sizeof line], c[EEB_CONTROL_SHOWN];
    eeb_utc_text(eeb_utc_ns(), at);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* a team's text forges no line of the log, and reorders none */
    size_t n = 0;
    for (const char *p = line; *p && n + EEB_CONTROL_SHOWN < sizeof shown; p++) {
        size_t len = 1;
        if (*p == '\n' || *p == '\t') /* shown in a page, but here the end of a line */
            snprintf(c, sizeof c, "\\x%02x", *p);
        else
            len = eeb_text_control(p, c);
        if (len)
            n += (size_t)snprintf(shown + n, sizeof shown - n, "%s", c), p += len - 1;
        else
            shown[n++] = *p;
    }
    shown[n] = '\0';
    fprintf(s->cfg.log, "%s eeb serve: %s\n", at, shown); /* one call: lines never interleave */
    fflush(s->cfg.log);
}

/* ---- responses ---- */

/* Counts the answer for /metrics and queues resp (taken). */
static enum MHD_Result queue(struct eeb_server *s, struct MHD_Connection *c, enum eeb_srv_route r,
                             int code, const char *type, struct MHD_Response *resp)
{
    for (size_t i = 0; i < EEB_SRV_N_CODES; i++)
        if (codes[i] == code)
            atomic_fetch_add(&s->requests[r][i], 1);
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result reply(struct eeb_server *s, struct MHD_Connection *c, enum eeb_srv_route r,
                             int code, const char *type, const char *body, size_t len)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    return resp ? queue(s, c, r, code, type, resp) : MHD_NO;
}

static enum MHD_Result send_json(struct eeb_server *s, struct MHD_Connection *c,
                                 enum eeb_srv_route r, int code, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    static const char oom[] = "{\"error\":\"out of memory\"}";
    enum MHD_Result ok = text ? reply(s, c, r, code, "application/json", text, strlen(text))
                              : reply(s, c, r, 500, "application/json", oom, sizeof oom - 1);
    free(text);
    return ok;
}

/* src in dst as printable ASCII: an error may quote what a client sent,
 * which need not be UTF-8 (JSON strings must be). */
static const char *printable(char *dst, size_t cap, const char *src)
{
    size_t n = 0;
    for (; src[n] && n + 1 < cap; n++)
        dst[n] = src[n] >= 0x20 && src[n] < 0x7f ? src[n] : '?';
    dst[n] = '\0';
    return dst;
}

static enum MHD_Result send_error(struct eeb_server *s, struct MHD_Connection *c,
                                  enum eeb_srv_route r, int code, const char *field,
                                  const char *message)
{
    char m[512], f[128];
    json_t *o = json_pack("{s:s}", "error", printable(m, sizeof m, message));
    if (o && field)
        json_object_set_new(o, "field", json_string(printable(f, sizeof f, field)));
    return send_json(s, c, r, code, o);
}

enum MHD_Result eeb_srv_call_reply(struct eeb_srv_call *k, int code, const char *type,
                                   const char *body, size_t len)
{
    return reply(k->s, k->c, k->route, code, type, body, len);
}

enum MHD_Result eeb_srv_call_json(struct eeb_srv_call *k, int code, json_t *o)
{
    return send_json(k->s, k->c, k->route, code, o);
}

enum MHD_Result eeb_srv_call_fail(struct eeb_srv_call *k, int code, const char *field,
                                  const char *message)
{
    /* a team's refusals, and every refused credential, in the log: what an
     * organizer reviewing a run, or an attack, looks for (never a token:
     * no message holds one) */
    if (code >= 400 && code < 500 && (k->team || code == 401))
        eeb_srv_log(k->s, "%s: %s refused, %d%s%s: %s", k->team ? k->team_name : "a caller",
                    route_names[k->route], code, field ? " " : "", field ? field : "", message);
    return send_error(k->s, k->c, k->route, code, field, message);
}

enum MHD_Result eeb_srv_call_file(struct eeb_srv_call *k, const char *type, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return eeb_srv_call_fail(k, 500, NULL, "a file the answer needs cannot be read");
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    return queue(k->s, k->c, k->route, 200, type, resp);
}

json_t *eeb_srv_call_body(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    json_error_t je;
    json_t *o = json_loadb(k->q->body ? k->q->body : "", k->q->len, JSON_REJECT_DUPLICATES, &je);
    char msg[256];
    if (!o) {
        snprintf(msg, sizeof msg, "the body is not JSON: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        *sent = eeb_srv_call_fail(k, 400, NULL, msg);
    } else if (!json_is_object(o)) {
        json_decref(o), o = NULL;
        *sent = eeb_srv_call_fail(k, 400, NULL, "the body must be a JSON object");
    }
    return o;
}

const char *eeb_srv_call_arg(struct eeb_srv_call *k, const char *name)
{
    return MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, name);
}

/* ---- the per-team rate limit ---- */

/* A token bucket per team: `rate` requests a second, up to `burst` at once. */
static int allowed(struct eeb_server *s, int64_t team)
{
    if (s->cfg.rate_limit <= 0)
        return 1;
    int64_t now = eeb_mono_ns();
    pthread_mutex_lock(&s->lock);
    struct eeb_srv_bucket *b = &s->buckets[(uint64_t)team % EEB_SRV_N_BUCKETS];
    for (size_t probe = 0; b->team && b->team != team && probe < EEB_SRV_N_BUCKETS; probe++)
        b = &s->buckets[((uint64_t)team + probe + 1) % EEB_SRV_N_BUCKETS];
    if (b->team != team) /* a new team, or a full table: the slot is taken over */
        *b = (struct eeb_srv_bucket){.team = team, .tokens = s->cfg.rate_burst, .last_ns = now};
    b->tokens += (double)(now - b->last_ns) / 1e9 * s->cfg.rate_limit;
    if (b->tokens > s->cfg.rate_burst)
        b->tokens = s->cfg.rate_burst;
    b->last_ns = now;
    int ok = b->tokens >= 1;
    if (ok)
        b->tokens -= 1;
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* ---- routes ---- */

static enum MHD_Result healthz(struct eeb_srv_call *k)
{
    return eeb_srv_call_json(k, 200, json_pack("{s:s}", "status", "ok"));
}

static enum MHD_Result metrics(struct eeb_srv_call *k)
{
    struct eeb_server *s = k->s;
    char text[16384], err[256];
    size_t used = (size_t)snprintf(text, sizeof text,
                                   "# HELP eeb_http_requests_total Requests answered, by route "
                                   "and status.\n# TYPE eeb_http_requests_total counter\n");
    for (int r = 0; r < EEB_SRV_R_COUNT; r++)
        for (size_t i = 0; i < EEB_SRV_N_CODES; i++) {
            unsigned long long n = atomic_load(&s->requests[r][i]);
            if (n && used < sizeof text)
                used += (size_t)snprintf(text + used, sizeof text - used,
                                         "eeb_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                                         route_names[r], codes[i], n);
        }
    struct eeb_srv_store_stats stats;
    if (eeb_srv_store_stats(s->store, &stats, err, sizeof err))
        return eeb_srv_call_fail(k, 500, NULL, err);
    if (used < sizeof text)
        snprintf(text + used, sizeof text - used,
                 "# HELP eeb_teams Teams registered and not revoked.\n# TYPE eeb_teams gauge\n"
                 "eeb_teams %lld\n"
                 "# HELP eeb_runs_in_progress Runs registered and not yet scored.\n"
                 "# TYPE eeb_runs_in_progress gauge\neeb_runs_in_progress %lld\n"
                 "# HELP eeb_samples_received_total Power samples taken in since start, from "
                 "runs' chains and station agents.\n# TYPE eeb_samples_received_total counter\n"
                 "eeb_samples_received_total %llu\n"
                 "# HELP eeb_sqlite_memory_bytes Memory SQLite holds now (its page caches "
                 "first).\n# TYPE eeb_sqlite_memory_bytes gauge\neeb_sqlite_memory_bytes %lld\n",
                 (long long)stats.teams, (long long)stats.runs_going,
                 (unsigned long long)atomic_load(&s->samples_received),
                 (long long)stats.memory_bytes);
    used = strlen(text);
    if (used < sizeof text)
        eeb_srv_stations_metrics(s, text + used, sizeof text - used);
    return eeb_srv_call_reply(k, 200, "text/plain; version=0.0.4", text, strlen(text));
}

static enum MHD_Result whoami(struct eeb_srv_call *k)
{
    return eeb_srv_call_json(
        k, 200, json_pack("{s:s, s:I}", "team", k->team_name, "id", (json_int_t)k->team));
}

/* Who may call a route: anyone; a team (its bearer token); the team
 * whose run {id} is (the handler finds the run in the call); or a
 * station's agent (its station's key). */
enum access { ANYONE, TEAM, OWNER, STATION };

static const struct route_def {
    const char *method, *pattern; /* "{id}": a run id */
    enum eeb_srv_route route;
    enum access access;
    enum MHD_Result (*handle)(struct eeb_srv_call *k);
} route_defs[] = {
    {"GET", "/healthz", EEB_SRV_R_HEALTHZ, ANYONE, healthz},
    {"GET", "/metrics", EEB_SRV_R_METRICS, ANYONE, metrics},
    {"GET", "/api/v1/whoami", EEB_SRV_R_WHOAMI, TEAM, whoami},
    {"POST", "/api/v1/runs", EEB_SRV_R_RUNS, TEAM, eeb_srv_api_register},
    {"GET", "/api/v1/runs/{id}", EEB_SRV_R_RUN, OWNER, eeb_srv_api_run},
    {"POST", "/api/v1/runs/{id}/links", EEB_SRV_R_LINKS, OWNER, eeb_srv_api_links},
    {"POST", "/api/v1/runs/{id}/begin", EEB_SRV_R_BEGIN, OWNER, eeb_srv_api_begin},
    {"POST", "/api/v1/runs/{id}/ranging", EEB_SRV_R_OTHER, OWNER, eeb_srv_api_ranging},
    {"POST", "/api/v1/runs/{id}/complete", EEB_SRV_R_COMPLETE, OWNER, eeb_srv_api_complete},
    {"GET", "/api/v1/runs/{id}/test", EEB_SRV_R_TEST, OWNER, eeb_srv_api_test},
    {"POST", "/api/v1/runs/{id}/predictions", EEB_SRV_R_PREDICTIONS, OWNER,
     eeb_srv_api_predictions},
    {"POST", "/api/v1/runs/{id}/score", EEB_SRV_R_SCORE, OWNER, eeb_srv_api_score},
    {"GET", "/api/v1/runs/{id}/record", EEB_SRV_R_RECORD, OWNER, eeb_srv_api_record},
    {"POST", "/api/v1/runs/{id}/abandon", EEB_SRV_R_ABANDON, OWNER, eeb_srv_api_abandon},
    {"GET", "/api/v1/leaderboard", EEB_SRV_R_BOARD, ANYONE, eeb_srv_api_board},
    {"GET", "/", EEB_SRV_R_PAGE_BOARD, ANYONE, eeb_srv_page_board},
    {"GET", "/leaderboard", EEB_SRV_R_PAGE_BOARD, ANYONE, eeb_srv_page_board},
    {"GET", "/runs/{id}", EEB_SRV_R_PAGE_RUN, ANYONE, eeb_srv_page_run},
    {"GET", "/api/v1/runs", EEB_SRV_R_RUN_LIST, ANYONE, eeb_srv_api_runs},
    {"GET", "/runs", EEB_SRV_R_PAGE_RUNS, ANYONE, eeb_srv_page_runs},
    {"POST", "/api/v1/station/samples", EEB_SRV_R_STATION, STATION, eeb_srv_api_station},
};

/* url against pattern: 1 on a match, with {id} in *id (0 if it has none). */
static int match(const char *pattern, const char *url, int64_t *id)
{
    *id = 0;
    while (*pattern && *url) {
        if (strncmp(pattern, "{id}", 4) == 0) {
            int64_t v = 0;
            int digits = 0;
            for (; '0' <= *url && *url <= '9' && digits < 18; url++, digits++)
                v = v * 10 + (*url - '0');
            if (!digits || v == 0)
                return 0;
            *id = v;
            pattern += 4;
        } else if (*pattern++ != *url++) {
            return 0;
        }
    }
    return !*pattern && !*url;
}

/* The team's own run {id} into k (1), or the answer sent (0: 404, for a
 * run of another team's as for none). */
static int own_run(struct eeb_srv_call *k, enum MHD_Result *sent)
{
    char err[256], msg[96];
    int found = eeb_srv_store_run_get(k->s->store, k->id, &k->run, err, sizeof err);
    if (found < 0) {
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
    } else if (!found || k->run.team != k->team) {
        /* another team's run is answered as none: the API tells a team
         * of its own runs alone, and no 403 says "that one is someone's" */
        snprintf(msg, sizeof msg, "no run %lld of team %s", (long long)k->id, k->team_name);
        *sent = eeb_srv_call_fail(k, 404, NULL, msg);
        found = 0;
    }
    return found > 0;
}

/* The bearer token's team (a station's key: its station) into k (1), or
 * the 401 sent (0). */
static int authenticate(struct eeb_srv_call *k, enum access access, enum MHD_Result *sent)
{
    const char *auth = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Authorization");
    char err[256];
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != EEB_TOKEN_HEX - 1) {
        *sent = eeb_srv_call_fail(k, 401, "Authorization", "a bearer token is required");
    } else if (access == STATION) {
        if ((k->station = eeb_srv_agent_by_key(k->s, auth + 7)) < 0)
            *sent = eeb_srv_call_fail(k, 401, "Authorization", "unknown station key");
        return k->station >= 0;
    } else if (eeb_srv_store_team_by_token(k->s->store, auth + 7, &k->team, k->team_name, err,
                                           sizeof err))
        *sent = eeb_srv_call_fail(k, 500, NULL, err);
    else if (!k->team)
        *sent = eeb_srv_call_fail(k, 401, "Authorization", "unknown token");
    return k->team != 0;
}

static enum MHD_Result dispatch(struct eeb_server *s, struct MHD_Connection *c, const char *url,
                                const char *method, const struct eeb_srv_request *q)
{
    struct eeb_srv_call k = {.s = s, .c = c, .q = q, .route = EEB_SRV_R_OTHER};
    const struct route_def *def = NULL, *path = NULL;
    for (size_t i = 0; i < sizeof route_defs / sizeof *route_defs && !def; i++)
        if (match(route_defs[i].pattern, url, &k.id)) {
            path = path ? path : &route_defs[i];
            def = strcmp(route_defs[i].method, method) == 0 ? &route_defs[i] : NULL;
        }
    if (!path)
        return eeb_srv_call_fail(&k, 404, NULL, "no such route");
    k.route = def ? def->route : path->route;
    if (!def) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s takes %s", url, path->method);
        return eeb_srv_call_fail(&k, 405, NULL, msg);
    }
    char err[256];
    if (eeb_srv_store_ready(s->store, err, sizeof err))
        return eeb_srv_call_fail(&k, 500, NULL, err);
    enum MHD_Result sent = MHD_NO;
    if (def->access != ANYONE && !authenticate(&k, def->access, &sent))
        return sent;
    if ((def->access == TEAM || def->access == OWNER) && !allowed(s, k.team))
        return eeb_srv_call_fail(&k, 429, NULL,
                                 "too many requests: slow down (per-team rate limit)");
    if (def->access == OWNER && !own_run(&k, &sent))
        return sent;
    return def->handle(&k);
}

/* ---- libmicrohttpd's callbacks ---- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **con_cls)
{
    (void)version;
    struct eeb_server *s = cls;
    struct eeb_srv_request *q = *con_cls;
    if (!q) {
        if (!(q = calloc(1, sizeof *q)))
            return MHD_NO;
        *con_cls = q;
        /* a declared length past the cap is refused before its body is read */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body) {
            q->too_big = 1;
            return send_error(s, c, EEB_SRV_R_OTHER, 413, NULL, "the request body is too large");
        }
        return MHD_YES;
    }
    if (*upload_len) {
        size_t n = *upload_len;
        *upload_len = 0;
        if (q->too_big)
            return MHD_YES;
        if (n > s->cfg.max_body - q->len) {
            q->too_big = 1;
            free(q->body), q->body = NULL;
            return send_error(s, c, EEB_SRV_R_OTHER, 413, NULL, "the request body is too large");
        }
        char *grown = realloc(q->body, q->len + n);
        if (!grown)
            return MHD_NO;
        memcpy(grown + q->len, upload, n);
        q->body = grown, q->len += n;
        return MHD_YES;
    }
    if (q->too_big)
        return MHD_YES; /* answered already */
    return dispatch(s, c, url, method, q);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode why)
{
    (void)cls, (void)c, (void)why;
    struct eeb_srv_request *q = *con_cls;
    if (q)
        free(q->body);
    free(q);
    *con_cls = NULL;
}

/* ---- start and stop ---- */

static void free_sets(struct eeb_srv_testset **sets)
{
    for (int t = 0; t < EEB_TASK_COUNT; t++)
        if (sets[t]) {
            eeb_srv_testset_free(sets[t]);
            free(sets[t]);
            sets[t] = NULL;
        }
}

/* Each test set given (practice: the practice sets): its truth held, its
 * inputs copied without it to <db>.<task>-inputs.eebd (-practice.eebd),
 * mode 0600; the secret sets' items named by the server's key.  A secret
 * set must be its owner's alone (a practice set's labels are public).
 * The shard writer makes its file as the umask says, so the umask is
 * narrowed around it; before the pool starts, when eeb serve has no other
 * thread whose files it could narrow. */
static int load_sets(struct eeb_server *s, int practice, char *err, size_t errlen)
{
    const char *const *paths = practice ? s->cfg.practice : s->cfg.test;
    struct eeb_srv_testset **sets = practice ? s->practice : s->test;
    uint8_t key[EEB_SRV_KEY_BYTES];
    int rc = practice ? EEB_OK : eeb_srv_store_key(s->store, key, err, errlen);
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++) {
        if (!paths[t])
            continue;
        char *inputs = NULL;
        if (asprintf(&inputs, "%s.%s-%s.eebd", s->cfg.db, eeb_task_name((enum eeb_task)t),
                     practice ? "practice" : "inputs") < 0 ||
            !(sets[t] = calloc(1, sizeof *sets[t]))) {
            free(inputs);
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
            break;
        }
        mode_t umask_was = umask(077);
        rc = eeb_srv_testset_load(sets[t], (enum eeb_task)t, paths[t], inputs,
                                  practice ? NULL : key, err, errlen);
        umask(umask_was);
        /* exactly 0600, whatever bits of the owner's an odd umask took */
        if (rc == EEB_OK && chmod(inputs, 0600) != 0)
            rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", inputs, strerror(errno));
        free(inputs);
        if (rc) {
            free(sets[t]);
            sets[t] = NULL;
        }
    }
    explicit_bzero(key, sizeof key);
    return rc;
}

/* Each base model given, named by its SHA-256, its network kept. */
static int load_models(struct eeb_server *s, char *err, size_t errlen)
{
    int rc = EEB_OK;
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++)
        if (s->cfg.model[t])
            rc = eeb_srv_base_model_load(&s->model[t], (enum eeb_task)t, s->cfg.model[t], err,
                                         errlen);
    return rc;
}

/* Each fine-tune set given, named by its SHA-256 and size. */
static int name_finetune_sets(struct eeb_server *s, char *err, size_t errlen)
{
    int rc = EEB_OK;
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++)
        if (s->cfg.finetune[t])
            rc = eeb_srv_finetune_set_name(&s->finetune[t], (enum eeb_task)t, s->cfg.finetune[t],
                                           err, errlen);
    return rc;
}

/* A task's sets agree, so that a run fine-tuned on the fine-tune set can be
 * tested on the test sets: items of one shape, the same classes.  Else the
 * server does not start, naming the two files. */
static int sets_agree(const struct eeb_server *s, char *err, size_t errlen)
{
    int rc = EEB_OK;
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++) {
        const char *test = s->cfg.test[t], *practice = s->cfg.practice[t];
        const char *ft = s->cfg.finetune[t], *held = test ? test : practice;
        if (test && practice)
            rc = eeb_shards_agree_files(test, practice, err, errlen);
        if (rc == EEB_OK && ft && held)
            rc = eeb_shards_agree_files(ft, held, err, errlen);
    }
    return rc;
}

static void server_free(struct eeb_server *s)
{
    eeb_srv_store_close(s->store);
    free_sets(s->test);
    free_sets(s->practice);
    eeb_srv_board_cache_free(s);
    for (int t = 0; t < EEB_TASK_COUNT; t++)
        eeb_net_free(s->model[t].net);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->board_lock);
    pthread_mutex_destroy(&s->live_lock);
    pthread_cond_destroy(&s->live_made);
    pthread_mutex_destroy(&s->settle_lock);
    pthread_mutex_destroy(&s->score_lock);
    pthread_cond_destroy(&s->settle_wake);
    free(s);
}

/* File descriptors the server holds beside its connections: its database
 * connections (a pair a thread), the files a request reads, the meters. */
#define FILES_BESIDE_CONNECTIONS(threads) (128 + 4 * (rlim_t)(threads))

/* Room for cfg's connections under RLIMIT_NOFILE, the soft limit raised
 * (within the hard one) if need be: past it accept() fails, and the
 * server would stop taking connections with no word of why. */
static int room_for_connections(const struct eeb_server_config *cfg, char *err, size_t errlen)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)cfg->max_connections + FILES_BESIDE_CONNECTIONS(cfg->threads);
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
        return EEB_OK;
    struct rlimit raised = {.rlim_cur = need, .rlim_max = rl.rlim_max};
    if ((rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) ||
        setrlimit(RLIMIT_NOFILE, &raised) != 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "--max-connections %u needs %llu open files, but this process may open "
                        "%llu (ulimit -n; at most %llu): lower --max-connections or raise the "
                        "limit",
                        cfg->max_connections, (unsigned long long)need,
                        (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
    return EEB_OK;
}

int eeb_server_start(const struct eeb_server_config *cfg, struct eeb_server **out, char *err,
                     size_t errlen)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port)};
    if (cfg->port < 0 || cfg->port > 65535)
        return eeb_errf(err, errlen, EEB_EINVAL, "port %d is not 0..65535", cfg->port);
    if (inet_pton(AF_INET, cfg->bind, &sa.sin_addr) != 1)
        return eeb_errf(err, errlen, EEB_EINVAL, "bind address '%s' is not an IPv4 address",
                        cfg->bind);
    if (cfg->threads < 1 || cfg->threads > 256 || cfg->max_body < 1)
        return eeb_errf(err, errlen, EEB_EINVAL, "threads must be 1..256 and max_body positive");
    /* libmicrohttpd gives each pool thread its share of the connections */
    if (cfg->max_connections < (unsigned)cfg->threads || cfg->max_per_ip < 1 ||
        cfg->connection_timeout_s < 1 || cfg->max_samples < 1)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "max_connections must be at least threads (%d), and max_per_ip, "
                        "connection_timeout_s and max_samples positive",
                        cfg->threads);
    int rc = room_for_connections(cfg, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_srv_database_private(cfg->db, err, errlen);
    if (rc)
        return rc;
    struct eeb_server *s = calloc(1, sizeof *s);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    s->cfg = *cfg;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->board_lock, NULL);
    pthread_mutex_init(&s->live_lock, NULL);
    pthread_mutex_init(&s->settle_lock, NULL);
    pthread_mutex_init(&s->score_lock, NULL);
    pthread_cond_init(&s->settle_wake, NULL);
    pthread_condattr_t monotonic; /* a wait for a page is bounded on the clock that does not jump */
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&s->live_made, &monotonic);
    pthread_condattr_destroy(&monotonic);
    struct eeb_rules rules;
    rc = eeb_score_rules_load(NULL, &rules, err, errlen);
    /* a secret others may read is refused before anything is made */
    for (int t = 0; t < EEB_TASK_COUNT && rc == EEB_OK; t++)
        if (cfg->test[t])
            rc = eeb_srv_file_private(cfg->test[t], "test set", err, errlen);
    if (rc == EEB_OK)
        rc = eeb_srv_store_open(cfg->db, &s->store, err, errlen);
    if (rc == EEB_OK)
        rc = load_sets(s, 0, err, errlen);
    if (rc == EEB_OK)
        rc = load_sets(s, 1, err, errlen);
    if (rc == EEB_OK)
        rc = name_finetune_sets(s, err, errlen);
    if (rc == EEB_OK)
        rc = sets_agree(s, err, errlen);
    if (rc == EEB_OK)
        rc = load_models(s, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_srv_agents_load(s, err, errlen);
    if (rc) {
        server_free(s);
        return rc;
    }
    snprintf(s->rules_version, sizeof s->rules_version, "%s", rules.version);
    memcpy(s->weights, rules.weights, sizeof s->weights);
    s->power_rule = rules.power;
    s->daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, handle, s,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)cfg->threads, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
        /* idle this long, closed; a slow header is bounded by the per-address
         * cap alone (libmicrohttpd 0.9.75 has no deadline for a request's
         * headers, and restarts this timeout at every byte) */
        MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout_s, MHD_OPTION_CONNECTION_LIMIT,
        cfg->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_ip, MHD_OPTION_END);
    if (!s->daemon) {
        server_free(s);
        return eeb_errf(err, errlen, EEB_EIO, "cannot listen on %s:%d (in use, or no permission)",
                        cfg->bind, cfg->port);
    }
    /* the runs in flight taken up once the port is this server's: another
     * server on the same store fails to listen and touches none of them */
    if ((rc = eeb_srv_resume(s, err, errlen)) || (rc = eeb_srv_stations_watch(s, err, errlen)) ||
        (rc = eeb_srv_settler_start(s, err, errlen))) {
        eeb_server_stop(s);
        return rc;
    }
    *out = s;
    return EEB_OK;
}

int eeb_server_port(const struct eeb_server *s)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : -1;
}

void eeb_server_stop(struct eeb_server *s)
{
    if (!s)
        return;
    eeb_srv_settler_stop(s);
    MHD_stop_daemon(s->daemon);
    eeb_srv_stations_unwatch(s);
    eeb_srv_meters_stop(s);
    server_free(s);
}
