/*
 * eeb_lines.h - a list file's lines (Food-101's and UCF-101's split and
 * class lists, VOC's image sets), trimmed, each with its line number so
 * that errors can name it.
 */
#ifndef EEB_LINES_H
#define EEB_LINES_H

#include <stddef.h>

struct eeb_lines {
    char *path, *buf;
    char **text; /* the non-blank lines, trimmed, pointing into buf */
    int *lineno; /* each one's line number, from 1 */
    int n;
};

/*
 * Reads path (at most max_bytes).  A UTF-8 byte order mark at its start
 * (Notepad's "UTF-8") is not text.  A NUL byte, which would end its line
 * there, is an error naming the line (a UTF-16 file has one in line 1).
 * Errors name the file.
 */
int eeb_lines_read(struct eeb_lines *l, const char *path, size_t max_bytes, char *err,
                   size_t errlen);
void eeb_lines_free(struct eeb_lines *l);

#endif
