/*
 * status.c - the error-buffer helper.
 */
#include "eeb_common.h"

#include <stdarg.h>
#include <stdio.h>

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
