/*
 * cmd_serve.c - `eeb serve`: run the evaluation and leaderboard server
 * until SIGINT or SIGTERM, saying what it holds; and the options of it and
 * of `eeb serve admin VERB`, each option going with its verbs, dispatched
 * to the verbs (cmd_serve_admin.c: teams, test sets, station keys, rounds,
 * the organizer's acts).  Sections: the help, what the server holds, the
 * options.
 */
#include "cmd_serve_admin.h"
#include "eeb_cli.h"
#include "server/eeb_server.h"
#include "tasks/eeb_task_ops.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const cmd = "serve";

static void help(void)
{
    puts("Usage: eeb serve [--db FILE] [--bind ADDR] [--port N] [--threads N] [--max-body BYTES]\n"
         "                 [--rate-limit N] [--burst N] [--test TASK=FILE.eebd ...]\n"
         "                 [--practice TASK=FILE.eebd ...]\n"
         "                 [--finetune TASK=FILE.eebd ...] [--model TASK=FILE.eebm ...]\n"
         "                 [--stream-allowance S] [--predict-within S]\n"
         "                 [--quota registrations|scored|samples=N ...]\n"
         "                 [--station TEAM=METER|agent:KEYFILE ...] [--max-connections N]\n"
         "                 [--max-per-ip N] [--connection-timeout S] [--max-samples N]\n"
         "       eeb serve admin add-team NAME [--db FILE]\n"
         "       eeb serve admin make-test TASK -o FILE.eebd [--n N]\n"
         "       eeb serve admin station-key -o FILE [--db FILE]\n"
         "       eeb serve admin open-round NAME [--db FILE] [--runs N]\n"
         "                 [--aggregate median|olympic] [--cap N] [--opens WHEN] [--closes WHEN]\n"
         "                 [--tmax TASK=S ...] [--tiers TASK=W[,W...] ...]\n"
         "                 [--closed-model TASK=FILE.eebm ...] [--epochs-max TASK=N ...]\n"
         "       eeb serve admin close-round NAME [--db FILE]\n"
         "       eeb serve admin rounds [--db FILE]\n"
         "       eeb serve admin teams [--db FILE]\n"
         "       eeb serve admin revoke-team NAME --reason TEXT [--db FILE]\n"
         "       eeb serve admin hide-run ID --reason TEXT [--db FILE]\n"
         "       eeb serve admin restore-run ID --reason TEXT [--db FILE]\n"
         "       eeb serve admin withdraw-run ID --reason TEXT [--db FILE]\n"
         "       eeb serve admin void-run ID --reason TEXT [--db FILE]\n"
         "       eeb serve admin audit [--db FILE]\n"
         "\n"
         "Serves the benchmark's evaluation server over HTTP (libmicrohttpd, a thread\n"
         "pool) from one SQLite database, until SIGINT or SIGTERM; requests in flight\n"
         "finish first.  The database is an eeb run database: each submitted run is\n"
         "recorded as `eeb run` records one, so `eeb check` and `eeb report` read it\n"
         "too.  It says on stdout the test sets, fine-tune sets and base models it\n"
         "holds and the round open, and logs what it does on stderr (runs registered,\n"
         "refused, complete, scored; never a token).  Routes:\n"
         "  GET  /healthz, /metrics         status; Prometheus text (requests, teams, runs\n"
         "                                  in progress, samples received)\n"
         "  GET  /api/v1/whoami             the team of the bearer token\n"
         "  POST /api/v1/runs               registers a run: {\"task\", \"util\": {lut, ff, bram,\n"
         "                                  dsp}, \"provenance\", \"device\", \"finetune\": "
         "SHA256,\n"
         "                                  \"official\", \"entry\", \"division\", "
         "\"p_max_w\"...}: its\n"
         "                                  budgets, rules, fine-tune set; in a round, its\n"
         "                                  place among its entry's runs and its seed\n"
         "  GET  /api/v1/runs/ID            the run, the next link of its chain it expects, and\n"
         "                                  once scored its verdict\n"
         "  POST /api/v1/runs/ID/links      {\"links\": [{\"seq\", \"kind\", \"head\", ..}..]}: "
         "links\n"
         "                                  of the run's chain with their events or samples,\n"
         "                                  each checked against the chain held and stamped\n"
         "                                  with the server's clock (sent again: held)\n"
         "  POST /api/v1/runs/ID/begin      the run is about to begin fine-tuning (an official\n"
         "                                  run must ask: the server keeps the time)\n"
         "  POST /api/v1/runs/ID/complete   fine-tuning is over (saying it twice is harmless)\n"
         "  GET  /api/v1/runs/ID/test       then: the test inputs, labels stripped, under names\n"
         "                                  the server makes (.eebd); an official run's after a\n"
         "                                  fine-tune the server saw, until its predictions are\n"
         "                                  due (--predict-within from the first fetch)\n"
         "  POST /api/v1/runs/ID/predictions  {\"predictions\": [{\"id\", \"top\": [..]} or\n"
         "                                  {\"id\", \"boxes\": [[class, score, x0, y0, x1, "
         "y1]..]}]}\n"
         "  POST /api/v1/runs/ID/score      the server recounts M_s with its labels and judges\n"
         "                                  the chain it holds; an official run's is invalid,\n"
         "                                  with no M_s, if its fine-tune was not streamed as\n"
         "                                  it went or its predictions came late\n"
         "  GET  /api/v1/runs/ID/record     once scored: the server's record of the run (its\n"
         "                                  copy, the facts it judged with, its meter's log),\n"
         "                                  a run database eeb run and eeb submit take back\n"
         "  POST /api/v1/runs/ID/abandon    {\"reason\": \"..\"}: the run stopped; it ends\n"
         "                                  now, aborted (a run that stops without a word is\n"
         "                                  ended by the server past --stream-allowance)\n"
         "  POST /api/v1/runs/ID/ranging    {\"phase\": \"begin\"|\"end\"}: the station's meter\n"
         "                                  ranged on the run's workload before its fine-tune\n"
         "  POST /api/v1/station/samples    a station agent's batch of its meter's samples\n"
         "                                  (its station key, not a team's token)\n"
         "  GET  /api/v1/leaderboard?task=T[&round=R][&provenance=P][&device=D]\n"
         "       [&division=closed|open][&all=1]  the round's entries, ranked by S\n"
         "  GET  /api/v1/runs?task=T        every scored run, one by one\n"
         "  GET  /leaderboard, /runs, /runs/ID\n"
         "                                  the pages: tables sortable by column; a run's report\n"
         "Writes need `Authorization: Bearer TOKEN`, and a team reaches only its own runs\n"
         "(another's is 404, as none is); errors are JSON naming the field at fault;\n"
         "bodies over --max-body are refused (413) before they are read; a team past its\n"
         "rate limit or a quota gets 429.  Only an official run is judged on the secret\n"
         "test set; any other run is a rehearsal, judged on the practice set.\n"
         "\n"
         "The database (the key the secret items are named by), the secret test sets\n"
         "and the station keys must be readable by their owner alone: the server refuses\n"
         "to start on one its group or others may read, naming it (chmod 600 FILE mends\n"
         "it). The files it makes itself (the database and its -wal and -shm, the test\n"
         "inputs it serves, DB.TASK-inputs.eebd, the run pages it keeps) are mode 0600\n"
         "whatever the umask.\n"
         "\n"
         "admin add-team makes a team and prints its token: it is shown once and stored\n"
         "only as its SHA-256.\n"
         "\n"
         "admin make-test writes a TASK test set for --test: the embedded default's\n"
         "layout and fine-tune domain (N items, default the task's), drawn from a\n"
         "secret seed (getrandom) that is never shown or kept, so nobody can make it\n"
         "again, unlike the public seed's; the file (mode 0600, labels inside) stays\n"
         "with the server.  It prints the file's SHA-256.\n"
         "\n"
         "admin station-key writes a new key to FILE (mode 0600, never over a file):\n"
         "give it to the server as --station TEAM=agent:FILE and to the station's\n"
         "agent (eeb power agent --key FILE) on the meter's host; it is the\n"
         "organizer's, not the team's.  With --db, the act is kept in the server's\n"
         "audit log (the key's file name, never the key).\n"
         "\n"
         "admin open-round opens a round of the benchmark: while it is open, every\n"
         "official run is a run of a team's entry (eeb run --server --entry NAME\n"
         "--division closed|open --tier W), the entry's S the median or Olympic mean\n"
         "of its N runs.  It starts from eeb's rules and budgets (5 runs an entry,\n"
         "their median, a cap of 20 runs a team on a task, each task's T_max and one\n"
         "P_max tier, open from now for 30 days), changed by the options below; rounds\n"
         "may not overlap in time.  admin close-round closes the open round now (its\n"
         "entries stand as they are); admin rounds lists the rounds.\n"
         "\n"
         "admin teams lists the teams: name, when made, runs, active or revoked.\n"
         "admin revoke-team refuses the team's token from now on (its runs stay).\n"
         "admin hide-run takes a run off the leaderboard, and its entry with it, while\n"
         "it is under review; admin restore-run shows a hidden run again; admin\n"
         "withdraw-run withdraws a run for good: its entry fails, showing the reason;\n"
         "admin void-run voids a run the server's side cut short (a restart, a meter\n"
         "that failed): ended if it was running, it leaves its entry and the round's\n"
         "cap, so that the team may run it again.\n"
         "Each of these acts needs --reason, and is kept with it in the audit log,\n"
         "which admin audit lists.  The admin verbs other than add-team and\n"
         "open-round refuse a database that is not there rather than make one.\n"
         "\n"
         "Options:\n"
         "  --db FILE          the server's database (default eeb-server.db)\n"
         "  --bind ADDR        the IPv4 address to listen on (default 127.0.0.1)\n"
         "  --port N           the port, 0 for any free one (default 8080)\n"
         "  --threads N        the pool's threads (default 2)\n"
         "  --max-body BYTES   the largest request body (default 1048576)\n"
         "  --rate-limit N     a team's requests per second, 0 for no limit (default 200)\n"
         "  --burst N          and at once (default 400)\n"
         "  --test TASK=FILE   the TASK (cls, det, video) secret test set: official runs\n"
         "                     are judged on it; its inputs are served without labels,\n"
         "                     under names made by the server's key (repeat per task)\n"
         "  --practice TASK=FILE\n"
         "                     the TASK practice test set, whose labels are public: runs\n"
         "                     that are not official (eeb submit) are judged on it, never\n"
         "                     on the secret set (repeat per task)\n"
         "  --model TASK=FILE  the TASK base model runs start from: registration names it\n"
         "                     by its SHA-256 and refuses a run that declares another one,\n"
         "                     or an official run that declares none; a run on the modeled\n"
         "                     clock must declare the step time and power the analytical\n"
         "                     model gives for its design, batch and frozen layers on it\n"
         "                     (repeat per task)\n"
         "  --finetune TASK=FILE\n"
         "                     the TASK fine-tune set runs train on: registration names it\n"
         "                     by its SHA-256 and refuses a run that declares another one,\n"
         "                     or an official run that declares none (repeat per task)\n"
         "  --station TEAM=METER\n"
         "                     director mode: the server reads TEAM's power meter itself\n"
         "                     (a power source URI: ptd://HOST:PORT, scpi://HOST:PORT,\n"
         "                     hwmon:..., as eeb run --power takes), or agent:KEYFILE\n"
         "                     for a meter read by a station agent (eeb power agent)\n"
         "                     holding that key, for each official run\n"
         "                     of TEAM's on a board, from registration to complete; the\n"
         "                     run's E and the P_max rule are then the server's samples\n"
         "                     over the run's fine-tune window, its own log must agree\n"
         "                     within 5 %, and its provenance is the meter's (repeat per\n"
         "                     team).  Without a station, a run's own measured log is\n"
         "                     declared\n"
         "  --stream-allowance S\n"
         "                     an official run's stream: the longest a link of its\n"
         "                     fine-tune may arrive after the run wrote it, and the longest\n"
         "                     pause between links, in seconds (default 10)\n"
         "  --predict-within S a run's predictions must arrive within S seconds of its\n"
         "                     test inputs being served, or it is invalid (default 900)\n"
         "  --quota NAME=N     what a team may do in a UTC day: registrations (runs\n"
         "                     registered, default 100), scored (official runs scored,\n"
         "                     default 10: each tells its M_s on the secret labels),\n"
         "                     samples (power samples stored, default 20000000); -1 for no\n"
         "                     limit; past one, 429 naming it (repeat per quota)\n"
         "  --max-connections N\n"
         "                     connections open at once, from every address (default\n"
         "                     1000); the limit of open files is raised to fit, or the\n"
         "                     server says it cannot start\n"
         "  --max-per-ip N     connections open at once from one address (default 32);\n"
         "                     more are closed as they come. This is the defence against\n"
         "                     one client holding slow connections (a header line every\n"
         "                     few seconds), which no timeout bounds\n"
         "  --connection-timeout S\n"
         "                     a connection idle S seconds is closed (default 15); every\n"
         "                     byte received starts it again (libmicrohttpd's)\n"
         "  --max-samples N    power samples a run may store (default 2000000, 200 s at\n"
         "                     10 kHz); links past it are refused, 413 naming samples\n"
         "\n"
         "admin open-round's options:\n"
         "  --runs N           an entry's official runs, 1..25 (default 5)\n"
         "  --aggregate median|olympic\n"
         "                     their S made the entry's: the median, or the mean without\n"
         "                     the best and the worst (default median)\n"
         "  --cap N            official runs a team may register on a task in the round,\n"
         "                     at least --runs (default 20)\n"
         "  --opens WHEN       when it opens: a UTC time like 2026-12-01T00:00:00Z, or now\n"
         "                     (default now)\n"
         "  --closes WHEN      when it closes (default 30 days after it opens)\n"
         "  --tmax TASK=S      TASK's T_max in seconds (default the task's)\n"
         "  --tiers TASK=W[,W...]\n"
         "                     the P_max tiers an entry of TASK may choose, in watts,\n"
         "                     ascending, at most 4 (default the task's P_max)\n"
         "  --closed-model TASK=FILE.eebm\n"
         "                     the closed division's base model of TASK, by its SHA-256\n"
         "                     (default none: any)\n"
         "  --epochs-max TASK=N\n"
         "                     the closed division's most epochs on TASK (default any)\n"
         "\n"
         "admin revoke-team's, hide-run's, restore-run's, withdraw-run's and void-run's\n"
         "option:\n"
         "  --reason TEXT      why, 1 to 500 characters, kept in the audit log (required)\n"
         "  -h, --help         show this help");
}

