/*
 * eeb_backends.c - eeb's own accelerator backends (emu, kernel, fp32, xrt,
 * faulty:) as a SUT library, built as a team builds theirs
 * (build/sut/libeeb_backends.so): the proof that the system-under-test
 * interface carries a real training accelerator whole.  Its configuration
 * string is sut/builtin.c's, e.g. --sut-config 'backend=emu;lr=0.02'.
 */
#include "sut/eeb_sut_host.h"

const struct eeb_sut_ops *eeb_sut_entry(void)
{
    return eeb_sut_builtin();
}
