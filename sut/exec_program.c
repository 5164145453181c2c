/*
 * exec_program.c - the exec backend's program (exec.c): found as execvp
 * finds it and started, its stderr drained by a thread (passed on, its
 * end kept for messages), waited for and killed; and the messages of a
 * program that has gone.
 *
 * Sections: errors; the program; its stderr.
 */
#include "sut/eeb_sut_host.h"
#include "sut/eeb_sut_exec.h"
#include "sut/exec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* "SUT 'COMMAND': CALL: why" into err; status. */
PRINTF_LIKE(6, 7)
int exec_fail(const struct exec *x, unsigned call, int status, char *err, size_t errlen,
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
int exec_wait_end(struct exec *x, double seconds, int *status)
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
void exec_kill_reap(struct exec *x)
{
    if (x->pid <= 0)
        return;
    kill(-x->pid, SIGKILL);
    kill(x->pid, SIGKILL); /* in case it left its group */
    while (waitpid(x->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    x->pid = 0;
}

void exec_close_pipes(struct exec *x)
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
void exec_tail_settle(struct tail *t, double seconds)
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
void exec_tail_end(struct tail *t)
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
int exec_gone(struct exec *x, unsigned call, int status, char *err, size_t errlen, const char *fmt,
              ...)
{
    char why[8192]; /* room for the program's stderr's tail */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    exec_kill_reap(x);
    exec_close_pipes(x);
    exec_tail_settle(&x->err, 0.1); /* the rest of it passed on */
    exec_tail_end(&x->err);
    if (!x->gone) {
        size_t n = strlen(why) + 32;
        if ((x->gone = malloc(n)))
            snprintf(x->gone, n, "%s: %s", eeb_sut_exec_call_name(call), why);
    }
    return exec_fail(x, call, status, err, errlen, "%s", why);
}

/* The pipe's end came (EOF, EPIPE) before the answer: how the program
 * ended, or killed if it keeps running without its stdout. */
int exec_ended(struct exec *x, unsigned call, char *err, size_t errlen)
{
    int status = 0;
    char how[160];
    if (!exec_wait_end(x, END_WAIT_S, &status))
        return exec_gone(x, call, EEB_EDEVICE, err, errlen,
                         "%s closed its stdout without answering (killed)", x->who);
    describe_status(status, how, sizeof how);
    exec_tail_settle(&x->err, TAIL_SETTLE_S);
    /* what it said last, as much as err holds after the rest of the message */
    char said[3 * TAIL_BYTES + 1];
    size_t used = strlen(x->command) + strlen(how) + 80;
    size_t room = errlen > used + 16 ? errlen - used : 0;
    tail_text(&x->err, said, room < sizeof said ? room : sizeof said - 1);
    if (!said[0])
        return exec_gone(x, call, EEB_EDEVICE, err, errlen, "%s %s before answering", x->who, how);
    return exec_gone(x, call, EEB_EDEVICE, err, errlen,
                     "%s %s before answering; its stderr ended: %s", x->who, how, said);
}

int exec_protocol_error(struct exec *x, unsigned call, char *err, size_t errlen, const char *what)
{
    return exec_gone(x, call, EEB_EFORMAT, err, errlen, "protocol error: %s (killed)", what);
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

/*
 * The program at path started with argv, the descriptors in, out and
 * errfd as its stdin, stdout and stderr and no other of eeb's (its
 * database, sockets), in a process group of its own (a Ctrl-C at the
 * terminal is eeb's to handle, and a kill of the group reaches whatever
 * it started), and SIGKILLed by the kernel if the thread that started it
 * ends first (PR_SET_PDEATHSIG): eeb killed or crashed leaves no program
 * behind.  fork, not posix_spawn, for that one setting; the child makes
 * only async-signal-safe calls before exec.  0 with *pid, or the errno of
 * the start (the exec's own, passed back on a close-on-exec pipe).
 */
static int start_child(const char *path, char *const argv[], int in, int out, int errfd, pid_t *pid)
{
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0)
        return errno;
    struct rlimit files;
    int max_fd = getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 65536
                     ? (int)files.rlim_cur
                     : 65536;
    pid_t parent = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* no handler of eeb's runs in the child */
    pid_t p = fork();
    if (p == 0) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigset_t none;
        int e;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
            _exit(127); /* eeb has gone already */
        setpgid(0, 0);
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
            goto failed;
        if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
            for (int fd = 3; fd < max_fd; fd++)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
        for (int sig = 1; sig < NSIG; sig++) /* eeb ignores SIGPIPE; the program need not */
            if (sig != SIGKILL && sig != SIGSTOP)
                sigaction(sig, &dfl, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(path, argv);
    failed:
        e = errno;
        while (write(report[1], &e, sizeof e) < 0 && errno == EINTR)
            ;
        _exit(127);
    }
    int e = p < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    if (p > 0) {
        ssize_t n;
        while ((n = read(report[0], &e, sizeof e)) < 0 && errno == EINTR)
            ;
        if (n == (ssize_t)sizeof e) /* the exec failed: the child has ended */
            while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
                ;
        else
            e = 0;
    }
    close(report[0]);
    *pid = e ? 0 : p;
    return e;
}

int exec_spawn(struct exec *x, char *const argv[], char *err, size_t errlen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1}, rc = EEB_OK, e;
    char path[4096];
    char why[512];
    if (unstartable(argv[0], path, sizeof path, why, sizeof why)) {
        rc = exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EIO, err, errlen, "%s", why);
        goto out;
    }
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(errp, O_CLOEXEC)) {
        rc = exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EIO, err, errlen, "pipe: %s", strerror(errno));
        goto out;
    }
    for (int i = 0; i < 2; i++)
        in[i] = above_stdio(in[i]), out[i] = above_stdio(out[i]), errp[i] = above_stdio(errp[i]);
    if ((e = start_child(path, argv, in[0], out[1], errp[1], &x->pid))) {
        rc = exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EIO, err, errlen, "cannot start '%s': %s", argv[0],
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
    return rc;
}

int exec_split(const char *command, char **words, char *argv[MAX_ARGS + 1], struct exec *x,
               char *err, size_t errlen)
{
    int argc = split(command, words, argv);
    if (argc == 0)
        return exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                         "no program to start (exec:PROGRAM ARGS...)");
    if (argc < 0)
        return exec_fail(x, EEB_SUT_EXEC_OPEN, EEB_EINVAL, err, errlen,
                         "cannot split the command (at most %d words)", MAX_ARGS);
    return EEB_OK;
}

int exec_kill(struct exec *x)
{
    if (x->pid <= 0)
        return 0;
    kill(-x->pid, SIGKILL);
    kill(x->pid, SIGKILL);
    return 1;
}
