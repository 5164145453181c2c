/*
 * eeb_sut_exec.h - the exec protocol's constants: how eeb speaks the
 * calls of sut/eeb_sut.h to a team's program over the program's stdin and
 * stdout (`eeb run --backend exec:PROGRAM ARGS...`; docs/sut.md, "Out of
 * process: the exec protocol", is the reference).  Like eeb_sut.h it needs
 * no other eeb header: eeb's side (sut/exec.c) and a C program's side
 * (sut/eeb_sut_serve.c) both build on it, and the Python client
 * (sut/examples/eeb_sut.py) spells the same numbers.
 *
 * A frame is a header and a payload, every number little-endian:
 *
 *   offset  size  field
 *   0       4     magic, the bytes "EEBS"
 *   4       2     version, EEB_SUT_EXEC_VERSION
 *   6       2     call, enum eeb_sut_exec_call
 *   8       4     id: a request's is one more than the previous request's
 *                 (open's is 1); a reply repeats its request's call and id
 *   12      4     the payload's length in bytes, at most EEB_SUT_EXEC_MAX_PAYLOAD
 *
 * A reply's payload starts with a uint32 status: 0 and the call's results,
 * or non-zero and a string, the reason.  A string is a uint32 length and
 * that many bytes of UTF-8 (no NUL), at most EEB_SUT_EXEC_MAX_TEXT.  A
 * file's bytes are a uint64 length and that many bytes: the model (to
 * load_model, from save_model) and the xclbin (to open) travel so, and the
 * paths beside them name eeb's files for messages alone, so a program on
 * another machine (exec:ssh board ...) needs no view of eeb's files.
 */
#ifndef EEB_SUT_EXEC_H
#define EEB_SUT_EXEC_H

#include <stddef.h>
#include <stdint.h>

#define EEB_SUT_EXEC_MAGIC       "EEBS"
#define EEB_SUT_EXEC_VERSION     1
#define EEB_SUT_EXEC_HEADER      16
#define EEB_SUT_EXEC_MAX_PAYLOAD (256u << 20) /* 256 MiB, either way */
#define EEB_SUT_EXEC_MAX_TEXT    65536u       /* a string: config, path, name, reason */

/* The calls, as sut/eeb_sut.h names them. */
enum eeb_sut_exec_call {
    EEB_SUT_EXEC_OPEN = 1,
    EEB_SUT_EXEC_LOAD_MODEL = 2,
    EEB_SUT_EXEC_TRAIN = 3,
    EEB_SUT_EXEC_END_TRAINING = 4,
    EEB_SUT_EXEC_PREDICT = 5,
    EEB_SUT_EXEC_COUNTERS = 6,
    EEB_SUT_EXEC_SAVE_MODEL = 7,
    EEB_SUT_EXEC_CLOSE = 8
};

/* An error reply's status from a program that serves no SUT at all: a
 * host (`eeb sut serve`, eeb_sut_serve.c) that could not load the library
 * it was started for.  The reason names the file and what is wrong with
 * it; any other non-zero status is the call's own failure. */
#define EEB_SUT_EXEC_UNSERVABLE 2u

/* open's reply after its status: the string name (1..255 bytes), a uint32
 * saying which optional calls the program has (a bit each; eeb leaves the
 * others' slots NULL, as a library would), then, optionally, the string
 * version, the SUT's own (at most EEB_SUT_EXEC_MAX_VERSION bytes; a reply
 * that ends after the uint32 says none, as a table's NULL version does).
 * eeb takes the version from ABI version 2 on (the setup's abi_version): a
 * program sends it to such an eeb only. */
#define EEB_SUT_EXEC_MAX_VERSION      255
#define EEB_SUT_EXEC_HAS_END_TRAINING 1u
#define EEB_SUT_EXEC_HAS_COUNTERS     2u
#define EEB_SUT_EXEC_HAS_SAVE_MODEL   4u

/* Packed records: a ground-truth box (int32 cls, int32 difficult, float32
 * x0 y0 x1 y1), a detection (int32 cls, float32 score, x0 y0 x1 y1), and
 * train's reply after its status (float64 loss, int64 correct, int64
 * counted, uint8 done). */
#define EEB_SUT_EXEC_BOX_BYTES       24
#define EEB_SUT_EXEC_DETECTION_BYTES 24
#define EEB_SUT_EXEC_STEP_BYTES      25

/* open's request: ten int32 (abi_version, task, classes, frames, height,
 * width, channels, batch_max, top_k, max_boxes), the uint64 seed, the
 * strings config, workdir and xclbin, then the xclbin's bytes (length 0
 * when xclbin is "").  load_model's: the string path, the model's bytes;
 * save_model's: the string path, and its reply after the status the
 * model's bytes, which eeb writes to the path. */
#define EEB_SUT_EXEC_SETUP_BYTES 48

/* Little-endian numbers in and out of a byte buffer, on any host. */
static inline void eeb_sut_exec_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
    p[3] = (uint8_t)(v >> 24);
}

static inline void eeb_sut_exec_put64(uint8_t *p, uint64_t v)
{
    eeb_sut_exec_put32(p, (uint32_t)v);
    eeb_sut_exec_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint32_t eeb_sut_exec_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t eeb_sut_exec_get64(const uint8_t *p)
{
    return (uint64_t)eeb_sut_exec_get32(p) | (uint64_t)eeb_sut_exec_get32(p + 4) << 32;
}

/* float32 and float64 travel as their IEEE 754 bits. */
static inline void eeb_sut_exec_put_f32(uint8_t *p, float v)
{
    union {
        float f;
        uint32_t u;
    } bits = {.f = v};
    eeb_sut_exec_put32(p, bits.u);
}

static inline float eeb_sut_exec_get_f32(const uint8_t *p)
{
    union {
        uint32_t u;
        float f;
    } bits = {.u = eeb_sut_exec_get32(p)};
    return bits.f;
}

static inline void eeb_sut_exec_put_f64(uint8_t *p, double v)
{
    union {
        double f;
        uint64_t u;
    } bits = {.f = v};
    eeb_sut_exec_put64(p, bits.u);
}

static inline double eeb_sut_exec_get_f64(const uint8_t *p)
{
    union {
        uint64_t u;
        double f;
    } bits = {.u = eeb_sut_exec_get64(p)};
    return bits.f;
}

/* A frame's header into h (EEB_SUT_EXEC_HEADER bytes). */
static inline void eeb_sut_exec_header(uint8_t *h, enum eeb_sut_exec_call call, uint32_t id,
                                       uint32_t length)
{
    h[0] = 'E', h[1] = 'E', h[2] = 'B', h[3] = 'S';
    h[4] = EEB_SUT_EXEC_VERSION & 0xff, h[5] = EEB_SUT_EXEC_VERSION >> 8;
    h[6] = (uint8_t)call, h[7] = (uint8_t)((unsigned)call >> 8);
    eeb_sut_exec_put32(h + 8, id);
    eeb_sut_exec_put32(h + 12, length);
}

/* The call's name as sut/eeb_sut.h spells it, "?" for none. */
static inline const char *eeb_sut_exec_call_name(unsigned call)
{
    static const char *const names[] = {"?",        "open",         "load_model",
                                        "train",    "end_training", "predict",
                                        "counters", "save_model",   "close"};
    return call < sizeof names / sizeof *names ? names[call] : "?";
}

#endif
