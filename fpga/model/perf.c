/*
 * perf.c - time, bound and power of each learnable layer's phases.
 *
 *   time    = setup + max(compute, memory)
 *   compute = kept MACs / (PEs x MACs x clock x occupancy)
 *   memory  = sum over DDR transactions of max(access / channels,
 *                                              burst bytes / bandwidth)
 *
 * The array streams one transaction per *vector* (one channel of one pixel
 * for a batch tile of `macs` items, act_bits each) and per kept *entry* of
 * the sparse weights (a k x k kernel, or an fc weight, with its 2-byte
 * coordinate).  Forward and backward-data read the input's vectors, write
 * the output's and read every entry.  Backward-weight reads each vector
 * several times (the PE groups of the published KCU1500 design's update share no buffer), reads
 * and writes every entry (the SGD update in place) and sends partial
 * gradients to the summing module.  Small transactions are bound by DDR4's
 * access time, not its bandwidth: that is why the published KCU1500 design's conv1, conv5_x and
 * dense layers are memory-bound though they move little.  README.md fits
 * the constants below to the published KCU1500 design's table and lists the residuals.
 */
#include "eeb_perf.h"

#include "common/eeb_common.h"

#include <math.h>
#include <stdlib.h>

/* DDR4: a transaction's access time on one channel, the burst it moves at
 * least, and its energy per bit (I/O and array). */
#define ACCESS_S    20e-9
#define BURST_BYTES 64.0
#define DDR_J_BIT   15e-12
#define DDR_CHAN_W  1.0 /* a channel's background power */

/* A layer phase's fixed cost: loading its commands and filling and
 * draining the pipeline (the published KCU1500 design's dense8 row is almost only this). */
#define SETUP_CYCLES    15500.0
#define SETUP_CYCLES_WG 50500.0

/* Backward-weight: reads per vector; transactions per kept entry (read
 * and write back); output pixels per partial-gradient transaction. */
#define WG_VECTOR_READS 4.6
#define WG_ENTRY_TXNS   2.1
#define WG_PSUM_PIXELS  18.0

/* Dynamic power of the fabric at full activity, per resource and MHz, and
 * the activity of a clocked but idle array (clock tree, control). */
#define LUT_W_MHZ     0.20e-6
#define FF_W_MHZ      0.10e-6
#define BRAM_W_MHZ    10.0e-6
#define DSP_W_MHZ     4.0e-6
#define IDLE_ACTIVITY 0.25

const char *eeb_phase_name(enum eeb_phase p)
{
    static const char *const names[] = {"fwd", "bwd_data", "bwd_weight"};
    return names[p];
}

/* The fraction of `n` lanes busy when n items spread over `width`. */
static double occupancy(double n, double width)
{
    return n / (ceil(n / width) * width);
}

/* Seconds per transaction of `bytes`, and the bytes the DDR moves for it. */
static double txn_s(const struct eeb_design *d, double bytes, double *burst)
{
    *burst = ceil(bytes / BURST_BYTES) * BURST_BYTES;
    double bw = d->ddr * eeb_device_ddr_bytes_per_s(d->device);
    return fmax(ACCESS_S / d->ddr, *burst / bw);
}

/* Kept kernels (conv) or weights (fc) of layer l, of all of them. */
static double density(const struct eeb_net *net, const struct eeb_layer *l, int cin)
{
    int kk = l->kind == EEB_LAYER_CONV ? l->k * l->k : 1, cout = l->out.c;
    int fx = net->format == EEB_FORMAT_FX24;
    if (fx ? !l->wq : !l->w)
        return 1;
    long kept = 0;
    for (int c = 0; c < cin; c++)
        for (int o = 0; o < cout; o++) {
            int nonzero = 0;
            for (int t = 0; t < kk && !nonzero; t++) {
                size_t at = ((size_t)t * cin + c) * cout + o;
                nonzero = fx ? l->wq[at] != 0 : l->w[at] != 0;
            }
            kept += nonzero;
        }
    return (double)kept / ((double)cin * cout);
}

static int pow2_at_least(double x, int floor_)
{
    int v = floor_;
    while (v < x)
        v *= 2;
    return v;
}

