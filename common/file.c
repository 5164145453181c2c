/*
 * file.c - whole-file reads with a size cap, for the small text inputs eeb
 * parses (utilization reports, rules and configuration files).
 */
#include "eeb_common.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int eeb_read_file(const char *path, size_t max_bytes, char **out, size_t *len, char *err,
                  size_t errlen)
{
    int rc = EEB_OK;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
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
