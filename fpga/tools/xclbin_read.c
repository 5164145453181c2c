/*
 * xclbin_read.c - walks an xclbin's axlf header and section headers, and
 * reads the sections that describe kernels: MEM_TOPOLOGY, IP_LAYOUT,
 * CONNECTIVITY, EMBEDDED_METADATA (XML, with expat) and USER_METADATA, and
 * keeps SYSTEM_METADATA's bytes for xclbin_system.c.
 * Every offset, size and count is checked against the bytes there before
 * it is used: the file may be anyone's.
 */
#include "scoring/eeb_score.h"
#include "eeb_xclbin.h"

#include <expat.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xclbin.h>

static const char *const kind_names[] = {
    [BITSTREAM] = "BITSTREAM",
    [CLEARING_BITSTREAM] = "CLEARING_BITSTREAM",
    [EMBEDDED_METADATA] = "EMBEDDED_METADATA",
    [FIRMWARE] = "FIRMWARE",
    [DEBUG_DATA] = "DEBUG_DATA",
    [SCHED_FIRMWARE] = "SCHED_FIRMWARE",
    [MEM_TOPOLOGY] = "MEM_TOPOLOGY",
    [CONNECTIVITY] = "CONNECTIVITY",
    [IP_LAYOUT] = "IP_LAYOUT",
    [DEBUG_IP_LAYOUT] = "DEBUG_IP_LAYOUT",
    [DESIGN_CHECK_POINT] = "DESIGN_CHECK_POINT",
    [CLOCK_FREQ_TOPOLOGY] = "CLOCK_FREQ_TOPOLOGY",
    [MCS] = "MCS",
    [BMC] = "BMC",
    [BUILD_METADATA] = "BUILD_METADATA",
    [KEYVALUE_METADATA] = "KEYVALUE_METADATA",
    [USER_METADATA] = "USER_METADATA",
    [DNA_CERTIFICATE] = "DNA_CERTIFICATE",
    [PDI] = "PDI",
    [BITSTREAM_PARTIAL_PDI] = "BITSTREAM_PARTIAL_PDI",
    [PARTITION_METADATA] = "PARTITION_METADATA",
    [EMULATION_DATA] = "EMULATION_DATA",
    [SYSTEM_METADATA] = "SYSTEM_METADATA",
    [SOFT_KERNEL] = "SOFT_KERNEL",
    [ASK_FLASH] = "ASK_FLASH",
    [AIE_METADATA] = "AIE_METADATA",
    [ASK_GROUP_TOPOLOGY] = "ASK_GROUP_TOPOLOGY",
    [ASK_GROUP_CONNECTIVITY] = "ASK_GROUP_CONNECTIVITY",
    [SMARTNIC] = "SMARTNIC",
    [AIE_RESOURCES] = "AIE_RESOURCES",
    [OVERLAY] = "OVERLAY",
    [VENDER_METADATA] = "VENDER_METADATA",
};

struct reader {
    const uint8_t *data;
    size_t len;
    const char *name;
    struct eeb_xclbin_info *info;
    char *err;
    size_t errlen;
};

/* The first section of kind (read_headers checked it lies in the file);
 * NULL (size 0) if there is none. */
static const uint8_t *section(const struct reader *r, uint32_t kind, uint64_t *size)
{
    for (int i = 0; i < r->info->nsections; i++)
        if (r->info->sections[i].kind == kind) {
            *size = r->info->sections[i].size;
            return r->data + r->info->sections[i].offset;
        }
    *size = 0;
    return NULL;
}

/* A fixed-size char field as a string, stopping at its first NUL. */
static void field(char *out, size_t outlen, const void *src, size_t srclen)
{
    size_t n = strnlen(src, srclen);
    n = n < outlen - 1 ? n : outlen - 1;
    memcpy(out, src, n);
    out[n] = '\0';
}

