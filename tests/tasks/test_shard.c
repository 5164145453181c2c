/*
 * test_shard.c - .eebd shards: records come back as written for every
 * task; a file appears only when finished; damage is reported with the
 * record's index and offset; a shard larger than may be held in memory is
 * streamed; an item too large for a record is refused.
 */
#include "common/eeb_bytes.h"
#include "tasks/eeb_shard.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char names[3][EEB_SHARD_MAX_NAME + 1] = {"cat", "dog", "person"};

/* Writes n det records (3 frames for video) at path; record i has i % 4
 * boxes (det) or label i % 3. */
static void write_shard(const char *path, enum eeb_task task, int n)
{
    struct eeb_shard_info info = {task, 6, 5, 3, task == EEB_TASK_VIDEO ? 3 : 1, 3, names, 0};
    struct eeb_shard_writer *w;
    char err[256];
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    uint8_t px[3 * 6 * 5 * 3];
    r.pixels = px;
    for (int i = 0; i < n; i++) {
        snprintf(r.id, sizeof r.id, "2008_%06d", i);
        for (size_t j = 0; j < eeb_shard_pixels(&info); j++)
            px[j] = (uint8_t)(i * 7 + j);
        r.label = task == EEB_TASK_DET ? 0 : i % 3;
        r.nboxes = task == EEB_TASK_DET ? i % 4 : 0;
        for (int k = 0; k < r.nboxes; k++)
            r.boxes[k] = (struct eeb_box){k % 3, k == 2, 0.5f * k, 1, 0.5f * k + 1.25f, 6};
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
        cr_assert_neq(access(path, F_OK), 0, "the shard appeared before it was finished");
    }
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);
}

Test(shard, round_trip_for_every_task)
{
    const char *dir = test_tmpdir();
    for (int t = 0; t < EEB_TASK_COUNT; t++) {
        char path[128], err[256];
        snprintf(path, sizeof path, "%s/%d.eebd", dir, t);
        write_shard(path, (enum eeb_task)t, 9);
        struct eeb_shard *s;
        cr_assert_eq(eeb_shard_open(&s, path, err, sizeof err), EEB_OK, "%s", err);
        const struct eeb_shard_info *in = eeb_shard_info(s);
        cr_assert_eq(in->task, (enum eeb_task)t);
        cr_assert(in->h == 6 && in->w == 5 && in->c == 3 && in->classes == 3 && in->count == 9);
        cr_assert_str_eq(in->names[2], "person");
        for (int pass = 0; pass < 2; pass++) {
            const struct eeb_record *r;
            int i = 0, rc;
            while ((rc = eeb_shard_next(s, &r, err, sizeof err)) == 1) {
                char id[32];
                snprintf(id, sizeof id, "2008_%06d", i);
                cr_assert_str_eq(r->id, id);
                cr_assert_eq(r->index, (uint64_t)i);
                cr_assert_eq(r->pixels[1], (uint8_t)(i * 7 + 1));
                if (t == EEB_TASK_DET) {
                    cr_assert_eq(r->nboxes, i % 4);
                    if (r->nboxes > 2)
                        cr_assert(r->boxes[2].cls == 2 && r->boxes[2].difficult &&
                                  r->boxes[2].x0 == 1.0f && r->boxes[2].x1 == 2.25f);
                } else {
                    cr_assert_eq(r->label, i % 3);
                }
                i++;
            }
            cr_assert_eq(rc, 0, "%s", err);
            cr_assert_eq(i, 9);
            cr_assert_eq(eeb_shard_rewind(s, err, sizeof err), EEB_OK);
        }
        eeb_shard_close(s);
    }
}

Test(shard, writer_refuses_bad_records_and_abort_leaves_nothing)
{
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/x.eebd", test_tmpdir());
    struct eeb_shard_info info = {EEB_TASK_DET, 8, 8, 3, 1, 3, names, 0};
    struct eeb_shard_writer *w;
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    uint8_t px[8 * 8 * 3] = {0};
    r.pixels = px;
    snprintf(r.id, sizeof r.id, "img7");
    r.nboxes = 1;
    r.boxes[0] = (struct eeb_box){1, 0, 2, 2, 9, 4};
    cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "record 0 (img7): box 0 class 1 at 2,2-9,4 is not in"), "%s", err);
    r.boxes[0] = (struct eeb_box){3, 0, 2, 2, 4, 4};
    cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_EINVAL);
    eeb_shard_abort(w);
    cr_assert_neq(access(path, F_OK), 0);

    info.task = EEB_TASK_CLS, info.frames = 4;
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "4 frames per item (images have 1)"), "%s", err);
}

/* Opens path and reads to the end; returns the first error's text. */
static char *read_error(const char *path)
{
    static char err[256];
    err[0] = '\0';
    struct eeb_shard *s;
    if (eeb_shard_open(&s, path, err, sizeof err) != EEB_OK)
        return err;
    const struct eeb_record *r;
    int rc;
    while ((rc = eeb_shard_next(s, &r, err, sizeof err)) == 1)
        ;
    eeb_shard_close(s);
    cr_assert_lt(rc, 0, "no error reading %s", path);
    return err;
}

