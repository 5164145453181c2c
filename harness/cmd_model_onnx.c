/*
 * cmd_model_onnx.c - `eeb model import` and `eeb model export`: a network
 * pre-trained anywhere, from ONNX, into a .eebm for a task (with a new
 * head when the task's classes differ), and a .eebm back to ONNX.
 */
#include "eeb_cli.h"
#include "fpga/net/eeb_model.h"
#include "fpga/net/eeb_onnx.h"
#include "tasks/eeb_shard.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_tasks.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const cmd = "model";

static void help(void)
{
    puts("Usage: eeb model import MODEL.onnx -o OUT.eebm --task TASK\n"
         "                 [--data FILE.eebd | --classes N] [options]\n"
         "       eeb model export FILE.eebm -o OUT.onnx\n"
         "\n"
         "  import  reads a network pre-trained elsewhere (an ONNX file, e.g. from\n"
         "          torch.onnx.export) into an eeb model for TASK: Conv, Gemm,\n"
         "          MatMul, Relu, MaxPool, AveragePool, GlobalAveragePool, Add,\n"
         "          Concat, Flatten, Reshape, Slice, Identity, Dropout, Constant, a\n"
         "          final Softmax; BatchNormalization folded into its Conv.  An\n"
         "          operator eeb cannot run is an error naming the node.  When the\n"
         "          task's classes differ from the network's outputs, its final\n"
         "          layer is replaced by a new head (random weights); the task's\n"
         "          loss follows it.  docs/onnx.md has the details.\n"
         "  export  writes an eeb model as ONNX (opset 13, float32 weights), its\n"
         "          output the loss layer's input\n"
         "\n"
         "Import options:\n"
         "  --task TASK        cls, det or video\n"
         "  --data FILE.eebd   the shard it will fine-tune on: its classes size the\n"
         "                     head, and its images must be the network's input\n"
         "  --classes N        the classes, without a shard (det: 5 + N outputs per cell)\n"
         "  --seed N           the new head's weights (default 1)\n"
         "  --mean R,G,B       the network was trained on (p/255 - mean)/std per\n"
         "  --std R,G,B        channel (torchvision: 0.485,0.456,0.406 and\n"
         "                     0.229,0.224,0.225): a first 1x1 conv computes it\n"
         "  --size H[xW]       the input's side where the file leaves it open\n"
         "  --format F         f32 (default) or fx24 for the written weights\n"
         "  -o, --out FILE     the model to write\n"
         "  -h, --help         show this help");
}

/* "0.485,0.456,0.406" into v; the count, or -1. */
static int parse_floats(const char *s, float *v, int max)
{
    int n = 0;
    while (n < max) {
        char *end;
        double d = strtod(s, &end);
        if (end == s || !(d > -1e6 && d < 1e6))
            return -1;
        v[n++] = (float)d;
        if (*end == '\0')
            return n;
        if (*end != ',')
            return -1;
        s = end + 1;
    }
    return -1;
}

static int parse_size(const char *s, int *h, int *w)
{
    char tail;
    if (sscanf(s, "%dx%d%c", h, w, &tail) == 2 || (sscanf(s, "%d%c", h, &tail) == 1 && (*w = *h)))
        return *h >= 1 && *h <= EEB_NET_MAX_DIM && *w >= 1 && *w <= EEB_NET_MAX_DIM ? 0 : -1;
    return -1;
}

struct import_args {
    const char *task, *data, *out, *mean, *std, *size;
    double classes, seed;
    enum eeb_format format;
};

