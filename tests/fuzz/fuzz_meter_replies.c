/* fuzz_meter_replies.c - what a network meter answers: a Yokogawa
 * WT300's SCPI values and a SPEC PTDaemon's "RL" reply, each one line. */
#include "fuzz.h"
#include "power/power_int.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = fuzz_text(data, size), err[512];
    if (!line)
        return 0;
    double v[3];
    struct eeb_sample s;
    (void)power_scpi_parse("scpi://fuzz:5025", line, v, err, sizeof err);
    (void)power_ptd_parse("ptd://fuzz:8888", line, &s, err, sizeof err);
    free(line);
    return 0;
}
