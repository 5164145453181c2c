/*
 * cmd_serve_admin.c - `eeb serve admin`: add-team (a team and its token,
 * shown once), make-test (a private test set from a secret seed),
 * station-key (a station agent's key); the benchmark's rounds (open-round,
 * close-round, rounds); and the organizer's acts, each with its reason in
 * the audit log (teams, revoke-team, hide-run, restore-run, withdraw-run,
 * void-run, audit).  Sections: the admin verbs, the rounds, the organizer's acts.
 */
#include "cmd_serve_admin.h"

#include "eeb_cli.h"
#include "fpga/net/eeb_model.h"
#include "fpga/net/eeb_net.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_task_ops.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const cmd = "serve";

/* ---- the admin verbs ---- */

int admin_add_team(const char *db, int argc, char **argv)
{
    if (argc != 1)
        return eeb_cli_usage_error(cmd, "admin add-team takes one NAME");
    char token[EEB_TOKEN_HEX], err[512];
    if (eeb_server_add_team(db, argv[0], token, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    printf("team %s added to %s\ntoken %s\n(shown once: the server keeps only its hash)\n", argv[0],
           db, token);
    return EEB_EXIT_OK;
}

static int existing(const char *db);

/* A station agent's key, in a file of the organizer's; with db, the act
 * kept in its audit log (the file's name, never the key). */
int admin_station_key(int argc, const char *out, const char *db)
{
    if (argc != 0 || !out)
        return eeb_cli_usage_error(cmd, "admin station-key takes -o FILE alone");
    char err[512];
    int rc = db ? existing(db) : EEB_EXIT_OK;
    if (rc)
        return rc;
    if (eeb_server_station_key(out, err, sizeof err) ||
        (db && eeb_server_station_key_audit(db, out, err, sizeof err)))
        return eeb_cli_error(cmd, "%s", err);
    printf("station key written to %s (mode 0600): give the server --station TEAM=agent:%s,\n"
           "and the agent on the meter's host --key %s\n",
           out, out, out);
    return EEB_EXIT_OK;
}

/* A test set nobody can make again: the embedded default's test split of
 * task, from a seed drawn from getrandom and forgotten. */
int admin_make_test(int argc, char **argv, const char *out, double n)
{
    if (argc != 1 || !out)
        return eeb_cli_usage_error(cmd, "admin make-test takes one TASK and -o FILE.eebd");
    enum eeb_task task;
    char err[512];
    if (eeb_task_parse(argv[0], &task, err, sizeof err))
        return eeb_cli_usage_error(cmd, "admin make-test: %s", err);
    if (eeb_check_output(out, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    const struct eeb_task_ops *t = eeb_task_get(task);
    struct eeb_gen_spec spec = {.task = task,
                                .domain = EEB_GEN_FINETUNE,
                                .test = 1,
                                .n = n > 0 ? (uint64_t)n : (uint64_t)t->profile.test_n,
                                .size = t->profile.size,
                                .frames = t->clips ? t->profile.frames : 1};
    char sha[EEB_SHA256_HEX];
    mode_t old = umask(077); /* the labels are inside: the server's eyes only */
    int rc = eeb_random_bytes(&spec.seed, sizeof spec.seed, err, sizeof err);
    if (rc == EEB_OK)
        rc = eeb_gen_shard(out, &spec, NULL, NULL, err, sizeof err);
    umask(old);
    spec.seed = 0;
    if (rc == EEB_OK && chmod(out, 0600) != 0)
        rc = eeb_errf(err, sizeof err, EEB_EIO, "%s: %s", out, strerror(errno));
    if (rc == EEB_OK)
        rc = eeb_sha256_file(out, sha, err, sizeof err);
    if (rc)
        return eeb_cli_error(cmd, "%s", err);
    printf("%s: a private %s test set of %llu items, SHA-256 %s\n"
           "(its seed is forgotten; give it to eeb serve --test %s=%s)\n",
           out, eeb_task_name(task), (unsigned long long)spec.n, sha, eeb_task_name(task), out);
    return EEB_EXIT_OK;
}

/* ---- rounds ---- */

void admin_round_options_init(struct round_options *o)
{
    *o = (struct round_options){.runs = NAN, .cap = NAN, .aggregate = -1};
    for (int t = 0; t < EEB_TASK_COUNT; t++)
        o->t_max_s[t] = NAN, o->epochs_max[t] = -1;
}

/* --opens and --closes: "now", or a UTC time written as utc_text writes it. */
int admin_parse_utc(const char *option, const char *text, int64_t *ns)
{
    static const char pattern[] = "dddd-dd-ddTdd:dd:ddZ";
    struct tm tm = {0};
    size_t i = 0;
    if (strcmp(text, "now") == 0) {
        *ns = eeb_utc_ns();
        return EEB_EXIT_OK;
    }
    while (text[i] && pattern[i] &&
           (pattern[i] == 'd' ? text[i] >= '0' && text[i] <= '9' : text[i] == pattern[i]))
        i++;
    if (i == sizeof pattern - 1 && !text[i] &&
        sscanf(text, "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec) == 6) {
        struct tm given = tm, back;
        tm.tm_year -= 1900, tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        /* timegm takes 2026-02-30 for 2026-03-02: only a time that reads back is one */
        if (t != (time_t)-1 && gmtime_r(&t, &back) && back.tm_year + 1900 == given.tm_year &&
            back.tm_mon + 1 == given.tm_mon && back.tm_mday == given.tm_mday &&
            back.tm_hour == given.tm_hour && back.tm_min == given.tm_min &&
            back.tm_sec == given.tm_sec) {
            *ns = (int64_t)t * 1000000000;
            return EEB_EXIT_OK;
        }
    }
    return eeb_cli_usage_error(cmd, "%s %s: expected a UTC time like 2026-12-01T00:00:00Z, or now",
                               option, text);
}

/* A finite number, the whole of text. */
static int number_of(const char *text, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(text, &end);
    return end != text && !*end && !errno && isfinite(*out);
}

/* An option's TASK=VALUE: the task, and the value's text (at *value). */
static int task_value(const char *option, const char *arg, const char *form, enum eeb_task *t,
                      const char **value)
{
    const char *eq = strchr(arg, '=');
    char name[16], err[128];
    if (!eq || !eq[1] || (size_t)(eq - arg) >= sizeof name)
        return eeb_cli_usage_error(cmd, "%s %s: expected TASK=%s", option, arg, form);
    snprintf(name, sizeof name, "%.*s", (int)(eq - arg), arg);
    if (eeb_task_parse(name, t, err, sizeof err))
        return eeb_cli_usage_error(cmd, "%s %s: %s", option, arg, err);
    *value = eq + 1;
    return EEB_EXIT_OK;
}

/* --tiers TASK=W[,W...]: up to EEB_ROUND_TIERS watts, ascending. */
int admin_tiers(const char *arg, struct round_options *o)
{
    enum eeb_task t;
    const char *w;
    int rc = task_value("--tiers", arg, "W[,W...]", &t, &w), n = 0;
    while (rc == EEB_EXIT_OK) {
        char *end;
        double watts = strtod(w, &end);
        if (n == EEB_ROUND_TIERS)
            rc = eeb_cli_usage_error(cmd, "--tiers %s: at most %d tiers", arg, EEB_ROUND_TIERS);
        else if (end == w || (*end && *end != ',') || !isfinite(watts) || !(watts > 0))
            rc = eeb_cli_usage_error(cmd, "--tiers %s: expected watts above 0", arg);
        else if (n && watts <= o->tiers_w[t][n - 1])
            rc = eeb_cli_usage_error(cmd, "--tiers %s: expected watts ascending", arg);
        else {
            o->tiers_w[t][n++] = watts;
            if (!*end)
                break;
            w = end + 1;
        }
    }
    if (rc == EEB_EXIT_OK)
        o->ntiers[t] = n;
    return rc;
}

/* --tmax TASK=S and --epochs-max TASK=N. */
int admin_per_task_number(const char *option, const char *arg, struct round_options *o)
{
    enum eeb_task t;
    const char *v;
    double x;
    int epochs = strcmp(option, "--epochs-max") == 0;
    int rc = task_value(option, arg, epochs ? "N" : "S", &t, &v);
    if (rc)
        return rc;
    if (!epochs && (!number_of(v, &x) || !(x > 0)))
        return eeb_cli_usage_error(cmd, "%s %s: expected seconds above 0", option, arg);
    if (epochs && (!number_of(v, &x) || x < 1 || x > 1e9 || x != floor(x)))
        return eeb_cli_usage_error(cmd, "%s %s: expected a whole number of epochs, at least 1",
                                   option, arg);
    if (epochs)
        o->epochs_max[t] = (int)x;
    else
        o->t_max_s[t] = x;
    return EEB_EXIT_OK;
}

/* --closed-model TASK=FILE.eebm. */
int admin_closed_model(const char *arg, struct round_options *o)
{
    enum eeb_task t;
    const char *v;
    int rc = task_value("--closed-model", arg, "FILE.eebm", &t, &v);
    if (rc == EEB_EXIT_OK)
        o->model[t] = v;
    return rc;
}

/* The closed division's base model of task t: its SHA-256, once the file
 * has read as a model of the task. */
static int hash_model(enum eeb_task t, const char *path, char sha[EEB_SHA256_HEX])
{
    struct eeb_net *net = NULL;
    int model_task;
    char err[512];
    if (eeb_model_load(path, &net, &model_task, err, sizeof err) ||
        eeb_sha256_file(path, sha, err, sizeof err)) {
        eeb_net_free(net);
        return eeb_cli_error(cmd, "--closed-model %s=%s: %s", eeb_task_name(t), path, err);
    }
    eeb_net_free(net);
    if (model_task != EEB_MODEL_NO_TASK && model_task != (int)t)
        return eeb_cli_error(cmd, "--closed-model %s=%s: a base model of %s, not %s",
                             eeb_task_name(t), path, eeb_task_name((enum eeb_task)model_task),
                             eeb_task_name(t));
    return EEB_EXIT_OK;
}

/* The round's P_max tiers of a task, "10, 20 W". */
static const char *tiers_text(const struct eeb_round_task *rt, char *out, size_t n)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < rt->ntiers && len < n; i++) {
        char w[EEB_NUMBER_MAX];
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? ", " : "",
                                eeb_number_text(rt->tiers_w[i], w));
    }
    if (len < n)
        snprintf(out + len, n - len, " W");
    return out;
}

/* Which round of db's holds round r's time, for a refusal to say so. */
static void say_overlap(const char *db, const struct eeb_round *r, char *err, size_t errlen)
{
    struct eeb_round *all = NULL;
    size_t n = 0;
    char ignored[256], from[32], to[32];
    if (access(db, F_OK) || eeb_server_rounds(db, &all, &n, ignored, sizeof ignored))
        return;    /* (a round refused before the database was made does not make it) */
    int named = 0; /* refused for its name, not its time */
    for (size_t i = 0; i < n; i++)
        named |= strcmp(all[i].name, r->name) == 0;
    for (size_t i = 0; i < n && !named; i++) {
        int64_t ends = all[i].closed_utc_ns ? all[i].closed_utc_ns : all[i].closes_utc_ns;
        size_t len = strlen(err);
        if (all[i].opens_utc_ns < r->closes_utc_ns && ends > r->opens_utc_ns && len < errlen) {
            snprintf(err + len, errlen - len, " (round %s runs from %s to %s)", all[i].name,
                     eeb_utc_text(all[i].opens_utc_ns, from), eeb_utc_text(ends, to));
            break;
        }
    }
    free(all);
}

int admin_open_round(const char *db, int argc, char **argv, const struct round_options *o)
{
    if (argc != 1)
        return eeb_cli_usage_error(cmd, "admin open-round takes one NAME");
    if (strlen(argv[0]) >= EEB_ROUND_NAME)
        return eeb_cli_usage_error(cmd, "admin open-round: a round name is 1 to %d characters",
                                   EEB_ROUND_NAME - 1);
    struct eeb_round r;
    eeb_round_default(&r, argv[0]);
    int64_t span = r.closes_utc_ns - r.opens_utc_ns;
    if (!isnan(o->runs))
        r.runs = (int)o->runs;
    if (!isnan(o->cap))
        r.cap = (int)o->cap;
    if (o->aggregate >= 0)
        r.aggregate = (enum eeb_round_aggregate)o->aggregate;
    if (o->opens_given)
        r.opens_utc_ns = o->opens_utc_ns, r.closes_utc_ns = o->opens_utc_ns + span;
    if (o->closes_given)
        r.closes_utc_ns = o->closes_utc_ns;
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        struct eeb_round_task *rt = &r.task[t];
        if (!isnan(o->t_max_s[t]))
            rt->t_max_s = o->t_max_s[t];
        if (o->ntiers[t]) {
            rt->ntiers = o->ntiers[t];
            memcpy(rt->tiers_w, o->tiers_w[t], sizeof rt->tiers_w);
        }
        if (o->epochs_max[t] >= 0)
            rt->epochs_max = o->epochs_max[t];
        int rc = o->model[t] ? hash_model((enum eeb_task)t, o->model[t], rt->model_sha256) : 0;
        if (rc)
            return rc;
    }
    char err[1024], from[32], to[32];
    if (eeb_server_round_open(db, &r, err, sizeof err)) {
        say_overlap(db, &r, err, sizeof err);
        return eeb_cli_error(cmd, "%s", err);
    }
    printf("round %s open from %s to %s in %s: %d runs an entry (%s), a cap of %d runs a task, "
           "rules %s\n",
           r.name, eeb_utc_text(r.opens_utc_ns, from), eeb_utc_text(r.closes_utc_ns, to), db,
           r.runs, eeb_round_aggregate_name(r.aggregate), r.cap, r.rules_version);
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        const struct eeb_round_task *rt = &r.task[t];
        char tmax[EEB_NUMBER_MAX], tiers_w[128], epochs[48] = "any epochs";
        if (rt->epochs_max)
            snprintf(epochs, sizeof epochs, "at most %d epochs", rt->epochs_max);
        printf("  %-5s T_max %s s, P_max tiers %s; closed division: %s%s, %s\n",
               eeb_task_name((enum eeb_task)t), eeb_number_text(rt->t_max_s, tmax),
               tiers_text(rt, tiers_w, sizeof tiers_w),
               rt->model_sha256[0] ? "base model sha256 " : "any base model", rt->model_sha256,
               epochs);
    }
    return EEB_EXIT_OK;
}

