/* loom/source.h — datasets as sample sources for the loader, and image
 * decoding.
 *
 * defines: loom_source (a dataset: sample i -> u8 HWC image, f32 record or
 *          i32 ids + label), its openers for IDX files, an in-memory
 *          loom_dataset, .npy arrays, a directory, an ImageFolder and a raw
 *          token file (packed shards: loom/shard.h), loom_decode_hint and
 *          loom_image_decode (JPEG, PNG, BMP as ImageFolder decodes them).
 *
 * A source is immutable once opened: its `get` may be called from several
 * threads at once (each with its own ctx and output buffer).
 */
#ifndef LOOM_SOURCE_H
#define LOOM_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one sample decodes to. */
typedef enum loom_sample_kind {
    LOOM_SAMPLE_U8,  /* an image: h * w * c bytes, HWC (rows packed) */
    LOOM_SAMPLE_F32, /* a record: c * h * w floats, CHW, used as it is (no transforms) */
    LOOM_SAMPLE_I32, /* a record of c * h * w int32 ids, CHW (token sequences); loom_loader
                        delivers them in loom_loader_batch.ids */
} loom_sample_kind;

/* What the pipeline does first with a variable-size image: 0 = nothing is
 * known (decode at full size). A Resize((h, w)) as the first geometric step
 * gives min_h = h, min_w = w: a JPEG may then be decoded at 1/2, 1/4 or 1/8
 * scale as long as the result is at least min_h x min_w. */
typedef struct loom_decode_hint {
    int64_t min_h;          /* a reduced-scale decode keeps at least this height; 0 with min_w 0 = full size */
    int64_t min_w;          /* a reduced-scale decode keeps at least this width; 0 with min_h 0 = full size */
    /* Optional: called once the decoded size (h, w) is known, before any
     * pixel is decoded. Returning true with box = {y0, x0, y1, x1} says the
     * caller reads only rows [y0, y1) and columns [x0, x1); the source may
     * then decode just that part (JPEG: libjpeg-turbo's skipped rows and
     * cropped columns, bit for bit the full decode's pixels there) and
     * leave other pixels as zeros. The loader fills it from the
     * pipeline's random crop of the sample. */
    bool (*region)(void *user, int64_t h, int64_t w, int64_t box[4]);
    void *user;             /* passed to region */
    /* The decoded-pixel limit: an image whose header declares more than
     * this many pixels (or a side longer) is refused before anything is
     * allocated, "image too large" naming the file, both sides and the
     * limit. 0 = LOOM_IMAGE_MAX_PIXELS. An ImageFolder sets it from its desc. */
    int64_t max_pixels;
    /* A JPEG that libjpeg-turbo decodes with a warning (corrupt data it
     * guessed past, e.g. extraneous bytes) is an error unless this is set;
     * an ImageFolder sets it from skip_bad. (A region decode sees the
     * warnings of the rows it reads.) */
    bool accept_warnings;
} loom_decode_hint;

/* The default decoded-pixel limit (loom_decode_hint.max_pixels). */
#define LOOM_IMAGE_MAX_PIXELS ((int64_t)1 << 28)

/* A dataset: n samples of one shape, each with an i32 label. A source
 * object is immutable after it is opened: `get` may be called from several
 * threads at once (each with its own ctx and its own output buffer).
 * Anyone may implement one by filling the struct (tests do). */
