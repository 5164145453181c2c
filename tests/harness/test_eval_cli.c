/*
 * test_eval_cli.c - `eeb eval` on real files: VOC annotation XML and devkit
 * result files worked out by hand, a detection shard, CSV predictions
 * against a classification shard, and broken inputs named by file and line.
 */
#include "tasks/eeb_shard.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    test_write_file(path, text, strlen(text));
}

/* A dog, and a person with a <part> whose name and box must not count. */
static const char *const image1 =
    "<annotation>\n"
    "  <folder>VOC2007</folder>\n"
    "  <filename>000001.jpg</filename>\n"
    "  <size><width>353</width><height>500</height><depth>3</depth></size>\n"
    "  <object>\n"
    "    <name>dog</name><pose>Left</pose><truncated>1</truncated><difficult>0</difficult>\n"
    "    <bndbox><xmin>48</xmin><ymin>240</ymin><xmax>195</xmax><ymax>371</ymax></bndbox>\n"
    "  </object>\n"
    "  <object>\n"
    "    <name>person</name>\n"
    "    <bndbox><xmin>8</xmin><ymin>12</ymin><xmax>352</xmax><ymax>498</ymax></bndbox>\n"
    "    <part><name>head</name>\n"
    "      <bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></part>\n"
    "  </object>\n"
    "</annotation>\n";

/* A dog and a difficult dog. */
static const char *const image2 =
    "<annotation><filename>000002.jpg</filename>\n"
    "  <object><name>dog</name><difficult>0</difficult>\n"
    "    <bndbox><xmin>10</xmin><ymin>10</ymin><xmax>59</xmax><ymax>59</ymax></bndbox></object>\n"
    "  <object><name>dog</name><difficult>1</difficult>\n"
    "    <bndbox><xmin>100</xmin><ymin>100</ymin><xmax>149</xmax><ymax>149</ymax></bndbox>\n"
    "  </object>\n"
    "</annotation>\n";

/* dog: a hit, the difficult one (neither), a miss, a hit:
 * rec .5 .5 1, prec 1 .5 2/3: AP = .5 + .5 * 2/3 = 0.8333 (11 points:
 * (6 + 5 * 2/3) / 11 = 0.8485).  person: no file, AP 0.  horse: no
 * ground truth, n/a.  mAP = 0.8333 / 2. */
static const char *const dog_results = "000001 0.9 48 240 195 371\n"
                                       "000002 0.8 100 100 149 149\n"
                                       "000002 0.7 200 200 210 210\n"
                                       "\n"
                                       "000002 0.6 10 10 59 59\n";

/* Annotations/ and results/ in a fresh directory; returns its path. */
static const char *voc_fixture(void)
{
    static char root[256];
    snprintf(root, sizeof root, "%s", test_tmpdir());
    char ann[300], res[300];
    snprintf(ann, sizeof ann, "%s/Annotations", root);
    snprintf(res, sizeof res, "%s/results", root);
    cr_assert_eq(mkdir(ann, 0755), 0);
    cr_assert_eq(mkdir(res, 0755), 0);
    write_text(ann, "000001.xml", image1);
    write_text(ann, "000002.xml", image2);
    write_text(res, "comp4_det_test_dog.txt", dog_results);
    write_text(res, "comp4_det_test_horse.txt", "000001 0.5 1 1 10 10\n");
    return root;
}

static struct test_run eval_det(const char *root, const char *extra)
{
    char gt[300], pred[300];
    snprintf(gt, sizeof gt, "%s/Annotations", root);
    snprintf(pred, sizeof pred, "%s/results", root);
    const char *args[] = {"eval", "--task", "det", "--gt", gt, "--pred", pred, extra, NULL};
    return test_eeb(args);
}

