/*
 * task_det.c - object detection (Tao et al., Table 2): Pascal VOC's
 * layout, the image backbone under a single-shot grid head, VOC mAP@0.5
 * over the boxes it reports.
 */
#include "tasks_int.h"

const struct eeb_task_ops eeb_task_det_ops = {
    .version = EEB_TASK_OPS_VERSION,
    .task = EEB_TASK_DET,
    .metric = "mAP@0.5",
    .train_metric = "object-cell class",
    .prediction = EEB_PREDICTION_BOXES,
    .clips = 0,
    .profile = TASKS_EMBEDDED_PROFILE(1, 0.005), /* the grid loss diverges at 0.01 on this data */
    .import = EEB_IMPORT_VOC,
    .gen_classes = TASKS_GEN_SHAPES,
    .gen_class_name = tasks_gen_det_name,
    .gen_record = tasks_gen_det,
    .model_features = tasks_model_backbone,
    .model_head = tasks_model_grid,
    .loss = EEB_LAYER_GRID_LOSS,
};
