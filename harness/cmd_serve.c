/*
 * cmd_serve.c - `eeb serve`: run the evaluation and leaderboard server
 * until SIGINT or SIGTERM; `eeb serve admin add-team NAME`: make a team and
 * show its token, once; `eeb serve admin make-test TASK -o FILE`: a private
 * test set from a secret seed; `eeb serve admin station-key -o FILE`: the
 * key of a station's agent.
 */
#include "eeb_cli.h"
#include "server/eeb_server.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_task_ops.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char *const cmd = "serve";

static void help(void)
{
    puts("Usage: eeb serve [--db FILE] [--bind ADDR] [--port N] [--threads N] [--max-body BYTES]\n"
         "                 [--rate-limit N] [--burst N] [--test TASK=FILE.eebd ...]\n"
         "                 [--finetune TASK=FILE.eebd ...] [--model TASK=FILE.eebm ...]\n"
         "                 [--stream-allowance S]\n"
         "                 [--station TEAM=METER ...]\n"
         "       eeb serve admin add-team NAME [--db FILE]\n"
         "       eeb serve admin make-test TASK -o FILE.eebd [--n N]\n"
         "       eeb serve admin station-key -o FILE\n"
         "\n"
         "Serves the benchmark's evaluation server over HTTP (libmicrohttpd, a thread\n"
         "pool) from one SQLite database, until SIGINT or SIGTERM; requests in flight\n"
         "finish first.  The database is an eeb run database: each submitted run is\n"
         "recorded as `eeb run` records one, so `eeb check` and `eeb report` read it\n"
         "too.  Routes:\n"
         "  GET  /healthz, /metrics         status; Prometheus text (requests, teams)\n"
         "  GET  /api/v1/whoami             the team of the bearer token\n"
         "  POST /api/v1/runs               registers a run: {\"task\", \"util\": {lut, ff, bram,\n"
         "                                  dsp}, \"provenance\", \"device\", \"finetune\": "
         "SHA256,\n"
         "                                  \"official\"...}: its budgets, rules, fine-tune set\n"
         "  GET  /api/v1/runs/ID            the run, the next link of its chain it expects, and\n"
         "                                  once scored its verdict\n"
         "  POST /api/v1/runs/ID/links      {\"links\": [{\"seq\", \"kind\", \"head\", ..}..]}: "
         "links\n"
         "                                  of the run's chain with their events or samples,\n"
         "                                  each checked against the chain held and stamped\n"
         "                                  with the server's clock (sent again: held)\n"
         "  POST /api/v1/runs/ID/complete   fine-tuning is over (saying it twice is harmless)\n"
         "  GET  /api/v1/runs/ID/test       then: the task's test inputs, labels stripped (.eebd)\n"
         "  POST /api/v1/runs/ID/predictions  {\"predictions\": [{\"id\", \"top\": [..]} or\n"
         "                                  {\"id\", \"boxes\": [[class, score, x0, y0, x1, "
         "y1]..]}]}\n"
         "  POST /api/v1/runs/ID/score      the server recounts M_s with its labels and judges\n"
         "                                  the chain it holds; an official run's is invalid if\n"
         "                                  its fine-tune was not streamed as it went\n"
         "  GET  /api/v1/leaderboard?task=T[&provenance=P][&device=D]   ranked by S\n"
         "  GET  /leaderboard, /runs/ID     the pages: tables sortable by column; a run's report\n"
         "Writes need `Authorization: Bearer TOKEN`, and a team reaches only its own runs\n"
         "(403); errors are JSON naming the field at fault; bodies over --max-body are\n"
         "refused (413) before they are read; a team past its rate limit gets 429.\n"
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
         "organizer's, not the team's.\n"
         "\n"
         "Options:\n"
         "  --db FILE          the server's database (default eeb-server.db)\n"
         "  --bind ADDR        the IPv4 address to listen on (default 127.0.0.1)\n"
         "  --port N           the port, 0 for any free one (default 8080)\n"
         "  --threads N        the pool's threads (default 2)\n"
         "  --max-body BYTES   the largest request body (default 1048576)\n"
         "  --rate-limit N     a team's requests per second, 0 for no limit (default 200)\n"
         "  --burst N          and at once (default 400)\n"
         "  --test TASK=FILE   the TASK (cls, det, video) test set the server holds; its\n"
         "                     inputs are served without labels (repeat per task)\n"
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
         "  -h, --help         show this help");
}

