/*
 * test_meters.c - the real-meter sources through their real interfaces:
 * hwmon through libsensors and RAPL through powercap, each over a fake
 * sysfs tree bind-mounted on /sys/class in a private mount namespace, and
 * the SCPI and PTDaemon clients against emulators on 127.0.0.1.
 */
#include "power/eeb_power.h"
#include "power/power_int.h"
#include "meter_emu.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tree[64];

/* Writes tree/rel (making its directories) holding text and a newline. */
static void put(const char *rel, const char *text)
{
    char path[256], parent[128], line[128];
    snprintf(parent, sizeof parent, "%.*s", (int)(strrchr(rel, '/') - rel), rel);
    test_mkdirs(tree, parent);
    snprintf(path, sizeof path, "%s/%s", tree, rel);
    snprintf(line, sizeof line, "%s\n", text);
    test_write_file(path, line, strlen(line));
}

/* A fresh tree mounted over /sys/class, or the test skipped. */
static void fake_sys_class(void)
{
    snprintf(tree, sizeof tree, "%s", test_tmpdir());
    test_mkdirs(tree, "hwmon");
    test_mkdirs(tree, "powercap");
}

static void mount_tree(void)
{
    const char *why = test_private_bind(tree, "/sys/class");
    if (why)
        cr_skip_test("fake sysfs tree: %s", why);
}

static struct eeb_sample read_ok(struct eeb_power_source *s, int64_t t_ns)
{
    struct eeb_sample x;
    char err[512];
    cr_assert_eq(s->ops->read(s, t_ns, &x, err, sizeof err), EEB_OK, "%s: %s", s->uri, err);
    return x;
}

static int read_fails(struct eeb_power_source *s, char *err, size_t errlen)
{
    struct eeb_sample x;
    int rc = s->ops->read(s, eeb_mono_ns(), &x, err, errlen);
    cr_assert_neq(rc, EEB_OK, "%s: a read that should fail did not", s->uri);
    return rc;
}

/* ---- hwmon ---- */

/* hwmon units: power and energy in microwatts and microjoules, in in
 * millivolts, curr in milliamps.  Four chips: an INA226 with a labelled
 * power rail and its unlabelled bus voltage and current; an INA3221 with
 * two volts x amps channels (the first labelled through in1 only) and a
 * current without a voltage, which is no rail; a card whose rail has both
 * an energy counter and a power reading; and an INA219 whose rail has the
 * INA226's label. */
static void hwmon_tree(void)
{
    put("hwmon/hwmon0/name", "ina226");
    put("hwmon/hwmon0/power1_input", "4250000");
    put("hwmon/hwmon0/power1_label", "VCCINT");
    put("hwmon/hwmon0/in1_input", "850");
    put("hwmon/hwmon0/curr1_input", "5000");
    put("hwmon/hwmon1/name", "ina3221");
    put("hwmon/hwmon1/in1_input", "12000");
    put("hwmon/hwmon1/in1_label", "VDD_IN");
    put("hwmon/hwmon1/curr1_input", "500");
    put("hwmon/hwmon1/in2_input", "5000");
    put("hwmon/hwmon1/curr2_input", "200");
    put("hwmon/hwmon1/curr3_input", "100");
    put("hwmon/hwmon2/name", "xcard");
    put("hwmon/hwmon2/energy1_input", "1000000");
    put("hwmon/hwmon2/power1_input", "99000000");
    put("hwmon/hwmon2/power1_label", "board");
    put("hwmon/hwmon2/energy1_label", "board");
    put("hwmon/hwmon3/name", "ina219");
    put("hwmon/hwmon3/power1_input", "1500000");
    put("hwmon/hwmon3/power1_label", "VCCINT");
}

