/* loom/text.h — training a text model (gpt, transformer; loom/nn.h) on
 * token files.
 *
 * defines: loom_text_train, loom_text_train_dyn (dynamic batching),
 *          loom_text_val_path, LOOM_TEXT_META_* (the
 *          model's configuration in a checkpoint's metadata).
 *
 * The token files are what loom_source_open_tokens reads (loom/source.h):
 * little-endian uint16 ids, cut into windows of seq_len + 1 tokens, sample i
 * holding inputs t[iT .. iT+T) and next-token targets t[iT+1 .. iT+T].
 * gpt's loss is the cross-entropy over every position (N T rows);
 * transformer's is that of classifying the window's last target from its T
 * inputs (num_classes defaults to the vocabulary).
 */
#ifndef LOOM_TEXT_H
#define LOOM_TEXT_H

#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checkpoint metadata keys under which loom_text_train records the model's
 * configuration (decimal strings; the architecture under "loom.model"), so
 * that `loom generate` can rebuild it from the checkpoint alone. */
#define LOOM_TEXT_META_LAYERS "loom.layers"
#define LOOM_TEXT_META_HEADS "loom.heads"
#define LOOM_TEXT_META_EMBD "loom.embd"
#define LOOM_TEXT_META_SEQ_LEN "loom.seq_len"
#define LOOM_TEXT_META_VOCAB "loom.vocab"
#define LOOM_TEXT_META_CLASSES "loom.num_classes"

/* Train desc->model.net (arch "gpt" or "transformer"; size fields 0 take
 * their defaults) on the token file train_path, evaluating on val_path
 * (NULL = none) after every epoch (val loss per target token, and the
 * accuracy of the argmax prediction). Training batches are shuffled from
 * (run.seed, epoch), the last partial one dropped; the evaluation reads the
 * whole validation file in order. Of desc it uses: model.net,
 * model.label_smoothing, data.batch, data.eval_batch, data.workers,
 * data.prefetch, optim.opt, optim.sched, run.backend, run.backend_desc,
 * run.deterministic, run.seed, run.epochs, run.max_steps, run.max_eval,
 * run.save_path (after every epoch, with the LOOM_TEXT_META_* keys),
 * log.csv, log.tensorboard_dir and log.observers; desc->data.train and the
 * other fields are ignored. res may not be NULL; samples are sequences. */
loom_status loom_text_train(loom_ctx *ctx, const loom_trainer_desc *desc, const char *train_path, const char *val_path,
                            loom_train_result *res);

/* Dynamic batching for gpt (the guide's "split the batch, merge the
 * gradients"): a sample is its window cut after the first end-of-document
 * token (or the whole window), padded to its length bucket (seq_len,
 * seq_len / 2, ... halved while at least 8). Batches are formed per bucket by a token budget
 * (loom_batches_bucketed), each split into micro-batches of at most
 * micro_tokens tokens whose gradients accumulate into one optimizer step,
 * weighted so that the step equals the unsplit batch's. One graph is
 * compiled per bucket, each of about micro_tokens tokens, so the planned
 * memory does not grow with the batch or with a sample's length. */
typedef struct loom_text_dyn_desc {
    int64_t token_budget; /* tokens per optimizer step (padded to the bucket); > 0 turns dynamic batching on */
    int64_t micro_tokens; /* tokens per micro-batch, the memory budget (>= seq_len); 0 = min(budget, 4 seq_len) */
    bool has_eod;         /* samples end after their first eod token (false: every sample is seq_len long) */
    int eod;              /* the end-of-document token id, when has_eod */
} loom_text_dyn_desc;

/* loom_text_train with dynamic batching per dyn (NULL or token_budget 0:
 * exactly loom_text_train). Only gpt; data.batch is then unused. */
loom_status loom_text_train_dyn(loom_ctx *ctx, const loom_trainer_desc *desc, const loom_text_dyn_desc *dyn,
                                const char *train_path, const char *val_path, loom_train_result *res);

/* The validation file that `loom pack-text --out PATH` writes beside PATH:
 * PATH without a trailing ".bin", then ".val.bin" ("data/fortunes.bin" ->
 * "data/fortunes.val.bin"). Into buf (n bytes); false when it does not fit. */
bool loom_text_val_path(const char *train_path, char *buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif
