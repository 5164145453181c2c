/*
 * test_fx_arith.c - the number format's primitives against their
 * definitions: rounding shifts, exponent choice, stochastic rounding
 * (unbiased, keyed only by its counter), and the integer exp and log the
 * losses use, against libm.
 */
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

Test(fx_arith, shift_round_is_half_up)
{
    cr_expect_eq(fx_shift_round(5, 1), 3);   /* 2.5 -> 3 */
    cr_expect_eq(fx_shift_round(-5, 1), -2); /* -2.5 -> -2 */
    cr_expect_eq(fx_shift_round(-6, 2), -1); /* -1.5 -> -1 */
    cr_expect_eq(fx_shift_round(7, 0), 7);
    cr_expect_eq(fx_shift_round(-3, -4), -48);
    cr_expect_eq(fx_shift_round(1000, 63), 0);
}

/* A shift planned once (the SGD loop's branch-free form) is
 * fx_shift_round for every s, at every magnitude, on both sides of each
 * left shift's saturation limit (s = 0's too), and at int64's ends
 * (short of INT64_MAX, where fx_shift_round's rounding add overflows). */
Test(fx_arith, planned_shift_is_shift_round)
{
    uint64_t st = 11;
    for (int s = -70; s <= 70; s++) {
        const struct fx_shift_plan plan = fx_plan_shift(s);
        int64_t lim = s > 0 ? 0 : FX_SHIFT_SAT >> (s < -40 ? 40 : -s);
        const int64_t edges[] = {0,
                                 1,
                                 -1,
                                 lim,
                                 -lim,
                                 lim - 1,
                                 1 - lim,
                                 lim + 1,
                                 -lim - 1,
                                 FX_SHIFT_SAT,
                                 INT64_MIN,
                                 -INT64_MAX,
                                 INT64_MAX - FX_SHIFT_SAT};
        const int nedges = (int)(sizeof edges / sizeof edges[0]);
        for (int i = 0; i < 4000; i++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            int64_t v = (int64_t)(st >> 2) >> (int)(st % 62); /* every magnitude to 2^62 */
            v = st & 1 ? -v : v;
            if (i < nedges)
                v = edges[i];
            cr_assert_eq(fx_shift_planned(v, &plan), fx_shift_round(v, s),
                         "s %d v %lld: %lld, want %lld", s, (long long)v,
                         (long long)fx_shift_planned(v, &plan), (long long)fx_shift_round(v, s));
        }
    }
}

/* The SGD loop (shift plans, written for vectorizing) is the formula it
 * was written from, fx_align / fx_shift_round / fx_clamp per element, on
 * every weight, momentum and saturation count: over hyper-parameters whose
 * shifts go right, left (and saturate), past 62 and past -40, with decay
 * on and off, at the extremes of w, v and g. */
