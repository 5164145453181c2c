/*
 * run_prepare.c - INIT and DEPLOY: everything that can be checked before a
 * run exists (the inputs read once and hashed from the bytes used, the
 * device modeled, the accelerator and the meter chosen), then the model
 * onto the accelerator.
 */
#include "run_int.h"

#include "fpga/net/eeb_model.h"
#include "fpga/tools/eeb_xclbin.h"
#include "rundb/eeb_config_record.h"
#include "tasks/eeb_classes.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SHARD_BYTES (8ULL << 30) /* a fine-tune shard held in memory */

/* The shard holds records of the run's task; *items, how many. */
static int shard_fits(const struct eeb_shard *s, const struct eeb_run_config *c, uint64_t *items,
                      char *err, size_t errlen)
{
    *items = eeb_shard_info(s)->count;
    return eeb_shard_holds_task(s, (enum eeb_task)c->task, "the run's task", err, errlen);
}

/* The test shard at path: hashed, and fit for the run, with the fine-tune
 * shard's classes in the same order (the model's outputs are positions). */
int run_hash_test(struct run *r, const char *path, char *err, size_t errlen)
{
    struct eeb_shard *test;
    int rc = eeb_sha256_file(path, r->sha_test, err, errlen);
    if (rc || (rc = eeb_shard_open(&test, path, err, errlen)))
        return rc;
    rc = shard_fits(test, r->c, &r->test_items, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_shards_agree(eeb_shard_info(r->shard), r->c->finetune, eeb_shard_info(test), path,
                              err, errlen);
    eeb_shard_close(test);
    return rc;
}

/* The model file, read once: the bytes hashed are the bytes decoded (eeb's
 * own models), and the bytes the SUT is given (a private copy at DEPLOY). */
static int read_model(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc = eeb_read_file(c->model, EEB_MODEL_MAX_BYTES, &r->model_bytes, &r->model_len, err,
                           errlen),
        task = c->task;
    if (rc)
        return rc;
    eeb_sha256(r->model_bytes, r->model_len, r->sha_model);
    if (eeb_sut_kind_of(c->backend) != EEB_SUT_BUILTIN) /* the team's format */
        return EEB_OK;
    rc = eeb_model_decode((const uint8_t *)r->model_bytes, r->model_len, c->model, &r->net, &task,
                          err, errlen);
    if (rc == EEB_OK && task != c->task)
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s is not a %s model", c->model,
                      eeb_task_name(c->task));
    return rc;
}

/* M_u from the resources the xclbin records (SYSTEM_METADATA), a --util
 * given too held to agree with them: EEB_ENODATA if it records none. */
static int xclbin_figures(struct run *r, const struct eeb_xclbin_info *in, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    char given[600], source[400], why[1024];
    struct eeb_util u;
    if (c->util)
        snprintf(given, sizeof given,
                 strcmp(r->util.family, "given") == 0 ? "the given figures %.500s"
                                                      : "the report %.500s",
                 c->util);
    int rc = eeb_xclbin_m_u(in, c->xclbin, c->util ? &r->util : NULL, given, &u, source,
                            sizeof source, why, sizeof why);
    if (rc == EEB_ENODATA)
        return rc;
    if (rc)
        return eeb_errf(err, errlen, rc, "%s%s", rc == EEB_EINVAL ? "--util: " : "", why);
    r->util = u;
    snprintf(r->out->util_source, sizeof r->out->util_source, "%.100s (%.400s)", c->xclbin, source);
    return EEB_OK;
}

/* The xclbin, read once: hashed, M_u from its own resources if it records
 * them, and (without --util, --design) eeb's utilization and design taken
 * from the same bytes. */
