/*
 * task.c - the names of the benchmark's tasks: their identity as the run
 * database, the rules file and the command line spell it.  What a task is
 * and does is tasks/'s (eeb_task_ops.h).
 */
#include "eeb_common.h"

#include <string.h>

static const char *const names[EEB_TASK_COUNT] = {
    [EEB_TASK_CLS] = "cls",
    [EEB_TASK_DET] = "det",
    [EEB_TASK_VIDEO] = "video",
};

const char *eeb_task_name(enum eeb_task task)
{
    return (unsigned)task < EEB_TASK_COUNT ? names[task] : "?";
}

/* "cls, det or video" into out. */
static void list_names(char *out, size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < EEB_TASK_COUNT && used < len; i++) {
        const char *sep = i == 0 ? "" : i == EEB_TASK_COUNT - 1 ? " or " : ", ";
        int n = snprintf(out + used, len - used, "%s%s", sep, names[i]);
        used += n > 0 ? (size_t)n : 0;
    }
}

int eeb_task_parse(const char *name, enum eeb_task *out, char *err, size_t errlen)
{
    for (int i = 0; i < EEB_TASK_COUNT; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (enum eeb_task)i;
            return EEB_OK;
        }
    }
    char expected[128];
    list_names(expected, sizeof expected);
    return eeb_errf(err, errlen, EEB_EINVAL, "unknown task '%s' (expected %s)", name, expected);
}
