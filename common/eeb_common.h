/*
 * eeb_common.h - what every eeb module shares: status codes, the error-buffer
 * convention, the two clocks, and run identifiers.
 *
 * Convention (DESIGN.md §6): a function that can fail returns 0 or a negative
 * EEB_E* code and writes one line naming the culprit into a caller-owned
 * buffer.  Nothing below main() prints or exits.
 */
#ifndef EEB_COMMON_H
#define EEB_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EEB_VERSION "0.1.0"

/* The build: "git <describe>, <compiler and version>". */
const char *eeb_build(void);

enum eeb_status {
    EEB_OK = 0,
    EEB_EINVAL = -1,   /* bad argument or malformed input */
    EEB_EIO = -2,      /* read/write failed */
    EEB_ENOMEM = -3,   /* allocation failed */
    EEB_EFORMAT = -4,  /* file is not what it claims to be */
    EEB_EVERSION = -5, /* file written by a newer eeb */
    EEB_EDB = -6,      /* SQLite reported an error */
    EEB_EDEVICE = -7,  /* accelerator or meter failed */
    EEB_ETIMEOUT = -8, /* a deadline passed */
    EEB_ENODATA = -9,  /* nothing there: a recorded source's gap, a round the server lacks */
    EEB_ENOTSUP = -10, /* the backend cannot do that: an optional slot it leaves NULL, or
                        * a build without the library it needs (XRT) */
};

/*
 * The three tasks of Tao et al., Table 2: their identity, as shard headers
 * and model files store the number and the run database and the rules file
 * the name.  What a task is and does is its ops table's (tasks/eeb_task_ops.h).
 */
enum eeb_task {
    EEB_TASK_CLS,   /* image classification */
    EEB_TASK_DET,   /* object detection */
    EEB_TASK_VIDEO, /* video classification */
    EEB_TASK_COUNT
};

/* "cls", "det", "video"; "?" for no task. */
const char *eeb_task_name(enum eeb_task task);

/* Parses a task name; returns EEB_EINVAL (with the accepted names) if unknown. */
int eeb_task_parse(const char *name, enum eeb_task *out, char *err, size_t errlen);

/*
 * Formats a message into err (if err and errlen are non-zero) and returns
 * status, so that failures read `return eeb_errf(err, errlen, EEB_EINVAL, ...)`.
 */
int eeb_errf(char *err, size_t errlen, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The next number of a splitmix64 sequence: seeded pseudo-randomness
 * (initial weights, shuffling) that is the same on every host. */
static inline uint64_t eeb_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Nanoseconds on CLOCK_MONOTONIC: the one clock for events and samples. */
int64_t eeb_mono_ns(void);

/* Nanoseconds since the Unix epoch, UTC (CLOCK_REALTIME): for people. */
int64_t eeb_utc_ns(void);

/* ns (eeb_utc_ns) as people and ISO 8601 read it, to the second:
 * "2026-12-01T00:00:00Z" into out ("?" if out of range); out. */
#define EEB_UTC_TEXT 32
const char *eeb_utc_text(int64_t ns, char out[EEB_UTC_TEXT]);

/* Fills buf with len bytes from the kernel's random source (getrandom). */
int eeb_random_bytes(void *buf, size_t len, char *err, size_t errlen);

/* Writes a random (version 4) UUID as 36 characters plus NUL into out. */
int eeb_uuid4(char out[37], char *err, size_t errlen);

/*
 * Whether path is a file that can be read, and opening it ("rb").  Errors
 * name the path and say why in a reader's words: "is a directory" (which
 * fopen would open, and fread fail on), or strerror's text.
 */
int eeb_check_input(const char *path, char *err, size_t errlen);
int eeb_open_input(const char *path, FILE **out, char *err, size_t errlen);

/*
 * Whether a file can be written at path, before any work is done for it:
 * an error names a path that is a directory, or a folder that does not
 * exist or is not a folder ("out/x.html: no folder 'out'").
 */
int eeb_check_output(const char *path, char *err, size_t errlen);

/*
 * Reads a whole file into a newly allocated, NUL-terminated buffer (free it
 * yourself).  Files larger than max_bytes are refused with EEB_EINVAL.
 */
int eeb_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                  size_t errlen);

