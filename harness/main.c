/*
 * main.c - the eeb command: global options and dispatch to subcommands,
 * which live one per file in harness/cmd_<name>.c.
 */
#include "fpga/accel/eeb_accel.h"
#include "eeb_cli.h"
#include "common/eeb_common.h"
#include "power/eeb_power.h"
#include "rundb/eeb_rundb.h"
#include "fpga/emu/eeb_emu.h"
#include "scoring/eeb_score.h"

#include <expat.h>
#include <jconfig.h> /* TurboJPEG has no run-time version query */
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <jansson.h>
#include <sensors/sensors.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"run", eeb_cmd_run, "the benchmark: deploy, fine-tune under T_max and P_max, test, score"},
    {"check", eeb_cmd_check, "recompute a run's metrics and verdict from its database"},
    {"report", eeb_cmd_report, "a run's self-contained HTML report"},
    {"pack", eeb_cmd_pack, "a run's submission package, for the organizer (eeb check --package)"},
    {"xclbin", eeb_cmd_xclbin, "inspect an xclbin, or build the reference accelerator's"},
    {"dse", eeb_cmd_dse, "explore PE-array designs for a model on a board (modeled)"},
    {"serve", eeb_cmd_serve, "the evaluation and leaderboard server"},
    {"submit", eeb_cmd_submit, "send a finished run to the evaluation server to be judged"},
    {"score", eeb_cmd_score, "compute M_u, M_t, M_p, M_s and the score S of one run"},
    {"db", eeb_cmd_db, "create or inspect a run database"},
    {"model", eeb_cmd_model, "inspect, pretrain or convert .eebm model files"},
    {"eval", eeb_cmd_eval, "a task metric from prediction files (top-5, VOC mAP)"},
    {"data", eeb_cmd_data, "generate, import or describe .eebd dataset shards"},
    {"power", eeb_cmd_power, "power sources, a standalone logger, energy and P_max of a run"},
    {"sut", eeb_cmd_sut, "check a system under test before a benchmark (eeb sut check)"},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fputs("Usage: eeb <command> [options]\n"
          "       eeb <command> --help\n"
          "       eeb --version\n"
          "\n"
          "eeb, the edge energy benchmark: scores FPGA fine-tuning accelerators on\n"
          "resource use, training time, energy and task accuracy (Tao et al., sec. 4).\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("  help     show a command's help: eeb help score\n"
          "\n" EEB_CLI_EXIT_HELP "\n",
          out);
}

static void version(void)
{
    printf("eeb %s\n", EEB_VERSION);
    printf("run database schema v%d; scoring rules built in: v1\n", EEB_RUNDB_SCHEMA);
    int jpeg = LIBJPEG_TURBO_VERSION_NUMBER, onednn;
    const char *dnnl = eeb_emu_onednn_version(&onednn);
    printf("libraries: SQLite %s, jansson %s, %s, libjpeg-turbo %d.%d.%d (built with), FFmpeg %s "
           "(libavformat %u.%u, libavcodec %u.%u), libsensors %s, oneDNN %s\n",
           sqlite3_libversion(), jansson_version_str(), XML_ExpatVersion(), jpeg / 1000000,
           jpeg / 1000 % 1000, jpeg % 1000, av_version_info(), avformat_version() >> 16,
           avformat_version() >> 8 & 0xff, avcodec_version() >> 16, avcodec_version() >> 8 & 0xff,
           libsensors_version, dnnl);
    printf("accelerator backends:");
    for (const struct eeb_accel_ops *const *b = eeb_accel_list(); *b; b++)
        printf(" %s", (*b)->name);
    printf(" (emulator on %s here, %s)\n", eeb_emu_isa_name(eeb_emu_gemm_best_isa()),
           onednn ? "with oneDNN's convolutions where faster"
                  : "without oneDNN: its int8 sums are not exact on this CPU");
    printf("power sources:");
    for (const struct eeb_power_source_ops *const *o = eeb_power_sources(); *o; o++)
        printf(" %s:", (*o)->scheme);
    putchar('\n');
}

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage(stderr), EEB_EXIT_USAGE;
    const char *arg = argv[1];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
        return usage(stdout), EEB_EXIT_OK;
    if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0)
        return version(), EEB_EXIT_OK;
    if (strcmp(arg, "help") == 0) {
        if (argc < 3)
            return usage(stdout), EEB_EXIT_OK;
        const struct command *c = find(argv[2]);
        if (!c)
            return eeb_cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        char *help_argv[] = {argv[2], "--help", NULL};
        return c->run(2, help_argv);
    }
    if (arg[0] == '-')
        return eeb_cli_usage_error(NULL, "unknown option '%s'", arg);
    const struct command *c = find(arg);
    if (!c)
        return eeb_cli_usage_error(NULL, "unknown command '%s'", arg);
    return c->run(argc - 1, argv + 1);
}
