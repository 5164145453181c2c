/*
 * gemm.c - int8 GEMM: instruction-set dispatch, packing, and the portable
 * path.  The vector tile loops live in gemm_amx.c, gemm_avx512.c and
 * gemm_avx2.c.
 */
#include "emu_int.h"
#include "fpga/kernel/fx_arith.h"

#include <assert.h>
#include <cpuid.h>
#include <emmintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int round_up(int x, int to)
{
    return (x + to - 1) / to * to;
}

/* Linux hands out AMX's 8 KiB of tile registers only to a process that
 * asks (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, once, for all its
 * threads); a kernel without AMX support, or a tool such as valgrind that
 * does not know the call, refuses, and then AMX is not used. */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

static int amx_usable;
static pthread_once_t amx_once = PTHREAD_ONCE_INIT;

static void amx_ask(void)
{
    unsigned eax, ebx, ecx, edx;
    /* CPUID.(7,0).EDX: bit 24 AMX-TILE, bit 25 AMX-INT8 (gcc 12's
     * __builtin_cpu_supports does not know them) */
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx >> 24 & 1) || !(edx >> 25 & 1))
        return;
    amx_usable = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

enum eeb_emu_isa eeb_emu_gemm_best_isa(void)
{
    __builtin_cpu_init();
    pthread_once(&amx_once, amx_ask);
    if (amx_usable && __builtin_cpu_supports("avx512bw"))
        return EEB_EMU_ISA_AMX;
    if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw"))
        return EEB_EMU_ISA_AVX512VNNI;
    if (__builtin_cpu_supports("avx2"))
        return EEB_EMU_ISA_AVX2;
    return EEB_EMU_ISA_SCALAR;
}

const char *eeb_emu_isa_name(enum eeb_emu_isa isa)
{
    switch (isa) {
    case EEB_EMU_ISA_SCALAR: return "scalar";
    case EEB_EMU_ISA_AVX2: return "avx2";
    case EEB_EMU_ISA_AVX512VNNI: return "avx512vnni";
    case EEB_EMU_ISA_AMX: return "amx";
    }
    return "?";
}

/* Eight rows of 16 columns to the packed order (each column's 8 bytes
 * together), offset by +128 (x + 128 == x ^ 0x80 for bytes): bytes, then
 * pairs, then quads of rows interleaved. */
static void interleave16(const int8_t *const r[8], uint8_t *dst)
{
    const __m128i flip = _mm_set1_epi8((char)0x80);
    __m128i row[8], pair[8], quad[8];
    for (int q = 0; q < 8; q++)
        row[q] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)r[q]), flip);
    for (int q = 0; q < 8; q += 2) { /* columns 0-7, then 8-15, of rows q and q+1 */
        pair[q] = _mm_unpacklo_epi8(row[q], row[q + 1]);
        pair[q + 1] = _mm_unpackhi_epi8(row[q], row[q + 1]);
    }
    for (int h = 0; h < 2; h++) /* rows 0-3 (4h = 0) and 4-7, 4 columns a vector */
        for (int q = 0; q < 2; q++) {
            quad[4 * h + 2 * q] = _mm_unpacklo_epi16(pair[4 * h + q], pair[4 * h + 2 + q]);
            quad[4 * h + 2 * q + 1] = _mm_unpackhi_epi16(pair[4 * h + q], pair[4 * h + 2 + q]);
        }
    for (int q = 0; q < 4; q++) { /* 2 columns of 8 rows a vector */
        _mm_storeu_si128((__m128i *)(dst + 32 * q), _mm_unpacklo_epi32(quad[q], quad[4 + q]));
        _mm_storeu_si128((__m128i *)(dst + 32 * q + 16), _mm_unpackhi_epi32(quad[q], quad[4 + q]));
    }
}

/* Four rows of 16 columns to AMX's order (each column's 4 bytes
 * together): bytes of row pairs, then pairs of pairs, interleaved. */
static void interleave4(const int8_t *const r[4], uint8_t *dst)
{
    __m128i row[4];
    for (int q = 0; q < 4; q++)
        row[q] = _mm_loadu_si128((const __m128i *)r[q]);
    const __m128i lo01 = _mm_unpacklo_epi8(row[0], row[1]),
                  hi01 = _mm_unpackhi_epi8(row[0], row[1]);
    const __m128i lo23 = _mm_unpacklo_epi8(row[2], row[3]),
                  hi23 = _mm_unpackhi_epi8(row[2], row[3]);
    _mm_storeu_si128((__m128i *)dst, _mm_unpacklo_epi16(lo01, lo23));
    _mm_storeu_si128((__m128i *)(dst + 16), _mm_unpackhi_epi16(lo01, lo23));
    _mm_storeu_si128((__m128i *)(dst + 32), _mm_unpacklo_epi16(hi01, hi23));
    _mm_storeu_si128((__m128i *)(dst + 48), _mm_unpackhi_epi16(hi01, hi23));
}

