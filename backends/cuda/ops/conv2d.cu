/* backends/cuda/ops/conv2d.cu — conv2d, conv2d_grad_input and
 * conv2d_grad_weight (parameters: core/ops/conv2d.c): im2col / col2im
 * kernels (a port of backends/opencl/kernels/conv2d.cl) around the cuBLAS
 * batched GEMM (ops/gemm.cuh), the same decomposition as
 * backends/opencl/ops/conv2d.c. Every image and group goes in one GEMM
 * description (batch (image, group)); cuDNN is not used (yet).
 *
 *   conv2d:      col (N, G, K, P) = im2col(x); y[n, g] (Og, P) = w_g (Og, K) col[n, g] (K, P) + bias
 *                (1x1, stride 1, no padding: x is the column matrix, no im2col)
 *   grad_input:  col (N, G, K, P) f32 = w_g^T (K, Og) dy[n, g] (Og, P); dx = col2im(col), a gather
 *   grad_weight: col (G, K, N*P) = im2col(x); dyp (O, N*P) = dy permuted;
 *                part[n] (O, K) f32 = dyp_g[:, image n] col_g[:, image n]^T; dw = sum over n of part[n]
 * with K = C/groups*KH*KW, P = OH*OW, rows k = (c*KH + kh)*KW + kw as
 * backends/cpu/ops/conv2d.c.
 *
 * Workspace: per node (loom__cu_scratch, freed with the plan): N*C*KH*KW*P
 * elements of the storage type (f32 for grad_input), plus N*O*P for
 * grad_weight's permuted dy and N*O*K f32 for its per-image products. */
#include "gemm.cuh"

typedef loom__conv_geom geom;

/* g: N, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw, G, Cg, column strides of image n, group g, row k */
typedef loom__cu_tab<19> cgeom;

/* col[n*g16 + gr*g17 + k*g18 + p] = x[n, gr*Cg + c, i*sh - ph + kh*dh, j*sw - pw + kw*dw] or 0 in the padding;
 * one thread per (n, gr, k, p), p fastest */
template <typename T>
__global__ void conv_im2col(const T *x, T *col, cgeom g, int64_t total) {
    int64_t id = gid1();
    if (id >= total) return;
    const int64_t *v = g.v;
    int64_t KH = v[4], KW = v[5], OW = v[7], P = v[6] * OW, K = v[15] * KH * KW;
    int64_t p = id % P, r = id / P, k = r % K, r2 = r / K, gr = r2 % v[14], n = r2 / v[14];
    int64_t c = k / (KH * KW), kh = k / KW % KH, kw = k % KW, i = p / OW, j = p % OW;
    int64_t ih = i * v[8] - v[10] + kh * v[12], iw = j * v[9] - v[11] + kw * v[13];
    T val = stf<T>(0.0f);
    if (ih >= 0 && ih < v[2] && iw >= 0 && iw < v[3]) val = x[((n * v[1] + gr * v[15] + c) * v[2] + ih) * v[3] + iw];
    col[n * v[16] + gr * v[17] + k * v[18] + p] = val;
}

/* dx[n, ci, ih, iw] = sum over (kh, kw) with ih = i*sh - ph + kh*dh, iw = j*sw - pw + kw*dw inside the output
 * of col[n*g16 + gr*g17 + k*g18 + i*OW + j] (f32), k from (ci % Cg, kh, kw), gr = ci / Cg;
 * one thread per dx element */
template <typename T>
__global__ void conv_col2im(const float *col, T *dx, cgeom g, int64_t total) {
    int64_t id = gid1();
    if (id >= total) return;
    const int64_t *v = g.v;
    int64_t H = v[2], W = v[3], KH = v[4], KW = v[5], OH = v[6], OW = v[7], sh = v[8], sw = v[9];
    int64_t iw = id % W, ih = id / W % H, r = id / (W * H), ci = r % v[1], n = r / v[1];
    int64_t gr = ci / v[15], c = ci % v[15];
    const float *cp = col + n * v[16] + gr * v[17];
    float acc = 0.0f;
    for (int64_t kh = 0; kh < KH; kh++) {
        int64_t th = ih + v[10] - kh * v[12];
        if (th < 0 || th % sh) continue;
        int64_t i = th / sh;
        if (i >= OH) continue;
        for (int64_t kw = 0; kw < KW; kw++) {
            int64_t tw = iw + v[11] - kw * v[13];
            if (tw < 0 || tw % sw) continue;
            int64_t j = tw / sw;
            if (j >= OW) continue;
            acc += cp[((c * KH + kh) * KW + kw) * v[18] + i * OW + j];
        }
    }
    st(dx, id, acc);
}

