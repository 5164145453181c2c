/*
 * cmd_check.c - `eeb check`: a run's metrics and verdict recomputed from
 * its database alone, for compliance review: each figure beside what the
 * run stored, in words and units a reviewer reads without the source.
 */
#include "eeb_cli.h"
#include "common/eeb_json.h"
#include "eeb_run.h"
#include "record/eeb_package.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "check";

static void help(void)
{
    puts("Usage: eeb check FILE.db [--run ID | --all] [--test SHARD.eebd] [--model FILE]\n"
         "                 [--json]\n"
         "       eeb check --package PACKAGE.tar [--test SHARD.eebd] [--model FILE] [--json]\n"
         "\n"
         "Recomputes every metric of a run and its verdict from the run database\n"
         "alone: T from the fine-tune events, E and the P_max rule from the power\n"
         "samples, M_s from the stored predictions, M_u, the weights and the budgets\n"
         "from the stored configuration; then compares each with the figure the run\n"
         "stored and says whether they agree.  A figure the run does not have (a\n"
         "killed run's M_s, a failed run's S) is n/a.  A run timed by a modeled\n"
         "device has its step time and training power modeled again from its\n"
         "recorded design, model file, batch and frozen layers; they must be the\n"
         "recorded ones exactly.\n"
         "\n"
         "Options:\n"
         "  --run ID     the run (default: the latest)\n"
         "  --all        every run in the database, oldest first\n"
         "  --test FILE  the test shard (.eebd) the run read, for one who holds it:\n"
         "               its SHA-256 must be the run's recorded one, and every stored\n"
         "               prediction's truth (label, boxes) the shard's; the truth is\n"
         "               stored beside each prediction, so only the shard shows it\n"
         "               was not edited\n"
         "  --model FILE the model file the run started from, if it is not at the\n"
         "               path the run recorded (one run): its SHA-256 must be the\n"
         "               run's recorded one; without it, a modeled device's figures\n"
         "               are recomputed only when the recorded file is at hand\n"
         "  --package FILE  a submission package (eeb pack): every member against its\n"
         "               manifest, the xclbin and the utilization report against the\n"
         "               run's record, the system description against its schema, the\n"
         "               rules against the run's; then the packaged run, checked as\n"
         "               above from a private copy removed afterwards (docs/package.md)\n"
         "  --json       every figure as JSON (one object; an array with --all)\n"
         "  -h, --help   show this help\n"
         "\n"
         "The verdict: pass, fail (over P_max), aborted (stopped by the harness),\n"
         "invalid (an invalid power measurement, or stored figures the record does\n"
         "not give), incomplete (the run never ended).  With --all the exit status\n"
         "is the worst run's.  A package whose checks fail is invalid (4), one that\n"
         "cannot be read or holds an unsafe member an error (1).\n"
         "\n" EEB_CLI_EXIT_HELP);
}

/* ---- text ---- */

/* A figure as a reviewer reads it: n/a, yes/no for the verdict, a unit;
 * full precision where the two sides disagree (the digits that differ). */
static const char *figure_text(const struct eeb_check_figure *f, double v, char *buf, size_t n)
{
    if (isnan(v))
        return "n/a";
    if (strcmp(f->key, "pass") == 0)
        return v == 1 ? "yes" : v == 0 ? "no" : (snprintf(buf, n, "%.17g", v), buf);
    const char *sp = *f->unit ? " " : "";
    if (!f->agree)
        snprintf(buf, n, "%.17g%s%s", v, sp, f->unit);
    else if (*f->unit)
        snprintf(buf, n, "%.3f%s%s", v, sp, f->unit);
    else
        snprintf(buf, n, "%.6f", v);
    return buf;
}

/* The modeled device's line: its figures recomputed and agreeing (in the
 * units a reviewer reads), both sides in full where they do not, or why
 * they were not recomputed. */
