/*
 * chain.c - the hash chain of a run's records: each event and each batch
 * of samples a link whose head commits to the link before it, written in
 * the same transaction as its records; a server's copy stored link by
 * link, each checked as it arrives; and the whole chain verified from the
 * records, its first fault located.
 *
 * The bytes hashed (docs/check.md says the same):
 *   origin:  "eeb-chain-1\0origin\0" uuid "\0" sha256(config) "\0"
 *   event:   prev "\0event\0" le64 t_mono le64 t_utc kind "\0" u8 has_payload payload "\0"
 *   samples: prev "\0samples\0" source "\0" le64 n, then per sample
 *            le64 t_mono le64 t_utc f64 watts f64 volts f64 amps le32 flags
 * where prev is the previous head in hex, a missing (or not finite) volts
 * or amps is the quiet NaN 0x7ff8000000000000, and -0.0 is +0.0.
 */
#include "rundb_int.h"

#include <math.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most samples a link eeb writes holds: about 100 KB as the server
 * takes them; and the most a stored link may claim (a server's, received
 * from another writer) before the file is taken for damaged. */
#define LINK_SAMPLES_MAX        1024
#define LINK_SAMPLES_STORED_MAX (1 << 20)

static const char *const kind_names[EEB_LINK_KIND_COUNT] = {"origin", "event", "samples"};

const char *eeb_link_kind_name(enum eeb_link_kind kind)
{
    return (unsigned)kind < EEB_LINK_KIND_COUNT ? kind_names[kind] : "?";
}

int eeb_link_kind_parse(const char *name, enum eeb_link_kind *out)
{
    for (int k = 0; k < EEB_LINK_KIND_COUNT; k++)
        if (name && strcmp(name, kind_names[k]) == 0) {
            *out = (enum eeb_link_kind)k;
            return EEB_OK;
        }
    return EEB_EINVAL;
}

/* ---- The bytes hashed ---- */

static void put_text(EVP_MD_CTX *c, const char *s)
{
    EVP_DigestUpdate(c, s ? s : "", s ? strlen(s) + 1 : 1);
}

static void put_u64(EVP_MD_CTX *c, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    EVP_DigestUpdate(c, b, sizeof b);
}

/* A number as SQLite gives it back: -0.0 is stored as the integer 0 and
 * read as +0.0, and a figure that is not finite is sent as null, so both
 * hash as what they come back as. */
static void put_f64(EVP_MD_CTX *c, double v)
{
    uint64_t bits = UINT64_C(0x7ff8000000000000);
    if (v == 0)
        bits = 0;
    else if (isfinite(v))
        memcpy(&bits, &v, sizeof bits);
    put_u64(c, bits);
}

static void put_samples(EVP_MD_CTX *c, const struct eeb_rundb_link *l)
{
    put_text(c, l->source);
    put_u64(c, (uint64_t)l->nsamples);
    for (size_t i = 0; i < l->nsamples; i++) {
        const struct eeb_sample *s = &l->samples[i];
        put_u64(c, (uint64_t)s->t_mono_ns);
        put_u64(c, (uint64_t)s->t_utc_ns);
        put_f64(c, s->watts);
        put_f64(c, s->volts);
        put_f64(c, s->amps);
        unsigned char f[4] = {(unsigned char)s->flags, (unsigned char)(s->flags >> 8),
                              (unsigned char)(s->flags >> 16), (unsigned char)(s->flags >> 24)};
        EVP_DigestUpdate(c, f, sizeof f);
    }
}