/* dyp (O, N, P) = dy (N, O, P) permuted (an exact copy) */
template <typename T>
__global__ void conv_dy_perm(const T *dy, T *dyp, int64_t N, int64_t O, int64_t P) {
    int64_t id = gid1();
    if (id >= N * O * P) return;
    int64_t p = id % P, n = id / P % N, o = id / (P * N);
    dyp[id] = dy[(n * O + o) * P + p];
}

/* dw[i] = sum over s < nparts of part[s*n + i] (f32), one thread per dw element */
template <typename T>
__global__ void conv_sum_parts(const float *part, T *dw, int64_t nparts, int64_t n) {
    int64_t i = gid1();
    if (i >= n) return;
    float acc = 0.0f;
    for (int64_t s = 0; s < nparts; s++) acc += part[s * n + i];
    st(dw, i, acc);
}

static cgeom table(const geom *q, int64_t sn, int64_t sg, int64_t sk) {
    cgeom g = {{q->N, q->C, q->H, q->W, q->KH, q->KW, q->OH, q->OW, q->sh, q->sw, q->ph, q->pw, q->dh, q->dw, q->G,
                q->Cg, sn, sg, sk}};
    return g;
}

/* conv_im2col of x into col with column strides (image, group, row) */
template <typename T>
static loom_status im2col(loom__cu_op *o, const geom *q, const loom_tensor *x, void *col, int64_t sn, int64_t sg,
                          int64_t sk) {
    int64_t total = q->N * q->G * q->K * q->P;
    return loom__cu_launch(o, conv_im2col<T>, loom__cu_grid1d(total), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, x),
                           (T *)col, table(q, sn, sg, sk), total);
}

static bool is_1x1(const geom *q) {
    return q->KH == 1 && q->KW == 1 && q->sh == 1 && q->sw == 1 && q->ph == 0 && q->pw == 0;
}

/* y (N,O,OH,OW) = conv2d(x (N,C,H,W), w (O,Cg,KH,KW)) + bias (O) */
template <typename T>
static loom_status run_fwd(loom__cu_op *o) {
    const loom_tensor *y = o->t, *x = y->src[0], *w = y->src[1];
    geom q = loom__conv_geom_of(y);
    loom_status st;
    /* batch (1, n, g): y[n, g] (Og, P) = w_g (Og, K) @ col[n, g] (K, P) */
    loom__cu_gemm_desc d = {};
    d.batch[0] = 1, d.batch[1] = q.N, d.batch[2] = q.G;
    d.M = q.Og, d.N = q.P, d.K = q.K, d.lda = q.K, d.ldb = q.P, d.ldc = q.P;
    d.a = loom__cu_addr(o->plan, w), d.sa[2] = q.Og * q.K;
    d.c = loom__cu_addr(o->plan, y), d.sc[1] = q.O * q.P, d.sc[2] = q.Og * q.P;
    if (y->nsrc > 2) d.bias = loom__cu_addr(o->plan, y->src[2]), d.sbias[2] = q.Og, d.bias_rs = 1, d.bias_cs = 0;
    if (is_1x1(&q)) { /* x[n, g] (Cg, HW) is the column matrix */
        d.b = loom__cu_addr(o->plan, x), d.sb[1] = q.C * q.P, d.sb[2] = q.Cg * q.P;
    } else {
        void *col;
        if ((st = loom__cu_scratch(o, (size_t)(q.N * q.G * q.K * q.P) * sizeof(T), &col)) != LOOM_OK) return st;
        if ((st = im2col<T>(o, &q, x, col, q.G * q.K * q.P, q.K * q.P, q.P)) != LOOM_OK) return st;
        d.b = col, d.sb[1] = q.G * q.K * q.P, d.sb[2] = q.K * q.P;
    }
    return loom__cu_gemm(o, y->dtype, &d);
}