Test(hwmon, rails_through_libsensors)
{
    fake_sys_class();
    hwmon_tree();
    mount_tree();

    struct eeb_power_source *s = test_power_open("hwmon:ina226/VCCINT");
    struct eeb_sample x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 4.25, 1e-12);
    cr_expect_float_eq(x.volts, 0.85, 1e-12, "in1 joins power1's rail by number");
    cr_expect_float_eq(x.amps, 5.0, 1e-12);
    cr_expect_eq(s->provenance, EEB_MEASURED);
    eeb_power_close(s);

    s = test_power_open("hwmon:ina3221-*/VDD_IN"); /* named by in1's label */
    x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 6.0, 1e-12, "12 V x 0.5 A");
    eeb_power_close(s);
    s = test_power_open("hwmon:ina3221/in2");
    x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 1.0, 1e-12, "5 V x 0.2 A");
    eeb_power_close(s);

    /* a chip's rails, and every rail, summed; curr3 alone is no power */
    s = test_power_open("hwmon:ina3221");
    x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 7.0, 1e-12);
    cr_expect(isnan(x.volts), "a sum of rails has no one voltage");
    eeb_power_close(s);

    /* the card's energy counter is preferred to its power reading (99 W):
     * 5 J over 2 s is 2.5 W, and the sum is a counter's */
    s = test_power_open("hwmon:*");
    cr_expect_eq(s->provenance, EEB_COUNTER);
    int64_t t = eeb_mono_ns();
    read_ok(s, t);
    put("hwmon/hwmon2/energy1_input", "6000000");
    x = read_ok(s, t + 2000000000);
    cr_expect_float_eq(x.watts, 4.25 + 7.0 + 2.5 + 1.5, 1e-9, "%.9f W", x.watts);
    eeb_power_close(s);
    s = test_power_open("hwmon:");
    eeb_power_close(s);

    test_power_open_fails("hwmon:*/VCCINT", EEB_EINVAL, "name the chip");
    test_power_open_fails("hwmon:ina226/VCCAUX", EEB_EINVAL, "no hwmon power rail matches");
    test_power_open_fails("hwmon:nosuchchip", EEB_EINVAL, "no hwmon power rail matches");
    test_power_open_fails("hwmon:ina226-bogus-bus-x", EEB_EINVAL, "not a chip name");

    /* a sensor that goes away fails the read, naming the rail, and reads
     * again once it is back */
    s = test_power_open("hwmon:ina219");
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/hwmon/hwmon3/power1_input", tree);
    cr_assert_eq(unlink(path), 0);
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EDEVICE);
    cr_expect(strstr(err, "ina219-virtual-0/VCCINT"), "%s", err);
    put("hwmon/hwmon3/power1_input", "1500000");
    x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 1.5, 1e-12);
    eeb_power_close(s);
}

