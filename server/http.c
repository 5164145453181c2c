/*
 * http.c - the server's HTTP side on libmicrohttpd: a thread pool, request
 * bodies gathered up to a cap (413 past it, before reading more), a route
 * table, JSON errors that name the field at fault, and counters for
 * /metrics.  Every response is JSON except /metrics (Prometheus text).
 */
#include "server_int.h"

#include "eeb_run.h"
#include "eeb_score.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum route { R_HEALTHZ, R_METRICS, R_WHOAMI, R_RUNS, R_RUN, R_COMPLETE, R_TEST, R_OTHER, R_COUNT };
static const char *const route_names[] = {"healthz", "metrics",  "whoami", "runs",
                                          "run",     "complete", "test",   "other"};
static const int codes[] = {200, 201, 400, 401, 403, 404, 405, 409, 413, 429, 500};
#define N_BUCKETS 1024
#define N_CODES   (sizeof codes / sizeof *codes)

struct eeb_server {
    struct MHD_Daemon *daemon;
    struct store *store;
    struct eeb_server_config cfg;
    char rules_version[16];
    char *inputs[EEB_TASK_COUNT]; /* the test sets without labels, or NULL */
    atomic_ullong requests[R_COUNT][N_CODES];
    pthread_mutex_t lock; /* the buckets */
    struct bucket {
        int64_t team; /* 0: free */
        double tokens;
        int64_t last_ns;
    } buckets[N_BUCKETS];
};

/* One request: its body so far. */
struct request {
    char *body;
    size_t len;
    int too_big;
};

void eeb_server_config_default(struct eeb_server_config *c)
{
    *c = (struct eeb_server_config){.db = "eeb-server.db",
                                    .bind = "127.0.0.1",
                                    .port = 8080,
                                    .threads = 2,
                                    .max_body = 1 << 20,
                                    .rate_limit = 200,
                                    .rate_burst = 400};
}

/* ---- responses ---- */

/* Counts the answer for /metrics and queues resp (taken). */
static enum MHD_Result queue(struct eeb_server *s, struct MHD_Connection *c, enum route r, int code,
                             const char *type, struct MHD_Response *resp)
{
    for (size_t i = 0; i < N_CODES; i++)
        if (codes[i] == code)
            atomic_fetch_add(&s->requests[r][i], 1);
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)code, resp);
    MHD_destroy_response(resp);
    return ok;
}

static enum MHD_Result reply(struct eeb_server *s, struct MHD_Connection *c, enum route r, int code,
                             const char *type, const char *body)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    return resp ? queue(s, c, r, code, type, resp) : MHD_NO;
}

/* Sends o (taken) as JSON. */
static enum MHD_Result send_json(struct eeb_server *s, struct MHD_Connection *c, enum route r,
                                 int code, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    enum MHD_Result ok =
        text ? reply(s, c, r, code, "application/json", text)
             : reply(s, c, r, 500, "application/json", "{\"error\":\"out of memory\"}");
    free(text);
    return ok;
}

/* {"error": message[, "field": field]} */
static enum MHD_Result send_error(struct eeb_server *s, struct MHD_Connection *c, enum route r,
                                  int code, const char *field, const char *message)
{
    json_t *o = json_pack("{s:s}", "error", message);
    if (o && field)
        json_object_set_new(o, "field", json_string(field));
    return send_json(s, c, r, code, o);
}

/* ---- the per-team rate limit ---- */

