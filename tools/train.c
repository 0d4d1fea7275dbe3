/* tools/train.c — `loom train`: train a built-in model on Fashion-MNIST (or
 * an IDX dataset directory) with the options of loom/train.h; `loom lr-find`:
 * the LR range test with the same model, data and optimizer options. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/loom.h"
#include "loom/train.h"

static const char *usage_text =
    "usage: loom train [options]\n"
    "data:\n"
    "  --data fashion-mnist       the Debian dataset-fashion-mnist files (default)\n"
    "  --data-dir DIR             a directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz], or an\n"
    "                             ImageFolder: DIR[/train]/<class>/<image> (+ DIR/val or DIR/test to evaluate)\n"
    "  --transform SPEC           ImageFolder: steps that make the images one size, e.g. 'Resize((32, 32))';\n"
    "                             applied once when the images are loaded (random steps drawn once)\n"
    "  --skip-bad-samples         ImageFolder: skip (and count) corrupt or unsupported images\n"
    "model and training:\n"
    "  --model mlp|cnn            (default cnn)\n"
    "  --epochs N                 (default 1)\n"
    "  --batch N                  samples per micro-batch (default 64)\n"
    "  --lr X                     base learning rate (default 0.01 sgd, 0.001 adam/adamw)\n"
    "  --optimizer sgd|adam|adamw (default sgd)\n"
    "  --momentum X               sgd momentum (default 0.9 for sgd)\n"
    "  --nesterov                 Nesterov momentum\n"
    "  --weight-decay X           (default 0) on weights only (ndim >= 2), not biases / norm parameters\n"
    "  --decay-all                weight decay on every parameter (torch's default)\n"
    "  --schedule NAME            constant|step|multistep|exponential|cosine|cosine-restarts|one-cycle|\n"
    "                             polynomial|plateau (default cosine)\n"
    "  --warmup EPOCHS            linear warm-up from lr/10 (fractions allowed; default 0)\n"
    "  --step-size EPOCHS         step schedule period (default 1)\n"
    "  --milestones E1,E2,...     multistep milestones in epochs\n"
    "  --gamma X                  decay factor (default 0.1; exponential: per epoch)\n"
    "  --t0 EPOCHS --t-mult X     cosine-restarts first period and growth (default 1, 1)\n"
    "  --eta-min X                cosine floor (default 0)\n"
    "  --pct-start X --div-factor X --final-div X   one-cycle (default 0.3, 25, 1e4); --anneal-linear\n"
    "  --power X                  polynomial power (default 1; decays to 0 at the end of training)\n"
    "  --factor X --patience N --cooldown N --min-lr X   plateau: reduce the LR by X after N+1 epochs\n"
    "                             without val (or test) loss improvement (default 0.1, 10, 0, 0)\n"
    "  --label-smoothing X        (default 0)\n"
    "  --dropout P                cnn dropout before the last layer (default 0.5; 0 = off)\n"
    "  --grad-accum N             micro-batches per optimizer step (default 1)\n"
    "  --clip-grad X              clip the global gradient norm to X (default off)\n"
    "  --seed N                   fixes init, data order, validation split, dropout (default 1)\n"
    "  --deterministic            also deterministic kernels: on the CPU the same bits for any --threads;\n"
    "                             on CUDA no TF32 (overrides LOOM_CUDA_TF32=1), no cuBLAS atomics\n"
    "                             (default off: a little faster)\n"
    "  --reproducible             canonical kernels (core/repro.h): the same bits on cpu, vulkan, opencl,\n"
    "                             so a run replays exactly on another backend; f32 only, slower (default off)\n"
    "  --amp fp16|bf16|off        mixed precision: 16-bit activations and matmul/conv inputs, f32 master\n"
    "                             weights; fp16 with dynamic loss scaling (default off)\n"
    "run:\n"
    "  --backend auto|cpu|...     (default auto: the fastest real device available)\n"
    "  --threads N                CPU threads (default: all cores)\n"
    "  --workers N|auto           data-loader threads; 0 = load on the training thread (default auto:\n"
    "                             start at the core count, add while steps wait for data, drop idle ones)\n"
    "  --prefetch K               batch slots per loader thread (default 2)\n"
    "  --save PATH                checkpoint (safetensors) after every epoch, written atomically\n"
    "  --resume PATH              continue a run from its checkpoint\n"
    "  --eval-every N             evaluate on the test set every N epochs (default 1)\n"
    "  --max-steps N              at most N batches per epoch (quick runs)\n"
    "  --max-eval N               evaluate on about N samples only: whole eval batches (quick runs)\n"
    "  --profile                  time every op of the training step; print the top ops\n"
    "  --quiet                    no per-epoch lines, only the RESULT line\n"
    "  --log-csv PATH             CSV log: a row per step and per epoch (loss, accuracy, lr, samples/s, val/test)\n"
    "  --tensorboard DIR          TensorBoard event file in DIR (train/* per step, epoch/* per epoch)\n"
    "validation and early stopping:\n"
    "  --val-split F              hold out a fraction F of the training set for validation (seeded)\n"
    "  --early-stop PATIENCE      stop after PATIENCE epochs without improvement; restore the best weights\n"
    "  --min-delta X              smallest improvement that counts (default 0)\n"
    "  --monitor val_loss|val_acc metric for early stopping (default val_loss)\n"
    "  --keep-last                keep the last weights instead of restoring the best\n"
    "transfer learning:\n"
    "  --init-from PATH           load the model's weights by name from a safetensors file (a loom\n"
    "                             checkpoint); tensors of another shape (the head) keep their fresh init\n"
    "  --init-map OLD=NEW,...     rename the file's tensors first; 'backbone.*=*' strips a prefix\n"
    "  --freeze PATTERNS          freeze parameters matching the patterns (fnmatch, comma-separated or\n"
    "                             repeated), e.g. 'conv*,bn*': no gradient, no optimizer state\n"
    "  --frozen-16bit             with --amp and --freeze: frozen parameters keep only their 16-bit copy\n"
    "  --backbone-lr-mult X       LR x X for the trained parameters outside the head\n"
    "  --head PATTERN             the head's parameters (default: the last fc layer, e.g. 'fc2.*')\n"
    "lr-find (loom lr-find [options]: the options above plus):\n"
    "  --lr-start X --lr-end X    sweep range (default 1e-7 .. 10)\n"
    "  --lr-steps N               batches in the sweep (default 100)\n"
    "  --out PREFIX               write PREFIX.csv and PREFIX.svg (default lr-find)\n";

static int bad(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "loom train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n%s", usage_text);
    return 2;
}

static bool parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

typedef struct ui {
    bool tty, quiet;
} ui;

static void on_progress(void *user, const loom_train_progress *p) {
    ui *u = user;
    if (!u->tty || u->quiet) return;
    if (p->step % 10 && p->step != p->steps) return;
    printf("\repoch %d/%d [%6lld/%lld] %7.0f samples/s  loss %.4f  lr %.3g  ETA %4.0fs ", p->epoch, p->epochs,
           (long long)p->step, (long long)p->steps, p->samples_per_s, p->loss, p->lr, p->eta_s);
    fflush(stdout);
}

static void on_epoch(void *user, const loom_epoch_stats *s) {
    ui *u = user;
    if (u->quiet) return;
    if (u->tty) printf("\r\033[K");
    printf("epoch %d/%d: train loss %.4f", s->epoch, s->epochs, s->train_loss);
    if (!isnan(s->test_acc)) printf(", test loss %.4f, test acc %.2f%%", s->test_loss, 100 * s->test_acc);
    if (!isnan(s->val_loss)) printf(", val loss %.4f, val acc %.2f%%%s", s->val_loss, 100 * s->val_acc, s->best ? " *" : "");
    printf(", %.1f s (%.0f samples/s)\n", s->seconds, s->samples_per_s);
    printf("  data: wait %.1f%%, load %.2f ms/batch, compute %.2f ms/batch, workers %d\n", s->data_wait_pct, s->load_ms,
           s->compute_ms, s->workers);
    if (!isnan(s->loss_scale))
        printf("  amp: loss scale %g, %lld skipped step%s\n", s->loss_scale, (long long)s->skipped_steps,
               s->skipped_steps == 1 ? "" : "s");
    fflush(stdout);
}

static void on_init(void *user, const loom_checkpoint_report *r) {
    ui *u = user;
    if (u->quiet) return;
    const int k = LOOM_CHECKPOINT_REPORT_NAMES;
    printf("init: loaded %d tensors", r->loaded);
    if (r->renamed) printf(" (%d renamed by the map)", r->renamed);
    if (r->ignored) printf(", ignored %d optimizer-state tensors", r->ignored);
    printf("\n");
    const char *what[3] = {"missing (fresh init)", "unexpected (unused)", "shape-mismatched (skipped, fresh init)"};
    int counts[3] = {r->missing, r->unexpected, r->mismatched};
    const char(*names[3])[64] = {r->missing_names, r->unexpected_names, r->mismatched_names};
    for (int w = 0; w < 3; w++) {
        if (!counts[w]) continue;
        printf("init: %d %s:", counts[w], what[w]);
        for (int i = 0; i < counts[w] && i < k; i++) printf(" %s", names[w][i]);
        printf("%s\n", counts[w] > k ? " ..." : "");
    }
    fflush(stdout);
}

/* Append the comma-separated items of v to list (at most cap - 1; NULL-terminated). */
static bool split_list(char *v, const char **list, int *n, int cap) {
    for (char *tok = v;;) {
        char *comma = strchr(tok, ',');
        if (comma) *comma = 0;
        if (*n >= cap - 1 || !*tok) return false; /* too many, or an empty item */
        list[(*n)++] = tok;
        if (!comma) break;
        tok = comma + 1;
    }
    list[*n] = NULL;
    return true;
}

