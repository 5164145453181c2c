/*
 * run_finetune.c - FINETUNE on the harness's clock (MLPerf LoadGen):
 * fine-tuning runs on a worker thread that takes one batch at a time; this
 * thread waits on absolute CLOCK_MONOTONIC deadlines, signals "complete"
 * at T_max (the worker stops at its next batch boundary), watches P_max
 * live, and abandons an accelerator that has not returned by T_max plus
 * the grace period.
 *
 * On the modeled clock (an emulated run, run_prepare.c) T_max is a number
 * of steps instead, floor(T_max / the modeled step time), and P_max the
 * modeled training power: the host's speed and load change nothing.
 */
#include "run_int.h"

#include "common/eeb_json.h"
#include "tasks/eeb_train.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIVE_EVERY_NS  100000000LL  /* the control loop's tick */
#define TRAIN_EVERY_NS 250000000LL  /* a "train" event (the loss curve), at least */
#define KILLED_WAIT_NS 5000000000LL /* a killed SUT process's call, to fail and return */

/* What the fine-tuning thread owns.  It never touches the run: if it is
 * abandoned (a hung accelerator), the run goes on to fail and return while
 * this thread may still be inside the backend. */
struct worker {
    struct eeb_sut *sut;
    struct eeb_batcher *bt;
    struct eeb_sampler *sampler;
    int epochs;
    long max_steps; /* -1: no limit */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* the worker returned (CLOCK_MONOTONIC waits) */
    atomic_int stop;     /* "complete": stop at the next batch boundary */
    int done, rc, abandoned;
    int capped; /* a pass ended at max_steps */
    char err[512];
    int epoch;
    long step;
    uint64_t items;
    double loss_sum; /* since the last "train" event */
    long loss_items;
    double last_loss;
};

/* An event from the worker, unless it was abandoned (the sampler may be
 * gone). */
static void worker_event(struct worker *w, const char *kind, json_t *payload)
{
    char *text = run_dump(payload);
    pthread_mutex_lock(&w->lock);
    if (!w->abandoned)
        eeb_sampler_mark(w->sampler, kind, text);
    pthread_mutex_unlock(&w->lock);
    free(text);
}

/* The worker's trainer asks before every batch: "complete" was signalled. */
static int stopped(void *arg)
{
    struct worker *w = arg;
    return atomic_load(&w->stop);
}

/* After every batch: what the control loop shows and the "train" event
 * averages (a SUT may report no loss: NAN). */
static void stepped(void *arg, long step, int items, double loss)
{
    struct worker *w = arg;
    pthread_mutex_lock(&w->lock);
    w->step = step, w->items += (uint64_t)items;
    if (!isnan(loss))
        w->loss_sum += loss * items, w->loss_items += items;
    w->last_loss = loss;
    pthread_mutex_unlock(&w->lock);
}

/* One training step of the SUT, as the trainer takes it. */
static int sut_step(void *arg, const struct eeb_task_batch *b, struct eeb_trainer_step *out,
                    char *err, size_t errlen)
{
    struct eeb_sut_step st;
    int rc = eeb_sut_train(arg, b, &st, err, errlen);
    if (rc == EEB_OK)
        *out = (struct eeb_trainer_step){.has_loss = !isnan(st.loss),
                                         .loss = st.loss,
                                         .correct = (long)st.correct,
                                         .counted = (long)st.counted,
                                         .done = st.done != 0};
    return rc;
}

/* An epoch's end (or where it stopped): its mean loss, null if the SUT
 * reported none, and the training metric. */
static json_t *epoch_json(int epoch, long step, const struct eeb_pass *p)
{
    json_t *o = json_pack("{s:i, s:I}", "epoch", epoch, EEB_EVENT_KEY_STEP, (json_int_t)step);
    json_object_set_new(o, EEB_EVENT_KEY_LOSS,
                        eeb_json_number(p->loss_items ? p->loss_sum / p->loss_items : NAN));
    json_object_set_new(o, EEB_EVENT_KEY_TRAIN_METRIC,
                        json_real(p->targets ? (double)p->correct / p->targets : 0.0));
    return o;
}

