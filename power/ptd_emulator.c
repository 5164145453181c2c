/*
 * ptd_emulator.c - the PTDaemon emulator's daemon (eeb_ptd_emulator.h):
 * an analyzer thread that reads the load once per update interval, and a
 * server thread that answers one connection at a time, lines ending CR LF,
 * as power/source_ptd.c and MLPerf's power tooling speak to PTDaemon:
 *
 *   Hello          "Hello, PTDaemon here!" (what eeb's source checks)
 *   Identify       "eeb PTDaemon emulator, ..." (the load and the voltage)
 *   RR             "Ranges,<A autorange>,<A range>,<V autorange>,<V range>",
 *                  autorange 1 or 0, a range -1 while autoranging
 *   SR,V,<x|Auto>  "Range V changed"; SR,A the same, "Range A changed"
 *   Go,<ms>,<count>,<label>  a measurement: readings every ms from now (a
 *                  reading at once, which the reply waits for), count of
 *                  them (0: until Stop)
 *   Stop           "Stopping untimed measurement"
 *   RL             "Watts,W,Volts,V,Amps,A,PF,1.000000[,Mark,label]", the
 *                  last reading; Watts -1 (PTDaemon's "no valid value")
 *                  for a reading the load could not give
 *   Watts          the last reading's watts alone
 *   Uncertainty    "Uncertainty,0.21%" (the last reading's), or
 *                  "Uncertainty,unknown"
 * and "Error: ..." to anything else (eeb's source treats a reply starting
 * "Error" as a refusal).  Between updates RL, Watts and Uncertainty
 * answer the same reading again, as PTDaemon does.  A line longer than
 * EEB_PTD_EMU_LINE_MAX is answered with an Error and dropped.
 *
 * The log is PTDaemon's: a line per reading, "Time,MM-DD-YYYY
 * HH:MM:SS.mmm,Watts,...,Mark,label" (UTC), with the pair
 * Uncertainty,PERCENT added, and messages "Time,...,NOTICE,..." (every
 * command), WARNING (a reading over 1 %, over range) and ERROR (an invalid
 * reading, a refused command) between them; replay: reads it back.
 *
 * Sections: the log; readings; the protocol; the server; start and stop.
 */
#include "eeb_ptd_emulator.h"
#include "power_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { VOLTS, AMPS };

#define GO_WAIT_MS 500 /* Go's reply waits this long at most for its first reading */
/* A reading is over a range set to what RL said of it only by more than
 * RL's digits may have rounded away (230.0004 V is "230.000", and a range
 * of 230 holds it). */
#define RANGE_ROUNDING 1e-4

struct reading {
    double watts, volts, amps; /* valid: the load's; else -1 */
    double u;                  /* relative uncertainty; INFINITY: unknown */
    int valid;
};

struct eeb_ptd_emulator {
    struct eeb_ptd_load *load; /* the analyzer thread's alone */
    double volts;
    FILE *log;
    char address[300]; /* "ADDR:PORT", for the log */
    int listen_fd, port;
    int wake[2]; /* stop: a byte on it ends the server's poll */
    pthread_t server, analyzer;
    int analyzer_started, server_started;
    int64_t t0_ns;            /* start: the load's time 0 */
    pthread_mutex_t lock;     /* guards the fields below and the log */
    pthread_cond_t cond;      /* the analyzer waits on it: stop, or a Go */
    pthread_cond_t read_cond; /* a Go waits on it for its first reading */
    int64_t last_at;          /* the time the last reading was due */
    int stop;
    int interval_ms;
    int64_t next_ns; /* the next reading's time */
    struct reading last;
    unsigned long readings;
    double range[2];            /* V, A; 0: autoranging */
    int going;                  /* a measurement runs */
    unsigned long count, taken; /* its readings, 0: untimed; taken so far */
    char label[64];
};

/* ---- the log ---- */

/* "Time,MM-DD-YYYY HH:MM:SS.mmm" now, UTC. */
static void stamp(char *out, size_t len)
{
    int64_t ns = eeb_utc_ns();
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    snprintf(out, len, "Time,%02d-%02d-%04d %02d:%02d:%02d.%03d", tm.tm_mon + 1, tm.tm_mday,
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ns % 1000000000 / 1000000));
}

