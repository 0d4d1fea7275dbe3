/* tools/plot.c — `loom plot RUN.csv -o OUT.svg`: loss and accuracy curves of
 * a `loom train --log-csv` log as an SVG file (two panels: loss per step and
 * per epoch for train/val/test; accuracy likewise); a `loom lr-find` CSV gives
 * its loss-against-LR curve with the suggestion marked. The CSV reader is
 * tools/plot_csv.c. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"
#include "loom/plot.h"
#include "plot_csv.h"

static const char *usage_text = "usage: loom plot RUN.csv [-o OUT.svg]   (default OUT: RUN.csv with .svg)\n";

/* The whole file (at most 1 GiB) in *buf from malloc: 0, else 1 after printing why. */
static int slurp(const char *in, char **buf, size_t *len) {
    FILE *f = fopen(in, "rb");
    if (!f) return fprintf(stderr, "loom plot: %s: %s\n", in, strerror(errno)), 1;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = cap < ((size_t)1 << 30) ? realloc(b, cap * 2) : NULL;
        if (!nb) {
            fprintf(stderr, "loom plot: %s: %s\n", in, cap < ((size_t)1 << 30) ? "out of memory" : "larger than 1 GiB");
            free(b), fclose(f);
            return 1;
        }
        b = nb, cap *= 2;
    }
    bool bad = !b || ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "loom plot: %s: %s\n", in, b ? "read error" : "out of memory");
        free(b);
        return 1;
    }
    *buf = b, *len = n;
    return 0;
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
    char *text = NULL, err[256];
    size_t len = 0;
    if (slurp(in, &text, &len)) return 1;
    if (len == 0) {
        fprintf(stderr, "loom plot: %s is empty\n", in);
        free(text);
        return 1;
    }
    loom__plot_csv pc;
    int bad = loom__plot_csv_parse(text, len, &pc, err, sizeof err);
    free(text);
    if (bad) {
        fprintf(stderr, "loom plot: %s: %s\n", in, err);
        loom__plot_csv_free(&pc);
        return 1;
    }
    loom__plot_xy *sb = pc.s;
    loom_plot_panel p[2];
    int np = 1;
    char mark[64];
    loom_plot_series ls[4], as[4];
    if (pc.lrfind) { /* an lr-find curve */
        snprintf(mark, sizeof mark, "suggested lr %.3g", pc.suggestion);
        ls[0] = (loom_plot_series){"loss", sb[0].x, sb[0].y, sb[0].n, "#1f77b4", true};
        ls[1] = (loom_plot_series){"smoothed loss", sb[1].x, sb[1].y, sb[1].n, "#1f77b4", false};
        p[0] = (loom_plot_panel){"LR range test", "learning rate", "loss", true, pc.suggestion, mark, ls, 2};
    } else {
        static const char *const labels[8] = {"loss (step)", "train loss", "val loss", "test loss",
                                              "accuracy (step)", "train acc", "val acc", "test acc"};
        static const char *const colors[4] = {"#1f77b4", "#1f77b4", "#ff7f0e", "#2ca02c"};
        int nl = 0, na = 0;
        for (int k = 0; k < 4; k++) {
            if (sb[k].n) ls[nl++] = (loom_plot_series){labels[k], sb[k].x, sb[k].y, sb[k].n, colors[k], k == 0};
            if (sb[4 + k].n)
                as[na++] = (loom_plot_series){labels[4 + k], sb[4 + k].x, sb[4 + k].y, sb[4 + k].n, colors[k], k == 0};
        }
        p[0] = (loom_plot_panel){"loss", "step", "loss", false, NAN, NULL, ls, nl};
        p[1] = (loom_plot_panel){"accuracy", "step", "accuracy", false, NAN, NULL, as, na};
        np = 2;
    }
    loom_ctx *ctx;
    int rc = 0;
    if (loom_ctx_create(NULL, &ctx) != LOOM_OK) {
        loom__plot_csv_free(&pc);
        return 1;
    }
    if (loom_plot_svg(ctx, out, p, np) != LOOM_OK) {
        fprintf(stderr, "loom plot: %s\n", loom_last_error(ctx));
        rc = 1;
    } else if (pc.lrfind) {
        printf("wrote %s (%d points of %s)\n", out, sb[1].n, in);
    } else {
        printf("wrote %s (%d rows of %s)\n", out, pc.rows, in);
    }
    loom_ctx_destroy(ctx);
    loom__plot_csv_free(&pc);
    return rc;
}
