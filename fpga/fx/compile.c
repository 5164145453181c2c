/*
 * compile.c - network -> device image: tensor allocation, the three
 * programs, and the layout of the image.
 *
 * Programs, laid out contiguously so each is one run of commands:
 *
 *   [ init: QUANT_W all ][ forward ... ][ loss, backward, SGD, QUANT_W ]
 *                        \-- predict --/
 *                        \------------- train ---------------------/
 *
 * Backward is emitted in reverse layer order and only where an error is
 * needed: below the first trained layer nothing runs (frozen layers cost
 * only their forward pass).  A tensor read by several layers gets one
 * partial error per reader, summed by ADD commands before its producer's
 * backward; an ADD or FLATTEN layer passes its error through unchanged,
 * so the readers' partials alias it.
 */
#include "fpga/fx/eeb_fx.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest sum of int8 x int8 products a command may form: an int32
 * accumulator holds 127 * 127 * n for n < 133k; the emulator's GEMM takes
 * K up to this in one pass. */
#define MAX_REDUCTION FX_MAX_REDUCTION
/* A weight gradient's 48-bit accumulators: |sum| <= n * 127 * 127 < 2^47. */
#define MAX_WEIGHT_REDUCTION ((uint64_t)1 << 33)

struct builder {
    const struct eeb_net *net;
    int batch_max, frozen;
    struct fx_tensor *t;
    uint8_t *role;
    int nt, capt;
    struct fx_cmd *c;
    int nc, capc;
    uint64_t acc_need; /* int32 scratch elements the largest command needs */
    uint16_t acc;
    int failed;
    char *err;
    size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int fail(struct builder *b, const char *fmt, ...)
{
    if (!b->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->errlen, fmt, ap);
        va_end(ap);
    }
    b->failed = 1;
    return 0;
}

static uint16_t tensor(struct builder *b, struct eeb_shape s, int type, int batched, int exp,
                       enum eeb_fx_role role)
{
    if (b->failed)
        return 0;
    if (b->nt == 65535)
        return (uint16_t)fail(b, "more than 65535 tensors");
    if (b->nt == b->capt) {
        int cap = b->capt ? 2 * b->capt : 64;
        struct fx_tensor *t = realloc(b->t, (size_t)cap * sizeof *t);
        uint8_t *r = t ? realloc(b->role, (size_t)cap) : NULL;
        if (!t || !r) {
            if (t)
                b->t = t;
            return (uint16_t)fail(b, "out of memory");
        }
        b->t = t, b->role = r, b->capt = cap;
    }
    struct fx_tensor *t = &b->t[b->nt];
    memset(t, 0, sizeof *t);
    t->h = (uint16_t)s.h, t->w = (uint16_t)s.w, t->c = (uint32_t)s.c;
    t->type = (uint8_t)type, t->batched = (uint8_t)batched, t->exp = (int8_t)exp;
    b->role[b->nt] = (uint8_t)role;
    return (uint16_t)b->nt++;
}

static struct eeb_shape flat(uint64_t n)
{
    struct eeb_shape s = {1, 1, (int)n};
    return s;
}

static uint64_t count(const struct builder *b, uint16_t id)
{
    const struct fx_tensor *t = &b->t[id];
    return (uint64_t)t->h * t->w * t->c * (t->batched ? (uint64_t)b->batch_max : 1);
}

static void need_acc(struct builder *b, uint64_t n)
{
    if (n > b->acc_need)
        b->acc_need = n;
}

/* Appends a command; operands t0..t4 (unused ones 0). */
static struct fx_cmd *cmd(struct builder *b, enum fx_op op, int layer, uint16_t t0, uint16_t t1,
                          uint16_t t2, uint16_t t3)
{
    if (b->failed)
        return NULL;
    if (b->nc == b->capc) {
        int cap = b->capc ? 2 * b->capc : 64;
        struct fx_cmd *c = realloc(b->c, (size_t)cap * sizeof *c);
        if (!c) {
            fail(b, "out of memory");
            return NULL;
        }
        b->c = c, b->capc = cap;
    }
    struct fx_cmd *c = &b->c[b->nc++];
    memset(c, 0, sizeof *c);
    c->op = (uint8_t)op;
    c->layer = (uint16_t)layer;
    c->t[0] = t0, c->t[1] = t1, c->t[2] = t2, c->t[3] = t3, c->t[4] = b->acc;
    return c;
}

