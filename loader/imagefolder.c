/* loader/imagefolder.c — the ImageFolder dataset (torchvision's layout:
 * root/<class>/.../<file>) and the image decoders behind it: JPEG through
 * TurboJPEG when built with it (LOOM_HAVE_TURBOJPEG; DCT-domain scaled
 * decode at 1/2, 1/4, 1/8 when the pipeline's first Resize allows it; only
 * the rows and columns the pipeline's crop reads when the loader says which
 * (loom_decode_hint.region) and libjpeg-turbo's libjpeg API is there,
 * LOOM_HAVE_LIBJPEG), else stb_image; PNG and BMP through stb_image.
 *
 * stb_image trusts its input more than a loader may: it ignores PNG CRCs and
 * reads zeros past the end of a truncated JPEG or BMP. So each file is first
 * checked here: PNG chunks (lengths, CRCs, IEND), a JPEG's end-of-image
 * marker, a BMP's declared size. Every `get_image` reads the file anew; the
 * source is immutable except for the skip_bad flags (atomics), so any number
 * of threads may call it at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../core/impl.h"
#include "loom/loader.h"

#if defined(__GNUC__)
/* stb_image's static API has functions this file does not use (GIF, HDR);
 * GCC reports those at the end of the file, so this one stays off for it */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_NO_STDIO
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#ifdef LOOM_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif
#ifdef LOOM_HAVE_LIBJPEG
#include <jpeglib.h>
#include <setjmp.h>
#if !defined(LIBJPEG_TURBO_VERSION_NUMBER) || LIBJPEG_TURBO_VERSION_NUMBER < 1005000
#undef LOOM_HAVE_LIBJPEG /* jpeg_skip_scanlines and jpeg_crop_scanline came with libjpeg-turbo 1.5 */
#endif
#endif
#include "jpeg_huff.h"

#define MAX_DEPTH 16
/* deflate's largest expansion (a run of one byte): a PNG whose IDAT data,
 * expanded this much, cannot hold its declared pixels is corrupt */
#define DEFLATE_MAX_RATIO 1032

typedef struct if_impl {
    char *root;
    char **classes;
    int nclasses;
    char **paths;       /* n, each root/class/... */
    int32_t *labels;
    bool skip_bad;
    int64_t max_pixels;
    _Atomic uint8_t *bad; /* skip_bad: 1 once sample i was found bad */
    _Atomic int64_t skipped;
    int64_t not_regular; /* image-named entries left out: not regular files */
} if_impl;

/* ---- the file checks and decoders ---------------------------------------- */

typedef enum { FMT_JPEG, FMT_PNG, FMT_BMP, FMT_OTHER } img_fmt;

static img_fmt sniff(const uint8_t *b, size_t n, const char **other) {
    *other = NULL;
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return FMT_JPEG;
    if (n >= 8 && !memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return FMT_PNG;
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') return FMT_BMP;
    if (n >= 4 && !memcmp(b, "GIF8", 4)) *other = "a GIF image";
    else if (n >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4)) *other = "a WebP image";
    else if (n >= 4 && (!memcmp(b, "II*\0", 4) || !memcmp(b, "MM\0*", 4))) *other = "a TIFF image";
    else if (n >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') *other = "a PNM image";
    return FMT_OTHER;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]; }

/* The decoded-pixel limit of a decode (loom_decode_hint.max_pixels). */
static int64_t pixel_limit(const loom_decode_hint *hint) {
    return hint && hint->max_pixels > 0 ? hint->max_pixels : LOOM_IMAGE_MAX_PIXELS;
}

/* An error unless w x h is a size within the limit. */
static loom_status check_size(loom_ctx *ctx, const char *path, const char *fmt, int64_t w, int64_t h, int64_t limit) {
    if (w < 1 || h < 1)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt %s: declares %lldx%lld pixels", path, fmt, (long long)w,
                         (long long)h);
    if (w > limit || h > limit || w * h > limit)
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: image too large: %s of %lldx%lld pixels (the limit is %lld pixels)",
                         path, fmt, (long long)w, (long long)h, (long long)limit);
    return LOOM_OK;
}

/* PNG: the IHDR's size within the limit; every chunk inside the file with a
 * correct CRC, up to IEND; enough IDAT data for the declared pixels. */
