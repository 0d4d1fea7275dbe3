/* backends/cpu/ops/binary.c — CPU kernels for add/sub/mul/div with
 * broadcasting, scale, fill, expand and cast. Reference loops that are also
 * the fast path: contiguous inner loops, split across the thread pool. */
#include <math.h>

#include "../cpu_impl.h"

/* Broadcast geometry: y (nd dims), a and b element strides per y axis (0 on
 * broadcast axes). */
typedef struct bcast {
    int nd;
    int64_t dims[LOOM_MAX_DIMS];
    int64_t sa[LOOM_MAX_DIMS], sb[LOOM_MAX_DIMS];
    int64_t inner, outer; /* last-axis length and the product of the others */
} bcast;

static void bcast_init(bcast *bc, const loom_tensor *y, const loom_tensor *a, const loom_tensor *b) {
    bc->nd = y->ndim;
    memcpy(bc->dims, y->dims, sizeof bc->dims);
    loom__broadcast_strides(a, y, bc->sa);
    if (b) loom__broadcast_strides(b, y, bc->sb);
    else memset(bc->sb, 0, sizeof bc->sb);
    bc->inner = y->ndim ? y->dims[y->ndim - 1] : 1;
    bc->outer = y->ndim ? loom__numel(y->ndim - 1, y->dims) : 1;
}

/* offsets of outer row r in a and b */
static void row_offsets(const bcast *bc, int64_t r, int64_t *oa, int64_t *ob) {
    int64_t a = 0, b = 0;
    for (int i = bc->nd - 2; i >= 0; i--) {
        int64_t k = r % bc->dims[i];
        r /= bc->dims[i];
        a += k * bc->sa[i];
        b += k * bc->sb[i];
    }
    *oa = a, *ob = b;
}

typedef struct bjob {
    const bcast *bc;
    int kind;
    const void *a, *b;
    void *y;
} bjob;

#define BINARY_ROWS(T)                                                                                                 \
    static void rows_##T(void *v, int64_t r0, int64_t r1) {                                                            \
        const bjob *j = v;                                                                                             \
        const bcast *bc = j->bc;                                                                                       \
        const T *A = j->a, *B = j->b;                                                                                  \
        T *Y = j->y;                                                                                                   \
        int64_t n = bc->inner, ia = bc->nd ? bc->sa[bc->nd - 1] : 0;                                                   \
        int64_t ib = bc->nd ? bc->sb[bc->nd - 1] : 0;                                                                  \
        for (int64_t r = r0; r < r1; r++) {                                                                            \
            int64_t oa, ob;                                                                                            \
            row_offsets(bc, r, &oa, &ob);                                                                              \
            const T *pa = A + oa, *pb = B ? B + ob : NULL;                                                             \
            T *py = Y + r * n;                                                                                         \
            switch (j->kind) {                                                                                         \
            case LOOM_K_BIN_ADD:                                                                                       \
                for (int64_t i = 0; i < n; i++) py[i] = pa[i * ia] + pb[i * ib];                                       \
                break;                                                                                                 \
            case LOOM_K_BIN_SUB:                                                                                       \
                for (int64_t i = 0; i < n; i++) py[i] = pa[i * ia] - pb[i * ib];                                       \
                break;                                                                                                 \
            case LOOM_K_BIN_MUL:                                                                                       \
                for (int64_t i = 0; i < n; i++) py[i] = pa[i * ia] * pb[i * ib];                                       \
                break;                                                                                                 \
            case LOOM_K_BIN_DIV:                                                                                       \
                for (int64_t i = 0; i < n; i++) py[i] = pa[i * ia] / pb[i * ib];                                       \
                break;                                                                                                 \
            default:                                                                                                   \
                for (int64_t i = 0; i < n; i++) py[i] = pa[i * ia];                                                    \
                break;                                                                                                 \
            }                                                                                                          \
        }                                                                                                              \
    }
BINARY_ROWS(float)
BINARY_ROWS(double)

