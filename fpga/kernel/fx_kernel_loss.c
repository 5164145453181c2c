/*
 * fx_kernel_loss.c - the kernel's two losses, in integers: softmax
 * cross-entropy and the grid detector's loss, each with its error.
 */
#include "fx_kernel.h"
#include "fx_arith.h"
#include "fx_kernel_int.h"

#include <stddef.h>

/* ---- losses ---- */

/* z[0..n) (exponent e) to Q16 differences from the maximum, for exp. */
static int64_t q16_below_max(int8_t v, int8_t max, int e)
{
    return fx_align((int64_t)v - max, e, -16);
}

static int argmax8(const int8_t *z, int n)
{
    int best = 0;
    for (int j = 1; j < n; j++)
        if (z[j] > z[best])
            best = j;
    return best;
}

/* Softmax of z[0..n) at exponent e: the normalizer sum of e^(z - max) in
 * Q30; p_j is then fx_exp_q30(..) * 2^30 / sum, recomputed where used, so
 * no buffer of n probabilities is needed. */
static uint64_t softmax_sum(const int8_t *z, int n, int e)
{
    int8_t m = z[argmax8(z, n)];
    uint64_t sum = 0;
    for (int j = 0; j < n; j++)
        sum += fx_exp_q30(q16_below_max(z[j], m, e));
    return sum;
}

static int64_t softmax_p_q30(const int8_t *z, int n, int e, int j, uint64_t sum)
{
    int8_t m = z[argmax8(z, n)];
    return (int64_t)(((uint64_t)fx_exp_q30(q16_below_max(z[j], m, e)) << 30) / sum);
}

/* -ln(p) in Q16 for p in Q30 */
static int64_t nll_q16(int64_t p_q30)
{
    return ((int64_t)-fx_log2_q30_q16((uint32_t)p_q30) * FX_LN2_Q16) >> 16;
}

/*
 * Mean softmax cross-entropy over the batch.  The error (p - onehot) / N is
 * formed in Q30 with 1/N as a Q16 reciprocal, then requantized.
 */
enum fx_status fx_kernel_softmax_ce(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_header *h = fx_kernel_header(mem);
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tl = fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    int classes = (int)fx_kernel_item_count(tx);
    if (!fx_kernel_same_shape(tx, tdx) || tl->type != FX_I32 || fx_kernel_item_count(tl) != 1 ||
        !tl->batched || fx_kernel_tensor_count(mem, tx) > fx_kernel_item_count(ta) || classes < 1)
        return FX_BAD_OPERAND;
    const int8_t *x = fx_kernel_i8(mem, tx);
    const int32_t *label = fx_kernel_i32(mem, tl);
    int32_t *acc = fx_kernel_i32(mem, ta);
    int64_t r = fx_recip_q16(h->batch);
    uint64_t maxabs = 0;
    for (uint32_t n = 0; n < h->batch; n++) {
        const int8_t *z = x + (size_t)n * classes;
        uint64_t sum = softmax_sum(z, classes, tx->exp);
        int y = label[n];
        for (int j = 0; j < classes; j++) {
            int64_t p = softmax_p_q30(z, classes, tx->exp, j, sum);
            if (j == y)
                h->loss_q16 += nll_q16(p);
            int64_t g = p - (j == y ? (int64_t)1 << 30 : 0);
            acc[(size_t)n * classes + j] =
                fx_kernel_store32(fx_shift_round(g * r, 16), &maxabs, tdx);
        }
        h->correct += argmax8(z, classes) == y;
    }
    fx_kernel_requantize(acc, fx_kernel_tensor_count(mem, tdx), maxabs, -30, fx_round_half_up(),
                         fx_kernel_i8(mem, tdx), tdx);
    return FX_OK;
}

/* sigma(v) in Q30 for v at exponent e */
static int64_t sigmoid_q30(int8_t v, int e)
{
    int64_t z = fx_align(v, e, -16);
    uint64_t ez = fx_exp_q30(z > 0 ? -z : z); /* e^-|z| */
    uint64_t one = (uint64_t)1 << 30;
    return (int64_t)(z >= 0 ? (one << 30) / (one + ez) : (ez << 30) / (one + ez));
}

