/*
 * cmd_dse.c - `eeb dse`: DarkFPGA's design-space exploration.  Every PE
 * array that fits the board is run through the analytical model
 * (fpga/model) on the task's fine-tune schedule and scored as the benchmark
 * would score it; the Pareto front over time, energy and utilization and
 * the best S are printed.  Every number here is modeled.
 */
#include "eeb_cli.h"
#include "fpga/net/eeb_model.h"
#include "fpga/model/eeb_perf_calibrate.h"
#include "eeb_run.h"
#include "scoring/eeb_score.h"
#include "tasks/eeb_tasks.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "dse";

static void help(void)
{
    puts("Usage: eeb dse --model FILE.eebm --device BOARD --task TASK [options]\n"
         "       eeb dse --model FILE.eebm --task TASK --design K=V,... [--layers] [options]\n"
         "       eeb dse --calibration\n"
         "\n"
         "Explores PE arrays for fine-tuning the model on a board with the analytical\n"
         "model (fpga/model/README.md): PEs x MAC lanes, clock, DDR4 channels and the\n"
         "multiplier (a DSP, two int8 products per DSP, or LUTs), with buffers sized\n"
         "to the network.  Each design that fits the board is scored with the task's\n"
         "weights on its fine-tune schedule: T = steps x modeled step time (clamped to\n"
         "T_max), E = modeled power x T, M_u from the modeled resources.  The design\n"
         "does not change the arithmetic (every backend is bit-exact), so M_s is one\n"
         "number for all: give the one a run measured with --ms.  Prints the Pareto\n"
         "front over (T, E, P, M_u) of the designs within P_max, best S first.\n"
         "\n"
         "Options:\n"
         "  --model FILE       the .eebm to fine-tune (its layers, sizes and sparsity)\n"
         "  --device BOARD     kcu1500, zcu102, zcu104 or u250\n"
         "  --task TASK        cls, det or video: the rules' weights and the task's\n"
         "                     default schedule and budgets\n"
         "  --pmax W           the power budget (default: the task's)\n"
         "  --tmax S           the time budget (default: the task's)\n"
         "  --items N          fine-tune items per epoch (default: the task's)\n"
         "  --epochs N         passes (default: the task's)\n"
         "  --batch N          items per step (default 32)\n"
         "  --frozen N         leading learnable layers not trained (default 0)\n"
         "  --ms M             the task metric M_s in [0, 1] (default 1)\n"
         "  --rules FILE       a rules file (default: the built-in v1)\n"
         "  --design K=V,...   model this one design instead of exploring (keys as in\n"
         "                     fpga/model/README.md over " EEB_DESIGN_SEED001 ";\n"
         "                     buffers sized to the network unless given)\n"
         "  --layers           with --design: the per-layer, per-phase table\n"
         "  --calibration      the published KCU1500 design's per-layer times and\n"
         "                     resources (Wang, \"Efficiently Training CNN with\n"
         "                     FPGA\") beside the model's, with the residuals\n"
         "  --all              list every design that fits, not only the front\n"
         "  --top N            list the N best (default 20; 0: all; not with --json)\n"
         "  --json             one JSON object\n"
         "  -h, --help         show this help\n"
         "\n"
         "Exit status: 0, or 3 when no design stays within P_max; 1 error, 2 usage error.");
}

struct opts {
    const char *model, *device, *rules, *design;
    int task, layers, all, json, calibration;
    double top;
    double pmax, tmax, items, epochs, batch, frozen, ms;
    double *density; /* per learnable layer, measured once (every design reads the same) */
};

/* One design's prediction on the task. */
struct point {
    struct eeb_design d;
    struct eeb_resources res;
    double step_s, power_w, t_s, energy_j;
    int truncated; /* the schedule does not end within T_max */
    struct eeb_score score;
    int pareto;
};

