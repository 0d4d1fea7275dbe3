/* train/models_resnet.c — the ResNet builders: torchvision's ResNet-18/34/50
 * (and 101/152 through the depth), He et al. (2015)'s CIFAR ResNet-20/32/56
 * (any depth 6n+2), and the small-image stem on any of them.
 *
 * Names and layouts are torchvision's (conv1.weight, bn1.running_mean,
 * layer2.0.conv1.weight, layer2.0.downsample.0.weight, fc.bias), so weights
 * load from and into torchvision's state_dict by name (less its
 * num_batches_tracked counters). Initialisation matches torchvision's in
 * distribution: every conv kaiming_normal_(mode="fan_out", relu), i.e.
 * N(0, sqrt(2 / (out_channels * kh * kw))); batch norm weight 1, bias 0;
 * fc torch.nn.Linear's default (kaiming_uniform a = sqrt(5) and the bias
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in))). The CIFAR ResNets use the same. */
#include <math.h>

#include "impl.h"
#include "loom/nn.h"

/* One network: its family, blocks per stage, and build-wide settings. */
typedef struct resnet {
    loom_graph *g;
    bool train, bottleneck, cifar;
    double momentum;
    int nstages, blocks[4], width;
} resnet;

/* torchvision: kaiming_normal_(mode="fan_out", nonlinearity="relu"). */
static loom_tensor *conv(const resnet *r, const char *name, loom_tensor *x, int64_t out, int k, int stride) {
    if (!x) return NULL;
    char n[96]; /* loom_param refuses names over 63 bytes */
    snprintf(n, sizeof n, "%s.weight", name);
    int64_t in = loom_tensor_dim(x, 1);
    loom_init init = {LOOM_INIT_NORMAL, 0, sqrt(2.0 / (double)(out * k * k))};
    loom_tensor *w = loom_param(r->g, n, LOOM_F32, 4, (int64_t[]){out, in, k, k}, &init);
    loom_conv2d_desc cd = {.stride_h = stride, .stride_w = stride, .pad_h = k / 2, .pad_w = k / 2};
    return loom_conv2d(r->g, x, w, NULL, &cd);
}

static loom_tensor *bn(const resnet *r, const char *name, loom_tensor *x) {
    if (!x) return NULL;
    int64_t c = loom_tensor_dim(x, 1);
    static const char *const field[4] = {"weight", "bias", "running_mean", "running_var"};
    char n[4][96];
    for (int i = 0; i < 4; i++) snprintf(n[i], sizeof n[i], "%s.%s", name, field[i]);
    loom_init ones = {LOOM_INIT_ONES, 0, 0};
    loom_batch_norm_desc d = {.gamma = loom_param(r->g, n[0], LOOM_F32, 1, &c, &ones),
                              .beta = loom_param(r->g, n[1], LOOM_F32, 1, &c, NULL),
                              .running_mean = loom_state(r->g, n[2], LOOM_F32, 1, &c, NULL),
                              .running_var = loom_state(r->g, n[3], LOOM_F32, 1, &c, &ones),
                              .eval = !r->train,
                              .momentum = r->momentum};
    return loom_batch_norm(r->g, x, &d);
}

/* conv + batch norm, named "<prefix>.<cname>" and "<prefix>.<bname>" (prefix
 * "" for the stem's conv1 and bn1). */
static loom_tensor *conv_bn(const resnet *r, const char *prefix, const char *cname, const char *bname, loom_tensor *x,
                            int64_t out, int k, int stride) {
    char c[64], b[64];
    const char *dot = *prefix ? "." : "";
    snprintf(c, sizeof c, "%s%s%s", prefix, dot, cname);
    snprintf(b, sizeof b, "%s%s%s", prefix, dot, bname);
    return bn(r, b, conv(r, c, x, out, k, stride));
}

/* One block of stage `stage`, index `idx` ("layer2.0"): planes channels
 * inside, planes (BasicBlock) or 4 * planes (Bottleneck) out. Bottleneck is
 * torchvision's v1.5: the stride sits on the 3x3 conv. Where the shape
 * changes (stride 2 or other channels) the shortcut is the projection
 * downsample.0 (1x1 conv, the block's stride) + downsample.1 (batch norm);
 * the CIFAR ResNets take it too (He et al.'s option B), not the zero-padding
 * identity (option A), so they share torchvision's names and code. */
static loom_tensor *block(const resnet *r, int stage, int idx, loom_tensor *x, int64_t planes, int stride) {
    if (!x) return NULL;
    char p[32];
    snprintf(p, sizeof p, "layer%d.%d", stage + 1, idx);
    int64_t out = r->bottleneck ? 4 * planes : planes;
    loom_graph *g = r->g;
    loom_tensor *y;
    if (r->bottleneck) {
        y = loom_relu(g, conv_bn(r, p, "conv1", "bn1", x, planes, 1, 1));
        y = loom_relu(g, conv_bn(r, p, "conv2", "bn2", y, planes, 3, stride));
        y = conv_bn(r, p, "conv3", "bn3", y, out, 1, 1);
    } else {
        y = loom_relu(g, conv_bn(r, p, "conv1", "bn1", x, planes, 3, stride));
        y = conv_bn(r, p, "conv2", "bn2", y, out, 3, 1);
    }
    loom_tensor *shortcut = x;
    if (stride != 1 || loom_tensor_dim(x, 1) != out) shortcut = conv_bn(r, p, "downsample.0", "downsample.1", x, out, 1, stride);
    return loom_relu(g, loom_add(g, y, shortcut));
}