/* ---- what the server holds ---- */

/* A file's SHA-256, its first 8 digits and "..." ("?" if it cannot be read). */
static const char *sha_prefix(const char *path, char out[16])
{
    char sha[EEB_SHA256_HEX], ignored[256];
    if (eeb_sha256_file(path, sha, ignored, sizeof ignored))
        snprintf(out, 16, "?");
    else
        snprintf(out, 16, "%.8s...", sha);
    return out;
}

/* ", what PATH (N items, sha256 1a2b3c4d...)": a shard's records from its
 * header, a model's SHA-256 alone. */
static void held_file(FILE *f, const char *sep, const char *what, const char *path, int shard)
{
    char sha[16], ignored[256], items[48] = "";
    struct eeb_shard *s;
    if (shard && eeb_shard_open(&s, path, ignored, sizeof ignored) == EEB_OK) {
        snprintf(items, sizeof items, "%llu items, ", (unsigned long long)eeb_shard_info(s)->count);
        eeb_shard_close(s);
    }
    fprintf(f, "%s%s %s (%ssha256 %s)", sep, what, path, items, sha_prefix(path, sha));
}

/* Per task, the sets and the model the server holds; then the round open
 * now, the next to open, or none. */
static void say_holdings(const struct eeb_server_config *c)
{
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        if (!c->test[t] && !c->practice[t] && !c->finetune[t] && !c->model[t])
            continue;
        printf("eeb serve: %s:", eeb_task_name((enum eeb_task)t));
        const char *sep = " ";
        if (c->test[t])
            held_file(stdout, sep, "test set", c->test[t], 1), sep = ", ";
        if (c->practice[t])
            held_file(stdout, sep, "practice set", c->practice[t], 1), sep = ", ";
        if (c->finetune[t])
            held_file(stdout, sep, "fine-tune set", c->finetune[t], 1), sep = ", ";
        if (c->model[t])
            held_file(stdout, sep, "base model", c->model[t], 0);
        putchar('\n');
    }
    struct eeb_round *all = NULL;
    size_t n = 0;
    char err[512], from[32], to[32];
    if (eeb_server_rounds(c->db, &all, &n, err, sizeof err)) {
        printf("eeb serve: its rounds cannot be read: %s\n", err);
        return;
    }
    int64_t now = eeb_utc_ns();
    const struct eeb_round *open = NULL, *next = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct eeb_round *r = &all[i];
        if (!r->closed_utc_ns && r->opens_utc_ns <= now && now < r->closes_utc_ns)
            open = r;
        else if (!r->closed_utc_ns && now < r->opens_utc_ns && !next)
            next = r;
    }
    if (open)
        printf("eeb serve: round %s open until %s: %d runs an entry (%s), a cap of %d runs a "
               "task\n",
               open->name, eeb_utc_text(open->closes_utc_ns, to), open->runs,
               eeb_round_aggregate_name(open->aggregate), open->cap);
    else if (next)
        printf("eeb serve: no round open (round %s opens %s): official runs are refused until "
               "then\n",
               next->name, eeb_utc_text(next->opens_utc_ns, from));
    else if (n)
        printf("eeb serve: no round open: official runs are refused until one is\n");
    else
        printf("eeb serve: no rounds: official runs are judged against eeb's budgets alone\n");
    free(all);
}

