/*
 * cmd_power.c - `eeb power list|log|agent|summary|export|qualify`: the
 * power sources this build has, a standalone logger into a run database
 * (and, as a station's agent, to the evaluation server as it logs), a
 * logged run's energy, validity and P_max verdict, or its samples as CSV
 * or JSON, and a board's sensor qualified against a reference meter.
 * `eeb power emulate` is cmd_power_emulate.c's.
 */
#include "eeb_cli.h"
#include "eeb_client.h"
#include "power/eeb_power.h"
#include "power/eeb_qualify.h"
#include "rundb/eeb_config_record.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const cmd = "power";

static void help(void)
{
    puts("Usage: eeb power list\n"
         "       eeb power log --source URI --db FILE [--rate HZ] [--duration S] [--pmax W]\n"
         "       eeb power agent --source URI --db FILE --server URL --key FILE [--rate HZ]\n"
         "                       [--duration S]\n"
         "       eeb power summary FILE [--run ID] [--pmax W] [--json]\n"
         "       eeb power export FILE [--run ID] --csv|--json\n"
         "       eeb power qualify REF CANDIDATE [--windows N] [--window-s S] [--rate HZ]\n"
         "                       [--load1 CMD] [--load2 CMD] [--db FILE [--board NAME]\n"
         "                       [--rail NAME]] [--json]\n"
         "       eeb power emulate ptd [--port N] [--interval MS] [--volts V] (--watts W |\n"
         "                       --load FILE [--loop] | --load-command CMD) [--log FILE] ...\n"
         "\n"
         "  list     the kinds of source this build has, with their URI forms, and\n"
         "           every hwmon rail and RAPL zone found here with a reading now\n"
         "  log      samples a source into a run database until --duration passes\n"
         "           or Ctrl-C; every committed sample stays readable whatever\n"
         "           happens to the process.  On a terminal a live line shows\n"
         "           watts now, the mean and the joules so far\n"
         "  agent    a station's agent, for director mode when the evaluation server\n"
         "           cannot reach the meter: logs as `log` does, and sends the samples\n"
         "           to the server twice a second with the station's key (a secret:\n"
         "           use https:// across a network)\n"
         "           (eeb serve admin station-key; the server runs with --station\n"
         "           TEAM=agent:KEYFILE).  While one of TEAM's official runs is\n"
         "           registered the server keeps them as its measurement of the run.\n"
         "           What does not reach the server is sent again; the log keeps all\n"
         "  summary  a run's energy, mean and peak power, samples, drops, gaps,\n"
         "           achieved rate, provenance, whether the measurement is valid\n"
         "           and, given a budget, the P_max verdict (exit 4 if the\n"
         "           measurement is invalid, else 3 if the rule fails)\n"
         "  export   a run's samples (t_mono_ns, t_utc_ns, volts, amps, watts);\n"
         "           --source replay:FILE plays the CSV back\n"
         "  qualify  a board's own sensor (CANDIDATE: hwmon:, rapl:) against a\n"
         "           reference analyzer (REF: ptd://, scpi://) on the same rail, as\n"
         "           MLPerf Training's power rules qualify a meter: both read at the\n"
         "           same instants in three phases, idle, load 1 and load 2, each of\n"
         "           --windows windows of --window-s seconds; in every phase the\n"
         "           candidate's Olympic mean of its window means (the highest and\n"
         "           lowest dropped) must be within 5 % of the reference's.  A\n"
         "           phase's load is --load1/--load2, a shell command eeb starts\n"
         "           before the phase and stops (SIGTERM) after it; without one\n"
         "           the operator runs it, told on stderr when (and, on a terminal,\n"
         "           eeb waits for Enter).  Two replay: traces are read on a\n"
         "           simulated clock, without waiting: the phases are consecutive\n"
         "           spans from the traces' start.  Exit 3 if a phase is not\n"
         "           within 5 %\n"
         "  emulate  a SPEC PTDaemon emulator on a TCP port, for rehearsals without an\n"
         "           analyzer: readings (watts; volts fixed, 230 V by default; amps =\n"
         "           watts / volts) follow a constant, a trace, a command's output or\n"
         "           this machine's CPU, once per update interval (ms); a fixed range\n"
         "           below the load is over range, 3 % uncertainty.  See `eeb power\n"
         "           emulate --help`\n"
         "\n"
         "Options:\n"
         "  --source URI    hwmon:[CHIP][/RAIL], rapl:[ZONE], scpi://HOST:PORT,\n"
         "                  ptd://HOST:PORT, sim:[watts=W,...], replay:FILE[?OPTIONS],\n"
         "                  faulty:WHEN:URI (see `eeb power list`).  replay: plays back a\n"
         "                  SPEC PTDaemon log or a CSV at its own times; its options:\n"
         "                  channel=N|total (a multi-channel PTDaemon log), date=MM-DD|\n"
         "                  DD-MM (a log whose dates read either way), mark=LABEL (one\n"
         "                  measurement of a log), time=, power=, volts=, amps=COLUMN\n"
         "                  (a CSV's columns, when their names do not say),\n"
         "                  time_unit=s|ms|us|ns (a CSV time column whose name has no\n"
         "                  unit; without one it is refused), decimal=,|. (a CSV's\n"
         "                  decimal mark, when a value like 1,234 leaves it open).  A\n"
         "                  read at an invalid reading (PTDaemon's Watts -1) fails, as\n"
         "                  the meter's did; a gap of the trace stays a gap\n"
         "  --db FILE       the run database (created if missing)\n"
         "  --rate HZ       samples per second, 1..10000 (default: once per the meter's\n"
         "                  update, a ptd:// meter's interval (1 Hz unless it says),\n"
         "                  a replay:'s recorded interval; 100 for the others)\n"
         "  --duration S    seconds to log (default: until Ctrl-C)\n"
         "  --server URL    agent: the evaluation server (http://HOST:PORT)\n"
         "  --key FILE      agent: the station's key\n"
         "  --pmax W        the power budget to judge by\n"
         "  --run ID        the run (default: the latest)\n"
         "  --csv, --json   the export format; --json also for summary and qualify\n"
         "  --windows N     qualify: windows a phase, 3..100 (default 5)\n"
         "  --window-s S    qualify: seconds a window (default 60)\n"
         "                  (--rate: qualify reads both sources at 1..100 Hz, default 10)\n"
         "  --load1 CMD, --load2 CMD\n"
         "                  qualify: the shell commands that load the board in load 1\n"
         "                  and load 2 (live sources only)\n"
         "  --board NAME    qualify --db: the board (default: this host's name)\n"
         "  --rail NAME     qualify --db: the rail (default: CANDIDATE's URI); --db\n"
         "                  keeps the verdict in the run database's qualifications\n"
         "  -q, --quiet     no live line\n"
         "  -h, --help      show this help\n"
         "\n" EEB_CLI_EXIT_HELP);
}

