/*
 * runs.c - a run's stages on the server, each a route on the team's own
 * run: register (the budgets and rules it is held to), the power log in
 * numbered chunks (a chunk sent again changes nothing), complete (the end
 * of fine-tuning), the test inputs without labels, predictions by test
 * item id, and score (with the sampler's counters): the server recounts M_s
 * against the labels it alone holds and judges the run as `eeb check`
 * would, from the record it received.
 */
#include "server_int.h"

#include "tasks/eeb_metrics.h"
#include "power/eeb_power.h"
#include "record/eeb_record.h"
#include "tasks/eeb_tasks.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_MAX_EVENTS 4096

/* ---- reading a body ---- */

/* A body's fault: the field and what is wrong with it. */
struct fault {
    char field[96], message[160];
};

__attribute__((format(printf, 3, 4))) static int bad(struct fault *f, const char *field,
                                                     const char *fmt, ...)
{
    snprintf(f->field, sizeof f->field, "%s", field);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* An optional string of 1..max characters of [A-Za-z0-9_.:=,/+-]; *out
 * keeps dflt when absent. */
static int text_field(json_t *o, const char *key, size_t max, const char **out, struct fault *f)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    const char *s = json_string_value(v);
    if (!s || !text_ok(s, max, DECLARED))
        return bad(f, key, "expected 1 to %zu letters, digits and characters of " DECLARED, max);
    *out = s;
    return 0;
}