void eeb_rundb_link_head(const char *prev, const struct eeb_rundb_link *l,
                         char head[EEB_SHA256_HEX])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned n = 0;
    if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(c);
        head[0] = '\0'; /* matches no head: the link is refused, not trusted */
        return;
    }
    put_text(c, l->kind == EEB_LINK_ORIGIN ? "eeb-chain-1" : prev);
    put_text(c, eeb_link_kind_name(l->kind));
    if (l->kind == EEB_LINK_ORIGIN) {
        put_text(c, l->uuid);
        put_text(c, l->config_sha256);
    } else if (l->kind == EEB_LINK_EVENT) {
        put_u64(c, (uint64_t)l->event.t_mono_ns);
        put_u64(c, (uint64_t)l->event.t_utc_ns);
        put_text(c, l->event.kind);
        unsigned char has = l->event.payload != NULL;
        EVP_DigestUpdate(c, &has, 1);
        put_text(c, l->event.payload);
    } else {
        put_samples(c, l);
    }
    EVP_DigestFinal_ex(c, md, &n);
    EVP_MD_CTX_free(c);
    for (unsigned i = 0; i < 32; i++)
        snprintf(head + 2 * i, 3, "%02x", md[i]);
}

/* ---- Links written by the run ---- */

/* The run's last link into *seq and head (*seq -1 without any). */
static int tip(struct eeb_rundb *db, int64_t run, int64_t *seq, char head[EEB_SHA256_HEX],
               char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db, "SELECT seq, head FROM links WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
                      &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    *seq = -1;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        *seq = sqlite3_column_int64(st, 0);
        snprintf(head, EEB_SHA256_HEX, "%s", (const char *)sqlite3_column_text(st, 1));
    } else if (step != SQLITE_DONE) {
        rc = rundb_error(db, "reading the chain's last link", err, errlen);
    }
    sqlite3_finalize(st);
    return rc;
}

/* l stored; its records begin at row first_row of their table. */
static int insert_link(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_link *l,
                       int64_t first_row, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db,
                      "INSERT INTO links (run_id, seq, kind, count, head, origin_uuid,"
                      " origin_config, at_utc_ns, first_row) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      &st, err, errlen);
    if (rc)
        return rc;
    int origin = l->kind == EEB_LINK_ORIGIN;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, l->seq);
    sqlite3_bind_text(st, 3, eeb_link_kind_name(l->kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, l->kind == EEB_LINK_SAMPLES ? (int64_t)l->nsamples : !origin);
    sqlite3_bind_text(st, 5, l->head, -1, SQLITE_STATIC);
    if (origin) {
        sqlite3_bind_text(st, 6, l->uuid, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 7, l->config_sha256, -1, SQLITE_STATIC);
    }
    sqlite3_bind_int64(st, 8, l->at_utc_ns);
    if (!origin)
        sqlite3_bind_int64(st, 9, first_row);
    return rundb_step_done(db, st, "adding a link to the chain", err, errlen);
}

/* l appended after the run's last link, if the run has a chain. */
static int append(struct eeb_rundb *db, int64_t run, struct eeb_rundb_link *l, int64_t first_row,
                  char *err, size_t errlen)
{
    char prev[EEB_SHA256_HEX];
    int rc = tip(db, run, &l->seq, prev, err, errlen);
    if (rc || l->seq < 0)
        return rc;
    l->seq++;
    l->at_utc_ns = eeb_utc_ns();
    eeb_rundb_link_head(prev, l, l->head);
    return insert_link(db, run, l, first_row, err, errlen);
}

int rundb_chain_origin(struct eeb_rundb *db, int64_t run, const char *uuid, const char *config,
                       char *err, size_t errlen)
{
    struct eeb_rundb_link l = {.seq = 0, .kind = EEB_LINK_ORIGIN, .at_utc_ns = eeb_utc_ns()};
    snprintf(l.uuid, sizeof l.uuid, "%s", uuid);
    eeb_sha256(config, strlen(config), l.config_sha256);
    eeb_rundb_link_head(NULL, &l, l.head);
    return insert_link(db, run, &l, 0, err, errlen);
}

int rundb_chain_event(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_event *e,
                      int64_t row, char *err, size_t errlen)
{
    struct eeb_rundb_link l = {.kind = EEB_LINK_EVENT, .event = *e};
    return append(db, run, &l, row, err, errlen);
}

