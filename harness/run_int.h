/*
 * run_int.h - what the run's files share: the verdict computed from the
 * database, by the run itself and by `eeb check` alike.
 */
#ifndef RUN_INT_H
#define RUN_INT_H

#include "eeb_run.h"

/*
 * Judges run from the database at db_path: T from the fine-tune events,
 * E, validity and the P_max rule from its samples (eeb_power_summarize),
 * M_u, the weights and the budgets from its stored configuration, and
 * M_s as given, or, if m_s is NAN, recomputed from its stored predictions.
 * Fills out's verdict fields; returns an error only for a database that
 * cannot be read.
 */
int run_judge(const char *db_path, int64_t run, double m_s, struct eeb_run_outcome *out, char *err,
              size_t errlen);

#endif
