/* train/text_dyn.c — dynamic batching for the gpt trainer: samples cut at
 * an end-of-document token, bucketed by length, batched under a token
 * budget, each batch split into micro-batches whose weighted gradients
 * accumulate into one optimizer step.
 *
 * Micro-batch i of a batch with N valid targets in all holds n_i of them;
 * its graph's loss is the mean over its own targets, and backward starts
 * from that loss times w_i = K n_i / N. The optimizer (grad_accum K) sums
 * the micro-gradients and multiplies by 1/K, so the step sees
 * sum_i n_i / N grad(mean_i) = grad(the batch's mean over its N targets):
 * the unsplit batch's gradient. The batch's last micro-step applies: the
 * optimizer's counters are set before each micro-step so that it does.
 */
#include <math.h>

#include "text_dyn.h"
#include "impl.h"

static loom_status build_bucket(loom_ctx *ctx, loom_backend *be, const loom_model_desc *md,
                                const loom_optimizer_desc *od, uint64_t seed, double ls, const loom_plan *share,
                                loom__dyn_graph *m) {
    loom_status st = loom_graph_create(ctx, &(loom_graph_desc){.seed = seed}, &m->g);
    if (st != LOOM_OK) return st;
    m->x = loom_input(m->g, "x", LOOM_I32, 2, (int64_t[]){m->rows, m->len});
    m->y = loom_input(m->g, "y", LOOM_I32, 1, (int64_t[]){m->rows * m->len});
    loom_tensor *logits;
    if ((st = loom_graph_status(m->g)) != LOOM_OK || (st = loom_model_build(m->g, md, m->x, true, &logits)) != LOOM_OK)
        return st;
    m->loss = loom_cross_entropy(m->g, logits, m->y, ls, -100);
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    int nd = loom_tensor_ndim(m->loss);
    int64_t dims[8] = {0};
    for (int i = 0; i < nd && i < 8; i++) dims[i] = loom_tensor_dim(m->loss, i);
    m->w = loom_input(m->g, "loss_weight", LOOM_F32, nd, dims);
    loom_tensor *wl = loom_mul(m->g, m->loss, m->w);
    if ((st = loom_graph_status(m->g)) != LOOM_OK) return st;
    loom_keep(m->loss);
    if ((st = loom_backward(m->g, wl)) != LOOM_OK || (st = loom_optimizer_create(m->g, od, &m->opt)) != LOOM_OK)
        return st;
    return loom_plan_compile(m->g, be, &(loom_plan_desc){.share = share}, &m->plan);
}

/* The bucket bounds: seq_len halved while >= 8 (at most LOOM__DYN_BUCKETS),
 * ascending. */
static void bounds(loom__dyn *dy) {
    int64_t b[LOOM__DYN_BUCKETS];
    int n = 0;
    for (int64_t L = dy->T; L >= 8 && n < LOOM__DYN_BUCKETS; L /= 2) b[n++] = L;
    if (!n) b[n++] = dy->T;
    for (int i = 0; i < n; i++) dy->bounds[i] = b[n - 1 - i];
    dy->nb = n;
}

