/*
 * eeb_config_record.h - the configuration stored with every run (the
 * runs table's config column, one JSON object): its keys, the one writer
 * of each of its sections and the one reader of what is read back.
 *
 * eeb run (harness/run_record.c), the server (a registered run's) and
 * eeb power log write it through the section writers, in their own order
 * of sections; the judge, the report, the power summary and the server's
 * client read it through eeb_config_record_read alone.  A key renamed here
 * is renamed for both sides; tests/rundb/test_config_record.c writes every
 * section and reads each figure back.
 */
#ifndef EEB_CONFIG_RECORD_H
#define EEB_CONFIG_RECORD_H

#include "common/eeb_common.h"

#include <jansson.h>
#include <stdint.h>

/* ---- the writers: each adds one section to the object o ---- */

/* "task": the task's name ("cls"). */
void eeb_config_put_task(json_t *o, const char *task);

/* "backend" and "provenance": what ran the run (its whole name, e.g.
 * "faulty:emu?delay_ms=5") and where its figures come from: measured,
 * counter or modeled. */
void eeb_config_put_backend(json_t *o, const char *backend, const char *provenance);

/* "sut": what the system under test is: its name as it says it, its own
 * version ("" or NULL: left out; a SUT of ABI version 1 has none), its kind
 * ("library", "exec", "builtin"), where it ran ("process": one of its own;
 * "in-process": eeb's; NULL: left out) and its counters' detail ("" or
 * NULL: left out).  The team's text is kept to EEB_CONFIG_SUT_NAME bytes
 * (the version to EEB_CONFIG_SUT_VERSION, the detail to
 * EEB_CONFIG_SUT_DETAIL) of printable UTF-8, anything else '?'. */
#define EEB_CONFIG_SUT_NAME    255
#define EEB_CONFIG_SUT_VERSION 255
#define EEB_CONFIG_SUT_DETAIL  63
void eeb_config_put_sut(json_t *o, const char *name, const char *version, const char *kind,
                        const char *hosting, const char *detail);

/* The device the analytical model predicts: its design (k=v,...), a
 * training step's and a predicted batch's seconds, the watts of each stage
 * and idle, the resources it uses (LUT, FF, BRAM in 36 Kb blocks, DSP). */
struct eeb_config_device {
    const char *design;
    double train_step_s, predict_batch_s;
    double train_w, predict_w, idle_w;
    double resources[4];
};

/* The modeled device as an object: the configuration's "device_model" and
 * the "device_model" event's payload. */
json_t *eeb_config_device_model(const struct eeb_config_device *d);

/* "model", "xclbin", "finetune", "test": an input by path, SHA-256 and
 * item count; a NULL path or sha256, or 0 items, is left out. */
void eeb_config_put_input(json_t *o, const char *key, const char *path, const char *sha256,
                          uint64_t items);

/* "test" of a run whose test inputs came from a server: from, items. */
void eeb_config_put_test_from(json_t *o, const char *server, uint64_t items);

/* "official": the server that drives the run and the run's id there. */
void eeb_config_put_official(json_t *o, const char *server, int64_t run_id);

/* "official"."entry", "division" and "tier_w": the round's entry an
 * official run is a run of, its division and P_max tier, as the run asked
 * for them (NULL, NAN: left out, the server's default); after
 * eeb_config_put_official. */
void eeb_config_put_entry(json_t *o, const char *entry, const char *division, double tier_w);

/* "power": the meter's URI, the sampling rate, the provenance of its
 * figures, and what a recorded trace skipped (note; NULL: none). */
void eeb_config_put_power(json_t *o, const char *source, double rate_hz, const char *provenance,
                          const char *note);

/* "power"."update_interval_s": how often the meter makes a new reading
 * (seconds; nothing for 0, unknown), against which a gap in its samples
 * is judged; after eeb_config_put_power. */
void eeb_config_put_update_interval(json_t *o, double update_interval_s);

/* "power"."meter_run": the run (a power log in the same file) holding the
 * samples of the meter the evaluation server itself read for this run;
 * after eeb_config_put_power. */
void eeb_config_put_meter(json_t *o, int64_t meter_run);