/* ---- the options ---- */

/* An option's TASK=FILE into files[task]. */
static int per_task(const char *option, char *arg, const char *files[EEB_TASK_COUNT])
{
    char *eq = strchr(arg, '=');
    enum eeb_task t;
    char err[128];
    if (!eq)
        return eeb_cli_usage_error(cmd, "%s: '%s' is not TASK=FILE", option, arg);
    *eq = '\0';
    if (eeb_task_parse(arg, &t, err, sizeof err))
        return eeb_cli_usage_error(cmd, "%s: %s", option, err);
    files[t] = eq + 1;
    return EEB_EXIT_OK;
}

/* "--quota NAME=N": a team's daily quota by its name, N a count or -1 for
 * none. */
static int quota(const char *arg, struct eeb_server_config *c)
{
    const char *eq = strchr(arg, '=');
    for (int q = 0; eq && q < EEB_QUOTAS; q++) {
        const char *name = eeb_server_quota_name((enum eeb_server_quota)q);
        if ((size_t)(eq - arg) != strlen(name) || strncmp(arg, name, strlen(name)))
            continue;
        char *end;
        errno = 0;
        long long n = strtoll(eq + 1, &end, 10);
        if (end == eq + 1 || *end || n < -1 || errno == ERANGE)
            return eeb_cli_usage_error(cmd, "--quota %s: expected a count, or -1 for none", arg);
        c->quota[q] = n;
        return EEB_EXIT_OK;
    }
    return eeb_cli_usage_error(cmd, "--quota %s: expected registrations=N, scored=N or samples=N",
                               arg);
}

