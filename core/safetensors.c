/* core/safetensors.c — the safetensors format: a writer (atomic, through
 * core/outfile.c), and a reader that validates everything before handing out
 * a tensor.
 *
 * The header's JSON is read with core/json.c's token reader, following this
 * schema: an object of tensor entries {"dtype","shape","data_offsets"} and an
 * optional "__metadata__" object of strings; numbers in shapes and offsets
 * must be non-negative integers. The parser follows the schema and never
 * recurses, so nesting deeper than the schema's two levels is refused at the
 * first unexpected bracket and cannot exhaust the stack. Every read is
 * bounds-checked against the header length (tests/fuzz/fuzz_safetensors.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "outfile.h"
#include "safetensors_impl.h"

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

/* ==================== writer ==================== */

/* head, then the tensors' data in `order`, to path (atomically). */
static loom_status write_out(loom_ctx *ctx, const char *path, const char *head, size_t head_len,
                             const loom_st_tensor *t, const int *order, int n) {
    loom__outfile *f;
    loom_status st = loom__outfile_open(ctx, path, &f);
    if (st != LOOM_OK) return st;
    st = loom__outfile_write(f, head, head_len);
    for (int k = 0; st == LOOM_OK && k < n; k++) {
        const loom_st_tensor *x = &t[order[k]];
        st = loom__outfile_write(f, x->data, loom_st_tensor_nbytes(x));
    }
    if (st != LOOM_OK) {
        loom__outfile_abort(f);
        return st;
    }
    return loom__outfile_commit(f);
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

loom_status loom_safetensors_write(loom_ctx *ctx, const char *path, const loom_st_tensor *tensors, int n,
                                   const char *const *metadata) {
    if (!path || n < 0 || (n > 0 && !tensors))
        return loom__err(ctx, LOOM_ERR_INVALID_ARG, "safetensors write: path is NULL, n < 0, or tensors is NULL");
    int n_meta = 0;
    if (metadata) {
        while (metadata[2 * n_meta]) {
            const char *k = metadata[2 * n_meta], *v = metadata[2 * n_meta + 1];
            if (!v) return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: metadata key \"%s\" has no value (NULL)", path, k);
            if (!loom__json_utf8_valid(k) || !loom__json_utf8_valid(v))
                return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: metadata \"%s\" is not valid UTF-8", path, k);
            n_meta++;
        }
    }
    for (int i = 0; i < n; i++) {
        const loom_st_tensor *x = &tensors[i];
        if (!x->name || !x->name[0])
            return loom__err(ctx, LOOM_ERR_INVALID_ARG, "%s: tensor %d has no name", path, i);
        if (!loom__json_utf8_valid(x->name))
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

    loom__json_buf h = {0};
    loom__json_puts(&h, "        {"); /* 8 bytes reserved for the length */
    int64_t off = 0;
    for (int j = 0; j < n; j++) {
        const loom_st_tensor *x = &tensors[order[j]];
        int64_t bytes = (int64_t)loom_st_tensor_nbytes(x);
        if (j) loom__json_puts(&h, ",");
        loom__json_put_string(&h, x->name);
        loom__json_puts(&h, ":{\"dtype\":\"");
        loom__json_puts(&h, st_names[x->dtype]);
        loom__json_puts(&h, "\",\"shape\":[");
        for (int d = 0; d < x->ndim; d++) {
            if (d) loom__json_puts(&h, ",");
            loom__json_put_i64(&h, x->dims[d]);
        }
        loom__json_puts(&h, "],\"data_offsets\":[");
        loom__json_put_i64(&h, off);
        loom__json_puts(&h, ",");
        if (bytes > INT64_MAX - off) h.oom = true;
        off += bytes;
        loom__json_put_i64(&h, off);
        loom__json_puts(&h, "]}");
    }
    if (n_meta) {
        if (n) loom__json_puts(&h, ",");
        loom__json_puts(&h, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i) loom__json_puts(&h, ",");
            loom__json_put_string(&h, metadata[2 * i]);
            loom__json_puts(&h, ":");
            loom__json_put_string(&h, metadata[2 * i + 1]);
        }
        loom__json_puts(&h, "}");
    }
    loom__json_puts(&h, "}");
    while (h.len % 8) loom__json_puts(&h, " ");
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
    loom_status st = write_out(ctx, path, h.p, h.len, tensors, order, n);
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
    loom__json j; /* the header's JSON; its arena keeps the decoded strings */
    tentry *t;
    int nt, cap;
    const char **meta;
    int nm, capm;
    bool have_meta;
} parser;

