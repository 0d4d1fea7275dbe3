/* backends/cpu/backend.c — the CPU backend: host memory, the per-node
 * dispatcher (with the f16/bf16 -> f32 compute wrapper) and the vtable. */

#include <strings.h>

#include "fuse.h"

#ifdef LOOM_HAVE_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int n);
char *openblas_get_corename(void);
char *openblas_get_config(void);
#endif

static bool cpu_available(loom_ctx *ctx, const char **why) {
    (void)ctx;
    if (why) *why = "always available";
    return true;
}

static loom_status cpu_create(loom_backend *be, const loom_backend_desc *desc) {
    static const char *const sw[] = {"LOOM_CPU_FUSE", "LOOM_CPU_POOL_AVX512", "LOOM_CPU_GEMM512"};
    loom_status st0 = loom__env_switches_check(be->ctx, sw, 3);
    if (st0 != LOOM_OK) return st0;
    loom__cpu *cpu = calloc(1, sizeof *cpu);
    if (!cpu) return loom__err(be->ctx, LOOM_ERR_OOM, "cpu backend: out of memory");
    int threads = desc && desc->threads > 0 ? desc->threads : loom_ctx_threads(be->ctx);
    loom_status st = loom__cpu_pool_create(cpu, threads);
    if (st != LOOM_OK) {
        free(cpu);
        return loom__err(be->ctx, st, "cpu backend: cannot start %d threads", threads);
    }
#ifdef LOOM_HAVE_OPENBLAS
    openblas_set_num_threads(1); /* loom's pool splits GEMMs itself (gemm.c) */
#endif
    cpu->deterministic = desc && desc->deterministic;
    cpu->reproducible = desc && desc->reproducible;
    be->impl = cpu;
    return LOOM_OK;
}

void *loom__cpu_scratch(loom__cpu *cpu, size_t bytes) {
    if (bytes <= cpu->scratch_bytes) return cpu->scratch;
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes) != 0) return NULL;
    free(cpu->scratch);
    cpu->scratch = p;
    cpu->scratch_bytes = bytes;
    return p;
}

static void cpu_destroy(loom_backend *be) {
    loom__cpu *cpu = be->impl;
    if (!cpu) return;
    free(cpu->scratch);
    loom__cpu_pool_destroy(cpu);
    free(cpu);
}

#ifdef LOOM_HAVE_OPENBLAS
/* 0 SSE, 1 AVX, 2 AVX2, 3 AVX-512: of an OpenBLAS kernel set (by its core name) or of this CPU */
static int blas_level(const char *core) {
    static const char *avx512[] = {"skylakex", "cooperlake", "sapphirerapids"}, *avx2[] = {"haswell", "zen"};
    for (size_t i = 0; i < sizeof avx512 / sizeof *avx512; i++)
        if (!strcasecmp(core, avx512[i])) return 3;
    for (size_t i = 0; i < sizeof avx2 / sizeof *avx2; i++)
        if (!strcasecmp(core, avx2[i])) return 2;
    return !strcasecmp(core, "sandybridge") ? 1 : 0;
}

static int cpu_level(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx512f")) return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
    return __builtin_cpu_supports("avx") ? 1 : 0;
#else
    return 0; /* the note is about x86 kernel sets */
#endif
}
#endif

