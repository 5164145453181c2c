/*
 * device_check.c - a modeled run's device figures recomputed (eeb check,
 * and --model FILE): a run on the modeled clock is timed by steps x the
 * device's step time and its energy by that time x the device's training
 * power, both taken from its stored configuration.  A configuration edited
 * consistently (and its chain with it) would make such a run faster, so a
 * reviewer models the device again, with eeb's analytical model, from what
 * the record names: the design, the model file the run started from (by
 * its SHA-256), the batch and the frozen layers.  Sections: the model file,
 * the recomputation.
 */
#include "fpga/model/eeb_perf.h"
#include "fpga/net/eeb_model.h"
#include "record/eeb_record.h"
#include "rundb/eeb_config_record.h"
#include "rundb/eeb_rundb.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((format(printf, 2, 3))) static void note(struct eeb_device_check *dev,
                                                       const char *fmt, ...)
{
    int n = snprintf(dev->note, sizeof dev->note, "modeled figures not recomputed: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dev->note + n, sizeof dev->note - (size_t)n, fmt, ap);
    va_end(ap);
}

/* Adds why to out's reasons and makes it invalid. */
static void invalid(struct eeb_run_outcome *out, const char *why)
{
    size_t n = strlen(out->why);
    snprintf(out->why + n, sizeof out->why - n, "%s%s", n ? "; " : "", why);
    out->valid = 0, out->pass = 0, out->score.s = NAN;
}

/* ---- the model file ---- */

/*
 * The network the run started from, decoded from the bytes hashed.  The
 * recorded path without --model: a file not there, or another file there
 * (retrained since, say), is no fault of the run, so *net stays NULL and
 * dev->note says why.  A file given by --model must be the run's: an
 * error naming both hashes otherwise.
 */
static int load_net(const char *given, const struct eeb_config_record *cfg,
                    struct eeb_device_check *dev, struct eeb_net **net, char *err, size_t errlen)
{
    const char *path = given ? given : cfg->model_path;
    snprintf(dev->model, sizeof dev->model, "%s", path);
    if (!given && !path[0]) {
        note(dev, "the configuration records no model file (eeb check --model FILE)");
        return EEB_OK;
    }
    if (!given && access(path, R_OK) != 0) {
        note(dev, "the model file %s is not here (eeb check --model FILE)", path);
        return EEB_OK;
    }
    char *bytes = NULL, sha[EEB_SHA256_HEX];
    size_t len = 0;
    int rc = eeb_read_file(path, EEB_MODEL_MAX_BYTES, &bytes, &len, err, errlen), task;
    if (rc)
        return rc;
    eeb_sha256(bytes, len, sha);
    if (strcmp(sha, cfg->model_sha256) != 0 && given)
        rc = eeb_errf(err, errlen, EEB_EINVAL,
                      "%s: its SHA-256 is %s, but the run started from the model file whose "
                      "SHA-256 is %s",
                      path, sha, cfg->model_sha256[0] ? cfg->model_sha256 : "not recorded");
    else if (strcmp(sha, cfg->model_sha256) != 0)
        note(dev,
             "the model file %s is not the one the run started from (its SHA-256 is %s, the "
             "run's %s; eeb check --model FILE)",
             path, sha, cfg->model_sha256[0] ? cfg->model_sha256 : "not recorded");
    else
        rc = eeb_model_decode((const uint8_t *)bytes, len, path, net, &task, err, errlen);
    free(bytes);
    return rc;
}

/* ---- the recomputation ---- */

/* Recomputes dev's figures from cfg's design, batch and frozen layers on
 * net; a reason the record cannot be modeled goes to why. */
static void recompute(const struct eeb_config_record *cfg, const struct eeb_net *net,
                      struct eeb_device_check *dev, char *why, size_t whylen)
{
    struct eeb_design d;
    struct eeb_perf perf = {0};
    char err[512];
    int batch_ok = cfg->batch >= 1 && cfg->batch <= 65535 && cfg->batch == floor(cfg->batch),
        frozen_ok = cfg->frozen >= 0 && cfg->frozen <= 4096 && cfg->frozen == floor(cfg->frozen);
    /* eeb run records eeb_design_format's text of the design it modeled,
     * every key named: eeb_design_for reads it back to that design (its
     * buffers named, so none is resized) */
    if (!batch_ok || !frozen_ok)
        snprintf(why, whylen,
                 "its modeled device cannot be recomputed: the configuration's training %s is "
                 "not a count",
                 batch_ok ? "frozen" : "batch");
    else if (eeb_design_for(&d, cfg->design, net, err, sizeof err) ||
             eeb_perf_model(&d, net, (int)cfg->batch, (int)cfg->frozen, &perf, err, sizeof err))
        snprintf(why, whylen, "its modeled device cannot be recomputed: %s", err);
    else {
        dev->recomputed = 1;
        dev->train_step_s = perf.train_step_s;
        dev->train_w = perf.train_power_w;
    }
    eeb_perf_free(&perf);
}

int eeb_run_check_device(const char *db_path, int64_t run, const char *model_path,
                         struct eeb_run_outcome *out, struct eeb_device_check *dev, char *err,
                         size_t errlen)
{
    *dev = (struct eeb_device_check){
        .train_step_s = NAN, .train_w = NAN, .stored_step_s = NAN, .stored_w = NAN};
    struct eeb_rundb *db = NULL;
    struct eeb_run_row row = {0};
    struct eeb_net *net = NULL;
    int rc = eeb_rundb_open(db_path, EEB_RUNDB_READONLY, &db, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_rundb_run_get(db, run, &row, err, errlen);
    if (rc)
        goto out;
    struct eeb_config_record cfg;
    (void)eeb_config_record_read(row.config, &cfg);
    if (!cfg.design[0]) /* a meter's run, or a team's own device */
        goto out;
    dev->modeled = 1;
    dev->stored_step_s = cfg.device_step_s, dev->stored_w = cfg.device_train_w;
    if ((rc = load_net(model_path, &cfg, dev, &net, err, errlen)) || !net)
        goto out;
    char why[768] = "";
    recompute(&cfg, net, dev, why, sizeof why);
    /* pure arithmetic of the same inputs, built -ffp-contract=off (no
     * fused multiply-adds), and the record's figures written with 17 digits: equal
     * bit for bit, so any difference at all is an edit */
    dev->agree =
        dev->recomputed && dev->train_step_s == dev->stored_step_s && dev->train_w == dev->stored_w;
    /* only the figures that differ: the reasons share out->why, and an
     * edited step time comes with T, E and a broken chain before it */
    if (dev->recomputed && !dev->agree && dev->train_w == dev->stored_w)
        snprintf(why, sizeof why,
                 "its modeled step time is %.17g s, but the analytical model gives %.17g s for "
                 "its design, model and batch",
                 dev->stored_step_s, dev->train_step_s);
    else if (dev->recomputed && !dev->agree && dev->train_step_s == dev->stored_step_s)
        snprintf(why, sizeof why,
                 "its modeled training power is %.17g W, but the analytical model gives %.17g W "
                 "for its design, model and batch",
                 dev->stored_w, dev->train_w);
    else if (dev->recomputed && !dev->agree)
        snprintf(why, sizeof why,
                 "its modeled step time and training power are %.17g s and %.17g W, but the "
                 "analytical model gives %.17g s and %.17g W for its design, model and batch",
                 dev->stored_step_s, dev->stored_w, dev->train_step_s, dev->train_w);
    if (why[0])
        invalid(out, why);
out:
    eeb_net_free(net);
    eeb_rundb_run_row_free(&row);
    eeb_rundb_close(db);
    return rc;
}