/* The family and stage plan of arch at depth (0 = the name's). */
static loom_status plan_arch(loom_ctx *ctx, const loom_model_desc *d, resnet *r) {
    const char *arch = d->arch;
    char *end = NULL;
    long name_depth = strtol(arch + 6, &end, 10);
    bool tv = !strcmp(arch, "resnet18") || !strcmp(arch, "resnet34") || !strcmp(arch, "resnet50");
    bool cifar = !strcmp(arch, "resnet20") || !strcmp(arch, "resnet32") || !strcmp(arch, "resnet56");
    if (!tv && !cifar)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model: unknown architecture '%s' (one of %s)", arch, loom_model_names());
    if (d->depth < 0 || d->width < 0 || d->width > 4096)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model '%s': depth %d must be >= 0 and width %d in [0, 4096] (0 = default)",
                         arch, d->depth, d->width);
    int depth = d->depth ? d->depth : (int)name_depth;
    r->cifar = cifar;
    if (cifar) {
        if (depth < 8 || (depth - 2) % 6)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG,
                             "model '%s': depth %d is not 6n+2 with n >= 1 (20, 32, 44, 56, 110, ...)", arch, depth);
        r->nstages = 3;
        for (int s = 0; s < 3; s++) r->blocks[s] = (depth - 2) / 6;
        r->width = d->width ? d->width : 16;
        return LOOM_OK;
    }
    static const struct {
        int depth, blocks[4];
        bool bottleneck;
    } tv_depths[] = {{18, {2, 2, 2, 2}, false},
                     {34, {3, 4, 6, 3}, false},
                     {50, {3, 4, 6, 3}, true},
                     {101, {3, 4, 23, 3}, true},
                     {152, {3, 8, 36, 3}, true}};
    for (size_t i = 0; i < sizeof tv_depths / sizeof tv_depths[0]; i++) {
        if (tv_depths[i].depth != depth) continue;
        r->nstages = 4;
        memcpy(r->blocks, tv_depths[i].blocks, sizeof r->blocks);
        r->bottleneck = tv_depths[i].bottleneck;
        r->width = d->width ? d->width : 64;
        return LOOM_OK;
    }
    return loom__err(ctx, LOOM_ERR_INVALID_ARG, "model '%s': depth %d is not one of 18, 34, 50, 101, 152", arch, depth);
}

/* Called by loom_model_build (train/models.c) for every arch named resnet*. */
loom_status loom__model_resnet(loom_graph *g, const loom_model_desc *d, loom_tensor *x, bool train, loom_tensor **logits);

loom_status loom__model_resnet(loom_graph *g, const loom_model_desc *d, loom_tensor *x, bool train, loom_tensor **logits) {
    loom_ctx *ctx = g->ctx;
    resnet r = {.g = g, .train = train, .momentum = d->bn_momentum > 0 ? d->bn_momentum : 0.1};
    loom_status st = plan_arch(ctx, d, &r);
    if (st != LOOM_OK) return st;
    bool small = d->small_stem || r.cifar;
    loom_tensor *y;
    if (small) {
        y = loom_relu(g, conv_bn(&r, "", "conv1", "bn1", x, r.width, 3, 1));
    } else {
        y = loom_relu(g, conv_bn(&r, "", "conv1", "bn1", x, r.width, 7, 2));
        loom_pool2d_desc pd = {.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_h = 1, .pad_w = 1};
        y = loom_max_pool2d(g, y, &pd);
    }
    for (int s = 0; s < r.nstages; s++)
        for (int b = 0; b < r.blocks[s]; b++)
            y = block(&r, s, b, y, (int64_t)r.width << s, s > 0 && b == 0 ? 2 : 1);
    y = loom_flatten(g, loom_global_avg_pool2d(g, y), 1, -1);
    if (y) {
        int64_t in = loom_tensor_dim(y, 1), out = d->num_classes;
        double bound = 1.0 / sqrt((double)in);
        loom_init wi = {LOOM_INIT_KAIMING_UNIFORM, sqrt(5.0), 0}, bi = {LOOM_INIT_UNIFORM, -bound, bound};
        y = loom_linear(g, y, loom_param(g, "fc.weight", LOOM_F32, 2, (int64_t[]){out, in}, &wi),
                        loom_param(g, "fc.bias", LOOM_F32, 1, &out, &bi));
    }
    if (!y) return loom_graph_status(g);
    *logits = y;
    return LOOM_OK;
}
