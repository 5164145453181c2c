/*
 * test_voc_cli.c - Pascal VOC as users have it, through `eeb eval` and
 * `eeb data import`: the devkit layout with trainval and test annotations
 * in one folder (tests/data/voc/VOCdevkit), annotations as VOC exporters
 * write them (tests/data/voc/exporters), and a VOC-layout dataset of its
 * own three classes (tests/data/voc/fruit) imported, pre-trained, tested
 * and run end to end.
 *
 * Sections: image sets; exporters' annotations; a dataset's own classes.
 */
#include "tasks/eeb_shard.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VOC07   EEB_TEST_DATA "/voc/VOCdevkit/VOC2007"
#define RESULTS EEB_TEST_DATA "/voc/VOCdevkit/results/VOC2007/Main"
#define EXPORT  EEB_TEST_DATA "/voc/exporters"
#define FRUIT   EEB_TEST_DATA "/voc/fruit"

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    test_write_file(path, text, strlen(text));
}

/* ---- image sets ---- */

/*
 * The devkit's test set is 000001 and 000003; trainval's 000002 and 000004
 * hold a dog, a person and a cat more, which must not count:
 * dog: hit, miss, hit of 2 positives: AP .5 + .5 * 2/3 = 0.8333 (all four
 * images: 3 positives, 1/3 + 1/3 * 2/3 = 0.5556); person: 1 of 1 (all: of
 * 2, 0.5); cat: no detections, 0.  mAP (0.8333 + 1 + 0) / 3 = 0.6111.
 */
Test(voc_cli, eval_scores_the_devkit_test_set_by_default)
{
    struct test_run r = test_eeb((const char *[]){"eval", "--task", "det", "--gt",
                                                  VOC07 "/Annotations", "--pred", RESULTS, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "the 2 images of the image set " VOC07 "/ImageSets/Main/test.txt"),
              "%s", r.err);
    cr_assert(strstr(r.out, "dog                    0.8333        2        3        2        1"),
              "%s", r.out);
    cr_assert(strstr(r.out, "person                 1.0000        1        1        1        0"),
              "%s", r.out);
    cr_assert(strstr(r.out, "cat                    0.0000        1        0        0        0"),
              "%s", r.out);
    cr_assert(strstr(r.out, "mAP 0.6111 over 3 classes with ground truth"), "%s", r.out);
    test_run_free(&r);

    /* a per-class list of the same set ("id  1|-1|0") is the same set */
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", VOC07 "/Annotations/", "--pred",
                                  RESULTS, "--image-set", VOC07 "/ImageSets/Main/person_test.txt",
                                  NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(
        strstr(r.err, "the 2 images of the image set " VOC07 "/ImageSets/Main/person_test.txt"),
        "%s", r.err);
    cr_assert(strstr(r.out, "mAP 0.6111 over 3 classes"), "%s", r.out);
    test_run_free(&r);
}

