/* core/params.h — the parameter contract of every op: which slot of a node's
 * integer parameters (loom_tensor.p[]) or float parameters (.f[]) holds what,
 * the kind codes that select a branch of a shared kernel, and the layout of
 * the small tables (geometry, hyper-parameters) that kernels read.
 *
 * defines: LOOM_P_<OP>_<NAME>  index into node->p[]
 *          LOOM_F_<OP>_<NAME>  index into node->f[]
 *          LOOM_K_<GROUP>_<NAME> kind codes and flag bits passed to kernels
 *          LOOM_G_<TABLE>_<NAME> index into a table kernels read (the
 *                              optimizer's hyper tensor, pool geometry)
 *
 * The one copy: the builders (core/ops/<family>.c) write these slots, the
 * kernels of every backend read them. Only #define lines with plain decimal
 * integers, so that C, CUDA, OpenCL C (prepended to the program source by
 * backends/opencl/embed.cmake) and GLSL (#include "params.h", glslang's -I)
 * all read it. What each slot means is documented beside its builder.
 */
#ifndef LOOM_CORE_PARAMS_H
#define LOOM_CORE_PARAMS_H

/* ---- dtype codes as kernels see them: enum loom_dtype (include/loom/tensor.h),
 * checked in core/ops/binary.c ---- */
#define LOOM_K_DT_F32 0
#define LOOM_K_DT_F16 1
#define LOOM_K_DT_BF16 2
#define LOOM_K_DT_F64 3
#define LOOM_K_DT_I32 4
#define LOOM_K_DT_U8 5

/* ---- binary (core/ops/binary.c) ---- */
#define LOOM_F_SCALE_S 0    /* scale: y = s x */
#define LOOM_F_FILL_VALUE 0 /* fill: every element */
/* elementwise binary kernels: the op they compute (copy: y = b broadcast) */
#define LOOM_K_BIN_ADD 0
#define LOOM_K_BIN_SUB 1
#define LOOM_K_BIN_MUL 2
#define LOOM_K_BIN_DIV 3
#define LOOM_K_BIN_COPY 4

/* ---- activations (core/ops/activation.c) ---- */
#define LOOM_F_LEAKY_SLOPE 0 /* leaky_relu and leaky_relu_grad: negative slope */
/* the one activation kernel of each backend: forward kinds, then gradients */
#define LOOM_K_ACT_RELU 0
#define LOOM_K_ACT_LEAKY 1
#define LOOM_K_ACT_GELU 2
#define LOOM_K_ACT_SILU 3
#define LOOM_K_ACT_TANH 4
#define LOOM_K_ACT_SIGMOID 5
#define LOOM_K_ACT_RELU_GRAD 6
#define LOOM_K_ACT_LEAKY_GRAD 7
#define LOOM_K_ACT_GELU_GRAD 8
#define LOOM_K_ACT_SILU_GRAD 9
#define LOOM_K_ACT_TANH_GRAD 10
#define LOOM_K_ACT_SIGMOID_GRAD 11
#define LOOM_K_ACT_FIRST_GRAD 6 /* kinds from here on read dy */

/* ---- linear algebra (core/ops/matmul.c) ---- */
#define LOOM_P_MATMUL_TRANS_A 0
#define LOOM_P_MATMUL_TRANS_B 1
#define LOOM_P_LINEAR_BIAS 0 /* 1: src[2] is the bias */

/* ---- softmax (core/ops/softmax.c) ---- */
#define LOOM_K_SOFTMAX 0
#define LOOM_K_LOG_SOFTMAX 1
#define LOOM_K_SOFTMAX_GRAD 2
#define LOOM_K_LOG_SOFTMAX_GRAD 3

/* ---- attention, attention_grad and causal_mask (core/ops/attention.c) ---- */
#define LOOM_P_ATTN_CAUSAL 0  /* attention and attention_grad: 1 = causal (key j > query i left out) */
#define LOOM_P_ATTN_WHICH 1   /* attention_grad: the input it differentiates (LOOM_K_ATTN_*) */
#define LOOM_F_ATTN_SCALE 0   /* attention and attention_grad: the score scale */
#define LOOM_F_CAUSAL_VALUE 0 /* causal_mask: the value where key j > query i */
#define LOOM_K_ATTN_DQ 0
#define LOOM_K_ATTN_DK 1
#define LOOM_K_ATTN_DV 2

/* ---- cross_entropy and cross_entropy_grad (core/ops/loss.c) ---- */
#define LOOM_P_CE_IGNORE 0 /* ignore_index */
#define LOOM_F_CE_EPS 0    /* label smoothing */