/* The command's window: the layer's, or for a global average pool the
 * whole input. */
static void window(struct fx_cmd *c, const struct eeb_net *net, const struct eeb_layer *l)
{
    if (!c)
        return;
    if (l->kind == EEB_LAYER_GAP) {
        struct eeb_shape s = eeb_net_shape(net, l->in[0]);
        c->kh = (uint8_t)s.h, c->kw = (uint8_t)s.w, c->stride = 1;
        return;
    }
    c->kh = c->kw = (uint8_t)l->k;
    c->stride = (uint8_t)l->stride;
    c->pad = (uint8_t)l->pad;
}

/* ---- per-layer state while compiling ---- */

struct compiling {
    struct builder b;
    uint16_t *act;                /* activation tensor per layer */
    struct eeb_fx_params *params; /* per layer */
    int *trained, *need_err;      /* per layer */
    int *nparts;                  /* partial errors collected per layer */
    uint16_t **parts;
    uint16_t labels;
};

static uint16_t act_of(const struct compiling *cc, uint16_t input, int layer)
{
    return layer == EEB_NET_INPUT ? input : cc->act[layer];
}

/* The forward and backward-data sums are held to MAX_REDUCTION terms;
 * a weight gradient's (batch x output pixels) is not: it accumulates in
 * 48 bits and is stored shifted (fx_reduction_shift). */
static void check_reductions(struct builder *b, int i, const struct eeb_layer *l)
{
    uint64_t fwd = (uint64_t)l->rows;
    uint64_t data = (uint64_t)l->k * l->k * l->out.c;
    uint64_t weight = (uint64_t)b->batch_max * l->out.h * l->out.w;
    if (fwd > MAX_REDUCTION || data > MAX_REDUCTION)
        fail(b, "layer %d (%s): a %llu-term sum overflows the int32 accumulators (at most %d)", i,
             eeb_layer_kind_name(l->kind), (unsigned long long)(fwd > data ? fwd : data),
             MAX_REDUCTION);
    else if (weight > MAX_WEIGHT_REDUCTION)
        fail(b,
             "layer %d (%s): batch %d x %dx%d outputs is a %llu-term weight-gradient sum; the "
             "48-bit accumulators hold %llu: use a smaller batch",
             i, eeb_layer_kind_name(l->kind), b->batch_max, l->out.h, l->out.w,
             (unsigned long long)weight, (unsigned long long)MAX_WEIGHT_REDUCTION);
}

