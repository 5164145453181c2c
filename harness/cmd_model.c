/*
 * cmd_model.c - `eeb model info|pretrain|convert`: inspect .eebm model
 * files, make pre-trained ones with the float trainer, and convert them
 * between float32 and 24-bit fixed point.
 */
#include "fpga/accel/eeb_accel.h"
#include "eeb_cli.h"
#include "fpga/net/eeb_model.h"
#include "tasks/eeb_classes.h"
#include "tasks/eeb_tasks.h"
#include "tasks/eeb_train.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const cmd = "model";

static void help(void)
{
    puts("Usage: eeb model info [--json] FILE.eebm\n"
         "       eeb model pretrain --task TASK --data FILE.eebd -o OUT.eebm [options]\n"
         "       eeb model test FILE.eebm --data TEST.eebd [--backend NAME] [--pred PATH]\n"
         "                      [--train FILE.eebd] [--json]\n"
         "       eeb model convert FILE.eebm -o OUT.eebm --format f32|fx24\n"
         "       eeb model import MODEL.onnx -o OUT.eebm --task TASK [...]\n"
         "       eeb model export FILE.eebm -o OUT.onnx\n"
         "\n"
         "  info      the model's task, weight format, input, every layer (inputs,\n"
         "            window, output shape, parameters, fixed-point exponents) and\n"
         "            its size in parameters and multiply-accumulates per item\n"
         "  pretrain  trains the task's reference model from scratch on a shard\n"
         "            (the float32 trainer by default) and writes OUT after every\n"
         "            epoch, so an interrupted run keeps its last whole epoch; with\n"
         "            --init it fine-tunes that model instead\n"
         "  test      predicts a test shard and prints the task's metric: top-1 and\n"
         "            top-5 accuracy (cls, video) or VOC mAP@0.5 (det); --pred writes\n"
         "            the predictions as `eeb eval` reads them (a CSV file, or a\n"
         "            directory of comp4_det_test_<class>.txt); --train names the\n"
         "            shard the model was trained on, whose class names must be the\n"
         "            test shard's in the same order (the model file holds none, and\n"
         "            its outputs are classes by position)\n"
         "  convert   float32 -> fixed point (each tensor's exponent puts its\n"
         "            largest weight in [2^21, 2^22)) or back (exact)\n"
         "  import    a network pre-trained elsewhere, from ONNX, with a new head\n"
         "            for the task's classes (eeb model import --help)\n"
         "  export    the model as ONNX, to check it with another runtime\n"
         "\n"
         "Pretrain options:\n"
         "  --task TASK       cls, det or video (must match the shard)\n"
         "  --data FILE.eebd  training shard\n"
         "  -o, --out FILE    model to write\n"
         "  --epochs N        passes over the shard (default 10)\n"
         "  --steps N         stop after N batches (within --epochs passes)\n"
         "  --batch N         items per step (default 32)\n"
         "  --lr X            learning rate (default 0.01); --momentum (0.9),\n"
         "                    --decay (5e-4) likewise\n"
         "  --window N        shuffle window in records (default 1024)\n"
         "  --seed N          initial weights and shuffling (default 1)\n"
         "  --init FILE.eebm  start from this model (fine-tuning), not from scratch\n"
         "  --frozen N        leading learnable layers left untrained (default 0)\n"
         "  --backend NAME    fp32 (default), emu or kernel\n"
         "  --openblas        fp32 on OpenBLAS's GEMMs: faster, but the model's bytes\n"
         "                    then depend on the CPU (default: a portable GEMM, the\n"
         "                    same bytes on any machine)\n"
         "  --format F        f32 (default) or fx24 for the written weights\n"
         "  --threads N       the backend's threads: OpenBLAS's for fp32 (default 1:\n"
         "                    its threads contend on these small GEMMs), the\n"
         "                    emulator's workers (default one per core)\n"
         "\n"
         "Options:\n"
         "  --json            info as one JSON object\n"
         "  -h, --help        show this help");
}

