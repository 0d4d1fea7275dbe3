/* loom/loader.h — the data loader: .npy arrays, samplers, the dataset
 * interface, per-sample random transforms and the threaded prefetching
 * loader.
 *
 * defines: loom_npy_dtype, loom_npy (loom_npy_read/parse/write/free),
 *          loom_sampler (sequential, shuffled, distributed),
 *          loom_batches (fixed-size batching with drop_last, and
 *          length-bucketed dynamic batching under a token/pixel budget),
 *          loom_source (a dataset: sample i -> u8 HWC image, f32 record
 *          or i32 ids + label; IDX, .npy, shards and token files behind
 *          it), loom_tf_step / loom_tf_parse
 *          (the per-sample pipeline: RandomCrop, RandomHorizontalFlip, ...),
 *          loom_loader (worker pool, ring of pinned batch slots, ordered
 *          delivery, auto-tuned worker count).
 *
 * Everything here is deterministic: a sampler's order is a function of
 * (seed, epoch) only, never of earlier epochs or of how many threads read.
 * Objects are used by one thread at a time; the index arrays they expose are
 * read-only and may be shared with worker threads until the next call that
 * changes them.
 */
#ifndef LOOM_LOADER_H
#define LOOM_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "data.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- .npy arrays ------------------------------------------------------- */

/* X(name, descr code, bytes) — the element types loom reads and writes. */
#define LOOM_NPY_DTYPE_LIST(X) \
    X(U1, "u1", 1)             \
    X(I4, "i4", 4)             \
    X(I8, "i8", 8)             \
    X(F2, "f2", 2)             \
    X(F4, "f4", 4)             \
    X(F8, "f8", 8)

typedef enum loom_npy_dtype {
#define LOOM__X(n, s, b) LOOM_NPY_##n,
    LOOM_NPY_DTYPE_LIST(LOOM__X)
#undef LOOM__X
    LOOM_NPY_DTYPE_COUNT
} loom_npy_dtype;

#define LOOM_NPY_MAX_DIMS 8

/* "u1", "i4", ...; "?" when out of range. */
const char *loom_npy_dtype_name(loom_npy_dtype dt);
/* Bytes per element; 0 when out of range. */
size_t loom_npy_dtype_size(loom_npy_dtype dt);

/* An array read from a .npy file: C order, little-endian, owned data. */
typedef struct loom_npy {
    loom_npy_dtype dtype;
    int ndim;                          /* 0 = a scalar (one element) */
    int64_t shape[LOOM_NPY_MAX_DIMS];
    int64_t count;                     /* elements: the product of shape */
    size_t bytes;                      /* count * element size */
    int version;                       /* format major version: 1, 2 or 3 */
    void *data;                        /* bytes bytes (NULL when 0), owned */
} loom_npy;

/* Read a .npy file: format 1.0, 2.0 or 3.0; C order (fortran_order True is
 * accepted for 0-d and 1-d arrays, whose layout is the same); dtype one of the list
 * above, little-endian ('<', or '|' for u1). The header dict must be exactly
 * {'descr', 'fortran_order', 'shape'} as numpy writes it (whitespace, key
 * order and a trailing comma are free). Errors (LOOM_ERR_IO for a missing or
 * unreadable file, LOOM_ERR_FORMAT for bad contents, LOOM_ERR_UNSUPPORTED for
 * Fortran order, big-endian or another dtype) name the file and the problem:
 * bad magic, unknown version, header length past the end of the file, a
 * malformed or incomplete header dict, truncated data, trailing bytes.
 * On failure *out is untouched. */
loom_status loom_npy_read(loom_ctx *ctx, const char *path, loom_npy *out);
/* The same from memory; `name` stands for the file in messages. The data is
 * copied. */
loom_status loom_npy_parse(loom_ctx *ctx, const char *name, const void *buf, size_t size, loom_npy *out);
void loom_npy_free(loom_npy *a);

