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

int eeb_rgb_resize(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw, int dh)
{
    struct axis ax = {0}, ay = {0};
    float *rows = malloc((size_t)sh * dw * 3 * sizeof *rows); /* horizontal pass */
    int rc = EEB_ENOMEM;
    if (!rows || axis_new(&ax, sw, dw) != EEB_OK || axis_new(&ay, sh, dh) != EEB_OK)
        goto out;
    for (int y = 0; y < sh; y++)
        for (int x = 0; x < dw; x++)
            for (int ch = 0; ch < 3; ch++) {
                float s = 0;
                for (int k = 0; k < ax.count[x]; k++)
                    s += ax.weight[(size_t)x * ax.per + k] *
                         src[((size_t)y * sw + ax.first[x] + k) * 3 + ch];
                rows[((size_t)y * dw + x) * 3 + ch] = s;
            }
    for (int y = 0; y < dh; y++)
        for (int x = 0; x < dw; x++)
            for (int ch = 0; ch < 3; ch++) {
                float s = 0;
                for (int k = 0; k < ay.count[y]; k++)
                    s += ay.weight[(size_t)y * ay.per + k] *
                         rows[((size_t)(ay.first[y] + k) * dw + x) * 3 + ch];
                long v = lrintf(s);
                dst[((size_t)y * dw + x) * 3 + ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
    rc = EEB_OK;
out:
    axis_free(&ax), axis_free(&ay);
    free(rows);
    return rc;
}
