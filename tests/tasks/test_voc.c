/*
 * test_voc.c - tasks/voc.c: annotation XML as the devkit and VOC exporters
 * write it (tests/data/voc), what stays refused, with its line; and the
 * image-set lists of ImageSets/Main.
 */
#include "common/eeb_common.h"
#include "tasks/eeb_voc.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA EEB_TEST_DATA "/voc"

static struct eeb_voc_annotation read_ok(const char *path)
{
    struct eeb_voc_annotation a;
    char err[512];
    cr_assert_eq(eeb_voc_read_annotation(path, &a, err, sizeof err), EEB_OK, "%s", err);
    return a;
}

/* ---- annotation XML ---- */

Test(voc, devkit_annotation)
{
    /* <source><annotation> and <owner><name> are not the annotation's or
     * an object's; a <part>'s name and box are not an object */
    struct eeb_voc_annotation a = read_ok(DATA "/VOCdevkit/VOC2007/Annotations/000002.xml");
    cr_assert_str_eq(a.filename, "000002.jpg");
    cr_assert(a.width == 100 && a.height == 80 && a.depth == 3);
    cr_assert_eq(a.nobjects, 2);
    cr_assert_str_eq(a.objects[1].name, "person");
    cr_assert(a.objects[1].box.x0 == 41 && a.objects[1].box.x1 == 90 && a.objects[1].box.y1 == 70);
    cr_assert_eq(a.objects[1].line, 32, "the line of its <object>: %d", a.objects[1].line);
    eeb_voc_annotation_free(&a);
}

Test(voc, exporters_empty_elements_and_float_coordinates)
{
    /* <difficult/>, <truncated/>, <pose/>, <occluded/>, <segmented/> and
     * their empty pairs; xmin, xmax, ymin, ymax in that order */
    struct eeb_voc_annotation a = read_ok(DATA "/exporters/Annotations/IMG_0412_jpg.rf.3f1c9a.xml");
    cr_assert_eq(a.nobjects, 2);
    cr_assert(!a.objects[0].difficult && !a.objects[1].difficult,
              "an empty <difficult> is not difficult (as the devkit reads it)");
    cr_assert(a.objects[0].box.x0 == 10 && a.objects[0].box.x1 == 45 && a.objects[0].box.y0 == 5 &&
              a.objects[0].box.y1 == 40);
    cr_assert(a.objects[1].box.x0 == 50.5 && a.objects[1].box.y1 == 62.5);
    eeb_voc_annotation_free(&a);

    /* an empty <depth>, float coordinates, <attributes> whose <name> is
     * not the object's, an XML declaration */
    a = read_ok(DATA "/exporters/Annotations/frame_000000.xml");
    cr_assert(a.width == 96 && a.height == 64 && a.depth == 0);
    cr_assert_eq(a.nobjects, 2);
    cr_assert_str_eq(a.objects[0].name, "dog");
    cr_assert(a.objects[0].box.x0 == 0 && a.objects[0].box.y0 == 10.5 &&
              a.objects[0].box.x1 == 40.25);
    cr_assert(!a.objects[0].difficult && a.objects[1].difficult);
    eeb_voc_annotation_free(&a);

    /* the root's verified="yes", <path> */
    a = read_ok(DATA "/exporters/Annotations/pet_01.xml");
    cr_assert(a.nobjects == 1 && !a.objects[0].difficult);
    eeb_voc_annotation_free(&a);
}

/*
 * <difficult> is 1, 0 or empty.  The devkit's strcmp(difficult, '1') read
 * every other value as "not difficult", so an exporter writing "true"
 * lost its difficult objects silently; such values are refused.
 */
