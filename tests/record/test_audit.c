/*
 * test_audit.c - the training audit's slice (record/audit.c): what a run,
 * the judge and a server draw from the same seed and set.
 */
#include "record/eeb_record.h"

#include <criterion/criterion.h>
#include <string.h>

TestSuite(audit);

/* 16 distinct items of the set, ascending, the same for the same seed;
 * another seed draws others; a set of fewer than 16 is audited whole. */
Test(audit, the_slice_is_drawn_from_the_seed)
{
    uint64_t a[EEB_TRAINING_AUDIT_ITEMS], b[EEB_TRAINING_AUDIT_ITEMS], c[EEB_TRAINING_AUDIT_ITEMS];
    cr_assert_eq(eeb_run_training_audit_slice(7, 256, a), 16);
    for (int i = 0; i < 16; i++) {
        cr_expect_lt(a[i], 256);
        if (i)
            cr_expect_lt(a[i - 1], a[i], "items %d and %d", i - 1, i);
    }
    cr_assert_eq(eeb_run_training_audit_slice(7, 256, b), 16);
    cr_expect_arr_eq(a, b, sizeof a);
    cr_assert_eq(eeb_run_training_audit_slice(8, 256, c), 16);
    cr_expect_neq(memcmp(a, c, sizeof a), 0, "seeds 7 and 8 draw the same slice");
    cr_assert_eq(eeb_run_training_audit_slice(7, 5, a), 5);
    for (int i = 0; i < 5; i++)
        cr_expect_eq(a[i], (uint64_t)i);
    cr_assert_eq(eeb_run_training_audit_slice(7, 16, a), 16);
    for (int i = 0; i < 16; i++)
        cr_expect_eq(a[i], (uint64_t)i);
}
