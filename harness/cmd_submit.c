/*
 * cmd_submit.c - `eeb submit`: send a finished run to the evaluation
 * server, which judges it against the test labels it alone holds.
 */
#include "eeb_cli.h"
#include "eeb_client.h"
#include "eeb_run.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "submit";

static void help(void)
{
    puts("Usage: eeb submit FILE.db --server URL [--token T] [--run ID] [--resume N] [--json]\n"
         "\n"
         "Sends a finished run of FILE.db to the evaluation server (`eeb serve`):\n"
         "registers it (task, utilization, provenance, device), sends its power log in\n"
         "numbered chunks, marks fine-tuning complete, sends its predictions without\n"
         "their truth, and asks the server to score it.  The server recounts M_s\n"
         "against its own labels and judges the run as `eeb check` does; its verdict is\n"
         "printed.  The run's test set must be the server's (the items are matched by\n"
         "record id).  A submission cut off midway is finished with --resume N (the\n"
         "server run it printed): every step can be repeated without harm.  Transient\n"
         "failures (no connection, 429, 5xx) are retried with backoff.\n"
         "\n"
         "Options:\n"
         "  --server URL   the server, http://HOST:PORT\n"
         "  --token T      the team's token (default: $EEB_TOKEN); never printed\n"
         "  --run ID       the run in FILE.db (default: the latest)\n"
         "  --resume N     continue the submission of server run N\n"
         "  --json         print the server's verdict as JSON\n"
         "  -h, --help     show this help\n"
         "\n" EEB_CLI_EXIT_HELP);
}

/* The verdict in a few lines; the exit status it gives. */
/* What settle needs of a run's events: whether one is a score, and the
 * latest's time (a verdict comes after everything the run recorded). */
struct events_seen {
    int scored;
    int64_t last;
};

static int see_event(void *arg, int64_t t, int64_t utc, const char *kind, const char *payload)
{
    (void)utc, (void)payload;
    struct events_seen *e = arg;
    e->scored |= strcmp(kind, EEB_EVENT_SCORE) == 0;
    e->last = t > e->last ? t : e->last;
    return 0;
}

/* An official run cut off before the server's verdict reached it: the
 * verdict written into it now, as the server judged it from the record
 * taken back (copy), so that its record ends as a run's does. */
static int settle(struct eeb_rundb *db, const struct eeb_run_row *row, int64_t copy,
                  const char *server, int64_t server_run, char *err, size_t errlen)
{
    struct eeb_config_record cfg;
    struct events_seen seen = {0};
    (void)eeb_config_record_read(row->config, &cfg);
    int rc =
        cfg.official ? eeb_rundb_events_each(db, row->id, see_event, &seen, err, errlen) : EEB_OK;
    if (rc || !cfg.official || seen.scored)
        return rc;
    struct eeb_run_outcome o = {0};
    if ((rc = eeb_run_judge(eeb_rundb_path(db), copy, NAN, &o, err, errlen)))
        return rc;
    o.server_run = server_run;
    json_t *payload = eeb_run_score_json(&o, server);
    char *text = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
    json_decref(payload);
    rc = text ? eeb_run_store_results(db, row->id, &o, "declared", err, errlen)
              : eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc == EEB_OK)
        rc = eeb_rundb_event_add(db, row->id, seen.last, eeb_utc_ns(), EEB_EVENT_SCORE, text, err,
                                 errlen);
    /* a run whose harness was killed ends here, as the server ended it */
    if (rc == EEB_OK && strcmp(row->state, "done") && strcmp(row->state, "failed"))
        rc = eeb_rundb_run_set_state(db, row->id, o.pass ? EEB_RUN_DONE : EEB_RUN_FAILED, err,
                                     errlen);
    free(text);
    return rc;
}

/* The server's record of the run scored taken back beside it, so that
 * `eeb check` there gives the server's verdict; a failure is said, and
 * changes nothing of the verdict. */