/* An integer field within [lo, hi]. */
static int int_field(json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out,
                     struct fault *f)
{
    if (!json_is_integer(v))
        return bad(f, field, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return bad(f, field, "%lld is outside [%lld, %lld]", (long long)x, (long long)lo,
                   (long long)hi);
    *out = x;
    return 0;
}

/* A finite number field within [lo, hi]. */
static int number_field(json_t *v, const char *field, double lo, double hi, double *out,
                        struct fault *f)
{
    if (!json_is_number(v))
        return bad(f, field, "expected a number");
    double x = json_number_value(v);
    if (!isfinite(x) || x < lo || x > hi)
        return bad(f, field, "%g is outside [%g, %g]", x, lo, hi);
    *out = x;
    return 0;
}

static enum MHD_Result fail_fault(struct call *k, const struct fault *f)
{
    return call_fail(k, 400, f->field, f->message);
}

/* ---- the run as JSON ---- */

static json_t *run_json(const struct store_run *r)
{
    json_t *o = json_pack(
        "{s:I, s:s, s:s, s:s, s:f, s:f, s:s, s:b, s:s, s:s, s:s}", "run_id", (json_int_t)r->id,
        "team", r->team_name, "task", eeb_task_name((enum eeb_task)r->task), "state", r->state,
        "t_max_s", r->t_max_s, "p_max_w", r->p_max_w, "rules_version", r->rules_version, "official",
        r->official, "device", r->device, "provenance", r->provenance, "backend", r->backend);
    if (o && strcmp(r->state, "scored") == 0) {
        json_object_set_new(o, "verdict", json_string(r->verdict));
        json_object_set_new(o, "S", number_or_null(r->s));
        json_object_set_new(o, "m_u", number_or_null(r->m_u));
        json_object_set_new(o, "m_t", number_or_null(r->m_t));
        json_object_set_new(o, "m_p", number_or_null(r->m_p));
        json_object_set_new(o, "m_s", number_or_null(r->m_s));
        json_object_set_new(o, "t_s", number_or_null(r->t_s));
        json_object_set_new(o, "energy_j", number_or_null(r->energy_j));
        json_object_set_new(o, "why", json_string(r->why));
    }
    return o;
}

enum MHD_Result api_run(struct call *k)
{
    return call_json(k, 200, run_json(&k->run));
}

/* ---- register ---- */

/* What a team declares of its run when it registers it. */
struct declared {
    enum eeb_task task;
    double util[EEB_UTIL_COUNT];
    const char *provenance, *device, *backend, *design;
    const char *finetune; /* the fine-tune set's SHA-256, or NULL */
    double rate_hz;
    int official;
};

static int read_declared(json_t *body, struct declared *d, struct fault *f)
{
    char why[128];
    json_t *task = json_object_get(body, "task"), *util = json_object_get(body, "util");
    *d = (struct declared){.device = "unknown", .backend = "unknown", .design = NULL};
    if (!json_is_string(task))
        return bad(f, "task", "expected a string: cls, det or video");
    if (eeb_task_parse(json_string_value(task), &d->task, why, sizeof why))
        return bad(f, "task", "%s", why);
    if (!json_is_object(util))
        return bad(f, "util", "expected an object of four fractions: lut, ff, bram, dsp");
    for (int u = 0; u < EEB_UTIL_COUNT; u++) {
        char field[32];
        snprintf(field, sizeof field, "util.%s", eeb_score_util_name((enum eeb_util_kind)u));
        if (number_field(json_object_get(util, eeb_score_util_name((enum eeb_util_kind)u)), field,
                         0, 1, &d->util[u], f))
            return -1;
    }
    json_t *prov = json_object_get(body, "provenance");
    const char *p = json_string_value(prov);
    if (!p || (strcmp(p, "measured") && strcmp(p, "modeled") && strcmp(p, "counter")))
        return bad(f, "provenance", "expected measured, counter or modeled");
    d->provenance = p;
    json_t *rate = json_object_get(body, "rate_hz"), *official = json_object_get(body, "official");
    if (rate && number_field(rate, "rate_hz", 0.001, 1e6, &d->rate_hz, f))
        return -1;
    if (official && !json_is_boolean(official))
        return bad(f, "official", "expected true or false");
    d->official = json_is_true(official);
    if (text_field(body, "device", 63, &d->device, f) ||
        text_field(body, "backend", 63, &d->backend, f) ||
        text_field(body, "design", 255, &d->design, f) ||
        text_field(body, "finetune", 64, &d->finetune, f))
        return -1;
    if (d->finetune && (strlen(d->finetune) != 64 || strspn(d->finetune, "0123456789abcdef") != 64))
        return bad(f, "finetune", "expected the fine-tune set's SHA-256, 64 hex digits");
    static const char *const known[] = {"task",   "util",    "provenance", "rate_hz", "official",
                                        "device", "backend", "design",     "finetune"};
    const char *key;
    json_t *v;
    json_object_foreach(body, key, v)
    {
        size_t i = 0;
        while (i < sizeof known / sizeof *known && strcmp(known[i], key))
            i++;
        if (i == sizeof known / sizeof *known)
            return bad(f, key, "unknown field");
    }
    return 0;
}

/* The configuration the server stores for the run: what the judge, the
 * check and the report read from a local run's, with the server's rules. */
static char *server_config(const struct eeb_server *s, const struct declared *d,
                           const struct call *k, const struct eeb_task_profile *p)
{
    const struct eeb_weights *w = &s->weights[d->task];
    json_t *o = json_pack(
        "{s:{s:s, s:b}, s:s, s:s, s:s, s:s?, s:{s:s, s:f, s:s}, s:{s:I}, "
        "s:{s:f, s:f, s:f, s:f, s:s, s:s}, s:{s:f, s:f}, "
        "s:{s:s, s:{s:f, s:f, s:f, s:f}, s:f, s:f}}",
        "server", "team", k->team_name, "official", d->official, "backend", d->backend,
        "provenance", d->provenance, "device", d->device, "design", d->design, "power", "source",
        "uploaded", "rate_hz", d->rate_hz, "provenance", d->provenance, "test", "items",
        (json_int_t)s->test[d->task]->n, "util", "lut", d->util[EEB_UTIL_LUT], "ff",
        d->util[EEB_UTIL_FF], "bram", d->util[EEB_UTIL_BRAM], "dsp", d->util[EEB_UTIL_DSP],
        "source", "declared at registration", "kind", "declared", "budgets", "t_max_s", p->t_max_s,
        "p_max_w", p->p_max_w, "rules", "version", s->rules_version, "weights", "u", w->u, "t",
        w->t, "p", w->p, "s", w->s, "power_window_s", s->power_rule.window_s, "min_rate_hz",
        s->power_rule.min_rate_hz);
    if (o && d->finetune)
        json_object_set_new(o, "finetune", json_pack("{s:s}", "sha256", d->finetune));
    char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return text;
}

/* What a registered run is held to besides its budgets: the rules and the
 * fine-tune set (null if the server names none). */
static void add_terms(json_t *o, const struct eeb_server *s, enum eeb_task task)
{
    const struct eeb_weights *w = &s->weights[task];
    const struct finetune_set *ft = &s->finetune[task];
    json_object_set_new(o, "rules",
                        json_pack("{s:s, s:{s:f, s:f, s:f, s:f}, s:f, s:f}", "version",
                                  s->rules_version, "weights", "u", w->u, "t", w->t, "p", w->p, "s",
                                  w->s, "power_window_s", s->power_rule.window_s, "min_rate_hz",
                                  s->power_rule.min_rate_hz));
    json_object_set_new(o, "finetune",
                        ft->sha256[0] ? json_pack("{s:s, s:I}", "sha256", ft->sha256, "items",
                                                  (json_int_t)ft->items)
                                      : json_null());
    json_object_set_new(o, "test_items", json_integer((json_int_t)s->test[task]->n));
}

/* The fine-tune set a run declares must be the one the server names, if
 * it names one; an official run must declare it.  0, or the 409 sent. */
static int finetune_agrees(struct call *k, const struct declared *d, enum MHD_Result *sent)
{
    const struct finetune_set *ft = &k->s->finetune[d->task];
    char msg[256];
    if (!ft->sha256[0] || (d->finetune && strcmp(d->finetune, ft->sha256) == 0))
        return 0;
    if (!d->finetune && !d->official)
        return 0;
    snprintf(msg, sizeof msg, "this server's %s fine-tune set is sha256 %s (%llu items)%s",
             eeb_task_name(d->task), ft->sha256, (unsigned long long)ft->items,
             d->finetune ? "" : "; an official run declares it");
    *sent = call_fail(k, 409, "finetune", msg);
    return -1;
}

/* POST /api/v1/runs: a run, with the budgets and rules it is held to. */
enum MHD_Result api_register(struct call *k)
{
    enum MHD_Result sent;
    json_t *body = call_body(k, &sent);
    if (!body)
        return sent;
    struct declared d;
    struct fault f = {.field = ""};
    char err[256];
    if (read_declared(body, &d, &f)) {
        sent = fail_fault(k, &f);
    } else if (!k->s->test[d.task]) {
        snprintf(err, sizeof err, "this server holds no %s test set", eeb_task_name(d.task));
        sent = call_fail(k, 409, "task", err);
    } else if (finetune_agrees(k, &d, &sent) == 0) {
        const struct eeb_task_profile *p = eeb_task_profile(d.task);
        struct store_run r = {.team = k->team,
                              .task = (int)d.task,
                              .official = d.official,
                              .t_max_s = p->t_max_s,
                              .p_max_w = p->p_max_w};
        snprintf(r.team_name, sizeof r.team_name, "%s", k->team_name);
        snprintf(r.rules_version, sizeof r.rules_version, "%s", k->s->rules_version);
        snprintf(r.backend, sizeof r.backend, "%s", d.backend);
        snprintf(r.device, sizeof r.device, "%s", d.device);
        snprintf(r.provenance, sizeof r.provenance, "%s", d.provenance);
        snprintf(r.state, sizeof r.state, "registered");
        char *config = server_config(k->s, &d, k, p);
        if (!config)
            sent = call_fail(k, 500, NULL, "out of memory");
        else if (store_run_register(k->db, &r, config, err, sizeof err))
            sent = call_fail(k, 500, NULL, err);
        else {
            json_t *o = run_json(&r);
            add_terms(o, k->s, d.task);
            sent = call_json(k, 201, o);
        }
        free(config);
    }
    json_decref(body);
    return sent;
}

/* ---- the power log ---- */

/* The state a route needs the run in, or the 409 sent. */
static int in_state(struct call *k, const char *a, const char *b, enum MHD_Result *sent)
{
    if (strcmp(k->run.state, a) == 0 || (b && strcmp(k->run.state, b) == 0))
        return 1;
    char msg[160];
    snprintf(msg, sizeof msg, "run %lld is %s; this needs it %s%s%s", (long long)k->id,
             k->run.state, a, b ? " or " : "", b ? b : "");
    *sent = call_fail(k, 409, "state", msg);
    return 0;
}

/* A chunk's arrays into c; the strings stay in body. */
static int read_chunk(json_t *body, struct eeb_rundb_chunk *c, struct eeb_sample **samples,
                      struct eeb_rundb_event **events, char ***payloads, struct fault *f)
{
    json_t *sa = json_object_get(body, "samples"), *ev = json_object_get(body, "events"), *x;
    const char *source = "uploaded";
    char field[96];
    size_t i;
    if (int_field(json_object_get(body, "seq"), "seq", 0, INT32_MAX, &c->seq, f) ||
        text_field(body, "source", 255, &source, f))
        return -1;
    c->source = source;
    if (sa && !json_is_array(sa))
        return bad(f, "samples", "expected an array of [t_mono_ns, t_utc_ns, watts]");
    if (ev && !json_is_array(ev))
        return bad(f, "events", "expected an array of [t_mono_ns, t_utc_ns, kind, payload]");
    if (json_array_size(ev) > CHUNK_MAX_EVENTS)
        return bad(f, "events", "more than %d events in one chunk", CHUNK_MAX_EVENTS);
    c->nsamples = json_array_size(sa), c->nevents = json_array_size(ev);
    *samples = calloc(c->nsamples + 1, sizeof **samples);
    *events = calloc(c->nevents + 1, sizeof **events);
    *payloads = calloc(c->nevents + 1, sizeof **payloads);
    if (!*samples || !*events || !*payloads)
        return bad(f, "samples", "out of memory");
    json_array_foreach(sa, i, x)
    {
        struct eeb_sample *s = &(*samples)[i];
        int64_t t[2];
        snprintf(field, sizeof field, "samples[%zu]", i);
        if (json_array_size(x) != 3)
            return bad(f, field, "expected [t_mono_ns, t_utc_ns, watts]");
        for (int j = 0; j < 2; j++) {
            snprintf(field, sizeof field, "samples[%zu][%d]", i, j);
            if (int_field(json_array_get(x, (size_t)j), field, 0, INT64_MAX, &t[j], f))
                return -1;
        }
        snprintf(field, sizeof field, "samples[%zu][2]", i);
        if (number_field(json_array_get(x, 2), field, 0, 1e6, &s->watts, f))
            return -1;
        s->t_mono_ns = t[0], s->t_utc_ns = t[1], s->volts = s->amps = NAN;
    }
    json_array_foreach(ev, i, x)
    {
        struct eeb_rundb_event *e = &(*events)[i];
        json_t *payload = json_array_get(x, 3);
        snprintf(field, sizeof field, "events[%zu]", i);
        if (json_array_size(x) != 4)
            return bad(f, field, "expected [t_mono_ns, t_utc_ns, kind, payload]");
        int64_t t[2];
        for (int j = 0; j < 2; j++) {
            snprintf(field, sizeof field, "events[%zu][%d]", i, j);
            if (int_field(json_array_get(x, (size_t)j), field, 0, INT64_MAX, &t[j], f))
                return -1;
        }
        e->t_mono_ns = t[0], e->t_utc_ns = t[1];
        e->kind = json_string_value(json_array_get(x, 2));
        snprintf(field, sizeof field, "events[%zu][2]", i);
        if (!e->kind || !*e->kind || strlen(e->kind) > 32)
            return bad(f, field, "expected a kind of 1 to 32 characters");
        snprintf(field, sizeof field, "events[%zu][3]", i);
        if (!json_is_object(payload) && !json_is_null(payload))
            return bad(f, field, "expected an object or null");
        if (json_is_object(payload) &&
            !((*payloads)[i] = json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER)))
            return bad(f, field, "out of memory");
        e->payload = (*payloads)[i];
    }
    c->samples = *samples, c->events = *events;
    return 0;
}

