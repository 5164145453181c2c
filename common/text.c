/*
 * text.c - names checked against a set of characters: a team's name, and
 * what a run declares to a server (its device, backend and design).
 */
#include "eeb_common.h"

#include <stdio.h>
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

size_t eeb_text_control(const char *s, char shown[EEB_CONTROL_SHOWN])
{
    const unsigned char *u = (const unsigned char *)s;
    if ((u[0] < 0x20 && u[0] != '\t' && u[0] != '\n') || u[0] == 0x7f) {
        snprintf(shown, EEB_CONTROL_SHOWN, "\\x%02x", u[0]);
        return 1;
    }
    /* the C1 controls (a terminal acts on U+009B as on ESC [), and the
     * bidi controls, which reorder the text about them: U+061C, U+200E,
     * U+200F, U+202A..U+202E, U+2066..U+2069 */
    unsigned code = 0;
    size_t len = 0;
    if (u[0] == 0xc2 && u[1] >= 0x80 && u[1] <= 0x9f) /* the C1 controls, U+0080..U+009F */
        code = u[1], len = 2;
    else if (u[0] == 0xd8 && u[1] == 0x9c)
        code = 0x061c, len = 2;
    else if (u[0] == 0xe2 && u[1] == 0x80 &&
             (u[2] == 0x8e || u[2] == 0x8f || (u[2] >= 0xaa && u[2] <= 0xae)))
        code = 0x2000 | (u[2] & 0x3f), len = 3;
    else if (u[0] == 0xe2 && u[1] == 0x81 && u[2] >= 0xa6 && u[2] <= 0xa9)
        code = 0x2040 | (u[2] & 0x3f), len = 3;
    if (len)
        snprintf(shown, EEB_CONTROL_SHOWN, "\\u%04x", code);
    return len;
}
