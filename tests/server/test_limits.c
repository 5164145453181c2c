/*
 * test_limits.c - the server's files and limits, over real HTTP on
 * 127.0.0.1 with clients written here (raw sockets, and libcurl through
 * http_client.c), never eeb's own: the database, its -wal and -shm, the
 * test inputs it serves and the pages it keeps made 0600 under umask 022,
 * and a database, test set or station key others may read refused at
 * start, naming it; one address holding 1,000 slow connections (a header
 * line every 2 s) kept to its cap while /healthz answers another within a
 * second, and without the cap, not; a live run of 200,000 samples drawn at
 * most once a second, its trace downsampled to the plot's pixel columns
 * with its one-sample peak kept; a run's samples past the cap refused
 * naming them.  Sections: helpers, files, connections, pages, samples.
 */
#include "rundb/eeb_rundb.h"
#include "server/eeb_server.h"
#include "tests/testlib.h"
#include "tests/server/http_client.h"

#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REGISTER_CLS                                                                               \
    "{\"task\": \"cls\", \"util\": {\"lut\": 0.3, \"ff\": 0.2, \"bram\": 0.4, \"dsp\": 0.2}, "     \
    "\"provenance\": \"declared\", \"device\": \"zcu104\", \"backend\": \"xrt\"}"

/* ---- helpers ---- */

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
    return (unsigned)(st.st_mode & 07777);
}

/* A run's chain as a client builds it: each link's head from the last. */
struct chain {
    int64_t seq;
    char head[EEB_SHA256_HEX]; /* the last link's ("": none yet) */
};

/* Link l, its seq and head given here, appended to links as JSON. */
static void chain_add(struct chain *c, json_t *links, struct eeb_rundb_link *l)
{
    l->seq = c->seq++;
    eeb_rundb_link_head(c->head[0] ? c->head : NULL, l, l->head);
    memcpy(c->head, l->head, sizeof c->head);
    json_t *o = json_pack("{s:I, s:s, s:s}", "seq", (json_int_t)l->seq, "kind",
                          eeb_link_kind_name(l->kind), "head", l->head);
    cr_assert(o);
    if (l->kind == EEB_LINK_ORIGIN) {
        json_object_set_new(o, "uuid", json_string(l->uuid));
        json_object_set_new(o, "config_sha256", json_string(l->config_sha256));
    } else if (l->kind == EEB_LINK_EVENT) {
        json_object_set_new(o, "event",
                            json_pack("[I, I, s, n]", (json_int_t)l->event.t_mono_ns,
                                      (json_int_t)l->event.t_utc_ns, l->event.kind));
    } else {
        json_t *a = json_array();
        for (size_t i = 0; i < l->nsamples; i++) /* volts and amps: none (NAN, null) */
            json_array_append_new(a, json_pack("[I, I, f, n, n, i]",
                                               (json_int_t)l->samples[i].t_mono_ns,
                                               (json_int_t)l->samples[i].t_utc_ns,
                                               l->samples[i].watts, (int)l->samples[i].flags));
        json_object_set_new(o, "source", json_string(l->source));
        json_object_set_new(o, "samples", a);
    }
    json_array_append_new(links, o);
}

/* The chain's origin and its finetune_begin event, at t_mono_ns t0. */
static void chain_start(struct chain *c, json_t *links, int64_t t0)
{
    struct eeb_rundb_link origin = {.kind = EEB_LINK_ORIGIN,
                                    .uuid = "0a6f6c8e-9d6e-4c2b-8a51-3f1f7d2c9b10"};
    memset(origin.config_sha256, 'a', 64);
    struct eeb_rundb_link begin = {.kind = EEB_LINK_EVENT,
                                   .event = {t0, t0, "finetune_begin", NULL}};
    chain_add(c, links, &origin);
    chain_add(c, links, &begin);
}

/* n samples from sample first on, 1 ms apart from t_mono_ns t0: 5 W and a
 * little, and 50 W at sample spike. */
