/* tools/plot_csv.c — the CSV reader of `loom plot` (see tools/plot_csv.h):
 * line by line over a buffer, every field checked; an error names the line
 * and what is wrong there instead of plotting a partial or shifted curve. */
#include "plot_csv.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { C_KIND, C_STEP, C_LOSS, C_ACC, C_VLOSS, C_VACC, C_TLOSS, C_TACC, NCOL, MAXF = 64 };
static const char *const col_names[NCOL] = {"kind", "step", "loss", "accuracy", "val_loss", "val_acc", "test_loss", "test_acc"};

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static bool push(loom__plot_xy *s, double x, double y) {
    if (!isfinite(y) || !isfinite(x)) return true;
    if (s->n == s->cap) {
        if (s->cap > INT32_MAX / 4) return false;
        int cap = s->cap ? 2 * s->cap : 256;
        double *nx = realloc(s->x, (size_t)cap * sizeof *nx);
        if (nx) s->x = nx;
        double *ny = nx ? realloc(s->y, (size_t)cap * sizeof *ny) : NULL;
        if (!ny) return false;
        s->y = ny, s->cap = cap;
    }
    s->x[s->n] = x, s->y[s->n++] = y;
    return true;
}

/* Split line (NUL-terminated, no newline) at commas: at most MAXF fields, else -1. */
static int split(char *line, char **fld) {
    int n = 0;
    for (char *p = line;; p++) {
        if (n == MAXF) return -1;
        fld[n++] = p;
        p = strchr(p, ',');
        if (!p) return n;
        *p = 0;
    }
}

/* A number that is the whole field (loom writes %g: also nan, inf); an empty field is NaN. */
static bool number(const char *s, double *v) {
    if (!*s) return *v = NAN, true;
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end;
}

int loom__plot_csv_parse(const char *text, size_t len, loom__plot_csv *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->suggestion = NAN;
    if (memchr(text, 0, len)) return fail(err, errlen, "a NUL byte at offset %zu: not a text CSV", (size_t)((const char *)memchr(text, 0, len) - text));
    char *buf = malloc(len + 1);
    if (!buf) return fail(err, errlen, "out of memory");
    memcpy(buf, text, len);
    buf[len] = 0;
    int rc = 0, idx[NCOL], nhead = 0;
    for (int k = 0; k < NCOL; k++) idx[k] = -1;
    char *fld[MAXF];
    long line_no = 0;
    for (char *line = buf, *next; line && rc == 0; line = next) {
        line_no++;
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r') line[--ll] = 0;
        if (line_no == 1) {
            if (!ll) rc = fail(err, errlen, "line 1: no header (an empty file or line)");
            else if (!strncmp(line, "step,lr,loss,smoothed_loss", 26)) out->lrfind = true;
            else if ((nhead = split(line, fld)) < 0) rc = fail(err, errlen, "line 1: more than %d columns", MAXF);
            for (int c = 0; rc == 0 && !out->lrfind && c < nhead; c++)
                for (int k = 0; k < NCOL; k++)
                    if (!strcmp(fld[c], col_names[k])) idx[k] = c;
            for (int k = 0; rc == 0 && !out->lrfind && k < 4; k++)
                if (idx[k] < 0)
                    rc = fail(err, errlen, "line 1: no '%s' column (a loom train --log-csv log or a loom lr-find CSV is "
                              "expected)", col_names[k]);
            continue;
        }
        if (!ll) continue; /* a blank line (the end of the file) */
        char shown[48];
        snprintf(shown, sizeof shown, "%.40s%s", line, ll > 40 ? "..." : "");
        int n = split(line, fld);
        if (out->lrfind) { /* step,lr,loss,smoothed_loss,suggested */
            double v[5];
            bool ok = n == 5;
            for (int k = 0; ok && k < 5; k++) ok = number(fld[k], &v[k]) && *fld[k];
            if (!ok) {
                rc = fail(err, errlen, "line %ld: '%s' is not step,lr,loss,smoothed_loss,suggested (5 numbers)", line_no,
                          shown);
                break;
            }
            if (!push(&out->s[0], v[1], v[2]) || !push(&out->s[1], v[1], v[3])) rc = fail(err, errlen, "out of memory");
            if (v[4] != 0) out->suggestion = v[1];
            out->rows++;
            continue;
        }
        if (n != nhead) {
            rc = fail(err, errlen, "line %ld: %d fields, but the header has %d ('%s')", line_no, n < 0 ? MAXF + 1 : n,
                      nhead, shown);
            break;
        }
        double v[NCOL];
        for (int k = 1; k < NCOL && rc == 0; k++)
            if (idx[k] >= 0 && !number(fld[idx[k]], &v[k]))
                rc = fail(err, errlen, "line %ld: column '%s' is '%.40s', not a number", line_no, col_names[k], fld[idx[k]]);
            else if (idx[k] < 0)
                v[k] = NAN;
        if (rc) break;
        const char *kind = fld[idx[C_KIND]];
        bool epoch = !strcmp(kind, "epoch"), ok = true;
        if (!epoch && strcmp(kind, "step")) {
            rc = fail(err, errlen, "line %ld: kind '%.40s' (step or epoch expected)", line_no, kind);
            break;
        }
        double x = v[C_STEP];
        if (epoch)
            ok = push(&out->s[1], x, v[C_LOSS]) && push(&out->s[2], x, v[C_VLOSS]) && push(&out->s[3], x, v[C_TLOSS]) &&
                 push(&out->s[5], x, v[C_ACC]) && push(&out->s[6], x, v[C_VACC]) && push(&out->s[7], x, v[C_TACC]);
        else
            ok = push(&out->s[0], x, v[C_LOSS]) && push(&out->s[4], x, v[C_ACC]);
        if (!ok) rc = fail(err, errlen, "out of memory");
        out->rows++;
    }
    free(buf);
    return rc;
}

void loom__plot_csv_free(loom__plot_csv *p) {
    for (int k = 0; k < 8; k++) free(p->s[k].x), free(p->s[k].y);
    memset(p, 0, sizeof *p);
}