/* ---- conv2d and its gradients (core/ops/conv2d.c) ---- */
#define LOOM_P_CONV_STRIDE_H 0
#define LOOM_P_CONV_STRIDE_W 1
#define LOOM_P_CONV_PAD_H 2
#define LOOM_P_CONV_PAD_W 3
#define LOOM_P_CONV_DIL_H 4
#define LOOM_P_CONV_DIL_W 5
#define LOOM_P_CONV_GROUPS 6
#define LOOM_P_CONV_NGEOM 7 /* slots above, copied into the gradient ops */
#define LOOM_P_CONV_LIKE 7  /* gradient ops: 4 slots, the dims of the tensor they produce */

/* ---- pooling and its gradients (core/ops/pool2d.c) ---- */
#define LOOM_P_POOL_KH 0
#define LOOM_P_POOL_KW 1
#define LOOM_P_POOL_SH 2
#define LOOM_P_POOL_SW 3
#define LOOM_P_POOL_PH 4
#define LOOM_P_POOL_PW 5
#define LOOM_P_POOL_INCL 6   /* count_include_pad (avg only) */
#define LOOM_P_POOL_NGEOM 7  /* slots above, copied into the gradient ops */
#define LOOM_P_POOL_XDIMS 7  /* gradient ops: 4 slots, x's dims */
#define LOOM_P_ADAPTIVE_OH 0 /* adaptive_avg_pool2d and its gradient */
#define LOOM_P_ADAPTIVE_OW 1
/* the pool kernels of every backend: which pooling */
#define LOOM_K_POOL_MAX 0
#define LOOM_K_POOL_AVG 1
#define LOOM_K_POOL_ADAPTIVE 2
/* the pool geometry table the GPU kernels read: shapes, then the node's
 * LOOM_P_POOL_* slots in order */
#define LOOM_G_POOL_PLANES 0 /* N * C */
#define LOOM_G_POOL_H 1
#define LOOM_G_POOL_W 2
#define LOOM_G_POOL_OH 3
#define LOOM_G_POOL_OW 4
#define LOOM_G_POOL_KH 5
#define LOOM_G_POOL_KW 6
#define LOOM_G_POOL_SH 7
#define LOOM_G_POOL_SW 8
#define LOOM_G_POOL_PH 9
#define LOOM_G_POOL_PW 10
#define LOOM_G_POOL_INCL 11
#define LOOM_G_POOL_LEN 12

/* ---- batch_norm and its gradient ops (core/ops/norm.c) ---- */
#define LOOM_P_BN_TRAIN 0 /* 1 train, 0 eval */
#define LOOM_P_BN_GAMMA 1 /* src indices, -1 = absent */
#define LOOM_P_BN_BETA 2
#define LOOM_P_BN_RMEAN 3
#define LOOM_P_BN_RVAR 4
#define LOOM_P_BN_DY 5    /* gradient ops only */
#define LOOM_P_BN_STATS 6 /* batch_norm_grad only: the (4, C) statistics */
#define LOOM_F_BN_EPS 0
#define LOOM_F_BN_MOMENTUM 1

/* ---- layer_norm and its gradient ops (core/ops/norm.c) ---- */
#define LOOM_P_LN_DIMS 0  /* norm_dims */
#define LOOM_P_LN_GAMMA 1 /* src indices, -1 = absent */
#define LOOM_P_LN_BETA 2
#define LOOM_P_LN_DY 3 /* gradient ops only */
#define LOOM_F_LN_EPS 0

/* ---- dropout (core/ops/dropout.c) ---- */
#define LOOM_P_DROP_STREAM 0 /* Philox stream */
#define LOOM_F_DROP_P 0      /* drop probability */

/* ---- embedding_grad (core/ops/embedding.c) ---- */
#define LOOM_P_EMB_V 0 /* rows of the weight */

/* ---- sum, mean (core/ops/reduce.c) ---- */
#define LOOM_P_REDUCE_MASK 0 /* bit i = input axis i */
#define LOOM_P_REDUCE_KEEPDIM 1

/* ---- shape ops (core/ops/shape.c) ---- */
#define LOOM_P_PERMUTE_PERM 0 /* ndim slots: out.dims[i] = x.dims[p[i]] */
#define LOOM_P_CONCAT_AXIS 0
#define LOOM_P_SLICE_AXIS 0
#define LOOM_P_SLICE_START 1
#define LOOM_P_SLICE_END 2