static struct eeb_sample *samples(int64_t t0, size_t first, size_t n, size_t spike)
{
    struct eeb_sample *s = calloc(n, sizeof *s);
    cr_assert(s);
    for (size_t i = 0; i < n; i++) {
        size_t k = first + i;
        int64_t t = t0 + (int64_t)k * 1000000;
        s[i] = (struct eeb_sample){t, t, NAN, NAN, k == spike ? 50 : 5 + (double)(k % 7) / 10, 0};
    }
    return s;
}

/* A samples link of s[0..n) appended to links. */
static void chain_samples(struct chain *c, json_t *links, const struct eeb_sample *s, size_t n)
{
    struct eeb_rundb_link l = {
        .kind = EEB_LINK_SAMPLES, .source = "ptd://lab:8888", .samples = s, .nsamples = n};
    chain_add(c, links, &l);
}

/* POST {"links": links} (taken) to run 1: the reply. */
static struct reply post_links(int port, const char *token, json_t *links)
{
    json_t *body = json_pack("{s:o}", "links", links);
    char *text = json_dumps(body, JSON_COMPACT);
    cr_assert(text);
    struct reply r = request(port, "POST", "/api/v1/runs/1/links", text, strlen(text), token);
    free(text);
    json_decref(body);
    return r;
}

/* A server on db holding a cls test set, with a team whose token is
 * written to token; cfg filled, and adjusted by the caller first if want. */
static struct eeb_server *serve(struct eeb_server_config *cfg, const char *db, const char *test,
                                char token[EEB_TOKEN_HEX])
{
    char err[512];
    cr_assert_eq(eeb_server_add_team(db, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    /* rehearsals, on the same set as practice */
    cfg->db = db, cfg->port = 0, cfg->test[EEB_TASK_CLS] = cfg->practice[EEB_TASK_CLS] = test;
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    return s;
}

/* ---- files ---- */

/* Start refused, the error naming path, its mode and the chmod. */
static void refused(struct eeb_server_config *cfg, const char *what, const char *path,
                    const char *mode)
{
    struct eeb_server *s;
    char err[512], want[400];
    cr_assert_eq(eeb_server_start(cfg, &s, err, sizeof err), EEB_EINVAL, "%s %s was taken", what,
                 path);
    snprintf(want, sizeof want, "%s %s is mode %s", what, path, mode);
    cr_expect(strstr(err, want), "'%s' not in: %s", want, err);
    snprintf(want, sizeof want, "chmod 600 %s", path);
    cr_expect(strstr(err, want), "'%s' not in: %s", want, err);
}

Test(server, its_files_are_its_owners_alone_whatever_the_umask, .timeout = 60)
{
    umask(022); /* the usual one: files others may read */
    char dir[64], db[128], key[128], station[160], wal[140], inputs[160], page[160], err[512];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(db, sizeof db, "%s/s.db", dir);
    snprintf(key, sizeof key, "%s/alpha.key", dir);
    snprintf(station, sizeof station, "agent:%s", key);
    const char *test = test_cls_shard(20, 16, 3);
    cr_assert_eq(eeb_server_station_key(key, err, sizeof err), EEB_OK, "%s", err);
    char token[EEB_TOKEN_HEX];
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.stations[0] = (struct eeb_server_station){"alpha", station};
    struct eeb_server *s = serve(&cfg, db, test, token);
    int port = eeb_server_port(s);
    cr_expect_eq(mode_of(db), 0600, "the database: %04o", mode_of(db));
    snprintf(inputs, sizeof inputs, "%s.cls-inputs.eebd", db);
    cr_expect_eq(mode_of(inputs), 0600, "the inputs served: %04o", mode_of(inputs));

    /* a run, its chain and its score: the database's log in use meanwhile */
    expect(port, "POST", "/api/v1/runs", REGISTER_CLS, token, 201, "state", "registered");
    struct chain c = {0};
    json_t *links = json_array();
    chain_start(&c, links, 1000000000);
    struct eeb_sample *x = samples(1000000000, 0, 100, 50);
    chain_samples(&c, links, x, 100);
    free(x);
    struct reply r = post_links(port, token, links);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);
    for (int i = 0; i < 2; i++) {
        snprintf(wal, sizeof wal, "%s%s", db, i ? "-shm" : "-wal");
        cr_expect_eq(mode_of(wal), 0600, "%s: %04o", wal, mode_of(wal));
    }
    expect(port, "POST", "/api/v1/runs/1/complete", "", token, 200, "state", "complete");
    r = request(port, "POST", "/api/v1/runs/1/score", "{}", 2, token);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);
    r = request(port, "GET", "/runs/1", NULL, 0, NULL);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);
    snprintf(page, sizeof page, "%s.run-1.html", db);
    cr_expect_eq(mode_of(page), 0600, "the page kept: %04o", mode_of(page));
    eeb_server_stop(s);

    /* each secret others may read is refused, named; mended, taken */
    cr_assert_eq(chmod(test, 0644), 0);
    refused(&cfg, "test set", test, "0644");
    const char *db_then = cfg.db; /* refused before anything is made */
    char fresh[160];
    snprintf(fresh, sizeof fresh, "%s/never.db", dir);
    cfg.db = fresh;
    refused(&cfg, "test set", test, "0644");
    cr_expect_neq(access(fresh, F_OK), 0, "a refused start made %s", fresh);
    cfg.db = db_then;
    cr_assert_eq(chmod(test, 0600), 0);
    cr_assert_eq(chmod(key, 0640), 0);
    refused(&cfg, "station key", key, "0640");
    cr_assert_eq(chmod(key, 0600), 0);
    cr_assert_eq(chmod(db, 0644), 0);
    refused(&cfg, "the server's database", db, "0644");
    cr_assert_eq(chmod(db, 0600), 0);
    /* a log left by a server killed mid-write, made by an older eeb */
    snprintf(wal, sizeof wal, "%s-wal", db);
    test_write_file(wal, "", 0);
    cr_assert_eq(chmod(wal, 0644), 0);
    refused(&cfg, "the server's database", wal, "0644");
    cr_assert_eq(unlink(wal), 0);
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    eeb_server_stop(s);

    /* eeb serve says so and exits */
    cr_assert_eq(chmod(db, 0604), 0);
    struct test_run run = test_eeb((const char *[]){"serve", "--db", db, "--port", "0", NULL});
    cr_expect_eq(run.status, 1, "%s%s", run.out, run.err);
    cr_expect(strstr(run.err, "is mode 0604") && strstr(run.err, "chmod 600 "), "%s", run.err);
    test_run_free(&run);
}

