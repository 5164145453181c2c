/*
 * schedule.c - whether a run fine-tuned as the server saw it, before its
 * test inputs leave the server and before its labels count for anything.
 * The steps its events say are held to its schedule: on the modeled clock
 * a step is what T and E are counted in, so a run's word for how many it
 * took would be its word for its score; the server counts them itself at
 * registration (its epochs of the fine-tune set in batches, cut at T_max).
 * On any clock a fine-tune takes one step at least.  An official run's
 * stream must also have reached the server as it went (stream.c).
 */
#include "server_int.h"

#include "record/eeb_record.h"
#include "rundb/eeb_rundb.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* What the run's events say of its steps. */
struct steps_walk {
    int64_t complete; /* the complete event's count (-1: none) */
    int stopped;      /* an abort or error event: the run stopped short */
    int64_t most;     /* the largest count any train or epoch event gives */
    int64_t most_seq; /* the link that gave it */
};

static int64_t payload_step(const char *payload)
{
    json_t *o = payload ? json_loads(payload, 0, NULL) : NULL;
    json_t *v = json_object_get(o, EEB_EVENT_KEY_STEP);
    int64_t step = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
    json_decref(o);
    return step;
}

static int read_steps(void *arg, const struct eeb_rundb_link *l)
{
    struct steps_walk *w = arg;
    const char *kind = l->event.kind;
    if (l->kind != EEB_LINK_EVENT || !kind)
        return 0;
    if (strcmp(kind, EEB_EVENT_COMPLETE) == 0) {
        w->complete = payload_step(l->event.payload);
    } else if (strcmp(kind, EEB_EVENT_ABORT) == 0 || strcmp(kind, EEB_EVENT_ERROR) == 0) {
        w->stopped = 1;
    } else if (strcmp(kind, EEB_EVENT_TRAIN) == 0 || strcmp(kind, EEB_EVENT_EPOCH_END) == 0 ||
               strcmp(kind, EEB_EVENT_EPOCH_PARTIAL) == 0) {
        int64_t step = payload_step(l->event.payload);
        if (step > w->most)
            w->most = step, w->most_seq = l->seq;
    }
    return 0;
}

/* Why run r's steps are not its schedule's ("" if they are). */
static int steps_check(struct eeb_server *s, const struct eeb_srv_run *r, char *why, size_t whylen,
                       char *err, size_t errlen)
{
    struct steps_walk w = {.complete = -1, .most = -1};
    int rc = eeb_srv_store_run_links_each(s->store, r->id, read_steps, &w, err, errlen);
    if (rc)
        return rc;
    if (w.complete < 0)
        snprintf(why, whylen, "its chain holds no complete event saying how many steps it took");
    else if (w.complete < 1)
        snprintf(why, whylen, "it took no training step");
    else if (w.most > w.complete)
        snprintf(why, whylen, "link %lld says step %lld, past the %lld its complete event says",
                 (long long)w.most_seq, (long long)w.most, (long long)w.complete);
    else if (r->schedule_steps)
        eeb_run_steps_off_schedule((double)w.complete, w.stopped, (double)r->schedule_steps, why,
                                   whylen);
    return EEB_OK;
}

int eeb_srv_fine_tuned(struct eeb_server *s, const struct eeb_srv_run *r,
                       struct eeb_srv_window *window, char *why, size_t whylen, char *err,
                       size_t errlen)
{
    *window = (struct eeb_srv_window){0};
    why[0] = '\0';
    char stream[384] = "";
    int rc = r->official
                 ? eeb_srv_stream_check(eeb_srv_store_path(s->store), r->id, r->begun_utc_ns,
                                        s->cfg.stream_allowance_s, s->restarts, s->nrestarts,
                                        window, stream, sizeof stream, err, errlen)
                 : EEB_OK;
    if (rc == EEB_OK && stream[0])
        snprintf(why, whylen, "%s", stream);
    else if (rc == EEB_OK && r->official && !window->whole)
        snprintf(why, whylen,
                 "its chain holds no whole fine-tune (finetune_begin to finetune_end)");
    else if (rc == EEB_OK)
        rc = steps_check(s, r, why, whylen, err, errlen);
    return rc;
}