int rundb_chain_samples(struct eeb_rundb *db, int64_t run, const char *source,
                        const struct eeb_sample *s, size_t n, int64_t first, char *err,
                        size_t errlen)
{
    int rc = EEB_OK;
    /* a batch that piled up (a writer held up) is more than one link, so
     * that each fits a request; its rows were inserted one after another */
    for (size_t i = 0; rc == EEB_OK && i < n; i += LINK_SAMPLES_MAX) {
        struct eeb_rundb_link l = {.kind = EEB_LINK_SAMPLES,
                                   .source = source,
                                   .samples = s + i,
                                   .nsamples = n - i < LINK_SAMPLES_MAX ? n - i : LINK_SAMPLES_MAX};
        rc = append(db, run, &l, first + (int64_t)i, err, errlen);
    }
    return rc;
}

/* ---- Walking the links with their records ---- */

/* Three cursors: the links by seq, the events by id, the samples in the
 * order written. */
struct walk {
    struct eeb_rundb *db;
    sqlite3_stmt *links, *events, *samples;
    struct eeb_sample *buf;
    size_t cap;
    char source[1024];
    int64_t event_id, first_sample; /* the link's records, for messages */
    int64_t short_of;               /* records the link holds that are not stored */
};

static void walk_close(struct walk *w)
{
    sqlite3_finalize(w->links);
    sqlite3_finalize(w->events);
    sqlite3_finalize(w->samples);
    free(w->buf);
}

/* The row where the records of run's links from seq from on begin in
 * table kind's (INT64_MAX: none). */
static int first_row(struct eeb_rundb *db, int64_t run, int64_t from, enum eeb_link_kind kind,
                     int64_t *row, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc = rundb_prepare(db,
                           "SELECT min(first_row) FROM links WHERE run_id = ? AND seq >= ? AND "
                           "kind = ?",
                           &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, from);
    sqlite3_bind_text(st, 3, eeb_link_kind_name(kind), -1, SQLITE_STATIC);
    *row = INT64_MAX;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *row = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return EEB_OK;
}

/* A walk of run's links from seq from on.  From 0 it reads every record
 * in order, trusting nothing the links say of where they are; from later,
 * the links' first rows say where to start (an uploader's shortcut: a
 * wrong one only gives heads that do not chain). */
static int walk_open(struct walk *w, struct eeb_rundb *db, int64_t run, int64_t from, char *err,
                     size_t errlen)
{
    *w = (struct walk){.db = db};
    int64_t events = 0, samples = 0;
    int rc = from > 0 ? first_row(db, run, from, EEB_LINK_EVENT, &events, err, errlen) : EEB_OK;
    if (!rc && from > 0)
        rc = first_row(db, run, from, EEB_LINK_SAMPLES, &samples, err, errlen);
    if (!rc)
        rc = rundb_prepare(db,
                           "SELECT seq, kind, count, head, origin_uuid, origin_config, at_utc_ns"
                           " FROM links WHERE run_id = ?1 AND seq >= ?2 ORDER BY seq",
                           &w->links, err, errlen);
    if (!rc)
        rc = rundb_prepare(db,
                           "SELECT id, t_mono_ns, t_utc_ns, kind, payload FROM events"
                           " WHERE run_id = ?1 AND id >= ?2 ORDER BY id",
                           &w->events, err, errlen);
    if (!rc)
        rc = rundb_prepare(db,
                           "SELECT rowid, source, t_mono_ns, t_utc_ns, volts, amps, watts, flags"
                           " FROM samples WHERE run_id = ?1 AND rowid >= ?2 ORDER BY rowid",
                           &w->samples, err, errlen);
    if (rc) {
        walk_close(w);
        return rc;
    }
    sqlite3_bind_int64(w->links, 1, run);
    sqlite3_bind_int64(w->links, 2, from);
    sqlite3_bind_int64(w->events, 1, run);
    sqlite3_bind_int64(w->events, 2, events);
    sqlite3_bind_int64(w->samples, 1, run);
    sqlite3_bind_int64(w->samples, 2, samples);
    return EEB_OK;
}