/* Panel p of B (columns j0 .. j0+nc) in AMX's order: 64 rows of k a
 * block, each half of 16 columns one tile. */
static void pack_panel_amx(const int8_t *b, int k, int ldb, int j0, int nc, uint8_t *panel)
{
    for (int kk = 0; kk < k; kk += 4) {
        const int8_t *r[4];
        for (int q = 0; q < 4; q++)
            r[q] = kk + q < k ? b + (size_t)(kk + q) * ldb + j0 : NULL;
        uint8_t *quad = panel + (size_t)(kk / 64) * 2048 + (size_t)(kk % 64 / 4) * 64;
        for (int h = 0; h < 2; h++) {
            const int cols = nc - 16 * h;
            if (r[3] && cols >= 16) {
                const int8_t *half[4] = {r[0] + 16 * h, r[1] + 16 * h, r[2] + 16 * h,
                                         r[3] + 16 * h};
                interleave4(half, quad + 1024 * h);
                continue;
            }
            for (int q = 0; q < 4 && r[q]; q++)
                for (int col = 0; col < cols && col < 16; col++)
                    quad[1024 * h + col * 4 + q] = (uint8_t)r[q][16 * h + col];
        }
    }
}

/* Panel p of B in the vpdpbusd order, offset by +128. */
static void pack_panel(const int8_t *b, int k, int ldb, int j0, int nc, uint8_t *panel)
{
    for (int kk = 0; kk < k; kk += 8) {
        const int8_t *r[8];
        for (int q = 0; q < 8; q++)
            r[q] = kk + q < k ? b + (size_t)(kk + q) * ldb + j0 : NULL;
        uint8_t *dst = panel + (size_t)(kk / 8) * EMU_NR * 8;
        if (r[7] && nc == EMU_NR) {
            const int8_t *right[8];
            for (int q = 0; q < 8; q++)
                right[q] = r[q] + 16;
            interleave16(r, dst);
            interleave16(right, dst + 128);
            continue;
        }
        for (int q = 0; q < 8 && r[q]; q++)
            for (int col = 0; col < nc; col++)
                dst[col * 8 + q] = (uint8_t)(r[q][col] ^ 0x80);
    }
}

/* The rows of k a packed group holds: AMX's tile depth, or vpdpbusd's 8. */
static int k_group(enum eeb_emu_isa isa)
{
    return isa == EEB_EMU_ISA_AMX ? 64 : 8;
}

size_t eeb_emu_gemm_packed_bytes(enum eeb_emu_isa isa, int k, int n)
{
    return (size_t)round_up(k, k_group(isa)) * (size_t)round_up(n, EMU_NR);
}

int eeb_emu_gemm_pack_b(enum eeb_emu_isa isa, const int8_t *b, int k, int n, int ldb,
                        struct eeb_emu_packed_b *out)
{
    memset(out, 0, sizeof *out);
    if (k <= 0 || n <= 0 || k > EEB_EMU_GEMM_MAX_K)
        return -1;
    out->k = k;
    out->n = n;
    out->amx = isa == EEB_EMU_ISA_AMX;
    out->kpad = round_up(k, k_group(isa));
    out->panels = round_up(n, EMU_NR) / EMU_NR;
    size_t bytes = eeb_emu_gemm_packed_bytes(isa, k, n);
    out->data = aligned_alloc(64, bytes); /* bytes is a multiple of 256 */
    out->bias = calloc((size_t)out->panels * EMU_NR, sizeof *out->bias);
    if (!out->data || !out->bias) {
        eeb_emu_gemm_free_b(out);
        return -1;
    }
    if (k % k_group(isa) || n % EMU_NR) /* padding: 0, which multiplies anything to 0 */
        memset(out->data, 0, bytes);
    for (int p = 0; p < out->panels; p++) {
        int j0 = p * EMU_NR, nc = n - j0 < EMU_NR ? n - j0 : EMU_NR;
        uint8_t *panel = out->data + (size_t)p * out->kpad * EMU_NR;
        if (out->amx)
            pack_panel_amx(b, k, ldb, j0, nc, panel);
        else
            pack_panel(b, k, ldb, j0, nc, panel);
    }
    return 0;
}

