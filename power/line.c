/*
 * line.c - the line-oriented TCP connection network meters speak (SCPI
 * over a raw socket, SPEC PTDaemon): connect, send a command, read one
 * reply line, every wait bounded.
 */
#include "power_int.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int power_line_init(struct power_line *c, const char *uri, const char *args, const char *eol,
                    const char **options, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->fd = -1, c->timeout_ms = 1000, c->eol = eol;
    const char *host = args + 2, *end;
    if (strncmp(args, "//", 2) != 0)
        goto bad;
    if (*host == '[') {
        end = strchr(++host, ']');
        if (!end || end[1] != ':')
            goto bad;
    } else {
        end = host + strcspn(host, ":?");
        if (*end != ':')
            goto bad;
    }
    size_t hlen = (size_t)(end - host);
    const char *port = end + (*end == ']' ? 2 : 1);
    size_t plen = strcspn(port, "?");
    if (hlen == 0 || hlen >= sizeof c->host || plen == 0 || plen >= sizeof c->port ||
        strspn(port, "0123456789") != plen)
        goto bad;
    memcpy(c->host, host, hlen);
    memcpy(c->port, port, plen);
    *options = port[plen] ? port + plen + 1 : "";
    return EEB_OK;
bad:
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "power source '%s': expected //HOST:PORT[?key=value,...] after the scheme",
                    uri);
}

void power_line_close(struct power_line *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1, c->len = 0;
}

/* Waits until fd is ready for events or the deadline passes. */
static int wait_fd(int fd, short events, int64_t deadline_ns)
{
    for (;;) {
        int64_t left = deadline_ns - eeb_mono_ns();
        if (left <= 0)
            return EEB_ETIMEOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)((left + 999999) / 1000000));
        if (rc > 0)
            return EEB_OK;
        if (rc < 0 && errno != EINTR)
            return EEB_EIO;
    }
}

static int fail(struct power_line *c, int status, const char *uri, const char *what, char *err,
                size_t errlen)
{
    power_line_close(c);
    return eeb_errf(err, errlen, status, "%s: %s", uri, what); /* the URI names host and port */
}

static int power_line_connect(struct power_line *c, const char *uri, char *err, size_t errlen)
{
    power_line_close(c);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(c->host, c->port, &hints, &ai);
    if (rc != 0)
        return fail(c, EEB_EDEVICE, uri, gai_strerror(rc), err, errlen);
    int64_t deadline = eeb_mono_ns() + (int64_t)c->timeout_ms * 1000000;
    char why[128] = "no address";
    for (struct addrinfo *a = ai; a && c->fd < 0; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        int e = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
        if (e == EINPROGRESS) {
            socklen_t len = sizeof e;
            e = wait_fd(fd, POLLOUT, deadline) != EEB_OK              ? ETIMEDOUT
                : getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0 ? errno
                                                                      : e;
        }
        if (e == 0) {
            int one = 1; /* one small command, one small reply: no Nagle delay */
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            c->fd = fd;
        } else {
            snprintf(why, sizeof why, "cannot connect: %s", strerror(e));
            close(fd);
        }
    }
    freeaddrinfo(ai);
    return c->fd >= 0 ? EEB_OK : fail(c, EEB_EDEVICE, uri, why, err, errlen);
}

int power_line_send(struct power_line *c, const char *uri, const char *cmd, char *err,
                    size_t errlen)
{
    if (c->fd < 0) {
        int rc = power_line_connect(c, uri, err, errlen);
        if (rc != EEB_OK)
            return rc;
    }
    char line[512];
    int n = snprintf(line, sizeof line, "%s%s", cmd, c->eol);
    if (n < 0 || (size_t)n >= sizeof line)
        return fail(c, EEB_EINVAL, uri, "command too long", err, errlen);
    int64_t deadline = eeb_mono_ns() + (int64_t)c->timeout_ms * 1000000;
    for (size_t off = 0; off < (size_t)n;) {
        ssize_t w = send(c->fd, line + off, (size_t)n - off, MSG_NOSIGNAL);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno == EINTR)
            continue;
        else if (w < 0 && errno == EAGAIN) {
            if (wait_fd(c->fd, POLLOUT, deadline) != EEB_OK)
                return fail(c, EEB_ETIMEOUT, uri, "the meter takes no more input", err, errlen);
        } else
            return fail(c, EEB_EDEVICE, uri, w < 0 ? strerror(errno) : "cannot send", err, errlen);
    }
    return EEB_OK;
}

int power_line_query(struct power_line *c, const char *uri, const char *cmd, char *reply,
                     size_t len, char *err, size_t errlen)
{
    int rc = power_line_send(c, uri, cmd, err, errlen);
    if (rc != EEB_OK)
        return rc;
    int64_t deadline = eeb_mono_ns() + (int64_t)c->timeout_ms * 1000000;
    char *nl;
    while (!(nl = memchr(c->buf, '\n', c->len))) {
        char what[160];
        if (c->len == sizeof c->buf)
            return fail(c, EEB_EFORMAT, uri, "a reply longer than 4 KiB", err, errlen);
        if (wait_fd(c->fd, POLLIN, deadline) != EEB_OK) {
            snprintf(what, sizeof what, "no reply to '%s' within %d ms", cmd, c->timeout_ms);
            return fail(c, EEB_ETIMEOUT, uri, what, err, errlen);
        }
        ssize_t r = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
            snprintf(what, sizeof what, "%s while waiting for the reply to '%s'",
                     r == 0 ? "the meter closed the connection" : strerror(errno), cmd);
            return fail(c, EEB_EDEVICE, uri, what, err, errlen);
        }
        if (r > 0)
            c->len += (size_t)r;
    }
    size_t n = (size_t)(nl - c->buf), keep = c->len - n - 1;
    size_t text = n > 0 && c->buf[n - 1] == '\r' ? n - 1 : n;
    if (text >= len)
        return fail(c, EEB_EFORMAT, uri, "a reply longer than expected", err, errlen);
    memcpy(reply, c->buf, text);
    reply[text] = '\0';
    memmove(c->buf, nl + 1, keep);
    c->len = keep;
    return EEB_OK;
}