/* 1 if s is 1..max letters, digits and characters of punct. */
int eeb_text_ok(const char *s, size_t max, const char *punct);

/* s without a UTF-8 sequence cut short at its end (a text truncated to a
 * buffer's size), so that it is still UTF-8 where it was. */
void eeb_utf8_trim(char *s);

/* What a run declares to a server and the leaderboard is filtered by (its
 * device, backend and design): letters, digits and these; the device and
 * backend at most EEB_DECLARED_MAX characters. */
#define EEB_DECLARED_PUNCT "_.:=,/+-"
#define EEB_DECLARED_MAX   63

/* The bytes of the character at s that a terminal or a browser acts on
 * rather than shows -- an ASCII control but tab and newline, DEL, a C1
 * control (U+0080..U+009F), or a Unicode bidi control (U+202E turns
 * "exe.gnp" into what reads "png.exe") -- with shown its visible form
 * ("\x1b", "\u202e"); 0 for any other. */
#define EEB_CONTROL_SHOWN 8
size_t eeb_text_control(const char *s, char shown[EEB_CONTROL_SHOWN]);

/* Writes s to f as HTML text or attribute value (<, >, &, ", ' escaped,
 * and controls shown as eeb_text_control says). */
void eeb_html_text(FILE *f, const char *s);

/* Room for any double eeb_number_text writes, and its NUL. */
#define EEB_NUMBER_MAX 32

/* v for people: the shortest "%g" text that reads back as v ("0.1", not
 * "0.10000000000000001"), or v to 15 significant digits if none of up to
 * 15 does (0.024598560000000002 is "0.02459856"); "-" for NAN.  Returns
 * out (common/number.c). */
const char *eeb_number_text(double v, char out[EEB_NUMBER_MAX]);

/* The same up to 17 digits: the shortest text that reads back as exactly
 * v, for a value a machine compares (a sort key). */
const char *eeb_number_exact(double v, char out[EEB_NUMBER_MAX]);

#define EEB_SHA256_HEX 65 /* 64 hex digits and a NUL */

/* The SHA-256 of a buffer, or of a file's contents, as lowercase hex. */
void eeb_sha256(const void *data, size_t len, char out[EEB_SHA256_HEX]);
int eeb_sha256_file(const char *path, char out[EEB_SHA256_HEX], char *err, size_t errlen);
/* The same for what is left of f (opened from path, which errors name). */
int eeb_sha256_stream(FILE *f, const char *path, char out[EEB_SHA256_HEX], char *err,
                      size_t errlen);
/* HMAC-SHA-256 of data under key, as lowercase hex: a name that only the
 * key's holder can make or tell apart from random ("" if libcrypto fails). */
void eeb_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
                     char out[EEB_SHA256_HEX]);

/*
 * A file written so that a crash leaves the old file or the whole new one,
 * never half of it (SQLite's rule for its own files): the bytes go to
 * "PATH.tmp-PID", and commit flushes, fsyncs and renames it over PATH.
 * abort (also safe after a failed commit) removes the temporary.
 */
struct eeb_atomic_file {
    FILE *f;
    char *path, *tmp;
};

int eeb_atomic_open(struct eeb_atomic_file *af, const char *path, char *err, size_t errlen);
int eeb_atomic_commit(struct eeb_atomic_file *af, char *err, size_t errlen);
void eeb_atomic_abort(struct eeb_atomic_file *af);

/* len bytes of buf as the whole of path, through the above. */
int eeb_atomic_write(const char *path, const void *buf, size_t len, char *err, size_t errlen);

#endif
