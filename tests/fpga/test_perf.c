/*
 * test_perf.c - the analytical model: the published KCU1500 design's per-layer table within
 * 20 % with the same bound types, its resource table and its power; the
 * model's response to each design parameter; designs parsed with errors
 * naming the key.
 */
#include "fpga/model/eeb_perf_calibrate.h"
#include "fpga/net/eeb_model.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct eeb_perf model(const char *spec, const struct eeb_net *net, int batch, int frozen)
{
    struct eeb_design d;
    char err[256];
    eeb_design_default(&d);
    cr_assert_eq(eeb_design_parse(&d, spec, err, sizeof err), 0, "%s", err);
    struct eeb_perf p;
    cr_assert_eq(eeb_perf_model(&d, net, batch, frozen, &p, err, sizeof err), 0, "%s", err);
    return p;
}

Test(perf, reproduces_seed001_per_layer_table)
{
    struct eeb_net *net = eeb_seed001_vgg11();
    cr_assert(net);
    struct eeb_perf p = model(EEB_DESIGN_SEED001, net, 32, 0);
    cr_assert_eq(p.nlayers, EEB_SEED001_ROWS);
    double total[EEB_PHASES] = {0}, seed_total[EEB_PHASES] = {0};
    for (int i = 0; i < p.nlayers; i++) {
        const struct eeb_seed001_row *row = &eeb_seed001_table[i];
        const struct eeb_layer_cost *c = &p.layers[i];
        cr_assert_float_eq(c->density, eeb_seed001_density(i), 0.002, "%s", row->name);
        /* The GOP column (dense8's 0.003 is a misprint of 0.0003: its
         * 4.4 GOP/s x 75 us is 0.00033). */
        if (i < EEB_SEED001_ROWS - 1) {
            double gop = c->phase[EEB_PHASE_FWD].ops / 1e9;
            cr_assert(fabs(gop / row->gop - 1) < 0.25, "%s: %.3f GOP", row->name, gop);
        }
        for (int ph = 0; ph < EEB_PHASES; ph++) {
            const struct eeb_phase_cost *pc = &c->phase[ph];
            cr_assert_eq(pc->runs, row->bound[ph] != '-', "%s %s", row->name, eeb_phase_name(ph));
            if (!pc->runs)
                continue;
            double us = pc->time_s * 1e6;
            cr_assert(fabs(us / row->time_us[ph] - 1) <= 0.20,
                      "%s %s: %.0f us, the published KCU1500 design %.0f", row->name,
                      eeb_phase_name(ph), us, row->time_us[ph]);
            cr_assert_eq(pc->bound, row->bound[ph],
                         "%s %s: bound %c, the published KCU1500 design %c", row->name,
                         eeb_phase_name(ph), pc->bound, row->bound[ph]);
            total[ph] += us, seed_total[ph] += row->time_us[ph];
        }
    }
    for (int ph = 0; ph < EEB_PHASES; ph++)
        cr_assert(fabs(total[ph] / seed_total[ph] - 1) <= 0.10, "%s total %.0f us, seed %.0f",
                  eeb_phase_name(ph), total[ph], seed_total[ph]);
    /* Seed 001's training throughput and power: 641.1 GOP/s at 29 W. */
    double ops = 0;
    for (int i = 0; i < p.nlayers; i++)
        for (int ph = 0; ph < EEB_PHASES; ph++)
            ops += p.layers[i].phase[ph].runs ? p.layers[i].phase[ph].ops : 0;
    double gops = ops / 1e9 / p.train_step_s;
    cr_assert(fabs(gops / 641.1 - 1) <= 0.10, "%.1f GOP/s", gops);
    cr_assert(fabs(p.train_power_w / 29 - 1) <= 0.10, "%.2f W", p.train_power_w);
    cr_assert(p.idle_power_w < p.train_power_w);
    eeb_perf_free(&p);
    eeb_net_free(net);
}

