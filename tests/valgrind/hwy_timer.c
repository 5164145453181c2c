/*
 * hwy_timer.c - preloaded under valgrind only (make valgrind): libhwy,
 * which FFmpeg's JPEG XL decoder pulls into eeb, measures its timer's
 * resolution with RDTSCP while it loads.  On a CPU without RDTSCP,
 * valgrind's CPUID still offers it but its decoder refuses the
 * instruction, and every process dies of SIGILL before main.  This stands
 * in for that one function (interposed through libhwy's own PLT call);
 * eeb never uses libhwy's timer, so nothing eeb does is changed.
 */
#include <stdint.h>

/* hwy::platform::TimerResolution(), by its C++ symbol */
uint64_t _ZN3hwy8platform15TimerResolutionEv(void);

uint64_t _ZN3hwy8platform15TimerResolutionEv(void)
{
    return 1;
}
