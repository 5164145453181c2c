/*
 * stream.c - whether an official run's record reached the server as the
 * run went: from the fine-tune's first link to its last, each link must
 * arrive within the stream's allowance of the moment the run's own clock
 * says it was written, and none arrive before it (a record made first and
 * sent after).  Both sides' clocks are read as differences from the
 * fine-tune's first link, so neither needs the other's time of day.
 *
 * And the stream may not be held back as a whole: the server told the run
 * to begin (POST /begin) at a time of its clock, before the run wrote its
 * begin, and each link arrives after it was written.  The run's clock is
 * thus placed on the server's between two bounds, the begin's and the
 * least delay of any link; a stream held back by D seconds moves the
 * second by D, and more than SYNC_S apart the run is invalid.
 */
#include "server_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define SYNC_S 2.0 /* the most the two bounds of the run's clock may be apart */

/* What the walk has seen. */
struct stream_walk {
    double allowance_s;
    const int64_t *restarts; /* when the server started again, UTC ns, in order */
    int64_t begun;           /* when it said begin (0: never) */
    size_t nrestarts;
    int64_t least_delay;       /* least (arrival - written) over the fine-tune's links */
    int64_t begin_at, begin_t; /* the fine-tune_begin link: arrival, the run's time */
    int64_t end_t;             /* the finetune_end link's, the run's time */
    int64_t last_at, last_seq; /* the link before, in the window */
    int in_window, ended;
    char *why; /* the first fault, "" while none */
    size_t whylen;
};

/* The first fault is the one said; the walk goes on to the window's end,
 * which the server's meter needs whatever the verdict. */
__attribute__((format(printf, 2, 3))) static void fault(struct stream_walk *w, const char *fmt, ...)
{
    if (w->why[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->why, w->whylen, fmt, ap);
    va_end(ap);
}

/* The run's own time of link l: its event's, or its last sample's. */
static int64_t written_at(const struct eeb_rundb_link *l)
{
    return l->kind == EEB_LINK_EVENT ? l->event.t_mono_ns
           : l->nsamples             ? l->samples[l->nsamples - 1].t_mono_ns
                                     : 0;
}

/* The latest restart of the server's in (from, to], or 0: what arrived
 * after one is late from it, not from before (the server was not there to
 * take it). */
static int64_t restart_in(const struct stream_walk *w, int64_t from, int64_t to)
{
    int64_t at = 0;
    for (size_t i = 0; i < w->nrestarts; i++)
        if (w->restarts[i] > from && w->restarts[i] <= to)
            at = w->restarts[i];
    return at;
}

static int stream_link(void *arg, const struct eeb_rundb_link *l)
{
    struct stream_walk *w = arg;
    if (w->ended || l->kind == EEB_LINK_ORIGIN)
        return 0;
    int is = l->kind == EEB_LINK_EVENT;
    if (!w->in_window) {
        if (!is || strcmp(l->event.kind, EEB_EVENT_FINETUNE_BEGIN))
            return 0;
        w->in_window = 1;
        w->begin_at = w->last_at = l->at_utc_ns, w->begin_t = l->event.t_mono_ns;
        /* a begin that reached a server started again since it said begin
         * came late: the fine-tune's time is counted from that begin */
        if (w->begun && restart_in(w, w->begun, l->at_utc_ns))
            w->begin_at = w->begun;
        w->least_delay = l->at_utc_ns - l->event.t_mono_ns;
        w->last_seq = l->seq;
        return 0;
    }
    if (l->at_utc_ns - written_at(l) < w->least_delay)
        w->least_delay = l->at_utc_ns - written_at(l);
    double arrived = (double)(l->at_utc_ns - w->begin_at) / 1e9;
    double written = (double)(written_at(l) - w->begin_t) / 1e9;
    /* a restart of the server's since the link before, or since the run
     * wrote this one: the allowance counts from it */
    int64_t restart = restart_in(w, w->last_at, l->at_utc_ns);
    double gap = (double)(l->at_utc_ns - (restart ? restart : w->last_at)) / 1e9;
    int64_t written_here = w->begin_at + (written_at(l) - w->begin_t);
    if ((restart = restart_in(w, written_here, l->at_utc_ns)))
        arrived = written + (double)(l->at_utc_ns - restart) / 1e9;
    /* the clocks' rates differ by parts per million; a second spares it */
    if (arrived < written - 1 - 1e-3 * written)
        fault(w,
              "link %lld arrived %.3f s into fine-tuning, but the run wrote it at %.3f s: the "
              "record was made before it was sent, not streamed as the run went",
              (long long)l->seq, arrived, written);
    else if (gap > w->allowance_s)
        fault(w,
              "the stream stopped for %.3f s during fine-tuning (links %lld to %lld); the "
              "server allows %g s",
              gap, (long long)w->last_seq, (long long)l->seq, w->allowance_s);
    else if (arrived - written > w->allowance_s)
        fault(w, "link %lld arrived %.3f s after the run wrote it; the server allows %g s",
              (long long)l->seq, arrived - written, w->allowance_s);
    w->last_at = l->at_utc_ns, w->last_seq = l->seq;
    w->ended = is && strcmp(l->event.kind, EEB_EVENT_FINETUNE_END) == 0;
    if (w->ended)
        w->end_t = l->event.t_mono_ns;
    return 0;
}

/* The run's clock against the server's: the begin the server gave and the
 * least delay of the fine-tune's links, each a bound of the offset. */
static void placed(const struct stream_walk *w, int64_t begun_utc_ns, char *why, size_t whylen)
{
    if (!begun_utc_ns) {
        snprintf(why, whylen,
                 "the run never asked the server to begin its fine-tune (POST /begin)");
        return;
    }
    double apart = (double)(w->least_delay - (begun_utc_ns - w->begin_t)) / 1e9;
    if (apart > SYNC_S)
        snprintf(why, whylen,
                 "the stream was held back: every link of the fine-tune arrived at least %.3f s "
                 "after the server said begin and the run wrote it; the server allows %g s",
                 apart, SYNC_S);
    else if (apart < -SYNC_S)
        snprintf(why, whylen,
                 "the run wrote its fine-tune's begin %.3f s before the server said begin", -apart);
}

int eeb_srv_stream_check(const char *db_path, int64_t run, int64_t begun_utc_ns, double allowance_s,
                         const int64_t *restarts, size_t nrestarts, struct eeb_srv_window *window,
                         char *why, size_t whylen, char *err, size_t errlen)
{
    struct eeb_rundb *db;
    struct stream_walk w = {.allowance_s = allowance_s,
                            .restarts = restarts,
                            .begun = begun_utc_ns,
                            .nrestarts = nrestarts,
                            .why = why,
                            .whylen = whylen};
    why[0] = '\0';
    *window = (struct eeb_srv_window){0};
    int rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc)
        return rc;
    rc = eeb_rundb_links_each(db, run, 0, stream_link, &w, err, errlen);
    eeb_rundb_close(db);
    if (rc)
        return rc;
    if (w.ended) /* the run's clock placed on the server's: the least delay */
        *window = (struct eeb_srv_window){.whole = 1,
                                          .begin_utc_ns = w.begin_t + w.least_delay,
                                          .end_utc_ns = w.end_t + w.least_delay};
    if (!w.ended)
        fault(&w, "the stream holds no whole fine-tune (from %s to %s)", EEB_EVENT_FINETUNE_BEGIN,
              EEB_EVENT_FINETUNE_END);
    else if (!why[0])
        placed(&w, begun_utc_ns, why, whylen);
    return EEB_OK;
}
