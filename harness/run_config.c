/*
 * run_config.c - a run's configuration: one table of keys shared by the
 * command line and JSON files, the embedded default of each task, and
 * the checks a configuration must pass before a run starts.
 */
#include "eeb_run.h"
#include "rundb/eeb_config_record.h"
#include "sut/eeb_sut_host.h"
#include "fpga/tools/eeb_xclbin.h"
#include "tasks/eeb_tasks.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum type { TASK, TEXT, NUMBER, COUNT, SWITCH };

struct key {
    struct eeb_run_key pub;
    enum type type;
    size_t off;
    double min, max; /* NUMBER, COUNT */
};

#define F(field) offsetof(struct eeb_run_config, field)

static const struct key keys[] = {
    {{"task", "TASK", "cls, det or video"}, TASK, F(task), 0, 0},
    {{"finetune", "FILE.eebd", "fine-tune shard (default: the task's embedded data)"},
     TEXT,
     F(finetune),
     0,
     0},
    {{"test", "FILE.eebd", "test shard"}, TEXT, F(test), 0, 0},
    {{"model", "FILE.eebm", "pre-trained model"}, TEXT, F(model), 0, 0},
    {{"backend", "NAME",
      "emu (default), kernel, fp32, xrt; a team's SUT: ./LIB.so, exec:PROG (docs/sut.md)"},
     TEXT,
     F(backend),
     0,
     0},
    {{"sut-config", "TEXT", "a team's SUT: the configuration string its open is given"},
     TEXT,
     F(sut_config),
     0,
     0},
    {{"sut-deadline", "S",
      "a team's SUT: seconds a call may take before its process is killed (300)"},
     NUMBER,
     F(sut_deadline),
     1e-3,
     1e6},
    {{"in-process", NULL,
      "load a team's library into eeb itself, not a process of its own: no deadline, and a "
      "crash in it ends eeb"},
     SWITCH,
     F(in_process),
     0,
     0},
    {{"xclbin", "FILE",
      "the accelerator's xclbin: xrt loads it, a team's SUT gets a copy (M_u from it without "
      "--util)"},
     TEXT,
     F(xclbin),
     0,
     0},
    {{"device", "N", "xrt: the device index (default 0)"}, COUNT, F(device), 0, 1024},
    {{"design", "K=V,...",
      "the PE array the model predicts (default: the task's; xrt: the xclbin's)"},
     TEXT,
     F(design),
     0,
     0},
    {{"power", "URI", "power source (default: the design's modeled power, sim:profile=model)"},
     TEXT,
     F(power),
     0,
     0},
    {{"rate", "HZ", "power sampling rate, 1..10000 (default 100)"}, NUMBER, F(rate_hz), 1, 10000},
    {{"ranging-s", "S",
      "a meter with ranges (ptd://): seconds of a ranging pass on the fine-tune set before the "
      "fine-tune, which then starts again from the model (default: T_max, at most 30; 0: none)"},
     NUMBER,
     F(ranging_s),
     0,
     1e6},
    {{"tmax", "S", "time budget T_max, seconds (default: the task's)"},
     NUMBER,
     F(t_max_s),
     1e-3,
     1e7},
    {{"pmax", "W", "power budget P_max, watts (default: the task's)"},
     NUMBER,
     F(p_max_w),
     1e-6,
     1e6},
    {{"clock", "modeled|wall",
      "the clock T and T_max are read on: the modeled device's (steps x its step time; the "
      "default for the emulators and XRT's noop shim without --power) or the host's"},
     TEXT,
     F(clock),
     0,
     0},
    {{"grace", "S", "how long past T_max an accelerator may take to return (default 10)"},
     NUMBER,
     F(grace_s),
     0,
     1e6},
    {{"abort-on-pmax", NULL, "stop the run at once when the live 1 s mean exceeds P_max"},
     SWITCH,
     F(abort_on_pmax),
     0,
     0},
    {{"rules", "FILE", "scoring rules (default: the built-in v1)"}, TEXT, F(rules), 0, 0},
    {{"util", "REPORT|SPEC", "utilization report, or lut=..,ff=..,bram=..,dsp=.."},
     TEXT,
     F(util),
     0,
     0},
    {{"declared-power", "W", "a constant power instead of the modeled one (no --power)"},
     NUMBER,
     F(declared_power_w),
     0,
     1e6},
    {{"seed", "N", "stochastic rounding and shuffling (default 1)"}, COUNT, F(seed), 0, 1e18},
    {{"epochs", "N", "passes over the fine-tune shard (default: the task's)"},
     COUNT,
     F(epochs),
     1,
     1e9},
    {{"steps", "N", "stop after N batches"}, COUNT, F(steps), 1, 1e12},
    {{"batch", "N", "items per step (default 32)"}, COUNT, F(batch), 1, 65535},
    {{"frozen", "N", "leading learnable layers not trained (default 0)"},
     COUNT,
     F(frozen),
     0,
     4096},
    {{"window", "N", "shuffle window, records (default 1024)"}, COUNT, F(window), 1, 1 << 20},
    {{"lr", "X", "learning rate (default: the task's)"}, NUMBER, F(lr), 0, 100},
    {{"momentum", "X", "SGD momentum (default 0.9)"}, NUMBER, F(momentum), 0, 1},
    {{"decay", "X", "weight decay (default 5e-4)"}, NUMBER, F(decay), 0, 1},
    {{"db", "FILE", "run database to append to (default eeb.db)"}, TEXT, F(db), 0, 0},
    {{"report", "FILE.html", "also write the HTML report"}, TEXT, F(report), 0, 0},
    {{"save-model", "FILE.eebm", "write the fine-tuned model"}, TEXT, F(save_model), 0, 0},
    {{"predictions", "PATH", "write the predictions as `eeb eval` reads them"},
     TEXT,
     F(predictions),
     0,
     0},
    {{"server", "URL", "official mode: the evaluation server that drives and judges the run"},
     TEXT,
     F(server),
     0,
     0},
    {{"entry", "NAME", "with --server, in a round: the team's entry the run is a run of (main)"},
     TEXT,
     F(entry),
     0,
     0},
    {{"division", "closed|open",
      "with --server: the entry's division, closed (the round's base model and epochs; the "
      "default) or open"},
     TEXT,
     F(division),
     0,
     0},
    {{"tier", "W",
      "with --server: the entry's P_max tier, one of the round's (default the lowest)"},
     NUMBER,
     F(tier_w),
     1e-3,
     1e6},
};