Test(hwmon, eeb_power_list_shows_rails_like_sensors)
{
    fake_sys_class();
    hwmon_tree();
    mount_tree();
    struct test_run r = test_eeb((const char *[]){"power", "list", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    const char *want[] = {"hwmon:ina226-virtual-0/VCCINT",
                          "4.250 W",
                          "0.850 V",
                          "5.000 A",
                          "hwmon:ina3221-virtual-0/VDD_IN",
                          "(in1 x curr1)",
                          "hwmon:xcard-virtual-0/board",
                          "counter (energy1)"};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++)
        cr_expect(strstr(r.out, want[i]), "'%s' missing from:\n%s", want[i], r.out);
    cr_expect(!strstr(r.out, "curr3"), "a current alone is no rail:\n%s", r.out);
    test_run_free(&r);
}

/* ---- RAPL ---- */

static void rapl_zone(const char *dir, const char *name, const char *uj, const char *range)
{
    char rel[128];
    snprintf(rel, sizeof rel, "powercap/%s/name", dir);
    put(rel, name);
    snprintf(rel, sizeof rel, "powercap/%s/energy_uj", dir);
    put(rel, uj);
    snprintf(rel, sizeof rel, "powercap/%s/max_energy_range_uj", dir);
    put(rel, range);
}

Test(rapl, packages_summed_and_the_counter_unwrapped)
{
    fake_sys_class();
    rapl_zone("intel-rapl:0", "package-0", "999000", "1000000");
    rapl_zone("intel-rapl:0:0", "core", "5", "1000000");
    rapl_zone("intel-rapl:1", "package-1", "0", "262143328850");
    rapl_zone("intel-rapl:1:0", "core", "7", "262143328850");
    rapl_zone("intel-rapl:2", "psys", "0", "262143328850");
    mount_tree();

    /* package-0 wraps: 999000 -> 500 is 1500 uJ, not -998500 */
    struct eeb_power_source *s = test_power_open("rapl:package-0");
    cr_expect_eq(s->provenance, EEB_COUNTER);
    int64_t t = eeb_mono_ns();
    read_ok(s, t);
    put("powercap/intel-rapl:0/energy_uj", "500");
    struct eeb_sample x = read_ok(s, t + 1000000000);
    cr_expect_float_eq(x.watts, 0.0015, 1e-15, "%.9f W", x.watts);
    eeb_power_close(s);

    /* the default sums the packages only: not psys, not their cores */
    s = test_power_open("rapl:");
    t = eeb_mono_ns();
    read_ok(s, t);
    put("powercap/intel-rapl:0/energy_uj", "2500500");
    put("powercap/intel-rapl:1/energy_uj", "4000000");
    put("powercap/intel-rapl:2/energy_uj", "90000000");
    put("powercap/intel-rapl:1:0/energy_uj", "3000007");
    x = read_ok(s, t + 2000000000);
    cr_expect_float_eq(x.watts, (2.5 + 4.0) / 2, 1e-12, "%.9f W", x.watts);
    eeb_power_close(s);

    s = test_power_open("rapl:intel-rapl:1:0");
    eeb_power_close(s);
    test_power_open_fails("rapl:core", EEB_EINVAL, "name its directory");
    test_power_open_fails("rapl:dram", EEB_EINVAL, "no RAPL zone");

    char path[256];
    snprintf(path, sizeof path, "%s/powercap/intel-rapl:2/max_energy_range_uj", tree);
    cr_assert_eq(unlink(path), 0);
    test_power_open_fails("rapl:psys", EEB_EINVAL,
                          "/sys/class/powercap/intel-rapl:2/max_energy_range_uj");
}

/* ---- SCPI ---- */

static struct meter_emu *emu;

static const char *emu_uri(const char *scheme, const char *options)
{
    static char uri[128];
    snprintf(uri, sizeof uri, "%s://127.0.0.1:%d%s%s", scheme, meter_emu_port(emu),
             *options ? "?" : "", options);
    return uri;
}

Test(scpi, a_wt300_set_up_and_read)
{
    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_SCPI,
                                                     .volts = 230.0,
                                                     .amps = 0.5,
                                                     .odd_at = 2,
                                                     .odd_reply = "2.3000E+02,oops,1.1500E+02"});
    struct eeb_power_source *s = test_power_open(emu_uri("scpi", "element=2"));
    cr_expect_eq(s->provenance, EEB_MEASURED);
    struct eeb_sample x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.volts, 230.0, 1e-9);
    cr_expect_float_eq(x.amps, 0.5, 1e-9);
    cr_expect_float_eq(x.watts, 115.0, 1e-9);
    char *log = meter_emu_log(emu);
    cr_expect(strstr(log, "*IDN?\n:COMMunicate:HEADer OFF\n:NUMeric:FORMat ASCii\n"
                          ":NUMeric:NORMal:NUMber 3\n:NUMeric:NORMal:ITEM1 U,2\n"
                          ":NUMeric:NORMal:ITEM2 I,2\n:NUMeric:NORMal:ITEM3 P,2\n"
                          ":NUMeric:NORMal:NUMber?\n:NUMeric:NORMal:VALue?\n"),
              "%s", log);
    free(log);

    /* an unparseable reply is an error quoting it */
    char err[512];
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EFORMAT);
    cr_expect(strstr(err, "'2.3000E+02,oops,1.1500E+02'"), "%s", err);
    x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 115.0, 1e-9);
    eeb_power_close(s);
    meter_emu_stop(emu);

    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_SCPI,
                                                     .volts = 1,
                                                     .amps = 1,
                                                     .odd_at = 1,
                                                     .odd_reply = "9.91E+37,9.91E+37,9.91E+37"});
    s = test_power_open(emu_uri("scpi", ""));
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EDEVICE);
    cr_expect(strstr(err, "overrange or no data"), "%s", err);
    eeb_power_close(s);
    test_power_open_fails(emu_uri("scpi", "element=4"), EEB_EINVAL, "element=1..3");
    meter_emu_stop(emu);

    test_power_open_fails("scpi:127.0.0.1:5025", EEB_EINVAL, "//HOST:PORT");
    test_power_open_fails("scpi://127.0.0.1:", EEB_EINVAL, "//HOST:PORT");
    test_power_open_fails("scpi://127.0.0.1:1", EEB_EDEVICE, "scpi://127.0.0.1:1: cannot connect");
}

