/* tests/test-sampler.c — samplers and batching (loader/sampler.c).
 *
 * - sequential: 0..n-1; shuffled: a permutation that depends on (seed,
 *   epoch) only (same twice, even after other epochs; differs across epochs
 *   and seeds) and is the seeded epoch shuffle (LOOM__STREAM_EPOCH_ORDER)
 * - distributed over 3 ranks, n = 10 and 12: with padding every sample once
 *   (the first n % 3-padding ones repeated), equal lengths ceil(n/3); with
 *   drop_uneven floor(n/3) each and no sample twice; all ranks share one order
 * - fixed batching: counts and sizes with and without drop_last
 * - bucketed batching: every sample exactly once, max size * count <= budget,
 *   max_batch respected, one bucket per batch, deterministic per (seed,
 *   epoch) and different across epochs, drop_last drops only partial tails,
 *   explicit bounds, and errors for an oversize sample and bad bounds
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "impl.h"
#include "loom/loader.h"
#include "testutil.h"

static loom_ctx *ctx;

static bool is_perm(const int64_t *v, int64_t n) {
    char *seen = calloc((size_t)n, 1);
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        if (v[i] < 0 || v[i] >= n || seen[v[i]]) ok = false;
        else seen[v[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_single(void) {
    loom_sampler *s = NULL;
    loom_sampler_desc d = {0};
    d.n = 9;
    CHECK_OK(ctx, loom_sampler_create(ctx, &d, &s));
    bool seq = loom_sampler_len(s) == 9;
    for (int i = 0; seq && i < 9; i++) seq = loom_sampler_indices(s)[i] == i;
    CHECK(seq, "sequential order");
    loom_sampler_destroy(s);

    d.n = 50, d.shuffle = true, d.seed = 7;
    CHECK_OK(ctx, loom_sampler_create(ctx, &d, &s));
    int64_t e0[50], e1[50], e3[50];
    memcpy(e0, loom_sampler_indices(s), sizeof e0);
    loom_sampler_set_epoch(s, 1);
    memcpy(e1, loom_sampler_indices(s), sizeof e1);
    loom_sampler_set_epoch(s, 3);
    memcpy(e3, loom_sampler_indices(s), sizeof e3);
    CHECK(is_perm(e0, 50) && is_perm(e1, 50) && is_perm(e3, 50), "shuffled orders are permutations");
    CHECK(memcmp(e0, e1, sizeof e0) && memcmp(e1, e3, sizeof e1), "epochs differ");
    loom_sampler_set_epoch(s, 0);
    CHECK(!memcmp(e0, loom_sampler_indices(s), sizeof e0), "epoch 0 again after epochs 1 and 3: same order");
    loom_sampler *s2 = NULL;
    CHECK_OK(ctx, loom_sampler_create(ctx, &d, &s2));
    loom_sampler_set_epoch(s2, 3);
    CHECK(!memcmp(e3, loom_sampler_indices(s2), sizeof e3), "a fresh sampler at epoch 3: same order (no history)");
    loom_sampler_destroy(s2);
    d.seed = 8;
    CHECK_OK(ctx, loom_sampler_create(ctx, &d, &s2));
    CHECK(memcmp(e0, loom_sampler_indices(s2), sizeof e0), "another seed: another order");
    loom_sampler_destroy(s2);

    /* the order the trainer has always had: a Philox shuffle of the
     * identity keyed by (seed, LOOM__STREAM_EPOCH_ORDER + epoch) */
    for (int ep = 0; ep < 2; ep++) {
        int64_t want[50];
        for (int i = 0; i < 50; i++) want[i] = i;
        loom__shuffle(want, 50, 7, LOOM__STREAM_EPOCH_ORDER + (uint64_t)ep);
        loom_sampler_set_epoch(s, ep);
        CHECK(!memcmp(want, loom_sampler_indices(s), sizeof want), "epoch %d: sampler order is the seeded epoch shuffle", ep);
    }
    loom_sampler_destroy(s);

    d.n = 0;
    CHECK(loom_sampler_create(ctx, &d, &s) == LOOM_ERR_INVALID_ARG && !s, "n 0 refused");
    d.n = 5, d.world = 3, d.rank = 3;
    CHECK(loom_sampler_create(ctx, &d, &s) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "rank 3 of world 3"),
          "rank out of range refused: %s", loom_last_error(ctx));
    d.n = 2, d.rank = 0, d.drop_uneven = true;
    CHECK(loom_sampler_create(ctx, &d, &s) == LOOM_ERR_INVALID_ARG, "2 samples over 3 ranks with drop refused");
}

