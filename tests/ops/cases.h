/* tests/ops/cases.h — op test cases shared by the op-check program (every op,
 * every dtype, every backend against the CPU f64 reference) and the gradient
 * check (every backward rule against central finite differences in f64).
 *
 * A case builds a small forward graph in a given dtype and returns its output.
 * The harness appends loss = sum(cast(out, f32|f64) * R) for a fixed random
 * R, runs loom_backward, and compares the output and the gradient of every
 * float parameter. Float data comes from parameters created with tc_param
 * (uniform init: the same values for every dtype and backend); integer data
 * (targets, indices) from tc_index constants.
 *
 * Each family file tests/ops/<family>.c defines
 *     const loom_op_case loom_cases_<family>[] = { {...}, ..., {0} };
 * and tests/ops/registry.c lists the families.
 */
#ifndef LOOM_TEST_CASES_H
#define LOOM_TEST_CASES_H

#include "loom/loom.h"

enum {
    TC_NO_GRADCHECK = 1u << 0, /* output not differentiable (or not everywhere) */
    TC_NO_16BIT = 1u << 1,     /* skip f16/bf16 (e.g. needs f32 range) */
};

typedef struct loom_op_case {
    const char *name; /* "conv2d 3x3 stride 2 pad 1 groups 2" */
    /* Build the forward graph in dtype dt; return the output (NULL on error). */
    loom_tensor *(*build)(loom_graph *g, loom_dtype dt, int variant);
    int variant;
    double tol_scale; /* multiplies the per-dtype NMSE tolerance; 0 = 1 */
    unsigned flags;
    double fd_step; /* gradient check: finite-difference step; 0 = 1e-6 * max(1, |x|) */
} loom_op_case;

/* A float parameter filled with U(lo, hi) (same values for any dtype). */
loom_tensor *tc_param(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims, double lo,
                      double hi);
/* A u8 constant (images, say) of random bytes: element i is the low byte of
 * Philox(key, salt, i)'s first word. */
loom_tensor *tc_bytes(loom_graph *g, const char *name, int ndim, const int64_t *dims, uint64_t key, uint64_t salt);
/* An i32 constant with values in [0, maxval) from a fixed seed (salt varies it). */
loom_tensor *tc_index(loom_graph *g, const char *name, int ndim, const int64_t *dims, int maxval, uint32_t salt);

#define TC_DIMS(...) (sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), ((const int64_t[]){__VA_ARGS__})

/* All registered families, NULL-terminated; each array ends with {0}. */
extern const loom_op_case *const loom_case_families[];
extern const char *const loom_case_family_names[];

#endif
