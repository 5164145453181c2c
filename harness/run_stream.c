/*
 * run_stream.c - an official run's chain streamed to the server as it is
 * written: a thread of its own, on its own database connection and its own
 * HTTP connection, sends every link written since the last it sent, twice
 * a second (and at once when the fine-tune begins: the server times the
 * fine-tune from that link's arrival, so it waits for no beat), from the
 * run's creation to the end of fine-tuning; the server
 * stamps each with its clock, and judges whether the record came as the
 * run went.  A send that fails is tried again on the next beat: the gap is
 * the server's to judge.
 */
#include "run_int.h"

#include "eeb_client.h"
#include "power/eeb_power.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BEAT_NS 500000000L /* how often new links are sent */

struct run_stream {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* stop or kick was set */
    int stop, kick;
    struct eeb_client client;
    struct eeb_rundb *db;
    int64_t server_run, run, next; /* next: the link the server expects */
    int failed;                    /* the last send failed, with err */
    int refused;                   /* the server refused it (a 4xx): the run ends */
    char err[512];
};

static void send_new(struct run_stream *s)
{
    char err[512];
    int rc =
        eeb_client_send_links(&s->client, s->server_run, s->db, s->run, &s->next, err, sizeof err);
    pthread_mutex_lock(&s->lock);
    s->failed = rc != EEB_OK;
    s->refused |= rc == EEB_EINVAL; /* its token revoked, the run ended there: no use going on */
    if (s->failed)
        snprintf(s->err, sizeof s->err, "%s", err);
    pthread_mutex_unlock(&s->lock);
}

int run_stream_refused(struct run *r, char *why, size_t n)
{
    struct run_stream *s = r->stream;
    if (!s)
        return 0;
    pthread_mutex_lock(&s->lock);
    int refused = s->refused;
    if (refused)
        snprintf(why, n, "the server refused the run's stream: %s", s->err);
    pthread_mutex_unlock(&s->lock);
    return refused;
}

static void *stream_main(void *arg)
{
    struct run_stream *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += BEAT_NS;
        if (until.tv_nsec >= 1000000000L)
            until.tv_sec++, until.tv_nsec -= 1000000000L;
        while (!s->stop && !s->kick &&
               pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
            ;
        if (s->stop)
            break;
        s->kick = 0;
        pthread_mutex_unlock(&s->lock);
        send_new(s);
        pthread_mutex_lock(&s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void stream_free(struct run_stream *s)
{
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    eeb_rundb_close(s->db);
    eeb_client_free(&s->client);
    free(s);
}

int run_stream_start(struct run *r, char *err, size_t errlen)
{
    struct run_stream *s = calloc(1, sizeof *s);
    if (!s)
        return eeb_errf(err, errlen, EEB_ENOMEM, "the stream to the server: out of memory");
    s->server_run = r->out->server_run, s->run = r->id;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->wake, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->lock, NULL);
    int rc = eeb_client_clone(r->hooks->server, &s->client, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_open(r->c->db, EEB_RUNDB_READONLY, &s->db, err, errlen);
    if (rc == EEB_OK) {
        send_new(s); /* the origin and the first events, before fine-tuning */
        if (pthread_create(&s->thread, NULL, stream_main, s))
            rc = eeb_errf(err, errlen, EEB_ENOMEM, "the stream to the server: no thread");
    }
    if (rc) {
        stream_free(s);
        return rc;
    }
    r->stream = s;
    return EEB_OK;
}

void run_stream_kick(struct run *r)
{
    struct run_stream *s = r->stream;
    if (!s)
        return;
    if (r->sampler) /* the link written, to be read */
        eeb_sampler_sync(r->sampler);
    pthread_mutex_lock(&s->lock);
    s->kick = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

int run_stream_stop(struct run *r, char *err, size_t errlen)
{
    struct run_stream *s = r->stream;
    if (!s)
        return EEB_OK;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_signal(&s->wake);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    if (r->sampler) /* its events and samples are written by its own thread */
        eeb_sampler_sync(r->sampler);
    send_new(s); /* what the last beat missed */
    int rc = s->failed ? eeb_errf(err, errlen, EEB_EIO, "streaming the run to %s: %s",
                                  s->client.url, s->err)
                       : EEB_OK;
    stream_free(s);
    r->stream = NULL;
    return rc;
}
