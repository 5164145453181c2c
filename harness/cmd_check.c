/*
 * cmd_check.c - `eeb check`: a run's metrics and verdict recomputed from
 * its database alone, for compliance review.
 */
#include "eeb_cli.h"
#include "eeb_run.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>

static const char *const cmd = "check";

/* `eeb check` has its own exit codes, for scripts that gate on a run. */
enum { CHECK_PASS = 0, CHECK_FAIL = 1, CHECK_INVALID = 2 };

static void help(void)
{
    puts("Usage: eeb check FILE.db [--run ID] [--json]\n"
         "\n"
         "Recomputes every metric of a run and its verdict from the run database\n"
         "alone: T from the fine-tune events, E and the P_max rule from the power\n"
         "samples, M_s from the stored predictions, M_u, the weights and the budgets\n"
         "from the stored configuration; then compares them with the results the\n"
         "run stored.\n"
         "\n"
         "Options:\n"
         "  --run ID     the run (default: the latest)\n"
         "  --json       the verdict as one JSON object\n"
         "  -h, --help   show this help\n"
         "\n"
         "Exit status: 0 pass; 1 fail (over P_max, or aborted); 2 invalid or\n"
         "incomplete (a killed run, an invalid power measurement, a stored figure\n"
         "the record does not give, an unreadable file) or a usage error.");
}

int eeb_cmd_check(int argc, char **argv)
{
    static const struct option options[] = {
        {"run", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double run = 0;
    int as_json = 0, c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (eeb_cli_count(cmd, "--run", optarg, 1, 1e18, &run))
                return CHECK_INVALID;
            break;
        case 'j': as_json = 1; break;
        case 'h': help(); return CHECK_PASS;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return eeb_cli_usage_error(cmd, "expected one FILE.db");
    const char *path = argv[optind];
    char err[1024];
    struct eeb_run_outcome o;
    if (eeb_run_check(path, (int64_t)run, as_json ? NULL : stdout, &o, err, sizeof err)) {
        eeb_cli_error(cmd, "%s", err);
        return CHECK_INVALID;
    }
    int rc = !o.complete || !o.valid ? CHECK_INVALID : o.pass ? CHECK_PASS : CHECK_FAIL;
    const char *verdict = eeb_run_verdict(&o, 0);
    if (as_json) {
        json_t *j =
            json_pack("{s:s, s:I, s:s, s:s, s:s, s:s}", "file", path, "run", (json_int_t)o.run,
                      "uuid", o.uuid, "provenance", o.provenance, "verdict", verdict, "why", o.why);
        if (j)
            json_object_set_new(j, "S", o.pass ? json_real(o.score.s) : json_null());
        return eeb_cli_print_json(cmd, j) ? CHECK_INVALID : rc;
    }
    printf("run %lld (%s): %s", (long long)o.run, o.uuid, verdict);
    if (o.pass)
        printf(", S = %.6f (%s)", o.score.s, o.provenance);
    if (o.why[0])
        printf(": %s", o.why);
    putchar('\n');
    return rc;
}
