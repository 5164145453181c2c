/* fuzz_xclbin.c - an xclbin: the axlf sections, and the utilization and
 * design eeb reads from its USER_METADATA. */
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
    struct eeb_util u;
    char *design = NULL;
    (void)eeb_xclbin_util(in, &u, source, sizeof source, err, sizeof err);
    if (eeb_xclbin_design(in, &design, err, sizeof err) == EEB_OK)
        free(design);
    eeb_xclbin_info_free(in);
    return 0;
}
