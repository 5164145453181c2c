/*
 * test_gemm.c - the emulator's int8 GEMM on every instruction set this CPU
 * has, bit-exact against the plain triple loop: random and awkward shapes,
 * several seeds, and the extreme values where an offset or a saturating
 * instruction would show.
 */
#include "fpga/emu/eeb_emu_gemm.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t rng_state;

static uint64_t next(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return rng_state;
}

static void fill(int8_t *x, size_t n, int extreme)
{
    for (size_t i = 0; i < n; i++)
        x[i] = extreme ? (next() & 1 ? 127 : -128) : (int8_t)(next() & 0xff);
}

/* Every ISA up to the best one this CPU supports. */
static int isas(enum eeb_emu_isa *out)
{
    int n = 0;
    for (int i = EEB_EMU_ISA_SCALAR; i <= (int)eeb_emu_gemm_best_isa(); i++)
        out[n++] = (enum eeb_emu_isa)i;
    return n;
}

/* n bytes whose last is the last before a page that cannot be read: a
 * read past them faults, even from the GEMM's assembly, which ASan does
 * not see.  Unmap *map (*map_len bytes) when done. */
static int8_t *before_guard_page(size_t n, void **map, size_t *map_len)
{
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t span = (n + page - 1) / page * page;
    *map_len = span + page;
    uint8_t *p = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    cr_assert_eq(mprotect(p + span, page, PROT_NONE), 0);
    *map = p;
    return (int8_t *)(p + span - n);
}

/* C = A x B + bias on every ISA against the triple loop plus the bias,
 * and the largest |C| reported; extreme: bytes at +-127/-128 and biases at
 * +-EEB_EMU_GEMM_BIAS_MAX, the largest the GEMM accepts.  A's rows are
 * a_gap bytes apart more than k; with a_gap 0, A ends at a guard page. */
static void check_strided(int m, int n, int k, int extreme, int a_gap)
{
    const int lda = k + a_gap, ldb = n + 5, ldc = n + 1; /* strides wider than the rows */
    void *a_map = NULL;
    size_t a_map_len = 0;
    int8_t *a =
        a_gap ? malloc((size_t)m * lda) : before_guard_page((size_t)m * lda, &a_map, &a_map_len);
    int8_t *b = malloc((size_t)k * ldb);
    int32_t *want = malloc((size_t)m * ldc * sizeof *want);
    int32_t *got = malloc((size_t)m * ldc * sizeof *got);
    fill(a, (size_t)m * lda, extreme);
    fill(b, (size_t)k * ldb, extreme);
    eeb_emu_gemm_reference(m, n, k, a, lda, b, ldb, want, ldc);
    int64_t *bias = malloc((size_t)n * sizeof *bias);
    uint32_t want_max = 0;
    for (int j = 0; j < n; j++) {
        int64_t lim = EEB_EMU_GEMM_BIAS_MAX(k);
        bias[j] = extreme ? (next() & 1 ? lim : -lim) : (int64_t)(next() % 2000001) - 1000000;
        for (int i = 0; i < m; i++) {
            int32_t v = want[(size_t)i * ldc + j] += (int32_t)bias[j];
            uint32_t mag = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
            want_max = mag > want_max ? mag : want_max;
        }
    }
    enum eeb_emu_isa list[EEB_EMU_ISA_AMX + 1]; /* every ISA there is */
    for (int t = 0, nt = isas(list); t < nt; t++) {
        struct eeb_emu_packed_b pb;
        cr_assert_eq(eeb_emu_gemm_pack_b(list[t], b, k, n, ldb, &pb), 0);
        cr_assert_eq(eeb_emu_gemm_set_bias(&pb, bias), 0);
        memset(got, 0x5a, (size_t)m * ldc * sizeof *got);
        uint32_t got_max = 7;
        cr_assert_eq(eeb_emu_gemm(list[t], m, a, lda, &pb, got, ldc, &got_max), 0);
        cr_assert_eq(got_max, want_max > 7 ? want_max : 7, "%s %dx%dx%d: max |C| %u, want %u",
                     eeb_emu_isa_name(list[t]), m, n, k, got_max, want_max);
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++)
                cr_assert_eq(got[(size_t)i * ldc + j], want[(size_t)i * ldc + j],
                             "%s %dx%dx%d: C[%d][%d] = %d, want %d", eeb_emu_isa_name(list[t]), m,
                             n, k, i, j, got[(size_t)i * ldc + j], want[(size_t)i * ldc + j]);
        for (int i = 0; i < m; i++) /* the stride gap is not written */
            cr_assert_eq(got[(size_t)i * ldc + n], 0x5a5a5a5a);
        eeb_emu_gemm_free_b(&pb);
    }
    if (a_map)
        munmap(a_map, a_map_len);
    else
        free(a);
    free(b), free(want), free(got), free(bias);
}