/* A line of the log after its time; the caller holds the lock. */
static void say(struct eeb_ptd_emulator *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(struct eeb_ptd_emulator *e, const char *fmt, ...)
{
    char t[48];
    stamp(t, sizeof t);
    va_list ap;
    va_start(ap, fmt);
    fprintf(e->log, "%s,", t);
    vfprintf(e->log, fmt, ap);
    fputc('\n', e->log);
    va_end(ap);
    fflush(e->log);
}

/* s with what a log or a terminal should not show as '?', cut to len. */
static void printable(char *out, size_t len, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++)
        out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
    out[i] = '\0';
}

/* ---- readings ---- */

/* The reading's uncertainty in the ranges now (eeb_ptd_emulator.h); why
 * says a range it is over, "" if none. */
static double uncertainty(const struct eeb_ptd_emulator *e, const struct reading *r, char *why,
                          size_t len)
{
    why[0] = '\0';
    if (!r->valid)
        return INFINITY;
    if (e->range[VOLTS] > 0 && r->volts > e->range[VOLTS] * (1 + RANGE_ROUNDING))
        snprintf(why, len, "%.3f V above the %g V range", r->volts, e->range[VOLTS]);
    else if (e->range[AMPS] > 0 && r->amps > e->range[AMPS] * (1 + RANGE_ROUNDING))
        snprintf(why, len, "%.6f A above the %g A range", r->amps, e->range[AMPS]);
    if (why[0])
        return EEB_PTD_EMU_OVER_RANGE_U;
    int fixed = e->range[VOLTS] > 0 || e->range[AMPS] > 0;
    if (!(r->watts > 0))
        return fixed ? INFINITY : EEB_PTD_EMU_READING_U + EEB_PTD_EMU_RANGE_U;
    double v = e->range[VOLTS] > 0 ? e->range[VOLTS] : r->volts;
    double a = e->range[AMPS] > 0 ? e->range[AMPS] : r->amps;
    return EEB_PTD_EMU_READING_U + EEB_PTD_EMU_RANGE_U * v * a / r->watts;
}

/* The reading of watts (or none, why_not saying why) made the last, and
 * logged; the caller holds the lock. */
static void take(struct eeb_ptd_emulator *e, int64_t at, int ok, double watts, const char *why_not)
{
    e->last_at = at;
    pthread_cond_broadcast(&e->read_cond);
    struct reading r = {.watts = -1, .volts = -1, .amps = -1, .valid = ok};
    if (ok)
        r.watts = watts, r.volts = e->volts, r.amps = watts / e->volts;
    char over[128], mark[80] = "";
    r.u = uncertainty(e, &r, over, sizeof over);
    e->last = r;
    e->readings++;
    if (e->going)
        snprintf(mark, sizeof mark, ",Mark,%s", e->label);
    if (!ok) {
        say(e, "ERROR,no valid reading: %s", why_not);
        say(e, "Watts,-1,Volts,-1,Amps,-1,PF,-1,Uncertainty,unknown%s", mark);
    } else if (isinf(r.u))
        say(e, "Watts,%.6f,Volts,%.3f,Amps,%.6f,PF,1.000000,Uncertainty,unknown%s", r.watts,
            r.volts, r.amps, mark);
    else
        say(e, "Watts,%.6f,Volts,%.3f,Amps,%.6f,PF,1.000000,Uncertainty,%.2f%%%s", r.watts, r.volts,
            r.amps, 100 * r.u, mark);
    if (over[0])
        say(e,
            "WARNING,Uncertainty %.2f%%, which is above %.2f%% limit for the last sample! "
            "(over range: %s)",
            100 * r.u, 100 * EEB_POWER_UNCERTAINTY_LIMIT, over);
    else if (isinf(r.u) && ok)
        say(e, "WARNING,the uncertainty of a 0 W reading in a fixed range cannot be evaluated");
    if (e->going && e->count && ++e->taken >= e->count) {
        e->going = 0;
        say(e, "NOTICE,timed measurement '%s' done: %lu samples", e->label, e->taken);
    }
}

static void deadline(int64_t ns, struct timespec *out)
{
    out->tv_sec = (time_t)(ns / 1000000000);
    out->tv_nsec = (long)(ns % 1000000000);
}

/* The analyzer: a reading at each update, the load asked without the lock
 * held (a command takes its time). */
