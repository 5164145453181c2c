/*
 * plugin.c - a team's system under test as a shared library
 * (`eeb run --backend ./libteam.so`): the file opened with dlopen, its one
 * symbol, eeb_sut_entry, called, and the table it returns checked before
 * anything is driven through it.
 *
 *   the versions   a table's size by the version it was built for, and
 *                  eeb_sut_ops_has: a slot past that size is absent
 *   the check      eeb_sut_ops_check: the ABI version first (a table of a
 *                  version this eeb does not know is not read further),
 *                  then every required slot, the first missing one named
 *   the library    eeb_sut_plugin_load/unload: each way a file can fail to
 *                  be a SUT library gets its own message, naming the path
 *                  and saying what to do
 *
 * Nothing is kept here: the table lives in the library, which stays mapped
 * until eeb_sut_plugin_unload.  RTLD_NOW finds a symbol the library lacks
 * at load, not in the middle of a run; RTLD_LOCAL keeps its symbols from
 * resolving anyone else's.
 */
#include "sut/eeb_sut_host.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define ENTRY "eeb_sut_entry"

/* How a team builds one, for the messages that mean "this is not one". */
#define HOW_TO_BUILD                                                                               \
    "build it as a shared library exporting " ENTRY                                                \
    " (cc -shared -fPIC -I. team.c -o libteam.so; docs/sut.md)"

/* ---- the versions ---- */

/* How far a table built for each version reaches: the offset just past
 * its last member.  A later version only appends, so a member lies in a
 * version-v table if it starts before reach[v].  When a version appends,
 * bump EEB_SUT_ABI_VERSION and add its row here, ending at its own last
 * member (the assertion below then names that member). */
#define V1_END (offsetof(struct eeb_sut_ops, save_model) + sizeof(void (*)(void)))
#define V2_END (offsetof(struct eeb_sut_ops, version) + sizeof(const char *))
static const size_t reach[EEB_SUT_ABI_VERSION + 1] = {
    [1] = V1_END,
    [2] = V2_END,
};
/* A member appended to struct eeb_sut_ops without a new version and a
 * row above would be read from older tables that do not have it. */
_Static_assert(V2_END == sizeof(struct eeb_sut_ops),
               "struct eeb_sut_ops grew: a new EEB_SUT_ABI_VERSION and its row in reach[]");
/* Version 2's first member starts where a version-1 table ends (no
 * padding between), so a version-1 table is read no further than it is. */
_Static_assert(offsetof(struct eeb_sut_ops, version) == V1_END,
               "version 2 starts at version 1's end");
_Static_assert(EEB_SUT_ABI_VERSION == 2, "a new version: its row in reach[]");

int eeb_sut_ops_has(const struct eeb_sut_ops *ops, size_t offset)
{
    int v = ops->abi_version;
    return v >= 1 && v <= EEB_SUT_ABI_VERSION && offset < reach[v];
}

void eeb_sut_ops_whole(const struct eeb_sut_ops *ops, struct eeb_sut_ops *whole)
{
    *whole = (struct eeb_sut_ops){
        .abi_version = EEB_SUT_ABI_VERSION,
        .name = ops->name,
        .open = ops->open,
        .load_model = ops->load_model,
        .train = ops->train,
        .end_training = EEB_SUT_SLOT(ops, end_training),
        .predict = ops->predict,
        .counters = EEB_SUT_SLOT(ops, counters),
        .close = ops->close,
        .save_model = EEB_SUT_SLOT(ops, save_model),
        .version = EEB_SUT_SLOT(ops, version),
    };
}

/* ---- the check ---- */

