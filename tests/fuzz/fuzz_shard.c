/* fuzz_shard.c - a data shard (.eebd): its header, then every record. */
#include "tasks/eeb_shard.h"
#include "fuzz.h"

#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[32], err[512];
    int fd = fuzz_file(data, size, path);
    struct eeb_shard *s;
    if (fd < 0 || eeb_shard_open(&s, path, err, sizeof err) != EEB_OK) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    const struct eeb_record *rec;
    while (eeb_shard_next(s, &rec, err, sizeof err) > 0)
        ;
    eeb_shard_close(s);
    close(fd);
    return 0;
}
