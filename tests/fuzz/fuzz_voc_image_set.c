/* fuzz_voc_image_set.c - a Pascal VOC ImageSets/Main list (tasks/voc.c). */
#include "common/eeb_common.h"
#include "tasks/eeb_voc.h"
#include "fuzz.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[32], err[512];
    int fd = fuzz_file(data, size, path);
    if (fd < 0)
        return 0;
    struct eeb_voc_image_set s;
    if (eeb_voc_image_set_read(path, &s, err, sizeof err) == EEB_OK) {
        for (int i = 0; i < s.n; i++) /* every id is found again */
            if (!eeb_voc_image_set_has(&s, s.ids[i]))
                __builtin_trap();
        eeb_voc_image_set_free(&s);
    }
    close(fd);
    return 0;
}
