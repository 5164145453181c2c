/*
 * no_xrt.c - what a build without XRT's headers has in place of the xrt
 * backend (fpga/xrt) and the xclbin tools (fpga/tools), which need them:
 * the same functions, each failing with EEB_ENOTSUP and saying how to get
 * the real ones.  The Makefile builds this file instead of those when
 * /usr/include/xrt is missing; the backend registry (fpga/accel/accel.c)
 * then lists no "xrt", so no caller needs to know which build it is in.
 */
#include "fpga/tools/eeb_xclbin.h"

#define WITHOUT_XRT                                                                                \
    "this eeb was built without XRT's headers (make deps installs libxrt-dev; then rebuild)"

int eeb_xclbin_build(const char *path, const struct eeb_xclbin_spec *spec, char *err, size_t errlen)
{
    (void)path, (void)spec;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

int eeb_xclbin_read(const char *path, struct eeb_xclbin_info **out, char *err, size_t errlen)
{
    (void)path;
    *out = NULL;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

int eeb_xclbin_parse(const uint8_t *data, size_t len, const char *name,
                     struct eeb_xclbin_info **out, char *err, size_t errlen)
{
    (void)data, (void)len, (void)name;
    *out = NULL;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

void eeb_xclbin_info_free(struct eeb_xclbin_info *info)
{
    (void)info; /* none was ever made */
}

const struct eeb_xclbin_kernel *eeb_xclbin_kernel(const struct eeb_xclbin_info *info,
                                                  const char *name)
{
    (void)info, (void)name;
    return NULL;
}

int eeb_xclbin_util(const struct eeb_xclbin_info *info, struct eeb_util *util, char *source,
                    size_t source_len, char *err, size_t errlen)
{
    (void)info, (void)util, (void)source, (void)source_len;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

int eeb_xclbin_design(const struct eeb_xclbin_info *info, char **spec, char *err, size_t errlen)
{
    (void)info;
    *spec = NULL;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

const char *eeb_xclbin_res_name(enum eeb_xclbin_res res)
{
    (void)res;
    return "?";
}

const char *eeb_xclbin_origin_name(enum eeb_xclbin_origin origin)
{
    (void)origin;
    return "?";
}

int eeb_xclbin_figures(const struct eeb_xclbin_info *info, const char *name,
                       struct eeb_xclbin_figures *out, char *err, size_t errlen)
{
    (void)info, (void)name;
    out->ncus = 0;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

int eeb_xclbin_figures_mu(const struct eeb_xclbin_figures *figures, const char *name,
                          struct eeb_xclbin_mu *out, char *err, size_t errlen)
{
    (void)figures, (void)name, (void)out;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}

int eeb_xclbin_m_u(const struct eeb_xclbin_info *info, const char *name,
                   const struct eeb_util *given, const char *given_name, struct eeb_util *util,
                   char *source, size_t source_len, char *err, size_t errlen)
{
    (void)info, (void)name, (void)given, (void)given_name, (void)util, (void)source,
        (void)source_len;
    return eeb_errf(err, errlen, EEB_ENOTSUP, WITHOUT_XRT);
}
