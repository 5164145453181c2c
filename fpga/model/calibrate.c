/*
 * calibrate.c - the published KCU1500 design's per-layer table ("Performance breakdown
 * (simulation)": VGG-11 on 32 x 32 CIFAR-10 images, batch 32, on the
 * KCU1500 design) and the network it was measured on, for the model to be
 * checked against.
 *
 * The model is pruned, and the slides give no per-layer densities; they
 * follow from the forward columns, since Perf. counts dense operations and
 * Utilize is the PE array's busy fraction: density = peak x util / perf,
 * with peak 32 x 32 MACs x 2 x 250 MHz = 512 GOP/s.  Those eleven numbers
 * are the only thing taken from the times; README.md says which
 * comparisons that makes circular.
 */
#include "eeb_perf_calibrate.h"

#include <stdint.h>
#include <string.h>

/* The third group is headed "Neuron Gradient" again in the slides; it is
 * the weight gradient (update) phase.  conv1 has no backward-data phase. */
const struct eeb_seed001_row eeb_seed001_table[EEB_SEED001_ROWS] = {
    {"conv1", 0.11, {733, 0, 4158}, "M-M", {0.27, 0, 0.05}},
    {"conv2", 1.21, {1487, 1487, 2804}, "CCM", {0.95, 0.95, 0.50}},
    {"conv3_1", 1.21, {1696, 1694, 2477}, "CCM", {0.97, 0.97, 0.67}},
    {"conv3_2", 2.42, {2877, 2876, 4398}, "CCM", {0.98, 0.98, 0.64}},
    {"conv4_1", 1.21, {1217, 1217, 2686}, "CCM", {0.97, 0.97, 0.44}},
    {"conv4_2", 2.42, {1457, 1456, 3933}, "CCM", {0.97, 0.97, 0.36}},
    {"conv5_1", 0.60, {366, 358, 915}, "MMM", {0.32, 0.33, 0.13}},
    {"conv5_2", 0.60, {365, 358, 915}, "MMM", {0.32, 0.33, 0.13}},
    {"dense6", 0.02, {329, 328, 717}, "MMM", {0.01, 0.01, 0.005}},
    {"dense7", 0.02, {329, 328, 717}, "MMM", {0.01, 0.01, 0.005}},
    {"dense8", 0.003, {75, 74, 272}, "MMM", {0.001, 0.001, 0.0002}},
};

/* Forward Perf. (GOP/s) of each row, for the densities. */
static const double ff_perf[EEB_SEED001_ROWS] = {154.4,  812.2,  712.4, 839.7, 992.3, 1658.4,
                                                 1651.7, 1652.7, 51.0,  51.0,  4.4};

const struct eeb_seed001_resources eeb_seed001_used = {199111, 249122, 1060, 1030};

double eeb_seed001_density(int row)
{
    return 512.0 * eeb_seed001_table[row].util[0] / ff_perf[row];
}

/* Zeroes all but round(density x n) of layer l's kernels, picked by a
 * fixed permutation of their indices (multiplication by an odd prime). */
static void prune(struct eeb_layer *l, int cin, double density)
{
    int kk = l->kind == EEB_LAYER_CONV ? l->k * l->k : 1, cout = l->out.c;
    uint64_t n = (uint64_t)cin * cout, keep = (uint64_t)(density * (double)n + 0.5);
    for (uint64_t i = 0; i < n; i++) {
        if ((i * 2654435761u) % n < keep)
            continue;
        uint64_t c = i / cout, o = i % cout;
        for (int t = 0; t < kk; t++)
            l->w[((uint64_t)t * cin + c) * cout + o] = 0;
    }
}

struct eeb_net *eeb_seed001_vgg11(void)
{
    static const int widths[] = {64, -1, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1};
    struct eeb_net *net = eeb_net_new((struct eeb_shape){32, 32, 3});
    if (!net)
        return NULL;
    int at = EEB_NET_INPUT, ok = 1;
    for (size_t i = 0; i < sizeof widths / sizeof *widths && ok; i++) {
        if (widths[i] < 0) {
            ok = (at = eeb_net_maxpool(net, at, 2, 2, 0)) >= 0;
        } else {
            ok = (at = eeb_net_conv(net, at, widths[i], 3, 1, 1)) >= 0 &&
                 (at = eeb_net_relu(net, at)) >= 0;
        }
    }
    ok = ok && (at = eeb_net_fc(net, at, 512)) >= 0 && (at = eeb_net_relu(net, at)) >= 0 &&
         (at = eeb_net_fc(net, at, 512)) >= 0 && (at = eeb_net_relu(net, at)) >= 0 &&
         (at = eeb_net_fc(net, at, 10)) >= 0 && eeb_net_softmax_ce(net, at) >= 0;
    if (!ok) {
        eeb_net_free(net);
        return NULL;
    }
    eeb_net_init(net, 1);
    int row = 0;
    for (int i = 0; i < net->nlayers; i++) {
        struct eeb_layer *l = &net->layers[i];
        if (eeb_layer_learnable(l)) {
            int cin = l->kind == EEB_LAYER_CONV ? eeb_net_shape(net, l->in[0]).c : l->rows;
            prune(l, cin, eeb_seed001_density(row++));
        }
    }
    return net;
}
