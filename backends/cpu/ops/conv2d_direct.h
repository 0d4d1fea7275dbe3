/* backends/cpu/ops/conv2d_direct.h — the direct f32 convolution of
 * conv2d_direct.c, used by conv2d.c's fast path where it applies. */
#ifndef LOOM_CPU_CONV2D_DIRECT_H
#define LOOM_CPU_CONV2D_DIRECT_H

#include "../cpu_impl.h"

/* stride 1, dilation 1, one group, a kernel larger than 1x1 with at most
 * 32 taps, padding below the kernel size, a CPU with AVX-512 or AVX2 + FMA, and
 * LOOM_CPU_DIRECT_CONV not "0" */
bool loom__cpu_conv_direct_ok(const loom__cpu *cpu, const loom__conv_geom *q);
/* conv2d (a->x: x, w[, bias]) */
loom_status loom__cpu_conv_direct_fwd(const loom__cpu_args *a, const loom__conv_geom *q);
/* conv2d_grad_input (a->x: dy, w) */
loom_status loom__cpu_conv_direct_gi(const loom__cpu_args *a, const loom__conv_geom *q);
/* loom__cpu_conv_direct_ok and a padded output grid of at least 256 positions (AVX2: 128) */
bool loom__cpu_conv_direct_gw_ok(const loom__cpu *cpu, const loom__conv_geom *q);
/* conv2d_grad_weight (a->x: dy, x) */
loom_status loom__cpu_conv_direct_gw(const loom__cpu_args *a, const loom__conv_geom *q);

#endif
