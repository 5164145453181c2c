/*
 * cmd_run.c - `eeb run`: the benchmark workflow from a configuration file
 * and options, with a live display, the result table or JSON, and the
 * embedded default (synthetic data and a pre-trained base model, made on
 * first use through the library, tasks/embedded.c, each step shown as the
 * `eeb data gen` or `eeb model pretrain` a user would type to do the same).
 */
#include "eeb_cli.h"
#include "common/eeb_json.h"
#include "eeb_client.h"
#include "eeb_display.h"
#include "eeb_run.h"
#include "tasks/eeb_embedded.h"
#include "tasks/eeb_tasks.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const cmd = "run";

static void help(void)
{
    puts("Usage: eeb run --task TASK [--config FILE.json] [options]\n"
         "\n"
         "Runs the benchmark workflow of Tao et al., \"Challenges in Energy-Efficient\n"
         "Deep Neural Network Training with FPGA\" (Fig. 3): deploys the pre-trained\n"
         "model to the accelerator, fine-tunes it on the fine-tune shard\n"
         "within T_max while the power source is sampled into the run database, runs\n"
         "the test shard in inference mode, and scores M_u, M_t, M_p, M_s and S.\n"
         "Only fine-tuning is metered; the data is loaded into memory before it.  At\n"
         "T_max the accelerator stops at its next batch boundary (T = T_max); one\n"
         "that has not returned within the grace period is abandoned and the run\n"
         "aborted.  A run above P_max goes on and fails at scoring, unless\n"
         "--abort-on-pmax stops it at once.\n"
         "\n"
         "Without --finetune, --test and --model, the task's embedded default is\n"
         "used: synthetic data and a base model pre-trained on it, made in --workdir\n"
         "on first use.  Emulator runs are labelled modeled: their time is the\n"
         "emulator's, their power the analytical model's for --design (replayed\n"
         "through sim:profile=model, or --declared-power W), not measured; the\n"
         "design's modeled time for the same steps is reported beside T.\n"
         "\n"
         "With --server URL the run is official: the evaluation server (`eeb serve`)\n"
         "drives it.  It registers the run (and refuses it unless --finetune is the\n"
         "fine-tune set it names), sets T_max, P_max and the rules (--tmax, --pmax,\n"
         "--rules and --test are refused), is told when fine-tuning is complete, sends\n"
         "the test inputs without labels, receives the power log and the predictions,\n"
         "and judges the run with the labels it alone holds: its verdict is the run's.\n"
         "\n"
         "Options (each also a key of the --config file, '-' written '_'):");
    for (const struct eeb_run_key *k = eeb_run_keys(); k->name; k++) {
        char opt[48];
        snprintf(opt, sizeof opt, "--%s%s%s", k->name, k->arg ? " " : "", k->arg ? k->arg : "");
        printf("  %-26s %s\n", opt, k->help);
    }
    puts("  --token T                  the team's token for --server (default: $EEB_TOKEN)\n"
         "  --config FILE.json         a configuration object; options win over it\n"
         "  --workdir DIR              where the embedded default's data and model live\n"
         "                             (default $XDG_CACHE_HOME/eeb or ~/.cache/eeb)\n"
         "  --prepare-only             make the embedded default's data and base model in\n"
         "                             --workdir, print their paths, and stop\n"
         "  -q, --quiet                no progress display\n"
         "  --json                     the result as one JSON object on stdout\n"
         "  -h, --help                 show this help\n"
         "\n" EEB_CLI_EXIT_HELP);
}

/* ---- the embedded default ---- */

static int make_dirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(path, 0777) && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
}

