/*
 * text.c - names checked against a set of characters: a team's name, and
 * what a run declares to a server (its device, backend and design).
 */
#include "eeb_common.h"

#include <string.h>

int eeb_text_ok(const char *s, size_t max, const char *punct)
{
    size_t n = strlen(s);
    if (n < 1 || n > max)
        return 0;
    for (const char *c = s; *c; c++)
        if (!(('a' <= *c && *c <= 'z') || ('A' <= *c && *c <= 'Z') || ('0' <= *c && *c <= '9') ||
              strchr(punct, *c)))
            return 0;
    return 1;
}
