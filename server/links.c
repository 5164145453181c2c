/*
 * links.c - POST /api/v1/runs/{id}/links: links of a run's chain with
 * their records, read and checked (one spelling of a source, a meter's
 * range, one run's origin), each against the chain held, and stamped with
 * the server's clock; a link sent again changes nothing.
 */
#include "server_int.h"

#include "power/eeb_power.h"
#include "rundb/eeb_rundb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The links one request may carry; the body's cap bounds their records. */
#define LINKS_MAX 4096

/* Hex digits of exactly len characters. */
static int hex_field(json_t *o, const char *key, size_t len, const char *field, const char **out,
                     struct eeb_srv_fault *f)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v || strlen(v) != len || strspn(v, "0123456789abcdef") != len)
        return eeb_srv_bad(f, field, "expected %zu lowercase hex digits", len);
    *out = v;
    return 0;
}

/* [t_mono_ns, t_utc_ns] of x into t. */
static int times_field(json_t *x, const char *field, int64_t t[2], struct eeb_srv_fault *f)
{
    char at[160];
    for (int j = 0; j < 2; j++) {
        snprintf(at, sizeof at, "%s[%d]", field, j);
        if (eeb_srv_int_field(json_array_get(x, (size_t)j), at, 0, INT64_MAX, &t[j], f))
            return -1;
    }
    return 0;
}

/* An event link's [t_mono_ns, t_utc_ns, kind, payload]: the payload is the
 * text of a JSON object, as hashed, or null. */
static int read_event(json_t *x, const char *field, struct eeb_rundb_event *e,
                      struct eeb_srv_fault *f)
{
    char at[112];
    int64_t t[2];
    if (!json_is_array(x) || json_array_size(x) != 4)
        return eeb_srv_bad(f, field, "expected [t_mono_ns, t_utc_ns, kind, payload]");
    if (times_field(x, field, t, f))
        return -1;
    e->t_mono_ns = t[0], e->t_utc_ns = t[1];
    e->kind = json_string_value(json_array_get(x, 2));
    snprintf(at, sizeof at, "%s[2]", field);
    if (!e->kind || !*e->kind || strlen(e->kind) > 32)
        return eeb_srv_bad(f, at, "expected a kind of 1 to 32 characters");
    if (strcmp(e->kind, EEB_EVENT_EVALUATOR) == 0) /* the server's word, never a team's */
        return eeb_srv_bad(f, at, "the %s event is the server's to write", EEB_EVENT_EVALUATOR);
    json_t *p = json_array_get(x, 3);
    snprintf(at, sizeof at, "%s[3]", field);
    e->payload = json_string_value(p);
    if (!json_is_null(p) && !e->payload)
        return eeb_srv_bad(f, at, "expected the payload's JSON text, or null");
    json_t *o = e->payload ? json_loads(e->payload, JSON_REJECT_DUPLICATES, NULL) : NULL;
    int object = json_is_object(o);
    json_decref(o);
    if (e->payload && !object)
        return eeb_srv_bad(f, at, "expected the text of a JSON object");
    return 0;
}

/* A samples link's [[t_mono_ns, t_utc_ns, watts, volts, amps, flags]...]
 * into a new array. */
static int read_samples(json_t *sa, const char *field, struct eeb_rundb_link *l,
                        struct eeb_srv_fault *f)
{
    char at[160];
    size_t i;
    json_t *x;
    if (!json_is_array(sa) || !json_array_size(sa))
        return eeb_srv_bad(f, field, "expected a non-empty array of samples");
    struct eeb_sample *s = calloc(json_array_size(sa), sizeof *s);
    if (!(l->samples = s))
        return eeb_srv_bad(f, field, "out of memory");
    json_array_foreach(sa, i, x)
    {
        int64_t t[2], flags;
        snprintf(at, sizeof at, "%s[%zu]", field, i);
        if (!json_is_array(x) || json_array_size(x) != 6)
            return eeb_srv_bad(f, at, "expected [t_mono_ns, t_utc_ns, watts, volts, amps, flags]");
        if (times_field(x, at, t, f))
            return -1;
        s[i].t_mono_ns = t[0], s[i].t_utc_ns = t[1];
        snprintf(at, sizeof at, "%s[%zu][2]", field, i);
        if (eeb_srv_reading_field(json_array_get(x, 2), at, EEB_SRV_WATTS, &s[i].watts, f))
            return -1;
        snprintf(at, sizeof at, "%s[%zu][3]", field, i);
        if (eeb_srv_reading_field(json_array_get(x, 3), at, EEB_SRV_VOLTS, &s[i].volts, f))
            return -1;
        snprintf(at, sizeof at, "%s[%zu][4]", field, i);
        if (eeb_srv_reading_field(json_array_get(x, 4), at, EEB_SRV_AMPS, &s[i].amps, f))
            return -1;
        snprintf(at, sizeof at, "%s[%zu][5]", field, i);
        if (eeb_srv_int_field(json_array_get(x, 5), at, 0, UINT32_MAX, &flags, f))
            return -1;
        s[i].flags = (uint32_t)flags;
    }
    l->nsamples = json_array_size(sa);
    return 0;
}

