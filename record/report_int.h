/*
 * report_int.h - shared between the report's files (record/report*.c):
 * the "System under test" section (report_sut.c), gathered from the run's
 * events while report.c walks them, and written after the plots.
 */
#ifndef REPORT_INT_H
#define REPORT_INT_H

#include "rundb/eeb_config_record.h"

#include <jansson.h>
#include <stdio.h>

/* What the record says of the system under test; zero it, then
 * report_sut_free it. */
struct report_sut {
    json_t *deployed;    /* the "deployed" event's payload, NULL if none */
    json_t *stopped;     /* the "stopped" event's (the SUT's counters), NULL if none */
    long long eeb_steps; /* the most training steps eeb's own events count */
    int have_eeb_steps;  /* an event gave eeb_steps */
};

/* Takes what the section needs from one event (payload: its JSON, or
 * NULL); the payload stays the caller's. */
void report_sut_event(struct report_sut *s, const char *kind, json_t *payload);

/* The section: <h2>, the table id="sut" and, when the SUT's step count
 * disagrees with eeb's, the note id="sut-mismatch".  cfg is the run's
 * configuration as read; backend, the run's row's (if cfg has none). */
void report_sut_section(FILE *f, const struct report_sut *s, const struct eeb_config_record *cfg,
                        const char *backend);

void report_sut_free(struct report_sut *s);

#endif