/* ---- connections ---- */

/* The soft limit of open files raised to n: 0 if the hard one is lower. */
static int files_up_to(rlim_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= n)
        return 1;
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < n)
        return 0;
    rl.rlim_cur = n;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

/* GET /healthz from 127.0.0.1 on a connection of its own, given 2 s: the
 * HTTP status (0: none in time, or the connection closed) and the
 * seconds it took. */
static int healthz(int port, double *took)
{
    double t0 = seconds();
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert(fd >= 0);
    struct timeval two = {2, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &two, sizeof two);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &two, sizeof two);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    static const char ask[] =
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    char got[512] = "";
    size_t n = 0;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        send(fd, ask, sizeof ask - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof ask - 1)) {
        ssize_t k;
        while (n + 1 < sizeof got && seconds() - t0 < 2 &&
               (k = recv(fd, got + n, sizeof got - 1 - n, 0)) > 0)
            n += (size_t)k;
    }
    close(fd);
    got[n] = '\0';
    *took = seconds() - t0;
    int code = 0;
    return sscanf(got, "HTTP/1.%*d %d", &code) == 1 && strstr(got, "\"status\":\"ok\"") ? code : 0;
}

/* n connections to port from 127.0.0.2 (the attacker's address), each
 * sending a request's first line: their sockets into fds (-1: refused at
 * once).  0, or -1 if 127.0.0.2 cannot be bound here. */
static int slow_clients(int port, int *fds, int n)
{
    struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.2", &from.sin_addr);
    to.sin_port = htons((uint16_t)port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        cr_assert(fds[i] >= 0, "socket %d: %s", i, strerror(errno));
        if (bind(fds[i], (struct sockaddr *)&from, sizeof from) != 0) {
            for (int j = 0; j <= i; j++)
                close(fds[j]);
            return -1;
        }
        if (connect(fds[i], (struct sockaddr *)&to, sizeof to) != 0 && errno != EINPROGRESS)
            close(fds[i]), fds[i] = -1;
    }
    /* each connected (or refused) within 5 s */
    double t0 = seconds();
    for (int i = 0; i < n && seconds() - t0 < 5; i++) {
        struct pollfd p = {fds[i], POLLOUT, 0};
        if (fds[i] >= 0 && poll(&p, 1, 1000) == 1 && (p.revents & (POLLERR | POLLHUP)))
            close(fds[i]), fds[i] = -1;
    }
    return 0;
}