/* Makes (once) and names the task's embedded data and base model. */
static int embedded(struct eeb_run_config *c, const char *workdir, int quiet)
{
    char dflt[4096];
    if (!workdir) {
        const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
        snprintf(dflt, sizeof dflt, "%s%s/eeb",
                 xdg && *xdg ? xdg
                 : home      ? home
                             : ".",
                 xdg && *xdg ? "" : "/.cache");
        workdir = dflt;
    }
    if (make_dirs(workdir))
        return eeb_cli_error(cmd, "--workdir %s: %s", workdir, strerror(errno));
    /* the steps' reports are progress: stderr, so that stdout carries the
     * run's result alone, as --json needs */
    struct eeb_embedded e;
    char err[512];
    if (eeb_embedded_make((enum eeb_task)c->task, workdir, !c->server, quiet ? NULL : stderr, &e,
                          err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    const char *paths[] = {e.finetune, e.test, e.model};
    char **fields[] = {&c->finetune, &c->test, &c->model};
    for (int i = 0; i < 3; i++)
        if (!*fields[i] && !(i == 1 && c->server) && !(*fields[i] = strdup(paths[i])))
            return eeb_cli_error(cmd, "out of memory");
    return EEB_EXIT_OK;
}

/* ---- interruption ---- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* ---- the result ---- */

/* A figure to so many decimals, or "-" for one the run does not have. */
struct fig {
    char text[32];
};

static struct fig fig(int decimals, double v)
{
    struct fig f = {"-"};
    if (!isnan(v))
        snprintf(f.text, sizeof f.text, "%.*f", decimals, v);
    return f;
}

static int print_result(const struct eeb_run_config *c, const struct eeb_run_outcome *o,
                        int as_json)
{
    const struct eeb_score *s = &o->score;
    const char *verdict = eeb_run_verdict(o, 0);
    if (as_json) {
        json_t *j =
            json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:s}", "run", (json_int_t)o->run, "uuid",
                      o->uuid, "db", c->db, "task", eeb_task_name((enum eeb_task)c->task),
                      "backend", c->backend, "provenance", o->provenance, "verdict", verdict);
        if (j) {
            json_t *figures = json_pack(
                "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:b}", "m_u",
                eeb_json_number(s->m_u), "m_t", eeb_json_number(s->m_t), "m_p",
                eeb_json_number(s->m_p), "m_s", eeb_json_number(s->m_s), "t_s",
                eeb_json_number(o->t_s), "t_max_s", eeb_json_number(o->t_max_s), "energy_j",
                eeb_json_number(o->energy_j), "p_max_w", eeb_json_number(o->p_max_w),
                "worst_window_w", eeb_json_number(o->worst_w), "steps", (json_int_t)o->steps,
                "tmax_reached", o->tmax_reached);
            json_object_set_new(figures, "clock",
                                json_string(o->modeled_clock ? "modeled" : "wall"));
            json_object_set_new(figures, "host_time_s", eeb_json_number(o->host_time_s));
            json_object_set_new(j, "figures", figures);
            if (o->design[0])
                json_object_set_new(j, "device_model",
                                    json_pack("{s:s, s:f, s:f}", "design", o->design,
                                              "device_time_s", o->device_time_s, "device_energy_j",
                                              o->device_energy_j));
            json_object_set_new(j, "S", o->pass ? json_real(s->s) : json_null());
            json_object_set_new(j, "why", json_string(o->why));
            if (o->audit[0])
                json_object_set_new(j, "audit", json_string(o->audit));
            if (c->server)
                json_object_set_new(
                    j, "server",
                    json_pack("{s:s, s:I}", "url", c->server, "run_id", (json_int_t)o->server_run));
        }
        return eeb_cli_print_json(cmd, j);
    }
    printf("run %lld (%s) in %s: %s, %s%s%s%s, provenance %s\n", (long long)o->run, o->uuid, c->db,
           eeb_task_name((enum eeb_task)c->task), c->backend, o->backend_detail[0] ? " (" : "",
           o->backend_detail, o->backend_detail[0] ? ")" : "", o->provenance);
    if (!o->aborted) {
        printf("  M_u  %8s   mean utilization (%s)\n", fig(4, s->m_u).text, o->util_source);
        printf("  M_t  %8s   T %s s / T_max %g s%s\n", fig(4, s->m_t).text, fig(3, o->t_s).text,
               o->t_max_s, o->tmax_reached ? " (stopped at T_max)" : "");
        if (o->modeled_clock)
            printf(
                "               on the modeled clock: %llu steps of the modeled device (the host "
                "took %.3f s, not scored)\n",
                (unsigned long long)o->steps, o->host_time_s);
        printf("  M_p  %8s   E %s J / (P_max %g W x T); mean %s W, worst window %s W\n",
               fig(4, s->m_p).text, fig(3, o->energy_j).text, o->p_max_w,
               fig(3, s->mean_power_w).text, fig(3, o->worst_w).text);
        printf("  M_s  %8s   %s on %llu test items\n", fig(4, s->m_s).text,
               eeb_task_get((enum eeb_task)c->task)->metric, (unsigned long long)o->test_items);
        if (o->audit[0])
            printf("  audit          %s\n", o->audit);
        if (o->design[0] && o->modeled_clock)
            printf("  device (modeled): %s\n", o->design);
        else if (o->design[0])
            printf("  device (modeled): %s\n    its %llu steps would take %.3f s and %.3f J\n",
                   o->design, (unsigned long long)o->steps, o->device_time_s, o->device_energy_j);
    }
    if (c->server)
        printf("  judged by %s (server run %lld)\n", c->server, (long long)o->server_run);
    if (o->pass)
        printf("  S    %8.4f   PASS\n", s->s);
    else
        printf("  %s: %s\n", eeb_run_verdict(o, 1), o->why);
    return EEB_EXIT_OK;
}

