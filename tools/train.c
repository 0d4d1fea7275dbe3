/* tools/train.c — `loom train`: train a built-in model on Fashion-MNIST (or
 * an IDX dataset directory) with the options of loom/train.h; `loom lr-find`:
 * the LR range test with the same model, data and optimizer options. The
 * options are a table (name, kind, where the value goes, usage lines) read
 * by one loop; a run goes through phases: parse, check, load the data, fill
 * the trainer's desc, then train or sweep and report. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/loom.h"
#include "loom/train.h"
#include "loom/text.h"
#include "cli_num.h"
#include "train_data.h"
#include "train_dist.h"
#include "train_text.h"

enum { MAXLIST = 129 };

/* Every option's value, with its default (cli_defaults). */
typedef struct cli {
    const char *data, *data_dir, *transform, *model, *amp, *backend, *sched, *optname, *monitor, *out_prefix;
    const char *save, *resume, *log_csv, *tensorboard, *init_from, *head, *augment_on, *launcher; /* launcher: auto|mpi|none */
    bool skip_bad, nesterov, profile, decay_all, anneal_linear, deterministic, frozen_16bit, reproducible, keep_last, quiet;
    long long epochs, batch, accum, seed, threads, eval_every, max_steps, max_eval, prefetch, pl_patience, cooldown;
    long long patience, lr_steps;
    long long depth, width; /* resnet: 0 = the model's */
    bool small_stem, allow_nonfinite;
    long long layers, heads, embd, seq_len; /* text models */
    long long token_budget, micro_tokens, eod; /* gpt dynamic batching (eod -1 = none) */
    long long classes;
    int workers;
    double lr, momentum, wd, warmup, step_size, gamma, t0, t_mult, eta_min, ls, dropout, clip, pct_start, div_factor;
    double final_div, power, pl_factor, min_lr, val_split, min_delta, lr_start, lr_end, backbone_mult;
    double bucket_mb, dist_timeout; /* data parallel: MiB per gradient bucket, seconds a collective may take (0: defaults) */
    long long repro_shards;         /* data parallel, --reproducible: shards of the global batch; 0 = the world size */
    double milestones[LOOM_MAX_MILESTONES];
    int n_milestones;
    const char *freeze[MAXLIST], *init_map[2 * MAXLIST];
    int n_freeze, n_map;
    char pool[8192]; /* copies of list arguments (split in place) */
    size_t pool_used;
} cli;

static void cli_defaults(cli *c) {
    memset(c, 0, sizeof *c);
    c->data = "fashion-mnist", c->backend = "auto", c->sched = "cosine", c->optname = "sgd", c->model = "cnn";
    c->amp = "off", c->monitor = "val_loss", c->out_prefix = "lr-find", c->launcher = "auto";
    c->lr = -1, c->momentum = -1, c->step_size = 1, c->gamma = 0.1, c->t0 = 1, c->t_mult = 1, c->dropout = -2;
    c->pct_start = 0.3, c->div_factor = 25, c->final_div = 1e4, c->power = 1, c->pl_factor = 0.1;
    c->pl_patience = 10, c->epochs = 1, c->batch = 64, c->accum = 1, c->seed = 1, c->eval_every = 1, c->prefetch = 2;
    c->workers = LOOM_WORKERS_AUTO, c->lr_steps = 100, c->lr_start = 1e-7, c->lr_end = 10;
    c->eod = -1;
}

typedef enum opt_kind {
    O_TEXT,       /* a usage line only */
    O_STR,        /* const char * */
    O_INT,        /* long long in [imin, imax] */
    O_DBL_GT,     /* double, lo < x (< hi) */
    O_DBL_GE,     /* double, lo <= x (< hi) */
    O_FLAG,       /* bool, set */
    O_WORKERS,    /* int: a thread count or auto */
    O_MILESTONES, /* comma-separated epochs */
    O_FREEZE,     /* comma-separated patterns, repeatable */
    O_MAP,        /* OLD=NEW pairs, comma-separated, repeatable */
    O_HELP,
} opt_kind;

typedef struct opt {
    const char *name;  /* NULL: a line of the usage text only */
    opt_kind kind;
    size_t off;        /* where the value goes in cli */
    long long imin, imax;
    double lo, hi;
    const char *usage; /* its lines of the usage text; NULL: on another option's line */
} opt;

