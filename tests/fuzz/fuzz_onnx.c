/* fuzz_onnx.c - an ONNX model file, imported into a network and exported
 * again, and the export imported once more, which must succeed (what eeb
 * writes, eeb reads).  The first byte picks the import's options, so that
 * every path they open is fuzzed; the model is the rest:
 *   bits 0-1  the loss: 0 or 3 none, 1 softmax, 2 grid
 *   bit 2     a new head of 3 outputs (else the file's)
 *   bit 3     the input normalized by a first 1x1 conv
 *   bit 4     normalized in groups of 3 channels (else 1)
 * A seed is an ONNX file with such a byte before it. */
#include "common/eeb_common.h"
#include "fpga/net/eeb_onnx.h"
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

static const enum eeb_layer_kind losses[4] = {EEB_LAYER_KINDS, EEB_LAYER_SOFTMAX_CE,
                                              EEB_LAYER_GRID_LOSS, EEB_LAYER_KINDS};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    struct eeb_onnx_import_options o = {.loss = losses[opt & 3],
                                        .outputs = opt & 4 ? 3 : 0,
                                        .seed = 1,
                                        .normalize = !!(opt & 8),
                                        .norm_channels = opt & 16 ? 3 : 1,
                                        .mean = {0.5f, 0.25f, 0.75f},
                                        .std = {0.25f, 0.5f, 2.0f}};
    struct eeb_net *net;
    char err[600];
    if (eeb_onnx_import(data + 1, size - 1, "fuzz.onnx", &o, &net, NULL, err, sizeof err) != EEB_OK)
        return 0;
    uint8_t *out;
    size_t len;
    if (eeb_onnx_export(net, &out, &len, err, sizeof err) == EEB_OK) {
        /* the export as it is: its loss the same, no new head, and the
         * normalization a conv in it already */
        struct eeb_onnx_import_options again = {.loss = o.loss};
        struct eeb_net *back;
        if (eeb_onnx_import(out, len, "exported.onnx", &again, &back, NULL, err, sizeof err) !=
            EEB_OK) {
            fprintf(stderr, "fuzz_onnx: eeb's export does not import again: %s\n", err);
            abort();
        }
        if (eeb_net_params(back) != eeb_net_params(net) || back->input.h != net->input.h ||
            back->input.w != net->input.w || back->input.c != net->input.c) {
            fprintf(stderr, "fuzz_onnx: imported again, the network is another\n");
            abort();
        }
        eeb_net_free(back);
        free(out);
    }
    eeb_net_free(net);
    return 0;
}
