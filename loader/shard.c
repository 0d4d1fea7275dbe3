/* loader/shard.c — the packed shard format: decoded, resized images stored
 * once as fixed-size uint8 HWC records (written by loom_shard_pack / `loom
 * pack`), read back by memory-mapping as a loom_source.
 *
 * The file (all integers little-endian):
 *
 *   offset  size  field
 *   0       8     magic "LOOMSHRD"
 *   8       4     version (1)
 *   12      4     header size (64)
 *   16      8     n: records
 *   24      4     H     28  4  W     32  4  C (1..4)     36  4  number of classes
 *   40      8     record bytes (H * W * C)
 *   48      8     payload bytes (file size - 64)
 *   56      4     payload checksum: CRC-32 (zlib's, ISO-HDLC polynomial) of bytes 64..end
 *   60      4     header checksum: CRC-32 of bytes 0..59
 *   64            records: n * (H * W * C) bytes, record i at 64 + i * record bytes
 *   L             labels: n int32 (0 .. classes - 1), L = 64 + n * record bytes rounded up to 8
 *   X             index: n uint64, the file offset of record i, X = L + 4 n rounded up to 8
 *                 (records are fixed-size, so index[i] = 64 + i * record bytes; the
 *                 reader checks that)
 *   X + 8 n       end of file (padding bytes are 0)
 *
 * Opening checks everything before the first sample is read: the magic, the
 * version, the header checksum, the sizes against each other and against
 * the file's length (truncated or trailing bytes), the payload checksum
 * (one pass over the file), the index and the labels. After that `get` is a
 * memcpy from the mapping: any number of threads may call it at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../core/outfile.h"
#include "loader_impl.h"

#define SHARD_MAGIC "LOOMSHRD"
#define SHARD_VERSION 1u
#define SHARD_HEADER 64u
#define SHARD_MAX_SIDE ((int64_t)1 << 20)

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr32(uint8_t *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static void wr64(uint8_t *p, uint64_t v) {
    for (int k = 0; k < 8; k++) p[k] = (uint8_t)(v >> (8 * k));
}
static uint64_t align8(uint64_t v) { return (v + 7) & ~(uint64_t)7; }

/* zlib's crc32 takes a uInt length: feed large buffers in pieces */
static uint32_t crc_update(uint32_t crc, const uint8_t *p, uint64_t n) {
    uLong c = crc;
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k, n -= k;
    }
    return (uint32_t)c;
}

