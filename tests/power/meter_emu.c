/*
 * meter_emu.c - the SCPI and PTDaemon meter emulators of meter_emu.h.
 */
#include "meter_emu.h"

#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct meter_emu {
    struct meter_emu_config cfg;
    int listen_fd, port;
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t lock; /* guards log and connections */
    char *log;
    size_t log_len;
    unsigned connections, readings;
    int items[3];           /* SCPI: the function of each item, 'U', 'I' or 'P' */
    int number;             /* SCPI: items answered */
    int going;              /* PTD: Go received */
    unsigned uncertainties; /* PTD: Uncertainty queries answered */
    unsigned rls;           /* PTD: RL queries answered (amps_from) */
    char range[2][32];      /* PTD: the analyzer's volts and amps ranges, a number or "Auto" */
};

static void record(struct meter_emu *e, const char *cmd)
{
    pthread_mutex_lock(&e->lock);
    size_t n = strlen(cmd);
    e->log = realloc(e->log, e->log_len + n + 2);
    memcpy(e->log + e->log_len, cmd, n);
    e->log_len += n;
    e->log[e->log_len++] = '\n';
    e->log[e->log_len] = '\0';
    pthread_mutex_unlock(&e->lock);
}

/* Counts a reading and applies its fault: 0 none (answer it), 1 the odd
 * reply is in reply, -1 hang up. */