Test(voc_cli, eval_refuses_images_outside_the_set)
{
    /* the test set's detections against trainval */
    struct test_run r = test_eeb(
        (const char *[]){"eval", "--task", "det", "--gt", VOC07 "/Annotations", "--pred", RESULTS,
                         "--image-set", VOC07 "/ImageSets/Main/trainval.txt", NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err,
                     "comp4_det_test_dog.txt:1: image '000001' is not in the image set " VOC07
                     "/ImageSets/Main/trainval.txt"),
              "%s", r.err);
    test_run_free(&r);

    /* an id of the set without its annotation */
    const char *dir = test_tmpdir();
    write_text(dir, "set.txt", "000001\n\n000003\n000009\n");
    char set[300];
    snprintf(set, sizeof set, "%s/set.txt", dir);
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", VOC07 "/Annotations", "--pred",
                                  RESULTS, "--image-set", set, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "set.txt:4: image '000009' has no annotation " VOC07
                            "/Annotations/000009.xml"),
              "%s", r.err);
    test_run_free(&r);

    /* lines that are not an image id, or one with a per-class flag */
    static const char *const bad[][2] = {
        {"000001\n000003 2\n", "set.txt:2: '000003 2' is not 'image_id' or 'image_id 1|-1|0'"},
        {"000001 1 1\n", "set.txt:1: '000001 1 1' is not 'image_id' or"},
        {"000001\n../000003\n", "set.txt:2: '../000003' is not an image id"},
        {"000001\n000003\n000001\n", "set.txt:3: image '000001' is listed twice (line 1)"},
        {"\n\n", "set.txt: no image ids"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_text(dir, "set.txt", bad[i][0]);
        r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", VOC07 "/Annotations",
                                      "--pred", RESULTS, "--image-set", set, NULL});
        cr_assert_eq(r.status, 1, "%s", bad[i][0]);
        cr_assert(strstr(r.err, bad[i][1]), "%s", r.err);
        test_run_free(&r);
    }

    r = test_eeb((const char *[]){"eval", "--task", "cls", "--gt", "x.eebd", "--pred", "p.csv",
                                  "--image-set", set, NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--image-set is for --task det"), "%s", r.err);
    test_run_free(&r);
}

/* Copies the four VOC2007 annotations into dir/Annotations. */
static void copy_voc07_annotations(const char *dir)
{
    test_mkdirs(dir, "Annotations");
    static const char *const ids[] = {"000001", "000002", "000003", "000004"};
    for (int i = 0; i < 4; i++) {
        char from[128], to[400];
        snprintf(from, sizeof from, "voc/VOCdevkit/VOC2007/Annotations/%s.xml", ids[i]);
        snprintf(to, sizeof to, "%s/Annotations/%s.xml", dir, ids[i]);
        size_t len;
        char *xml = test_fixture(from, &len);
        test_write_file(to, xml, len);
        free(xml);
    }
}

/*
 * VOC2012 has no test.txt (its test annotations are not public) and
 * VOC2007's trainval download has none either: scoring val detections
 * against every annotation counted train's objects as missed and halved
 * the mAP, silently.  The layout's own set files are listed instead.
 */
Test(voc_cli, eval_refuses_a_layout_without_its_test_set)
{
    const char *dir = test_tmpdir();
    copy_voc07_annotations(dir);
    test_mkdirs(dir, "ImageSets/Main");
    char main_dir[300], ann[300], val[400];
    snprintf(main_dir, sizeof main_dir, "%s/ImageSets/Main", dir);
    snprintf(ann, sizeof ann, "%s/Annotations", dir);
    snprintf(val, sizeof val, "%s/val.txt", main_dir);
    write_text(main_dir, "train.txt", "000002\n000004\n");
    write_text(main_dir, "val.txt", "000001\n000003\n");
    write_text(main_dir, "trainval.txt", "000001\n000002\n000003\n000004\n");
    write_text(main_dir, "dog_val.txt", "000001  1\n000003  1\n");
    write_text(main_dir, "dog_train.txt", "000002  1\n000004 -1\n");
    struct test_run r =
        test_eeb((const char *[]){"eval", "--task", "det", "--gt", ann, "--pred", RESULTS, NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "ImageSets/Main has no test.txt"), "%s", r.err);
    cr_assert(strstr(r.err, "--image-set FILE"), "%s", r.err);
    cr_assert(strstr(r.err, "(there: train.txt, trainval.txt, val.txt)"), "%s", r.err);
    cr_assert(!strstr(r.out, "mAP"), "%s", r.out);
    test_run_free(&r);

    /* the set named, its numbers are the test set's (the same images) */
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", ann, "--pred", RESULTS,
                                  "--image-set", val, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "mAP 0.6111 over 3 classes"), "%s", r.out);
    test_run_free(&r);

    /* only per-class lists: they are listed */
    char path[400];
    const char *gone[] = {"train.txt", "val.txt", "trainval.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", main_dir, gone[i]);
        cr_assert_eq(remove(path), 0);
    }
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", ann, "--pred", RESULTS, NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "(there: dog_train.txt, dog_val.txt)"), "%s", r.err);
    test_run_free(&r);
}

