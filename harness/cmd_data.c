/*
 * cmd_data.c - `eeb data gen|info|import`: make synthetic shards, describe
 * a shard, and import datasets in their real layouts (Food-101, Pascal
 * VOC, UCF-101).
 */
#include "eeb_cli.h"
#include "tasks/eeb_gen.h"
#include "tasks/eeb_import.h"
#include "tasks/eeb_preset.h"
#include "tasks/eeb_shard.h"
#include "tasks/eeb_task_ops.h"

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const cmd = "data";

static void help(void)
{
    puts("Usage: eeb data gen --task TASK --domain pretrain|finetune --split train|test\n"
         "                    --n N [--seed S] [--preset NAME] [--size PX] [--frames T]\n"
         "                    -o OUT.eebd\n"
         "       eeb data import --format food101|voc|ucf101 SRC --split train|test\n"
         "                    -o OUT.eebd [--preset NAME] [--size PX] [--frames T]\n"
         "                    [--threads N] [--skip-bad] [--classes a,b,...|@FILE]\n"
         "                    [--image-set FILE (voc)]\n"
         "       eeb data info [--json] FILE.eebd\n"
         "\n"
         "  gen     learnable synthetic data: cls (20 classes, 5 shapes x 4 textures),\n"
         "          det (5 shapes, 1-3 boxed objects per image, tiny ones difficult),\n"
         "          video (20 classes, 2 shapes x 10 motions over the frames); the\n"
         "          finetune domain is shifted from the pretrain one (colours,\n"
         "          backgrounds, object sizes), so fine-tuning measurably helps\n"
         "  import  a dataset in its real layout:\n"
         "            food101  SRC/images/<class>/<id>.jpg, SRC/meta/classes.txt,\n"
         "                     SRC/meta/train.txt, SRC/meta/test.txt\n"
         "            voc      SRC/JPEGImages/<id>.jpg, SRC/Annotations/<id>.xml,\n"
         "                     SRC/ImageSets/Main/trainval.txt (or train.txt), test.txt;\n"
         "                     the classes are the object names of every annotation in\n"
         "                     SRC/Annotations, sorted (said on stderr), so that every\n"
         "                     split gets the same: a dataset of any classes imports\n"
         "            ucf101   SRC/<videos>, SRC/classInd.txt, SRC/trainlist01.txt,\n"
         "                     SRC/testlist01.txt (or ucfTrainTestlist/ under SRC)\n"
         "          images are resized to PX x PX (boxes with them); clips are sampled\n"
         "          at T frames spread evenly over the video\n"
         "  info    record count, classes, image shape and, for detection, boxes\n"
         "\n"
         "Options:\n"
         "  --task TASK      cls, det or video\n"
         "  --domain D       pretrain or finetune\n"
         "  --split S        train or test\n"
         "  --n N            records to generate\n"
         "  --seed S         generator seed (default 1)\n"
         "  --preset NAME    the item size of a preset (below) for the task; --size\n"
         "                   and --frames given as well override it\n"
         "  --size PX        image side in pixels (default 64)\n"
         "  --frames T       frames per video clip (default 8)\n"
         "  --threads N      import: items decoded at once (default: one per CPU);\n"
         "                   the shard is the same for any N\n"
         "  --format F       the dataset layout to import\n"
         "  --classes LIST   the classes, in this order: a,b,c or @FILE (one a line);\n"
         "                   food101, ucf101: some of the dataset's; voc: object names\n"
         "                   found in SRC/Annotations (a name no object has is an\n"
         "                   error), other classes' objects are left out (counted on\n"
         "                   stderr).  No class name may hold '/', ',' or a control\n"
         "                   character, or be '.' or '..' (it names a result file).\n"
         "                   Train and test shards need the same list, in the same\n"
         "                   order: eeb run, eeb model test and eeb eval compare them\n"
         "  --image-set FILE voc: the images of this ImageSets/Main-style list (an\n"
         "                   id a line, or 'id 1|-1|0') instead of --split's\n"
         "  --skip-bad       skip unreadable items (counted) instead of stopping\n"
         "  -o, --out FILE   the shard to write\n"
         "  -q, --quiet      no progress (a line rewritten on a terminal, else a\n"
         "                   line every 30 s)\n"
         "  --json           info as one JSON object\n"
         "  -h, --help       show this help\n"
         "\n"
         "Presets (--preset NAME):");
    int n;
    const struct eeb_preset *p = eeb_preset_list(&n);
    for (int i = 0; i < n; i++) {
        char shape[64];
        if (p[i].frames > 1)
            snprintf(shape, sizeof shape, "%d frames of %dx%d", p[i].frames, p[i].size, p[i].size);
        else
            snprintf(shape, sizeof shape, "%dx%d", p[i].size, p[i].size);
        printf("  %-8s %-6s %-22s %s\n", p[i].name, eeb_task_name(p[i].task), shape, p[i].from);
    }
}

