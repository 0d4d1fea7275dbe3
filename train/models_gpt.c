/* train/models_gpt.c — the text models (see loom/nn.h): a GPT-style decoder
 * language model and a Transformer encoder classifier, with HuggingFace
 * GPT-2's parameter names and layouts and GPT-2's initialisation. */
#include <math.h>

#include "impl.h"
#include "loom/nn.h"
#include "models_text.h"

bool loom_model_is_text(const char *arch) { return arch && (!strcmp(arch, "gpt") || !strcmp(arch, "transformer")); }

void loom_model_text_defaults(loom_model_desc *d) {
    if (!d->layers) d->layers = 4;
    if (!d->heads) d->heads = 4;
    if (!d->embd) d->embd = 128;
    if (!d->seq_len) d->seq_len = 128;
    if (!d->vocab) d->vocab = 256;
}

/* The sizes of one build and the parameters' initial standard deviations. */
typedef struct gpt {
    loom_graph *g;
    int64_t n, t, e, h; /* batch, positions, width, heads */
    double std, proj_std;
    bool causal;
} gpt;

static loom_tensor *param(gpt *m, const char *name, int ndim, const int64_t *dims, loom_init init) {
    return loom_param(m->g, name, LOOM_F32, ndim, dims, &init);
}

static loom_tensor *normal(gpt *m, const char *name, int64_t rows, int64_t cols, double std) {
    return param(m, name, 2, (int64_t[]){rows, cols}, (loom_init){LOOM_INIT_NORMAL, 0, std});
}

/* GPT-2's Conv1D parameters: *wt (in, out) and *bt (out) */
static void conv1d_params(gpt *m, const char *layer, int64_t in, int64_t out, double std, loom_tensor **wt,
                          loom_tensor **bt) {
    char w[64], b[64];
    snprintf(w, sizeof w, "%.56s.weight", layer);
    snprintf(b, sizeof b, "%.56s.bias", layer);
    *wt = normal(m, w, in, out, std);
    *bt = param(m, b, 1, &out, (loom_init){LOOM_INIT_ZEROS, 0, 0});
}

/* y = x W + b, x (rows, in), W (in, out), b (out) */
static loom_tensor *affine(gpt *m, loom_tensor *x, loom_tensor *w, loom_tensor *b) {
    return loom_add(m->g, loom_matmul(m->g, x, w, false, false), b);
}

/* GPT-2's Conv1D: weight (in, out), y = x W + b; x (rows, in). */
static loom_tensor *conv1d(gpt *m, const char *layer, loom_tensor *x, int64_t out, double std) {
    if (!x) return NULL;
    loom_tensor *wt, *bt;
    conv1d_params(m, layer, loom_tensor_dim(x, -1), out, std, &wt, &bt);
    return affine(m, x, wt, bt);
}

static loom_tensor *layer_norm(gpt *m, const char *layer, loom_tensor *x) {
    if (!x) return NULL;
    char w[64], b[64];
    snprintf(w, sizeof w, "%s.weight", layer);
    snprintf(b, sizeof b, "%s.bias", layer);
    loom_tensor *gw = param(m, w, 1, &m->e, (loom_init){LOOM_INIT_ONES, 0, 0});
    loom_tensor *gb = param(m, b, 1, &m->e, (loom_init){LOOM_INIT_ZEROS, 0, 0});
    return loom_layer_norm(m->g, x, 1, gw, gb, 1e-5);
}

/* q (k = 0), k (1) or v (2) of x (N T, E) as heads (N, H, T, D): columns [k E, (k + 1) E) of
 * x W + b with c_attn's W (E, 3 E) and b (3 E). The parameters are sliced, not the (N T, 3 E)
 * product: the backward then adds three (E, 3 E) slice gradients, not three zero-filled
 * (N T, 3 E) ones (and their two adds), the largest memory traffic of the block. */
static loom_tensor *heads_of(gpt *m, loom_tensor *x, loom_tensor *w, loom_tensor *b, int k) {
    loom_tensor *wk = loom_slice(m->g, w, 1, k * m->e, (k + 1) * m->e);
    loom_tensor *bk = loom_slice(m->g, b, 0, k * m->e, (k + 1) * m->e);
    loom_tensor *y = loom_reshape(m->g, affine(m, x, wk, bk), 4, (int64_t[]){m->n, m->t, m->h, m->e / m->h});
    return loom_permute(m->g, y, (int[]){0, 2, 1, 3});
}

