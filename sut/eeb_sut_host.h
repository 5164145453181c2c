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
#include "tasks/eeb_tasks.h"

#include <stddef.h>

/* Whether ops, a table of a version this eeb knows (1..EEB_SUT_ABI_VERSION),
 * reaches the member at offset: a member a later version appended is
 * absent from an older table (and must not be read: the library's table
 * ends before it).  0 for a version this eeb does not know. */
int eeb_sut_ops_has(const struct eeb_sut_ops *ops, size_t offset);

/* ops's member m, or NULL if the table's version lacks it: every read of
 * a slot goes through this, so an older SUT's table is read no further
 * than it reaches. */
#define EEB_SUT_SLOT(ops, m)                                                                       \
    (eeb_sut_ops_has((ops), offsetof(struct eeb_sut_ops, m)) ? (ops)->m : NULL)

/* EEB_OK if ops is a table this eeb drives: EEB_EVERSION for an
 * abi_version outside 1..EEB_SUT_ABI_VERSION (a newer one named with this
 * eeb's), EEB_EINVAL naming the first required slot it lacks (name, open,
 * load_model, train, predict, close); where names it in err (the
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

/* EEB_OK if exec:command's program can be started (found as execvp finds
 * it, a file that may be run), else the error its start would give. */
int eeb_sut_exec_check(const char *command, char *err, size_t errlen);

/* exec:PROGRAM ARGS...: the program started (argv split on spaces, no
 * shell), the protocol's open sent with setup, and answered within
 * deadline_s.  EEB_OK with *ops (the table that speaks the protocol) and
 * *state (its handle for every call, closed by ops->close, which ends the
 * program), or an error naming the program and what it did (sut/exec.c,
 * docs/sut.md: the protocol).  Every later call is answered within
 * deadline_s too, or the program is killed and the call fails saying so.
 * The program is killed too if eeb ends first, however it ends. */
int eeb_sut_exec_start(const char *command, const struct eeb_sut_setup *setup, double deadline_s,
                       const struct eeb_sut_ops **ops, void **state, char *err, size_t errlen);

/* A team's library hosted in a process of its own: eeb's program
 * (eeb_sut_host_program) started as `eeb sut serve -- LIBRARY`, driven as
 * eeb_sut_exec_start drives a program, every message naming the library.
 * A library that cannot be loaded, or whose table this eeb does not drive,
 * fails open with EEB_EFORMAT and the loader's reason. */
int eeb_sut_hosted_start(const char *library, const struct eeb_sut_setup *setup, double deadline_s,
                         const struct eeb_sut_ops **ops, void **state, char *err, size_t errlen);

/* The program that hosts a library: $EEB_SUT_HOST if set, else this
 * process's own executable (eeb; a test binary sets EEB_SUT_HOST). */
int eeb_sut_host_program(char *path, size_t n);

/* SIGKILL to the process of an exec or hosted SUT's state, now, from any
 * thread: a call hanging in another thread then fails (its process gone)
 * and close reaps it.  1 if there was a process. */
int eeb_sut_exec_kill(void *state);

/* `eeb sut serve`'s table: ops (a version this eeb knows) as a whole table
 * of this eeb's version, the slots its version lacks NULL. */
void eeb_sut_ops_whole(const struct eeb_sut_ops *ops, struct eeb_sut_ops *whole);

/* EEB_OK if path names a file that may be a SUT library (it exists, is a
 * regular file, starts as an ELF object), else why not: checked without
 * loading it, so none of its code runs in eeb. */
int eeb_sut_plugin_check_file(const char *path, char *err, size_t errlen);

/* ---- a SUT, whichever way it is reached (sut/host.c) ---- */

enum eeb_sut_kind { EEB_SUT_BUILTIN, EEB_SUT_LIBRARY, EEB_SUT_EXEC };

/* How backend is reached: "exec:..." a program, a name with a '/' a
 * library, anything else one of eeb's own. */
enum eeb_sut_kind eeb_sut_kind_of(const char *backend);

/* A team's SUT's backend as a run declares it to a server: the kind alone
 * (its path or command line is the team's own text). */
#define EEB_SUT_DECLARED_LIBRARY "library"
#define EEB_SUT_DECLARED_EXEC    "exec"

/* The kind of a backend as a record holds it: as run (eeb_sut_kind_of),
 * or as declared to a server. */
enum eeb_sut_kind eeb_sut_kind_recorded(const char *backend);

/* EEB_OK if backend can be opened: one of eeb's own (eeb_accel_check_name),
 * a library that loads and passes the check, a program that exists and
 * may be run; else why not.  Nothing is started. */
int eeb_sut_check_backend(const char *backend, char *err, size_t errlen);

/* A call's deadline where none is given: eeb run's --sut-deadline default. */
#define EEB_SUT_DEADLINE_S 300.0

/* What a SUT is opened with besides the setup. */
struct eeb_sut_options {
    const struct eeb_accel_config *builtin; /* eeb's own: their settings */
    const char *team_config;                /* a team's: its config string ("" if NULL) */
    double deadline_s; /* exec, hosted: every call's answer within this (0: EEB_SUT_DEADLINE_S) */
    int in_process;    /* a team's library: loaded into eeb (no deadline, a crash is eeb's) */
};

struct eeb_sut; /* an open SUT */

/* Opens backend with setup (its config filled from opt).  Errors of a
 * team's SUT name it and the call: "SUT './libteam.so': open: ...". */
int eeb_sut_open(const char *backend, const struct eeb_sut_setup *setup,
                 const struct eeb_sut_options *opt, struct eeb_sut **out, char *err, size_t errlen);
