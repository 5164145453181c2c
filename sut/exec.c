/*
 * exec.c - a team's system under test as a program (`eeb run --backend
 * exec:PROGRAM ARGS...`): started with pipes on its stdin and stdout, and
 * every call of sut/eeb_sut.h sent to it as a frame of the exec protocol
 * (sut/eeb_sut_exec.h; docs/sut.md, "Out of process") and answered by one
 * frame within a deadline.
 *
 *   the program   found as execvp finds it and started (posix_spawn: argv
 *                 split on spaces, no shell, its own process group so a
 *                 Ctrl-C is eeb's to handle, eeb's other descriptors
 *                 closed), waited for, killed
 *   its stderr    a pipe drained by a thread: passed on to eeb's stderr,
 *                 its last 2 KiB kept for the message of a program that
 *                 ends before answering
 *   the pipes     a request written and a reply read against the call's
 *                 deadline (poll with the time left); SIGPIPE blocked
 *                 around the writes, so a program that has gone is an
 *                 EPIPE, not the end of eeb
 *   a call        the request out, the reply's header and sizes checked
 *   the table     each call of the interface encoded, its reply decoded
 *                 and checked against what was asked; the files a call
 *                 names (the model, the xclbin) travel as their bytes, so
 *                 the program needs no view of eeb's paths
 *
 * What can go wrong, and what the call returns (every message names the
 * SUT by its command, and the call):
 *
 *   the program refuses (an error reply)   EEB_EDEVICE, its reason; it stays
 *   no answer within the deadline           EEB_ETIMEOUT; killed (SIGKILL)
 *   it ends (EOF, EPIPE)                    EEB_EDEVICE, how: "exited 3",
 *                                           "killed by signal 11 (...)", and
 *                                           its stderr's last lines
 *   a reply that is not the protocol's      EEB_EFORMAT, naming the field; killed
 *
 * Once the program is gone every later call fails saying why it went.
 */
#include "sut/eeb_sut_host.h"
#include "sut/eeb_sut_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define END_WAIT_S    1.0 /* a program that closed its stdout, or was asked to close: to exit */
#define CLOSE_REPLY_S 2.0 /* close's answer, at most (less if the deadline is shorter) */
#define MAX_ARGS      256
#define MAX_NAME      255       /* the SUT's name, from open's reply */
#define PIPE_MAX      (1 << 20) /* Linux's default most a pipe may hold (fs.pipe-max-size) */
#define TAIL_BYTES    2048      /* of the program's stderr, the last kept for a message */
#define TAIL_LINES    10        /*   and of those, the last lines at most */
#define TAIL_SETTLE_S 0.5       /* a program that ended: for the rest of its stderr */

/* The program's stderr: a pipe drained by a thread, which passes each
 * byte on to eeb's own stderr (where the program's went before) and keeps
 * the last TAIL_BYTES, so that a program that ends before answering is
 * reported with what it said (a Python traceback's last line). */
struct tail {
    int fd;      /* the pipe's read end; -1 once the thread has ended */
    int stop[2]; /* written to end the thread (a program's child may keep the pipe open) */
    pthread_t thread;
    int running;          /* thread is to be joined */
    pthread_mutex_t lock; /* over what follows */
    int eof;              /* the pipe's end came */
    size_t len;
    char buf[TAIL_BYTES];
};

struct exec {
    struct eeb_sut_ops ops; /* first: this program's table, optional slots as open said */
    char *command;          /* as given, naming the SUT in every message */
    char name[MAX_NAME + 1];
    pid_t pid;    /* 0 once reaped */
    int to, from; /* its stdin and its stdout (eeb's ends); -1 once closed */
    int64_t deadline_ns;
    uint32_t id; /* the last request's */
    struct eeb_sut_setup setup;
    size_t item_bytes;
    char *gone;              /* why the program is gone ("train: ..."), once it is */
    uint8_t *reply, *fields; /* a reply's payload; a request's labels or boxes */
    size_t reply_cap, fields_cap;
    struct tail err; /* its stderr */
};

#if defined(__GNUC__)
#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define PRINTF_LIKE(fmt, args)
#endif

/* "SUT 'COMMAND': CALL: why" into err; status. */
PRINTF_LIKE(6, 7)
static int fail(const struct exec *x, unsigned call, int status, char *err, size_t errlen,
                const char *fmt, ...)
{
    char why[8192]; /* room for the program's stderr's tail */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return eeb_errf(err, errlen, status, "SUT '%s': %s: %s", x->command,
                    eeb_sut_exec_call_name(call), why);
}

/* A program's bytes, quoted for a message: printable ASCII as is, the rest
 * as \xNN, at most 24 of them. */
static void quote(const uint8_t *p, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 24 && o + 5 < outlen; i++)
        o += (size_t)snprintf(out + o, outlen - o, p[i] >= 0x20 && p[i] < 0x7f ? "%c" : "\\x%02x",
                              p[i]);
    if (n > 24 && o + 4 < outlen)
        o += (size_t)snprintf(out + o, outlen - o, "...");
    out[o < outlen ? o : outlen - 1] = '\0';
}

/* ---- the program ---- */