/* The layout of a shard of n records of rec bytes; false on overflow. */
static bool layout(uint64_t n, uint64_t rec, uint64_t *labels_off, uint64_t *index_off, uint64_t *end) {
    if (rec == 0 || n > (UINT64_MAX / 4) / rec) return false;
    *labels_off = align8(SHARD_HEADER + n * rec);
    *index_off = align8(*labels_off + 4 * n);
    *end = *index_off + 8 * n;
    return true;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct shard_impl {
    char *path;
    const uint8_t *map;
    size_t size;
    uint64_t rec, labels_off;
} shard_impl;

static loom_status shard_get(const loom_source *src, loom_ctx *ctx, int64_t i, void *data, int32_t *label) {
    const shard_impl *m = src->impl;
    if (i < 0 || i >= src->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: sample %lld out of range (%lld samples)", src->name,
                         (long long)i, (long long)src->n);
    memcpy(data, m->map + SHARD_HEADER + (uint64_t)i * m->rec, m->rec);
    *label = (int32_t)rd32(m->map + m->labels_off + 4 * (uint64_t)i);
    return LOOM_OK;
}

/* Sample i in place (the mapping): no copy. */
static const uint8_t *shard_view(const loom_source *src, int64_t i, int32_t *label) {
    const shard_impl *m = src->impl;
    if (i < 0 || i >= src->n) return NULL;
    *label = (int32_t)rd32(m->map + m->labels_off + 4 * (uint64_t)i);
    return m->map + SHARD_HEADER + (uint64_t)i * m->rec;
}

static void shard_destroy(loom_source *src) {
    shard_impl *m = src->impl;
    if (m->map) munmap((void *)m->map, m->size);
    free(m->path);
    free(m);
    free(src);
}

/* The checks on a mapped (or in-memory) shard of `size` bytes; fills s. */
static loom_status shard_check(loom_ctx *ctx, const char *path, const uint8_t *b, uint64_t size, loom_source *s,
                               shard_impl *m) {
    if (size < SHARD_HEADER)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated shard (%llu bytes, shorter than the %u-byte header)", path,
                         (unsigned long long)size, SHARD_HEADER);
    if (memcmp(b, SHARD_MAGIC, 8))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: not a loom shard (bad magic: expected \"%s\")", path, SHARD_MAGIC);
    uint32_t version = rd32(b + 8);
    if (version != SHARD_VERSION)
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: shard format version %u (this loom reads version %u)", path,
                         version, SHARD_VERSION);
    if (crc_update(0, b, 60) != rd32(b + 60))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt shard: bad header checksum (CRC-32 %08x, stored %08x)", path,
                         crc_update(0, b, 60), rd32(b + 60));
    uint64_t n = rd64(b + 16), rec = rd64(b + 40), payload = rd64(b + 48);
    int64_t h = rd32(b + 24), w = rd32(b + 28);
    uint32_t c = rd32(b + 32), classes = rd32(b + 36);
    if (rd32(b + 12) != SHARD_HEADER || n < 1 || n > INT64_MAX || h < 1 || w < 1 || h > SHARD_MAX_SIDE ||
        w > SHARD_MAX_SIDE || c < 1 || c > 4 || classes < 1 || classes > INT32_MAX ||
        rec != (uint64_t)h * (uint64_t)w * c)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt shard header (header size %u, %llu records of %lldx%lldx%u = "
                         "%llu bytes, %u classes)",
                         path, rd32(b + 12), (unsigned long long)n, (long long)h, (long long)w, c,
                         (unsigned long long)rec, classes);
    uint64_t lo = 0, xo = 0, end = 0;
    if (!layout(n, rec, &lo, &xo, &end))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt shard header (%llu records of %llu bytes overflow)", path,
                         (unsigned long long)n, (unsigned long long)rec);
    if (payload != end - SHARD_HEADER)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt shard header (%llu records of %llu bytes need a payload of "
                         "%llu bytes; the header says %llu)",
                         path, (unsigned long long)n, (unsigned long long)rec,
                         (unsigned long long)(end - SHARD_HEADER), (unsigned long long)payload);
    if (size < end)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated shard (%llu bytes; %llu records of %lldx%lldx%u need %llu)",
                         path, (unsigned long long)size, (unsigned long long)n, (long long)h, (long long)w, c,
                         (unsigned long long)end);
    if (size > end)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: %llu trailing bytes after the shard's %llu", path,
                         (unsigned long long)(size - end), (unsigned long long)end);
    uint32_t crc = crc_update(0, b + SHARD_HEADER, payload);
    if (crc != rd32(b + 56))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt shard: bad payload checksum (CRC-32 %08x, stored %08x)", path,
                         crc, rd32(b + 56));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t off = rd64(b + xo + 8 * i);
        if (off != SHARD_HEADER + i * rec)
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt shard index: record %llu at offset %llu (expected %llu)",
                             path, (unsigned long long)i, (unsigned long long)off,
                             (unsigned long long)(SHARD_HEADER + i * rec));
        uint32_t y = rd32(b + lo + 4 * i);
        if (y >= classes)
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: label %d of record %llu (expected 0..%u)", path, (int32_t)y,
                             (unsigned long long)i, classes - 1);
    }
    *s = (loom_source){.n = (int64_t)n, .kind = LOOM_SAMPLE_U8, .c = (int)c, .h = h, .w = w,
                       .num_classes = (int)classes, .get = shard_get, .view = m->map ? shard_view : NULL,
                       .destroy = shard_destroy, .impl = m};
    m->rec = rec, m->labels_off = lo;
    return LOOM_OK;
}

