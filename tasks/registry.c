/*
 * registry.c - the tasks built in (eeb_task_ops.h): the list, and a task
 * by its number, its name or the dataset layout it imports; a task's name
 * as a model file holds it.
 */
#include "tasks_int.h"

#include "fpga/net/eeb_model.h"

#include <string.h>

static const struct eeb_task_ops *const tasks[] = {
    &eeb_task_cls_ops,
    &eeb_task_det_ops,
    &eeb_task_video_ops,
    NULL,
};

const struct eeb_task_ops *const *eeb_task_list(void)
{
    return tasks;
}

const struct eeb_task_ops *eeb_task_get(enum eeb_task task)
{
    for (int i = 0; tasks[i]; i++)
        if (tasks[i]->task == task)
            return tasks[i];
    return NULL;
}

const struct eeb_task_ops *eeb_task_find(const char *name)
{
    for (int i = 0; tasks[i]; i++)
        if (strcmp(eeb_task_name(tasks[i]->task), name) == 0)
            return tasks[i];
    return NULL;
}

const struct eeb_task_ops *eeb_task_importing(enum eeb_import_format format)
{
    for (int i = 0; tasks[i]; i++)
        if (tasks[i]->import == format)
            return tasks[i];
    return NULL;
}

const char *eeb_task_metric(enum eeb_task task)
{
    const struct eeb_task_ops *ops = eeb_task_get(task);
    return ops ? ops->metric : "?";
}

const struct eeb_task_profile *eeb_task_profile(enum eeb_task task)
{
    return &eeb_task_get(task)->profile;
}

const char *eeb_task_name_or_none(int task)
{
    return task == EEB_MODEL_NO_TASK ? "none" : eeb_task_name((enum eeb_task)task);
}
