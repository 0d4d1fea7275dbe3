/* core/safetensors.c — the safetensors format: an atomic writer, and a reader
 * that validates everything before handing out a tensor.
 *
 * The header's JSON is read by a small strict parser written for this
 * schema: an object of tensor entries {"dtype","shape","data_offsets"} and an
 * optional "__metadata__" object of strings. Strings are full RFC 8259
 * strings (escapes, \u surrogate pairs, UTF-8 checked); numbers in shapes and
 * offsets must be non-negative integers. The parser follows the schema and
 * never recurses, so nesting deeper than the schema's two levels is refused
 * at the first unexpected bracket and cannot exhaust the stack. Every read is
 * bounds-checked against the header length (tests/fuzz/fuzz_safetensors.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "impl.h"

#define LOOM__STR2(x) #x
#define LOOM__STR(x) LOOM__STR2(x)

struct loom_safetensors {
    char *path;
    uint8_t *buf; /* the whole file */
    bool owns;
    loom_st_tensor *t; /* by data offset */
    int n;
    int *by_name;      /* tensor indices sorted by name */
    const char **meta; /* key, value pairs in file order */
    int n_meta;
    int *meta_by_key;  /* pair indices sorted by key */
    char *strings;     /* decoded names, keys and values */
};

/* ---- dtypes ---- */
static const char *const st_names[LOOM_DTYPE_COUNT] = {
    [LOOM_F32] = "F32", [LOOM_F16] = "F16", [LOOM_BF16] = "BF16", [LOOM_F64] = "F64", [LOOM_I32] = "I32", [LOOM_U8] = "U8",
};
/* dtypes of the format that loom has no type for */
static const char *const st_foreign[] = {"BOOL", "I8", "I16", "U16", "U32", "I64", "U64", "F8_E4M3", "F8_E5M2",
                                         "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"};

static int st_dtype(const char *s) {
    for (int i = 0; i < LOOM_DTYPE_COUNT; i++)
        if (strcmp(s, st_names[i]) == 0) return i;
    return -1;
}

static bool st_is_foreign(const char *s) {
    for (size_t i = 0; i < sizeof st_foreign / sizeof *st_foreign; i++)
        if (strcmp(s, st_foreign[i]) == 0) return true;
    return false;
}

/* numel * size in bytes, or -1 if it does not fit in int64. */
static int64_t checked_bytes(int ndim, const int64_t *dims, size_t esize) {
    int64_t total = (int64_t)esize;
    bool zero = false;
    for (int i = 0; i < ndim; i++) zero |= dims[i] == 0;
    if (zero) return 0;
    for (int i = 0; i < ndim; i++) {
        if (dims[i] < 0 || total > INT64_MAX / dims[i]) return -1;
        total *= dims[i];
    }
    return total;
}

size_t loom_st_tensor_nbytes(const loom_st_tensor *t) {
    int64_t b = checked_bytes(t->ndim, t->dims, loom_dtype_size(t->dtype));
    return b < 0 ? 0 : (size_t)b;
}

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
static size_t utf8_len(const uint8_t *s, size_t n) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

static bool utf8_valid(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t l = utf8_len((const uint8_t *)s + i, n - i);
        if (!l) return false;
        i += l;
    }
    return true;
}

/* ==================== writer ==================== */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    bool oom;
} sbuf;

static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = true;
            return;
        }
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

/* s as a JSON string: quotes, backslashes and control characters escaped. */
static void sb_json(sbuf *b, const char *s) {
    sb_put(b, "\"", 1);
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        char esc[8];
        switch (u) {
        case '"': sb_put(b, "\\\"", 2); break;
        case '\\': sb_put(b, "\\\\", 2); break;
        case '\b': sb_put(b, "\\b", 2); break;
        case '\f': sb_put(b, "\\f", 2); break;
        case '\n': sb_put(b, "\\n", 2); break;
        case '\r': sb_put(b, "\\r", 2); break;
        case '\t': sb_put(b, "\\t", 2); break;
        default:
            if (u < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", u);
                sb_put(b, esc, 6);
            } else {
                sb_put(b, c, 1);
            }
        }
    }
    sb_put(b, "\"", 1);
}

static void sb_i64(sbuf *b, int64_t v) {
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    sb_str(b, t);
}

typedef struct name_ix {
    const char *s;
    int i;
} name_ix;