int eeb_cmd_run(int argc, char **argv)
{
    enum { O_CONFIG = 256, O_WORKDIR, O_JSON, O_TOKEN, O_PREPARE, O_KEY0 = 512 };
    const struct eeb_run_key *keys = eeb_run_keys();
    size_t nkeys = 0;
    while (keys[nkeys].name)
        nkeys++;
    struct option *options = calloc(nkeys + 8, sizeof *options);
    if (!options)
        return eeb_cli_error(cmd, "out of memory");
    for (size_t i = 0; i < nkeys; i++)
        options[i] = (struct option){keys[i].name, keys[i].arg ? required_argument : no_argument,
                                     NULL, O_KEY0 + (int)i};
    options[nkeys] = (struct option){"config", required_argument, NULL, O_CONFIG};
    options[nkeys + 1] = (struct option){"workdir", required_argument, NULL, O_WORKDIR};
    options[nkeys + 2] = (struct option){"quiet", no_argument, NULL, 'q'};
    options[nkeys + 3] = (struct option){"json", no_argument, NULL, O_JSON};
    options[nkeys + 4] = (struct option){"help", no_argument, NULL, 'h'};
    options[nkeys + 5] = (struct option){"token", required_argument, NULL, O_TOKEN};
    options[nkeys + 6] = (struct option){"prepare-only", no_argument, NULL, O_PREPARE};

    struct eeb_run_config c;
    eeb_run_config_init(&c);
    const char *config = NULL, *workdir = NULL, *token = getenv("EEB_TOKEN");
    struct eeb_client client = {0};
    struct eeb_display d = {0};
    int quiet = 0, as_json = 0, prepare_only = 0, rc = EEB_EXIT_OK, opt;
    char err[1024];
    opterr = 0;
    optind = 1;
    while (rc == EEB_EXIT_OK && (opt = getopt_long(argc, argv, "hq", options, NULL)) != -1) {
        if (opt >= O_KEY0) {
            const struct eeb_run_key *k = &keys[opt - O_KEY0];
            char where[64];
            snprintf(where, sizeof where, "--%s", k->name);
            if (eeb_run_config_set(&c, k->name, k->arg ? optarg : "1", where, err, sizeof err))
                rc = eeb_cli_usage_error(cmd, "%s", err);
            continue;
        }
        switch (opt) {
        case O_CONFIG: config = optarg; break;
        case O_WORKDIR: workdir = optarg; break;
        case O_TOKEN: token = optarg; break;
        case O_PREPARE: prepare_only = 1; break;
        case 'q': quiet = 1; break;
        case O_JSON: as_json = 1; break;
        case 'h': help(); goto out;
        default: rc = eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc == EEB_EXIT_OK && optind < argc)
        rc = eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (rc == EEB_EXIT_OK && config && eeb_run_config_load(&c, config, err, sizeof err))
        rc = eeb_cli_error(cmd, "%s", err);
    if (rc == EEB_EXIT_OK && c.task < 0)
        rc = eeb_cli_usage_error(cmd, "no task: give --task cls, det or video");
    /* before minutes of work go into files that cannot be written */
    if (rc == EEB_EXIT_OK && !prepare_only &&
        ((c.report && eeb_check_output(c.report, err, sizeof err)) ||
         (c.db && eeb_check_output(c.db, err, sizeof err))))
        rc = eeb_cli_error(cmd, "%s", err);
    if (rc == EEB_EXIT_OK && prepare_only && c.finetune && c.test && c.model)
        rc = eeb_cli_usage_error(cmd, "--prepare-only makes the embedded default's inputs; "
                                      "--finetune, --test and --model leave it nothing to make");
    if (rc == EEB_EXIT_OK && (!c.finetune || (!c.test && !c.server) || !c.model))
        rc = embedded(&c, workdir, quiet || as_json);
    if (rc == EEB_EXIT_OK && prepare_only) {
        printf("finetune %s\ntest %s\nmodel %s\n", c.finetune, c.test ? c.test : "(the server's)",
               c.model);
        goto out;
    }
    if (rc == EEB_EXIT_OK && eeb_run_config_finish(&c, err, sizeof err))
        rc = eeb_cli_usage_error(cmd, "%s", err);
    if (rc == EEB_EXIT_OK && c.server && !token)
        rc = eeb_cli_usage_error(cmd, "--server needs --token T (or $EEB_TOKEN)");
    if (rc == EEB_EXIT_OK && c.server && eeb_client_init(&client, c.server, token, err, sizeof err))
        rc = eeb_cli_usage_error(cmd, "--server: %s", err);
    if (rc != EEB_EXIT_OK)
        goto out;
    if (eeb_display_open(&d, stderr)) {
        rc = eeb_cli_error(cmd, "the progress display: %s", strerror(errno));
        goto out;
    }
    client.log = quiet || as_json ? NULL : d.message;

    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct eeb_run_hooks hooks = {.progress = quiet ? NULL : eeb_display_progress,
                                  .arg = &d,
                                  .progress_every_s = d.tty ? 0.25 : 5,
                                  .cancel = &interrupted,
                                  .server = c.server ? &client : NULL};
    if (!quiet && c.server)
        fprintf(stderr, "eeb run: an official %s run on %s, judged by %s, into %s\n",
                eeb_task_name((enum eeb_task)c.task), c.backend, c.server, c.db);
    else if (!quiet)
        fprintf(stderr, "eeb run: %s on %s, T_max %g s, P_max %g W, power %s at %g Hz, into %s\n",
                eeb_task_name((enum eeb_task)c.task), c.backend, c.t_max_s, c.p_max_w,
                c.power ? c.power : "modeled from the design (sim:profile=model)", c.rate_hz, c.db);
    struct eeb_run_outcome o;
    int st = eeb_run_execute(&c, &hooks, &o, err, sizeof err);
    eeb_display_close(&d);
    if (st != EEB_OK) {
        rc = eeb_cli_error(cmd, "%s", err);
        if (o.run)
            fprintf(stderr,
                    "eeb run: run %lld in %s %s; `eeb check %s --run %lld` shows its record\n",
                    (long long)o.run, c.db,
                    o.complete ? "is marked failed" : "could not be marked failed", c.db,
                    (long long)o.run);
        goto out;
    }
    rc = print_result(&c, &o, as_json);
    if (rc == EEB_EXIT_OK && c.report && !quiet && !as_json)
        fprintf(stderr, "eeb run: report written to %s\n", c.report);
    if (rc == EEB_EXIT_OK)
        rc = eeb_cli_verdict_exit(eeb_run_verdict(&o, 0));
out:
    eeb_display_close(&d);
    eeb_client_free(&client);
    eeb_run_config_free(&c);
    free(options);
    return rc;
}