static void cpu_describe(const loom_backend *be, FILE *out) {
    const loom__cpu *cpu = be->impl;
    fprintf(out, "  device 0: host CPU, %d threads\n", cpu->threads);
#ifdef LOOM_HAVE_OPENBLAS
    fprintf(out, "  GEMM: OpenBLAS (%s; %s kernels), single-threaded per panel, panels split across loom's threads\n",
            openblas_get_config(), openblas_get_corename());
    int level = cpu_level();
    const char *isa = level == 3 ? "AVX-512" : level == 2 ? "AVX2" : "AVX";
    const char *best = level == 3 ? "SkylakeX" : level == 2 ? "Haswell" : "SandyBridge", *set = getenv("OPENBLAS_CORETYPE");
    if (blas_level(openblas_get_corename()) < level) {
        if (set && *set)
            fprintf(out, "  note: OPENBLAS_CORETYPE=%s selects kernels older than this CPU (%s): %s gives faster GEMMs\n",
                    set, isa, best);
        else
            fprintf(out, "  note: OpenBLAS chose its %s kernels for a CPU with %s (its CPU detection failed here): "
                         "OPENBLAS_CORETYPE=%s in the environment gives faster GEMMs\n", openblas_get_corename(), isa,
                    best);
    }
#else
    fprintf(out, "  GEMM: built-in blocked loops (no OpenBLAS)\n");
#endif
    fprintf(out, "  dtypes: f32 f64 (reference), f16 bf16 (stored 16-bit, computed in f32)\n");
    if (cpu->reproducible)
        fprintf(out, "  reproducible: the canonical kernels of core/repro.h (same bits as the other backends)\n");
    else if (cpu->deterministic)
        fprintf(out, "  deterministic: results do not depend on the thread count (fixed %d-part splits)\n",
                LOOM__CPU_DET_PARTS);
}

static loom_status cpu_buffer_alloc(loom_backend *be, size_t bytes, loom__buffer **out) {
    loom__buffer *b = malloc(sizeof *b);
    void *data = NULL;
    if (b && posix_memalign(&data, 64, bytes ? bytes : 64) != 0) data = NULL;
    if (!b || !data) {
        free(b);
        return loom__err(be->ctx, LOOM_ERR_OOM, "cpu backend: cannot allocate %zu bytes", bytes);
    }
    b->bytes = bytes;
    b->data = data;
    *out = b;
    return LOOM_OK;
}

static void cpu_buffer_free(loom_backend *be, loom__buffer *b) {
    (void)be;
    if (!b) return;
    free(b->data);
    free(b);
}

static loom_status cpu_buffer_write(loom_backend *be, loom__buffer *b, size_t off, const void *src, size_t n) {
    LOOM__ASSERT(off + n <= b->bytes);
    if (n) memcpy((char *)b->data + off, src, n), loom__stat_transfer(&be->stats, true, n);
    return LOOM_OK;
}

static loom_status cpu_buffer_read(loom_backend *be, loom__buffer *b, size_t off, void *dst, size_t n) {
    LOOM__ASSERT(off + n <= b->bytes);
    if (n) memcpy(dst, (char *)b->data + off, n), loom__stat_transfer(&be->stats, false, n);
    return LOOM_OK;
}

/* Per-plan data: scratch for the 16-bit wrapper (f32 copies of a node's
 * inputs and output), and the fused groups (fuse.h; NULL: none). */
typedef struct cpu_plan {
    float *scratch;
    size_t scratch_floats;
    loom__fusion *fuse;
} cpu_plan;

static bool is16(loom_dtype dt) { return dt == LOOM_F16 || dt == LOOM_BF16; }

/* f32 scratch floats the 16-bit wrapper needs for node t: its 16-bit inputs,
 * and its output if that is 16-bit. */
static size_t wrap_floats(const loom_tensor *t) {
    size_t n = is16(t->dtype) ? (size_t)loom_tensor_numel(t) : 0;
    for (int k = 0; k < t->nsrc; k++)
        if (is16(t->src[k]->dtype)) n += (size_t)loom_tensor_numel(t->src[k]);
    return n;
}

static loom_status cpu_plan_prepare(loom_backend *be, loom_plan *p) {
    cpu_plan *cp = calloc(1, sizeof *cp);
    if (!cp) return loom__err(be->ctx, LOOM_ERR_OOM, "cpu backend: out of memory");
    for (int e = 0; e < p->n_exec; e++) {
        size_t n = wrap_floats(p->exec[e]);
        if (n > cp->scratch_floats) cp->scratch_floats = n;
    }
    if (cp->scratch_floats && !(cp->scratch = malloc(cp->scratch_floats * sizeof(float)))) {
        free(cp);
        return loom__err(be->ctx, LOOM_ERR_OOM, "cpu backend: out of memory for 16-bit scratch");
    }
    loom_status st = loom__cpu_fusion_plan(be->impl, p, &cp->fuse);
    if (st != LOOM_OK) {
        free(cp->scratch);
        free(cp);
        return st;
    }
    p->impl = cp;
    return LOOM_OK;
}