loom_status loom_source_open_shard(loom_ctx *ctx, const char *path, loom_source **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO in its place must not block */
    if (fd < 0) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open the shard: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_IO, "%s: not a regular file", path);
    }
    loom_source *s = calloc(1, sizeof *s);
    shard_impl *m = calloc(1, sizeof *m);
    if (!s || !m || !(m->path = strdup(path))) {
        close(fd);
        if (m) free(m->path);
        free(s), free(m);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", path);
    }
    loom_status st = LOOM_OK;
    uint64_t size = (uint64_t)sb.st_size;
    if (size >= SHARD_HEADER) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) st = loom__err(ctx, LOOM_ERR_IO, "%s: cannot map the shard: %s", path, strerror(errno));
        else m->map = p, m->size = (size_t)size;
    }
    close(fd);
    if (st == LOOM_OK) {
        static const uint8_t none[1];
        st = shard_check(ctx, path, m->map ? m->map : none, m->map ? size : (uint64_t)sb.st_size, s, m);
    }
    if (st != LOOM_OK) {
        if (m->map) munmap((void *)m->map, m->size);
        free(m->path), free(m), free(s);
        return st;
    }
    s->name = m->path;
    *out = s;
    return LOOM_OK;
}

loom_status loom_shard_check_buffer(loom_ctx *ctx, const char *name, const void *buf, size_t size) {
    loom_source s;
    shard_impl m = {0};
    static const uint8_t none[1];
    return shard_check(ctx, name, size ? buf : none, size, &s, &m);
}

/* ---- writing ------------------------------------------------------------ */

static bool is_deterministic(loom_tf_kind k) { return k == LOOM_TF_RESIZE || k == LOOM_TF_CENTER_CROP; }

static const char *sample_name(const loom_source *src, int64_t i, char *buf, size_t n) {
    const char *p = loom_imagefolder_path(src, i);
    if (p) return p;
    snprintf(buf, n, "%s, sample %lld", src->name, (long long)i);
    return buf;
}

typedef struct pack_state {
    loom__outfile *f;
    uint32_t crc;
    uint64_t written; /* payload bytes so far */
} pack_state;

static loom_status put(pack_state *ps, const void *p, size_t n) {
    if (n == 0) return LOOM_OK;
    ps->crc = crc_update(ps->crc, p, n);
    ps->written += n;
    return loom__outfile_write(ps->f, p, n);
}

static loom_status put_zeros(pack_state *ps, uint64_t upto) {
    static const uint8_t z[8];
    return put(ps, z, (size_t)(upto - SHARD_HEADER - ps->written));
}

