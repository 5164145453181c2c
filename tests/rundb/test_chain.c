/*
 * test_chain.c - the chain of a run's records: written link by link with
 * them, verified from them, every kind of edit found and located, and a
 * copy received link by link that refuses what does not chain.
 */
#include "rundb/eeb_rundb.h"
#include "rundb/eeb_rundb_tables.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static char path[256], copy_path[256];

static void setup(void)
{
    snprintf(path, sizeof path, "%s/run.db", test_tmpdir());
    snprintf(copy_path, sizeof copy_path, "%s/server.db", test_tmpdir());
}

TestSuite(chain, .init = setup);

static struct eeb_rundb *open_rw(const char *at)
{
    struct eeb_rundb *db;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open(at, EEB_RUNDB_READWRITE, &db, err, sizeof err), EEB_OK, "%s", err);
    return db;
}

static int64_t new_run(struct eeb_rundb *db, int received)
{
    const struct eeb_run_new run = {.task = EEB_TASK_CLS,
                                    .backend = "emu",
                                    .config_json = "{\"budgets\": {\"p_max_w\": 10}}",
                                    .t_max_s = 60,
                                    .p_max_w = 10,
                                    .rules_version = "1",
                                    .received = received};
    int64_t id;
    char uuid[37], err[512] = "";
    cr_assert_eq(eeb_rundb_run_create(db, &run, &id, uuid, err, sizeof err), EEB_OK, "%s", err);
    return id;
}

/* A run as the harness and the sampler write it: events between batches
 * of samples (3 of them, 4 samples each). */
static int64_t write_run(void)
{
    struct eeb_rundb *db = open_rw(path);
    int64_t run = new_run(db, 0);
    char err[512] = "";
    static const char *const kinds[] = {"finetune_begin", "train", "complete"};
    for (int b = 0; b < 3; b++) {
        struct eeb_sample s[4];
        for (int i = 0; i < 4; i++)
            s[i] = (struct eeb_sample){.t_mono_ns = 1000000000LL * (4 * b + i),
                                       .t_utc_ns = 5,
                                       .volts = 12,
                                       .amps = NAN,
                                       .watts = 4.5 + i,
                                       .flags = (uint32_t)i};
        cr_assert_eq(eeb_rundb_event_add(db, run, 1000000000LL * 4 * b, 5, kinds[b],
                                         b == 1 ? "{\"step\": 3}" : NULL, err, sizeof err),
                     EEB_OK, "%s", err);
        cr_assert_eq(eeb_rundb_samples_add(db, run, "sim:", s, 4, err, sizeof err), EEB_OK, "%s",
                     err);
    }
    eeb_rundb_close(db);
    return run;
}

static struct eeb_chain_check check(const char *at, int64_t run)
{
    struct eeb_rundb *db = open_rw(at);
    struct eeb_chain_check c;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_chain_check(db, run, &c, err, sizeof err), EEB_OK, "%s", err);
    eeb_rundb_close(db);
    return c;
}

/* Each write is a link, whose head the file's last link holds. */
Test(chain, each_event_and_batch_of_samples_is_a_link)
{
    int64_t run = write_run();
    struct eeb_chain_check c = check(path, run);
    cr_assert(!c.broken, "%s", c.why);
    cr_assert_eq(c.links, 7); /* the origin, 3 events, 3 batches */
    cr_assert_eq(c.events, 3);
    cr_assert_eq(c.samples, 12);
    cr_assert(!c.received);
    char sql[160];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM links WHERE seq = 6 AND head = '%s'", c.head);
    cr_assert_eq(test_sql_int(path, sql), 1);
}

/* Every kind of edit, consistent or not, breaks the chain where it is. */
static void expect_break(const char *edit, const char *located)
{
    int64_t run = write_run();
    test_sql_exec(path, edit);
    struct eeb_chain_check c = check(path, run);
    cr_expect(c.broken, "%s: the chain holds", edit);
    cr_expect(strstr(c.why, located), "%s: %s", edit, c.why);
    remove(path);
}

