/*
 * power_int.h - shared inside power/: the built-in sources' tables and the
 * argument parsing they have in common.
 */
#ifndef POWER_INT_H
#define POWER_INT_H

#include "eeb_power.h"

extern const struct eeb_power_source_ops power_sim_ops, power_replay_ops, power_faulty_ops;

/* Parses "key=value,key=value" (args may be empty): calls fn for each
 * pair; fn returns EEB_OK or an error it wrote.  uri names the source in
 * messages. */
int power_each_option(const char *uri, const char *args,
                      int (*fn)(void *arg, const char *key, const char *value, char *err,
                                size_t errlen),
                      void *arg, char *err, size_t errlen);

/* The whole of text as a finite number, or EEB_EINVAL naming uri and key. */
int power_number(const char *uri, const char *key, const char *text, double *out, char *err,
                 size_t errlen);

/* ---- the sample ring (ring.c) ---- */

#include <stdalign.h>
#include <stdatomic.h>

/*
 * A bounded lock-free queue for one producer (the sampler thread) and one
 * consumer (the writer thread).  head counts pushes, tail pops; each is
 * written by one side only and read by the other with acquire/release, so
 * a slot is never read before it is written nor overwritten before it is
 * read.  The two counters sit on their own cache lines.
 */
struct power_ring {
    alignas(64) _Atomic uint64_t head;
    alignas(64) _Atomic uint64_t tail;
    alignas(64) struct eeb_sample *slot;
    uint64_t mask; /* capacity - 1, capacity a power of two */
};

/* EEB_EINVAL unless cap is a power of two >= 2; EEB_ENOMEM. */
int power_ring_init(struct power_ring *r, size_t cap);
void power_ring_free(struct power_ring *r);
/* Producer: 1 if pushed, 0 if the ring is full. */
int power_ring_push(struct power_ring *r, const struct eeb_sample *s);
/* Consumer: up to max samples into out, oldest first; how many. */
size_t power_ring_pop(struct power_ring *r, struct eeb_sample *out, size_t max);

#endif
