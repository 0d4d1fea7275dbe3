/* core/fuse.h — the fusable batch-norm chains of a plan, and the three
 * attention gradients of one attention, found once for every backend
 * (core/fuse.c); each backend runs the groups, or the parts
 * of them, it has fused kernels for (the CPU backend: backends/cpu/fuse.h,
 * Vulkan: backends/vulkan/ops/fuse.c, OpenCL: backends/opencl/ops/fuse.c).
 * Library-private.
 *
 * Groups, in the plan's execution order:
 *   forward:  batch_norm -> relu | add (-> relu) | 2x2 max_pool2d (-> relu)
 *             (consecutive nodes)
 *   backward: (relu_grad (-> 2x2 max_pool2d_grad) | 2x2 max_pool2d_grad ->)
 *             batch_norm_grad_params -> [slices of its statistics] ->
 *             batch_norm_grad
 *             or, with LOOM__FUSE_POOL_GRAD, relu_grad -> 2x2 max_pool2d_grad
 *             alone where the whole chain does not form
 *   attention (with LOOM__FUSE_ATTN_GRAD): the attention_grad nodes giving
 *             dq, dk and dv of one attention (the same sources and
 *             parameters), three consecutive nodes in any order
 *   bias (with LOOM__FUSE_MM_BIAS): a matmul of an untransposed a by a 2-D
 *             b, then the add of a 1-D bias along its last axis (the next
 *             node), then a gelu of the sum, or its add to a same-shape
 *             tensor (a residual), if the node after is one; or the matmul
 *             and the add of its product to a same-shape tensor (a
 *             gradient's accumulation); the outputs may not overlap the
 *             inputs, and lie exactly over one another or apart
 * A group forms only when running it as one pass cannot change a result:
 * every member is f32 and reads exactly what the chain gives it, and no two
 * tensors the group touches overlap in memory (except a member writing in
 * place over its own source, or the group's last output over a tensor of
 * the same shape: a pass that reads each element before it writes it).
 * Every member still writes its own output (later nodes may read it). */
#ifndef LOOM_CORE_FUSE_H
#define LOOM_CORE_FUSE_H

#include "backend_impl.h"

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
    LOOM__FU_ATTN_DQ,   /* attention: the attention_grad giving dq */
    LOOM__FU_ATTN_DK,   /* attention: ... dk */
    LOOM__FU_ATTN_DV,   /* attention: ... dv */
    LOOM__FU_MM,        /* bias: the matmul */
    LOOM__FU_BIAS,      /* bias: the add of its bias (or absent: a residual add of the product) */
    LOOM__FU_GELU,      /* bias: a gelu of the sum (or absent) */
    LOOM__FU_RES,       /* bias: instead, an add of the sum (or product) and a same-shape tensor (or absent) */
    LOOM__FU_ROLES
};

typedef struct loom__fuse_group {
    bool backward;
    bool attn; /* the attention gradients (roles LOOM__FU_ATTN_*) */
    bool bias; /* a matmul and its bias (roles LOOM__FU_MM, LOOM__FU_BIAS, LOOM__FU_GELU, LOOM__FU_RES) */
    int m[LOOM__FU_ROLES];
} loom__fuse_group;

typedef struct loom__fusion {
    int n_exec;
    int *group_at; /* by exec index: the group it leads, -1 runs alone, -2 a member of an earlier group */
    loom__fuse_group *groups;
    int n_groups;
} loom__fusion;

/* Where tensor t of plan p lies: *space names the address space (tensors in
 * different spaces never overlap), *lo its first byte's address there;
 * false when it has none yet. NULL to loom__fusion_plan: the space is the
 * tensor's buffer, the address its offset (p->addr). */
typedef bool (*loom__fuse_where)(const loom_plan *p, const loom_tensor *t, const void **space, uintptr_t *lo);

/* flags of loom__fusion_plan */
enum {
    LOOM__FUSE_POOL_GRAD = 1, /* backward groups of relu_grad -> pool gradient alone */
    LOOM__FUSE_ATTN_GRAD = 2, /* attention gradient groups */
    LOOM__FUSE_MM_BIAS = 4,   /* matmul + bias groups */
};

/* The groups of plan p (its addresses placed); *out NULL when none form. */
loom_status loom__fusion_plan(const loom_plan *p, loom__fuse_where where, unsigned flags, loom__fusion **out);
void loom__fusion_free(loom__fusion *f);

/* Whether pool node t (or its gradient) is 2x2, stride 2, unpadded over (N, C, H, W). */
bool loom__fuse_pool2(const loom_tensor *t);

#endif
