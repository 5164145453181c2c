/*
 * test_import.c - the importers on small datasets written here in each real
 * layout: JPEGs encoded with libjpeg-turbo, VOC annotation XML, and clips
 * encoded with libavcodec into AVI files; and their broken variants.  Then
 * each layout at the paper's sizes (--preset paper): Food-101's 101
 * classes of 512x384 and odd-sized JPEGs at 224x224, VOC's 500x375 images
 * at 416x416, UCF-101's 320x240 clips as 10 frames of 170x170; and the
 * same shard from any number of threads.
 */
#include "tasks/eeb_import.h"
#include "tasks/eeb_shard.h"
#include "tests/testlib.h"

#include <criterion/criterion.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- fixtures ---- */

static void write_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    test_write_file(path, text, strlen(text));
}

/* w x h RGB pixels of one colour, with a grey square in their top-left
 * quarter (so a resize that flips or shifts shows), for test_write_jpeg
 * (free them). */
static uint8_t *square_image(int w, int h, const uint8_t rgb[3])
{
    uint8_t *px = malloc((size_t)w * h * 3);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                px[((size_t)y * w + x) * 3 + c] = x < w / 2 && y < h / 2 ? 128 : rgb[c];
    return px;
}

static void encode(AVCodecContext *c, AVFrame *f, AVFormatContext *oc, AVStream *st)
{
    AVPacket *pkt = av_packet_alloc();
    cr_assert_eq(avcodec_send_frame(c, f), 0);
    while (avcodec_receive_packet(c, pkt) == 0) {
        av_packet_rescale_ts(pkt, c->time_base, st->time_base);
        pkt->stream_index = st->index;
        cr_assert_eq(av_interleaved_write_frame(oc, pkt), 0);
    }
    av_packet_free(&pkt);
}

/* An MPEG-4 clip of n grey frames, frame f of luma base + step f, in the
 * container its name's extension says (.avi, .mkv). */
static void write_video_ramp(const char *dir, const char *name, int w, int h, int n, int base,
                             int step)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    AVFormatContext *oc = NULL;
    cr_assert_geq(avformat_alloc_output_context2(&oc, NULL, NULL, path), 0);
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    cr_assert(codec, "libavcodec has no MPEG-4 encoder");
    AVStream *st = avformat_new_stream(oc, NULL);
    AVCodecContext *c = avcodec_alloc_context3(codec);
    c->width = w, c->height = h;
    c->time_base = (AVRational){1, 25};
    c->framerate = (AVRational){25, 1};
    c->pix_fmt = AV_PIX_FMT_YUV420P;
    c->gop_size = 4, c->max_b_frames = 0;
    c->qmin = c->qmax = 2;
    if (oc->oformat->flags & AVFMT_GLOBALHEADER)
        c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    cr_assert_eq(avcodec_open2(c, codec, NULL), 0);
    cr_assert_geq(avcodec_parameters_from_context(st->codecpar, c), 0);
    st->time_base = c->time_base;
    cr_assert_geq(avio_open(&oc->pb, path, AVIO_FLAG_WRITE), 0);
    cr_assert_geq(avformat_write_header(oc, NULL), 0);
    AVFrame *f = av_frame_alloc();
    f->format = c->pix_fmt, f->width = w, f->height = h;
    cr_assert_eq(av_frame_get_buffer(f, 0), 0);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(av_frame_make_writable(f), 0);
        for (int y = 0; y < h; y++)
            memset(f->data[0] + y * f->linesize[0], base + step * i, (size_t)w);
        for (int y = 0; y < h / 2; y++) {
            memset(f->data[1] + y * f->linesize[1], 128, (size_t)w / 2);
            memset(f->data[2] + y * f->linesize[2], 128, (size_t)w / 2);
        }
        f->pts = i;
        encode(c, f, oc, st);
    }
    encode(c, NULL, oc, st);
    cr_assert_eq(av_write_trailer(oc), 0);
    avio_closep(&oc->pb);
    av_frame_free(&f);
    avcodec_free_context(&c);
    avformat_free_context(oc);
}

/* An MPEG-4 AVI of n grey frames, frame f of luma 30 + 15 f. */
static void write_video(const char *dir, const char *name, int w, int h, int n)
{
    write_video_ramp(dir, name, w, h, n, 30, 15);
}

/* Food-101 layout: classes apple_pie, ramen, sushi; two train images and
 * one test image each, of different sizes; sushi's colour is blue. */
