/*
 * bench_server.c - the evaluation server over HTTP on 127.0.0.1: the
 * leaderboard read by wrk (requests a second, p99 latency), and 100
 * clients uploading 1M power samples at once as links of their runs'
 * chains, every one of which must be in the database afterwards.  Targets
 * (issue 8): >= 10k requests/s with p99 under 20 ms on 2 cores; no sample
 * lost.
 *
 * Then the soak (issue 9): `eeb serve` as its own process under sustained
 * load -- wrk reading the leaderboard, its page, a run's page, /healthz and
 * /metrics as fast as they answer, while writers score a run each every
 * half second -- for EEB_BENCH_SERVER_SOAK_SECONDS (default 20; the
 * issue's ten minutes are 600), the server's memory read every second:
 * its growth after the first tenth and over the second half, with every
 * answer a success and every sample kept.
 */
#include "bench.h"
#include "harness/eeb_client.h"
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BOARD_RUNS      20
#define UPLOADERS       100
#define UPLOAD_SAMPLES  10000 /* per uploader: 1M in all */
#define SAMPLES_A_CHUNK 1000  /* a samples link's */

static char url[64], token[EEB_TOKEN_HEX];
static pid_t soak_server; /* the soak's `eeb serve`, stopped by die() */

static void die(const char *what, const char *err)
{
    fprintf(stderr, "bench_server: %s: %s\n", what, err);
    if (soak_server > 0)
        kill(soak_server, SIGTERM);
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

/* A cls run of a board registered, with a declared utilization and
 * power: a rehearsal, or an official run; its id. */
static int64_t registered(struct eeb_client *c, int official)
{
    json_t *r =
        call(c, "POST", "/api/v1/runs",
             json_pack("{s:s, s:{s:f, s:f, s:f, s:f}, s:s, s:s, s:s, s:b}", "task", "cls", "util",
                       "lut", 0.3, "ff", 0.2, "bram", 0.4, "dsp", 0.2, "provenance", "declared",
                       "device", "zcu104", "backend", "xrt", "official", official));
    int64_t id = json_integer_value(json_object_get(r, "run_id"));
    json_decref(r);
    return id;
}

/* l appended to the links a with its head: l's after head, the chain's
 * last head so far (none before the origin), which becomes l's. */
static void add_link(json_t *a, struct eeb_rundb_link *l, char head[EEB_SHA256_HEX])
{
    eeb_rundb_link_head(l->kind == EEB_LINK_ORIGIN ? NULL : head, l, l->head);
    memcpy(head, l->head, EEB_SHA256_HEX);
    json_t *o = json_pack("{s:I, s:s, s:s}", "seq", (json_int_t)l->seq, "kind",
                          eeb_link_kind_name(l->kind), "head", l->head);
    if (l->kind == EEB_LINK_ORIGIN) {
        json_object_set_new(o, "uuid", json_string(l->uuid));
        json_object_set_new(o, "config_sha256", json_string(l->config_sha256));
    } else if (l->kind == EEB_LINK_EVENT) {
        json_object_set_new(o, "event",
                            json_pack("[I, I, s, n]", (json_int_t)l->event.t_mono_ns,
                                      (json_int_t)l->event.t_utc_ns, l->event.kind));
    } else {
        json_t *samples = json_array();
        for (size_t i = 0; i < l->nsamples; i++) {
            const struct eeb_sample *x = &l->samples[i];
            json_array_append_new(samples, json_pack("[I, I, f, n, n, I]", (json_int_t)x->t_mono_ns,
                                                     (json_int_t)x->t_utc_ns, x->watts,
                                                     (json_int_t)x->flags));
        }
        json_object_set_new(o, "source", json_string(l->source));
        json_object_set_new(o, "samples", samples);
    }
    if (!o || json_array_append_new(a, o))
        die("links", "out of memory");
}

/* The links of request k of a power log of total samples at 10 Hz: one
 * samples link of the n from sample k * SAMPLES_A_CHUNK on (link 3 + k),
 * after, in request 0, the origin and the fine-tune events around the
 * whole upload (links 0 to 2).  head is the chain's last head; it moves on. */
static json_t *links(int k, int n, int total, char head[EEB_SHA256_HEX])
{
    int from = k * SAMPLES_A_CHUNK;
    json_t *a = json_array();
    struct eeb_sample *s = calloc((size_t)n, sizeof *s);
    if (!a || !s)
        die("links", "out of memory");
    if (k == 0) {
        char err[512];
        struct eeb_rundb_link origin = {.seq = 0, .kind = EEB_LINK_ORIGIN},
                              begin = {.seq = 1,
                                       .kind = EEB_LINK_EVENT,
                                       .event = {.t_mono_ns = 1, .kind = "finetune_begin"}},
                              end = {.seq = 2,
                                     .kind = EEB_LINK_EVENT,
                                     .event = {.t_mono_ns = (int64_t)(total - 1) * 100000000,
                                               .kind = "finetune_end"}};
        if (eeb_uuid4(origin.uuid, err, sizeof err))
            die("uuid", err);
        eeb_sha256("{}", 2, origin.config_sha256);
        add_link(a, &origin, head);
        add_link(a, &begin, head);
        add_link(a, &end, head);
    }
    for (int i = 0; i < n; i++)
        s[i] = (struct eeb_sample){.t_mono_ns = (int64_t)(from + i) * 100000000 + 1,
                                   .t_utc_ns = from + i,
                                   .volts = NAN,
                                   .amps = NAN,
                                   .watts = 3.0 + ((from + i) % 7) * 0.125};
    struct eeb_rundb_link l = {.seq = 3 + k,
                               .kind = EEB_LINK_SAMPLES,
                               .source = "replay:bench.csv",
                               .samples = s,
                               .nsamples = (size_t)n};
    add_link(a, &l, head);
    free(s);
    return json_pack("{s:o}", "links", a);
}

/* The test set's item ids, which predictions name. */
static char (*ids)[EEB_SHARD_MAX_ID + 1];
static int nids;

/* A cls run registered, its power log of n samples sent as its chain,
 * complete, its test inputs fetched to inputs (a rehearsal's: NULL for an
 * official run, which the server lists once scored, but whose chain here
 * did not stream: it is invalid, and served no inputs), its predictions
 * sent (shift moves which of them hit, so runs differ in S) and scored;
 * its id. */
static int64_t scored_run(struct eeb_client *c, int n, int shift, const char *inputs)
{
    char path[96], head[EEB_SHA256_HEX] = "", err[512];
    int64_t id = registered(c, !inputs);
    snprintf(path, sizeof path, "/api/v1/runs/%lld/links", (long long)id);
    for (int k = 0; k * SAMPLES_A_CHUNK < n; k++) {
        int from = k * SAMPLES_A_CHUNK;
        json_decref(
            call(c, "POST", path,
                 links(k, n - from < SAMPLES_A_CHUNK ? n - from : SAMPLES_A_CHUNK, n, head)));
    }
    snprintf(path, sizeof path, "/api/v1/runs/%lld/complete", (long long)id);
    json_decref(call(c, "POST", path, NULL));
    snprintf(path, sizeof path, "/api/v1/runs/%lld/test", (long long)id);
    if (inputs && eeb_client_download(c, path, inputs, err, sizeof err))
        die(path, err);
    json_t *list = json_array();
    for (int i = 0; i < nids; i++)
        json_array_append_new(list,
                              json_pack("{s:s, s:[i]}", "id", ids[i], "top", (i + shift) % 4));
    snprintf(path, sizeof path, "/api/v1/runs/%lld/predictions", (long long)id);
    if (inputs)
        json_decref(call(c, "POST", path, json_pack("{s:o}", "predictions", list)));
    else
        json_decref(list);
    snprintf(path, sizeof path, "/api/v1/runs/%lld/score", (long long)id);
    json_decref(call(c, "POST", path, NULL));
    return id;
}

/* wrk's figure after `label` in its output, in the unit given (ms for
 * latencies: wrk prints us, ms or s); -1 if it printed none.  The 99th
 * percentile's label is " 99%": a bare "99%" is also the tail of a
 * spread such as "95.99%". */
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

struct wrk_result {
    double requests, rps, p99_ms;
    double failed; /* answers other than 2xx or 3xx, and socket errors */
};

/* wrk run with args (after "wrk"); dies, quoting its output, if it fails
 * or leaves out a figure. */
static struct wrk_result wrk(const char *args)
{
    char cmd[600], out[8192];
    snprintf(cmd, sizeof cmd, "wrk %s 2>&1", args);
    FILE *f = popen(cmd, "r");
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = '\0';
    if (!f || pclose(f) != 0)
        die("wrk", out);
    struct wrk_result r = {.rps = wrk_figure(out, "Requests/sec:"),
                           .p99_ms = wrk_figure(out, " 99%"),
                           .failed = wrk_figure(out, "Non-2xx or 3xx responses:")};
    const char *total = strstr(out, " requests in "), *e = strstr(out, "Socket errors:");
    while (total && total > out && total[-1] != '\n') /* "  123456 requests in 60.00s" */
        total--;
    r.requests = total ? atof(total) : -1;
    int c = 0, rd = 0, w = 0, t = 0;
    if (r.rps < 0 || r.p99_ms < 0 || r.requests < 0 ||
        (e && sscanf(e, "Socket errors: connect %d, read %d, write %d, timeout %d", &c, &rd, &w,
                     &t) != 4))
        die("wrk's output", out);
    r.failed = (r.failed < 0 ? 0 : r.failed) + c + rd + w + t;
    return r;
}

static int have_wrk(void)
{
    if (access("/usr/bin/wrk", X_OK) == 0)
        return 1;
    printf("bench_server: no /usr/bin/wrk (make deps installs Debian's wrk); skipped\n");
    return 0;
}

static void bench_leaderboard(void)
{
    if (!have_wrk())
        return;
    double rps[3], p99[3];
    for (int rep = 0; rep < 3; rep++) {
        char args[256];
        snprintf(args, sizeof args, "-t2 -c32 -d5s --latency '%s/api/v1/leaderboard?task=cls'",
                 url);
        struct wrk_result r = wrk(args);
        if (r.failed > 0)
            die("wrk", "errors or answers other than 200");
        rps[rep] = r.rps, p99[rep] = r.p99_ms;
    }
    bench_line("leaderboard_rps", bench_median(rps, 3), "req/s");
    bench_line("leaderboard_p99_ms", bench_median(p99, 3), "ms");
}

/* ---- 100 uploaders ---- */

static void *upload(void *arg)
{
    (void)arg;
    struct eeb_client c;
    char err[512], path[96], head[EEB_SHA256_HEX] = "";
    if (eeb_client_init(&c, url, token, err, sizeof err))
        die("client", err);
    int64_t id = registered(&c, 0);
    snprintf(path, sizeof path, "/api/v1/runs/%lld/links", (long long)id);
    for (int k = 0; k * SAMPLES_A_CHUNK < UPLOAD_SAMPLES; k++) {
        json_t *body = links(k, SAMPLES_A_CHUNK, UPLOAD_SAMPLES, head);
        /* every fifth request of links is sent twice, as a client that lost
         * the answer would: the server must keep its links once */
        json_decref(call(&c, "POST", path, k % 5 == 0 ? json_incref(body) : body));
        if (k % 5 == 0)
            json_decref(call(&c, "POST", path, body));
    }
    eeb_client_free(&c);
    return NULL;
}

/* The count query answers in database db, or -1. */
static long long db_count(const char *db, const char *query)
{
    sqlite3 *h;
    sqlite3_stmt *st;
    long long n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, query, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(h);
    return n;
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
    long long held = db_count(db, "SELECT count(*) FROM samples WHERE run_id IN "
                                  "(SELECT run_id FROM team_runs WHERE state = 'registered')");
    long long sent = (long long)UPLOADERS * UPLOAD_SAMPLES;
    printf("bench_server: %d clients sent %lld samples in %.1f s; the database holds %lld\n",
           UPLOADERS, sent, s, held);
    bench_line("upload_samples_per_s", (double)sent / s, "samples/s");
    bench_line("upload_lost_samples", held < 0 ? (double)sent : (double)(sent - held), "1");
}

/* ---- the soak: `eeb serve` under reads and writes ---- */

#define SOAK_WRITERS     4
#define SOAK_RUN_SAMPLES 2000 /* a run's power log: two samples links */
#define SOAK_RUN_EVERY_S 0.5  /* each writer's pace */

static atomic_int soak_stop;
static atomic_long soak_runs;

/* Scores a run every SOAK_RUN_EVERY_S until told to stop, reading it back
 * and downloading its test inputs (into the file arg) each time. */
static void *soak_writer(void *arg)
{
    struct eeb_client c;
    char err[512], path[96];
    if (eeb_client_init(&c, url, token, err, sizeof err))
        die("client", err);
    c.tries = 1; /* any failure counts: no retry hides it */
    for (int n = 0; !atomic_load(&soak_stop); n++) {
        int64_t t0 = eeb_mono_ns(), id = scored_run(&c, SOAK_RUN_SAMPLES, n, arg);
        snprintf(path, sizeof path, "/api/v1/runs/%lld", (long long)id);
        json_decref(call(&c, "GET", path, NULL));
        atomic_fetch_add(&soak_runs, 1);
        double left = SOAK_RUN_EVERY_S - bench_seconds_since(t0);
        if (left > 0)
            usleep((useconds_t)(left * 1e6));
    }
    eeb_client_free(&c);
    return NULL;
}

/* The reads of the soak: wrk in ten slices of its length, so a slowdown
 * as the database grows shows in the last slice's rate. */
#define SOAK_SLICES 10

struct soak_reads {
    char args[512];             /* wrk's, less its duration */
    double seconds;             /* in all */
    double requests, failed;    /* over all slices */
    double rps[SOAK_SLICES];    /* each slice's */
    double p99_ms[SOAK_SLICES]; /* each slice's */
};

static void *soak_reader(void *arg)
{
    struct soak_reads *r = arg;
    for (int i = 0; i < SOAK_SLICES; i++) {
        char args[600];
        snprintf(args, sizeof args, "-d%.0fs %s", r->seconds / SOAK_SLICES, r->args);
        struct wrk_result w = wrk(args);
        r->requests += w.requests, r->failed += w.failed;
        r->rps[i] = w.rps, r->p99_ms[i] = w.p99_ms;
    }
    return NULL;
}

/* `eeb serve` on a free port of 127.0.0.1 with no rate limit; its pid,
 * its URL in url once it listens, and what it prints next in *out. */
static pid_t serve(const char *db, const char *test, FILE **out)
{
    int fd[2];
    char t[300];
    snprintf(t, sizeof t, "cls=%s", test);
    if (pipe(fd) != 0)
        die("pipe", "cannot make one");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        execl(EEB_BIN, EEB_BIN, "serve", "--db", db, "--port", "0", "--rate-limit", "0", "--test",
              t, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char line[256] = "";
    FILE *f = fdopen(fd[0], "r");
    int port = 0;
    if (!f || !fgets(line, sizeof line, f) ||
        sscanf(line, "eeb serve: listening on http://127.0.0.1:%d/", &port) != 1)
        die("eeb serve did not start", line);
    *out = f;
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    return pid;
}

/* What SQLite holds in eeb serve now, KiB: /metrics' eeb_sqlite_memory_bytes. */
static double sqlite_kib(const char *dir)
{
    static const char metric[] = "\neeb_sqlite_memory_bytes ";
    struct eeb_client c;
    char err[512], path[300], *text;
    size_t len;
    snprintf(path, sizeof path, "%s/metrics.txt", dir);
    if (eeb_client_init(&c, url, token, err, sizeof err) ||
        eeb_client_download(&c, "/metrics", path, err, sizeof err) ||
        eeb_read_file(path, 1 << 20, &text, &len, err, sizeof err))
        die("/metrics", err);
    eeb_client_free(&c);
    const char *line = strstr(text, metric);
    if (!line)
        die("/metrics", "no eeb_sqlite_memory_bytes");
    double kib = atof(line + strlen(metric)) / 1024;
    free(text);
    return kib;
}

static void bench_soak(const char *dir, const char *test, double seconds)
{
    if (!have_wrk())
        return;
    char db[300], err[512], inputs[SOAK_WRITERS][300], lua[300];
    snprintf(db, sizeof db, "%s/soak.db", dir);
    if (eeb_server_add_team(db, "soak", token, err, sizeof err))
        die("add-team", err);
    FILE *said;
    pid_t server = soak_server = serve(db, test, &said);
    struct eeb_client c;
    if (eeb_client_init(&c, url, token, err, sizeof err))
        die("client", err);
    scored_run(&c, SOAK_RUN_SAMPLES, 0, NULL); /* run 1, whose page wrk reads */
    eeb_client_free(&c);

    /* the reads: each wrk connection goes round the routes anyone may read */
    snprintf(lua, sizeof lua, "%s/soak.lua", dir);
    const char *script =
        "local paths = {'/api/v1/leaderboard?task=cls', '/leaderboard', '/runs/1', '/healthz',\n"
        "               '/metrics', '/api/v1/runs?task=cls&provenance=modeled', '/runs'}\n"
        "local n = 0\n"
        "request = function()\n"
        "  n = n % #paths + 1\n"
        "  return wrk.format('GET', paths[n])\n"
        "end\n";
    FILE *f = fopen(lua, "w");
    if (!f || fputs(script, f) < 0 || fclose(f) != 0)
        die(lua, "cannot write it");
    struct soak_reads reads = {.seconds = seconds};
    snprintf(reads.args, sizeof reads.args, "-t2 -c16 --latency -s %s '%s'", lua, url);
    pthread_t reader, writers[SOAK_WRITERS];
    if (pthread_create(&reader, NULL, soak_reader, &reads) != 0)
        die("pthread_create", "cannot start wrk");
    for (int i = 0; i < SOAK_WRITERS; i++) {
        snprintf(inputs[i], sizeof inputs[i], "%s/inputs-%d.eebd", dir, i);
        if (pthread_create(&writers[i], NULL, soak_writer, inputs[i]) != 0)
            die("pthread_create", "cannot start a writer");
    }
    double growth[2], peak, start = bench_rss_kib(server), sqlite_start = sqlite_kib(dir);
    bench_watch_rss(server, seconds, growth, &peak);
    double sqlite_end = sqlite_kib(dir);
    atomic_store(&soak_stop, 1);
    for (int i = 0; i < SOAK_WRITERS; i++)
        pthread_join(writers[i], NULL);
    pthread_join(reader, NULL);
    double end = bench_rss_kib(server);

    /* stopped as an operator stops it; then every run and sample is there
     * (what it printed after "listening", the test set's line first, is
     * read past) */
    int st, stopped = 0;
    char line[256] = "";
    kill(server, SIGTERM);
    while (!stopped && fgets(line, sizeof line, said))
        stopped = strstr(line, "stopped (SIGTERM)") != NULL;
    if (!stopped || waitpid(server, &st, 0) != server || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die("eeb serve did not stop cleanly on SIGTERM", line);
    fclose(said);
    soak_server = 0;
    long runs = atomic_load(&soak_runs) + 1;
    double held = (double)db_count(db, "SELECT count(*) FROM samples"),
           scored = (double)db_count(db, "SELECT count(*) FROM team_runs WHERE state = 'scored'");
    double p99 = 0;
    for (int i = 0; i < SOAK_SLICES; i++)
        p99 = reads.p99_ms[i] > p99 ? reads.p99_ms[i] : p99;
    double lost = (double)runs * SOAK_RUN_SAMPLES - held;
    printf("bench_server: soak for %.0f s: %.0f reads (%.0f/s in the first tenth, %.0f/s in the "
           "last; p99 at most %.1f ms; %.0f failed), %ld runs scored by %d writers (%.0f in the "
           "database), %.0f samples lost; eeb serve's memory %.0f KiB at the start, peak %.0f KiB, "
           "end %.0f KiB: %+.0f KiB after its first tenth, %+.0f KiB in its second half; "
           "SQLite's share %.0f KiB at the start, %.0f KiB at the end\n",
           seconds, reads.requests, reads.rps[0], reads.rps[SOAK_SLICES - 1], p99, reads.failed,
           runs, SOAK_WRITERS, scored, lost, start, peak, end, growth[0], growth[1], sqlite_start,
           sqlite_end);
    bench_line("soak_seconds", seconds, "s");
    bench_line("soak_reads_per_s_first_tenth", reads.rps[0], "req/s");
    bench_line("soak_reads_per_s_last_tenth", reads.rps[SOAK_SLICES - 1], "req/s");
    bench_line("soak_read_p99_ms_worst_tenth", p99, "ms");
    bench_line("soak_failed_reads", reads.failed, "1");
    bench_line("soak_runs_scored", scored, "1");
    bench_line("soak_lost_samples", lost, "1");
    bench_line("soak_server_rss_peak_kib", peak, "KiB");
    bench_line("soak_server_rss_growth_kib", growth[0], "KiB");
    bench_line("soak_server_rss_growth_second_half_kib", growth[1], "KiB");
    bench_line("soak_server_sqlite_growth_kib", sqlite_end - sqlite_start, "KiB");
    if (reads.failed > 0 || lost != 0 || scored != (double)runs)
        die("soak", "a read failed, a sample was lost or a run was not scored");
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
    if (chmod(test, 0600) != 0) /* it holds labels: eeb serve takes it only as its owner's alone */
        die("chmod 600", test);
    if (eeb_server_add_team(db, "bench", token, err, sizeof err))
        die("add-team", err);
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = db, cfg.port = 0, cfg.rate_limit = 0, cfg.test[EEB_TASK_CLS] = test;
    cfg.practice[EEB_TASK_CLS] = test;   /* the soak's rehearsals */
    for (int q = 0; q < EEB_QUOTAS; q++) /* a bench is no team to hold to a day's share */
        cfg.quota[q] = -1;
    /* the 100 uploaders stand for 100 teams, each at an address of its own:
     * here all at 127.0.0.1, past the cap one address is held to */
    cfg.max_per_ip = UPLOADERS + 32;
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
    ids = calloc(64, sizeof *ids);
    const struct eeb_record *rec;
    while (nids < 64 && eeb_shard_next(sh, &rec, err, sizeof err) == 1)
        memcpy(ids[nids++], rec->id, sizeof *ids);
    eeb_shard_close(sh);
    /* the leaderboard filled with scored runs */
    for (int r = 0; r < BOARD_RUNS; r++)
        scored_run(&c, 100, r, NULL);
    eeb_client_free(&c);

    bench_leaderboard();
    bench_uploads(db);
    eeb_server_stop(s);
    const char *soak = getenv("EEB_BENCH_SERVER_SOAK_SECONDS");
    bench_soak(dir, test, soak ? atof(soak) : 20);
    free(ids);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
