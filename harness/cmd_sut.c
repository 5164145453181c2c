/*
 * cmd_sut.c - `eeb sut check BACKEND`: the conformance battery a team runs
 * on its system under test before a benchmark (sut/check.c), one line per
 * item, or JSON; and `eeb sut serve LIBRARY`: a team's library hosted over
 * the exec protocol on stdin and stdout, the process eeb runs every
 * library in.
 */
#include "eeb_cli.h"
#include "sut/eeb_sut_host.h"
#include "sut/eeb_sut_serve.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const cmd = "sut";

static void help(void)
{
    puts("Usage: eeb sut check BACKEND --task TASK [--model FILE]\n"
         "                     [--finetune FILE.eebd --test FILE.eebd] [--sut-config TEXT]\n"
         "                     [--xclbin FILE] [--deadline S] [--in-process] [--json]\n"
         "       eeb sut serve [--] LIBRARY\n"
         "\n"
         "Checks a system under test before a benchmark, like MLPerf's audit tests:\n"
         "a short battery, one line per item, pass, FAIL or skip, with the reason.\n"
         "BACKEND is what `eeb run --backend` takes: one of eeb's own (emu, kernel,\n"
         "fp32, xrt), a team's library (./libteam.so) or program ('exec:PROGRAM ARGS').\n"
         "\n"
         "The items, in order (docs/sut.md):\n"
         "  abi          the table loads and passes eeb's check: ABI version, every\n"
         "               required call; the SUT's name\n"
         "  open/load    open with the shards' setup (batch_max 8) and load_model\n"
         "  shapes       predict answers well formed (classes in range, at most\n"
         "               max_boxes boxes, finite scores) for batches of 1 and 8\n"
         "  determinism  the test items predicted twice without training: the same\n"
         "               answers, classes, scores and boxes bit for bit\n"
         "  order        the test items reversed in batches of 3, and a re-drawn subset\n"
         "               predicted alone: each item the full pass's answer (scores\n"
         "               within 1e-4), so a SUT answering from a cache keyed by position\n"
         "               or batch, not from its model, fails\n"
         "  training     a few batches of the fine-tune shard trained: at least one\n"
         "               answer on the training items changes, and each step is sane\n"
         "               (loss finite or NAN, 0 <= correct <= counted, done 0 or 1)\n"
         "  deadline     every call above answered within --deadline; the slowest named\n"
         "  counters     the optional calls: counters agree with the batches trained\n"
         "               (a warning if not), save_model writes a non-empty file\n"
         "\n"
         "Options:\n"
         "  --task TASK          cls, det or video: the synthetic shards' task\n"
         "  --model FILE         the team's model file, given to load_model; eeb's own\n"
         "                       backends default to a fresh reference model; a team's\n"
         "                       SUT without it gets no load_model call\n"
         "  --finetune FILE.eebd, --test FILE.eebd\n"
         "                       shards to check on (both, or neither: small synthetic\n"
         "                       ones, 16 px, a few dozen items, made in $TMPDIR and\n"
         "                       removed after)\n"
         "  --sut-config TEXT    the team's configuration string, handed to open\n"
         "  --xclbin FILE        the design to program the device with, handed to open\n"
         "                       (eeb run hands the SUT a copy of its --xclbin)\n"
         "  --deadline S         the most any call may take (default 60): a library's\n"
         "                       process or a program not answering within it is\n"
         "                       killed; a SUT in eeb's own process (eeb's backends,\n"
         "                       --in-process) ends the check, items so far printed\n"
         "  --in-process         load a team's library into eeb itself, as eeb run\n"
         "                       --in-process does: a crash in it ends eeb\n"
         "  --json               the items as one JSON object on stdout\n"
         "  -h, --help           show this help\n"
         "\n"
         "eeb sut serve LIBRARY answers the exec protocol (docs/sut.md) on stdin and\n"
         "stdout over a team's library: the process eeb runs every library in (eeb run\n"
         "--backend ./libteam.so starts it), and a way to reach a board over ssh:\n"
         "--backend 'exec:ssh board eeb sut serve ./libteam.so'.  A library that cannot\n"
         "be loaded is reported to eeb as open's error.\n"
         "\n"
         "Exit status: 0 every item passed (or was skipped), 1 error (the SUT cannot\n"
         "be found or loaded, the shards cannot be read), 2 usage error, 3 an item\n"
         "failed.");
}

