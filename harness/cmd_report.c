/*
 * cmd_report.c - `eeb report`: a run's self-contained HTML report.
 */
#include "eeb_cli.h"
#include "eeb_run.h"

#include <getopt.h>
#include <stdio.h>

static const char *const cmd = "report";

static void help(void)
{
    puts("Usage: eeb report FILE.db [--run ID] -o REPORT.html\n"
         "\n"
         "Writes one HTML file with no external assets: the power trace as an SVG\n"
         "plot with the P_max line, the fine-tune and test stages and the T_max\n"
         "marker; the loss and the training metric over time; the score table, the\n"
         "verdict (as `eeb check` recomputes it) and its reasons; the events; the\n"
         "configuration and the provenance of the figures.\n"
         "\n"
         "Options:\n"
         "  --run ID        the run (default: the latest)\n"
         "  -o, --out FILE  the report to write\n"
         "  -h, --help      show this help");
}

int eeb_cmd_report(int argc, char **argv)
{
    static const struct option options[] = {
        {"run", required_argument, NULL, 'r'},
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double run = 0;
    const char *out = NULL;
    int c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'r':
            if ((rc = eeb_cli_count(cmd, "--run", optarg, 1, 1e18, &run)))
                return rc;
            break;
        case 'o': out = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 1 || !out)
        return eeb_cli_usage_error(cmd, "expected FILE.db and -o REPORT.html");
    char err[1024];
    if (eeb_run_report(argv[optind], (int64_t)run, out, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    fprintf(stderr, "eeb report: %s written\n", out);
    return EEB_EXIT_OK;
}
