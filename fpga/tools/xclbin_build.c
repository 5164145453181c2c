/*
 * xclbin_build.c - the reference accelerator's xclbin, written from XRT's
 * axlf structs: the header, one section header per section, and the
 * sections, each 8-byte aligned.  What XRT needs to open fx_kernel under
 * its noop shim is there; a bitstream is not, so a real board refuses it.
 * A SYSTEM_METADATA section is added as given (Vitis's resources JSON, as
 * a test or a user brings it); eeb makes none up.
 */
#include "fpga/model/eeb_perf.h"
#include "eeb_xclbin.h"
#include "fpga/kernel/fx_kernel.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xclbin.h>

/* The argument signature below is fx_kernel's: this stops compiling if
 * the kernel's changes without it. */
static void (*const kernel_signature)(uint8_t *mem, uint32_t prog) = fx_kernel;

/* Vitis' register map for an ap_ctrl_hs kernel: control at 0x00, the
 * arguments from 0x10, each 64-bit pointer taking 12 bytes of space. */
static const struct {
    const char *name, *type, *port;
    int global;
    unsigned offset, size;
} kernel_args[] = {
    {"mem", "unsigned char*", "M_AXI_GMEM", 1, 0x10, 8},
    {"prog", "unsigned int", "S_AXI_CONTROL", 0, 0x1c, 4},
};

#define CU_BASE 0x1800000u /* where the CU's control registers sit */
#define BANK_KB (4u << 20) /* 4 GiB per DDR4 bank, in KiB */

struct blob {
    uint8_t *data;
    size_t len;
    int nsections;
    struct axlf_section_header headers[8];
};

static int add_section(struct blob *b, enum axlf_section_kind kind, const char *name,
                       const void *data, size_t len)
{
    size_t at = (b->len + 7) & ~(size_t)7;
    uint8_t *grown = realloc(b->data, at + len);
    if (!grown)
        return -1;
    memset(grown + b->len, 0, at - b->len);
    memcpy(grown + at, data, len);
    b->data = grown;
    struct axlf_section_header *h = &b->headers[b->nsections++];
    memset(h, 0, sizeof *h);
    h->m_sectionKind = (uint32_t)kind;
    snprintf(h->m_sectionName, sizeof h->m_sectionName, "%s", name);
    h->m_sectionOffset = at; /* relative to the sections' start until the header is laid out */
    h->m_sectionSize = len;
    b->len = at + len;
    return 0;
}

/* Records "k=v,..." (which eeb_design_parse has checked) in obj; numbers
 * become JSON numbers. */
static int record_design(json_t *obj, const char *text, char *err, size_t errlen)
{
    char *copy = strdup(text), *save = NULL;
    if (!copy)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *value = strchr(kv, '='), *end;
        *value++ = '\0';
        double x = strtod(value, &end);
        json_object_set_new(obj, kv,
                            *end == '\0' && isfinite(x) ? json_real(x) : json_string(value));
    }
    free(copy);
    return EEB_OK;
}

/* EMBEDDED_METADATA: the kernel as XRT's parser reads it
 * (project/platform/device/core/kernel, its ports, args and instance). */
