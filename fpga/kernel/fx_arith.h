/*
 * fx_arith.h - the number format, element by element: rounding shifts,
 * saturation, exponent choice, the counter-based rounding hash, and the
 * integer exp/log the losses need.  The kernel and the emulator both use
 * these, so a rule is written once; what differs between them is how the
 * loops around it are organized.  fpga/README.md states the same rules in
 * prose.
 *
 * Everything is integer arithmetic on fixed widths: no floating point, no
 * global state, so any backend and any thread count gives the same bits.
 * Right shifts of negative numbers are arithmetic (gcc, clang and Vitis
 * HLS all define them so).
 */
#ifndef FX_ARITH_H
#define FX_ARITH_H

#include <stdint.h>

#define FX_Q8_MAX 127 /* int8 tensors are symmetric: -127..127 */

/* Number of significant bits of v: 0 for 0, 7 for 127. */
static inline int fx_bitlen(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

static inline uint64_t fx_abs64(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/*
 * The shift that brings max|v| into int8: the smallest s >= 0 with
 * max >> s < 128.  Values are then round(v / 2^s) and the tensor's
 * exponent grows by s (NITI's rule, DarkFPGA's dynamic fixed point).
 */
static inline int fx_quant_shift(uint64_t maxabs)
{
    int b = fx_bitlen(maxabs);
    return b > 7 ? b - 7 : 0;
}

/*
 * A weight gradient sums batch x output pixels products: more than an
 * int32 accumulator holds exactly at a large image (112 x 112 x 32 at a
 * ResNet's stem).  It accumulates in 48 bits, as a DSP48's accumulator
 * does, and is stored in the int32 scratch shifted right (rounded half up)
 * by the fewest bits that bring its bound back to `exact` terms' -- the
 * shift this returns for `terms` products; the stored tensor's exponent
 * carries it.  0 for a sum of at most `exact` terms: stored as it is.
 */
static inline int fx_reduction_shift(uint64_t terms, uint64_t exact)
{
    int s = 0;
    while ((exact << s) < terms)
        s++;
    return s;
}

/* Where a product fx_shift_round makes saturates: two of them still add
 * up within int64 (a momentum plus a step), and the clamps that follow
 * count it. */
#define FX_SHIFT_SAT ((int64_t)1 << 62)

/* v / 2^s rounded half up (s > 0), or v * 2^-s (s <= 0, at most 2^40),
 * saturated at +-FX_SHIFT_SAT. */
static inline int64_t fx_shift_round(int64_t v, int s)
{
    if (s > 62)
        return 0;
    if (s > 0)
        return (v + ((int64_t)1 << (s - 1))) >> s;
    if (s < -40)
        s = -40;
    int64_t lim = FX_SHIFT_SAT >> -s;
    return v >= lim ? FX_SHIFT_SAT : v <= -lim ? -FX_SHIFT_SAT : v * ((int64_t)1 << -s);
}

/*
 * fx_shift_round(v, s) for one s a whole loop long, as a plan made once:
 * v + add, shifted right by `right`, then left by `left`, saturated to
 * +-FX_SHIFT_SAT where v leaves [lo, hi], and kept only if s <= 62.  The
 * same value as fx_shift_round for every v it is defined for, without a
 * branch on s per element: a shifter's control, fixed before the
 * pipeline starts; on a CPU, a loop the compiler vectorizes.
 */
struct fx_shift_plan {
    int64_t add;    /* rounding: half of the right shift's unit */
    int64_t lo, hi; /* a left shift saturates outside them (never a right one) */
    int64_t keep;   /* 0 when s > 62: every value rounds to 0 */
    int right, left;
};

static inline struct fx_shift_plan fx_plan_shift(int s)
{
    struct fx_shift_plan p = {0, INT64_MIN, INT64_MAX, -1, 0, 0};
    if (s > 62) {
        p.keep = 0;
    } else if (s > 0) {
        p.add = (int64_t)1 << (s - 1), p.right = s;
    } else {
        p.left = s < -40 ? 40 : -s;
        p.hi = (FX_SHIFT_SAT >> p.left) - 1, p.lo = -p.hi;
    }
    return p;
}

static inline int64_t fx_shift_planned(int64_t v, const struct fx_shift_plan *p)
{
    int64_t r = (int64_t)((uint64_t)((v + p->add) >> p->right) << p->left);
    r = v > p->hi ? FX_SHIFT_SAT : v < p->lo ? -FX_SHIFT_SAT : r;
    return r & p->keep;
}

/* Clamps to [-lim, lim], counting the clamp in *sat. */
static inline int64_t fx_clamp(int64_t v, int64_t lim, uint32_t *sat)
{
    if (v > lim) {
        ++*sat;
        return lim;
    }
    if (v < -lim) {
        ++*sat;
        return -lim;
    }
    return v;
}

/* v clamped into an int32 accumulator (clamps counted in *sat), tracking
 * the largest magnitude stored in *maxabs. */
static inline int32_t fx_store32(int64_t v, uint64_t *maxabs, uint32_t *sat)
{
    int32_t s = (int32_t)fx_clamp(v, INT32_MAX, sat);
    uint64_t a = fx_abs64(s);
    if (a > *maxabs)
        *maxabs = a;
    return s;
}

/* Re-expresses v (exponent from) at exponent to, rounding half up. */
static inline int64_t fx_align(int64_t v, int from, int to)
{
    return fx_shift_round(v, to - from);
}

/*
 * The stochastic rounding draw for element index of tensor id at a training
 * step: a counter-based hash (the splitmix64 finalizer over the packed
 * counter), so an element's draw is the same whichever thread or backend
 * computes it and no random state is carried.
 */
static inline uint64_t fx_hash(uint64_t seed, uint32_t step, uint32_t tensor, uint32_t index)
{
    uint64_t z = seed ^ ((uint64_t)step << 32 | tensor) * 0x9e3779b97f4a7c15ull;
    z += (uint64_t)index * 0xd1b54a32d192ed03ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* floor((v + r) / 2^s) with r uniform in [0, 2^s): unbiased rounding. */
static inline int64_t fx_shift_stochastic(int64_t v, int s, uint64_t draw)
{
    if (s <= 0)
        return fx_shift_round(v, s);
    if (s > 62)
        return 0;
    return (v + (int64_t)(draw & (((uint64_t)1 << s) - 1))) >> s;
}

/* 2^(i/64) in Q30, i = 0..64: the table behind fx_exp_q30. */
static const uint32_t fx_exp2_table[65] = {
    1073741824u, 1085434106u, 1097253708u, 1109202018u, 1121280436u, 1133490379u, 1145833280u,
    1158310587u, 1170923762u, 1183674286u, 1196563654u, 1209593378u, 1222764986u, 1236080024u,
    1249540052u, 1263146652u, 1276901417u, 1290805962u, 1304861917u, 1319070932u, 1333434672u,
    1347954824u, 1362633090u, 1377471191u, 1392470869u, 1407633882u, 1422962010u, 1438457051u,
    1454120821u, 1469955159u, 1485961921u, 1502142985u, 1518500250u, 1535035634u, 1551751076u,
    1568648537u, 1585730000u, 1602997467u, 1620452965u, 1638098541u, 1655936265u, 1673968228u,
    1692196547u, 1710623359u, 1729250827u, 1748081133u, 1767116489u, 1786359126u, 1805811301u,
    1825475297u, 1845353420u, 1865448001u, 1885761398u, 1906295993u, 1927054196u, 1948038440u,
    1969251188u, 1990694927u, 2012372174u, 2034285470u, 2056437387u, 2078830522u, 2101467502u,
    2124350982u, 2147483648u,
};

#define FX_LOG2E_Q30 1549082005 /* log2(e) */
#define FX_LN2_Q16   45426      /* ln(2) */

/*
 * e^x for x <= 0 given in Q16, in Q30 (1.0 = 2^30).  x * log2(e) splits
 * into an integer part (a shift) and a fraction looked up in 2^(i/64)
 * with linear interpolation: relative error below 3e-5.
 */
static inline uint32_t fx_exp_q30(int64_t x_q16)
{
    if (x_q16 > 0)
        x_q16 = 0;
    if (x_q16 < -40 * (int64_t)65536)
        return 0;
    int64_t y = (x_q16 * FX_LOG2E_Q30) >> 30; /* log2 of the result, Q16, <= 0 */
    int64_t ip = y >> 16;                     /* floor: -41..0 */
    uint32_t f = (uint32_t)(y - ip * 65536);  /* fraction, Q16 */
    uint32_t i = f >> 10, t = f & 1023;
    uint64_t lo = fx_exp2_table[i], hi = fx_exp2_table[i + 1];
    uint64_t v = lo + (((hi - lo) * t + 512) >> 10); /* 2^frac, Q30 */
    int s = (int)-ip;
    return s > 31 ? 0 : (uint32_t)((v + ((uint64_t)1 << s >> 1)) >> s);
}

/* log2(p / 2^30) in Q16 for 0 < p <= 2^30 (p = 0 reads as 1): bit by bit,
 * squaring the mantissa (exact to 2^-16). */
static inline int32_t fx_log2_q30_q16(uint32_t p)
{
    if (p == 0)
        p = 1;
    int b = fx_bitlen(p);
    int32_t result = (int32_t)(b - 31) * 65536;
    uint64_t m = (uint64_t)p << (31 - b); /* Q30 in [1, 2) */
    for (int bit = 15; bit >= 0; bit--) {
        m = (m * m) >> 30;
        if (m >= (uint64_t)2 << 30) {
            m >>= 1;
            result += 1 << bit;
        }
    }
    return result;
}

/* Reciprocal 2^16 / n rounded, for averages: the factor keeps a mean an
 * integer product, with the 2^-16 folded into the exponent. */
static inline int64_t fx_recip_q16(uint32_t n)
{
    return n ? ((int64_t)65536 + n / 2) / n : 0;
}

#endif
