/*
 * test_classes.c - tasks/classes.c: what a class name may be, and the
 * comparison of two shards' class lists that eeb run, eeb model test and
 * eeb eval make.
 */
#include "common/eeb_common.h"
#include "tasks/eeb_classes.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(classes, names_as_they_come)
{
    char err[512];
    static const char *const good[] = {"dog", "traffic light", "diningtable", "T-shirt",
                                       "...", "a.b",           "ñandú"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        cr_assert_eq(eeb_class_name_check(good[i], strlen(good[i]), "here", err, sizeof err),
                     EEB_OK, "%s", err);
    char long_name[80];
    memset(long_name, 'x', 64);
    cr_assert_eq(eeb_class_name_check(long_name, 64, "x.txt:3", err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "x.txt:3: class name 'xxx"), "%s", err);
    cr_assert(strstr(err, "is longer than 63 bytes"), "%s", err);
    cr_assert_eq(eeb_class_name_check("a\nb", 3, NULL, err, sizeof err), EEB_EINVAL);
    cr_assert_str_eq(err, "class name 'a\\x0ab' has a control character");
}

static struct eeb_shard_info info_of(char (*names)[EEB_SHARD_MAX_NAME + 1], int n)
{
    return (struct eeb_shard_info){EEB_TASK_CLS, 8, 8, 3, 1, n, names, 0};
}

Test(classes, lists_compare_name_for_name_in_order)
{
    char a[3][EEB_SHARD_MAX_NAME + 1] = {"kiwi", "mango", "pear"};
    char b[3][EEB_SHARD_MAX_NAME + 1] = {"kiwi", "mango", "pear"};
    char c[2][EEB_SHARD_MAX_NAME + 1] = {"kiwi", "mango"};
    char err[512];
    struct eeb_shard_info ia = info_of(a, 3), ib = info_of(b, 3), ic = info_of(c, 2);
    cr_assert_eq(eeb_classes_compare(&ia, "a.eebd", &ib, "b.eebd", err, sizeof err), EEB_OK);

    snprintf(b[2], sizeof b[2], "Pear");
    cr_assert_eq(eeb_classes_compare(&ia, "a.eebd", &ib, "b.eebd", err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "a.eebd and b.eebd do not name the same classes: class 2 is 'pear' in "
                          "a.eebd, 'Pear' in b.eebd"),
              "%s", err);

    /* one list the other's start: the first class only one has */
    cr_assert_eq(eeb_classes_compare(&ic, "c.eebd", &ia, "a.eebd", err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "class 2 is 'pear' in a.eebd, and c.eebd has 2 classes, a.eebd 3"), "%s",
              err);
}