static int read_xclbin(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc = eeb_read_file(c->xclbin, EEB_XCLBIN_MAX_BYTES, &r->xclbin_bytes, &r->xclbin_len, err,
                           errlen);
    if (rc)
        return rc;
    eeb_sha256(r->xclbin_bytes, r->xclbin_len, r->sha_xclbin);
    struct eeb_xclbin_info *in = NULL;
    rc = eeb_xclbin_parse((const uint8_t *)r->xclbin_bytes, r->xclbin_len, c->xclbin, &in, err,
                          errlen);
    if (rc == EEB_ENOTSUP) /* built without XRT: the xclbin is hashed, not read */
        rc = c->util
                 ? EEB_OK
                 : eeb_errf(err, errlen, EEB_EINVAL, "no --util given (this eeb reads no xclbin)");
    int figures = rc == EEB_OK && in ? xclbin_figures(r, in, err, errlen) : EEB_ENODATA;
    if (figures != EEB_ENODATA)
        rc = figures;
    else if (rc == EEB_OK && in && !c->util) {
        char source[256], why[512];
        if ((rc = eeb_xclbin_util(in, &r->util, source, sizeof source, why, sizeof why)))
            eeb_errf(err, errlen, rc, "%s: %s", c->xclbin, why);
        else if (eeb_sut_kind_of(c->backend) != EEB_SUT_BUILTIN &&
                 strncmp(source, "modeled", 7) == 0)
            rc = eeb_errf(err, errlen, EEB_EINVAL,
                          "%s: its utilization is eeb's analytical model's (%s), not your "
                          "design's: give your implementation's report (--util)",
                          c->xclbin, source);
        else
            snprintf(r->out->util_source, sizeof r->out->util_source, "%s (%s)", c->xclbin, source);
    }
    if (rc == EEB_OK && in && !c->design)
        rc = eeb_xclbin_design(in, &r->xclbin_design, err, errlen);
    eeb_xclbin_info_free(in);
    return rc;
}

/* The analytical model's device: the design (--design, else the xclbin's)
 * on the run's network, batch and frozen layers; M_u from its resources
 * without --util or an xclbin's. */
static int model_device(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    const char *spec = c->design ? c->design : r->xclbin_design;
    int util_known = r->out->util_source[0] != '\0'; /* --util's, or the xclbin's */
    if (!r->net) /* a team's network is its own: nothing to model it from */
        return c->design    ? eeb_errf(err, errlen, EEB_EINVAL,
                                       "--design models eeb's own networks; %s is a team's SUT "
                                          "(give its utilization by --util or its xclbin)",
                                       c->backend)
               : util_known ? EEB_OK
                            : eeb_errf(err, errlen, EEB_EINVAL,
                                       "%s is a team's SUT: give its design's utilization "
                                       "(--util REPORT, or --xclbin)",
                                       c->backend);
    if (!spec)
        return util_known ? EEB_OK
                          : eeb_errf(err, errlen, EEB_EINVAL,
                                     "%s has no design to model: give --design", c->xclbin);
    struct eeb_design d;
    int rc = eeb_design_for(&d, spec, r->net, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_perf_model(&d, r->net, (int)c->batch, (int)c->frozen, &r->perf, err, errlen);
    if (rc)
        return rc;
    r->modeled_device = 1;
    eeb_design_format(&d, r->out->design, sizeof r->out->design);
    if (util_known)
        return EEB_OK;
    char util[128];
    eeb_resources_spec(&r->perf.res, util, sizeof util);
    snprintf(r->out->util_source, sizeof r->out->util_source, "modeled: %.480s", r->out->design);
    return eeb_score_util_from_spec(util, &r->util, err, errlen);
}

/* The clock T is read on.  A CPU standing in for the board (the
 * emulators, XRT's noop shim) with the modeled power takes the modeled
 * device's: its steps times the modeled step time, the same on any host
 * at any load.  A meter measures the host's wall time. */
static int choose_clock(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int stand_in = r->ops && !eeb_accel_on_hardware(r->ops);
    if (!c->clock) {
        r->modeled_clock = r->modeled_device && stand_in && !c->power;
        return EEB_OK;
    }
    r->modeled_clock = strcmp(c->clock, EEB_CLOCK_MODELED) == 0;
    if (r->modeled_clock && !r->modeled_device)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "--clock modeled: %s has no modeled device to time (give --design)",
                        c->backend);
    if (r->modeled_clock && c->power)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "--clock modeled scores the modeled device's power, and --power %s is a "
                        "meter's: give one of them",
                        c->power);
    return EEB_OK;
}

/* INIT: everything that can be checked before a run exists, and the
 * fine-tune data read into memory. */
