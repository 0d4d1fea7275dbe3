/* tests/ops/registry.c — the list of op-case families, and the case helpers. */
#include "cases.h"

#include <stdlib.h>
#include <string.h>

#define FAMILIES(X) \
    X(binary)       \
    X(activation)   \
    X(matmul)       \
    X(attention)    \
    X(softmax)      \
    X(loss)         \
    X(conv2d)       \
    X(pool2d)       \
    X(norm)         \
    X(dropout)      \
    X(embedding)    \
    X(augment)      \
    X(resize)       \
    X(shape)        \
    X(reduce)       \
    X(optim)        \
    X(amp)          \
    X(correct)      \
    X(nan)

#define DECL(f) extern const loom_op_case loom_cases_##f[];
FAMILIES(DECL)
#undef DECL

const loom_op_case *const loom_case_families[] = {
#define REF(f) loom_cases_##f,
    FAMILIES(REF)
#undef REF
        NULL};

const char *const loom_case_family_names[] = {
#define NAME(f) #f,
    FAMILIES(NAME)
#undef NAME
        NULL};

loom_tensor *tc_param(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims, double lo,
                      double hi) {
    loom_init init = {LOOM_INIT_UNIFORM, lo, hi};
    return loom_param(g, name, dt, ndim, dims, &init);
}

loom_tensor *tc_bytes(loom_graph *g, const char *name, int ndim, const int64_t *dims, uint64_t key, uint64_t salt) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    uint8_t *v = malloc((size_t)n);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        loom_philox(key, salt, (uint64_t)i, w);
        v[i] = (uint8_t)w[0];
    }
    loom_tensor *t = loom_constant(g, name, LOOM_U8, ndim, dims, v);
    free(v);
    return t;
}

loom_tensor *tc_index(loom_graph *g, const char *name, int ndim, const int64_t *dims, int maxval, uint32_t salt) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= dims[i];
    int32_t *v = malloc((size_t)n * sizeof *v);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        uint32_t w[4];
        loom_philox(12345, salt, (uint64_t)i, w);
        v[i] = (int32_t)(w[0] % (uint32_t)maxval);
    }
    loom_tensor *t = loom_constant(g, name, LOOM_I32, ndim, dims, v);
    free(v);
    return t;
}