static const uint8_t food_colour[3][3] = {{200, 40, 40}, {40, 200, 40}, {40, 40, 200}};

static const char *food101(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/food-101", test_tmpdir());
    static const char *const cls[3] = {"apple_pie", "ramen", "sushi"};
    for (int k = 0; k < 3; k++) {
        char sub[64], path[512];
        snprintf(sub, sizeof sub, "images/%s", cls[k]);
        test_mkdirs(dir, sub);
        for (int i = 0; i < 3; i++) {
            int w = 64 + 16 * i;
            uint8_t *px = square_image(w, 48, food_colour[k]);
            snprintf(path, sizeof path, "%s/%s/%d.jpg", dir, sub, 100 * k + i);
            test_write_jpeg(path, px, w, 48);
            free(px);
        }
    }
    test_mkdirs(dir, "meta");
    write_text(dir, "meta/classes.txt", "apple_pie\nramen\nsushi\n");
    write_text(dir, "meta/train.txt",
               "apple_pie/0\napple_pie/1\nramen/100\nramen/101\r\nsushi/200\nsushi/201\n");
    write_text(dir, "meta/test.txt", "apple_pie/2\n\nramen/102\nsushi/202\n");
    return dir;
}

static struct eeb_import_spec spec(enum eeb_import_format f, const char *src, const char *name)
{
    static char out[256];
    snprintf(out, sizeof out, "%s/%s", test_tmpdir(), name);
    /* three threads on any machine: items come back in list order */
    return (struct eeb_import_spec){f, src, out, 0, 16, 4, NULL, 0, NULL, 3};
}

/* ---- Food-101 ---- */

Test(import, food101_images_classes_and_resize)
{
    const char *src = food101();
    struct eeb_import_spec sp = spec(EEB_IMPORT_FOOD101, src, "food.eebd");
    struct eeb_import_result res;
    char err[512];
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 6);
    cr_assert_eq(res.skipped, 0);

    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, sp.out, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *in = eeb_shard_info(s);
    cr_assert(in->task == EEB_TASK_CLS && in->classes == 3 && in->h == 16 && in->w == 16);
    cr_assert_str_eq(in->names[2], "sushi");
    const struct eeb_record *r;
    int n = 0;
    while (eeb_shard_next(s, &r, err, sizeof err) == 1) {
        int k = n / 2;
        cr_assert_eq(r->label, k, "record %d (%s)", n, r->id);
        /* bottom-right pixel: the class colour; top-left: the grey square */
        const uint8_t *br = r->pixels + (15 * 16 + 15) * 3, *tl = r->pixels;
        for (int c = 0; c < 3; c++) {
            cr_assert_leq(abs(br[c] - food_colour[k][c]), 4, "%s channel %d: %d", r->id, c, br[c]);
            cr_assert_leq(abs(tl[c] - 128), 4, "%s channel %d: %d", r->id, c, tl[c]);
        }
        n++;
    }
    cr_assert_eq(n, 6);
    cr_assert_str_eq(r->id, "sushi/201");
    eeb_shard_close(s);

    /* --classes picks and orders; the test split is read from test.txt */
    sp.classes = "sushi,apple_pie";
    sp.test = 1;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 2);
    cr_assert_eq(eeb_shard_open(&s, sp.out, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_str_eq(eeb_shard_info(s)->names[0], "sushi");
    cr_assert_eq(eeb_shard_next(s, &r, err, sizeof err), 1);
    cr_assert(strcmp(r->id, "apple_pie/2") == 0 && r->label == 1, "%s %d", r->id, r->label);
    eeb_shard_close(s);

    sp.classes = "sushi,pizza";
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EINVAL);
    cr_assert(strstr(err, "--classes: 'pizza' is not a class of this dataset"), "%s", err);
}