/* [int, ...] into v (at most max entries, else the error too_many). */
static loom_status parse_int_array(parser *p, const char *tname, const char *field, int max, const char *too_many,
                                   int64_t *v, int *count) {
    loom__json *j = &p->j;
    char what[128];
    snprintf(what, sizeof what, "the %s of '%s'", field, tname);
    loom__json_skip_ws(j);
    if (loom__json_peek(j) != '[') {
        char f[32];
        return loom__json_err(j, j->pos, "tensor '%s': %s must be an array of integers, found %s", tname, field,
                              loom__json_found(j, f, sizeof f));
    }
    j->pos++;
    *count = 0;
    loom__json_skip_ws(j);
    if (loom__json_peek(j) == ']') {
        j->pos++;
        return LOOM_OK;
    }
    for (bool more = true; more;) {
        int64_t x = 0;
        loom_status st = loom__json_uint(j, what, &x);
        if (st != LOOM_OK) return st;
        if (*count == max) return loom__json_err(j, j->pos, "tensor '%s': %s", tname, too_many);
        v[(*count)++] = x;
        if ((st = loom__json_next(j, ']', what, &more)) != LOOM_OK) return st;
    }
    return LOOM_OK;
}

static loom_status parse_tensor(parser *p, const char *tname) {
    loom__json *j = &p->j;
    if (p->nt == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        tentry *t = realloc(p->t, (size_t)cap * sizeof *t);
        if (!t) return loom__err(j->ctx, LOOM_ERR_OOM, "%s: out of memory reading the header", j->name);
        p->t = t, p->cap = cap;
    }
    tentry *e = &p->t[p->nt];
    memset(e, 0, sizeof *e);
    e->t.name = tname;
    e->index = p->nt;
    loom__json_skip_ws(j);
    size_t at = j->pos;
    if (loom__json_peek(j) != '{') {
        char f[32];
        return loom__json_err(j, at,
                              "tensor '%s': expected an object {\"dtype\", \"shape\", \"data_offsets\"}, found %s",
                              tname, loom__json_found(j, f, sizeof f));
    }
    j->pos++;
    bool has_dtype = false, has_shape = false, has_offsets = false;
    loom__json_skip_ws(j);
    bool more = loom__json_peek(j) != '}';
    if (!more) j->pos++;
    while (more) {
        const char *key, *val;
        size_t kat = (loom__json_skip_ws(j), j->pos);
        loom_status st = loom__json_string(j, "a field name", &key);
        if (st == LOOM_OK) st = loom__json_expect(j, ':', "after a field name");
        if (st != LOOM_OK) return st;
        if (strcmp(key, "dtype") == 0) {
            if (has_dtype) return loom__json_err(j, kat, "tensor '%s': \"dtype\" given twice", tname);
            has_dtype = true;
            loom__json_skip_ws(j);
            size_t vat = j->pos;
            if ((st = loom__json_string(j, "the dtype", &val)) != LOOM_OK) return st;
            int dt = st_dtype(val);
            if (dt < 0) {
                if (st_is_foreign(val))
                    return loom__json_err(
                        j, vat, "tensor '%s': dtype \"%s\" is not supported by loom (F32 F16 BF16 F64 I32 U8 are)",
                        tname, val);
                return loom__json_err(j, vat, "tensor '%s': unknown dtype \"%.40s\"", tname, val);
            }
            e->t.dtype = (loom_dtype)dt;
        } else if (strcmp(key, "shape") == 0) {
            if (has_shape) return loom__json_err(j, kat, "tensor '%s': \"shape\" given twice", tname);
            has_shape = true;
            if ((st = parse_int_array(p, tname, "shape", LOOM_MAX_DIMS,
                                      "shape has more than " LOOM__STR(LOOM_MAX_DIMS) " dimensions (loom's limit)",
                                      e->t.dims, &e->t.ndim)) != LOOM_OK)
                return st;
        } else if (strcmp(key, "data_offsets") == 0) {
            if (has_offsets) return loom__json_err(j, kat, "tensor '%s': \"data_offsets\" given twice", tname);
            has_offsets = true;
            loom__json_skip_ws(j);
            size_t oat = j->pos;
            int64_t o[2];
            int no;
            if ((st = parse_int_array(p, tname, "data_offsets", 2, "data_offsets must be [begin, end]: too many entries",
                                      o, &no)) != LOOM_OK)
                return st;
            if (no != 2)
                return loom__json_err(j, oat, "tensor '%s': data_offsets must be [begin, end], found %d entries", tname,
                                      no);
            e->begin = (uint64_t)o[0], e->end = (uint64_t)o[1];
        } else {
            return loom__json_err(j, kat, "tensor '%s': unknown field \"%.40s\" (expected dtype, shape, data_offsets)",
                                  tname, key);
        }
        if ((st = loom__json_next(j, '}', "a tensor entry", &more)) != LOOM_OK) return st;
    }
    if (!has_dtype || !has_shape || !has_offsets)
        return loom__json_err(j, at, "tensor '%s': missing \"%s\"", tname,
                              !has_dtype   ? "dtype"
                              : !has_shape ? "shape"
                                           : "data_offsets");
    p->nt++;
    return LOOM_OK;
}