static loom_status check_png(loom_ctx *ctx, const char *path, const uint8_t *b, size_t n, int64_t limit) {
    if (n < 33) return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated PNG (%zu bytes, no complete IHDR chunk)", path, n);
    if (memcmp(b + 12, "IHDR", 4)) return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt PNG (no IHDR chunk first)", path);
    int64_t w = be32(b + 16), h = be32(b + 20);
    loom_status st = check_size(ctx, path, "PNG", w, h, limit);
    if (st != LOOM_OK) return st;
    static const int8_t chans[7] = {1, 0, 3, 1, 2, 0, 4}; /* by colour type */
    int64_t bits = b[24] * (b[25] <= 6 ? chans[b[25]] : 0);
    uint64_t idat = 0;
    size_t p = 8;
    for (;;) {
        if (n - p < 12)
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated PNG (ends at byte %zu inside a chunk header, no IEND)", path, n);
        uint32_t len = be32(b + p);
        if (len > n - p - 12)
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated PNG (chunk '%.4s' at byte %zu needs %u bytes, %zu left)",
                             path, (const char *)b + p + 4, p, len, n - p - 12);
        uint32_t crc = (uint32_t)crc32(0L, b + p + 4, (uInt)len + 4);
        if (crc != be32(b + p + 8 + len))
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt PNG: bad CRC in chunk '%.4s' at byte %zu", path,
                             (const char *)b + p + 4, p);
        if (!memcmp(b + p + 4, "IDAT", 4)) idat += len;
        if (!memcmp(b + p + 4, "IEND", 4)) break;
        p += 12 + (size_t)len;
    }
    uint64_t raw = (uint64_t)h * (uint64_t)((w * bits + 7) / 8); /* the rows without their filter bytes */
    if (raw > idat * DEFLATE_MAX_RATIO + 1024)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt PNG: %llu bytes of image data cannot hold %lldx%lld pixels",
                         path, (unsigned long long)idat, (long long)w, (long long)h);
    return LOOM_OK;
}
/* JPEG: an end-of-image marker (FF D9) within the last 32 bytes (a little
 * padding after it is common; a truncated file has none). */
static bool jpeg_has_eoi(const uint8_t *b, size_t n) {
    size_t lo = n > 32 ? n - 32 : 0;
    for (size_t k = n - 1; k > lo; k--)
        if (b[k - 1] == 0xFF && b[k] == 0xD9) return true;
    return false;
}

/* BMP: the file is at least as long as its header says, the image is
 * uncompressed (BI_RGB or BI_BITFIELDS, what stb_image reads) within the
 * size limit, and the file holds its pixel rows. */
static loom_status check_bmp(loom_ctx *ctx, const char *path, const uint8_t *b, size_t n, int64_t limit) {
    if (n < 34) return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated BMP (%zu bytes, shorter than its header)", path, n);
    uint32_t declared = le32(b + 2), off = le32(b + 10), hsize = le32(b + 14);
    if ((declared > 0 && n < declared) || off > n)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated BMP (%zu bytes, the header says %u)", path, n,
                         declared > off ? declared : off);
    int64_t w, h, bpp, comp;
    if (hsize == 12) { /* BITMAPCOREHEADER: 16-bit sizes */
        w = b[18] | b[19] << 8, h = b[20] | b[21] << 8, bpp = b[24] | b[25] << 8, comp = 0;
    } else {
        w = (int32_t)le32(b + 18), h = (int32_t)le32(b + 22), bpp = b[28] | b[29] << 8, comp = le32(b + 30);
    }
    if (h < 0) h = -h;
    loom_status st = check_size(ctx, path, "BMP", w, h, limit);
    if (st != LOOM_OK) return st;
    if (comp != 0 && comp != 3)
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: BMP compression %lld (only uncompressed BMPs, 0 and 3, are read)",
                         path, (long long)comp);
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt BMP: %lld bits per pixel", path, (long long)bpp);
    int64_t need = (int64_t)off + (w * bpp + 31) / 32 * 4 * h; /* rows of 4-byte multiples */
    if ((int64_t)n < need)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated BMP (%zu bytes; %lldx%lld pixels at %lld bits need %lld)",
                         path, n, (long long)w, (long long)h, (long long)bpp, (long long)need);
    return LOOM_OK;
}