static int cmp_name_ix(const void *a, const void *b) {
    const name_ix *x = a, *y = b;
    int c = strcmp(x->s, y->s);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/* Sort (s, i) pairs by name; returns the index into v of the first of two
 * equal names, or -1. */
static int sort_find_dup(name_ix *v, int n) {
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_name_ix);
    for (int i = 1; i < n; i++)
        if (strcmp(v[i - 1].s, v[i].s) == 0) return i;
    return -1;
}

static bool write_all(int fd, const void *p, size_t n) {
    const char *c = p;
    while (n) {
        size_t chunk = n > ((size_t)1 << 30) ? ((size_t)1 << 30) : n;
        ssize_t w = write(fd, c, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = EIO;
            return false;
        }
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Make the rename durable (best effort: some file systems refuse fsync on a
 * directory, which is not an error of ours). */
static void fsync_dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)fsync(fd);
    close(fd);
}

/* head, then the tensors' data in `order`, to tmp; then rename onto path. */
static loom_status write_atomic(loom_ctx *ctx, const char *path, const char *head, size_t head_len,
                                const loom_st_tensor *t, const int *order, int n) {
    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", path);
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) { /* left by a crashed process with our pid */
        unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    }
    if (fd < 0) {
        loom_status st = loom__err(ctx, LOOM_ERR_IO, "%s: cannot create the temporary file %s: %s", path, tmp,
                                   strerror(errno));
        free(tmp);
        return st;
    }
    const char *what = "write";
    bool ok = write_all(fd, head, head_len);
    for (int k = 0; ok && k < n; k++) {
        const loom_st_tensor *x = &t[order[k]];
        size_t bytes = loom_st_tensor_nbytes(x);
        if (bytes) ok = write_all(fd, x->data, bytes);
    }
    if (ok && fsync(fd) != 0) ok = false, what = "fsync";
    int err = errno;
    if (close(fd) != 0 && ok) ok = false, what = "close", err = errno;
    if (ok && rename(tmp, path) != 0) ok = false, what = "rename", err = errno;
    if (!ok) {
        unlink(tmp);
        loom_status st = loom__err(ctx, LOOM_ERR_IO, "%s: %s of the temporary file %s failed: %s (the previous file, if any, is unchanged)",
                                   path, what, tmp, strerror(err));
        free(tmp);
        return st;
    }
    free(tmp);
    fsync_dir_of(path);
    return LOOM_OK;
}

