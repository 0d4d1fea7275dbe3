/* backends/cpu/cpu_impl.h — the CPU backend instance (shared by its files). */
#ifndef LOOM_CPU_IMPL_H
#define LOOM_CPU_IMPL_H

#include "cpu.h"

struct loom__cpu {
    int threads;
    /* loom_backend_desc.deterministic: no result may depend on `threads`.
     * Kernels then split reductions (and GEMMs) into parts fixed by the
     * sizes, at most LOOM__CPU_DET_PARTS, and add the parts in order. */
    bool deterministic;
    /* loom_backend_desc.reproducible: the canonical kernels of core/repro.h
     * (the kernel table's repro variants) for the ops that have one; implies deterministic */
    bool reproducible;
    void *pool;           /* threads.c */
    void *scratch;        /* kernel workspace, grown on demand, kept */
    size_t scratch_bytes;
};

struct loom__buffer {
    size_t bytes;
    void *data;
};

loom_status loom__cpu_pool_create(loom__cpu *cpu, int threads);
void loom__cpu_pool_destroy(loom__cpu *cpu);

#define LOOM__CPU_DET_PARTS 8

extern const loom__kernel loom__cpu_kernels[LOOM_OP_COUNT];
/* reproducible mode's variants (core/repro.h), in the op's own file: the
 * kernel table's `repro` entries */
loom_status loom__cpu_matmul_repro(const loom__cpu_args *a);
loom_status loom__cpu_linear_repro(const loom__cpu_args *a);
loom_status loom__cpu_conv2d_repro(const loom__cpu_args *a);
loom_status loom__cpu_conv2d_grad_input_repro(const loom__cpu_args *a);
loom_status loom__cpu_conv2d_grad_weight_repro(const loom__cpu_args *a);
loom_status loom__cpu_sum_repro(const loom__cpu_args *a);
loom_status loom__cpu_mean_repro(const loom__cpu_args *a);
loom_status loom__cpu_batch_norm_repro(const loom__cpu_args *a);
loom_status loom__cpu_batch_norm_grad_params_repro(const loom__cpu_args *a);
loom_status loom__cpu_batch_norm_grad_repro(const loom__cpu_args *a);
loom_status loom__cpu_cross_entropy_repro(const loom__cpu_args *a);
loom_status loom__cpu_cross_entropy_grad_repro(const loom__cpu_args *a);
/* the error of a reproducible kernel that could not allocate its scratch */
loom_status loom__cpu_repro_oom(const loom__cpu_args *a);


/* ---- pieces the fused kernels (fuse_kernels.c) share with the single-op
 * kernels, so a fused pass computes the same bits (the loops: f32_inline.h) ---- */

/* a batch-norm node (ops/norm.c): x (N, C, S), S = prod(dims[2:]) */
typedef struct loom__bn_job {
    int64_t N, C, S;
    bool train;
    double eps, momentum;
    const void *x, *gamma, *beta, *dy, *stats;
    void *rmean, *rvar; /* running stats: read (eval) or updated (train) */
    void *y;            /* output: y, dx, or (4, C) statistics */
} loom__bn_job;

void loom__cpu_bn_job_init(loom__bn_job *j, const loom__cpu_args *a);
/* the (4, C) statistics of channel c from its sums (K: x's first element in the channel) */
void loom__cpu_bn_dstats_store(const loom__bn_job *j, int64_t c, float K, const double acc[4]);
/* f32 input gradient of channel c: dx = f[0] dy + f[1] x + f[2] */
void loom__cpu_bn_dx_coef(const loom__bn_job *j, int64_t c, float f[3]);

#endif