/* POST /api/v1/runs/{id}/power: a numbered chunk of the run's power log,
 * stored whole once; the same chunk again is answered as held. */
enum MHD_Result api_power(struct call *k)
{
    enum MHD_Result sent;
    if (!in_state(k, "registered", "complete", &sent))
        return sent;
    json_t *body = call_body(k, &sent);
    if (!body)
        return sent;
    struct eeb_rundb_chunk c = {0};
    struct eeb_sample *samples = NULL;
    struct eeb_rundb_event *events = NULL;
    char **payloads = NULL, err[512], msg[160];
    struct fault f = {.field = ""};
    eeb_sha256(k->q->body, k->q->len, c.sha256);
    if (read_chunk(body, &c, &samples, &events, &payloads, &f)) {
        sent = fail_fault(k, &f);
    } else {
        int rc = eeb_rundb_chunk_add(k->db->run, k->id, &c, err, sizeof err);
        if (rc == EEB_CHUNK_DIFFERS) {
            snprintf(msg, sizeof msg, "chunk %lld was received with other contents",
                     (long long)c.seq);
            sent = call_fail(k, 409, "seq", msg);
        } else if (rc < 0) {
            sent = call_fail(k, rc == EEB_EINVAL ? 400 : 500, NULL, err);
        } else {
            sent = call_json(k, rc == EEB_CHUNK_STORED ? 201 : 200,
                             json_pack("{s:I, s:b, s:I, s:I}", "seq", (json_int_t)c.seq, "stored",
                                       rc == EEB_CHUNK_STORED, "samples", (json_int_t)c.nsamples,
                                       "events", (json_int_t)c.nevents));
        }
    }
    for (size_t i = 0; payloads && i < c.nevents; i++)
        free(payloads[i]);
    free(payloads), free(events), free(samples);
    json_decref(body);
    return sent;
}

