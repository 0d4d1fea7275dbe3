/* tools/plot.c — `loom plot RUN.csv -o OUT.svg`: loss and accuracy curves of
 * a `loom train --log-csv` log as an SVG file (two panels: loss per step and
 * per epoch for train/val/test; accuracy likewise); a `loom lr-find` CSV gives
 * its loss-against-LR curve with the suggestion marked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "loom/plot.h"

static const char *usage_text = "usage: loom plot RUN.csv [-o OUT.svg]   (default OUT: RUN.csv with .svg)\n";

enum { C_KIND, C_STEP, C_LOSS, C_ACC, C_VLOSS, C_VACC, C_TLOSS, C_TACC, NCOL };
static const char *const col_names[NCOL] = {"kind", "step", "loss", "accuracy", "val_loss", "val_acc", "test_loss", "test_acc"};

typedef struct series_buf {
    double *x, *y;
    int n, cap;
} series_buf;

static void push(series_buf *s, double x, double y) {
    if (!isfinite(y)) return;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->x = realloc(s->x, (size_t)s->cap * sizeof *s->x);
        s->y = realloc(s->y, (size_t)s->cap * sizeof *s->y);
        if (!s->x || !s->y) abort();
    }
    s->x[s->n] = x, s->y[s->n++] = y;
}

int loom_cmd_plot(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) return fprintf(stderr, "loom plot: %s needs a value\n%s", argv[i], usage_text), 2;
            out = argv[++i];
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            return printf("%s", usage_text), 0;
        } else if (argv[i][0] == '-' || in) {
            return fprintf(stderr, "loom plot: unexpected argument '%s'\n%s", argv[i], usage_text), 2;
        } else {
            in = argv[i];
        }
    }
    if (!in) return fprintf(stderr, "loom plot: no CSV file given\n%s", usage_text), 2;
    char outbuf[1024];
    if (!out) {
        snprintf(outbuf, sizeof outbuf, "%s", in);
        char *dot = strrchr(outbuf, '.');
        if (dot && !strcmp(dot, ".csv")) *dot = 0;
        strncat(outbuf, ".svg", sizeof outbuf - strlen(outbuf) - 1);
        out = outbuf;
    }
    FILE *f = fopen(in, "r");
    if (!f) return perror(in), 1;
    char line[4096];
    int idx[NCOL];
    for (int k = 0; k < NCOL; k++) idx[k] = -1;
    if (!fgets(line, sizeof line, f)) {
        fprintf(stderr, "loom plot: %s is empty\n", in);
        fclose(f);
        return 1;
    }
    if (!strncmp(line, "step,lr,loss,smoothed_loss", 26)) { /* an lr-find curve */
        series_buf raw = {0}, sm = {0};
        double sugg = NAN, a, l, s;
        int step, flag;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "%d,%lf,%lf,%lf,%d", &step, &a, &l, &s, &flag) == 5) {
                push(&raw, a, l), push(&sm, a, s);
                if (flag) sugg = a;
            }
        fclose(f);
        char mark[64];
        snprintf(mark, sizeof mark, "suggested lr %.3g", sugg);
        loom_plot_series se[2] = {{"loss", raw.x, raw.y, raw.n, "#1f77b4", true},
                                  {"smoothed loss", sm.x, sm.y, sm.n, "#1f77b4", false}};
        loom_plot_panel p = {"LR range test", "learning rate", "loss", true, sugg, mark, se, 2};
        loom_ctx *ctx;
        int rc = 0;
        if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
        if (loom_plot_svg(ctx, out, &p, 1) != LOOM_OK) fprintf(stderr, "loom plot: %s\n", loom_last_error(ctx)), rc = 1;
        else printf("wrote %s (%d points of %s)\n", out, sm.n, in);
        loom_ctx_destroy(ctx);
        free(raw.x), free(raw.y), free(sm.x), free(sm.y);
        return rc;
    }
    int c = 0;
    for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), c++)
        for (int k = 0; k < NCOL; k++)
            if (!strcmp(tok, col_names[k])) idx[k] = c;
    for (int k = 0; k < 4; k++)
        if (idx[k] < 0) {
            fprintf(stderr, "loom plot: %s: no '%s' column (a loom train --log-csv log is expected)\n", in, col_names[k]);
            fclose(f);
            return 1;
        }
    series_buf sb[8] = {{0}}; /* step loss, train/val/test loss, step acc, train/val/test acc */
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char *fld[32] = {0};
        int n = 0;
        for (char *p = line; n < 32;) {
            fld[n++] = p;
            char *q = strpbrk(p, ",\r\n");
            if (!q) break;
            bool end = *q != ',';
            *q = 0;
            if (end) break;
            p = q + 1;
        }
        double v[NCOL];
        for (int k = 1; k < NCOL; k++) v[k] = idx[k] >= 0 && idx[k] < n && *fld[idx[k]] ? strtod(fld[idx[k]], NULL) : NAN;
        bool epoch = idx[C_KIND] < n && !strcmp(fld[idx[C_KIND]], "epoch");
        double x = v[C_STEP];
        if (epoch) {
            push(&sb[1], x, v[C_LOSS]), push(&sb[2], x, v[C_VLOSS]), push(&sb[3], x, v[C_TLOSS]);
            push(&sb[5], x, v[C_ACC]), push(&sb[6], x, v[C_VACC]), push(&sb[7], x, v[C_TACC]);
        } else {
            push(&sb[0], x, v[C_LOSS]), push(&sb[4], x, v[C_ACC]);
        }
        rows++;
    }
    fclose(f);
    static const char *const labels[8] = {"loss (step)", "train loss", "val loss", "test loss",
                                          "accuracy (step)", "train acc", "val acc", "test acc"};
    static const char *const colors[4] = {"#1f77b4", "#1f77b4", "#ff7f0e", "#2ca02c"};
    loom_plot_series ls[4], as[4];
    int nl = 0, na = 0;
    for (int k = 0; k < 4; k++) {
        if (sb[k].n) ls[nl++] = (loom_plot_series){labels[k], sb[k].x, sb[k].y, sb[k].n, colors[k], k == 0};
        if (sb[4 + k].n) as[na++] = (loom_plot_series){labels[4 + k], sb[4 + k].x, sb[4 + k].y, sb[4 + k].n, colors[k], k == 0};
    }
    loom_plot_panel p[2] = {{"loss", "step", "loss", false, NAN, NULL, ls, nl},
                            {"accuracy", "step", "accuracy", false, NAN, NULL, as, na}};
    loom_ctx *ctx;
    int rc = 0;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) return 1;
    if (loom_plot_svg(ctx, out, p, 2) != LOOM_OK) {
        fprintf(stderr, "loom plot: %s\n", loom_last_error(ctx));
        rc = 1;
    } else {
        printf("wrote %s (%d rows of %s)\n", out, rows, in);
    }
    loom_ctx_destroy(ctx);
    for (int k = 0; k < 8; k++) free(sb[k].x), free(sb[k].y);
    return rc;
}