/* --station TEAM=URI into the next free station. */
static int station(char *arg, struct eeb_server_config *cfg)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return eeb_cli_usage_error(cmd, "--station: '%s' is not TEAM=URI", arg);
    *eq = '\0';
    for (int i = 0; i < EEB_SERVER_STATIONS; i++)
        if (!cfg->stations[i].team) {
            cfg->stations[i] = (struct eeb_server_station){arg, eq + 1};
            return EEB_EXIT_OK;
        }
    return eeb_cli_usage_error(cmd, "--station: at most %d stations", EEB_SERVER_STATIONS);
}

/* What eeb serve does: serve, or one admin verb. */
enum verb {
    SERVE,
    ADD_TEAM,
    MAKE_TEST,
    STATION_KEY,
    OPEN_ROUND,
    CLOSE_ROUND,
    ROUNDS,
    TEAMS,
    REVOKE_TEAM,
    HIDE_RUN,
    RESTORE_RUN,
    WITHDRAW_RUN,
    VOID_RUN,
    AUDIT,
    VERBS
};

static const char *const verb_names[VERBS] = {
    "eeb serve",         "admin add-team",    "admin make-test",   "admin station-key",
    "admin open-round",  "admin close-round", "admin rounds",      "admin teams",
    "admin revoke-team", "admin hide-run",    "admin restore-run", "admin withdraw-run",
    "admin void-run",    "admin audit"};

