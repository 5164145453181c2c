/*
 * eeb_qualify.h - qualifying a board's own power sensor (hwmon:, rapl:)
 * against a reference analyzer (ptd://, scpi://), as MLPerf Training's
 * power rules let a submitter use a meter that is not SPEC-grade: both
 * measure the same rail at the same time, at idle and under two loads, in
 * windows that do not overlap; per phase, the Olympic mean of each meter's
 * window means (the best and worst dropped) must agree within 5 %.
 *
 * Both sources are read by one loop at the same instants, every
 * 1 / rate_hz: on CLOCK_MONOTONIC deadlines for live meters, or, when both
 * are replayed traces (replay:), on a simulated clock that never sleeps,
 * the phases then being consecutive spans of the traces from their start
 * (idle, load 1, load 2).
 *
 * A verdict can be kept in a run database, by board and rail, in the table
 * qualifications (its own set of tables: rundb/eeb_rundb_tables.h), where
 * the leaderboard looks up whether a run's sensor was qualified.
 *
 * Sections: qualifying; the verdict kept.
 */
#ifndef EEB_QUALIFY_H
#define EEB_QUALIFY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* ---- qualifying ---- */

#define EEB_QUALIFY_PHASES      3    /* idle, load 1, load 2 */
#define EEB_QUALIFY_MAX_WINDOWS 100  /* per phase */
#define EEB_QUALIFY_TOLERANCE   0.05 /* MLPerf Training's "Target 5% Accuracy" */

struct eeb_qualify_config {
    const char *reference; /* URI of the trusted meter */
    const char *candidate; /* URI of the sensor qualified */
    int windows;           /* per phase, 3 .. EEB_QUALIFY_MAX_WINDOWS (default 5) */
    double window_s;       /* each window's length, seconds (default 60) */
    double rate_hz;        /* both sources read this often, 1 .. 100 (default 10) */
    double tolerance;      /* |cand - ref| / ref allowed in a phase (default 0.05) */
    /* Live sources only: the shell commands (sh -c) of load 1 and load 2,
     * started before their phase and stopped (SIGTERM to their process
     * group, SIGKILL 5 s later) after it; their stdout goes to stderr.  NULL:
     * the operator runs the load. */
    const char *load[2];
    /* optional: NULL means nobody is told.  Live sources only: called as
     * each phase is about to start (its load, if eeb runs it, started);
     * phase is 0 (idle), 1 or 2, load the command or NULL.  It may wait for
     * the operator. */
    void (*phase_begin)(void *arg, int phase, const char *name, const char *load);
    void *arg;
    /* optional: NULL means never.  Set (by a signal handler) to stop: the
     * loads are stopped and no verdict is given. */
    const volatile sig_atomic_t *stop;
};

/* windows 5, window_s 60, rate_hz 10, tolerance 0.05, the rest NULL. */
void eeb_power_qualify_default(struct eeb_qualify_config *cfg);

struct eeb_qualify_phase {
    const char *name;                       /* "idle", "load 1", "load 2" */
    double ref_w[EEB_QUALIFY_MAX_WINDOWS];  /* each window's mean power (trapezoidal) */
    double cand_w[EEB_QUALIFY_MAX_WINDOWS]; /* the same, of the candidate */
    double ref_mean_w, cand_mean_w;         /* the Olympic means of the windows */
    double difference;                      /* (cand - ref) / ref, signed */
    int within;                             /* |difference| <= tolerance */
};

struct eeb_qualify_result {
    struct eeb_qualify_phase phase[EEB_QUALIFY_PHASES];
    int windows;      /* per phase, as configured */
    double window_s;  /* as configured */
    double rate_hz;   /* as configured */
    double tolerance; /* as configured */
    int simulated;    /* both sources replayed: read on a simulated clock */
    int pass;         /* every phase within the tolerance */
    char failed[32];  /* the phases that are not, "load 2" ("" when pass) */
};

/*
 * Opens both sources, runs the three phases and judges them into out:
 * EEB_OK whatever the verdict (out->pass).  Errors, naming the phase, the
 * window and the source: EEB_EINVAL for a configuration out of range, a
 * live source with a replayed one, loads given for replays, or a reference
 * that reads no power; a source's open error; a failed read (a replay past
 * its trace's end, say: every reading counts in a qualification);
 * EEB_EDEVICE for a window a meter left without readings (the validity
 * rules of eeb_power_valid) or a load that exited before its phase ended;
 * EEB_ENODATA when cfg->stop was set.
 */
int eeb_power_qualify(const struct eeb_qualify_config *cfg, struct eeb_qualify_result *out,
                      char *err, size_t errlen);

/* The result as JSON, compact, with cfg's sources: {"reference", "candidate",
 * "verdict" ("pass"/"fail"), "tolerance", "windows", "window_s", "rate_hz",
 * "simulated", "phases": [{"phase", "reference_w", "candidate_w",
 * "difference", "within", "windows": {"reference_w": [...], "candidate_w":
 * [...]}}]}; newly allocated (free it), NULL when out of memory. */
char *eeb_power_qualify_json(const struct eeb_qualify_config *cfg,
                             const struct eeb_qualify_result *r);

/* ---- the verdict kept ---- */

/*
 * Appends the verdict of r to the table qualifications of the run database
 * at db_path (created if missing, its tables migrated): board, rail, the
 * two URIs, "pass" or "fail", the per-phase figures as JSON and the UTC
 * time.  *id (if not NULL) is its row.  Earlier verdicts of the same board
 * and rail stay; the latest is the one that counts.
 */
int eeb_power_qualify_store(const char *db_path, const char *board, const char *rail,
                            const struct eeb_qualify_config *cfg,
                            const struct eeb_qualify_result *r, int64_t *id, char *err,
                            size_t errlen);

/*
 * Whether the rail of board is qualified, by the latest verdict kept in the
 * database at db_path, read-only: *verdict 1 (pass), 0 (fail) or -1 (none
 * kept, or a database without the table); *utc_ns (if not NULL) its time,
 * 0 for none.  EEB_OK, or the database's error (a missing file, a table
 * written by a newer eeb).
 */
int eeb_power_qualified(const char *db_path, const char *board, const char *rail, int *verdict,
                        int64_t *utc_ns, char *err, size_t errlen);

#endif