int run_prepare(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    int rc;
    if ((rc = eeb_score_rules_load(c->rules, &r->rules, err, errlen)))
        return rc;
    if (c->util) {
        snprintf(r->out->util_source, sizeof r->out->util_source, "%s", c->util);
        if ((rc = eeb_score_util_arg(c->util, &r->util, NULL, err, errlen)))
            return rc;
    }
    if ((rc = read_model(r, err, errlen)) || (c->xclbin && (rc = read_xclbin(r, err, errlen))) ||
        (rc = model_device(r, err, errlen)))
        return rc;
    if ((rc = eeb_sut_check_backend(c->backend, err, errlen)))
        return rc;
    r->ops = r->net ? eeb_accel_find(c->backend) : NULL;
    /* the fine-tune shard is read once, into memory, and hashed from there:
     * the bytes hashed are the bytes trained on, loaded outside the window */
    if ((rc = eeb_shard_load(&r->shard, c->finetune, MAX_SHARD_BYTES, r->sha_finetune, err,
                             errlen)) ||
        (rc = shard_fits(r->shard, c, &r->finetune_items, err, errlen)) ||
        (r->eval->check_inputs && (rc = r->eval->check_inputs(r, err, errlen))))
        return rc;
    /* the emulators and XRT's noop shim: the CPU's times, a modeled power;
     * a team's SUT: its own device, measured by the meter */
    snprintf(r->out->provenance, sizeof r->out->provenance, "%s",
             !r->ops || eeb_accel_on_hardware(r->ops) ? "" : "modeled");
    /* without --power, the modeled device's power, from idle on */
    char uri[96];
    if (!c->power && !r->modeled_device)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: no --power, and no design to model one from",
                        c->xclbin ? c->xclbin : c->model);
    if (!c->power)
        snprintf(uri, sizeof uri, "sim:profile=model,watts=%.6g,seed=%.17g", r->perf.idle_power_w,
                 c->seed);
    if ((rc = eeb_power_open(c->power ? c->power : uri, &r->src, err, errlen)))
        return rc;
    if (!r->out->provenance[0])
        snprintf(r->out->provenance, sizeof r->out->provenance, "%s",
                 eeb_provenance_name(r->src->provenance));
    return choose_clock(r, err, errlen);
}

static int private_copy(const char *path, const char *bytes, size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, len, f) == len;
    ok = (f && fclose(f) == 0) && ok;
    return ok ? EEB_OK : eeb_errf(err, errlen, EEB_EIO, "%s: %s", path, strerror(errno));
}

/* The SUT's private files, in a directory of the system's temporary
 * space (not the database's disk, whose room is the power log's): the
 * model's and the xclbin's bytes as hashed, so that what the SUT loads is
 * what was hashed (and M_u read from) whatever becomes of --model and
 * --xclbin, and a work directory of its own. */
