/*
 * client.c - the evaluation server's client on libcurl.  A call that fails
 * for a reason that may pass (no connection, a timeout, 429 but for a
 * day's quota, 5xx) is tried again after a pause that doubles; the server
 * makes every step safe to repeat, so a retry never counts twice (test
 * inputs fetched again are the same bytes, due from the first fetch).  A run is sent as the server
 * records one: its chain of events and samples link by link, from the
 * first link the server lacks; its predictions without the truth they were
 * judged by locally.
 */
#include "eeb_client.h"

#include "common/eeb_json.h"

#include "fpga/model/eeb_device.h"
#include "fpga/model/eeb_perf.h"
#include "power/eeb_power.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"
#include "sut/eeb_sut_host.h"
#include "tasks/eeb_prediction.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINK_BATCH_RECORDS 4096 /* samples and events: about 400 KB of JSON, under 1 MiB */
#define LINK_BATCH_LINKS   1000
#define PREDICTION_BATCH   500
#define MAX_REPLY          (64 << 20)

int eeb_client_init(struct eeb_client *c, const char *url, const char *token, char *err,
                    size_t errlen)
{
    memset(c, 0, sizeof *c);
    size_t n = strlen(url);
    while (n && url[n - 1] == '/')
        n--;
    if (n == 0 || n >= sizeof c->url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
        return eeb_errf(err, errlen, EEB_EINVAL, "server URL '%s': expected http://HOST[:PORT]",
                        url);
    if (!token || strlen(token) != 64 || strspn(token, "0123456789abcdef") != 64)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "the token must be the 64 hex digits `eeb serve admin add-team` showed");
    memcpy(c->url, url, n);
    snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", token);
    c->tries = 6, c->backoff_s = 0.25, c->timeout_s = 60;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (!(c->curl = curl_easy_init()))
        return eeb_errf(err, errlen, EEB_ENOMEM, "libcurl: cannot make a handle");
    return EEB_OK;
}

int eeb_client_clone(const struct eeb_client *from, struct eeb_client *to, char *err, size_t errlen)
{
    *to = *from;
    if (!(to->curl = curl_easy_init()))
        return eeb_errf(err, errlen, EEB_ENOMEM, "libcurl: cannot make a handle");
    return EEB_OK;
}

void eeb_client_free(struct eeb_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    memset(c->auth, 0, sizeof c->auth);
    c->curl = NULL;
}

/* ---- one call ---- */

/* Where an answer goes: memory, or a file for a 200 (a download). */
struct sink {
    char *data;
    size_t len;
    FILE *file;
    CURL *h;
};

static size_t gather(char *data, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    long code = 0;
    if (s->file && curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code) == CURLE_OK &&
        code == 200)
        return fwrite(data, 1, len, s->file) == len ? len : 0;
    if (s->len + len > MAX_REPLY)
        return 0;
    char *grown = realloc(s->data, s->len + len + 1);
    if (!grown)
        return 0;
    memcpy(grown + s->len, data, len);
    s->data = grown, s->len += len;
    s->data[s->len] = '\0';
    return len;
}

static void pause_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    nanosleep(&ts, NULL);
}

/* One attempt: the transport's result, the status, the body in sink. */
static CURLcode attempt(struct eeb_client *c, const char *method, const char *path,
                        const char *body, struct sink *sink, long *status)
{
    CURL *h = c->curl;
    char url[1024];
    snprintf(url, sizeof url, "%s%s", c->url, path);
    struct curl_slist *headers = curl_slist_append(NULL, c->auth);
    headers = curl_slist_append(headers, "Content-Type: application/json");
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, gather);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (strncmp(c->url, "http://127.", 11) == 0)
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*"); /* a proxy cannot reach our loopback */
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    CURLcode rc = curl_easy_perform(h);
    *status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(headers);
    return rc;
}