/* The kinds of source, then every meter found here with a reading now
 * (like `sensors`): what --source can be given on this machine. */
static int list(void)
{
    puts("Sources this build has:");
    for (const struct eeb_power_source_ops *const *o = eeb_power_sources(); *o; o++)
        printf("  %-8s %s\n", (*o)->scheme, (*o)->description);
    puts("\nFound on this machine (network meters are found by address):");
    int found = 0;
    for (const struct eeb_power_source_ops *const *o = eeb_power_sources(); *o; o++) {
        char err[512];
        int n = (*o)->list ? (*o)->list(stdout, err, sizeof err) : 0;
        if (n < 0)
            printf("  %s: %s\n", (*o)->scheme, err);
        found += n > 0 ? n : 0;
    }
    if (!found)
        puts("  none: no hwmon power rails, no RAPL zones");
    fflush(stdout);
    return EEB_EXIT_OK;
}

/* ---- log ---- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

struct log_args {
    const char *source, *db;
    const char *server, *key; /* a station's agent: where its samples go */
    double rate, duration, pmax;
    int quiet;
};

/* Creates the power-log run and records what it measures with. */
static int create_log_run(struct eeb_rundb *db, const struct log_args *a,
                          const struct eeb_power_source *src, double rate, int64_t *run,
                          char uuid[37], char *err, size_t errlen)
{
    json_t *cfg = json_object();
    eeb_config_put_power(cfg, src->uri, rate, eeb_provenance_name(src->provenance), NULL);
    eeb_config_put_update_interval(cfg, src->update_interval_s);
    char *config = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(cfg);
    if (!config)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    struct eeb_run_new log = {.power_log = 1,
                              .backend = "none",
                              .config_json = config,
                              .t_max_s = a->duration > 0 ? a->duration : NAN,
                              .p_max_w = a->pmax > 0 ? a->pmax : NAN,
                              .rules_version = "1"};
    int rc = eeb_rundb_run_create(db, &log, run, uuid, err, errlen);
    free(config);
    return rc;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A station agent's samples sent on (every call past its time), its news
 * said when it changes: the server answering or not, the run it measures. */
struct agent_link {
    struct eeb_client_agent *to; /* NULL: a log of its own */
    int64_t next_ns;             /* the next send */
    int failing;                 /* the last send failed */
    uint64_t sent;               /* samples the server took */
    int64_t measuring;
    char ranged[320]; /* the last ranging phase said */
    char line[96];    /* for the live line */
};

static void agent_tick(struct agent_link *g, const struct eeb_sampler_live *l, int final)
{
    char err[512];
    if (!g->to || (!final && eeb_mono_ns() < g->next_ns))
        return;
    g->next_ns = eeb_mono_ns() + 500000000; /* twice a second */
    int rc = eeb_client_agent_send(g->to, l->failed, l->dropped, err, sizeof err);
    struct eeb_client_agent_status st;
    eeb_client_agent_status(g->to, &st);
    if (rc && !g->failing)
        fprintf(stderr,
                "\neeb power: the server does not take the samples (sent again until it "
                "does): %s\n",
                err);
    else if (!rc && g->failing)
        fprintf(stderr, "\neeb power: the server takes the samples again\n");
    else if (!rc && st.measuring != g->measuring && st.measuring)
        fprintf(stderr, "\neeb power: the server measures run %lld of team %s with them\n",
                (long long)st.measuring, st.team);
    if (strcmp(st.ranged, g->ranged)) /* the server's run ranged the meter */
        fprintf(stderr, "\neeb power: %s\n", st.ranged);
    snprintf(g->ranged, sizeof g->ranged, "%s", st.ranged);
    g->failing = rc != 0;
    g->sent = st.sent;
    g->measuring = rc ? g->measuring : st.measuring;
    snprintf(g->line, sizeof g->line, "  %llu sent%s", (unsigned long long)st.sent,
             g->failing     ? " SERVER UNREACHABLE"
             : g->measuring ? " (measuring)"
                            : "");
}

/* Whether url names this host: a station key sent over plain HTTP to any
 * other can be read on the way. */
static int on_this_host(const char *url)
{
    const char *host = strstr(url, "://");
    host = host ? host + 3 : url;
    static const char *const here[] = {"127.", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof here / sizeof *here; i++)
        if (strncmp(host, here[i], strlen(here[i])) == 0)
            return 1;
    return 0;
}

static int log_power(const struct log_args *a)
{
    char err[512];
    if (a->server && strncmp(a->server, "http://", 7) == 0 && !on_this_host(a->server))
        fprintf(stderr,
                "eeb power: warning: %s is plain HTTP: the station's key crosses the "
                "network readable; put the server behind TLS (https://)\n",
                a->server);
    struct eeb_power_source *src;
    if (eeb_power_open(a->source, &src, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    /* This connection creates and ends the run; the sampler's writer has
     * its own for the samples. */
    struct eeb_rundb *db = NULL;
    int64_t run;
    struct eeb_sampler *s = NULL;
    struct eeb_sampler_config cfg;
    eeb_sampler_config_default(&cfg);
    cfg.db_path = a->db;
    /* once per the meter's update: faster reads the same reading again */
    double rate = cfg.rate_hz = a->rate > 0 ? a->rate : eeb_power_default_rate(src);
    struct agent_link agent = {0};
    char uuid[37];
    if (eeb_rundb_open(a->db, EEB_RUNDB_READWRITE, &db, err, sizeof err) ||
        create_log_run(db, a, src, rate, &run, uuid, err, sizeof err) ||
        (a->server && eeb_client_agent_open(a->server, a->key, a->db, run, uuid, src, rate,
                                            &agent.to, err, sizeof err)) ||
        (cfg.run = run, eeb_sampler_start(src, &cfg, &s, err, sizeof err))) {
        eeb_client_agent_close(agent.to);
        eeb_rundb_close(db);
        eeb_power_close(src);
        return eeb_cli_error(cmd, "%s", err);
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int tty = isatty(2) && !a->quiet;
    fprintf(stderr, "eeb power: logging %s (%s) at %g Hz into %s, run %lld%s%s%s\n", src->uri,
            eeb_provenance_name(src->provenance), rate, a->db, (long long)run,
            a->server ? ", sending to " : "", a->server ? a->server : "",
            a->duration > 0 ? "" : "; Ctrl-C stops");
    if (src->note)
        fprintf(stderr, "eeb power: %s\n", src->note);
    /* The window opens once the meter has answered (a second at most), so
     * it does not start with a stretch no reading covers. */
    struct eeb_sampler_live l = {0};
    for (int64_t t = eeb_mono_ns(); !l.samples && eeb_mono_ns() - t < 1000000000;) {
        sleep_ms(1);
        eeb_sampler_live(s, &l);
    }
    int64_t begin = eeb_sampler_mark(s, EEB_EVENT_LOG_BEGIN, NULL);
    int64_t until = a->duration > 0 ? begin + (int64_t)(a->duration * 1e9) : INT64_MAX;
    for (int64_t shown = 0; !interrupted && !l.write_failed && eeb_mono_ns() < until;) {
        sleep_ms(50);
        eeb_sampler_live(s, &l);
        agent_tick(&agent, &l, 0);
        int64_t now = eeb_mono_ns();
        if (now - shown < (tty ? 250000000 : 10000000000LL) || a->quiet)
            continue;
        shown = now;
        fprintf(stderr, "%s%7.1f s  %8.3f W now  %8.3f W mean  %10.3f J  %llu samples%s%s%s",
                tty ? "\r" : "", l.seconds, l.watts, l.seconds > 0 ? l.joules / l.seconds : 0,
                l.joules, (unsigned long long)l.samples,
                l.dropped || l.failed ? "  DROPS/FAULTS" : "", agent.line, tty ? "   " : "\n");
    }
    if (tty)
        fputc('\n', stderr);
    eeb_sampler_mark(s, EEB_EVENT_LOG_END, interrupted ? "{\"stopped_by\": \"signal\"}" : NULL);
    struct eeb_sampler_stats st;
    int rc = eeb_sampler_stop(s, &st, err, sizeof err);
    /* the rest of the log, while the server takes it (the agent asks the
     * meter what it can do: it is closed after) */
    for (uint64_t sent = UINT64_MAX; agent.to && agent.sent != sent && !agent.failing;) {
        sent = agent.sent;
        agent_tick(&agent, &l, 1);
    }
    eeb_client_agent_close(agent.to);
    eeb_power_close(src);
    char err2[512];
    if (eeb_rundb_run_set_state(db, run, rc == EEB_OK ? EEB_RUN_DONE : EEB_RUN_FAILED, err2,
                                sizeof err2) &&
        rc == EEB_OK) {
        rc = EEB_EDB;
        snprintf(err, sizeof err, "%s", err2);
    }
    eeb_rundb_close(db);
    printf("run %lld: %llu samples at %.1f Hz achieved, %llu written, %llu dropped, %llu failed "
           "reads, %llu deadlines missed; wake-up jitter p50 %.0f us, p99 %.0f us, max %.0f us\n",
           (long long)run, (unsigned long long)st.samples, st.achieved_hz,
           (unsigned long long)st.written, (unsigned long long)st.dropped,
           (unsigned long long)st.failed, (unsigned long long)st.missed, st.jitter_p50_us,
           st.jitter_p99_us, st.jitter_max_us);
    if (st.first_error[0])
        fprintf(stderr, "eeb power: the first failed read: %s\n", st.first_error);
    if (rc != EEB_OK)
        return eeb_cli_error(cmd, "%s (samples committed before it are in %s)", err, a->db);
    return EEB_EXIT_OK;
}

/* ---- summary ---- */

/* An invalid measurement cannot be judged; a valid one over P_max fails. */
static int summary_exit(const struct eeb_power_summary *s)
{
    if (!s->valid)
        return EEB_EXIT_INVALID;
    return !isnan(s->p_max_w) && !s->p_max_pass ? EEB_EXIT_FAIL : EEB_EXIT_OK;
}

static int summary(const char *path, int64_t run, double pmax, int as_json)
{
    char err[512];
    struct eeb_power_summary s;
    if (eeb_power_summarize(path, run, pmax, &s, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    const struct eeb_energy *e = &s.energy;
    int judged = !isnan(s.p_max_w);
    if (as_json) {
        json_t *o = json_pack(
            "{s:I, s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:b}",
            "run", (json_int_t)s.run, "source", s.source, "provenance", s.provenance, "window",
            s.window, "energy_j", e->joules, "seconds", e->seconds, "mean_w", e->mean_w, "peak_w",
            e->peak_w, "samples", (json_int_t)e->samples, "gaps", (json_int_t)e->gaps, "gap_s",
            e->gap_seconds, "achieved_hz", e->achieved_hz, "dropped", (json_int_t)s.dropped,
            "failed_reads", (json_int_t)s.failed, "missed_deadlines", (json_int_t)s.missed, "valid",
            s.valid);
        if (o && !s.valid)
            json_object_set_new(o, "invalid", json_string(s.invalid));
        if (o && judged) {
            json_object_set_new(o, "p_max_w", json_real(s.p_max_w));
            json_object_set_new(o, "p_max_pass", json_boolean(s.p_max_pass));
            json_object_set_new(o, "worst_window_w", json_real(s.worst_w));
            if (!s.p_max_pass)
                json_object_set_new(o, "p_max_reason", json_string(s.p_max_reason));
        }
        int rc = eeb_cli_print_json(cmd, o);
        return rc ? rc : summary_exit(&s);
    }
    printf("run %lld, %s (%s), window: %s\n", (long long)s.run, s.source,
           s.provenance[0] ? s.provenance : "provenance not recorded", s.window);
    printf("energy      %.3f J over %.3f s\n", e->joules, e->seconds);
    printf("power       mean %.3f W, peak %.3f W\n", e->mean_w, e->peak_w);
    printf("samples     %llu at %.1f Hz achieved%s; %llu dropped, %llu failed reads, %llu "
           "deadlines missed\n",
           (unsigned long long)e->samples, e->achieved_hz,
           s.rate_hz > 0 ? "" : " (nominal rate unrecorded)", (unsigned long long)s.dropped,
           (unsigned long long)s.failed, (unsigned long long)s.missed);
    printf("gaps        %llu, %.3f s in all\n", (unsigned long long)e->gaps, e->gap_seconds);
    printf("validity    %s%s\n", s.valid ? "valid" : "INVALID: ", s.valid ? "" : s.invalid);
    if (judged)
        printf("P_max       %.3f W: %s (worst 1 s window %.3f W)%s%s\n", s.p_max_w,
               s.p_max_pass ? "PASS" : "FAIL", s.worst_w, s.p_max_pass ? "" : "; ",
               s.p_max_pass ? "" : s.p_max_reason);
    return summary_exit(&s);
}

/* ---- export ---- */

struct export
{
    int json;
    json_t *rows;
    uint64_t n;
};

static void print_optional(double v)
{
    if (isnan(v))
        fputs(",", stdout);
    else
        printf(",%.9g", v);
}

static int export_sample(void *arg, const char *source, const struct eeb_sample *x)
{
    (void)source;
    struct export *ex = arg;
    ex->n++;
    if (!ex->json) {
        printf("%lld,%lld", (long long)x->t_mono_ns, (long long)x->t_utc_ns);
        print_optional(x->volts);
        print_optional(x->amps);
        printf(",%.9g\n", x->watts);
        return 0;
    }
    json_t *o = json_pack("{s:I, s:I, s:o, s:o, s:f}", "t_mono_ns", (json_int_t)x->t_mono_ns,
                          "t_utc_ns", (json_int_t)x->t_utc_ns, "volts",
                          isnan(x->volts) ? json_null() : json_real(x->volts), "amps",
                          isnan(x->amps) ? json_null() : json_real(x->amps), "watts", x->watts);
    return o && json_array_append_new(ex->rows, o) == 0 ? 0 : EEB_ENOMEM;
}

static int export_run(const char *path, int64_t run, int as_json)
{
    char err[512];
    struct eeb_rundb *db;
    if (eeb_rundb_open(path, EEB_RUNDB_READONLY, &db, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    struct eeb_run_row row;
    struct export ex = {as_json, as_json ? json_array() : NULL, 0};
    int rc = eeb_rundb_run_get(db, run, &row, err, sizeof err);
    if (rc == EEB_OK && !as_json)
        puts("t_mono_ns,t_utc_ns,volts,amps,watts");
    if (rc == EEB_OK)
        rc = eeb_rundb_samples_each(db, row.id, INT64_MIN, INT64_MAX, export_sample, &ex, err,
                                    sizeof err);
    if (rc == EEB_ENOMEM)
        snprintf(err, sizeof err, "%s: out of memory", path);
    eeb_rundb_close(db);
    if (rc == EEB_OK && as_json) {
        json_t *o = json_pack("{s:I, s:s, s:o}", "run", (json_int_t)row.id, "config", row.config,
                              "samples", ex.rows);
        ex.rows = NULL;
        rc = eeb_cli_print_json(cmd, o);
    }
    json_decref(ex.rows);
    eeb_rundb_run_row_free(&row);
    if (rc < 0)
        return eeb_cli_error(cmd, "%s", err);
    return rc;
}

/* ---- qualify ---- */

struct qualify_args {
    const char *board, *rail, *db;
    int json;
};

/* Tells the operator what each phase needs; without a load command, on a
 * terminal, waits for Enter (Ctrl-C stops). */
static void qualify_phase(void *arg, int phase, const char *name, const char *load)
{
    const struct eeb_qualify_config *c = arg;
    double s = c->windows * c->window_s;
    if (load)
        fprintf(stderr, "eeb power: %s: %d windows of %g s (%g s) under '%s'\n", name, c->windows,
                c->window_s, s, load);
    else if (phase == 0)
        fprintf(stderr, "eeb power: %s: %d windows of %g s (%g s); leave the board idle\n", name,
                c->windows, c->window_s, s);
    else
        fprintf(stderr, "eeb power: %s: %d windows of %g s (%g s); %s the board's load %d now\n",
                name, c->windows, c->window_s, s, phase == 1 ? "start" : "stop load 1 and start",
                phase);
    if (load || !isatty(0))
        return;
    fprintf(stderr, "eeb power: press Enter when it is ready (Ctrl-C stops) ");
    for (int ch = getchar(); ch != EOF && ch != '\n' && !interrupted;)
        ch = getchar();
}

static void print_qualify(const struct eeb_qualify_config *c, const struct eeb_qualify_result *r,
                          const struct qualify_args *q)
{
    printf("qualifying %s against %s", c->candidate, c->reference);
    if (q->db)
        printf(" (board %s, rail %s)", q->board, q->rail);
    printf("\n%d windows of %g s a phase, both read at %g Hz%s;\n"
           "a phase's figure is the Olympic mean of its windows (highest and lowest dropped)\n\n",
           r->windows, r->window_s, r->rate_hz,
           r->simulated ? ", replayed on a simulated clock" : "");
    printf("%-8s %13s %13s %11s  within %g %%\n", "phase", "reference W", "candidate W",
           "difference", 100 * r->tolerance);
    for (int p = 0; p < EEB_QUALIFY_PHASES; p++) {
        const struct eeb_qualify_phase *ph = &r->phase[p];
        printf("%-8s %13.3f %13.3f %+9.2f %%  %s\n", ph->name, ph->ref_mean_w, ph->cand_mean_w,
               100 * ph->difference, ph->within ? "yes" : "NO");
    }
    puts("\nwindow means, W (reference / candidate):");
    for (int p = 0; p < EEB_QUALIFY_PHASES; p++) {
        const struct eeb_qualify_phase *ph = &r->phase[p];
        printf("  %-7s", ph->name);
        for (int w = 0; w < r->windows; w++)
            printf(" %.3f/%.3f", ph->ref_w[w], ph->cand_w[w]);
        putchar('\n');
    }
    if (r->pass)
        printf("\nverdict: PASS: %s agrees with %s within %g %% in every phase\n", c->candidate,
               c->reference, 100 * r->tolerance);
    else
        printf("\nverdict: FAIL: %s differs from %s by more than %g %% in %s\n", c->candidate,
               c->reference, 100 * r->tolerance, r->failed);
}

static int qualify(struct eeb_qualify_config *c, struct qualify_args *q)
{
    char err[512], host[256];
    if (!q->board) {
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "unknown");
        host[sizeof host - 1] = '\0';
        q->board = host;
    }
    if (!q->rail)
        q->rail = c->candidate;
    /* a database that cannot take the verdict is said now, not after the phases */
    if (q->db && eeb_check_output(q->db, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    const char *ref = c->reference;
    if (eeb_power_uri_provenance(ref) != EEB_DECLARED && strncmp(ref, "ptd://", 6) != 0 &&
        strncmp(ref, "scpi://", 7) != 0)
        fprintf(stderr,
                "eeb power: warning: the reference %s is not a reference analyzer (ptd://, "
                "scpi://); MLPerf qualifies against a SPEC-grade meter\n",
                c->reference);
    c->stop = &interrupted;
    c->phase_begin = qualify_phase;
    c->arg = c;
    /* no SA_RESTART: Ctrl-C also ends the wait for Enter */
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct eeb_qualify_result r;
    if (eeb_power_qualify(c, &r, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    int64_t id = 0;
    if (q->db && eeb_power_qualify_store(q->db, q->board, q->rail, c, &r, &id, err, sizeof err))
        return eeb_cli_error(cmd, "%s (the verdict: %s)", err, r.pass ? "pass" : "fail");
    int verdict = r.pass ? EEB_EXIT_OK : EEB_EXIT_FAIL;
    if (q->json) {
        char *text = eeb_power_qualify_json(c, &r);
        json_t *o = text ? json_loads(text, 0, NULL) : NULL;
        free(text);
        if (o && q->db) {
            json_object_set_new(o, "board", json_string(q->board));
            json_object_set_new(o, "rail", json_string(q->rail));
            json_object_set_new(o, "db", json_string(q->db));
            json_object_set_new(o, "qualification", json_integer(id));
        }
        int rc = eeb_cli_print_json(cmd, o);
        return rc ? rc : verdict;
    }
    print_qualify(c, &r, q);
    if (q->db)
        printf("kept in %s as qualification %lld (board %s, rail %s)\n", q->db, (long long)id,
               q->board, q->rail);
    return verdict;
}

int eeb_cmd_power(int argc, char **argv)
{
    enum {
        O_SOURCE = 256,
        O_DB,
        O_RATE,
        O_DURATION,
        O_PMAX,
        O_RUN,
        O_CSV,
        O_JSON,
        O_SERVER,
        O_KEY,
        O_BOARD,
        O_RAIL,
        O_WINDOWS,
        O_WINDOW_S,
        O_LOAD1,
        O_LOAD2
    };
    static const struct option options[] = {
        {"source", required_argument, NULL, O_SOURCE},
        {"db", required_argument, NULL, O_DB},
        {"rate", required_argument, NULL, O_RATE},
        {"duration", required_argument, NULL, O_DURATION},
        {"pmax", required_argument, NULL, O_PMAX},
        {"run", required_argument, NULL, O_RUN},
        {"server", required_argument, NULL, O_SERVER},
        {"key", required_argument, NULL, O_KEY},
        {"board", required_argument, NULL, O_BOARD},
        {"rail", required_argument, NULL, O_RAIL},
        {"windows", required_argument, NULL, O_WINDOWS},
        {"window-s", required_argument, NULL, O_WINDOW_S},
        {"load1", required_argument, NULL, O_LOAD1},
        {"load2", required_argument, NULL, O_LOAD2},
        {"csv", no_argument, NULL, O_CSV},
        {"json", no_argument, NULL, O_JSON},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct log_args a = {.pmax = NAN}; /* rate 0: the meter's own (eeb_power_default_rate) */
    double run = 0, windows = 0;
    int c, rc = EEB_EXIT_OK, csv = 0, json = 0, rate_given = 0, window_given = 0;
    if (argc >= 2 && strcmp(argv[1], "emulate") == 0)
        return eeb_cmd_power_emulate(argc - 1, argv + 1);
    struct eeb_qualify_config qc;
    eeb_power_qualify_default(&qc);
    struct qualify_args qa = {0};
    opterr = 0;
    optind = 1;
    while (rc == EEB_EXIT_OK && (c = getopt_long(argc, argv, "hq", options, NULL)) != -1) {
        switch (c) {
        case O_SOURCE: a.source = optarg; break;
        case O_DB: a.db = optarg; break;
        case O_SERVER: a.server = optarg; break;
        case O_KEY: a.key = optarg; break;
        case O_RATE:
            rc = eeb_cli_number(cmd, "--rate", optarg, &a.rate);
            rate_given = 1;
            break;
        case O_BOARD: qa.board = optarg; break;
        case O_RAIL: qa.rail = optarg; break;
        case O_WINDOWS: rc = eeb_cli_count(cmd, "--windows", optarg, 3, 100, &windows); break;
        case O_WINDOW_S:
            rc = eeb_cli_number(cmd, "--window-s", optarg, &qc.window_s);
            window_given = 1;
            break;
        case O_LOAD1: qc.load[0] = optarg; break;
        case O_LOAD2: qc.load[1] = optarg; break;
        case O_DURATION: rc = eeb_cli_number(cmd, "--duration", optarg, &a.duration); break;
        case O_PMAX: rc = eeb_cli_number(cmd, "--pmax", optarg, &a.pmax); break;
        case O_RUN: rc = eeb_cli_count(cmd, "--run", optarg, 1, 1e18, &run); break;
        case O_CSV: csv = 1; break;
        case O_JSON: json = 1; break;
        case 'q': a.quiet = 1; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc != EEB_EXIT_OK)
        return rc;
    if (rate_given && !(a.rate >= 1 && a.rate <= 10000))
        return eeb_cli_usage_error(cmd, "--rate: %g (1..10000 Hz)", a.rate);
    if (a.duration < 0)
        return eeb_cli_usage_error(cmd, "--duration: %g (seconds, >= 0)", a.duration);
    if (!isnan(a.pmax) && a.pmax <= 0)
        return eeb_cli_usage_error(cmd, "--pmax: %g (watts, > 0)", a.pmax);
    if (optind >= argc)
        return eeb_cli_usage_error(
            cmd, "expected list, log, agent, summary, export, qualify or emulate");
    const char *action = argv[optind++];
    if (strcmp(action, "emulate") == 0)
        return eeb_cli_usage_error(cmd, "'emulate' comes first: eeb power emulate ptd [OPTIONS]");
    int nargs = argc - optind;
    int qualifying = strcmp(action, "qualify") == 0;
    if (!qualifying && (qa.board || qa.rail || windows || qc.load[0] || qc.load[1] || window_given))
        return eeb_cli_usage_error(cmd, "--board, --rail, --windows, --window-s, --load1 and "
                                        "--load2 go with 'qualify'");
    if (qualifying) {
        if (nargs != 2)
            return eeb_cli_usage_error(cmd, "'qualify' takes REF and CANDIDATE, two source URIs");
        if (a.source || a.server || a.key || run || csv || !isnan(a.pmax))
            return eeb_cli_usage_error(cmd, "'qualify' takes --windows, --window-s, --rate, "
                                            "--load1, --load2, --db, --board, --rail and --json");
        if ((qa.board || qa.rail) && !a.db)
            return eeb_cli_usage_error(cmd, "--board and --rail name what --db keeps");
        if (rate_given && a.rate > 100)
            return eeb_cli_usage_error(cmd, "--rate: %g (qualify reads at 1..100 Hz)", a.rate);
        if (!(qc.window_s > 0))
            return eeb_cli_usage_error(cmd, "--window-s: %g (seconds, > 0)", qc.window_s);
        qc.reference = argv[optind];
        qc.candidate = argv[optind + 1];
        qc.windows = windows ? (int)windows : qc.windows;
        qc.rate_hz = rate_given ? a.rate : qc.rate_hz;
        qa.db = a.db;
        qa.json = json;
        return qualify(&qc, &qa);
    }
    if (strcmp(action, "list") == 0)
        return nargs ? eeb_cli_usage_error(cmd, "'list' takes no arguments") : list();
    if (strcmp(action, "log") == 0) {
        if (nargs || !a.source || !a.db)
            return eeb_cli_usage_error(cmd, "'log' takes --source and --db, no arguments");
        if (a.server || a.key)
            return eeb_cli_usage_error(cmd, "--server and --key go with 'agent'");
        return log_power(&a);
    }
    if (strcmp(action, "agent") == 0) {
        if (nargs || !a.source || !a.db || !a.server || !a.key)
            return eeb_cli_usage_error(cmd, "'agent' takes --source, --db, --server and --key, "
                                            "no arguments");
        return log_power(&a);
    }
    if (strcmp(action, "summary") == 0) {
        if (nargs != 1)
            return eeb_cli_usage_error(cmd, "'summary' takes exactly one FILE");
        return summary(argv[optind], (int64_t)run, a.pmax, json);
    }
    if (strcmp(action, "export") == 0) {
        if (nargs != 1 || csv == json)
            return eeb_cli_usage_error(cmd, "'export' takes one FILE and --csv or --json");
        return export_run(argv[optind], (int64_t)run, json);
    }
    return eeb_cli_usage_error(
        cmd, "unknown action '%s' (expected list, log, agent, summary, export, qualify or emulate)",
        action);
}
