/*
 * admin.c - the organizer's acts on the server's database (`eeb serve
 * admin`), which may be serving meanwhile: list the teams, revoke one,
 * hide a run while it is under review, show it again, or withdraw it; each
 * act is kept in the audit log with its reason, and the log is listed.
 * The leaderboard reads the log's last line to know its kept answers are
 * stale.
 */
#include "server_store.h"

#include <stdio.h>
#include <string.h>

/* A reason an act is kept with: said, printable, at most 500 bytes. */
static int reason_ok(const char *reason, char *err, size_t errlen)
{
    size_t n = reason ? strlen(reason) : 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)reason[i] < 0x20)
            return eeb_errf(err, errlen, EEB_EINVAL, "--reason: control characters are not kept");
    if (n == 0 || n > 500)
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "--reason: say why, in 1 to 500 characters: the audit log keeps it");
    return EEB_OK;
}

/* Opens db, runs act (EEB_OK or an error), closes it. */
static int on_store(const char *db,
                    int (*act)(struct eeb_srv_store *s, void *arg, char *err, size_t errlen),
                    void *arg, char *err, size_t errlen)
{
    struct eeb_srv_store *s;
    int rc = eeb_srv_store_open(db, &s, err, errlen);
    if (rc == EEB_OK) {
        rc = act(s, arg, err, errlen);
        eeb_srv_store_close(s);
    }
    return rc;
}

struct act {
    const char *db, *name, *reason;
    int64_t run;
    enum eeb_srv_withdrawal how;
    int voids; /* void-run, not a withdrawal */
    FILE *out;
};

static int revoke(struct eeb_srv_store *s, void *arg, char *err, size_t errlen)
{
    const struct act *a = arg;
    int rc = eeb_srv_store_team_revoke(s, a->name, a->reason, err, errlen);
    return rc ? (rc < 0 ? rc : EEB_OK)
              : eeb_errf(err, errlen, EEB_EINVAL, "%s: no team named '%s' holds a token", a->db,
                         a->name);
}

int eeb_server_team_revoke(const char *db, const char *name, const char *reason, char *err,
                           size_t errlen)
{
    struct act a = {.db = db, .name = name, .reason = reason};
    int rc = reason_ok(reason, err, errlen);
    return rc ? rc : on_store(db, revoke, &a, err, errlen);
}

static int run_act(struct eeb_srv_store *s, void *arg, char *err, size_t errlen)
{
    const struct act *a = arg;
    static const char *const states[] = {"shown (neither hidden nor withdrawn)", "hidden",
                                         "withdrawn"};
    int rc = a->voids ? eeb_srv_store_run_void(s, a->run, a->reason, err, errlen)
                      : eeb_srv_store_run_withdraw(s, a->run, a->how, a->reason, err, errlen);
    return rc ? (rc < 0 ? rc : EEB_OK)
              : eeb_errf(err, errlen, EEB_EINVAL, "%s: no run %lld that is %s", a->db,
                         (long long)a->run,
                         a->voids                    ? "not void already"
                         : a->how == EEB_SRV_RESTORE ? states[1]
                         : a->how == EEB_SRV_HIDE    ? states[0]
                                                     : "not withdrawn already");
}

int eeb_server_station_key_audit(const char *db, const char *path, char *err, size_t errlen)
{
    char target[EEB_ROUND_NAME];
    const char *base = strrchr(path, '/');
    /* the key's file, never the key; the log's target column holds 64 */
    snprintf(target, sizeof target, "%s", base ? base + 1 : path);
    struct eeb_srv_store *s;
    int rc = eeb_srv_store_open(db, &s, err, errlen);
    if (rc == EEB_OK) {
        rc = eeb_srv_store_audit(s, "station-key", target,
                                 "a station agent's key written (mode 0600): the server takes it "
                                 "as --station TEAM=agent:FILE",
                                 err, errlen);
        eeb_srv_store_close(s);
    }
    return rc;
}

int eeb_server_run_act(const char *db, int64_t run, enum eeb_server_run_act how, const char *reason,
                       char *err, size_t errlen)
{
    static const enum eeb_srv_withdrawal to_store[] = {[EEB_SERVER_HIDE] = EEB_SRV_HIDE,
                                                       [EEB_SERVER_RESTORE] = EEB_SRV_RESTORE,
                                                       [EEB_SERVER_WITHDRAW] = EEB_SRV_WITHDRAW,
                                                       [EEB_SERVER_VOID] = EEB_SRV_WITHDRAW};
    struct act a = {.db = db,
                    .run = run,
                    .how = to_store[how],
                    .voids = how == EEB_SERVER_VOID,
                    .reason = reason};
    int rc = reason_ok(reason, err, errlen);
    return rc ? rc : on_store(db, run_act, &a, err, errlen);
}

static int print_team(void *arg, const struct eeb_srv_team *t)
{
    char created[32], revoked[32];
    fprintf(arg, "%-24s created %s  %6lld runs  %s%s\n", t->name,
            eeb_utc_text(t->created_utc_ns, created), (long long)t->runs,
            t->revoked_utc_ns ? "revoked " : "active",
            t->revoked_utc_ns ? eeb_utc_text(t->revoked_utc_ns, revoked) : "");
    return 0;
}

static int list_teams(struct eeb_srv_store *s, void *arg, char *err, size_t errlen)
{
    return eeb_srv_store_teams_each(s, print_team, ((struct act *)arg)->out, err, errlen);
}

int eeb_server_list_teams(const char *db, FILE *out, char *err, size_t errlen)
{
    struct act a = {.db = db, .out = out};
    return on_store(db, list_teams, &a, err, errlen);
}

static int print_audit(void *arg, const struct eeb_srv_audit *a)
{
    char at[32];
    fprintf(arg, "%s  %-13s %-16s %s\n", eeb_utc_text(a->utc_ns, at), a->action, a->target,
            a->reason);
    return 0;
}

static int list_audit(struct eeb_srv_store *s, void *arg, char *err, size_t errlen)
{
    return eeb_srv_store_audit_each(s, print_audit, ((struct act *)arg)->out, err, errlen);
}

int eeb_server_list_audit(const char *db, FILE *out, char *err, size_t errlen)
{
    struct act a = {.db = db, .out = out};
    return on_store(db, list_audit, &a, err, errlen);
}
