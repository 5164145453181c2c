/*
 * task_video.c - video classification (Tao et al., Table 2): UCF-101's
 * layout, clips of frames stacked along channels, a slow-fusion CNN,
 * top-5 accuracy over ranked classes.
 */
#include "tasks_int.h"

const struct eeb_task_ops eeb_task_video_ops = {
    .version = EEB_TASK_OPS_VERSION,
    .task = EEB_TASK_VIDEO,
    .metric = "top-5 accuracy",
    .train_metric = "top-1",
    .prediction = EEB_PREDICTION_RANKED,
    .clips = 1,
    .profile = TASKS_EMBEDDED_PROFILE(8, 0.05),
    .import = EEB_IMPORT_UCF101,
    .gen_classes = TASKS_GEN_VIDEO_SHAPES * TASKS_GEN_MOTIONS,
    .gen_class_name = tasks_gen_video_name,
    .gen_record = tasks_gen_video,
    .model_features = tasks_model_slow_fusion,
    .model_head = tasks_model_classifier,
    .loss = EEB_LAYER_SOFTMAX_CE,
};
