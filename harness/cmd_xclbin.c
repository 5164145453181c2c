/*
 * cmd_xclbin.c - `eeb xclbin info|build`: read any xclbin's sections and
 * the resources Vitis recorded in it, or write the reference accelerator's
 * (fpga/tools, no Vitis needed).  A build without XRT's headers has
 * fpga/xrt's stand-ins, which say so.
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
         "                        [--system-metadata FILE.json]\n"
         "\n"
         "  info   walks the axlf section headers and prints the sections, memory\n"
         "         banks, kernels with their compute units and arguments, the\n"
         "         utilization and design eeb embeds (USER_METADATA), and the\n"
         "         resources Vitis records (SYSTEM_METADATA: each compute unit's\n"
         "         routed figures, their totals, the platform's, and the M_u they give)\n"
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
         "  --system-metadata FILE.json  a SYSTEM_METADATA section, written as given\n"
         "                     (Vitis's resources JSON, docs/xclbin.md)\n"
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

/* ---- SYSTEM_METADATA's resources ---- */

/* The figures and what M_u takes from them; mu_ok 0 with why when M_u is
 * refused (synthesized figures only, a total missing). */
struct resources {
    struct eeb_xclbin_figures f;
    struct eeb_xclbin_mu mu;
    int mu_ok;
    char why[512];
};

/* Reads them: EEB_OK (r->f.ncus 0: none), or a malformed section's error. */
static int read_resources(const char *path, const struct eeb_xclbin_info *in, struct resources *r,
                          char *err, size_t errlen)
{
    int rc = eeb_xclbin_figures(in, path, &r->f, err, errlen);
    if (rc == EEB_OK && r->f.ncus)
        r->mu_ok = eeb_xclbin_figures_mu(&r->f, path, &r->mu, r->why, sizeof r->why) == EEB_OK;
    return rc;
}

/* The figures a unit shows: those M_u reads (routed, else fully placed),
 * else its synthesized ones. */
static int shown_origin(const struct eeb_xclbin_cu_figures *cu)
{
    for (int o = 0; o < EEB_XCLBIN_NORIGINS; o++)
        if (cu->origins & 1u << o)
            return o;
    return -1;
}

static json_t *counts_json(const double v[EEB_XCLBIN_NRES])
{
    json_t *o = json_object();
    for (int k = 0; k < EEB_XCLBIN_NRES; k++)
        json_object_set_new(o, eeb_xclbin_res_name((enum eeb_xclbin_res)k),
                            v[k] >= 0 ? json_real(v[k]) : json_null());
    return o;
}

static json_t *resources_json(const struct resources *r)
{
    if (!r->f.ncus)
        return json_null();
    json_t *cus = json_array();
    for (int i = 0; i < r->f.ncus; i++) {
        const struct eeb_xclbin_cu_figures *cu = &r->f.cus[i];
        int o = shown_origin(cu);
        json_array_append_new(
            cus, json_pack("{s:s, s:o, s:o}", "name", cu->name, "origin",
                           o < 0 ? json_null() : json_string(eeb_xclbin_origin_name(o)), "used",
                           o < 0 ? json_null() : counts_json(cu->used[o])));
    }
    json_t *util = json_object();
    for (int k = 0; r->mu_ok && k < EEB_UTIL_COUNT; k++)
        json_object_set_new(util, eeb_score_util_name((enum eeb_util_kind)k),
                            json_real(r->mu.util.frac[k]));
    /* note: where a total came from; refused: why the figures give no M_u */
    return json_pack(
        "{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o}", "part", r->f.part, "compute_units", cus,
        "origin", r->mu_ok ? json_string(eeb_xclbin_origin_name(r->mu.origin)) : json_null(),
        "total", r->mu_ok ? counts_json(r->mu.used) : json_null(), "available",
        counts_json(r->mu_ok ? r->mu.available : r->f.available), "utilization", util, "M_u",
        r->mu_ok ? json_real(eeb_score_m_u(&r->mu.util)) : json_null(), "note",
        r->mu_ok ? r->mu.note : "", "refused", r->mu_ok ? json_null() : json_string(r->why));
}

static void print_counts(const char *label, const double v[EEB_XCLBIN_NRES], const char *tail)
{
    printf("  %-18s", label);
    for (int k = 0; k < EEB_XCLBIN_NRES; k++)
        if (v[k] >= 0)
            printf(" %10.10g", v[k]);
        else
            printf(" %10s", "-");
    printf("%s%s\n", tail[0] ? "  " : "", tail);
}