static void describe_status(int status, char *out, size_t n)
{
    if (WIFEXITED(status))
        snprintf(out, n, "exited %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(out, n, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, n, "ended with wait status %#x", (unsigned)status);
}

/* Waits up to seconds for the program to end: 1 with its wait status, 0
 * if it still runs. */
static int wait_end(struct exec *x, double seconds, int *status)
{
    int64_t until = eeb_mono_ns() + (int64_t)(seconds * 1e9);
    for (;;) {
        pid_t r = waitpid(x->pid, status, WNOHANG);
        if (r == x->pid || (r < 0 && errno == ECHILD)) {
            x->pid = 0;
            return 1;
        }
        if (eeb_mono_ns() >= until)
            return 0;
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
}

/* SIGKILL to the program's process group (it and whatever it started),
 * then the program reaped: no zombie is left. */
static void kill_reap(struct exec *x)
{
    if (x->pid <= 0)
        return;
    kill(-x->pid, SIGKILL);
    kill(x->pid, SIGKILL); /* in case it left its group */
    while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    x->pid = 0;
}

static void close_pipes(struct exec *x)
{
    if (x->to >= 0)
        close(x->to);
    if (x->from >= 0)
        close(x->from);
    x->to = x->from = -1;
}

/* ---- its stderr ---- */

static void *drain(void *arg)
{
    struct tail *t = arg;
    char chunk[4096];
    for (;;) {
        struct pollfd p[2] = {{t->fd, POLLIN, 0}, {t->stop[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        ssize_t n = read(t->fd, chunk, sizeof chunk);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            break;
        for (ssize_t o = 0, w; o < n; o += w) /* on to eeb's stderr, as before */
            if ((w = write(2, chunk + o, (size_t)(n - o))) <= 0)
                break;
        pthread_mutex_lock(&t->lock);
        size_t keep = (size_t)n < TAIL_BYTES ? (size_t)n : TAIL_BYTES;
        size_t old = t->len + keep > TAIL_BYTES ? TAIL_BYTES - keep : t->len;
        memmove(t->buf, t->buf + t->len - old, old);
        memcpy(t->buf + old, chunk + (size_t)n - keep, keep);
        t->len = old + keep;
        pthread_mutex_unlock(&t->lock);
    }
    pthread_mutex_lock(&t->lock);
    t->eof = 1;
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* The thread started on fd (the pipe's read end, which it then owns);
 * 0, or -1 with fd closed and nothing kept. */
static int tail_start(struct tail *t, int fd)
{
    if (pipe2(t->stop, O_CLOEXEC) != 0) {
        close(fd);
        t->stop[0] = t->stop[1] = -1;
        return -1;
    }
    t->fd = fd;
    if (pthread_create(&t->thread, NULL, drain, t) != 0) {
        close(fd), close(t->stop[0]), close(t->stop[1]);
        t->fd = t->stop[0] = t->stop[1] = -1;
        return -1;
    }
    t->running = 1;
    return 0;
}

/* Waits up to seconds for the rest of what an ended program wrote (its
 * stderr's end). */
static void tail_settle(struct tail *t, double seconds)
{
    int64_t until = eeb_mono_ns() + (int64_t)(seconds * 1e9);
    while (t->running && eeb_mono_ns() < until) {
        pthread_mutex_lock(&t->lock);
        int eof = t->eof;
        pthread_mutex_unlock(&t->lock);
        if (eof)
            return;
        struct timespec nap = {0, 2000000}; /* 2 ms */
        nanosleep(&nap, NULL);
    }
}

/* The thread ended and joined, the pipes closed. */
static void tail_end(struct tail *t)
{
    if (!t->running)
        return;
    while (write(t->stop[1], "x", 1) < 0 && errno == EINTR)
        ;
    pthread_join(t->thread, NULL);
    close(t->fd), close(t->stop[0]), close(t->stop[1]);
    t->fd = t->stop[0] = t->stop[1] = -1;
    t->running = 0;
}

/* The last lines the program wrote to its stderr (TAIL_LINES at most),
 * joined by " | ", each shown printable (controls and bytes that are not
 * UTF-8 as '?'), at most max bytes: the earliest lines dropped first, so
 * the last (an exception's message) stays.  "" if it wrote nothing. */
static void tail_text(struct tail *t, char *out, size_t max)
{
    char buf[TAIL_BYTES + 1], shown[EEB_CONTROL_SHOWN];
    size_t n = 0;
    out[0] = '\0';
    if (t->running || t->eof) {
        pthread_mutex_lock(&t->lock);
        n = t->len;
        memcpy(buf, t->buf, n);
        pthread_mutex_unlock(&t->lock);
    }
    while (n > 0 &&
           (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    /* the last TAIL_LINES lines, blank ones not counted */
    size_t start = n;
    for (int lines = 0; start > 0; start--)
        if (buf[start - 1] == '\n' && start < n && buf[start] != '\n' && ++lines == TAIL_LINES)
            break;
    char joined[3 * TAIL_BYTES + 1];
    size_t o = 0;
    for (size_t i = start; i < n && o + 4 < sizeof joined;) {
        const char *c = buf + i;
        size_t len = eeb_text_control(c, shown);
        if (*c == '\n') {
            while (o > 0 && joined[o - 1] == ' ')
                o--;
            if (o > 0 && i + 1 < n && buf[i + 1] != '\n')
                memcpy(joined + o, " | ", 3), o += 3;
            i++;
        } else if (*c == '\r' || *c == '\t' || len) {
            joined[o++] = *c == '\t' ? ' ' : '?';
            i += len ? len : 1;
        } else {
            joined[o++] = *c;
            i++;
        }
    }
    joined[o] = '\0';
    /* bytes that are not UTF-8: shown as '?', as the record keeps text */
    for (size_t i = 0; i < o;) {
        unsigned char u = (unsigned char)joined[i];
        size_t len = u < 0x80                ? 1
                     : u >= 0xc2 && u < 0xe0 ? 2
                     : u >= 0xe0 && u < 0xf0 ? 3
                     : u >= 0xf0 && u < 0xf5 ? 4
                                             : 0;
        for (size_t k = 1; k < len; k++)
            if (i + k >= o || ((unsigned char)joined[i + k] & 0xc0) != 0x80)
                len = 0;
        if (len == 0)
            joined[i] = '?', len = 1;
        i += len;
    }
    if (max < 4)
        return;
    if (o <= max) {
        memcpy(out, joined, o + 1);
        return;
    }
    const char *from = joined + o - (max - 3); /* the end kept, "..." before it */
    while (((unsigned char)*from & 0xc0) == 0x80)
        from++;
    snprintf(out, max + 1, "...%s", from);
}

/* The program is gone, killed if it was not: the message, kept for every
 * later call. */
PRINTF_LIKE(6, 7)
static int gone(struct exec *x, unsigned call, int status, char *err, size_t errlen,
                const char *fmt, ...)
{
    char why[8192]; /* room for the program's stderr's tail */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kill_reap(x);
    close_pipes(x);
    tail_settle(&x->err, 0.1); /* the rest of it passed on */
    tail_end(&x->err);
    if (!x->gone) {
        size_t n = strlen(why) + 32;
        if ((x->gone = malloc(n)))
            snprintf(x->gone, n, "%s: %s", eeb_sut_exec_call_name(call), why);
    }
    return fail(x, call, status, err, errlen, "%s", why);
}

/* The pipe's end came (EOF, EPIPE) before the answer: how the program
 * ended, or killed if it keeps running without its stdout. */
static int ended(struct exec *x, unsigned call, char *err, size_t errlen)
{
    int status = 0;
    char how[160];
    if (!wait_end(x, END_WAIT_S, &status))
        return gone(x, call, EEB_EDEVICE, err, errlen,
                    "the program closed its stdout without answering (killed)");
    describe_status(status, how, sizeof how);
    tail_settle(&x->err, TAIL_SETTLE_S);
    /* what it said last, as much as err holds after the rest of the message */
    char said[3 * TAIL_BYTES + 1];
    size_t used = strlen(x->command) + strlen(how) + 80;
    size_t room = errlen > used + 16 ? errlen - used : 0;
    tail_text(&x->err, said, room < sizeof said ? room : sizeof said - 1);
    if (!said[0])
        return gone(x, call, EEB_EDEVICE, err, errlen, "the program %s before answering", how);
    return gone(x, call, EEB_EDEVICE, err, errlen,
                "the program %s before answering; its stderr ended: %s", how, said);
}

static int protocol(struct exec *x, unsigned call, char *err, size_t errlen, const char *what)
{
    return gone(x, call, EEB_EFORMAT, err, errlen, "protocol error: %s (killed)", what);
}

/* A descriptor at 3 or above (so that dup2 onto 0 or 1 in the child is
 * never dup2 onto itself), close-on-exec. */
static int above_stdio(int fd)
{
    if (fd > 2)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return moved;
}

/* The command split on spaces (no shell, no quoting) into argv, pointing
 * into words (a copy the caller frees). */
static int split(const char *command, char **words, char *argv[MAX_ARGS + 1])
{
    int n = 0;
    *words = strdup(command);
    if (!*words)
        return -1;
    char *save = NULL;
    for (char *w = strtok_r(*words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (n == MAX_ARGS)
            return -1;
        argv[n++] = w;
    }
    argv[n] = NULL;
    return n;
}

/* The program's file, as execvp would find it: argv0 itself if it has a
 * '/', else the first executable file of that name along PATH.  0, or an
 * errno (ENOENT: none).  Looked for before the spawn, because a failed
 * exec is not reported by every spawn (valgrind's is an exit 127). */
static int find_program(const char *argv0, char *path, size_t n)
{
    struct stat st;
    if (strchr(argv0, '/')) {
        snprintf(path, n, "%s", argv0);
        if (stat(path, &st) != 0)
            return errno;
        return S_ISDIR(st.st_mode) ? EISDIR : access(path, X_OK) == 0 ? 0 : errno;
    }
    const char *dirs = getenv("PATH"), *colon;
    int e = ENOENT;
    for (const char *dir = dirs && *dirs ? dirs : "/bin:/usr/bin";; dir = colon + 1) {
        colon = strchr(dir, ':');
        int len = colon ? (int)(colon - dir) : (int)strlen(dir);
        snprintf(path, n, "%.*s%s%s", len, dir, len ? "/" : "", argv0); /* "": here */
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (access(path, X_OK) == 0)
                return 0;
            e = EACCES;
        }
        if (!colon)
            return e;
    }
}

/* Why argv0 cannot be started, as spawn says it; "" if it can. */
static int unstartable(const char *argv0, char *path, size_t n, char *err, size_t errlen)
{
    int e = find_program(argv0, path, n);
    return e ? eeb_errf(err, errlen, EEB_EIO, "cannot start '%s': %s%s", argv0, strerror(e),
                        strchr(argv0, '/') || e != ENOENT ? "" : " (not in PATH)")
             : EEB_OK;
}

int eeb_sut_exec_check(const char *command, char *err, size_t errlen)
{
    char *words = NULL, *argv[MAX_ARGS + 1], path[4096], why[512];
    int argc = split(command, &words, argv), rc = EEB_OK;
    if (argc <= 0)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "SUT '%s': no program to start (exec:PROGRAM ARGS...)", command);
    else if (unstartable(argv[0], path, sizeof path, why, sizeof why))
        rc = eeb_errf(err, errlen, EEB_EIO, "SUT '%s': open: %s", command, why);
    free(words);
    return rc;
}

static int spawn(struct exec *x, char *err, size_t errlen)
{
    char *words = NULL, *argv[MAX_ARGS + 1];
    int argc = split(x->command, &words, argv);
    if (argc <= 0) {
        free(words);
        if (argc == 0)
            return fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                        "no program to start (exec:PROGRAM ARGS...)");
        return fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                    "cannot split the command (at most %d words)", MAX_ARGS);
    }
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, rc = EEB_OK, e;
    char path[4096];
    char why[512];
    if (unstartable(argv[0], path, sizeof path, why, sizeof why)) {
        rc = fail(x, EEB_SUT_EXEC_OPEN, EEB_EIO, err, errlen, "%s", why);
        goto out;
    }
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
        rc = fail(x, EEB_SUT_EXEC_OPEN, EEB_EIO, err, errlen, "pipe: %s", strerror(errno));
        goto out;
    }
    for (int i = 0; i < 2; i++)
        in[i] = above_stdio(in[i]), out[i] = above_stdio(out[i]), errp[i] = above_stdio(errp[i]);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGPIPE);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* eeb's database, sockets, ... */
#endif
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &defaults);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                      POSIX_SPAWN_SETPGROUP);
    e = posix_spawn(&x->pid, path, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e) {
        x->pid = 0;
        rc = fail(x, EEB_SUT_EXEC_OPEN, EEB_EIO, err, errlen, "cannot start '%s': %s", argv[0],
                  strerror(e));
        goto out;
    }
    x->to = in[1], x->from = out[0];
    in[1] = out[0] = -1;
    close(errp[1]);
    errp[1] = -1;
    tail_start(&x->err, errp[0]); /* if it cannot, the program's stderr is lost, not eeb's run */
    errp[0] = -1;
    /* a batch in one write, not 64 KiB at a time (each a switch to the
     * program and back): as much of it as the system lets a pipe hold */
    size_t want = 64 + (size_t)x->setup.batch_max * (x->item_bytes + 4);
    fcntl(x->to, F_SETPIPE_SZ, (int)(want < PIPE_MAX ? want : PIPE_MAX));
    fcntl(x->to, F_SETFL, O_NONBLOCK);
    fcntl(x->from, F_SETFL, O_NONBLOCK);
out:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0)
            close(in[i]);
        if (out[i] >= 0)
            close(out[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    free(words);
    return rc;
}

/* ---- the pipes ---- */

enum io { IO_OK, IO_TIMEOUT, IO_END, IO_EARLY, IO_ERROR };

/* Milliseconds left before until, rounded up; 0 once it has passed. */
static int ms_left(int64_t until)
{
    int64_t left = until - eeb_mono_ns();
    return left <= 0 ? 0 : left > 3600000000000ll ? 3600000 : (int)((left + 999999) / 1000000);
}

/* Writes the iovecs whole before until.  A reply (or an end) appearing
 * on the program's stdout before the request is all written is IO_EARLY
 * (IO_END): it answered without reading.  SIGPIPE is blocked for the
 * writes and a SIGPIPE they raise taken back, so a program gone is EPIPE. */
static enum io send_all(struct exec *x, struct iovec *iov, int niov, int64_t until)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    enum io r = IO_OK;
    while (niov > 0) {
        ssize_t w = writev(x->to, iov, niov);
        if (w >= 0) {
            while (niov > 0 && (size_t)w >= iov->iov_len)
                w -= (ssize_t)iov->iov_len, iov++, niov--;
            if (niov > 0)
                iov->iov_base = (uint8_t *)iov->iov_base + w, iov->iov_len -= (size_t)w;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EPIPE) {
            r = IO_END;
            break;
        }
        if (errno != EAGAIN) {
            r = IO_ERROR;
            break;
        }
        struct pollfd p[2] = {{x->to, POLLOUT, 0}, {x->from, POLLIN, 0}};
        int ready = poll(p, 2, ms_left(until));
        if (ready == 0) {
            r = IO_TIMEOUT;
            break;
        }
        if (p[1].revents & POLLIN) {
            r = IO_EARLY;
            break;
        }
        if (p[1].revents & (POLLHUP | POLLERR)) {
            r = IO_END;
            break;
        }
    }
    int e = errno;
    if (!was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE))
            sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return r;
}

/* Reads n bytes before until; *got says how many came.  With first, the
 * reply's first bytes: if the program wrote them with some of the request
 * still unread in its stdin, IO_EARLY (*unread says how much). */
static enum io recv_all(struct exec *x, uint8_t *buf, size_t n, int64_t until, int first,
                        size_t *got, int *unread)
{
    *got = 0;
    while (*got < n) {
        ssize_t r = read(x->from, buf + *got, n - *got);
        if (r > 0) {
            if (first && *got == 0 && ioctl(x->to, FIONREAD, unread) == 0 && *unread > 0) {
                *got = (size_t)r;
                return IO_EARLY;
            }
            *got += (size_t)r;
            continue;
        }
        if (r == 0)
            return IO_END;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return IO_ERROR;
        struct pollfd p = {x->from, POLLIN, 0};
        if (poll(&p, 1, ms_left(until)) == 0)
            return IO_TIMEOUT;
    }
    return IO_OK;
}

/* ---- a call ---- */

static int timed_out(struct exec *x, unsigned call, char *err, size_t errlen)
{
    return gone(x, call, EEB_ETIMEOUT, err, errlen, "no answer within %g s (killed)",
                (double)x->deadline_ns / 1e9);
}

/* The program wrote before it read the request: the first request's is
 * output before input. */
static int early(struct exec *x, unsigned call, const uint8_t *bytes, size_t n, int unread,
                 char *err, size_t errlen)
{
    char what[512], text[128];
    quote(bytes, n, text, sizeof text);
    if (call == EEB_SUT_EXEC_OPEN && x->id == 1)
        snprintf(what, sizeof what,
                 "output before input: the program wrote '%s' to its stdout before reading the "
                 "first request (stdout carries the protocol alone; write messages to stderr)",
                 text);
    else if (unread >= 0)
        snprintf(what, sizeof what,
                 "the program answered ('%s') with %d bytes of the request unread (read the whole "
                 "request first)",
                 text, unread);
    else
        snprintf(what, sizeof what,
                 "the program answered ('%s') before the request was all written (read the whole "
                 "request first)",
                 text);
    return protocol(x, call, err, errlen, what);
}

static int io_failed(struct exec *x, unsigned call, enum io r, const char *doing, char *err,
                     size_t errlen)
{
    if (r == IO_TIMEOUT)
        return timed_out(x, call, err, errlen);
    if (r == IO_END)
        return ended(x, call, err, errlen);
    return gone(x, call, EEB_EIO, err, errlen, "%s: %s (killed)", doing, strerror(errno));
}

/* The reply's header against the request's; EEB_OK and its length. */
static int check_header(struct exec *x, unsigned call, const uint8_t *h, size_t max_reply,
                        uint32_t *length, char *err, size_t errlen)
{
    char what[256], text[128];
    if (memcmp(h, EEB_SUT_EXEC_MAGIC, 4) != 0) {
        quote(h, EEB_SUT_EXEC_HEADER, text, sizeof text);
        snprintf(what, sizeof what,
                 "the reply is not a frame: it starts '%s', not the magic 'EEBS'%s", text,
                 x->id == 1 ? " (is the program writing to stdout? write messages to stderr)" : "");
        return protocol(x, call, err, errlen, what);
    }
    unsigned version = (unsigned)h[4] | (unsigned)h[5] << 8, echo = (unsigned)h[6] | h[7] << 8;
    uint32_t id = eeb_sut_exec_get32(h + 8);
    *length = eeb_sut_exec_get32(h + 12);
    if (version != EEB_SUT_EXEC_VERSION)
        snprintf(what, sizeof what, "reply header: version %u, eeb speaks version %d", version,
                 EEB_SUT_EXEC_VERSION);
    else if (echo != call)
        snprintf(what, sizeof what, "reply header: call %u (%s), the request was %u (%s)", echo,
                 eeb_sut_exec_call_name(echo), call, eeb_sut_exec_call_name(call));
    else if (id != x->id)
        snprintf(what, sizeof what, "reply header: id %u, the request's is %u", (unsigned)id,
                 (unsigned)x->id);
    else if (*length > EEB_SUT_EXEC_MAX_PAYLOAD)
        snprintf(what, sizeof what, "reply header: length %lu, over the cap of %u bytes",
                 (unsigned long)*length, EEB_SUT_EXEC_MAX_PAYLOAD);
    else if (*length > max_reply)
        snprintf(what, sizeof what, "reply header: length %lu, more than a %s reply can be (%zu)",
                 (unsigned long)*length, eeb_sut_exec_call_name(call), max_reply);
    else if (*length < 4)
        snprintf(what, sizeof what, "reply header: length %lu, too short for a status",
                 (unsigned long)*length);
    else
        return EEB_OK;
    return protocol(x, call, err, errlen, what);
}

static int grow(uint8_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return 0;
    uint8_t *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p, *cap = n;
    return 0;
}

/* A reason from an error reply: one line, control characters as spaces. */
static int refused(struct exec *x, unsigned call, const uint8_t *p, size_t n, char *err,
                   size_t errlen)
{
    uint32_t len = n >= 8 ? eeb_sut_exec_get32(p + 4) : 0;
    if (n < 8 || len != n - 8) {
        char what[160];
        snprintf(what, sizeof what,
                 "an error reply of %zu bytes whose reason says %lu bytes (status, length, text)",
                 n, (unsigned long)len);
        return protocol(x, call, err, errlen, what);
    }
    char why[600];
    size_t k = len < sizeof why - 1 ? len : sizeof why - 1;
    for (size_t i = 0; i < k; i++)
        why[i] = p[8 + i] < 0x20 || p[8 + i] == 0x7f ? ' ' : (char)p[8 + i];
    why[k] = '\0';
    return fail(x, call, EEB_EDEVICE, err, errlen, "%s", k ? why : "failed (no reason given)");
}

/*
 * One call: iov[0] becomes the header, iov[1..niov-1] are the payload.  A
 * reply of at most max_reply bytes; EEB_OK with its results (after the
 * status) in *res, *len bytes, valid until the next call.
 */
static int call(struct exec *x, unsigned c, struct iovec *iov, int niov, size_t max_reply,
                const uint8_t **res, size_t *len, char *err, size_t errlen)
{
    if (x->gone)
        return fail(x, c, EEB_EDEVICE, err, errlen, "not sent: the program is gone (%s)", x->gone);
    size_t total = 0;
    for (int i = 1; i < niov; i++)
        total += iov[i].iov_len;
    if (total > EEB_SUT_EXEC_MAX_PAYLOAD)
        return fail(x, c, EEB_EINVAL, err, errlen,
                    "a request of %zu bytes, over the protocol's cap of %u", total,
                    EEB_SUT_EXEC_MAX_PAYLOAD);
    if (max_reply < 8 + EEB_SUT_EXEC_MAX_TEXT)
        max_reply = 8 + EEB_SUT_EXEC_MAX_TEXT; /* an error reply's reason */
    int64_t until = eeb_mono_ns() + x->deadline_ns;
    uint8_t h[EEB_SUT_EXEC_HEADER];
    eeb_sut_exec_header(h, (enum eeb_sut_exec_call)c, ++x->id, (uint32_t)total);
    iov[0] = (struct iovec){h, sizeof h};
    enum io r = send_all(x, iov, niov, until);
    size_t got = 0;
    int unread = 0;
    if (r == IO_EARLY) {
        uint8_t peek[24];
        r = recv_all(x, peek, sizeof peek, eeb_mono_ns() + 100000000, 0, &got, &unread);
        return early(x, c, peek, got, -1, err, errlen);
    }
    if (r != IO_OK)
        return io_failed(x, c, r, "writing the request", err, errlen);
    if ((r = recv_all(x, h, sizeof h, until, 1, &got, &unread)) == IO_EARLY)
        return early(x, c, h, got, unread, err, errlen);
    if (r != IO_OK)
        return io_failed(x, c, r, "reading the reply", err, errlen);
    uint32_t length = 0;
    int rc = check_header(x, c, h, max_reply, &length, err, errlen);
    if (rc)
        return rc;
    if (grow(&x->reply, &x->reply_cap, length))
        return gone(x, c, EEB_ENOMEM, err, errlen, "out of memory for a reply of %lu bytes",
                    (unsigned long)length);
    if ((r = recv_all(x, x->reply, length, until, 0, &got, &unread)) != IO_OK)
        return io_failed(x, c, r, "reading the reply", err, errlen);
    if (eeb_sut_exec_get32(x->reply) != 0)
        return refused(x, c, x->reply, length, err, errlen);
    *res = x->reply + 4;
    *len = length - 4;
    return EEB_OK;
}

/* A reply of the wrong size for what was asked. */
static int wrong_size(struct exec *x, unsigned call, size_t got, size_t want, const char *what,
                      char *err, size_t errlen)
{
    char text[256];
    snprintf(text, sizeof text, "a reply of %zu bytes after its status, %zu expected (%s)", got,
             want, what);
    return protocol(x, call, err, errlen, text);
}

/* ---- the table ---- */

/* A string: its length (uint32) into len4, the bytes stay where they are. */
static size_t string_field(uint8_t len4[4], const char *s)
{
    size_t n = s ? strlen(s) : 0;
    eeb_sut_exec_put32(len4, (uint32_t)n);
    return n;
}

/*
 * A file the program is handed as bytes, not as eeb's path (the program
 * may run on another machine, over ssh, where eeb's paths mean nothing):
 * its contents, read now, into a new buffer.  room: what the request
 * leaves for them under the protocol's cap.
 */
static int file_bytes(struct exec *x, unsigned c, const char *what, const char *path, size_t room,
                      uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL, *len = 0;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        int rc = fail(x, c, EEB_EIO, err, errlen, "%s %s: %s", what, path, strerror(errno));
        if (f)
            fclose(f);
        return rc;
    }
    size_t size = (size_t)st.st_size;
    int rc = EEB_OK;
    if (!S_ISREG(st.st_mode))
        rc = fail(x, c, EEB_EIO, err, errlen, "%s %s: not a file", what, path);
    else if ((uint64_t)st.st_size > room)
        rc = fail(x, c, EEB_EINVAL, err, errlen,
                  "%s %s: %lld bytes, over what a request of the exec protocol can carry (%zu "
                  "bytes)",
                  what, path, (long long)st.st_size, room);
    else if (!(*buf = malloc(size ? size : 1)))
        rc = fail(x, c, EEB_ENOMEM, err, errlen, "%s %s: out of memory", what, path);
    else if (fread(*buf, 1, size, f) != size)
        rc = fail(x, c, EEB_EIO, err, errlen, "%s %s: read error", what, path);
    fclose(f);
    if (rc) {
        free(*buf);
        *buf = NULL;
    } else
        *len = size;
    return rc;
}