Test(import, food101_broken_items_are_named_or_skipped)
{
    const char *src = food101();
    char path[512];
    /* a truncated JPEG: the header decodes, the data after SOS ends early */
    snprintf(path, sizeof path, "%s/images/ramen/101.jpg", src);
    size_t len, sos = 0;
    char *jpeg = test_read_file(path, &len);
    while (sos + 1 < len && !((uint8_t)jpeg[sos] == 0xff && (uint8_t)jpeg[sos + 1] == 0xda))
        sos++;
    cr_assert_lt(sos + 16, len, "no SOS marker in the JPEG");
    test_write_file(path, jpeg, sos + (len - sos) / 2);
    free(jpeg);
    struct eeb_import_spec sp = spec(EEB_IMPORT_FOOD101, src, "food.eebd");
    struct eeb_import_result res;
    char err[512];
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "images/ramen/101.jpg: corrupt JPEG"), "%s", err);
    struct stat st;
    cr_assert_neq(stat(sp.out, &st), 0, "a failed import left a shard");

    /* not a JPEG at all, and a missing file */
    snprintf(path, sizeof path, "%s/images/sushi/200.jpg", src);
    test_write_file(path, "GIF89a", 6);
    snprintf(path, sizeof path, "%s/images/apple_pie/0.jpg", src);
    unlink(path);
    sp.skip_bad = 1;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 3);
    cr_assert_eq(res.skipped, 3);
    cr_assert(strstr(res.first_skipped, "images/apple_pie/0.jpg: No such file"), "%s",
              res.first_skipped);

    /* the lists' own errors are never skipped */
    write_text(src, "meta/train.txt", "apple_pie/1\nramen/102\napple_pie/1\n");
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "item 'apple_pie/1' is listed twice"), "%s", err);
    write_text(src, "meta/train.txt", "apple_pie/1\npizza/7\n");
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "meta/train.txt:2: class 'pizza' is not in classes.txt"), "%s", err);
}

/* ---- Pascal VOC ---- */

static const char voc_xml[] =
    "<annotation><folder>VOC2007</folder><filename>%s.jpg</filename>\n"
    "<size><width>100</width><height>50</height><depth>3</depth></size>\n"
    "<object><name>dog</name><difficult>0</difficult>\n"
    "  <bndbox><xmin>11</xmin><ymin>6</ymin><xmax>60</xmax><ymax>30</ymax></bndbox></object>\n"
    "<object><name>person</name><difficult>1</difficult>\n"
    "  <bndbox><xmin>1</xmin><ymin>1</ymin><xmax>100</xmax><ymax>50</ymax></bndbox>\n"
    "  <part><name>head</name><bndbox><xmin>2</xmin><ymin>2</ymin><xmax>9</xmax><ymax>9</ymax>"
    "</bndbox></part></object>\n"
    "%s</annotation>\n";

static const char *voc(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/VOC2007", test_tmpdir());
    test_mkdirs(dir, "JPEGImages");
    test_mkdirs(dir, "Annotations");
    test_mkdirs(dir, "ImageSets/Main");
    static const uint8_t grey[3] = {90, 90, 90};
    const char *ids[3] = {"000005", "000007", "000009"};
    uint8_t *px = square_image(100, 50, grey);
    for (int i = 0; i < 3; i++) {
        char path[512], name[64], xml[2048];
        snprintf(path, sizeof path, "%s/JPEGImages/%s.jpg", dir, ids[i]);
        test_write_jpeg(path, px, 100, 50);
        snprintf(name, sizeof name, "Annotations/%s.xml", ids[i]);
        snprintf(xml, sizeof xml, voc_xml, ids[i], "");
        write_text(dir, name, xml);
    }
    free(px);
    write_text(dir, "ImageSets/Main/trainval.txt", "000005\n000007\n");
    write_text(dir, "ImageSets/Main/test.txt", "000009\n");
    return dir;
}

Test(import, voc_boxes_scale_with_the_image)
{
    const char *src = voc();
    struct eeb_import_spec sp = spec(EEB_IMPORT_VOC, src, "voc.eebd");
    sp.size = 20;
    struct eeb_import_result res;
    char err[512];
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 2);
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, sp.out, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *in = eeb_shard_info(s);
    /* the classes are the annotations' object names, sorted */
    cr_assert(in->task == EEB_TASK_DET && in->classes == 2);
    cr_assert_str_eq(in->names[0], "dog");
    cr_assert_str_eq(in->names[1], "person");
    const struct eeb_record *r;
    cr_assert_eq(eeb_shard_next(s, &r, err, sizeof err), 1);
    cr_assert_str_eq(r->id, "000005");
    cr_assert_eq(r->nboxes, 2, "the <part> is not an object");
    /* pixels 11..60 of 100 are [10, 60] continuous: x 0.2 -> [2, 12];
     * rows 6..30 of 50 are [5, 30]: y 0.4 -> [2, 12] */
    const struct eeb_box *b = &r->boxes[0];
    cr_assert(b->cls == 0 && !b->difficult);
    cr_assert_float_eq(b->x0, 2.0f, 1e-5);
    cr_assert_float_eq(b->x1, 12.0f, 1e-5);
    cr_assert_float_eq(b->y0, 2.0f, 1e-5);
    cr_assert_float_eq(b->y1, 12.0f, 1e-5);
    b = &r->boxes[1];
    cr_assert(b->cls == 1 && b->difficult && b->x0 == 0 && b->x1 == 20 && b->y1 == 20);
    eeb_shard_close(s);

    /* --classes keeps only those objects, renumbered */
    sp.classes = "person";
    sp.test = 1;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_open(&s, sp.out, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_next(s, &r, err, sizeof err), 1);
    cr_assert(r->nboxes == 1 && r->boxes[0].cls == 0 && strcmp(r->id, "000009") == 0);
    eeb_shard_close(s);
}