loom_status loom_safetensors_write(loom_ctx *ctx, const char *path, const loom_st_tensor *tensors, int n,
                                   const char *const *metadata) {
    if (!path || n < 0 || (n > 0 && !tensors))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "safetensors write: path is NULL, n < 0, or tensors is NULL");
    int n_meta = 0;
    if (metadata) {
        while (metadata[2 * n_meta]) {
            const char *k = metadata[2 * n_meta], *v = metadata[2 * n_meta + 1];
            if (!v) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: metadata key \"%s\" has no value (NULL)", path, k);
            if (!utf8_valid(k) || !utf8_valid(v))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: metadata \"%s\" is not valid UTF-8", path, k);
            n_meta++;
        }
    }
    for (int i = 0; i < n; i++) {
        const loom_st_tensor *x = &tensors[i];
        if (!x->name || !x->name[0])
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor %d has no name", path, i);
        if (!utf8_valid(x->name))
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor %d: name is not valid UTF-8", path, i);
        if (strcmp(x->name, "__metadata__") == 0)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: \"__metadata__\" is reserved and cannot name a tensor", path);
        if ((unsigned)x->dtype >= LOOM_DTYPE_COUNT)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor '%s': dtype %d is not a loom dtype", path, x->name,
                             (int)x->dtype);
        if (x->ndim < 0 || x->ndim > LOOM_MAX_DIMS)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor '%s': %d dimensions (expected 0..%d)", path, x->name,
                             x->ndim, LOOM_MAX_DIMS);
        char sh[128];
        for (int d = 0; d < x->ndim; d++)
            if (x->dims[d] < 0)
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor '%s': negative dimension in %s", path, x->name,
                                 loom__shape_str(x->ndim, x->dims, sh, sizeof sh));
        int64_t bytes = checked_bytes(x->ndim, x->dims, loom_dtype_size(x->dtype));
        if (bytes < 0)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor '%s': shape %s is too large", path, x->name,
                             loom__shape_str(x->ndim, x->dims, sh, sizeof sh));
        if (bytes > 0 && !x->data)
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor '%s': data is NULL", path, x->name);
    }
    int nk = n > n_meta ? n : n_meta;
    name_ix *v = malloc((size_t)(nk ? nk : 1) * sizeof *v);
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    if (!v || !order) {
        free(v), free(order);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", path);
    }
    for (int i = 0; i < n; i++) v[i] = (name_ix){tensors[i].name, i};
    int dup = sort_find_dup(v, n);
    if (dup >= 0) {
        loom_status st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor name '%s' is used twice (tensors %d and %d)",
                                   path, v[dup].s, v[dup - 1].i, v[dup].i);
        free(v), free(order);
        return st;
    }
    for (int i = 0; i < n_meta; i++) v[i] = (name_ix){metadata[2 * i], i};
    dup = sort_find_dup(v, n_meta);
    if (dup >= 0) {
        loom_status st = loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: metadata key \"%s\" is given twice", path, v[dup].s);
        free(v), free(order);
        return st;
    }
    free(v);

    /* data order: largest element size first (stable), so every tensor starts
     * at a multiple of its element size */
    int k = 0;
    for (size_t es = 8; es >= 1; es /= 2)
        for (int i = 0; i < n; i++)
            if (loom_dtype_size(tensors[i].dtype) == es) order[k++] = i;
    LOOM__ASSERT(k == n);

    sbuf h = {0};
    sb_str(&h, "        {"); /* 8 bytes reserved for the length */
    int64_t off = 0;
    for (int j = 0; j < n; j++) {
        const loom_st_tensor *x = &tensors[order[j]];
        int64_t bytes = (int64_t)loom_st_tensor_nbytes(x);
        if (j) sb_str(&h, ",");
        sb_json(&h, x->name);
        sb_str(&h, ":{\"dtype\":\"");
        sb_str(&h, st_names[x->dtype]);
        sb_str(&h, "\",\"shape\":[");
        for (int d = 0; d < x->ndim; d++) {
            if (d) sb_str(&h, ",");
            sb_i64(&h, x->dims[d]);
        }
        sb_str(&h, "],\"data_offsets\":[");
        sb_i64(&h, off);
        sb_str(&h, ",");
        if (bytes > INT64_MAX - off) h.oom = true;
        off += bytes;
        sb_i64(&h, off);
        sb_str(&h, "]}");
    }
    if (n_meta) {
        if (n) sb_str(&h, ",");
        sb_str(&h, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) sb_str(&h, ",");
            sb_json(&h, metadata[2 * i]);
            sb_str(&h, ":");
            sb_json(&h, metadata[2 * i + 1]);
        }
        sb_str(&h, "}");
    }
    sb_str(&h, "}");
    while (h.len % 8) sb_str(&h, " ");
    if (h.oom) {
        free(h.p), free(order);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory building the header", path);
    }
    uint64_t hl = (uint64_t)(h.len - 8);
    if (hl > LOOM_SAFETENSORS_MAX_HEADER) {
        free(h.p), free(order);
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: the header would be %llu bytes, more than the format's limit of %zu",
                         path, (unsigned long long)hl, LOOM_SAFETENSORS_MAX_HEADER);
    }
    for (int i = 0; i < 8; i++) h.p[i] = (char)(uint8_t)(hl >> (8 * i));
    loom_status st = write_atomic(ctx, path, h.p, h.len, tensors, order, n);
    free(h.p), free(order);
    return st;
}

/* ==================== reader ==================== */

typedef struct tentry {
    loom_st_tensor t;
    uint64_t begin, end;
    int index; /* position in the header */
} tentry;

typedef struct parser {
    loom_ctx *ctx;
    const char *name;
    const uint8_t *s; /* the header JSON */
    size_t n, pos;
    char *strings; /* decoded strings (n + 1 bytes suffice) */
    size_t used;
    tentry *t;
    int nt, cap;
    const char **meta;
    int nm, capm;
    bool have_meta;
} parser;