/* Write a C-order little-endian array byte for byte as numpy's np.save
 * (numpy >= 1.23) would: format 1.0 (an 8-dim header is far below its 64 KiB
 * limit), the data starting at a multiple of 64 bytes. data holds the product of shape elements (ndim 0 =
 * one element). The file is written to "<path>.tmp" and renamed over path. */
loom_status loom_npy_write(loom_ctx *ctx, const char *path, loom_npy_dtype dt, int ndim, const int64_t *shape,
                           const void *data);

/* ---- samplers ---------------------------------------------------------- */

/* Zero-initialised is valid: sequential, not distributed. */
typedef struct loom_sampler_desc {
    int64_t n;          /* dataset size (samples 0..n-1), >= 1 */
    bool shuffle;       /* a permutation drawn from (seed, epoch) only */
    uint64_t seed;
    /* Distributed: rank in 0..world-1; world 0 or 1 = one process. As torch's
     * DistributedSampler: every rank sees the same global order, cut
     * round-robin (rank, rank + world, ...). When n % world != 0 the global
     * order is padded by repeating its start so every rank gets ceil(n/world)
     * samples, or, with drop_uneven, its tail is dropped so every rank gets
     * floor(n/world). */
    int rank, world;
    bool drop_uneven;
} loom_sampler_desc;

typedef struct loom_sampler loom_sampler;

loom_status loom_sampler_create(loom_ctx *ctx, const loom_sampler_desc *desc, loom_sampler **out);
void loom_sampler_destroy(loom_sampler *s);
/* Set the order for epoch `epoch` (>= 0). Done for epoch 0 by create. */
void loom_sampler_set_epoch(loom_sampler *s, int64_t epoch);
/* This rank's samples per epoch, and their order for the current epoch
 * (valid until the next set_epoch or destroy). */
int64_t loom_sampler_len(const loom_sampler *s);
const int64_t *loom_sampler_indices(const loom_sampler *s);

/* ---- batching ---------------------------------------------------------- */

/* A list of batches: batch b is idx[offsets[b] .. offsets[b + 1]). */
typedef struct loom_batches {
    int64_t count;     /* batches */
    int64_t *offsets;  /* count + 1, owned */
    int64_t *idx;      /* offsets[count] sample indices, owned */
} loom_batches;

void loom_batches_free(loom_batches *b);

/* Cut idx[0..n) (typically a sampler's order) into batches of `batch`
 * samples, in order; the last one is shorter, or dropped with drop_last. */
loom_status loom_batches_fixed(loom_ctx *ctx, const int64_t *idx, int64_t n, int64_t batch, bool drop_last,
                               loom_batches *out);

/* Length-bucketed dynamic batching. Zero-initialised fields take defaults. */
typedef struct loom_bucket_desc {
    int64_t budget;            /* padded size per batch: max size * count <= budget (required) */
    int64_t max_batch;         /* at most this many samples per batch; 0 = no cap */
    /* Bucket upper bounds, strictly increasing: a sample of size s goes to
     * the first bucket with s <= bounds[i], or a last bucket past them all.
     * nbounds 0 = powers of two (sizes in (2^(k-1), 2^k] share a bucket),
     * which pads by less than 2x. */
    const int64_t *bounds;
    int nbounds;
    bool drop_last;            /* drop each bucket's last batch when it could still have grown */
    uint64_t seed;
} loom_bucket_desc;

/* Form batches from idx[0..n) (this rank's samples; their order does not
 * matter) where sizes[i] is the size (tokens, pixels) of sample i, >= 1 and
 * <= budget. Within each bucket the samples are shuffled from
 * (seed, epoch, bucket) and packed greedily in that order: a batch closes
 * when the next sample would make max size * count exceed the budget (or
 * count exceed max_batch). The batches of all buckets are then shuffled
 * from (seed, epoch). Each sample of idx appears in exactly one batch
 * (unless drop_last dropped its batch). Errors name the sample whose size
 * is out of range. */
loom_status loom_batches_bucketed(loom_ctx *ctx, const int64_t *idx, int64_t n, const int64_t *sizes,
                                  const loom_bucket_desc *desc, int64_t epoch, loom_batches *out);

