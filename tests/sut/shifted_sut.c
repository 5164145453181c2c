/*
 * shifted_sut.c - a system under test the accuracy audit must catch (the
 * Makefile builds it as build/.../tests/sut/libshifted.so for
 * test_sut_run.c): eeb's own backends (sut/builtin.c, as
 * sut/plugins/eeb_backends.c serves them), so it trains for real and its
 * save_model writes a real .eebm, but every class it answers in the test
 * stage is the next one (class c answered as c + 1, modulo the classes):
 * cls and video ranks, det boxes.  Its configuration string is
 * sut/builtin.c's.
 */
#include "sut/eeb_sut_host.h"

/* The setup's shape of the answers (one SUT at a time in a test). */
static struct eeb_sut_setup setup_seen;

static int shifted_open(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen)
{
    setup_seen = *setup;
    setup_seen.config = setup_seen.workdir = setup_seen.xclbin = NULL; /* the call's only */
    return eeb_sut_builtin()->open(setup, sut, err, errlen);
}

static int shifted_predict(void *sut, const struct eeb_sut_batch *batch,
                           struct eeb_sut_predictions *out, char *err, size_t errlen)
{
    const struct eeb_sut_setup *u = &setup_seen;
    int rc = eeb_sut_builtin()->predict(sut, batch, out, err, errlen);
    for (int i = 0; rc == 0 && i < batch->n; i++) {
        if (u->task == EEB_SUT_DET) {
            for (int32_t j = 0; j < out->counts[i]; j++) {
                struct eeb_sut_detection *d = &out->detections[(size_t)i * u->max_boxes + j];
                d->cls = (d->cls + 1) % u->classes;
            }
            continue;
        }
        for (int r = 0; r < u->top_k; r++) {
            int32_t *c = &out->classes[(size_t)i * u->top_k + r];
            if (*c >= 0)
                *c = (*c + 1) % u->classes;
        }
    }
    return rc;
}

static struct eeb_sut_ops shifted_ops;

const struct eeb_sut_ops *eeb_sut_entry(void)
{
    shifted_ops = *eeb_sut_builtin();
    shifted_ops.name = "shifted";
    shifted_ops.open = shifted_open;
    shifted_ops.predict = shifted_predict;
    return &shifted_ops;
}
