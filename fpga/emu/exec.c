/*
 * exec.c - the emulator's executor of the accelerator's command stream.
 *
 * It runs the same image and programs as the kernel C.  Convolution and FC
 * commands, where the time goes, become im2col + int8 GEMM (gemm.c) split
 * across the worker pool (on AMX, most of them implicit GEMMs with no
 * im2col: implicit.c), or, where that measured faster, oneDNN's
 * convolutions (onednn.c); max pools run on the pool by items and channels;
 * the weight updates run the kernel's own SGD and QUANT_W, one layer per
 * worker at a time; the other commands are cheap and run the kernel's own
 * code (fx_kernel_exec) on one core.  The arithmetic is the kernel's: the
 * same int32 sums (exact, so their order is free), the same max over the
 * tensor, the same requantization by element index, so the image after a
 * program is identical byte for byte whatever the thread count.  When
 * asked (eeb_emu_profile_start), the emulator times its phases.
 *
 * This file holds the executor's state, its scratch buffers and
 * profiling, the element-wise operations, the commands on one core, the
 * weight updates and the run loop.  The convolutions are in exec_gemm.c
 * (im2cols, GEMMs over rows, requantization, packing the weights),
 * exec_conv.c (forward and backward data, oneDNN's among them) and
 * exec_wgrad.c (backward weight); the max pools in exec_maxpool.c.  What
 * they share is in emu_int.h.
 */
#include "eeb_emu.h"
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"
#include "fpga/kernel/fx_kernel.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EWISE_PER_PART 65536 /* elements per element-wise part */

/* ---- scratch buffers ---- */

void *emu_grow(struct buf *b, size_t bytes)
{
    if (bytes > b->cap) {
        free(b->p);
        b->p = aligned_alloc(64, (bytes + 63) / 64 * 64);
        b->cap = b->p ? bytes : 0;
    }
    return b->p;
}

struct eeb_emu *eeb_emu_new(int threads, enum eeb_emu_isa isa)
{
    struct eeb_emu *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->isa = isa;
    e->onednn = emu_onednn_exact() ? EEB_EMU_ONEDNN_AUTO : EEB_EMU_ONEDNN_OFF;
    e->pool = emu_pool_new(threads);
    e->threads = e->pool ? emu_pool_threads(e->pool) : 0;
    e->w = calloc((size_t)(e->threads ? e->threads : 1), sizeof *e->w);
    if (!e->pool || !e->w) {
        eeb_emu_free(e);
        return NULL;
    }
    return e;
}

void eeb_emu_free(struct eeb_emu *e)
{
    if (!e)
        return;
    emu_pool_free(e->pool);
    for (int i = 0; e->w && i < e->threads; i++) {
        free(e->w[i].col.p), free(e->w[i].c32.p), free(e->w[i].sum.p);
        emu_onednn_stream_free(e->w[i].dnn_stream), free(e->w[i].dnn_scratch.p);
    }
    for (int i = 0; i < e->ndnn; i++)
        emu_onednn_free(e->dnn[i].d);
    free(e->dnn);
    free(e->w);
    free(e->bias.p), free(e->bias32.p), free(e->turned.p), free(e->gathered.p), free(e->wide.p),
        free(e->updates.p), free(e->s2d.p);
    free(e);
}

void eeb_emu_set_onednn(struct eeb_emu *e, enum eeb_emu_onednn mode)
{
    e->onednn = emu_onednn_exact() ? mode : EEB_EMU_ONEDNN_OFF;
}

int eeb_emu_threads(const struct eeb_emu *e)
{
    return e->threads;
}

enum eeb_emu_isa eeb_emu_isa(const struct eeb_emu *e)
{
    return e->isa;
}

void emu_reset_workers(struct eeb_emu *e)
{
    for (int i = 0; i < e->threads; i++)
        e->w[i].maxabs = 0, e->w[i].sat = 0;
}

/* Max and saturations over all workers; -1 if one ran out of memory. */
int emu_gather(struct eeb_emu *e, uint64_t *maxabs, uint32_t *sat)
{
    int oom = 0;
    for (int i = 0; i < e->threads; i++) {
        if (e->w[i].maxabs > *maxabs)
            *maxabs = e->w[i].maxabs;
        *sat += e->w[i].sat;
        oom |= e->w[i].oom;
        e->w[i].oom = 0;
    }
    return oom ? -1 : 0;
}

/* ---- profiling ---- */

void eeb_emu_profile_start(struct eeb_emu *e, int on)
{
    e->profiling = on;
    memset(&e->prof, 0, sizeof e->prof);
    e->prof.threads = e->threads;
    for (int i = 0; i < e->threads; i++)
        memset(e->w[i].ns, 0, sizeof e->w[i].ns);
}

void eeb_emu_profile_read(const struct eeb_emu *e, struct eeb_emu_profile *out)
{
    *out = e->prof;
}

