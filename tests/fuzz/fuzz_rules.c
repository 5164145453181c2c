/* fuzz_rules.c - a scoring rules file (JSON). */
#include "scoring/eeb_score.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct eeb_rules rules;
    char err[512];
    (void)eeb_score_rules_parse((const char *)data, size, "fuzz.json", &rules, err, sizeof err);
    return 0;
}