static void test_distributed(void) {
    for (int drop = 0; drop < 2; drop++)
        for (int64_t n = 10; n <= 12; n += 2)
            for (int shuf = 0; shuf < 2; shuf++)
                for (int64_t epoch = 0; epoch < 2; epoch++) {
                    int count[12] = {0};
                    int64_t len[3] = {0}, order[12];
                    for (int r = 0; r < 3; r++) {
                        loom_sampler_desc d = {0};
                        d.n = n, d.shuffle = shuf, d.seed = 99, d.rank = r, d.world = 3, d.drop_uneven = drop;
                        loom_sampler *s = NULL;
                        CHECK_OK(ctx, loom_sampler_create(ctx, &d, &s));
                        if (!s) return;
                        loom_sampler_set_epoch(s, epoch);
                        len[r] = loom_sampler_len(s);
                        for (int64_t k = 0; k < len[r]; k++) {
                            int64_t i = loom_sampler_indices(s)[k];
                            count[i]++;
                            if (r + 3 * k < 12) order[r + 3 * k] = i; /* the shared global order */
                        }
                        loom_sampler_destroy(s);
                    }
                    int64_t expect_len = drop ? n / 3 : (n + 2) / 3;
                    CHECK(len[0] == expect_len && len[1] == expect_len && len[2] == expect_len,
                          "n %lld drop %d: lengths %lld %lld %lld, expected %lld", (long long)n, drop, (long long)len[0],
                          (long long)len[1], (long long)len[2], (long long)expect_len);
                    /* padded: positions n.. repeat order[0..]; dropped: positions past floor*3 unused */
                    int64_t total = expect_len * 3, bad = 0;
                    for (int64_t i = 0; i < n; i++) {
                        int want = 1;
                        if (!drop) {
                            for (int64_t p = n; p < total; p++) want += order[p - n] == i; /* repeated from the start */
                        } else {
                            bool in = false;
                            for (int64_t p = 0; p < total; p++) in |= order[p] == i;
                            want = in;
                        }
                        bad += count[i] != want;
                    }
                    CHECK(bad == 0, "n %lld drop %d shuffle %d epoch %lld: %lld samples seen the wrong number of times",
                          (long long)n, drop, shuf, (long long)epoch, (long long)bad);
                    if (n == 12) {
                        bool once = true;
                        for (int i = 0; i < 12; i++) once &= count[i] == 1;
                        CHECK(once, "n 12 over 3 ranks: each sample exactly once");
                    }
                    if (!drop && !shuf) /* torch: indices + indices[:pad], rank r takes r::3 */
                        CHECK(n != 10 || (order[10] == 0 && order[11] == 1), "padding repeats the start");
                }
}

static void test_fixed(void) {
    int64_t idx[10];
    for (int i = 0; i < 10; i++) idx[i] = 9 - i;
    loom_batches b = {0};
    CHECK_OK(ctx, loom_batches_fixed(ctx, idx, 10, 4, false, &b));
    CHECK(b.count == 3 && b.offsets[0] == 0 && b.offsets[1] == 4 && b.offsets[2] == 8 && b.offsets[3] == 10 &&
              b.idx[0] == 9 && b.idx[9] == 0,
          "10 by 4: %lld batches", (long long)b.count);
    loom_batches_free(&b);
    CHECK_OK(ctx, loom_batches_fixed(ctx, idx, 10, 4, true, &b));
    CHECK(b.count == 2 && b.offsets[2] == 8 && b.idx[7] == 2, "10 by 4 drop_last: %lld batches", (long long)b.count);
    loom_batches_free(&b);
    CHECK_OK(ctx, loom_batches_fixed(ctx, idx, 8, 4, true, &b));
    CHECK(b.count == 2 && b.offsets[2] == 8, "8 by 4 drop_last: nothing dropped");
    loom_batches_free(&b);
    CHECK_OK(ctx, loom_batches_fixed(ctx, idx, 3, 4, true, &b));
    CHECK(b.count == 0 && b.offsets[0] == 0, "3 by 4 drop_last: no batch");
    loom_batches_free(&b);
    CHECK(loom_batches_fixed(ctx, idx, 10, 0, false, &b) == LOOM_ERR_INVALID_ARG, "batch 0 refused");
}

#define NB 300