static int path_ok(struct exec *x, unsigned c, const char *path, char *err, size_t errlen)
{
    if (!path || !*path || strlen(path) > EEB_SUT_EXEC_MAX_TEXT)
        return fail(x, c, EEB_EINVAL, err, errlen, "a path of 1..%u bytes", EEB_SUT_EXEC_MAX_TEXT);
    return EEB_OK;
}

/* The path (for the program's messages) and the model's bytes. */
static int exec_load_model(void *sut, const char *path, char *err, size_t errlen)
{
    struct exec *x = sut;
    unsigned c = EEB_SUT_EXEC_LOAD_MODEL;
    int rc = path_ok(x, c, path, err, errlen);
    if (rc)
        return rc;
    uint8_t len4[4], size8[8], *bytes;
    size_t n = string_field(len4, path), nbytes;
    if ((rc = file_bytes(x, c, "the model", path, EEB_SUT_EXEC_MAX_PAYLOAD - 12 - n, &bytes,
                         &nbytes, err, errlen)))
        return rc;
    eeb_sut_exec_put64(size8, nbytes);
    struct iovec iov[5] = {{0}, {len4, 4}, {(void *)path, n}, {size8, 8}, {bytes, nbytes}};
    const uint8_t *res;
    size_t len;
    rc = call(x, c, iov, 5, 4, &res, &len, err, errlen);
    free(bytes);
    if (rc == EEB_OK && len != 0)
        return wrong_size(x, c, len, 0, "a status alone", err, errlen);
    return rc;
}

