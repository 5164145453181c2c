/*
 * test_gen.c - the synthetic data generators: reproducible, every class
 * present, boxes tight and inside the image, clips that move; and the
 * `eeb data gen|info` commands.
 */
#include "tasks/eeb_gen.h"
#include "tasks/eeb_shard.h"
#include "tasks/eeb_task_ops.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *gen(const struct eeb_gen_spec *sp, const char *name)
{
    static char path[8][256];
    static int turn;
    char *p = path[turn++ % 8];
    snprintf(p, 256, "%s/%s", test_tmpdir(), name);
    char err[256];
    cr_assert_eq(eeb_gen_shard(p, sp, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    return p;
}

static int same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = test_read_file(a, &la), *y = test_read_file(b, &lb);
    int same = la == lb && memcmp(x, y, la) == 0;
    free(x), free(y);
    return same;
}

Test(gen, reproducible_and_each_split_domain_and_seed_its_own)
{
    struct eeb_gen_spec sp = {EEB_TASK_CLS, EEB_GEN_PRETRAIN, 0, 40, 7, 32, 1};
    const char *a = gen(&sp, "a.eebd"), *b = gen(&sp, "b.eebd");
    cr_assert(same_file(a, b), "the same spec gave different bytes");
    sp.test = 1;
    cr_assert_not(same_file(a, gen(&sp, "c.eebd")));
    sp.test = 0, sp.domain = EEB_GEN_FINETUNE;
    cr_assert_not(same_file(a, gen(&sp, "d.eebd")));
    sp.domain = EEB_GEN_PRETRAIN, sp.seed = 8;
    cr_assert_not(same_file(a, gen(&sp, "e.eebd")));
}

/* Every class turns up in 400 records, none more than 3x its share. */
static void classes_balanced(enum eeb_task task, int frames)
{
    struct eeb_gen_spec sp = {task, EEB_GEN_FINETUNE, 0, 400, 3, 24, frames};
    struct eeb_shard *s;
    char err[256];
    cr_assert_eq(eeb_shard_open(&s, gen(&sp, "bal.eebd"), err, sizeof err), EEB_OK, "%s", err);
    int k = eeb_task_get(task)->gen_classes, count[32] = {0}, total = 0;
    cr_assert_eq(eeb_shard_info(s)->classes, k);
    const struct eeb_record *r;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1) {
        if (task != EEB_TASK_DET)
            count[r->label]++, total++;
        for (int i = 0; i < r->nboxes; i++)
            count[r->boxes[i].cls]++, total++;
    }
    for (int i = 0; i < k; i++)
        cr_assert(count[i] > 0 && count[i] < 3 * total / k, "%s class %d: %d of %d",
                  eeb_task_name(task), i, count[i], total);
    eeb_shard_close(s);
}

Test(gen, every_class_turns_up)
{
    classes_balanced(EEB_TASK_CLS, 1);
    classes_balanced(EEB_TASK_DET, 1);
    classes_balanced(EEB_TASK_VIDEO, 4);
}

/* Boxes lie in the image, objects are drawn where their boxes are (the
 * centre pixel differs from the image's corners' mean), some are
 * difficult. */
