/*
 * test_stations.c - what an operator sees of a station's agent
 * (server/stations.c), over real HTTP on 127.0.0.1 with the tests' own
 * client: the samples a station sends counted on /metrics, in the total and
 * per station, a batch sent again counted once; the agent first heard,
 * silent past its allowance and heard again, each said once in the log;
 * a refused key logged with its field and never the key; and the
 * organizer's making of a team and of a station key in the audit log,
 * without the token or the key.
 */
#include "server/eeb_server.h"
#include "tests/server/http_client.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A batch of n samples at 5 W, 100 ms apart from t0 (the agent's clock). */
static char *batch(const char *session, long long t0, int n)
{
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    cr_assert(f);
    fprintf(f,
            "{\"session\": \"%s\", \"source\": \"ptd://lab:8888\", \"provenance\": \"measured\", "
            "\"rate_hz\": 10, \"now_ns\": %lld, \"failed\": 0, \"dropped\": 0, \"samples\": [",
            session, t0 + (long long)n * 100000000);
    for (int i = 0; i < n; i++)
        fprintf(f, "%s[%lld, 5.0, 12.0, null]", i ? ", " : "", t0 + (long long)i * 100000000);
    fputs("]}", f);
    cr_assert_eq(fclose(f), 0);
    return body;
}

/* POST the batch with key: answered 200. */
static void send_batch(int port, const char *key, const char *body)
{
    struct reply r = request(port, "POST", "/api/v1/station/samples", body, strlen(body), key);
    cr_assert_eq(r.code, 200, "%ld %s", r.code, r.body);
    free(r.body);
}

/* /metrics holds line. */
static void metrics_have(int port, const char *line)
{
    struct reply m = request(port, "GET", "/metrics", NULL, 0, NULL);
    cr_expect_eq(m.code, 200);
    cr_expect(strstr(m.body, line), "no '%s' in:\n%s", line, m.body);
    free(m.body);
}

static int count_of(const char *text, const char *part)
{
    int n = 0;
    for (const char *at = text; (at = strstr(at, part)); at += strlen(part))
        n++;
    return n;
}

Test(stations, an_agents_samples_and_silence_are_what_operators_see, .timeout = 60)
{
    const char *dir = test_tmpdir();
    char sdb[300], key[300], station[310], log_path[320], err[512], token[EEB_TOKEN_HEX];
    char keytext[EEB_TOKEN_HEX];
    snprintf(sdb, sizeof sdb, "%s/server.db", dir);
    snprintf(key, sizeof key, "%s/alpha.key", dir);
    snprintf(station, sizeof station, "agent:%s", key);
    snprintf(log_path, sizeof log_path, "%s/server.log", dir);
    cr_assert_eq(eeb_server_add_team(sdb, "alpha", token, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_station_key(key, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_station_key_audit(sdb, key, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_server_station_key_read(key, keytext, err, sizeof err), EEB_OK, "%s", err);

    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = sdb, cfg.port = 0;
    cfg.stations[0] = (struct eeb_server_station){"alpha", station};
    cfg.log = fopen(log_path, "w");
    cr_assert(cfg.log);
    struct eeb_server *s;
    cr_assert_eq(eeb_server_start(&cfg, &s, err, sizeof err), EEB_OK, "%s", err);
    int port = eeb_server_port(s);

    /* not heard yet: counted 0, and no time since */
    metrics_have(port, "eeb_station_samples_received_total{team=\"alpha\"} 0\n");
    metrics_have(port, "eeb_samples_received_total 0\n");
    struct reply m = request(port, "GET", "/metrics", NULL, 0, NULL);
    cr_expect_null(strstr(m.body, "eeb_station_last_heard_seconds{"), "%s", m.body);
    free(m.body);

    /* a batch of 5 while no run is measured: received all the same; sent
     * again (a lost answer), counted once */
    const char *session = "0f0e0d0c-0b0a-4908-8706-050403020100";
    long long t0 = mono_ns();
    char *first = batch(session, t0, 5);
    send_batch(port, keytext, first);
    send_batch(port, keytext, first);
    free(first);
    metrics_have(port, "eeb_samples_received_total 5\n");
    metrics_have(port, "eeb_station_samples_received_total{team=\"alpha\"} 5\n");
    metrics_have(port, "eeb_station_last_heard_seconds{team=\"alpha\"} 0.");
    /* a team's token on the station's route: refused, logged, no token */
    struct reply r = request(port, "POST", "/api/v1/station/samples", "{}", 2, token);
    cr_expect_eq(r.code, 401, "%s", r.body);
    free(r.body);

    /* silent past its allowance (3 s), then heard again */
    sleep(4);
    metrics_have(port, "eeb_station_last_heard_seconds{team=\"alpha\"} ");
    m = request(port, "GET", "/metrics", NULL, 0, NULL);
    const char *ago = strstr(m.body, "eeb_station_last_heard_seconds{team=\"alpha\"} ");
    cr_assert(ago, "%s", m.body);
    double seconds = strtod(ago + strlen("eeb_station_last_heard_seconds{team=\"alpha\"} "), NULL);
    cr_expect(seconds > 3.5 && seconds < 10, "%g", seconds);
    free(m.body);
    char *later = batch(session, t0 + 5000000000LL, 3);
    send_batch(port, keytext, later);
    free(later);
    metrics_have(port, "eeb_samples_received_total 8\n");
    metrics_have(port, "eeb_station_samples_received_total{team=\"alpha\"} 8\n");
    eeb_server_stop(s);
    fclose(cfg.log);

    char *log = test_read_file(log_path, NULL);
    static const char *const said[] = {
        " eeb serve: station alpha: its agent first heard, session " /* ... */,
        " eeb serve: a caller: station refused, 401 Authorization: unknown station key\n",
        " eeb serve: station alpha: its agent silent for ",
        (" s, longer than its allowance of 3 s: no run is registered on it until it is heard "
         "again\n"),
        " eeb serve: station alpha: its agent heard again after ",
    };
    const char *at = log;
    for (size_t i = 0; i < sizeof said / sizeof *said; i++) {
        const char *found = strstr(at, said[i]);
        cr_expect(found, "no '%s' after what was said before in:\n%s", said[i], log);
        at = found ? found + strlen(said[i]) : at;
    }
    /* each change said once */
    cr_expect_eq(count_of(log, "first heard"), 1, "%s", log);
    cr_expect_eq(count_of(log, "silent for"), 1, "%s", log);
    cr_expect_eq(count_of(log, "its agent heard again"), 1, "%s", log);
    cr_expect_null(strstr(log, keytext), "the station key in the log");
    cr_expect_null(strstr(log, token), "a token in the log");
    free(log);

    /* the organizer's acts: the team made and the station key written,
     * named, never their secrets */
    char *audit = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&audit, &len);
    cr_assert(out);
    cr_assert_eq(eeb_server_list_audit(sdb, out, err, sizeof err), EEB_OK, "%s", err);
    fclose(out);
    assert_has(audit, "Z  add-team      alpha            a team made: its token shown once");
    assert_has(audit, "Z  station-key   alpha.key        a station agent's key written");
    cr_expect_null(strstr(audit, token), "a token in the audit log");
    cr_expect_null(strstr(audit, keytext), "the station key in the audit log");
    free(audit);
}