/* The program sends the model's bytes back; eeb writes them to path
 * (whole or not at all: a failed save leaves an older model as it was). */
static int exec_save_model(void *sut, const char *path, char *err, size_t errlen)
{
    struct exec *x = sut;
    unsigned c = EEB_SUT_EXEC_SAVE_MODEL;
    int rc = path_ok(x, c, path, err, errlen);
    if (rc)
        return rc;
    /* the file opened before the program is asked: a path eeb cannot
     * write fails without the program's work */
    char why[1024];
    struct eeb_atomic_file out;
    if ((rc = eeb_atomic_open(&out, path, why, sizeof why)))
        return fail(x, c, rc, err, errlen, "%s", why);
    uint8_t len4[4];
    size_t n = string_field(len4, path);
    struct iovec iov[3] = {{0}, {len4, 4}, {(void *)path, n}};
    const uint8_t *res;
    size_t len;
    rc = call(x, c, iov, 3, EEB_SUT_EXEC_MAX_PAYLOAD, &res, &len, err, errlen);
    uint64_t size = !rc && len >= 8 ? eeb_sut_exec_get64(res) : 0;
    if (!rc && (len < 8 || size != len - 8))
        rc = wrong_size(x, c, len, len < 8 ? 8 : 8 + (size_t)size,
                        "the model's length u64, then its bytes", err, errlen);
    if (rc) {
        eeb_atomic_abort(&out);
        return rc;
    }
    if (fwrite(res + 8, 1, (size_t)size, out.f) != (size_t)size ||
        eeb_atomic_commit(&out, why, sizeof why)) {
        if (out.f)
            snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
        eeb_atomic_abort(&out);
        return fail(x, c, EEB_EIO, err, errlen, "%s", why);
    }
    return EEB_OK;
}