static int import(const char *path, const struct import_args *a)
{
    const struct eeb_task_ops *ops = eeb_task_find(a->task);
    if (!ops)
        return eeb_cli_usage_error(cmd, "--task: '%s' (cls, det or video)", a->task);
    struct eeb_onnx_import_options o = {.loss = ops->loss, .seed = (uint64_t)a->seed};
    char err[1024];
    struct eeb_shard *shard = NULL;
    const struct eeb_shard_info *info = NULL;
    struct eeb_net *net = NULL;
    struct eeb_onnx_import_report rep;
    int classes = (int)a->classes, rc = EEB_EXIT_OK;
    if (a->data) {
        if (eeb_shard_open(&shard, a->data, err, sizeof err)) {
            rc = eeb_cli_error(cmd, "%s", err);
            goto out;
        }
        info = eeb_shard_info(shard);
        if (info->task != ops->task) {
            rc = eeb_cli_error(cmd, "%s holds %s records, not %s", a->data,
                               eeb_task_name(info->task), a->task);
            goto out;
        }
        if (classes && classes != info->classes) {
            rc = eeb_cli_usage_error(cmd, "--classes %d, but %s has %d", classes, a->data,
                                     info->classes);
            goto out;
        }
        classes = info->classes;
        o.height = info->h, o.width = info->w;
    }
    if (classes)
        o.outputs = ops->loss == EEB_LAYER_GRID_LOSS ? 5 + classes : classes;
    if (a->size && parse_size(a->size, &o.height, &o.width))
        rc = eeb_cli_usage_error(cmd, "--size: '%s' (H or HxW pixels)", a->size);
    if (!rc && (!a->mean != !a->std))
        rc = eeb_cli_usage_error(cmd, "--mean and --std go together");
    if (!rc && a->mean) {
        int nm = parse_floats(a->mean, o.mean, 8), ns = parse_floats(a->std, o.std, 8);
        int positive = ns > 0;
        for (int i = 0; i < ns; i++)
            positive &= o.std[i] > 0;
        if (nm < 1 || nm != ns || !positive)
            rc = eeb_cli_usage_error(cmd,
                                     "--mean '%s' and --std '%s': the same number of "
                                     "values, every std above 0",
                                     a->mean, a->std);
        o.normalize = 1, o.norm_channels = nm;
    }
    if (!rc && eeb_onnx_import_file(path, &o, &net, &rep, err, sizeof err))
        rc = eeb_cli_error(cmd, "%s", err);
    if (!rc && info && eeb_task_check_model(net, info, err, sizeof err))
        rc = eeb_cli_error(cmd, "%s: for %s: %s", path, a->data, err);
    if (!rc) {
        eeb_net_set_format(net, a->format);
        if (eeb_model_save(a->out, net, (int)ops->task, err, sizeof err))
            rc = eeb_cli_error(cmd, "%s", err);
    }
    if (rc)
        goto out;
    int learnable = 0;
    for (int i = 0; i < net->nlayers; i++)
        learnable += eeb_layer_learnable(&net->layers[i]);
    printf("%s: %d nodes (%s, opset %lld) -> %d layers, %d BatchNormalization%s folded\n", path,
           rep.nodes, rep.producer[0] != ' ' ? rep.producer : "producer unnamed",
           (long long)rep.opset, net->nlayers, rep.folded_bn, rep.folded_bn == 1 ? "" : "s");
    if (rep.new_head)
        printf("new head: %d outputs replace the file's %d (He-normal weights, seed %.0f)\n",
               o.outputs, rep.old_outputs, a->seed);
    printf("input %dx%dx%d%s; %llu parameters, %.3f G multiply-accumulates per item\n",
           net->input.h, net->input.w, net->input.c,
           o.normalize ? " (normalized by a first 1x1 conv)" : "",
           (unsigned long long)eeb_net_params(net), (double)eeb_net_macs(net) / 1e9);
    if (learnable > 1 && eeb_layer_learnable(&net->layers[net->nlayers - 2]))
        printf("%d learnable layers: --frozen %d trains the head alone\n", learnable,
               learnable - 1);
    printf("%s: %s model written\n", a->out, a->task);
out:
    eeb_shard_close(shard);
    eeb_net_free(net);
    return rc;
}

static int export(const char *path, const char *out)
{
    char err[1024];
    struct eeb_net *net;
    int task;
    if (eeb_model_load(path, &net, &task, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    int rc = eeb_onnx_export_file(net, out, err, sizeof err);
    eeb_net_free(net);
    if (rc)
        return eeb_cli_error(cmd, "%s: %s", out, err);
    printf("%s: ONNX (opset 13) written\n", out);
    return EEB_EXIT_OK;
}

int eeb_cmd_model_onnx(int argc, char **argv)
{
    enum { O_TASK = 256, O_DATA, O_CLASSES, O_SEED, O_MEAN, O_STD, O_SIZE, O_FORMAT };
    static const struct option options[] = {
        {"task", required_argument, NULL, O_TASK},
        {"data", required_argument, NULL, O_DATA},
        {"classes", required_argument, NULL, O_CLASSES},
        {"seed", required_argument, NULL, O_SEED},
        {"mean", required_argument, NULL, O_MEAN},
        {"std", required_argument, NULL, O_STD},
        {"size", required_argument, NULL, O_SIZE},
        {"format", required_argument, NULL, O_FORMAT},
        {"out", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *action = argv[1];
    int is_import = strcmp(action, "import") == 0;
    struct import_args a = {.seed = 1, .format = EEB_FORMAT_F32};
    int c, rc = EEB_EXIT_OK;
    opterr = 0;
    optind = 2;
    while (rc == EEB_EXIT_OK && (c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        if (!is_import && c != 'o' && c != 'h' && c != '?')
            return eeb_cli_usage_error(cmd, "'export' takes only -o: '%s'", argv[optind - 1]);
        switch (c) {
        case O_TASK: a.task = optarg; break;
        case O_DATA: a.data = optarg; break;
        case O_CLASSES:
            rc = eeb_cli_count(cmd, "--classes", optarg, 2, EEB_SHARD_MAX_CLASSES, &a.classes);
            break;
        case O_SEED:
            rc = eeb_cli_count(cmd, "--seed", optarg, 0, 9007199254740991.0, &a.seed);
            break;
        case O_MEAN: a.mean = optarg; break;
        case O_STD: a.std = optarg; break;
        case O_SIZE: a.size = optarg; break;
        case O_FORMAT:
            if (strcmp(optarg, "f32") == 0 || strcmp(optarg, "fx24") == 0)
                a.format = optarg[1] == '3' ? EEB_FORMAT_F32 : EEB_FORMAT_FX24;
            else
                rc = eeb_cli_usage_error(cmd, "--format: '%s' (f32 or fx24)", optarg);
            break;
        case 'o': a.out = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        case '?':
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc != EEB_EXIT_OK)
        return rc;
    if (argc - optind != 1 || !a.out)
        return eeb_cli_usage_error(cmd, "'%s' takes one %s and -o OUT", action,
                                   is_import ? "MODEL.onnx" : "FILE.eebm");
    char err[1024];
    if (eeb_check_output(a.out, err, sizeof err)) /* before the work */
        return eeb_cli_error(cmd, "%s", err);
    if (!is_import)
        return export(argv[optind], a.out);
    if (!a.task)
        return eeb_cli_usage_error(cmd, "'import' needs --task");
    return import(argv[optind], &a);
}
