/*
 * ptd_load.c - what the PTDaemon emulator's analyzer reads
 * (eeb_ptd_emulator.h): a constant, a recorded trace, a shell command's
 * output or this machine's CPU, as watts at a time since the emulator
 * started.
 *
 * A trace holds each reading's watts until the next one (a meter's
 * reading is its interval's mean, not a corner of a line), so a file of
 * "seconds watts" lines is a schedule of the load as written.
 *
 * Sections: traces; commands; the CPU; the load.
 */
#include "eeb_ptd_emulator.h"
#include "power_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LOAD_BYTES  (64u << 20)
#define COMMAND_OUT_MAX 4096 /* of a command's output, bytes read for its number */

extern char **environ;

enum kind { CONSTANT, TRACE, COMMAND, CPU };

struct eeb_ptd_load {
    enum kind kind;
    double watts;                   /* CONSTANT */
    struct power_trace trace;       /* TRACE: times from 0 */
    int loop;                       /* TRACE: start again past the end */
    double period;                  /* TRACE: its length when looped */
    size_t at;                      /* TRACE: the reading last found */
    char *command;                  /* COMMAND */
    atomic_int interrupted;         /* eeb_ptd_load_interrupt: no more readings */
    double idle_w, busy_w;          /* CPU */
    unsigned long long busy, total; /* CPU: /proc/stat at the reading before */
    char describe[320];
};

/* ---- traces ---- */

/* 1 if line starts with a number: the "seconds watts" layout's data. */
static int starts_with_number(const char *s)
{
    char *end;
    strtod(s, &end);
    return end != s;
}

/* "seconds watts" lines, or the first data line says it is a CSV. */
static int read_plain(struct power_trace *t, char *text, char *err, size_t errlen)
{
    char *cursor = text, *s;
    for (int line = 1; (s = power_trace_line(&cursor)); line++) {
        char *hash = strchr(s, '#');
        if (hash)
            *hash = '\0';
        s += strspn(s, " \t");
        if (!*s)
            continue;
        char *end, *end2 = NULL;
        errno = 0;
        double sec = strtod(s, &end);
        double w = end != s ? strtod(end, &end2) : 0;
        if (end == s || end2 == end || errno || end2[strspn(end2, " \t")] ||
            !(end[0] == ' ' || end[0] == '\t'))
            return eeb_errf(err, errlen, EEB_EFORMAT,
                            "%s:%d: expected 'seconds watts' (two numbers), not '%.60s'", t->path,
                            line, s);
        if (!isfinite(sec) || sec < 0)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: seconds %g (a time >= 0)", t->path,
                            line, sec);
        if (!isfinite(w) || w < 0)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s:%d: watts %g (power must be >= 0)",
                            t->path, line, w);
        struct power_trace_point p = {
            .t = sec, .watts = w, .volts = NAN, .amps = NAN, .valid = 1, .line = line};
        char quoted[32];
        snprintf(quoted, sizeof quoted, "%g", sec);
        int rc = power_trace_add(t, &p, quoted, err, errlen);
        if (rc != EEB_OK)
            return rc;
    }
    return EEB_OK;
}

/* The layout of text: 1 if its first data line is "seconds watts"
 * (numbers apart by blanks, no ',' ';' or tab between them). */
static int plain_layout(const char *text)
{
    for (const char *s = text; s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
        s += strspn(s, " \t\r");
        if (*s == '\n' || *s == '#' || !*s)
            continue;
        size_t n = strcspn(s, "\r\n#");
        return starts_with_number(s) && !memchr(s, ',', n) && !memchr(s, ';', n) &&
               !memchr(s, '\t', n);
    }
    return 1;
}

