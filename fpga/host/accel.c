/*
 * accel.c - the registry of accelerator backends built into this binary.
 */
#include "host_int.h"

#include <string.h>

static const struct eeb_accel_ops *const backends[] = {
    &eeb_accel_emu_ops,
    &eeb_accel_kernel_ops,
    &eeb_accel_fp32_ops,
#ifdef EEB_HAVE_XRT
    &eeb_accel_xrt_ops,
#endif
    NULL,
};

int eeb_accel_on_hardware(const struct eeb_accel_ops *ops)
{
    return ops->on_hardware && ops->on_hardware();
}

const struct eeb_accel_ops *const *eeb_accel_list(void)
{
    return backends;
}

const struct eeb_accel_ops *eeb_accel_find(const char *name)
{
    for (int i = 0; backends[i]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

void eeb_accel_config_default(struct eeb_accel_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->batch_max = 32;
    cfg->lr = 0.01;
    cfg->momentum = 0.9;
    cfg->weight_decay = 5e-4;
    cfg->seed = 1;
}

int eeb_accel_config_check(const struct eeb_accel_config *cfg, const char *backend, char *err,
                           size_t errlen)
{
    if (cfg->batch_max < 1 || cfg->batch_max > 65535)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: batch_max %d (1..65535)", backend,
                        cfg->batch_max);
    if (cfg->frozen < 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: frozen %d (0 or more layers)", backend,
                        cfg->frozen);
    if (!(cfg->lr >= 0) || !(cfg->momentum >= 0 && cfg->momentum < 1) || !(cfg->weight_decay >= 0))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s: lr %g, momentum %g, weight_decay %g (lr >= 0, 0 <= momentum < 1, "
                        "weight_decay >= 0)",
                        backend, cfg->lr, cfg->momentum, cfg->weight_decay);
    return EEB_OK;
}

int eeb_accel_start(const char *name, const struct eeb_accel_config *cfg, const struct eeb_net *net,
                    struct eeb_accel **out, char *err, size_t errlen)
{
    const struct eeb_accel_ops *ops = eeb_accel_find(name);
    *out = NULL;
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "no backend '%s' in this build", name);
    struct eeb_accel *a;
    int rc = ops->open(cfg, &a, err, errlen);
    if (rc)
        return rc;
    rc = ops->load_model(a, net, err, errlen);
    if (rc) {
        ops->close(a);
        return rc;
    }
    *out = a;
    return EEB_OK;
}
