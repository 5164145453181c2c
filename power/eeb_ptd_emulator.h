/*
 * eeb_ptd_emulator.h - a SPEC PTDaemon emulator that ships: a TCP server
 * speaking the protocol as eeb's ptd:// source (and MLPerf's power tooling)
 * speaks it, whose readings follow a load given as a constant, a recorded
 * trace, a shell command or this machine's CPU.  Organizers rehearse a
 * measured round with it where there is no analyzer, and eeb's end-to-end
 * tests meter a load that follows a team's fine-tune
 * (`eeb power emulate ptd`, docs/power.md).
 *
 * Two parts: the load (ptd_load.c), what the analyzer would read at a
 * time; and the daemon (ptd_emulator.c), which takes a reading of the load
 * once per update interval, holds the analyzer's ranges, evaluates each
 * reading's uncertainty against them, logs every command and reading as
 * PTDaemon's log does, and answers one connection at a time.
 */
#ifndef EEB_PTD_EMULATOR_H
#define EEB_PTD_EMULATOR_H

#include <stddef.h>
#include <stdio.h>

/* ---- the load ---- */

struct eeb_ptd_load;

/* A constant load of watts (>= 0). */
int eeb_ptd_load_constant(double watts, struct eeb_ptd_load **out, char *err, size_t errlen);

/*
 * A load recorded in the file at path: lines of "seconds watts" (blank
 * lines and '#' comments skipped; seconds since the emulator started,
 * increasing), or a trace replay: reads (eeb's CSV, another tool's CSV, a
 * PTDaemon log: seconds from its first reading).  Each reading's watts
 * hold until the next one's time; before the first, the first's.  Past
 * the last, its watts hold, or with loop the trace starts again (its
 * period: the last time plus the spacing before it).  Errors name the
 * file and line ("load.txt:3: expected 'seconds watts'").
 */
int eeb_ptd_load_file(const char *path, int loop, struct eeb_ptd_load **out, char *err,
                      size_t errlen);

/* A shell command (run by /bin/sh -c at each reading): the first number on
 * its standard output is the watts.  A command that fails, prints no
 * number, prints a negative one or runs longer than EEB_PTD_LOAD_COMMAND_S
 * makes that reading invalid, saying why. */
#define EEB_PTD_LOAD_COMMAND_S 5
int eeb_ptd_load_command(const char *command, struct eeb_ptd_load **out, char *err, size_t errlen);

/* This machine's CPU, spec "IDLE_W,BUSY_W": the busy fraction of all CPUs
 * since the reading before (/proc/stat), f, read as IDLE_W + f (BUSY_W -
 * IDLE_W). */
int eeb_ptd_load_cpu(const char *spec, struct eeb_ptd_load **out, char *err, size_t errlen);

/* The load's watts t_s seconds after the emulator started: EEB_OK, or an
 * error saying why this reading has none (the reading is invalid). */
int eeb_ptd_load_watts(struct eeb_ptd_load *l, double t_s, double *watts, char *err, size_t errlen);

/* Ends a reading under way (a command's, killed) and fails every one
 * after: for another thread than the one reading, which stops at once. */
void eeb_ptd_load_interrupt(struct eeb_ptd_load *l);

/* What the load is, one line (for Identify and the log). */
const char *eeb_ptd_load_describe(const struct eeb_ptd_load *l);

void eeb_ptd_load_free(struct eeb_ptd_load *l);

/* ---- the daemon ---- */

/*
 * Each reading's uncertainty, as a WT300-class analyzer's power accuracy:
 * EEB_PTD_EMU_READING_U of the reading plus EEB_PTD_EMU_RANGE_U of the
 * range (volts range x amps range; an autoranging quantity's range is its
 * reading), relative to the reading: 0.2 % autoranging, 0.21 % in the
 * ranges MLPerf's ranging pass sets, more in a range far above the load.
 * A reading over a fixed range (its amps or volts above it) is
 * EEB_PTD_EMU_OVER_RANGE_U (3 %, as a clipped reading's), and its log says
 * so; its value stays the load's, so that a rehearsal shows what the
 * uncertainty check catches and no more.  A reading of 0 W in a fixed
 * range has an uncertainty that cannot be evaluated ("unknown").
 */
#define EEB_PTD_EMU_READING_U    0.001
#define EEB_PTD_EMU_RANGE_U      0.001
#define EEB_PTD_EMU_OVER_RANGE_U 0.03
#define EEB_PTD_EMU_LINE_MAX     256 /* a client's command line, bytes; longer is an Error */

struct eeb_ptd_emulator_config {
    const char *bind;          /* the address to listen on (NULL: 127.0.0.1) */
    int port;                  /* 0: the kernel's choice */
    int interval_ms;           /* the update interval until a Go gives one (0: 1000) */
    double volts;              /* the line voltage (0: 230) */
    struct eeb_ptd_load *load; /* what it reads; the caller's, kept until stop */
    FILE *log;                 /* the log (NULL: stderr); the caller's */
};

struct eeb_ptd_emulator;

/* Listens, takes the first reading and serves on threads of its own;
 * EEB_EINVAL or EEB_EIO naming the address on error. */
int eeb_ptd_emulator_start(const struct eeb_ptd_emulator_config *cfg, struct eeb_ptd_emulator **out,
                           char *err, size_t errlen);

/* The port it listens on. */
int eeb_ptd_emulator_port(const struct eeb_ptd_emulator *e);

/* Where it listens, "ADDR:PORT" ("[ADDR]:PORT" for IPv6). */
const char *eeb_ptd_emulator_address(const struct eeb_ptd_emulator *e);

/* Readings taken so far. */
unsigned long eeb_ptd_emulator_readings(struct eeb_ptd_emulator *e);

/* Closes the connection and the listener, joins the threads, frees e. */
void eeb_ptd_emulator_stop(struct eeb_ptd_emulator *e);

#endif
