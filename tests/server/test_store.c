/*
 * test_store.c - the server's store (server/server_store.h) without HTTP:
 * a database eeb serve wrote before its tables were versioned still opens,
 * serves and checks; a new one records the server's tables through rundb/;
 * newer server tables are refused untouched; and a run goes through its
 * stages -- teams, register, complete, the verdict, the leaderboard's order.
 */
#include "record/eeb_record.h"
#include "server/eeb_server.h"
#include "server/server_store.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char path[256];

static void setup(void)
{
    snprintf(path, sizeof path, "%s/server.db", test_tmpdir());
}

TestSuite(server_store, .init = setup);

static struct eeb_srv_store *open_store(void)
{
    struct eeb_srv_store *s = NULL;
    char err[512] = "";
    cr_assert_eq(eeb_srv_store_open(path, &s, err, sizeof err), EEB_OK, "%s", err);
    return s;
}

/* ---- a file of an earlier eeb ---- */

/* tests/data/server/before-schema-sets.db was written by eeb serve as it
 * was before the server's tables were a set of rundb/'s migrations (eeb
 * serve admin add-team alice and bob, then over HTTP: two cls runs of
 * alice's registered, the first sent a power log of 121 samples, completed,
 * predicted and scored, a pass; the second left registered).  Alice's
 * token, shown once then: */
#define ALICE_TOKEN "361093f8a4582165c5d500d1b4d538d31159486b2201faece54f55c24da8c68d"

static int board_rows(void *arg, const struct eeb_srv_run *r)
{
    struct eeb_srv_run *rows = arg;
    for (int i = 0; i < 4; i++)
        if (!rows[i].id) {
            rows[i] = *r;
            return 0;
        }
    return 1;
}

Test(server_store, a_file_made_before_its_tables_were_versioned_keeps_everything)
{
    size_t len;
    char *old = test_fixture("server/before-schema-sets.db", &len);
    test_write_file(path, old, len);
    free(old);
    cr_assert_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = "
                                    "'schema_sets'"),
                 0);
    struct eeb_srv_store *s = open_store();
    char err[512] = "", name[EEB_SRV_TEAM_NAME];
    int64_t team;
    cr_assert_eq(eeb_srv_store_team_by_token(s, ALICE_TOKEN, &team, name, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_expect_eq(team, 1);
    cr_expect_str_eq(name, "alice");
    struct eeb_srv_store_stats stats;
    cr_assert_eq(eeb_srv_store_stats(s, &stats, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(stats.teams, 2);

    struct eeb_srv_run r;
    cr_assert_eq(eeb_srv_store_run_get(s, 1, &r, err, sizeof err), 1, "%s", err);
    cr_expect_str_eq(r.state, "scored");
    cr_expect_str_eq(r.verdict, "pass");
    cr_expect_str_eq(r.team_name, "alice");
    cr_expect_str_eq(r.device, "zcu104");
    cr_expect_eq(r.task, EEB_TASK_CLS);
    cr_expect_float_eq(r.s, 0.4579566666645436, 1e-12);
    cr_expect_float_eq(r.m_s, 0.375, 1e-12);
    cr_assert_eq(eeb_srv_store_run_get(s, 2, &r, err, sizeof err), 1, "%s", err);
    cr_expect_str_eq(r.state, "registered");
    cr_expect(isnan(r.s));
    cr_expect_eq(eeb_srv_store_run_get(s, 3, &r, err, sizeof err), 0);

    struct eeb_srv_run rows[4] = {{0}};
    const struct eeb_srv_board_filter f = {.task = EEB_TASK_CLS, .limit = 10};
    cr_assert_eq(eeb_srv_store_board(s, &f, board_rows, rows, err, sizeof err), EEB_OK, "%s", err);
    /* its scored run was not official: a rehearsal by today's rules (it
     * may have been judged on the secret labels), on no list; its
     * predictions keep no label */
    cr_expect_eq(rows[0].id, 0, "a run that was not official is listed");
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM predictions WHERE payload ->> "
                                    "'$.label' IS NOT NULL"),
                 0);
    /* the registered run goes on to its next stage */
    cr_expect_eq(eeb_srv_store_run_complete(s, 2, 0, err, sizeof err), 1, "%s", err);
    eeb_srv_store_close(s);

    /* the server's tables are now version 4 of their set (v2: when an
     * official run was told to begin; v3: rounds and their entries, and
     * each team's run a team_run, of no entry; v4: the server's key, the
     * quotas, the predictions without their labels); the run tables at
     * this eeb's */
    cr_expect_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'server'"), 4);
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM team_runs WHERE entry_id IS NULL"), 2);
    cr_expect_eq(test_sql_int(path, "PRAGMA user_version"), EEB_RUNDB_SCHEMA);
    /* and the scored run reads and recomputes as ever; written before the
     * chain, nothing shows its record is unedited: invalid, saying so */
    struct test_run c = test_eeb((const char *[]){"check", path, "--run", "1", NULL});
    cr_expect_eq(c.status, 4, "%s%s", c.out, c.err); /* invalid */
    cr_expect(strstr(c.out, "  S        0.457957"), "%s", c.out);
    cr_expect(strstr(c.out, "verdict: invalid: it has no chain (written before eeb chained"), "%s",
              c.out);
    test_run_free(&c);
    /* the server starts on it once it is its owner's alone: an older eeb
     * let the umask (here the test's copy) decide the mode */
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    cfg.db = path, cfg.port = 0;
    struct eeb_server *srv;
    cr_assert_eq(chmod(path, 0644), 0);
    cr_assert_eq(eeb_server_start(&cfg, &srv, err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "is mode 0644") && strstr(err, "chmod 600 "), "%s", err);
    cr_assert_eq(chmod(path, 0600), 0);
    cr_assert_eq(eeb_server_start(&cfg, &srv, err, sizeof err), EEB_OK, "%s", err);
    eeb_server_stop(srv);
}

/* ---- the schema ---- */

Test(server_store, a_new_file_holds_the_server_tables_as_a_set_of_rundb)
{
    eeb_srv_store_close(open_store());
    cr_expect_eq(test_sql_int(path, "PRAGMA user_version"), EEB_RUNDB_SCHEMA);
    cr_expect_eq(test_sql_int(path, "SELECT version FROM schema_sets WHERE name = 'server'"), 4);
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('teams', "
                                    "'team_runs', 'team_runs_by_score', 'rounds', 'entries', "
                                    "'team_runs_by_entry')"),
                 6);
}

