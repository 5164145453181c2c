/*
 * audit.c - the training audit's slice: which items of the fine-tune set
 * the system predicts before and after fine-tuning.  One function, so that
 * eeb run, the judge and a server that handed the seed out draw the same
 * items.
 */
#include "record/eeb_record.h"

/* Mixed into the seed so that the slice is not the batcher's first draws. */
#define AUDIT_STREAM 0x61756469742d3031ull /* "audit-01" */

int eeb_run_training_audit_slice(uint64_t seed, uint64_t set_items,
                                 uint64_t idx[EEB_TRAINING_AUDIT_ITEMS])
{
    int n = set_items < EEB_TRAINING_AUDIT_ITEMS ? (int)set_items : EEB_TRAINING_AUDIT_ITEMS;
    uint64_t state = seed ^ AUDIT_STREAM;
    for (int k = 0; k < n;) {
        uint64_t v = eeb_splitmix64(&state) % set_items;
        int at = 0; /* kept ascending: insert, unless drawn already */
        while (at < k && idx[at] < v)
            at++;
        if (at < k && idx[at] == v)
            continue;
        for (int j = k; j > at; j--)
            idx[j] = idx[j - 1];
        idx[at] = v, k++;
    }
    return n;
}
