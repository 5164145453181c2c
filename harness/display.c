/*
 * display.c - `eeb run`'s live progress (eeb_display.h).
 *
 * Sections: the line (what fits the width), the message stream (a
 * fopencookie stream that clears the live line before its text), the hook.
 */
#include "eeb_display.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* ---- the line ---- */

enum { PART_LEN = 64, MAX_PARTS = 8 };

struct part {
    char text[PART_LEN];
    int rank; /* 0 is kept first */
};

static void power_part(const struct eeb_run_progress *p, char *buf, size_t len)
{
    if (!(p->reading_age_s <= EEB_DISPLAY_STALE_S))
        snprintf(buf, len, isnan(p->reading_age_s) ? "no reading yet" : "no reading for %.0f s",
                 p->reading_age_s);
    else
        snprintf(buf, len, "%.2f W / P_max %g W%s", p->watts, p->p_max_w,
                 p->over_pmax ? " OVER" : "");
}

/* The fine-tune line's parts in display order, each with its rank. */
static size_t finetune_parts(const struct eeb_run_progress *p, struct part *parts)
{
    size_t n = 0;
    struct part *q;
    q = &parts[n++], q->rank = 0, snprintf(q->text, PART_LEN, "fine-tune");
    q = &parts[n++], q->rank = 6, snprintf(q->text, PART_LEN, "epoch %d/%d", p->epoch, p->epochs);
    q = &parts[n++], q->rank = 3;
    if (p->steps > 0)
        snprintf(q->text, PART_LEN, "step %ld/%ld", p->step, p->steps);
    else
        snprintf(q->text, PART_LEN, "step %ld", p->step);
    q = &parts[n++], q->rank = 1;
    if (p->modeled) /* a device faster than its emulator: milliseconds count */
        snprintf(q->text, PART_LEN, "%.3f/%g s modeled", p->elapsed_s, p->t_max_s);
    else
        snprintf(q->text, PART_LEN, "%.1f/%g s", p->elapsed_s, p->t_max_s);
    q = &parts[n++], q->rank = 2, power_part(p, q->text, PART_LEN);
    q = &parts[n++], q->rank = 4, snprintf(q->text, PART_LEN, "%.1f J", p->joules);
    q = &parts[n++], q->rank = 5;
    if (p->step > 0) /* no step has reported a loss yet */
        snprintf(q->text, PART_LEN, "loss %.4f", p->loss);
    else
        snprintf(q->text, PART_LEN, "loss -");
    return n;
}

char *eeb_display_line(const struct eeb_run_progress *p, int width, char *buf, size_t len)
{
    struct part parts[MAX_PARTS];
    size_t n;
    if (p->state == EEB_RUN_FINETUNE) {
        n = finetune_parts(p, parts);
    } else {
        n = 1, parts[0].rank = 0;
        snprintf(parts[0].text, PART_LEN, "test  predicted %llu/%llu items",
                 (unsigned long long)p->tested, (unsigned long long)p->test_items);
    }
    /* Take parts by rank while they fit, then write the taken in order. */
    size_t room = width > 1 ? (size_t)width - 1 : 1, used = 0;
    int taken[MAX_PARTS] = {0};
    for (int rank = 0; rank < MAX_PARTS; rank++)
        for (size_t i = 0; i < n; i++) {
            size_t need = strlen(parts[i].text) + (used ? 2 : 0);
            if (parts[i].rank == rank && used + need <= room)
                taken[i] = 1, used += need;
        }
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (taken[i] && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "  " : "", parts[i].text);
    if (!used && len > room) /* even the first part is too wide: cut it */
        snprintf(buf, room + 1, "%s", parts[0].text);
    return buf;
}

/* ---- the message stream ---- */

/* Clears a live line on screen, so that what follows starts a line. */
static void clear_live(struct eeb_display *d)
{
    if (d->shown)
        fputs("\r\033[K", d->out);
    d->shown = 0;
}

static ssize_t message_write(void *arg, const char *buf, size_t n)
{
    struct eeb_display *d = arg;
    clear_live(d);
    size_t put = fwrite(buf, 1, n, d->out);
    fflush(d->out);
    return (ssize_t)put; /* 0 is fopencookie's error */
}

static int terminal_width(FILE *out)
{
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *columns = getenv("COLUMNS");
    int c = columns ? atoi(columns) : 0;
    return c > 0 ? c : 80;
}

int eeb_display_open(struct eeb_display *d, FILE *out)
{
    *d = (struct eeb_display){.out = out, .tty = isatty(fileno(out))};
    d->width = terminal_width(out);
    d->message = fopencookie(d, "w", (cookie_io_functions_t){.write = message_write});
    if (!d->message)
        return -1;
    setvbuf(d->message, NULL, _IOLBF, 0); /* a message reaches the screen whole */
    return 0;
}

void eeb_display_close(struct eeb_display *d)
{
    if (d->message)
        fclose(d->message);
    d->message = NULL;
    if (d->shown)
        fputc('\n', d->out);
    d->shown = 0;
}

/* ---- the hook ---- */

void eeb_display_progress(const struct eeb_run_progress *p, void *arg)
{
    struct eeb_display *d = arg;
    char line[512];
    eeb_display_line(p, d->tty ? d->width : (int)sizeof line, line, sizeof line);
    if (d->tty) {
        if (d->shown && (int)p->state != d->state)
            fputc('\n', d->out); /* a stage's last line stays on screen */
        fprintf(d->out, "\r%s\033[K", line);
        d->shown = 1;
        d->state = (int)p->state;
    } else {
        fprintf(d->out, "%s\n", line);
    }
    fflush(d->out);
}
