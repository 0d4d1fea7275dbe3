/* loader/pipeline_impl.h — library-private pieces shared by the files of the
 * per-sample transform pipeline: the draws of the random steps
 * (loader/pipeline_draw.c), the step names, RandomCrop's padding and the
 * composed map of a fused run of geometric steps (loader/pipeline_plan.c),
 * used by the executor (loader/pipeline.c) and the spec parser
 * (loader/pipeline_spec.c). */
#ifndef LOOM_PIPELINE_IMPL_H
#define LOOM_PIPELINE_IMPL_H

#include "loader_impl.h"

#define LOOM__TF_ORDER_MAX 16 /* steps one RandomOrder may hold */
#define LOOM__TF_ORDER_SIZED 6 /* of them, steps that change the size (each order of these is planned) */

/* ---- draws (loader/pipeline_draw.c; the stream's layout is described there) */

/* two words: uniform integer in [0, n) (n >= 1, 64-bit modulo) */
int64_t loom__aug_int(loom__aug_rng *r, int64_t n);
/* Fisher-Yates over perm[0..n): n - 1 words */
void loom__aug_perm(loom__aug_rng *r, int *perm, int n);
/* one word, always drawn: true with probability p (0 = 0.5, < 0 = never) */
bool loom__aug_coin(loom__aug_rng *r, double p);
/* a range, {0, 0} = the default (lo, hi) */
void loom__tf_range_or(const double in[2], double lo, double hi, double out[2]);
/* RandomResizedCrop's box on an (H, W) image: top, left, h, w */
void loom__tf_rrc_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, int64_t box[4]);
/* RandomErasing: whether it erases, and the box (top, left, h, w) */
bool loom__tf_erase_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, int64_t box[4]);
/* ColorJitter: the order of the four adjustments and their factors */
void loom__tf_jitter_params(const loom_tf_step *s, loom__aug_rng *r, int order[4], double f[4]);
/* RandomAffine: angle, tx, ty, scale, shear x, shear y */
void loom__tf_affine_params(const loom_tf_step *s, loom__aug_rng *r, int64_t H, int64_t W, double a[6]);

/* ---- planning (loader/pipeline_plan.c) ---------------------------------- */

/* "RandomCrop", ... (messages) */
const char *loom__tf_name(loom_tf_kind k);
/* The padding of a RandomCrop on an (h, w) image: left, top, right, bottom,
 * with pad_if_needed applied as torchvision does (both sides). */
void loom__tf_crop_pads(const loom_tf_step *s, int64_t h, int64_t w, int64_t pad[4]);
/* Resize's output size on an (h, w) image (the plan has checked it). */
void loom__tf_resize_out(loom_ctx *ctx, const loom_tf_step *s, int64_t h, int64_t w, int64_t *oh, int64_t *ow);
/* The end (exclusive) of the fusable run of geometric steps from step i on
 * an (h, w) image. */
int loom__tf_fuse_end(loom_ctx *ctx, const loom_tf_step *steps, int n, int i, int64_t h, int64_t w);

/* Whether step s keeps the image's size whatever it is given (flips,
 * ColorJitter, RandomAffine, a resolved RandomOrder). */
bool loom__tf_keeps_size(const loom_tf_step *s);
/* A RandomOrder whose order is already drawn (loom__tf_resolve): count is
 * minus the original count; it draws the same words and runs nothing. */
#define LOOM__TF_FLAT_MAX 64 /* steps a pipeline with RandomOrder may hold to run fused */
static inline bool loom__tf_resolved(const loom_tf_step *s) { return s->kind == LOOM_TF_RANDOM_ORDER && s->count < 0; }
/* A RandomAffine with nearest interpolation (the fused tail's, which moves
 * pixels without mixing them; it never joins a resampling run). */
static inline bool loom__tf_nearest_affine(const loom_tf_step *s) {
    return s->kind == LOOM_TF_RANDOM_AFFINE && s->nearest;
}
/* The RandomOrders of a parsed spec whose orders would end at different
 * sizes (loom_tf_parse's check): on the input size the steps before fix, or
 * on two large probe sizes when they fix none. */
loom_status loom__tf_check_orders(loom_ctx *ctx, const char *spec, const loom_tf_step *steps, int n);
/* steps[0..n) with every RandomOrder in the order sample rng draws for it on
 * an (h, w) image: the RandomOrder becomes a resolved one and its steps
 * follow in the drawn order (out holds n). rng is not advanced. */
loom_status loom__tf_resolve(loom_ctx *ctx, const loom_tf_step *steps, int n, const loom__aug_rng *rng, int c, int64_t h,
                             int64_t w, loom_tf_step *out);
/* Whether the run of geometric steps i..j-1 fuses exactly (loom_tf_remap:
 * no RandomAffine, at most one resampling step). */
bool loom__tf_run_exact(const loom_tf_step *steps, int i, int j);

/* The composed map of a run so far. */
typedef struct loom__geo {
    int64_t n[2];       /* current rows, columns */
    bool exact;         /* still loom_tf_remap's form (ax) */
    bool resampled[2];
    loom_tf_axis ax[2];
    double m[6];        /* current continuous point -> source point */
    double valid[4];    /* x0, y0, x1, y1: the source area the run reads */
    bool affine;
    uint8_t fill[3];
} loom__geo;

/* The composed map of steps i..j-1 on *img; draws as running the steps one
 * by one would. */
loom_status loom__geo_build(loom_ctx *ctx, const loom_tf_step *steps, int i, int j, loom__aug_rng *rng,
                            const loom_image *img, loom__geo *out);
/* A composed map that only picks pixels (crops and flips, no resampling):
 * where output row / column k is in the source, off + step k. */
bool loom__geo_copy(const loom__geo *g, int64_t off[2], int64_t step[2]);

#endif
