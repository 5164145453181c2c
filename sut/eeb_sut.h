/*
 * eeb_sut.h - the system-under-test interface of eeb, version 2: what a
 * team's accelerator implements so that eeb can benchmark it.
 *
 * This header is the whole contract: it needs no other eeb header, and a
 * team builds against it alone.  eeb (the harness) owns the clock, T_max,
 * the data (read and batched outside the metered window), the power meter
 * and the score; the system under test (the SUT) trains on the batches it
 * is given and predicts the test inputs it is given.  It never sees a test
 * label.
 *
 * A SUT is a constant table of functions, struct eeb_sut_ops, found one of
 * two ways:
 *   - in process: a shared library, `eeb run --backend ./libteam.so`, that
 *     exports   const struct eeb_sut_ops *eeb_sut_entry(void);
 *   - out of process: a program speaking the same calls over its stdin and
 *     stdout (`--backend exec:PROGRAM ARGS...`, docs/sut.md).
 *
 * The calls, in the order the harness makes them:
 *
 *   open         once, with the task, the items' shape and the batch limit
 *   load_model   once, the team's pre-trained model (a file eeb hashed)
 *   train        one batch at a time, until T_max, the epochs, or `done`
 *   end_training once fine-tuning stops (optional)
 *   predict      the test inputs, a batch at a time (inference only)
 *   counters     when eeb records what the device did (optional)
 *   save_model   the fine-tuned model, if the run asks for it (optional)
 *   close        once
 *
 * Every call that can fail returns 0, or non-zero with a one-line reason
 * in err (at most errlen bytes, NUL-terminated); eeb ends the run with a
 * verdict naming the SUT and the call.  Calls come from one thread at a
 * time (not always the same one).  Pointers eeb passes are valid for the
 * call only.  All numbers are in the host's byte order; pixels are uint8.
 */
