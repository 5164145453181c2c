/*
 * cmd_report.c - `eeb report`: a run's self-contained HTML report, to -o's
 * file, or without -o to a file named from the database and the run in the
 * current directory (never replacing one that is there).
 */
#include "eeb_cli.h"
#include "rundb/eeb_rundb.h"
#include "eeb_run.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const cmd = "report";

static void help(void)
{
    puts("Usage: eeb report FILE.db [--run ID] [-o REPORT.html]\n"
         "\n"
         "Writes one HTML file with no external assets: the power trace as an SVG\n"
         "plot with the P_max line, the fine-tune and test stages and the T_max\n"
         "marker (or where T_max lies, when it is far beyond the run); the loss and\n"
         "the training metric over time; the verdict (as `eeb check` recomputes it)\n"
         "and its reasons; the score table with the weights, each term's share of\n"
         "the penalty and M_u's four fractions; the events; the configuration and\n"
         "the provenance of the figures.  What the run never had (a killed run's\n"
         "test stage, M_s, S) shows as '-'.  Prints the path of the file written.\n"
         "\n"
         "Options:\n"
         "  --run ID        the run (default: the latest)\n"
         "  -o, --out FILE  the report to write (replaced if it exists); without -o,\n"
         "                  STEM.runID.html in the current directory, STEM being the\n"
         "                  database's file name without its extension (runs.db, run 3:\n"
         "                  runs.run3.html), and an existing file of that name is an\n"
         "                  error, never replaced\n"
         "  -h, --help      show this help");
}

/* The report's name without -o: db_path's file name without its extension,
 * and the run's id (run 0: the latest run's), in the current directory. */
static int default_out(const char *db_path, int64_t run, char *out, size_t outlen, char *err,
                       size_t errlen)
{
    struct eeb_rundb *db;
    struct eeb_run_row row = {0};
    int rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc)
        return rc;
    if ((rc = eeb_rundb_run_get(db, run, &row, err, errlen)) == EEB_OK) {
        const char *base = strrchr(db_path, '/');
        base = base ? base + 1 : db_path;
        const char *dot = strrchr(base, '.');
        int stem = dot && dot != base ? (int)(dot - base) : (int)strlen(base);
        snprintf(out, outlen, "%.*s.run%lld.html", stem, base, (long long)row.id);
    }
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(db);
    return rc;
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
    if (argc - optind != 1)
        return eeb_cli_usage_error(cmd, "expected one FILE.db");
    char err[1024], path[4096];
    if (!out) {
        if (default_out(argv[optind], (int64_t)run, path, sizeof path, err, sizeof err))
            return eeb_cli_error(cmd, "%s", err);
        if (access(path, F_OK) == 0)
            return eeb_cli_error(cmd, "%s exists; give -o %s to replace it", path, path);
        out = path;
    }
    if (eeb_run_report(argv[optind], (int64_t)run, out, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    puts(out);
    return EEB_EXIT_OK;
}
