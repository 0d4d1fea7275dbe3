/* backends/opencl/ops/gemm.h — the batched GEMM launcher shared by the
 * matmul and conv2d families (implemented in ops/matmul.c; kernels in
 * kernels/gemm.cl, which documents the tiling and the batch table, and
 * kernels/gemm_reg.cl), and its kernel variants (ops/gemm_select.c). */
#ifndef LOOM_OPENCL_GEMM_H
#define LOOM_OPENCL_GEMM_H

#include "../opencl.h"

/* An operand: a buffer and an element offset into it. */
typedef struct loom__cl_mat {
    cl_mem mem;
    uint64_t off;
} loom__cl_mat;

/* C[b] (M, N) = op(A[b]) x op(B[b]) [+ bias], b over batch[0] x batch[1] x
 * batch[2] (unused dims 1) with per-operand element strides sa/sb/sc/sbias
 * (0 = broadcast). A, B, bias: storage dtype dt; C: dt, or float when
 * c_float. bias (mem NULL = none) at bias_rs * row + bias_cs * col. */
typedef struct loom__cl_gemm_desc {
    bool ta, tb, c_float;
    int64_t M, N, K, lda, ldb, ldc;
    int64_t batch[3], sa[3], sb[3], sc[3], sbias[3];
    int64_t bias_rs, bias_cs;
    loom__cl_mat a, b, c, bias;
    /* set: implicit GEMM (gemm.cl's conv_col; the tiled form on any device):
     * nn (C of the storage type): B is a convolution's input read as its
     * columns (the forward); nt with float C: A is dy (images, O, P) read as
     * (O, images * P), B^T the input's columns (the weight gradient).
     * conv: loom__conv_implicit_table's (column q is image q / P) */
    const int64_t *conv;
    /* cseg > 0: C's columns in segments of cseg, segment s starting csegs * s
     * elements into each row's span (column n at n / cseg * csegs + n % cseg):
     * a convolution's (O, N*P) product stored as y (N, O, P). Forms nn and tn
     * (A^T), not with conv. */
    int64_t cseg, csegs;
} loom__cl_gemm_desc;

/* the length of the GEMM kernels' batch table (kernels/gemm.cl documents it) */
#define LOOM__CL_GEMM_TABLE 19

/* GEMM kernel variants (ops/gemm_select.c); 0 = not chosen yet */
enum { LOOM__CL_GEMM_TILED = 1, LOOM__CL_GEMM_REG16, LOOM__CL_GEMM_REG8, LOOM__CL_GEMM_NVARIANT };

typedef struct loom__cl_gemm_variant {
    const char *name;   /* as LOOM_CL_GEMM spells it */
    const char *suffix; /* of the kernel names: gemm_nn<suffix>, gemm_tn_cf<suffix>, ... */
    int wg;             /* work-group: wg x wg items */
    int tm, tn;         /* tiled: C's tile per work-group */
    int vw;             /* register variants: vector width (0 for tiled) */
    int rm, rn;         /* outer form (nn, tn, tt): rm rows x rn vectors per item */
    int di, dj;         /* dot form (nt): di x dj outputs per item */
    int nt;             /* tiles per item, down the rows */
} loom__cl_gemm_variant;

/* The global and local sizes of one launch. */
typedef struct loom__cl_gemm_geom {
    size_t global[2], local[2];
} loom__cl_gemm_geom;

const loom__cl_gemm_variant *loom__cl_gemm_variant_of(int v);
/* the variant called name, 0 if none */
int loom__cl_gemm_variant_by_name(const char *name);
/* The tile sizes as build options (-DGEMM_R16_RM=... for kernels/gemm_reg.cl). */
void loom__cl_gemm_build_opts(const loom__cl *cl, char *out, size_t n);
/* The variant this device runs (chosen at first call: see gemm_select.c). */
loom_status loom__cl_gemm_choose(loom__cl *cl, int *out);
/* The launch of variant var for C (M, N) x nb batches, transposes ta/tb. */
loom__cl_gemm_geom loom__cl_gemm_geometry(const loom__cl_gemm_variant *var, bool ta, bool tb, int64_t M, int64_t N,
                                          int64_t nb);

/* One launch recorded on the node (counts against LOOM__CL_MAX_LAUNCH). */
loom_status loom__cl_gemm(loom__cl_op *o, loom_dtype dt, const loom__cl_gemm_desc *d);

/* A tensor as an operand. */
loom__cl_mat loom__cl_mat_t(const loom__cl_op *o, const loom_tensor *t);

#endif