#if defined(LOOM_HAVE_TURBOJPEG) && defined(LOOM_HAVE_LIBJPEG)
/* A JPEG through libjpeg-turbo's own API: rows [box[0], box[2]) and columns
 * [box[1], box[3]) of the (1/denom scaled) sw x sh image into out, which
 * holds the whole image; everything else zero (box NULL: the whole image,
 * read to its end marker as TurboJPEG does, with its warnings). Rows above
 * the part are skipped (entropy-decoded only), rows below are never
 * decoded, columns outside are cropped to whole iMCUs. The cropped edge
 * columns' fancy upsampling lacks its neighbour, so two more columns each
 * side are asked for than are kept exact (tests/test-jpeg-region.c compares
 * every pixel of the part with the full decode). own: baseline scans
 * through loom's Huffman decoder (loader/jpeg_huff.c). Returns 1 done, 0
 * not for this file (progressive, unusual colours: decode it with
 * TurboJPEG), -1 error (*st set), 2 loom's decoder gave the file back (the
 * caller decodes it again without). */
typedef struct jpeg_err {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    bool warned; /* msg holds the first warning */
} jpeg_err;

static void jpeg_err_exit(j_common_ptr ci) {
    jpeg_err *e = (jpeg_err *)(void *)ci->err;
    ci->err->format_message(ci, e->msg);
    longjmp(e->jb, 1);
}

/* Warnings (level -1) are kept, as TurboJPEG's are: the first one's text. */
static void jpeg_err_emit(j_common_ptr ci, int level) {
    jpeg_err *e = (jpeg_err *)(void *)ci->err;
    if (level >= 0 || e->warned) return;
    ci->err->format_message(ci, e->msg);
    e->warned = true;
}

static int decode_jpeg_lib(loom_ctx *ctx, const char *path, const uint8_t *b, size_t n, int denom, int sw, int sh,
                           const int64_t *box, bool accept_warnings, bool own, uint8_t *out, loom_status *st) {
    struct jpeg_decompress_struct ci;
    jpeg_err e;
    e.warned = false;
    ci.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jpeg_err_exit, e.pub.emit_message = jpeg_err_emit;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&ci);
        *st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt JPEG: %s", path, e.msg);
        return -1;
    }
#ifdef LOOM_JPEG_HUFF
    jmp_buf bail;
    if (own && setjmp(bail)) {
        jpeg_destroy_decompress(&ci);
        return 2;
    }
#else
    (void)own;
#endif
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, b, (unsigned long)n);
    jpeg_read_header(&ci, TRUE);
    if (ci.progressive_mode || !(ci.jpeg_color_space == JCS_YCbCr || ci.jpeg_color_space == JCS_GRAYSCALE)) {
        jpeg_destroy_decompress(&ci);
        return 0;
    }
    ci.out_color_space = JCS_RGB, ci.scale_num = 1, ci.scale_denom = (unsigned)denom;
    jpeg_start_decompress(&ci);
    if ((int)ci.output_width != sw || (int)ci.output_height != sh || ci.output_components != 3) {
        jpeg_destroy_decompress(&ci);
        return 0;
    }
#ifdef LOOM_JPEG_HUFF
    if (own) loom__jpeg_huff_install(&ci, &bail);
#endif
    const size_t pitch = (size_t)sw * 3;
    JDIMENSION y0 = box ? (JDIMENSION)box[0] : 0, y1 = box ? (JDIMENSION)box[2] : (JDIMENSION)sh;
    JDIMENSION x0 = box && box[1] > 2 ? (JDIMENSION)box[1] - 2 : 0;
    JDIMENSION x1 = box && box[3] + 2 < sw ? (JDIMENSION)box[3] + 2 : (JDIMENSION)sw;
    JDIMENSION xo = x0, wd = x1 - x0;
    if (wd < (JDIMENSION)sw) jpeg_crop_scanline(&ci, &xo, &wd);
    if (y0 > 0) jpeg_skip_scanlines(&ci, y0);
    memset(out, 0, (size_t)ci.output_scanline * pitch);
    while (ci.output_scanline < y1) {
        JSAMPROW rows[16];
        JDIMENSION k = 0, y = ci.output_scanline;
        for (; k < 16 && y + k < y1; k++) rows[k] = out + (size_t)(y + k) * pitch + (size_t)xo * 3;
        JDIMENSION got = jpeg_read_scanlines(&ci, rows, k);
        for (JDIMENSION r = 0; r < got && wd < (JDIMENSION)sw; r++) {
            uint8_t *row = out + (size_t)(y + r) * pitch;
            memset(row, 0, (size_t)xo * 3);
            memset(row + (size_t)(xo + wd) * 3, 0, (size_t)(sw - (int)(xo + wd)) * 3);
        }
        if (got == 0) break;
    }
    memset(out + (size_t)ci.output_scanline * pitch, 0, (size_t)(sh - (int)ci.output_scanline) * pitch);
    if (box) jpeg_abort_decompress(&ci);
    else jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
    if (e.warned && !accept_warnings) {
        *st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt JPEG: %s (libjpeg-turbo's warning; skip_bad accepts it)", path,
                        e.msg);
        return -1;
    }
    return 1;
}