static int add_team(const char *db, int argc, char **argv)
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

/* A station agent's key, in a file of the organizer's. */
static int station_key(int argc, const char *out)
{
    if (argc != 0 || !out)
        return eeb_cli_usage_error(cmd, "admin station-key takes -o FILE alone");
    char err[512];
    if (eeb_server_station_key(out, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    printf("station key written to %s (mode 0600): give the server --station TEAM=agent:%s,\n"
           "and the agent on the meter's host --key %s\n",
           out, out, out);
    return EEB_EXIT_OK;
}

/* A test set nobody can make again: the embedded default's test split of
 * task, from a seed drawn from getrandom and forgotten. */
static int make_test(int argc, char **argv, const char *out, double n)
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

int eeb_cmd_serve(int argc, char **argv)
{
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
        O_N
    };
    static const struct option options[] = {{"db", 1, 0, O_DB},
                                            {"bind", 1, 0, O_BIND},
                                            {"port", 1, 0, O_PORT},
                                            {"threads", 1, 0, O_THREADS},
                                            {"max-body", 1, 0, O_MAX_BODY},
                                            {"rate-limit", 1, 0, O_RATE},
                                            {"burst", 1, 0, O_BURST},
                                            {"test", 1, 0, O_TEST},
                                            {"finetune", 1, 0, O_FINETUNE},
                                            {"model", 1, 0, O_MODEL},
                                            {"stream-allowance", 1, 0, O_STREAM},
                                            {"station", 1, 0, O_STATION},
                                            {"out", 1, 0, 'o'},
                                            {"n", 1, 0, O_N},
                                            {"help", 0, 0, 'h'},
                                            {0, 0, 0, 0}};
    struct eeb_server_config cfg;
    eeb_server_config_default(&cfg);
    double port = cfg.port, threads = cfg.threads, max_body = (double)cfg.max_body, n = 0;
    const char *out = NULL; /* admin make-test's */
    int c, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
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
        case O_STREAM:
            rc = eeb_cli_number(cmd, "--stream-allowance", optarg, &cfg.stream_allowance_s);
            if (rc == 0 && !(cfg.stream_allowance_s > 0))
                rc = eeb_cli_usage_error(cmd, "--stream-allowance must be a positive number");
            break;
        case 'o': out = optarg; break;
        case O_N: rc = eeb_cli_count(cmd, "--n", optarg, 1, 1e9, &n); break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option");
        }
    }
    if (rc)
        return rc;
    if (optind < argc) {
        int admin = strcmp(argv[optind], "admin") == 0 && optind + 1 < argc;
        if (admin && strcmp(argv[optind + 1], "add-team") == 0)
            return add_team(cfg.db, argc - optind - 2, argv + optind + 2);
        if (admin && strcmp(argv[optind + 1], "make-test") == 0)
            return make_test(argc - optind - 2, argv + optind + 2, out, n);
        if (admin && strcmp(argv[optind + 1], "station-key") == 0)
            return station_key(argc - optind - 2, out);
        return eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    }
    if (out || n)
        return eeb_cli_usage_error(cmd, "-o and --n go with admin make-test or station-key");
    cfg.port = (int)port, cfg.threads = (int)threads, cfg.max_body = (size_t)max_body;
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
    fflush(stdout);
    int sig;
    sigwait(&stop, &sig);
    eeb_server_stop(s);
    printf("eeb serve: stopped (%s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    return EEB_EXIT_OK;
}
