/*
 * fuzz_server_body.c - every request body the evaluation server reads, sent
 * over real HTTP on 127.0.0.1 to a server in this process: the first byte
 * picks the route (register, links of a run's chain, predictions, score,
 * or the leaderboard's query), the rest is the body.  Whatever comes in, the
 * answer must be JSON with a status under 500, hold no test item's truth
 * (no "label" or "truth" key), and the server must still answer /healthz
 * after it.
 */
#include "tasks/eeb_gen.h"
#include "server/eeb_server.h"
#include "fuzz.h"

#include <curl/curl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    struct eeb_server *s;
    CURL *h;
    char dir[64], url[64], auth[128];
    long registered, completed; /* a run in each state */
} F;

struct answer {
    char *body;
    size_t len;
};

static size_t gather(char *data, size_t size, size_t n, void *arg)
{
    struct answer *a = arg;
    char *grown = realloc(a->body, a->len + size * n + 1);
    if (!grown)
        return 0;
    memcpy(grown + a->len, data, size * n);
    a->body = grown, a->len += size * n;
    a->body[a->len] = '\0';
    return size * n;
}

/* method path [body]: the status; the answer in *a (free it), if a. */
static long call(const char *method, const char *path, const char *body, size_t len,
                 struct answer *a)
{
    char url[4200];
    struct answer none = {0};
    struct answer *to = a ? a : &none;
    snprintf(url, sizeof url, "%s%s", F.url, path);
    struct curl_slist *headers = curl_slist_append(NULL, F.auth);
    curl_easy_reset(F.h);
    curl_easy_setopt(F.h, CURLOPT_URL, url);
    curl_easy_setopt(F.h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(F.h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(F.h, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(F.h, CURLOPT_WRITEFUNCTION, gather);
    curl_easy_setopt(F.h, CURLOPT_WRITEDATA, to);
    curl_easy_setopt(F.h, CURLOPT_TIMEOUT, 20L);
    if (body) {
        curl_easy_setopt(F.h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(F.h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    long code = 0;
    CURLcode rc = curl_easy_perform(F.h);
    curl_easy_getinfo(F.h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(headers);
    free(none.body);
    if (rc != CURLE_OK && rc != CURLE_SEND_ERROR) { /* a 413 may close mid-body */
        fprintf(stderr, "%s %s: %s\n", method, path, curl_easy_strerror(rc));
        abort();
    }
    return code;
}

/* A new run of the server's, registered and, if complete, completed. */
static long new_run(int complete)
{
    static const char reg[] = "{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": "
                              "0.4, \"dsp\": 0.2}, \"provenance\": \"declared\", "
                              "\"backend\": \"xrt\"}";
    struct answer a = {0};
    if (call("POST", "/api/v1/runs", reg, strlen(reg), &a) != 201)
        abort();
    const char *id = a.body ? strstr(a.body, "\"run_id\":") : NULL;
    long run = id ? strtol(id + 9, NULL, 10) : 0;
    free(a.body);
    char path[64];
    snprintf(path, sizeof path, "/api/v1/runs/%ld/complete", run);
    if (run <= 0 || (complete && call("POST", path, NULL, 0, NULL) != 200))
        abort();
    return run;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* At exit: the server stopped, its directory removed. */
static void stop(void)
{
    eeb_server_stop(F.s);
    curl_easy_cleanup(F.h);
    nftw(F.dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void start(void)
{
    char db[96], test[96], token[EEB_TOKEN_HEX], err[512];
    /* in memory if it can be: every request commits, and a disk's fsync
     * would set the pace */
    snprintf(F.dir, sizeof F.dir, "%s/eeb-fuzz-server-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (!mkdtemp(F.dir))
        abort();
    snprintf(db, sizeof db, "%s/server.db", F.dir);
    snprintf(test, sizeof test, "%s/test.eebd", F.dir);
    struct eeb_gen_spec spec = {EEB_TASK_CLS, EEB_GEN_FINETUNE, 1, 8, 1, 16, 1};
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0, cfg.rate_limit = 0, cfg.max_body = 64 << 10;
    cfg.test[EEB_TASK_CLS] = cfg.practice[EEB_TASK_CLS] = test;
    for (int q = 0; q < EEB_QUOTAS; q++) /* the fuzzer registers as many runs as it likes */
        cfg.quota[q] = -1;
    int made = eeb_gen_shard(test, &spec, NULL, NULL, err, sizeof err) == EEB_OK;
    /* a test set holds labels: the server takes it only as its owner's alone */
    if (made && chmod(test, 0600) != 0)
        made = 0, snprintf(err, sizeof err, "%s: chmod 600 failed", test);
    if (!made || eeb_server_add_team(db, "fuzz", token, err, sizeof err) ||
        eeb_server_start(&cfg, &F.s, err, sizeof err)) {
        fprintf(stderr, "fuzz_server_body: %s\n", err);
        abort();
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    F.h = curl_easy_init();
    snprintf(F.url, sizeof F.url, "http://127.0.0.1:%d", eeb_server_port(F.s));
    snprintf(F.auth, sizeof F.auth, "Authorization: Bearer %s", token);
    F.registered = new_run(0);
    F.completed = new_run(1);
    atexit(stop);
}

/* 1 if the answer holds a key "label" or "truth": a test item's truth
 * (an error may quote the word back from the request; that is no leak). */
static int holds_truth(json_t *v)
{
    const char *key;
    json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach(v, key, x)
        {
            if (strcmp(key, "label") == 0 || strcmp(key, "truth") == 0 || holds_truth(x))
                return 1;
        }
    }
    json_array_foreach(v, i, x)
    {
        if (holds_truth(x))
            return 1;
    }
    return 0;
}

/* The leaderboard's query: data with every byte but [A-Za-z0-9=&._-]
 * percent-encoded. */
static void query(const uint8_t *data, size_t size, char *path, size_t cap)
{
    size_t n = (size_t)snprintf(path, cap, "/api/v1/leaderboard?");
    for (size_t i = 0; i < size && n + 4 < cap; i++) {
        int c = data[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("=&._-", c))
            path[n++] = (char)c;
        else
            n += (size_t)snprintf(path + n, cap - n, "%%%02X", c);
    }
    path[n] = '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!F.s)
        start();
    if (size < 1)
        return 0;
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    char path[4096];
    const char *method = "POST";
    switch (data[0] % 5) {
    case 0: snprintf(path, sizeof path, "/api/v1/runs"); break;
    case 1: snprintf(path, sizeof path, "/api/v1/runs/%ld/links", F.registered); break;
    case 2: snprintf(path, sizeof path, "/api/v1/runs/%ld/predictions", F.completed); break;
    case 3: snprintf(path, sizeof path, "/api/v1/runs/%ld/score", new_run(1)); break;
    default:
        method = "GET";
        query((const uint8_t *)body, len, path, sizeof path);
        body = NULL;
    }
    struct answer a = {0};
    long code = call(method, path, body, len, &a);
    json_t *answer = a.body ? json_loads(a.body, 0, NULL) : NULL;
    if (code < 200 || code >= 500 || !answer || holds_truth(answer)) {
        fprintf(stderr, "%s %s: %ld %s\n", method, path, code, a.body ? a.body : "(nothing)");
        abort();
    }
    json_decref(answer);
    free(a.body);
    if (call("GET", "/healthz", NULL, 0, NULL) != 200)
        abort();
    return 0;
}