Test(perf, reproduces_seed001_resources)
{
    struct eeb_design d;
    char err[128];
    eeb_design_default(&d);
    cr_assert_eq(eeb_design_parse(&d, EEB_DESIGN_SEED001, err, sizeof err), 0);
    struct eeb_resources r;
    eeb_design_resources(&d, &r);
    const struct eeb_seed001_resources *s = &eeb_seed001_used;
    cr_assert(fabs(r.lut / s->lut - 1) < 0.01, "LUT %.0f", r.lut);
    cr_assert(fabs(r.ff / s->ff - 1) < 0.01, "FF %.0f", r.ff);
    cr_assert(fabs(r.bram / s->bram - 1) < 0.01, "BRAM %.0f", r.bram);
    cr_assert(fabs(r.dsp / s->dsp - 1) < 0.01, "DSP %.0f", r.dsp);
    cr_assert(r.fits);
    cr_assert_float_eq(r.m_u, (r.frac[0] + r.frac[1] + r.frac[2] + r.frac[3]) / 4, 1e-12);
    /* Packing two int8 products per DSP halves the MACs' DSPs at a few
     * LUTs each; LUT multipliers take none. */
    cr_assert_eq(eeb_design_parse(&d, "mult=dsp2", err, sizeof err), 0);
    struct eeb_resources packed;
    eeb_design_resources(&d, &packed);
    cr_assert_float_eq(packed.dsp, 512 + 6, 1e-9);
    cr_assert(packed.lut > r.lut);
    cr_assert_eq(eeb_design_parse(&d, "mult=lut", err, sizeof err), 0);
    eeb_design_resources(&d, &packed);
    cr_assert_float_eq(packed.dsp, 6, 1e-9);
    cr_assert_float_eq(packed.lut, r.lut + 1024 * 75, 1e-6);
    /* A design too big for its board does not fit. */
    cr_assert_eq(eeb_design_parse(&d, "device=zcu104,mult=dsp", err, sizeof err), 0);
    eeb_design_resources(&d, &packed);
    cr_assert_not(packed.fits);
    cr_assert(packed.frac[2] > 1, "BRAM %.2f", packed.frac[2]);
}

/* A small dense convnet: two convs and an fc. */
static struct eeb_net *small_net(void)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){16, 16, 8});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 64, 3, 1, 1));
    l = eeb_net_maxpool(net, eeb_net_relu(net, eeb_net_conv(net, l, 64, 3, 1, 1)), 2, 2, 0);
    cr_assert(eeb_net_softmax_ce(net, eeb_net_fc(net, l, 10)) >= 0, "%s", net->err);
    eeb_net_init(net, 3);
    return net;
}

