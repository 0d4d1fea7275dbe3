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
     * (ops/repro.c) for the ops that have one; implies deterministic */
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
/* reproducible mode's canonical kernels (ops/repro.c); NULL = the ordinary one */
extern const loom__cpu_fn loom__cpu_repro_kernels[LOOM_OP_COUNT];

#endif
