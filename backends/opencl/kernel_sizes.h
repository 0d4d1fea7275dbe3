/* backends/opencl/kernel_sizes.h — the block sizes and limits that an OpenCL
 * kernel and its host code must agree on: one source for C and OpenCL C
 * (backends/opencl/embed.cmake prepends it to the program after core/params.h
 * and core/repro.h; the host files include it), so a change of one cannot
 * leave the other behind. Plain #defines only: both languages read them. */
#ifndef LOOM_OPENCL_KERNEL_SIZES_H
#define LOOM_OPENCL_KERNEL_SIZES_H

/* kernels/conv2d.cl */
#define LOOM_CL_COL2IM_ROW_MAX 256 /* conv_col2im_rows / conv_gi_fused: a dx row's sums in private memory */
#define LOOM_CL_GI_FUSED_MAX 8192  /* conv_gi_fused: KH*KW*OH*OW columns of a plane in private memory */
/* conv_flat: output channels (conv_wpack's blocks) and vectors of positions per work-item, by the
 * kernels' vector width (LOOM_VW, loom__cl_vw): 16 x 1 vectors of 16 floats where the device has 32
 * vector registers (AVX-512), 4 x 3 vectors of 8 where it has 16 (AVX2: 12 sums, 3 loads and a
 * broadcast in registers; the 16 x 1 block spilled there, the cnn's second layer 9.7 -> 3.4 ms) */
#define LOOM_CL_CF_RB16 16
#define LOOM_CL_CF_NV16 1
#define LOOM_CL_CF_RB8 4
#define LOOM_CL_CF_NV8 3
#define LOOM_CL_CF_TAPS 49 /* conv_flat: KH*KW at most */
#define LOOM_CL_CF_C1_TAPS 9 /* conv_flat_c1: C*KH*KW at most (its input vectors in registers) */
/* conv_flat_gw: output channels and taps of a kernel row per work-item, by LOOM_VW as conv_flat's:
 * 6 x 3 sums with 32 vector registers, 4 x 3 with 16 (AVX2: the cnn's second layer 6.4-7.2 -> 4.1-4.8 ms) */
#define LOOM_CL_CF_GO16 6
#define LOOM_CL_CF_GK16 3
#define LOOM_CL_CF_GO8 4
#define LOOM_CL_CF_GK8 3

/* kernels/pool2d.cl */
#define LOOM_CL_MAX2_V8_ROWS 16 /* the *_v8 pooling kernels: rows of windows per work-group */

#endif