void eeb_perf_buffers(const struct eeb_design *d, const struct eeb_net *net, int *acc_depth,
                      int *act_kib, int *weight_kib)
{
    double act = 0, acc = 0, weight = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        int conv = l->kind == EEB_LAYER_CONV, k = conv ? l->k : 1;
        struct eeb_shape in = eeb_net_shape(net, l->in[0]);
        double row = conv ? (double)in.w * in.c : l->rows;
        act = fmax(act, k * row * d->macs * d->act_bits / 8.0);
        acc = fmax(acc, (conv ? l->out.w : 1) * ceil((double)l->out.c / d->pes));
        weight = fmax(weight, (double)d->pes * EEB_CSB_BLOCK * (k * k * d->weight_bits / 8.0 + 2));
    }
    *acc_depth = pow2_at_least(acc, 16);
    *act_kib = pow2_at_least(act / 1024, 1);
    *weight_kib = pow2_at_least(weight / 1024, 1);
}

int eeb_design_for(struct eeb_design *d, const char *spec, const struct eeb_net *net, char *err,
                   size_t errlen)
{
    /* parse, size, parse again: what the spec names wins */
    eeb_design_default(d);
    int rc = eeb_design_parse(d, spec, err, errlen);
    if (rc == EEB_OK) {
        eeb_perf_buffers(d, net, &d->acc_depth, &d->act_kib, &d->weight_kib);
        rc = eeb_design_parse(d, spec, err, errlen);
    }
    return rc;
}

/* The first buffer of d smaller than net needs, named in err. */
static int check_buffers(const struct eeb_design *d, const struct eeb_net *net, char *err,
                         size_t errlen)
{
    int acc, act, weight;
    eeb_perf_buffers(d, net, &acc, &act, &weight);
    if (d->acc_depth < acc)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "model: acc_depth=%d is too shallow for this network: it needs %d",
                        d->acc_depth, acc);
    if (d->act_kib < act)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "model: act_kib=%d is too small for this network: it needs %d", d->act_kib,
                        act);
    if (d->weight_kib < weight)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "model: weight_kib=%d is too small for this network: it needs %d",
                        d->weight_kib, weight);
    return EEB_OK;
}

/* Power while a phase keeps the array `util` busy and moves `bytes`. */
static double phase_power(const struct eeb_perf *p, double logic_w, double util, double bytes,
                          double time_s)
{
    return p->idle_power_w + logic_w * (1 - IDLE_ACTIVITY) * util + bytes * 8 * DDR_J_BIT / time_s;
}

static void cost_layer(const struct eeb_design *d, struct eeb_perf *p, double logic_w,
                       struct eeb_layer_cost *c, int batch, const int runs[EEB_PHASES])
{
    double hz = d->clock_mhz * 1e6, tiles = ceil((double)batch / d->macs);
    double lanes = occupancy(batch, d->macs);
    double vin = (double)c->cin * c->h_in * c->w_in * tiles;
    double vout = (double)c->cout * c->h * c->w * tiles;
    double entries = c->density * c->cin * c->cout;
    /* a transaction of each kind -- vector, entry, partial sum -- its
     * seconds and the bytes the DDR moves for it */
    double secs[3], bytes[3];
    secs[0] = txn_s(d, d->macs * d->act_bits / 8.0, &bytes[0]);
    secs[1] = txn_s(d, c->k * c->k * d->weight_bits / 8.0 + 2, &bytes[1]);
    secs[2] = txn_s(d, c->k * c->k * d->acc_bits / 8.0, &bytes[2]);
    double ops = 2.0 * batch * c->h * c->w * c->cout * (double)c->cin * c->k * c->k;
    double ideal_s = ops * c->density / (2.0 * d->pes * d->macs * hz);
    for (int ph = 0; ph < EEB_PHASES; ph++) {
        struct eeb_phase_cost *pc = &c->phase[ph];
        if (!(pc->runs = runs[ph]))
            continue;
        int wg = ph == EEB_PHASE_BWD_WEIGHT;
        double n[3] = {vin + vout, entries, 0}, setup = (wg ? SETUP_CYCLES_WG : SETUP_CYCLES) / hz;
        if (wg) {
            n[0] *= WG_VECTOR_READS, n[1] *= WG_ENTRY_TXNS;
            n[2] = entries * c->h * c->w * tiles / WG_PSUM_PIXELS;
        }
        pc->memory_s = pc->bytes = 0;
        for (int t = 0; t < 3; t++)
            pc->memory_s += n[t] * secs[t], pc->bytes += n[t] * bytes[t];
        /* PEs take output channels, except backward-data's input channels. */
        int spread = ph == EEB_PHASE_BWD_DATA ? c->cin : c->cout;
        pc->ops = ops;
        pc->compute_s = ideal_s / (lanes * occupancy(spread, d->pes));
        pc->time_s = setup + fmax(pc->compute_s, pc->memory_s);
        pc->bound = pc->compute_s >= pc->memory_s ? 'C' : 'M';
        pc->util = ideal_s / pc->time_s;
        pc->power_w = phase_power(p, logic_w, pc->util, pc->bytes, pc->time_s);
    }
}