int eeb_sut_load_model(struct eeb_sut *s, const char *path, char *err, size_t errlen);
/* One step on a batch as the shard holds it (eeb_batcher_new_as_stored). */
int eeb_sut_train(struct eeb_sut *s, const struct eeb_task_batch *b, struct eeb_sut_step *step,
                  char *err, size_t errlen);
int eeb_sut_end_training(struct eeb_sut *s, char *err, size_t errlen);
/* Zeros where the SUT reports no counters. */
void eeb_sut_counters(struct eeb_sut *s, struct eeb_sut_counters *c);
/* EEB_ENOTSUP, naming the SUT, if it writes no model. */
int eeb_sut_save_model(struct eeb_sut *s, const char *path, char *err, size_t errlen);
/* The test stage's predictor over s (eeb_task_evaluate_with): its answers
 * checked (classes in range, counts within max_boxes) before they count. */
void eeb_sut_predictor(struct eeb_sut *s, struct eeb_task_predictor *p);
void eeb_sut_close(struct eeb_sut *s);

/* What the open SUT is, for the run's record: its name (the table's, as
 * the team's library or program says it; eeb's own: the backend's), its
 * version (the table's version slot, "" if it has none or its ABI version
 * lacks the slot; eeb's own: ""), its kind's name (eeb_sut_kind_name) and
 * what its counters' detail says ("" if it reports none).  The team's text
 * as given: its reader bounds it. */
struct eeb_sut_identity {
    char name[256];
    char version[256];
    const char *kind;
    const char *hosting; /* "process" (its own), "in-process" (eeb's) */
    char detail[64];
};
void eeb_sut_identify(struct eeb_sut *s, struct eeb_sut_identity *id);

/* Whether s runs in a process of its own: an exec program, or a library
 * hosted (not in_process). */
int eeb_sut_isolated(const struct eeb_sut *s);

/* Stops s now if it runs in a process of its own (the process killed,
 * from any thread: a call in flight then fails), for a run abandoning a
 * call that did not return; 0 if it runs in eeb's process, where nothing
 * can stop it.  s stays to be closed. */
int eeb_sut_abandon(struct eeb_sut *s);

/* "library", "exec" or "builtin". */
const char *eeb_sut_kind_name(enum eeb_sut_kind kind);

/* ---- the conformance battery (sut/check.c, `eeb sut check`) ---- */

/* The items, in the order they are run and printed (docs/sut.md). */
enum eeb_sut_check_item {
    EEB_SUT_CHECK_ABI,         /* the table loads, passes eeb_sut_ops_check; its name */
    EEB_SUT_CHECK_OPEN,        /* open with the shard's setup, load_model */
    EEB_SUT_CHECK_SHAPES,      /* answers well formed for batches of 1 and batch_max */
    EEB_SUT_CHECK_DETERMINISM, /* the same items twice: the same answers, bit for bit */
    EEB_SUT_CHECK_ORDER,       /* reordered, re-batched, re-drawn items: the same answers */
    EEB_SUT_CHECK_TRAINING,    /* training changes an answer; its steps are sane */
    EEB_SUT_CHECK_DEADLINE,    /* every call within the deadline */
    EEB_SUT_CHECK_COUNTERS,    /* the optional counters and save_model */
    EEB_SUT_CHECK_ITEMS
};

enum eeb_sut_check_outcome { EEB_SUT_CHECK_PASS, EEB_SUT_CHECK_FAIL, EEB_SUT_CHECK_SKIP };

struct eeb_sut_check_report;

struct eeb_sut_check_options {
    const char *backend;  /* as eeb run --backend takes it */
    enum eeb_task task;   /* the synthetic shards' (ignored with finetune and test) */
    const char *model;    /* the team's model file; NULL: eeb's own get a fresh
                             reference model, a team's SUT no load_model call */
    const char *finetune; /* both or neither: NULL, small synthetic shards are made */
    const char *test;
    const char *sut_config; /* a team's config string (NULL: "") */
    const char *xclbin;     /* the design handed to open (NULL: "") */
    double deadline_s;      /* the most any call may take (0: 60) */
    int in_process;         /* a team's library loaded into eeb, not hosted */
    /* A call of a SUT in eeb's own process (eeb's backends, in_process) ran
     * past deadline_s: nothing can stop it, so hung is called (from another
     * thread) with the report so far, the deadline item failed naming the
     * call, and is expected to end the process.  NULL: the check waits. */
    void (*hung)(const struct eeb_sut_check_report *report, void *arg);
    void *hung_arg;
};

struct eeb_sut_check_result {
    enum eeb_sut_check_outcome outcome;
    char reason[512];
};

struct eeb_sut_check_report {
    char name[256];    /* the SUT's own name, "" if never learnt */
    char version[256]; /* and its version, "" if it says none (or never opened) */
    struct eeb_sut_check_result items[EEB_SUT_CHECK_ITEMS];
    double slowest_s;      /* the slowest call's wall time */
    char slowest_call[32]; /* and which it was */
};

/* The item's short name ("abi", "open/load", ...). */
const char *eeb_sut_check_item_name(enum eeb_sut_check_item item);

/* Runs the battery on opt->backend into *report.  EEB_OK when it ran
 * (the items say pass, FAIL or skip); an error, naming it, when it could
 * not: the SUT cannot be found or loaded, the shards or the model cannot
 * be made or read, the temporary directory.  Its temporary files (in
 * $TMPDIR, eeb-sut-check-*) are removed either way. */
int eeb_sut_check_run(const struct eeb_sut_check_options *opt, struct eeb_sut_check_report *report,
                      char *err, size_t errlen);

#endif
