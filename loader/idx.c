/* loader/idx.c — IDX files (the MNIST family), gzip-compressed or plain,
 * read through zlib, with full validation. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../core/impl.h"
#include "loom/data.h"

typedef struct idx {
    int ndim;
    int64_t dims[4];
    uint8_t *data;
    int64_t count;
} idx;

/* Read exactly n bytes; *got says how many were available. */
static int read_full(gzFile f, void *buf, size_t n, size_t *got) {
    size_t at = 0;
    while (at < n) {
        unsigned chunk = n - at > (1u << 30) ? (1u << 30) : (unsigned)(n - at);
        int r = gzread(f, (char *)buf + at, chunk);
        if (r < 0) return -1;
        if (r == 0) break;
        at += (size_t)r;
    }
    *got = at;
    return 0;
}

/* zlib's message without the "path: " prefix it adds. */
static const char *gz_reason(gzFile f, const char *path) {
    int errnum = 0;
    const char *m = gzerror(f, &errnum);
    size_t n = strlen(path);
    if (!strncmp(m, path, n) && m[n] == ':' && m[n + 1] == ' ') m += n + 2;
    return m;
}

static loom_status read_idx(loom_ctx *ctx, const char *path, int min_dims, int max_dims, idx *out) {
    /* probe first: a clear message for a missing file, and no blocking on
     * (or reading from) a directory, FIFO or device */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    bool regular = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
    close(fd);
    if (!regular) return loom__err(ctx, LOOM_ERR_IO, "%s: not a regular file", path);
    gzFile f = gzopen(path, "rb");
    if (!f) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    loom_status st = LOOM_OK;
    uint8_t head[4];
    size_t got = 0;
    if (read_full(f, head, 4, &got) != 0) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: read error (corrupt gzip stream?): %s", path, gz_reason(f, path));
        goto done;
    }
    if (got < 4) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated: %zu bytes, an IDX header needs at least 4", path, got);
        goto done;
    }
    if (head[0] != 0 || head[1] != 0) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: not an IDX file (magic %02x %02x %02x %02x, expected 00 00 <type> <ndim>)",
                       path, head[0], head[1], head[2], head[3]);
        goto done;
    }
    if (head[2] != 0x08) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: IDX element type 0x%02x is not supported (only 0x08, unsigned byte)",
                       path, head[2]);
        goto done;
    }
    int nd = head[3];
    if (nd < min_dims || nd > max_dims) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: %d dimensions, expected %d..%d", path, nd, min_dims, max_dims);
        goto done;
    }
    uint8_t db[16];
    if (read_full(f, db, (size_t)nd * 4, &got) != 0 || got < (size_t)nd * 4) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated in the dimension list", path);
        goto done;
    }
    int64_t total = 1;
    for (int i = 0; i < nd; i++) {
        uint32_t d = (uint32_t)db[4 * i] << 24 | (uint32_t)db[4 * i + 1] << 16 | (uint32_t)db[4 * i + 2] << 8 | db[4 * i + 3];
        if (d == 0 || d > (1u << 28)) {
            st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: dimension %d is %u (expected 1..2^28)", path, i, d);
            goto done;
        }
        out->dims[i] = d;
        /* checked before multiplying: 2^36 * 2^28 would overflow int64 */
        if (total > ((int64_t)1 << 36) / d) {
            st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: the dimensions describe more than 2^36 elements, more than loom reads from one IDX file",
                           path);
            goto done;
        }
        total *= d;
    }
    out->ndim = nd;
    out->count = total;
    /* The buffer grows as data arrives (64 MiB, then doubling), so a small
     * corrupt file that claims a huge size fails as truncated without first
     * allocating that size. */
    size_t cap = total < ((int64_t)64 << 20) ? (size_t)total : (size_t)64 << 20, have = 0;
    out->data = malloc(cap);
    bool rerr = false;
    while (out->data) {
        if (read_full(f, out->data + have, cap - have, &got) != 0) {
            rerr = true;
            break;
        }
        have += got;
        if (have < cap || have == (size_t)total) break;
        size_t ncap = cap * 2 < (size_t)total ? cap * 2 : (size_t)total;
        uint8_t *grown = realloc(out->data, ncap);
        if (!grown) {
            free(out->data);
            out->data = NULL;
            break;
        }
        out->data = grown, cap = ncap;
    }
    if (!out->data) {
        st = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for %lld bytes", path, (long long)total);
        goto done;
    }
    got = have;
    if (rerr) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: read error (corrupt gzip stream?): %s", path, gz_reason(f, path));
    } else if ((int64_t)got < total) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated: %zu of %lld data bytes present%s", path, got, (long long)total,
                       gzdirect(f) ? "" : " (the gzip stream ends early)");
    } else {
        uint8_t extra;
        if (read_full(f, &extra, 1, &got) != 0)
            st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: read error after the data (corrupt gzip stream?): %s", path,
                           gz_reason(f, path));
        else if (got)
            st = loom__err(ctx, LOOM_ERR_FORMAT, "%s: trailing bytes after %lld data bytes", path, (long long)total);
    }
    if (st != LOOM_OK) {
        free(out->data);
        out->data = NULL;
    }