/* A section holding an int32 count and count records of size each. */
static int counted(const struct reader *r, uint32_t kind, size_t head, size_t each, int max,
                   const uint8_t **items, int *count)
{
    uint64_t size;
    const uint8_t *p = section(r, kind, &size);
    *count = 0;
    if (!p)
        return EEB_OK;
    int32_t n;
    if (size < head)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: %s: %llu bytes, too short", r->name,
                        kind_names[kind], (unsigned long long)size);
    memcpy(&n, p, sizeof n);
    if (n < 0 || (uint64_t)n > (size - head) / each)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT,
                        "%s: %s: a count of %d does not fit its %llu bytes", r->name,
                        kind_names[kind], n, (unsigned long long)size);
    if (n > max)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: %s: %d entries (eeb reads %d)",
                        r->name, kind_names[kind], n, max);
    *items = p + head;
    *count = n;
    return EEB_OK;
}

static int read_headers(struct reader *r)
{
    struct eeb_xclbin_info *info = r->info;
    if (r->len < sizeof(struct axlf) || memcmp(r->data, "xclbin2", 8) != 0)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: not an xclbin (no 'xclbin2' magic)",
                        r->name);
    struct axlf top;
    memcpy(&top, r->data, sizeof top);
    info->length = top.m_header.m_length;
    info->timestamp = top.m_header.m_timeStamp;
    info->version[0] = top.m_header.m_versionMajor;
    info->version[1] = top.m_header.m_versionMinor;
    info->version[2] = top.m_header.m_versionPatch;
    field(info->platform, sizeof info->platform, top.m_header.m_platformVBNV,
          sizeof top.m_header.m_platformVBNV);
    const unsigned char *u = top.m_header.uuid;
    snprintf(info->uuid, sizeof info->uuid,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    if (info->length != r->len)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT,
                        "%s: the header says %llu bytes, the file has %zu (truncated?)", r->name,
                        (unsigned long long)info->length, r->len);
    uint32_t n = top.m_header.m_numSections;
    size_t first = offsetof(struct axlf, m_sections);
    if (n == 0 || n > (r->len - first) / sizeof(struct axlf_section_header))
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT,
                        "%s: %u section headers do not fit in the file", r->name, n);
    if (n > EEB_XCLBIN_MAX_SECTIONS)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: %u sections (eeb reads %d)", r->name,
                        n, EEB_XCLBIN_MAX_SECTIONS);
    for (uint32_t i = 0; i < n; i++) {
        struct axlf_section_header h;
        memcpy(&h, r->data + first + i * sizeof h, sizeof h);
        struct eeb_xclbin_section *s = &info->sections[i];
        s->kind = h.m_sectionKind;
        s->offset = h.m_sectionOffset;
        s->size = h.m_sectionSize;
        field(s->name, sizeof s->name, h.m_sectionName, sizeof h.m_sectionName);
        if (s->kind < sizeof kind_names / sizeof *kind_names && kind_names[s->kind])
            snprintf(s->kind_name, sizeof s->kind_name, "%s", kind_names[s->kind]);
        else
            snprintf(s->kind_name, sizeof s->kind_name, "kind %u", s->kind);
        if (s->offset > r->len || s->size > r->len - s->offset)
            return eeb_errf(r->err, r->errlen, EEB_EFORMAT,
                            "%s: section %u (%s): %llu bytes at %llu run past the end (%zu bytes)",
                            r->name, i, s->kind_name, (unsigned long long)s->size,
                            (unsigned long long)s->offset, r->len);
        info->nsections++;
    }
    return EEB_OK;
}

static int read_mems(struct reader *r)
{
    const uint8_t *p;
    int n;
    int rc = counted(r, MEM_TOPOLOGY, offsetof(struct mem_topology, m_mem_data),
                     sizeof(struct mem_data), EEB_XCLBIN_MAX_MEMS, &p, &n);
    for (int i = 0; rc == EEB_OK && i < n; i++) {
        struct mem_data m;
        memcpy(&m, p + i * sizeof m, sizeof m);
        struct eeb_xclbin_mem *out = &r->info->mems[i];
        out->type = m.m_type;
        out->used = m.m_used;
        out->size_kb = m.m_size;
        out->base = m.m_base_address;
        field(out->tag, sizeof out->tag, m.m_tag, sizeof m.m_tag);
    }
    r->info->nmems = n;
    return rc;
}

/* ---- EMBEDDED_METADATA: kernels and their arguments ---- */

struct xml_state {
    struct reader *r;
    XML_Parser parser;
    struct eeb_xclbin_kernel *kernel; /* inside <kernel> */
    double core_clock;
    int status;
};

