/*
 * clock.c - the monotonic clock that orders events and power samples, and
 * the UTC clock recorded beside it for people.  Both in int64 nanoseconds,
 * which lasts until the year 2262.
 */
#include "eeb_common.h"

#include <stdio.h>
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

const char *eeb_utc_text(int64_t ns, char out[EEB_UTC_TEXT])
{
    time_t t = (time_t)(ns / 1000000000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, EEB_UTC_TEXT, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, EEB_UTC_TEXT, "?");
    return out;
}