/* A format error naming the file; `at` is a byte offset in the header. */
static loom_status perr(parser *p, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static loom_status perr(parser *p, size_t at, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return loom__err(p->ctx, LOOM_ERR_FORMAT, "%s: safetensors header, byte %zu: %s", p->name, at + 8, msg);
}

static void skip_ws(parser *p) {
    while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static int peek(const parser *p) { return p->pos < p->n ? p->s[p->pos] : -1; }

/* Describe the byte at pos for messages. */
static const char *found(const parser *p, char *buf, size_t n) {
    int c = peek(p);
    if (c < 0) snprintf(buf, n, "the end of the header");
    else if (c >= 0x20 && c < 0x7F) snprintf(buf, n, "'%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

static loom_status expect(parser *p, char c, const char *what) {
    skip_ws(p);
    if (peek(p) == c) {
        p->pos++;
        return LOOM_OK;
    }
    char f[32];
    return perr(p, p->pos, "invalid JSON: expected '%c' %s, found %s", c, what, found(p, f, sizeof f));
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at pos (after "\u"). */
static bool read_hex4(parser *p, uint32_t *out) {
    if (p->n - p->pos < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(p->s[p->pos + i]);
        if (h < 0) return false;
        v = v << 4 | (uint32_t)h;
    }
    p->pos += 4;
    *out = v;
    return true;
}

static void put_utf8(parser *p, uint32_t cp) {
    char *o = p->strings + p->used;
    if (cp < 0x80) {
        o[0] = (char)cp, p->used += 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), p->used += 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)), o[2] = (char)(0x80 | (cp & 0x3F));
        p->used += 3;
    } else {
        o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F)), o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        p->used += 4;
    }
}

/* A JSON string at pos (after whitespace), decoded into p->strings. The
 * decoded text plus its NUL is never longer than the source with its quotes,
 * so the arena (header length + 1) cannot overflow. */
static loom_status parse_string(parser *p, const char *what, const char **out) {
    skip_ws(p);
    if (peek(p) != '"') {
        char f[32];
        return perr(p, p->pos, "invalid JSON: expected a string (%s), found %s", what, found(p, f, sizeof f));
    }
    size_t start = p->pos++;
    char *dst = p->strings + p->used;
    for (;;) {
        if (p->pos >= p->n) return perr(p, start, "invalid JSON: unterminated string (%s)", what);
        uint8_t c = p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return perr(p, p->pos, "invalid JSON: control character 0x%02x inside a string", c);
        if (c != '\\') {
            size_t l = utf8_len(p->s + p->pos, p->n - p->pos);
            if (!l) return perr(p, p->pos, "invalid UTF-8 inside a string (byte 0x%02x)", c);
            memcpy(p->strings + p->used, p->s + p->pos, l);
            p->used += l, p->pos += l;
            continue;
        }
        size_t esc = p->pos++;
        if (p->pos >= p->n) return perr(p, start, "invalid JSON: unterminated string (%s)", what);
        c = p->s[p->pos++];
        uint32_t cp;
        switch (c) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            if (!read_hex4(p, &cp)) return perr(p, esc, "invalid JSON: \\u needs four hex digits");
            if (cp >= 0xDC00 && cp <= 0xDFFF) return perr(p, esc, "invalid JSON: unpaired low surrogate \\u%04X", cp);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                    return perr(p, esc, "invalid JSON: high surrogate \\u%04X without its low half", cp);
                p->pos += 2;
                if (!read_hex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                    return perr(p, esc, "invalid JSON: high surrogate \\u%04X without its low half", cp);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (cp == 0) return perr(p, esc, "a string holds a NUL character (\\u0000), which loom does not accept (%s)", what);
            break;
        default:
            if (c >= 0x20 && c < 0x7F) return perr(p, esc, "invalid JSON: unknown escape '\\%c'", c);
            return perr(p, esc, "invalid JSON: unknown escape (byte 0x%02x after '\\')", c);
        }
        put_utf8(p, cp);
    }
    p->strings[p->used++] = 0;
    *out = dst;
    return LOOM_OK;
}

/* A non-negative JSON integer (no fraction, no exponent) that fits int64. */
static loom_status parse_uint(parser *p, const char *what, int64_t *out) {
    skip_ws(p);
    size_t at = p->pos;
    int c = peek(p);
    if (c == '-') return perr(p, at, "%s is negative", what);
    if (c < '0' || c > '9') {
        char f[32];
        return perr(p, at, "expected a non-negative integer for %s, found %s", what, found(p, f, sizeof f));
    }
    int64_t v = 0;
    if (c == '0') {
        p->pos++;
        c = peek(p);
        if (c >= '0' && c <= '9') return perr(p, at, "invalid JSON: a number has a leading zero (%s)", what);
    } else {
        while ((c = peek(p)) >= '0' && c <= '9') {
            if (v > (INT64_MAX - (c - '0')) / 10) return perr(p, at, "%s is too large", what);
            v = v * 10 + (c - '0');
            p->pos++;
        }
    }
    if (c == '.' || c == 'e' || c == 'E') return perr(p, at, "%s must be an integer", what);
    *out = v;
    return LOOM_OK;
}

