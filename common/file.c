/*
 * file.c - opening inputs and checking outputs with errors in a user's
 * words, and whole-file reads with a size cap for the small text inputs eeb
 * parses (utilization reports, rules and configuration files).
 */
#include "eeb_common.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int eeb_check_input(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return eeb_errf(err, errlen, EEB_EIO, "%s: is a directory, not a file", path);
    return EEB_OK;
}

int eeb_open_input(const char *path, FILE **out, char *err, size_t errlen)
{
    *out = NULL;
    int rc = eeb_check_input(path, err, errlen);
    if (rc)
        return rc;
    FILE *f = fopen(path, "rb");
    if (!f)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
    *out = f;
    return EEB_OK;
}

int eeb_check_output(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return eeb_errf(err, errlen, EEB_EIO, "%s: is a directory; give a file name", path);
    char copy[4096];
    if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy)
        return eeb_errf(err, errlen, EEB_EINVAL, "%.64s...: path too long", path);
    const char *dir = dirname(copy);
    if (stat(dir, &st) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: no folder '%s' (%s); create it first", path, dir,
                        strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return eeb_errf(err, errlen, EEB_EIO, "%s: '%s' is not a folder", path, dir);
    return EEB_OK;
}

int eeb_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                  size_t errlen)
{
    int rc = EEB_OK;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    FILE *f;
    if ((rc = eeb_open_input(path, &f, err, errlen)))
        return rc;
    for (;;) {
        if (n + 1 >= cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nbuf = realloc(buf, ncap);
            if (!nbuf) {
                rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
                goto out;
            }
            buf = nbuf;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max_bytes) {
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: larger than the %zu-byte limit", path,
                          max_bytes);
            goto out;
        }
        if (got == 0)
            break;
    }
    if (ferror(f)) {
        rc = eeb_errf(err, errlen, EEB_EIO, "%s: read error", path);
        goto out;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return rc;
}
