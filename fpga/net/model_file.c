/*
 * model_file.c - writing and checking .eebm model files.
 *
 * The reader trusts nothing: the size and checksum first, then every layer
 * is rebuilt through the network builders (which check shapes) and must
 * agree with what the file says it is, then every weight is range-checked.
 * Allocation never exceeds what the file's own size pays for.
 */
#include "fpga/net/eeb_model.h"

#include "common/eeb_bytes.h"
#include "common/eeb_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header fields, by offset. */
enum {
    H_MAGIC = 0,
    H_VERSION = 4,
    H_HEADER = 6,
    H_LAYER = 8,
    H_FORMAT = 10,
    H_TASK = 11,
    H_NLAYERS = 12,
    H_IN_H = 16,
    H_IN_W = 18,
    H_IN_C = 20,
    H_SIZE = 24,
    H_CRC = 32, /* CRC-32 of the whole file, this field read as zero */
};

/* Layer record fields, by offset within the record. */
enum {
    L_KIND = 0,
    L_K = 1,
    L_STRIDE = 2,
    L_PAD = 3,
    L_IN0 = 4,
    L_IN1 = 6,
    L_OUT_H = 8,
    L_OUT_W = 10,
    L_OUT_C = 12,
    L_ROWS = 16,
    L_WE = 20,
    L_BE = 21,
    L_FIRST = 22, /* slice */
    L_WEIGHTS = 24,
};

#define NO_TASK_BYTE 255
#define FX24_MAX     8388607 /* 2^23 - 1 */

static size_t weight_bytes(const struct eeb_layer *l)
{
    return eeb_layer_learnable(l) ? ((size_t)l->rows + 1) * (size_t)l->out.c * 4 : 0;
}

/* Float weights must be finite: NaN means the training diverged. */
static int check_finite(const struct eeb_net *net, char *err, size_t errlen)
{
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        size_t nw = (size_t)l->rows * l->out.c;
        for (size_t j = 0; eeb_layer_learnable(l) && j < nw + (size_t)l->out.c; j++)
            if (!isfinite(j < nw ? l->w[j] : l->b[j - nw]))
                return eeb_errf(err, errlen, EEB_EINVAL,
                                "model: layer %d %s %zu is not a finite number (did the "
                                "training diverge?)",
                                i, j < nw ? "weight" : "bias", j < nw ? j : j - nw);
    }
    return EEB_OK;
}

int eeb_model_encode(const struct eeb_net *net, int task, uint8_t **out, size_t *len, char *err,
                     size_t errlen)
{
    if (task != EEB_MODEL_NO_TASK && (task < 0 || task >= EEB_TASK_COUNT))
        return eeb_errf(err, errlen, EEB_EINVAL, "model: task %d unknown", task);
    if (net->nlayers > EEB_MODEL_MAX_LAYERS)
        return eeb_errf(err, errlen, EEB_EINVAL, "model: %d layers (at most %d)", net->nlayers,
                        EEB_MODEL_MAX_LAYERS);
    size_t size = EEB_MODEL_HEADER + (size_t)net->nlayers * EEB_MODEL_LAYER;
    for (int i = 0; i < net->nlayers; i++)
        size += weight_bytes(&net->layers[i]);
    if (size > EEB_MODEL_MAX_BYTES)
        return eeb_errf(err, errlen, EEB_EINVAL, "model: %zu bytes (at most %zu)", size,
                        EEB_MODEL_MAX_BYTES);
    if (net->format == EEB_FORMAT_F32 && check_finite(net, err, errlen) != EEB_OK)
        return EEB_EINVAL;
    uint8_t *buf = calloc(1, size);
    if (!buf)
        return eeb_errf(err, errlen, EEB_ENOMEM, "model: out of memory for %zu bytes", size);

    memcpy(buf + H_MAGIC, "EEBM", 4);
    eeb_put16(buf + H_VERSION, EEB_MODEL_VERSION);
    eeb_put16(buf + H_HEADER, EEB_MODEL_HEADER);
    eeb_put16(buf + H_LAYER, EEB_MODEL_LAYER);
    buf[H_FORMAT] = (uint8_t)net->format;
    buf[H_TASK] = task == EEB_MODEL_NO_TASK ? NO_TASK_BYTE : (uint8_t)task;
    eeb_put32(buf + H_NLAYERS, (uint32_t)net->nlayers);
    eeb_put16(buf + H_IN_H, (uint16_t)net->input.h);
    eeb_put16(buf + H_IN_W, (uint16_t)net->input.w);
    eeb_put32(buf + H_IN_C, (uint32_t)net->input.c);
    eeb_put64(buf + H_SIZE, size);

    int fixed = net->format == EEB_FORMAT_FX24;
    size_t at = EEB_MODEL_HEADER + (size_t)net->nlayers * EEB_MODEL_LAYER;
    for (int i = 0; i < net->nlayers; i++) {
        const struct eeb_layer *l = &net->layers[i];
        uint8_t *r = buf + EEB_MODEL_HEADER + (size_t)i * EEB_MODEL_LAYER;
        r[L_KIND] = (uint8_t)l->kind;
        r[L_K] = (uint8_t)l->k, r[L_STRIDE] = (uint8_t)l->stride, r[L_PAD] = (uint8_t)l->pad;
        eeb_put16(r + L_IN0, (uint16_t)(int16_t)l->in[0]);
        eeb_put16(r + L_IN1, (uint16_t)(int16_t)l->in[1]);
        eeb_put16(r + L_OUT_H, (uint16_t)l->out.h);
        eeb_put16(r + L_OUT_W, (uint16_t)l->out.w);
        eeb_put32(r + L_OUT_C, (uint32_t)l->out.c);
        eeb_put32(r + L_ROWS, (uint32_t)l->rows);
        eeb_put16(r + L_FIRST, (uint16_t)l->first);
        if (!eeb_layer_learnable(l))
            continue;
        r[L_WE] = (uint8_t)(int8_t)(fixed ? l->we : 0);
        r[L_BE] = (uint8_t)(int8_t)(fixed ? l->be : 0);
        eeb_put64(r + L_WEIGHTS, at);
        size_t nw = (size_t)l->rows * l->out.c;
        for (size_t j = 0; j < nw; j++, at += 4)
            fixed ? eeb_put32(buf + at, (uint32_t)l->wq[j]) : eeb_putf32(buf + at, l->w[j]);
        for (int j = 0; j < l->out.c; j++, at += 4)
            fixed ? eeb_put32(buf + at, (uint32_t)l->bq[j]) : eeb_putf32(buf + at, l->b[j]);
    }
    eeb_put32(buf + H_CRC, eeb_crc32_except(buf, size, H_CRC));
    *out = buf;
    *len = size;
    return EEB_OK;
}