/*
 * Progress on stderr, with the rate and the time left: on a terminal one
 * line rewritten at most every 1 %; elsewhere (a log) a line every 30 s,
 * so that an import of an hour says how it goes and one of seconds says
 * nothing.
 */
struct progress {
    int on, tty;
    const char *what;
    int last;             /* the percentage shown last (terminal) */
    int64_t start, shown; /* ns: made, last line written */
};

#define PROGRESS_LOG_NS (30 * 1000000000LL)

static struct progress progress_new(int quiet, const char *what)
{
    int64_t now = eeb_mono_ns();
    return (struct progress){!quiet, isatty(2), what, -1, now, now};
}

/* "45 s", "3 min 20 s", "2 h 05 min" */
static void duration_text(double s, char *out, size_t n)
{
    long v = s < 0 ? 0 : s > 1e8 ? 100000000L : lround(s);
    if (v < 60)
        snprintf(out, n, "%ld s", v);
    else if (v < 3600)
        snprintf(out, n, "%ld min %02ld s", v / 60, v % 60);
    else
        snprintf(out, n, "%ld h %02ld min", v / 3600, v / 60 % 60);
}

static void show_progress(uint64_t done, uint64_t total, void *arg)
{
    struct progress *p = arg;
    int pct = total ? (int)(100 * done / total) : 100, end = done == total;
    int64_t now = eeb_mono_ns();
    if (!p->on || (p->tty ? pct == p->last && !end : now - p->shown < PROGRESS_LOG_NS))
        return;
    p->last = pct, p->shown = now;
    double s = (double)(now - p->start) / 1e9, rate = s > 0 ? (double)done / s : 0;
    char when[32];
    duration_text(end ? s : rate > 0 ? (double)(total - done) / rate : 0, when, sizeof when);
    fprintf(stderr, "%s%s: %llu/%llu records (%d%%), %.0f/s, %s%s%s", p->tty ? "\r" : "", p->what,
            (unsigned long long)done, (unsigned long long)total, pct, rate, end ? "in " : "", when,
            end ? "" : " left");
    fputs(p->tty ? (end ? "\033[K\n" : "\033[K") : "\n", stderr);
}

static void summary(const char *path)
{
    char err[512];
    struct eeb_shard *s;
    if (eeb_shard_open(&s, path, err, sizeof err) != EEB_OK)
        return;
    char what[256];
    eeb_shard_describe(eeb_shard_info(s), what, sizeof what);
    printf("%s: %s\n", path, what);
    fflush(stdout); /* before any note on stderr */
    eeb_shard_close(s);
}

struct args {
    const char *task, *domain, *split, *out, *format;
    const char *classes;
    const char *image_set; /* import voc: in place of --split's list */
    const char *preset;
    double n, seed, size, frames, threads;
    int size_given, frames_given; /* over the preset's */
    int skip_bad, quiet, json;
};