Test(chain, an_edit_after_the_fact_is_found_and_located)
{
    expect_break("UPDATE samples SET watts = watts / 2", "link 2 (samples 1 to 4 of sim:");
    expect_break("UPDATE samples SET volts = 12.5 WHERE rowid = 6", "link 4 (samples 5 to 8");
    expect_break("UPDATE events SET t_mono_ns = t_mono_ns - 1 WHERE kind = 'complete'",
                 "link 5 (event 3 (complete at 8.000 s))");
    expect_break("UPDATE events SET payload = '{\"step\": 4}' WHERE kind = 'train'",
                 "link 3 (event 2 (train");
    expect_break("DELETE FROM events WHERE kind = 'train'", "link 3 (event 3 (complete");
    expect_break("DELETE FROM samples WHERE rowid > 10", "link 6: 2 of its records are gone");
    expect_break("INSERT INTO events (run_id, t_mono_ns, t_utc_ns, kind) VALUES (1, 9, 9, 'x')",
                 "event 4 (x at");
    expect_break("UPDATE runs SET config = json_set(config, '$.budgets.p_max_w', 99)",
                 "link 0: the run's configuration is not the one it began with");
    expect_break("DELETE FROM links WHERE seq = 3", "link 3 is missing");
    /* passing the run off as one received, to escape the configuration's check */
    expect_break("UPDATE runs SET uuid = '00000000-0000-4000-8000-000000000000', config = "
                 "json_set(config, '$.budgets.p_max_w', 99)",
                 "link 0: the run's uuid (00000000-0000-4000-8000-000000000000) is not the one");
    /* a figure the meter did not give is not 0 */
    expect_break("UPDATE samples SET amps = 0.0 WHERE rowid = 1", "link 2 (samples 1 to 4");
    /* a head rewritten breaks its own link */
    expect_break("UPDATE links SET head = 'ab' || substr(head, 3) WHERE seq = 4",
                 "link 4 (samples 5 to 8");
}

/* SQLite keeps -0.0 as the integer 0 and reads it back as +0.0; a figure
 * that is not finite is sent as null: neither is an edit. */
Test(chain, negative_zero_and_infinity_read_back_are_no_edit)
{
    struct eeb_rundb *db = open_rw(path);
    int64_t run = new_run(db, 0);
    const struct eeb_sample s[2] = {{1, 1, -0.0, INFINITY, -0.0, 0}, {2, 2, 12, -0.0, 3, 0}};
    char err[512] = "";
    cr_assert_eq(eeb_rundb_samples_add(db, run, "sim:", s, 2, err, sizeof err), EEB_OK, "%s", err);
    eeb_rundb_close(db);
    struct eeb_chain_check c = check(path, run);
    cr_expect(!c.broken, "%s", c.why);
}

/* A server's file keeps a set of tables of its own beside the run tables:
 * its runs were received, begun elsewhere. */
static const char *const copies_migrations[] = {"CREATE TABLE copies (run_id INTEGER)"};
static const struct eeb_rundb_tables copies = {
    .name = "copies", .version = 1, .migrations = copies_migrations};

static int64_t received_run(void)
{
    struct eeb_rundb *db;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_open_with(copy_path, EEB_RUNDB_READWRITE, &copies, &db, err, sizeof err),
                 EEB_OK, "%s", err);
    int64_t run = new_run(db, 1);
    eeb_rundb_close(db);
    return run;
}

/* The links of a run, kept with copies of their records. */
struct links {
    struct eeb_rundb_link l[16];
    struct eeb_sample s[16][4];
    char kind[16][32], payload[16][64], source[16][16];
    size_t n;
};

static int keep(void *arg, const struct eeb_rundb_link *l)
{
    struct links *k = arg;
    size_t i = k->n++;
    cr_assert_lt(i, 16);
    k->l[i] = *l;
    if (l->kind == EEB_LINK_EVENT) {
        snprintf(k->kind[i], sizeof k->kind[i], "%s", l->event.kind);
        k->l[i].event.kind = k->kind[i];
        if (l->event.payload)
            k->l[i].event.payload =
                strcpy(k->payload[i], l->event.payload); /* shorter than 64 here */
    } else if (l->kind == EEB_LINK_SAMPLES) {
        memcpy(k->s[i], l->samples, l->nsamples * sizeof *l->samples);
        k->l[i].samples = k->s[i];
        k->l[i].source = strcpy(k->source[i], l->source);
    }
    return 0;
}