static int evaluate(const struct opts *o, const struct eeb_net *net, const struct eeb_weights *w,
                    struct point *pt, char *err, size_t errlen)
{
    struct eeb_perf p;
    int rc =
        eeb_perf_model_at(&pt->d, net, o->density, (int)o->batch, (int)o->frozen, &p, err, errlen);
    if (rc)
        return rc;
    pt->res = p.res;
    pt->step_s = p.train_step_s;
    pt->power_w = p.train_power_w;
    eeb_perf_free(&p);
    double steps = o->epochs * ceil(o->items / o->batch);
    double t = steps * pt->step_s;
    pt->truncated = t > o->tmax;
    pt->t_s = fmin(t, o->tmax);
    pt->energy_j = pt->power_w * pt->t_s;
    struct eeb_score_input in = {pt->res.m_u, pt->t_s, o->tmax, pt->energy_j, o->pmax, o->ms, *w};
    return eeb_score_compute(&in, &pt->score, err, errlen);
}

/* The grid: PEs x MAC lanes x clocks x DDR channels x multipliers. */
static const int grid_pes[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128};
static const int grid_macs[] = {8, 16, 32, 64};
static const double grid_clocks[] = {100, 150, 200, 250, 300};
#define N_PES    (sizeof grid_pes / sizeof *grid_pes)
#define N_MACS   (sizeof grid_macs / sizeof *grid_macs)
#define N_CLOCKS (sizeof grid_clocks / sizeof *grid_clocks)
#define N_MULTS  3 /* enum eeb_mult */

/* Design i of the grid on dev (mixed radix), buffers sized to net. */
static void grid_design(size_t i, const struct eeb_device *dev, const struct eeb_net *net,
                        struct eeb_design *d)
{
    eeb_design_default(d);
    d->device = dev;
    d->mult = (enum eeb_mult)(i % N_MULTS), i /= N_MULTS;
    d->ddr = 1 + (int)(i % (size_t)dev->ddr_channels), i /= (size_t)dev->ddr_channels;
    d->clock_mhz = grid_clocks[i % N_CLOCKS], i /= N_CLOCKS;
    d->macs = grid_macs[i % N_MACS], i /= N_MACS;
    d->pes = grid_pes[i];
    eeb_perf_buffers(d, net, &d->acc_depth, &d->act_kib, &d->weight_kib);
}

/* Every grid design on the board that fits, modeled and scored. */
static struct point *explore(const struct opts *o, const struct eeb_net *net,
                             const struct eeb_weights *w, size_t *n, size_t *tried, char *err,
                             size_t errlen)
{
    const struct eeb_device *dev = eeb_device_find(o->device);
    *tried = N_PES * N_MACS * N_CLOCKS * (size_t)dev->ddr_channels * N_MULTS;
    *n = 0;
    struct point *pts = calloc(*tried, sizeof *pts);
    if (!pts) {
        eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < *tried; i++) {
        struct point *pt = &pts[*n];
        grid_design(i, dev, net, &pt->d);
        eeb_design_resources(&pt->d, &pt->res);
        if (!pt->res.fits)
            continue;
        if (evaluate(o, net, w, pt, err, errlen)) {
            free(pts);
            return NULL;
        }
        ++*n;
    }
    return pts;
}

/* a is no worse than b in T, E, P and M_u, and better in one.  S falls as
 * T, P or M_u rise, so the best S is always on the front; E is there
 * because it is what the benchmark is about. */
static int dominates(const struct point *a, const struct point *b)
{
    const double x[] = {a->t_s, a->energy_j, a->power_w, a->res.m_u};
    const double y[] = {b->t_s, b->energy_j, b->power_w, b->res.m_u};
    int le = 1, lt = 0;
    for (int i = 0; i < 4; i++)
        le &= x[i] <= y[i], lt |= x[i] < y[i];
    return le && lt;
}

static void mark_pareto(struct point *pts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pts[i].pareto = pts[i].score.pass;
        for (size_t j = 0; j < n && pts[i].pareto; j++)
            if (pts[j].score.pass && dominates(&pts[j], &pts[i]))
                pts[i].pareto = 0;
    }
}

static int by_s(const void *x, const void *y)
{
    const struct point *a = x, *b = y;
    double sa = a->score.pass ? a->score.s : -INFINITY, sb = b->score.pass ? b->score.s : -INFINITY;
    return sa < sb ? 1 : sa > sb ? -1 : (a->power_w > b->power_w) - (a->power_w < b->power_w);
}

static const char *mult_name(enum eeb_mult m)
{
    return m == EEB_MULT_DSP ? "dsp" : m == EEB_MULT_DSP2 ? "dsp2" : "lut";
}

