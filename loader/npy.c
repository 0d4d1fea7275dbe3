/* loader/npy.c — numpy .npy arrays: a strict reader (formats 1.0-3.0, C
 * order, little-endian u1/i4/i8/f2/f4/f8) and a writer that produces what
 * np.save produces.
 *
 * The file: "\x93NUMPY", major, minor (0), the header length (u16 LE for
 * 1.0, u32 LE for 2.0 / 3.0), the header — a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with
 * spaces and ended by '\n' — then exactly count * element-size data bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/impl.h"
#include "../core/outfile.h"
#include "loom/npy.h"

static const struct {
    const char *code;
    size_t size;
} dtypes[] = {
#define LOOM__X(n, s, b) {s, b},
    LOOM_NPY_DTYPE_LIST(LOOM__X)
#undef LOOM__X
};

const char *loom_npy_dtype_name(loom_npy_dtype dt) {
    return (unsigned)dt < LOOM_NPY_DTYPE_COUNT ? dtypes[dt].code : "?";
}

size_t loom_npy_dtype_size(loom_npy_dtype dt) { return (unsigned)dt < LOOM_NPY_DTYPE_COUNT ? dtypes[dt].size : 0; }

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
/* Headers longer than this are refused rather than parsed (numpy's own
 * reader refuses anything over 10000 bytes by default). */
#define MAX_HEADER ((size_t)1 << 20)
/* Arrays past 2^48 bytes cannot be real files; checked before multiplying. */
#define MAX_BYTES ((int64_t)1 << 48)

/* ---- the header dict ---------------------------------------------------- */

typedef struct hparse {
    const char *p, *end;
    loom_ctx *ctx;
    const char *name;
} hparse;

