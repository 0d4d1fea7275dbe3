/* tools/generate.c — `loom generate`: sample text from a gpt checkpoint
 * written by `loom train --model gpt --save X`. The model is rebuilt from
 * the checkpoint's metadata (loom/text.h) with one sequence of seq_len
 * positions; each new token recomputes the whole window of the last
 * seq_len tokens (right-padded while shorter: the causal mask keeps the
 * padding out of the positions read) and draws from the softmax of the last
 * position's logits / temperature, restricted to the top k, with Philox
 * keyed by the seed. Tokens are bytes: the output is the prompt followed by
 * the sampled bytes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "loom/text.h"

static const char *usage_text =
    "usage: loom generate --ckpt X --prompt TEXT [options]\n"
    "  --ckpt X              a checkpoint of `loom train --model gpt --save X`\n"
    "  --prompt TEXT         the text to continue (default: a newline)\n"
    "  --tokens N            bytes to sample (default 200)\n"
    "  --temperature T       divide the logits by T; 0 = always the most likely byte (default 0.8)\n"
    "  --top-k K             sample among the K most likely bytes only; 0 = all (default 0)\n"
    "  --seed S              the sampler's seed (default 1)\n"
    "  --backend NAME        (default cpu)\n";

static int bad(const char *msg, const char *v) {
    fprintf(stderr, "loom generate: %s '%s'\n%s", msg, v ? v : "", usage_text);
    return 2;
}

typedef struct gen_opts {
    const char *ckpt, *prompt, *backend;
    long long tokens, top_k, seed;
    double temperature;
} gen_opts;

static int parse(int argc, char **argv, gen_opts *o) {
    *o = (gen_opts){.prompt = "\n", .backend = "cpu", .tokens = 200, .seed = 1, .temperature = 0.8};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (i + 1 >= argc) return bad("a value is needed after", a);
        const char *v = argv[++i];
        char *end = NULL;
        errno = 0;
        if (!strcmp(a, "--ckpt")) o->ckpt = v;
        else if (!strcmp(a, "--prompt")) o->prompt = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--tokens")) o->tokens = strtoll(v, &end, 10);
        else if (!strcmp(a, "--top-k")) o->top_k = strtoll(v, &end, 10);
        else if (!strcmp(a, "--seed")) o->seed = strtoll(v, &end, 10);
        else if (!strcmp(a, "--temperature")) o->temperature = strtod(v, &end);
        else return bad("unknown option", a);
        if (end && (errno || end == v || *end || o->tokens < 0 || o->tokens > 1000000 || o->top_k < 0 || o->seed < 0 ||
                    !(o->temperature >= 0 && o->temperature < 1e6)))
            return bad("bad value", v);
    }
    if (!o->ckpt) return bad("--ckpt is required", "");
    if (!o->prompt[0]) return bad("the prompt is empty: give at least one byte, e.g.", "\\n");
    return -1;
}

/* The gpt's configuration from the checkpoint's metadata. */
static loom_status read_config(loom_ctx *ctx, const char *path, loom_model_desc *md) {
    loom_safetensors *f;
    loom_status st = loom_safetensors_open(ctx, path, &f);
    if (st != LOOM_OK) return st;
    static const char *const keys[5] = {LOOM_TEXT_META_LAYERS, LOOM_TEXT_META_HEADS, LOOM_TEXT_META_EMBD,
                                        LOOM_TEXT_META_SEQ_LEN, LOOM_TEXT_META_VOCAB};
    int *dst[5] = {&md->layers, &md->heads, &md->embd, &md->seq_len, &md->vocab};
    const char *arch = loom_safetensors_meta(f, "loom.model");
    if (!arch || strcmp(arch, "gpt"))
        st = loom_source_error(ctx, LOOM_ERR_FORMAT, "%s: not a gpt checkpoint (its loom.model is '%s')", path,
                               arch ? arch : "(none)");
    for (int k = 0; k < 5 && st == LOOM_OK; k++) {
        const char *v = loom_safetensors_meta(f, keys[k]);
        char *end = NULL;
        long x = v ? strtol(v, &end, 10) : 0;
        if (!v || *end || x < 1 || x > 1 << 24)
            st = loom_source_error(ctx, LOOM_ERR_FORMAT, "%s: the metadata '%s' is %s%s%s (a positive integer expected)",
                                   path, keys[k], v ? "'" : "missing", v ? v : "", v ? "'" : "");
        else
            *dst[k] = (int)x;
    }
    loom_safetensors_close(f);
    md->arch = "gpt";
    if (st == LOOM_OK && md->vocab > 256)
        st = loom_source_error(ctx, LOOM_ERR_FORMAT, "%s: vocab %d, but generate speaks bytes (vocab 256)", path, md->vocab);
    return st;
}

