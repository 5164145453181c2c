/*
 * eeb_embedded.h - a task's embedded default: synthetic fine-tune and test
 * shards and a base model pre-trained on a third, made once in a folder
 * and found there afterwards, so that `eeb run --task T` needs no data.
 */
#ifndef EEB_EMBEDDED_H
#define EEB_EMBEDDED_H

#include "common/eeb_common.h"

#include <stddef.h>
#include <stdio.h>

struct eeb_embedded {
    char pretrain[4200], finetune[4200], test[4200], model[4200];
};

/* Makes what of task's embedded default is missing in dir (an existing
 * folder): the shards (the test shard only if with_test), then the base
 * model.  Each step is logged as the eeb command that does the same, then
 * what it made (log NULL: silent).  out names the four files. */
int eeb_embedded_make(enum eeb_task task, const char *dir, int with_test, FILE *log,
                      struct eeb_embedded *out, char *err, size_t errlen);

#endif