static void forward(struct compiling *cc, uint16_t input)
{
    struct builder *b = &cc->b;
    const struct eeb_net *net = b->net;
    int learnable = 0;
    for (int i = 0; i < net->nlayers && !b->failed; i++) {
        const struct eeb_layer *l = &net->layers[i];
        uint16_t x = act_of(cc, input, l->in[0]);
        uint16_t x2 = l->in[1] == EEB_NET_NONE ? 0 : act_of(cc, input, l->in[1]);
        if (l->kind == EEB_LAYER_FLATTEN) { /* same bytes, read flat by FC */
            cc->act[i] = x;
            continue;
        }
        if (l->kind == EEB_LAYER_SOFTMAX_CE || l->kind == EEB_LAYER_GRID_LOSS)
            continue;
        uint16_t y = cc->act[i] = tensor(b, l->out, FX_I8, 1, 0, EEB_FX_ROLE_ACT);
        need_acc(b, count(b, y));
        struct fx_cmd *c = NULL;
        switch (l->kind) {
        case EEB_LAYER_CONV:
        case EEB_LAYER_FC: {
            struct eeb_fx_params *p = &cc->params[i];
            uint64_t n = (uint64_t)l->rows * l->out.c;
            struct eeb_shape bs = flat((uint64_t)l->out.c);
            p->w24 = tensor(b, flat(n), FX_I32, 0, l->we, EEB_FX_ROLE_WEIGHT);
            p->w8 = tensor(b, flat(n), FX_I8, 0, 0, EEB_FX_ROLE_OTHER);
            p->b24 = tensor(b, bs, FX_I32, 0, l->be, EEB_FX_ROLE_WEIGHT);
            if (!b->failed)
                b->t[p->w24].flags = b->t[p->b24].flags = FX_T_MASTER;
            cc->trained[i] = learnable++ >= b->frozen;
            if (cc->trained[i]) {
                p->v = tensor(b, flat(n), FX_I32, 0, 0, EEB_FX_ROLE_WEIGHT);
                p->vb = tensor(b, bs, FX_I32, 0, 0, EEB_FX_ROLE_WEIGHT);
                p->dw = tensor(b, flat(n), FX_I8, 0, 0, EEB_FX_ROLE_GRAD);
                p->db = tensor(b, bs, FX_I8, 0, 0, EEB_FX_ROLE_GRAD);
                need_acc(b, n + (uint64_t)l->out.c);
            }
            check_reductions(b, i, l);
            c = cmd(b, l->kind == EEB_LAYER_CONV ? FX_OP_CONV_FWD : FX_OP_FC_FWD, i, x, y, p->w8,
                    p->b24);
            window(c, net, l);
            break;
        }
        case EEB_LAYER_RELU: cmd(b, FX_OP_RELU_FWD, i, x, y, 0, 0); break;
        case EEB_LAYER_MAXPOOL: window(cmd(b, FX_OP_MAXPOOL_FWD, i, x, y, 0, 0), net, l); break;
        case EEB_LAYER_AVGPOOL:
        case EEB_LAYER_GAP: window(cmd(b, FX_OP_AVGPOOL_FWD, i, x, y, 0, 0), net, l); break;
        case EEB_LAYER_ADD: cmd(b, FX_OP_ADD, i, x, y, x2, 0); break;
        case EEB_LAYER_CONCAT: cmd(b, FX_OP_CONCAT_FWD, i, x, y, x2, 0); break;
        case EEB_LAYER_SLICE:
            if ((c = cmd(b, FX_OP_SLICE_FWD, i, x, y, 0, 0)))
                c->first = (uint32_t)l->first;
            break;
        default: fail(b, "layer %d: unexpected %s", i, eeb_layer_kind_name(l->kind));
        }
    }
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        cc->need_err[i] = cc->trained[i];
        for (int j = 0; j < 2; j++)
            if (l->in[j] >= 0 && cc->need_err[l->in[j]])
                cc->need_err[i] = 1;
    }
}

/* The shape of layer i's tensors: a flatten layer has no tensors of its
 * own, it names its input's (FC commands read them flat). */
static struct eeb_shape stored_shape(const struct eeb_net *net, int i)
{
    while (i >= 0 && net->layers[i].kind == EEB_LAYER_FLATTEN)
        i = net->layers[i].in[0];
    return eeb_net_shape(net, i);
}

/* Where a backward command puts the error for its input `in`: a new
 * tensor, or (alias) the reader's own error.  It joins in's partial
 * errors if in needs one; else it is written and never read. */
static uint16_t error_dest(struct compiling *cc, int in, uint16_t alias)
{
    struct builder *b = &cc->b;
    uint16_t id = alias;
    if (!id) {
        id = tensor(b, stored_shape(b->net, in), FX_I8, 1, 0, EEB_FX_ROLE_ERR);
        need_acc(b, count(b, id));
    }
    if (in >= 0 && cc->need_err[in] && !b->failed)
        cc->parts[in][cc->nparts[in]++] = id;
    return id;
}