#define V(verb)  (1u << (verb))
#define V_REASON (V(REVOKE_TEAM) | V(HIDE_RUN) | V(RESTORE_RUN) | V(WITHDRAW_RUN) | V(VOID_RUN))
#define V_DB                                                                                       \
    (V(SERVE) | V(ADD_TEAM) | V(STATION_KEY) | V(OPEN_ROUND) | V(CLOSE_ROUND) | V(ROUNDS) |        \
     V(TEAMS) | V_REASON | V(AUDIT))

enum {
    O_DB = 256,
    O_BIND,
    O_PORT,
    O_THREADS,
    O_MAX_BODY,
    O_RATE,
    O_BURST,
    O_TEST,
    O_FINETUNE,
    O_MODEL,
    O_STREAM,
    O_STATION,
    O_PRACTICE,
    O_PREDICT_WITHIN,
    O_QUOTA,
    O_MAX_CONNECTIONS,
    O_MAX_PER_IP,
    O_CONNECTION_TIMEOUT,
    O_MAX_SAMPLES,
    O_N,
    O_RUNS,
    O_AGGREGATE,
    O_CAP,
    O_OPENS,
    O_CLOSES,
    O_TMAX,
    O_TIERS,
    O_CLOSED_MODEL,
    O_EPOCHS_MAX,
    O_REASON
};

