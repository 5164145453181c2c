/*
 * lines.c - a list file's non-blank lines, trimmed (a CRLF file's \r too),
 * with their line numbers; a UTF-8 byte order mark is not text, and a NUL
 * byte (UTF-16, or not a text file) is an error, not the end of a line.
 */
#include "eeb_lines.h"

#include "common/eeb_common.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

void eeb_lines_free(struct eeb_lines *l)
{
    free(l->path), free(l->buf), free(l->text), free(l->lineno);
    memset(l, 0, sizeof *l);
}

/* A NUL byte would end its line early, silently: an error naming its line. */
static int refuse_nul(const char *buf, size_t len, const char *path, char *err, size_t errlen)
{
    const char *nul = memchr(buf, '\0', len);
    if (!nul)
        return EEB_OK;
    int line = 1;
    for (const char *p = buf; p < nul; p++)
        line += *p == '\n';
    return eeb_errf(err, errlen, EEB_EFORMAT,
                    "%s:%d: a NUL byte: not a text file, or UTF-16 (save it as UTF-8)", path, line);
}

int eeb_lines_read(struct eeb_lines *l, const char *path, size_t max_bytes, char *err,
                   size_t errlen)
{
    memset(l, 0, sizeof *l);
    size_t len;
    int rc = eeb_read_file(path, max_bytes, &l->buf, &len, err, errlen);
    if (rc == EEB_OK)
        rc = refuse_nul(l->buf, len, path, err, errlen);
    if (rc != EEB_OK) {
        eeb_lines_free(l);
        return rc;
    }
    size_t cap = 1;
    for (size_t i = 0; i < len; i++)
        cap += l->buf[i] == '\n';
    l->path = strdup(path);
    l->text = malloc(cap * sizeof *l->text);
    l->lineno = malloc(cap * sizeof *l->lineno);
    if (!l->path || !l->text || !l->lineno) {
        eeb_lines_free(l);
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", path);
    }
    char *p = l->buf;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) /* Notepad's UTF-8 */
        p += 3;
    for (int no = 1; p; no++) {
        char *next = strchr(p, '\n');
        if (next)
            *next++ = '\0';
        while (isspace((unsigned char)*p))
            p++;
        size_t n = strlen(p);
        while (n && isspace((unsigned char)p[n - 1]))
            p[--n] = '\0';
        if (n) {
            l->text[l->n] = p;
            l->lineno[l->n++] = no;
        }
        p = next;
    }
    return EEB_OK;
}