static void print_device(const struct eeb_device_check *dev)
{
    if (!dev->modeled)
        return;
    if (!dev->recomputed)
        printf("  device   %s\n", dev->note[0] ? dev->note : "modeled figures not recomputed");
    else if (dev->agree)
        printf("  device   modeled step %.3f ms and %.3f W recomputed from its design, model and "
               "batch: agree\n",
               dev->train_step_s * 1e3, dev->train_w);
    else
        printf("  device   modeled step %.17g s and %.17g W recorded, %.17g s and %.17g W "
               "recomputed from its design, model and batch: DISAGREE\n",
               dev->stored_step_s, dev->stored_w, dev->train_step_s, dev->train_w);
}

static void print_text(const char *path, const struct eeb_run_outcome *o,
                       const struct eeb_check_figures *figs, const struct eeb_device_check *dev,
                       const char *test_note, const struct eeb_config_record *sys)
{
    printf("run %lld (%s) in %s", (long long)o->run, o->uuid, path);
    if (o->provenance[0])
        printf(": %s, provenance %s", eeb_task_name(o->task), o->provenance);
    putchar('\n');
    if (sys->sut_name[0]) /* printable text: the reader keeps it so */
        printf("  system   %s%s%s (%s%s%s)%s%s\n", sys->sut_name, sys->sut_version[0] ? " " : "",
               sys->sut_version, sys->sut_kind,
               !strcmp(sys->sut_hosting, "in-process") ? ", in eeb's process" : "",
               !strcmp(sys->sut_hosting, "process") && !strcmp(sys->sut_kind, "library")
                   ? ", in its own process"
                   : "",
               sys->sut_detail[0] ? ", " : "", sys->sut_detail);
    if (figs->n) {
        printf("  %-8s %-24s %s\n", "figure", "recomputed", "stored");
        for (size_t i = 0; i < figs->n; i++) {
            const struct eeb_check_figure *f = &figs->f[i];
            char a[64], b[64];
            printf("  %-8s %-24s %-24s %s\n", f->label, figure_text(f, f->recomputed, a, sizeof a),
                   figure_text(f, f->stored, b, sizeof b), f->agree ? "agree" : "DISAGREE");
        }
        char worst[32] = "n/a", window[32] = "";
        if (!isnan(o->worst_w))
            snprintf(worst, sizeof worst, "%.3f W", o->worst_w);
        if (!isnan(o->window_s))
            snprintf(window, sizeof window, " %g s", o->window_s);
        if (o->modeled_clock)
            printf("  budgets  T_max %g s on the modeled clock, P_max %g W; modeled training "
                   "power %s\n",
                   o->t_max_s, o->p_max_w, worst);
        else
            printf("  budgets  T_max %g s, P_max %g W; worst%s window %s\n", o->t_max_s, o->p_max_w,
                   window, worst);
        const struct eeb_meter_offset *mo = &o->meter_offset;
        if (mo->sought && mo->determinable)
            printf("  offset   the run's own log is %s%.3f s %s the server's meter (correlation "
                   "%.3f)\n",
                   mo->at_least ? "at least " : "", fabs(mo->s), mo->s >= 0 ? "behind" : "ahead of",
                   mo->correlation);
        else if (mo->sought)
            printf("  offset   not determinable: %s\n", mo->note);
    }
    const struct eeb_chain_check *c = &figs->chain;
    if (c->broken)
        printf("  chain    BREAKS after %lld links: %s\n", (long long)c->links, c->why);
    else if (c->links)
        printf("  chain    %lld links verified (%lld events, %lld samples%s), head %s\n",
               (long long)c->links, (long long)c->events, (long long)c->samples,
               c->received ? "; begun by the run that sent it" : "", c->head);
    else
        printf("  chain    none\n");
    print_device(dev);
    if (test_note[0])
        printf("  test     %s\n", test_note);
    if (o->audit[0])
        printf("  audit    %s\n", o->audit);
    printf("verdict: %s", eeb_run_verdict(o, 0));
    if (o->pass)
        printf(", S = %.6f", o->score.s);
    if (o->why[0])
        printf(": %s", o->why);
    putchar('\n');
}

/* ---- JSON ---- */

