/*
 * cmd_xclbin.c - `eeb xclbin info|build`: read any xclbin's sections, or
 * write the reference accelerator's (fpga/tools, no Vitis needed).  A
 * build without XRT's headers has fpga/xrt's stand-ins, which say so.
 */
#include "eeb_cli.h"
#include "scoring/eeb_score.h"
#include "fpga/tools/eeb_xclbin.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const cmd = "xclbin";

static void help(void)
{
    puts("Usage: eeb xclbin info [--json] FILE.xclbin\n"
         "       eeb xclbin build -o FILE.xclbin [--util REPORT|SPEC] [--design K=V,...]\n"
         "\n"
         "  info   walks the axlf section headers and prints the sections, memory\n"
         "         banks, kernels with their compute units and arguments, and the\n"
         "         utilization and design eeb embeds (USER_METADATA)\n"
         "  build  writes the reference accelerator's xclbin: memory topology, IP\n"
         "         layout, connectivity, fx_kernel's argument signature as embedded\n"
         "         metadata, and eeb's USER_METADATA.  It has no bitstream: XRT's noop\n"
         "         shim loads it (make demo-xrt), a board does not.\n"
         "\n"
         "Options:\n"
         "  -o, --out FILE     the xclbin to write (atomically)\n"
         "  --util REPORT      a Vivado report_utilization file, or the fractions as\n"
         "                     lut=..,ff=..,bram=..,dsp=.. (default: the analytical\n"
         "                     model's resources for the design, fpga/model)\n"
         "  --design K=V,...   the PE array's parameters over the default\n"
         "                     " EEB_XCLBIN_DESIGN "\n"
         "                     (keys as `eeb dse --design`; eeb run models the\n"
         "                     device from them)\n"
         "  --json             info as one JSON object\n"
         "  -h, --help         show this help");
}

static const char *const mem_types[] = {
    "DDR3", "DDR4",      "DRAM", "STREAMING", "PREALLOCATED_GLOB",
    "ARE",  "HBM",       "BRAM", "URAM",      "STREAMING_CONNECTION",
    "HOST", "PS_KERNEL",
};
static const char *const controls[] = {"ap_ctrl_hs", "ap_ctrl_chain", "ap_ctrl_none",
                                       "ap_ctrl_me", "accel_adapter", "fast_adapter"};

static const char *mem_type(int t)
{
    return t >= 0 && t < (int)(sizeof mem_types / sizeof *mem_types) ? mem_types[t] : "?";
}

static const char *control(int c)
{
    return c >= 0 && c < (int)(sizeof controls / sizeof *controls) ? controls[c] : "?";
}

static json_t *info_json(const char *path, const struct eeb_xclbin_info *in)
{
    json_t *sections = json_array(), *mems = json_array(), *kernels = json_array();
    for (int i = 0; i < in->nsections; i++)
        json_array_append_new(
            sections, json_pack("{s:s, s:s, s:I, s:I}", "kind", in->sections[i].kind_name, "name",
                                in->sections[i].name, "offset", (json_int_t)in->sections[i].offset,
                                "size", (json_int_t)in->sections[i].size));
    for (int i = 0; i < in->nmems; i++)
        json_array_append_new(
            mems, json_pack("{s:s, s:s, s:b, s:I, s:I}", "tag", in->mems[i].tag, "type",
                            mem_type(in->mems[i].type), "used", in->mems[i].used, "size_kb",
                            (json_int_t)in->mems[i].size_kb, "base", (json_int_t)in->mems[i].base));
    for (int k = 0; k < in->nkernels; k++) {
        const struct eeb_xclbin_kernel *kn = &in->kernels[k];
        json_t *args = json_array(), *cus = json_array();
        for (int a = 0; a < kn->nargs; a++) {
            const struct eeb_xclbin_arg *g = &kn->args[a];
            json_array_append_new(
                args,
                json_pack("{s:i, s:s, s:s, s:s, s:s, s:I, s:I, s:o}", "id", g->id, "name", g->name,
                          "type", g->type, "kind", g->global ? "global" : "scalar", "port", g->port,
                          "offset", (json_int_t)g->offset, "size", (json_int_t)g->size, "memory",
                          g->mem >= 0 ? json_string(in->mems[g->mem].tag) : json_null()));
        }
        for (int c = 0; c < kn->ncus; c++)
            json_array_append_new(cus, json_pack("{s:s, s:I, s:s}", "name", kn->cus[c].name, "base",
                                                 (json_int_t)kn->cus[c].base, "control",
                                                 control(kn->cus[c].control)));
        json_array_append_new(kernels,
                              json_pack("{s:s, s:f, s:o, s:o}", "name", kn->name, "clock_mhz",
                                        kn->clock_mhz, "compute_units", cus, "args", args));
    }
    json_t *meta = in->user_metadata ? json_loads(in->user_metadata, 0, NULL) : NULL;
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o}", "file", path, "uuid",
                     in->uuid, "platform", in->platform, "bytes", (json_int_t)in->length,
                     "timestamp", (json_int_t)in->timestamp, "sections", sections, "memories", mems,
                     "kernels", kernels, "eeb", meta ? meta : json_null());
}

