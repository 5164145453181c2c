/*
 * task_data.c - the clip and detection shards the tasks suites share: each
 * record's contents a function of its number, so what a reader is handed
 * can be checked item by item.
 */
#include "tests/tasks/task_data.h"

#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static char names[3][EEB_SHARD_MAX_NAME + 1] = {"a", "b", "c"};

void task_test_clip(int i, uint8_t px[24])
{
    for (int j = 0; j < 24; j++)
        px[j] = (uint8_t)(j < 12 ? i : 200 + j);
}

const char *task_test_clip_shard(int n)
{
    static char path[128];
    char err[256];
    snprintf(path, sizeof path, "%s/v.eebd", test_tmpdir());
    struct eeb_shard_info info = {EEB_TASK_VIDEO, 2, 2, 3, 2, 3, names, 0};
    struct eeb_shard_writer *w;
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    uint8_t px[24];
    r.pixels = px;
    for (int i = 0; i < n; i++) {
        task_test_clip(i, px);
        snprintf(r.id, sizeof r.id, "clip%02d", i);
        r.label = i % 3;
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
    }
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);
    return path;
}

struct eeb_shard_info task_test_det_info(void)
{
    return (struct eeb_shard_info){EEB_TASK_DET, 16, 16, 3, 1, 3, names, 0};
}

int task_test_det_boxes(int i)
{
    return i % 4;
}

struct eeb_box task_test_det_box(int i, int k)
{
    float x0 = (float)k, y0 = 0.25f * (float)(i % 8);
    return (struct eeb_box){(i + k) % 3, k == 2, x0, y0, x0 + 8, 12.0f + 0.03125f * (float)i};
}

const char *task_test_det_shard(int n)
{
    static char path[128];
    char err[256];
    snprintf(path, sizeof path, "%s/d.eebd", test_tmpdir());
    struct eeb_shard_info info = task_test_det_info();
    struct eeb_shard_writer *w;
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    static uint8_t px[16 * 16 * 3];
    r.pixels = px;
    for (int i = 0; i < n; i++) {
        memset(px, 7, sizeof px);
        px[0] = (uint8_t)i;
        snprintf(r.id, sizeof r.id, "img%02d", i);
        r.nboxes = task_test_det_boxes(i);
        for (int k = 0; k < r.nboxes; k++)
            r.boxes[k] = task_test_det_box(i, k);
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
    }
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);
    return path;
}