typedef struct loom_source loom_source;
struct loom_source {
    const char *name;       /* for messages: the file, or "dataset" */
    int64_t n;              /* samples */
    loom_sample_kind kind;  /* what one sample decodes to: U8 image, F32 or I32 record */
    int c;                  /* channels */
    int64_t h;              /* U8: the image's height (0: sizes vary, see get_image); F32, I32: records are (c, h, w) */
    int64_t w;              /* U8: the image's width (0: sizes vary, see get_image); F32, I32: records are (c, h, w) */
    int num_classes;        /* max label + 1 */
    /* Sample i (0 <= i < n) into data (U8: h*w*c bytes HWC; F32: c*h*w
     * floats CHW; I32: c*h*w int32 CHW) and *label. A failure is recorded
     * on ctx (the message names the file and the sample) and returned. */
    loom_status (*get)(const loom_source *src, loom_ctx *ctx, int64_t i, void *data, int32_t *label);
    void (*destroy)(loom_source *src); /* frees impl and src itself; NULL = nothing to free */
    void *impl;             /* the implementation's own data, for get, view, get_image and destroy */
    /* Sources whose images differ in size (ImageFolder) set h = w = 0, get =
     * NULL and this instead: sample i decoded into a buffer from malloc
     * (*data: *h * *w * c bytes, HWC U8) that the caller frees. With hint
     * non-NULL the source may decode smaller (JPEG DCT-domain scaling), but
     * never below hint's sizes. The loader then needs a pipeline that makes
     * every image one size (a Resize((h, w)) or a crop). */
    loom_status (*get_image)(const loom_source *src, loom_ctx *ctx, int64_t i, const loom_decode_hint *hint,
                             uint8_t **data, int64_t *h, int64_t *w, int32_t *label);
    /* Optional, U8 sources with `get`: sample i where it already lies
     * (a memory-mapped shard), read-only and valid while the source
     * lives, and *label; NULL = use `get` (which copies). The loader reads
     * through it instead of copying each record. */
    const uint8_t *(*view)(const loom_source *src, int64_t i, int32_t *label);
};

/* Bytes of one decoded sample (0 for a variable-size source). */
size_t loom_source_sample_bytes(const loom_source *src);
/* For a `get` written outside loom: record a failure (printf-style
 * message) on ctx and return st. */