static json_t *point_json(const struct point *pt)
{
    char spec[512], util[128];
    eeb_design_format(&pt->d, spec, sizeof spec);
    eeb_resources_spec(&pt->res, util, sizeof util);
    return json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:b, s:f, s:f, s:f, s:f, s:b, s:o, s:b}",
                     "design", spec, "util", util, "step_ms", pt->step_s * 1e3, "power_w",
                     pt->power_w, "t_s", pt->t_s, "energy_j", pt->energy_j, "truncated",
                     pt->truncated, "m_u", pt->score.m_u, "m_t", pt->score.m_t, "m_p",
                     pt->score.m_p, "m_s", pt->score.m_s, "pass", pt->score.pass, "s",
                     pt->score.pass ? json_real(pt->score.s) : json_null(), "pareto", pt->pareto);
}

static void print_head(void)
{
    printf("  %-5s %-4s %-5s %-4s %-4s  %9s %7s %8s %8s  %6s %6s %6s %6s\n", "PEs", "MACs", "MHz",
           "DDR", "mult", "step ms", "W", "T s", "E J", "M_u", "M_t", "M_p", "S");
}

static void print_point(const struct point *pt)
{
    char s[16] = "fail";
    if (pt->score.pass)
        snprintf(s, sizeof s, "%.4f", pt->score.s);
    printf("  %-5d %-4d %-5g %-4d %-4s  %9.3f %7.2f %8.2f%s %8.1f  %6.4f %6.4f %6.4f %6s\n",
           pt->d.pes, pt->d.macs, pt->d.clock_mhz, pt->d.ddr, mult_name(pt->d.mult),
           pt->step_s * 1e3, pt->power_w, pt->t_s, pt->truncated ? "+" : " ", pt->energy_j,
           pt->score.m_u, pt->score.m_t, pt->score.m_p, s);
}

static void print_layers(const struct eeb_net *net, const struct eeb_perf *p)
{
    printf("\n  %-3s %-6s %-15s %5s", "#", "layer", "shape", "kept");
    for (int ph = 0; ph < EEB_PHASES; ph++)
        printf("  %-10s %9s %s %5s", eeb_phase_name((enum eeb_phase)ph), "us", "b", "util");
    putchar('\n');
    for (int i = 0; i < p->nlayers; i++) {
        const struct eeb_layer_cost *c = &p->layers[i];
        char shape[32];
        snprintf(shape, sizeof shape, "%dx%d %d>%d", c->h, c->w, c->cin, c->cout);
        printf("  %-3d %-6s %-15s %5.3f", c->layer, eeb_layer_kind_name(net->layers[c->layer].kind),
               shape, c->density);
        for (int ph = 0; ph < EEB_PHASES; ph++) {
            const struct eeb_phase_cost *pc = &c->phase[ph];
            if (pc->runs)
                printf("  %-10s %9.1f %c %4.0f%%", "", pc->time_s * 1e6, pc->bound, 100 * pc->util);
            else
                printf("  %-10s %9s %s %5s", "", "-", "-", "-");
        }
        putchar('\n');
    }
}

