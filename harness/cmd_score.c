/*
 * cmd_score.c - `eeb score`: the four metrics and S of one run from its raw
 * figures (utilization, T, E, M_s), as text or JSON.  The utilization is
 * a report's or given fractions (--util), or an xclbin's own resources
 * (--xclbin), a --util given too held to agree with them.
 */
#include "eeb_cli.h"
#include "fpga/tools/eeb_xclbin.h"
#include "scoring/eeb_score.h"
#include "tasks/eeb_task_ops.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "score";

static void help(void)
{
    puts("Usage: eeb score --task TASK (--util REPORT|SPEC | --xclbin FILE) --time T\n"
         "                 --tmax T_MAX --energy E --pmax P_MAX --metric M_S [options]\n"
         "\n"
         "Computes the metrics of Tao et al. (eq. 3-5) and the score\n"
         "  S = 1 - [w_u*M_u + w_t*M_t + w_p*M_p + w_s*(1 - M_s)]\n"
         "for one run, or the failed verdict if its mean power exceeds P_max.\n"
         "\n"
         "Required:\n"
         "  --task TASK        cls, det or video\n"
         "  --util REPORT      the Vivado report_utilization text report of the whole\n"
         "                     design, placed or routed (UltraScale, Versal or\n"
         "                     7-series), or the four fractions as\n"
         "                     lut=0.30,ff=0.19,bram=0.49,dsp=0.19\n"
         "  --xclbin FILE      M_u from the resources the xclbin records\n"
         "                     (SYSTEM_METADATA: its compute units' routed figures);\n"
         "                     a --util given too must agree with them within 0.01\n"
         "                     per resource\n"
         "  --time T           fine-tune wall time, seconds (clamped to T_max)\n"
         "  --tmax T_MAX       time budget, seconds\n"
         "  --energy E         fine-tune energy, joules\n"
         "  --pmax P_MAX       power budget, watts\n"
         "  --metric M_S       top-5 accuracy (cls, video) or mAP@0.5 (det), in [0, 1]\n"
         "\n"
         "Options:\n"
         "  --weights WU,WT,WP,WS  override the rules' weights for the task\n"
         "                     (each in [0, 1], summing to 1)\n"
         "  --rules FILE       scoring rules file (default: the built-in v1 rules,\n"
         "                     scoring/rules/v1.json)\n"
         "  --json             print one JSON object instead of text\n"
         "  -h, --help         show this help\n"
         "\n" EEB_CLI_EXIT_HELP);
}

struct args {
    const char *task, *util, *xclbin, *rules, *weights;
    double t, t_max, energy, p_max, metric;
    int have; /* bit per required number, in option order */
    int json;
};

enum { OPT_TIME = 1, OPT_TMAX = 2, OPT_ENERGY = 4, OPT_PMAX = 8, OPT_METRIC = 16, OPT_ALL = 31 };

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option options[] = {
        {"task", required_argument, NULL, 'k'},
        {"util", required_argument, NULL, 'u'},
        {"time", required_argument, NULL, 't'},
        {"tmax", required_argument, NULL, 'T'},
        {"energy", required_argument, NULL, 'e'},
        {"pmax", required_argument, NULL, 'p'},
        {"metric", required_argument, NULL, 'm'},
        {"weights", required_argument, NULL, 'w'},
        {"rules", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"xclbin", required_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc, idx;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, &idx)) != -1) {
        double *num = NULL;
        int bit = 0;
        switch (c) {
        case 'k': a->task = optarg; break;
        case 'u': a->util = optarg; break;
        case 'x': a->xclbin = optarg; break;
        case 'w': a->weights = optarg; break;
        case 'r': a->rules = optarg; break;
        case 'j': a->json = 1; break;
        case 'h': help(); return -1;
        case 't': num = &a->t, bit = OPT_TIME; break;
        case 'T': num = &a->t_max, bit = OPT_TMAX; break;
        case 'e': num = &a->energy, bit = OPT_ENERGY; break;
        case 'p': num = &a->p_max, bit = OPT_PMAX; break;
        case 'm': num = &a->metric, bit = OPT_METRIC; break;
        case ':': return eeb_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
        if (num) {
            char opt[16];
            snprintf(opt, sizeof opt, "--%s", options[idx].name);
            if ((rc = eeb_cli_number(cmd, opt, optarg, num)))
                return rc;
            a->have |= bit;
        }
    }
    if (optind < argc)
        return eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    static const char *const required[] = {"--time", "--tmax", "--energy", "--pmax", "--metric"};
    if (!a->task)
        return eeb_cli_usage_error(cmd, "--task is required (cls, det or video)");
    if (!a->util && !a->xclbin)
        return eeb_cli_usage_error(
            cmd, "--util is required (a report file or lut=..,ff=..,bram=..,dsp=..), or --xclbin");
    for (int i = 0; i < 5; i++)
        if (!(a->have & (1 << i)))
            return eeb_cli_usage_error(cmd, "%s is required", required[i]);
    return 0;
}

