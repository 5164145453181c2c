/*
 * cmd_power_emulate.c - `eeb power emulate ptd`: a SPEC PTDaemon emulator
 * (power/eeb_ptd_emulator.h) on a port, whose readings follow a constant,
 * a trace file, a shell command or this machine's CPU, until SIGINT,
 * SIGTERM or --for: for organizers rehearsing a measured round without an
 * analyzer, and for tests that meter a load of their own.
 */
#include "eeb_cli.h"
#include "power/eeb_power.h"
#include "power/eeb_ptd_emulator.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const cmd = "power emulate";

static void help(void)
{
    puts("Usage: eeb power emulate ptd [--port N] [--bind ADDR] [--interval MS] [--volts V]\n"
         "                             (--watts W | --load FILE [--loop] | --load "
         "cpu:IDLE_W,BUSY_W\n"
         "                              | --load-command CMD) [--log FILE] [--for SECONDS]\n"
         "\n"
         "A SPEC PTDaemon emulator: a TCP server speaking PTDaemon's protocol (Hello,\n"
         "Identify, RR, SR,V / SR,A, Go, Stop, RL, Watts, Uncertainty; lines end CR LF)\n"
         "as eeb's ptd:// source and MLPerf's power tooling speak it, whose analyzer\n"
         "reads the load you give.  It prints `listening on ADDR:PORT` on stdout, then\n"
         "serves one connection at a time until Ctrl-C, SIGTERM or --for.  Readings\n"
         "are taken once per update interval; RL between updates answers the same one.\n"
         "Volts are fixed, amps = watts / volts.  Each reading's uncertainty is 0.1 %\n"
         "of the reading + 0.1 % of the range (0.2 % autoranging, the start); a\n"
         "reading above a fixed range SR set is over range: 3 %, which eeb's 1 % limit\n"
         "catches, and the log says so (the watts stay the load's).\n"
         "\n"
         "Options:\n"
         "  --port N           TCP port, 0..65535 (default 0: the kernel's choice)\n"
         "  --bind ADDR        address to listen on (default 127.0.0.1)\n"
         "  --interval MS      update interval in milliseconds, 10..3600000 (default\n"
         "                     1000); a client's Go,MS,... sets its own\n"
         "  --volts V          the line voltage, volts (default 230)\n"
         "  --watts W          a constant load, watts\n"
         "  --load FILE        a load trace: lines of `seconds watts` (seconds since the\n"
         "                     emulator started; '#' comments), or a CSV or PTDaemon log\n"
         "                     as replay: reads them; each value holds until the next\n"
         "                     line's time, the last one past the end\n"
         "  --loop             with --load FILE: start the trace again past its end\n"
         "  --load cpu:IDLE_W,BUSY_W\n"
         "                     this machine's CPU busy fraction (/proc/stat) mapped to\n"
         "                     IDLE_W..BUSY_W watts: the meter follows whatever runs here\n"
         "  --load-command CMD a shell command run at each update; the first number it\n"
         "                     prints is the watts.  A failure, no number or over 5 s\n"
         "                     makes that reading invalid (Watts -1), and is logged\n"
         "  --log FILE         the log (default: stderr), PTDaemon's format: every\n"
         "                     command, every reading with its uncertainty, warnings\n"
         "  --for SECONDS      stop after this long (default: until a signal)\n"
         "  -h, --help         show this help\n"
         "\n"
         "Example (an organizer's rehearsal, docs/power.md):\n"
         "  eeb power emulate ptd --port 8888 --load cpu:40,180 --log ptd.log &\n"
         "  eeb power log --source 'ptd://127.0.0.1:8888?interval=1000' --db rehearsal.db\n"
         "\n" EEB_CLI_EXIT_HELP);
}

static volatile sig_atomic_t stopped;

static void on_signal(int sig)
{
    (void)sig;
    stopped = 1;
}

struct emulate_args {
    const char *bind, *load, *command, *log;
    double port, interval, volts, watts, seconds;
    int loop;
};

static int make_load(const struct emulate_args *a, struct eeb_ptd_load **load, char *err,
                     size_t errlen)
{
    if (a->command)
        return eeb_ptd_load_command(a->command, load, err, errlen);
    if (a->load && strncmp(a->load, "cpu:", 4) == 0)
        return eeb_ptd_load_cpu(a->load + 4, load, err, errlen);
    if (a->load)
        return eeb_ptd_load_file(a->load, a->loop, load, err, errlen);
    return eeb_ptd_load_constant(a->watts, load, err, errlen);
}

