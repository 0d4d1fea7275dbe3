/* backends/cpu/cpu_impl.h — the CPU backend instance (shared by its files). */
#ifndef LOOM_CPU_IMPL_H
#define LOOM_CPU_IMPL_H

#include "cpu.h"

struct loom__cpu {
    int threads;
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

extern const loom__kernel loom__cpu_kernels[LOOM_OP_COUNT];

#endif