Test(server_store, newer_server_tables_are_refused_and_left_untouched)
{
    eeb_srv_store_close(open_store());
    test_sql_exec(path,
                  "UPDATE schema_sets SET version = 5 WHERE name = 'server'"); /* an eeb to come */
    size_t before_len, after_len;
    char *before = test_read_file(path, &before_len);
    struct eeb_srv_store *s = NULL;
    char err[512] = "";
    cr_assert_eq(eeb_srv_store_open(path, &s, err, sizeof err), EEB_EVERSION, "%s", err);
    cr_assert_null(s);
    cr_expect(strstr(err, "server tables schema v5 was written by a newer eeb"), "%s", err);
    struct test_run r =
        test_eeb((const char *[]){"serve", "admin", "add-team", "zed", "--db", path, NULL});
    cr_expect_eq(r.status, 1);
    cr_expect(strstr(r.err, "written by a newer eeb"), "%s", r.err);
    test_run_free(&r);
    char *after = test_read_file(path, &after_len);
    cr_assert_eq(after_len, before_len);
    cr_assert_eq(memcmp(before, after, before_len), 0, "the refused file was modified");
    free(before), free(after);
    /* its runs are still anyone's to read */
    r = test_eeb((const char *[]){"db", "info", path, NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
}

/* ---- a run's stages ---- */

/* Registers a cls run of team; its id. */
static int64_t register_run(struct eeb_srv_store *s, int64_t team, const char *device)
{
    struct eeb_srv_run r = {
        .team = team, .task = EEB_TASK_CLS, .official = 1, .t_max_s = 30, .p_max_w = 10};
    snprintf(r.rules_version, sizeof r.rules_version, "1");
    snprintf(r.backend, sizeof r.backend, "emu");
    snprintf(r.device, sizeof r.device, "%s", device);
    snprintf(r.provenance, sizeof r.provenance, "modeled");
    char err[512] = "";
    cr_assert_eq(eeb_srv_store_run_register(s, &r, "{\"server\": {}}", NULL, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_gt(r.registered_utc_ns, 0);
    return r.id;
}

/* Scores run id with S (NAN: failed): 1 if it moved. */
static int score(struct eeb_srv_store *s, int64_t id, double S)
{
    char err[512] = "";
    struct eeb_srv_run r;
    cr_assert_eq(eeb_srv_store_run_get(s, id, &r, err, sizeof err), 1, "%s", err);
    struct eeb_run_outcome o = {.complete = 1,
                                .valid = 1,
                                .pass = !isnan(S),
                                .t_s = 12.5,
                                .energy_j = 60,
                                .worst_w = 5,
                                .device_time_s = NAN,
                                .device_energy_j = NAN};
    snprintf(o.provenance, sizeof o.provenance, "modeled");
    o.score = (struct eeb_score){
        .s = S, .m_u = 0.1, .m_t = 0.4, .m_p = 0.5, .m_s = 0.8, .mean_power_w = 4.8};
    snprintf(r.verdict, sizeof r.verdict, "%s", eeb_run_verdict(&o, 0));
    r.s = S, r.m_u = 0.1, r.m_t = 0.4, r.m_p = 0.5, r.m_s = 0.8, r.t_s = 12.5, r.energy_j = 60;
    int moved = eeb_srv_store_run_scored(s, &r, &o, "modeled", NULL, "{\"by\": \"server\"}", err,
                                         sizeof err);
    cr_assert_geq(moved, 0, "%s", err);
    return moved;
}

static int newest_first(void *arg, const struct eeb_srv_run *r)
{
    int64_t *ids = arg;
    while (*ids)
        ids++;
    *ids = r->id;
    return 0;
}

Test(server_store, a_run_goes_through_its_stages)
{
    struct eeb_srv_store *s = open_store();
    char err[512] = "", name[EEB_SRV_TEAM_NAME];
    cr_assert_eq(eeb_srv_store_team_add(s, "ann", "token-of-ann", err, sizeof err), EEB_OK, "%s",
                 err);
    cr_assert_eq(eeb_srv_store_team_add(s, "ann", "another", err, sizeof err), EEB_EINVAL);
    cr_expect(strstr(err, "a team named 'ann' exists"), "%s", err);
    cr_expect(strstr(err, path), "%s", err);
    int64_t team, nobody;
    cr_assert_eq(eeb_srv_store_team_by_token(s, "token-of-ann", &team, name, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_expect_eq(team, 1);
    cr_expect_str_eq(name, "ann");
    cr_assert_eq(eeb_srv_store_team_by_token(s, "another", &nobody, name, err, sizeof err), EEB_OK);
    cr_expect_eq(nobody, 0, "a token that never was one");
    /* only the token's hash is kept */
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM teams WHERE token_sha256 = "
                                    "'token-of-ann'"),
                 0);

    int64_t a = register_run(s, team, "zcu104"), b = register_run(s, team, "zcu102"),
            c = register_run(s, team, "zcu104");
    struct eeb_srv_run r;
    cr_assert_eq(eeb_srv_store_run_get(s, a, &r, err, sizeof err), 1, "%s", err);
    cr_expect_str_eq(r.state, "registered");
    cr_expect_str_eq(r.team_name, "ann");
    cr_expect_eq(score(s, a, 0.5), 0, "a run not complete is not scored");
    for (int64_t id = a; id <= c; id++) {
        cr_expect_eq(eeb_srv_store_run_complete(s, id, 0, err, sizeof err), 1, "%s", err);
        cr_expect_eq(eeb_srv_store_run_complete(s, id, 0, err, sizeof err), 0);
        cr_expect_eq(eeb_srv_store_run_counter(s, id, "samples_dropped", 0, err, sizeof err),
                     EEB_OK, "%s", err);
    }
    cr_expect_eq(score(s, a, 0.5), 1);
    cr_expect_eq(score(s, a, 0.5), 0, "scored once");
    cr_expect_eq(score(s, b, 0.7), 1);
    cr_expect_eq(score(s, c, NAN), 1);
    cr_assert_eq(eeb_srv_store_run_get(s, c, &r, err, sizeof err), 1, "%s", err);
    cr_expect_str_eq(r.state, "scored");
    cr_expect_str_eq(r.verdict, "fail");
    cr_expect(isnan(r.s));
    /* the run's record holds the verdict as eeb run stores one */
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM events WHERE run_id = 1 AND kind = "
                                    "'score'"),
                 1);
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE id = 1 AND state = 'done'"),
                 1);
    cr_expect_eq(test_sql_int(path, "SELECT count(*) FROM runs WHERE id = 3 AND state = "
                                    "'failed'"),
                 1);

    /* passing runs by S, best first, then the rest; filters narrow it */
    int64_t ids[8] = {0};
    struct eeb_srv_board_filter f = {.task = EEB_TASK_CLS};
    cr_assert_eq(eeb_srv_store_board(s, &f, newest_first, ids, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(ids[0] == b && ids[1] == a && ids[2] == c && ids[3] == 0, "%lld %lld %lld %lld",
              (long long)ids[0], (long long)ids[1], (long long)ids[2], (long long)ids[3]);
    memset(ids, 0, sizeof ids);
    f.device = "zcu104", f.limit = 1;
    cr_assert_eq(eeb_srv_store_board(s, &f, newest_first, ids, err, sizeof err), EEB_OK, "%s", err);
    cr_expect(ids[0] == a && ids[1] == 0);
    f = (struct eeb_srv_board_filter){.task = EEB_TASK_DET};
    memset(ids, 0, sizeof ids);
    cr_assert_eq(eeb_srv_store_board(s, &f, newest_first, ids, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(ids[0], 0);
    struct eeb_srv_store_stats stats;
    cr_assert_eq(eeb_srv_store_stats(s, &stats, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(stats.teams, 1);
    cr_expect_gt(stats.memory_bytes, 0);
    eeb_srv_store_close(s);
}