/* The error of layer i's output: its readers' partial errors, summed. */
static uint16_t gather_error(struct compiling *cc, int i)
{
    struct builder *b = &cc->b;
    if (cc->nparts[i] == 0)
        return (uint16_t)fail(b, "layer %d (%s): output is never used", i,
                              eeb_layer_kind_name(b->net->layers[i].kind));
    if (cc->nparts[i] == 1)
        return cc->parts[i][0];
    uint16_t sum = tensor(b, stored_shape(b->net, i), FX_I8, 1, 0, EEB_FX_ROLE_ERR);
    cmd(b, FX_OP_ADD, i, cc->parts[i][0], sum, cc->parts[i][1], 0);
    for (int j = 2; j < cc->nparts[i]; j++)
        cmd(b, FX_OP_ADD, i, sum, sum, cc->parts[i][j], 0);
    return sum;
}

static void backward(struct compiling *cc, uint16_t input)
{
    struct builder *b = &cc->b;
    const struct eeb_net *net = b->net;
    for (int i = net->nlayers - 1; i >= 0 && !b->failed; i--) {
        const struct eeb_layer *l = &net->layers[i];
        int in = l->in[0], in2 = l->in[1];
        uint16_t x = act_of(cc, input, in);
        int want = in >= 0 && cc->need_err[in];
        int want2 = in2 >= 0 && cc->need_err[in2];
        if (l->kind == EEB_LAYER_SOFTMAX_CE || l->kind == EEB_LAYER_GRID_LOSS) {
            uint16_t dx = error_dest(cc, in, 0);
            cmd(b, l->kind == EEB_LAYER_SOFTMAX_CE ? FX_OP_SOFTMAX_CE : FX_OP_GRID_LOSS, i, x, dx,
                cc->labels, 0);
            continue;
        }
        if (!cc->need_err[i])
            continue;
        uint16_t dy = gather_error(cc, i);
        const struct eeb_fx_params *p = &cc->params[i];
        switch (l->kind) {
        case EEB_LAYER_CONV:
        case EEB_LAYER_FC: {
            int conv = l->kind == EEB_LAYER_CONV;
            if (cc->trained[i])
                window(cmd(b, conv ? FX_OP_CONV_BWD_WEIGHT : FX_OP_FC_BWD_WEIGHT, i, dy, x, p->dw,
                           p->db),
                       net, l);
            if (want)
                window(cmd(b, conv ? FX_OP_CONV_BWD_DATA : FX_OP_FC_BWD_DATA, i, dy,
                           error_dest(cc, in, 0), p->w8, 0),
                       net, l);
            break;
        }
        case EEB_LAYER_RELU:
            cmd(b, FX_OP_RELU_BWD, i, dy, error_dest(cc, in, 0), cc->act[i], 0);
            break;
        case EEB_LAYER_MAXPOOL:
            window(cmd(b, FX_OP_MAXPOOL_BWD, i, dy, error_dest(cc, in, 0), x, 0), net, l);
            break;
        case EEB_LAYER_AVGPOOL:
        case EEB_LAYER_GAP:
            window(cmd(b, FX_OP_AVGPOOL_BWD, i, dy, error_dest(cc, in, 0), 0, 0), net, l);
            break;
        case EEB_LAYER_ADD:
            if (want)
                error_dest(cc, in, dy);
            if (want2)
                error_dest(cc, in2, dy);
            break;
        case EEB_LAYER_FLATTEN: error_dest(cc, in, dy); break;
        case EEB_LAYER_CONCAT: {
            cmd(b, FX_OP_CONCAT_BWD, i, dy, error_dest(cc, in, 0), error_dest(cc, in2, 0), 0);
            break;
        }
        case EEB_LAYER_SLICE: {
            struct fx_cmd *c = cmd(b, FX_OP_SLICE_BWD, i, dy, error_dest(cc, in, 0), 0, 0);
            if (c)
                c->first = (uint32_t)l->first;
            break;
        }
        default: break;
        }
    }
}

static void update(struct compiling *cc)
{
    struct builder *b = &cc->b;
    for (int i = 0; i < b->net->nlayers; i++) {
        if (!cc->trained[i])
            continue;
        const struct eeb_fx_params *p = &cc->params[i];
        cmd(b, FX_OP_SGD, i, p->w24, p->v, p->dw, 0);
        struct fx_cmd *c = cmd(b, FX_OP_SGD, i, p->b24, p->vb, p->db, 0);
        if (c)
            c->flags = FX_C_NO_DECAY;
        cmd(b, FX_OP_QUANT_W, i, p->w24, p->w8, 0, 0);
    }
}

