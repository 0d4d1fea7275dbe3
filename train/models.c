/* train/models.c — the built-in model builders (mlp, cnn), with PyTorch's
 * parameter names and default initialisation, and the dispatch to the
 * others by arch name (the ResNets: train/models_resnet.c; the text models:
 * train/models_gpt.c). */
#include <math.h>

#include "impl.h"
#include "loom/nn.h"
#include "models_text.h"

const char *loom_model_names(void) {
    return "mlp, cnn, resnet18, resnet34, resnet50, resnet20, resnet32, resnet56, gpt, transformer";
}

/* train/models_resnet.c */
loom_status loom__model_resnet(loom_graph *g, const loom_model_desc *d, loom_tensor *x, bool train, loom_tensor **logits);

/* torch.nn.Linear / Conv2d defaults: weight kaiming_uniform(a = sqrt(5)),
 * i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same range. */
static loom_tensor *weight(loom_graph *g, const char *layer, int ndim, const int64_t *dims) {
    char name[64];
    snprintf(name, sizeof name, "%s.weight", layer);
    loom_init init = {LOOM_INIT_KAIMING_UNIFORM, sqrt(5.0), 0};
    return loom_param(g, name, LOOM_F32, ndim, dims, &init);
}

static loom_tensor *bias(loom_graph *g, const char *layer, int64_t n, int64_t fan_in) {
    char name[64];
    snprintf(name, sizeof name, "%s.bias", layer);
    double b = 1.0 / sqrt((double)fan_in);
    loom_init init = {LOOM_INIT_UNIFORM, -b, b};
    return loom_param(g, name, LOOM_F32, 1, &n, &init);
}

static loom_tensor *linear(loom_graph *g, const char *layer, loom_tensor *x, int64_t out) {
    if (!x) return NULL;
    int64_t in = loom_tensor_dim(x, -1);
    return loom_linear(g, x, weight(g, layer, 2, (int64_t[]){out, in}), bias(g, layer, out, in));
}

static loom_tensor *batch_norm(loom_graph *g, const char *layer, loom_tensor *x, bool train, double momentum) {
    if (!x) return NULL;
    int64_t c = loom_tensor_dim(x, 1);
    char n[4][64];
    snprintf(n[0], 64, "%s.weight", layer);
    snprintf(n[1], 64, "%s.bias", layer);
    snprintf(n[2], 64, "%s.running_mean", layer);
    snprintf(n[3], 64, "%s.running_var", layer);
    loom_init ones = {LOOM_INIT_ONES, 0, 0};
    loom_tensor *gamma = loom_param(g, n[0], LOOM_F32, 1, &c, &ones);
    loom_tensor *beta = loom_param(g, n[1], LOOM_F32, 1, &c, NULL);
    loom_tensor *rm = loom_state(g, n[2], LOOM_F32, 1, &c, NULL);
    loom_tensor *rv = loom_state(g, n[3], LOOM_F32, 1, &c, &ones);
    return loom_batch_norm(g, x,
                           &(loom_batch_norm_desc){.gamma = gamma, .beta = beta, .running_mean = rm,
                                                   .running_var = rv, .eval = !train, .momentum = momentum});
}

static loom_tensor *conv_bn_relu_pool(loom_graph *g, int idx, loom_tensor *x, int64_t out, bool train, double mom) {
    if (!x) return NULL;
    char conv[16], bn[16];
    snprintf(conv, sizeof conv, "conv%d", idx);
    snprintf(bn, sizeof bn, "bn%d", idx);
    int64_t in = loom_tensor_dim(x, 1);
    loom_conv2d_desc cd = {.pad_h = 1, .pad_w = 1};
    loom_tensor *y = loom_conv2d(g, x, weight(g, conv, 4, (int64_t[]){out, in, 3, 3}), NULL, &cd);
    /* relu(maxpool(bn)) == maxpool(relu(bn)), values and gradients alike (relu
     * is monotonic), and the relu then touches a quarter of the elements */
    loom_pool2d_desc pd = {.kernel_h = 2, .kernel_w = 2};
    return loom_relu(g, loom_max_pool2d(g, batch_norm(g, bn, y, train, mom), &pd));
}

loom_status loom_model_build(loom_graph *g, const loom_model_desc *d, loom_tensor *x, bool train,
                             loom_tensor **logits) {
    *logits = NULL;
    loom_ctx *ctx = g->ctx;
    if (!d || !d->arch) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model: no architecture given (one of %s)", loom_model_names());
    if (loom_model_is_text(d->arch)) return loom__model_build_text(g, d, x, logits);
    if (!x || loom_tensor_ndim(x) != 4 || loom_tensor_dtype(x) != LOOM_F32) {
        char s[96] = "(null)";
        if (x) loom_tensor_shape_str(x, s, sizeof s);
        return loom__err(ctx, LOOM_ERR_SHAPE, "model '%s': input must be f32 (N, C, H, W), got %s", d->arch, s);
    }
    if (d->num_classes < 2) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model '%s': %d classes (at least 2 needed)", d->arch, d->num_classes);
    double mom = d->bn_momentum > 0 ? d->bn_momentum : 0.1;
    loom_tensor *y;
    if (!strcmp(d->arch, "mlp")) {
        y = loom_flatten(g, x, 1, -1);
        y = loom_relu(g, linear(g, "fc1", y, 256));
        y = loom_relu(g, linear(g, "fc2", y, 128));
        if (d->dropout > 0 && train) y = loom_dropout(g, y, d->dropout);
        y = linear(g, "fc3", y, d->num_classes);
    } else if (!strcmp(d->arch, "cnn")) {
        if (loom_tensor_dim(x, 2) < 4 || loom_tensor_dim(x, 3) < 4)
            return loom__err(ctx, LOOM_ERR_SHAPE, "model 'cnn': images must be at least 4x4 (two 2x2 poolings)");
        y = conv_bn_relu_pool(g, 1, x, 32, train, mom);
        y = conv_bn_relu_pool(g, 2, y, 64, train, mom);
        y = loom_flatten(g, y, 1, -1);
        y = loom_relu(g, linear(g, "fc1", y, 128));
        double p = d->dropout == 0 ? 0.5 : d->dropout;
        if (p > 0 && train) y = loom_dropout(g, y, p);
        y = linear(g, "fc2", y, d->num_classes);
    } else if (!strncmp(d->arch, "resnet", 6)) {
        return loom__model_resnet(g, d, x, train, logits);
    } else {
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model: unknown architecture '%s' (one of %s)", d->arch,
                         loom_model_names());
    }
    if (!y) return loom_graph_status(g);
    *logits = y;
    return LOOM_OK;
}
