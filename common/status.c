/*
 * status.c - status code texts and the error-buffer helper.
 */
#include "eeb_common.h"

#include <stdarg.h>
#include <stdio.h>

const char *eeb_strerror(int status)
{
    switch (status) {
    case EEB_OK: return "success";
    case EEB_EINVAL: return "invalid input";
    case EEB_EIO: return "input/output error";
    case EEB_ENOMEM: return "out of memory";
    case EEB_EFORMAT: return "unrecognized file format";
    case EEB_EVERSION: return "file written by a newer eeb";
    case EEB_EDB: return "database error";
    case EEB_EDEVICE: return "device error";
    case EEB_ETIMEOUT: return "timed out";
    }
    return "unknown error";
}

int eeb_errf(char *err, size_t errlen, int status, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return status;
}