/* With a shard as the ground truth, the set picks its records. */
Test(voc_cli, eval_image_set_of_a_shard)
{
    const char *dir = test_tmpdir();
    char shard[300], set[300], res[300];
    snprintf(shard, sizeof shard, "%s/test.eebd", dir);
    snprintf(set, sizeof set, "%s/set.txt", dir);
    snprintf(res, sizeof res, "%s/res", dir);
    struct test_run r = test_eeb((const char *[]){"data", "import", "--format", "voc", VOC07,
                                                  "--split", "test", "-o", shard, "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    cr_assert_eq(mkdir(res, 0755), 0);
    write_text(res, "comp4_det_test_dog.txt", "000001 0.9 1 1 10 10\n");
    write_text(dir, "set.txt", "000001\n");
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", shard, "--pred", res,
                                  "--image-set", set, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "scoring the 1 image of the image set"), "%s", r.err);
    cr_assert(strstr(r.out, "dog                    0.0000        1        1        0        1"),
              "%s", r.out);
    cr_assert(strstr(r.out, "cat                       n/a        0"), "%s", r.out);
    test_run_free(&r);

    write_text(res, "comp4_det_test_dog.txt", "000001 0.9 1 1 10 10\n000003 0.8 1 1 10 10\n");
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", shard, "--pred", res,
                                  "--image-set", set, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "comp4_det_test_dog.txt:2: image '000003' is not in the image set"),
              "%s", r.err);
    test_run_free(&r);

    write_text(dir, "set.txt", "000001\n000002\n");
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", shard, "--pred", res,
                                  "--image-set", set, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "set.txt:2: image '000002' is not in the shard"), "%s", r.err);
    test_run_free(&r);
}

Test(voc_cli, import_reads_the_split_through_the_image_set_reader)
{
    char out[300];
    snprintf(out, sizeof out, "%s/test.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "voc", VOC07, "--split", "test",
                                  "-o", out, "--size", "20", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "2 det records"), "%s", r.out);
    test_run_free(&r);

    /* --image-set names any list in place of --split's */
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", VOC07, "--image-set",
                                  VOC07 "/ImageSets/Main/cat_test.txt", "-o", out, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "2 det records"), "%s", r.out);
    test_run_free(&r);

    const char *dir = test_tmpdir();
    write_text(dir, "set.txt", "000002\n000004 -2\n");
    char set[300];
    snprintf(set, sizeof set, "%s/set.txt", dir);
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", VOC07, "--image-set", set,
                                  "-o", out, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "set.txt:2: '000004 -2' is not 'image_id' or"), "%s", r.err);
    test_run_free(&r);
}

/* ---- exporters' annotations ---- */

/*
 * dog: frame_000000's is hit, IMG_0412's (<difficult/>: not difficult) is
 * missed, pet_01's detection is false: AP 0.5 of 2 positives (1.0 if the
 * empty element were read as difficult).  cat: frame_000000's is
 * difficult (its detection neither), pet_01's hit: 1.0.  person: its
 * float box hit exactly: 1.0.
 */
Test(voc_cli, eval_reads_exporters_annotations)
{
    /* the exporter wrote ImageSets/Main/train.txt and no test.txt */
    struct test_run r = test_eeb((const char *[]){
        "eval", "--task", "det", "--gt", EXPORT "/Annotations", "--pred", EXPORT "/results",
        "--image-set", EXPORT "/ImageSets/Main/train.txt", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "dog                    0.5000        2        2        1        1"),
              "%s", r.out);
    cr_assert(strstr(r.out, "cat                    1.0000        1        2        1        0"),
              "%s", r.out);
    cr_assert(strstr(r.out, "person                 1.0000        1        1        1        0"),
              "%s", r.out);
    cr_assert(strstr(r.out, "mAP 0.8333 over 3 classes"), "%s", r.out);
    cr_assert(strstr(r.err,
                     "scoring the 3 images of the image set " EXPORT "/ImageSets/Main/train.txt\n"),
              "%s", r.err);
    test_run_free(&r);

    /* without --image-set, the layout's set is not guessed */
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", EXPORT "/Annotations", "--pred",
                                  EXPORT "/results", NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, EXPORT "/ImageSets/Main has no test.txt"), "%s", r.err);
    cr_assert(strstr(r.err, "(there: train.txt)"), "%s", r.err);
    test_run_free(&r);
}

/* The first record's box of class name (the shard's names), or fail. */
static struct eeb_box box_of(const char *shard, const char *id, const char *name)
{
    char err[512];
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, shard, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *in = eeb_shard_info(s);
    const struct eeb_record *r;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1) {
        if (strcmp(r->id, id) != 0)
            continue;
        for (int b = 0; b < r->nboxes; b++)
            if (strcmp(in->names[r->boxes[b].cls], name) == 0) {
                struct eeb_box x = r->boxes[b];
                eeb_shard_close(s);
                return x;
            }
    }
    cr_assert_fail("%s: no %s box in record %s", shard, name, id);
    return (struct eeb_box){0};
}

