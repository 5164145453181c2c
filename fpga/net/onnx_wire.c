/*
 * onnx_wire.c - a walk over an ONNX file's protobuf wire format before
 * protobuf-c unpacks it.  protobuf-c unpacks nested messages by recursion
 * with no limit, and ONNX's schema nests (an attribute holds a graph,
 * whose nodes hold attributes; a type holds a type): a few bytes per level
 * would overflow the stack.  This walk keeps its own stack of at most
 * ONNX_MAX_DEPTH messages, reading the schema's descriptors to know which
 * length-delimited fields are messages.
 */
#include "fpga/net/onnx_int.h"

#include "common/eeb_common.h"
#include "onnx/onnx.pb-c.h"

#include <stdio.h>

/* A varint at *pos, before end; 0 if it runs out or past 10 bytes. */
static int varint(const uint8_t *buf, size_t end, size_t *pos, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && *pos < end; shift += 7) {
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

int onnx_wire_check(const uint8_t *buf, size_t len, char *why, size_t whylen)
{
    struct frame {
        const ProtobufCMessageDescriptor *d;
        size_t end;
    } stack[ONNX_MAX_DEPTH + 1] = {{&onnx__model_proto__descriptor, len}};
    int depth = 0;
    size_t pos = 0;
    for (;;) {
        while (depth > 0 && pos == stack[depth].end)
            depth--;
        if (depth == 0 && pos == len)
            return EEB_OK;
        size_t end = stack[depth].end, at = pos;
        uint64_t key, n = 0;
        if (!varint(buf, end, &pos, &key))
            return eeb_errf(why, whylen, EEB_EFORMAT, "byte %zu: a field's key runs out", at);
        unsigned wire = (unsigned)(key & 7);
        switch (wire) {
        case 0: /* varint */
            if (!varint(buf, end, &pos, &n))
                return eeb_errf(why, whylen, EEB_EFORMAT, "byte %zu: a number runs out", at);
            break;
        case 1: /* 64-bit */
        case 5: /* 32-bit */
            n = wire == 1 ? 8 : 4;
            if (end - pos < n)
                return eeb_errf(why, whylen, EEB_EFORMAT, "byte %zu: a number runs out", at);
            pos += n;
            break;
        case 2: { /* length-delimited: bytes, a string, packed numbers or a message */
            if (!varint(buf, end, &pos, &n) || n > end - pos)
                return eeb_errf(why, whylen, EEB_EFORMAT,
                                "byte %zu: a field of %llu bytes runs past its message", at,
                                (unsigned long long)n);
            const ProtobufCFieldDescriptor *f =
                key >> 3 <= 0xffffffffu
                    ? protobuf_c_message_descriptor_get_field(stack[depth].d, (unsigned)(key >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                if (depth == ONNX_MAX_DEPTH)
                    return eeb_errf(why, whylen, EEB_EFORMAT,
                                    "byte %zu: messages nested more than %d deep (eeb reads no "
                                    "subgraph)",
                                    at, ONNX_MAX_DEPTH);
                stack[++depth] = (struct frame){f->descriptor, pos + (size_t)n};
            } else
                pos += (size_t)n;
            break;
        }
        default:
            return eeb_errf(why, whylen, EEB_EFORMAT, "byte %zu: wire type %u is not protobuf's",
                            at, wire);
        }
    }
}
