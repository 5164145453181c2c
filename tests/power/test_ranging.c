/*
 * test_ranging.c - a PTDaemon's ranges set on the run's own workload (the
 * range slot, MLPerf's ranging mode): ranged at open on an idle load, the
 * analyzer is autoranged for a pass on the training load, then fixed to
 * what that load drew (volts, 1.1 x amps) for the testing pass, whose
 * readings are held to the uncertainty limit again; the ranges as found
 * are put back on close.
 */
#include "power/eeb_power.h"
#include "meter_emu.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_one(struct eeb_power_source *s, struct eeb_sample *x)
{
    char err[256];
    *x = (struct eeb_sample){.volts = NAN, .amps = NAN};
    s->uncertainty = NAN;
    return s->ops->read(s, eeb_mono_ns(), x, err, sizeof err);
}

Test(ranging, a_ptdaemon_is_ranged_on_the_workload_not_at_idle, .timeout = 30)
{
    struct meter_emu *emu = meter_emu_start(&(struct meter_emu_config){
        .protocol = METER_PTD, .volts = 10, .amps = 0.4, .uncertainty = "Uncertainty,0.3"});
    char uri[96], err[512];
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?interval=20", meter_emu_port(emu));
    struct eeb_power_source *s;
    cr_assert_eq(eeb_power_open(uri, &s, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(eeb_power_source_ranges(s));
    /* at open, the idle load's ranges: 4 W */
    char *log = meter_emu_log(emu);
    cr_expect(strstr(log, "SR,V,10\nSR,A,0.44\nGo,20,0,eeb\n"), "%s", log);
    free(log);

    /* the team's training load, 9 W */
    meter_emu_set(emu, 10, 0.9);
    struct eeb_power_ranges r;
    cr_assert_eq(eeb_power_source_range(s, EEB_POWER_RANGE_BEGIN, &r, err, sizeof err), EEB_OK,
                 "%s", err);
    cr_expect_str_eq(r.volts, "Auto");
    cr_expect_str_eq(r.amps, "Auto");
    cr_expect_str_eq(r.identity, "PTDaemon emulator (eeb tests), analyzer WT310E");
    struct eeb_sample x;
    for (int i = 0; i < 3; i++) {
        cr_expect_eq(read_one(s, &x), EEB_OK);
        cr_expect_float_eq(x.watts, 9, 1e-9);
        cr_expect(isnan(s->uncertainty), "the ranging pass's readings are not held");
    }
    cr_assert_eq(eeb_power_source_range(s, EEB_POWER_RANGE_END, &r, err, sizeof err), EEB_OK, "%s",
                 err);
    cr_expect_str_eq(r.volts, "10");
    cr_expect_str_eq(r.amps, "0.99");
    cr_expect_float_eq(r.max_amps, 0.9, 1e-12);
    /* the testing pass: fixed ranges, each reading's uncertainty asked */
    cr_expect_eq(read_one(s, &x), EEB_OK);
    cr_expect_float_eq(s->uncertainty, 0.003, 1e-12);
    log = meter_emu_log(emu);
    const char *pass = strstr(log, "Stop\nSR,V,Auto\nSR,A,Auto\nGo,20,0,eeb_ranging\nRL\nRL\nRL\n"
                                   "Stop\nSR,V,10\nSR,A,0.99\nGo,20,0,eeb\nRL\nUncertainty\n");
    cr_expect(pass, "%s", log);
    free(log);
    /* ended twice: no pass to end */
    cr_expect_eq(eeb_power_source_range(s, EEB_POWER_RANGE_END, &r, err, sizeof err), EEB_EINVAL);
    eeb_power_close(s);
    /* the analyzer as it was found (300 V, autoranging amps) */
    log = meter_emu_log(emu);
    cr_expect(strstr(log, "Stop\nSR,V,300.000000\nSR,A,Auto\n"), "%s", log);
    free(log);
    meter_emu_stop(emu);

    /* a meter opened to leave its ranges alone is not ranged */
    emu =
        meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD, .volts = 10, .amps = 1});
    snprintf(uri, sizeof uri, "ptd://127.0.0.1:%d?ranging=0", meter_emu_port(emu));
    cr_assert_eq(eeb_power_open(uri, &s, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(eeb_power_source_range(s, EEB_POWER_RANGE_BEGIN, &r, err, sizeof err),
                 EEB_ENOTSUP);
    cr_expect(strstr(err, "ranging=0"), "%s", err);
    eeb_power_close(s);
    meter_emu_stop(emu);
    /* nor one without ranges */
    cr_assert_eq(eeb_power_open("sim:watts=3", &s, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_not(eeb_power_source_ranges(s));
    cr_expect_eq(eeb_power_source_range(s, EEB_POWER_RANGE_BEGIN, &r, NULL, 0), EEB_ENOTSUP);
    eeb_power_close(s);
}
