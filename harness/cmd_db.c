/*
 * cmd_db.c - `eeb db init|info FILE`: create a run database, or say what
 * one holds (schema version, runs by state, row counts).
 */
#include "eeb_cli.h"
#include "rundb/eeb_rundb.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

static const char *const cmd = "db";

static void help(void)
{
    puts("Usage: eeb db init FILE\n"
         "       eeb db info [--json] FILE\n"
         "\n"
         "The run database is one SQLite file (WAL mode) that holds every run's\n"
         "configuration, stage events, power samples, predictions and results.\n"
         "\n"
         "  init    create FILE with the current schema, or migrate an older eeb\n"
         "          database in place; a file that is not an eeb database, or one\n"
         "          written by a newer eeb, is refused and left untouched\n"
         "  info    print the schema version, the runs by state and row counts\n"
         "          (opens FILE read-only)\n"
         "\n"
         "Options:\n"
         "  --json      print info as one JSON object\n"
         "  -h, --help  show this help");
}

static int info(const char *path, int as_json)
{
    char err[512];
    struct eeb_rundb *db;
    struct eeb_rundb_info in;
    if (eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    int rc = eeb_rundb_info(db, &in, err, sizeof err);
    eeb_rundb_close(db);
    if (rc)
        return eeb_cli_error(cmd, "%s", err);
    if (as_json) {
        json_t *states = json_object();
        for (int k = 0; k < EEB_RUN_STATE_COUNT; k++)
            json_object_set_new(states, eeb_rundb_state_name((enum eeb_run_state)k),
                                json_integer(in.runs_by_state[k]));
        json_t *o =
            json_pack("{s:s, s:i, s:I, s:o, s:I, s:I, s:I, s:I}", "file", path, "schema", in.schema,
                      "runs", (json_int_t)in.runs, "runs_by_state", states, "events",
                      (json_int_t)in.events, "samples", (json_int_t)in.samples, "predictions",
                      (json_int_t)in.predictions, "results", (json_int_t)in.results);
        return eeb_cli_print_json(cmd, o);
    }
    printf("%s: eeb run database, schema v%d\n", path, in.schema);
    printf("runs         %lld", (long long)in.runs);
    const char *sep = " (";
    for (int k = 0; k < EEB_RUN_STATE_COUNT; k++) {
        if (!in.runs_by_state[k])
            continue;
        printf("%s%lld %s", sep, (long long)in.runs_by_state[k],
               eeb_rundb_state_name((enum eeb_run_state)k));
        sep = ", ";
    }
    printf("%s\n", in.runs ? ")" : "");
    printf("events       %lld\n", (long long)in.events);
    printf("samples      %lld\n", (long long)in.samples);
    printf("predictions  %lld\n", (long long)in.predictions);
    printf("results      %lld\n", (long long)in.results);
    return EEB_EXIT_OK;
}

static int init(const char *path)
{
    char err[512];
    struct eeb_rundb *db;
    if (eeb_rundb_open(path, EEB_RUNDB_READWRITE, &db, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    eeb_rundb_close(db);
    printf("%s: eeb run database, schema v%d\n", path, EEB_RUNDB_SCHEMA);
    return EEB_EXIT_OK;
}

int eeb_cmd_db(int argc, char **argv)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, as_json = 0;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = 1; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "expected 'init FILE' or 'info FILE'");
    const char *action = argv[optind];
    if (optind + 2 != argc)
        return eeb_cli_usage_error(cmd, "'%s' takes exactly one FILE", action);
    const char *path = argv[optind + 1];
    if (strcmp(action, "info") == 0)
        return info(path, as_json);
    if (strcmp(action, "init") == 0)
        return as_json ? eeb_cli_usage_error(cmd, "--json goes with 'info'") : init(path);
    return eeb_cli_usage_error(cmd, "unknown action '%s' (expected init or info)", action);
}