static const char *attr(const XML_Char **attrs, const char *name)
{
    for (int i = 0; attrs[i]; i += 2)
        if (strcmp(attrs[i], name) == 0)
            return attrs[i + 1];
    return NULL;
}

static void xml_fail(struct xml_state *st, const char *what)
{
    if (st->status == EEB_OK)
        st->status =
            eeb_errf(st->r->err, st->r->errlen, EEB_EFORMAT, "%s: EMBEDDED_METADATA line %lu: %s",
                     st->r->name, (unsigned long)XML_GetCurrentLineNumber(st->parser), what);
    XML_StopParser(st->parser, XML_FALSE);
}

/* An attribute as an unsigned number (decimal or 0x hex). */
static int attr_u64(const XML_Char **attrs, const char *name, uint64_t *out)
{
    const char *v = attr(attrs, name);
    char *end;
    if (!v || !*v)
        return -1;
    *out = strtoull(v, &end, 0);
    return *end ? -1 : 0;
}

static void on_arg(struct xml_state *st, const XML_Char **attrs)
{
    struct eeb_xclbin_kernel *k = st->kernel;
    if (k->nargs == EEB_XCLBIN_MAX_ARGS)
        return xml_fail(st, "too many arguments");
    struct eeb_xclbin_arg *a = &k->args[k->nargs];
    const char *name = attr(attrs, "name"), *type = attr(attrs, "type"),
               *port = attr(attrs, "port");
    uint64_t id, aq;
    if (!name || attr_u64(attrs, "id", &id) || attr_u64(attrs, "addressQualifier", &aq) ||
        attr_u64(attrs, "offset", &a->offset) || attr_u64(attrs, "size", &a->size) ||
        id >= EEB_XCLBIN_MAX_ARGS)
        return xml_fail(st, "an <arg> without a name, id, addressQualifier, offset or size");
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->type, sizeof a->type, "%s", type ? type : "");
    snprintf(a->port, sizeof a->port, "%s", port ? port : "");
    a->id = (int)id;
    a->global = aq == 1;
    a->mem = -1;
    k->nargs++;
}

static void XMLCALL on_start(void *ctx, const XML_Char *el, const XML_Char **attrs)
{
    struct xml_state *st = ctx;
    struct eeb_xclbin_info *info = st->r->info;
    if (strcmp(el, "device") == 0 && !info->part[0]) {
        const char *part = attr(attrs, "fpgaDevice");
        if (part)
            snprintf(info->part, sizeof info->part, "%s", part);
    } else if (strcmp(el, "core") == 0) {
        const char *f = attr(attrs, "clockFreq");
        st->core_clock = f ? strtod(f, NULL) : 0;
    } else if (strcmp(el, "kernel") == 0) {
        const char *name = attr(attrs, "name");
        if (!name)
            return xml_fail(st, "a <kernel> without a name");
        if (info->nkernels == EEB_XCLBIN_MAX_KERNELS)
            return xml_fail(st, "too many kernels");
        st->kernel = &info->kernels[info->nkernels++];
        snprintf(st->kernel->name, sizeof st->kernel->name, "%s", name);
        st->kernel->clock_mhz = st->core_clock;
    } else if (strcmp(el, "clock") == 0) {
        const char *port = attr(attrs, "port"), *f = attr(attrs, "frequency");
        if (port && f && strcmp(port, "KERNEL_CLK") == 0)
            st->core_clock = strtod(f, NULL);
    } else if (strcmp(el, "arg") == 0 && st->kernel) {
        on_arg(st, attrs);
    }
}

static void XMLCALL on_end(void *ctx, const XML_Char *el)
{
    struct xml_state *st = ctx;
    if (strcmp(el, "kernel") == 0)
        st->kernel = NULL;
}