/* ---- datasets (sample sources) ------------------------------------------ */

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
    int64_t min_h, min_w;
    /* Optional: called once the decoded size (h, w) is known, before any
     * pixel is decoded. Returning true with box = {y0, x0, y1, x1} says the
     * caller reads only rows [y0, y1) and columns [x0, x1); the source may
     * then decode just that part (JPEG: libjpeg-turbo's skipped rows and
     * cropped columns, bit for bit the full decode's pixels there) and
     * leave other pixels as zeros. The loader fills it from the
     * pipeline's random crop of the sample. */
    bool (*region)(void *user, int64_t h, int64_t w, int64_t box[4]);
    void *user;
} loom_decode_hint;

/* A dataset: n samples of one shape, each with an i32 label. A source
 * object is immutable after it is opened: `get` may be called from several
 * threads at once (each with its own ctx and its own output buffer).
 * Anyone may implement one by filling the struct (tests do). */
typedef struct loom_source loom_source;
struct loom_source {
    const char *name;       /* for messages: the file, or "dataset" */
    int64_t n;              /* samples */
    loom_sample_kind kind;
    int c;                  /* channels */
    int64_t h, w;           /* U8: the image; F32, I32: the record is (c, h, w) */
    int num_classes;        /* max label + 1 */
    /* Sample i (0 <= i < n) into data (U8: h*w*c bytes HWC; F32: c*h*w
     * floats CHW; I32: c*h*w int32 CHW) and *label. A failure is recorded
     * on ctx (the message names the file and the sample) and returned. */
    loom_status (*get)(const loom_source *src, loom_ctx *ctx, int64_t i, void *data, int32_t *label);
    void (*destroy)(loom_source *src); /* frees impl and src itself; NULL = nothing to free */
    void *impl;
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

/* ImageFolder (as torchvision.datasets.ImageFolder): root/<class>/.../<file>,
 * one subfolder per class, classes in sorted (byte) order numbered from 0,
 * each class's files in sorted order (its own files, then its subfolders',
 * recursively); names starting with '.' are ignored. Files ending in .jpg,
 * .jpeg, .png, .bmp are decoded (JPEG with TurboJPEG when loom was built with
 * it, else stb_image; PNG chunk CRCs are checked); .gif, .webp, .tif, .tiff,
 * .ppm, .pgm are listed and are an "unsupported image" error when read;
 * other files are ignored. Images of any size, always 3 channels (RGB, as
 * torchvision's loader converts to): a variable-size source (get_image).
 * Open errors (LOOM_ERR_IO / LOOM_ERR_FORMAT) name the directory: missing,
 * not a directory, no class folders, a class folder with no image. */
typedef struct loom_imagefolder_desc {
    const char *root;  /* required */
    /* A corrupt, truncated, empty or unsupported file is by default an error
     * naming the file (LOOM_ERR_FORMAT / LOOM_ERR_UNSUPPORTED). With skip_bad
     * such a sample is replaced by the next good one (i + 1, i + 2, ...,
     * wrapping: a pure function of i) and counted once. */
    bool skip_bad;
} loom_imagefolder_desc;

loom_status loom_source_open_imagefolder(loom_ctx *ctx, const loom_imagefolder_desc *desc, loom_source **out);
/* An ImageFolder's class names (NULL for k out of range or another source)
 * and sample paths (root/class/file). */
const char *loom_imagefolder_class(const loom_source *src, int k);
const char *loom_imagefolder_path(const loom_source *src, int64_t i);
/* Files skipped so far (skip_bad), each counted once; 0 for other sources. */
int64_t loom_imagefolder_skipped(const loom_source *src);
/* Decode one image file held in memory (JPEG, PNG or BMP, told apart by
 * their first bytes) as ImageFolder does, with the same checks: RGB HWC into
 * a buffer from malloc (*data, *h x *w x 3 bytes) that the caller frees.
 * `name` stands for the file in messages; hint as in loom_source.get_image
 * (NULL = full size). On failure *data is NULL. Any thread. */
loom_status loom_image_decode(loom_ctx *ctx, const char *name, const void *buf, size_t size, const loom_decode_hint *hint,
                              uint8_t **data, int64_t *h, int64_t *w);

/* ---- per-sample transforms ---------------------------------------------- */

/* One step of the per-sample pipeline on U8 HWC images. Parameters mean
 * what they mean in torchvision.transforms (v2). Random steps draw only from
 * (seed, epoch, sample index): see loom_loader_desc. */
typedef enum loom_tf_kind {
    LOOM_TF_RANDOM_CROP,   /* RandomCrop(size=(h, w), padding=pad, pad_if_needed, fill, padding_mode) */
    LOOM_TF_RANDOM_HFLIP,  /* RandomHorizontalFlip(p) */
    LOOM_TF_RANDOM_VFLIP,  /* RandomVerticalFlip(p) */
    LOOM_TF_CENTER_CROP,   /* CenterCrop(size=(h, w)) (loom_tf_center_crop) */
    LOOM_TF_RESIZE,        /* Resize(size=(h, w)), bilinear, antialiased (loom_tf_resize) */
    LOOM_TF_RANDOM_RESIZED_CROP, /* RandomResizedCrop(size=(h, w), scale, ratio) (loom_tf_resized_crop) */
    LOOM_TF_COLOR_JITTER,  /* ColorJitter(brightness, contrast, saturation, hue) (loom_tf_adjust_*) */
    LOOM_TF_RANDOM_AFFINE, /* RandomAffine(degrees, translate, scale, shear, interpolation, fill) (loom_tf_affine) */
    LOOM_TF_RANDOM_ERASING, /* RandomErasing(p, scale, ratio, value) on the normalised tensor (loom_tf_erase) */
    LOOM_TF_RANDOM_ORDER,  /* RandomOrder([...]): the next `count` steps in a random order */
} loom_tf_kind;

typedef enum loom_pad_mode {
    LOOM_PAD_CONSTANT,  /* fill */
    LOOM_PAD_EDGE,      /* repeat the edge pixel */
    LOOM_PAD_REFLECT,   /* mirror without repeating the edge: 2 1 | 0 1 2 */
    LOOM_PAD_SYMMETRIC, /* mirror repeating the edge:         1 0 | 0 1 2 */
} loom_pad_mode;

typedef struct loom_tf_step {
    loom_tf_kind kind;
    int64_t h, w;          /* crop / resize output size */
    /* Resize: h is torchvision's Resize(int), the shorter side (the longer
     * becomes int(h * long / short)); w is unused. loom_tf_parse sets it for
     * Resize(N), as torchvision; Resize((h, w)) sets both sides. */
    bool short_side;
    /* RandomCrop: padding left, top, right, bottom (torchvision's 4-tuple
     * order; an int p is {p, p, p, p}, a pair (a, b) is {a, b, a, b});
     * pad_if_needed then pads each side by the missing width / height (as
     * torchvision: both sides, after `pad`). The crop's top-left corner is
     * uniform over the padded image: i in [0, H - h], j in [0, W - w]. */
    int64_t pad[4];
    bool pad_if_needed;
    loom_pad_mode pad_mode;
    uint8_t fill;          /* constant padding value, every channel */
    double p;              /* flip / erasing probability; 0 = 0.5 (torchvision's default); < 0 = never */
    /* RandomResizedCrop: the crop's area as a fraction of the image's, and
     * its aspect ratio w / h (drawn log-uniform); {0, 0} = torchvision's
     * defaults (0.08, 1) and (3/4, 4/3). 10 attempts, then the centre crop
     * of the largest box within `ratio`. RandomErasing: the erased box's,
     * defaults (0.02, 0.33) and (0.3, 3.3); 10 attempts, then no erasing. */
    double scale[2], ratio[2];
    /* ColorJitter: factor ranges [lo, hi] of brightness, contrast,
     * saturation (>= 0) and hue (in [-0.5, 0.5]); jitter_on[k] false = that
     * adjustment is not applied (torchvision's None). The four run in a
     * random order per sample. */
    double jitter[4][2];
    bool jitter_on[4];
    /* RandomAffine: angle uniform in degrees[0..1]; translate (fractions of
     * the width, height; has_translate), tx = round(uniform(-a W, a W));
     * scale uniform in ascale (has_ascale); shear x uniform in shear[0..1],
     * y in shear[2..3] (nshear 0, 2 or 4); nearest (the parser's default,
     * torchvision's) or bilinear; afill per channel for the area outside. */
    double degrees[2], translate[2], ascale[2], shear[4];
    bool has_translate, has_ascale, nearest;
    int nshear;
    uint8_t afill[3];
    /* RandomErasing: the erased value per channel (nvalue 1 or c), in the
     * normalised tensor's units. Erasing steps end the pipeline (they act
     * after ToTensor + Normalize). */
    float value[3];
    int nvalue;
    int count;             /* RandomOrder: how many of the following steps it orders */
} loom_tf_step;

/* Parse a torchvision-like list, steps separated by ';' or top-level ',':
 *   RandomCrop(28, padding=4, pad_if_needed=True, fill=0, padding_mode=reflect)
 *   RandomCrop((24, 20), padding=(2, 4))     RandomHorizontalFlip(p=0.5)
 *   RandomVerticalFlip()   CenterCrop(24)   Resize((32, 32))
 *   RandomResizedCrop(224, scale=(0.08, 1.0), ratio=(0.75, 1.3333))
 *   ColorJitter(0.2, 0.2, 0.2, 0.05)   ColorJitter(brightness=(0.5, 1.5), hue=0.1)
 *   RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=(-5, 5, -5, 5),
 *                interpolation=bilinear, fill=0)
 *   RandomOrder([RandomHorizontalFlip(), ColorJitter(0.4)])
 *   RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0)
 * (names are case-insensitive; "hflip" and "vflip" are short names). Up to
 * max steps; *n gets the count. Errors name the step and the problem. */
loom_status loom_tf_parse(loom_ctx *ctx, const char *spec, loom_tf_step *steps, int max, int *n);

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

typedef struct loom_shard_pack_desc {
    const loom_source *src;   /* required: u8 images (an ImageFolder, IDX, .npy) */
    /* Deterministic steps only (Resize, CenterCrop), run once per image; every
     * image must come out of them at one size (else an error naming it). A
     * leading Resize lets JPEGs be decoded at a reduced scale, as the loader does. */
    const loom_tf_step *steps;
    int nsteps;
    const char *path;         /* written to "<path>.tmp", then renamed over path */
} loom_shard_pack_desc;

/* Decode every sample of src in order, run the steps and write the shard;
 * *h, *w (may be NULL) get the record size. */
loom_status loom_shard_pack(loom_ctx *ctx, const loom_shard_pack_desc *desc, int64_t *h, int64_t *w);

/* ---- the threaded prefetching loader ------------------------------------ */

#define LOOM_WORKERS_AUTO 0  /* start at the core count, tune while running */
#define LOOM_WORKERS_SYNC (-1) /* no threads: next() loads on the calling thread */

/* Zero-initialised fields take defaults. */
typedef struct loom_loader_desc {
    const loom_source *src;  /* required; borrowed, must outlive the loader */
    int batch;               /* samples per batch, >= 1 (required) */
    bool shuffle;            /* the order of the epoch from (seed, epoch): loom_sampler's, and so
                                loom_batch_iter's */
    bool drop_last;          /* drop the final partial batch */
    uint64_t seed;           /* order and per-sample randomness */
    int rank, world;         /* distributed: as loom_sampler_desc (world 0 = 1) */
    /* Worker threads: LOOM_WORKERS_AUTO (0, the default), LOOM_WORKERS_SYNC,
     * or N > 0. Batches are bitwise identical for every setting. */
    int workers;
    int max_workers;         /* auto: at most this many; 0 = 2x the cores */
    int prefetch;            /* batch slots per worker in the ring; 0 = 2 */
    /* U8 sources: the pipeline, then ToTensor + Normalize to CHW f32:
     *   x = ((float)u / 255.0f - mean[k]) / std[k]
     * (exactly loom_batch_iter's formula). nstat = 1 (one value for every
     * channel) or c; 0 = mean 0, std 1. F32 sources take no steps. */
    const loom_tf_step *steps;
    int nsteps;
    const float *mean, *std;
    int nstat;
    /* Where the batch slots live: the backend's pinned/staging host memory
     * (host_alloc) when it has one, else malloc. NULL = malloc. */
    loom_backend *backend;
    /* true: run every transform step on its own. false (the default): runs
     * of consecutive geometric steps (Resize, crops, flips,
     * RandomResizedCrop, one RandomAffine) resample once (loader/pipeline.c;
     * bit-exact when at most one resize per axis and no RandomAffine). */
    bool no_fuse;
} loom_loader_desc;

typedef struct loom_loader loom_loader;

/* One delivered batch: x (count, c, h, w) f32 (or ids for token sources), y (count) i32, in the ring
 * slot (pinned when the backend has pinned memory). Valid until the next
 * loom_loader_next / begin / destroy. */
typedef struct loom_loader_batch {
    int count;               /* 0 = the epoch is over */
    int64_t index;           /* batch number within the epoch */
    const float *x;          /* U8 and F32 sources (NULL for I32) */
    const int32_t *ids;      /* I32 sources (token sequences): (count, c, h, w) int32; else NULL */
    const int32_t *y;
} loom_loader_batch;

/* Counters since the last loom_loader_begin (all times in seconds). */
typedef struct loom_loader_stats {
    int64_t batches;         /* delivered */
    double wait_s;           /* the caller's time blocked in next() */
    double compute_s;        /* the caller's time between next() calls */
    double load_s;           /* summed worker time loading the delivered batches */
    double first_batch_s;    /* begin -> the first batch delivered */
    int workers;             /* worker threads active now (0 = synchronous) */
    int workers_min, workers_max; /* the range over the epoch */
    int64_t carried;         /* batches of this epoch loaded or loading at its begin: started ahead while
                                the previous epoch ended (begin(e + 1) from the start after epoch e) */
} loom_loader_stats;

/* Validates the desc and the pipeline against the source's shape, allocates
 * the ring and starts the workers (they wait for begin). Per-sample
 * randomness: sample i in epoch e draws from Philox (seed, stream
 * "AUGM" + e, counter 16 i + k), one word after another in pipeline order
 * (words past 64 continue in a range no other sample uses: loader/pipeline.c),
 * so batches do not depend on the worker count or on timing. */
loom_status loom_loader_create(loom_ctx *ctx, const loom_loader_desc *desc, loom_loader **out);
/* Stops and joins every worker (also mid-epoch), frees the ring. */
void loom_loader_destroy(loom_loader *ld);
/* The output record shape (after the pipeline): x per sample is (c, h, w). */
void loom_loader_shape(const loom_loader *ld, int *c, int64_t *h, int64_t *w);
/* Batches per epoch. */
int64_t loom_loader_batches(const loom_loader *ld);
/* Start epoch `epoch` at batch `first` (0 = its start), producing at most
 * `limit` batches (0 = to the end). Work in flight for an earlier epoch is
 * dropped. Workers start loading at once. Once every batch of an epoch is
 * claimed, idle workers load the first batches of the next epoch ahead;
 * begin(epoch + 1, 0, ...) keeps them (stats.carried), any other begin
 * drops them and stops this for the loader (LOOM_LOADER_AHEAD=0: never). */
void loom_loader_begin(loom_loader *ld, int64_t epoch, int64_t first, int64_t limit);
/* The next batch in order (count 0 at the end). A sample that failed to
 * load is returned here, in order, as its status with the message
 * ("loader: batch B, sample S: ..."); begin again to go on. */
loom_status loom_loader_next(loom_loader *ld, loom_loader_batch *out);
void loom_loader_stats_get(const loom_loader *ld, loom_loader_stats *out);

#ifdef __cplusplus
}
#endif
#endif