#define N_KEYS (sizeof keys / sizeof keys[0])

/* The field a key sets, as void * so that each use names its type. */
static void *field(const struct eeb_run_config *c, const struct key *k)
{
    return (char *)c + k->off;
}

const struct eeb_run_key *eeb_run_keys(void)
{
    static struct eeb_run_key pub[N_KEYS + 1];
    for (size_t i = 0; i < N_KEYS && !pub[i].name; i++)
        pub[i] = keys[i].pub;
    return pub;
}

void eeb_run_config_init(struct eeb_run_config *c)
{
    memset(c, 0, sizeof *c);
    c->task = -1;
    c->abort_on_pmax = -1;
    c->in_process = -1;
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].type == NUMBER || keys[i].type == COUNT) {
            double *v = field(c, &keys[i]);
            *v = NAN;
        }
}

void eeb_run_config_free(struct eeb_run_config *c)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (keys[i].type == TEXT) {
            char **s = field(c, &keys[i]);
            free(*s);
            *s = NULL;
        }
}

static const struct key *find(const char *name)
{
    for (size_t i = 0; i < N_KEYS; i++)
        if (strcmp(keys[i].pub.name, name) == 0)
            return &keys[i];
    return NULL;
}

static int is_set(const struct eeb_run_config *c, const struct key *k)
{
    const int *flag = field(c, k);
    char *const *text = field(c, k);
    const double *number = field(c, k);
    switch (k->type) {
    case TASK:
    case SWITCH: return *flag >= 0;
    case TEXT: return *text != NULL;
    default: return !isnan(*number);
    }
}