static uint64_t align_up(uint64_t v)
{
    return (v + FX_ALIGN - 1) / FX_ALIGN * FX_ALIGN;
}

/* Places header, descriptors, commands and tensors; fills img->mem. */
static int layout(struct builder *b, const int first[FX_PROGS], const int n[FX_PROGS],
                  struct eeb_fx_image *img)
{
    uint64_t off = align_up(sizeof(struct fx_header));
    uint64_t toff = off;
    off = align_up(off + (uint64_t)b->nt * sizeof(struct fx_tensor));
    uint64_t coff = off;
    off = align_up(off + (uint64_t)b->nc * sizeof(struct fx_cmd));
    for (int i = 0; i < b->nt; i++) {
        b->t[i].offset = (uint32_t)off;
        off = align_up(off + count(b, (uint16_t)i) * b->t[i].type);
        if (off > UINT32_MAX)
            return fail(b, "the device image would exceed 4 GiB: use a smaller batch");
    }
    img->mem = aligned_alloc(FX_ALIGN, off);
    if (!img->mem)
        return fail(b, "out of memory for a %llu-byte device image", (unsigned long long)off);
    memset(img->mem, 0, off);
    img->bytes = off;
    struct fx_header *h = (struct fx_header *)img->mem;
    h->magic = FX_MAGIC;
    h->version = FX_VERSION;
    h->bytes = (uint32_t)off;
    h->ntensors = (uint32_t)b->nt, h->tensors_off = (uint32_t)toff;
    h->ncmds = (uint32_t)b->nc, h->cmds_off = (uint32_t)coff;
    h->batch_max = h->batch = (uint32_t)b->batch_max;
    for (int p = 0; p < FX_PROGS; p++)
        h->prog_first[p] = (uint32_t)first[p], h->prog_count[p] = (uint32_t)n[p];
    memcpy(img->mem + toff, b->t, (size_t)b->nt * sizeof *b->t);
    memcpy(img->mem + coff, b->c, (size_t)b->nc * sizeof *b->c);
    return 1;
}

