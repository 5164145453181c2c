/*
 * config_record.c - the stored run configuration's sections written, and
 * what is read back of it (eeb_config_record.h).
 */
#include "rundb/eeb_config_record.h"

#include "common/eeb_common.h"
#include "common/eeb_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const util_keys[4] = {"lut", "ff", "bram", "dsp"};
static const char *const weight_keys[4] = {"u", "t", "p", "s"};

void eeb_config_put_task(json_t *o, const char *task)
{
    json_object_set_new(o, "task", json_string(task));
}

void eeb_config_put_backend(json_t *o, const char *backend, const char *provenance)
{
    json_object_set_new(o, "backend", json_string(backend));
    json_object_set_new(o, "provenance", json_string(provenance));
}

/* s as stored: at most max bytes of whole UTF-8 characters, each printable
 * (a control, eeb_text_control's, or a byte that is not UTF-8: '?'). */
static void printable(const char *s, char *out, size_t max)
{
    const unsigned char *u = (const unsigned char *)(s ? s : "");
    size_t o = 0;
    while (*u && o < max) {
        char shown[EEB_CONTROL_SHOWN];
        size_t len = *u < 0x80                 ? 1
                     : *u >= 0xc2 && *u < 0xe0 ? 2
                     : *u >= 0xe0 && *u < 0xf0 ? 3
                     : *u >= 0xf0 && *u < 0xf5 ? 4
                                               : 0;
        for (size_t i = 1; i < len; i++)
            if ((u[i] & 0xc0) != 0x80)
                len = 0; /* cut short (a NUL stops it too) */
        if (len == 3 && ((u[0] == 0xe0 && u[1] < 0xa0) || (u[0] == 0xed && u[1] >= 0xa0)))
            len = 0; /* overlong, or a surrogate */
        if (len == 4 && ((u[0] == 0xf0 && u[1] < 0x90) || (u[0] == 0xf4 && u[1] >= 0x90)))
            len = 0; /* overlong, or past U+10FFFF */
        if (len == 0 || *u == '\t' || *u == '\n' || eeb_text_control((const char *)u, shown)) {
            out[o++] = '?';
            u += len ? len : 1;
            continue;
        }
        if (o + len > max)
            break;
        memcpy(out + o, u, len);
        o += len, u += len;
    }
    out[o] = '\0';
}

void eeb_config_put_sut(json_t *o, const char *name, const char *version, const char *kind,
                        const char *hosting, const char *detail)
{
    char n[EEB_CONFIG_SUT_NAME + 1], v[EEB_CONFIG_SUT_VERSION + 1], d[EEB_CONFIG_SUT_DETAIL + 1];
    printable(name, n, sizeof n - 1);
    printable(version, v, sizeof v - 1);
    printable(detail, d, sizeof d - 1);
    json_t *sut = json_pack("{s:s, s:s}", "name", n, "kind", kind);
    if (sut && v[0])
        json_object_set_new(sut, "version", json_string(v));
    if (sut && hosting)
        json_object_set_new(sut, "hosting", json_string(hosting));
    if (sut && d[0])
        json_object_set_new(sut, "detail", json_string(d));
    json_object_set_new(o, "sut", sut);
}

json_t *eeb_config_device_model(const struct eeb_config_device *d)
{
    json_t *res = json_object();
    for (int i = 0; i < 4; i++)
        json_object_set_new(res, util_keys[i], json_real(d->resources[i]));
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f}", "design", d->design, "train_step_s",
                          d->train_step_s, "predict_batch_s", d->predict_batch_s, "train_w",
                          d->train_w, "predict_w", d->predict_w, "idle_w", d->idle_w);
    json_object_set_new(o, "resources", res);
    return o;
}

void eeb_config_put_input(json_t *o, const char *key, const char *path, const char *sha256,
                          uint64_t items)
{
    json_t *in = json_object();
    if (path)
        json_object_set_new(in, "path", json_string(path));
    if (sha256)
        json_object_set_new(in, "sha256", json_string(sha256));
    if (items)
        json_object_set_new(in, "items", json_integer((json_int_t)items));
    json_object_set_new(o, key, in);
}