int eeb_sut_ops_check(const struct eeb_sut_ops *ops, const char *where, char *err, size_t errlen)
{
    if (!where)
        where = "SUT";
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no table of SUT calls", where);
    if (ops->abi_version > EEB_SUT_ABI_VERSION)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "%s: built against SUT ABI version %d, newer than this eeb, which drives "
                        "versions 1 to %d (use a newer eeb, or rebuild it against this eeb's "
                        "sut/eeb_sut.h)",
                        where, ops->abi_version, EEB_SUT_ABI_VERSION);
    if (ops->abi_version < 1)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "%s: built against SUT ABI version %d, which does not exist; this eeb "
                        "drives versions 1 to %d (set abi_version = EEB_SUT_ABI_VERSION)",
                        where, ops->abi_version, EEB_SUT_ABI_VERSION);
    if (!ops->name || !*ops->name)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: its table has no name (a short one, for messages and the record)",
                        where);
    /* The required calls, in the order the harness makes them. */
    const struct {
        const char *slot;
        int present;
    } required[] = {{"open", EEB_SUT_SLOT(ops, open) != NULL},
                    {"load_model", EEB_SUT_SLOT(ops, load_model) != NULL},
                    {"train", EEB_SUT_SLOT(ops, train) != NULL},
                    {"predict", EEB_SUT_SLOT(ops, predict) != NULL},
                    {"close", EEB_SUT_SLOT(ops, close) != NULL}};
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!required[i].present)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "%s: SUT '%s' has no '%s' (a required call; sut/eeb_sut.h)", where,
                            ops->name, required[i].slot);
    return EEB_OK;
}

/* Whether path is a file that may be a library, in a team's words. */
static int check_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return eeb_errf(err, errlen, EEB_EIO,
                            "%s: no such file (give the path of the team's SUT library, e.g. "
                            "./libteam.so, built first)",
                            path);
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        return eeb_errf(err, errlen, EEB_EIO, "%s: is a directory, not a SUT library", path);
    if (!S_ISREG(st.st_mode))
        return eeb_errf(err, errlen, EEB_EIO, "%s: not a regular file, so not a SUT library", path);
    return EEB_OK;
}

/* Whether the file starts as an ELF object does: dlopen's own word for a
 * text file ("invalid ELF header", "file too short") says less. */
static int is_elf(const char *path)
{
    unsigned char magic[4] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return 1; /* dlopen will say why */
    size_t n = fread(magic, 1, sizeof magic, f);
    fclose(f);
    return n == sizeof magic && memcmp(magic, "\177ELF", 4) == 0;
}

/* dlerror's text without the path it usually starts with. */
static const char *dl_reason(const char *path)
{
    const char *why = dlerror();
    size_t n = strlen(path);
    if (!why)
        return "unknown reason";
    if (strncmp(why, path, n) == 0 && strncmp(why + n, ": ", 2) == 0)
        why += n + 2;
    return why;
}

int eeb_sut_plugin_check_file(const char *path, char *err, size_t errlen)
{
    int rc = check_file(path, err, errlen);
    if (rc == EEB_OK && !is_elf(path))
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: not a shared library (no ELF header); %s",
                      path, HOW_TO_BUILD);
    return rc;
}

int eeb_sut_plugin_load(const char *path, const struct eeb_sut_ops **ops, void **library, char *err,
                        size_t errlen)
{
    *ops = NULL;
    *library = NULL;
    if (!path || !*path)
        return eeb_errf(err, errlen, EEB_EINVAL, "no path of a SUT library");
    /* Without a '/', dlopen would search the library path and could load
     * another file than the one named (and hashed). */
    if (!strchr(path, '/'))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: a SUT library is named by a path with a '/' (./%s), so that the file "
                        "loaded is the file named",
                        path, path);
    int rc = eeb_sut_plugin_check_file(path, err, errlen);
    if (rc)
        return rc;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: cannot be loaded as a SUT library: %s", path,
                        dl_reason(path));
    void *sym = dlsym(lib, ENTRY);
    if (!sym) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "%s: no symbol '" ENTRY "' (a SUT library exports "
                      "const struct eeb_sut_ops *" ENTRY "(void); sut/eeb_sut.h)",
                      path);
        goto out;
    }
    /* POSIX guarantees a function's address survives the trip through
     * dlsym's void *. */
    const struct eeb_sut_ops *(*entry)(void) = (const struct eeb_sut_ops *(*)(void))sym;
    const struct eeb_sut_ops *table = entry();
    if (!table) {
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: " ENTRY "() returned NULL (it must return the SUT's constant table)",
                      path);
        goto out;
    }
    if ((rc = eeb_sut_ops_check(table, path, err, errlen)) == EEB_OK) {
        *ops = table;
        *library = lib;
    }
out:
    if (rc)
        dlclose(lib);
    return rc;
}

void eeb_sut_plugin_unload(void *library)
{
    if (library)
        dlclose(library);
}