/* One link of the body: {seq, kind, head} and its kind's records. */
static int read_link(json_t *x, size_t i, struct eeb_rundb_link *l, struct eeb_srv_fault *f)
{
    char field[64], at[96];
    const char *kind = json_string_value(json_object_get(x, "kind")), *hex;
    snprintf(field, sizeof field, "links[%zu]", i);
    if (!json_is_object(x))
        return eeb_srv_bad(f, field, "expected an object");
    snprintf(at, sizeof at, "%s.seq", field);
    if (eeb_srv_int_field(json_object_get(x, "seq"), at, 0, INT64_MAX / 2, &l->seq, f))
        return -1;
    snprintf(at, sizeof at, "%s.kind", field);
    if (eeb_link_kind_parse(kind, &l->kind))
        return eeb_srv_bad(f, at, "expected origin, event or samples");
    snprintf(at, sizeof at, "%s.head", field);
    if (hex_field(x, "head", 64, at, &hex, f))
        return -1;
    snprintf(l->head, sizeof l->head, "%s", hex);
    if (l->kind == EEB_LINK_ORIGIN) {
        snprintf(at, sizeof at, "%s.config_sha256", field);
        if (hex_field(x, "config_sha256", 64, at, &hex, f))
            return -1;
        snprintf(l->config_sha256, sizeof l->config_sha256, "%s", hex);
        const char *uuid = json_string_value(json_object_get(x, "uuid"));
        snprintf(at, sizeof at, "%s.uuid", field);
        if (!uuid || strlen(uuid) != 36 || strspn(uuid, "0123456789abcdef-") != 36)
            return eeb_srv_bad(f, at, "expected a uuid of 36 characters");
        snprintf(l->uuid, sizeof l->uuid, "%s", uuid);
        return 0;
    }
    if (l->kind == EEB_LINK_EVENT) {
        snprintf(at, sizeof at, "%s.event", field);
        return read_event(json_object_get(x, "event"), at, &l->event, f);
    }
    /* the meter's URI as the run wrote it: its head covers it, so only
     * its length is the server's to bound */
    snprintf(at, sizeof at, "%s.source", field);
    l->source = json_string_value(json_object_get(x, "source"));
    if (!l->source || !*l->source || strlen(l->source) > 1023)
        return eeb_srv_bad(f, at, "expected the meter's URI, 1 to 1023 characters");
    if (!eeb_power_uri_known(l->source)) /* one spelling a scheme: what it fixes is read */
        return eeb_srv_bad(f, at,
                           "expected one of eeb's power sources by its scheme, in lower case "
                           "(hwmon:, rapl:, scpi://, ptd://, replay:, sim:, faulty:)");
    snprintf(at, sizeof at, "%s.samples", field);
    return read_samples(json_object_get(x, "samples"), at, l, f);
}

/* The body's links into a new array of *n (their strings stay in body). */
static int read_links(json_t *body, struct eeb_rundb_link **links, size_t *n,
                      struct eeb_srv_fault *f)
{
    json_t *a = json_object_get(body, "links"), *x;
    size_t i;
    if (!json_is_array(a) || !json_array_size(a))
        return eeb_srv_bad(f, "links", "expected a non-empty array of links");
    if (json_array_size(a) > LINKS_MAX)
        return eeb_srv_bad(f, "links", "more than %d links in one request", LINKS_MAX);
    if (!(*links = calloc(json_array_size(a), sizeof **links)))
        return eeb_srv_bad(f, "links", "out of memory");
    json_array_foreach(a, i, x)
    {
        *n = i + 1;
        if (read_link(x, i, &(*links)[i], f))
            return -1;
    }
    return 0;
}

/* The 409 for links the chain refuses, naming the link. */
static enum MHD_Result refuse_links(struct eeb_srv_call *k, enum eeb_link_verdict v, size_t at,
                                    const struct eeb_rundb_link *l, int64_t next)
{
    char field[32], msg[256];
    snprintf(field, sizeof field, "links[%zu]", at);
    if (v == EEB_LINKS_DIFFERS)
        snprintf(msg, sizeof msg, "link %lld was received before with another head",
                 (long long)l->seq);
    else if (v == EEB_LINKS_GAP)
        snprintf(msg, sizeof msg, "link %lld is not the next: this run's next link is %lld",
                 (long long)l->seq, (long long)next);
    else
        snprintf(msg, sizeof msg,
                 "link %lld: its records do not give its head: the chain breaks there",
                 (long long)l->seq);
    json_t *o =
        json_pack("{s:s, s:s, s:I}", "error", msg, "field", field, "next", (json_int_t)next);
    return eeb_srv_call_json(k, 409, o);
}

