/* fuzz_ptd_emulator.c - what a client sends eeb's PTDaemon emulator (any
 * bytes, in two pieces: a line split across reads), fed to its
 * conversation without a socket; and the same bytes as a load trace file
 * and as a cpu: load's IDLE_W,BUSY_W. */
#include "fuzz.h"
#include "power/power_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int count(void *arg, const char *reply)
{
    (void)reply;
    ++*(size_t *)arg;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return 0;
    char err[512], path[64];
    struct eeb_ptd_load *load;
    if (eeb_ptd_load_constant(42, &load, err, sizeof err) == EEB_OK) {
        struct eeb_ptd_emulator_config cfg = {.load = load, .log = sink};
        struct eeb_ptd_emulator *e;
        if (power_ptd_emu_open_idle(&cfg, &e, err, sizeof err) == EEB_OK) {
            struct power_ptd_emu_conn c = {.have = 0};
            size_t replies = 0, half = size / 2;
            (void)power_ptd_emu_feed(e, &c, (const char *)data, half, count, &replies);
            (void)power_ptd_emu_feed(e, &c, (const char *)data + half, size - half, count,
                                     &replies);
            eeb_ptd_emulator_stop(e);
        }
        eeb_ptd_load_free(load);
    }
    int fd = fuzz_file(data, size, path);
    if (fd >= 0) {
        for (int loop = 0; loop < 2; loop++)
            if (eeb_ptd_load_file(path, loop, &load, err, sizeof err) == EEB_OK) {
                double w;
                for (double t = 0; t < 5; t += 0.7)
                    (void)eeb_ptd_load_watts(load, t, &w, err, sizeof err);
                eeb_ptd_load_free(load);
            }
        close(fd);
    }
    char *text = fuzz_text(data, size);
    if (text && eeb_ptd_load_cpu(text, &load, err, sizeof err) == EEB_OK)
        eeb_ptd_load_free(load);
    free(text);
    return 0;
}
