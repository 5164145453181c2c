/*
 * bench_server.c - the evaluation server over HTTP on 127.0.0.1: the
 * leaderboard read by wrk (requests a second, p99 latency), and 100
 * clients uploading 1M power samples at once, every one of which must be
 * in the database afterwards.  Targets (issue 8): >= 10k requests/s with
 * p99 under 20 ms on 2 cores; no sample lost.
 */
#include "bench.h"
#include "eeb_client.h"
#include "eeb_server.h"

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>
#include <unistd.h>

#define BOARD_RUNS      20
#define UPLOADERS       100
#define UPLOAD_SAMPLES  10000 /* per uploader: 1M in all */
#define SAMPLES_A_CHUNK 1000

static char url[64], token[EEB_TOKEN_HEX];

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_server: %s: %s\n", what, err);
    exit(1);
}

static json_t *call(struct eeb_client *c, const char *method, const char *path, json_t *body)
{
    char err[512];
    json_t *reply = NULL;
    if (eeb_client_call(c, method, path, body, &reply, err, sizeof err))
        die(path, err);
    json_decref(body);
    return reply;
}

/* A cls run registered, with a declared utilization; its id. */
static int64_t registered(struct eeb_client *c)
{
    json_t *r = call(c, "POST", "/api/v1/runs",
                     json_pack("{s:s, s:{s:f, s:f, s:f, s:f}, s:s, s:s}", "task", "cls", "util",
                               "lut", 0.3, "ff", 0.2, "bram", 0.4, "dsp", 0.2, "provenance",
                               "modeled", "device", "zcu104"));
    int64_t id = json_integer_value(json_object_get(r, "run_id"));
    json_decref(r);
    return id;
}

/* A chunk of n samples at 10 Hz from sample `from`, with the fine-tune
 * events around the whole upload on chunk 0. */
static json_t *chunk(int64_t seq, int from, int n, int total)
{
    json_t *samples = json_array(), *events = json_array();
    for (int i = from; i < from + n; i++)
        json_array_append_new(samples, json_pack("[I, I, f]", (json_int_t)i * 100000000 + 1,
                                                 (json_int_t)i, 3.0 + (i % 7) * 0.125));
    if (seq == 0) {
        json_array_append_new(events, json_pack("[i, i, s, n]", 1, 0, "finetune_begin"));
        json_array_append_new(events, json_pack("[I, i, s, n]", (json_int_t)(total - 1) * 100000000,
                                                0, "finetune_end"));
    }
    return json_pack("{s:I, s:s, s:o, s:o}", "seq", (json_int_t)seq, "source", "sim:", "samples",
                     samples, "events", events);
}

/* The leaderboard filled with scored runs (their S differs with the
 * predictions' hits). */
static void fill_board(struct eeb_client *c, char (*ids)[EEB_SHARD_MAX_ID + 1], int nids)
{
    char path[96];
    for (int r = 0; r < BOARD_RUNS; r++) {
        int64_t id = registered(c);
        snprintf(path, sizeof path, "/api/v1/runs/%lld/power", (long long)id);
        json_decref(call(c, "POST", path, chunk(0, 0, 100, 100)));
        snprintf(path, sizeof path, "/api/v1/runs/%lld/complete", (long long)id);
        json_decref(call(c, "POST", path, NULL));
        json_t *list = json_array();
        for (int i = 0; i < nids; i++)
            json_array_append_new(list,
                                  json_pack("{s:s, s:[i]}", "id", ids[i], "top", (i + r) % 4));
        snprintf(path, sizeof path, "/api/v1/runs/%lld/predictions", (long long)id);
        json_decref(call(c, "POST", path, json_pack("{s:o}", "predictions", list)));
        snprintf(path, sizeof path, "/api/v1/runs/%lld/score", (long long)id);
        json_decref(call(c, "POST", path, NULL));
    }
}

/* wrk's figure after `label` in its output, in the unit given (ms for
 * latencies: wrk prints us, ms or s). */
static double wrk_figure(const char *out, const char *label)
{
    const char *p = strstr(out, label);
    if (!p)
        return -1;
    char unit[8] = "";
    double v;
    if (sscanf(p + strlen(label), " %lf%7s", &v, unit) < 1)
        return -1;
    return strcmp(unit, "us") == 0 ? v / 1000 : strcmp(unit, "s") == 0 ? v * 1000 : v;
}