/* The links' claims the run may not make, or 0: a source whose readings
 * are modeled (sim:) or declared (replay:) in a run that says more of its
 * figures; a chain whose origin is another run's (a copy, sent again as
 * a new run).  The 400 or 409 sent names the link. */
static int links_refused(struct eeb_srv_call *k, const struct eeb_rundb_link *links, size_t n,
                         enum MHD_Result *sent)
{
    enum eeb_provenance claimed;
    char field[64], msg[320], err[256];
    int known = eeb_provenance_parse(k->run.provenance, &claimed) == 0;
    for (size_t i = 0; i < n; i++) {
        const struct eeb_rundb_link *l = &links[i];
        /* (the server's meter judges a run it reads; the run's own log is
         * only held to it) */
        int fixed = l->kind == EEB_LINK_SAMPLES && !k->run.meter_run
                        ? eeb_power_uri_provenance(l->source)
                        : -1;
        int64_t owner = 0;
        if (fixed >= 0 && known && claimed != EEB_MODELED && (int)claimed != fixed) {
            snprintf(field, sizeof field, "links[%zu].source", i);
            snprintf(msg, sizeof msg, "%.64s reads %s figures; this run's are %s", l->source,
                     eeb_provenance_name((enum eeb_provenance)fixed), k->run.provenance);
            *sent = eeb_srv_call_fail(k, 400, field, msg);
            return 1;
        }
        if (l->kind != EEB_LINK_ORIGIN)
            continue;
        if (eeb_srv_store_origin_owner(k->s->store, l->uuid, l->head, k->id, &owner, err,
                                       sizeof err)) {
            *sent = eeb_srv_call_fail(k, 500, NULL, err);
            return 1;
        }
        if (owner) {
            snprintf(field, sizeof field, "links[%zu]", i);
            snprintf(msg, sizeof msg,
                     "this chain (origin %s) is run %lld's: a run is sent once, as the run it "
                     "is",
                     l->uuid, (long long)owner);
            *sent = eeb_srv_call_fail(k, 409, field, msg);
            return 1;
        }
    }
    return 0;
}

/* POST /api/v1/runs/{id}/links: links of the run's chain with their
 * records, each checked against the chain held before it is stored, and
 * stamped with the server's clock; a link sent again is answered as held.
 * The samples of links new to the server count against the team's quota. */
enum MHD_Result eeb_srv_api_links(struct eeb_srv_call *k)
{
    enum MHD_Result sent;
    if (!eeb_srv_in_state(k, "registered", "complete", &sent))
        return sent;
    json_t *body = eeb_srv_call_body(k, &sent);
    if (!body)
        return sent;
    struct eeb_rundb_link *links = NULL;
    size_t n = 0, at = 0;
    int64_t fresh = 0; /* samples in links the server does not hold yet */
    struct eeb_srv_fault f = {.field = ""};
    char err[512];
    int bad = read_links(body, &links, &n, &f);
    for (size_t i = 0; !bad && i < n; i++)
        fresh += links[i].seq >= k->run.links ? (int64_t)links[i].nsamples : 0;
    if (bad) {
        sent = eeb_srv_fail_fault(k, &f);
    } else if (!links_refused(k, links, n, &sent) &&
               eeb_srv_take_quota(k, EEB_QUOTA_SAMPLES, fresh, &sent)) {
        enum eeb_link_verdict v;
        int64_t next = 0;
        int rc = eeb_srv_store_run_links(k->s->store, k->id, links, n, k->s->cfg.max_samples, &v,
                                         &at, &next, err, sizeof err);
        if (rc || v != EEB_LINKS_STORED) /* nothing of the request is stored */
            eeb_srv_give_back(k, EEB_QUOTA_SAMPLES, fresh);
        if (rc == 1) /* past the run's cap of samples */
            sent = eeb_srv_call_fail(k, 413, "samples", err);
        else if (rc)
            sent = eeb_srv_call_fail(k, rc == EEB_EINVAL ? 400 : 500, NULL, err);
        else if (v != EEB_LINKS_STORED)
            sent = refuse_links(k, v, at, &links[at], next);
        else {
            eeb_srv_meter_heard(k->s, k->id, 0);
            atomic_fetch_add(&k->s->samples_received, (unsigned long long)fresh);
            sent = eeb_srv_call_json(k, 200, json_pack("{s:I}", "next", (json_int_t)next));
        }
    }
    for (size_t i = 0; links && i < n; i++)
        free((void *)links[i].samples);
    free(links);
    json_decref(body);
    return sent;
}