#define OFF(f) offsetof(cli, f)
static const opt opts[] = {
    {NULL, O_TEXT, 0, .usage =
         "usage: loom train [options]\n"},
    {NULL, O_TEXT, 0, .usage =
         "data:\n"},
    {"--data", O_STR, OFF(data), .usage =
         "  --data fashion-mnist       the Debian dataset-fashion-mnist files (default)\n"},
    {"--data-dir", O_STR, OFF(data_dir), .usage =
         "  --data-dir DIR             a directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz], or\n"
         "                             {train,test}-{images,labels}.npy, train.shard (+ val.shard or test.shard),\n"
         "                             an ImageFolder: DIR[/train]/<class>/<image> (+ DIR/val or DIR/test to\n"
         "                             evaluate), or a shard file\n"},
    {"--classes", O_INT, OFF(classes), .imin = 2, .imax = 1 << 20, .usage =
         "  --classes N                the class count (default: the dataset's: its class folders, the shard's\n"
         "                             header, else the largest training label + 1); every label is checked\n"},
    {"--transform", O_STR, OFF(transform), .usage =
         "  --transform SPEC           ImageFolder: steps that make the images one size, e.g. 'Resize((32, 32))';\n"
         "                             IDX: augmentation keeping the size, e.g. 'RandomCrop(28, padding=4);\n"
         "                             RandomHorizontalFlip()'; random steps are drawn anew every epoch\n"},
    {"--skip-bad-samples", O_FLAG, OFF(skip_bad), .usage =
         "  --skip-bad-samples         ImageFolder: skip (and count) corrupt or unsupported images\n"
         "                             and those the decoder warns about (e.g. a JPEG with extraneous bytes);\n"
         "                             without it the first such image is an error naming the file\n"},
    {NULL, O_TEXT, 0, .usage =
         "model and training:\n"},
    {"--model", O_STR, OFF(model), .usage =
         "  --model NAME               mlp|cnn|resnet20|32|56|resnet18|34|50|gpt|transformer (default cnn)\n"},
    {"--depth", O_INT, OFF(depth), .imin = 8, .imax = 1000, .usage =
         "  --depth N --width N        resnet depth (resnet20/32/56: 6n+2; resnet18/34/50: 18|34|50|101|152) and\n"
         "                             first-stage channels (default: the name's depth; width 16, or 64 for 18/34/50)\n"},
    {"--width", O_INT, OFF(width), .imin = 1, .imax = 4096},
    {"--small-stem", O_FLAG, OFF(small_stem), .usage =
         "  --small-stem               resnet18/34/50: 3x3 stride-1 conv1 and no max-pool, for small images\n"},
    {"--layers", O_INT, OFF(layers), .imin = 1, .imax = 1024, .usage =
         "  --layers N --heads N --embd N --seq-len N   gpt/transformer size (default 4, 4, 128, 128)\n"},
    {"--heads", O_INT, OFF(heads), .imin = 1, .imax = 1024},
    {"--embd", O_INT, OFF(embd), .imin = 1, .imax = 65536},
    {"--seq-len", O_INT, OFF(seq_len), .imin = 1, .imax = 1 << 20},
    {"--token-budget", O_INT, OFF(token_budget), .imin = 1, .imax = INT64_MAX, .usage =
         "  --token-budget N           gpt: dynamic batching, N tokens per optimizer step (length-bucketed)\n"
         "  --micro-tokens N           gpt: tokens per micro-batch, the memory budget (default min(N, 4 seq-len))\n"
         "  --eod ID                   gpt: a sample ends after its first token ID (default: none)\n"},
    {"--micro-tokens", O_INT, OFF(micro_tokens), .imin = 1, .imax = INT64_MAX},
    {"--eod", O_INT, OFF(eod), .imin = 0, .imax = INT32_MAX},
    {"--epochs", O_INT, OFF(epochs), .imin = 1, .imax = 100000, .usage =
         "  --epochs N                 (default 1)\n"},
    {"--batch", O_INT, OFF(batch), .imin = 1, .imax = 1 << 20, .usage =
         "  --batch N                  samples per micro-batch (default 64)\n"},
    {"--lr", O_DBL_GT, OFF(lr), .lo = 0, .hi = INFINITY, .usage =
         "  --lr X                     base learning rate (default 0.01 sgd, 0.001 adam/adamw)\n"},
    {"--optimizer", O_STR, OFF(optname), .usage =
         "  --optimizer sgd|adam|adamw (default sgd)\n"},
    {"--momentum", O_DBL_GE, OFF(momentum), .lo = 0, .hi = 1, .usage =
         "  --momentum X               sgd momentum (default 0.9 for sgd)\n"},
    {"--nesterov", O_FLAG, OFF(nesterov), .usage =
         "  --nesterov                 Nesterov momentum\n"},
    {"--weight-decay", O_DBL_GE, OFF(wd), .lo = 0, .hi = INFINITY, .usage =
         "  --weight-decay X           (default 0) on weights only (ndim >= 2), not biases / norm parameters\n"},
    {"--decay-all", O_FLAG, OFF(decay_all), .usage =
         "  --decay-all                weight decay on every parameter (torch's default)\n"},
    {"--schedule", O_STR, OFF(sched), .usage =
         "  --schedule NAME            constant|step|multistep|exponential|cosine|cosine-restarts|one-cycle|\n"
         "                             polynomial|plateau (default cosine)\n"},
    {"--warmup", O_DBL_GE, OFF(warmup), .lo = 0, .hi = INFINITY, .usage =
         "  --warmup EPOCHS            linear warm-up from lr/10 (fractions allowed; default 0)\n"},
    {"--step-size", O_DBL_GT, OFF(step_size), .lo = 0, .hi = INFINITY, .usage =
         "  --step-size EPOCHS         step schedule period (default 1)\n"},
    {"--milestones", O_MILESTONES, OFF(n_milestones), .usage =
         "  --milestones E1,E2,...     multistep milestones in epochs\n"},
    {"--gamma", O_DBL_GT, OFF(gamma), .lo = 0, .hi = INFINITY, .usage =
         "  --gamma X                  decay factor (default 0.1; exponential: per epoch)\n"},
    {"--t0", O_DBL_GT, OFF(t0), .lo = 0, .hi = INFINITY, .usage =
         "  --t0 EPOCHS --t-mult X     cosine-restarts first period and growth (default 1, 1)\n"},
    {"--t-mult", O_DBL_GE, OFF(t_mult), .lo = 1, .hi = INFINITY},
    {"--eta-min", O_DBL_GE, OFF(eta_min), .lo = 0, .hi = INFINITY, .usage =
         "  --eta-min X                cosine floor (default 0)\n"},
    {"--pct-start", O_DBL_GT, OFF(pct_start), .lo = 0, .hi = 1, .usage =
         "  --pct-start X --div-factor X --final-div X   one-cycle (default 0.3, 25, 1e4); --anneal-linear\n"},
    {"--div-factor", O_DBL_GT, OFF(div_factor), .lo = 0, .hi = INFINITY},
    {"--final-div", O_DBL_GT, OFF(final_div), .lo = 0, .hi = INFINITY},
    {"--anneal-linear", O_FLAG, OFF(anneal_linear), .usage = NULL},
    {"--power", O_DBL_GT, OFF(power), .lo = 0, .hi = INFINITY, .usage =
         "  --power X                  polynomial power (default 1; decays to 0 at the end of training)\n"},
    {"--factor", O_DBL_GT, OFF(pl_factor), .lo = 0, .hi = 1, .usage =
         "  --factor X --patience N --cooldown N --min-lr X   plateau: reduce the LR by X after N+1 epochs\n"
         "                             without val (or test) loss improvement (default 0.1, 10, 0, 0)\n"},
    {"--patience", O_INT, OFF(pl_patience), .imin = 0, .imax = 1000000},
    {"--cooldown", O_INT, OFF(cooldown), .imin = 0, .imax = 1000000},
    {"--min-lr", O_DBL_GE, OFF(min_lr), .lo = 0, .hi = INFINITY},
    {"--label-smoothing", O_DBL_GE, OFF(ls), .lo = 0, .hi = 1, .usage =
         "  --label-smoothing X        (default 0)\n"},
    {"--dropout", O_DBL_GE, OFF(dropout), .lo = 0, .hi = 1, .usage =
         "  --dropout P                cnn dropout before the last layer (default 0.5; 0 = off)\n"},
    {"--grad-accum", O_INT, OFF(accum), .imin = 1, .imax = 1 << 20, .usage =
         "  --grad-accum N             micro-batches per optimizer step (default 1)\n"},
    {"--clip-grad", O_DBL_GT, OFF(clip), .lo = 0, .hi = INFINITY, .usage =
         "  --clip-grad X              clip the global gradient norm to X (default off)\n"},
    {"--seed", O_INT, OFF(seed), .imin = 0, .imax = INT64_MAX, .usage =
         "  --seed N                   fixes init, data order, validation split, dropout (default 1)\n"},
    {"--deterministic", O_FLAG, OFF(deterministic), .usage =
         "  --deterministic            also deterministic kernels: on the CPU the same bits for any --threads;\n"
         "                             on CUDA no TF32 (overrides LOOM_CUDA_TF32=1), no cuBLAS atomics\n"
         "                             (default off: a little faster)\n"},
    {"--reproducible", O_FLAG, OFF(reproducible), .usage =
         "  --reproducible             canonical kernels (core/repro.h): the same bits on cpu, vulkan, opencl,\n"
         "                             so a run replays exactly on another backend; f32 only, slower (default off)\n"},
    {"--amp", O_STR, OFF(amp), .usage =
         "  --amp fp16|bf16|off        mixed precision: 16-bit activations and matmul/conv inputs, f32 master\n"
         "                             weights; fp16 with dynamic loss scaling (default off)\n"},
    {NULL, O_TEXT, 0, .usage =
         "run:\n"},
    {"--backend", O_STR, OFF(backend), .usage =
         "  --backend auto|cpu|...     (default auto: the fastest real device available)\n"},
    {"--launcher", O_STR, OFF(launcher), .usage =
         "  --launcher auto|mpi|none   data parallel: mpi = one rank of `mpirun -np N loom train ...` (--batch\n"
         "                             per rank); auto = mpi when mpirun started this process (default auto)\n"},
    {"--bucket-mb", O_DBL_GT, OFF(bucket_mb), .lo = 0, .hi = 1 << 20, .usage =
         "  --bucket-mb F              data parallel: gradient bucket size in MiB (default 25; the first <= 1)\n"},
    {"--repro-shards", O_INT, OFF(repro_shards), .imin = 1, .imax = 1 << 20, .usage =
         "  --repro-shards K           --reproducible: K shards of the global batch, the same bits on 1..K ranks\n"},
    {"--dist-timeout", O_DBL_GT, OFF(dist_timeout), .lo = 0, .hi = 1e9, .usage =
         "  --dist-timeout S           data parallel: a rank waiting S s for the others ends the job (default 300)\n"},
    {"--threads", O_INT, OFF(threads), .imin = 1, .imax = 1024, .usage =
         "  --threads N                CPU threads (default: all cores)\n"},
    {"--workers", O_WORKERS, OFF(workers), .usage =
         "  --workers N|auto           data-loader threads; 0 = load on the training thread (default auto:\n"
         "                             start at the core count, add while steps wait for data, drop idle ones)\n"},
    {"--augment-on", O_STR, OFF(augment_on), .usage = "  --augment-on device|host   augment on the backend or the loader (default: device on a GPU)\n"},
    {"--prefetch", O_INT, OFF(prefetch), .imin = 1, .imax = 64, .usage =
         "  --prefetch K               batch slots per loader thread (default 2)\n"},
    {"--save", O_STR, OFF(save), .usage =
         "  --save PATH                checkpoint (safetensors) after every epoch, written atomically\n"},
    {"--resume", O_STR, OFF(resume), .usage =
         "  --resume PATH              continue a run from its checkpoint\n"},
    {"--eval-every", O_INT, OFF(eval_every), .imin = 1, .imax = 100000, .usage =
         "  --eval-every N             evaluate on the test set every N epochs (default 1)\n"},
    {"--max-steps", O_INT, OFF(max_steps), .imin = 1, .imax = INT64_MAX, .usage =
         "  --max-steps N              at most N batches per epoch (quick runs)\n"},
    {"--max-eval", O_INT, OFF(max_eval), .imin = 1, .imax = INT64_MAX, .usage =
         "  --max-eval N               evaluate on about N samples only: whole eval batches (quick runs)\n"},
    {"--profile", O_FLAG, OFF(profile), .usage =
         "  --profile                  time every op of the training step; print the top ops\n"},
    {"--quiet", O_FLAG, OFF(quiet), .usage =
         "  --quiet                    no per-epoch lines, only the RESULT line\n"},
    {"--log-csv", O_STR, OFF(log_csv), .usage =
         "  --log-csv PATH             CSV log: a row per step and per epoch (loss, accuracy, lr, samples/s, val/test)\n"},
    {"--tensorboard", O_STR, OFF(tensorboard), .usage =
         "  --tensorboard DIR          TensorBoard event file in DIR (train/* per step, epoch/* per epoch)\n"},
    {NULL, O_TEXT, 0, .usage =
         "validation and early stopping:\n"},
    {"--val-split", O_DBL_GT, OFF(val_split), .lo = 0, .hi = 1, .usage =
         "  --val-split F              hold out a fraction F of the training set for validation (seeded)\n"},
    {"--early-stop", O_INT, OFF(patience), .imin = 1, .imax = 1000000, .usage =
         "  --early-stop PATIENCE      stop after PATIENCE epochs without improvement; restore the best weights\n"},
    {"--min-delta", O_DBL_GE, OFF(min_delta), .lo = 0, .hi = INFINITY, .usage =
         "  --min-delta X              smallest improvement that counts (default 0)\n"},
    {"--monitor", O_STR, OFF(monitor), .usage =
         "  --monitor val_loss|val_acc metric for early stopping (default val_loss)\n"},
    {"--keep-last", O_FLAG, OFF(keep_last), .usage =
         "  --keep-last                keep the last weights instead of restoring the best\n"},
    {NULL, O_TEXT, 0, .usage =
         "transfer learning:\n"},
    {"--init-from", O_STR, OFF(init_from), .usage =
         "  --init-from PATH           load the model's weights by name from a safetensors file (a loom\n"
         "                             checkpoint); tensors of another shape (the head) keep their fresh init\n"},
    {"--allow-nonfinite", O_FLAG, OFF(allow_nonfinite), .usage =
         "  --allow-nonfinite          load --init-from / --resume files with NaN or infinite values (refused by\n"
         "                             default: the error names the tensor and the first bad index)\n"},
    {"--init-map", O_MAP, OFF(n_map), .usage =
         "  --init-map OLD=NEW,...     rename the file's tensors first; 'backbone.*=*' strips a prefix\n"},
    {"--freeze", O_FREEZE, OFF(n_freeze), .usage =
         "  --freeze PATTERNS          freeze parameters matching the patterns (fnmatch, comma-separated or\n"
         "                             repeated), e.g. 'conv*,bn*': no gradient, no optimizer state\n"},
    {"--frozen-16bit", O_FLAG, OFF(frozen_16bit), .usage =
         "  --frozen-16bit             with --amp and --freeze: frozen parameters keep only their 16-bit copy\n"},
    {"--backbone-lr-mult", O_DBL_GT, OFF(backbone_mult), .lo = 0, .hi = INFINITY, .usage =
         "  --backbone-lr-mult X       LR x X for the trained parameters outside the head\n"},
    {"--head", O_STR, OFF(head), .usage =
         "  --head PATTERN             the head's parameters (default: the last fc layer, e.g. 'fc2.*')\n"},
    {NULL, O_TEXT, 0, .usage =
         "lr-find (loom lr-find [options]: the options above plus):\n"},
    {"--lr-start", O_DBL_GT, OFF(lr_start), .lo = 0, .hi = INFINITY, .usage =
         "  --lr-start X --lr-end X    sweep range (default 1e-7 .. 10)\n"},
    {"--lr-end", O_DBL_GT, OFF(lr_end), .lo = 0, .hi = INFINITY},
    {"--lr-steps", O_INT, OFF(lr_steps), .imin = 2, .imax = 10000000, .usage =
         "  --lr-steps N               batches in the sweep (default 100)\n"},
    {"--out", O_STR, OFF(out_prefix), .usage =
         "  --out PREFIX               write PREFIX.csv and PREFIX.svg (default lr-find)\n"},
    {"--help", O_HELP, 0, .usage = NULL},
    {"-h", O_HELP, 0, .usage = NULL},
};
#undef OFF