/* decode_jpeg_lib with loom's Huffman decoder; a file it gives back is
 * decoded again as without it: a part through libjpeg, a whole image
 * through TurboJPEG (returns 0), so a damaged file gets the same result
 * and warnings as it would without loom's decoder (TurboJPEG reports a
 * fatal error after a warning as a warning, with the rows read) */
static int decode_jpeg_part(loom_ctx *ctx, const char *path, const uint8_t *b, size_t n, int denom, int sw, int sh,
                            const int64_t *box, bool accept_warnings, uint8_t *out, loom_status *st) {
    bool own = loom__jpeg_huff_enabled();
    int r = decode_jpeg_lib(ctx, path, b, n, denom, sw, sh, box, accept_warnings, own, out, st);
    if (r == 2 && !box) return 0;
    if (r == 2) r = decode_jpeg_lib(ctx, path, b, n, denom, sw, sh, box, accept_warnings, false, out, st);
    return r;
}
#endif

#ifdef LOOM_HAVE_TURBOJPEG
/* JPEG with TurboJPEG: DCT-domain scaling by 1/8, 1/4 or 1/2 when the
 * result still covers the hint. A warning (e.g. extraneous bytes: the data
 * is corrupt, the decoder guessed) is an error unless the hint accepts
 * warnings, and always when the end marker is missing. */
static loom_status decode_tj(loom_ctx *ctx, const char *path, const uint8_t *b, size_t n, const loom_decode_hint *hint,
                             uint8_t **px, int64_t *h, int64_t *w) {
    tjhandle tj = tjInitDecompress();
    if (!tj) return loom__err(ctx, LOOM_ERR_OOM, "%s: cannot start TurboJPEG: %s", path, tjGetErrorStr2(NULL));
    loom_status st = LOOM_OK;
    int W, H, sub, cs;
    uint8_t *out = NULL;
    if (tjDecompressHeader3(tj, b, (unsigned long)n, &W, &H, &sub, &cs) != 0) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: %s JPEG: %s", path, jpeg_has_eoi(b, n) ? "corrupt" : "truncated",
                       tjGetErrorStr2(tj));
        goto done;
    }
    if ((st = check_size(ctx, path, "JPEG", W, H, pixel_limit(hint))) != LOOM_OK) goto done;
    bool accept_warnings = hint && hint->accept_warnings;
    tjscalingfactor f = {1, 1};
    for (int d = 8; d >= 2 && hint && (hint->min_h > 0 || hint->min_w > 0); d /= 2) {
        tjscalingfactor g = {1, d};
        if (TJSCALED(W, g) >= hint->min_w && TJSCALED(H, g) >= hint->min_h) {
            f = g;
            break;
        }
    }
    int sw = TJSCALED(W, f), sh = TJSCALED(H, f);
    if (!(out = malloc((size_t)sw * (size_t)sh * 3))) {
        st = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for a %dx%d image", path, sw, sh);
        goto done;
    }
#ifdef LOOM_HAVE_LIBJPEG
    /* a region (the pipeline's crop), or the whole image when loom's Huffman
     * decoder is on (it plugs into libjpeg's API, not TurboJPEG's) */
    int64_t box[4];
    bool part = hint && hint->region && hint->region(hint->user, sh, sw, box) && box[0] >= 0 && box[1] >= 0 &&
                box[2] <= sh && box[3] <= sw && box[0] < box[2] && box[1] < box[3] &&
                (box[2] - box[0]) * (box[3] - box[1]) < (int64_t)sw * sh;
    if (jpeg_has_eoi(b, n) && (part || loom__jpeg_huff_enabled())) {
        int r = decode_jpeg_part(ctx, path, b, n, f.denom, sw, sh, part ? box : NULL, accept_warnings, out, &st);
        if (r < 0) goto done;
        if (r > 0) {
            *px = out, *h = sh, *w = sw;
            out = NULL;
            goto done;
        }
    }
