/* core/impl.h — library-private structures shared by core and backends.
 *
 * defines: struct loom_ctx, loom_graph, loom_tensor (a graph node), the op
 *          enum and op table, error helpers, LOOM__ASSERT, node constructors
 *          used by builders and backward rules.
 */
#ifndef LOOM_CORE_IMPL_H
#define LOOM_CORE_IMPL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"

/* ---- ops ---- */
#define LOOM__OPF_INPLACE 1u
#define LOOM__OPF_VIEW 2u
#define LOOM__OPF_EFFECT 4u
#define LOOM__OPF_REPRO 8u /* reproducible mode: same bits on every backend (core/repro.h) */

typedef enum loom__op {
    LOOM__OP_LEAF = -1, /* inputs, params, states, constants */
#define LOOM_OP(e, name, bw, fl, ac) LOOM_OP_##e,
#include "ops.def"
#undef LOOM_OP
    LOOM_OP_COUNT
} loom__op;

/* A backward rule: given node y = op(src...) and dy (same shape as y), set
 * dx[i] to the gradient w.r.t. src[i] for each i with loom__needs_grad(src[i])
 * (others may be left NULL). dx[i] must have src[i]'s shape and dtype. */
typedef loom_status (*loom__bw_fn)(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx);

typedef struct loom__op_info {
    const char *name;
    loom__bw_fn backward;
    unsigned flags;
} loom__op_info;

extern const loom__op_info loom__ops[LOOM_OP_COUNT];

#define LOOM_OP(e, name, bw, fl, ac) loom_status bw(loom_graph *g, loom_tensor *y, loom_tensor *dy, loom_tensor **dx);
#include "ops.def"
#undef LOOM_OP

/* ---- context ---- */
struct loom_ctx {
    int threads;
    int log_level;
    void (*log)(void *user, loom_log_level level, const char *msg);
    void *log_user;
    loom_status last_status;
    char last_error[1024];
    /* a cache one part of the library keeps per context (the loader's resize
     * weights: loader/transforms.c), freed with the context by cache_free */
    void *cache;
    void (*cache_free)(void *cache);
};

/* An on/off switch in the environment (LOOM_CPU_FUSE, LOOM_VULKAN_STAGING, ...):
 * 1 for "1", 0 for "0", -1 unset or empty (the default), -2 anything else.
 * loom__env_switches_check: LOOM_ERR_INVALID_ARG naming the first of names[n]
 * set to anything else (backends check theirs when created). */
int loom__env_switch(const char *name);
loom_status loom__env_switches_check(loom_ctx *ctx, const char *const *names, int n);

