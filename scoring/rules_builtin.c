/*
 * rules_builtin.c - scoring/rules/v1.json built into the binary, so that
 * `eeb score` works from any directory and scores with exactly the rules
 * that shipped.  The assembler's .incbin reads the file at build time (the
 * Makefile names it and makes this object depend on it).
 */
#include "eeb_score.h"

#ifndef EEB_RULES_V1_PATH
#error "EEB_RULES_V1_PATH must name scoring/rules/v1.json"
#endif

__asm__(".section .rodata\n"
        ".global eeb_score_rules_v1\n"
        ".type eeb_score_rules_v1, @object\n"
        "eeb_score_rules_v1:\n"
        ".incbin \"" EEB_RULES_V1_PATH "\"\n"
        ".byte 0\n"
        ".size eeb_score_rules_v1, . - eeb_score_rules_v1\n"
        ".previous\n");
