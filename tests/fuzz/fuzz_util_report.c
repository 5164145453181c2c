/* fuzz_util_report.c - a Vivado report_utilization report (M_u's source). */
#include "scoring/eeb_score.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct eeb_util u;
    char err[512];
    if (eeb_score_util_parse((const char *)data, size, "fuzz.rpt", &u, err, sizeof err) == EEB_OK)
        (void)eeb_score_m_u(&u);
    return 0;
}