/* Sends and retries; sink gets the final answer's body. */
static int exchange(struct eeb_client *c, const char *method, const char *path, const char *body,
                    struct sink *sink, long *status, char *err, size_t errlen)
{
    double wait = c->backoff_s;
    for (int t = 1;; t++) {
        free(sink->data), sink->data = NULL, sink->len = 0;
        if (sink->file && (fflush(sink->file) || ftruncate(fileno(sink->file), 0) ||
                           fseek(sink->file, 0, SEEK_SET)))
            return eeb_errf(err, errlen, EEB_EIO, "%s %s: cannot rewrite the download: %s", method,
                            path, strerror(errno));
        CURLcode rc = attempt(c, method, path, body, sink, status);
        /* a day's quota does not pass in seconds: said at once */
        int quota = *status == 429 && sink->data && strstr(sink->data, "\"field\":\"quota.");
        int transient = rc != CURLE_OK || (*status == 429 && !quota) || *status >= 500;
        if (!transient)
            return EEB_OK;
        char why[256];
        if (rc != CURLE_OK)
            snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
        else
            snprintf(why, sizeof why, "HTTP %ld", *status);
        if (t >= c->tries)
            return eeb_errf(err, errlen, EEB_EIO, "%s %s%s: %s (after %d tries)", method, c->url,
                            path, why, t);
        if (c->log)
            fprintf(c->log, "eeb: %s %s: %s; trying again in %.2f s\n", method, path, why, wait);
        pause_s(wait);
        wait *= 2;
    }
}

/* The server's JSON answer in sink, or its error (with the field at
 * fault) in err. */
static int answer(const char *method, const char *path, long code, const struct sink *sink,
                  json_t **reply, char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_loadb(sink->data ? sink->data : "", sink->len, 0, &je);
    int rc = EEB_OK;
    if (!o)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s %s: HTTP %ld, not JSON: %s", method, path, code,
                      je.text);
    else if (code >= 400) {
        const char *field = json_string_value(json_object_get(o, "field"));
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s %s: HTTP %ld: %s%s%s%s", method, path, code,
                      json_string_value(json_object_get(o, "error")) ?: "?",
                      field ? " (field " : "", field ? field : "", field ? ")" : "");
    }
    if (rc == EEB_OK && reply)
        *reply = o;
    else
        json_decref(o);
    return rc;
}

int eeb_client_call(struct eeb_client *c, const char *method, const char *path, json_t *body,
                    json_t **reply, char *err, size_t errlen)
{
    char *text = body ? json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (body && !text)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    struct sink sink = {0};
    long code = 0;
    int rc = exchange(c, method, path, text, &sink, &code, err, errlen);
    free(text);
    if (rc == EEB_OK)
        rc = answer(method, path, code, &sink, reply, err, errlen);
    free(sink.data);
    return rc;
}

int eeb_client_download(struct eeb_client *c, const char *path, const char *file, char *err,
                        size_t errlen)
{
    struct sink sink = {.file = fopen(file, "wbe"), .h = c->curl};
    if (!sink.file)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", file, strerror(errno));
    long code = 0;
    int rc = exchange(c, "GET", path, NULL, &sink, &code, err, errlen);
    if (rc == EEB_OK && code != 200)
        rc = answer("GET", path, code, &sink, NULL, err, errlen);
    if (rc == EEB_OK && code != 200) /* a JSON answer that is not the file */
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "GET %s: HTTP %ld, not the file", path, code);
    if (fclose(sink.file) && rc == EEB_OK)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", file, strerror(errno));
    free(sink.data);
    return rc;
}

/* ---- a local run, sent ---- */

/* The backend as a run declares it: eeb's own by name ("faulty:..." by
 * its kind); a team's SUT by its kind alone, "library" or "exec": its path
 * or command line is the team's free text, which names nothing on a
 * leaderboard and which the server does not take. */
static const char *declared_backend(const char *backend, char out[EEB_DECLARED_MAX + 1])
{
    enum eeb_sut_kind kind = eeb_sut_kind_of(backend);
    if (kind != EEB_SUT_BUILTIN)
        return kind == EEB_SUT_LIBRARY ? EEB_SUT_DECLARED_LIBRARY : EEB_SUT_DECLARED_EXEC;
    snprintf(out, EEB_DECLARED_MAX + 1, "%.*s", (int)strcspn(backend, "?"), backend);
    return eeb_text_ok(backend, EEB_DECLARED_MAX, EEB_DECLARED_PUNCT) ? backend
           : eeb_text_ok(out, EEB_DECLARED_MAX, EEB_DECLARED_PUNCT)   ? out
                                                                      : "unknown";
}