Test(import, voc_broken_annotations_are_named)
{
    const char *src = voc();
    char xml[2048];
    snprintf(xml, sizeof xml, voc_xml, "000007",
             "<object><name>cat</name><difficult>0</difficult></object>\n");
    write_text(src, "Annotations/000007.xml", xml);
    struct eeb_import_spec sp = spec(EEB_IMPORT_VOC, src, "voc.eebd");
    struct eeb_import_result res;
    char err[512];
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "Annotations/000007.xml:8"), "%s", err);
    cr_assert(strstr(err, "bndbox"), "%s", err);

    sp.skip_bad = 1;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(res.records == 1 && res.skipped == 1);

    /* a class of the dataset's own is one of its classes, not an error */
    snprintf(xml, sizeof xml, voc_xml, "000007",
             "<object><name>unicorn</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax>"
             "<ymax>5</ymax></bndbox></object>\n");
    write_text(src, "Annotations/000007.xml", xml);
    sp.skip_bad = 0;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.annotations, 3);
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, sp.out, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_info(s)->classes, 3);
    cr_assert_str_eq(eeb_shard_info(s)->names[2], "unicorn");
    eeb_shard_close(s);

    snprintf(xml, sizeof xml, voc_xml, "000007",
             "<object><name>cat</name><bndbox><xmin>90</xmin><ymin>1</ymin><xmax>101</xmax>"
             "<ymax>5</ymax></bndbox></object>\n");
    write_text(src, "Annotations/000007.xml", xml);
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err,
                     "000007.xml:8: object 3 (cat): bndbox 90,1-101,5 is not within the 100x50 "
                     "image"),
              "%s", err);
}

/* ---- UCF-101 ---- */

static const char *ucf101(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/UCF101", test_tmpdir());
    test_mkdirs(dir, "UCF-101/Archery");
    test_mkdirs(dir, "UCF-101/Biking");
    test_mkdirs(dir, "ucfTrainTestlist");
    write_video(dir, "UCF-101/Archery/v_Archery_g01_c01.avi", 48, 32, 12);
    write_video(dir, "UCF-101/Biking/v_Biking_g01_c01.avi", 32, 32, 3);
    write_video(dir, "UCF-101/Biking/v_Biking_g08_c01.avi", 32, 32, 12);
    write_text(dir, "ucfTrainTestlist/classInd.txt", "1 Archery\n2 Biking\n");
    write_text(dir, "ucfTrainTestlist/trainlist01.txt",
               "Archery/v_Archery_g01_c01.avi 1\nBiking/v_Biking_g01_c01.avi 2\n");
    write_text(dir, "ucfTrainTestlist/testlist01.txt", "Biking/v_Biking_g08_c01.avi\n");
    return dir;
}

/* Full-range RGB of the limited-range luma y (BT.601, as swscale does). */
static int rgb_of_luma(int y)
{
    return (int)((y - 16) * 255.0 / 219 + 0.5);
}