static json_t *outcome_json(const char *path, const struct eeb_run_outcome *o,
                            const struct eeb_check_figures *figs,
                            const struct eeb_device_check *dev, const char *test_shard,
                            uint64_t agreed)
{
    json_t *j = json_pack(
        "{s:s, s:I, s:s, s:s, s:s, s:s, s:o, s:b}", "file", path, "run", (json_int_t)o->run, "uuid",
        o->uuid, "task", o->provenance[0] ? eeb_task_name(o->task) : "", "provenance",
        o->provenance, "verdict", eeb_run_verdict(o, 0), "S",
        eeb_json_number(o->pass ? o->score.s : NAN), "tmax_reached", o->tmax_reached);
    json_t *fig = json_object();
    if (!j || !fig || json_object_set_new(j, "figures", fig)) {
        json_decref(j);
        return NULL;
    }
    for (size_t i = 0; i < figs->n; i++) {
        const struct eeb_check_figure *f = &figs->f[i];
        json_object_set_new(fig, f->key,
                            json_pack("{s:s, s:s, s:o, s:o, s:b}", "label", f->label, "unit",
                                      f->unit, "recomputed", eeb_json_number(f->recomputed),
                                      "stored", eeb_json_number(f->stored), "agree", f->agree));
    }
    json_object_set_new(j, "t_max_s", eeb_json_number(figs->n ? o->t_max_s : NAN));
    json_object_set_new(j, "p_max_w", eeb_json_number(figs->n ? o->p_max_w : NAN));
    json_object_set_new(j, "worst_window_w", eeb_json_number(figs->n ? o->worst_w : NAN));
    json_object_set_new(j, "window_s", eeb_json_number(figs->n ? o->window_s : NAN));
    const struct eeb_meter_offset *mo = &o->meter_offset;
    json_object_set_new(j, "meter_offset",
                        figs->n && mo->sought
                            ? json_pack("{s:o, s:o, s:b, s:s?}", "s", eeb_json_number(mo->s),
                                        "correlation", eeb_json_number(mo->correlation), "at_least",
                                        mo->at_least, "note", mo->determinable ? NULL : mo->note)
                            : json_null());
    const struct eeb_chain_check *c = &figs->chain;
    json_object_set_new(j, "chain",
                        json_pack("{s:I, s:I, s:I, s:s?, s:b, s:s?}", "links", (json_int_t)c->links,
                                  "events", (json_int_t)c->events, "samples",
                                  (json_int_t)c->samples, "head", c->links ? c->head : NULL,
                                  "received", c->received, "breaks", c->broken ? c->why : NULL));
    json_object_set_new(j, "device_model",
                        dev->modeled
                            ? json_pack("{s:b, s:b, s:o, s:o, s:o, s:o, s:s, s:s?}", "recomputed",
                                        dev->recomputed, "agree", dev->agree, "train_step_s",
                                        eeb_json_number(dev->train_step_s), "train_w",
                                        eeb_json_number(dev->train_w), "stored_train_step_s",
                                        eeb_json_number(dev->stored_step_s), "stored_train_w",
                                        eeb_json_number(dev->stored_w), "model", dev->model, "note",
                                        dev->note[0] ? dev->note : NULL)
                            : json_null());
    if (test_shard)
        json_object_set_new(
            j, "test", json_pack("{s:s, s:I}", "shard", test_shard, "agreed", (json_int_t)agreed));
    json_object_set_new(j, "audit", o->audit[0] ? json_string(o->audit) : json_null());
    json_object_set_new(j, "why", json_string(o->why));
    return j;
}

/* ---- the command ---- */

/* The worse of two exit statuses: an error, then invalid, fail, pass. */
static int worse(int a, int b)
{
    static const int rank[] = {[EEB_EXIT_OK] = 0,
                               [EEB_EXIT_FAIL] = 1,
                               [EEB_EXIT_INVALID] = 2,
                               [EEB_EXIT_ERROR] = 3,
                               [EEB_EXIT_USAGE] = 4};
    return rank[a] >= rank[b] ? a : b;
}

/* What run's stored configuration says the system under test is (its
 * sut_* fields; "" for a run recorded before eeb kept it). */