/* Record a failure on ctx and return st. fmt may be NULL. */
loom_status loom__err(loom_ctx *ctx, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void loom__log(loom_ctx *ctx, loom_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Broken invariants inside the library: abort loudly with file and line. */
#define LOOM__ASSERT(cond)                                                                              \
    do {                                                                                                \
        if (!(cond)) {                                                                                  \
            fprintf(stderr, "loom: internal error at %s:%d: assertion `%s` failed\n", __FILE__, __LINE__, \
                    #cond);                                                                             \
            abort();                                                                                    \
        }                                                                                               \
    } while (0)

void *loom__xmalloc(size_t n); /* NULL on failure */
double loom__now_s(void);       /* monotonic clock, seconds */
/* Whether a state tensor's name is one the optimizer creates
 * ("<param>.momentum_buffer", ".exp_avg", ".exp_avg_sq", ".grad_accum"). */
bool loom__is_optimizer_state(const char *name);
void *loom__xcalloc(size_t n, size_t sz);

/* ---- graph ---- */
typedef enum loom__leaf_kind {
    LOOM__NOT_LEAF = 0,
    LOOM__INPUT,
    LOOM__PARAM,
    LOOM__STATE,
    LOOM__CONST
} loom__leaf_kind;

#define LOOM_MAX_SRC 8
#define LOOM__NPARAM 12
#define LOOM__NFPARAM 4

struct loom_tensor {
    loom_graph *g;
    int id;        /* index in g->nodes; also the execution order */
    int op;        /* loom__op, or LOOM__OP_LEAF */
    loom__leaf_kind leaf;
    loom_dtype dtype;
    int ndim;
    int64_t dims[LOOM_MAX_DIMS];
    int nsrc;
    loom_tensor *src[LOOM_MAX_SRC];
    int64_t p[LOOM__NPARAM];  /* integer op parameters, meaning per op (see core/ops/<family>.c) */
    double f[LOOM__NFPARAM];  /* float op parameters */
    bool requires_grad;
    bool keep;
    bool effect;              /* writes persistent srcs: never removed (op flag EFFECT; a builder may clear it) */
    loom_tensor *grad;        /* set by loom_backward */
    char name[64];
    loom_init init;           /* params and states */
    void *data;               /* constants: owned copy */
    loom_tensor *amp_cast[3]; /* autocast's cached casts of this tensor to f32, f16, bf16 (core/autocast.c) */
};

struct loom_graph {
    loom_ctx *ctx;
    uint64_t seed;
    loom_status status; /* sticky: first failure */
    char error[1024];   /* its message */
    loom_tensor **nodes;
    int n, cap;
    uint64_t next_stream; /* dropout streams */
    bool has_backward;
    int backward_start;       /* id of the first node loom_backward added */
    loom_dtype autocast;      /* F32 = off, else the 16-bit dtype of the policy (core/autocast.c) */
    struct {                  /* dynamic loss scaling (core/ops/amp.c); scale NULL = off */
        loom_tensor *scale, *tracker, *skipped;
        double growth, backoff;
        int64_t interval;
    } amp;
};

/* Append a node (op, dtype, shape, srcs). Sets requires_grad from the srcs.
 * Returns NULL (status recorded) on allocation failure. */
loom_tensor *loom__node(loom_graph *g, int op, loom_dtype dt, int ndim, const int64_t *dims, int nsrc,
                        loom_tensor *const *src);
/* Autocast (core/autocast.c): with autocast on, replace srcs[0..n) of a node
 * of op `op` by their policy casts (no-op when off or for other ops). */
void loom__autocast(loom_graph *g, int op, int n, loom_tensor **srcs);
/* frozen parameters kept in 16 bits only (core/autocast.c); returns the count */
int loom__autocast_frozen_lowp(loom_graph *g, const loom_graph *like, int64_t *saved_bytes);
/* Record a builder failure on the graph (sticky) and its context; returns NULL. */
loom_tensor *loom__fail(loom_graph *g, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* True if the builder may go on: graph not failed and every listed input non-NULL
 * (optional inputs are passed as the count excluding them). */
bool loom__ok(loom_graph *g, int n, ...);
int64_t loom__numel(int ndim, const int64_t *dims);
size_t loom__nbytes(const loom_tensor *t);
/* "[2, 3]" formatting into a caller buffer. */
char *loom__shape_str(int ndim, const int64_t *dims, char *buf, size_t n);
bool loom__same_shape(const loom_tensor *a, const loom_tensor *b);
/* numpy broadcast of two shapes; false if incompatible. */
bool loom__broadcast_shape(const loom_tensor *a, const loom_tensor *b, int *ndim, int64_t *dims);
/* Element strides of x (contiguous) along each axis of y when x broadcasts
 * to y's shape: 0 on broadcast axes. s has y->ndim entries. */
void loom__broadcast_strides(const loom_tensor *x, const loom_tensor *y, int64_t *s);
/* Reduce grad (broadcast result shape) back to the shape of `like` by summing
 * over broadcast axes. Returns grad itself if shapes already match. */
loom_tensor *loom__sum_to(loom_graph *g, loom_tensor *grad, const loom_tensor *like);
static inline bool loom__needs_grad(const loom_tensor *t) { return t && t->requires_grad; }
/* Normalise a possibly negative axis; -1 if out of range. */
int loom__axis(int axis, int ndim);

/* Fisher-Yates shuffle of v[0..n) with Philox draws keyed by (seed, stream):
 * the same order on every machine; modulo bias below 2^-32 * n. */
void loom__shuffle(int64_t *v, int64_t n, uint64_t seed, uint64_t stream);
/* The stream of an epoch's sample order (+ epoch): "SHUFF", shared by the
 * batch iterator and the shuffled sampler so they give the same order. */
#define LOOM__STREAM_EPOCH_ORDER 0x5348554646000000ull

/* Sizes of one convolution node (conv2d or either gradient): x (N,C,H,W),
 * w (O,Cg,KH,KW), y (N,O,OH,OW), stride/pad/dilation, groups G;
 * K = Cg*KH*KW, P = OH*OW. Parameters as core/ops/conv2d.c stores them. */
typedef struct loom__conv_geom {
    int64_t N, C, H, W, O, KH, KW, OH, OW;
    int64_t sh, sw, ph, pw, dh, dw, G, Cg, Og, K, P;
} loom__conv_geom;
loom__conv_geom loom__conv_geom_of(const loom_tensor *t);
/* a and b are the same convolution's sizes (the GPU backends' weight
 * gradient finds its forward's column buffer by them) */
bool loom__conv_geom_same(const loom__conv_geom *a, const loom__conv_geom *b);
/* A stride-1, undilated, ungrouped convolution's input gradient q (padding
 * at most KH-1, KW-1; not 1x1 unpadded) as a forward convolution: dx =
 * conv2d(dy, wt, padding KH-1-ph, KW-1-pw), wt (C, O, KH, KW) the weights
 * transposed with both kernel axes reversed; *f its geometry (O channels in,
 * C out, H x W outputs). False when q is not of that kind (the GPU
 * backends' choice, ops/conv2d.c). */
bool loom__conv_gi_as_forward(const loom__conv_geom *q, loom__conv_geom *f);
/* The images per product of a GPU backend's weight gradient (the products of
 * CH images each, then their sum over the N/CH chunks: longer products than
 * one per image, rounding within ~1e-6 where one N*P-term accumulator loses
 * ~1e-4): the largest divisor of N up to 8; 1 in reproducible mode (one
 * product per image, the canonical order of core/repro.h). */
int64_t loom__conv_gw_chunk(int64_t N, bool reproducible);
/* the largest divisor of N up to max (at least 1): images per chunk */
int64_t loom__conv_chunk(int64_t N, int64_t max);
/* The geometry table of the GPU backends' implicit-GEMM convolutions (the
 * columns of x read inside the GEMM: kernels/gemm.cl's conv_col,
 * shaders/gemm.comp's): H, W, KH, KW, OW, sh, sw, ph, pw, dh, dw, P = OH*OW,
 * and the image strides of x (C*H*W) and of dy (O*P). */
#define LOOM__CONV_IMPLICIT_LEN 14
void loom__conv_implicit_table(const loom__conv_geom *q, int64_t t[LOOM__CONV_IMPLICIT_LEN]);

/* A matmul node y as one batched GEMM (core/ops/matmul.c), for the GPU
 * backends: C (M, N) = op(A) op(B) per batch item, row-major with leading
 * dims lda/ldb/ldc; y's batch dims right-aligned in batch[0..2] (1 where
 * absent) with A's, B's and C's element strides (0 = broadcast). When B is
 * one matrix shared by every batch item and A is not transposed, the batch
 * is folded into M (batch all 1). */
typedef struct loom__mm_geom {
    int64_t M, N, K, lda, ldb, ldc;
    int64_t batch[3], sa[3], sb[3], sc[3];
} loom__mm_geom;
loom__mm_geom loom__matmul_geom_of(const loom_tensor *y);

/* A sum/mean node y over x = src[0] (core/ops/reduce.c), as the GPU
 * backends' geometry table: g[23] = {nkeep, kept dims[5], their strides in
 * x[5], nred, reduced dims[5], their strides[5], count}; returns the count of
 * reduced elements per output. */
int64_t loom__reduce_table(const loom_tensor *y, int64_t g[23]);
/* The GPU backends' chunked form of that reduction (their reduce_flat and
 * reduce_parts kernels): when the reduced axes are x's trailing ones (each
 * output's values one contiguous run), the number S of chunks a run splits
 * into (runs of up to 16384 values per chunk, at most 64 chunks) and
 * *chunk, the values per chunk; 0 when the runs are not contiguous. */
int64_t loom__reduce_chunks(const int64_t g[23], int64_t *chunk);

/* On-disk caches of the GPU backends (core/cache.c): the folder is $env
 * ("off" = none: out is ""), else $XDG_CACHE_HOME/loom/<sub>, else
 * ~/.cache/loom/<sub>; mkdir -p; a whole file (malloc'd, NULL if absent or
 * empty). */
void loom__cache_dir(const char *env, const char *sub, char *out, size_t n);
bool loom__mkdirs(const char *dir);
unsigned char *loom__read_file(const char *path, size_t *n);

/* Initial values of a param/state (numel doubles) from its init and name. */
loom_status loom__init_values(const loom_tensor *t, uint64_t seed, double *out);

/* Device memory, defined by each backend. */
typedef struct loom__buffer loom__buffer;

/* A graph compiled in segments (core/plan.c) so the host can act between
 * them (data parallel: gradient exchanges during the backward pass and
 * before the optimizer's updates). bounds: the first node id of each
 * segment after the first (nbounds >= 1, increasing); plans receives
 * nbounds + 1 plans, run in order for one step. plans[0] owns every
 * persistent buffer; the others take everything outside their range from
 * it. What a segment reads of an earlier one lives in buffers of its own,
 * which loom__plan_io on plans[0] reads and writes (also inputs,
 * parameters, states and kept tensors). Destroy plans[0] last. */
loom_status loom__plan_compile_segments(loom_graph *g, loom_backend *be, const int *bounds, int nbounds, loom_plan **plans);
loom_status loom__plan_io(loom_plan *p, const loom_tensor *t, void *data, size_t bytes, bool write);

#endif
