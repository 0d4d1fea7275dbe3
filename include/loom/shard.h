/* loom/shard.h — packed shards: fixed-size u8 records in one
 * memory-mapped file (loader/shard.c documents the layout), opened as a
 * source, checked, and written from any u8 source through deterministic
 * transform steps.
 *
 * defines: loom_source_open_shard, loom_shard_check_buffer,
 *          loom_shard_pack_desc, loom_shard_pack.
 */
#ifndef LOOM_SHARD_H
#define LOOM_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "source.h"
#include "status.h"
#include "transforms.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A packed shard (loader/shard.c, which documents the layout): n fixed-size
 * u8 HWC records, i32 labels and an index behind a 64-byte header (magic
 * "LOOMSHRD", version 1, sizes, CRC-32 checksums of the header and of the
 * payload), memory-mapped. Opening validates everything (magic, version,
 * header checksum, sizes against the file's length, payload checksum, index,
 * labels); each problem is an error (LOOM_ERR_IO / _FORMAT / _UNSUPPORTED)
 * naming the file. A U8 source of one size; `get` is a memcpy. */
loom_status loom_source_open_shard(loom_ctx *ctx, const char *path, loom_source **out);
/* The same checks on a shard held in memory (fuzzing); `name` stands for the
 * file in messages. */
loom_status loom_shard_check_buffer(loom_ctx *ctx, const char *name, const void *buf, size_t size);

/* What loom_shard_pack writes: the samples of src through the steps, to path. */
typedef struct loom_shard_pack_desc {
    const loom_source *src;   /* required: u8 images (an ImageFolder, IDX, .npy) */
    /* Deterministic steps only (Resize, CenterCrop), run once per image; every
     * image must come out of them at one size (else an error naming it). A
     * leading Resize lets JPEGs be decoded at a reduced scale, as the loader does. */
    const loom_tf_step *steps;
    int nsteps;               /* number of steps; 0 = the images as they are */
    const char *path;         /* written atomically (a temp file unique to this writer, renamed over path) */
} loom_shard_pack_desc;

/* Decode every sample of src in order, run the steps and write the shard;
 * *h, *w (may be NULL) get the record size. */
loom_status loom_shard_pack(loom_ctx *ctx, const loom_shard_pack_desc *desc, int64_t *h, int64_t *w);

#ifdef __cplusplus
}
#endif
#endif
