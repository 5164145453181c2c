/*
 * design.c - a PE-array design: its parameters as a "key=value,..." spec,
 * and the FPGA resources it takes.
 *
 * Resources are built from the published KCU1500 design's per-operator table (a fixed8
 * multiplier is 75 LUT + 80 FF or one DSP; a fixedN adder N LUT + N FF; a
 * fixed32 multiply-add 111 LUT + 64 FF + 4 DSP) plus the per-MAC glue --
 * operand registers, the sparse index decoders, the switches and muxes of
 * the random-access buffers -- which that table does not list.  The glue
 * is fitted to the published KCU1500 design's one implemented design (README.md, "Resources").
 */
#include "eeb_perf.h"

#include "common/eeb_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BRAM_BITS 36864.0 /* one 36 Kb block RAM */

/* Per MAC lane, besides its multiplier and accumulator adder (fitted). */
#define GLUE_LUT 162.0
#define GLUE_FF  211.0

/* Seed 001's table: a fixed8 multiplier in LUTs; the adder that corrects a
 * DSP's packed pair of int8 products (a fixed8 adder); the SGD update unit
 * (a fixed32 multiply-add, plus two DSPs for momentum and decay). */
#define MULT8_LUT  75.0
#define MULT8_FF   80.0
#define PACK_LUT   8.0
#define PACK_FF    8.0
#define UPDATE_LUT 111.0
#define UPDATE_FF  64.0
#define UPDATE_DSP 6.0

void eeb_design_default(struct eeb_design *d)
{
    *d = (struct eeb_design){.device = eeb_device_find("kcu1500"),
                             .pes = 32,
                             .macs = 32,
                             .clock_mhz = 250,
                             .ddr = 2,
                             .act_bits = 8,
                             .weight_bits = 24,
                             .acc_bits = 32,
                             .mult = EEB_MULT_DSP,
                             .acc_depth = 512,
                             .act_kib = 256,
                             .weight_kib = 36};
}

static const char *const mult_names[] = {"dsp", "dsp2", "lut"};

/* An integer key: its field and range. */
struct int_key {
    const char *name;
    size_t offset;
    int lo, hi;
};

#define IK(f, lo, hi)                                                                              \
    {                                                                                              \
#f, offsetof(struct eeb_design, f), lo, hi                                                 \
    }
static const struct int_key int_keys[] = {
    IK(pes, 1, 4096),         IK(macs, 1, 256),       IK(ddr, 1, 16),
    IK(act_bits, 4, 16),      IK(weight_bits, 8, 32), IK(acc_bits, 16, 48),
    IK(acc_depth, 16, 65536), IK(act_kib, 1, 65536),  IK(weight_kib, 1, 65536),
};

static int set_key(struct eeb_design *d, const char *key, const char *value, char *err,
                   size_t errlen)
{
    if (strcmp(key, "device") == 0) {
        const struct eeb_device *dev = eeb_device_find(value);
        char names[128];
        if (!dev)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "design: device '%s' is not a board eeb knows (%s)", value,
                            eeb_device_names(names, sizeof names, ", "));
        d->device = dev;
        return EEB_OK;
    }
    if (strcmp(key, "mult") == 0) {
        for (int m = 0; m < 3; m++)
            if (strcmp(value, mult_names[m]) == 0) {
                d->mult = (enum eeb_mult)m;
                return EEB_OK;
            }
        return eeb_errf(err, errlen, EEB_EINVAL, "design: mult '%s' is not dsp, dsp2 or lut",
                        value);
    }
    char *end;
    double x = strtod(value, &end);
    int number = *value && *end == '\0' && isfinite(x);
    if (strcmp(key, "clock_mhz") == 0) {
        if (!number || !(x > 0 && x <= 1000))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "design: clock_mhz '%s' is not a clock in (0, 1000] MHz", value);
        d->clock_mhz = x;
        return EEB_OK;
    }
    for (size_t i = 0; i < sizeof int_keys / sizeof *int_keys; i++) {
        const struct int_key *k = &int_keys[i];
        if (strcmp(key, k->name) != 0)
            continue;
        if (!number || x != floor(x) || x < k->lo || x > k->hi)
            return eeb_errf(err, errlen, EEB_EINVAL, "design: %s '%s' is not an integer in %d..%d",
                            key, value, k->lo, k->hi);
        *(int *)((char *)d + k->offset) = (int)x;
        return EEB_OK;
    }
    return eeb_errf(err, errlen, EEB_EINVAL,
                    "design: unknown key '%s' (device, pes, macs, clock_mhz, ddr, act_bits, "
                    "weight_bits, acc_bits, mult, acc_depth, act_kib, weight_kib)",
                    key);
}

