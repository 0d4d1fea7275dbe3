/* loader/pipeline.c — running the per-sample transform pipeline of the
 * loader: RandomCrop (with padding), RandomHorizontalFlip,
 * RandomVerticalFlip, CenterCrop, Resize, RandomResizedCrop, ColorJitter,
 * RandomAffine, RandomOrder, RandomErasing (on the tensor), step by step
 * (loom__tf_run) or with runs of geometric steps fused into one resampling
 * and the fused tails (loom__tf_run_fused). Reference loops (one image at a
 * time; the pool runs many images at once). The random draws and their
 * layout are in loader/pipeline_draw.c, the plan and the fused runs' maps in
 * loader/pipeline_plan.c, the spec parser in loader/pipeline_spec.c.
 */
#include "pipeline_impl.h"


/* ---- RandomCrop with padding -------------------------------------------- */

/* Index into [0, n) of padded coordinate v (-1 = constant fill). */
static int64_t pad_index(int64_t v, int64_t n, loom_pad_mode m) {
    if (v >= 0 && v < n) return v;
    switch (m) {
    case LOOM_PAD_CONSTANT: return -1;
    case LOOM_PAD_EDGE: return v < 0 ? 0 : n - 1;
    case LOOM_PAD_REFLECT: {
        if (n == 1) return 0;
        int64_t p = 2 * (n - 1);
        v %= p;
        if (v < 0) v += p;
        return v < n ? v : p - v;
    }
    case LOOM_PAD_SYMMETRIC: {
        int64_t p = 2 * n;
        v %= p;
        if (v < 0) v += p;
        return v < n ? v : p - 1 - v;
    }
    }
    return -1;
}

// src (h, w, c) u8, padded by pad[] -> dst (s->h, s->w, c), window at (top, left) of the padded image
static void crop_padded(const loom_image *src, const loom_tf_step *s, const int64_t pad[4], int64_t top, int64_t left,
                        uint8_t *dst) {
    int c = src->c;
    for (int64_t y = 0; y < s->h; y++) {
        int64_t sy = pad_index(top + y - pad[1], src->h, s->pad_mode);
        for (int64_t x = 0; x < s->w; x++) {
            int64_t sx = pad_index(left + x - pad[0], src->w, s->pad_mode);
            uint8_t *o = dst + ((size_t)y * (size_t)s->w + (size_t)x) * (size_t)c;
            if (sy < 0 || sx < 0) {
                memset(o, s->fill, (size_t)c);
            } else {
                const uint8_t *i = src->data + ((size_t)sy * (size_t)src->w + (size_t)sx) * (size_t)c;
                memcpy(o, i, (size_t)c);
            }
        }
    }
}

/* Steps i..j-1 on *img, one resampling; draws as run_one would. */
static loom_status run_fused(loom_ctx *ctx, const loom_tf_step *steps, int i, int j, loom__aug_rng *rng,
                             loom_image *img, uint8_t *a, uint8_t *b) {
    loom__geo g;
    loom_status st = loom__geo_build(ctx, steps, i, j, rng, img, &g);
    if (st != LOOM_OK) return st;
    loom_image dst = {img->data == a ? b : a, g.n[0], g.n[1], img->c};
    st = g.exact ? loom_tf_remap(ctx, img, &dst, g.ax) : loom_tf_warp(ctx, img, &dst, g.m, g.valid, g.affine ? g.fill : NULL);
    if (st == LOOM_OK) *img = dst;
    return st;
}

/* One step on *img (in a or b): the result lands in the other buffer (or,
 * for multi-pass steps, alternates) and *img points at it. */
