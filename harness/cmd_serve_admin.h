/*
 * cmd_serve_admin.h - the admin verbs of `eeb serve` (cmd_serve_admin.c),
 * as its option parsing and dispatch (cmd_serve.c) call them: each returns
 * an exit code, and says what went wrong as eeb's commands do.
 */
#ifndef EEB_CMD_SERVE_ADMIN_H
#define EEB_CMD_SERVE_ADMIN_H

#include "server/eeb_server.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What admin open-round's options set: applied to eeb's defaults once the
 * round's name is known. */
struct round_options {
    double runs, cap; /* NAN: the default's */
    int aggregate;    /* enum eeb_round_aggregate, or -1: the default's */
    int opens_given, closes_given;
    int64_t opens_utc_ns, closes_utc_ns;
    double t_max_s[EEB_TASK_COUNT]; /* NAN: the task's */
    int ntiers[EEB_TASK_COUNT];     /* 0: the task's P_max */
    double tiers_w[EEB_TASK_COUNT][EEB_ROUND_TIERS];
    const char *model[EEB_TASK_COUNT]; /* the closed division's base model, a file */
    int epochs_max[EEB_TASK_COUNT];    /* -1: the default's (any) */
};

/* ---- the admin verbs ---- */

int admin_add_team(const char *db, int argc, char **argv);
int admin_station_key(int argc, const char *out, const char *db);
int admin_make_test(int argc, char **argv, const char *out, double n);

/* ---- rounds: open-round's options, and the verbs ---- */

void admin_round_options_init(struct round_options *o);
int admin_parse_utc(const char *option, const char *text, int64_t *ns);
int admin_tiers(const char *arg, struct round_options *o);
int admin_per_task_number(const char *option, const char *arg, struct round_options *o);
int admin_closed_model(const char *arg, struct round_options *o);
int admin_open_round(const char *db, int argc, char **argv, const struct round_options *o);
int admin_close_round(const char *db, int argc, char **argv);
int admin_list_rounds(const char *db, int argc);

/* ---- the organizer's acts ---- */

/* admin teams and admin audit: the server's list (lister), or a line
 * saying it is empty (none, then the database). */
int admin_list(const char *db, int argc, const char *verb,
               int (*lister)(const char *db, FILE *out, char *err, size_t errlen),
               const char *none);
int admin_revoke_team(const char *db, int argc, char **argv, const char *reason);
int admin_run_act(const char *db, int argc, char **argv, const char *verb,
                  enum eeb_server_run_act how, const char *reason);

#endif