static int emulate(const struct emulate_args *a)
{
    char err[512];
    struct eeb_ptd_load *load = NULL;
    if (make_load(a, &load, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    FILE *log = NULL;
    if (a->log && !(log = fopen(a->log, "we"))) {
        eeb_ptd_load_free(load);
        return eeb_cli_error(cmd, "--log %s: %s", a->log, strerror(errno));
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct eeb_ptd_emulator_config c = {.bind = a->bind,
                                        .port = (int)a->port,
                                        .interval_ms = (int)a->interval,
                                        .volts = a->volts,
                                        .load = load,
                                        .log = log};
    struct eeb_ptd_emulator *e;
    if (eeb_ptd_emulator_start(&c, &e, err, sizeof err)) {
        if (log)
            fclose(log);
        eeb_ptd_load_free(load);
        return eeb_cli_error(cmd, "%s", err);
    }
    printf("listening on %s\n", eeb_ptd_emulator_address(e));
    fflush(stdout);
    int64_t until = a->seconds > 0 ? eeb_mono_ns() + (int64_t)(a->seconds * 1e9) : INT64_MAX;
    while (!stopped && eeb_mono_ns() < until) {
        struct timespec tick = {0, 50000000};
        nanosleep(&tick, NULL);
    }
    eeb_ptd_emulator_stop(e);
    eeb_ptd_load_free(load);
    if (log && fclose(log) != 0)
        return eeb_cli_error(cmd, "--log %s: %s", a->log, strerror(errno));
    return EEB_EXIT_OK;
}

/* `eeb power emulate ...`, argv[0] "emulate". */
int eeb_cmd_power_emulate(int argc, char **argv)
{
    enum {
        O_PORT = 256,
        O_BIND,
        O_INTERVAL,
        O_VOLTS,
        O_WATTS,
        O_LOAD,
        O_LOOP,
        O_COMMAND,
        O_LOG,
        O_FOR
    };
    static const struct option options[] = {
        {"port", required_argument, NULL, O_PORT},
        {"bind", required_argument, NULL, O_BIND},
        {"interval", required_argument, NULL, O_INTERVAL},
        {"volts", required_argument, NULL, O_VOLTS},
        {"watts", required_argument, NULL, O_WATTS},
        {"load", required_argument, NULL, O_LOAD},
        {"loop", no_argument, NULL, O_LOOP},
        {"load-command", required_argument, NULL, O_COMMAND},
        {"log", required_argument, NULL, O_LOG},
        {"for", required_argument, NULL, O_FOR},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct emulate_args a = {.interval = 1000, .volts = 230, .watts = NAN};
    int c, rc = EEB_EXIT_OK;
    opterr = 0;
    optind = 1;
    while (rc == EEB_EXIT_OK && (c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case O_PORT: rc = eeb_cli_count(cmd, "--port", optarg, 0, 65535, &a.port); break;
        case O_BIND: a.bind = optarg; break;
        case O_INTERVAL:
            rc = eeb_cli_count(cmd, "--interval", optarg, 10, 3600000, &a.interval);
            break;
        case O_VOLTS: rc = eeb_cli_number(cmd, "--volts", optarg, &a.volts); break;
        case O_WATTS: rc = eeb_cli_number(cmd, "--watts", optarg, &a.watts); break;
        case O_LOAD: a.load = optarg; break;
        case O_LOOP: a.loop = 1; break;
        case O_COMMAND: a.command = optarg; break;
        case O_LOG: a.log = optarg; break;
        case O_FOR: rc = eeb_cli_number(cmd, "--for", optarg, &a.seconds); break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc != EEB_EXIT_OK)
        return rc;
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "expected what to emulate: ptd");
    if (strcmp(argv[optind], "ptd") != 0 || argc - optind != 1)
        return eeb_cli_usage_error(cmd,
                                   "'%s': only 'ptd' (SPEC PTDaemon) is emulated, with no "
                                   "arguments after it",
                                   argv[optind]);
    int loads = !isnan(a.watts) + !!a.load + !!a.command;
    if (loads != 1)
        return eeb_cli_usage_error(cmd, "give one load: --watts W, --load FILE, --load "
                                        "cpu:IDLE_W,BUSY_W or --load-command CMD");
    if (!isnan(a.watts) && !(a.watts >= 0))
        return eeb_cli_usage_error(cmd, "--watts: %g (watts, >= 0)", a.watts);
    if (!(a.volts > 0 && a.volts <= 100000))
        return eeb_cli_usage_error(cmd, "--volts: %g (volts, > 0)", a.volts);
    if (a.loop && (!a.load || strncmp(a.load, "cpu:", 4) == 0))
        return eeb_cli_usage_error(cmd, "--loop goes with --load FILE");
    if (a.seconds < 0)
        return eeb_cli_usage_error(cmd, "--for: %g (seconds, >= 0)", a.seconds);
    if (a.bind && !*a.bind)
        return eeb_cli_usage_error(cmd, "--bind: an empty address");
    return emulate(&a);
}