/* Same-shape operands: one flat loop, split into chunks. */
#define FLAT(T)                                                                                                        \
    static void flat_##T(void *v, int64_t i0, int64_t i1) {                                                            \
        const bjob *j = v;                                                                                             \
        const T *A = j->a, *B = j->b;                                                                                  \
        T *Y = j->y;                                                                                                   \
        switch (j->kind) {                                                                                             \
        case LOOM_K_BIN_ADD:                                                                                           \
            for (int64_t i = i0; i < i1; i++) Y[i] = A[i] + B[i];                                                      \
            break;                                                                                                     \
        case LOOM_K_BIN_SUB:                                                                                           \
            for (int64_t i = i0; i < i1; i++) Y[i] = A[i] - B[i];                                                      \
            break;                                                                                                     \
        case LOOM_K_BIN_MUL:                                                                                           \
            for (int64_t i = i0; i < i1; i++) Y[i] = A[i] * B[i];                                                      \
            break;                                                                                                     \
        case LOOM_K_BIN_DIV:                                                                                           \
            for (int64_t i = i0; i < i1; i++) Y[i] = A[i] / B[i];                                                      \
            break;                                                                                                     \
        default:                                                                                                       \
            for (int64_t i = i0; i < i1; i++) Y[i] = A[i];                                                             \
            break;                                                                                                     \
        }                                                                                                              \
    }
FLAT(float)
FLAT(double)

static loom_status run_binary(const loom__cpu_args *a, int kind) {
    const loom_tensor *y = a->node;
    const loom_tensor *ta = y->src[0], *tb = kind == LOOM_K_BIN_COPY ? NULL : y->src[1];
    bjob j = {NULL, kind, a->x[0], tb ? a->x[1] : NULL, a->y};
    bool f64 = a->dt == LOOM_F64;
    if (loom__same_shape(ta, y) && (!tb || loom__same_shape(tb, y))) {
        int64_t n = loom_tensor_numel(y);
        loom__cpu_parallel(a->cpu, n, 1 << 15, f64 ? flat_double : flat_float, &j);
        return LOOM_OK;
    }
    bcast bc;
    bcast_init(&bc, y, ta, tb);
    j.bc = &bc;
    int64_t grain = bc.inner >= (1 << 14) ? 1 : (1 << 14) / bc.inner;
    loom__cpu_parallel(a->cpu, bc.outer, grain, f64 ? rows_double : rows_float, &j);
    return LOOM_OK;
}

loom_status loom__cpu_add(const loom__cpu_args *a) { return run_binary(a, LOOM_K_BIN_ADD); }
loom_status loom__cpu_sub(const loom__cpu_args *a) { return run_binary(a, LOOM_K_BIN_SUB); }
loom_status loom__cpu_mul(const loom__cpu_args *a) { return run_binary(a, LOOM_K_BIN_MUL); }
loom_status loom__cpu_div(const loom__cpu_args *a) { return run_binary(a, LOOM_K_BIN_DIV); }
loom_status loom__cpu_expand(const loom__cpu_args *a) { return run_binary(a, LOOM_K_BIN_COPY); }

typedef struct sjob {
    const void *x;
    void *y;
    double s;
} sjob;

static void scale_f(void *v, int64_t i0, int64_t i1) {
    const sjob *j = v;
    const float *x = j->x;
    float *y = j->y, s = (float)j->s;
    for (int64_t i = i0; i < i1; i++) y[i] = s * x[i];
}
static void scale_d(void *v, int64_t i0, int64_t i1) {
    const sjob *j = v;
    const double *x = j->x;
    double *y = j->y;
    for (int64_t i = i0; i < i1; i++) y[i] = j->s * x[i];
}

loom_status loom__cpu_scale(const loom__cpu_args *a) {
    sjob j = {a->x[0], a->y, a->node->f[LOOM_F_SCALE_S]};
    loom__cpu_parallel(a->cpu, loom_tensor_numel(a->node), 1 << 15, a->dt == LOOM_F64 ? scale_d : scale_f, &j);
    return LOOM_OK;
}

loom_status loom__cpu_fill(const loom__cpu_args *a) {
    int64_t n = loom_tensor_numel(a->node);
    double v = a->node->f[LOOM_F_FILL_VALUE];
    if (a->dt == LOOM_F64)
        for (int64_t i = 0; i < n; i++) ((double *)a->y)[i] = v;
    else
        for (int64_t i = 0; i < n; i++) ((float *)a->y)[i] = (float)v;
    return LOOM_OK;
}

/* The dispatcher may have converted a 16-bit source to f32 already (a->xdt). */
loom_status loom__cpu_cast(const loom__cpu_args *a) {
    loom_convert(a->x[0], a->xdt[0], a->y, a->dt, (size_t)loom_tensor_numel(a->node));
    return LOOM_OK;
}
