/*
 * eeb_sut_serve.h - a SUT's table served as a program over the exec
 * protocol (sut/eeb_sut_serve.c).  Like eeb_sut.h it needs no other eeb
 * header: eeb's `eeb sut serve`, sut/examples/eeb_sut_serve.c and a team's
 * own C program build on it.
 */
#ifndef EEB_SUT_SERVE_H
#define EEB_SUT_SERVE_H

#include "sut/eeb_sut.h"

/*
 * Answers the requests on this process's stdin with replies on its
 * stdout, calling ops, until close or the end of stdin (0), or a request
 * that is not a frame (1, said on stderr after who).  ops is a whole table
 * of this header's version (an optional slot NULL if absent).  With ops
 * NULL every request is answered EEB_SUT_EXEC_UNSERVABLE with refusal (why
 * there is no table: the library's file, symbol or version), so eeb's
 * open fails saying that.  The library's own stdin and stdout become
 * /dev/null and stderr before the first call.
 */
int eeb_sut_serve(const struct eeb_sut_ops *ops, const char *refusal, const char *who);

#endif