struct args {
    const char *task, *backend;
    struct eeb_sut_check_options o;
    int json;
};

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option options[] = {
        {"task", required_argument, NULL, 'k'},
        {"model", required_argument, NULL, 'm'},
        {"finetune", required_argument, NULL, 'f'},
        {"test", required_argument, NULL, 't'},
        {"sut-config", required_argument, NULL, 'c'},
        {"xclbin", required_argument, NULL, 'x'},
        {"deadline", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        {"in-process", no_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 'k': a->task = optarg; break;
        case 'm': a->o.model = optarg; break;
        case 'f': a->o.finetune = optarg; break;
        case 't': a->o.test = optarg; break;
        case 'c': a->o.sut_config = optarg; break;
        case 'x': a->o.xclbin = optarg; break;
        case 'j': a->json = 1; break;
        case 'i': a->o.in_process = 1; break;
        case 'h': help(); return -1;
        case 'd':
            if ((rc = eeb_cli_number(cmd, "--deadline", optarg, &a->o.deadline_s)))
                return rc;
            if (a->o.deadline_s <= 0)
                return eeb_cli_usage_error(cmd, "--deadline: %s (seconds, more than 0)", optarg);
            break;
        case ':': return eeb_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "check: no BACKEND (emu, ./libteam.so, 'exec:PROGRAM')");
    a->o.backend = argv[optind++];
    if (optind < argc)
        return eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!a->task)
        return eeb_cli_usage_error(cmd, "--task is required (cls, det or video)");
    char err[256];
    if (eeb_task_parse(a->task, &a->o.task, err, sizeof err))
        return eeb_cli_usage_error(cmd, "--task: %s", err);
    if (!a->o.finetune != !a->o.test)
        return eeb_cli_usage_error(cmd, "--finetune and --test go together (or neither)");
    return 0;
}

static const char *outcome_word(enum eeb_sut_check_outcome o)
{
    return o == EEB_SUT_CHECK_PASS ? "pass" : o == EEB_SUT_CHECK_FAIL ? "FAIL" : "skip";
}

static int failed(const struct eeb_sut_check_report *r)
{
    for (int i = 0; i < EEB_SUT_CHECK_ITEMS; i++)
        if (r->items[i].outcome == EEB_SUT_CHECK_FAIL)
            return 1;
    return 0;
}

static int print_json(const struct args *a, const struct eeb_sut_check_report *r)
{
    json_t *items = json_array();
    for (int i = 0; items && i < EEB_SUT_CHECK_ITEMS; i++)
        json_array_append_new(items, json_pack("{s:s, s:s, s:s}", "item",
                                               eeb_sut_check_item_name((enum eeb_sut_check_item)i),
                                               "outcome", outcome_word(r->items[i].outcome),
                                               "reason", r->items[i].reason));
    int rc = eeb_cli_print_json(
        cmd, json_pack("{s:s, s:s, s:s, s:s, s:o*, s:f, s:s}", "backend", a->o.backend, "name",
                       r->name, "version", r->version, "result", failed(r) ? "fail" : "pass",
                       "items", items, "slowest_s", r->slowest_s, "slowest_call", r->slowest_call));
    return rc;
}

static void print_lines(const struct args *a, const struct eeb_sut_check_report *r)
{
    printf("eeb sut check %s (%s%s%s)\n", a->o.backend, r->name[0] ? r->name : "name unknown",
           r->version[0] ? " " : "", r->version);
    for (int i = 0; i < EEB_SUT_CHECK_ITEMS; i++)
        printf("  %-4s  %-11s  %s\n", outcome_word(r->items[i].outcome),
               eeb_sut_check_item_name((enum eeb_sut_check_item)i), r->items[i].reason);
    printf("%s\n", failed(r) ? "FAIL" : "pass");
}

/* A call ran past the deadline in eeb's own process, where nothing can
 * stop it: what the battery found so far, then the end of eeb. */
static void hung(const struct eeb_sut_check_report *r, void *arg)
{
    const struct args *a = arg;
    if (a->json)
        print_json(a, r);
    else
        print_lines(a, r);
    fflush(stdout);
    _exit(EEB_EXIT_FAIL);
}

/* `eeb sut serve [--] LIBRARY`. */
static int serve(int argc, char **argv)
{
    int first = argc > 1 && strcmp(argv[1], "--") == 0 ? 2 : 1;
    if (argc - first != 1 || (first == 1 && argv[1][0] == '-'))
        return eeb_cli_usage_error(cmd, "serve: one LIBRARY (eeb sut serve [--] ./libteam.so)");
    const struct eeb_sut_ops *ops = NULL;
    struct eeb_sut_ops whole;
    void *library = NULL;
    char why[1024] = "";
    if (eeb_sut_plugin_load(argv[first], &ops, &library, why, sizeof why) == EEB_OK)
        eeb_sut_ops_whole(ops, &whole);
    int rc = eeb_sut_serve(library ? &whole : NULL, why, "eeb sut serve");
    eeb_sut_plugin_unload(library);
    return rc ? EEB_EXIT_ERROR : EEB_EXIT_OK;
}

int eeb_cmd_sut(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0))
        return help(), EEB_EXIT_OK;
    if (argc < 2)
        return eeb_cli_usage_error(cmd, "no subcommand (check, serve)");
    if (strcmp(argv[1], "serve") == 0)
        return serve(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") != 0)
        return eeb_cli_usage_error(cmd, "unknown subcommand '%s' (check, serve)", argv[1]);
    struct args a = {0};
    int rc = parse_args(argc - 1, argv + 1, &a);
    if (rc)
        return rc < 0 ? EEB_EXIT_OK : rc;
    struct eeb_sut_check_report r;
    char err[1024];
    a.o.hung = hung, a.o.hung_arg = &a;
    if (eeb_sut_check_run(&a.o, &r, err, sizeof err))
        return eeb_cli_error(cmd, "check: %s", err);
    if (a.json) {
        if ((rc = print_json(&a, &r)))
            return rc;
    } else {
        print_lines(&a, &r);
    }
    return failed(&r) ? EEB_EXIT_FAIL : EEB_EXIT_OK;
}
