/*
 * teams.c - teams, made by the administrator (`eeb serve admin add-team`):
 * the name checked, a token drawn from the system's randomness and shown
 * once, and the team stored with the token's hash alone; the act kept in
 * the audit log (the team's name, never its token).
 */
#include "server_int.h"

#include <string.h>

int eeb_server_add_team(const char *path, const char *name, char token[EEB_TOKEN_HEX], char *err,
                        size_t errlen)
{
    token[0] = '\0';
    if (!eeb_text_ok(name, 64, "_.-"))
        return eeb_errf(err, errlen, EEB_EINVAL, "team name '%s': 1 to 64 of A-Z a-z 0-9 _ . -",
                        name);
    unsigned char raw[32];
    char secret[EEB_TOKEN_HEX];
    int rc = eeb_random_bytes(raw, sizeof raw, err, errlen);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    struct eeb_srv_store *s;
    if ((rc = eeb_srv_store_open(path, &s, err, errlen)) == EEB_OK) {
        rc = eeb_srv_store_team_add(s, name, secret, err, errlen);
        if (rc == EEB_OK)
            rc = eeb_srv_store_audit(s, "add-team", name,
                                     "a team made: its token shown once, kept as its hash", err,
                                     errlen);
        eeb_srv_store_close(s);
    }
    if (rc == EEB_OK)
        memcpy(token, secret, sizeof secret);
    memset(raw, 0, sizeof raw), memset(secret, 0, sizeof secret);
    return rc;
}
