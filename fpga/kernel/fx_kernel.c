/*
 * fx_kernel.c - the reference accelerator as HLS-style C: fixed-size local
 * buffers, no allocation, no recursion, every loop bounded by descriptor
 * fields.  fx_kernel() walks a program of commands over one device-memory
 * image (fx_isa.h); each command is one layer operation.
 *
 * This file: image access and checks; requantization (the one place int32
 * becomes int8); dispatch.  The commands: convolution and fully connected
 * (forward, backward data, backward weight) on an FX_BT x FX_CT PE array
 * in fx_kernel_conv.c; element-wise and pooling operations in
 * fx_kernel_ewise.c; the two losses in fx_kernel_loss.c; the weight
 * update in fx_kernel_update.c.  What they share is in fx_kernel_int.h.
 *
 * Two-pass rule: an operation writes its int32 results to the acc scratch
 * tensor while tracking max|v|, then requantizes them all with the shift
 * that max implies, so a tensor's exponent reflects all of its data.
 */
#include "fx_kernel.h"
#include "fx_arith.h"
#include "fx_kernel_int.h"

#include <stddef.h>

/* ---- image access ---- */

struct fx_header *fx_kernel_header(uint8_t *mem)
{
    return (struct fx_header *)mem;
}

struct fx_tensor *fx_tensor_at(uint8_t *mem, unsigned id)
{
    return (struct fx_tensor *)(mem + fx_kernel_header(mem)->tensors_off) + id;
}

uint64_t fx_kernel_item_count(const struct fx_tensor *t)
{
    return (uint64_t)t->h * t->w * t->c;
}

/* Elements of t (batched tensors count the header's current batch). */
uint64_t fx_kernel_tensor_count(const uint8_t *mem, const struct fx_tensor *t)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    return fx_kernel_item_count(t) * (t->batched ? h->batch : 1);
}

int8_t *fx_kernel_i8(uint8_t *mem, const struct fx_tensor *t)
{
    return (int8_t *)(mem + t->offset);
}

int32_t *fx_kernel_i32(uint8_t *mem, const struct fx_tensor *t)
{
    return (int32_t *)(void *)(mem + t->offset);
}

/* The header, and every descriptor inside the image: FX_OK or
 * FX_BAD_IMAGE. */
static enum fx_status image_check(const uint8_t *mem)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    if (h->magic != FX_MAGIC || h->version != FX_VERSION)
        return FX_BAD_IMAGE;
    if (h->batch < 1 || h->batch > h->batch_max)
        return FX_BAD_IMAGE;
    uint64_t tend = (uint64_t)h->tensors_off + (uint64_t)h->ntensors * sizeof(struct fx_tensor);
    uint64_t cend = (uint64_t)h->cmds_off + (uint64_t)h->ncmds * sizeof(struct fx_cmd);
    if (tend > h->bytes || cend > h->bytes || h->tensors_off % 8 || h->cmds_off % 8)
        return FX_BAD_IMAGE;
    for (int p = 0; p < FX_PROGS; p++)
        if ((uint64_t)h->prog_first[p] + h->prog_count[p] > h->ncmds)
            return FX_BAD_IMAGE;
    const struct fx_tensor *t = (const struct fx_tensor *)(mem + h->tensors_off);
    for (uint32_t i = 0; i < h->ntensors; i++) {
        if ((t[i].type != FX_I8 && t[i].type != FX_I32) || t[i].offset % FX_ALIGN)
            return FX_BAD_IMAGE;
        uint64_t n = fx_kernel_item_count(&t[i]) * (t[i].batched ? h->batch_max : 1);
        if (t[i].offset + n * t[i].type > h->bytes)
            return FX_BAD_IMAGE;
    }
    return FX_OK;
}

/* ---- requantization ---- */

struct fx_rounding fx_round_half_up(void)
{
    struct fx_rounding r = {0, 0, 0, 0};
    return r;
}

struct fx_rounding fx_round_stochastic(const uint8_t *mem, unsigned tensor)
{
    const struct fx_header *h = (const struct fx_header *)mem;
    struct fx_rounding r = {1, h->seed, h->step, tensor};
    return r;
}

FX_CPU_CLONES uint32_t fx_requant_range(const int32_t *acc, uint64_t begin, uint64_t end, int s,
                                        struct fx_rounding r, int8_t *out)
{
    uint32_t sat = 0;
    if (r.stochastic) {
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int64_t v =
                fx_shift_stochastic(acc[i], s, fx_hash(r.seed, r.step, r.tensor, (uint32_t)i));
            out[i] = (int8_t)fx_clamp(v, FX_Q8_MAX, &sat);
        }
        return sat;
    }
    if (s >= 1 && s <= 31) {
        /* fx_shift_round in int32: (a + 2^(s-1)) >> s is a >> s plus bit
         * s-1 of a; with the clamp branch-free, a CPU build vectorizes it */
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int32_t v = (acc[i] >> s) + ((acc[i] >> (s - 1)) & 1);
            int32_t q = v > FX_Q8_MAX ? FX_Q8_MAX : v < -FX_Q8_MAX ? -FX_Q8_MAX : v;
            sat += q != v;
            out[i] = (int8_t)q;
        }
        return sat;
    }
    if (s <= 0 && s >= -30) {
        /* shift 0: every |sum| < 128, an error tensor late in training
         * (the requantizations here choose s >= 0; a left shift is
         * handled alike): a * 2^-s leaves +-127 exactly when |a| > 127 >>
         * -s, so the clamp is decided before the shift, branch-free */
        const int left = -s;
        const int32_t fits = FX_Q8_MAX >> left;
        for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
            int32_t a = acc[i];
            int32_t q = a > fits ? FX_Q8_MAX : a < -fits ? -FX_Q8_MAX : a * (1 << left);
            sat += a > fits || a < -fits;
            out[i] = (int8_t)q;
        }
        return sat;
    }
    for (uint64_t i = begin; i < end; i++) {
#pragma HLS PIPELINE II = 1
        out[i] = (int8_t)fx_clamp(fx_shift_round(acc[i], s), FX_Q8_MAX, &sat);
    }
    return sat;
}