static void *analyze(void *arg)
{
    struct eeb_ptd_emulator *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        int64_t now = eeb_mono_ns();
        if (now < e->next_ns) {
            struct timespec ts;
            deadline(e->next_ns, &ts);
            pthread_cond_timedwait(&e->cond, &e->lock, &ts);
            continue;
        }
        int64_t at = e->next_ns;
        pthread_mutex_unlock(&e->lock);
        double w = 0;
        char why[256] = "";
        int rc = eeb_ptd_load_watts(e->load, (double)(at - e->t0_ns) / 1e9, &w, why, sizeof why);
        pthread_mutex_lock(&e->lock);
        take(e, at, rc == EEB_OK, w, why);
        if (e->next_ns == at) { /* no Go moved the clock meanwhile */
            int64_t step = (int64_t)e->interval_ms * 1000000;
            now = eeb_mono_ns();
            e->next_ns = at + step;
            if (e->next_ns <= now) /* late (a slow command): the next update after now */
                e->next_ns += ((now - e->next_ns) / step + 1) * step;
        }
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- the protocol ---- */

/* SR,V,<x> and SR,A,<x>: x a number > 0 or Auto. */
static void set_range(struct eeb_ptd_emulator *e, const char *cmd, char *reply, size_t len)
{
    int q = cmd[3] == 'A' ? AMPS : VOLTS;
    const char *x = cmd + 5;
    char *end;
    errno = 0;
    double v = strcasecmp(x, "Auto") == 0 ? 0 : strtod(x, &end);
    if (strcasecmp(x, "Auto") != 0 && (end == x || *end || errno || !(v > 0) || v > 1e6)) {
        char quoted[64];
        printable(quoted, sizeof quoted, x);
        snprintf(reply, len, "Error: invalid range '%s' (a number > 0, or Auto)", quoted);
        return;
    }
    e->range[q] = v;
    snprintf(reply, len, "Range %c changed", q == AMPS ? 'A' : 'V');
}

/* Go,<interval ms>,<count>,<label>. */
static void go(struct eeb_ptd_emulator *e, const char *cmd, char *reply, size_t len)
{
    int ms = 0, n = 0;
    unsigned long count = 0;
    const char *label = NULL;
    if (sscanf(cmd, "Go,%d,%lu,%n", &ms, &count, &n) == 2 && n > 0)
        label = cmd + n;
    if (!label || ms < 10 || ms > 3600000 || strlen(label) >= sizeof e->label ||
        strspn(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") !=
            strlen(label)) {
        snprintf(reply, len,
                 "Error: expected Go,<interval ms 10..3600000>,<samples, 0: "
                 "untimed>,<label of up to 63 letters, digits, - _ .>");
        return;
    }
    e->interval_ms = ms;
    e->going = 1;
    e->count = count, e->taken = 0;
    snprintf(e->label, sizeof e->label, "%s", label);
    /* a reading at once, and each interval from it; the reply waits for
     * that first reading (GO_WAIT_MS at most), so that what is asked after
     * it is read in the ranges set before it */
    int64_t now = eeb_mono_ns(), until = now + GO_WAIT_MS * 1000000;
    e->next_ns = now;
    pthread_cond_signal(&e->cond);
    struct timespec ts;
    deadline(until, &ts);
    while (e->analyzer_started && !e->stop && e->last_at < now && eeb_mono_ns() < until)
        pthread_cond_timedwait(&e->read_cond, &e->lock, &ts);
    if (count)
        snprintf(reply, len,
                 "Starting timed measurement, %lu samples at %dms with 0 rampup "
                 "samples",
                 count, ms);
    else
        snprintf(reply, len,
                 "Starting untimed measurement, maximum 500000 samples at %dms with 0 "
                 "rampup samples",
                 ms);
}

static void ranges(const struct eeb_ptd_emulator *e, char *reply, size_t len)
{
    double a = e->range[AMPS], v = e->range[VOLTS];
    snprintf(reply, len, "Ranges,%d,%g,%d,%g", !(a > 0), a > 0 ? a : -1.0, !(v > 0),
             v > 0 ? v : -1.0);
}

/* The reply to one command line (without its line end); the caller holds
 * the lock. */
static void answer(struct eeb_ptd_emulator *e, const char *cmd, char *reply, size_t len)
{
    char quoted[EEB_PTD_EMU_LINE_MAX + 1];
    printable(quoted, sizeof quoted, cmd);
    say(e, "NOTICE,Command: %s", quoted);
    const struct reading *r = &e->last;
    if (strcmp(cmd, "Hello") == 0)
        snprintf(reply, len, "Hello, PTDaemon here!");
    else if (strcmp(cmd, "Identify") == 0)
        snprintf(reply, len, "eeb PTDaemon emulator, eeb %s, no analyzer: load %.160s at %g V",
                 EEB_VERSION, eeb_ptd_load_describe(e->load), e->volts);
    else if (strcmp(cmd, "RR") == 0)
        ranges(e, reply, len);
    else if (strncmp(cmd, "SR,V,", 5) == 0 || strncmp(cmd, "SR,A,", 5) == 0)
        set_range(e, cmd, reply, len);
    else if (strncmp(cmd, "Go,", 3) == 0)
        go(e, cmd, reply, len);
    else if (strcmp(cmd, "Stop") == 0 && e->going)
        e->going = 0, snprintf(reply, len, "Stopping untimed measurement");
    else if (strcmp(cmd, "Stop") == 0)
        snprintf(reply, len, "Error: no measurement running");
    else if (strcmp(cmd, "RL") == 0 && !r->valid)
        snprintf(reply, len, "Watts,-1,Volts,-1,Amps,-1,PF,-1%s%s", e->going ? ",Mark," : "",
                 e->going ? e->label : "");
    else if (strcmp(cmd, "RL") == 0)
        snprintf(reply, len, "Watts,%.6f,Volts,%.3f,Amps,%.6f,PF,1.000000%s%s", r->watts, r->volts,
                 r->amps, e->going ? ",Mark," : "", e->going ? e->label : "");
    else if (strcmp(cmd, "Watts") == 0)
        snprintf(reply, len, r->valid ? "%.6f" : "-1", r->watts);
    else if (strcmp(cmd, "Uncertainty") == 0 && isinf(r->u))
        snprintf(reply, len, "Uncertainty,unknown");
    else if (strcmp(cmd, "Uncertainty") == 0)
        snprintf(reply, len, "Uncertainty,%.2f%%", 100 * r->u);
    else
        snprintf(reply, len, "Error: unknown command '%.80s'", quoted);
    if (strncmp(reply, "Error", 5) == 0)
        say(e, "ERROR,answered: %s", reply);
}

/* ---- the server ---- */

static int send_line(int fd, const char *reply)
{
    char out[600];
    int n = snprintf(out, sizeof out, "%s\r\n", reply);
    size_t len = n > 0 && (size_t)n < sizeof out ? (size_t)n : sizeof out - 1;
    for (size_t sent = 0; sent < len;) {
        ssize_t w = send(fd, out + sent, len - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        sent += (size_t)w;
    }
    return 0;
}

/* A reply sent to the socket in arg. */
static int to_socket(void *arg, const char *reply)
{
    return send_line(*(int *)arg, reply);
}

int power_ptd_emu_feed(struct eeb_ptd_emulator *e, struct power_ptd_emu_conn *c, const char *data,
                       size_t n, int (*reply_to)(void *arg, const char *reply), void *arg)
{
    while (n) {
        size_t take_n = n < sizeof c->buf - c->have ? n : sizeof c->buf - c->have;
        memcpy(c->buf + c->have, data, take_n);
        c->have += take_n, data += take_n, n -= take_n;
        char *nl;
        while ((nl = memchr(c->buf, '\n', c->have))) {
            size_t used = (size_t)(nl - c->buf) + 1;
            size_t line = (size_t)(nl - c->buf) - (nl > c->buf && nl[-1] == '\r');
            c->buf[line] = '\0';
            char reply[512] = "";
            if (!c->dropping) {
                pthread_mutex_lock(&e->lock);
                /* a NUL inside the line: not a command of the protocol */
                if (strlen(c->buf) != line)
                    answer(e, "(a line with a NUL byte)", reply, sizeof reply);
                else
                    answer(e, c->buf, reply, sizeof reply);
                pthread_mutex_unlock(&e->lock);
                if (reply_to(arg, reply) != 0)
                    return -1;
            }
            c->dropping = 0;
            c->have -= used;
            memmove(c->buf, c->buf + used, c->have);
        }
        if (c->have == sizeof c->buf) { /* no line end in a line's room */
            if (!c->dropping) {
                pthread_mutex_lock(&e->lock);
                say(e, "ERROR,a command line longer than %d bytes", EEB_PTD_EMU_LINE_MAX);
                pthread_mutex_unlock(&e->lock);
                char reply[96];
                snprintf(reply, sizeof reply, "Error: command longer than %d bytes",
                         EEB_PTD_EMU_LINE_MAX);
                if (reply_to(arg, reply) != 0)
                    return -1;
            }
            c->dropping = 1;
            c->have = 0;
        }
    }
    return 0;
}

/* Serves one connection until it closes or stop: 1 for stop. */
static int serve(struct eeb_ptd_emulator *e, int fd)
{
    struct power_ptd_emu_conn c = {.have = 0};
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = e->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 0;
        }
        if (p[1].revents)
            return 1;
        char chunk[1024];
        ssize_t r = recv(fd, chunk, sizeof chunk, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || power_ptd_emu_feed(e, &c, chunk, (size_t)r, to_socket, &fd) != 0)
            return 0;
    }
}

static void *server(void *arg)
{
    struct eeb_ptd_emulator *e = arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = e->listen_fd, .events = POLLIN},
                              {.fd = e->wake[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents)
            break;
        if (!p[0].revents)
            continue;
        struct sockaddr_storage from;
        socklen_t len = sizeof from;
        int fd = accept4(e->listen_fd, (struct sockaddr *)&from, &len, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
        getnameinfo((struct sockaddr *)&from, len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV);
        pthread_mutex_lock(&e->lock);
        say(e, "NOTICE,Connection from %s port %s", host, port);
        pthread_mutex_unlock(&e->lock);
        int stop = serve(e, fd);
        close(fd);
        pthread_mutex_lock(&e->lock);
        if (e->going)
            say(e, "NOTICE,measurement '%s' stopped: the connection closed", e->label);
        e->going = 0;
        say(e, "NOTICE,Connection closed");
        pthread_mutex_unlock(&e->lock);
        if (stop)
            break;
    }
    return NULL;
}

/* ---- start and stop ---- */

static int listen_on(struct eeb_ptd_emulator *e, const char *bind_to, int port, char *err,
                     size_t errlen)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int rc = getaddrinfo(bind_to, service, &hints, &ai);
    if (rc != 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "PTDaemon emulator: address %s: %s", bind_to,
                        gai_strerror(rc));
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        rc = eeb_errf(err, errlen, EEB_EIO, "PTDaemon emulator: listening on %s port %d: %s",
                      bind_to, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return rc;
    }
    int v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    e->listen_fd = fd;
    e->port =
        ntohs(v6 ? ((struct sockaddr_in6 *)&a)->sin6_port : ((struct sockaddr_in *)&a)->sin_port);
    snprintf(e->address, sizeof e->address, v6 ? "[%.256s]:%d" : "%.256s:%d", bind_to, e->port);
    return EEB_OK;
}