#endif
    if (tjDecompress2(tj, b, (unsigned long)n, out, sw, 0, sh, TJPF_RGB, 0) != 0 &&
        (tjGetErrorCode(tj) == TJERR_FATAL || !jpeg_has_eoi(b, n) || !accept_warnings)) {
        bool warning = tjGetErrorCode(tj) == TJERR_WARNING && jpeg_has_eoi(b, n);
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: %s JPEG: %s%s", path, jpeg_has_eoi(b, n) ? "corrupt" : "truncated",
                       tjGetErrorStr2(tj), warning ? " (libjpeg-turbo's warning; skip_bad accepts it)" : "");
        goto done;
    }
    *px = out, *h = sh, *w = sw;
    out = NULL;
done:
    free(out);
    tjDestroy(tj);
    return st;
}
#endif

/* Decode the file at path into a malloc'd RGB HWC buffer. The file is
 * opened without blocking and checked to be a regular file before anything
 * is read: a FIFO or device put in place of an image is refused, never
 * waited on. */
static loom_status decode_file(loom_ctx *ctx, const char *path, const loom_decode_hint *hint, uint8_t **px, int64_t *h,
                               int64_t *w) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    uint8_t *b = NULL;
    loom_status st = LOOM_OK;
    size_t n = 0;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = loom__err(ctx, LOOM_ERR_IO, "%s: not a regular file (a FIFO, socket or device is not read)", path);
    else if ((n = (size_t)sb.st_size) > (size_t)INT32_MAX)
        st = loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: %zu bytes: too large for an image file", path, n);
    else if (n > 0 && !(b = malloc(n)))
        st = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory (%zu bytes)", path, n);
    for (size_t at = 0; st == LOOM_OK && at < n;) {
        ssize_t r = read(fd, b + at, n - at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) st = loom__err(ctx, LOOM_ERR_IO, "%s: read error: %s", path, r < 0 ? strerror(errno) : "file shrank");
        else at += (size_t)r;
    }
    close(fd);
    if (st == LOOM_OK) st = loom_image_decode(ctx, path, b, n, hint, px, h, w);
    free(b);
    return st;
}

loom_status loom_image_decode(loom_ctx *ctx, const char *name, const void *buf, size_t n, const loom_decode_hint *hint,
                              uint8_t **px, int64_t *h, int64_t *w) {
    const uint8_t *b = buf;
    const char *path = name ? name : "image";
    *px = NULL, *h = *w = 0;
    if (n == 0) return loom__err(ctx, LOOM_ERR_FORMAT, "%s: empty file (0 bytes), not an image", path);
    if (n > (size_t)INT32_MAX)
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: %zu bytes: too large for an image file", path, n);
    const char *other;
    img_fmt fmt = sniff(b, n, &other);
    if (fmt == FMT_OTHER) {
        if (other) return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: %s: unsupported (JPEG, PNG and BMP are read)", path, other);
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: not a JPEG, PNG or BMP image (starts with %02x %02x %02x %02x)",
                         path, b[0], n > 1 ? b[1] : 0, n > 2 ? b[2] : 0, n > 3 ? b[3] : 0);
    }
    loom_status st;
    int64_t limit = pixel_limit(hint);
    if (fmt == FMT_PNG && (st = check_png(ctx, path, b, n, limit)) != LOOM_OK) return st;
    if (fmt == FMT_BMP && (st = check_bmp(ctx, path, b, n, limit)) != LOOM_OK) return st;
#ifdef LOOM_HAVE_TURBOJPEG
    if (fmt == FMT_JPEG) return decode_tj(ctx, path, b, n, hint, px, h, w);
#endif
    const char *fname = fmt == FMT_JPEG ? "JPEG" : fmt == FMT_PNG ? "PNG" : "BMP";
    if (fmt == FMT_JPEG && !jpeg_has_eoi(b, n))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated JPEG (no end-of-image marker)", path);
    int iw, ih, comp;
    if (!stbi_info_from_memory(b, (int)n, &iw, &ih, &comp))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt %s: %s", path, fname, stbi_failure_reason());
    if ((st = check_size(ctx, path, fname, iw, ih, limit)) != LOOM_OK) return st;
    uint8_t *out = stbi_load_from_memory(b, (int)n, &iw, &ih, &comp, 3);
    if (!out) return loom__err(ctx, LOOM_ERR_FORMAT, "%s: corrupt %s: %s", path, fname, stbi_failure_reason());
    *px = out, *h = ih, *w = iw;
    return LOOM_OK;
}

