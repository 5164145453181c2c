/*
 * pool.c - the emulator's worker threads: a fixed set started once, woken
 * per parallel loop.  A loop is `parts` independent pieces of work handed
 * out by an atomic counter; the caller works too and returns when all are
 * done.  Results never depend on which worker ran which part.
 */
#include "emu_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct emu_pool {
    int n; /* workers including the caller */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    unsigned generation;
    int quit, busy;
    emu_part_fn *fn;
    void *ctx;
    int parts;
    atomic_int next;
};

static void work(struct emu_pool *p, int worker)
{
    int k;
    while ((k = atomic_fetch_add(&p->next, 1)) < p->parts)
        p->fn(p->ctx, k, worker);
}

struct start_arg {
    struct emu_pool *pool;
    int worker;
};

static void *worker_main(void *arg)
{
    struct start_arg *a = arg;
    struct emu_pool *p = a->pool;
    int worker = a->worker;
    free(a);
    unsigned seen = 0; /* not p->generation: a loop may start before this thread does */
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->generation == seen && !p->quit)
            pthread_cond_wait(&p->start, &p->mu);
        if (p->quit)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        work(p, worker);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

struct emu_pool *emu_pool_new(int threads)
{
    struct emu_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = threads < 1 ? 1 : threads;
    p->threads = calloc((size_t)p->n, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    for (int i = 1; i < p->n; i++) {
        struct start_arg *a = malloc(sizeof *a);
        if (a)
            a->pool = p, a->worker = i;
        if (!a || pthread_create(&p->threads[i], NULL, worker_main, a)) {
            free(a);
            p->n = i; /* run with the workers that started */
            break;
        }
    }
    return p;
}

void emu_pool_free(struct emu_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p);
}

int emu_pool_threads(const struct emu_pool *p)
{
    return p->n;
}

void emu_pool_run(struct emu_pool *p, int parts, emu_part_fn *fn, void *ctx)
{
    if (parts <= 0)
        return;
    if (p->n == 1 || parts == 1) {
        for (int k = 0; k < parts; k++)
            fn(ctx, k, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn, p->ctx = ctx, p->parts = parts;
    atomic_store(&p->next, 0);
    p->busy = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    work(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