static char *kernel_xml(const struct eeb_device *dev, double clock_mhz)
{
    char args[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof kernel_args / sizeof *kernel_args; i++)
        used += (size_t)snprintf(args + used, sizeof args - used,
                                 "          <arg name=\"%s\" addressQualifier=\"%d\" id=\"%zu\" "
                                 "port=\"%s\" size=\"0x%x\" offset=\"0x%x\" hostOffset=\"0x0\" "
                                 "hostSize=\"0x%x\" type=\"%s\"/>\n",
                                 kernel_args[i].name, kernel_args[i].global, i, kernel_args[i].port,
                                 kernel_args[i].size, kernel_args[i].offset, kernel_args[i].size,
                                 kernel_args[i].type);
    char *xml = NULL;
    int n =
        asprintf(&xml,
                 "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<project name=\"eeb_fx\">\n"
                 "  <platform vendor=\"xilinx\" boardid=\"%s\" name=\"%s\" featureRomTime=\"0\">\n"
                 "    <version major=\"2\" minor=\"13\"/>\n"
                 "    <description>eeb reference accelerator (no bitstream: XRT's noop shim only)"
                 "</description>\n"
                 "    <board name=\"%s\" vendor=\"xilinx\" fpgaDevice=\"%s\"/>\n"
                 "    <device name=\"fpga0\" fpgaDevice=\"%s\" addrWidth=\"0\">\n"
                 "      <core name=\"OCL_REGION_0\" target=\"hw\" type=\"clc_region\" "
                 "clockFreq=\"%gMHz\" numComputeUnits=\"1\">\n"
                 "        <kernelClocks>\n"
                 "          <clock port=\"KERNEL_CLK\" frequency=\"%gMHz\"/>\n"
                 "        </kernelClocks>\n"
                 "        <kernel name=\"%s\" language=\"c\" vlnv=\"eeb:hls:%s:1.0\" "
                 "preferredWorkGroupSizeMultiple=\"0\" workGroupSize=\"1\" interrupt=\"true\" "
                 "hwControlProtocol=\"ap_ctrl_hs\">\n"
                 "          <port name=\"M_AXI_GMEM\" mode=\"master\" range=\"0xFFFFFFFF\" "
                 "dataWidth=\"512\" portType=\"addressable\" base=\"0x0\"/>\n"
                 "          <port name=\"S_AXI_CONTROL\" mode=\"slave\" range=\"0x1000\" "
                 "dataWidth=\"32\" portType=\"addressable\" base=\"0x0\"/>\n"
                 "%s"
                 "          <instance name=\"%s\">\n"
                 "            <addrRemap base=\"0x%x\" port=\"S_AXI_CONTROL\"/>\n"
                 "          </instance>\n"
                 "        </kernel>\n"
                 "      </core>\n"
                 "    </device>\n"
                 "  </platform>\n"
                 "</project>\n",
                 dev->name, dev->platform, dev->name, dev->part, dev->part, clock_mhz, clock_mhz,
                 EEB_XCLBIN_KERNEL, EEB_XCLBIN_KERNEL, args, EEB_XCLBIN_CU, CU_BASE);
    return n < 0 ? NULL : xml;
}

static int add_fixed_sections(struct blob *b, int banks, const char *xml)
{
    size_t topo_len = offsetof(struct mem_topology, m_mem_data) + banks * sizeof(struct mem_data);
    struct mem_topology *topo = calloc(1, topo_len);
    if (!topo)
        return -1;
    topo->m_count = banks;
    for (int i = 0; i < banks; i++) {
        struct mem_data *m = &topo->m_mem_data[i];
        m->m_type = MEM_DDR4;
        m->m_used = 1;
        m->m_size = BANK_KB;
        m->m_base_address = (uint64_t)i * BANK_KB * 1024;
        snprintf((char *)m->m_tag, sizeof m->m_tag, "bank%d", i);
    }
    struct ip_layout ip;
    memset(&ip, 0, sizeof ip);
    ip.m_count = 1;
    ip.m_ip_data[0].m_type = IP_KERNEL;
    ip.m_ip_data[0].properties = (AP_CTRL_HS << IP_CONTROL_SHIFT) | IP_INT_ENABLE_MASK;
    ip.m_ip_data[0].m_base_address = CU_BASE;
    snprintf((char *)ip.m_ip_data[0].m_name, sizeof ip.m_ip_data[0].m_name, "%s:%s",
             EEB_XCLBIN_KERNEL, EEB_XCLBIN_CU);
    /* the buffer argument in bank 0; scalars have no connection */
    struct connectivity conn = {1, {{0, 0, 0}}};
    int rc = add_section(b, MEM_TOPOLOGY, "", topo, topo_len) ||
             add_section(b, IP_LAYOUT, "", &ip, sizeof ip) ||
             add_section(b, CONNECTIVITY, "", &conn, sizeof conn) ||
             add_section(b, EMBEDDED_METADATA, "", xml, strlen(xml));
    free(topo);
    return rc;
}

/* The header and the section headers before the sections; the UUID is a
 * digest of the sections, so the same design gives the same UUID. */