int eeb_emu_gemm_set_bias(struct eeb_emu_packed_b *b, const int64_t *bias)
{
    for (int j = 0; j < b->n; j++)
        if (bias[j] > EEB_EMU_GEMM_BIAS_MAX(b->k) || bias[j] < -EEB_EMU_GEMM_BIAS_MAX(b->k))
            return -1;
    for (int j = 0; j < b->n; j++)
        b->bias[j] = (int32_t)bias[j];
    return 0;
}

void eeb_emu_gemm_free_b(struct eeb_emu_packed_b *b)
{
    free(b->data);
    free(b->bias);
    memset(b, 0, sizeof *b);
}

/* The portable path, reading the same packed layout as the vector ones. */
static uint32_t gemm_scalar(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b,
                            int32_t *c, int ldc)
{
    uint32_t maxabs = 0;
    for (int i = 0; i < m; i++) {
        for (int j = 0; j < b->n; j++) {
            const uint8_t *col = emu_panel(b, j / EMU_NR) + (j % EMU_NR) * 8;
            int32_t sum = b->bias[j];
            for (int kk = 0; kk < b->k; kk++)
                sum +=
                    (int32_t)a[(size_t)i * lda + kk] * (col[(kk / 8) * EMU_NR * 8 + kk % 8] - 128);
            c[(size_t)i * ldc + j] = sum;
            uint32_t mag = (uint32_t)fx_abs64(sum);
            maxabs = mag > maxabs ? mag : maxabs;
        }
    }
    return maxabs;
}

/* Rows of A widened and multiplied at a time on AVX2: the block of A
 * (at most 64 x K x 2 bytes) and of C stay in cache while every panel of B
 * goes by. */
#define ROW_BLOCK 64

static int gemm_avx2(int m, const int8_t *a, int lda, const struct eeb_emu_packed_b *b, int32_t *c,
                     int ldc, uint32_t *most)
{
    const size_t k8 = (size_t)b->kpad;
    int16_t *wide = malloc(ROW_BLOCK * k8 * sizeof *wide);
    if (!wide)
        return -1;
    for (int i0 = 0; i0 < m; i0 += ROW_BLOCK) {
        int rows = m - i0 < ROW_BLOCK ? m - i0 : ROW_BLOCK;
        const int8_t *src = a + (size_t)i0 * lda;
        /* the tiles read whole tiles of rows; the rows past the end are zero */
        memset(wide + (size_t)rows * k8, 0, (size_t)(round_up(rows, 4) - rows) * k8 * sizeof *wide);
        for (int i = 0; i < rows; i++) {
            int16_t *dst = wide + (size_t)i * k8;
            int kk = 0;
            for (; kk < b->k; kk++)
                dst[kk] = src[(size_t)i * lda + kk];
            for (; kk < b->kpad; kk++)
                dst[kk] = 0;
        }
        uint32_t got = emu_gemm_avx2(rows, wide, b, c + (size_t)i0 * ldc, ldc);
        *most = got > *most ? got : *most;
    }
    free(wide);
    return 0;
}

int eeb_emu_gemm(enum eeb_emu_isa isa, int m, const int8_t *a, int lda,
                 const struct eeb_emu_packed_b *b, int32_t *c, int ldc, uint32_t *maxabs)
{
    uint32_t most = 0;
    if (m <= 0)
        return 0;
    /* a programming error, not bad input: the layouts differ */
    assert((isa == EEB_EMU_ISA_AMX) == b->amx);
    switch (isa) {
    case EEB_EMU_ISA_SCALAR: most = gemm_scalar(m, a, lda, b, c, ldc); break;
    case EEB_EMU_ISA_AVX512VNNI: most = emu_gemm_avx512vnni(m, a, lda, b, c, ldc); break;
    case EEB_EMU_ISA_AMX:
        pthread_once(&amx_once, amx_ask); /* the tiles are lent to a process that asked */
        assert(amx_usable);
        if (emu_gemm_amx(m, a, lda, b, c, ldc, &most))
            return -1;
        break;
    case EEB_EMU_ISA_AVX2:
        if (gemm_avx2(m, a, lda, b, c, ldc, &most))
            return -1;
        break;
    }
    if (maxabs && most > *maxabs)
        *maxabs = most;
    return 0;
}

void eeb_emu_gemm_reference(int m, int n, int k, const int8_t *a, int lda, const int8_t *b, int ldb,
                            int32_t *c, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            int32_t sum = 0;
            for (int kk = 0; kk < k; kk++)
                sum += (int32_t)a[(size_t)i * lda + kk] * b[(size_t)kk * ldb + j];
            c[(size_t)i * ldc + j] = sum;
        }
}