/* ---- optimizer steps (core/ops/optim.c) ---- */
#define LOOM_P_SGD_BUF 0 /* has a momentum buffer (src[3]) */
#define LOOM_P_SGD_NESTEROV 1
#define LOOM_P_OPT_ZERO_GRAD 2  /* sgd and adam: zero the gradient after applying */
#define LOOM_P_OPT_COEF 3       /* sgd and adam: src index of the clip coefficient, -1 none */
#define LOOM_P_ADAM_DECOUPLED 0 /* AdamW */
#define LOOM_F_SGD_MOMENTUM 0
#define LOOM_F_SGD_DAMPENING 1
#define LOOM_F_SGD_WD 2
#define LOOM_F_ADAM_BETA1 0
#define LOOM_F_ADAM_BETA2 1
#define LOOM_F_ADAM_EPS 2
#define LOOM_F_ADAM_WD 3
#define LOOM_F_CLIP_MAX_NORM 0
/* flag bits of the GPU update kernels */
#define LOOM_K_OPT_BUF 1 /* sgd: momentum buffer; adam: decoupled weight decay */
#define LOOM_K_OPT_NESTEROV 2
#define LOOM_K_OPT_ZERO_GRAD 4
#define LOOM_K_OPT_COEF 8
/* the hyper tensor (f32, LOOM_G_HYPER_LEN) the host writes before each run */
#define LOOM_G_HYPER_LR 0
#define LOOM_G_HYPER_BC1 1   /* 1 - beta1^t */
#define LOOM_G_HYPER_BC2 2   /* 1 - beta2^t */
#define LOOM_G_HYPER_APPLY 3 /* 1 update, 0 accumulate only, -1 skipped (inf/NaN) */
#define LOOM_G_HYPER_GMULT 4 /* gradient multiplier */
#define LOOM_G_HYPER_FIRST 5 /* 1 on the first step */
#define LOOM_G_HYPER_LEN 8

/* ---- reproducible mode (core/repro.h): the chunk of every csum / cdot ---- */
#define LOOM_K_REPRO_CHUNK 1024

/* ---- amp_scaler_update (core/ops/amp.c) ---- */
#define LOOM_P_AMP_INTERVAL 0
#define LOOM_F_AMP_GROWTH 0
#define LOOM_F_AMP_BACKOFF 1

/* ---- resize_u8 (core/ops/resize.c) ---- */
#define LOOM_K_RESIZE_FIX_BITS 22 /* fraction bits of the tap weights (PIL's, loader/transforms.c) */

/* ---- augment_u8 (core/ops/augment.c) ---- */
#define LOOM_P_AUG_FILL 0 /* the u8 value of pixels outside the source (constant padding) */
#define LOOM_P_AUG_AFFINE 1 /* 1: rows may apply a nearest RandomAffine (columns AFFINE..AFILL; 64-bit floats) */
/* columns of the per-sample table prm (N, LOOM_G_AUG_COUNT) i32 */
#define LOOM_G_AUG_ROW0 0    /* output row y reads source row ROW0 + RSTEP y */
#define LOOM_G_AUG_RSTEP 1
#define LOOM_G_AUG_COL0 2    /* output column x reads source column COL0 + CSTEP x */
#define LOOM_G_AUG_CSTEP 3
/* ColorJitter: the adjustments in the order they run, LOOM_K_AUG_BITS bits
 * each from bit 0 (codes LOOM_K_AUG_*; 0 ends the list; each code once) */
#define LOOM_G_AUG_JITTER 4
#define LOOM_G_AUG_BFACTOR 5 /* brightness factor f (the bits of an f32) */
/* the source window read: rows [Y0, Y1), columns [X0, X1) (within the image);
 * pixels outside it are the fill (the padding of a crop of a crop) */
#define LOOM_G_AUG_Y0 6
#define LOOM_G_AUG_Y1 7
#define LOOM_G_AUG_X0 8
#define LOOM_G_AUG_X1 9
#define LOOM_G_AUG_CFACTOR 10 /* contrast f and g = (f32)(1 - f), f32 bits */
#define LOOM_G_AUG_CGAIN 11
#define LOOM_G_AUG_SFACTOR 12 /* saturation f and g = (f32)(1 - f), f32 bits */
#define LOOM_G_AUG_SGAIN 13
#define LOOM_G_AUG_HFACTOR 14 /* hue shift f in [-0.5, 0.5], f32 bits */
/* a nearest RandomAffine after the ColorJitter (read only when the node's
 * LOOM_P_AUG_AFFINE is 1): AFFINE 1 applies it (0: none); its inverse
 * matrix m[0..5] (loom_tf_affine_inverse) as six doubles, double k in
 * columns M + 2k (the low 32 bits of its IEEE bits) and M + 2k + 1 (the
 * high 32); AFILL: its fill, channel k's u8 in bits 8k */
#define LOOM_G_AUG_AFFINE 15
#define LOOM_G_AUG_M 16
#define LOOM_G_AUG_AFILL 28
#define LOOM_G_AUG_COUNT 32 /* columns (29..31 are 0) */
/* the codes of LOOM_G_AUG_JITTER */
#define LOOM_K_AUG_BITS 3
#define LOOM_K_AUG_BRIGHT 1
#define LOOM_K_AUG_CONTRAST 2
#define LOOM_K_AUG_SAT 3
#define LOOM_K_AUG_HUE 4
/* the most output pixels per image (the contrast mean's u32 sum of u8 grays) */
#define LOOM_K_AUG_MAX_PIXELS 16777216

#endif
