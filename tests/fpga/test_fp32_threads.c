/*
 * test_fp32_threads.c - the fp32 backend chooses OpenBLAS's thread count
 * itself (one unless asked), so that neither the machine's core count nor
 * a busy machine's thread contention changes a pre-training.
 */
#include "fpga/accel/eeb_accel.h"
#include "fpga/net/eeb_net.h"

#include <cblas.h>
#include <criterion/criterion.h>
#include <string.h>

static struct eeb_net *tiny(void)
{
    struct eeb_net *net = eeb_net_new((struct eeb_shape){8, 8, 3});
    int l = eeb_net_fc(net, eeb_net_gap(net, eeb_net_conv(net, EEB_NET_INPUT, 4, 3, 1, 1)), 3);
    cr_assert_geq(eeb_net_softmax_ce(net, l), 0, "%s", net->err);
    eeb_net_init(net, 1);
    return net;
}

static void threads_after_start(int asked, int want)
{
    struct eeb_net *net = tiny();
    struct eeb_accel_config cfg;
    eeb_accel_config_default(&cfg);
    cfg.threads = asked;
    openblas_set_num_threads(4); /* as OpenBLAS starts on a 4-core machine */
    struct eeb_accel *a;
    char err[256];
    cr_assert_eq(eeb_accel_start("fp32", &cfg, net, &a, err, sizeof err), EEB_OK, "%s", err);
    cr_expect_eq(openblas_get_num_threads(), want, "asked %d", asked);
    struct eeb_accel_stats st;
    a->ops->stats(a, &st);
    char says[32];
    snprintf(says, sizeof says, "%d thread%s", want, want == 1 ? "" : "s");
    cr_expect(strstr(st.detail, says), "%s", st.detail);
    eeb_accel_close(a);
    eeb_net_free(net);
}

Test(fp32_threads, one_openblas_thread_unless_asked)
{
    threads_after_start(0, 1);
}

Test(fp32_threads, the_threads_asked_for)
{
    threads_after_start(2, 2);
}
