/*
 * rounds.c - a benchmark round as the organizer opens and closes it
 * (eeb_server.h): its defaults, what makes one well formed, and the calls
 * `eeb serve admin` makes on the server's database, which may be serving
 * meanwhile (each call is one transaction of its own).
 */
#include "server_store.h"

#include "scoring/eeb_score.h"
#include "tasks/eeb_task_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_NS (86400 * (int64_t)1000000000)

static const char *const aggregate_names[] = {"median", "olympic"};

const char *eeb_round_aggregate_name(enum eeb_round_aggregate a)
{
    return (unsigned)a < 2 ? aggregate_names[a] : "?";
}

int eeb_round_aggregate_parse(const char *s, enum eeb_round_aggregate *out)
{
    for (int i = 0; i < 2; i++)
        if (strcmp(s, aggregate_names[i]) == 0) {
            *out = (enum eeb_round_aggregate)i;
            return EEB_OK;
        }
    return EEB_EINVAL;
}

void eeb_round_default(struct eeb_round *r, const char *name)
{
    *r = (struct eeb_round){.runs = 5, .aggregate = EEB_ROUND_MEDIAN, .cap = 20};
    snprintf(r->name, sizeof r->name, "%s", name);
    struct eeb_rules rules;
    char ignored[256];
    if (eeb_score_rules_load(NULL, &rules, ignored, sizeof ignored) == EEB_OK)
        snprintf(r->rules_version, sizeof r->rules_version, "%s", rules.version);
    r->opens_utc_ns = eeb_utc_ns();
    r->closes_utc_ns = r->opens_utc_ns + 30 * DAY_NS;
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        const struct eeb_task_profile *p = eeb_task_profile((enum eeb_task)t);
        r->task[t] = (struct eeb_round_task){.t_max_s = p->t_max_s, .ntiers = 1};
        r->task[t].tiers_w[0] = p->p_max_w;
    }
}

/* What makes a round one the server can hold runs to. */
static int well_formed(const struct eeb_round *r, char *err, size_t errlen)
{
    if (!eeb_text_ok(r->name, EEB_ROUND_NAME - 1, "_.-"))
        return eeb_errf(err, errlen, EEB_EINVAL, "round name '%s': 1 to 64 of A-Z a-z 0-9 _ . -",
                        r->name);
    if (r->runs < 1 || r->runs > EEB_ROUND_RUNS_MAX)
        return eeb_errf(err, errlen, EEB_EINVAL, "round %s: runs an entry %d: expected 1 to %d",
                        r->name, r->runs, EEB_ROUND_RUNS_MAX);
    if (r->cap < r->runs)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "round %s: a cap of %d runs a task is less than one entry's %d", r->name,
                        r->cap, r->runs);
    if (r->closes_utc_ns <= r->opens_utc_ns)
        return eeb_errf(err, errlen, EEB_EINVAL, "round %s closes before it opens", r->name);
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        const struct eeb_round_task *rt = &r->task[t];
        const char *task = eeb_task_name((enum eeb_task)t);
        if (!(rt->t_max_s > 0 && rt->t_max_s < 1e7))
            return eeb_errf(err, errlen, EEB_EINVAL, "round %s: %s T_max %g s: expected > 0",
                            r->name, task, rt->t_max_s);
        if (rt->ntiers < 1 || rt->ntiers > EEB_ROUND_TIERS)
            return eeb_errf(err, errlen, EEB_EINVAL, "round %s: %s has %d P_max tiers: 1 to %d",
                            r->name, task, rt->ntiers, EEB_ROUND_TIERS);
        for (int i = 0; i < rt->ntiers; i++)
            if (!(rt->tiers_w[i] > 0 && rt->tiers_w[i] < 1e6) ||
                (i && rt->tiers_w[i] <= rt->tiers_w[i - 1]))
                return eeb_errf(err, errlen, EEB_EINVAL,
                                "round %s: %s P_max tiers: expected watts above 0, ascending",
                                r->name, task);
        size_t n = strlen(rt->model_sha256);
        if (n && (n != 64 || strspn(rt->model_sha256, "0123456789abcdef") != 64))
            return eeb_errf(err, errlen, EEB_EINVAL,
                            "round %s: %s base model: expected a SHA-256, 64 hex digits", r->name,
                            task);
        if (rt->epochs_max < 0)
            return eeb_errf(err, errlen, EEB_EINVAL, "round %s: %s epochs at most: %d", r->name,
                            task, rt->epochs_max);
    }
    return EEB_OK;
}

int eeb_server_round_open(const char *db, const struct eeb_round *r, char *err, size_t errlen)
{
    int rc = well_formed(r, err, errlen);
    struct eeb_srv_store *s = NULL;
    if (rc == EEB_OK)
        rc = eeb_srv_store_open(db, &s, err, errlen);
    if (rc == EEB_OK)
        rc = eeb_srv_store_round_add(s, r, err, errlen);
    char what[160];
    snprintf(what, sizeof what, "%d runs an entry (%s), cap %d runs a task", r->runs,
             eeb_round_aggregate_name(r->aggregate), r->cap);
    if (rc == EEB_OK)
        rc = eeb_srv_store_audit(s, "open-round", r->name, what, err, errlen);
    eeb_srv_store_close(s);
    return rc;
}

int eeb_server_round_close(const char *db, const char *name, char *err, size_t errlen)
{
    struct eeb_srv_store *s;
    int rc = eeb_srv_store_open(db, &s, err, errlen);
    if (rc)
        return rc;
    rc = eeb_srv_store_round_close(s, name, err, errlen);
    if (rc > 0)
        rc = eeb_srv_store_audit(s, "close-round", name, "closed before its end", err, errlen) ?: 1;
    eeb_srv_store_close(s);
    return rc < 0 ? rc
           : rc > 0
               ? EEB_OK
               : eeb_errf(err, errlen, EEB_EINVAL, "%s: no round named '%s' is open", db, name);
}

struct round_list {
    struct eeb_round *r;
    size_t n, cap;
};

static int gather_round(void *arg, int64_t id, const struct eeb_round *r)
{
    (void)id;
    struct round_list *l = arg;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 8;
        struct eeb_round *grown = realloc(l->r, cap * sizeof *grown);
        if (!grown)
            return EEB_ENOMEM;
        l->r = grown, l->cap = cap;
    }
    l->r[l->n++] = *r;
    return 0;
}

int eeb_server_rounds(const char *db, struct eeb_round **out, size_t *n, char *err, size_t errlen)
{
    struct eeb_srv_store *s;
    struct round_list l = {0};
    int rc = eeb_srv_store_open(db, &s, err, errlen);
    if (rc)
        return rc;
    rc = eeb_srv_store_rounds_each(s, gather_round, &l, err, errlen);
    eeb_srv_store_close(s);
    if (rc == EEB_ENOMEM)
        eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    if (rc) {
        free(l.r);
        return rc;
    }
    *out = l.r, *n = l.n;
    return EEB_OK;
}
