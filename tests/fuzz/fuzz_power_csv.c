/* fuzz_power_csv.c - a recorded power trace (replay:FILE.csv), loaded and
 * read back at a few times. */
#include "eeb_power.h"
#include "fuzz.h"

#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[32], uri[48], err[512];
    int fd = fuzz_file(data, size, path);
    if (fd < 0)
        return 0;
    snprintf(uri, sizeof uri, "replay:%s", path);
    struct eeb_power_source *s;
    if (eeb_power_open(uri, &s, err, sizeof err) == EEB_OK) {
        struct eeb_sample smp;
        for (int64_t t = 1; t < 4000000000LL; t += 250000000)
            if (s->ops->read(s, t, &smp, err, sizeof err) != EEB_OK)
                break;
        eeb_power_close(s);
    }
    close(fd);
    return 0;
}