static int private_files(struct run *r, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(r->private_dir, sizeof r->private_dir, "%.4000s/eeb-run-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(r->private_dir)) {
        int rc = eeb_errf(err, errlen, EEB_EIO, "%s: %s", r->private_dir, strerror(errno));
        r->private_dir[0] = '\0';
        return rc;
    }
    snprintf(r->workdir, sizeof r->workdir, "%s/work", r->private_dir);
    snprintf(r->model_copy, sizeof r->model_copy, "%s/model", r->private_dir);
    if (r->xclbin_bytes)
        snprintf(r->xclbin_copy, sizeof r->xclbin_copy, "%s/design.xclbin", r->private_dir);
    if (mkdir(r->workdir, 0700) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: %s", r->workdir, strerror(errno));
    int rc = private_copy(r->model_copy, r->model_bytes, r->model_len, err, errlen);
    if (rc == EEB_OK && r->xclbin_bytes)
        rc = private_copy(r->xclbin_copy, r->xclbin_bytes, r->xclbin_len, err, errlen);
    return rc;
}

/* The SUT opened on r's private copies, the model loaded, and the
 * fine-tune's batches from the start. */
static int open_sut(struct run *r, char *err, size_t errlen)
{
    const struct eeb_run_config *c = r->c;
    const struct eeb_shard_info *in = eeb_shard_info(r->shard);
    struct eeb_accel_config ac;
    eeb_accel_config_default(&ac);
    ac.batch_max = (int)c->batch;
    ac.frozen = (int)c->frozen;
    ac.lr = c->lr, ac.momentum = c->momentum, ac.weight_decay = c->decay;
    ac.seed = (uint64_t)c->seed;
    ac.xclbin = c->xclbin;
    ac.device = (int)c->device;
    const struct eeb_sut_setup setup = {.abi_version = EEB_SUT_ABI_VERSION,
                                        .task = (int32_t)in->task,
                                        .classes = in->classes,
                                        .frames = in->frames,
                                        .height = in->h,
                                        .width = in->w,
                                        .channels = in->c,
                                        .batch_max = (int)c->batch,
                                        .top_k =
                                            in->classes < EEB_TOPK_MAX ? in->classes : EEB_TOPK_MAX,
                                        .max_boxes = RUN_MAX_BOXES,
                                        .seed = (uint64_t)c->seed,
                                        .workdir = r->workdir,
                                        .xclbin = r->xclbin_copy};
    const struct eeb_sut_options opt = {.builtin = &ac,
                                        .team_config = c->sut_config,
                                        .deadline_s = c->sut_deadline,
                                        .in_process = c->in_process > 0};
    int rc;
    if ((rc = eeb_sut_open(c->backend, &setup, &opt, &r->sut, err, errlen)) ||
        (rc = eeb_sut_load_model(r->sut, r->model_copy, err, errlen)) ||
        (rc = eeb_batcher_new_as_stored(&r->bt, r->shard, (int)c->batch, (int)c->window,
                                        (uint64_t)c->seed, err, errlen)))
        return rc;
    return EEB_OK;
}

static void deployed(struct run *r, const char *again)
{
    struct eeb_sut_counters st;
    eeb_sut_counters(r->sut, &st);
    snprintf(r->out->backend_detail, sizeof r->out->backend_detail, "%s", st.detail);
    json_t *o =
        json_pack("{s:s, s:s, s:I}", "backend", r->ops ? r->ops->name : r->c->backend,
                  EEB_EVENT_KEY_DETAIL, st.detail, "finetune_items", (json_int_t)r->finetune_items);
    if (o && again)
        json_object_set_new(o, "again", json_string(again));
    run_event(r, EEB_EVENT_DEPLOYED, o);
}

/* DEPLOY: the model onto the accelerator. */
int run_open(struct run *r, char *err, size_t errlen)
{
    int rc;
    const struct eeb_shard_info *in = eeb_shard_info(r->shard);
    if (r->net && (rc = eeb_task_check_model(r->net, in, err, errlen)))
        return rc;
    if ((rc = private_files(r, err, errlen)) || (rc = run_training_audit_read(r, err, errlen)) ||
        (rc = open_sut(r, err, errlen)))
        return rc;
    eeb_sut_identify(r->sut, &r->identity);
    return EEB_OK;
}

int run_deploy(struct run *r, char *err, size_t errlen)
{
    int rc;
    if ((rc = run_enter(r, EEB_RUN_DEPLOY, err, errlen)))
        return rc;
    if (r->modeled_device)
        run_event(r, EEB_EVENT_DEVICE_MODEL, run_device_model_json(r));
    deployed(r, NULL);
    return EEB_OK;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)flag, (void)f;
    return remove(path) == 0 ? 0 : -1;
}

int run_redeploy(struct run *r, const char *why, char *err, size_t errlen)
{
    eeb_batcher_free(r->bt);
    eeb_sut_close(r->sut);
    r->bt = NULL, r->sut = NULL;
    /* the model's and the xclbin's bytes as hashed, again, and an empty
     * work directory: whatever the SUT wrote is gone */
    if (nftw(r->workdir, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 || mkdir(r->workdir, 0700) != 0)
        return eeb_errf(err, errlen, EEB_EIO, "%s: emptying the SUT's work directory: %s",
                        r->workdir, strerror(errno));
    int rc = private_copy(r->model_copy, r->model_bytes, r->model_len, err, errlen);
    if (rc == EEB_OK && r->xclbin_bytes)
        rc = private_copy(r->xclbin_copy, r->xclbin_bytes, r->xclbin_len, err, errlen);
    if (rc == EEB_OK)
        rc = open_sut(r, err, errlen);
    if (rc == EEB_OK)
        deployed(r, why);
    return rc;
}