/* A meter that stalls past the timeout, then one that hangs up: each
 * fails its read, and the next read reconnects and sets the meter up
 * again. */
Test(scpi, stalls_and_disconnects_fail_a_read_then_reconnect)
{
    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_SCPI,
                                                     .volts = 12,
                                                     .amps = 2,
                                                     .stall_at = 2,
                                                     .stall_s = 0.5,
                                                     .drop_at = 4});
    struct eeb_power_source *s = test_power_open(emu_uri("scpi", "timeout=0.2"));
    char err[512];
    read_ok(s, eeb_mono_ns());
    int64_t t0 = eeb_mono_ns();
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_ETIMEOUT);
    double waited = (double)(eeb_mono_ns() - t0) / 1e9;
    cr_expect_lt(waited, 0.45, "the timeout did not bound the wait: %.3f s", waited);
    cr_expect(strstr(err, "no reply to ':NUMeric:NORMal:VALue?' within 200 ms"), "%s", err);
    usleep(400 * 1000); /* the meter comes back from its stall */
    struct eeb_sample x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 24.0, 1e-9);
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EDEVICE);
    cr_expect(strstr(err, "closed the connection"), "%s", err);
    x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 24.0, 1e-9);
    cr_expect_eq(meter_emu_connections(emu), 3);
    eeb_power_close(s);
    meter_emu_stop(emu);
}

/* ---- PTDaemon ---- */

Test(ptd, a_measurement_started_read_and_stopped)
{
    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD,
                                                     .volts = 229.5,
                                                     .amps = 0.25,
                                                     .odd_at = 2,
                                                     .odd_reply = "Watts,n/a,Volts,229.5"});
    struct eeb_power_source *s =
        test_power_open(emu_uri("ptd", "interval=500,name=board-7,ranging=0"));
    struct eeb_sample x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 57.375, 1e-9);
    cr_expect_float_eq(x.volts, 229.5, 1e-9);
    cr_expect_float_eq(x.amps, 0.25, 1e-9);
    char err[512];
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EFORMAT);
    cr_expect(strstr(err, "'Watts,n/a,Volts,229.5'"), "%s", err);
    eeb_power_close(s);
    char *log = meter_emu_log(emu);
    /* a PTDaemon without Uncertainty is asked once */
    cr_expect_str_eq(log, "Hello\nIdentify\nGo,500,0,board-7\nRL\nUncertainty\nRL\nStop\n");
    free(log);
    meter_emu_stop(emu);

    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD, .not_ptd = 1});
    test_power_open_fails(emu_uri("ptd", ""), EEB_EFORMAT,
                          "not a PTDaemon: 'Hello' answered '220 mail");
    test_power_open_fails(emu_uri("ptd", "name=a b"), EEB_EINVAL, "name=a b");
    meter_emu_stop(emu);

    emu = meter_emu_start(
        &(struct meter_emu_config){.protocol = METER_PTD,
                                   .volts = 1,
                                   .amps = 1,
                                   .odd_at = 1,
                                   .odd_reply = "Watts,-1.000000,Volts,-1.000000,Amps,-1.000000"});
    s = test_power_open(emu_uri("ptd", "ranging=0"));
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EDEVICE);
    cr_expect(strstr(err, "no valid reading"), "%s", err);
    eeb_power_close(s);
    meter_emu_stop(emu);
}