static int exec_end_training(void *sut, char *err, size_t errlen)
{
    struct exec *x = sut;
    struct iovec iov[1];
    const uint8_t *res;
    size_t len;
    int rc = call(x, EEB_SUT_EXEC_END_TRAINING, iov, 1, 4, &res, &len, err, errlen);
    if (rc == EEB_OK && len != 0)
        return wrong_size(x, EEB_SUT_EXEC_END_TRAINING, len, 0, "a status alone", err, errlen);
    return rc;
}

/* The batch's n and pixels, checked for what the protocol sizes by. */
static int batch_head(struct exec *x, unsigned c, const struct eeb_sut_batch *b, uint8_t n4[4],
                      char *err, size_t errlen)
{
    if (!b || b->n < 1 || b->n > x->setup.batch_max || !b->pixels)
        return fail(x, c, EEB_EINVAL, err, errlen, "a batch of %d items%s (1..%d, with pixels)",
                    b ? b->n : 0, b && !b->pixels ? " without pixels" : "", x->setup.batch_max);
    eeb_sut_exec_put32(n4, (uint32_t)b->n);
    return EEB_OK;
}

/* train's labels (cls, video) or box counts and boxes (det), encoded in
 * x->fields; their length. */
static int train_fields(struct exec *x, const struct eeb_sut_batch *b, size_t *len, char *err,
                        size_t errlen)
{
    size_t n = (size_t)b->n, boxes = 0;
    int det = x->setup.task == EEB_SUT_DET;
    if (det ? !b->box_counts : !b->labels)
        return fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen, "a training batch without %s",
                    det ? "box counts" : "labels");
    for (size_t i = 0; det && i < n; i++) {
        if (b->box_counts[i] < 0 || b->box_counts[i] > 1000000)
            return fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen, "item %zu: %d boxes", i,
                        (int)b->box_counts[i]);
        boxes += (size_t)b->box_counts[i];
    }
    if (boxes && !b->boxes)
        return fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen, "%zu boxes counted, none given",
                    boxes);
    *len = 4 * n + boxes * EEB_SUT_EXEC_BOX_BYTES;
    if (grow(&x->fields, &x->fields_cap, *len))
        return fail(x, EEB_SUT_EXEC_TRAIN, EEB_ENOMEM, err, errlen, "out of memory");
    uint8_t *p = x->fields;
    for (size_t i = 0; i < n; i++, p += 4)
        eeb_sut_exec_put32(p, (uint32_t)(det ? b->box_counts[i] : b->labels[i]));
    for (size_t j = 0; j < boxes; j++, p += EEB_SUT_EXEC_BOX_BYTES) {
        const struct eeb_sut_box *box = &b->boxes[j];
        eeb_sut_exec_put32(p, (uint32_t)box->cls);
        eeb_sut_exec_put32(p + 4, (uint32_t)box->difficult);
        eeb_sut_exec_put_f32(p + 8, box->x0), eeb_sut_exec_put_f32(p + 12, box->y0);
        eeb_sut_exec_put_f32(p + 16, box->x1), eeb_sut_exec_put_f32(p + 20, box->y1);
    }
    return EEB_OK;
}