Test(eval_cli, voc_annotations_and_result_files)
{
    const char *root = voc_fixture();
    struct test_run r = eval_det(root, NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dog                    0.8333        2        4        2        1"),
              "%s", r.out);
    cr_assert(strstr(r.out, "person                 0.0000        1        0        0        0"),
              "%s", r.out);
    cr_assert(strstr(r.out, "horse                     n/a        0        1        0        1"),
              "%s", r.out);
    cr_assert(!strstr(r.out, "head"), "a <part> is not an object:\n%s", r.out);
    cr_assert(strstr(r.out, "mAP 0.4167 over 2 classes with ground truth"), "%s", r.out);
    /* no ImageSets/ beside Annotations/: every annotation, and said so */
    char said[400];
    snprintf(said, sizeof said,
             "eeb eval: scoring every annotation in %s/Annotations (2 images): no image set\n",
             root);
    cr_assert(strstr(r.err, said), "%s", r.err);
    test_run_free(&r);

    r = eval_det(root, "--07");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dog                    0.8485"), "%s", r.out);
    test_run_free(&r);

    r = eval_det(root, "--json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    json_error_t je;
    json_t *o = json_loads(r.out, 0, &je);
    cr_assert(o, "%s", je.text);
    cr_assert_float_eq(json_real_value(json_object_get(o, "map")), 0.8333333333333334 / 2, 1e-12);
    cr_assert(json_is_null(json_object_get(o, "image_set")));
    cr_assert_eq(json_integer_value(json_object_get(o, "images")), 2);
    json_t *horse = json_array_get(json_object_get(o, "classes"), 2);
    cr_assert_str_eq(json_string_value(json_object_get(horse, "name")), "horse");
    cr_assert(json_is_null(json_object_get(horse, "ap")));
    json_decref(o);
    test_run_free(&r);
}

Test(eval_cli, broken_voc_inputs_are_named_by_file_and_line)
{
    const char *root = voc_fixture();
    char res[300], ann[300];
    snprintf(res, sizeof res, "%s/results", root);
    snprintf(ann, sizeof ann, "%s/Annotations", root);

    write_text(res, "comp4_det_test_dog.txt", "000001 0.9 48 240 195 371\n000003 0.5 1 1 2 2\n");
    struct test_run r = eval_det(root, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "comp4_det_test_dog.txt:2: image '000003' is not in the ground truth"),
              "%s", r.err);
    test_run_free(&r);

    write_text(res, "comp4_det_test_dog.txt", "000001 0.9 48 240 195\n");
    r = eval_det(root, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "comp4_det_test_dog.txt:1: want 'image_id confidence"), "%s", r.err);
    test_run_free(&r);
    write_text(res, "comp4_det_test_dog.txt", dog_results);

    write_text(ann, "000002.xml",
               "<annotation>\n<object><name>dog</name>\n<bndbox><xmin>1</xmin></bndbox>\n"
               "</object>\n</annotation>\n");
    r = eval_det(root, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "000002.xml:4: an <object> without a whole <bndbox>"), "%s", r.err);
    test_run_free(&r);

    write_text(ann, "000002.xml", "<annotation>\n<object><name>dog</name>\n</annotation>\n");
    r = eval_det(root, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "000002.xml:3: mismatched tag"), "%s", r.err);
    test_run_free(&r);

    write_text(ann, "000002.xml",
               "<annotation><object><name>dog</name><bndbox><xmin>1O</xmin><ymin>1</ymin>"
               "<xmax>5</xmax><ymax>5</ymax></bndbox></object></annotation>\n");
    r = eval_det(root, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "000002.xml:1: a number was expected"), "%s", r.err);
    test_run_free(&r);

    /* a size past int (fuzz_voc_xml found it: the conversion was undefined) */
    write_text(ann, "000002.xml",
               "<annotation>\n<size><width>2477777777777777777777777777777777777</width>"
               "</size></annotation>\n");
    r = eval_det(root, NULL);
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "000002.xml:2: <width> 2477777777777777777777777777777777777 is not a "
                            "whole number of 0 to 1000000"),
              "%s", r.err);
    test_run_free(&r);
}

/* A shard at path of these four classes and n records with the given ids,
 * labels and (det) one box each. */
static void write_shard(const char *path, enum eeb_task task, const char *const names4[4],
                        const char *const *ids, const int *labels, int n)
{
    char names[4][EEB_SHARD_MAX_NAME + 1];
    for (int k = 0; k < 4; k++)
        snprintf(names[k], sizeof names[k], "%s", names4[k]);
    struct eeb_shard_info info = {task, 16, 16, 3, 1, 4, names, 0};
    struct eeb_shard_writer *w;
    char err[256];
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), 0, "%s", err);
    static struct eeb_record rec;
    static uint8_t pixels[16 * 16 * 3];
    rec.pixels = pixels;
    for (int i = 0; i < n; i++) {
        snprintf(rec.id, sizeof rec.id, "%s", ids[i]);
        rec.label = task == EEB_TASK_DET ? 0 : labels[i];
        rec.nboxes = task == EEB_TASK_DET;
        rec.boxes[0] = (struct eeb_box){labels[i], 0, 0, 0, 10, 10}; /* pixels 1..10 */
        cr_assert_eq(eeb_shard_write(w, &rec, err, sizeof err), 0, "%s", err);
    }
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), 0, "%s", err);
}

/* write_shard's shard of test_cls_shard's classes, in the scratch folder. */
static const char *small_shard(enum eeb_task task, const char *const *ids, const int *labels, int n)
{
    static char path[300];
    static const char *const names[4] = {"red_h", "red_v", "green_h", "green_v"};
    snprintf(path, sizeof path, "%s/small.eebd", test_tmpdir());
    write_shard(path, task, names, ids, labels, n);
    return path;
}

static struct test_run eval_csv(const char *shard, const char *csv_text)
{
    char csv[300];
    snprintf(csv, sizeof csv, "%s/pred.csv", test_tmpdir());
    test_write_file(csv, csv_text, strlen(csv_text));
    const char *args[] = {"eval", "--task", "cls", "--gt", shard, "--pred", csv, NULL};
    return test_eeb(args);
}

