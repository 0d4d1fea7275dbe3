/* tests/test-tokens.c — raw token files as a dataset (loader/tokens.c).
 *
 * Each run writes token files under a fresh temp directory and checks: the
 * exact inputs / targets / label of every sequence for uint16 and uint32
 * files (ids past 65535 and up to 2^31 - 2), the sample count at the
 * boundaries (N = T + 1, 2T, 2T + 1: the tail dropped), num_classes with and
 * without vocab_size, width 0 as the uint16 default; bad input — missing
 * file, a directory, empty file, a byte count not a multiple of the width,
 * fewer than T + 1 tokens, width not 2/4, seq_len <= 0, a bad vocab_size, a
 * token >= vocab_size (past the first 64 Ki-token scan block, named with its
 * index and byte offset), a uint32 id that is not an int32 — each an error
 * naming the file; a sample index out of range; and that loom_loader
 * delivers the ids (batch.ids), shuffled, the same for 0, 1 and 2 workers,
 * and refuses image transforms on them.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/loader.h"
#include "testutil.h"

static char tmp[256];

/* tmp/name <- count tokens of `width` bytes, little-endian; the path in p */
static void write_tokens(const char *name, int width, const uint32_t *t, size_t count, char *p, size_t np) {
    snprintf(p, np, "%s/%s", tmp, name);
    FILE *f = fopen(p, "wb");
    if (!f) {
        printf("cannot write %s\n", p);
        return;
    }
    for (size_t k = 0; k < count; k++) {
        uint8_t b[4] = {(uint8_t)t[k], (uint8_t)(t[k] >> 8), (uint8_t)(t[k] >> 16), (uint8_t)(t[k] >> 24)};
        fwrite(b, 1, (size_t)width, f);
    }
    fclose(f);
}

static void write_bytes(const char *name, const void *b, size_t n, char *p, size_t np) {
    snprintf(p, np, "%s/%s", tmp, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        if (n) fwrite(b, 1, n, f);
        fclose(f);
    }
}

/* Every sample of src against t[] (T = seq_len): x = t[iT..iT+T), y = t[iT+1..iT+T], label y[T-1]. */
static void check_samples(loom_ctx *ctx, const loom_source *src, const uint32_t *t, int64_t T, const char *what) {
    int32_t *rec = malloc(loom_source_sample_bytes(src));
    int64_t bad = -1;
    for (int64_t i = 0; i < src->n && bad < 0; i++) {
        int32_t label = -7;
        loom_status st = src->get(src, ctx, i, rec, &label);
        if (st != LOOM_OK) {
            CHECK(0, "%s: sample %lld: %s", what, (long long)i, loom_last_error(ctx));
            bad = i;
            break;
        }
        for (int64_t k = 0; k < T; k++)
            if (rec[k] != (int32_t)t[i * T + k] || rec[T + k] != (int32_t)t[i * T + k + 1]) bad = i;
        if (label != (int32_t)t[i * T + T]) bad = i;
    }
    CHECK(bad < 0, "%s: sample %lld differs from the tokens (x = t[iT..iT+T), y shifted by one, label y[T-1])", what,
          (long long)bad);
    free(rec);
}

