/*
 * team_client.c - a team's client written for the tests (team_client.h):
 * the API spoken by hand, a chain's heads computed here.
 */
#include "tests/server/team_client.h"

#include "record/eeb_record.h"
#include "rundb/eeb_rundb.h"
#include "tasks/eeb_shard.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

long team_register(struct team_run *t, int port, const char *token, const char *body,
                   json_t **answer)
{
    *t = (struct team_run){
        .port = port, .token = token, .source = "ptd://lab:8888", .watts = 5, .ended = "done"};
    struct reply r = request(port, "POST", "/api/v1/runs", body, strlen(body), token);
    json_t *o = json_loads(r.body ? r.body : "", 0, NULL);
    cr_assert(o, "register: %ld %s", r.code, r.body);
    if (r.code == 201) {
        t->id = json_integer_value(json_object_get(o, "run_id"));
        t->handed_seed = json_integer_value(json_object_get(o, "seed"));
    }
    if (answer)
        *answer = o;
    else
        json_decref(o);
    free(r.body);
    return r.code;
}

struct reply team_post(const struct team_run *t, const char *what, const char *body)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld/%s", t->id, what);
    return request(t->port, "POST", path, body, body ? strlen(body) : 0, t->token);
}

struct reply team_get(const struct team_run *t, const char *what)
{
    char path[96];
    snprintf(path, sizeof path, "/api/v1/runs/%lld%s%s", t->id, *what ? "/" : "", what);
    return request(t->port, "GET", path, NULL, 0, t->token);
}

long team_send(struct team_run *t, json_t *links, struct reply *out)
{
    json_t *body = json_pack("{s:o}", "links", links);
    char *text = json_dumps(body, JSON_COMPACT);
    struct reply r = team_post(t, "links", text);
    free(text);
    json_decref(body);
    if (out)
        *out = r;
    else
        free(r.body);
    return r.code;
}

/* l's head chained on t's, and its seq and head set in o (taken). */
static json_t *chained(struct team_run *t, struct eeb_rundb_link *l, json_t *o)
{
    l->seq = t->seq++;
    eeb_rundb_link_head(l->seq ? t->head : NULL, l, l->head);
    memcpy(t->head, l->head, sizeof t->head);
    json_object_set_new(o, "seq", json_integer(l->seq));
    json_object_set_new(o, "head", json_string(l->head));
    return o;
}

json_t *team_origin(struct team_run *t)
{
    char err[128];
    struct eeb_rundb_link l = {.kind = EEB_LINK_ORIGIN};
    cr_assert_eq(eeb_uuid4(t->uuid, err, sizeof err), EEB_OK, "%s", err);
    memcpy(l.uuid, t->uuid, sizeof l.uuid);
    memset(l.config_sha256, 'a', 64);
    t->last_sample_ns = clock_ns(CLOCK_MONOTONIC) - 1000000000;
    return chained(t, &l,
                   json_pack("{s:s, s:s, s:s}", "kind", "origin", "uuid", l.uuid, "config_sha256",
                             l.config_sha256));
}

json_t *team_event(struct team_run *t, const char *kind, const char *payload)
{
    struct eeb_rundb_link l = {
        .kind = EEB_LINK_EVENT,
        .event = {clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME), kind, payload}};
    return chained(t, &l,
                   json_pack("{s:s, s:[I, I, s, s?]}", "kind", "event", "event",
                             (json_int_t)l.event.t_mono_ns, (json_int_t)l.event.t_utc_ns, kind,
                             payload));
}

json_t *team_samples(struct team_run *t)
{
    struct eeb_sample s[128];
    json_t *rows = json_array();
    int64_t now = clock_ns(CLOCK_MONOTONIC), utc = clock_ns(CLOCK_REALTIME);
    size_t n = 0;
    for (int64_t at = t->last_sample_ns + 20000000; at <= now && n < 128; at += 20000000) {
        s[n] = (struct eeb_sample){at, utc - (now - at), NAN, NAN, t->watts, 0};
        json_array_append_new(rows, json_pack("[I, I, f, n, n, i]", (json_int_t)at,
                                              (json_int_t)s[n].t_utc_ns, t->watts, 0));
        t->last_sample_ns = at, n++;
    }
    struct eeb_rundb_link l = {
        .kind = EEB_LINK_SAMPLES, .source = t->source, .samples = s, .nsamples = n};
    return chained(
        t, &l,
        json_pack("{s:s, s:s, s:o}", "kind", "samples", "source", t->source, "samples", rows));
}

void team_stream(struct team_run *t, json_t *links)
{
    struct reply r;
    long code = team_send(t, links, &r);
    cr_assert_eq(code, 200, "links of run %lld: %ld %s", t->id, code, r.body);
    free(r.body);
}

/* The links a and b (NULL: none) in one request, in order: their heads
 * chain, and C leaves the order of a call's arguments open, so each is
 * made before the call. */
static void send_all(struct team_run *t, json_t *a, json_t *b)
{
    json_t *links = json_array();
    json_array_append_new(links, a);
    if (b)
        json_array_append_new(links, b);
    team_stream(t, links);
}