static void skip_ws(hparse *h) {
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static bool eat(hparse *h, char c) {
    skip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

/* What the parser found at the current position, for messages. */
static const char *here(hparse *h, char *buf, size_t n) {
    if (h->p >= h->end) return "the end of the header";
    size_t k = 0;
    buf[k++] = '\'';
    for (const char *q = h->p; q < h->end && k + 5 < n && *q != '\n'; q++)
        buf[k++] = (*q >= 0x20 && *q < 0x7f) ? *q : '?';
    buf[k++] = '\'';
    buf[k] = 0;
    return buf;
}

static loom_status bad(hparse *h, const char *what) {
    char b[32];
    return loom__err(h->ctx, LOOM_ERR_FORMAT, "%s: malformed .npy header: expected %s at %s", h->name, what,
                     here(h, b, sizeof b));
}

/* A quoted string of printable ASCII without escapes ('...' or "..."). */
static loom_status parse_str(hparse *h, char *out, size_t cap, const char *what) {
    skip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return bad(h, what);
    char q = *h->p++;
    size_t k = 0;
    while (h->p < h->end && *h->p != q) {
        unsigned char c = (unsigned char)*h->p;
        if (c < 0x20 || c >= 0x7f || c == '\\' || k + 1 >= cap) return bad(h, what);
        out[k++] = (char)c;
        h->p++;
    }
    if (h->p >= h->end) return bad(h, "a closing quote");
    h->p++;
    out[k] = 0;
    return LOOM_OK;
}

/* A non-negative decimal integer (Python 2's "3L" suffix accepted). */
static loom_status parse_dim(hparse *h, int64_t *v) {
    skip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return bad(h, "a dimension (a non-negative integer)");
    int64_t x = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        if (x > (MAX_BYTES - 9) / 10)
            return loom__err(h->ctx, LOOM_ERR_FORMAT, "%s: .npy shape has a dimension too large to be real", h->name);
        x = x * 10 + (*h->p++ - '0');
    }
    if (h->p < h->end && *h->p == 'L') h->p++;
    *v = x;
    return LOOM_OK;
}

/* (), (3,), (3, 4), (3, 4,) — a Python tuple; "(3)" is an int, refused. */
static loom_status parse_shape(hparse *h, int *ndim, int64_t *shape) {
    if (!eat(h, '(')) return bad(h, "a shape tuple '('");
    int n = 0;
    if (eat(h, ')')) {
        *ndim = 0;
        return LOOM_OK;
    }
    for (;;) {
        int64_t d = 0;
        loom_status st = parse_dim(h, &d);
        if (st != LOOM_OK) return st;
        if (n == LOOM_NPY_MAX_DIMS)
            return loom__err(h->ctx, LOOM_ERR_UNSUPPORTED, "%s: .npy shape has more than %d dimensions", h->name,
                             LOOM_NPY_MAX_DIMS);
        shape[n++] = d;
        bool comma = eat(h, ',');
        if (eat(h, ')')) {
            if (n == 1 && !comma) return bad(h, "',' in a 1-element shape tuple ('(3)' is not a tuple)");
            break;
        }
        if (!comma) return bad(h, "',' or ')' in the shape");
    }
    *ndim = n;
    return LOOM_OK;
}

static loom_status parse_descr(hparse *h, const char *s, loom_npy_dtype *dt) {
    size_t len = strlen(s);
    int found = -1;
    for (int i = 0; len == 3 && i < LOOM_NPY_DTYPE_COUNT; i++)
        if (!strcmp(s + 1, dtypes[i].code)) found = i;
    if (found < 0)
        return loom__err(h->ctx, LOOM_ERR_UNSUPPORTED,
                         "%s: .npy dtype '%s' is not supported (expected one of u1 i4 i8 f2 f4 f8, little-endian: "
                         "'<f4', '|u1', ...)",
                         h->name, s);
    if (s[0] == '>' && dtypes[found].size > 1)
        return loom__err(h->ctx, LOOM_ERR_UNSUPPORTED,
                         "%s: .npy dtype '%s' is big-endian; only little-endian is supported (convert with "
                         "a.astype('<%s'))",
                         h->name, s, s + 1);
    bool ok = s[0] == '<' || (dtypes[found].size == 1 && (s[0] == '|' || s[0] == '>'));
    if (!ok)
        return loom__err(h->ctx, LOOM_ERR_UNSUPPORTED,
                         "%s: .npy dtype '%s': byte order '%c' is not supported (expected '<'%s)", h->name, s, s[0],
                         dtypes[found].size == 1 ? " or '|'" : "; '|' is for 1-byte types");
    *dt = (loom_npy_dtype)found;
    return LOOM_OK;
}

static loom_status parse_header(loom_ctx *ctx, const char *name, const char *hdr, size_t len, loom_npy *a) {
    hparse h = {hdr, hdr + len, ctx, name};
    if (len == 0 || hdr[len - 1] != '\n')
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: malformed .npy header: it does not end with a newline", name);
    if (!eat(&h, '{')) return bad(&h, "'{'");
    bool seen[3] = {0};
    bool fortran = false;
    char descr[16];
    for (;;) {
        if (eat(&h, '}')) break;
        char key[32];
        loom_status st = parse_str(&h, key, sizeof key, "a quoted key");
        if (st != LOOM_OK) return st;
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0)
            return loom__err(ctx, LOOM_ERR_FORMAT,
                             "%s: malformed .npy header: unexpected key '%s' (expected exactly 'descr', "
                             "'fortran_order', 'shape')",
                             name, key);
        if (seen[k]) return loom__err(ctx, LOOM_ERR_FORMAT, "%s: malformed .npy header: key '%s' repeated", name, key);
        seen[k] = true;
        if (!eat(&h, ':')) return bad(&h, "':'");
        if (k == 0) {
            skip_ws(&h);
            if (h.p < h.end && (*h.p == '[' || *h.p == '{'))
                return loom__err(ctx, LOOM_ERR_UNSUPPORTED,
                                 "%s: .npy descr is a structured dtype; only plain u1 i4 i8 f2 f4 f8 arrays are "
                                 "supported",
                                 name);
            if ((st = parse_str(&h, descr, sizeof descr, "a quoted dtype string")) != LOOM_OK) return st;
        } else if (k == 1) {
            skip_ws(&h);
            if ((size_t)(h.end - h.p) >= 4 && !memcmp(h.p, "True", 4)) {
                fortran = true, h.p += 4;
            } else if ((size_t)(h.end - h.p) >= 5 && !memcmp(h.p, "False", 5)) {
                fortran = false, h.p += 5;
            } else {
                return bad(&h, "True or False for 'fortran_order'");
            }
        } else {
            if ((st = parse_shape(&h, &a->ndim, a->shape)) != LOOM_OK) return st;
        }
        if (eat(&h, '}')) break;
        if (!eat(&h, ',')) return bad(&h, "',' or '}'");
    }
    skip_ws(&h);
    if (h.p != h.end) return bad(&h, "only spaces after the header dict");
    static const char *keys[3] = {"descr", "fortran_order", "shape"};
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: malformed .npy header: key '%s' is missing", name, keys[k]);
    loom_status st = parse_descr(&h, descr, &a->dtype);
    if (st != LOOM_OK) return st;
    int64_t count = 1;
    for (int i = 0; i < a->ndim; i++) {
        if (a->shape[i] && count > MAX_BYTES / a->shape[i])
            return loom__err(ctx, LOOM_ERR_FORMAT, "%s: .npy shape describes more than 2^48 elements", name);
        count *= a->shape[i];
    }
    if (count > MAX_BYTES / 8)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: .npy shape describes more than 2^45 elements", name);
    if (fortran && a->ndim > 1) {
        /* 0-d and 1-d arrays are laid out the same in both orders */
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED,
                         "%s: .npy array is in Fortran order; only C order is supported (save "
                         "np.ascontiguousarray(a))",
                         name);
    }
    a->count = count;
    a->bytes = (size_t)count * dtypes[a->dtype].size;
    return LOOM_OK;
}

/* ---- reading ------------------------------------------------------------ */