/* A count the configuration records, or null when it records none. */
static json_t *count_json(double v)
{
    return isfinite(v) ? json_integer((json_int_t)v) : json_null();
}

json_t *eeb_client_system(const char *name, const char *version)
{
    return json_pack("{s:s, s:s*}", "name", name, "version",
                     version && version[0] ? version : NULL);
}

json_t *eeb_client_declaration(const char *config_json, int official)
{
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(config_json, &cfg); /* what it lacks is declared null */
    const char *design = cfg.design[0] ? cfg.design : NULL;
    char name[EEB_DECLARED_MAX + 1];
    const char *backend = declared_backend(cfg.backend, name);
    /* the device: the modeled board's, else the part the utilization
     * report names, else the backend's */
    struct eeb_design d;
    char why[256];
    eeb_design_default(&d);
    const char *device =
        design && eeb_design_parse(&d, design, why, sizeof why) == EEB_OK    ? d.device->name
        : eeb_text_ok(cfg.util_device, EEB_DECLARED_MAX, EEB_DECLARED_PUNCT) ? cfg.util_device
                                                                             : backend;
    /* a design only if the run modeled one (a team's SUT has none): left
     * out, as the server takes it, not null */
    int modeled = strcmp(cfg.clock, EEB_CLOCK_MODELED) == 0;
    json_t *o =
        json_pack("{s:s?, s:s?, s:s, s:s, s:s*, s:b}", "task", cfg.task[0] ? cfg.task : NULL,
                  "provenance", cfg.provenance[0] ? cfg.provenance : NULL, "device", device,
                  "backend", backend, "design", design, "official", official);
    if (o && !modeled) /* a modeled run's M_u is its design's, which the server models */
        json_object_set_new(o, "util",
                            json_pack("{s:o, s:o, s:o, s:o}", "lut", eeb_json_number(cfg.util[0]),
                                      "ff", eeb_json_number(cfg.util[1]), "bram",
                                      eeb_json_number(cfg.util[2]), "dsp",
                                      eeb_json_number(cfg.util[3])));
    if (o && cfg.rate_hz > 0)
        json_object_set_new(o, "rate_hz", json_real(cfg.rate_hz));
    if (o && cfg.finetune_sha256[0])
        json_object_set_new(o, "finetune", json_string(cfg.finetune_sha256));
    if (o && cfg.model_sha256[0])
        json_object_set_new(o, "model", json_string(cfg.model_sha256));
    if (o && cfg.sut_name[0]) /* the system as it named itself, if it ran before this */
        json_object_set_new(o, "system", eeb_client_system(cfg.sut_name, cfg.sut_version));
    /* in a round: the entry it is a run of, its division and P_max tier, if
     * the run named them (else the server's defaults) */
    if (o && cfg.entry[0])
        json_object_set_new(o, "entry", json_string(cfg.entry));
    if (o && cfg.division[0])
        json_object_set_new(o, "division", json_string(cfg.division));
    if (o && cfg.tier_w > 0)
        json_object_set_new(o, "p_max_w", json_real(cfg.tier_w));
    if (o && modeled) /* what the server times it by, what it was modeled for, and the
                       * schedule the server counts its steps by */
        json_object_set_new(
            o, "clock",
            json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o}", "kind", EEB_CLOCK_MODELED,
                      "train_step_s", eeb_json_number(cfg.device_step_s), "train_w",
                      eeb_json_number(cfg.device_train_w), "batch", count_json(cfg.batch), "frozen",
                      count_json(cfg.frozen), "epochs", count_json(cfg.epochs), "steps",
                      count_json(cfg.steps)));
    return o;
}

int eeb_client_round_line(const json_t *reply, char *out, size_t n)
{
    const json_t *round = json_object_get(reply, "round");
    const char *name = json_string_value(json_object_get(round, "name")),
               *entry = json_string_value(json_object_get(round, "entry")),
               *division = json_string_value(json_object_get(round, "division"));
    json_t *run = json_object_get(round, "run"), *of = json_object_get(round, "of");
    if (!name || !entry || !division || !json_is_integer(run) || !json_is_integer(of))
        return 0;
    snprintf(out, n, "run %lld of %lld of entry %s (%s division) in round %s",
             (long long)json_integer_value(run), (long long)json_integer_value(of), entry, division,
             name);
    return 1;
}

