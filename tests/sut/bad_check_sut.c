/*
 * bad_check_sut.c - SUT libraries `eeb sut check` must fail, one fault
 * each, chosen by a -D flag (the Makefile builds each as
 * build/.../tests/sut/libcheck_NAME.so for test_sut_check.c):
 *
 *   (none)            a well-behaved SUT: the battery passes
 *   CHECK_BY_POSITION answers from a cache keyed by the item's place in its
 *                     batch, not by its pixels (order fails)
 *   CHECK_RANDOM      random scores (determinism fails)
 *   CHECK_UNTRAINED   training changes nothing it predicts (training fails)
 *   CHECK_SLOW        its first predict takes 0.6 s (deadline 0.5 fails)
 *   CHECK_NAN         a non-finite number in every answer (shapes fails):
 *                     cls, video: the second rank's score is NaN; det: the
 *                     box's score is NaN, or its x1 +inf when the
 *                     environment has EEB_TEST_NAN_FIELD=x1
 *   CHECK_CRASH       its second train step dereferences NULL (SIGSEGV)
 *   CHECK_HANG        its second train step never returns
 *   CHECK_COUNTERS    well-behaved, but its counters claim ten times the
 *                     steps it took (the battery passes; eeb run's judge
 *                     holds its counters to the steps it drove)
 *
 * The well-behaved learner: an item's best class is its pixels' sum plus
 * the steps trained, modulo the classes, the next ranks the classes after
 * it; det, one box of that class over the whole image.
 */
#define _POSIX_C_SOURCE 200809L

#include "sut/eeb_sut.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sut {
    struct eeb_sut_setup s;
    size_t item; /* bytes */
    unsigned steps;
    unsigned long long items; /* trained on */
};

static int check_open(const struct eeb_sut_setup *setup, void **out, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct sut *s = calloc(1, sizeof *s);
    if (!s)
        return -1;
    s->s = *setup;
    s->s.config = s->s.workdir = NULL; /* the call's only */
    s->item = (size_t)setup->frames * setup->height * setup->width * setup->channels;
    *out = s;
    return 0;
}

static int check_load(void *sut, const char *path, char *err, size_t errlen)
{
    (void)sut, (void)path, (void)err, (void)errlen;
    return 0;
}

static int check_train(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step,
                       char *err, size_t errlen)
{
    (void)batch, (void)err, (void)errlen;
    struct sut *s = sut;
#if defined(CHECK_CRASH)
    if (s->steps == 1)
        *(volatile int *)(uintptr_t)(s->steps - 1) = 1; /* a write through NULL */
#elif defined(CHECK_HANG)
    while (s->steps == 1)
        pause();
#endif
#ifndef CHECK_UNTRAINED
    s->steps++;
#endif
    s->items += (unsigned)batch->n;
    step->loss = 1.0 / (1 + s->steps);
    step->correct = 0, step->counted = batch->n;
    return 0;
}

/* The item's best class. */
static int best(const struct sut *s, const struct eeb_sut_batch *b, int i)
{
#ifdef CHECK_BY_POSITION
    (void)b;
    return (int)((unsigned)i + s->steps) % s->s.classes;
#else
    unsigned sum = 0;
    for (size_t j = 0; j < s->item; j++)
        sum += b->pixels[(size_t)i * s->item + j];
    return (int)((sum + s->steps) % (unsigned)s->s.classes);
#endif
}

static float score(int rank)
{
#ifdef CHECK_NAN
    if (rank == 1)
        return NAN;
#endif
#ifdef CHECK_RANDOM
    return (float)(rand() % 1000) / 1000.0f + (float)(10 - rank);
#else
    return 1.0f / (float)(1 + rank);
#endif
}

static int check_predict(void *sut, const struct eeb_sut_batch *b, struct eeb_sut_predictions *out,
                         char *err, size_t errlen)
{
    (void)err, (void)errlen;
    struct sut *s = sut;
#ifdef CHECK_SLOW
    static int slept;
    struct timespec ts = {0, 600000000L};
    if (!slept++)
        nanosleep(&ts, NULL);
#endif
    for (int i = 0; i < b->n; i++) {
        int c = best(s, b, i);
        if (s->s.task == EEB_SUT_DET) {
            out->counts[i] = 1;
            out->detections[(size_t)i * s->s.max_boxes] = (struct eeb_sut_detection){
                c, score(0), 0, 0, (float)s->s.width, (float)s->s.height};
#ifdef CHECK_NAN
            const char *field = getenv("EEB_TEST_NAN_FIELD");
            struct eeb_sut_detection *d = &out->detections[(size_t)i * s->s.max_boxes];
            if (field && strcmp(field, "x1") == 0)
                d->x1 = INFINITY;
            else
                d->score = NAN;
#endif
            continue;
        }
        for (int r = 0; r < s->s.top_k; r++) {
            out->classes[(size_t)i * s->s.top_k + r] = (c + r) % s->s.classes;
            out->scores[(size_t)i * s->s.top_k + r] = score(r);
        }
    }
    return 0;
}

#ifdef CHECK_COUNTERS
static void check_counters(void *sut, struct eeb_sut_counters *c)
{
    const struct sut *s = sut;
    *c = (struct eeb_sut_counters){.steps = 10ull * s->steps, .items = s->items};
}
#endif

static void check_close(void *sut)
{
    free(sut);
}

static const struct eeb_sut_ops check_ops = {
    .abi_version = EEB_SUT_ABI_VERSION,
    .name = "check",
    .open = check_open,
    .load_model = check_load,
    .train = check_train,
    .predict = check_predict,
    .close = check_close,
#ifdef CHECK_COUNTERS
    .counters = check_counters,
#endif
};

const struct eeb_sut_ops *eeb_sut_entry(void)
{
    return &check_ops;
}