void eeb_config_put_test_from(json_t *o, const char *server, uint64_t items)
{
    json_object_set_new(o, "test",
                        json_pack("{s:s, s:I}", "from", server, "items", (json_int_t)items));
}

void eeb_config_put_official(json_t *o, const char *server, int64_t run_id)
{
    json_object_set_new(o, "official",
                        json_pack("{s:s, s:I}", "server", server, "run_id", (json_int_t)run_id));
}

void eeb_config_put_entry(json_t *o, const char *entry, const char *division, double tier_w)
{
    json_t *official = json_object_get(o, "official");
    if (entry)
        json_object_set_new(official, "entry", json_string(entry));
    if (division)
        json_object_set_new(official, "division", json_string(division));
    if (!isnan(tier_w))
        json_object_set_new(official, "tier_w", json_real(tier_w));
}

void eeb_config_put_power(json_t *o, const char *source, double rate_hz, const char *provenance,
                          const char *note)
{
    json_t *power = json_pack("{s:s, s:f, s:s}", "source", source, "rate_hz", rate_hz, "provenance",
                              provenance);
    if (power && note)
        json_object_set_new(power, "note", json_string(note));
    json_object_set_new(o, "power", power);
}

void eeb_config_put_update_interval(json_t *o, double update_interval_s)
{
    if (update_interval_s > 0 && isfinite(update_interval_s))
        json_object_set_new(json_object_get(o, "power"), "update_interval_s",
                            json_real(update_interval_s));
}

void eeb_config_put_meter(json_t *o, int64_t meter_run)
{
    json_object_set_new(json_object_get(o, "power"), "meter_run", json_integer(meter_run));
}

void eeb_config_put_budgets(json_t *o, double t_max_s, double p_max_w, const char *clock,
                            double grace_s, int abort_on_pmax)
{
    json_t *b = json_pack("{s:f, s:f}", "t_max_s", t_max_s, "p_max_w", p_max_w);
    if (b && clock)
        json_object_set_new(b, "clock", json_string(clock));
    if (b && !isnan(grace_s))
        json_object_set_new(b, "grace_s", json_real(grace_s));
    if (b && abort_on_pmax >= 0)
        json_object_set_new(b, "abort_on_pmax", json_boolean(abort_on_pmax));
    json_object_set_new(o, "budgets", b);
}

void eeb_config_put_util(json_t *o, const double frac[4], const char *source, const char *kind,
                         const char *device)
{
    json_t *u = json_object();
    for (int i = 0; i < 4; i++)
        json_object_set_new(u, util_keys[i], json_real(frac[i]));
    json_object_set_new(u, "source", json_string(source));
    json_object_set_new(u, "kind", json_string(kind));
    if (device && device[0])
        json_object_set_new(u, "device", json_string(device));
    json_object_set_new(o, "util", u);
}

void eeb_config_put_rules(json_t *o, const char *version, const char *file, const double weights[4],
                          double window_s, double min_rate_hz)
{
    json_t *w = json_object(), *r = json_object();
    for (int i = 0; i < 4; i++)
        json_object_set_new(w, weight_keys[i], json_real(weights[i]));
    json_object_set_new(r, "version", json_string(version));
    json_object_set_new(r, "file", file ? json_string(file) : json_null());
    json_object_set_new(r, "weights", w);
    json_object_set_new(r, "power_window_s", json_real(window_s));
    json_object_set_new(r, "min_rate_hz", json_real(min_rate_hz));
    json_object_set_new(o, "rules", r);
}

/* ---- the reader ---- */

static void text_at(const json_t *o, const char *key, char *buf, size_t n)
{
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(buf, n, "%s", s ? s : "");
}