Test(eval_cli, top1_and_top5_from_csv)
{
    const char *const ids[] = {"a", "b", "c", "d"};
    const int labels[] = {0, 1, 2, 3};
    const char *shard = small_shard(EEB_TASK_CLS, ids, labels, 4);
    /* a: right at once; b: second; c: second, by index; d: no line */
    struct test_run r = eval_csv(shard, "id,first,second\n"
                                        "a,red_h,1\n"
                                        "b, green_h , red_v\n"
                                        "# a comment\n"
                                        "c,3,2,1,0,green_h\n");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "top-1  0.2500  (1 of 4)"), "%s", r.out);
    cr_assert(strstr(r.out, "top-5  0.7500  (3 of 4)"), "%s", r.out);
    cr_assert(strstr(r.err, "1 of 4 items have no prediction line; counted as wrong"), "%s", r.err);
    test_run_free(&r);

    r = eval_csv(shard, "a,red_h\nzz,red_h\n");
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "pred.csv:2: id 'zz' is not in the shard"), "%s", r.err);
    test_run_free(&r);
    r = eval_csv(shard, "a,red_h\nb,blue\n");
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "pred.csv:2: field 2: 'blue' is neither a class name nor an index"),
              "%s", r.err);
    test_run_free(&r);
    r = eval_csv(shard, "a,red_h\na,red_v\n");
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "pred.csv:2: a second line for id 'a'"), "%s", r.err);
    test_run_free(&r);
}

Test(eval_cli, detection_against_a_shard)
{
    /* continuous [0, 10] is pixels 1..10 in the devkit's coordinates */
    const char *const ids[] = {"img1", "img2"};
    const int labels[] = {0, 2};
    const char *shard = small_shard(EEB_TASK_DET, ids, labels, 2);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/res", test_tmpdir());
    cr_assert_eq(mkdir(dir, 0755), 0);
    write_text(dir, "comp4_det_test_red_h.txt", "img1 0.9 1 1 10 10\nimg2 0.8 1 1 10 10\n");
    write_text(dir, "comp4_det_test_green_h.txt", "img2 0.4 1 1 10 5\n"); /* IoU 0.5: a hit */
    const char *args[] = {"eval", "--task", "det", "--gt", shard, "--pred", dir, NULL};
    struct test_run r = test_eeb(args);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "red_h                  1.0000        1        2        1        1"),
              "%s", r.out);
    cr_assert(strstr(r.out, "green_h                1.0000        1        1        1        0"),
              "%s", r.out);
    cr_assert(strstr(r.out, "red_v                     n/a        0        0"), "%s", r.out);
    cr_assert(strstr(r.out, "mAP 1.0000 over 2 classes"), "%s", r.out);
    test_run_free(&r);
}

Test(eval_cli, usage_errors)
{
    const char *no_gt[] = {"eval", "--task", "cls", "--pred", "x.csv", NULL};
    struct test_run r = test_eeb(no_gt);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--gt and --pred are required"), "%s", r.err);
    test_run_free(&r);
    const char *iou[] = {"eval", "--task", "det", "--gt", "a", "--pred", "b", "--iou", "1.5", NULL};
    r = test_eeb(iou);
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--iou: 1.5 is not in (0, 1]"), "%s", r.err);
    test_run_free(&r);
}

/* A one-record classification shard at dir/name with these four classes. */
static void four_class_shard(const char *path, const char *const names4[4])
{
    write_shard(path, EEB_TASK_CLS, names4, (const char *[]){"a"}, (const int[]){0}, 1);
}

/*
 * Predictions by index (or written by eeb model test, by the test shard's
 * names for the model's positions) mean the training shard's classes: with
 * --train, its list must be the ground truth's, name for name.
 */
Test(eval_cli, the_training_shard_must_name_the_ground_truths_classes)
{
    const char *dir = test_tmpdir();
    char gt[300], train[300], swapped[300], csv[300];
    snprintf(gt, sizeof gt, "%s/test.eebd", dir);
    snprintf(train, sizeof train, "%s/train.eebd", dir);
    snprintf(swapped, sizeof swapped, "%s/swapped.eebd", dir);
    snprintf(csv, sizeof csv, "%s/pred.csv", dir);
    static const char *const order[] = {"red_h", "red_v", "green_h", "green_v"};
    static const char *const other[] = {"red_h", "green_h", "red_v", "green_v"};
    four_class_shard(gt, order);
    four_class_shard(train, order);
    four_class_shard(swapped, other);
    test_write_file(csv, "a,0\n", 4);

    struct test_run r = test_eeb((const char *[]){"eval", "--task", "cls", "--gt", gt, "--pred",
                                                  csv, "--train", train, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "top-1  1.0000  (1 of 1)"), "%s", r.out);
    test_run_free(&r);

    r = test_eeb((const char *[]){"eval", "--task", "cls", "--gt", gt, "--pred", csv, "--train",
                                  swapped, NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s%s", r.status, r.out, r.err);
    char want[1400];
    snprintf(want, sizeof want,
             "%s and %s do not name the same classes: class 1 is 'green_h' in %s, 'red_v' in %s",
             swapped, gt, swapped, gt);
    cr_assert(strstr(r.err, want), "%s", r.err);
    cr_assert_eq(r.out[0], '\0', "%s", r.out);
    test_run_free(&r);
}
