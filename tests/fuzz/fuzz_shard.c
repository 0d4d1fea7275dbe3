/* tests/fuzz/fuzz_shard.c — libFuzzer target for the packed shard checks
 * (loader/shard.c: loom_shard_check_buffer, the same code that validates a
 * memory-mapped shard in loom_source_open_shard).
 *
 * The first input byte chooses a mode, the rest is the shard. With bit 0 set
 * the target first rewrites both CRC-32 checksums (payload at byte 56,
 * header at byte 60) to match, so the fuzzer gets past them to the size,
 * index and label checks. A failure must name the input; a success must be
 * a file whose header says exactly its length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "loom/loom.h"

static loom_ctx *ctx;

static void fail(const char *why) {
    fprintf(stderr, "fuzz_shard: invariant broken: %s (%s)\n", why, loom_last_error(ctx));
    abort();
}

static void put32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ctx && loom_ctx_create(NULL, &ctx) != LOOM_OK) abort();
    if (size < 1) return 0;
    uint8_t mode = data[0];
    size_t n = size - 1;
    uint8_t *b = malloc(n ? n : 1);
    if (!b) abort();
    if (n) memcpy(b, data + 1, n);
    if ((mode & 1) && n >= 64) {
        put32(b + 56, (uint32_t)crc32(0L, b + 64, (uInt)(n - 64)));
        put32(b + 60, (uint32_t)crc32(0L, b, 60));
    }
    loom_status s = loom_shard_check_buffer(ctx, "fuzz-input", b, n);
    if (s != LOOM_OK) {
        if (!strstr(loom_last_error(ctx), "fuzz-input")) fail("message does not name the input");
    } else {
        uint64_t payload = 0;
        for (int k = 7; k >= 0; k--) payload = payload << 8 | b[48 + k];
        if (n < 64 || payload != n - 64) fail("accepted a shard whose length disagrees with its header");
    }
    free(b);
    return 0;
}