/* The first link's first sample and count. */
struct first_sample {
    double watts;
    size_t n;
};

static int first_of(void *arg, const struct eeb_rundb_link *l)
{
    struct first_sample *got = arg;
    if (!got->n && l->nsamples)
        got->watts = l->samples[0].watts, got->n = l->nsamples;
    return 0;
}

/* Into k, whose arrays the links point into. */
static void read_links(int64_t run, int64_t from, struct links *k)
{
    struct eeb_rundb *db = open_rw(path);
    char err[512] = "";
    k->n = 0;
    cr_assert_eq(eeb_rundb_links_each(db, run, from, keep, k, err, sizeof err), EEB_OK, "%s", err);
    eeb_rundb_close(db);
}

static enum eeb_link_verdict receive(int64_t run, const struct eeb_rundb_link *l, size_t n,
                                     size_t *at, int64_t *next)
{
    struct eeb_rundb *db = open_rw(copy_path);
    enum eeb_link_verdict v;
    char err[512] = "";
    cr_assert_eq(eeb_rundb_links_add(db, run, l, n, 123, &v, at, next, err, sizeof err), EEB_OK,
                 "%s", err);
    eeb_rundb_close(db);
    return v;
}

/* A server's copy takes the links in order, each checked as it comes; it
 * then verifies as the run's own file does, with the same head. */
Test(chain, a_received_copy_takes_only_what_chains)
{
    int64_t run = write_run(), copy = received_run(), next = -1;
    static struct links k;
    read_links(run, 0, &k);
    cr_assert_eq(k.n, 7);
    size_t at;
    enum eeb_link_verdict v = receive(copy, k.l, 3, &at, &next);
    cr_assert_eq(v, EEB_LINKS_STORED, "verdict %d at %zu, next %lld", (int)v, at, (long long)next);
    cr_assert_eq(next, 3);
    /* sent again with the rest: the first three are held */
    cr_assert_eq(receive(copy, k.l, 5, &at, &next), EEB_LINKS_STORED);
    cr_assert_eq(next, 5);

    /* another head under a held number */
    struct eeb_rundb_link other = k.l[2];
    other.head[0] = other.head[0] == 'a' ? 'b' : 'a';
    cr_assert_eq(receive(copy, &other, 1, &at, &next), EEB_LINKS_DIFFERS);
    /* a link past the next */
    cr_assert_eq(receive(copy, &k.l[6], 1, &at, &next), EEB_LINKS_GAP);
    cr_assert_eq(next, 5);
    /* records that do not give the head sent: nothing of the request is
     * stored, not even the good link before them */
    struct eeb_sample halved[4];
    memcpy(halved, k.l[6].samples, sizeof halved);
    halved[2].watts /= 2;
    struct eeb_rundb_link two[2] = {k.l[5], k.l[6]};
    two[1].samples = halved;
    cr_assert_eq(receive(copy, two, 2, &at, &next), EEB_LINKS_BREAKS);
    cr_assert_eq(at, 1);
    cr_assert_eq(next, 5);
    cr_assert_eq(test_sql_int(copy_path, "SELECT count(*) FROM events"), 2);

    cr_assert_eq(receive(copy, &k.l[5], 2, &at, &next), EEB_LINKS_STORED);
    cr_assert_eq(next, 7);
    struct eeb_chain_check mine = check(path, run), theirs = check(copy_path, copy);
    cr_assert(!theirs.broken, "%s", theirs.why);
    cr_assert(theirs.received);
    cr_assert_eq(theirs.links, 7);
    cr_assert_str_eq(theirs.head, mine.head);
    cr_assert_eq(test_sql_int(copy_path, "SELECT count(*) FROM links WHERE at_utc_ns = 123"), 7);

    /* the server's own event after them extends the same chain */
    struct eeb_rundb *db = open_rw(copy_path);
    char err[512] = "";
    cr_assert_eq(eeb_rundb_event_add(db, copy, 1, 2, "score", "{}", err, sizeof err), EEB_OK);
    eeb_rundb_close(db);
    theirs = check(copy_path, copy);
    cr_assert(!theirs.broken, "%s", theirs.why);
    cr_assert_eq(theirs.links, 8);
}