Test(import, ucf101_clips_sample_frames_evenly)
{
    const char *src = ucf101();
    struct eeb_import_spec sp = spec(EEB_IMPORT_UCF101, src, "ucf.eebd");
    struct eeb_import_result res;
    char err[512];
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 2);
    struct eeb_shard *s;
    cr_assert_eq(eeb_shard_open(&s, sp.out, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_shard_info *in = eeb_shard_info(s);
    cr_assert(in->task == EEB_TASK_VIDEO && in->frames == 4 && in->classes == 2);
    const struct eeb_record *r;
    cr_assert_eq(eeb_shard_next(s, &r, err, sizeof err), 1);
    cr_assert_str_eq(r->id, "v_Archery_g01_c01");
    cr_assert_eq(r->label, 0);
    /* 12 frames in 4 parts: the centres are frames 1, 4, 7 and 10 */
    static const int picked[4] = {1, 4, 7, 10};
    for (int f = 0; f < 4; f++) {
        int want = rgb_of_luma(30 + 15 * picked[f]);
        const uint8_t *p = r->pixels + (size_t)f * 16 * 16 * 3 + (8 * 16 + 8) * 3;
        for (int c = 0; c < 3; c++)
            cr_assert_leq(abs(p[c] - want), 4, "frame %d channel %d: %d, expected %d", f, c, p[c],
                          want);
    }
    /* 3 frames for 4: the centres of the parts are frames 0, 1, 1, 2 */
    cr_assert_eq(eeb_shard_next(s, &r, err, sizeof err), 1);
    cr_assert_eq(r->label, 1);
    size_t frame = 16 * 16 * 3;
    cr_assert_eq(memcmp(r->pixels + frame, r->pixels + 2 * frame, frame), 0);
    cr_assert_neq(memcmp(r->pixels, r->pixels + frame, frame), 0);
    cr_assert_neq(memcmp(r->pixels + 2 * frame, r->pixels + 3 * frame, frame), 0);
    eeb_shard_close(s);

    sp.test = 1;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 1);
}

Test(import, ucf101_broken_videos_and_lists_are_named)
{
    const char *src = ucf101();
    char path[512];
    snprintf(path, sizeof path, "%s/UCF-101/Biking/v_Biking_g01_c01.avi", src);
    test_write_file(path, "RIFF\0\0\0\0AVI garbage", 19);
    struct eeb_import_spec sp = spec(EEB_IMPORT_UCF101, src, "ucf.eebd");
    struct eeb_import_result res;
    char err[512];
    cr_assert_neq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK);
    cr_assert(strstr(err, "v_Biking_g01_c01.avi: "), "%s", err);
    sp.skip_bad = 1;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(res.records == 1 && res.skipped == 1);

    write_text(src, "ucfTrainTestlist/trainlist01.txt",
               "Archery/v_Archery_g01_c01.avi 1\nArchery/v_Biking_g01_c01.avi 2\n");
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
    cr_assert(strstr(err, "trainlist01.txt:2: 'Archery/v_Biking_g01_c01.avi 2' is not"), "%s", err);
}

/* ---- the command ---- */

Test(import, the_command_reports_what_it_skipped)
{
    const char *src = food101();
    char path[512], out[256];
    snprintf(path, sizeof path, "%s/images/ramen/100.jpg", src);
    test_write_file(path, "\xff\xd8\xff", 3);
    snprintf(out, sizeof out, "%s/f.eebd", test_tmpdir());
    struct test_run r = test_eeb((const char *[]){"data", "import", "--format", "food101", src,
                                                  "--split", "train", "-o", out, NULL});
    cr_assert_eq(r.status, 1);
    cr_assert(strstr(r.err, "images/ramen/100.jpg: not a readable JPEG"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"data", "import", "--format", "food101", src, "--split", "train",
                                  "-o", out, "--size", "32", "--skip-bad", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "5 cls records, 3 classes, 32x32x3"), "%s", r.out);
    cr_assert(strstr(r.err, "skipped 1 unreadable item (--skip-bad)"), "%s", r.err);
    test_run_free(&r);
    r = test_eeb((const char *[]){"data", "import", "--format", "coco", src, "--split", "train",
                                  "-o", out, NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "'coco' (food101, voc or ucf101)"), "%s", r.err);
    test_run_free(&r);
}

/* ---- at the paper's sizes ---- */

static int same_bytes(const char *a, const char *b)
{
    size_t la, lb;
    char *x = test_read_file(a, &la), *y = test_read_file(b, &lb);
    int same = x && y && la == lb && memcmp(x, y, la) == 0;
    free(x), free(y);
    return same;
}

/* Food-101's images are at most 512 on a side, most 512x384; some odd
 * sizes besides, and one already at 224x224. */
static const int food_sizes[][2] = {{512, 384}, {384, 512}, {512, 512}, {512, 384}, {511, 383},
                                    {289, 217}, {512, 384}, {224, 224}, {97, 61}};

static void class_colour(int k, uint8_t rgb[3])
{
    rgb[0] = (uint8_t)(30 + k * 37 % 200);
    rgb[1] = (uint8_t)(30 + k * 91 % 200);
    rgb[2] = (uint8_t)(30 + k * 53 % 200);
}

