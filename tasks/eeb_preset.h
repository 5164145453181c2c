/*
 * eeb_preset.h - named item sizes for each task's data: what `eeb data gen`
 * and `eeb data import` make with --preset NAME.  One table (preset.c)
 * holds every preset of every task; --size and --frames given as well
 * override a preset's.  `paper` is the input of the networks the paper's
 * tasks are known by (preset.c says which).
 */
#ifndef EEB_PRESET_H
#define EEB_PRESET_H

#include "common/eeb_common.h"

#include <stddef.h>

struct eeb_preset {
    const char *name; /* "paper" */
    enum eeb_task task;
    int size;         /* pixels per side */
    int frames;       /* per clip; 1 for images */
    const char *from; /* whose input this is, in a few words (for --help) */
};

/* The table, *n entries, in the order --help lists them. */
const struct eeb_preset *eeb_preset_list(int *n);

/* The preset name gives task, or NULL. */
const struct eeb_preset *eeb_preset_find(const char *name, enum eeb_task task);

/* The same, as an error naming the presets there are otherwise: EEB_OK
 * with *out set, or EEB_EINVAL ("'papr' (paper)"). */
int eeb_preset_get(const char *name, enum eeb_task task, const struct eeb_preset **out, char *err,
                   size_t errlen);

#endif