/* A token bucket per team: `rate` requests a second, up to `burst` at once. */
static int allowed(struct eeb_server *s, int64_t team)
{
    if (s->cfg.rate_limit <= 0)
        return 1;
    int64_t now = eeb_mono_ns();
    pthread_mutex_lock(&s->lock);
    struct bucket *b = &s->buckets[(uint64_t)team % N_BUCKETS];
    for (size_t probe = 0; b->team && b->team != team && probe < N_BUCKETS; probe++)
        b = &s->buckets[((uint64_t)team + probe + 1) % N_BUCKETS];
    if (b->team != team) /* a new team, or a full table: the slot is taken over */
        *b = (struct bucket){.team = team, .tokens = s->cfg.rate_burst, .last_ns = now};
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

/* What a handler is given. */
struct call {
    struct eeb_server *s;
    struct MHD_Connection *c;
    enum route route;
    sqlite3 *db;
    const struct request *q;
    int64_t id; /* the {id} in the path */
    int64_t team;
    char team_name[65];
    struct store_run run; /* routes on a run: the team's own run {id} */
    char state[16];       /* and its state */
};

static enum MHD_Result fail(struct call *k, int code, const char *field, const char *message)
{
    return send_error(k->s, k->c, k->route, code, field, message);
}

static enum MHD_Result healthz(struct call *k)
{
    return send_json(k->s, k->c, k->route, 200, json_pack("{s:s}", "status", "ok"));
}

static enum MHD_Result metrics(struct call *k)
{
    struct eeb_server *s = k->s;
    char text[8192], err[256];
    size_t used = (size_t)snprintf(text, sizeof text,
                                   "# HELP eeb_http_requests_total Requests answered, by route "
                                   "and status.\n# TYPE eeb_http_requests_total counter\n");
    for (int r = 0; r < R_COUNT; r++)
        for (size_t i = 0; i < N_CODES; i++) {
            unsigned long long n = atomic_load(&s->requests[r][i]);
            if (n && used < sizeof text)
                used += (size_t)snprintf(text + used, sizeof text - used,
                                         "eeb_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n",
                                         route_names[r], codes[i], n);
        }
    int64_t teams = 0;
    if (store_count_teams(k->db, &teams, err, sizeof err))
        return fail(k, 500, NULL, err);
    if (used < sizeof text)
        snprintf(text + used, sizeof text - used,
                 "# HELP eeb_teams Teams registered.\n# TYPE eeb_teams gauge\neeb_teams %lld\n",
                 (long long)teams);
    return reply(s, k->c, k->route, 200, "text/plain; version=0.0.4", text);
}

static enum MHD_Result whoami(struct call *k)
{
    return send_json(k->s, k->c, k->route, 200,
                     json_pack("{s:s, s:I}", "team", k->team_name, "id", (json_int_t)k->team));
}

static json_t *run_json(const struct store_run *r, const char *state)
{
    return json_pack("{s:I, s:s, s:s, s:f, s:f}", "run_id", (json_int_t)r->id, "task",
                     eeb_task_name((enum eeb_task)r->task), "state", state, "t_max_s", r->t_max_s,
                     "p_max_w", r->p_max_w);
}

/* POST /api/v1/runs {"task": "cls"}: a run, with the budgets it is held to. */
static enum MHD_Result register_run(struct call *k)
{
    char err[256];
    json_error_t je;
    json_t *body = json_loadb(k->q->body ? k->q->body : "", k->q->len, 0, &je);
    if (!body) {
        snprintf(err, sizeof err, "the body is not JSON: %s (line %d, column %d)", je.text, je.line,
                 je.column);
        return fail(k, 400, NULL, err);
    }
    json_t *task = json_object_get(body, "task");
    enum eeb_task t;
    enum MHD_Result ok;
    if (!json_is_object(body)) {
        ok = fail(k, 400, NULL, "the body must be a JSON object");
    } else if (!json_is_string(task)) {
        ok = fail(k, 400, "task", "expected a string: cls, det or video");
    } else if (eeb_task_parse(json_string_value(task), &t, err, sizeof err)) {
        ok = fail(k, 400, "task", err);
    } else {
        const struct eeb_run_profile *p = eeb_run_profile(t);
        struct store_run r = {.team = k->team,
                              .task = (int)t,
                              .t_max_s = p->t_max_s,
                              .p_max_w = p->p_max_w,
                              .rules_version = k->s->rules_version};
        if (store_run_register(k->db, &r, err, sizeof err)) {
            ok = fail(k, 500, NULL, err);
        } else {
            json_t *o = run_json(&r, "registered");
            json_object_set_new(o, "team", json_string(k->team_name));
            json_object_set_new(o, "rules_version", json_string(r.rules_version));
            ok = send_json(k->s, k->c, k->route, 201, o);
        }
    }
    json_decref(body);
    return ok;
}

/* The team's own run {id} into k (1), or the answer sent (0: 404, 403). */
static int own_run(struct call *k, enum MHD_Result *sent)
{
    char err[256], msg[96];
    int found = store_run_get(k->db, k->id, &k->run, k->state, err, sizeof err);
    if (found < 0) {
        *sent = fail(k, 500, NULL, err);
    } else if (!found) {
        snprintf(msg, sizeof msg, "no run %lld", (long long)k->id);
        *sent = fail(k, 404, NULL, msg);
    } else if (k->run.team != k->team) {
        snprintf(msg, sizeof msg, "run %lld belongs to another team", (long long)k->id);
        *sent = fail(k, 403, NULL, msg);
        found = 0;
    }
    return found > 0;
}

static enum MHD_Result get_run(struct call *k)
{
    return send_json(k->s, k->c, k->route, 200, run_json(&k->run, k->state));
}

/* POST /api/v1/runs/{id}/complete: fine-tuning is over.  Saying it twice
 * is harmless; saying it of a run past that stage is a conflict. */
static enum MHD_Result complete_run(struct call *k)
{
    char err[256];
    if (strcmp(k->state, "registered") == 0) {
        int moved = store_run_move(k->db, k->id, "registered", "complete", err, sizeof err);
        if (moved < 0)
            return fail(k, 500, NULL, err);
    } else if (strcmp(k->state, "complete") != 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "run %lld is %s, past completion", (long long)k->id, k->state);
        return fail(k, 409, "state", msg);
    }
    return send_json(k->s, k->c, k->route, 200, run_json(&k->run, "complete"));
}