/* After an element: ',' (returns true) or the closing bracket (false). */
static loom_status next_or_close(parser *p, char close, const char *what, bool *more) {
    skip_ws(p);
    int c = peek(p);
    if (c == ',' || c == close) {
        p->pos++;
        *more = c == ',';
        return LOOM_OK;
    }
    char f[32];
    return perr(p, p->pos, "invalid JSON: expected ',' or '%c' in %s, found %s", close, what, found(p, f, sizeof f));
}

/* [int, ...] into v (at most max entries, else the error too_many). */
static loom_status parse_int_array(parser *p, const char *tname, const char *field, int max, const char *too_many,
                                   int64_t *v, int *count) {
    char what[128];
    snprintf(what, sizeof what, "the %s of '%s'", field, tname);
    skip_ws(p);
    if (peek(p) != '[') {
        char f[32];
        return perr(p, p->pos, "tensor '%s': %s must be an array of integers, found %s", tname, field, found(p, f, sizeof f));
    }
    p->pos++;
    *count = 0;
    skip_ws(p);
    if (peek(p) == ']') {
        p->pos++;
        return LOOM_OK;
    }
    for (bool more = true; more;) {
        int64_t x = 0;
        loom_status st = parse_uint(p, what, &x);
        if (st != LOOM_OK) return st;
        if (*count == max) return perr(p, p->pos, "tensor '%s': %s", tname, too_many);
        v[(*count)++] = x;
        if ((st = next_or_close(p, ']', what, &more)) != LOOM_OK) return st;
    }
    return LOOM_OK;
}

static loom_status parse_tensor(parser *p, const char *tname) {
    if (p->nt == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        tentry *t = realloc(p->t, (size_t)cap * sizeof *t);
        if (!t) return loom__err(p->ctx, LOOM_ERR_OOM, "%s: out of memory reading the header", p->name);
        p->t = t, p->cap = cap;
    }
    tentry *e = &p->t[p->nt];
    memset(e, 0, sizeof *e);
    e->t.name = tname;
    e->index = p->nt;
    skip_ws(p);
    size_t at = p->pos;
    if (peek(p) != '{') {
        char f[32];
        return perr(p, at, "tensor '%s': expected an object {\"dtype\", \"shape\", \"data_offsets\"}, found %s", tname,
                    found(p, f, sizeof f));
    }
    p->pos++;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    skip_ws(p);
    bool more = peek(p) != '}';
    if (!more) p->pos++;
    while (more) {
        const char *key, *val;
        size_t kat = (skip_ws(p), p->pos);
        loom_status st = parse_string(p, "a field name", &key);
        if (st == LOOM_OK) st = expect(p, ':', "after a field name");
        if (st != LOOM_OK) return st;
        if (strcmp(key, "dtype") == 0) {
            if (has_dtype) return perr(p, kat, "tensor '%s': \"dtype\" given twice", tname);
            has_dtype = true;
            skip_ws(p);
            size_t vat = p->pos;
            if ((st = parse_string(p, "the dtype", &val)) != LOOM_OK) return st;
            int dt = st_dtype(val);
            if (dt < 0) {
                if (st_is_foreign(val))
                    return perr(p, vat, "tensor '%s': dtype \"%s\" is not supported by loom (F32 F16 BF16 F64 I32 U8 are)",
                                tname, val);
                return perr(p, vat, "tensor '%s': unknown dtype \"%.40s\"", tname, val);
            }
            e->t.dtype = (loom_dtype)dt;
        } else if (strcmp(key, "shape") == 0) {
            if (has_shape) return perr(p, kat, "tensor '%s': \"shape\" given twice", tname);
            has_shape = true;
            if ((st = parse_int_array(p, tname, "shape", LOOM_MAX_DIMS,
                                      "shape has more than " LOOM__STR(LOOM_MAX_DIMS) " dimensions (loom's limit)",
                                      e->t.dims, &e->t.ndim)) != LOOM_OK)
                return st;
        } else if (strcmp(key, "data_offsets") == 0) {
            if (has_offsets) return perr(p, kat, "tensor '%s': \"data_offsets\" given twice", tname);
            has_offsets = true;
            skip_ws(p);
            size_t oat = p->pos;
            int64_t o[2];
            int no;
            if ((st = parse_int_array(p, tname, "data_offsets", 2, "data_offsets must be [begin, end]: too many entries",
                                      o, &no)) != LOOM_OK)
                return st;
            if (no != 2) return perr(p, oat, "tensor '%s': data_offsets must be [begin, end], found %d entries", tname, no);
            e->begin = (uint64_t)o[0], e->end = (uint64_t)o[1];
        } else {
            return perr(p, kat, "tensor '%s': unknown field \"%.40s\" (expected dtype, shape, data_offsets)", tname, key);
        }
        if ((st = next_or_close(p, '}', "a tensor entry", &more)) != LOOM_OK) return st;
    }
    if (!has_dtype || !has_shape || !has_offsets)
        return perr(p, at, "tensor '%s': missing \"%s\"", tname,
                    !has_dtype ? "dtype" : !has_shape ? "shape" : "data_offsets");
    p->nt++;
    return LOOM_OK;
}

