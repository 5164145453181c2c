/*
 * test_backends.c - the accelerator backends' table itself: every built-in
 * one is of the version this eeb drives and its capabilities say what it
 * does (fixed point reads back 24-bit weights, float32 does not, only a
 * board's backend is on hardware); a table of another version, or missing
 * a slot, is refused by name; on_hardware is optional and asked one way.
 */
#include "fpga/accel/eeb_accel.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define SIDE    8 /* test_tiny_net's input side and classes */
#define CLASSES 3

Test(backends, every_built_in_table_is_this_version_and_complete)
{
    int n = 0;
    for (const struct eeb_accel_ops *const *b = eeb_accel_list(); *b; b++, n++) {
        char err[256] = "";
        cr_expect_eq(eeb_accel_ops_check(*b, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_eq((*b)->version, EEB_ACCEL_OPS_VERSION, "%s", (*b)->name);
        cr_expect_eq(eeb_accel_find((*b)->name), *b, "%s is found by its name", (*b)->name);
    }
    const struct eeb_accel_ops *xrt = eeb_accel_find("xrt");
    cr_expect_eq(n, xrt ? 5 : 4, "emu, kernel, fp32, faulty and (with XRT) xrt");
    cr_expect_eq(eeb_accel_find("emu")->caps, EEB_ACCEL_CAP_FIXED_POINT);
    cr_expect_eq(eeb_accel_find("kernel")->caps, EEB_ACCEL_CAP_FIXED_POINT);
    cr_expect_eq(eeb_accel_find("fp32")->caps, 0u);
    cr_expect_eq(eeb_accel_find("faulty")->caps, EEB_ACCEL_CAP_WRAPPER);
    if (xrt)
        cr_expect_eq(xrt->caps, EEB_ACCEL_CAP_BOARD | EEB_ACCEL_CAP_FIXED_POINT);
}

/* What EEB_ACCEL_CAP_FIXED_POINT promises, checked on each CPU backend:
 * after a step, the weights read back are 24-bit fixed point, and float32
 * for the others. */
Test(backends, the_fixed_point_capability_says_what_read_model_gives)
{
    static const char *const names[] = {"emu", "kernel", "fp32"};
    uint8_t px[2 * SIDE * SIDE * 3];
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (uint8_t)(i * 37 % 251);
    int32_t labels[2] = {0, 2};
    for (int i = 0; i < 3; i++) {
        struct eeb_net *net = test_tiny_net();
        struct eeb_accel_config cfg;
        eeb_accel_config_default(&cfg);
        cfg.batch_max = 2, cfg.threads = 1;
        struct eeb_accel *a;
        char err[256];
        cr_assert_eq(eeb_accel_start(names[i], &cfg, net, &a, err, sizeof err), EEB_OK, "%s", err);
        struct eeb_batch b = {2, px, labels};
        struct eeb_train_result r;
        cr_assert_eq(a->ops->train_batch(a, &b, &r, err, sizeof err), EEB_OK, "%s", err);
        const struct eeb_accel_ops *ops = eeb_accel_find(names[i]);
        enum eeb_format want =
            ops->caps & EEB_ACCEL_CAP_FIXED_POINT ? EEB_FORMAT_FX24 : EEB_FORMAT_F32;
        net->format = want == EEB_FORMAT_F32 ? EEB_FORMAT_FX24 : EEB_FORMAT_F32; /* the other */
        cr_assert_eq(a->ops->read_model(a, net, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_eq(net->format, want, "%s", names[i]);
        /* none of them is a board */
        cr_expect_eq(eeb_accel_on_hardware(ops), 0, "%s", names[i]);
        eeb_accel_close(a);
        eeb_net_free(net);
    }
}

/* ---- tables from elsewhere ---- */

static int yes(void)
{
    return 1;
}

static int no(void)
{
    return 0;
}

Test(backends, a_table_of_another_version_or_missing_a_slot_is_refused_by_name)
{
    struct eeb_accel_ops t = *eeb_accel_find("emu");
    t.name = "tpu";
    char err[256] = "";
    cr_assert_eq(eeb_accel_ops_check(&t, err, sizeof err), EEB_OK, "%s", err);

    t.version = EEB_ACCEL_OPS_VERSION + 1;
    cr_assert_eq(eeb_accel_ops_check(&t, err, sizeof err), EEB_EVERSION);
    cr_expect_str_eq(err, "backend 'tpu': its ops table is version 2, this eeb drives version 1 "
                          "(build it against this eeb's fpga/accel/eeb_accel.h)");
    t.version = 0; /* a table that never set it, as tests' own tables once did */
    cr_assert_eq(eeb_accel_ops_check(&t, err, sizeof err), EEB_EVERSION);
    cr_expect(strstr(err, "backend 'tpu': its ops table is version 0"), "%s", err);

    t.version = EEB_ACCEL_OPS_VERSION;
    t.train_batch = NULL;
    cr_assert_eq(eeb_accel_ops_check(&t, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "backend 'tpu': its ops table has no train_batch");
    t.train_batch = eeb_accel_find("emu")->train_batch, t.name = NULL;
    cr_assert_eq(eeb_accel_ops_check(&t, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "backend '(no name)': its ops table has no name");
}

Test(backends, on_hardware_is_the_board_capability_unless_the_backend_says_not_now)
{
    struct eeb_accel_ops t = *eeb_accel_find("emu");
    cr_expect_eq(eeb_accel_on_hardware(&t), 0, "no board, no slot");
    t.on_hardware = yes;
    cr_expect_eq(eeb_accel_on_hardware(&t), 0, "no board: the slot cannot make one");
    t.caps |= EEB_ACCEL_CAP_BOARD;
    t.on_hardware = NULL;
    cr_expect_eq(eeb_accel_on_hardware(&t), 1, "optional: NULL means always on its board");
    t.on_hardware = no;
    cr_expect_eq(eeb_accel_on_hardware(&t), 0, "a board's backend, not on it now (noop shim)");
    t.on_hardware = yes;
    cr_expect_eq(eeb_accel_on_hardware(&t), 1);
}

Test(backends, opening_by_a_name_no_backend_answers_to_says_so)
{
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    struct eeb_accel *a = (struct eeb_accel *)&cfg; /* not NULL: open must clear it */
    char err[256];
    cr_expect_eq(eeb_accel_open("tpu", &cfg, &a, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "no backend 'tpu' in this build");
    cr_expect_null(a);
    cr_expect_null(eeb_accel_find("emu:fast"), "emu wraps nothing");
    cr_expect_null(eeb_accel_find("faultyemu"));
    cr_expect_null(eeb_accel_find(""));
}