static int read_kernels(struct reader *r)
{
    uint64_t size;
    const uint8_t *xml = section(r, EMBEDDED_METADATA, &size);
    if (!xml)
        return EEB_OK;
    if (size > INT32_MAX)
        return eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: EMBEDDED_METADATA is too large",
                        r->name);
    struct xml_state st = {r, XML_ParserCreate(NULL), NULL, 0, EEB_OK};
    if (!st.parser)
        return eeb_errf(r->err, r->errlen, EEB_ENOMEM, "out of memory");
    XML_SetUserData(st.parser, &st);
    XML_SetElementHandler(st.parser, on_start, on_end);
    if (XML_Parse(st.parser, (const char *)xml, (int)size, XML_TRUE) == XML_STATUS_ERROR &&
        st.status == EEB_OK)
        st.status = eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: EMBEDDED_METADATA line %lu: %s",
                             r->name, (unsigned long)XML_GetCurrentLineNumber(st.parser),
                             XML_ErrorString(XML_GetErrorCode(st.parser)));
    XML_ParserFree(st.parser);
    return st.status;
}

/* ---- IP_LAYOUT and CONNECTIVITY: compute units and argument banks ---- */

static int read_cus(struct reader *r)
{
    const uint8_t *p;
    int n;
    int rc = counted(r, IP_LAYOUT, offsetof(struct ip_layout, m_ip_data), sizeof(struct ip_data),
                     4096, &p, &n);
    for (int i = 0; rc == EEB_OK && i < n; i++) {
        struct ip_data ip;
        memcpy(&ip, p + i * sizeof ip, sizeof ip);
        if (ip.m_type != IP_KERNEL)
            continue;
        char name[EEB_XCLBIN_NAME];
        field(name, sizeof name, ip.m_name, sizeof ip.m_name);
        char *colon = strchr(name, ':');
        if (colon)
            *colon = '\0';
        struct eeb_xclbin_kernel *k = (struct eeb_xclbin_kernel *)eeb_xclbin_kernel(r->info, name);
        if (!k)
            continue; /* an IP with no metadata: not a kernel XRT can open */
        if (k->ncus == EEB_XCLBIN_MAX_CUS)
            return eeb_errf(r->err, r->errlen, EEB_EFORMAT,
                            "%s: IP_LAYOUT: kernel %s has over %d compute units", r->name, name,
                            EEB_XCLBIN_MAX_CUS);
        struct eeb_xclbin_cu *cu = &k->cus[k->ncus++];
        snprintf(cu->name, sizeof cu->name, "%s", colon ? colon + 1 : name);
        cu->base = ip.m_base_address;
        cu->control = (int)((ip.properties & IP_CONTROL_MASK) >> IP_CONTROL_SHIFT);
        cu->ip = i;
    }
    if (rc)
        return rc;
    rc = counted(r, CONNECTIVITY, offsetof(struct connectivity, m_connection),
                 sizeof(struct connection), 1 << 20, &p, &n);
    for (int i = 0; rc == EEB_OK && i < n; i++) {
        struct connection c;
        memcpy(&c, p + i * sizeof c, sizeof c);
        if (c.mem_data_index < 0 || c.mem_data_index >= r->info->nmems)
            return eeb_errf(r->err, r->errlen, EEB_EFORMAT, "%s: CONNECTIVITY %d: memory %d of %d",
                            r->name, i, c.mem_data_index, r->info->nmems);
        /* the first CU's connections name the kernel's banks */
        for (int k = 0; k < r->info->nkernels; k++) {
            struct eeb_xclbin_kernel *kn = &r->info->kernels[k];
            if (kn->ncus == 0 || kn->cus[0].ip != c.m_ip_layout_index)
                continue;
            for (int a = 0; a < kn->nargs; a++)
                if (kn->args[a].id == c.arg_index)
                    kn->args[a].mem = c.mem_data_index;
        }
    }
    return rc;
}

/* A JSON section's bytes, copied and NUL-terminated (NULL if the xclbin
 * has none); the caller parses them. */
static int copy_section(struct reader *r, uint32_t kind, char **out, size_t *len)
{
    uint64_t size;
    const uint8_t *p = section(r, kind, &size);
    if (!p)
        return EEB_OK;
    *out = malloc(size + 1);
    if (!*out)
        return eeb_errf(r->err, r->errlen, EEB_ENOMEM, "out of memory");
    memcpy(*out, p, size);
    (*out)[size] = '\0';
    *len = size;
    return EEB_OK;
}