static void check_shape(int m, int n, int k, int extreme)
{
    check_strided(m, n, k, extreme, 3);
}

Test(gemm, random_shapes_several_seeds)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        rng_state = 0x9e3779b97f4a7c15ull * seed;
        for (int t = 0; t < 12; t++) {
            int m = 1 + (int)(next() % 40), n = 1 + (int)(next() % 70), k = 1 + (int)(next() % 150);
            check_shape(m, n, k, 0);
        }
    }
}

Test(gemm, tile_edges)
{
    rng_state = 42;
    const int dims[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        check_shape(dims[i], dims[(i * 7) % 15], dims[(i * 11) % 15], 0);
}

Test(gemm, extreme_values_and_long_k)
{
    /* -128 * -128 products over a long K: the +128 offset, the row-sum
     * correction and any saturating instruction would all show here. */
    rng_state = 7;
    check_shape(9, 33, 4099, 1);
    check_shape(16, 64, 576, 1);
}

Test(gemm, a_is_read_in_place_and_never_past_its_end)
{
    /* VNNI reads A where it lies, 8 bytes at a time, 5 rows a tile, and
     * AMX 64 bytes of 32 rows: with rows packed tight and k % 8 != 0, the
     * last row ends mid-group, right before a guard page, and a short last
     * tile has rows that do not exist; at k = 64 and 128 AMX's last tile
     * load ends exactly at the page. */
    rng_state = 11;
    const int ms[] = {1, 4, 5, 6, 9, 16, 17, 32, 33, 64, 65},
              ks[] = {1, 3, 5, 7, 8, 9, 15, 27, 64, 66, 128, 130};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++)
            check_strided(ms[i], 32 + (int)j, ks[j], 0, 0);
}

Test(gemm, network_layer_shape)
{
    rng_state = 3;
    check_shape(64, 196, 576, 0); /* a 3x3, 64-channel conv on 14x14 */
}

Test(gemm, pack_rejects_bad_k)
{
    struct eeb_emu_packed_b pb;
    int8_t b[4] = {0};
    cr_assert_eq(eeb_emu_gemm_pack_b(EEB_EMU_ISA_SCALAR, b, 0, 4, 4, &pb), -1);
    cr_assert_eq(eeb_emu_gemm_pack_b(EEB_EMU_ISA_AMX, b, EEB_EMU_GEMM_MAX_K + 1, 1, 1, &pb), -1);
}

Test(gemm, bias_beyond_the_int32_bound_is_refused)
{
    struct eeb_emu_packed_b pb;
    int8_t b[8] = {0};
    cr_assert_eq(eeb_emu_gemm_pack_b(EEB_EMU_ISA_SCALAR, b, 4, 2, 2, &pb), 0);
    int64_t ok[2] = {EEB_EMU_GEMM_BIAS_MAX(4), -EEB_EMU_GEMM_BIAS_MAX(4)};
    int64_t over[2] = {0, -EEB_EMU_GEMM_BIAS_MAX(4) - 1};
    cr_assert_eq(eeb_emu_gemm_set_bias(&pb, ok), 0);
    cr_assert_eq(eeb_emu_gemm_set_bias(&pb, over), -1);
    cr_assert_eq(pb.bias[0], ok[0], "a refused bias leaves the old one");
    eeb_emu_gemm_free_b(&pb);
}

/* Whether the kernel lists a CPU flag in /proc/cpuinfo: it lists AMX's
 * only where it supports the tiles, a source apart from the GEMM's own
 * CPUID test. */
static int kernel_lists_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    cr_assert_not_null(f);
    char line[8192];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0)
            for (char *t = strtok(strchr(line, ':') + 1, " \n"); t && !found;
                 t = strtok(NULL, " \n"))
                found = strcmp(t, flag) == 0;
    fclose(f);
    return found;
}

/* What this process is shown of the CPU decides (valgrind shows it no
 * AVX-512, and the GEMM must not use what it cannot run); where it sees
 * AVX-512, AMX is what the kernel lists and lends this process. */
Test(gemm, this_cpu_uses_its_fastest_instruction_set)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512bw"))
        cr_skip_test("this process sees no AVX-512 on this CPU");
    if (kernel_lists_flag("amx_int8") && kernel_lists_flag("amx_tile")) {
        if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0)
            cr_skip_test("the kernel lists AMX but does not lend this process the tiles");
        cr_assert_eq(eeb_emu_gemm_best_isa(), EEB_EMU_ISA_AMX);
        return;
    }
    if (!__builtin_cpu_supports("avx512vnni"))
        cr_skip_test("this CPU has neither AMX nor AVX-512 VNNI");
    cr_assert_eq(eeb_emu_gemm_best_isa(), EEB_EMU_ISA_AVX512VNNI);
}