static void print_usage(FILE *f) {
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (opts[i].usage) fputs(opts[i].usage, f);
}

static int bad(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "loom train: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n");
    print_usage(stderr);
    return 2;
}

static bool parse_double(const char *s, double *out) { return loom_cli_double(s, out); }

static bool parse_int(const char *s, long long lo, long long hi, long long *out) { return loom_cli_int(s, lo, hi, out); }

/* A copy of a list argument in c->pool (split in place); NULL when full. */
static char *own(cli *c, const char *v) {
    size_t len = strlen(v) + 1;
    if (len > sizeof c->pool - c->pool_used) return NULL;
    char *p = memcpy(c->pool + c->pool_used, v, len);
    c->pool_used += len;
    return p;
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

static int parse_map(cli *c, const char *a, const char *v) {
    char *s = own(c, v);
    if (!s) return bad("%s: the lists are too long%s", a, "");
    const char *items[MAXLIST];
    int n = 0;
    bool ok = split_list(s, items, &n, MAXLIST) && c->n_map / 2 + n < MAXLIST;
    for (int k = 0; ok && k < n; k++) {
        char *eq = strchr(items[k], '=');
        if (!eq) {
            ok = false;
            break;
        }
        *eq = 0;
        ok = map_item_ok(items[k], eq + 1);
        c->init_map[c->n_map++] = items[k], c->init_map[c->n_map++] = eq + 1;
    }
    if (!ok) return bad("bad value '%s' for %s (OLD=NEW pairs, comma-separated; a '*' only at the end of both names)", v, a);
    c->init_map[c->n_map] = NULL;
    return -1;
}

/* Positive epochs, comma-separated: an empty item ("1,,2", "1,") is refused. */
static int parse_milestones(cli *c, const char *a, const char *v) {
    char buf[512];
    if (snprintf(buf, sizeof buf, "%s", v) >= (int)sizeof buf) return bad("bad value '%s' for %s (too long)", v, a);
    for (char *tok = buf, *comma;; tok = comma + 1) {
        if ((comma = strchr(tok, ','))) *comma = 0;
        if (c->n_milestones == LOOM_MAX_MILESTONES || !parse_double(tok, &c->milestones[c->n_milestones]) ||
            c->milestones[c->n_milestones] <= 0)
            return bad("bad value '%s' for %s (positive epochs, comma-separated, at most 16)", v, a);
        c->n_milestones++;
        if (!comma) return -1;
    }
}

/* The value v of option o (name a) into c: -1 = taken, else the exit code. */
static int take_value(cli *c, const opt *o, const char *a, const char *v) {
    void *dst = (char *)c + o->off;
    long long n;
    switch (o->kind) {
    case O_STR: *(const char **)dst = v; return -1;
    case O_INT:
        if (!parse_int(v, o->imin, o->imax, dst)) return bad("bad value '%s' for %s", v, a);
        return -1;
    case O_DBL_GT:
    case O_DBL_GE: {
        double *x = dst;
        if (!parse_double(v, x) || !(o->kind == O_DBL_GT ? *x > o->lo : *x >= o->lo) || !(*x < o->hi))
            return bad("bad value '%s' for %s", v, a);
        if (*x >= 1e15) /* no option means anything that large; the schedules' products would overflow */
            return bad("bad value '%s' for %s (at most 1e15)", v, a);
        return -1;
    }
    case O_WORKERS:
        if (!strcmp(v, "auto")) c->workers = LOOM_WORKERS_AUTO;
        else if (parse_int(v, 0, 4096, &n)) c->workers = n == 0 ? LOOM_WORKERS_SYNC : (int)n;
        else return bad("bad value '%s' for %s (a thread count 0..4096, or auto)", v, a);
        return -1;
    case O_MILESTONES: return parse_milestones(c, a, v);
    case O_FREEZE: {
        char *s = own(c, v);
        if (!s) return bad("%s: the lists are too long%s", a, "");
        if (!split_list(s, c->freeze, &c->n_freeze, MAXLIST)) return bad("bad value '%s' for %s (comma-separated patterns)", v, a);
        return -1;
    }
    case O_MAP: return parse_map(c, a, v);
    default: return -1;
    }
}

/* The command line into c: -1 = go on, else the exit code (usage: 2, --help: 0). */
static int parse_args(int argc, char **argv, cli *c) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const opt *o = NULL;
        for (size_t k = 0; k < sizeof opts / sizeof *opts && !o; k++)
            if (opts[k].name && !strcmp(opts[k].name, a)) o = &opts[k];
        if (!o) return bad("unknown option '%s'%s", a, "");
        if (o->kind == O_HELP) {
            print_usage(stdout);
            return 0;
        }
        if (o->kind == O_FLAG) {
            *(bool *)((char *)c + o->off) = true;
            continue;
        }
        if (i + 1 >= argc) return bad("%s needs a value%s", a, "");
        int rc = take_value(c, o, a, argv[++i]);
        if (rc >= 0) return rc;
    }
    return -1;
}

