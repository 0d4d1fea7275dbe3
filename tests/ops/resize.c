/* tests/ops/resize.c — op cases of resize_u8 (the device's leading Resize):
 * random u8 images of 1, 3 and 4 channels through the taps of
 * loom__dev_resize_table (the host Resize's own taps): downscales and
 * upscales of both axes, one axis of each, one axis kept (copy taps), odd
 * sizes, a long downscale to one pixel (wide taps) and the 500x375 ->
 * 256x256 of a dataset of one JPEG size. u8 outputs: the CPU's bits on every
 * backend (tol_scale 1e-30: any difference fails); a data op: no gradient
 * check. */
#include <stdlib.h>
#include <string.h>

#include "cases.h"

#include "../../loader/device_aug.h"

typedef struct rcase {
    int n, c, h, w, oh, ow;
} rcase;

static const rcase RC[] = {
    {2, 3, 23, 19, 7, 5},      /* down, both axes */
    {3, 1, 5, 7, 13, 11},      /* up, both axes */
    {2, 3, 9, 31, 17, 6},      /* up rows, down columns */
    {2, 1, 12, 15, 12, 8},     /* rows kept, down columns */
    {1, 4, 11, 10, 4, 27},     /* 4 channels, down rows, up columns */
    {2, 3, 64, 3, 1, 1},       /* one pixel: a 64-tap column */
    {1, 3, 375, 500, 256, 256}, /* a 500x375 JPEG to Resize((256, 256)) */
};

/* the (oh + ow, 2 + S) table of both axes (the loader's) */
static loom_tensor *taps_of(loom_graph *g, const rcase *r) {
    int64_t row;
    int32_t *t;
    if (loom__dev_resize_table(loom_graph_ctx(g), r->h, r->w, r->oh, r->ow, &row, &t) != LOOM_OK) return NULL;
    loom_tensor *out = loom_constant(g, "taps", LOOM_I32, 2, (int64_t[]){r->oh + r->ow, row}, t);
    free(t);
    return out;
}

static loom_tensor *resize(loom_graph *g, loom_dtype dt, int v) {
    (void)dt;
    const rcase *r = &RC[v];
    loom_tensor *x = tc_bytes(g, "x", TC_DIMS(r->n, r->h, r->w, r->c), 4242, (uint64_t)v);
    if (!x) return NULL;
    loom_tensor *taps = taps_of(g, r);
    return taps ? loom_resize_u8(g, x, taps, r->oh, r->ow) : NULL;
}

#define F (TC_NO_GRADCHECK | TC_NO_16BIT)
const loom_op_case loom_cases_resize[] = {
    {"resize_u8 3 channels 23x19 -> 7x5", resize, 0, 1e-30, F, 0},
    {"resize_u8 1 channel 5x7 -> 13x11", resize, 1, 1e-30, F, 0},
    {"resize_u8 3 channels 9x31 -> 17x6", resize, 2, 1e-30, F, 0},
    {"resize_u8 1 channel 12x15 -> 12x8 (rows copied)", resize, 3, 1e-30, F, 0},
    {"resize_u8 4 channels 11x10 -> 4x27", resize, 4, 1e-30, F, 0},
    {"resize_u8 3 channels 64x3 -> 1x1", resize, 5, 1e-30, F, 0},
    {"resize_u8 3 channels 375x500 -> 256x256", resize, 6, 1e-30, F, 0},
    {0},
};
