/*
 * atomic_file.c - write to a temporary beside the target, fsync, rename:
 * readers see the old file or the complete new one.
 */
#include "eeb_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int eeb_atomic_open(struct eeb_atomic_file *af, const char *path, char *err, size_t errlen)
{
    memset(af, 0, sizeof *af);
    int rc = eeb_check_output(path, err, errlen);
    if (rc)
        return rc;
    size_t n = strlen(path) + 32;
    af->path = strdup(path);
    af->tmp = malloc(n);
    if (!af->path || !af->tmp) {
        eeb_atomic_abort(af);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    snprintf(af->tmp, n, "%s.tmp-%ld", path, (long)getpid());
    af->f = fopen(af->tmp, "wb");
    if (!af->f) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", af->tmp, strerror(errno));
        eeb_atomic_abort(af);
        return rc;
    }
    return EEB_OK;
}

int eeb_atomic_commit(struct eeb_atomic_file *af, char *err, size_t errlen)
{
    FILE *f = af->f;
    af->f = NULL;
    int failed = fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0;
    int saved = errno;
    failed |= fclose(f) != 0;
    if (failed)
        return eeb_errf(err, errlen, EEB_EIO, "%s: write failed: %s", af->tmp,
                        strerror(saved ? saved : errno));
    if (rename(af->tmp, af->path) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: cannot rename to %s: %s", af->tmp, af->path,
                        strerror(errno));
    free(af->tmp), af->tmp = NULL;
    free(af->path), af->path = NULL;
    return EEB_OK;
}

void eeb_atomic_abort(struct eeb_atomic_file *af)
{
    if (af->f)
        fclose(af->f);
    if (af->tmp)
        unlink(af->tmp);
    free(af->tmp);
    free(af->path);
    memset(af, 0, sizeof *af);
}

int eeb_atomic_write(const char *path, const void *buf, size_t len, char *err, size_t errlen)
{
    struct eeb_atomic_file af;
    int rc = eeb_atomic_open(&af, path, err, errlen);
    if (rc != EEB_OK)
        return rc;
    if (fwrite(buf, 1, len, af.f) != len)
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: write failed", path);
    else
        rc = eeb_atomic_commit(&af, err, errlen);
    if (rc != EEB_OK)
        eeb_atomic_abort(&af);
    return rc;
}