/* ---- complete, and the test inputs ---- */

/* POST /api/v1/runs/{id}/complete: fine-tuning is over; the test inputs
 * may be fetched.  Saying it again is harmless; of a scored run, a
 * conflict. */
enum MHD_Result api_complete(struct call *k)
{
    enum MHD_Result sent;
    char err[512];
    if (!in_state(k, "registered", "complete", &sent))
        return sent;
    if (strcmp(k->run.state, "registered") == 0) {
        if (store_run_complete(k->db->h, k->id, err, sizeof err) < 0)
            return call_fail(k, 500, NULL, err);
        snprintf(k->run.state, sizeof k->run.state, "complete");
    }
    return call_json(k, 200, run_json(&k->run));
}

/* GET /api/v1/runs/{id}/test: the run's test inputs, labels stripped,
 * once fine-tuning is complete. */
enum MHD_Result api_test(struct call *k)
{
    enum MHD_Result sent;
    if (!in_state(k, "complete", "scored", &sent))
        return sent;
    return call_file(k, "application/octet-stream", k->s->test[k->run.task]->inputs);
}

/* ---- predictions ---- */

/* A classifier's ranked classes into o's "top", with the true "label". */
static int ranked_classes(json_t *p, size_t i, const struct testset *t,
                          const struct held_item *item, json_t *o, struct fault *f)
{
    char field[96];
    json_t *top = json_object_get(p, "top"), *x, *ranked = json_array();
    size_t j;
    snprintf(field, sizeof field, "predictions[%zu].top", i);
    json_object_set_new(o, "label", json_integer(item->label));
    json_object_set_new(o, "top", ranked);
    if (!json_is_array(top) || json_array_size(top) < 1 || json_array_size(top) > EEB_TOPK_MAX)
        return bad(f, field, "expected 1 to %d classes, best first", EEB_TOPK_MAX);
    json_array_foreach(top, j, x)
    {
        int64_t cls;
        snprintf(field, sizeof field, "predictions[%zu].top[%zu]", i, j);
        if (int_field(x, field, 0, t->classes - 1, &cls, f))
            return -1;
        json_array_append_new(ranked, json_integer(cls));
    }
    return 0;
}