static int exec_train(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step,
                      char *err, size_t errlen)
{
    struct exec *x = sut;
    uint8_t n4[4];
    size_t flen = 0;
    int rc = batch_head(x, EEB_SUT_EXEC_TRAIN, batch, n4, err, errlen);
    if (rc || (rc = train_fields(x, batch, &flen, err, errlen)))
        return rc;
    if (!step)
        return fail(x, EEB_SUT_EXEC_TRAIN, EEB_EINVAL, err, errlen, "no step to report in");
    struct iovec iov[4] = {
        {0}, {n4, 4}, {(void *)batch->pixels, (size_t)batch->n * x->item_bytes}, {x->fields, flen}};
    const uint8_t *r;
    size_t len;
    if ((rc = call(x, EEB_SUT_EXEC_TRAIN, iov, 4, 4 + EEB_SUT_EXEC_STEP_BYTES, &r, &len, err,
                   errlen)))
        return rc;
    if (len != EEB_SUT_EXEC_STEP_BYTES)
        return wrong_size(x, EEB_SUT_EXEC_TRAIN, len, EEB_SUT_EXEC_STEP_BYTES,
                          "loss f64, correct i64, counted i64, done u8", err, errlen);
    int64_t correct = (int64_t)eeb_sut_exec_get64(r + 8),
            counted = (int64_t)eeb_sut_exec_get64(r + 16);
    char what[160];
    if (correct < 0 || counted < 0 || correct > counted)
        snprintf(what, sizeof what, "correct %lld of %lld counted (0 <= correct <= counted)",
                 (long long)correct, (long long)counted);
    else if (r[24] > 1)
        snprintf(what, sizeof what, "done %u (0 or 1)", r[24]);
    else {
        *step = (struct eeb_sut_step){eeb_sut_exec_get_f64(r), correct, counted, r[24]};
        return EEB_OK;
    }
    return protocol(x, EEB_SUT_EXEC_TRAIN, err, errlen, what);
}

