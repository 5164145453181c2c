/*
 * test_ptd_emulator.c - the PTDaemon emulator that ships
 * (power/eeb_ptd_emulator.h, `eeb power emulate ptd`): eeb's own ptd://
 * source against it (identity, the ranging pass, readings that are the
 * load, the uncertainty in Auto and in the ranges set), a fixed range
 * below the load recorded by the sampler as over the rules' limit, values
 * that repeat within an update and change at the next, a client of the
 * test's own speaking the protocol line by line (and garbage), the loads'
 * traces, and the command: its port on stdout, `eeb power log` through it
 * following a command's output, SIGTERM, and bad input named.
 */
#include "power/eeb_power.h"
#include "power/eeb_ptd_emulator.h"
#include "tests/testlib.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[256], log_path[300];
static FILE *log_file;
static struct eeb_ptd_load *load;
static struct eeb_ptd_emulator *emu;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The emulator on a port of the kernel's choice, its log in dir/emu.log. */
static int start(struct eeb_ptd_load *l, int interval_ms)
{
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(log_path, sizeof log_path, "%s/emu.log", dir);
    log_file = fopen(log_path, "w");
    cr_assert_not_null(log_file);
    load = l;
    char err[512];
    struct eeb_ptd_emulator_config c = {.interval_ms = interval_ms, .load = l, .log = log_file};
    cr_assert_eq(eeb_ptd_emulator_start(&c, &emu, err, sizeof err), EEB_OK, "%s", err);
    return eeb_ptd_emulator_port(emu);
}

/* Stops it; its log (free it). */
static char *stop(void)
{
    eeb_ptd_emulator_stop(emu);
    eeb_ptd_load_free(load);
    fclose(log_file);
    char *text = test_read_file(log_path, NULL);
    cr_assert_not_null(text);
    return text;
}

static struct eeb_ptd_load *constant(double watts)
{
    struct eeb_ptd_load *l;
    char err[256];
    cr_assert_eq(eeb_ptd_load_constant(watts, &l, err, sizeof err), EEB_OK, "%s", err);
    return l;
}

static struct eeb_ptd_load *command(const char *cmd)
{
    struct eeb_ptd_load *l;
    char err[256];
    cr_assert_eq(eeb_ptd_load_command(cmd, &l, err, sizeof err), EEB_OK, "%s", err);
    return l;
}

/* path holding text, replaced at once (a reader never sees half of it). */
static void put(const char *path, const char *text)
{
    char tmp[400];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    test_write_file(tmp, text, strlen(text));
    cr_assert_eq(rename(tmp, path), 0);
}

/* ---- a client of the test's own ---- */

struct client {
    int fd;
    char buf[2048];
    size_t have;
};

static struct client dial(int port)
{
    struct client c = {.fd = socket(AF_INET, SOCK_STREAM, 0)};
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert(c.fd >= 0 && connect(c.fd, (struct sockaddr *)&a, sizeof a) == 0);
    return c;
}

