/*
 * accel.c - the registry of accelerator backends built into this binary:
 * finding one by name, checking a table before driving it, and opening.
 */
#include "fpga/accel/backends.h"

#include <string.h>

static const struct eeb_accel_ops *const backends[] = {
    &eeb_accel_emu_ops,    /* the default */
    &eeb_accel_kernel_ops, /* the reference */
    &eeb_accel_fp32_ops,   /* the CPU baseline */
#ifdef EEB_HAVE_XRT
    &eeb_accel_xrt_ops, /* a board */
#endif
    &eeb_accel_faulty_ops, /* any of them, failing on purpose (tests) */
    NULL,
};

int eeb_accel_on_hardware(const struct eeb_accel_ops *ops)
{
    return (ops->caps & EEB_ACCEL_CAP_BOARD) && (!ops->on_hardware || ops->on_hardware());
}

/* The first slot a backend must fill and ops leaves NULL, or NULL. */
static const char *missing_slot(const struct eeb_accel_ops *ops)
{
    return !ops->description   ? "description"
           : !ops->open        ? "open"
           : !ops->load_model  ? "load_model"
           : !ops->train_batch ? "train_batch"
           : !ops->predict     ? "predict"
           : !ops->read_model  ? "read_model"
           : !ops->stats       ? "stats"
           : !ops->close       ? "close"
                               : NULL;
}

int eeb_accel_ops_check(const struct eeb_accel_ops *ops, char *err, size_t errlen)
{
    /* version, caps and name lead every version of the table, so a table
     * of another version can still be named */
    const char *name = ops->name ? ops->name : "(no name)";
    if (ops->version != EEB_ACCEL_OPS_VERSION)
        return eeb_errf(err, errlen, EEB_EVERSION,
                        "backend '%s': its ops table is version %d, this eeb drives version %d "
                        "(build it against this eeb's fpga/accel/eeb_accel.h)",
                        name, ops->version, EEB_ACCEL_OPS_VERSION);
    const char *slot = ops->name ? missing_slot(ops) : "name";
    if (slot)
        return eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': its ops table has no %s", name,
                        slot);
    return EEB_OK;
}

const struct eeb_accel_ops *const *eeb_accel_list(void)
{
    return backends;
}

/* 1 if name calls for b: its name, or a wrapper's name, ':' and more. */
static int answers_to(const struct eeb_accel_ops *b, const char *name)
{
    size_t n = strlen(b->name);
    if (b->caps & EEB_ACCEL_CAP_WRAPPER)
        return strncmp(name, b->name, n) == 0 && (name[n] == ':' || name[n] == '\0');
    return strcmp(name, b->name) == 0;
}

const struct eeb_accel_ops *eeb_accel_find(const char *name)
{
    for (int i = 0; backends[i]; i++)
        if (answers_to(backends[i], name))
            return backends[i];
    return NULL;
}

int eeb_accel_never_on_board(const char *backend)
{
    const struct eeb_accel_ops *ops = backend ? eeb_accel_find(backend) : NULL;
    if (!ops)
        return 0;
    if (ops->caps & EEB_ACCEL_CAP_WRAPPER) { /* "faulty:INNER?options" */
        const char *inner = strchr(backend, ':');
        char name[64];
        if (!inner)
            return 0;
        snprintf(name, sizeof name, "%.*s", (int)strcspn(inner + 1, "?"), inner + 1);
        return strcmp(name, backend) != 0 && eeb_accel_never_on_board(name);
    }
    return !(ops->caps & EEB_ACCEL_CAP_BOARD);
}

int eeb_accel_check_name(const char *name, char *err, size_t errlen)
{
    const struct eeb_accel_ops *ops = eeb_accel_find(name);
    if (ops)
        return ops->check_name ? ops->check_name(name, err, errlen) : EEB_OK;
    char names[128] = "";
    for (int i = 0; backends[i]; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 backends[i]->name);
    return eeb_errf(err, errlen, EEB_EINVAL, "backend '%s': not built in (have %s)", name, names);
}

int eeb_accel_open(const char *name, const struct eeb_accel_config *cfg, struct eeb_accel **out,
                   char *err, size_t errlen)
{
    const struct eeb_accel_ops *ops = eeb_accel_find(name);
    *out = NULL;
    if (!ops)
        return eeb_errf(err, errlen, EEB_EINVAL, "no backend '%s' in this build", name);
    int rc = eeb_accel_ops_check(ops, err, errlen);
    if (rc)
        return rc;
    struct eeb_accel_config named = *cfg;
    named.name = name;
    return ops->open(&named, out, err, errlen);
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
    struct eeb_accel *a;
    *out = NULL;
    int rc = eeb_accel_open(name, cfg, &a, err, errlen);
    if (rc)
        return rc;
    rc = a->ops->load_model(a, net, err, errlen);
    if (rc) {
        eeb_accel_close(a);
        return rc;
    }
    *out = a;
    return EEB_OK;
}