Test(fx_arith, sgd_range_is_the_definition)
{
    enum { N = 2048 };
    static int32_t w[N], v[N], w0[N], v0[N];
    static int8_t g[N];
    static const struct {
        int lr_m, lr_e, mom_m, mom_e, wd_m, wd_e, e_w, e_g;
    } hyper[] = {
        {20972, -21, 29491, -15, 17180, -25, -20, -9},  /* lr 0.01, mom 0.9, wd 5e-4 */
        {16384, -14, 16384, -14, 16384, -14, -20, -30}, /* lr = mom = wd = 1 */
        {1, -30, 32767, 20, 32767, 30, -20, 10},        /* left shifts that saturate */
        {3, -90, 5, -80, 7, -100, 60, -70},             /* right shifts past 62 */
        {-1, -3, -30000, -45, 12345, 50, -100, 100},    /* negative mantissas, past -40 */
    }; /* chosen so that no product leaves int64 (the formula's own limit) */
    uint64_t st = 5;
    for (size_t c = 0; c < sizeof hyper / sizeof hyper[0]; c++)
        for (int decay = 0; decay <= 1; decay++) {
            for (int i = 0; i < N; i++) {
                st ^= st << 13, st ^= st >> 7, st ^= st << 17;
                w0[i] = (int32_t)(st % (2 * FX_W_MAX + 1)) - FX_W_MAX;
                v0[i] = (int32_t)(uint32_t)(st >> 20) >> (int)(st % 32);
                g[i] = (int8_t)(st >> 56);
            }
            w0[0] = FX_W_MAX, w0[1] = -FX_W_MAX, v0[0] = INT32_MAX, v0[1] = -INT32_MAX;
            g[0] = 127, g[1] = -128, v0[2] = INT32_MIN;
            struct fx_header h = {0};
            h.lr_m = hyper[c].lr_m, h.lr_e = hyper[c].lr_e, h.mom_m = hyper[c].mom_m;
            h.mom_e = hyper[c].mom_e, h.wd_m = hyper[c].wd_m, h.wd_e = hyper[c].wd_e;
            const int e_w = hyper[c].e_w, e_g = hyper[c].e_g, ev = e_w - FX_V_FRAC;
            memcpy(w, w0, sizeof w), memcpy(v, v0, sizeof v);
            const struct fx_sgd_plan plan = fx_sgd_plan(&h, e_w, e_g, decay);
            uint32_t sat[2] = {0, 0}, want_sat[2] = {0, 0};
            uint64_t wmax = fx_sgd_range(&plan, w, v, g, N, sat), want_max = 0;
            for (int i = 0; i < N; i++) {
                int64_t d = fx_align(g[i], e_g, ev);
                if (decay)
                    d += fx_align((int64_t)w0[i] * h.wd_m, e_w + h.wd_e, ev);
                int64_t step = fx_shift_round(d * h.lr_m, -h.lr_e);
                int64_t vn = fx_clamp(fx_shift_round((int64_t)v0[i] * h.mom_m, -h.mom_e) + step,
                                      INT32_MAX, &want_sat[0]);
                int64_t wn =
                    fx_clamp(w0[i] - fx_shift_round(vn, FX_V_FRAC), FX_W_MAX, &want_sat[1]);
                cr_assert_eq(v[i], vn, "case %zu decay %d: v[%d] %d, want %lld", c, decay, i, v[i],
                             (long long)vn);
                cr_assert_eq(w[i], wn, "case %zu decay %d: w[%d] %d, want %lld", c, decay, i, w[i],
                             (long long)wn);
                want_max = fx_abs64(wn) > want_max ? fx_abs64(wn) : want_max;
            }
            cr_assert_eq(sat[0], want_sat[0], "case %zu decay %d: momenta clamped", c, decay);
            cr_assert_eq(sat[1], want_sat[1], "case %zu decay %d: weights clamped", c, decay);
            cr_assert_eq(wmax, want_max, "case %zu decay %d: largest |w|", c, decay);
        }
}

/* The requantization loop (written for vectorizing) is the definition,
 * clamp(shift_round(acc, s)), on every shift and the int32 extremes. */
Test(fx_arith, requant_range_is_the_definition)
{
    enum { N = 4096 };
    static int32_t acc[N];
    static int8_t out[N];
    uint64_t st = 7;
    for (int i = 0; i < N; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        acc[i] = (int32_t)(uint32_t)st >> (int)(st >> 59); /* every magnitude */
    }
    acc[0] = INT32_MAX, acc[1] = INT32_MIN, acc[2] = -1, acc[3] = 1;
    for (int s = -40; s <= 64; s++) {
        uint32_t want_sat = 0;
        uint32_t sat = fx_requant_range(acc, 0, N, s, fx_round_half_up(), out);
        for (int i = 0; i < N; i++) {
            int64_t want = fx_clamp(fx_shift_round(acc[i], s), FX_Q8_MAX, &want_sat);
            cr_assert_eq(out[i], want, "s %d acc %d: %d, want %lld", s, acc[i], out[i],
                         (long long)want);
        }
        cr_assert_eq(sat, want_sat, "s %d", s);
    }
}

/* The residual add's int32 loop against fx_align and fx_store32, for
 * every pair of int8 operands and exponents up to 40 apart (rounded
 * right shifts of 1 to 20 and beyond). */
Test(fx_arith, add_range_is_the_definition)
{
    static int8_t a[65536], b[65536];
    static int32_t acc[65536];
    for (int i = 0; i < 65536; i++)
        a[i] = (int8_t)(i & 0xff), b[i] = (int8_t)(i >> 8);
    for (int ea = -20; ea <= 20; ea += 3)
        for (int eb = -20; eb <= 20; eb += 2) {
            struct fx_tensor ta = {.exp = (int8_t)ea}, tb = {.exp = (int8_t)eb};
            int hi = ea > eb ? ea : eb, lo = ea + eb - hi;
            struct fx_ewise ew = {.op = FX_OP_ADD,
                                  .a = &ta,
                                  .b = &tb,
                                  .pa = a,
                                  .pb = b,
                                  .pacc = acc,
                                  .count = 65536,
                                  .e = lo > hi - FX_ADD_SPAN ? lo : hi - FX_ADD_SPAN};
            uint64_t got_max = 0, want_max = 0;
            uint32_t sat = 0;
            fx_ewise_range(&ew, 0, 65536, &got_max);
            for (int i = 0; i < 65536; i++) {
                int32_t want = fx_store32(fx_align(a[i], ea, ew.e) + fx_align(b[i], eb, ew.e),
                                          &want_max, &sat);
                cr_assert_eq(acc[i], want, "exp %d + %d: %d + %d = %d, want %d", ea, eb, a[i], b[i],
                             acc[i], want);
            }
            cr_assert_eq(got_max, want_max);
            cr_assert_eq(sat, 0);
        }
}