/* Food-101 as it comes: 101 class directories of three images each, two
 * listed in meta/train.txt and one in meta/test.txt; class k is
 * class_colour(k), with the grey square of square_image. */
static const char *food101_full(void)
{
    static char dir[256];
    snprintf(dir, sizeof dir, "%s/food-101", test_tmpdir());
    test_mkdirs(dir, "meta");
    static char classes[101 * 16], train[101 * 48], test[101 * 24];
    size_t nc = 0, ntr = 0, nte = 0;
    for (int k = 0; k < 101; k++) {
        char sub[64], path[512];
        snprintf(sub, sizeof sub, "images/class_%03d", k);
        test_mkdirs(dir, sub);
        uint8_t rgb[3];
        class_colour(k, rgb);
        for (int i = 0; i < 3; i++) {
            const int *wh = food_sizes[(3 * k + i) % 9];
            uint8_t *px = square_image(wh[0], wh[1], rgb);
            snprintf(path, sizeof path, "%s/%s/%d.jpg", dir, sub, 1000 * k + i);
            test_write_jpeg(path, px, wh[0], wh[1]);
            free(px);
        }
        nc += (size_t)snprintf(classes + nc, sizeof classes - nc, "class_%03d\n", k);
        ntr += (size_t)snprintf(train + ntr, sizeof train - ntr, "class_%03d/%d\nclass_%03d/%d\n",
                                k, 1000 * k, k, 1000 * k + 1);
        nte += (size_t)snprintf(test + nte, sizeof test - nte, "class_%03d/%d\n", k, 1000 * k + 2);
    }
    write_text(dir, "meta/classes.txt", classes);
    write_text(dir, "meta/train.txt", train);
    write_text(dir, "meta/test.txt", test);
    return dir;
}