int eeb_run_config_set(struct eeb_run_config *c, const char *name, const char *value,
                       const char *where, char *err, size_t errlen)
{
    const struct key *k = find(name);
    if (!k)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s: unknown key", where);
    int *flag = field(c, k);
    char **text = field(c, k);
    double *number = field(c, k);
    if (k->type == TASK) {
        enum eeb_task t;
        char why[128];
        if (eeb_task_parse(value, &t, why, sizeof why))
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s", where, why);
        *flag = (int)t;
    } else if (k->type == SWITCH) {
        if (strcmp(value, "1") && strcmp(value, "0"))
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: '%s' (true or false)", where, value);
        *flag = value[0] == '1';
    } else if (k->type == TEXT) {
        if (!value[0])
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: empty", where);
        char *s = strdup(value);
        if (!s)
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", where);
        free(*text);
        *text = s;
    } else {
        char *end;
        double v = strtod(value, &end);
        if (end == value || *end || !isfinite(v))
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: '%s' is not a number", where, value);
        if (k->type == COUNT && v != floor(v))
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: '%s' is not a whole number", where,
                            value);
        if (v < k->min || v > k->max)
            return eeb_errf(err, errlen, EEB_EINVAL, "%s: %s is outside [%g, %g]", where, value,
                            k->min, k->max);
        *number = v;
    }
    return EEB_OK;
}

int eeb_run_config_load(struct eeb_run_config *c, const char *path, char *err, size_t errlen)
{
    json_error_t je;
    json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!o)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s:%d: %s", path, je.line, je.text);
    int rc = EEB_OK;
    if (!json_is_object(o)) {
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: a configuration is one JSON object", path);
        goto out;
    }
    const char *name;
    json_t *v;
    json_object_foreach(o, name, v)
    {
        char key[64], where[600], text[64];
        snprintf(key, sizeof key, "%s", name);
        for (char *p = key; *p; p++)
            if (*p == '_')
                *p = '-';
        snprintf(where, sizeof where, "%s: key '%s'", path, name);
        const struct key *k = find(key);
        if (!k) {
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: unknown (see eeb run --help)", where);
            goto out;
        }
        if (is_set(c, k))
            continue;
        const char *value = text;
        if (k->type == SWITCH && json_is_boolean(v))
            snprintf(text, sizeof text, "%d", json_is_true(v));
        else if ((k->type == NUMBER || k->type == COUNT) && json_is_number(v))
            snprintf(text, sizeof text, "%.17g", json_number_value(v));
        else if ((k->type == TEXT || k->type == TASK) && json_is_string(v))
            value = json_string_value(v);
        else {
            static const char *const want[] = {"a string", "a string", "a number", "a number",
                                               "true or false"};
            rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: expected %s", where, want[k->type]);
            goto out;
        }
        if ((rc = eeb_run_config_set(c, key, value, where, err, errlen)))
            goto out;
    }
out:
    json_decref(o);
    return rc;
}

static void fill(double *v, double dflt)
{
    if (isnan(*v))
        *v = dflt;
}

static int fill_text(char **s, const char *dflt, char *err, size_t errlen)
{
    if (*s || !dflt)
        return EEB_OK;
    if (!(*s = strdup(dflt)))
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    return EEB_OK;
}

