/* backends/cpu/fuse.h — the CPU backend's fused passes over batch-norm
 * chains: which runs of a plan's nodes fuse (fuse.c) and their kernels
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
 * Every member still writes its own output (later nodes may read it). The
 * passes have an AVX2 variant (same bits: f32_inline.h), picked at run time. f32
 * only, never in reproducible mode; LOOM_CPU_FUSE=0 in the environment turns
 * fusion off (to compare). */
#ifndef LOOM_CPU_FUSE_H
#define LOOM_CPU_FUSE_H

#include "cpu_impl.h"

/* roles of a group's members (exec indices, -1 when absent) */
enum {
    LOOM__FU_BN,        /* forward: batch_norm */
    LOOM__FU_ADD,       /* forward: add of the batch-norm output and a same-shape tensor */
    LOOM__FU_POOL,      /* forward: 2x2 stride-2 max_pool2d of the batch-norm output */
    LOOM__FU_RELU,      /* forward: relu of the last of the above */
    LOOM__FU_RELU_GRAD, /* backward: relu_grad feeding the pool gradient or the batch-norm gradients */
    LOOM__FU_POOL_GRAD, /* backward: 2x2 max_pool2d_grad feeding the batch-norm gradients */
    LOOM__FU_PARAMS,    /* backward: batch_norm_grad_params */
    LOOM__FU_GRAD,      /* backward: batch_norm_grad */
    LOOM__FU_ROLES
};

typedef struct loom__cpu_group {
    bool backward;
    int m[LOOM__FU_ROLES];
} loom__cpu_group;

typedef struct loom__cpu_fusion {
    int n_exec;
    int *group_at; /* by exec index: the group it leads, -1 runs alone, -2 ran in an earlier group */
    loom__cpu_group *groups;
    int n_groups;
} loom__cpu_fusion;

/* The groups of plan p (its addresses placed); *out NULL when none fuse. */
loom_status loom__cpu_fusion_plan(loom__cpu *cpu, const loom_plan *p, loom__cpu_fusion **out);
void loom__cpu_fusion_free(loom__cpu_fusion *f);
/* Run group g of plan p (fuse_kernels.c). */
loom_status loom__cpu_fusion_run(loom__cpu *cpu, const loom_plan *p, const loom__cpu_group *g);

#endif