/* OLD=NEW: both non-empty, '*' only at the end of both or neither. */
static bool map_item_ok(const char *old, const char *new_) {
    const char *a = strchr(old, '*'), *b = strchr(new_, '*');
    return old[0] && new_[0] && !strchr(new_, '=') && (!a || !a[1]) && (!b || !b[1]) && !a == !b;
}

/* An ImageFolder split (or a packed shard) for `loom train`: the trainer takes in-memory
 * datasets, so the images are decoded once through the --transform steps
 * (loom's loader, in parallel; random steps draw from epoch 0) into a u8
 * (N, C, H, W) dataset. *found is false when DIR is not an ImageFolder (or
 * has no such split): nothing is loaded and no error is recorded. */
static loom_status load_folder(loom_ctx *ctx, const char *dir, bool train, const char *spec, bool skip_bad, int workers,
                               loom_dataset *out, bool *found, loom_source **keep_src, loom_tf_step *keep_steps,
                               int *keep_nsteps) {
    *found = false;
    static const char *const idx_or_npy[] = {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz", "train-images.npy"};
    char p[4096];
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, idx_or_npy[k]);
        if (access(p, F_OK) == 0) return LOOM_OK; /* IDX or .npy: not an ImageFolder (and no need to load it here) */
    }
    loom_source *src = NULL;
    if (loom_source_open_dir(ctx, dir, train, &src) != LOOM_OK) return LOOM_OK;
    if (!src->get_image && src->kind != LOOM_SAMPLE_U8) { /* not images (an f32 .npy record set) */
        loom_source_destroy(src);
        return LOOM_OK;
    }
    *found = true; /* an ImageFolder, or a packed shard (images of one size: `loom pack`) */
    loom_status st = LOOM_OK;
    if (skip_bad && src->get_image) {
        char root[4096];
        snprintf(root, sizeof root, "%s", src->name);
        loom_source_destroy(src);
        src = NULL;
        if ((st = loom_source_open_imagefolder(ctx, &(loom_imagefolder_desc){.root = root, .skip_bad = true}, &src)) != LOOM_OK)
            return st;
    }
    loom_tf_step steps[32];
    int nsteps = 0;
    loom_loader *ld = NULL;
    if (!spec && src->get_image)
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "%s is an ImageFolder (images of any size): --transform must make "
                               "them one size, e.g. --transform 'Resize((32, 32))'", src->name);
    if (st == LOOM_OK && spec) st = loom_tf_parse(ctx, spec, steps, 32, &nsteps);
    if (st == LOOM_OK)
        st = loom_loader_create(ctx, &(loom_loader_desc){.src = src, .batch = 64, .seed = 1, .workers = workers,
                                                         .steps = steps, .nsteps = nsteps},
                                &ld);
    loom_dataset ds = {0};
    if (st == LOOM_OK) {
        int c;
        int64_t h, w;
        loom_loader_shape(ld, &c, &h, &w);
        ds = (loom_dataset){.n = src->n, .c = c, .h = (int)h, .w = (int)w, .num_classes = src->num_classes};
        size_t per = (size_t)c * (size_t)h * (size_t)w;
        ds.pixels = malloc((size_t)ds.n * per);
        ds.labels = malloc((size_t)ds.n * sizeof *ds.labels);
        if (!ds.pixels || !ds.labels) st = loom_source_error(ctx, LOOM_ERR_OOM, "%s: out of memory", src->name);
        int64_t at = 0;
        while (st == LOOM_OK) {
            loom_loader_batch b;
            if ((st = loom_loader_next(ld, &b)) != LOOM_OK || b.count == 0) break;
            // x (count, c, h, w) = u / 255 -> pixels (count, c, h, w) u8
            for (size_t k = 0; k < (size_t)b.count * per; k++)
                ds.pixels[(size_t)at * per + k] = (uint8_t)lrintf(b.x[k] * 255.0f);
            memcpy(ds.labels + at, b.y, (size_t)b.count * sizeof *b.y);
            at += b.count;
        }
        if (st == LOOM_OK)
            printf("%s: %lld images, %d classes -> %dx%lldx%lld\n", src->name, (long long)src->n, src->num_classes, c,
                   (long long)h, (long long)w);
        if (st == LOOM_OK && loom_imagefolder_skipped(src) > 0)
            printf("%s: skipped %lld bad image(s) (--skip-bad-samples)\n", src->name,
                   (long long)loom_imagefolder_skipped(src));
    }
    loom_loader_destroy(ld);
    if (st == LOOM_OK && keep_src) { /* the training loader reads the source itself, new random draws each epoch */
        *keep_src = src;
        memcpy(keep_steps, steps, (size_t)nsteps * sizeof *steps);
        *keep_nsteps = nsteps;
    } else {
        loom_source_destroy(src);
    }
    if (st == LOOM_OK) *out = ds;
    else loom_dataset_free(&ds);
    return st;
}

