/* loom/graph.h — define-then-run graphs: leaves, op builders, autodiff.
 *
 * defines: loom_graph, loom_tensor, leaf constructors (input, param, state,
 *          constant), the op builders, loom_backward, loom_grad.
 *
 * Builders only record nodes and check shapes; nothing is computed until a
 * plan made from the graph runs (loom/plan.h). A builder that fails returns
 * NULL, records a message naming the op and the shapes on the graph's context,
 * and makes the graph's status sticky: every later builder given a NULL input
 * returns NULL too, so a chain of builders can be checked once with
 * loom_graph_status(). Tensors are owned by their graph and live until
 * loom_graph_destroy. Shapes are row-major, outermost dimension first; images
 * are NCHW.
 */
#ifndef LOOM_GRAPH_H
#define LOOM_GRAPH_H

#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_graph loom_graph;
typedef struct loom_tensor loom_tensor;

/* Options of loom_graph_create; desc may be NULL (seed 0). */
typedef struct loom_graph_desc {
    uint64_t seed; /* base seed for parameter init and dropout; 0 is a valid seed */
} loom_graph_desc;

loom_status loom_graph_create(loom_ctx *ctx, const loom_graph_desc *desc, loom_graph **out);
/* Automatic mixed precision for the ops built from now on: LOOM_F16 or
 * LOOM_BF16 turns it on, LOOM_F32 off (the default). matmul, linear and conv2d
 * then take 16-bit inputs (f32 accumulation); softmax, log_softmax, losses,
 * sum, mean and layer_norm take f32 inputs; add/sub/mul/div meet at the wider
 * dtype; batch_norm's gamma/beta follow x. Each tensor is cast at most once
 * per dtype; f32 parameters stay the f32 master copies (their gradients are
 * f32). loom_backward is unaffected. See core/autocast.c. */
loom_status loom_graph_set_autocast(loom_graph *g, loom_dtype dt);
loom_dtype loom_graph_autocast(const loom_graph *g);
void loom_graph_destroy(loom_graph *g);
/* LOOM_OK, or the status of the first builder that failed. */
loom_status loom_graph_status(const loom_graph *g);
loom_ctx *loom_graph_ctx(const loom_graph *g);
int loom_graph_node_count(const loom_graph *g);

/* ---- tensor queries ---- */
int loom_tensor_ndim(const loom_tensor *t);
int64_t loom_tensor_dim(const loom_tensor *t, int axis); /* negative axis counts from the end */
int64_t loom_tensor_numel(const loom_tensor *t);
loom_dtype loom_tensor_dtype(const loom_tensor *t);
const char *loom_tensor_name(const loom_tensor *t);
/* "[2, 3, 4]" into buf; returns buf. */
char *loom_tensor_shape_str(const loom_tensor *t, char *buf, size_t n);
/* Keep t's value readable after a plan runs (outputs, losses, gradients you
 * want to inspect). Parameters, states and inputs are always readable. */
void loom_keep(loom_tensor *t);

/* ---- leaves ---- */
typedef enum loom_init_kind {
    LOOM_INIT_ZEROS,           /* default */
    LOOM_INIT_ONES,
    LOOM_INIT_CONST,           /* a */
    LOOM_INIT_UNIFORM,         /* U(a, b) */
    LOOM_INIT_NORMAL,          /* N(mean a, std b) */
    LOOM_INIT_KAIMING_UNIFORM, /* gain sqrt(2/(1+a^2)) (a: leaky slope), fan_in */
    LOOM_INIT_KAIMING_NORMAL,
    LOOM_INIT_XAVIER_UNIFORM,  /* gain a (0 means 1) */
    LOOM_INIT_XAVIER_NORMAL
} loom_init_kind;

/* How a parameter or state is initialised (loom_param, loom_state). */
typedef struct loom_init {
    loom_init_kind kind; /* what the values are: constant or drawn; 0 = zeros */
    double a;            /* CONST: the value; UNIFORM: low bound; NORMAL: mean; KAIMING: leaky slope; XAVIER: gain (0 = 1) */
    double b;            /* UNIFORM: high bound; NORMAL: standard deviation; unused by the other kinds */
} loom_init;

/* Data fed by the host before each run (loom_plan_write). */
loom_tensor *loom_input(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims);
/* A trainable parameter, initialised from (graph seed, hash of name) with
 * init (NULL = zeros). requires_grad is true unless frozen. Names must be
 * unique within a graph. */
