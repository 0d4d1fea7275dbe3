/* tests/ops/conv2d.c — op cases: conv2d with padding, strides, dilation,
 * groups (2, depthwise, depthwise with multiplier), 1x1 (the F32 path that
 * skips im2col, and a strided one that does not), non-square kernels on odd
 * sizes, with and without bias. conv2d_grad_input, conv2d_grad_weight and the
 * bias gradient (sum) run in the appended backward pass. */
#include "cases.h"

typedef struct conv_spec {
    int64_t x[4], w[4];
    loom_conv2d_desc d;
    int bias;
} conv_spec;

/* desc fields: stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups */
static const conv_spec specs[] = {
    /* 0: 3x3 pad 1 stride 1, bias */
    {{2, 3, 6, 5}, {4, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    /* 1: 3x3 stride 2 pad 1 on an odd size, no bias */
    {{2, 3, 7, 7}, {5, 3, 3, 3}, {2, 2, 1, 1, 0, 0, 0}, 0},
    /* 2: 3x3 dilation 2 pad 2, bias */
    {{1, 2, 9, 8}, {3, 2, 3, 3}, {0, 0, 2, 2, 2, 2, 0}, 1},
    /* 3: groups 2, pad 1, bias */
    {{2, 4, 6, 6}, {6, 2, 3, 3}, {0, 0, 1, 1, 0, 0, 2}, 1},
    /* 4: depthwise (groups = C), pad 1, no bias */
    {{2, 3, 5, 6}, {3, 1, 3, 3}, {0, 0, 1, 1, 0, 0, 3}, 0},
    /* 5: depthwise with multiplier 2, stride 2, bias */
    {{2, 3, 7, 6}, {6, 1, 3, 3}, {2, 2, 1, 1, 0, 0, 3}, 1},
    /* 6: 1x1 stride 1 (no im2col), bias */
    {{2, 5, 4, 3}, {7, 5, 1, 1}, {0}, 1},
    /* 7: 1x1 stride 2, groups 2, no bias */
    {{2, 4, 5, 5}, {6, 2, 1, 1}, {2, 2, 0, 0, 0, 0, 2}, 0},
    /* 8: non-square kernel on odd sizes, no padding, bias */
    {{2, 3, 7, 5}, {4, 3, 3, 2}, {0}, 1},
    /* 9: the same without bias */
    {{2, 3, 7, 5}, {4, 3, 3, 2}, {0}, 0},
    /* 10: asymmetric stride/pad/dilation: stride (2,1) pad (1,0) dilation (1,2) */
    {{2, 2, 8, 9}, {3, 2, 3, 2}, {2, 1, 1, 0, 1, 2, 0}, 1},
    /* 11: 5x5 kernel pad 2 stride 3 (windows reach into both pads), groups 2 */
    {{1, 4, 10, 11}, {4, 2, 5, 5}, {3, 3, 2, 2, 0, 0, 2}, 1},
    /* 12: an output plane of >= 1024 positions (the F32 weight gradient's
     * one-image-per-GEMM path, reading dy in place), groups 2, bias */
    {{2, 4, 32, 33}, {4, 2, 3, 3}, {1, 1, 1, 1, 1, 1, 2}, 1},
    /* 13, 14: GEMM sizes that are multiples of 4 (6x6 planes) and of 8 (8x8
     * planes, C*KH*KW = 72): the Vulkan backend's wide-load GEMM forms */
    {{2, 8, 6, 6}, {8, 8, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    {{2, 8, 8, 8}, {16, 8, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 0},
    /* 15, 16: stride-1 convolutions with C*KH*KW > 32 whose input gradient the
     * Vulkan backend runs as a forward convolution of dy (flipped weights,
     * padding KH-1-ph, KW-1-pw): a 3x5 kernel padded (0, 2), and a 3x3 one
     * padded 2 (the full convolution: the gradient's padding is 0) */
    {{2, 12, 7, 9}, {5, 12, 3, 5}, {1, 1, 0, 2, 1, 1, 1}, 1},
    {{1, 6, 5, 6}, {4, 6, 3, 3}, {1, 1, 2, 2, 1, 1, 1}, 0},
    /* 17: a batch of 12 (C*KH*KW = 36): the Vulkan backend's flat weight
     * gradient sums chunks of 6 images, then the two chunks' products */
    {{12, 4, 4, 4}, {3, 4, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    /* 18-21: first-layer windows (one or three channels, 3x3 or 5x5) on
     * planes of a multiple of 4 positions, which the Vulkan backend's direct
     * forward runs with the window's shape compiled in: 40 output channels
     * (two blocks of 32, the second partial), a dilated 5x5, three channels */
    {{2, 1, 8, 6}, {40, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    {{2, 1, 9, 8}, {6, 1, 5, 5}, {1, 1, 4, 4, 2, 2, 1}, 0},
    {{2, 3, 4, 6}, {5, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    {{2, 3, 8, 7}, {4, 3, 3, 3}, {2, 2, 1, 1, 1, 1, 1}, 0},
    /* 22-25: "same"-padded stride-1 convolutions, which OpenCL on a CPU device runs with no columns
     * (conv_flat, conv_flat_gw): a 14x14 plane (a partial last vector of positions) with 20 output
     * channels (partial channel blocks), 5x5 and 7x7 kernels (kernel rows of more than one block of
     * taps, the last partial), a 3x5 kernel padded (1, 2) on a non-square plane */
    {{3, 5, 14, 14}, {20, 5, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    {{2, 3, 9, 11}, {7, 3, 5, 5}, {1, 1, 2, 2, 1, 1, 1}, 0},
    {{2, 2, 10, 9}, {3, 2, 7, 7}, {1, 1, 3, 3, 1, 1, 1}, 1},
    {{2, 4, 6, 10}, {5, 4, 3, 5}, {1, 1, 1, 2, 1, 1, 1}, 1},
    /* 26, 27: "same" convolutions of at most 9 taps in all, which OpenCL on an 8-wide CPU device runs
     * with its input vectors in registers (conv_flat_c1): one channel 3x3 on a plane of 63 positions
     * (a partial last vector) into 6 channels (a partial channel block); three channels 1x3 */
    {{3, 1, 7, 9}, {6, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1}, 1},
    {{2, 3, 5, 7}, {5, 3, 1, 3}, {1, 1, 0, 1, 1, 1, 1}, 0},
};

static loom_tensor *conv(loom_graph *g, loom_dtype dt, int v) {
    const conv_spec *s = &specs[v];
    loom_tensor *x = tc_param(g, "x", dt, 4, s->x, -1, 1);
    loom_tensor *w = tc_param(g, "w", dt, 4, s->w, -0.5, 0.5);
    loom_tensor *b = s->bias ? tc_param(g, "b", dt, TC_DIMS(s->w[0]), -1, 1) : NULL;
    return loom_conv2d(g, x, w, b, &s->d);
}

/* conv -> conv: the second conv's grad_input feeds the first's grads */
static loom_tensor *two_convs(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    loom_conv2d_desc d = {.pad_h = 1, .pad_w = 1};
    loom_tensor *x = tc_param(g, "x", dt, TC_DIMS(2, 2, 6, 7), -1, 1);
    loom_tensor *w1 = tc_param(g, "w1", dt, TC_DIMS(3, 2, 3, 3), -0.5, 0.5);
    loom_tensor *w2 = tc_param(g, "w2", dt, TC_DIMS(4, 3, 3, 3), -0.5, 0.5);
    loom_tensor *b2 = tc_param(g, "b2", dt, TC_DIMS(4), -1, 1);
    return loom_conv2d(g, loom_conv2d(g, x, w1, NULL, &d), w2, b2, &d);
}

const loom_op_case loom_cases_conv2d[] = {
    {"conv2d 3x3 pad 1 + bias", conv, 0, 0, 0, 0},
    {"conv2d 3x3 stride 2 pad 1 (7x7)", conv, 1, 0, 0, 0},
    {"conv2d 3x3 dilation 2 pad 2 + bias", conv, 2, 0, 0, 0},
    {"conv2d groups 2 + bias", conv, 3, 0, 0, 0},
    {"conv2d depthwise", conv, 4, 0, 0, 0},
    {"conv2d depthwise x2 stride 2 + bias", conv, 5, 0, 0, 0},
    {"conv2d 1x1 + bias", conv, 6, 0, 0, 0},
    {"conv2d 1x1 stride 2 groups 2", conv, 7, 0, 0, 0},
    {"conv2d 3x2 kernel on 7x5 + bias", conv, 8, 0, 0, 0},
    {"conv2d 3x2 kernel on 7x5", conv, 9, 0, 0, 0},
    {"conv2d stride (2,1) pad (1,0) dilation (1,2)", conv, 10, 0, 0, 0},
    {"conv2d 5x5 stride 3 pad 2 groups 2", conv, 11, 0, 0, 0},
    {"conv2d 32x33 planes groups 2 + bias", conv, 12, 0, 0, 0},
    {"conv2d 8->8 on 6x6 pad 1 + bias (GEMM sizes multiples of 4)", conv, 13, 0, 0, 0},
    {"conv2d 8->16 on 8x8 pad 1 (GEMM sizes multiples of 8)", conv, 14, 0, 0, 0},
    {"conv2d 12->5 3x5 kernel pad (0, 2) + bias", conv, 15, 0, 0, 0},
    {"conv2d 6->4 3x3 pad 2 (full)", conv, 16, 0, 0, 0},
    {"conv2d batch 12 pad 1 + bias (weight gradient in two chunks)", conv, 17, 0, 0, 0},
    {"conv2d 1->40 3x3 pad 1 + bias (fixed window)", conv, 18, 0, 0, 0},
    {"conv2d 1->6 5x5 dilation 2 pad 4 (fixed window)", conv, 19, 0, 0, 0},
    {"conv2d 3->5 3x3 pad 1 + bias (fixed window)", conv, 20, 0, 0, 0},
    {"conv2d 3->4 3x3 stride 2 pad 1 (fixed window)", conv, 21, 0, 0, 0},
    {"conv2d 5->20 3x3 pad 1 on 14x14 + bias (same padding)", conv, 22, 0, 0, 0},
    {"conv2d 3->7 5x5 pad 2 on 9x11 (same padding)", conv, 23, 0, 0, 0},
    {"conv2d 2->3 7x7 pad 3 on 10x9 + bias (same padding)", conv, 24, 0, 0, 0},
    {"conv2d 4->5 3x5 pad (1, 2) on 6x10 + bias (same padding)", conv, 25, 0, 0, 0},
    {"conv2d 1->6 3x3 pad 1 on 7x9 + bias (same padding, 9 taps)", conv, 26, 0, 0, 0},
    {"conv2d 3->5 1x3 pad (0, 1) on 5x7 (same padding, 9 taps)", conv, 27, 0, 0, 0},
    {"conv2d -> conv2d", two_convs, 0, 0, 0, 0},
    {0},
};
