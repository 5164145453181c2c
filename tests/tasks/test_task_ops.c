/*
 * test_task_ops.c - the tasks' ops tables and their registry: every task
 * has one, found by number, name and import layout; and what a table
 * says is what the task does -- its generator's shards carry what its
 * prediction kind judges against, and its own reference model fits them.
 */
#include "tasks/eeb_gen.h"
#include "tasks/eeb_task_ops.h"
#include "tasks/eeb_tasks.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(task_ops, every_task_has_one_table_found_by_number_and_name)
{
    const struct eeb_task_ops *const *list = eeb_task_list();
    int n = 0;
    for (; list[n]; n++) {
        const struct eeb_task_ops *ops = list[n];
        cr_assert_eq(ops->version, EEB_TASK_OPS_VERSION, "%s", eeb_task_name(ops->task));
        cr_assert_eq(eeb_task_get(ops->task), ops);
        cr_assert_eq(eeb_task_find(eeb_task_name(ops->task)), ops);
        cr_assert_eq(eeb_task_importing(ops->import), ops, "%s", eeb_task_name(ops->task));
        cr_assert(ops->metric && ops->train_metric && ops->gen_record && ops->gen_class_name &&
                      ops->model_features && ops->model_head,
                  "%s leaves a slot empty", eeb_task_name(ops->task));
        for (int k = 0; k < n; k++)
            cr_assert_neq(list[k]->task, ops->task, "two tables for %s", eeb_task_name(ops->task));
    }
    cr_assert_eq(n, EEB_TASK_COUNT, "%d tables for %d tasks", n, EEB_TASK_COUNT);
    cr_assert_null(eeb_task_get(EEB_TASK_COUNT));
    cr_assert_null(eeb_task_get((enum eeb_task) - 1));
    cr_assert_null(eeb_task_find("segmentation"));
    cr_assert_null(eeb_task_find(""));
}

Test(task_ops, the_tables_say_what_the_tasks_were)
{
    cr_assert_str_eq(eeb_task_metric(EEB_TASK_CLS), "top-5 accuracy");
    cr_assert_str_eq(eeb_task_metric(EEB_TASK_DET), "mAP@0.5");
    cr_assert_str_eq(eeb_task_metric(EEB_TASK_VIDEO), "top-5 accuracy");
    cr_assert_str_eq(eeb_task_metric(EEB_TASK_COUNT), "?");
    cr_assert_eq(eeb_task_get(EEB_TASK_DET)->prediction, EEB_PREDICTION_BOXES);
    cr_assert_eq(eeb_task_get(EEB_TASK_CLS)->prediction, EEB_PREDICTION_RANKED);
    cr_assert_eq(eeb_task_get(EEB_TASK_VIDEO)->prediction, EEB_PREDICTION_RANKED);
    cr_assert(eeb_task_get(EEB_TASK_VIDEO)->clips && !eeb_task_get(EEB_TASK_CLS)->clips &&
              !eeb_task_get(EEB_TASK_DET)->clips);
    cr_assert_eq(eeb_task_importing(EEB_IMPORT_FOOD101)->task, EEB_TASK_CLS);
    cr_assert_eq(eeb_task_importing(EEB_IMPORT_VOC)->task, EEB_TASK_DET);
    cr_assert_eq(eeb_task_importing(EEB_IMPORT_UCF101)->task, EEB_TASK_VIDEO);
    cr_assert_eq(eeb_task_get(EEB_TASK_CLS)->gen_classes, 20);
    cr_assert_eq(eeb_task_get(EEB_TASK_DET)->gen_classes, 5);
    cr_assert_eq(eeb_task_get(EEB_TASK_VIDEO)->gen_classes, 20);
    /* the embedded defaults: a clip task's items have frames, an image's one */
    for (const struct eeb_task_ops *const *t = eeb_task_list(); *t; t++) {
        const struct eeb_task_profile *p = eeb_task_profile((*t)->task);
        cr_assert_eq(p, &(*t)->profile);
        cr_assert_eq(p->frames > 1, (*t)->clips, "%s: %d frames", eeb_task_name((*t)->task),
                     p->frames);
        cr_assert_str_eq(p->design, EEB_TASK_DESIGN);
    }
    cr_assert_eq(eeb_task_profile(EEB_TASK_VIDEO)->frames, 8);
    cr_assert_float_eq(eeb_task_profile(EEB_TASK_DET)->lr, 0.005, 1e-12);
}

/* The generator's shard for ops: items shaped as ops says, holding the
 * truth its prediction kind is judged against, fitted by its model. */
static void generated_data_fits(const struct eeb_task_ops *ops)
{
    const char *name = eeb_task_name(ops->task);
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s.eebd", test_tmpdir(), name);
    struct eeb_gen_spec sp = {ops->task, EEB_GEN_PRETRAIN, 0, 12, 3, 16, ops->clips ? 4 : 1};
    cr_assert_eq(eeb_gen_shard(path, &sp, NULL, NULL, err, sizeof err), EEB_OK, "%s", err);
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, path, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *in = eeb_shard_info(s);
    cr_assert_eq(in->task, ops->task);
    cr_assert_eq(in->classes, ops->gen_classes);
    cr_assert_eq(in->frames, ops->clips ? 4 : 1);
    char first[EEB_SHARD_MAX_NAME + 1];
    ops->gen_class_name(0, first);
    cr_assert_str_eq(in->names[0], first);
    const struct eeb_record *r;
    int boxes = 0, labels = 0;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1)
        boxes += r->nboxes, labels += r->label != 0;
    if (ops->prediction == EEB_PREDICTION_BOXES)
        cr_assert(boxes > 0 && labels == 0, "%s: %d boxes, %d labels", name, boxes, labels);
    else
        cr_assert(boxes == 0 && labels > 0, "%s: %d boxes, %d labels", name, boxes, labels);
    struct eeb_net *net;
    cr_assert_eq(eeb_task_model(in, 1, &net, err, sizeof err), EEB_OK, "%s: %s", name, err);
    cr_assert_eq(eeb_net_loss(net)->kind, ops->loss, "%s", name);
    cr_assert_eq(eeb_task_check_model(net, in, err, sizeof err), EEB_OK, "%s: %s", name, err);
    eeb_net_free(net);
    eeb_shard_close(s);
}

Test(task_ops, each_generator_makes_what_its_model_fits)
{
    for (const struct eeb_task_ops *const *t = eeb_task_list(); *t; t++)
        generated_data_fits(*t);
}

/* A clip task's limits and an image task's single frame come from the
 * table, with the messages they always had. */
Test(task_ops, frames_follow_the_table)
{
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/x.eebd", test_tmpdir());
    struct eeb_gen_spec sp = {EEB_TASK_VIDEO, EEB_GEN_PRETRAIN, 0, 2, 1, 16, 65};
    cr_assert_eq(eeb_gen_shard(path, &sp, NULL, NULL, err, sizeof err), EEB_EINVAL);
    cr_assert_str_eq(err, "generator: 65 frames (2..64 for video)");
    sp.task = EEB_TASK_DET, sp.frames = 2;
    cr_assert_eq(eeb_gen_shard(path, &sp, NULL, NULL, err, sizeof err), EEB_EINVAL);
    cr_assert_str_eq(err, "generator: 2 frames (images have 1)");
    struct eeb_shard_info video = {EEB_TASK_VIDEO, 16, 16, 3, 65, 4, NULL, 0};
    struct eeb_net *net;
    cr_assert_eq(eeb_task_model(&video, 1, &net, err, sizeof err), EEB_EINVAL);
    cr_assert_str_eq(err, "video model: 65 frames (at most 64)");
}
