/*
 * video.c - decoding a clip with FFmpeg (libavformat demuxes, libavcodec
 * decodes, libswscale scales to size x size RGB) and keeping T frames
 * spread evenly over it.
 *
 * The T kept of N frames are frame floor((i + 0.5) N / T) for i = 0..T-1,
 * the centres of T equal parts.  Containers do not reliably say N, so the
 * container's count is only a guess: the frames are decoded, those the
 * guess picks scaled as they pass, and counted; if the count is not the
 * guess (or the container gave none), the clip is decoded again with N
 * known.  An AVI (UCF-101's) says N, and only T frames are ever scaled.
 */
#include "eeb_import.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <pthread.h>
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
    int stream, size, frames; /* output side, frames kept */
    uint8_t *dst;             /* the kept frames, size x size RGB, one after another */
    int64_t n;                /* the frame count picks are made for; 0: count only */
    int64_t seen;             /* frames decoded so far */
    int next;                 /* the kept frame to fill next */
};

/* The frame kept as output i of `frames` from n. */
static int64_t pick(int i, int frames, int64_t n)
{
    return (2 * (int64_t)i + 1) * n / (2 * (int64_t)frames);
}

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

/* Counts the decoded frame, and scales it to size x size RGB into each
 * kept frame it is (one, or more when there are fewer than T). */
static int keep(struct decoder *d, char *err, size_t errlen)
{
    AVFrame *f = d->frame;
    if (d->seen == MAX_FRAMES)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: more than %d frames", d->path, MAX_FRAMES);
    int64_t j = d->seen++;
    size_t bytes = (size_t)d->size * d->size * 3;
    for (; d->n && d->next < d->frames && pick(d->next, d->frames, d->n) == j; d->next++) {
        uint8_t *out = d->dst + (size_t)d->next * bytes;
        if (d->next > 0 && pick(d->next - 1, d->frames, d->n) == j) {
            memcpy(out, out - bytes, bytes);
            continue;
        }
        d->sws =
            sws_getCachedContext(d->sws, f->width, f->height, (enum AVPixelFormat)f->format,
                                 d->size, d->size, AV_PIX_FMT_RGB24, SWS_AREA, NULL, NULL, NULL);
        if (!d->sws)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: cannot scale %dx%d frames of format %d",
                            d->path, f->width, f->height, f->format);
        uint8_t *dst[4] = {out, NULL, NULL, NULL};
        int stride[4] = {d->size * 3, 0, 0, 0};
        if (sws_scale(d->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst,
                      stride) != d->size)
            return eeb_errf(err, errlen, EEB_EFORMAT, "%s: frame %lld did not scale", d->path,
                            (long long)j);
    }
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

/* Our errors name the file and the cause; FFmpeg's own log lines would
 * only interleave with the progress line. */
static void quiet_ffmpeg(void)
{
    av_log_set_level(AV_LOG_QUIET);
}

static void close_decoder(struct decoder *d)
{
    sws_freeContext(d->sws);
    av_frame_free(&d->frame);
    av_packet_free(&d->pkt);
    avcodec_free_context(&d->codec);
    avformat_close_input(&d->fmt);
    d->sws = NULL;
}

/* Decodes every frame of the opened clip, keeping what d->n picks. */
static int decode_all(struct decoder *d, char *err, size_t errlen)
{
    int rc = EEB_OK;
    d->seen = 0, d->next = 0;
    for (;;) {
        int r = av_read_frame(d->fmt, d->pkt);
        if (r == AVERROR_EOF)
            break;
        if (r < 0)
            return av_fail(d, EEB_EFORMAT, "cannot read the container", r, err, errlen);
        if (d->pkt->stream_index == d->stream)
            rc = decode(d, d->pkt, err, errlen);
        av_packet_unref(d->pkt);
        if (rc != EEB_OK)
            return rc;
    }
    if ((rc = decode(d, NULL, err, errlen)) != EEB_OK)
        return rc;
    if (d->seen == 0)
        return eeb_errf(err, errlen, EEB_EFORMAT, "%s: the video has no frames", d->path);
    return EEB_OK;
}

int eeb_video_read(const char *path, int size, int frames, uint8_t *dst, char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT; /* importers call this from threads */
    pthread_once(&once, quiet_ffmpeg);
    struct decoder d = {.path = path, .size = size, .frames = frames, .dst = dst};
    int rc = open_decoder(&d, err, errlen);
    if (rc == EEB_OK) { /* the container's count: a guess */
        int64_t said = d.fmt->streams[d.stream]->nb_frames;
        d.n = said > 0 && said <= MAX_FRAMES ? said : 0;
        rc = decode_all(&d, err, errlen);
    }
    if (rc == EEB_OK && d.seen != d.n) { /* a wrong guess, or none: again, knowing */
        int64_t n = d.seen;
        close_decoder(&d);
        d.n = n;
        if ((rc = open_decoder(&d, err, errlen)) == EEB_OK)
            rc = decode_all(&d, err, errlen);
        if (rc == EEB_OK && d.seen != n)
            rc = eeb_errf(err, errlen, EEB_EFORMAT,
                          "%s: %lld frames decoded, then %lld from the same file", path,
                          (long long)n, (long long)d.seen);
    }
    close_decoder(&d);
    return rc;
}