static loom_status parse_metadata(parser *p) {
    skip_ws(p);
    if (peek(p) != '{') {
        char f[32];
        return perr(p, p->pos, "__metadata__ must be an object of strings, found %s", found(p, f, sizeof f));
    }
    p->pos++;
    skip_ws(p);
    bool more = peek(p) != '}';
    if (!more) p->pos++;
    while (more) {
        const char *key, *val;
        loom_status st = parse_string(p, "a metadata key", &key);
        if (st == LOOM_OK) st = expect(p, ':', "after a metadata key");
        if (st != LOOM_OK) return st;
        skip_ws(p);
        if (peek(p) != '"') {
            char f[32];
            return perr(p, p->pos, "__metadata__ value of \"%.40s\" is not a string (found %s)", key, found(p, f, sizeof f));
        }
        if ((st = parse_string(p, "a metadata value", &val)) != LOOM_OK) return st;
        if (p->nm == p->capm) {
            int cap = p->capm ? 2 * p->capm : 8;
            const char **m = realloc(p->meta, (size_t)cap * 2 * sizeof *m);
            if (!m) return loom__err(p->ctx, LOOM_ERR_OOM, "%s: out of memory reading the header", p->name);
            p->meta = m, p->capm = cap;
        }
        p->meta[2 * p->nm] = key, p->meta[2 * p->nm + 1] = val;
        p->nm++;
        if ((st = next_or_close(p, '}', "__metadata__", &more)) != LOOM_OK) return st;
    }
    return LOOM_OK;
}

static loom_status parse_header(parser *p) {
    char f[32];
    if (peek(p) != '{') return perr(p, 0, "the header must start with '{', found %s", found(p, f, sizeof f));
    p->pos = 1;
    skip_ws(p);
    bool more = peek(p) != '}';
    if (!more) p->pos++;
    while (more) {
        const char *key;
        size_t kat = (skip_ws(p), p->pos);
        loom_status st = parse_string(p, "a tensor name", &key);
        if (st == LOOM_OK) st = expect(p, ':', "after a tensor name");
        if (st != LOOM_OK) return st;
        if (strcmp(key, "__metadata__") == 0) {
            if (p->have_meta) return perr(p, kat, "__metadata__ appears twice");
            p->have_meta = true;
            st = parse_metadata(p);
        } else {
            st = parse_tensor(p, key);
        }
        if (st != LOOM_OK) return st;
        if ((st = next_or_close(p, '}', "the header object", &more)) != LOOM_OK) return st;
    }
    skip_ws(p);
    if (p->pos != p->n)
        return perr(p, p->pos, "unexpected %s after the header's JSON object (only spaces may pad it)", found(p, f, sizeof f));
    return LOOM_OK;
}