int eeb_perf_densities(const struct eeb_net *net, double *out)
{
    int j = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (eeb_layer_learnable(l)) /* cin as eeb_perf_model counts it */
            out[j++] = density(
                net, l, l->kind == EEB_LAYER_CONV ? eeb_net_shape(net, l->in[0]).c : l->rows);
    }
    return j;
}

int eeb_perf_model(const struct eeb_design *d, const struct eeb_net *net, int batch, int frozen,
                   struct eeb_perf *out, char *err, size_t errlen)
{
    return eeb_perf_model_at(d, net, NULL, batch, frozen, out, err, errlen);
}

int eeb_perf_model_at(const struct eeb_design *d, const struct eeb_net *net,
                      const double *densities, int batch, int frozen, struct eeb_perf *out,
                      char *err, size_t errlen)
{
    *out = (struct eeb_perf){.batch = batch};
    if (batch < 1)
        return eeb_errf(err, errlen, EEB_EINVAL, "model: batch %d is not a positive count", batch);
    int learnable = 0;
    for (int i = 0; i < net->nlayers; i++)
        learnable += eeb_layer_learnable(&net->layers[i]);
    if (learnable == 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "model: the network has no conv or fc layer");
    int rc = check_buffers(d, net, err, errlen);
    if (rc)
        return rc;
    out->layers = calloc((size_t)learnable, sizeof *out->layers);
    if (!out->layers)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    eeb_design_resources(d, &out->res);
    const struct eeb_resources *r = &out->res;
    double logic_w = d->clock_mhz * (r->lut * LUT_W_MHZ + r->ff * FF_W_MHZ + r->bram * BRAM_W_MHZ +
                                     r->dsp * DSP_W_MHZ);
    out->idle_power_w = d->device->idle_w + d->ddr * DDR_CHAN_W + logic_w * IDLE_ACTIVITY;
    int j = 0;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        if (!eeb_layer_learnable(l))
            continue;
        struct eeb_shape in = eeb_net_shape(net, l->in[0]);
        struct eeb_layer_cost *c = &out->layers[j];
        int conv = l->kind == EEB_LAYER_CONV;
        *c = (struct eeb_layer_cost){.layer = i,
                                     .cin = conv ? in.c : l->rows,
                                     .cout = l->out.c,
                                     .h = conv ? l->out.h : 1,
                                     .w = conv ? l->out.w : 1,
                                     .h_in = conv ? in.h : 1,
                                     .w_in = conv ? in.w : 1,
                                     .k = conv ? l->k : 1};
        c->density = densities ? densities[j] : density(net, l, c->cin);
        /* An error flows into this layer's input only if a trained layer
         * lies below it; weights are updated in trained layers. */
        int runs[EEB_PHASES] = {1, j > frozen, j >= frozen};
        cost_layer(d, out, logic_w, c, batch, runs);
        for (int ph = 0; ph < EEB_PHASES; ph++) {
            const struct eeb_phase_cost *pc = &c->phase[ph];
            if (!pc->runs)
                continue;
            out->train_step_s += pc->time_s;
            out->train_step_j += pc->time_s * pc->power_w;
            if (ph == EEB_PHASE_FWD) {
                out->predict_batch_s += pc->time_s;
                out->predict_batch_j += pc->time_s * pc->power_w;
            }
        }
        j++;
    }
    out->nlayers = learnable;
    out->train_power_w = out->train_step_j / out->train_step_s;
    out->predict_power_w = out->predict_batch_j / out->predict_batch_s;
    return EEB_OK;
}

void eeb_perf_free(struct eeb_perf *p)
{
    free(p->layers);
    p->layers = NULL;
}