int eeb_model_save(const char *path, const struct eeb_net *net, int task, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    char why[256];
    int rc = eeb_model_encode(net, task, &buf, &len, why, sizeof why);
    if (rc != EEB_OK) /* name the file that was not written */
        return eeb_errf(err, errlen, rc, "%s: %s", path, why);
    rc = eeb_atomic_write(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

/* A decoding session: the buffer, its name, and where errors go. */
struct reader {
    const uint8_t *buf;
    size_t len;
    const char *name;
    char *err;
    size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int bad(const struct reader *rd, size_t offset,
                                                     const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return eeb_errf(rd->err, rd->errlen, EEB_EFORMAT, "%s: offset %zu: %s", rd->name, offset, msg);
}

static int check_header(const struct reader *rd, int *nlayers)
{
    const uint8_t *b = rd->buf;
    if (rd->len < 4 || memcmp(b, "EEBM", 4) != 0)
        return bad(rd, H_MAGIC, "magic: not an eeb model file (.eebm files start with \"EEBM\")");
    if (rd->len < EEB_MODEL_HEADER)
        return bad(rd, rd->len, "truncated: the header needs %d bytes, the file has %zu",
                   EEB_MODEL_HEADER, rd->len);
    unsigned version = eeb_get16(b + H_VERSION);
    if (version != EEB_MODEL_VERSION)
        return eeb_errf(rd->err, rd->errlen, EEB_EVERSION,
                        "%s: offset %d: version %u (this eeb reads version %d)", rd->name,
                        H_VERSION, version, EEB_MODEL_VERSION);
    if (eeb_get16(b + H_HEADER) != EEB_MODEL_HEADER)
        return bad(rd, H_HEADER, "header size %u (version 1 has %d)", eeb_get16(b + H_HEADER),
                   EEB_MODEL_HEADER);
    if (eeb_get16(b + H_LAYER) != EEB_MODEL_LAYER)
        return bad(rd, H_LAYER, "layer record size %u (version 1 has %d)", eeb_get16(b + H_LAYER),
                   EEB_MODEL_LAYER);
    uint64_t size = eeb_get64(b + H_SIZE);
    if (size != rd->len)
        return bad(
            rd, size < rd->len ? size : rd->len, "%s: the header says %llu bytes, the file has %zu",
            size > rd->len ? "truncated" : "trailing bytes", (unsigned long long)size, rd->len);
    uint32_t crc = eeb_get32(b + H_CRC), actual = eeb_crc32_except(b, rd->len, H_CRC);
    if (crc != actual && !EEB_FUZZING)
        return bad(rd, H_CRC, "checksum %08x, the contents give %08x: the file is corrupt", crc,
                   actual);
    if (b[H_FORMAT] != EEB_FORMAT_F32 && b[H_FORMAT] != EEB_FORMAT_FX24)
        return bad(rd, H_FORMAT, "format %u (1 float32, 2 fixed 24-bit)", b[H_FORMAT]);
    if (b[H_TASK] >= EEB_TASK_COUNT && b[H_TASK] != NO_TASK_BYTE)
        return bad(rd, H_TASK, "task %u unknown", b[H_TASK]);
    uint32_t n = eeb_get32(b + H_NLAYERS);
    if (n < 1 || n > EEB_MODEL_MAX_LAYERS || n > (rd->len - EEB_MODEL_HEADER) / EEB_MODEL_LAYER)
        return bad(rd, H_NLAYERS, "layer count %u (1..%d, and the records must fit the file)", n,
                   EEB_MODEL_MAX_LAYERS);
    unsigned h = eeb_get16(b + H_IN_H), w = eeb_get16(b + H_IN_W);
    uint32_t c = eeb_get32(b + H_IN_C);
    if (h < 1 || h > EEB_NET_MAX_DIM || w < 1 || w > EEB_NET_MAX_DIM || c < 1 || c > EEB_NET_MAX_CH)
        return bad(rd, H_IN_H, "input shape %ux%ux%u out of range (sides 1..%d, channels 1..%d)", h,
                   w, c, EEB_NET_MAX_DIM, EEB_NET_MAX_CH);
    *nlayers = (int)n;
    return EEB_OK;
}

/* The stored layer record at r, as a builder spec. */
static struct eeb_layer read_spec(const uint8_t *r)
{
    struct eeb_layer s = {0};
    s.kind = (enum eeb_layer_kind)r[L_KIND];
    s.k = r[L_K], s.stride = r[L_STRIDE], s.pad = r[L_PAD];
    s.in[0] = (int16_t)eeb_get16(r + L_IN0);
    s.in[1] = (int16_t)eeb_get16(r + L_IN1);
    s.out.h = eeb_get16(r + L_OUT_H), s.out.w = eeb_get16(r + L_OUT_W);
    uint32_t c = eeb_get32(r + L_OUT_C), rows = eeb_get32(r + L_ROWS);
    s.out.c = c > EEB_NET_MAX_CH ? EEB_NET_MAX_CH + 1 : (int)c;
    s.rows = rows > INT32_MAX ? -1 : (int)rows;
    s.we = (int8_t)r[L_WE], s.be = (int8_t)r[L_BE];
    s.first = eeb_get16(r + L_FIRST);
    return s;
}

/* The rows a learnable layer of this spec would have in net, or -1. */
static long expected_rows(const struct eeb_net *net, const struct eeb_layer *s)
{
    if (s->in[0] < EEB_NET_INPUT || s->in[0] >= net->nlayers)
        return -1;
    struct eeb_shape in = eeb_net_shape(net, s->in[0]);
    return s->kind == EEB_LAYER_CONV ? (long)s->k * s->k * in.c : (long)in.h * in.w * in.c;
}

/* Rebuilds layer i from its record and checks the record agrees. */
static int read_layer(const struct reader *rd, struct eeb_net *net, int i, size_t *data_at)
{
    size_t off = EEB_MODEL_HEADER + (size_t)i * EEB_MODEL_LAYER;
    const uint8_t *r = rd->buf + off;
    struct eeb_layer s = read_spec(r);
    if (r[L_KIND] >= EEB_LAYER_KINDS)
        return bad(rd, off + L_KIND, "layer %d kind: %u unknown", i, r[L_KIND]);
    const char *kind = eeb_layer_kind_name(s.kind);
    int learnable = eeb_layer_learnable(&s);
    size_t remaining = rd->len - *data_at;
    if (learnable) {
        long rows = expected_rows(net, &s);
        if (rows >= 0 && s.rows != rows)
            return bad(rd, off + L_ROWS, "layer %d (%s) rows: %d, its input gives %ld", i, kind,
                       s.rows, rows);
        if (rows >= 0 && ((size_t)rows + 1) * (size_t)s.out.c > remaining / 4)
            return bad(rd, off + L_OUT_C,
                       "layer %d (%s) out.c: %d channels need more weights than the %zu bytes left",
                       i, kind, s.out.c, remaining);
    }
    if (s.kind != EEB_LAYER_SLICE && s.first != 0)
        return bad(rd, off + L_FIRST, "layer %d (%s) first channel: %d (only slices have one)", i,
                   kind, s.first);
    int pool = s.kind == EEB_LAYER_MAXPOOL || s.kind == EEB_LAYER_AVGPOOL;
    if (s.pad != 0 && s.kind != EEB_LAYER_CONV && !pool)
        return bad(rd, off + L_PAD, "layer %d (%s) pad: %d (only convs and pools have one)", i,
                   kind, s.pad);
    if (pool && s.pad >= s.k && s.k >= 1) /* the builder names a bad window itself */
        return bad(rd, off + L_PAD, "layer %d (%s) pad: %d with a %dx%d window (at most %d)", i,
                   kind, s.pad, s.k, s.k, s.k - 1);
    if (eeb_net_append(net, &s) < 0)
        return bad(rd, off, "%s", net->err);
    const struct eeb_layer *l = &net->layers[i];
    if (l->in[1] != s.in[1])
        return bad(rd, off + L_IN1, "layer %d (%s) second input: %d, expected %d", i, kind, s.in[1],
                   l->in[1]);
    if (l->out.h != s.out.h || l->out.w != s.out.w || l->out.c != s.out.c)
        return bad(rd, off + L_OUT_H, "layer %d (%s) output: %dx%dx%d stored, %dx%dx%d computed", i,
                   kind, s.out.h, s.out.w, s.out.c, l->out.h, l->out.w, l->out.c);
    if (!learnable) {
        if (eeb_get64(r + L_WEIGHTS) != 0 || s.rows != 0)
            return bad(rd, off + L_ROWS, "layer %d (%s) has no weights, the record gives some", i,
                       kind);
        return EEB_OK;
    }
    if (eeb_get64(r + L_WEIGHTS) != *data_at)
        return bad(rd, off + L_WEIGHTS, "layer %d (%s) weights at offset %llu, expected %zu", i,
                   kind, (unsigned long long)eeb_get64(r + L_WEIGHTS), *data_at);

    struct eeb_layer *m = &net->layers[i];
    size_t nw = (size_t)m->rows * m->out.c, at = *data_at;
    if (net->format == EEB_FORMAT_FX24) {
        if (s.we < -100 || s.we > 100 || s.be < -100 || s.be > 100)
            return bad(rd, off + L_WE, "layer %d (%s) exponents %d, %d (-100..100)", i, kind, s.we,
                       s.be);
        m->we = s.we, m->be = s.be;
    }
    for (size_t j = 0; j < nw + (size_t)m->out.c; j++, at += 4) {
        int bias = j >= nw;
        size_t idx = bias ? j - nw : j;
        if (net->format == EEB_FORMAT_FX24) {
            int32_t v = (int32_t)eeb_get32(rd->buf + at);
            if (v < -FX24_MAX || v > FX24_MAX)
                return bad(rd, at, "layer %d (%s) %s %zu: %d outside the 24-bit range", i, kind,
                           bias ? "bias" : "weight", idx, v);
            (bias ? m->bq : m->wq)[idx] = v;
        } else {
            float v = eeb_getf32(rd->buf + at);
            if (!isfinite(v))
                return bad(rd, at, "layer %d (%s) %s %zu: not a finite number", i, kind,
                           bias ? "bias" : "weight", idx);
            (bias ? m->b : m->w)[idx] = v;
        }
    }
    *data_at = at;
    return EEB_OK;
}

int eeb_model_decode(const uint8_t *buf, size_t len, const char *name, struct eeb_net **out,
                     int *task, char *err, size_t errlen)
{
    struct reader rd = {buf, len, name, err, errlen};
    int nlayers = 0, rc = check_header(&rd, &nlayers);
    if (rc != EEB_OK)
        return rc;
    struct eeb_shape in = {eeb_get16(buf + H_IN_H), eeb_get16(buf + H_IN_W),
                           (int)eeb_get32(buf + H_IN_C)};
    struct eeb_net *net = eeb_net_new(in);
    if (!net)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", name);
    net->format = (enum eeb_format)buf[H_FORMAT];
    size_t data_at = EEB_MODEL_HEADER + (size_t)nlayers * EEB_MODEL_LAYER;
    for (int i = 0; i < nlayers && rc == EEB_OK; i++)
        rc = read_layer(&rd, net, i, &data_at);
    if (rc == EEB_OK && !eeb_net_loss(net))
        rc = bad(&rd, EEB_MODEL_HEADER + (size_t)(nlayers - 1) * EEB_MODEL_LAYER,
                 "layer %d: the last layer must be a loss (softmax_ce or grid_loss)", nlayers - 1);
    if (rc == EEB_OK && data_at != len)
        rc = bad(&rd, data_at, "%zu bytes after the last layer's weights", len - data_at);
    if (rc != EEB_OK) {
        eeb_net_free(net);
        return rc;
    }
    *out = net;
    *task = buf[H_TASK] == NO_TASK_BYTE ? EEB_MODEL_NO_TASK : buf[H_TASK];
    return EEB_OK;
}

int eeb_model_load(const char *path, struct eeb_net **net, int *task, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    int rc = eeb_read_file(path, EEB_MODEL_MAX_BYTES, &buf, &len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    rc = eeb_model_decode((const uint8_t *)buf, len, path, net, task, err, errlen);
    free(buf);
    return rc;
}