/* The names given on the command line, as the library's values. */
typedef struct choices {
    loom_dtype amp;
    bool use_plateau;
    int sched, augment;
    loom_optimizer_kind opt;
} choices;

/* A name in the library's list of models. */
static bool known_model(const char *m) {
    const char *s = loom_model_names();
    size_t n = strlen(m);
    for (const char *p = strstr(s, m); n && p; p = strstr(p + 1, m))
        if ((p == s || p[-1] == ' ') && (p[n] == ',' || !p[n])) return true;
    return false;
}

/* --depth, --width, --small-stem: resnets only; the depth fits the family. */
static int check_resnet(const cli *c) {
    bool cifar = !strcmp(c->model, "resnet20") || !strcmp(c->model, "resnet32") || !strcmp(c->model, "resnet56");
    if (strncmp(c->model, "resnet", 6) && (c->depth || c->width || c->small_stem))
        return bad("--depth, --width and --small-stem are for the resnet models, not '%s'%s", c->model, "");
    char d[24];
    snprintf(d, sizeof d, "%lld", c->depth);
    if (c->depth && cifar && (c->depth - 2) % 6) return bad("bad value '%s' for --depth (%s: 6n+2, e.g. 20, 32, 44, 56, 110)", d, c->model);
    if (c->depth && !cifar && c->depth != 18 && c->depth != 34 && c->depth != 50 && c->depth != 101 && c->depth != 152)
        return bad("bad value '%s' for --depth (%s: 18, 34, 50, 101 or 152)", d, c->model);
    return -1;
}

