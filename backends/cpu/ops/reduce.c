/* backends/cpu/ops/reduce.c — CPU kernels for sum and mean over an axes mask.
 * Reference loops, also the fast path: each output element accumulates (in
 * double) over the reduced axes; outputs are split across the thread pool.
 * The innermost reduced run is contiguous when the last axes are reduced. */
#include "../../../core/prefetch.h"
#include "../../../core/repro.h"
#include "../cpu_impl.h"
#include "../vmath.h"

typedef struct rjob {
    int nkeep, nred;
    int64_t kdims[LOOM_MAX_DIMS], kstr[LOOM_MAX_DIMS]; /* kept axes: sizes, input strides */
    int64_t rdims[LOOM_MAX_DIMS], rstr[LOOM_MAX_DIMS]; /* reduced axes */
    int64_t rcount;
    double div;
    const void *x;
    void *y;
    bool f64;
} rjob;

static void reduce_range(void *v, int64_t o0, int64_t o1) {
    const rjob *j = v;
    for (int64_t o = o0; o < o1; o++) {
        /* input offset of output element o */
        int64_t base = 0, r = o;
        for (int i = j->nkeep - 1; i >= 0; i--) {
            base += (r % j->kdims[i]) * j->kstr[i];
            r /= j->kdims[i];
        }
        double acc = 0;
        int64_t idx[LOOM_MAX_DIMS] = {0};
        int64_t inner = j->nred ? j->rdims[j->nred - 1] : 1;
        int64_t istr = j->nred ? j->rstr[j->nred - 1] : 0;
        for (int64_t c = 0; c < j->rcount; c += inner) {
            int64_t off = base;
            for (int i = 0; i < j->nred - 1; i++) off += idx[i] * j->rstr[i];
            if (j->f64) {
                const double *x = (const double *)j->x + off;
                for (int64_t k = 0; k < inner; k++) acc += x[k * istr];
            } else {
                const float *x = (const float *)j->x + off;
                for (int64_t k = 0; k < inner; k++) acc += x[k * istr];
            }
            for (int i = j->nred - 2; i >= 0; i--) { /* odometer over the outer reduced axes */
                if (++idx[i] < j->rdims[i]) break;
                idx[i] = 0;
            }
        }
        acc /= j->div;
        if (j->f64)
            ((double *)j->y)[o] = acc;
        else
            ((float *)j->y)[o] = (float)acc;
    }
}

/* Leading axes reduced, trailing axes kept (a bias gradient: x (R, K) -> K
 * column sums): each unit sums a block of CB columns over all R rows, row by
 * row, so every output adds the same values in the same order as
 * reduce_range, reading x contiguously instead of with stride K. */
#define CB 256

typedef struct cjob {
    int64_t R, K, cb; /* cb: columns per block, at most CB */
    double div;
    const void *x;
    void *y;
    bool f64;
} cjob;

/* columns [k0, k0 + n) of block b (blocks of j->cb columns) */
static inline __attribute__((always_inline)) void columns_body(const cjob *j, int64_t b0, int64_t b1) {
    double acc[CB];
    for (int64_t b = b0; b < b1; b++) {
        int64_t k0 = b * j->cb, n = j->K - k0 < j->cb ? j->K - k0 : j->cb;
        /* the row pf_rows on (~4 KB ahead): prefetch.h */
        int64_t pf_rows = 4096 / (n * (j->f64 ? 8 : 4)) + 1;
        for (int64_t k = 0; k < n; k++) acc[k] = 0;
        for (int64_t r = 0; r < j->R; r++) {
            if (j->f64) {
                const double *x = (const double *)j->x + r * j->K + k0;
                for (int64_t k = 0; k < n; k++) acc[k] += x[k];
            } else {
                const float *x = (const float *)j->x + r * j->K + k0;
                if (r + pf_rows < j->R) loom__prefetch_span(x + pf_rows * j->K, (size_t)n * sizeof(float));
                for (int64_t k = 0; k < n; k++) acc[k] += (double)x[k];
            }
        }
        for (int64_t k = 0; k < n; k++) {
            double a = acc[k] / j->div;
            if (j->f64)
                ((double *)j->y)[k0 + k] = a;
            else
                ((float *)j->y)[k0 + k] = (float)a;
        }
    }
}

/* each column's sum in double, row by row, at any vector width: the same bits */
static void columns_range(void *v, int64_t b0, int64_t b1) { columns_body(v, b0, b1); }
LOOM__TARGET("avx2") static void columns_range_avx2(void *v, int64_t b0, int64_t b1) { columns_body(v, b0, b1); }
LOOM__TARGET("avx512f") static void columns_range_avx512(void *v, int64_t b0, int64_t b1) { columns_body(v, b0, b1); }

