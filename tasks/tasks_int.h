/*
 * tasks_int.h - what the files of tasks/ share and nothing outside uses:
 * the parts each task's ops table (task_*.c) is put together from -- the
 * synthetic worlds of gen.c and the model blocks of models.c.
 */
#ifndef TASKS_INT_H
#define TASKS_INT_H

#include "eeb_task_ops.h"

/* ---- the tasks (task_*.c), which registry.c lists ---- */

extern const struct eeb_task_ops eeb_task_cls_ops, eeb_task_det_ops, eeb_task_video_ops;

/* ---- gen.c: the synthetic worlds (eeb_gen.h describes them) ---- */

enum {
    TASKS_GEN_SHAPES = 5,
    TASKS_GEN_TEXTURES = 4,
    TASKS_GEN_MOTIONS = 10,
    TASKS_GEN_VIDEO_SHAPES = 2
};

/* cls: a shape of a texture, one object per image */
void tasks_gen_cls_name(int k, char name[EEB_SHARD_MAX_NAME + 1]);
void tasks_gen_cls(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng);
/* det: 1-3 boxed shapes, now and then a tiny difficult one */
void tasks_gen_det_name(int k, char name[EEB_SHARD_MAX_NAME + 1]);
void tasks_gen_det(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng);
/* video: a shape in one of 10 motions over the frames */
void tasks_gen_video_name(int k, char name[EEB_SHARD_MAX_NAME + 1]);
void tasks_gen_video(const struct eeb_gen_spec *sp, struct eeb_record *r, uint64_t *rng);

/* ---- models.c: the reference models' blocks (eeb_task_model) ---- */

/* Features of images: three stride-2 stages, two residual blocks,
 * input/8 resolution, 128 channels. */
int tasks_model_backbone(struct eeb_net *net, const struct eeb_shard_info *info);
/* Features of clips stacked along channels: slow fusion, the same
 * resolution and channels. */
int tasks_model_slow_fusion(struct eeb_net *net, const struct eeb_shard_info *info);
/* Global pooling, fc, softmax cross-entropy. */
int tasks_model_classifier(struct eeb_net *net, int features, int classes);
/* A single-shot grid head: one box per cell, YOLO v1 style. */
int tasks_model_grid(struct eeb_net *net, int features, int classes);

/* The profile every task's embedded default starts from: they differ in
 * frames per item and the learning rate. */
#define TASKS_EMBEDDED_PROFILE(frames_, lr_)                                                       \
    {                                                                                              \
        .size = 32, .frames = (frames_), .pretrain_n = 2000, .finetune_n = 1000, .test_n = 300,    \
        .pretrain_epochs = 4, .lr = (lr_), .epochs = 5, .t_max_s = 30, .p_max_w = 10,              \
        .design = EEB_TASK_DESIGN                                                                  \
    }

#endif