/* A detector's boxes into o's "boxes", with the true ones as "truth". */
static int detected_boxes(json_t *p, size_t i, const struct testset *t,
                          const struct held_item *item, json_t *o, struct fault *f)
{
    char field[96];
    json_t *boxes = json_object_get(p, "boxes"), *x, *kept = json_array(), *truth = json_array();
    size_t j;
    snprintf(field, sizeof field, "predictions[%zu].boxes", i);
    json_object_set_new(o, "boxes", kept);
    json_object_set_new(o, "truth", truth);
    if (!json_is_array(boxes) || json_array_size(boxes) > EEB_SHARD_MAX_BOXES)
        return bad(f, field, "expected up to %d [class, score, x0, y0, x1, y1]",
                   EEB_SHARD_MAX_BOXES);
    json_array_foreach(boxes, j, x)
    {
        double v[6];
        snprintf(field, sizeof field, "predictions[%zu].boxes[%zu]", i, j);
        if (json_array_size(x) != 6)
            return bad(f, field, "expected [class, score, x0, y0, x1, y1]");
        for (size_t c = 0; c < 6; c++) {
            snprintf(field, sizeof field, "predictions[%zu].boxes[%zu][%zu]", i, j, c);
            double hi = c == 0 ? t->classes - 1 : c == 1 ? 1 : 1e5;
            if (number_field(json_array_get(x, c), field, 0, hi, &v[c], f))
                return -1;
        }
        if (v[0] != floor(v[0]))
            return bad(f, field, "the class is not an integer");
        json_array_append_new(
            kept, json_pack("[i, f, f, f, f, f]", (int)v[0], v[1], v[2], v[3], v[4], v[5]));
    }
    for (int b = 0; b < item->nboxes; b++) {
        const struct eeb_box *bx = &item->boxes[b];
        json_array_append_new(truth, json_pack("[i, i, f, f, f, f]", bx->cls, bx->difficult, bx->x0,
                                               bx->y0, bx->x1, bx->y1));
    }
    return 0;
}