const char *eeb_emu_phase_name(enum eeb_emu_phase phase)
{
    static const char *const names[EEB_EMU_PHASES] = {
        [EEB_EMU_PHASE_GEMM] = "gemm",       [EEB_EMU_PHASE_IM2COL] = "im2col",
        [EEB_EMU_PHASE_PACK] = "pack",       [EEB_EMU_PHASE_REDUCE] = "reduce",
        [EEB_EMU_PHASE_REQUANT] = "requant", [EEB_EMU_PHASE_EWISE] = "ewise",
        [EEB_EMU_PHASE_POOL] = "pool",       [EEB_EMU_PHASE_UPDATE] = "update",
        [EEB_EMU_PHASE_OTHER] = "other",     [EEB_EMU_PHASE_IDLE] = "idle"};
    return (unsigned)phase < EEB_EMU_PHASES ? names[phase] : "?";
}

/* ---- element-wise operations ---- */

struct ewise_job {
    struct eeb_emu *e;
    struct fx_ewise ew;
};

static void ewise_part(void *ctx, int part, int worker)
{
    struct ewise_job *j = ctx;
    struct worker *w = &j->e->w[worker];
    uint64_t since = tick(j->e);
    uint64_t b = (uint64_t)part * EWISE_PER_PART;
    uint64_t end = b + EWISE_PER_PART < j->ew.count ? b + EWISE_PER_PART : j->ew.count;
    fx_ewise_range(&j->ew, b, end, &w->maxabs);
    tock(j->e, w, EEB_EMU_PHASE_EWISE, &since);
}

/* ReLU and residual add: the kernel's loop, over parts on the pool. */
static enum fx_status ewise(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    struct ewise_job j = {.e = e};
    enum fx_status st = fx_ewise_operands(mem, c, &j.ew);
    if (st != FX_OK)
        return st;
    emu_reset_workers(e);
    emu_pool_run(e->pool, (int)((j.ew.count + EWISE_PER_PART - 1) / EWISE_PER_PART), ewise_part,
                 &j);
    uint64_t maxabs = 0;
    uint32_t unused = 0;
    emu_gather(e, &maxabs, &unused);
    if (c->op == FX_OP_ADD)
        emu_requantize(e, mem, j.ew.pacc, j.ew.count, maxabs, j.ew.e, fx_round_half_up(), j.ew.y);
    else
        j.ew.y->exp = (int8_t)j.ew.e;
    return FX_OK;
}

/* ---- commands on one core ---- */

/* A command the kernel's own code runs, on one core. */
enum fx_status emu_serial(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    uint64_t since = tick(e);
    enum fx_status st = fx_kernel_exec(mem, c);
    enum eeb_emu_phase ph = EEB_EMU_PHASE_OTHER;
    switch ((enum fx_op)c->op) {
    case FX_OP_MAXPOOL_FWD:
    case FX_OP_MAXPOOL_BWD:
    case FX_OP_AVGPOOL_FWD:
    case FX_OP_AVGPOOL_BWD: ph = EEB_EMU_PHASE_POOL; break;
    case FX_OP_SGD:
    case FX_OP_QUANT_W: ph = EEB_EMU_PHASE_UPDATE; break;
    default: break;
    }
    tock(e, &e->w[0], ph, &since);
    return st;
}

/* ---- the weight updates, layer by layer in parallel ---- */

#define UPDATE_RUN_MAX 256 /* update commands run together at most */

/* The kernel's SGD and QUANT_W read and write nothing but their operands
 * (data and descriptors).  A run of them therefore splits into groups
 * that share none, a layer's [SGD w, QUANT_W] and [SGD b], and the groups
 * run at once, each in program order on one worker: the image is the
 * kernel's byte for byte.  (Only after a refused command, a malformed
 * image, may groups after it have run too; the status names the first
 * refused.) */
struct update_job {
    struct eeb_emu *e;
    uint8_t *mem;
    const struct fx_cmd *cmds;
    int n;                          /* commands in the run */
    int group[UPDATE_RUN_MAX];      /* per command */
    int order[UPDATE_RUN_MAX];      /* the groups, largest first */
    uint64_t size[UPDATE_RUN_MAX];  /* per group: elements its commands go over */
    uint8_t status[UPDATE_RUN_MAX]; /* per command */
};

static int is_update(const struct fx_cmd *c)
{
    return c->op == FX_OP_SGD || c->op == FX_OP_QUANT_W;
}

/* Whether update commands a and b name a common operand. */
static int share_operand(const struct fx_cmd *a, const struct fx_cmd *b)
{
    int na = a->op == FX_OP_SGD ? 3 : 2, nb = b->op == FX_OP_SGD ? 3 : 2;
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++)
            if (a->t[i] == b->t[j])
                return 1;
    return 0;
}

static void update_part(void *ctx, int part, int worker)
{
    struct update_job *j = ctx;
    uint64_t since = tick(j->e);
    for (int c = 0; c < j->n; c++)
        if (j->group[c] == j->order[part])
            j->status[c] = (uint8_t)fx_kernel_exec(j->mem, &j->cmds[c]);
    tock(j->e, &j->e->w[worker], EEB_EMU_PHASE_UPDATE, &since);
}

