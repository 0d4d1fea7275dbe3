/* train/plot.c — SVG line charts (see loom/plot.h). */
#include <errno.h>
#include <math.h>

#include "impl.h"
#include "outfile.h"
#include "train_impl.h"
#include "loom/plot.h"

#define W 800.0
#define H 400.0
#define ML 70.0 /* margins: left, right, top, bottom */
#define MR 150.0
#define MT 36.0
#define MB 50.0

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

static void xml_text(FILE *f, const char *s) {
    for (; s && *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

static bool usable(const loom_plot_panel *p, double x, double y) {
    return isfinite(x) && isfinite(y) && (!p->log_x || x > 0);
}

/* a "nice" tick step: 1, 2 or 5 times a power of ten, about n ticks over span */
static double nice_step(double span, int n) {
    double raw = span / n, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

static void panel(FILE *f, const loom_plot_panel *p, double top) {
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int s = 0; s < p->n_series; s++)
        for (int i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i], y = p->series[s].y[i];
            if (!usable(p, x, y)) continue;
            if (p->log_x) x = log10(x);
            x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
        }
    if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 - x0 < 1e-12) x0 -= 0.5, x1 += 0.5;
    if (y1 - y0 < 1e-12) y0 -= 0.5, y1 += 0.5;
    double pad = 0.05 * (y1 - y0);
    y0 -= pad, y1 += pad;
    double pw = W - ML - MR, ph = H - MT - MB, bx = ML, by = top + MT;
#define PX(x) (bx + ((x) - x0) / (x1 - x0) * pw)
#define PY(y) (by + ph - ((y) - y0) / (y1 - y0) * ph)
    fprintf(f, "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"16\" text-anchor=\"middle\">", bx + pw / 2, top + 22);
    xml_text(f, p->title);
    fprintf(f, "</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", bx, by, pw, ph);
    /* y ticks */
    double ys = nice_step(y1 - y0, 6);
    for (double v = ceil(y0 / ys) * ys; v <= y1 + 1e-12 * ys; v += ys)
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                "font-size=\"11\" text-anchor=\"end\">%.4g</text>\n",
                bx, PY(v), bx + pw, PY(v), bx - 5, PY(v) + 4, fabs(v) < 1e-12 * ys ? 0.0 : v);
    /* x ticks: decades on a log axis */
    double xs = p->log_x ? fmax(1.0, floor((x1 - x0) / 8) + 1) : nice_step(x1 - x0, 8);
    for (double v = ceil(x0 / xs) * xs; v <= x1 + 1e-12 * xs; v += xs) {
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                "font-size=\"11\" text-anchor=\"middle\">",
                PX(v), by, PX(v), by + ph, PX(v), by + ph + 16);
        if (p->log_x) fprintf(f, "1e%d", (int)lround(v));
        else fprintf(f, "%.4g", fabs(v) < 1e-12 * xs ? 0.0 : v);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">", bx + pw / 2, by + ph + 38);
    xml_text(f, p->xlabel);
    fprintf(f, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">",
            bx - 50, by + ph / 2, bx - 50, by + ph / 2);
    xml_text(f, p->ylabel);
    fprintf(f, "</text>\n");
    for (int s = 0; s < p->n_series; s++) {
        const loom_plot_series *se = &p->series[s];
        const char *col = se->color ? se->color : palette[s % 6];
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", col,
                se->faint ? "1" : "2", se->faint ? " stroke-opacity=\"0.35\"" : "");
        for (int i = 0; i < se->n; i++) {
            double x = se->x[i], y = se->y[i];
            if (!usable(p, x, y)) continue;
            if (p->log_x) x = log10(x);
            fprintf(f, "%.2f,%.2f ", PX(x), PY(y));
        }
        fprintf(f, "\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
                bx + pw + 10, by + 14 + 18.0 * s, bx + pw + 30, by + 14 + 18.0 * s, col, bx + pw + 35, by + 18 + 18.0 * s);
        xml_text(f, se->label);
        fprintf(f, "</text>\n");
    }
    if (isfinite(p->mark_x) && (!p->log_x || p->mark_x > 0)) {
        double mx = p->log_x ? log10(p->mark_x) : p->mark_x;
        fprintf(f,
                "<line class=\"marker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                "stroke-dasharray=\"6,4\" stroke-width=\"1.5\"/>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#d62728\">",
                PX(mx), by, PX(mx), by + ph, PX(mx) + 4, by + 14);
        xml_text(f, p->mark_label);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
#undef PX
#undef PY
}

/* The text written to mem (open_memstream over *buf, *len) becomes the file
 * at path whole, through core/outfile: a target that is not a regular file
 * is refused, every write is checked (ENOSPC names the file) and a failure
 * leaves the previous file as it was. Closes mem and frees *buf. */
loom_status loom__write_whole(loom_ctx *ctx, const char *path, FILE *mem, char **buf, size_t *len) {
    bool bad = ferror(mem) != 0;
    bad |= fclose(mem) != 0;
    loom_status st = bad || !*buf ? loom__err(ctx, LOOM_ERR_OOM, "'%s': out of memory for its text", path) : LOOM_OK;
    loom__outfile *o = NULL;
    if (st == LOOM_OK && (st = loom__outfile_open(ctx, path, &o)) == LOOM_OK) {
        loom__outfile_write(o, *buf, *len);
        st = loom__outfile_commit(o);
    }
    free(*buf);
    *buf = NULL;
    return st;
}

loom_status loom_plot_svg(loom_ctx *ctx, const char *path, const loom_plot_panel *panels, int n_panels) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return loom__err(ctx, LOOM_ERR_OOM, "plot: out of memory for '%s'", path);
    double h = H * (n_panels > 0 ? n_panels : 1);
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, h, W, h);
    for (int i = 0; i < n_panels; i++) panel(f, &panels[i], H * i);
    fprintf(f, "</svg>\n");
    return loom__write_whole(ctx, path, f, &buf, &len);
}