Test(voc_cli, import_reads_exporters_annotations)
{
    char out[300];
    snprintf(out, sizeof out, "%s/train.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "voc", EXPORT, "--split", "train",
                                  "-o", out, "--size", "32", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "3 det records"), "%s", r.out);
    test_run_free(&r);
    /* 96x64 to 32x32: x / 3, y / 2; xmin 0.0 (a 0-based exporter's left
     * edge) is the edge, 10.5 is continuous 9.5 */
    struct eeb_box b = box_of(out, "frame_000000", "dog");
    cr_assert(b.x0 == 0 && !b.difficult, "%g", b.x0);
    cr_assert_float_eq(b.x1, 40.25f / 3, 1e-5);
    cr_assert_float_eq(b.y0, 9.5f / 2, 1e-5);
    cr_assert_float_eq(b.y1, 25.0f, 1e-5);
    cr_assert(box_of(out, "frame_000000", "cat").difficult);
    b = box_of(out, "IMG_0412_jpg.rf.3f1c9a", "person");
    cr_assert(!b.difficult);
    cr_assert_float_eq(b.x0, 49.5f / 3, 1e-5);
    cr_assert_float_eq(b.y1, 31.25f, 1e-5);
}

/* ---- a dataset's own classes ---- */

/* The class names of a shard, comma-separated. */
static char *shard_classes(const char *shard)
{
    json_t *o = test_eeb_json((const char *[]){"data", "info", "--json", shard, NULL}, 0);
    static char names[512];
    names[0] = '\0';
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(o, "classes"), i, c)
    {
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? "," : "",
                 json_string_value(json_object_get(c, "name")));
    }
    json_decref(o);
    return names;
}

Test(voc_cli, import_takes_the_datasets_own_classes)
{
    const char *dir = test_tmpdir();
    char out[300];
    snprintf(out, sizeof out, "%s/train.eebd", dir);
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split", "train",
                                  "-o", out, "--size", "32", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "6 det records, 3 classes"), "%s", r.out);
    cr_assert(strstr(r.err, "3 classes from the object names of the 9 annotations in " FRUIT
                            "/Annotations: kiwi, mango, pear"),
              "%s", r.err);
    test_run_free(&r);
    cr_assert_str_eq(shard_classes(out), "kiwi,mango,pear");

    /* a list of one's own, in its order, from a file */
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split", "train",
                                  "-o", out, "--classes", "@" FRUIT "/classes.txt", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    cr_assert_str_eq(shard_classes(out), "pear,kiwi,mango");

    /* or on the line; other classes' objects are dropped, and said so */
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split", "train",
                                  "-o", out, "--classes", "mango,kiwi", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.err, "dropped 3 objects of classes not in --classes (pear: 3)"), "%s",
              r.err);
    test_run_free(&r);
    cr_assert_str_eq(shard_classes(out), "mango,kiwi");

    write_text(dir, "classes.txt", "kiwi\nmango\nkiwi\n");
    char list[300];
    snprintf(list, sizeof list, "@%s/classes.txt", dir);
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split", "train",
                                  "-o", out, "--classes", list, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "classes.txt:3: class 'kiwi' given twice"), "%s", r.err);
    test_run_free(&r);
}

/* A misspelt class used to import as a class without objects. */
Test(voc_cli, import_refuses_a_class_no_annotation_names)
{
    char out[300];
    snprintf(out, sizeof out, "%s/train.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "voc", VOC07, "--split", "train",
                                  "-o", out, "--classes", "persn,dog", "-q", NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "--classes: no object in " VOC07 "/Annotations is a 'persn' (their "
                            "classes: cat, dog, person)"),
              "%s", r.err);
    test_run_free(&r);
    struct stat st;
    cr_assert_neq(stat(out, &st), 0, "a shard was written");

    /* from a file, the line */
    const char *dir = test_tmpdir();
    write_text(dir, "classes.txt", "dog\n\ncat\nperson\nhorse\n");
    char list[300];
    snprintf(list, sizeof list, "@%s/classes.txt", dir);
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", VOC07, "--split", "train",
                                  "-o", out, "--classes", list, "-q", NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "classes.txt:5: no object in " VOC07 "/Annotations is a 'horse'"), "%s",
              r.err);
    test_run_free(&r);
}

/* Notepad saves a UTF-8 list with a byte order mark, and "Unicode" as
 * UTF-16: the first becomes the first class's bytes, the second a
 * one-letter class, unless the list reader sees them. */
