/* backends/cpu/gemm_ep.c — what a GEMM writes after its product (cpu.h:
 * loom__cpu_gemm_ep): the add of a bias, then a gelu of the sum or its add
 * to a residual, the bits of those nodes run one by one (the CPU's bias
 * group, backends/cpu/fuse.h). gemm.c runs it over a panel OpenBLAS
 * computed; gemm512.c writes the bias sums from its registers and calls
 * loom__cpu_gemm_ep_after for the rest of each block of rows. Compiled,
 * like the activation kernels, with -fno-trapping-math (vmath.h's selects
 * vectorise; the same bits), for the baseline, AVX2 and AVX-512. */
#include "cpu_impl.h"
#include "vmath.h"

loom__cpu_gemm_ep loom__cpu_gemm_ep_at(const loom__cpu_gemm_ep *ep, int64_t i, int64_t j) {
    loom__cpu_gemm_ep a = *ep;
    a.Y += i * ep->ldy + j;
    if (a.bias) a.bias += j;
    if (a.G) a.G += i * ep->ldg + j;
    if (a.R) a.R += i * ep->ldr + j, a.Z += i * ep->ldz + j;
    return a;
}

/* rows [r0, r1): Y = C + bias (without a bias Y is C), then G = gelu(Y) or
 * Z = Y + R (each element read before it is written: Y may be C, G and Z
 * may be Y) */
typedef struct ep_job {
    const loom__cpu_gemm_ep *ep;
    const float *C;
    int64_t N, ldc;
    bool added; /* Y = C + bias already written (loom's AVX-512 kernel) */
} ep_job;

#define EP_ROWS(NAME, ATTR)                                                                                            \
    ATTR static void NAME(const ep_job *q, int64_t r0, int64_t r1) {                                                   \
        const loom__cpu_gemm_ep *ep = q->ep;                                                                           \
        for (int64_t i = r0; i < r1; i++) {                                                                            \
            const float *c = q->C + i * q->ldc;                                                                        \
            float *y = ep->Y + i * ep->ldy;                                                                            \
            if (!q->added && ep->bias)                                                                                 \
                for (int64_t j = 0; j < q->N; j++) y[j] = c[j] + ep->bias[j];                                         \
            if (ep->R) {                                                                                               \
                const float *r = ep->R + i * ep->ldr;                                                                  \
                float *z = ep->Z + i * ep->ldz;                                                                        \
                for (int64_t j = 0; j < q->N; j++) z[j] = y[j] + r[j];                                                 \
            }                                                                                                          \
            if (!ep->G) continue;                                                                                      \
            float *g = ep->G + i * ep->ldg;                                                                            \
            for (int64_t j = 0; j < q->N; j++) g[j] = loom__vgelu(y[j]);                                               \
        }                                                                                                              \
    }
EP_ROWS(ep_rows, )
EP_ROWS(ep_rows_avx2, LOOM__TARGET("avx2"))
EP_ROWS(ep_rows_avx512, LOOM__TARGET("avx512f"))
#undef EP_ROWS
static void ep_rows_base(void *v, int64_t r0, int64_t r1) { ep_rows(v, r0, r1); }
static void ep_rows_v2(void *v, int64_t r0, int64_t r1) { ep_rows_avx2(v, r0, r1); }
static void ep_rows_v512(void *v, int64_t r0, int64_t r1) { ep_rows_avx512(v, r0, r1); }

void loom__cpu_gemm_ep_run(const loom__cpu_gemm_ep *ep, int64_t M, int64_t N, const float *C, int64_t ldc) {
    ep_job q = {ep, C, N, ldc, false};
    loom__pick_isa(ep_rows_base, ep_rows_v2, ep_rows_v512)(&q, 0, M);
}

void loom__cpu_gemm_ep_after(const loom__cpu_gemm_ep *ep, int64_t r0, int64_t r1, int64_t N, const float *C,
                             int64_t ldc) {
    if (!ep->G && !ep->R) return;
    ep_job q = {ep, C, N, ldc, true};
    loom__pick_isa(ep_rows_base, ep_rows_v2, ep_rows_v512)(&q, r0, r1);
}
