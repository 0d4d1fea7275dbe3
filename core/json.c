/* core/json.c — a strict JSON token reader for schema-driven parsers and a
 * JSON string builder (core/json.h). The safetensors header is read and
 * written with it (core/safetensors.c).
 */
#include "json.h"

/* ==================== UTF-8 ==================== */

size_t loom__json_utf8_len(const uint8_t *s, size_t n) {
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

bool loom__json_utf8_valid(const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t l = loom__json_utf8_len((const uint8_t *)s + i, n - i);
        if (!l) return false;
        i += l;
    }
    return true;
}

/* ==================== builder ==================== */

void loom__json_put(loom__json_buf *b, const char *s, size_t n) {
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

void loom__json_puts(loom__json_buf *b, const char *s) { loom__json_put(b, s, strlen(s)); }

void loom__json_put_string(loom__json_buf *b, const char *s) {
    loom__json_put(b, "\"", 1);
    for (const char *c = s; *c; c++) {
        unsigned char u = (unsigned char)*c;
        char esc[8];
        switch (u) {
        case '"': loom__json_put(b, "\\\"", 2); break;
        case '\\': loom__json_put(b, "\\\\", 2); break;
        case '\b': loom__json_put(b, "\\b", 2); break;
        case '\f': loom__json_put(b, "\\f", 2); break;
        case '\n': loom__json_put(b, "\\n", 2); break;
        case '\r': loom__json_put(b, "\\r", 2); break;
        case '\t': loom__json_put(b, "\\t", 2); break;
        default:
            if (u < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", u);
                loom__json_put(b, esc, 6);
            } else {
                loom__json_put(b, c, 1);
            }
        }
    }
    loom__json_put(b, "\"", 1);
}

void loom__json_put_i64(loom__json_buf *b, int64_t v) {
    char t[24];
    snprintf(t, sizeof t, "%lld", (long long)v);
    loom__json_puts(b, t);
}

/* ==================== reader ==================== */

loom_status loom__json_err(loom__json *j, size_t at, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return loom__err(j->ctx, LOOM_ERR_FORMAT, "%s: %s, byte %zu: %s", j->name, j->what, at + j->base, msg);
}

void loom__json_skip_ws(loom__json *j) {
    while (j->pos < j->n &&
           (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' || j->s[j->pos] == '\n' || j->s[j->pos] == '\r'))
        j->pos++;
}

int loom__json_peek(const loom__json *j) { return j->pos < j->n ? j->s[j->pos] : -1; }

const char *loom__json_found(const loom__json *j, char *buf, size_t n) {
    int c = loom__json_peek(j);
    if (c < 0) snprintf(buf, n, "the end of the %s", j->noun);
    else if (c >= 0x20 && c < 0x7F) snprintf(buf, n, "'%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

loom_status loom__json_expect(loom__json *j, char c, const char *what) {
    loom__json_skip_ws(j);
    if (loom__json_peek(j) == c) {
        j->pos++;
        return LOOM_OK;
    }
    char f[32];
    return loom__json_err(j, j->pos, "invalid JSON: expected '%c' %s, found %s", c, what,
                          loom__json_found(j, f, sizeof f));
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at pos (after "\u"). */
static bool read_hex4(loom__json *j, uint32_t *out) {
    if (j->n - j->pos < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(j->s[j->pos + i]);
        if (h < 0) return false;
        v = v << 4 | (uint32_t)h;
    }
    j->pos += 4;
    *out = v;
    return true;
}

static void put_utf8(loom__json *j, uint32_t cp) {
    char *o = j->strings + j->used;
    if (cp < 0x80) {
        o[0] = (char)cp, j->used += 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), j->used += 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)), o[2] = (char)(0x80 | (cp & 0x3F));
        j->used += 3;
    } else {
        o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F)), o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        j->used += 4;
    }
}

/* The escape after a backslash (pos is past the backslash; esc is the
 * backslash's offset) as a code point. */
static loom_status read_escape(loom__json *j, size_t esc, const char *what, uint32_t *out) {
    uint8_t c = j->s[j->pos++];
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
        if (!read_hex4(j, &cp)) return loom__json_err(j, esc, "invalid JSON: \\u needs four hex digits");
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return loom__json_err(j, esc, "invalid JSON: unpaired low surrogate \\u%04X", cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo;
            if (j->n - j->pos < 2 || j->s[j->pos] != '\\' || j->s[j->pos + 1] != 'u')
                return loom__json_err(j, esc, "invalid JSON: high surrogate \\u%04X without its low half", cp);
            j->pos += 2;
            if (!read_hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return loom__json_err(j, esc, "invalid JSON: high surrogate \\u%04X without its low half", cp);
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0)
            return loom__json_err(j, esc, "a string holds a NUL character (\\u0000), which loom does not accept (%s)",
                                  what);
        break;
    default:
        if (c >= 0x20 && c < 0x7F) return loom__json_err(j, esc, "invalid JSON: unknown escape '\\%c'", c);
        return loom__json_err(j, esc, "invalid JSON: unknown escape (byte 0x%02x after '\\')", c);
    }
    *out = cp;
    return LOOM_OK;
}

loom_status loom__json_string(loom__json *j, const char *what, const char **out) {
    loom__json_skip_ws(j);
    if (loom__json_peek(j) != '"') {
        char f[32];
        return loom__json_err(j, j->pos, "invalid JSON: expected a string (%s), found %s", what,
                              loom__json_found(j, f, sizeof f));
    }
    size_t start = j->pos++;
    char *dst = j->strings + j->used;
    for (;;) {
        if (j->pos >= j->n) return loom__json_err(j, start, "invalid JSON: unterminated string (%s)", what);
        uint8_t c = j->s[j->pos];
        if (c == '"') {
            j->pos++;
            break;
        }
        if (c < 0x20) return loom__json_err(j, j->pos, "invalid JSON: control character 0x%02x inside a string", c);
        if (c != '\\') {
            size_t l = loom__json_utf8_len(j->s + j->pos, j->n - j->pos);
            if (!l) return loom__json_err(j, j->pos, "invalid UTF-8 inside a string (byte 0x%02x)", c);
            memcpy(j->strings + j->used, j->s + j->pos, l);
            j->used += l, j->pos += l;
            continue;
        }
        size_t esc = j->pos++;
        if (j->pos >= j->n) return loom__json_err(j, start, "invalid JSON: unterminated string (%s)", what);
        uint32_t cp = 0;
        loom_status st = read_escape(j, esc, what, &cp);
        if (st != LOOM_OK) return st;
        put_utf8(j, cp);
    }
    j->strings[j->used++] = 0;
    *out = dst;
    return LOOM_OK;
}

loom_status loom__json_uint(loom__json *j, const char *what, int64_t *out) {
    loom__json_skip_ws(j);
    size_t at = j->pos;
    int c = loom__json_peek(j);
    if (c == '-') return loom__json_err(j, at, "%s is negative", what);
    if (c < '0' || c > '9') {
        char f[32];
        return loom__json_err(j, at, "expected a non-negative integer for %s, found %s", what,
                              loom__json_found(j, f, sizeof f));
    }
    int64_t v = 0;
    if (c == '0') {
        j->pos++;
        c = loom__json_peek(j);
        if (c >= '0' && c <= '9') return loom__json_err(j, at, "invalid JSON: a number has a leading zero (%s)", what);
    } else {
        while ((c = loom__json_peek(j)) >= '0' && c <= '9') {
            if (v > (INT64_MAX - (c - '0')) / 10) return loom__json_err(j, at, "%s is too large", what);
            v = v * 10 + (c - '0');
            j->pos++;
        }
    }
    if (c == '.' || c == 'e' || c == 'E') return loom__json_err(j, at, "%s must be an integer", what);
    *out = v;
    return LOOM_OK;
}

loom_status loom__json_next(loom__json *j, char close, const char *what, bool *more) {
    loom__json_skip_ws(j);
    int c = loom__json_peek(j);
    if (c == ',' || c == close) {
        j->pos++;
        *more = c == ',';
        return LOOM_OK;
    }
    char f[32];
    return loom__json_err(j, j->pos, "invalid JSON: expected ',' or '%c' in %s, found %s", close, what,
                          loom__json_found(j, f, sizeof f));
}