static double optional_at(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static int read_samples(struct walk *w, struct eeb_rundb_link *l, int64_t count, char *err,
                        size_t errlen)
{
    if (count < 0 || count > LINK_SAMPLES_STORED_MAX)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: link %lld says it holds %lld samples",
                        w->db->path, (long long)l->seq, (long long)count);
    if ((size_t)count > w->cap) {
        struct eeb_sample *more = realloc(w->buf, (size_t)count * sizeof *more);
        if (!more)
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", w->db->path);
        w->buf = more, w->cap = (size_t)count;
    }
    w->source[0] = '\0';
    l->nsamples = 0;
    for (int64_t i = 0; i < count; i++) {
        int step = sqlite3_step(w->samples);
        if (step == SQLITE_DONE)
            break;
        if (step != SQLITE_ROW)
            return rundb_error(w->db, "reading samples", err, errlen);
        sqlite3_stmt *st = w->samples;
        if (i == 0) {
            w->first_sample = sqlite3_column_int64(st, 0);
            snprintf(w->source, sizeof w->source, "%s", (const char *)sqlite3_column_text(st, 1));
        } else if (strcmp(w->source, (const char *)sqlite3_column_text(st, 1))) {
            w->source[0] = '\0'; /* two sources in one batch: no batch eeb wrote */
        }
        w->buf[l->nsamples++] = (struct eeb_sample){
            .t_mono_ns = sqlite3_column_int64(st, 2),
            .t_utc_ns = sqlite3_column_int64(st, 3),
            .volts = optional_at(st, 4),
            .amps = optional_at(st, 5),
            .watts = sqlite3_column_double(st, 6),
            .flags = (uint32_t)sqlite3_column_int64(st, 7),
        };
    }
    l->samples = w->buf, l->source = w->source;
    w->short_of = count - (int64_t)l->nsamples;
    return EEB_OK;
}

/* The next link with its records: 1, 0 after the last, or an error. */
static int walk_next(struct walk *w, struct eeb_rundb_link *l, char *err, size_t errlen)
{
    int step = sqlite3_step(w->links);
    if (step == SQLITE_DONE)
        return 0;
    if (step != SQLITE_ROW)
        return rundb_error(w->db, "reading the chain", err, errlen);
    sqlite3_stmt *st = w->links;
    *l = (struct eeb_rundb_link){.seq = sqlite3_column_int64(st, 0),
                                 .at_utc_ns = sqlite3_column_int64(st, 6)};
    if (eeb_link_kind_parse((const char *)sqlite3_column_text(st, 1), &l->kind))
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: link %lld has no kind eeb knows",
                        w->db->path, (long long)l->seq);
    snprintf(l->head, sizeof l->head, "%s", (const char *)sqlite3_column_text(st, 3));
    w->short_of = 0;
    if (l->kind == EEB_LINK_ORIGIN) {
        const unsigned char *u = sqlite3_column_text(st, 4), *c = sqlite3_column_text(st, 5);
        snprintf(l->uuid, sizeof l->uuid, "%s", u ? (const char *)u : "");
        snprintf(l->config_sha256, sizeof l->config_sha256, "%s", c ? (const char *)c : "");
    } else if (l->kind == EEB_LINK_EVENT) {
        step = sqlite3_step(w->events);
        if (step == SQLITE_ROW) {
            sqlite3_stmt *e = w->events;
            w->event_id = sqlite3_column_int64(e, 0);
            l->event = (struct eeb_rundb_event){
                .t_mono_ns = sqlite3_column_int64(e, 1),
                .t_utc_ns = sqlite3_column_int64(e, 2),
                .kind = (const char *)sqlite3_column_text(e, 3),
                .payload = (const char *)sqlite3_column_text(e, 4),
            };
        } else if (step == SQLITE_DONE) {
            w->short_of = 1;
        } else {
            return rundb_error(w->db, "reading events", err, errlen);
        }
    } else {
        int rc = read_samples(w, l, sqlite3_column_int64(st, 2), err, errlen);
        if (rc)
            return rc;
    }
    return 1;
}

