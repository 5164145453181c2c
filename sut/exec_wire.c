/*
 * exec_wire.c - the exec backend's wire (exec.c): a request written and
 * a reply read over the program's pipes against the call's deadline, and
 * the reply's header and sizes checked.
 *
 * Sections: the pipes; a call.
 */
#include "sut/eeb_sut_host.h"
#include "sut/eeb_sut_exec.h"
#include "sut/exec_int.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

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
    return exec_gone(x, call, EEB_ETIMEOUT, err, errlen, "no answer within %g s (killed)",
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
    return exec_protocol_error(x, call, err, errlen, what);
}

static int io_failed(struct exec *x, unsigned call, enum io r, const char *doing, char *err,
                     size_t errlen)
{
    if (r == IO_TIMEOUT)
        return timed_out(x, call, err, errlen);
    if (r == IO_END)
        return exec_ended(x, call, err, errlen);
    return exec_gone(x, call, EEB_EIO, err, errlen, "%s: %s (killed)", doing, strerror(errno));
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
        return exec_protocol_error(x, call, err, errlen, what);
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
    return exec_protocol_error(x, call, err, errlen, what);
}

int exec_grow(uint8_t **buf, size_t *cap, size_t n)
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
        return exec_protocol_error(x, call, err, errlen, what);
    }
    char why[600];
    size_t k = len < sizeof why - 1 ? len : sizeof why - 1;
    for (size_t i = 0; i < k; i++)
        why[i] = p[8 + i] < 0x20 || p[8 + i] == 0x7f ? ' ' : (char)p[8 + i];
    why[k] = '\0';
    /* a host with no SUT to serve: the reason names the file, and is the
     * SUT's whole error */
    if (call == EEB_SUT_EXEC_OPEN && eeb_sut_exec_get32(p) == EEB_SUT_EXEC_UNSERVABLE && k)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s", why);
    return exec_fail(x, call, EEB_EDEVICE, err, errlen, "%s", k ? why : "failed (no reason given)");
}

/*
 * One call: iov[0] becomes the header, iov[1..niov-1] are the payload.  A
 * reply of at most max_reply bytes; EEB_OK with its results (after the
 * status) in *res, *len bytes, valid until the next call.
 */
int exec_call(struct exec *x, unsigned c, struct iovec *iov, int niov, size_t max_reply,
              const uint8_t **res, size_t *len, char *err, size_t errlen)
{
    if (x->gone)
        return exec_fail(x, c, EEB_EDEVICE, err, errlen, "not sent: %s is gone (%s)", x->who,
                         x->gone);
    size_t total = 0;
    for (int i = 1; i < niov; i++)
        total += iov[i].iov_len;
    if (total > EEB_SUT_EXEC_MAX_PAYLOAD)
        return exec_fail(x, c, EEB_EINVAL, err, errlen,
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
    if (exec_grow(&x->reply, &x->reply_cap, length))
        return exec_gone(x, c, EEB_ENOMEM, err, errlen, "out of memory for a reply of %lu bytes",
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
int exec_wrong_size(struct exec *x, unsigned call, size_t got, size_t want, const char *what,
                    char *err, size_t errlen)
{
    char text[256];
    snprintf(text, sizeof text, "a reply of %zu bytes after its status, %zu expected (%s)", got,
             want, what);
    return exec_protocol_error(x, call, err, errlen, text);
}
