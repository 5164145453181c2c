/*
 * eeb_cli.h - what the eeb command's subcommands share: their entry points,
 * exit codes, and helpers that print errors the same way everywhere.
 *
 * Exit codes, one scheme for every command (docs/exit-codes.md):
 *   0  success; a judged run passed
 *   1  an error: the command could not do its job (one line on stderr
 *      names the file, line, field or value at fault)
 *   2  a usage error: unknown command or option, a bad option value
 *   3  fail: the run was judged and failed (over P_max, or aborted)
 *   4  invalid: the run cannot be judged (incomplete, an invalid power
 *      measurement, or a record that disagrees with itself)
 * Commands that judge a run map its verdict with eeb_cli_verdict_exit.
 */
#ifndef EEB_CLI_H
#define EEB_CLI_H

enum {
    EEB_EXIT_OK = 0,
    EEB_EXIT_ERROR = 1,
    EEB_EXIT_USAGE = 2,
    EEB_EXIT_FAIL = 3,
    EEB_EXIT_INVALID = 4,
};

/* The exit status of a verdict word (pass, fail, aborted, invalid,
 * incomplete, as eeb_run_verdict and the server say it); an unknown word
 * is EEB_EXIT_ERROR. */
int eeb_cli_verdict_exit(const char *verdict);

/* The "Exit status" lines that end every command's --help. */
#define EEB_CLI_EXIT_HELP                                                                          \
    "Exit status: 0 success (a judged run passed), 1 error, 2 usage error,\n"                      \
    "3 fail (a run over P_max, or aborted), 4 invalid (a run that cannot be judged)."

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
int eeb_cmd_sut(int argc, char **argv);
int eeb_cmd_pack(int argc, char **argv);
/* `eeb model import|export` (argv[1] is the verb): cmd_model_onnx.c */
int eeb_cmd_model_onnx(int argc, char **argv);
/* `eeb power emulate ptd` (argv[0] is "emulate"): cmd_power_emulate.c */
int eeb_cmd_power_emulate(int argc, char **argv);

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