static void *train(void *arg)
{
    struct worker *w = arg;
    int rc = EEB_OK;
    char err[512] = "";
    struct eeb_trainer t = {.bt = w->bt,
                            .train = sut_step,
                            .train_arg = w->sut,
                            .max_steps = w->max_steps,
                            .stop = stopped,
                            .on_step = stepped,
                            .arg = w};
    for (int epoch = 1; epoch <= w->epochs && rc == EEB_OK; epoch++) {
        pthread_mutex_lock(&w->lock);
        w->epoch = epoch;
        pthread_mutex_unlock(&w->lock);
        struct eeb_pass p;
        if ((rc = eeb_train_pass(&t, epoch, &p, err, sizeof err)) || p.items == 0)
            break;
        worker_event(w, p.finished ? EEB_EVENT_EPOCH_END : EEB_EVENT_EPOCH_PARTIAL,
                     epoch_json(epoch, t.step, &p));
        if (!p.finished) {
            w->capped = !atomic_load(&w->stop);
            break;
        }
    }
    pthread_mutex_lock(&w->lock);
    w->done = 1, w->rc = rc;
    snprintf(w->err, sizeof w->err, "%s", err);
    int abandoned = w->abandoned;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    if (abandoned) {
        /* nobody waits for it any more; the backend's state is unknown and
         * is left to the process's end */
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
    }
    return NULL;
}

static struct timespec abs_ts(int64_t ns)
{
    return (struct timespec){ns / 1000000000, ns % 1000000000};
}

/* Waits until the worker is done or the time `until`; 1 if done. */
static int wait_worker(struct worker *w, int64_t until)
{
    pthread_mutex_lock(&w->lock);
    struct timespec ts = abs_ts(until);
    while (!w->done && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT) {
    }
    int done = w->done;
    pthread_mutex_unlock(&w->lock);
    return done;
}

/* The live power watch: the mean over the last second of the sampler's
 * running energy, from a history of (seconds, joules) taken every tick. */
struct watch {
    double t[64], j[64];
    unsigned n;
};

static double watch_mean(struct watch *wt, const struct eeb_sampler_live *l, double window_s)
{
    wt->t[wt->n % 64] = l->seconds, wt->j[wt->n % 64] = l->joules;
    wt->n++;
    for (unsigned k = 1; k < 64 && k < wt->n; k++) {
        unsigned i = (wt->n - 1 - k) % 64;
        if (l->seconds - wt->t[i] >= window_s)
            return (l->joules - wt->j[i]) / (l->seconds - wt->t[i]);
    }
    return NAN; /* less than a window so far */
}

/* Why fine-tuning ended, for the "complete" event and the outcome. */
enum ending { DONE, TMAX, PMAX, CANCELLED, FAILED, UNLOGGED };

/* How many steps T_max holds on the modeled clock: those that end by it. */
static long modeled_tmax_steps(const struct run *r)
{
    double n = floor(r->c->t_max_s / r->perf.train_step_s);
    return n < (double)LONG_MAX ? (long)n : LONG_MAX;
}

static struct worker *worker_new(struct run *r)
{
    struct worker *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->sut = r->sut, w->bt = r->bt, w->sampler = r->sampler;
    w->epochs = (int)r->c->epochs;
    w->max_steps = isnan(r->c->steps) ? -1 : (long)r->c->steps;
    long tmax_steps = r->modeled_clock ? modeled_tmax_steps(r) : -1;
    if (tmax_steps >= 0 && (w->max_steps < 0 || tmax_steps < w->max_steps))
        w->max_steps = tmax_steps;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    return w;
}

