/*
 * test_display.c - `eeb run`'s live line (harness/eeb_display.h): it fits
 * the terminal, says what it does not know instead of showing zeros or a
 * stale reading, and other messages never land on its tail.
 */
#include "harness/eeb_display.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static struct eeb_run_progress finetune(void)
{
    return (struct eeb_run_progress){.state = EEB_RUN_FINETUNE,
                                     .epoch = 12,
                                     .epochs = 100,
                                     .step = 12345,
                                     .steps = 100000,
                                     .elapsed_s = 1234.5,
                                     .t_max_s = 3600,
                                     .watts = 123.45,
                                     .reading_age_s = 0.01,
                                     .p_max_w = 150,
                                     .joules = 123456.7,
                                     .loss = 1.2345,
                                     .over_pmax = 1};
}

Test(display, the_line_fits_the_terminal_width)
{
    struct eeb_run_progress p = finetune();
    char line[512];
    for (int width = 20; width <= 200; width++) {
        eeb_display_line(&p, width, line, sizeof line);
        cr_expect_leq(strlen(line), (size_t)width - 1, "width %d: '%s'", width, line);
        cr_expect(strncmp(line, "fine-tune", 9) == 0, "width %d: '%s'", width, line);
    }
    /* at 80 columns a typical line keeps time, power, progress and energy */
    p.elapsed_s = 12.3, p.t_max_s = 30, p.watts = 6.79, p.p_max_w = 10, p.step = 1234;
    p.steps = 5000, p.joules = 45.6, p.over_pmax = 0;
    eeb_display_line(&p, 80, line, sizeof line);
    for (const char *
             want[] = {"12.3/30 s", "6.79 W / P_max 10 W", "step 1234/5000", "45.6 J", NULL},
            **w = want;
         *w; w++)
        cr_expect(strstr(line, *w), "'%s' lacks '%s'", line, *w);
    /* a wide terminal shows everything */
    eeb_display_line(&p, 200, line, sizeof line);
    cr_expect(strstr(line, "epoch 12/100") && strstr(line, "loss 1.2345"), "%s", line);
    cr_expect_leq(strlen(line), 110, "%s", line);
}

Test(display, no_loss_before_the_first_step)
{
    struct eeb_run_progress p = finetune();
    p.step = 0, p.loss = 0;
    char line[512];
    eeb_display_line(&p, 200, line, sizeof line);
    cr_expect(strstr(line, "loss -"), "%s", line);
    cr_expect(!strstr(line, "0.0000"), "%s", line);
}

Test(display, a_silent_meter_shows_no_reading_instead_of_its_last_watts)
{
    struct eeb_run_progress p = finetune();
    char line[512];
    p.reading_age_s = 7.2;
    eeb_display_line(&p, 200, line, sizeof line);
    cr_expect(strstr(line, "no reading for 7 s"), "%s", line);
    cr_expect(!strstr(line, "123.45 W"), "%s", line);
    p.reading_age_s = NAN;
    eeb_display_line(&p, 200, line, sizeof line);
    cr_expect(strstr(line, "no reading yet"), "%s", line);
    p.reading_age_s = 0.5;
    eeb_display_line(&p, 200, line, sizeof line);
    cr_expect(strstr(line, "123.45 W"), "%s", line);
}

/* On a terminal a message clears the live line and starts at column 0;
 * the next progress redraws the line below it. */
Test(display, messages_never_land_on_the_live_line)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_not_null(out);
    struct eeb_display d;
    cr_assert_eq(eeb_display_open(&d, out), 0);
    d.tty = 1, d.width = 80; /* as on a terminal */
    struct eeb_run_progress p = finetune();
    eeb_display_progress(&p, &d);
    fputs("eeb: registered as run 7\n", d.message);
    eeb_display_progress(&p, &d);
    eeb_display_close(&d);
    fclose(out);
    const char *msg = strstr(buf, "eeb: registered as run 7\n");
    cr_assert_not_null(msg, "%s", buf);
    cr_expect(msg - buf >= 4 && strncmp(msg - 4, "\r\033[K", 4) == 0,
              "the message does not start its own line: '%s'", buf);
    cr_expect(strncmp(msg + strlen("eeb: registered as run 7\n"), "\rfine-tune", 10) == 0, "%s",
              buf);
    cr_expect(buf[len - 1] == '\n', "the last live line is not ended: '%s'", buf);
    free(buf);
}

/* Not on a terminal: whole lines, no carriage returns or escapes. */
Test(display, a_log_gets_plain_lines)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct eeb_display d;
    cr_assert_eq(eeb_display_open(&d, out), 0);
    struct eeb_run_progress p = finetune();
    eeb_display_progress(&p, &d);
    fputs("a message\n", d.message);
    p.state = EEB_RUN_TEST, p.tested = 3, p.test_items = 9;
    eeb_display_progress(&p, &d);
    eeb_display_close(&d);
    fclose(out);
    cr_expect(!strchr(buf, '\r') && !strchr(buf, '\033'), "%s", buf);
    cr_expect(strstr(buf, "\na message\ntest  predicted 3/9 items\n"), "%s", buf);
    free(buf);
}

/* Without --power the run's opening line names the modeled source, not
 * "(null)". */
Test(display, a_run_without_power_names_its_source, .timeout = 120)
{
    const char *dir = test_tmpdir();
    char db[512], ft[512], test[512], model[512];
    snprintf(db, sizeof db, "%s/runs.db", dir);
    snprintf(ft, sizeof ft, "%s", test_cls_shard(64, 16, 1));
    snprintf(test, sizeof test, "%s", test_cls_shard(32, 16, 2));
    snprintf(model, sizeof model, "%s/m.eebm", dir);
    struct test_run r = test_eeb((const char *[]){"model", "pretrain", "--task", "cls", "--data",
                                                  ft, "-o", model, "--steps", "1", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"run", "--task", "cls", "--finetune", ft, "--test", test,
                                  "--model", model, "--db", db, "--epochs", "1", NULL});
    cr_expect(!strstr(r.err, "(null)"), "%s", r.err);
    cr_expect(strstr(r.err, "power modeled from the design (sim:profile=model) at 100 Hz"), "%s",
              r.err);
    test_run_free(&r);
}
