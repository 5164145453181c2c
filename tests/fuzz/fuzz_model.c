/* fuzz_model.c - a model file (.eebm), decoded into a network. */
#include "fpga/net/eeb_model.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct eeb_net *net;
    int task;
    char err[512];
    if (eeb_model_decode(data, size, "fuzz.eebm", &net, &task, err, sizeof err) == EEB_OK)
        eeb_net_free(net);
    return 0;
}
