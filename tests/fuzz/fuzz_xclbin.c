/* fuzz_xclbin.c - an xclbin: the axlf sections, the utilization and design
 * eeb reads from its USER_METADATA, and the resources (and M_u, checked
 * against a --util) it reads from SYSTEM_METADATA. */
#include "scoring/eeb_score.h"
#include "fpga/tools/eeb_xclbin.h"
#include "fuzz.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct eeb_xclbin_info *in;
    char err[512], source[256];
    if (eeb_xclbin_parse(data, size, "fuzz.xclbin", &in, err, sizeof err) != EEB_OK)
        return 0;
    struct eeb_util u, given;
    char *design = NULL;
    (void)eeb_xclbin_util(in, &u, source, sizeof source, err, sizeof err);
    if (eeb_xclbin_design(in, &design, err, sizeof err) == EEB_OK)
        free(design);
    static struct eeb_xclbin_figures figures; /* 12 KiB: not on the fuzzer's stack */
    struct eeb_xclbin_mu mu;
    if (eeb_xclbin_figures(in, "fuzz.xclbin", &figures, err, sizeof err) == EEB_OK && figures.ncus)
        (void)eeb_xclbin_figures_mu(&figures, "fuzz.xclbin", &mu, err, sizeof err);
    if (eeb_score_util_from_spec("lut=0.2,ff=0.2,bram=0.25,dsp=0.25", &given, err, sizeof err) ==
        EEB_OK)
        (void)eeb_xclbin_m_u(in, "fuzz.xclbin", &given, "the given figures", &u, source,
                             sizeof source, err, sizeof err);
    eeb_xclbin_info_free(in);
    return 0;
}