loom_status loom_shard_pack(loom_ctx *ctx, const loom_shard_pack_desc *desc, int64_t *out_h, int64_t *out_w) {
    const loom_source *src = desc ? desc->src : NULL;
    if (!desc || !src || !desc->path || (!src->get && !src->get_image) || src->n < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: a source with samples and an output path are required");
    if (src->kind != LOOM_SAMPLE_U8 || src->c < 1 || src->c > 4)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: '%s' does not hold u8 images of 1..4 channels", src->name);
    if (src->num_classes < 1)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: '%s' has no classes", src->name);
    for (int k = 0; k < desc->nsteps; k++)
        if (!is_deterministic(desc->steps[k].kind))
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: step %d is random; a shard stores each image once, so only "
                             "Resize and CenterCrop may be packed (random steps belong to the loader)",
                             k + 1);
    char nb[600];
    loom__outfile *f;
    loom_status st = loom__outfile_open(ctx, desc->path, &f);
    if (st != LOOM_OK) return st;
    pack_state ps = {.f = f, .crc = 0};
    int64_t n = src->n, H = 0, W = 0;
    int c = src->c;
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    uint8_t *fixed = src->get ? malloc(loom_source_sample_bytes(src)) : NULL;
    uint8_t *buf[2] = {NULL, NULL};
    size_t cap = 0;
    uint8_t hdr[SHARD_HEADER] = {0};
    if (!labels || (src->get && !fixed)) st = loom__err(ctx, LOOM_ERR_OOM, "pack: out of memory");
    if (st == LOOM_OK) st = loom__outfile_write(f, hdr, SHARD_HEADER);
    /* the decode hint: a Resize that comes first */
    loom_decode_hint hint = {0};
    if (desc->nsteps > 0 && desc->steps[0].kind == LOOM_TF_RESIZE)
        hint = (loom_decode_hint){.min_h = desc->steps[0].h, .min_w = desc->steps[0].w};
    for (int64_t i = 0; i < n && st == LOOM_OK; i++) {
        uint8_t *px = NULL;
        int64_t h = src->h, w = src->w, oh, ow;
        size_t mb = 0;
        if (src->get) st = src->get(src, ctx, i, fixed, &labels[i]);
        else st = src->get_image(src, ctx, i, hint.min_h ? &hint : NULL, &px, &h, &w, &labels[i]);
        if (st != LOOM_OK) break;
        if (labels[i] < 0 || labels[i] >= src->num_classes) {
            st = loom__err(ctx, LOOM_ERR_FORMAT, "pack: %s: label %d (expected 0..%d)", sample_name(src, i, nb, sizeof nb),
                           labels[i], src->num_classes - 1);
        } else if ((st = loom__tf_plan(ctx, desc->steps, desc->nsteps, c, h, w, &oh, &ow, &mb)) == LOOM_OK) {
            if (i == 0) H = oh, W = ow;
            if (oh != H || ow != W)
                st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: %s: an image of %lldx%lld comes out of the transforms as "
                               "%lldx%lld, but the first one as %lldx%lld: every record of a shard has one size (add "
                               "--size HxW or a Resize((h, w)))",
                               sample_name(src, i, nb, sizeof nb), (long long)h, (long long)w, (long long)oh,
                               (long long)ow, (long long)H, (long long)W);
            else if (oh > SHARD_MAX_SIDE || ow > SHARD_MAX_SIDE)
                st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: records of %lldx%lld are too large", (long long)oh,
                               (long long)ow);
        }
        if (st == LOOM_OK && mb > cap) {
            for (int k = 0; k < 2 && st == LOOM_OK; k++) {
                uint8_t *q = realloc(buf[k], mb);
                if (!q) st = loom__err(ctx, LOOM_ERR_OOM, "pack: out of memory (%zu bytes)", mb);
                else buf[k] = q;
            }
            if (st == LOOM_OK) cap = mb;
        }
        if (st == LOOM_OK) {
            loom_image img = {px ? px : fixed, h, w, c};
            loom__aug_rng rng;
            loom__aug_init(&rng, 0, 0, i);
            st = loom__tf_run(ctx, desc->steps, desc->nsteps, &rng, &img, buf[0], buf[1]);
            if (st == LOOM_OK) st = put(&ps, img.data, (size_t)H * (size_t)W * (size_t)c);
        }
        free(px);
    }
    uint64_t rec = (uint64_t)H * (uint64_t)W * (uint64_t)c, lo = 0, xo = 0, end = 0;
    if (st == LOOM_OK && !layout((uint64_t)n, rec, &lo, &xo, &end))
        st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "pack: %lld records of %llu bytes are too large", (long long)n,
                       (unsigned long long)rec);
    if (st == LOOM_OK) st = put_zeros(&ps, lo);
    for (int64_t i = 0; st == LOOM_OK && i < n; i++) {
        uint8_t b4[4];
        wr32(b4, (uint32_t)labels[i]);
        st = put(&ps, b4, 4);
    }
    if (st == LOOM_OK) st = put_zeros(&ps, xo);
    for (int64_t i = 0; st == LOOM_OK && i < n; i++) {
        uint8_t b8[8];
        wr64(b8, SHARD_HEADER + (uint64_t)i * rec);
        st = put(&ps, b8, 8);
    }
    if (st == LOOM_OK) {
        memcpy(hdr, SHARD_MAGIC, 8);
        wr32(hdr + 8, SHARD_VERSION), wr32(hdr + 12, SHARD_HEADER);
        wr64(hdr + 16, (uint64_t)n);
        wr32(hdr + 24, (uint32_t)H), wr32(hdr + 28, (uint32_t)W), wr32(hdr + 32, (uint32_t)c);
        wr32(hdr + 36, (uint32_t)src->num_classes);
        wr64(hdr + 40, rec), wr64(hdr + 48, end - SHARD_HEADER);
        wr32(hdr + 56, ps.crc);
        wr32(hdr + 60, crc_update(0, hdr, 60));
        st = loom__outfile_pwrite(f, 0, hdr, SHARD_HEADER);
    }
    if (st == LOOM_OK) st = loom__outfile_commit(f);
    else loom__outfile_abort(f);
    free(labels), free(fixed), free(buf[0]), free(buf[1]);
    if (st == LOOM_OK) {
        if (out_h) *out_h = H;
        if (out_w) *out_w = W;
    }
    return st;
}