loom_status loom_source_error(loom_ctx *ctx, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A view of an in-memory dataset (IDX / Fashion-MNIST, loom/data.h): ds is
 * borrowed and must outlive the source. U8 samples; (C, H, W) pixels are
 * handed out as HWC. */
loom_status loom_source_wrap(loom_ctx *ctx, const loom_dataset *ds, loom_source **out);
/* IDX image + label files (loom_dataset_load_idx), owned by the source. */
loom_status loom_source_open_idx(loom_ctx *ctx, const char *images_path, const char *labels_path, loom_source **out);
/* .npy arrays: images u1 (N, H, W) or (N, H, W, C) -> U8 HWC samples, or
 * f2/f4/f8 (N, ...) -> F32 records ((N, C, H, W); (N, H, W) as C = 1;
 * (N, F) as (F, 1, 1)); labels u1/i4/i8 (N) with values in 0..2^31-1.
 * Errors name the file and what was expected. Loaded into memory. */
loom_status loom_source_open_npy(loom_ctx *ctx, const char *images_path, const char *labels_path, loom_source **out);
/* A directory: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (IDX) when
 * present, else {train,test}-{images,labels}.npy, else an ImageFolder
 * (loom_source_open_imagefolder, strict): DIR/train (train) or DIR/val,
 * DIR/test (not train) when present, else DIR itself (train only). train
 * picks the split. A packed shard comes before the ImageFolder:
 * DIR/train.shard (train) or DIR/val.shard, DIR/test.shard (not train); dir
 * may also name a shard file itself. */
loom_status loom_source_open_dir(loom_ctx *ctx, const char *dir, bool train, loom_source **out);
void loom_source_destroy(loom_source *src);

/* ImageFolder (as torchvision.datasets.ImageFolder): `root/<class>/.../<file>`,
 * one subfolder per class, classes in sorted (byte) order numbered from 0,
 * each class's files in sorted order (its own files, then its subfolders',
 * recursively); names starting with '.' are ignored. Files ending in .jpg,
 * .jpeg, .png, .bmp are decoded (JPEG with TurboJPEG when loom was built with
 * it, else stb_image; PNG chunk CRCs are checked); .gif, .webp, .tif, .tiff,
 * .ppm, .pgm are listed and are an "unsupported image" error when read;
 * other files are ignored. Images of any size, always 3 channels (RGB, as
 * torchvision's loader converts to): a variable-size source (get_image).
 * Open errors (LOOM_ERR_IO / LOOM_ERR_FORMAT) name the directory: missing,
 * not a directory, no class folders, a class folder with no image, a folder
 * reached twice (the walk tracks every directory by device and inode: a
 * symlink to a parent or to '.', or a second link to one folder, is refused
 * naming both paths). Symlinks are followed. An entry with an image's
 * extension that is not a regular file (a FIFO, socket, device node or
 * dangling symlink) is skipped and counted (loom_imagefolder_not_regular);
 * a file that has become one since the walk is an error when read (files
 * are opened without blocking and checked before reading). */
typedef struct loom_imagefolder_desc {
    const char *root;  /* required */
    /* A corrupt, truncated, empty or unsupported file is by default an error
     * naming the file (LOOM_ERR_FORMAT / LOOM_ERR_UNSUPPORTED). With skip_bad
     * such a sample is replaced by the next good one (i + 1, i + 2, ...,
     * wrapping: a pure function of i) and counted once. A JPEG that
     * libjpeg-turbo decodes with only a warning is then kept (else it is
     * an error). */
    bool skip_bad;
    /* Images declaring more pixels are refused (loom_decode_hint.max_pixels);
     * 0 = LOOM_IMAGE_MAX_PIXELS. */
    int64_t max_pixels;
} loom_imagefolder_desc;

loom_status loom_source_open_imagefolder(loom_ctx *ctx, const loom_imagefolder_desc *desc, loom_source **out);
/* An ImageFolder's class names (NULL for k out of range or another source)
 * and sample paths (root/class/file). */
const char *loom_imagefolder_class(const loom_source *src, int k);
const char *loom_imagefolder_path(const loom_source *src, int64_t i);
/* Files skipped so far (skip_bad), each counted once; 0 for other sources. */
int64_t loom_imagefolder_skipped(const loom_source *src);
/* Image-named entries the walk left out because they are not regular files;
 * 0 for other sources. */
int64_t loom_imagefolder_not_regular(const loom_source *src);
/* Decode one image file held in memory (JPEG, PNG or BMP, told apart by
 * their first bytes) as ImageFolder does, with the same checks: RGB HWC into
 * a buffer from malloc (*data, *h x *w x 3 bytes) that the caller frees.
 * `name` stands for the file in messages; hint as in loom_source.get_image
 * (NULL = full size). On failure *data is NULL. Any thread. */
loom_status loom_image_decode(loom_ctx *ctx, const char *name, const void *buf, size_t size, const loom_decode_hint *hint,
                              uint8_t **data, int64_t *h, int64_t *w);



/* A raw token file (loader/tokens.c): little-endian uint16 or uint32 ids, no
 * header (nanoGPT's train.bin), memory-mapped and cut into sequences of
 * seq_len = T: sample i holds inputs x = t[iT .. iT+T) and targets
 * y = t[iT+1 .. iT+T] (the next tokens). Stride T (neighbouring windows
 * share one token), n = (N - 1) / T samples from N tokens, the tail of
 * fewer than T + 1 tokens dropped. An I32 record (c, h, w) = (2, 1, T): x
 * then y; the label is y[T - 1]; num_classes = vocab_size, or the largest
 * token + 1 without one. Opening reads every token once and checks them
 * all, so `get` only fails on a sample index out of range. Errors
 * (LOOM_ERR_INVALID_ARG for the desc, LOOM_ERR_IO / LOOM_ERR_FORMAT for the
 * file) name the file: missing or not a regular file, empty, a byte count
 * that is not a multiple of the width, fewer than T + 1 tokens, a token >=
 * vocab_size (with its index and byte offset) or, without a vocab_size, one
 * >= 2^31 - 1 (ids are int32). The path is copied; the file stays mapped
 * until loom_source_destroy. */
typedef struct loom_tokens_desc {
    int width;          /* bytes per token: 2 (uint16; 0 = this default) or 4 (uint32) */
    int64_t seq_len;    /* T, >= 1 (required) */
    int64_t vocab_size; /* 1..2^31-1: every token must be below it; 0 = no bound */
} loom_tokens_desc;

loom_status loom_source_open_tokens(loom_ctx *ctx, const char *path, const loom_tokens_desc *desc, loom_source **out);

#ifdef __cplusplus
}
#endif
#endif