static void bench_leaderboard(void)
{
    if (access("/usr/bin/wrk", X_OK) != 0) {
        printf("bench_server: no /usr/bin/wrk (make deps installs Debian's wrk); skipped\n");
        return;
    }
    double rps[3], p99[3];
    for (int rep = 0; rep < 3; rep++) {
        char cmd[256], out[8192];
        snprintf(cmd, sizeof cmd,
                 "wrk -t2 -c32 -d5s --latency '%s/api/v1/leaderboard?task=cls' 2>&1", url);
        FILE *f = popen(cmd, "r");
        size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
        out[n] = '\0';
        if (!f || pclose(f) != 0)
            die("wrk", out);
        if (strstr(out, "Non-2xx") || strstr(out, "Socket errors"))
            die("wrk: errors or answers other than 200", out);
        rps[rep] = wrk_figure(out, "Requests/sec:");
        p99[rep] = wrk_figure(out, "99%");
        if (rps[rep] < 0 || p99[rep] < 0)
            die("wrk's output", out);
    }
    bench_line("leaderboard_rps", bench_median(rps, 3), "req/s");
    bench_line("leaderboard_p99_ms", bench_median(p99, 3), "ms");
}

/* ---- 100 uploaders ---- */

static void *upload(void *arg)
{
    (void)arg;
    struct eeb_client c;
    char err[512], path[96];
    if (eeb_client_init(&c, url, token, err, sizeof err))
        die("client", err);
    int64_t id = registered(&c);
    snprintf(path, sizeof path, "/api/v1/runs/%lld/power", (long long)id);
    for (int k = 0; k * SAMPLES_A_CHUNK < UPLOAD_SAMPLES; k++) {
        json_t *body = chunk(k, k * SAMPLES_A_CHUNK, SAMPLES_A_CHUNK, UPLOAD_SAMPLES);
        json_decref(call(&c, "POST", path, body));
        /* every fifth chunk is sent twice, as a client that lost the answer
         * would: the server must keep it once */
        if (k % 5 == 0)
            json_decref(call(&c, "POST", path,
                             chunk(k, k * SAMPLES_A_CHUNK, SAMPLES_A_CHUNK, UPLOAD_SAMPLES)));
    }
    eeb_client_free(&c);
    return NULL;
}

static void bench_uploads(const char *db)
{
    pthread_t t[UPLOADERS];
    int64_t t0 = eeb_mono_ns();
    for (int i = 0; i < UPLOADERS; i++)
        if (pthread_create(&t[i], NULL, upload, NULL) != 0)
            die("pthread_create", "cannot start an uploader");
    for (int i = 0; i < UPLOADERS; i++)
        pthread_join(t[i], NULL);
    double s = bench_seconds_since(t0);
    sqlite3 *h;
    sqlite3_stmt *st;
    long long held = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h,
                           "SELECT count(*) FROM samples WHERE run_id IN "
                           "(SELECT run_id FROM entries WHERE state = 'registered')",
                           -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            held = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    long long sent = (long long)UPLOADERS * UPLOAD_SAMPLES;
    printf("bench_server: %d clients sent %lld samples in %.1f s; the database holds %lld\n",
           UPLOADERS, sent, s, held);
    bench_line("upload_samples_per_s", (double)sent / s, "samples/s");
    bench_line("upload_lost_samples", held < 0 ? (double)sent : (double)(sent - held), "1");
}

int main(void)
{
    char dir[] = "/tmp/eeb-bench-server-XXXXXX", db[128], test[160], err[512];
    if (!mkdtemp(dir))
        die("mkdtemp", "cannot make a directory");
    snprintf(db, sizeof db, "%s/server.db", dir);
    snprintf(test, sizeof test, "%s/test.eebd", dir);
    /* a small cls test set, generated */
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "%s data gen --task cls --domain finetune --split test --n 64 --size 16 -o %s "
             ">/dev/null",
             EEB_BIN, test);
    if (system(cmd) != 0)
        die("eeb data gen", cmd);
    if (eeb_server_add_team(db, "bench", token, err, sizeof err))
        die("add-team", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0, cfg.rate_limit = 0, cfg.test[EEB_TASK_CLS] = test;
    struct eeb_server *s;
    if (eeb_server_start(&cfg, &s, err, sizeof err))
        die("server", err);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", eeb_server_port(s));

    struct eeb_client c;
    if (eeb_client_init(&c, url, token, err, sizeof err))
        die("client", err);
    struct eeb_shard *sh;
    if (eeb_shard_open(&sh, test, err, sizeof err))
        die("test set", err);
    char(*ids)[EEB_SHARD_MAX_ID + 1] = calloc(64, sizeof *ids);
    const struct eeb_record *rec;
    int nids = 0;
    while (nids < 64 && eeb_shard_next(sh, &rec, err, sizeof err) == 1)
        memcpy(ids[nids++], rec->id, sizeof *ids);
    eeb_shard_close(sh);
    fill_board(&c, ids, nids);
    eeb_client_free(&c);
    free(ids);

    bench_leaderboard();
    bench_uploads(db);
    eeb_server_stop(s);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
