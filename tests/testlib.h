/*
 * testlib.h - helpers shared by eeb's Criterion tests: fixtures, scratch
 * files, and running the eeb binary as a user would.
 */
#ifndef EEB_TESTLIB_H
#define EEB_TESTLIB_H

#include <stddef.h>

/* 1 in a build under AddressSanitizer, where the data pipelines run ten
 * times slower or worse: long end-to-end tests shrink or skip there. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Reads tests/data/<name> into a new NUL-terminated buffer (free it). */
char *test_fixture(const char *name, size_t *len);

/* Replaces the first occurrence of from with to in text (a new buffer);
 * fails the test if from is absent. */
char *test_replace(const char *text, const char *from, const char *to);

/* Makes a fresh scratch directory and returns its path (static storage:
 * the next call makes another and overwrites it; copy what you keep). */
const char *test_tmpdir(void);

/* Expects no entry of dir to have part in its name: what a run must not
 * leave behind (its private eeb-run-* directory, say). */
void test_expect_none_named(const char *dir, const char *part);

/* Makes dir/sub and every directory above it that is missing. */
void test_mkdirs(const char *dir, const char *sub);

/* Writes len bytes to path; fails the test on error. */
void test_write_file(const char *path, const void *data, size_t len);

/* Writes w x h RGB pixels to path as a JPEG (libjpeg-turbo, quality 95). */
void test_write_jpeg(const char *path, const unsigned char *rgb, int w, int h);

/* Reads a whole file (free it); NULL if it does not exist. */
char *test_read_file(const char *path, size_t *len);

struct test_run {
    int status; /* exit status, or -1 if the process did not exit */
    char *out;  /* captured stdout (free it) */
    char *err;  /* captured stderr (free it) */
};

/* Runs build/eeb with argv (NULL-terminated, without argv[0]). */
struct test_run test_eeb(const char *const *args);

void test_run_free(struct test_run *r);

/* Runs build/eeb with args, asserts its exit status and that its stdout is
 * one JSON object, and returns it (json_decref it). */
struct json_t;
struct json_t *test_eeb_json(const char *const *args, int want_status);

/* The number o holds under key; fails the test if there is none. */
double test_json_num(struct json_t *o, const char *key);

/*
 * Mounts dir over target (a bind mount) in a private mount namespace of
 * this test's process, which Criterion forks for each test, so nothing
 * outside it sees the mount: NULL, or why it could not (not root, or a
 * container without CAP_SYS_ADMIN) for cr_skip_test.
 */
const char *test_private_bind(const char *dir, const char *target);

/* The same for a tmpfs of size bytes mounted on target: a small disk. */
const char *test_private_tmpfs(const char *target, size_t size);

struct eeb_power_source;

/* Opens a power source by URI; fails the test on an error. */
struct eeb_power_source *test_power_open(const char *uri);

/* Asserts that opening uri fails with status and an error containing message. */
void test_power_open_fails(const char *uri, int status, const char *message);

/* One integer from one query on an SQLite file, with plain SQLite. */
long long test_sql_int(const char *db_path, const char *sql);
/* One number (NAN for SQL NULL). */
double test_sql_double(const char *db_path, const char *sql);

/* One text from one query (malloc'ed into *out, NULL for SQL NULL); 0, or
 * -1 if the query gives no row. */
int test_sql_text(const char *db_path, const char *sql, char **out);

/* Statements run on an SQLite file with plain SQLite (a file tampered
 * with, or made by an eeb to come). */
void test_sql_exec(const char *db_path, const char *sql);

/* A network small enough to train in a test: 8x8x3 inputs, a 3x3
 * convolution of 4 channels, ReLU, 3 classes; weights from seed 5. */
struct eeb_net;
struct eeb_net *test_tiny_net(void);

/*
 * Writes a learnable classification shard of n side x side RGB images in
 * four classes -- red or green, horizontal or vertical stripes, in a patch
 * at a random place over noise -- and returns the path (in a fresh
 * scratch directory, static storage).  Mode 0600, as a server's test set
 * must be.
 */
const char *test_cls_shard(int n, int side, unsigned seed);

/* Asserts that text hay holds needle (a Criterion test's; <string.h>). */
#define assert_has(hay, needle)                                                                    \
    cr_assert_not_null(strstr((hay), (needle)), "'%s' does not contain '%s'", (hay), (needle))

/* The inputs of a small classification run in dir: ft.eebd and test.eebd
 * (test_cls_shard's classes, 16 pixels a side), m.eebm a freshly
 * initialized model for them, and the path runs.db. */
struct test_cls_run {
    char ft[300], test[300], model[300], db[300];
};
struct test_cls_run test_cls_run_inputs(const char *dir, int n_finetune, int n_test);

/*
 * Loads url in Debian's headless Chromium (skipping the test without it),
 * with dir as its home: a screenshot to png if not NULL, and the DOM as
 * the page's scripts left it, returned (free it).
 */
char *test_chromium(const char *dir, const char *url, const char *png);

/* Pixels of a PNG within 16 of an RGB colour. */
long test_count_colour(const char *png_path, unsigned rgb);

/* The processes this test starts die of a SIGSEGV as a plain build's do
 * (under ASan, its handler would report it and exit 1 instead): for tests
 * of how a crash is reported. */
void test_plain_segv(void);

#endif