static int check_names(const cli *c, choices *ch) {
    if (!known_model(c->model)) return bad("unknown model '%s' (%s)", c->model, loom_model_names());
    int rc = check_resnet(c);
    if (rc >= 0) return rc;
    if (!strcmp(c->amp, "fp16") || !strcmp(c->amp, "f16"))
        ch->amp = LOOM_F16;
    else if (!strcmp(c->amp, "bf16"))
        ch->amp = LOOM_BF16;
    else if (strcmp(c->amp, "off"))
        return bad("bad value '%s' for %s (fp16, bf16 or off)", c->amp, "--amp");
    else
        ch->amp = LOOM_F32;
    if (!c->data_dir && strcmp(c->data, "fashion-mnist"))
        return bad("unknown dataset '%s' (fashion-mnist, or use --data-dir)%s", c->data, "");
    ch->use_plateau = !strcmp(c->sched, "plateau");
    ch->sched = ch->use_plateau ? LOOM_SCHED_CONSTANT : loom_schedule_parse(c->sched);
    if (ch->sched < 0) return bad("unknown schedule '%s'%s", c->sched, "");
    if (!strcmp(c->optname, "sgd")) ch->opt = LOOM_OPT_SGD;
    else if (!strcmp(c->optname, "adam")) ch->opt = LOOM_OPT_ADAM;
    else if (!strcmp(c->optname, "adamw")) ch->opt = LOOM_OPT_ADAMW;
    else return bad("unknown optimizer '%s' (sgd, adam or adamw)%s", c->optname, "");
    if (c->nesterov && ch->opt != LOOM_OPT_SGD) return bad("--nesterov is for sgd only%s%s", "", "");
    if (strcmp(c->monitor, "val_loss") && strcmp(c->monitor, "val_acc"))
        return bad("unknown monitor '%s' (val_loss or val_acc)%s", c->monitor, "");
    if (c->patience > 0 && c->val_split <= 0) return bad("--early-stop needs --val-split%s%s", "", "");
    if (c->lr_end <= c->lr_start) return bad("--lr-end must be above --lr-start%s%s", "", "");
    if ((ch->augment = loom_augment_on_parse(c->augment_on)) < 0) return bad("bad value '%s' for %s (device, host or auto)", c->augment_on, "--augment-on");
    return -1;
}