loom_status loom__dyn_create(loom_ctx *ctx, loom_backend *be, const loom_model_desc *md, const loom_optimizer_desc *od,
                             uint64_t seed, double ls, const loom_text_dyn_desc *dd, loom__dyn **out) {
    *out = NULL;
    if (!md || !md->arch || strcmp(md->arch, "gpt"))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "dynamic batching: only for gpt (model '%s')",
                         md && md->arch ? md->arch : "(none)");
    loom_model_desc m = *md;
    loom_model_text_defaults(&m);
    int64_t T = m.seq_len;
    loom_text_dyn_desc d = *dd;
    if (d.token_budget < T)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "dynamic batching: token budget %lld is below seq_len %lld (a full-length sample must fit)",
                         (long long)d.token_budget, (long long)T);
    if (!d.micro_tokens) d.micro_tokens = d.token_budget < 4 * T ? d.token_budget : 4 * T;
    if (d.micro_tokens < T || d.micro_tokens > d.token_budget)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "dynamic batching: micro-batch tokens %lld must be in [seq_len %lld, token budget %lld]",
                         (long long)d.micro_tokens, (long long)T, (long long)d.token_budget);
    if (d.has_eod && (d.eod < 0 || d.eod >= m.vocab))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "dynamic batching: end-of-document token %d is outside [0, vocab %d)",
                         d.eod, m.vocab);
    loom__dyn *dy = calloc(1, sizeof *dy);
    if (!dy) return loom__err(ctx, LOOM_ERR_OOM, "dynamic batching: out of memory");
    dy->ctx = ctx, dy->d = d, dy->T = T;
    bounds(dy);
    int most = 1;
    for (int i = 0; i < dy->nb; i++) {
        dy->gr[i].len = dy->bounds[i];
        dy->gr[i].rows = d.micro_tokens / dy->bounds[i];
        int64_t per = d.token_budget / dy->bounds[i], k = (per + dy->gr[i].rows - 1) / dy->gr[i].rows;
        if (k > most) most = (int)k;
    }
    dy->K = most + 1;
    loom_optimizer_desc o = *od;
    o.grad_accum = dy->K;
    size_t rows0 = (size_t)dy->gr[0].rows * (size_t)dy->gr[0].len;
    dy->rec = malloc(2 * (size_t)T * sizeof *dy->rec);
    dy->xbuf = malloc(rows0 * sizeof *dy->xbuf);
    dy->ybuf = malloc(rows0 * sizeof *dy->ybuf);
    loom_status st = dy->rec && dy->xbuf && dy->ybuf ? LOOM_OK : loom__err(ctx, LOOM_ERR_OOM, "dynamic batching: out of memory");
    for (int i = dy->nb - 1; i >= 0 && st == LOOM_OK; i--) {
        const loom_plan *share = i == dy->nb - 1 ? NULL : dy->gr[dy->nb - 1].plan;
        st = build_bucket(ctx, be, &m, &o, seed, ls, share, &dy->gr[i]);
    }
    if (st != LOOM_OK) {
        loom__dyn_destroy(dy);
        return st;
    }
    *out = dy;
    return LOOM_OK;
}

void loom__dyn_destroy(loom__dyn *dy) {
    if (!dy) return;
    for (int i = 0; i < dy->nb; i++) { /* the sharing plans before the owner */
        loom_plan_destroy(dy->gr[i].plan);
        loom_graph_destroy(dy->gr[i].g);
        loom_optimizer_destroy(dy->gr[i].opt);
    }
    free(dy->rec), free(dy->xbuf), free(dy->ybuf);
    free(dy);
}

loom_plan *loom__dyn_plan(const loom__dyn *dy) { return dy->gr[dy->nb - 1].plan; }

int loom__dyn_bucket(const loom__dyn *dy, int64_t len) {
    int b = 0;
    while (b < dy->nb - 1 && dy->bounds[b] < len) b++;
    return b;
}

loom_status loom__dyn_sizes(loom__dyn *dy, const loom_source *src, int64_t *sizes) {
    if (src->kind != LOOM_SAMPLE_I32 || src->c != 2 || src->w != dy->T)
        return loom__err(dy->ctx, LOOM_ERR_INVALID_ARG, "dynamic batching: '%s' is not a token file of seq_len %lld",
                         src->name, (long long)dy->T);
    for (int64_t i = 0; i < src->n; i++) {
        int32_t label;
        loom_status st = src->get(src, dy->ctx, i, dy->rec, &label);
        if (st != LOOM_OK) return st;
        sizes[i] = dy->T;
        for (int64_t t = 0; dy->d.has_eod && t < dy->T; t++)
            if (dy->rec[t] == dy->d.eod) {
                sizes[i] = t + 1;
                break;
            }
    }
    return LOOM_OK;
}

loom_status loom__dyn_batches(loom__dyn *dy, const int64_t *sizes, int64_t n, uint64_t seed, int64_t epoch,
                              loom_batches *out) {
    int64_t *idx = malloc((size_t)(n ? n : 1) * sizeof *idx), *padded = malloc((size_t)(n ? n : 1) * sizeof *padded);
    if (!idx || !padded) {
        free(idx), free(padded);
        return loom__err(dy->ctx, LOOM_ERR_OOM, "dynamic batching: out of memory for %lld samples", (long long)n);
    }
    for (int64_t i = 0; i < n; i++) idx[i] = i, padded[i] = dy->bounds[loom__dyn_bucket(dy, sizes[i])];
    loom_bucket_desc bd = {.budget = dy->d.token_budget, .bounds = dy->bounds, .nbounds = dy->nb, .seed = seed};
    loom_status st = loom_batches_bucketed(dy->ctx, idx, n, padded, &bd, epoch, out);
    free(idx), free(padded);
    return st;
}