/* dx (N,C,H,W) = conv2d_grad_input(dy (N,O,OH,OW), w (O,Cg,KH,KW)) */
template <typename T>
static loom_status run_grad_input(loom__cu_op *o) {
    const loom_tensor *dx = o->t, *dy = dx->src[0], *w = dx->src[1];
    geom q = loom__conv_geom_of(dx);
    loom_status st;
    void *col;
    if ((st = loom__cu_scratch(o, (size_t)(q.N * q.G * q.K * q.P) * sizeof(float), &col)) != LOOM_OK) return st;
    /* batch (1, n, g): col[n, g] (K, P) = w_g^T (K, Og) @ dy[n, g] (Og, P), in f32 */
    loom__cu_gemm_desc d = {};
    d.ta = true, d.c_float = true, d.batch[0] = 1, d.batch[1] = q.N, d.batch[2] = q.G;
    d.M = q.K, d.N = q.P, d.K = q.Og, d.lda = q.K, d.ldb = q.P, d.ldc = q.P;
    d.a = loom__cu_addr(o->plan, w), d.sa[2] = q.Og * q.K;
    d.b = loom__cu_addr(o->plan, dy), d.sb[1] = q.O * q.P, d.sb[2] = q.Og * q.P;
    d.c = col, d.sc[1] = q.G * q.K * q.P, d.sc[2] = q.K * q.P;
    if ((st = loom__cu_gemm(o, dx->dtype, &d)) != LOOM_OK) return st;
    int64_t total = loom_tensor_numel(dx);
    return loom__cu_launch(o, conv_col2im<T>, loom__cu_grid1d(total), LOOM__CU_THREADS, 0, (const float *)col,
                           loom__cu_ptr<T>(o, dx), table(&q, q.G * q.K * q.P, q.K * q.P, q.P), total);
}

/* dw (O,Cg,KH,KW) = conv2d_grad_weight(dy (N,O,OH,OW), x (N,C,H,W)) */
template <typename T>
static loom_status run_grad_weight(loom__cu_op *o) {
    const loom_tensor *dw = o->t, *dy = dw->src[0], *x = dw->src[1];
    geom q = loom__conv_geom_of(dw);
    int64_t L = q.N * q.P;
    loom_status st;
    void *col, *dyp, *part;
    /* col (G, K, N*P): image n's columns at n*P of each row */
    if ((st = loom__cu_scratch(o, (size_t)(q.G * q.K * L) * sizeof(T), &col)) != LOOM_OK) return st;
    if ((st = im2col<T>(o, &q, x, col, q.P, q.K * L, L)) != LOOM_OK) return st;
    /* dyp (O, N*P) = dy (N, O, P) permuted */
    if ((st = loom__cu_scratch(o, (size_t)(q.O * L) * sizeof(T), &dyp)) != LOOM_OK) return st;
    if ((st = loom__cu_launch(o, conv_dy_perm<T>, loom__cu_grid1d(q.O * L), LOOM__CU_THREADS, 0, loom__cu_ptr<T>(o, dy),
                              (T *)dyp, q.N, q.O, q.P)) != LOOM_OK)
        return st;
    /* one product per image, then a sum over the images (as the OpenCL
     * backend: P-term products added over N stay within ~1e-6 of the CPU's
     * blocked sums, one N*P-term f32 sum would not):
     * batch (1, n, g): part[n, g] (Og, K) = dyp_g[:, n*P:(n+1)*P] @ col_g[:, n*P:(n+1)*P]^T */
    if ((st = loom__cu_scratch(o, (size_t)(q.N * q.O * q.K) * sizeof(float), &part)) != LOOM_OK) return st;
    loom__cu_gemm_desc d = {};
    d.tb = true, d.c_float = true, d.batch[0] = 1, d.batch[1] = q.N, d.batch[2] = q.G;
    d.M = q.Og, d.N = q.K, d.K = q.P, d.lda = L, d.ldb = L, d.ldc = q.K;
    d.a = dyp, d.sa[1] = q.P, d.sa[2] = q.Og * L;
    d.b = col, d.sb[1] = q.P, d.sb[2] = q.K * L;
    d.c = part, d.sc[1] = q.O * q.K, d.sc[2] = q.Og * q.K;
    if ((st = loom__cu_gemm(o, dw->dtype, &d)) != LOOM_OK) return st;
    return loom__cu_launch(o, conv_sum_parts<T>, loom__cu_grid1d(q.O * q.K), LOOM__CU_THREADS, 0, (const float *)part,
                           loom__cu_ptr<T>(o, dw), q.N, q.O * q.K);
}

loom_status loom__cu_conv2d(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_fwd, o); }
loom_status loom__cu_conv2d_grad_input(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_grad_input, o); }
loom_status loom__cu_conv2d_grad_weight(loom__cu_op *o) { return LOOM_CU_DISPATCH(o->t->dtype, run_grad_weight, o); }