/* The schedule, with its times (given in epochs) in optimizer steps. */
static void fill_schedule(const cli *c, const choices *ch, int64_t train_n, loom_trainer_desc *d, loom_plateau *plateau) {
    int64_t batches = train_n / c->batch;
    if (c->max_steps > 0 && c->max_steps < batches) batches = c->max_steps;
    double spe = (double)(batches / c->accum > 0 ? batches / c->accum : 1);
    loom_schedule *s = &d->optim.sched;
    s->kind = (loom_schedule_kind)ch->sched;
    s->lr = c->lr > 0 ? c->lr : ch->opt == LOOM_OPT_SGD ? 0.01 : 0.001;
    s->warmup = (int64_t)llround(c->warmup * spe);
    s->step_size = (int64_t)llround(c->step_size * spe);
    s->gamma = ch->sched == LOOM_SCHED_EXPONENTIAL ? pow(c->gamma, 1.0 / spe) : c->gamma;
    for (int i = 0; i < c->n_milestones; i++) s->milestones[i] = (int64_t)llround(c->milestones[i] * spe);
    s->n_milestones = c->n_milestones;
    s->t_max = (int64_t)llround((double)c->epochs * spe) - s->warmup;
    s->t0 = (int64_t)llround(c->t0 * spe);
    s->t_mult = c->t_mult;
    s->eta_min = c->eta_min;
    s->pct_start = c->pct_start;
    s->div_factor = c->div_factor;
    s->final_div_factor = c->final_div;
    s->anneal_linear = c->anneal_linear;
    s->power = c->power;
    if (ch->sched == LOOM_SCHED_ONE_CYCLE || ch->sched == LOOM_SCHED_POLYNOMIAL)
        s->t_max = (int64_t)llround((double)c->epochs * spe);
    if (ch->use_plateau) {
        *plateau = (loom_plateau){.factor = c->pl_factor, .patience = c->pl_patience ? (int)c->pl_patience : -1,
                                  .cooldown = (int)c->cooldown, .min_lr = c->min_lr};
        loom_plateau_init(plateau, s->lr);
        d->optim.plateau = plateau;
    }
}

static void fill_desc(const cli *c, const choices *ch, loom__run_data *rd, loom_trainer_desc *d) {
    d->data.train = &rd->train;
    d->data.test = rd->folder && !rd->folder_test ? NULL : &rd->test;
    /* an ImageFolder trains through its transforms anew every epoch */
    d->data.train_source = rd->train_src, d->data.train_steps = rd->train_steps, d->data.train_nsteps = rd->train_nsteps;
    /* the data's normalisation: Fashion-MNIST's statistics, or RGB photos' */
    if (rd->folder) d->data.mean = 0.5f, d->data.std = 0.25f;
    else d->data.mean = 0.2860f, d->data.std = 0.3530f;
    d->data.batch = (int)c->batch;
    d->data.workers = c->workers, d->data.augment_on = (loom_augment_on)ch->augment;
    d->data.prefetch = (int)c->prefetch, d->data.val_split = c->val_split;
    if (rd->val.n > 0) d->data.val = &rd->val, d->data.val_split = 0; /* split by train_data.c (IDX + --transform) */
    d->model.net.arch = c->model;
    d->model.net.depth = (int)c->depth, d->model.net.width = (int)c->width, d->model.net.small_stem = c->small_stem;
    d->model.net.layers = (int)c->layers, d->model.net.heads = (int)c->heads, d->model.net.embd = (int)c->embd;
    d->model.net.seq_len = (int)c->seq_len;
    if (c->dropout > -2) d->model.net.dropout = c->dropout == 0 ? -1 : c->dropout;
    d->model.label_smoothing = c->ls;
    d->model.amp = ch->amp;
    d->transfer.init_from = c->init_from;
    d->transfer.head = c->head;
    d->transfer.frozen_16bit = c->frozen_16bit;
    if (c->n_freeze) d->transfer.freeze = c->freeze;
    if (c->n_map) d->transfer.init_map = c->init_map;
    d->transfer.backbone_lr_mult = c->backbone_mult;
    loom_optimizer_desc *o = &d->optim.opt;
    o->kind = ch->opt;
    o->momentum = c->momentum >= 0 ? c->momentum : ch->opt == LOOM_OPT_SGD ? 0.9 : 0;
    o->nesterov = c->nesterov;
    o->weight_decay = c->wd;
    o->decay_all = c->decay_all;
    o->clip_grad_norm = c->clip;
    o->grad_accum = (int)c->accum;
    loom_train_run *r = &d->run;
    r->backend = c->backend;
    r->backend_desc.threads = (int)c->threads;
    r->backend_desc.reproducible = c->reproducible;
    r->deterministic = c->deterministic;
    r->seed = (uint64_t)c->seed;
    r->epochs = (int)c->epochs;
    r->eval_every = (int)c->eval_every;
    r->max_steps = c->max_steps;
    r->max_eval = c->max_eval;
    r->save_path = c->save;
    r->resume_path = c->resume;
    r->early_stop = (int)c->patience;
    r->min_delta = c->min_delta;
    r->monitor = strcmp(c->monitor, "val_acc") ? LOOM_MONITOR_VAL_LOSS : LOOM_MONITOR_VAL_ACC;
    r->keep_last = c->keep_last;
    r->profile = c->profile;
    r->allow_nonfinite = c->allow_nonfinite;
    r->dist_bucket_bytes = (size_t)(c->bucket_mb * (1 << 20));
    r->repro_shards = (int)c->repro_shards;
    d->log.csv = c->log_csv;
    d->log.tensorboard_dir = c->tensorboard;
}

/* ---- the progress line and the epoch lines: an observer of the trainer ---- */
typedef struct ui {
    bool tty, quiet;
} ui;