static void send_raw(struct client *c, const void *bytes, size_t n)
{
    cr_assert_eq(send(c->fd, bytes, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* The next reply line, without its CR LF, into reply; within 5 s. */
static void reply_line(struct client *c, char *reply, size_t len)
{
    char *nl;
    while (!(nl = memchr(c->buf, '\n', c->have))) {
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        cr_assert_eq(poll(&p, 1, 5000), 1, "no reply in 5 s");
        ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - c->have, 0);
        cr_assert_gt(r, 0, "the emulator closed the connection");
        c->have += (size_t)r;
    }
    size_t n = (size_t)(nl - c->buf);
    cr_assert(n > 0 && nl[-1] == '\r', "a reply not ending CR LF");
    snprintf(reply, len, "%.*s", (int)(n - 1), c->buf);
    c->have -= n + 1;
    memmove(c->buf, nl + 1, c->have);
}

/* cmd sent, its reply (static storage). */
static const char *ask(struct client *c, const char *cmd)
{
    static char reply[1024];
    char line[512];
    snprintf(line, sizeof line, "%s\r\n", cmd);
    send_raw(c, line, strlen(line));
    reply_line(c, reply, sizeof reply);
    return reply;
}

static void expect_reply(struct client *c, const char *cmd, const char *want)
{
    const char *got = ask(c, cmd);
    cr_expect_str_eq(got, want, "'%s' answered '%s', not '%s'", cmd, got, want);
}

/* RL's watts, volts, amps. */
static void read_last(struct client *c, double *w, double *v, double *a)
{
    const char *r = ask(c, "RL");
    cr_assert_eq(sscanf(r, "Watts,%lf,Volts,%lf,Amps,%lf,PF,", w, v, a), 3, "RL: '%s'", r);
}

/* ---- eeb's source against it ---- */

Test(ptd_emulator, eebs_source_reads_the_load_ranged_and_identified, .timeout = 30)
{
    int port = start(constant(60), 1000);
    char uri[96];
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?interval=50", port);
    struct eeb_power_source *s = test_power_open(uri);
    cr_assert_not_null(s->note);
    assert_has(s->note, "Identify: 'eeb PTDaemon emulator, eeb ");
    assert_has(s->note, "load constant 60 W at 230 V");
    /* the ranging pass: 230 V, and 1.1 x 60 W / 230 V */
    assert_has(s->note, "SR,V,230 and SR,A,0.286957");
    assert_has(s->note, "put back to Auto V and Auto A on close");
    struct eeb_sample x;
    char err[512];
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(s->ops->read(s, eeb_mono_ns(), &x, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_float_eq(x.watts, 60, 1e-6);
        cr_expect_float_eq(x.volts, 230, 1e-9);
        cr_expect_float_eq(x.amps, 60.0 / 230, 1e-6);
        /* 0.1 % of the reading + 0.1 % of the range, 1.1 x the reading's */
        cr_expect_float_eq(s->uncertainty, 0.0021, 1e-12, "%g", s->uncertainty);
    }
    eeb_power_close(s);

    /* without the ranging pass the analyzer autoranges: 0.2 % */
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?interval=50,ranging=0", port);
    s = test_power_open(uri);
    assert_has(s->note, "ranges left as they were");
    cr_assert_eq(s->ops->read(s, eeb_mono_ns(), &x, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(x.watts, 60, 1e-6);
    cr_expect_float_eq(s->uncertainty, 0.002, 1e-12, "%g", s->uncertainty);
    eeb_power_close(s);

    char *log = stop();
    /* the conversation, in the order eeb's source has it */
    const char *hello = strstr(log, "NOTICE,Command: Hello\n");
    const char *ranging = strstr(log, "NOTICE,Command: Go,50,0,eeb_ranging\n");
    const char *set = strstr(log, "NOTICE,Command: SR,A,0.286957\n");
    const char *go = strstr(log, "NOTICE,Command: Go,50,0,eeb\n");
    cr_assert(hello && ranging && set && go, "%s", log);
    cr_expect(hello < ranging && ranging < set && set < go, "%s", log);
    assert_has(log, ",Watts,60.000000,Volts,230.000,Amps,0.260870,PF,1.000000,Uncertainty,0.21%,"
                    "Mark,eeb\n");
    cr_expect_null(strstr(log, "WARNING"), "%s", log);
    free(log);
}

/* A load that rises after the ranging pass: the current range it set is
 * below the load, every reading is over range at 3 %, and the sampler
 * records it as over the rules' 1 %. */
Test(ptd_emulator, a_fixed_range_below_the_load_is_over_the_limit, .timeout = 30)
{
    char watts[300], cmd[400];
    snprintf(watts, sizeof watts, "%s/watts", test_tmpdir());
    put(watts, "50\n");
    snprintf(cmd, sizeof cmd, "cat '%s'", watts);
    int port = start(command(cmd), 1000);
    char uri[96];
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?interval=50", port);
    struct eeb_power_source *s = test_power_open(uri);
    assert_has(s->note, "SR,V,230 and SR,A,0.23913"); /* 1.1 x 50 W / 230 V */
    put(watts, "100\n");
    sleep_s(0.2); /* four updates */
    struct eeb_sample x;
    char err[512];
    cr_assert_eq(s->ops->read(s, eeb_mono_ns(), &x, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(x.watts, 100, 1e-6, "the reading stays the load's");
    cr_expect_float_eq(s->uncertainty, 0.03, 1e-12, "%g", s->uncertainty);

    /* the sampler, into a run of its own */
    char db[300], uuid[37];
    snprintf(db, sizeof db, "%s/power.db", dir);
    struct eeb_rundb *rdb;
    cr_assert_eq(eeb_rundb_open(db, EEB_RUNDB_READWRITE, &rdb, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_run_new run = {
        .power_log = 1, .backend = "none", .t_max_s = NAN, .p_max_w = NAN, .rules_version = "1"};
    int64_t id;
    cr_assert_eq(eeb_rundb_run_create(rdb, &run, &id, uuid, err, sizeof err), EEB_OK, "%s", err);
    eeb_rundb_close(rdb);
    struct eeb_sampler_config cfg;
    eeb_sampler_config_default(&cfg);
    cfg.db_path = db, cfg.run = id, cfg.rate_hz = 20;
    struct eeb_sampler *sm;
    cr_assert_eq(eeb_sampler_start(s, &cfg, &sm, err, sizeof err), EEB_OK, "%s", err);
    sleep_s(0.6);
    struct eeb_sampler_stats st;
    cr_assert_eq(eeb_sampler_stop(sm, &st, err, sizeof err), EEB_OK, "%s", err);
    eeb_power_close(s);
    cr_expect_gt(test_sql_int(db, "SELECT count(*) FROM samples WHERE watts = 100"), 3);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'power_fault' AND "
                                  "json_extract(payload, '$.uncertainty') = 0.03"),
                 1);
    cr_expect_float_eq(test_sql_double(db, "SELECT value FROM results WHERE name = "
                                           "'power_uncertainty_max'"),
                       0.03, 1e-12);
    char *log = stop();
    assert_has(log, "WARNING,Uncertainty 3.00%, which is above 1.00% limit for the last sample! "
                    "(over range: 0.434783 A above the 0.23913 A range)");
    free(log);
}

/* ---- updates ---- */

/* A load command that counts its runs: each reading's watts is its
 * number, so equal values are one reading answered again. */
Test(ptd_emulator, values_repeat_within_the_update_interval, .timeout = 30)
{
    char counter[300], cmd[700];
    snprintf(counter, sizeof counter, "%s/runs", test_tmpdir());
    snprintf(cmd, sizeof cmd,
             "n=$(cat '%s' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '%s'; "
             "echo $n",
             counter, counter);
    int port = start(command(cmd), 1000);
    struct client c = dial(port);
    cr_assert(strncmp(ask(&c, "Go,1000,0,repeat"), "Starting untimed measurement", 28) == 0);
    sleep_s(0.1); /* Go's reading taken */
    double w0, w, v, a;
    read_last(&c, &w0, &v, &a);
    int changes = 0, queries = 20;
    double before = w0;
    for (int i = 0; i < queries; i++) { /* 20 queries in some 0.2 s */
        sleep_s(0.01);
        read_last(&c, &w, &v, &a);
        cr_expect(w == before || w == before + 1, "%g after %g", w, before);
        changes += w != before;
        before = w;
        char text[32];
        snprintf(text, sizeof text, "%.6f", w);
        const char *alone = ask(&c, "Watts");
        cr_expect(strcmp(alone, text) == 0 || atof(alone) == w + 1, "Watts '%s', RL %s", alone,
                  text);
    }
    /* at 1000 ms an update, 0.2 s of queries cross one at most */
    cr_expect_leq(changes, 1, "%d changes in %d queries", changes, queries);
    char *runs = test_read_file(counter, NULL);
    cr_expect_leq(atoi(runs) - (int)w0, 1, "the load was read %d times for %d queries",
                  atoi(runs) - (int)w0, 2 * queries);
    free(runs);
    /* the next update is another reading */
    sleep_s(1.2);
    read_last(&c, &w, &v, &a);
    cr_expect_gt(w, before, "%g after %g", w, before);
    close(c.fd);
    free(stop());
}

/* ---- the protocol, line by line ---- */

Test(ptd_emulator, a_client_of_its_own_line_by_line, .timeout = 30)
{
    int port = start(constant(23), 1000);
    struct client c = dial(port);
    expect_reply(&c, "Hello", "Hello, PTDaemon here!");
    cr_expect(strncmp(ask(&c, "Identify"), "eeb PTDaemon emulator, eeb ", 27) == 0);
    expect_reply(&c, "RR", "Ranges,1,-1,1,-1"); /* autoranging, as it starts */
    expect_reply(&c, "SR,A,0.5", "Range A changed");
    expect_reply(&c, "SR,V,300", "Range V changed");
    expect_reply(&c, "RR", "Ranges,0,0.5,0,300");
    cr_expect(strncmp(ask(&c, "SR,A,zero"), "Error: invalid range 'zero'", 27) == 0);
    cr_expect(strncmp(ask(&c, "SR,V,-3"), "Error", 5) == 0);
    expect_reply(&c, "RR", "Ranges,0,0.5,0,300");
    expect_reply(&c, "Bogus", "Error: unknown command 'Bogus'");
    expect_reply(&c, "Stop", "Error: no measurement running");
    cr_expect(strncmp(ask(&c, "Go,fast,0,x"), "Error: expected Go,", 19) == 0);

    /* garbage: a line too long (one Error for it), control bytes, a NUL */
    char junk[1000];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(1 + i * 37 % 250 == '\n' ? 'x' : 1 + i * 37 % 250);
    send_raw(&c, junk, sizeof junk);
    send_raw(&c, "\r\n", 2);
    char r[512];
    reply_line(&c, r, sizeof r);
    cr_expect_str_eq(r, "Error: command longer than 256 bytes");
    send_raw(&c, "\x01\x7f\xff\r\n", 5);
    reply_line(&c, r, sizeof r);
    cr_expect_str_eq(r, "Error: unknown command '\?\?\?'");
    send_raw(&c, "RL\0x\r\n", 6);
    reply_line(&c, r, sizeof r);
    cr_expect(strncmp(r, "Error", 5) == 0, "%s", r);
    expect_reply(&c, "Hello", "Hello, PTDaemon here!"); /* still talking */

    /* a measurement: 23 W at 230 V, in the 300 V and 0.5 A ranges */
    cr_expect(strncmp(ask(&c, "Go,100,0,lbl"),
                      "Starting untimed measurement, maximum 500000 samples at 100ms", 61) == 0);
    sleep_s(0.15);
    expect_reply(&c, "RL", "Watts,23.000000,Volts,230.000,Amps,0.100000,PF,1.000000,Mark,lbl");
    expect_reply(&c, "Watts", "23.000000");
    /* 0.1 % + 0.1 % x 300 V x 0.5 A / 23 W */
    expect_reply(&c, "Uncertainty", "Uncertainty,0.75%");
    /* a range below the load's 0.1 A: over range at the next update */
    expect_reply(&c, "SR,A,0.05", "Range A changed");
    sleep_s(0.25);
    expect_reply(&c, "Uncertainty", "Uncertainty,3.00%");
    expect_reply(&c, "RL", "Watts,23.000000,Volts,230.000,Amps,0.100000,PF,1.000000,Mark,lbl");
    expect_reply(&c, "SR,A,Auto", "Range A changed");
    expect_reply(&c, "SR,V,Auto", "Range V changed");
    sleep_s(0.25);
    expect_reply(&c, "Uncertainty", "Uncertainty,0.20%");
    expect_reply(&c, "Stop", "Stopping untimed measurement");
    close(c.fd);

    /* one connection at a time, and then the next */
    c = dial(port);
    expect_reply(&c, "Hello", "Hello, PTDaemon here!");
    expect_reply(&c, "RR", "Ranges,1,-1,1,-1"); /* the analyzer's ranges stay as set */
    close(c.fd);

    char *log = stop();
    assert_has(log, ",NOTICE,Command: Bogus\n");
    assert_has(log, ",ERROR,answered: Error: unknown command 'Bogus'\n");
    assert_has(log, ",ERROR,a command line longer than 256 bytes\n");
    assert_has(log, "(over range: 0.100000 A above the 0.05 A range)");
    assert_has(log, ",Watts,23.000000,Volts,230.000,Amps,0.100000,PF,1.000000,Uncertainty,3.00%,"
                    "Mark,lbl\n");
    free(log);
}

/* A command that fails: its readings are invalid, Watts -1 as PTDaemon's
 * "no valid value", and the log says why. */
Test(ptd_emulator, a_failing_load_command_is_an_invalid_reading, .timeout = 30)
{
    int port = start(command("echo 12; exit 3"), 1000);
    struct client c = dial(port);
    expect_reply(&c, "RL", "Watts,-1,Volts,-1,Amps,-1,PF,-1");
    expect_reply(&c, "Watts", "-1");
    expect_reply(&c, "Uncertainty", "Uncertainty,unknown");
    close(c.fd);
    char uri[96], err[512];
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?interval=50,ranging=0", port);
    struct eeb_power_source *s = test_power_open(uri);
    struct eeb_sample x;
    cr_expect_eq(s->ops->read(s, eeb_mono_ns(), &x, err, sizeof err), EEB_EDEVICE);
    assert_has(err, "PTDaemon has no valid reading");
    eeb_power_close(s);
    char *log = stop();
    assert_has(log, ",ERROR,no valid reading: load command exited with status 3\n");
    free(log);
}

/* A command that does not end is ended after EEB_PTD_LOAD_COMMAND_S,
 * with what it started, and that reading is invalid. */
Test(ptd_emulator, a_load_command_that_hangs_is_ended, .timeout = 30)
{
    char pidfile[300], cmd[400];
    snprintf(pidfile, sizeof pidfile, "%s/sleeper", test_tmpdir());
    snprintf(cmd, sizeof cmd, "sleep 60 & echo $! > '%s'; wait", pidfile);
    int64_t t0 = eeb_mono_ns();
    /* the first reading is taken here, and no other for an hour */
    int port = start(command(cmd), 3600000);
    double took = (double)(eeb_mono_ns() - t0) / 1e9;
    cr_expect(took >= EEB_PTD_LOAD_COMMAND_S - 0.1 && took < EEB_PTD_LOAD_COMMAND_S + 3, "%g s",
              took);
    struct client c = dial(port);
    expect_reply(&c, "RL", "Watts,-1,Volts,-1,Amps,-1,PF,-1");
    close(c.fd);
    char *text = test_read_file(pidfile, NULL);
    cr_assert_not_null(text);
    int sleeper = atoi(text);
    free(text);
    text = NULL;
    /* gone, or a zombie its new parent has not reaped yet (a SIGKILL takes
     * a moment to end a process on a loaded machine) */
    char stat[64], *st = NULL;
    snprintf(stat, sizeof stat, "/proc/%d/stat", sleeper);
    int gone = 0;
    for (int i = 0; i < 300 && !gone; i++) {
        free(text);
        text = test_read_file(stat, NULL);
        st = text ? strrchr(text, ')') : NULL;
        gone = !text || (st && st[1] == ' ' && st[2] == 'Z');
        if (!gone)
            sleep_s(0.01);
    }
    cr_expect(sleeper > 0 && gone, "the command's sleep %d lives on: %s", sleeper,
              text ? text : "");
    free(text);
    char *log = stop();
    assert_has(log, ",ERROR,no valid reading: load command ran longer than 5 s\n");
    free(log);
}

/* ---- loads ---- */

static double at(struct eeb_ptd_load *l, double t)
{
    double w;
    char err[256];
    cr_assert_eq(eeb_ptd_load_watts(l, t, &w, err, sizeof err), EEB_OK, "%s", err);
    return w;
}

Test(ptd_emulator, a_trace_holds_each_value_until_the_next, .timeout = 30)
{
    char path[300], err[512];
    snprintf(path, sizeof path, "%s/load.txt", test_tmpdir());
    put(path, "# a rehearsal's load\n0.5 10\n\n1.5 30   # a step\n2 20\n");
    struct eeb_ptd_load *l;
    cr_assert_eq(eeb_ptd_load_file(path, 0, &l, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(at(l, 0), 10, 0, "before the first, the first's");
    cr_expect_float_eq(at(l, 1.49), 10, 0);
    cr_expect_float_eq(at(l, 1.5), 30, 0);
    cr_expect_float_eq(at(l, 1.99), 30, 0);
    cr_expect_float_eq(at(l, 100), 20, 0, "past the end, the last's");
    eeb_ptd_load_free(l);
    /* looped: a period of 2 s and the last spacing, 0.5 s */
    cr_assert_eq(eeb_ptd_load_file(path, 1, &l, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(at(l, 2.4), 20, 0);
    cr_expect_float_eq(at(l, 2.5 + 1.6), 30, 0);
    cr_expect_float_eq(at(l, 2.5 + 0.1), 10, 0);
    assert_has(eeb_ptd_load_describe(l), "3 readings over 2.5 s, looped");
    eeb_ptd_load_free(l);

    /* eeb's own CSV layout, t_s,watts, as replay: reads it */
    put(path, "0,5\n1,6.5\n");
    cr_assert_eq(eeb_ptd_load_file(path, 0, &l, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_float_eq(at(l, 0.5), 5, 0);
    cr_expect_float_eq(at(l, 1.5), 6.5, 0);
    eeb_ptd_load_free(l);

    /* errors name the file and the line */
    static const struct {
        const char *text, *message;
    } bad[] = {
        {"0 10\n1 20\nthree 5\n", "load.txt:3: expected 'seconds watts'"},
        {"0 10\n1\n", "load.txt:2: expected 'seconds watts'"},
        {"0 10 7\n", "load.txt:1: expected 'seconds watts'"},
        {"0 10\n1 -2\n", "load.txt:2: watts -2 (power must be >= 0)"},
        {"1 10\n0.5 20\n", "load.txt:2: time 0.5 is not after line 1's"},
        {"# nothing\n\n", "load.txt: no readings"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        put(path, bad[i].text);
        err[0] = '\0';
        cr_expect_neq(eeb_ptd_load_file(path, 0, &l, err, sizeof err), EEB_OK, "%s", bad[i].text);
        cr_expect(strstr(err, bad[i].message), "'%s': '%s' lacks '%s'", bad[i].text, err,
                  bad[i].message);
    }
    cr_expect_neq(eeb_ptd_load_cpu("40", &l, err, sizeof err), EEB_OK);
    assert_has(err, "expected cpu:IDLE_W,BUSY_W");
}

/* The CPU's busy fraction between two readings, mapped to watts: within
 * IDLE_W..BUSY_W, and nearer BUSY_W while this process spins. */
Test(ptd_emulator, the_cpu_load_follows_this_machine, .timeout = 30)
{
    struct eeb_ptd_load *l;
    char err[256];
    cr_assert_eq(eeb_ptd_load_cpu("40,180", &l, err, sizeof err), EEB_OK, "%s", err);
    sleep_s(0.2);
    double idle = at(l, 0);
    cr_expect(idle >= 40 && idle <= 180, "%g", idle);
    int64_t until = eeb_mono_ns() + 300000000;
    volatile unsigned long spin = 0;
    while (eeb_mono_ns() < until)
        spin++;
    double busy = at(l, 0);
    cr_expect(busy >= 40 && busy <= 180, "%g", busy);
    eeb_ptd_load_free(l);
}

/* ---- the command ---- */

/* `eeb power emulate ptd ARGS...` started, its port read from its first
 * line on stdout. */
static pid_t spawn_emulator(const char *const *args, int *port)
{
    int out[2];
    cr_assert_eq(pipe(out), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(out[1], 1);
        close(out[0]);
        close(out[1]);
        const char *argv[32] = {EEB_BIN, "power", "emulate", "ptd"};
        for (int i = 0; args[i] && i < 27; i++)
            argv[4 + i] = args[i];
        execv(EEB_BIN, (char *const *)argv);
        _exit(127);
    }
    close(out[1]);
    char line[128] = "";
    size_t n = 0;
    while (n + 1 < sizeof line && !memchr(line, '\n', n)) {
        struct pollfd p = {.fd = out[0], .events = POLLIN};
        cr_assert_eq(poll(&p, 1, 10000), 1, "no port in 10 s");
        ssize_t r = read(out[0], line + n, sizeof line - 1 - n);
        cr_assert_gt(r, 0, "the emulator ended: '%s'", line);
        n += (size_t)r;
        line[n] = '\0';
    }
    close(out[0]);
    cr_assert_eq(sscanf(line, "listening on 127.0.0.1:%d\n", port), 1, "'%s'", line);
    return pid;
}

static void log_through(int port, const char *db)
{
    char uri[96];
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?interval=100", port);
    struct test_run r = test_eeb((const char *[]){"power", "log", "--source", uri, "--db", db,
                                                  "--rate", "10", "--duration", "1", "-q", NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
}

Test(ptd_emulator, the_command_serves_eeb_power_log_until_sigterm, .timeout = 60)
{
    char d[256], watts[300], cmd[400], log[300], db1[300], db2[300];
    snprintf(d, sizeof d, "%s", test_tmpdir());
    snprintf(watts, sizeof watts, "%s/watts", d);
    snprintf(log, sizeof log, "%s/ptd.log", d);
    snprintf(db1, sizeof db1, "%s/one.db", d);
    snprintf(db2, sizeof db2, "%s/two.db", d);
    snprintf(cmd, sizeof cmd, "cat '%s'", watts);
    put(watts, "40\n");
    int port;
    pid_t pid = spawn_emulator((const char *[]){"--port", "0", "--interval", "100",
                                                "--load-command", cmd, "--log", log, NULL},
                               &port);
    log_through(port, db1);
    put(watts, "75.5\n");
    sleep_s(0.2);
    log_through(port, db2);
    kill(pid, SIGTERM);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);

    /* each log's readings are what the command printed then */
    cr_expect_gt(test_sql_int(db1, "SELECT count(*) FROM samples"), 5);
    cr_expect_float_eq(test_sql_double(db1, "SELECT min(watts) FROM samples"), 40, 1e-9);
    cr_expect_float_eq(test_sql_double(db1, "SELECT max(watts) FROM samples"), 40, 1e-9);
    cr_expect_float_eq(test_sql_double(db1, "SELECT max(volts) FROM samples"), 230, 1e-9);
    cr_expect_gt(test_sql_int(db2, "SELECT count(*) FROM samples"), 5);
    cr_expect_float_eq(test_sql_double(db2, "SELECT min(watts) FROM samples"), 75.5, 1e-9);
    cr_expect_float_eq(test_sql_double(db2, "SELECT max(watts) FROM samples"), 75.5, 1e-9);
    cr_expect_float_eq(test_sql_double(db2, "SELECT max(amps) FROM samples"), 75.5 / 230, 1e-6);
    cr_expect_float_eq(test_sql_double(db2, "SELECT value FROM results WHERE name = "
                                            "'power_uncertainty_max'"),
                       0.0021, 1e-12);
    char *text = test_read_file(log, NULL);
    cr_assert_not_null(text);
    assert_has(text, ",NOTICE,Command: Hello\n");
    assert_has(text, ",Watts,75.500000,Volts,230.000,");
    assert_has(text, "stopped after ");
    free(text);

    /* its log is a PTDaemon log: replay: reads it back */
    char uri[400];
    snprintf(uri, sizeof uri, "replay:%s?date=MM-DD,mark=eeb", log);
    struct eeb_power_source *s = test_power_open(uri);
    eeb_power_close(s);
}

Test(ptd_emulator, the_command_names_bad_input, .timeout = 30)
{
    char path[300];
    snprintf(path, sizeof path, "%s/load.txt", test_tmpdir());
    put(path, "0 10\n1 20\nthree 5\n");
    struct test_run r = test_eeb((const char *[]){"power", "emulate", "ptd", "--load", path, NULL});
    cr_expect_eq(r.status, 1, "%s", r.err);
    assert_has(r.err, "load.txt:3: expected 'seconds watts'");
    cr_expect_str_eq(r.out, "", "no port for a load it cannot read");
    test_run_free(&r);
    static const struct {
        const char *args[6], *message;
    } bad[] = {
        {{"--watts", "5", "--load", "x", NULL}, "give one load"},
        {{NULL}, "give one load"},
        {{"--watts", "-1", NULL}, "--watts: -1 (watts, >= 0)"},
        {{"--watts", "5", "--interval", "5", NULL}, "--interval"},
        {{"--watts", "5", "--port", "70000", NULL}, "--port"},
        {{"--watts", "5", "--loop", NULL}, "--loop goes with --load FILE"},
        {{"--load", "cpu:40", NULL}, "expected cpu:IDLE_W,BUSY_W"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *argv[10] = {"power", "emulate", "ptd"};
        for (int k = 0; bad[i].args[k]; k++)
            argv[3 + k] = bad[i].args[k];
        r = test_eeb(argv);
        cr_expect(r.status == 1 || r.status == 2, "%s: exit %d", bad[i].message, r.status);
        cr_expect(strstr(r.err, bad[i].message), "'%s' lacks '%s'", r.err, bad[i].message);
        test_run_free(&r);
    }
    r = test_eeb((const char *[]){"power", "emulate", "scpi", "--watts", "1", NULL});
    cr_expect_eq(r.status, 2);
    assert_has(r.err, "only 'ptd'");
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "emulate", "--help", NULL});
    cr_expect_eq(r.status, 0);
    assert_has(r.out, "--load-command CMD");
    assert_has(r.out, "--interval MS");
    test_run_free(&r);
    r = test_eeb((const char *[]){"power", "--help", NULL});
    assert_has(r.out, "eeb power emulate ptd");
    test_run_free(&r);
}
