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

void eeb_utf8_trim(char *s)
{
    size_t n = strlen(s), lead = n;
    while (lead > 0 && n - lead < 4 && ((unsigned char)s[lead - 1] & 0xc0) == 0x80)
        lead--; /* back over the continuation bytes at the end */
    if (lead == 0 || ((unsigned char)s[lead - 1] & 0x80) == 0)
        return;
    unsigned char c = (unsigned char)s[lead - 1];
    size_t want = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    if (n - (lead - 1) < want)
        s[lead - 1] = '\0';
}