/* One header line more to each connection still open; those the server
 * closed are closed here too.  The connections still open. */
static int slow_line(int *fds, int n, int round)
{
    char line[64];
    int open = 0;
    for (int i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        char peek;
        ssize_t k = recv(fds[i], &peek, 1, MSG_PEEK | MSG_DONTWAIT);
        int closed = k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
        int len = round ? snprintf(line, sizeof line, "X-Slow-%d: %d\r\n", round, i)
                        : snprintf(line, sizeof line, "GET /healthz HTTP/1.1\r\n");
        if (closed || send(fds[i], line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) != len) {
            close(fds[i]), fds[i] = -1;
            continue;
        }
        open++;
    }
    return open;
}

static void close_all(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

#define SLOW_CLIENTS 1000

Test(server, slow_connections_from_one_address_leave_healthz_answering_others, .timeout = 90)
{
    /* the test's 1,000 sockets, the server's (it raises its own limit to
     * 1,000 connections and room beside), and the rest */
    if (!files_up_to(2 * SLOW_CLIENTS + 400))
        cr_skip_test("the hard limit of open files (ulimit -Hn) is under %d: cannot open %d "
                     "connections and serve them in one process",
                     2 * SLOW_CLIENTS + 400, SLOW_CLIENTS);
    char db[128], token[EEB_TOKEN_HEX];
    snprintf(db, sizeof db, "%s/s.db", test_tmpdir());
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg); /* 1,000 connections, 32 from one address */
    struct eeb_server *s = serve(&cfg, db, test_cls_shard(8, 16, 3), token);
    int port = eeb_server_port(s), fds[SLOW_CLIENTS];
    if (slow_clients(port, fds, SLOW_CLIENTS))
        cr_skip_test("127.0.0.2 cannot be bound here: no second address to attack from");

    /* a header line every 2 s for 8 s, never ending the headers (the
     * server's 15 s idle timeout never comes); /healthz from 127.0.0.1
     * twice each round */
    int open = 0, asked = 0, answered = 0;
    double slowest = 0;
    for (int round = 0; round < 4; round++) {
        double t0 = seconds();
        open = slow_line(fds, SLOW_CLIENTS, round);
        for (int i = 0; i < 2; i++) {
            double took;
            int code = healthz(port, &took);
            asked++;
            answered += code == 200 && took < 1;
            cr_expect(code == 200 && took < 1, "round %d: /healthz %d after %.3f s", round, code,
                      took);
            slowest = fmax(slowest, took);
        }
        while (seconds() - t0 < 2)
            usleep(50000);
    }
    cr_expect_eq(answered, asked);
    /* the attacker holds its cap, no more, and did reach the server */
    cr_expect(open >= 1 && open <= 32, "%d of %d slow connections held", open, SLOW_CLIENTS);
    cr_log_info("slow connections: %d of %d held by the server; /healthz %d/%d within 1 s, "
                "slowest %.4f s",
                open, SLOW_CLIENTS, answered, asked, slowest);
    close_all(fds, SLOW_CLIENTS);
    eeb_server_stop(s);

    /* without a cap of its own, one address takes every connection, and
     * /healthz gets none: the limit above is what kept it answering */
    snprintf(db, sizeof db, "%s/s.db", test_tmpdir());
    eeb_server_config_default(&cfg);
    cfg.max_connections = 40, cfg.max_per_ip = 40;
    s = serve(&cfg, db, test_cls_shard(8, 16, 3), token);
    port = eeb_server_port(s);
    cr_assert_eq(slow_clients(port, fds, 40), 0);
    cr_expect_eq(slow_line(fds, 40, 0), 40);
    usleep(300000); /* every one taken in */
    double took;
    int code = healthz(port, &took);
    cr_expect(code != 200 || took >= 1, "/healthz %d after %.3f s with every connection taken",
              code, took);
    close_all(fds, 40);
    eeb_server_stop(s);
}