Test(shard, damage_names_record_and_offset)
{
    const char *dir = test_tmpdir();
    char path[128], bad[128];
    snprintf(path, sizeof path, "%s/ok.eebd", dir);
    snprintf(bad, sizeof bad, "%s/bad.eebd", dir);
    write_shard(path, EEB_TASK_CLS, 5);
    size_t len;
    uint8_t *buf = (uint8_t *)test_read_file(path, &len);
    size_t hdr = eeb_get32(buf + 8), rec = 8 + eeb_get32(buf + hdr); /* bytes per record */

    test_write_file(bad, "GIF89a....", 10);
    cr_assert(strstr(read_error(bad), "offset 0: magic: not an eeb shard"));

    test_write_file(bad, buf, len - 3);
    cr_assert(strstr(read_error(bad), "truncated: record 4 ends after"), "%s", read_error(bad));

    test_write_file(bad, buf, hdr + 2 * rec);
    cr_assert(strstr(read_error(bad), "truncated: record 2 of 5 missing"), "%s", read_error(bad));

    uint8_t *b = malloc(len + 1);
    memcpy(b, buf, len), b[hdr + 3 * rec + 20] ^= 1;
    test_write_file(bad, b, len);
    char want[96];
    snprintf(want, sizeof want, "offset %zu: record 3: checksum mismatch", hdr + 3 * rec);
    cr_assert(strstr(read_error(bad), want), "%s", read_error(bad));

    memcpy(b, buf, len), b[len] = 0;
    test_write_file(bad, b, len + 1);
    cr_assert(strstr(read_error(bad), "bytes after the last of 5 records"), "%s", read_error(bad));

    memcpy(b, buf, len), b[70] ^= 1; /* a class name */
    test_write_file(bad, b, len);
    cr_assert(strstr(read_error(bad), "offset 32: header checksum mismatch"), "%s",
              read_error(bad));

    memcpy(b, buf, len), eeb_put32(b + hdr, 1u << 30);
    test_write_file(bad, b, len);
    cr_assert(strstr(read_error(bad), "record 0: body of 1073741824 bytes"), "%s", read_error(bad));
    free(b);
    free(buf);
}

/*
 * Class names become file names (comp4_det_test_<name>.txt) and CSV
 * fields: a '/', '.' or '..', a control character or a comma is refused
 * by the writer, and by the reader in a shard another program wrote.
 */
Test(shard, class_names_that_cannot_name_a_file)
{
    const char *dir = test_tmpdir();
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/a.eebd", dir);
    static const struct {
        const char *name, *error;
    } bad[] = {
        {"cat/dog", "class 1: class name 'cat/dog' has a '/'"},
        {"..", "class 1: class name '..' is '.' or '..'"},
        {".", "class 1: class name '.' is '.' or '..'"},
        {"cat\x7f", "class 1: class name 'cat\\x7f' has a control character"},
        {"cat\tdog", "class 1: class name 'cat\\x09dog' has a control character"},
        {"cat,dog", "class 1: class name 'cat,dog' has a comma"},
        {"", "class 1: class name '' is empty"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char two[2][EEB_SHARD_MAX_NAME + 1] = {"bird"};
        snprintf(two[1], sizeof two[1], "%s", bad[i].name);
        struct eeb_shard_info info = {EEB_TASK_CLS, 4, 4, 3, 1, 2, two, 0};
        struct eeb_shard_writer *w;
        cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_EINVAL, "'%s'",
                     bad[i].name);
        cr_assert(strstr(err, bad[i].error), "%s", err);
    }

    /* "dog" written, then made "d/g" with a header checksum to match */
    write_shard(path, EEB_TASK_CLS, 1);
    size_t len;
    uint8_t *buf = (uint8_t *)test_read_file(path, &len);
    uint8_t *name = memmem(buf, len, "\003dog", 4);
    cr_assert(name);
    name[2] = '/';
    eeb_put32(buf + 32, eeb_crc32_except(buf, eeb_get32(buf + 8), 32));
    test_write_file(path, buf, len);
    free(buf);
    cr_assert(strstr(read_error(path), "class 1: class name 'd/g' has a '/'"), "%s",
              read_error(path));
}

/* An item of 256 frames of 4096x4096x3 is 12 GiB: its record's length, a
 * u32, would wrap.  The writer refuses the shape, and so does the reader
 * in a header another program wrote (before allocating a record). */
Test(shard, an_item_past_4_gib_is_refused)
{
    const char *dir = test_tmpdir();
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/v.eebd", dir);
    struct eeb_shard_info info = {EEB_TASK_VIDEO, 4096, 4096, 3, 256, 3, names, 0};
    struct eeb_shard_writer *w;
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "256 frames of 4096x4096x3 are 12884901888 bytes an item; a record "
                          "holds at most 4 GiB"),
              "%s", err);

    write_shard(path, EEB_TASK_VIDEO, 1);
    size_t len;
    uint8_t *buf = (uint8_t *)test_read_file(path, &len);
    eeb_put16(buf + 14, 256), eeb_put16(buf + 16, 4096), eeb_put16(buf + 18, 4096);
    eeb_put32(buf + 32, eeb_crc32_except(buf, eeb_get32(buf + 8), 32));
    test_write_file(path, buf, len);
    free(buf);
    cr_assert(strstr(read_error(path), "a record holds at most 4 GiB"), "%s", read_error(path));
}