/* The links of one request being gathered. */
struct link_batch {
    struct eeb_client *c;
    char path[96];
    json_t *links;
    size_t records;
    int64_t *next; /* the server's next link, as it last answered */
    char *err;
    size_t errlen;
};

static int flush_links(struct link_batch *b)
{
    if (!json_array_size(b->links))
        return EEB_OK;
    json_t *body = json_pack("{s:O}", "links", b->links), *reply = NULL;
    int rc = body ? eeb_client_call(b->c, "POST", b->path, body, &reply, b->err, b->errlen)
                  : eeb_errf(b->err, b->errlen, EEB_ENOMEM, "out of memory");
    if (rc == EEB_OK)
        *b->next = json_integer_value(json_object_get(reply, "next"));
    json_decref(reply);
    json_decref(body);
    json_array_clear(b->links);
    b->records = 0;
    return rc;
}

/* A link as the server takes it: its records with the bytes hashed. */
static json_t *link_json(const struct eeb_rundb_link *l)
{
    json_t *o = json_pack("{s:I, s:s, s:s}", "seq", (json_int_t)l->seq, "kind",
                          eeb_link_kind_name(l->kind), "head", l->head);
    if (o && l->kind == EEB_LINK_ORIGIN) {
        json_object_set_new(o, "uuid", json_string(l->uuid));
        json_object_set_new(o, "config_sha256", json_string(l->config_sha256));
    } else if (o && l->kind == EEB_LINK_EVENT) {
        const struct eeb_rundb_event *e = &l->event;
        json_object_set_new(o, "event",
                            json_pack("[I, I, s, s?]", (json_int_t)e->t_mono_ns,
                                      (json_int_t)e->t_utc_ns, e->kind, e->payload));
    } else if (o) {
        json_t *a = json_array();
        for (size_t i = 0; i < l->nsamples; i++) {
            const struct eeb_sample *s = &l->samples[i];
            json_array_append_new(a, json_pack("[I, I, f, o, o, I]", (json_int_t)s->t_mono_ns,
                                               (json_int_t)s->t_utc_ns, s->watts,
                                               eeb_json_number(s->volts), eeb_json_number(s->amps),
                                               (json_int_t)s->flags));
        }
        json_object_set_new(o, "source", json_string(l->source));
        json_object_set_new(o, "samples", a);
    }
    return o;
}

static int batch_link(void *arg, const struct eeb_rundb_link *l)
{
    struct link_batch *b = arg;
    size_t records = l->kind == EEB_LINK_SAMPLES ? l->nsamples : 1;
    int rc = b->records + records > LINK_BATCH_RECORDS ? flush_links(b) : EEB_OK;
    json_t *o = rc == EEB_OK ? link_json(l) : NULL;
    if (rc == EEB_OK && !o)
        rc = eeb_errf(b->err, b->errlen, EEB_ENOMEM, "link %lld: out of memory", (long long)l->seq);
    if (rc)
        return rc;
    json_array_append_new(b->links, o);
    b->records += records;
    return json_array_size(b->links) >= LINK_BATCH_LINKS ? flush_links(b) : EEB_OK;
}

int eeb_client_send_links(struct eeb_client *c, int64_t server_run, struct eeb_rundb *h,
                          int64_t run, int64_t *next, char *err, size_t errlen)
{
    struct link_batch b = {
        .c = c, .links = json_array(), .next = next, .err = err, .errlen = errlen};
    snprintf(b.path, sizeof b.path, "/api/v1/runs/%lld/links", (long long)server_run);
    int rc = b.links ? eeb_rundb_links_each(h, run, *next, batch_link, &b, err, errlen)
                     : eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc == EEB_OK)
        rc = flush_links(&b);
    json_decref(b.links);
    return rc;
}