Test(gen, detection_boxes_are_where_the_objects_are)
{
    struct eeb_gen_spec sp = {EEB_TASK_DET, EEB_GEN_PRETRAIN, 1, 200, 5, 48, 1};
    struct eeb_shard *s;
    char err[256];
    cr_assert_eq(eeb_shard_open(&s, gen(&sp, "det.eebd"), err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *r;
    int boxes = 0, difficult = 0, bright = 0;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1) {
        cr_assert(r->nboxes >= 1 && r->nboxes <= 4, "%s: %d boxes", r->id, r->nboxes);
        for (int i = 0; i < r->nboxes; i++) {
            const struct eeb_box *b = &r->boxes[i];
            cr_assert(b->x0 >= 0 && b->x1 <= 48 && b->y0 >= 0 && b->y1 <= 48 && b->x1 > b->x0);
            difficult += b->difficult;
            if (b->difficult)
                continue;
            boxes++;
            /* the pre-train background is grey at most 75: every shape
             * covers its box's middle column 15 % down, in its colour or
             * the texture's shade of it (0.4 x, still over 80) */
            int x = (int)((b->x0 + b->x1) / 2), y = (int)(b->y0 + (b->y1 - b->y0) * 0.15);
            const uint8_t *p = r->pixels + ((size_t)y * 48 + x) * 3;
            bright += p[0] > 80 || p[1] > 80 || p[2] > 80;
        }
    }
    eeb_shard_close(s);
    cr_assert_gt(difficult, 10, "%d difficult of %d", difficult, boxes);
    cr_assert_gt(bright, boxes * 9 / 10, "%d of %d box tops lit", bright, boxes);
}

Test(gen, clips_move)
{
    struct eeb_gen_spec sp = {EEB_TASK_VIDEO, EEB_GEN_PRETRAIN, 0, 20, 2, 32, 6};
    struct eeb_shard *s;
    char err[256];
    cr_assert_eq(eeb_shard_open(&s, gen(&sp, "v.eebd"), err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *r;
    size_t frame = 32 * 32 * 3;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1) {
        long moved = 0;
        for (size_t i = 0; i < frame; i++)
            moved += abs(r->pixels[i] - r->pixels[5 * frame + i]) > 60;
        cr_assert_gt(moved, 20, "%s (class %d): %ld pixels changed", r->id, r->label, moved);
    }
    eeb_shard_close(s);
    sp.frames = 1;
    cr_assert_eq(eeb_gen_shard("/nonexistent/x.eebd", &sp, NULL, NULL, err, sizeof err),
                 EEB_EINVAL);
    cr_assert(strstr(err, "1 frames (2..64 for video)"), "%s", err);
}

Test(gen, the_commands)
{
    char out[256];
    snprintf(out, sizeof out, "%s/det.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "gen", "--task", "det", "--domain", "finetune", "--split",
                                  "test", "--n", "30", "--size", "32", "-o", out, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "30 det records, 5 classes, 32x32x3"), "%s", r.out);
    test_run_free(&r);

    r = test_eeb((const char *[]){"data", "info", out, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "task det (mAP@0.5)"), "%s", r.out);
    cr_assert(strstr(r.out, "records  30\n"), "%s", r.out);
    cr_assert(strstr(r.out, "     2  triangle "), "%s", r.out);
    test_run_free(&r);

    r = test_eeb((const char *[]){"data", "info", "--json", out, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"records\": 30"), "%s", r.out);
    cr_assert(strstr(r.out, "\"name\": \"ring\""), "%s", r.out);
    test_run_free(&r);

    r = test_eeb((const char *[]){"data", "gen", "--task", "cls", "--domain", "target", "--split",
                                  "test", "--n", "3", "-o", out, NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--domain: 'target' (pretrain or finetune)"), "%s", r.err);
    test_run_free(&r);

    r = test_eeb((const char *[]){"data", "info", "/nonexistent.eebd", NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "/nonexistent.eebd: No such file"), "%s", r.err);
    test_run_free(&r);

    /* --preset paper: each task's size; --frames given as well wins */
    static const char *const tasks[][2] = {
        {"cls", "224x224x3\n"}, {"det", "416x416x3\n"}, {"video", "170x170x3 x 10 frames\n"}};
    for (int t = 0; t < 3; t++) {
        r = test_eeb((const char *[]){"data", "gen", "--task", tasks[t][0], "--domain", "finetune",
                                      "--split", "test", "--n", "2", "--preset", "paper", "-o", out,
                                      NULL});
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert(strstr(r.out, tasks[t][1]), "%s", r.out);
        test_run_free(&r);
    }
    r = test_eeb((const char *[]){"data", "gen", "--task", "video", "--domain", "finetune",
                                  "--split", "test", "--n", "2", "--frames", "4", "--preset",
                                  "paper", "-o", out, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "170x170x3 x 4 frames\n"), "%s", r.out);
    test_run_free(&r);

    r = test_eeb((const char *[]){"data", "--help", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "  paper    video  10 frames of 170x170"), "%s", r.out);
    test_run_free(&r);
}