/* A walk from a later link starts where that link's records do, and
 * gives the links a walk from the origin gives. */
Test(chain, a_walk_from_a_later_link_gives_the_same_links)
{
    int64_t run = write_run();
    static struct links all, tail;
    read_links(run, 0, &all);
    for (int64_t from = 1; from <= 7; from++) {
        read_links(run, from, &tail);
        cr_assert_eq(tail.n, all.n - (size_t)from);
        for (size_t i = 0; i < tail.n; i++) {
            const struct eeb_rundb_link *a = &all.l[i + (size_t)from], *b = &tail.l[i];
            char head[EEB_SHA256_HEX];
            eeb_rundb_link_head(all.l[i + (size_t)from - 1].head, b, head);
            cr_expect_str_eq(head, a->head, "from %lld, link %lld", (long long)from,
                             (long long)a->seq);
            cr_expect_eq(b->seq, a->seq);
        }
    }
}

/* A batch that piled up is split into links of at most 1024 samples,
 * each of which a walk can start from. */
Test(chain, a_large_batch_is_more_than_one_link)
{
    struct eeb_rundb *db = open_rw(path);
    int64_t run = new_run(db, 0);
    static struct eeb_sample s[2500];
    for (int i = 0; i < 2500; i++)
        s[i] = (struct eeb_sample){i, i, NAN, NAN, 1 + i % 7, 0};
    char err[512] = "";
    cr_assert_eq(eeb_rundb_samples_add(db, run, "sim:", s, 2500, err, sizeof err), EEB_OK, "%s",
                 err);
    eeb_rundb_close(db);
    cr_assert_eq(test_sql_int(path,
                              "SELECT group_concat(count, ',') = '1024,1024,452' FROM "
                              "(SELECT count FROM links WHERE kind = 'samples' ORDER BY seq)"),
                 1);
    struct eeb_chain_check c = check(path, run);
    cr_assert(!c.broken, "%s", c.why);
    cr_assert_eq(c.samples, 2500);
    db = open_rw(path);
    struct first_sample got = {0, 0};
    cr_assert_eq(eeb_rundb_links_each(db, run, 3, first_of, &got, err, sizeof err), EEB_OK, "%s",
                 err);
    eeb_rundb_close(db);
    cr_expect_eq(got.n, 452);
    cr_expect_eq(got.watts, 1 + 2048 % 7);
}

/* The origin comes first and only first. */
Test(chain, a_copy_begins_with_the_origin)
{
    int64_t run = write_run(), copy = received_run(), next;
    static struct links k, all;
    read_links(run, 1, &k);
    size_t at;
    cr_assert_eq(k.l[0].seq, 1);
    cr_assert_eq(receive(copy, k.l, 1, &at, &next), EEB_LINKS_GAP);
    cr_assert_eq(next, 0);
    read_links(run, 0, &all);
    struct eeb_rundb_link late = all.l[0];
    late.seq = 1;
    cr_assert_eq(receive(copy, all.l, 1, &at, &next), EEB_LINKS_STORED);
    cr_assert_eq(receive(copy, &late, 1, &at, &next), EEB_LINKS_GAP);
}

/* A consistent edit: samples halved and their link's head made again
 * from the edited records, as a forger with this code would.  The link
 * holds; the next one, which committed to the old head, breaks. */
Test(chain, an_edit_with_its_head_made_again_breaks_the_next_link)
{
    int64_t run = write_run();
    test_sql_exec(path, "UPDATE samples SET watts = watts / 2 WHERE rowid BETWEEN 5 AND 8");
    static struct links k;
    read_links(run, 0, &k);
    char head[EEB_SHA256_HEX], sql[200];
    eeb_rundb_link_head(k.l[3].head, &k.l[4], head);
    snprintf(sql, sizeof sql, "UPDATE links SET head = '%s' WHERE seq = 4", head);
    test_sql_exec(path, sql);
    struct eeb_chain_check c = check(path, run);
    cr_expect(c.broken);
    cr_expect(strstr(c.why, "link 5 (event 3 (complete at 8.000 s))"), "%s", c.why);
}
