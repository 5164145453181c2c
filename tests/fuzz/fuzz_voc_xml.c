/* fuzz_voc_xml.c - a Pascal VOC annotation (expat). */
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
    struct eeb_voc_annotation a;
    if (eeb_voc_read_annotation(path, &a, err, sizeof err) == EEB_OK)
        eeb_voc_annotation_free(&a);
    close(fd);
    return 0;
}
