/* loom/plot.h — line charts as SVG files (no dependencies), for the LR
 * finder's curve and `loom plot` (loss and accuracy curves of a run).
 *
 * defines: loom_plot_series, loom_plot_panel, loom_plot_svg.
 *
 * A file holds one or more panels stacked vertically; each panel has axes
 * with ticks (linear, or log10 for log_x), its series as polylines, a legend,
 * and optionally a vertical marker (the LR finder's suggestion). Points with
 * a non-finite coordinate (or x <= 0 on a log axis) are skipped.
 */
#ifndef LOOM_PLOT_H
#define LOOM_PLOT_H

#include <stdbool.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One line of a panel: n points (x[i], y[i]). */
typedef struct loom_plot_series {
    const char *label;   /* legend text (NULL = empty) */
    const double *x;     /* n x coordinates */
    const double *y;     /* n y coordinates */
    int n;               /* number of points */
    const char *color;   /* NULL = a palette colour */
    bool faint;          /* thin and translucent (raw values behind a smoothed line) */
} loom_plot_series;

/* One chart: axes scaled to its series' finite points, a legend, an optional marker. */
typedef struct loom_plot_panel {
    const char *title;       /* above the chart (NULL = none) */
    const char *xlabel;      /* under the x axis (NULL = none) */
    const char *ylabel;      /* beside the y axis (NULL = none) */
    bool log_x;              /* log10 x axis with decade ticks (points with x <= 0 are skipped) */
    double mark_x;           /* a vertical marker at x; NaN = none */
    const char *mark_label;  /* text beside the marker (NULL = none) */
    const loom_plot_series *series; /* n_series lines, drawn in order */
    int n_series;            /* number of series */
} loom_plot_panel;

/* Write the panels to path (width 800 px, 400 px per panel). Errors:
 * LOOM_ERR_IO naming the file. */
loom_status loom_plot_svg(loom_ctx *ctx, const char *path, const loom_plot_panel *panels, int n_panels);

#ifdef __cplusplus
}
#endif
#endif