/* ---- the source ----------------------------------------------------------- */

static loom_status if_get(const loom_source *src, loom_ctx *ctx, int64_t i, const loom_decode_hint *hint, uint8_t **data,
                          int64_t *h, int64_t *w, int32_t *label) {
    if_impl *m = src->impl;
    *data = NULL;
    loom_decode_hint hn = hint ? *hint : (loom_decode_hint){0};
    hn.max_pixels = m->max_pixels, hn.accept_warnings = m->skip_bad;
    hint = &hn;
    if (i < 0 || i >= src->n)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: sample %lld out of range (%lld samples)", src->name, (long long)i,
                         (long long)src->n);
    for (int64_t k = 0; k < src->n; k++) {
        int64_t j = (i + k) % src->n;
        if (m->skip_bad && atomic_load_explicit(&m->bad[j], memory_order_relaxed)) continue;
        loom_status st = decode_file(ctx, m->paths[j], hint, data, h, w);
        if (st == LOOM_OK) {
            *label = m->labels[j];
            return LOOM_OK;
        }
        if (!m->skip_bad || st == LOOM_ERR_OOM) return st;
        if (atomic_exchange(&m->bad[j], 1) == 0) atomic_fetch_add(&m->skipped, 1);
    }
    return loom__err(ctx, LOOM_ERR_FORMAT, "%s: every one of the %lld images is bad (skip_bad)", src->name,
                     (long long)src->n);
}

static void if_free(if_impl *m) {
    if (!m) return;
    for (int k = 0; k < m->nclasses; k++) free(m->classes[k]);
    free(m->classes);
    free(m->labels);
    free((void *)m->bad);
    free(m->root);
    free(m);
}

static void if_destroy(loom_source *src) {
    if_impl *m = src->impl;
    /* paths are not freed one by one: they live in the list built by open */
    free(m->paths ? m->paths[0] : NULL);
    free(m->paths);
    if_free(m);
    free(src);
}

/* A growing list of strings. */
typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist;

static bool sl_push(strlist *l, const char *s) {
    if (l->n == l->cap) {
        size_t c = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, c * sizeof *v);
        if (!v) return false;
        l->v = v, l->cap = c;
    }
    char *d = strdup(s);
    if (!d) return false;
    l->v[l->n++] = d;
    return true;
}

