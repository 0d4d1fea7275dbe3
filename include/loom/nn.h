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
 *   resnet18, resnet34, resnet50: torchvision's ResNets (BasicBlock,
 *        Bottleneck v1.5: the stride on the 3x3 conv), its module names
 *        (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc) and init;
 *        stem 7x7/2 conv + 3x3/2 max-pool, or with small_stem a 3x3/1 conv
 *   resnet20, resnet32, resnet56: He et al. (2015)'s CIFAR ResNets, depth
 *        6n+2: 3x3 stem, three stages of n BasicBlocks (16, 32, 64 channels),
 *        projection shortcuts where the shape changes; names and init as above
 *   All ResNets end with global average pooling and fc (features->classes).
 *
 * Text models (train/models_gpt.c) read i32 token ids (N, T), T <= seq_len,
 * with HuggingFace GPT-2's parameter names and layouts (wte.weight (vocab,
 * embd), wpe.weight (seq_len, embd), h.N.ln_1, h.N.attn.c_attn (Conv1D:
 * weight (embd, 3 embd), y = x W + b), h.N.attn.c_proj, h.N.ln_2,
 * h.N.mlp.c_fc, h.N.mlp.c_proj, ln_f) and GPT-2's initialisation (normal
 * std 0.02; the c_proj weights std 0.02 / sqrt(2 layers); biases 0; layer
 * norms weight 1, eps 1e-5). Pre-norm blocks x += attn(ln_1(x)),
 * x += mlp(ln_2(x)), multi-head self-attention, MLP embd -> 4 embd, exact
 * (erf) GELU, -> embd; no dropout.
 *   gpt:         causal attention; ln_f, then the tied LM head x wte^T:
 *                logits (N T, vocab), row n T + t predicting token t + 1
 *   transformer: the same encoder without the causal mask; ln_f, the mean
 *                over the T positions, head (Linear: head.weight (classes,
 *                embd), head.bias): logits (N, classes)
 */
#ifndef LOOM_NN_H
#define LOOM_NN_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_model_desc {
    const char *arch;     /* "mlp", "cnn", "resnet18", ..., "gpt" (loom_model_names) */
    int in_c;             /* one sample's channels */
    int in_h;             /* one sample's height */
    int in_w;             /* one sample's width */
    int num_classes;      /* outputs of the last layer (at least 2) */
    double dropout;       /* 0 = the model's default (cnn 0.5, mlp none); < 0 = off */
    double bn_momentum;   /* 0 = 0.1 */
    /* ResNets: the depth, overriding the one in the arch name; 0 = the name's.
     * resnet18/34/50 take 18, 34, 50, 101 or 152; resnet20/32/56 any 6n+2. */
    int depth;
    /* ResNets: channels of the first stage (the later ones double); 0 = 64
     * for resnet18/34/50, 16 for resnet20/32/56. */
    int width;
    /* ResNets: the small-image stem, a 3x3 stride-1 conv1 and no max-pool
     * (the CIFAR ResNets always have it). */
    bool small_stem;
    /* text models (gpt, transformer); 0 = the default in brackets */
    int layers;           /* transformer blocks (4) */
    int heads;            /* attention heads; must divide embd (4) */
    int embd;             /* embedding width (128) */
    int seq_len;          /* the longest input, the rows of wpe (128) */
    int vocab;            /* token ids are < vocab (256: bytes) */
} loom_model_desc;

/* Record the model on g, reading x (N, C, H, W) f32 (text models: i32 ids
 * (N, T)); *logits is (N, classes) (gpt: (N T, vocab)). */
loom_status loom_model_build(loom_graph *g, const loom_model_desc *desc, loom_tensor *x, bool train,
                             loom_tensor **logits);
/* "mlp, cnn, resnet18, ..." : every arch loom_model_build knows */
const char *loom_model_names(void);
/* true for the text models (gpt, transformer): input i32 ids (N, T). */
bool loom_model_is_text(const char *arch);
/* Fill a text model's zero size fields with their defaults (see above). */
void loom_model_text_defaults(loom_model_desc *desc);

#ifdef __cplusplus
}
#endif
#endif
