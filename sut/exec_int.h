/*
 * exec_int.h - shared by the files of the exec backend: the program's
 * state (struct exec) and the calls between them.  exec_program.c starts
 * the program, drains its stderr, waits for and kills it; exec_wire.c
 * sends a request and reads its reply over the pipes; exec.c is the table
 * of calls on top.
 */
#ifndef EEB_SUT_EXEC_INT_H
#define EEB_SUT_EXEC_INT_H

#include "sut/eeb_sut_exec.h"
#include "sut/eeb_sut_host.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#define END_WAIT_S    1.0 /* a program that closed its stdout, or was asked to close: to exit */
#define CLOSE_REPLY_S 2.0 /* close's answer, at most (less if the deadline is shorter) */
#define MAX_ARGS      256
#define MAX_NAME      255                      /* the SUT's name, from open's reply */
#define MAX_VERSION   EEB_SUT_EXEC_MAX_VERSION /*   and its version, if the reply has one */
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
    const char *who;        /* its process in messages: "the program", "its process" */
    char name[MAX_NAME + 1];
    char version[MAX_VERSION + 1]; /* "": the program said none */
    pid_t pid;                     /* 0 once reaped */
    int to, from;                  /* its stdin and its stdout (eeb's ends); -1 once closed */
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
int exec_fail(const struct exec *x, unsigned call, int status, char *err, size_t errlen,
              const char *fmt, ...);

/* Waits up to seconds for the program to end: 1 with its wait status, 0
 * if it still runs. */
int exec_wait_end(struct exec *x, double seconds, int *status);

/* SIGKILL to the program's process group (it and whatever it started),
 * then the program reaped: no zombie is left. */
void exec_kill_reap(struct exec *x);

/* Its stdin and stdout closed (eeb's ends). */
void exec_close_pipes(struct exec *x);

/* Waits up to seconds for the rest of what an ended program wrote (its
 * stderr's end). */
void exec_tail_settle(struct tail *t, double seconds);

/* The thread ended and joined, the pipes closed. */
void exec_tail_end(struct tail *t);

/* The program is gone, killed if it was not: the message, kept for every
 * later call. */
PRINTF_LIKE(6, 7)
int exec_gone(struct exec *x, unsigned call, int status, char *err, size_t errlen, const char *fmt,
              ...);

/* The pipe's end came (EOF, EPIPE) before the answer: how the program
 * ended, or killed if it keeps running without its stdout. */
int exec_ended(struct exec *x, unsigned call, char *err, size_t errlen);

/* A reply that is not the protocol's: EEB_EFORMAT, saying what; the
 * program killed. */
int exec_protocol_error(struct exec *x, unsigned call, char *err, size_t errlen, const char *what);

/* x->command's words, split on spaces (no shell) into argv, pointing into
 * *words (free it, whatever the outcome). */
int exec_split(const char *command, char **words, char *argv[MAX_ARGS + 1], struct exec *x,
               char *err, size_t errlen);

/* The program started with argv (argv[0] found as execvp finds it), its
 * pipes and its stderr's drain open. */
int exec_spawn(struct exec *x, char *const argv[], char *err, size_t errlen);

/* SIGKILL to the program's process group, nothing else: safe while
 * another thread is inside a call (which then sees the pipe's end and
 * reaps it).  1 if there was a program. */
int exec_kill(struct exec *x);

/* *buf, of *cap bytes, grown to hold at least n. */
int exec_grow(uint8_t **buf, size_t *cap, size_t n);

/*
 * One call: iov[0] becomes the header, iov[1..niov-1] are the payload.  A
 * reply of at most max_reply bytes; EEB_OK with its results (after the
 * status) in *res, *len bytes, valid until the next call.
 */
int exec_call(struct exec *x, unsigned c, struct iovec *iov, int niov, size_t max_reply,
              const uint8_t **res, size_t *len, char *err, size_t errlen);

/* A reply of the wrong size for what was asked. */
int exec_wrong_size(struct exec *x, unsigned call, size_t got, size_t want, const char *what,
                    char *err, size_t errlen);

#endif