int eeb_rundb_links_each(struct eeb_rundb *db, int64_t run, int64_t from,
                         int (*fn)(void *arg, const struct eeb_rundb_link *l), void *arg, char *err,
                         size_t errlen)
{
    struct walk w;
    struct eeb_rundb_link l;
    int rc = walk_open(&w, db, run, from, err, errlen), more = 0;
    while (rc == EEB_OK && (more = walk_next(&w, &l, err, errlen)) == 1) {
        if (w.short_of)
            rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: run %lld: link %lld's records are missing",
                          db->path, (long long)run, (long long)l.seq);
        else
            rc = fn(arg, &l);
    }
    if (rc == EEB_OK && more < 0)
        rc = more;
    walk_close(&w);
    return rc;
}

/* ---- Verifying a chain ---- */

/* The run's row and the first event's time, for messages. */
/* Whether uuid is a run's of the file: a copy whose origin names it is a
 * server's record of that run, taken back (copy.c). */
static int names_a_run(struct eeb_rundb *db, const char *uuid)
{
    sqlite3_stmt *st;
    int found = 0;
    if (sqlite3_prepare_v2(db->h, "SELECT 1 FROM runs WHERE uuid = ?", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, uuid, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

struct verify {
    struct eeb_rundb *db;
    struct eeb_chain_check *out;
    struct eeb_run_row row;
    int keeps_copies; /* the file keeps another set of tables (a server's runs received) */
    int64_t t0;
    char head[EEB_SHA256_HEX];
};

static double since(const struct verify *v, int64_t t_mono_ns)
{
    return (double)(t_mono_ns - v->t0) / 1e9;
}

static void broken(struct verify *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void broken(struct verify *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->out->why, sizeof v->out->why, fmt, ap);
    va_end(ap);
    v->out->broken = 1;
}

/* Where link l's records are, as people find them. */
static void locate(const struct verify *v, const struct walk *w, const struct eeb_rundb_link *l,
                   char *out, size_t n)
{
    if (l->kind == EEB_LINK_EVENT)
        snprintf(out, n, "event %lld (%s at %.3f s)", (long long)w->event_id, l->event.kind,
                 since(v, l->event.t_mono_ns));
    else if (l->kind == EEB_LINK_SAMPLES && l->nsamples)
        snprintf(out, n, "samples %lld to %lld of %s (%.3f to %.3f s)", (long long)w->first_sample,
                 (long long)w->first_sample + (long long)l->nsamples - 1,
                 l->source[0] ? l->source : "two sources", since(v, l->samples[0].t_mono_ns),
                 since(v, l->samples[l->nsamples - 1].t_mono_ns));
    else
        snprintf(out, n, "the run's origin (its uuid and configuration)");
}

/* One link against the chain so far: 0, or the fault recorded. */
static int verify_link(struct verify *v, const struct walk *w, const struct eeb_rundb_link *l)
{
    char where[256], head[EEB_SHA256_HEX];
    int64_t expect = v->out->links;
    if (l->seq != expect) {
        broken(v, "link %lld is missing: the chain goes from link %lld to %lld", (long long)expect,
               (long long)expect - 1, (long long)l->seq);
        return -1;
    }
    if ((l->seq == 0) != (l->kind == EEB_LINK_ORIGIN)) {
        broken(v, "link %lld is %s: a chain begins with its origin, and only there",
               (long long)l->seq, eeb_link_kind_name(l->kind));
        return -1;
    }
    locate(v, w, l, where, sizeof where);
    if (w->short_of) {
        broken(v, "link %lld: %lld of its records are gone (%s)", (long long)l->seq,
               (long long)w->short_of, l->kind == EEB_LINK_EVENT ? "its event" : where);
        return -1;
    }
    if (l->kind == EEB_LINK_SAMPLES && !l->source[0]) {
        broken(v,
               "link %lld (%s): its samples are from more than one source: changed after the "
               "fact",
               (long long)l->seq, where);
        return -1;
    }
    eeb_rundb_link_head(v->head, l, head);
    if (strcmp(head, l->head)) {
        broken(v,
               "link %lld (%s): its records are not the ones written (its head was %.12s…, "
               "they now give %.12s…): changed, added or removed after the fact",
               (long long)l->seq, where, l->head, head);
        return -1;
    }
    if (l->kind == EEB_LINK_ORIGIN) {
        char config[EEB_SHA256_HEX];
        eeb_sha256(v->row.config, strlen(v->row.config), config);
        v->out->received = strcmp(l->uuid, v->row.uuid) != 0;
        if (v->out->received && !v->keeps_copies && !names_a_run(v->db, l->uuid)) {
            broken(v,
                   "link 0: the run's uuid (%s) is not the one its chain began with (%s), in a "
                   "file that keeps no received runs: changed after the fact",
                   v->row.uuid, l->uuid);
            return -1;
        }
        if (!v->out->received && strcmp(config, l->config_sha256)) {
            broken(v,
                   "link 0: the run's configuration is not the one it began with (sha256 "
                   "%.12s…, now %.12s…)",
                   l->config_sha256, config);
            return -1;
        }
    } else if (l->kind == EEB_LINK_EVENT) {
        v->out->events++;
    } else {
        v->out->samples += (int64_t)l->nsamples;
    }
    memcpy(v->head, head, sizeof head);
    v->out->links++;
    return 0;
}

/* Records no link holds: added after the fact. */
static int unlinked(struct verify *v, struct walk *w, char *err, size_t errlen)
{
    int step = sqlite3_step(w->events);
    if (step == SQLITE_ROW) {
        broken(v, "event %lld (%s at %.3f s) is in no link: added after the fact",
               (long long)sqlite3_column_int64(w->events, 0),
               (const char *)sqlite3_column_text(w->events, 3),
               since(v, sqlite3_column_int64(w->events, 1)));
        return EEB_OK;
    }
    if (step != SQLITE_DONE)
        return rundb_error(v->db, "reading events", err, errlen);
    step = sqlite3_step(w->samples);
    if (step == SQLITE_ROW)
        broken(v, "sample %lld (%s at %.3f s) is in no link: added after the fact",
               (long long)sqlite3_column_int64(w->samples, 0),
               (const char *)sqlite3_column_text(w->samples, 1),
               since(v, sqlite3_column_int64(w->samples, 2)));
    else if (step != SQLITE_DONE)
        return rundb_error(v->db, "reading samples", err, errlen);
    return EEB_OK;
}

static int first_event_time(struct eeb_rundb *db, int64_t run, int64_t *t0, char *err,
                            size_t errlen)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db, "SELECT min(t_mono_ns) FROM events WHERE run_id = ?", &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    *t0 = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return EEB_OK;
}

/* Whether the file keeps a set of tables beside the run tables: a server's
 * database, whose runs were received and begun elsewhere. */
static int keeps_copies(struct eeb_rundb *db)
{
    sqlite3_stmt *st;
    int n = 0;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM schema_sets", -1, &st, NULL) != SQLITE_OK)
        return 0; /* no such table: no other set */
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return n > 0;
}

int eeb_rundb_chain_check(struct eeb_rundb *db, int64_t run, struct eeb_chain_check *out, char *err,
                          size_t errlen)
{
    struct verify v = {.db = db, .out = out, .keeps_copies = keeps_copies(db)};
    memset(out, 0, sizeof *out);
    int rc = eeb_rundb_run_get(db, run, &v.row, err, errlen);
    if (rc)
        return rc;
    struct walk w;
    struct eeb_rundb_link l;
    int more = 0;
    if ((rc = first_event_time(db, run, &v.t0, err, errlen)) == EEB_OK &&
        (rc = walk_open(&w, db, run, 0, err, errlen)) == EEB_OK) {
        while ((more = walk_next(&w, &l, err, errlen)) == 1 && verify_link(&v, &w, &l) == 0)
            ;
        if (more < 0)
            rc = more;
        else if (!out->broken && out->links)
            rc = unlinked(&v, &w, err, errlen);
        walk_close(&w);
    }
    memcpy(out->head, v.head, sizeof v.head);
    eeb_rundb_run_row_free(&v.row);
    return rc;
}

/* ---- A server's copy ---- */

/* The records of l stored, inside the caller's transaction; the row they
 * begin at into *first_row. */
static int store_records(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_link *l,
                         int64_t *first_row, char *err, size_t errlen)
{
    if (l->kind == EEB_LINK_EVENT)
        return rundb_insert_event(db, run, &l->event, first_row, err, errlen);
    if (l->kind == EEB_LINK_SAMPLES)
        return rundb_insert_samples(db, run, l->source, l->samples, l->nsamples, first_row, err,
                                    errlen);
    return EEB_OK;
}

/* The head held for link seq into held ("" if none). */
static int held_head(struct eeb_rundb *db, int64_t run, int64_t seq, char held[EEB_SHA256_HEX],
                     char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int rc =
        rundb_prepare(db, "SELECT head FROM links WHERE run_id = ? AND seq = ?", &st, err, errlen);
    if (rc)
        return rc;
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_int64(st, 2, seq);
    held[0] = '\0';
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW)
        snprintf(held, EEB_SHA256_HEX, "%s", (const char *)sqlite3_column_text(st, 0));
    else if (step != SQLITE_DONE)
        rc = rundb_error(db, "reading a link", err, errlen);
    sqlite3_finalize(st);
    return rc;
}

/* One received link: stored, held, or the verdict that refuses it. */
static int add_one(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_link *l,
                   int64_t at_utc_ns, int64_t *next, char prev[EEB_SHA256_HEX],
                   enum eeb_link_verdict *verdict, char *err, size_t errlen)
{
    char head[EEB_SHA256_HEX];
    if (l->seq < *next) {
        int rc = held_head(db, run, l->seq, head, err, errlen);
        if (rc == EEB_OK && strcmp(head, l->head))
            *verdict = EEB_LINKS_DIFFERS;
        return rc;
    }
    if (l->seq > *next || (l->seq == 0) != (l->kind == EEB_LINK_ORIGIN)) {
        *verdict = EEB_LINKS_GAP;
        return EEB_OK;
    }
    eeb_rundb_link_head(prev, l, head);
    if (strcmp(head, l->head)) {
        *verdict = EEB_LINKS_BREAKS;
        return EEB_OK;
    }
    struct eeb_rundb_link stored = *l;
    stored.at_utc_ns = at_utc_ns;
    int64_t first_row = 0;
    int rc = store_records(db, run, l, &first_row, err, errlen);
    if (rc == EEB_OK)
        rc = insert_link(db, run, &stored, first_row, err, errlen);
    if (rc == EEB_OK)
        (*next)++, memcpy(prev, head, EEB_SHA256_HEX);
    return rc;
}

int eeb_rundb_links_add(struct eeb_rundb *db, int64_t run, const struct eeb_rundb_link *links,
                        size_t n, int64_t at_utc_ns, enum eeb_link_verdict *verdict, size_t *at,
                        int64_t *next, char *err, size_t errlen)
{
    /* IMMEDIATE: no other writer between reading the tip and the inserts */
    if (sqlite3_exec(db->h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return rundb_error(db, "beginning to store links", err, errlen);
    char prev[EEB_SHA256_HEX] = "";
    int rc = tip(db, run, next, prev, err, errlen);
    (*next)++;
    *verdict = EEB_LINKS_STORED;
    for (*at = 0; rc == EEB_OK && *at < n; (*at)++) {
        rc = add_one(db, run, &links[*at], at_utc_ns, next, prev, verdict, err, errlen);
        if (*verdict != EEB_LINKS_STORED)
            break;
    }
    if (rc == EEB_OK && *verdict != EEB_LINKS_STORED) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        int64_t held = -1;
        char h[EEB_SHA256_HEX], ignored[256];
        (void)tip(db, run, &held, h, ignored, sizeof ignored); /* *next as held, not rolled back */
        *next = held + 1;
        return EEB_OK;
    }
    return rundb_end_batch(db, rc, "committing links", err, errlen);
}