/* The link the server expects next of server_run. */
static int next_link(struct eeb_client *c, int64_t server_run, int64_t *next, char *err,
                     size_t errlen)
{
    char path[96];
    json_t *reply = NULL;
    snprintf(path, sizeof path, "/api/v1/runs/%lld", (long long)server_run);
    int rc = eeb_client_call(c, "GET", path, NULL, &reply, err, errlen);
    if (rc == EEB_OK)
        *next = json_integer_value(json_object_get(reply, "links"));
    json_decref(reply);
    return rc;
}

/* The run's chain, from the link the server lacks. */
static int send_chain(struct eeb_client *c, int64_t server_run, struct eeb_rundb *h, int64_t run,
                      char *err, size_t errlen)
{
    int64_t next = 0, from;
    int rc = next_link(c, server_run, &next, err, errlen);
    from = next;
    if (rc == EEB_OK)
        rc = eeb_client_send_links(c, server_run, h, run, &next, err, errlen);
    if (rc == EEB_OK && next == 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: run %lld has no chain (it was written before eeb chained its "
                        "records): the server takes a run's record as a chain",
                        eeb_rundb_path(h), (long long)run);
    if (rc == EEB_OK && c->log && from == next)
        fprintf(c->log, "eeb: chain: the server holds all %lld links\n", (long long)next);
    else if (rc == EEB_OK && c->log)
        fprintf(c->log, "eeb: chain sent: links %lld to %lld (the server held %lld)\n",
                (long long)from, (long long)next - 1, (long long)from);
    return rc;
}

struct prediction_batch {
    struct eeb_client *c;
    const char *db;
    char path[96];
    json_t *list;
    uint64_t sent;
    char *err;
    size_t errlen;
};

static int flush_predictions(struct prediction_batch *b)
{
    if (!json_array_size(b->list))
        return EEB_OK;
    json_t *body = json_pack("{s:O}", "predictions", b->list);
    int rc = eeb_client_call(b->c, "POST", b->path, body, NULL, b->err, b->errlen);
    json_decref(body);
    b->sent += json_array_size(b->list);
    json_array_clear(b->list);
    return rc;
}

/* A stored prediction without its truth ("label", "truth"). */
static int send_prediction(void *arg, int64_t item, const char *payload)
{
    struct prediction_batch *b = arg;
    json_t *o = json_loads(payload, 0, NULL);
    if (!o)
        return eeb_errf(b->err, b->errlen, EEB_EFORMAT,
                        "%s: the prediction of item %lld is not JSON", b->db, (long long)item);
    eeb_prediction_drop_truth(o);
    json_array_append_new(b->list, o);
    return json_array_size(b->list) == PREDICTION_BATCH ? flush_predictions(b) : EEB_OK;
}

/* Run's predictions, their truth removed. */
static int send_predictions(struct eeb_client *c, int64_t server_run, struct eeb_rundb *h,
                            int64_t run, char *err, size_t errlen)
{
    struct prediction_batch b = {
        .c = c, .db = eeb_rundb_path(h), .list = json_array(), .err = err, .errlen = errlen};
    snprintf(b.path, sizeof b.path, "/api/v1/runs/%lld/predictions", (long long)server_run);
    int rc = eeb_rundb_predictions_each(h, run, send_prediction, &b, err, errlen);
    if (rc == EEB_OK)
        rc = flush_predictions(&b);
    if (rc == EEB_OK && c->log)
        fprintf(c->log, "eeb: %llu predictions sent\n", (unsigned long long)b.sent);
    json_decref(b.list);
    return rc;
}

/* The server asked to score, with the sampler's counters of run: its
 * verdict into *verdict (free it). */
static int score(struct eeb_client *c, int64_t server_run, struct eeb_rundb *h, int64_t run,
                 json_t **verdict, char *err, size_t errlen)
{
    static const char *const counters[] = {EEB_RESULT_DROPPED, EEB_RESULT_FAILED,
                                           EEB_RESULT_MISSED};
    json_t *body = json_object();
    for (int i = 0; i < 3; i++) {
        double v;
        char e[256];
        if (eeb_rundb_result_get(h, run, counters[i], &v, e, sizeof e) == EEB_OK)
            json_object_set_new(body, counters[i], json_integer((json_int_t)v));
    }
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld/score", (long long)server_run);
    int rc = eeb_client_call(c, "POST", path, body, verdict, err, errlen);
    json_decref(body);
    return rc;
}

/* Registers the run described by row, or with *server_run given, reads
 * that run back: 1 if it is scored already (its verdict in *verdict). */
static int start(struct eeb_client *c, const char *db, const struct eeb_run_row *row,
                 int64_t *server_run, json_t **verdict, char *err, size_t errlen)
{
    json_t *reply = NULL;
    int rc;
    if (*server_run) {
        char get[96];
        snprintf(get, sizeof get, "/api/v1/runs/%lld", (long long)*server_run);
        if ((rc = eeb_client_call(c, "GET", get, NULL, &reply, err, errlen)))
            return rc;
        if (json_is_string(json_object_get(reply, "verdict"))) {
            *verdict = reply;
            return 1;
        }
        json_decref(reply);
        return EEB_OK;
    }
    json_t *declared = eeb_client_declaration(row->config, 0);
    if (!declared)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: run %lld: its configuration is not JSON", db,
                        (long long)row->id);
    rc = eeb_client_call(c, "POST", "/api/v1/runs", declared, &reply, err, errlen);
    if (rc == EEB_OK) {
        *server_run = json_integer_value(json_object_get(reply, "run_id"));
        if (c->log)
            fprintf(c->log, "eeb: registered as run %lld on %s\n", (long long)*server_run, c->url);
    }
    json_decref(declared), json_decref(reply);
    return rc;
}

