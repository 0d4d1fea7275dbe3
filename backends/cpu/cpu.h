/* backends/cpu/cpu.h — the CPU backend's private interface: kernel arguments,
 * the thread pool, and the kernel entry points of every op family.
 *
 * Kernels compute in the dtype a->dt: F32 or F64 for float ops (16-bit nodes
 * are computed in F32: the dispatcher converts 16-bit inputs to F32 scratch
 * and the F32 result back), I32/U8 where an op supports them. Float inputs
 * arrive in a->dt unless the op's builder allows other dtypes (cast; index
 * inputs are I32). All tensors are contiguous, row-major.
 */
#ifndef LOOM_CPU_H
#define LOOM_CPU_H

#include "../../core/backend_impl.h"

typedef struct loom__cpu loom__cpu;

typedef struct loom__cpu_args {
    loom__cpu *cpu;
    const loom_tensor *node; /* shape and op parameters */
    loom_dtype dt;           /* compute dtype of the output and float inputs */
    void *y;                 /* output */
    void *x[LOOM_MAX_SRC];   /* inputs (x[i] for node->src[i]); writable for effect ops */
    loom_dtype xdt[LOOM_MAX_SRC]; /* the dtype each x[i] actually has */
    uint64_t seed;           /* graph seed */
    uint64_t step;           /* plan step (dropout) */
} loom__cpu_args;

typedef loom_status (*loom__cpu_fn)(const loom__cpu_args *a);

/* ---- thread pool ---- */
/* Run fn(arg, begin, end) over [0, n) split into chunks of at least `grain`
 * items across the pool; returns when all are done. Serial when n is small. */
typedef void (*loom__cpu_range_fn)(void *arg, int64_t begin, int64_t end);
void loom__cpu_parallel(loom__cpu *cpu, int64_t n, int64_t grain, loom__cpu_range_fn fn, void *arg);
int loom__cpu_threads(const loom__cpu *cpu);

/* Kernel workspace of at least `bytes`, valid until the next call (kernels run
 * one at a time, so one buffer serves all; it grows and is kept, so steady
 * state allocates nothing). NULL if out of memory. */
void *loom__cpu_scratch(loom__cpu *cpu, size_t bytes);

/* f32 GEMM: C[M,N] = alpha * op(A) op(B) + beta * C, row-major, lda/ldb/ldc
 * in elements. OpenBLAS when built with it, else a blocked threaded loop. */
void loom__cpu_sgemm(loom__cpu *cpu, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                     const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* What a GEMM writes after its product C (loom__cpu_sgemm_ep): Y[i, j] =
 * C[i, j] + bias[j] (row stride ldy; Y may be C; without a bias, Y is C and
 * nothing is written there), then, with G, G = gelu(Y)
 * (row stride ldg; G may be Y), or, with R, Z = Y + R (row strides ldr,
 * ldz; Z may be Y): the bits of the add and gelu (or add) nodes after the
 * product (backends/cpu/fuse.h); where loom's AVX-512 kernel takes the
 * panel, Y from the registers and the rest from each block of rows while in
 * L2, else by a pass over the panel just computed. */
typedef struct loom__cpu_gemm_ep {
    const float *bias, *R;
    float *Y, *G, *Z;
    int64_t ldy, ldg, ldr, ldz;
} loom__cpu_gemm_ep;
/* the epilogue of the corner (i, j) of the product */
loom__cpu_gemm_ep loom__cpu_gemm_ep_at(const loom__cpu_gemm_ep *ep, int64_t i, int64_t j);
/* ep over an M x N product computed into C (row stride ldc) */
void loom__cpu_gemm_ep_run(const loom__cpu_gemm_ep *ep, int64_t M, int64_t N, const float *C, int64_t ldc);
/* rows [r0, r1) of ep's gelu or residual add where its Y = C + bias is written */
void loom__cpu_gemm_ep_after(const loom__cpu_gemm_ep *ep, int64_t r0, int64_t r1, int64_t N, const float *C,
                             int64_t ldc);
/* C = op(A) op(B) (alpha 1, beta 0), then ep: the same bits as
 * loom__cpu_sgemm followed by the epilogue's nodes. */
void loom__cpu_sgemm_ep(loom__cpu *cpu, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const float *A,
                        int64_t lda, const float *B, int64_t ldb, float *C, int64_t ldc, const loom__cpu_gemm_ep *ep);
/* loom's AVX-512 f32 GEMM (gemm512.c), single-threaded, op(A) = A: whether
 * it takes these sizes on this CPU (LOOM_CPU_GEMM512=0: never), and the
 * product (false when its packing buffer cannot be allocated). */
bool loom__cpu_sgemm512_fits(bool trans_a, int64_t M, int64_t N, int64_t K);
bool loom__cpu_sgemm512(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* The same, then epilogue ep (NULL: none) from the registers. */
bool loom__cpu_sgemm512_ep(bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                           const float *B, int64_t ldb, float beta, float *C, int64_t ldc, const loom__cpu_gemm_ep *ep);
/* Reproducible mode's canonical f32 GEMM (core/repro.h): C = (accumulate ?
 * C + s : s), s the chunked fma chain over k; threads split whole outputs.
 * LOOM_ERR_OOM if the packed copy of B cannot be allocated. */
loom_status loom__cpu_sgemm_repro(loom__cpu *cpu, bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                                  const float *A, int64_t lda, const float *B, int64_t ldb, bool accumulate, float *C,
                                  int64_t ldc);
/* f64 GEMM: plain reference loops (the oracle). */
void loom__cpu_dgemm_ref(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha, const double *A,
                         int64_t lda, const double *B, int64_t ldb, double beta, double *C, int64_t ldc);

/* The number of fused groups (fuse.h) a plan on the CPU backend runs; 0 for
 * other backends' plans (tests compare fused and unfused runs). */
int loom__cpu_plan_fused_groups(const loom_plan *p);

/* ---- kernels: one per op, named loom__cpu_<op name>, in ops/<family>.c ---- */
#define LOOM_OP(e, stem, bw, fl, ac) loom_status loom__cpu_##stem(const loom__cpu_args *a);
#include "../../core/ops.def"
#undef LOOM_OP

#endif