static const char *format_name(enum eeb_format f)
{
    return f == EEB_FORMAT_FX24 ? "fx24" : "f32";
}

static int parse_format(const char *s, enum eeb_format *f)
{
    if (strcmp(s, "f32") == 0)
        *f = EEB_FORMAT_F32;
    else if (strcmp(s, "fx24") == 0)
        *f = EEB_FORMAT_FX24;
    else
        return eeb_cli_usage_error(cmd, "--format: '%s' (f32 or fx24)", s);
    return EEB_EXIT_OK;
}

static void input_name(const struct eeb_layer *l, int j, char *buf, size_t n)
{
    if (l->in[j] == EEB_NET_INPUT)
        snprintf(buf, n, "input");
    else if (l->in[j] == EEB_NET_NONE)
        buf[0] = '\0';
    else
        snprintf(buf, n, "%d", l->in[j]);
}

static uint64_t layer_params(const struct eeb_layer *l)
{
    return eeb_layer_learnable(l) ? (uint64_t)(l->rows + 1) * l->out.c : 0;
}

static int info_json(const char *path, const struct eeb_net *net, int task, long bytes)
{
    json_t *layers = json_array();
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        json_t *ins = json_array();
        for (int j = 0; j < 2; j++)
            if (l->in[j] != EEB_NET_NONE)
                json_array_append_new(ins, json_integer(l->in[j]));
        json_t *o = json_pack("{s:s, s:o, s:[i,i,i], s:I}", "kind", eeb_layer_kind_name(l->kind),
                              "inputs", ins, "out", l->out.h, l->out.w, l->out.c, "params",
                              (json_int_t)layer_params(l));
        if (l->kind == EEB_LAYER_CONV || l->kind == EEB_LAYER_MAXPOOL ||
            l->kind == EEB_LAYER_AVGPOOL) {
            json_object_set_new(o, "k", json_integer(l->k));
            json_object_set_new(o, "stride", json_integer(l->stride));
            json_object_set_new(o, "pad", json_integer(l->pad));
        }
        if (eeb_layer_learnable(l) && net->format == EEB_FORMAT_FX24) {
            json_object_set_new(o, "weight_exp", json_integer(l->we));
            json_object_set_new(o, "bias_exp", json_integer(l->be));
        }
        json_array_append_new(layers, o);
    }
    json_t *o =
        json_pack("{s:s, s:i, s:s, s:s, s:I, s:[i,i,i], s:I, s:I, s:o}", "file", path, "version",
                  EEB_MODEL_VERSION, "task", eeb_task_name_or_none(task), "format",
                  format_name(net->format), "bytes", (json_int_t)bytes, "input", net->input.h,
                  net->input.w, net->input.c, "params", (json_int_t)eeb_net_params(net),
                  "macs_per_item", (json_int_t)eeb_net_macs(net), "layers", layers);
    return eeb_cli_print_json(cmd, o);
}

