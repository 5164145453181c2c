/*
 * eeb_display.h - `eeb run`'s live progress on stderr: one line redrawn in
 * place on a terminal (sized to its width), a line every few seconds
 * otherwise, and a stream for other messages that never lands on the
 * live line's tail.
 */
#ifndef EEB_DISPLAY_H
#define EEB_DISPLAY_H

#include "eeb_run.h"

#include <stddef.h>
#include <stdio.h>

/* A reading older than this is shown as missing, not as the last watts. */
#define EEB_DISPLAY_STALE_S 2.0

struct eeb_display {
    FILE *out;     /* where the lines go (stderr) */
    int tty;       /* redraw one line in place */
    int width;     /* the terminal's columns */
    int shown;     /* a live line is on screen, the cursor at its end */
    int state;     /* the stage (enum eeb_run_state) of that line */
    FILE *message; /* eeb_display_open's stream for other messages */
};

/* Sets d up on out; a terminal's width from the terminal, else $COLUMNS,
 * else 80.  Opens d->message: text written there first clears a live line
 * on screen, then goes to out.  Returns 0, or -1 (errno) when the stream
 * cannot be made. */
int eeb_display_open(struct eeb_display *d, FILE *out);

/* Ends a live line on screen with a newline and closes d->message. */
void eeb_display_close(struct eeb_display *d);

/* The progress hook of struct eeb_run_hooks (arg: the display). */
void eeb_display_progress(const struct eeb_run_progress *p, void *arg);

/* The line for p in at most width - 1 columns (the last column is left free
 * so that a terminal never wraps): what does not fit is left out, least
 * important first.  Returns buf. */
char *eeb_display_line(const struct eeb_run_progress *p, int width, char *buf, size_t len);

#endif