/* GET /api/v1/runs/{id}/test: the run's test inputs, labels stripped,
 * once fine-tuning is complete. */
static enum MHD_Result test_inputs(struct call *k)
{
    char msg[128];
    const char *path = k->s->inputs[k->run.task];
    if (!path) {
        snprintf(msg, sizeof msg, "this server holds no %s test set",
                 eeb_task_name((enum eeb_task)k->run.task));
        return fail(k, 404, NULL, msg);
    }
    if (strcmp(k->state, "registered") == 0) {
        snprintf(msg, sizeof msg, "run %lld is still fine-tuning: complete it first",
                 (long long)k->id);
        return fail(k, 409, "state", msg);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return fail(k, 500, NULL, "the test inputs cannot be read");
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) {
        close(fd);
        return MHD_NO;
    }
    return queue(k->s, k->c, k->route, 200, "application/octet-stream", resp);
}

/* auth: the route needs a team's token; a pattern with {id} also needs
 * the run to be that team's, and its handler finds it in the call. */
static const struct route_def {
    const char *method, *pattern; /* "{id}": a run id */
    enum route route;
    int auth;
    enum MHD_Result (*handle)(struct call *k);
} route_defs[] = {
    {"GET", "/healthz", R_HEALTHZ, 0, healthz},
    {"GET", "/metrics", R_METRICS, 0, metrics},
    {"GET", "/api/v1/whoami", R_WHOAMI, 1, whoami},
    {"POST", "/api/v1/runs", R_RUNS, 1, register_run},
    {"GET", "/api/v1/runs/{id}", R_RUN, 1, get_run},
    {"POST", "/api/v1/runs/{id}/complete", R_COMPLETE, 1, complete_run},
    {"GET", "/api/v1/runs/{id}/test", R_TEST, 1, test_inputs},
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

/* The bearer token's team into k (1), or the 401 sent (0). */
static int authenticate(struct call *k, enum MHD_Result *sent)
{
    const char *auth = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Authorization");
    char err[256];
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) != EEB_TOKEN_HEX - 1)
        *sent = fail(k, 401, "Authorization", "a bearer token is required");
    else if (store_team_by_token(k->db, auth + 7, &k->team, k->team_name, err, sizeof err))
        *sent = fail(k, 500, NULL, err);
    else if (!k->team)
        *sent = fail(k, 401, "Authorization", "unknown token");
    return k->team != 0;
}

