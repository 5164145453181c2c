/*
 * bench_rundb.c - how fast the run database stores power samples.
 *
 * The sampler's writer thread commits samples in batches; a 1 kHz meter
 * must be sustained with room to spare.  Baseline, in the same run: one
 * transaction per sample (what a naive writer would do).  Both with the
 * database's durability settings (WAL, synchronous=FULL) on the file
 * system the benchmark runs on.
 */
#include "bench.h"
#include "rundb/eeb_rundb.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#define SAMPLES 100000 /* per measurement */
#define SINGLES 300

static struct eeb_rundb *fresh(char *path, int64_t *run)
{
    char err[512];
    struct eeb_rundb *db;
    unlink(path);
    if (eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err)) {
        fprintf(stderr, "bench_rundb: %s\n", err);
        exit(1);
    }
    const struct eeb_run_new r = {.task = EEB_TASK_CLS,
                                  .backend = "bench",
                                  .t_max_s = 600,
                                  .p_max_w = 10,
                                  .rules_version = "1"};
    char uuid[37];
    if (eeb_rundb_run_create(db, &r, run, uuid, err, sizeof err)) {
        fprintf(stderr, "bench_rundb: %s\n", err);
        exit(1);
    }
    return db;
}

static void store(struct eeb_rundb *db, int64_t run, const struct eeb_sample *s, size_t n)
{
    char err[512];
    if (eeb_rundb_samples_add(db, run, "sim:", s, n, err, sizeof err)) {
        fprintf(stderr, "bench_rundb: %s\n", err);
        exit(1);
    }
}

/* Stores SAMPLES samples in commits of batch, on a 1 kHz clock that moves
 * on as a meter's does; samples per second. */
static double ingest(char *path, size_t batch)
{
    static struct eeb_sample s[SAMPLES];
    for (size_t i = 0; i < SAMPLES; i++)
        s[i] = (struct eeb_sample){(int64_t)i * 1000000,
                                   1700000000000000000 + (int64_t)i * 1000000,
                                   12.0,
                                   0.5,
                                   6.0 + 0.001 * (double)(i % 1000),
                                   0};
    int64_t run;
    struct eeb_rundb *db = fresh(path, &run);
    size_t n = batch == 1 ? SINGLES : SAMPLES;
    int64_t t0 = eeb_mono_ns();
    for (size_t i = 0; i < n; i += batch)
        store(db, run, s + i, batch);
    double rate = (double)n / bench_seconds_since(t0);
    eeb_rundb_close(db);
    return rate;
}

int main(void)
{
    char path[] = "/tmp/eeb-bench-rundb-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    double b1000[BENCH_REPS], b100[BENCH_REPS], single[BENCH_REPS];
    for (int rep = 0; rep < BENCH_REPS; rep++) {
        b1000[rep] = ingest(path, 1000);
        b100[rep] = ingest(path, 100);
        single[rep] = ingest(path, 1);
    }
    double b = bench_median(b1000, BENCH_REPS), b_small = bench_median(b100, BENCH_REPS),
           one = bench_median(single, BENCH_REPS);
    printf("run database, median of %d: %.0f samples/s in commits of 1000 (the writer's batch "
           "at 10 kHz), %.0f in commits of 100 (1 kHz), %.0f one commit each (%.1fx)\n",
           BENCH_REPS, b, b_small, one, b / one);
    bench_line("sqlite_ingest_rate", b, "samples/s");
    bench_line("sqlite_ingest_rate_batch100", b_small, "samples/s");
    bench_line("rundb_samples_single_commit", one, "samples/s");
    bench_line("rundb_batched_vs_single", b / one, "x");
    bench_remove_db(path);
    return 0;
}
