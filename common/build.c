/*
 * build.c - which build of eeb this is, for the records of every run.
 * The Makefile recompiles this file on every build, so EEB_GIT is never
 * stale.
 */
#include "eeb_common.h"

#ifndef EEB_GIT
#define EEB_GIT "unknown"
#endif

const char *eeb_build(void)
{
#if defined(__clang__)
    return "git " EEB_GIT ", clang " __clang_version__;
#else
    return "git " EEB_GIT ", gcc " __VERSION__;
#endif
}
