/*
 * crc.c - the CRC-32 (zlib's) that eeb's binary files carry.
 */
#include "eeb_bytes.h"

#include <zlib.h>

uint32_t eeb_crc32(const uint8_t *p, size_t n)
{
    return (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), p, n);
}

uint32_t eeb_crc32_except(const uint8_t *p, size_t n, size_t field)
{
    static const uint8_t zero[4];
    uLong crc = crc32_z(crc32(0L, Z_NULL, 0), p, field);
    crc = crc32(crc, zero, 4);
    return (uint32_t)crc32_z(crc, p + field + 4, n - field - 4);
}