static void worker_free(struct worker *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

/* One tick of the control loop: the live P_max watch, the loss curve's
 * "train" event, the progress hook.  Returns DONE to go on, PMAX to stop
 * on P_max, UNLOGGED when the power log can no longer be written. */
struct control {
    struct watch wt;
    double pmax_seen; /* the first live mean above P_max, or 0 */
    double joules0;   /* the sampler's energy at the fine-tune's begin: the
                       * ranging pass, the deploy and the audit before it are
                       * not the fine-tune's */
    long reported_step;
    int64_t train_every, next_train, next_show, show_every;
};

static enum ending tick(struct run *r, struct worker *w, struct control *k, int64_t now)
{
    const struct eeb_run_config *c = r->c;
    struct eeb_sampler_live l;
    eeb_sampler_live(r->sampler, &l);
    if (l.write_failed) /* a full disk: fine-tuning on would be unmetered */
        return UNLOGGED;
    double mean = r->modeled_clock ? NAN : watch_mean(&k->wt, &l, r->rules.power.window_s);
    if (mean > c->p_max_w && !k->pmax_seen) {
        k->pmax_seen = mean;
        run_event(r, EEB_EVENT_PMAX_EXCEEDED,
                  json_pack("{s:f, s:f, s:f}", "watts", mean, EEB_EVENT_KEY_P_MAX, c->p_max_w,
                            "window_s", r->rules.power.window_s));
        if (c->abort_on_pmax)
            return PMAX;
    }
    pthread_mutex_lock(&w->lock);
    struct eeb_run_progress p = {.state = EEB_RUN_FINETUNE,
                                 .epoch = w->epoch,
                                 .epochs = w->epochs,
                                 .step = w->step,
                                 .steps = w->max_steps,
                                 .elapsed_s = (double)(now - r->ft_begin) / 1e9,
                                 .t_max_s = c->t_max_s,
                                 .watts = l.watts,
                                 .reading_age_s = l.last_ns ? (double)(now - l.last_ns) / 1e9 : NAN,
                                 .p_max_w = c->p_max_w,
                                 .joules = l.joules - k->joules0,
                                 .loss = w->last_loss,
                                 .over_pmax = k->pmax_seen > 0};
    if (r->modeled_clock) { /* the device's figures, not the host's */
        p.elapsed_s = (double)w->step * r->perf.train_step_s;
        p.watts = r->perf.train_power_w;
        p.joules = p.elapsed_s * p.watts;
        p.modeled = 1;
    }
    json_t *train_ev = NULL;
    if (now >= k->next_train && w->loss_items > 0 && w->step != k->reported_step) {
        train_ev = json_pack("{s:i, s:I, s:I, s:f}", "epoch", w->epoch, EEB_EVENT_KEY_STEP,
                             (json_int_t)w->step, "items", (json_int_t)w->items, EEB_EVENT_KEY_LOSS,
                             w->loss_sum / (double)w->loss_items);
        w->loss_sum = 0, w->loss_items = 0;
        k->reported_step = w->step;
        k->next_train = now + k->train_every;
    }
    pthread_mutex_unlock(&w->lock);
    if (train_ev)
        run_event(r, EEB_EVENT_TRAIN, train_ev);
    if (now >= k->next_show) {
        run_progress(r, &p);
        k->next_show = now + k->show_every;
    }
    return DONE;
}

int run_finetune(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    struct eeb_run_outcome *out = r->out;
    int rc = run_enter(r, EEB_RUN_FINETUNE, err, errlen);
    if (rc == EEB_OK && r->eval->begin)
        rc = r->eval->begin(r, err, errlen);
    if (rc)
        return rc;
    struct worker *w = worker_new(r);
    if (!w)
        return eeb_errf(err, errlen, EEB_ENOMEM, "fine-tuning: out of memory");
    run_drive(r, r->perf.train_power_w);
    /* the seed it trains with, in the chain: a server that handed one out
     * holds the run to it */
    r->ft_begin = run_event(
        r, EEB_EVENT_FINETUNE_BEGIN,
        json_pack("{s:f, s:I}", "t_max_s", c->t_max_s, EEB_EVENT_KEY_SEED, (json_int_t)c->seed));
    run_stream_kick(r);
    int64_t deadline = r->modeled_clock ? INT64_MAX : r->ft_begin + (int64_t)(c->t_max_s * 1e9);
    /* the modeled device's power is known before it runs: over P_max, the
     * run hears so at once, and with --abort-on-pmax takes no step */
    double modeled_over =
        r->modeled_clock && r->perf.train_power_w > c->p_max_w ? r->perf.train_power_w : 0;
    if (modeled_over) {
        run_event(r, EEB_EVENT_PMAX_EXCEEDED,
                  json_pack("{s:f, s:f, s:f}", "watts", modeled_over, EEB_EVENT_KEY_P_MAX,
                            c->p_max_w, "window_s", r->rules.power.window_s));
        if (c->abort_on_pmax)
            w->max_steps = 0;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, train, w) != 0) {
        r->ft_end = run_event(r, EEB_EVENT_FINETUNE_END, NULL);
        worker_free(w);
        return eeb_errf(err, errlen, EEB_ENOMEM, "cannot start the fine-tuning thread");
    }
    double every = r->hooks && r->hooks->progress_every_s > 0 ? r->hooks->progress_every_s : 0.25;
    struct eeb_sampler_live at_begin;
    eeb_sampler_live(r->sampler, &at_begin);
    struct control k = {.pmax_seen = modeled_over,
                        .joules0 = at_begin.joules,
                        .reported_step = -1,
                        .next_show = r->ft_begin,
                        .show_every = (int64_t)(every * 1e9)};
    /* a loss curve of about 400 points over T_max, none closer than 0.25 s */
    int64_t train_every = (int64_t)(c->t_max_s * 1e9 / 400);
    k.train_every = train_every > TRAIN_EVERY_NS ? train_every : TRAIN_EVERY_NS;
    k.next_train = r->ft_begin + k.train_every;
    enum ending ending = DONE;
    char refused[600] = "";
    for (;;) {
        int64_t wake = eeb_mono_ns() + LIVE_EVERY_NS;
        if (wait_worker(w, wake < deadline ? wake : deadline))
            break;
        int64_t now = eeb_mono_ns();
        if (now >= deadline) {
            ending = TMAX;
            break;
        }
        if (run_cancelled(r) || run_stream_refused(r, refused, sizeof refused)) {
            ending = CANCELLED;
            break;
        }
        if ((ending = tick(r, w, &k, now)) != DONE)
            break;
    }
    static const char *const why[] = {"done",        EEB_COMPLETE_TMAX, "p_max",
                                      "interrupted", "error",           "unlogged"};
    atomic_store(&w->stop, 1);
    pthread_mutex_lock(&w->lock);
    long steps = w->step;
    if (ending == DONE && w->rc)
        ending = FAILED;
    else if (ending == DONE && modeled_over && c->abort_on_pmax)
        ending = PMAX;
    else if (ending == DONE && w->capped && r->modeled_clock &&
             (isnan(c->steps) || modeled_tmax_steps(r) < (long)c->steps))
        ending = TMAX;
    pthread_mutex_unlock(&w->lock);
    json_t *complete = json_pack("{s:s, s:I}", EEB_EVENT_KEY_REASON, why[ending],
                                 EEB_EVENT_KEY_STEP, (json_int_t)steps);
    if (ending == PMAX)
        json_object_set_new(complete, "watts", json_real(k.pmax_seen));
    run_event(r, EEB_EVENT_COMPLETE, complete);
    r->ft_end = run_event(r, EEB_EVENT_FINETUNE_END, NULL);
    run_drive(r, r->perf.idle_power_w);
    out->host_time_s = (double)(r->ft_end - r->ft_begin) / 1e9;
    out->t_s = r->modeled_clock ? (double)steps * r->perf.train_step_s : out->host_time_s;
    out->tmax_reached = ending == TMAX;
    if (ending != DONE && ending != FAILED) {
        /* the batch in flight may finish, within the grace period */
        if (!wait_worker(w, r->ft_end + (int64_t)(c->grace_s * 1e9))) {
            /* a SUT in a process of its own is killed: its call fails at
             * once and the worker ends; one in eeb's process is left */
            int killed = eeb_sut_abandon(r->sut);
            if (killed)
                wait_worker(w, eeb_mono_ns() + KILLED_WAIT_NS);
            pthread_mutex_lock(&w->lock);
            int done = w->done;
            w->abandoned = 1;
            pthread_mutex_unlock(&w->lock);
            if (!done) {
                r->abandoned = 1;
                pthread_detach(th);
            } else {
                pthread_join(th, NULL);
                worker_free(w);
            }
            out->aborted = 1;
            run_event(r, EEB_EVENT_ABORT,
                      json_pack("{s:s}", EEB_EVENT_KEY_REASON,
                                killed ? "the accelerator did not return within the grace period; "
                                         "its process was killed"
                                       : "the accelerator did not return within the grace "
                                         "period"));
            return eeb_errf(err, errlen, EEB_ETIMEOUT,
                            "the accelerator did not return within %g s of the %s signal (the "
                            "grace period); %s",
                            c->grace_s, ending == TMAX ? "T_max" : "stop",
                            killed ? "its process was killed" : "it was abandoned");
        }
        run_event(r, EEB_EVENT_ACCELERATOR_STOPPED,
                  json_pack("{s:f}", "after_s", (double)(eeb_mono_ns() - r->ft_end) / 1e9));
    }
    pthread_join(th, NULL);
    out->steps = (uint64_t)w->step;
    r->trained_items = w->items;
    rc = w->rc ? eeb_errf(err, errlen, w->rc, "fine-tuning: %s", w->err) : EEB_OK;
    worker_free(w);
    r->unlogged = ending == UNLOGGED; /* stopping the sampler says why */
    if (rc || (ending != PMAX && ending != CANCELLED))
        return rc;
    out->aborted = 1;
    char reason[640] = "interrupted";
    if (refused[0])
        snprintf(reason, sizeof reason, "%s", refused);
    if (ending == PMAX && r->modeled_clock)
        snprintf(reason, sizeof reason,
                 "the modeled training power %.3f W exceeds P_max %g W (--abort-on-pmax)",
                 k.pmax_seen, c->p_max_w);
    else if (ending == PMAX)
        snprintf(reason, sizeof reason,
                 "the live %g s mean power %.3f W exceeded P_max %g W (--abort-on-pmax)",
                 r->rules.power.window_s, k.pmax_seen, c->p_max_w);
    snprintf(out->why, sizeof out->why, "%s", reason);
    run_event(r, EEB_EVENT_ABORT, json_pack("{s:s}", EEB_EVENT_KEY_REASON, reason));
    return EEB_OK;
}
