/*
 * eeb_sut_serve.c - any SUT library served out of process without eeb:
 * the library loaded with dlopen and its table served over the exec
 * protocol (sut/eeb_sut_serve.c), for a board eeb reaches over ssh:
 *
 *     eeb run ... --backend 'exec:ssh board ./eeb_sut_serve ./libteam.so'
 *
 * gives eeb the same calls, and the same answers, as `--backend
 * ./libteam.so` on eeb's own machine (which eeb hosts the same way, with
 * `eeb sut serve`).  Build it (from eeb's root; `make` builds it as
 * build/sut/eeb_sut_serve):
 *
 *     cc -O2 -I. sut/examples/eeb_sut_serve.c sut/eeb_sut_serve.c -ldl -o eeb_sut_serve
 *
 * It serves a table of its own header's version, or of version 1 (built
 * against an older header: what version 2 appended, the version, absent);
 * eeb's `eeb sut serve` takes every version eeb knows.
 */
#include "sut/eeb_sut.h"
#include "sut/eeb_sut_serve.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A version-1 table as a whole one of this header's version: version 1's
 * members copied (no byte past them read), the version slot NULL. */
static const struct eeb_sut_ops *whole_v1(const struct eeb_sut_ops *v1)
{
    static struct eeb_sut_ops whole;
    memcpy(&whole, v1, offsetof(struct eeb_sut_ops, version));
    whole.abi_version = EEB_SUT_ABI_VERSION;
    whole.version = NULL;
    return &whole;
}

/* The library's table, or NULL with why. */
static const struct eeb_sut_ops *load(const char *path, void **lib, char *why, size_t n)
{
    *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*lib) {
        snprintf(why, n, "%s", dlerror());
        return NULL;
    }
    void *sym = dlsym(*lib, "eeb_sut_entry");
    const struct eeb_sut_ops *(*entry)(void) = NULL;
    memcpy(&entry, &sym, sizeof entry); /* a function's address through dlsym's void * */
    const struct eeb_sut_ops *ops = entry ? entry() : NULL;
    if (ops && ops->abi_version == 1)
        ops = whole_v1(ops);
    if (!ops || ops->abi_version != EEB_SUT_ABI_VERSION || !ops->name || !ops->open ||
        !ops->load_model || !ops->train || !ops->predict || !ops->close) {
        snprintf(why, n,
                 "%s: no eeb_sut_entry, or a table that is not a whole SUT of ABI version 1 or %d",
                 path, EEB_SUT_ABI_VERSION);
        return NULL;
    }
    return ops;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: eeb_sut_serve ./libteam.so   (eeb run --backend "
                        "'exec:eeb_sut_serve ./libteam.so')\n");
        return 2;
    }
    void *lib = NULL;
    char why[1024];
    const struct eeb_sut_ops *ops = load(argv[1], &lib, why, sizeof why);
    int rc = eeb_sut_serve(ops, why, "eeb_sut_serve");
    if (lib)
        dlclose(lib);
    return rc;
}