int eeb_fx_compile(const struct eeb_net *net, int batch_max, int frozen, struct eeb_fx_image *img,
                   char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    struct compiling cc;
    memset(&cc, 0, sizeof cc);
    struct builder *b = &cc.b;
    b->net = net, b->batch_max = batch_max, b->frozen = frozen;
    b->err = err, b->errlen = errlen;
    const struct eeb_layer *loss = eeb_net_loss(net);
    int L = net->nlayers, learnable = 0;
    for (int i = 0; i < L; i++)
        learnable += eeb_layer_learnable(&net->layers[i]);
    if (!loss)
        return fail(b, "the network does not end in a loss layer"), -1;
    if (batch_max < 1 || batch_max > 65535)
        return fail(b, "batch %d (1..65535)", batch_max), -1;
    if (frozen < 0 || frozen > learnable)
        return fail(b, "%d frozen layers, but the network has %d learnable ones", frozen,
                    learnable),
               -1;
    if (net->format != EEB_FORMAT_FX24)
        return fail(b, "the network's weights are not in fixed point (convert them first)"), -1;

    cc.act = calloc((size_t)L, sizeof *cc.act);
    cc.params = calloc((size_t)L, sizeof *cc.params);
    cc.trained = calloc((size_t)L, sizeof *cc.trained);
    cc.need_err = calloc((size_t)L, sizeof *cc.need_err);
    cc.nparts = calloc((size_t)L, sizeof *cc.nparts);
    cc.parts = calloc((size_t)L, sizeof *cc.parts);
    if (!cc.act || !cc.params || !cc.trained || !cc.need_err || !cc.nparts || !cc.parts) {
        fail(b, "out of memory");
        goto out;
    }
    int *readers = cc.nparts; /* counted here, reset before backward */
    for (int i = 0; i < L; i++)
        for (int j = 0; j < 2; j++)
            if (net->layers[i].in[j] >= 0)
                readers[net->layers[i].in[j]]++;
    for (int i = 0; i < L && !b->failed; i++) {
        cc.parts[i] = calloc((size_t)readers[i] + 1, sizeof **cc.parts);
        if (!cc.parts[i])
            fail(b, "out of memory");
    }
    memset(cc.nparts, 0, (size_t)L * sizeof *cc.nparts);

    tensor(b, flat(1), FX_I32, 0, 0, EEB_FX_ROLE_OTHER); /* id 0: the unused operand */
    b->acc = tensor(b, flat(1), FX_I32, 0, 0, EEB_FX_ROLE_OTHER);
    uint16_t input = tensor(b, net->input, FX_I8, 1, -7, EEB_FX_ROLE_OTHER);
    struct eeb_shape ls = {1, 1, 1};
    if (loss->kind == EEB_LAYER_GRID_LOSS)
        ls = loss->out, ls.c = FX_GT_N;
    cc.labels = tensor(b, ls, FX_I32, 1, 0, EEB_FX_ROLE_OTHER);

    int first[FX_PROGS], n[FX_PROGS];
    /* forward, backward and update, then init (it needs the parameters) */
    forward(&cc, input);
    int nfwd = b->nc;
    backward(&cc, input);
    update(&cc);
    int ntrain = b->nc;
    for (int i = 0; i < L; i++)
        if (eeb_layer_learnable(&net->layers[i]))
            cmd(b, FX_OP_QUANT_W, i, cc.params[i].w24, cc.params[i].w8, 0, 0);
    if (b->failed)
        goto out;
    /* the init commands went last; rotate them to the front */
    int ninit = b->nc - ntrain;
    struct fx_cmd *rot = malloc((size_t)b->nc * sizeof *rot);
    if (!rot) {
        fail(b, "out of memory");
        goto out;
    }
    memcpy(rot, b->c + ntrain, (size_t)ninit * sizeof *rot);
    memcpy(rot + ninit, b->c, (size_t)ntrain * sizeof *rot);
    free(b->c);
    b->c = rot;
    first[FX_PROG_INIT] = 0, n[FX_PROG_INIT] = ninit;
    first[FX_PROG_PREDICT] = ninit, n[FX_PROG_PREDICT] = nfwd;
    first[FX_PROG_TRAIN] = ninit, n[FX_PROG_TRAIN] = ntrain;

    b->t[b->acc].c = (uint32_t)(b->acc_need ? b->acc_need : 1);
    if (b->acc_need > UINT32_MAX)
        fail(b, "scratch of %llu elements is too large", (unsigned long long)b->acc_need);
    if (b->failed || !layout(b, first, n, img))
        goto out;

    img->batch_max = batch_max, img->frozen = frozen, img->nlayers = L;
    img->input = input, img->labels = cc.labels;
    img->output = act_of(&cc, input, loss->in[0]);
    img->label_ints = ls.h * ls.w * ls.c;
    img->act = cc.act, cc.act = NULL;
    img->params = cc.params, cc.params = NULL;
    img->role = b->role, b->role = NULL;
out:
    for (int i = 0; cc.parts && i < L; i++)
        free(cc.parts[i]);
    free(cc.parts), free(cc.nparts), free(cc.need_err), free(cc.trained);
    free(cc.params), free(cc.act);
    free(b->t), free(b->c), free(b->role);
    if (b->failed) {
        eeb_fx_image_free(img);
        return -1;
    }
    return 0;
}

void eeb_fx_image_free(struct eeb_fx_image *img)
{
    free(img->mem), free(img->act), free(img->params), free(img->role);
    memset(img, 0, sizeof *img);
}

static struct fx_tensor *desc(struct eeb_fx_image *img, uint16_t id)
{
    const struct fx_header *h = eeb_fx_header(img);
    return (struct fx_tensor *)(img->mem + h->tensors_off) + id;
}

static void *data(struct eeb_fx_image *img, uint16_t id)
{
    return img->mem + desc(img, id)->offset;
}

