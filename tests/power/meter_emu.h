/*
 * meter_emu.h - network power meters for the tests: a Yokogawa WT300
 * speaking SCPI and a SPEC PTDaemon, each a thread serving one connection
 * at a time on 127.0.0.1 (at real-time priority where that is granted, as
 * an instrument's answers do not wait on the machine's load), with faults
 * on chosen readings.  Written from
 * the command sets the sources use (FACTS.md), not from the meters.  The
 * PTDaemon keeps its analyzer's ranges (RR; SR,V and SR,A, answered as
 * MLPerf's power checker expects: "Range V changed"), volts at 300 V and
 * amps autoranging until told otherwise, and answers Uncertainty with
 * what it is given.
 */
#ifndef METER_EMU_H
#define METER_EMU_H

enum meter_protocol { METER_SCPI, METER_PTD };

struct meter_emu_config {
    enum meter_protocol protocol;
    double volts, amps; /* the reading; watts = volts x amps */
    /* Faults, each on one reading (value queries counted from 1; 0: never). */
    unsigned odd_at; /* answered with odd_reply instead */
    const char *odd_reply;
    unsigned drop_at;  /* the connection closed instead of an answer */
    unsigned stall_at; /* answered stall_s seconds late */
    double stall_s;
    int not_ptd;               /* PTD: greet Hello as something else */
    const char *uncertainty;   /* PTD: the reply to Uncertainty ("Uncertainty,2.0": 2 %);
                                * NULL: an unknown command, as to a PTDaemon without it */
    unsigned uncertainty_from; /* PTD: that reply from the Nth Uncertainty on, and
                                * "Uncertainty,0.1" before (0: from the first) */
    unsigned amps_from;        /* PTD: from the Nth RL on, the load draws amps_later (0: never) */
    double amps_later;
};

struct meter_emu;

/* Listens on 127.0.0.1, a port of the kernel's choosing; fails the test on error. */
struct meter_emu *meter_emu_start(const struct meter_emu_config *cfg);
int meter_emu_port(const struct meter_emu *e);
/* Every command received so far, one per line (free it). */
char *meter_emu_log(struct meter_emu *e);
unsigned meter_emu_connections(struct meter_emu *e);
/* The load from now on (a run's stage changing what the meter reads). */
void meter_emu_set(struct meter_emu *e, double volts, double amps);
void meter_emu_stop(struct meter_emu *e);

#endif