int eeb_design_parse(struct eeb_design *d, const char *spec, char *err, size_t errlen)
{
    char *copy = strdup(spec), *save = NULL;
    if (!copy)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    int rc = EEB_OK, ddr_given = 0;
    for (char *kv = strtok_r(copy, ",", &save); kv && rc == EEB_OK;
         kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            rc = eeb_errf(err, errlen, EEB_EINVAL, "design: '%s' is not key=value", kv);
        } else {
            *eq = '\0';
            ddr_given |= strcmp(kv, "ddr") == 0;
            rc = set_key(d, kv, eq + 1, err, errlen);
        }
    }
    free(copy);
    /* A board with fewer channels than the design had: all of its own,
     * unless the spec asks for more. */
    if (rc == EEB_OK && !ddr_given && d->ddr > d->device->ddr_channels)
        d->ddr = d->device->ddr_channels;
    if (rc == EEB_OK && d->ddr > d->device->ddr_channels)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "design: ddr must be 1..%d channels on the %s",
                      d->device->ddr_channels, d->device->name);
    return rc;
}

/* The clock as the shortest text strtod reads back to the same double: a
 * run records its design as text and eeb check models it again from that
 * text, so %g's six digits (233.333 for 233.3333333) would time another
 * design. */
static void clock_text(double mhz, char *buf, size_t len)
{
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, mhz);
        if (strtod(buf, NULL) == mhz)
            return;
    }
}

void eeb_design_format(const struct eeb_design *d, char *buf, size_t len)
{
    char clock[32];
    clock_text(d->clock_mhz, clock, sizeof clock);
    snprintf(buf, len,
             "device=%s,pes=%d,macs=%d,clock_mhz=%s,ddr=%d,act_bits=%d,weight_bits=%d,"
             "acc_bits=%d,mult=%s,acc_depth=%d,act_kib=%d,weight_kib=%d",
             d->device->name, d->pes, d->macs, clock, d->ddr, d->act_bits, d->weight_bits,
             d->acc_bits, mult_names[d->mult], d->acc_depth, d->act_kib, d->weight_kib);
}

/* 36 Kb blocks for a ping-pong pair of buffers of `bits` each. */
static double brams(double bits)
{
    return ceil(2 * bits / BRAM_BITS);
}

void eeb_design_resources(const struct eeb_design *d, struct eeb_resources *r)
{
    double lanes = (double)d->pes * d->macs;
    double lut = lanes * (d->acc_bits + GLUE_LUT) + UPDATE_LUT;
    double ff = lanes * (d->acc_bits + GLUE_FF) + UPDATE_FF;
    double dsp = UPDATE_DSP;
    switch (d->mult) {
    case EEB_MULT_DSP: dsp += lanes; break;
    case EEB_MULT_DSP2:
        dsp += ceil(lanes / 2);
        lut += lanes * PACK_LUT, ff += lanes * PACK_FF;
        break;
    case EEB_MULT_LUT: lut += lanes * MULT8_LUT, ff += lanes * MULT8_FF; break;
    }
    /* Accumulators per PE (a lane's depth of acc_bits words), then the
     * activation and weight buffers the PEs share. */
    double bram = d->pes * brams((double)d->macs * d->acc_bits * d->acc_depth) +
                  brams(d->act_kib * 8192.0) + brams(d->weight_kib * 8192.0);
    const struct eeb_device *dev = d->device;
    *r = (struct eeb_resources){.lut = lut, .ff = ff, .bram = bram, .dsp = dsp};
    double avail[4] = {dev->lut, dev->ff, dev->bram, dev->dsp}, used[4] = {lut, ff, bram, dsp};
    r->fits = 1;
    for (int i = 0; i < 4; i++) {
        r->frac[i] = used[i] / avail[i];
        r->fits &= r->frac[i] <= 1;
        r->m_u += fmin(r->frac[i], 1) / 4;
    }
}

void eeb_resources_spec(const struct eeb_resources *r, char *buf, size_t len)
{
    snprintf(buf, len, "lut=%.5f,ff=%.5f,bram=%.5f,dsp=%.5f", fmin(r->frac[0], 1),
             fmin(r->frac[1], 1), fmin(r->frac[2], 1), fmin(r->frac[3], 1));
}