/* cls, video: n x top_k classes then as many scores. */
static int ranked(struct exec *x, int n, const uint8_t *r, size_t len,
                  struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    size_t k = (size_t)x->setup.top_k, m = (size_t)n * k;
    if (len != 4 + 8 * m)
        return wrong_size(x, EEB_SUT_EXEC_PREDICT, len, 4 + 8 * m,
                          "n, then n x top_k classes i32 and scores f32", err, errlen);
    for (size_t j = 0; j < m; j++) {
        int32_t cls = (int32_t)eeb_sut_exec_get32(r + 4 + 4 * j);
        size_t rank = j % k;
        /* -1: no class, for the ranks past the classes (top_k > classes) */
        if (cls >= x->setup.classes || cls < (rank >= (size_t)x->setup.classes ? -1 : 0)) {
            char what[160];
            snprintf(what, sizeof what, "item %zu rank %zu: class %d (0..%d)", j / k, rank,
                     (int)cls, x->setup.classes - 1);
            return protocol(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
        }
        out->classes[j] = cls;
        out->scores[j] = eeb_sut_exec_get_f32(r + 4 + 4 * m + 4 * j);
    }
    return EEB_OK;
}

/* det: n counts, then each item's detections, packed. */
static int detections(struct exec *x, int n, const uint8_t *r, size_t len,
                      struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    size_t want = 4 + 4 * (size_t)n, dets = 0;
    char what[160];
    if (len < want)
        return wrong_size(x, EEB_SUT_EXEC_PREDICT, len, want, "n, then n counts i32", err, errlen);
    for (int i = 0; i < n; i++) {
        int32_t count = (int32_t)eeb_sut_exec_get32(r + 4 + 4 * (size_t)i);
        if (count < 0 || count > x->setup.max_boxes) {
            snprintf(what, sizeof what, "item %d: %d detections (0..max_boxes %d)", i, (int)count,
                     x->setup.max_boxes);
            return protocol(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
        }
        out->counts[i] = count;
        dets += (size_t)count;
    }
    want += dets * EEB_SUT_EXEC_DETECTION_BYTES;
    if (len != want)
        return wrong_size(x, EEB_SUT_EXEC_PREDICT, len, want,
                          "n, n counts, then the counts' detections", err, errlen);
    const uint8_t *p = r + 4 + 4 * (size_t)n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < out->counts[i]; j++, p += EEB_SUT_EXEC_DETECTION_BYTES) {
            int32_t cls = (int32_t)eeb_sut_exec_get32(p);
            if (cls < 0 || cls >= x->setup.classes) {
                snprintf(what, sizeof what, "item %d detection %d: class %d (0..%d)", i, j,
                         (int)cls, x->setup.classes - 1);
                return protocol(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
            }
            out->detections[(size_t)i * (size_t)x->setup.max_boxes + (size_t)j] =
                (struct eeb_sut_detection){cls,
                                           eeb_sut_exec_get_f32(p + 4),
                                           eeb_sut_exec_get_f32(p + 8),
                                           eeb_sut_exec_get_f32(p + 12),
                                           eeb_sut_exec_get_f32(p + 16),
                                           eeb_sut_exec_get_f32(p + 20)};
        }
    return EEB_OK;
}

/* The most a predict reply of n items can be. */
static size_t predict_max(const struct exec *x, int n)
{
    if (x->setup.task == EEB_SUT_DET)
        return 8 + (size_t)n * (4 + (size_t)x->setup.max_boxes * EEB_SUT_EXEC_DETECTION_BYTES);
    return 8 + (size_t)n * (size_t)x->setup.top_k * 8;
}

static int exec_predict(void *sut, const struct eeb_sut_batch *batch,
                        struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    struct exec *x = sut;
    uint8_t n4[4];
    int rc = batch_head(x, EEB_SUT_EXEC_PREDICT, batch, n4, err, errlen);
    if (rc)
        return rc;
    int det = x->setup.task == EEB_SUT_DET;
    if (!out || (det ? !out->counts || !out->detections : !out->classes || !out->scores))
        return fail(x, EEB_SUT_EXEC_PREDICT, EEB_EINVAL, err, errlen,
                    "nowhere to write the predictions");
    /* the pixels alone: the SUT never sees a test label */
    struct iovec iov[3] = {{0}, {n4, 4}, {(void *)batch->pixels, (size_t)batch->n * x->item_bytes}};
    const uint8_t *r;
    size_t len;
    if ((rc = call(x, EEB_SUT_EXEC_PREDICT, iov, 3, predict_max(x, batch->n), &r, &len, err,
                   errlen)))
        return rc;
    if (len < 4)
        return wrong_size(x, EEB_SUT_EXEC_PREDICT, len, 4, "n first", err, errlen);
    int32_t n = (int32_t)eeb_sut_exec_get32(r);
    if (n != batch->n) {
        char what[128];
        snprintf(what, sizeof what, "%d items answered, %d asked", (int)n, batch->n);
        return protocol(x, EEB_SUT_EXEC_PREDICT, err, errlen, what);
    }
    return det ? detections(x, n, r, len, out, err, errlen)
               : ranked(x, n, r, len, out, err, errlen);
}

/* The ABI's counters cannot fail: a program that does not answer them
 * reports zeros, and is gone for the next call, which says why. */
static void exec_counters(void *sut, struct eeb_sut_counters *c)
{
    struct exec *x = sut;
    struct iovec iov[1];
    const uint8_t *r;
    size_t len;
    char err[16];
    *c = (struct eeb_sut_counters){0};
    if (call(x, EEB_SUT_EXEC_COUNTERS, iov, 1, 4 + 52 + EEB_SUT_EXEC_MAX_TEXT, &r, &len, err,
             sizeof err))
        return;
    uint32_t n = len >= 52 ? eeb_sut_exec_get32(r + 48) : 0;
    if (len < 52 || len != 52 + (size_t)n) {
        char what[160];
        snprintf(what, sizeof what, "a reply of %zu bytes after its status (6 u64, then a string)",
                 len);
        protocol(x, EEB_SUT_EXEC_COUNTERS, err, sizeof err, what);
        return;
    }
    c->steps = eeb_sut_exec_get64(r), c->items = eeb_sut_exec_get64(r + 8);
    for (int i = 0; i < 4; i++)
        c->saturations[i] = eeb_sut_exec_get64(r + 16 + 8 * i);
    size_t k = n < sizeof c->detail - 1 ? n : sizeof c->detail - 1;
    for (size_t i = 0; i < k; i++)
        c->detail[i] = r[52 + i] < 0x20 || r[52 + i] == 0x7f ? ' ' : (char)r[52 + i];
    c->detail[k] = '\0';
}

static void exec_close(void *sut)
{
    struct exec *x = sut;
    if (!x)
        return;
    if (!x->gone && x->pid > 0) {
        struct iovec iov[1];
        const uint8_t *r;
        size_t len;
        char err[16];
        double d = (double)x->deadline_ns / 1e9;
        x->deadline_ns = (int64_t)((d < CLOSE_REPLY_S ? d : CLOSE_REPLY_S) * 1e9);
        call(x, EEB_SUT_EXEC_CLOSE, iov, 1, 4, &r, &len, err, sizeof err);
    }
    close_pipes(x); /* its stdin at EOF: a program still reading ends */
    int status;
    if (x->pid > 0 && !wait_end(x, END_WAIT_S, &status))
        kill_reap(x);
    tail_settle(&x->err, 0.1); /* the rest of its stderr passed on */
    tail_end(&x->err);
    pthread_mutex_destroy(&x->err.lock);
    free(x->command), free(x->gone), free(x->reply), free(x->fields);
    free(x);
}

/* open is eeb_sut_exec_start's: the table's slot is there for the check
 * and refuses a second open. */
static int exec_open(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen)
{
    (void)setup;
    *sut = NULL;
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "exec: a program is opened by eeb_sut_exec_start, with its setup");
}

/* ---- start ---- */

static int check_setup(struct exec *x, const struct eeb_sut_setup *s, char *err, size_t errlen)
{
    if (!s)
        return fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen, "no setup");
    if (s->frames < 1 || s->height < 1 || s->width < 1 || s->channels < 1 || s->batch_max < 1 ||
        s->classes < 1 || s->top_k < 0 || s->max_boxes < 0 || s->top_k > 65536 ||
        s->max_boxes > 65536)
        return fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                    "setup: %d frames of %d x %d x %d, batch_max %d, %d classes, top_k %d, "
                    "max_boxes %d (sizes at least 1; top_k, max_boxes 0..65536)",
                    s->frames, s->height, s->width, s->channels, s->batch_max, s->classes, s->top_k,
                    s->max_boxes);
    double item = (double)s->frames * s->height * s->width * s->channels;
    double request = 8 + (item + 4) * s->batch_max,
           reply = 8 + (4 + s->max_boxes * 24.0 + s->top_k * 8.0) * s->batch_max;
    if (request > EEB_SUT_EXEC_MAX_PAYLOAD || reply > EEB_SUT_EXEC_MAX_PAYLOAD)
        return fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                    "setup: a batch of %d items of %.0f bytes is over the protocol's cap of %u",
                    s->batch_max, item, EEB_SUT_EXEC_MAX_PAYLOAD);
    if ((s->config && strlen(s->config) > EEB_SUT_EXEC_MAX_TEXT) ||
        (s->workdir && strlen(s->workdir) > EEB_SUT_EXEC_MAX_TEXT) ||
        (s->xclbin && strlen(s->xclbin) > EEB_SUT_EXEC_MAX_TEXT))
        return fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                    "setup: config, workdir or xclbin over %u bytes", EEB_SUT_EXEC_MAX_TEXT);
    x->setup = *s;
    x->setup.config = x->setup.workdir = x->setup.xclbin = NULL; /* valid for the call only */
    x->item_bytes = (size_t)item;
    return EEB_OK;
}