static int load_trace(struct eeb_ptd_load *l, const char *path, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len;
    int rc = eeb_read_file(path, MAX_LOAD_BYTES, &text, &len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    l->trace.path = path;
    struct power_trace_options none = {{0}};
    if (plain_layout(text))
        rc = read_plain(&l->trace, text, err, errlen);
    else if (power_trace_is_ptd_log(text))
        rc = power_trace_read_ptd_log(&l->trace, text, &none, err, errlen);
    else
        rc = power_trace_read_csv(&l->trace, text, &none, err, errlen);
    free(text);
    if (rc == EEB_OK && !l->trace.n)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: no readings ('seconds watts' lines)", path);
    if (rc != EEB_OK)
        return rc;
    size_t n = l->trace.n;
    const struct power_trace_point *p = l->trace.p;
    double step = n > 1 ? p[n - 1].t - p[n - 2].t : 1;
    l->period = p[n - 1].t + step;
    snprintf(l->describe, sizeof l->describe, "trace %.200s (%zu readings over %g s%s)", path, n,
             l->period, l->loop ? ", looped" : "");
    l->trace.path = NULL; /* the caller's string */
    return EEB_OK;
}

/* The trace's reading in force at t. */
static int trace_watts(struct eeb_ptd_load *l, double t, double *watts, char *err, size_t errlen)
{
    const struct power_trace *tr = &l->trace;
    if (l->loop && t >= l->period)
        t = fmod(t, l->period);
    size_t i = l->at < tr->n && tr->p[l->at].t <= t ? l->at : 0;
    while (i + 1 < tr->n && tr->p[i + 1].t <= t)
        i++;
    l->at = i;
    if (!tr->p[i].valid)
        return eeb_errf(err, errlen, EEB_EDEVICE,
                        "the trace has no valid reading at %.3f s (its "
                        "line %d)",
                        t, tr->p[i].line);
    *watts = tr->p[i].watts;
    return EEB_OK;
}

/* ---- commands ---- */

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The first number in text, or -1 if it has none. */
static int first_number(const char *text, double *out)
{
    for (const char *s = text; *s; s++) {
        if (!strchr("0123456789+-.", *s))
            continue;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end != s && !errno && isfinite(v)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

/* Runs the command with its output on a pipe, read (COMMAND_OUT_MAX kept,
 * the rest drained) until it ends or the time is up. */
static int command_watts(struct eeb_ptd_load *l, double *watts, char *err, size_t errlen)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "load command: pipe: %s", strerror(errno));
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0); /* its own group: a timeout ends all it started */
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE); /* an eeb that ignores it: the command should not */
    sigaddset(&dfl, SIGINT);
    sigaddset(&dfl, SIGTERM);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    char *argv[] = {"sh", "-c", l->command, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return eeb_errf(err, errlen, EEB_EIO, "load command: /bin/sh: %s", strerror(rc));
    }
    char out[COMMAND_OUT_MAX + 1] = "";
    size_t have = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int late = 0, status = 0;
    for (;;) {
        double left = EEB_PTD_LOAD_COMMAND_S - seconds_since(&t0);
        struct pollfd p = {.fd = fds[0], .events = POLLIN};
        /* a tenth of a second at a time: an interrupt is seen that soon */
        int ready = left > 0 ? poll(&p, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0 && left > 0.1 && !atomic_load(&l->interrupted))
            continue;
        if (ready <= 0) {
            late = 1;
            break;
        }
        char sink[512];
        char *into = have < COMMAND_OUT_MAX ? out + have : sink;
        size_t room = have < COMMAND_OUT_MAX ? COMMAND_OUT_MAX - have : sizeof sink;
        ssize_t r = read(fds[0], into, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (into != sink)
            have += (size_t)r;
    }
    close(fds[0]);
    out[have] = '\0';
    /* output ended: the command has too, or is ended when its time is up */
    if (late)
        kill(-pid, SIGKILL);
    for (pid_t w; (w = waitpid(pid, &status, late ? 0 : WNOHANG)) != pid;) {
        if (w < 0 && errno != EINTR)
            return eeb_errf(err, errlen, EEB_EIO, "load command: waitpid: %s", strerror(errno));
        if (w < 0)
            continue;
        if (seconds_since(&t0) >= EEB_PTD_LOAD_COMMAND_S) {
            late = 1;
            kill(-pid, SIGKILL);
            continue;
        }
        struct timespec tick = {0, 5000000};
        nanosleep(&tick, NULL);
    }
    if (late && atomic_load(&l->interrupted)) {
        kill(-pid, SIGKILL);
        return eeb_errf(err, errlen, EEB_EDEVICE, "load command ended: the emulator stops");
    }
    if (late) {
        kill(-pid, SIGKILL); /* what it left behind */
        return eeb_errf(err, errlen, EEB_ETIMEOUT, "load command ran longer than %d s",
                        EEB_PTD_LOAD_COMMAND_S);
    }
    if (WIFSIGNALED(status))
        return eeb_errf(err, errlen, EEB_EDEVICE, "load command killed by signal %d",
                        WTERMSIG(status));
    if (WEXITSTATUS(status) != 0)
        return eeb_errf(err, errlen, EEB_EDEVICE, "load command exited with status %d",
                        WEXITSTATUS(status));
    double w;
    if (first_number(out, &w) != 0) {
        out[strcspn(out, "\r\n")] = '\0';
        return eeb_errf(err, errlen, EEB_EFORMAT, "load command printed no number ('%.60s')", out);
    }
    if (w < 0)
        return eeb_errf(err, errlen, EEB_EFORMAT, "load command printed %g (watts must be >= 0)",
                        w);
    *watts = w;
    return EEB_OK;
}

/* ---- the CPU ---- */