/* e, not listening, its first reading taken. */
static int create(const struct eeb_ptd_emulator_config *cfg, struct eeb_ptd_emulator **out,
                  char *err, size_t errlen)
{
    if (!cfg->load)
        return eeb_errf(err, errlen, EEB_EINVAL, "PTDaemon emulator: no load");
    if (cfg->port < 0 || cfg->port > 65535 || cfg->interval_ms < 0 ||
        (cfg->interval_ms && cfg->interval_ms < 10) || cfg->interval_ms > 3600000 ||
        cfg->volts < 0 || !isfinite(cfg->volts))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "PTDaemon emulator: port %d (0..65535), interval %d ms (10..3600000), "
                        "%g V (> 0)",
                        cfg->port, cfg->interval_ms, cfg->volts);
    struct eeb_ptd_emulator *e = calloc(1, sizeof *e);
    if (!e)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    e->load = cfg->load;
    e->volts = cfg->volts > 0 ? cfg->volts : 230;
    e->interval_ms = cfg->interval_ms ? cfg->interval_ms : 1000;
    e->log = cfg->log ? cfg->log : stderr;
    e->listen_fd = e->wake[0] = e->wake[1] = -1;
    pthread_mutex_init(&e->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &ca);
    pthread_cond_init(&e->read_cond, &ca);
    pthread_condattr_destroy(&ca);
    *out = e;
    return EEB_OK;
}