/* Micro-batch j of the batch into xbuf/ybuf: rows of samples padded to the
 * bucket's length (ids 0, targets ignored); *n its valid targets. */
static loom_status fill(loom__dyn *dy, const loom__dyn_graph *m, const loom_source *src, const int64_t *idx,
                        int64_t count, const int64_t *sizes, int64_t j, int64_t *n) {
    int64_t L = m->len, T = dy->T;
    *n = 0;
    for (int64_t r = 0; r < m->rows; r++) {
        int32_t *x = dy->xbuf + r * L, *y = dy->ybuf + r * L;
        int64_t k = j * m->rows + r, s = 0;
        if (k < count) {
            int32_t label;
            loom_status st = src->get(src, dy->ctx, idx[k], dy->rec, &label);
            if (st != LOOM_OK) return st;
            s = sizes[idx[k]];
            memcpy(x, dy->rec, (size_t)s * sizeof *x);
            memcpy(y, dy->rec + T, (size_t)s * sizeof *y);
        }
        for (int64_t t = s; t < L; t++) x[t] = 0, y[t] = -100;
        *n += s;
    }
    return LOOM_OK;
}

loom_status loom__dyn_step(loom__dyn *dy, const loom_source *src, const int64_t *idx, int64_t count,
                           const int64_t *sizes, double lr, bool apply, double *loss, int *micro) {
    *loss = NAN, *micro = 0;
    if (count < 1) return loom__err(dy->ctx, LOOM_ERR_INVALID_ARG, "dynamic batching: an empty batch");
    int b = loom__dyn_bucket(dy, sizes[idx[0]]);
    loom__dyn_graph *m = &dy->gr[b];
    int64_t total = 0, nm = (count + m->rows - 1) / m->rows;
    for (int64_t k = 0; k < count; k++) {
        if (loom__dyn_bucket(dy, sizes[idx[k]]) != b)
            return loom__err(dy->ctx, LOOM_ERR_INVALID_ARG, "dynamic batching: sample %lld (length %lld) is not in the "
                             "batch's bucket (length %lld)", (long long)idx[k], (long long)sizes[idx[k]], (long long)m->len);
        total += sizes[idx[k]];
    }
    if (nm >= dy->K)
        return loom__err(dy->ctx, LOOM_ERR_INVALID_ARG, "dynamic batching: a batch of %lld samples of length %lld needs "
                         "%lld micro-batches (at most %d)", (long long)count, (long long)m->len, (long long)nm, dy->K - 1);
    double sum = 0;
    size_t nx = (size_t)(m->rows * m->len) * sizeof *dy->xbuf;
    for (int64_t j = 0; j < nm; j++) {
        int64_t n;
        loom_status st = fill(dy, m, src, idx, count, sizes, j, &n);
        float w = (float)((double)dy->K * (double)n / (double)total), l;
        int64_t at = apply ? dy->steps * dy->K + dy->K - nm + j : dy->steps * dy->K + j;
        loom_optimizer_set_counters(m->opt, dy->steps, at);
        if (st != LOOM_OK || (st = loom_plan_write(m->plan, m->x, dy->xbuf, nx)) != LOOM_OK ||
            (st = loom_plan_write(m->plan, m->y, dy->ybuf, nx)) != LOOM_OK ||
            (st = loom_plan_write(m->plan, m->w, &w, sizeof w)) != LOOM_OK ||
            (st = loom_optimizer_begin_step(m->opt, m->plan, lr)) != LOOM_OK ||
            (st = loom_plan_run_read(m->plan, m->loss, &l, sizeof l)) != LOOM_OK)
            return st;
        sum += (double)l * (double)n;
    }
    if (apply) dy->steps++;
    *loss = sum / (double)total, *micro = (int)nm;
    return LOOM_OK;
}