Test(import, food101_at_224_with_the_paper_preset, .timeout = 300)
{
    const char *src = food101_full();
    char out[256];
    snprintf(out, sizeof out, "%s/train224.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "food101", src, "--split", "train",
                                  "-o", out, "--preset", "paper", "--threads", "2", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "202 cls records, 101 classes, 224x224x3"), "%s", r.out);
    test_run_free(&r);

    struct eeb_shard *s;
    char err[512];
    cr_assert_eq(eeb_shard_open(&s, out, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(eeb_shard_pixels(eeb_shard_info(s)), 224 * 224 * 3);
    const struct eeb_record *rec;
    int n = 0;
    while (eeb_shard_next(s, &rec, err, sizeof err) == 1) {
        int k = n / 2;
        char id[32];
        snprintf(id, sizeof id, "class_%03d/%d", k, 1000 * k + n % 2);
        cr_assert_str_eq(rec->id, id);
        cr_assert_eq(rec->label, k, "%s", rec->id);
        uint8_t rgb[3];
        class_colour(k, rgb);
        /* bottom-right: the class's colour; top-left: the grey square */
        const uint8_t *br = rec->pixels + (223 * 224 + 223) * 3, *tl = rec->pixels;
        for (int c = 0; c < 3; c++) {
            cr_assert_leq(abs(br[c] - rgb[c]), 4, "%s channel %d: %d", rec->id, c, br[c]);
            cr_assert_leq(abs(tl[c] - 128), 4, "%s channel %d: %d", rec->id, c, tl[c]);
        }
        n++;
    }
    cr_assert_eq(n, 202, "%s", err);
    eeb_shard_close(s);

    /* one thread, through the library: the same bytes */
    struct eeb_import_spec sp = spec(EEB_IMPORT_FOOD101, src, "one.eebd");
    sp.size = 224, sp.threads = 1;
    struct eeb_import_result res;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert_eq(res.records, 202);
    cr_assert(same_bytes(out, sp.out), "one thread and two made different shards");

    /* --size given as well overrides the preset; a preset the task has not */
    r = test_eeb((const char *[]){"data", "import", "--format", "food101", src, "--split", "test",
                                  "-o", out, "--preset", "paper", "--size", "32", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "101 cls records, 101 classes, 32x32x3"), "%s", r.out);
    test_run_free(&r);
    r = test_eeb((const char *[]){"data", "import", "--format", "food101", src, "--split", "test",
                                  "-o", out, "--preset", "huge", NULL});
    cr_assert_eq(r.status, 2);
    cr_assert(strstr(r.err, "--preset: 'huge' (cls: paper)"), "%s", r.err);
    test_run_free(&r);
}

/* A VOC image is about 500x375; its boxes scale with it to 416x416. */
static const char voc_500_xml[] =
    "<annotation><filename>%s.jpg</filename>\n"
    "<size><width>500</width><height>375</height><depth>3</depth></size>\n"
    "<object><name>dog</name><difficult>0</difficult>\n"
    "  <bndbox><xmin>11</xmin><ymin>6</ymin><xmax>60</xmax><ymax>30</ymax></bndbox></object>\n"
    "<object><name>person</name><difficult>1</difficult>\n"
    "  <bndbox><xmin>1</xmin><ymin>1</ymin><xmax>500</xmax><ymax>375</ymax></bndbox></object>\n"
    "</annotation>\n";

Test(import, voc_at_416_with_the_paper_preset)
{
    static char src[256];
    snprintf(src, sizeof src, "%s/VOC2007", test_tmpdir());
    test_mkdirs(src, "JPEGImages");
    test_mkdirs(src, "Annotations");
    test_mkdirs(src, "ImageSets/Main");
    static const uint8_t grey[3] = {90, 90, 90};
    uint8_t *px = square_image(500, 375, grey);
    for (int i = 1; i <= 4; i++) {
        char path[512], name[64], xml[1024], id[8];
        snprintf(id, sizeof id, "%06d", i);
        snprintf(path, sizeof path, "%s/JPEGImages/%s.jpg", src, id);
        test_write_jpeg(path, px, 500, 375);
        snprintf(name, sizeof name, "Annotations/%s.xml", id);
        snprintf(xml, sizeof xml, voc_500_xml, id);
        write_text(src, name, xml);
    }
    free(px);
    write_text(src, "ImageSets/Main/trainval.txt", "000001\n000002\n000003\n");
    write_text(src, "ImageSets/Main/test.txt", "000004\n");
    char out[256];
    snprintf(out, sizeof out, "%s/voc416.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "voc", src, "--split", "train",
                                  "-o", out, "--preset", "paper", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "3 det records, 2 classes, 416x416x3"), "%s", r.out);
    test_run_free(&r);

    struct eeb_shard *s;
    char err[512];
    cr_assert_eq(eeb_shard_open(&s, out, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *rec;
    cr_assert_eq(eeb_shard_next(s, &rec, err, sizeof err), 1, "%s", err);
    cr_assert_eq(rec->nboxes, 2);
    /* pixels 11..60 of 500 are [10, 60] continuous, x 416/500; rows 6..30
     * of 375 are [5, 30], y 416/375 */
    const struct eeb_box *b = &rec->boxes[0];
    cr_assert(b->cls == 0 && !b->difficult);
    cr_assert_float_eq(b->x0, 8.32f, 1e-4);
    cr_assert_float_eq(b->x1, 49.92f, 1e-4);
    cr_assert_float_eq(b->y0, 5.0f * 416 / 375, 1e-4);
    cr_assert_float_eq(b->y1, 33.28f, 1e-4);
    b = &rec->boxes[1];
    cr_assert(b->cls == 1 && b->difficult && b->x0 == 0 && b->y0 == 0 && b->x1 == 416 &&
              b->y1 == 416);
    eeb_shard_close(s);

    struct eeb_import_spec sp = spec(EEB_IMPORT_VOC, src, "one.eebd");
    sp.size = 416, sp.threads = 1;
    struct eeb_import_result res;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(same_bytes(out, sp.out), "one thread and the default made different shards");
}

/* UCF-101's clips are 320x240 AVIs at 25 frames/s: 25 frames for 10 kept
 * are frames floor((i + 1/2) 25 / 10); 7 frames for 10 repeat some.  A
 * Matroska file does not say how many frames it holds: the same frames
 * are kept. */
Test(import, ucf101_at_10x170_with_the_paper_preset)
{
    static char src[256];
    snprintf(src, sizeof src, "%s/UCF101", test_tmpdir());
    test_mkdirs(src, "UCF-101/Archery");
    test_mkdirs(src, "UCF-101/Biking");
    test_mkdirs(src, "ucfTrainTestlist");
    write_video_ramp(src, "UCF-101/Archery/v_Archery_g01_c01.avi", 320, 240, 25, 20, 9);
    write_video_ramp(src, "UCF-101/Biking/v_Biking_g01_c01.avi", 320, 240, 7, 20, 30);
    write_video_ramp(src, "UCF-101/Biking/v_Biking_g02_c01.mkv", 320, 240, 25, 20, 9);
    write_video_ramp(src, "UCF-101/Biking/v_Biking_g08_c01.avi", 320, 240, 12, 30, 15);
    write_text(src, "ucfTrainTestlist/classInd.txt", "1 Archery\n2 Biking\n");
    write_text(src, "ucfTrainTestlist/trainlist01.txt",
               "Archery/v_Archery_g01_c01.avi 1\nBiking/v_Biking_g01_c01.avi 2\n"
               "Biking/v_Biking_g02_c01.mkv 2\n");
    write_text(src, "ucfTrainTestlist/testlist01.txt", "Biking/v_Biking_g08_c01.avi\n");
    char out[256];
    snprintf(out, sizeof out, "%s/ucf170.eebd", test_tmpdir());
    struct test_run r =
        test_eeb((const char *[]){"data", "import", "--format", "ucf101", src, "--split", "train",
                                  "-o", out, "--preset", "paper", "--threads", "2", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert(strstr(r.out, "3 video records, 2 classes, 170x170x3 x 10 frames"), "%s", r.out);
    test_run_free(&r);

    static const int picked[3][10] = {{1, 3, 6, 8, 11, 13, 16, 18, 21, 23},
                                      {0, 1, 1, 2, 3, 3, 4, 5, 5, 6},
                                      {1, 3, 6, 8, 11, 13, 16, 18, 21, 23}};
    static const int base[3] = {20, 20, 20}, step[3] = {9, 30, 9}, label[3] = {0, 1, 1};
    struct eeb_shard *s;
    char err[512];
    cr_assert_eq(eeb_shard_open(&s, out, err, sizeof err), EEB_OK, "%s", err);
    const struct eeb_record *rec;
    size_t frame = 170 * 170 * 3;
    for (int v = 0; v < 3; v++) {
        cr_assert_eq(eeb_shard_next(s, &rec, err, sizeof err), 1, "%s", err);
        cr_assert_eq(rec->label, label[v]);
        for (int f = 0; f < 10; f++) {
            int want = rgb_of_luma(base[v] + step[v] * picked[v][f]);
            const uint8_t *p = rec->pixels + (size_t)f * frame + (85 * 170 + 85) * 3;
            for (int c = 0; c < 3; c++)
                cr_assert_leq(abs(p[c] - want), 4, "%s frame %d channel %d: %d, expected %d",
                              rec->id, f, c, p[c], want);
        }
    }
    eeb_shard_close(s);

    struct eeb_import_spec sp = spec(EEB_IMPORT_UCF101, src, "one.eebd");
    sp.size = 170, sp.frames = 10, sp.threads = 1;
    struct eeb_import_result res;
    cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
    cr_assert(same_bytes(out, sp.out), "one thread and two made different shards");
}

/*
 * Threads load items ahead of the writer: what --skip-bad skips and the
 * first reason it names, and the error that stops an import, are those
 * of list order, whatever the threads.
 */
Test(import, the_threads_change_nothing_but_the_time)
{
    const char *src = food101();
    char path[512];
    snprintf(path, sizeof path, "%s/images/ramen/100.jpg", src);
    test_write_file(path, "\xff\xd8\xff", 3);
    snprintf(path, sizeof path, "%s/images/sushi/201.jpg", src);
    test_write_file(path, "GIF89a", 6);
    char shards[3][256], err[512];
    for (int t = 0; t < 3; t++) {
        struct eeb_import_spec sp = spec(EEB_IMPORT_FOOD101, src, "f.eebd");
        snprintf(shards[t], sizeof shards[t], "%s", sp.out);
        sp.out = shards[t], sp.skip_bad = 1, sp.threads = 1 + 3 * t; /* 1, 4, 7 */
        struct eeb_import_result res;
        cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_OK, "%s", err);
        cr_assert(res.records == 4 && res.skipped == 2, "%d threads", sp.threads);
        cr_assert(strstr(res.first_skipped, "images/ramen/100.jpg: not a readable JPEG"),
                  "%d threads: %s", sp.threads, res.first_skipped);
        cr_assert(t == 0 || same_bytes(shards[0], shards[t]), "%d threads", sp.threads);

        sp.skip_bad = 0;
        cr_assert_eq(eeb_import(&sp, NULL, NULL, &res, err, sizeof err), EEB_EFORMAT);
        cr_assert(strstr(err, "images/ramen/100.jpg: not a readable JPEG"), "%d threads: %s",
                  sp.threads, err);
    }
}
