/* loader/tokens.c — raw token files as a dataset: a flat array of
 * little-endian uint16 or uint32 token ids (no header; what nanoGPT's
 * prepare.py writes with np.array(ids, dtype=np.uint16).tofile), memory-mapped
 * and cut into fixed-length training sequences.
 *
 * With N tokens t[0..N) and seq_len T, sample i (0 <= i < n) is the window
 * t[i T .. i T + T] of T + 1 tokens:
 *
 *   inputs  x = t[i T     .. i T + T)       (T ids)
 *   targets y = t[i T + 1 .. i T + T + 1)   (x shifted by one: the next token)
 *
 * The stride is T (as llm.c's and nanoGPT's sequential loaders step), so one
 * token is shared by neighbouring windows (the last target of i is the first
 * input of i + 1), n = (N - 1) / T, and the tail of fewer than T + 1 tokens is
 * dropped. A sample is an I32 record of (c, h, w) = (2, 1, T): plane 0 the
 * inputs, plane 1 the targets; its label is the last target (y[T - 1]).
 *
 * Opening reads every token once (a vectorisable max per 64 Ki-token block;
 * the offending token is looked for only in a block that fails): a token >=
 * vocab_size (or, for uint32 files without one, >= 2^31 - 1: ids are int32
 * and num_classes = max + 1 must fit) is an
 * error naming the file, the token's index and its byte offset. After that
 * `get` cannot fail on content: it decodes T + 1 ids from the mapping, and any
 * number of threads may call it at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader_impl.h"

#define TOKENS_BLOCK 65536

typedef struct tokens_impl {
    char *path;
    const uint8_t *map;
    size_t size;
    int width;      /* bytes per token: 2 or 4 */
    int64_t seq_len;
} tokens_impl;

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint32_t token_at(const uint8_t *b, int width, uint64_t k) {
    return width == 2 ? rd16(b + 2 * k) : rd32(b + 4 * k);
}

// data (2, 1, T) i32: plane 0 = t[iT .. iT+T), plane 1 = t[iT+1 .. iT+T+1)
static loom_status tokens_get(const loom_source *src, loom_ctx *ctx, int64_t i, void *data, int32_t *label) {
    const tokens_impl *m = src->impl;
    if (i < 0 || i >= src->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: sample %lld out of range (%lld samples)", src->name,
                         (long long)i, (long long)src->n);
    int64_t T = m->seq_len;
    const uint8_t *p = m->map + (size_t)i * (size_t)T * (size_t)m->width;
    int32_t *x = data, *y = x + T;
    if (m->width == 2)
        for (int64_t k = 0; k < T; k++) x[k] = (int32_t)rd16(p + 2 * k), y[k] = (int32_t)rd16(p + 2 * k + 2);
    else
        for (int64_t k = 0; k < T; k++) x[k] = (int32_t)rd32(p + 4 * k), y[k] = (int32_t)rd32(p + 4 * k + 4);
    *label = y[T - 1];
    return LOOM_OK;
}

static void tokens_destroy(loom_source *src) {
    tokens_impl *m = src->impl;
    if (m->map) munmap((void *)m->map, m->size);
    free(m->path);
    free(m);
    free(src);
}

/* Every token of b (count tokens) below `limit`; *max gets the largest.
 * Errors name the first token at or over the limit. */
