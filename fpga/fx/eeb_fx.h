/*
 * eeb_fx.h - the host side of the fixed-point accelerator: compiles a
 * network into a device-memory image (fpga/kernel/fx_isa.h) and moves
 * weights, inputs, labels and outputs in and out of it.  Every fixed-point
 * backend (kernel C, emulator, XRT) runs the same image.
 */
#ifndef EEB_FX_H
#define EEB_FX_H

#include "fpga/net/eeb_net.h"
#include "fpga/kernel/fx_isa.h"

#include <stddef.h>
#include <stdint.h>

/* What a tensor holds, for the saturation report. */
enum eeb_fx_role {
    EEB_FX_ROLE_ACT,
    EEB_FX_ROLE_ERR,
    EEB_FX_ROLE_GRAD,
    EEB_FX_ROLE_WEIGHT,
    EEB_FX_ROLE_OTHER,
    EEB_FX_ROLES
};

/* Tensor ids of one learnable layer (0 where not trained). */
struct eeb_fx_params {
    uint16_t w24, w8, b24; /* master weights, their int8 copy, biases */
    uint16_t v, vb;        /* momentum */
    uint16_t dw, db;       /* gradients */
};

struct eeb_fx_image {
    uint8_t *mem; /* the image, 64-byte aligned (free with eeb_fx_image_free) */
    size_t bytes;
    int batch_max, frozen, nlayers;
    uint16_t input, labels, output; /* tensor ids the host reads and writes */
    int label_ints;                 /* int32 labels per item */
    uint16_t *act;                  /* per layer: its activation tensor */
    struct eeb_fx_params *params;   /* per layer */
    uint8_t *role;                  /* per tensor: enum eeb_fx_role */
};

/*
 * Compiles net for batches of up to batch_max items with the first
 * `frozen` learnable layers not trained.  Returns 0, or -1 with the reason
 * in err (no loss layer, a reduction too long for the int32 accumulators,
 * an image over 4 GiB, ...).  Weights are not loaded.
 */
int eeb_fx_compile(const struct eeb_net *net, int batch_max, int frozen, struct eeb_fx_image *img,
                   char *err, size_t errlen);
void eeb_fx_image_free(struct eeb_fx_image *img);

/* Copies the fixed weights of net (format EEB_FORMAT_FX24) into the image
 * and clears the momentum; the reverse copies them out. */
void eeb_fx_load_weights(struct eeb_fx_image *img, const struct eeb_net *net);
void eeb_fx_read_weights(struct eeb_fx_image *img, struct eeb_net *net);

/* Writes n items of uint8 HWC pixels (as (p - 128) * 2^-7) and, if labels
 * is not NULL, n * label_ints labels; sets the batch size. */
void eeb_fx_set_batch(struct eeb_fx_image *img, int n, const uint8_t *pixels,
                      const int32_t *labels);

/* Training hyperparameters as m * 2^e, and the step the rounding hash keys on. */
void eeb_fx_set_hyper(struct eeb_fx_image *img, double lr, double momentum, double weight_decay,
                      uint64_t seed, uint32_t step);

/* The network output (the loss layer's input) of the last run as floats:
 * n * outputs values. */
void eeb_fx_read_output(struct eeb_fx_image *img, int n, float *out);

/* Saturations so far by role. */
void eeb_fx_saturations(struct eeb_fx_image *img, uint64_t out[EEB_FX_ROLES]);

static inline struct fx_header *eeb_fx_header(const struct eeb_fx_image *img)
{
    return (struct fx_header *)img->mem;
}

#endif
