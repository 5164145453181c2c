/*
 * uuid.c - random bytes from getrandom(2), and run identifiers from them
 * (RFC 4122 version 4).
 */
#include "eeb_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

int eeb_random_bytes(void *buf, size_t len, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom((unsigned char *)buf + got, len - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return eeb_errf(err, errlen, EEB_EIO, "getrandom: %s", strerror(errno));
        }
        got += (size_t)n;
    }
    return EEB_OK;
}

int eeb_uuid4(char out[37], char *err, size_t errlen)
{
    unsigned char b[16];
    int rc = eeb_random_bytes(b, sizeof b, err, errlen);
    if (rc)
        return rc;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
    return EEB_OK;
}