int eeb_client_send_run(struct eeb_client *c, int64_t server_run, struct eeb_rundb *h, int64_t run,
                        json_t **verdict, char *err, size_t errlen)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld/complete", (long long)server_run);
    int rc = send_chain(c, server_run, h, run, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_client_call(c, "POST", path, NULL, NULL, err, errlen);
    if (rc == EEB_OK)
        rc = send_predictions(c, server_run, h, run, err, errlen);
    if (rc == EEB_OK)
        rc = score(c, server_run, h, run, verdict, err, errlen);
    return rc;
}

/* A run the server holds whose harness stopped before it ended (killed):
 * what its chain holds sent, and the run ended there, aborted for that;
 * the server's answer into *verdict. */
static int end_unfinished(struct eeb_client *c, int64_t server_run, struct eeb_rundb *h,
                          const struct eeb_run_row *row, json_t **verdict, char *err, size_t errlen)
{
    char reason[160];
    int rc = send_chain(c, server_run, h, row->id, err, errlen);
    snprintf(reason, sizeof reason,
             "its harness stopped in state %s, without a word (killed?); eeb submit ended it",
             row->state);
    return rc ? rc : eeb_client_abandon(c, server_run, reason, verdict, err, errlen);
}

int eeb_client_submit(struct eeb_client *c, const char *db, int64_t run, int64_t *server_run,
                      json_t **verdict, char *err, size_t errlen)
{
    struct eeb_rundb *h;
    struct eeb_run_row row = {0};
    int rc = eeb_rundb_open(db, EEB_RUNDB_READONLY, &h, err, errlen);
    if (rc)
        return rc;
    rc = eeb_rundb_run_get(h, run, &row, err, errlen);
    /* a run whose harness stopped (killed) is no run to register; one the
     * server holds is ended there with what it sent */
    int unfinished = rc == EEB_OK && strcmp(row.state, "done") && strcmp(row.state, "failed");
    if (unfinished && !*server_run)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: run %lld is %s, not finished (its harness was killed?): a run the "
                      "server holds ends there with --resume ID",
                      db, (long long)row.id, row.state);
    if (rc == EEB_OK)
        rc = start(c, db, &row, server_run, verdict, err, errlen);
    if (rc == EEB_OK && unfinished) /* not ended yet */
        rc = end_unfinished(c, *server_run, h, &row, verdict, err, errlen);
    else if (rc == EEB_OK) /* not scored yet */
        rc = eeb_client_send_run(c, *server_run, h, row.id, verdict, err, errlen);
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(h);
    return rc > 0 ? EEB_OK : rc;
}