static loom_status parse_metadata(parser *p) {
    loom__json *j = &p->j;
    loom__json_skip_ws(j);
    if (loom__json_peek(j) != '{') {
        char f[32];
        return loom__json_err(j, j->pos, "__metadata__ must be an object of strings, found %s",
                              loom__json_found(j, f, sizeof f));
    }
    j->pos++;
    loom__json_skip_ws(j);
    bool more = loom__json_peek(j) != '}';
    if (!more) j->pos++;
    while (more) {
        const char *key, *val;
        loom_status st = loom__json_string(j, "a metadata key", &key);
        if (st == LOOM_OK) st = loom__json_expect(j, ':', "after a metadata key");
        if (st != LOOM_OK) return st;
        loom__json_skip_ws(j);
        if (loom__json_peek(j) != '"') {
            char f[32];
            return loom__json_err(j, j->pos, "__metadata__ value of \"%.40s\" is not a string (found %s)", key,
                                  loom__json_found(j, f, sizeof f));
        }
        if ((st = loom__json_string(j, "a metadata value", &val)) != LOOM_OK) return st;
        if (p->nm == p->capm) {
            int cap = p->capm ? 2 * p->capm : 8;
            const char **m = realloc(p->meta, (size_t)cap * 2 * sizeof *m);
            if (!m) return loom__err(j->ctx, LOOM_ERR_OOM, "%s: out of memory reading the header", j->name);
            p->meta = m, p->capm = cap;
        }
        p->meta[2 * p->nm] = key, p->meta[2 * p->nm + 1] = val;
        p->nm++;
        if ((st = loom__json_next(j, '}', "__metadata__", &more)) != LOOM_OK) return st;
    }
    return LOOM_OK;
}