Test(perf, responds_to_each_parameter)
{
    struct eeb_net *net = small_net();
    struct eeb_perf base = model("device=kcu1500,pes=8,macs=32,ddr=1", net, 32, 0);
    const struct eeb_phase_cost *conv2 = &base.layers[1].phase[EEB_PHASE_FWD];
    cr_assert_eq(base.layers[0].density, 1);
    cr_assert_eq(conv2->bound, 'C', "the 64x64 conv at 8 PEs is compute-bound");

    /* Twice the PEs: compute halves.  Twice the clock: setup and compute halve. */
    struct eeb_perf p = model("device=kcu1500,pes=16,macs=32,ddr=1", net, 32, 0);
    cr_assert_float_eq(p.layers[1].phase[EEB_PHASE_FWD].compute_s, conv2->compute_s / 2, 1e-15);
    eeb_perf_free(&p);
    p = model("device=kcu1500,pes=8,macs=32,ddr=1,clock_mhz=500", net, 32, 0);
    cr_assert_float_eq(p.layers[1].phase[EEB_PHASE_FWD].compute_s, conv2->compute_s / 2, 1e-15);
    cr_assert_float_eq(p.layers[1].phase[EEB_PHASE_FWD].memory_s, conv2->memory_s, 1e-15);
    eeb_perf_free(&p);
    /* Twice the channels: memory halves (access-bound transactions). */
    p = model("device=kcu1500,pes=8,macs=32,ddr=2", net, 32, 0);
    cr_assert_float_eq(p.layers[1].phase[EEB_PHASE_FWD].memory_s, conv2->memory_s / 2, 1e-15);
    eeb_perf_free(&p);
    /* 33 items on 32 lanes take two batch tiles: twice the vectors, the
     * same kept work spread over half-empty lanes, the weights read once. */
    p = model("device=kcu1500,pes=8,macs=32,ddr=1", net, 33, 0);
    cr_assert_float_eq(p.layers[1].phase[EEB_PHASE_FWD].compute_s,
                       conv2->compute_s * 33.0 / 32 * 64 / 33, 1e-12);
    double ratio = p.layers[1].phase[EEB_PHASE_FWD].memory_s / conv2->memory_s;
    cr_assert(ratio > 1.8 && ratio < 2, "the weights are read once: %.3f", ratio);
    eeb_perf_free(&p);

    /* Frozen layers run forward only; the first trained layer computes no
     * error for its input. */
    cr_assert_not(base.layers[0].phase[EEB_PHASE_BWD_DATA].runs);
    cr_assert(base.layers[0].phase[EEB_PHASE_BWD_WEIGHT].runs);
    p = model("device=kcu1500,pes=8,macs=32,ddr=1", net, 32, 2);
    for (int i = 0; i < 2; i++)
        cr_assert_not(p.layers[i].phase[EEB_PHASE_BWD_WEIGHT].runs || p.layers[i].phase[1].runs);
    cr_assert(p.layers[2].phase[EEB_PHASE_BWD_WEIGHT].runs);
    cr_assert_not(p.layers[2].phase[EEB_PHASE_BWD_DATA].runs);
    cr_assert(p.train_step_s < base.train_step_s);
    cr_assert_float_eq(p.predict_batch_s, base.predict_batch_s, 1e-15);
    eeb_perf_free(&p);

    /* Pruning half the kernels of conv2 halves its compute and entries;
     * the fixed copy measures the same density as the float one. */
    struct eeb_layer *l = &net->layers[2];
    cr_assert_eq(l->kind, EEB_LAYER_CONV);
    for (int o = 0; o < l->out.c; o += 2)
        for (int r = 0; r < l->rows; r++)
            l->w[(size_t)r * l->out.c + o] = 0;
    p = model("device=kcu1500,pes=8,macs=32,ddr=1", net, 32, 0);
    cr_assert_float_eq(p.layers[1].density, 0.5, 1e-12);
    cr_assert_float_eq(p.layers[1].phase[EEB_PHASE_FWD].compute_s, conv2->compute_s / 2, 1e-15);
    eeb_perf_free(&p);
    eeb_net_to_fixed(net);
    p = model("device=kcu1500,pes=8,macs=32,ddr=1", net, 32, 0);
    cr_assert_float_eq(p.layers[1].density, 0.5, 1e-12);
    eeb_perf_free(&p);

    /* Power: idle below training, training below idle + the fabric's all. */
    cr_assert(base.idle_power_w > eeb_device_find("kcu1500")->idle_w);
    cr_assert(base.train_power_w > base.idle_power_w);
    cr_assert_float_eq(base.train_power_w, base.train_step_j / base.train_step_s, 1e-9);
    eeb_perf_free(&base);
    eeb_net_free(net);
}

