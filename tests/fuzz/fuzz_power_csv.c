/* fuzz_power_csv.c - a recorded power trace (replay:FILE), loaded and
 * read back at a few times: a CSV in any layout, or a SPEC PTDaemon log,
 * opened as is and with the options a file may need (a PTDaemon log's
 * channel and date order; a CSV's time unit and decimal comma), which take
 * the reader past where it would refuse. */
#include "power/eeb_power.h"
#include "fuzz.h"

#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const options[] = {"", "?channel=1,date=MM-DD", "?channel=total,date=DD-MM",
                                          "?time_unit=ms", "?decimal=,"};
    char path[32], uri[96], err[512];
    int fd = fuzz_file(data, size, path);
    if (fd < 0)
        return 0;
    for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
        snprintf(uri, sizeof uri, "replay:%s%s", path, options[i]);
        struct eeb_power_source *s;
        if (eeb_power_open(uri, &s, err, sizeof err) != EEB_OK)
            continue;
        struct eeb_sample smp;
        for (int64_t t = 1; t < 4000000000LL; t += 250000000)
            if (s->ops->read(s, t, &smp, err, sizeof err) != EEB_OK)
                break;
        eeb_power_close(s);
    }
    close(fd);
    return 0;
}