static loom_status run_one(loom_ctx *ctx, const loom_tf_step *steps, int i, loom__aug_rng *rng, loom_image *img,
                           uint8_t *a, uint8_t *b) {
    const loom_tf_step *s = &steps[i];
    loom_image dst = {img->data == a ? b : a, img->h, img->w, img->c};
    loom_status st = LOOM_OK;
    switch (s->kind) {
    case LOOM_TF_RANDOM_CROP: {
        int64_t pad[4];
        loom__tf_crop_pads(s, img->h, img->w, pad);
        int64_t H = img->h + pad[1] + pad[3], W = img->w + pad[0] + pad[2];
        int64_t top = loom__aug_int(rng, H - s->h + 1), left = loom__aug_int(rng, W - s->w + 1);
        dst.h = s->h, dst.w = s->w;
        crop_padded(img, s, pad, top, left, dst.data);
        break;
    }
    case LOOM_TF_RANDOM_HFLIP:
    case LOOM_TF_RANDOM_VFLIP:
        if (!loom__aug_coin(rng, s->p)) return LOOM_OK;
        st = s->kind == LOOM_TF_RANDOM_HFLIP ? loom_tf_hflip(ctx, img, &dst) : loom_tf_vflip(ctx, img, &dst);
        break;
    case LOOM_TF_CENTER_CROP:
        dst.h = s->h, dst.w = s->w;
        st = loom_tf_center_crop(ctx, img, &dst);
        break;
    case LOOM_TF_RESIZE:
        loom__tf_resize_out(ctx, s, img->h, img->w, &dst.h, &dst.w);
        st = loom_tf_resize(ctx, img, &dst);
        break;
    case LOOM_TF_RANDOM_RESIZED_CROP: {
        int64_t box[4];
        loom__tf_rrc_params(s, rng, img->h, img->w, box);
        dst.h = s->h, dst.w = s->w;
        st = loom_tf_resized_crop(ctx, img, box[0], box[1], box[2], box[3], &dst);
        break;
    }
    case LOOM_TF_COLOR_JITTER: {
        int order[4];
        double f[4];
        loom__tf_jitter_params(s, rng, order, f);
        for (int k = 0; k < 4 && st == LOOM_OK; k++) {
            int fn = order[k];
            if (!s->jitter_on[fn]) continue;
            loom_image o = {img->data == a ? b : a, img->h, img->w, img->c};
            st = fn == 0   ? loom_tf_adjust_brightness(ctx, img, &o, f[fn])
                 : fn == 1 ? loom_tf_adjust_contrast(ctx, img, &o, f[fn])
                 : fn == 2 ? loom_tf_adjust_saturation(ctx, img, &o, f[fn])
                           : loom_tf_adjust_hue(ctx, img, &o, f[fn]);
            if (st == LOOM_OK) *img = o;
        }
        return st;
    }
    case LOOM_TF_RANDOM_AFFINE: {
        double p[6];
        loom__tf_affine_params(s, rng, img->h, img->w, p);
        uint8_t fill[3] = {s->afill[0], img->c == 3 ? s->afill[1] : s->afill[0], img->c == 3 ? s->afill[2] : s->afill[0]};
        st = loom_tf_affine(ctx, img, &dst, p[0], p[1], p[2], p[3], p[4], p[5], s->nearest, fill);
        break;
    }
    case LOOM_TF_RANDOM_ERASING: return LOOM_OK; /* on the tensor: loom__tf_run_tensor */
    case LOOM_TF_RANDOM_ORDER: {
        int order[LOOM__TF_ORDER_MAX];
        if (loom__tf_resolved(s)) { /* drawn already (loom__tf_resolve): its words, and its steps follow */
            loom__aug_perm(rng, order, -s->count);
            return LOOM_OK;
        }
        loom__aug_perm(rng, order, s->count);
        for (int k = 0; k < s->count && st == LOOM_OK; k++) st = run_one(ctx, steps, i + 1 + order[k], rng, img, a, b);
        return st;
    }
    }
    if (st != LOOM_OK) return st;
    *img = dst;
    return LOOM_OK;
}

/* The crops (unpadded RandomCrop) and flips from step k on, whose pixels an
 * affine's result gives through a view (loom__tail.oview): their end. */
static int fold_end(const loom_tf_step *steps, int n, int k) {
    for (; k < n; k++) {
        const loom_tf_step *s = &steps[k];
        bool crop = s->kind == LOOM_TF_RANDOM_CROP && !s->pad_if_needed && !s->pad[0] && !s->pad[1] && !s->pad[2] &&
                    !s->pad[3];
        if (!crop && s->kind != LOOM_TF_RANDOM_HFLIP && s->kind != LOOM_TF_RANDOM_VFLIP) break;
    }
    return k;
}

/* The fused tail at step i (loader/tail.c): a ColorJitter, a nearest
 * RandomAffine, or the two in that order, each followed by the
 * crops and flips after it up to the next or *fold (read through views:
 * the jitter's as the tail's inner view, where they commute with the
 * jitter but for contrast's mean, which the tail keeps of the image before
 * them; the affine's evaluated in their window only); into the tensor when
 * only RandomErasing (applied to the tensor) follows. Returns *fold - i,
 * the steps it covers; 0 when there is no tail here or it would not pay (a
 * lone affine whose whole result stays u8 is loom_tf_affine's one pass
 * already). */
static int tail_len(const loom_tf_step *steps, int n, int i, const loom__tensor_out *out, bool *to_tensor, int *fold) {
    bool jit = false, aff = false;
    int j = i, aff_end = i;
    /* (an affine then a jitter stay apart: fused, the gather pass that also
     * sums the grays measured ~3% slower than the two passes) */
    for (int q = 0; q < 2 && j < n; q++) {
        if (q == 0 && steps[j].kind == LOOM_TF_COLOR_JITTER) jit = true;
        else if (!aff && loom__tf_nearest_affine(&steps[j])) aff = true, aff_end = j + 1;
        else break;
        j = fold_end(steps, n, j + 1);
    }
    *fold = j;
    bool last = true;
    for (int k = j; k < n; k++) last = last && steps[k].kind == LOOM_TF_RANDOM_ERASING;
    *to_tensor = last && out && out->x;
    if (!jit && !(aff && (*to_tensor || j > aff_end))) return 0;
    return j - i;
}