static void sl_free(strlist *l) {
    for (size_t k = 0; k < l->n; k++) free(l->v[k]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool has_ext(const char *name, const char *const *exts) {
    const char *dot = strrchr(name, '.');
    if (!dot) return false;
    for (; *exts; exts++)
        if (!strcasecmp(dot + 1, *exts)) return true;
    return false;
}

static const char *const img_exts[] = {"jpg", "jpeg", "png", "bmp", "gif", "webp", "tif", "tiff", "ppm", "pgm", NULL};

/* The walk's state: every directory entered so far, by (device, inode), so
 * that a symlink back to a parent (or to '.') or a second link to a folder
 * is refused instead of listing its images again and again. */
typedef struct walk_state {
    struct seen_dir {
        dev_t dev;
        ino_t ino;
        char *path;
    } *seen;
    size_t nseen, cap;
    int64_t not_regular;
} walk_state;

static void ws_free(walk_state *ws) {
    for (size_t k = 0; k < ws->nseen; k++) free(ws->seen[k].path);
    free(ws->seen);
}

/* Record dir as entered; an error if it was entered before. */
static loom_status ws_enter(loom_ctx *ctx, walk_state *ws, const char *dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0) return loom__err(ctx, LOOM_ERR_IO, "ImageFolder: %s: %s", dir, strerror(errno));
    for (size_t k = 0; k < ws->nseen; k++)
        if (ws->seen[k].dev == sb.st_dev && ws->seen[k].ino == sb.st_ino)
            return loom__err(ctx, LOOM_ERR_FORMAT,
                             "ImageFolder: %s is the directory %s again (a symlink loop or a second link to one "
                             "folder): refused",
                             dir, ws->seen[k].path);
    if (ws->nseen == ws->cap) {
        size_t c = ws->cap ? 2 * ws->cap : 64;
        struct seen_dir *v = realloc(ws->seen, c * sizeof *v);
        if (!v) return loom__err(ctx, LOOM_ERR_OOM, "ImageFolder: out of memory listing %s", dir);
        ws->seen = v, ws->cap = c;
    }
    char *p = strdup(dir);
    if (!p) return loom__err(ctx, LOOM_ERR_OOM, "ImageFolder: out of memory listing %s", dir);
    ws->seen[ws->nseen++] = (struct seen_dir){sb.st_dev, sb.st_ino, p};
    return LOOM_OK;
}

/* Sorted entries of dir (no '.' names): subfolders into dirs, regular files
 * into files. An entry with an image's extension that is neither (a FIFO,
 * socket, device node, dangling symlink) is left out and counted. */
static loom_status list_dir(loom_ctx *ctx, walk_state *ws, const char *dir, strlist *dirs, strlist *files) {
    DIR *d = opendir(dir);
    if (!d) return loom__err(ctx, LOOM_ERR_IO, "ImageFolder: cannot open directory %s: %s", dir, strerror(errno));
    struct dirent *e;
    char p[4096];
    bool ok = true;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue; /* too long: not listed */
        struct stat sb;
        bool found = stat(p, &sb) == 0;
        if (found && S_ISDIR(sb.st_mode)) ok = sl_push(dirs, e->d_name);
        else if (!files) continue;
        else if (found && S_ISREG(sb.st_mode)) ok = sl_push(files, e->d_name);
        else if (has_ext(e->d_name, img_exts)) ws->not_regular++;
    }
    closedir(d);
    if (!ok) return loom__err(ctx, LOOM_ERR_OOM, "ImageFolder: out of memory listing %s", dir);
    if (dirs->n > 1) qsort(dirs->v, dirs->n, sizeof *dirs->v, cmp_str);
    if (files && files->n > 1) qsort(files->v, files->n, sizeof *files->v, cmp_str);
    return LOOM_OK;
}

/* The image files under dir (its own sorted, then each subfolder's), into out. */
static loom_status walk(loom_ctx *ctx, walk_state *ws, const char *dir, int depth, strlist *out) {
    loom_status st = ws_enter(ctx, ws, dir);
    if (st != LOOM_OK) return st;
    strlist dirs = {0}, files = {0};
    st = list_dir(ctx, ws, dir, &dirs, &files);
    char p[4096];
    for (size_t k = 0; st == LOOM_OK && k < files.n; k++) {
        if (!has_ext(files.v[k], img_exts)) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, files.v[k]) >= (int)sizeof p)
            st = loom__err(ctx, LOOM_ERR_IO, "ImageFolder: path too long: %s/%s", dir, files.v[k]);
        else if (!sl_push(out, p))
            st = loom__err(ctx, LOOM_ERR_OOM, "ImageFolder: out of memory listing %s", dir);
    }
    for (size_t k = 0; st == LOOM_OK && k < dirs.n && depth < MAX_DEPTH; k++) {
        if (snprintf(p, sizeof p, "%s/%s", dir, dirs.v[k]) >= (int)sizeof p)
            st = loom__err(ctx, LOOM_ERR_IO, "ImageFolder: path too long: %s/%s", dir, dirs.v[k]);
        else
            st = walk(ctx, ws, p, depth + 1, out);
    }
    sl_free(&dirs), sl_free(&files);
    return st;
}

