/*
 * test_source_ops.c - the power sources' table itself: every built-in one
 * is of the version this eeb drives and says truly where its readings come
 * from; a table of another version, or missing a slot, is refused by name;
 * the control slot is the one way a run moves a source, and a source
 * without it says so.
 */
#include "power/eeb_power.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define WHERE_FROM                                                                                 \
    (EEB_POWER_CAP_LIVE | EEB_POWER_CAP_RECORDED | EEB_POWER_CAP_SIMULATED | EEB_POWER_CAP_WRAPPER)

static const struct eeb_power_source_ops *source(const char *scheme)
{
    for (const struct eeb_power_source_ops *const *o = eeb_power_sources(); *o; o++)
        if (strcmp((*o)->scheme, scheme) == 0)
            return *o;
    cr_assert_fail("no source '%s:'", scheme);
    return NULL;
}

Test(source_ops, every_built_in_table_is_this_version_and_says_where_its_readings_come_from)
{
    int n = 0;
    for (const struct eeb_power_source_ops *const *o = eeb_power_sources(); *o; o++, n++) {
        char err[256] = "";
        cr_expect_eq(eeb_power_source_ops_check(*o, err, sizeof err), EEB_OK, "%s", err);
        cr_expect_eq((*o)->version, EEB_POWER_SOURCE_OPS_VERSION, "%s", (*o)->scheme);
        unsigned where = (*o)->caps & WHERE_FROM;
        cr_expect(where && !(where & (where - 1)), "%s: caps %#x, one of the four", (*o)->scheme,
                  (*o)->caps);
        /* only meters on this machine are found by looking */
        if ((*o)->list)
            cr_expect((*o)->caps & EEB_POWER_CAP_LIVE, "%s lists meters", (*o)->scheme);
    }
    cr_expect_eq(n, 7);
    cr_expect_eq(source("sim")->caps, EEB_POWER_CAP_SIMULATED);
    cr_expect_eq(source("replay")->caps, EEB_POWER_CAP_RECORDED);
    cr_expect_eq(source("faulty")->caps, EEB_POWER_CAP_WRAPPER);
    static const char *const live[] = {"hwmon", "rapl", "scpi", "ptd"};
    for (int i = 0; i < 4; i++)
        cr_expect_eq(source(live[i])->caps, EEB_POWER_CAP_LIVE, "%s", live[i]);
    /* network meters are found by address, not listed */
    cr_expect_null(source("scpi")->list);
    cr_expect_null(source("ptd")->list);
    cr_expect_not_null(source("hwmon")->list);
    /* the run's modeled power moves sim: only */
    for (const struct eeb_power_source_ops *const *o = eeb_power_sources(); *o; o++)
        cr_expect_eq((*o)->control != NULL, strcmp((*o)->scheme, "sim") == 0, "%s", (*o)->scheme);
}

/* The simulated meter's table, changed: what a source built against
 * another eeb's header would look like to this one. */
static int fake_read(struct eeb_power_source *s, int64_t t, struct eeb_sample *out, char *err,
                     size_t errlen)
{
    (void)s, (void)t, (void)err, (void)errlen;
    out->watts = 1;
    return EEB_OK;
}

Test(source_ops, a_table_of_another_version_or_missing_a_slot_is_refused_by_name)
{
    struct eeb_power_source_ops t = *source("sim");
    t.scheme = "wt5000";
    t.read = fake_read;
    char err[256] = "";
    cr_assert_eq(eeb_power_source_ops_check(&t, err, sizeof err), EEB_OK, "%s", err);

    t.version = EEB_POWER_SOURCE_OPS_VERSION + 1;
    cr_assert_eq(eeb_power_source_ops_check(&t, err, sizeof err), EEB_EVERSION);
    cr_expect_str_eq(err, "power source 'wt5000:': its ops table is version 3, this eeb drives "
                          "version 2 (build it against this eeb's power/eeb_power.h)");
    t.version = 0; /* a table that never set it */
    cr_assert_eq(eeb_power_source_ops_check(&t, err, sizeof err), EEB_EVERSION);
    cr_expect(strstr(err, "'wt5000:': its ops table is version 0"), "%s", err);

    t.version = EEB_POWER_SOURCE_OPS_VERSION;
    t.read = NULL;
    cr_assert_eq(eeb_power_source_ops_check(&t, err, sizeof err), EEB_EINVAL);
    cr_expect_str_eq(err, "power source 'wt5000:': its ops table has no read");
    /* the optional slots may be NULL */
    t.read = fake_read, t.list = NULL, t.control = NULL;
    cr_expect_eq(eeb_power_source_ops_check(&t, err, sizeof err), EEB_OK, "%s", err);
}

static double read_now(struct eeb_power_source *s, int64_t t_ns)
{
    struct eeb_sample x = {.volts = NAN, .amps = NAN};
    char err[256];
    cr_assert_eq(s->ops->read(s, t_ns, &x, err, sizeof err), EEB_OK, "%s", err);
    return x.watts;
}

Test(source_ops, control_moves_a_modeled_sim_and_no_other_source)
{
    char err[256] = "";
    struct eeb_power_source *s = test_power_open("sim:profile=model,watts=2");
    cr_assert_float_eq(read_now(s, 1000000000), 2, 0);
    cr_assert_eq(
        eeb_power_source_control(s, &(struct eeb_power_control){.watts = 9.25}, err, sizeof err),
        EEB_OK, "%s", err);
    cr_expect_float_eq(read_now(s, 1100000000), 9.25, 0);
    eeb_power_close(s);

    /* no slot: the wrapper takes none, and says which source */
    s = test_power_open("faulty:5:sim:profile=model,watts=2");
    cr_assert_eq(
        eeb_power_source_control(s, &(struct eeb_power_control){.watts = 9.25}, err, sizeof err),
        EEB_ENOTSUP);
    cr_expect_str_eq(err, "power source 'faulty:5:sim:profile=model,watts=2' takes no control");
    cr_expect_float_eq(read_now(s, 1000000000), 2, 0);
    /* and without an error buffer */
    cr_expect_eq(eeb_power_source_control(s, &(struct eeb_power_control){.watts = 1}, NULL, 0),
                 EEB_ENOTSUP);
    eeb_power_close(s);

    /* the slot, but a profile of its own */
    s = test_power_open("sim:profile=step,low=1,high=3,period=2");
    cr_assert_eq(
        eeb_power_source_control(s, &(struct eeb_power_control){.watts = 9.25}, err, sizeof err),
        EEB_ENOTSUP);
    cr_expect(strstr(err, "takes no control (sim:profile=model does)"), "%s", err);
    cr_expect_float_eq(read_now(s, 1000000000), 1, 0);
    eeb_power_close(s);
}