/* The admin verbs that read rounds do not make a database that is not there. */
static int existing(const char *db)
{
    char err[512];
    return eeb_check_input(db, err, sizeof err) ? eeb_cli_error(cmd, "%s", err) : EEB_EXIT_OK;
}

int admin_close_round(const char *db, int argc, char **argv)
{
    if (argc != 1)
        return eeb_cli_usage_error(cmd, "admin close-round takes one NAME");
    char err[512], now[32];
    int rc = existing(db);
    if (rc)
        return rc;
    if (eeb_server_round_close(db, argv[0], err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    printf("round %s closed at %s in %s: its entries stand as they are\n", argv[0],
           eeb_utc_text(eeb_utc_ns(), now), db);
    return EEB_EXIT_OK;
}

/* One line a round: its name, whether it is open, its time, its runs. */
int admin_list_rounds(const char *db, int argc)
{
    if (argc != 0)
        return eeb_cli_usage_error(cmd, "admin rounds takes no argument");
    struct eeb_round *all;
    size_t n;
    char err[512];
    int rc = existing(db);
    if (rc)
        return rc;
    if (eeb_server_rounds(db, &all, &n, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    if (n == 0)
        printf("no rounds in %s\n", db);
    int width = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(all[i].name) > width)
            width = (int)strlen(all[i].name);
    int64_t now = eeb_utc_ns();
    for (size_t i = 0; i < n; i++) {
        const struct eeb_round *r = &all[i];
        char from[32], to[32], closed[32], early[64] = "";
        const char *state = now < r->opens_utc_ns                         ? "not yet open"
                            : r->closed_utc_ns || now >= r->closes_utc_ns ? "closed"
                                                                          : "open";
        if (r->closed_utc_ns)
            snprintf(early, sizeof early, " (closed %s)", eeb_utc_text(r->closed_utc_ns, closed));
        printf("%-*s  %-12s  %s to %s%s  %d runs an entry (%s), cap %d runs a task\n", width,
               r->name, state, eeb_utc_text(r->opens_utc_ns, from),
               eeb_utc_text(r->closes_utc_ns, to), early, r->runs,
               eeb_round_aggregate_name(r->aggregate), r->cap);
    }
    free(all);
    return EEB_EXIT_OK;
}

/* ---- the organizer's acts ---- */

/* admin teams and admin audit: the server's list, or a line saying it is
 * empty. */
int admin_list(const char *db, int argc, const char *verb,
               int (*lister)(const char *db, FILE *out, char *err, size_t errlen), const char *none)
{
    if (argc != 0)
        return eeb_cli_usage_error(cmd, "admin %s takes no argument", verb);
    char err[512], *text = NULL;
    size_t len = 0;
    int rc = existing(db);
    if (rc)
        return rc;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return eeb_cli_error(cmd, "out of memory");
    rc = lister(db, m, err, sizeof err);
    if (fclose(m) != 0 && rc == EEB_OK)
        rc = eeb_errf(err, sizeof err, EEB_ENOMEM, "out of memory");
    if (rc == EEB_OK && len)
        fputs(text, stdout);
    else if (rc == EEB_OK)
        printf("%s %s\n", none, db);
    free(text);
    return rc ? eeb_cli_error(cmd, "%s", err) : EEB_EXIT_OK;
}

/* An act needs its reason: kept with it in the audit log. */
static int reasoned(const char *verb, const char *reason)
{
    if (!reason || !*reason)
        return eeb_cli_usage_error(cmd,
                                   "admin %s takes --reason TEXT: say why (the audit log "
                                   "keeps it)",
                                   verb);
    return EEB_EXIT_OK;
}

int admin_revoke_team(const char *db, int argc, char **argv, const char *reason)
{
    if (argc != 1)
        return eeb_cli_usage_error(cmd, "admin revoke-team takes one NAME");
    char err[512];
    int rc = reasoned("revoke-team", reason);
    if (rc || (rc = existing(db)))
        return rc;
    if (eeb_server_team_revoke(db, argv[0], reason, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    printf("team %s revoked in %s: its token is refused from now on; its runs stay\n", argv[0], db);
    return EEB_EXIT_OK;
}

/* admin hide-run, restore-run, withdraw-run and void-run ID. */
int admin_run_act(const char *db, int argc, char **argv, const char *verb,
                  enum eeb_server_run_act how, const char *reason)
{
    static const char *const done[] = {
        [EEB_SERVER_HIDE] = "hidden: off the leaderboard, with its entry, until restore-run",
        [EEB_SERVER_RESTORE] = "restored: on the leaderboard again",
        [EEB_SERVER_WITHDRAW] = "withdrawn: its entry fails, showing the reason",
        [EEB_SERVER_VOID] = "void: off its entry and the round's cap; the team may run again"};
    if (argc != 1)
        return eeb_cli_usage_error(cmd, "admin %s takes one run ID", verb);
    char *end, err[512];
    errno = 0;
    long long id = strtoll(argv[0], &end, 10);
    if (end == argv[0] || *end || errno || id < 1)
        return eeb_cli_usage_error(cmd, "admin %s: '%s' is not a run ID (1, 2, ...)", verb,
                                   argv[0]);
    int rc = reasoned(verb, reason);
    if (rc || (rc = existing(db)))
        return rc;
    if (eeb_server_run_act(db, (int64_t)id, how, reason, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    printf("run %lld of %s %s\n", id, db, done[how]);
    return EEB_EXIT_OK;
}