/* Each option, and the verbs it goes with: given with another, a usage error. */
static const struct serve_option {
    struct option o;
    unsigned verbs;
} serve_options[] = {
    {{"db", 1, 0, O_DB}, V_DB},
    {{"bind", 1, 0, O_BIND}, V(SERVE)},
    {{"port", 1, 0, O_PORT}, V(SERVE)},
    {{"threads", 1, 0, O_THREADS}, V(SERVE)},
    {{"max-body", 1, 0, O_MAX_BODY}, V(SERVE)},
    {{"rate-limit", 1, 0, O_RATE}, V(SERVE)},
    {{"burst", 1, 0, O_BURST}, V(SERVE)},
    {{"test", 1, 0, O_TEST}, V(SERVE)},
    {{"finetune", 1, 0, O_FINETUNE}, V(SERVE)},
    {{"model", 1, 0, O_MODEL}, V(SERVE)},
    {{"stream-allowance", 1, 0, O_STREAM}, V(SERVE)},
    {{"station", 1, 0, O_STATION}, V(SERVE)},
    {{"practice", 1, 0, O_PRACTICE}, V(SERVE)},
    {{"predict-within", 1, 0, O_PREDICT_WITHIN}, V(SERVE)},
    {{"quota", 1, 0, O_QUOTA}, V(SERVE)},
    {{"max-connections", 1, 0, O_MAX_CONNECTIONS}, V(SERVE)},
    {{"max-per-ip", 1, 0, O_MAX_PER_IP}, V(SERVE)},
    {{"connection-timeout", 1, 0, O_CONNECTION_TIMEOUT}, V(SERVE)},
    {{"max-samples", 1, 0, O_MAX_SAMPLES}, V(SERVE)},
    {{"out", 1, 0, 'o'}, V(MAKE_TEST) | V(STATION_KEY)},
    {{"n", 1, 0, O_N}, V(MAKE_TEST)},
    {{"runs", 1, 0, O_RUNS}, V(OPEN_ROUND)},
    {{"aggregate", 1, 0, O_AGGREGATE}, V(OPEN_ROUND)},
    {{"cap", 1, 0, O_CAP}, V(OPEN_ROUND)},
    {{"opens", 1, 0, O_OPENS}, V(OPEN_ROUND)},
    {{"closes", 1, 0, O_CLOSES}, V(OPEN_ROUND)},
    {{"tmax", 1, 0, O_TMAX}, V(OPEN_ROUND)},
    {{"tiers", 1, 0, O_TIERS}, V(OPEN_ROUND)},
    {{"closed-model", 1, 0, O_CLOSED_MODEL}, V(OPEN_ROUND)},
    {{"epochs-max", 1, 0, O_EPOCHS_MAX}, V(OPEN_ROUND)},
    {{"reason", 1, 0, O_REASON}, V_REASON},
    {{"help", 0, 0, 'h'}, ~0u},
};

#define N_OPTIONS (sizeof serve_options / sizeof *serve_options)

static size_t option_index(int code)
{
    size_t i = 0;
    while (i < N_OPTIONS && serve_options[i].o.val != code)
        i++;
    return i;
}

/* A usage error if an option given does not go with verb, naming the
 * verbs it goes with. */
static int options_fit(const unsigned char given[N_OPTIONS], enum verb verb)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const struct serve_option *o = &serve_options[i];
        if (!given[i] || o->verbs & V(verb))
            continue;
        char name[32], with[256] = "";
        if (o->o.val == 'o')
            snprintf(name, sizeof name, "-o");
        else
            snprintf(name, sizeof name, "--%s", o->o.name);
        int count = 0, k = 0;
        for (int v = 0; v < VERBS; v++)
            count += (o->verbs & V(v)) != 0;
        size_t len = 0;
        for (int v = 0; v < VERBS && len < sizeof with; v++) {
            if (!(o->verbs & V(v)))
                continue;
            const char *sep = k == 0 ? "" : k == count - 1 ? " or " : ", ";
            len += (size_t)snprintf(with + len, sizeof with - len, "%s%s", sep, verb_names[v]);
            k++;
        }
        return eeb_cli_usage_error(cmd, "%s goes with %s, not %s", name, with, verb_names[verb]);
    }
    return EEB_EXIT_OK;
}

/* The verb of the arguments left after the options; *rest, the arguments
 * it took. */
