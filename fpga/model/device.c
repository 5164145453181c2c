/*
 * device.c - the boards' resources, from the parts' data sheets (Xilinx
 * DS890 for the UltraScale Kintex, DS891 for Zynq UltraScale+ MPSoC,
 * DS962 for the Alveo U250) and the boards' user guides for their DDR4.
 */
#include "eeb_device.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* The KCU1500 carries four DDR4-2400 channels (UG1260); the published KCU1500 design
 * uses two of them.  The ZCU102 and ZCU104 accelerators reach the PS
 * side's 64-bit DDR4-2400 through the HP ports (UG1182, UG1267).  The
 * idle powers (the board configured, clocks running, nothing computing)
 * are estimates for the power model, not data-sheet figures: no seed gives
 * them (fpga/model/README.md). */
static const struct eeb_device kcu1500 = {"kcu1500",
                                          "xcku115-flvb2104-2-e",
                                          "xilinx_kcu1500_dynamic_5_0",
                                          663360,
                                          1326720,
                                          2160,
                                          5520,
                                          4,
                                          2400,
                                          64,
                                          12};
static const struct eeb_device zcu102 = {"zcu102",
                                         "xczu9eg-ffvb1156-2-e",
                                         "xilinx_zcu102_base_202210_1",
                                         274080,
                                         548160,
                                         912,
                                         2520,
                                         1,
                                         2400,
                                         64,
                                         6};
static const struct eeb_device zcu104 = {"zcu104",
                                         "xczu7ev-ffvc1156-2-e",
                                         "xilinx_zcu104_base_202210_1",
                                         230400,
                                         460800,
                                         312,
                                         1728,
                                         1,
                                         2400,
                                         64,
                                         4.5};
static const struct eeb_device u250 = {"u250",
                                       "xcu250-figd2104-2L-e",
                                       "xilinx_u250_gen3x16_xdma_4_1_202210_1",
                                       1728000,
                                       3456000,
                                       2688,
                                       12288,
                                       4,
                                       2400,
                                       64,
                                       25};

static const struct eeb_device *const devices[] = {&kcu1500, &zcu102, &zcu104, &u250, NULL};

const char *eeb_device_names(char *buf, size_t size, const char *last)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; devices[i] && used < size; i++) {
        const char *sep = i == 0 ? "" : devices[i + 1] ? ", " : last;
        int n = snprintf(buf + used, size - used, "%s%s", sep, devices[i]->name);
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

const char *eeb_device_part_name(const char *part, char *buf, size_t size)
{
    /* the metadata's family:device:package:speed:grade names the device
     * second; Vivado's device-package-speed-grade, first */
    const char *s = part, *colon = strchr(part, ':');
    if (colon)
        s = colon + 1;
    size_t n = strcspn(s, colon ? ":" : "-");
    if (n >= size || n < 3 || tolower((unsigned char)s[0]) != 'x' ||
        tolower((unsigned char)s[1]) != 'c')
        n = 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[n] = '\0';
    return buf;
}

const struct eeb_device *eeb_device_for_part(const char *part)
{
    char want[32], have[32];
    if (!*eeb_device_part_name(part, want, sizeof want))
        return NULL;
    for (int i = 0; devices[i]; i++)
        if (strcmp(eeb_device_part_name(devices[i]->part, have, sizeof have), want) == 0)
            return devices[i];
    return NULL;
}

const char *eeb_device_parts(char *buf, size_t size, const char *last)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; devices[i] && used < size; i++) {
        char name[32];
        const char *sep = i == 0 ? "" : devices[i + 1] ? ", " : last;
        int n = snprintf(buf + used, size - used, "%s%s", sep,
                         eeb_device_part_name(devices[i]->part, name, sizeof name));
        used += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

const struct eeb_device *eeb_device_find(const char *name)
{
    for (int i = 0; devices[i]; i++)
        if (strcmp(devices[i]->name, name) == 0)
            return devices[i];
    return NULL;
}

double eeb_device_ddr_bytes_per_s(const struct eeb_device *d)
{
    return d->ddr_mts * 1e6 * d->ddr_bits / 8;
}