Test(perf, designs_parse_and_errors_name_the_key)
{
    struct eeb_design d, back;
    char err[256], text[512];
    eeb_design_default(&d);
    cr_assert_eq(eeb_design_parse(&d, "device=zcu104,pes=12,macs=16,clock_mhz=187.5,mult=dsp2", err,
                                  sizeof err),
                 0, "%s", err);
    eeb_design_format(&d, text, sizeof text);
    eeb_design_default(&back);
    cr_assert_eq(eeb_design_parse(&back, text, err, sizeof err), 0, "%s: %s", text, err);
    cr_assert_eq(memcmp(&d, &back, sizeof d), 0, "%s", text);
    cr_assert_str_eq(d.device->name, "zcu104");
    cr_assert_eq(d.ddr, 1, "2 channels do not exist on the zcu104: the default follows it");
    /* a clock of more digits than %g's six reads back to the same double
     * (eeb check models a run's design again from its recorded text) */
    eeb_design_default(&d);
    cr_assert_eq(eeb_design_parse(&d, "device=zcu102,clock_mhz=233.3333333", err, sizeof err), 0,
                 "%s", err);
    eeb_design_format(&d, text, sizeof text);
    cr_assert(strstr(text, ",clock_mhz=233.3333333,"), "%s", text);
    eeb_design_default(&back);
    cr_assert_eq(eeb_design_parse(&back, text, err, sizeof err), 0, "%s: %s", text, err);
    cr_assert_eq(memcmp(&d, &back, sizeof d), 0, "%s", text);

    static const struct {
        const char *spec, *says;
    } bad[] = {
        {"pes=0", "pes '0' is not an integer in 1..4096"},
        {"macs=3.5", "macs '3.5' is not an integer"},
        {"clock_mhz=fast", "clock_mhz 'fast'"},
        {"device=vc709", "device 'vc709' is not a board"},
        {"mult=float", "mult 'float' is not dsp, dsp2 or lut"},
        {"ddr=4,device=zcu102", "ddr must be 1..1 channels on the zcu102"},
        {"banks=2", "unknown key 'banks'"},
        {"pes", "'pes' is not key=value"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        eeb_design_default(&d);
        cr_assert_neq(eeb_design_parse(&d, bad[i].spec, err, sizeof err), 0, "%s", bad[i].spec);
        cr_assert(strstr(err, bad[i].says), "%s: %s", bad[i].spec, err);
    }
}

/* ---- a ResNet-18 at 224x224 ---- */

/* ResNet-18's shape (He et al. 2016, table 1) at 224x224: conv 7x7/2 pad 3
 * -> 64 channels, max pool 3x3/2 pad 1 (112 -> 56), four stages of two
 * basic blocks (64, 128, 256, 512 channels; stages 2-4 open with a stride-2
 * conv and a 1x1 stride-2 projection shortcut), global average pool, fc to
 * `classes`, softmax.  No batch normalization: eeb has none. */
static struct eeb_net *resnet18(int classes)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){224, 224, 3});
    cr_assert(net);
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 64, 7, 2, 3));
    l = eeb_net_maxpool(net, l, 3, 2, 1);
    for (int stage = 0; stage < 4; stage++)
        for (int block = 0; block < 2; block++) {
            int c = 64 << stage, s = stage > 0 && block == 0 ? 2 : 1;
            int a = eeb_net_relu(net, eeb_net_conv(net, l, c, 3, s, 1));
            a = eeb_net_conv(net, a, c, 3, 1, 1);
            int skip = s == 2 ? eeb_net_conv(net, l, c, 1, 2, 0) : l;
            l = eeb_net_relu(net, eeb_net_add(net, a, skip));
        }
    l = eeb_net_fc(net, eeb_net_gap(net, l), classes);
    cr_assert(eeb_net_softmax_ce(net, l) >= 0, "%s", net->err);
    eeb_net_init(net, 18);
    return net;
}

/*
 * MACs per item, forward, counted by hand (output pixels x output channels
 * x k*k*c_in):
 *   conv1    112*112 * 64 * 7*7*3                        118,013,952
 *   stage 1  4 convs of 56*56 * 64 * 3*3*64              462,422,016
 *   stage 2  28*28*128: 3*3*64 (stride 2) 57,802,752, three of 3*3*128
 *            346,816,512, the 1x1 shortcut 6,422,528     411,041,792
 *   stage 3  14*14*256, the same products                411,041,792
 *   stage 4  7*7*512, the same products                  411,041,792
 *   fc       512 * 101                                        51,712
 *                                                      1,813,613,056
 * (with torchvision's 1000-class head, 512,000 for the fc: 1,814,073,344,
 * the "1.8 GFLOPs" ResNet-18 is quoted at.)
 */
#define RESNET18_MACS 1813613056ull

