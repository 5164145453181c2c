/*
 * bench.h - what eeb's benchmarks share: a median of repeated timings and
 * the machine-readable "BENCH <name> <value> <unit>" line.
 */
#ifndef EEB_BENCH_H
#define EEB_BENCH_H

#include "common/eeb_common.h"
#include "fpga/emu/eeb_emu_gemm.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_REPS 5

static inline int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n doubles (sorts them). */
static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static inline void bench_line(const char *name, double value, const char *unit)
{
    printf("BENCH %s %.6g %s\n", name, value, unit);
    fflush(stdout);
}

/* Removes an SQLite database and its WAL and shared-memory files. */
static inline void bench_remove_db(const char *path)
{
    char aux[512];
    remove(path);
    snprintf(aux, sizeof aux, "%s-wal", path);
    remove(aux);
    snprintf(aux, sizeof aux, "%s-shm", path);
    remove(aux);
}

static inline double bench_seconds_since(int64_t t0_ns)
{
    return (double)(eeb_mono_ns() - t0_ns) / 1e9;
}

/* The resident memory of process pid (0: this one) now, KiB; 0 if /proc
 * cannot tell. */
static inline double bench_rss_kib(int pid)
{
    char path[64];
    snprintf(path, sizeof path, pid ? "/proc/%d/statm" : "/proc/self/statm", pid);
    FILE *f = fopen(path, "r");
    unsigned long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * 4.0; /* 4 KiB pages */
}

/* Sleeps seconds, reading process pid's memory (0: this one's) every
 * second: its growth, KiB, from the end of the first tenth (allocations
 * settled) to the end, and over the second half alone (a leak grows
 * there too; a cache filling up does not); its peak in peak_kib. */
static inline void bench_watch_rss(int pid, double seconds, double growth[2], double *peak_kib)
{
    double settled = 0, half = 0, last = 0, peak = 0;
    int64_t t0 = eeb_mono_ns();
    for (double t = 0; t < seconds;) {
        double step = seconds - t < 1 ? seconds - t : 1;
        struct timespec ts = {(time_t)step, (long)((step - (double)(time_t)step) * 1e9)};
        nanosleep(&ts, NULL);
        t = bench_seconds_since(t0);
        last = bench_rss_kib(pid);
        peak = last > peak ? last : peak;
        if (!settled && t >= seconds / 10)
            settled = last;
        if (!half && t >= seconds / 2)
            half = last;
    }
    growth[0] = settled ? last - settled : 0;
    growth[1] = half ? last - half : 0;
    if (peak_kib)
        *peak_kib = peak;
}

/* The CPU's model name (for a measurement's header line). */
static inline void bench_cpu_model(char *out, size_t n)
{
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(out, n, "unknown CPU");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "model name", 10) == 0 && strchr(line, ':')) {
            snprintf(out, n, "%s", strchr(line, ':') + 2);
            out[strcspn(out, "\n")] = '\0';
            break;
        }
    if (f)
        fclose(f);
}

/* ---- this CPU's int8 peak, measured ---- */

#define PEAK_CHAINS 24 /* independent accumulators: latency 4-5 x up to 2 ports, with room */
#define PEAK_UNROLL 4  /* blocks of 24 per loop trip, so the branch is noise */

/* One block: vpdpbusd into zmm0..zmm23 from the operands in zmm30/zmm31. */
#define VNNI_BLOCK                                                                                 \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm0\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm1\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm2\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm3\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm4\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm5\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm6\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm7\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm8\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm9\n\t"                  \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm10\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm11\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm12\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm13\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm14\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm15\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm16\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm17\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm18\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm19\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm20\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm21\n\t"                \
    "vpdpbusd %%zmm31, %%zmm30, %%zmm22\n\t vpdpbusd %%zmm31, %%zmm30, %%zmm23\n\t"

/* The loop is assembly on fixed registers: written in C, compilers spill
 * some of 24 accumulators to the stack inside the loop (gcc 12 did), and
 * the "peak" then measures the spills.  Nothing but vpdpbusd, a decrement
 * and a branch runs in it. */
/* GOP/s of vpdpbusd alone on this core (call only where AVX-512 VNNI exists). */
__attribute__((target("avx512f,avx512vnni"))) static inline double bench_vnni_peak_gops(void)
{
    long trips = 1000000; /* 96 M instructions: ~20-50 ms */
    const long iters = trips;
    int64_t t0 = eeb_mono_ns();
    __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
                     "vpternlogd $0xff, %%zmm31, %%zmm31, %%zmm31\n\t"
                     "1:\n\t" VNNI_BLOCK VNNI_BLOCK VNNI_BLOCK VNNI_BLOCK "dec %0\n\t"
                     "jnz 1b\n\t"
                     : "+r"(trips)
                     :
                     : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",
                       "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm30",
                       "xmm31");
    double s = bench_seconds_since(t0);
    return (double)iters * PEAK_UNROLL * PEAK_CHAINS * 16 * 4 * 2 / s / 1e9;
}

/* GOP/s of tdpbssd alone on this core: four independent C tiles (0-3)
 * from two A (4, 5) and two B tiles (6, 7) that never change, as the
 * GEMM's inner loop without its loads (call only where the GEMM's best
 * instruction set is AMX: the process then has the kernel's leave). */
__attribute__((target("amx-tile,amx-int8"))) static inline double bench_amx_peak_gops(void)
{
    eeb_emu_gemm_amx_tiles(); /* the GEMM's shapes; their contents do not matter to the rate */
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_zero(4);
    _tile_zero(5);
    _tile_zero(6);
    _tile_zero(7);
    const long trips = 200000; /* 3.2 M tdpbssd: ~20-50 ms */
    int64_t t0 = eeb_mono_ns();
    for (long i = 0; i < trips; i++)
        for (int u = 0; u < 4; u++) {
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_dpbssd(2, 5, 6);
            _tile_dpbssd(3, 5, 7);
        }
    double s = bench_seconds_since(t0);
    _tile_release();
    return (double)trips * 16 * 16 * 16 * 64 * 2 / s / 1e9;
}

#endif
