/*
 * preset.c - the one table of named item sizes (eeb_preset.h), and the
 * lookups `eeb data` makes in it.  docs/data.md says why each size.
 */
#include "eeb_preset.h"

#include <stdio.h>
#include <string.h>

/*
 * paper: cls at the 224x224 input of the ImageNet-pre-trained CNNs a
 * Food-101 fine-tune starts from; det at 416x416, the input of YOLO v2/v3
 * and Tiny-YOLO (YOLO v1, whose one-box-per-cell head eeb's grid follows,
 * took 448), a multiple of 32 and of 8, so eeb's input/8 grid is 52x52;
 * video as Karpathy et al.'s slow fusion took UCF-101 in its transfer
 * experiments: 10 frames, whose four 4-frame groups 2 apart are the
 * network's first layer, of 170x170.
 */
static const struct eeb_preset presets[] = {
    {"paper", EEB_TASK_CLS, 224, 1, "ImageNet CNNs"},
    {"paper", EEB_TASK_DET, 416, 1, "YOLO v2/v3, Tiny-YOLO"},
    {"paper", EEB_TASK_VIDEO, 170, 10, "slow fusion, Karpathy et al."},
};

enum { NPRESETS = sizeof presets / sizeof presets[0] };

_Static_assert(NPRESETS > 0, "the preset table is empty");

const struct eeb_preset *eeb_preset_list(int *n)
{
    *n = NPRESETS;
    return presets;
}

const struct eeb_preset *eeb_preset_find(const char *name, enum eeb_task task)
{
    for (int i = 0; i < NPRESETS; i++)
        if (presets[i].task == task && strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

int eeb_preset_get(const char *name, enum eeb_task task, const struct eeb_preset **out, char *err,
                   size_t errlen)
{
    if ((*out = eeb_preset_find(name, task)) != NULL)
        return EEB_OK;
    char names[256] = "";
    size_t used = 0;
    for (int i = 0; i < NPRESETS; i++) {
        if (presets[i].task != task)
            continue;
        int len =
            snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", presets[i].name);
        if (len < 0 || (size_t)len >= sizeof names - used)
            break;
        used += (size_t)len;
    }
    return eeb_errf(err, errlen, EEB_EINVAL, "'%s' (%s: %s)", name, eeb_task_name(task),
                    used ? names : "none");
}
