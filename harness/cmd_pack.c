/*
 * cmd_pack.c - `eeb pack`: a finished run's submission package, one tar
 * file holding what a reviewer needs to recompute and defend its numbers
 * (record/eeb_package.h, docs/package.md); `eeb check --package` checks it.
 */
#include "eeb_cli.h"
#include "record/eeb_package.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "pack";

static void help(void)
{
    puts("Usage: eeb pack FILE.db [--run ID] --system SYSTEM.json -o PACKAGE.tar\n"
         "                [--xclbin FILE] [--report FILE]... [--rules FILE] [--json]\n"
         "\n"
         "Writes a finished run's submission package: one tar file with the run's\n"
         "database (that run alone, copied out of FILE.db), the system description,\n"
         "the scoring rules the run was judged by, the xclbin and the utilization\n"
         "report the run recorded, any other report given (timing), and a manifest\n"
         "of every member's name, size and SHA-256 with eeb's version and the run's\n"
         "uuid and chain head.  The xclbin's SHA-256 and the utilization report's\n"
         "fractions must be the ones the run recorded.  `eeb check --package`\n"
         "checks a package (docs/package.md).\n"
         "\n"
         "Options:\n"
         "  --run ID          the run (default: the latest)\n"
         "  --system FILE     the system description: board, host, meter, wiring,\n"
         "                    ambient_c and notes (JSON, a closed schema: docs/package.md)\n"
         "  -o, --output FILE the package to write\n"
         "  --xclbin FILE     the xclbin the run ran, if it is not at the path the\n"
         "                    run recorded\n"
         "  --report FILE     a report to include (repeat): the utilization report the\n"
         "                    run's M_u came from is found by its name (else read from\n"
         "                    its recorded path); others, such as a timing report, go\n"
         "                    in as they are\n"
         "  --rules FILE      the scoring rules file the run was judged by, if not the\n"
         "                    one it recorded (an official run: the server's, if they\n"
         "                    are not eeb's built-in rules)\n"
         "  --json            what was packed, as JSON\n"
         "  -h, --help        show this help\n"
         "\n" EEB_CLI_EXIT_HELP);
}

static int print_json(const char *out, const struct eeb_package_summary *s)
{
    json_t *members = json_array();
    for (size_t i = 0; i < s->n; i++)
        json_array_append_new(members,
                              json_pack("{s:s, s:s, s:I, s:s}", "name", s->members[i].name, "role",
                                        s->members[i].role, "size", (json_int_t)s->members[i].size,
                                        "sha256", s->members[i].sha256));
    return eeb_cli_print_json(
        cmd, json_pack("{s:s, s:I, s:s, s:s?, s:s, s:o}", "package", out, "run", (json_int_t)s->run,
                       "uuid", s->uuid, "chain_head", s->chain_head[0] ? s->chain_head : NULL,
                       "rules_version", s->rules_version, "members", members));
}

int eeb_cmd_pack(int argc, char **argv)
{
    static const struct option options[] = {
        {"run", required_argument, NULL, 'r'},
        {"system", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {"xclbin", required_argument, NULL, 'x'},
        {"report", required_argument, NULL, 'p'},
        {"rules", required_argument, NULL, 'u'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *reports[EEB_PACKAGE_MAX_REPORTS + 1] = {NULL};
    struct eeb_package_spec spec = {.reports = reports};
    size_t nreports = 0;
    double run = 0;
    int as_json = 0, c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'r':
            if ((rc = eeb_cli_count(cmd, "--run", optarg, 1, 1e18, &run)))
                return rc;
            break;
        case 's': spec.system = optarg; break;
        case 'o': spec.out = optarg; break;
        case 'x': spec.xclbin = optarg; break;
        case 'u': spec.rules = optarg; break;
        case 'p':
            if (nreports == EEB_PACKAGE_MAX_REPORTS)
                return eeb_cli_usage_error(cmd, "--report: at most %d reports",
                                           EEB_PACKAGE_MAX_REPORTS);
            reports[nreports++] = optarg;
            break;
        case 'j': as_json = 1; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1)
        return eeb_cli_usage_error(cmd, "expected one FILE.db");
    if (!spec.system)
        return eeb_cli_usage_error(cmd, "--system SYSTEM.json: the system description is needed");
    if (!spec.out)
        return eeb_cli_usage_error(cmd, "-o PACKAGE: the package to write is needed");
    spec.db = argv[optind];
    spec.run = (int64_t)run;
    char err[1024];
    struct eeb_package_summary *s = malloc(sizeof *s);
    if (!s)
        return eeb_cli_error(cmd, "out of memory");
    if (eeb_package_write(&spec, s, err, sizeof err))
        rc = eeb_cli_error(cmd, "%s", err);
    else if (as_json)
        rc = print_json(spec.out, s);
    else {
        printf("%s: run %lld (%s) of %s, rules %s, chain head %s\n", spec.out, (long long)s->run,
               s->uuid, spec.db, s->rules_version, s->chain_head[0] ? s->chain_head : "(none)");
        for (size_t i = 0; i < s->n; i++)
            printf("  %-28s %-12s %12llu bytes  %s\n", s->members[i].name, s->members[i].role,
                   (unsigned long long)s->members[i].size, s->members[i].sha256);
        rc = EEB_EXIT_OK;
    }
    free(s);
    return rc;
}