/* The first reading, before the first client can ask for one. */
static void first_reading(struct eeb_ptd_emulator *e)
{
    e->t0_ns = eeb_mono_ns();
    double w = 0;
    char why[256] = "";
    int rc = eeb_ptd_load_watts(e->load, 0, &w, why, sizeof why);
    pthread_mutex_lock(&e->lock);
    take(e, e->t0_ns, rc == EEB_OK, w, why);
    e->next_ns = e->t0_ns + (int64_t)e->interval_ms * 1000000;
    pthread_mutex_unlock(&e->lock);
}

int power_ptd_emu_open_idle(const struct eeb_ptd_emulator_config *cfg,
                            struct eeb_ptd_emulator **out, char *err, size_t errlen)
{
    int rc = create(cfg, out, err, errlen);
    if (rc == EEB_OK)
        first_reading(*out);
    return rc;
}

int eeb_ptd_emulator_start(const struct eeb_ptd_emulator_config *cfg, struct eeb_ptd_emulator **out,
                           char *err, size_t errlen)
{
    struct eeb_ptd_emulator *e;
    int rc = create(cfg, &e, err, errlen);
    if (rc != EEB_OK)
        return rc;
    rc = listen_on(e, cfg->bind ? cfg->bind : "127.0.0.1", cfg->port, err, errlen);
    if (rc == EEB_OK && pipe2(e->wake, O_CLOEXEC) != 0)
        rc = eeb_errf(err, errlen, EEB_EIO, "PTDaemon emulator: pipe: %s", strerror(errno));
    if (rc != EEB_OK) {
        eeb_ptd_emulator_stop(e);
        return rc;
    }
    pthread_mutex_lock(&e->lock);
    say(e,
        "NOTICE,eeb PTDaemon emulator %s listening on %s: load %s at %g V, an update every "
        "%d ms",
        EEB_VERSION, e->address, eeb_ptd_load_describe(e->load), e->volts, e->interval_ms);
    pthread_mutex_unlock(&e->lock);
    first_reading(e);
    /* its threads take no signals: a program's handlers run on its own
     * threads, and the emulator's calls are not interrupted */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if ((rc = pthread_create(&e->analyzer, NULL, analyze, e)) == 0)
        e->analyzer_started = 1;
    if (rc == 0 && (rc = pthread_create(&e->server, NULL, server, e)) == 0)
        e->server_started = 1;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        eeb_ptd_emulator_stop(e);
        return eeb_errf(err, errlen, EEB_EIO, "PTDaemon emulator: a thread: %s", strerror(rc));
    }
    *out = e;
    return EEB_OK;
}