Test(fx_arith, quant_shift_fits_int8)
{
    cr_expect_eq(fx_quant_shift(0), 0);
    cr_expect_eq(fx_quant_shift(127), 0);
    cr_expect_eq(fx_quant_shift(128), 1);
    cr_expect_eq(fx_quant_shift(255), 1);
    cr_expect_eq(fx_quant_shift((uint64_t)1 << 40), 34);
    for (uint64_t m = 1; m < 100000; m = m * 3 + 1)
        cr_expect_leq(m >> fx_quant_shift(m), 127, "max %llu", (unsigned long long)m);
}

Test(fx_arith, rounding_overflow_is_a_counted_saturation)
{
    /* max 255: shift 1, and 255 / 2 = 127.5 rounds to 128, clamped to 127 */
    const int32_t acc[3] = {255, -255, 3};
    int8_t out[3];
    uint32_t sat = fx_requant_range(acc, 0, 3, fx_quant_shift(255), fx_round_half_up(), out);
    cr_expect_eq(sat, 1); /* -255 / 2 = -127.5 rounds half up to -127: no clamp */
    cr_expect_eq(out[0], 127);
    cr_expect_eq(out[1], -127);
    cr_expect_eq(out[2], 2);
}

Test(fx_arith, stochastic_rounding_is_unbiased)
{
    /* 1000 elements of 13 / 2^4 = 0.8125: the mean of the rounded values
     * must be near 0.8125, where rounding half up would give exactly 1. */
    for (int v = -40; v <= 40; v += 13) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < 4000; i++)
            sum += fx_shift_stochastic(v, 4, fx_hash(7, 3, 11, i));
        double mean = (double)sum / 4000, want = v / 16.0;
        cr_expect(fabs(mean - want) < 0.03, "v=%d: mean %.4f, want %.4f", v, mean, want);
    }
}

Test(fx_arith, hash_depends_on_every_counter_field)
{
    uint64_t base = fx_hash(1, 2, 3, 4);
    cr_expect_eq(base, fx_hash(1, 2, 3, 4));
    cr_expect_neq(base, fx_hash(2, 2, 3, 4));
    cr_expect_neq(base, fx_hash(1, 3, 3, 4));
    cr_expect_neq(base, fx_hash(1, 2, 4, 4));
    cr_expect_neq(base, fx_hash(1, 2, 3, 5));
    /* low bits (the ones rounding uses) of neighbouring indices look uniform */
    int ones = 0;
    for (uint32_t i = 0; i < 10000; i++)
        ones += (int)(fx_hash(9, 0, 0, i) & 1);
    cr_expect(ones > 4800 && ones < 5200, "%d of 10000 low bits set", ones);
}

Test(fx_arith, exp_matches_libm)
{
    /* relative error 3e-5 (the Q16 log, the table), plus a Q30 step */
    for (double x = 0; x > -25; x -= 0.0371) {
        double got = fx_exp_q30((int64_t)llround(x * 65536)) / 1073741824.0, want = exp(x);
        cr_expect(fabs(got - want) <= 3e-5 * want + 2.0 / 1073741824.0, "e^%.4f: %.9g vs %.9g", x,
                  got, want);
    }
    cr_expect_eq(fx_exp_q30(0), 1u << 30);
    cr_expect_eq(fx_exp_q30(-41 * 65536), 0);
    cr_expect_eq(fx_exp_q30(5 * 65536), 1u << 30); /* clamped to x <= 0 */
}

Test(fx_arith, log2_matches_libm)
{
    for (uint32_t p = 1; p <= (1u << 30) && p > 0; p = p * 5 + 3) {
        double got = fx_log2_q30_q16(p) / 65536.0, want = log2(p / 1073741824.0);
        cr_expect(fabs(got - want) < 1e-4, "p=%u: %.6f vs %.6f", p, got, want);
    }
    cr_expect_eq(fx_log2_q30_q16(1u << 30), 0);
    cr_expect_eq(fx_log2_q30_q16(1u << 29), -65536);
}

Test(fx_arith, recip_is_rounded)
{
    cr_expect_eq(fx_recip_q16(1), 65536);
    cr_expect_eq(fx_recip_q16(9), 7282); /* 7281.78 */
    cr_expect_eq(fx_recip_q16(3), 21845);
}