static enum MHD_Result dispatch(struct eeb_server *s, struct MHD_Connection *c, const char *url,
                                const char *method, const struct request *q)
{
    struct call k = {.s = s, .c = c, .q = q, .route = R_OTHER};
    const struct route_def *def = NULL, *path = NULL;
    for (size_t i = 0; i < sizeof route_defs / sizeof *route_defs && !def; i++)
        if (match(route_defs[i].pattern, url, &k.id)) {
            path = path ? path : &route_defs[i];
            def = strcmp(route_defs[i].method, method) == 0 ? &route_defs[i] : NULL;
        }
    if (!path)
        return fail(&k, 404, NULL, "no such route");
    k.route = path->route;
    if (!def) {
        char msg[96];
        snprintf(msg, sizeof msg, "%s takes %s", url, path->method);
        return fail(&k, 405, NULL, msg);
    }
    char err[256];
    if (!(k.db = store_conn(s->store, err, sizeof err)))
        return fail(&k, 500, NULL, err);
    enum MHD_Result sent = MHD_NO;
    if (def->auth && !authenticate(&k, &sent))
        return sent;
    if (def->auth && !allowed(s, k.team))
        return fail(&k, 429, NULL, "too many requests: slow down (per-team rate limit)");
    if (k.id && !own_run(&k, &sent))
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
    struct request *q = *con_cls;
    if (!q) {
        if (!(q = calloc(1, sizeof *q)))
            return MHD_NO;
        *con_cls = q;
        /* a declared length past the cap is refused before its body is read */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body) {
            q->too_big = 1;
            return send_error(s, c, R_OTHER, 413, NULL, "the request body is too large");
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
            return send_error(s, c, R_OTHER, 413, NULL, "the request body is too large");
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
    struct request *q = *con_cls;
    if (q)
        free(q->body);
    free(q);
    *con_cls = NULL;
}

/* ---- start and stop ---- */

/* Writes the test set at path, labels and boxes stripped, to out. */
static int strip_labels(const char *path, enum eeb_task task, const char *out, char *err,
                        size_t errlen)
{
    struct eeb_shard *in;
    int rc = eeb_shard_open(&in, path, err, errlen);
    if (rc)
        return rc;
    const struct eeb_shard_info *info = eeb_shard_info(in);
    struct eeb_shard_writer *w = NULL;
    if (info->task != task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s holds %s data, given as the %s test set", path,
                      eeb_task_name(info->task), eeb_task_name(task));
    else
        rc = eeb_shard_create(&w, out, info, err, errlen);
    const struct eeb_record *rec;
    struct eeb_record bare;
    int more;
    while (rc == EEB_OK && (more = eeb_shard_next(in, &rec, err, errlen)) != 0) {
        if (more < 0) {
            rc = more;
            break;
        }
        bare.index = rec->index, bare.label = 0, bare.nboxes = 0, bare.pixels = rec->pixels;
        memcpy(bare.id, rec->id, sizeof bare.id);
        rc = eeb_shard_write(w, &bare, err, errlen);
    }
    if (w)
        rc = rc == EEB_OK ? eeb_shard_finish(w, err, errlen) : (eeb_shard_abort(w), rc);
    eeb_shard_close(in);
    return rc;
}

static int prepare_inputs(struct eeb_server *s, char *err, size_t errlen)
{
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        if (!s->cfg.test[t])
            continue;
        if (asprintf(&s->inputs[t], "%s.%s-inputs.eebd", s->cfg.db,
                     eeb_task_name((enum eeb_task)t)) < 0) {
            s->inputs[t] = NULL;
            return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        }
        int rc = strip_labels(s->cfg.test[t], (enum eeb_task)t, s->inputs[t], err, errlen);
        if (rc)
            return rc;
    }
    return EEB_OK;
}

static void free_inputs(struct eeb_server *s)
{
    for (int t = 0; t < EEB_TASK_COUNT; t++)
        free(s->inputs[t]);
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
    struct eeb_server *s = calloc(1, sizeof *s);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    s->cfg = *cfg;
    pthread_mutex_init(&s->lock, NULL);
    struct eeb_rules rules;
    int rc = eeb_score_rules_load(NULL, &rules, err, errlen);
    if (rc == EEB_OK)
        rc = store_open(cfg->db, &s->store, err, errlen);
    if (rc == EEB_OK && (rc = prepare_inputs(s, err, errlen)))
        store_close(s->store);
    if (rc) {
        free_inputs(s);
        free(s);
        return rc;
    }
    snprintf(s->rules_version, sizeof s->rules_version, "%s", rules.version);
    s->daemon =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, handle, s,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE,
                         (unsigned)cfg->threads, MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                         MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!s->daemon) {
        store_close(s->store);
        free_inputs(s);
        free(s);
        return eeb_errf(err, errlen, EEB_EIO, "cannot listen on %s:%d (in use, or no permission)",
                        cfg->bind, cfg->port);
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
    MHD_stop_daemon(s->daemon);
    store_close(s->store);
    free_inputs(s);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