/* Bytes of this process's private writable memory (VmData): what a file
 * read into memory grows, and one read through the page cache does not. */
static long long vm_data(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f) && sscanf(line, "VmData: %lld kB", &kb) != 1)
        ;
    if (f)
        fclose(f);
    cr_assert_geq(kb, 0, "no VmData in /proc/self/status");
    return kb * 1024;
}

/* n cls records of 224x224x3, record i's pixels i * 7 + j. */
static void write_paper_shard(const char *path, int n)
{
    struct eeb_shard_info info = {EEB_TASK_CLS, 224, 224, 3, 1, 3, names, 0};
    struct eeb_shard_writer *w;
    char err[256];
    cr_assert_eq(eeb_shard_create(&w, path, &info, err, sizeof err), EEB_OK, "%s", err);
    static struct eeb_record r;
    size_t px = eeb_shard_pixels(&info);
    r.pixels = malloc(px);
    for (int i = 0; i < n; i++) {
        snprintf(r.id, sizeof r.id, "class_%03d/%d", i % 3, i);
        r.label = i % 3;
        for (size_t j = 0; j < px; j++)
            r.pixels[j] = (uint8_t)(i * 7 + j);
        cr_assert_eq(eeb_shard_write(w, &r, err, sizeof err), EEB_OK, "%s", err);
    }
    free(r.pixels);
    cr_assert_eq(eeb_shard_finish(w, err, sizeof err), EEB_OK, "%s", err);
}

/* Reads s to the end twice, expecting what write_paper_shard wrote. */
static void expect_paper_records(struct eeb_shard *s, int n)
{
    char err[512];
    for (int pass = 0; pass < 2; pass++) {
        const struct eeb_record *r;
        int i = 0, rc;
        while ((rc = eeb_shard_next(s, &r, err, sizeof err)) == 1) {
            cr_assert_eq(r->label, i % 3);
            cr_assert(r->pixels[0] == (uint8_t)(i * 7) &&
                          r->pixels[150527] == (uint8_t)(i * 7 + 150527),
                      "record %d", i);
            i++;
        }
        cr_assert_eq(rc, 0, "%s", err);
        cr_assert_eq(i, n);
        cr_assert_eq(eeb_shard_rewind(s, err, sizeof err), EEB_OK, "%s", err);
    }
}

/*
 * A run loads its fine-tune shard with eeb_shard_load.  At the paper's
 * sizes a shard is larger than memory (Food-101's train split at 224x224
 * is 11.4 GB), so a shard over the limit given is not refused but
 * streamed: the same records and digest, without holding the file; and
 * the file must stay the one hashed.  One under the limit is held.
 */
Test(shard, load_streams_a_shard_larger_than_it_may_hold)
{
    enum { N = 160 }; /* 24 MB */
    char path[128], err[512], want[EEB_SHA256_HEX], got[EEB_SHA256_HEX];
    snprintf(path, sizeof path, "%s/food224.eebd", test_tmpdir());
    write_paper_shard(path, N);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(eeb_sha256_file(path, want, err, sizeof err), EEB_OK, "%s", err);

    long long before = vm_data();
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_load(&s, path, 1 << 20, got, err, sizeof err), EEB_OK, "%s", err);
    long long grew = vm_data() - before;
    if (!SANITIZED) /* ASan's allocator maps memory its own way */
        cr_assert_lt(grew, (long long)st.st_size / 4,
                     "loading a %lld-byte shard over the limit took %lld bytes of memory",
                     (long long)st.st_size, grew);
    cr_assert_str_eq(got, want);
    expect_paper_records(s, N);

    /* the file written to after hashing: the end of the pass says so */
    struct timespec times[2] = {{0, UTIME_OMIT}, {st.st_mtim.tv_sec - 60, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, times, 0), 0);
    const struct eeb_record *r;
    int rc;
    while ((rc = eeb_shard_next(s, &r, err, sizeof err)) == 1)
        ;
    cr_assert_eq(rc, EEB_EIO);
    cr_assert(strstr(err, "food224.eebd: written to since it was hashed"), "%s", err);
    cr_assert_eq(eeb_shard_rewind(s, err, sizeof err), EEB_EIO);
    eeb_shard_close(s);

    /* under the limit the file is held in memory, with the same digest */
    before = vm_data();
    cr_assert_eq(eeb_shard_load(&s, path, 1ull << 30, got, err, sizeof err), EEB_OK, "%s", err);
    if (!SANITIZED)
        cr_assert_geq(vm_data() - before, (long long)st.st_size);
    cr_assert_str_eq(got, want);
    expect_paper_records(s, N);
    eeb_shard_close(s);
}
