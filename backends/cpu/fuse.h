/* backends/cpu/fuse.h — the CPU backend's fused passes over batch-norm
 * chains: the groups core/fuse.c finds (fuse.c: when) and their kernels
 * (fuse_kernels.c).
 *
 * A fused group computes exactly what its nodes compute one by one, bit for
 * bit (the same operations in the same order per element, through the
 * single-op kernels' own helpers), one channel at a time: a channel's planes
 * are still in cache when the next step of the chain reads them. Groups:
 *   forward:  batch_norm -> relu | add (-> relu) | 2x2 max_pool2d (-> relu)
 *   backward: (relu_grad (-> 2x2 max_pool2d_grad) | 2x2 max_pool2d_grad ->)
 *             batch_norm_grad_params -> [slices of its statistics] ->
 *             batch_norm_grad
 *   attention: the dq, dk and dv attention_grad nodes of one attention
 *   bias: a matmul, the add of its bias (and a gelu of the sum, or its add
 *             to a residual), or the add of the product to a residual,
 *             written
 *             by the GEMM's last pass over each tile (gemm.c: loom__cpu_sgemm_ep)
 * Every member still writes its own output (later nodes may read it). The
 * passes have an AVX2 variant (same bits: f32_inline.h), picked at run time. f32
 * only, never in reproducible mode; LOOM_CPU_FUSE=0 in the environment turns
 * fusion off (to compare). */
#ifndef LOOM_CPU_FUSE_H
#define LOOM_CPU_FUSE_H

#include "../../core/fuse.h"
#include "cpu_impl.h"

/* The groups of plan p (core/fuse.h) this backend runs fused; *out NULL when
 * none form, in reproducible mode, or with LOOM_CPU_FUSE=0. */
loom_status loom__cpu_fusion_plan(loom__cpu *cpu, const loom_plan *p, loom__fusion **out);
/* The attention group's kernel (ops/attention.c): a, the dq, dk and dv
 * nodes' arguments. */
loom_status loom__cpu_attention_grad_fused(loom__cpu *cpu, const loom__cpu_args a[3]);
/* The bias group's product (ops/matmul.c): matmul node a (f32, b 2-D, a not
 * transposed) then epilogue ep (NULL: none; the plain node takes it too). */
loom_status loom__cpu_matmul_ep(const loom__cpu_args *a, const loom__cpu_gemm_ep *ep);
/* Run group g of plan p (fuse_kernels.c). */
loom_status loom__cpu_fusion_run(loom__cpu *cpu, const loom_plan *p, const loom__fuse_group *g);

#endif