static int info(const char *path, int as_json)
{
    char err[512];
    struct eeb_net *net;
    int task;
    if (eeb_model_load(path, &net, &task, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    struct stat st;
    long bytes = stat(path, &st) == 0 ? (long)st.st_size : -1;
    if (as_json) {
        int rc = info_json(path, net, task, bytes);
        eeb_net_free(net);
        return rc;
    }
    printf("%s: eeb model v%d, task %s, %s weights, %ld bytes\n", path, EEB_MODEL_VERSION,
           eeb_task_name_or_none(task),
           net->format == EEB_FORMAT_FX24 ? "24-bit fixed-point" : "float32", bytes);
    printf("input %dx%dx%d (h x w x c)\n\n", net->input.h, net->input.w, net->input.c);
    printf("%4s  %-10s  %-11s  %-9s  %-14s  %10s%s\n", "#", "layer", "inputs", "window", "output",
           "params", net->format == EEB_FORMAT_FX24 ? "  exp w/b" : "");
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        char in0[16], in1[16], ins[40], win[24] = "", out[32], exps[24] = "";
        input_name(l, 0, in0, sizeof in0);
        input_name(l, 1, in1, sizeof in1);
        snprintf(ins, sizeof ins, "%s%s%s", in0, in1[0] ? "," : "", in1);
        if (l->kind == EEB_LAYER_CONV || l->kind == EEB_LAYER_MAXPOOL ||
            l->kind == EEB_LAYER_AVGPOOL)
            snprintf(win, sizeof win, "%dx%d s%d p%d", l->k, l->k, l->stride, l->pad);
        snprintf(out, sizeof out, "%dx%dx%d", l->out.h, l->out.w, l->out.c);
        if (eeb_layer_learnable(l) && net->format == EEB_FORMAT_FX24)
            snprintf(exps, sizeof exps, "  %d/%d", l->we, l->be);
        printf("%4d  %-10s  %-11s  %-9s  %-14s  %10llu%s\n", i, eeb_layer_kind_name(l->kind), ins,
               win, out, (unsigned long long)layer_params(l), exps);
    }
    printf("\n%llu parameters, %.2f M multiply-accumulates per item (forward)\n",
           (unsigned long long)eeb_net_params(net), (double)eeb_net_macs(net) / 1e6);
    eeb_net_free(net);
    return EEB_EXIT_OK;
}

static int convert(const char *in, const char *out, enum eeb_format format)
{
    char err[512];
    struct eeb_net *net;
    int task;
    if (eeb_model_load(in, &net, &task, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    eeb_net_set_format(net, format);
    int rc = eeb_model_save(out, net, task, err, sizeof err);
    eeb_net_free(net);
    if (rc)
        return eeb_cli_error(cmd, "%s", err);
    printf("%s: %s weights written\n", out, format_name(format));
    return EEB_EXIT_OK;
}

/* The options: the training's, and what test and convert take. */
struct model_args {
    const char *task, *pred;
    const char *train; /* test: the model's training shard, its classes compared */
    struct eeb_pretrain p;
};

/* Trains the reference model; writes the model after every epoch. */
static int pretrain(struct model_args *a)
{
    char err[512];
    if (eeb_task_parse(a->task, &a->p.task, err, sizeof err))
        return eeb_cli_usage_error(cmd, "--task: %s", err);
    a->p.log = stderr;
    if (eeb_pretrain(&a->p, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    return EEB_EXIT_OK;
}

static void show_progress(uint64_t done, uint64_t total, void *arg)
{
    (void)arg;
    fprintf(stderr, "\reeb model: predicted %llu of %llu", (unsigned long long)done,
            (unsigned long long)total);
    if (done == total)
        fputc('\n', stderr);
}

/* The test stage: predicts the shard and prints the task's metric. */
static int test_model(const char *path, const struct model_args *a, int as_json)
{
    char err[512];
    struct eeb_net *net = NULL;
    struct eeb_accel *acc = NULL;
    int task, rc = EEB_EXIT_ERROR;
    struct eeb_task_eval_options opt;
    eeb_task_eval_defaults(&opt);
    opt.batch = a->p.cfg.batch_max;
    opt.predictions = a->pred;
    if (isatty(2) && !as_json)
        opt.progress = show_progress;
    struct eeb_task_score s;
    if ((a->train && eeb_classes_compare_files(a->train, a->p.data, err, sizeof err)) ||
        eeb_model_load(path, &net, &task, err, sizeof err) ||
        eeb_accel_start(a->p.backend, &a->p.cfg, net, &acc, err, sizeof err) ||
        eeb_task_evaluate(acc, net, a->p.data, &opt, &s, err, sizeof err))
        goto out;
    rc = EEB_EXIT_OK;
    int det = s.prediction == EEB_PREDICTION_BOXES; /* the shard's task reports boxes: mAP */
    double n = s.items ? (double)s.items : 1;
    if (as_json) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "model", path, "data", a->p.data, "backend",
                              acc->ops->name, "items", (json_int_t)s.items);
        if (o && det) {
            json_object_set_new(o, "detections", json_integer((json_int_t)s.detections));
            json_object_set_new(o, "map", isnan(s.map) ? json_null() : json_real(s.map));
            json_object_set_new(o, "iou", json_real(opt.iou));
        } else if (o) {
            json_object_set_new(o, "top1", json_real(s.topk.top1 / n));
            json_object_set_new(o, "top5", json_real(s.topk.top5 / n));
        }
        rc = eeb_cli_print_json(cmd, o);
    } else if (det) {
        printf("%s on %s (%s): %llu images, %llu detections\n", path, a->p.data, acc->ops->name,
               (unsigned long long)s.items, (unsigned long long)s.detections);
        printf("mAP    %.4f  (VOC all-point AP, IoU >= %g)\n", s.map, opt.iou);
    } else {
        printf("%s on %s (%s): %llu items\n", path, a->p.data, acc->ops->name,
               (unsigned long long)s.items);
        printf("top-1  %.4f  (%llu of %llu)\n", s.topk.top1 / n, (unsigned long long)s.topk.top1,
               (unsigned long long)s.items);
        printf("top-5  %.4f  (%llu of %llu)\n", s.topk.top5 / n, (unsigned long long)s.topk.top5,
               (unsigned long long)s.items);
    }
    if (a->pred)
        fprintf(stderr, "eeb model: predictions written to %s\n", a->pred);
out:
    if (rc == EEB_EXIT_ERROR)
        eeb_cli_error(cmd, "%s", err);
    eeb_accel_close(acc);
    eeb_net_free(net);
    return rc;
}

int eeb_cmd_model(int argc, char **argv)
{
    enum {
        O_TASK = 256,
        O_DATA,
        O_EPOCHS,
        O_STEPS,
        O_BATCH,
        O_LR,
        O_MOM,
        O_DECAY,
        O_WINDOW,
        O_SEED,
        O_BACKEND,
        O_FORMAT,
        O_INIT,
        O_FROZEN,
        O_PRED,
        O_THREADS,
        O_OPENBLAS,
        O_TRAIN,
        O_JSON
    };
    static const struct option options[] = {
        {"task", required_argument, NULL, O_TASK},
        {"data", required_argument, NULL, O_DATA},
        {"out", required_argument, NULL, 'o'},
        {"epochs", required_argument, NULL, O_EPOCHS},
        {"steps", required_argument, NULL, O_STEPS},
        {"batch", required_argument, NULL, O_BATCH},
        {"lr", required_argument, NULL, O_LR},
        {"momentum", required_argument, NULL, O_MOM},
        {"decay", required_argument, NULL, O_DECAY},
        {"window", required_argument, NULL, O_WINDOW},
        {"seed", required_argument, NULL, O_SEED},
        {"backend", required_argument, NULL, O_BACKEND},
        {"format", required_argument, NULL, O_FORMAT},
        {"init", required_argument, NULL, O_INIT},
        {"frozen", required_argument, NULL, O_FROZEN},
        {"pred", required_argument, NULL, O_PRED},
        {"threads", required_argument, NULL, O_THREADS},
        {"openblas", no_argument, NULL, O_OPENBLAS},
        {"train", required_argument, NULL, O_TRAIN},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    if (argc > 1 && (strcmp(argv[1], "import") == 0 || strcmp(argv[1], "export") == 0))
        return eeb_cmd_model_onnx(argc, argv);
    struct model_args a = {0};
    eeb_pretrain_defaults(&a.p);
    int c, rc = EEB_EXIT_OK, as_json = 0, have_format = 0;
    double batch = a.p.cfg.batch_max, frozen = 0, threads = 0;
    opterr = 0;
    optind = 1;
    while (rc == EEB_EXIT_OK && (c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case O_TASK: a.task = optarg; break;
        case O_DATA: a.p.data = optarg; break;
        case 'o': a.p.out = optarg; break;
        case O_EPOCHS: rc = eeb_cli_count(cmd, "--epochs", optarg, 1, 1e12, &a.p.epochs); break;
        case O_STEPS: rc = eeb_cli_count(cmd, "--steps", optarg, 1, 1e12, &a.p.steps); break;
        case O_BATCH: rc = eeb_cli_count(cmd, "--batch", optarg, 1, 65535, &batch); break;
        case O_WINDOW: rc = eeb_cli_count(cmd, "--window", optarg, 1, 1 << 20, &a.p.window); break;
        case O_SEED: rc = eeb_cli_count(cmd, "--seed", optarg, 0, 1e18, &a.p.seed); break;
        case O_LR: rc = eeb_cli_number(cmd, "--lr", optarg, &a.p.cfg.lr); break;
        case O_MOM: rc = eeb_cli_number(cmd, "--momentum", optarg, &a.p.cfg.momentum); break;
        case O_DECAY: rc = eeb_cli_number(cmd, "--decay", optarg, &a.p.cfg.weight_decay); break;
        case O_BACKEND: a.p.backend = optarg; break;
        case O_FORMAT: rc = parse_format(optarg, &a.p.format), have_format = 1; break;
        case O_INIT: a.p.init = optarg; break;
        case O_FROZEN: rc = eeb_cli_count(cmd, "--frozen", optarg, 0, 4096, &frozen); break;
        case O_PRED: a.pred = optarg; break;
        case O_TRAIN: a.train = optarg; break;
        case O_THREADS: rc = eeb_cli_count(cmd, "--threads", optarg, 0, 1024, &threads); break;
        case O_OPENBLAS: a.p.cfg.portable = 0; break;
        case O_JSON: as_json = 1; break;
        case 'h': help(); return EEB_EXIT_OK;
        case '?':
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc != EEB_EXIT_OK)
        return rc;
    char err[1024];
    if (a.p.out && eeb_check_output(a.p.out, err, sizeof err)) /* before the work */
        return eeb_cli_error(cmd, "%s", err);
    a.p.cfg.batch_max = (int)batch;
    a.p.cfg.frozen = (int)frozen;
    a.p.cfg.threads = (int)threads;
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "expected info, pretrain, test, convert, import or export");
    const char *action = argv[optind++];
    int nargs = argc - optind;
    if (strcmp(action, "info") == 0) {
        if (nargs != 1)
            return eeb_cli_usage_error(cmd, "'info' takes exactly one FILE");
        return info(argv[optind], as_json);
    }
    if (strcmp(action, "test") == 0) {
        if (nargs != 1 || !a.p.data)
            return eeb_cli_usage_error(cmd, "'test' takes FILE and --data");
        return test_model(argv[optind], &a, as_json);
    }
    if (strcmp(action, "convert") == 0) {
        if (nargs != 1 || !a.p.out || !have_format)
            return eeb_cli_usage_error(cmd, "'convert' takes FILE, -o OUT and --format");
        return convert(argv[optind], a.p.out, a.p.format);
    }
    if (strcmp(action, "pretrain") == 0) {
        if (nargs != 0)
            return eeb_cli_usage_error(cmd, "'pretrain' takes no FILE arguments: '%s'",
                                       argv[optind]);
        if (!a.task || !a.p.data || !a.p.out)
            return eeb_cli_usage_error(cmd, "'pretrain' needs --task, --data and -o");
        return pretrain(&a);
    }
    return eeb_cli_usage_error(
        cmd, "unknown action '%s' (expected info, pretrain, test, convert, import or export)",
        action);
}
