/*
 * eeb_sut_host.h - the harness's side of the system-under-test interface
 * (sut/eeb_sut.h): finding a SUT's table by the backend name a run is
 * given, and checking it before it is driven.
 *
 *   emu, kernel, fp32, xrt, faulty:...   eeb's own backends (sut/builtin.c)
 *   ./libteam.so, /path/libteam.so       a team's library (sut/plugin.c)
 *   exec:PROGRAM ARGS...                 a team's program (sut/exec.c)
 */
#ifndef EEB_SUT_HOST_H
#define EEB_SUT_HOST_H

#include "common/eeb_common.h"
#include "fpga/accel/eeb_accel.h"
#include "sut/eeb_sut.h"

#include <stddef.h>

/* EEB_OK if ops is a table this eeb drives: EEB_EVERSION for another
 * abi_version, EEB_EINVAL naming the first required slot it lacks (name,
 * open, load_model, train, predict, close); where names it in err (the
 * library's path, or the program). */
int eeb_sut_ops_check(const struct eeb_sut_ops *ops, const char *where, char *err, size_t errlen);

/* A team's library at path (a name with a '/'): dlopen'ed, its
 * eeb_sut_entry called, the table checked.  EEB_OK with *ops and *library
 * (close it with eeb_sut_plugin_unload after the SUT is closed), or an
 * error naming the path and what is wrong: the file, a missing symbol, a
 * version this eeb does not drive, a missing slot. */
int eeb_sut_plugin_load(const char *path, const struct eeb_sut_ops **ops, void **library, char *err,
                        size_t errlen);
void eeb_sut_plugin_unload(void *library);

/* eeb's own backends as a SUT: one table, the backend and its settings in
 * the setup's config, one key=value a line (sut/builtin.c lists them). */
const struct eeb_sut_ops *eeb_sut_builtin(void);

/* That config for backend (its whole name) with cfg's settings; EEB_EINVAL
 * if it does not fit in n bytes. */
int eeb_sut_builtin_config(const char *backend, const struct eeb_accel_config *cfg, char *buf,
                           size_t n);

#endif
