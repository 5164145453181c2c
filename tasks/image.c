/*
 * image.c - JPEG decoding through libjpeg-turbo's TurboJPEG API, and the
 * area-averaging resize every importer uses.
 */
#include "eeb_import.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

#define MAX_JPEG_BYTES (64u << 20)
#define MAX_JPEG_SIDE  16384

int eeb_jpeg_read(const char *path, uint8_t **rgb, int *w, int *h, char *err, size_t errlen)
{
    char *buf;
    size_t len;
    int rc = eeb_read_file(path, MAX_JPEG_BYTES, &buf, &len, err, errlen);
    if (rc != EEB_OK)
        return rc;
    uint8_t *px = NULL;
    tjhandle tj = tjInitDecompress();
    if (!tj) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: libjpeg-turbo: %s", path, tjGetErrorStr2(NULL));
        goto out;
    }
    int width = 0, height = 0, subsamp, colorspace;
    if (tjDecompressHeader3(tj, (const unsigned char *)buf, (unsigned long)len, &width, &height,
                            &subsamp, &colorspace) != 0) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: not a readable JPEG: %s", path,
                      tjGetErrorStr2(tj));
        goto out;
    }
    /* libjpeg reads a stream cut short in its header as "tables only" and
     * reports no image rather than an error */
    if (width < 1 || height < 1) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: not a readable JPEG: no image in its header",
                      path);
        goto out;
    }
    if (width > MAX_JPEG_SIDE || height > MAX_JPEG_SIDE) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: %dx%d pixels (sides 1..%d)", path, width,
                      height, MAX_JPEG_SIDE);
        goto out;
    }
    px = malloc((size_t)width * height * 3);
    if (!px) {
        rc = eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory for %dx%d pixels", path, width,
                      height);
        goto out;
    }
    /* A truncated or damaged stream is only a warning to libjpeg (it pads
     * with grey); for a benchmark's data it is an error. */
    if (tjDecompress2(tj, (const unsigned char *)buf, (unsigned long)len, px, width, 0, height,
                      TJPF_RGB, TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING) != 0) {
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: corrupt JPEG: %s", path, tjGetErrorStr2(tj));
        goto out;
    }
    *rgb = px, *w = width, *h = height;
    px = NULL;
out:
    free(px);
    if (tj)
        tjDestroy(tj);
    free(buf);
    return rc;
}

/* For each output index along one axis, the source pixels it covers and
 * how much of each: first[i], count[i] and weights (normalized). */
struct axis {
    int *first, *count;
    float *weight;
    int per; /* weight slots per output index */
};

static int axis_new(struct axis *a, int src, int dst)
{
    double scale = (double)src / dst;
    a->per = (int)ceil(scale) + 1;
    a->first = malloc((size_t)dst * sizeof *a->first);
    a->count = malloc((size_t)dst * sizeof *a->count);
    a->weight = malloc((size_t)dst * a->per * sizeof *a->weight);
    if (!a->first || !a->count || !a->weight)
        return EEB_ENOMEM;
    for (int i = 0; i < dst; i++) {
        double lo = i * scale, hi = (i + 1) * scale;
        int j0 = (int)floor(lo), j1 = (int)ceil(hi);
        if (j1 > src)
            j1 = src;
        a->first[i] = j0;
        a->count[i] = 0;
        for (int j = j0; j < j1; j++) {
            double cover = fmin(hi, j + 1) - fmax(lo, j);
            if (cover > 0)
                a->weight[(size_t)i * a->per + a->count[i]++] = (float)(cover / scale);
            else if (a->count[i] == 0)
                a->first[i]++;
        }
    }
    return EEB_OK;
}

static void axis_free(struct axis *a)
{
    free(a->first), free(a->count), free(a->weight);
}

/* v rounded to the nearest whole number, ties to even (as lrintf in the
 * default rounding mode), clamped to 0..255, without a call per pixel: a
 * float of at least 2^23 has no bits for a fraction (each assignment
 * rounds to float, whatever precision the sum was evaluated in). */
static uint8_t round_u8(float v)
{
    if (!(v > 0))
        return 0;
    float t = v + 0x1p23f;
    t -= 0x1p23f;
    return t > 255 ? 255 : (uint8_t)t;
}

/* acc += w * in over n floats, in blocks of a fixed size that compilers
 * turn into vector instructions at -O2. */
static void add_scaled(float *restrict acc, const float *restrict in, float w, size_t n)
{
    enum { BLOCK = 16 };
    size_t j = 0;
    for (; j + BLOCK <= n; j += BLOCK)
        for (int q = 0; q < BLOCK; q++)
            acc[j + q] += w * in[j + q];
    for (; j < n; j++)
        acc[j] += w * in[j];
}

/*
 * Two passes: each source row to dw columns (rows), then each output row
 * from the rows its source span covers, accumulated a whole row at a time
 * so the inner loops run over contiguous floats.  Every output value is
 * the same sum, in the same order, as one pixel at a time.
 */
int eeb_rgb_resize(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh)
{
    struct axis ax = {0}, ay = {0};
    size_t row = (size_t)dw * 3;
    float *rows = malloc((size_t)sh * row * sizeof *rows), *acc = malloc(row * sizeof *acc);
    int rc = EEB_ENOMEM;
    if (!rows || !acc || axis_new(&ax, sw, dw) != EEB_OK || axis_new(&ay, sh, dh) != EEB_OK)
        goto out;
    for (int y = 0; y < sh; y++) {
        const uint8_t *in = src + (size_t)y * sw * 3;
        float *o = rows + (size_t)y * row;
        for (int x = 0; x < dw; x++) {
            const float *w = ax.weight + (size_t)x * ax.per;
            const uint8_t *p = in + (size_t)ax.first[x] * 3;
            float r = 0, g = 0, b = 0;
            for (int k = 0; k < ax.count[x]; k++) {
                r += w[k] * p[3 * k];
                g += w[k] * p[3 * k + 1];
                b += w[k] * p[3 * k + 2];
            }
            o[3 * x] = r, o[3 * x + 1] = g, o[3 * x + 2] = b;
        }
    }
    for (int y = 0; y < dh; y++) {
        for (size_t j = 0; j < row; j++)
            acc[j] = 0;
        for (int k = 0; k < ay.count[y]; k++)
            add_scaled(acc, rows + (size_t)(ay.first[y] + k) * row,
                       ay.weight[(size_t)y * ay.per + k], row);
        uint8_t *o = dst + (size_t)y * row;
        for (size_t j = 0; j < row; j++)
            o[j] = round_u8(acc[j]);
    }
    rc = EEB_OK;
out:
    axis_free(&ax), axis_free(&ay);
    free(rows), free(acc);
    return rc;
}