/* Runs the update commands from cmds[0] on: as many as split into groups
 * that way (at least one, at most `left`), their count in *ran.  FX_OK,
 * or the status of the first refused, at offset *bad. */
static enum fx_status updates(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *cmds,
                              uint32_t left, uint32_t *ran, uint32_t *bad)
{
    struct update_job *j = emu_grow(&e->updates, sizeof *j);
    if (!j)
        return FX_NO_MEMORY;
    j->e = e, j->mem = mem, j->cmds = cmds;
    int n = 0, groups = 0;
    for (; n < (int)left && n < UPDATE_RUN_MAX && is_update(&cmds[n]); n++) {
        int joins = -1, clash = 0; /* the group it shares operands with; with two */
        for (int c = 0; c < n; c++)
            if (share_operand(&cmds[c], &cmds[n])) {
                clash |= joins >= 0 && joins != j->group[c];
                joins = j->group[c];
            }
        if (clash)
            break; /* it waits for the next run */
        if (joins < 0) {
            joins = groups++;
            j->size[joins] = 0;
            j->order[joins] = joins;
        }
        const struct fx_tensor *t = fx_tensor_at(mem, cmds[n].t[0]);
        j->group[n] = joins;
        j->size[joins] += (uint64_t)t->h * t->w * t->c;
    }
    j->n = n;
    for (int a = 1; a < groups; a++) /* largest first, so that the last parts are short */
        for (int b = a; b > 0 && j->size[j->order[b]] > j->size[j->order[b - 1]]; b--) {
            int t = j->order[b];
            j->order[b] = j->order[b - 1], j->order[b - 1] = t;
        }
    emu_pool_run(e->pool, groups, update_part, j);
    *ran = (uint32_t)n;
    for (int c = 0; c < n; c++)
        if (j->status[c] != FX_OK) {
            *bad = (uint32_t)c;
            return (enum fx_status)j->status[c];
        }
    return FX_OK;
}

/* ---- the run loop ---- */

static enum fx_status exec(struct eeb_emu *e, uint8_t *mem, const struct fx_cmd *c)
{
    struct fx_conv cv;
    switch ((enum fx_op)c->op) {
    case FX_OP_CONV_FWD:
    case FX_OP_FC_FWD:
    case FX_OP_CONV_BWD_DATA:
    case FX_OP_FC_BWD_DATA:
    case FX_OP_CONV_BWD_WEIGHT:
    case FX_OP_FC_BWD_WEIGHT: break;
    case FX_OP_RELU_FWD:
    case FX_OP_RELU_BWD:
    case FX_OP_ADD: return ewise(e, mem, c);
    case FX_OP_MAXPOOL_FWD:
    case FX_OP_MAXPOOL_BWD: return emu_maxpool(e, mem, c);
    default: return emu_serial(e, mem, c);
    }
    enum fx_status st = fx_conv_operands(mem, c, &cv);
    if (st != FX_OK)
        return st;
    switch ((enum fx_op)c->op) {
    case FX_OP_CONV_FWD:
    case FX_OP_FC_FWD: return emu_conv_fwd(e, mem, &cv);
    case FX_OP_CONV_BWD_DATA:
    case FX_OP_FC_BWD_DATA: return emu_conv_bwd_data(e, mem, &cv);
    default: return emu_conv_bwd_weight(e, mem, c, &cv);
    }
}

int eeb_emu_run(struct eeb_emu *e, uint8_t *mem, uint32_t prog)
{
    struct fx_header *h = (struct fx_header *)mem;
    if (fx_program_start(mem, prog) != FX_OK)
        return -1;
    const struct fx_cmd *cmds = (const struct fx_cmd *)(mem + h->cmds_off);
    const uint64_t t0 = tick(e);
    const uint32_t end = h->prog_first[prog] + h->prog_count[prog];
    int rc = 0;
    for (uint32_t i = h->prog_first[prog], ran = 1; i < end; i += ran) {
        uint64_t since = tick(e);
        uint32_t bad = 0;
        ran = 1;
        enum fx_status s = is_update(&cmds[i]) ? updates(e, mem, cmds + i, end - i, &ran, &bad)
                                               : exec(e, mem, &cmds[i]);
        if (e->profiling && cmds[i].op < FX_OPS) /* a run of updates counts as its first */
            e->prof.op_ns[cmds[i].op] += now_ns() - since;
        if (s != FX_OK) {
            h->status = s;
            h->status_cmd = i + bad;
            rc = -1;
            break;
        }
    }
    if (e->profiling) { /* the workers' phases, and the rest of threads x wall as idle */
        uint64_t wall = now_ns() - t0, busy = 0;
        for (int i = 0; i < e->threads; i++)
            for (int p = 0; p < EEB_EMU_PHASES; p++) {
                e->prof.ns[p] += e->w[i].ns[p];
                busy += e->w[i].ns[p];
                e->w[i].ns[p] = 0;
            }
        uint64_t all = wall * (uint64_t)e->threads;
        e->prof.ns[EEB_EMU_PHASE_IDLE] += all > busy ? all - busy : 0;
        e->prof.wall_ns += wall;
    }
    return rc;
}
