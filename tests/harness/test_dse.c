/*
 * test_dse.c - `eeb dse` as a user runs it: the front is a Pareto front,
 * the best design is the best S of all that fit and S is the rules'
 * formula; the calibration table; one design in detail; bad input.
 */
#include "fpga/net/eeb_model.h"
#include "fpga/model/eeb_perf.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A small classifier written as an .eebm; its path. */
static const char *small_model(void)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/small.eebm", test_tmpdir());
    struct eeb_net *net = eeb_net_new((struct eeb_shape){32, 32, 3});
    int l = eeb_net_relu(net, eeb_net_conv(net, EEB_NET_INPUT, 32, 3, 2, 1));
    l = eeb_net_relu(net, eeb_net_conv(net, l, 64, 3, 2, 1));
    cr_assert(eeb_net_softmax_ce(net, eeb_net_fc(net, eeb_net_gap(net, l), 10)) >= 0);
    eeb_net_init(net, 5);
    char err[256];
    cr_assert_eq(eeb_model_save(path, net, EEB_TASK_CLS, err, sizeof err), 0, "%s", err);
    eeb_net_free(net);
    return path;
}

Test(dse, front_is_pareto_and_best_is_the_best_s)
{
    const char *model = small_model();
    const char *all[] = {"dse", "--model", model, "--device", "zcu104", "--task",
                         "cls", "--ms",    "0.8", "--all",    "--json", NULL};
    json_t *o = test_eeb_json(all, 0);
    cr_assert(json_is_true(json_object_get(o, "modeled")));
    json_t *designs = json_object_get(o, "designs"), *best = json_object_get(o, "best");
    size_t n = json_array_size(designs);
    cr_assert_eq((double)n, test_json_num(o, "fit"));
    cr_assert(n > 10 && test_json_num(o, "fit") < test_json_num(o, "tried"),
              "some designs must not fit the zcu104");
    double best_s = -1;
    size_t front = 0, i, j;
    json_t *d, *e;
    json_array_foreach(designs, i, d)
    {
        double p = test_json_num(d, "power_w"), t = test_json_num(d, "t_s");
        int pass = json_is_true(json_object_get(d, "pass"));
        cr_assert_eq(pass, p <= 10, "P_max 10 W: %g W", p);
        cr_assert(t <= 30 + 1e-9);
        cr_assert_float_eq(test_json_num(d, "energy_j"), p * t, 1e-6);
        if (!pass)
            continue;
        /* S by hand with cls's v1 weights 0.1, 0.1, 0.4, 0.4. */
        double s =
            1 - (0.1 * test_json_num(d, "m_u") + 0.1 * t / 30 + 0.4 * p / 10 + 0.4 * (1 - 0.8));
        cr_assert_float_eq(test_json_num(d, "s"), s, 1e-9);
        best_s = fmax(best_s, s);
        if (!json_is_true(json_object_get(d, "pareto")))
            continue;
        front++;
        /* No design that passes is as good in T, E, P and M_u and better in one. */
        json_array_foreach(designs, j, e)
        {
            if (!json_is_true(json_object_get(e, "pass")) || i == j)
                continue;
            const char *k[] = {"t_s", "energy_j", "power_w", "m_u"};
            int le = 1, lt = 0;
            for (int q = 0; q < 4; q++)
                le &= test_json_num(e, k[q]) <= test_json_num(d, k[q]),
                    lt |= test_json_num(e, k[q]) < test_json_num(d, k[q]);
            cr_assert_not(le && lt, "%s dominated by %s",
                          json_string_value(json_object_get(d, "design")),
                          json_string_value(json_object_get(e, "design")));
        }
    }
    cr_assert(front >= 2);
    cr_assert_float_eq(test_json_num(best, "s"), best_s, 1e-12);
    cr_assert(json_is_true(json_object_get(best, "pareto")));
    cr_assert(strstr(json_string_value(json_object_get(best, "design")), "device=zcu104"));
    json_decref(o);

    /* A budget no board design meets: exit 3 and says so. */
    const char *tight[] = {"dse",    "--model", model,    "--device", "zcu104",
                           "--task", "cls",     "--pmax", "2",        NULL};
    struct test_run r = test_eeb(tight);
    cr_assert_eq(r.status, 3, "%s", r.err);
    cr_assert(strstr(r.out, "no design on the zcu104 stays within P_max 2 W"), "%s", r.out);
    test_run_free(&r);
}

Test(dse, calibration_and_one_design)
{
    const char *cal[] = {"dse", "--calibration", "--json", NULL};
    json_t *o = test_eeb_json(cal, 0);
    cr_assert_eq(json_array_size(json_object_get(o, "layers")), 11);
    cr_assert(test_json_num(o, "worst_error") <= 0.20);
    cr_assert(test_json_num(o, "worst_error") > 0.01, "a residual of zero would be a copied table");
    json_decref(o);

    const char *model = small_model();
    const char *one[] = {"dse",
                         "--model",
                         model,
                         "--task",
                         "cls",
                         "--design",
                         "device=zcu102,pes=8,macs=16,clock_mhz=200",
                         "--layers",
                         NULL};
    struct test_run r = test_eeb(one);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "modeled: device=zcu102,pes=8,macs=16,clock_mhz=200,ddr=1"), "%s",
              r.out);
    cr_assert(strstr(r.out, "bwd_weight"), "%s", r.out);
    cr_assert(strstr(r.out, "16x16 3>32"), "the first conv's row: %s", r.out);
    test_run_free(&r);
}

Test(dse, bad_input_names_what_is_wrong)
{
    const char *model = small_model();
    static const struct {
        const char *args[12];
        int status;
        const char *says;
    } cases[] = {
        {{"dse", "--model", "MODEL", "--device", "vc709", "--task", "cls", NULL},
         2,
         "--device 'vc709' is not"},
        {{"dse", "--model", "MODEL", "--device", "zcu104", NULL}, 2, "--task is required"},
        {{"dse", "--device", "zcu104", "--task", "cls", NULL}, 2, "--model FILE.eebm"},
        {{"dse", "--model", "/nonexistent.eebm", "--device", "zcu104", "--task", "cls", NULL},
         1,
         "/nonexistent.eebm"},
        {{"dse", "--model", "MODEL", "--task", "cls", "--design", "pes=0", NULL},
         1,
         "pes '0' is not an integer"},
        {{"dse", "--model", "MODEL", "--task", "cls", "--design", "weight_kib=1", NULL},
         1,
         "weight_kib=1 is too small for this network"},
        {{"dse", "--model", "MODEL", "--device", "u250", "--task", "cls", "--layers", NULL},
         2,
         "--layers needs --design"},
        {{"dse", "--model", "MODEL", "--device", "u250", "--task", "cls", "--ms", "2", NULL},
         2,
         "--ms must be in [0, 1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *args[12];
        for (int a = 0; a < 12; a++)
            args[a] = cases[i].args[a] && strcmp(cases[i].args[a], "MODEL") == 0 ? model
                                                                                 : cases[i].args[a];
        struct test_run r = test_eeb(args);
        cr_assert_eq(r.status, cases[i].status, "case %zu: exit %d: %s", i, r.status, r.err);
        cr_assert(strstr(r.err, cases[i].says), "case %zu: %s", i, r.err);
        test_run_free(&r);
    }
}