static int cmp_offsets(const void *a, const void *b) {
    const tentry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Offsets against shapes and the data area: each tensor's span holds exactly
 * its bytes, and the spans tile the data area without gaps or overlaps. */
static loom_status check_layout(parser *p, uint64_t data_bytes) {
    char sh[128];
    for (int i = 0; i < p->nt; i++) {
        tentry *e = &p->t[i];
        const char *nm = e->t.name;
        int64_t need = checked_bytes(e->t.ndim, e->t.dims, loom_dtype_size(e->t.dtype));
        if (need < 0)
            return loom__err(p->ctx, LOOM_ERR_FORMAT, "%s: tensor '%s': shape %s is too large", p->name, nm,
                             loom__shape_str(e->t.ndim, e->t.dims, sh, sizeof sh));
        if (e->end < e->begin)
            return loom__err(p->ctx, LOOM_ERR_FORMAT, "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin",
                             p->name, nm, (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->end - e->begin != (uint64_t)need)
            return loom__err(p->ctx, LOOM_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes but %s %s needs %lld", p->name,
                             nm, (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)(e->end - e->begin), st_names[e->t.dtype],
                             loom__shape_str(e->t.ndim, e->t.dims, sh, sizeof sh), (long long)need);
        if (e->end > data_bytes)
            return loom__err(p->ctx, LOOM_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu bytes; file truncated?)",
                             p->name, nm, (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)data_bytes);
    }
    if (p->nt > 1) qsort(p->t, (size_t)p->nt, sizeof *p->t, cmp_offsets);
    uint64_t at = 0;
    for (int i = 0; i < p->nt; i++) {
        tentry *e = &p->t[i];
        if (e->begin < at)
            return loom__err(p->ctx, LOOM_ERR_FORMAT, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap", p->name,
                             p->t[i - 1].t.name, (unsigned long long)p->t[i - 1].begin,
                             (unsigned long long)p->t[i - 1].end, e->t.name, (unsigned long long)e->begin,
                             (unsigned long long)e->end);
        if (e->begin > at)
            return loom__err(p->ctx, LOOM_ERR_FORMAT, "%s: data bytes [%llu, %llu) belong to no tensor (a gap before '%s')",
                             p->name, (unsigned long long)at, (unsigned long long)e->begin, e->t.name);
        at = e->end;
    }
    if (at != data_bytes)
        return loom__err(p->ctx, LOOM_ERR_FORMAT,
                         "%s: data bytes [%llu, %llu) after the last tensor belong to no tensor (trailing data)", p->name,
                         (unsigned long long)at, (unsigned long long)data_bytes);
    return LOOM_OK;
}

void loom_safetensors_close(loom_safetensors *st) {
    if (!st) return;
    if (st->owns) free(st->buf);
    free(st->path);
    free(st->t);
    free(st->by_name);
    free(st->meta);
    free(st->meta_by_key);
    free(st->strings);
    free(st);
}

loom_status loom__safetensors_parse(loom_ctx *ctx, const char *name, uint8_t *buf, size_t n, bool take,
                                    loom_safetensors **out) {
    *out = NULL;
    if (!name) name = "(memory)";
    parser p = {.ctx = ctx, .name = name};
    loom_safetensors *st = calloc(1, sizeof *st);
    name_ix *v = NULL;
    loom_status s = LOOM_OK;
    if (st) st->buf = buf, st->owns = take;
    if (!st || !(st->path = malloc(strlen(name) + 1))) {
        s = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", name);
        goto fail;
    }
    strcpy(st->path, name);
    if (n < 8) {
        s = loom__err(ctx, LOOM_ERR_FORMAT, "%s: %zu bytes is too short for a safetensors file (an 8-byte header length comes first)",
                      name, n);
        goto fail;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | buf[i];
    if (hl > LOOM_SAFETENSORS_MAX_HEADER) {
        s = loom__err(ctx, LOOM_ERR_FORMAT, "%s: header length %llu is more than the format's limit of %zu bytes%s", name,
                      (unsigned long long)hl, LOOM_SAFETENSORS_MAX_HEADER, hl > n ? " (not a safetensors file?)" : "");
        goto fail;
    }
    if (hl > n - 8) {
        s = loom__err(ctx, LOOM_ERR_FORMAT, "%s: header length %llu runs past the end of the file (%zu bytes; truncated?)",
                      name, (unsigned long long)hl, n);
        goto fail;
    }
    p.s = buf + 8, p.n = (size_t)hl;
    if (!(p.strings = malloc(p.n + 1))) {
        s = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for a %zu-byte header", name, p.n);
        goto fail;
    }
    if ((s = parse_header(&p)) != LOOM_OK) goto fail;

    /* unique names */
    int nk = p.nt > p.nm ? p.nt : p.nm;
    if (!(v = malloc((size_t)(nk ? nk : 1) * sizeof *v)) ||
        !(st->by_name = malloc((size_t)(p.nt ? p.nt : 1) * sizeof *st->by_name)) ||
        !(st->meta_by_key = malloc((size_t)(p.nm ? p.nm : 1) * sizeof *st->meta_by_key))) {
        s = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", name);
        goto fail;
    }
    for (int i = 0; i < p.nm; i++) v[i] = (name_ix){p.meta[2 * i], i};
    int dup = sort_find_dup(v, p.nm);
    if (dup >= 0) {
        s = loom__err(ctx, LOOM_ERR_FORMAT, "%s: __metadata__ key \"%.60s\" appears twice", name, v[dup].s);
        goto fail;
    }
    for (int i = 0; i < p.nm; i++) st->meta_by_key[i] = v[i].i;
    if ((s = check_layout(&p, (uint64_t)(n - 8 - p.n))) != LOOM_OK) goto fail;
    for (int i = 0; i < p.nt; i++) v[i] = (name_ix){p.t[i].t.name, i};
    dup = sort_find_dup(v, p.nt);
    if (dup >= 0) {
        s = loom__err(ctx, LOOM_ERR_FORMAT, "%s: tensor name '%.60s' appears twice in the header", name, v[dup].s);
        goto fail;
    }
    for (int i = 0; i < p.nt; i++) st->by_name[i] = v[i].i;
    free(v);
    v = NULL;

    if (!(st->t = malloc((size_t)(p.nt ? p.nt : 1) * sizeof *st->t))) {
        s = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory", name);
        goto fail;
    }
    const uint8_t *data = buf + 8 + p.n;
    for (int i = 0; i < p.nt; i++) {
        st->t[i] = p.t[i].t;
        st->t[i].data = data + p.t[i].begin;
    }
    st->n = p.nt;
    st->meta = p.meta, st->n_meta = p.nm;
    st->strings = p.strings;
    free(p.t);
    *out = st;
    return LOOM_OK;
fail:
    free(v);
    free(p.t);
    free(p.meta);
    free(p.strings);
    if (st) {
        loom_safetensors_close(st);
    } else if (take) {
        free(buf);
    }
    return s;
}

loom_status loom_safetensors_open(loom_ctx *ctx, const char *path, loom_safetensors **out) {
    if (!out) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "safetensors open: out is NULL");
    *out = NULL;
    if (!path) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "safetensors open: path is NULL");
    /* O_NONBLOCK: a FIFO or device must not block us; only regular files are read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return loom__err(ctx, LOOM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return loom__err(ctx, LOOM_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > (uint64_t)SIZE_MAX - 1) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_IO, "%s: the file is too large to read", path);
    }
    size_t size = (size_t)sb.st_size, got = 0;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        return loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory reading %zu bytes", path, size);
    }
    while (got < size) {
        size_t chunk = size - got > ((size_t)1 << 30) ? ((size_t)1 << 30) : size - got;
        ssize_t r = read(fd, buf + got, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            free(buf);
            return loom__err(ctx, LOOM_ERR_IO, "%s: read failed after %zu of %zu bytes: %s", path, got, size, strerror(e));
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got < size) {
        free(buf);
        return loom__err(ctx, LOOM_ERR_IO, "%s: the file shrank while being read (%zu of %zu bytes)", path, got, size);
    }
    return loom__safetensors_parse(ctx, path, buf, size, true, out);
}

int loom_safetensors_count(const loom_safetensors *st) { return st ? st->n : 0; }

const loom_st_tensor *loom_safetensors_tensor(const loom_safetensors *st, int i) {
    return st && i >= 0 && i < st->n ? &st->t[i] : NULL;
}

const loom_st_tensor *loom_safetensors_find(const loom_safetensors *st, const char *name) {
    if (!st || !name) return NULL;
    int lo = 0, hi = st->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const loom_st_tensor *t = &st->t[st->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0) return t;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

const char *loom_safetensors_meta(const loom_safetensors *st, const char *key) {
    if (!st || !key) return NULL;
    int lo = 0, hi = st->n_meta - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        int k = st->meta_by_key[mid];
        int c = strcmp(key, st->meta[2 * k]);
        if (c == 0) return st->meta[2 * k + 1];
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

int loom_safetensors_meta_count(const loom_safetensors *st) { return st ? st->n_meta : 0; }

const char *loom_safetensors_meta_key(const loom_safetensors *st, int i) {
    return st && i >= 0 && i < st->n_meta ? st->meta[2 * i] : NULL;
}

const char *loom_safetensors_path(const loom_safetensors *st) { return st ? st->path : NULL; }
