/*
 * fuzz.h - what the fuzz targets share.  Each target is one
 * LLVMFuzzerTestOneInput over one parser, built twice: with clang's
 * libFuzzer (make fuzz: coverage-guided, ASan and UBSan), and with the
 * project's compiler and replay.c's main (make check: the seeds and every
 * input that once crashed, run again as a regression test).
 */
#ifndef EEB_FUZZ_H
#define EEB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data as a NUL-terminated string (free it); NULL out of memory. */
char *fuzz_text(const uint8_t *data, size_t size);

/* data as a file the parsers open by path: an anonymous memory file,
 * named /proc/self/fd/N in path (at least 32 bytes); its descriptor, to
 * close, or -1. */
int fuzz_file(const uint8_t *data, size_t size, char *path);

#endif