static void test_contents(loom_ctx *ctx) {
    char p[512];
    /* uint16, T = 5, 23 tokens: 4 sequences (t[0..20] used, t[21], t[22] dropped) */
    uint32_t t16[23];
    for (int k = 0; k < 23; k++) t16[k] = (uint32_t)(k * 2851 + 17) % 65536;
    t16[7] = 65535, t16[20] = 0;
    write_tokens("a.u16", 2, t16, 23, p, sizeof p);
    loom_source *s = NULL;
    CHECK_OK(ctx, loom_source_open_tokens(ctx, p, &(loom_tokens_desc){.width = 2, .seq_len = 5}, &s));
    if (s) {
        CHECK(s->n == 4 && s->kind == LOOM_SAMPLE_I32 && s->c == 2 && s->h == 1 && s->w == 5 && s->num_classes == 65536 &&
                  loom_source_sample_bytes(s) == 40 && !strcmp(s->name, p),
              "u16 T=5 N=23: n %lld kind %d (%d, %lld, %lld) classes %d bytes %zu name %s (expected 4 I32 (2, 1, 5) 65536 "
              "40)",
              (long long)s->n, (int)s->kind, s->c, (long long)s->h, (long long)s->w, s->num_classes,
              loom_source_sample_bytes(s), s->name);
        check_samples(ctx, s, t16, 5, "u16 T=5");
        /* sample 1 spelled out: x = t[5..10), y = t[6..11) */
        int32_t rec[10], label = 0;
        CHECK_OK(ctx, s->get(s, ctx, 1, rec, &label));
        CHECK(rec[0] == (int32_t)t16[5] && rec[2] == 65535 && rec[4] == (int32_t)t16[9] && rec[5] == (int32_t)t16[6] &&
                  rec[9] == (int32_t)t16[10] && label == (int32_t)t16[10],
              "u16 sample 1: x[0] %d x[2] %d x[4] %d y[0] %d y[4] %d label %d", rec[0], rec[2], rec[4], rec[5], rec[9],
              label);
        for (int k = 0; k < 2; k++) {
            int64_t i = k ? s->n : -1;
            loom_status st = s->get(s, ctx, i, rec, &label);
            CHECK(st == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), p) && strstr(loom_last_error(ctx), "out of range"),
                  "sample %lld: %s '%s' (expected out of range naming the file)", (long long)i, loom_status_str(st),
                  loom_last_error(ctx));
        }
        /* the loader delivers the ids (batch.ids, x NULL), shuffled, the
         * same for 0 / 1 / 2 workers; transforms are refused */
        int32_t got[3][4 * 10], lab[3][4];
        for (int wk = 0; wk < 3; wk++) {
            loom_loader *ld = NULL;
            loom_loader_desc d = {.src = s, .batch = 3, .shuffle = true, .seed = 9,
                                  .workers = wk == 0 ? LOOM_WORKERS_SYNC : wk};
            CHECK_OK(ctx, loom_loader_create(ctx, &d, &ld));
            if (!ld) continue;
            loom_loader_batch b;
            int n = 0;
            while (loom_loader_next(ld, &b) == LOOM_OK && b.count > 0 && n + b.count <= 4) {
                CHECK(b.ids && !b.x, "workers %d: batch %lld has ids and no x", wk, (long long)b.index);
                if (b.ids) memcpy(got[wk] + n * 10, b.ids, (size_t)b.count * 10 * sizeof(int32_t));
                memcpy(lab[wk] + n, b.y, (size_t)b.count * sizeof(int32_t));
                n += b.count;
            }
            CHECK(n == 4, "workers %d: %d of 4 sequences delivered", wk, n);
            loom_loader_destroy(ld);
            /* every delivered record is one of the source's, with its label */
            bool seen[4] = {false, false, false, false}, ok = true;
            for (int k = 0; k < n; k++) {
                int match = -1;
                for (int64_t i = 0; i < s->n; i++) {
                    int32_t one[10], lb;
                    if (s->get(s, ctx, i, one, &lb) == LOOM_OK && !memcmp(one, got[wk] + k * 10, sizeof one) &&
                        lb == lab[wk][k])
                        match = (int)i;
                }
                ok = ok && match >= 0 && !seen[match];
                if (match >= 0) seen[match] = true;
            }
            CHECK(ok, "workers %d: the batches hold each sequence once, ids and label intact", wk);
        }
        CHECK(!memcmp(got[0], got[1], sizeof got[0]) && !memcmp(got[0], got[2], sizeof got[0]) &&
                  !memcmp(lab[0], lab[2], sizeof lab[0]),
              "token batches identical for 0, 1 and 2 workers");
        loom_tf_step flip = {.kind = LOOM_TF_RANDOM_HFLIP, .p = 0.5};
        loom_loader *ld = NULL;
        loom_status st = loom_loader_create(ctx, &(loom_loader_desc){.src = s, .batch = 2, .steps = &flip, .nsteps = 1}, &ld);
        CHECK(st == LOOM_ERR_INVALID_ARG && !ld && strstr(loom_last_error(ctx), p) && strstr(loom_last_error(ctx), "token"),
              "loom_loader over an I32 source with a transform: %s '%s' (expected an error naming it)",
              loom_status_str(st), loom_last_error(ctx));
        loom_loader_destroy(ld);
        loom_source_destroy(s);
        s = NULL;
    }
    /* width 0 is uint16; vocab_size sets num_classes; a token = vocab_size - 1 is fine */
    CHECK_OK(ctx, loom_source_open_tokens(ctx, p, &(loom_tokens_desc){.seq_len = 22, .vocab_size = 65536}, &s));
    if (s) {
        CHECK(s->n == 1 && s->num_classes == 65536 && s->w == 22, "width 0, T=22, N=23: n %lld classes %d (expected 1, "
              "65536)", (long long)s->n, s->num_classes);
        check_samples(ctx, s, t16, 22, "u16 T=22");
        loom_source_destroy(s);
        s = NULL;
    }

    /* the count at the boundaries: N = T + 1 -> 1, 2T -> 1, 2T + 1 -> 2, 3T -> 2 */
    const struct {
        int n_tok, T, want;
    } b[] = {{4, 3, 1}, {6, 3, 1}, {7, 3, 2}, {9, 3, 2}, {10, 3, 3}, {2, 1, 1}, {3, 1, 2}};
    for (size_t k = 0; k < sizeof b / sizeof b[0]; k++) {
        write_tokens("b.u16", 2, t16, (size_t)b[k].n_tok, p, sizeof p);
        CHECK_OK(ctx, loom_source_open_tokens(ctx, p, &(loom_tokens_desc){.width = 2, .seq_len = b[k].T}, &s));
        CHECK(s && s->n == b[k].want, "N=%d T=%d: %lld sequences (expected %d)", b[k].n_tok, b[k].T,
              s ? (long long)s->n : -1LL, b[k].want);
        if (s) check_samples(ctx, s, t16, b[k].T, "boundary");
        loom_source_destroy(s);
        s = NULL;
    }

    /* uint32: ids past 65535, up to 2^31 - 2 (the largest without a vocab_size) */
    uint32_t t32[40];
    for (int k = 0; k < 40; k++) t32[k] = (uint32_t)k * 100003u + 65536u * (uint32_t)(k % 3);
    t32[3] = 2147483646u, t32[4] = 0;
    write_tokens("c.u32", 4, t32, 40, p, sizeof p);
    CHECK_OK(ctx, loom_source_open_tokens(ctx, p, &(loom_tokens_desc){.width = 4, .seq_len = 3}, &s));
    if (s) {
        CHECK(s->n == 13 && s->num_classes == INT32_MAX && loom_source_sample_bytes(s) == 24,
              "u32 T=3 N=40: n %lld classes %d (expected 13, 2^31-1)", (long long)s->n, s->num_classes);
        check_samples(ctx, s, t32, 3, "u32 T=3");
        loom_source_destroy(s);
        s = NULL;
    }
    /* a larger pseudo-random uint16 stream, T = 64 */
    enum { NBIG = 10007 };
    uint32_t *big = malloc(NBIG * sizeof *big), r = 12345;
    for (int k = 0; k < NBIG; k++) r = r * 1103515245u + 12345u, big[k] = (r >> 8) % 50257u;
    write_tokens("d.u16", 2, big, NBIG, p, sizeof p);
    CHECK_OK(ctx, loom_source_open_tokens(ctx, p, &(loom_tokens_desc){.seq_len = 64, .vocab_size = 50257}, &s));
    if (s) {
        CHECK(s->n == (NBIG - 1) / 64 && s->num_classes == 50257, "u16 T=64: n %lld (expected %d)", (long long)s->n,
              (NBIG - 1) / 64);
        check_samples(ctx, s, big, 64, "u16 T=64");
        loom_source_destroy(s);
        s = NULL;
    }
    free(big);
}