/*
 * The grid detector's loss (one box per cell, YOLO v1 style), mean over the
 * batch: objectness BCE on every cell (no-object cells weighted 1/2), and
 * on cells that hold an object, squared error on x, y, sqrt w, sqrt h and
 * softmax cross-entropy over the classes.  The box term is Huber-like:
 * d^2 within +-1, 2|d| - 1 beyond, so its gradient 2d clips at +-2.
 */
enum fx_status fx_kernel_grid_loss(uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_header *h = fx_kernel_header(mem);
    struct fx_tensor *tx = fx_tensor_at(mem, c->t[0]), *tdx = fx_tensor_at(mem, c->t[1]);
    struct fx_tensor *tt = fx_tensor_at(mem, c->t[2]), *ta = fx_tensor_at(mem, c->t[4]);
    int classes = (int)tx->c - FX_GRID_BOX;
    if (!fx_kernel_same_shape(tx, tdx) || tt->type != FX_I32 || tt->h != tx->h || tt->w != tx->w ||
        tt->c != FX_GT_N || !tt->batched || classes < 1 ||
        fx_kernel_tensor_count(mem, tx) > fx_kernel_item_count(ta))
        return FX_BAD_OPERAND;
    const int8_t *x = fx_kernel_i8(mem, tx);
    const int32_t *tg = fx_kernel_i32(mem, tt);
    int32_t *acc = fx_kernel_i32(mem, ta);
    int64_t r = fx_recip_q16(h->batch), one = (int64_t)1 << 30;
    uint64_t cells = (uint64_t)h->batch * tx->h * tx->w, maxabs = 0;
    for (uint64_t cell = 0; cell < cells; cell++) {
        const int8_t *z = x + cell * tx->c;
        const int32_t *t = tg + cell * FX_GT_N;
        int32_t *g = acc + cell * tx->c;
        int obj = t[FX_GT_OBJ] != 0;
        int64_t s = sigmoid_q30(z[0], tx->exp);
        int64_t gobj = obj ? s - one : fx_shift_round(s, 1);
        h->loss_q16 += obj ? nll_q16(s) : nll_q16(one - s) / 2;
        g[0] = fx_kernel_store32(fx_shift_round(gobj * r, 16), &maxabs, tdx);
        for (int k = 1; k < FX_GRID_BOX; k++) {
            int64_t d = 0;
            if (obj) {
                d = fx_align(z[k], tx->exp, -30) - ((int64_t)t[FX_GT_X + k - 1] << 14);
                int64_t a = (int64_t)fx_abs64(d) >> 14; /* |d| in Q16 */
                h->loss_q16 += a <= 65536 ? a * a >> 16 : 2 * a - 65536;
                d = d > one ? one : d < -one ? -one : d;
            }
            g[k] = fx_kernel_store32(fx_shift_round(2 * d * r, 16), &maxabs, tdx);
        }
        const int8_t *zc = z + FX_GRID_BOX;
        uint64_t sum = obj ? softmax_sum(zc, classes, tx->exp) : 0;
        for (int j = 0; j < classes; j++) {
            int64_t d = 0;
            if (obj) {
                int64_t p = softmax_p_q30(zc, classes, tx->exp, j, sum);
                if (j == t[FX_GT_CLASS])
                    h->loss_q16 += nll_q16(p);
                d = p - (j == t[FX_GT_CLASS] ? one : 0);
            }
            g[FX_GRID_BOX + j] = fx_kernel_store32(fx_shift_round(d * r, 16), &maxabs, tdx);
        }
        if (obj)
            h->correct += argmax8(zc, classes) == t[FX_GT_CLASS];
    }
    fx_kernel_requantize(acc, fx_kernel_tensor_count(mem, tdx), maxabs, -30, fx_round_half_up(),
                         fx_kernel_i8(mem, tdx), tdx);
    return FX_OK;
}
