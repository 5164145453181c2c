/*
 * bad_sut.c - SUT libraries eeb must refuse to drive, one mistake each,
 * chosen by a -D flag (the Makefile builds each as
 * build/.../tests/sut/libbad_NAME.so for test_plugin.c):
 *
 *   BAD_NO_ENTRY     exports its table under another name than eeb_sut_entry
 *   BAD_NULL_ENTRY   eeb_sut_entry returns NULL
 *   BAD_VERSION      a table built against ABI version 3
 *   BAD_NO_PREDICT   a table without predict
 *   BAD_V3           a SUT built against a later header than eeb's: a
 *                    version-3 table (the version-2 members, then one
 *                    appended slot) declared as its own struct here, as
 *                    a later sut/eeb_sut.h would declare it
 *
 * The calls do nothing: eeb must refuse the library before calling any.
 */
#include "sut/eeb_sut.h"

static int bad_open(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen)
{
    (void)setup, (void)err, (void)errlen;
    *sut = NULL;
    return -1;
}

static int bad_load(void *sut, const char *path, char *err, size_t errlen)
{
    (void)sut, (void)path, (void)err, (void)errlen;
    return -1;
}

static int bad_train(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step,
                     char *err, size_t errlen)
{
    (void)sut, (void)batch, (void)step, (void)err, (void)errlen;
    return -1;
}

#ifndef BAD_NO_PREDICT
static int bad_predict(void *sut, const struct eeb_sut_batch *batch,
                       struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    (void)sut, (void)batch, (void)out, (void)err, (void)errlen;
    return -1;
}
#endif

static void bad_close(void *sut)
{
    (void)sut;
}

#ifdef BAD_V3
/* A later header's table: version 2's members in version 2's order, then
 * what version 3 appends. */
struct eeb_sut_ops_v3 {
    struct eeb_sut_ops v2;
    int (*later)(void *sut, char *err, size_t errlen); /* appended by version 3 */
};

static int bad_later(void *sut, char *err, size_t errlen)
{
    (void)sut, (void)err, (void)errlen;
    return -1;
}

static const struct eeb_sut_ops_v3 bad_v3 = {
    .v2 = {.abi_version = 3,
           .name = "bad-v3",
           .open = bad_open,
           .load_model = bad_load,
           .train = bad_train,
           .predict = bad_predict,
           .close = bad_close,
           .version = "3.0"},
    .later = bad_later,
};
#endif

static const struct eeb_sut_ops bad_ops = {
#ifdef BAD_VERSION
    .abi_version = 3,
#else
    .abi_version = EEB_SUT_ABI_VERSION,
#endif
    .name = "bad",
    .open = bad_open,
    .load_model = bad_load,
    .train = bad_train,
#ifndef BAD_NO_PREDICT
    .predict = bad_predict,
#endif
    .close = bad_close,
};

#ifdef BAD_NO_ENTRY
/* The mistake: a name of the team's own, not the one eeb looks up. */
const struct eeb_sut_ops *team_sut_entry(void);
const struct eeb_sut_ops *team_sut_entry(void)
{
    return &bad_ops;
}
#elif defined(BAD_NULL_ENTRY)
const struct eeb_sut_ops *eeb_sut_entry(void)
{
    return bad_ops.name ? NULL : &bad_ops;
}
#elif defined(BAD_V3)
const struct eeb_sut_ops *eeb_sut_entry(void)
{
    return bad_ops.name ? &bad_v3.v2 : &bad_ops;
}
#else
const struct eeb_sut_ops *eeb_sut_entry(void)
{
    return &bad_ops;
}
#endif