static loom_status parse_header(parser *p) {
    loom__json *j = &p->j;
    char f[32];
    if (loom__json_peek(j) != '{')
        return loom__json_err(j, 0, "the header must start with '{', found %s", loom__json_found(j, f, sizeof f));
    j->pos = 1;
    loom__json_skip_ws(j);
    bool more = loom__json_peek(j) != '}';
    if (!more) j->pos++;
    while (more) {
        const char *key;
        size_t kat = (loom__json_skip_ws(j), j->pos);
        loom_status st = loom__json_string(j, "a tensor name", &key);
        if (st == LOOM_OK) st = loom__json_expect(j, ':', "after a tensor name");
        if (st != LOOM_OK) return st;
        if (strcmp(key, "__metadata__") == 0) {
            if (p->have_meta) return loom__json_err(j, kat, "__metadata__ appears twice");
            p->have_meta = true;
            st = parse_metadata(p);
        } else {
            st = parse_tensor(p, key);
        }
        if (st != LOOM_OK) return st;
        if ((st = loom__json_next(j, '}', "the header object", &more)) != LOOM_OK) return st;
    }
    loom__json_skip_ws(j);
    if (j->pos != j->n)
        return loom__json_err(j, j->pos, "unexpected %s after the header's JSON object (only spaces may pad it)",
                              loom__json_found(j, f, sizeof f));
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
    loom__json *j = &p->j;
    char sh[128];
    for (int i = 0; i < p->nt; i++) {
        tentry *e = &p->t[i];
        const char *nm = e->t.name;
        int64_t need = checked_bytes(e->t.ndim, e->t.dims, loom_dtype_size(e->t.dtype));
        if (need < 0)
            return loom__err(j->ctx, LOOM_ERR_FORMAT, "%s: tensor '%s': shape %s is too large", j->name, nm,
                             loom__shape_str(e->t.ndim, e->t.dims, sh, sizeof sh));
        if (e->end < e->begin)
            return loom__err(j->ctx, LOOM_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%llu, %llu] end before they begin", j->name, nm,
                             (unsigned long long)e->begin, (unsigned long long)e->end);
        if (e->end - e->begin != (uint64_t)need)
            return loom__err(j->ctx, LOOM_ERR_FORMAT,
                             "%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes but %s %s needs %lld", j->name,
                             nm, (unsigned long long)e->begin, (unsigned long long)e->end,
                             (unsigned long long)(e->end - e->begin), st_names[e->t.dtype],
                             loom__shape_str(e->t.ndim, e->t.dims, sh, sizeof sh), (long long)need);
        if (e->end > data_bytes)
            return loom__err(
                j->ctx, LOOM_ERR_FORMAT,
                "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the data (%llu bytes; file truncated?)",
                j->name, nm, (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)data_bytes);
    }
    if (p->nt > 1) qsort(p->t, (size_t)p->nt, sizeof *p->t, cmp_offsets);
    uint64_t at = 0;
    for (int i = 0; i < p->nt; i++) {
        tentry *e = &p->t[i];
        if (e->begin < at)
            return loom__err(j->ctx, LOOM_ERR_FORMAT, "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap",
                             j->name, p->t[i - 1].t.name, (unsigned long long)p->t[i - 1].begin,
                             (unsigned long long)p->t[i - 1].end, e->t.name, (unsigned long long)e->begin,
                             (unsigned long long)e->end);
        if (e->begin > at)
            return loom__err(j->ctx, LOOM_ERR_FORMAT,
                             "%s: data bytes [%llu, %llu) belong to no tensor (a gap before '%s')", j->name,
                             (unsigned long long)at, (unsigned long long)e->begin, e->t.name);
        at = e->end;
    }
    if (at != data_bytes)
        return loom__err(j->ctx, LOOM_ERR_FORMAT,
                         "%s: data bytes [%llu, %llu) after the last tensor belong to no tensor (trailing data)",
                         j->name, (unsigned long long)at, (unsigned long long)data_bytes);
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
    parser p = {.j = {.ctx = ctx, .name = name, .what = "safetensors header", .noun = "header", .base = 8}};
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
    p.j.s = buf + 8, p.j.n = (size_t)hl;
    if (!(p.j.strings = malloc(p.j.n + 1))) {
        s = loom__err(ctx, LOOM_ERR_OOM, "%s: out of memory for a %zu-byte header", name, p.j.n);
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
    if ((s = check_layout(&p, (uint64_t)(n - 8 - p.j.n))) != LOOM_OK) goto fail;
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
    const uint8_t *data = buf + 8 + p.j.n;
    for (int i = 0; i < p.nt; i++) {
        st->t[i] = p.t[i].t;
        st->t[i].data = data + p.t[i].begin;
    }
    st->n = p.nt;
    st->meta = p.meta, st->n_meta = p.nm;
    st->strings = p.j.strings;
    free(p.t);
    *out = st;
    return LOOM_OK;
fail:
    free(v);
    free(p.t);
    free(p.meta);
    free(p.j.strings);
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
