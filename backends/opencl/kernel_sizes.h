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
#define LOOM_CL_CF_RB 16           /* conv_flat: output channels per work-item (conv_wpack's blocks) */
#define LOOM_CL_CF_NV 1            /* conv_flat: vectors of positions per work-item */
#define LOOM_CL_CF_TAPS 49         /* conv_flat: KH*KW at most */
#define LOOM_CL_CF_GO 6            /* conv_flat_gw: output channels per work-item */
#define LOOM_CL_CF_GK 3            /* conv_flat_gw: taps of a kernel row per work-item */

/* kernels/pool2d.cl */
#define LOOM_CL_MAX2_V8_ROWS 16 /* the *_v8 pooling kernels: rows of windows per work-group */

#endif