/* A tail with no steps (ToTensor + Normalize alone) is worth running: the
 * tensor takes img's channels, three of them, and the vector pass exists. */
static bool empty_tail_pays(const loom__tensor_out *out, const loom_image *img) {
    return out && out->x && out->c == img->c && img->c == 3 && loom__simd_avx2();
}

/* The tail at steps i..fold-1 (tail_len); view (may be NULL): the crops
 * and flips before it, read through instead of copied (tail.view). The
 * steps draw in their order, as one by one. */
static loom_status run_tail(loom_ctx *ctx, const loom_tf_step *steps, int i, int fold, loom__aug_rng *rng,
                            loom_image *img, uint8_t *a, uint8_t *b, loom__tensor_out *out, const loom__tail_view *view) {
    loom__tail t = {0};
    if (view) t.view = *view;
    else t.view = (loom__tail_view){img->h, img->w, 0, 1, 0, 1};
    int64_t h = t.view.h, w = t.view.w; /* the image the next step sees */
    for (int k = i; k < fold;) {
        const loom_tf_step *s = &steps[k];
        if (s->kind == LOOM_TF_COLOR_JITTER) {
            t.jitter = true;
            loom__tf_jitter_params(s, rng, t.order, t.f);
            memcpy(t.on, s->jitter_on, sizeof t.on);
        } else {
            t.affine = true;
            loom__tf_affine_params(s, rng, h, w, t.p);
            for (int q = 0; q < 3; q++) t.fill[q] = s->afill[img->c == 3 ? q : 0];
        }
        int e = fold_end(steps, fold, k + 1);
        if (e > k + 1) { /* the crops and flips after it: drawn now, as one by one */
            loom__geo g;
            int64_t off[2], step[2];
            const loom_image res = {NULL, h, w, img->c};
            loom_status st = loom__geo_build(ctx, steps, k + 1, e, rng, &res, &g);
            if (st != LOOM_OK) return st;
            if (!loom__geo_copy(&g, off, step))
                return loom__err(ctx, LOOM_ERR_STATE, "loader: steps %d..%d after %s (step %d) do not compose into a "
                                 "crop (internal)", k + 2, e, loom__tf_name(s->kind), k + 1);
            loom__tail_view v = {g.n[0], g.n[1], off[0], step[0], off[1], step[1]};
            if (s->kind == LOOM_TF_COLOR_JITTER) t.inner = v;
            else t.oview = v;
            h = g.n[0], w = g.n[1];
        }
        k = e;
    }
    return loom__tail_run(ctx, &t, img, a, b, out);
}

/* Where a fused run from i (ending at j by the usual rules) ends when the
 * list holds resolved RandomOrders (ord[k]: step k is one, or one of its
 * steps; 0 elsewhere, else the end of that order's steps). A drawn order
 * fuses only exactly (loom_tf_remap), so that its bits are those of its
 * steps one by one: a run may enter an order's steps only when exact, runs
 * within stay exact and within. Runs outside the orders are as without. */
static int order_cut(const loom_tf_step *steps, const int *ord, int i, int j) {
    int m = i;
    while (m < j && !ord[m]) m++;
    if (m == j) return j; /* no order in the run */
    int end = ord[m] < j ? ord[m] : j, e = m;
    while (e < end && loom__tf_run_exact(steps, i, e + 1)) e++;
    if (m > i && e <= m + 1) return m; /* the run before the order, as without it */
    return e > i ? e : i + 1;
}

