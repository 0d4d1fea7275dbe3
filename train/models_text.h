/* train/models_text.h — library-private: the text models' builder
 * (train/models_gpt.c), dispatched to by loom_model_build (train/models.c). */
#ifndef LOOM_TRAIN_MODELS_TEXT_H
#define LOOM_TRAIN_MODELS_TEXT_H

#include "loom/nn.h"

/* gpt or transformer on i32 ids x (N, T); size fields 0 take their defaults. */
loom_status loom__model_build_text(loom_graph *g, const loom_model_desc *desc, loom_tensor *x, loom_tensor **logits);

#endif
