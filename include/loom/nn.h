/* loom/nn.h — model builders.
 *
 * defines: loom_model_desc, loom_model_build.
 *
 * A model builder records a network on a graph. Parameter names follow
 * PyTorch's module naming (`conv1.weight`, `bn1.running_mean`, `fc2.bias`),
 * so checkpoints load in PyTorch and pretrained weights load by name. Build
 * the same model twice — train=true for the training graph, train=false for
 * evaluation (dropout off, batch norm on running statistics) — and compile
 * the evaluation plan with loom_plan_desc.share pointing at the training plan
 * so both use the same weights. Initialisation follows PyTorch's defaults.
 *
 *   mlp: flatten, fc1 784->256, ReLU, fc2 256->128, ReLU, fc3 128->classes
 *        (input sizes follow the data)
 *   cnn: conv1 3x3 32 (no bias) + bn1 + ReLU + maxpool 2,
 *        conv2 3x3 64 (no bias) + bn2 + ReLU + maxpool 2,
 *        flatten, fc1 ->128 + ReLU + dropout 0.5, fc2 128->classes
 */
#ifndef LOOM_NN_H
#define LOOM_NN_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_model_desc {
    const char *arch;     /* "mlp" or "cnn" */
    int in_c;             /* one sample's channels */
    int in_h;             /* one sample's height in pixels */
    int in_w;             /* one sample's width in pixels */
    int num_classes;      /* outputs of the last layer, >= 2 */
    double dropout;       /* 0 = the model's default (cnn 0.5, mlp none); < 0 = off */
    double bn_momentum;   /* 0 = 0.1 */
} loom_model_desc;

/* Record the model on g, reading x (N, C, H, W) f32; *logits is (N, classes). */
loom_status loom_model_build(loom_graph *g, const loom_model_desc *desc, loom_tensor *x, bool train,
                             loom_tensor **logits);
/* "mlp, cnn" */
const char *loom_model_names(void);

#ifdef __cplusplus
}
#endif
#endif