static void test_bucketed(void) {
    int64_t sizes[NB], idx[NB];
    for (int i = 0; i < NB; i++) {
        uint32_t w[4];
        loom_philox(5, 1, (uint64_t)i, w);
        sizes[i] = 1 + (int64_t)(w[0] % 200); /* 1..200 */
        idx[i] = i;
    }
    loom_bucket_desc d = {0};
    d.budget = 512, d.seed = 3;
    loom_batches a = {0}, b = {0}, c = {0};
    CHECK_OK(ctx, loom_batches_bucketed(ctx, idx, NB, sizes, &d, 0, &a));
    CHECK_OK(ctx, loom_batches_bucketed(ctx, idx, NB, sizes, &d, 0, &b));
    CHECK_OK(ctx, loom_batches_bucketed(ctx, idx, NB, sizes, &d, 1, &c));
    CHECK(a.count == b.count && a.offsets[a.count] == NB && !memcmp(a.idx, b.idx, NB * sizeof *a.idx) &&
              !memcmp(a.offsets, b.offsets, (size_t)(a.count + 1) * sizeof *a.offsets),
          "same (seed, epoch): same batches");
    CHECK(c.offsets[c.count] == NB && memcmp(a.idx, c.idx, NB * sizeof *a.idx), "another epoch: another order");
    CHECK(is_perm(a.idx, NB) && is_perm(c.idx, NB), "every sample exactly once");
    int over = 0, mixed = 0, empty = 0;
    int64_t padded = 0;
    for (int64_t j = 0; j < a.count; j++) {
        int64_t mx = 0, cnt = a.offsets[j + 1] - a.offsets[j], bk = -1;
        empty += cnt < 1;
        for (int64_t i = a.offsets[j]; i < a.offsets[j + 1]; i++) {
            int64_t s = sizes[a.idx[i]], k = 0;
            while (((int64_t)1 << k) < s) k++;
            mixed += bk >= 0 && k != bk;
            bk = k;
            if (s > mx) mx = s;
        }
        over += mx * cnt > d.budget;
        padded += mx * cnt;
    }
    CHECK(over == 0 && mixed == 0 && empty == 0, "budget: %d batches over, %d with mixed buckets, %d empty", over, mixed,
          empty);
    int64_t real = 0;
    for (int i = 0; i < NB; i++) real += sizes[i];
    CHECK(padded < 2 * real, "power-of-two buckets pad by less than 2x (%lld padded for %lld real)", (long long)padded,
          (long long)real);
    /* the input order of idx does not matter */
    int64_t rev[NB];
    for (int i = 0; i < NB; i++) rev[i] = NB - 1 - i;
    loom_batches r = {0};
    CHECK_OK(ctx, loom_batches_bucketed(ctx, rev, NB, sizes, &d, 0, &r));
    CHECK(r.count == a.count && !memcmp(r.idx, a.idx, NB * sizeof *a.idx), "input order irrelevant");
    loom_batches_free(&r);
    loom_batches_free(&b);
    loom_batches_free(&c);

    /* max_batch, explicit bounds, drop_last */
    int64_t bounds[2] = {50, 120};
    d.max_batch = 3, d.bounds = bounds, d.nbounds = 2;
    CHECK_OK(ctx, loom_batches_bucketed(ctx, idx, NB, sizes, &d, 2, &b));
    int bad = 0;
    for (int64_t j = 0; j < b.count; j++) {
        int64_t mx = 0, cnt = b.offsets[j + 1] - b.offsets[j], bk = -1;
        for (int64_t i = b.offsets[j]; i < b.offsets[j + 1]; i++) {
            int64_t s = sizes[b.idx[i]], k = s <= 50 ? 0 : s <= 120 ? 1 : 2;
            bad += bk >= 0 && k != bk;
            bk = k;
            if (s > mx) mx = s;
        }
        bad += cnt > 3 || mx * cnt > d.budget;
    }
    CHECK(bad == 0 && is_perm(b.idx, NB), "bounds {50, 120}, max_batch 3: %d violations", bad);
    d.drop_last = true;
    CHECK_OK(ctx, loom_batches_bucketed(ctx, idx, NB, sizes, &d, 2, &c));
    /* at most one batch per bucket (3 buckets) dropped, and only a non-full one */
    int64_t lost = b.offsets[b.count] - c.offsets[c.count];
    CHECK(c.count >= b.count - 3 && c.count <= b.count && lost >= 0 && lost < 3 * 3, "drop_last: %lld -> %lld batches, %lld samples dropped",
          (long long)b.count, (long long)c.count, (long long)lost);
    loom_batches_free(&b);
    loom_batches_free(&c);
    /* drop_last with every batch exactly full: nothing dropped */
    int64_t eq[12], eqi[12];
    for (int i = 0; i < 12; i++) eq[i] = 4, eqi[i] = i;
    loom_bucket_desc e = {0};
    e.budget = 16, e.drop_last = true;
    CHECK_OK(ctx, loom_batches_bucketed(ctx, eqi, 12, eq, &e, 0, &b));
    CHECK(b.count == 3 && b.offsets[3] == 12, "12 samples of 4, budget 16, drop_last: 3 full batches (got %lld)",
          (long long)b.count);
    loom_batches_free(&b);
    CHECK_OK(ctx, loom_batches_bucketed(ctx, eqi, 10, eq, &e, 0, &b));
    CHECK(b.count == 2 && b.offsets[2] == 8, "10 samples of 4, drop_last: the partial batch of 2 dropped");
    loom_batches_free(&b);

    /* errors */
    d.drop_last = false, d.nbounds = 0, d.max_batch = 0;
    sizes[17] = 600;
    CHECK(loom_batches_bucketed(ctx, idx, NB, sizes, &d, 0, &b) == LOOM_ERR_INVALID_ARG &&
              strstr(loom_last_error(ctx), "sample 17 has size 600"),
          "oversize sample: %s", loom_last_error(ctx));
    sizes[17] = 0;
    CHECK(loom_batches_bucketed(ctx, idx, NB, sizes, &d, 0, &b) == LOOM_ERR_INVALID_ARG, "size 0 refused");
    sizes[17] = 1;
    int64_t badb[2] = {50, 50};
    d.bounds = badb, d.nbounds = 2;
    CHECK(loom_batches_bucketed(ctx, idx, NB, sizes, &d, 0, &b) == LOOM_ERR_INVALID_ARG &&
              strstr(loom_last_error(ctx), "must increase"),
          "non-increasing bounds refused");
    d.nbounds = 0, d.budget = 0;
    CHECK(loom_batches_bucketed(ctx, idx, NB, sizes, &d, 0, &b) == LOOM_ERR_INVALID_ARG, "budget 0 refused");
    loom_batches_free(&a);
}