static void print_resources(const struct resources *r)
{
    printf("resources (SYSTEM_METADATA): %d compute unit%s%s%s\n", r->f.ncus,
           r->f.ncus == 1 ? "" : "s", r->f.part[0] ? ", part " : "", r->f.part);
    printf("  %-18s", "");
    for (int k = 0; k < EEB_XCLBIN_NRES; k++)
        printf(" %10s", eeb_xclbin_res_name((enum eeb_xclbin_res)k));
    putchar('\n');
    for (int i = 0; i < r->f.ncus; i++) {
        const struct eeb_xclbin_cu_figures *cu = &r->f.cus[i];
        int o = shown_origin(cu);
        char label[EEB_XCLBIN_NAME + 4];
        static const double none[EEB_XCLBIN_NRES] = {-1, -1, -1, -1, -1};
        snprintf(label, sizeof label, "cu %s", cu->name);
        print_counts(label, o < 0 ? none : cu->used[o],
                     o < 0 ? "(no figures eeb reads)" : eeb_xclbin_origin_name(o));
    }
    if (r->mu_ok)
        print_counts("total", r->mu.used, "");
    print_counts("available", r->mu_ok ? r->mu.available : r->f.available, "");
    if (!r->mu_ok) {
        printf("  M_u   refused: %s\n", r->why);
        return;
    }
    printf("  %-18s", "utilization");
    for (int k = 0; k < EEB_UTIL_COUNT; k++)
        printf(" %8.2f %%", 100 * r->mu.util.frac[k]);
    printf("\n  M_u   %.4f   the mean of LUT, FF (REG), BRAM and DSP, %s figures\n",
           eeb_score_m_u(&r->mu.util), eeb_xclbin_origin_name(r->mu.origin));
    if (r->mu.note[0])
        printf("  %s\n", r->mu.note);
}

static json_t *info_json(const char *path, const struct eeb_xclbin_info *in,
                         const struct resources *res)
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
    return json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "file", path,
                     "uuid", in->uuid, "platform", in->platform, "part", in->part, "bytes",
                     (json_int_t)in->length, "timestamp", (json_int_t)in->timestamp, "sections",
                     sections, "memories", mems, "kernels", kernels, "eeb",
                     meta ? meta : json_null(), "resources", resources_json(res));
}

static void print_info(const char *path, const struct eeb_xclbin_info *in,
                       const struct resources *res)
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
    if (res->f.ncus)
        print_resources(res);
}

/* A malformed SYSTEM_METADATA is an error (exit 1) after the rest is
 * shown as text, which helps find what is wrong; --json prints nothing. */
static int info(const char *path, int as_json)
{
    char err[512];
    struct eeb_xclbin_info *in;
    if (eeb_xclbin_read(path, &in, err, sizeof err))
        return eeb_cli_error(cmd, "%s", err);
    struct resources *res = calloc(1, sizeof *res);
    if (!res) {
        eeb_xclbin_info_free(in);
        return eeb_cli_error(cmd, "out of memory");
    }
    int bad = read_resources(path, in, res, err, sizeof err), rc = EEB_EXIT_OK;
    if (!as_json)
        print_info(path, in, res);
    if (bad)
        rc = eeb_cli_error(cmd, "%s", err);
    else if (as_json)
        rc = eeb_cli_print_json(cmd, info_json(path, in, res));
    free(res);
    eeb_xclbin_info_free(in);
    return rc;
}

static int build(const char *out, const char *util, const char *design, const char *system)
{
    char err[1024];
    struct eeb_xclbin_spec spec = {design, NULL, EEB_XCLBIN_UTIL_MODELED, NULL, 0};
    char *text = NULL, *system_text = NULL;
    if (system) {
        if (eeb_read_file(system, EEB_XCLBIN_MAX_SYSTEM_BYTES, &system_text,
                          &spec.system_metadata_len, err, sizeof err))
            return eeb_cli_error(cmd, "--system-metadata: %s", err);
        spec.system_metadata = system_text;
    }
    struct eeb_util u;
    if (util) {
        if (eeb_score_util_arg(util, &u, &text, err, sizeof err)) {
            free(system_text);
            return eeb_cli_error(cmd, "--util: %s", err);
        }
        /* a spec is its own text; a report's text is not its name */
        spec.util = text, spec.util_source = strcmp(text, util) == 0 ? "given" : util;
    }
    int rc = eeb_xclbin_build(out, &spec, err, sizeof err);
    free(text), free(system_text);
    if (rc)
        return eeb_cli_error(cmd, "%s", err);
    printf("%s: the reference accelerator (%s), utilization %s\n", out, EEB_XCLBIN_KERNEL,
           spec.util_source);
    return EEB_EXIT_OK;
}

int eeb_cmd_xclbin(int argc, char **argv)
{
    static const struct option options[] = {
        {"json", no_argument, NULL, 'j'},
        {"out", required_argument, NULL, 'o'},
        {"util", required_argument, NULL, 'u'},
        {"design", required_argument, NULL, 'd'},
        {"system-metadata", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, as_json = 0;
    const char *out = NULL, *util = NULL, *design = NULL, *system = NULL;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", options, NULL)) != -1) {
        switch (c) {
        case 'j': as_json = 1; break;
        case 'o': out = optarg; break;
        case 'u': util = optarg; break;
        case 'd': design = optarg; break;
        case 's': system = optarg; break;
        case 'h': help(); return EEB_EXIT_OK;
        default: return eeb_cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return eeb_cli_usage_error(cmd, "expected 'info FILE' or 'build -o FILE'");
    const char *action = argv[optind];
    if (strcmp(action, "info") == 0) {
        if (optind + 2 != argc || out || util || design || system)
            return eeb_cli_usage_error(cmd, "'info' takes one FILE and --json");
        return info(argv[optind + 1], as_json);
    }
    if (strcmp(action, "build") == 0) {
        if (optind + 1 != argc || !out || as_json)
            return eeb_cli_usage_error(cmd, "'build' takes -o FILE, --util, --design and "
                                            "--system-metadata");
        return build(out, util, design, system);
    }
    return eeb_cli_usage_error(cmd, "unknown action '%s' (expected info or build)", action);
}