/* Multi-head self-attention of x (N T, E) -> (N T, E). */
static loom_tensor *attention(gpt *m, const char *blk, loom_tensor *x) {
    char name[64];
    snprintf(name, sizeof name, "%s.attn.c_attn", blk);
    if (!x) return NULL;
    loom_tensor *w, *b;
    conv1d_params(m, name, m->e, 3 * m->e, m->std, &w, &b);
    loom_tensor *q = heads_of(m, x, w, b, 0), *k = heads_of(m, x, w, b, 1), *v = heads_of(m, x, w, b, 2);
    loom_tensor *y = loom_attention(m->g, q, k, v, m->causal, 0.0);
    y = loom_permute(m->g, y, (int[]){0, 2, 1, 3}); /* (N, T, H, D) */
    y = loom_reshape(m->g, y, 2, (int64_t[]){m->n * m->t, m->e});
    snprintf(name, sizeof name, "%s.attn.c_proj", blk);
    return conv1d(m, name, y, m->e, m->proj_std);
}

static loom_tensor *mlp(gpt *m, const char *blk, loom_tensor *x) {
    char name[64];
    snprintf(name, sizeof name, "%s.mlp.c_fc", blk);
    loom_tensor *y = loom_gelu(m->g, conv1d(m, name, x, 4 * m->e, m->std));
    snprintf(name, sizeof name, "%s.mlp.c_proj", blk);
    return conv1d(m, name, y, m->e, m->proj_std);
}

static loom_status check(loom_ctx *ctx, const loom_model_desc *d, loom_tensor *x) {
    char s[96] = "(null)";
    if (x) loom_tensor_shape_str(x, s, sizeof s);
    if (!x || loom_tensor_ndim(x) != 2 || loom_tensor_dtype(x) != LOOM_I32)
        return loom__err(ctx, LOOM_ERR_SHAPE, "model '%s': input must be i32 token ids (N, T), got %s", d->arch, s);
    if (d->layers < 1 || d->heads < 1 || d->embd < 1 || d->seq_len < 1 || d->vocab < 2 || d->embd % d->heads)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                         "model '%s': layers %d, heads %d, embd %d, seq_len %d, vocab %d: all must be >= 1 (vocab >= 2) "
                         "and heads must divide embd",
                         d->arch, d->layers, d->heads, d->embd, d->seq_len, d->vocab);
    if (loom_tensor_dim(x, 1) > d->seq_len)
        return loom__err(ctx, LOOM_ERR_SHAPE, "model '%s': input %s is longer than seq_len %d", d->arch, s, d->seq_len);
    if (!strcmp(d->arch, "transformer") && d->num_classes < 2)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model 'transformer': %d classes (at least 2 needed)", d->num_classes);
    return LOOM_OK;
}

loom_status loom__model_build_text(loom_graph *g, const loom_model_desc *desc, loom_tensor *x, loom_tensor **logits) {
    *logits = NULL;
    loom_model_desc d = *desc;
    loom_model_text_defaults(&d);
    loom_status st = check(g->ctx, &d, x);
    if (st != LOOM_OK) return st;
    gpt m = {.g = g, .n = loom_tensor_dim(x, 0), .t = loom_tensor_dim(x, 1), .e = d.embd, .h = d.heads, .std = 0.02,
             .proj_std = 0.02 / sqrt(2.0 * d.layers), .causal = !strcmp(d.arch, "gpt")};
    loom_tensor *wte = normal(&m, "wte.weight", d.vocab, d.embd, m.std);
    loom_tensor *wpe = normal(&m, "wpe.weight", d.seq_len, d.embd, m.std);
    /* (N, T, E) token + position embeddings, then rows (N T, E) through the blocks */
    loom_tensor *y = loom_add(g, loom_embedding(g, wte, x), loom_slice(g, wpe, 0, 0, m.t));
    y = loom_reshape(g, y, 2, (int64_t[]){m.n * m.t, m.e});
    for (int i = 0; i < d.layers; i++) {
        char blk[16], ln[32];
        snprintf(blk, sizeof blk, "h.%d", i);
        snprintf(ln, sizeof ln, "%s.ln_1", blk);
        y = loom_add(g, y, attention(&m, blk, layer_norm(&m, ln, y)));
        snprintf(ln, sizeof ln, "%s.ln_2", blk);
        y = loom_add(g, y, mlp(&m, blk, layer_norm(&m, ln, y)));
    }
    y = layer_norm(&m, "ln_f", y);
    if (m.causal) {
        y = loom_matmul(g, y, wte, false, true); /* tied head: (N T, E) x wte^T */
    } else {
        y = loom_mean(g, loom_reshape(g, y, 3, (int64_t[]){m.n, m.t, m.e}), 1u << 1, false);
        int64_t c = d.num_classes;
        loom_tensor *hw = normal(&m, "head.weight", c, m.e, m.std);
        loom_tensor *hb = param(&m, "head.bias", 1, &c, (loom_init){LOOM_INIT_ZEROS, 0, 0});
        y = loom_linear(g, y, hw, hb);
    }
    if (!y) return loom_graph_status(g);
    *logits = y;
    return LOOM_OK;
}