Test(perf, models_a_resnet18_at_224, .timeout = 120)
{
    struct eeb_net *net = resnet18(101);
    cr_assert_eq(net->nlayers, 1 + 2 + 8 * 5 + 3 * 1 + 3);
    cr_assert_eq(eeb_net_macs(net), RESNET18_MACS);
    const struct eeb_layer *pool = &net->layers[2];
    cr_assert(pool->kind == EEB_LAYER_MAXPOOL && pool->out.h == 56 && pool->out.w == 56 &&
              pool->out.c == 64);

    /* the file holds what was built */
    char dir[64], path[300], err[256];
    snprintf(dir, sizeof dir, "%s", test_tmpdir());
    snprintf(path, sizeof path, "%s/resnet18.eebm", dir);
    cr_assert_eq(eeb_model_save(path, net, EEB_TASK_CLS, err, sizeof err), 0, "%s", err);
    struct eeb_net *back;
    int task;
    cr_assert_eq(eeb_model_load(path, &back, &task, err, sizeof err), 0, "%s", err);
    cr_assert_eq(back->layers[2].pad, 1);
    cr_assert_eq(eeb_net_macs(back), RESNET18_MACS);
    eeb_net_free(back);

    /* buffers by hand: act = k rows of the widest window's input for a
     * tile of 32 items (3 * 56 * 64 * 32 B = 336 KiB -> 512), weights one
     * CSB block per PE of conv1's 7x7 kernels (32 * 32 * (49 * 3 + 2) B =
     * 149 KiB -> 256), accumulators conv1's output row of 2 channels a PE
     * (112 * 2 -> 256) */
    struct eeb_design d;
    cr_assert_eq(eeb_design_for(&d, EEB_DESIGN_SEED001, net, err, sizeof err), 0, "%s", err);
    cr_assert(d.act_kib == 512 && d.weight_kib == 256 && d.acc_depth == 256, "%d %d %d", d.act_kib,
              d.weight_kib, d.acc_depth);
    struct eeb_perf p;
    cr_assert_eq(eeb_perf_model(&d, net, 32, 0, &p, err, sizeof err), 0, "%s", err);
    cr_assert_eq(p.nlayers, 1 + 16 + 3 + 1);
    double fwd_ops = 0, ops = 0;
    for (int i = 0; i < p.nlayers; i++) {
        const struct eeb_layer_cost *c = &p.layers[i];
        fwd_ops += c->phase[EEB_PHASE_FWD].ops;
        for (int ph = 0; ph < EEB_PHASES; ph++)
            ops += c->phase[ph].runs ? c->phase[ph].ops : 0;
        cr_assert(c->phase[EEB_PHASE_FWD].time_s > 0 && c->density == 1);
    }
    cr_assert_eq(fwd_ops, 2.0 * 32 * RESNET18_MACS, "2 ops a MAC, 32 items");
    /* the first conv of stage 1 reads the padded pool's 56x56 */
    const struct eeb_layer_cost *s1 = &p.layers[1];
    cr_assert(s1->h_in == 56 && s1->w_in == 56 && s1->h == 56 && s1->cin == 64, "%dx%d", s1->h_in,
              s1->w_in);
    /* the step cannot beat the array's peak (32 x 32 MACs at 250 MHz, 512
     * GOP/s) on its ~3x forward work, and this dense, wide network keeps
     * the array mostly busy: within 3x of it */
    double peak_s = ops / 512e9;
    cr_assert(ops > 2.9 * fwd_ops && ops < 3 * fwd_ops, "%.3g of %.3g", ops, fwd_ops);
    cr_assert(p.train_step_s > peak_s && p.train_step_s < 3 * peak_s, "%.3f s, peak %.3f s",
              p.train_step_s, peak_s);
    cr_assert(p.predict_batch_s > fwd_ops / 512e9 && p.predict_batch_s < p.train_step_s / 2);
    cr_assert(p.train_power_w > p.idle_power_w && p.train_power_w < 60, "%.1f W", p.train_power_w);
    cr_assert(p.res.fits, "the sized buffers still fit the kcu1500");

    /* eeb dse reads the file and models the same step; and explores */
    const char *one[] = {"dse",      "--model",          path,     "--task", "cls",
                         "--design", EEB_DESIGN_SEED001, "--json", NULL};
    json_t *o = test_eeb_json(one, 0);
    json_t *design = json_object_get(o, "design");
    cr_assert_float_eq(test_json_num(design, "step_ms"), p.train_step_s * 1e3, 1e-6);
    json_decref(o);
    const char *all[] = {"dse", "--model", path,  "--device", "zcu104", "--task",
                         "cls", "--pmax",  "100", "--json",   NULL};
    o = test_eeb_json(all, 0);
    cr_assert_gt(test_json_num(o, "fit"), 10);
    json_t *best = json_object_get(o, "best");
    cr_assert(json_is_object(best));
    cr_assert_gt(test_json_num(best, "step_ms"), 0);
    json_decref(o);
    cr_expect_eq(unlink(path) | rmdir(dir), 0, "45 MB left in %s", dir);
    eeb_perf_free(&p);
    eeb_net_free(net);
}