Test(voc_cli, class_lists_saved_by_windows_editors)
{
    const char *dir = test_tmpdir();
    char out[300], list[310], path[300];
    snprintf(out, sizeof out, "%s/train.eebd", dir);
    snprintf(path, sizeof path, "%s/classes.txt", dir);
    snprintf(list, sizeof list, "@%s", path);
    static const char bom[] = "\xEF\xBB\xBFpear\r\nkiwi\r\n";
    test_write_file(path, bom, sizeof bom - 1);
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split", "train",
                                  "-o", out, "--classes", list, "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    cr_assert_str_eq(shard_classes(out), "pear,kiwi");

    static const char utf16[] = "\xFF\xFEp\0e\0a\0r\0\r\0\n\0";
    test_write_file(path, utf16, sizeof utf16 - 1);
    r = test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split", "train",
                                  "-o", out, "--classes", list, "-q", NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "classes.txt:1: a NUL byte"), "%s", r.err);
    test_run_free(&r);
}

/* Class names become result file names, comp4_det_test_<name>.txt. */
Test(voc_cli, class_names_that_cannot_name_a_file)
{
    const char *dir = test_tmpdir();
    char out[300];
    snprintf(out, sizeof out, "%s/train.eebd", dir);
    static const char *const bad[][2] = {
        {"pear,kiwi/green", "--classes: class name 'kiwi/green' has a '/'"},
        {"pear,..", "--classes: class name '..' is '.' or '..'"},
        {"pear,\x1b[31mkiwi", "--classes: class name '\\x1b[31mkiwi' has a control character"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct test_run r =
            test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split",
                                      "train", "-o", out, "--classes", bad[i][0], "-q", NULL});
        cr_assert_eq(r.status, 1, "%s: %s%s", bad[i][0], r.out, r.err);
        cr_assert(strstr(r.err, bad[i][1]), "%s", r.err);
        test_run_free(&r);
    }

    /* an annotation's <name>: its file and line, for import and eval */
    copy_voc07_annotations(dir);
    size_t len;
    char *xml = test_fixture("voc/VOCdevkit/VOC2007/Annotations/000002.xml", &len);
    char *slashed = test_replace(xml, "<name>dog</name>", "<name>dog/puppy</name>");
    char ann[300], path[400];
    snprintf(ann, sizeof ann, "%s/Annotations", dir);
    snprintf(path, sizeof path, "%s/000002.xml", ann);
    test_write_file(path, slashed, strlen(slashed));
    free(xml), free(slashed);
    struct test_run r =
        test_eeb((const char *[]){"eval", "--task", "det", "--gt", ann, "--pred", RESULTS, NULL});
    cr_assert_eq(r.status, 1, "%s%s", r.out, r.err);
    cr_assert(strstr(r.err, "000002.xml:21: class name 'dog/puppy' has a '/'"), "%s", r.err);
    test_run_free(&r);
}

/* import, pre-train and test a 3-class detector, evaluate its predictions,
 * and run the benchmark on it */
Test(voc_cli, own_classes_train_and_evaluate_end_to_end, .timeout = 600)
{
    const char *dir = test_tmpdir();
    char train[300], test[300], model[300], pred[300], db[300];
    snprintf(train, sizeof train, "%s/train.eebd", dir);
    snprintf(test, sizeof test, "%s/test.eebd", dir);
    snprintf(model, sizeof model, "%s/base.eebm", dir);
    snprintf(pred, sizeof pred, "%s/pred", dir);
    snprintf(db, sizeof db, "%s/eeb.db", dir);
    const char *split[2][2] = {{"train", train}, {"test", test}};
    for (int i = 0; i < 2; i++) {
        struct test_run r =
            test_eeb((const char *[]){"data", "import", "--format", "voc", FRUIT, "--split",
                                      split[i][0], "-o", split[i][1], "--size", "32", "-q", NULL});
        cr_assert_eq(r.status, 0, "%s", r.err);
        test_run_free(&r);
    }
    /* both splits have the dataset's classes, though the test images'
     * annotations alone would give them too */
    cr_assert_str_eq(shard_classes(test), "kiwi,mango,pear");

    struct test_run r =
        test_eeb((const char *[]){"model", "pretrain", "--task", "det", "--data", train, "-o",
                                  model, "--epochs", "2", "--batch", "3", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "test", model, "--data", test, "--pred", pred, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    for (int i = 0; i < 3; i++) {
        static const char *const cls[3] = {"kiwi", "mango", "pear"};
        char path[400];
        snprintf(path, sizeof path, "%s/comp4_det_test_%s.txt", pred, cls[i]);
        struct stat st;
        cr_assert_eq(stat(path, &st), 0, "no %s", path);
    }
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", test, "--pred", pred, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\nkiwi  ") && strstr(r.out, "\nmango  ") && strstr(r.out, "\npear  "),
              "%s", r.out);
    cr_assert(strstr(r.out, "over 3 classes with ground truth"), "%s", r.out);
    test_run_free(&r);

    /* the benchmark run on them: long enough for the modeled power
     * source's samples, its predictions named by the classes too */
    snprintf(pred, sizeof pred, "%s/run-pred", dir);
    r = test_eeb((const char *[]){"run", "--task", "det", "--finetune", train, "--test", test,
                                  "--model", model, "--epochs", "20", "--batch", "3", "--db", db,
                                  "--predictions", pred, NULL});
    cr_assert(r.status == 0 || r.status == 3, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert(strstr(r.out, "mAP@0.5 on 3 test items"), "%s", r.out);
    test_run_free(&r);
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", test, "--pred", pred, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\nkiwi  ") && strstr(r.out, "\nmango  ") && strstr(r.out, "\npear  "),
              "%s", r.out);
    test_run_free(&r);
}