static void take_record(struct eeb_client *cl, const char *db_path, int64_t run, int64_t server_run)
{
    struct eeb_rundb *db;
    struct eeb_run_row row = {0};
    char err[512];
    int64_t copy;
    int rc = eeb_rundb_open(db_path, EEB_RUNDB_READWRITE, &db, err, sizeof err);
    if (rc == EEB_OK) {
        if ((rc = eeb_rundb_run_get(db, run, &row, err, sizeof err)) == EEB_OK)
            rc = eeb_client_take_record(cl, server_run, db, row.uuid, row.id, &copy, err,
                                        sizeof err);
        if (rc == EEB_OK)
            rc = settle(db, &row, copy, cl->url, server_run, err, sizeof err);
        eeb_rundb_run_row_free(&row);
        eeb_rundb_close(db);
    }
    if (rc)
        fprintf(stderr, "eeb %s: the server's record was not taken back: %s\n", cmd, err);
}

static int show(json_t *v, int as_json)
{
    const char *verdict = json_string_value(json_object_get(v, "verdict")) ?: "?";
    int code = eeb_cli_verdict_exit(verdict);
    if (as_json) {
        json_incref(v);
        eeb_cli_print_json(cmd, v);
        return code;
    }
    printf("server run %lld (%s, team %s): %s\n",
           (long long)json_integer_value(json_object_get(v, "run_id")),
           json_string_value(json_object_get(v, "task")) ?: "?",
           json_string_value(json_object_get(v, "team")) ?: "?", verdict);
    static const char *const keys[] = {"S", "m_s", "m_p", "m_t", "m_u", "energy_j", "t_s"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *x = json_object_get(v, keys[i]);
        if (json_is_number(x))
            printf("  %-9s %.6g\n", keys[i], json_number_value(x));
    }
    const char *why = json_string_value(json_object_get(v, "why"));
    if (why && *why)
        printf("  why       %s\n", why);
    return code;
}

int eeb_cmd_submit(int argc, char **argv)
{
    static const struct option options[] = {
        {"server", required_argument, NULL, 's'},
        {"token", required_argument, NULL, 't'},
        {"run", required_argument, NULL, 'r'},
        {"resume", required_argument, NULL, 'R'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *server = NULL, *token = getenv("EEB_TOKEN");
    double run = 0, resume = 0;
    int as_json = 0, c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 's': server = optarg; break;
        case 't': token = optarg; break;
        case 'j': as_json = 1; break;
        case 'h': help(); return EEB_EXIT_OK;
        case 'r':
            if ((rc = eeb_cli_count(cmd, "--run", optarg, 1, 1e15, &run)))
                return rc;
            break;
        case 'R':
            if ((rc = eeb_cli_count(cmd, "--resume", optarg, 1, 1e15, &resume)))
                return rc;
            break;
        case ':': return eeb_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return eeb_cli_usage_error(cmd, "expected one run database FILE.db");
    if (!server)
        return eeb_cli_usage_error(cmd, "--server URL is required");
    if (!token)
        return eeb_cli_usage_error(cmd, "--token T (or $EEB_TOKEN) is required");
    struct eeb_client cl;
    char err[1024];
    if (eeb_client_init(&cl, server, token, err, sizeof err)) {
        eeb_client_free(&cl);
        return eeb_cli_usage_error(cmd, "%s", err);
    }
    cl.log = stderr;
    int64_t server_run = (int64_t)resume;
    json_t *verdict = NULL;
    rc = eeb_client_submit(&cl, argv[optind], (int64_t)run, &server_run, &verdict, err, sizeof err);
    if (rc == EEB_OK)
        take_record(&cl, argv[optind], (int64_t)run, server_run);
    eeb_client_free(&cl);
    if (rc) {
        if (server_run && rc != EEB_EINVAL) /* a refusal is not cured by trying again */
            fprintf(stderr, "eeb %s: resume with --resume %lld\n", cmd, (long long)server_run);
        return eeb_cli_error(cmd, "%s", err);
    }
    rc = show(verdict, as_json);
    json_decref(verdict);
    return rc;
}