int eeb_config_record_read(const char *text, struct eeb_config_record *out)
{
    *out = (struct eeb_config_record){.window_s = NAN,
                                      .min_rate_hz = NAN,
                                      .rate_hz = NAN,
                                      .update_interval_s = NAN,
                                      .test_items = NAN,
                                      .batch = NAN,
                                      .frozen = NAN,
                                      .epochs = NAN,
                                      .steps = NAN,
                                      .schedule_steps = NAN,
                                      .tier_w = NAN};
    for (int i = 0; i < 4; i++)
        out->util[i] = out->weights[i] = NAN;
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(o)) {
        json_decref(o);
        return EEB_EFORMAT;
    }
    const json_t *util = json_object_get(o, "util"), *rules = json_object_get(o, "rules"),
                 *power = json_object_get(o, "power");
    text_at(o, "task", out->task, sizeof out->task);
    text_at(o, "backend", out->backend, sizeof out->backend);
    text_at(o, "provenance", out->provenance, sizeof out->provenance);
    const json_t *sut = json_object_get(o, "sut");
    char given[1024];
    text_at(sut, "name", given, sizeof given); /* bounded again: the file may be anyone's */
    printable(given, out->sut_name, sizeof out->sut_name - 1);
    text_at(sut, "version", given, sizeof given);
    printable(given, out->sut_version, sizeof out->sut_version - 1);
    text_at(sut, "kind", given, sizeof given);
    printable(given, out->sut_kind, sizeof out->sut_kind - 1);
    text_at(sut, "hosting", given, sizeof given);
    printable(given, out->sut_hosting, sizeof out->sut_hosting - 1);
    text_at(sut, "detail", given, sizeof given);
    printable(given, out->sut_detail, sizeof out->sut_detail - 1);
    for (int i = 0; i < 4; i++) {
        out->util[i] = eeb_json_number_at(util, util_keys[i]);
        out->weights[i] = eeb_json_number_at(json_object_get(rules, "weights"), weight_keys[i]);
    }
    text_at(util, "source", out->util_source, sizeof out->util_source);
    text_at(util, "device", out->util_device, sizeof out->util_device);
    const json_t *budgets = json_object_get(o, "budgets"),
                 *device = json_object_get(o, "device_model");
    out->t_max_s = eeb_json_number_at(budgets, "t_max_s");
    out->p_max_w = eeb_json_number_at(budgets, "p_max_w");
    text_at(budgets, "clock", out->clock, sizeof out->clock);
    out->window_s = eeb_json_number_at(rules, "power_window_s");
    out->min_rate_hz = eeb_json_number_at(rules, "min_rate_hz");
    out->rate_hz = eeb_json_number_at(power, "rate_hz");
    out->update_interval_s = eeb_json_number_at(power, "update_interval_s");
    text_at(power, "provenance", out->power_provenance, sizeof out->power_provenance);
    text_at(power, "source", out->power_source, sizeof out->power_source);
    out->test_items = eeb_json_number_at(json_object_get(o, "test"), "items");
    text_at(json_object_get(o, "finetune"), "sha256", out->finetune_sha256,
            sizeof out->finetune_sha256);
    text_at(json_object_get(o, "model"), "path", out->model_path, sizeof out->model_path);
    text_at(json_object_get(o, "model"), "sha256", out->model_sha256, sizeof out->model_sha256);
    text_at(json_object_get(o, "xclbin"), "sha256", out->xclbin_sha256, sizeof out->xclbin_sha256);
    text_at(json_object_get(o, "test"), "sha256", out->test_sha256, sizeof out->test_sha256);
    text_at(device, "design", out->design, sizeof out->design);
    out->device_step_s = eeb_json_number_at(device, "train_step_s");
    out->device_train_w = eeb_json_number_at(device, "train_w");
    out->batch = eeb_json_number_at(json_object_get(o, "training"), "batch");
    out->frozen = eeb_json_number_at(json_object_get(o, "training"), "frozen");
    out->epochs = eeb_json_number_at(json_object_get(o, "training"), "epochs");
    out->steps = eeb_json_number_at(json_object_get(o, "training"), "steps");
    out->schedule_steps = eeb_json_number_at(json_object_get(o, "training"), "schedule_steps");
    const json_t *official = json_object_get(o, "official");
    out->official = json_is_object(official);
    out->held_by_server = json_is_object(json_object_get(o, "server"));
    text_at(official, "entry", out->entry, sizeof out->entry);
    text_at(official, "division", out->division, sizeof out->division);
    out->tier_w = eeb_json_number_at(official, "tier_w");
    json_t *meter = json_object_get(power, "meter_run");
    out->meter_run = json_is_integer(meter) ? json_integer_value(meter) : 0;
    json_decref(o);
    return EEB_OK;
}