/* Opening p with desc fails with st, the message naming the file and holding `words`. */
static void expect_err(loom_ctx *ctx, const char *p, loom_tokens_desc d, loom_status want, const char *words,
                       const char *what) {
    loom_source *s = (loom_source *)&s; /* open must set it to NULL */
    loom_status st = loom_source_open_tokens(ctx, p, &d, &s);
    const char *e = loom_last_error(ctx);
    CHECK(st == want && !s && strstr(e, p) && strstr(e, words), "%s: %s '%s' (expected %s naming %s and '%s')", what,
          loom_status_str(st), e, loom_status_str(want), p, words);
    printf("  %s -> %s\n", what, e);
    if (st == LOOM_OK) loom_source_destroy(s);
}

static void test_bad(loom_ctx *ctx) {
    char p[512], good[512];
    uint32_t t[16];
    for (int k = 0; k < 16; k++) t[k] = (uint32_t)k * 3;
    write_tokens("good.u16", 2, t, 16, good, sizeof good);
    const loom_tokens_desc ok = {.width = 2, .seq_len = 4};

    snprintf(p, sizeof p, "%s/no-such.u16", tmp);
    expect_err(ctx, p, ok, LOOM_ERR_IO, "cannot open", "missing file");
    expect_err(ctx, tmp, ok, LOOM_ERR_IO, "not a regular file", "a directory");
    write_bytes("empty.u16", "", 0, p, sizeof p);
    expect_err(ctx, p, ok, LOOM_ERR_FORMAT, "empty token file", "empty file");
    write_bytes("odd.u16", "\1\0\2\0\3\0\4", 7, p, sizeof p);
    expect_err(ctx, p, ok, LOOM_ERR_FORMAT, "7 bytes is not a whole number of 2-byte tokens", "7 bytes, width 2");
    write_tokens("ten.bin", 2, t, 5, p, sizeof p);
    expect_err(ctx, p, (loom_tokens_desc){.width = 4, .seq_len = 1}, LOOM_ERR_FORMAT,
               "10 bytes is not a whole number of 4-byte tokens", "10 bytes, width 4");
    write_tokens("short.u16", 2, t, 4, p, sizeof p);
    expect_err(ctx, p, ok, LOOM_ERR_FORMAT, "4 tokens, fewer than the seq_len + 1 = 5", "T + 1 - 1 tokens");
    write_tokens("one.u16", 2, t, 1, p, sizeof p);
    expect_err(ctx, p, (loom_tokens_desc){.seq_len = 1}, LOOM_ERR_FORMAT, "1 tokens, fewer than the seq_len + 1 = 2",
               "a single token");
    const int widths[] = {1, 3, 8, -2};
    for (int k = 0; k < 4; k++) {
        char what[64], words[64];
        snprintf(what, sizeof what, "width %d", widths[k]);
        snprintf(words, sizeof words, "token width %d bytes", widths[k]);
        expect_err(ctx, good, (loom_tokens_desc){.width = widths[k], .seq_len = 4}, LOOM_ERR_INVALID_ARG, words, what);
    }
    expect_err(ctx, good, (loom_tokens_desc){.width = 2}, LOOM_ERR_INVALID_ARG, "seq_len 0", "seq_len 0");
    expect_err(ctx, good, (loom_tokens_desc){.width = 2, .seq_len = -3}, LOOM_ERR_INVALID_ARG, "seq_len -3",
               "seq_len -3");
    expect_err(ctx, good, (loom_tokens_desc){.seq_len = 4, .vocab_size = -1}, LOOM_ERR_INVALID_ARG, "vocab_size -1",
               "vocab_size -1");
    expect_err(ctx, good, (loom_tokens_desc){.seq_len = 4, .vocab_size = (int64_t)1 << 31}, LOOM_ERR_INVALID_ARG,
               "vocab_size 2147483648", "vocab_size 2^31");
    /* the largest token of good.u16 is 45: vocab 46 opens, vocab 45 names token 15 at byte 30 */
    loom_source *s = NULL;
    CHECK_OK(ctx, loom_source_open_tokens(ctx, good, &(loom_tokens_desc){.seq_len = 4, .vocab_size = 46}, &s));
    CHECK(s && s->num_classes == 46, "vocab 46: num_classes %d", s ? s->num_classes : -1);
    loom_source_destroy(s);
    expect_err(ctx, good, (loom_tokens_desc){.seq_len = 4, .vocab_size = 45}, LOOM_ERR_FORMAT,
               "token 15 (at byte offset 30) is 45, outside the vocabulary (vocab_size 45)", "the last token = vocab");

    /* past the first scan block: 70000 uint16 tokens < 1000 but one at index 66000 */
    enum { NV = 70000 };
    uint32_t *v = malloc(NV * sizeof *v);
    for (int k = 0; k < NV; k++) v[k] = (uint32_t)(k * 7) % 1000;
    v[66000] = 1000, v[69999] = 5000;
    write_tokens("vocab.u16", 2, v, NV, p, sizeof p);
    expect_err(ctx, p, (loom_tokens_desc){.width = 2, .seq_len = 128, .vocab_size = 1000}, LOOM_ERR_FORMAT,
               "token 66000 (at byte offset 132000) is 1000, outside the vocabulary", "token out of vocab (u16)");
    write_tokens("vocab.u32", 4, v, NV, p, sizeof p);
    expect_err(ctx, p, (loom_tokens_desc){.width = 4, .seq_len = 128, .vocab_size = 1000}, LOOM_ERR_FORMAT,
               "token 66000 (at byte offset 264000) is 1000, outside the vocabulary", "token out of vocab (u32)");
    CHECK_OK(ctx, loom_source_open_tokens(ctx, p, &(loom_tokens_desc){.width = 4, .seq_len = 128, .vocab_size = 5001}, &s));
    CHECK(s && s->n == (NV - 1) / 128, "vocab 5001: n %lld", s ? (long long)s->n : -1LL);
    if (s) check_samples(ctx, s, v, 128, "u32 T=128");
    loom_source_destroy(s);
    free(v);
    /* uint32 ids that are not int32 (or whose max + 1 is not), without a vocab_size */
    const uint32_t huge[] = {2147483647u, 2147483648u, 4294967295u};
    for (int k = 0; k < 3; k++) {
        uint32_t h[6] = {1, 2, 3, 4, 5, 6};
        h[4] = huge[k];
        write_tokens("huge.u32", 4, h, 6, p, sizeof p);
        char words[96], what[64];
        snprintf(words, sizeof words, "token 4 (at byte offset 16) is %u (ids are int32", huge[k]);
        snprintf(what, sizeof what, "u32 id %u", huge[k]);
        expect_err(ctx, p, (loom_tokens_desc){.width = 4, .seq_len = 2}, LOOM_ERR_FORMAT, words, what);
    }
}

int main(void) {
    loom_ctx *ctx;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (!tu_tmpdir("tokens", tmp, sizeof tmp)) return 1;
    test_contents(ctx);
    test_bad(ctx);
    tu_rm_rf(tmp);
    loom_ctx_destroy(ctx);
    return tu_summary();
}