Test(ptd, a_dropped_connection_restarts_the_measurement)
{
    emu = meter_emu_start(
        &(struct meter_emu_config){.protocol = METER_PTD, .volts = 10, .amps = 1, .drop_at = 2});
    struct eeb_power_source *s = test_power_open(emu_uri("ptd", "ranging=0"));
    char err[512];
    read_ok(s, eeb_mono_ns());
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EDEVICE);
    struct eeb_sample x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 10.0, 1e-9);
    eeb_power_close(s);
    char *log = meter_emu_log(emu);
    cr_expect_str_eq(log, "Hello\nIdentify\nGo,1000,0,eeb\nRL\nUncertainty\nRL\n"
                          "Hello\nIdentify\nGo,1000,0,eeb\nRL\nStop\n");
    free(log);
    meter_emu_stop(emu);
}

/* MLPerf's ranging pass before the measurement: the ranges as found (RR),
 * autoranging, a measurement of its own, then volts and 1.1 x amps as the
 * ranges of the measurement proper -- set again when a dropped connection
 * is made again -- and the ranges found put back on close.  The identity
 * and the ranges are the source's note, which the run's record keeps. */
Test(ptd, a_ranging_pass_sets_the_ranges_before_the_measurement)
{
    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD,
                                                     .volts = 229.5,
                                                     .amps = 0.25,
                                                     .drop_at = 5,
                                                     .uncertainty = "Uncertainty,0.41"});
    struct eeb_power_source *s = test_power_open(emu_uri("ptd", "interval=20,name=board-7"));
    struct eeb_sample x = read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(x.watts, 57.375, 1e-9);
    cr_expect_float_eq(s->uncertainty, 0.0041, 1e-12, "%g", s->uncertainty);
    char err[512];
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EDEVICE); /* reading 5: dropped */
    read_ok(s, eeb_mono_ns());
    cr_assert_not_null(s->note);
    cr_expect(strstr(s->note, "Identify: 'PTDaemon emulator (eeb tests), analyzer WT310E'"), "%s",
              s->note);
    cr_expect(strstr(s->note, "SR,V,229.5 and SR,A,0.275"), "%s", s->note);
    cr_expect(strstr(s->note, "put back to 300.000000 V and Auto A"), "%s", s->note);
    eeb_power_close(s);
    char *log = meter_emu_log(emu);
    cr_expect_str_eq(log, "Hello\nIdentify\nRR\nSR,V,Auto\nSR,A,Auto\nGo,20,0,board-7_ranging\n"
                          "RL\nRL\nRL\nStop\nSR,V,229.5\nSR,A,0.275\nGo,20,0,board-7\n"
                          "RL\nUncertainty\nRL\n"
                          "Hello\nIdentify\nSR,V,229.5\nSR,A,0.275\nGo,20,0,board-7\n"
                          "RL\nUncertainty\nStop\nSR,V,300.000000\nSR,A,Auto\n");
    free(log);

    /* ranging=0 leaves the ranges alone, and says so */
    s = test_power_open(emu_uri("ptd", "interval=20,ranging=0"));
    cr_expect(strstr(s->note, "ranges left as they were (ranging=0)"), "%s", s->note);
    eeb_power_close(s);
    test_power_open_fails(emu_uri("ptd", "ranging=2"), EEB_EINVAL, "ranging=0|1");
    meter_emu_stop(emu);

    /* a pass that saw no volts and amps fails the open, and the analyzer
     * is left as it was found */
    emu = meter_emu_start(&(struct meter_emu_config){.protocol = METER_PTD, .volts = 0, .amps = 0});
    test_power_open_fails(emu_uri("ptd", "interval=20"), EEB_EDEVICE,
                          "no valid reading of volts and amps in 3 readings");
    log = meter_emu_log(emu);
    cr_expect(strstr(log, "RL\nStop\nStop\nSR,V,300.000000\nSR,A,Auto\n"), "%s", log);
    free(log);
    meter_emu_stop(emu);
}

/* Through `eeb power log`: a meter that stalls mid-run for 0.6 s leaves a
 * gap; sampling goes on around it, the fault is an event quoting why, and
 * the summary calls the run invalid for the gap. */