static loom_status scan(loom_ctx *ctx, const char *path, const uint8_t *b, uint64_t count, int width, uint64_t limit,
                        int64_t vocab, uint32_t *max) {
    uint32_t mx = 0;
    for (uint64_t lo = 0; lo < count; lo += TOKENS_BLOCK) {
        uint64_t hi = lo + TOKENS_BLOCK < count ? lo + TOKENS_BLOCK : count;
        uint32_t bm = 0;
        if (width == 2)
            for (uint64_t k = lo; k < hi; k++) bm = rd16(b + 2 * k) > bm ? rd16(b + 2 * k) : bm;
        else
            for (uint64_t k = lo; k < hi; k++) bm = rd32(b + 4 * k) > bm ? rd32(b + 4 * k) : bm;
        if (bm >= limit) {
            uint64_t k = lo;
            while (token_at(b, width, k) < limit) k++;
            if (vocab > 0)
                return loom__err(ctx, LOOM_ERR_FORMAT, "%s: token %llu (at byte offset %llu) is %u, outside the vocabulary "
                                 "(vocab_size %lld)",
                                 path, (unsigned long long)k, (unsigned long long)(k * (uint64_t)width),
                                 token_at(b, width, k), (long long)vocab);
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: token %llu (at byte offset %llu) is %u (ids are int32: at most "
                             "2^31 - 2)",
                             path, (unsigned long long)k, (unsigned long long)(k * (uint64_t)width), token_at(b, width, k));
        }
        mx = bm > mx ? bm : mx;
    }
    *max = mx;
    return LOOM_OK;
}

loom_status loom_source_open_tokens(loom_ctx *ctx, const char *path, const loom_tokens_desc *desc, loom_source **out) {
    *out = NULL;
    if (!path || !desc) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "tokens: a path and a desc are required");
    int width = desc->width ? desc->width : 2;
    if (width != 2 && width != 4)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: token width %d bytes (expected 2 (uint16) or 4 (uint32))", path,
                         desc->width);
    if (desc->seq_len < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: seq_len %lld (expected >= 1)", path, (long long)desc->seq_len);
    if (desc->vocab_size < 0 || desc->vocab_size > INT32_MAX)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: vocab_size %lld (expected 1..2^31-1, or 0 for no bound)", path,
                         (long long)desc->vocab_size);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO in its place must not block */
    if (fd < 0) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open the token file: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_IO, "%s: not a regular file", path);
    }
    uint64_t size = (uint64_t)sb.st_size, count = size / (uint64_t)width, T = (uint64_t)desc->seq_len;
    loom_status st = LOOM_OK;
    if (size == 0)
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: empty token file", path);
    else if (size % (uint64_t)width)
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: %llu bytes is not a whole number of %d-byte tokens (a truncated file, "
                       "or the wrong width?)",
                       path, (unsigned long long)size, width);
    else if (count < T + 1)
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: %llu tokens, fewer than the seq_len + 1 = %llu one sequence needs",
                       path, (unsigned long long)count, (unsigned long long)(T + 1));
    if (st != LOOM_OK) {
        close(fd);
        return st;
    }
    loom_source *s = calloc(1, sizeof *s);
    tokens_impl *m = calloc(1, sizeof *m);
    if (!s || !m || !(m->path = strdup(path))) {
        close(fd);
        if (m) free(m->path);
        free(s), free(m);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", path);
    }
    void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        st = loom__err(ctx, LOOM_ERR_IO, "%s: cannot map the token file: %s", path, strerror(errno));
    } else {
        m->map = p, m->size = (size_t)size;
        uint64_t limit = desc->vocab_size > 0 ? (uint64_t)desc->vocab_size : (uint64_t)INT32_MAX;
        uint32_t mx = 0;
        st = scan(ctx, path, m->map, count, width, limit, desc->vocab_size, &mx);
        if (st == LOOM_OK) {
            m->width = width, m->seq_len = desc->seq_len;
            *s = (loom_source){.name = m->path, .n = (int64_t)((count - 1) / T), .kind = LOOM_SAMPLE_I32, .c = 2,
                               .h = 1, .w = desc->seq_len,
                               .num_classes = desc->vocab_size > 0 ? (int)desc->vocab_size : (int)mx + 1,
                               .get = tokens_get, .destroy = tokens_destroy, .impl = m};
        }
    }
    if (st != LOOM_OK) {
        if (m->map) munmap((void *)m->map, m->size);
        free(m->path), free(m), free(s);
        return st;
    }
    *out = s;
    return LOOM_OK;
}