/* The item size for task: --preset's, then --size and --frames given. */
static int item_size(const struct args *a, enum eeb_task task, int *size, int *frames)
{
    *size = (int)a->size, *frames = eeb_task_get(task)->clips ? (int)a->frames : 1;
    if (!a->preset)
        return EEB_EXIT_OK;
    char err[256];
    const struct eeb_preset *p;
    if (eeb_preset_get(a->preset, task, &p, err, sizeof err))
        return eeb_cli_usage_error(cmd, "--preset: %s", err);
    if (!a->size_given)
        *size = p->size;
    if (!a->frames_given && eeb_task_get(task)->clips)
        *frames = p->frames;
    return EEB_EXIT_OK;
}

/* --split: 0 train, 1 test, or -1 after a usage error. */
static int parse_split(const char *s)
{
    if (strcmp(s, "train") == 0 || strcmp(s, "test") == 0)
        return strcmp(s, "test") == 0;
    eeb_cli_usage_error(cmd, "--split: '%s' (train or test)", s);
    return -1;
}

static int gen(const struct args *a)
{
    char err[512];
    struct eeb_gen_spec sp = {.seed = (uint64_t)a->seed};
    if (eeb_task_parse(a->task, &sp.task, err, sizeof err))
        return eeb_cli_usage_error(cmd, "--task: %s", err);
    int rc = item_size(a, sp.task, &sp.size, &sp.frames);
    if (rc != EEB_EXIT_OK)
        return rc;
    if (strcmp(a->domain, "pretrain") == 0)
        sp.domain = EEB_GEN_PRETRAIN;
    else if (strcmp(a->domain, "finetune") == 0)
        sp.domain = EEB_GEN_FINETUNE;
    else
        return eeb_cli_usage_error(cmd, "--domain: '%s' (pretrain or finetune)", a->domain);
    if ((sp.test = parse_split(a->split)) < 0)
        return EEB_EXIT_USAGE;
    sp.n = (uint64_t)a->n;
    struct progress p = progress_new(a->quiet, a->out);
    if (eeb_gen_shard(a->out, &sp, show_progress, &p, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    summary(a->out);
    return EEB_EXIT_OK;
}

/* Which classes an import without --classes found, and where. */
static void note_found_classes(const char *path, const char *annotations_dir, int annotations)
{
    char err[512];
    struct eeb_shard *s;
    if (eeb_shard_open(&s, path, err, sizeof err) != EEB_OK)
        return;
    const struct eeb_shard_info *in = eeb_shard_info(s);
    fprintf(stderr, "eeb %s: %d class%s from the object names of the %d annotations in %s:", cmd,
            in->classes, in->classes == 1 ? "" : "es", annotations, annotations_dir);
    enum { SHOWN = 40 };
    for (int k = 0; k < in->classes && k < SHOWN; k++)
        fprintf(stderr, "%s %s", k ? "," : "", in->names[k]);
    if (in->classes > SHOWN)
        fprintf(stderr, ", ... (%d more)", in->classes - SHOWN);
    fputs(" (--classes to choose others)\n", stderr);
    eeb_shard_close(s);
}

static int import(const struct args *a, const char *src)
{
    char err[1024]; /* an annotation's and an image set's paths */
    struct eeb_import_spec sp = {.src = src,
                                 .out = a->out,
                                 .classes = a->classes,
                                 .skip_bad = a->skip_bad,
                                 .image_set = a->image_set,
                                 .threads = (int)a->threads};
    if (eeb_import_format_parse(a->format, &sp.format, err, sizeof err))
        return eeb_cli_usage_error(cmd, "--format: %s", err);
    int rc = item_size(a, eeb_task_importing(sp.format)->task, &sp.size, &sp.frames);
    if (rc != EEB_EXIT_OK)
        return rc;
    if (a->image_set && sp.format != EEB_IMPORT_VOC)
        return eeb_cli_usage_error(cmd, "--image-set is for --format voc");
    if (a->split && (sp.test = parse_split(a->split)) < 0)
        return EEB_EXIT_USAGE;
    struct progress p = progress_new(a->quiet, a->out);
    struct eeb_import_result res;
    if (eeb_import(&sp, show_progress, &p, &res, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    summary(a->out);
    if (sp.format == EEB_IMPORT_VOC && !a->classes) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/Annotations", src);
        note_found_classes(a->out, dir, res.annotations);
    }
    if (res.dropped)
        fprintf(stderr, "eeb data: dropped %llu object%s of classes not in --classes (%s)\n",
                (unsigned long long)res.dropped, res.dropped == 1 ? "" : "s", res.dropped_classes);
    if (res.skipped) {
        fprintf(stderr, "eeb data: skipped %llu unreadable item%s (--skip-bad); the first: %s\n",
                (unsigned long long)res.skipped, res.skipped == 1 ? "" : "s", res.first_skipped);
    }
    return EEB_EXIT_OK;
}

static int info(const char *path, int as_json)
{
    char err[512];
    struct eeb_shard *s;
    if (eeb_shard_open(&s, path, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    const struct eeb_shard_info *in = eeb_shard_info(s);
    const struct eeb_task_ops *task = eeb_task_get(in->task);
    int boxed = task->prediction == EEB_PREDICTION_BOXES; /* its items carry boxes, not a class */
    uint64_t *per_class = calloc((size_t)in->classes, sizeof *per_class);
    uint64_t boxes = 0, difficult = 0;
    const struct eeb_record *r;
    int rc;
    while (per_class && (rc = eeb_shard_next(s, &r, err, sizeof err)) == 1) {
        if (!boxed)
            per_class[r->label]++;
        for (int i = 0; i < r->nboxes; i++) {
            per_class[r->boxes[i].cls]++;
            boxes++;
            difficult += r->boxes[i].difficult != 0;
        }
    }
    if (!per_class)
        rc = eeb_errf(err, sizeof err, EEB_ENOMEM, "out of memory");
    if (rc < 0) {
        free(per_class);
        eeb_shard_close(s);
        return eeb_cli_error(cmd, "%s", err);
    }
    const char *counted = boxed ? "objects" : "records";
    if (as_json) {
        json_t *cls = json_array();
        for (int k = 0; k < in->classes; k++)
            json_array_append_new(cls, json_pack("{s:s, s:I}", "name", in->names[k], counted,
                                                 (json_int_t)per_class[k]));
        json_t *o = json_pack("{s:s, s:i, s:s, s:I, s:i, s:i, s:i, s:i, s:o}", "file", path,
                              "version", EEB_SHARD_VERSION, "task", eeb_task_name(in->task),
                              "records", (json_int_t)in->count, "height", in->h, "width", in->w,
                              "channels", in->c, "frames", in->frames, "classes", cls);
        if (o && boxed) {
            json_object_set_new(o, "boxes", json_integer((json_int_t)boxes));
            json_object_set_new(o, "difficult", json_integer((json_int_t)difficult));
        }
        rc = eeb_cli_print_json(cmd, o);
    } else {
        printf("%s: eeb shard v%d, task %s (%s)\n", path, EEB_SHARD_VERSION,
               eeb_task_name(in->task), task->metric);
        printf("records  %llu\n", (unsigned long long)in->count);
        printf("items    %dx%dx%d (h x w x c)", in->h, in->w, in->c);
        if (task->clips)
            printf(", %d frames per clip", in->frames);
        printf(", %zu bytes of pixels each\n", eeb_shard_pixels(in));
        if (boxed)
            printf("boxes    %llu, %llu of them difficult\n", (unsigned long long)boxes,
                   (unsigned long long)difficult);
        printf("classes  %d\n", in->classes);
        for (int k = 0; k < in->classes; k++)
            printf("  %4d  %-32s %8llu %s\n", k, in->names[k], (unsigned long long)per_class[k],
                   counted);
        rc = EEB_EXIT_OK;
    }
    free(per_class);
    eeb_shard_close(s);
    return rc;
}

int eeb_cmd_data(int argc, char **argv)
{
    enum {
        O_TASK = 256,
        O_DOMAIN,
        O_SPLIT,
        O_N,
        O_SEED,
        O_SIZE,
        O_FRAMES,
        O_FORMAT,
        O_CLASSES,
        O_SKIP,
        O_JSON,
        O_IMAGE_SET,
        O_PRESET,
        O_THREADS
    };
    static const struct option options[] = {
        {"task", required_argument, NULL, O_TASK},
        {"domain", required_argument, NULL, O_DOMAIN},
        {"split", required_argument, NULL, O_SPLIT},
        {"n", required_argument, NULL, O_N},
        {"seed", required_argument, NULL, O_SEED},
        {"size", required_argument, NULL, O_SIZE},
        {"frames", required_argument, NULL, O_FRAMES},
        {"format", required_argument, NULL, O_FORMAT},
        {"classes", required_argument, NULL, O_CLASSES},
        {"skip-bad", no_argument, NULL, O_SKIP},
        {"out", required_argument, NULL, 'o'},
        {"quiet", no_argument, NULL, 'q'},
        {"json", no_argument, NULL, O_JSON},
        {"image-set", required_argument, NULL, O_IMAGE_SET},
        {"preset", required_argument, NULL, O_PRESET},
        {"threads", required_argument, NULL, O_THREADS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct args a = {.seed = 1, .size = 64, .frames = 8, .n = -1};
    int c, rc = EEB_EXIT_OK;
    opterr = 0;
    optind = 1;
    while (rc == EEB_EXIT_OK && (c = getopt_long(argc, argv, "ho:q", options, NULL)) != -1) {
        switch (c) {
        case O_TASK: a.task = optarg; break;
        case O_DOMAIN: a.domain = optarg; break;
        case O_SPLIT: a.split = optarg; break;
        case O_N: rc = eeb_cli_count(cmd, "--n", optarg, 1, 1e9, &a.n); break;
        case O_SEED: rc = eeb_cli_count(cmd, "--seed", optarg, 0, 1e18, &a.seed); break;
        case O_SIZE:
            rc = eeb_cli_count(cmd, "--size", optarg, 16, 1024, &a.size);
            a.size_given = 1;
            break;
        case O_FRAMES:
            rc = eeb_cli_count(cmd, "--frames", optarg, 2, EEB_TASK_MAX_FRAMES, &a.frames);
            a.frames_given = 1;
            break;
        case O_PRESET: a.preset = optarg; break;
        case O_THREADS: rc = eeb_cli_count(cmd, "--threads", optarg, 1, 256, &a.threads); break;
        case O_FORMAT: a.format = optarg; break;
        case O_CLASSES: a.classes = optarg; break;
        case O_SKIP: a.skip_bad = 1; break;
        case 'o': a.out = optarg; break;
        case 'q': a.quiet = 1; break;
        case O_JSON: a.json = 1; break;
        case O_IMAGE_SET: a.image_set = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        case '?':
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (rc != EEB_EXIT_OK)
        return rc;
    char err[1024];
    if (a.out && eeb_check_output(a.out, err, sizeof err)) /* before the work */
        return eeb_cli_error(cmd, "%s", err);
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "expected gen, import or info");
    const char *action = argv[optind++];
    int nargs = argc - optind;
    if (strcmp(action, "info") == 0) {
        if (nargs != 1)
            return eeb_cli_usage_error(cmd, "'info' takes exactly one FILE");
        return info(argv[optind], a.json);
    }
    if (strcmp(action, "gen") == 0) {
        if (nargs != 0)
            return eeb_cli_usage_error(cmd, "'gen' takes no FILE arguments: '%s'", argv[optind]);
        if (!a.task || !a.domain || !a.split || a.n < 0 || !a.out)
            return eeb_cli_usage_error(cmd, "'gen' needs --task, --domain, --split, --n and -o");
        return gen(&a);
    }
    if (strcmp(action, "import") == 0) {
        if (nargs != 1)
            return eeb_cli_usage_error(cmd, "'import' takes exactly one SRC directory");
        if (!a.format || !(a.split || a.image_set) || !a.out)
            return eeb_cli_usage_error(cmd,
                                       "'import' needs --format, --split (or --image-set) and -o");
        return import(&a, argv[optind]);
    }
    return eeb_cli_usage_error(cmd, "unknown action '%s' (expected gen, import or info)", action);
}
