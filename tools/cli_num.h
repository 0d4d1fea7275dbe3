/* tools/cli_num.h — numbers on the command line: decimal only, as a person
 * types them. strtod and strtol take more (leading blanks, hex, "inf",
 * "nan", "0x1p3"); a value like that on the command line is a typo or a
 * trick, so these refuse it: an integer is [-]digits, a real number is
 * [-+]digits[.digits][e[-+]digits] (or .digits), finite and representable. */
#ifndef LOOM_TOOLS_CLI_NUM_H
#define LOOM_TOOLS_CLI_NUM_H
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A decimal integer in [lo, hi] that is the whole of s. */
static inline bool loom_cli_int(const char *s, long long lo, long long hi, long long *out) {
    const char *p = s + (*s == '-');
    if (!*p) return false;
    for (const char *q = p; *q; q++)
        if (*q < '0' || *q > '9') return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* A finite decimal real number that is the whole of s (no hex, inf, nan,
 * blanks; an overflow or underflow of double is refused too). */
static inline bool loom_cli_double(const char *s, double *out) {
    const char *p = s + (*s == '-' || *s == '+');
    if (!(*p >= '0' && *p <= '9') && !(*p == '.' && p[1] >= '0' && p[1] <= '9')) return false;
    for (const char *q = p; *q; q++)
        if (!strchr("+-.0123456789eE", *q)) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

#endif