Test(voc, difficult_is_1_0_or_empty)
{
    const char *dir = test_tmpdir();
    static const struct {
        const char *text;
        int difficult; /* -1: refused */
    } cases[] = {{"1", 1},  {" 1\n", 1},  {"0", 0},     {"\t0 ", 0}, {"", 0},     {"  ", 0},
                 {"2", -1}, {"true", -1}, {"True", -1}, {"1.0", -1}, {"yes", -1}, {"-1", -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char xml[512], path[300], err[512];
        snprintf(xml, sizeof xml,
                 "<annotation>\n<object><name>dog</name>\n<difficult>%s</difficult><bndbox>"
                 "<xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>5</ymax></bndbox></object>"
                 "</annotation>\n",
                 cases[i].text);
        snprintf(path, sizeof path, "%s/a.xml", dir);
        test_write_file(path, xml, strlen(xml));
        struct eeb_voc_annotation a;
        int rc = eeb_voc_read_annotation(path, &a, err, sizeof err);
        if (cases[i].difficult < 0) {
            cr_assert_eq(rc, EEB_EFORMAT, "<difficult>%s</difficult> was accepted", cases[i].text);
            char want[128];
            snprintf(want, sizeof want, "a.xml:3: <difficult> is '%s', not 0, 1 or empty",
                     cases[i].text);
            cr_assert(strstr(err, want), "%s", err);
            continue;
        }
        cr_assert_eq(rc, EEB_OK, "%s", err);
        cr_assert_eq(a.objects[0].difficult, cases[i].difficult, "<difficult>%s</difficult>",
                     cases[i].text);
        eeb_voc_annotation_free(&a);
    }
}

Test(voc, wrong_annotations_are_refused_with_their_line)
{
    const char *dir = test_tmpdir();
    static const struct {
        const char *xml, *error;
    } cases[] = {
        {"<annotation>\n<object><name>dog</name>\n<difficult/>\n</object>\n</annotation>\n",
         "a.xml:4: an <object> without a whole <bndbox>"},
        {"<annotation>\n<object>\n<name>dog</name>\n<bndbox><xmin>9</xmin><ymin>1</ymin>"
         "<xmax>5</xmax><ymax>5</ymax></bndbox>\n</object>\n</annotation>\n",
         "a.xml:5: an <object> whose bndbox has xmax < xmin"},
        {"<annotation>\n<object><name></name><bndbox/></object>\n</annotation>\n",
         "a.xml:2: an object's <name> is empty"},
        {"<annotation>\n<object><name>dog</name><bndbox><xmin/><ymin>1</ymin>"
         "<xmax>5</xmax><ymax>5</ymax></bndbox></object>\n</annotation>\n",
         "a.xml:2: a number was expected in <xmin>, not ''"},
        {"<annotation>\n<size><width>12.5</width></size>\n</annotation>\n",
         "a.xml:2: <width> 12.5 is not a whole number"},
        {"<annotation>\n<object><name>dog</name>\n</annotation>\n", "a.xml:3: mismatched tag"},
        /* a class name names its result file, comp4_det_test_<name>.txt */
        {"<annotation>\n<object>\n<name>cat/dog</name><bndbox/></object>\n</annotation>\n",
         "a.xml:3: class name 'cat/dog' has a '/'"},
        {"<annotation>\n<object><name> .. </name><bndbox/></object>\n</annotation>\n",
         "a.xml:2: class name '..' is '.' or '..'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[300], err[512];
        snprintf(path, sizeof path, "%s/a.xml", dir);
        test_write_file(path, cases[i].xml, strlen(cases[i].xml));
        struct eeb_voc_annotation a;
        cr_assert_eq(eeb_voc_read_annotation(path, &a, err, sizeof err), EEB_EFORMAT, "%s",
                     cases[i].xml);
        cr_assert(strstr(err, cases[i].error), "%s", err);
    }
}

/* ---- image sets ---- */

Test(voc, image_sets_plain_and_per_class)
{
    char err[512];
    struct eeb_voc_image_set s;
    cr_assert_eq(eeb_voc_image_set_read(DATA "/VOCdevkit/VOC2007/ImageSets/Main/test.txt", &s, err,
                                        sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(s.n, 2);
    cr_assert(strcmp(s.ids[0], "000001") == 0 && strcmp(s.ids[1], "000003") == 0);
    cr_assert(s.lines[1] == 2);
    cr_assert(eeb_voc_image_set_has(&s, "000003") && !eeb_voc_image_set_has(&s, "000002"));
    eeb_voc_image_set_free(&s);

    /* "id  -1": the flag says whether the class is in the image, not
     * whether the image is in the set */
    cr_assert_eq(eeb_voc_image_set_read(DATA "/VOCdevkit/VOC2007/ImageSets/Main/cat_test.txt", &s,
                                        err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert(s.n == 2 && strcmp(s.ids[0], "000001") == 0);
    eeb_voc_image_set_free(&s);

    /* CRLF, blank lines, and ids sorted out of the file's order */
    const char *dir = test_tmpdir();
    char path[300];
    snprintf(path, sizeof path, "%s/set.txt", dir);
    test_write_file(path, "b\r\n\r\n  a 0\r\nc\t1", 15);
    cr_assert_eq(eeb_voc_image_set_read(path, &s, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(s.n == 3 && strcmp(s.ids[1], "a") == 0 && s.lines[1] == 3 && s.lines[2] == 4);
    cr_assert(eeb_voc_image_set_has(&s, "a") && eeb_voc_image_set_has(&s, "c"));
    eeb_voc_image_set_free(&s);
}

Test(voc, the_default_image_set_is_the_layouts_test_txt)
{
    char path[4096], err[1024];
    cr_assert_eq(eeb_voc_default_image_set(DATA "/VOCdevkit/VOC2007/Annotations", path, sizeof path,
                                           err, sizeof err),
                 1);
    cr_assert_str_eq(path, DATA "/VOCdevkit/VOC2007/ImageSets/Main/test.txt");
    cr_assert_eq(eeb_voc_default_image_set(DATA "/VOCdevkit/VOC2007/Annotations//", path,
                                           sizeof path, err, sizeof err),
                 1);
    cr_assert_str_eq(path, DATA "/VOCdevkit/VOC2007/ImageSets/Main/test.txt");
    /* not an Annotations folder; not a folder: no set */
    cr_assert_eq(
        eeb_voc_default_image_set(DATA "/VOCdevkit/VOC2007", path, sizeof path, err, sizeof err),
        0);
    cr_assert_eq(eeb_voc_default_image_set(DATA "/VOCdevkit/VOC2007/Annotations/000001.xml", path,
                                           sizeof path, err, sizeof err),
                 0);
    /* ImageSets/Main without test.txt: the sets there, none chosen */
    cr_assert_eq(eeb_voc_default_image_set(DATA "/exporters/Annotations", path, sizeof path, err,
                                           sizeof err),
                 EEB_EINVAL);
    cr_assert(strstr(err, DATA "/exporters/ImageSets/Main has no test.txt"), "%s", err);
    cr_assert(strstr(err, "(there: train.txt)"), "%s", err);

    /* no ImageSets/Main, or one without lists: no set */
    const char *dir = test_tmpdir();
    char ann[300];
    snprintf(ann, sizeof ann, "%s/Annotations", dir);
    test_mkdirs(dir, "Annotations");
    cr_assert_eq(eeb_voc_default_image_set(ann, path, sizeof path, err, sizeof err), 0);
    test_mkdirs(dir, "ImageSets/Main");
    cr_assert_eq(eeb_voc_default_image_set(ann, path, sizeof path, err, sizeof err), 0);
}

/* ---- ground truth ---- */

Test(voc, truth_of_an_image_set_reads_only_its_annotations)
{
    /* a broken annotation outside the set is never read */
    const char *dir = test_tmpdir();
    char ann[300], path[400], err[512];
    snprintf(ann, sizeof ann, "%s/Annotations", dir);
    test_mkdirs(dir, "Annotations/x");
    const char *ids[] = {"000001", "000003"};
    for (int i = 0; i < 2; i++) {
        char from[300];
        snprintf(from, sizeof from, "voc/VOCdevkit/VOC2007/Annotations/%s.xml", ids[i]);
        size_t len;
        char *xml = test_fixture(from, &len);
        snprintf(path, sizeof path, "%s/%s.xml", ann, ids[i]);
        test_write_file(path, xml, len);
        free(xml);
    }
    snprintf(path, sizeof path, "%s/000002.xml", ann);
    test_write_file(path, "<annotation><object>", 20);
    struct eeb_voc_image_set s;
    cr_assert_eq(eeb_voc_image_set_read(DATA "/VOCdevkit/VOC2007/ImageSets/Main/test.txt", &s, err,
                                        sizeof err),
                 EEB_OK, "%s", err);
    struct eeb_voc_truth_set t;
    cr_assert_eq(eeb_voc_truth_load_set(ann, &s, &t, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(t.nimages, 2);
    cr_assert_eq(t.nclasses, 3);
    cr_assert_str_eq(t.classes[0], "cat");
    cr_assert_str_eq(t.image_set, DATA "/VOCdevkit/VOC2007/ImageSets/Main/test.txt");
    int dog = eeb_voc_class_index(&t, "dog");
    cr_assert_eq(t.ntruth[dog], 2);
    eeb_voc_truth_free(&t);
    eeb_voc_image_set_free(&s);

    /* without a set, every file: the broken one fails */
    cr_assert_eq(eeb_voc_truth_load(ann, &t, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "000002.xml:1: "), "%s", err);
}

Test(voc, the_classes_of_an_annotation_folder)
{
    char **names, err[512];
    int n, files;
    cr_assert_eq(eeb_voc_annotation_classes(DATA "/fruit/Annotations", 0, &names, &n, &files, err,
                                            sizeof err),
                 EEB_OK, "%s", err);
    cr_assert(n == 3 && files == 9);
    cr_assert(strcmp(names[0], "kiwi") == 0 && strcmp(names[1], "mango") == 0 &&
              strcmp(names[2], "pear") == 0);
    eeb_voc_names_free(names, n);

    /* skip_bad passes over a file that does not read */
    const char *dir = test_tmpdir();
    char path[300];
    snprintf(path, sizeof path, "%s/a.xml", dir);
    test_write_file(path, "<annotation><object><name>fig</name></object></annotation>", 58);
    snprintf(path, sizeof path, "%s/b.xml", dir);
    static const char b[] = "<annotation><object><name>yuzu</name><bndbox><xmin>1</xmin><ymin>1"
                            "</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object></annotation>";
    test_write_file(path, b, sizeof b - 1);
    cr_assert_eq(eeb_voc_annotation_classes(dir, 0, &names, &n, &files, err, sizeof err),
                 EEB_EFORMAT);
    cr_assert(strstr(err, "a.xml:1: an <object> without a whole <bndbox>"), "%s", err);
    cr_assert_eq(eeb_voc_annotation_classes(dir, 1, &names, &n, &files, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_assert(n == 1 && files == 1 && strcmp(names[0], "yuzu") == 0);
    eeb_voc_names_free(names, n);
}