done:
    gzclose(f);
    return st;
}

loom_status loom_dataset_load_idx(loom_ctx *ctx, const char *images_path, const char *labels_path, loom_dataset *out) {
    idx im = {0}, lb = {0};
    loom_status st = read_idx(ctx, images_path, 3, 4, &im);
    if (st != LOOM_OK) return st;
    if ((st = read_idx(ctx, labels_path, 1, 1, &lb)) != LOOM_OK) {
        free(im.data);
        return st;
    }
    if (im.dims[0] != lb.dims[0]) {
        st = loom__err(ctx, LOOM_ERR_FORMAT, "%s has %lld images but %s has %lld labels", images_path,
                       (long long)im.dims[0], labels_path, (long long)lb.dims[0]);
        goto fail;
    }
    loom_dataset d = {0};
    d.n = im.dims[0];
    d.c = im.ndim == 4 ? (int)im.dims[1] : 1;
    d.h = (int)im.dims[im.ndim - 2];
    d.w = (int)im.dims[im.ndim - 1];
    d.pixels = im.data;
    d.labels = malloc((size_t)d.n * sizeof *d.labels);
    if (!d.labels) {
        st = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", labels_path);
        goto fail;
    }
    for (int64_t i = 0; i < d.n; i++) {
        d.labels[i] = lb.data[i];
        if (d.labels[i] + 1 > d.num_classes) d.num_classes = d.labels[i] + 1;
    }
    free(lb.data);
    *out = d;
    return LOOM_OK;
fail:
    free(im.data);
    free(lb.data);
    return st;
}

loom_status loom_dataset_load_mnist(loom_ctx *ctx, const char *dir, bool train, loom_dataset *out) {
    if (!dir) dir = "/usr/share/datasets/fashion-mnist";
    const char *pre = train ? "train" : "t10k";
    char im[4096], lb[4096];
    snprintf(im, sizeof im, "%s/%s-images-idx3-ubyte.gz", dir, pre);
    snprintf(lb, sizeof lb, "%s/%s-labels-idx1-ubyte.gz", dir, pre);
    FILE *f = fopen(im, "rb");
    if (f) {
        fclose(f);
    } else {
        snprintf(im, sizeof im, "%s/%s-images-idx3-ubyte", dir, pre);
        f = fopen(im, "rb");
        if (!f)
            return loom__err(ctx, LOOM_ERR_IO, "%s: no %s-images-idx3-ubyte(.gz) here (Fashion-MNIST on Debian: apt-get install dataset-fashion-mnist)",
                             dir, pre);
        fclose(f);
    }
    f = fopen(lb, "rb");
    if (f)
        fclose(f);
    else
        snprintf(lb, sizeof lb, "%s/%s-labels-idx1-ubyte", dir, pre);
    return loom_dataset_load_idx(ctx, im, lb, out);
}

void loom_dataset_free(loom_dataset *ds) {
    if (!ds) return;
    free(ds->pixels);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}