/* --calibration: the model beside the published KCU1500 table. */
static int calibration(int as_json)
{
    char err[512];
    struct eeb_design d;
    eeb_design_default(&d);
    struct eeb_net *net = eeb_seed001_vgg11();
    struct eeb_perf p;
    if (!net)
        return eeb_cli_error(cmd, "out of memory");
    int rc = eeb_perf_model(&d, net, 32, 0, &p, err, sizeof err);
    eeb_net_free(net);
    if (rc)
        return eeb_cli_error(cmd, "%s", err);
    json_t *rows = json_array();
    double worst = 0;
    if (!as_json)
        printf("the published KCU1500 design (%s), VGG-11 32x32, batch 32 -- modeled vs "
               "published\n"
               "  %-8s %5s  %-26s %-26s %-26s\n",
               EEB_DESIGN_SEED001, "layer", "kept", "fwd us (pub., model, err)", "bwd_data us",
               "bwd_weight us");
    for (int i = 0; i < p.nlayers; i++) {
        const struct eeb_seed001_row *r = &eeb_seed001_table[i];
        const struct eeb_layer_cost *c = &p.layers[i];
        json_t *phases = json_object();
        if (!as_json)
            printf("  %-8s %5.3f ", r->name, c->density);
        for (int ph = 0; ph < EEB_PHASES; ph++) {
            const struct eeb_phase_cost *pc = &c->phase[ph];
            if (!pc->runs) {
                if (!as_json)
                    printf(" %-26s", "-");
                continue;
            }
            double us = pc->time_s * 1e6, e = us / r->time_us[ph] - 1;
            worst = fmax(worst, fabs(e));
            if (!as_json)
                printf(" %5.0f %6.0f %+6.1f%% %c/%c   ", r->time_us[ph], us, 100 * e, r->bound[ph],
                       pc->bound);
            json_object_set_new(phases, eeb_phase_name((enum eeb_phase)ph),
                                json_pack("{s:f, s:f, s:f, s:s#, s:s#, s:f}", "published_us",
                                          r->time_us[ph], "model_us", us, "error", e,
                                          "published_bound", &r->bound[ph], 1, "model_bound",
                                          &pc->bound, 1, "model_util", pc->util));
        }
        if (!as_json)
            putchar('\n');
        json_array_append_new(rows, json_pack("{s:s, s:f, s:o}", "layer", r->name, "kept",
                                              c->density, "phases", phases));
    }
    const struct eeb_seed001_resources *s = &eeb_seed001_used;
    if (!as_json) {
        printf("  worst time error %.1f %%; step %.2f ms, %.2f W modeled (published: 29 W)\n"
               "  resources: LUT %.0f (published %.0f), FF %.0f (%.0f), BRAM %.0f (%.0f), DSP %.0f "
               "(%.0f)\n",
               100 * worst, p.train_step_s * 1e3, p.train_power_w, p.res.lut, s->lut, p.res.ff,
               s->ff, p.res.bram, s->bram, p.res.dsp, s->dsp);
        json_decref(rows);
        eeb_perf_free(&p);
        return EEB_EXIT_OK;
    }
    json_t *o = json_pack("{s:b, s:s, s:o, s:f, s:f, s:f, s:{s:f, s:f, s:f, s:f}}", "modeled", 1,
                          "design", EEB_DESIGN_SEED001, "layers", rows, "worst_error", worst,
                          "step_ms", p.train_step_s * 1e3, "power_w", p.train_power_w, "resources",
                          "lut", p.res.lut, "ff", p.res.ff, "bram", p.res.bram, "dsp", p.res.dsp);
    eeb_perf_free(&p);
    return eeb_cli_print_json(cmd, o);
}

