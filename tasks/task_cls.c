/*
 * task_cls.c - image classification (Tao et al., Table 2): Food-101's
 * layout, a residual CNN, top-5 accuracy over ranked classes.
 */
#include "tasks_int.h"

const struct eeb_task_ops eeb_task_cls_ops = {
    .version = EEB_TASK_OPS_VERSION,
    .task = EEB_TASK_CLS,
    .metric = "top-5 accuracy",
    .train_metric = "top-1",
    .prediction = EEB_PREDICTION_RANKED,
    .clips = 0,
    /* 0.05 made pre-training chaotic: 17 % or 42 % train top-1 */
    .profile = TASKS_EMBEDDED_PROFILE(1, 0.02),
    .import = EEB_IMPORT_FOOD101,
    .gen_classes = TASKS_GEN_SHAPES * TASKS_GEN_TEXTURES,
    .gen_class_name = tasks_gen_cls_name,
    .gen_record = tasks_gen_cls,
    .model_features = tasks_model_backbone,
    .model_head = tasks_model_classifier,
    .loss = EEB_LAYER_SOFTMAX_CE,
};