/* Where the utilization came from: --util's file or figures, or the
 * xclbin's resources (source says which), and the figures themselves. */
struct util_from {
    struct eeb_util u;
    char label[600];  /* the report, or "fx.xclbin (SYSTEM_METADATA: ...)" */
    char source[400]; /* the xclbin's: "SYSTEM_METADATA: routed figures of ..." */
    int xclbin;       /* 1: the xclbin's */
};

/* The xclbin's resources, else (none recorded) --util, else the
 * utilization eeb's own writer embedded; given is --util's, NULL if none. */
static int util_from_xclbin(const struct args *a, const struct eeb_util *given,
                            struct util_from *from)
{
    char err[1024], given_name[600];
    char *source = from->source;
    const size_t source_len = sizeof from->source;
    struct eeb_xclbin_info *in;
    if (eeb_xclbin_read(a->xclbin, &in, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    if (given)
        snprintf(given_name, sizeof given_name, "%s %.500s",
                 strcmp(given->family, "given") == 0 ? "the given figures" : "the report", a->util);
    int rc = eeb_xclbin_m_u(in, a->xclbin, given, given_name, &from->u, source, source_len, err,
                            sizeof err);
    from->xclbin = rc != EEB_ENODATA || !given;
    if (rc == EEB_ENODATA && given) {
        from->u = *given;
        snprintf(from->label, sizeof from->label, "%s", a->util);
        rc = EEB_OK;
    } else if (rc == EEB_ENODATA) {
        char why[512];
        if ((rc = eeb_xclbin_util(in, &from->u, source, source_len, why, sizeof why)))
            snprintf(err, sizeof err,
                     "%s records no resources (SYSTEM_METADATA), and %s: give --util REPORT",
                     a->xclbin, why);
    }
    if (rc == EEB_OK && from->xclbin)
        snprintf(from->label, sizeof from->label, "%s (%s)", a->xclbin, source);
    eeb_xclbin_info_free(in);
    if (rc)
        return eeb_cli_error(cmd, "%s%s", rc == EEB_EINVAL ? "--util: " : "", err);
    return EEB_EXIT_OK;
}

static void print_text(const struct util_from *from, const struct args *a, enum eeb_task task,
                       const struct eeb_rules *rules, const struct eeb_score_input *in,
                       const struct eeb_score *s)
{
    static const char *const label[EEB_UTIL_COUNT] = {"LUT", "FF", "BRAM", "DSP"};
    const struct eeb_util *u = &from->u;
    printf("task         %s (M_s = %s), scoring rules v%s\n", eeb_task_name(task),
           eeb_task_metric(task), rules->version);
    if (from->xclbin)
        printf("utilization  %s%s%s%s: %s\n", a->xclbin, u->device[0] ? " (" : "", u->device,
               u->device[0] ? ")" : "", from->source);
    if (strcmp(u->family, "given") == 0) {
        printf("%s:", from->xclbin ? "  given" : "utilization  given");
        for (int k = 0; k < EEB_UTIL_COUNT; k++)
            printf(" %s %.4f", label[k], u->frac[k]);
        printf("\n");
    } else {
        if (!from->xclbin)
            printf("utilization  %s (%s%s%s)\n", from->label, u->family, u->device[0] ? ", " : "",
                   u->device);
        for (int k = 0; k < EEB_UTIL_COUNT; k++)
            if (u->line[k])
                printf("  %-5s      %.4f  %.10g / %.10g, line %d\n", label[k], u->frac[k],
                       u->used[k], u->available[k], u->line[k]);
            else
                printf("  %-5s      %.4f  %.10g / %.10g\n", label[k], u->frac[k], u->used[k],
                       u->available[k]);
    }
    printf("M_u          %.6f  mean utilization\n", s->m_u);
    printf("M_t          %.6f  T %.3f s / T_max %.3f s%s\n", s->m_t, s->t_s, in->t_max_s,
           s->t_clamped ? " (T clamped to T_max)" : "");
    printf("M_p          %.6f  E %.3f J / (P_max %.3f W x T %.3f s); mean power %.3f W\n", s->m_p,
           in->energy_j, in->p_max_w, s->t_s, s->mean_power_w);
    printf("M_s          %.6f  %s\n", s->m_s, eeb_task_metric(task));
    printf("weights      w_u %.4f  w_t %.4f  w_p %.4f  w_s %.4f%s\n", in->w.u, in->w.t, in->w.p,
           in->w.s, a->weights ? " (from --weights)" : "");
    if (s->pass) {
        printf("S            %.6f\n", s->s);
        printf("verdict      PASS\n");
    } else {
        printf("S            not computed\n");
        printf("verdict      FAIL: %s\n", s->reason);
    }
}

static int print_json(const struct util_from *from, const struct args *a, enum eeb_task task,
                      const struct eeb_rules *rules, const struct eeb_score_input *in,
                      const struct eeb_score *s)
{
    const struct eeb_util *u = &from->u;
    json_t *util = json_object();
    for (int k = 0; k < EEB_UTIL_COUNT; k++)
        json_object_set_new(util, eeb_score_util_name((enum eeb_util_kind)k),
                            json_real(u->frac[k]));
    json_object_set_new(
        util, "source",
        json_string(from->xclbin || strcmp(u->family, "given") ? from->label : "given"));
    /* the --util an xclbin's figures were checked against */
    json_object_set_new(util, "checked",
                        from->xclbin && a->util ? json_string(a->util) : json_null());
    json_object_set_new(util, "family", json_string(u->family));
    json_object_set_new(util, "device", json_string(u->device));
    const struct {
        const char *key;
        double value;
    } figures[] = {
        {"t_s", s->t_s},
        {"t_max_s", in->t_max_s},
        {"energy_j", in->energy_j},
        {"p_max_w", in->p_max_w},
        {"mean_power_w", s->mean_power_w},
        {"M_u", s->m_u},
        {"M_t", s->m_t},
        {"M_p", s->m_p},
        {"M_s", s->m_s},
    };
    json_t *o = json_object();
    json_object_set_new(o, "task", json_string(eeb_task_name(task)));
    json_object_set_new(o, "metric", json_string(eeb_task_metric(task)));
    json_object_set_new(o, "rules_version", json_string(rules->version));
    json_object_set_new(o, "utilization", util);
    json_object_set_new(
        o, "weights",
        json_pack("{s:f, s:f, s:f, s:f}", "u", in->w.u, "t", in->w.t, "p", in->w.p, "s", in->w.s));
    for (size_t i = 0; i < sizeof figures / sizeof figures[0]; i++)
        json_object_set_new(o, figures[i].key, json_real(figures[i].value));
    json_object_set_new(o, "t_clamped", json_boolean(s->t_clamped));
    json_object_set_new(o, "verdict", json_string(s->pass ? "PASS" : "FAIL"));
    json_object_set_new(o, "S", s->pass ? json_real(s->s) : json_null());
    if (!s->pass)
        json_object_set_new(o, "reason", json_string(s->reason));
    return eeb_cli_print_json(cmd, o);
}

int eeb_cmd_score(int argc, char **argv)
{
    struct args a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EEB_EXIT_OK : rc;

    char err[512];
    enum eeb_task task;
    struct eeb_rules rules;
    struct eeb_util given;
    struct util_from from = {.xclbin = 0};
    if (eeb_task_parse(a.task, &task, err, sizeof err))
        return eeb_cli_usage_error(cmd, "--task: %s", err);
    if (eeb_score_rules_load(a.rules, &rules, err, sizeof err) ||
        (a.util && eeb_score_util_arg(a.util, &given, NULL, err, sizeof err)))
        return eeb_cli_error(cmd, "%s", err);
    if (a.xclbin && (rc = util_from_xclbin(&a, a.util ? &given : NULL, &from)))
        return rc;
    if (!a.xclbin) {
        from.u = given;
        snprintf(from.label, sizeof from.label, "%s", a.util);
    }

    struct eeb_score_input in = {
        .m_u = eeb_score_m_u(&from.u),
        .t_s = a.t,
        .t_max_s = a.t_max,
        .energy_j = a.energy,
        .p_max_w = a.p_max,
        .m_s = a.metric,
        .w = rules.weights[task],
    };
    if (a.weights && eeb_score_weights_parse(a.weights, &in.w, err, sizeof err))
        return eeb_cli_error(cmd, "--weights: %s", err);
    struct eeb_score s;
    if (eeb_score_compute(&in, &s, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);

    if (a.json)
        rc = print_json(&from, &a, task, &rules, &in, &s);
    else
        print_text(&from, &a, task, &rules, &in, &s);
    if (rc)
        return rc;
    return s.pass ? EEB_EXIT_OK : EEB_EXIT_FAIL;
}
