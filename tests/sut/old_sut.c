/*
 * old_sut.c - a SUT built against this sut/eeb_sut.h (version 2) that
 * declares itself version 1, as a team's library built before version 2
 * would be: the example learner (sut/examples/nearest_mean.c, included)
 * under a version-1 table.  eeb must drive it with every slot version 1
 * has, and read nothing past them (its version slot is absent).  Chosen by
 * a -D flag (the Makefile builds each as build/.../tests/sut/libold_NAME.so):
 *
 *   OLD_SET    the table's version slot holds text: an eeb that read past
 *              version 1 would record it
 *   OLD_EDGE   the table's memory ends exactly where a version-1 table
 *              ends, the page after it unreadable: an eeb that read past
 *              version 1 would die of SIGSEGV
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS; nearest_mean.c asks for POSIX */

#include "sut/eeb_sut.h"

#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The example's entry point under another name: this file exports the one
 * eeb looks up. */
#define eeb_sut_entry nearest_mean_entry
const struct eeb_sut_ops *nearest_mean_entry(void);
#include "sut/examples/nearest_mean.c"
#undef eeb_sut_entry

/* Where a version-1 table ends: version 2's first member. */
#define V1_BYTES offsetof(struct eeb_sut_ops, version)

static const struct eeb_sut_ops old_ops = {
    .abi_version = 1,
    .name = "nearest-mean-v1",
    .open = nm_open,
    .load_model = nm_load,
    .train = nm_train,
    .predict = nm_predict,
    .counters = nm_counters,
    .close = nm_close,
    .save_model = nm_save,
#ifdef OLD_SET
    .version = "not-in-version-1", /* a version-1 table has no such slot */
#endif
};

#ifdef OLD_EDGE
/* old_ops's version-1 bytes at the very end of a readable page, an
 * unreadable page after them; NULL if the pages cannot be had. */
static const struct eeb_sut_ops *at_the_edge(void)
{
    static const struct eeb_sut_ops *table;
    if (table)
        return table;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *p =
        mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    unsigned char *start = p + page - V1_BYTES;
    memcpy(start, &old_ops, V1_BYTES);
    if (mprotect(p + page, page, PROT_NONE) || mprotect(p, page, PROT_READ)) {
        munmap(p, 2 * page);
        return NULL;
    }
    /* the members in start's V1_BYTES are all a version-1 table has */
    table = (const struct eeb_sut_ops *)(const void *)start;
    return table;
}
#endif

const struct eeb_sut_ops *eeb_sut_entry(void)
{
#ifdef OLD_EDGE
    return at_the_edge();
#else
    return &old_ops;
#endif
}
