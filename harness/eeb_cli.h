/*
 * eeb_cli.h - what the eeb command's subcommands share: their entry points,
 * exit codes, and helpers that print errors the same way everywhere.
 *
 * Exit codes: 0 success; 1 an error (one line on stderr naming the culprit);
 * 2 a usage error (unknown command or option); 3 the run was judged and
 * failed (e.g. over the power budget).
 */
#ifndef EEB_CLI_H
#define EEB_CLI_H

enum { EEB_EXIT_OK = 0, EEB_EXIT_ERROR = 1, EEB_EXIT_USAGE = 2, EEB_EXIT_FAILED = 3 };

int eeb_cmd_score(int argc, char **argv);
int eeb_cmd_db(int argc, char **argv);
int eeb_cmd_model(int argc, char **argv);
int eeb_cmd_eval(int argc, char **argv);
int eeb_cmd_data(int argc, char **argv);
int eeb_cmd_power(int argc, char **argv);
int eeb_cmd_run(int argc, char **argv);
int eeb_cmd_check(int argc, char **argv);
int eeb_cmd_report(int argc, char **argv);
int eeb_cmd_xclbin(int argc, char **argv);
int eeb_cmd_dse(int argc, char **argv);
int eeb_cmd_serve(int argc, char **argv);
int eeb_cmd_submit(int argc, char **argv);

/* Prints "eeb CMD: message" and a pointer to --help on stderr; returns 2. */
int eeb_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints "eeb CMD: message" on stderr; returns 1. */
int eeb_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints a JSON object (indented, keys in order) and a newline, and frees
 * it; o NULL (a failed json_pack) is reported as an error. */
struct json_t;
int eeb_cli_print_json(const char *cmd, struct json_t *o);

/* Parses the whole of text as a finite number for option opt; on failure
 * prints a usage error and returns 2. */
int eeb_cli_number(const char *cmd, const char *opt, const char *text, double *out);

/* The same for a whole number in [min, max]. */
int eeb_cli_count(const char *cmd, const char *opt, const char *text, double min, double max,
                  double *out);

#endif