int eeb_run_config_finish(struct eeb_run_config *c, char *err, size_t errlen)
{
    if (c->task < 0)
        return eeb_errf(err, errlen, EEB_EINVAL, "no task: give --task cls, det or video");
    const struct eeb_task_profile *p = eeb_task_profile((enum eeb_task)c->task);
    /* an official run is held to the server's budgets, rules and test set */
    const struct {
        const char *key, *what;
        int given;
    } servers[] = {{"test", "test inputs", c->test != NULL},
                   {"tmax", "T_max", !isnan(c->t_max_s)},
                   {"pmax", "P_max", !isnan(c->p_max_w)},
                   {"rules", "rules", c->rules != NULL}};
    for (size_t i = 0; c->server && i < sizeof servers / sizeof *servers; i++)
        if (servers[i].given)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "--%s: an official run (--server) takes its %s from the server",
                            servers[i].key, servers[i].what);
    /* and only an official run is a run of a round's entry */
    const struct {
        const char *key;
        int given;
    } entries[] = {{"entry", c->entry != NULL},
                   {"division", c->division != NULL},
                   {"tier", !isnan(c->tier_w)}};
    for (size_t i = 0; !c->server && i < sizeof entries / sizeof *entries; i++)
        if (entries[i].given)
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "--%s goes with --server: an official run is a run of an entry in "
                            "the server's round",
                            entries[i].key);
    if (c->entry && !eeb_text_ok(c->entry, 64, "_.-"))
        return eeb_errf(err, errlen, EEB_EINVAL, "--entry %s: 1 to 64 of A-Z a-z 0-9 _ . -",
                        c->entry);
    if (c->division && strcmp(c->division, "closed") && strcmp(c->division, "open"))
        return eeb_errf(err, errlen, EEB_EINVAL, "--division %s: expected closed or open",
                        c->division);
    static const char *const inputs[] = {"finetune", "test", "model"};
    char **paths[] = {&c->finetune, &c->test, &c->model};
    for (int i = 0; i < 3; i++)
        if (!*paths[i] && !(i == 1 && c->server))
            return eeb_errf(err, errlen, EEB_EINVAL, "no --%s given", inputs[i]);
    fill(&c->rate_hz, 100);
    fill(&c->t_max_s, p->t_max_s);
    fill(&c->p_max_w, p->p_max_w);
    fill(&c->grace_s, 10);
    fill(&c->seed, 1);
    fill(&c->epochs, p->epochs);
    fill(&c->batch, 32);
    fill(&c->frozen, 0);
    fill(&c->window, 1024);
    fill(&c->lr, p->lr);
    fill(&c->momentum, 0.9);
    fill(&c->decay, 5e-4);
    if (c->abort_on_pmax < 0)
        c->abort_on_pmax = 0;
    if (c->in_process < 0)
        c->in_process = 0;
    fill(&c->device, 0);
    fill(&c->sut_deadline, 300);
    int rc;
    if ((rc = fill_text(&c->backend, "emu", err, errlen)))
        return rc;
    int xrt = strcmp(c->backend, "xrt") == 0;
    int team = eeb_sut_kind_of(c->backend) != EEB_SUT_BUILTIN; /* its own design */
    if (xrt && !c->xclbin)
        return eeb_errf(err, errlen, EEB_EINVAL, "--backend xrt needs --xclbin FILE");
    if (!xrt && !team && c->xclbin)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "--xclbin goes with --backend xrt (or a team's SUT)");
    /* an xclbin carries its own design; without --util and --power the run
     * takes M_u (or the xclbin's) and the power from the model */
    if ((rc = fill_text(&c->design, xrt || team ? NULL : p->design, err, errlen)) ||
        (rc = fill_text(&c->db, "eeb.db", err, errlen)))
        return rc;
    if (c->clock && strcmp(c->clock, EEB_CLOCK_MODELED) && strcmp(c->clock, EEB_CLOCK_WALL))
        return eeb_errf(err, errlen, EEB_EINVAL, "--clock %s: expected modeled or wall", c->clock);
    if (c->power && !isnan(c->declared_power_w))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "--declared-power states the power of a run without a meter, and --power "
                        "%s is its meter: give one of them",
                        c->power);
    if (!c->power && !isnan(c->declared_power_w)) {
        char uri[64];
        snprintf(uri, sizeof uri, "sim:profile=const,watts=%.17g", c->declared_power_w);
        if ((rc = fill_text(&c->power, uri, err, errlen)))
            return rc;
    }
    return EEB_OK;
}
