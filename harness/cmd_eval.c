/*
 * cmd_eval.c - `eeb eval`: a task's metric from standard prediction files,
 * top-1/top-5 for classification and video, Pascal VOC AP for detection.
 */
#include "eeb_cli.h"
#include "common/eeb_common.h"
#include "tasks/eeb_classes.h"
#include "tasks/eeb_metrics.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_voc.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const cmd = "eval";

#define RESULT_PREFIX "comp4_det_test_"

static void help(void)
{
    puts("Usage: eeb eval --task cls|video --gt FILE.eebd --pred FILE.csv [--train FILE.eebd]\n"
         "                [--json]\n"
         "       eeb eval --task det --gt DIR|FILE.eebd --pred DIR [--image-set FILE]\n"
         "                [--train FILE.eebd] [--iou X] [--07] [--json]\n"
         "\n"
         "Classification and video: top-1 and top-5 accuracy.  FILE.csv has a line\n"
         "per item: its record id, then its predicted classes, best first, comma-\n"
         "separated, each a class name from the shard or its 0-based index (a first\n"
         "line 'id,...' is a header; '#' starts a comment line).  Items without a\n"
         "line count as wrong, and are reported.\n"
         "\n"
         "Detection: average precision per class and their mean, as the Pascal VOC\n"
         "devkit computes them.  --pred DIR holds devkit result files\n"
         "comp4_det_test_<class>.txt, lines 'image_id confidence xmin ymin xmax\n"
         "ymax' in 1-based inclusive pixels; a class without a file has no\n"
         "detections.  --gt is a VOC Annotations/ directory (image id = file name\n"
         "without .xml) or a detection shard.  A class without ground truth has no\n"
         "AP (n/a) and is left out of the mean.  An object's <difficult> is 1, 0\n"
         "or empty (any other value, such as 'true', is an error), and its <name>\n"
         "may not hold '/', ',' or a control character, or be '.' or '..'.\n"
         "\n"
         "Only an image set's images are scored, as the devkit scores them: when\n"
         "--gt is the Annotations/ folder of a VOC layout, which keeps trainval and\n"
         "test annotations together, the set is ImageSets/Main/test.txt beside it\n"
         "(said on stderr, with its size); --image-set FILE names another (an id a\n"
         "line, or a per-class list's 'id 1|-1|0' lines).  A layout whose\n"
         "ImageSets/Main has no test.txt (VOC2012, VOC2007 trainval) is refused\n"
         "without --image-set, listing its sets: its annotations mix the splits.\n"
         "With no ImageSets/ folder, every annotation counts (said on stderr); with\n"
         "a shard, every record.  A detection for an image outside the set, or an\n"
         "id of the set without an annotation, is an error.\n"
         "\n"
         "--train names the shard the model was trained or fine-tuned on: a model's\n"
         "outputs are classes by position, and its file holds no class names, so\n"
         "the shard's class names must be --gt's, in the same order (--gt must be a\n"
         "shard).  A mismatch is an error naming both files and the first class\n"
         "that differs.\n"
         "\n"
         "Options:\n"
         "  --task TASK    cls, det or video\n"
         "  --gt PATH      the ground truth\n"
         "  --pred PATH    the predictions\n"
         "  --image-set FILE\n"
         "                 det: score only these images (default: the VOC layout's\n"
         "                 ImageSets/Main/test.txt, if --gt is its Annotations/)\n"
         "  --train FILE.eebd\n"
         "                 the model's training shard: its classes must be --gt's\n"
         "  --iou X        det: the least IoU of a hit (default 0.5)\n"
         "  --07           det: VOC2007's 11-point AP (default: every point, VOC2010+)\n"
         "  --json         one JSON object\n"
         "  -h, --help     show this help");
}