static int one_design(const struct opts *o, const struct eeb_net *net, const struct eeb_weights *w)
{
    char err[512];
    struct point pt = {0};
    if (eeb_design_for(&pt.d, o->design, net, err, sizeof err) ||
        evaluate(o, net, w, &pt, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    pt.pareto = pt.score.pass;
    if (o->json)
        return eeb_cli_print_json(cmd,
                                  json_pack("{s:b, s:o}", "modeled", 1, "design", point_json(&pt)));
    char spec[512];
    eeb_design_format(&pt.d, spec, sizeof spec);
    printf("modeled: %s\n", spec);
    if (!pt.res.fits)
        printf("  does not fit the %s: LUT %.0f%%, FF %.0f%%, BRAM %.0f%%, DSP %.0f%%\n",
               pt.d.device->name, 100 * pt.res.frac[0], 100 * pt.res.frac[1], 100 * pt.res.frac[2],
               100 * pt.res.frac[3]);
    print_head();
    print_point(&pt);
    if (!pt.score.pass)
        printf("  %s\n", pt.score.reason);
    if (o->layers) {
        struct eeb_perf p;
        if (eeb_perf_model_at(&pt.d, net, o->density, (int)o->batch, (int)o->frozen, &p, err,
                              sizeof err))
            return eeb_cli_error(cmd, "%s", err);
        print_layers(net, &p);
        eeb_perf_free(&p);
    }
    return EEB_EXIT_OK;
}

static int explore_and_print(const struct opts *o, const struct eeb_net *net,
                             const struct eeb_weights *w)
{
    char err[512];
    size_t n, tried;
    struct point *pts = explore(o, net, w, &n, &tried, err, sizeof err);
    if (!pts)
        return eeb_cli_error(cmd, "%s", err);
    mark_pareto(pts, n);
    qsort(pts, n, sizeof *pts, by_s);
    size_t passing = 0, front = 0;
    for (size_t i = 0; i < n; i++)
        passing += pts[i].score.pass, front += pts[i].pareto;
    int status = EEB_EXIT_OK;
    if (o->json) {
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++)
            if (pts[i].pareto || o->all)
                json_array_append_new(list, point_json(&pts[i]));
        status = eeb_cli_print_json(
            cmd, json_pack("{s:b, s:s, s:s, s:f, s:f, s:f, s:I, s:I, s:I, s:o, s:o}", "modeled", 1,
                           "task", eeb_task_name(o->task), "device", o->device, "p_max_w", o->pmax,
                           "t_max_s", o->tmax, "m_s", o->ms, "tried", (json_int_t)tried, "fit",
                           (json_int_t)n, "within_pmax", (json_int_t)passing, "designs", list,
                           "best", passing ? point_json(&pts[0]) : json_null()));
    } else {
        printf("modeled: %zu designs tried on the %s, %zu fit, %zu within P_max %g W; "
               "%s, T_max %g s, M_s %g (--ms)\n",
               tried, o->device, n, passing, o->pmax, eeb_task_name(o->task), o->tmax, o->ms);
        printf("%s (+: the schedule is cut at T_max)\n",
               o->all ? "every design that fits, best S first"
                      : "Pareto front over T, E, P and M_u, best S first");
        print_head();
        size_t shown = 0, listed = o->all ? n : front;
        for (size_t i = 0; i < n; i++)
            if ((pts[i].pareto || o->all) && (o->top == 0 || shown < o->top))
                print_point(&pts[i]), shown++;
        if (shown < listed)
            printf("  ... %zu more (--top 0 shows all)\n", listed - shown);
        if (passing) {
            char spec[512];
            eeb_design_format(&pts[0].d, spec, sizeof spec);
            printf("best: S %.4f with %s\n", pts[0].score.s, spec);
        } else {
            printf("no design on the %s stays within P_max %g W\n", o->device, o->pmax);
        }
    }
    if (!passing)
        status = EEB_EXIT_FAIL;
    free(pts);
    return status;
}

int eeb_cmd_dse(int argc, char **argv)
{
    enum {
        O_MODEL = 256,
        O_DEVICE,
        O_TASK,
        O_PMAX,
        O_TMAX,
        O_ITEMS,
        O_EPOCHS,
        O_BATCH,
        O_FROZEN,
        O_MS,
        O_RULES,
        O_DESIGN,
        O_LAYERS,
        O_CALIBRATION,
        O_ALL,
        O_TOP,
        O_JSON
    };
    static const struct option options[] = {{"model", 1, 0, O_MODEL},
                                            {"device", 1, 0, O_DEVICE},
                                            {"task", 1, 0, O_TASK},
                                            {"pmax", 1, 0, O_PMAX},
                                            {"tmax", 1, 0, O_TMAX},
                                            {"items", 1, 0, O_ITEMS},
                                            {"epochs", 1, 0, O_EPOCHS},
                                            {"batch", 1, 0, O_BATCH},
                                            {"frozen", 1, 0, O_FROZEN},
                                            {"ms", 1, 0, O_MS},
                                            {"rules", 1, 0, O_RULES},
                                            {"design", 1, 0, O_DESIGN},
                                            {"layers", 0, 0, O_LAYERS},
                                            {"calibration", 0, 0, O_CALIBRATION},
                                            {"all", 0, 0, O_ALL},
                                            {"top", 1, 0, O_TOP},
                                            {"json", 0, 0, O_JSON},
                                            {"help", 0, 0, 'h'},
                                            {0, 0, 0, 0}};
    struct opts o = {.task = -1,
                     .pmax = NAN,
                     .tmax = NAN,
                     .items = NAN,
                     .epochs = NAN,
                     .batch = 32,
                     .ms = 1,
                     .top = 20};
    char err[512];
    int c, rc = 0;
    optind = 1;
    while (rc == 0 && (c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case O_MODEL: o.model = optarg; break;
        case O_DEVICE: o.device = optarg; break;
        case O_TASK: {
            enum eeb_task t;
            if (eeb_task_parse(optarg, &t, err, sizeof err))
                return eeb_cli_usage_error(cmd, "--task: %s", err);
            o.task = (int)t;
            break;
        }
        case O_PMAX: rc = eeb_cli_number(cmd, "--pmax", optarg, &o.pmax); break;
        case O_TMAX: rc = eeb_cli_number(cmd, "--tmax", optarg, &o.tmax); break;
        case O_ITEMS: rc = eeb_cli_count(cmd, "--items", optarg, 1, 1e9, &o.items); break;
        case O_EPOCHS: rc = eeb_cli_count(cmd, "--epochs", optarg, 1, 1e6, &o.epochs); break;
        case O_BATCH: rc = eeb_cli_count(cmd, "--batch", optarg, 1, 4096, &o.batch); break;
        case O_FROZEN: rc = eeb_cli_count(cmd, "--frozen", optarg, 0, 1e4, &o.frozen); break;
        case O_MS: rc = eeb_cli_number(cmd, "--ms", optarg, &o.ms); break;
        case O_RULES: o.rules = optarg; break;
        case O_DESIGN: o.design = optarg; break;
        case O_LAYERS: o.layers = 1; break;
        case O_CALIBRATION: o.calibration = 1; break;
        case O_ALL: o.all = 1; break;
        case O_TOP: rc = eeb_cli_count(cmd, "--top", optarg, 0, 1e6, &o.top); break;
        case O_JSON: o.json = 1; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option");
        }
    }
    if (rc)
        return rc;
    if (optind < argc)
        return eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (o.calibration)
        return calibration(o.json);
    if (!o.model)
        return eeb_cli_usage_error(cmd, "--model FILE.eebm is required");
    if (o.task < 0)
        return eeb_cli_usage_error(cmd, "--task is required (cls, det or video)");
    char boards[128];
    if (!o.design && !o.device)
        return eeb_cli_usage_error(cmd, "--device is required (%s)",
                                   eeb_device_names(boards, sizeof boards, ", "));
    if (o.device && !eeb_device_find(o.device))
        return eeb_cli_usage_error(cmd, "--device '%s' is not %s", o.device,
                                   eeb_device_names(boards, sizeof boards, " or "));
    if (o.layers && !o.design)
        return eeb_cli_usage_error(cmd, "--layers needs --design");
    if (!(o.ms >= 0 && o.ms <= 1))
        return eeb_cli_usage_error(cmd, "--ms must be in [0, 1]");
    if (!(isnan(o.pmax) || o.pmax > 0) || !(isnan(o.tmax) || o.tmax > 0))
        return eeb_cli_usage_error(cmd, "--pmax and --tmax must be positive");
    const struct eeb_task_profile *prof = eeb_task_profile((enum eeb_task)o.task);
    if (isnan(o.pmax))
        o.pmax = prof->p_max_w;
    if (isnan(o.tmax))
        o.tmax = prof->t_max_s;
    if (isnan(o.items))
        o.items = prof->finetune_n;
    if (isnan(o.epochs))
        o.epochs = prof->epochs;
    struct eeb_rules rules;
    if (eeb_score_rules_load(o.rules, &rules, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    struct eeb_net *net = NULL;
    int task;
    if (eeb_model_load(o.model, &net, &task, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    if (task != o.task)
        fprintf(stderr, "eeb dse: note: %s was made for %s, scored here as %s\n", o.model,
                eeb_task_name((enum eeb_task)task), eeb_task_name((enum eeb_task)o.task));
    const struct eeb_weights *w = &rules.weights[o.task];
    o.density = malloc(((size_t)net->nlayers + 1) * sizeof *o.density);
    if (!o.density) {
        eeb_net_free(net);
        return eeb_cli_error(cmd, "out of memory");
    }
    eeb_perf_densities(net, o.density);
    int status = o.design ? one_design(&o, net, w) : explore_and_print(&o, net, w);
    free(o.density);
    eeb_net_free(net);
    return status;
}
