/*
 * fx_kernel_update.c - the kernel's weight update: the int8 copy of the
 * master weights (QUANT_W) and SGD with momentum and weight decay.
 */
#include "fx_kernel.h"
#include "fx_arith.h"
#include "fx_kernel_int.h"

#include <stddef.h>

/* ---- weights ---- */

FX_CPU_CLONES uint64_t fx_maxabs32(const int32_t *v, uint64_t n)
{
    uint32_t most = 0;
    for (uint64_t i = 0; i < n; i++) {
#pragma HLS PIPELINE II = 1
        uint32_t mag = v[i] < 0 ? 0u - (uint32_t)v[i] : (uint32_t)v[i];
        most = mag > most ? mag : most;
    }
    return most;
}

/* The int8 copy of the master weights the PE array multiplies with. */
enum fx_status fx_kernel_quant_w(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_tensor *tw = fx_tensor_at(mem, c->t[0]), *tq = fx_tensor_at(mem, c->t[1]);
    if (tw->type != FX_I32 || tq->type != FX_I8 ||
        fx_kernel_item_count(tw) != fx_kernel_item_count(tq))
        return FX_BAD_OPERAND;
    const int32_t *w = fx_kernel_i32(mem, tw);
    uint64_t count = fx_kernel_item_count(tw);
    fx_kernel_requantize(w, count, fx_maxabs32(w, count), tw->exp, fx_round_half_up(),
                         fx_kernel_i8(mem, tq), tq);
    return FX_OK;
}

struct fx_sgd_plan fx_sgd_plan(const struct fx_header *h, int e_w, int e_g, int decay_on)
{
    const int ev = e_w - FX_V_FRAC; /* the momentum's exponent */
    const struct fx_sgd_plan p = {
        .g = fx_plan_shift(ev - e_g), /* fx_align(g, e_g, ev) */
        .decay = fx_plan_shift(ev - (e_w + h->wd_e)),
        .lr = fx_plan_shift(-h->lr_e),
        .mom = fx_plan_shift(-h->mom_e),
        .wd_m = h->wd_m,
        .lr_m = h->lr_m,
        .mom_m = h->mom_m,
        .decay_on = decay_on,
    };
    return p;
}

FX_CPU_CLONES uint64_t fx_sgd_range(const struct fx_sgd_plan *p, int32_t *w, int32_t *v,
                                    const int8_t *g, uint64_t n, uint32_t sat[2])
{
    const struct fx_sgd_plan q = *p; /* a copy the compiler knows nothing writes */
    const struct fx_shift_plan vfrac = fx_plan_shift(FX_V_FRAC);
    uint32_t vsat = 0, wsat = 0;
    uint64_t wmax = 0;
    for (uint64_t i = 0; i < n; i++) {
#pragma HLS PIPELINE II = 1
        int64_t d = fx_shift_planned(g[i], &q.g);
        d += q.decay_on ? fx_shift_planned((int64_t)w[i] * q.wd_m, &q.decay) : 0;
        int64_t step = fx_shift_planned(d * q.lr_m, &q.lr);
        int64_t vn = fx_shift_planned((int64_t)v[i] * q.mom_m, &q.mom) + step;
        /* fx_clamp's count goes through a pointer, which the stores to v
         * and w might alias: counted in locals here, so the loop vectorizes */
        vsat += vn > INT32_MAX || vn < -INT32_MAX;
        vn = vn > INT32_MAX ? INT32_MAX : vn < -INT32_MAX ? -INT32_MAX : vn;
        v[i] = (int32_t)vn;
        int64_t wn = w[i] - fx_shift_planned(vn, &vfrac);
        wsat += wn > FX_W_MAX || wn < -FX_W_MAX;
        wn = wn > FX_W_MAX ? FX_W_MAX : wn < -FX_W_MAX ? -FX_W_MAX : wn;
        w[i] = (int32_t)wn;
        wmax = fx_abs64(wn) > wmax ? fx_abs64(wn) : wmax;
    }
    sat[0] += vsat;
    sat[1] += wsat;
    return wmax;
}

/* The weights and their momenta halved, rounding half up. */
FX_CPU_CLONES static void halve(int32_t *w, int32_t *v, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++) {
#pragma HLS PIPELINE II = 1
        w[i] = (int32_t)fx_shift_round(w[i], 1);
        v[i] = (int32_t)fx_shift_round(v[i], 1);
    }
}

/*
 * SGD with momentum and weight decay, in integers:
 *   d = g + wd * w            at the momentum's exponent (e_w - FX_V_FRAC)
 *   v = mom * v + lr * d      int32, saturating
 *   w = w - round(v / 2^FX_V_FRAC)   24 bits, saturating
 * lr, mom and wd are m * 2^e pairs from the header.  Weights that grow
 * into their headroom bit (max |w| >= 2^22) are halved, with the momentum,
 * and the exponent goes up by one: the range follows the weights, so they
 * saturate only if one step jumps past 2^23.
 */
enum fx_status fx_kernel_sgd(uint8_t *mem, const struct fx_cmd *c)
{
    const struct fx_header *h = fx_kernel_header(mem);
    struct fx_tensor *tw = fx_tensor_at(mem, c->t[0]), *tv = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tg = fx_tensor_at(mem, c->t[2]);
    uint64_t count = fx_kernel_item_count(tw);
    if (tw->type != FX_I32 || tv->type != FX_I32 || tg->type != FX_I8 ||
        fx_kernel_item_count(tv) != count || fx_kernel_item_count(tg) != count)
        return FX_BAD_OPERAND;
    int32_t *w = fx_kernel_i32(mem, tw), *v = fx_kernel_i32(mem, tv);
    const struct fx_sgd_plan plan = fx_sgd_plan(h, tw->exp, tg->exp, !(c->flags & FX_C_NO_DECAY));
    uint32_t sat[2] = {0, 0};
    uint64_t wmax = fx_sgd_range(&plan, w, v, fx_kernel_i8(mem, tg), count, sat);
    tv->saturations += sat[0];
    tw->saturations += sat[1];
    if (wmax >= (uint64_t)1 << (FX_W_BITS - 2) && tw->exp < 127) {
        halve(w, v, count);
        tw->exp++;
    }
    return FX_OK;
}