/* open's request and reply: the SUT's name and its optional calls. */
static int open_call(struct exec *x, const struct eeb_sut_setup *s, char *err, size_t errlen)
{
    uint8_t head[EEB_SUT_EXEC_SETUP_BYTES], clen[4], wlen[4], xlen[4];
    const int32_t fields[10] = {s->abi_version, s->task,     s->classes,   s->frames, s->height,
                                s->width,       s->channels, s->batch_max, s->top_k,  s->max_boxes};
    for (int i = 0; i < 10; i++)
        eeb_sut_exec_put32(head + 4 * i, (uint32_t)fields[i]);
    eeb_sut_exec_put64(head + 40, s->seed);
    size_t cn = string_field(clen, s->config), wn = string_field(wlen, s->workdir),
           xn = string_field(xlen, s->xclbin), nbytes = 0;
    uint8_t size8[8], *bytes = NULL;
    int rc = EEB_OK;
    if (xn && (rc = file_bytes(x, EEB_SUT_EXEC_OPEN, "the xclbin", s->xclbin,
                               EEB_SUT_EXEC_MAX_PAYLOAD - (sizeof head + 20 + cn + wn + xn), &bytes,
                               &nbytes, err, errlen)))
        return rc;
    eeb_sut_exec_put64(size8, nbytes);
    struct iovec iov[10] = {{0},        {head, sizeof head},
                            {clen, 4},  {(void *)(s->config ? s->config : ""), cn},
                            {wlen, 4},  {(void *)(s->workdir ? s->workdir : ""), wn},
                            {xlen, 4},  {(void *)(s->xclbin ? s->xclbin : ""), xn},
                            {size8, 8}, {bytes, nbytes}};
    const uint8_t *r;
    size_t len;
    rc = call(x, EEB_SUT_EXEC_OPEN, iov, 10, 12 + MAX_NAME, &r, &len, err, errlen);
    free(bytes);
    if (rc)
        return rc;
    uint32_t n = len >= 4 ? eeb_sut_exec_get32(r) : 0;
    if (len < 8 || len != 8 + (size_t)n || n < 1 || n > MAX_NAME) {
        char what[160];
        snprintf(what, sizeof what,
                 "a reply of %zu bytes after its status, a name of %lu (a name of 1..%d "
                 "bytes, then the optional calls u32)",
                 len, (unsigned long)n, MAX_NAME);
        return protocol(x, EEB_SUT_EXEC_OPEN, err, errlen, what);
    }
    for (uint32_t i = 0; i < n; i++)
        x->name[i] = r[4 + i] < 0x20 || r[4 + i] == 0x7f ? '?' : (char)r[4 + i];
    x->name[n] = '\0';
    uint32_t has = eeb_sut_exec_get32(r + 4 + n);
    x->ops.end_training = has & EEB_SUT_EXEC_HAS_END_TRAINING ? exec_end_training : NULL;
    x->ops.counters = has & EEB_SUT_EXEC_HAS_COUNTERS ? exec_counters : NULL;
    x->ops.save_model = has & EEB_SUT_EXEC_HAS_SAVE_MODEL ? exec_save_model : NULL;
    return EEB_OK;
}

int eeb_sut_exec_start(const char *command, const struct eeb_sut_setup *setup, double deadline_s,
                       const struct eeb_sut_ops **ops, void **state, char *err, size_t errlen)
{
    *ops = NULL;
    *state = NULL;
    if (!command)
        command = "";
    if (!(deadline_s > 0 && deadline_s <= 1e6))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "SUT '%s': a deadline of %g s per call (more than 0)", command, deadline_s);
    struct exec *x = calloc(1, sizeof *x);
    if (!x || !(x->command = strdup(command))) {
        free(x);
        return eeb_errf(err, errlen, EEB_ENOMEM, "SUT '%s': out of memory", command);
    }
    x->to = x->from = -1;
    x->err.fd = x->err.stop[0] = x->err.stop[1] = -1;
    pthread_mutex_init(&x->err.lock, NULL);
    x->deadline_ns = (int64_t)(deadline_s * 1e9);
    x->ops = (struct eeb_sut_ops){.abi_version = EEB_SUT_ABI_VERSION,
                                  .name = x->name,
                                  .open = exec_open,
                                  .load_model = exec_load_model,
                                  .train = exec_train,
                                  .predict = exec_predict,
                                  .close = exec_close};
    int rc = check_setup(x, setup, err, errlen);
    if (!rc)
        rc = spawn(x, err, errlen);
    if (!rc)
        rc = open_call(x, setup, err, errlen);
    if (rc) {
        free(x->gone);
        x->gone = strdup("open failed"); /* no close request: the program is ended */
        exec_close(x);
        return rc;
    }
    *ops = &x->ops;
    *state = x;
    return EEB_OK;
}
