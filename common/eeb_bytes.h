/*
 * eeb_bytes.h - little-endian fields and checksums of eeb's binary files
 * (.eebm models, .eebd shards), read and written byte by byte so that the
 * files mean the same on every host and no struct layout leaks into them.
 */
#ifndef EEB_BYTES_H
#define EEB_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Checksums are not checked in a fuzzing build (make fuzz defines
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, as OSS-Fuzz does): a fuzzer
 * cannot forge them, and what lies past them is what needs its inputs. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define EEB_FUZZING 1
#else
#define EEB_FUZZING 0
#endif

/* CRC-32 (zlib's) of n bytes; and of n bytes whose 4-byte field at offset
 * `field` (where the checksum itself is stored) is read as zero. */
uint32_t eeb_crc32(const uint8_t *p, size_t n);
uint32_t eeb_crc32_except(const uint8_t *p, size_t n, size_t field);

static inline void eeb_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8);
}

static inline void eeb_put32(uint8_t *p, uint32_t v)
{
    eeb_put16(p, (uint16_t)v), eeb_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void eeb_put64(uint8_t *p, uint64_t v)
{
    eeb_put32(p, (uint32_t)v), eeb_put32(p + 4, (uint32_t)(v >> 32));
}

static inline void eeb_putf32(uint8_t *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    eeb_put32(p, u);
}

static inline uint16_t eeb_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t eeb_get32(const uint8_t *p)
{
    return eeb_get16(p) | (uint32_t)eeb_get16(p + 2) << 16;
}

static inline uint64_t eeb_get64(const uint8_t *p)
{
    return eeb_get32(p) | (uint64_t)eeb_get32(p + 4) << 32;
}

static inline float eeb_getf32(const uint8_t *p)
{
    uint32_t u = eeb_get32(p);
    float v;
    memcpy(&v, &u, 4);
    return v;
}

#endif
