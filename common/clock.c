/*
 * clock.c - the monotonic clock that orders events and power samples, and
 * the UTC clock recorded beside it for people.  Both in int64 nanoseconds,
 * which lasts until the year 2262.
 */
#include "eeb_common.h"

#include <time.h>

static int64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t eeb_mono_ns(void)
{
    return read_ns(CLOCK_MONOTONIC);
}

int64_t eeb_utc_ns(void)
{
    return read_ns(CLOCK_REALTIME);
}