/* ---- pages ---- */

/* The points of the polyline id in html, their count; the least y (the
 * highest value) into *top_y, and how many lie above y_line into *above. */
static int polyline_points(const char *html, const char *id, double y_line, double *top_y,
                           int *above)
{
    char at[64];
    snprintf(at, sizeof at, "<polyline id=\"%s\"", id);
    const char *p = strstr(html, at);
    cr_assert(p, "no %s", id);
    p = strstr(p, "points=\"");
    cr_assert(p);
    p += strlen("points=\"");
    int n = 0;
    *top_y = INFINITY, *above = 0;
    while (*p && *p != '"') {
        char *end;
        strtod(p, &end);
        cr_assert(*end == ',', "a point without its y at %.20s", p);
        double y = strtod(end + 1, &end);
        *top_y = fmin(*top_y, y);
        *above += y < y_line;
        n++;
        p = end + strspn(end, " ");
    }
    return n;
}

/* GET /runs/1: the page, the seconds it took into *took. */
static char *run_page(int port, double *took)
{
    double t0 = seconds();
    struct reply r = request(port, "GET", "/runs/1", NULL, 0, NULL);
    *took = seconds() - t0;
    cr_assert_eq(r.code, 200, "%s", r.body);
    return r.body;
}

#define LIVE_SAMPLES 200000
#define LINK_SAMPLES 10000
#define SPIKE        123457

Test(server, a_live_runs_page_is_made_once_a_second_and_downsampled, .timeout = 120)
{
    char db[128], token[EEB_TOKEN_HEX];
    snprintf(db, sizeof db, "%s/s.db", test_tmpdir());
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    struct eeb_server *s = serve(&cfg, db, test_cls_shard(8, 16, 3), token);
    int port = eeb_server_port(s);
    expect(port, "POST", "/api/v1/runs", REGISTER_CLS, token, 201, "state", "registered");

    /* 200 s at 1 kHz: 5 W and a little, one sample of 50 W */
    const int64_t t0 = 1000000000;
    struct chain c = {0};
    json_t *links = json_array();
    chain_start(&c, links, t0);
    for (size_t first = 0; first < LIVE_SAMPLES; first += LINK_SAMPLES) {
        struct eeb_sample *x = samples(t0, first, LINK_SAMPLES, SPIKE);
        chain_samples(&c, links, x, LINK_SAMPLES);
        free(x);
        struct reply r = post_links(port, token, links);
        cr_assert_eq(r.code, 200, "%s", r.body);
        free(r.body);
        links = json_array();
    }
    json_decref(links);

    double made, kept, stale, again, cached;
    char *page = run_page(port, &made);
    double first_at = seconds();
    cr_assert(strstr(page, "200000 samples over"), "the report was not made: %.300s", page);
    cr_expect(strstr(page, "<p class=\"live\"><b>Live:</b> run 1"));
    /* at most two points a pixel column: the plot area's width (840) x 2 */
    const char *area = strstr(page, "<svg id=\"power-plot\"");
    area = area ? strstr(area, "<rect ") : NULL;
    int width = 0;
    cr_assert(area && sscanf(area, "<rect x=\"%*d\" y=\"%*d\" width=\"%d\"", &width) == 1);
    /* y of 40 W: the plot's top at y 20, 240 pixels for 0 to 1.15 x 50 W */
    double top_y, y40 = 20 + (1 - 40 / 57.5) * 240, y50 = 20 + (1 - 50 / 57.5) * 240;
    int above, points = polyline_points(page, "power-trace", y40, &top_y, &above);
    cr_expect(points <= 2 * width && points > width, "%d points for %d columns", points, width);
    cr_expect_eq(above, 1, "the 50 W sample drawn once: %d points above 40 W", above);
    cr_expect(fabs(top_y - y50) < 0.1, "the peak at y %.1f, not %.1f (50 W)", top_y, y50);
    free(page);

    /* kept while nothing more arrives */
    page = run_page(port, &kept);
    cr_expect(strstr(page, "200000 samples over"));
    free(page);
    /* more samples: within the second, the page made before */
    links = json_array();
    struct eeb_sample *x = samples(t0, LIVE_SAMPLES, 1000, SPIKE);
    chain_samples(&c, links, x, 1000);
    free(x);
    struct reply r = post_links(port, token, links);
    cr_assert_eq(r.code, 200, "%s", r.body);
    free(r.body);
    page = run_page(port, &stale);
    cr_assert(seconds() - first_at < 0.9, "too slow a machine: %.3f s since the page was made",
              seconds() - first_at);
    cr_expect(strstr(page, "200000 samples over"), "made again within the second");
    cr_expect(strstr(page, "23 links of its chain received"), "the live line is the request's");
    free(page);
    /* a second on, made again with them; then kept */
    while (seconds() - first_at < 1.1)
        usleep(20000);
    page = run_page(port, &again);
    cr_expect(strstr(page, "201000 samples over"), "not made again after a second");
    free(page);
    page = run_page(port, &cached);
    cr_expect(strstr(page, "201000 samples over"));
    free(page);
    cr_expect(kept < 0.2 && stale < 0.2 && cached < 0.2,
              "kept pages answered in %.3f, %.3f and %.3f s", kept, stale, cached);
    cr_log_info("a live run of %d samples: its page made in %.3f s and %.3f s, kept pages "
                "answered in %.4f, %.4f and %.4f s; %d points for %d columns",
                LIVE_SAMPLES, made, again, kept, stale, cached, points, width);
    eeb_server_stop(s);
}