json_t *team_audit(struct team_run *t, const char *when, long long seed)
{
    uint64_t idx[EEB_TRAINING_AUDIT_ITEMS];
    int n = eeb_run_training_audit_slice((uint64_t)seed, TEAM_AUDIT_SET, idx);
    json_t *items = json_array(), *answers = json_array();
    for (int i = 0; i < n; i++) {
        char d[17];
        snprintf(d, sizeof d, "%c%015x", when[0], (unsigned)i);
        json_array_append_new(items, json_integer((json_int_t)idx[i]));
        json_array_append_new(answers, json_string(d));
    }
    json_t *p = json_pack("{s:s, s:I, s:i, s:o, s:o}", EEB_TRAINING_AUDIT_KEY_WHEN, when,
                          EEB_EVENT_KEY_SEED, (json_int_t)seed, EEB_TRAINING_AUDIT_KEY_SET_ITEMS,
                          TEAM_AUDIT_SET, EEB_TRAINING_AUDIT_KEY_ITEMS, items,
                          EEB_TRAINING_AUDIT_KEY_ANSWERS, answers);
    char *text = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    json_t *e = team_event(t, EEB_EVENT_TRAINING_AUDIT, text);
    free(text);
    return e;
}

/* The seed an audit draws with: the one the run trains with, or the
 * one it was handed. */
static long long audit_seed(const struct team_run *t)
{
    return t->trains_with > 0 ? t->trains_with : t->handed_seed;
}

void team_begin(struct team_run *t, long long seed)
{
    json_t *origin = team_origin(t);
    send_all(t, origin, team_samples(t));
    struct reply r = team_post(t, "begin", NULL);
    cr_assert_eq(r.code, 200, "begin: %s", r.body);
    free(r.body);
    char payload[96];
    if (seed == 0)
        seed = t->handed_seed;
    t->trains_with = seed;
    if (t->handed_seed > 0 && !t->no_audit)
        send_all(t, team_audit(t, EEB_TRAINING_AUDIT_BEFORE, audit_seed(t)), NULL);
    if (seed > 0)
        snprintf(payload, sizeof payload, "{\"seed\": %lld}", seed);
    send_all(t, team_event(t, EEB_EVENT_FINETUNE_BEGIN, seed > 0 ? payload : NULL), NULL);
}

void team_fine_tune(struct team_run *t, int steps, long long complete_step, long long seed)
{
    team_begin(t, seed);
    char payload[96];
    struct reply r;
    for (int i = 1; i <= steps; i++) {
        usleep(300000 / (useconds_t)(steps > 0 ? steps : 1));
        json_t *samples = team_samples(t);
        snprintf(payload, sizeof payload, "{\"step\": %d}", i);
        send_all(t, samples, team_event(t, EEB_EVENT_TRAIN, payload));
    }
    snprintf(payload, sizeof payload, "{\"reason\": \"%s\", \"step\": %lld}", t->ended,
             complete_step);
    json_t *complete = team_event(t, EEB_EVENT_COMPLETE, payload);
    send_all(t, complete, team_event(t, EEB_EVENT_FINETUNE_END, NULL));
    if (t->handed_seed > 0 && !t->no_audit) {
        json_t *stopped = team_event(t, EEB_EVENT_STOPPED, NULL); /* links in their order */
        send_all(t, stopped, team_audit(t, EEB_TRAINING_AUDIT_AFTER, audit_seed(t)));
    }
    usleep(60000);
    send_all(t, team_samples(t), NULL);
    r = team_post(t, "complete", NULL);
    cr_assert_eq(r.code, 200, "complete: %s", r.body);
    free(r.body);
}

int team_test_inputs(const struct team_run *t, char (**ids)[256], uint8_t **pixels, size_t *px)
{
    struct reply r = team_get(t, "test");
    cr_assert_eq(r.code, 200, "test inputs of run %lld: %ld %s", t->id, r.code,
                 r.code == 200 ? "" : r.body);
    char path[300], err[256];
    snprintf(path, sizeof path, "%s/inputs-%lld.eebd", test_tmpdir(), t->id);
    test_write_file(path, r.body, r.len);
    free(r.body);
    struct eeb_shard *sh;
    cr_assert_eq(eeb_shard_open(&sh, path, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *info = eeb_shard_info(sh);
    int n = (int)info->count;
    *ids = calloc((size_t)n + 1, sizeof **ids);
    if (px)
        *px = eeb_shard_pixels(info);
    if (pixels)
        *pixels = malloc((size_t)n * eeb_shard_pixels(info) + 1);
    const struct eeb_record *rec;
    for (int i = 0; i < n && eeb_shard_next(sh, &rec, err, sizeof err) == 1; i++) {
        snprintf((*ids)[i], sizeof **ids, "%s", rec->id);
        cr_expect_eq(rec->label, 0, "a label served: item %d", i);
        if (pixels)
            memcpy(*pixels + (size_t)i * eeb_shard_pixels(info), rec->pixels,
                   eeb_shard_pixels(info));
    }
    eeb_shard_close(sh);
    return n;
}