/* All CPUs' busy and total jiffies from /proc/stat's first line. */
static int cpu_times(unsigned long long *busy, unsigned long long *total, char *err, size_t errlen)
{
    FILE *f = fopen("/proc/stat", "re");
    char line[512];
    unsigned long long v[10] = {0};
    int n = 0;
    if (f && fgets(line, sizeof line, f))
        n = sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    if (f)
        fclose(f);
    if (n < 4)
        return eeb_errf(err, errlen, EEB_EIO, "/proc/stat: no 'cpu' line to read the load from");
    /* guest times are inside user and nice already */
    unsigned long long all = 0;
    for (int i = 0; i < 8 && i < n; i++)
        all += v[i];
    *total = all;
    *busy = all - v[3] - (n > 4 ? v[4] : 0); /* idle and iowait */
    return EEB_OK;
}

static int cpu_watts(struct eeb_ptd_load *l, double *watts, char *err, size_t errlen)
{
    unsigned long long busy, total;
    int rc = cpu_times(&busy, &total, err, errlen);
    if (rc != EEB_OK)
        return rc;
    double f = total > l->total ? (double)(busy - l->busy) / (double)(total - l->total) : 0;
    l->busy = busy, l->total = total;
    f = f < 0 ? 0 : f > 1 ? 1 : f;
    *watts = l->idle_w + f * (l->busy_w - l->idle_w);
    return EEB_OK;
}

/* ---- the load ---- */

static struct eeb_ptd_load *new_load(enum kind k, char *err, size_t errlen)
{
    struct eeb_ptd_load *l = calloc(1, sizeof *l);
    if (!l)
        eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    else
        l->kind = k;
    return l;
}

int eeb_ptd_load_constant(double watts, struct eeb_ptd_load **out, char *err, size_t errlen)
{
    if (!isfinite(watts) || watts < 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "a load of %g W (watts >= 0)", watts);
    struct eeb_ptd_load *l = new_load(CONSTANT, err, errlen);
    if (!l)
        return EEB_ENOMEM;
    l->watts = watts;
    snprintf(l->describe, sizeof l->describe, "constant %g W", watts);
    *out = l;
    return EEB_OK;
}

int eeb_ptd_load_file(const char *path, int loop, struct eeb_ptd_load **out, char *err,
                      size_t errlen)
{
    struct eeb_ptd_load *l = new_load(TRACE, err, errlen);
    if (!l)
        return EEB_ENOMEM;
    l->loop = loop;
    int rc = load_trace(l, path, err, errlen);
    if (rc != EEB_OK) {
        eeb_ptd_load_free(l);
        return rc;
    }
    *out = l;
    return EEB_OK;
}

int eeb_ptd_load_command(const char *command, struct eeb_ptd_load **out, char *err, size_t errlen)
{
    if (!command || !command[strspn(command, " \t")])
        return eeb_errf(err, errlen, EEB_EINVAL, "an empty load command");
    struct eeb_ptd_load *l = new_load(COMMAND, err, errlen);
    if (!l || !(l->command = strdup(command))) {
        free(l);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    snprintf(l->describe, sizeof l->describe, "command '%.200s'", command);
    *out = l;
    return EEB_OK;
}

int eeb_ptd_load_cpu(const char *spec, struct eeb_ptd_load **out, char *err, size_t errlen)
{
    double idle, busy;
    int n = 0;
    if (sscanf(spec, "%lf,%lf%n", &idle, &busy, &n) != 2 || spec[n] || !isfinite(idle) ||
        !isfinite(busy) || idle < 0 || busy < 0)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "cpu:%s: expected cpu:IDLE_W,BUSY_W (two watts >= 0)", spec);
    struct eeb_ptd_load *l = new_load(CPU, err, errlen);
    if (!l)
        return EEB_ENOMEM;
    l->idle_w = idle, l->busy_w = busy;
    int rc = cpu_times(&l->busy, &l->total, err, errlen);
    if (rc != EEB_OK) {
        free(l);
        return rc;
    }
    snprintf(l->describe, sizeof l->describe, "this machine's CPU, %g W idle to %g W busy", idle,
             busy);
    *out = l;
    return EEB_OK;
}

void eeb_ptd_load_interrupt(struct eeb_ptd_load *l)
{
    atomic_store(&l->interrupted, 1);
}

int eeb_ptd_load_watts(struct eeb_ptd_load *l, double t_s, double *watts, char *err, size_t errlen)
{
    if (atomic_load(&l->interrupted))
        return eeb_errf(err, errlen, EEB_EDEVICE, "the load was interrupted");
    switch (l->kind) {
    case CONSTANT: *watts = l->watts; return EEB_OK;
    case TRACE: return trace_watts(l, t_s, watts, err, errlen);
    case COMMAND: return command_watts(l, watts, err, errlen);
    case CPU: return cpu_watts(l, watts, err, errlen);
    }
    return eeb_errf(err, errlen, EEB_EINVAL, "no load");
}

const char *eeb_ptd_load_describe(const struct eeb_ptd_load *l)
{
    return l->describe;
}

void eeb_ptd_load_free(struct eeb_ptd_load *l)
{
    if (!l)
        return;
    free(l->trace.p);
    free(l->command);
    free(l);
}