/* A byte drawn from logits (vocab) with the options; u uniform in [0, 1). */
static int draw(const float *logits, int vocab, const gen_opts *o, double u, double *p) {
    int best = 0;
    for (int k = 1; k < vocab; k++)
        if (logits[k] > logits[best]) best = k;
    if (o->temperature == 0) return best;
    double cut = -INFINITY;
    if (o->top_k > 0 && o->top_k < vocab) { /* the k-th largest logit */
        float *s = malloc((size_t)vocab * sizeof *s);
        if (!s) return best;
        memcpy(s, logits, (size_t)vocab * sizeof *s);
        for (int i = 0; i < o->top_k; i++) {
            int m = i;
            for (int k = i + 1; k < vocab; k++)
                if (s[k] > s[m]) m = k;
            float t = s[i];
            s[i] = s[m], s[m] = t;
        }
        cut = s[o->top_k - 1];
        free(s);
    }
    double sum = 0;
    for (int k = 0; k < vocab; k++) {
        p[k] = logits[k] >= cut ? exp((logits[k] - logits[best]) / o->temperature) : 0;
        sum += p[k];
    }
    double acc = 0, target = u * sum;
    for (int k = 0; k < vocab; k++) {
        acc += p[k];
        if (p[k] > 0 && target < acc) return k;
    }
    return best;
}

static loom_status generate(loom_ctx *ctx, const gen_opts *o) {
    loom_model_desc md = {0};
    loom_status st = read_config(ctx, o->ckpt, &md);
    if (st != LOOM_OK) return st;
    int T = md.seq_len, V = md.vocab;
    loom_graph *g = NULL;
    loom_backend *be = NULL;
    loom_plan *plan = NULL;
    loom_tensor *x = NULL, *logits = NULL;
    int32_t *ids = calloc((size_t)T, sizeof *ids);
    float *out = malloc((size_t)T * (size_t)V * sizeof *out);
    double *p = malloc((size_t)V * sizeof *p);
    size_t plen = strlen(o->prompt);
    unsigned char *text = malloc(plen + (size_t)o->tokens + 1);
    if (!ids || !out || !p || !text) st = loom_source_error(ctx, LOOM_ERR_OOM, "generate: out of memory");
    if (st == LOOM_OK) st = loom_graph_create(ctx, &(loom_graph_desc){.seed = 0}, &g);
    if (st == LOOM_OK) {
        x = loom_input(g, "x", LOOM_I32, 2, (int64_t[]){1, T});
        st = loom_graph_status(g);
    }
    if (st == LOOM_OK) st = loom_model_build(g, &md, x, false, &logits);
    if (st == LOOM_OK) loom_keep(logits);
    if (st == LOOM_OK) st = loom_backend_create(ctx, o->backend, NULL, &be);
    if (st == LOOM_OK) st = loom_plan_compile(g, be, NULL, &plan);
    if (st == LOOM_OK) st = loom_checkpoint_load(plan, o->ckpt, &(loom_checkpoint_load_desc){.strict = true, .weights_only = true}, NULL, NULL);
    size_t n = plen;
    if (st == LOOM_OK) {
        memcpy(text, o->prompt, plen);
        fwrite(text, 1, plen, stdout);
    }
    for (long long i = 0; st == LOOM_OK && i < o->tokens; i++) {
        size_t start = n > (size_t)T ? n - (size_t)T : 0, len = n - start;
        for (size_t k = 0; k < (size_t)T; k++) ids[k] = k < len ? text[start + k] : 0;
        if ((st = loom_plan_write(plan, x, ids, (size_t)T * sizeof *ids)) != LOOM_OK || (st = loom_plan_run(plan)) != LOOM_OK ||
            (st = loom_plan_read(plan, logits, out, (size_t)T * (size_t)V * sizeof *out)) != LOOM_OK)
            break;
        double u = loom_philox_uniform((uint64_t)o->seed, 0x47454e /* "GEN" */, (uint64_t)i);
        text[n] = (unsigned char)draw(out + (len - 1) * (size_t)V, V, o, u, p);
        fputc(text[n], stdout);
        fflush(stdout);
        n++;
    }
    if (st == LOOM_OK) fputc('\n', stdout);
    loom_plan_destroy(plan);
    loom_backend_destroy(be);
    loom_graph_destroy(g);
    free(ids), free(out), free(p), free(text);
    return st;
}

int loom_cmd_generate(int argc, char **argv) {
    gen_opts o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    loom_status st = generate(ctx, &o);
    if (st != LOOM_OK) fprintf(stderr, "loom generate: %s\n", loom_last_error(ctx));
    loom_ctx_destroy(ctx);
    return st == LOOM_OK ? 0 : 1;
}