static void cpu_plan_release(loom_backend *be, loom_plan *p) {
    (void)be;
    cpu_plan *cp = p->impl;
    if (!cp) return;
    loom__fusion_free(cp->fuse);
    free(cp->scratch);
    free(cp);
    p->impl = NULL;
}

static void *addr_of(const loom_plan *p, const loom_tensor *t) {
    loom__addr a = p->addr[t->id];
    return (char *)a.buf->data + a.off;
}

static loom_status cpu_plan_run(loom_backend *be, loom_plan *p) {
    loom__cpu *cpu = be->impl;
    cpu_plan *cp = p->impl;
    for (int e = 0; e < p->n_exec; e++) {
        double t0 = p->node_seconds ? loom__now_s() : 0;
        const loom_tensor *t = p->exec[e];
        int fg = cp->fuse ? cp->fuse->group_at[e] : -1;
        if (fg == -2) continue; /* ran in its group */
        if (fg >= 0) { /* a fused group: its time counts as its batch-norm node's */
            const loom__fuse_group *grp = &cp->fuse->groups[fg];
            loom_status st = loom__cpu_fusion_run(cpu, p, grp);
            if (st != LOOM_OK) return st;
            if (p->node_seconds)
                p->node_seconds[grp->attn || grp->bias ? e : grp->m[grp->backward ? LOOM__FU_PARAMS : LOOM__FU_BN]] +=
                    loom__now_s() - t0;
            continue;
        }
        loom__cpu_args a = {.cpu = cpu, .node = t, .dt = t->dtype, .seed = p->g->seed, .step = p->step};
        a.y = addr_of(p, t);
        for (int k = 0; k < t->nsrc; k++) {
            a.x[k] = addr_of(p, t->src[k]);
            a.xdt[k] = t->src[k]->dtype;
        }
        loom__cpu_fn fn = (loom__cpu_fn)loom__kernel_variant(&loom__cpu_kernels[t->op], cpu->reproducible);
        loom_status st;
        /* 16-bit data is computed in f32: convert 16-bit inputs into scratch,
         * run, convert a 16-bit output back */
        float *s = cp->scratch;
        for (int k = 0; k < t->nsrc; k++) {
            if (!is16(t->src[k]->dtype)) continue;
            size_t n = (size_t)loom_tensor_numel(t->src[k]);
            loom_convert(a.x[k], t->src[k]->dtype, s, LOOM_F32, n);
            a.x[k] = s;
            a.xdt[k] = LOOM_F32;
            s += n;
        }
        if (is16(t->dtype)) {
            a.dt = LOOM_F32;
            a.y = s;
            st = fn(&a);
            if (st == LOOM_OK) loom_convert(s, LOOM_F32, addr_of(p, t), t->dtype, (size_t)loom_tensor_numel(t));
        } else {
            st = fn(&a);
        }
        if (st != LOOM_OK) {
            if (loom_last_status(be->ctx) != st)
                loom__err(be->ctx, st, "cpu backend: op '%s' (node '%s') failed", loom_op_name(t->op), t->name);
            return st;
        }
        if (p->node_seconds) p->node_seconds[e] += loom__now_s() - t0;
    }
    return LOOM_OK;
}

static int cpu_plan_fused(const loom_plan *p) {
    const cpu_plan *cp = p->impl;
    return cp && cp->fuse ? cp->fuse->n_groups : 0;
}

static loom_status cpu_synchronize(loom_backend *be) {
    (void)be;
    return LOOM_OK;
}

const loom__backend_vtbl loom__cpu_backend = {
    .name = "cpu",
    .available = cpu_available,
    .create = cpu_create,
    .destroy = cpu_destroy,
    .describe = cpu_describe,
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .buffer_write = cpu_buffer_write,
    .buffer_read = cpu_buffer_read,
    .plan_prepare = cpu_plan_prepare,
    .plan_run = cpu_plan_run,
    .plan_release = cpu_plan_release,
    .plan_fused = cpu_plan_fused,
    .synchronize = cpu_synchronize,
    .can_profile = true,
    .reproducible = true,
    .kernels = loom__cpu_kernels,
};