static loom_status on_step(void *user, const loom_step_result *p) {
    ui *u = user;
    if (!u->tty || u->quiet) return LOOM_OK;
    if (p->step % 10 && p->step != p->steps) return LOOM_OK;
    printf("\repoch %d/%d [%6lld/%lld] %7.0f samples/s  loss %.4f  lr %.3g  ETA %4.0fs ", p->epoch, p->epochs,
           (long long)p->step, (long long)p->steps, p->samples_per_s, p->mean_loss, p->lr, p->eta_s);
    fflush(stdout);
    return LOOM_OK;
}

static loom_status on_epoch(void *user, const loom_epoch_stats *s) {
    ui *u = user;
    if (u->quiet) return LOOM_OK;
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
    return LOOM_OK;
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

static int run_lr_find(loom_ctx *ctx, const cli *c, const loom_trainer_desc *d, const ui *u) {
    loom_lr_find_result fr;
    loom_lr_find_desc fd = {.start_lr = c->lr_start, .end_lr = c->lr_end, .steps = (int)c->lr_steps};
    char csv[1024], svg[1024];
    snprintf(csv, sizeof csv, "%s.csv", c->out_prefix);
    snprintf(svg, sizeof svg, "%s.svg", c->out_prefix);
    if (!u->quiet)
        printf("lr-find: %s on %lld samples, batch %lld, %s, lr %g .. %g over %lld steps\n", c->model,
               (long long)d->data.train->n, c->batch, c->optname, c->lr_start, c->lr_end, c->lr_steps);
    loom_status st = loom_lr_find(ctx, d, &fd, &fr);
    if (st == LOOM_OK && (st = loom_lr_find_write_csv(ctx, &fr, csv)) == LOOM_OK) st = loom_lr_find_write_svg(ctx, &fr, svg);
    int rc = 0;
    if (st != LOOM_OK) {
        fprintf(stderr, "loom lr-find: %s\n", loom_last_error(ctx));
        rc = 1;
    } else {
        if (!u->quiet)
            printf("%d steps%s; lowest smoothed loss %.4f at lr %.3g; wrote %s, %s\n", fr.n,
                   fr.diverged ? " (stopped: the loss diverged)" : "", fr.smooth[fr.best_index], fr.lr[fr.best_index], csv,
                   svg);
        printf("SUGGESTED lr=%.3g backend=%s points=%d\n", fr.suggestion, fr.backend, fr.n);
    }
    loom_lr_find_result_free(&fr);
    return rc;
}

static void report(const cli *c, const loom_trainer_desc *d, const loom_train_result *r) {
    loom__print_profile(r);
    if ((r->frozen || c->backbone_mult > 0) && !c->quiet) {
        printf("transfer: %d parameter tensors frozen (%lld elements), %d trained", r->frozen, (long long)r->frozen_numel,
               r->trained);
        if (c->backbone_mult > 0)
            printf("; head %d tensors at lr %g, backbone %d at lr x %g", r->head_params, d->optim.sched.lr,
                   r->trained - r->head_params, c->backbone_mult);
        if (c->frozen_16bit)
            printf("; %d frozen tensors kept in 16 bits only (%.2f MB saved)", r->frozen_16bit,
                   (double)r->frozen_16bit_saved_bytes / 1e6);
        printf("\n");
    }
    if (c->wd > 0 && !c->quiet)
        printf("weight decay %g on %d parameter tensors, not on %d (biases, norm parameters%s)\n", c->wd, r->decayed,
               r->not_decayed, c->decay_all ? "; --decay-all" : "");
    if (r->restored_best && !c->quiet)
        printf("early stopping: restored the weights of epoch %d (val loss %.4f, val acc %.2f%%)\n", r->best_epoch,
               r->val_loss, 100 * r->val_acc);
    else if (r->stopped_early && !c->quiet)
        printf("early stopping: stopped after epoch %d\n", r->epochs_run);
    const loom_plan_memory *m = &r->train_memory;
    if (!c->quiet)
        printf("memory (training plan): parameters %.2f MB, optimizer state %.2f MB, inputs/outputs %.2f MB, "
               "intermediates %.2f MB peak (saved activations %.2f MB)\n",
               m->param_bytes / 1e6, m->state_bytes / 1e6, m->io_bytes / 1e6, m->arena_bytes / 1e6,
               m->activation_bytes / 1e6);
    loom_dtype amp = d->model.amp;
    printf("RESULT backend=%s model=%s epochs=%d test_acc=%.4f test_loss=%.4f train_loss=%.4f samples_per_s=%.0f "
           "seconds=%.1f peak_bytes=%zu activation_bytes=%zu amp=%s\n",
           r->backend, c->model, r->epochs_run, r->test_acc, r->test_loss, r->train_loss, r->samples_per_s, r->seconds,
           r->peak_bytes, m->activation_bytes, amp == LOOM_F16 ? "fp16" : amp == LOOM_BF16 ? "bf16" : "off");
}

static int run_train(loom_ctx *ctx, const cli *c, const loom_trainer_desc *d, const loom__run_data *rd, const ui *u) {
    if (!u->quiet)
        printf("training %s on %lld samples (%dx%dx%d, %d classes), testing on %lld; batch %lld, %s, lr %g\n", c->model,
               (long long)rd->train.n, rd->train.c, rd->train.h, rd->train.w, rd->train.num_classes,
               (long long)rd->test.n, c->batch, c->optname, d->optim.sched.lr);
    loom_train_result r;
    loom_status st = loom_train(ctx, d, &r);
    if (st != LOOM_OK) {
        if (u->tty) printf("\n");
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx));
        if (strstr(loom_last_error(ctx), "(allow_nonfinite loads them)"))
            fprintf(stderr, "loom train: --allow-nonfinite loads them\n");
        return 1;
    }
    if (loom_dist_rank(d->run.dist) == 0) report(c, d, &r);
    return 0;
}

