/*
 * rules.c - the versioned scoring rules file (scoring/rules/v1.json).
 *
 * The schema is closed: every key is required, unknown keys and wrong types
 * are errors naming the key's path, because a typo in a rules file would
 * otherwise silently score every run with a default.
 *
 *   { "rules_version": "1",
 *     "power": { "rule": "moving_average", "window_s": 1, "min_sample_rate_hz": 1 },
 *     "tasks": { "cls":   { "weights": { "u": .., "t": .., "p": .., "s": .. } },
 *                "det":   { ... }, "video": { ... } } }
 */
#include "eeb_score.h"

#include "common/eeb_json.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES_BYTES (1u << 20)

/* Where we are in the document, for messages: "tasks.det.weights". */
struct ctx {
    const char *name;
    char *err;
    size_t errlen;
};

static int only_keys(const struct ctx *c, json_t *obj, const char *path, const char *const *allowed)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        int known = 0;
        for (const char *const *a = allowed; *a; a++)
            known |= strcmp(key, *a) == 0;
        if (!known)
            return eeb_errf(c->err, c->errlen, EEB_EINVAL, "%s: %s%sunknown key '%s'", c->name,
                            path, *path ? ": " : "", key);
    }
    return EEB_OK;
}

/* Looks up a required member of the expected JSON type (JSON_REAL stands
 * for any number, integer or real). */
static int member(const struct ctx *c, json_t *obj, const char *path, const char *key,
                  json_type type, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    const char *want = type == JSON_OBJECT   ? "an object"
                       : type == JSON_STRING ? "a string"
                                             : "a number";
    if (!v)
        return eeb_errf(c->err, c->errlen, EEB_EINVAL, "%s: %s%s%s: missing (expected %s)", c->name,
                        path, *path ? "." : "", key, want);
    int ok = type == JSON_REAL ? json_is_number(v) : json_typeof(v) == type;
    if (!ok)
        return eeb_errf(c->err, c->errlen, EEB_EINVAL, "%s: %s%s%s: expected %s, got %s", c->name,
                        path, *path ? "." : "", key, want, eeb_json_kind(v));
    *out = v;
    return EEB_OK;
}

static int number(const struct ctx *c, json_t *obj, const char *path, const char *key, double *out)
{
    json_t *v;
    int rc = member(c, obj, path, key, JSON_REAL, &v);
    if (rc == EEB_OK)
        *out = json_number_value(v);
    return rc;
}

static int parse_weights(const struct ctx *c, json_t *task, const char *taskpath,
                         struct eeb_weights *w)
{
    static const char *const keys[] = {"u", "t", "p", "s", NULL};
    static const char *const task_keys[] = {"weights", NULL};
    char path[64];
    json_t *obj;
    int rc;
    if ((rc = only_keys(c, task, taskpath, task_keys)) ||
        (rc = member(c, task, taskpath, "weights", JSON_OBJECT, &obj)))
        return rc;
    snprintf(path, sizeof path, "%s.weights", taskpath);
    if ((rc = only_keys(c, obj, path, keys)) || (rc = number(c, obj, path, "u", &w->u)) ||
        (rc = number(c, obj, path, "t", &w->t)) || (rc = number(c, obj, path, "p", &w->p)) ||
        (rc = number(c, obj, path, "s", &w->s)))
        return rc;
    char why[200];
    if (eeb_score_weights_check(w, why, sizeof why))
        return eeb_errf(c->err, c->errlen, EEB_EINVAL, "%s: %s: %s", c->name, path, why);
    return EEB_OK;
}

