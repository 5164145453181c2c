/*
 * files.c - the server's secrets on disk: its database (the key the
 * secret test items are named by, the teams' token hashes and runs), the
 * secret test sets it holds (their labels), the station keys.  Each must
 * be readable by its owner alone; the server refuses to start on one its
 * group or others may read or change, naming the file, its mode and the
 * chmod that mends it, rather than serve from a secret that has already
 * leaked to every account on the machine.
 */
#include "server_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int eeb_srv_file_private(const char *path, const char *what, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT
                   ? EEB_OK /* its reader says so, or the server makes it */
                   : eeb_errf(err, errlen, EEB_EIO, "%s %s: %s", what, path, strerror(errno));
    if (S_ISREG(st.st_mode) && (st.st_mode & 077))
        return eeb_errf(err, errlen, EEB_EINVAL,
                        "%s %s is mode %04o: its group or others may read or change it, and "
                        "the server's secrets must be its owner's alone: chmod 600 %s",
                        what, path, (unsigned)(st.st_mode & 07777), path);
    return EEB_OK;
}

int eeb_srv_database_private(const char *db, char *err, size_t errlen)
{
    /* a -wal or -shm left by a server killed mid-write holds the same rows */
    static const char *const parts[] = {"", "-wal", "-shm"};
    char path[4200];
    int rc = EEB_OK;
    for (size_t i = 0; i < sizeof parts / sizeof *parts && rc == EEB_OK; i++) {
        if (snprintf(path, sizeof path, "%s%s", db, parts[i]) >= (int)sizeof path)
            return eeb_errf(err, errlen, EEB_EINVAL, "%.64s...: path too long", db);
        rc = eeb_srv_file_private(path, "the server's database", err, errlen);
    }
    return rc;
}