static int verb_of(int argc, char **argv, enum verb *verb, int *rest)
{
    static const char verbs[] = "add-team, make-test, station-key, open-round, close-round, "
                                "rounds, teams, revoke-team, hide-run, restore-run, "
                                "withdraw-run, void-run or audit";
    *verb = SERVE, *rest = 0;
    if (argc == 0)
        return EEB_EXIT_OK;
    if (strcmp(argv[0], "admin"))
        return eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[0]);
    if (argc == 1)
        return eeb_cli_usage_error(cmd, "admin takes a verb: %s", verbs);
    for (int v = ADD_TEAM; v < VERBS; v++)
        if (strcmp(argv[1], verb_names[v] + strlen("admin ")) == 0) {
            *verb = (enum verb)v, *rest = 2;
            return EEB_EXIT_OK;
        }
    return eeb_cli_usage_error(cmd, "admin %s: no such verb (%s)", argv[1], verbs);
}

int eeb_cmd_serve(int argc, char **argv)
{
    struct option options[N_OPTIONS + 1] = {{0}};
    for (size_t i = 0; i < N_OPTIONS; i++)
        options[i] = serve_options[i].o;
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    double port = cfg.port, threads = cfg.threads, max_body = (double)cfg.max_body, n = 0;
    double connections = cfg.max_connections, per_ip = cfg.max_per_ip,
           timeout = cfg.connection_timeout_s, samples = (double)cfg.max_samples;
    const char *out = NULL;    /* admin make-test's and station-key's */
    const char *reason = NULL; /* the organizer's acts' */
    struct round_options round;
    admin_round_options_init(&round);
    unsigned char given[N_OPTIONS] = {0};
    int c, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        if (option_index(c) < N_OPTIONS)
            given[option_index(c)] = 1;
        switch (c) {
        case O_DB: cfg.db = optarg; break;
        case O_BIND: cfg.bind = optarg; break;
        case O_PORT: rc = eeb_cli_count(cmd, "--port", optarg, 0, 65535, &port); break;
        case O_THREADS: rc = eeb_cli_count(cmd, "--threads", optarg, 1, 256, &threads); break;
        case O_MAX_BODY:
            rc = eeb_cli_count(cmd, "--max-body", optarg, 1, 1 << 30, &max_body);
            break;
        case O_RATE:
            rc = eeb_cli_count(cmd, "--rate-limit", optarg, 0, 1e6, &cfg.rate_limit);
            break;
        case O_BURST: rc = eeb_cli_count(cmd, "--burst", optarg, 1, 1e6, &cfg.rate_burst); break;
        case O_TEST: rc = per_task("--test", optarg, cfg.test); break;
        case O_FINETUNE: rc = per_task("--finetune", optarg, cfg.finetune); break;
        case O_MODEL: rc = per_task("--model", optarg, cfg.model); break;
        case O_STATION: rc = station(optarg, &cfg); break;
        case O_PRACTICE: rc = per_task("--practice", optarg, cfg.practice); break;
        case O_QUOTA: rc = quota(optarg, &cfg); break;
        case O_PREDICT_WITHIN:
            rc = eeb_cli_number(cmd, "--predict-within", optarg, &cfg.predict_within_s);
            if (rc == 0 && !(cfg.predict_within_s > 0))
                rc = eeb_cli_usage_error(cmd, "--predict-within must be a positive number");
            break;
        case O_MAX_CONNECTIONS:
            rc = eeb_cli_count(cmd, "--max-connections", optarg, 1, 1e6, &connections);
            break;
        case O_MAX_PER_IP: rc = eeb_cli_count(cmd, "--max-per-ip", optarg, 1, 1e6, &per_ip); break;
        case O_CONNECTION_TIMEOUT:
            rc = eeb_cli_count(cmd, "--connection-timeout", optarg, 1, 3600, &timeout);
            break;
        case O_MAX_SAMPLES:
            rc = eeb_cli_count(cmd, "--max-samples", optarg, 1, 1e12, &samples);
            break;
        case O_STREAM:
            rc = eeb_cli_number(cmd, "--stream-allowance", optarg, &cfg.stream_allowance_s);
            if (rc == 0 && !(cfg.stream_allowance_s > 0))
                rc = eeb_cli_usage_error(cmd, "--stream-allowance must be a positive number");
            break;
        case 'o': out = optarg; break;
        case O_N: rc = eeb_cli_count(cmd, "--n", optarg, 1, 1e9, &n); break;
        case O_RUNS: rc = eeb_cli_count(cmd, "--runs", optarg, 1, 1e6, &round.runs); break;
        case O_CAP: rc = eeb_cli_count(cmd, "--cap", optarg, 1, 1e6, &round.cap); break;
        case O_AGGREGATE: {
            enum eeb_round_aggregate a = EEB_ROUND_MEDIAN;
            if (eeb_round_aggregate_parse(optarg, &a))
                rc = eeb_cli_usage_error(cmd, "--aggregate %s: expected median or olympic", optarg);
            round.aggregate = (int)a;
            break;
        }
        case O_OPENS:
            rc = admin_parse_utc("--opens", optarg, &round.opens_utc_ns), round.opens_given = 1;
            break;
        case O_CLOSES:
            rc = admin_parse_utc("--closes", optarg, &round.closes_utc_ns), round.closes_given = 1;
            break;
        case O_TMAX: rc = admin_per_task_number("--tmax", optarg, &round); break;
        case O_EPOCHS_MAX: rc = admin_per_task_number("--epochs-max", optarg, &round); break;
        case O_TIERS: rc = admin_tiers(optarg, &round); break;
        case O_CLOSED_MODEL: rc = admin_closed_model(optarg, &round); break;
        case O_REASON: reason = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option");
        }
    }
    enum verb verb;
    int rest;
    if (rc || (rc = verb_of(argc - optind, argv + optind, &verb, &rest)) ||
        (rc = options_fit(given, verb)))
        return rc;
    argc -= optind + rest, argv += optind + rest;
    switch (verb) {
    case ADD_TEAM: return admin_add_team(cfg.db, argc, argv);
    case MAKE_TEST: return admin_make_test(argc, argv, out, n);
    case STATION_KEY:
        return admin_station_key(argc, out, given[option_index(O_DB)] ? cfg.db : NULL);
    case OPEN_ROUND: return admin_open_round(cfg.db, argc, argv, &round);
    case CLOSE_ROUND: return admin_close_round(cfg.db, argc, argv);
    case ROUNDS: return admin_list_rounds(cfg.db, argc);
    case TEAMS: return admin_list(cfg.db, argc, "teams", eeb_server_list_teams, "no teams in");
    case REVOKE_TEAM: return admin_revoke_team(cfg.db, argc, argv, reason);
    case HIDE_RUN: return admin_run_act(cfg.db, argc, argv, "hide-run", EEB_SERVER_HIDE, reason);
    case RESTORE_RUN:
        return admin_run_act(cfg.db, argc, argv, "restore-run", EEB_SERVER_RESTORE, reason);
    case WITHDRAW_RUN:
        return admin_run_act(cfg.db, argc, argv, "withdraw-run", EEB_SERVER_WITHDRAW, reason);
    case VOID_RUN: return admin_run_act(cfg.db, argc, argv, "void-run", EEB_SERVER_VOID, reason);
    case AUDIT:
        return admin_list(cfg.db, argc, "audit", eeb_server_list_audit,
                          "no acts in the audit log of");
    default: break;
    }
    cfg.port = (int)port, cfg.threads = (int)threads, cfg.max_body = (size_t)max_body;
    cfg.max_connections = (unsigned)connections, cfg.max_per_ip = (unsigned)per_ip;
    cfg.connection_timeout_s = (unsigned)timeout, cfg.max_samples = (uint64_t)samples;
    if (cfg.max_connections < (unsigned)cfg.threads)
        return eeb_cli_usage_error(cmd,
                                   "--max-connections %u is fewer than --threads %d: each "
                                   "thread of the pool takes its share",
                                   cfg.max_connections, cfg.threads);
    cfg.log = stderr; /* what it did, a line an act: never a token */
    /* the pool's threads inherit the blocked signals; this one waits for them */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    struct eeb_server *s;
    char err[512];
    if (eeb_server_start(&cfg, &s, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    printf("eeb serve: listening on http://%s:%d/ (database %s, %d threads)\n", cfg.bind,
           eeb_server_port(s), cfg.db, cfg.threads);
    printf("eeb serve: at most %u connections, %u from one address, closed after %u s idle; "
           "%llu power samples a run\n",
           cfg.max_connections, cfg.max_per_ip, cfg.connection_timeout_s,
           (unsigned long long)cfg.max_samples);
    printf("eeb serve: a team a UTC day:");
    for (int q = 0; q < EEB_QUOTAS; q++)
        if (cfg.quota[q] < 0)
            printf("%s any %s", q ? "," : "", eeb_server_quota_name((enum eeb_server_quota)q));
        else
            printf("%s %lld %s", q ? "," : "", (long long)cfg.quota[q],
                   eeb_server_quota_name((enum eeb_server_quota)q));
    printf(" (--quota); predictions within %g s of the test inputs\n", cfg.predict_within_s);
    say_holdings(&cfg);
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    eeb_server_stop(s);
    printf("eeb serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return EEB_EXIT_OK;
}
