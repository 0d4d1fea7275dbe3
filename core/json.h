/* core/json.h — library-private JSON pieces: a strict reader of the tokens
 * a schema-driven parser needs, and a string builder that writes JSON.
 *
 * defines: loom__json (a reader over n bytes), loom__json_err and the token
 *          readers (string, non-negative integer, punctuation), the UTF-8
 *          checks, loom__json_buf (a growing string) and its writers.
 *
 * The reader has no tree and never recurses: the caller walks its schema
 * with these calls, so nesting deeper than the schema expects is refused at
 * the first unexpected bracket. Every read is bounds-checked against n.
 * Strings are full RFC 8259 strings (escapes, \u surrogate pairs, UTF-8
 * checked) decoded into an arena the caller provides (n + 1 bytes always
 * suffice: a decoded string plus its NUL is never longer than its source
 * with the quotes).
 */
#ifndef LOOM_CORE_JSON_H
#define LOOM_CORE_JSON_H

#include "impl.h"

/* ---- reader ---- */

typedef struct loom__json {
    loom_ctx *ctx;
    const char *name;  /* the file, for messages */
    const char *what;  /* the text's role in the file, for messages ("safetensors header") */
    const char *noun;  /* the text in short ("header": "the end of the header") */
    size_t base;       /* offset of s in the file, so messages give file offsets */
    const uint8_t *s;  /* the text */
    size_t n, pos;
    char *strings;     /* decoded strings go here: n + 1 bytes */
    size_t used;
} loom__json;

/* LOOM_ERR_FORMAT: "<name>: <what>, byte <base + at>: <message>". */
loom_status loom__json_err(loom__json *j, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

void loom__json_skip_ws(loom__json *j);
/* The byte at pos, or -1 at the end. */
int loom__json_peek(const loom__json *j);
/* The byte at pos described for a message ("'x'", "byte 0x01", "the end of
 * the <noun>") into buf. */
const char *loom__json_found(const loom__json *j, char *buf, size_t n);
/* Whitespace, then c (what: where, for the message). */
loom_status loom__json_expect(loom__json *j, char c, const char *what);
/* Whitespace, then a string, decoded into the arena; *out points into it.
 * A \u0000 is refused (the strings are C strings). */
loom_status loom__json_string(loom__json *j, const char *what, const char **out);
/* Whitespace, then a non-negative integer (no fraction, exponent or
 * leading zero) that fits int64. */
loom_status loom__json_uint(loom__json *j, const char *what, int64_t *out);
/* After an element: ',' (*more = true) or close (*more = false). */
loom_status loom__json_next(loom__json *j, char close, const char *what, bool *more);

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if invalid
 * (overlong forms, surrogates and code points above U+10FFFF are invalid). */
size_t loom__json_utf8_len(const uint8_t *s, size_t n);
bool loom__json_utf8_valid(const char *s);

/* ---- builder ---- */

/* A NUL-terminated string that grows; zero is empty. After a failed
 * allocation oom is set and later writes do nothing. The caller frees p. */
typedef struct loom__json_buf {
    char *p;
    size_t len, cap;
    bool oom;
} loom__json_buf;

void loom__json_put(loom__json_buf *b, const char *s, size_t n);
void loom__json_puts(loom__json_buf *b, const char *s);
/* s as a JSON string: quotes, backslashes and control characters escaped. */
void loom__json_put_string(loom__json_buf *b, const char *s);
void loom__json_put_i64(loom__json_buf *b, int64_t v);

#endif