/* The clocks T and T_max are read on: the host's (a meter's run), or the
 * modeled device's, steps x its step time (an emulated run's: the same S
 * on any machine at any load). */
#define EEB_CLOCK_WALL    "wall"
#define EEB_CLOCK_MODELED "modeled"

/* "budgets": T_max and P_max, the clock T_max applies to (EEB_CLOCK_*;
 * NULL: left out, the wall's), the grace period and abort-on-P_max if
 * known (grace_s NAN, abort_on_pmax < 0: left out). */
void eeb_config_put_budgets(json_t *o, double t_max_s, double p_max_w, const char *clock,
                            double grace_s, int abort_on_pmax);

/* "util": the four fractions (LUT, FF, BRAM, DSP), where they came from,
 * their kind: "report" (a placed design's) or "declared", and the part the
 * report names (NULL or "": left out). */
void eeb_config_put_util(json_t *o, const double frac[4], const char *source, const char *kind,
                         const char *device);

/* "rules": the version, the file (NULL: the built-in, written null), the
 * weights w_u, w_t, w_p, w_s and the P_max rule's window and minimum rate. */
void eeb_config_put_rules(json_t *o, const char *version, const char *file, const double weights[4],
                          double window_s, double min_rate_hz);

/* ---- the reader ---- */

/* What is read back; a figure the configuration lacks is NAN, a text "". */
struct eeb_config_record {
    char task[16];
    char backend[512];
    char sut_name[EEB_CONFIG_SUT_NAME + 1];       /* the SUT's own name, or "" (unrecorded) */
    char sut_version[EEB_CONFIG_SUT_VERSION + 1]; /* the SUT's own version, or "" (none) */
    char sut_kind[16];                            /* library, exec, builtin, or "" */
    char sut_hosting[16];                         /* process, in-process, or "" (unrecorded) */
    char sut_detail[EEB_CONFIG_SUT_DETAIL + 1];   /* its counters' detail, or "" */
    char provenance[16];     /* the run's figures': measured, counter or modeled */
    double util[4];          /* LUT, FF, BRAM, DSP */
    char util_source[512];   /* the report, the spec or the xclbin they came from */
    char util_device[64];    /* the part their report names, or "" */
    double weights[4];       /* w_u, w_t, w_p, w_s */
    double t_max_s, p_max_w; /* the budgets the run was given */
    double window_s;         /* the P_max rule's window */
    double min_rate_hz;
    double rate_hz;            /* the meter's sampling rate */
    double update_interval_s;  /* the meter's own update interval (NAN: unrecorded) */
    char power_provenance[16]; /* the meter's */
    char power_source[512];    /* the meter's URI as given */
    double test_items;         /* NAN: not recorded */
    char finetune_sha256[65];  /* the fine-tune set trained on */
    char model_path[1024];     /* the model file the run started from, as given */
    char model_sha256[65];     /* and its SHA-256 */
    char xclbin_sha256[65];    /* the xclbin given (--xclbin), or "" */
    char test_sha256[65];      /* the test inputs a local run read, or "" */
    char clock[8];             /* EEB_CLOCK_*; "": the wall's */
    char design[512];          /* the modeled device's design, or "" */
    double device_step_s;      /* its training step's seconds, and watts */
    double device_train_w;
    double batch, frozen;  /* the training's items per step and frozen layers */
    double epochs, steps;  /* its epochs, and the steps it was cut at (NAN: none) */
    double schedule_steps; /* the steps a server counted its schedule takes (NAN: none) */
    int official;          /* a server drove the run: its M_s is the server's */
    int held_by_server;    /* the server's copy of a run: its predictions hold no truth, and
                            * its M_s is the server's too */
    char entry[65];        /* and in a round, the entry it asked to be a run of, or "" */
    char division[8];      /* its division, or "" */
    double tier_w;         /* its P_max tier (NAN: not asked for) */
    int64_t meter_run;     /* the server's meter's samples are this run's (0: its own) */
};

/* Reads the stored configuration text.  EEB_EFORMAT for text that is not
 * one JSON object (out then holds NANs and ""), else EEB_OK. */
int eeb_config_record_read(const char *json, struct eeb_config_record *out);

#endif
