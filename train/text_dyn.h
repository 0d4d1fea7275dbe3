/* train/text_dyn.h — library-private: dynamic batching for the gpt trainer
 * (train/text_dyn.c), driven by train/text.c and checked by
 * tests/test-dynbatch.c. */
#ifndef LOOM_TRAIN_TEXT_DYN_H
#define LOOM_TRAIN_TEXT_DYN_H

#include "loom/nn.h"
#include "loom/optim.h"
#include "loom/sampler.h"
#include "loom/source.h"
#include "loom/text.h"

#define LOOM__DYN_BUCKETS 16

/* One bucket's compiled micro-batch graph: ids x (rows, len), targets y
 * (rows len), the loss weight w; backward starts from loss * w. */
typedef struct loom__dyn_graph {
    loom_graph *g;
    loom_tensor *x, *y, *w, *loss;
    loom_plan *plan;
    loom_optimizer *opt;
    int64_t len, rows;
} loom__dyn_graph;

typedef struct loom__dyn {
    loom_ctx *ctx;
    loom_text_dyn_desc d;        /* resolved: micro_tokens set */
    int64_t T;                   /* seq_len */
    int nb;                      /* buckets */
    int64_t bounds[LOOM__DYN_BUCKETS];
    loom__dyn_graph gr[LOOM__DYN_BUCKETS]; /* gr[nb - 1] (length T) owns the weights */
    int K;                       /* every optimizer's grad_accum: more than any batch's micro-batches */
    int64_t steps;               /* optimizer steps taken */
    int32_t *rec, *xbuf, *ybuf;  /* one sample record (2 T); one micro-batch */
} loom__dyn;

/* Check dd against md (gpt, seq_len), resolve it, build and compile one
 * graph per bucket on be (the length-T one first, the others sharing its
 * weights and optimizer state). */
loom_status loom__dyn_create(loom_ctx *ctx, loom_backend *be, const loom_model_desc *md, const loom_optimizer_desc *od,
                             uint64_t seed, double label_smoothing, const loom_text_dyn_desc *dd, loom__dyn **out);
void loom__dyn_destroy(loom__dyn *dy);
/* The plan owning the weights (the length-T bucket's) and its optimizer. */
loom_plan *loom__dyn_plan(const loom__dyn *dy);
/* The bucket index of a sample of length len (1 <= len <= T). */
int loom__dyn_bucket(const loom__dyn *dy, int64_t len);
/* Every sample's length in src (gpt token windows): up to and including
 * its first eod input token, or T. */
loom_status loom__dyn_sizes(loom__dyn *dy, const loom_source *src, int64_t *sizes);
/* The epoch's batches over samples 0..n with lengths sizes: bucketed by
 * padded length under token_budget, in a seeded order. */
loom_status loom__dyn_batches(loom__dyn *dy, const int64_t *sizes, int64_t n, uint64_t seed, int64_t epoch,
                              loom_batches *out);
/* One batch (samples idx[0..count), one bucket): its micro-batches run with
 * gradients accumulating; with apply the last one steps the optimizer at
 * lr, without it the accumulators keep K times the batch's gradient (for
 * tests). *loss: the batch's mean loss per target; *micro: micro-batches. */
loom_status loom__dyn_step(loom__dyn *dy, const loom_source *src, const int64_t *idx, int64_t count,
                           const int64_t *sizes, double lr, bool apply, double *loss, int *micro);

#endif
