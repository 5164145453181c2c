/*
 * power_int.h - shared inside power/: the built-in sources' tables and the
 * argument parsing they have in common.
 */
#ifndef POWER_INT_H
#define POWER_INT_H

#include "eeb_power.h"

extern const struct eeb_power_source_ops power_sim_ops, power_replay_ops, power_faulty_ops;

/* Parses "key=value,key=value" (args may be empty): calls fn for each
 * pair; fn returns EEB_OK or an error it wrote.  uri names the source in
 * messages. */
int power_each_option(const char *uri, const char *args,
                      int (*fn)(void *arg, const char *key, const char *value, char *err,
                                size_t errlen),
                      void *arg, char *err, size_t errlen);

/* The whole of text as a finite number, or EEB_EINVAL naming uri and key. */
int power_number(const char *uri, const char *key, const char *text, double *out, char *err,
                 size_t errlen);

#endif
