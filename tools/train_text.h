/* tools/train_text.h — the token files of a `loom train --model gpt|transformer`
 * run, and the --profile table every `loom train` prints (tools/train_text.c). */
#ifndef LOOM_TOOLS_TRAIN_TEXT_H
#define LOOM_TOOLS_TRAIN_TEXT_H
#include <stdint.h>

#include "loom/loom.h"
#include "loom/train.h"

/* --data-dir for a text model: a token file F (its validation file beside
 * it, loom_text_val_path, when it exists) or a directory D holding
 * D/train.bin (validation: D/val.bin, else D/train.val.bin). train and val
 * get the paths (val "" when there is none; 4096 bytes each); *n the
 * training sequences of seq_len (the file is opened and checked). */
loom_status loom__text_data(loom_ctx *ctx, const char *data_dir, int seq_len, int vocab, char *train, char *val,
                            int64_t *n);

/* --profile: the training step's top ops by time (nothing when r has none) */
void loom__print_profile(const loom_train_result *r);

#endif