/* x (d0..dn-1) -> y: the kept axes in order */
static loom_status run_reduce(const loom__cpu_args *a, bool mean) {
    const loom_tensor *y = a->node, *x = y->src[0];
    rjob j = {0};
    int64_t st = 1, strides[LOOM_MAX_DIMS];
    for (int i = x->ndim - 1; i >= 0; i--) strides[i] = st, st *= x->dims[i];
    j.rcount = 1;
    for (int i = 0; i < x->ndim; i++) {
        if (y->p[LOOM_P_REDUCE_MASK] & (1u << i)) {
            j.rdims[j.nred] = x->dims[i], j.rstr[j.nred++] = strides[i];
            j.rcount *= x->dims[i];
        } else {
            j.kdims[j.nkeep] = x->dims[i], j.kstr[j.nkeep++] = strides[i];
        }
    }
    j.div = mean ? (double)j.rcount : 1.0;
    j.x = a->x[0], j.y = a->y, j.f64 = a->dt == LOOM_F64;
    int64_t nout = loom_tensor_numel(y);
    uint32_t mask = (uint32_t)y->p[LOOM_P_REDUCE_MASK] & ((1u << x->ndim) - 1);
    if (j.nred && j.nkeep && !(mask & (mask + 1))) { /* the reduced axes: a leading run */
        cjob c = {.R = j.rcount, .K = nout, .div = j.div, .x = j.x, .y = j.y, .f64 = j.f64};
        /* blocks of up to CB columns, and (16 columns or more each) at least one per thread where the
         * work is large: a bias gradient of 128 columns over 8192 rows is two blocks of 64, not one of 128 */
        int64_t blocks = (nout + CB - 1) / CB, threads = loom__cpu_threads(a->cpu);
        if (blocks < threads && c.R * nout >= (1 << 16)) blocks = threads < (nout + 15) / 16 ? threads : (nout + 15) / 16;
        c.cb = ((nout + blocks - 1) / blocks + 15) / 16 * 16;
        if (c.cb > CB) c.cb = CB;
        blocks = (nout + c.cb - 1) / c.cb;
        int64_t grain = c.R * c.cb >= 16384 ? 1 : 16384 / (c.R * c.cb);
        loom__cpu_parallel(a->cpu, blocks, grain, loom__pick_isa(columns_range, columns_range_avx2, columns_range_avx512),
                           &c);
        return LOOM_OK;
    }
    int64_t grain = j.rcount >= 4096 ? 1 : 4096 / j.rcount;
    loom__cpu_parallel(a->cpu, nout, grain, reduce_range, &j);
    return LOOM_OK;
}

loom_status loom__cpu_sum(const loom__cpu_args *a) { return run_reduce(a, false); }
loom_status loom__cpu_mean(const loom__cpu_args *a) { return run_reduce(a, true); }

/* ---- sum, mean: loom__csum over the reduced elements in row-major order ---- */

typedef struct crjob {
    int64_t g[23];
    const float *x;
    float *y;
    bool mean;
} crjob;

static void reduce_rows(void *v, int64_t o0, int64_t o1) {
    const crjob *j = v;
    const int64_t *g = j->g;
    int64_t nkeep = g[0], nred = g[11], count = g[22];
    for (int64_t o = o0; o < o1; o++) {
        int64_t base = 0, r = o;
        for (int64_t i = nkeep - 1; i >= 0; i--) {
            base += (r % g[1 + i]) * g[6 + i];
            r /= g[1 + i];
        }
        loom__csum s = {0};
        for (int64_t e = 0; e < count; e++) {
            int64_t off = base, q = e;
            for (int64_t i = nred - 1; i >= 0; i--) {
                off += (q % g[12 + i]) * g[17 + i];
                q /= g[12 + i];
            }
            loom__csum_add(&s, j->x[off]);
        }
        float t = loom__csum_total(&s);
        j->y[o] = j->mean ? t / (float)count : t;
    }
}

static loom_status reduce_repro(const loom__cpu_args *a, bool mean) {
    crjob j = {.x = a->x[0], .y = a->y, .mean = mean};
    int64_t count = loom__reduce_table(a->node, j.g);
    loom__cpu_parallel(a->cpu, loom_tensor_numel(a->node), 1 + 4096 / (count + 1), reduce_rows, &j);
    return LOOM_OK;
}
loom_status loom__cpu_sum_repro(const loom__cpu_args *a) { return reduce_repro(a, false); }
loom_status loom__cpu_mean_repro(const loom__cpu_args *a) { return reduce_repro(a, true); }