static int parse_power(const struct ctx *c, json_t *obj, struct eeb_power_rule *p)
{
    static const char *const keys[] = {"rule", "window_s", "min_sample_rate_hz", NULL};
    json_t *rule;
    int rc;
    if ((rc = only_keys(c, obj, "power", keys)) ||
        (rc = member(c, obj, "power", "rule", JSON_STRING, &rule)) ||
        (rc = number(c, obj, "power", "window_s", &p->window_s)) ||
        (rc = number(c, obj, "power", "min_sample_rate_hz", &p->min_rate_hz)))
        return rc;
    if (strcmp(json_string_value(rule), "moving_average") != 0)
        return eeb_errf(c->err, c->errlen, EEB_EINVAL,
                        "%s: power.rule: '%s' is not a known rule (expected moving_average)",
                        c->name, json_string_value(rule));
    if (!(p->window_s > 0 && p->window_s <= 3600))
        return eeb_errf(c->err, c->errlen, EEB_EINVAL,
                        "%s: power.window_s: %g is not in (0, 3600] seconds", c->name, p->window_s);
    if (!(p->min_rate_hz >= 0 && p->min_rate_hz <= 1e6))
        return eeb_errf(c->err, c->errlen, EEB_EINVAL,
                        "%s: power.min_sample_rate_hz: %g is not in [0, 1e6]", c->name,
                        p->min_rate_hz);
    return EEB_OK;
}

int eeb_score_rules_parse(const char *text, size_t len, const char *name, struct eeb_rules *out,
                          char *err, size_t errlen)
{
    static const char *const top_keys[] = {"rules_version", "power", "tasks", NULL};
    const char *task_keys[EEB_TASK_COUNT + 1] = {NULL}; /* the tasks' names */
    for (int t = 0; t < EEB_TASK_COUNT; t++)
        task_keys[t] = eeb_task_name((enum eeb_task)t);
    const struct ctx c = {name, err, errlen};
    struct eeb_rules r;
    memset(&r, 0, sizeof r);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return eeb_errf(err, errlen, EEB_EINVAL, "%s line %d column %d: %s", name, jerr.line,
                        jerr.column, jerr.text);
    int rc;
    json_t *version, *power, *tasks;
    if (!json_is_object(root)) {
        rc = eeb_errf(err, errlen, EEB_EINVAL, "%s: expected a JSON object at the top", name);
        goto out;
    }
    if ((rc = only_keys(&c, root, "", top_keys)) ||
        (rc = member(&c, root, "", "rules_version", JSON_STRING, &version)) ||
        (rc = member(&c, root, "", "power", JSON_OBJECT, &power)) ||
        (rc = member(&c, root, "", "tasks", JSON_OBJECT, &tasks)) ||
        (rc = parse_power(&c, power, &r.power)) || (rc = only_keys(&c, tasks, "tasks", task_keys)))
        goto out;
    const char *v = json_string_value(version);
    if (!*v || strlen(v) >= sizeof r.version) {
        rc =
            eeb_errf(err, errlen, EEB_EINVAL, "%s: rules_version: '%s' must be 1 to %zu characters",
                     name, v, sizeof r.version - 1);
        goto out;
    }
    strcpy(r.version, v);
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        char path[32];
        json_t *task;
        if ((rc = member(&c, tasks, "tasks", eeb_task_name((enum eeb_task)t), JSON_OBJECT, &task)))
            goto out;
        snprintf(path, sizeof path, "tasks.%s", eeb_task_name((enum eeb_task)t));
        if ((rc = parse_weights(&c, task, path, &r.weights[t])))
            goto out;
    }
    *out = r;
out:
    json_decref(root);
    return rc;
}

int eeb_score_rules_load(const char *path, struct eeb_rules *out, char *err, size_t errlen)
{
    if (!path)
        return eeb_score_rules_parse(eeb_score_rules_v1, strlen(eeb_score_rules_v1),
                                     "rules v1 (built in)", out, err, errlen);
    char *text;
    size_t len;
    int rc = eeb_read_file(path, MAX_RULES_BYTES, &text, &len, err, errlen);
    if (rc)
        return rc;
    rc = eeb_score_rules_parse(text, len, path, out, err, errlen);
    free(text);
    return rc;
}