/* ---- the classes of training and test shards ---- */

/*
 * A model's outputs are classes by position.  Train imported with
 * --classes kiwi,mango,pear and test with mango,kiwi,pear have the same
 * count, which was all that was checked: M_s was then computed with kiwi
 * and mango swapped.  The model file holds no class names, so the shards
 * are compared: eeb run's two, and the training shard given to eeb model
 * test and eeb eval with --train.
 */
Test(voc_cli, train_and_test_shards_must_name_the_same_classes, .timeout = 300)
{
    const char *dir = test_tmpdir();
    char train[300], test[300], same[300], model[300], pred[300], db[300];
    snprintf(train, sizeof train, "%s/train.eebd", dir);
    snprintf(test, sizeof test, "%s/test.eebd", dir);
    snprintf(same, sizeof same, "%s/same.eebd", dir);
    snprintf(model, sizeof model, "%s/base.eebm", dir);
    snprintf(pred, sizeof pred, "%s/pred", dir);
    snprintf(db, sizeof db, "%s/eeb.db", dir);
    const char *imports[3][3] = {{"train", train, "kiwi,mango,pear"},
                                 {"test", test, "mango,kiwi,pear"},
                                 {"test", same, "kiwi,mango,pear"}};
    for (int i = 0; i < 3; i++) {
        struct test_run r = test_eeb((const char *[]){
            "data", "import", "--format", "voc", FRUIT, "--split", imports[i][0], "-o",
            imports[i][1], "--size", "32", "--classes", imports[i][2], "-q", NULL});
        cr_assert_eq(r.status, 0, "%s", r.err);
        test_run_free(&r);
    }
    struct test_run r =
        test_eeb((const char *[]){"model", "pretrain", "--task", "det", "--data", train, "-o",
                                  model, "--epochs", "1", "--steps", "1", "--batch", "3", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);

    char want[1400];
    snprintf(want, sizeof want,
             "%s and %s do not name the same classes: class 0 is 'kiwi' in %s, 'mango' in %s",
             train, test, train, test);
    r = test_eeb((const char *[]){"run", "--task", "det", "--finetune", train, "--test", test,
                                  "--model", model, "--epochs", "1", "--batch", "3", "--db", db,
                                  NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, want), "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"model", "test", model, "--data", test, "--train", train, NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, want), "%s", r.err);
    test_run_free(&r);

    /* the same order passes, and writes predictions to evaluate */
    r = test_eeb((const char *[]){"model", "test", model, "--data", same, "--train", train,
                                  "--pred", pred, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", same, "--pred", pred, "--train",
                                  train, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "over 3 classes"), "%s", r.out);
    test_run_free(&r);
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", test, "--pred", pred, "--train",
                                  train, NULL});
    cr_assert_eq(r.status, 1, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, want), "%s", r.err);
    test_run_free(&r);

    /* --train compares shards: an annotation folder is not one */
    r = test_eeb((const char *[]){"eval", "--task", "det", "--gt", FRUIT "/Annotations", "--pred",
                                  pred, "--train", train, NULL});
    cr_assert_eq(r.status, 2, "exit %d: %s%s", r.status, r.out, r.err);
    cr_assert(strstr(r.err, "--train"), "%s", r.err);
    test_run_free(&r);
}