Test(scpi, a_stall_mid_log_is_a_recorded_gap_and_an_invalid_run)
{
    emu = meter_emu_start(&(struct meter_emu_config){
        .protocol = METER_SCPI, .volts = 5, .amps = 2, .stall_at = 60, .stall_s = 0.6});
    char db[256];
    snprintf(db, sizeof db, "%s/meter.db", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"power", "log", "--source", emu_uri("scpi", "timeout=0.2"),
                                  "--rate", "100", "--duration", "2", "--db", db, "-q", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    meter_emu_stop(emu);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'power_fault' AND "
                                  "json_extract(payload, '$.reason') LIKE '%no reply to%'"),
                 1);
    cr_expect_eq(test_sql_int(db, "SELECT count(*) FROM events WHERE kind = 'power_recovered'"), 1);
    long long gap = test_sql_int(db, "SELECT max(d) FROM (SELECT t_mono_ns - lag(t_mono_ns) OVER "
                                     "(ORDER BY t_mono_ns) AS d FROM samples)");
    /* the stall, less the time the reads spent timing out inside it */
    cr_expect(gap > 350000000LL && gap < 900000000LL, "a gap of %.3f s, not 0.4 to 0.6 s",
              gap / 1e9);
    r = test_eeb((const char *[]){"power", "summary", db, NULL});
    cr_expect(strstr(r.out, "INVALID") || strstr(r.out, "invalid"), "%s", r.out);
    cr_expect(strstr(r.out, "gap"), "%s", r.out);
    test_run_free(&r);
}

/* Each reading's uncertainty, asked after RL: PTDaemon's percent as a
 * fraction, in the forms its messages use; unknown is INFINITY, and a
 * reply that is none of them fails the read quoting it. */
Test(ptd, each_readings_uncertainty_is_asked_and_kept)
{
    static const struct {
        const char *reply;
        double fraction;
    } forms[] = {
        {"Uncertainty,2.0", 0.02},
        {"0.5", 0.005},
        {"Uncertainty: 1.05%", 0.0105},
        {"uncertainty 0.41 %", 0.0041},
        {"Uncertainty unknown for the last measurement sample!", INFINITY},
        {"Uncertainty,-1.000000", INFINITY},
    };
    char err[512];
    for (size_t i = 0; i < sizeof forms / sizeof *forms; i++) {
        double u = NAN;
        cr_expect_eq(power_ptd_uncertainty("ptd://m:1", forms[i].reply, &u, err, sizeof err),
                     EEB_OK, "%s: %s", forms[i].reply, err);
        cr_expect(u == forms[i].fraction || fabs(u - forms[i].fraction) < 1e-12, "%s: %g",
                  forms[i].reply, u);
    }
    static const char *const bad[] = {"Uncertainty,n/a", "", "2.0 %%", "Uncertainty,1.0,Samples,9"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double u = 7;
        cr_expect_eq(power_ptd_uncertainty("ptd://m:1", bad[i], &u, err, sizeof err), EEB_EFORMAT,
                     "%s", bad[i]);
        cr_expect_eq(u, 7, "a refused reply leaves the figure alone");
        cr_expect(strstr(err, "the uncertainty is not a number in PTDaemon's reply"), "%s", err);
    }

    emu = meter_emu_start(&(struct meter_emu_config){
        .protocol = METER_PTD, .volts = 10, .amps = 0.5, .uncertainty = "Uncertainty,2.0"});
    struct eeb_power_source *s = test_power_open(emu_uri("ptd", "interval=20"));
    cr_expect(isnan(s->uncertainty), "none before a reading: %g", s->uncertainty);
    read_ok(s, eeb_mono_ns());
    cr_expect_float_eq(s->uncertainty, 0.02, 1e-12, "%g", s->uncertainty);
    eeb_power_close(s);
    meter_emu_stop(emu);

    emu = meter_emu_start(&(struct meter_emu_config){
        .protocol = METER_PTD, .volts = 10, .amps = 0.5, .uncertainty = "Uncertainty,oops"});
    s = test_power_open(emu_uri("ptd", "interval=20"));
    cr_expect_eq(read_fails(s, err, sizeof err), EEB_EFORMAT);
    cr_expect(strstr(err, "'Uncertainty,oops'"), "%s", err);
    eeb_power_close(s);
    meter_emu_stop(emu);
}