static int run(int argc, char **argv, bool lrfind) {
    const char *data = "fashion-mnist", *data_dir = NULL, *backend = "auto", *sched = "cosine", *optname = "sgd";
    const char *transform = NULL;
    bool skip_bad = false;
    double lr = -1, momentum = -1, wd = 0, warmup = 0, step_size = 1, gamma = 0.1, t0 = 1, t_mult = 1, eta_min = 0;
    double ls = 0, dropout = -2, clip = 0, pct_start = 0.3, div_factor = 25, final_div = 1e4, power = 1;
    double pl_factor = 0.1, min_lr = 0;
    long long pl_patience = 10, cooldown = 0;
    bool anneal_linear = false;
    loom_plateau plateau = {0};
    long long epochs = 1, batch = 64, accum = 1, seed = 1, threads = 0, eval_every = 1, max_steps = 0, max_eval = 0, prefetch = 2;
    int workers = LOOM_WORKERS_AUTO;
    const char *amp = "off";
    double milestones[LOOM_MAX_MILESTONES];
    int n_milestones = 0;
    bool nesterov = false;
    loom_train_desc d = {0};
    const char *monitor = "val_loss", *out_prefix = "lr-find";
    long long patience = 0, lr_steps = 100;
    double val_split = 0, min_delta = 0, lr_start = 1e-7, lr_end = 10;
    ui u = {isatty(STDOUT_FILENO) != 0, false};
    d.model.arch = "cnn";
    enum { MAXLIST = 129 };
    const char *freeze[MAXLIST], *init_map[2 * MAXLIST];
    char pool[8192]; /* copies of list arguments (strtok writes into them) */
    size_t pool_used = 0;
    int n_freeze = 0, n_map = 0;
    double backbone_mult = 0;
    freeze[0] = init_map[0] = NULL;
#define OWN(dst, src)                                                                 \
    do {                                                                              \
        size_t len_ = strlen(src) + 1;                                                \
        if (len_ > sizeof pool - pool_used) return bad("%s: the lists are too long%s", a, ""); \
        dst = memcpy(pool + pool_used, src, len_);                                    \
        pool_used += len_;                                                            \
    } while (0)

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV                                                  \
    do {                                                       \
        if (!v) return bad("%s needs a value%s", a, "");       \
        i++;                                                   \
    } while (0)
#define DBL(name, var, cond)                                                                 \
    if (!strcmp(a, name)) {                                                                  \
        NEEDV;                                                                               \
        if (!parse_double(v, &var) || !(cond)) return bad("bad value '%s' for %s", v, a);    \
        continue;                                                                            \
    }
#define INT(name, var, lo, hi)                                                                   \
    if (!strcmp(a, name)) {                                                                      \
        NEEDV;                                                                                   \
        if (!parse_int(v, lo, hi, &var)) return bad("bad value '%s' for %s", v, a);              \
        continue;                                                                                \
    }
#define STR(name, var)   \
    if (!strcmp(a, name)) { \
        NEEDV;           \
        var = v;         \
        continue;        \
    }
        STR("--data", data)
        STR("--data-dir", data_dir)
        STR("--transform", transform)
        if (!strcmp(a, "--skip-bad-samples")) {
            skip_bad = true;
            continue;
        }
        STR("--model", d.model.arch)
        STR("--amp", amp)
        STR("--backend", backend)
        STR("--schedule", sched)
        STR("--optimizer", optname)
        STR("--save", d.save_path)
        STR("--resume", d.resume_path)
        INT("--epochs", epochs, 1, 100000)
        INT("--batch", batch, 1, 1 << 20)
        INT("--grad-accum", accum, 1, 1 << 20)
        INT("--seed", seed, 0, INT64_MAX)
        INT("--threads", threads, 1, 1024)
        INT("--eval-every", eval_every, 1, 100000)
        INT("--max-steps", max_steps, 1, INT64_MAX)
        INT("--max-eval", max_eval, 1, INT64_MAX)
        INT("--prefetch", prefetch, 1, 64)
        if (!strcmp(a, "--workers")) {
            NEEDV;
            long long nw;
            if (!strcmp(v, "auto"))
                workers = LOOM_WORKERS_AUTO;
            else if (parse_int(v, 0, 4096, &nw))
                workers = nw == 0 ? LOOM_WORKERS_SYNC : (int)nw;
            else
                return bad("bad value '%s' for %s (a thread count 0..4096, or auto)", v, a);
            continue;
        }
        DBL("--lr", lr, lr > 0)
        DBL("--momentum", momentum, momentum >= 0 && momentum < 1)
        DBL("--weight-decay", wd, wd >= 0)
        DBL("--warmup", warmup, warmup >= 0)
        DBL("--step-size", step_size, step_size > 0)
        DBL("--gamma", gamma, gamma > 0)
        DBL("--t0", t0, t0 > 0)
        DBL("--t-mult", t_mult, t_mult >= 1)
        DBL("--eta-min", eta_min, eta_min >= 0)
        DBL("--label-smoothing", ls, ls >= 0 && ls < 1)
        DBL("--dropout", dropout, dropout >= 0 && dropout < 1)
        DBL("--clip-grad", clip, clip > 0)
        DBL("--val-split", val_split, val_split > 0 && val_split < 1)
        DBL("--pct-start", pct_start, pct_start > 0 && pct_start < 1)
        DBL("--div-factor", div_factor, div_factor > 0)
        DBL("--final-div", final_div, final_div > 0)
        DBL("--power", power, power > 0)
        DBL("--factor", pl_factor, pl_factor > 0 && pl_factor < 1)
        INT("--patience", pl_patience, 0, 1000000)
        INT("--cooldown", cooldown, 0, 1000000)
        DBL("--min-lr", min_lr, min_lr >= 0)
        INT("--early-stop", patience, 1, 1000000)
        DBL("--min-delta", min_delta, min_delta >= 0)
        STR("--monitor", monitor)
        DBL("--lr-start", lr_start, lr_start > 0)
        DBL("--lr-end", lr_end, lr_end > 0)
        INT("--lr-steps", lr_steps, 2, 10000000)
        STR("--out", out_prefix)
        STR("--log-csv", d.log_csv)
        STR("--init-from", d.init_from)
        STR("--head", d.head)
        DBL("--backbone-lr-mult", backbone_mult, backbone_mult > 0)
        if (!strcmp(a, "--freeze")) {
            NEEDV;
            char *c;
            OWN(c, v);
            if (!split_list(c, freeze, &n_freeze, MAXLIST)) return bad("bad value '%s' for %s (comma-separated patterns)", v, a);
            continue;
        }
        if (!strcmp(a, "--init-map")) {
            NEEDV;
            char *c;
            OWN(c, v);
            const char *items[MAXLIST];
            int n = 0;
            bool ok = split_list(c, items, &n, MAXLIST) && n_map / 2 + n < MAXLIST;
            for (int k = 0; ok && k < n; k++) {
                char *eq = strchr(items[k], '=');
                if (!eq) {
                    ok = false;
                    break;
                }
                *eq = 0;
                ok = map_item_ok(items[k], eq + 1);
                init_map[n_map++] = items[k], init_map[n_map++] = eq + 1;
            }
            if (!ok)
                return bad("bad value '%s' for %s (OLD=NEW pairs, comma-separated; a '*' only at the end of both names)", v, a);
            init_map[n_map] = NULL;
            continue;
        }
        STR("--tensorboard", d.tensorboard_dir)
        if (!strcmp(a, "--milestones")) {
            NEEDV;
            char buf[512];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (n_milestones == LOOM_MAX_MILESTONES || !parse_double(tok, &milestones[n_milestones]) ||
                    milestones[n_milestones] <= 0)
                    return bad("bad value '%s' for %s (positive epochs, comma-separated, at most 16)", v, a);
                n_milestones++;
            }
            continue;
        }
        if (!strcmp(a, "--nesterov")) {
            nesterov = true;
            continue;
        }
        if (!strcmp(a, "--profile")) {
            d.profile = true;
            continue;
        }
        if (!strcmp(a, "--decay-all")) {
            d.opt.decay_all = true;
            continue;
        }
        if (!strcmp(a, "--anneal-linear")) {
            anneal_linear = true;
            continue;
        }
        if (!strcmp(a, "--deterministic")) {
            d.deterministic = true;
            continue;
        }
        if (!strcmp(a, "--frozen-16bit")) {
            d.frozen_16bit = true;
            continue;
        }
        if (!strcmp(a, "--reproducible")) {
            d.backend_desc.reproducible = true;
            continue;
        }
        if (!strcmp(a, "--keep-last")) {
            d.keep_last = true;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            u.quiet = true;
            continue;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("%s", usage_text);
            return 0;
        }
        return bad("unknown option '%s'%s", a, "");
    }
    if (strcmp(d.model.arch, "mlp") && strcmp(d.model.arch, "cnn"))
        return bad("unknown model '%s' (mlp or cnn)%s", d.model.arch, "");
    if (!strcmp(amp, "fp16") || !strcmp(amp, "f16"))
        d.amp = LOOM_F16;
    else if (!strcmp(amp, "bf16"))
        d.amp = LOOM_BF16;
    else if (strcmp(amp, "off"))
        return bad("bad value '%s' for %s (fp16, bf16 or off)", amp, "--amp");
    if (!data_dir && strcmp(data, "fashion-mnist")) return bad("unknown dataset '%s' (fashion-mnist, or use --data-dir)%s", data, "");
    bool use_plateau = !strcmp(sched, "plateau");
    int sk = use_plateau ? LOOM_SCHED_CONSTANT : loom_schedule_parse(sched);
    if (sk < 0) return bad("unknown schedule '%s'%s", sched, "");
    loom_optimizer_kind ok;
    if (!strcmp(optname, "sgd")) ok = LOOM_OPT_SGD;
    else if (!strcmp(optname, "adam")) ok = LOOM_OPT_ADAM;
    else if (!strcmp(optname, "adamw")) ok = LOOM_OPT_ADAMW;
    else return bad("unknown optimizer '%s' (sgd, adam or adamw)%s", optname, "");
    if (nesterov && ok != LOOM_OPT_SGD) return bad("--nesterov is for sgd only%s%s", "", "");
    if (strcmp(monitor, "val_loss") && strcmp(monitor, "val_acc"))
        return bad("unknown monitor '%s' (val_loss or val_acc)%s", monitor, "");
    if (patience > 0 && val_split <= 0) return bad("--early-stop needs --val-split%s%s", "", "");
    if (lr_end <= lr_start) return bad("--lr-end must be above --lr-start%s%s", "", "");

    loom_ctx *ctx;
    if (loom_ctx_create(&(loom_ctx_desc){.threads = (int)threads}, &ctx) != LOOM_OK) return 1;
    loom_dataset train = {0}, test = {0};
    bool folder = false, folder_test = false;
    loom_source *train_src = NULL;
    loom_tf_step train_steps[32];
    int train_nsteps = 0;
    loom_status st = data_dir ? load_folder(ctx, data_dir, true, transform, skip_bad, workers, &train, &folder, &train_src,
                                            train_steps, &train_nsteps)
                              : LOOM_OK;
    if (st == LOOM_OK && folder)
        st = load_folder(ctx, data_dir, false, transform, skip_bad, workers, &test, &folder_test, NULL, NULL, NULL);
    if (st == LOOM_OK && !folder && (transform || skip_bad))
        st = loom_source_error(ctx, LOOM_ERR_INVALID_ARG, "--transform and --skip-bad-samples are for an ImageFolder "
                               "--data-dir");
    if (st == LOOM_OK && !folder) st = loom_dataset_load_mnist(ctx, data_dir, true, &train);
    if (st == LOOM_OK && !folder) st = loom_dataset_load_mnist(ctx, data_dir, false, &test);
    if (st != LOOM_OK) {
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx));
        loom_dataset_free(&train);
        loom_source_destroy(train_src);
        loom_ctx_destroy(ctx);
        return 1;
    }

    d.backend = backend;
    d.backend_desc.threads = (int)threads;
    d.train = &train;
    d.test = folder && !folder_test ? NULL : &test;
    /* an ImageFolder trains through its transforms anew every epoch */
    d.train_source = train_src, d.train_steps = train_steps, d.train_nsteps = train_nsteps;
    if (folder) d.mean = 0.5f, d.std = 0.25f; /* RGB photos, not Fashion-MNIST's statistics */
    d.epochs = (int)epochs;
    d.batch = (int)batch;
    d.seed = (uint64_t)seed;
    d.eval_every = (int)eval_every;
    d.max_steps = max_steps;
    d.max_eval = max_eval;
    d.workers = workers;
    d.prefetch = (int)prefetch;
    d.label_smoothing = ls;
    d.val_split = val_split;
    d.early_stop = (int)patience;
    d.min_delta = min_delta;
    d.monitor = strcmp(monitor, "val_acc") ? LOOM_MONITOR_VAL_LOSS : LOOM_MONITOR_VAL_ACC;
    if (dropout > -2) d.model.dropout = dropout == 0 ? -1 : dropout;
    d.opt.kind = ok;
    d.opt.momentum = momentum >= 0 ? momentum : ok == LOOM_OPT_SGD ? 0.9 : 0;
    d.opt.nesterov = nesterov;
    d.opt.weight_decay = wd;
    d.opt.clip_grad_norm = clip;
    d.opt.grad_accum = (int)accum;
    /* schedule times are optimizer steps */
    int64_t batches = train.n / batch;
    if (max_steps > 0 && max_steps < batches) batches = max_steps;
    double spe = (double)(batches / accum > 0 ? batches / accum : 1);
    d.sched.kind = (loom_schedule_kind)sk;
    d.sched.lr = lr > 0 ? lr : ok == LOOM_OPT_SGD ? 0.01 : 0.001;
    d.sched.warmup = (int64_t)llround(warmup * spe);
    d.sched.step_size = (int64_t)llround(step_size * spe);
    d.sched.gamma = sk == LOOM_SCHED_EXPONENTIAL ? pow(gamma, 1.0 / spe) : gamma;
    for (int i = 0; i < n_milestones; i++) d.sched.milestones[i] = (int64_t)llround(milestones[i] * spe);
    d.sched.n_milestones = n_milestones;
    d.sched.t_max = (int64_t)llround((double)epochs * spe) - d.sched.warmup;
    d.sched.t0 = (int64_t)llround(t0 * spe);
    d.sched.t_mult = t_mult;
    d.sched.eta_min = eta_min;
    d.sched.pct_start = pct_start;
    d.sched.div_factor = div_factor;
    d.sched.final_div_factor = final_div;
    d.sched.anneal_linear = anneal_linear;
    d.sched.power = power;
    if (sk == LOOM_SCHED_ONE_CYCLE || sk == LOOM_SCHED_POLYNOMIAL) d.sched.t_max = (int64_t)llround((double)epochs * spe);
    if (use_plateau) {
        plateau = (loom_plateau){.factor = pl_factor, .patience = pl_patience ? (int)pl_patience : -1,
                                 .cooldown = (int)cooldown, .min_lr = min_lr};
        loom_plateau_init(&plateau, d.sched.lr);
        d.plateau = &plateau;
    }
    d.on_progress = on_progress;
    d.on_epoch = on_epoch;
    d.on_init = on_init;
    d.user = &u;
    if (n_freeze) d.freeze = freeze;
    if (n_map) d.init_map = init_map;
    d.backbone_lr_mult = backbone_mult;

    const char *why = NULL;
    if (!strcmp(backend, "auto")) {
        d.backend = loom_pick_backend(ctx, &why);
        if (!u.quiet) printf("backend %s (auto: %s)\n", d.backend, why);
    }
    if (lrfind) {
        loom_lr_find_result fr;
        loom_lr_find_desc fd = {.start_lr = lr_start, .end_lr = lr_end, .steps = (int)lr_steps};
        char csv[1024], svg[1024];
        snprintf(csv, sizeof csv, "%s.csv", out_prefix);
        snprintf(svg, sizeof svg, "%s.svg", out_prefix);
        if (!u.quiet)
            printf("lr-find: %s on %lld samples, batch %lld, %s, lr %g .. %g over %lld steps\n", d.model.arch,
                   (long long)train.n, batch, optname, lr_start, lr_end, lr_steps);
        st = loom_lr_find(ctx, &d, &fd, &fr);
        if (st == LOOM_OK && (st = loom_lr_find_write_csv(ctx, &fr, csv)) == LOOM_OK)
            st = loom_lr_find_write_svg(ctx, &fr, svg);
        int rc = 0;
        if (st != LOOM_OK) {
            fprintf(stderr, "loom lr-find: %s\n", loom_last_error(ctx));
            rc = 1;
        } else {
            if (!u.quiet)
                printf("%d steps%s; lowest smoothed loss %.4f at lr %.3g; wrote %s, %s\n", fr.n,
                       fr.diverged ? " (stopped: the loss diverged)" : "", fr.smooth[fr.best_index], fr.lr[fr.best_index],
                       csv, svg);
            printf("SUGGESTED lr=%.3g backend=%s points=%d\n", fr.suggestion, fr.backend, fr.n);
        }
        loom_lr_find_result_free(&fr);
        loom_source_destroy(train_src);
        loom_dataset_free(&train);
        loom_dataset_free(&test);
        loom_ctx_destroy(ctx);
        return rc;
    }
    if (!u.quiet)
        printf("training %s on %lld samples (%dx%dx%d, %d classes), testing on %lld; batch %lld, %s, lr %g\n",
               d.model.arch, (long long)train.n, train.c, train.h, train.w, train.num_classes, (long long)test.n, batch,
               optname, d.sched.lr);
    loom_train_result r;
    st = loom_train(ctx, &d, &r);
    int rc = 0;
    if (st != LOOM_OK) {
        if (u.tty) printf("\n");
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx));
        rc = 1;
    } else {
        if (r.n_profile > 0) {
            double total = 0;
            for (int i = 0; i < r.n_profile; i++) total += r.profile[i].seconds;
            printf("profile: training step, top ops by time (%s backend)\n", r.backend);
            for (int i = 0; i < r.n_profile; i++)
                printf("  %-26s %8.3f ms/step  %5.1f%%\n", r.profile[i].op,
                       1e3 * r.profile[i].seconds / (double)(r.profile[i].runs ? r.profile[i].runs : 1),
                       100 * r.profile[i].seconds / (total > 0 ? total : 1));
        }
        if ((r.frozen || backbone_mult > 0) && !u.quiet) {
            printf("transfer: %d parameter tensors frozen (%lld elements), %d trained", r.frozen, (long long)r.frozen_numel,
                   r.trained);
            if (backbone_mult > 0)
                printf("; head %d tensors at lr %g, backbone %d at lr x %g", r.head_params, d.sched.lr,
                       r.trained - r.head_params, backbone_mult);
            if (d.frozen_16bit)
                printf("; %d frozen tensors kept in 16 bits only (%.2f MB saved)", r.frozen_16bit,
                       (double)r.frozen_16bit_saved_bytes / 1e6);
            printf("\n");
        }
        if (wd > 0 && !u.quiet)
            printf("weight decay %g on %d parameter tensors, not on %d (biases, norm parameters%s)\n", wd, r.decayed,
                   r.not_decayed, d.opt.decay_all ? "; --decay-all" : "");
        if (r.restored_best && !u.quiet)
            printf("early stopping: restored the weights of epoch %d (val loss %.4f, val acc %.2f%%)\n", r.best_epoch,
                   r.val_loss, 100 * r.val_acc);
        else if (r.stopped_early && !u.quiet)
            printf("early stopping: stopped after epoch %d\n", r.epochs_run);
        const loom_plan_memory *m = &r.train_memory;
        if (!u.quiet)
            printf("memory (training plan): parameters %.2f MB, optimizer state %.2f MB, inputs/outputs %.2f MB, "
                   "intermediates %.2f MB peak (saved activations %.2f MB)\n",
                   m->param_bytes / 1e6, m->state_bytes / 1e6, m->io_bytes / 1e6, m->arena_bytes / 1e6,
                   m->activation_bytes / 1e6);
        printf("RESULT backend=%s model=%s epochs=%d test_acc=%.4f test_loss=%.4f train_loss=%.4f samples_per_s=%.0f "
               "seconds=%.1f peak_bytes=%zu activation_bytes=%zu amp=%s\n",
               r.backend, d.model.arch, r.epochs_run, r.test_acc, r.test_loss, r.train_loss, r.samples_per_s, r.seconds,
               r.peak_bytes, m->activation_bytes, d.amp == LOOM_F16 ? "fp16" : d.amp == LOOM_BF16 ? "bf16" : "off");
    }
    loom_source_destroy(train_src);
    loom_dataset_free(&train);
    loom_dataset_free(&test);
    loom_ctx_destroy(ctx);
    return rc;
}

int loom_cmd_train(int argc, char **argv) { return run(argc, argv, false); }
int loom_cmd_lr_find(int argc, char **argv) { return run(argc, argv, true); }