static int recorded_system(const char *path, int64_t run, struct eeb_config_record *out, char *err,
                           size_t errlen)
{
    struct eeb_rundb *db;
    struct eeb_run_row row;
    int rc = eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc)
        return rc;
    if ((rc = eeb_rundb_run_get(db, run, &row, err, errlen)) == EEB_OK) {
        (void)eeb_config_record_read(row.config, out); /* unreadable: "" */
        eeb_rundb_run_row_free(&row);
    }
    eeb_rundb_close(db);
    return rc;
}

/* Checks one run, its modeled device's figures (from model, else the
 * recorded model file if at hand), and its predictions' truth against
 * test_shard if not NULL; its exit status.  list (--json) gets its object.
 * shown names the file in the output (a package's member: not its
 * temporary copy). */
static int check_one(const char *path, const char *shown, int64_t run, const char *test_shard,
                     const char *model, json_t *list)
{
    char err[1024], test_note[512] = "";
    struct eeb_run_outcome o;
    struct eeb_check_figures figs;
    struct eeb_device_check dev;
    if (eeb_run_check(path, run, &figs, &o, err, sizeof err) ||
        eeb_run_check_device(path, o.run, model, &o, &dev, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    uint64_t agreed = 0;
    if (test_shard &&
        eeb_run_check_test_shard(path, o.run, test_shard, &o, &agreed, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    if (test_shard)
        snprintf(test_note, sizeof test_note, "%llu predictions' truth agrees with %s",
                 (unsigned long long)agreed, test_shard);
    struct eeb_config_record sys;
    if (recorded_system(path, o.run, &sys, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    json_t *j = list ? outcome_json(shown, &o, &figs, &dev, test_shard, agreed) : NULL;
    if (j && sys.sut_name[0])
        json_object_set_new(j, "system",
                            json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", sys.sut_name, "version",
                                      sys.sut_version, "kind", sys.sut_kind, "hosting",
                                      sys.sut_hosting, "detail", sys.sut_detail));
    if (!list)
        print_text(shown, &o, &figs, &dev, test_note, &sys);
    else if (json_array_append_new(list, j))
        return eeb_cli_error(cmd, "building the JSON output failed");
    return eeb_cli_verdict_exit(eeb_run_verdict(&o, 0));
}

/* A power log (eeb power log) in the file: listed, not judged. */
static int list_power_log(const char *path, const struct eeb_run_row *row, json_t *list)
{
    if (!list) {
        printf("run %lld (%s) in %s: a power log, not judged (eeb power summary shows it)\n",
               (long long)row->id, row->uuid, path);
        return EEB_EXIT_OK;
    }
    json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:n, s:s}", "file", path, "run",
                          (json_int_t)row->id, "uuid", row->uuid, "task", "none", "verdict", "why",
                          "a power log, not a benchmark run");
    return json_array_append_new(list, o) ? eeb_cli_error(cmd, "building the JSON output failed")
                                          : EEB_EXIT_OK;
}

/* Every run of path, oldest first; power logs are listed, not judged. */
static int check_all(const char *path, json_t *list)
{
    char err[1024];
    struct eeb_rundb *db;
    int64_t *ids;
    size_t n;
    if (eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    int rc = eeb_rundb_run_ids(db, &ids, &n, err, sizeof err);
    if (rc == EEB_OK && n == 0)
        rc = eeb_cli_error(cmd, "%s: no runs yet", path);
    else if (rc)
        rc = eeb_cli_error(cmd, "%s", err);
    for (size_t i = 0; i < n; i++) {
        if (i && !list)
            putchar('\n');
        struct eeb_run_row row;
        if (eeb_rundb_run_get(db, ids[i], &row, err, sizeof err)) {
            rc = worse(rc, eeb_cli_error(cmd, "%s", err));
            continue;
        }
        int power_log = strcmp(row.task, "none") == 0;
        rc = worse(rc, power_log ? list_power_log(path, &row, list)
                                 : check_one(path, path, ids[i], NULL, NULL, list));
        eeb_rundb_run_row_free(&row);
    }
    eeb_rundb_close(db);
    free(ids);
    return rc;
}

/* ---- a submission package ---- */

/* A package's checks, each a line, then the packaged run's check; the
 * worse of the two exit statuses (a failed package check: invalid). */
static int check_package(const char *pkg, const char *test_shard, const char *model, int as_json)
{
    char err[1024], shown[1200];
    struct eeb_package_check *c;
    if (eeb_package_check_open(pkg, &c, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    int rc = c->failed ? EEB_EXIT_INVALID : EEB_EXIT_OK;
    if (!as_json) {
        printf("package %s\n", pkg);
        for (size_t i = 0; i < c->n; i++)
            printf("  %-4s  %-22s %s\n", c->steps[i].pass ? "pass" : "FAIL", c->steps[i].what,
                   c->steps[i].detail);
        if (c->failed)
            printf("package: %d of %zu checks FAILED\n\n", c->failed, c->n);
        else
            printf("package: all %zu checks pass\n\n", c->n);
    }
    json_t *list = as_json ? json_array() : NULL;
    snprintf(shown, sizeof shown, "%s:run.db", pkg);
    if (c->db_path[0] && c->run)
        rc = worse(rc, check_one(c->db_path, shown, c->run, test_shard, model, list));
    else if (!as_json)
        printf("the packaged run was not checked\n");
    if (as_json) {
        json_t *checks = json_array();
        for (size_t i = 0; i < c->n; i++)
            json_array_append_new(checks,
                                  json_pack("{s:s, s:b, s:s}", "what", c->steps[i].what, "pass",
                                            c->steps[i].pass, "detail", c->steps[i].detail));
        json_t *run = json_array_size(list) ? json_incref(json_array_get(list, 0)) : json_null();
        rc = worse(rc,
                   eeb_cli_print_json(cmd, json_pack("{s:s, s:b, s:o, s:o}", "package", pkg, "pass",
                                                     !c->failed, "checks", checks, "run", run)));
    }
    json_decref(list);
    eeb_package_check_free(c);
    return rc;
}

int eeb_cmd_check(int argc, char **argv)
{
    static const struct option options[] = {
        {"run", required_argument, NULL, 'r'},   {"all", no_argument, NULL, 'a'},
        {"json", no_argument, NULL, 'j'},        {"test", required_argument, NULL, 't'},
        {"model", required_argument, NULL, 'm'}, {"package", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    double run = 0;
    const char *test_shard = NULL, *model = NULL, *package = NULL;
    int as_json = 0, all = 0, c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'r':
            if ((rc = eeb_cli_count(cmd, "--run", optarg, 1, 1e18, &run)))
                return rc;
            break;
        case 'a': all = 1; break;
        case 'j': as_json = 1; break;
        case 't': test_shard = optarg; break;
        case 'm': model = optarg; break;
        case 'p': package = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (package && (argc - optind != 0 || run || all))
        return eeb_cli_usage_error(cmd, "--package checks the one run it holds: give no FILE.db, "
                                        "--run or --all");
    if (package)
        return check_package(package, test_shard, model, as_json);
    if (argc - optind != 1)
        return eeb_cli_usage_error(cmd, "expected one FILE.db");
    if (all && run)
        return eeb_cli_usage_error(cmd, "--run and --all: give one");
    if (all && test_shard)
        return eeb_cli_usage_error(cmd,
                                   "--test checks one run's predictions: give --run, not --all");
    if (all && model)
        return eeb_cli_usage_error(cmd, "--model is one run's model file: give --run, not --all");
    const char *path = argv[optind];
    json_t *list = as_json ? json_array() : NULL;
    if (as_json && !list)
        return eeb_cli_error(cmd, "out of memory");
    rc = all ? check_all(path, list) : check_one(path, path, (int64_t)run, test_shard, model, list);
    if (list && json_array_size(list)) {
        json_t *whole = all ? json_incref(list) : json_incref(json_array_get(list, 0));
        rc = worse(rc, eeb_cli_print_json(cmd, whole));
    }
    json_decref(list);
    return rc;
}
