/*
 * html.c - text written into HTML: the run report's and the server's pages.
 */
#include "eeb_common.h"

#include <stdio.h>

void eeb_html_text(FILE *f, const char *s)
{
    char shown[EEB_CONTROL_SHOWN];
    for (size_t n; s && *s; s++)
        if ((n = eeb_text_control(s, shown)) > 0)
            fputs(shown, f), s += n - 1;
        else
            switch (*s) {
            case '<': fputs("&lt;", f); break;
            case '>': fputs("&gt;", f); break;
            case '&': fputs("&amp;", f); break;
            case '"': fputs("&quot;", f); break;
            case '\'': fputs("&#39;", f); break;
            default: fputc(*s, f);
            }
}