int eeb_xclbin_parse(const uint8_t *data, size_t len, const char *name,
                     struct eeb_xclbin_info **out, char *err, size_t errlen)
{
    *out = NULL;
    struct eeb_xclbin_info *info = calloc(1, sizeof *info);
    if (!info)
        return eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    struct reader r = {data, len, name, info, err, errlen};
    int rc = read_headers(&r);
    if (rc == EEB_OK)
        rc = read_mems(&r);
    if (rc == EEB_OK)
        rc = read_kernels(&r);
    if (rc == EEB_OK)
        rc = read_cus(&r);
    if (rc == EEB_OK)
        rc = copy_section(&r, USER_METADATA, &info->user_metadata, &info->user_metadata_len);
    if (rc == EEB_OK)
        rc = copy_section(&r, SYSTEM_METADATA, &info->system_metadata, &info->system_metadata_len);
    if (rc) {
        eeb_xclbin_info_free(info);
        return rc;
    }
    *out = info;
    return EEB_OK;
}

int eeb_xclbin_read(const char *path, struct eeb_xclbin_info **out, char *err, size_t errlen)
{
    char *data;
    size_t len;
    *out = NULL;
    int rc = eeb_read_file(path, EEB_XCLBIN_MAX_BYTES, &data, &len, err, errlen);
    if (rc)
        return rc;
    rc = eeb_xclbin_parse((const uint8_t *)data, len, path, out, err, errlen);
    free(data);
    return rc;
}

void eeb_xclbin_info_free(struct eeb_xclbin_info *info)
{
    if (info)
        free(info->user_metadata), free(info->system_metadata);
    free(info);
}

const struct eeb_xclbin_kernel *eeb_xclbin_kernel(const struct eeb_xclbin_info *info,
                                                  const char *name)
{
    for (int i = 0; i < info->nkernels; i++)
        if (strcmp(info->kernels[i].name, name) == 0)
            return &info->kernels[i];
    return NULL;
}

int eeb_xclbin_util(const struct eeb_xclbin_info *info, struct eeb_util *util, char *source,
                    size_t source_len, char *err, size_t errlen)
{
    json_t *meta = info->user_metadata ? json_loads(info->user_metadata, 0, NULL) : NULL;
    json_t *u = json_object_get(meta, "utilization");
    const char *text = json_string_value(json_object_get(u, "text"));
    const char *from = json_string_value(json_object_get(u, "source"));
    int rc;
    if (!json_is_integer(json_object_get(meta, "eeb_xclbin")) || !text)
        rc = eeb_errf(err, errlen, EEB_EFORMAT,
                      "the xclbin carries no utilization eeb wrote (give --util REPORT)");
    else if (strchr(text, '=') && !strchr(text, '\n'))
        rc = eeb_score_util_from_spec(text, util, err, errlen);
    else if ((rc = eeb_score_util_parse(text, strlen(text), "the xclbin's utilization report", util,
                                        err, errlen)) == EEB_OK)
        rc = eeb_score_util_check_implemented(util, "the xclbin's utilization report", err, errlen);
    if (rc == EEB_OK)
        snprintf(source, source_len, "%s", from ? from : "the xclbin");
    json_decref(meta);
    return rc;
}

int eeb_xclbin_design(const struct eeb_xclbin_info *info, char **spec, char *err, size_t errlen)
{
    json_t *meta = info->user_metadata ? json_loads(info->user_metadata, 0, NULL) : NULL;
    json_t *design = json_object_get(meta, "design"), *v;
    const char *key;
    char text[1024] = "";
    size_t used = 0;
    int rc = EEB_OK;
    *spec = NULL;
    json_object_foreach(design, key, v)
    {
        int n = json_is_number(v)   ? snprintf(text + used, sizeof text - used, "%s%s=%.17g",
                                             used ? "," : "", key, json_number_value(v))
                : json_is_string(v) ? snprintf(text + used, sizeof text - used, "%s%s=%s",
                                               used ? "," : "", key, json_string_value(v))
                                    : -1;
        if (n < 0 || (size_t)n >= sizeof text - used) {
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "the xclbin's design: '%s' is not a short "
                          "number or string",
                          key);
            break;
        }
        used += (size_t)n;
    }
    if (rc == EEB_OK && used && !(*spec = strdup(text)))
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "out of memory");
    json_decref(meta);
    return rc;
}
