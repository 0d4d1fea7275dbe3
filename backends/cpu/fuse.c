/* backends/cpu/fuse.c — which of a plan's batch-norm chains the CPU backend
 * runs as fused passes: the groups core/fuse.c finds, placed by host address
 * (every CPU buffer is host memory: two buffers may be views of one block). */
#include "fuse.h"

static bool where_host(const loom_plan *p, const loom_tensor *t, const void **space, uintptr_t *lo) {
    loom__addr a = p->addr[t->id];
    *space = NULL, *lo = a.buf ? (uintptr_t)((const char *)a.buf->data + a.off) : 0;
    return a.buf != NULL;
}

loom_status loom__cpu_fusion_plan(loom__cpu *cpu, const loom_plan *p, loom__fusion **out) {
    *out = NULL;
    if (cpu->reproducible || loom__env_switch("LOOM_CPU_FUSE") == 0) return LOOM_OK;
    return loom__fusion_plan(p, where_host, LOOM__FUSE_ATTN_GRAD | LOOM__FUSE_MM_BIAS, out);
}