static uint32_t le32(const uint8_t *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

loom_status loom_npy_parse(loom_ctx *ctx, const char *name, const void *buf, size_t size, loom_npy *out) {
    const uint8_t *b = buf;
    if (!name) name = "(memory)";
    if (size < MAGIC_LEN + 2 || memcmp(b, MAGIC, MAGIC_LEN))
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: not a .npy file (it does not start with \"\\x93NUMPY\")", name);
    int major = b[6], minor = b[7];
    if (major < 1 || major > 3 || minor != 0)
        return loom__err(ctx, LOOM_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0)",
                         name, major, minor);
    size_t pre = major == 1 ? 10 : 12;
    if (size < pre)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated: %zu bytes, a .npy %d.0 preamble needs %zu", name, size,
                         major, pre);
    size_t hlen = major == 1 ? (size_t)(b[8] | b[9] << 8) : (size_t)le32(b + 8);
    if (hlen > MAX_HEADER)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: .npy header length %zu is over the %zu bytes loom accepts", name,
                         hlen, MAX_HEADER);
    if (hlen > size - pre)
        return loom__err(ctx, LOOM_ERR_FORMAT,
                         "%s: truncated: the .npy header length is %zu bytes but only %zu follow the preamble", name,
                         hlen, size - pre);
    loom_npy a = {0};
    a.version = major;
    loom_status st = parse_header(ctx, name, (const char *)b + pre, hlen, &a);
    if (st != LOOM_OK) return st;
    size_t have = size - pre - hlen;
    if (have < a.bytes)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: truncated: %zu of %zu data bytes present (%s, %lld elements)", name,
                         have, a.bytes, dtypes[a.dtype].code, (long long)a.count);
    if (have > a.bytes)
        return loom__err(ctx, LOOM_ERR_FORMAT, "%s: %zu trailing bytes after %zu data bytes", name, have - a.bytes,
                         a.bytes);
    if (a.bytes) {
        if (!(a.data = malloc(a.bytes)))
            return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for %zu bytes", name, a.bytes);
        memcpy(a.data, b + pre + hlen, a.bytes);
    }
    *out = a;
    return LOOM_OK;
}

loom_status loom_npy_read(loom_ctx *ctx, const char *path, loom_npy *out) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_IO, "%s: not a regular file", path);
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for %zu bytes", path, size);
    }
    size_t at = 0;
    while (at < size) {
        ssize_t r = read(fd, buf + at, size - at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        at += (size_t)r;
    }
    int rerr = errno;
    close(fd);
    loom_status st;
    if (at < size)
        st = loom__err(ctx, LOOM_ERR_IO, "%s: read %zu of %zu bytes: %s", path, at, size, strerror(rerr));
    else
        st = loom_npy_parse(ctx, path, buf, size, out);
    free(buf);
    return st;
}

void loom_npy_free(loom_npy *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- writing ------------------------------------------------------------ */

loom_status loom_npy_write(loom_ctx *ctx, const char *path, loom_npy_dtype dt, int ndim, const int64_t *shape,
                           const void *data) {
    if ((unsigned)dt >= LOOM_NPY_DTYPE_COUNT)
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: npy write: dtype %d is not one of u1 i4 i8 f2 f4 f8", path,
                         (int)dt);
    if (ndim < 0 || ndim > LOOM_NPY_MAX_DIMS || (ndim && !shape))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: npy write: %d dimensions (expected 0..%d)", path, ndim,
                         LOOM_NPY_MAX_DIMS);
    /* the header as np.save writes it (numpy >= 1.23): the dict, spaces so
     * the first dimension can grow to 21 digits in place, padding to 64 */
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                     dtypes[dt].size == 1 ? '|' : '<', dtypes[dt].code);
    int64_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] && count > MAX_BYTES / 8 / shape[i]))
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: npy write: bad dimension %d = %lld", path, i,
                             (long long)shape[i]);
        count *= shape[i];
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, i ? ", %lld" : "%lld", (long long)shape[i]);
    }
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%s), }", ndim == 1 ? "," : "");
    if (ndim > 0) {
        char first[24];
        int fl = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
        for (int i = fl; i < 21; i++) hdr[n++] = ' ';
    }
    size_t bytes = (size_t)count * dtypes[dt].size;
    if (bytes && !data) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: npy write: data is NULL", path);
    size_t hl = (size_t)n + 1; /* + '\n' */
    size_t pad = 64 - (MAGIC_LEN + 4 + hl) % 64;
    uint8_t pre[10];
    memcpy(pre, MAGIC, MAGIC_LEN);
    pre[6] = 1, pre[7] = 0;
    pre[8] = (uint8_t)((hl + pad) & 0xff), pre[9] = (uint8_t)((hl + pad) >> 8);
    memset(hdr + n, ' ', pad);
    hdr[n + pad] = '\n';
    size_t total_hdr = hl + pad;

    loom__outfile *f;
    loom_status st = loom__outfile_open(ctx, path, &f);
    if (st == LOOM_OK) st = loom__outfile_write(f, pre, 10);
    if (st == LOOM_OK) st = loom__outfile_write(f, hdr, total_hdr);
    if (st == LOOM_OK) st = loom__outfile_write(f, data, bytes);
    if (st == LOOM_OK) return loom__outfile_commit(f);
    loom__outfile_abort(f);
    return st;
}
