/*
 * test_lines.c - tasks/lines.c, the reader of list files (class lists,
 * image sets, split lists): what editors on other systems save, a UTF-8
 * byte order mark and UTF-16, as well as CRLF and blank lines.
 */
#include "common/eeb_common.h"
#include "tasks/eeb_lines.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const char *write_list(const void *bytes, size_t len)
{
    static char path[300];
    snprintf(path, sizeof path, "%s/list.txt", test_tmpdir());
    test_write_file(path, bytes, len);
    return path;
}

Test(lines, trimmed_lines_with_their_numbers)
{
    static const char text[] = "  pear \r\n\r\n\tkiwi\nmango";
    struct eeb_lines l;
    char err[512];
    cr_assert_eq(eeb_lines_read(&l, write_list(text, sizeof text - 1), 1 << 20, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(l.n, 3);
    cr_assert_str_eq(l.text[0], "pear");
    cr_assert(strcmp(l.text[1], "kiwi") == 0 && l.lineno[1] == 3);
    cr_assert(strcmp(l.text[2], "mango") == 0 && l.lineno[2] == 4);
    eeb_lines_free(&l);
}

/* Notepad's "UTF-8" and PowerShell's Out-File -Encoding utf8 begin the
 * file with EF BB BF; it is not part of the first line. */
Test(lines, a_utf8_byte_order_mark_is_not_text)
{
    static const char text[] = "\xEF\xBB\xBFpear\r\nkiwi\r\n";
    struct eeb_lines l;
    char err[512];
    cr_assert_eq(eeb_lines_read(&l, write_list(text, sizeof text - 1), 1 << 20, err, sizeof err),
                 EEB_OK, "%s", err);
    cr_assert_eq(l.n, 2);
    cr_assert_str_eq(l.text[0], "pear");
    cr_assert_eq(l.lineno[0], 1);
    eeb_lines_free(&l);

    /* alone, it is an empty file */
    cr_assert_eq(eeb_lines_read(&l, write_list(text, 3), 1 << 20, err, sizeof err), EEB_OK);
    cr_assert_eq(l.n, 0);
    eeb_lines_free(&l);
}

/* A NUL byte used to end the line there, silently: the rest of it, and
 * in UTF-16 every character after the first, was lost. */
Test(lines, a_nul_byte_is_refused_with_its_line)
{
    static const char text[] = "pear\nki\0wi\nmango\n";
    struct eeb_lines l;
    char err[512];
    cr_assert_eq(eeb_lines_read(&l, write_list(text, sizeof text - 1), 1 << 20, err, sizeof err),
                 EEB_EFORMAT);
    cr_assert(strstr(err, "list.txt:2: a NUL byte"), "%s", err);
    cr_assert(strstr(err, "UTF-16"), "%s", err);

    /* Notepad's "Unicode": UTF-16LE with its mark FF FE, "pear\r\n" */
    static const char utf16[] = "\xFF\xFEp\0e\0a\0r\0\r\0\n\0";
    cr_assert_eq(eeb_lines_read(&l, write_list(utf16, sizeof utf16 - 1), 1 << 20, err, sizeof err),
                 EEB_EFORMAT);
    cr_assert(strstr(err, "list.txt:1: a NUL byte"), "%s", err);
}