loom_tensor *loom_param(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims,
                        const loom_init *init);
/* Persistent non-trainable state (batch-norm running statistics). */
loom_tensor *loom_state(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims,
                        const loom_init *init);
/* A constant; data (numel * dtype size bytes) is copied. */
loom_tensor *loom_constant(loom_graph *g, const char *name, loom_dtype dt, int ndim, const int64_t *dims,
                           const void *data);
/* Freeze (requires_grad = false) or unfreeze a parameter. Only before loom_backward. */
loom_status loom_set_requires_grad(loom_tensor *t, bool on);
bool loom_requires_grad(const loom_tensor *t);

/* ---- elementwise (numpy broadcasting) ---- */
loom_tensor *loom_add(loom_graph *g, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_sub(loom_graph *g, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_mul(loom_graph *g, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_div(loom_graph *g, loom_tensor *a, loom_tensor *b);
loom_tensor *loom_scale(loom_graph *g, loom_tensor *x, double s); /* s * x */
loom_tensor *loom_relu(loom_graph *g, loom_tensor *x);
loom_tensor *loom_leaky_relu(loom_graph *g, loom_tensor *x, double slope);
loom_tensor *loom_gelu(loom_graph *g, loom_tensor *x); /* exact (erf) form, like torch's default */
loom_tensor *loom_silu(loom_graph *g, loom_tensor *x);
loom_tensor *loom_tanh(loom_graph *g, loom_tensor *x);
loom_tensor *loom_sigmoid(loom_graph *g, loom_tensor *x);
loom_tensor *loom_cast(loom_graph *g, loom_tensor *x, loom_dtype to);

/* ---- linear algebra ---- */
/* a: (..., M, K) (or (..., K, M) if trans_a), b: (..., K, N) (or (..., N, K)).
 * Batch dims broadcast. Result (..., M, N). */
loom_tensor *loom_matmul(loom_graph *g, loom_tensor *a, loom_tensor *b, bool trans_a, bool trans_b);
/* x: (..., IN), w: (OUT, IN), bias: (OUT) or NULL -> (..., OUT). */
loom_tensor *loom_linear(loom_graph *g, loom_tensor *x, loom_tensor *w, loom_tensor *bias);

/* ---- attention ---- */
/* Scaled dot-product attention: q (B, H, Tq, D), k and v (B, H, Tk, D) ->
 * (B, H, Tq, D) = softmax(q k^T * scale + mask) v, the softmax over the keys.
 * causal: mask = -inf where key index j > query index i, 0 elsewhere: torch's
 * scaled_dot_product_attention(is_causal=True) triangle, aligned at the
 * top-left corner whatever Tq and Tk are (row i sees keys 0..i). scale 0 =
 * 1/sqrt(D). Computed without the whole (Tq, Tk) score matrix (an online
 * softmax over blocks of keys); the backward pass recomputes the scores.
 * q, k, v share a float dtype; with autocast on they are cast to the 16-bit
 * dtype while the softmax statistics stay f32. */
loom_tensor *loom_attention(loom_graph *g, loom_tensor *q, loom_tensor *k, loom_tensor *v, bool causal, double scale);
/* x (..., Tq, Tk) -> x's shape: -inf where key index j > query index i (the
 * triangle of loom_attention's causal mask), x elsewhere; the gradient passes
 * where x passes and is 0 elsewhere. */
loom_tensor *loom_causal_mask(loom_graph *g, loom_tensor *x);

/* ---- softmax and losses (over the last axis) ---- */
loom_tensor *loom_softmax(loom_graph *g, loom_tensor *x);
loom_tensor *loom_log_softmax(loom_graph *g, loom_tensor *x);
/* logits (N, C), targets i32 (N) -> scalar mean loss over targets != ignore_index.
 * label_smoothing eps in [0,1): the target class gets 1-eps+eps/C, others eps/C. */
loom_tensor *loom_cross_entropy(loom_graph *g, loom_tensor *logits, loom_tensor *targets, double label_smoothing,
                                int ignore_index);
/* mean((a - b)^2) -> scalar. */
loom_tensor *loom_mse(loom_graph *g, loom_tensor *a, loom_tensor *b);
/* logits (N, C) float, targets i32 (N) -> f32 scalar: the number of rows whose
 * argmax (the first index of the row's maximum, as torch.argmax) equals the
 * target. Rows whose target is outside [0, C) (an ignore_index such as -100)
 * never count. Accuracy counted on the device: reading it back is 4 bytes
 * instead of the logits. No gradient. Exact up to 2^24 rows. */
loom_tensor *loom_correct_count(loom_graph *g, loom_tensor *logits, loom_tensor *targets);

/* ---- convolution and pooling (NCHW) ---- */
typedef struct loom_conv2d_desc {
    int stride_h;               /* vertical stride, >= 0; 0 = 1 */
    int stride_w;               /* horizontal stride, >= 0; 0 = 1 */
    int pad_h;                  /* zero rows added above and below, >= 0 */
    int pad_w;                  /* zero columns added left and right, >= 0 */
    int dilation_h;             /* vertical kernel dilation, >= 0; 0 = 1 */
    int dilation_w;             /* horizontal kernel dilation, >= 0; 0 = 1 */
    int groups;                 /* 0 = 1 */
} loom_conv2d_desc;
/* x (N, C, H, W), w (O, C/groups, KH, KW), bias (O) or NULL. desc NULL = defaults. */
loom_tensor *loom_conv2d(loom_graph *g, loom_tensor *x, loom_tensor *w, loom_tensor *bias,
                         const loom_conv2d_desc *desc);

/* Window of max and average pooling (torch semantics, floor mode):
 * OH = (H + 2 pad_h - kernel_h) / stride_h + 1, the same for W. */
typedef struct loom_pool2d_desc {
    int kernel_h;           /* window height, >= 1 */
    int kernel_w;           /* window width, >= 1 */
    int stride_h;           /* vertical stride, >= 0; 0 = kernel_h */
    int stride_w;           /* horizontal stride, >= 0; 0 = kernel_w */
    int pad_h;              /* rows added above and below, 0 to kernel_h / 2 (max pool: -inf, avg pool: zeros) */
    int pad_w;              /* columns added left and right, 0 to kernel_w / 2 */
    int exclude_pad;        /* avg pool: divide by the window's elements inside x only
                             (torch count_include_pad=False); 0 = torch's default */
} loom_pool2d_desc;
loom_tensor *loom_max_pool2d(loom_graph *g, loom_tensor *x, const loom_pool2d_desc *desc);
loom_tensor *loom_avg_pool2d(loom_graph *g, loom_tensor *x, const loom_pool2d_desc *desc);
/* torch's adaptive_avg_pool2d bins; (1,1) is global average pooling. */
loom_tensor *loom_adaptive_avg_pool2d(loom_graph *g, loom_tensor *x, int out_h, int out_w);
loom_tensor *loom_global_avg_pool2d(loom_graph *g, loom_tensor *x); /* (N,C,H,W) -> (N,C,1,1) */

/* ---- normalisation and regularisation ---- */
typedef struct loom_batch_norm_desc {
    loom_tensor *gamma;        /* (C) scale, or NULL */
    loom_tensor *beta;         /* (C) shift, or NULL */
    loom_tensor *running_mean; /* (C) state, given with running_var, or NULL */
    loom_tensor *running_var;  /* (C) state, given with running_mean, or NULL */
    bool eval;       /* normalise with the running statistics (false: training mode) */
    double momentum; /* running statistics r = (1 - momentum) r + momentum v; 0 = 0.1 (torch) */
    double eps;      /* added to the variance; 0 = 1e-5 (torch) */
} loom_batch_norm_desc;
/* x (N, C, ...). Training mode: normalise with batch statistics (biased
 * variance) and, if running statistics are given, update them with momentum
 * (unbiased variance), like torch. eval: normalise with the running
 * statistics. desc NULL = training mode, no affine, no running statistics. */
loom_tensor *loom_batch_norm(loom_graph *g, loom_tensor *x, const loom_batch_norm_desc *desc);
/* Normalise over the last `norm_dims` axes; gamma/beta have those axes' shape, or NULL. */
loom_tensor *loom_layer_norm(loom_graph *g, loom_tensor *x, int norm_dims, loom_tensor *gamma, loom_tensor *beta,
                             double eps);
/* Inverted dropout with probability p. The mask comes from Philox keyed by
 * (graph seed, this node's stream, plan step), so it changes every step and is
 * recomputed, not stored, for the backward pass. p = 0 returns x. */
loom_tensor *loom_dropout(loom_graph *g, loom_tensor *x, double p);
/* weight (V, D), idx i32 (...) -> (..., D). */
loom_tensor *loom_embedding(loom_graph *g, loom_tensor *weight, loom_tensor *idx);
/* Device augmentation (the loader's --augment-on device): x u8 (N, H, W, C)
 * images, prm i32 (N, 32) per-sample parameters (source row / column offset
 * and step of the crop and flips, the window read, the ColorJitter's
 * adjustments in their order and their factors, a nearest RandomAffine's
 * inverse matrix and fill; layout LOOM_G_AUG_* in core/params.h), lut f32
 * (C, 256) ToTensor + Normalize per channel -> (N, C, oh, ow) in dt
 * (oh ow <= 2^24); pixels outside the source read `fill` (0..255). affine:
 * the rows may apply the RandomAffine (computed in double: Vulkan needs
 * shaderFloat64, OpenCL cl_khr_fp64, else LOOM_ERR_UNSUPPORTED). The CPU's
 * bits on every backend whose f32 division is correctly rounded (hue
 * divides); no gradient (a data op). */
loom_tensor *loom_augment_u8(loom_graph *g, loom_tensor *x, loom_tensor *prm, loom_tensor *lut, loom_dtype dt,
                             int64_t oh, int64_t ow, int fill, bool affine);
/* Device resize (the loader's leading Resize, loader/device_aug.c): x u8
 * (N, H, W, C), taps i32 (oh + ow, 2 + S): rows 0..oh-1 the height axis,
 * then ow rows of the width axis, each (first input, count <= S, count
 * fixed-point weights with LOOM_K_RESIZE_FIX_BITS fraction bits) -> u8
 * (N, oh, ow, C): a width pass then a height pass, each an integer sum
 * started at half and rounded to u8, as loom_tf_resize (its taps give its
 * bits on every backend). Out-of-range taps are clamped into x; no
 * gradient (a data op). */
loom_tensor *loom_resize_u8(loom_graph *g, loom_tensor *x, loom_tensor *taps, int64_t oh, int64_t ow);

/* ---- shape ---- */
/* One dim may be -1 (inferred). The result shares x's memory. */
loom_tensor *loom_reshape(loom_graph *g, loom_tensor *x, int ndim, const int64_t *dims);
/* Flatten axes [start, end] (inclusive, negative counts from the end) into one. */
loom_tensor *loom_flatten(loom_graph *g, loom_tensor *x, int start, int end);
/* out.dims[i] = x.dims[perm[i]] */
loom_tensor *loom_permute(loom_graph *g, loom_tensor *x, const int *perm);
loom_tensor *loom_transpose(loom_graph *g, loom_tensor *x, int axis0, int axis1);
/* Concatenate n (<= LOOM_MAX_CONCAT) tensors along axis. */
#define LOOM_MAX_CONCAT 8
loom_tensor *loom_concat(loom_graph *g, loom_tensor *const *xs, int n, int axis);
/* Elements [start, end) along axis (negative values count from the end). */
loom_tensor *loom_slice(loom_graph *g, loom_tensor *x, int axis, int64_t start, int64_t end);
/* Reduce over the axes whose bit is set in axes_mask (bit i = axis i; 0 = all). */
loom_tensor *loom_sum(loom_graph *g, loom_tensor *x, unsigned axes_mask, bool keepdim);
loom_tensor *loom_mean(loom_graph *g, loom_tensor *x, unsigned axes_mask, bool keepdim);
/* Broadcast x to the given shape (numpy rules). */
loom_tensor *loom_expand(loom_graph *g, loom_tensor *x, int ndim, const int64_t *dims);
/* A tensor of the given shape filled with value. */
loom_tensor *loom_fill(loom_graph *g, loom_dtype dt, int ndim, const int64_t *dims, double value);

/* ---- autodiff ---- */
/* Append the nodes computing d loss / d t for every tensor t on a path from a
 * requires_grad leaf to loss (a tensor with one element). Call once per graph. */
loom_status loom_backward(loom_graph *g, loom_tensor *loss);
/* The gradient of t after loom_backward (NULL if t does not need one). */
loom_tensor *loom_grad(const loom_tensor *t);

/* ---- op table ---- */
int loom_op_count(void);
const char *loom_op_name(int op);

#ifdef __cplusplus
}
#endif
#endif
