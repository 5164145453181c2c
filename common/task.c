/*
 * task.c - names of the three benchmark tasks and of their metrics.
 */
#include "eeb_common.h"

#include <string.h>

static const struct {
    const char *name;
    const char *metric;
} tasks[EEB_TASK_COUNT] = {
    [EEB_TASK_CLS] = {"cls", "top-5 accuracy"},
    [EEB_TASK_DET] = {"det", "mAP@0.5"},
    [EEB_TASK_VIDEO] = {"video", "top-5 accuracy"},
};

const char *eeb_task_name(enum eeb_task task)
{
    return (unsigned)task < EEB_TASK_COUNT ? tasks[task].name : "?";
}

const char *eeb_task_metric(enum eeb_task task)
{
    return (unsigned)task < EEB_TASK_COUNT ? tasks[task].metric : "?";
}

int eeb_task_parse(const char *name, enum eeb_task *out, char *err, size_t errlen)
{
    for (int i = 0; i < EEB_TASK_COUNT; i++) {
        if (strcmp(name, tasks[i].name) == 0) {
            *out = (enum eeb_task)i;
            return EEB_OK;
        }
    }
    return eeb_errf(err, errlen, EEB_EINVAL, "unknown task '%s' (expected cls, det or video)",
                    name);
}