void eeb_fx_load_weights(struct eeb_fx_image *img, const struct eeb_net *net)
{
    for (int i = 0; i < img->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        const struct eeb_fx_params *p = &img->params[i];
        if (!eeb_layer_learnable(l))
            continue;
        size_t n = (size_t)l->rows * l->out.c, m = (size_t)l->out.c;
        memcpy(data(img, p->w24), l->wq, n * sizeof *l->wq);
        memcpy(data(img, p->b24), l->bq, m * sizeof *l->bq);
        desc(img, p->w24)->exp = (int8_t)l->we;
        desc(img, p->b24)->exp = (int8_t)l->be;
        if (p->v) {
            memset(data(img, p->v), 0, n * sizeof(int32_t));
            memset(data(img, p->vb), 0, m * sizeof(int32_t));
        }
    }
}

void eeb_fx_read_weights(struct eeb_fx_image *img, struct eeb_net *net)
{
    for (int i = 0; i < img->nlayers; i++) {
        struct eeb_layer *l = &net->layers[i];
        const struct eeb_fx_params *p = &img->params[i];
        if (!eeb_layer_learnable(l))
            continue;
        size_t n = (size_t)l->rows * l->out.c, m = (size_t)l->out.c;
        memcpy(l->wq, data(img, p->w24), n * sizeof *l->wq);
        memcpy(l->bq, data(img, p->b24), m * sizeof *l->bq);
        l->we = desc(img, p->w24)->exp;
        l->be = desc(img, p->b24)->exp;
    }
    net->format = EEB_FORMAT_FX24;
}

void eeb_fx_set_batch(struct eeb_fx_image *img, int n, const uint8_t *pixels, const int32_t *labels)
{
    struct fx_tensor *in = desc(img, img->input);
    size_t item = (size_t)in->h * in->w * in->c;
    int8_t *x = data(img, img->input);
    for (size_t i = 0; i < (size_t)n * item; i++)
        x[i] = (int8_t)(pixels[i] - 128 + (pixels[i] == 0)); /* 0 -> -127: symmetric int8 */
    in->exp = -7;
    if (labels)
        memcpy(data(img, img->labels), labels, (size_t)n * img->label_ints * sizeof *labels);
    eeb_fx_header(img)->batch = (uint32_t)n;
}

/* m * 2^e nearest to v with m < 2^15 (0 for v = 0). */
static void mantissa_of(double v, int32_t *m, int32_t *e)
{
    int ex;
    double f = frexp(v, &ex); /* v = f * 2^ex, |f| in [0.5, 1) */
    *m = (int32_t)nearbyint(f * 16384);
    *e = v == 0 ? 0 : ex - 14;
}

void eeb_fx_set_hyper(struct eeb_fx_image *img, double lr, double momentum, double weight_decay,
                      uint64_t seed, uint32_t step)
{
    struct fx_header *h = eeb_fx_header(img);
    mantissa_of(lr, &h->lr_m, &h->lr_e);
    mantissa_of(momentum, &h->mom_m, &h->mom_e);
    mantissa_of(weight_decay, &h->wd_m, &h->wd_e);
    h->seed = seed;
    h->step = step;
}

/* Outputs per item: the loss layer's input. */
static int outputs_per_item(const struct eeb_fx_image *img)
{
    const struct fx_header *h = eeb_fx_header(img);
    const struct fx_tensor *t = (const struct fx_tensor *)(img->mem + h->tensors_off) + img->output;
    return (int)(t->h * t->w * t->c);
}

void eeb_fx_read_output(struct eeb_fx_image *img, int n, float *out)
{
    const struct fx_tensor *t = desc(img, img->output);
    const int8_t *y = data(img, img->output);
    size_t count = (size_t)n * outputs_per_item(img);
    for (size_t i = 0; i < count; i++)
        out[i] = ldexpf((float)y[i], t->exp);
}

void eeb_fx_saturations(struct eeb_fx_image *img, uint64_t out[EEB_FX_ROLES])
{
    memset(out, 0, EEB_FX_ROLES * sizeof *out);
    const struct fx_header *h = eeb_fx_header(img);
    for (uint32_t i = 0; i < h->ntensors; i++)
        out[img->role[i]] += desc(img, (uint16_t)i)->saturations;
}