void fx_set_exp(struct fx_tensor *t, int e)
{
    t->exp = (int8_t)(e > 127 ? 127 : e < -128 ? -128 : e);
}

/* out = acc / 2^s with s from maxabs; the exponent becomes e_acc + s. */
void fx_kernel_requantize(const int32_t *acc, uint64_t count, uint64_t maxabs, int e_acc,
                          struct fx_rounding r, int8_t *out, struct fx_tensor *t)
{
    int s = fx_quant_shift(maxabs);
    t->saturations += fx_requant_range(acc, 0, count, s, r, out);
    fx_set_exp(t, e_acc + s);
}

/* ---- dispatch ---- */

enum fx_status fx_kernel_exec(uint8_t *mem, const struct fx_cmd *cmd)
{
    switch ((enum fx_op)cmd->op) {
    case FX_OP_NOP: return FX_OK;
    case FX_OP_CONV_FWD: return fx_kernel_conv_fwd(mem, cmd);
    case FX_OP_CONV_BWD_DATA: return fx_kernel_conv_bwd_data(mem, cmd);
    case FX_OP_CONV_BWD_WEIGHT: return fx_kernel_conv_bwd_weight(mem, cmd);
    case FX_OP_FC_FWD: return fx_kernel_conv_fwd(mem, cmd);
    case FX_OP_FC_BWD_DATA: return fx_kernel_conv_bwd_data(mem, cmd);
    case FX_OP_FC_BWD_WEIGHT: return fx_kernel_conv_bwd_weight(mem, cmd);
    case FX_OP_RELU_FWD:
    case FX_OP_RELU_BWD:
    case FX_OP_ADD: return fx_kernel_ewise(mem, cmd);
    case FX_OP_MAXPOOL_FWD: return fx_kernel_maxpool_fwd(mem, cmd);
    case FX_OP_MAXPOOL_BWD: return fx_kernel_maxpool_bwd(mem, cmd);
    case FX_OP_AVGPOOL_FWD: return fx_kernel_avgpool_fwd(mem, cmd);
    case FX_OP_AVGPOOL_BWD: return fx_kernel_avgpool_bwd(mem, cmd);
    case FX_OP_CONCAT_FWD: return fx_kernel_concat_fwd(mem, cmd);
    case FX_OP_CONCAT_BWD: return fx_kernel_concat_bwd(mem, cmd);
    case FX_OP_SLICE_FWD: return fx_kernel_slice_fwd(mem, cmd);
    case FX_OP_SLICE_BWD: return fx_kernel_slice_bwd(mem, cmd);
    case FX_OP_SOFTMAX_CE: return fx_kernel_softmax_ce(mem, cmd);
    case FX_OP_GRID_LOSS: return fx_kernel_grid_loss(mem, cmd);
    case FX_OP_QUANT_W: return fx_kernel_quant_w(mem, cmd);
    case FX_OP_SGD: return fx_kernel_sgd(mem, cmd);
    case FX_OPS: break;
    }
    return FX_BAD_OP;
}

enum fx_status fx_program_start(uint8_t *mem, uint32_t prog)
{
    struct fx_header *h = fx_kernel_header(mem);
    h->loss_q16 = 0;
    h->correct = 0;
    h->status_cmd = 0;
    h->status = prog < FX_PROGS ? image_check(mem) : FX_BAD_IMAGE;
    if (h->status != FX_OK)
        return (enum fx_status)h->status;
    const struct fx_cmd *cmds = (const struct fx_cmd *)(mem + h->cmds_off);
    for (uint32_t i = h->prog_first[prog]; i < h->prog_first[prog] + h->prog_count[prog]; i++)
        for (int j = 0; j < 8; j++)
            if (cmds[i].t[j] >= h->ntensors) {
                h->status = FX_BAD_OPERAND;
                h->status_cmd = i;
                return FX_BAD_OPERAND;
            }
    return FX_OK;
}

void fx_kernel(uint8_t *mem, uint32_t prog)
{
#pragma HLS INTERFACE m_axi port = mem offset = slave bundle = gmem
#pragma HLS INTERFACE s_axilite port = prog
#pragma HLS INTERFACE s_axilite port = return
    struct fx_header *h = fx_kernel_header(mem);
    if (fx_program_start(mem, prog) != FX_OK)
        return;
    const struct fx_cmd *cmds = (const struct fx_cmd *)(mem + h->cmds_off);
    for (uint32_t i = h->prog_first[prog]; i < h->prog_first[prog] + h->prog_count[prog]; i++) {
        enum fx_status s = fx_kernel_exec(mem, &cmds[i]);
        if (s != FX_OK) {
            h->status = s;
            h->status_cmd = i;
            return;
        }
    }
}