/* Blocks (loom_sampler_desc.block): rank r of 2 takes the r-th run of 4
 * consecutive samples of each global batch of 8 in the shared order (the
 * one-process order); only whole global batches: 21 samples give 2 of them. */
static void test_blocks(void) {
    loom_sampler_desc one = {.n = 21, .shuffle = true, .seed = 5};
    loom_sampler *s1 = NULL;
    CHECK_OK(ctx, loom_sampler_create(ctx, &one, &s1));
    if (!s1) return;
    loom_sampler_set_epoch(s1, 1);
    for (int r = 0; r < 2; r++) {
        loom_sampler_desc d = one;
        d.rank = r, d.world = 2, d.block = 4;
        loom_sampler *s = NULL;
        CHECK_OK(ctx, loom_sampler_create(ctx, &d, &s));
        if (!s) break;
        loom_sampler_set_epoch(s, 1);
        CHECK(loom_sampler_len(s) == 8, "blocks: rank %d has %lld samples, expected 8", r, (long long)loom_sampler_len(s));
        int bad = 0;
        for (int64_t k = 0; k < loom_sampler_len(s) && k < 8; k++)
            bad += loom_sampler_indices(s)[k] != loom_sampler_indices(s1)[k / 4 * 8 + r * 4 + k % 4];
        CHECK(bad == 0, "blocks: rank %d takes its block of each global batch (%d differ)", r, bad);
        loom_sampler_destroy(s);
    }
    loom_sampler_destroy(s1);
    loom_sampler_desc few = {.n = 7, .rank = 0, .world = 2, .block = 4};
    loom_sampler *s = NULL;
    CHECK(loom_sampler_create(ctx, &few, &s) == LOOM_ERR_INVALID_ARG && strstr(loom_last_error(ctx), "no whole run"),
          "blocks: 7 samples for 2 ranks x 4: an error (%s)", loom_last_error(ctx));
    loom_sampler_destroy(s);
}

int main(void) {
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    test_single();
    test_distributed();
    test_blocks();
    test_fixed();
    test_bucketed();
    loom_ctx_destroy(ctx);
    return tu_summary();
}
