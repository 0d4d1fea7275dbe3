/* tools/train.c — `loom train`: train a built-in model on Fashion-MNIST (or
 * an IDX dataset directory) with the options of loom/train.h. */
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
    "  --data-dir DIR             a directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]\n"
    "model and training:\n"
    "  --model mlp|cnn            (default cnn)\n"
    "  --epochs N                 (default 1)\n"
    "  --batch N                  samples per micro-batch (default 64)\n"
    "  --lr X                     base learning rate (default 0.01 sgd, 0.001 adam/adamw)\n"
    "  --optimizer sgd|adam|adamw (default sgd)\n"
    "  --momentum X               sgd momentum (default 0.9 for sgd)\n"
    "  --nesterov                 Nesterov momentum\n"
    "  --weight-decay X           (default 0)\n"
    "  --schedule NAME            constant|step|multistep|exponential|cosine|cosine-restarts (default cosine)\n"
    "  --warmup EPOCHS            linear warm-up from lr/10 (fractions allowed; default 0)\n"
    "  --step-size EPOCHS         step schedule period (default 1)\n"
    "  --milestones E1,E2,...     multistep milestones in epochs\n"
    "  --gamma X                  decay factor (default 0.1; exponential: per epoch)\n"
    "  --t0 EPOCHS --t-mult X     cosine-restarts first period and growth (default 1, 1)\n"
    "  --eta-min X                cosine floor (default 0)\n"
    "  --label-smoothing X        (default 0)\n"
    "  --dropout P                cnn dropout before the last layer (default 0.5; 0 = off)\n"
    "  --grad-accum N             micro-batches per optimizer step (default 1)\n"
    "  --clip-grad X              clip the global gradient norm to X (default off)\n"
    "  --seed N                   (default 1)\n"
    "run:\n"
    "  --backend auto|cpu|...     (default auto: the fastest real device available)\n"
    "  --threads N                CPU threads (default: all cores)\n"
    "  --save PATH                checkpoint (safetensors) after every epoch, written atomically\n"
    "  --resume PATH              continue a run from its checkpoint\n"
    "  --eval-every N             evaluate on the test set every N epochs (default 1)\n"
    "  --max-steps N              at most N batches per epoch (quick runs)\n"
    "  --profile                  time every op of the training step; print the top ops\n"
    "  --quiet                    no per-epoch lines, only the RESULT line\n";

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
    printf(", %.1f s (%.0f samples/s)\n", s->seconds, s->samples_per_s);
    fflush(stdout);
}

int loom_cmd_train(int argc, char **argv) {
    const char *data = "fashion-mnist", *data_dir = NULL, *backend = "auto", *sched = "cosine", *optname = "sgd";
    double lr = -1, momentum = -1, wd = 0, warmup = 0, step_size = 1, gamma = 0.1, t0 = 1, t_mult = 1, eta_min = 0;
    double ls = 0, dropout = -2, clip = 0;
    long long epochs = 1, batch = 64, accum = 1, seed = 1, threads = 0, eval_every = 1, max_steps = 0;
    double milestones[LOOM_MAX_MILESTONES];
    int n_milestones = 0;
    bool nesterov = false;
    loom_train_desc d = {0};
    ui u = {isatty(STDOUT_FILENO) != 0, false};
    d.model.arch = "cnn";

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
        STR("--model", d.model.arch)
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
    if (!data_dir && strcmp(data, "fashion-mnist")) return bad("unknown dataset '%s' (fashion-mnist, or use --data-dir)%s", data, "");
    int sk = loom_schedule_parse(sched);
    if (sk < 0) return bad("unknown schedule '%s'%s", sched, "");
    loom_optimizer_kind ok;
    if (!strcmp(optname, "sgd")) ok = LOOM_OPT_SGD;
    else if (!strcmp(optname, "adam")) ok = LOOM_OPT_ADAM;
    else if (!strcmp(optname, "adamw")) ok = LOOM_OPT_ADAMW;
    else return bad("unknown optimizer '%s' (sgd, adam or adamw)%s", optname, "");
    if (nesterov && ok != LOOM_OPT_SGD) return bad("--nesterov is for sgd only%s%s", "", "");

    loom_ctx *ctx;
    if (loom_ctx_create(&(loom_ctx_desc){.threads = (int)threads}, &ctx) != LOOM_OK) return 1;
    loom_dataset train = {0}, test = {0};
    loom_status st = loom_dataset_load_mnist(ctx, data_dir, true, &train);
    if (st == LOOM_OK) st = loom_dataset_load_mnist(ctx, data_dir, false, &test);
    if (st != LOOM_OK) {
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx));
        loom_dataset_free(&train);
        loom_ctx_destroy(ctx);
        return 1;
    }

    d.backend = backend;
    d.backend_desc.threads = (int)threads;
    d.train = &train;
    d.test = &test;
    d.epochs = (int)epochs;
    d.batch = (int)batch;
    d.seed = (uint64_t)seed;
    d.eval_every = (int)eval_every;
    d.max_steps = max_steps;
    d.label_smoothing = ls;
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
    d.on_progress = on_progress;
    d.on_epoch = on_epoch;
    d.user = &u;

    const char *why = NULL;
    if (!strcmp(backend, "auto")) {
        d.backend = loom_pick_backend(ctx, &why);
        if (!u.quiet) printf("backend %s (auto: %s)\n", d.backend, why);
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
        printf("RESULT backend=%s model=%s epochs=%d test_acc=%.4f test_loss=%.4f train_loss=%.4f samples_per_s=%.0f "
               "seconds=%.1f peak_bytes=%zu\n",
               r.backend, d.model.arch, r.epochs_run, r.test_acc, r.test_loss, r.train_loss, r.samples_per_s, r.seconds,
               r.peak_bytes);
    }
    loom_dataset_free(&train);
    loom_dataset_free(&test);
    loom_ctx_destroy(ctx);
    return rc;
}
