/*
 * video.c - decoding a clip with FFmpeg (libavformat demuxes, libavcodec
 * decodes, libswscale scales to size x size RGB) and keeping T frames
 * spread evenly over it.
 *
 * Containers do not reliably say how many frames they hold, so every frame
 * is decoded and kept at the output size (a 10 s clip at 64 x 64 is 3.7 MB)
 * and the T are chosen once the count is known: frame floor((i + 0.5) N / T)
 * for i = 0..T-1, the centres of T equal parts.
 */
#include "eeb_import.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 20000 /* about 11 minutes at 30 frames/s */

struct decoder {
    const char *path;
    AVFormatContext *fmt;
    AVCodecContext *codec;
    struct SwsContext *sws;
    AVPacket *pkt;
    AVFrame *frame;
    int stream, size;
    uint8_t *kept; /* every frame so far, size x size RGB */
    size_t nkept, cap;
};

static int av_fail(const struct decoder *d, int status, const char *what, int averr, char *err,
                   size_t errlen)
{
    char msg[AV_ERROR_MAX_STRING_SIZE] = "";
    av_strerror(averr, msg, sizeof msg);
    return eeb_errf(err, errlen, status, "%s: %s: %s", d->path, what, msg);
}

static int open_decoder(struct decoder *d, char *err, size_t errlen)
{
    int r = avformat_open_input(&d->fmt, d->path, NULL, NULL);
    if (r < 0)
        return av_fail(d, EEB_EIO, "cannot open the video", r, err, errlen);
    if ((r = avformat_find_stream_info(d->fmt, NULL)) < 0)
        return av_fail(d, EEB_EFORMAT, "no stream information", r, err, errlen);
    const AVCodec *codec = NULL;
    d->stream = av_find_best_stream(d->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (d->stream < 0)
        return av_fail(d, EEB_EFORMAT, "no decodable video stream", d->stream, err, errlen);
    d->codec = avcodec_alloc_context3(codec);
    d->pkt = av_packet_alloc();
    d->frame = av_frame_alloc();
    if (!d->codec || !d->pkt || !d->frame)
        return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", d->path);
    if ((r = avcodec_parameters_to_context(d->codec, d->fmt->streams[d->stream]->codecpar)) < 0 ||
        (r = avcodec_open2(d->codec, codec, NULL)) < 0)
        return av_fail(d, EEB_EFORMAT, "cannot open the decoder", r, err, errlen);
    return EEB_OK;
}

/* Scales the decoded frame to size x size RGB and keeps it. */
static int keep(struct decoder *d, char *err, size_t errlen)
{
    AVFrame *f = d->frame;
    if (d->nkept == MAX_FRAMES)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: more than %d frames", d->path, MAX_FRAMES);
    size_t bytes = (size_t)d->size * d->size * 3;
    if (d->nkept == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 64;
        uint8_t *p = realloc(d->kept, cap * bytes);
        if (!p)
            return eeb_errf(err, errlen, EEB_ENOMEM, "%s: out of memory", d->path);
        d->kept = p, d->cap = cap;
    }
    d->sws = sws_getCachedContext(d->sws, f->width, f->height, (enum AVPixelFormat)f->format,
                                  d->size, d->size, AV_PIX_FMT_RGB24, SWS_AREA, NULL, NULL, NULL);
    if (!d->sws)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: cannot scale %dx%d frames of format %d",
                        d->path, f->width, f->height, f->format);
    uint8_t *dst[4] = {d->kept + d->nkept * bytes, NULL, NULL, NULL};
    int stride[4] = {d->size * 3, 0, 0, 0};
    if (sws_scale(d->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst,
                  stride) != d->size)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: frame %zu did not scale", d->path, d->nkept);
    d->nkept++;
    return EEB_OK;
}

/* Sends pkt (NULL flushes) and keeps every frame that comes out. */
static int decode(struct decoder *d, const AVPacket *pkt, char *err, size_t errlen)
{
    int r = avcodec_send_packet(d->codec, pkt);
    if (r < 0)
        return av_fail(d, EEB_EFORMAT, "corrupt video data", r, err, errlen);
    for (;;) {
        r = avcodec_receive_frame(d->codec, d->frame);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF)
            return EEB_OK;
        if (r < 0)
            return av_fail(d, EEB_EFORMAT, "corrupt video data", r, err, errlen);
        int rc = keep(d, err, errlen);
        av_frame_unref(d->frame);
        if (rc != EEB_OK)
            return rc;
    }
}

int eeb_video_read(const char *path, int size, int frames, uint8_t *dst, char *err, size_t errlen)
{
    /* Our errors name the file and the cause; FFmpeg's own log lines would
     * only interleave with the progress line. */
    av_log_set_level(AV_LOG_QUIET);
    struct decoder d = {.path = path, .size = size};
    int rc = open_decoder(&d, err, errlen);
    while (rc == EEB_OK) {
        int r = av_read_frame(d.fmt, d.pkt);
        if (r == AVERROR_EOF)
            break;
        if (r < 0) {
            rc = av_fail(&d, EEB_EFORMAT, "cannot read the container", r, err, errlen);
            break;
        }
        if (d.pkt->stream_index == d.stream)
            rc = decode(&d, d.pkt, err, errlen);
        av_packet_unref(d.pkt);
    }
    if (rc == EEB_OK)
        rc = decode(&d, NULL, err, errlen);
    if (rc == EEB_OK && d.nkept == 0)
        rc = eeb_errf(err, errlen, EEB_EFORMAT, "%s: the video has no frames", path);
    if (rc == EEB_OK) {
        size_t bytes = (size_t)size * size * 3;
        for (int i = 0; i < frames; i++)
            memcpy(dst + (size_t)i * bytes,
                   d.kept + (size_t)((2 * i + 1) * d.nkept / (2 * (size_t)frames)) * bytes, bytes);
    }
    free(d.kept);
    sws_freeContext(d.sws);
    av_frame_free(&d.frame);
    av_packet_free(&d.pkt);
    avcodec_free_context(&d.codec);
    avformat_close_input(&d.fmt);
    return rc;
}