static int fault(struct meter_emu *e, char *reply, size_t len)
{
    unsigned r = ++e->readings;
    if (r == e->cfg.stall_at) {
        struct timespec ts = {(time_t)e->cfg.stall_s,
                              (long)((e->cfg.stall_s - (double)(time_t)e->cfg.stall_s) * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (r == e->cfg.drop_at)
        return -1;
    if (r != e->cfg.odd_at)
        return 0;
    snprintf(reply, len, "%s", e->cfg.odd_reply);
    return 1;
}

/* The WT300 subset: settings have no reply, queries one line. */
static int scpi(struct meter_emu *e, const char *cmd, char *reply, size_t len)
{
    int n, item;
    char fn;
    if (strcmp(cmd, "*IDN?") == 0)
        snprintf(reply, len, "YOKOGAWA,WT310E,EMU00001,F1.03");
    else if (sscanf(cmd, ":NUMeric:NORMal:NUMber %d", &n) == 1)
        e->number = n;
    else if (strcmp(cmd, ":NUMeric:NORMal:NUMber?") == 0)
        snprintf(reply, len, "%d", e->number);
    else if (sscanf(cmd, ":NUMeric:NORMal:ITEM%d %c,", &item, &fn) == 2 && item >= 1 && item <= 3)
        e->items[item - 1] = fn;
    else if (strcmp(cmd, ":NUMeric:NORMal:VALue?") == 0) {
        int f = fault(e, reply, len);
        if (f)
            return f < 0 ? -1 : 0;
        reply[0] = '\0';
        for (int i = 0; i < e->number && i < 3; i++) {
            double v = e->items[i] == 'U'   ? e->cfg.volts
                       : e->items[i] == 'I' ? e->cfg.amps
                       : e->items[i] == 'P' ? e->cfg.volts * e->cfg.amps
                                            : 9.91e37;
            snprintf(reply + strlen(reply), len - strlen(reply), "%s%.5E", i ? "," : "", v);
        }
    }
    return 0;
}

/* RR's reply: "Ranges,<A autorange>,<A range>,<V autorange>,<V range>",
 * autorange 1 or 0, a range -1 while autoranging (power-dev's server.py). */
static void ranges(const struct meter_emu *e, char *reply, size_t len)
{
    int a = strcmp(e->range[1], "Auto") == 0, v = strcmp(e->range[0], "Auto") == 0;
    snprintf(reply, len, "Ranges,%d,%f,%d,%f", a, a ? -1.0 : atof(e->range[1]), v,
             v ? -1.0 : atof(e->range[0]));
}

/* SR,V,<range> and SR,A,<range>: a positive number or Auto. */
static void set_range(struct meter_emu *e, const char *cmd, char *reply, size_t len)
{
    int q = cmd[3] == 'A';
    const char *value = cmd + 5;
    char *end;
    double v = strtod(value, &end);
    if (strcmp(value, "Auto") && (end == value || *end || !(v > 0))) {
        snprintf(reply, len, "Error: invalid range '%.100s'", value);
        return;
    }
    snprintf(e->range[q], sizeof e->range[q], "%.31s", value);
    snprintf(reply, len, "Range %c changed", q ? 'A' : 'V');
}

static int ptd(struct meter_emu *e, const char *cmd, char *reply, size_t len)
{
    if (strcmp(cmd, "Hello") == 0)
        snprintf(reply, len, "%s",
                 e->cfg.not_ptd ? "220 mail.example ESMTP" : "Hello, PTDaemon here!");
    else if (strcmp(cmd, "Identify") == 0)
        snprintf(reply, len, "PTDaemon emulator (eeb tests), analyzer WT310E");
    else if (strncmp(cmd, "Go,", 3) == 0)
        e->going = 1, snprintf(reply, len,
                               "Starting untimed measurement, maximum 500000 samples "
                               "at 1000ms with 0 rampup samples");
    else if (strcmp(cmd, "Stop") == 0)
        e->going = 0, snprintf(reply, len, "Stopping untimed measurement");
    else if (strcmp(cmd, "RL") == 0 && !e->going)
        snprintf(reply, len, "Error: no measurement running");
    else if (strcmp(cmd, "RL") == 0) {
        int f = fault(e, reply, len);
        if (f)
            return f < 0 ? -1 : 0;
        pthread_mutex_lock(&e->lock);
        if (e->cfg.amps_from && ++e->rls == e->cfg.amps_from)
            e->cfg.amps = e->cfg.amps_later;
        double v = e->cfg.volts, a = e->cfg.amps;
        pthread_mutex_unlock(&e->lock);
        snprintf(reply, len, "Watts,%.4f,Volts,%.3f,Amps,%.4f,PF,0.9990", v * a, v, a);
    } else if (strcmp(cmd, "Uncertainty") == 0 && e->cfg.uncertainty)
        snprintf(reply, len, "%s",
                 ++e->uncertainties >= e->cfg.uncertainty_from ? e->cfg.uncertainty
                                                               : "Uncertainty,0.1");
    else if (strcmp(cmd, "RR") == 0)
        ranges(e, reply, len);
    else if (strncmp(cmd, "SR,V,", 5) == 0 || strncmp(cmd, "SR,A,", 5) == 0)
        set_range(e, cmd, reply, len);
    else
        snprintf(reply, len, "Error: unknown command '%.400s'", cmd);
    return 0;
}

/* Serves one connection until it closes, a fault hangs up, or stop. */
static void serve(struct meter_emu *e, int fd)
{
    char buf[4096];
    size_t have = 0;
    e->going = 0;
    while (!atomic_load(&e->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (r <= 0)
            return;
        have += (size_t)r;
        char *nl;
        while ((nl = memchr(buf, '\n', have))) {
            *nl = '\0';
            if (nl > buf && nl[-1] == '\r')
                nl[-1] = '\0';
            char reply[512] = "";
            record(e, buf);
            int rc = e->cfg.protocol == METER_SCPI ? scpi(e, buf, reply, sizeof reply)
                                                   : ptd(e, buf, reply, sizeof reply);
            if (rc < 0)
                return;
            if (*reply) {
                strcat(reply, e->cfg.protocol == METER_SCPI ? "\n" : "\r\n");
                if (send(fd, reply, strlen(reply), MSG_NOSIGNAL) < 0)
                    return;
            }
            have -= (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, have);
        }
    }
}

static void *run(void *arg)
{
    struct meter_emu *e = arg;
    /* A meter is an instrument of its own, whose answers do not wait on
     * the load of the machine it measures: this one answers at the
     * real-time priority the sampler asks for, where that is granted.  At
     * normal priority, on a test machine loaded by the run it measures and
     * another job, replies sat 40-290 ms on the run queue while the
     * sampler (real-time) waited for them, and those reads' skipped
     * deadlines were gaps in the samples that no real meter would leave. */
    struct sched_param sp = {.sched_priority = sched_get_priority_min(SCHED_FIFO) + 10};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); /* refused: normal priority */
    while (!atomic_load(&e->stop)) {
        struct pollfd p = {.fd = e->listen_fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(e->listen_fd, NULL, NULL);
        if (fd < 0)
            continue;
        pthread_mutex_lock(&e->lock);
        e->connections++;
        pthread_mutex_unlock(&e->lock);
        serve(e, fd);
        close(fd);
    }
    return NULL;
}

struct meter_emu *meter_emu_start(const struct meter_emu_config *cfg)
{
    struct meter_emu *e = calloc(1, sizeof *e);
    cr_assert(e);
    e->cfg = *cfg;
    snprintf(e->range[0], sizeof e->range[0], "300");
    snprintf(e->range[1], sizeof e->range[1], "Auto");
    pthread_mutex_init(&e->lock, NULL);
    e->log = calloc(1, 1);
    e->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert(e->listen_fd >= 0 && bind(e->listen_fd, (struct sockaddr *)&a, sizeof a) == 0 &&
              listen(e->listen_fd, 4) == 0 &&
              getsockname(e->listen_fd, (struct sockaddr *)&a, &len) == 0);
    e->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&e->thread, NULL, run, e), 0);
    return e;
}

int meter_emu_port(const struct meter_emu *e)
{
    return e->port;
}

char *meter_emu_log(struct meter_emu *e)
{
    pthread_mutex_lock(&e->lock);
    char *copy = strdup(e->log);
    pthread_mutex_unlock(&e->lock);
    return copy;
}

void meter_emu_set(struct meter_emu *e, double volts, double amps)
{
    pthread_mutex_lock(&e->lock);
    e->cfg.volts = volts, e->cfg.amps = amps;
    pthread_mutex_unlock(&e->lock);
}

unsigned meter_emu_connections(struct meter_emu *e)
{
    pthread_mutex_lock(&e->lock);
    unsigned n = e->connections;
    pthread_mutex_unlock(&e->lock);
    return n;
}

void meter_emu_stop(struct meter_emu *e)
{
    atomic_store(&e->stop, 1);
    pthread_join(e->thread, NULL);
    close(e->listen_fd);
    pthread_mutex_destroy(&e->lock);
    free(e->log);
    free(e);
}
