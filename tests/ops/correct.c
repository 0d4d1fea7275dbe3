/* tests/ops/correct.c — op cases: correct_count. The logits are multiples of
 * 1/8 in [-3, 3] (exact in every dtype, so ties stay ties and the count is
 * the same in f16 and bf16 as in f64); most targets are the row's first
 * maximum (they count), the others random (a miss, or a hit by chance).
 * Cases: small and wide rows, ignored rows (-100), explicit ties (the first
 * maximum wins), more rows than a work-group (300), one class, and logits
 * that are an intermediate (a + b, at an offset in the plan's memory). */
#include <stdlib.h>

#include "cases.h"

/* A (N, C) constant of dtype dt: multiples of 1/8 in [-3, 3] from a seeded
 * Philox stream; vals (N * C doubles) gets the values. */
static loom_tensor *eighths(loom_graph *g, const char *name, loom_dtype dt, int N, int C, uint32_t salt, double *vals) {
    size_t n = (size_t)N * (size_t)C;
    void *buf = malloc(n * loom_dtype_size(dt));
    if (!buf) return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t w[4];
        loom_philox(777, salt, (uint64_t)i, w);
        vals[i] = ((int)(w[0] % 49u) - 24) / 8.0;
    }
    loom_convert(vals, LOOM_F64, buf, dt, n);
    loom_tensor *t = loom_constant(g, name, dt, TC_DIMS(N, C), buf);
    free(buf);
    return t;
}

/* targets: the row's first maximum for rows i % 3 != 2, a random class for
 * the others; rows 1 and 4 -100 when `ignored` */
static loom_tensor *targets(loom_graph *g, const double *x, int N, int C, bool ignored) {
    int32_t *v = malloc((size_t)N * sizeof *v);
    if (!v) return NULL;
    for (int i = 0; i < N; i++) {
        const double *r = x + (size_t)i * (size_t)C;
        int best = 0;
        for (int c = 1; c < C; c++)
            if (r[c] > r[best]) best = c;
        uint32_t w[4];
        loom_philox(778, 1, (uint64_t)i, w);
        v[i] = i % 3 != 2 ? best : (int32_t)(w[0] % (uint32_t)C);
        if (ignored && (i == 1 || i == 4)) v[i] = -100;
    }
    loom_tensor *t = loom_constant(g, "targets", LOOM_I32, 1, (const int64_t[]){N}, v);
    free(v);
    return t;
}

/* variants: 0 (8,3)  1 (8,10) rows 1 and 4 ignored  2 (300,7)  3 (5,1)  4 (6,5) of a + b */
static loom_tensor *counted(loom_graph *g, loom_dtype dt, int v) {
    static const int N[] = {8, 8, 300, 5, 6}, C[] = {3, 10, 7, 1, 5};
    double *x = malloc(2 * (size_t)N[v] * (size_t)C[v] * sizeof *x);
    if (!x) return NULL;
    loom_tensor *logits = eighths(g, "logits", dt, N[v], C[v], (uint32_t)(20 + v), x);
    if (v == 4) {
        /* a + b: the values stay multiples of 1/8 below 8 in magnitude (exact) */
        double *y = x + (size_t)N[v] * (size_t)C[v];
        loom_tensor *b = eighths(g, "b", dt, N[v], C[v], 30, y);
        for (int i = 0; i < N[v] * C[v]; i++) x[i] += y[i];
        logits = loom_add(g, logits, b);
    }
    loom_tensor *t = targets(g, x, N[v], C[v], v == 1);
    free(x);
    return loom_correct_count(g, logits, t);
}

/* explicit ties: rows {1,3,3,0} t 1 (counts: the first of the equal maxima),
 * {2,2,2,2} t 0 (counts), {0,5,1,5} t 3 (does not: 1 comes first),
 * {-1,-2,-3,-1} t 0 (counts), {0,0,1,0} t 7 (out of range: never counts) */
static loom_tensor *ties(loom_graph *g, loom_dtype dt, int v) {
    (void)v;
    static const double x[20] = {1, 3, 3, 0, 2, 2, 2, 2, 0, 5, 1, 5, -1, -2, -3, -1, 0, 0, 1, 0};
    static const int32_t t[5] = {1, 0, 3, 0, 7};
    unsigned char buf[20 * 8];
    loom_convert(x, LOOM_F64, buf, dt, 20);
    loom_tensor *logits = loom_constant(g, "logits", dt, TC_DIMS(5, 4), buf);
    return loom_correct_count(g, logits, loom_constant(g, "targets", LOOM_I32, 1, (const int64_t[]){5}, t));
}

const loom_op_case loom_cases_correct[] = {
    {"correct_count (8,3)", counted, 0, 0, TC_NO_GRADCHECK},
    {"correct_count (8,10) ignore -100", counted, 1, 0, TC_NO_GRADCHECK},
    {"correct_count (300,7)", counted, 2, 0, TC_NO_GRADCHECK},
    {"correct_count (5,1)", counted, 3, 0, TC_NO_GRADCHECK},
    {"correct_count of a + b (6,5)", counted, 4, 0, TC_NO_GRADCHECK},
    {"correct_count ties (5,4)", ties, 0, 0, TC_NO_GRADCHECK},
    {0},
};