/* One prediction, checked, as the payload `eeb run` stores: with the truth,
 * so that `eeb check` recounts M_s from the server's database alone. */
static int prediction_payload(json_t *p, size_t i, const struct testset *t,
                              const struct held_item **item, char **text, struct fault *f)
{
    char field[96];
    snprintf(field, sizeof field, "predictions[%zu]", i);
    if (!json_is_object(p))
        return bad(f, field, "expected an object");
    snprintf(field, sizeof field, "predictions[%zu].id", i);
    const char *id = json_string_value(json_object_get(p, "id"));
    if (!id)
        return bad(f, field, "expected a string");
    if (!(*item = testset_find(t, id)))
        return bad(f, field, "no test item has this id");
    json_t *o = json_pack("{s:s}", "id", id);
    int rc = !o                        ? bad(f, field, "out of memory")
             : t->task == EEB_TASK_DET ? detected_boxes(p, i, t, *item, o, f)
                                       : ranked_classes(p, i, t, *item, o, f);
    if (rc == 0 && !(*text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)))
        rc = bad(f, field, "out of memory");
    json_decref(o);
    return rc;
}

/* POST /api/v1/runs/{id}/predictions {"predictions": [{"id": .., "top":
 * [..]} or {"id": .., "boxes": [[class, score, x0, y0, x1, y1], ..]}]}:
 * in as many posts as needed; an item sent again is replaced. */
enum MHD_Result api_predictions(struct call *k)
{
    enum MHD_Result sent;
    if (!in_state(k, "complete", NULL, &sent))
        return sent;
    json_t *body = call_body(k, &sent);
    if (!body)
        return sent;
    json_t *list = json_object_get(body, "predictions");
    const struct testset *t = k->s->test[k->run.task];
    size_t n = json_array_size(list);
    int64_t *items = calloc(n + 1, sizeof *items);
    char **payloads = calloc(n + 1, sizeof *payloads), err[512];
    struct fault f = {.field = ""};
    if (!json_is_array(list)) {
        sent = call_fail(k, 400, "predictions", "expected an array");
    } else if (!items || !payloads) {
        sent = call_fail(k, 500, NULL, "out of memory");
    } else {
        size_t i;
        json_t *p;
        json_array_foreach(list, i, p)
        {
            const struct held_item *item = NULL;
            if (prediction_payload(p, i, t, &item, &payloads[i], &f))
                break;
            items[i] = (int64_t)item->index;
        }
        if (f.field[0])
            sent = fail_fault(k, &f);
        else if (eeb_rundb_predictions_add(k->db->run, k->id, items, (const char *const *)payloads,
                                           n, err, sizeof err))
            sent = call_fail(k, 500, NULL, err);
        else
            sent = call_json(k, 200, json_pack("{s:I}", "stored", (json_int_t)n));
    }
    for (size_t i = 0; payloads && i < n; i++)
        free(payloads[i]);
    free(payloads), free(items);
    json_decref(body);
    return sent;
}

/* ---- score ---- */

static int latest_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc, (void)kind, (void)payload;
    int64_t *latest = arg;
    *latest = t > *latest ? t : *latest;
    return 0;
}

/* Stores the verdict in the run's record as `eeb run` would: its results,
 * a score event, its final state. */
