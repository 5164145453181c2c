/*
 * labels.c - a record's labels in the form the net's loss takes them.
 */
#include "eeb_tasks.h"

#include "fpga/kernel/fx_isa.h"

#include <math.h>
#include <string.h>

size_t eeb_task_label_count(const struct eeb_net *net)
{
    const struct eeb_layer *loss = eeb_net_loss(net);
    if (loss && loss->kind == EEB_LAYER_GRID_LOSS)
        return (size_t)loss->out.h * loss->out.w * FX_GT_N;
    return 1;
}

long eeb_task_targets(const struct eeb_net *net, const struct eeb_batch *b)
{
    const struct eeb_layer *loss = eeb_net_loss(net);
    if (!loss || loss->kind != EEB_LAYER_GRID_LOSS)
        return b->n;
    size_t cells = (size_t)loss->out.h * loss->out.w * (size_t)b->n;
    long objects = 0;
    for (size_t i = 0; i < cells; i++)
        objects += b->labels[i * FX_GT_N + FX_GT_OBJ] != 0;
    return objects;
}

static int32_t q16(double v)
{
    return (int32_t)lrint(v * 65536);
}

void eeb_task_labels(const struct eeb_net *net, const struct eeb_shard_info *info,
                     const struct eeb_record *r, int32_t *labels)
{
    const struct eeb_layer *loss = eeb_net_loss(net);
    if (!loss || loss->kind != EEB_LAYER_GRID_LOSS) {
        labels[0] = r->label;
        return;
    }
    int gh = loss->out.h, gw = loss->out.w;
    memset(labels, 0, (size_t)gh * gw * FX_GT_N * sizeof *labels);
    float best_area[EEB_SHARD_MAX_BOXES];
    int owner[EEB_SHARD_MAX_BOXES]; /* cell each box landed in, for the area test */
    for (int i = 0; i < r->nboxes; i++) {
        const struct eeb_box *b = &r->boxes[i];
        owner[i] = -1;
        if (b->difficult)
            continue;
        double cx = (b->x0 + b->x1) / 2 / info->w * gw, cy = (b->y0 + b->y1) / 2 / info->h * gh;
        int gx = cx >= gw ? gw - 1 : (int)cx, gy = cy >= gh ? gh - 1 : (int)cy;
        int cell = gy * gw + gx;
        float area = (b->x1 - b->x0) * (b->y1 - b->y0);
        int taken = 0;
        for (int j = 0; j < i; j++)
            if (owner[j] == cell && best_area[j] >= area)
                taken = 1;
        if (taken)
            continue;
        for (int j = 0; j < i; j++)
            if (owner[j] == cell)
                owner[j] = -1;
        owner[i] = cell;
        best_area[i] = area;
        int32_t *t = labels + (size_t)cell * FX_GT_N;
        t[FX_GT_OBJ] = 1;
        t[FX_GT_CLASS] = b->cls;
        t[FX_GT_X] = q16(cx - gx);
        t[FX_GT_Y] = q16(cy - gy);
        t[FX_GT_W] = q16(sqrt((b->x1 - b->x0) / info->w));
        t[FX_GT_H] = q16(sqrt((b->y1 - b->y0) / info->h));
    }
}