loom_status loom_source_open_imagefolder(loom_ctx *ctx, const loom_imagefolder_desc *desc, loom_source **out) {
    *out = NULL;
    if (!desc || !desc->root || !desc->root[0])
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "ImageFolder: a root directory is required");
    const char *root = desc->root;
    struct stat sb;
    if (stat(root, &sb) != 0) return loom__err(ctx, LOOM_ERR_IO, "ImageFolder: %s: %s", root, strerror(errno));
    if (!S_ISDIR(sb.st_mode)) return loom__err(ctx, LOOM_ERR_IO, "ImageFolder: %s is not a directory", root);
    strlist classes = {0}, files = {0};
    int32_t *labels = NULL;
    size_t lcap = 0;
    if_impl *m = NULL;
    loom_source *s = NULL;
    walk_state ws = {0};
    loom_status st = ws_enter(ctx, &ws, root);
    if (st == LOOM_OK) st = list_dir(ctx, &ws, root, &classes, NULL);
    if (st == LOOM_OK && classes.n == 0)
        st = loom__err(ctx, LOOM_ERR_FORMAT, "ImageFolder: %s has no class folders (expected root/<class>/<image>)", root);
    if (st == LOOM_OK && classes.n > INT32_MAX / 2)
        st = loom__err(ctx, LOOM_ERR_FORMAT, "ImageFolder: %s: %zu class folders", root, classes.n);
    char p[4096];
    for (size_t k = 0; st == LOOM_OK && k < classes.n; k++) {
        size_t before = files.n;
        if (snprintf(p, sizeof p, "%s/%s", root, classes.v[k]) >= (int)sizeof p) {
            st = loom__err(ctx, LOOM_ERR_IO, "ImageFolder: path too long: %s/%s", root, classes.v[k]);
            break;
        }
        if ((st = walk(ctx, &ws, p, 0, &files)) != LOOM_OK) break;
        if (files.n == before) {
            st = loom__err(ctx, LOOM_ERR_FORMAT, "ImageFolder: class folder %s has no image (.jpg, .jpeg, .png, .bmp)", p);
            break;
        }
        if (files.n > lcap) {
            lcap = files.cap;
            int32_t *l = realloc(labels, lcap * sizeof *l);
            if (!l) {
                st = loom__err(ctx, LOOM_ERR_OOM, "ImageFolder: out of memory");
                break;
            }
            labels = l;
        }
        for (size_t j = before; j < files.n; j++) labels[j] = (int32_t)k;
    }
    if (st != LOOM_OK) goto fail;
    /* the paths into one block: paths[0] owns it */
    size_t total = 0;
    for (size_t k = 0; k < files.n; k++) total += strlen(files.v[k]) + 1;
    m = calloc(1, sizeof *m);
    s = calloc(1, sizeof *s);
    char *block = malloc(total);
    if (m) {
        m->paths = calloc(files.n, sizeof *m->paths);
        m->root = strdup(root);
        m->bad = calloc(files.n, 1);
    }
    if (!m || !s || !block || !m->paths || !m->root || !m->bad) {
        free(block);
        if (m) free(m->paths);
        st = loom__err(ctx, LOOM_ERR_OOM, "ImageFolder: out of memory");
        goto fail;
    }
    for (size_t k = 0, at = 0; k < files.n; k++) {
        size_t l = strlen(files.v[k]) + 1;
        memcpy(block + at, files.v[k], l);
        m->paths[k] = block + at;
        at += l;
    }
    m->classes = classes.v, m->nclasses = (int)classes.n;
    classes.v = NULL, classes.n = 0;
    m->labels = labels;
    labels = NULL;
    m->skip_bad = desc->skip_bad;
    m->max_pixels = desc->max_pixels;
    m->not_regular = ws.not_regular;
    atomic_init(&m->skipped, 0);
    *s = (loom_source){.name = m->root, .n = (int64_t)files.n, .kind = LOOM_SAMPLE_U8, .c = 3, .h = 0, .w = 0,
                       .num_classes = m->nclasses, .get = NULL, .destroy = if_destroy, .impl = m, .get_image = if_get};
    sl_free(&files);
    ws_free(&ws);
    *out = s;
    return LOOM_OK;
fail:
    ws_free(&ws);
    if_free(m);
    free(s);
    sl_free(&classes), sl_free(&files);
    free(labels);
    return st;
}

static const if_impl *impl_of(const loom_source *src) {
    return src && src->destroy == if_destroy ? src->impl : NULL;
}

const char *loom_imagefolder_class(const loom_source *src, int k) {
    const if_impl *m = impl_of(src);
    return m && k >= 0 && k < m->nclasses ? m->classes[k] : NULL;
}

const char *loom_imagefolder_path(const loom_source *src, int64_t i) {
    const if_impl *m = impl_of(src);
    return m && i >= 0 && i < src->n ? m->paths[i] : NULL;
}

int64_t loom_imagefolder_skipped(const loom_source *src) {
    if_impl *m = (if_impl *)impl_of(src);
    return m ? atomic_load(&m->skipped) : 0;
}

int64_t loom_imagefolder_not_regular(const loom_source *src) {
    const if_impl *m = impl_of(src);
    return m ? m->not_regular : 0;
}