static int record_verdict(struct call *k, const struct eeb_run_outcome *o, char *err, size_t errlen)
{
    /* the utilization was declared at registration */
    int rc = eeb_run_store_results(k->db->run, k->id, o, "modeled", err, errlen);
    int64_t t = 0;
    if (rc == EEB_OK)
        rc = eeb_rundb_events_each(k->db->run, k->id, latest_event, &t, err, errlen);
    json_t *payload = json_pack("{s:s, s:s, s:o}", "by", "server", "verdict", eeb_run_verdict(o, 0),
                                "S", number_or_null(o->score.s));
    char *text = payload ? json_dumps(payload, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(payload);
    if (rc == EEB_OK)
        rc = eeb_rundb_event_add(k->db->run, k->id, t, eeb_utc_ns(), EEB_EVENT_SCORE, text, err,
                                 errlen);
    free(text);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_set_state(k->db->run, k->id, o->pass ? EEB_RUN_DONE : EEB_RUN_FAILED,
                                     err, errlen);
    return rc;
}

/* The sampler's counters from the body ({"samples_dropped": n,
 * "reads_failed": n, "deadlines_missed": n}, each optional), stored as
 * the run's results for the validity rules; or the 400 sent. */
static int store_counters(struct call *k, enum MHD_Result *sent)
{
    static const char *const counters[] = {EEB_RESULT_DROPPED, EEB_RESULT_FAILED,
                                           EEB_RESULT_MISSED};
    int64_t n[3] = {0, 0, 0};
    struct fault f = {.field = ""};
    char err[512];
    if (k->q->len) {
        json_t *body = call_body(k, sent);
        if (!body)
            return 0;
        int rc = 0;
        const char *key;
        json_t *v;
        json_object_foreach(body, key, v)
        {
            int i = 0;
            while (i < 3 && strcmp(key, counters[i]))
                i++;
            rc = i < 3 ? int_field(v, key, 0, INT32_MAX, &n[i], &f) : bad(&f, key, "unknown field");
            if (rc)
                break;
        }
        json_decref(body);
        if (rc) {
            *sent = fail_fault(k, &f);
            return 0;
        }
    }
    for (int i = 0; i < 3; i++)
        if (eeb_rundb_result_set(k->db->run, k->id, counters[i], (double)n[i], "1", "counter", err,
                                 sizeof err)) {
            *sent = call_fail(k, 500, NULL, err);
            return 0;
        }
    return 1;
}

/* POST /api/v1/runs/{id}/score [counters]: judges the run from what it
 * sent and the labels the server holds.  Asked again, it answers the same
 * verdict. */
enum MHD_Result api_score(struct call *k)
{
    enum MHD_Result sent;
    if (strcmp(k->run.state, "scored") == 0)
        return call_json(k, 200, run_json(&k->run));
    if (!in_state(k, "complete", NULL, &sent) || !store_counters(k, &sent))
        return sent;
    struct eeb_run_outcome o = {0};
    char err[512];
    if (eeb_run_judge(store_path(k->s->store), k->id, NAN, &o, err, sizeof err))
        return call_fail(k, 500, NULL, err);
    o.complete = 1;
    o.device_time_s = o.device_energy_j = NAN; /* the server models no device */
    /* an official run's fine-tuning happened between register and complete */
    double seen_s = (double)(k->run.completed_utc_ns - k->run.registered_utc_ns) / 1e9;
    if (k->run.official && o.valid && o.t_s > seen_s + 1) {
        o.valid = 0, o.pass = 0, o.score.s = NAN;
        size_t n = strlen(o.why);
        snprintf(o.why + n, sizeof o.why - n,
                 "%sthe fine-tune window (%.3f s) is longer than the server saw between "
                 "register and complete (%.3f s)",
                 n ? "; " : "", o.t_s, seen_s);
    }
    struct store_run *r = &k->run;
    snprintf(r->verdict, sizeof r->verdict, "%s", eeb_run_verdict(&o, 0));
    snprintf(r->why, sizeof r->why, "%s", o.why);
    r->s = o.pass ? o.score.s : NAN;
    r->m_u = o.score.m_u, r->m_t = o.score.m_t, r->m_p = o.score.m_p, r->m_s = o.score.m_s;
    r->t_s = o.t_s, r->energy_j = o.energy_j;
    if (record_verdict(k, &o, err, sizeof err))
        return call_fail(k, 500, NULL, err);
    int moved = store_run_scored(k->db->h, r, err, sizeof err);
    if (moved < 0)
        return call_fail(k, 500, NULL, err);
    if (!moved) /* scored by a request racing this one: its verdict stands */
        return call_fail(k, 409, "state", "the run was scored meanwhile");
    snprintf(r->state, sizeof r->state, "scored");
    atomic_fetch_add(&k->s->scored, 1); /* the leaderboard's answers are stale */
    return call_json(k, 200, run_json(r));
}
