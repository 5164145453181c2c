/*
 * ring.c - the sampler's single-producer, single-consumer sample ring
 * (power_int.h says why it needs no lock).
 */
#include "power_int.h"

#include <stdlib.h>
#include <string.h>

int power_ring_init(struct power_ring *r, size_t cap)
{
    if (cap < 2 || (cap & (cap - 1)))
        return EEB_EINVAL;
    memset(r, 0, sizeof *r);
    r->slot = malloc(cap * sizeof *r->slot);
    if (!r->slot)
        return EEB_ENOMEM;
    r->mask = cap - 1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    return EEB_OK;
}

void power_ring_free(struct power_ring *r)
{
    free(r->slot);
    r->slot = NULL;
}

int power_ring_push(struct power_ring *r, const struct eeb_sample *s)
{
    uint64_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail > r->mask)
        return 0;
    r->slot[head & r->mask] = *s;
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return 1;
}

size_t power_ring_pop(struct power_ring *r, struct eeb_sample *out, size_t max)
{
    uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    size_t n = head - tail < max ? (size_t)(head - tail) : max;
    for (size_t i = 0; i < n; i++)
        out[i] = r->slot[(tail + i) & r->mask];
    atomic_store_explicit(&r->tail, tail + n, memory_order_release);
    return n;
}