int eeb_ptd_emulator_port(const struct eeb_ptd_emulator *e)
{
    return e->port;
}

const char *eeb_ptd_emulator_address(const struct eeb_ptd_emulator *e)
{
    return e->address;
}

unsigned long eeb_ptd_emulator_readings(struct eeb_ptd_emulator *e)
{
    pthread_mutex_lock(&e->lock);
    unsigned long n = e->readings;
    pthread_mutex_unlock(&e->lock);
    return n;
}

void eeb_ptd_emulator_stop(struct eeb_ptd_emulator *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->lock);
    e->stop = 1;
    pthread_cond_signal(&e->cond);
    pthread_mutex_unlock(&e->lock);
    if (e->analyzer_started) /* a command under way ends now, not in 5 s */
        eeb_ptd_load_interrupt(e->load);
    if (e->wake[1] >= 0 && write(e->wake[1], "x", 1) < 0) {
        /* a pipe of its own, never full: nothing to do */
    }
    if (e->server_started)
        pthread_join(e->server, NULL);
    if (e->analyzer_started)
        pthread_join(e->analyzer, NULL);
    if (e->listen_fd >= 0) {
        pthread_mutex_lock(&e->lock);
        say(e, "NOTICE,eeb PTDaemon emulator on %s stopped after %lu readings", e->address,
            e->readings);
        pthread_mutex_unlock(&e->lock);
        close(e->listen_fd);
    }
    for (int i = 0; i < 2; i++)
        if (e->wake[i] >= 0)
            close(e->wake[i]);
    pthread_cond_destroy(&e->cond);
    pthread_cond_destroy(&e->read_cond);
    pthread_mutex_destroy(&e->lock);
    free(e);
}
