/*
 * cli.c - error printing and option-value parsing shared by subcommands.
 */
#include "eeb_cli.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int eeb_cli_verdict_exit(const char *verdict)
{
    static const struct {
        const char *word;
        int exit;
    } map[] = {
        {"pass", EEB_EXIT_OK},
        {"fail", EEB_EXIT_FAIL},
        {"aborted", EEB_EXIT_FAIL},
        {"invalid", EEB_EXIT_INVALID},
        {"incomplete", EEB_EXIT_INVALID},
        {"void", EEB_EXIT_INVALID}, /* the server could not judge it, by its own fault */
    };
    for (size_t i = 0; verdict && i < sizeof map / sizeof *map; i++)
        if (strcasecmp(verdict, map[i].word) == 0)
            return map[i].exit;
    return EEB_EXIT_ERROR;
}

__attribute__((format(printf, 2, 0))) static void vreport(const char *cmd, const char *fmt,
                                                          va_list ap)
{
    fprintf(stderr, "eeb%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int eeb_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try 'eeb %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return EEB_EXIT_USAGE;
}

int eeb_cli_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return EEB_EXIT_ERROR;
}

int eeb_cli_number(const char *cmd, const char *opt, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v))
        return eeb_cli_usage_error(cmd, "%s: '%s' is not a number", opt, text);
    *out = v;
    return EEB_EXIT_OK;
}

int eeb_cli_count(const char *cmd, const char *opt, const char *text, double min, double max,
                  double *out)
{
    int rc = eeb_cli_number(cmd, opt, text, out);
    if (rc == EEB_EXIT_OK && (*out < min || *out > max || *out != floor(*out)))
        rc = max >= 1e12 /* no limit a user would meet */
                 ? eeb_cli_usage_error(cmd, "%s: '%s' (a whole number >= %.0f)", opt, text, min)
                 : eeb_cli_usage_error(cmd, "%s: '%s' (a whole number, %.0f..%.0f)", opt, text, min,
                                       max);
    return rc;
}

int eeb_cli_print_json(const char *cmd, json_t *o)
{
    if (!o)
        return eeb_cli_error(cmd, "building the JSON output failed");
    int rc = json_dumpf(o, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
    json_decref(o);
    putchar('\n');
    return rc ? eeb_cli_error(cmd, "writing the JSON output failed") : EEB_EXIT_OK;
}