#ifndef EEB_SUT_H
#define EEB_SUT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The interface's version: a SUT says which it was built against.  A later
 * version only appends members (to struct eeb_sut_ops, and to the structs
 * eeb hands a SUT), never moves or removes one, so:
 *   - eeb drives a SUT built for any version from 1 up to its own: a slot
 *     a later version appended is absent (NULL: "optional" says what that
 *     means) from an older SUT's table, and eeb never reads past it;
 *   - eeb refuses a SUT built for a newer version than its own, naming
 *     both (its table may hold slots this eeb cannot call);
 *   - what eeb hands a SUT (eeb_sut_setup, eeb_sut_batch,
 *     eeb_sut_predictions; eeb_sut_counters, zeroed, to fill) is laid out
 *     as eeb's version says (setup->abi_version, at least the SUT's own):
 *     a SUT built for an older version reads and writes only the members
 *     its header declares, which are where they always were.
 * So a SUT checks setup->abi_version >= EEB_SUT_ABI_VERSION, not ==.
 *   version 1   abi_version .. save_model
 *   version 2   appends version (the SUT's own version text) */
#define EEB_SUT_ABI_VERSION 2

/* The tasks of Tao et al. (Table 2). */
enum eeb_sut_task {
    EEB_SUT_CLS = 0,  /* image classification (Food-101 layout), top-5 */
    EEB_SUT_DET = 1,  /* object detection (Pascal VOC layout), mAP@0.5 */
    EEB_SUT_VIDEO = 2 /* video classification (UCF-101 layout), top-5 */
};

/* What open is given. */
struct eeb_sut_setup {
    int abi_version;     /* EEB_SUT_ABI_VERSION of the harness */
    int32_t task;        /* enum eeb_sut_task (an int32_t whatever the compiler's enums) */
    int classes;         /* labels and predicted classes are 0..classes-1 */
    int frames;          /* per item: 1 for images */
    int height, width;   /* pixels per frame */
    int channels;        /* 3 (RGB) or 1 */
    int batch_max;       /* train and predict get 1..batch_max items */
    int top_k;           /* cls, video: ranked classes predict returns, 1..classes */
    int max_boxes;       /* det: boxes predict may return per item */
    uint64_t seed;       /* the run's seed, for the SUT's own randomness */
    const char *config;  /* the team's configuration string ("" if none) */
    const char *workdir; /* a directory the SUT may write in */
    const char *xclbin;  /* the design to program the device with: a private copy of
                          * the xclbin eeb hashed and took M_u from (--xclbin), or ""
                          * when the run gave a utilization report instead */
};

/* A ground-truth box (det), in pixels of the item: 0 <= x0 <= x1 <= width,
 * likewise y; corners continuous (the whole image is 0, 0, width, height). */
struct eeb_sut_box {
    int32_t cls;
    int32_t difficult; /* 1: VOC's "difficult", neither counted nor missed */
    float x0, y0, x1, y1;
};

/* A batch of n items.  Each item is frames x height x width x channels
 * bytes (frame-major, then rows, then pixels RGB), items one after another.
 * For predict, the label fields are NULL. */
struct eeb_sut_batch {
    int n;
    const uint8_t *pixels;
    const int32_t *labels;           /* cls, video: n classes */
    const int32_t *box_counts;       /* det: n counts */
    const struct eeb_sut_box *boxes; /* det: every item's boxes, item by item */
};

/* What train reports of one batch. */
struct eeb_sut_step {
    double loss;     /* the batch's mean loss, or NAN if the SUT has none */
    int64_t correct; /* optional (0, 0 if not counted): of `counted` targets */
    int64_t counted; /*   (items, or object cells), how many the SUT got right */
    int done;        /* 1: the SUT has finished fine-tuning; no more batches */
};

/* A detection (det): a class, a confidence, and a box in pixels; every
 * number finite (a NaN or an infinity ends the run as the SUT's error). */
struct eeb_sut_detection {
    int32_t cls;
    float score;
    float x0, y0, x1, y1;
};

/* Where predict writes, for n items (the harness sizes every array). */
struct eeb_sut_predictions {
    int32_t *classes; /* cls, video: n x top_k classes, best first */
    float *scores;    /*             n x top_k finite scores (any monotone scale) */
    int32_t *counts;  /* det: n detection counts, each 0..max_boxes */
    struct eeb_sut_detection *detections; /* det: n x max_boxes slots */
};

/* What the device did (optional): its own figures, recorded as reported. */
struct eeb_sut_counters {
    uint64_t steps, items;   /* trained so far */
    uint64_t saturations[4]; /* fixed point: activations, errors, gradients, weights */
    char detail[64];         /* e.g. "ZCU104, 200 MHz, 4 PEs" */
};

struct eeb_sut_ops {
    int abi_version;  /* EEB_SUT_ABI_VERSION the SUT was built against: first */
    const char *name; /* short, for messages and the run's record */

    /* Prepares the device for setup; *sut is the SUT's own handle. */
    int (*open)(const struct eeb_sut_setup *setup, void **sut, char *err, size_t errlen);
    /* The team's pre-trained model, from path, in the team's own format. */
    int (*load_model)(void *sut, const char *path, char *err, size_t errlen);
    /* One training step on the batch (labels given). */
    int (*train)(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_step *step, char *err,
                 size_t errlen);
    /* optional: NULL means nothing to do.  Fine-tuning is over (T_max, the
     * epochs or `done`): finish what is in flight before predicting. */
    int (*end_training)(void *sut, char *err, size_t errlen);
    /* Inference on the batch (no labels). */
    int (*predict)(void *sut, const struct eeb_sut_batch *batch, struct eeb_sut_predictions *out,
                   char *err, size_t errlen);
    /* optional: NULL means the SUT reports no counters. */
    void (*counters)(void *sut, struct eeb_sut_counters *c);
    void (*close)(void *sut);
    /* optional: NULL means the SUT writes no model.  The fine-tuned model
     * to path, in the team's format (eeb run --save-model). */
    int (*save_model)(void *sut, const char *path, char *err, size_t errlen);

    /* Version 2 appends. */

    /* optional: NULL means none.  The SUT's own version, for the run's
     * record beside its name: a release ("1.4.2") or a commit's hash. */
    const char *version;
};

/* The one symbol a SUT library exports (visible even where the library is
 * built with -fvisibility=hidden). */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
const struct eeb_sut_ops *
eeb_sut_entry(void);

#ifdef __cplusplus
}
#endif

#endif