static void print_info(const char *path, const struct eeb_xclbin_info *in)
{
    time_t ts = (time_t)in->timestamp;
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime(&ts));
    printf("%s: xclbin2 v%u.%u.%u, %llu bytes, built %s\n", path, in->version[0], in->version[1],
           in->version[2], (unsigned long long)in->length, when);
    printf("uuid      %s\nplatform  %s\n", in->uuid, in->platform);
    printf("sections  %d\n", in->nsections);
    for (int i = 0; i < in->nsections; i++)
        printf("  %-22s %-8s %10llu bytes at %llu\n", in->sections[i].kind_name,
               in->sections[i].name, (unsigned long long)in->sections[i].size,
               (unsigned long long)in->sections[i].offset);
    printf("memories  %d\n", in->nmems);
    for (int i = 0; i < in->nmems; i++)
        printf("  %-8s %-6s %s %llu MiB at 0x%llx\n", in->mems[i].tag, mem_type(in->mems[i].type),
               in->mems[i].used ? "used  " : "unused",
               (unsigned long long)in->mems[i].size_kb / 1024,
               (unsigned long long)in->mems[i].base);
    printf("kernels   %d\n", in->nkernels);
    for (int k = 0; k < in->nkernels; k++) {
        const struct eeb_xclbin_kernel *kn = &in->kernels[k];
        printf("  %s: %d compute unit%s, clock %g MHz\n", kn->name, kn->ncus,
               kn->ncus == 1 ? "" : "s", kn->clock_mhz);
        for (int c = 0; c < kn->ncus; c++)
            printf("    cu %-16s at 0x%llx, %s\n", kn->cus[c].name,
                   (unsigned long long)kn->cus[c].base, control(kn->cus[c].control));
        for (int a = 0; a < kn->nargs; a++) {
            const struct eeb_xclbin_arg *g = &kn->args[a];
            printf("    arg %d %-8s %-16s %-6s offset 0x%02llx, %llu bytes", g->id, g->name,
                   g->type, g->global ? "global" : "scalar", (unsigned long long)g->offset,
                   (unsigned long long)g->size);
            if (g->mem >= 0)
                printf(", in %s", in->mems[g->mem].tag);
            putchar('\n');
        }
    }
    struct eeb_util u;
    char source[256], err[512];
    if (eeb_xclbin_util(in, &u, source, sizeof source, err, sizeof err) == EEB_OK) {
        printf("utilization (%s)\n", source);
        for (int i = 0; i < EEB_UTIL_COUNT; i++)
            printf("  %-5s %6.2f %%\n", eeb_score_util_name((enum eeb_util_kind)i),
                   100 * u.frac[i]);
        printf("  M_u   %.4f\n", eeb_score_m_u(&u));
    }
    json_t *meta = in->user_metadata ? json_loads(in->user_metadata, 0, NULL) : NULL;
    json_t *design = json_object_get(meta, "design");
    if (json_is_object(design)) {
        const char *key;
        json_t *v;
        printf("design   ");
        json_object_foreach(design, key, v)
        {
            if (json_is_number(v))
                printf(" %s=%g", key, json_number_value(v));
            else
                printf(" %s=%s", key, json_string_value(v));
        }
        putchar('\n');
    }
    json_decref(meta);
}

static int info(const char *path, int as_json)
{
    char err[512];
    struct eeb_xclbin_info *in;
    if (eeb_xclbin_read(path, &in, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    int rc = EEB_EXIT_OK;
    if (as_json)
        rc = eeb_cli_print_json(cmd, info_json(path, in));
    else
        print_info(path, in);
    eeb_xclbin_info_free(in);
    return rc;
}

static int build(const char *out, const char *util, const char *design)
{
    char err[1024];
    struct eeb_xclbin_spec spec = {design, NULL, EEB_XCLBIN_UTIL_MODELED};
    char *text = NULL;
    struct eeb_util u;
    if (util) {
        if (eeb_score_util_arg(util, &u, &text, err, sizeof err))
            return eeb_cli_error(cmd, "--util: %s", err);
        /* a spec is its own text; a report's text is not its name */
        spec.util = text, spec.util_source = strcmp(text, util) == 0 ? "given" : util;
    }
    int rc = eeb_xclbin_build(out, &spec, err, sizeof err);
    free(text);
    if (rc)
        return eeb_cli_error(cmd, "%s", err);
    printf("%s: the reference accelerator (%s), utilization %s\n", out, EEB_XCLBIN_KERNEL,
           spec.util_source);
    return EEB_EXIT_OK;
}

int eeb_cmd_xclbin(int argc, char **argv)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},       {"out", required_argument, NULL, 'o'},
        {"util", required_argument, NULL, 'u'}, {"design", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
    };
    int c, as_json = 0;
    const char *out = NULL, *util = NULL, *design = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = 1; break;
        case 'o': out = optarg; break;
        case 'u': util = optarg; break;
        case 'd': design = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "expected 'info FILE' or 'build -o FILE'");
    const char *action = argv[optind];
    if (strcmp(action, "info") == 0) {
        if (optind + 2 != argc || out || util || design)
            return eeb_cli_usage_error(cmd, "'info' takes one FILE and --json");
        return info(argv[optind + 1], as_json);
    }
    if (strcmp(action, "build") == 0) {
        if (optind + 1 != argc || !out || as_json)
            return eeb_cli_usage_error(cmd, "'build' takes -o FILE, --util and --design");
        return build(out, util, design);
    }
    return eeb_cli_usage_error(cmd, "unknown action '%s' (expected info or build)", action);
}