struct args {
    const char *task, *gt, *pred;
    const char *image_set; /* det: --image-set, or NULL */
    const char *train;     /* --train: the model's training shard, or NULL */
    double iou;
    int voc07, json;
};

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option options[] = {
        {"task", required_argument, NULL, 'k'},
        {"gt", required_argument, NULL, 'g'},
        {"pred", required_argument, NULL, 'p'},
        {"iou", required_argument, NULL, 'i'},
        {"07", no_argument, NULL, '7'},
        {"json", no_argument, NULL, 'j'},
        {"image-set", required_argument, NULL, 's'},
        {"train", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
        switch (c) {
        case 'k': a->task = optarg; break;
        case 'g': a->gt = optarg; break;
        case 'p': a->pred = optarg; break;
        case 's': a->image_set = optarg; break;
        case 't': a->train = optarg; break;
        case '7': a->voc07 = 1; break;
        case 'j': a->json = 1; break;
        case 'h': help(); return -1;
        case 'i':
            if ((rc = eeb_cli_number(cmd, "--iou", optarg, &a->iou)))
                return rc;
            if (a->iou <= 0 || a->iou > 1)
                return eeb_cli_usage_error(cmd, "--iou: %s is not in (0, 1]", optarg);
            break;
        case ':': return eeb_cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return eeb_cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
    if (!a->task)
        return eeb_cli_usage_error(cmd, "--task is required (cls, det or video)");
    if (!a->gt || !a->pred)
        return eeb_cli_usage_error(cmd, "--gt and --pred are required");
    return 0;
}

static int eval_topk(const struct args *a, const struct eeb_task_ops *task)
{
    char err[512];
    struct eeb_topk t;
    uint64_t missing;
    if (eeb_topk_eval_csv(a->gt, a->pred, &t, &missing, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    double n = t.items ? (double)t.items : 1;
    if (missing)
        fprintf(stderr, "eeb %s: %llu of %llu items have no prediction line; counted as wrong\n",
                cmd, (unsigned long long)missing, (unsigned long long)t.items);
    if (a->json)
        return eeb_cli_print_json(
            cmd, json_pack("{s:s, s:I, s:f, s:f, s:I, s:I, s:I}", "task", eeb_task_name(task->task),
                           "items", (json_int_t)t.items, "top1", t.top1 / n, "top5", t.top5 / n,
                           "top1_hits", (json_int_t)t.top1, "top5_hits", (json_int_t)t.top5,
                           "missing", (json_int_t)missing));
    printf("top-1  %.4f  (%llu of %llu)\n", t.top1 / n, (unsigned long long)t.top1,
           (unsigned long long)t.items);
    printf("top-5  %.4f  (%llu of %llu)\n", t.top5 / n, (unsigned long long)t.top5,
           (unsigned long long)t.items);
    return EEB_EXIT_OK;
}

/* One class: its result file in dir (none: no detections) against truth. */
static int eval_class(const char *dir, const char *name, const struct eeb_voc_truth_set *t,
                      const struct eeb_voc_truth *truth, int ntruth, const struct args *a,
                      struct eeb_voc_class_result *r, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" RESULT_PREFIX "%s.txt", dir, name);
    struct eeb_voc_detection *det = NULL;
    int ndet = 0, rc = EEB_OK;
    if (access(path, F_OK) == 0 && (rc = eeb_voc_read_results(path, t, &det, &ndet, err, errlen)))
        return rc;
    rc = eeb_voc_class_ap(truth, ntruth, det, ndet, a->iou,
                          a->voc07 ? EEB_VOC_AP_11_POINTS : EEB_VOC_AP_ALL_POINTS, r);
    free(det);
    if (rc)
        eeb_errf(err, errlen, rc, "%s: out of memory", path);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The classes to report: the ground truth's, then any with a result file
 * but no ground truth at all (sorted, as readdir's order is not). */
static int list_classes(const char *dir, const struct eeb_voc_truth_set *t, char ***names, int *n,
                        char *err, size_t errlen)
{
    *names = malloc((size_t)(t->nclasses + 1) * sizeof **names);
    if (!*names)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    for (*n = 0; *n < t->nclasses; (*n)++)
        (*names)[*n] = t->classes[*n];
    DIR *d = opendir(dir);
    if (!d)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", dir, strerror(errno));
    const struct dirent *e;
    int extra = *n;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name), pre = strlen(RESULT_PREFIX);
        if (len <= pre + 4 || strncmp(e->d_name, RESULT_PREFIX, pre) != 0 ||
            strcmp(e->d_name + len - 4, ".txt") != 0)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(len - pre - 4), e->d_name + pre);
        if (eeb_voc_class_index(t, name) >= 0)
            continue;
        char **g = realloc(*names, (size_t)(*n + 1) * sizeof *g);
        char *copy = g ? strdup(name) : NULL;
        if (g)
            *names = g;
        if (!copy) {
            closedir(d);
            return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
        }
        (*names)[(*n)++] = copy;
    }
    closedir(d);
    if (*n - extra > 1) /* qsort takes no NULL, even for 0 items */
        qsort(*names + extra, (size_t)(*n - extra), sizeof **names, by_name);
    return EEB_OK;
}

static void print_det(const struct args *a, char **names, int n,
                      const struct eeb_voc_class_result *r, double map)
{
    printf("%-20s %8s %8s %8s %8s %8s\n", "class", "AP", "gt", "dets", "TP", "FP");
    for (int c = 0; c < n; c++) {
        char ap[16] = "n/a";
        if (!isnan(r[c].ap))
            snprintf(ap, sizeof ap, "%.4f", r[c].ap);
        printf("%-20s %8s %8d %8d %8d %8d\n", names[c], ap, r[c].positives, r[c].detections,
               r[c].true_positives, r[c].false_positives);
    }
    int defined = 0;
    for (int c = 0; c < n; c++)
        defined += !isnan(r[c].ap);
    printf("mAP %.4f over %d classes with ground truth (%s, IoU >= %g)\n", map, defined,
           a->voc07 ? "VOC2007 11 points" : "every point, VOC2010+", a->iou);
}

static int print_det_json(const struct args *a, const struct eeb_task_ops *task,
                          const struct eeb_voc_truth_set *t, char **names, int n,
                          const struct eeb_voc_class_result *r, double map)
{
    json_t *classes = json_array();
    for (int c = 0; classes && c < n; c++)
        json_array_append_new(
            classes, json_pack("{s:s, s:o, s:i, s:i, s:i, s:i}", "name", names[c], "ap",
                               isnan(r[c].ap) ? json_null() : json_real(r[c].ap), "positives",
                               r[c].positives, "detections", r[c].detections, "true_positives",
                               r[c].true_positives, "false_positives", r[c].false_positives));
    return eeb_cli_print_json(
        cmd, json_pack("{s:s, s:f, s:s, s:o, s:i, s:o, s:o}", "task", eeb_task_name(task->task),
                       "iou", a->iou, "ap", a->voc07 ? "11-points" : "all-points", "map",
                       isnan(map) ? json_null() : json_real(map), "images", t->nimages, "image_set",
                       t->image_set ? json_string(t->image_set) : json_null(), "classes", classes));
}

/*
 * The ground truth, of the image set's images only when there is one:
 * --image-set, or the devkit's test set beside an Annotations/ folder.
 * Says which set on stderr, or that there is none.
 */
static int load_truth(const struct args *a, struct eeb_voc_truth_set *t, char *err, size_t errlen)
{
    char beside[4096];
    const char *path = a->image_set;
    int by_default = 0;
    if (!path) {
        int rc = eeb_voc_default_image_set(a->gt, beside, sizeof beside, err, errlen);
        if (rc < 0)
            return rc;
        by_default = rc == 1;
        path = by_default ? beside : NULL;
    }
    if (!path) {
        int rc = eeb_voc_truth_load(a->gt, t, err, errlen);
        struct stat sb;
        if (rc == EEB_OK && stat(a->gt, &sb) == 0 && S_ISDIR(sb.st_mode))
            fprintf(stderr, "eeb %s: scoring every annotation in %s (%d image%s): no image set\n",
                    cmd, a->gt, t->nimages, t->nimages == 1 ? "" : "s");
        return rc;
    }
    struct eeb_voc_image_set set;
    int rc = eeb_voc_image_set_read(path, &set, err, errlen);
    if (rc)
        return rc;
    fprintf(stderr, "eeb %s: scoring the %d image%s of the image set %s%s\n", cmd, set.n,
            set.n == 1 ? "" : "s", path,
            by_default ? " (the VOC layout's test set; --image-set FILE for another)" : "");
    rc = eeb_voc_truth_load_set(a->gt, &set, t, err, errlen);
    eeb_voc_image_set_free(&set);
    return rc;
}

/*
 * --train: the model's training shard names --gt's classes in --gt's
 * order (the model file holds no names; its outputs are positions).
 */
static int check_train_classes(const struct args *a)
{
    if (!a->train)
        return EEB_EXIT_OK;
    struct stat sb;
    if (stat(a->gt, &sb) == 0 && S_ISDIR(sb.st_mode))
        return eeb_cli_usage_error(cmd,
                                   "--train compares two shards' classes, and --gt %s is an "
                                   "annotation folder",
                                   a->gt);
    char err[1400];
    if (eeb_classes_compare_files(a->train, a->gt, err, sizeof err) != EEB_OK)
        return eeb_cli_error(cmd, "%s", err);
    return EEB_EXIT_OK;
}

static int eval_det(const struct args *a, const struct eeb_task_ops *task)
{
    char err[1024];
    struct eeb_voc_truth_set t;
    if (load_truth(a, &t, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    char **names = NULL;
    int n = 0, rc = list_classes(a->pred, &t, &names, &n, err, sizeof err);
    struct eeb_voc_class_result *r = calloc((size_t)n + 1, sizeof *r);
    if (!rc && !r)
        rc = eeb_errf(err, sizeof err, EEB_ENOMEM, "out of memory");
    for (int c = 0; rc == EEB_OK && c < n; c++) {
        int known = c < t.nclasses;
        rc = eval_class(a->pred, names[c], &t, known ? t.truth[c] : NULL, known ? t.ntruth[c] : 0,
                        a, &r[c], err, sizeof err);
    }
    int exit = EEB_EXIT_OK;
    if (rc) {
        exit = eeb_cli_error(cmd, "%s", err);
    } else {
        double map = eeb_voc_map(r, n);
        if (a->json)
            exit = print_det_json(a, task, &t, names, n, r, map);
        else
            print_det(a, names, n, r, map);
    }
    for (int c = t.nclasses; c < n; c++)
        free(names[c]);
    free(names), free(r);
    eeb_voc_truth_free(&t);
    return exit;
}

int eeb_cmd_eval(int argc, char **argv)
{
    struct args a = {.iou = 0.5};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EEB_EXIT_OK : rc;
    char err[256];
    enum eeb_task t;
    if (eeb_task_parse(a.task, &t, err, sizeof err))
        return eeb_cli_usage_error(cmd, "%s", err);
    const struct eeb_task_ops *task = eeb_task_get(t);
    /* VOC's options are for tasks whose predictions are boxes */
    int boxes = task->prediction == EEB_PREDICTION_BOXES;
    if (!boxes && (a.voc07 || a.iou != 0.5))
        return eeb_cli_usage_error(cmd, "--iou and --07 are for --task det");
    if (!boxes && a.image_set)
        return eeb_cli_usage_error(cmd, "--image-set is for --task det");
    if ((rc = check_train_classes(&a)) != EEB_EXIT_OK)
        return rc;
    return boxes ? eval_det(&a, task) : eval_topk(&a, task);
}