/* ---- samples ---- */

Test(server, a_runs_samples_past_its_cap_are_refused_naming_them, .timeout = 60)
{
    char db[128], token[EEB_TOKEN_HEX];
    snprintf(db, sizeof db, "%s/s.db", test_tmpdir());
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.max_samples = 100;
    struct eeb_server *s = serve(&cfg, db, test_cls_shard(8, 16, 3), token);
    int port = eeb_server_port(s);
    expect(port, "POST", "/api/v1/runs", REGISTER_CLS, token, 201, "state", "registered");

    const int64_t t0 = 1000000000;
    struct eeb_sample *x = samples(t0, 0, 160, 0);
    struct chain c = {0};
    json_t *links = json_array(), *sixty = json_array();
    chain_start(&c, links, t0);
    chain_samples(&c, links, x, 60);
    json_array_append(sixty, json_array_get(links, 2)); /* to send again */
    struct reply r = post_links(port, token, links);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);

    /* 60 + 50 > 100: refused, nothing of it stored */
    struct chain before = c;
    links = json_array();
    chain_samples(&c, links, x + 60, 50);
    r = post_links(port, token, links);
    cr_expect_eq(r.code, 413, "%s", r.body);
    json_t *o;
    cr_expect_str_eq(field(&o, &r, "field"), "samples");
    const char *why = json_string_value(json_object_get(o, "error"));
    cr_expect(why && strstr(why, "holds 60 power samples and these links add 50: more than the "
                                 "100 a run may store (eeb serve --max-samples)"),
              "%s", r.body);
    json_decref(o);
    free(r.body);
    expect(port, "GET", "/api/v1/runs/1", NULL, token, 200, "state", "registered");
    r = request(port, "GET", "/api/v1/runs/1", NULL, 0, token);
    cr_expect(strstr(r.body, "\"links\":3"), "the refused link was stored: %s", r.body);
    free(r.body);

    /* up to the cap, taken; a link held sent again adds nothing */
    c = before;
    links = json_array();
    chain_samples(&c, links, x + 60, 40);
    r = post_links(port, token, links);
    cr_expect_eq(r.code, 200, "%s", r.body);
    free(r.body);
    r = post_links(port, token, sixty);
    cr_expect_eq(r.code, 200, "a link held, sent again: %s", r.body);
    free(r.body);
    links = json_array();
    chain_samples(&c, links, x + 100, 1);
    r = post_links(port, token, links);
    cr_expect_eq(r.code, 413, "the 101st: %s", r.body);
    free(r.body);
    free(x);
    eeb_server_stop(s);
}