/* gpt / transformer on token files: loom_text_train. */
static int run_text(loom_ctx *ctx, const cli *c, const choices *ch, loom_trainer_desc *d, ui *u) {
    char train[4096], val[4096];
    int64_t n;
    loom_model_desc md = d->model.net;
    loom_model_text_defaults(&md);
    loom_plateau plateau = {0};
    loom_train_result r;
    if (c->resume || c->val_split > 0 || c->patience || c->init_from || c->n_freeze || c->transform || ch->use_plateau ||
        (c->profile && c->token_budget)) {
        fprintf(stderr, "loom train: --resume, --val-split, --early-stop, --init-from, --freeze, --transform, "
                        "--schedule plateau, and --profile with --token-budget are not supported for text models yet\n");
        return 2;
    }
    loom_status st = loom__text_data(ctx, c->data_dir, md.seq_len, md.vocab, train, val, &n);
    if (st == LOOM_OK) {
        cli cs = *c; /* dynamic batching: an epoch counts as its tokens / the budget steps */
        if (c->token_budget) cs.batch = c->token_budget / md.seq_len > 0 ? c->token_budget / md.seq_len : 1;
        fill_schedule(&cs, ch, n, d, &plateau);
        if (!u->quiet)
            printf("training %s (%d layers, %d heads, embd %d, seq_len %d, vocab %d) on %lld sequences of %s, "
                   "validating on %s; batch %lld, %s, lr %g\n", c->model, md.layers, md.heads, md.embd, md.seq_len,
                   md.vocab, (long long)n, train, val[0] ? val : "(none)", c->batch, c->optname, d->optim.sched.lr);
        loom_text_dyn_desc dyn = {.token_budget = c->token_budget, .micro_tokens = c->micro_tokens,
                                  .has_eod = c->eod >= 0, .eod = (int)c->eod};
        if ((c->micro_tokens || c->eod >= 0) && !c->token_budget)
            return bad("--micro-tokens and --eod need --token-budget%s%s", "", "");
        st = loom_text_train_dyn(ctx, d, &dyn, train, val[0] ? val : NULL, &r);
    }
    if (st != LOOM_OK) {
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx));
        return 1;
    }
    loom__print_profile(&r);
    printf("RESULT backend=%s model=%s epochs=%d val_loss=%.4f val_acc=%.4f train_loss=%.4f samples_per_s=%.0f "
           "tokens_per_s=%.0f seconds=%.1f peak_bytes=%zu\n", r.backend, c->model, r.epochs_run, r.val_loss, r.val_acc,
           r.train_loss, r.samples_per_s, r.samples_per_s * (double)md.seq_len, r.seconds, r.peak_bytes);
    return 0;
}

static int run(int argc, char **argv, bool lrfind) {
    cli c;
    cli_defaults(&c);
    choices ch;
    int rc = parse_args(argc, argv, &c);
    if (rc < 0) rc = check_names(&c, &ch);
    if (rc >= 0) return rc;
    if (lrfind && loom_model_is_text(c.model)) return bad("lr-find is for mlp and cnn, not '%s'%s", c.model, "");
    loom_ctx *ctx;
    /* warnings too (stderr): a cache that cannot be written, a device-augmentation step kept on the host */
    if (loom_ctx_create(&(loom_ctx_desc){.threads = (int)c.threads, .log_level = LOOM_LOG_WARN}, &ctx) != LOOM_OK)
        return 1;
    loom_dist *dist = NULL;
    if ((rc = loom__train_open_dist(ctx, c.launcher, c.dist_timeout, c.model, &c.quiet, &dist)) >= 0) {
        loom_ctx_destroy(ctx);
        return rc;
    }
    if (!lrfind && loom__train_resume_done(ctx, c.resume, c.epochs)) {
        loom_dist_destroy(dist);
        loom_ctx_destroy(ctx);
        return 0;
    }
    loom__run_data rd = {0};
    bool text = loom_model_is_text(c.model);
    loom__train_data_opts dopts = {
        .data_dir = c.data_dir, .transform = c.transform, .skip_bad = c.skip_bad, .workers = c.workers,
.classes = (int)c.classes, .val_split = c.val_split, .seed = (uint64_t)c.seed};
    if (!text && loom__train_load_data(ctx, &dopts, &rd) != LOOM_OK)
        fprintf(stderr, "loom train: %s\n", loom_last_error(ctx)), rc = 1;
    else if (!text && !lrfind)
        rc = loom__train_check_accum(c.accum, c.batch, c.max_steps, c.epochs, rd.train.n);
    if (rc >= 0) {
        loom__train_free_data(&rd);
        loom_dist_destroy(dist);
        loom_ctx_destroy(ctx);
        return rc;
    }
    loom_trainer_desc d = {0};
    loom_plateau plateau = {0};
    ui u = {isatty(STDOUT_FILENO) != 0, c.quiet};
    fill_desc(&c, &ch, &rd, &d);
    d.run.dist = dist;
    if (!text) fill_schedule(&c, &ch, rd.train.n, &d, &plateau);
    loom_train_observer lines = {.user = &u, .on_step = on_step, .on_epoch = on_epoch};
    d.log.observers = &lines, d.log.nobservers = 1;
    d.transfer.on_init = on_init, d.transfer.user = &u;
    if (!strcmp(c.backend, "auto")) {
        const char *why = NULL;
        d.run.backend = loom_pick_backend(ctx, &why);
        if (!u.quiet) printf("backend %s (auto: %s)\n", d.run.backend, why);
    }
    rc = text ? run_text(ctx, &c, &ch, &d, &u) : lrfind ? run_lr_find(ctx, &c, &d, &u) : run_train(ctx, &c, &d, &rd, &u);
    loom__train_end_dist(dist, rc);
    loom__train_free_data(&rd);
    loom_dist_destroy(dist);
    loom_ctx_destroy(ctx);
    return rc;
}

int loom_cmd_train(int argc, char **argv) { return run(argc, argv, false); }
int loom_cmd_lr_find(int argc, char **argv) { return run(argc, argv, true); }