static loom_status run_steps(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                             uint8_t *a, uint8_t *b, bool fuse, loom__tensor_out *out) {
    loom_tf_step flat[LOOM__TF_FLAT_MAX];
    int ord[LOOM__TF_FLAT_MAX] = {0};
    bool ordered = false;
    for (int k = 0; k < n && fuse; k++) ordered = ordered || (steps[k].kind == LOOM_TF_RANDOM_ORDER && steps[k].count > 0);
    if (ordered && n > LOOM__TF_FLAT_MAX) fuse = false, ordered = false; /* step by step: the same bits */
    if (ordered) {
        loom_status st = loom__tf_resolve(ctx, steps, n, rng, img->c, img->h, img->w, flat);
        if (st != LOOM_OK) return st;
        for (int k = 0; k < n; k++)
            if (loom__tf_resolved(&flat[k]))
                for (int q = k; q <= k - flat[k].count; q++) ord[q] = k - flat[k].count + 1;
        steps = flat;
    }
    for (int i = 0; i < n; i++) {
        bool to_tensor = false;
        int fold;
        int t = fuse ? tail_len(steps, n, i, out, &to_tensor, &fold) : 0;
        if (t > 0) {
            loom_status st = run_tail(ctx, steps, i, fold, rng, img, a, b, to_tensor ? out : NULL, NULL);
            if (st != LOOM_OK) return st;
            i = fold - 1;
            continue;
        }
        int j = fuse ? loom__tf_fuse_end(ctx, steps, n, i, img->h, img->w) : i;
        if (ordered && j > i) j = order_cut(steps, ord, i, j);
        /* a nearest RandomAffine stays out of runs (and a tail ends one): it
         * runs as the tail's row pass, exact and a small fraction of the
         * cost of a bilinear warp of the whole run */
        if (j > i + 1 && loom__tf_nearest_affine(&steps[i])) j = i + 1;
        for (int k = i + 1; k < j; k++) {
            bool tt;
            int kf;
            if (loom__tf_nearest_affine(&steps[k]) || tail_len(steps, n, k, out, &tt, &kf) > 0) {
                j = k;
                break;
            }
        }
        /* crops and flips (no resampling) right before a tail: the tail reads
         * through them; also right before the end (nothing but RandomErasing
         * follows), where an empty tail does ToTensor + Normalize through them */
        int fold2 = j;
        int t2 = j > i && j < n ? tail_len(steps, n, j, out, &to_tensor, &fold2) : 0;
        bool to_end = j > i && t2 == 0 && empty_tail_pays(out, img);
        for (int k = j; k < n && to_end; k++) to_end = steps[k].kind == LOOM_TF_RANDOM_ERASING;
        if (to_end) to_tensor = true;
        if (t2 > 0 || to_end) {
            loom__aug_rng saved = *rng;
            loom__geo g;
            int64_t off[2], step[2];
            loom_status st = loom__geo_build(ctx, steps, i, j, rng, img, &g);
            if (st != LOOM_OK) return st;
            if (loom__geo_copy(&g, off, step)) {
                loom__tail_view v = {g.n[0], g.n[1], off[0], step[0], off[1], step[1]};
                st = run_tail(ctx, steps, j, fold2, rng, img, a, b, to_tensor ? out : NULL, &v);
                if (st != LOOM_OK) return st;
                i = (t2 > 0 ? fold2 : j) - 1;
                continue;
            }
            *rng = saved; /* resampling: the usual fused pass below draws again */
        }
        if (j - i >= 2) {
            loom_status st = run_fused(ctx, steps, i, j, rng, img, a, b);
            if (st != LOOM_OK) return st;
            i = j - 1;
            continue;
        }
        /* a nearest RandomAffine on its own: the tail's vector row pass (exact, as loom_tf_affine) */
        if (fuse && loom__tf_nearest_affine(&steps[i])) {
            loom_status st = run_tail(ctx, steps, i, i + 1, rng, img, a, b, NULL, NULL);
            if (st != LOOM_OK) return st;
            continue;
        }
        loom_status st = run_one(ctx, steps, i, rng, img, a, b);
        if (st != LOOM_OK) return st;
        if (steps[i].kind == LOOM_TF_RANDOM_ORDER && steps[i].count > 0) i += steps[i].count;
    }
    return LOOM_OK;
}

loom_status loom__tf_run(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                         uint8_t *a, uint8_t *b) {
    return run_steps(ctx, steps, n, rng, img, a, b, false, NULL);
}

loom_status loom__tf_run_fused(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, loom_image *img,
                               uint8_t *a, uint8_t *b, loom__tensor_out *out) {
    if (out) out->done = false;
    loom_status st = run_steps(ctx, steps, n, rng, img, a, b, true, out);
    if (st == LOOM_OK && empty_tail_pays(out, img) && !out->done) {
        /* ToTensor + Normalize still to do: the tail's vector pass with no steps */
        loom__tail t = {.view = {img->h, img->w, 0, 1, 0, 1}};
        st = loom__tail_run(ctx, &t, img, a, b, out);
    }
    return st;
}

loom_status loom__tf_run_tensor(loom_ctx *ctx, const loom_tf_step *steps, int n, loom__aug_rng *rng, float *x, int c,
                                int64_t h, int64_t w) {
    for (int i = 0; i < n; i++) {
        const loom_tf_step *s = &steps[i];
        if (s->kind != LOOM_TF_RANDOM_ERASING) continue;
        int64_t box[4];
        if (!loom__tf_erase_params(s, rng, h, w, box)) continue;
        static const float zero = 0.0f;
        loom_status st = loom_tf_erase(ctx, x, c, h, w, box[0], box[1], box[2], box[3], s->nvalue ? s->value : &zero,
                                       s->nvalue ? s->nvalue : 1);
        if (st != LOOM_OK) return st;
    }
    return LOOM_OK;
}