static uint8_t *lay_out(const struct blob *b, const struct eeb_device *dev, size_t *total)
{
    size_t head =
        sizeof(struct axlf) + (size_t)(b->nsections - 1) * sizeof(struct axlf_section_header);
    size_t start = (head + 7) & ~(size_t)7;
    *total = start + b->len;
    uint8_t *file = calloc(1, *total);
    if (!file)
        return NULL;
    struct axlf *top = (struct axlf *)file;
    memcpy(top->m_magic, "xclbin2", 8);
    top->m_signature_length = -1;
    memset(top->reserved, 0xff, sizeof top->reserved);
    memset(top->m_keyBlock, 0xff, sizeof top->m_keyBlock);
    const char *epoch = getenv("SOURCE_DATE_EPOCH"); /* reproducible builds */
    top->m_header.m_timeStamp = epoch ? strtoull(epoch, NULL, 10) : (uint64_t)time(NULL);
    top->m_header.m_length = *total;
    top->m_header.m_versionMajor = 2;
    top->m_header.m_versionMinor = 13;
    top->m_header.m_mode = XCLBIN_FLAT;
    snprintf((char *)top->m_header.m_platformVBNV, sizeof top->m_header.m_platformVBNV, "%s",
             dev->platform);
    char digest[EEB_SHA256_HEX];
    eeb_sha256(b->data, b->len, digest);
    unsigned char *uuid = top->m_header.uuid;
    for (int i = 0; i < 16; i++)
        sscanf(digest + 2 * i, "%2hhx", &uuid[i]);
    uuid[6] = (uuid[6] & 0x0f) | 0x50; /* RFC 9562: name-based, version 5 layout */
    uuid[8] = (uuid[8] & 0x3f) | 0x80;
    memcpy(&top->m_uniqueId, uuid, sizeof top->m_uniqueId);
    top->m_header.m_numSections = (uint32_t)b->nsections;
    for (int i = 0; i < b->nsections; i++) {
        top->m_sections[i] = b->headers[i];
        top->m_sections[i].m_sectionOffset += start;
    }
    memcpy(file + start, b->data, b->len);
    return file;
}

int eeb_xclbin_build(const char *path, const struct eeb_xclbin_spec *spec, char *err, size_t errlen)
{
    (void)kernel_signature;
    /* the model checks the design, and gives the default utilization */
    struct eeb_design d;
    eeb_design_default(&d);
    int rc = eeb_design_parse(&d, EEB_XCLBIN_DESIGN, err, errlen);
    if (rc == EEB_OK && spec->design)
        rc = eeb_design_parse(&d, spec->design, err, errlen);
    if (rc)
        return rc;
    const char *util = spec->util, *util_source = spec->util_source;
    char modeled[128];
    if (!util) {
        struct eeb_resources res;
        eeb_design_resources(&d, &res);
        eeb_resources_spec(&res, modeled, sizeof modeled);
        util = modeled, util_source = EEB_XCLBIN_UTIL_MODELED;
    }
    json_t *design = json_object();
    if (!design || record_design(design, EEB_XCLBIN_DESIGN, err, errlen) ||
        (spec->design && record_design(design, spec->design, err, errlen))) {
        json_decref(design);
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    }
    json_t *meta = json_pack("{s:i, s:s, s:s, s:o, s:{s:s, s:s}}", "eeb_xclbin", 1, "eeb",
                             EEB_VERSION, "kernel", EEB_XCLBIN_KERNEL, "design", design,
                             "utilization", "source", util_source, "text", util);
    char *meta_text = meta ? json_dumps(meta, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(meta);
    char *xml = kernel_xml(d.device, d.clock_mhz);
    struct blob b = {0};
    size_t total = 0;
    uint8_t *file = NULL;
    if (meta_text && xml && add_fixed_sections(&b, d.ddr, xml) == 0 &&
        add_section(&b, USER_METADATA, "eeb", meta_text, strlen(meta_text)) == 0 &&
        (!spec->system_metadata || add_section(&b, SYSTEM_METADATA, "", spec->system_metadata,
                                               spec->system_metadata_len) == 0))
        file = lay_out(&b, d.device, &total);
    free(meta_text), free(xml), free(b.data);
    if (!file)
        return eeb_errf(err, errlen, EEB_ENOMEM, "building %s: out of memory", path);
    rc = eeb_atomic_write(path, file, total, err, errlen);
    free(file);
    return rc;
}
